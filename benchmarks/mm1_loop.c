/* A hand-written M/M/1 fifo simulation in C: the floor that sq's engine is compared with.
 *
 * Same model and the same numbers as suite.py's `mm1` program (rho 0.9): the same random
 * streams (sq/engine/_src/chacha.h, seeded as a run seeds them), the same arrival gaps and service
 * draws in the same order, so its response mean equals sq's report to the last digit. Events are
 * arrivals and departures (two per session), counted as sq counts them. Two builds of this file:
 *
 * - the bare loop (issue 12's floor): every response sample, its running mean and the
 *   time-average number in system, and nothing else;
 * - with -DFULL_REPORT, every figure sq's report gives for this model, kept as sq keeps it: each
 *   sample's value, time and serial, the running means of response, wait and service, the
 *   time-averages of live sessions, of the stage's jobs and of its busy server (sampled after
 *   every event), the counts of arrivals, ends and completions. Its figures equal sq's report to
 *   the last digit; it tells how much of sq's time is the report's own work.
 *
 *   gcc -O2 -I sq/_src [-DFULL_REPORT] benchmarks/mm1_loop.c -lm -o mm1_loop && ./mm1_loop HORIZON SEED
 * prints: cpu_seconds events samples mean_response mean_number
 *   (FULL_REPORT then adds: arrivals ended completed mean_wait mean_service mean_live, mean_number
 *   and utilization as sq's areas give them)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "chacha.h"
#include "distributions.h"

#ifdef FULL_REPORT
/* sq's Area and Running, step for step (sq/engine/_arrays.pxi: area_set, running_add) */
typedef struct { double integral, last, value; } time_area;
static inline void area_set(time_area* a, double now, double v) {
    a->integral += a->value * (now - a->last);
    a->last = now;
    a->value = v;
}
typedef struct { long n; double mean; } running_mean;
static inline void running_add(running_mean* r, double x) {
    r->n += 1;
    r->mean += (x - r->mean) / (double)r->n;
}
#endif

int main(int argc, char** argv) {
    double horizon = argc > 1 ? atof(argv[1]) : 2e6;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    const double rate = 0.9, mean_service = 1.0;
    static sq_rng arrival, session;
    sq_rng_seed(&arrival, seed ^ SQ_STREAM_ARRIVAL_MASK);
    sq_rng_seed(&session, seed ^ SQ_STREAM_SESSION_MASK);

    clock_t c0 = clock();
    size_t cap = 1 << 16, n = 0, qcap = 1 << 10, qhead = 0, qlen = 0;
    double* samples = malloc(cap * sizeof(double));
    double* queue = malloc(qcap * sizeof(double));        /* arrival times, fifo */
    double* service = malloc(qcap * sizeof(double));      /* their service times, drawn at arrival */
    double now = 0, next_arrival = 0, next_departure = INFINITY, mean = 0, area = 0, last = 0;
    long events = 0;
#ifdef FULL_REPORT
    double* times = malloc(cap * sizeof(double));         /* each sample's time and serial */
    int32_t* serials = malloc(cap * sizeof(int32_t));
    int32_t* serial_of = malloc(qcap * sizeof(int32_t));  /* the queue's sessions' serials */
    int32_t next_serial = 0;
    double start = 0;                                     /* the job in service began then */
    time_area live = {0, 0, 0}, number = {0, 0, 0}, busy = {0, 0, 0};
    running_mean waits = {0, 0}, services = {0, 0};
    long arrivals = 0, ended = 0, completed = 0;
#endif
    for (;;) {
        double t = next_arrival < next_departure ? next_arrival : next_departure;
        if (t > horizon) break;
        area += (double)qlen * (t - last);
        last = now = t;
        events++;
        if (next_arrival <= next_departure) {
            next_arrival = now - log(1.0 - sq_rng_random_f64(&arrival)) / rate;
            if (qlen == qcap) {                               /* grow the ring, keeping its order */
                double* q2 = malloc(2 * qcap * sizeof(double));
                double* s2 = malloc(2 * qcap * sizeof(double));
                for (size_t i = 0; i < qlen; i++) {
                    q2[i] = queue[(qhead + i) % qcap];
                    s2[i] = service[(qhead + i) % qcap];
                }
                free(queue); free(service);
#ifdef FULL_REPORT
                int32_t* r2 = malloc(2 * qcap * sizeof(int32_t));
                for (size_t i = 0; i < qlen; i++)
                    r2[i] = serial_of[(qhead + i) % qcap];
                free(serial_of);
                serial_of = r2;
#endif
                queue = q2; service = s2; qhead = 0; qcap *= 2;
            }
            size_t tail = (qhead + qlen) % qcap;
            queue[tail] = now;
            service[tail] = sq_draw_exp(&session, &mean_service);
#ifdef FULL_REPORT
            arrivals++;
            serial_of[tail] = next_serial++;
            if (qlen == 0) start = now;
#endif
            if (++qlen == 1) next_departure = now + service[tail];
        } else {
            double r = now - queue[qhead];
#ifdef FULL_REPORT
            completed++;
            running_add(&waits, start - queue[qhead]);
            running_add(&services, now - start);
            if (n == cap) {
                times = realloc(times, 2 * cap * sizeof(double));
                serials = realloc(serials, 2 * cap * sizeof(int32_t));
            }
            times[n] = now;
            serials[n] = serial_of[qhead];
            ended++;
            start = now;
#endif
            if (n == cap) samples = realloc(samples, (cap *= 2) * sizeof(double));
            samples[n++] = r;
            mean += (r - mean) / (double)n;
            qhead = (qhead + 1) % qcap;
            next_departure = --qlen ? now + service[qhead] : INFINITY;
        }
#ifdef FULL_REPORT
        area_set(&live, now, (double)qlen);
        area_set(&number, now, (double)qlen);
        area_set(&busy, now, qlen ? 1.0 : 0.0);
#endif
    }
    double cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
    area += (double)qlen * (horizon - last);
    printf("%.6f %ld %zu %.17g %.17g", cpu, events, n, mean, area / horizon);
#ifdef FULL_REPORT
    area_set(&live, horizon, 0);
    area_set(&number, horizon, 0);
    area_set(&busy, horizon, 0);
    printf(" %ld %ld %ld %.17g %.17g %.17g %.17g %.17g", arrivals, ended, completed, waits.mean, services.mean,
           live.integral / horizon, number.integral / horizon, busy.integral / horizon);
    free(times); free(serials); free(serial_of);
#endif
    printf("\n");
    free(samples); free(queue); free(service);
    return 0;
}

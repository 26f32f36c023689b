/* A hand-written M/M/1 fifo simulation in C: the floor that sq's engine is compared with.
 *
 * Same model and the same numbers as suite.py's `mm1` program (rho 0.9): the same random
 * streams (sq/_src/chacha.h, seeded as a run seeds them), the same arrival gaps and service
 * draws in the same order, so its response mean equals sq's report to the last digit. It keeps
 * what the report needs from this model and nothing else: every response sample, its running
 * mean, and the time-average number in system. Events are arrivals and departures (two per
 * session), counted as sq counts them.
 *
 *   gcc -O2 -I sq/_src benchmarks/mm1_loop.c -lm -o mm1_loop && ./mm1_loop HORIZON SEED
 * prints: cpu_seconds events samples mean_response
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "chacha.h"
#include "distributions.h"

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
                queue = q2; service = s2; qhead = 0; qcap *= 2;
            }
            size_t tail = (qhead + qlen) % qcap;
            queue[tail] = now;
            service[tail] = sq_draw_exp(&session, &mean_service);
            if (++qlen == 1) next_departure = now + service[tail];
        } else {
            double r = now - queue[qhead];
            if (n == cap) samples = realloc(samples, (cap *= 2) * sizeof(double));
            samples[n++] = r;
            mean += (r - mean) / (double)n;
            qhead = (qhead + 1) % qcap;
            next_departure = --qlen ? now + service[qhead] : INFINITY;
        }
    }
    double cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
    printf("%.6f %ld %zu %.17g %.17g\n", cpu, events, n, mean, area / horizon);
    free(samples); free(queue); free(service);
    return 0;
}

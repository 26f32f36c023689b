/* serQ's `~dist(...)` laws, drawn by inversion from one sq_rng stream.
 *
 * Each sampler takes the stream and the argument values in the order written
 * in the program; the number of uniforms consumed is part of the contract,
 * since every later draw on the shared stream depends on it (spec 07 §4,
 * 09 §9.8). The arithmetic is written in the reference's evaluation order so
 * results agree bit for bit, including on degenerate arguments.
 */
#ifndef SQ_DISTRIBUTIONS_H
#define SQ_DISTRIBUTIONS_H

#include <math.h>
#include <stdint.h>
#include "chacha.h"

/* Codes of the IR's `Sample` names, for sq_draw(). */
enum sq_dist_code {
    SQ_DIST_DET = 0,       /* Det(x)            : 0 draws */
    SQ_DIST_EXP = 1,       /* Exp(mean)         : 1 draw  */
    SQ_DIST_UNIFORM = 2,   /* Uniform(lo, hi)   : 1 draw  */
    SQ_DIST_ERLANG = 3,    /* Erlang(k, mean)   : k' draws */
    SQ_DIST_H2 = 4,        /* H2(mean, cv2)     : 2 draws */
    SQ_DIST_BERNOULLI = 5, /* Bernoulli(p)      : 1 draw  */
    SQ_DIST_COUNT = 6
};

/* Rust's f64::max: a NaN operand yields the other one. */
static inline double sq_fmax_rust(double a, double b) {
    if (a != a) return b;
    if (b != b) return a;
    return a > b ? a : b;
}

/* Rust's saturating `f64 as u32`: NaN -> 0, below 0 -> 0, above max -> max. */
static inline uint32_t sq_f64_to_u32_sat(double x) {
    if (!(x > 0.0)) return 0;
    if (x >= 4294967295.0) return 4294967295u;
    return (uint32_t)x;
}

/* 1 - u lies in (0, 1], so the logarithm is finite. */
static inline double sq_exp_of_mean(sq_rng* rng, double mean) {
    return -mean * log(1.0 - sq_rng_random_f64(rng));
}

static inline double sq_draw_det(sq_rng* rng, const double* args) {
    (void)rng;
    return args[0];
}

static inline double sq_draw_exp(sq_rng* rng, const double* args) {
    return sq_exp_of_mean(rng, args[0]);
}

static inline double sq_draw_uniform(sq_rng* rng, const double* args) {
    double lo = args[0], hi = args[1];
    return lo + (hi - lo) * sq_rng_random_f64(rng);
}

/* k is truncated, and below 1 counts as 1; k' phases of mean m/k'. */
static inline uint32_t sq_erlang_phases(double k) {
    uint32_t n = sq_f64_to_u32_sat(k);
    return n < 1u ? 1u : n;
}

static inline double sq_draw_erlang(sq_rng* rng, const double* args) {
    uint32_t k = sq_erlang_phases(args[0]);
    double phase_mean = args[1] / (double)k;
    double sum = -0.0; /* Rust's f64 Sum starts from -0.0 */
    for (uint32_t i = 0; i < k; i++) sum += sq_exp_of_mean(rng, phase_mean);
    return sum;
}

/* Balanced two-phase hyperexponential; a cv2 below 1 behaves as 1. Its first phase's
 * probability and the phases' means depend on the arguments alone: a loop whose draws have
 * constant arguments computes them once (sq_h2_of) and draws with sq_draw_h2_of, the same values. */
static inline double sq_h2_p(double cv2_arg) {
    double cv2 = sq_fmax_rust(cv2_arg, 1.0);
    return 0.5 * (1.0 + sqrt((cv2 - 1.0) / (cv2 + 1.0)));
}
static inline double sq_h2_mean1(double mean, double p) { return mean / (2.0 * p); }
static inline double sq_h2_mean2(double mean, double p) { return mean / (2.0 * (1.0 - p)); }

static inline double sq_draw_h2(sq_rng* rng, const double* args) {
    double mean = args[0];
    double p = sq_h2_p(args[1]);
    double phase_mean = sq_rng_random_f64(rng) < p ? sq_h2_mean1(mean, p) : sq_h2_mean2(mean, p);
    return sq_exp_of_mean(rng, phase_mean);
}

typedef struct { double p, mean1, mean2; } sq_h2;

static inline sq_h2 sq_h2_of(const double* args) {
    sq_h2 h;
    h.p = sq_h2_p(args[1]);
    h.mean1 = sq_h2_mean1(args[0], h.p);
    h.mean2 = sq_h2_mean2(args[0], h.p);
    return h;
}

static inline double sq_draw_h2_of(sq_rng* rng, const sq_h2* h) {
    double phase_mean = sq_rng_random_f64(rng) < h->p ? h->mean1 : h->mean2;
    return sq_exp_of_mean(rng, phase_mean);
}

static inline double sq_draw_bernoulli(sq_rng* rng, const double* args) {
    return sq_rng_random_f64(rng) < args[0] ? 1.0 : 0.0;
}

/* Dispatch by sq_dist_code; an unknown code draws nothing and gives NaN. */
static inline double sq_draw(sq_rng* rng, int code, const double* args) {
    switch (code) {
    case SQ_DIST_DET: return sq_draw_det(rng, args);
    case SQ_DIST_EXP: return sq_draw_exp(rng, args);
    case SQ_DIST_UNIFORM: return sq_draw_uniform(rng, args);
    case SQ_DIST_ERLANG: return sq_draw_erlang(rng, args);
    case SQ_DIST_H2: return sq_draw_h2(rng, args);
    case SQ_DIST_BERNOULLI: return sq_draw_bernoulli(rng, args);
    default: return NAN;
    }
}

/* Number of arguments each law takes, by code (the linker checks arity). */
static inline int sq_dist_arity(int code) {
    static const int arity[SQ_DIST_COUNT] = {1, 1, 2, 2, 2, 1};
    return (code >= 0 && code < SQ_DIST_COUNT) ? arity[code] : -1;
}

#endif /* SQ_DISTRIBUTIONS_H */

# C API of serQ's random streams, for `from sq.engine._random cimport ...` (nogil-safe).
#
# One sq_rng is one stream (rand 0.9's StdRng: ChaCha12, seed_from_u64). A run
# owns five, seeded `seed ^ SQ_STREAM_*_MASK` (spec chapter 09 §9.8). An sq_rng
# is about 560 bytes (a 128-word buffer): keep it in place and pass pointers.
# Every function here is plain C, allocation-free and safe without the GIL.
#
# Distribution codes for sq_draw(rng, code, args) -- the IR's `Sample` names:
#   SQ_DIST_DET       = 0  Det(x)           0 draws
#   SQ_DIST_EXP       = 1  Exp(mean)        1 draw
#   SQ_DIST_UNIFORM   = 2  Uniform(lo, hi)  1 draw
#   SQ_DIST_ERLANG    = 3  Erlang(k, mean)  max(1, trunc k) draws (NaN k: 1; k >= 2^32 or inf: 2^32 - 1)
#   SQ_DIST_H2        = 4  H2(mean, cv2)    2 draws
#   SQ_DIST_BERNOULLI = 5  Bernoulli(p)     1 draw
# `args` points at the argument values in source order.
from libc.stdint cimport uint32_t, uint64_t

cdef extern from "chacha.h" nogil:
    const uint64_t SQ_STREAM_ARRIVAL_MASK
    const uint64_t SQ_STREAM_WORKLOAD_MASK
    const uint64_t SQ_STREAM_SESSION_MASK
    const uint64_t SQ_STREAM_EVICTION_MASK
    const uint64_t SQ_STREAM_TRACE_MASK

    ctypedef struct sq_rng:
        pass

    void sq_rng_seed(sq_rng* rng, uint64_t seed)
    uint32_t sq_rng_next_u32(sq_rng* rng)
    uint64_t sq_rng_next_u64(sq_rng* rng)
    double sq_rng_random_f64(sq_rng* rng)
    # Both bounds included; lo > hi is the caller's error (not checked).
    uint32_t sq_rng_range_u32(sq_rng* rng, uint32_t lo, uint32_t hi)

cdef extern from "distributions.h" nogil:
    enum:
        SQ_DIST_DET
        SQ_DIST_EXP
        SQ_DIST_UNIFORM
        SQ_DIST_ERLANG
        SQ_DIST_H2
        SQ_DIST_BERNOULLI
        SQ_DIST_COUNT

    double sq_draw_det(sq_rng* rng, const double* args)
    double sq_draw_exp(sq_rng* rng, const double* args)
    double sq_draw_uniform(sq_rng* rng, const double* args)
    double sq_draw_erlang(sq_rng* rng, const double* args)
    double sq_draw_h2(sq_rng* rng, const double* args)
    # h2's probability and phase means for its arguments, once; a draw of them
    ctypedef struct sq_h2:
        double p
        double mean1
        double mean2
    sq_h2 sq_h2_of(const double* args)
    double sq_draw_h2_of(sq_rng* rng, const sq_h2* h)
    double sq_draw_bernoulli(sq_rng* rng, const double* args)
    # Dispatch by code; an unknown code draws nothing and returns NaN.
    double sq_draw(sq_rng* rng, int code, const double* args)
    # Argument count of a code, or -1 if the code is unknown.
    int sq_dist_arity(int code)


cdef class Rng:
    cdef sq_rng state

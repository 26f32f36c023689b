/* serQ-exact random streams: rand 0.9's StdRng (ChaCha12) seeded by seed_from_u64.
 *
 * Plain C, header-only, static inline, no allocation: safe to call without the GIL.
 * One sq_rng is one stream; a run owns five (arrival, workload, session, eviction,
 * trace), each seeded from the program's seed (spec chapter 09 §9.8).
 *
 * The stream is the sequence of 32-bit words of ChaCha12 blocks 0, 1, 2, ...
 * rand_chacha refills four blocks at a time and rand_core's BlockRng builds a u64
 * from two consecutive words -- across a refill too (last word low, first word of
 * the next refill high) -- so a u64 is always the next two words of the stream and
 * the refill size is invisible. We refill eight blocks, so one AVX2 pass (eight
 * lanes) fills the buffer where the CPU has it.
 */
#ifndef SQ_CHACHA_H
#define SQ_CHACHA_H

#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define SQ_UNLIKELY(c) __builtin_expect(!!(c), 0)
#else
#define SQ_UNLIKELY(c) (c)
#endif

#define SQ_RNG_BLOCK_WORDS 16
#define SQ_RNG_BLOCKS 8
#define SQ_RNG_BUF_WORDS (SQ_RNG_BLOCK_WORDS * SQ_RNG_BLOCKS)
#define SQ_RNG_DOUBLE_ROUNDS 6 /* ChaCha12 */

/* The five streams of a run, each seeded `seed ^ mask` (spec 09 §9.8). */
#define SQ_STREAM_ARRIVAL_MASK  0x0000000000000000ull /* Poisson gaps, renewal gaps */
#define SQ_STREAM_WORKLOAD_MASK 0x9E3779B97F4A7C15ull /* workload init and turn blocks */
#define SQ_STREAM_SESSION_MASK  0x5851F42D4C957F2Dull /* everything else a session or the machine draws */
#define SQ_STREAM_EVICTION_MASK 0x2545F4914F6CDD1Dull /* evict-by keys, spill when / work */
#define SQ_STREAM_TRACE_MASK    0x6A09E667F3BCC908ull /* unordered trace picks */

typedef struct sq_rng {
    uint32_t buf[SQ_RNG_BUF_WORDS];
    uint32_t key[8];
    uint64_t counter;                 /* block number of the next refill's first block */
    uint32_t index;                   /* next unread word of buf; == BUF_WORDS when empty */
} sq_rng;

static inline uint32_t sq_rotr32(uint32_t x, unsigned r) {
    return (x >> r) | (x << ((32u - r) & 31u));
}

/* A macro, not a function, so it serves both scalars and vectors of 32-bit words
 * (r is a constant 7..16 here, never 0 or 32). */
#define SQ_ROTL(x, r) (((x) << (r)) | ((x) >> (32u - (r))))

#define SQ_QUARTER(a, b, c, d)               \
    do {                                     \
        a += b; d ^= a; d = SQ_ROTL(d, 16);  \
        c += d; b ^= c; b = SQ_ROTL(b, 12);  \
        a += b; d ^= a; d = SQ_ROTL(d, 8);   \
        c += d; b ^= c; b = SQ_ROTL(b, 7);   \
    } while (0)

/* The 12 rounds on a state x[16]: column rounds, then diagonal rounds. */
#define SQ_CHACHA_ROUNDS(x)                                 \
    for (int r_ = 0; r_ < SQ_RNG_DOUBLE_ROUNDS; r_++) {     \
        SQ_QUARTER(x[0], x[4], x[8], x[12]);                \
        SQ_QUARTER(x[1], x[5], x[9], x[13]);                \
        SQ_QUARTER(x[2], x[6], x[10], x[14]);               \
        SQ_QUARTER(x[3], x[7], x[11], x[15]);               \
        SQ_QUARTER(x[0], x[5], x[10], x[15]);               \
        SQ_QUARTER(x[1], x[6], x[11], x[12]);               \
        SQ_QUARTER(x[2], x[7], x[8], x[13]);                \
        SQ_QUARTER(x[3], x[4], x[9], x[14]);                \
    }

static const uint32_t sq_chacha_sigma[4] = {0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u};

/* One block, the portable way: constants, key, 64-bit counter, zero nonce. */
static inline void sq_chacha_block(const uint32_t key[8], uint64_t counter, uint32_t out[16]) {
    uint32_t in[16], x[16];
    for (int i = 0; i < 4; i++) in[i] = sq_chacha_sigma[i];
    for (int i = 0; i < 8; i++) in[4 + i] = key[i];
    in[12] = (uint32_t)counter;
    in[13] = (uint32_t)(counter >> 32);
    in[14] = in[15] = 0u;
    for (int i = 0; i < 16; i++) x[i] = in[i];
    SQ_CHACHA_ROUNDS(x)
    for (int i = 0; i < 16; i++) out[i] = x[i] + in[i];
}

#if defined(__GNUC__) || defined(__clang__)
#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define SQ_HAVE_SHUFFLEVECTOR 1
#endif
#endif

/* LANES consecutive blocks side by side: lane b of every vector belongs to block
 * counter + b, so each quarter-round runs on all of them at once (the compiler's
 * generic vectors; no intrinsics). STORE writes the finished words block by block. */
#define SQ_DEFINE_CHACHA_LANES(NAME, VEC, LANES, ATTR, STORE)                          \
    typedef uint32_t VEC __attribute__((vector_size(4 * LANES)));                      \
    ATTR static void NAME(const uint32_t key[8], uint64_t counter, uint32_t* out) {    \
        VEC in[16], x[16];                                                              \
        for (int i = 0; i < 4; i++) in[i] = (VEC){0} + sq_chacha_sigma[i];              \
        for (int i = 0; i < 8; i++) in[4 + i] = (VEC){0} + key[i];                      \
        for (int b = 0; b < LANES; b++) {                                               \
            in[12][b] = (uint32_t)(counter + (uint64_t)b);                              \
            in[13][b] = (uint32_t)((counter + (uint64_t)b) >> 32);                      \
        }                                                                               \
        in[14] = in[15] = (VEC){0};                                                     \
        for (int i = 0; i < 16; i++) x[i] = in[i];                                      \
        SQ_CHACHA_ROUNDS(x)                                                             \
        for (int i = 0; i < 16; i++) x[i] += in[i];                                     \
        STORE(VEC, LANES, x, out)                                                       \
    }

/* Word-by-word store: x[i][b] is word i of block b. */
#define SQ_STORE_LANES(VEC, LANES, x, out)                                              \
    for (int i = 0; i < 16; i++)                                                        \
        for (int b = 0; b < LANES; b++) out[b * SQ_RNG_BLOCK_WORDS + i] = x[i][b];

#ifdef SQ_HAVE_SHUFFLEVECTOR
#define SQ_SHUF __builtin_shufflevector
/* The same store as an in-register transpose of each 4x4 tile of words (rows i,
 * lanes b), so whole vectors are written. */
#define SQ_STORE_X4(VEC, LANES, x, out)                                                 \
    for (int q = 0; q < 16; q += 4) {                                                   \
        VEC t0 = SQ_SHUF(x[q], x[q + 1], 0, 4, 1, 5), t1 = SQ_SHUF(x[q], x[q + 1], 2, 6, 3, 7); \
        VEC t2 = SQ_SHUF(x[q + 2], x[q + 3], 0, 4, 1, 5), t3 = SQ_SHUF(x[q + 2], x[q + 3], 2, 6, 3, 7); \
        VEC v[4] = {SQ_SHUF(t0, t2, 0, 1, 4, 5), SQ_SHUF(t0, t2, 2, 3, 6, 7),             \
                    SQ_SHUF(t1, t3, 0, 1, 4, 5), SQ_SHUF(t1, t3, 2, 3, 6, 7)};            \
        for (int b = 0; b < 4; b++) __builtin_memcpy(out + b * SQ_RNG_BLOCK_WORDS + q, &v[b], sizeof(VEC)); \
    }
/* 8x8 tiles: 32-bit interleave, 64-bit interleave, then 128-bit halves. */
#define SQ_STORE_X8(VEC, LANES, x, out)                                                 \
    for (int q = 0; q < 16; q += 8) {                                                   \
        VEC t[8], u[8];                                                                 \
        for (int k = 0; k < 8; k += 2) {                                                \
            t[k] = SQ_SHUF(x[q + k], x[q + k + 1], 0, 8, 1, 9, 4, 12, 5, 13);           \
            t[k + 1] = SQ_SHUF(x[q + k], x[q + k + 1], 2, 10, 3, 11, 6, 14, 7, 15);     \
        }                                                                               \
        for (int k = 0; k < 8; k += 4)                                                  \
            for (int h = 0; h < 2; h++) {                                               \
                u[k + 2 * h] = SQ_SHUF(t[k + h], t[k + h + 2], 0, 1, 8, 9, 4, 5, 12, 13); \
                u[k + 2 * h + 1] = SQ_SHUF(t[k + h], t[k + h + 2], 2, 3, 10, 11, 6, 7, 14, 15); \
            }                                                                           \
        for (int k = 0; k < 4; k++) {                                                   \
            VEC lo = SQ_SHUF(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);                 \
            VEC hi = SQ_SHUF(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);               \
            __builtin_memcpy(out + k * SQ_RNG_BLOCK_WORDS + q, &lo, sizeof(VEC));       \
            __builtin_memcpy(out + (k + 4) * SQ_RNG_BLOCK_WORDS + q, &hi, sizeof(VEC)); \
        }                                                                               \
    }
#else
#define SQ_STORE_X4 SQ_STORE_LANES
#define SQ_STORE_X8 SQ_STORE_LANES
#endif

SQ_DEFINE_CHACHA_LANES(sq_chacha_x4, sq_u32x4, 4, __attribute__((noinline, unused)), SQ_STORE_X4)

#if (defined(__x86_64__) || defined(__i386__)) && !defined(SQ_RNG_NO_AVX2)
#define SQ_RNG_HAVE_AVX2 1
SQ_DEFINE_CHACHA_LANES(sq_chacha_x8_avx2, sq_u32x8, 8, __attribute__((noinline, unused, target("avx2"))),
                       SQ_STORE_X8)
#endif

static __attribute__((noinline, unused)) void sq_rng_refill(sq_rng* rng) {
#ifdef SQ_RNG_HAVE_AVX2
    if (__builtin_cpu_supports("avx2")) {
        sq_chacha_x8_avx2(rng->key, rng->counter, rng->buf);
    } else
#endif
    {
        for (int b = 0; b < SQ_RNG_BLOCKS; b += 4)
            sq_chacha_x4(rng->key, rng->counter + (uint64_t)b, rng->buf + b * SQ_RNG_BLOCK_WORDS);
    }
    rng->counter += SQ_RNG_BLOCKS;
    rng->index = 0;
}
#else
static inline void sq_rng_refill(sq_rng* rng) {
    for (int b = 0; b < SQ_RNG_BLOCKS; b++)
        sq_chacha_block(rng->key, rng->counter + (uint64_t)b, rng->buf + b * SQ_RNG_BLOCK_WORDS);
    rng->counter += SQ_RNG_BLOCKS;
    rng->index = 0;
}
#endif

/* rand_core's seed_from_u64: eight PCG32 outputs become the 256-bit key. */
static inline void sq_rng_seed(sq_rng* rng, uint64_t seed) {
    const uint64_t mul = 6364136223846793005ull;
    const uint64_t inc = 11634580027462260723ull;
    uint64_t state = seed;
    for (int i = 0; i < 8; i++) {
        state = state * mul + inc;
        uint32_t xorshifted = (uint32_t)(((state >> 18) ^ state) >> 27);
        rng->key[i] = sq_rotr32(xorshifted, (unsigned)(state >> 59));
    }
    rng->counter = 0;
    /* Lazily generated: the first draw triggers the first refill, as in BlockRng. */
    rng->index = SQ_RNG_BUF_WORDS;
}

static inline uint32_t sq_rng_next_u32(sq_rng* rng) {
    if (SQ_UNLIKELY(rng->index >= SQ_RNG_BUF_WORDS)) sq_rng_refill(rng);
    return rng->buf[rng->index++];
}

/* Two consecutive words, low first. Across a refill that is BlockRng's rule
 * (old buffer's last word low, new buffer's first word high). */
static inline uint64_t sq_rng_next_u64(sq_rng* rng) {
    uint32_t i = rng->index;
    if (i + 1 < SQ_RNG_BUF_WORDS) {
        rng->index = i + 2;
        return (uint64_t)rng->buf[i] | ((uint64_t)rng->buf[i + 1] << 32);
    }
    uint64_t low = sq_rng_next_u32(rng);
    return low | ((uint64_t)sq_rng_next_u32(rng) << 32);
}

/* rand's StandardUniform f64: the top 53 bits scaled into [0, 1). */
static inline double sq_rng_random_f64(sq_rng* rng) {
    return (double)(sq_rng_next_u64(rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* rand 0.9's random_range(lo..=hi) over u32: Canon's widening-multiply method
 * (one extra draw when the low product could carry). Bounds are both included;
 * lo > hi is the caller's error (rand panics) and is not checked here. */
static inline uint32_t sq_rng_range_u32(sq_rng* rng, uint32_t lo, uint32_t hi) {
    uint32_t range = hi - lo + 1u;
    if (range == 0) return sq_rng_next_u32(rng); /* the full u32 domain */
    uint64_t m = (uint64_t)sq_rng_next_u32(rng) * range;
    uint32_t result = (uint32_t)(m >> 32);
    uint32_t lo_order = (uint32_t)m;
    if (lo_order > (uint32_t)(0u - range)) {
        uint64_t m2 = (uint64_t)sq_rng_next_u32(rng) * range;
        uint32_t carry_in = (uint32_t)(m2 >> 32);
        if ((uint32_t)(lo_order + carry_in) < lo_order) result += 1u;
    }
    return lo + result;
}

#endif /* SQ_CHACHA_H */

# The loop (spec chapter 09): areas, settling an instant, gauges, event handling, `run_loop`.
# Included by sq/_engine.pyx (one translation unit, so the C compiler inlines across files);
# every function here runs without the GIL.


# ---- the time averages (step 5 of settle) -----------------------------------------------------
# 0.1.2 samples every area at every settle: integral += value * (now - last), last = now. Two
# savings keep its integrals to the bit:
# - a row that holds 0 in every area and still does is left out (sampling it would add 0 x a finite
#   gap: the horizon is finite, so is every event's time); a row marked in stages_sampled or
#   pools_sampled may be nonzero, the others are not visited at all;
# - a marked row whose values did not change since its last sample is not sampled either: its
#   additions are deferred. Each family (pools, stages) logs the gap of each of its samples
#   (now - the family's previous sample, the same subtraction an area makes: every deferred row's
#   `last` is that previous sample's time) in a Lag; when the row's values change, or something
#   reads its integrals, the gaps it missed are added in their order with its old values (lag_*),
#   the very operations 0.1.2 makes, in the same order. A row's lag_at counts the gaps already
#   added; -1: the row is sampled as it is visited (newly marked, or restarted at the warm-up).
# A sample visits only the rows that may have changed: a pool touched since the family's last
# sample (touch_pool, wherever its used, cached, queue or holders move, and wherever it is marked
# sampled), a step stage touched (its number moves only as residents join and leave), and every
# other sampled stage (fifo, ps, delay and shared stages are tested). A visit compares the row's
# values with its areas' (to the bit) and defers it if they are the same. With many replicas most
# rows of most events are unchanged (another replica's iteration ended), so an event costs what
# it changes. Debug mode checks that every deferred row's values are its areas' (INV_DEFERRED).

cdef extern from *:
    """
    /* whether two doubles are the same bits (a sample would leave the area's value as it is) */
    static inline int sq_same_bits(double a, double b) {
        uint64_t x, y;
        memcpy(&x, &a, sizeof x);
        memcpy(&y, &b, sizeof y);
        return x == y;
    }
    """
    bint same_bits "sq_same_bits"(double a, double b) nogil


cdef enum:
    LAG_CAP = 1024       # gaps a Lag holds; when full, every deferred row catches up (lag_flush_*)


cdef inline void sample_areas(State* st) noexcept nogil:
    """Step 5 of settle but the pools' areas (settle_passes samples them): inline in run_loop."""
    cdef int64_t ns, s, w, k
    cdef uint64_t sb, b
    cdef uint64_t* words
    if st.n_stages == 1:
        sample_lone_stage(st)
        return
    area_set(&st.live_area, st.now, <double> st.live)
    if lag_tick(&st.stage_lag, st.now):
        lag_flush_stages(st)
    # the sampled rows but the untouched step stages, word by word (a visit only ever unmarks
    # the row it visits)
    ns = <int64_t> st.stages_sampled[0]
    words = st.stages_sampled + 1 + ns
    for s in range(ns):
        sb = st.stages_sampled[1 + s]
        while sb != 0:
            w = (s << 6) + __builtin_ctzll(sb)
            sb &= sb - 1
            b = words[w] & (~st.step_rows[w] | st.stages_touched[w])
            st.stages_touched[w] = 0
            while b != 0:
                k = (w << 6) + __builtin_ctzll(b)
                b &= b - 1
                sample_stage(st, <int32_t> k)
    if st.tl != NULL:
        tl_pools(st)


# (always inlined: with step_begun's call beside steady_run's two, gcc kept one copy out of line,
# and steady_run's quiet repeats paid a call each: vllm-lo +0.44 %)
cdef extern from *:
    """
    struct __pyx_t_2sq_6engine_6_state_State;
    static inline __attribute__((always_inline)) void __pyx_f_2sq_7_engine_sample_repeat(
        struct __pyx_t_2sq_6engine_6_state_State *, int);
    """


cdef inline void sample_repeat(State* st, bint grown) noexcept nogil:
    """sample_every_pool and sample_areas at an iteration a steady run repeats (steady_run), or
    at a quiet repeat step_again makes (step_begun). Since the previous sample (the run's
    iteration before; any event's, for step_again) only that iteration's end and this plan
    ran: no event else and no session, so the live count and every stage's values are as they
    were and no stage was touched or newly marked, and only a grow (`grown`: one was due in this
    plan, plan_again's *moved) moved or touched a pool (its evictions with it). That
    sample visited every sampled row but the untouched step stages and pools and left each one
    it kept deferred (lag_at >= 0), so visiting those again would defer each and change nothing:
    only the logs of gaps move (a lone stage or pool is never deferred: sample_lone_*)."""
    if grown or st.n_pools == 1:
        sample_every_pool(st)
    elif st.n_pools > 0 and lag_tick(&st.pool_lag, st.now):
        lag_flush_pools(st)
    if st.n_stages == 1:
        sample_lone_stage(st)
        return
    area_set(&st.live_area, st.now, <double> st.live)
    if lag_tick(&st.stage_lag, st.now):
        lag_flush_stages(st)
    if st.tl != NULL:
        tl_pools(st)


cdef inline void sample_lone_stage(State* st) noexcept nogil:
    """sample_areas for a program of one stage (a plain queue): its row tested without the row
    set's search, and never deferred."""
    area_set(&st.live_area, st.now, <double> st.live)
    if row_marked(st.stages_sampled, 0):
        area_set(&st.stages[0].number, st.now, <double> st.stages[0].n)
        area_set(&st.stages[0].busy_area, st.now, busy_value(&st.stages[0]))
        stage_idle(st, 0)
    if st.tl != NULL:
        tl_pools(st)


cdef inline void sample_unmoved(State* st) noexcept nogil:
    """Step 5 of settle for one stage and at most one pool, where nothing their areas read moved
    since the last instant, which sampled them (a quiet repeat): each area sampled then integrates
    the value it holds (its row still marked as that sample left it; area_count's skip of a 0)."""
    cdef Pool* p = &st.pools[0]
    area_again(&st.live_area, st.now)
    if row_marked(st.stages_sampled, 0):
        area_again(&st.stages[0].number, st.now)
        area_again(&st.stages[0].busy_area, st.now)
    if st.n_pools == 1 and row_marked(st.pools_sampled, 0):
        area_again(&p.used_area, st.now)
        if p.cached_area.value != 0:        # (a pool without a cache: its area at 0 adds +0)
            area_again(&p.cached_area, st.now)
        if p.queue_area.value != 0:
            area_again(&p.queue_area, st.now)
        if p.holders_area.value != 0:
            area_again(&p.holders_area, st.now)


cdef inline void sample_stage(State* st, int32_t k) noexcept nogil:
    """Stage k's areas (it is in the sampled rows): deferred while unchanged."""
    cdef Stage* s = &st.stages[k]
    cdef double n = <double> s.n, busy = busy_value(s)
    if s.lag_at >= 0:
        if same_bits(n, s.number.value) and same_bits(busy, s.busy_area.value):
            return
        lag_stage(s, &st.stage_lag)
        s.number.value = n
        s.busy_area.value = busy
    else:
        area_set(&s.number, st.now, n)
        area_set(&s.busy_area, st.now, busy)
    s.lag_at = st.stage_lag.n
    stage_idle(st, k)


cdef inline void stage_idle(State* st, int32_t k) noexcept nogil:
    """A stage sampled at 0 leaves the sampled rows (a step stage's time shares are integrated at
    its iterations' ends, not here; it stays sampled once used, as its busy area may be
    mid-iteration)."""
    cdef Stage* s = &st.stages[k]
    if s.kind != K_STEP and s.n == 0 and not s.share_cap > 0:
        unmark_row(st.stages_sampled, k)
        s.lag_at = -1


cdef inline double busy_value(Stage* s) noexcept nogil:
    """What a stage's busy area holds: the capacity carried by a shared stage's flows, else
    whether the stage holds a job."""
    if s.share_cap > 0:
        return s.rate_sum / s.share_cap
    return 1.0 if s.n > 0 else 0.0


cdef inline void sample_pools(State* st) noexcept nogil:
    """The pools' part of step 5 of settle: the sampled pools touched since the last sample."""
    cdef int64_t ns, s, w, k
    cdef uint64_t sb, b
    cdef uint64_t* words
    if lag_tick(&st.pool_lag, st.now):
        lag_flush_pools(st)
    ns = <int64_t> st.pools_sampled[0]
    words = st.pools_sampled + 1 + ns
    for s in range(ns):
        sb = st.pools_sampled[1 + s]
        while sb != 0:
            w = (s << 6) + __builtin_ctzll(sb)
            sb &= sb - 1
            b = words[w] & st.pools_touched[w]
            st.pools_touched[w] = 0
            while b != 0:
                k = (w << 6) + __builtin_ctzll(b)
                b &= b - 1
                sample_pool(st, <int32_t> k)


cdef inline void touch_pool(State* st, Pool* p) noexcept nogil:
    """Pool p's used, cached, queue or holders moved (or may have): its next sample visits it (a
    lone pool is sampled at every settle: sample_lone_pool)."""
    if st.n_pools > 1:
        touch_row(st.pools_touched, p - st.pools)


cdef inline void touch_step(State* st, int64_t k) noexcept nogil:
    """Step stage k's number moved: its next sample visits it (a lone stage is sampled at every
    settle: sample_lone_stage)."""
    if st.n_stages > 1:
        touch_row(st.stages_touched, k)


cdef inline void sample_lone_pool(State* st) noexcept nogil:
    """sample_pools for a program of one pool: its row tested without the row set's search, and
    never deferred."""
    if row_marked(st.pools_sampled, 0):
        sample_pool_now(st, &st.pools[0])
        pool_idle(st, 0)


cdef inline void sample_pool(State* st, int32_t k) noexcept nogil:
    """Pool k's areas (it is in the sampled rows): deferred while unchanged."""
    cdef Pool* p = &st.pools[k]
    if p.lag_at >= 0:
        if same_bits(p.used, p.used_area.value) and same_bits(p.cached, p.cached_area.value) \
                and same_bits(<double> p.qlen, p.queue_area.value) \
                and same_bits(<double> p.nholders, p.holders_area.value):
            return
        lag_pool(p, &st.pool_lag)
        p.used_area.value = p.used
        p.cached_area.value = p.cached
        p.queue_area.value = <double> p.qlen
        p.holders_area.value = <double> p.nholders
    else:
        sample_pool_now(st, p)
    p.lag_at = st.pool_lag.n
    pool_idle(st, k)


cdef inline void sample_pool_now(State* st, Pool* p) noexcept nogil:
    area_set(&p.used_area, st.now, p.used)
    area_set(&p.cached_area, st.now, p.cached)
    area_count(&p.queue_area, st.now, p.qlen)
    area_count(&p.holders_area, st.now, p.nholders)


cdef inline void pool_idle(State* st, int32_t k) noexcept nogil:
    """A pool sampled at 0 in every area leaves the sampled rows."""
    cdef Pool* p = &st.pools[k]
    if p.used == 0 and p.cached == 0 and p.qlen == 0 and p.nholders == 0:
        unmark_row(st.pools_sampled, k)
        p.lag_at = -1


cdef inline void area_count(Area* a, double now, int64_t n) noexcept nogil:
    """area_set of a count, skipped while it holds 0 and still does: 0 x (now - last) adds +0 to
    the integral, and `last` matters only under a nonzero value (a count is never -0, so the
    value the report reads is the same +0)."""
    if n != 0 or a.value != 0:
        area_set(a, now, <double> n)


cdef inline bint lag_tick(Lag* g, double now) noexcept nogil:
    """Log a family's sample at now (True: the log was full, so its rows must catch up first,
    lag_flush_*, and the caller logs again). Each gap is logged twice, side by side (lag_two's
    one load gives it to both lanes)."""
    cdef double d
    if g.n == LAG_CAP:
        return True
    d = now - g.at
    g.gap[2 * g.n] = d
    g.gap[2 * g.n + 1] = d
    g.at = now
    g.n += 1
    return False


# The catch-up's additions, two areas a lane each: a deferred row most often catches up tens of
# gaps at once (a replica's KV pool changes every few of its iterations, among all replicas'
# events), and each gap is a multiply and an add per area. An SSE2 mulpd/addpd makes each lane's
# own IEEE multiply and add, the scalar loop's to the bit (-ffp-contract=off: no multiply-add), so
# each area still adds its gaps one at a time, in their order; a pair of areas costs one load,
# multiply and add a gap instead of two of each. The loops are unrolled (the loop's own test and
# increment were a third of the instructions).
#
# Where the processor has AVX, the kernels run an AVX copy (the same lanes and operations): the
# two-area and lone-area kernels the same code in VEX's three-operand form (no register copies),
# the four-area one a single 256-bit lane set, all four areas of a pool in one register, one gap
# broadcast to all four (3 instructions a gap where SSE2's two pairs take 6). Still each lane's own
# IEEE multiply then add: the `target("avx")` attribute adds no FMA (AVX has none; fma is its own
# target, and -ffp-contract=off stays). The copy is chosen by a flag set once at import
# (lag_lanes), not by gcc's target_clones: that is an ifunc, and an ifunc in a module built with
# -fprofile-generate crashes when the module loads (benchmarks/README.md, lag12), which would
# fail the profile-guided build's training. gcc puts a vzeroupper before the four-area copy
# returns (the SSE2 code around it pays no transition).
cdef extern from *:
    """
    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
    #define SQ_LAG_AVX 1
    #include <immintrin.h>
    #define SQ_LAG_VEX __attribute__((target("avx"), noinline))
    #else
    #define SQ_LAG_AVX 0
    #endif
    /* whether the kernels run their AVX copies: set once, at import (lag_lanes) */
    static int sq_lag_avx = 0;

    /* a += va x gap, b += vb x gap for each logged gap from i to n, in order (gap2: each gap
       twice, lag_tick) */
    static inline __attribute__((always_inline))
    void sq_lag_two_lanes(double* a, double* b, double va, double vb,
                          const double* gap2, int64_t i, int64_t n) {
    #if defined(__SSE2__)
        __m128d s = _mm_set_pd(*b, *a), v = _mm_set_pd(vb, va);
        #pragma GCC unroll 8
        for (; i < n; i++)
            s = _mm_add_pd(s, _mm_mul_pd(v, _mm_loadu_pd(gap2 + 2 * i)));
        _mm_storel_pd(a, s);
        _mm_storeh_pd(b, s);
    #else
        double x = *a, y = *b, d;
        for (; i < n; i++) {
            d = gap2[2 * i];
            x += va * d;
            y += vb * d;
        }
        *a = x;
        *b = y;
    #endif
    }
    /* sq_lag_two_lanes for four areas, two pairs (one load of each gap) */
    static inline __attribute__((always_inline))
    void sq_lag_four_lanes(double* a, double* b, double* c, double* e,
                           double va, double vb, double vc, double ve,
                           const double* gap2, int64_t i, int64_t n) {
    #if defined(__SSE2__)
        __m128d s = _mm_set_pd(*b, *a), v = _mm_set_pd(vb, va), d;
        __m128d t = _mm_set_pd(*e, *c), w = _mm_set_pd(ve, vc);
        #pragma GCC unroll 8
        for (; i < n; i++) {
            d = _mm_loadu_pd(gap2 + 2 * i);
            s = _mm_add_pd(s, _mm_mul_pd(v, d));
            t = _mm_add_pd(t, _mm_mul_pd(w, d));
        }
        _mm_storel_pd(a, s);
        _mm_storeh_pd(b, s);
        _mm_storel_pd(c, t);
        _mm_storeh_pd(e, t);
    #else
        sq_lag_two_lanes(a, b, va, vb, gap2, i, n);
        sq_lag_two_lanes(c, e, vc, ve, gap2, i, n);
    #endif
    }
    /* a += va x gap for each logged gap from i to n, in order: two gaps' products at once (the
       log read one double on, gap2 + 2i + 1 holds gaps i and i + 1), added one at a time (the
       compiler's own vectors of this loop took more instructions than the scalar one) */
    static inline __attribute__((always_inline))
    void sq_lag_one_lanes(double* a, double va, const double* gap2, int64_t i, int64_t n) {
    #if defined(__SSE2__)
        __m128d x = _mm_load_sd(a), v = _mm_set1_pd(va), p;
        const double* g = gap2 + 2 * i + 1;
        int64_t pairs = (n - i) / 2;
        #pragma GCC unroll 4
        for (; pairs > 0; pairs--, g += 4) {
            p = _mm_mul_pd(v, _mm_loadu_pd(g));
            x = _mm_add_sd(x, p);
            x = _mm_add_sd(x, _mm_unpackhi_pd(p, p));
        }
        if ((n - i) & 1)
            x = _mm_add_sd(x, _mm_mul_sd(v, _mm_load_sd(g)));
        _mm_store_sd(a, x);
    #else
        double x = *a;
        for (; i < n; i++)
            x += va * gap2[2 * i];
        *a = x;
    #endif
    }

    #if SQ_LAG_AVX
    /* the AVX copies: the kernels above compiled in VEX form, and the four areas in one ymm
       (lanes a, b, c, e from the lowest; each gap broadcast to the four) */
    static SQ_LAG_VEX void sq_lag_two_vex(double* a, double* b, double va, double vb,
                                          const double* gap2, int64_t i, int64_t n) {
        sq_lag_two_lanes(a, b, va, vb, gap2, i, n);
    }
    static SQ_LAG_VEX void sq_lag_one_vex(double* a, double va, const double* gap2, int64_t i, int64_t n) {
        sq_lag_one_lanes(a, va, gap2, i, n);
    }
    static SQ_LAG_VEX void sq_lag_four_vex(double* a, double* b, double* c, double* e,
                                           double va, double vb, double vc, double ve,
                                           const double* gap2, int64_t i, int64_t n) {
        __m256d s = _mm256_set_pd(*e, *c, *b, *a), v = _mm256_set_pd(ve, vc, vb, va);
        __m128d lo, hi;
        #pragma GCC unroll 8
        for (; i < n; i++)
            s = _mm256_add_pd(s, _mm256_mul_pd(v, _mm256_broadcast_sd(gap2 + 2 * i)));
        lo = _mm256_castpd256_pd128(s);
        hi = _mm256_extractf128_pd(s, 1);
        _mm_storel_pd(a, lo);
        _mm_storeh_pd(b, lo);
        _mm_storel_pd(c, hi);
        _mm_storeh_pd(e, hi);
    }
    #endif

    /* the kernels the catch-up calls: the AVX copy where the flag says, else the lanes above */
    static inline void sq_lag_two(double* a, double* b, double va, double vb,
                                  const double* gap2, int64_t i, int64_t n) {
    #if SQ_LAG_AVX
        if (sq_lag_avx) {
            sq_lag_two_vex(a, b, va, vb, gap2, i, n);
            return;
        }
    #endif
        sq_lag_two_lanes(a, b, va, vb, gap2, i, n);
    }
    static inline void sq_lag_four(double* a, double* b, double* c, double* e,
                                   double va, double vb, double vc, double ve,
                                   const double* gap2, int64_t i, int64_t n) {
    #if SQ_LAG_AVX
        if (sq_lag_avx) {
            sq_lag_four_vex(a, b, c, e, va, vb, vc, ve, gap2, i, n);
            return;
        }
    #endif
        sq_lag_four_lanes(a, b, c, e, va, vb, vc, ve, gap2, i, n);
    }
    static inline void sq_lag_one(double* a, double va, const double* gap2, int64_t i, int64_t n) {
    #if SQ_LAG_AVX
        if (sq_lag_avx) {
            sq_lag_one_vex(a, va, gap2, i, n);
            return;
        }
    #endif
        sq_lag_one_lanes(a, va, gap2, i, n);
    }

    /* whether this processor (and its operating system, which must save the ymm registers)
       runs AVX: gcc's cpu check reads both */
    static int sq_lag_avx_runs(void) {
    #if SQ_LAG_AVX
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx");
    #else
        return 0;
    #endif
    }
    """
    int lag_avx "sq_lag_avx"
    int lag_avx_runs "sq_lag_avx_runs"() nogil
    void lag_two "sq_lag_two"(double* a, double* b, double va, double vb, const double* gap2,
                              int64_t i, int64_t n) nogil
    void lag_four "sq_lag_four"(double* a, double* b, double* c, double* e, double va, double vb,
                                double vc, double ve, const double* gap2, int64_t i, int64_t n) nogil
    void lag_one "sq_lag_one"(double* a, double va, const double* gap2, int64_t i, int64_t n) nogil


lag_avx = lag_avx_runs()     # the AVX copies wherever they run (lag_lanes in _engine.pyx turns them off)


# An area holding 0 adds 0 x gap = +0 or -0 at each deferred sample (the gaps are finite), which
# leaves its integral as it is (an integral is never -0: it starts at +0, and x + -x is +0): a
# stage holding 0 in both areas (an idle replica) adds nothing, and a pool whose queue and cached
# hold 0 (a seqs pool, a KV pool without a cache) only its used and holders; a queue at 0 beside a
# cache is a lane that adds +0. Each area's gaps are added in their order.
cdef void lag_stage(Stage* s, Lag* g) noexcept nogil:
    """The stage's deferred samples, in order: number and busy catch up to the family's last sample
    (a busy of 1 adds 1 x gap, the gap itself to the bit)."""
    if s.lag_at == g.n:
        return
    if s.number.value != 0.0 or s.busy_area.value != 0.0:
        lag_two(&s.number.integral, &s.busy_area.integral, s.number.value, s.busy_area.value,
                g.gap, s.lag_at, g.n)
    s.number.last = s.busy_area.last = g.at
    s.lag_at = g.n


cdef void lag_pool(Pool* p, Lag* g) noexcept nogil:
    """The pool's deferred samples, in order: its four areas catch up to the family's last sample
    (an area a count left at 0 adds +0 here, as it would have when it next moved)."""
    cdef double vu = p.used_area.value, vc = p.cached_area.value
    cdef double vq = p.queue_area.value, vh = p.holders_area.value
    if p.lag_at == g.n:
        return
    # (a pool whose every holder holds 1 unit, a replica's sequence slots: its used and holders
    # areas hold the same values at the same samples, so the same integrals; one is made)
    if vc == 0.0 and vq == 0.0 and same_bits(vu, vh) \
            and same_bits(p.used_area.integral, p.holders_area.integral):
        lag_one(&p.used_area.integral, vu, g.gap, p.lag_at, g.n)
        p.holders_area.integral = p.used_area.integral
    elif vc == 0.0 and vq == 0.0:
        lag_two(&p.used_area.integral, &p.holders_area.integral, vu, vh, g.gap, p.lag_at, g.n)
    else:
        lag_four(&p.used_area.integral, &p.cached_area.integral, &p.queue_area.integral,
                 &p.holders_area.integral, vu, vc, vq, vh, g.gap, p.lag_at, g.n)
    p.used_area.last = p.cached_area.last = p.queue_area.last = p.holders_area.last = g.at
    p.lag_at = g.n


cdef void lag_flush_pools(State* st) noexcept nogil:
    """Every deferred pool catches up and the pools' log starts again (sample_pools logs now next)."""
    cdef int32_t k
    for k in range(st.n_pools):
        if st.pools[k].lag_at >= 0:
            lag_pool(&st.pools[k], &st.pool_lag)
            st.pools[k].lag_at = 0
    st.pool_lag.n = 0
    lag_tick(&st.pool_lag, st.now)


cdef void lag_flush_stages(State* st) noexcept nogil:
    """Every deferred stage catches up and the stages' log starts again."""
    cdef int32_t k
    for k in range(st.n_stages):
        if st.stages[k].lag_at >= 0:
            lag_stage(&st.stages[k], &st.stage_lag)
            st.stages[k].lag_at = 0
    st.stage_lag.n = 0
    lag_tick(&st.stage_lag, st.now)


cdef void lag_catch_up(State* st) noexcept nogil:
    """Every deferred row catches up, before its integrals are read (the middle of the window,
    the run's end)."""
    cdef int32_t k
    for k in range(st.n_pools):
        if st.pools[k].lag_at >= 0:
            lag_pool(&st.pools[k], &st.pool_lag)
    for k in range(st.n_stages):
        if st.stages[k].lag_at >= 0:
            lag_stage(&st.stages[k], &st.stage_lag)


cdef inline double area_until(Area* a, double t) noexcept nogil:
    """The integral over [warmup, t], the value held since `last` carried on to t."""
    return a.integral + a.value * (t - a.last)


cdef void take_mid(State* st) noexcept nogil:
    """The integrals at the middle of the measured window (no event falls strictly between
    now and mid_time, so the values held now are held until then)."""
    cdef int32_t k
    lag_catch_up(st)
    st.mid_taken = 1
    st.mid_live = area_until(&st.live_area, st.mid_time)
    for k in range(st.n_pools):
        st.pools[k].mid_queue = area_until(&st.pools[k].queue_area, st.mid_time)


cdef void restart_areas(State* st) noexcept nogil:
    """The end of the warm-up: every time average restarts at now (their deferred samples, before
    it, are dropped: each row is sampled afresh at its next visit)."""
    cdef int32_t k
    area_restart(&st.live_area, st.now)
    for k in range(st.n_pools):
        st.pools[k].lag_at = -1
        touch_pool(st, &st.pools[k])
        area_restart(&st.pools[k].used_area, st.now)
        area_restart(&st.pools[k].cached_area, st.now)
        area_restart(&st.pools[k].queue_area, st.now)
        area_restart(&st.pools[k].holders_area, st.now)
    for k in range(st.n_stages):
        st.stages[k].lag_at = -1
        touch_step(st, k)
        area_restart(&st.stages[k].number, st.now)
        area_restart(&st.stages[k].busy_area, st.now)
        area_restart(&st.stages[k].prefill_only, st.now)
        area_restart(&st.stages[k].decode_only, st.now)
        area_restart(&st.stages[k].mixed, st.now)
        area_restart(&st.stages[k].decodes, st.now)


cdef inline void settle(State* st) noexcept nogil:
    """Settle the instant after an event (and once at time 0), spec 09 §9.5, in this order:

    1. the ready queue: each ready session executes (§9.6) until it blocks, ends or waits;
    2. the pools pass, in declaration order: `retry_growers` (05 §5.8), then `try_admit`
       (§5.5; a no-op for `admit via` pools); sessions it admits join the ready queue, so
       1 and 2 repeat until the ready queue stays empty. Admission at settle happens only here;
       only pools with holds or growers waiting are visited (the others' passes do nothing);
    3. the stages pass, in declaration order (from the first ps or step stage): an idle step
       stage with work starts an iteration (04 §4.5.3) unless another event was pending at
       `now` as the pass began (read once: what the pass schedules at `now` does not count);
       a dirty plain ps stage is rescheduled (§4.3), once per settle. Nothing after
       this re-runs 1 and 2: what an iteration's admissions put on an earlier stage waits
       for the next settle;
    4. the flows, if dirty, are recomputed (06 §6.4), once per settle;
    5. the time averages are sampled (live sessions, stage numbers and busy time, step
       batch state, pool used/cached/queue/holders; 08, §9.9); a pool or stage that holds 0
       in every area and still does is skipped (it would add 0 to each integral).
    Gauges are read by `run_loop` when time moves on, not here.
    """
    # (inline in run_loop: a program without pools in use, ps or step stages and flows calls
    # nothing here but its sessions)
    run_ready(st)
    if st.error.code:
        return
    if st.step_lone >= 0:
        settle_step_passes(st)
        if st.error.code:
            return
    # pools with nothing waiting and nothing to sample (idle ones) leave settle_passes nothing to do
    # (a program with a ps or step stage goes there anyway: its pools' rows are not looked at here)
    elif st.n_ps_first < st.n_stages or st.flows.dirty \
            or (st.n_pools > 0 and (rows_any(st.pools_waiting) or rows_any(st.pools_sampled))):
        if st.ps_lone >= 0 and not st.flows.dirty:
            # the stages pass of one ps stage, without settle_passes' call (most events of a
            # processor-sharing model leave it clean: a superseded finish, an arrival elsewhere)
            if st.stages[st.ps_lone].dirty:
                reschedule(st, st.ps_lone)
                if st.error.code:
                    return
            if st.n_stages == 1:
                sample_lone_stage(st)
                return
        else:
            settle_passes(st)
            if st.error.code:
                return
    sample_areas(st)


cdef void settle_passes(State* st) noexcept nogil:
    """Steps 2 to 4 of settle, and the pools' areas of step 5 (a program with pools comes here)."""
    if pools_pass(st) < 0:
        return
    if st.n_ps_first < st.n_stages:
        settle_stages(st)
        if st.error.code:
            return
    if st.flows.dirty:
        flows_recompute(st)
    sample_every_pool(st)


cdef inline void settle_step_passes(State* st) noexcept nogil:
    """settle_passes for a program whose stages pass is one step stage (step_lone), inline in
    settle: the stage visited without settle_stages' loop. Whether an event is pending at `now`
    is read as that pass begins: nothing before the stage changes the events."""
    cdef int32_t k = st.step_lone
    if pools_pass(st) < 0:
        return
    if not st.stages[k].inflight and step_has_work(st, k) and not pending_now(st):
        start_iteration(st, k)
        if st.error.code:
            return
    if st.flows.dirty:
        flows_recompute(st)
    sample_every_pool(st)


cdef inline int pools_pass(State* st) noexcept nogil:
    """Step 2 of settle when some pool has holds or growers waiting (-1: an error)."""
    if st.n_pools > 0 and rows_any(st.pools_waiting):
        settle_pools(st)
        if st.error.code:
            return -1
    return 0


cdef inline void sample_every_pool(State* st) noexcept nogil:
    """The pools' areas of step 5 (a lone pool without the row set's search)."""
    if st.n_pools == 1:
        sample_lone_pool(st)
    elif st.n_pools > 0:
        sample_pools(st)


cdef inline void run_ready(State* st) noexcept nogil:
    """Step 1 of settle: each ready session executes until it blocks, ends or waits."""
    # (its callers call it with no error set)
    cdef int32_t slot = ready_next(st)
    while slot >= 0:
        if st.sess.alive[slot] and not st.sess.waiting[slot]:   # a preempted session waits in a queue
            exec_session(st, slot)
            if st.error.code:
                return
        slot = ready_next(st)


cdef void settle_pools(State* st) noexcept nogil:
    """Step 2 of settle, some pool having waiting holds or growers: the pools pass (admission at
    settle happens only here), then the sessions it readied, until none is ready."""
    while True:
        try_every_pool(st)
        if st.error.code or not ready_any(st):
            return
        run_ready(st)
        if st.error.code or not rows_any(st.pools_waiting):
            return


cdef inline void settle_stages(State* st) noexcept nogil:
    """Step 3 of settle: the stages pass over the ps and step stages (from the first to the last).

    Whether another event is pending at `now` is read once, as the pass begins (spec 09 §9.5):
    what the pass itself schedules at `now` (a ps stage's finish rescheduled to this instant, an
    iteration of cost 0) holds back no step stage after it; 0.1.2 starts the iteration with the
    jobs already there. It is read lazily, at the first step stage that could start or before
    the first ps stage rescheduled ahead of a step stage, whichever comes first: nothing before
    either has changed the events yet.

    A pass of several step stages alone (steps_only) visits only those in steps_ready (marked when an iteration ends,
    a resident joins or a hold queues for the stage's admission: the only ways an idle stage
    gets work), read afresh as the pass goes on like the stages it would visit; the others could
    not start. A visit unmarks a stage that is running or has no work."""
    cdef int32_t k = st.n_ps_first
    cdef int pending = -1           # not read yet
    if st.steps_only:
        k = <int32_t> next_row(st.steps_ready, k, st.n_ps_end)
    while k < st.n_ps_end:
        if st.stages[k].kind == K_STEP:
            # an iteration waits for the whole instant (every event at `now` handled)
            if not st.stages[k].inflight and step_has_work(st, k):
                if pending < 0:
                    pending = pending_now(st)
                if not pending:
                    start_iteration(st, k)
                    if st.error.code:
                        return
                    if st.steps_only and st.stages[k].inflight:
                        # begun: it leaves steps_ready now, as its next visit would take it out
                        # (mid-iteration; its end marks it again), so that other stages' quiet
                        # repeats (step_clear) find it unmarked (step_begun's unmark)
                        unmark_row(st.steps_ready, k)
            else:
                unmark_row(st.steps_ready, k)
        elif st.stages[k].kind == K_PS and st.stages[k].dirty:
            if pending < 0 and k < st.n_step_end:
                pending = pending_now(st)
            reschedule_stage(st, k)     # φ may fail as well as the schedule: the flag says either
            if st.error.code:
                return
        k = <int32_t> next_row(st.steps_ready, k + 1, st.n_ps_end) if st.steps_only else k + 1


cdef inline bint pending_now(State* st) noexcept nogil:
    """Whether another event is pending at `now`."""
    cdef Event* nxt = next_event(st)
    return nxt != NULL and nxt.t <= st.now


cdef bint step_has_work(State* st, int32_t k) noexcept nogil:
    return st.stages[k].nres > 0 or admitting_pool(st, k) >= 0


cdef void read_gauges(State* st) noexcept nogil:
    cdef int32_t g
    cdef double v
    cdef Gauge* gg
    for g in range(st.n_gauges):
        gg = &st.gauges[g]
        v = evaluate(st, gg.expr, -1, &st.rng_session, NAN)
        if st.error.code:
            return
        if not st.keep_samples:
            gauge_fold_read(gg, st.now, v)
        elif gg.values.n == 0 or v != gg.values.p[gg.values.n - 1]:
            if charge(st, 16) < 0:
                return
            if darr_push(&gg.times, st.now) < 0 or darr_push(&gg.values, v) < 0:
                fail(st, E_MEMORY, -1, 0, 0, 0)
                return


cdef inline double poisson_gap(State* st) noexcept nogil:
    """A poisson arrival's gap, drawn on the arrivals stream (its rate > 0)."""
    return -log(1.0 - sq_rng_random_f64(&st.rng_arrival)) / st.arrival_rate


cdef inline int next_arrival(State* st) noexcept nogil:
    """Schedule the next open arrival (the first one too), unless the limit is reached. A poisson
    gap is drawn inline (in the arrival's handling: the four loops that handle one), the other
    kinds by `next_arrival_other`, out of line so that this stays small enough for gcc to inline."""
    if st.arrival_kind == A_POISSON:
        schedule_arrival(st, &st.arrival, st.now + poisson_gap(st))
        return 0
    return next_arrival_other(st)


cdef int next_arrival_other(State* st) noexcept nogil:
    """next_arrival of a kind other than poisson (a renewal's gap by `next_renewal`)."""
    if st.arrival_kind == A_POISSON_NOW:
        return next_thinned(st)
    if st.arrival_kind == A_REPLAY:
        if st.replay_next < st.replay_n:          # else the schedule is spent: no more arrivals
            schedule_arrival(st, &st.arrival, st.replay_at[st.replay_next])
            st.replay_next += 1
        return 0
    if st.arrival_kind == A_MODULATED:
        return next_modulated(st)
    if st.arrival_kind == A_RENEWAL_RATE:
        return next_operational(st)
    return next_renewal(st)


cdef inline double exp_gap(State* st, double rate) noexcept nogil:
    """An exponential gap of `rate` on the arrivals stream (inf for a rate of 0, drawing nothing)."""
    if rate <= 0:
        return INFINITY
    return -log(1.0 - sq_rng_random_f64(&st.rng_arrival)) / rate


cdef int next_modulated(State* st) noexcept nogil:
    """The next arrival of a Markov-modulated poisson (an extension), exact by construction: in
    phase i arrivals come at rate r_i until the phase ends, after an exponential time of rate q_i,
    for phase i + 1 (the last's for the first). Both clocks are memoryless, so an arrival gap cut
    by a phase's end is drawn afresh in the next phase. The first phase is drawn from the
    stationary law (π_i ∝ 1 / q_i: each phase's share of a cycle), so the process is stationary
    from time 0. Past the horizon nothing is scheduled."""
    cdef double t = st.now, gap, u, total = 0.0
    cdef int32_t i
    if st.mod_n == 0:
        return 0                                   # every phase's rate is 0: no arrival
    if st.mod_phase < 0:
        for i in range(st.mod_n):
            total += 1.0 / st.mod_leave[i]
        u = sq_rng_random_f64(&st.rng_arrival) * total
        st.mod_phase = st.mod_n - 1
        for i in range(st.mod_n - 1):
            u -= 1.0 / st.mod_leave[i]
            if u < 0:
                st.mod_phase = i
                break
        st.mod_until = t + exp_gap(st, st.mod_leave[st.mod_phase])
    while t <= st.horizon:
        gap = exp_gap(st, st.mod_rates[st.mod_phase])
        if t + gap < st.mod_until:
            schedule_arrival(st, &st.arrival, t + gap)
            return 0
        t = st.mod_until
        st.mod_phase = st.mod_phase + 1 if st.mod_phase + 1 < st.mod_n else 0
        st.mod_until = t + exp_gap(st, st.mod_leave[st.mod_phase])
    return 0


cdef int next_operational(State* st) noexcept nogil:
    """The next arrival of a renewal run in its rate's operational time (an extension): a gap g
    drawn as a renewal's, then the arrival at Λ⁻¹(Λ(last) + g), Λ linear in each cell of its table
    (sq/traces/rate.py). Past the table's end (the horizon) nothing is scheduled."""
    cdef double gap = evaluate(st, st.arrival_gap, -1, &st.rng_arrival, NAN), d, t
    cdef int64_t k = st.op_cell
    if st.error.code:
        return -1
    if not (gap > 0) or not isfinite(gap):
        fail(st, E_RENEWAL, -1, gap, 0, 0)
        return -1
    st.op_at += gap
    while k < st.op_n and st.op_cum[k + 1] < st.op_at:
        k += 1
    st.op_cell = k
    if k >= st.op_n:
        return 0
    d = st.op_cum[k + 1] - st.op_cum[k]        # > 0: a cell of rate 0 is passed by the search
    t = (k + (st.op_at - st.op_cum[k]) / d) * st.op_width
    schedule_arrival(st, &st.arrival, fmax(t, st.now))
    return 0


cdef int next_thinned(State* st) noexcept nogil:
    """The next arrival of a poisson process whose rate reads `now` (an extension), by thinning
    (sq/traces/rate.py): candidates after exponential gaps of the bound's rate, each kept with
    probability rate(t) / bound, one uniform draw each, on the arrivals stream; the rate is
    evaluated with `now` at the candidate. Past the horizon the candidate is scheduled as it is
    (it never happens), so a rate of 0 to the end does not loop for ever."""
    cdef double t = st.now, saved = st.now, r, bound = st.arrival_rate
    if bound <= 0:
        return 0                                   # a rate that is 0 all run: no arrival
    while True:
        t = t + -log(1.0 - sq_rng_random_f64(&st.rng_arrival)) / bound
        if t > st.horizon:
            break
        st.now = t
        r = evaluate(st, st.arrival_gap, -1, &st.rng_arrival, NAN)
        st.now = saved
        if st.error.code:
            return -1
        if not (r >= 0 and r <= bound):
            fail(st, E_RATE, -1, r, 0, 0)
            st.error.value2 = t
            return -1
        if sq_rng_random_f64(&st.rng_arrival) * bound < r:
            break
    schedule_arrival(st, &st.arrival, t)
    return 0


cdef int next_renewal(State* st) noexcept nogil:
    cdef double gap = evaluate(st, st.arrival_gap, -1, &st.rng_arrival, NAN)
    if st.error.code:
        return -1
    if not (gap > 0) or not isfinite(gap):
        fail(st, E_RENEWAL, -1, gap, 0, 0)
        return -1
    schedule_arrival(st, &st.arrival, st.now + gap)
    return 0


cdef void handle(State* st, Event* e) noexcept nogil:
    """Handle one popped event (spec 09 §9.2), before `settle` runs the instant:

    a job's finish (fifo, ps or delay stage; a stale ps finish is ignored), an arrival
    (the next one is scheduled first, then the session spawns: §9.7), a flow's end (06),
    a step iteration's end (04 §4.5.3; stale after a preemption restarted it), a lease's
    end (05: its pool is freed, then every pool is tried in declaration order), or the
    end of the warm-up (§9.9: the time averages restart from now).
    """
    # the common kinds are tested in turn and the rarer ones in handle_rare, apart: a jump table
    # over all six kinds (what one chain of tests compiles to) cost more than the test of a finish
    if e.kind == EV_FINISH:
        finish(st, e)
    elif e.kind == EV_ARRIVE:
        # the next arrival is scheduled first, then the session spawns
        if st.limit == 0 or st.arrivals + 1 < st.limit:
            if next_arrival(st) < 0:
                return
        spawn(st)
    elif e.kind == EV_ITER_END:
        iteration_end(st, e)
    else:
        handle_rare(st, e)


cdef inline bint iteration_end(State* st, Event* e) noexcept nogil:
    """A step iteration's end e: its tokens applied, unless it is stale (False: it was)."""
    if e.c == st.stages[e.a].iter_epoch and st.stages[e.a].inflight:
        end_iteration(st, e.a)
        return True
    return False


cdef void handle_rare(State* st, Event* e) noexcept nogil:
    """`handle` for a flow's end, a lease's end or the end of the warm-up."""
    if e.kind == EV_FLOW_END:
        flow_finish(st, e)
    elif e.kind == EV_LEASE_END:
        # a lease already ended (released, or its session gone) makes this event stale
        if st.leases.active[e.b] and st.leases.gen[e.b] == e.c:
            end_lease(st, e.b)
            if not st.error.code:
                try_every_pool(st)
    else:
        st.warm = 1
        st.warm_arrivals = st.arrivals
        restart_areas(st)


cdef inline bint instant_over(State* st, Event* nxt) noexcept nogil:
    """The instant at `now` is over, nxt being later: read the gauges (§9.10), take the middle
    of the window once it is passed, poll between instants. True: the run stops here (the
    report covers [0, now])."""
    if st.n_gauges > 0:
        read_gauges(st)
    st.steps = 0
    if nxt.t > st.mid_time and not st.mid_taken:
        take_mid(st)
    return st.events >= st.poll_at and poll(st)


cdef inline bint event_begins(State* st, Event* e) noexcept nogil:
    """The popped event e sets the clock and counts as an event, and as a step of its instant
    (False: the instant has taken too many, the run failed)."""
    st.now = e.t
    st.events += 1
    # events count toward the instant's work too: a step iteration of cost 0, or a job
    # whose time is lost to rounding (`now + 1e-300 == now`), repeats without time passing
    st.steps += 1
    if st.steps > st.step_limit:
        fail(st, E_STUCK, -1, 0, -1, e.a if e.kind == EV_FINISH or e.kind == EV_ITER_END else -1)
        return False
    return True


cdef inline bint stuck(State* st, int32_t slot, int32_t pc) noexcept nogil:
    """A session's statement at pc counts as a step of its instant: True when that is too many
    (the run failed)."""
    st.steps += 1
    if st.steps > st.step_limit:
        fail(st, E_STUCK, slot, 0, pc, 0)
        return True
    return False


cdef void run_loop(State* st) noexcept nogil:
    """The main loop, spec 09 §9.4: the warm-up event and the first arrivals (§9.7), one
    `settle` at time 0, then per event: stop at the arrival limit or past the horizon; read
    the gauges when time moves on (§9.10: the previous instant is over); pop the earliest
    event (time, then sequence: §9.3), `handle` it and `settle`. A run-time error (§9.11)
    stops the loop with `st.error.code` set; the gauges are read once more at the end.

    Errors, one convention: `fail()` records the first run-time error in `st.error` (sticky:
    later ones are dropped) and the loop and everything it calls stop by testing
    `st.error.code`. Return codes (-1, False) are how containers and allocators (growable
    arrays, rings, heaps, `*_tables`, `*_alloc`, `charge`, `schedule`) report to their caller;
    an engine function returns -1 only with the flag set, so `< 0` after such a call is a
    shortcut for the flag, never tested together with it.
    """
    cdef int64_t i
    lone_plan(st)
    if events_start(st) < 0:
        return
    if st.warmup > 0:
        schedule(st, st.warmup, EV_END_WARMUP, 0, 0, 0)
    if st.arrival_kind == A_POISSON:
        schedule_arrival(st, &st.arrival, 0.0)
    elif (st.arrival_kind == A_RENEWAL or st.arrival_kind == A_REPLAY or st.arrival_kind == A_POISSON_NOW
          or st.arrival_kind == A_MODULATED or st.arrival_kind == A_RENEWAL_RATE):
        next_arrival(st)
    elif st.arrival_kind == A_BATCH or st.arrival_kind == A_CLOSED:
        for i in range(st.arrival_count):
            if spawn(st) < 0:
                return
    if st.error.code:
        return
    settle(st)
    if st.check:
        check_invariants_now(st)
    if st.lone.stage >= 0 and st.lone.fifo:
        fifo_loop(st)     # a program that is one open fifo queue (sq/engine/_one_queue.pxi)
    elif st.lone.stage >= 0 and st.lone.ps:
        ps_loop(st)       # a program that is one open ps queue (sq/engine/_one_ps.pxi)
    elif st.lone.stage >= 0:
        lone_loop(st)     # a program that is one open queue (sq/engine/_one_queue.pxi)
    else:
        general_loop(st)
    if not st.error.code and st.n_gauges > 0:
        read_gauges(st)


cdef void general_loop(State* st) noexcept nogil:
    """run_loop's events, one by one: each is handled, then its instant settled."""
    cdef Event e
    cdef Event* nxt
    while not st.error.code:
        if st.limit > 0 and st.arrivals >= st.limit and st.live == 0:
            break
        nxt = next_event(st)
        if nxt == NULL or nxt.t > st.horizon:
            break
        if nxt.t > st.now and instant_over(st, nxt):
            break
        if st.steps_again and nxt == st.heap and nxt.kind == EV_ITER_END and nxt.a != st.steady_stage:
            # the heap's top taken in place (_arrays.pxi): step_again replaces it by the stage's
            # next end, one sift where a pop and a push were two, or takes it before it settles
            e = nxt[0]
            if not event_begins(st, &e):
                heap_take_top(st)
                return
            if step_again(st, &e, True) < 0:    # handled and settled
                return
            if st.check:
                check_invariants_now(st)
            continue
        e = pop_event(st, nxt)
        if not event_begins(st, &e):
            return
        if e.kind == EV_ITER_END and e.a == st.steady_stage:
            if steady_run(st, &e) < 0:      # handled and settled, and the iterations that repeat
                return
        elif e.kind == EV_ITER_END and st.steps_again:
            if step_again(st, &e, False) < 0:   # handled and settled
                return
        else:
            handle(st, &e)
            if st.error.code:
                return
            settle(st)
        if st.check:
            check_invariants_now(st)


cdef bint steady_enabled = True     # False: no steady runs (steady_stage -1; tests compare the two paths)
cdef int64_t steady_repeats = 0     # iterations repeated off the event list, over all runs (tests read it)
cdef int64_t steps_repeated = 0     # iterations step_again began, over all runs (tests read it)


cdef int step_again(State* st, Event* e, bint top) noexcept nogil:
    """general_loop's handling and settling of an iteration end e of one of several step stages
    (steps_only: R replicas), popped and begun (top: taken in place at the heap's top, so the
    stage's next end replaces it there, or it is taken before settle: heap_replace_top,
    heap_take_top). 0: the instant is settled; -1: handling e failed.

    Where settle (spec 09 §9.5) would do nothing but start the iteration just ended again and
    sample the areas, that iteration is begun by replica_begin (plan_again's writes, as steady_run's
    first iteration is), without settle's passes and plan_pass; its end goes on the event list as start_iteration's
    would (other replicas' events come between). The tests, each what settle would find (step_clear):
    nothing ready (no resident finished); the pools pass does nothing (every waiting pool has no
    growers, and its queue, if any, is admitted only by a stage's iterations, not this one's:
    the plan's admission after its residents finds no pool, admitting_pool); the stages pass
    would start no other stage (each other stage marked in steps_ready is running or has no work:
    it is unmarked, as the pass's visit would); the flows clean; no other event pending at `now`;
    and plan_unchanged. That is read afresh unless the stage's last iteration was begun here and
    no resident has joined or left since (Stage.plan_kept): then only what an iteration moves
    (work, positions, allocations) is read, as in a steady run (again), and while the quiet
    repeats it counted last (all 1-token decodes far from their ends, and from block boundaries
    or with each grow granted) last, no plan is read (with grants, while no other took the pool's
    room since: kept_room, before replica_quiet). What other replicas' events do between cannot change
    the rest: only this stage's own plans stall its residents' owners (grow_or_wait), a job's
    mode, rows and frames are set as it joins, and a preemption removes the job (leave_residents).
    A quiet repeat's end finishes no resident, so the tests come before it, and its end and plan
    are made in one pass (replica_quiet). Otherwise settle runs, as ever."""
    cdef int32_t k = e.a
    cdef Stage* s = &st.stages[k]
    cdef int64_t na = s.na
    cdef double duration
    cdef int plan
    cdef IterTotals n
    cdef bint planned = False, grants
    cdef int repeat = -1            # a quiet repeat's: 1 where it grew, 0 where not (its sample)
    if s.plan_kept and s.quiet > 0 and e.c == s.iter_epoch and s.inflight and kept_room(st, k):
        # a quiet repeat's end: no resident finishes, so the end readies, schedules and unmarks
        # nothing the tests read (it marks the stage in steps_ready: quiet_clear), and they come
        # before it; then the end and the plan in one pass (replica_quiet)
        if not (ready_any(st) or st.flows.dirty or not quiet_clear(st, k)
                or (pending_under_top(st) if top else pending_now(st))):
            s.quiet -= 1
            repeat = replica_quiet(st, s, k, na, &n, True) if st.kept[k].pool >= 0 \
                else replica_quiet(st, s, k, na, &n, False)
            if repeat < 0:
                return step_failed(st, top)     # out of memory (the flag is set)
            planned = True
    if not planned:
        # (the end pushes no event and reads none: a finish only readies its owner)
        if not iteration_end(st, e):
            return step_settle(st, top)
        if st.error.code:
            step_failed(st, top)
            return -1
        if ready_any(st) or st.flows.dirty or not step_clear(st, k) \
                or (pending_under_top(st) if top else pending_now(st)):
            return step_settle(st, top)
        # (each call with its flags written out, so the compiler makes each its own copy)
        # (a count with grants is read afresh here: this path is rare, and replica_begin's quiet
        # copy has no grow)
        if s.plan_kept and s.quiet > 0 and st.kept[k].pool < 0:
            s.quiet -= 1
            replica_begin(st, s, k, na, &n, False, False)     # (the plan counting it marked the frames grown)
        else:
            if s.plan_kept:
                plan = plan_unchanged(st, s, na, True, &s.quiet, &grants, REPLICA_RESIDENTS, NULL)
            else:
                plan = plan_unchanged(st, s, na, False, &s.quiet, &grants, REPLICA_RESIDENTS, NULL)
            if plan == PLAN_CHANGED:
                s.plan_kept = False
                return step_settle(st, top)
            replica_begin(st, s, k, na, &n, True, grants)
    # begin_iteration's cost and begin; a quiet repeat that grew nothing keeps its cost (kept_cost)
    if repeat == 0 and s.cost_repeats:
        duration = st.kept[k].duration
    else:
        duration = iteration_cost(st, s, &n, 0.0)
        if duration < 0:
            return step_failed(st, top)     # the cost failed (the flag is set)
        st.kept[k].duration = duration
    duration = iteration_begins(st, s, k, &n, duration, s.budget_k, repeat >= 0)
    return step_begun(st, s, k, duration, top, repeat)


# kept_cost: a quiet repeat that grew nothing (replica_quiet 0) begins with the cost of the stage's
# last iteration, which step_again began too (Stage.plan_kept: start_iteration clears it), where
# the cost reads only constants and its iteration's totals (Stage.cost_repeats; the constants
# are the run's). Those totals are the last iteration's: the same entries (s.na of them) with the
# same tokens (only plan_unchanged rewrites an entry's, and a quiet repeat reads no plan), summed
# from 0.0 in the same order (count_assigned's additions, replica_quiet's), the KV sums the kept
# ones (KeptPlan: only a plan or a grow writes them), nres (none joined or left), npre, kvp and
# attention 0. The same inputs to the same operations give the same double. The context is not
# written either: its cost slots are read only by a cost, each written first by iteration_cost
# (Ntok, Npre, Attn and Kvm exist only in a cost: ir.CTX_MOMENTS), or by a budget, chunk or serve
# key, which read only Nres, Ndec, Kvb and Kvp, each written first by set_totals where any such
# expression reads one (lowering's budget_totals; budget_left restores the context it saved).


cdef inline int step_settle(State* st, bint top) noexcept nogil:
    """step_again's instant settled the ordinary way, the heap's top taken first if it was taken
    in place (0)."""
    if top:
        heap_take_top(st)
    settle(st)
    return 0


cdef inline int step_failed(State* st, bint top) noexcept nogil:
    """step_again stopped by a failure (the flag is set), the heap's top taken first if it was
    taken in place, so the event list stays whole (0)."""
    if top:
        heap_take_top(st)
    return 0


cdef inline int step_begun(State* st, Stage* s, int32_t k, double duration, bint top,
                           int repeat) noexcept nogil:
    """step_again's iteration of stage k begun: its end scheduled as start_iteration's, settle's
    step 5 (0). The stage leaves steps_ready, as the stages pass's next visit would take it out
    (mid-iteration): the next iteration end's step_clear then most often finds its own stage alone
    there (its end marks it again). `repeat`: -1, or a quiet repeat's replica_quiet (1: it grew).

    A quiet repeat's step 5 is sample_repeat's, as steady_run's: every event's handling ends with
    a sample (settle's step 5, step_begun's or steady_run's), so since the last one only this
    repeat's end and plan ran; they move no stage's number (none joins or leaves), nor the live
    count, and no pool but by its grows (grow_now touches the pool). That sample visited every
    sampled row but the untouched step stages and pools and left each one it kept deferred, so
    visiting them again would defer each and change nothing: only the logs of gaps move."""
    s.plan_kept = True
    unmark_row(st.steps_ready, k)
    if (heap_replace_top(st, st.now + duration, EV_ITER_END, k, 0, s.iter_epoch) if top
            else schedule(st, st.now + duration, EV_ITER_END, k, 0, s.iter_epoch)) < 0:
        return 0
    st.steps_repeated += 1
    if repeat >= 0:
        sample_repeat(st, repeat)
    else:
        sample_every_pool(st)           # settle's step 5
        sample_areas(st)
    return 0


cdef inline bint quiet_clear(State* st, int32_t k) noexcept nogil:
    """step_clear(st, k) after stage k's iteration end has marked it in steps_ready, for a quiet
    repeat's end (which is made after). Most often no stage but k is marked: then step_clear's
    stages part would unmark nothing and say True, so only its pools part is made (most often no
    pool waits), and the mark is left out, as step_begun's unmark would take it out again (where
    the tests fail, the end marks it)."""
    if rows_within(st.steps_ready, k):
        # (step_clear's stages part would find k alone, marked: only its pools part is left)
        return rows_none(st.pools_waiting) or pools_clear(st, k)
    mark_row(st.steps_ready, k)
    return step_clear(st, k)


cdef inline bint step_clear(State* st, int32_t k) noexcept nogil:
    """step_again's tests of settle's pools pass and stages pass, stage k's iteration just ended:
    True when the pools pass would change nothing (a waiting pool with neither growers nor a
    queue is unmarked, as it would) and the plan of stage k would try no admission, and the
    stages pass would start no stage but k (another marked one, running or without work, is
    unmarked, as its visit would)."""
    cdef int32_t j
    if not pools_clear(st, k):
        return False
    if row_alone(st.steps_ready, k):
        return True                     # (most often: end_iteration marked it, and none else is)
    j = <int32_t> next_row(st.steps_ready, st.n_ps_first, st.n_ps_end)
    while j < st.n_ps_end:
        if j != k:
            if not st.stages[j].inflight and step_has_work(st, j):
                return False
            unmark_row(st.steps_ready, j)
        j = <int32_t> next_row(st.steps_ready, j + 1, st.n_ps_end)
    return True


cdef inline bint pools_clear(State* st, int32_t k) noexcept nogil:
    """step_clear's test of settle's pools pass: True when it would change nothing (a waiting
    pool with neither growers nor a queue is unmarked, as it would) and the plan of stage k would
    try no admission."""
    cdef int32_t pk
    cdef Pool* p
    if st.n_pools > 0 and rows_any(st.pools_waiting):
        pk = <int32_t> next_row(st.pools_waiting, 0, st.n_pools)
        while pk < st.n_pools:
            p = &st.pools[pk]
            if p.ngrowers > 0 or (p.qlen > 0 and (st.admit_via[pk] < 0 or st.admit_via[pk] == k)):
                return False
            if p.qlen == 0:
                unmark_row(st.pools_waiting, pk)
            pk = <int32_t> next_row(st.pools_waiting, pk + 1, st.n_pools)
    return True


# step_again's plan: plan_unchanged (always inlined, so step_again has its own copy with its
# flags folded), then replica_begin rather than plan_again (whose flags in steady_run are
# constants, inlined there): plan_again not `same` with its totals (count_assigned's, each
# entry's) added in its loop. The same tests and writes in the same order, with the tables'
# pointers in locals (nothing in the loops is a call but a granted grow's grow_now, after which
# they are read again). A resident's KV units (job_units: its owner's allocation on the stage's
# memory) move only by its own grow, which its visit makes first: another resident is another
# session's job, so the sums are those repeat_totals makes after the whole plan, in the same
# order. (Added in the loop, not by decode_totals after it: a second pass over the entries.)
cdef inline void replica_begin(State* st, Stage* s, int32_t k, int64_t na, IterTotals* n,
                               bint grows, bint grants) noexcept nogil:
    """plan_again(st, s, k, na, n, False, grows, 0.0, moved) but its begin_iteration, with
    its totals added in its loop: the plan plan_unchanged read, made (its totals n).
    `grants`: plan_unchanged counted its quiet repeats with grants (st.kept[k] then names the
    pool they grow on and its `used` as this plan leaves it)."""
    cdef double need, tok
    cdef int64_t r, fj
    cdef int32_t j, pool = -1
    cdef IterTotals t                   # (a local, so its sums stay in registers)
    cdef KeptPlan* kp = &st.kept[k]
    cdef bint kv = st.kv_iteration
    cdef Assigned* a = s.assigned
    cdef JobRec* jobs = st.jobs.rec
    cdef double* frame_pos = st.sess.frame_pos
    cdef double* frame_alloc = st.sess.frame_alloc
    s.na = na
    s.iter_left = False
    st.iter_preempted = 0
    memset(&t, 0, sizeof(t))
    for r in range(na):
        j = a[r].job
        tok = a[r].tok
        if jobs[j].growing >= 0:
            fj = jobs[j].frame
            pool = jobs[j].growing
            if grows:
                need = frame_pos[fj] + tok - frame_alloc[fj]
                if need > EPS:
                    grow_now(st, &st.pools[jobs[j].growing], fj, need)     # granted (plan_unchanged)
                    jobs = st.jobs.rec
                    frame_pos = st.sess.frame_pos
                    frame_alloc = st.sess.frame_alloc
            frame_pos[fj] += tok
            if grows:
                mark_grown(st, fj)
        a[r].id = jobs[j].id
        count_assigned(st, s, j, M_DECODE, tok, &t, kv)
    s.cursor = s.nres
    kp.tokens_at = NAN                  # (the last tokens' times: end_iteration's, not all one)
    kp.kvb = t.kvb
    kp.kvm = t.kvm
    kp.pool = pool if grants else -1    # (with grants every growing resident grows on one pool)
    if grants:
        kp.used = st.pools[pool].used
    n[0] = t


# A quiet repeat's end and plan in one pass, as steady_run's quiet_repeat (_step.pxi) makes them:
# the end is end_iteration's of residents all decodes continuing their turns' tokens, none
# finishing (each one's work was >= 1 + t at the plan counting the t-th repeat) or removed (the
# plan kept), and the plan replica_begin's quiet one (the ids in the entries are their jobs',
# none having left). Per resident the end and the plan write disjoint things (the job's work, its
# owner's ITL fields and the histogram; its frame's position, and with grants its grow: the pool,
# its evictions and the frame's allocation, which nothing the end reads). The KV sums are those
# of the plan replica_begin made last (st.kept): a resident's allocation moves only by its own
# grow and none was made since that plan but by these repeats (no resident left or joined, or
# the plan would not be kept), so where no grow is due the same additions of the same units in
# the same order give the same bits; after a grow they are made afresh (decode_totals).
# The iteration ending and the one beginning are decode-only with as many decodes: the stage's
# two time shares keep their values, integrated to now (iteration_begins, told it begins a repeat,
# leaves them and the kind and decodes as they are).
# The gaps: a quiet repeat sets every resident's last token's time (its owner's itl_last) to now,
# and the iteration it begins has the same residents (none joins or leaves while the plan is kept;
# a session has one job, so no two residents share an owner, and only this stage's ends write
# their owners' times). Where the iteration ending was begun by a quiet repeat (KeptPlan.tokens_at;
# a plan, replica_begin, sets it NaN), every resident's gap is now - tokens_at, one double, read
# once: where it is finite and positive, alike_gaps adds them as resident_gaps would, without a
# load, a test and a branch a resident (the branch of a gap that changes, mispredicted, once an
# iteration). Otherwise resident_gaps reads each. The gaps come before the residents' loop: no
# resident's end writes a time the gaps read until the loop (itl_last, written there) and a grow
# moves no time (only the tables may move: they are read afresh after it).
#
# Grants (`grows`): plan_unchanged counted the repeats with each due grow granted on one pool p
# (its room after that plan's grows, shared by the growing residents: see _step.pxi's quiet
# repeats with grows), from p's `used` as that plan left it and only these repeats' own grows
# after. Between two of step_again's repeats other replicas' events run, and another stage's grow
# or an admission on p would take room the count assumed: so a repeat with grants is made only
# while p's `used` is at most what this stage's last plan or repeat left (kept_room; grow_fits is
# monotone in `used`, and the grant depends on nothing else of p: its evictions are plain, made
# live by grow_now, and decide no grant). Otherwise plan_unchanged reads the plan afresh (the plan
# is kept: again). The frames are marked grown already (replica_begin's plan counting the repeats
# marked each growing one, and only its own hold's admission clears the mark), so mark_grown,
# which would return at once, is not called.
# (always inlined, each of step_again's two calls its own copy with `grows` folded: with the
# sums' loop after a grow, decode_totals, gcc kept one copy out of line, and the week paid a call
# and the flag's tests in every quiet repeat: +2.3 %)
cdef extern from *:
    """
    struct __pyx_t_2sq_6engine_6_state_State;
    struct __pyx_t_2sq_6engine_6_state_Stage;
    struct __pyx_t_2sq_7_engine_IterTotals;
    static inline __attribute__((always_inline)) int __pyx_f_2sq_7_engine_replica_quiet(
        struct __pyx_t_2sq_6engine_6_state_State *, struct __pyx_t_2sq_6engine_6_state_Stage *,
        int32_t, int64_t, struct __pyx_t_2sq_7_engine_IterTotals *, int);
    """


cdef inline int alike_gaps(Histogram* h, double gap, int64_t na) noexcept nogil:
    """The ITL gaps of a quiet repeat's na residents, each `gap` (finite and positive), as
    resident_gaps would add them (-1: out of memory): the first by histogram_add unless it is the
    last gap already, then each the last gap again, the total adding them one at a time."""
    cdef double total
    cdef int64_t r = 0, again
    if gap != h.last_gap:
        if histogram_add(h, gap) < 0:
            return -1
        r = 1
    total = h.total
    again = na - r
    while r < na:
        total += gap
        r += 1
    histogram_again(h, total, &again)
    return 0


cdef int resident_gaps(State* st, Histogram* h, Assigned* a, int64_t na) noexcept nogil:
    """The ITL gaps of a quiet repeat's na residents, each now less its owner's last token's time,
    in their order (-1: out of memory): end_decodes' additions (a gap equal to the last one
    counted in locals, histogram_again)."""
    cdef double now = st.now, gap, total = h.total, last_gap = h.last_gap
    cdef int64_t again = 0, r
    cdef JobRec* jobs = st.jobs.rec
    cdef double* itl_last = st.sess.itl_last
    for r in range(na):
        gap = now - itl_last[jobs[a[r].job].owner]
        if gap == last_gap and gap > 0.0:
            total += gap
            again += 1
        else:
            histogram_again(h, total, &again)
            if histogram_add(h, gap) < 0:
                return -1
            total = h.total
            last_gap = h.last_gap
    histogram_again(h, total, &again)
    return 0


cdef inline bint kept_room(State* st, int32_t k) noexcept nogil:
    """Whether stage k's quiet count still holds: one without grants does; one with grants while
    its pool's `used` is at most what the stage's last plan or repeat left."""
    cdef KeptPlan* kp = &st.kept[k]
    return kp.pool < 0 or st.pools[kp.pool].used <= kp.used


cdef inline int replica_quiet(State* st, Stage* s, int32_t k, int64_t na, IterTotals* n,
                              bint grows) noexcept nogil:
    """end_iteration of stage k's iteration ending now and the quiet repeat that follows
    (replica_begin(st, s, k, na, n, False, False), or with `grows`: each due grow granted, and
    the KV sums afresh after one) (1: it grew, 0: not; -1: out of memory)."""
    cdef double now = st.now, tok, need, gap
    cdef double ntok = 0.0
    cdef int64_t r, fj
    cdef int32_t j
    cdef bint due = False
    cdef IterTotals t
    cdef KeptPlan* kp = &st.kept[k]
    cdef Assigned* a = s.assigned
    cdef JobRec* jobs = st.jobs.rec
    cdef double* itl_last = st.sess.itl_last
    cdef double* frame_pos = st.sess.frame_pos
    cdef double* frame_alloc = st.sess.frame_alloc
    area_again(&s.decode_only, now)
    area_again(&s.decodes, now)
    if st.warm:                         # (decoding[j]: a decode token continuing the turn)
        gap = now - kp.tokens_at
        if gap > 0.0 and gap < INFINITY:
            if alike_gaps(&s.itl, gap, na) < 0:
                fail(st, E_MEMORY, -1, 0, 0, 0)
                return -1
        elif resident_gaps(st, &s.itl, a, na) < 0:
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return -1
    for r in range(na):
        j = a[r].job
        tok = a[r].tok
        jobs[j].work -= tok
        itl_last[jobs[j].owner] = now
        if jobs[j].growing >= 0:
            fj = jobs[j].frame
            if grows:
                need = frame_pos[fj] + tok - frame_alloc[fj]
                if need > EPS:
                    grow_now(st, &st.pools[jobs[j].growing], fj, need)     # granted (the count)
                    due = True
                    jobs = st.jobs.rec
                    itl_last = st.sess.itl_last
                    frame_pos = st.sess.frame_pos
                    frame_alloc = st.sess.frame_alloc
            frame_pos[fj] += tok
        ntok += tok
    kp.tokens_at = now
    st.iter_preempted = 0
    if grows:
        if due and st.kv_iteration:
            decode_totals(st, s, na, &t, True)      # (its token sums are those made above)
            kp.kvb = t.kvb
            kp.kvm = t.kvm
        kp.used = st.pools[kp.pool].used
    n.ntok = ntok
    n.npre = 0.0
    n.ndec = <double> na                # (1.0 added na times from 0.0: exact)
    n.kvb = kp.kvb                      # (0.0 without st.kv_iteration: replica_begin's sums)
    n.kvp = 0.0
    n.kvm = kp.kvm
    return due


cdef enum:
    # step_again's quiet repeats are counted for this many residents at most (plan_unchanged's
    # `most`): with grants a block boundary does not end a count, so a replica's batch of ~6 to
    # tens of decodes most often has one (steady_run's QUIET_RESIDENTS, 6, is for counts without)
    REPLICA_RESIDENTS = 64

cdef int64_t quiet_fused = 0        # iterations quiet_repeat planned with the end before them, over all runs (tests read it)


cdef inline bint quiet_fuses(State* st, Stage* s) noexcept nogil:
    """Whether steady_run's quiet repeats go through quiet_repeat (_step.pxi): their end and plan
    are those it makes (a cost repeating with the totals, no iteration traces or timeline, one
    step stage in the stages pass)."""
    return s.cost_repeats and not st.traces.iters and st.tl == NULL and not st.steps_only


# (always inlined, as plan_unchanged: each of steady_run's two calls its own copy, `again` folded;
# gcc kept one copy out of line, a call a check)
cdef extern from *:
    """
    struct __pyx_t_2sq_6engine_6_state_State;
    struct __pyx_t_2sq_6engine_6_state_Stage;
    struct __pyx_t_2sq_7_engine_Placed;
    static inline __attribute__((always_inline)) int __pyx_f_2sq_7_engine_steady_check(
        struct __pyx_t_2sq_6engine_6_state_State *, struct __pyx_t_2sq_6engine_6_state_Stage *,
        int64_t, int, int64_t *, int *, struct __pyx_t_2sq_7_engine_Placed *,
        struct __pyx_t_2sq_7_engine_Placed **);
    """


cdef inline int steady_check(State* st, Stage* s, int64_t na, bint again, int64_t* quiet, bint* grants,
                             Placed* placed, Placed** placing) noexcept nogil:
    """steady_run's plan_unchanged: for a few residents with the quiet count, else placing the
    positions (*placing: placed; NULL: not placed). (A copy of each: past QUIET_RESIDENTS the
    compiler drops the count's tests, and placing's test of the residents' number is made once
    here; for a few residents placing saves less than it costs.)"""
    if QUIET_RESIDENTS < na <= PLACED_MAX:
        placing[0] = placed
        return plan_unchanged(st, s, na, again, quiet, grants, 0, placed)
    placing[0] = NULL
    return plan_unchanged(st, s, na, again, quiet, grants, QUIET_RESIDENTS, NULL)


cdef int steady_run(State* st, Event* e) noexcept nogil:
    """general_loop's handling and settling of an iteration end e of the lone step stage
    (step_lone), popped and begun; then, while the instant that follows only starts the iteration
    just ended again, a *steady decode run*: those iterations repeated without the event list, the
    general settle or plan_pass. 0: the last instant is settled (its invariants not yet checked),
    and the next event is on the list; -1: handling e failed (general_loop returns).

    An iteration end's instant is replaced only when `settle` would do nothing but start the
    iteration plan_again makes and sample the areas (spec 09 §9.5): nothing ready (no resident
    finished: a finish readies its session), no pool waiting unless admission_refused (_pools.pxi:
    the pools pass does nothing, and the admission the plan tries after its residents is refused
    without a draw or a write, and stays so through the run: no session runs in it and `used`
    only grows), the flows clean, the stage idle, nothing else pending at `now`, and
    plan_unchanged (_step.pxi). The iteration's end is then taken off the list only when
    general_loop would pop it next with nothing else between: it ends after `now` (its instant is
    another), by the horizon, strictly before the earliest other event (a tie goes to the other,
    whose serial is older), the arrival limit not reached, and no poll due (a poll may stop the
    run with the end pending). Each repeated end still takes its serial (as `schedule` would:
    later ties are broken by serials), reads the gauges and the window's middle (instant_over),
    counts as an event (event_begins) and is applied by end_iteration, so now, the areas, running
    means, ITL gaps, counters and traces move exactly as through the list. When any test fails,
    the ordinary path takes over: settle, or the end scheduled."""
    cdef int32_t k = e.a
    cdef Stage* s = &st.stages[k]
    cdef int64_t na
    cdef bint again = False         # a repeated end: the tests of the last instant held
    cdef int plan
    cdef int64_t quiet = 0          # the repeats to come planned the same with no grow due (plan_unchanged)
    cdef bint checked               # this plan was read by plan_unchanged (not a quiet repeat)
    cdef bint grants = False        # the quiet repeats may grow (plan_unchanged: each granted)
    cdef bint moved = False         # a grow was due in this plan (plan_again: a pool may have moved)
    cdef Placed placed              # the entries whose positions a repeat's plan_unchanged moved
    cdef Placed* placing            # (&placed where steady_check placed; NULL: none)
    cdef double duration = 0.0      # the iteration just begun's, and its totals: n
    cdef IterTotals n
    cdef Event end
    cdef Event* nxt
    cdef bint fuses = quiet_fuses(st, s)   # quiet repeats in one pass
    # (quiet repeats are counted with grants: past a block boundary, each grow granted, they
    # still go in one pass; a cost reading the KV sums takes them out of line, quiet_grows)
    end.kind = EV_ITER_END          # (a repeated end's other fields: its time, serial and epoch)
    end.a = k
    end.b = 0
    while True:
        na = s.na                       # the assignment of the iteration ending (end_iteration clears it)
        if quiet > 0 and fuses:
            # a quiet repeat (quiet > 0 only after a repeated end; its grows, with grants, each
            # granted): this end and its plan in one pass (quiet_repeat, _step.pxi)
            quiet -= 1
            st.quiet_fused += 1
            if grants and st.kv_iteration:
                duration = quiet_grows(st, s, k, na, &n, duration)      # (and its sample)
                if st.error.code:
                    return -1
            else:
                duration = quiet_repeat(st, s, k, na, &n, duration, grants, &moved)
                if st.error.code:
                    return -1
                if not moved and st.n_stages == 1 and st.n_pools <= 1:
                    sample_unmoved(st)
                else:
                    sample_repeat(st, moved)
        else:
            if not iteration_end(st, e):
                settle(st)
                return 0
            if st.error.code:
                return -1
            placing = NULL
            if again:
                # the previous iteration's tests held and only its end ran since (the earliest other
                # event was after it, so still nothing is pending; no session ran, so the pools wait
                # as they did, and an admission refused then is still: `used` has only grown)
                if ready_any(st) or s.inflight:
                    settle(st)
                    return 0
                checked = quiet == 0
                if checked:
                    plan = steady_check(st, s, na, True, &quiet, &grants, &placed, &placing)
                else:
                    quiet -= 1
                    plan = PLAN_SAME
            elif ready_any(st) or s.inflight or st.flows.dirty \
                    or (st.n_pools > 0 and rows_any(st.pools_waiting) and not admission_refused(st, k)) \
                    or pending_now(st):
                settle(st)
                return 0
            else:
                checked = True
                plan = steady_check(st, s, na, False, &quiet, &grants, &placed, &placing)
            if plan == PLAN_CHANGED:
                settle(st)
                return 0
            # settle's step 3, as start_iteration: a repeat of the iteration just ended (the same
            # totals, but the KV sums after a grow) keeps its duration when its cost reads only them
            if again and plan == PLAN_SAME and s.cost_repeats:
                duration = plan_again(st, s, k, na, &n, True, checked or grants, duration, &moved, placing)
            else:
                duration = plan_again(st, s, k, na, &n, False, True, 0.0, &moved, placing)
            if duration < 0:
                return 0
            # its step 5 (the flows are clean)
            if again:
                sample_repeat(st, moved)
            else:
                sample_every_pool(st)
                sample_areas(st)
        end.t = st.now + duration
        nxt = next_event(st)
        if not (end.t > st.now and end.t <= st.horizon and (nxt == NULL or nxt.t > end.t)
                and st.events < st.poll_at and not (st.limit > 0 and st.arrivals >= st.limit and st.live == 0)):
            schedule(st, end.t, EV_ITER_END, k, 0, s.iter_epoch)
            return 0
        end.seq = st.seq                # the serial schedule gives it
        st.seq += 1
        st.steady_repeats += 1
        end.c = s.iter_epoch
        if st.check:
            check_invariants_now(st)
            if st.error.code:
                return 0
        instant_over(st, &end)          # (no poll due: it does not stop the run)
        if not event_begins(st, &end):
            return -1
        e = &end
        again = True

# Debug mode, `run(check_invariants=True)`: the engine's bookkeeping re-checked after every
# event (and once more at the end). A failure is an engine bug, never a property of the
# program, so it is reported as such, with what disagreed, where and when.
# Included by _engine.pyx.

cdef enum Invariant:
    INV_LIVE = 1        # live sessions counted vs slots marked alive
    INV_STAGE = 2       # a stage's job count vs its servers, queue or heap
    INV_JOBS = 3        # job slots in use vs jobs counted on stages
    INV_POOL_NEG = 4    # a pool counter below zero
    INV_POOL_CAP = 5    # allocated + cached above the pool's cap
    INV_POOL_HOLDS = 6  # allocated vs the allocations of open holds and leases
    INV_HOLD_NEG = 7    # a hold's allocation below zero
    INV_RESIDENTS = 8   # a step stage's residents out of admission order, or not its jobs
    INV_HOLDERS = 9     # a pool's holders disagree with the sessions' counts of them
    INV_LRU = 10        # an lru pool's heap out of order, or not naming each entry once
    INV_RESIDENT_FRAMES = 11   # a resident's frame entries, found when it joined, no longer its owner's
    INV_ITER_AREAS = 12 # a step stage's time shares not holding what its iteration is (iteration_areas_*)
    INV_DEFERRED = 13   # a row whose samples are deferred changed without a touch (sample_pool, sample_stage)

# Sums of many allocations carry rounding; the engine itself fits within EPS.
cdef extern from *:
    "#define SQ_INV_TOL 1e-6"
    const double INV_TOL "SQ_INV_TOL"


cdef inline bint over(double a, double b) noexcept nogil:
    """a > b beyond rounding (infinite caps never overflow)."""
    return a > b + INV_TOL * (1.0 + fabs(b)) if b < INFINITY else False


cdef int invariant_fault(State* st, int64_t* where) noexcept nogil:
    """The first broken invariant (an INV_ code, its stage/pool row in `where`), or 0."""
    cdef int64_t i, alive = 0, jobs = 0
    cdef int32_t k
    cdef Stage* s
    cdef Pool* p
    cdef double held
    cdef bint shared = False
    for i in range(st.sess.high):
        alive += st.sess.alive[i]
    if alive != st.live or st.live < 0:
        return INV_LIVE
    for i in range(st.jobs.high):
        if st.jobs.rec[i].id >= 0:
            jobs += 1
    for k in range(st.n_stages):
        s = &st.stages[k]
        where[0] = k
        if s.n < 0 or (s.kind == K_FIFO and (s.busy > s.servers or s.n != s.busy + s.qlen)):
            return INV_STAGE
        # on a shared stage (chapter 06) jobs are flows, kept outside the ps heap
        if s.kind == K_PS and s.share_cap <= 0 and s.n != s.hlen:
            return INV_STAGE
        if s.kind == K_STEP and not residents_ordered(st, s):
            return INV_RESIDENTS
        if s.kind == K_STEP and not resident_frames_hold(st, s):
            return INV_RESIDENT_FRAMES
        if s.kind == K_STEP and not iteration_areas_hold(s):
            return INV_ITER_AREAS
        if s.lag_at >= 0 and not (same_bits(<double> s.n, s.number.value)
                                  and same_bits(busy_value(s), s.busy_area.value)):
            return INV_DEFERRED
        jobs -= s.n
        shared = shared or s.share_cap > 0
    # a flow is one job counted on each of its stages, so the tally holds only without flows
    if jobs != 0 and not shared:
        return INV_JOBS
    for k in range(st.n_pools):
        p = &st.pools[k]
        where[0] = k
        if p.used < -INV_TOL or p.cached < -INV_TOL or p.qlen < 0 or p.nholders < 0 or p.nentries < 0:
            return INV_POOL_NEG
        # a spill tier takes evicted pieces without making room first (05 §5.4, §5.11), and a
        # release may cache a computed prefix longer than it frees (05 §5.5): both stay over
        # their cap until something makes room; a negative cap admits nothing (0.1.2 accepts
        # one), so its pool stays at 0, which is within it
        if not over(p.used + p.cached, fmax(p.cap, 0.0)):
            p.overfull = 0
        elif not is_spill_tier(st, k) and not p.overfull:
            return INV_POOL_CAP
        held = held_units(st, k)
        if held < -INV_TOL:
            return INV_HOLD_NEG
        if over(p.used, held) or over(held, p.used):
            return INV_POOL_HOLDS
        if not holders_agree(st, k):
            return INV_HOLDERS
        if lru_pool(p) and not lru_ordered(p):
            return INV_LRU
        if p.lag_at >= 0 and not (same_bits(p.used, p.used_area.value) and same_bits(p.cached, p.cached_area.value)
                                  and same_bits(<double> p.qlen, p.queue_area.value)
                                  and same_bits(<double> p.nholders, p.holders_area.value)):
            return INV_DEFERRED
    return 0


cdef bint residents_ordered(State* st, Stage* s) noexcept nogil:
    cdef int64_t r
    if s.nres != s.n:
        return False
    for r in range(s.nres):
        if st.jobs.stage[s.res[r]] != s - st.stages:
            return False
        if r > 0 and st.sess.adm[st.jobs.rec[s.res[r - 1]].owner] > st.sess.adm[st.jobs.rec[s.res[r]].owner]:
            return False
    return True


cdef bint resident_frames_hold(State* st, Stage* s) noexcept nogil:
    """Each resident's Jobs.frame and Jobs.units_at are what resident_frames finds now."""
    cdef int64_t r, frame, units
    cdef int32_t j
    for r in range(s.nres):
        j = s.res[r]
        frame, units = st.jobs.rec[j].frame, st.jobs.units_at[j]
        resident_frames(st, j, s.memory)
        if st.jobs.rec[j].frame != frame or st.jobs.units_at[j] != units:
            return False
    return True


cdef inline bint plain_integral(Area* a) noexcept nogil:
    return a.integral >= 0.0 and not signbit(a.integral)


cdef bint iteration_areas_hold(Stage* s) noexcept nogil:
    """The time shares hold 1 for the iteration's kind and 0 elsewhere, the decodes its decodes,
    and no integral is -0 or negative: what lets an iteration write only its nonzero areas."""
    if not (plain_integral(&s.prefill_only) and plain_integral(&s.decode_only) and plain_integral(&s.mixed)
            and plain_integral(&s.decodes)):
        return False
    return (s.prefill_only.value == (1.0 if s.iter_kind == 1 else 0.0)
            and s.decode_only.value == (1.0 if s.iter_kind == 2 else 0.0)
            and s.mixed.value == (1.0 if s.iter_kind == 3 else 0.0)
            and s.decodes.value == <double> s.iter_decodes)


cdef bint holders_agree(State* st, int32_t row) noexcept nogil:
    """The live entries number nholders, and each session's count sums to them."""
    cdef Pool* p = &st.pools[row]
    cdef int64_t i, live = 0, counted = 0
    for i in range(p.holders_len):
        if holder_live(st, p, i):
            live += 1
    for i in range(st.sess.high):
        if st.sess.hcount[i * st.n_pools + row] < 0:
            return False
        counted += st.sess.hcount[i * st.n_pools + row]
    return live == p.nholders and counted == p.nholders


cdef bint lru_ordered(Pool* p) noexcept nogil:
    cdef int64_t i
    for i in range(p.nentries):
        if p.entries[i].at < 0 or p.entries[i].at >= p.nentries or p.lru[p.entries[i].at] != i:
            return False
        if i > 0 and lru_before(p, p.lru[i], p.lru[(i - 1) >> 1]):
            return False
    return True


cdef bint is_spill_tier(State* st, int32_t row) noexcept nogil:
    cdef int32_t k
    for k in range(st.n_pools):
        if st.pools[k].spill_to == row:
            return True
    return False


cdef double held_units(State* st, int32_t row) noexcept nogil:
    """Units of pool `row` allocated to open holds and live leases; -1 if one is negative."""
    cdef double total = 0.0, a
    cdef int64_t slot, d, i, j, frame
    for slot in range(st.sess.high):
        if not st.sess.alive[slot]:
            continue
        for d in range(st.sess.depth[slot]):
            frame = frame_of(st, <int32_t> slot, <int32_t> d)
            # only the pools this hold names: the frame's other entries are never written
            for i in range(st.holds[st.hold_offsets[st.sess.frame_hold[frame]] + H_NPOOLS]):
                j = frame * st.hold_pools_max + i
                if st.sess.frame_active[j] and st.sess.frame_member[j] == row:
                    a = st.sess.frame_alloc[j]
                    if a < -INV_TOL:
                        return -1.0
                    total += a
    for j in range(st.leases.n):
        if st.leases.active[j] and st.leases.row[j] == row:
            total += st.leases.alloc[j]
    return total


cdef void check_invariants_now(State* st) noexcept nogil:
    cdef int64_t where = -1
    cdef int code = invariant_fault(st, &where)
    if code:
        fail(st, E_INVARIANT, -1, 0, code, where)


_INVARIANT_TEXT = {
    INV_LIVE: "the live-session count disagrees with the sessions alive",
    INV_STAGE: "stage row {}: its job count disagrees with its servers, queue or heap",
    INV_JOBS: "the jobs in use disagree with the jobs counted on stages",
    INV_POOL_NEG: "pool row {}: a counter (used, cached, queue, holders, cache entries) is negative",
    INV_POOL_CAP: "pool row {}: allocated + cached exceeds the cap",
    INV_POOL_HOLDS: "pool row {}: its allocated units disagree with the holds and leases that hold it",
    INV_HOLD_NEG: "pool row {}: a hold's allocation is negative",
    INV_RESIDENTS: "stage row {}: its residents are out of admission order or not its jobs",
    INV_HOLDERS: "pool row {}: its holders disagree with the sessions' counts of them",
    INV_LRU: "pool row {}: its lru heap is out of order or does not name each cached prefix once",
    INV_RESIDENT_FRAMES: "stage row {}: a resident's hold entries changed while it was resident",
    INV_ITER_AREAS: "stage row {}: its iteration time shares do not hold what its iteration is",
    INV_DEFERRED: "row {}: its time averages were deferred, but its values moved without a touch",
}


def invariant_text(code, where):
    return "engine invariant broken: " + _INVARIANT_TEXT[code].format(where)

# Pools, part 2 (spec chapter 05): holders, the waiting queue, `hold` statements, admission,
# release, leases, growers and preemption.
# Included by sq/_engine.pyx (one translation unit, so the C compiler inlines across files);
# every function here runs without the GIL.


# ---- holds: holders, the waiting queue, admission, release, leases, growers ----------------
cdef int holders_push(State* st, Pool* p, int32_t slot) noexcept nogil:
    cdef int64_t h = <int64_t> slot * st.n_pools + (p - st.pools), cap
    if p.holders_len == p.holders_cap:
        cap = p.holders_cap * 2 + 16
        if not grow(<void**> &p.holders, cap * sizeof(int32_t)) \
                or not grow(<void**> &p.holders_gen, cap * sizeof(uint32_t)):
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return -1
        p.holders_cap = cap
    p.holders[p.holders_len] = slot
    p.holders_gen[p.holders_len] = st.sess.hgen[h]
    p.holders_len += 1
    p.nholders += 1
    touch_pool(st, p)
    mark_row(st.pools_sampled, p - st.pools)
    st.sess.pools_touched[slot] = 1
    st.sess.hcount[h] += 1
    return 0


cdef inline bint holder_live(State* st, Pool* p, int64_t i) noexcept nogil:
    return p.holders_gen[i] == st.sess.hgen[<int64_t> p.holders[i] * st.n_pools + (p - st.pools)]


cdef void holders_remove(State* st, Pool* p, int32_t slot) noexcept nogil:
    # every occurrence goes: nested holds on one pool leave together
    cdef int64_t h = <int64_t> slot * st.n_pools + (p - st.pools), i, j = 0
    if st.sess.hcount[h] == 0:
        return
    p.nholders -= st.sess.hcount[h]
    touch_pool(st, p)
    st.sess.hcount[h] = 0
    st.sess.hgen[h] += 1
    if p.holders_len > 2 * p.nholders + 16:
        for i in range(p.holders_len):
            if holder_live(st, p, i):
                p.holders[j] = p.holders[i]
                p.holders_gen[j] = p.holders_gen[i]
                j += 1
        p.holders_len = j


cdef int queue_push(State* st, Pool* p, int32_t slot) noexcept nogil:
    if p.qhead + p.qlen == p.qcap:
        if p.qhead > p.qlen:
            # more room before the head than holds waiting: slide them back to the start
            memmove(p.queue_base, p.queue, p.qlen * sizeof(int32_t))
            p.qhead = 0
        else:
            if not grow(<void**> &p.queue_base, (p.qcap * 2 + 16) * sizeof(int32_t)):
                fail(st, E_MEMORY, -1, 0, 0, 0)
                return -1
            p.qcap = p.qcap * 2 + 16
        p.queue = p.queue_base + p.qhead
    p.queue[p.qlen] = slot
    p.qlen += 1
    queued(st, p)
    return 0


cdef void queue_take(State* st, Pool* p, int64_t q) noexcept nogil:
    """Remove the q-th waiting hold, keeping the others' order."""
    cdef int64_t i
    touch_pool(st, p)
    if q == 0:
        p.qhead += 1
        p.queue += 1
    else:
        for i in range(q, p.qlen - 1):
            p.queue[i] = p.queue[i + 1]
    p.qlen -= 1


cdef void queue_push_front(State* st, Pool* p, int32_t slot) noexcept nogil:
    cdef int64_t room
    if p.qhead == 0:
        # no room before the head: move the line to the middle of an allocation with room on
        # both sides, so that pushes at the front cost O(1) amortized
        if p.qcap < 2 * p.qlen + 32:
            if not grow(<void**> &p.queue_base, (2 * p.qlen + 32) * sizeof(int32_t)):
                fail(st, E_MEMORY, -1, 0, 0, 0)
                return
            p.qcap = 2 * p.qlen + 32
        room = (p.qcap - p.qlen) // 2
        memmove(p.queue_base + room, p.queue_base, p.qlen * sizeof(int32_t))
        p.qhead = room
    p.qhead -= 1
    p.queue = p.queue_base + p.qhead
    p.queue[0] = slot
    p.qlen += 1
    queued(st, p)


cdef inline void queued(State* st, Pool* p) noexcept nogil:
    """A hold joined p's queue: the pool has holds waiting and is sampled, and a stage that admits
    from it may start an iteration."""
    cdef int64_t k = p - st.pools
    mark_row(st.pools_waiting, k)
    mark_row(st.pools_sampled, k)
    touch_pool(st, p)
    if st.steps_only and st.admit_via[k] >= 0:
        mark_row(st.steps_ready, st.admit_via[k])


cdef inline int64_t frame_of(State* st, int32_t slot, int32_t d) noexcept nogil:
    return <int64_t> slot * st.hold_depth_max + d


cdef void hold_statement(State* st, int32_t slot, int32_t h, bint front) noexcept nogil:
    """A session reaches `hold`: evaluate every pool's units, test for rejection, join the queue."""
    cdef int32_t off = st.hold_offsets[h], n = st.holds[off + H_NPOOLS], i, e
    cdef int32_t d = st.sess.depth[slot]
    cdef int64_t fi = frame_of(st, slot, d), k
    cdef double need, v
    cdef Pool* p
    for i in range(n):
        e = off + H_HEAD_LEN + HP_LEN * i
        k = 0
        if st.holds[e + HP_REF + REF_INDEX] >= 0:
            v = evaluate(st, st.holds[e + HP_REF + REF_INDEX], slot, &st.rng_session, NAN)
            if st.error.code:
                return
            k = member(st, v, st.holds[e + HP_REF + REF_COUNT], E_POOL_INDEX, slot)
            if k < 0:
                return
        st.sess.frame_member[fi * st.hold_pools_max + i] = <int32_t> (st.holds[e + HP_REF + REF_BASE] + k)
        st.sess.frame_active[fi * st.hold_pools_max + i] = 0
        st.scratch[i] = clamp0(evaluate(st, st.holds[e + HP_UNITS], slot, &st.rng_session, NAN))
        if st.error.code:
            return
    # then pool by pool its reserve and the test: the first pool that can never fit ends the
    # session, and the reserves after it are never read (0.1.2's draw order)
    for i in range(n):
        e = off + H_HEAD_LEN + HP_LEN * i
        need = st.scratch[i]
        if st.holds[e + HP_RESERVE] >= 0:
            need = fmax(need, clamp0(evaluate(st, st.holds[e + HP_RESERVE], slot, &st.rng_session, NAN)))
            if st.error.code:
                return
        p = &st.pools[st.sess.frame_member[fi * st.hold_pools_max + i]]
        if round_up(p, need) > p.cap:     # can never fit: compared exactly
            p.rejected += 1
            end_session(st, slot)
            return
    st.sess.frame_hold[fi] = h
    st.sess.frame_queued_at[fi] = st.now
    st.sess.depth[slot] = d + 1
    st.sess.waiting[slot] = 1
    st.sess.resumed[slot] = front
    if front:
        # a preempted hold re-enters at the head (several victims: the last one first)
        queue_push_front(st, &st.pools[st.sess.frame_member[fi * st.hold_pools_max]], slot)
    else:
        queue_push(st, &st.pools[st.sess.frame_member[fi * st.hold_pools_max]], slot)
    if st.tl != NULL:
        tl_queued(st, fi)


cdef bint keys_smaller(double* a, double* b, int32_t n) noexcept nogil:
    """Lexicographic a < b; a NaN comparison is 'not smaller'."""
    cdef int32_t i
    for i in range(n):
        if a[i] < b[i]:
            return True
        if not (a[i] == b[i]):
            return False
    return False


cdef int64_t next_waiting(State* st, Pool* p) noexcept nogil:
    """The queue index to try next: the front under fifo, else the smallest `queue by` key."""
    cdef int64_t q, best = 0, fi
    cdef int32_t i, n = p.key_count, slot
    cdef double* keys = st.keys
    if n == 0 or st.sess.resumed[p.queue[0]]:
        return 0                    # fifo, or a resumed hold at the head: taken before any key is read
    for q in range(p.qlen):
        slot = p.queue[q]
        fi = frame_of(st, slot, st.sess.depth[slot] - 1)
        st.ctxv[CTX_WAITED] = st.now - st.sess.frame_queued_at[fi]
        for i in range(n):
            keys[n + i] = evaluate(st, st.pool_keys[p.key_start + i], slot, &st.rng_session, NAN)
            if st.error.code:
                return -1
        if q == 0 or keys_smaller(&keys[n], keys, n):
            best = q
            for i in range(n):
                keys[i] = keys[n + i]
    return best


cdef void try_admit(State* st, int32_t pk) noexcept nogil:
    """Admit waiting holds of pool pk while the selected one fits (head-of-line blocking)."""
    cdef Pool* p = &st.pools[pk]
    cdef int64_t q, fi
    cdef int32_t slot, h, off, n, i, e
    cdef double u, need
    if st.admit_via[pk] >= 0:
        return                      # only its stage's iteration starts admit from it
    while p.qlen > 0:
        q = next_waiting(st, p)
        if q < 0:
            return
        slot = p.queue[q]
        fi = frame_of(st, slot, st.sess.depth[slot] - 1)
        h = st.sess.frame_hold[fi]
        off = st.hold_offsets[h]
        n = st.holds[off + H_NPOOLS]
        for i in range(n):
            e = off + H_HEAD_LEN + HP_LEN * i
            u = clamp0(evaluate(st, st.holds[e + HP_UNITS], slot, &st.rng_session, NAN))
            need = u
            if st.holds[e + HP_RESERVE] >= 0:
                need = fmax(u, clamp0(evaluate(st, st.holds[e + HP_RESERVE], slot, &st.rng_session, NAN)))
            if st.error.code:
                return
            st.scratch[2 * i] = u
            st.scratch[2 * i + 1] = need
        for i in range(n):
            if not fits(&st.pools[st.sess.frame_member[fi * st.hold_pools_max + i]], st.scratch[2 * i + 1]):
                return
        queue_take(st, p, q)
        admit(st, slot, fi, off, n)
        if st.error.code:
            return


cdef inline bint fits(Pool* p, double need) noexcept nogil:
    return p.used + round_up(p, need) <= p.cap + EPS


cdef void admit(State* st, int32_t slot, int64_t fi, int32_t off, int32_t n) noexcept nogil:
    cdef double consumed = 0.0, own, a
    cdef int32_t i, row
    cdef bint caching = st.holds[off + H_CACHE] >= 0
    cdef Pool* p
    cdef int64_t j
    cdef bint bounded = caching and st.holds[off + H_REUSE] >= 0
    cdef double reuse = 0.0
    if st.tl != NULL:
        tl_admitted(st, slot, fi)
    if bounded:
        # once per admission, before any pool's own prefix leaves the cache (0.1.2:
        # `reuse (cachedin(P))` still sees it, and a draw in it is taken once)
        reuse = clamp0(evaluate(st, st.holds[off + H_REUSE], slot, &st.rng_session, NAN))
        if st.error.code:
            return
    for i in range(n):
        row = st.sess.frame_member[fi * st.hold_pools_max + i]
        p = &st.pools[row]
        own = 0.0
        if caching:
            own = consume_entry(st, p, slot, bounded, reuse)
            if st.error.code:
                return
        if own > consumed:
            consumed = own
        a = round_up(p, st.scratch[2 * i])          # the units, not the reserve, are allocated
        make_room(st, p, a)
        p.used += a
        touch_pool(st, p)
        mark_row(st.pools_sampled, p - st.pools)
        if holders_push(st, p, slot) < 0:
            return
        p.admissions += 1
        j = fi * st.hold_pools_max + i
        st.sess.frame_alloc[j] = a
        st.sess.frame_active[j] = 1
        st.sess.frame_pos[j] = own
        st.sess.frame_grown[j] = 0
    if st.warm:
        p = &st.pools[st.sess.frame_member[fi * st.hold_pools_max]]
        running_add(&p.waits, st.now - st.sess.frame_queued_at[fi])
    # the session counts as waiting while its own admission makes room (0.1.2: `waiting` reads 1)
    st.sess.waiting[slot] = 0
    st.sess.resumed[slot] = 0
    st.sess.attrs[<int64_t> slot * st.n_attrs + st.slot_cached] = consumed
    st.sess.adm[slot] = st.next_adm       # every hold admission takes the next admission number
    st.next_adm += 1.0
    ready_push(st, slot)


cdef void release_units(State* st, int32_t slot, int32_t row, double alloc, double computed,
                        int32_t cache) noexcept nogil:
    """Give back a hold's allocation on one pool; with a `cache` clause keep a prefix of what it computed."""
    cdef Pool* p = &st.pools[row]
    cdef double keep
    p.used -= alloc
    touch_pool(st, p)
    holders_remove(st, p, slot)
    if cache >= 0:
        keep = clamp0(evaluate(st, cache, slot, &st.rng_session, NAN))
        if st.error.code:
            return
        keep = round_down(p, fmin(keep, computed))
        if keep > 0:
            take_entry(p, st.sess.serial[slot])
            if add_entry(st, p, st.sess.serial[slot], keep) < 0:
                return
            p.entries[p.nentries - 1].slot = slot
            snapshot(st, &p.entries[p.nentries - 1], slot)
            if p.used + p.cached > p.cap + EPS:
                p.overfull = 1      # as 0.1.2: caching never evicts (05 §5.4)


cdef inline void mark_grown(State* st, int64_t j) noexcept nogil:
    # `grown` belongs to the hold: its computed extent becomes `pos` on every pool it takes
    cdef int64_t first = (j // st.hold_pools_max) * st.hold_pools_max, i
    if st.sess.frame_grown[j]:
        return          # marked since the admission, which clears the hold's entries together
    for i in range(first, first + st.hold_pools_max):
        st.sess.frame_grown[i] = 1


cdef inline double computed_of(State* st, int64_t j) noexcept nogil:
    return st.sess.frame_pos[j] if st.sess.frame_grown[j] else st.sess.frame_alloc[j]


cdef void release_frame(State* st, int32_t slot, int32_t d, bint body_done) noexcept nogil:
    """Release every pool a hold still holds, in the order written; at the end of the
    body the `lease` pool's allocation becomes a lease instead."""
    cdef int64_t fi = frame_of(st, slot, d), j
    cdef int32_t h = st.sess.frame_hold[fi], off = st.hold_offsets[h], n = st.holds[off + H_NPOOLS], i
    if st.tl != NULL:
        tl_released(st, slot, fi)
    for i in range(n):
        j = fi * st.hold_pools_max + i
        if st.sess.frame_active[j]:
            st.sess.frame_active[j] = 0
            if body_done:
                st.sess.ppos[<int64_t> slot * (st.n_pools + 1) + st.sess.frame_member[j]] = NAN
            if body_done and i == st.holds[off + H_LEASE_POOL]:
                start_lease(st, slot, j, st.holds[off + H_CACHE], st.holds[off + H_LEASE_TIME])
            else:
                release_units(st, slot, st.sess.frame_member[j], st.sess.frame_alloc[j], computed_of(st, j),
                              st.holds[off + H_CACHE])
            if st.error.code:
                return


cdef bint lease_tables(State* st, Tables* t) noexcept nogil:
    """Every per-lease table (Leases), the one list of them: see Tables."""
    cdef Leases* ls = &st.leases
    return (table(t, <void**> &ls.slot, sizeof(int32_t))
            and table(t, <void**> &ls.row, sizeof(int32_t))
            and table(t, <void**> &ls.alloc, sizeof(double))
            and table(t, <void**> &ls.computed, sizeof(double))
            and table(t, <void**> &ls.cache, sizeof(int32_t))
            and table(t, <void**> &ls.gen, sizeof(int64_t))
            and table(t, <void**> &ls.next, sizeof(int64_t))
            and table(t, <void**> &ls.prev, sizeof(int64_t))
            and table(t, <void**> &ls.spare, sizeof(int64_t))
            and table(t, <void**> &ls.active, sizeof(char)))


cdef void start_lease(State* st, int32_t slot, int64_t j, int32_t cache, int32_t time) noexcept nogil:
    cdef int64_t cap, k
    cdef double t
    if st.leases.nspare == 0 and st.leases.n == st.leases.cap:
        cap = st.leases.cap * 2 + 16
        if not resize(st, lease_tables, cap):
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return
        st.leases.cap = cap
    if st.leases.nspare > 0:
        st.leases.nspare -= 1
        k = st.leases.spare[st.leases.nspare]
    else:
        k = st.leases.n
        st.leases.n += 1
    st.leases.gen[k] = st.leases.next_gen
    st.leases.next_gen += 1
    # the session's newest lease goes last
    st.leases.next[k] = -1
    st.leases.prev[k] = st.sess.lease_tail[slot]
    if st.sess.lease_tail[slot] >= 0:
        st.leases.next[st.sess.lease_tail[slot]] = k
    else:
        st.sess.lease_head[slot] = k
    st.sess.lease_tail[slot] = k
    st.leases.slot[k] = slot
    st.leases.row[k] = st.sess.frame_member[j]
    st.leases.alloc[k] = st.sess.frame_alloc[j]
    st.leases.computed[k] = computed_of(st, j)
    st.leases.cache[k] = cache
    st.leases.active[k] = 1
    t = clamp0(evaluate(st, time, slot, &st.rng_session, NAN))
    if st.error.code:
        return
    if isfinite(t):
        schedule(st, st.now + t, EV_LEASE_END, 0, k, st.leases.gen[k])


cdef void end_lease(State* st, int64_t k) noexcept nogil:
    cdef int32_t slot = st.leases.slot[k]
    st.leases.active[k] = 0
    if st.leases.prev[k] >= 0:
        st.leases.next[st.leases.prev[k]] = st.leases.next[k]
    else:
        st.sess.lease_head[slot] = st.leases.next[k]
    if st.leases.next[k] >= 0:
        st.leases.prev[st.leases.next[k]] = st.leases.prev[k]
    else:
        st.sess.lease_tail[slot] = st.leases.prev[k]
    st.leases.spare[st.leases.nspare] = k      # its fields stay valid until a later lease reuses it
    st.leases.nspare += 1
    release_units(st, slot, st.leases.row[k], st.leases.alloc[k], st.leases.computed[k],
                  st.leases.cache[k])


cdef void end_leases(State* st, int32_t slot) noexcept nogil:
    # in lease order: what they cache joins the cache in that order
    while st.sess.lease_head[slot] >= 0:
        end_lease(st, st.sess.lease_head[slot])
        if st.error.code:
            return


cdef void release_pool(State* st, int32_t slot, int32_t row) noexcept nogil:
    """`release P`: the innermost hold still holding P gives it back now, else the first lease of P ends."""
    cdef int32_t d, i, n, off
    cdef int64_t fi, j
    for d in range(st.sess.depth[slot] - 1, -1, -1):
        fi = frame_of(st, slot, d)
        off = st.hold_offsets[st.sess.frame_hold[fi]]
        n = st.holds[off + H_NPOOLS]
        for i in range(n):
            j = fi * st.hold_pools_max + i
            if st.sess.frame_active[j] and st.sess.frame_member[j] == row:
                st.sess.frame_active[j] = 0
                st.sess.ppos[<int64_t> slot * (st.n_pools + 1) + row] = NAN
                release_units(st, slot, row, st.sess.frame_alloc[j], computed_of(st, j), st.holds[off + H_CACHE])
                return
    # outside any hold on P: the session's first lease on P ends
    cdef int64_t k = st.sess.lease_head[slot]
    while k >= 0:
        if st.leases.row[k] == row:
            end_lease(st, k)
            return
        k = st.leases.next[k]


cdef int64_t innermost(State* st, int32_t slot, int32_t row) noexcept nogil:
    """The frame entry of the session's innermost open hold on pool row, or -1."""
    cdef int32_t d, i, n
    cdef int64_t fi, j
    for d in range(st.sess.depth[slot] - 1, -1, -1):
        fi = frame_of(st, slot, d)
        n = st.holds[st.hold_offsets[st.sess.frame_hold[fi]] + H_NPOOLS]
        for i in range(n):
            j = fi * st.hold_pools_max + i
            if st.sess.frame_active[j] and st.sess.frame_member[j] == row:
                return j
    return -1


cdef inline double grow_need(State* st, Pool* p, int64_t j, double units) noexcept nogil:
    """What growing frame entry j's allocation by `units` takes of pool p (rounded up to blocks;
    <= 0: nothing); grow_now grants it iff it is <= 0 or grow_fits."""
    return round_up(p, st.sess.frame_alloc[j] + units) - st.sess.frame_alloc[j]


cdef inline bint grow_fits(Pool* p, double used, double need) noexcept nogil:
    """Whether a grow taking `need` fits pool p, p.used being `used`."""
    return used + need <= p.cap + EPS


cdef bint grow_now(State* st, Pool* p, int64_t j, double units) noexcept nogil:
    """Grow the hold's allocation by `units` (rounded up to blocks) if it fits; True when granted."""
    cdef double need = grow_need(st, p, j, units)
    if need <= 0:
        return True
    if grow_fits(p, p.used, need):
        make_room(st, p, need)
        p.used += need
        touch_pool(st, p)
        mark_row(st.pools_sampled, p - st.pools)
        st.sess.frame_alloc[j] += need
        return True
    return False


cdef int32_t lifo_victim(State* st, int32_t row, int32_t grower) noexcept nogil:
    """Engine pool: the resident (of a stage with this memory) admitted last; else the last holder with an open hold."""
    cdef Pool* p = &st.pools[row]
    cdef int64_t i
    cdef int32_t k, slot, best = -1
    if p.engine:
        # residents are in admission order, so each stage's candidate is found from its end
        for k in range(st.n_stages):
            if st.stages[k].kind == K_STEP and st.stages[k].memory == row:
                slot = last_resident_victim(st, &st.stages[k], row, grower)
                if slot >= 0 and (best < 0 or st.sess.adm[slot] > st.sess.adm[best]):
                    best = slot
        return best
    for i in range(p.holders_len - 1, -1, -1):
        slot = p.holders[i]
        if holder_live(st, p, i) and innermost(st, slot, row) >= 0:
            return slot
    return -1


cdef int32_t last_resident_victim(State* st, Stage* s, int32_t row, int32_t grower) noexcept nogil:
    """The stage's latest-admitted resident that holds pool row and may be preempted (-1: none)."""
    cdef int64_t r
    cdef int32_t slot
    for r in range(s.nres - 1, -1, -1):
        slot = st.jobs.rec[s.res[r]].owner
        if st.sess.hcount[<int64_t> slot * st.n_pools + row] == 0:
            continue                # not among the pool's holders
        if (st.sess.grow_at[slot] >= 0 and slot != grower) or innermost(st, slot, row) < 0:
            continue                # stalled elsewhere, or holding the pool only through a lease
        return slot
    return -1


cdef void remove_job(State* st, int32_t j) noexcept nogil:
    """A job leaves its stage before completing (its session was preempted); a pending finish goes stale."""
    cdef int32_t k = st.jobs.stage[j], nxt
    cdef Stage* s = &st.stages[k]
    cdef int64_t i, q
    s.n -= 1
    if st.tl != NULL and st.jobs.started[j] and s.kind != K_STEP:
        tl_service_end(st, k, j, "job (preempted)")
    if s.kind == K_FIFO:
        if st.jobs.started[j]:
            s.busy -= 1
            job_free(st, j)
            if s.qlen > 0:
                nxt = ring_pop(s.q, s.qcap, &s.qhead, &s.qlen)
                begin_service(st, s, k, nxt)
            return
        q = 0
        for i in range(s.qlen):
            if s.q[(s.qhead + i) & (s.qcap - 1)] != j:
                s.q[(s.qhead + q) & (s.qcap - 1)] = s.q[(s.qhead + i) & (s.qcap - 1)]
                q += 1
        s.qlen = q
    elif s.kind == K_PS:
        s.V = ps_virtual(s, st.now)
        s.Vt = st.now
        for i in range(s.hlen):
            if s.heap[i].job == j:
                s.hlen -= 1
                if i < s.hlen:
                    heap_place(s.heap, i, s.hlen, s.heap[s.hlen])
                break
        s.dirty = 1
    elif s.kind == K_STEP:
        leave_residents(st, s, j)
    job_free(st, j)


cdef void leave_queue(State* st, int32_t slot) noexcept nogil:
    """A waiting hold leaves its queue (that of the first pool its innermost hold names)."""
    cdef int64_t fi = frame_of(st, slot, st.sess.depth[slot] - 1), i, q = 0
    cdef Pool* p = &st.pools[st.sess.frame_member[fi * st.hold_pools_max]]
    for i in range(p.qlen):
        if p.queue[i] != slot:
            p.queue[q] = p.queue[i]
            q += 1
    p.qlen = q
    touch_pool(st, p)
    st.sess.waiting[slot] = 0
    st.sess.resumed[slot] = 0


cdef void preempt(State* st, int32_t victim, int32_t row) noexcept nogil:
    """§5.9: release the victim's hold on row (and those inside it), rewind it to the hold, re-queue it at the head."""
    cdef Pool* p = &st.pools[row]
    cdef int64_t j = innermost(st, victim, row), fi
    cdef int32_t d = <int32_t> ((j // st.hold_pools_max) - <int64_t> victim * st.hold_depth_max), dd, job, h
    cdef double c = st.sess.frame_pos[j]
    cdef double* before = &st.sess.ppos[<int64_t> victim * (st.n_pools + 1) + row]
    if before[0] == before[0] and c <= before[0] + EPS and not st.sess.stuck[victim]:
        st.sess.stuck[victim] = 1
        p.stuck += 1
    before[0] = c
    st.sess.pools_touched[victim] = 1
    st.sess.attrs[<int64_t> victim * st.n_attrs + st.slot_computed] = c
    if st.tl != NULL:
        tl_preempted(st, victim)
    if st.sess.flow[victim] >= 0:
        remove_flow(st, st.sess.flow[victim])
    st.sess.itl_preempted[victim] = 1          # see token(): a prefill completion may continue the turn
    job = st.sess.job[victim]
    if job >= 0:
        remove_job(st, job)
        st.sess.job[victim] = -1
    if st.sess.waiting[victim]:
        leave_queue(st, victim)
    if st.sess.grow_at[victim] >= 0:
        leave_growers(st, victim)
        st.sess.grow_job[victim] = -1
    for dd in range(st.sess.depth[victim] - 1, d - 1, -1):
        release_frame(st, victim, dd, False)
        if st.error.code:
            return
    h = st.sess.frame_hold[frame_of(st, victim, d)]
    st.sess.depth[victim] = d
    st.sess.pc[victim] = st.hold_pcs[h] + 2
    p.preemptions += 1
    st.iter_preempted = 1
    hold_statement(st, victim, h, True)


cdef int grow_or_preempt(State* st, int32_t slot, int32_t row, int64_t j, double units) noexcept nogil:
    """Grant the growth, preempting lifo victims while it does not fit: 1 granted, 0 must wait, -1 preempted itself."""
    cdef Pool* p = &st.pools[row]
    cdef int32_t victim
    while True:
        if grow_now(st, p, j, units):
            return 1
        if not p.lifo:
            return 0
        victim = lifo_victim(st, row, slot)
        if victim < 0:
            return 0
        preempt(st, victim, row)
        if st.error.code or victim == slot:
            return -1


cdef bint grow_or_wait(State* st, int32_t slot, int32_t row, int64_t j, double units,
                       int32_t job) noexcept nogil:
    """Grow frame entry j by `units`: granted now (preempting under lifo), or the session waits
    among the pool's growers (`job`: the resident job whose growth waits, -1 for a statement)."""
    cdef Pool* p = &st.pools[row]
    cdef int r = grow_or_preempt(st, slot, row, j, units)
    if r == 1:
        return True
    if r < 0:
        return False                # its own victim: back in the queue, any job gone
    if p.ngrowers == p.growers_cap:
        if not grow(<void**> &p.growers, (p.growers_cap * 2 + 16) * sizeof(int32_t)):
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return False
        p.growers_cap = p.growers_cap * 2 + 16
    p.growers[p.ngrowers] = slot
    p.ngrowers += 1
    mark_row(st.pools_waiting, p - st.pools)
    st.sess.grow_units[slot] = units
    st.sess.grow_at[slot] = j
    st.sess.grow_job[slot] = job
    return False


cdef inline bint grow_statement(State* st, int32_t slot, int32_t row, double units) noexcept nogil:
    """`grow P (units)` on the session's innermost hold of P."""
    return grow_or_wait(st, slot, row, innermost(st, slot, row), units, -1)


cdef void retry_growers(State* st, int32_t pk) noexcept nogil:
    """Waiting growers in order; the front blocks the others."""
    cdef Pool* p = &st.pools[pk]
    cdef int32_t slot
    cdef int64_t i
    while p.ngrowers > 0:
        slot = p.growers[0]
        if not grow_now(st, p, st.sess.grow_at[slot], st.sess.grow_units[slot]):
            return
        for i in range(p.ngrowers - 1):
            p.growers[i] = p.growers[i + 1]
        p.ngrowers -= 1
        if st.sess.grow_job[slot] >= 0:
            # a stalled resident goes back to its job; its position moves by the stalled need (quirk, §4.5.4)
            st.sess.frame_pos[st.sess.grow_at[slot]] += st.sess.grow_units[slot]
            st.sess.grow_job[slot] = -1
            st.sess.grow_at[slot] = -1
        else:
            st.sess.grow_at[slot] = -1
            ready_push(st, slot)


cdef void leave_growers(State* st, int32_t slot) noexcept nogil:
    cdef int32_t k
    cdef int64_t i, j
    cdef Pool* p
    for k in range(st.n_pools):
        p = &st.pools[k]
        j = 0
        for i in range(p.ngrowers):
            if p.growers[i] != slot:
                p.growers[j] = p.growers[i]
                j += 1
        p.ngrowers = j
    st.sess.grow_at[slot] = -1


cdef inline void try_every_pool(State* st) noexcept nogil:
    """Growers, then admission, pool by pool: only pools with holds or growers waiting (the
    others' passes do nothing), in row order as if every pool were visited. A pool with no
    growers whose holds are admitted only by its stage's iterations (`admit via`) has nothing
    to do here either: it stays marked for admit_one, without the calls (settle comes here at
    every event while such a queue waits)."""
    cdef int32_t k = <int32_t> next_row(st.pools_waiting, 0, st.n_pools)
    cdef Pool* p
    while k < st.n_pools:
        p = &st.pools[k]
        if p.ngrowers > 0 or (p.qlen > 0 and st.admit_via[k] < 0):
            retry_growers(st, k)
            try_admit(st, k)
            if st.error.code:
                return
        if p.qlen == 0 and p.ngrowers == 0:
            unmark_row(st.pools_waiting, k)
        k = <int32_t> next_row(st.pools_waiting, k + 1, st.n_pools)


cdef inline bint fixed_while_waiting(State* st, int32_t off) noexcept nogil:
    """Whether the expression at off reads nothing a waiting hold's admission could see change: a
    constant, or one of the session's own attributes (only its own statements set them, and a
    waiting session runs none). Its evaluation draws nothing and writes nothing."""
    return st.shapes[off] == XS_NUM or st.shapes[off] == XS_ATTR


cdef bint admission_refused(State* st, int32_t k) noexcept nogil:
    """Whether settle would leave every waiting pool as it is, and the admission step stage k tries
    at the end of its plan (admit_one) is refused, and stays refused while no session runs and the
    pools' `used` only grows (steady_run, _loop.pxi). The pools pass does nothing: every waiting
    pool has holds queued, no growers and admits only through stage k. admit_one's head is the
    queue's front, taken without reading keys (fifo, or a resumed hold), and its hold's units and
    reserves are fixed while it waits (fixed_while_waiting: evaluating them changes nothing), so
    they are what admit_one would read; some pool of the hold does not fit them now, and `fits`
    only grows stricter as `used` grows."""
    cdef int32_t pk = <int32_t> next_row(st.pools_waiting, 0, st.n_pools), head = -1, slot, off, n, i, e
    cdef int64_t fi
    cdef double u, need
    cdef Pool* p
    while pk < st.n_pools:
        p = &st.pools[pk]
        if p.ngrowers > 0 or p.qlen == 0 or st.admit_via[pk] != k:
            return False
        if head < 0:
            head = pk                   # admitting_pool's: the first pool waiting for stage k
        pk = <int32_t> next_row(st.pools_waiting, pk + 1, st.n_pools)
    if head < 0:
        return False
    p = &st.pools[head]
    slot = p.queue[0]
    if p.key_count != 0 and not st.sess.resumed[slot]:
        return False                    # next_waiting would read the keys
    fi = frame_of(st, slot, st.sess.depth[slot] - 1)
    off = st.hold_offsets[st.sess.frame_hold[fi]]
    n = st.holds[off + H_NPOOLS]
    for i in range(n):
        e = off + H_HEAD_LEN + HP_LEN * i
        if not fixed_while_waiting(st, st.holds[e + HP_UNITS]) \
                or (st.holds[e + HP_RESERVE] >= 0 and not fixed_while_waiting(st, st.holds[e + HP_RESERVE])):
            return False
    for i in range(n):
        e = off + H_HEAD_LEN + HP_LEN * i
        u = clamp0(evaluate(st, st.holds[e + HP_UNITS], slot, &st.rng_session, NAN))
        need = u
        if st.holds[e + HP_RESERVE] >= 0:
            need = fmax(u, clamp0(evaluate(st, st.holds[e + HP_RESERVE], slot, &st.rng_session, NAN)))
        if not fits(&st.pools[st.sess.frame_member[fi * st.hold_pools_max + i]], need):
            return True
    return False

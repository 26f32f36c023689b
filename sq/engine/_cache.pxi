# Pools, part 1 (spec chapter 05): amounts, the prefix cache's entries, the own-entry index,
# the LRU heap, eviction and spill.
# Included by sq/_engine.pyx (one translation unit, so the C compiler inlines across files);
# every function here runs without the GIL.


# ---- pools: holds, admission, the prefix cache ---------------------------------------------
cdef inline double clamp0(double x) noexcept nogil:
    # amounts are clamped, not checked: negative and NaN are 0
    return x if x > 0 else 0.0


cdef inline double round_up(Pool* p, double x) noexcept nogil:
    return ceil(x / p.block) * p.block if p.block > 0 else x


cdef inline double round_down(Pool* p, double x) noexcept nogil:
    return floor(x / p.block) * p.block if p.block > 0 else x


# dead cache entries' keys start at 2**62 (0.1.2's, as its eviction trace prints them)
cdef int64_t DEAD_KEY = (<int64_t> 1) << 62


# ---- the entry index: key (a serial, or a dead entry's key) -> entry row -------------------
cdef inline int64_t own_bucket(Pool* p, int64_t key) noexcept nogil:
    return <int64_t> ((<uint64_t> key * <uint64_t> 0x9E3779B97F4A7C15) >> 17) & (p.own_cap - 1)


cdef int64_t own_entry(Pool* p, int64_t key) noexcept nogil:
    cdef int64_t b
    if p.own_cap == 0:
        return -1
    b = own_bucket(p, key)
    while p.own_keys[b] != 0:
        if p.own_keys[b] == key + 1:
            return p.own_rows[b]
        b = (b + 1) & (p.own_cap - 1)
    return -1


cdef void own_put(Pool* p, int64_t key, int64_t row) noexcept nogil:
    """Index or re-index `key` (the table has room: see own_reserve)."""
    cdef int64_t b = own_bucket(p, key)
    while p.own_keys[b] != 0 and p.own_keys[b] != key + 1:
        b = (b + 1) & (p.own_cap - 1)
    p.own_keys[b] = key + 1
    p.own_rows[b] = row


cdef void own_forget(Pool* p, int64_t key) noexcept nogil:
    """Remove `key`, shifting later members of its probe run back so no lookup breaks."""
    cdef int64_t b, next_b, home
    if p.own_cap == 0:
        return
    b = own_bucket(p, key)
    while p.own_keys[b] != key + 1:
        if p.own_keys[b] == 0:
            return
        b = (b + 1) & (p.own_cap - 1)
    next_b = (b + 1) & (p.own_cap - 1)
    while p.own_keys[next_b] != 0:
        home = own_bucket(p, p.own_keys[next_b] - 1)
        # move the member back if its home is not in the cyclic range (b, next_b]
        if ((next_b - home) & (p.own_cap - 1)) >= ((next_b - b) & (p.own_cap - 1)):
            p.own_keys[b] = p.own_keys[next_b]
            p.own_rows[b] = p.own_rows[next_b]
            b = next_b
        next_b = (next_b + 1) & (p.own_cap - 1)
    p.own_keys[b] = 0


cdef int own_reserve(State* st, Pool* p) noexcept nogil:
    """Keep the table at most half full (every entry may be indexed), rehashing when it grows."""
    cdef int64_t cap, old_cap = p.own_cap, i
    cdef int64_t* old_keys = p.own_keys
    cdef int64_t* old_rows = p.own_rows
    if 2 * (p.nentries + 1) <= p.own_cap:
        return 0
    cap = p.own_cap * 2 if p.own_cap else 32
    p.own_keys = <int64_t*> calloc(cap, sizeof(int64_t))
    p.own_rows = <int64_t*> malloc(cap * sizeof(int64_t))
    if p.own_keys == NULL or p.own_rows == NULL:
        fail(st, E_MEMORY, -1, 0, 0, 0)
        return -1
    p.own_cap = cap
    for i in range(old_cap):
        if old_keys[i] != 0:
            own_put(p, old_keys[i] - 1, old_rows[i])
    free(old_keys)
    free(old_rows)
    return 0


# ---- the lru heap: entry indices by (last, seq), smallest on top ----
cdef inline bint lru_pool(Pool* p) noexcept nogil:
    return p.evict_count == 0


cdef inline bint lru_before(Pool* p, int64_t a, int64_t b) noexcept nogil:
    return p.entries[a].last < p.entries[b].last or (
        p.entries[a].last == p.entries[b].last and p.entries[a].seq < p.entries[b].seq)


cdef inline void lru_place(Pool* p, int64_t i, int64_t e) noexcept nogil:
    p.lru[i] = e
    p.entries[e].at = i


cdef void lru_sift(Pool* p, int64_t i, int64_t n) noexcept nogil:
    """Restore the heap order around place i of a heap of n (the entry there moved either way)."""
    cdef int64_t e = p.lru[i], parent, child
    while i > 0:
        parent = (i - 1) >> 1
        if not lru_before(p, e, p.lru[parent]):
            break
        lru_place(p, i, p.lru[parent])
        i = parent
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and lru_before(p, p.lru[child + 1], p.lru[child]):
            child += 1
        if not lru_before(p, p.lru[child], e):
            break
        lru_place(p, i, p.lru[child])
        i = child
    lru_place(p, i, e)


cdef inline void lru_touched(Pool* p, int64_t e) noexcept nogil:
    """Entry e's (last, seq) changed."""
    if lru_pool(p):
        lru_sift(p, p.entries[e].at, p.nentries)


cdef inline void remove_entry(Pool* p, int64_t e) noexcept nogil:
    cdef int64_t last = p.nentries - 1, i
    if lru_pool(p):
        # the heap's last place fills e's place; then the array's last entry fills e's index
        i = p.entries[e].at
        if i != last:
            lru_place(p, i, p.lru[last])
            lru_sift(p, i, last)
    free(p.entries[e].snap)
    own_forget(p, p.entries[e].key)
    if e != last:
        p.entries[e] = p.entries[last]
        own_put(p, p.entries[e].key, e)
        if lru_pool(p):
            p.lru[p.entries[e].at] = e
    p.nentries -= 1


cdef double take_entry(Pool* p, int64_t serial) noexcept nogil:
    """The session's own cached prefix leaves the cache (consumed); its size."""
    cdef int64_t e = own_entry(p, serial)
    cdef double size
    if e < 0:
        return 0.0
    size = p.entries[e].size
    p.cached -= size
    remove_entry(p, e)
    return size


cdef double consume_entry(State* st, Pool* p, int32_t slot, bint bounded, double reuse) noexcept nogil:
    """Admission takes the session's own prefix; beyond `reuse` (when bounded), the excess stays
    as a dead entry."""
    cdef int64_t e = own_entry(p, st.sess.serial[slot])
    cdef double own = 0.0, r = round_down(p, reuse)
    cdef Entry kept
    if e >= 0:
        kept = p.entries[e]
        own = kept.size
        p.cached -= own
        touch_pool(st, p)
        remove_entry(p, e)
    if bounded:
        if own > r:
            # the excess keeps the original's age and order, and is nobody's
            if add_entry(st, p, DEAD_KEY + st.next_dead, own - r) < 0:
                return 0.0
            st.next_dead += 1
            p.entries[p.nentries - 1].last = kept.last
            p.entries[p.nentries - 1].seq = kept.seq
            lru_touched(p, p.nentries - 1)
            snapshot(st, &p.entries[p.nentries - 1], slot)
            st.next_entry_seq -= 1
            own = r
    return own


cdef void drop_entry(State* st, Pool* p, int64_t serial) noexcept nogil:
    touch_pool(st, p)
    take_entry(p, serial)   # `drop` is not an eviction


cdef int add_entry(State* st, Pool* p, int64_t key, double size) noexcept nogil:
    cdef int64_t cap
    cdef Entry* e
    if p.nentries == p.entries_cap:
        cap = p.entries_cap * 2 if p.entries_cap else 16
        if charge(st, (cap - p.entries_cap) * (sizeof(Entry) + 16 + 8 * st.n_attrs)) < 0:   # with snapshots
            return -1
        e = <Entry*> realloc(p.entries, cap * sizeof(Entry))
        if e == NULL:
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return -1
        p.entries = e
        p.entries_cap = cap
        if lru_pool(p) and not grow(<void**> &p.lru, cap * sizeof(int64_t)):
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return -1
    if own_reserve(st, p) < 0:
        return -1
    e = &p.entries[p.nentries]
    own_put(p, key, p.nentries)
    p.nentries += 1
    e.key = key
    e.slot = -1
    e.snap = NULL
    e.size = size
    e.last = st.now
    e.seq = st.next_entry_seq
    st.next_entry_seq += 1
    p.cached += size
    touch_pool(st, p)
    mark_row(st.pools_sampled, p - st.pools)
    if lru_pool(p):
        p.lru[p.nentries - 1] = p.nentries - 1
        lru_sift(p, p.nentries - 1, p.nentries)
    return 0


cdef void snapshot(State* st, Entry* e, int32_t slot) noexcept nogil:
    # the attributes `evict by` reads once the session has ended
    if st.pools_evict_by:
        e.snap = <double*> malloc(st.n_attrs * sizeof(double) + 8)
        if e.snap != NULL:
            memcpy(e.snap, &st.sess.attrs[<int64_t> slot * st.n_attrs], st.n_attrs * sizeof(double))


cdef int64_t evict_choice(State* st, Pool* p) noexcept nogil:
    """The entry with the smallest `evict by` key (keys, then seq), keys read per entry on the eviction stream."""
    cdef int64_t e, best = -1
    cdef int32_t i, n = p.evict_count, slot
    cdef double* keys = st.keys
    cdef Entry* en
    for e in range(p.nentries):
        en = &p.entries[e]
        slot = en.slot if (en.slot >= 0 and st.sess.alive[en.slot] and st.sess.serial[en.slot] == en.key) else -1
        st.ctxv[2] = en.size
        st.ctxv[3] = st.now - en.last
        st.ctxv[4] = en.last
        st.ctxv[5] = 1.0 if (slot >= 0 and st.sess.waiting[slot]) else 0.0
        st.attr_row = en.snap if slot < 0 else NULL
        for i in range(n):
            keys[n + 1 + i] = evaluate(st, st.pool_keys[p.evict_start + i], slot, &st.rng_eviction, NAN)
        st.attr_row = NULL
        if st.error.code:
            return -1
        keys[n + 1 + n] = <double> en.seq
        if best < 0 or keys_smaller(&keys[n + 1], keys, n + 1):
            best = e
            for i in range(n + 1):
                keys[i] = keys[n + 1 + i]
    return best


cdef void spill(State* st, Pool* p, Entry* e, double piece) noexcept nogil:
    """An evicted piece goes to the tier (as the same session's entry) if `when` holds, over a job on the link."""
    cdef int32_t slot = e.slot if (e.slot >= 0 and st.sess.alive[e.slot] and st.sess.serial[e.slot] == e.key) else -1
    cdef double when, work
    cdef Pool* tier = &st.pools[p.spill_to]
    cdef int64_t k
    st.ctxv[2] = piece
    st.ctxv[3] = st.now - e.last
    st.ctxv[4] = e.last
    st.ctxv[5] = 1.0 if (slot >= 0 and st.sess.waiting[slot]) else 0.0
    st.attr_row = e.snap if slot < 0 else NULL
    when = evaluate(st, p.spill_when, slot, &st.rng_eviction, NAN)
    if st.error.code or when == 0.0:
        st.attr_row = NULL
        return
    work = fmax(0.0, evaluate(st, p.spill_work, slot, &st.rng_eviction, NAN))
    st.attr_row = NULL
    if st.error.code:
        return
    st.spill_depth += 1
    if st.spill_depth > 64:
        # a spill chain that comes back to its own pools never makes room (0.1.2 hangs)
        fail(st, E_SPILL_CYCLE, -1, 0, 0, 0)
        st.spill_depth -= 1
        return
    make_room(st, tier, 0.0)              # a finite tier may end above its cap
    st.spill_depth -= 1
    if st.error.code:
        return
    k = own_entry(tier, e.key)
    if k >= 0:
        tier.entries[k].size += piece
        tier.entries[k].last = st.now
        tier.entries[k].seq = st.next_entry_seq
        st.next_entry_seq += 1
        lru_touched(tier, k)
        tier.cached += piece
        touch_pool(st, tier)
        mark_row(st.pools_sampled, tier - st.pools)
    else:
        if add_entry(st, tier, e.key, piece) < 0:
            return
        tier.entries[tier.nentries - 1].slot = e.slot
        if e.snap != NULL and st.pools_evict_by:
            tier.entries[tier.nentries - 1].snap = <double*> malloc(st.n_attrs * sizeof(double) + 8)
            if tier.entries[tier.nentries - 1].snap != NULL:
                memcpy(tier.entries[tier.nentries - 1].snap, e.snap, st.n_attrs * sizeof(double))
    p.spills += 1
    if work > 0:
        if st.stages[p.spill_via].kind == K_STEP:
            fail(st, E_SPILL_VIA_STEP, slot, work, p - st.pools, p.spill_via)
            return
        # a transfer with no owner (a flow when its link is shared)
        if st.stages[p.spill_via].share_cap > 0:
            st.flows.scratch[0] = p.spill_via
            start_flow(st, st.flows.scratch, 1, -1, work)
        else:
            start_job(st, p.spill_via, -1, work)


cdef inline bint whole(double x) noexcept nogil:
    """x is a whole number small enough that sums and differences of a few such are exact."""
    return -1e15 < x < 1e15 and x == <double> <int64_t> x


cdef bint pieces_at_once(Pool* p, double need, double cached, double evicted, double* size,
                         double* pieces) noexcept nogil:
    """evict_lru's pieces from its oldest entry (`size`), taken at once when every number is whole
    (then each piece's arithmetic is exact in any grouping, and `used + cached + need > cap + EPS`
    is `> cap`): as many blocks as bring the pool under its cap, or the whole entry, and the
    same sums and piece count as one piece at a time. False (nothing taken): not whole, or the
    piece count would run out on the way (the loop then finds where)."""
    cdef int64_t over, block, left, k, q, take, npieces
    if not (whole(p.block) and whole(p.used) and whole(cached) and whole(need) and whole(p.cap)
            and whole(evicted) and whole(size[0]) and size[0] > 0):
        return False
    block = <int64_t> p.block
    over = <int64_t> (p.used + cached + need - p.cap)       # > 0: the loop went on
    left = <int64_t> size[0]
    k = (over + block - 1) // block                         # blocks that bring it under the cap
    q = left // block                                       # the entry's whole blocks
    if k <= q:
        take, npieces = k * block, k
    else:
        take, npieces = left, q + (1 if left > q * block else 0)
    if pieces[0] - <double> npieces < 0:
        return False
    pieces[0] -= <double> npieces
    size[0] = <double> (left - take)
    p.entries[p.lru[0]].size = size[0]
    p.cached = cached - <double> take
    p.evicted_units = evicted + <double> take
    return True


cdef void evict_lru(State* st, Pool* p, double need, double pieces) noexcept nogil:
    """make_room's loop where no one else reads a piece (lru order, no spill, no eviction trace):
    the same pieces, sums and comparisons in the same order, the sums kept in locals while the
    oldest entry gives up block after block."""
    cdef int64_t best
    cdef double piece, size, cached = p.cached, evicted = p.evicted_units
    while p.used + cached + need > p.cap + EPS and p.nentries > 0:
        best = p.lru[0]
        size = p.entries[best].size
        if p.block > 0 and p.used + cached + need - p.cap > 2.0 * p.block \
                and pieces_at_once(p, need, cached, evicted, &size, &pieces):
            cached = p.cached
            evicted = p.evicted_units
            if size <= EPS:
                remove_entry(p, best)
                p.evicted_entries += 1
            continue
        while True:
            pieces -= 1.0
            if pieces < 0:
                p.entries[best].size = size
                p.cached = cached
                p.evicted_units = evicted
                fail(st, E_SPILL_CYCLE, -1, 0, 0, 0)
                return
            piece = min_of(p.block, size) if p.block > 0 else size
            size -= piece
            cached -= piece
            evicted += piece
            if size <= EPS or not p.used + cached + need > p.cap + EPS:
                break
        p.entries[best].size = size
        if size <= EPS:
            remove_entry(p, best)
            p.evicted_entries += 1
    p.cached = cached
    p.evicted_units = evicted


cdef inline void make_room(State* st, Pool* p, double need) noexcept nogil:
    """Evict cached prefixes (lru: smallest (last, seq)), a block at a time, until `need` fits.
    It fits, the common case: no call."""
    if must_evict(p, p.used, need):
        touch_pool(st, p)
        evict_until_fits(st, p, need)


cdef inline bint must_evict(Pool* p, double used, double need) noexcept nogil:
    """Whether make_room(p, need) evicts anything, p.used being `used`."""
    return used + p.cached + need > p.cap + EPS and p.nentries > 0


cdef inline bint plain_evictions(State* st, Pool* p) noexcept nogil:
    """Whether p's evictions change nothing but p's own cache (evict_lru): lru order (no `evict by`
    keys to evaluate), no spill into another pool, no eviction trace. (A grow's grant never
    depends on them: grow_now tests `used` alone and makes room only once it has granted.)"""
    return p.evict_count == 0 and p.spill_to < 0 and not st.traces.evicts


cdef void evict_until_fits(State* st, Pool* p, double need) noexcept nogil:
    """make_room's evictions, `need` not fitting and some entry cached."""
    cdef int64_t best
    cdef double piece, pieces
    cdef Entry gone                 # copied only for a spill
    cdef double* owned
    # more pieces than the cache held means spills keep refilling it (0.1.2 hangs there)
    pieces = (p.cached / p.block if p.block > 0 else <double> p.nentries) * 2.0 + 64.0
    if plain_evictions(st, p) and not st.error.code:
        evict_lru(st, p, need, pieces)
        return
    memset(&gone, 0, sizeof(Entry))         # (gcc can't see that only a spill reads it)
    while p.used + p.cached + need > p.cap + EPS and p.nentries > 0:
        pieces -= 1.0
        if pieces < 0:
            fail(st, E_SPILL_CYCLE, -1, 0, 0, 0)
            return
        best = 0
        if p.evict_count > 0:
            best = evict_choice(st, p)
            if best < 0:
                return
        else:
            best = p.lru[0]
        piece = min_of(p.block, p.entries[best].size) if p.block > 0 else p.entries[best].size
        if st.traces.evicts and (charge(st, EVICT_BYTES) < 0 or darr_push(&st.traces.ev_time, st.now) < 0 or larr_push(&st.traces.ev_key, p.entries[best].key) < 0
                                or darr_push(&st.traces.ev_units, piece) < 0):
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return
        if st.traces.evicts:
            trace_logged(st)
        p.entries[best].size -= piece
        p.cached -= piece
        p.evicted_units += piece
        if p.spill_to >= 0:
            gone = p.entries[best]          # the spill below reads it after the entry may be gone
        owned = NULL
        if p.entries[best].size <= EPS:
            owned = p.entries[best].snap    # kept for the spill below, freed after it
            p.entries[best].snap = NULL
            remove_entry(p, best)
            p.evicted_entries += 1
        if p.spill_to >= 0:
            spill(st, p, &gone, piece)
        if owned != NULL:
            free(owned)
        if st.error.code:
            return

# Step stages (spec 04 §4.5): residents, iteration planning, `admit via`, token bookkeeping.
# Included by sq/_engine.pyx; every function here runs without the GIL.


cdef double owner_units(State* st, int32_t slot, int32_t row) noexcept nogil:
    """Units the session holds in pool row over all its open holds (leases are not holds)."""
    cdef int32_t d, i, n
    cdef int64_t fi, j
    cdef double total = 0.0
    if row < 0:
        return 0.0
    for d in range(st.sess.depth[slot]):
        fi = frame_of(st, slot, d)
        n = st.holds[st.hold_offsets[st.sess.frame_hold[fi]] + H_NPOOLS]
        for i in range(n):
            j = fi * st.hold_pools_max + i
            if st.sess.frame_active[j] and st.sess.frame_member[j] == row:
                total += st.sess.frame_alloc[j]
    return total


cdef void resident_frames(State* st, int32_t j, int32_t memory) noexcept nogil:
    """A step job joins: the frame entries its iterations read (see Jobs.frame). A job growing
    the stage's memory (the common case) finds both in one walk of its owner's holds: the
    innermost entry on that pool is the first one in the deepest frame holding it."""
    cdef int32_t slot = st.jobs.rec[j].owner, d, i, n, deepest = -1
    cdef int64_t fi, e, found = -1, inner = -1
    cdef bint same = st.jobs.rec[j].growing == memory
    if not same:
        st.jobs.rec[j].frame = innermost(st, slot, st.jobs.rec[j].growing) if st.jobs.rec[j].growing >= 0 else -1
    if memory >= 0:
        for d in range(st.sess.depth[slot]):
            fi = frame_of(st, slot, d)
            n = st.holds[st.hold_offsets[st.sess.frame_hold[fi]] + H_NPOOLS]
            for i in range(n):
                e = fi * st.hold_pools_max + i
                if st.sess.frame_active[e] and st.sess.frame_member[e] == memory:
                    found = e if found == -1 else -2
                    if d > deepest:
                        deepest = d
                        inner = e
    if same:
        st.jobs.rec[j].frame = inner         # (memory -1: growing -1, and the frame -1)
    st.jobs.units_at[j] = found


cdef inline double job_units(State* st, int32_t j, int32_t memory) noexcept nogil:
    """owner_units(job's owner, memory), from the entry found when the job joined when there is one."""
    cdef int64_t e = st.jobs.units_at[j]
    if e >= 0:
        return 0.0 + st.sess.frame_alloc[e]      # owner_units' sum over that one entry
    if e == -1:
        return 0.0
    return owner_units(st, st.jobs.rec[j].owner, memory)


cdef bint constant_at(State* st, int32_t off, double* value) noexcept nogil:
    """Whether the expression at off is one constant (its shape: expr_shapes), then *value is it."""
    if off < 0 or st.shapes[off] != XS_NUM:
        return False
    value[0] = num_value(st, st.code + off)
    return True


cdef bint step_cost_leaves(State* st, Stage* s) noexcept nogil:
    """Where each leaf of a shaped cost (CostShape) is read, when each is one fixed place
    (Stage.cost_leaf, decided at set-up; evaluate_cost reads them); and whether each leaf is a
    constant or one of the totals an iteration's Cost moment sets (Stage.cost_repeats)."""
    cdef const int32_t* c = st.code + s.cost_e
    cdef int32_t at[6]
    cdef int i, n = 3 if s.cost_shape == COST_LINEAR else 6
    at[0], at[1], at[2], at[3], at[4], at[5] = 0, CS_L1, CS_L2, CS_L3, CS_L4, CS_L5    # (CL_L1, CL_L2 are CS_L1, CS_L2)
    s.cost_repeats = True
    for i in range(n):
        s.cost_leaf[i] = leaf_address(st, c + at[i])
        if s.cost_leaf[i] == NULL:
            s.cost_repeats = False
            return False
        if c[at[i]] == X_CTX and not (CTX_NTOK <= c[at[i] + XONE_ARG] <= CTX_ATTN or c[at[i] + XONE_ARG] == CTX_KVM):
            s.cost_repeats = False      # `now`, or a context another moment sets
    return True


cdef inline double step_budget(State* st, Stage* s) noexcept nogil:
    """The stage's budget: a constant as set up (what evaluate would read), else evaluated."""
    if s.budget_fixed:
        return s.budget_k
    return evaluate(st, s.budget_e, -1, &st.rng_session, NAN)


cdef inline double step_chunk(State* st, Stage* s) noexcept nogil:
    if s.chunk_fixed:
        return s.chunk_k
    return evaluate(st, s.chunk_e, -1, &st.rng_session, NAN)


cdef void set_totals(State* st, Stage* s) noexcept nogil:
    """The Budget moment's context, from the residents as they stand."""
    cdef int64_t r
    cdef int32_t j
    cdef double dec = 0.0, kvb = 0.0, kvp = 0.0, units
    if not st.budget_totals:
        return          # only costs read them, and an iteration sets its own before its cost
    for r in range(s.nres):
        j = s.res[r]
        if st.jobs.rec[j].mode == M_DECODE:
            dec += 1.0
            if st.kv_budget:            # no expression reads the sums: they are not made
                kvb += job_units(st, j, s.memory)
        elif st.kv_budget:
            kvp += job_units(st, j, s.memory)
    st.ctxv[CTX_NRES] = <double> s.nres
    st.ctxv[CTX_NDEC] = dec
    st.ctxv[CTX_KVB] = kvb
    st.ctxv[CTX_KVP] = kvp


cdef inline double want_of(int32_t mode, double work, double chunk) noexcept nogil:
    """The tokens a job of this mode with this work left asks of one iteration."""
    if mode == M_DECODE:
        return min_of(1.0, work)
    if chunk > 0:
        return min_of(work, chunk)
    return work


cdef inline double want(State* st, int32_t j, double chunk) noexcept nogil:
    return want_of(st.jobs.rec[j].mode, st.jobs.rec[j].work, chunk)


cdef int64_t resident_bound(State* st, Stage* s, double adm) noexcept nogil:
    """The first resident whose owner was admitted strictly later than `adm` (residents are
    kept in admission order, so a binary search finds it)."""
    cdef int64_t lo = 0, hi = s.nres, mid
    if hi == 0 or st.sess.adm[st.jobs.rec[s.res[hi - 1]].owner] <= adm:
        return hi                      # the common case: the newest admission goes last
    while lo < hi:
        mid = (lo + hi) >> 1
        if st.sess.adm[st.jobs.rec[s.res[mid]].owner] > adm:
            hi = mid
        else:
            lo = mid + 1
    return lo


cdef int join_residents(State* st, Stage* s, int32_t j) noexcept nogil:
    """Insert before the first resident whose owner was admitted strictly later; else at the end."""
    cdef int64_t at
    if s.nres == s.res_cap:
        if not grow(<void**> &s.res, (s.res_cap * 2 + 16) * sizeof(int32_t)):
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return -1
        s.res_cap = s.res_cap * 2 + 16
    st.jobs.rec[j].decoding = 0
    s.plan_kept = False
    if st.steps_only:
        mark_row(st.steps_ready, s - st.stages)
    touch_step(st, s - st.stages)       # (its number moved: new_job)
    at = resident_bound(st, s, st.sess.adm[st.jobs.rec[j].owner])
    memmove(&s.res[at + 1], &s.res[at], (s.nres - at) * sizeof(int32_t))
    s.res[at] = j
    s.nres += 1
    if at < s.cursor:
        if s.pass_open and not s.stamped:
            stamp_served(st, s, at)
        s.cursor = at               # everything before it is still served; it is not
    return 0


cdef void stamp_served(State* st, Stage* s, int64_t at) noexcept nogil:
    """A resident joined at `at`, before the open pass's cursor: the residents the pass has served
    (those before the cursor, now with the newcomer among them) are stamped, and the rest of the
    pass tells the served by their stamps."""
    cdef int64_t r
    for r in range(s.cursor + 1):
        if r != at:
            st.jobs.served[s.res[r]] = st.serve_stamp
    s.stamped = True


cdef void leave_residents(State* st, Stage* s, int32_t j) noexcept nogil:
    # owners admitted at the same number (+inf: never admitted) sit together before the bound
    cdef int64_t r = resident_bound(st, s, st.sess.adm[st.jobs.rec[j].owner])
    while r > 0:
        r -= 1
        if s.res[r] == j:
            memmove(&s.res[r], &s.res[r + 1], (s.nres - r - 1) * sizeof(int32_t))
            s.nres -= 1
            s.plan_kept = False
            touch_step(st, s - st.stages)       # (its number moved: remove_job)
            s.iter_left = True
            if r < s.cursor:
                s.cursor -= 1
            break


cdef inline int32_t next_in_order(State* st, Stage* s) noexcept nogil:
    """The next resident in admission order not yet served in this pass (-1: none), read afresh
    at each call (admissions join residents meanwhile; the cursor is kept as they join and leave),
    and marked served: the cursor passes it (and, in a stamped pass, its stamp is set)."""
    cdef int64_t r
    cdef int32_t j
    if not s.stamped:               # the served are those before the cursor
        r = s.cursor
        if r < s.nres:
            s.cursor = r + 1
            return s.res[r]
        return -1
    for r in range(s.cursor, s.nres):
        j = s.res[r]
        if st.jobs.served[j] != st.serve_stamp:
            st.jobs.served[j] = st.serve_stamp
            s.cursor = r + 1
            return j
    s.cursor = s.nres
    return -1


cdef int32_t next_by_keys(State* st, Stage* s) noexcept nogil:
    """`serve by` keys: the unserved resident with the smallest keys, read on each resident afresh."""
    cdef int64_t r
    cdef int32_t j, best = -1, i, n = s.serve_count, owner
    cdef double* keys = st.keys
    set_totals(st, s)
    for r in range(s.nres):
        j = s.res[r]
        if st.jobs.served[j] == st.serve_stamp:
            continue
        owner = st.jobs.rec[j].owner
        st.ctxv[CTX_DECODING] = 1.0 if st.jobs.rec[j].mode == M_DECODE else 0.0
        st.ctxv[CTX_ADMISSION] = st.sess.adm[owner]
        st.ctxv[CTX_REMAINING] = st.jobs.rec[j].work
        for i in range(n):
            keys[n + i] = evaluate(st, st.serve_keys[s.serve_start + i], owner, &st.rng_session, NAN)
            if st.error.code:
                return -1
        if best < 0 or keys_smaller(&keys[n], keys, n):
            best = j
            for i in range(n):
                keys[i] = keys[n + i]
    return best


cdef inline int32_t admitting_pool(State* st, int32_t k) noexcept nogil:
    """The first pool (declaration order) that admits via stage k and has holds waiting (-1:
    none). Only the pools waiting can (a queue marks its pool waiting; only try_every_pool
    unmarks one, once it has no holds or growers waiting), and most often there are none."""
    cdef int32_t pk
    if not rows_any(st.pools_waiting):
        return -1
    pk = <int32_t> next_row(st.pools_waiting, 0, st.n_pools)
    while pk < st.n_pools:
        if st.admit_via[pk] == k and st.pools[pk].qlen > 0:
            return pk
        pk = <int32_t> next_row(st.pools_waiting, pk + 1, st.n_pools)
    return -1


cdef bint admit_one(State* st, int32_t k, double left) noexcept nogil:
    """One admission from the pools this stage admits (declaration order); the first head that does not fit stops them all."""
    cdef int32_t pk = admitting_pool(st, k), slot, h, off, n, i, e
    cdef int64_t q, fi
    cdef double u, need
    cdef Pool* p
    if pk < 0:
        return False
    p = &st.pools[pk]
    st.bl_stage = k
    st.bl_value = left
    q = next_waiting(st, p)
    if q < 0:
        st.bl_stage = -1
        return False
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
        st.scratch[2 * i] = u
        st.scratch[2 * i + 1] = need
    st.bl_stage = -1
    if st.error.code:
        return False
    for i in range(n):
        if not fits(&st.pools[st.sess.frame_member[fi * st.hold_pools_max + i]], st.scratch[2 * i + 1]):
            return False
    queue_take(st, p, q)
    admit(st, slot, fi, off, n)
    # the admitted session (and whatever it readies) runs until it blocks, ends or joins a stage
    slot = ready_next(st) if not st.error.code else -1
    while slot >= 0:
        if st.sess.alive[slot]:
            exec_session(st, slot)
            if st.error.code:
                return True
        slot = ready_next(st)
    return True


cdef inline int assign_push(State* st, Stage* s, int32_t j, double tokens) noexcept nogil:
    cdef Assigned* a
    if s.na == s.a_cap and assign_grow(st, s) < 0:
        return -1
    a = &s.assigned[s.na]
    a.job = j
    a.id = st.jobs.rec[j].id
    a.tok = tokens
    s.na += 1
    return 0


cdef int assign_grow(State* st, Stage* s) noexcept nogil:
    if not grow(<void**> &s.assigned, (s.a_cap * 2 + 16) * sizeof(Assigned)):
        fail(st, E_MEMORY, -1, 0, 0, 0)
        return -1
    s.a_cap = s.a_cap * 2 + 16
    return 0


cdef struct IterTotals:
    # an iteration's moment (ntok, npre, ndec, kv_decode, kv_prefill), summed over its assignments,
    # and kv_decode_max, the largest of its decodes' KV
    double ntok, npre, ndec, kvb, kvp, kvm


cdef inline void count_assigned(State* st, Stage* s, int32_t j, int32_t mode, double tokens,
                                IterTotals* n, bint kv) noexcept nogil:
    """Add job j's assignment of `tokens` (its mode given) to the iteration's totals (`kv`:
    st.kv_iteration, read once by the caller: the stores around a call may alias it). The one
    definition of an entry's share of the totals: every plan's sums (start_iteration's,
    repeat_totals', decode_totals', replica_begin's) are these additions over the assignment, in its
    order, each sum from 0.0 (0.1.2's sums are order-sensitive)."""
    cdef double units
    n.ntok += tokens
    if mode == M_DECODE:
        n.ndec += 1.0
        if kv:
            units = job_units(st, j, s.memory)
            n.kvb += units
            if units > n.kvm:
                n.kvm = units
    else:
        n.npre += tokens
        if kv:
            n.kvp += job_units(st, j, s.memory)


cdef inline bint plan_decodes(State* st, Stage* s, double* left_out, IterTotals* n) noexcept nogil:
    """plan_pass's visits of the residents from the cursor on, as next_in_order gives them (in
    order, not exclusive, no stamps), while each is a decode whose visit calls nothing: its tokens
    > 0, its owner not stalled, no grow due and its frame marked grown already (mark_grown would
    return at once), room in the assignment. Each such visit makes plan_pass's writes, in its
    order (the position, the entry, what is left), with the tables' pointers in locals: nothing
    here is a call or a store that may move them. The first other resident is left to plan_pass's
    own visit (the cursor before it). Each entry's tokens and decode are added to n's token
    totals, as plan_pass adds them. True: the budget is spent (plan_pass's pass ends)."""
    cdef int64_t r = s.cursor, nres = s.nres, na = s.na, cap = s.a_cap, fj
    cdef int32_t j
    cdef double left = left_out[0], tokens, pos, ntok = n.ntok, ndec = n.ndec
    cdef bint spent = False
    cdef int32_t* res = s.res
    cdef JobRec* jobs = st.jobs.rec
    cdef JobRec* jr
    cdef int64_t* grow_at = st.sess.grow_at
    cdef double* frame_pos = st.sess.frame_pos
    cdef double* frame_alloc = st.sess.frame_alloc
    cdef char* grown = st.sess.frame_grown
    cdef Assigned* a = s.assigned
    while r < nres and na < cap:
        j = res[r]
        jr = &jobs[j]
        if jr.mode != M_DECODE:
            break
        tokens = min_of(min_of(1.0, jr.work), left)     # min_of(want_of(M_DECODE, ...), left)
        if not (tokens > 0):
            break
        if jr.growing >= 0:
            fj = jr.frame
            if grow_at[jr.owner] >= 0 or fj < 0 or not grown[fj]:
                break
            pos = frame_pos[fj] + tokens
            if pos - frame_alloc[fj] > EPS:
                break                   # a grow is due
            frame_pos[fj] = pos
        a[na].job = j
        a[na].id = jr.id
        a[na].tok = tokens
        na += 1
        r += 1
        ntok += tokens
        ndec += 1.0
        left -= tokens
        if left <= 0:
            spent = True
            break
    s.cursor = r
    s.na = na
    left_out[0] = left
    n.ntok = ntok
    n.ndec = ndec
    return spent


cdef inline int plan_pass(State* st, Stage* s, int32_t k, double budget, double chunk,
                          double* attention, bint excl, bint in_order, IterTotals* n) noexcept nogil:
    """start_iteration's pass over the residents (and the admissions when none is left): the
    assignment in s.assigned (0, or -1 on an error), and n's token totals (ntok, npre, ndec)
    summed over its entries as they are pushed (count_assigned's sums without the KV ones; an
    exclusive pass's are not its final assignment's)."""
    cdef double left = budget, tokens, need
    cdef bint resident_prefill = False, is_prefill
    cdef int32_t mode, j, owner, row
    cdef int64_t r, fj
    if excl:                            # (only an exclusive stage stalls decodes for a prefill)
        for r in range(s.nres):
            if st.jobs.rec[s.res[r]].mode == M_PREFILL:
                resident_prefill = True
    if in_order:
        s.cursor = 0                    # a new pass: no one is served yet
        s.pass_open = True              # (start_iteration closes it)
    while True:
        if in_order and not excl and not s.stamped and plan_decodes(st, s, &left, n):
            break                       # the budget is spent
        if in_order:
            j = next_in_order(st, s)
        else:
            j = next_by_keys(st, s)
            if st.error.code:
                return -1
            if j >= 0:
                st.jobs.served[j] = st.serve_stamp
        if j < 0:
            if left > 0 and not st.iter_preempted and admit_one(st, k, budget if excl else left):
                if st.error.code:
                    return -1
                continue
            break
        mode = st.jobs.rec[j].mode          # (read once: the calls below make the compiler read again)
        is_prefill = mode == M_PREFILL
        if excl and resident_prefill and not is_prefill:
            continue                    # decodes stall while a prefill is resident
        tokens = min_of(want_of(mode, st.jobs.rec[j].work, chunk), budget if (excl and is_prefill) else left)
        if not (tokens > 0):
            continue
        row = st.jobs.rec[j].growing
        if row >= 0:
            owner = st.jobs.rec[j].owner
            if st.sess.grow_at[owner] >= 0:
                continue                # stalled earlier, waiting to grow
            fj = st.jobs.rec[j].frame
            if fj < 0:
                continue
            need = st.sess.frame_pos[fj] + tokens - st.sess.frame_alloc[fj]
            # (granted at once, the common case, without grow_or_wait's calls: a refused
            # grow_now changes nothing, and grow_or_wait tries it again first)
            if need > EPS and not grow_now(st, &st.pools[row], fj, need) \
                    and not grow_or_wait(st, owner, row, fj, need, j):
                if st.error.code:
                    return -1
                continue
            if is_prefill:
                attention[0] += tokens * (st.sess.frame_pos[fj] + tokens / 2.0)
            if not excl:
                st.sess.frame_pos[fj] += tokens    # the computed position moves when planned
                mark_grown(st, fj)
        elif is_prefill:
            attention[0] += tokens * tokens / 2.0
        if excl and is_prefill:
            s.na = 0                    # a lone prefill replaces the tentative decodes
            left = budget
        if assign_push(st, s, j, tokens) < 0:
            return -1
        n.ntok += tokens
        if mode == M_DECODE:
            n.ndec += 1.0
        else:
            n.npre += tokens
        left -= tokens
        if left <= 0 or (excl and is_prefill):
            break
    return 0


cdef void start_iteration(State* st, int32_t k) noexcept nogil:
    """Plan one iteration (§4.5.3): serve residents in order within the budget, then admit."""
    cdef Stage* s = &st.stages[k]
    cdef double budget, chunk, attention = 0.0, duration
    cdef IterTotals n
    cdef int planned
    cdef int64_t r, fj
    cdef int32_t j
    cdef bint kv = st.kv_iteration
    set_totals(st, s)
    budget = step_budget(st, s)
    if st.error.code:
        return
    chunk = step_chunk(st, s)
    if st.error.code:
        return
    s.na = 0
    s.iter_left = False
    s.plan_kept = False
    st.serve_stamp += 1
    st.iter_preempted = 0
    memset(&n, 0, sizeof(n))
    # (the common stage, in order and not exclusive, gets plan_pass with those tests compiled out)
    if not s.excl and s.serve_count == 0:
        planned = plan_pass(st, s, k, budget, chunk, &attention, False, True, &n)
    else:
        planned = plan_pass(st, s, k, budget, chunk, &attention, s.excl, s.excl or s.serve_count == 0, &n)
    s.pass_open = False
    s.stamped = False
    if planned < 0:
        return
    # jobs preempted meanwhile leave the selection (their tokens are not applied); only a
    # preemption removes a resident's job while its stage plans
    if st.iter_preempted:
        fj = 0
        for r in range(s.na):
            if st.jobs.rec[s.assigned[r].job].id == s.assigned[r].id:
                s.assigned[fj] = s.assigned[r]
                fj += 1
        s.na = fj
    if s.excl:
        for r in range(s.na):
            j = s.assigned[r].job
            if st.jobs.rec[j].growing >= 0:
                fj = st.jobs.rec[j].frame
                if fj >= 0:
                    st.sess.frame_pos[fj] += s.assigned[r].tok
                    mark_grown(st, fj)
    if s.na == 0 and not st.iter_preempted:
        return                          # no iteration
    # the totals over the final assignment, in its order: plan_pass's token sums are those
    # where every entry it pushed is in it (no preemption removed one, no exclusive prefill
    # replaced the decodes) and no KV sums are made; else a loop without calls but job_units'
    # rare one (its sums stay in registers, which the planning loop's calls would not let them)
    if kv or st.iter_preempted or s.excl:
        memset(&n, 0, sizeof(n))
        for r in range(s.na):
            j = s.assigned[r].job
            count_assigned(st, s, j, st.jobs.rec[j].mode, s.assigned[r].tok, &n, kv)
    duration = begin_iteration(st, s, k, &n, attention, budget)
    if duration < 0:
        return                          # the cost failed
    schedule(st, st.now + duration, EV_ITER_END, k, 0, s.iter_epoch)


cdef inline double begin_iteration(State* st, Stage* s, int32_t k, IterTotals* n, double attention,
                                   double budget) noexcept nogil:
    """The planned iteration (its assignment in s.assigned, its totals in n) begins: its context
    and cost, its counts, running means and areas. Its duration; the caller schedules its end
    (start_iteration; steady_run keeps it off the event list). -1: the cost failed."""
    cdef double duration = iteration_cost(st, s, n, attention)
    if duration < 0:
        return -1.0
    return iteration_begins(st, s, k, n, duration, budget, False)


cdef inline double iteration_cost(State* st, Stage* s, IterTotals* n, double attention) noexcept nogil:
    """The iteration's context (its Cost moment) and its duration (-1: the cost failed)."""
    cdef double duration
    st.ctxv[CTX_NTOK] = n.ntok
    st.ctxv[CTX_NDEC] = n.ndec
    st.ctxv[CTX_NPRE] = n.npre
    st.ctxv[CTX_NRES] = <double> s.nres
    st.ctxv[CTX_KVB] = n.kvb
    st.ctxv[CTX_KVP] = n.kvp
    st.ctxv[CTX_KVM] = n.kvm
    st.ctxv[CTX_ATTN] = attention
    duration = evaluate_cost(st, s)
    if not duration > 0.0:              # fmax(0.0, cost) without the call: -0.0 stays -0.0, NaN gives 0.0
        duration = -0.0 if duration == 0.0 and signbit(duration) else 0.0
    if st.error.code:
        return -1.0
    return duration


# (always inlined: gcc inlines it in each of its callers only while they are few, and kept one
# copy out of line once step_again called it beside its cost rather than through begin_iteration)
cdef extern from *:
    """
    struct __pyx_t_2sq_6engine_6_state_State;
    struct __pyx_t_2sq_6engine_6_state_Stage;
    struct __pyx_t_2sq_7_engine_IterTotals;
    static inline __attribute__((always_inline)) double __pyx_f_2sq_7_engine_iteration_begins(
        struct __pyx_t_2sq_6engine_6_state_State *, struct __pyx_t_2sq_6engine_6_state_Stage *,
        int32_t, struct __pyx_t_2sq_7_engine_IterTotals *, double, double, int);
    """


cdef inline double iteration_begins(State* st, Stage* s, int32_t k, IterTotals* n, double duration,
                                    double budget, bint repeat) noexcept nogil:
    """The iteration of this duration begins: its counts, running means and areas (returns duration).
    `repeat`: a quiet repeat of step_again's (replica_quiet), whose kind, decodes and time shares
    hold their values already: the iteration ending was decode-only with as many decodes (n.ndec
    is na in both, n.npre 0: its plan's, replica_begin's, or a repeat's), and replica_quiet
    integrated its two time shares to now without ending them (area_again: `last` is now, the
    value kept), so the kind, the decodes and the areas this would write are the ones there."""
    s.iterations += 1
    if st.traces.iters:
        log_iteration(st, s)
    if st.tl != NULL:
        tl_iteration(st, k, duration, n.npre, n.ntok - n.npre, s.na, n.ndec)
    if not repeat:
        s.iter_decodes = <int64_t> n.ndec
        if s.na == 0:
            s.iter_kind = 0                 # an iteration that only preempted
        else:
            s.iter_kind = 3 if (n.ndec > 0 and n.npre > 0) else (2 if n.ndec > 0 else 1)
    iteration_means(st, s, n, duration, budget)
    s.inflight = 1
    if not repeat:
        iteration_areas_start(st, s)
    s.iter_epoch += 1
    return duration


cdef inline void iteration_means(State* st, Stage* s, IterTotals* n, double duration, double budget) noexcept nogil:
    """The running means an iteration beginning adds to (its totals n, its duration)."""
    if st.warm and n.ndec > 0:
        running_add(&s.decode_batch, n.ndec)
        running_add(&s.decode_step, duration)
    if st.warm:
        # headroom where `util` shows none: how full the iterations run
        if budget > 0 and budget < INFINITY:     # (positive and finite)
            running_add(&s.budget_use, n.ntok / budget)
        running_add(&s.batch, <double> s.na)



# ---- a steady decode run: the plan that repeats ------------------------------------------------
# steady_run (_loop.pxi) repeats the lone step stage's iterations without the event list while
# the plan that settle would make after an iteration's end is provably the one just ended's, each
# resident's tokens read afresh. When plan_unchanged holds, start_iteration's plan_pass (in order,
# not exclusive) would visit the residents res[0 .. nres) in order and, for each, take exactly the
# branch that assigns it its tokens: a decode (no attention, no chunk), its want min(1, work) cut
# only by what is left of the constant budget and still > 0 (a decode's last token is most often a
# fraction: the one iteration a run's tokens change), nothing stalled (no owner waiting to grow,
# its frame found), and the budget not spent before the last resident (plan_pass would stop
# there). A grow is due where the position plus the tokens passes the allocation; each due grow
# must be granted by grow_now (grow_need <= 0, or grow_fits), read with the pool's `used` as the
# grows before it in the plan leave it (all on one pool: a refusal would preempt or stall), and
# evict nothing unless the pool's evictions are plain (an eviction may otherwise spill, be traced
# or read keys: not must_evict, or plain_evictions; the grant never depends on them). Each
# resident is another session's job (a session has one job at a time), so one resident's position
# moves no other's. After the last resident an admission is tried only while some pool waits, and
# steady_run lets a pool wait only where that admission is refused (admission_refused,
# _pools.pxi: nothing it evaluates draws or writes); the budget and chunk are constants, so
# nothing is evaluated or drawn before the cost (the Budget moment's context, set_totals, is read
# by nothing then: the cost's context overwrites it). plan_unchanged writes a resident's new
# tokens into its entry; plan_again then redoes what that plan writes, in its order: per resident
# the grow (grow_now itself), the position and its `grown` mark, the entry's id (the job's) and
# the totals; iter_left and iter_preempted cleared, the cursor past the residents; the served
# stamps are skipped (only a plan reads them, after taking a new stamp); the rest is
# begin_iteration's.
#
# An iteration that repeats the previous one of the same run (the same residents, not one
# finished, each given the same tokens: PLAN_SAME) has that one's token counts; its KV sums
# (st.kv_iteration) are each resident's allocation, which only a grow moves (no session runs in
# between), so where no grow is due in its plan it has that one's totals too, so the same
# context (plan_again makes the totals afresh where one is). When its
# cost reads nothing else (Stage.cost_repeats) it has the same duration too, and plan_again
# redoes only the positions and grows and begins it with those (iteration_begins).
cdef enum:
    PLAN_CHANGED = 0    # plan_unchanged: the plan is another; settle makes it
    PLAN_SAME = 1       # every resident given the tokens its entry holds
    PLAN_TOKENS = 2     # the same residents and branches, some resident's tokens new


# Quiet repeats. Where every resident of a PLAN_SAME plan is given 1 token, the t-th iteration
# repeating it (t >= 1; nothing but their ends between, each taking 1 from the work and adding 1
# to the position) is planned the same with no grow due while for every resident work - t >= 1
# (its tokens stay min(1, work - t, left) = 1: the same budget left before it; and it does not
# finish) and, growing, position + t + 1 <= allocation (need = position + tokens - allocation
# stays <= EPS; the allocation as this plan's grow leaves it, alloc + need as grow_now adds it:
# the grow just granted opens the next quiet stretch). Subtracting 1 from a work >= 1 is exact;
# the positions' additions may round, by at most half an ulp each: plan_unchanged counts t <= min(work - 1, allocation - position - 2),
# the 1 of margin holding for QUIET_MAX additions below QUIET_POSITIONS (each ulp <= 2^-20).
# No addition rounds where the position and the allocation are in one binade (position_margin):
# there the count is t <= allocation - position - 1, one more (a checked plan less a block).
# So steady_run plans those iterations without plan_unchanged, and plan_again without the grow
# test (none is due) and without marking the frames grown (the plan before them did).
#
# Quiet repeats with grows (*grants). Past a block boundary the plan is still the same if each
# grow due is granted (grow_now: `used` plus its need within the cap) and its evictions are
# plain (plain_evictions): then plan_pass takes grow_now's grant as plan_again does. All growing
# residents on one pool p: after the t-th repeat a resident's allocation is at most
# round_up(position + t + 1) <= position + t + 1 + block (position and allocation as this plan
# reads them, before it; its grows and the rounding within the 1 of margin below), and `used`
# only grows by grows, so through t <= q repeats every grow fits while
# used' + sum(position - allocation + 2 + block) + q * growing <= cap, used' being `used` after
# this plan's grows (which the sum counts again: a margin). plan_unchanged counts the larger of
# the two counts (the work's bound above holds for both): its callers' quiet repeats grow where
# due (steady_run's; step_again's only while no other stage took the room: kept_room, _loop.pxi),
# or read the plan afresh; after a count
# with grants plan_again (or quiet_repeat) tests each resident's grow, and makes the totals afresh
# after one (its KV sums moved).
cdef extern from *:
    """
    #define SQ_QUIET_MAX 1024.0
    #define SQ_QUIET_POSITIONS 4294967296.0
    """
    const double QUIET_MAX "SQ_QUIET_MAX"
    const double QUIET_POSITIONS "SQ_QUIET_POSITIONS"     # 2^32


# A position's margin in the quiet count. With 1 <= position < 2^(e+1) <= 2^32 (2^e <= position)
# and allocation <= 2^(e+1), position, 1 and every integer are multiples of u = 2^(e-52), so each
# position + t + 1 <= allocation is a multiple of u in [2^e, 2^(e+1)]: a double, every repeat's
# addition exact; allocation - position is exact too (Sterbenz: position <= allocation <= 2
# position; below position the count is negative either way), and so is the 1 taken from it.
# The count t <= allocation - position - 1 then leaves need = position + t + 1 - allocation <= 0
# at every repeat, exactly. Else (a binade crossed, or a position below 1) the 1 of margin above.
cdef extern from *:
    """
    static inline double sq_position_margin(double pos, double alloc) {
        uint64_t b;
        double top;
        memcpy(&b, &pos, sizeof b);
        b = ((b >> 52) + 1) << 52;      /* 2^(e+1) for a positive normal pos in [2^e, 2^(e+1)) */
        memcpy(&top, &b, sizeof top);
        return (pos >= 1.0 && alloc <= top) ? 1.0 : 2.0;
    }
    """
    double position_margin "sq_position_margin"(double pos, double alloc) nogil


cdef enum:
    # quiet repeats are counted for this many residents at most: with more, a block boundary of
    # one or another is most often within two tokens (a count of 0), and counting costs each plan
    QUIET_RESIDENTS = 6


# Placing. In a steady run's repeat (steady_run) the check and plan_again's positions visit each
# resident in turn: plan_unchanged moves the position itself where plan_again would do nothing
# else (no grow due, the frame marked grown), so plan_again visits only the others. Each
# resident is another session's job, and a grow (grow_now: its own frame's allocation, the pool,
# its plain evictions of the cache) reads no other frame's position, so a position moved before
# an earlier resident's grow is the value plan_again moves it to after; the grows stay in the
# assignment's order. Each placed position's old value is kept, so where the plan changes after
# all (a grow refused, the budget spent) each is put back.
cdef enum:
    PLACED_MAX = 64     # placing is for this many residents at most (their old positions kept)

cdef struct Placed:
    # where the plan holds, every entry is placed but those listed in `left`, and with `ids` its id
    # written (plan_again's write) too
    bint ids
    int64_t n                   # how many are listed, in order
    int64_t left[PLACED_MAX]    # entries left to plan_again's visit (a grow due, a frame to mark)
    double old[PLACED_MAX]      # the placed entries' positions before


cdef inline int plan_unchanged(State* st, Stage* s, int64_t na, bint again, int64_t* quiet,
                               bint* grants, int64_t most, Placed* placed) noexcept nogil:
    """Whether start_iteration's plan now would assign the assignment's first na entries' jobs
    (what the iteration just ended ran) again, every resident a decode, each entry's tokens or
    new ones, written into the entries (PLAN_SAME, PLAN_TOKENS; PLAN_CHANGED: not so). `again`:
    this held at the previous iteration of the same steady run, and nothing but that iteration's
    end (no finish) has run since: the stage's settings, the residents, their jobs' modes, rows
    and frames and their owners' stalls are as they were, so only what an iteration moves (work,
    positions, allocations) is read. *quiet: how many iterations after this one, each repeating it, are
    known to plan the same (see QUIET_MAX; counted for `most` residents at most: steady_run's
    QUIET_RESIDENTS), 0 unless PLAN_SAME; *grants: in those, grows may be due, each granted (else
    none is due). *placed (NULL: none placed): the entries whose positions were moved here as
    plan_again would move them, where the plan holds (Placed)."""
    cdef double left = s.budget_k, tokens, need, used = 0.0, q = QUIET_MAX, x, pos, alloc
    cdef double qn = QUIET_MAX      # the quiet count with no grow due
    cdef double spare = 0.0         # the grants' margin: the sum of (allocation - position - 2 - block)
    cdef int64_t r, fj, ngrow = 0
    cdef int64_t nleft = 0              # placing: the entries listed unplaced so far
    cdef bint placing = placed != NULL  # (the caller's: na <= PLACED_MAX)
    cdef int32_t j, row, grown = -1     # the pool the plan's grows take from (-1: none yet)
    cdef int32_t gpool = -1             # the pool every growing resident grows on (-2: several)
    cdef int plan = PLAN_SAME
    cdef bint counting = na <= most
    cdef Pool* p
    quiet[0] = 0
    grants[0] = False
    if na != s.nres or (not again and (na == 0 or s.excl or s.serve_count != 0 or not s.budget_fixed
                                       or not s.chunk_fixed)):
        return PLAN_CHANGED
    for r in range(na):
        j = s.assigned[r].job
        if not again and (s.res[r] != j or st.jobs.rec[j].mode != M_DECODE):
            return unplaced(st, s, r, placed, nleft)
        if not again and placed != NULL:
            s.assigned[r].id = st.jobs.rec[j].id    # (plan_again's write; should the plan change, start_iteration writes the entries afresh)
        tokens = min_of(want_of(M_DECODE, st.jobs.rec[j].work, s.chunk_k), left)
        if not (tokens > 0):
            return unplaced(st, s, r, placed, nleft)
        if tokens != s.assigned[r].tok:
            plan = PLAN_TOKENS
            s.assigned[r].tok = tokens      # (should the plan change, start_iteration writes the entries afresh)
        if counting:
            # (the smallest count over the residents; a NaN count gives none; a resident whose
            # tokens are not yet a decode's, a turn of NaN, none either: see quiet_repeat)
            if tokens != 1.0 or not st.jobs.rec[j].decoding:
                q = 0.0
            x = st.jobs.rec[j].work - 1.0
            if not (x >= q):
                q = x
        row = st.jobs.rec[j].growing
        if row >= 0:
            fj = st.jobs.rec[j].frame
            if not again and (st.sess.grow_at[st.jobs.rec[j].owner] >= 0 or fj < 0):
                return unplaced(st, s, r, placed, nleft)
            pos = st.sess.frame_pos[fj]
            alloc = st.sess.frame_alloc[fj]
            if counting:
                # the grants' margin, from the allocation this plan reads (before its grow)
                spare += alloc - pos - 2.0 - st.pools[row].block
                ngrow += 1
                gpool = row if gpool == -1 or gpool == row else -2
            need = pos + tokens - alloc
            if need > EPS:
                if placing:             # (a grow due: left to plan_again's visit)
                    placed.left[nleft] = r
                    nleft += 1
                p = &st.pools[row]
                if grown < 0:
                    grown = row
                    used = p.used
                elif row != grown:
                    return unplaced(st, s, r, placed, nleft)
                need = grow_need(st, p, fj, need)
                if need > 0:
                    if not grow_fits(p, used, need) or (must_evict(p, used, need) and not plain_evictions(st, p)):
                        return unplaced(st, s, r, placed, nleft)
                    used += need           # (grow_now's p.used += need)
                    alloc += need          # (and its frame_alloc[fj] += need: the repeats' allocation)
            elif placing:
                if st.sess.frame_grown[fj]:
                    placed.old[r] = pos         # (put back should the plan change: unplaced)
                    st.sess.frame_pos[fj] = pos + tokens
                else:
                    placed.left[nleft] = r
                    nleft += 1
            if counting:
                # the count with no grow due, from the allocation as this plan's grow leaves it
                if not (alloc < QUIET_POSITIONS):
                    q = 0.0
                x = alloc - pos - position_margin(pos, alloc)
                if not (x >= qn):
                    qn = x
        left -= tokens
        if left <= 0 and r < na - 1:
            return unplaced(st, s, r + 1, placed, nleft)
    if counting and plan == PLAN_SAME and q >= 1.0:
        if ngrow > 0:
            # grows granted: the pool's room after this plan's grows, shared by the growing residents
            x = 0.0
            if gpool >= 0 and plain_evictions(st, &st.pools[gpool]):
                p = &st.pools[gpool]
                x = floor((p.cap - (used if grown >= 0 else p.used) + spare) / <double> ngrow)
            if x >= qn and x >= 1.0:
                grants[0] = True
                qn = x
        if not (qn >= q):
            q = qn                      # (a NaN count gives none)
        if q >= 1.0:
            quiet[0] = <int64_t> q
    if placing:
        placed.ids = not again
        placed.n = nleft
    return plan


cdef int unplaced(State* st, Stage* s, int64_t w, Placed* placed, int64_t nleft) noexcept nogil:
    """plan_unchanged's answer where the plan changed (PLAN_CHANGED), the positions it placed (the
    first w entries' but the nleft listed) put back (placed NULL: none was)."""
    cdef int64_t r, i = 0
    cdef int32_t j
    if placed == NULL:
        return PLAN_CHANGED
    for r in range(w):
        if i < nleft and placed.left[i] == r:
            i += 1
            continue
        j = s.assigned[r].job
        if st.jobs.rec[j].growing >= 0:
            st.sess.frame_pos[st.jobs.rec[j].frame] = placed.old[r]
    return PLAN_CHANGED


cdef inline int64_t again_positions(State* st, Stage* s, int64_t r, int64_t na, bint same,
                                   bint grows) noexcept nogil:
    """plan_again's visits of the entries from r on while each calls nothing: its job not growing,
    or (with `grows`) no grow due and its frame marked grown already (mark_grown would return at
    once). The same writes (the position, the entry's id unless `same`), with the tables'
    pointers in locals (nothing here is a call or a char store that may move them). The first
    other entry is left to plan_again's own visit: its index (na when none)."""
    cdef Assigned* a = s.assigned
    cdef JobRec* jobs = st.jobs.rec
    cdef double* frame_pos = st.sess.frame_pos
    cdef double* frame_alloc = st.sess.frame_alloc
    cdef char* grown = st.sess.frame_grown
    cdef int64_t fj
    cdef int32_t j
    cdef double pos
    while r < na:
        j = a[r].job
        if jobs[j].growing >= 0:
            fj = jobs[j].frame
            pos = frame_pos[fj] + a[r].tok
            if grows and (pos - frame_alloc[fj] > EPS or not grown[fj]):
                break                   # a grow due, or the frame to mark
            frame_pos[fj] = pos
        if not same:
            a[r].id = jobs[j].id
        r += 1
    return r


cdef inline double plan_again(State* st, Stage* s, int32_t k, int64_t na, IterTotals* n, bint same,
                              bint grows, double duration, bint* moved, Placed* placed) noexcept nogil:
    """start_iteration where plan_unchanged holds: the same residents planned again (the plan's
    writes redone in its order) and begun. `same`: the iteration repeats the previous one of the
    run, whose totals n holds (its KV sums too unless a grow was due: then they are made afresh)
    and whose cost, `duration`, is this one's (Stage.cost_repeats), so only the positions and
    grows are redone. `grows` False: a quiet repeat with no grow due (the frames marked grown).
    *moved: some grow was due (a pool and an allocation may have moved). *placed (NULL: none): the
    entries whose positions plan_unchanged moved, whose visits are then their ids alone. Its
    duration (-1: the cost failed)."""
    cdef int64_t r = 0, i
    cdef bint kv = st.kv_iteration, due = False
    s.na = na
    s.iter_left = False
    st.iter_preempted = 0
    if placed != NULL:
        r = na
        if not same and not placed.ids:
            for i in range(na):
                s.assigned[i].id = st.jobs.rec[s.assigned[i].job].id
        for i in range(placed.n):
            due |= again_visit(st, s, placed.left[i], True, grows)     # (the ids written above)
    while True:
        r = again_positions(st, s, r, na, same, grows)
        if r >= na:
            break
        due |= again_visit(st, s, r, same, grows)
        r += 1
    moved[0] = due
    s.cursor = s.nres
    if not same or (due and kv):
        duration = repeat_totals(st, s, na, n, kv)
        if duration < 0:
            return -1.0
    return iteration_begins(st, s, k, n, duration, s.budget_k, False)


cdef inline bint again_visit(State* st, Stage* s, int64_t r, bint same, bint grows) noexcept nogil:
    """plan_again's own visit of entry r (a grow made where due, and granted: plan_unchanged; the
    position, the frame's mark, the id unless `same`). True: a grow was due."""
    cdef Assigned* a = &s.assigned[r]
    cdef int32_t j = a.job
    cdef int64_t fj
    cdef double need
    cdef bint due = False
    if st.jobs.rec[j].growing >= 0:
        fj = st.jobs.rec[j].frame
        if grows:
            need = st.sess.frame_pos[fj] + a.tok - st.sess.frame_alloc[fj]
            if need > EPS:
                grow_now(st, &st.pools[st.jobs.rec[j].growing], fj, need)     # granted (plan_unchanged)
                due = True
        st.sess.frame_pos[fj] += a.tok
        if grows:
            mark_grown(st, fj)
    if not same:
        a.id = st.jobs.rec[j].id
    return due


cdef inline double repeat_totals(State* st, Stage* s, int64_t na, IterTotals* n, bint kv) noexcept nogil:
    """A repeat's totals n made afresh (decode_totals) and its cost: the duration (-1: the cost
    failed)."""
    decode_totals(st, s, na, n, kv)
    return iteration_cost(st, s, n, 0.0)


cdef inline void decode_totals(State* st, Stage* s, int64_t na, IterTotals* n, bint kv) noexcept nogil:
    """The totals n of a repeat's assignment, its first na entries all decodes, made afresh in its
    order (each resident's KV is its own allocation, which the grows of the others do not move)."""
    cdef int64_t r
    memset(n, 0, sizeof(IterTotals))
    for r in range(na):
        count_assigned(st, s, s.assigned[r].job, M_DECODE, s.assigned[r].tok, n, kv)


# Inlining. steady_run's plans are the step rows' hot path: plan_unchanged and plan_again must be
# inlined there, where its flags are constants or known (a call costs the light row ~5 %). gcc
# inlines them only while steady_run is their one caller; another caller (step_again's
# plan_unchanged) would make it keep a shared copy (plan_again.constprop.0) that steady_run calls
# too. So both are always inlined: each caller gets its own copy with its flags folded. The
# attributes go on a declaration of the C names Cython gives these functions (a name that stops
# matching is a compile error for the types, or the attribute silently lost: `nm` on the .so then
# lists plan_unchanged again). Likewise quiet_repeat, inlined in steady_run (grows where counted
# with grants, each made by quiet_grow, out of line: a grow is one repeat in a block's) and in
# quiet_grows (noinline: `nm` lists it, and no quiet_repeat) with them.
cdef extern from *:
    """
    struct __pyx_t_2sq_6engine_6_state_State;
    struct __pyx_t_2sq_6engine_6_state_Stage;
    struct __pyx_t_2sq_7_engine_IterTotals;
    struct __pyx_t_2sq_7_engine_Placed;
    static inline __attribute__((always_inline)) int __pyx_f_2sq_7_engine_plan_unchanged(
        struct __pyx_t_2sq_6engine_6_state_State *, struct __pyx_t_2sq_6engine_6_state_Stage *,
        int64_t, int, int64_t *, int *, int64_t, struct __pyx_t_2sq_7_engine_Placed *);
    static inline __attribute__((always_inline)) double __pyx_f_2sq_7_engine_plan_again(
        struct __pyx_t_2sq_6engine_6_state_State *, struct __pyx_t_2sq_6engine_6_state_Stage *,
        int32_t, int64_t, struct __pyx_t_2sq_7_engine_IterTotals *, int, int, double, int *,
        struct __pyx_t_2sq_7_engine_Placed *);
    static inline __attribute__((always_inline)) double __pyx_f_2sq_7_engine_quiet_repeat(
        struct __pyx_t_2sq_6engine_6_state_State *, struct __pyx_t_2sq_6engine_6_state_Stage *,
        int32_t, int64_t, struct __pyx_t_2sq_7_engine_IterTotals *, double, int, int *);
    static __attribute__((noinline)) double __pyx_f_2sq_7_engine_quiet_grows(
        struct __pyx_t_2sq_6engine_6_state_State *, struct __pyx_t_2sq_6engine_6_state_Stage *,
        int32_t, int64_t, struct __pyx_t_2sq_7_engine_IterTotals *, double);
    static __attribute__((noinline)) void __pyx_f_2sq_7_engine_quiet_grow(
        struct __pyx_t_2sq_6engine_6_state_State *, int32_t, int64_t, double);
    """


# A quiet repeat's end and plan in one pass. When steady_run has quiet repeats still to come
# (quiet > 0), the iteration ending now was planned PLAN_SAME with every resident given 1 token,
# and the one to come plans the same, with no grow due or (counted with grants) each due grow
# granted: each resident's work was >= 1 + t at the plan before the run's t-th repeat
# (plan_unchanged's count), so at this end it is still >= 1,
# and no resident finishes. This end is then end_iteration's for residents that are all decodes
# (their modes are as at the run's first check) continuing their turns' tokens (`decoding`, set
# at the end of the iteration before the count, where each was a decode resident, stays so: the
# count is 0 where it is not), none finished, none removed (iter_left: no preemption inside a
# run), and the plan that follows is plan_again's quiet repeat of the same
# totals (Stage.cost_repeats). Per resident the two write disjoint things (the job's work, its
# owner's ITL fields and the histogram; its frame's position, and with grants its grow: the pool,
# its evictions and the frame's allocation, which nothing the end reads), so one loop doing both
# for each resident in turn leaves what the two loops in turn leave; the histogram's gaps go in
# in the same order, the same left-to-right sum, and the grows in the assignment's order. Where
# a grow was due and the cost reads the KV sums, the totals and the cost are made afresh after
# the loop, as plan_again makes them. The iteration ending and the one beginning are decode-only
# with the same token counts, so the stage's kind, decodes and inflight end as they were (its two
# time shares integrated to now), and only the counts, running means and epoch move.
# Only steady_run calls it, where `fuses` (no iteration traces or timeline, one lone step stage:
# the rest of what end_iteration and iteration_begins do is theirs).
cdef inline double quiet_repeat(State* st, Stage* s, int32_t k, int64_t na, IterTotals* n,
                                double duration, bint grows, bint* moved) noexcept nogil:
    """end_iteration of the iteration ending now and plan_again of the quiet repeat that follows
    (its totals n and `duration` the one just ended's; `grows`: counted with grants), begun. Its
    duration (-1: out of memory, or the cost failed); *moved: some grow was due."""
    cdef Histogram* h = &s.itl
    cdef double now = st.now, gap, total = h.total, last_gap = h.last_gap, need
    cdef int64_t again = 0, r, fj
    cdef int32_t j, owner
    cdef bint warm = st.warm, due = False
    cdef Assigned* a
    # the tables in locals, not reloaded at each resident after its stores: none moves here
    # (histogram_add reallocates the histogram's cells, grow_now writes the pool, its cache and
    # the frame's allocation)
    cdef Assigned* assigned = s.assigned
    cdef JobRec* jobs = st.jobs.rec
    cdef double* itl_last = st.sess.itl_last
    cdef double* frame_pos = st.sess.frame_pos
    # the iteration's time shares: iteration_areas_end then _start of the same kind (a decode-only
    # iteration) and decodes leave each area's value as it was, integrated to now
    area_again(&s.decode_only, now)
    area_again(&s.decodes, now)
    for r in range(na):
        a = &assigned[r]
        j = a.job
        jobs[j].work -= a.tok
        owner = jobs[j].owner
        if warm:                        # (decoding[j]: a decode token continuing the turn)
            gap = now - itl_last[owner]
            if gap == last_gap and gap > 0.0:
                total += gap
                again += 1
            else:
                histogram_again(h, total, &again)
                if histogram_add(h, gap) < 0:
                    fail(st, E_MEMORY, -1, 0, 0, 0)
                    return -1.0
                total = h.total
                last_gap = h.last_gap
        itl_last[owner] = now
        if jobs[j].growing >= 0:
            fj = jobs[j].frame
            # (plan_again's visit: each grow due is granted; its frame was marked grown by the plan
            # that counted the repeats, and no admission clears a mark inside a run)
            if grows and frame_pos[fj] + a.tok - st.sess.frame_alloc[fj] > EPS:
                quiet_grow(st, j, fj, frame_pos[fj] + a.tok - st.sess.frame_alloc[fj])
                due = True
            frame_pos[fj] += a.tok
    histogram_again(h, total, &again)
    moved[0] = due
    if due and st.kv_iteration:
        duration = repeat_totals(st, s, na, n, True)     # (plan_again's: its KV sums moved)
        if duration < 0:
            return -1.0
    # iteration_begins of the same totals: the stage's kind, decodes and inflight as they are
    st.iter_preempted = 0
    s.iterations += 1
    iteration_means(st, s, n, duration, s.budget_k)
    s.iter_epoch += 1
    return duration


cdef void quiet_grow(State* st, int32_t j, int64_t fj, double need) noexcept nogil:
    """A quiet repeat's grow (granted by the count), out of its loop's line."""
    grow_now(st, &st.pools[st.jobs.rec[j].growing], fj, need)


cdef double quiet_grows(State* st, Stage* s, int32_t k, int64_t na, IterTotals* n,
                        double duration) noexcept nogil:
    """quiet_repeat of a repeat counted with grants and its sample (settle's step 5, as
    steady_run's after plan_again), out of steady_run's line: a call an iteration of a cost reading
    the KV sums (whose totals a grow makes afresh), while steady_run's inlined copy keeps the light
    row's registers."""
    cdef bint moved
    duration = quiet_repeat(st, s, k, na, n, duration, True, &moved)
    if st.error.code:
        return duration
    if not moved and st.n_stages == 1 and st.n_pools <= 1:
        sample_unmoved(st)          # (no grow was due: nothing the areas read moved, as steady_run's)
    else:
        sample_repeat(st, moved)
    return duration


cdef void log_iteration(State* st, Stage* s) noexcept nogil:
    cdef int64_t r
    cdef int32_t j, owner
    if charge(st, ITER_BYTES + ITER_ENTRY_BYTES * s.na) < 0:
        return
    if darr_push(&st.traces.it_time, st.now) < 0 or larr_push(&st.traces.it_count, s.na) < 0:
        fail(st, E_MEMORY, -1, 0, 0, 0)
        return
    for r in range(s.na):
        j = s.assigned[r].job
        owner = st.jobs.rec[j].owner
        if larr_push(&st.traces.it_serial, st.sess.serial[owner]) < 0 \
                or larr_push(&st.traces.it_turn, turn_of(st.sess.attrs[<int64_t> owner * st.n_attrs + st.slot_turn])) < 0 \
                or larr_push(&st.traces.it_mode, st.jobs.rec[j].mode) < 0 or darr_push(&st.traces.it_tokens, s.assigned[r].tok) < 0:
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return
    trace_logged(st)


cdef void token(State* st, int32_t k, int32_t slot, bint decode, bint counts) noexcept nogil:
    """Inter-token gaps: a decode token, or a prefill's completion. A completion continues the
    turn's tokens after a decode of the turn, or after a preemption when it ends on the stage of
    the previous token (0.1.2); otherwise it is the turn's first token."""
    cdef double turn, now = st.now
    if not counts:
        return
    turn = st.sess.attrs[<int64_t> slot * st.n_attrs + st.slot_turn]
    if st.sess.itl_has[slot] and st.sess.itl_turn[slot] == turn \
            and (decode or st.sess.itl_decoded[slot] or (st.sess.itl_preempted[slot] and st.sess.itl_stage[slot] == k)):
        if st.warm and histogram_add(&st.stages[k].itl, now - st.sess.itl_last[slot]) < 0:
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return
        st.sess.itl_last[slot] = now
        st.sess.itl_stage[slot] = k
        st.sess.itl_preempted[slot] = 0
        if decode and not st.sess.itl_decoded[slot]:
            st.sess.itl_decoded[slot] = 1
        return
    st.sess.itl_has[slot] = 1
    st.sess.itl_stage[slot] = k
    st.sess.itl_last[slot] = st.now
    st.sess.itl_turn[slot] = turn
    st.sess.itl_decoded[slot] = 1 if decode else 0
    st.sess.itl_preempted[slot] = 0


cdef inline Area* kind_area(Stage* s, int kind) noexcept nogil:
    """The time share an iteration of this kind counts in (NULL: none)."""
    if kind == 1:
        return &s.prefill_only
    if kind == 2:
        return &s.decode_only
    if kind == 3:
        return &s.mixed
    return NULL


# The iteration time shares change only when an iteration starts or ends (0.1.2 integrates them
# over whole iterations, not event by event: the sums round differently). Between iterations
# every share and the decodes hold 0, in one the kind's share holds 1 and the decodes their
# number (these two are their only writers). An area holding 0 that is set adds 0 x (now - last),
# i.e. +0, to its integral (time only moves on, and an integral never holds -0), and its `last`
# matters only under a nonzero value: so only the areas that hold or take a nonzero value are
# written, each as area_set would leave it.
cdef inline void iteration_areas_start(State* st, Stage* s) noexcept nogil:
    cdef Area* a = kind_area(s, s.iter_kind)
    if a != NULL:
        a.last = st.now
        a.value = 1.0
    if s.iter_decodes != 0:
        s.decodes.last = st.now
        s.decodes.value = <double> s.iter_decodes


cdef inline void iteration_areas_end(State* st, Stage* s) noexcept nogil:
    """(before the stage's iteration kind and decodes go back to 0)"""
    cdef Area* a = kind_area(s, s.iter_kind)
    if a != NULL:
        area_set(a, st.now, 0.0)
    if s.iter_decodes != 0:
        area_set(&s.decodes, st.now, 0.0)


cdef void end_iteration(State* st, int32_t k) noexcept nogil:
    """Apply the iteration's tokens; finished jobs leave the residents and complete, in assignment order."""
    cdef Stage* s = &st.stages[k]
    cdef int64_t r, nfin = 0
    cdef int32_t j, owner
    cdef bint finished, decode, left = s.iter_left, plain
    # A decode token of a job whose previous decode token was its owner's last token continues
    # the turn's tokens (what token() left is still there: the owner waits in the job, a
    # preemption removes the job, the turn cannot move meanwhile), so only its gap and time are
    # new. Most such gaps equal the histogram's last one (a step's tokens share it), and
    # histogram_add then only counts: those counts and the gaps' sum are kept in locals over the
    # loop and written back (`again`) before anything else reads the histogram; the sum is the
    # same left-to-right sum.
    cdef Histogram* h = &s.itl
    cdef double now = st.now, gap, total = h.total, last_gap = h.last_gap
    cdef int64_t again = 0
    cdef bint warm = st.warm
    cdef Assigned* a
    s.inflight = 0
    if st.steps_only:
        mark_row(st.steps_ready, k)
    iteration_areas_end(st, s)
    s.iter_kind = 0
    s.iter_decodes = 0
    r = 0
    # (end_decodes' case: its tests out of its loop; a positive last gap stays positive, as
    # histogram_add sets only such, so end_decodes' equal gaps are positive ones)
    plain = s.na >= PLAIN_ENTRIES and warm and not left and last_gap > 0.0
    while True:
        if plain:
            r = end_decodes(st, s, r, now, last_gap, &total, &again, &nfin)
        if r >= s.na:
            break
        a = &s.assigned[r]
        j = a.job
        r += 1
        # (a job is removed from the residents only by leave_residents: if none left, all are there)
        if left and st.jobs.rec[j].id != a.id:
            continue                    # removed since the start
        st.jobs.rec[j].work -= a.tok
        finished = st.jobs.rec[j].work <= EPS
        decode = st.jobs.rec[j].mode == M_DECODE
        owner = st.jobs.rec[j].owner
        if decode and st.jobs.rec[j].decoding:
            if warm:
                gap = now - st.sess.itl_last[owner]
                if gap == last_gap and gap > 0.0:
                    total += gap
                    again += 1
                else:
                    histogram_again(h, total, &again)
                    if histogram_add(h, gap) < 0:
                        fail(st, E_MEMORY, -1, 0, 0, 0)
                        return
                    total = h.total
                    last_gap = h.last_gap
            st.sess.itl_last[owner] = now
        else:
            histogram_again(h, total, &again)
            token(st, k, owner, decode, decode or finished)
            total = h.total
            last_gap = h.last_gap
            # (its next decode token then continues the turn, as the turn is a number)
            st.jobs.rec[j].decoding = decode and st.sess.itl_turn[owner] == st.sess.itl_turn[owner]
        if finished:
            # the finished leave the residents in one pass (O(residents), not O(residents) per
            # job); the stamp -2 marks them, and complete_job frees them, so no one reads it later.
            # They are listed in order at the assignment's front (its entries before r are read).
            st.jobs.served[j] = -2
            s.assigned[nfin].job = j
            nfin += 1
    histogram_again(h, total, &again)
    if nfin > 0:                        # (most iterations finish no one)
        touch_step(st, k)               # (complete_job moves its number)
        leave_finished(st, s, nfin)
        for r in range(nfin):
            complete_job(st, s, s.assigned[r].job)
            if st.error.code:
                return
    s.na = 0


cdef enum:
    # end_iteration takes end_decodes for this many entries or more: for fewer its set-up costs
    # more than its loop saves (the light engine's one to three residents)
    PLAIN_ENTRIES = 4


cdef inline int64_t end_decodes(State* st, Stage* s, int64_t r, double now, double last_gap,
                                double* total, int64_t* again, int64_t* nfin) noexcept nogil:
    """end_iteration's visits, warm, with no resident left since the iteration began (so no
    entry's job removed) and a positive last gap (so a gap equal to it is positive), of the
    assignment's entries from r on while each is a decode token continuing its turn whose gap is
    the histogram's last one (counted in *again and *total, as end_iteration's own visit counts
    it): the same writes (the work, the owner's last token time,
    a finished job listed at the assignment's front), with the tables' pointers in locals
    (nothing here is a call). The first other entry is left to end_iteration's own visit: its
    index (s.na when none)."""
    cdef int64_t na = s.na
    cdef int32_t j, owner
    cdef double gap, w
    cdef Assigned* a
    cdef Assigned* entries = s.assigned
    cdef JobRec* jobs = st.jobs.rec
    cdef JobRec* jr
    cdef double* itl_last = st.sess.itl_last
    cdef int64_t* served = st.jobs.served
    while r < na:
        a = &entries[r]
        j = a.job
        jr = &jobs[j]
        if not jr.decoding:             # (a decode: only end_iteration sets it, on a decode)
            break
        owner = jr.owner
        gap = now - itl_last[owner]
        if gap != last_gap:             # (gap == last_gap and gap > 0: the last gap is positive)
            break
        total[0] += gap
        again[0] += 1
        w = jr.work - a.tok
        jr.work = w
        itl_last[owner] = now
        if w <= EPS:
            served[j] = -2
            entries[nfin[0]].job = j
            nfin[0] += 1
        r += 1
    return r


cdef inline void histogram_again(Histogram* h, double total, int64_t* again) noexcept nogil:
    """end_iteration's tokens counted in locals (gaps equal to the last one) go into the histogram."""
    if again[0]:
        h.n += again[0]
        h.total = total
        h.last_cell.count += again[0]
        again[0] = 0


cdef inline void leave_finished(State* st, Stage* s, int64_t nfin) noexcept nogil:
    """The jobs an iteration finished (the assignment's first nfin, marked -2) leave the residents:
    a lone one found by its place (most often the one finishing), several in one pass."""
    if nfin == 1:
        leave_residents(st, s, s.assigned[0].job)
    else:
        leave_marked(st, s)


cdef void leave_marked(State* st, Stage* s) noexcept nogil:
    cdef int64_t r, k = 0
    for r in range(s.nres):
        if st.jobs.served[s.res[r]] != -2:
            s.res[k] = s.res[r]
            k += 1
    s.nres = k
    s.cursor = 0
    s.plan_kept = False


cdef double budget_left(State* st, int32_t k, int slot) noexcept nogil:
    """Outside an admission by the stage: max(0, budget - Σ want(resident)), the budget evaluated afresh."""
    cdef Stage* s = &st.stages[k]
    cdef double budget, chunk, total = 0.0
    cdef int64_t r
    if s.kind != K_STEP:
        fail(st, E_BUDGET_LEFT, slot, 0, 0, 0)
        return NAN
    cdef double outer[N_CONTEXTS]
    if st.bl_stage == k:
        return st.bl_value
    # the stage's totals are read in its own Budget context; the expression around this call
    # goes on in its own (0.1.2: a chunk after `budget_left(E2)` still reads its stage's residents)
    memcpy(outer, st.ctxv, sizeof(outer))
    set_totals(st, s)
    budget = step_budget(st, s)
    chunk = step_chunk(st, s)
    memcpy(st.ctxv, outer, sizeof(outer))
    for r in range(s.nres):
        total += want(st, s.res[r], chunk)
    return fmax(0.0, budget - total)

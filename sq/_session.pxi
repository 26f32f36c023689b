# The statement VM (spec chapters 02–03): session slots, spawn and end, `record`, `exec_session`.
# Included by sq/_engine.pyx (one translation unit, so the C compiler inlines across files);
# every function here runs without the GIL.


# ---- session slots: reused ---------------------------------------------------------------
cdef int32_t session_alloc(State* st) noexcept nogil:
    cdef int64_t cap, k
    cdef int32_t slot
    if st.nsfree > 0:
        st.nsfree -= 1
        return st.sfree[st.nsfree]
    if st.shigh == st.scap:
        cap = st.scap * 2 if st.scap else 64
        if cap > MAX_SESSIONS:
            fail(st, E_TOO_MANY, -1, 0, 0, 0)
            return -1
        if charge(st, (cap - st.scap) * slot_bytes(st)) < 0:
            return -1
        if not grow(<void**> &st.attrs, cap * st.n_attrs * sizeof(double)) \
                or not grow(<void**> &st.pc, cap * sizeof(int32_t)) \
                or not grow(<void**> &st.serial, cap * sizeof(int64_t)) \
                or not grow(<void**> &st.alive, cap * sizeof(char)) \
                or not grow(<void**> &st.sfree, cap * sizeof(int32_t)) \
                or not grow(<void**> &st.depth, cap * sizeof(int32_t)) \
                or not grow(<void**> &st.frame_hold, cap * st.hold_depth_max * sizeof(int32_t)) \
                or not grow(<void**> &st.frame_queued_at, cap * st.hold_depth_max * sizeof(double)) \
                or not grow(<void**> &st.frame_member, cap * st.hold_depth_max * st.hold_pools_max * sizeof(int32_t)) \
                or not grow(<void**> &st.frame_alloc, cap * st.hold_depth_max * st.hold_pools_max * sizeof(double)) \
                or not grow(<void**> &st.frame_active, cap * st.hold_depth_max * st.hold_pools_max * sizeof(char)) \
                or not grow(<void**> &st.frame_pos, cap * st.hold_depth_max * st.hold_pools_max * sizeof(double)) \
                or not grow(<void**> &st.frame_grown, cap * st.hold_depth_max * st.hold_pools_max * sizeof(char)) \
                or not grow(<void**> &st.grow_units, cap * sizeof(double)) \
                or not grow(<void**> &st.grow_at, cap * sizeof(int64_t)) \
                or not grow(<void**> &st.trace_of, cap * sizeof(int64_t)) \
                or not grow(<void**> &st.adm, cap * sizeof(double)) \
                or not grow(<void**> &st.waiting, cap * sizeof(char)) \
                or not grow(<void**> &st.resumed, cap * sizeof(char)) \
                or not grow(<void**> &st.sess_job, cap * sizeof(int32_t)) \
                or not grow(<void**> &st.sess_flow, cap * sizeof(int32_t)) \
                or not grow(<void**> &st.stuck, cap * sizeof(char)) \
                or not grow(<void**> &st.itl_stage, cap * sizeof(int32_t)) \
                or not grow(<void**> &st.ppos, cap * (st.n_pools + 1) * sizeof(double)) \
                or not grow(<void**> &st.hcount, cap * st.n_pools * sizeof(int32_t)) \
                or not grow(<void**> &st.pools_touched, cap * sizeof(char)) \
                or not grow(<void**> &st.hgen, cap * st.n_pools * sizeof(uint32_t)) \
                or not grow(<void**> &st.grow_job, cap * sizeof(int32_t)) \
                or not grow(<void**> &st.itl_has, cap * sizeof(char)) \
                or not grow(<void**> &st.itl_last, cap * sizeof(double)) \
                or not grow(<void**> &st.itl_turn, cap * sizeof(double)) \
                or not grow(<void**> &st.itl_decoded, cap * sizeof(char)) \
                or not grow(<void**> &st.itl_preempted, cap * sizeof(char)) \
                or not grow(<void**> &st.lease_head, cap * sizeof(int64_t)) \
                or not grow(<void**> &st.lease_tail, cap * sizeof(int64_t)) \
                or not grow(<void**> &st.trace_next, cap * sizeof(int64_t)):
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return -1
        # generations start at 0 for new slots and carry on when a slot is reused
        memset(&st.hgen[st.scap * st.n_pools], 0, (cap - st.scap) * st.n_pools * sizeof(uint32_t))
        st.scap = cap
    slot = <int32_t> st.shigh
    st.shigh += 1
    st.pools_touched[slot] = 1            # its per-pool rows are not set yet
    return slot


# ---- sessions -------------------------------------------------------------------------------
cdef int spawn(State* st) noexcept nogil:
    cdef int32_t slot = session_alloc(st)
    cdef int64_t base, i
    if slot < 0:
        return -1
    base = <int64_t> slot * st.n_attrs
    memset(&st.attrs[base], 0, st.n_attrs * sizeof(double))
    st.attrs[base + st.slot_serial] = <double> st.next_serial
    st.serial[slot] = st.next_serial
    st.next_serial += 1
    if st.trace_sessions > 0:
        # ordered: serial mod L; otherwise one draw on the trace stream
        if st.trace_ordered:
            st.trace_of[slot] = st.serial[slot] % st.trace_sessions
        else:
            st.trace_of[slot] = sq_rng_range_u32(&st.rng_trace, 0, <uint32_t> (st.trace_sessions - 1))
        st.trace_next[slot] = 0
    st.pc[slot] = st.session_pc
    st.adm[slot] = NEVER_ADMITTED
    st.waiting[slot] = 0
    st.resumed[slot] = 0
    st.sess_job[slot] = -1
    st.sess_flow[slot] = -1
    st.stuck[slot] = 0
    st.itl_stage[slot] = -1
    if st.pools_touched[slot]:
        # only a slot whose session held or was preempted pays for the pools it never used
        for i in range(st.n_pools + 1):
            st.ppos[<int64_t> slot * (st.n_pools + 1) + i] = NAN
        for i in range(st.n_pools):
            st.hcount[<int64_t> slot * st.n_pools + i] = 0
        st.pools_touched[slot] = 0
    st.grow_job[slot] = -1
    st.itl_has[slot] = 0
    st.itl_preempted[slot] = 0
    st.depth[slot] = 0
    st.grow_at[slot] = -1
    st.lease_head[slot] = -1
    st.lease_tail[slot] = -1
    st.alive[slot] = 1
    st.live += 1
    st.arrivals += 1
    if st.tl != NULL:
        tl_session_start(st, slot)
    if st.init_pc >= 0:
        exec_block(st, st.init_pc, slot, &st.rng_workload)
        if st.err:
            return -1
    return ready_push(st, slot)


cdef int end_session(State* st, int32_t slot) noexcept nogil:
    cdef int32_t d
    # holds are released innermost first, each caching per its clause
    if st.grow_at[slot] >= 0:
        leave_growers(st, slot)
    for d in range(st.depth[slot] - 1, -1, -1):
        release_frame(st, slot, d, False)
        if st.err:
            return -1
    st.depth[slot] = 0
    end_leases(st, slot)
    if st.err:
        return -1
    if st.tl != NULL:
        tl_session_end(st, slot)
    st.alive[slot] = 0
    st.live -= 1
    if st.warm:
        st.ended += 1
    st.sfree[st.nsfree] = slot
    st.nsfree += 1
    if st.arrival_kind == A_CLOSED:
        return spawn(st)
    return 0


cdef int record(State* st, int32_t obs, double v, int32_t slot) noexcept nogil:
    cdef Observe* o = &st.observes[obs]
    cdef int64_t base = <int64_t> slot * st.n_attrs
    if not st.keep_samples:
        return record_summary(st, o, v)
    if charge(st, 24) < 0:         # value, time, serial, turn
        return -1
    if darr_push(&o.values, v) < 0 or darr_push(&o.times, st.now) < 0 \
            or serials_push(&o.serials, st.serial[slot]) < 0 \
            or turns_push(&o.turns, <uint32_t> turn_of(st.attrs[base + st.slot_turn])) < 0:
        fail(st, E_MEMORY, -1, 0, 0, 0)
        return -1
    return 0


cdef void exec_block(State* st, int32_t pc, int32_t slot, sq_rng* rng) noexcept nogil:
    """An `init` or `turn` block: sets and observes only, on the workload stream."""
    cdef const int32_t* code = st.stmts
    cdef double v
    while code[pc] != S_RET:
        v = evaluate(st, code[pc + SV_EXPR], slot, rng, NAN)
        if st.err:
            return
        if code[pc] == S_SET:
            st.attrs[<int64_t> slot * st.n_attrs + code[pc + SV_TARGET]] = v
        elif st.warm:
            if record(st, code[pc + SV_TARGET], v, slot) < 0:
                return
        pc += SV_LEN


cdef void next_trace_turn(State* st, int32_t slot, int64_t base) noexcept nogil:
    """Load the session's next trace turn; past the last one only `more` (0) changes."""
    cdef int64_t t = st.trace_of[slot], k = st.trace_next[slot]
    cdef const TraceTurn* turn
    if k < st.trace_len[t]:
        turn = &(<const TraceTurn*> st.trace_turns)[st.trace_start[t] + k]
        st.attrs[base + st.slot_new] = turn.new
        st.attrs[base + st.slot_out] = turn.out
        st.attrs[base + st.slot_think] = turn.think
        st.attrs[base + st.slot_forced] = turn.forced
        st.trace_next[slot] = k + 1
        st.attrs[base + st.slot_more] = 1.0 if k + 1 < st.trace_len[t] else 0.0
    else:
        st.attrs[base + st.slot_more] = 0.0


cdef void exec_session(State* st, int32_t slot) noexcept nogil:
    """Run a ready session's statements until it joins a stage, yields or ends."""
    cdef const int32_t* code = st.stmts
    cdef int64_t base = <int64_t> slot * st.n_attrs
    cdef int32_t pc = st.pc[slot], op, nkeys, i, kk, best
    cdef int64_t n, cand, member_k, j
    cdef double v, w
    cdef double* keys = st.keys
    cdef bint smaller
    while True:
        st.steps += 1
        if st.steps > st.step_limit:
            fail(st, E_STUCK, slot, 0, pc, 0)
            return
        op = code[pc]
        if op == S_SET:
            v = evaluate(st, code[pc + SV_EXPR], slot, &st.rng_session, NAN)
            if st.err:
                return
            st.attrs[base + code[pc + SV_TARGET]] = v
            pc += SV_LEN
        elif op == S_OBSERVE:
            v = evaluate(st, code[pc + SV_EXPR], slot, &st.rng_session, NAN)
            if st.err:
                return
            if st.warm and record(st, code[pc + SV_TARGET], v, slot) < 0:
                return
            pc += SV_LEN
        elif op == S_TURN:
            st.attrs[base + st.slot_turn] += 1.0
            if st.warm:
                st.turns += 1
            if st.tl != NULL:
                tl_turn(st, slot)
            if st.trace_sessions > 0:
                next_trace_turn(st, slot, base)
            if st.turn_pc >= 0:
                exec_block(st, st.turn_pc, slot, &st.rng_workload)
                if st.err:
                    return
            pc += S_BARE_LEN
        elif op == S_END:
            end_session(st, slot)
            return
        elif op == S_JUMP:
            pc = code[pc + SJ_TARGET]
        elif op == S_BRANCH:
            v = evaluate(st, code[pc + SB_GUARD], slot, &st.rng_session, NAN)
            if st.err:
                return
            if v == 1.0:
                pc += SB_LEN
            elif v == 0.0:
                pc = code[pc + SB_ELSE]
            else:
                fail(st, E_BRANCH, slot, v, code[pc + SB_SITE], 0)
                return
        elif op == S_CHOOSE:
            nkeys = code[pc + SC_NKEYS]
            v = evaluate(st, code[pc + SC_COUNT], slot, &st.rng_session, NAN)
            if st.err:
                return
            n = saturate_i64(v)
            best = 0
            for cand in range(n):
                st.attrs[base + code[pc + SC_VAR]] = <double> cand
                for i in range(nkeys):
                    keys[nkeys + i] = evaluate(st, code[pc + SC_KEYS + i], slot, &st.rng_session, NAN)
                    if st.err:
                        return
                if cand == 0:
                    smaller = True
                else:
                    smaller = False
                    for i in range(nkeys):
                        if keys[nkeys + i] < keys[i]:
                            smaller = True
                            break
                        if not (keys[nkeys + i] == keys[i]):
                            break   # larger, or NaN: not smaller
                if smaller:
                    best = <int32_t> cand
                    for i in range(nkeys):
                        keys[i] = keys[nkeys + i]
            st.attrs[base + code[pc + SC_VAR]] = <double> best
            pc += SC_KEYS + nkeys
        elif op == S_HOLD:
            st.pc[slot] = pc + SH_LEN
            hold_statement(st, slot, code[pc + SH_HOLD], False)
            return                       # queued (or rejected and ended)
        elif op == S_HOLD_END:
            release_frame(st, slot, st.depth[slot] - 1, True)
            if st.err:
                return
            st.depth[slot] -= 1
            st.attrs[base + st.slot_computed] = 0.0
            try_every_pool(st)
            if st.err:
                return
            pc += SH_LEN
        elif op == S_GROW or op == S_LOAD:
            member_k = 0
            if code[pc + SPOOL_REF + REF_INDEX] >= 0:
                v = evaluate(st, code[pc + SPOOL_REF + REF_INDEX], slot, &st.rng_session, NAN)
                if st.err:
                    return
                member_k = member(st, v, code[pc + SPOOL_REF + REF_COUNT], E_POOL_INDEX, slot)
                if member_k < 0:
                    return
            w = clamp0(evaluate(st, code[pc + SPOOL_AMOUNT], slot, &st.rng_session, NAN))
            if st.err:
                return
            kk = <int32_t> (code[pc + SPOOL_REF + REF_BASE] + member_k)
            j = innermost(st, slot, kk)
            if op == S_GROW:
                if j < 0:
                    fail(st, E_GROW_OUTSIDE, slot, 0, code[pc + SPOOL_SITE], 0)
                    return
                pc += SPOOL_AMOUNT_LEN
                st.pc[slot] = pc
                if not grow_statement(st, slot, kk, w):
                    return                   # waits among the growers, or was its own victim
            else:
                if j < 0:
                    fail(st, E_LOAD_OUTSIDE, slot, 0, code[pc + SPOOL_SITE] + 1, 0)
                    return
                if st.frame_pos[j] + w > st.frame_alloc[j] + EPS:
                    fail(st, E_LOAD_FIT, slot, st.frame_alloc[j], code[pc + SPOOL_SITE], 0)
                    st.err_value2 = st.frame_pos[j]
                    st.err_value3 = w
                    return
                st.frame_pos[j] += w
                mark_grown(st, j)
                pc += SPOOL_AMOUNT_LEN
        elif op == S_RELEASE or op == S_DROP:
            member_k = 0
            if code[pc + SPOOL_REF + REF_INDEX] >= 0:
                v = evaluate(st, code[pc + SPOOL_REF + REF_INDEX], slot, &st.rng_session, NAN)
                if st.err:
                    return
                member_k = member(st, v, code[pc + SPOOL_REF + REF_COUNT], E_POOL_INDEX, slot)
                if member_k < 0:
                    return
            if op == S_DROP:
                drop_entry(&st.pools[code[pc + SPOOL_REF + REF_BASE] + member_k], st.serial[slot])
            else:
                release_pool(st, slot, <int32_t> (code[pc + SPOOL_REF + REF_BASE] + member_k))
                if st.err:
                    return
                try_every_pool(st)
                if st.err:
                    return
            pc += SPOOL_LEN
        elif op == S_RUN:
            member_k = 0
            if code[pc + SR_STAGE + REF_INDEX] >= 0:
                v = evaluate(st, code[pc + SR_STAGE + REF_INDEX], slot, &st.rng_session, NAN)
                if st.err:
                    return
                member_k = member(st, v, code[pc + SR_STAGE + REF_COUNT], E_STAGE_INDEX, slot)
                if member_k < 0:
                    return
            w = evaluate(st, code[pc + SR_WORK], slot, &st.rng_session, NAN)
            if st.err:
                return
            kk = -1
            if code[pc + SR_GROWING + REF_BASE] >= 0:
                # `growing P`: the hold it grows must be open when the run starts
                j = 0
                if code[pc + SR_GROWING + REF_INDEX] >= 0:
                    v = evaluate(st, code[pc + SR_GROWING + REF_INDEX], slot, &st.rng_session, NAN)
                    if st.err:
                        return
                    j = member(st, v, code[pc + SR_GROWING + REF_COUNT], E_POOL_INDEX, slot)
                    if j < 0:
                        return
                kk = <int32_t> (code[pc + SR_GROWING + REF_BASE] + j)
                if innermost(st, slot, kk) < 0:
                    fail(st, E_GROWING_OUTSIDE, slot, 0, code[pc + SR_GROWING_SITE], 0)
                    return
            # the other stages a flow holds
            nkeys = code[pc + SR_NALSO]
            st.fl_scratch[0] = <int32_t> (code[pc + SR_STAGE + REF_BASE] + member_k)
            for i in range(nkeys):
                j = 0
                if code[pc + SR_ALSO + REF_LEN * i + REF_INDEX] >= 0:
                    v = evaluate(st, code[pc + SR_ALSO + REF_LEN * i + REF_INDEX], slot, &st.rng_session, NAN)
                    if st.err:
                        return
                    j = member(st, v, code[pc + SR_ALSO + REF_LEN * i + REF_COUNT], E_STAGE_INDEX, slot)
                    if j < 0:
                        return
                st.fl_scratch[1 + i] = <int32_t> (code[pc + SR_ALSO + REF_LEN * i + REF_BASE] + j)
            st.pc[slot] = pc + SR_ALSO + REF_LEN * nkeys
            if not (w > 0):
                # zero work: no job, but the session yields to everyone already ready
                ready_push(st, slot)
                return
            if st.stages[st.fl_scratch[0]].share_cap > 0:
                start_flow(st, st.fl_scratch, nkeys + 1, slot, w)
            else:
                start_run(st, st.fl_scratch[0], slot, w, code[pc + SR_MODE], kk)
            return
        else:
            return

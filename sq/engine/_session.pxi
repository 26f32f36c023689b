# The statement VM (spec chapters 02–03): session slots, spawn and end, `record`, `exec_session`.
# Included by sq/_engine.pyx (one translation unit, so the C compiler inlines across files);
# every function here runs without the GIL.


# ---- session slots: reused ---------------------------------------------------------------
cdef bint session_tables(State* st, Tables* t) noexcept nogil:
    """Every per-session table (Sessions), the one list of them: see Tables."""
    cdef Sessions* ss = &st.sess
    return (table(t, <void**> &ss.attrs, st.n_attrs * sizeof(double))
            and table(t, <void**> &ss.pc, sizeof(int32_t))
            and table(t, <void**> &ss.serial, sizeof(int64_t))
            and table(t, <void**> &ss.alive, sizeof(char))
            and table(t, <void**> &ss.spare, sizeof(int32_t))
            and table(t, <void**> &ss.depth, sizeof(int32_t))
            and table(t, <void**> &ss.frame_hold, st.hold_depth_max * sizeof(int32_t))
            and table(t, <void**> &ss.frame_queued_at, st.hold_depth_max * sizeof(double))
            and table(t, <void**> &ss.frame_member, st.hold_depth_max * st.hold_pools_max * sizeof(int32_t))
            and table(t, <void**> &ss.frame_alloc, st.hold_depth_max * st.hold_pools_max * sizeof(double))
            and table(t, <void**> &ss.frame_active, st.hold_depth_max * st.hold_pools_max * sizeof(char))
            and table(t, <void**> &ss.frame_pos, st.hold_depth_max * st.hold_pools_max * sizeof(double))
            and table(t, <void**> &ss.frame_grown, st.hold_depth_max * st.hold_pools_max * sizeof(char))
            and table(t, <void**> &ss.grow_units, sizeof(double))
            and table(t, <void**> &ss.grow_at, sizeof(int64_t))
            and table(t, <void**> &ss.trace_of, sizeof(int64_t))
            and table(t, <void**> &ss.adm, sizeof(double))
            and table(t, <void**> &ss.waiting, sizeof(char))
            and table(t, <void**> &ss.resumed, sizeof(char))
            and table(t, <void**> &ss.job, sizeof(int32_t))
            and table(t, <void**> &ss.flow, sizeof(int32_t))
            and table(t, <void**> &ss.stuck, sizeof(char))
            and table(t, <void**> &ss.itl_stage, sizeof(int32_t))
            and table(t, <void**> &ss.ppos, (st.n_pools + 1) * sizeof(double))
            and table(t, <void**> &ss.hcount, st.n_pools * sizeof(int32_t))
            and table(t, <void**> &ss.pools_touched, sizeof(char))
            and table(t, <void**> &ss.hgen, st.n_pools * sizeof(uint32_t))
            and table(t, <void**> &ss.grow_job, sizeof(int32_t))
            and table(t, <void**> &ss.itl_has, sizeof(char))
            and table(t, <void**> &ss.itl_last, sizeof(double))
            and table(t, <void**> &ss.itl_turn, sizeof(double))
            and table(t, <void**> &ss.itl_decoded, sizeof(char))
            and table(t, <void**> &ss.itl_preempted, sizeof(char))
            and table(t, <void**> &ss.lease_head, sizeof(int64_t))
            and table(t, <void**> &ss.lease_tail, sizeof(int64_t))
            and table(t, <void**> &ss.trace_next, sizeof(int64_t)))


cdef int32_t session_alloc(State* st) noexcept nogil:
    cdef int64_t cap, k
    cdef int32_t slot
    if st.sess.nspare > 0:
        st.sess.nspare -= 1
        return st.sess.spare[st.sess.nspare]
    if st.sess.high == st.sess.cap:
        cap = st.sess.cap * 2 if st.sess.cap else 64
        if cap > MAX_SESSIONS:
            fail(st, E_TOO_MANY, -1, 0, 0, 0)
            return -1
        if not resize_charged(st, session_tables, st.sess.cap, cap):
            return -1
        # generations start at 0 for new slots and carry on when a slot is reused
        memset(&st.sess.hgen[st.sess.cap * st.n_pools], 0, (cap - st.sess.cap) * st.n_pools * sizeof(uint32_t))
        st.sess.cap = cap
    slot = <int32_t> st.sess.high
    st.sess.high += 1
    st.sess.pools_touched[slot] = 1            # its per-pool rows are not set yet
    return slot


# ---- sessions -------------------------------------------------------------------------------
cdef void reset_extras(State* st, int32_t slot) noexcept nogil:
    """A new session's fields that only hold and step code read or change: its stage job, flow and
    token bookkeeping, holds, queue places, growth and leases. Without hold statements and step
    stages (State.session_extras) they are set once, on the slot's first use (session_alloc marks
    it touched)."""
    cdef int64_t i
    st.sess.job[slot] = -1
    st.sess.flow[slot] = -1
    st.sess.itl_stage[slot] = -1
    st.sess.itl_has[slot] = 0
    st.sess.itl_preempted[slot] = 0
    st.sess.adm[slot] = NEVER_ADMITTED
    st.sess.waiting[slot] = 0
    st.sess.resumed[slot] = 0
    st.sess.stuck[slot] = 0
    if st.sess.pools_touched[slot]:
        # only a slot whose session held or was preempted pays for the pools it never used
        for i in range(st.n_pools + 1):
            st.sess.ppos[<int64_t> slot * (st.n_pools + 1) + i] = NAN
        for i in range(st.n_pools):
            st.sess.hcount[<int64_t> slot * st.n_pools + i] = 0
        st.sess.pools_touched[slot] = 0
    st.sess.grow_job[slot] = -1
    st.sess.depth[slot] = 0
    st.sess.grow_at[slot] = -1
    st.sess.lease_head[slot] = -1
    st.sess.lease_tail[slot] = -1


cdef inline void clear_attrs(double* row, int64_t n) noexcept nogil:
    """Zero a session's n attributes. A row of 4 to 16 (every program has 10 built-in ones) is
    cleared by two fixed-size clears that may overlap: GCC compiles each to a few vector stores,
    where a `memset` call of a run-time length costs ~25 instructions."""
    if 8 <= n <= 16:
        memset(row, 0, 8 * sizeof(double))
        memset(row + n - 8, 0, 8 * sizeof(double))
    elif 4 <= n < 8:
        memset(row, 0, 4 * sizeof(double))
        memset(row + n - 4, 0, 4 * sizeof(double))
    else:
        memset(row, 0, n * sizeof(double))


cdef inline int32_t new_session(State* st) noexcept nogil:
    """A new session's slot and serial, counted live and arrived (what every spawn does; -1: the
    run failed)."""
    cdef int32_t slot = session_alloc(st)
    if slot < 0:
        return -1
    st.sess.serial[slot] = session_in(st)
    return slot


cdef inline int64_t session_in(State* st) noexcept nogil:
    """A session arrives: counted live and arrived; returns its serial."""
    st.next_serial += 1
    st.live += 1
    st.arrivals += 1
    return st.next_serial - 1


cdef inline void session_out(State* st) noexcept nogil:
    """A session ends: no longer live, and counted ended once measuring."""
    st.live -= 1
    if st.warm:
        st.ended += 1


cdef int spawn(State* st) noexcept nogil:
    cdef int32_t slot = new_session(st)
    cdef int64_t base
    if slot < 0:
        return -1
    base = <int64_t> slot * st.n_attrs
    clear_attrs(&st.sess.attrs[base], st.n_attrs)
    st.sess.attrs[base + st.slot_serial] = <double> st.sess.serial[slot]
    if st.trace_sessions > 0:
        # replay: the schedule's session; ordered: serial mod L; otherwise one draw on the trace stream
        if st.arrival_kind == A_REPLAY:     # (no replay_of: arrival i replays corpus session i)
            st.sess.trace_of[slot] = st.replay_of[st.replay_spawned] if st.replay_of != NULL else st.replay_spawned
            st.replay_spawned += 1
        elif st.trace_ordered:
            st.sess.trace_of[slot] = st.sess.serial[slot] % st.trace_sessions
        else:
            st.sess.trace_of[slot] = sq_rng_range_u32(&st.rng_trace, 0, <uint32_t> (st.trace_sessions - 1))
        st.sess.trace_next[slot] = 0
    st.sess.pc[slot] = st.session_pc
    if st.session_extras or st.sess.pools_touched[slot]:
        reset_extras(st, slot)
    st.sess.alive[slot] = 1
    if st.tl != NULL:
        tl_session_start(st, slot)
    if st.init_pc >= 0:
        exec_block(st, st.init_pc, slot, &st.rng_workload)
        if st.error.code:
            return -1
    return ready_push(st, slot)


cdef int end_holds(State* st, int32_t slot) noexcept nogil:
    """An ending session's holds, released innermost first (each caching per its clause), its
    growth and its leases."""
    cdef int32_t d
    if st.sess.grow_at[slot] >= 0:
        leave_growers(st, slot)
    for d in range(st.sess.depth[slot] - 1, -1, -1):
        release_frame(st, slot, d, False)
        if st.error.code:
            return -1
    st.sess.depth[slot] = 0
    end_leases(st, slot)
    return -1 if st.error.code else 0


cdef inline int end_session(State* st, int32_t slot) noexcept nogil:
    # without hold statements a session never holds, grows or leases
    if st.n_holds > 0 and end_holds(st, slot) < 0:
        return -1
    if st.tl != NULL:
        tl_session_end(st, slot)
    st.sess.alive[slot] = 0
    session_out(st)
    st.sess.spare[st.sess.nspare] = slot
    st.sess.nspare += 1
    if st.arrival_kind == A_CLOSED:
        return spawn(st)
    return 0


cdef inline int record(State* st, int32_t obs, double v, int32_t slot) noexcept nogil:
    """The session in `slot` observes v (record_as with its serial and turn)."""
    return record_as(st, obs, v, st.sess.serial[slot], st.sess.attrs[<int64_t> slot * st.n_attrs + st.slot_turn])


cdef inline int record_as(State* st, int32_t obs, double v, int64_t serial, double turn) noexcept nogil:
    """Observe `obs` records v, by the session of this serial at this turn (its `turn` attribute)."""
    cdef Observe* o = &st.observes[obs]
    cdef int64_t n = o.values.n
    cdef double d
    if not st.keep_samples:
        return record_summary(st, o, v)
    if charge(st, 24) < 0:         # value, time, serial, turn
        return -1
    # Welford's step for the (n+1)-th value, as sq.results._stats.running_add takes it: the
    # division chain runs here, hidden among the events, not as one long chain in the report
    d = v - o.mean
    o.mean += d / <double> (n + 1)
    o.m2 += d * (v - o.mean)
    # the common case: room in the arrays, a serial that fits 4 bytes and turn 0 (not stored)
    if n < o.room and serial <= NARROW_SERIAL_MAX and not (turn >= 1.0):
        o.values.p[n] = v
        o.times.p[n] = st.now
        o.serials.p32[n] = <int32_t> serial
        n += 1
        o.values.n = o.times.n = o.serials.n = o.turns.n = n
        return 0
    return record_row(st, o, v, serial, turn)


cdef int record_row(State* st, Observe* o, double v, int64_t serial, double turn) noexcept nogil:
    """`record`'s sample appended to each array (growing, widening the serials or storing the
    turns as needed), then the room it leaves for the common case."""
    if darr_push(&o.values, v) < 0 or darr_push(&o.times, st.now) < 0 \
            or serials_push(&o.serials, serial) < 0 \
            or turns_push(&o.turns, <uint32_t> turn_of(turn)) < 0:
        fail(st, E_MEMORY, -1, 0, 0, 0)
        return -1
    o.room = 0
    if o.serials.p64 == NULL and o.turns.p == NULL:
        o.room = min(o.values.cap, min(o.times.cap, o.serials.cap))
    return 0


cdef void exec_block(State* st, int32_t pc, int32_t slot, sq_rng* rng) noexcept nogil:
    """An `init` or `turn` block: sets and observes only, on the workload stream."""
    cdef const int32_t* code = st.stmts
    cdef double v
    while code[pc] != S_RET:
        v = evaluate(st, code[pc + SV_EXPR], slot, rng, NAN)
        if st.error.code:
            return
        if code[pc] == S_SET:
            st.sess.attrs[<int64_t> slot * st.n_attrs + code[pc + SV_TARGET]] = v
        elif st.warm:
            if record(st, code[pc + SV_TARGET], v, slot) < 0:
                return
        pc += SV_LEN


cdef void next_trace_turn(State* st, int32_t slot, int64_t base) noexcept nogil:
    """Load the session's next trace turn; past the last one only `more` (0) changes."""
    cdef int64_t t = st.sess.trace_of[slot], k = st.sess.trace_next[slot]
    # no trace_len: every corpus session is one turn, session t's on row t
    cdef int64_t count = st.trace_len[t] if st.trace_len != NULL else 1
    cdef int64_t row = (st.trace_start[t] if st.trace_start != NULL else t) + k
    cdef const TraceTurn* turn
    if k < count:
        turn = &(<const TraceTurn*> st.trace_turns)[row]
        st.sess.attrs[base + st.slot_new] = turn.new
        st.sess.attrs[base + st.slot_out] = turn.out
        st.sess.attrs[base + st.slot_think] = turn.think
        st.sess.attrs[base + st.slot_forced] = turn.forced
        st.sess.trace_next[slot] = k + 1
        st.sess.attrs[base + st.slot_more] = 1.0 if k + 1 < count else 0.0
        if st.pfx_cap >= 0:
            prefix_lookup(st, base, row)
    else:
        st.sess.attrs[base + st.slot_more] = 0.0


cdef void prefix_lookup(State* st, int64_t base, int64_t row) noexcept nogil:
    """`trace "F" prefix(C)` (an extension; sq/traces/prefix.py is the same rule over a trace): the
    turn's leading blocks already resident are its `hit_blocks`; then all its blocks become most
    recently used, and the least recently used go while more than C are resident."""
    cdef int64_t lo = st.pfx_off[row], n = st.pfx_off[row + 1] - lo, hits = 0, j, b
    while hits < n and st.pfx_prev[st.pfx_ids[lo + hits]] != -2:
        hits += 1
    for j in range(n):
        b = st.pfx_ids[lo + j]
        if st.pfx_prev[b] != -2:
            prefix_unlink(st, b)
        else:
            st.pfx_count += 1
        st.pfx_prev[b] = st.pfx_tail            # to the back: most recently used
        st.pfx_next[b] = -1
        if st.pfx_tail >= 0:
            st.pfx_next[st.pfx_tail] = b
        else:
            st.pfx_head = b
        st.pfx_tail = b
    while st.pfx_count > st.pfx_cap:
        b = st.pfx_head
        prefix_unlink(st, b)
        st.pfx_prev[b] = -2
        st.pfx_count -= 1
    st.sess.attrs[base + st.slot_hit_blocks] = <double> hits
    st.sess.attrs[base + st.slot_prompt_blocks] = <double> n


cdef inline void prefix_unlink(State* st, int64_t b) noexcept nogil:
    cdef int64_t p = st.pfx_prev[b], q = st.pfx_next[b]
    if p >= 0:
        st.pfx_next[p] = q
    else:
        st.pfx_head = q
    if q >= 0:
        st.pfx_prev[q] = p
    else:
        st.pfx_tail = p


# What exec_session dispatches on, per statement: its opcode (StmtOp), or a form of it decided once
# per run at set-up (stmt_forms) that skips what the general statement would test every time.
cdef enum StmtForm:
    F_RUN_ONE = 64     # S_RUN of one fifo, ps or delay stage: no index, `growing`, other stages or mode
    F_SET_NOW          # S_SET of `now` (ExprShape XS_NOW): the clock, without an evaluation
    F_OBSERVE_SINCE    # S_OBSERVE of `now - attribute` (XS_SINCE): a response time, without an evaluation


cdef unsigned char stmt_form(State* st, const int32_t* c, int64_t n) noexcept nogil:
    """The form of the statement whose code starts at c (n words from c on, which bound what is
    read). After the stages and the expressions' shapes are set up."""
    cdef int32_t k
    if c[0] == S_SET and n > SV_EXPR and 0 <= c[0 + SV_EXPR] < st.n_code \
            and st.shapes[c[0 + SV_EXPR]] == XS_NOW:
        return F_SET_NOW
    if c[0] == S_OBSERVE and n > SV_EXPR and 0 <= c[0 + SV_EXPR] < st.n_code \
            and st.shapes[c[0 + SV_EXPR]] == XS_SINCE:
        return F_OBSERVE_SINCE
    if c[0] == S_RUN and n > SR_NALSO and c[0 + SR_STAGE + REF_INDEX] < 0 and c[0 + SR_GROWING + REF_BASE] < 0 \
            and c[0 + SR_NALSO] == 0 and c[0 + SR_MODE] == M_PLAIN:
        k = c[0 + SR_STAGE + REF_BASE]
        if 0 <= k < st.n_stages and st.stages[k].kind != K_STEP and not (st.stages[k].share_cap > 0):
            return F_RUN_ONE
    return <unsigned char> c[0] if 0 < c[0] < F_RUN_ONE else 0     # 0: no statement (exec_session stops)


cdef unsigned char* stmt_forms(State* st, int64_t n) noexcept nogil:
    """Every statement's form, by its pc (NULL: out of memory). Each word is classified as if a
    statement started there: only the words that do start one are ever read. After the stages
    are set up (a run's form depends on its stage's kind)."""
    cdef unsigned char* forms = <unsigned char*> plan_table(st, n + 1, 1, TABLE_ZERO)
    cdef int64_t pc
    if forms == NULL:
        return NULL
    for pc in range(n):
        forms[pc] = stmt_form(st, st.stmts + pc, n - pc)
    return forms


# choose_best stays out of exec_session's line (noinline: `nm` lists it): inlined there, with the
# load shape's code, it cost the one-replica rows' exec_session 7 % (vllm-lo), which runs no choose.
cdef extern from *:
    """
    struct __pyx_t_2sq_6engine_6_state_State;
    static __attribute__((noinline)) int32_t __pyx_f_2sq_7_engine_choose_best(
        struct __pyx_t_2sq_6engine_6_state_State *, int32_t const *, int32_t, int, int64_t);
    """


cdef int32_t choose_best(State* st, const int32_t* code, int32_t pc, int slot, int64_t n) noexcept nogil:
    """The candidate `choose` (the statement at pc, n candidates) picks: the first whose keys are
    the least, compared in order (a NaN key is never less); -1: a key's evaluation failed. A last
    key that is one attribute is not evaluated: the candidate itself (`by (load, r)`) is larger
    for a later candidate, and any other attribute the same (evaluating keys writes nothing, and
    setting the candidate writes only it), so it never makes a later candidate less, and reading
    an attribute neither fails nor writes. One key of a router's load shape (XS_POOLS_ADD) is
    its value, as evaluate's stack machine takes it, and where both its pools are indexed by the
    candidate itself, least_loaded's."""
    cdef int64_t base = <int64_t> slot * st.n_attrs, cand
    cdef int32_t var = code[pc + SC_VAR], nkeys = code[pc + SC_NKEYS], off, i, best = 0
    cdef double* keys = st.keys
    cdef double v, least = 0.0
    cdef bint smaller
    if nkeys > 0 and st.attr_row == NULL:
        off = code[pc + SC_KEYS + nkeys - 1]
        if st.shapes[off] == XS_ATTR:
            nkeys -= 1
    if nkeys == 1 and st.shapes[code[pc + SC_KEYS]] == XS_POOLS_ADD:
        off = code[pc + SC_KEYS]
        if by_candidate(st, st.code + off, var, slot, n):
            return least_loaded(st, st.code + off, slot, n)
        for cand in range(n):
            st.sess.attrs[base + var] = <double> cand
            v = pools_add_value(st, st.code + off, slot)
            if st.error.code:
                return -1
            if cand == 0 or v < least:
                best = <int32_t> cand
                least = v
        return best
    for cand in range(n):
        st.sess.attrs[base + var] = <double> cand
        for i in range(nkeys):
            keys[nkeys + i] = evaluate(st, code[pc + SC_KEYS + i], slot, &st.rng_session, NAN)
            if st.error.code:
                return -1
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
    return best


cdef inline bint by_candidate(State* st, const int32_t* c, int32_t var, int slot, int64_t n) noexcept nogil:
    """Whether choose_best's XS_POOLS_ADD key at c indexes both its pools by the candidate `var`
    itself, each index in range for all n candidates, in a session's own attributes (no
    snapshot): then no candidate's key fails (member's test), and least_loaded may pick."""
    return (st.attr_row == NULL and slot >= 0 and c[0 + XONE_ARG] == var and c[XP_ATTR2 + XONE_ARG] == var
            and n <= c[XP_POOL1 + XREF_COUNT] and n <= c[XP_POOL2 + XREF_COUNT])


cdef inline int32_t least_loaded(State* st, const int32_t* c, int slot, int64_t n) noexcept nogil:
    """choose_best's pick by one XS_POOLS_ADD key whose pools are indexed by the candidate
    (by_candidate): each candidate's key is pools_add_value's, the two pool functions of pools
    base + cand added, compared as choose_best does (the first least; a NaN never less). Exact:
    the index member would take from the candidate's attribute is cand itself (a whole double
    below the count: truncated, in range), and the pool functions read no attribute, so the
    candidate need not be written before its key; exec_session writes the one picked after."""
    cdef int fn1 = c[XP_POOL1 + XREF_FN], fn2 = c[XP_POOL2 + XREF_FN]
    cdef Pool* p1 = &st.pools[c[XP_POOL1 + XREF_BASE]]
    cdef Pool* p2 = &st.pools[c[XP_POOL2 + XREF_BASE]]
    if fn1 == PF_HOLDERS and fn2 == PF_QUEUED:      # (`holders(seqs[r]) + queued(seqs[r])`)
        return least_of(st, p1, PF_HOLDERS, p2, PF_QUEUED, slot, n)
    return least_of(st, p1, fn1, p2, fn2, slot, n)


cdef inline int32_t least_of(State* st, Pool* p1, int fn1, Pool* p2, int fn2, int slot, int64_t n) noexcept nogil:
    """least_loaded's loop: the first candidate of the least fn1(p1[cand]) + fn2(p2[cand])
    (inlined, each call with its functions written out folds them to the fields they read)."""
    cdef int32_t best = 0
    cdef int64_t cand
    cdef double load, lightest = 0.0
    for cand in range(n):
        load = pool_value(st, p1 + cand, fn1, slot) + pool_value(st, p2 + cand, fn2, slot)
        if cand == 0 or load < lightest:
            best = <int32_t> cand
            lightest = load
    return best


cdef void exec_session(State* st, int32_t slot) noexcept nogil:
    """Run a ready session's statements until it joins a stage, yields or ends."""
    cdef const int32_t* code = st.stmts
    cdef int64_t base = <int64_t> slot * st.n_attrs
    cdef int32_t pc = st.sess.pc[slot], op, nkeys, i, kk, best
    cdef int64_t member_k, j
    cdef double v, w
    while True:
        if stuck(st, slot, pc):
            return
        op = st.forms[pc]
        if op == S_SET:
            v = evaluate(st, code[pc + SV_EXPR], slot, &st.rng_session, NAN)
            if st.error.code:
                return
            st.sess.attrs[base + code[pc + SV_TARGET]] = v
            pc += SV_LEN
        elif op == S_OBSERVE:
            v = evaluate(st, code[pc + SV_EXPR], slot, &st.rng_session, NAN)
            if st.error.code:
                return
            if st.warm and record(st, code[pc + SV_TARGET], v, slot) < 0:
                return
            pc += SV_LEN
        elif op == S_TURN:
            st.sess.attrs[base + st.slot_turn] += 1.0
            if st.warm:
                st.turns += 1
            if st.tl != NULL:
                tl_turn(st, slot)
            if st.trace_sessions > 0:
                next_trace_turn(st, slot, base)
            if st.turn_pc >= 0:
                exec_block(st, st.turn_pc, slot, &st.rng_workload)
                if st.error.code:
                    return
            pc += S_BARE_LEN
        elif op == S_END:
            end_session(st, slot)
            return
        elif op == F_SET_NOW:
            st.sess.attrs[base + code[pc + SV_TARGET]] = st.now
            pc += SV_LEN
        elif op == F_OBSERVE_SINCE:
            if st.warm and record(st, code[pc + SV_TARGET], since_value(st, st.code + code[pc + SV_EXPR], slot),
                                  slot) < 0:
                return
            pc += SV_LEN
        elif op == F_RUN_ONE:
            # a service drawn with a constant argument (`~exp(1)`) is drawn here, without evaluate's call
            if st.shapes[code[pc + SR_WORK]] == XS_DRAW1:
                w = draw1_value(st, st.code + code[pc + SR_WORK], &st.rng_session)
            else:
                w = evaluate(st, code[pc + SR_WORK], slot, &st.rng_session, NAN)
                if st.error.code:
                    return
            st.sess.pc[slot] = pc + SR_ALSO
            if not (w > 0):
                ready_push(st, slot)     # zero work: no job, but the session yields (as S_RUN)
            else:
                run_one(st, code[pc + SR_STAGE + REF_BASE], slot, w)
            return
        elif op == S_JUMP:
            pc = code[pc + SJ_TARGET]
        elif op == S_BRANCH:
            v = evaluate(st, code[pc + SB_GUARD], slot, &st.rng_session, NAN)
            if st.error.code:
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
            if st.error.code:
                return
            best = choose_best(st, code, pc, slot, saturate_i64(v))
            if best < 0:
                return
            st.sess.attrs[base + code[pc + SC_VAR]] = <double> best
            pc += SC_KEYS + nkeys
        elif op == S_HOLD:
            st.sess.pc[slot] = pc + SH_LEN
            hold_statement(st, slot, code[pc + SH_HOLD], False)
            return                       # queued (or rejected and ended)
        elif op == S_HOLD_END:
            release_frame(st, slot, st.sess.depth[slot] - 1, True)
            if st.error.code:
                return
            st.sess.depth[slot] -= 1
            st.sess.attrs[base + st.slot_computed] = 0.0
            try_every_pool(st)
            if st.error.code:
                return
            pc += SH_LEN
        elif op == S_GROW or op == S_LOAD:
            member_k = 0
            if code[pc + SPOOL_REF + REF_INDEX] >= 0:
                v = evaluate(st, code[pc + SPOOL_REF + REF_INDEX], slot, &st.rng_session, NAN)
                if st.error.code:
                    return
                member_k = member(st, v, code[pc + SPOOL_REF + REF_COUNT], E_POOL_INDEX, slot)
                if member_k < 0:
                    return
            w = clamp0(evaluate(st, code[pc + SPOOL_AMOUNT], slot, &st.rng_session, NAN))
            if st.error.code:
                return
            kk = <int32_t> (code[pc + SPOOL_REF + REF_BASE] + member_k)
            j = innermost(st, slot, kk)
            if op == S_GROW:
                if j < 0:
                    fail(st, E_GROW_OUTSIDE, slot, 0, code[pc + SPOOL_SITE], 0)
                    return
                pc += SPOOL_AMOUNT_LEN
                st.sess.pc[slot] = pc
                if not grow_statement(st, slot, kk, w):
                    return                   # waits among the growers, or was its own victim
            else:
                if j < 0:
                    fail(st, E_LOAD_OUTSIDE, slot, 0, code[pc + SPOOL_SITE] + 1, 0)
                    return
                if st.sess.frame_pos[j] + w > st.sess.frame_alloc[j] + EPS:
                    fail(st, E_LOAD_FIT, slot, st.sess.frame_alloc[j], code[pc + SPOOL_SITE], 0)
                    st.error.value2 = st.sess.frame_pos[j]
                    st.error.value3 = w
                    return
                st.sess.frame_pos[j] += w
                mark_grown(st, j)
                pc += SPOOL_AMOUNT_LEN
        elif op == S_RELEASE or op == S_DROP:
            member_k = 0
            if code[pc + SPOOL_REF + REF_INDEX] >= 0:
                v = evaluate(st, code[pc + SPOOL_REF + REF_INDEX], slot, &st.rng_session, NAN)
                if st.error.code:
                    return
                member_k = member(st, v, code[pc + SPOOL_REF + REF_COUNT], E_POOL_INDEX, slot)
                if member_k < 0:
                    return
            if op == S_DROP:
                drop_entry(st, &st.pools[code[pc + SPOOL_REF + REF_BASE] + member_k], st.sess.serial[slot])
            else:
                release_pool(st, slot, <int32_t> (code[pc + SPOOL_REF + REF_BASE] + member_k))
                if st.error.code:
                    return
                try_every_pool(st)
                if st.error.code:
                    return
            pc += SPOOL_LEN
        elif op == S_RUN:
            member_k = 0
            if code[pc + SR_STAGE + REF_INDEX] >= 0:
                v = evaluate(st, code[pc + SR_STAGE + REF_INDEX], slot, &st.rng_session, NAN)
                if st.error.code:
                    return
                member_k = member(st, v, code[pc + SR_STAGE + REF_COUNT], E_STAGE_INDEX, slot)
                if member_k < 0:
                    return
            w = evaluate(st, code[pc + SR_WORK], slot, &st.rng_session, NAN)
            if st.error.code:
                return
            kk = -1
            if code[pc + SR_GROWING + REF_BASE] >= 0:
                # `growing P`: the hold it grows must be open when the run starts
                j = 0
                if code[pc + SR_GROWING + REF_INDEX] >= 0:
                    v = evaluate(st, code[pc + SR_GROWING + REF_INDEX], slot, &st.rng_session, NAN)
                    if st.error.code:
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
            st.flows.scratch[0] = <int32_t> (code[pc + SR_STAGE + REF_BASE] + member_k)
            for i in range(nkeys):
                j = 0
                if code[pc + SR_ALSO + REF_LEN * i + REF_INDEX] >= 0:
                    v = evaluate(st, code[pc + SR_ALSO + REF_LEN * i + REF_INDEX], slot, &st.rng_session, NAN)
                    if st.error.code:
                        return
                    j = member(st, v, code[pc + SR_ALSO + REF_LEN * i + REF_COUNT], E_STAGE_INDEX, slot)
                    if j < 0:
                        return
                st.flows.scratch[1 + i] = <int32_t> (code[pc + SR_ALSO + REF_LEN * i + REF_BASE] + j)
            st.sess.pc[slot] = pc + SR_ALSO + REF_LEN * nkeys
            if not (w > 0):
                # zero work: no job, but the session yields to everyone already ready
                ready_push(st, slot)
                return
            if st.stages[st.flows.scratch[0]].share_cap > 0:
                start_flow(st, st.flows.scratch, nkeys + 1, slot, w)
            else:
                start_run(st, st.flows.scratch[0], slot, w, code[pc + SR_MODE], kk)
            return
        else:
            return

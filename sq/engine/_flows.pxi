# Flows over shared stages (spec chapter 06): one job holding several `ps` stages at one rate.
# Included by sq/_engine.pyx; every function here runs without the GIL.


cdef bint flows_new(State* st, int32_t max_st, int maxmin) noexcept nogil:
    """The flows' per-stage tables (no flow yet). False: out of memory."""
    cdef Flows* fs = &st.flows
    fs.max_st = max_st
    fs.maxmin = maxmin
    fs.touched = <char*> plan_table(st, st.n_stages + 1, sizeof(char), TABLE_ZERO)
    fs.left = <double*> plan_table(st, st.n_stages + 1, sizeof(double), TABLE_ZERO)
    fs.rising = <double*> plan_table(st, st.n_stages + 1, sizeof(double), TABLE_ZERO)
    fs.scratch = <int32_t*> plan_table(st, fs.max_st + 1, sizeof(int32_t), TABLE_ZERO)
    return fs.touched != NULL and fs.left != NULL and fs.rising != NULL and fs.scratch != NULL


cdef bint flow_tables(State* st, Tables* t) noexcept nogil:
    """Every per-flow table (Flows), the one list of them: see Tables."""
    cdef Flows* fs = &st.flows
    return (table(t, <void**> &fs.stage, st.flows.max_st * sizeof(int32_t))
            and table(t, <void**> &fs.nst, sizeof(int32_t))
            and table(t, <void**> &fs.rem, sizeof(double))
            and table(t, <void**> &fs.rate, sizeof(double))
            and table(t, <void**> &fs.start, sizeof(double))
            and table(t, <void**> &fs.id, sizeof(int64_t))
            and table(t, <void**> &fs.owner, sizeof(int32_t))
            and table(t, <void**> &fs.active, sizeof(char))
            and table(t, <void**> &fs.frozen, sizeof(char))
            and table(t, <void**> &fs.spare, sizeof(int32_t))
            and table(t, <void**> &fs.order, sizeof(int32_t)))


cdef void flows_free(State* st) noexcept nogil:
    spare_keep(st, flow_tables)     # (the per-stage tables are the set-up's: plan_table)


cdef int32_t flow_alloc(State* st) noexcept nogil:
    cdef int64_t cap
    cdef int32_t f
    if st.flows.nspare > 0:
        st.flows.nspare -= 1
        return st.flows.spare[st.flows.nspare]
    if st.flows.n == st.flows.cap:
        cap = st.flows.cap * 2 + 16
        if not resize(st, flow_tables, cap):
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return -1
        st.flows.cap = cap
    f = <int32_t> st.flows.n
    st.flows.n += 1
    return f


cdef void flows_advance(State* st) noexcept nogil:
    """Bring every flow's remaining work to now."""
    cdef double dt = st.now - st.flows.last
    cdef int64_t f
    if dt == 0 and st.flows.finite:
        return      # finite rates x 0: nothing moves (flows started in one instant stay linear)
    for f in range(st.flows.n):
        if st.flows.active[f]:
            st.flows.rem[f] = fmax(0.0, st.flows.rem[f] - st.flows.rate[f] * dt)
    st.flows.last = st.now


cdef void flow_touch(State* st, int32_t f) noexcept nogil:
    cdef int32_t i
    for i in range(st.flows.nst[f]):
        st.flows.touched[st.flows.stage[f * st.flows.max_st + i]] = 1
    st.flows.dirty = 1


cdef int start_flow(State* st, int32_t* stages, int32_t n, int32_t owner, double w) noexcept nogil:
    cdef int32_t f, i
    flows_advance(st)
    f = flow_alloc(st)
    if f < 0:
        return -1
    st.flows.nst[f] = n
    for i in range(n):
        st.flows.stage[f * st.flows.max_st + i] = stages[i]
        st.stages[stages[i]].n += 1
        mark_row(st.stages_sampled, stages[i])
    st.flows.rem[f] = w
    st.flows.rate[f] = 0.0
    st.flows.start[f] = st.now
    st.flows.id[f] = st.next_job_id
    st.next_job_id += 1
    st.flows.owner[f] = owner
    st.flows.active[f] = 1
    st.flows.order[st.flows.norder] = f      # ids only grow: appending keeps the order by id
    st.flows.norder += 1
    if owner >= 0:
        st.sess.flow[owner] = f
    flow_touch(st, f)
    return 0


cdef void flow_leave(State* st, int32_t f, bint completed) noexcept nogil:
    """The flow leaves all its stages; completed: a completion at each (wait 0)."""
    cdef int32_t i, k
    cdef Stage* s
    cdef double service = st.now - st.flows.start[f]
    flow_touch(st, f)
    for i in range(st.flows.nst[f]):
        k = st.flows.stage[f * st.flows.max_st + i]
        s = &st.stages[k]
        s.n -= 1
        if completed:
            if st.warm:
                running_add(&s.waits, 0.0)
                running_add(&s.services, service)
            estimate(s, st.flows.start[f], 0.0, service)
    st.flows.active[f] = 0
    order_remove(st, f)
    if st.flows.owner[f] >= 0:
        st.sess.flow[st.flows.owner[f]] = -1
    st.flows.spare[st.flows.nspare] = f
    st.flows.nspare += 1


cdef void order_remove(State* st, int32_t f) noexcept nogil:
    cdef int64_t i = st.flows.norder - 1
    while i >= 0 and st.flows.order[i] != f:
        i -= 1
    if i >= 0:
        memmove(&st.flows.order[i], &st.flows.order[i + 1], (st.flows.norder - i - 1) * sizeof(int32_t))
        st.flows.norder -= 1


cdef void flow_finish(State* st, Event* e) noexcept nogil:
    cdef int32_t f = <int32_t> e.b, owner
    if e.c != st.flows.epoch or not st.flows.active[f]:
        return                      # superseded by a recomputation
    flows_advance(st)
    owner = st.flows.owner[f]
    flow_leave(st, f, True)
    if owner >= 0 and not st.error.code:
        ready_push(st, owner)


cdef void remove_flow(State* st, int32_t f) noexcept nogil:
    flows_advance(st)
    flow_leave(st, f, False)


cdef inline bint flow_on(State* st, int32_t f, int32_t k) noexcept nogil:
    cdef int32_t i
    for i in range(st.flows.nst[f]):
        if st.flows.stage[f * st.flows.max_st + i] == k:
            return True
    return False


cdef void flows_recompute(State* st) noexcept nogil:
    """Rates for the flows of the touched stages' components (§6.4-6.5); one live finish event."""
    cdef int64_t f, o, best = -1
    cdef int32_t i, k, pick
    cdef bint grew = True
    cdef double share, r, t, best_t = INFINITY
    cdef double* left = st.flows.left
    cdef double* rising = st.flows.rising
    flows_advance(st)
    st.flows.dirty = 0
    # the component(s): touched stages closed under "shares a flow with"
    while grew:
        grew = False
        for f in range(st.flows.n):
            if not st.flows.active[f]:
                continue
            for i in range(st.flows.nst[f]):
                if st.flows.touched[st.flows.stage[f * st.flows.max_st + i]]:
                    for k in range(st.flows.nst[f]):
                        if not st.flows.touched[st.flows.stage[f * st.flows.max_st + k]]:
                            st.flows.touched[st.flows.stage[f * st.flows.max_st + k]] = 1
                            grew = True
                    break
    for f in range(st.flows.n):
        st.flows.frozen[f] = 1
        if st.flows.active[f] and st.flows.touched[st.flows.stage[f * st.flows.max_st]]:
            st.flows.frozen[f] = 0     # in F: its rate is set now
    if st.flows.maxmin:
        for k in range(st.n_stages):
            left[k] = st.stages[k].share_cap
            rising[k] = 0
        for f in range(st.flows.n):
            if not st.flows.frozen[f]:
                for i in range(st.flows.nst[f]):
                    rising[st.flows.stage[f * st.flows.max_st + i]] += 1
        while True:
            pick = -1
            for k in range(st.n_stages):
                if st.flows.touched[k] and rising[k] > 0:
                    if pick < 0 or left[k] / rising[k] < left[pick] / rising[pick]:
                        pick = k
            if pick < 0:
                break
            share = fmax(0.0, left[pick] / rising[pick])
            # every flow frozen here subtracts the same share, so the order they are taken in
            # (0.1.2: by id) cannot change a result: one pass in slot order
            for f in range(st.flows.n):
                if st.flows.frozen[f] or not flow_on(st, <int32_t> f, pick):
                    continue
                st.flows.rate[f] = share
                st.flows.frozen[f] = 1
                for i in range(st.flows.nst[f]):
                    k = st.flows.stage[f * st.flows.max_st + i]
                    left[k] -= share
                    rising[k] -= 1
    else:
        for f in range(st.flows.n):
            if not st.flows.frozen[f]:
                r = INFINITY
                for i in range(st.flows.nst[f]):
                    k = st.flows.stage[f * st.flows.max_st + i]
                    r = fmin(r, st.stages[k].share_cap / <double> st.stages[k].n)
                st.flows.rate[f] = r
    for k in range(st.n_stages):
        st.flows.touched[k] = 0
        st.stages[k].rate_sum = 0.0
    best = -1
    for o in range(st.flows.norder):       # a stage's rates summed in flow id order, as 0.1.2
        f = st.flows.order[o]
        for i in range(st.flows.nst[f]):
            k = st.flows.stage[f * st.flows.max_st + i]
            st.stages[k].rate_sum += st.flows.rate[f]
    for f in range(st.flows.n):
        if not st.flows.active[f]:
            continue
        if st.flows.rate[f] > 0:
            t = st.now + st.flows.rem[f] / st.flows.rate[f]
            if best < 0 or t < best_t or (t == best_t and st.flows.id[f] < st.flows.id[best]):
                best = f
                best_t = t
    st.flows.epoch += 1
    if best >= 0:
        schedule(st, best_t, EV_FLOW_END, 0, best, st.flows.epoch)


cdef double flow_work(State* st, int32_t k) noexcept nogil:
    """A shared stage's unfinished work: its flows' in id order, from -0.0 (0.1.2's empty sum)."""
    cdef int64_t o
    cdef int32_t f
    cdef double total = -0.0
    for o in range(st.flows.norder):
        f = st.flows.order[o]
        if flow_on(st, f, k):
            total += fmax(0.0, st.flows.rem[f] - st.flows.rate[f] * (st.now - st.flows.last))
    return total

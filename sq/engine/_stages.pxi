# Stages (spec 04 §4.0–4.4): fifo, ps and delay jobs, their slots, estimators and finishes.
# Included by sq/_engine.pyx (one translation unit, so the C compiler inlines across files);
# every function here runs without the GIL.


# ---- jobs: slots reused ----------------------------------------------------------------
cdef bint job_tables(State* st, Tables* t) noexcept nogil:
    """Every per-job table (Jobs), the one list of them: see Tables."""
    cdef Jobs* js = &st.jobs
    return (table(t, <void**> &js.rec, sizeof(JobRec))
            and table(t, <void**> &js.stage, sizeof(int32_t))
            and table(t, <void**> &js.enq, sizeof(double))
            and table(t, <void**> &js.start, sizeof(double))
            and table(t, <void**> &js.end, sizeof(double))
            and table(t, <void**> &js.started, sizeof(char))
            and table(t, <void**> &js.units_at, sizeof(int64_t))
            and table(t, <void**> &js.served, sizeof(int64_t))
            and table(t, <void**> &js.spare, sizeof(int32_t)))


cdef int32_t job_alloc(State* st) noexcept nogil:
    cdef int64_t cap
    cdef int32_t j
    if st.jobs.nspare > 0:
        st.jobs.nspare -= 1
        return st.jobs.spare[st.jobs.nspare]
    if st.jobs.high == st.jobs.cap:
        cap = st.jobs.cap * 2 if st.jobs.cap else 64
        if not resize_charged(st, job_tables, st.jobs.cap, cap):
            return -1
        st.jobs.cap = cap
    j = <int32_t> st.jobs.high
    st.jobs.high += 1
    return j


cdef inline void job_free(State* st, int32_t j) noexcept nogil:
    st.jobs.rec[j].id = -1
    st.jobs.spare[st.jobs.nspare] = j
    st.jobs.nspare += 1


# ---- stages -------------------------------------------------------------------------------
cdef int start_run(State* st, int32_t k, int32_t slot, double w, int32_t mode, int32_t growing) noexcept nogil:
    cdef int32_t j
    if start_job(st, k, slot, w) < 0:
        return -1
    if mode != M_PLAIN:
        j = st.sess.job[slot]           # the job that just joined
        st.jobs.rec[j].mode = mode
        st.jobs.rec[j].growing = growing
    if st.stages[k].kind == K_STEP:
        resident_frames(st, st.sess.job[slot], st.stages[k].memory)
    return 0


cdef inline int32_t new_job(State* st, Stage* s, int32_t k, int32_t slot, double w) noexcept nogil:
    """A job of work w for the session in slot joins stage k (not yet queued or served)."""
    cdef int32_t j = job_alloc(st)
    if j < 0:
        return -1
    st.jobs.rec[j].owner = slot
    st.jobs.stage[j] = k
    st.jobs.rec[j].id = st.next_job_id
    st.next_job_id += 1
    st.jobs.rec[j].work = w
    st.jobs.enq[j] = st.now
    st.jobs.started[j] = 0
    if slot >= 0:
        st.sess.job[slot] = j
    if s.n == 0:
        # a stage is left out of the area samples only while it holds no job (sample_areas), and
        # every join marks it: one that already holds jobs is marked
        mark_row(st.stages_sampled, k)
    s.n += 1
    return j


cdef inline int join_fifo(State* st, Stage* s, int32_t k, int32_t j) noexcept nogil:
    """Job j at fifo stage k: served now if a server is free, else queued."""
    if s.busy < s.servers:
        return begin_service(st, s, k, j)
    return ring_push(st, &s.q, &s.qcap, &s.qhead, &s.qlen, j)


cdef inline int start_fifo(State* st, int32_t k, int32_t slot, double w) noexcept nogil:
    """`start_job` at a fifo stage, inline in the statement VM's one-stage `run`."""
    cdef Stage* s = &st.stages[k]
    cdef int32_t j = new_job(st, s, k, slot, w)
    if j < 0:
        return -1
    return join_fifo(st, s, k, j)


cdef inline int join_ps(State* st, Stage* s, int32_t k, int32_t j, double w) noexcept nogil:
    """Job j of work w at ps stage k: its tag is the virtual time at which its work is done."""
    s.V = ps_virtual(s, st.now)
    s.Vt = st.now
    st.jobs.start[j] = st.now
    st.jobs.started[j] = 1
    s.dirty = 1
    if st.tl != NULL:
        tl_service_start(st, k, j)
    return ps_push(st, s, s.V + w, st.jobs.rec[j].id, j)


cdef inline int start_ps(State* st, int32_t k, int32_t slot, double w) noexcept nogil:
    """`start_job` at a ps stage, inline in the statement VM's one-stage `run`."""
    cdef Stage* s = &st.stages[k]
    cdef int32_t j = new_job(st, s, k, slot, w)
    if j < 0:
        return -1
    return join_ps(st, s, k, j, w)


cdef inline int run_one(State* st, int32_t k, int32_t slot, double w) noexcept nogil:
    """The session in `slot` runs work w > 0 at fifo, ps or delay stage k (a `run` of one stage:
    the statement VM's F_RUN_ONE, and a lone queue's run)."""
    if st.stages[k].kind == K_FIFO:
        return start_fifo(st, k, slot, w)
    if st.stages[k].kind == K_PS:
        return start_ps(st, k, slot, w)
    return start_job(st, k, slot, w)


cdef int start_job(State* st, int32_t k, int32_t slot, double w) noexcept nogil:
    """A `run` with positive work joins stage k."""
    cdef Stage* s = &st.stages[k]
    cdef int32_t j = new_job(st, s, k, slot, w)
    if j < 0:
        return -1
    if s.kind == K_PS:
        return join_ps(st, s, k, j, w)
    if s.kind == K_STEP:
        # a step job starts the moment it joins the residents; only step code reads its mode,
        # growth and serving pass
        st.jobs.rec[j].mode = M_PLAIN
        st.jobs.rec[j].growing = -1
        st.jobs.served[j] = -1
        st.jobs.start[j] = st.now
        st.jobs.started[j] = 1
        return join_residents(st, s, j)
    if s.kind == K_FIFO:
        return join_fifo(st, s, k, j)
    return begin_service(st, s, k, j)     # delay


cdef inline int begin_service(State* st, Stage* s, int32_t k, int32_t j) noexcept nogil:
    if s.kind == K_FIFO:
        s.busy += 1
    cdef double end = st.now + st.jobs.rec[j].work    # kept in a register: the stores may alias
    st.jobs.start[j] = st.now
    st.jobs.end[j] = end
    st.jobs.started[j] = 1
    if st.tl != NULL:
        tl_service_start(st, k, j)
    return push_event(st, end, EV_FINISH, k, j, st.jobs.rec[j].id)


cdef int complete_job(State* st, Stage* s, int32_t j) noexcept nogil:
    """`finish_job` out of line (a ps stage's and a step stage's completions)."""
    return finish_job(st, s, j)


cdef inline int finish_job(State* st, Stage* s, int32_t j) noexcept nogil:
    """The job is done (job_done) and its owner ready. Inline in a fifo or delay stage's finish
    (in run_loop): no call per completion."""
    cdef int32_t owner = job_done(st, s, j)
    if owner < 0:
        return 0                    # a spill's transfer: nobody waits for it
    return ready_push(st, owner)


cdef inline int32_t job_done(State* st, Stage* s, int32_t j) noexcept nogil:
    """The job is done: record its wait and service, update the estimators, free it. Returns its
    owner's slot (-1: a spill's transfer, nobody's)."""
    cdef int32_t owner = st.jobs.rec[j].owner
    s.n -= 1
    if owner >= 0:
        st.sess.job[owner] = -1
    job_measured(st, s, st.jobs.enq[j], st.jobs.start[j])
    if st.tl != NULL and s.kind != K_STEP:      # a step stage's iterations are its timeline
        tl_service_end(st, <int32_t> (s - st.stages), j, "job" if owner >= 0 else "transfer")
    job_free(st, j)
    return owner


cdef inline void job_measured(State* st, Stage* s, double enq, double start) noexcept nogil:
    """A job of stage s that joined at `enq` and started at `start` is done now: its wait and
    service, in the stage's means and estimators."""
    cdef double wait = start - enq, service = st.now - start
    if st.warm:
        running_add(&s.waits, wait)
        running_add(&s.services, service)
    if st.estimates:
        estimate(s, start, wait, service)


cdef inline double ewma(double mean, double x) noexcept nogil:
    # (1 - a) mean + a x, in this order: as 0.1.2 rounds it (mean + a (x - mean) differs in the last bits)
    return (1.0 - EWMA) * mean + EWMA * x


cdef void estimate(Stage* s, double start, double wait, double service) noexcept nogil:
    # exponentially weighted averages, each seeded by its first observation
    cdef double gap
    if s.est_count == 0:
        s.est_service = service
        s.est_wait = wait
    else:
        gap = start - s.est_last_start
        if s.est_has_gap:
            s.est_gap = ewma(s.est_gap, gap)
        else:
            s.est_gap = gap
            s.est_has_gap = 1
        s.est_service = ewma(s.est_service, service)
        s.est_wait = ewma(s.est_wait, wait)
    s.est_last_start = start
    s.est_count += 1


cdef int finish(State* st, Event* e) noexcept nogil:
    cdef Stage* s = &st.stages[e.a]
    cdef int32_t j = finishing_job(st, s, e)
    if j < 0:
        return 0
    if s.kind == K_PS:
        return complete_job(st, s, j)
    if finish_job(st, s, j) < 0:
        return -1
    return next_in_line(st, s, e.a)


cdef inline int32_t finishing_job(State* st, Stage* s, Event* e) noexcept nogil:
    """The job a finish event of stage s ends (a ps stage's leaves its heap here), or -1: the
    event is stale (superseded by a ps stage's reschedule, or its job gone)."""
    if s.kind == K_PS:
        if e.c != s.epoch:
            return -1
        return ps_done(st, s)
    if st.jobs.rec[e.b].id != e.c:
        return -1
    return <int32_t> e.b


cdef inline int32_t ps_done(State* st, Stage* s) noexcept nogil:
    """Ps stage s's current finish: the job with the least tag leaves (returned), the virtual time
    carried to now."""
    cdef PsEntry top
    s.V = ps_virtual(s, st.now)
    s.Vt = st.now
    top = ps_pop(s)
    if top.tag > s.V or s.V != s.V:     # the larger, a NaN losing (0.1.2's f64::max; φ = inf)
        s.V = top.tag
    s.dirty = 1
    return top.job


cdef inline int next_in_line(State* st, Stage* s, int32_t k) noexcept nogil:
    """After a job of stage k finished: a fifo stage's freed server takes the next waiting job."""
    cdef int32_t nxt
    if s.kind == K_FIFO:
        s.busy -= 1
        if s.qlen > 0:
            nxt = ring_pop(s.q, s.qcap, &s.qhead, &s.qlen)
            return begin_service(st, s, k, nxt)
    return 0


cdef int reschedule_stage(State* st, int32_t k) noexcept nogil:
    """`reschedule` out of line (the stages pass of several stages)."""
    return reschedule(st, k)


cdef inline int reschedule(State* st, int32_t k) noexcept nogil:
    """A dirty ps stage: evaluate φ(present = n) once and schedule the next finish. Inline in
    settle's pass of a lone ps stage (one call per arrival and per departure)."""
    cdef Stage* s = &st.stages[k]
    ps_rate(st, s)      # (φ may fail: the flag says so, and the caller reads it)
    return next_ps_finish(st, s, k)


cdef inline void ps_rate(State* st, Stage* s) noexcept nogil:
    """reschedule's first half: the virtual time brought to now, and the rate φ(n) / n."""
    cdef double phi
    s.dirty = 0
    s.V = ps_virtual(s, st.now)
    s.Vt = st.now
    if s.hlen > 0:
        phi = s.phi_k if s.phi_fixed else evaluate(st, s.phi, -1, &st.rng_session, <double> s.hlen)
        s.rate = phi / <double> s.hlen
    else:
        s.rate = 0.0


cdef inline int next_ps_finish(State* st, Stage* s, int32_t k) noexcept nogil:
    """reschedule's second half: older finishes become stale and the least tag's is scheduled."""
    s.epoch += 1
    if s.hlen > 0 and s.rate > 0:
        return push_event(st, st.now + ps_delay(s), EV_FINISH, k, s.heap[0].job, s.epoch)
    return 0


cdef inline double ps_delay(Stage* s) noexcept nogil:
    """How long until the job of the least tag is done at the stage's rate (s.hlen > 0, s.rate > 0)."""
    cdef double delay = (s.heap[0].tag - s.V) / s.rate
    if not (delay >= 0):                # max(delay, 0), a NaN losing (inf * 0 in V when φ = inf)
        delay = 0
    return delay

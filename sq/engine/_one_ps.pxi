# A lone ps stage's own loop (issue 27, fifth round): lone_loop's events for a program that is one
# open queue at a ps stage (lone_plan's shape), with the queue's own data as fifo_loop keeps it: a
# session is its job, and a job is its arrival time (which is also its start: a ps job is served
# from the moment it joins) and its session's serial, in a row that its ps heap entry names (the
# entry's `job`). The session and job tables grow, charged, where lone_loop's would, but are not
# written (no gauge reads them: `work(…)`, the one function that would, is refused in a gauge).
# A stale finish (one a reschedule superseded) is taken off at the pop: in lone_loop it changes
# nothing after event_begins but the areas' split at its time, their values unchanged.
# tests/engine/test_lone_queue.py holds its reports and errors to lone_loop's and the general
# loop's, byte for byte; tests/differential/test_ps_loop.py to pyserq's JSON text.
# Included by sq/_engine.pyx after _one_queue.pxi (whose pieces it shares); it runs without the GIL.


cdef bint ps_enabled = True       # False: a lone ps stage runs in lone_loop, not ps_loop (tests compare the two)
cdef int64_t ps_runs = 0          # runs that took ps_loop


cdef struct PsJob:
    # a lone ps stage's job, all that ps_loop keeps of it and its session
    double enq                 # when it joined: its session's arrival (the stamps' value) and its start
    int64_t serial             # its session's serial


cdef struct PsRows:
    # ps_loop's jobs: a job's row is its ps heap entry's `job`; the free rows are a stack
    PsJob* row
    int32_t* free
    int32_t nfree
    int32_t cap


cdef void ps_loop(State* st) noexcept nogil:
    """lone_loop for a ps stage, with its own rows (PsRows) instead of the session and job tables."""
    cdef PsRows t
    cdef Stage* s = &st.stages[st.lone.stage]
    # the live sessions' area equals the stage's number area at every sample (after each event
    # every live session's job is at the stage: a session without work ends in the event it
    # arrives in; both start at 0, as settle's sample at time 0 finds neither, and the warm-up
    # restarts both): while they are alike at the start (bitwise) only the stage's is sampled,
    # and copied into the other where it is read (before instant_over, and here at the end)
    cdef bint alike = st.live == s.n and memcmp(&st.live_area, &s.number, sizeof(Area)) == 0
    t.cap = 0
    t.nfree = 0
    t.row = NULL
    t.free = NULL
    if ps_rows_grow(st, &t) == 0:
        ps_events(st, s, st.lone.stage, &t, alike)
        if alike:
            st.live_area = s.number
    free(t.row)
    free(t.free)


cdef int ps_rows_grow(State* st, PsRows* t) noexcept nogil:
    """Twice the rows (64 at first), the new ones free (taken lowest first). Called with none free."""
    cdef int32_t cap = 2 * t.cap if t.cap else 64, i
    cdef PsJob* row = <PsJob*> realloc(t.row, cap * sizeof(PsJob))
    if row != NULL:
        t.row = row
    cdef int32_t* spare = <int32_t*> realloc(t.free, cap * sizeof(int32_t))
    if spare != NULL:
        t.free = spare
    if row == NULL or spare == NULL:
        fail(st, E_MEMORY, -1, 0, 0, 0)
        return -1
    for i in range(cap - t.cap):
        t.free[i] = cap - 1 - i
    t.nfree = cap - t.cap
    t.cap = cap
    return 0


cdef inline void ps_events(State* st, Stage* s, int32_t k, PsRows* t, bint alike) noexcept nogil:
    """ps_loop's events (its rows set up): each ends with at most one session going on (observing
    and ending), then the stage's reschedule and the area samples, in lone_loop's order."""
    cdef Event e, cur        # cur: the stage's current finish (seq NO_EVENT: none pending)
    cdef Event* nxt
    cdef PsJob job
    cdef int32_t row
    cdef int counted
    cdef bint leaving, fresh
    cdef double w
    cdef double rates[LONE_RATES]
    cdef bint fixed = lone_rates(s, rates)
    cdef int64_t limit = st.limit           # (the run's settings, in locals: the loop's stores may alias st's)
    cdef double horizon = st.horizon
    cdef double until = fifo_until(st)
    cdef int32_t to_run = st.lone.to_run, to_end = st.lone.n_observes + 1
    cdef bint run_fits = 1 + to_run <= st.step_limit, end_fits = 1 + to_end <= st.step_limit
    # an h2 work of constant arguments (M/G/1-PS's `~h2(1, 4)`) drawn from its phases, set once
    cdef sq_h2 h2
    h2.p = h2.mean1 = h2.mean2 = 0      # (read only when h2_work)
    cdef bint h2_work = st.shapes[st.lone.work] == XS_DRAW2 and draw2_h2(st, st.code + st.lone.work, &h2)
    cur.seq = NO_EVENT
    cur.kind = EV_FINISH
    cur.a = k
    while not st.error.code:
        if limit > 0 and st.arrivals >= limit and st.live == 0:
            break
        nxt = next_event(st)
        if cur.seq != NO_EVENT and (nxt == NULL or before(&cur, nxt)):
            nxt = &cur
        if nxt == NULL or nxt.t > horizon:
            break
        fresh = nxt.t > st.now
        if fresh:
            if nxt.t > until or st.events >= st.poll_at:
                if alike:
                    st.live_area = s.number     # (the window's middle reads it)
                if instant_over(st, nxt):
                    break
                until = fifo_until(st)
            else:
                st.steps = 0        # (instant_over with nothing else to do)
        leaving = False     # no session goes on
        counted = 0         # (the observes' and the end's steps: fifo_leave counts them)
        if nxt == &cur:
            # the current finish: ps_done (the least tag leaves, V carried to now), then job_done;
            # its session goes on
            cur.seq = NO_EVENT
            counted = fifo_begins(st, cur.t, EV_FINISH, k, to_end, fresh and end_fits)
            if counted < 0:
                return
            row = ps_done(st, s)
            job = t.row[row]
            t.free[t.nfree] = row
            t.nfree += 1
            s.n -= 1
            ps_measured(st, s, job.enq)
            leaving = True
        else:
            e = pop_event(st, nxt)
            if e.kind == EV_ARRIVE:
                counted = fifo_begins(st, e.t, EV_ARRIVE, -1, to_run, fresh and run_fits)
                if counted < 0:
                    return
                if limit == 0 or st.arrivals + 1 < limit:
                    if next_arrival(st) < 0:
                        return
                # new_session: a slot when more are live than ever before (session_alloc)
                if st.live == st.sess.high and session_alloc(st) < 0:
                    return
                job.serial = session_in(st)
                job.enq = st.now
                if not counted and fifo_steps(st, job.serial, st.session_pc, to_run, False):
                    return
                counted = 0
                if h2_work:
                    w = sq_draw_h2_of(&st.rng_session, &h2)
                else:
                    w = lone_work(st, -1)
                    if st.error.code:
                        return
                if w > 0:
                    if ps_join(st, s, k, t, job, w) < 0:
                        return
                else:
                    leaving = True      # zero work: no job, the session goes on now
            elif not event_begins(st, &e):
                return
            elif e.kind == EV_FINISH:
                # a stale finish (finishing_job's e.c != s.epoch): every finish on the event list
                # is one, the current one being in `cur`. No job, no session, the stage not
                # dirty; of settle's samples only the split at now is left, as each area holds
                # the value the event before set (gauges, the window's middle and the poll read,
                # never change it)
                area_set(&s.number, st.now, s.number.value)
                if not alike:
                    st.live_area = s.number     # (live sessions: as below)
                area_set(&s.busy_area, st.now, s.busy_area.value)
                continue
            else:
                handle_rare(st, &e)       # the end of the warm-up
        if leaving and fifo_leave(st, job.serial, job.enq, counted) < 0:
            return
        if s.dirty:
            lone_rate(st, s, fixed, rates)
            if ps_next_finish(st, s, &cur) < 0:
                return
        area_set(&s.number, st.now, <double> s.n)
        # live sessions: area_set(&st.live_area, st.now, st.live) computes what the line above
        # did, as the two areas are equal at every sample (ps_loop); copied where read when alike
        if not alike:
            st.live_area = s.number
        area_set(&s.busy_area, st.now, 1.0 if s.n > 0 else 0.0)     # (busy_value of an unshared stage)


cdef inline int ps_join(State* st, Stage* s, int32_t k, PsRows* t, PsJob job, double w) noexcept nogil:
    """new_job and join_ps: the job of work w joins (its tag the virtual time its work is done at)."""
    cdef int32_t row
    if s.n == st.jobs.high and job_alloc(st) < 0:     # (a slot when more jobs are live than ever before)
        return -1
    if s.n == 0:
        mark_row(st.stages_sampled, k)
    s.n += 1
    if t.nfree == 0 and ps_rows_grow(st, t) < 0:
        return -1
    t.nfree -= 1
    row = t.free[t.nfree]
    t.row[row] = job
    s.V = ps_virtual(s, st.now)
    s.Vt = st.now
    s.dirty = 1
    st.next_job_id += 1
    return ps_push(st, s, s.V + w, st.next_job_id - 1, row)


cdef inline int ps_next_finish(State* st, Stage* s, Event* cur) noexcept nogil:
    """next_ps_finish with the stage's current finish kept in `cur` instead of on the event list:
    a finish still pending there is superseded (stale), so it joins the list as it is (its time
    and seq: where next_ps_finish put it), and the new one takes `cur` with the seq push_event
    would give it. The events, their order and seqs are next_ps_finish's."""
    cdef int64_t seq
    s.epoch += 1
    if cur.seq != NO_EVENT:
        # push_event as it was pushed: with the seq it took then (st.seq set back for the push)
        seq = st.seq
        st.seq = cur.seq
        if push_event(st, cur.t, EV_FINISH, cur.a, cur.b, cur.c) < 0:
            return -1
        st.seq = seq
        cur.seq = NO_EVENT
    if s.hlen > 0 and s.rate > 0:
        cur.t = st.now + ps_delay(s)
        cur.seq = st.seq
        st.seq += 1
        cur.b = s.heap[0].job
        cur.c = s.epoch
    return 0


cdef inline void ps_measured(State* st, Stage* s, double start) noexcept nogil:
    """job_measured for a ps job that started at `start` (when it joined): its wait is 0, and the
    waits' running mean, +0 from the run's start, stays +0 with it ((0 - +0) / n is +0), so only
    its count moves; no division."""
    if st.warm:
        s.waits.n += 1
        running_add(&s.services, st.now - start)
    if st.estimates:
        estimate(s, start, 0.0, st.now - start)

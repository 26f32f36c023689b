# A lone ps stage's own loop (issue 27, fifth round): lone_loop's events for a program that is one
# open queue at a ps stage (lone_plan's shape), with the queue's own data as fifo_loop keeps it: a
# session is its job, and a job is its arrival time (which is also its start: a ps job is served
# from the moment it joins) and its session's serial, in a row that its ps heap entry names (the
# entry's `job`). The session and job tables grow, charged, where lone_loop's would, but are not
# written (no gauge reads them: `work(…)`, the one function that would, is refused in a gauge).
# A stale finish (one a reschedule superseded) is taken off at the pop: in lone_loop it changes
# nothing after event_begins but the areas' split at its time, their values unchanged. The
# events but the arrival and the current finish are in a small heap of ps_loop's own (PsEnds).
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


cdef struct PsEnds:
    # ps_loop's own event list: the stale finishes and the events it found on the run's list (the
    # end of the warm-up), in a heap by (t, seq) as the run's list orders them, their (t, seq) as
    # FifoEnd items (row >= 0: a stale finish; -1 - i: rare[i], kept whole); ends[0] holds an
    # empty event (t inf, seq NO_EVENT) while the heap is empty. Every time in it is a number (a
    # finish's is now + ps_delay, which is >= 0 or inf, never NaN; the warm-up's is finite), so
    # the (t, seq) order is total, the same in any heap (as fifo_loop's, whose argument this is)
    FifoEnd* ends
    int64_t n
    int64_t cap
    Event* rare


cdef void ps_loop(State* st) noexcept nogil:
    """lone_loop for a ps stage, with its own rows (PsRows) instead of the session and job tables."""
    cdef PsRows t
    cdef PsEnds ends
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
    ends.cap = st.hlen + 16
    ends.ends = <FifoEnd*> malloc(ends.cap * sizeof(FifoEnd))
    ends.rare = <Event*> malloc((st.hlen + 1) * sizeof(Event))
    if ends.ends == NULL or ends.rare == NULL:
        fail(st, E_MEMORY, -1, 0, 0, 0)
    elif ps_rows_grow(st, &t) == 0:
        ps_ends(st, &ends)
        ps_events(st, s, st.lone.stage, &t, &ends, alike)
        if alike:
            st.live_area = s.number
    free(t.row)
    free(t.free)
    free(ends.ends)
    free(ends.rare)


cdef void ps_ends(State* st, PsEnds* q) noexcept nogil:
    """ps_loop's own event list, from the run's (the end of the warm-up, if it is pending: no
    session has begun, so no finish is), which is left empty; as fifo_ends does."""
    cdef int64_t i
    cdef FifoEnd f
    q.n = 0
    q.ends[0].t = INFINITY
    q.ends[0].seq = NO_EVENT
    if st.soon.seq != NO_EVENT:
        q.rare[q.n] = st.soon
        st.soon.seq = NO_EVENT
        f.t = q.rare[q.n].t
        f.seq = q.rare[q.n].seq
        f.row = -1 - q.n
        heap_up(q.ends, q.n, f)
        q.n += 1
    for i in range(st.hlen):
        q.rare[q.n] = st.heap[i]
        f.t = st.heap[i].t
        f.seq = st.heap[i].seq
        f.row = -1 - q.n
        heap_up(q.ends, q.n, f)     # (room: hlen + 16)
        q.n += 1
    st.hlen = 0


cdef inline void ps_pop_end(PsEnds* q) noexcept nogil:
    """Take the earliest event (ends[0]) out of ps_loop's own list."""
    q.n -= 1
    if q.n > 0:
        heap_down(q.ends, 0, q.n, q.ends[q.n])
    else:
        q.ends[0].t = INFINITY
        q.ends[0].seq = NO_EVENT


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


cdef enum:
    DRAWS = 64          # draws taken ahead at a time (ps_events' gaps and works)


# Draws taken ahead on a stream only they read, into v[0 .. DRAWS), used in that order. Drawing
# ahead changes no value: each is computed as it would be one at a time, and nothing else reads
# the stream, whose state after the loop nobody reads either.
cdef void gaps_ahead(State* st, double* v) noexcept nogil:
    """The next DRAWS poisson gaps (out of line: once per DRAWS arrivals)."""
    cdef int32_t i
    for i in range(DRAWS):
        v[i] = poisson_gap(st)


cdef void h2_ahead(State* st, const sq_h2* h2, double* v) noexcept nogil:
    """The next DRAWS works of the h2 draw of phases h2, on the session stream."""
    cdef int32_t i
    for i in range(DRAWS):
        v[i] = sq_draw_h2_of(&st.rng_session, h2)


cdef enum:
    # which event ps_events takes next
    PS_CUR = 0          # the stage's current finish (its slot)
    PS_ARRIVAL = 1      # the arrival slot's
    PS_OWN = 2          # the own list's top: a stale finish or a rare event


cdef inline void ps_events(State* st, Stage* s, int32_t k, PsRows* t, PsEnds* q, bint alike) noexcept nogil:
    """ps_loop's events (its rows set up): each ends with at most one session going on (observing
    and ending), then the stage's reschedule and the area samples, in lone_loop's order. The
    events but the arrival and the current finish are in ps_loop's own list (q)."""
    cdef Event e
    cdef FifoEnd cur        # the stage's current finish (t inf, seq NO_EVENT: none pending)
    cdef FifoEnd arrival
    cdef FifoEnd* top
    cdef int which
    cdef double when
    cdef PsJob job
    cdef int32_t row
    cdef int counted
    cdef bint leaving, fresh
    cdef double w
    cdef double rates[LONE_RATES]
    cdef bint fixed = lone_rates(s, rates)
    cdef int64_t limit = st.limit           # (the run's settings, in locals: the loop's stores may alias st's)
    cdef int64_t last_before_limit = INT64_MAX if limit == 0 else limit - 1     # (as fifo_events')
    cdef double horizon = st.horizon
    cdef double until = fifo_until(st)
    cdef int32_t to_run = st.lone.to_run, to_end = st.lone.n_observes + 1
    cdef bint run_fits = 1 + to_run <= st.step_limit, end_fits = 1 + to_end <= st.step_limit
    cdef bint stale_fits = 1 <= st.step_limit
    # an h2 work of constant arguments (M/G/1-PS's `~h2(1, 4)`) drawn from its phases, set once
    cdef sq_h2 h2
    h2.p = h2.mean1 = h2.mean2 = 0      # (read only when h2_work)
    cdef bint h2_work = st.shapes[st.lone.work] == XS_DRAW2 and draw2_h2(st, st.code + st.lone.work, &h2)
    # draws taken DRAWS at a time where nothing else reads their stream (issue 27): the poisson
    # gaps (the arrivals stream is theirs alone) and an h2 work's draws when φ is a constant
    # (ps_rate evaluates nothing): nothing else in the loop draws (a gauge may not: link.py)
    cdef double gaps[DRAWS]
    cdef double works[DRAWS]
    cdef int32_t gap_i = DRAWS, work_i = DRAWS      # the next one's place (DRAWS: none left)
    cdef bint gaps_drawn = st.arrival_kind == A_POISSON
    cdef bint works_drawn = h2_work and s.phi_fixed
    cur.t = INFINITY
    cur.seq = NO_EVENT
    cur.row = 0             # (a stale finish, once superseded into the own list)
    arrival.t = st.arrival.t        # the arrival slot, kept here (nothing reads st.arrival after the loop)
    arrival.seq = st.arrival.seq
    while not st.error.code:
        # the earliest of the arrival slot, the current finish and the own list's top, by (t,
        # seq): every time a number, the order is total, so the order of the comparisons does not
        # matter; an empty one (t inf, seq NO_EVENT) is before none
        top = q.ends
        which = PS_OWN
        if before(&arrival, top):
            top = &arrival
            which = PS_ARRIVAL
        if before(&cur, top):
            top = &cur
            which = PS_CUR
        # the arrival limit reached with nothing live ends the run (lone_loop tests it at each
        # event's head): then no arrival is pending (none is scheduled past the limit) nor the
        # current finish (a job's), so it can hold only before an event of the own list or none
        if which == PS_OWN and limit > 0 and st.arrivals >= limit and st.live == 0:
            break
        when = top.t
        if not (when < horizon) and (when > horizon or top.seq == NO_EVENT):
            break       # past the horizon, or none pending (t inf: an inf horizon's case)
        fresh = when > st.now
        if fresh:
            if when > until or st.events >= st.poll_at:
                if alike:
                    st.live_area = s.number     # (the window's middle reads it)
                e.t = when          # (instant_over reads its time)
                if instant_over(st, &e):
                    break
                until = fifo_until(st)
            else:
                st.steps = 0        # (instant_over with nothing else to do)
        leaving = False     # no session goes on
        counted = 0         # (the observes' and the end's steps: fifo_leave counts them)
        if which == PS_CUR:
            # the current finish: ps_done (the least tag leaves, V carried to now), then job_done;
            # its session goes on
            cur.t = INFINITY
            cur.seq = NO_EVENT
            counted = fifo_begins(st, when, EV_FINISH, k, to_end, fresh and end_fits)
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
            if which == PS_ARRIVAL:
                e.t = when
                e.kind = EV_ARRIVE
                no_arrival(&arrival)        # (pop_event)
            elif top.row >= 0:
                # a stale finish (finishing_job's e.c != s.epoch): every finish on ps_loop's own
                # list is one, the current one being in `cur`. No job, no session, the stage not
                # dirty; of settle's samples only the split at now is left, as each area holds
                # the value the event before set (gauges, the window's middle and the poll read,
                # never change it)
                ps_pop_end(q)
                if fifo_begins(st, when, EV_FINISH, k, 0, fresh and stale_fits) < 0:
                    return
                area_set(&s.number, st.now, s.number.value)
                if not alike:
                    st.live_area = s.number     # (live sessions: as below)
                area_set(&s.busy_area, st.now, s.busy_area.value)
                continue
            else:
                e = q.rare[-1 - top.row]
                ps_pop_end(q)
            if e.kind == EV_ARRIVE:
                counted = fifo_begins(st, e.t, EV_ARRIVE, -1, to_run, fresh and run_fits)
                if counted < 0:
                    return
                if st.arrivals < last_before_limit:
                    if gaps_drawn:
                        if gap_i == DRAWS:
                            gaps_ahead(st, gaps)
                            gap_i = 0
                        schedule_arrival(st, &arrival, st.now + gaps[gap_i])
                        gap_i += 1
                    else:
                        no_arrival(&st.arrival)
                        if next_arrival(st) < 0:
                            return
                        arrival.t = st.arrival.t
                        arrival.seq = st.arrival.seq
                # new_session: a slot when more are live than ever before (session_alloc)
                if st.live == st.sess.high and session_alloc(st) < 0:
                    return
                job.serial = session_in(st)
                job.enq = st.now
                if not counted and fifo_steps(st, job.serial, st.session_pc, to_run, False):
                    return
                counted = 0
                if works_drawn:
                    if work_i == DRAWS:
                        h2_ahead(st, &h2, works)
                        work_i = 0
                    w = works[work_i]
                    work_i += 1
                elif h2_work:
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
            else:
                handle_rare(st, &e)       # the end of the warm-up (no finish is a rare one: ps_ends)
        if leaving and fifo_leave(st, job.serial, job.enq, counted) < 0:
            return
        if s.dirty:
            lone_rate(st, s, fixed, rates)
            if ps_next_finish(st, s, &cur, q) < 0:
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


cdef inline int ps_next_finish(State* st, Stage* s, FifoEnd* cur, PsEnds* q) noexcept nogil:
    """next_ps_finish with the stage's current finish kept in `cur` instead of on the event list:
    a finish still pending there is superseded (stale), so it joins ps_loop's own list (q) as it
    is (its time and seq: where next_ps_finish put it), and the new one takes `cur` with the seq
    push_event would give it. The events, their order and seqs are next_ps_finish's."""
    s.epoch += 1
    if cur.seq != NO_EVENT:
        if q.n == q.cap and heap_grow(st, &q.ends, &q.cap, 64) < 0:
            return -1
        heap_up(q.ends, q.n, cur[0])      # (its row 0: a stale finish)
        q.n += 1
        cur.t = INFINITY
        cur.seq = NO_EVENT
    if s.hlen > 0 and s.rate > 0:
        cur.t = st.now + ps_delay(s)
        cur.seq = st.seq
        st.seq += 1
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

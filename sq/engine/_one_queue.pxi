# A program that is one open queue (spec 09's loop for one shape of program): sessions arrive
# (poisson or renewal), stamp `now`, run at one fifo, ps or delay stage, observe the time since
# the stamp and end (gauges may watch it):
#
#     session { set t0 = now; run server (~exp(1)); observe response = now - t0; }
#
# lone_loop handles each event and settles its instant without the statement VM, the ready queue
# or settle's passes, doing for such a program what handle + settle do, in the same order, through
# the same functions (new_session, new_job, join_fifo/join_ps/begin_service, job_done,
# next_in_line, record_as, end_session, reschedule, area_set): what it leaves out is what this
# shape of program never reads (the session's attributes and program counter, the ready queue's
# traffic, settle's tests for pools, flows and other stages, which stay idle).
# tests/engine/test_lone_queue.py holds its reports and errors to the general loop's, byte for byte.
# With it M/M/1 takes 27 % fewer instructions than before it (benchmarks/README.md, sixth pass).
# A fifo stage takes fifo_loop: the same events with the queue's own data (a session is its job:
# arrival time, work then start, serial), the session and job tables grown but not written
# (benchmarks/README.md, "Issue 27, fourth round: the fifo queues": M/M/1 -15 % instructions).
# A ps stage takes ps_loop (sq/engine/_one_ps.pxi), likewise with its own data.
# Included by sq/_engine.pyx; every function here runs without the GIL.


cdef bint lone_enabled = True     # False: every program runs in the general loop (tests compare the two)
cdef int64_t lone_runs = 0        # runs that took the lone loop (tests tell which loop a run took)
cdef bint fifo_enabled = True     # False: a lone fifo stage runs in lone_loop, not fifo_loop (tests compare the two)
cdef int64_t fifo_runs = 0        # runs that took fifo_loop


cdef void lone_plan(State* st) noexcept nogil:
    """Whether the program is one open queue, set in st.lone (stage -1: it is not). After the
    stages, the statement forms and the run's settings are set up."""
    cdef const int32_t* code = st.stmts
    cdef int32_t pc = st.session_pc, k, attr, work, shape
    cdef uint64_t stamped = 0      # the attributes (< 64) the session stamps with `now` before its run
    st.lone.stage = -1
    st.lone.fifo = False
    st.lone.ps = False
    # (pools may be declared: only holds and step stages use one, and such a program has neither,
    # so they stay idle, as settle would leave them; gauges are read between instants by
    # instant_over, as in the general loop, and read only what the loops keep alike: the stages'
    # and pools' state, the clock and the streams; not the job tables, which fifo_loop leaves
    # unwritten: `work(…)`, the one function that reads them, is refused in a gauge)
    if not lone_enabled or st.n_holds > 0 or st.tl != NULL or st.check \
            or st.init_pc >= 0 or st.turn_pc >= 0 or st.trace_sessions > 0 or st.session_pc < 0 \
            or not (st.arrival_kind == A_POISSON or st.arrival_kind == A_RENEWAL):
        return
    for k in range(st.n_stages):      # the other stages stay idle: no step or shared stage among them
        if st.stages[k].kind == K_STEP or st.stages[k].share_cap > 0:
            return
    while st.forms[pc] == F_SET_NOW:
        attr = code[pc + SV_TARGET]
        if not (0 <= attr < 64) or attr == st.slot_turn:
            return
        stamped |= (<uint64_t> 1) << attr
        pc += SV_LEN
    if st.forms[pc] != F_RUN_ONE:
        return
    work = code[pc + SR_WORK]
    shape = st.shapes[work]
    if not (shape == XS_NUM or shape == XS_DRAW1 or shape == XS_DRAW2):
        return      # the work reads the session (its attributes are not kept here)
    st.lone.run_pc = pc
    st.lone.work = work
    st.lone.after_pc = pc + SR_ALSO
    st.lone.n_observes = 0
    pc = st.lone.after_pc
    while st.forms[pc] == F_OBSERVE_SINCE:
        attr = st.code[code[pc + SV_EXPR] + XONE_LEN + XONE_ARG]    # as since_value reads it
        if not (0 <= attr < 64) or not (stamped >> attr) & 1:
            return
        st.lone.n_observes += 1
        pc += SV_LEN
    if st.forms[pc] != S_END:
        return
    st.lone.to_run = (st.lone.run_pc - st.session_pc) // SV_LEN + 1
    st.lone.stage = code[st.lone.run_pc + SR_STAGE + REF_BASE]
    # (fifo_loop's own event heap orders by (t, seq), which needs every time a number: poisson(0)'s
    # gap can be -log(1 - 0) / 0, a NaN, so that program stays in lone_loop)
    st.lone.fifo = fifo_enabled and st.stages[st.lone.stage].kind == K_FIFO \
        and not (st.arrival_kind == A_POISSON and not (st.arrival_rate > 0))
    # (ps_loop's current finish, in its own slot, is compared with the arrival in another order than
    # the event list's: the same order for numbers, not for poisson(0)'s NaN gap, which stays in lone_loop)
    st.lone.ps = ps_enabled and st.stages[st.lone.stage].kind == K_PS \
        and not (st.arrival_kind == A_POISSON and not (st.arrival_rate > 0))


cdef inline bint lone_rates(Stage* s, double* rates) noexcept nogil:
    """Whether ps stage s has a constant, finite φ; if so its rates φ / n for n < LONE_RATES are
    put in `rates`, each divided once (ps_rate's division, so the same value)."""
    cdef int32_t n
    if not (s.phi_fixed and isfinite(s.phi_k)):
        return False
    rates[0] = 0.0
    for n in range(1, LONE_RATES):
        rates[n] = s.phi_k / <double> n
    return True


cdef inline void lone_rate(State* st, Stage* s, bint fixed, const double* rates) noexcept nogil:
    """`reschedule`'s first half (ps_rate) for a lone ps stage, dirty after this event's join or
    finish: its rate, from the table of lone_rates when it holds it (`fixed`)."""
    if fixed and s.hlen < LONE_RATES:
        # ps_rate's rate, divided ahead; its ps_virtual is left out, as it would not change
        # V: the join or finish of this event brought V to now, and V + rate · 0 is V for
        # a finite rate, V never being -0 (it starts at +0; a sum is -0 only when both
        # terms are)
        s.dirty = 0
        s.rate = rates[s.hlen]
    else:
        ps_rate(st, s)      # (φ may fail: the loop stops on the flag)


cdef void lone_loop(State* st) noexcept nogil:
    """run_loop's events for a program that is one open queue (lone_plan)."""
    cdef Event e
    cdef Event* nxt
    cdef int32_t k = st.lone.stage, leaving
    cdef Stage* s = &st.stages[k]
    cdef double arrived
    cdef double rates[LONE_RATES]
    cdef bint fixed = s.kind == K_PS and lone_rates(s, rates)
    while not st.error.code:
        if st.limit > 0 and st.arrivals >= st.limit and st.live == 0:
            break
        nxt = next_event(st)
        if nxt == NULL or nxt.t > st.horizon:
            break
        if nxt.t > st.now and instant_over(st, nxt):
            break
        e = pop_event(st, nxt)
        if not event_begins(st, &e):
            return
        # handle (the next arrival is scheduled before the session spawns), the statements of
        # the session that goes on (settle's ready queue), the stage's reschedule (settle's
        # stages pass), the samples
        leaving = NOBODY
        if e.kind == EV_ARRIVE:
            if st.limit == 0 or st.arrivals + 1 < st.limit:
                if next_arrival(st) < 0:
                    return
            leaving = lone_arrival(st, s, k)
            arrived = st.now
        elif e.kind == EV_FINISH:
            leaving = lone_finish(st, s, &e, &arrived)
        else:
            handle_rare(st, &e)       # the end of the warm-up
        if leaving >= 0:
            if lone_leave(st, leaving, arrived) < 0:
                return
        elif leaving == FAILED:
            return
        if s.dirty:     # reschedule (only a ps stage is ever dirty)
            lone_rate(st, s, fixed, rates)
            if next_ps_finish(st, s, k) < 0:
                return
        # settle's samples: live sessions and the stage's areas, sampled even while they hold 0
        # (sample_areas leaves such a row out because sampling it would add 0 and change nothing;
        # the program's other stages are never used)
        area_set(&st.live_area, st.now, <double> st.live)
        area_set(&s.number, st.now, <double> s.n)
        area_set(&s.busy_area, st.now, 1.0 if s.n > 0 else 0.0)     # (busy_value of an unshared stage)


cdef struct FifoJob:
    # a lone fifo stage's job, all that fifo_loop keeps of it and its session
    double enq                 # when it joined (its session's arrival: the stamps' value)
    double at                  # waiting: its work; in service: when its service started
    int64_t serial             # its session's serial


cdef struct FifoLine:
    # fifo_loop's own data: the jobs waiting (a ring, in arrival order) and those in service
    # (one row per server; a finish event carries the row), with the rows free; and its events
    # but the arrival (which stays in its slot): the servers' finishes and the end of the
    # warm-up, at most c + 1, in (t, seq) order: for 2 to FIFO_SORTED servers an array sorted
    # latest first, ends[1 .. nends], the earliest at ends[nends] and ends[0] an empty event
    # (t inf, seq NO_EVENT, after every event) where a shift stops; else a binary heap
    FifoJob* line
    int64_t cap                # a power of two
    int64_t head
    int64_t n
    FifoJob* serving           # per server row
    int32_t* idle              # the free server rows, a stack
    int32_t nidle
    FifoEnd* ends              # the events; the empty event at the earliest's place while there are none
    int64_t nends
    bint sorted                # the sorted array (the earliest at ends[nends]), not the heap (at ends[0])
    Event* rare                # the events other than finishes (FifoEnd row -1 - i: rare[i]), whole


cdef void fifo_loop(State* st) noexcept nogil:
    """lone_loop for a fifo stage of c servers, with its own data: a session is its job, and a
    job is its arrival time, its serial and its work (then its start), in a ring while it waits
    and in its server's row while served; the run's session and job tables are not written.
    The same events happen in the same order as in lone_loop, with the same seqs: the events
    but the arrival are moved into fifo_loop's own heap of at most c + 1 (fifo_ends), which
    orders them by (t, seq) as the run's event list does, and a finish that begins the next
    service in its row replaces its own event there (one sift instead of a pop and a push).
    lone_plan leaves out the one program whose times could be NaN (poisson(0): a gap of
    -log(1 - 0) / 0), where the event list's order would depend on its heap's layout; with
    every time a number the order of (t, seq) is total, the same in any heap. The arithmetic
    is the same: job_measured, record_as, area_set, running_add, session_in and session_out
    are the ones the general path uses. The tables still grow (and are charged to the memory
    bound) where lone_loop's would: a session slot is taken when more sessions are live than
    ever before, a job slot likewise (spare slots are reused first there, so the slots in use
    are always the live ones). A session's statements count as steps at once while they cannot
    pass the instant's bound (fifo_begins, fifo_steps)."""
    cdef FifoLine q
    cdef int32_t k = st.lone.stage, row
    cdef Stage* s = &st.stages[k]
    # every live session is a job of the stage between events (a session of zero work ends in
    # the event it began), so the live sessions' area and the stage's jobs' area, alike when the
    # loop starts (both held 0 since time 0), take the same samples and stay alike: only the
    # stage's is sampled, and copied into the other where it is read (before instant_over, and
    # here at the end); bitwise alike, -0.0 included, or each sampled as it is
    cdef bint alike = st.live == s.n and memcmp(&st.live_area, &s.number, sizeof(Area)) == 0
    q.cap = 64
    q.head = q.n = 0
    q.line = <FifoJob*> malloc(q.cap * sizeof(FifoJob))
    q.serving = <FifoJob*> malloc(s.servers * sizeof(FifoJob))
    q.idle = <int32_t*> malloc(s.servers * sizeof(int32_t))
    q.ends = <FifoEnd*> malloc((s.servers + st.hlen + 2) * sizeof(FifoEnd))
    q.sorted = 2 <= s.servers <= FIFO_SORTED
    q.rare = <Event*> malloc((st.hlen + 1) * sizeof(Event))
    if q.line == NULL or q.serving == NULL or q.idle == NULL or q.ends == NULL or q.rare == NULL:
        fail(st, E_MEMORY, -1, 0, 0, 0)
    else:
        q.nidle = s.servers
        for row in range(s.servers):
            q.idle[row] = s.servers - 1 - row      # row 0 first
        fifo_ends(st, &q)
        # (two copies of the loop, one for each order: no test of it in the loop)
        if q.sorted:
            fifo_events(st, s, k, &q, alike, <FifoSorted*> NULL)
        else:
            fifo_events(st, s, k, &q, alike, <FifoHeap*> NULL)
        if alike:
            st.live_area = s.number
    free(q.line)
    free(q.serving)
    free(q.idle)
    free(q.ends)
    free(q.rare)


cdef void fifo_ends(State* st, FifoLine* q) noexcept nogil:
    """fifo_loop's own events, from the run's event list (the end of the warm-up, if it is
    pending: no session has begun, so no finish is), which is left empty. Each is kept whole in
    q.rare, its time and seq among the events."""
    cdef int64_t i
    q.nends = 0
    q.ends[0].t = INFINITY
    q.ends[0].seq = NO_EVENT
    if st.soon.seq != NO_EVENT:
        fifo_rare(q, st.soon)
        st.soon.seq = NO_EVENT
    for i in range(st.hlen):
        fifo_rare(q, st.heap[i])
    st.hlen = 0


cdef void fifo_rare(FifoLine* q, Event e) noexcept nogil:
    """Event e, not a finish, into fifo_loop's heap: whole in rare[i], row -1 - i in the heap
    (i: the events pushed before it, all of them rare)."""
    cdef FifoEnd f
    q.rare[q.nends] = e
    f.t = e.t
    f.seq = e.seq
    f.row = -1 - q.nends
    fifo_push(q, f, q.sorted)


cdef inline FifoEnd* fifo_top(FifoLine* q, bint sorted) noexcept nogil:
    """fifo_loop's earliest event (the empty one when there is none); `sorted` is q.sorted."""
    return q.ends + q.nends if sorted else q.ends


cdef inline void fifo_push(FifoLine* q, FifoEnd e, bint sorted) noexcept nogil:
    # (room for c + 1 was made)
    if sorted:
        fifo_insert(q.ends, q.nends + 1, e)
    else:
        heap_up(q.ends, q.nends, e)      # a new leaf only moves up
    q.nends += 1


cdef inline void fifo_insert(FifoEnd* a, int64_t i, FifoEnd e) noexcept nogil:
    """Put e in a sorted array's place i, free (a[i + 1 ..] none), or below it: the events
    before e (earlier, or at its time with a smaller seq) move up one place. a[0], the empty
    event, comes after every event, so the shift stops there at the latest. Which place e takes
    is the one its rank gives: every time is a number and every seq its own (fifo_loop's
    argument), so (t, seq) orders the events totally and the top is the earliest, as in a heap.
    A new finish `now + ~exp` has a uniform rank among M/M/c's c pending ones (memorylessness): c / 2
    moves on average, fewer instructions than a heap's sift for a few servers, and one
    mispredicted exit where a sift has one at each level."""
    while before(&a[i - 1], &e):
        a[i] = a[i - 1]
        i -= 1
    a[i] = e


cdef inline void fifo_pop(FifoLine* q, bint sorted) noexcept nogil:
    """Take the earliest event (fifo_top) out of fifo_loop's events."""
    q.nends -= 1
    if sorted:
        pass        # (its place is free: the next is on top, or the empty event)
    elif q.nends > 0:
        heap_down(q.ends, 0, q.nends, q.ends[q.nends])
    else:
        q.ends[0].t = INFINITY
        q.ends[0].seq = NO_EVENT


cdef inline int fifo_begins(State* st, double t, int32_t kind, int32_t k, int32_t n, bint fits) noexcept nogil:
    """event_begins for an event of this kind at t (a finish: at stage k), with the n steps of the
    statements that follow it in its session counted too when all fit the instant's bound: 1 (all
    counted), 0 (the event's step only: the caller counts the others one by one, where they fail)
    or -1 (the run failed). `fits`: they do, the instant being fresh (its steps 0) and 1 + n
    within the bound."""
    cdef Event e
    if fits:
        st.now = t
        st.events += 1
        st.steps = 1 + n
        return 1
    if st.steps + 1 + n <= st.step_limit:
        st.now = t
        st.events += 1
        st.steps += 1 + n
        return 1
    e.t = t             # (what event_begins reads)
    e.kind = kind
    e.a = k
    return 0 if event_begins(st, &e) else -1


cdef struct FifoSorted:
    char unused     # (a type only: fifo_events' copy for q.sorted)

cdef struct FifoHeap:
    char unused     # (fifo_events' copy for the heap)

ctypedef fused FifoOrder:
    FifoSorted
    FifoHeap


cdef inline void fifo_events(State* st, Stage* s, int32_t k, FifoLine* q, bint alike, FifoOrder* order) noexcept nogil:
    """fifo_loop's events (its data set up; the copy for q.sorted's order, `order` a NULL of its
    type). Each event ends with at most one service begun (in `row`, of `job`) and then at most
    one session going on (observing and ending), in that order as in lone_loop: one place for
    each, so gcc inlines both."""
    cdef bint sorted = FifoOrder is FifoSorted
    cdef Event e
    cdef FifoEnd arrival
    cdef FifoEnd* top
    cdef FifoJob job, done
    cdef double w, t
    cdef int32_t row
    cdef int counted
    cdef bint leaving, replace, arrives, fresh
    # until when a fresh instant needs no more than its steps cleared: fifo_until, and at most
    # the horizon, so that an event past the horizon is found by this one test (such an event is
    # fresh: `now` is never past the horizon, it starts at 0 and is only set to events' times at
    # or before it, found so)
    cdef double until = min(fifo_until(st), st.horizon)
    cdef int32_t to_run = st.lone.to_run, to_end = st.lone.n_observes + 1
    # (the run's settings, in locals: the loop's stores may alias st's)
    cdef int64_t limit = st.limit
    # `limit == 0 or arrivals + 1 < limit` as one comparison: the arrivals after which the next
    # is still scheduled are those below limit - 1 (all of them, there being no limit)
    cdef int64_t last_before_limit = INT64_MAX if limit == 0 else limit - 1
    cdef double horizon = st.horizon
    # whether an event and its session's statements fit a fresh instant's bound (fifo_begins)
    cdef bint run_fits = 1 + to_run <= st.step_limit, end_fits = 1 + to_end <= st.step_limit
    # an `~exp(m)` work of a constant mean (M/M/c's) drawn without lone_work's dispatch
    cdef bint exp_work = st.shapes[st.lone.work] == XS_DRAW1 \
        and st.code[st.lone.work + XONE_LEN + XSAMPLE_DIST] == SQ_DIST_EXP
    cdef double exp_mean = st.consts[st.code[st.lone.work + XONE_ARG]] if exp_work else 0.0
    # a poisson arrival's next gap drawn one arrival ahead: its `log` and division are then off
    # the path from an arrival to the next event's choice, which compares the arrival's time.
    # Each gap is the one drawn in its turn (the arrivals stream is read by the gaps alone here,
    # and by nothing after the loop), so the one drawn and not used at the end changes nothing
    cdef bint gap_ahead = st.arrival_kind == A_POISSON
    cdef double gap = poisson_gap(st) if gap_ahead else 0.0
    # likewise an `~exp(m)` work, one session ahead (the session stream is read by the works
    # alone here: the session's other statements are stamps and observes of `now`)
    cdef double work = sq_draw_exp(&st.rng_session, &exp_mean) if exp_work else 0.0
    # (every failure below returns at once: the flag is tested once, here)
    if st.error.code:
        return
    # the arrival slot, kept here as ps_loop keeps it: nothing reads st.arrival in the loop (a
    # renewal's next_arrival writes it, copied at once) nor after it
    arrival.t = st.arrival.t
    arrival.seq = st.arrival.seq
    while True:
        # next_event's choice between the arrival slot and the rest (here fifo_loop's heap)
        top = fifo_top(q, sorted)
        arrives = True
        if before(&arrival, top):
            pass
        elif top.seq == NO_EVENT:
            if arrival.seq == NO_EVENT:
                break
        else:
            arrives = False
            # the arrival limit reached with nothing live ends the run (lone_loop tests it at
            # each event's head): then no arrival is pending (none is scheduled past the limit)
            # nor a finish (a live session's), so it can hold only before a rare event or none
            # (whose case the `break` above is)
            if top.row < 0 and limit > 0 and st.arrivals >= limit and st.live == 0:
                break
        t = arrival.t if arrives else top.t
        fresh = t > st.now
        if fresh:
            if t > until or st.events >= st.poll_at:
                if t > horizon:
                    break
                e.t = t         # (instant_over reads its time)
                if alike:
                    st.live_area = s.number     # (the window's middle reads it)
                if instant_over(st, &e):
                    break
                until = min(fifo_until(st), horizon)
            else:
                st.steps = 0        # (instant_over with nothing else to do)
        row = -1            # no service begins
        leaving = False     # no session goes on
        replace = False     # the service begun is pushed (not put in place of the finish)
        if arrives:
            counted = fifo_begins(st, t, EV_ARRIVE, -1, to_run, fresh and run_fits)
            if counted < 0:
                return
            no_arrival(&arrival)     # (pop_event)
            if st.arrivals < last_before_limit:
                if gap_ahead:
                    schedule_arrival(st, &arrival, st.now + gap)
                    gap = poisson_gap(st)
                else:
                    no_arrival(&st.arrival)
                    if next_arrival(st) < 0:
                        return
                    arrival.t = st.arrival.t
                    arrival.seq = st.arrival.seq
            # the session's work taken and the next drawn here, beside the gap's draw: the two
            # `log` calls adjacent, the loop's live values are stored and reloaded once around
            # both (every xmm register is caller-saved). Exact: the draw is on the session
            # stream, which only the works read, and it cannot fail (another work's draw, which
            # can, stays in its place below, after the session's steps)
            if exp_work:
                w = work
                work = sq_draw_exp(&st.rng_session, &exp_mean)     # (draw1_value's, inline)
            # new_session: a slot when more are live than ever before (session_alloc)
            if st.live == st.sess.high and session_alloc(st) < 0:
                return
            job.serial = session_in(st)
            job.enq = st.now
            if not counted and fifo_steps(st, job.serial, st.session_pc, to_run, False):
                return
            counted = 0     # (the observes' and the end's steps: fifo_leave counts them)
            if not exp_work:
                w = lone_work(st, -1)
                if st.error.code:
                    return
            if w > 0:
                # new_job and join_fifo
                if s.n == st.jobs.high and job_alloc(st) < 0:
                    return
                if s.n == 0:
                    mark_row(st.stages_sampled, k)
                s.n += 1
                st.next_job_id += 1
                job.at = w
                if s.busy < s.servers:
                    q.nidle -= 1
                    row = q.idle[q.nidle]
                elif fifo_wait(st, q, job) < 0:
                    return
            else:
                done = job         # zero work: the session goes on now
                leaving = True
        elif top.row >= 0:
            # job_done and next_in_line: the server's row takes the next job in line (its
            # finish in place of this one), then the session whose job is done goes on
            counted = fifo_begins(st, t, EV_FINISH, k, to_end, fresh and end_fits)
            if counted < 0:
                return
            row = <int32_t> top.row
            done = q.serving[row]
            s.n -= 1
            job_measured(st, s, done.enq, done.at)
            s.busy -= 1
            if q.n > 0:
                job = fifo_next(q)
                replace = True
            else:
                q.idle[q.nidle] = row
                q.nidle += 1
                row = -1
                fifo_pop(q, sorted)
            leaving = True
        else:
            e = q.rare[-1 - top.row]
            if not event_begins(st, &e):
                return
            fifo_pop(q, sorted)
            handle_rare(st, &e)       # the end of the warm-up
        if row >= 0:
            fifo_serve(st, s, k, q, row, job, replace, sorted)
        if leaving and fifo_leave(st, done.serial, done.enq, counted) < 0:
            return
        area_set(&s.number, st.now, <double> s.n)
        if not alike:       # (alike: st.live_area is copied from s.number where it is read)
            area_set(&st.live_area, st.now, <double> st.live)
        area_set(&s.busy_area, st.now, 1.0 if s.n > 0 else 0.0)     # (busy_value of an unshared stage)


cdef inline double fifo_until(State* st) noexcept nogil:
    """Until when instant_over has nothing to do but clear the steps, its poll aside: the middle
    of the window if it is not taken yet (-inf: gauges are read at every instant)."""
    if st.n_gauges > 0:
        return -INFINITY
    return INFINITY if st.mid_taken else st.mid_time


cdef inline void fifo_serve(State* st, Stage* s, int32_t k, FifoLine* q, int32_t row, FifoJob job,
                            bint replace, bint sorted) noexcept nogil:
    """begin_service: the job (its `at` its work) starts now in the server's row; its finish
    (push_event's seq) is pushed, or put in place of the earliest event (replace: the finish
    that freed the row, on top: it is taken out and the new one put in its order in one pass)."""
    cdef FifoEnd e
    e.t = st.now + job.at
    e.seq = st.seq
    st.seq += 1
    e.row = row
    s.busy += 1
    job.at = st.now
    q.serving[row] = job
    if not replace:
        fifo_push(q, e, sorted)
    elif sorted:
        fifo_insert(q.ends, q.nends, e)
    else:
        heap_down(q.ends, 0, q.nends, e)


cdef inline FifoJob fifo_next(FifoLine* q) noexcept nogil:
    cdef FifoJob job = q.line[q.head]
    q.head = (q.head + 1) & (q.cap - 1)
    q.n -= 1
    return job


cdef inline int fifo_wait(State* st, FifoLine* q, FifoJob job) noexcept nogil:
    """The job joins the waiting line (the ring grown first when full)."""
    if q.n == q.cap and fifo_grow(st, q) < 0:
        return -1
    q.line[(q.head + q.n) & (q.cap - 1)] = job
    q.n += 1
    return 0


cdef int fifo_grow(State* st, FifoLine* q) noexcept nogil:
    """ring_push's growth: the ring doubled, its order kept."""
    cdef int64_t i
    cdef FifoJob* p = <FifoJob*> malloc(2 * q.cap * sizeof(FifoJob))
    if p == NULL:
        fail(st, E_MEMORY, -1, 0, 0, 0)
        return -1
    for i in range(q.n):
        p[i] = q.line[(q.head + i) & (q.cap - 1)]
    free(q.line)
    q.line = p
    q.head = 0
    q.cap *= 2
    return 0


cdef inline bint fifo_steps(State* st, int64_t serial, int32_t pc, int32_t n, bint only_all) noexcept nogil:
    """n statements of the session from pc (SV_LEN apart) count as steps of the instant, as
    `stuck` counts them one by one: True when one is too many (the run failed at it). With
    only_all they are counted only if all fit (True, nothing counted, when they do not: the
    caller counts them one by one between its other work)."""
    cdef int32_t i
    if st.steps + n <= st.step_limit:
        st.steps += n
        return False
    if only_all:
        return True
    for i in range(n):
        st.steps += 1
        if st.steps > st.step_limit:
            fail_as(st, E_STUCK, serial, 0, pc + i * SV_LEN, 0)
            return True
    return False


cdef inline int fifo_leave(State* st, int64_t serial, double arrived, bint counted) noexcept nogil:
    """lone_leave for fifo_loop's session: each observe of `now - stamp`, then its end (their
    steps already counted when `counted`)."""
    cdef int32_t pc = st.lone.after_pc, i, n = st.lone.n_observes
    cdef double v
    if not counted and fifo_steps(st, serial, pc, n + 1, True):
        return fifo_leave_stepwise(st, serial, arrived)
    # (all the steps counted: the observes, each of the same value, then the end)
    if st.warm:
        v = st.now - arrived
        for i in range(n):
            if record_as(st, st.stmts[pc + i * SV_LEN + SV_TARGET], v, serial, 0.0) < 0:
                return -1
    session_out(st)
    return 0


cdef int fifo_leave_stepwise(State* st, int64_t serial, double arrived) noexcept nogil:
    """fifo_leave when its steps do not all fit the instant's bound: counted one by one, where one
    is too many (out of line: it keeps fifo_leave small enough for gcc to inline)."""
    cdef int32_t pc = st.lone.after_pc, i, n = st.lone.n_observes
    for i in range(n):
        if fifo_steps(st, serial, pc + i * SV_LEN, 1, False):
            return -1
        if st.warm and record_as(st, st.stmts[pc + i * SV_LEN + SV_TARGET], st.now - arrived, serial, 0.0) < 0:
            return -1
    if fifo_steps(st, serial, pc + n * SV_LEN, 1, False):
        return -1
    session_out(st)
    return 0


cdef enum:
    NOBODY = -1     # lone_arrival, lone_finish: no session goes on in this instant
    FAILED = -2     # the run failed
    LONE_RATES = 64     # lone_loop's table of a constant φ's rates: φ / n for n below this
    FIFO_SORTED = 8     # fifo_loop keeps its events in a sorted array for 2 to this many servers


cdef inline int32_t lone_arrival(State* st, Stage* s, int32_t k) noexcept nogil:
    """A session arrives: its stamps (kept as its job's arrival time) and its run. Returns the
    session when its run took no time (it goes on now), else NOBODY (or FAILED)."""
    cdef int32_t slot = new_session(st), pc = st.session_pc, j
    cdef double w
    if slot < 0:
        return FAILED
    while pc <= st.lone.run_pc:
        if stuck(st, slot, pc):
            return FAILED
        pc += SV_LEN      # (past the run when the loop ends: pc is read only before)
    w = lone_work(st, slot)
    if st.error.code:
        return FAILED
    if not (w > 0):
        return slot         # zero work: no job
    j = new_job(st, s, k, slot, w)
    if j < 0:
        return FAILED
    if s.kind == K_FIFO:
        j = join_fifo(st, s, k, j)
    elif s.kind == K_PS:
        j = join_ps(st, s, k, j, w)
    else:
        j = begin_service(st, s, k, j)     # delay
    return FAILED if j < 0 else NOBODY


cdef inline double lone_work(State* st, int32_t slot) noexcept nogil:
    """The session's work for its run, drawn on the session stream (st.error set if it failed)."""
    if st.shapes[st.lone.work] == XS_DRAW1:
        return draw1_value(st, st.code + st.lone.work, &st.rng_session)
    if st.shapes[st.lone.work] == XS_DRAW2:      # (M/G/1's `~h2(1, 4)`: no call of evaluate)
        return draw2_value(st, st.code + st.lone.work, &st.rng_session)
    return evaluate(st, st.lone.work, slot, &st.rng_session, NAN)


cdef inline int32_t lone_finish(State* st, Stage* s, Event* e, double* arrived) noexcept nogil:
    """A job finishes (`finish`) and the next one in line starts; returns the session that goes
    on (its arrival time in `arrived`), NOBODY for a stale finish, or FAILED."""
    cdef int32_t j = finishing_job(st, s, e), owner
    if j < 0:
        return NOBODY       # a stale finish
    arrived[0] = st.jobs.enq[j]
    owner = job_done(st, s, j)
    if next_in_line(st, s, e.a) < 0:
        return FAILED
    return owner


cdef inline int lone_leave(State* st, int32_t slot, double arrived) noexcept nogil:
    """The session after its run: each observe of `now - stamp` (the stamp is its arrival time),
    then its end."""
    cdef int32_t pc = st.lone.after_pc, i
    for i in range(st.lone.n_observes):
        if stuck(st, slot, pc):
            return -1
        if st.warm and record_as(st, st.stmts[pc + SV_TARGET], st.now - arrived, st.sess.serial[slot], 0.0) < 0:
            return -1
        pc += SV_LEN
    if stuck(st, slot, pc):
        return -1
    return end_session(st, slot)

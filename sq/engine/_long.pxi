# Long runs: polled stops (SIGINT, the wall-clock limit), progress, and runs that keep no samples.
#
# The loop stays pure C: between instants it compares the event count with `poll_at` (one
# comparison); at that count `poll` reads the monotonic clock and sets the next count so that
# polls come every 1–4 ms whatever an event costs. Every ~50 ms it takes the GIL to run the
# Python signal handlers (PyErr_CheckSignals) and the progress callback. A stop is taken only
# between instants, so the state at `now` is settled and the report covers [0, now].
from cpython.exc cimport PyErr_CheckSignals
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

from sq.results._sketch cimport Summary, Fold, from_total_order_key, summary_start, summary_add, fold_start, fold_change, fold_segment

cdef enum:
    STOP_INTERRUPT = 1      # a signal handler (or the progress callback) raised
    STOP_WALL = 2           # the wall-clock limit passed
    POLL_MAX = 65536        # events between polls, at most
    TRACE_CHUNK = 4096      # iterations (or evictions) kept before the trace goes to its sink
    TRACE_ENTRIES = 65536   # iteration entries kept before the same
    # what one kept trace entry is charged toward max_memory (and handed back when streamed)
    ITER_BYTES = 16         # an iteration: time, count
    ITER_ENTRY_BYTES = 40   # one of its entries: serial, turn, mode, tokens
    EVICT_BYTES = 24        # an eviction: time, key, units
    # the stall guard: a run is judged every STALL_WINDOW events (at the end of an instant), and
    # stopped after STALL_WINDOWS windows in a row at a pace that cannot reach the horizon
    STALL_WINDOW = 1 << 24
    STALL_WINDOWS = 2

cdef extern from *:
    """
    #define SQ_PYTHON_EVERY 0.05
    #define SQ_STALL_EVENTS 9223372036854775808.0
    """
    const double PYTHON_EVERY "SQ_PYTHON_EVERY"   # seconds between visits to Python
    # a horizon that would take more events than this (2^63, what `events` can count) at the pace
    # of the last windows is never reached
    const double STALL_EVENTS "SQ_STALL_EVENTS"


cdef inline double monotonic() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <double> ts.tv_sec + 1e-9 * <double> ts.tv_nsec


cdef class _Watch:
    """What the loop reports to while it runs: the progress callback, the debug traces' sinks,
    and the exception a signal handler, the callback or a sink raised (the run stops at it)."""
    cdef public object progress       # callable(now, events, arrivals) or None
    cdef public object iterations     # callable(list of ITER lines) or None
    cdef public object evictions      # callable(list of EVICT lines) or None
    cdef public object exception

    def __init__(self, progress=None, iterations=None, evictions=None):
        self.progress = progress
        self.iterations = iterations
        self.evictions = evictions
        self.exception = None


# ---- the debug traces, streamed: the engine keeps a chunk, Python formats and takes it -------
cdef inline bint trace_full(State* st) noexcept nogil:
    return st.traces.it_time.n >= TRACE_CHUNK or st.traces.it_serial.n >= TRACE_ENTRIES or st.traces.ev_time.n >= TRACE_CHUNK


cdef inline void trace_logged(State* st) noexcept nogil:
    """After a trace entry: a full chunk makes the loop poll at the next instant, which hands
    it to Python (the loop only stops between instants; an instant's entries are bounded)."""
    if trace_full(st):
        st.poll_at = st.events


cdef void trace_flush(State* st):
    """Hand the kept entries to the sinks as lines and forget them (their bytes no longer count
    toward max_memory). Raises what a sink raises."""
    watch = <_Watch> st.poller
    if st.traces.it_time.n:
        lines = _iteration_lines(st)
        st.mem_bytes -= ITER_BYTES * st.traces.it_time.n + ITER_ENTRY_BYTES * st.traces.it_serial.n
        st.traces.it_time.n = st.traces.it_count.n = st.traces.it_serial.n = st.traces.it_turn.n = st.traces.it_mode.n = st.traces.it_tokens.n = 0
        watch.iterations(lines)
    if st.traces.ev_time.n:
        lines = _eviction_lines(st)
        st.mem_bytes -= EVICT_BYTES * st.traces.ev_time.n
        st.traces.ev_time.n = st.traces.ev_key.n = st.traces.ev_units.n = 0
        watch.evictions(lines)


cdef int trace_flush_polled(State* st) noexcept with gil:
    watch = <_Watch> st.poller
    try:
        PyErr_CheckSignals()    # a Ctrl-C pending since the loop stops the run before the chunk is taken
        trace_flush(st)
    except BaseException as exc:
        watch.exception = exc
        # A failed sink is not asked again. A Ctrl-C is no failure: it lands in whatever Python
        # code runs (the lines' formatting, mostly), and the run's last flush hands the sinks
        # what was kept, so the trace covers the whole of the report's run.
        if not isinstance(exc, KeyboardInterrupt):
            watch.iterations = watch.evictions = _discard
        return STOP_INTERRUPT
    return 0


def _discard(lines):
    pass


cdef int poll_python(State* st) noexcept with gil:
    watch = <_Watch> st.poller
    try:
        PyErr_CheckSignals()
        if watch.progress is not None:
            watch.progress(st.now, st.events, st.arrivals)
    except BaseException as exc:
        watch.exception = exc
        return STOP_INTERRUPT
    return 0


cdef bint stalled(State* st) noexcept nogil:
    """The stall guard (spec 09 §9.11 allows guards; 0.1.2 runs on forever): True, with the run
    failed (E_STALL), when time advanced so little over the last STALL_WINDOWS windows of
    STALL_WINDOW events each that, at each window's pace, the rest of the horizon would take more
    than STALL_EVENTS events (`loop { run d (1e-310); }` with horizon 50: 5e311 events). A run
    with an arrival limit may end at it long before its horizon, and one with an infinite horizon
    has no share to gain: neither is judged. Called between instants, so a window's time is
    that of the instants it holds."""
    cdef double step = (st.now - st.stall_time) / <double> (st.events - st.stall_events)
    cdef Event* nxt
    cdef int32_t slot = -1, pc = -1
    if st.limit == 0 and st.horizon < INFINITY and st.horizon - st.now > step * STALL_EVENTS:
        st.stall_windows += 1
    else:
        st.stall_windows = 0
    st.stall_time = st.now
    st.stall_events = st.events
    st.stall_at = st.events + STALL_WINDOW
    if st.stall_windows < STALL_WINDOWS:
        return False
    # the statement: that of the session the next event finishes a job of (the session waits
    # with its pc just past the `run`)
    nxt = next_event(st)
    if nxt != NULL and nxt.kind == EV_FINISH and 0 <= nxt.b < st.jobs.high and st.jobs.rec[nxt.b].id >= 0:
        slot = st.jobs.rec[nxt.b].owner
        pc = st.sess.pc[slot]
    fail(st, E_STALL, slot, step, pc, nxt.a if nxt != NULL and nxt.kind == EV_FINISH else -1)
    return True


cdef bint poll(State* st) noexcept nogil:
    """Called between instants once `events` reaches `poll_at`: True when the run must stop."""
    cdef double t = monotonic(), dt = t - st.poll_wall
    if st.events >= st.stall_at and stalled(st):
        return True
    if trace_full(st):
        st.stop = trace_flush_polled(st)
        if st.stop:
            return True
    if dt < 0.001 and st.poll_every < POLL_MAX:
        st.poll_every *= 2
    elif dt > 0.004 and st.poll_every > 1:
        st.poll_every //= 2
    st.poll_wall = t
    st.poll_at = st.events + st.poll_every
    if st.wall_deadline > 0.0 and t >= st.wall_deadline:
        st.stop = STOP_WALL
    elif t >= st.poll_python:
        st.poll_python = t + PYTHON_EVERY
        st.stop = poll_python(st)
    return st.stop != 0


cdef void poll_start(State* st, _Watch watch, double wall_limit) noexcept:
    cdef double t = monotonic()
    st.poller = <void*> watch
    st.poll_every = 64
    st.poll_at = st.poll_every
    st.poll_wall = t
    st.poll_python = t + PYTHON_EVERY
    st.wall_deadline = t + wall_limit if wall_limit > 0.0 else 0.0
    st.stall_at = STALL_WINDOW
    st.stall_events = 0
    st.stall_time = 0.0
    st.stall_windows = 0


# ---- samples="none": summaries instead of samples ----------------------------------------------
cdef void summaries_start(State* st) noexcept nogil:
    cdef int32_t k
    for k in range(st.n_observes):
        summary_start(&st.observes[k].summary)
    for k in range(st.n_gauges):
        fold_start(&st.gauges[k].fold, st.warmup, st.horizon)


cdef inline int record_summary(State* st, Observe* o, double v) noexcept nogil:
    # the report measures samples at t >= warmup only: without samples, those are all it sees
    if st.now < st.warmup:
        return 0
    if summary_add(&o.summary, v) < 0:
        fail(st, E_MEMORY, -1, 0, 0, 0)
        return -1
    return 0


cdef inline void gauge_fold_read(Gauge* g, double now, double v) noexcept nogil:
    # the change test of read_gauges: a new segment only when the value read differs
    if not g.fold.has or v != g.fold.value:
        fold_change(&g.fold, now, v)


cdef void folds_end(State* st, double end) noexcept nogil:
    cdef int32_t k
    cdef Fold* f
    for k in range(st.n_gauges):
        f = &st.gauges[k].fold
        if f.has:
            fold_segment(f, f.since, end, f.value)


cdef void summaries_free(State* st) noexcept:
    cdef int32_t k
    for k in range(st.n_observes if st.observes != NULL else 0):     # a half-built state: none yet
        free(st.observes[k].summary.positive.cells)
        free(st.observes[k].summary.negative.cells)


cdef object _summary(R, Summary* s):
    cdef int64_t i, full = s.batches.full
    return R.ObserveSummary(
        n=s.n, mean=s.mean, m2=s.m2,
        least=from_total_order_key(s.least_key), greatest=from_total_order_key(s.greatest_key),
        batch_size=s.batches.size, batch_sums=np.array([s.batches.sums[i] for i in range(full)]),
        positive=_itl(R, &s.positive), negative=_itl(R, &s.negative),
        nan_low=s.nan_low, nan_high=s.nan_high)


cdef object _fold(R, Fold* f, double end):
    """The fold's windows: the complete ones, and the last if it ends within a rounding of `end`."""
    cdef int64_t i, n = f.full
    cdef double hi = f.start + <double> (f.full + 1) * f.width
    if f.held and end >= hi - 1e-9 * f.width:
        n += 1
    return R.GaugeFold(held=f.held, total=f.total, least=f.least, greatest=f.greatest,
                       window=f.width, window_sums=np.array([f.sums[i] for i in range(n)]))


def summary_of(samples):
    """The Summary the engine keeps for these samples, one at a time (tests hold the report's
    approximate fields to the exact ones through it)."""
    import sq.results.raw as R
    cdef Summary s
    memset(&s, 0, sizeof(Summary))
    summary_start(&s)
    try:
        for x in samples:
            if summary_add(&s, <double> x) < 0:
                raise MemoryError()
        return _summary(R, &s)
    finally:
        free(s.positive.cells)
        free(s.negative.cells)

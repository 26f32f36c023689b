# The timeline of a run (issue 11): a Chrome / Perfetto trace-event file, streamed as the run
# goes (bounded memory: what is open now, never what was written). Included by sq/_engine.pyx;
# every function here runs without the GIL, and only when `st.tl` is set.
#
# Processes and threads of the file (the header the Python side writes names them):
#   pid 1 "stages": stage k's lanes are threads k * lanes_per_stage + lane + 1. A step stage's
#     iterations are slices on its lane 0 (they never overlap); a fifo, ps or delay stage's
#     jobs take the first lane free when their service starts, so slices on a lane never
#     overlap and a fifo(c) stage shows at most c lanes.
#   pid 2 "pools": one counter track per pool (used, cached, queue), written when they change.
#   pid 3 "sessions": session s has thread 2s + 1 (the session and its turns) and 2s + 2 (its
#     waits for admission and its holds; a preemption ends a hold and starts a wait).
# Times are simulated time units written as seconds (ts and dur in microseconds).

cdef enum:                  # the file's processes
    TL_STAGES = 1
    TL_POOLS = 2
    TL_SESSIONS = 3


cdef inline FILE* tl_file(State* st) noexcept nogil:
    return <FILE*> st.tl.f


cdef inline bint tl_overlaps(Timeline* tl, double a, double b) noexcept nogil:
    return b >= tl.t0 and a <= tl.t1


cdef inline void tl_number(FILE* f, double x) noexcept nogil:
    if isfinite(x):
        fprintf(f, "%.17g", x)
    else:
        fputs("null", f)


cdef void tl_span(FILE* f, double a, double b) noexcept nogil:
    """`"ts":…,"dur":…` in microseconds to the nanosecond, both ends rounded alike, so that
    slices that touch in simulated time touch in the file too."""
    cdef double ts = rint(a * 1e9), end = rint(b * 1e9)
    fprintf(f, "\"ts\":%.3f,\"dur\":%.3f", ts / 1e3, (end - ts) / 1e3)


cdef void tl_slice(State* st, const char* name, int pid, int64_t tid, double a, double b) noexcept nogil:
    """The head of a complete event ("X") from a to b; the caller writes `,"args":{…}}` or `}`."""
    fprintf(tl_file(st), ",\n{\"ph\":\"X\",\"name\":\"%s\",\"pid\":%d,\"tid\":%lld,", name, pid, <long long> tid)
    tl_span(tl_file(st), a, b)


cdef void tl_thread_name(State* st, int pid, int64_t tid, const char* name, const char* suffix,
                         int64_t number) noexcept nogil:
    fprintf(tl_file(st), ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%lld,\"ts\":0,"
            "\"args\":{\"name\":\"%s%s%lld\"}}", pid, <long long> tid, name, suffix, <long long> number)


# ---- stages -------------------------------------------------------------------------------------
cdef void tl_iteration(State* st, int32_t k, double duration, double prefill, double decode,
                       int64_t batch, double decodes) noexcept nogil:
    cdef FILE* f = tl_file(st)
    cdef const char* name
    if not isfinite(duration) or not tl_overlaps(st.tl, st.now, st.now + duration):
        return
    if batch == 0:
        name = "preempt only"
    elif prefill > 0 and decodes > 0:
        name = "mixed"
    elif decodes > 0:
        name = "decode"
    else:
        name = "prefill"
    tl_slice(st, name, TL_STAGES, k * st.tl.lanes_per_stage + 1, st.now, st.now + duration)
    fputs(",\"cat\":\"iteration\",\"args\":{\"prefill_tokens\":", f)
    tl_number(f, prefill)
    fputs(",\"decode_tokens\":", f)
    tl_number(f, decode)
    fprintf(f, ",\"batch\":%lld,\"decodes\":%lld,\"residents\":%lld}}", <long long> batch,
            <long long> decodes, <long long> st.stages[k].nres)


cdef void tl_service_start(State* st, int32_t k, int32_t j) noexcept nogil:
    """A fifo, ps or delay job starts service: it takes the stage's first free lane (so a
    stage shows as many lanes as jobs it ever served at once)."""
    cdef Timeline* tl = st.tl
    cdef int64_t l, n = tl.nlanes[k]
    if tl.job_cap < st.jobs.cap:
        if not grow(<void**> &tl.job_lane, st.jobs.cap * sizeof(int64_t)):
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return
        tl.job_cap = st.jobs.cap
    for l in range(n):
        if not tl.lane_busy[k][l]:
            break
    else:
        if not grow(<void**> &tl.lane_busy[k], (n + 1) * sizeof(char)):
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return
        tl.nlanes[k] = n + 1
        l = n
        if l > 0:
            tl_thread_name(st, TL_STAGES, k * tl.lanes_per_stage + l + 1, tl.stage_names[k], " #", l + 1)
    tl.lane_busy[k][l] = 1
    tl.job_lane[j] = l


cdef void tl_service_end(State* st, int32_t k, int32_t j, const char* name) noexcept nogil:
    """The job leaves service (done, or removed by a preemption): its slice on its lane."""
    cdef FILE* f = tl_file(st)
    cdef int64_t lane = st.tl.job_lane[j]
    cdef int32_t owner = st.jobs.rec[j].owner
    st.tl.lane_busy[k][lane] = 0
    if not tl_overlaps(st.tl, st.jobs.start[j], st.now):
        return
    tl_slice(st, name, TL_STAGES, k * st.tl.lanes_per_stage + lane + 1, st.jobs.start[j], st.now)
    fprintf(f, ",\"cat\":\"service\",\"args\":{\"session\":%lld,\"wait\":",
            <long long> (st.sess.serial[owner] if owner >= 0 else -1))
    tl_number(f, st.jobs.start[j] - st.jobs.enq[j])
    fputs("}}", f)


# ---- pools --------------------------------------------------------------------------------------
cdef void tl_pools(State* st) noexcept nogil:
    """Each pool's counters at `now`, when they changed since last written."""
    cdef Timeline* tl = st.tl
    cdef FILE* f = tl_file(st)
    cdef int32_t k
    cdef Pool* p
    cdef double* last
    if st.now < tl.t0 or st.now > tl.t1:
        return
    for k in range(st.n_pools):
        p = &st.pools[k]
        last = &tl.pool_last[3 * k]
        if tl.counters_started and last[0] == p.used and last[1] == p.cached and last[2] == <double> p.qlen:
            continue
        last[0] = p.used
        last[1] = p.cached
        last[2] = <double> p.qlen
        fprintf(f, ",\n{\"ph\":\"C\",\"name\":\"%s\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,\"args\":{\"used\":",
                tl.pool_names[k], TL_POOLS, st.now * 1e6)
        tl_number(f, p.used)
        fputs(",\"cached\":", f)
        tl_number(f, p.cached)
        fprintf(f, ",\"queue\":%lld}}", <long long> p.qlen)
    tl.counters_started = 1


# ---- sessions -----------------------------------------------------------------------------------
cdef bint tl_reserve(State* st) noexcept nogil:
    """Per-session and per-frame arrays as large as the session table."""
    cdef Timeline* tl = st.tl
    cdef int64_t cap = st.sess.cap, d = st.hold_depth_max, i
    if tl.cap >= cap:
        return True
    if not grow(<void**> &tl.sess_start, cap * sizeof(double)) \
            or not grow(<void**> &tl.turn_start, cap * sizeof(double)) \
            or not grow(<void**> &tl.turn_no, cap * sizeof(int64_t)) \
            or not grow(<void**> &tl.wait_start, cap * d * sizeof(double)) \
            or not grow(<void**> &tl.hold_start, cap * d * sizeof(double)):
        fail(st, E_MEMORY, -1, 0, 0, 0)
        return False
    for i in range(tl.cap * d, cap * d):
        tl.wait_start[i] = NAN
        tl.hold_start[i] = NAN
    tl.cap = cap
    return True


cdef inline int64_t tl_session_tid(State* st, int32_t slot) noexcept nogil:
    return 2 * st.sess.serial[slot] + 1


cdef void tl_session_start(State* st, int32_t slot) noexcept nogil:
    if not tl_reserve(st):
        return
    st.tl.sess_start[slot] = st.now
    st.tl.turn_start[slot] = NAN


cdef void tl_close_turn(State* st, int32_t slot) noexcept nogil:
    cdef double start = st.tl.turn_start[slot]
    if start == start and tl_overlaps(st.tl, start, st.now):
        tl_slice(st, "turn", TL_SESSIONS, tl_session_tid(st, slot), start, st.now)
        fprintf(tl_file(st), ",\"cat\":\"turn\",\"args\":{\"turn\":%lld}}", <long long> st.tl.turn_no[slot])
    st.tl.turn_start[slot] = NAN


cdef void tl_turn(State* st, int32_t slot) noexcept nogil:
    tl_close_turn(st, slot)
    st.tl.turn_start[slot] = st.now
    st.tl.turn_no[slot] = turn_of(st.sess.attrs[<int64_t> slot * st.n_attrs + st.slot_turn])


cdef void tl_session_end(State* st, int32_t slot) noexcept nogil:
    cdef int64_t tid = tl_session_tid(st, slot)
    cdef double start = st.tl.sess_start[slot]
    tl_close_turn(st, slot)
    if not tl_overlaps(st.tl, start, st.now):
        return
    tl_slice(st, "session", TL_SESSIONS, tid, start, st.now)
    fprintf(tl_file(st), ",\"cat\":\"session\",\"args\":{\"session\":%lld}}", <long long> st.sess.serial[slot])
    tl_thread_name(st, TL_SESSIONS, tid, "session", " ", st.sess.serial[slot])
    tl_thread_name(st, TL_SESSIONS, tid + 1, "session", " holds ", st.sess.serial[slot])


cdef void tl_hold_slice(State* st, int32_t slot, int64_t fi, const char* what, double start) noexcept nogil:
    """`wait` or `hold` of frame fi over [start, now], named after the hold's pools."""
    cdef FILE* f = tl_file(st)
    cdef int32_t i, n = st.holds[st.hold_offsets[st.sess.frame_hold[fi]] + H_NPOOLS]
    if not tl_overlaps(st.tl, start, st.now):
        return
    fprintf(f, ",\n{\"ph\":\"X\",\"name\":\"%s ", what)
    for i in range(n):
        fprintf(f, "%s%s", ", " if i > 0 else "", st.tl.pool_names[st.sess.frame_member[fi * st.hold_pools_max + i]])
    fprintf(f, "\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%lld,", what, TL_SESSIONS,
            <long long> (tl_session_tid(st, slot) + 1))
    tl_span(f, start, st.now)
    fputs("}", f)


cdef void tl_queued(State* st, int64_t fi) noexcept nogil:
    st.tl.wait_start[fi] = st.now


cdef void tl_admitted(State* st, int32_t slot, int64_t fi) noexcept nogil:
    # an admission on the spot is no wait worth a slice
    if st.tl.wait_start[fi] == st.tl.wait_start[fi] and st.tl.wait_start[fi] < st.now:
        tl_hold_slice(st, slot, fi, "wait", st.tl.wait_start[fi])
    st.tl.wait_start[fi] = NAN
    st.tl.hold_start[fi] = st.now


cdef void tl_released(State* st, int32_t slot, int64_t fi) noexcept nogil:
    """The frame ends (its body done, its session preempted or gone): close what is open."""
    if st.tl.hold_start[fi] == st.tl.hold_start[fi]:
        tl_hold_slice(st, slot, fi, "hold", st.tl.hold_start[fi])
    if st.tl.wait_start[fi] == st.tl.wait_start[fi]:
        tl_hold_slice(st, slot, fi, "wait", st.tl.wait_start[fi])
    st.tl.hold_start[fi] = NAN
    st.tl.wait_start[fi] = NAN


cdef void tl_preempted(State* st, int32_t slot) noexcept nogil:
    if tl_overlaps(st.tl, st.now, st.now):
        fprintf(tl_file(st), ",\n{\"ph\":\"i\",\"name\":\"preempted\",\"s\":\"t\",\"pid\":%d,\"tid\":%lld,"
                "\"ts\":%.3f}", TL_SESSIONS, <long long> (tl_session_tid(st, slot) + 1), st.now * 1e6)


cdef void tl_finish(State* st) noexcept nogil:
    """At the end of the run: the sessions still alive, with their open holds and turns."""
    cdef int64_t slot
    cdef int32_t d
    for slot in range(st.sess.high):
        if st.sess.alive[slot]:
            for d in range(st.sess.depth[slot] - 1, -1, -1):
                tl_released(st, <int32_t> slot, frame_of(st, <int32_t> slot, d))
            tl_session_end(st, <int32_t> slot)

# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The event loop: sessions as statement-code coroutines, stages, the clock.

`run(lowered, ...)` copies the lowered tables' pointers into one C `State`,
runs the whole simulation without the GIL, then turns the C arrays into a
`sq.results.RawResults`. Semantics follow spec chapter 09 (event loop),
04 §4.0–4.4 (fifo, ps, delay) and 02/03/07 (sessions, statements,
expressions); it reads the bytecode and tables of `sq/_bytecode.pxd`, which
`sq/lower.py` writes.
"""
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.stdio cimport FILE, fopen, fclose, fputs, fprintf, ferror
from libc.errno cimport errno
from libc.string cimport memset, memcpy, memmove
from libc.math cimport NAN, INFINITY, log, fabs, floor, ceil, sqrt, exp, pow, fmin, fmax, isfinite, rint

cimport numpy as cnp
from cpython.pycapsule cimport PyCapsule_New, PyCapsule_GetPointer, PyCapsule_Destructor
import os

import numpy as np

from sq._random cimport (sq_rng, sq_rng_seed, sq_rng_random_f64, sq_rng_range_u32, sq_draw,
                         SQ_STREAM_ARRIVAL_MASK, SQ_STREAM_WORKLOAD_MASK, SQ_STREAM_SESSION_MASK,
                         SQ_STREAM_TRACE_MASK, SQ_STREAM_EVICTION_MASK)
from sq._itl cimport Histogram, histogram_add
from sq._engine cimport Area, Event, DArr, LArr, Running, Serials, Turns, PsEntry, Stage, Observe, Gauge, State, Timeline

cnp.import_array()

# the bytecode and tables lowering writes: opcodes, operand offsets, kinds (sq/_bytecode.pxd)
from sq._bytecode cimport *
from sq._bytecode import STEP_EXPRS_DTYPE, STEP_SERVE_DTYPE, SPILL_DTYPE

cdef enum EventKind:
    EV_ARRIVE = 0
    EV_FINISH = 1
    EV_END_WARMUP = 2
    EV_LEASE_END = 3
    EV_ITER_END = 4
    EV_FLOW_END = 5

# run-time errors, turned into SqError after the loop
cdef enum RunError:
    E_NONE = 0
    E_MEMORY = 1
    E_BRANCH = 2
    E_INDEX = 3
    E_STAGE_INDEX = 4
    E_POOL_INDEX = 5
    E_BUDGET_LEFT = 6
    E_RENEWAL = 7
    E_STUCK = 8
    E_GROW_OUTSIDE = 9
    E_LOAD_OUTSIDE = 10
    E_LOAD_FIT = 11
    E_GROWING_OUTSIDE = 12
    E_SPILL_CYCLE = 13
    E_TOO_MANY = 14
    E_INVARIANT = 15       # debug mode: the engine's bookkeeping disagrees (_invariants.pxi)
    E_SPILL_VIA_STEP = 16  # 0.1.2 panics: a step stage cannot carry a spill's transfer
    E_NESTING = 17         # budget_left calls nested deeper than the expression stack (a guard)
    E_MEMORY_LIMIT = 18    # the run's tables would pass max_memory bytes

cdef enum:
    # live sessions at once: beyond this the run would only exhaust memory
    MAX_SESSIONS = 1 << 24
    # statements and events allowed within one instant before the run is declared stuck
    # (0.1.2 hangs there; §9.11 allows a guard); `run(step_limit=...)` changes it
    STEPS_PER_INSTANT = 100000000

# Constants as C literals (beyond a C enum's int, or real), so the C compiler folds them as it did
# Cython's DEFs.
cdef extern from *:
    """
    /* a session that was never admitted to a hold reads `admission` as u64::MAX */
    #define SQ_NEVER_ADMITTED 18446744073709551615.0
    #define SQ_EPS 1e-9
    #define SQ_EWMA 0.01
    /* an arrival limit the run cannot reach (sessions are counted in int64): the engine stops at
       min(limit, this), the report names the limit asked for (0.1.2 takes any u64) */
    #define SQ_ARRIVALS_NEVER 4611686018427387904LL
    /* the engine's memory bound by default (run(max_memory=...), --max-memory): what the tables that
       grow with a run may take (session slots x attributes and holds, samples, cache entries, traces) */
    #define SQ_MAX_MEMORY 4294967296LL
    """
    const double NEVER_ADMITTED "SQ_NEVER_ADMITTED"
    const double EPS "SQ_EPS"
    const double EWMA "SQ_EWMA"
    const int64_t ARRIVALS_NEVER "SQ_ARRIVALS_NEVER"
    const int64_t MAX_MEMORY "SQ_MAX_MEMORY"


# ---- growable arrays ------------------------------------------------------------
cdef inline int darr_push(DArr* a, double v) noexcept nogil:
    # the common case inline (a sample per record); growth out of line
    if a.n == a.cap and darr_grow(a) < 0:
        return -1
    a.p[a.n] = v
    a.n += 1
    return 0


cdef int darr_grow(DArr* a) noexcept nogil:
    cdef int64_t cap = a.cap * 2 if a.cap else 16
    cdef double* p = <double*> realloc(a.p, cap * sizeof(double))
    if p == NULL:
        return -1
    a.p = p
    a.cap = cap
    return 0


cdef int larr_push(LArr* a, int64_t v) noexcept nogil:
    cdef int64_t cap
    cdef int64_t* p
    if a.n == a.cap:
        cap = a.cap * 2 if a.cap else 16
        p = <int64_t*> realloc(a.p, cap * sizeof(int64_t))
        if p == NULL:
            return -1
        a.p = p
        a.cap = cap
    a.p[a.n] = v
    a.n += 1
    return 0


cdef inline void running_add(Running* r, double x) noexcept nogil:
    # sq.stats.welford's mean, step for step, so the report's mean is the same to the bit
    r.n += 1
    r.mean += (x - r.mean) / <double> r.n


cdef int serials_push(Serials* a, int64_t v) noexcept nogil:
    cdef int64_t cap, k
    cdef int64_t* wide
    if a.p64 == NULL and v > 2147483647:
        # the first serial past 2^31 - 1 (some two billion arrivals in): widen what is there
        cap = a.cap if a.cap else 16
        wide = <int64_t*> malloc(cap * sizeof(int64_t))
        if wide == NULL:
            return -1
        for k in range(a.n):
            wide[k] = a.p32[k]
        free(a.p32)
        a.p32 = NULL
        a.p64 = wide
        a.cap = cap
    if a.n == a.cap:
        cap = a.cap * 2 if a.cap else 16
        if a.p64 != NULL:
            if not grow(<void**> &a.p64, cap * sizeof(int64_t)):
                return -1
        elif not grow(<void**> &a.p32, cap * sizeof(int32_t)):
            return -1
        a.cap = cap
    if a.p64 != NULL:
        a.p64[a.n] = v
    else:
        a.p32[a.n] = <int32_t> v
    a.n += 1
    return 0


cdef int turns_push(Turns* a, uint32_t v) noexcept nogil:
    cdef int64_t cap
    if a.p == NULL:
        if v == 0:
            a.n += 1               # still all zeros: nothing stored
            return 0
        cap = 2 * a.n + 16
        a.p = <uint32_t*> calloc(cap, sizeof(uint32_t))
        if a.p == NULL:
            return -1
        a.cap = cap
    elif a.n == a.cap:
        cap = a.cap * 2
        if not grow(<void**> &a.p, cap * sizeof(uint32_t)):
            return -1
        a.cap = cap
    a.p[a.n] = v
    a.n += 1
    return 0


cdef inline void area_set(Area* a, double now, double v) noexcept nogil:
    a.integral += a.value * (now - a.last)
    a.last = now
    a.value = v


cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil


# A row set is two levels of bits: bits[0] holds ns, the count of summary words; bits[1 .. ns]
# say which words of rows may be nonzero; the row words follow. A pass over the set costs what it
# visits, not the rows declared (up to 4096 rows in one summary word).
cdef uint64_t* rows_new(int64_t n) noexcept nogil:
    cdef int64_t nw = (n + 63) // 64 + 1, ns = (nw + 63) // 64
    cdef uint64_t* bits = <uint64_t*> calloc(1 + ns + nw, sizeof(uint64_t))
    if bits != NULL:
        bits[0] = <uint64_t> ns
    return bits


cdef inline void mark_row(uint64_t* bits, int64_t k) noexcept nogil:
    cdef int64_t w = k >> 6
    bits[1 + <int64_t> bits[0] + w] |= (<uint64_t> 1) << (k & 63)
    bits[1 + (w >> 6)] |= (<uint64_t> 1) << (w & 63)


cdef inline void unmark_row(uint64_t* bits, int64_t k) noexcept nogil:
    cdef int64_t w = k >> 6
    cdef uint64_t* words = bits + 1 + <int64_t> bits[0]
    words[w] &= ~((<uint64_t> 1) << (k & 63))
    if words[w] == 0:
        bits[1 + (w >> 6)] &= ~((<uint64_t> 1) << (w & 63))


cdef inline int64_t next_row(const uint64_t* bits, int64_t k, int64_t n) noexcept nogil:
    """The first row from k on whose bit is set (n: none), reading the bits as they are now
    (a row marked during a pass, after the one being visited, is visited by the same pass)."""
    cdef int64_t ns = <int64_t> bits[0], w = k >> 6, sw
    cdef const uint64_t* words = bits + 1 + ns
    cdef uint64_t b
    if k >= n:
        return n
    b = words[w] & (~(<uint64_t> 0) << (k & 63))
    if b != 0:
        return (w << 6) + __builtin_ctzll(b)
    w += 1                                   # the next word with a row, found in the summary
    sw = w >> 6
    if sw >= ns:
        return n
    b = bits[1 + sw] & (~(<uint64_t> 0) << (w & 63))
    while b == 0:
        sw += 1
        if sw >= ns:
            return n
        b = bits[1 + sw]
    w = (sw << 6) + __builtin_ctzll(b)
    return min(n, (w << 6) + __builtin_ctzll(words[w]))


cdef inline void area_restart(Area* a, double now) noexcept nogil:
    a.integral = 0.0
    a.last = now


cdef inline int64_t saturate_i64(double x) noexcept nogil:
    # Rust's `as i64`: NaN -> 0, out of range -> the bound
    if x != x:
        return 0
    if x >= 9.2233720368547758e18:
        return 9223372036854775807
    if x <= -9.2233720368547758e18:
        return -9223372036854775807 - 1
    return <int64_t> x


cdef inline int64_t turn_of(double x) noexcept nogil:
    # a record carries `turn_no` as an unsigned 32-bit count: NaN and negatives 0, saturating
    if not (x > 0):
        return 0
    if x >= 4294967295.0:
        return 4294967295
    return <int64_t> x


cdef inline void fail(State* st, int code, int slot, double value, int64_t a, int64_t b) noexcept nogil:
    if st.err != E_NONE:
        return
    st.err = code
    st.err_serial = st.serial[slot] if slot >= 0 else -1
    st.err_time = st.now
    st.err_value = value
    st.err_a = a
    st.err_b = b


# ---- the event heap: (time, seq) order -----------------------------------------
# ---- binary min-heaps: the event list (by time, then seq) and each ps stage (by tag, then id) ----
ctypedef fused HeapItem:
    Event
    PsEntry


cdef inline bint before(HeapItem* x, HeapItem* y) noexcept nogil:
    if HeapItem is Event:
        return x.t < y.t or (x.t == y.t and x.seq < y.seq)
    else:
        return x.tag < y.tag or (x.tag == y.tag and x.id < y.id)


cdef inline int heap_push(State* st, HeapItem** heap, int64_t* cap, int64_t* n, int64_t first,
                          HeapItem e) noexcept nogil:
    """Add e (the allocation doubles when full, starting at `first` items)."""
    cdef int64_t c
    cdef HeapItem* h
    if n[0] == cap[0]:
        c = cap[0] * 2 if cap[0] else first
        h = <HeapItem*> realloc(heap[0], c * sizeof(HeapItem))
        if h == NULL:
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return -1
        heap[0] = h
        cap[0] = c
    n[0] += 1
    heap_place(heap[0], n[0] - 1, n[0], e)
    return 0


cdef inline void heap_place(HeapItem* h, int64_t i, int64_t n, HeapItem e) noexcept nogil:
    """Put e at place i of a heap of n (i's old item is gone), moving it up or down to its place."""
    cdef int64_t parent, child
    while i > 0:
        parent = (i - 1) >> 1
        if not before(&e, &h[parent]):
            break
        h[i] = h[parent]
        i = parent
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and before(&h[child + 1], &h[child]):
            child += 1
        if not before(&h[child], &e):
            break
        h[i] = h[child]
        i = child
    h[i] = e


cdef inline HeapItem heap_pop(HeapItem* h, int64_t* n) noexcept nogil:
    cdef HeapItem top = h[0]
    n[0] -= 1
    if n[0] > 0:
        heap_place(h, 0, n[0], h[n[0]])
    return top


cdef int schedule(State* st, double t, int kind, int a, int64_t b, int64_t c) noexcept nogil:
    cdef Event e
    e.t = t
    e.seq = st.seq
    st.seq += 1
    e.kind = kind
    e.a = a
    e.b = b
    e.c = c
    return heap_push(st, &st.heap, &st.hcap, &st.hlen, 64, e)


cdef inline Event pop_event(State* st) noexcept nogil:
    return heap_pop(st.heap, &st.hlen)


cdef int ps_push(State* st, Stage* s, double tag, int64_t id, int32_t job) noexcept nogil:
    cdef PsEntry e
    e.tag = tag
    e.id = id
    e.job = job
    return heap_push(st, &s.heap, &s.hcap, &s.hlen, 16, e)


cdef inline PsEntry ps_pop(Stage* s) noexcept nogil:
    return heap_pop(s.heap, &s.hlen)


# ---- rings: the ready queue and fifo waiting lines ------------------------------
cdef inline int ring_push(State* st, int32_t** buf, int64_t* cap, int64_t* head, int64_t* length,
                          int32_t v) noexcept nogil:
    if length[0] == cap[0] and ring_grow(st, buf, cap, head, length) < 0:
        return -1
    buf[0][(head[0] + length[0]) & (cap[0] - 1)] = v
    length[0] += 1
    return 0


cdef int ring_grow(State* st, int32_t** buf, int64_t* cap, int64_t* head, int64_t* length) noexcept nogil:
    cdef int64_t newcap, k
    cdef int32_t* p
    newcap = cap[0] * 2 if cap[0] else 64
    p = <int32_t*> malloc(newcap * sizeof(int32_t))
    if p == NULL:
        fail(st, E_MEMORY, -1, 0, 0, 0)
        return -1
    for k in range(length[0]):
        p[k] = buf[0][(head[0] + k) & (cap[0] - 1)]
    free(buf[0])
    buf[0] = p
    cap[0] = newcap
    head[0] = 0
    return 0


cdef inline int32_t ring_pop(int32_t* buf, int64_t cap, int64_t* head, int64_t* length) noexcept nogil:
    cdef int32_t v = buf[head[0]]
    head[0] = (head[0] + 1) & (cap - 1)   # capacities are powers of two
    length[0] -= 1
    return v


cdef inline int ready_push(State* st, int32_t slot) noexcept nogil:
    return ring_push(st, &st.ready, &st.rcap, &st.rhead, &st.rlen, slot)


# ---- the memory bound ----------------------------------------------------------------
cdef inline int charge(State* st, int64_t nbytes) noexcept nogil:
    """Count bytes a table is about to take; past max_memory the run stops (clean error, not the
    kernel's OOM killer: memory is overcommitted, so malloc alone rarely fails)."""
    st.mem_bytes += nbytes
    if st.mem_bytes > st.max_memory:
        fail(st, E_MEMORY_LIMIT, -1, 0, 0, 0)
        return -1
    return 0


cdef inline int64_t slot_bytes(State* st) noexcept nogil:
    """What one session slot takes in the per-session tables (session_alloc's list)."""
    return (8 * st.n_attrs + 12 * st.hold_depth_max + 22 * st.hold_depth_max * st.hold_pools_max
            + 16 * st.n_pools + 8 + 130)


# ---- sessions and jobs: slots reused ----------------------------------------------
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


cdef bint grow(void** p, size_t size) noexcept nogil:
    cdef void* q = realloc(p[0], size if size else 1)
    if q == NULL:
        return False
    p[0] = q
    return True


cdef int32_t job_alloc(State* st) noexcept nogil:
    cdef int64_t cap
    cdef int32_t j
    if st.njfree > 0:
        st.njfree -= 1
        return st.jfree[st.njfree]
    if st.jhigh == st.jcap:
        cap = st.jcap * 2 if st.jcap else 64
        if charge(st, (cap - st.jcap) * 89) < 0:     # the job tables below
            return -1
        if not grow(<void**> &st.job_owner, cap * sizeof(int32_t)) \
                or not grow(<void**> &st.job_stage, cap * sizeof(int32_t)) \
                or not grow(<void**> &st.job_id, cap * sizeof(int64_t)) \
                or not grow(<void**> &st.job_work, cap * sizeof(double)) \
                or not grow(<void**> &st.job_enq, cap * sizeof(double)) \
                or not grow(<void**> &st.job_start, cap * sizeof(double)) \
                or not grow(<void**> &st.job_end, cap * sizeof(double)) \
                or not grow(<void**> &st.job_started, cap * sizeof(char)) \
                or not grow(<void**> &st.job_mode, cap * sizeof(int32_t)) \
                or not grow(<void**> &st.job_grow, cap * sizeof(int32_t)) \
                or not grow(<void**> &st.job_frame, cap * sizeof(int64_t)) \
                or not grow(<void**> &st.job_units_at, cap * sizeof(int64_t)) \
                or not grow(<void**> &st.job_served, cap * sizeof(int64_t)) \
                or not grow(<void**> &st.jfree, cap * sizeof(int32_t)):
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return -1
        st.jcap = cap
    j = <int32_t> st.jhigh
    st.jhigh += 1
    return j


cdef inline void job_free(State* st, int32_t j) noexcept nogil:
    st.job_id[j] = -1
    st.jfree[st.njfree] = j
    st.njfree += 1


# ---- expressions ---------------------------------------------------------------------
cdef inline int64_t member(State* st, double v, int64_t count, int code, int slot) noexcept nogil:
    """A run-time index: truncated toward zero, negative and NaN are 0; past the end is an error."""
    cdef uint64_t i
    if not (v > 0):
        i = 0
    elif v >= 1.8446744073709552e19:
        i = 0xFFFFFFFFFFFFFFFF         # `as usize` saturates
    else:
        i = <uint64_t> v
    if i >= <uint64_t> count:
        fail(st, code, slot, v, <int64_t> i, count)
        return -1
    return <int64_t> i


cdef inline double ps_virtual(Stage* s, double now) noexcept nogil:
    return s.V + s.rate * (now - s.Vt)


cdef double stage_work(State* st, int32_t k) noexcept nogil:
    """Unfinished work at stage k: remaining service of jobs started, plus the work of waiting ones.
    The sum starts from -0.0, as 0.1.2's (Rust's empty float sum): an empty stage's work is -0."""
    cdef Stage* s = &st.stages[k]
    cdef double total = -0.0, v
    cdef int64_t j
    if s.share_cap > 0:
        return flow_work(st, k)
    if s.kind == K_PS:
        v = ps_virtual(s, st.now)
        for j in range(s.hlen):
            total += s.heap[j].tag - v
        return total
    if s.kind == K_STEP:
        for j in range(s.nres):
            total += st.job_work[s.res[j]]
        return total
    for j in range(st.jhigh):
        if st.job_id[j] >= 0 and st.job_stage[j] == k:
            if st.job_started[j]:
                total += st.job_end[j] - st.now
            else:
                total += st.job_work[j]
    return total


cdef double stage_fn(State* st, int fn, int32_t k, int slot) noexcept nogil:
    cdef Stage* s = &st.stages[k]
    cdef double lam
    if fn == SF_QUEUE:      # queue: waiting + in service (step: residents)
        return <double> s.n
    if fn == SF_BUSY:      # busy: fifo servers in use; every job of a ps or delay stage; step: scheduled jobs
        if s.kind == K_STEP:
            return <double> (s.na if s.inflight else 0)
        return <double> (s.busy if s.kind == K_FIFO else s.n)   # a shared stage: its flows
    if fn == SF_WORK:
        return stage_work(st, k)
    if fn == SF_EST_LAMBDA:
        return est_lambda(s)
    if fn == SF_EST_RHO:
        return est_rho(s)
    if fn == SF_EST_WAIT:
        return s.est_wait
    return budget_left(st, k, slot)   # SF_BUDGET_LEFT


cdef inline double est_lambda(Stage* s) noexcept nogil:
    if not s.est_has_gap or s.est_gap <= 0:
        return 0.0
    return 1.0 / s.est_gap


cdef inline double est_rho(Stage* s) noexcept nogil:
    return fmin(est_lambda(s) * s.est_service, 0.99)


cdef double price(Stage* s, double s_hit, double ds) noexcept nogil:
    cdef double lam = est_lambda(s), rho = est_rho(s), w = s.est_wait
    cdef double s_miss = s_hit + ds
    return ds + lam * (s_miss * s_miss - s_hit * s_hit) / (2.0 * (1.0 - rho)) + lam * w * ds / (1.0 - rho)


cdef double pool_fn(State* st, int fn, int32_t k, int slot) noexcept nogil:
    cdef Pool* p = &st.pools[k]
    cdef int64_t e
    if fn == PF_USED:
        return p.used
    if fn == PF_FREE:
        return p.cap - p.used          # cached units are not subtracted
    if fn == PF_HOLDERS:
        return <double> p.nholders
    if fn == PF_QUEUED:
        return <double> p.qlen
    if slot < 0:                       # PF_CACHED_IN: the session's own cached units
        return 0.0
    e = own_entry(p, st.serial[slot])
    return p.entries[e].size if e >= 0 else 0.0


cdef double evaluate(State* st, int32_t off, int slot, sq_rng* rng, double present) noexcept nogil:
    """Run one expression's bytecode; attributes read NaN without a session (slot -1)."""
    cdef const int32_t* c = st.code
    cdef int64_t base = st.stack_top
    cdef double* s = st.stack + base     # a nested evaluation (budget_left) stacks above this one
    cdef int64_t sp = 0
    cdef int32_t pc = off, op, has_index
    cdef int64_t k
    cdef double a, b
    if c[pc] == X_NUM and c[pc + XONE_LEN] == X_RET:
        return st.consts[c[pc + XONE_ARG]]      # a constant (a ps stage's φ, most amounts): no stack
    while True:
        op = c[pc]
        if op == X_NUM:
            s[sp] = st.consts[c[pc + XONE_ARG]]
            sp += 1
            pc += XONE_LEN
        elif op == X_ATTR:
            if st.attr_row != NULL:
                s[sp] = st.attr_row[c[pc + XONE_ARG]]
            else:
                s[sp] = st.attrs[<int64_t> slot * st.n_attrs + c[pc + XONE_ARG]] if slot >= 0 else NAN
            sp += 1
            pc += XONE_LEN
        elif op == X_CTX:
            if c[pc + XONE_ARG] == CTX_NOW:
                s[sp] = st.now
            elif c[pc + XONE_ARG] == CTX_PRESENT:
                s[sp] = present
            else:
                s[sp] = st.ctxv[c[pc + XONE_ARG]]
            sp += 1
            pc += XONE_LEN
        elif op == X_NEG:
            s[sp - 1] = -s[sp - 1]
            pc += X_BARE_LEN
        elif op == X_NOT:
            s[sp - 1] = 1.0 if s[sp - 1] == 0.0 else 0.0
            pc += X_BARE_LEN
        elif op == X_TRUTH:
            s[sp - 1] = 1.0 if s[sp - 1] != 0.0 else 0.0
            pc += X_BARE_LEN
        # one branch per binary operator, all `op == constant`: Cython compiles the chain to one C switch
        elif op == X_ADD:
            sp -= 1
            s[sp - 1] = s[sp - 1] + s[sp]
            pc += X_BARE_LEN
        elif op == X_SUB:
            sp -= 1
            s[sp - 1] = s[sp - 1] - s[sp]
            pc += X_BARE_LEN
        elif op == X_MUL:
            sp -= 1
            s[sp - 1] = s[sp - 1] * s[sp]
            pc += X_BARE_LEN
        elif op == X_DIV:
            sp -= 1
            s[sp - 1] = s[sp - 1] / s[sp]
            pc += X_BARE_LEN
        elif op == X_POW:
            sp -= 1
            s[sp - 1] = pow(s[sp - 1], s[sp])
            pc += X_BARE_LEN
        elif op == X_LT:
            sp -= 1
            s[sp - 1] = 1.0 if s[sp - 1] < s[sp] else 0.0
            pc += X_BARE_LEN
        elif op == X_LE:
            sp -= 1
            s[sp - 1] = 1.0 if s[sp - 1] <= s[sp] else 0.0
            pc += X_BARE_LEN
        elif op == X_GT:
            sp -= 1
            s[sp - 1] = 1.0 if s[sp - 1] > s[sp] else 0.0
            pc += X_BARE_LEN
        elif op == X_GE:
            sp -= 1
            s[sp - 1] = 1.0 if s[sp - 1] >= s[sp] else 0.0
            pc += X_BARE_LEN
        elif op == X_EQ:
            sp -= 1
            s[sp - 1] = 1.0 if s[sp - 1] == s[sp] else 0.0
            pc += X_BARE_LEN
        elif op == X_NE:
            sp -= 1
            s[sp - 1] = 1.0 if s[sp - 1] != s[sp] else 0.0
            pc += X_BARE_LEN
        elif op == X_AND:
            if s[sp - 1] == 0.0:
                s[sp - 1] = 0.0
                pc = c[pc + XONE_ARG]
            else:
                sp -= 1
                pc += XONE_LEN
        elif op == X_OR:
            if s[sp - 1] != 0.0:
                s[sp - 1] = 1.0
                pc = c[pc + XONE_ARG]
            else:
                sp -= 1
                pc += XONE_LEN
        elif op == X_JZ:
            sp -= 1
            if s[sp] == 0.0:
                pc = c[pc + XONE_ARG]
            else:
                pc += XONE_LEN
        elif op == X_JMP:
            pc = c[pc + XONE_ARG]
        elif op == X_FN1:
            a = s[sp - 1]
            k = c[pc + XONE_ARG]
            if k == FN_ABS:
                a = fabs(a)
            elif k == FN_FLOOR:
                a = floor(a)
            elif k == FN_CEIL:
                a = ceil(a)
            elif k == FN_SQRT:
                a = sqrt(a)
            elif k == FN_EXP:
                a = exp(a)
            else:
                a = log(a)          # FN_LN
            s[sp - 1] = a
            pc += XONE_LEN
        elif op == X_MIN:
            sp -= 1
            s[sp - 1] = fmin(s[sp - 1], s[sp])
            pc += X_BARE_LEN
        elif op == X_MAX:
            sp -= 1
            s[sp - 1] = fmax(s[sp - 1], s[sp])
            pc += X_BARE_LEN
        elif op == X_STAGE or op == X_POOL:
            has_index = c[pc + XREF_HAS_INDEX]
            k = 0
            if has_index:
                sp -= 1
                k = member(st, s[sp], c[pc + XREF_COUNT], E_INDEX, slot)
                if k < 0:
                    return NAN
            if op == X_STAGE:
                st.stack_top = base + sp + 1
                if st.stack_top + st.frame_depth > st.stack_cap:
                    # lowering sizes the stack for the deepest budget_left chain: never reached
                    fail(st, E_NESTING, slot, 0, c[pc + XREF_BASE] + k, 0)
                    st.stack_top = base
                    return NAN
                a = stage_fn(st, c[pc + XREF_FN], <int32_t> (c[pc + XREF_BASE] + k), slot)
                st.stack_top = base
                s[sp] = a
            else:
                s[sp] = pool_fn(st, c[pc + XREF_FN], <int32_t> (c[pc + XREF_BASE] + k), slot)
            sp += 1
            pc += XREF_LEN
        elif op == X_PRICE:
            has_index = c[pc + XPRICE_HAS_INDEX]
            k = 0
            if has_index:
                sp -= 1
                k = member(st, s[sp], c[pc + XPRICE_COUNT], E_INDEX, slot)
                if k < 0:
                    return NAN
            sp -= 1
            s[sp - 1] = price(&st.stages[c[pc + XPRICE_BASE] + k], s[sp - 1], s[sp])
            pc += XPRICE_LEN
        elif op == X_SAMPLE:
            k = c[pc + XSAMPLE_NARGS]
            sp -= k
            s[sp] = sq_draw(rng, c[pc + XSAMPLE_DIST], &s[sp])
            sp += 1
            pc += XSAMPLE_LEN
        else:  # X_RET
            return s[sp - 1]


# ---- stages -------------------------------------------------------------------------------
cdef int start_run(State* st, int32_t k, int32_t slot, double w, int32_t mode, int32_t growing) noexcept nogil:
    cdef int32_t j
    if start_job(st, k, slot, w) < 0:
        return -1
    if mode != M_PLAIN:
        j = st.sess_job[slot]           # the job that just joined
        st.job_mode[j] = mode
        st.job_grow[j] = growing
    if st.stages[k].kind == K_STEP:
        resident_frames(st, st.sess_job[slot], st.stages[k].memory)
    return 0


cdef int start_job(State* st, int32_t k, int32_t slot, double w) noexcept nogil:
    """A `run` with positive work joins stage k."""
    cdef Stage* s = &st.stages[k]
    cdef int32_t j = job_alloc(st)
    if j < 0:
        return -1
    st.job_owner[j] = slot
    st.job_stage[j] = k
    st.job_id[j] = st.next_job_id
    st.next_job_id += 1
    st.job_work[j] = w
    st.job_enq[j] = st.now
    st.job_started[j] = 0
    st.job_mode[j] = M_PLAIN
    st.job_grow[j] = -1
    st.job_served[j] = -1
    if slot >= 0:
        st.sess_job[slot] = j
    s.n += 1
    mark_row(st.stages_sampled, k)
    if s.kind == K_STEP:
        # a step job starts the moment it joins the residents
        st.job_start[j] = st.now
        st.job_started[j] = 1
        return join_residents(st, s, j)
    if s.kind == K_FIFO:
        if s.busy < s.servers:
            return begin_service(st, s, k, j)
        return ring_push(st, &s.q, &s.qcap, &s.qhead, &s.qlen, j)
    if s.kind == K_DELAY:
        return begin_service(st, s, k, j)
    # ps: the tag is the virtual time at which the job's work is done
    s.V = ps_virtual(s, st.now)
    s.Vt = st.now
    st.job_start[j] = st.now
    st.job_started[j] = 1
    s.dirty = 1
    if st.tl != NULL:
        tl_service_start(st, k, j)
    return ps_push(st, s, s.V + w, st.job_id[j], j)


cdef int begin_service(State* st, Stage* s, int32_t k, int32_t j) noexcept nogil:
    if s.kind == K_FIFO:
        s.busy += 1
    st.job_start[j] = st.now
    st.job_end[j] = st.now + st.job_work[j]
    st.job_started[j] = 1
    if st.tl != NULL:
        tl_service_start(st, k, j)
    return schedule(st, st.job_end[j], EV_FINISH, k, j, st.job_id[j])


cdef int complete_job(State* st, Stage* s, int32_t j) noexcept nogil:
    """The job is done: record its wait and service, update the estimators, ready its owner."""
    cdef double start = st.job_start[j], wait = st.job_start[j] - st.job_enq[j]
    cdef double service = st.now - st.job_start[j]
    cdef int32_t owner = st.job_owner[j]
    s.n -= 1
    if owner >= 0:
        st.sess_job[owner] = -1
    if st.warm:
        running_add(&s.waits, wait)
        running_add(&s.services, service)
    estimate(s, start, wait, service)
    if st.tl != NULL and s.kind != K_STEP:      # a step stage's iterations are its timeline
        tl_service_end(st, <int32_t> (s - st.stages), j, "job" if owner >= 0 else "transfer")
    job_free(st, j)
    if owner < 0:
        return 0                    # a spill's transfer: nobody waits for it
    return ready_push(st, owner)


cdef void estimate(Stage* s, double start, double wait, double service) noexcept nogil:
    # exponentially weighted averages, each seeded by its first observation
    cdef double gap
    if s.est_count == 0:
        s.est_service = service
        s.est_wait = wait
    else:
        gap = start - s.est_last_start
        if s.est_has_gap:
            s.est_gap += EWMA * (gap - s.est_gap)
        else:
            s.est_gap = gap
            s.est_has_gap = 1
        s.est_service += EWMA * (service - s.est_service)
        s.est_wait += EWMA * (wait - s.est_wait)
    s.est_last_start = start
    s.est_count += 1


cdef int finish(State* st, Event* e) noexcept nogil:
    cdef Stage* s = &st.stages[e.a]
    cdef int32_t j = <int32_t> e.b
    cdef int32_t nxt
    cdef PsEntry top
    if s.kind == K_PS:
        if e.c != s.epoch:
            return 0            # superseded by a reschedule
        s.V = ps_virtual(s, st.now)
        s.Vt = st.now
        top = ps_pop(s)
        if top.tag > s.V:
            s.V = top.tag
        s.dirty = 1
        return complete_job(st, s, top.job)
    if st.job_id[j] != e.c:
        return 0                # the job is gone
    if complete_job(st, s, j) < 0:
        return -1
    if s.kind == K_FIFO:
        s.busy -= 1
        if s.qlen > 0:
            nxt = ring_pop(s.q, s.qcap, &s.qhead, &s.qlen)
            return begin_service(st, s, e.a, nxt)
    return 0


cdef int reschedule(State* st, int32_t k) noexcept nogil:
    """A dirty ps stage: evaluate φ(present = n) once and schedule the next finish."""
    cdef Stage* s = &st.stages[k]
    cdef double phi, delay
    s.dirty = 0
    s.V = ps_virtual(s, st.now)
    s.Vt = st.now
    if s.hlen > 0:
        phi = evaluate(st, s.phi, -1, &st.rng_session, <double> s.hlen)
        s.rate = phi / <double> s.hlen
    else:
        s.rate = 0.0
    s.epoch += 1
    if s.hlen > 0 and s.rate > 0:
        delay = (s.heap[0].tag - s.V) / s.rate
        if delay < 0:
            delay = 0
        return schedule(st, st.now + delay, EV_FINISH, k, s.heap[0].job, s.epoch)
    return 0



# ---- pools: holds, admission, the prefix cache ---------------------------------------------
cdef inline double clamp0(double x) noexcept nogil:
    # amounts are clamped, not checked: negative and NaN are 0
    return x if x > 0 else 0.0


cdef inline double round_up(Pool* p, double x) noexcept nogil:
    return ceil(x / p.block) * p.block if p.block > 0 else x


cdef inline double round_down(Pool* p, double x) noexcept nogil:
    return floor(x / p.block) * p.block if p.block > 0 else x


# dead cache entries' keys start at 2**62 (0.1.2's, as its eviction trace prints them)
cdef int64_t DEAD_KEY = (<int64_t> 1) << 62


# ---- the entry index: key (a serial, or a dead entry's key) -> entry row -------------------
cdef inline int64_t own_bucket(Pool* p, int64_t key) noexcept nogil:
    return <int64_t> ((<uint64_t> key * <uint64_t> 0x9E3779B97F4A7C15) >> 17) & (p.own_cap - 1)


cdef int64_t own_entry(Pool* p, int64_t key) noexcept nogil:
    cdef int64_t b
    if p.own_cap == 0:
        return -1
    b = own_bucket(p, key)
    while p.own_keys[b] != 0:
        if p.own_keys[b] == key + 1:
            return p.own_rows[b]
        b = (b + 1) & (p.own_cap - 1)
    return -1


cdef void own_put(Pool* p, int64_t key, int64_t row) noexcept nogil:
    """Index or re-index `key` (the table has room: see own_reserve)."""
    cdef int64_t b = own_bucket(p, key)
    while p.own_keys[b] != 0 and p.own_keys[b] != key + 1:
        b = (b + 1) & (p.own_cap - 1)
    p.own_keys[b] = key + 1
    p.own_rows[b] = row


cdef void own_forget(Pool* p, int64_t key) noexcept nogil:
    """Remove `key`, shifting later members of its probe run back so no lookup breaks."""
    cdef int64_t b, next_b, home
    if p.own_cap == 0:
        return
    b = own_bucket(p, key)
    while p.own_keys[b] != key + 1:
        if p.own_keys[b] == 0:
            return
        b = (b + 1) & (p.own_cap - 1)
    next_b = (b + 1) & (p.own_cap - 1)
    while p.own_keys[next_b] != 0:
        home = own_bucket(p, p.own_keys[next_b] - 1)
        # move the member back if its home is not in the cyclic range (b, next_b]
        if ((next_b - home) & (p.own_cap - 1)) >= ((next_b - b) & (p.own_cap - 1)):
            p.own_keys[b] = p.own_keys[next_b]
            p.own_rows[b] = p.own_rows[next_b]
            b = next_b
        next_b = (next_b + 1) & (p.own_cap - 1)
    p.own_keys[b] = 0


cdef int own_reserve(State* st, Pool* p) noexcept nogil:
    """Keep the table at most half full (every entry may be indexed), rehashing when it grows."""
    cdef int64_t cap, old_cap = p.own_cap, i
    cdef int64_t* old_keys = p.own_keys
    cdef int64_t* old_rows = p.own_rows
    if 2 * (p.nentries + 1) <= p.own_cap:
        return 0
    cap = p.own_cap * 2 if p.own_cap else 32
    p.own_keys = <int64_t*> calloc(cap, sizeof(int64_t))
    p.own_rows = <int64_t*> malloc(cap * sizeof(int64_t))
    if p.own_keys == NULL or p.own_rows == NULL:
        fail(st, E_MEMORY, -1, 0, 0, 0)
        return -1
    p.own_cap = cap
    for i in range(old_cap):
        if old_keys[i] != 0:
            own_put(p, old_keys[i] - 1, old_rows[i])
    free(old_keys)
    free(old_rows)
    return 0


# ---- the lru heap: entry indices by (last, seq), smallest on top ----
cdef inline bint lru_pool(Pool* p) noexcept nogil:
    return p.evict_count == 0


cdef inline bint lru_before(Pool* p, int64_t a, int64_t b) noexcept nogil:
    return p.entries[a].last < p.entries[b].last or (
        p.entries[a].last == p.entries[b].last and p.entries[a].seq < p.entries[b].seq)


cdef inline void lru_place(Pool* p, int64_t i, int64_t e) noexcept nogil:
    p.lru[i] = e
    p.entries[e].at = i


cdef void lru_sift(Pool* p, int64_t i, int64_t n) noexcept nogil:
    """Restore the heap order around place i of a heap of n (the entry there moved either way)."""
    cdef int64_t e = p.lru[i], parent, child
    while i > 0:
        parent = (i - 1) >> 1
        if not lru_before(p, e, p.lru[parent]):
            break
        lru_place(p, i, p.lru[parent])
        i = parent
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and lru_before(p, p.lru[child + 1], p.lru[child]):
            child += 1
        if not lru_before(p, p.lru[child], e):
            break
        lru_place(p, i, p.lru[child])
        i = child
    lru_place(p, i, e)


cdef inline void lru_touched(Pool* p, int64_t e) noexcept nogil:
    """Entry e's (last, seq) changed."""
    if lru_pool(p):
        lru_sift(p, p.entries[e].at, p.nentries)


cdef inline void remove_entry(Pool* p, int64_t e) noexcept nogil:
    cdef int64_t last = p.nentries - 1, i
    if lru_pool(p):
        # the heap's last place fills e's place; then the array's last entry fills e's index
        i = p.entries[e].at
        if i != last:
            lru_place(p, i, p.lru[last])
            lru_sift(p, i, last)
    free(p.entries[e].snap)
    own_forget(p, p.entries[e].key)
    if e != last:
        p.entries[e] = p.entries[last]
        own_put(p, p.entries[e].key, e)
        if lru_pool(p):
            p.lru[p.entries[e].at] = e
    p.nentries -= 1


cdef double take_entry(Pool* p, int64_t serial) noexcept nogil:
    """The session's own cached prefix leaves the cache (consumed); its size."""
    cdef int64_t e = own_entry(p, serial)
    cdef double size
    if e < 0:
        return 0.0
    size = p.entries[e].size
    p.cached -= size
    remove_entry(p, e)
    return size


cdef double consume_entry(State* st, Pool* p, int32_t slot, bint bounded, double reuse) noexcept nogil:
    """Admission takes the session's own prefix; beyond `reuse` (when bounded), the excess stays
    as a dead entry."""
    cdef int64_t e = own_entry(p, st.serial[slot])
    cdef double own = 0.0, r = round_down(p, reuse)
    cdef Entry kept
    if e >= 0:
        kept = p.entries[e]
        own = kept.size
        p.cached -= own
        remove_entry(p, e)
    if bounded:
        if own > r:
            # the excess keeps the original's age and order, and is nobody's
            if add_entry(st, p, DEAD_KEY + st.next_dead, own - r) < 0:
                return 0.0
            st.next_dead += 1
            p.entries[p.nentries - 1].last = kept.last
            p.entries[p.nentries - 1].seq = kept.seq
            lru_touched(p, p.nentries - 1)
            snapshot(st, &p.entries[p.nentries - 1], slot)
            st.next_entry_seq -= 1
            own = r
    return own


cdef void drop_entry(Pool* p, int64_t serial) noexcept nogil:
    take_entry(p, serial)   # `drop` is not an eviction


cdef int add_entry(State* st, Pool* p, int64_t key, double size) noexcept nogil:
    cdef int64_t cap
    cdef Entry* e
    if p.nentries == p.entries_cap:
        cap = p.entries_cap * 2 if p.entries_cap else 16
        if charge(st, (cap - p.entries_cap) * (sizeof(Entry) + 16 + 8 * st.n_attrs)) < 0:   # with snapshots
            return -1
        e = <Entry*> realloc(p.entries, cap * sizeof(Entry))
        if e == NULL:
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return -1
        p.entries = e
        p.entries_cap = cap
        if lru_pool(p) and not grow(<void**> &p.lru, cap * sizeof(int64_t)):
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return -1
    if own_reserve(st, p) < 0:
        return -1
    e = &p.entries[p.nentries]
    own_put(p, key, p.nentries)
    p.nentries += 1
    e.key = key
    e.slot = -1
    e.snap = NULL
    e.size = size
    e.last = st.now
    e.seq = st.next_entry_seq
    st.next_entry_seq += 1
    p.cached += size
    mark_row(st.pools_sampled, p - st.pools)
    if lru_pool(p):
        p.lru[p.nentries - 1] = p.nentries - 1
        lru_sift(p, p.nentries - 1, p.nentries)
    return 0


cdef void snapshot(State* st, Entry* e, int32_t slot) noexcept nogil:
    # the attributes `evict by` reads once the session has ended
    if st.pools_evict_by:
        e.snap = <double*> malloc(st.n_attrs * sizeof(double) + 8)
        if e.snap != NULL:
            memcpy(e.snap, &st.attrs[<int64_t> slot * st.n_attrs], st.n_attrs * sizeof(double))


cdef int64_t evict_choice(State* st, Pool* p) noexcept nogil:
    """The entry with the smallest `evict by` key (keys, then seq), keys read per entry on the eviction stream."""
    cdef int64_t e, best = -1
    cdef int32_t i, n = p.evict_count, slot
    cdef double* keys = st.keys
    cdef Entry* en
    for e in range(p.nentries):
        en = &p.entries[e]
        slot = en.slot if (en.slot >= 0 and st.alive[en.slot] and st.serial[en.slot] == en.key) else -1
        st.ctxv[2] = en.size
        st.ctxv[3] = st.now - en.last
        st.ctxv[4] = en.last
        st.ctxv[5] = 1.0 if (slot >= 0 and st.waiting[slot]) else 0.0
        st.attr_row = en.snap if slot < 0 else NULL
        for i in range(n):
            keys[n + 1 + i] = evaluate(st, st.pool_keys[p.evict_start + i], slot, &st.rng_eviction, NAN)
        st.attr_row = NULL
        if st.err:
            return -1
        keys[n + 1 + n] = <double> en.seq
        if best < 0 or keys_smaller(&keys[n + 1], keys, n + 1):
            best = e
            for i in range(n + 1):
                keys[i] = keys[n + 1 + i]
    return best


cdef void spill(State* st, Pool* p, Entry* e, double piece) noexcept nogil:
    """An evicted piece goes to the tier (as the same session's entry) if `when` holds, over a job on the link."""
    cdef int32_t slot = e.slot if (e.slot >= 0 and st.alive[e.slot] and st.serial[e.slot] == e.key) else -1
    cdef double when, work
    cdef Pool* tier = &st.pools[p.spill_to]
    cdef int64_t k
    st.ctxv[2] = piece
    st.ctxv[3] = st.now - e.last
    st.ctxv[4] = e.last
    st.ctxv[5] = 1.0 if (slot >= 0 and st.waiting[slot]) else 0.0
    st.attr_row = e.snap if slot < 0 else NULL
    when = evaluate(st, p.spill_when, slot, &st.rng_eviction, NAN)
    if st.err or when == 0.0:
        st.attr_row = NULL
        return
    work = fmax(0.0, evaluate(st, p.spill_work, slot, &st.rng_eviction, NAN))
    st.attr_row = NULL
    if st.err:
        return
    st.spill_depth += 1
    if st.spill_depth > 64:
        # a spill chain that comes back to its own pools never makes room (0.1.2 hangs)
        fail(st, E_SPILL_CYCLE, -1, 0, 0, 0)
        st.spill_depth -= 1
        return
    make_room(st, tier, 0.0)              # a finite tier may end above its cap
    st.spill_depth -= 1
    if st.err:
        return
    k = own_entry(tier, e.key)
    if k >= 0:
        tier.entries[k].size += piece
        tier.entries[k].last = st.now
        tier.entries[k].seq = st.next_entry_seq
        st.next_entry_seq += 1
        lru_touched(tier, k)
        tier.cached += piece
        mark_row(st.pools_sampled, tier - st.pools)
    else:
        if add_entry(st, tier, e.key, piece) < 0:
            return
        tier.entries[tier.nentries - 1].slot = e.slot
        if e.snap != NULL and st.pools_evict_by:
            tier.entries[tier.nentries - 1].snap = <double*> malloc(st.n_attrs * sizeof(double) + 8)
            if tier.entries[tier.nentries - 1].snap != NULL:
                memcpy(tier.entries[tier.nentries - 1].snap, e.snap, st.n_attrs * sizeof(double))
    p.spills += 1
    if work > 0:
        if st.stages[p.spill_via].kind == K_STEP:
            fail(st, E_SPILL_VIA_STEP, slot, work, p - st.pools, p.spill_via)
            return
        # a transfer with no owner (a flow when its link is shared)
        if st.stages[p.spill_via].share_cap > 0:
            st.fl_scratch[0] = p.spill_via
            start_flow(st, st.fl_scratch, 1, -1, work)
        else:
            start_job(st, p.spill_via, -1, work)


cdef void make_room(State* st, Pool* p, double need) noexcept nogil:
    """Evict cached prefixes (lru: smallest (last, seq)), a block at a time, until `need` fits."""
    cdef int64_t best
    cdef double piece
    cdef Entry gone
    cdef double* owned
    # more pieces than the cache held means spills keep refilling it (0.1.2 hangs there)
    cdef double pieces = (p.cached / p.block if p.block > 0 else <double> p.nentries) * 2.0 + 64.0
    while p.used + p.cached + need > p.cap + EPS and p.nentries > 0:
        pieces -= 1.0
        if pieces < 0:
            fail(st, E_SPILL_CYCLE, -1, 0, 0, 0)
            return
        best = 0
        if p.evict_count > 0:
            best = evict_choice(st, p)
            if best < 0:
                return
        else:
            best = p.lru[0]
        piece = fmin(p.block, p.entries[best].size) if p.block > 0 else p.entries[best].size
        if st.trace_evicts and (charge(st, EVICT_BYTES) < 0 or darr_push(&st.ev_time, st.now) < 0 or larr_push(&st.ev_key, p.entries[best].key) < 0
                                or darr_push(&st.ev_units, piece) < 0):
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return
        if st.trace_evicts:
            trace_logged(st)
        p.entries[best].size -= piece
        p.cached -= piece
        p.evicted_units += piece
        gone = p.entries[best]
        owned = NULL
        if p.entries[best].size <= EPS:
            owned = gone.snap                # kept for the spill below, freed after it
            p.entries[best].snap = NULL
            remove_entry(p, best)
            p.evicted_entries += 1
        if p.spill_to >= 0:
            spill(st, p, &gone, piece)
        free(owned)
        if st.err:
            return


cdef int holders_push(State* st, Pool* p, int32_t slot) noexcept nogil:
    cdef int64_t h = <int64_t> slot * st.n_pools + (p - st.pools), cap
    if p.holders_len == p.holders_cap:
        cap = p.holders_cap * 2 + 16
        if not grow(<void**> &p.holders, cap * sizeof(int32_t)) \
                or not grow(<void**> &p.holders_gen, cap * sizeof(uint32_t)):
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return -1
        p.holders_cap = cap
    p.holders[p.holders_len] = slot
    p.holders_gen[p.holders_len] = st.hgen[h]
    p.holders_len += 1
    p.nholders += 1
    mark_row(st.pools_sampled, p - st.pools)
    st.pools_touched[slot] = 1
    st.hcount[h] += 1
    return 0


cdef inline bint holder_live(State* st, Pool* p, int64_t i) noexcept nogil:
    return p.holders_gen[i] == st.hgen[<int64_t> p.holders[i] * st.n_pools + (p - st.pools)]


cdef void holders_remove(State* st, Pool* p, int32_t slot) noexcept nogil:
    # every occurrence goes: nested holds on one pool leave together
    cdef int64_t h = <int64_t> slot * st.n_pools + (p - st.pools), i, j = 0
    if st.hcount[h] == 0:
        return
    p.nholders -= st.hcount[h]
    st.hcount[h] = 0
    st.hgen[h] += 1
    if p.holders_len > 2 * p.nholders + 16:
        for i in range(p.holders_len):
            if holder_live(st, p, i):
                p.holders[j] = p.holders[i]
                p.holders_gen[j] = p.holders_gen[i]
                j += 1
        p.holders_len = j


cdef int queue_push(State* st, Pool* p, int32_t slot) noexcept nogil:
    if p.qhead + p.qlen == p.qcap:
        if p.qhead > p.qlen:
            # more room before the head than holds waiting: slide them back to the start
            memmove(p.queue_base, p.queue, p.qlen * sizeof(int32_t))
            p.qhead = 0
        else:
            if not grow(<void**> &p.queue_base, (p.qcap * 2 + 16) * sizeof(int32_t)):
                fail(st, E_MEMORY, -1, 0, 0, 0)
                return -1
            p.qcap = p.qcap * 2 + 16
        p.queue = p.queue_base + p.qhead
    p.queue[p.qlen] = slot
    p.qlen += 1
    mark_row(st.pools_waiting, p - st.pools)
    mark_row(st.pools_sampled, p - st.pools)
    return 0


cdef void queue_take(Pool* p, int64_t q) noexcept nogil:
    """Remove the q-th waiting hold, keeping the others' order."""
    cdef int64_t i
    if q == 0:
        p.qhead += 1
        p.queue += 1
    else:
        for i in range(q, p.qlen - 1):
            p.queue[i] = p.queue[i + 1]
    p.qlen -= 1


cdef void queue_push_front(State* st, Pool* p, int32_t slot) noexcept nogil:
    cdef int64_t room
    if p.qhead == 0:
        # no room before the head: move the line to the middle of an allocation with room on
        # both sides, so that pushes at the front cost O(1) amortized
        if p.qcap < 2 * p.qlen + 32:
            if not grow(<void**> &p.queue_base, (2 * p.qlen + 32) * sizeof(int32_t)):
                fail(st, E_MEMORY, -1, 0, 0, 0)
                return
            p.qcap = 2 * p.qlen + 32
        room = (p.qcap - p.qlen) // 2
        memmove(p.queue_base + room, p.queue_base, p.qlen * sizeof(int32_t))
        p.qhead = room
    p.qhead -= 1
    p.queue = p.queue_base + p.qhead
    p.queue[0] = slot
    p.qlen += 1
    mark_row(st.pools_waiting, p - st.pools)
    mark_row(st.pools_sampled, p - st.pools)


cdef inline int64_t frame_of(State* st, int32_t slot, int32_t d) noexcept nogil:
    return <int64_t> slot * st.hold_depth_max + d


cdef void hold_statement(State* st, int32_t slot, int32_t h, bint front) noexcept nogil:
    """A session reaches `hold`: evaluate every pool's units, test for rejection, join the queue."""
    cdef int32_t off = st.hold_offsets[h], n = st.holds[off + H_NPOOLS], i, e
    cdef int32_t d = st.depth[slot]
    cdef int64_t fi = frame_of(st, slot, d), k
    cdef double need, v
    cdef Pool* p
    for i in range(n):
        e = off + H_HEAD_LEN + HP_LEN * i
        k = 0
        if st.holds[e + HP_REF + REF_INDEX] >= 0:
            v = evaluate(st, st.holds[e + HP_REF + REF_INDEX], slot, &st.rng_session, NAN)
            if st.err:
                return
            k = member(st, v, st.holds[e + HP_REF + REF_COUNT], E_POOL_INDEX, slot)
            if k < 0:
                return
        st.frame_member[fi * st.hold_pools_max + i] = <int32_t> (st.holds[e + HP_REF + REF_BASE] + k)
        st.frame_active[fi * st.hold_pools_max + i] = 0
        st.scratch[i] = clamp0(evaluate(st, st.holds[e + HP_UNITS], slot, &st.rng_session, NAN))
        if st.err:
            return
    # then pool by pool its reserve and the test: the first pool that can never fit ends the
    # session, and the reserves after it are never read (0.1.2's draw order)
    for i in range(n):
        e = off + H_HEAD_LEN + HP_LEN * i
        need = st.scratch[i]
        if st.holds[e + HP_RESERVE] >= 0:
            need = fmax(need, clamp0(evaluate(st, st.holds[e + HP_RESERVE], slot, &st.rng_session, NAN)))
            if st.err:
                return
        p = &st.pools[st.frame_member[fi * st.hold_pools_max + i]]
        if round_up(p, need) > p.cap:     # can never fit: compared exactly
            p.rejected += 1
            end_session(st, slot)
            return
    st.frame_hold[fi] = h
    st.frame_queued_at[fi] = st.now
    st.depth[slot] = d + 1
    st.waiting[slot] = 1
    st.resumed[slot] = front
    if front:
        # a preempted hold re-enters at the head (several victims: the last one first)
        queue_push_front(st, &st.pools[st.frame_member[fi * st.hold_pools_max]], slot)
    else:
        queue_push(st, &st.pools[st.frame_member[fi * st.hold_pools_max]], slot)
    if st.tl != NULL:
        tl_queued(st, fi)


cdef bint keys_smaller(double* a, double* b, int32_t n) noexcept nogil:
    """Lexicographic a < b; a NaN comparison is 'not smaller'."""
    cdef int32_t i
    for i in range(n):
        if a[i] < b[i]:
            return True
        if not (a[i] == b[i]):
            return False
    return False


cdef int64_t next_waiting(State* st, Pool* p) noexcept nogil:
    """The queue index to try next: the front under fifo, else the smallest `queue by` key."""
    cdef int64_t q, best = 0, fi
    cdef int32_t i, n = p.key_count, slot
    cdef double* keys = st.keys
    if n == 0 or st.resumed[p.queue[0]]:
        return 0                    # fifo, or a resumed hold at the head: taken before any key is read
    for q in range(p.qlen):
        slot = p.queue[q]
        fi = frame_of(st, slot, st.depth[slot] - 1)
        st.ctxv[CTX_WAITED] = st.now - st.frame_queued_at[fi]
        for i in range(n):
            keys[n + i] = evaluate(st, st.pool_keys[p.key_start + i], slot, &st.rng_session, NAN)
            if st.err:
                return -1
        if q == 0 or keys_smaller(&keys[n], keys, n):
            best = q
            for i in range(n):
                keys[i] = keys[n + i]
    return best


cdef void try_admit(State* st, int32_t pk) noexcept nogil:
    """Admit waiting holds of pool pk while the selected one fits (head-of-line blocking)."""
    cdef Pool* p = &st.pools[pk]
    cdef int64_t q, fi
    cdef int32_t slot, h, off, n, i, e
    cdef double u, need
    if st.admit_via[pk] >= 0:
        return                      # only its stage's iteration starts admit from it
    while p.qlen > 0:
        q = next_waiting(st, p)
        if q < 0:
            return
        slot = p.queue[q]
        fi = frame_of(st, slot, st.depth[slot] - 1)
        h = st.frame_hold[fi]
        off = st.hold_offsets[h]
        n = st.holds[off + H_NPOOLS]
        for i in range(n):
            e = off + H_HEAD_LEN + HP_LEN * i
            u = clamp0(evaluate(st, st.holds[e + HP_UNITS], slot, &st.rng_session, NAN))
            need = u
            if st.holds[e + HP_RESERVE] >= 0:
                need = fmax(u, clamp0(evaluate(st, st.holds[e + HP_RESERVE], slot, &st.rng_session, NAN)))
            if st.err:
                return
            st.scratch[2 * i] = u
            st.scratch[2 * i + 1] = need
        for i in range(n):
            if not fits(&st.pools[st.frame_member[fi * st.hold_pools_max + i]], st.scratch[2 * i + 1]):
                return
        queue_take(p, q)
        admit(st, slot, fi, off, n)
        if st.err:
            return


cdef inline bint fits(Pool* p, double need) noexcept nogil:
    return p.used + round_up(p, need) <= p.cap + EPS


cdef void admit(State* st, int32_t slot, int64_t fi, int32_t off, int32_t n) noexcept nogil:
    cdef double consumed = 0.0, own, a
    cdef int32_t i, row
    cdef bint caching = st.holds[off + H_CACHE] >= 0
    cdef Pool* p
    cdef int64_t j
    cdef bint bounded = caching and st.holds[off + H_REUSE] >= 0
    cdef double reuse = 0.0
    if st.tl != NULL:
        tl_admitted(st, slot, fi)
    if bounded:
        # once per admission, before any pool's own prefix leaves the cache (0.1.2:
        # `reuse (cachedin(P))` still sees it, and a draw in it is taken once)
        reuse = clamp0(evaluate(st, st.holds[off + H_REUSE], slot, &st.rng_session, NAN))
        if st.err:
            return
    for i in range(n):
        row = st.frame_member[fi * st.hold_pools_max + i]
        p = &st.pools[row]
        own = 0.0
        if caching:
            own = consume_entry(st, p, slot, bounded, reuse)
            if st.err:
                return
        if own > consumed:
            consumed = own
        a = round_up(p, st.scratch[2 * i])          # the units, not the reserve, are allocated
        make_room(st, p, a)
        p.used += a
        mark_row(st.pools_sampled, p - st.pools)
        if holders_push(st, p, slot) < 0:
            return
        p.admissions += 1
        j = fi * st.hold_pools_max + i
        st.frame_alloc[j] = a
        st.frame_active[j] = 1
        st.frame_pos[j] = own
        st.frame_grown[j] = 0
    if st.warm:
        p = &st.pools[st.frame_member[fi * st.hold_pools_max]]
        running_add(&p.waits, st.now - st.frame_queued_at[fi])
    # the session counts as waiting while its own admission makes room (0.1.2: `waiting` reads 1)
    st.waiting[slot] = 0
    st.resumed[slot] = 0
    st.attrs[<int64_t> slot * st.n_attrs + st.slot_cached] = consumed
    st.adm[slot] = st.next_adm       # every hold admission takes the next admission number
    st.next_adm += 1.0
    ready_push(st, slot)


cdef void release_units(State* st, int32_t slot, int32_t row, double alloc, double computed,
                        int32_t cache) noexcept nogil:
    """Give back a hold's allocation on one pool; with a `cache` clause keep a prefix of what it computed."""
    cdef Pool* p = &st.pools[row]
    cdef double keep
    p.used -= alloc
    holders_remove(st, p, slot)
    if cache >= 0:
        keep = clamp0(evaluate(st, cache, slot, &st.rng_session, NAN))
        if st.err:
            return
        keep = round_down(p, fmin(keep, computed))
        if keep > 0:
            take_entry(p, st.serial[slot])
            if add_entry(st, p, st.serial[slot], keep) < 0:
                return
            p.entries[p.nentries - 1].slot = slot
            snapshot(st, &p.entries[p.nentries - 1], slot)
            if p.used + p.cached > p.cap + EPS:
                p.overfull = 1      # as 0.1.2: caching never evicts (05 §5.4)


cdef inline void mark_grown(State* st, int64_t j) noexcept nogil:
    # `grown` belongs to the hold: its computed extent becomes `pos` on every pool it takes
    cdef int64_t first = (j // st.hold_pools_max) * st.hold_pools_max, i
    if st.frame_grown[j]:
        return          # marked since the admission, which clears the hold's entries together
    for i in range(first, first + st.hold_pools_max):
        st.frame_grown[i] = 1


cdef inline double computed_of(State* st, int64_t j) noexcept nogil:
    return st.frame_pos[j] if st.frame_grown[j] else st.frame_alloc[j]


cdef void release_frame(State* st, int32_t slot, int32_t d, bint body_done) noexcept nogil:
    """Release every pool a hold still holds, in the order written; at the end of the
    body the `lease` pool's allocation becomes a lease instead."""
    cdef int64_t fi = frame_of(st, slot, d), j
    cdef int32_t h = st.frame_hold[fi], off = st.hold_offsets[h], n = st.holds[off + H_NPOOLS], i
    if st.tl != NULL:
        tl_released(st, slot, fi)
    for i in range(n):
        j = fi * st.hold_pools_max + i
        if st.frame_active[j]:
            st.frame_active[j] = 0
            if body_done:
                st.ppos[<int64_t> slot * (st.n_pools + 1) + st.frame_member[j]] = NAN
            if body_done and i == st.holds[off + H_LEASE_POOL]:
                start_lease(st, slot, j, st.holds[off + H_CACHE], st.holds[off + H_LEASE_TIME])
            else:
                release_units(st, slot, st.frame_member[j], st.frame_alloc[j], computed_of(st, j),
                              st.holds[off + H_CACHE])
            if st.err:
                return


cdef void start_lease(State* st, int32_t slot, int64_t j, int32_t cache, int32_t time) noexcept nogil:
    cdef int64_t cap, k
    cdef double t
    if st.nleasefree == 0 and st.nleases == st.lease_cap:
        cap = st.lease_cap * 2 + 16
        if not grow(<void**> &st.lease_slot, cap * sizeof(int32_t)) \
                or not grow(<void**> &st.lease_row, cap * sizeof(int32_t)) \
                or not grow(<void**> &st.lease_alloc, cap * sizeof(double)) \
                or not grow(<void**> &st.lease_computed, cap * sizeof(double)) \
                or not grow(<void**> &st.lease_cache, cap * sizeof(int32_t)) \
                or not grow(<void**> &st.lease_gen, cap * sizeof(int64_t)) \
                or not grow(<void**> &st.lease_next, cap * sizeof(int64_t)) \
                or not grow(<void**> &st.lease_prev, cap * sizeof(int64_t)) \
                or not grow(<void**> &st.lease_free, cap * sizeof(int64_t)) \
                or not grow(<void**> &st.lease_active, cap * sizeof(char)):
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return
        st.lease_cap = cap
    if st.nleasefree > 0:
        st.nleasefree -= 1
        k = st.lease_free[st.nleasefree]
    else:
        k = st.nleases
        st.nleases += 1
    st.lease_gen[k] = st.next_lease_gen
    st.next_lease_gen += 1
    # the session's newest lease goes last
    st.lease_next[k] = -1
    st.lease_prev[k] = st.lease_tail[slot]
    if st.lease_tail[slot] >= 0:
        st.lease_next[st.lease_tail[slot]] = k
    else:
        st.lease_head[slot] = k
    st.lease_tail[slot] = k
    st.lease_slot[k] = slot
    st.lease_row[k] = st.frame_member[j]
    st.lease_alloc[k] = st.frame_alloc[j]
    st.lease_computed[k] = computed_of(st, j)
    st.lease_cache[k] = cache
    st.lease_active[k] = 1
    t = clamp0(evaluate(st, time, slot, &st.rng_session, NAN))
    if st.err:
        return
    if isfinite(t):
        schedule(st, st.now + t, EV_LEASE_END, 0, k, st.lease_gen[k])


cdef void end_lease(State* st, int64_t k) noexcept nogil:
    cdef int32_t slot = st.lease_slot[k]
    st.lease_active[k] = 0
    if st.lease_prev[k] >= 0:
        st.lease_next[st.lease_prev[k]] = st.lease_next[k]
    else:
        st.lease_head[slot] = st.lease_next[k]
    if st.lease_next[k] >= 0:
        st.lease_prev[st.lease_next[k]] = st.lease_prev[k]
    else:
        st.lease_tail[slot] = st.lease_prev[k]
    st.lease_free[st.nleasefree] = k      # its fields stay valid until a later lease reuses it
    st.nleasefree += 1
    release_units(st, slot, st.lease_row[k], st.lease_alloc[k], st.lease_computed[k],
                  st.lease_cache[k])


cdef void end_leases(State* st, int32_t slot) noexcept nogil:
    # in lease order: what they cache joins the cache in that order
    while st.lease_head[slot] >= 0:
        end_lease(st, st.lease_head[slot])
        if st.err:
            return


cdef void release_pool(State* st, int32_t slot, int32_t row) noexcept nogil:
    """`release P`: the innermost hold still holding P gives it back now, else the first lease of P ends."""
    cdef int32_t d, i, n, off
    cdef int64_t fi, j
    for d in range(st.depth[slot] - 1, -1, -1):
        fi = frame_of(st, slot, d)
        off = st.hold_offsets[st.frame_hold[fi]]
        n = st.holds[off + H_NPOOLS]
        for i in range(n):
            j = fi * st.hold_pools_max + i
            if st.frame_active[j] and st.frame_member[j] == row:
                st.frame_active[j] = 0
                st.ppos[<int64_t> slot * (st.n_pools + 1) + row] = NAN
                release_units(st, slot, row, st.frame_alloc[j], computed_of(st, j), st.holds[off + H_CACHE])
                return
    # outside any hold on P: the session's first lease on P ends
    cdef int64_t k = st.lease_head[slot]
    while k >= 0:
        if st.lease_row[k] == row:
            end_lease(st, k)
            return
        k = st.lease_next[k]


cdef int64_t innermost(State* st, int32_t slot, int32_t row) noexcept nogil:
    """The frame entry of the session's innermost open hold on pool row, or -1."""
    cdef int32_t d, i, n
    cdef int64_t fi, j
    for d in range(st.depth[slot] - 1, -1, -1):
        fi = frame_of(st, slot, d)
        n = st.holds[st.hold_offsets[st.frame_hold[fi]] + H_NPOOLS]
        for i in range(n):
            j = fi * st.hold_pools_max + i
            if st.frame_active[j] and st.frame_member[j] == row:
                return j
    return -1


cdef bint grow_now(State* st, Pool* p, int64_t j, double units) noexcept nogil:
    """Grow the hold's allocation by `units` (rounded up to blocks) if it fits; True when granted."""
    cdef double need = round_up(p, st.frame_alloc[j] + units) - st.frame_alloc[j]
    if need <= 0:
        return True
    if p.used + need <= p.cap + EPS:
        make_room(st, p, need)
        p.used += need
        mark_row(st.pools_sampled, p - st.pools)
        st.frame_alloc[j] += need
        return True
    return False


cdef int32_t lifo_victim(State* st, int32_t row, int32_t grower) noexcept nogil:
    """Engine pool: the resident (of a stage with this memory) admitted last; else the last holder with an open hold."""
    cdef Pool* p = &st.pools[row]
    cdef int64_t i
    cdef int32_t k, slot, best = -1
    if p.engine:
        # residents are in admission order, so each stage's candidate is found from its end
        for k in range(st.n_stages):
            if st.stages[k].kind == K_STEP and st.stages[k].memory == row:
                slot = last_resident_victim(st, &st.stages[k], row, grower)
                if slot >= 0 and (best < 0 or st.adm[slot] > st.adm[best]):
                    best = slot
        return best
    for i in range(p.holders_len - 1, -1, -1):
        slot = p.holders[i]
        if holder_live(st, p, i) and innermost(st, slot, row) >= 0:
            return slot
    return -1


cdef int32_t last_resident_victim(State* st, Stage* s, int32_t row, int32_t grower) noexcept nogil:
    """The stage's latest-admitted resident that holds pool row and may be preempted (-1: none)."""
    cdef int64_t r
    cdef int32_t slot
    for r in range(s.nres - 1, -1, -1):
        slot = st.job_owner[s.res[r]]
        if st.hcount[<int64_t> slot * st.n_pools + row] == 0:
            continue                # not among the pool's holders
        if (st.grow_at[slot] >= 0 and slot != grower) or innermost(st, slot, row) < 0:
            continue                # stalled elsewhere, or holding the pool only through a lease
        return slot
    return -1


cdef void remove_job(State* st, int32_t j) noexcept nogil:
    """A job leaves its stage before completing (its session was preempted); a pending finish goes stale."""
    cdef int32_t k = st.job_stage[j], nxt
    cdef Stage* s = &st.stages[k]
    cdef int64_t i, q
    s.n -= 1
    if st.tl != NULL and st.job_started[j] and s.kind != K_STEP:
        tl_service_end(st, k, j, "job (preempted)")
    if s.kind == K_FIFO:
        if st.job_started[j]:
            s.busy -= 1
            job_free(st, j)
            if s.qlen > 0:
                nxt = ring_pop(s.q, s.qcap, &s.qhead, &s.qlen)
                begin_service(st, s, k, nxt)
            return
        q = 0
        for i in range(s.qlen):
            if s.q[(s.qhead + i) & (s.qcap - 1)] != j:
                s.q[(s.qhead + q) & (s.qcap - 1)] = s.q[(s.qhead + i) & (s.qcap - 1)]
                q += 1
        s.qlen = q
    elif s.kind == K_PS:
        s.V = ps_virtual(s, st.now)
        s.Vt = st.now
        for i in range(s.hlen):
            if s.heap[i].job == j:
                s.hlen -= 1
                if i < s.hlen:
                    heap_place(s.heap, i, s.hlen, s.heap[s.hlen])
                break
        s.dirty = 1
    elif s.kind == K_STEP:
        leave_residents(st, s, j)
    job_free(st, j)


cdef void leave_queue(State* st, int32_t slot) noexcept nogil:
    """A waiting hold leaves its queue (that of the first pool its innermost hold names)."""
    cdef int64_t fi = frame_of(st, slot, st.depth[slot] - 1), i, q = 0
    cdef Pool* p = &st.pools[st.frame_member[fi * st.hold_pools_max]]
    for i in range(p.qlen):
        if p.queue[i] != slot:
            p.queue[q] = p.queue[i]
            q += 1
    p.qlen = q
    st.waiting[slot] = 0
    st.resumed[slot] = 0


cdef void preempt(State* st, int32_t victim, int32_t row) noexcept nogil:
    """§5.9: release the victim's hold on row (and those inside it), rewind it to the hold, re-queue it at the head."""
    cdef Pool* p = &st.pools[row]
    cdef int64_t j = innermost(st, victim, row), fi
    cdef int32_t d = <int32_t> ((j // st.hold_pools_max) - <int64_t> victim * st.hold_depth_max), dd, job, h
    cdef double c = st.frame_pos[j]
    cdef double* before = &st.ppos[<int64_t> victim * (st.n_pools + 1) + row]
    if before[0] == before[0] and c <= before[0] + EPS and not st.stuck[victim]:
        st.stuck[victim] = 1
        p.stuck += 1
    before[0] = c
    st.pools_touched[victim] = 1
    st.attrs[<int64_t> victim * st.n_attrs + st.slot_computed] = c
    if st.tl != NULL:
        tl_preempted(st, victim)
    if st.sess_flow[victim] >= 0:
        remove_flow(st, st.sess_flow[victim])
    st.itl_preempted[victim] = 1          # see token(): a prefill completion may continue the turn
    job = st.sess_job[victim]
    if job >= 0:
        remove_job(st, job)
        st.sess_job[victim] = -1
    if st.waiting[victim]:
        leave_queue(st, victim)
    if st.grow_at[victim] >= 0:
        leave_growers(st, victim)
        st.grow_job[victim] = -1
    for dd in range(st.depth[victim] - 1, d - 1, -1):
        release_frame(st, victim, dd, False)
        if st.err:
            return
    h = st.frame_hold[frame_of(st, victim, d)]
    st.depth[victim] = d
    st.pc[victim] = st.hold_pcs[h] + 2
    p.preemptions += 1
    st.iter_preempted = 1
    hold_statement(st, victim, h, True)


cdef int grow_or_preempt(State* st, int32_t slot, int32_t row, int64_t j, double units) noexcept nogil:
    """Grant the growth, preempting lifo victims while it does not fit: 1 granted, 0 must wait, -1 preempted itself."""
    cdef Pool* p = &st.pools[row]
    cdef int32_t victim
    while True:
        if grow_now(st, p, j, units):
            return 1
        if not p.lifo:
            return 0
        victim = lifo_victim(st, row, slot)
        if victim < 0:
            return 0
        preempt(st, victim, row)
        if st.err or victim == slot:
            return -1


cdef bint grow_or_wait(State* st, int32_t slot, int32_t row, int64_t j, double units,
                       int32_t job) noexcept nogil:
    """Grow frame entry j by `units`: granted now (preempting under lifo), or the session waits
    among the pool's growers (`job`: the resident job whose growth waits, -1 for a statement)."""
    cdef Pool* p = &st.pools[row]
    cdef int r = grow_or_preempt(st, slot, row, j, units)
    if r == 1:
        return True
    if r < 0:
        return False                # its own victim: back in the queue, any job gone
    if p.ngrowers == p.growers_cap:
        if not grow(<void**> &p.growers, (p.growers_cap * 2 + 16) * sizeof(int32_t)):
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return False
        p.growers_cap = p.growers_cap * 2 + 16
    p.growers[p.ngrowers] = slot
    p.ngrowers += 1
    mark_row(st.pools_waiting, p - st.pools)
    st.grow_units[slot] = units
    st.grow_at[slot] = j
    st.grow_job[slot] = job
    return False


cdef inline bint grow_statement(State* st, int32_t slot, int32_t row, double units) noexcept nogil:
    """`grow P (units)` on the session's innermost hold of P."""
    return grow_or_wait(st, slot, row, innermost(st, slot, row), units, -1)


cdef void retry_growers(State* st, int32_t pk) noexcept nogil:
    """Waiting growers in order; the front blocks the others."""
    cdef Pool* p = &st.pools[pk]
    cdef int32_t slot
    cdef int64_t i
    while p.ngrowers > 0:
        slot = p.growers[0]
        if not grow_now(st, p, st.grow_at[slot], st.grow_units[slot]):
            return
        for i in range(p.ngrowers - 1):
            p.growers[i] = p.growers[i + 1]
        p.ngrowers -= 1
        if st.grow_job[slot] >= 0:
            # a stalled resident goes back to its job; its position moves by the stalled need (quirk, §4.5.4)
            st.frame_pos[st.grow_at[slot]] += st.grow_units[slot]
            st.grow_job[slot] = -1
            st.grow_at[slot] = -1
        else:
            st.grow_at[slot] = -1
            ready_push(st, slot)


cdef void leave_growers(State* st, int32_t slot) noexcept nogil:
    cdef int32_t k
    cdef int64_t i, j
    cdef Pool* p
    for k in range(st.n_pools):
        p = &st.pools[k]
        j = 0
        for i in range(p.ngrowers):
            if p.growers[i] != slot:
                p.growers[j] = p.growers[i]
                j += 1
        p.ngrowers = j
    st.grow_at[slot] = -1


cdef void try_every_pool(State* st) noexcept nogil:
    """Growers, then admission, pool by pool: only pools with holds or growers waiting (the
    others' passes do nothing), in row order as if every pool were visited."""
    cdef int32_t k = <int32_t> next_row(st.pools_waiting, 0, st.n_pools)
    while k < st.n_pools:
        retry_growers(st, k)
        try_admit(st, k)
        if st.err:
            return
        if st.pools[k].qlen == 0 and st.pools[k].ngrowers == 0:
            unmark_row(st.pools_waiting, k)
        k = <int32_t> next_row(st.pools_waiting, k + 1, st.n_pools)

include "_step.pxi"
include "_flows.pxi"
include "_invariants.pxi"
include "_long.pxi"
include "_timeline.pxi"


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


# ---- the loop ----------------------------------------------------------------------------------
cdef void sample_areas(State* st) noexcept nogil:
    cdef int32_t k
    cdef Stage* s
    cdef Pool* p
    area_set(&st.live_area, st.now, <double> st.live)
    # A row left out holds 0 in every area and still holds 0: sampling it would add 0 x (now - last)
    # to each integral and change nothing the report reads (`last` matters only under a nonzero value).
    k = <int32_t> next_row(st.pools_sampled, 0, st.n_pools)
    while k < st.n_pools:
        p = &st.pools[k]
        area_set(&p.used_area, st.now, p.used)
        area_set(&p.cached_area, st.now, p.cached)
        area_set(&p.queue_area, st.now, <double> p.qlen)
        area_set(&p.holders_area, st.now, <double> p.nholders)
        if p.used == 0 and p.cached == 0 and p.qlen == 0 and p.nholders == 0:
            unmark_row(st.pools_sampled, k)
        k = <int32_t> next_row(st.pools_sampled, k + 1, st.n_pools)
    k = <int32_t> next_row(st.stages_sampled, 0, st.n_stages)
    while k < st.n_stages:
        s = &st.stages[k]
        area_set(&s.number, st.now, <double> s.n)
        if s.share_cap > 0:
            area_set(&s.busy_area, st.now, s.rate_sum / s.share_cap)   # the capacity carried
        else:
            area_set(&s.busy_area, st.now, 1.0 if s.n > 0 else 0.0)
        # a step stage's time shares are integrated at its iterations' ends (not here); it stays
        # sampled once used, as its busy area may be mid-iteration
        if s.kind != K_STEP and s.n == 0 and not s.share_cap > 0:
            unmark_row(st.stages_sampled, k)
        k = <int32_t> next_row(st.stages_sampled, k + 1, st.n_stages)
    if st.tl != NULL:
        tl_pools(st)


cdef inline double area_until(Area* a, double t) noexcept nogil:
    """The integral over [warmup, t], the value held since `last` carried on to t."""
    return a.integral + a.value * (t - a.last)


cdef void take_mid(State* st) noexcept nogil:
    """The integrals at the middle of the measured window (no event falls strictly between
    now and mid_time, so the values held now are held until then)."""
    cdef int32_t k
    st.mid_taken = 1
    st.mid_live = area_until(&st.live_area, st.mid_time)
    for k in range(st.n_pools):
        st.pools[k].mid_queue = area_until(&st.pools[k].queue_area, st.mid_time)
    st.mid_arrivals = st.arrivals
    st.mid_ended = st.ended


cdef void restart_areas(State* st) noexcept nogil:
    cdef int32_t k
    area_restart(&st.live_area, st.now)
    for k in range(st.n_pools):
        area_restart(&st.pools[k].used_area, st.now)
        area_restart(&st.pools[k].cached_area, st.now)
        area_restart(&st.pools[k].queue_area, st.now)
        area_restart(&st.pools[k].holders_area, st.now)
    for k in range(st.n_stages):
        area_restart(&st.stages[k].number, st.now)
        area_restart(&st.stages[k].busy_area, st.now)
        area_restart(&st.stages[k].prefill_only, st.now)
        area_restart(&st.stages[k].decode_only, st.now)
        area_restart(&st.stages[k].mixed, st.now)
        area_restart(&st.stages[k].decodes, st.now)


cdef void settle(State* st) noexcept nogil:
    """Settle the instant after an event (and once at time 0), spec 09 §9.5, in this order:

    1. the ready queue: each ready session executes (§9.6) until it blocks, ends or waits;
    2. the pools pass, in declaration order: `retry_growers` (05 §5.8), then `try_admit`
       (§5.5; a no-op for `admit via` pools); sessions it admits join the ready queue, so
       1 and 2 repeat until the ready queue stays empty. Admission at settle happens only here;
       only pools with holds or growers waiting are visited (the others' passes do nothing);
    3. the stages pass, in declaration order (from the first ps or step stage): an idle step
       stage with work starts an iteration (04 §4.5.3) unless another event is still pending
       at `now`; a dirty plain ps stage is rescheduled (§4.3), once per settle. Nothing after
       this re-runs 1 and 2: what an iteration's admissions put on an earlier stage waits
       for the next settle;
    4. the flows, if dirty, are recomputed (06 §6.4), once per settle;
    5. the time averages are sampled (live sessions, stage numbers and busy time, step
       batch state, pool used/cached/queue/holders; 08, §9.9); a pool or stage that holds 0
       in every area and still does is skipped (it would add 0 to each integral).
    Gauges are read by `run_loop` when time moves on, not here.
    """
    cdef int32_t slot, k
    while True:
        while st.rlen > 0 and not st.err:
            slot = ring_pop(st.ready, st.rcap, &st.rhead, &st.rlen)
            if st.alive[slot] and not st.waiting[slot]:   # a preempted session waits in a queue
                exec_session(st, slot)
        if st.err:
            return
        # the pools pass: admission at settle happens only here
        try_every_pool(st)
        if st.err:
            return
        if st.rlen == 0:
            break
    cdef bint pending_now = st.hlen > 0 and st.heap[0].t <= st.now
    for k in range(st.n_ps_first, st.n_stages):
        if st.stages[k].kind == K_STEP:
            # an iteration waits for the whole instant (every event at `now` handled)
            if not st.stages[k].inflight and not pending_now and step_has_work(st, k):
                start_iteration(st, k)
                if st.err:
                    return
        elif st.stages[k].kind == K_PS and st.stages[k].dirty:
            if reschedule(st, k) < 0 or st.err:
                return
    if st.fl_dirty:
        flows_recompute(st)
    sample_areas(st)


cdef bint step_has_work(State* st, int32_t k) noexcept nogil:
    cdef int32_t pk
    if st.stages[k].nres > 0:
        return True
    for pk in range(st.n_pools):
        if st.admit_via[pk] == k and st.pools[pk].qlen > 0:
            return True
    return False


cdef void read_gauges(State* st) noexcept nogil:
    cdef int32_t g
    cdef double v
    cdef Gauge* gg
    for g in range(st.n_gauges):
        gg = &st.gauges[g]
        v = evaluate(st, gg.expr, -1, &st.rng_session, NAN)
        if st.err:
            return
        if not st.keep_samples:
            gauge_fold_read(gg, st.now, v)
        elif gg.values.n == 0 or v != gg.values.p[gg.values.n - 1]:
            if charge(st, 16) < 0:
                return
            if darr_push(&gg.times, st.now) < 0 or darr_push(&gg.values, v) < 0:
                fail(st, E_MEMORY, -1, 0, 0, 0)
                return


cdef int next_arrival(State* st) noexcept nogil:
    """Schedule the next open arrival (the first one too), unless the limit is reached."""
    cdef double gap
    if st.arrival_kind == A_POISSON:
        gap = -log(1.0 - sq_rng_random_f64(&st.rng_arrival)) / st.arrival_rate
    else:
        gap = evaluate(st, st.arrival_gap, -1, &st.rng_arrival, NAN)
        if st.err:
            return -1
        if not (gap > 0) or not isfinite(gap):
            fail(st, E_RENEWAL, -1, gap, 0, 0)
            return -1
    return schedule(st, st.now + gap, EV_ARRIVE, 0, 0, 0)


cdef void handle(State* st, Event* e) noexcept nogil:
    """Handle one popped event (spec 09 §9.2), before `settle` runs the instant:

    a job's finish (fifo, ps or delay stage; a stale ps finish is ignored), an arrival
    (the next one is scheduled first, then the session spawns: §9.7), a flow's end (06),
    a step iteration's end (04 §4.5.3; stale after a preemption restarted it), a lease's
    end (05: its pool is freed, then every pool is tried in declaration order), or the
    end of the warm-up (§9.9: the time averages restart from now).
    """
    if e.kind == EV_FINISH:
        finish(st, e)
    elif e.kind == EV_ARRIVE:
        # the next arrival is scheduled first, then the session spawns
        if st.limit == 0 or st.arrivals + 1 < st.limit:
            if next_arrival(st) < 0:
                return
        spawn(st)
    elif e.kind == EV_FLOW_END:
        flow_finish(st, e)
    elif e.kind == EV_ITER_END:
        if e.c == st.stages[e.a].iter_epoch and st.stages[e.a].inflight:
            end_iteration(st, e.a)
    elif e.kind == EV_LEASE_END:
        # a lease already ended (released, or its session gone) makes this event stale
        if st.lease_active[e.b] and st.lease_gen[e.b] == e.c:
            end_lease(st, e.b)
            if not st.err:
                try_every_pool(st)
    else:
        st.warm = 1
        st.warm_arrivals = st.arrivals
        restart_areas(st)


cdef void run_loop(State* st) noexcept nogil:
    """The main loop, spec 09 §9.4: the warm-up event and the first arrivals (§9.7), one
    `settle` at time 0, then per event: stop at the arrival limit or past the horizon; read
    the gauges when time moves on (§9.10: the previous instant is over); pop the earliest
    event (time, then sequence: §9.3), `handle` it and `settle`. A run-time error (§9.11)
    stops the loop with `st.err` set; the gauges are read once more at the end.
    """
    cdef int64_t i
    cdef Event e
    if st.warmup > 0:
        schedule(st, st.warmup, EV_END_WARMUP, 0, 0, 0)
    if st.arrival_kind == A_POISSON:
        schedule(st, 0.0, EV_ARRIVE, 0, 0, 0)
    elif st.arrival_kind == A_RENEWAL:
        next_arrival(st)
    elif st.arrival_kind == A_BATCH or st.arrival_kind == A_CLOSED:
        for i in range(st.arrival_count):
            if spawn(st) < 0:
                return
    if st.err:
        return
    settle(st)
    if st.check:
        check_invariants_now(st)
    while not st.err:
        if st.limit > 0 and st.arrivals >= st.limit and st.live == 0:
            break
        if st.hlen == 0 or st.heap[0].t > st.horizon:
            break
        if st.heap[0].t > st.now:
            read_gauges(st)
            st.steps = 0
            if st.heap[0].t > st.mid_time and not st.mid_taken:
                take_mid(st)
            if st.events >= st.poll_at and poll(st):
                break   # between instants: the report covers [0, now]
        e = pop_event(st)
        st.now = e.t
        st.events += 1
        # events count toward the instant's work too: a step iteration of cost 0, or a job
        # whose time is lost to rounding (`now + 1e-300 == now`), repeats without time passing
        st.steps += 1
        if st.steps > st.step_limit:
            fail(st, E_STUCK, -1, 0, -1, e.a if e.kind == EV_FINISH or e.kind == EV_ITER_END else -1)
            return
        handle(st, &e)
        if st.err:
            return
        settle(st)
        if st.check:
            check_invariants_now(st)
    if not st.err:
        read_gauges(st)


# ---- Python side: set up, run, collect ----------------------------------------------------------
cdef inline void* data_of(cnp.ndarray a):
    return cnp.PyArray_DATA(a)


cdef void free_state(State* st) noexcept:
    cdef int32_t k
    cdef int64_t i
    if st == NULL:
        return
    # the state may be half built (an error while setting it up): a table not allocated yet
    # is NULL (the State is calloc'ed), whatever its count says
    for k in range(st.n_stages if st.stages != NULL else 0):
        free(st.stages[k].q)
        free(st.stages[k].heap)
        free(st.stages[k].res)
        free(st.stages[k].a_job)
        free(st.stages[k].a_id)
        free(st.stages[k].a_tok)
        free(st.stages[k].itl.cells)
    for k in range(st.n_observes if st.observes != NULL else 0):
        free(st.observes[k].values.p)
        free(st.observes[k].times.p)
        free(st.observes[k].serials.p32)
        free(st.observes[k].serials.p64)
        free(st.observes[k].turns.p)
    for k in range(st.n_gauges if st.gauges != NULL else 0):
        free(st.gauges[k].times.p)
        free(st.gauges[k].values.p)
    summaries_free(st)
    if st.pools != NULL:
        for k in range(st.n_pools):
            free(st.pools[k].holders)
            free(st.pools[k].holders_gen)
            free(st.pools[k].lru)
            free(st.pools[k].queue_base)
            for i in range(st.pools[k].nentries):
                free(st.pools[k].entries[i].snap)
            free(st.pools[k].entries)
            free(st.pools[k].own_keys)
            free(st.pools[k].own_rows)
            free(st.pools[k].growers)
    free(st.pools); free(st.pools_waiting); free(st.pools_sampled); free(st.stages_sampled); free(st.scratch); free(st.depth); free(st.frame_hold); free(st.frame_queued_at)
    free(st.frame_member); free(st.frame_alloc); free(st.frame_active); free(st.frame_pos)
    free(st.frame_grown); free(st.grow_units); free(st.grow_at)
    free(st.lease_slot); free(st.lease_row); free(st.lease_alloc); free(st.lease_computed)
    free(st.lease_cache); free(st.lease_active); free(st.lease_gen); free(st.lease_next)
    free(st.lease_prev); free(st.lease_free); free(st.lease_head); free(st.lease_tail)
    free(st.trace_of); free(st.trace_next)
    free(st.fl_stage); free(st.fl_nst); free(st.fl_rem); free(st.fl_rate); free(st.fl_start); free(st.fl_id)
    free(st.fl_owner); free(st.fl_active); free(st.fl_frozen); free(st.fl_free); free(st.fl_order); free(st.touched)
    free(st.fl_left); free(st.fl_rising); free(st.fl_scratch); free(st.sess_flow)
    free(st.adm); free(st.waiting); free(st.resumed); free(st.sess_job); free(st.stuck); free(st.ppos)
    free(st.pools_touched)
    free(st.hcount); free(st.hgen)
    free(st.itl_stage); free(st.grow_job); free(st.itl_has); free(st.itl_last); free(st.itl_turn)
    free(st.it_time.p); free(st.it_count.p); free(st.it_serial.p); free(st.it_turn.p); free(st.it_mode.p)
    free(st.it_tokens.p); free(st.ev_time.p); free(st.ev_key.p); free(st.ev_units.p)
    tl_close(st)
    free(st.itl_decoded); free(st.itl_preempted); free(st.job_mode); free(st.job_grow); free(st.job_frame); free(st.job_units_at); free(st.job_served)
    free(st.stages); free(st.observes); free(st.gauges)
    free(st.heap); free(st.attrs); free(st.pc); free(st.serial); free(st.alive); free(st.sfree); free(st.ready)
    free(st.job_owner); free(st.job_stage); free(st.job_id); free(st.job_work); free(st.job_enq)
    free(st.job_start); free(st.job_end); free(st.job_started); free(st.jfree)
    free(st.stack); free(st.keys)
    free(st)


cdef void _free_capsule(object capsule) noexcept:
    free(PyCapsule_GetPointer(capsule, NULL))


cdef object _adopt(void* p, int64_t n, int typenum, size_t size):
    """A numpy array over a malloc'ed buffer, which the array now owns (freed with it).

    The growth slack is given back first, so the array holds no more than its items.
    """
    cdef cnp.npy_intp dims[1]
    cdef void* q
    dims[0] = n
    if p == NULL or n == 0:
        free(p)
        return cnp.PyArray_ZEROS(1, dims, typenum, 0)
    q = realloc(p, n * size)
    if q != NULL:
        p = q
    arr = cnp.PyArray_SimpleNewFromData(1, dims, typenum, p)
    capsule = PyCapsule_New(p, NULL, <PyCapsule_Destructor> _free_capsule)
    cnp.set_array_base(<cnp.ndarray> arr, capsule)   # takes its own reference
    return arr


cdef object darr_numpy(DArr* a):
    cdef object out = _adopt(a.p, a.n, cnp.NPY_FLOAT64, sizeof(double))
    a.p = NULL       # the array owns the buffer now
    a.n = a.cap = 0
    return out


cdef object larr_numpy(LArr* a):
    cdef object out = _adopt(a.p, a.n, cnp.NPY_INT64, sizeof(int64_t))
    a.p = NULL
    a.n = a.cap = 0
    return out


cdef object serials_numpy(Serials* a):
    cdef object out
    if a.p64 != NULL:
        out = _adopt(a.p64, a.n, cnp.NPY_INT64, sizeof(int64_t))
    else:
        out = _adopt(a.p32, a.n, cnp.NPY_INT32, sizeof(int32_t))
    a.p32 = NULL
    a.p64 = NULL
    a.n = a.cap = 0
    return out


cdef object turns_numpy(Turns* a):
    # all zeros: a calloc'ed array, whose pages stay untouched (no memory) until read
    cdef object out = _adopt(a.p, a.n, cnp.NPY_UINT32, sizeof(uint32_t))
    a.p = NULL
    a.n = a.cap = 0
    return out


cdef object _running(R, Running* r):
    return R.Running(n=r.n, mean=r.mean if r.n > 0 else NAN)


def itl_histogram_of(gaps):
    """The histogram the engine builds from these gaps, one token at a time (for tests: it
    must equal the one sq.stats makes from the list)."""
    import sq.results as R
    cdef Histogram h
    memset(&h, 0, sizeof(Histogram))
    try:
        for g in gaps:
            if histogram_add(&h, <double> g) < 0:
                raise MemoryError()
        return _itl(R, &h)
    finally:
        free(h.cells)


cdef object _itl(R, Histogram* h):
    cdef int64_t i, n = h.nk
    counts = np.empty(n, dtype=np.int64)
    least = np.empty(n, dtype=np.float64)
    greatest = np.empty(n, dtype=np.float64)
    cdef int64_t[::1] c = counts
    cdef double[::1] lo = least
    cdef double[::1] hi = greatest
    for i in range(n):
        c[i] = h.cells[i].count
        lo[i] = h.cells[i].least
        hi[i] = h.cells[i].greatest
    return R.ItlHistogram(
        n=h.n, total=h.total, kmin=h.kmin, counts=counts, least=least, greatest=greatest,
        low=(h.low.count, h.low.least, h.low.greatest), top=(h.top.count, h.top.least, h.top.greatest))


def _contig(a, dtype):
    return np.ascontiguousarray(a, dtype=dtype)


def run(lowered, *, seed=None, horizon=None, warmup=None, arrivals=None,
        trace_iterations=False, trace_evictions=False, dump_pools=False, check_invariants=False,
        step_limit=STEPS_PER_INSTANT, max_memory=MAX_MEMORY, samples="all", wall_limit=None, progress=None,
        timeline=None, timeline_window=None):
    """Run a `sq.lower.Lowered` program; returns `sq.results.RawResults` or raises SqError.

    Settings left as None are the program's own. `trace_iterations` is for step
    stages; `trace_iterations` / `trace_evictions` may be a callable instead of True, which
    gets the lines in chunks (a list of a few thousand at a time) while the run goes, in
    order, and the RawResults' list stays empty; `check_invariants` re-checks the engine's bookkeeping after every
    event (pools within their caps, no negative counter or allocation, queues,
    servers and residents consistent) and raises SqError at the first fault. `timeline` is
    a path: the run streams a trace-event file there (of the events overlapping
    `timeline_window`, a pair of times; None: all).

    Long runs: `samples="none"` keeps summaries instead of samples (RawResults' observes and
    gauges carry `summary` / `fold`); the run stops between instants when a signal handler
    raises (SIGINT's KeyboardInterrupt: raised again with the partial RawResults as
    `.raw`) or after `wall_limit` seconds (RawResults.stopped = "wall limit");
    `progress(now, events, arrivals)` is called every ~50 ms of wall time.
    """
    from sq.errors import SqError
    from sq import results as R

    settings = _settings(lowered, seed, horizon, warmup, arrivals, SqError)
    seed_v, horizon_v, warmup_v, limit_v = settings
    code = _contig(lowered.code, np.int32)
    consts = _contig(lowered.consts, np.float64)
    stmts = _contig(lowered.stmts, np.int32)
    caps = _contig(lowered.pool_caps, np.float64)
    kinds = _contig(lowered.stage_kinds, np.int32)
    servers = _contig(lowered.stage_servers, np.int32)
    phis = _contig(lowered.stage_phi, np.int32)
    gexprs = _contig(lowered.gauge_exprs, np.int32)
    blocks = _contig(lowered.pool_blocks, np.float64)
    kstart = _contig(lowered.pool_key_start, np.int32)
    kcount = _contig(lowered.pool_key_count, np.int32)
    pkeys = _contig(lowered.pool_keys, np.int32)
    holds = _contig(lowered.holds, np.int32)
    trace_turns, trace_start, trace_len = _trace_arrays(lowered)
    hoffs = _contig(lowered.hold_offsets, np.int32)
    step_exprs = _contig(lowered.step_exprs, STEP_EXPRS_DTYPE)
    step_serve = _contig(lowered.step_serve, STEP_SERVE_DTYPE)
    step_memory = _contig(lowered.step_memory, np.int32)
    serve_keys = _contig(lowered.serve_keys, np.int32)
    admit_via = _contig(lowered.pool_admit_via, np.int32)
    estart = _contig(lowered.pool_evict_start, np.int32)
    lifo = _contig(lowered.pool_lifo, np.int32)
    spills = _contig(lowered.pool_spill, SPILL_DTYPE)
    shared = _contig(lowered.stage_shared, np.float64)
    hpcs = _contig(lowered.hold_pcs, np.int32)
    ecount = _contig(lowered.pool_evict_count, np.int32)

    cdef State* st = <State*> calloc(1, sizeof(State))
    if st == NULL:
        raise MemoryError()
    cdef int32_t k, i
    cdef uint64_t useed = <uint64_t> seed_v
    try:
        st.code = <const int32_t*> data_of(code)
        st.consts = <const double*> data_of(consts)
        st.stmts = <const int32_t*> data_of(stmts)
        st.pool_caps = <const double*> data_of(caps)
        st.n_attrs = lowered.n_attrs
        st.slot_serial = lowered.slot_serial
        st.slot_turn = lowered.slot_turn
        st.slot_cached = lowered.slot_cached
        st.slot_computed = lowered.slot_computed
        st.trace_turns = <const double*> data_of(trace_turns)
        st.trace_start = <const int64_t*> data_of(trace_start)
        st.trace_len = <const int64_t*> data_of(trace_len)
        st.trace_sessions = len(trace_len)
        st.trace_ordered = lowered.trace_ordered
        st.slot_new, st.slot_out, st.slot_think, st.slot_forced, st.slot_more = lowered.slot_trace
        st.holds = <const int32_t*> data_of(holds)
        st.hold_offsets = <const int32_t*> data_of(hoffs)
        st.hold_pcs = <const int32_t*> data_of(hpcs)
        st.pool_keys = <const int32_t*> data_of(pkeys)
        st.hold_depth_max = max(1, lowered.max_hold_depth)
        st.hold_pools_max = max(1, lowered.max_hold_pools)
        st.init_pc = lowered.init_pc
        st.turn_pc = lowered.turn_pc
        st.session_pc = lowered.session_pc
        st.max_keys = lowered.max_keys
        st.n_stages = len(lowered.stage_names)
        st.n_pools = len(lowered.pool_names)
        st.n_observes = len(lowered.observe_names)
        st.n_gauges = len(lowered.gauge_names)
        st.arrival_kind = lowered.arrival_kind
        st.arrival_rate = lowered.arrival_rate
        st.arrival_count = min(lowered.arrival_count, 2**62)
        st.arrival_gap = lowered.arrival_gap
        st.horizon = horizon_v
        st.warmup = warmup_v
        st.limit = min(limit_v, ARRIVALS_NEVER)   # a larger limit is never reached either
        st.step_limit = step_limit
        st.max_memory = max_memory
        st.warm = 0 if warmup_v > 0 else 1
        st.mid_time = warmup_v + (horizon_v - warmup_v) / 2.0
        st.stack_cap = lowered.stack_depth + 64
        st.frame_depth = lowered.frame_depth
        st.stack = <double*> malloc(st.stack_cap * sizeof(double))
        for k in range(N_CONTEXTS):
            st.ctxv[k] = NAN
        st.keys = <double*> malloc((2 * lowered.max_keys + 2) * sizeof(double))
        st.stages = <Stage*> calloc(st.n_stages + 1, sizeof(Stage))
        st.observes = <Observe*> calloc(st.n_observes + 1, sizeof(Observe))
        st.gauges = <Gauge*> calloc(st.n_gauges + 1, sizeof(Gauge))
        st.pools = <Pool*> calloc(st.n_pools + 1, sizeof(Pool))
        st.scratch = <double*> malloc((2 * st.hold_pools_max + 2) * sizeof(double))
        st.pools_waiting = rows_new(st.n_pools)
        st.pools_sampled = rows_new(st.n_pools)
        st.stages_sampled = rows_new(st.n_stages)
        if st.pools == NULL or st.scratch == NULL or st.pools_waiting == NULL or st.pools_sampled == NULL \
                or st.stages_sampled == NULL:
            raise MemoryError()
        for k in range(st.n_pools):
            st.pools[k].cap = (<double*> data_of(caps))[k]
            st.pools[k].block = (<double*> data_of(blocks))[k]
            st.pools[k].key_start = (<int32_t*> data_of(kstart))[k]
            st.pools[k].key_count = (<int32_t*> data_of(kcount))[k]
            st.pools[k].evict_start = (<int32_t*> data_of(estart))[k]
            st.pools[k].evict_count = (<int32_t*> data_of(ecount))[k]
            st.pools[k].lifo = (<int32_t*> data_of(lifo))[k]
            st.pools[k].spill_to = (<SpillRow*> data_of(spills))[k].to
            st.pools[k].spill_via = (<SpillRow*> data_of(spills))[k].via
            st.pools[k].spill_work = (<SpillRow*> data_of(spills))[k].work
            st.pools[k].spill_when = (<SpillRow*> data_of(spills))[k].when
            if st.pools[k].spill_to >= 0:
                st.pools_evict_by = 1      # spill clauses read ended sessions' snapshots too
            for i in range(st.n_stages):
                if (<int32_t*> data_of(kinds))[i] == K_STEP and (<int32_t*> data_of(step_memory))[i] == k:
                    st.pools[k].engine = 1
            if st.pools[k].evict_count > 0:
                st.pools_evict_by = 1
        if st.stack == NULL or st.keys == NULL or st.stages == NULL or st.observes == NULL \
                or st.gauges == NULL:
            raise MemoryError()
        st.flow_max_st = max(1, lowered.max_flow_stages)
        st.share_maxmin = lowered.share_maxmin
        st.touched = <char*> calloc(st.n_stages + 1, sizeof(char))
        st.fl_left = <double*> calloc(st.n_stages + 1, sizeof(double))
        st.fl_rising = <double*> calloc(st.n_stages + 1, sizeof(double))
        st.fl_scratch = <int32_t*> calloc(st.flow_max_st + 1, sizeof(int32_t))
        if st.touched == NULL or st.fl_left == NULL or st.fl_rising == NULL or st.fl_scratch == NULL:
            raise MemoryError()
        st.serve_keys = <const int32_t*> data_of(serve_keys)
        st.admit_via = <const int32_t*> data_of(admit_via)
        st.bl_stage = -1
        st.kv_budget = bool(getattr(lowered, "kv_budget", True))
        st.kv_iteration = bool(getattr(lowered, "kv_iteration", True))
        st.trace_iters = bool(trace_iterations)
        st.trace_evicts = bool(trace_evictions)
        for k in range(st.n_stages):
            st.stages[k].budget_e = (<StepExprsRow*> data_of(step_exprs))[k].budget
            st.stages[k].chunk_e = (<StepExprsRow*> data_of(step_exprs))[k].chunk
            st.stages[k].cost_e = (<StepExprsRow*> data_of(step_exprs))[k].cost
            st.stages[k].excl = (<StepServeRow*> data_of(step_serve))[k].exclusive
            st.stages[k].serve_start = (<StepServeRow*> data_of(step_serve))[k].key_start
            st.stages[k].serve_count = (<StepServeRow*> data_of(step_serve))[k].key_count
            st.stages[k].memory = (<int32_t*> data_of(step_memory))[k]
            st.stages[k].share_cap = (<double*> data_of(shared))[k]
            st.stages[k].kind = (<int32_t*> data_of(kinds))[k]
            st.stages[k].servers = (<int32_t*> data_of(servers))[k]
            st.stages[k].phi = (<int32_t*> data_of(phis))[k]
        st.fl_finite = 1
        for k in range(st.n_stages):
            if not isfinite(st.stages[k].share_cap):
                st.fl_finite = 0
        st.n_ps_first = st.n_stages
        for k in range(st.n_stages - 1, -1, -1):
            if st.stages[k].kind == K_PS or st.stages[k].kind == K_STEP:
                st.n_ps_first = k
        for k in range(st.n_gauges):
            st.gauges[k].expr = (<int32_t*> data_of(gexprs))[k]
        sq_rng_seed(&st.rng_arrival, useed ^ SQ_STREAM_ARRIVAL_MASK)
        sq_rng_seed(&st.rng_workload, useed ^ SQ_STREAM_WORKLOAD_MASK)
        sq_rng_seed(&st.rng_session, useed ^ SQ_STREAM_SESSION_MASK)
        sq_rng_seed(&st.rng_trace, useed ^ SQ_STREAM_TRACE_MASK)
        sq_rng_seed(&st.rng_eviction, useed ^ SQ_STREAM_EVICTION_MASK)
        st.check = bool(check_invariants)
        if samples not in ("all", "none"):
            raise SqError(f"run: samples is 'all' or 'none', found {samples!r}", phase="settings")
        st.keep_samples = samples == "all"
        if not st.keep_samples:
            summaries_start(st)
        iteration_lines, eviction_lines = [], []
        watch = _Watch(progress, _trace_sink(trace_iterations, iteration_lines),
                       _trace_sink(trace_evictions, eviction_lines))
        poll_start(st, watch, float(wall_limit) if wall_limit is not None else 0.0)
        keep = _open_timeline(st, timeline, timeline_window, lowered, SqError) if timeline is not None else None
        with nogil:
            run_loop(st)
        trace_flush(st)     # the last chunk, also of a run that failed (its trace leads to the fault)
        if st.err:
            raise SqError(_error_text(st, lowered), phase="run")
        end = _finish(st, horizon_v, warmup_v, limit_v, SqError)
        if st.tl != NULL:
            _close_timeline(st, timeline, SqError)    # complete also when the run was stopped
        del keep
        raw = _collect(st, lowered, R, seed_v, horizon_v, warmup_v, end, bool(dump_pools))
        raw.iteration_trace, raw.eviction_trace = iteration_lines, eviction_lines
        if st.stop == STOP_WALL:
            raw.stopped = "wall limit"
        elif st.stop:
            raw.stopped = "interrupted"
            watch.exception.raw = raw
            raise watch.exception
        return raw
    finally:
        free_state(st)


def _trace_sink(trace, lines):
    """Where a debug trace's lines go: a callable takes each chunk (list of lines) as the run
    goes; True keeps them all in `lines` (the report's list)."""
    return trace if callable(trace) else lines.extend


cdef object _open_timeline(State* st, path, window, lowered, SqError):
    """Open the timeline file and write its header; returns what must outlive the run (the
    names the C side writes)."""
    import json
    # the window was checked with the other run settings (sq.run)
    t0, t1 = (-float("inf"), float("inf")) if window is None else (float(window[0]), float(window[1]))
    stages = [_row_name(lowered.stage_names, lowered.stage_indices, k) for k in range(st.n_stages)]
    pools = [_row_name(lowered.pool_names, lowered.pool_indices, k) for k in range(st.n_pools)]
    keep = [name.encode("utf-8") for name in stages + pools]
    cdef Timeline* tl = <Timeline*> calloc(1, sizeof(Timeline))
    if tl == NULL:
        raise MemoryError()
    st.tl = tl
    tl.t0, tl.t1 = t0, t1
    tl.lanes_per_stage = 1 << 20
    tl.stage_names = <const char**> calloc(st.n_stages + 1, sizeof(char*))
    tl.pool_names = <const char**> calloc(st.n_pools + 1, sizeof(char*))
    tl.lane_busy = <char**> calloc(st.n_stages + 1, sizeof(char*))
    tl.nlanes = <int64_t*> calloc(st.n_stages + 1, sizeof(int64_t))
    tl.pool_last = <double*> calloc(3 * st.n_pools + 1, sizeof(double))
    if tl.stage_names == NULL or tl.pool_names == NULL or tl.lane_busy == NULL or tl.nlanes == NULL \
            or tl.pool_last == NULL:
        raise MemoryError()
    cdef int32_t k
    for k in range(st.n_stages):
        tl.stage_names[k] = <const char*> keep[k]
    for k in range(st.n_pools):
        tl.pool_names[k] = <const char*> keep[st.n_stages + k]
    encoded = os.fsencode(path)
    tl.f = fopen(encoded, "w")
    if tl.f == NULL:
        raise SqError(f"cannot write timeline {os.fsdecode(encoded)}: {os.strerror(errno)}", phase="settings")
    header = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0, "args": {"name": name}}
              for pid, name in ((1, "stages"), (2, "pools"), (3, "sessions"))]
    header += [{"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "ts": 0, "args": {"sort_index": pid}}
               for pid in (1, 2, 3)]
    header += [{"ph": "M", "name": "thread_name", "pid": 1, "tid": k * tl.lanes_per_stage + 1, "ts": 0,
                "args": {"name": name}} for k, name in enumerate(stages)]
    text = '{"traceEvents":[\n' + ",\n".join(json.dumps(e, separators=(",", ":")) for e in header)
    encoded = text.encode("utf-8")
    fputs(encoded, <FILE*> tl.f)
    return keep


cdef object _close_timeline(State* st, path, SqError):
    """Write what is still open at the end, the footer, and close the file (a write error is SqError)."""
    tl_finish(st)
    cdef bint failed = ferror(<FILE*> st.tl.f) != 0
    if tl_close(st) != 0 or failed:
        raise SqError(f"cannot write timeline {os.fsdecode(os.fsencode(path))}: the file is incomplete "
                      "(disk full?)", phase="run")


cdef int tl_close(State* st) noexcept:
    """Finish the file's JSON and close it; free the timeline (nothing if there is none)."""
    cdef Timeline* tl = st.tl
    cdef int32_t k
    cdef int rc = 0
    if tl == NULL:
        return 0
    if tl.f != NULL:
        fputs(b'\n],"displayTimeUnit":"ms","otherData":{"writer":"sq","time":"one simulated time unit '
              b'is shown as one second"}}\n', <FILE*> tl.f)
        rc = fclose(<FILE*> tl.f)
    if tl.lane_busy != NULL:
        for k in range(st.n_stages):
            free(tl.lane_busy[k])
    free(tl.lane_busy); free(tl.job_lane); free(tl.nlanes); free(tl.pool_last); free(tl.stage_names); free(tl.pool_names)
    free(tl.sess_start); free(tl.turn_start); free(tl.turn_no); free(tl.wait_start); free(tl.hold_start)
    free(tl)
    st.tl = NULL
    return rc


def _row_name(names, indices, k):
    return names[k] if indices[k] is None or indices[k] < 0 else f"{names[k]}[{indices[k]}]"


def _trace_arrays(lowered):
    """The trace corpus as flat arrays (read now: a trace file is read when the run starts)."""
    from sq.trace import read_trace
    if not lowered.trace:
        return np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    corpus = read_trace(lowered.trace)
    return corpus.turns.reshape(-1), corpus.offset, corpus.count


def _settings(lowered, seed, horizon, warmup, arrivals, SqError):
    seed = lowered.seed if seed is None else seed
    horizon = lowered.horizon if horizon is None else float(horizon)
    warmup = lowered.warmup if warmup is None else float(warmup)
    limit = lowered.arrivals if arrivals is None else arrivals
    if isinstance(limit, float) and limit == limit and abs(limit) != INFINITY:
        limit = int(limit)
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or not 0 <= limit < 2**64:
        raise SqError(f"run: arrivals {limit!r} is not a whole number in [0, 2^64)", phase="run")
    if not isinstance(seed, (int, np.integer)) or seed < 0 or seed >= 2**64:
        raise SqError(f"run: seed {seed} is not an integer in [0, 2^64)", phase="run")
    if not (horizon == horizon) or horizon < 0:
        raise SqError(f"run: horizon {horizon} is not a time >= 0", phase="run")
    if not (warmup == warmup) or warmup < 0:
        raise SqError(f"run: warmup {warmup} is not a time >= 0", phase="run")
    if arrivals is not None and limit <= 0:
        raise SqError("run: arrivals must be positive", phase="run")
    if limit and lowered.arrival_kind not in (1, 2):
        raise SqError("run: arrivals applies only to poisson or renewal workloads", phase="run")
    return int(seed), horizon, warmup, max(limit, 0)


cdef object _finish(State* st, double horizon, double warmup, object limit, SqError):
    """The end of the run: §9.4's arrival-limit errors, then `end`; time averages flushed to it."""
    from sq.numbers import display as fmt
    cdef double end
    cdef int32_t k
    if st.stop:
        end = st.now            # the time reached
    elif limit > 0:
        if st.arrivals < limit:
            raise SqError(f"run: horizon {fmt(horizon)} reached before requested arrivals: "
                          f"got {st.arrivals}, requested {limit}", phase="run")
        if st.live > 0:
            raise SqError(f"run: failed to drain {st.live} active sessions within horizon "
                          f"{fmt(horizon)}", phase="run")
        if st.now <= warmup:
            raise SqError(f"run: arrivals drained at {fmt(st.now)} before or at warmup "
                          f"{fmt(warmup)}; no measurement interval", phase="run")
        end = st.now
    else:
        end = horizon
    st.now = end
    if not st.mid_taken and end >= st.mid_time:
        take_mid(st)
    area_set(&st.live_area, end, st.live_area.value)
    for k in range(st.n_pools):
        area_set(&st.pools[k].used_area, end, st.pools[k].used_area.value)
        area_set(&st.pools[k].cached_area, end, st.pools[k].cached_area.value)
        area_set(&st.pools[k].queue_area, end, st.pools[k].queue_area.value)
        area_set(&st.pools[k].holders_area, end, st.pools[k].holders_area.value)
    for k in range(st.n_stages):
        area_set(&st.stages[k].number, end, st.stages[k].number.value)
        area_set(&st.stages[k].busy_area, end, st.stages[k].busy_area.value)
        area_set(&st.stages[k].prefill_only, end, st.stages[k].prefill_only.value)
        area_set(&st.stages[k].decode_only, end, st.stages[k].decode_only.value)
        area_set(&st.stages[k].mixed, end, st.stages[k].mixed.value)
        area_set(&st.stages[k].decodes, end, st.stages[k].decodes.value)
    if not st.keep_samples:
        folds_end(st, end)
    return end


cdef object _iteration_lines(State* st):
    """`ITER <now> serial:turn:(p|d)tokens …` per iteration start, like the reference's SERQ_TRACE_ITER."""
    from sq.numbers import display as fmt
    lines = []
    cdef int64_t i, e = 0, n
    for i in range(st.it_time.n):
        n = st.it_count.p[i]
        entries = []
        for _ in range(n):
            entries.append(f"{st.it_serial.p[e]}:{st.it_turn.p[e]}:"
                           f"{'d' if st.it_mode.p[e] == M_DECODE else 'p'}{fmt(st.it_tokens.p[e])}")
            e += 1
        lines.append(f"ITER {st.it_time.p[i]:.4f} " + " ".join(entries))
    return lines


cdef object _eviction_lines(State* st):
    """`EVICT <now> <key> <units>` per evicted piece, like the reference's SERQ_TRACE_EVICT
    (the key is the owner's serial, or 2^62 + n for a dead entry)."""
    from sq.numbers import display as fmt
    cdef int64_t i
    return [f"EVICT {st.ev_time.p[i]:.4f} {st.ev_key.p[i]} {fmt(st.ev_units.p[i])}" for i in range(st.ev_time.n)]


cdef str _owner_status(State* st, Entry* en):
    """What the entry's owner is doing at the end, in the reference's words ("gone": ended, or nobody's)."""
    cdef int32_t slot = en.slot
    if slot < 0 or not st.alive[slot] or st.serial[slot] != en.key:
        return "gone"
    if st.waiting[slot]:
        return "Queued"
    if st.grow_at[slot] >= 0:
        return "Growing"
    if st.sess_job[slot] >= 0 or st.sess_flow[slot] >= 0:
        return "InStage"
    return "Ready"


cdef object _pool_dump_lines(State* st, lowered):
    """`POOL <name> used U cached C by status {…}` per pool at the end, like SERQ_DUMP_POOLS:
    the cache entries counted and summed by what their owners are doing. The sums run in
    (last) cache order; 0.1.2 sums in its hash map's order, which changes from run to run,
    so the last digits of a fractional sum may differ from one of its runs."""
    from sq.numbers import debug as dbg, display as fmt
    cdef int32_t k
    cdef int64_t e
    cdef Pool* p
    lines = []
    for k in range(st.n_pools):
        p = &st.pools[k]
        entries = sorted((p.entries[e].seq, _owner_status(st, &p.entries[e]), p.entries[e].size)
                         for e in range(p.nentries))
        groups = {}
        for _, status, size in entries:
            count, units = groups.get(status, (0, 0.0))
            groups[status] = (count + 1, units + size)
        text = ", ".join(f'"{status}": ({count}, {dbg(units)})' for status, (count, units) in sorted(groups.items()))
        lines.append(f"POOL {lowered.pool_names[k]} used {fmt(p.used)} "   # members print the array's name
                     f"cached {fmt(p.cached)} by status {{{text}}}")
    return lines


cdef object _area(R, Area* a):
    return R.Area(integral=a.integral, value=a.value)


cdef object _collect(State* st, lowered, R, seed, double horizon, double warmup, double end, bint dump_pools):
    cdef int32_t k
    cdef Stage* s
    raw = R.RawResults(horizon=horizon, end=end, warmup=warmup, seed=seed,
                       events=st.events, arrivals=st.arrivals, ended=st.ended, turns=st.turns,
                       live=_area(R, &st.live_area))
    if st.mid_taken:
        raw.middle = R.Middle(time=st.mid_time, live=st.mid_live,
                              queues=[st.pools[k].mid_queue for k in range(st.n_pools)],
                              warm_arrivals=st.warm_arrivals, arrivals=st.mid_arrivals, ended=st.mid_ended)
    for k in range(st.n_observes):
        if not st.keep_samples:
            raw.observes.append(R.ObserveRaw(name=lowered.observe_names[k],
                                             summary=_summary(R, &st.observes[k].summary)))
            continue
        raw.observes.append(R.ObserveRaw(
            name=lowered.observe_names[k],
            samples=darr_numpy(&st.observes[k].values), times=darr_numpy(&st.observes[k].times),
            sessions=serials_numpy(&st.observes[k].serials), turns=turns_numpy(&st.observes[k].turns)))
    for k in range(st.n_gauges):
        if not st.keep_samples:
            raw.gauges.append(R.GaugeRaw(name=lowered.gauge_names[k], fold=_fold(R, &st.gauges[k].fold, end)))
            continue
        raw.gauges.append(R.GaugeRaw(name=lowered.gauge_names[k],
                                     times=darr_numpy(&st.gauges[k].times),
                                     values=darr_numpy(&st.gauges[k].values)))
    kind_names = {K_FIFO: "fifo", K_PS: "ps", K_DELAY: "delay", K_STEP: "step"}
    for k in range(st.n_stages):
        s = &st.stages[k]
        raw.stages.append(R.StageRaw(
            name=lowered.stage_names[k], index=lowered.stage_indices[k],
            kind=kind_names.get(s.kind, "step"),
            number=_area(R, &s.number), busy=_area(R, &s.busy_area),
            wait_mean=_running(R, &s.waits), service_mean=_running(R, &s.services),
            iterations=s.iterations, prefill_only=_area(R, &s.prefill_only),
            decode_only=_area(R, &s.decode_only), mixed=_area(R, &s.mixed), decodes=_area(R, &s.decodes),
            decode_batch_mean=_running(R, &s.decode_batch), decode_step_mean=_running(R, &s.decode_step),
            budget_use=_running(R, &s.budget_use), batch=_running(R, &s.batch),
            itl=_itl(R, &s.itl)))
    cdef Pool* p
    if dump_pools:
        raw.pool_dump = _pool_dump_lines(st, lowered)
    for k in range(st.n_pools):
        p = &st.pools[k]
        raw.pools.append(R.PoolRaw(
            name=lowered.pool_names[k], index=lowered.pool_indices[k],
            used=_area(R, &p.used_area), cached=_area(R, &p.cached_area),
            queue=_area(R, &p.queue_area), holders=_area(R, &p.holders_area),
            wait_mean=_running(R, &p.waits), admissions=p.admissions,
            evicted_entries=p.evicted_entries, evicted_units=p.evicted_units, rejected=p.rejected,
            preemptions=p.preemptions, stuck=p.stuck, spills=p.spills))
    return raw


cdef object _error_text(State* st, lowered):
    from sq.lower import instruction_at
    from sq.numbers import brief, display as fmt
    index = (<uint64_t> st.err_a)      # an index is unsigned (saturated at 2^64 - 1)
    where = f" (session {st.err_serial}, time {brief(st.err_time)})" if st.err_serial >= 0 \
        else f" (time {brief(st.err_time)})"
    if st.err == E_BRANCH:
        site = lowered.sites[st.err_a]
        return (f"{site}: the guard is {fmt(st.err_value)}, not 0 or 1; "
                f"a draw is written `branch with (p)`{where}")
    if st.err == E_INDEX:
        return f"index {index} out of range (count {st.err_b}){where}"
    if st.err == E_STAGE_INDEX:
        return f"stage index {index} out of range (count {st.err_b}){where}"
    if st.err == E_POOL_INDEX:
        return f"pool index {index} out of range (count {st.err_b}){where}"
    if st.err == E_GROW_OUTSIDE or st.err == E_LOAD_OUTSIDE or st.err == E_GROWING_OUTSIDE:
        return f"{lowered.sites[st.err_a]}{where}"
    if st.err == E_LOAD_FIT:
        return (f"`load {lowered.sites[st.err_a]} ({fmt(st.err_value3)})`: the hold has {fmt(st.err_value)} allocated and "
                f"{fmt(st.err_value2)} computed; a load must fit the allocation (grow first){where}")
    if st.err == E_BUDGET_LEFT:
        return f"budget_left needs a step stage{where}"
    if st.err == E_NESTING:
        return (f"`budget_left({_row_name(lowered.stage_names, lowered.stage_indices, st.err_a)})` nests "
                f"deeper than the expression stack{where}")
    if st.err == E_RENEWAL:
        return f"renewal interarrival must be positive and finite (got {fmt(st.err_value)}){where}"
    if st.err == E_STUCK:
        head = f"the run does not advance: more than {st.step_limit} statements and events without time passing"
        ins = instruction_at(lowered.stmts, st.err_a, "stmts") if st.err_a >= 0 else None
        if ins is not None and ins.name == "S_JUMP":     # a loop's back jump: the loop's first statement
            ins = instruction_at(lowered.stmts, ins.operands["target"], "stmts")
        if ins is not None and ins.name == "S_RUN":      # stuck at a session's `run`
            stage = _row_name(lowered.stage_names, lowered.stage_indices, ins.operands["stage"]["base"])
            return (f"{head}: a `run {stage}` that takes no time (work 0, or a time lost to rounding: "
                    f"`now + work == now`) in a `loop`?{where}")
        if st.err_a >= 0:     # a session's statements
            return f"{head} (a `loop` with no time-taking `run`?){where}"
        if st.err_b >= 0:     # a stage's events
            what = "iterations" if lowered.stage_kinds[st.err_b] == K_STEP else "jobs"
            return (f"{head}: stage `{_row_name(lowered.stage_names, lowered.stage_indices, st.err_b)}` "
                    f"repeats {what} that take no time (a cost of 0, or a time lost to rounding: "
                    f"`now + work == now`){where}")
        return f"{head}{where}"
    if st.err == E_SPILL_VIA_STEP:
        return (f"pool `{_row_name(lowered.pool_names, lowered.pool_indices, st.err_a)}` spills a piece over "
                f"step stage `{_row_name(lowered.stage_names, lowered.stage_indices, st.err_b)}`, which runs only "
                f"`prefill` and `decode` work and cannot carry a transfer (pyserq 0.1.2 panics here); "
                f"link the spill through a fifo, ps or delay stage{where}")
    if st.err == E_INVARIANT:
        return f"{invariant_text(st.err_a, st.err_b)}{where}"
    if st.err == E_MEMORY_LIMIT:
        return (f"the run would take more than {_bytes(st.max_memory)} of memory (max_memory) at time "
                f"{brief(st.err_time)}: {_progress(st, lowered)}; raise the bound (sq.run(max_memory=...), "
                f"--max-memory) or shorten the run")
    if st.err == E_TOO_MANY:
        return f"more than {MAX_SESSIONS} sessions alive at once: the run would exhaust memory{where}"
    if st.err == E_SPILL_CYCLE:
        return (f"eviction cannot make room: evicted pieces spill back into the pools being emptied "
                f"(a pool that spills into itself, or a cycle of spills){where}")
    return f"out of memory{where}: {_progress(st, lowered)}"


def _bytes(n) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{n} bytes"


cdef str _progress(State* st, lowered):
    """How far a run got (for an error that stops it)."""
    cdef int64_t samples = 0
    cdef int32_t k
    for k in range(st.n_observes):
        samples += st.observes[k].values.n
    return (f"{st.events} events, {st.arrivals} arrivals, {st.live} sessions alive with "
            f"{lowered.n_attrs} attributes each, {samples} samples recorded")

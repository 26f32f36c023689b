# Growable arrays, row bit sets, the event and ps heaps, rings, the memory bound, `fail`.
# Included by sq/_engine.pyx (one translation unit, so the C compiler inlines across files);
# every function here runs without the GIL.


# ---- growable arrays ------------------------------------------------------------
cdef extern from *:
    """
    #if defined(__linux__)
    #include <sys/mman.h>
    #include <stdint.h>
    #endif
    /* Ask the kernel for transparent huge pages under a grown block of `size` bytes at p (Linux
       with THP in `madvise` mode; elsewhere nothing). A long run's sample arrays are written
       once, front to back: in 4 KiB pages that is a page fault every 512 doubles (~10 % of an
       M/M/1 run's CPU time, most of it the kernel's), in 2 MiB pages one per 262,144. The
       advice is about memory, not values: what is stored is the same. */
    static void sq_advise_huge(void* p, size_t size) {
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        uintptr_t first = (uintptr_t) p & ~(uintptr_t) 4095;
        uintptr_t end = ((uintptr_t) p + size + 4095) & ~(uintptr_t) 4095;
        (void) madvise((void*) first, end - first, MADV_HUGEPAGE);   /* advice: a failure changes nothing */
    #else
        (void) p; (void) size;
    #endif
    }
    #define SQ_HUGE_ADVICE_BYTES ((size_t) 4 << 20)
    """
    void sq_advise_huge(void* p, size_t size) nogil
    const size_t HUGE_ADVICE_BYTES "SQ_HUGE_ADVICE_BYTES"   # a block this large or larger is advised


cdef inline void advise_grown(void* p, size_t size) noexcept nogil:
    """A sample array (or another growing table) just reallocated to `size` bytes: from 4 MiB on
    (two huge pages: below that a huge page rarely fits inside the block) ask for huge pages."""
    if size >= HUGE_ADVICE_BYTES:
        sq_advise_huge(p, size)


cdef inline int darr_push(DArr* a, double v) noexcept nogil:
    # the common case inline (a sample per record); growth out of line
    if a.n == a.cap and darr_grow(a) < 0:
        return -1
    a.p[a.n] = v
    a.n += 1
    return 0


cdef inline int64_t grown_cap(int64_t cap) noexcept nogil:
    """The next capacity of a growing sample array: 4x up to 2^20 items (a short run's arrays
    reach their size in 3 steps, not 7; a long run's copy a third of what they would at 2x:
    realloc copies a block it cannot extend in place, ~4 % of M/M/1's instructions at 45,000
    samples, benchmarks/README.md, tenth round), then 2x (the slack, never written, stays
    untouched memory). What the memory bound charges is per item, not this."""
    if cap == 0:
        return 64
    return cap * 4 if cap < (1 << 20) else cap * 2


cdef int darr_grow(DArr* a) noexcept nogil:
    cdef int64_t cap = grown_cap(a.cap)
    cdef double* p = <double*> realloc(a.p, cap * sizeof(double))
    if p == NULL:
        return -1
    advise_grown(p, cap * sizeof(double))
    a.p = p
    a.cap = cap
    return 0


cdef int larr_push(LArr* a, int64_t v) noexcept nogil:
    cdef int64_t cap
    cdef int64_t* p
    if a.n == a.cap:
        cap = grown_cap(a.cap)
        p = <int64_t*> realloc(a.p, cap * sizeof(int64_t))
        if p == NULL:
            return -1
        advise_grown(p, cap * sizeof(int64_t))
        a.p = p
        a.cap = cap
    a.p[a.n] = v
    a.n += 1
    return 0


cdef inline void running_add(Running* r, double x) noexcept nogil:
    # sq.results.stats.welford's mean, step for step, so the report's mean is the same to the bit
    r.n += 1
    r.mean += (x - r.mean) / <double> r.n


cdef enum:
    NARROW_SERIAL_MAX = 2147483647     # the largest serial the 4-byte table holds (2^31 - 1)


cdef inline int serials_push(Serials* a, int64_t v) noexcept nogil:
    # the common case inline (a narrow serial with room); widening and growth out of line
    if a.p64 == NULL and v <= NARROW_SERIAL_MAX and a.n < a.cap:
        a.p32[a.n] = <int32_t> v
        a.n += 1
        return 0
    return serials_push_slow(a, v)


cdef int serials_push_slow(Serials* a, int64_t v) noexcept nogil:
    cdef int64_t cap, k
    cdef int64_t* wide
    if a.p64 == NULL and v > NARROW_SERIAL_MAX:
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
        cap = grown_cap(a.cap)
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


cdef inline int turns_push(Turns* a, uint32_t v) noexcept nogil:
    # the common case inline (all zeros so far: nothing stored); the rest out of line
    if a.p == NULL and v == 0:
        a.n += 1
        return 0
    return turns_push_slow(a, v)


cdef int turns_push_slow(Turns* a, uint32_t v) noexcept nogil:
    cdef int64_t cap
    if a.p == NULL:                # the first nonzero turn (turns_push took the zeros)
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


cdef inline void area_again(Area* a, double now) noexcept nogil:
    """area_set of the value the area holds."""
    a.integral += a.value * (now - a.last)
    a.last = now


cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil


# A row set is two levels of bits: bits[0] holds ns, the count of summary words; bits[1 .. ns]
# say which words of rows may be nonzero; the row words follow. A pass over the set costs what it
# visits, not the rows declared (up to 4096 rows in one summary word).
cdef uint64_t* rows_new(State* st, int64_t n) noexcept nogil:
    """A set-up's row set of n rows, all clear (plan_table)."""
    cdef int64_t nw = (n + 63) // 64 + 1, ns = (nw + 63) // 64
    cdef uint64_t* bits = <uint64_t*> plan_table(st, 1 + ns + nw, sizeof(uint64_t), TABLE_ZERO)
    if bits != NULL:
        bits[0] = <uint64_t> ns
    return bits


cdef inline void mark_row(uint64_t* bits, int64_t k) noexcept nogil:
    cdef int64_t w = k >> 6
    bits[1 + <int64_t> bits[0] + w] |= (<uint64_t> 1) << (k & 63)
    bits[1 + (w >> 6)] |= (<uint64_t> 1) << (w & 63)


cdef inline void touch_row(uint64_t* words, int64_t k) noexcept nogil:
    """Set row k's bit in a plain bit array (no summary words: pools_touched, stages_touched)."""
    words[k >> 6] |= (<uint64_t> 1) << (k & 63)


cdef inline bint row_marked(const uint64_t* bits, int64_t k) noexcept nogil:
    return (bits[1 + <int64_t> bits[0] + (k >> 6)] >> (k & 63)) & 1


cdef inline void unmark_row(uint64_t* bits, int64_t k) noexcept nogil:
    cdef int64_t w = k >> 6
    cdef uint64_t* words = bits + 1 + <int64_t> bits[0]
    words[w] &= ~((<uint64_t> 1) << (k & 63))
    if words[w] == 0:
        bits[1 + (w >> 6)] &= ~((<uint64_t> 1) << (w & 63))


cdef inline bint row_alone(const uint64_t* bits, int64_t k) noexcept nogil:
    """Whether row k's bit is the set's only one (tested in a set of one summary word, up to 4096
    rows; a larger set says False, and its caller looks further)."""
    cdef int64_t w = k >> 6
    return (bits[0] == 1 and bits[1] == (<uint64_t> 1) << w
            and bits[2 + w] == (<uint64_t> 1) << (k & 63))


cdef inline bint rows_none(const uint64_t* bits) noexcept nogil:
    """Whether no row's bit is set, tested in a set of one summary word (up to 4096 rows; a
    larger set says False, and its caller looks further)."""
    return bits[0] == 1 and bits[1] == 0


cdef inline bint rows_within(const uint64_t* bits, int64_t k) noexcept nogil:
    """Whether no row but k has its bit set (k's may be or not), tested as row_alone is."""
    return rows_none(bits) or row_alone(bits, k)


cdef inline bint rows_any(const uint64_t* bits) noexcept nogil:
    """Whether some row's bit is set (one summary word up to 4096 rows)."""
    cdef int64_t i
    for i in range(<int64_t> bits[0]):
        if bits[1 + i] != 0:
            return True
    return False


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


cdef inline double min_of(double x, double y) noexcept nogil:
    """fmin(x, y) as glibc's x86-64 `minsd` gives it (y on a tie, the number beside a NaN), inlined
    (the hot paths of pools and step stages; elsewhere libm's fmin, the same value, is cheap enough)."""
    return x if x < y else (x if y != y else y)


cdef inline int64_t turn_of(double x) noexcept nogil:
    # a record carries `turn_no` as an unsigned 32-bit count: NaN and negatives 0, saturating
    if not (x > 0):
        return 0
    if x >= 4294967295.0:
        return 4294967295
    return <int64_t> x


cdef inline void fail(State* st, int code, int slot, double value, int64_t a, int64_t b) noexcept nogil:
    fail_as(st, code, st.sess.serial[slot] if slot >= 0 else -1, value, a, b)


cdef inline void fail_as(State* st, int code, int64_t serial, double value, int64_t a, int64_t b) noexcept nogil:
    """`fail` in the session of this serial (-1: none)."""
    if st.error.code != E_NONE:
        return
    st.error.code = code
    st.error.serial = serial
    st.error.time = st.now
    st.error.value = value
    st.error.a = a
    st.error.b = b


# ---- the event heap: (time, seq) order -----------------------------------------
# ---- binary min-heaps: the event list (by time, then seq) and each ps stage (by tag, then id) ----
ctypedef fused HeapItem:
    Event
    PsEntry
    FifoEnd         # (fifo_loop's own heap: an Event's order, by time then seq)


cdef inline bint before(HeapItem* x, HeapItem* y) noexcept nogil:
    if HeapItem is PsEntry:
        return x.tag < y.tag or (x.tag == y.tag and x.id < y.id)
    else:
        return x.t < y.t or (x.t == y.t and x.seq < y.seq)


cdef inline int before_flag(HeapItem* x, HeapItem* y) noexcept nogil:
    """`before` as a 0/1 computed without a branch (`|` and `&`: every comparison made), for a
    sum: which of two children is the smaller is a coin toss in a heap of a few random times
    (M/M/8's finishes, a ps stage's tags), and the short-circuit form's branches were mispredicted
    there (callgrind --branch-sim). Where the outcome picks a branch anyway, `before` is cheaper."""
    if HeapItem is PsEntry:
        return (x.tag < y.tag) | ((x.tag == y.tag) & (x.id < y.id))
    else:
        return (x.t < y.t) | ((x.t == y.t) & (x.seq < y.seq))


cdef inline int heap_push(State* st, HeapItem** heap, int64_t* cap, int64_t* n, int64_t first,
                          HeapItem e) noexcept nogil:
    """Add e (the allocation doubles when full, starting at `first` items)."""
    if n[0] == cap[0] and heap_grow(st, heap, cap, first) < 0:
        return -1
    n[0] += 1
    heap_up(heap[0], n[0] - 1, e)      # a new leaf only moves up
    return 0


cdef int heap_grow(State* st, HeapItem** heap, int64_t* cap, int64_t first) noexcept nogil:
    cdef int64_t c = cap[0] * 2 if cap[0] else first
    cdef HeapItem* h = <HeapItem*> realloc(heap[0], c * sizeof(HeapItem))
    if h == NULL:
        fail(st, E_MEMORY, -1, 0, 0, 0)
        return -1
    heap[0] = h
    cap[0] = c
    return 0


cdef inline void heap_up(HeapItem* h, int64_t i, HeapItem e) noexcept nogil:
    """Put e at place i (i's old item is gone) or above it, moving larger parents down."""
    cdef int64_t parent
    while i > 0:
        parent = (i - 1) >> 1
        if not before(&e, &h[parent]):
            break
        h[i] = h[parent]
        i = parent
    h[i] = e


cdef inline void heap_down(HeapItem* h, int64_t i, int64_t n, HeapItem e) noexcept nogil:
    """Put e at place i of a heap of n (i's old item is gone) or below it, moving smaller children up."""
    cdef int64_t child
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n:
            child += before_flag(&h[child + 1], &h[child])
        if not before(&h[child], &e):
            break
        h[i] = h[child]
        i = child
    h[i] = e


cdef inline void heap_place(HeapItem* h, int64_t i, int64_t n, HeapItem e) noexcept nogil:
    """Put e at place i of a heap of n (i's old item is gone), moving it up or down to its place."""
    if i > 0 and before(&e, &h[(i - 1) >> 1]):
        heap_up(h, i, e)
    else:
        heap_down(h, i, n, e)


cdef inline HeapItem heap_pop(HeapItem* h, int64_t* n) noexcept nogil:
    cdef HeapItem top = h[0]
    n[0] -= 1
    if n[0] > 0:
        heap_down(h, 0, n[0], h[n[0]])     # the last leaf, put at the root, only moves down
    return top


cdef int schedule(State* st, double t, int kind, int a, int64_t b, int64_t c) noexcept nogil:
    """`push_event` out of line."""
    return push_event(st, t, kind, a, b, c)


cdef inline int push_event(State* st, double t, int kind, int a, int64_t b, int64_t c) noexcept nogil:
    """Add an event: to the soon slot when it is free and the event comes before every event in
    the heap (or displaces a later one from it), else to the heap. The heap always has room for
    one more (events_start made it, and a push that fills it grows it after), so the common case
    calls nothing. Inline where a fifo or delay job's service begins (in run_loop and the
    statement VM) and where a lone ps stage is rescheduled (in settle)."""
    cdef Event e
    e.t = t
    e.seq = st.seq
    st.seq += 1
    e.kind = kind
    e.a = a
    e.b = b
    e.c = c
    if st.soon.seq == NO_EVENT:
        if st.hlen == 0 or before(&e, &st.heap[0]):
            st.soon = e
            return 0
    elif before(&e, &st.soon):
        e, st.soon = st.soon, e         # the one it displaces is before every event in the heap
    events_insert(st, e)
    return events_room(st)


# The event list is kept sorted while it is short (events_sorted_max events), a binary heap while
# it is long. A step engine's R replicas keep ~R iteration ends pending, and each one handled is
# replaced by the replica's next end, mostly among the latest: the week's 16 replicas' new end has
# 1.1 ends after it on average, so sorted it is put in place from the end in ~2 comparisons, where
# the heap's sift takes 4 levels. A sorted list's top is taken by moving `heap` on (heap_room
# holds the allocation), a long list becomes a heap as it stands (ascending order is a heap's)
# and becomes sorted again only when it is half as short (no flapping). Any structure pops the
# same sequence: no two events compare equal (every seq is distinct). Tests run both (event_lists:
# 0 keeps every list a heap).
cdef int64_t events_sorted_max = 32


cdef inline void events_insert(State* st, Event e) noexcept nogil:
    """Put e in the event list (it has room for one more at its end: events_room)."""
    cdef Event* h = st.heap
    cdef int64_t i = st.hlen
    st.hlen += 1
    if st.heaped:
        heap_up(h, i, e)      # a new leaf only moves up
        return
    while i > 0 and before(&e, &h[i - 1]):
        h[i] = h[i - 1]
        i -= 1
    h[i] = e
    if st.hlen > events_sorted_max:
        st.heaped = True    # (ascending order is a heap's order as it stands)


cdef inline int events_room(State* st) noexcept nogil:
    """Room for one more event at the list's end (the common case calls nothing)."""
    if st.heap + st.hlen < st.heap_room + st.hcap:
        return 0
    return events_grow(st)


cdef int events_grow(State* st) noexcept nogil:
    """The event list moved back to the start of its allocation, or the allocation doubled
    (starting at 64 events) where it starts there already."""
    cdef Event* h
    if st.heap != st.heap_room:
        memmove(st.heap_room, st.heap, st.hlen * sizeof(Event))
    else:
        h = <Event*> realloc(st.heap_room, (st.hcap * 2 if st.hcap else 64) * sizeof(Event))
        if h == NULL:
            fail(st, E_MEMORY, -1, 0, 0, 0)
            return -1
        st.heap_room = h
        st.hcap = st.hcap * 2 if st.hcap else 64
    st.heap = st.heap_room
    return 0


cdef inline void events_take_top(State* st) noexcept nogil:
    """The event list's top taken off."""
    st.hlen -= 1
    if not st.heaped:
        st.heap += 1
    elif st.hlen > 0:
        heap_down(st.heap, 0, st.hlen, st.heap[st.hlen])     # the last leaf, put at the root, only moves down
        if st.hlen <= events_sorted_max >> 1:
            events_sort(st)


cdef void events_sort(State* st) noexcept nogil:
    """The heap, short again, sorted (an insertion sort of events_sorted_max / 2 events at most)."""
    cdef Event* h = st.heap
    cdef Event e
    cdef int64_t i, j
    for j in range(1, st.hlen):
        e = h[j]
        i = j
        while i > 0 and before(&e, &h[i - 1]):
            h[i] = h[i - 1]
            i -= 1
        h[i] = e
    st.heaped = False


ctypedef fused ArrivalSlot:
    Event           # st.arrival
    FifoEnd         # fifo_loop's and ps_loop's copy of it, a local (their loops read st.arrival never)


cdef inline void no_arrival(ArrivalSlot* slot) noexcept nogil:
    """The arrival slot empty: no arrival pending. Its time is infinite, so that it is before no
    event and the loops compare it with the rest without testing it first; its seq NO_EVENT,
    what next_event and the loops test for "none pending" (a run ends there, past its horizon)."""
    slot.t = INFINITY
    slot.seq = NO_EVENT


cdef int events_start(State* st) noexcept nogil:
    """The event heap's first room and an empty arrival slot, before anything is scheduled."""
    no_arrival(&st.arrival)
    st.arrival.kind = EV_ARRIVE
    st.soon.seq = NO_EVENT
    return events_grow(st)


cdef inline void schedule_arrival(State* st, ArrivalSlot* slot, double t) noexcept nogil:
    """The next open arrival, in its slot (st.arrival, or a loop's copy of it): only one is ever
    pending. Its seq is taken as `schedule` takes it, so the (time, seq) order of all events is
    the heap's order."""
    slot.t = t
    slot.seq = st.seq
    st.seq += 1


cdef inline Event* next_event(State* st) noexcept nogil:
    """The earliest pending event, the arrival slot's or else the soon slot's or the heap's top,
    by (t, seq); NULL: none. The one reader of "what comes next": nothing else looks at
    st.heap[0], st.soon or st.arrival."""
    cdef Event* top = &st.soon
    if st.soon.seq == NO_EVENT:
        if st.hlen == 0:
            return NULL if st.arrival.seq == NO_EVENT else &st.arrival
        top = &st.heap[0]
    if not before(&st.arrival, top):
        return top              # (an empty slot, t = inf and seq NO_EVENT, is never before an event)
    return &st.arrival


cdef inline Event pop_event(State* st, Event* next) noexcept nogil:
    """Take the event next_event returned."""
    cdef Event e
    if next == &st.arrival:
        e = st.arrival
        no_arrival(&st.arrival)
        return e
    if next == &st.soon:
        e = st.soon
        st.soon.seq = NO_EVENT          # (its time is read only while it holds an event)
        return e
    e = st.heap[0]
    events_take_top(st)
    return e


# The heap's top taken in place: general_loop leaves an iteration end at the heap's top where it is
# for step_again (the event copied out, st.hlen unchanged), and step_again then either schedules
# the stage's next end into that place (heap_replace_top: one sift down where heap_pop's and
# push_event's were two) or takes the top as heap_pop would (heap_take_top) before anything else
# reads or pushes an event. Between the two only pending_under_top reads the event list. Where an
# event is kept (the soon slot or the heap) never changes which comes next: (time, seq) orders
# them all, every seq being distinct.
cdef inline bint pending_under_top(State* st) noexcept nogil:
    """pending_now with the heap's top taken in place: another event pending at `now` in the
    arrival slot, the soon slot or below the top (the earliest there is one of its two children)."""
    if st.arrival.t <= st.now or (st.soon.seq != NO_EVENT and st.soon.t <= st.now):
        return True
    return (st.hlen > 1 and st.heap[1].t <= st.now) or (st.hlen > 2 and st.heap[2].t <= st.now)


cdef inline void heap_take_top(State* st) noexcept nogil:
    """The heap's top, taken in place, taken off the heap as pop_event takes it."""
    events_take_top(st)


cdef inline int heap_replace_top(State* st, double t, int kind, int a, int64_t b, int64_t c) noexcept nogil:
    """`schedule` with the heap's top taken in place: the new event (its seq as schedule gives it)
    put in the top's place and moved down. The soon slot was empty when general_loop took the top
    (next_event reads the heap only then) and nothing has been pushed since; were it not, the top
    is taken first and the event pushed."""
    cdef Event e
    if st.soon.seq != NO_EVENT:
        heap_take_top(st)
        return push_event(st, t, kind, a, b, c)
    e.t = t
    e.seq = st.seq
    st.seq += 1
    e.kind = kind
    e.a = a
    e.b = b
    e.c = c
    if st.heaped:
        heap_down(st.heap, 0, st.hlen, e)
        return 0
    events_take_top(st)
    events_insert(st, e)
    return events_room(st)


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
    if st.ready_first == 0 and st.rlen == 0:
        st.ready_first = slot + 1
        return 0
    return ring_push(st, &st.ready, &st.rcap, &st.rhead, &st.rlen, slot)


cdef inline bint ready_any(State* st) noexcept nogil:
    return st.ready_first != 0 or st.rlen > 0


cdef inline int32_t ready_next(State* st) noexcept nogil:
    """The ready queue's head, taken off it (`ready_first`, else the ring's), or -1: it is empty."""
    cdef int32_t slot = st.ready_first - 1
    if slot >= 0:
        st.ready_first = 0
        return slot
    if st.rlen > 0:
        return ring_pop(st.ready, st.rcap, &st.rhead, &st.rlen)
    return -1


# ---- the memory bound ----------------------------------------------------------------
cdef inline int charge(State* st, int64_t nbytes) noexcept nogil:
    """Count bytes a table is about to take; past max_memory the run stops (clean error, not the
    kernel's OOM killer: memory is overcommitted, so malloc alone rarely fails)."""
    st.mem_bytes += nbytes
    if st.mem_bytes > st.max_memory:
        fail(st, E_MEMORY_LIMIT, -1, 0, 0, 0)
        return -1
    return 0


cdef extern from "stdlib.h" nogil:
    int posix_memalign(void** p, size_t alignment, size_t size)


cdef inline bint past_size_t(size_t n, size_t size) noexcept nogil:
    """n * size does not fit a size_t: calloc's own check, for the tables made another way."""
    return size != 0 and n > (<size_t> -1) // size


cdef void* calloc_lines(size_t n, size_t size) noexcept nogil:
    """calloc(n, size) starting a 64-byte line (NULL: out of memory or n * size past size_t; free()
    frees it): for records laid out by lines (the stages, their kept plans: _state.pxd)."""
    cdef void* p = NULL
    if past_size_t(n, size):
        return NULL
    if posix_memalign(&p, 64, n * size if n * size else 1) != 0:
        return NULL
    memset(p, 0, n * size)
    return p


# ---- the set-up's tables, kept for the thread's next run of the same plan ---------------------
# A sweep runs one plan many times: each run's set-up made its ~23 plan-shaped tables (stages,
# pools, observes, their row sets, the statements' forms...) with calloc or malloc and its end
# freed them, ~10 k instructions of a 1,000-arrival run. Every such table is made by plan_table,
# which notes it in the thread's PlanTables in the order the set-up asks: the list of them is the
# set-up itself. A run of the plan the tables were made for (run checks the _Kept's plan) is given
# the same blocks in the same order, each as a fresh run sees it: zeroed where calloc zeroed it
# (memset), as it was where malloc gave it (malloc promises no contents: no run reads a malloc'd
# table before writing it). A block whose size or making differs is made again. They are freed
# when the thread runs another plan, when they are larger than PLAN_TABLE_BYTES, or with the _Kept.
cdef enum:
    TABLE_RAW = 0           # malloc's: contents unspecified
    TABLE_ZERO = 1          # calloc's: all zero
    TABLE_LINES = 2         # calloc_lines': all zero, starting a 64-byte line
    PLAN_TABLE_BYTES = 1 << 20


cdef void* table_made(size_t bytes, int how) noexcept nogil:
    if how == TABLE_LINES:
        return calloc_lines(bytes, 1)
    if how == TABLE_ZERO:
        return calloc(bytes if bytes else 1, 1)
    return malloc(bytes if bytes else 1)


cdef void* plan_table(State* st, size_t n, size_t size, int how) noexcept nogil:
    """The set-up's next table, n items of `size` bytes made as `how` says: the kept block at its
    place in the set-up's order when it has the size, else a new one (NULL: out of memory, or n *
    size past size_t). The thread's PlanTables owns it (plan_tables_keep, plan_tables_free)."""
    cdef PlanTables* pt = st.plan_tables
    cdef int32_t i = pt.used
    cdef size_t bytes
    if past_size_t(n, size) or i == PLAN_TABLES:
        return NULL
    bytes = n * size
    pt.used += 1
    # (a failed block is noted with 0 bytes, which a table of no items would match: hence NULL's test)
    if i < pt.n and pt.bytes[i] == bytes and pt.how[i] == how and pt.block[i] != NULL:
        if how != TABLE_RAW:
            memset(pt.block[i], 0, bytes)
        return pt.block[i]
    if i < pt.n:
        free(pt.block[i])
    else:
        pt.n += 1
    pt.block[i] = table_made(bytes, how)
    pt.bytes[i] = bytes if pt.block[i] != NULL else 0
    pt.how[i] = how
    return pt.block[i]


cdef void plan_tables_free(PlanTables* pt) noexcept nogil:
    while pt.n > 0:
        pt.n -= 1
        free(pt.block[pt.n])
    pt.used = 0


cdef void plan_tables_keep(PlanTables* pt) noexcept nogil:
    """At a run's end: its set-up's tables kept for the next run of its plan, unless large."""
    cdef size_t total = 0
    cdef int32_t i
    for i in range(pt.n):
        total += pt.bytes[i]
    if total > PLAN_TABLE_BYTES:
        plan_tables_free(pt)
    pt.used = 0


cdef bint grow(void** p, size_t size) noexcept nogil:
    cdef void* q = realloc(p[0], size if size else 1)
    if q == NULL:
        return False
    advise_grown(q, size)
    p[0] = q
    return True


# ---- families of tables (per session, job, lease, flow slot): each listed once -------------
# A family's tables live in one malloc'ed block, one after the other in the family's list order
# (each rounded up to TABLE_ALIGN bytes): growing a family is one malloc, a copy per table and
# one free, and a run's tables cost a few allocations instead of one per table. The block starts
# TABLE_HEAD bytes before the family's first table, where it keeps its capacity in slots (what
# the next resize copies), so a family needs no field beyond its tables' pointers.
cdef enum:
    TABLE_HEAD = 64
    TABLE_ALIGN = 16

cdef struct Tables:
    # what a family's list of tables (session_tables, job_tables, lease_tables, flow_tables) does
    # to each table in it: `measuring`, nothing (but count); else place it in `block` at `bytes`
    # (the block's end so far), its first `old_cap` slots copied from the old block `old`.
    # Either way `slot_bytes` adds up what one slot takes (what the memory bound charges a slot)
    # and `bytes` what the tables take at `cap` slots.
    int64_t cap
    bint measuring
    int64_t slot_bytes
    size_t bytes
    char* block                 # the new block's first table (NULL: cap 0, the tables freed)
    char* old                   # the old block's first table (NULL: none yet)
    int64_t old_cap
    int32_t placed              # tables placed so far
    # `measuring` also notes the family's first table and each table's bytes a slot (its layout,
    # the first SPARE_TABLES), `n` tables in all: what a kept block is matched by (Spare)
    void** first
    int32_t n
    size_t sizes[SPARE_TABLES]

ctypedef bint (*Family)(State* st, Tables* t) noexcept nogil


cdef inline size_t table_bytes(int64_t cap, size_t per_slot) noexcept nogil:
    return (<size_t> cap * per_slot + (TABLE_ALIGN - 1)) & ~(<size_t> (TABLE_ALIGN - 1))


cdef bint table(Tables* t, void** p, size_t per_slot) noexcept nogil:
    """One table of a family, `per_slot` bytes a slot (see Tables). Always True (a family's
    list is an `and` of these: the allocation that can fail is resize's one block)."""
    cdef size_t at = t.bytes
    cdef int64_t keep
    t.bytes += table_bytes(t.cap, per_slot)
    if t.measuring:
        t.slot_bytes += per_slot
        if t.n == 0:
            t.first = p
        if t.n < SPARE_TABLES:
            t.sizes[t.n] = per_slot
        t.n += 1
        return True
    if t.placed == 0:       # the family's first table starts the old block
        t.old = <char*> p[0]
        t.old_cap = (<int64_t*> (t.old - TABLE_HEAD))[0] if t.old != NULL else 0
    t.placed += 1
    if t.block == NULL:
        p[0] = NULL
        return True
    keep = min(t.old_cap, t.cap)
    if keep > 0 and per_slot > 0:
        memcpy(t.block + at, p[0], <size_t> keep * per_slot)
    p[0] = t.block + at
    return True


# A family grows a few times a run: its growth stays a call (noinline), out of the loops that
# allocate a slot (fifo_loop's arrivals), whose registers the inlined walk of the list would take.
cdef extern from *:
    """
    struct __pyx_t_2sq_6engine_6_state_State;
    struct __pyx_t_2sq_7_engine_Tables;
    static __attribute__((noinline)) int __pyx_f_2sq_7_engine_resize_charged(
        struct __pyx_t_2sq_6engine_6_state_State *,
        int (*)(struct __pyx_t_2sq_6engine_6_state_State *, struct __pyx_t_2sq_7_engine_Tables *), int64_t, int64_t);
    static __attribute__((noinline)) int __pyx_f_2sq_7_engine_resize(
        struct __pyx_t_2sq_6engine_6_state_State *,
        int (*)(struct __pyx_t_2sq_6engine_6_state_State *, struct __pyx_t_2sq_7_engine_Tables *), int64_t);
    """


cdef inline void measure(State* st, Family family, Tables* t, int64_t cap) noexcept nogil:
    """A family's list walked without placing: its block's size at `cap` slots, what a slot takes,
    its layout and its first table (see Tables)."""
    memset(t, 0, sizeof(Tables))
    t.cap, t.measuring = cap, True
    family(st, t)


cdef bint resize(State* st, Family family, int64_t cap) noexcept nogil:
    """A family's tables at `cap` slots (their slots up to the old capacity kept), or all freed
    (cap 0). False: out of memory (the tables are then as they were)."""
    cdef Tables t
    measure(st, family, &t, cap)
    return resize_measured(st, family, &t, cap)


cdef bint resize_measured(State* st, Family family, Tables* t, int64_t cap) noexcept nogil:
    """resize, its list measured at `cap` in `t`. A block that has room for `cap` slots already
    (one kept from an earlier run: spare_take) stays as it is."""
    cdef char* head = NULL
    cdef char* old = <char*> t.first[0]
    if old == NULL and cap == 0:
        return True             # nothing to free
    if old != NULL and cap > 0 and (<int64_t*> (old - TABLE_HEAD))[0] >= cap:
        return True             # (slots past the family's own capacity are never read)
    if cap > 0 and spare_take(st, family, t, old, cap):
        return True
    if cap > 0:
        head = <char*> malloc(TABLE_HEAD + t.bytes)
        if head == NULL:
            return False
        (<int64_t*> head)[0] = cap
        t.block = head + TABLE_HEAD
    t.measuring, t.bytes = False, 0
    family(st, t)               # each table placed, its slots copied
    if t.old != NULL:
        free(t.old - TABLE_HEAD)
    return True


cdef bint resize_charged(State* st, Family family, int64_t old, int64_t cap) noexcept nogil:
    """A family's tables grown from `old` to `cap` slots, the new slots charged to the memory
    bound first at what the same list measures a slot to take. False: the run stops (failed)."""
    cdef Tables t
    measure(st, family, &t, cap)
    if charge(st, (cap - old) * t.slot_bytes) < 0:
        return False
    if not resize_measured(st, family, &t, cap):
        fail(st, E_MEMORY, -1, 0, 0, 0)
        return False
    return True


# ---- a family's tables kept from run to run (on one thread) ------------------------------------
# A sweep runs one program many times: each run's families would be allocated from nothing
# (64 slots, then doubled) and freed at its end. Instead its end keeps each family's block in the
# thread's Spare (spare_keep, if at most SPARE_BYTES), and the next run's first resize of the
# family takes it when its layout (each table's bytes a slot) is the same and it has the room
# (spare_take). The family's own capacity (what the memory bound charges, what it doubles from)
# still starts at 0 and grows as before; only the block under it is older than the run.
cdef enum:
    SPARE_BYTES = 1 << 20


cdef Spare* spare_of(State* st, Family family) noexcept nogil:
    """The thread's place for a family's kept block (NULL: the run keeps none)."""
    cdef int32_t i
    if st.spares == NULL:
        return NULL
    for i in range(SPARE_FAMILIES):
        if st.spares[i].family == NULL:
            st.spares[i].family = <void*> family
        if st.spares[i].family == <void*> family:
            return &st.spares[i]
    return NULL


cdef bint spare_take(State* st, Family family, Tables* t, char* old, int64_t cap) noexcept nogil:
    """At a family's growth to `cap` slots (resize, its list measured in `t`; `old` its block):
    place it in the kept block if it has none yet and the kept one has its layout and the room.
    The run's first growth also notes where the family's tables are and whether the kept layout is
    its own (spare_keep reads both). False: none taken (resize allocates)."""
    cdef Spare* sp = spare_of(st, family)
    if sp == NULL:
        return False
    if sp.first == NULL:
        sp.first = t.first
        sp.same = sp.n == t.n and t.n <= SPARE_TABLES \
            and memcmp(sp.sizes, t.sizes, <size_t> t.n * sizeof(size_t)) == 0
    if old != NULL or sp.block == NULL or not sp.same or sp.cap < cap:
        return False
    t.cap, t.measuring, t.bytes = sp.cap, False, 0
    t.block = sp.block
    sp.block = NULL
    family(st, t)               # each table placed in it (nothing to copy: the family had no block)
    return True


cdef void spare_keep(State* st, Family family) noexcept nogil:
    """At the run's end: the family's block kept for the thread's next run (when it is at most
    SPARE_BYTES: a run that grew its tables large gives them back), else freed. The run's pointers
    into it are left as they are: the State is cleared or freed next (release_state)."""
    cdef Spare* sp = spare_of(st, family)
    cdef Tables t
    cdef char* old
    cdef int64_t cap
    if sp == NULL:
        resize(st, family, 0)
        return
    if sp.first == NULL:
        return                  # not grown in this run: it has no block (a kept one stays kept)
    old = <char*> sp.first[0]
    sp.first = NULL
    if old == NULL:
        return
    cap = (<int64_t*> (old - TABLE_HEAD))[0]
    if not sp.same:             # another layout than the kept block's: this run's, measured
        measure(st, family, &t, 0)
        if t.n > SPARE_TABLES:
            free(old - TABLE_HEAD)
            return
        sp.n, sp.slot_bytes, sp.same = t.n, t.slot_bytes, True
        memcpy(sp.sizes, t.sizes, <size_t> t.n * sizeof(size_t))
        if sp.block != NULL:
            free(sp.block - TABLE_HEAD)     # (kept in the other layout)
            sp.block = NULL
    if cap * sp.slot_bytes > SPARE_BYTES:
        free(old - TABLE_HEAD)
        return
    if sp.block != NULL:
        free(sp.block - TABLE_HEAD)     # an older block this run did not fit in
    sp.block, sp.cap = old, cap


cdef void spares_free(Spare* spares) noexcept nogil:
    cdef int32_t i
    for i in range(SPARE_FAMILIES):
        if spares[i].block != NULL:
            free(spares[i].block - TABLE_HEAD)
            spares[i].block = NULL


cdef void traces_free(Traces* t) noexcept nogil:
    free(t.it_time.p); free(t.it_count.p); free(t.it_serial.p); free(t.it_turn.p); free(t.it_mode.p)
    free(t.it_tokens.p); free(t.ev_time.p); free(t.ev_key.p); free(t.ev_units.p)

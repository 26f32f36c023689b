# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The event loop: sessions as statement-code coroutines, stages, the clock.

`run(lowered, ...)` copies the lowered tables' pointers into one C `State`,
runs the whole simulation without the GIL, then turns the C arrays into a
`sq.results.raw.RawResults`. Semantics follow spec chapter 09 (event loop),
04 §4.0–4.4 (fifo, ps, delay) and 02/03/07 (sessions, statements,
expressions); it reads the bytecode and tables of `sq/lower/_bytecode.pxd`, which
`sq/lower/lowering.py` writes.

This file is the engine's Python boundary (set-up, collection, error text); the
engine itself is in the `.pxi` files it includes, one concern each, compiled as
one C translation unit (docs/architecture.md, "The engine, file by file").
"""
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t, INT64_MAX
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.stdio cimport FILE, fopen, fclose, fputs, fprintf, ferror
from libc.errno cimport errno
from libc.string cimport memcmp, memset, memcpy, memmove
from libc.math cimport NAN, INFINITY, log, fabs, floor, ceil, sqrt, exp, pow, fmin, fmax, isfinite, rint, signbit, sin, cos

cimport numpy as cnp
from cpython.pycapsule cimport PyCapsule_New, PyCapsule_GetPointer, PyCapsule_Destructor
import os

import numpy as np

from sq.engine._random cimport (sq_rng, sq_rng_seed, sq_rng_random_f64, sq_rng_range_u32, sq_draw, sq_draw_exp, SQ_DIST_EXP,
                                sq_h2, sq_h2_of, sq_draw_h2_of, SQ_DIST_H2,
                                SQ_STREAM_ARRIVAL_MASK, SQ_STREAM_WORKLOAD_MASK, SQ_STREAM_SESSION_MASK,
                                SQ_STREAM_TRACE_MASK, SQ_STREAM_EVICTION_MASK)
from sq.results._itl cimport Histogram, histogram_add
from sq.results._means cimport time_mean
from sq.engine._state cimport *     # the engine's structs (State and what it holds), every .pxi uses them

cnp.import_array()

# the bytecode and tables lowering writes: opcodes, operand offsets, kinds (sq/lower/_bytecode.pxd)
from sq.lower._bytecode cimport *
from sq.lower._bytecode import STEP_EXPRS_DTYPE, STEP_SERVE_DTYPE, SPILL_DTYPE
from sq.errors import SqError
from sq._support.number_format import display as fmt
from sq.results import raw as R, report as reports, stats, steady

# the dtypes of the lowered arrays, as the descriptors _contig compares with
_I32, _I64, _F64 = np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float64)
_STEP_EXPRS, _STEP_SERVE, _SPILL = np.dtype(STEP_EXPRS_DTYPE), np.dtype(STEP_SERVE_DTYPE), np.dtype(SPILL_DTYPE)

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
    E_STALL = 19           # time advances too little per event to ever reach the horizon (_long.pxi)
    E_RATE = 20            # a poisson rate that reads `now` left [0, its bound] (an extension)

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
    /* the seq of an empty arrival slot (State.arrival): after every event's, so never the earlier */
    #define SQ_NO_EVENT INT64_MAX
    """
    const double NEVER_ADMITTED "SQ_NEVER_ADMITTED"
    const double EPS "SQ_EPS"
    const int64_t NO_EVENT "SQ_NO_EVENT"
    const double EWMA "SQ_EWMA"
    const int64_t ARRIVALS_NEVER "SQ_ARRIVALS_NEVER"
    const int64_t MAX_MEMORY "SQ_MAX_MEMORY"


# ---- the engine, by concern (one translation unit) ------------------------------------------
include "engine/_arrays.pxi"
include "engine/_expr.pxi"
include "engine/_stages.pxi"
include "engine/_cache.pxi"
include "engine/_pools.pxi"
include "engine/_step.pxi"
include "engine/_flows.pxi"
include "engine/_invariants.pxi"
include "engine/_long.pxi"
include "engine/_timeline.pxi"
include "engine/_session.pxi"
include "engine/_loop.pxi"
include "engine/_one_queue.pxi"
include "engine/_one_ps.pxi"


# ---- Python side: set up, run, collect ----------------------------------------------------------
cdef inline void* data_of(cnp.ndarray a):
    return cnp.PyArray_DATA(a)


cdef void release_state(State* st) noexcept:
    """Free what a run allocated, but the State itself (the caller clears it for the thread's
    next run: _Kept), its families' blocks, kept in the thread's spares (spare_keep), and its
    set-up's tables (plan_table), kept with the plan (plan_tables_keep): what the tables point
    to is freed here, the tables themselves are not."""
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
        free(st.stages[k].assigned)
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
    spare_keep(st, session_tables)
    spare_keep(st, job_tables)
    spare_keep(st, lease_tables)
    flows_free(st)
    traces_free(&st.traces)
    tl_close(st)
    free(st.heap_room); free(st.ready)
    if st.plan_tables != NULL:
        plan_tables_keep(st.plan_tables)


# ---- a State kept per thread ------------------------------------------------------------------
cdef class _Kept:
    """A thread's State, all zero between runs (as calloc gives it), and the places its families'
    blocks are kept in from run to run (spare_keep, spare_take): a sweep's runs allocate neither.
    What is kept is bounded: one State, per family one block of at most SPARE_BYTES, and the last
    plan's set-up tables (plan_table) if they take at most PLAN_TABLE_BYTES."""
    cdef State* st
    cdef Spare spares[SPARE_FAMILIES]      # (zero as the object is made)
    cdef SampleSpares samples              # (likewise)
    cdef PlanTables tables                 # (likewise) the set-up's tables of `plan`
    cdef object plan                       # the _Plan the tables were made for (held: its identity)
    cdef bint busy                         # a run of the thread uses it now

    def __cinit__(self):
        self.st = <State*> calloc(1, sizeof(State))
        if self.st == NULL:
            raise MemoryError()

    def __dealloc__(self):
        spares_free(self.spares)
        sample_spares_free(&self.samples)
        plan_tables_free(&self.tables)
        free(self.st)


# Each thread's _Kept, busy while a run uses it (a run started inside another on the same
# thread, by a progress or trace callback, makes one of its own, not kept).
import threading
_threads = threading.local()


def kept_tables():
    """The families' blocks this thread keeps between runs: (slots, bytes a slot) each (tests read it)."""
    kept = getattr(_threads, "kept", None)
    if kept is None:
        return []
    cdef Spare* sp
    out = []
    for i in range(SPARE_FAMILIES):
        sp = &(<_Kept> kept).spares[i]
        if sp.block != NULL:
            out.append((sp.cap, sp.slot_bytes))
    return out


def kept_samples():
    """The sample buffers this thread keeps between runs: their bytes each (tests read it)."""
    kept = getattr(_threads, "kept", None)
    if kept is None:
        return []
    return [(<_Kept> kept).samples.bytes[i] for i in range((<_Kept> kept).samples.n)]


cdef tuple _placed(const char* start, const void* field, size_t size):
    return (<const char*> field - start, size)


def stage_layout():
    """Where a step stage's quiet repeat finds its fields: the byte offset and size of each field
    Stage's comment places in a line (sq/engine/_state.pxd), and Stage's and KeptPlan's sizes
    (tests hold the comment to the compiled layout)."""
    cdef Stage s
    cdef const char* at = <const char*> &s
    fields = {
        "iter_epoch": _placed(at, &s.iter_epoch, sizeof(s.iter_epoch)),
        "quiet": _placed(at, &s.quiet, sizeof(s.quiet)),
        "assigned": _placed(at, &s.assigned, sizeof(s.assigned)),
        "na": _placed(at, &s.na, sizeof(s.na)),
        "iterations": _placed(at, &s.iterations, sizeof(s.iterations)),
        "iter_decodes": _placed(at, &s.iter_decodes, sizeof(s.iter_decodes)),
        "inflight": _placed(at, &s.inflight, sizeof(s.inflight)),
        "plan_kept": _placed(at, &s.plan_kept, sizeof(s.plan_kept)),
        "iter_kind": _placed(at, &s.iter_kind, sizeof(s.iter_kind)),
        "cost_repeats": _placed(at, &s.cost_repeats, sizeof(s.cost_repeats)),
        "decode_only": _placed(at, &s.decode_only, sizeof(s.decode_only)),
        "decodes": _placed(at, &s.decodes, sizeof(s.decodes)),
        "itl.n": _placed(at, &s.itl.n, sizeof(s.itl.n)),
        "itl.total": _placed(at, &s.itl.total, sizeof(s.itl.total)),
        "itl.low": _placed(at, &s.itl.low, sizeof(s.itl.low)),
        "itl.top": _placed(at, &s.itl.top, sizeof(s.itl.top)),
        "itl.cells": _placed(at, &s.itl.cells, sizeof(s.itl.cells)),
        "itl.kmin": _placed(at, &s.itl.kmin, sizeof(s.itl.kmin)),
        "itl.nk": _placed(at, &s.itl.nk, sizeof(s.itl.nk)),
        "itl.last_gap": _placed(at, &s.itl.last_gap, sizeof(s.itl.last_gap)),
        "itl.last_cell": _placed(at, &s.itl.last_cell, sizeof(s.itl.last_cell)),
        "budget_k": _placed(at, &s.budget_k, sizeof(s.budget_k)),
        "decode_batch": _placed(at, &s.decode_batch, sizeof(s.decode_batch)),
        "decode_step": _placed(at, &s.decode_step, sizeof(s.decode_step)),
        "budget_use": _placed(at, &s.budget_use, sizeof(s.budget_use)),
        "batch": _placed(at, &s.batch, sizeof(s.batch)),
        "kind": _placed(at, &s.kind, sizeof(s.kind)),
    }
    return {"fields": fields, "stage": sizeof(Stage), "kept_plan": sizeof(KeptPlan)}


def kept_plan_tables():
    """The set-up's tables this thread keeps for its next run of the same plan: their bytes each
    (tests read it)."""
    kept = getattr(_threads, "kept", None)
    if kept is None:
        return []
    return [(<_Kept> kept).tables.bytes[i] for i in range((<_Kept> kept).tables.n)]


cdef _Kept _kept_take():
    kept = getattr(_threads, "kept", None)
    if kept is None:
        kept = _threads.kept = _Kept.__new__(_Kept)
    elif (<_Kept> kept).busy:
        kept = _Kept.__new__(_Kept)
    (<_Kept> kept).busy = True
    return <_Kept> kept


cdef void _free_capsule(object capsule) noexcept:
    free(PyCapsule_GetPointer(capsule, NULL))


# ---- the arrays a run hands over --------------------------------------------------------
# A short run's arrays are copied into a slab: a block of fresh memory shared by the arrays of
# many runs, in huge pages where the kernel gives them (Linux, THP in `madvise` mode). A sweep
# keeps its reports, so each run's arrays are new memory; in 4 KiB pages that is a page fault
# per 4 KiB written (~2.5 us each on a VM: a 1,000-arrival run's four arrays took ~6, a sixth
# of its time), in a 2 MiB page one fault per ~80 such runs. The engine's own buffers are then
# freed, and the next run grows its samples in them again (warm). What is stored is the same;
# a slab is unmapped when the last array in it goes (a kept array keeps its whole slab).
cdef extern from *:
    """
    #if defined(__linux__)
    #include <sys/mman.h>
    #define SQ_SLAB_BYTES ((size_t) 2 << 20)
    /* SQ_SLAB_BYTES of zeroed memory aligned to SQ_SLAB_BYTES (a huge page's size and place),
       huge pages asked for; NULL if none can be mapped */
    static char* sq_slab_map(void) {
        size_t bytes = SQ_SLAB_BYTES;
        char* p = (char*) mmap(NULL, 2 * bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == (char*) MAP_FAILED) return NULL;
        char* q = (char*) (((uintptr_t) p + bytes - 1) & ~(uintptr_t) (bytes - 1));
        if (q > p) munmap(p, (size_t) (q - p));
        if (q + bytes < p + 2 * bytes) munmap(q + bytes, (size_t) (p + 2 * bytes - (q + bytes)));
    #if defined(MADV_HUGEPAGE)
        (void) madvise(q, bytes, MADV_HUGEPAGE);     /* advice: a failure changes nothing */
    #endif
        return q;
    }
    static void sq_slab_unmap(char* p) { munmap(p, SQ_SLAB_BYTES); }
    #else
    #define SQ_SLAB_BYTES ((size_t) 2 << 20)
    static char* sq_slab_map(void) { return NULL; }     /* elsewhere: each run's own buffers */
    static void sq_slab_unmap(char* p) { (void) p; }
    #endif
    /* the largest array copied into a slab (a run's four samples arrays at 32,768 samples) */
    #define SQ_SLAB_PIECE_MAX ((size_t) 256 << 10)
    """
    char* sq_slab_map()
    void sq_slab_unmap(char* p)
    const size_t SLAB_BYTES "SQ_SLAB_BYTES"
    const size_t SLAB_PIECE_MAX "SQ_SLAB_PIECE_MAX"


cdef class _Slab:
    """A slab's memory (see above): the base of the arrays carved from it."""
    cdef char* p
    cdef size_t used

    def __dealloc__(self):
        if self.p != NULL:
            sq_slab_unmap(self.p)


# The slab being filled. Read and replaced with the GIL held (runs collect with it), so the
# runs of several threads share it safely; a piece is never handed out twice.
cdef _Slab _slab = None


cdef object _slab_array(const void* data, cnp.npy_intp n, int typenum, size_t size):
    """A numpy array of n items copied from `data` (NULL: zeros) into the slab, or None (too
    large for a slab, or no slab to be had: the caller hands over its own buffer)."""
    global _slab
    cdef size_t nbytes = <size_t> n * size
    cdef size_t piece = (nbytes + 63) & ~(<size_t> 63)   # each array 64-byte aligned
    cdef char* q
    cdef cnp.npy_intp dims[1]
    if piece > SLAB_PIECE_MAX:
        return None
    if _slab is None or _slab.used + piece > SLAB_BYTES:
        q = sq_slab_map()
        if q == NULL:
            return None
        fresh = _Slab.__new__(_Slab)
        (<_Slab> fresh).p = q
        _slab = <_Slab> fresh
    q = _slab.p + _slab.used
    if data != NULL:
        memcpy(q, data, nbytes)      # (a slab's memory is zero until written: zeros need no copy)
    _slab.used += piece
    dims[0] = n
    arr = cnp.PyArray_SimpleNewFromData(1, dims, typenum, q)
    cnp.set_array_base(<cnp.ndarray> arr, _slab)   # takes its own reference
    return arr


cdef object _adopt(void** p, int64_t* n, int64_t* cap, int typenum, size_t size, SampleSpares* keep):
    """A numpy array of a growable table's `n` items, which leaves the table empty: a short
    table's items copied into the slab (its buffer kept for the thread's next run, `keep`, or
    freed), a long one's buffer taken (freed with the array), its growth slack given back
    first, so the array holds no more than its items."""
    cdef cnp.npy_intp dims[1]
    cdef void* q
    dims[0] = n[0]
    arr = _slab_array(p[0], dims[0], typenum, size) if dims[0] > 0 else None
    if arr is not None:
        sample_spare_keep(keep, p[0], cap[0] * size)
    elif p[0] == NULL or dims[0] == 0:
        arr = cnp.PyArray_ZEROS(1, dims, typenum, 0)
        free(p[0])
    else:
        q = realloc(p[0], dims[0] * size)
        if q != NULL:
            p[0] = q
        arr = cnp.PyArray_SimpleNewFromData(1, dims, typenum, p[0])
        capsule = PyCapsule_New(p[0], NULL, <PyCapsule_Destructor> _free_capsule)
        cnp.set_array_base(<cnp.ndarray> arr, capsule)   # takes its own reference
    p[0] = NULL      # the array owns the buffer now (until here, a failure leaves it to release_state)
    n[0] = cap[0] = 0
    return arr


cdef inline object darr_numpy(DArr* a, SampleSpares* keep):
    return _adopt(<void**> &a.p, &a.n, &a.cap, cnp.NPY_FLOAT64, sizeof(double), keep)


cdef inline object turns_numpy(Turns* a, SampleSpares* keep):
    # all zeros: a calloc'ed array, whose pages stay untouched (no memory) until read
    return _adopt(<void**> &a.p, &a.n, &a.cap, cnp.NPY_UINT32, sizeof(uint32_t), keep)


cdef inline object serials_numpy(Serials* a, SampleSpares* keep):
    if a.p64 != NULL:   # widened (the 4-byte buffer is gone)
        return _adopt(<void**> &a.p64, &a.n, &a.cap, cnp.NPY_INT64, sizeof(int64_t), keep)
    return _adopt(<void**> &a.p32, &a.n, &a.cap, cnp.NPY_INT32, sizeof(int32_t), keep)


cdef enum:
    # a sample buffer at most this large is kept for the thread's next run (SampleSpares): a
    # thread keeps at most SAMPLE_SPARES of them, 512 KiB
    SAMPLE_SPARE_BYTES = 1 << 16


cdef void sample_spare_keep(SampleSpares* keep, void* p, size_t nbytes) noexcept:
    """A sample buffer whose items are copied out: kept (a thread's run, room left, not large),
    else freed."""
    if p != NULL and keep != NULL and keep.n < SAMPLE_SPARES and nbytes <= SAMPLE_SPARE_BYTES:
        keep.p[keep.n] = p
        keep.bytes[keep.n] = nbytes
        keep.n += 1
    else:
        free(p)


cdef int64_t sample_spare_take(State* st, void** p, size_t size) noexcept:
    """A kept sample buffer (the last kept) for an empty array of items of `size` bytes: the
    items it has room for (0, and p untouched, when none is kept). Its contents are never read:
    an array's items past its count are unwritten."""
    cdef SampleSpares* keep = st.sample_spares
    if keep == NULL or keep.n == 0:
        return 0
    keep.n -= 1
    p[0] = keep.p[keep.n]
    return <int64_t> (keep.bytes[keep.n] // size)


cdef void sample_spares_free(SampleSpares* keep) noexcept:
    while keep.n > 0:
        keep.n -= 1
        free(keep.p[keep.n])


def serials_of(values):
    """The array the engine hands over for these session serials, recorded one at a time (tests
    see the 4-byte table widen to 8 bytes past 2^31 - 1, some two billion arrivals in)."""
    cdef Serials s
    memset(&s, 0, sizeof(Serials))
    for v in values:
        if serials_push(&s, <int64_t> v) < 0:
            free(s.p32)
            free(s.p64)
            raise MemoryError()
    return serials_numpy(&s, NULL)    # takes the buffer


cdef extern from *:
    """
    /* An instance of a tuple subclass with two items (a results.Area or Running): what
       tuple.__new__(cls, (a, b)) makes, without its argument tuples and method lookup. */
    static PyObject* sq_pair(PyObject* cls, PyObject* a, PyObject* b) {
    #if PY_VERSION_HEX >= 0x030E0000
        /* 3.14 caches a tuple's hash inside the object, set by tuple's own constructor:
           use it (a zeroed cache would make every pair hash to 0) */
        PyObject* items = PyTuple_Pack(2, a, b);
        if (items == NULL) return NULL;
        PyObject* args = PyTuple_Pack(1, items);
        Py_DECREF(items);
        if (args == NULL) return NULL;
        PyObject* t = PyTuple_Type.tp_new((PyTypeObject*) cls, args, NULL);
        Py_DECREF(args);
        return t;
    #else
        PyObject* t = ((PyTypeObject*) cls)->tp_alloc((PyTypeObject*) cls, 2);
        if (t == NULL) return NULL;
        Py_INCREF(a); PyTuple_SET_ITEM(t, 0, a);
        Py_INCREF(b); PyTuple_SET_ITEM(t, 1, b);
        return t;
    #endif
    }
    """
    object sq_pair(object cls, object a, object b)

# the named tuples of the results, built by sq_pair: no Python frame per field of every row of every run
_AREA, _RUNNING = R.Area, R.Running
assert issubclass(_AREA, tuple) and issubclass(_RUNNING, tuple) and len(_AREA._fields) == len(_RUNNING._fields) == 2


cdef object _running(R, Running* r):
    if r.n == 0:
        return _NO_RUNNING      # what most rows keep of most means: one shared (immutable) pair
    return sq_pair(_RUNNING, r.n, r.mean)


cdef Running _NOTHING_RUN     # (zeroed: no samples)
_NO_RUNNING = sq_pair(_RUNNING, 0, _mean_of(&_NOTHING_RUN))


def itl_histogram_of(gaps):
    """The histogram the engine builds from these gaps, one token at a time (for tests: it
    must equal the one sq.results.stats makes from the list)."""
    cdef Histogram h
    memset(&h, 0, sizeof(Histogram))
    try:
        for g in gaps:
            if histogram_add(&h, <double> g) < 0:
                raise MemoryError()
        return _itl(R, &h)
    finally:
        free(h.cells)


cdef Histogram _NO_GAPS          # (zeroed, as a static) what a stage without tokens keeps


cdef object _itl(R, Histogram* h):
    cdef int64_t i, n = h.nk
    if memcmp(h, &_NO_GAPS, sizeof(Histogram)) == 0:
        return _NO_GAPS_ITL     # every stage but a step stage's, every run: one shared object
    if n == 0:    # no gap in any bucket: the shared empty arrays
        return R.ItlHistogram(h.n, h.total, h.kmin, R.EMPTY_I64, R.EMPTY_F64, R.EMPTY_F64,
                              (h.low.count, h.low.least, h.low.greatest), (h.top.count, h.top.least, h.top.greatest))
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
    return R.ItlHistogram(h.n, h.total, h.kmin, counts, least, greatest,     # positionally (_collect)
                          (h.low.count, h.low.least, h.low.greatest), (h.top.count, h.top.least, h.top.greatest))


# (like the shared empty arrays, read, never changed)
_NO_GAPS_ITL = R.ItlHistogram(0, 0.0, 0, R.EMPTY_I64, R.EMPTY_F64, R.EMPTY_F64, (0, 0.0, 0.0), (0, 0.0, 0.0))


cdef object _contig(object a, object dtype):
    """`a` as a C-contiguous array of `dtype`: `a` itself when it is one (a lowered program's
    arrays are: given a dtype object (_I32, ...), the check is a few C reads, where numpy's call
    parses its arguments each run)."""
    if isinstance(dtype, cnp.dtype) and cnp.PyArray_Check(a) and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray> a) \
            and cnp.PyArray_EquivTypes(<cnp.dtype> <object> cnp.PyArray_DESCR(<cnp.ndarray> a), <cnp.dtype> dtype):
        return a
    return np.ascontiguousarray(a, dtype=dtype)


def lone_queues(on=None, fifo=None, ps=None):
    """Whether a program that is one open queue runs in its own loop (sq/engine/_one_queue.pxi), and how many
    runs have: (enabled, runs, fifo enabled, fifo runs, ps enabled, ps runs). `on` True or False sets it
    first, `fifo` whether a lone fifo stage takes fifo_loop rather than lone_loop, `ps` whether a lone ps
    stage takes ps_loop (sq/engine/_one_ps.pxi) rather than lone_loop (tests compare the loops)."""
    global lone_enabled, fifo_enabled, ps_enabled
    if on is not None:
        lone_enabled = bool(on)
    if fifo is not None:
        fifo_enabled = bool(fifo)
    if ps is not None:
        ps_enabled = bool(ps)
    return bool(lone_enabled), lone_runs, bool(fifo_enabled), fifo_runs, bool(ps_enabled), ps_runs


def steady_runs(on=None):
    """Whether a lone step stage's steady decode runs repeat off the event list (steady_run in
    sq/engine/_loop.pxi), and one of several step stages' iteration ends may begin the same plan
    again without settle (step_again); how many iterations each has so far: (enabled, repeated
    off the list, begun by step_again). `on` True or False sets both first (tests compare the paths)."""
    global steady_enabled
    if on is not None:
        steady_enabled = bool(on)
    return bool(steady_enabled), steady_repeats, steps_repeated


def event_lists(sorted_max=None):
    """How many pending events the event list keeps sorted before it becomes a heap (sorted again
    at half as many: sq/engine/_arrays.pxi); `sorted_max` (0: always a heap) sets it first (tests
    compare the two)."""
    global events_sorted_max
    if sorted_max is not None:
        events_sorted_max = int(sorted_max)
    return events_sorted_max


def lag_lanes(avx=None):
    """Whether the deferred samples' catch-up runs its kernels' AVX copies (sq/engine/_loop.pxi, set at
    import where the processor runs AVX), and whether it could: (running them, the processor runs AVX).
    `avx` True or False sets it first (True only where it could; tests compare the two paths)."""
    global lag_avx
    if avx is not None:
        lag_avx = bool(avx) and lag_avx_runs()
    return bool(lag_avx), bool(lag_avx_runs())


def quiet_repeats():
    """How many iterations so far were quiet repeats planned in one pass with the end before
    them (quiet_repeat in sq/engine/_step.pxi; tests read it)."""
    return quiet_fused


# ---- a program's set-up plan: what every run of it reads from the lowered tables ---------------
cdef class _Plan:
    """The lowered program's tables as the State points into them (C-contiguous, of the engine's
    dtypes) and its scalars as C values: read from the `Lowered` once (plan_of), where each run
    read some sixty attributes (a dict look-up each) and checked a dozen arrays. Only what the
    program fixes is here: the run's settings, a trace's and an arrival's tables are read per run."""
    cdef readonly object lowered        # the program planned (held: the cache's key is its identity)
    cdef cnp.ndarray code, consts, stmts, holds, hoffs, hpcs, needs
    cdef cnp.ndarray caps, blocks, kstart, kcount, pkeys, lifo, estart, ecount, spills, admit_via
    cdef cnp.ndarray kinds, servers, phis, shared, step_exprs, step_serve, step_memory, serve_keys, gexprs
    cdef object seed, horizon, warmup, arrivals     # the program's own settings (a run's when not given)
    cdef object trace_tables        # _trace_arrays' of a program without a trace (None: a trace's, per run)
    # the report's rows' names (_report_rows: a run read each through the Lowered's attributes)
    cdef tuple observe_names, gauge_names, stage_names, stage_indices, pool_names, pool_indices
    cdef int64_t n_code, n_stmts, stack_cap, n_keys, arrival_count
    cdef int32_t n_holds, hold_depth_max, hold_pools_max, n_attrs, slot_serial, slot_turn, slot_cached
    cdef int32_t slot_computed, init_pc, turn_pc, session_pc, max_keys, n_stages, n_pools, n_observes
    cdef int32_t n_gauges, max_flow_stages, arrival_kind, arrival_gap
    cdef int32_t slot_new, slot_out, slot_think, slot_forced, slot_more
    cdef int trace_ordered, share_maxmin, kv_budget, kv_iteration, budget_totals, estimates
    cdef double arrival_rate


# The last program planned (a sweep runs one program many times). A Lowered is never changed in
# place (settings make a new one), so its identity keys its plan; held here, it is never freed
# and mistaken for a new one at its address. Read and replaced with the GIL held.
cdef _Plan _last_plan = None


def plan_of(lowered):
    """The set-up plan of a `Lowered` (see _Plan): the last one made when it is the same program."""
    global _last_plan
    cdef _Plan p = _last_plan
    if p is not None and p.lowered is lowered:
        return p
    p = _Plan.__new__(_Plan)
    p.lowered = lowered
    p.code, p.consts, p.stmts = _contig(lowered.code, _I32), _contig(lowered.consts, _F64), _contig(lowered.stmts, _I32)
    p.holds, p.hoffs = _contig(lowered.holds, _I32), _contig(lowered.hold_offsets, _I32)
    p.hpcs, p.needs = _contig(lowered.hold_pcs, _I32), _contig(lowered.stage_needs, _I64)
    p.n_code, p.n_stmts, p.n_holds = len(p.code), len(lowered.stmts), len(p.hoffs)
    p.hold_depth_max = max(1, lowered.max_hold_depth)
    p.hold_pools_max = max(1, lowered.max_hold_pools)
    p.n_attrs, p.slot_serial, p.slot_turn = lowered.n_attrs, lowered.slot_serial, lowered.slot_turn
    p.slot_cached, p.slot_computed = lowered.slot_cached, lowered.slot_computed
    p.init_pc, p.turn_pc, p.session_pc = lowered.init_pc, lowered.turn_pc, lowered.session_pc
    p.max_keys = lowered.max_keys
    p.n_keys = 2 * lowered.max_keys + 2
    p.n_stages, p.n_pools = len(lowered.stage_names), len(lowered.pool_names)
    p.n_observes, p.n_gauges = len(lowered.observe_names), len(lowered.gauge_names)
    p.stack_cap = lowered.stack_depth + 64
    p.caps, p.blocks = _contig(lowered.pool_caps, _F64), _contig(lowered.pool_blocks, _F64)
    p.kstart, p.kcount = _contig(lowered.pool_key_start, _I32), _contig(lowered.pool_key_count, _I32)
    p.pkeys, p.lifo = _contig(lowered.pool_keys, _I32), _contig(lowered.pool_lifo, _I32)
    p.estart, p.ecount = _contig(lowered.pool_evict_start, _I32), _contig(lowered.pool_evict_count, _I32)
    p.spills, p.admit_via = _contig(lowered.pool_spill, _SPILL), _contig(lowered.pool_admit_via, _I32)
    p.kinds, p.servers = _contig(lowered.stage_kinds, _I32), _contig(lowered.stage_servers, _I32)
    p.phis, p.shared = _contig(lowered.stage_phi, _I32), _contig(lowered.stage_shared, _F64)
    p.step_exprs, p.step_serve = _contig(lowered.step_exprs, _STEP_EXPRS), _contig(lowered.step_serve, _STEP_SERVE)
    p.step_memory, p.serve_keys = _contig(lowered.step_memory, _I32), _contig(lowered.serve_keys, _I32)
    p.gexprs = _contig(lowered.gauge_exprs, _I32)
    p.max_flow_stages, p.share_maxmin = max(1, lowered.max_flow_stages), lowered.share_maxmin
    p.kv_budget, p.kv_iteration = bool(lowered.kv_budget), bool(lowered.kv_iteration)
    p.budget_totals, p.estimates = bool(lowered.budget_totals), bool(lowered.estimates)
    p.arrival_kind, p.arrival_rate = lowered.arrival_kind, lowered.arrival_rate
    p.arrival_count, p.arrival_gap = min(lowered.arrival_count, 2**62), lowered.arrival_gap
    p.seed, p.horizon, p.warmup, p.arrivals = lowered.seed, lowered.horizon, lowered.warmup, lowered.arrivals
    p.trace_ordered = lowered.trace_ordered
    p.slot_new, p.slot_out, p.slot_think, p.slot_forced, p.slot_more = lowered.slot_trace
    p.trace_tables = None if lowered.trace else _trace_arrays(lowered, None)    # (no trace: no seed read)
    p.observe_names, p.gauge_names = tuple(lowered.observe_names), tuple(lowered.gauge_names)
    p.stage_names, p.stage_indices = tuple(lowered.stage_names), tuple(lowered.stage_indices)
    p.pool_names, p.pool_indices = tuple(lowered.pool_names), tuple(lowered.pool_indices)
    _last_plan = p
    return p


def run(lowered, *, seed=None, horizon=None, warmup=None, arrivals=None,
        trace_iterations=False, trace_evictions=False, dump_pools=False, check_invariants=False,
        step_limit=STEPS_PER_INSTANT, max_memory=MAX_MEMORY, samples="all", wall_limit=None, progress=None,
        timeline=None, timeline_window=None, report=False):
    """Run a `sq.lower.lowering.Lowered` program; returns `sq.results.raw.RawResults` or raises SqError.
    With `report=True` it returns the run's `sq.results.report.Report` instead (without provenance:
    `Report.from_results` of those raw results, its rows made from the engine's state, each once),
    and a stopped run's exception carries it as `.report` rather than its raw results as `.raw`.

    Settings left as None are the program's own; given ones must already be checked
    (`sq._support.settings.checked`, as sq.run_lowered does): the engine trusts them. `trace_iterations` is for step
    stages; `trace_iterations` / `trace_evictions` may be a file (one line each) or a callable instead of True, which
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
    global lone_runs, fifo_runs, ps_runs, steady_repeats, steps_repeated, quiet_fused
    cdef _Plan plan = plan_of(lowered)
    seed_v, horizon_v, warmup_v, limit_v = _settings(plan, seed, horizon, warmup, arrivals)
    if samples not in ("all", "none"):
        raise SqError(f"run: samples is 'all' or 'none', found {samples!r}", phase="settings")
    cdef _Kept kept = _kept_take()
    cdef State* st = kept.st
    st.spares = kept.spares
    st.sample_spares = &kept.samples
    if kept.plan is not plan:       # the kept tables are another plan's (their sizes and order)
        plan_tables_free(&kept.tables)
        kept.plan = plan
    st.plan_tables = &kept.tables
    try:
        # the arrays the State points into (the plan's, a trace's, an arrival's), alive until the run is collected
        _set_program(st, plan)
        tables = (plan, _set_trace(st, lowered, seed_v, plan))
        _set_pools(st, plan)
        _set_stages(st, plan)
        _set_observations(st, plan)
        _set_run(st, plan, seed_v, horizon_v, warmup_v, limit_v, step_limit, max_memory, check_invariants)
        tables += (_set_arrivals(st, lowered, horizon_v),)
        st.traces.iters = bool(trace_iterations)
        st.traces.evicts = bool(trace_evictions)
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
        if st.lone.stage >= 0:
            lone_runs += 1
            fifo_runs += st.lone.fifo
            ps_runs += st.lone.ps
        steady_repeats += st.steady_repeats
        steps_repeated += st.steps_repeated
        quiet_fused += st.quiet_fused
        trace_flush(st)     # the last chunk, also of a run that failed (its trace leads to the fault)
        if st.error.code:
            raise SqError(_error_text(st, lowered), phase="run", item=_error_item(st, lowered))
        end = _finish(st, horizon_v, warmup_v, limit_v, SqError)
        if st.tl != NULL:
            _close_timeline(st, timeline, SqError)    # complete also when the run was stopped
        del keep
        if report:
            raw = _report_rows(st, plan, seed_v, horizon_v, warmup_v, end, bool(dump_pools))
        else:
            raw = _collect(st, lowered, R, seed_v, horizon_v, warmup_v, end, bool(dump_pools))
        raw.iteration_trace, raw.eviction_trace = iteration_lines, eviction_lines
        if st.stop == STOP_WALL:
            raw.stopped = "wall limit"
        elif st.stop:
            raw.stopped = "interrupted"
            if report:
                watch.exception.report = raw
            else:
                watch.exception.raw = raw
            raise watch.exception
        return raw
    finally:
        release_state(st)
        memset(st, 0, sizeof(State))        # (every field as the set-up expects it: zero)
        kept.busy = False


# ---- run's set-up, table by table: each returns the arrays it points the State into ----------
cdef int _set_program(State* st, _Plan p) except -1:
    """The bytecode, its constants, entry points and hold rows (with the most holds and pools a
    session's frames carry), the attribute slots, the expression stack."""
    cdef int32_t k
    st.code = <const int32_t*> data_of(p.code)
    st.consts = <const double*> data_of(p.consts)
    st.stmts = <const int32_t*> data_of(p.stmts)
    st.n_code = p.n_code
    st.shapes = expr_shapes(st, st.code, st.n_code)
    st.holds = <const int32_t*> data_of(p.holds)
    st.hold_offsets = <const int32_t*> data_of(p.hoffs)
    st.hold_pcs = <const int32_t*> data_of(p.hpcs)
    st.n_holds = p.n_holds
    st.hold_depth_max = p.hold_depth_max
    st.hold_pools_max = p.hold_pools_max
    st.n_attrs = p.n_attrs
    st.slot_serial = p.slot_serial
    st.slot_turn = p.slot_turn
    st.slot_cached = p.slot_cached
    st.slot_computed = p.slot_computed
    st.init_pc = p.init_pc
    st.turn_pc = p.turn_pc
    st.session_pc = p.session_pc
    st.max_keys = p.max_keys
    st.n_stages = p.n_stages
    st.n_pools = p.n_pools
    st.n_observes = p.n_observes
    st.n_gauges = p.n_gauges
    st.stack_cap = p.stack_cap
    st.stage_needs = <const int64_t*> data_of(p.needs)
    st.stack = <double*> plan_table(st, st.stack_cap, sizeof(double), TABLE_RAW)
    for k in range(N_CONTEXTS):
        st.ctxv[k] = NAN
    st.keys = <double*> plan_table(st, p.n_keys, sizeof(double), TABLE_RAW)
    if st.stack == NULL or st.keys == NULL or st.shapes == NULL:
        raise MemoryError()
    return 0


cdef object _set_trace(State* st, lowered, seed, _Plan plan):
    """Trace replay: the corpus and the attribute slots a turn loads; `arrive replay`'s schedule."""
    tables = plan.trace_tables if plan.trace_tables is not None else _trace_arrays(lowered, seed)
    trace_turns, trace_start, trace_len, replay_at, replay_of, prefix = tables
    st.pfx_cap = -1.0
    if prefix is not None:
        ids, off, prev, nxt = prefix
        st.pfx_ids = <const int64_t*> data_of(ids)
        st.pfx_off = <const int64_t*> data_of(off)
        st.pfx_prev = <int64_t*> data_of(prev)
        st.pfx_next = <int64_t*> data_of(nxt)
        st.pfx_head = st.pfx_tail = -1
        st.pfx_count = 0
        st.pfx_cap = lowered.prefix_cap
        st.slot_hit_blocks, st.slot_prompt_blocks = lowered.slot_prefix
    st.replay_at = <const double*> data_of(replay_at)
    # None: arrival i replays corpus session i; a one-turn corpus: session t is row t (no offsets)
    st.replay_of = <const int64_t*> data_of(replay_of) if replay_of is not None else NULL
    st.replay_n = len(replay_at)
    st.trace_turns = <const double*> data_of(trace_turns)
    st.trace_start = <const int64_t*> data_of(trace_start) if trace_start is not None else NULL
    st.trace_len = <const int64_t*> data_of(trace_len) if trace_len is not None else NULL
    st.trace_sessions = len(trace_len) if trace_len is not None else len(trace_turns) // 4
    st.trace_ordered = plan.trace_ordered
    st.slot_new, st.slot_out, st.slot_think = plan.slot_new, plan.slot_out, plan.slot_think
    st.slot_forced, st.slot_more = plan.slot_forced, plan.slot_more
    return tables


cdef int _set_pools(State* st, _Plan p) except -1:
    """The pools: caps, blocks, `queue by` and `evict by` keys, lifo, spill clauses, `admit via`."""
    cdef int32_t k
    caps, blocks, kstart, kcount, pkeys, lifo = p.caps, p.blocks, p.kstart, p.kcount, p.pkeys, p.lifo
    estart, ecount, spills, admit_via = p.estart, p.ecount, p.spills, p.admit_via
    st.pool_caps = <const double*> data_of(caps)
    st.pool_keys = <const int32_t*> data_of(pkeys)
    st.admit_via = <const int32_t*> data_of(admit_via)
    st.pools = <Pool*> plan_table(st, st.n_pools + 1, sizeof(Pool), TABLE_ZERO)
    st.scratch = <double*> plan_table(st, 2 * st.hold_pools_max + 2, sizeof(double), TABLE_RAW)
    st.pools_waiting = rows_new(st, st.n_pools)
    st.pools_sampled = rows_new(st, st.n_pools)
    st.pools_touched = <uint64_t*> plan_table(st, st.n_pools // 64 + 1, sizeof(uint64_t), TABLE_ZERO)
    st.pool_lag.gap = <double*> plan_table(st, 2 * LAG_CAP, sizeof(double), TABLE_RAW)
    if st.pools == NULL or st.scratch == NULL or st.pools_waiting == NULL or st.pools_sampled == NULL \
            or st.pools_touched == NULL or st.pool_lag.gap == NULL:
        raise MemoryError()
    for k in range(st.n_pools):
        st.pools[k].lag_at = -1
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
        if st.pools[k].evict_count > 0:
            st.pools_evict_by = 1
    return 0


cdef int _set_stages(State* st, _Plan p) except -1:
    """The stages: kind, servers, φ, step expressions and serve keys, memory pool, shared capacity;
    the flows' tables. After _set_pools (a step stage's memory pool is marked)."""
    cdef int32_t k, m, passes
    kinds, servers, phis, shared = p.kinds, p.servers, p.phis, p.shared
    step_exprs, step_serve, step_memory, serve_keys = p.step_exprs, p.step_serve, p.step_memory, p.serve_keys
    st.serve_keys = <const int32_t*> data_of(serve_keys)
    st.stages = <Stage*> plan_table(st, st.n_stages + 1, sizeof(Stage), TABLE_LINES)
    st.stages_sampled = rows_new(st, st.n_stages)
    st.steps_ready = rows_new(st, st.n_stages)
    st.kept = <KeptPlan*> plan_table(st, st.n_stages + 1, sizeof(KeptPlan), TABLE_LINES)
    st.stages_touched = <uint64_t*> plan_table(st, st.n_stages // 64 + 1, sizeof(uint64_t), TABLE_ZERO)
    st.step_rows = <uint64_t*> plan_table(st, st.n_stages // 64 + 1, sizeof(uint64_t), TABLE_ZERO)
    st.stage_lag.gap = <double*> plan_table(st, 2 * LAG_CAP, sizeof(double), TABLE_RAW)
    if st.stages == NULL or st.stages_sampled == NULL or st.steps_ready == NULL or st.stages_touched == NULL or st.step_rows == NULL \
            or st.stage_lag.gap == NULL or st.kept == NULL:
        raise MemoryError()
    if not flows_new(st, p.max_flow_stages, p.share_maxmin):
        raise MemoryError()
    st.bl_stage = -1
    st.kv_budget = p.kv_budget
    st.kv_iteration = p.kv_iteration
    st.budget_totals = p.budget_totals
    st.estimates = p.estimates
    st.flows.finite = 1
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
        st.stages[k].lag_at = -1
        if st.stages[k].kind == K_STEP and not st.stages[k].share_cap > 0:
            touch_row(st.step_rows, k)
        st.stages[k].servers = (<int32_t*> data_of(servers))[k]
        st.stages[k].phi = (<int32_t*> data_of(phis))[k]
        m = st.stages[k].memory
        # a step stage's cost shape, decided once here rather than at every iteration
        st.stages[k].cost_shape = cost_shape(st.code + st.stages[k].cost_e) \
            if st.stages[k].kind == K_STEP and st.stages[k].cost_e >= 0 else COST_VM
        st.stages[k].cost_direct = st.stages[k].cost_shape != COST_VM and step_cost_leaves(st, &st.stages[k])
        st.stages[k].budget_fixed = constant_at(st, st.stages[k].budget_e, &st.stages[k].budget_k)
        st.stages[k].chunk_fixed = constant_at(st, st.stages[k].chunk_e, &st.stages[k].chunk_k)
        st.stages[k].phi_fixed = constant_at(st, st.stages[k].phi, &st.stages[k].phi_k)
        if st.stages[k].kind == K_STEP:
            st.session_extras = 1
        if st.stages[k].kind == K_STEP and 0 <= m < st.n_pools:
            st.pools[m].engine = 1     # preemption victims come from this stage's residents
        if not isfinite(st.stages[k].share_cap):
            st.flows.finite = 0
    if st.n_holds > 0:
        st.session_extras = 1
    st.forms = stmt_forms(st, p.n_stmts)
    if st.forms == NULL:
        raise MemoryError()
    st.n_ps_first = st.n_stages
    st.n_ps_end = st.n_stages
    st.n_step_end = 0
    passes = 0
    for k in range(st.n_stages - 1, -1, -1):
        if st.stages[k].kind == K_STEP and st.n_step_end == 0:
            st.n_step_end = k + 1
        if st.stages[k].kind == K_PS or st.stages[k].kind == K_STEP:
            if passes == 0:
                st.n_ps_end = k + 1
            st.n_ps_first = k
            passes += 1
    st.steps_only = passes > 1      # (a lone step stage is visited directly: settle_step_passes)
    for k in range(st.n_ps_first, st.n_ps_end):
        if st.stages[k].kind == K_PS:
            st.steps_only = False
    st.ps_lone = -1
    if passes == 1 and st.n_pools == 0 and st.stages[st.n_ps_first].kind == K_PS:
        st.ps_lone = st.n_ps_first
    st.step_lone = st.n_ps_first if passes == 1 and st.stages[st.n_ps_first].kind == K_STEP else -1
    st.steady_stage = st.step_lone if steady_enabled else -1
    st.steps_again = st.steps_only and steady_enabled
    return 0


cdef int _set_observations(State* st, _Plan p) except -1:
    """The observes' and gauges' tables (their samples grow as the run records)."""
    cdef int32_t k
    gexprs = p.gexprs
    cdef Observe* o
    st.observes = <Observe*> plan_table(st, st.n_observes + 1, sizeof(Observe), TABLE_ZERO)
    st.gauges = <Gauge*> plan_table(st, st.n_gauges + 1, sizeof(Gauge), TABLE_ZERO)
    if st.observes == NULL or st.gauges == NULL:
        raise MemoryError()
    for k in range(st.n_observes):     # (taken in the reverse of _adopt's order: each its own kind's)
        o = &st.observes[k]
        o.serials.cap = sample_spare_take(st, <void**> &o.serials.p32, sizeof(int32_t))
        o.times.cap = sample_spare_take(st, <void**> &o.times.p, sizeof(double))
        o.values.cap = sample_spare_take(st, <void**> &o.values.p, sizeof(double))
        o.room = min(o.values.cap, min(o.times.cap, o.serials.cap))   # (record_row's, for 4-byte serials and no turns)
    for k in range(st.n_gauges):
        st.gauges[k].expr = (<int32_t*> data_of(gexprs))[k]
    return 0


cdef void _set_run(State* st, _Plan p, seed, double horizon, double warmup, limit, step_limit, max_memory,
                   check_invariants) except *:
    """The run's settings: the workload's arrivals, horizon, warm-up, limits, the seeded streams."""
    cdef uint64_t useed = <uint64_t> seed
    st.arrival_kind = p.arrival_kind
    st.arrival_rate = p.arrival_rate
    st.arrival_count = p.arrival_count
    st.arrival_gap = p.arrival_gap
    st.horizon = horizon
    st.warmup = warmup
    st.limit = min(limit, ARRIVALS_NEVER)   # a larger limit is never reached either
    st.step_limit = step_limit
    st.max_memory = max_memory
    st.warm = 0 if warmup > 0 else 1
    st.mid_time = warmup + (horizon - warmup) / 2.0
    st.check = bool(check_invariants)
    sq_rng_seed(&st.rng_arrival, useed ^ SQ_STREAM_ARRIVAL_MASK)
    sq_rng_seed(&st.rng_workload, useed ^ SQ_STREAM_WORKLOAD_MASK)
    sq_rng_seed(&st.rng_session, useed ^ SQ_STREAM_SESSION_MASK)
    sq_rng_seed(&st.rng_trace, useed ^ SQ_STREAM_TRACE_MASK)
    sq_rng_seed(&st.rng_eviction, useed ^ SQ_STREAM_EVICTION_MASK)


cdef object _set_arrivals(State* st, lowered, double horizon):
    """The extensions' arrival tables over this run (sq/traces/rate.py): a poisson rate's
    thinning bound, a modulated poisson's phases, a renewal's operational-time table."""
    if st.arrival_kind == A_POISSON_NOW:
        from sq.traces.rate import bound
        st.arrival_rate = bound(lowered.rate, horizon)
        return ()
    if st.arrival_kind == A_MODULATED:
        rates, leave = (_contig(a, _F64) for a in lowered.modulated)
        st.mod_rates = <const double*> data_of(rates)
        st.mod_leave = <const double*> data_of(leave)
        st.mod_n = len(rates) if rates.max() > 0 else 0     # no rate above 0: nothing to walk the phases for
        st.mod_phase = -1
        return rates, leave
    if st.arrival_kind == A_RENEWAL_RATE:
        cum = _operational_time(st, lowered.rate_expr, horizon)
        st.op_cum = <const double*> data_of(cum)
        st.op_n = len(cum) - 1
        st.op_cell = 0
        st.op_at = 0.0
        return (cum,)
    return ()


cdef object _operational_time(State* st, int32_t rate, double horizon):
    """A renewal's rate(r) integrated, Λ at the cells' edges (sq/traces/rate.py says how): r is
    evaluated with `now` at each cell's Gauss points by the expression code the run reads."""
    from sq.traces.rate import OPERATIONAL_CELLS, GAUSS_NODES, GAUSS_WEIGHTS
    cdef int64_t cells = OPERATIONAL_CELLS, k
    cdef int j, bad = 0
    cdef double nodes[4]
    cdef double weights[4]
    cdef double width = horizon / cells, left, mean, r = 0.0, saved = st.now
    for j in range(4):
        nodes[j], weights[j] = GAUSS_NODES[j], GAUSS_WEIGHTS[j]
    cum = np.empty(cells + 1)
    cdef double[::1] c = cum
    c[0] = 0.0
    with nogil:
        k = 0
        while k < cells and not bad:
            left = k * width
            mean = 0.0
            for j in range(4):
                st.now = left + (nodes[j] + 1) * width / 2
                r = evaluate(st, rate, -1, &st.rng_arrival, NAN)
                bad = st.error.code or not (r >= 0) or not isfinite(r)
                if bad:
                    break
                mean += weights[j] / 2 * r
            c[k + 1] = c[k] + mean * width
            k += 1
    if bad:
        st.error.code = 0
        raise SqError(f"the renewal's rate at time {st.now:g} is {r:g}: a rate must be finite and >= 0",
                      phase="run", item=("arrival", "rate"))
    st.now = saved
    st.op_width = width
    return cum


def _trace_sink(trace, lines):
    """Where a debug trace's lines go: a file (anything with `write`) gets them one per line and
    a callable each chunk (list of lines) as the run goes; True keeps them all in `lines` (the
    report's list)."""
    if trace is True or trace is False:
        return lines.extend
    if hasattr(trace, "write"):
        return _LinesTo(trace)
    return trace if callable(trace) else lines.extend


cdef class _LinesTo:
    """A file as a trace sink. Compiled, so no Python frame runs between taking a chunk and
    writing it, where a Ctrl-C could land and lose the chunk (only the file's own write may
    be interrupted)."""
    cdef object write

    def __init__(self, file):
        self.write = file.write

    def __call__(self, lines):
        self.write("".join([line + "\n" for line in lines]))


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


def _trace_arrays(lowered, seed):
    """The trace corpus as flat arrays (read now: a trace file is read when the run starts), and
    `arrive replay`'s schedule (its times and corpus sessions; empty without one). A one-turn
    corpus has no offsets and counts (None), an identity schedule no sessions (None): the engine
    takes row t, session i (sq/traces/serq.py TraceCorpus, sq/traces/replay.py)."""
    if not lowered.trace:
        return R.EMPTY_F64, R.EMPTY_I64, R.EMPTY_I64, R.EMPTY_F64, R.EMPTY_I64, None
    from sq.traces import corpus as read_corpus       # only a replay loads the readers
    corpus = read_corpus(lowered.trace)
    at, of = R.EMPTY_F64, R.EMPTY_I64
    if lowered.replay is not None:
        from sq.engine._random import Rng, stream_seed
        from sq.traces.replay import schedule
        # keep(p)'s draws: the trace stream, which a replay does not otherwise read
        at, of = schedule(corpus.arrival, lowered.replay, Rng(stream_seed(seed, "trace")), lowered.trace)
    prefix = None
    if lowered.prefix_cap >= 0:
        from sq.traces.prefix import engine_tables
        prefix = engine_tables(corpus)
    return corpus.turns.reshape(-1), corpus.offset, corpus.count, at, of, prefix


cdef tuple _settings(_Plan p, seed, horizon, warmup, arrivals):
    """The run's seed, horizon, warmup and arrival limit: those given, else the program's own.
    Given ones were checked by `sq._support.settings` (sq.run_lowered) before they reach the engine."""
    return (p.seed if seed is None else int(seed),
            p.horizon if horizon is None else float(horizon),
            p.warmup if warmup is None else float(warmup),
            p.arrivals if arrivals is None else int(arrivals))


cdef object _finish(State* st, double horizon, double warmup, object limit, SqError):
    """The end of the run: §9.4's arrival-limit errors, then `end`; time averages flushed to it."""
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
    lag_catch_up(st)        # the samples each unchanged row deferred (sq/engine/_loop.pxi)
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
    from sq._support.number_format import display as fmt
    lines = []
    cdef int64_t i, e = 0, n
    for i in range(st.traces.it_time.n):
        n = st.traces.it_count.p[i]
        entries = []
        for _ in range(n):
            entries.append(f"{st.traces.it_serial.p[e]}:{st.traces.it_turn.p[e]}:"
                           f"{'d' if st.traces.it_mode.p[e] == M_DECODE else 'p'}{fmt(st.traces.it_tokens.p[e])}")
            e += 1
        lines.append(f"ITER {st.traces.it_time.p[i]:.4f} " + " ".join(entries))
    return lines


cdef object _eviction_lines(State* st):
    """`EVICT <now> <key> <units>` per evicted piece, like the reference's SERQ_TRACE_EVICT
    (the key is the owner's serial, or 2^62 + n for a dead entry)."""
    from sq._support.number_format import display as fmt
    cdef int64_t i
    return [f"EVICT {st.traces.ev_time.p[i]:.4f} {st.traces.ev_key.p[i]} {fmt(st.traces.ev_units.p[i])}" for i in range(st.traces.ev_time.n)]


cdef str _owner_status(State* st, Entry* en):
    """What the entry's owner is doing at the end, in the reference's words ("gone": ended, or nobody's)."""
    cdef int32_t slot = en.slot
    if slot < 0 or not st.sess.alive[slot] or st.sess.serial[slot] != en.key:
        return "gone"
    if st.sess.waiting[slot]:
        return "Queued"
    if st.sess.grow_at[slot] >= 0:
        return "Growing"
    if st.sess.job[slot] >= 0 or st.sess.flow[slot] >= 0:
        return "InStage"
    return "Ready"


cdef object _pool_dump_lines(State* st, lowered):
    """`POOL <name> used U cached C by status {…}` per pool at the end, like SERQ_DUMP_POOLS:
    the cache entries counted and summed by what their owners are doing. The sums run in
    (last) cache order; 0.1.2 sums in its hash map's order, which changes from run to run,
    so the last digits of a fractional sum may differ from one of its runs."""
    from sq._support.number_format import debug as dbg, display as fmt
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
    if a.integral == 0.0 and a.value == 0.0 and not signbit(a.integral) and not signbit(a.value):
        return _ZERO_AREA       # a step stage's areas on every other stage: one shared (immutable) pair
    return sq_pair(_AREA, a.integral, a.value)


_ZERO_AREA = sq_pair(_AREA, 0.0, 0.0)


cdef str _kind_name(int32_t kind):
    # compared as C ints: a dict keyed by the cpdef enum converts each kind to a Python enum
    if kind == K_FIFO:
        return "fifo"
    if kind == K_PS:
        return "ps"
    if kind == K_DELAY:
        return "delay"
    return "step"


cdef object _collect(State* st, lowered, R, seed, double horizon, double warmup, double end, bint dump_pools):
    """The RawResults of the run. Every result class is called with its fields in order,
    positionally (a class called with keywords first packs them into a dict, ~7x the cost of the
    call, paid per row of every run); tests/engine/test_engine_results.py reads each field by name."""
    cdef int32_t k
    cdef Stage* s
    cdef Pool* p
    middle = None
    if st.mid_taken:     # time, live, queues, warm_arrivals
        middle = R.Middle(st.mid_time, st.mid_live, [st.pools[k].mid_queue for k in range(st.n_pools)],
                          st.warm_arrivals)
    observes = []
    for k in range(st.n_observes):
        if not st.keep_samples:
            observes.append(R.ObserveRaw(name=lowered.observe_names[k], summary=_summary(R, &st.observes[k].summary)))
            continue
        # name, samples, times, sessions, turns, summary, moments (the arrays are taken: nothing is
        # recorded after this)
        st.observes[k].room = 0
        observes.append(R.ObserveRaw(lowered.observe_names[k], darr_numpy(&st.observes[k].values, st.sample_spares),
                                     darr_numpy(&st.observes[k].times, st.sample_spares),
                                     serials_numpy(&st.observes[k].serials, st.sample_spares),
                                     turns_numpy(&st.observes[k].turns, st.sample_spares), None,
                                     (st.observes[k].mean, st.observes[k].m2)))
    gauges = []
    for k in range(st.n_gauges):
        if not st.keep_samples:
            gauges.append(R.GaugeRaw(name=lowered.gauge_names[k], fold=_fold(R, &st.gauges[k].fold, end)))
            continue
        gauges.append(R.GaugeRaw(lowered.gauge_names[k], darr_numpy(&st.gauges[k].times, st.sample_spares),
                                 darr_numpy(&st.gauges[k].values, st.sample_spares)))    # name, times, values
    stages = []
    empty = R.EMPTY_F64      # the sample lists the engine keeps running means of instead
    for k in range(st.n_stages):
        s = &st.stages[k]
        stages.append(R.StageRaw(
            lowered.stage_names[k], lowered.stage_indices[k], _kind_name(s.kind),   # name, index, kind
            _area(R, &s.number), _area(R, &s.busy_area), empty, empty,     # number, busy, waits, services
            _running(R, &s.waits), _running(R, &s.services), s.iterations,   # wait_mean, service_mean, iterations
            _area(R, &s.prefill_only), _area(R, &s.decode_only), _area(R, &s.mixed),   # prefill_only .. mixed
            _area(R, &s.decodes), empty, empty, empty,    # decodes, decode_batches, decode_steps, itl_gaps
            _running(R, &s.decode_batch), _running(R, &s.decode_step), _itl(R, &s.itl),   # .._mean, itl
            _running(R, &s.budget_use), _running(R, &s.batch)))    # budget_use, batch
    pools = []
    for k in range(st.n_pools):
        p = &st.pools[k]
        pools.append(R.PoolRaw(
            lowered.pool_names[k], lowered.pool_indices[k],    # name, index
            _area(R, &p.used_area), _area(R, &p.cached_area),   # used, cached
            _area(R, &p.queue_area), _area(R, &p.holders_area), empty,   # queue, holders, waits
            _running(R, &p.waits), p.admissions, p.evicted_entries,    # wait_mean, admissions, evicted_entries
            p.evicted_units, p.preemptions, p.spills, p.rejected, p.stuck))   # .._units, preemptions .. stuck
    # horizon, end, warmup, seed, events, arrivals, ended, turns, live, observes, gauges, stages, pools,
    # iteration_trace, eviction_trace (set by run), pool_dump, middle
    return R.RawResults(horizon, end, warmup, seed, st.events, st.arrivals, st.ended, st.turns,
                        _area(R, &st.live_area), observes, gauges, stages, pools, [], [],
                        _pool_dump_lines(st, lowered) if dump_pools else [], middle)


# The rows' makers, looked up once: a module's attribute, a class's and a bound method made, per
# row of every run, cost a short run more than its rows' numbers do.
cdef object _observe_of = reports.Observe.of, _stage_of = reports.Stage.of, _pool_of = reports.Pool.of
cdef object _report_of = reports.Report.of, _arrivals_after = steady.arrivals_after


cdef object _report_rows(State* st, _Plan plan, seed, double horizon, double warmup, double end, bint dump_pools):
    """The run's `sq.results.report.Report` (without provenance): `Report.from_results` of what
    `_collect` would give, each row made once, from the State (a sweep's run made a raw row and
    then a report row of the same data): the rows' own makers (`Observe.of`, `Stage.of`,
    `Pool.of`, `Report.of`, which from_raw and from_results call too) given the engine's
    values. A run that reached the middle of its measured window (the steady-state test reads
    the raw middle) or kept summaries instead of samples takes `_collect` and
    `Report.from_results`; tests/engine/test_engine_results.py holds the two ways to each other,
    field by field."""
    lowered = plan.lowered
    if st.mid_taken or not st.keep_samples:
        return reports.Report.from_results(_collect(st, lowered, R, seed, horizon, warmup, end, dump_pools))
    cdef int32_t k
    cdef Stage* s
    cdef Pool* p
    cdef double span = end - warmup
    observes, gauges, stages, pools = {}, {}, [], []
    for k in range(st.n_observes):
        st.observes[k].room = 0     # (the arrays are taken: nothing is recorded after this)
        # name, samples, times, sessions, turns, moments, warmup
        observes[plan.observe_names[k]] = _observe_of(
            plan.observe_names[k], darr_numpy(&st.observes[k].values, st.sample_spares),
            darr_numpy(&st.observes[k].times, st.sample_spares),
            serials_numpy(&st.observes[k].serials, st.sample_spares), turns_numpy(&st.observes[k].turns, st.sample_spares),
            (st.observes[k].mean, st.observes[k].m2), warmup)
    for k in range(st.n_gauges):     # (a gauge's statistics are Gauge.from_raw's, from its change points)
        gauges[plan.gauge_names[k]] = reports.Gauge.from_raw(
            R.GaugeRaw(plan.gauge_names[k], darr_numpy(&st.gauges[k].times, st.sample_spares),
                       darr_numpy(&st.gauges[k].values, st.sample_spares)),
            warmup, end)
    for k in range(st.n_stages):
        s = &st.stages[k]
        stages.append(_stage_of(
            plan.stage_names[k], plan.stage_indices[k], span,    # name, index, span
            time_mean(s.number.integral, s.number.value, span),   # mean_number
            time_mean(s.busy_area.integral, s.busy_area.value, span), s.services.n,    # utilization, completed
            _mean_of(&s.waits), _mean_of(&s.services), s.iterations,  # mean_wait, mean_service, iterations
            time_mean(s.prefill_only.integral, s.prefill_only.value, span),
            time_mean(s.decode_only.integral, s.decode_only.value, span),
            time_mean(s.mixed.integral, s.mixed.value, span),
            time_mean(s.decodes.integral, s.decodes.value, span),    # prefill_only .. mean_decodes
            _mean_of(&s.decode_batch), _mean_of(&s.decode_step), _itl(R, &s.itl),   # .. mean_decode_step, itl
            _mean_of(&s.budget_use), _mean_of(&s.batch)))     # mean_budget_use, mean_batch
    for k in range(st.n_pools):
        p = &st.pools[k]
        pools.append(_pool_of(
            plan.pool_names[k], plan.pool_indices[k],    # name, index
            time_mean(p.used_area.integral, p.used_area.value, span),
            time_mean(p.cached_area.integral, p.cached_area.value, span),
            time_mean(p.queue_area.integral, p.queue_area.value, span),
            time_mean(p.holders_area.integral, p.holders_area.value, span),   # mean_used .. mean_holders
            _mean_of(&p.waits), p.admissions, p.evicted_entries, p.evicted_units,   # mean_wait .. evicted_units
            p.preemptions, p.spills, p.rejected, p.stuck))    # preemptions .. stuck
    # horizon .. mean_live, observes, gauges, stages, pools, iteration_trace, eviction_trace (set by run),
    # pool_dump, warnings, stopped (set by run), growth, arrivals_measured (a run that ended before its
    # middle has no steady-state test: steady.of_run's)
    return _report_of(
        horizon, end, warmup, seed, st.events, st.arrivals, st.ended, st.turns,
        time_mean(st.live_area.integral, st.live_area.value, span), observes, gauges, stages, pools,
        None, None, _pool_dump_lines(st, lowered) if dump_pools else None, [], None, NAN,
        _arrivals_after(warmup, st.arrivals, None))


cdef inline double _mean_of(Running* r) noexcept:
    """A running mean as the report reads it: NaN without samples (the one definition: `_running`'s
    pairs carry it too)."""
    return r.mean if r.n else NAN


cdef object _error_text(State* st, lowered):
    from sq.lower.lowering import instruction_at
    from sq._support.number_format import brief, display as fmt
    index = (<uint64_t> st.error.a)      # an index is unsigned (saturated at 2^64 - 1)
    where = f" (session {st.error.serial}, time {brief(st.error.time)})" if st.error.serial >= 0 \
        else f" (time {brief(st.error.time)})"
    if st.error.code == E_BRANCH:
        site = lowered.sites[st.error.a]
        return (f"{site}: the guard is {fmt(st.error.value)}, not 0 or 1; "
                f"a draw is written `branch with (p)`{where}")
    if st.error.code == E_INDEX:
        return f"index {index} out of range (count {st.error.b}){where}"
    if st.error.code == E_STAGE_INDEX:
        return f"stage index {index} out of range (count {st.error.b}){where}"
    if st.error.code == E_POOL_INDEX:
        return f"pool index {index} out of range (count {st.error.b}){where}"
    if st.error.code == E_GROW_OUTSIDE or st.error.code == E_LOAD_OUTSIDE or st.error.code == E_GROWING_OUTSIDE:
        return f"{lowered.sites[st.error.a]}{where}"
    if st.error.code == E_LOAD_FIT:
        return (f"`load {lowered.sites[st.error.a]} ({fmt(st.error.value3)})`: the hold has {fmt(st.error.value)} allocated and "
                f"{fmt(st.error.value2)} computed; a load must fit the allocation (grow first){where}")
    if st.error.code == E_BUDGET_LEFT:
        return f"budget_left needs a step stage{where}"
    if st.error.code == E_NESTING:
        return (f"`budget_left({_row_name(lowered.stage_names, lowered.stage_indices, st.error.a)})` nests "
                f"deeper than the expression stack{where}")
    if st.error.code == E_RATE:
        return (f"the poisson rate at time {fmt(st.error.value2)} is {fmt(st.error.value)}, outside [0, "
                f"{fmt(st.arrival_rate)}] (a rate must be >= 0; the bound is interval arithmetic's){where}")
    if st.error.code == E_RENEWAL:
        return f"renewal interarrival must be positive and finite (got {fmt(st.error.value)}){where}"
    if st.error.code == E_STUCK:
        head = f"the run does not advance: more than {st.step_limit} statements and events without time passing"
        ins = instruction_at(lowered.stmts, st.error.a, "stmts") if st.error.a >= 0 else None
        if ins is not None and ins.name == "S_JUMP":     # a loop's back jump: the loop's first statement
            ins = instruction_at(lowered.stmts, ins.operands["target"], "stmts")
        if ins is not None and ins.name == "S_RUN":      # stuck at a session's `run`
            stage = _row_name(lowered.stage_names, lowered.stage_indices, ins.operands["stage"]["base"])
            return (f"{head}: a `run {stage}` that takes no time (work 0, or a time lost to rounding: "
                    f"`now + work == now`) in a `loop`?{where}")
        if st.error.a >= 0:     # a session's statements
            return f"{head} (a `loop` with no time-taking `run`?){where}"
        if st.error.b >= 0:     # a stage's events
            if lowered.stage_kinds[st.error.b] == K_STEP:     # a cost <= 0 or NaN lasts 0 (spec 04 §4.5.6)
                what, zero = "iterations", "a cost of 0 or less, or NaN"
            else:
                what, zero = "jobs", "a cost of 0"
            return (f"{head}: stage `{_row_name(lowered.stage_names, lowered.stage_indices, st.error.b)}` "
                    f"repeats {what} that take no time ({zero}, or a time lost to rounding: "
                    f"`now + work == now`){where}")
        return f"{head}{where}"
    if st.error.code == E_STALL:
        step, left = st.error.value, st.horizon - st.error.time
        ins = _run_before(lowered, st.error.a)
        what = f"`run {_row_name(lowered.stage_names, lowered.stage_indices, ins.operands['stage']['base'])}`" \
            if ins is not None else "the run"
        from sq._support.number_format import quotient     # (past the largest double: 50 / 1e-310)
        needed = quotient(left, step)
        return (f"the run does not advance: time gains {step:.3g} an event (the last {STALL_WINDOWS * STALL_WINDOW} "
                f"events, at {what}); the horizon {fmt(st.horizon)} would need {needed} more events "
                f"(over 2^63: the run would never end){where}")
    if st.error.code == E_SPILL_VIA_STEP:
        return (f"pool `{_row_name(lowered.pool_names, lowered.pool_indices, st.error.a)}` spills a piece over "
                f"step stage `{_row_name(lowered.stage_names, lowered.stage_indices, st.error.b)}`, which runs only "
                f"`prefill` and `decode` work and cannot carry a transfer (pyserq 0.1.2 panics here); "
                f"link the spill through a fifo, ps or delay stage{where}")
    if st.error.code == E_INVARIANT:
        return f"{invariant_text(st.error.a, st.error.b)}{where}"
    if st.error.code == E_MEMORY_LIMIT:
        return (f"the run would take more than {_bytes(st.max_memory)} of memory (max_memory) at time "
                f"{brief(st.error.time)}: {_progress(st, lowered)}; raise the bound (sq.run(max_memory=...), "
                f"--max-memory) or shorten the run")
    if st.error.code == E_TOO_MANY:
        return f"more than {MAX_SESSIONS} sessions alive at once: the run would exhaust memory{where}"
    if st.error.code == E_SPILL_CYCLE:
        return (f"eviction cannot make room: evicted pieces spill back into the pools being emptied "
                f"(a pool that spills into itself, or a cycle of spills){where}")
    return f"out of memory{where}: {_progress(st, lowered)}"


cdef object _error_item(State* st, lowered):
    """The item (sq.ir.Places) a run-time error is placed at: the `run` a stall waits in."""
    if st.error.code == E_STALL:
        ins = _run_before(lowered, st.error.a)
        if ins is not None:
            return lowered.run_items.get(ins.pc)
    return None


def _run_before(lowered, int64_t pc):
    """The `run` instruction a session waiting with its pc at `pc` is in (the last before it)."""
    if pc < 0:
        return None
    runs = [at for at in lowered.run_items if at < pc]
    if not runs:
        return None
    from sq.lower.lowering import instruction_at
    return instruction_at(lowered.stmts, max(runs), "stmts")


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

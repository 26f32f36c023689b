# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Typed kernels for sq.results.stats: every per-sample loop of the report.

Each kernel performs exactly the floating-point operations, in exactly
the order, of the plain loop its docstring gives, so results agree with
pyserq 0.1.2 to the last bit. Two things guard that order:

* no `-ffast-math`-style reassociation is ever enabled, and
* floating-point contraction is switched off below: a fused multiply-add
  (`m2 + d*(x - m)` as one rounding) would change the last bit on a
  machine built with `-march=native`.
"""
import numpy as np

from libc.math cimport ceil, exp, floor, isfinite, log, sqrt, INFINITY, NAN
from libc.stdint cimport int32_t, int64_t, uint64_t, INT64_MIN, INT64_MAX
from libc.stdlib cimport calloc, free, malloc

from sq.results._itl cimport Bucket, bucket_add, itl_bucket
from sq.results._means cimport time_mean
from sq.results._sketch cimport total_order_key, from_total_order_key

cdef extern from *:
    """
    #if defined(__clang__)
    #pragma STDC FP_CONTRACT OFF
    #elif defined(__GNUC__)
    #pragma GCC optimize ("fp-contract=off")
    #endif
    /* Whether all four of p[0..3] are < least, as four C compares `p[i] < least` and'ed (each
       false for a NaN on either side): two SSE2 compares of two lanes each, one branch for
       the four, where it can. */
    #if defined(__SSE2__)
    #include <emmintrin.h>
    static inline int sq_four_below(const double* p, double least) {
        __m128d l = _mm_set1_pd(least);
        __m128d m = _mm_and_pd(_mm_cmplt_pd(_mm_loadu_pd(p), l), _mm_cmplt_pd(_mm_loadu_pd(p + 2), l));
        return _mm_movemask_pd(m) == 3;
    }
    #else
    static inline int sq_four_below(const double* p, double least) {
        return (p[0] < least) & (p[1] < least) & (p[2] < least) & (p[3] < least);
    }
    #endif
    """
    bint sq_four_below(const double* p, double least) noexcept nogil


# -- sums and moments ----------------------------------------------------------

def seq_sum(const double[::1] xs):
    """`s = 0.0; for x in xs: s += x` (left to right, from +0.0)."""
    cdef double s = 0.0
    cdef Py_ssize_t i
    with nogil:
        for i in range(xs.shape[0]):
            s += xs[i]
    return s


cdef struct Running:
    # Welford's moments and the batch sums, as the pass goes
    bint moments
    double mean, m2
    Py_ssize_t size, used, b, fill      # batch size, samples batched, complete batches, this one's
    double s
    double* means


cdef inline void running_start(Running* a, bint moments, Py_ssize_t n, Py_ssize_t batches,
                               double* means) noexcept nogil:
    """Nothing read yet: the moments from m = M2 = 0 (if `moments`), `batches` batch means of
    n // batches samples to `means` (none if batches is 0)."""
    a.moments, a.mean, a.m2, a.s, a.b, a.fill = moments, 0.0, 0.0, -0.0, 0, 0
    a.size = n // batches if batches > 0 else 0
    a.used = a.size * batches
    a.means = means


cdef inline void running_add(Running* a, double x, Py_ssize_t i) noexcept nogil:
    """Sample i (samples in record order): Welford's `d = x - m; m += d/k; M2 += d*(x - m)`,
    and its batch's sum, started from -0.0 (the neutral element: the same as a sum started
    from the batch's first sample) and divided by the batch size when complete. The one
    definition of both: `welford`, `batch_means` and `sample_statistics` all read through it."""
    cdef double d
    if a.moments:
        d = x - a.mean
        a.mean += d / <double>(i + 1)
        a.m2 += d * (x - a.mean)
    if i < a.used:
        a.s += x
        a.fill += 1
        if a.fill == a.size:
            a.means[a.b] = a.s / <double> a.size
            a.b += 1
            a.s = -0.0
            a.fill = 0


def welford(const double[::1] xs):
    """(n, mean, M2) of `d = x - m; m += d/k; M2 += d*(x - m)`, from m = M2 = 0."""
    cdef Running a
    cdef Py_ssize_t i, n = xs.shape[0]
    running_start(&a, True, n, 0, NULL)
    with nogil:
        for i in range(n):
            running_add(&a, xs[i], i)
    return n, a.mean, a.m2


def time_means(areas, double start, double end):
    """`[float(integral) / (end - start) for integral, _ in areas]`, or when that span is not
    positive `[float(value) for _, value in areas]` (an `Area` is (integral, value)): a report
    row's time averages, built once per row of every run."""
    cdef double span = end - start
    cdef list out = []
    cdef Py_ssize_t k = 0 if span > 0.0 else 1
    for area in areas:
        # an Area is a tuple subclass: its item read in C (indexing it goes through a Python-level
        # __getitem__ slot); any other pair by indexing. Only the item the span asks for is read.
        x = (<tuple> area)[k] if isinstance(area, tuple) and len(<tuple> area) == 2 else area[k]
        out.append(time_mean(<double> x, <double> x, span))
    return out


cdef double half_width(const double* means, Py_ssize_t k, double t) noexcept nogil:
    """t · sqrt(s²/k) over k batch means (s² their sample variance, sums left to right), NaN
    where s² is: `m = sum(means) / k; var = sum((x - m) * (x - m)) / (k - 1)`."""
    cdef double m = 0.0, var = 0.0, kk = <double> k
    cdef Py_ssize_t i
    for i in range(k):
        m += means[i]
    m /= kk
    for i in range(k):
        var += (means[i] - m) * (means[i] - m)
    var /= kk - 1.0
    return t * sqrt(var / kk) if var == var else NAN


def means_half_width(const double[::1] means, double t):
    """`half_width` of an array of batch means."""
    return half_width(&means[0] if means.shape[0] else NULL, means.shape[0], t)


def batch_half_width(const double[::1] xs, Py_ssize_t batches, double t):
    """`half_width` of the `batch_means` of xs (at least one sample per batch): the two in one
    call, without an array of the means (an observe's CI, once per run of a sweep)."""
    if batches < 1 or xs.shape[0] // batches < 1:
        raise ValueError("batch_half_width needs at least one sample per batch")
    cdef double* means = <double*> malloc(batches * sizeof(double))
    cdef double h
    if means == NULL:
        raise MemoryError()
    with nogil:
        batch_means_into(xs, batches, means)
        h = half_width(means, batches, t)
    free(means)
    return h


cdef void batch_means_into(const double[::1] xs, Py_ssize_t batches, double* out) noexcept nogil:
    """`batch_means` written to out[0 .. batches)."""
    cdef Running a
    cdef Py_ssize_t i
    running_start(&a, False, xs.shape[0], batches, out)
    for i in range(a.used):
        running_add(&a, xs[i], i)


def batch_means(const double[::1] xs, Py_ssize_t batches):
    """The means of `batches` consecutive batches of `len(xs) // batches`
    samples (the tail dropped): each batch summed left to right, then
    divided by its size.

    A batch's sum starts from -0.0, the neutral element of addition, so
    it equals a sum started from the batch's first sample (a cumulative
    sum); the batch size must be at least 1.
    """
    if batches < 1 or xs.shape[0] // batches < 1:
        raise ValueError("batch_means needs at least one sample per batch")
    means = np.empty(batches, dtype=np.float64)
    cdef double[::1] out = means
    with nogil:
        batch_means_into(xs, batches, &out[0])
    return means


# -- the p99 order statistic -----------------------------------------------------

def total_order_keys(const double[::1] xs):
    """The totalOrder keys of `xs`, as an int64 array."""
    keys = np.empty(xs.shape[0], dtype=np.int64)
    cdef int64_t[::1] out = keys
    cdef Py_ssize_t i
    with nogil:
        for i in range(xs.shape[0]):
            out[i] = total_order_key(xs[i])
    return keys


cdef int64_t select_key(int64_t* keys, Py_ssize_t n, Py_ssize_t k) noexcept nogil:
    """The k-th smallest (0-based) of n keys, reordering them (quickselect, the median of three
    as pivot; the k-th smallest value is the same whatever the algorithm)."""
    cdef Py_ssize_t lo = 0, hi = n - 1, i, j, mid
    cdef int64_t pivot, t
    if k == 0 or k == n - 1:    # the least or the greatest (a report's min and max): one scan
        return select_end(keys, n, k == 0)
    while hi - lo > 16:
        mid = lo + (hi - lo) // 2
        # order keys[lo], keys[mid], keys[hi]; the middle one is the pivot
        if keys[mid] < keys[lo]:
            keys[mid], keys[lo] = keys[lo], keys[mid]
        if keys[hi] < keys[lo]:
            keys[hi], keys[lo] = keys[lo], keys[hi]
        if keys[hi] < keys[mid]:
            keys[hi], keys[mid] = keys[mid], keys[hi]
        pivot = keys[mid]
        i, j = lo, hi
        while i <= j:
            while keys[i] < pivot:
                i += 1
            while pivot < keys[j]:
                j -= 1
            if i <= j:
                t = keys[i]
                keys[i] = keys[j]
                keys[j] = t
                i += 1
                j -= 1
        # [lo, j] <= pivot <= [i, hi], and what lies between equals the pivot
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return pivot
    for i in range(lo + 1, hi + 1):     # a few left: insertion sort
        t = keys[i]
        j = i - 1
        while j >= lo and keys[j] > t:
            keys[j + 1] = keys[j]
            j -= 1
        keys[j + 1] = t
    return keys[k]


cdef int64_t select_end(int64_t* keys, Py_ssize_t n, bint least) noexcept nogil:
    """The least (or greatest) of n keys, swapped to the first (or last) place: what a
    selection of that end leaves (every other key on its one side)."""
    cdef Py_ssize_t i, at = 0 if least else n - 1, best = at
    for i in range(n):
        if (keys[i] < keys[best]) if least else (keys[i] > keys[best]):
            best = i
    keys[at], keys[best] = keys[best], keys[at]
    return keys[at]


cdef void select_ranks(int64_t* keys, Py_ssize_t n, const Py_ssize_t* at, Py_ssize_t m,
                       int64_t* out) noexcept nogil:
    """out[j] = the at[j]-th smallest (0-based) of n keys, for positions `at` ascending, from one
    partitioning: after a selection every key before the position is <= the one at it and every
    key after it >=, so each later position is selected among the keys above the last one."""
    cdef Py_ssize_t j, base = 0
    for j in range(m):
        if j and at[j] == at[j - 1]:
            out[j] = out[j - 1]
            continue
        out[j] = select_key(keys + base, n - base, at[j] - base)
        base = at[j] + 1


# -- one pass over an observation's samples ---------------------------------------

cdef enum:
    # below this many samples, or for more than one rank, every key is kept and the ranks are
    # selected among them all
    WHOLE_BELOW = 1 << 15
    # the one rank of a longer array (the JSON's p99) is first bracketed by the order
    # statistics of its keys at this many evenly spaced places: the pass keeps only the keys
    # inside the bracket
    PROBES = 1 << 13
    # one rank among the greatest this many of a shorter array (the JSON's p99 of up to 6,400
    # samples) is selected from the greatest keys kept in a sorted run while scanning, not
    # from a copy of every key partitioned
    TOP_MAX = 64


# ranks a bracket missed since the module was loaded (the tests read it: `missed_brackets`)
cdef Py_ssize_t brackets_missed = 0


def missed_brackets():
    """How many ranks a bracket missed (selected among all the keys instead) so far."""
    return brackets_missed


cdef struct Bracket:
    int64_t lo, hi          # the keys kept: lo <= key <= hi
    Py_ssize_t below        # keys < lo
    Py_ssize_t seen         # keys in [lo, hi] (more than cap: the bracket is of no use)
    Py_ssize_t cap
    int64_t* keys           # cap + 1 places: a key past the room goes to the spare last one


cdef inline void bracket_add(Bracket* b, int64_t key) noexcept nogil:
    """Count the key if below the bracket, keep it if inside, without a branch."""
    b.below += key < b.lo
    b.keys[b.seen if b.seen < b.cap else b.cap] = key
    # lo <= key <= hi as one unsigned comparison
    b.seen += <uint64_t> key - <uint64_t> b.lo <= <uint64_t> b.hi - <uint64_t> b.lo


cdef bint bracket_holds(Bracket* b, Py_ssize_t rank) noexcept nogil:
    """Whether the rank-th smallest key (1-based) is among the bracket's kept keys."""
    return b.seen <= b.cap and b.below < rank <= b.below + b.seen


cdef Py_ssize_t probe_rank(Py_ssize_t rank, Py_ssize_t n, double side) noexcept nogil:
    """The rank among PROBES evenly spaced keys that lies beyond the rank-th of n on `side` (-1
    below, +1 above) with a wide margin: eight binomial standard deviations and eight more
    (the samples of a queue are correlated, which widens the spread of the probes' ranks);
    -1 or PROBES when it falls outside the probes."""
    cdef double p = (<double> rank - 0.5) / <double> n
    cdef double at = p * PROBES + side * (8.0 * sqrt(PROBES * p * (1.0 - p)) + 8.0)
    if at < 0.0:
        return -1
    if at >= PROBES:
        return PROBES
    return <Py_ssize_t> at


cdef int bracket_from_probes(const double[::1] xs, Py_ssize_t rank, Bracket* out) noexcept nogil:
    """A bracket for the rank (1-based) from the order statistics of PROBES evenly spaced
    samples, open on a side the probes do not reach; room for twice the keys the probes
    foretell. 0, or -1 out of memory."""
    cdef Py_ssize_t n = xs.shape[0], i
    cdef Py_ssize_t lo = probe_rank(rank, n, -1.0), hi = probe_rank(rank, n, 1.0)
    cdef Py_ssize_t at[2]
    cdef int64_t key_at[2]
    cdef int64_t* probes = <int64_t*> malloc(PROBES * sizeof(int64_t))
    if probes == NULL:
        return -1
    for i in range(PROBES):
        probes[i] = total_order_key(xs[<Py_ssize_t> ((<int64_t> i * n) // PROBES)])
    at[0], at[1] = max(lo, 0), min(hi, PROBES - 1)
    select_ranks(probes, PROBES, at, 2, key_at)
    free(probes)
    out.lo = INT64_MIN if lo < 0 else key_at[0]
    out.hi = INT64_MAX if hi >= PROBES else key_at[1]
    out.below = out.seen = 0
    out.cap = min(n, 2 * (at[1] - at[0] + 1) * (n // PROBES + 1) + 1024)
    out.keys = <int64_t*> malloc((out.cap + 1) * sizeof(int64_t))
    return 0 if out.keys != NULL else -1


cdef void sample_pass(const double[::1] xs, Running* a, Bracket* b) noexcept nogil:
    """The samples read once, in record order: the moments and batch sums through running_add,
    as `welford` and `batch_means` compute them alone (the same values to the bit); every key goes through the bracket b (if any), held in local variables (in
    memory it would cost a store and a reload per sample on its chain). Without the moments
    (the engine kept them) the batches are summed batch by batch (`batch_pass`)."""
    cdef Py_ssize_t n = xs.shape[0], i
    cdef Bracket one
    if not a.moments:
        batch_pass(xs, a, b)
        return
    if b == NULL:
        for i in range(n):
            running_add(a, xs[i], i)
        return
    one = b[0]
    for i in range(n):
        running_add(a, xs[i], i)
        bracket_add(&one, total_order_key(xs[i]))
    b[0] = one


cdef void batch_pass(const double[::1] xs, Running* a, Bracket* b) noexcept nogil:
    """sample_pass without the moments: running_add's batch sums (each from -0.0, left to right,
    divided by the batch size when complete: the same operations in the same order, each batch
    its own sum) taken four batches side by side, so that four sums' additions overlap instead
    of one chain of them; every key through the bracket b (if any; the kept keys' order does
    not matter to the selection)."""
    cdef Py_ssize_t n = xs.shape[0], j, k = 0, size = a.size
    cdef Py_ssize_t full = a.used // size if size > 0 else 0
    cdef double s0, s1, s2, s3
    cdef const double* x = &xs[0] if n else NULL
    cdef Bracket one
    if b != NULL:
        one = b[0]
    while k + 4 <= full:
        s0 = s1 = s2 = s3 = -0.0
        for j in range(k * size, (k + 1) * size):
            s0 += x[j]
            s1 += x[j + size]
            s2 += x[j + 2 * size]
            s3 += x[j + 3 * size]
            if b != NULL:
                bracket_add(&one, total_order_key(x[j]))
                bracket_add(&one, total_order_key(x[j + size]))
                bracket_add(&one, total_order_key(x[j + 2 * size]))
                bracket_add(&one, total_order_key(x[j + 3 * size]))
        a.means[k] = s0 / <double> size
        a.means[k + 1] = s1 / <double> size
        a.means[k + 2] = s2 / <double> size
        a.means[k + 3] = s3 / <double> size
        k += 4
    while k < full:
        s0 = -0.0
        for j in range(k * size, (k + 1) * size):
            s0 += x[j]
            if b != NULL:
                bracket_add(&one, total_order_key(x[j]))
        a.means[k] = s0 / <double> size
        k += 1
    a.b = full
    if b != NULL:
        for j in range(full * size, n):
            bracket_add(&one, total_order_key(x[j]))
        b[0] = one


cdef int64_t select_top(const double[::1] xs, Py_ssize_t c) noexcept nogil:
    """The c-th greatest key of the samples (1 <= c <= min(TOP_MAX, n)): the c greatest seen so
    far are kept ascending in `top`; a key above the least of them displaces it. (A key equal
    to that least one may stay out: the c-th greatest value is the same.)

    Most samples are below that least one, and a double compare tells so without the sample's
    key: `x < least` (both numbers, x numerically less) implies x's key is less than the least
    key, which then leaves x out as the key compare would; a NaN on either side, or x equal to
    it (-0 and +0 are equal but ordered), compares false and goes through the keys. Four
    samples are asked at once (`sq_four_below`: one branch for the four, where a compare and
    branch each cost ~6 instructions a sample); a four not all below goes one by one, in order,
    then the next four."""
    cdef int64_t top[TOP_MAX]
    cdef int64_t key
    cdef Py_ssize_t n = xs.shape[0], i = 0, j, filled = 0, end
    cdef const double* p = &xs[0] if n else NULL
    # from_total_order_key(top[0]) once c keys are kept
    cdef double x, least = NAN
    while i < n:
        while i + 4 <= n and sq_four_below(p + i, least):
            i += 4
        end = min(i + 4, n)
        while i < end:
            x = p[i]
            i += 1
            if x < least:
                continue
            key = total_order_key(x)
            if filled < c:                       # the first c keys, by insertion
                j = filled
                while j > 0 and top[j - 1] > key:
                    top[j] = top[j - 1]
                    j -= 1
                top[j] = key
                filled += 1
                if filled == c:
                    least = from_total_order_key(top[0])
            elif key > top[0]:
                j = 1
                while j < c and top[j] < key:
                    top[j - 1] = top[j]
                    j += 1
                top[j - 1] = key
                least = from_total_order_key(top[0])
    return top[0]


cdef int select_whole(const double[::1] xs, const Py_ssize_t* at, Py_ssize_t m, int64_t* out) noexcept nogil:
    """out[j] = the at[j]-th smallest key (0-based, ascending) of every sample's; -1 out of memory."""
    cdef Py_ssize_t n = xs.shape[0], i
    cdef int64_t* keys = <int64_t*> malloc(n * sizeof(int64_t))
    if keys == NULL:
        return -1
    for i in range(n):
        keys[i] = total_order_key(xs[i])
    select_ranks(keys, n, at, m, out)
    free(keys)
    return 0


def sample_statistics(const double[::1] xs, bint moments, Py_ssize_t batches, double t, tuple ranks):
    """`one_pass`, to Python."""
    return one_pass(xs, moments, batches, t, ranks)


cdef tuple one_pass(const double[::1] xs, bint moments, Py_ssize_t batches, double t, tuple ranks):
    """(mean, M2, half-width, order statistics) of the samples from one pass over them:

    * mean, M2: `welford`'s (when `moments`; else 0.0);
    * half-width: `half_width` over `batch_means(xs, batches)` with t (when batches > 0; else NaN);
    * order statistics: for each rank (1-based, ascending) the rank-th smallest sample in IEEE
      totalOrder, bits and all, as a tuple.

    Several ranks, or the ranks of a short array, are selected among all the samples' keys
    from one partitioning, but for one rank among the TOP_MAX greatest of a short array (a
    short run's p99), kept while scanning. The one rank of a long array (the JSON's p99) is first bracketed by
    the order statistics of PROBES evenly spaced samples (widely), the pass keeps only the
    keys inside the bracket (~2 % of them for the p99), and the rank is selected among them;
    a bracket that missed its rank (samples whose order the probes misread) falls back on all
    the keys: the value is the same either way.
    """
    cdef Py_ssize_t n = xs.shape[0], m = len(ranks), j
    cdef int status = 0
    cdef Running a
    cdef Bracket b
    cdef bint bracketed = m == 1 and n >= WHOLE_BELOW
    if batches > 0 and n // batches < 1:
        raise ValueError("sample_statistics needs at least one sample per batch")
    for j in range(m):
        if not 1 <= ranks[j] <= n or (j and ranks[j] < ranks[j - 1]):
            raise ValueError("ranks are ascending, from 1 to the number of samples")
    cdef Py_ssize_t* at = <Py_ssize_t*> malloc((m + 1) * sizeof(Py_ssize_t))
    cdef int64_t* key = <int64_t*> malloc((m + 1) * sizeof(int64_t))
    running_start(&a, moments, n, batches, <double*> malloc((batches + 1) * sizeof(double)))
    b.keys = NULL
    try:
        if at == NULL or key == NULL or a.means == NULL:
            raise MemoryError()
        for j in range(m):
            at[j] = ranks[j] - 1
        with nogil:
            if bracketed:
                status = bracket_from_probes(xs, at[0] + 1, &b)
            if status == 0:
                sample_pass(xs, &a, &b if bracketed else NULL)
                if bracketed and bracket_holds(&b, at[0] + 1):
                    key[0] = select_key(b.keys, b.seen, at[0] - b.below)
                elif m == 1 and not bracketed and n - at[0] <= TOP_MAX:
                    key[0] = select_top(xs, n - at[0])
                elif m:
                    status = select_whole(xs, at, m, key)
                    if bracketed:
                        count_missed()
        if status < 0:
            raise MemoryError()
        h = half_width(a.means, batches, t) if batches > 0 else NAN
        return a.mean, a.m2, h, tuple([from_total_order_key(key[j]) for j in range(m)])
    finally:
        free(b.keys); free(a.means); free(at); free(key)


def observe_statistics(const double[::1] xs, moments, tuple qs, Py_ssize_t batches, Py_ssize_t ci_min,
                       double t):
    """(mean, ci, cv2, the qs-quantiles) of an observe's samples, the report's formulas around
    `one_pass` (sq.results.stats._one_pass names them; one call per observe
    and run, no Python frame between): the mean (NaN without samples); the half-width of
    `batches` batch means with t, +inf below `ci_min` samples; cv2 = (M2 / (n - 1)) / mean^2
    (`stats.ieee_div`'s IEEE results, NaN below 2 samples); each q-quantile the ceil(q n)-th
    smallest sample (rank clamped to [1, n]; NaN without samples), qs ascending. `moments`:
    Welford's (mean, M2) of these samples when already known (the engine's), else None."""
    return _observe_statistics(xs, moments, qs, batches, ci_min, t)


def json_values(tuple qs, Py_ssize_t batches, Py_ssize_t ci_min, double t, xs, moments=None):
    """`observe_statistics` of `xs` with one quantile, as (mean, ci, cv2, the quantile): the values
    an observe's JSON text reads (sq.results.stats.json_values gives the first four arguments).
    `xs` is read as it is when it is a C-contiguous float64 buffer (an engine's array or a suffix
    of one, every run: no Python frame, no numpy call), else converted."""
    cdef const double[::1] view
    try:
        view = xs
    except (TypeError, ValueError, BufferError):   # not such a buffer: numpy's float64 array of it
        view = np.ascontiguousarray(xs, dtype=np.float64)
    mean, ci, cv2, values = _observe_statistics(view, moments, qs, batches, ci_min, t)
    return mean, ci, cv2, values[0]


cdef tuple _observe_statistics(const double[::1] xs, moments, tuple qs, Py_ssize_t batches, Py_ssize_t ci_min,
                               double t):
    cdef Py_ssize_t n = xs.shape[0], j
    cdef Py_ssize_t used = batches if n >= ci_min else 0
    cdef double mean, m2, y
    ranks = []
    for j in range(len(qs) if n else 0):
        ranks.append(rank_of(qs[j], n))
    mean, m2, ci, values = one_pass(xs, moments is None, used, t, tuple(ranks))
    if moments is not None:
        mean, m2 = moments
    if n >= 2:
        y = mean * mean
        cv2 = (m2 / <double> (n - 1)) / y if y != 0.0 else ieee_div(m2 / <double> (n - 1), y)
    else:
        cv2 = NAN
    return mean if n else NAN, ci if used else INFINITY, cv2, values if n else (NAN,) * len(qs)


cpdef double ieee_div(double x, double y) noexcept nogil:
    """x / y with IEEE results for y == 0 (±inf, or NaN for 0/0 and NaN/0) instead of
    ZeroDivisionError: numpy's float64 division without its warning context, which costs more
    than the division in a report built per run. (cdivision: C's own x / y.)"""
    if y == 0.0 and (x == 0.0 or x != x):
        return NAN
    return x / y


cpdef Py_ssize_t rank_of(double q, Py_ssize_t n) noexcept nogil:
    """The q-quantile's rank among n samples: ceil(q·n), clamped to [1, n]."""
    cdef Py_ssize_t r = <Py_ssize_t> ceil(q * <double> n)
    return min(max(r, 1), n)


cdef void count_missed() noexcept nogil:
    global brackets_missed
    brackets_missed += 1


def order_statistics(const double[::1] xs, tuple ranks):
    """The ranks-th smallest samples (1-based, ascending) in IEEE totalOrder, bits and all."""
    return sample_statistics(xs, False, 0, NAN, ranks)[3]


# -- gauges: a step function over [start, end] -----------------------------------

cdef inline double nan_max(double a, double b) noexcept nogil:
    """numpy's `maximum`: NaN if either operand is NaN."""
    if a != a or b != b:
        return NAN
    return a if a > b else b


cdef inline double nan_min(double a, double b) noexcept nogil:
    if a != a or b != b:
        return NAN
    return a if a < b else b


cdef struct Windows:
    # `batches` equal windows of [start, end] accumulating v*overlap
    double start, end, width
    Py_ssize_t batches
    bint ordered        # finite bounds: monotone in the window index
    Py_ssize_t first    # no window before it overlaps the segments to come
    double prev_a
    double* acc


cdef inline double window_lo(Windows* ws, Py_ssize_t w) noexcept nogil:
    # bounds come from the index, never stepped to, so rounding cannot drift
    return ws.start if w == 0 else ws.start + <double>w * ws.width


cdef inline double window_hi(Windows* ws, Py_ssize_t w) noexcept nogil:
    return ws.end if w == ws.batches - 1 else ws.start + <double>(w + 1) * ws.width


cdef Windows windows_new(double start, double end, double width, double[::1] acc):
    cdef Windows ws
    ws.start, ws.end, ws.width = start, end, width
    ws.batches = acc.shape[0]
    ws.ordered = isfinite(start) and isfinite(end) and isfinite(width) and width >= 0.0
    ws.first = 0
    ws.prev_a = -INFINITY
    ws.acc = &acc[0]
    return ws


cdef inline void windows_add(Windows* ws, double a, double b, double v) noexcept nogil:
    """Add v*overlap to every window the segment [a, b] overlaps by a
    positive time, overlap = min(b, w_hi) - max(a, w_lo).

    With ordered windows and segments in time order, the windows a
    segment can overlap start at a pointer that only moves forward; it
    starts over if a segment starts earlier than the last, and every
    window is tried when the bounds are not finite.
    """
    cdef Py_ssize_t w
    cdef double lo, overlap
    if not ws.ordered or a < ws.prev_a:
        ws.first = 0
    ws.prev_a = a
    if ws.ordered:
        while ws.first < ws.batches - 1 and window_hi(ws, ws.first) <= a:
            ws.first += 1
    for w in range(ws.first, ws.batches):
        lo = window_lo(ws, w)
        if ws.ordered and lo >= b:
            break
        overlap = nan_min(b, window_hi(ws, w)) - nan_max(a, lo)
        if overlap > 0.0:
            ws.acc[w] += v * overlap


def window_areas(const double[::1] a, const double[::1] b, const double[::1] v,
                 double start, double end, double width, Py_ssize_t batches):
    """Each window's integral: the sum from +0.0, in segment order, of
    v[k]*overlap over the segments [a[k], b[k]] overlapping it by a
    positive time. Window w is [start + w*width, start + (w+1)*width],
    the first starting at `start` and the last ending at `end`."""
    if not (a.shape[0] == b.shape[0] == v.shape[0]):
        raise ValueError("segment arrays differ in length")
    if batches < 1:
        raise ValueError("batches must be at least 1")
    areas = np.zeros(batches, dtype=np.float64)
    cdef Windows ws = windows_new(start, end, width, areas)
    cdef Py_ssize_t k
    with nogil:
        for k in range(a.shape[0]):
            windows_add(&ws, a[k], b[k], v[k])
    return areas


def gauge_pass(const double[::1] times, const double[::1] values,
               double start, double end, Py_ssize_t batches):
    """One pass over the change points of a step function.

    Segment k holds values[k] on [a, b] = [max(times[k], start),
    min(times[k+1] or end, end)] (max and min NaN-propagating, as numpy's)
    and counts only if b > a. Returns (held, total, least, greatest, areas):

    * held: the number of segments that count;
    * total: the sum of v*(b - a) over them, left to right from +0.0;
    * least, greatest: a fold from +inf / -inf over their values, NaN
      skipped, a tie (-0 against +0) won by the later segment, as in pyserq;
    * areas: `window_areas` of those segments, width (end - start)/batches.
    """
    cdef Py_ssize_t n = times.shape[0], k, held = 0
    if values.shape[0] != n:
        raise ValueError("times and values differ in length")
    if batches < 1:
        raise ValueError("batches must be at least 1")
    areas = np.zeros(batches, dtype=np.float64)
    cdef Windows ws = windows_new(start, end, (end - start) / <double>batches, areas)
    cdef double a, b, v, total = 0.0, least = INFINITY, greatest = -INFINITY
    with nogil:
        for k in range(n):
            a = nan_max(times[k], start)
            b = nan_min(times[k + 1] if k + 1 < n else end, end)
            if not b > a:
                continue
            v = values[k]
            held += 1
            total += v * (b - a)
            if v <= least:
                least = v
            if v >= greatest:
                greatest = v
            windows_add(&ws, a, b, v)
    return held, total, least, greatest, areas


# -- inter-token gaps: the 1 % log histogram -----------------------------------------

cdef inline double clamp(double middle, double least, double greatest) noexcept nogil:
    """Python's `min(max(middle, least), greatest)`."""
    cdef double r = least if least > middle else middle
    return greatest if greatest < r else r


cdef double histogram_quantile(const int64_t[::1] counts, const double[::1] least,
                               const double[::1] greatest, int64_t kmin, Bucket* low, Bucket* top,
                               int64_t rank, double bucket) noexcept nogil:
    """The first bucket upward whose running count reaches `rank`: its
    geometric middle clamped to the least and greatest gap it holds."""
    cdef int64_t seen = low.count
    cdef Py_ssize_t i
    if seen >= rank:
        return clamp(0.0, low.least, low.greatest)
    for i in range(counts.shape[0]):
        seen += counts[i]
        if counts[i] and seen >= rank:
            return clamp(exp((<double>(kmin + i) + 0.5) * bucket), least[i], greatest[i])
    return clamp(INFINITY, top.least, top.greatest)


def histogram_quantiles(int64_t kmin, const int64_t[::1] counts, const double[::1] least,
                        const double[::1] greatest, tuple low, tuple top, const int64_t[::1] ranks,
                        double bucket):
    """For each rank (1..n), the histogram quantile of chapter 08 §3.4: walking
    the buckets upward (`low` = (count, least, greatest) of x <= 0 and NaN, then
    bucket kmin + i, then `top`, the +inf gaps), the first whose running count
    reaches the rank gives its geometric middle exp((k + 0.5)*bucket) (0 for the
    low bucket, +inf for the top one), clamped to the least and greatest gap it holds.
    """
    cdef Bucket lo, hi
    lo.count, lo.least, lo.greatest = low
    hi.count, hi.least, hi.greatest = top
    out = np.empty(ranks.shape[0], dtype=np.float64)
    cdef double[::1] res = out
    cdef Py_ssize_t j
    for j in range(ranks.shape[0]):
        res[j] = histogram_quantile(counts, least, greatest, kmin, &lo, &hi, ranks[j], bucket)
    return out


def itl_histogram(const double[::1] gaps, double bucket):
    """The histogram of a list of gaps: (kmin, counts, least, greatest, low, top) with
    the bucket of x > 0 finite at k = floor(log(x) / bucket) (libm's log, as Python's
    math.log), cells for every k from the least to the greatest one present."""
    cdef Py_ssize_t n = gaps.shape[0], i
    cdef int32_t kmin = 2147483647, kmax = -2147483647 - 1, k
    cdef double x
    cdef Bucket lo, hi
    lo.count = hi.count = 0
    lo.least = lo.greatest = hi.least = hi.greatest = NAN
    with nogil:
        for i in range(n):
            x = gaps[i]
            if x > 0.0 and isfinite(x):
                k = itl_bucket(x, bucket)
                kmin = min(kmin, k)
                kmax = max(kmax, k)
    cdef Py_ssize_t nk = kmax - kmin + 1 if kmax >= kmin else 0
    counts = np.zeros(nk, dtype=np.int64)
    least = np.full(nk, NAN)
    greatest = np.full(nk, NAN)
    cdef int64_t[::1] c = counts
    cdef double[::1] lst = least
    cdef double[::1] grt = greatest
    cdef Bucket cell
    with nogil:
        for i in range(n):
            x = gaps[i]
            if not x > 0.0:
                bucket_add(&lo, x)
            elif not isfinite(x):
                bucket_add(&hi, x)
            else:
                k = itl_bucket(x, bucket) - kmin
                cell.count, cell.least, cell.greatest = c[k], lst[k], grt[k]
                bucket_add(&cell, x)
                c[k], lst[k], grt[k] = cell.count, cell.least, cell.greatest
    return (int(kmin) if nk else 0, counts, least, greatest,
            (lo.count, lo.least, lo.greatest), (hi.count, hi.least, hi.greatest))

# The inter-token-gap histogram of chapter 08 §3.4: 1 %-wide log buckets, one below them all
# for x <= 0 and NaN, one above for +inf. The engine fills one per step stage as tokens arrive
# (`histogram_add`), so no gap is stored; sq.results._stats builds the same from a list of gaps in one
# pass of its own, and the tests hold the two to each other.
from libc.math cimport floor, isfinite, log, log1p
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy


cdef struct Bucket:
    int64_t count
    double least
    double greatest


cdef struct Histogram:
    int64_t n
    double total            # the gaps' left-to-right sum from +0.0
    Bucket low
    Bucket top
    Bucket* cells           # bucket k at cells[k - kmin], for kmin <= k < kmin + nk
    int64_t kmin
    int64_t nk
    double last_gap         # the last finite positive gap and its cell: a step's tokens share their gap
    Bucket* last_cell       # (in cells: set after they grow to take it)


cdef inline void bucket_add(Bucket* c, double x) noexcept nogil:
    # minNum/maxNum: a NaN never displaces a number; a tie keeps the first
    if c.count == 0:
        c.least = x
        c.greatest = x
    else:
        if c.least != c.least or (x == x and x < c.least):
            c.least = x
        if c.greatest != c.greatest or (x == x and x > c.greatest):
            c.greatest = x
    c.count += 1


cdef inline double itl_bucket_width() noexcept nogil:
    return log1p(0.01)              # what Python's math.log1p(0.01) gives: the same libm


cdef inline int32_t itl_bucket(double x, double width) noexcept nogil:
    """The bucket of a finite x > 0 (finite positive doubles span about ±75000 buckets)."""
    return <int32_t> floor(log(x) / width)


cdef inline int histogram_add(Histogram* h, double gap) noexcept nogil:
    """One gap in (-1: out of memory); the cells grow to cover its bucket."""
    cdef int32_t k
    h.n += 1
    h.total += gap
    if gap == h.last_gap and gap > 0.0:
        # the last gap again (a step's tokens share it): its bucket is covered and already
        # holds this number as its least or above, as its greatest or below: only the count moves
        h.last_cell.count += 1
        return 0
    if not gap > 0.0:
        bucket_add(&h.low, gap)
    elif not isfinite(gap):
        bucket_add(&h.top, gap)
    else:
        k = itl_bucket(gap, itl_bucket_width())
        if (k < h.kmin or k >= h.kmin + h.nk) and histogram_cover(h, k) < 0:
            return -1
        h.last_gap = gap
        h.last_cell = &h.cells[k - h.kmin]
        bucket_add(h.last_cell, gap)
    return 0


cdef inline int histogram_cover(Histogram* h, int64_t k) noexcept nogil:
    """Widen the cells to take bucket k, with room to spare on the side that grew."""
    cdef int64_t lo = h.kmin if h.nk else k, hi = h.kmin + h.nk if h.nk else k + 1
    cdef int64_t width, nk, kmin
    cdef Bucket* cells
    if k < lo:
        lo = k
    if k >= hi:
        hi = k + 1
    width = hi - lo
    nk = width + 32 + width // 2
    kmin = lo - (nk - width) if k < h.kmin and h.nk else lo
    cells = <Bucket*> calloc(nk, sizeof(Bucket))
    if cells == NULL:
        return -1
    if h.nk:
        memcpy(&cells[h.kmin - kmin], h.cells, h.nk * sizeof(Bucket))
    free(h.cells)
    h.cells = cells
    h.kmin = kmin
    h.nk = nk
    return 0

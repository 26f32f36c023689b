# The inter-token-gap histogram of chapter 08 §3.4, shared by the engine (which fills one per
# step stage as tokens arrive, so no gap is stored) and sq._stats (which builds one from a list
# of gaps): 1 %-wide log buckets, one below them all for x <= 0 and NaN, one above for +inf.
from libc.math cimport floor, log, log1p
from libc.stdint cimport int32_t, int64_t


cdef struct Bucket:
    int64_t count
    double least
    double greatest


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

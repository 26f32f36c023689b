# What a run with `samples="none"` keeps instead of samples (docs/guide.md, "Long runs"):
# per observe a Summary (exact count, Welford moments, total-order min and max; one-pass batch
# means; the 1 % log histogram of sq/results/_itl.pxd on each sign for quantiles), per gauge a Fold
# (the exact time integral and extremes; one-pass time windows). Memory is constant in the
# run's length. The engine folds as it records; `sq._engine.summary_of(list)` folds a list the
# same way, for the tests.
from libc.math cimport frexp, isfinite, ldexp, signbit
from libc.stdint cimport int64_t, INT64_MAX
from libc.string cimport memcpy

from sq.results._itl cimport Histogram, histogram_add

# A batch (or window) level holds at most MAX_BATCHES; the 41st starts a level twice as wide
# (pairs summed), so between MAX_BATCHES // 2 and MAX_BATCHES complete ones are kept.
cdef enum:
    MAX_BATCHES = 40


cdef struct Batches:
    double sums[MAX_BATCHES + 1]   # complete batches, then the one filling
    int64_t size                   # samples per batch: a power of two
    int64_t full                   # complete batches
    int64_t fill                   # samples in the one filling


cdef struct Summary:
    int64_t n
    double mean                    # Welford, as sq.results.stats.welford, step for step
    double m2
    int64_t least_key              # total-order keys of the least and greatest sample
    int64_t greatest_key
    Batches batches
    Histogram positive             # x > 0 (+inf on top); zeros in its low bucket
    Histogram negative             # -x for x < 0
    int64_t nan_low                # NaNs with the sign bit (first in total order)
    int64_t nan_high               # NaNs without it (last)


cdef struct Fold:
    # a gauge's step function: the value held since `since` (has: a value was read)
    int has
    double since
    double value
    int64_t held                   # segments of positive length within [start, end]
    double total                   # their v*(b - a), left to right from +0.0
    double least
    double greatest
    # time windows: window j is [start + j*width, start + (j+1)*width]
    double start
    double width
    double sums[MAX_BATCHES + 1]
    int64_t full                   # complete windows before the current one


cdef inline int64_t total_order_key(double x) noexcept nogil:
    """An int64 whose signed order is IEEE 754 totalOrder of the doubles
    (-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN); its own inverse."""
    cdef int64_t bits
    memcpy(&bits, &x, 8)
    if bits < 0:
        bits ^= INT64_MAX
    return bits


cdef inline double from_total_order_key(int64_t key) noexcept nogil:
    cdef double x
    if key < 0:
        key ^= INT64_MAX
    memcpy(&x, &key, 8)
    return x


cdef inline void batches_add(Batches* b, double x) noexcept nogil:
    cdef int64_t i
    if b.fill == 0:
        if b.full == MAX_BATCHES:
            for i in range(MAX_BATCHES // 2):
                b.sums[i] = b.sums[2 * i] + b.sums[2 * i + 1]
            b.full = MAX_BATCHES // 2
            b.size *= 2
        b.sums[b.full] = -0.0      # the neutral start of sq.results._stats.batch_means
    b.sums[b.full] += x
    b.fill += 1
    if b.fill == b.size:
        b.full += 1
        b.fill = 0


cdef inline void summary_start(Summary* s) noexcept nogil:
    s.batches.size = 1


cdef inline int summary_add(Summary* s, double x) noexcept nogil:
    """One sample in (-1: out of memory)."""
    cdef double d = x - s.mean
    cdef int64_t key = total_order_key(x)
    s.n += 1
    s.mean += d / <double> s.n
    s.m2 += d * (x - s.mean)
    if s.n == 1 or key < s.least_key:
        s.least_key = key
    if s.n == 1 or key > s.greatest_key:
        s.greatest_key = key
    batches_add(&s.batches, x)
    if x != x:
        if signbit(x):
            s.nan_low += 1
        else:
            s.nan_high += 1
        return 0
    if x < 0.0:
        return histogram_add(&s.negative, -x)
    return histogram_add(&s.positive, x)


cdef inline void fold_start(Fold* f, double start, double horizon) noexcept nogil:
    """The first windows are span/20 · 2^-k wide, about 2^-1000 (k >= 40): as time passes they
    double (some twenty additions per doubling), so they end as sq.results.stats.gauge_stats's 20
    windows of span/20 at the horizon, and a run that ends at any other time (an arrivals
    limit, a stop) still has 20 to 40 of them."""
    cdef double span = horizon - start
    cdef int e
    f.start = start
    f.width = ldexp(1.0, -1000)
    if isfinite(span) and span > 0.0:
        frexp(span / 20.0, &e)      # span/20 = m · 2^e, 0.5 <= m < 1
        f.width = ldexp(span / 20.0, -max(40, 1000 + e))
        if not f.width > 0.0:       # a span so short it underflows
            f.width = ldexp(1.0, -1074)
    f.least = 1.0 / 0.0
    f.greatest = -1.0 / 0.0


cdef inline void fold_windows(Fold* f, double a, double b, double v) noexcept nogil:
    """v times the part of [a, b] (a >= start) in each window, widening windows as time passes."""
    cdef double hi
    cdef int64_t i
    while True:
        if f.full == MAX_BATCHES:
            for i in range(MAX_BATCHES // 2):
                f.sums[i] = f.sums[2 * i] + f.sums[2 * i + 1]
            f.sums[MAX_BATCHES // 2] = f.sums[MAX_BATCHES]
            for i in range(MAX_BATCHES // 2 + 1, MAX_BATCHES + 1):
                f.sums[i] = 0.0
            f.full = MAX_BATCHES // 2
            f.width *= 2.0
        hi = f.start + <double> (f.full + 1) * f.width
        if b < hi:
            if b > a:
                f.sums[f.full] += v * (b - a)
            return
        if hi > a:
            f.sums[f.full] += v * (hi - a)
            a = hi
        f.full += 1


cdef inline void fold_segment(Fold* f, double a, double b, double v) noexcept nogil:
    """The value v held over [a, b], clipped to start on the left (sq.results._stats.gauge_pass)."""
    if a < f.start:
        a = f.start
    if not b > a:
        return
    f.held += 1
    f.total += v * (b - a)
    if v <= f.least:
        f.least = v
    if v >= f.greatest:
        f.greatest = v
    fold_windows(f, a, b, v)


cdef inline void fold_change(Fold* f, double now, double v) noexcept nogil:
    """The gauge reads v from `now` on (called only when the value changes)."""
    if f.has:
        fold_segment(f, f.since, now, f.value)
    f.has = 1
    f.since = now
    f.value = v

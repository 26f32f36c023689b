"""sq/stats.py as the report engineer wrote it, before the sq._stats kernels:
the "before" column of benchmarks/bench_report.py (frozen; not imported by sq).

Bit equality with pyserq matters (reports are compared as JSON text), so
every sum here runs left to right in record order, as a plain loop
would: numpy's pairwise `sum` is avoided, `cumsum` (sequential) is used
where a vector form keeps the same order.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

BATCHES = 20
T_19 = 2.093          # Student t, 97.5 %, 19 degrees of freedom
CI_MIN_SAMPLES = 40   # below this an observation's half-width is +inf
ITL_BUCKET = math.log1p(0.01)  # log-width of a 1 % histogram bucket

NAN = float("nan")
INF = float("inf")


# -- sums in record order ----------------------------------------------------

def seq_sum(xs: np.ndarray) -> float:
    """Left-to-right float sum (what a loop gives, unlike numpy's pairwise sum)."""
    if len(xs) == 0:
        return 0.0
    # a loop starts from +0.0, so an all -0.0 sum is +0.0; cumsum starts
    # from the first element, and + 0.0 makes up the difference
    return float(np.cumsum(xs, dtype=np.float64)[-1]) + 0.0


def _as_f64(xs) -> np.ndarray:
    return np.ascontiguousarray(xs, dtype=np.float64)


# -- observations ------------------------------------------------------------

@dataclass(frozen=True)
class Moments:
    """Welford's running mean and sample variance."""

    n: int
    mean: float
    variance: float

    @property
    def cv2(self) -> float:
        with np.errstate(all="ignore"):
            return float(np.float64(self.variance) / (np.float64(self.mean) * np.float64(self.mean)))


def welford(xs) -> Moments:
    """`m += (x - m)/k; M2 += d*(x - m)`, in record order; NaN where undefined.

    A recurrence: every step depends on the previous one, so this is a
    scalar loop (about 0.3 s per million samples in CPython).
    """
    n = 0
    mean = 0.0
    m2 = 0.0
    for x in _as_f64(xs).tolist():
        n += 1
        d = x - mean
        mean += d / n
        m2 += d * (x - mean)
    return Moments(n, mean if n else NAN, m2 / (n - 1) if n >= 2 else NAN)


def mean_or_nan(xs) -> float:
    """Welford mean (the one pyserq reports for wait/service samples); NaN if empty."""
    return welford(xs).mean


def batch_half_width(xs, batches: int = BATCHES) -> float:
    """Half-width of the batch-means 95 % CI: consecutive equal batches of
    `floor(n/batches)` samples (the tail dropped), t · sqrt(s²/batches)."""
    xs = _as_f64(xs)
    size = len(xs) // batches
    if batches < 2 or size < 1:
        return INF
    chunks = xs[: size * batches].reshape(batches, size)
    means = [s / size for s in np.cumsum(chunks, axis=1)[:, -1].tolist()]
    k = float(len(means))
    m = 0.0
    for x in means:
        m += x
    m /= k
    var = 0.0
    for x in means:
        var += (x - m) * (x - m)
    var /= k - 1.0
    t = T_19 if batches == BATCHES else 2.0
    return t * math.sqrt(var / k) if var == var else NAN


def total_order_keys(xs: np.ndarray) -> np.ndarray:
    """int64 keys whose order is IEEE 754 totalOrder (-NaN < -inf < … < -0 < +0 < … < +NaN)."""
    bits = _as_f64(xs).view(np.int64)
    return bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))


def quantile(xs, q: float) -> float:
    """The ceil(q·n)-th smallest sample in IEEE total order (rank clamped to [1, n])."""
    xs = _as_f64(xs)
    n = len(xs)
    if n == 0:
        return NAN
    rank = min(max(math.ceil(q * n), 1), n)
    keys = np.partition(total_order_keys(xs), rank - 1)
    key = keys[rank - 1 : rank]
    # the key map is its own inverse
    return float(total_order_keys(key.view(np.float64)).view(np.float64)[0])


@dataclass(frozen=True)
class ObserveStats:
    count: int
    mean: float
    ci: float
    cv2: float
    p99: float


def observe_stats(samples) -> ObserveStats:
    xs = _as_f64(samples)
    m = welford(xs)
    ci = batch_half_width(xs) if m.n >= CI_MIN_SAMPLES else INF
    cv2 = m.cv2 if m.n >= 2 else NAN
    return ObserveStats(m.n, m.mean, ci, cv2, quantile(xs, 0.99))


# -- time averages -----------------------------------------------------------

def time_mean(integral: float, value: float, start: float, end: float) -> float:
    """Mean of a step function from its integral over [start, end]; the held
    value when the span is empty."""
    span = float(end) - float(start)
    if not span > 0.0:
        return float(value)
    return float(integral) / span


@dataclass(frozen=True)
class GaugeStats:
    mean: float
    ci: float
    min: float
    max: float


def gauge_stats(times, values, start: float, end: float,
                batches: int = BATCHES) -> GaugeStats:
    """Time average over [start, end] of the step function holding values[k]
    from times[k], a batch-means CI over `batches` equal windows, and the
    extremes held for a positive time."""
    start, end = float(start), float(end)
    span = end - start
    ts, vs = _as_f64(times), _as_f64(values)
    if not span > 0.0 or len(ts) == 0 or batches == 0:
        return GaugeStats(NAN, INF, NAN, NAN)
    nxt = np.append(ts[1:], end)
    a = np.maximum(ts, start)
    b = np.minimum(nxt, end)
    held = b > a
    a, b, v = a[held], b[held], vs[held]
    if len(v) == 0:
        return GaugeStats(NAN, INF, NAN, NAN)
    with np.errstate(all="ignore"):
        total = seq_sum(v * (b - a))
    width = span / batches
    windows = _window_areas(a, b, v, start, end, width, batches)
    mean = float(total) / span
    lo = float(np.fmin.reduce(v, initial=INF))
    hi = float(np.fmax.reduce(v, initial=-INF))
    ci = batch_half_width([w / width for w in windows], batches) if batches >= 2 else INF
    return GaugeStats(mean, ci, lo, hi)


def _window_areas(a, b, v, start, end, width, batches) -> list[float]:
    """Each window's integral: the sum, in segment order, of v·overlap over
    the segments overlapping it by a positive time.

    Window bounds are computed from their index (start + w·width; the
    first starts at `start`, the last ends at `end`), never stepped to.
    Segments are in time order, so each window's candidates are a slice
    (widened by one on each side; a non-positive overlap adds nothing).
    """
    areas = []
    for w in range(batches):
        w_lo = start if w == 0 else start + w * width
        w_hi = end if w == batches - 1 else start + (w + 1) * width
        first = max(int(np.searchsorted(b, w_lo, side="right")) - 1, 0)
        last = min(int(np.searchsorted(a, w_hi, side="left")) + 1, len(a))
        overlap = np.minimum(b[first:last], w_hi) - np.maximum(a[first:last], w_lo)
        keep = overlap > 0.0
        with np.errstate(all="ignore"):
            areas.append(seq_sum(v[first:last][keep] * overlap[keep]))
    return areas


# -- inter-token gaps ---------------------------------------------------------

def itl_quantiles(gaps, qs=(0.5, 0.99)) -> tuple[float, ...]:
    """Quantiles of the 1 %-bucket log histogram of chapter 08 §3.4.

    Bucket k = floor(ln x / ln 1.01) for x > 0, one bucket below all for
    x <= 0 (and NaN); the quantile is the bucket's geometric middle
    clamped to the least and greatest gap it holds (0 for the low bucket).
    """
    xs = _as_f64(gaps)
    n = len(xs)
    if n == 0:
        return tuple(NAN for _ in qs)
    cells = _itl_buckets(xs)
    counts = np.cumsum([c[1] for c in cells])
    out = []
    for q in qs:
        rank = min(max(math.ceil(q * n), 1), n)
        k, _, lo, hi = cells[int(np.searchsorted(counts, rank))]
        middle = 0.0 if k is None else math.exp((k + 0.5) * ITL_BUCKET)
        out.append(min(max(middle, lo), hi))
    return tuple(out)


def _itl_buckets(xs: np.ndarray) -> list[tuple]:
    """(k, count, least, greatest) per non-empty bucket, in increasing k
    (k None for the low bucket)."""
    cells = []
    positive = xs > 0.0
    low = xs[~positive]
    if len(low):
        lo, hi = low[0], low[0]
        for x in low.tolist():  # minNum/maxNum: a NaN never displaces a number
            lo, hi = _rmin(lo, x), _rmax(hi, x)
        cells.append((None, len(low), lo, hi))
    pos = xs[positive]
    if len(pos):
        k = _bucket_index(pos)
        order = np.argsort(k, kind="stable")
        k, pos = k[order], pos[order]
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        counts = np.diff(np.r_[starts, len(k)])
        least = np.minimum.reduceat(pos, starts)
        greatest = np.maximum.reduceat(pos, starts)
        cells += zip(k[starts].tolist(), counts.tolist(), least.tolist(), greatest.tolist())
    return cells


def _bucket_index(pos: np.ndarray) -> np.ndarray:
    """floor(ln x / ln 1.01) as libm computes it: numpy's vector log may differ
    from libm in the last bit, so values near a bucket edge are redone with
    math.log."""
    ratio = np.log(pos) / ITL_BUCKET
    k = np.floor(ratio)
    edge = np.abs(ratio - np.round(ratio)) < 1e-9 * np.maximum(1.0, np.abs(ratio))
    for i in np.flatnonzero(edge).tolist():
        k[i] = math.floor(math.log(float(pos[i])) / ITL_BUCKET)
    return k.astype(np.int64)


def _rmin(a: float, b: float) -> float:
    """min ignoring a NaN operand (IEEE minNum)."""
    return b if a != a else (a if b != b else min(a, b))


def _rmax(a: float, b: float) -> float:
    return b if a != a else (a if b != b else max(a, b))


def itl_mean(gaps) -> float:
    """The exact mean: a running sum over n; NaN without gaps."""
    xs = _as_f64(gaps)
    return seq_sum(xs) / len(xs) if len(xs) else NAN

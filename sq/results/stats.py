"""The statistics of a report, computed exactly as pyserq 0.1.2 does.

Bit equality with pyserq matters (reports are compared as JSON text), so
every sum here runs left to right in record order, as a plain loop
would (never numpy's pairwise `sum`). The per-sample loops are the typed
kernels of `sq.results._stats`; this module holds the formulas around them.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from sq.results import _stats
from sq.results.confidence import check_level, t_quantile
from sq.results.raw import GaugeFold, ItlHistogram, ObserveSummary

BATCHES = 20
T_19 = 2.093          # Student t, 97.5 %, 19 degrees of freedom (pyserq's, to 3 digits)
CI_MIN_SAMPLES = 40   # below this an observation's half-width is +inf
ITL_BUCKET = math.log1p(0.01)  # log-width of a 1 % histogram bucket

NAN = float("nan")
INF = float("inf")


# -- sums in record order ----------------------------------------------------

def seq_sum(xs) -> float:
    """Left-to-right float sum from +0.0 (what a loop gives, unlike numpy's pairwise sum)."""
    return _stats.seq_sum(_as_f64(xs))


def _as_f64(xs) -> np.ndarray:
    return np.ascontiguousarray(xs, dtype=np.float64)


# -- observations ------------------------------------------------------------

class Moments(NamedTuple):
    """Welford's running mean and sample variance (a named tuple: a frozen dataclass costs
    ~4x as much to make, and every observe of every run makes one)."""

    n: int
    mean: float
    variance: float

    @property
    def cv2(self) -> float:
        return ieee_div(self.variance, self.mean * self.mean)


ieee_div = _stats.ieee_div     # x / y with IEEE results for y == 0 (one definition, the kernels')


def welford(xs) -> Moments:
    """`d = x - m; m += d/k; M2 += d*(x - m)`, in record order; NaN where undefined."""
    return _moments(*_stats.welford(_as_f64(xs)))


def _moments(n: int, mean: float, m2: float) -> Moments:
    """Welford's running (n, mean, M2) as Moments: NaN where undefined."""
    return Moments(n, mean if n else NAN, m2 / (n - 1) if n >= 2 else NAN)


def mean_or_nan(xs) -> float:
    """Welford mean (the one pyserq reports for wait/service samples); NaN if empty."""
    return welford(xs).mean


def batch_half_width(xs, batches: int = BATCHES) -> float:
    """Half-width of the batch-means 95 % CI: consecutive equal batches of
    `floor(n/batches)` samples (the tail dropped), t · sqrt(s²/batches)."""
    xs = _as_f64(xs)
    if batches < 2 or len(xs) // batches < 1:
        return INF
    return _stats.batch_half_width(xs, batches, T_19 if batches == BATCHES else 2.0)


def means_half_width(means, t: float) -> float:
    """t · sqrt(s²/k) over k batch means (s² their sample variance, sums left to right)."""
    return _stats.means_half_width(_as_f64(means), t)


def one_pass_half_width(sums, size: float) -> float:
    """The batch-means half-width of a run that kept no samples: its k complete batches (or
    time windows) `size` wide, 40 of them first summed in pairs to pyserq's 20, then
    t(k-1) · sqrt(s²/k) over the k means sum/size."""
    sums = list(sums)
    if len(sums) == 2 * BATCHES:
        sums = [sums[2 * i] + sums[2 * i + 1] for i in range(BATCHES)]
        size *= 2
    if len(sums) < 2:
        return INF
    # t to pyserq's 3 digits (2.093 at its 20 batches)
    return means_half_width([x / size for x in sums], round(t_quantile(0.975, len(sums) - 1), 3))


def total_order_keys(xs) -> np.ndarray:
    """int64 keys whose order is IEEE 754 totalOrder (-NaN < -inf < … < -0 < +0 < … < +NaN)."""
    return _stats.total_order_keys(_as_f64(xs))


def quantile(xs, q: float) -> float:
    """The ceil(q·n)-th smallest sample in IEEE total order (rank clamped to [1, n])."""
    return quantiles(xs, (q,))[0]


def quantiles(xs, qs) -> tuple[float, ...]:
    """`quantile(xs, q)` for every q in `qs`, from one pass and one selection over the samples."""
    xs = _as_f64(xs)
    n = len(xs)
    if n == 0:
        return (NAN,) * len(qs)
    ranks = [_rank(q, n) for q in qs]
    order = sorted(range(len(ranks)), key=ranks.__getitem__)    # the kernel takes them ascending
    values = _stats.order_statistics(xs, tuple(ranks[i] for i in order))
    out = [NAN] * len(ranks)
    for i, v in zip(order, values):
        out[i] = v
    return tuple(out)


# The order statistics every observation reports beyond pyserq's p99, by field name: min and
# max are the quantiles 0 and 1 of the same function (ranks 1 and n).
SUMMARY_QUANTILES = (("min", 0.0), ("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99),
                     ("p999", 0.999), ("max", 1.0))


_rank = _stats.rank_of         # ceil(q·n), clamped to [1, n] (one definition, the kernels')


@dataclass(frozen=True)
class ObserveStats:
    count: int
    mean: float
    ci: float
    cv2: float
    min: float
    p50: float
    p90: float
    p95: float
    p99: float
    p999: float
    max: float


def summary_stats(s: ObserveSummary) -> ObserveStats:
    """`observe_stats` of the samples a Summary stands for: count, mean and cv2 the same to
    the bit; the CI from its one-pass batches; p99 from its histograms (within 0.5 %)."""
    m = Moments(s.n, s.mean if s.n else NAN, s.m2 / (s.n - 1) if s.n >= 2 else NAN)
    ci = one_pass_half_width(s.batch_sums, float(s.batch_size)) if m.n >= CI_MIN_SAMPLES else INF
    return ObserveStats(m.n, m.mean, ci, m.cv2 if m.n >= 2 else NAN, **_order_statistics(summary_quantiles, s))


def _order_statistics(quantiles_of, xs) -> dict[str, float]:
    """The SUMMARY_QUANTILES of samples (or of their summary) by field name, in one call."""
    return dict(zip((name for name, _ in SUMMARY_QUANTILES), quantiles_of(xs, [q for _, q in SUMMARY_QUANTILES])))


def summary_quantiles(s: ObserveSummary, qs) -> tuple[float, ...]:
    """`quantile` of the samples a Summary stands for: the rank-th in total order, read from
    the histograms (-NaN, the negatives' mirrored histogram, zeros and positives, +NaN), the
    least and greatest exactly."""
    return tuple(_summary_rank(s, _rank(q, s.n)) if s.n else NAN for q in qs)


def _summary_rank(s: ObserveSummary, rank: int) -> float:
    if rank == 1:
        return s.least
    if rank == s.n:
        return s.greatest
    r = rank - s.nan_low
    if r <= 0:
        return s.least                    # a -NaN, as the least
    if r <= s.negative.n:
        return -histogram_ranks(s.negative, [s.negative.n - r + 1])[0]
    r -= s.negative.n
    if r <= s.positive.n:
        return histogram_ranks(s.positive, [r])[0]
    return s.greatest                     # a +NaN, as the greatest


def observe_stats(samples) -> ObserveStats:
    xs = _as_f64(samples)
    return ObserveStats(len(xs), **_one_pass(xs, SUMMARY_QUANTILES))


# The JSON's order statistic (pyserq's report has no other).
JSON_QUANTILES = (("p99", 0.99),)


def json_statistics(xs, moments: tuple[float, float] | None = None) -> dict[str, float]:
    """The statistics of the samples that the JSON report gives beyond their count: mean, ci,
    cv2 and p99, from one pass over them (the same values as `observe_stats`'s). `moments`:
    Welford's (mean, M2) of these samples when already known (the engine keeps them as it
    records), else computed in the pass."""
    return _one_pass(_as_f64(xs), JSON_QUANTILES, moments)


# json_values(xs, moments=None): `json_statistics`' values in its order (mean, ci, cv2, p99), as a
# tuple: what a report's JSON text reads of each observe of every run (no dict between; the kernel
# called with the formulas' constants, no Python frame: an engine's array is read as it is)
json_values = functools.partial(_stats.json_values, tuple(q for _, q in JSON_QUANTILES), BATCHES, CI_MIN_SAMPLES,
                                T_19)


def _one_pass(xs: np.ndarray, quantiles, moments: tuple[float, float] | None = None) -> dict[str, float]:
    """mean, ci, cv2 and the `quantiles` ((name, q) pairs, q ascending) by field name, from
    one pass over the samples: Welford's moments (unless given), the batch means and the order
    statistics' keys read together (`_stats.observe_statistics`: the formulas; a CI from
    BATCHES batch means with T_19, from CI_MIN_SAMPLES samples)."""
    mean, ci, cv2, values = _stats.observe_statistics(xs, moments, tuple(q for _, q in quantiles), BATCHES,
                                                      CI_MIN_SAMPLES, T_19)
    out = {"mean": mean, "ci": ci, "cv2": cv2}
    for (name, _), value in zip(quantiles, values):
        out[name] = value
    return out


def order_statistics(xs) -> dict[str, float]:
    """The SUMMARY_QUANTILES of the samples by field name."""
    return _order_statistics(quantiles, xs)


# -- time averages -----------------------------------------------------------

def time_mean(integral: float, value: float, start: float, end: float) -> float:
    """Mean of a step function from its integral over [start, end]; the held
    value when the span is empty."""
    return time_means(((integral, value),), start, end)[0]


# `time_mean` of each (integral, value) pair (an `Area`) over one span: a report row's time
# averages in one call (typed: it runs for every row of every run).
time_means = _stats.time_means


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
    held, total, lo, hi, windows = _stats.gauge_pass(ts, vs, start, end, batches)
    if held == 0:
        return GaugeStats(NAN, INF, NAN, NAN)
    width = span / batches
    ci = batch_half_width([w / width for w in windows.tolist()], batches) if batches >= 2 else INF
    return GaugeStats(total / span, ci, lo, hi)


def fold_stats(f: GaugeFold, start: float, end: float) -> GaugeStats:
    """`gauge_stats` of a gauge folded as it ran: mean, min and max the same to the bit; the
    CI from its one-pass windows (the very 20 windows of gauge_stats when the run reached
    its horizon, up to rounding)."""
    if not float(end) - float(start) > 0.0 or f.held == 0:
        return GaugeStats(NAN, INF, NAN, NAN)
    return GaugeStats(f.total / (float(end) - float(start)), one_pass_half_width(f.window_sums, f.window),
                      f.least, f.greatest)


def _window_areas(a, b, v, start, end, width, batches) -> list[float]:
    """Each window's integral: the sum, in segment order, of v·overlap over
    the segments [a, b] overlapping it by a positive time. Window bounds are
    computed from their index (start + w·width; the first starts at
    `start`, the last ends at `end`), never stepped to."""
    return _stats.window_areas(_as_f64(a), _as_f64(b), _as_f64(v), float(start), float(end),
                               float(width), batches).tolist()


# -- inter-token gaps ---------------------------------------------------------

def itl_histogram(gaps) -> ItlHistogram:
    """The histogram a list of gaps makes (what the engine builds as tokens arrive)."""
    xs = _as_f64(gaps)
    kmin, counts, least, greatest, low, top = _stats.itl_histogram(xs, ITL_BUCKET)
    return ItlHistogram(len(xs), seq_sum(xs), kmin, counts, least, greatest, low, top)


def itl_quantiles(gaps, qs=(0.5, 0.99)) -> tuple[float, ...]:
    """Quantiles of the 1 %-bucket log histogram of chapter 08 §3.4 (of an
    ItlHistogram, or of the one a list of gaps makes).

    Bucket k = floor(ln x / ln 1.01) for x > 0, one bucket below all for
    x <= 0 (and NaN); the quantile is the bucket's geometric middle
    clamped to the least and greatest gap it holds (0 for the low bucket).
    """
    hist = gaps if isinstance(gaps, ItlHistogram) else itl_histogram(gaps)
    if hist.n == 0:
        return (NAN,) * len(qs)
    return histogram_ranks(hist, [_rank(q, hist.n) for q in qs])


def histogram_ranks(hist: ItlHistogram, ranks) -> tuple[float, ...]:
    """The histogram's values at these ranks (1..n): see `itl_quantiles`."""
    ranks = np.array(ranks, dtype=np.int64)
    return tuple(_stats.histogram_quantiles(
        hist.kmin, np.ascontiguousarray(hist.counts, dtype=np.int64), _as_f64(hist.least),
        _as_f64(hist.greatest), tuple(hist.low), tuple(hist.top), ranks, ITL_BUCKET).tolist())


def itl_fields(itl: ItlHistogram) -> tuple[float, float, float]:
    """A stage row's inter-token fields (mean_itl, itl_p50, itl_p99) from its histogram."""
    return (itl_mean(itl), *itl_quantiles(itl))


def itl_mean(gaps) -> float:
    """The exact mean: a running sum over n; NaN without gaps (an ItlHistogram, or a list of gaps)."""
    hist = gaps if isinstance(gaps, ItlHistogram) else itl_histogram(gaps)
    return hist.total / hist.n if hist.n else NAN


# the inter-token fields of a stage without tokens (every stage but a step stage's, every run):
# computed once, by the same rules as any stage's
NO_ITL = itl_fields(itl_histogram(()))


# -- a quantile pooled over a study point's runs (sq.results.metrics.Tail) --------------

SCAN_BLOCK = 1024   # candidates judged at once while the interval's ends are searched for


def pooled_quantile(counts, tops, q: float) -> float:
    """The ⌈q·N⌉-th smallest of all the runs' samples (N = sum of counts; the report's rank rule)
    from each run's count and largest samples (`tops`, descending); NaN when some run kept too
    few of its largest samples to be sure of it (or there are no samples)."""
    total = int(sum(counts))
    if total == 0:
        return math.nan
    below_top = total - _rank(q, total)     # how many samples lie above it
    merged = np.concatenate(tops)
    if below_top >= len(merged):
        return math.nan
    value = float(-np.partition(-merged, below_top)[below_top])
    # every sample above the value must be among the kept ones: a run that kept part of its
    # samples dropped only values at most its smallest kept one
    if value < _known_from(counts, tops):
        return math.nan
    return value


def _known_from(counts, tops) -> float:
    """The least x at which every run's count of samples <= x is known: a run that kept only its
    largest samples dropped values at most its smallest kept one."""
    return max((float(top[-1]) for n, top in zip(counts, tops) if len(top) < n), default=-math.inf)


def pooled_interval(tails, q: float, confidence: float = 0.95) -> tuple[float, float]:
    """(pooled quantile, half-width) over a point's runs, each with `count` and `top` (a
    `sq.results.metrics.Tail`). The interval inverts a test of the share: a value x is inside
    when the pooled share of samples <= x, p(x) = sum c_i(x) / sum n_i, is not told from q by
    the seeds (`share_statistic`: the ratio estimator's studentized difference with the seeds as
    clusters, Hall's skewness correction, Student's t with seeds - 1 degrees of freedom). The
    half-width is the interval's larger side, so quantile ± half-width holds it all (NaN for
    one seed, or when a run kept too few samples to place an end)."""
    confidence = check_level(confidence, "pooled_interval")
    counts = [int(t.count) for t in tails]
    tops = [np.asarray(t.top, dtype=np.float64) for t in tails]
    estimate = pooled_quantile(counts, tops, q)
    if len(tails) < 2 or math.isnan(estimate):
        return estimate, math.nan
    lo, hi = share_interval(counts, tops, q, estimate, t_quantile((1.0 + confidence) / 2.0, len(tails) - 1))
    return estimate, max(estimate - lo, hi - estimate)


def share_statistic(below, counts, q: float):
    """For each column of `below` (per run, a row: its samples <= x) the statistic that tests
    p(x) = q. p(x) = sum_i below_i / sum_i n_i, the ratio estimator over runs of different
    counts; its residuals z_i = (below_i - p·n_i) / mean(n) are the seeds' independent
    evidence, T = (p - q) / sqrt(s²/k) their studentized mean. A tail share is skewed (a run
    with one long burst holds many of the point's slow samples), and a plain t with ten seeds
    covered an M/M/1 p99 90 % of the time where 95 % was asked; Hall's (1992) monotone
    correction g(T) = T + a·T² + a²·T³/3 + b, a = γ/(3√k), b = γ/(6√k) (γ the residuals'
    skewness) removes the skewness's first-order error."""
    n = np.asarray(counts, dtype=np.float64)
    k = len(n)
    p = below.sum(axis=0) / n.sum()
    z = (below - p[None, :] * n[:, None]) / (n.sum() / k)
    s2 = (z * z).sum(axis=0) / (k - 1)
    d = p - q
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(s2 > 0, d / np.sqrt(s2 / k), np.sign(d) * np.inf)
        gamma = np.where(s2 > 0, (z ** 3).sum(axis=0) / k / s2 ** 1.5, 0.0)
    a, b = gamma / (3.0 * math.sqrt(k)), gamma / (6.0 * math.sqrt(k))
    with np.errstate(invalid="ignore"):
        g = t + a * t * t + a * a * t ** 3 / 3.0 + b
    return np.where(np.isfinite(t), g, np.nan_to_num(t, nan=0.0))


def share_interval(counts, tops, q: float, estimate: float, t: float) -> tuple[float, float]:
    """The ends (lo, hi) of the samples x around `estimate` where |share_statistic| <= t:
    lo the least sample, scanning down from the estimate, before the first with a statistic
    below -t; hi the first, scanning up, above t (closed: the interval errs wide). lo is NaN
    when it would lie below what the runs kept."""
    ascending = [np.sort(top) for top in tops]
    values = np.unique(np.concatenate(ascending))
    values = values[values >= _known_from(counts, tops)]
    at = int(np.searchsorted(values, estimate))
    n = np.asarray(counts, dtype=np.float64)

    def statistic(xs):
        below = n[:, None] - np.array([len(a) - np.searchsorted(a, xs, side="right") for a in ascending])
        return share_statistic(below, counts, q)

    lo = math.nan
    for end in range(at + 1, 0, -SCAN_BLOCK):          # down from the estimate
        index = np.arange(end - 1, max(end - SCAN_BLOCK, 0) - 1, -1)
        out = np.flatnonzero(statistic(values[index]) < -t)
        if len(out):
            lo = float(values[min(index[out[0]] + 1, at)])     # the one above the first outside
            break
    else:
        # every sample kept down to the least is inside: the least sample is the end only when
        # it is the least of all the samples (no run dropped any)
        if all(len(top) == c for top, c in zip(tops, counts)):
            lo = float(values[0])
    hi = float(values[-1])
    for begin in range(at, len(values), SCAN_BLOCK):   # up from the estimate
        xs = values[begin:begin + SCAN_BLOCK]
        out = np.flatnonzero(statistic(xs) > t)
        if len(out):
            hi = float(xs[out[0]])
            break
    return lo, hi

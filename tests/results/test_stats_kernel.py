"""sq.results._stats kernels against their literal Python definitions, bit for bit.

Every kernel replaces a plain loop; the loop is written out here, in
Python floats, and must give the very same bits on arbitrary data: NaN of
both signs, ±inf, -0, subnormals, huge and tiny values mixed.
"""
from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from sq.results import _stats
from sq.results import stats
from sq._support.number_format import json_number

NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
POS_NAN = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000))[0]
SPECIAL = [NEG_NAN, POS_NAN, math.inf, -math.inf, 0.0, -0.0, 5e-324, -5e-324, 1e308, -1e308,
           2.2250738585072014e-308, 1.0, -1.0]

special = st.sampled_from(SPECIAL)
anything = st.one_of(st.floats(allow_nan=True, allow_infinity=True), special)
plain = st.floats(-1e6, 1e6, allow_nan=False)
value = st.one_of(plain, special, st.integers(-3, 3).map(float))
samples = st.lists(st.one_of(anything, value), max_size=120)

FAST = settings(max_examples=150, deadline=None)


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def same(a: float, b: float) -> bool:
    return bits(float(a)) == bits(float(b))


def same_nan_aside(a: float, b: float) -> bool:
    """Bit equality, except that any two NaNs agree: IEEE 754 leaves the sign
    and payload of an arithmetic result's NaN unspecified (the compiler may
    swap the operands of a sum), and the report prints every NaN as null."""
    return (a != a and b != b) or same(a, b)


def f64(xs) -> np.ndarray:
    return np.array(xs, dtype=np.float64)


# -- sums and moments -----------------------------------------------------------------

def literal_seq_sum(xs):
    s = 0.0
    for x in xs:
        s += x
    return s


def literal_welford(xs):
    n, mean, m2 = 0, 0.0, 0.0
    for x in xs:
        n += 1
        d = x - mean
        mean += d / n
        m2 += d * (x - mean)
    return n, mean, m2


def literal_batch_means(xs, batches):
    size = len(xs) // batches
    means = []
    for b in range(batches):
        batch = xs[b * size:(b + 1) * size]
        s = batch[0]  # a cumulative sum: from the first sample
        for x in batch[1:]:
            s += x
        means.append(s / size)
    return means


@FAST
@given(samples)
def test_seq_sum(xs):
    assert same_nan_aside(_stats.seq_sum(f64(xs)), literal_seq_sum(xs))


@FAST
@given(samples)
def test_welford(xs):
    n, mean, m2 = _stats.welford(f64(xs))
    want = literal_welford(xs)
    assert n == want[0] and same_nan_aside(mean, want[1]) and same_nan_aside(m2, want[2])


@FAST
@given(st.lists(value, min_size=1, max_size=120), st.integers(1, 25))
def test_batch_means(xs, batches):
    if len(xs) < batches:
        with pytest.raises(ValueError):
            _stats.batch_means(f64(xs), batches)
        return
    got = _stats.batch_means(f64(xs), batches).tolist()
    want = literal_batch_means(xs, batches)
    assert all(map(same_nan_aside, got, want))


def test_batch_means_keep_the_sign_of_an_all_negative_zero_batch():
    # a sum started from -0.0 is a sum started from the first sample
    assert same(_stats.batch_means(f64([-0.0, -0.0, 1.0, 2.0]), 2)[0], -0.0)


@given(st.lists(st.floats(0.5, 2.0), min_size=40, max_size=120))
@settings(max_examples=50, deadline=None)
def test_welford_mean_is_close_to_the_average(xs):
    # guards the literal definition itself: a running mean, not some other sum
    assert stats.welford(xs).mean == pytest.approx(math.fsum(xs) / len(xs), rel=1e-12)


# -- the order statistic ------------------------------------------------------------------

def total_order(x):
    """IEEE 754 totalOrder as a sort key, from its definition: NaNs outside the
    numbers by sign (ordered by payload), -0 below +0."""
    sign_negative = math.copysign(1.0, x) < 0
    if x != x:
        payload = bits(x) & 0x000FFFFFFFFFFFFF
        return (-2, -payload) if sign_negative else (2, payload)
    return (0, x, -1 if sign_negative else 1)


def literal_order_statistic(xs, rank):
    return sorted(xs, key=total_order)[rank - 1]


payload_nan = st.integers(1, 2 ** 51 - 1).flatmap(
    lambda p: st.sampled_from([0x7FF8000000000000 | p, 0xFFF8000000000000 | p, 0x7FF0000000000000 | p]))


@FAST
@given(st.lists(st.one_of(anything, value, payload_nan.map(lambda b: struct.unpack("<d", struct.pack("<Q", b))[0])),
                min_size=1, max_size=120), st.floats(0.0, 1.0))
def test_order_statistic(xs, q):
    rank = min(max(math.ceil(q * len(xs)), 1), len(xs))
    assert same(_stats.order_statistics(f64(xs), (rank,))[0], literal_order_statistic(xs, rank))
    assert same(stats.quantile(xs, q), literal_order_statistic(xs, rank))


def report_ranks(n):
    """The ranks of every order statistic the report gives (SUMMARY_QUANTILES), ascending."""
    return tuple(min(max(math.ceil(q * n), 1), n) for _, q in stats.SUMMARY_QUANTILES)


def shaped(shape, n, rng):
    """n samples of a shape that troubles a selection: ties, presorted, runs, a queue's
    correlated response times (what the report's long observations are), NaNs of both signs."""
    xs = {"random": lambda: rng.standard_normal(n),
          "sorted": lambda: np.sort(rng.standard_normal(n)),
          "reversed": lambda: np.sort(rng.standard_normal(n))[::-1].copy(),
          "few values": lambda: rng.integers(-2, 3, n) * 0.5,
          "all equal": lambda: np.full(n, -0.0),
          "organ pipe": lambda: np.concatenate([np.arange(n // 2 + 0.0), np.arange(n - n // 2 + 0.0)[::-1]]),
          "queue": lambda: lindley(rng.exponential(1 / 0.9, n), rng.exponential(1.0, n)),
          "NaNs": lambda: np.where(rng.random(n) < 0.02, np.where(rng.random(n) < 0.5, NEG_NAN, POS_NAN),
                                   rng.exponential(1.0, n))}[shape]()
    if shape != "NaNs":
        xs[::97] = -0.0
        xs[::89] = 0.0
    return xs


def lindley(gaps, services):
    """An M/M/1 queue's response times: waits by Lindley's recursion, plus the service."""
    out, w = np.empty(len(gaps)), 0.0
    for i, (a, s) in enumerate(zip(gaps.tolist(), services.tolist())):
        w = max(w + s - a, 0.0) if i else 0.0
        out[i] = w + s
    return out


SHAPES = ["random", "sorted", "reversed", "few values", "all equal", "organ pipe", "queue", "NaNs"]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n", [3001, 70001])
def test_every_rank_the_report_uses_is_the_sorted_samples(shape, n):
    # the selection of several ranks from one partitioning of all the keys, and of one rank
    # alone (a long array's, n >= 2**15, from the bracket its probes give), against a full
    # sort in total order
    rng = np.random.default_rng(n + SHAPES.index(shape))
    xs = shaped(shape, n, rng)
    want = sorted(xs.tolist(), key=total_order)
    ranks = sorted({*report_ranks(n), 2, 17, n // 2, n - 30, n - 1, *rng.integers(1, n + 1, 20).tolist()})
    got = _stats.order_statistics(xs, tuple(ranks))
    for rank, value in zip(ranks, got):
        assert same(value, want[rank - 1]), rank
    # one rank at a time, and each as the JSON's lone p99 is selected
    for rank in report_ranks(n):
        assert same(_stats.order_statistics(xs, (rank,))[0], want[rank - 1]), rank


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 1000, 5000])
def test_one_rank_among_the_greatest_is_the_sorted_samples(shape, n):
    # a short array's lone rank near its top (a short run's p99) is kept while scanning: every
    # rank from the greatest down to 66 below it (past TOP_MAX = 64: partitioned), against a sort
    rng = np.random.default_rng(n * 31 + SHAPES.index(shape))
    xs = shaped(shape, n, rng)
    want = sorted(xs.tolist(), key=total_order)
    for rank in range(n, max(0, n - 66), -1):
        assert same(_stats.order_statistics(xs, (rank,))[0], want[rank - 1]), rank
        assert same(_stats.sample_statistics(xs, True, 0, 2.093, (rank,))[3][0], want[rank - 1]), rank


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40000), st.sampled_from(SHAPES), st.integers(0, 2 ** 32 - 1))
def test_report_ranks_of_any_length(n, shape, seed):
    xs = shaped(shape, n, np.random.default_rng(seed))
    want = sorted(xs.tolist(), key=total_order)
    ranks = report_ranks(n)
    for rank, value in zip(ranks, _stats.order_statistics(xs, ranks)):
        assert same(value, want[rank - 1]), rank


def test_a_bracket_that_misses_its_rank_falls_back_on_every_key():
    # large values everywhere but at the probes' places: the probes see only zeros, so the
    # bracket they give holds too few keys (or too many) and the rank is selected among all
    n = 1 << 16
    xs = np.random.default_rng(3).exponential(1.0, n) + 10.0
    xs[(np.arange(1 << 13) * n) // (1 << 13)] = 0.0
    want = np.sort(xs)
    for rank in report_ranks(n)[1:-1]:
        before = _stats.missed_brackets()
        assert same(_stats.order_statistics(xs, (rank,))[0], want[rank - 1])
        assert _stats.missed_brackets() == before + 1, rank


def test_long_correlated_samples_need_no_fallback():
    # the probes' margin is wide enough for a queue's correlated samples: the pass alone
    # gives the rank (the speed the bracket is for)
    rng = np.random.default_rng(11)
    n = 200_000
    xs = lindley(rng.exponential(1 / 0.9, n), rng.exponential(1.0, n))
    want = np.sort(xs)
    before = _stats.missed_brackets()
    for rank in report_ranks(n):
        assert same(_stats.order_statistics(xs, (rank,))[0], want[rank - 1])
    assert _stats.missed_brackets() == before


@pytest.mark.parametrize("n", [0, 1, 39, 40, 41, 1000, 40000])
def test_one_pass_is_each_kernel_alone(n):
    # Welford's moments, the batch-means half-width and the ranks read together give what
    # each kernel gives alone, to the bit
    xs = shaped("queue", n, np.random.default_rng(n)) if n else f64([])
    ranks = report_ranks(n) if n else ()
    batches = 20 if n >= 40 else 0
    mean, m2, h, values = _stats.sample_statistics(xs, True, batches, 2.093, ranks)
    k, want_mean, want_m2 = _stats.welford(xs)
    assert same(mean, want_mean) and same(m2, want_m2)
    if batches:
        assert same(h, _stats.batch_half_width(xs, 20, 2.093))
    assert values == _stats.order_statistics(xs, ranks)


@pytest.mark.parametrize("n", [40, 41, 999, 1000, 6401, 40000, 1 << 16])
@pytest.mark.parametrize("batches", [20, 7, 3, 1])
def test_pass_without_moments_is_each_kernel_alone(n, batches):
    # the moments known (the engine kept them): the batches summed four side by side, the keys
    # bracketed (a long array), kept while scanning (a short one's p99) or all selected, give
    # what each kernel gives alone, to the bit
    xs = shaped("queue", n, np.random.default_rng(n + batches))
    xs[::97] = -xs[::97]
    for ranks in ((stats._rank(0.99, n),), (1,), (n,), report_ranks(n)):
        mean, m2, h, values = _stats.sample_statistics(xs, False, batches, 2.093, ranks)
        assert (mean, m2) == (0.0, 0.0)
        assert same(h, _stats.batch_half_width(xs, batches, 2.093))
        assert values == _stats.order_statistics(xs, ranks)


def test_sample_statistics_rejects_ranks_out_of_order_or_range():
    for ranks in ((0,), (3,), (2, 1)):
        with pytest.raises(ValueError):
            _stats.sample_statistics(f64([1.0, 2.0]), False, 0, 2.0, ranks)
    with pytest.raises(ValueError):
        _stats.sample_statistics(f64([1.0]), True, 2, 2.0, ())


# -- gauges ----------------------------------------------------------------------------------

def maximum(a, b):
    """numpy's `maximum` (the earlier, vectorised gauge code): NaN if either is."""
    return math.nan if a != a or b != b else max(a, b)


def minimum(a, b):
    return math.nan if a != a or b != b else min(a, b)


def literal_window_areas(segments, start, end, width, batches):
    acc = [0.0] * batches
    for a, b, v in segments:
        for w in range(batches):
            lo = start if w == 0 else start + w * width
            hi = end if w == batches - 1 else start + (w + 1) * width
            overlap = minimum(b, hi) - maximum(a, lo)
            if overlap > 0.0:
                acc[w] += v * overlap
    return acc


def literal_gauge_pass(times, values, start, end, batches):
    segments = []
    for k, (t, v) in enumerate(zip(times, values)):
        nxt = times[k + 1] if k + 1 < len(times) else end
        a, b = maximum(t, start), minimum(nxt, end)
        if b > a:
            segments.append((a, b, v))
    total, least, greatest = 0.0, math.inf, -math.inf
    for a, b, v in segments:
        total += v * (b - a)
        if v <= least:  # a later -0/+0 tie wins, as in pyserq
            least = v
        if v >= greatest:
            greatest = v
    width = (end - start) / batches
    return len(segments), total, least, greatest, literal_window_areas(segments, start, end, width, batches)


time = st.one_of(st.floats(-10.0, 90.0), st.sampled_from([0.0, -0.0, 1.0, 50.0]))
points = st.lists(st.tuples(time, value), max_size=50)


@FAST
@given(points, st.booleans(), st.floats(-5.0, 60.0), st.floats(0.0, 80.0), st.integers(1, 25))
def test_gauge_pass(points, in_order, start, span, batches):
    # in time order as the engine records them, or not: the kernel must not
    # assume more than it checks
    times = [t for t, _ in points]
    times = sorted(times) if in_order else times
    values = [v for _, v in points]
    end = start + span
    got = _stats.gauge_pass(f64(times), f64(values), start, end, batches)
    want = literal_gauge_pass(times, values, start, end, batches)
    assert got[0] == want[0]
    assert same_nan_aside(got[1], want[1])
    assert same(got[2], want[2]) and same(got[3], want[3])
    assert all(map(same_nan_aside, got[4].tolist(), want[4]))


@FAST
@given(st.lists(st.tuples(st.floats(-3.0, 40.0), st.floats(0.0, 9.0), value), max_size=40),
       st.floats(-5.0, 30.0), st.floats(0.0, 40.0), st.integers(1, 25))
def test_window_areas(raw, start, span, batches):
    segments = [(a, a + d, v) for a, d, v in raw]
    end = start + span
    width = (end - start) / batches
    a, b, v = (f64([s[i] for s in segments]) for i in range(3))
    got = _stats.window_areas(a, b, v, start, end, width, batches).tolist()
    assert all(map(same_nan_aside, got, literal_window_areas(segments, start, end, width, batches)))


def test_gauge_windows_with_bounds_far_from_the_span():
    # start + w·width rounds to a few values only: windows collapse to nothing
    times, values = [1e16, 1e16 + 2, 1e16 + 4], [3.0, 5.0, 7.0]
    for start, end in [(1e16, 1e16 + 6), (1e16 - 2, 1e16 + 8)]:
        got = _stats.gauge_pass(f64(times), f64(values), start, end, 20)
        want = literal_gauge_pass(times, values, start, end, 20)
        assert got[:4] == want[:4] and got[4].tolist() == want[4]


def test_gauge_with_an_infinite_span_tries_every_window():
    # -inf + w·inf is NaN: window bounds are not monotone, so none is skipped
    got = _stats.gauge_pass(f64([0.0, 1.0]), f64([2.0, 3.0]), -math.inf, 5.0, 4)
    want = literal_gauge_pass([0.0, 1.0], [2.0, 3.0], -math.inf, 5.0, 4)
    assert got[:4] == want[:4] and all(map(same_nan_aside, got[4].tolist(), want[4]))


# -- the ITL histogram -------------------------------------------------------------------------

def literal_itl_quantile(gaps, rank, bucket=math.log1p(0.01)):
    """Chapter 08 §3.4 with a dict of buckets: x <= 0 and NaN below all, an
    infinite gap above all (pyserq saturates its bucket index)."""
    low, top = -(2 ** 63), 2 ** 63
    cells = {}
    for x in gaps:
        if not x > 0.0:
            k = low
        elif math.isinf(x):
            k = top
        else:
            k = math.floor(math.log(x) / bucket)
        count, lo, hi = cells.get(k, (0, x, x))
        if lo != lo or (x == x and x < lo):
            lo = x
        if hi != hi or (x == x and x > hi):
            hi = x
        cells[k] = (count + 1, lo, hi)
    seen = 0
    for k in sorted(cells):
        count, lo, hi = cells[k]
        seen += count
        if seen >= rank:
            middle = 0.0 if k == low else math.inf if k == top else math.exp((k + 0.5) * bucket)
            return min(max(middle, lo), hi)


def kernel_itl_quantiles(gaps, ranks):
    hist = _stats.itl_histogram(f64(gaps), stats.ITL_BUCKET)
    return _stats.histogram_quantiles(*hist, np.array(ranks, dtype=np.int64), stats.ITL_BUCKET).tolist()


gap = st.one_of(st.floats(0.0, 1e3), st.floats(0.98, 1.03), st.floats(5e-324, 1e-300),
                st.sampled_from([1.01 ** k for k in range(-5, 5)]), special, anything)


@FAST
@given(st.lists(gap, min_size=1, max_size=120), st.lists(st.floats(0.0, 1.0), min_size=1, max_size=4))
def test_itl_quantiles(gaps, qs):
    n = len(gaps)
    ranks = [min(max(math.ceil(q * n), 1), n) for q in qs]
    got = kernel_itl_quantiles(gaps, ranks)
    assert all(map(same, got, [literal_itl_quantile(gaps, r) for r in ranks]))


def _cells(hist):
    return {hist.kmin + i: (int(c), bits(lo), bits(hi))
            for i, (c, lo, hi) in enumerate(zip(hist.counts, hist.least, hist.greatest)) if c}


@FAST
@given(st.lists(st.one_of(gap, st.floats(1e250, 1e300)), max_size=150))
def test_engine_builds_the_histogram_the_gaps_make(gaps):
    # the engine adds gaps one token at a time, widening its cells either way as they come
    from sq import _engine

    mine, ref = _engine.itl_histogram_of(gaps), stats.itl_histogram(gaps)
    assert mine.n == ref.n == len(gaps)
    assert same_nan_aside(mine.total, ref.total)
    assert _cells(mine) == _cells(ref)
    for a, b in ((mine.low, ref.low), (mine.top, ref.top)):
        assert a[0] == b[0] and (a[0] == 0 or (same(a[1], b[1]) and same(a[2], b[2])))
    qs = (0.0, 0.1, 0.5, 0.9, 0.99, 1.0)
    assert all(map(same, stats.itl_quantiles(mine, qs), stats.itl_quantiles(ref, qs)))


def test_itl_buckets_at_their_edges():
    # 1.01**k lands either side of a bucket edge depending on the last bit of log
    gaps = [1.01 ** k for k in range(-300, 300)] + [math.exp(k * stats.ITL_BUCKET) for k in range(-300, 300)]
    gaps = gaps + [math.nextafter(g, 0.0) for g in gaps] + [math.nextafter(g, 2.0) for g in gaps]
    n = len(gaps)
    ranks = list(range(1, n + 1, 7))
    got = kernel_itl_quantiles(gaps, ranks)
    assert got == [literal_itl_quantile(gaps, r) for r in ranks]


# -- stats.py on top of the kernels --------------------------------------------------------------

@FAST
@given(samples)
def test_observe_stats_are_the_literal_formulas(xs):
    s = stats.observe_stats(xs)
    n, mean, m2 = literal_welford(xs)
    assert s.count == n
    if n == 0:
        assert math.isnan(s.mean) and math.isnan(s.p99)
        return
    assert same_nan_aside(s.mean, mean)
    assert same(s.p99, literal_order_statistic(xs, min(max(math.ceil(0.99 * n), 1), n)))
    if n < 40:
        assert s.ci == math.inf
    else:
        means = literal_batch_means(xs, 20)
        m = literal_seq_sum(means) / 20.0
        var = literal_seq_sum([(x - m) * (x - m) for x in means]) / 19.0
        assert same_nan_aside(s.ci, 2.093 * math.sqrt(var / 20.0) if var == var else math.nan)


# a gauge whose value is -0 or +0 at different times, with `queue(d)` 2, 1, 0
# or 0, 1, 2, -0, ... (sessions delayed by `w` first)
ZERO_GAUGES = ["(queue(d)-2)*(queue(d)-3)*queue(d)", "-((queue(d)-2)*(queue(d)-3)*queue(d))",
               "(queue(d)-1)*(queue(d)-3)*(queue(d)-2)*queue(d)"]


@pytest.mark.parametrize("gauge", ZERO_GAUGES)
@pytest.mark.parametrize("session", ["run d (serial + 1);", "run w (3 - serial); run d (serial + 1);"])
def test_gauge_extremes_break_a_signed_zero_tie_as_pyserq_does(gauge, session, pyserq):
    source = (f"stage d : delay;\nstage w : delay;\ngauge g = {gauge};\n"
              f"workload {{ arrive batch(2); }}\nsession {{ {session} }}")
    r = pyserq.run(pyserq.compile(source=source, horizon=10))
    g = r.gauges["g"]
    zeros = {math.copysign(1.0, v) for v in g.values if v == 0}
    assert zeros == {-1.0, 1.0}, "the gauge must hold both zeros"
    report = r.json()
    want = report[report.index('"g":{'):]
    want = want[: want.index("}")]
    s = stats.gauge_stats(g.times, g.values, r.warmup, r.end)
    assert f'"min":{json_number(s.min)},"max":{json_number(s.max)}' in want


def _json_formulas(xs: np.ndarray, moments) -> tuple:
    """The JSON's mean, ci, cv2 and p99 of an observe, written out in Python from the kernels
    alone (what sq.results.stats._one_pass wrote before observe_statistics took its formulas)."""
    n = len(xs)
    batches = stats.BATCHES if n >= stats.CI_MIN_SAMPLES else 0
    _, mean, m2 = _stats.welford(xs)
    if moments is not None:
        mean, m2 = moments
    ci = _stats.batch_half_width(xs, batches, stats.T_19) if batches else math.inf
    cv2 = stats.ieee_div(m2 / (n - 1), mean * mean) if n >= 2 else math.nan
    p99 = _stats.order_statistics(xs, (stats._rank(0.99, n),))[0] if n else math.nan
    return (mean if n else math.nan), ci, cv2, p99


@FAST
@given(samples)
@example([NEG_NAN, POS_NAN])
def test_json_values_are_the_formulas(xs):
    # one typed call (observe_statistics) gives an observe's JSON values: the formulas around
    # the kernels, to the bit, whether or not the moments are given (the engine's are Welford's).
    # A NaN's sign aside: Welford's `m += d/k` is inlined into welford and into the one pass, and
    # the compiler may order each sum's operands its own way (it did, in a profile-guided build:
    # -NaN + NaN gave -NaN in one, +NaN in the other); the report prints either as null.
    xs = f64(xs)
    _, mean, m2 = _stats.welford(xs)
    for moments in (None, (mean, m2)):
        got, want = stats.json_values(xs, moments), _json_formulas(xs, moments)
        assert all(same_nan_aside(a, b) for a, b in zip(got, want)), (got, want)
        assert [bits(v) for v in stats.json_statistics(xs, moments).values()] == [bits(v) for v in got]


@pytest.mark.parametrize("xs", [[], [2.0], [0.0] * 50, [-0.0, 0.0] * 25, [1.0, -1.0] * 20, [3.0] * 39,
                                [3.0] * 40, [1e-200] * 41])
def test_json_values_at_the_edges(xs):
    # no sample, one, zero mean (cv2 0/0: a positive NaN, as ieee_div gives), and the CI's
    # first sample count (39: +inf, 40: batches)
    xs = f64(xs)
    got = stats.json_values(xs)
    assert all(same(a, b) for a, b in zip(got, _json_formulas(xs, None))), got
    assert (got[1] == math.inf) == (len(xs) < 40)

"""sq.results.stats against pyserq 0.1.2 (bit for bit) and against hand-worked values.

pyserq exposes every observation's raw samples and every gauge's change
points, so our statistics are fed pyserq's own raw data and must give
pyserq's report fields exactly. Histogram and time-average cases with no
pyserq raw data are checked against values worked out from chapter 08.
"""
from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pytest

from sq.results import stats


NEG_NAN = float(np.copysign(np.nan, -1.0))
POS_NAN = float(np.copysign(np.nan, 1.0))


def same(a: float, b) -> bool:
    """Bit-level agreement of a float with a pyserq JSON value (None = null = NaN/inf)."""
    if b is None:
        return not math.isfinite(a)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def run(pyserq, source: str, **settings):
    r = pyserq.run(pyserq.compile(source=source, **settings))
    # parse_int=float keeps the sign of "-0"
    return r, json.loads(r.json(), parse_int=float)


MM1 = """stage svc : fifo;
workload { arrive poisson(0.8); }
session { set t0 = now; run svc (~exp(1)); observe resp = now - t0; observe big = now - t0 > 3; }
gauge q = queue(svc);
gauge busy = busy(svc);
"""

OBSERVE_PROGRAMS = {
    "mm1-warmup": (MM1, dict(horizon=5000, warmup=500, seed=5)),
    "mm1-seed2": (MM1, dict(horizon=3000, warmup=0, seed=2)),
    # a 0/0 NaN among the samples: mean/ci/cv2 null, p99 still finite
    "nan": ("session { observe x = serial; observe y = (serial - 3) / (serial - 3); }\n"
            "workload { arrive batch(60); }", dict(horizon=1)),
    # 0/0 is a negative NaN (sorts first, p99 1); negating it gives a positive
    # NaN, which sorts last (p99 null): IEEE total order, sign included
    "nan-sign": ("session { observe a = (serial - 3) / (serial - 3); "
                 "observe b = -((serial - 3) / (serial - 3)); }\nworkload { arrive batch(60); }",
                 dict(horizon=1)),
    # an inf at the top makes p99 null
    "inf": ("session { observe x = 1 / (serial - 59); }\nworkload { arrive batch(60); }",
            dict(horizon=1)),
    "constant": ("session { observe c = 2.5; observe z = 0; }\nworkload { arrive batch(45); }",
                 dict(horizon=1)),
    "few": ("session { observe x = serial * 0.1; }\nworkload { arrive batch(39); }", dict(horizon=1)),
    "one": ("session { observe x = -0; }\nworkload { arrive batch(1); }", dict(horizon=1)),
    # every sample before the warm-up: count 0
    "none": ("stage d : delay;\nsession { observe x = 1; run d (1); }\nworkload { arrive batch(3); }",
             dict(horizon=10, warmup=5)),
    "odd-batches": ("session { observe x = 1 / (serial + 1) + serial * serial; }\n"
                    "workload { arrive batch(417); }", dict(horizon=1)),
}


@pytest.mark.parametrize("key", sorted(OBSERVE_PROGRAMS))
def test_observe_statistics_match_pyserq_bit_for_bit(key, pyserq):
    source, settings = OBSERVE_PROGRAMS[key]
    r, j = run(pyserq, source, **settings)
    assert r.observes, "the program must observe something"
    for name, o in r.observes.items():
        s = stats.observe_stats(o.samples)
        want = j["observes"][name]
        assert s.count == want["count"]
        for field in ("mean", "ci", "cv2", "p99"):
            assert same(getattr(s, field), want[field]), (name, field, getattr(s, field), want[field])


def test_the_nan_program_really_has_a_nan_and_a_finite_p99(pyserq):
    # guards the NaN case above: the statistic it checks must be the interesting one
    r, j = run(pyserq, *OBSERVE_PROGRAMS["nan"][:1], **OBSERVE_PROGRAMS["nan"][1])
    assert any(math.isnan(x) for x in r.observes["y"].samples)
    assert j["observes"]["y"]["mean"] is None and j["observes"]["y"]["p99"] == 1


GAUGE_PROGRAMS = {
    "mm1-warmup": (MM1, dict(horizon=5000, warmup=500, seed=5)),
    "spec-example": ("pool kv { cap 10; }\nstage d : delay;\ngauge g = used(kv) + 1;\n"
                     "gauge h = queue(d);\nworkload { arrive batch(2); }\n"
                     "session { hold kv (3) { run d (2); } }", dict(horizon=100)),
    "constant": ("gauge g = 5;\nsession { }\nworkload { arrive batch(1); }", dict(horizon=7)),
    # -0 throughout: mean 0 (a sum from +0), min and max -0
    "negative-zero": ("gauge g = -0;\nsession { }\nworkload { arrive batch(1); }", dict(horizon=3)),
    # windows of 7/20 do not divide the change points; warm-up cuts a segment
    "uneven": ("stage d : delay;\ngauge h = queue(d);\nsession { run d (serial * 0.37 + 0.1); }\n"
               "workload { arrive batch(9); }", dict(horizon=7, warmup=0.3)),
    "renewal": ("stage s : ps(1);\ngauge n = queue(s);\nworkload { arrive renewal(~uniform(0.1, 2)); }\n"
                "session { run s (~exp(1.3)); }", dict(horizon=997.5, warmup=13.25, seed=3)),
}


@pytest.mark.parametrize("key", sorted(GAUGE_PROGRAMS))
def test_gauge_statistics_match_pyserq_bit_for_bit(key, pyserq):
    source, settings = GAUGE_PROGRAMS[key]
    r, j = run(pyserq, source, **settings)
    for name, g in r.gauges.items():
        s = stats.gauge_stats(g.times, g.values, r.warmup, r.end)
        want = j["gauges"][name]
        for field in ("mean", "ci", "min", "max"):
            assert same(getattr(s, field), want[field]), (name, field, getattr(s, field), want[field])


def test_gauge_spec_example_values():
    # chapter 08 §3.3: both sessions hold 3 units and sit in the delay stage during [0, 2]
    g = stats.gauge_stats([0.0, 2.0], [7.0, 1.0], 0.0, 100.0)
    assert g.mean == pytest.approx(1.12, abs=1e-15)
    assert (g.min, g.max) == (1.0, 7.0)
    # window means: 7 on [0, 2], 1 elsewhere in the first window of width 5
    windows = [(7 * 2 + 1 * 3) / 5] + [1.0] * 19
    assert g.ci == pytest.approx(2.093 * math.sqrt(statistics.variance(windows) / 20), rel=1e-12)


def test_gauge_value_held_for_no_time_is_not_an_extreme():
    g = stats.gauge_stats([0.0, 2.0, 2.0], [1.0, 9.0, 1.0], 0.0, 4.0)
    assert (g.min, g.max, g.mean) == (1.0, 1.0, 1.0)


def test_gauge_value_before_warmup_holds_into_it():
    # 0 on [0, 1), 2 on [1, 3), 5 from 3; measured on [1, 4]
    g = stats.gauge_stats([0.0, 1.0, 3.0], [0.0, 2.0, 5.0], 1.0, 4.0)
    assert g.mean == pytest.approx(3.0, abs=1e-15)
    assert (g.min, g.max) == (2.0, 5.0)


def test_constant_gauge_over_an_uneven_span_has_zero_ci():
    g = stats.gauge_stats([0.0], [3.0], 0.0, 7.0)
    assert g.ci < 1e-12 and g.mean == pytest.approx(3.0, abs=1e-15)


def test_gauge_without_points_or_span_has_no_statistics():
    for g in (stats.gauge_stats([], [], 0.0, 1.0), stats.gauge_stats([0.0], [1.0], 2.0, 2.0)):
        assert math.isnan(g.mean) and g.ci == math.inf and math.isnan(g.min) and math.isnan(g.max)


# -- Welford, batch means, quantiles ------------------------------------------------

def test_welford_moments():
    m = stats.welford([1.0, 2.0, 3.0, 4.0])
    assert m.mean == 2.5 and m.variance == pytest.approx(5 / 3, rel=1e-15)
    assert math.isnan(stats.welford([]).mean) and math.isnan(stats.welford([1.0]).variance)


def test_welford_is_the_recurrence_not_the_plain_average(pyserq):
    # a fifo fed 1/(k+3) from t=0: the waits' Welford mean and their plain
    # average differ in the last bit, and pyserq reports the Welford one
    n = 37
    t, waits, services = 0.0, [], []
    for k in range(n):
        end = t + 1 / (k + 3)
        waits.append(t)
        services.append(end - t)
        t = end
    _, j = run(pyserq, "stage s : fifo;\nsession { run s (1 / (serial + 3)); }\nworkload { arrive batch(37); }",
               horizon=1000)
    row = j["stages"][0]
    assert stats.welford(waits).mean == row["mean_wait"]
    assert stats.welford(services).mean == row["mean_service"]
    assert stats.seq_sum(np.array(waits)) / n != row["mean_wait"]  # the case distinguishes them


def test_cv2_of_zero_mean_is_nan():
    assert math.isnan(stats.observe_stats([0.0] * 50).cv2)
    assert stats.observe_stats([2.0] * 50).cv2 == 0.0


def test_batch_means_half_width_by_hand():
    rng = np.random.default_rng(1)
    xs = rng.exponential(size=817)  # 40 per batch, 17 dropped
    means = xs[:800].reshape(20, 40).mean(axis=1)
    want = 2.093 * math.sqrt(statistics.variance(means.tolist()) / 20)
    assert stats.batch_half_width(xs) == pytest.approx(want, rel=1e-12)
    assert stats.observe_stats(xs[:39]).ci == math.inf
    assert math.isfinite(stats.observe_stats(xs[:40]).ci)


def test_seq_sum_is_left_to_right():
    xs = np.array([1e16, 1.0, 1.0, -1e16])
    assert stats.seq_sum(xs) == ((1e16 + 1.0) + 1.0) - 1e16


def test_quantile_rank_and_total_order():
    xs = [3.0, 1.0, 2.0]
    assert stats.quantile(xs, 0.99) == 3.0 and stats.quantile(xs, 0.5) == 2.0
    assert stats.quantile(xs, 0.0) == 1.0  # rank clamped to 1
    # -NaN sorts below -inf, +NaN above +inf, -0 below +0
    assert math.isnan(stats.quantile([NEG_NAN, -math.inf, 1.0], 0.0))
    assert stats.quantile([POS_NAN, -math.inf, 1.0], 0.0) == -math.inf
    assert math.isnan(stats.quantile([1.0, POS_NAN, math.inf], 0.99))
    assert stats.quantile([1.0, NEG_NAN, math.inf], 0.99) == math.inf
    z = stats.quantile([0.0, -0.0], 0.5)
    assert z == 0.0 and math.copysign(1.0, z) == -1.0
    assert math.isnan(stats.quantile([], 0.5))


def test_negative_nan_sign_survives_the_quantile():
    q = stats.quantile([NEG_NAN], 0.5)
    assert math.isnan(q) and math.copysign(1.0, q) == -1.0


def test_time_mean():
    assert stats.time_mean(4.0, 1.0, 3.0, 20.0) == 4.0 / 17.0
    assert stats.time_mean(0.0, 2.0, 5.0, 5.0) == 2.0  # empty span: the held value


# -- the ITL histogram ---------------------------------------------------------------

def test_itl_spec_examples():
    # chapter 08 §3.4
    assert stats.itl_quantiles([1.0, 1.009]) == (math.exp(0.5 * math.log1p(0.01)),) * 2
    assert stats.itl_mean([1.0, 1.009]) == pytest.approx(1.0045, rel=1e-15)
    assert stats.itl_quantiles([1.0, 0.0, 0.0]) == (0.0, 1.0)
    assert stats.itl_quantiles([2.0, 4.0, 8.0, 16.0]) == (4.0, 16.0)
    assert stats.itl_mean([2.0, 4.0, 8.0, 16.0]) == 7.5
    # [ST-STATS-1]: gaps 2,1,1 and 1,1,1
    assert stats.itl_quantiles([2.0, 1.0, 1.0, 1.0, 1.0, 1.0]) == (1.0, 2.0)


def test_itl_quantile_stays_within_its_bucket():
    rng = np.random.default_rng(7)
    gaps = rng.lognormal(size=2001)
    p50, p99 = stats.itl_quantiles(gaps)
    exact50 = np.sort(gaps)[math.ceil(0.5 * len(gaps)) - 1]
    exact99 = np.sort(gaps)[math.ceil(0.99 * len(gaps)) - 1]
    assert abs(p50 / exact50 - 1) <= 0.01 and abs(p99 / exact99 - 1) <= 0.01


def test_itl_without_gaps():
    assert all(math.isnan(x) for x in stats.itl_quantiles([]))
    assert math.isnan(stats.itl_mean([]))


def test_step_stage_itl_and_decode_step_match_pyserq(pyserq):
    # one session: prefill 1 token, then 9 decodes, each iteration costing
    # 1/(now+3); every token ends an iteration, so the gaps are the
    # differences of successive iteration ends
    _, j = run(pyserq, "stage e : step { budget 100; cost 1/(now+3); }\n"
               "session { run e prefill (1); run e decode (9); }\nworkload { arrive batch(1); }",
               horizon=100)
    row = j["stages"][0]
    t, ends, costs = 0.0, [], []
    for _ in range(10):
        c = 1 / (t + 3)
        t = t + c
        costs.append(c)
        ends.append(t)
    gaps = [b - a for a, b in zip(ends, ends[1:])]
    assert stats.itl_mean(gaps) == row["mean_itl"]
    assert stats.itl_quantiles(gaps) == (row["itl_p50"], row["itl_p99"])
    # the decode step is the iteration's cost, Welford-averaged
    assert stats.welford(costs[1:]).mean == row["mean_decode_step"]


def reference_histogram_quantile(gaps, q):
    """Chapter 08 §3.4 read literally: a dict of buckets, walked in order."""
    buckets = {}
    for x in gaps:
        k = math.floor(math.log(x) / math.log1p(0.01)) if x > 0 else -(2 ** 40)
        c, lo, hi = buckets.get(k, (0, x, x))
        buckets[k] = (c + 1, min(lo, x), max(hi, x))
    rank = min(max(math.ceil(q * len(gaps)), 1), len(gaps))
    seen = 0
    for k in sorted(buckets):
        c, lo, hi = buckets[k]
        seen += c
        if seen >= rank:
            middle = 0.0 if k == -(2 ** 40) else math.exp((k + 0.5) * math.log1p(0.01))
            return min(max(middle, lo), hi)


def test_itl_histogram_agrees_with_the_literal_definition():
    rng = np.random.default_rng(11)
    edges = [1.01 ** k for k in range(-50, 50)] + [math.exp(k * math.log1p(0.01)) for k in range(-9, 9)]
    gaps = np.concatenate([rng.lognormal(0, 2, 3000), edges, [0.0, 0.0, -1.5], rng.uniform(0.99, 1.02, 500)])
    rng.shuffle(gaps)
    for q in (0.0, 0.001, 0.01, 0.25, 0.5, 0.9, 0.99, 1.0):
        assert stats.itl_quantiles(gaps, (q,))[0] == reference_histogram_quantile(gaps.tolist(), q)


def reference_window_areas(points, start, end, batches=20):
    """The windows' integrals, one segment at a time, as chapter 08 §3.3 describes."""
    width = (end - start) / batches
    acc = [0.0] * batches
    for k, (t, v) in enumerate(points):
        nxt = points[k + 1][0] if k + 1 < len(points) else end
        a, b = max(t, start), min(nxt, end)
        for w in range(batches):
            w_lo = start if w == 0 else start + w * width
            w_hi = end if w == batches - 1 else start + (w + 1) * width
            overlap = min(b, w_hi) - max(a, w_lo)
            if b > a and overlap > 0:
                acc[w] += v * overlap
    return acc


def test_gauge_windows_agree_with_the_literal_definition():
    rng = np.random.default_rng(5)
    times = np.concatenate([[0.0], np.cumsum(rng.exponential(0.7, 400))])
    values = rng.integers(0, 9, len(times)).astype(float)
    start, end = 17.3, float(times[-1]) + 2.9
    ours = stats._window_areas(*_segments(times, values, start, end), start, end, (end - start) / 20, 20)
    want = reference_window_areas(list(zip(times.tolist(), values.tolist())), start, end)
    assert ours == want


def _segments(times, values, start, end):
    a = np.maximum(times, start)
    b = np.minimum(np.append(times[1:], end), end)
    held = b > a
    return a[held], b[held], values[held]

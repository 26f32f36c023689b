"""The fuller statistics of a report: order statistics of every observe, `Observe.quantile`,
the samples DataFrame and the pandas tables (issue 11).

Expected order statistics are computed here by sorting the samples (numpy's sort, a
different algorithm from the report's selection), never read back from a report.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import sq
from sq.errors import SqError

pd = pytest.importorskip("pandas")

MM1 = """
let lam = 0.8;
stage server : fifo(1);
workload { arrive poisson(lam); }
session { set t0 = now; run server (~exp(1)); observe response = now - t0; observe twice = 2 * (now - t0); }
run { horizon 3000; warmup 100; seed 5; }
"""

ARRAY = """
stage cpu[3] : fifo(1);
pool mem[2] { cap 10; }
stage one : fifo(1);
workload { arrive poisson(1); }
session { hold mem[floor(~uniform(0, 2))] (1) { run cpu[floor(~uniform(0, 3))] (~exp(0.5)); } run one (~exp(0.2)); observe r = now; }
run { horizon 200; seed 2; }
"""


def _sorted_rank(xs, q):
    """The ceil(q·n)-th smallest sample, rank clamped to [1, n], from a full sort."""
    xs = np.sort(np.asarray(xs))
    n = len(xs)
    return float(xs[min(max(math.ceil(q * n), 1), n) - 1])


@pytest.fixture(scope="module")
def mm1():
    return sq.run(sq.compile(source=MM1))


def test_every_order_statistic_is_the_sorted_samples_rank(mm1):
    for o in mm1.observes.values():
        assert o.count > 1000
        for field, q in (("min", 0.0), ("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99),
                         ("p999", 0.999), ("max", 1.0)):
            assert getattr(o, field) == _sorted_rank(o.samples, q), (o.name, field)
        assert o.min == o.samples.min() and o.max == o.samples.max()
        assert o.min < o.p50 < o.p90 < o.p95 < o.p99 < o.p999 <= o.max


def test_statistics_are_computed_when_first_read_and_are_the_eager_ones():
    from sq.results import stats
    from sq.results.report import Observe

    program = sq.compile(source=MM1)
    for order in (Observe.SUMMARY_FIELDS, Observe.SUMMARY_FIELDS[::-1]):
        o = sq.run(program).observes["response"]
        assert "mean" not in vars(o) and "p99" not in vars(o) and "ci" not in vars(o)
        assert o.mean == stats.welford(o.samples).mean
        # the mean brought the JSON's other statistics along (one pass over the samples gives
        # them all), not the order statistics the JSON has not
        assert {"cv2", "ci", "p99"} <= set(vars(o)) and "p50" not in vars(o) and "min" not in vars(o)
        want = stats.observe_stats(o.samples)
        assert [getattr(o, k) for k in order] == [getattr(want, k) for k in order]
    with pytest.raises(AttributeError):
        o.no_such_field


def test_quantile_is_the_report_quantile_function(mm1):
    o = mm1.observes["response"]
    assert o.quantile(0.99) == o.p99
    for q in (0.0, 0.1, 0.25, 0.5, 0.77, 0.999, 1.0):
        assert o.quantile(q) == _sorted_rank(o.samples, q)
    with pytest.raises(SqError, match="quantile: q is a number from 0 to 1"):
        o.quantile(1.5)


def test_json_is_still_pyserqs_byte_for_byte(mm1, pyserq):
    assert mm1.to_json() == pyserq.run(pyserq.compile(source=MM1)).json()
    assert list(json.loads(mm1.to_json())["observes"]["response"]) == ["count", "mean", "ci", "cv2", "p99"]


def test_text_report_shows_the_order_statistics(mm1):
    text = mm1.to_text()
    header = next(line for line in text.splitlines() if line.startswith("observe"))
    assert header.split() == ["observe", "count", "mean", "95%", "CI", "cv2", "min", "p50", "p90", "p95",
                              "p99", "p99.9", "max"]
    row = next(line for line in text.splitlines() if line.startswith("response")).split()
    o = mm1.observes["response"]
    assert [float(x) for x in row[-7:]] == [round(v, 4) for v in (o.min, o.p50, o.p90, o.p95, o.p99,
                                                                   o.p999, o.max)]


def test_samples_frame_holds_every_sample(mm1):
    frame = mm1.samples_frame()
    assert list(frame.columns) == ["observe", "time", "value", "session", "turn"]
    assert len(frame) == sum(o.count for o in mm1.observes.values())
    for o in mm1.observes.values():
        part = frame[frame.observe == o.name]
        assert np.array_equal(part.value.to_numpy(), o.samples)
        assert np.array_equal(part.time.to_numpy(), o.times)
        assert np.array_equal(part.session.to_numpy(), o.sessions)
        # no `turn;` runs in this session: turn_no stays 0
        assert (part.turn == 0).all() and (part.time >= mm1.warmup).all()
    # the two observes of a session share its serial and time
    a, b = (frame[frame.observe == n] for n in ("response", "twice"))
    assert np.array_equal(a.session.to_numpy(), b.session.to_numpy())
    assert np.array_equal(2 * a.value.to_numpy(), b.value.to_numpy())


def test_tables_carry_the_seed_and_integer_indices():
    report = sq.run(sq.compile(source=ARRAY))
    frames = report.to_pandas()
    for name, frame in frames.items():
        assert (frame.seed == 2).all(), name
    assert list(frames["observes"].columns)[:2] == ["seed", "name"]
    assert {"min", "p50", "p90", "p95", "p99", "p999", "max"} <= set(frames["observes"].columns)
    stages, pools = frames["stages"], frames["pools"]
    assert str(stages["index"].dtype) == "Int64" and str(pools["index"].dtype) == "Int64"
    assert stages["index"].tolist()[:3] == [0, 1, 2] and stages["index"].isna().tolist()[3]
    assert pools["index"].tolist() == [0, 1]


def test_without_samples_the_order_statistics_come_from_the_histogram(mm1):
    # samples="none": min and max exact, the others within the histogram's 0.5 %
    light = sq.run(sq.compile(source=MM1), samples="none")
    for name, exact in mm1.observes.items():
        o = light.observes[name]
        assert o.samples is None and o.count == exact.count
        assert o.min == exact.min and o.max == exact.max
        for field in ("p50", "p90", "p95", "p99", "p999"):
            assert abs(getattr(o, field) / getattr(exact, field) - 1) <= 0.005, (name, field)
        assert o.quantile(0.99) == o.p99
    assert light.to_pandas()["observes"].p50.notna().all()
    with pytest.raises(sq.SqError, match="samples='none'"):
        light.samples_frame()

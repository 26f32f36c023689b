"""`arrive replay`: sessions arrive at their trace records' times (an extension of 0.1.2).

The exactness check: on the shipped Azure 2023 files, the per-minute counts of a run's arrivals
equal the file's, counted from an independent parse of its timestamps (Decimal arithmetic).
"""
from __future__ import annotations

import csv
import datetime as dt
import math
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

import sq
from sq.errors import SqError

ROOT = Path(__file__).resolve().parents[2]
AZURE = ROOT / "examples" / "replay" / "azure-2023"
CONV = AZURE / "AzureLLMInferenceTrace_conv.csv"
CODE = AZURE / "AzureLLMInferenceTrace_code.csv"


def _file_seconds(path: Path) -> list[Decimal]:
    """Each record's time in seconds from the first, exactly (the standard library's parse)."""
    with open(path, newline="") as f:
        stamps = [row["TIMESTAMP"] for row in csv.DictReader(f)]

    def seconds(s):
        day, frac = s.split(".")
        return Decimal(int(dt.datetime.fromisoformat(day).replace(tzinfo=dt.timezone.utc).timestamp())) \
            + Decimal("0." + frac)
    t = [seconds(s) for s in stamps]
    return [x - t[0] for x in t]


def _arrivals(trace, arrive="replay", *, horizon=1e6, seed=1, sets=None):
    source = f"""
    run {{ horizon {horizon}; }}
    workload {{ arrive {arrive}; trace "{trace}"; init {{ observe t = now; observe s = serial; }} }}
    session {{ }}
    """
    report = sq.run(sq.compile(source=source, sets=sets or {}), seed=seed)
    return report


def _times(trace, arrive="replay", **kw):
    from sq.lower.lowering import lower
    from sq import _engine
    source = f"""
    workload {{ arrive {arrive}; trace "{trace}"; init {{ observe t = now; }} }}
    session {{ }}
    """
    program = sq.compile(source=source, sets=kw.pop("sets", {}), horizon=kw.pop("horizon", 1e6))
    raw = _engine.run(lower(program.to_dict(exact=True)), **kw)
    return raw, raw.observes[0].samples


@pytest.mark.parametrize("path", [CONV, CODE], ids=["conv", "code"])
def test_per_minute_counts_equal_the_files(path):
    raw, t = _times(path)
    want = _file_seconds(path)
    assert raw.arrivals == len(want) == len(t)
    minutes = [int(x // 60) for x in want]
    assert np.array_equal(np.bincount(np.floor(t / 60).astype(int)), np.bincount(minutes))
    # and each time is the file's, within a few ulps of its exact value
    exact = np.array([float(x) for x in want])
    assert np.abs(t - exact).max() <= 4 * np.spacing(exact.max())


def test_speed_divides_time_and_is_settable():
    _, t1 = _times(CONV)
    _, t2 = _times(CONV, "replay(k)", sets={"k": 2.5}) if False else _times(CONV, "replay(2.5)")
    assert np.array_equal(t2, t1 / 2.5)
    source = f"""
    let k = 1;
    run {{ horizon 1e6; }}
    workload {{ arrive replay(k); trace "{CONV}"; init {{ observe t = now; }} }}
    session {{ }}
    """
    from sq.lower.lowering import lower
    from sq import _engine
    raw = _engine.run(lower(sq.compile(source=source, sets={"k": 4}).to_dict(exact=True)))
    assert np.array_equal(raw.observes[0].samples, t1 / 4)


def test_window_copies_and_keep():
    _, t = _times(CONV)
    _, w = _times(CONV, "replay window(600, 1200)")
    inside = t[(t >= 600) & (t < 1200)]
    assert np.array_equal(w, inside - 600)
    _, c = _times(CONV, "replay window(600, 1200) copies(3, 7.5)")
    assert np.array_equal(c, np.sort(np.concatenate([w, w + 7.5, w + 15])))
    kept = {}
    for seed in (1, 2):
        raw, k = _times(CONV, "replay keep(0.25)", seed=seed)
        kept[seed] = k
        n, p = len(t), 0.25
        # a binomial count: within 5 standard deviations of n p
        assert abs(len(k) - n * p) < 5 * math.sqrt(n * p * (1 - p))
        assert np.isin(k, t).all() and (np.diff(k) >= 0).all()
    assert not np.array_equal(kept[1], kept[2])
    assert np.array_equal(_times(CONV, "replay keep(0.25)", seed=1)[1], kept[1])


def test_a_whole_trace_at_its_pace_is_scheduled_without_copies():
    """The schedule of a trace replayed once at its pace is the corpus's arrivals themselves and
    no sessions (arrival i replays session i: 16 B a request of a week-long trace not held twice);
    a window that leaves some out, copies or a speed make arrays (test_window_copies_and_keep runs both)."""
    from sq.traces.replay import schedule
    arrival = np.array([0.0, 1.0, 1.0, 4.0])
    plain = {"window": None, "copies": 1, "shift": 0.0, "keep": 1.0, "speed": 1.0}
    at, of = schedule(arrival, plain, None, "t")
    assert at is arrival and of is None
    at, of = schedule(arrival, {**plain, "window": [0.0, math.inf]}, None, "t")
    assert at is arrival and of is None
    at, of = schedule(arrival, {**plain, "window": [1.0, 4.0]}, None, "t")
    assert at.tolist() == [0.0, 0.0] and of.tolist() == [1, 2]
    at, of = schedule(arrival, {**plain, "copies": 2, "shift": 0.5}, None, "t")
    assert at.tolist() == [0.0, 0.5, 1.0, 1.0, 1.5, 1.5, 4.0, 4.5] and of.tolist() == [0, 0, 1, 2, 1, 2, 3, 3]
    at, of = schedule(arrival, {**plain, "speed": 2.0}, None, "t")
    assert at.tolist() == [0.0, 0.5, 0.5, 2.0] and of is None


def test_sessions_replay_their_turns(tmp_path):
    trace = tmp_path / "b2.csv"
    trace.write_text("Session ID,Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,Elapsed time\n"
                     "s9,10,ChatGPT,100,10,110,Conversation log,1.5\n"
                     "s3,11,ChatGPT,200,20,220,Conversation log,1\n"
                     "s9,15,ChatGPT,300,30,330,Conversation log,2\n")
    source = f"""
    stage user : delay;
    run {{ horizon 100; }}
    workload {{ arrive replay; trace "{trace}"; }}
    session {{ loop {{ turn; observe n = new; observe at = now; branch (!more) {{ end; }} run user (think); }} }}
    """
    from sq.lower.lowering import lower
    from sq import _engine
    raw = _engine.run(lower(sq.compile(source=source).to_dict(exact=True)))
    n, at = raw.observes
    # s9 arrives at 0 (turn 100, then 300 after its 5 s think), s3 at 1
    assert n.samples.tolist() == [100, 200, 300] and at.samples.tolist() == [0, 1, 5]
    assert raw.arrivals == 2


def test_the_report_matches_between_runs_and_limits():
    report = _arrivals(CONV, horizon=600)
    assert report.arrivals == sum(1 for x in _file_seconds(CONV) if x <= 600)


@pytest.mark.parametrize("arrive, trace, message", [
    ("replay(0)", CONV, "the replay speed must be a finite number above 0, found 0"),
    ("replay keep(1.5)", CONV, "keep(p) needs 0 < p <= 1, found 1.5"),
    ("replay window(5, 5)", CONV, "needs 0 <= from < to"),
    ("replay copies(2.5, 1)", CONV, "needs a whole n"),
])
def test_bad_replay_constants_point_at_the_program(arrive, trace, message):
    source = f'run {{ horizon 10; }} workload {{ arrive {arrive}; trace "{trace}"; }}\nsession {{ }}\n'
    with pytest.raises(SqError) as info:
        sq.compile(source=source)
    assert message in info.value.message and info.value.line == 1


def test_replay_needs_a_trace_with_times(tmp_path):
    with pytest.raises(SqError, match="arrive replay needs a trace"):
        sq.compile(source="run { horizon 10; } workload { arrive replay; }\nsession { }\n")
    serq = tmp_path / "t.csv"
    serq.write_text("1,0,5,5,0\n")
    with pytest.raises(SqError, match="needs arrival times"):
        sq.run(sq.compile(source=f'run {{ horizon 10; }} workload {{ arrive replay; trace "{serq}"; }}\nsession {{ }}\n'))


def test_ir_round_trip_keeps_the_replay():
    program = sq.compile(source=f"run {{ horizon 10; }} workload {{ arrive replay(2) window(1, 2) keep(0.5) copies(2, 3); "
                                f'trace "{CONV}"; }}\nsession {{ }}\n')
    d = program.to_dict()
    assert d["arrival"] == {"Replay": {"speed": 2.0, "window": [1.0, 2.0], "keep": 0.5, "copies": 2.0, "shift": 3.0}}
    from sq.ir import Program
    assert Program.from_json(program.to_json()).to_dict() == d

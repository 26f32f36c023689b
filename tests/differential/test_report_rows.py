"""The report's rows the engine makes itself (`_engine.run(report=True)`, what `sq.run` asks for)
against pyserq 0.1.2's JSON text: runs that end before the middle of their measured window (a
sweep's, by their arrival limit), so that no raw results are made. A warm-up whose samples
before it are cut off, one with a sample exactly at it (kept: samples at t >= warmup), a pool, a
ps stage, a delay, an array of stages, a gauge, a step stage with inter-token gaps; each checked to take the
path (Report.from_results is not called).
"""
from __future__ import annotations

import pytest

import sq
from sq.bench.models import CHAT, MM1
from tests.helpers.oracle import needs_reference

QUEUES = """
stage shared : ps(2);
pool units { cap 5; }
gauge lanes_waiting = queue(lanes[2]);
stage lanes[3] : fifo(2); stage pause : delay;
workload { arrive poisson(1.2); }
session {
  set t0 = now;
  hold units (2) { run shared (~h2(1, 3)); run pause (~uniform(0, 2)); }
  observe held = now - t0;
  run lanes[2] (~exp(0.8));
  observe total = now - t0;
}
"""
# every sample at a whole time: 2, 3, 4, ... (one exactly at the warm-up, 3)
WHOLE_TIMES = """
stage d : delay;
workload { arrive renewal(1); }
session { run d (1); observe at = now; observe after = now - 1; }
"""

# zeros of both signs, the -0s first (0 * (now - 30): a sample before time 30 is -0): the p99 is
# +0, which a short array's selection (`select_top`, kept while scanning) must not skip for
# comparing equal to the -0 it keeps
SIGNED_ZEROS = """
stage d : delay;
workload { arrive renewal(1); }
session { run d (1); observe z = 0 * (now - 30); }
"""

# independent samples (a draw each): the greatest lie far apart, not in a run of high ones
DRAWS = """
stage d : delay;
workload { arrive renewal(1); }
session { set w = ~exp(1); run d (1); observe x = w; }
"""

PROGRAMS = {
    "sweep_mm1": (MM1, dict(horizon=1e9, arrivals=1000), 3),
    "sweep_mm1_warmup": (MM1, dict(horizon=1e9, arrivals=400, warmup=50), 4),
    "queues_warmup": (QUEUES, dict(horizon=1e6, arrivals=300, warmup=40), 5),
    "queues": (QUEUES, dict(horizon=1e6, arrivals=120), 6),
    "sample_at_the_warmup": (WHOLE_TIMES, dict(horizon=1e6, arrivals=20, warmup=3), 1),
    "chat_step": (CHAT, dict(horizon=1e6, arrivals=60, warmup=20), 7),
    "signed_zeros_at_the_p99": (SIGNED_ZEROS, dict(horizon=1e6, arrivals=60), 1),
    "draws_p99": (DRAWS, dict(horizon=1e6, arrivals=1000), 2),
}


@needs_reference
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_the_engines_rows_report_pyserqs_json_text(name, monkeypatch):
    import pyserq

    from sq.results.report import Report

    source, settings, seed = PROGRAMS[name]

    def no_raw_results(raw):
        raise AssertionError("the run's report was made from raw results")

    monkeypatch.setattr(Report, "from_results", no_raw_results)
    report = sq.run(sq.compile(source=source, seed=seed, **settings))
    assert report.end < report.warmup + (report.horizon - report.warmup) / 2   # (before the middle)
    theirs = pyserq.run(pyserq.compile(source=source, seed=seed, **settings)).json()
    assert report.json() == theirs
    if name == "sample_at_the_warmup":   # samples at 3, 4, ..., 21: the one at the warm-up kept
        assert report.observes["at"].count == 19 and report.observes["at"].times[0] == 3.0
    if name == "signed_zeros_at_the_p99":   # 28 samples -0 (times 2..29), then 32 of +0: the p99 +0
        assert str(report.observes["z"].p99) == "0.0" and str(report.observes["z"].samples[0]) == "-0.0"

"""Overload and headroom (issue 11): the steady-state warning, the engine's snapshot at the
middle of the measured window, and the step stages' budget use and batch size."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

import sq
from sq.results import steady
from sq.results.raw import Area, Middle, PoolRaw, RawResults

ROOT = Path(__file__).resolve().parents[2]
VLLM = ROOT / "examples" / "single-turn" / "vllm_single_turn.sq"


def _vllm(rate, horizon=300, **kw):
    return sq.run(sq.compile(VLLM, sets={"rate": rate}, horizon=horizon, **kw))


def test_an_overloaded_run_warns_once_naming_what_grows():
    report = _vllm(12)
    assert len(report.warnings) == 1
    text = report.warnings[0]
    assert "live sessions grow" in text and "pool `seqs` queue grows" in text
    rate = float(re.search(r"live sessions grow ([0-9.e+-]+) per unit of time", text).group(1))
    arrived, ended = map(int, re.search(r"since warmup (\d+) sessions arrived and (\d+) ended", text).groups())
    assert ended == report.ended
    # growing steadily, the live count's slope is also the surplus of arrivals over ends per unit of time
    surplus = (arrived - ended) / (report.end - report.warmup)
    assert surplus > 1.0 and abs(rate / surplus - 1) < 0.25
    lines = [line for line in report.to_text().splitlines() if line.startswith("warning:")]
    assert lines == [f"warning: {text}"]
    assert "warning" not in report.to_json()


@pytest.mark.parametrize("rate", [3, 6, 8])
def test_a_stable_run_has_no_warning(rate):
    report = _vllm(rate)
    assert report.warnings == []
    assert "warning:" not in report.to_text()


def test_budget_use_shows_headroom_that_util_does_not():
    reports = [_vllm(rate, horizon=120) for rate in (3, 6, 9)]
    engines = [r.stage("engine") for r in reports]
    assert all(e.utilization > 0.999 for e in engines)      # util says "full" at every rate
    uses = [e.mean_budget_use for e in engines]
    batches = [e.mean_batch for e in engines]
    assert uses == sorted(uses) and uses[0] < 0.5 * uses[-1]
    assert batches == sorted(batches) and all(0 < u < 1 for u in uses)
    row = json.loads(reports[0].to_json())["stages"][0]
    assert "mean_budget_use" not in row and "mean_batch" not in row
    stages = reports[0].to_pandas()["stages"]
    assert stages.loc[0, "mean_budget_use"] == engines[0].mean_budget_use


def test_budget_use_and_batch_are_the_iteration_trace_means():
    # warmup 0: every iteration counts; the trace lists each one's jobs and tokens
    report = _vllm(6, horizon=30, warmup=0)
    traced = sq.run(sq.compile(VLLM, sets={"rate": 6}, horizon=30, warmup=0), trace_iterations=True)
    jobs = [line.split()[2:] for line in traced.iteration_trace]
    tokens = [sum(float(entry.split(":")[2][1:]) for entry in it) for it in jobs]
    engine = report.stage("engine")
    assert len(jobs) == engine.iterations
    assert math.isclose(engine.mean_budget_use, sum(t / 2048 for t in tokens) / len(tokens), rel_tol=1e-9)
    assert math.isclose(engine.mean_batch, sum(len(it) for it in jobs) / len(jobs), rel_tol=1e-9)


ONE_JOB = """
stage s : fifo(1);
workload { arrive batch(1); }
session { run s (10); observe done = now; }
run { horizon 20; warmup 4; }
"""


def test_the_engine_snapshots_the_middle_of_the_measured_window():
    from sq import _engine
    from sq.lower.lowering import lower

    raw = _engine.run(lower(sq.compile(source=ONE_JOB).to_dict(exact=True)))
    # one session, live over [0, 10]; the window is [4, 20], its middle 12
    assert raw.middle.time == 12.0
    assert raw.middle.live == 6.0 and raw.live.integral == 6.0
    assert raw.middle.warm_arrivals == 1


def _raw(first, second, last, arrivals=100):
    # window [0, 100], middle 50: the live count's integral halves as given
    return RawResults(horizon=100, end=100, warmup=0, seed=1, arrivals=arrivals, ended=arrivals,
                      live=Area(integral=50 * (first + second), value=last),
                      pools=[PoolRaw("kv", queue=Area(integral=0.0, value=0.0))],
                      middle=Middle(time=50, live=50 * first, queues=[0.0], warm_arrivals=0))


def test_the_growth_rules():
    assert steady.warnings(_raw(10, 30, 40)) != []              # +20 over 50: 0.4 per unit, 40 % of arrivals
    assert steady.warnings(_raw(10, 12, 40)) == []              # within a quarter (+1)
    assert steady.warnings(_raw(10, 30, 5)) == []               # drained by the end
    assert steady.warnings(_raw(10, 30, 40, arrivals=100_000)) == []   # a swing, not a pile-up
    assert steady.warnings(_raw(0.1, 0.9, 5)) == []             # small counts never warn
    text = steady.warnings(_raw(10, 30, 40))[0]
    assert "live sessions grow 0.4 per unit of time (mean 10 -> 30)" in text


def test_cli_prints_the_warning(tmp_path):
    import subprocess
    import sys

    args = [sys.executable, "-m", "sq", "run", str(VLLM), "--set", "rate=12", "--horizon", "300"]
    text = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    assert text.returncode == 0 and text.stdout.rstrip().splitlines()[-1].startswith("warning: not in steady state")
    as_json = subprocess.run(args + ["--json"], capture_output=True, text=True, cwd=ROOT)
    assert "warning" not in as_json.stdout and json.loads(as_json.stdout)["arrivals"] > 0
    assert as_json.stderr.startswith("warning: not in steady state")

"""The timeline (issue 11): a Chrome/Perfetto trace-event file written as the run goes.

The file is checked against the trace-event format (Google's "Trace Event Format"
document: a JSON object whose `traceEvents` holds events with `ph`, `name`, `pid`, `tid`,
`ts` in microseconds, `dur` for complete events), slices on one thread nest, and what
it shows is checked against what the engine reports otherwise: the iteration trace
(SERQ_TRACE_ITER lines), the preemption counters, the stage completions.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

import sq

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
VLLM = EXAMPLES / "single-turn" / "vllm_single_turn.sq"
PHASES = {"M", "X", "C", "i"}


def _reject(constant):
    raise ValueError(f"{constant} is not JSON")


def load(path) -> list[dict]:
    """The events of a trace file, checked against the trace-event format."""
    text = Path(path).read_text(encoding="utf-8")
    doc = json.loads(text, parse_constant=_reject)        # NaN and Infinity are not JSON
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    for e in doc["traceEvents"]:
        assert e["ph"] in PHASES, e
        assert isinstance(e["name"], str) and e["name"], e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        if e["ph"] == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values()), e
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "process_sort_index", "thread_name"), e
    return doc["traceEvents"]


def assert_nested(events):
    """Complete events on one thread nest: each lies inside, or after, the ones open before it."""
    by_thread = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            by_thread[e["pid"], e["tid"]].append((e["ts"], -(e["ts"] + e["dur"]), e["name"]))
    for thread, slices in by_thread.items():
        slices.sort()
        stack = []
        for ts, neg_end, name in slices:
            end = -neg_end
            while stack and stack[-1] <= ts + 1e-3:      # ts and dur are rounded to nanoseconds
                stack.pop()
            assert not stack or end <= stack[-1] + 1e-3, (thread, name, ts, end, stack[-1])
            stack.append(end)


@pytest.fixture(scope="module")
def vllm(tmp_path_factory):
    """An overloaded run (preemptions, queues), with the iteration trace for comparison."""
    path = tmp_path_factory.mktemp("timeline") / "vllm.json"
    program = sq.compile(VLLM, sets={"rate": 12}, horizon=40, warmup=0)
    report = sq.run(program, trace_iterations=True, timeline=path)
    return report, load(path)


def test_the_file_is_trace_event_json_and_slices_nest(vllm):
    _, events = vllm
    assert_nested(events)
    names = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names == {"stages", "pools", "sessions"}


def test_one_slice_per_iteration_of_the_iteration_trace(vllm):
    report, events = vllm
    iterations = [e for e in events if e.get("cat") == "iteration"]
    assert len(iterations) == len(report.iteration_trace) == report.stage("engine").iterations > 1000
    for e, line in zip(sorted(iterations, key=lambda e: e["ts"]), report.iteration_trace):
        _, when, *entries = line.split()
        assert f"{e['ts'] / 1e6:.4f}" == when
        assert e["args"]["batch"] == len(entries)
        tokens = [(entry.split(":")[2][0], float(entry.split(":")[2][1:])) for entry in entries]
        assert math.isclose(e["args"]["prefill_tokens"], sum(t for m, t in tokens if m == "p"), abs_tol=1e-9)
        assert math.isclose(e["args"]["decode_tokens"], sum(t for m, t in tokens if m == "d"), abs_tol=1e-9)
        assert e["args"]["decodes"] == sum(1 for m, _ in tokens if m == "d")
    # one in flight at a time: each iteration ends before the next starts
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in iterations)
    assert all(b[0] >= a[1] - 1e-3 for a, b in zip(spans, spans[1:]))


def test_sessions_pools_and_preemptions(vllm):
    report, events = vllm
    sessions = [e for e in events if e.get("cat") == "session"]
    assert len(sessions) == report.arrivals               # every session: ended, or alive at the end
    preempted = [e for e in events if e["ph"] == "i" and e["name"] == "preempted"]
    assert len(preempted) == report.pool("kv").preemptions > 0
    holds = [e for e in events if e.get("cat") == "hold"]
    assert holds and all(e["name"] == "hold seqs, kv" for e in holds)
    # a preempted hold ends and its session waits again: one more hold slice per preemption
    assert len(holds) == report.arrivals - _never_admitted(events) + len(preempted)
    counters = [e for e in events if e["ph"] == "C"]
    assert {e["name"] for e in counters} == {"seqs", "kv"}
    assert max(e["args"]["used"] for e in counters if e["name"] == "kv") <= 3072 * 16
    assert max(e["args"]["queue"] for e in counters if e["name"] == "seqs") > 10


def _never_admitted(events) -> int:
    """Sessions that never got their hold: their thread has a wait slice and no hold."""
    waits = {e["tid"] for e in events if e.get("cat") == "wait"}
    held = {e["tid"] for e in events if e.get("cat") == "hold"}
    return len(waits - held)


def test_fifo_services_spread_over_lanes(tmp_path):
    path = tmp_path / "mmc.json"
    report = sq.run(sq.compile(EXAMPLES / "single-turn" / "mmc.sq", horizon=300, warmup=0), timeline=path)
    events = load(path)
    assert_nested(events)
    jobs = [e for e in events if e.get("cat") == "service"]
    assert len(jobs) == report.stages[0].completed
    lanes = {e["tid"] for e in jobs}
    assert 1 < len(lanes) <= 8                            # 8 servers: never more than 8 at once
    waits = [e["args"]["wait"] for e in jobs]
    assert min(waits) == 0 and max(waits) > 0              # Erlang C: some wait, most do not


def test_a_window_keeps_what_overlaps_it(tmp_path, vllm):
    _, everything = vllm
    path = tmp_path / "window.json"
    sq.run(sq.compile(VLLM, sets={"rate": 12}, horizon=40, warmup=0), timeline=path, timeline_window=(10, 12))
    events = load(path)
    lo, hi = 10e6, 12e6

    def overlapping(e):
        return e["ts"] + e.get("dur", 0) >= lo and e["ts"] <= hi

    assert all(overlapping(e) for e in events if e["ph"] in "Xi")
    assert all(lo <= e["ts"] <= hi for e in events if e["ph"] == "C")
    kept = Counter(e.get("cat") for e in events if e["ph"] == "X")
    whole = Counter(e.get("cat") for e in everything if e["ph"] == "X" and overlapping(e))
    assert kept == whole and kept["iteration"] > 50


def test_the_report_does_not_change(tmp_path):
    program = sq.compile(VLLM, horizon=20)
    assert sq.run(program, timeline=tmp_path / "t.json").to_json() == sq.run(program).to_json()


def test_cli_writes_the_timeline(tmp_path):
    path = tmp_path / "cli.json"
    run = subprocess.run([sys.executable, "-m", "sq", "run", str(VLLM), "--horizon", "5", "--warmup", "0", "--timeline", str(path),
                          "--timeline-window", "1:2"], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    events = load(path)
    assert any(e.get("cat") == "iteration" for e in events)
    bad = subprocess.run([sys.executable, "-m", "sq", "run", str(VLLM), "--timeline", str(tmp_path / "no" / "t.json")],
                         capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and "cannot write timeline" in bad.stderr
    with pytest.raises(sq.SqError, match="empty"):
        sq.run(sq.compile(VLLM, horizon=5, warmup=0), timeline=path, timeline_window=(3, 2))
    # a window without a timeline is refused, as --timeline-window without --timeline (it was ignored)
    with pytest.raises(sq.SqError, match=r"run: timeline_window needs timeline="):
        sq.run(sq.compile(VLLM, horizon=5, warmup=0), timeline_window=(0, 1))


@pytest.mark.parametrize("path", sorted(EXAMPLES.rglob("*.sq")), ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_gives_a_well_formed_timeline(path, tmp_path):
    program = sq.compile(path)
    out = tmp_path / "t.json"
    # a stretch after the warm-up, a tenth of the run long
    h, w = program.horizon, program.warmup
    report = sq.run(program, timeline=out, timeline_window=(w, w + (h - w) / 10))
    events = load(out)
    assert_nested(events)
    assert any(e["ph"] == "X" for e in events)
    iterations = sum(1 for e in events if e.get("cat") == "iteration")
    assert (iterations > 0) == any(s.iterations > 0 for s in report.stages)


def test_a_stopped_run_leaves_a_complete_file(tmp_path):
    # a wall limit stops the run between instants: the file still closes as JSON, sessions alive then included
    path = tmp_path / "stopped.json"
    report = sq.run(sq.compile(VLLM, horizon=1e6, warmup=0), timeline=path, wall_limit=0.3)
    assert report.stopped == "wall limit" and report.end < 1e6
    events = load(path)
    assert_nested(events)
    assert sum(1 for e in events if e.get("cat") == "session") == report.arrivals

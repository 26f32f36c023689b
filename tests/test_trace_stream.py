"""The debug traces streamed: the engine keeps one chunk of ITER / EVICT entries and hands it to
a sink (a callable or a file) as the run goes, so a long trace takes no more memory than a short
one. The lines are the collected ones (`report.iteration_trace`, compared with pyserq's
SERQ_TRACE_ITER elsewhere), byte for byte and in order."""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

import sq
from hostile import run_script

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "examples" / "single-turn" / "vllm_single_turn.sq"   # preempts and evicts


@pytest.fixture(scope="module")
def collected():
    return sq.run(sq.compile(str(PROGRAM)), trace_iterations=True, trace_evictions=True, dump_pools=True)


def test_callable_sinks_get_the_collected_lines_in_chunks(collected):
    chunks = {"ITER": [], "EVICT": []}
    report = sq.run(sq.compile(str(PROGRAM)), trace_iterations=chunks["ITER"].append,
                    trace_evictions=chunks["EVICT"].append)
    assert report.iteration_trace == [] and report.eviction_trace == []
    assert report.to_json() == collected.to_json()
    for kind, whole in (("ITER", collected.iteration_trace), ("EVICT", collected.eviction_trace)):
        assert [line for chunk in chunks[kind] for line in chunk] == whole
        # streamed: more than one chunk, none of them the whole trace
        assert len(chunks[kind]) > 1 and max(map(len, chunks[kind])) < len(whole)


def test_file_sink_gets_one_line_per_entry(collected):
    out = io.StringIO()
    sq.run(sq.compile(str(PROGRAM)), trace_evictions=out)
    assert out.getvalue() == "".join(f"{line}\n" for line in collected.eviction_trace)


def test_cli_streams_the_same_lines_in_the_same_order(collected):
    out = subprocess.run([sys.executable, "-m", "sq", "run", str(PROGRAM), "--json", "--trace-iterations",
                          "--trace-evictions", "--dump-pools"], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    whole = collected.iteration_trace + collected.eviction_trace + collected.pool_dump
    assert out.stderr == "".join(f"{line}\n" for line in whole)
    assert out.stdout.strip() == collected.to_json()


def test_a_sink_that_raises_stops_the_run_with_its_exception():
    calls = []

    def sink(lines):
        calls.append(len(lines))
        raise ValueError("disk full")

    with pytest.raises(ValueError, match="disk full") as stop:
        sq.run(sq.compile(str(PROGRAM)), trace_evictions=sink)
    assert calls and len(calls) == 1        # not asked again after it failed
    assert stop.value.report.stopped == "interrupted" and stop.value.report.end < 60


# The peak RSS after a short streamed run (its chunk already full), then after a run fifteen
# times longer streamed (a 23 MB trace); and, in another child, after that run with the trace
# collected whole.
PEAKS = """
import os, resource, sq
program = sq.compile({path!r})
for horizon, sink in {runs}:
    with open(os.devnull, "w") as out:
        report = sq.run(program, horizon=horizon, trace_iterations=out if sink == "file" else sink)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)   # KiB on Linux
print(sum(s.iterations for s in report.stages), len(report.iteration_trace))
"""


def peaks(runs):
    r = run_script(PEAKS.format(path=str(PROGRAM), runs=runs), memory_mb=2048, timeout=300)
    assert r.code == 0, r
    return list(map(int, r.stdout.split()))


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux only")
def test_a_long_trace_streams_in_bounded_memory():
    short, streamed, iterations, kept = peaks([(60, "file"), (900, "file")])
    assert iterations > 60000 and kept == 0
    assert streamed - short < 5 * 1024, (short, streamed)
    # the control: the same lines kept whole do take memory (~23 MB of text as Python strings)
    whole, _, kept = peaks([(900, True)])
    assert kept == iterations
    assert whole - streamed > 10 * 1024, (streamed, whole)

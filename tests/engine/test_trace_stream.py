"""The debug traces streamed: the engine keeps one chunk of ITER / EVICT entries and hands it to
a sink (a callable or a file) as the run goes, so a long trace takes no more memory than a short
one. The lines are the collected ones (`report.iteration_trace`, compared with pyserq's
SERQ_TRACE_ITER elsewhere), byte for byte and in order."""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import sq

ROOT = Path(__file__).resolve().parents[2]
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


def test_a_path_sink_is_a_file_written_for_the_run(collected, tmp_path):
    """A path (str or PathLike) is the file the lines go to, opened for the run and closed at
    its end (it was taken as True: nothing written, the lines kept in the report's list)."""
    report = sq.run(sq.compile(str(PROGRAM)), trace_iterations=str(tmp_path / "iter.txt"),
                    trace_evictions=tmp_path / "evict.txt")
    assert report.iteration_trace == [] and report.eviction_trace == []
    assert (tmp_path / "iter.txt").read_text() == "".join(f"{line}\n" for line in collected.iteration_trace)
    assert (tmp_path / "evict.txt").read_text() == "".join(f"{line}\n" for line in collected.eviction_trace)


def test_a_path_sink_is_closed_when_the_run_stops_with_an_error(tmp_path, monkeypatch):
    import builtins

    files = []
    real_open = builtins.open

    def recording_open(*args, **kwargs):
        files.append(real_open(*args, **kwargs))
        return files[-1]

    monkeypatch.setattr(builtins, "open", recording_open)
    with pytest.raises(sq.SqError, match="max_memory"):
        sq.run(sq.compile(str(PROGRAM)), trace_iterations=tmp_path / "iter.txt", max_memory=4096)
    monkeypatch.undo()
    assert files and all(f.closed for f in files)


@pytest.mark.parametrize("sink, message", [(5, "trace_iterations is True, a path, an open text file or a callable"),
                                           ("no/such/folder/f.txt", "trace_iterations: cannot write `no/such")])
def test_a_sink_that_is_no_sink_is_an_sq_error(sink, message):
    with pytest.raises(sq.SqError, match=message):
        sq.run(sq.compile(str(PROGRAM)), horizon=5, warmup=0, trace_iterations=sink)


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


def test_the_engine_keeps_one_chunk_of_a_long_trace():
    """max_memory counts the engine's trace entries: a trace whose entries take ten times the
    bound runs within it, as the chunks handed on are no longer counted."""
    program = sq.compile(str(PROGRAM))
    counts = [0, 0]

    def count(lines):
        counts[0] += len(lines)
        counts[1] += sum(len(line.split()) - 2 for line in lines)

    bound = 8 << 20
    sq.run(program, horizon=900, samples="none", max_memory=bound, trace_iterations=count)
    iterations, entries = counts
    assert 16 * iterations + 40 * entries > 10 * bound     # what the engine charges per trace entry


def test_python_keeps_one_chunk_of_lines_at_a_time():
    """The peak of Python's allocations during a streamed run does not grow with its horizon;
    during a collected run it grows with the trace."""
    tracemalloc = pytest.importorskip("tracemalloc")
    program = sq.compile(str(PROGRAM))
    peaks = []
    with open(os.devnull, "w") as out:
        tracemalloc.start()
        try:
            for horizon, trace in ((60, out), (60, out), (200, out), (200, True)):
                tracemalloc.reset_peak()
                report = sq.run(program, horizon=horizon, samples="none", trace_iterations=trace)
                peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    _, short, streamed, whole = peaks       # the first run imports and lowers
    size = sum(map(len, report.iteration_trace))
    assert size > 4 << 20, size
    assert streamed - short < 1 << 20 and whole - streamed > size / 2, (short, streamed, whole, size)


def test_ctrl_c_while_a_chunk_is_formatted_keeps_the_trace_of_the_whole_run(monkeypatch):
    """The trace of a run stopped by Ctrl-C is that of a run whose horizon is where it stopped:
    the chunk being formatted and the entries kept since are handed over, not dropped. The
    SIGINT is real, sent from the 20000th number the engine formats for a trace line: the
    Python code formatting a chunk is where Ctrl-C lands in a traced run (the loop is C)."""
    from sq._support import number_format as numbers

    program = sq.compile(str(PROGRAM), sets={"kv_gib": 1}, horizon=200, warmup=0)
    real, calls = numbers.display, [0]

    def display(x):
        calls[0] += 1
        if calls[0] == 20000:
            os.kill(os.getpid(), signal.SIGINT)
        return real(x)

    lines = {"ITER": [], "EVICT": []}
    monkeypatch.setattr(numbers, "display", display)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt) as stop:
            sq.run(program, trace_iterations=lines["ITER"].extend, trace_evictions=lines["EVICT"].extend)
    finally:
        signal.signal(signal.SIGINT, previous)
        monkeypatch.undo()
    report = stop.value.report
    assert report.stopped == "interrupted" and 0 < report.end < 200
    whole = sq.run(program, horizon=report.end, trace_iterations=True, trace_evictions=True)
    assert len(whole.eviction_trace) > 4096     # more than one chunk
    assert lines["ITER"] == whole.iteration_trace and lines["EVICT"] == whole.eviction_trace


def test_cli_ctrl_c_writes_the_trace_up_to_the_reported_end():
    script = (
        "import os, signal, sys\n"
        "from sq._support import number_format as numbers\n"
        "from sq.__main__ import entry\n"
        "real, calls = numbers.display, [0]\n"
        "def display(x):\n"
        "    calls[0] += 1\n"
        "    if calls[0] == 20000:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    return real(x)\n"
        "numbers.display = display\n"
        "sys.exit(entry(sys.argv[1:]))\n")
    args = [str(PROGRAM), "--json", "--warmup", "0", "--set", "kv_gib=1", "--trace-iterations", "--trace-evictions"]
    out = subprocess.run([sys.executable, "-c", script, "run", *args, "--horizon", "200"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 130, out.stderr[-2000:]
    end = json.loads(out.stdout)["end"]
    assert 0 < end < 200
    whole = subprocess.run([sys.executable, "-m", "sq", "run", *args, "--horizon", repr(end)],
                           capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert whole.returncode == 0 and whole.stderr.count("EVICT") > 4096

    def trace(stderr):
        return [line for line in stderr.splitlines() if line.startswith(("ITER ", "EVICT "))]

    assert trace(out.stderr) == trace(whole.stderr)

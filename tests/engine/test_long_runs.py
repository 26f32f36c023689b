"""Long runs (issue 11): SIGINT and the wall-clock limit stop a run with the report of what ran,
progress never changes a report, and samples="none" keeps summaries whose exact fields equal
the exact mode's and whose approximate ones stay within the documented error.
"""
from __future__ import annotations

import json
import math
import os
import resource
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import sq
from sq import _engine
from sq.results import stats
from sq.engine.progress import Progress, Tracker

from tests.helpers import children

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").rglob("*.sq"))
VLLM = ROOT / "examples" / "single-turn" / "vllm_single_turn.sq"
ENV = children.env()

# M/M/1 that runs far longer than any test waits: fast events
MM1 = """
stage server : fifo(1);
gauge number = queue(server);
run { horizon 1e12; warmup 10; }
workload { arrive poisson(0.9); }
session { set t0 = now; run server (~exp(1)); observe response = now - t0; }
"""
QUANTILE_ERROR = 0.005       # half a 1 % bucket: docs/guide.md, "Long runs"


@pytest.fixture
def mm1(tmp_path) -> Path:
    path = tmp_path / "mm1.sq"
    path.write_text(MM1)
    return path


def _interrupt(cmd: list[str], ready: str = "stderr") -> tuple[subprocess.CompletedProcess, float]:
    """Run cmd; once the run shows progress on `ready` (so it is past start-up, which a loaded
    machine can make slow), and 0.5 s more, send SIGINT: (its outcome, CPU seconds it spent from
    the signal to its exit — the work of stopping, which a busy machine does not stretch as it
    does wall time)."""
    before = _children_cpu()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stream = proc.stderr if ready == "stderr" else proc.stdout
        assert select.select([stream], [], [], 120)[0], "no progress shown"
        time.sleep(0.5)
        assert proc.poll() is None, f"ended before the signal: {proc.communicate()}"
        at_signal = _cpu_seconds(proc.pid)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err), _children_cpu() - before - at_signal
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of a live process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")   # utime, stime


def _children_cpu() -> float:
    """CPU time of this process's children that have ended (and been waited for)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


# -- interrupts -------------------------------------------------------------------------------

@pytest.mark.parametrize("program, extra", [
    ("mm1", []),                                                       # cheap events
    (str(VLLM), ["--horizon", "200000", "--set", "rate=8"]),           # step iterations
], ids=["mm1", "vllm"])
def test_sigint_cli_prints_partial_report_and_exits_130(program, extra, mm1):
    path = str(mm1) if program == "mm1" else program
    done, took = _interrupt([children.PYTHON, "-m", "sq", "run", path, "--json", "--progress", *extra])
    assert done.returncode == 130, done.stderr
    assert took < 1.0   # CPU seconds from the signal to the exit
    report = json.loads(done.stdout)
    assert report["stopped"] == "interrupted"
    assert 0 < report["end"] < report["horizon"]
    assert report["events"] > 0 and report["arrivals"] > 0


def test_sigint_cli_text_says_interrupted_at_the_time_reached(mm1):
    done, _ = _interrupt([children.PYTHON, "-m", "sq", "run", str(mm1), "--progress"])
    assert done.returncode == 130
    head = done.stdout.splitlines()
    end = head[0].split(" end ")[1].split()[0]
    assert head[1].startswith(f"interrupted: stopped at simulated time {end} of horizon 1000000000000")
    assert "observe" in done.stdout


# with a progress callback, and a plain run (the engine's defaults, as a sweep's runs): both
# hand over the report of what ran
@pytest.mark.parametrize("call", [
    'sq.run(program, seed=3, progress=lambda p: print("running", flush=True))',
    'sq.run(program, seed=1, arrivals=5); print("running", flush=True); sq.run(program, seed=3)',
])
def test_sigint_api_raises_keyboard_interrupt_with_the_report(mm1, call):
    # Python keeps SIGINT ignored when it starts so (a suite run as a background job of a
    # script: `pytest &`), and a signal ignored is no interrupt: the script sets the handler a
    # terminal's Python starts with. (The `sq` command sets its own: sq/__main__.py.)
    script = textwrap.dedent(f"""
        import json, signal, sq
        signal.signal(signal.SIGINT, signal.default_int_handler)
        program = sq.compile({str(mm1)!r})
        try:
            {call}
        except KeyboardInterrupt as err:
            r = err.report
            print(json.dumps({{"stopped": r.stopped, "end": r.end, "count": r.observes["response"].count}}))
    """)
    done, took = _interrupt([children.PYTHON, "-c", script], ready="stdout")
    assert done.returncode == 0, done.stderr
    assert took < 1.0   # CPU seconds from the signal to the exit
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["stopped"] == "interrupted" and 10 < got["end"] < 1e12 and got["count"] > 0


# -- the wall-clock limit ---------------------------------------------------------------------

def test_wall_limit_stops_the_run_and_says_so(mm1):
    program = sq.compile(str(mm1))
    t0 = time.process_time()   # work, not wall time, which a busy machine stretches
    report = sq.run(program, wall_limit=0.3)
    assert time.process_time() - t0 < 2.0
    assert report.stopped == "wall limit"
    assert 10 < report.end < report.horizon
    assert '"stopped":"wall limit"' in report.to_json()
    assert report.to_text().splitlines()[1].startswith("wall limit: stopped at simulated time")


def test_wall_limit_report_is_that_of_a_run_to_the_time_reached(mm1):
    """A stop comes between instants: the statistics are those of a run whose horizon is the
    time reached (every event up to it handled, none after)."""
    program = sq.compile(str(mm1))
    stopped = sq.run(program, seed=5, wall_limit=0.2)
    complete = sq.run(program, seed=5, horizon=stopped.end)
    assert complete.stopped is None
    expect = complete.to_dict()
    got = stopped.to_dict()
    assert got.pop("stopped") == "wall limit"
    got["horizon"] = expect["horizon"]
    assert got == expect


def test_wall_limit_cli_exit_status(mm1):
    done = subprocess.run([children.PYTHON, "-m", "sq", "run", str(mm1), "--wall-limit", "0.2"],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60)
    assert done.returncode == 124, done.stderr
    assert "wall limit: stopped at simulated time" in done.stdout


def test_cli_dump_without_samples_is_refused_before_the_run(mm1, tmp_path):
    done = subprocess.run([children.PYTHON, "-m", "sq", "run", str(mm1), "--samples", "none", "--dump",
                           str(tmp_path / "out")], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--samples none" in done.stderr and not done.stdout
    assert not (tmp_path / "out").exists()


def test_samples_is_all_or_none(mm1):
    with pytest.raises(sq.SqError, match="samples is 'all' or 'none'"):
        sq.run(sq.compile(str(mm1)), samples="some")
    done = subprocess.run([children.PYTHON, "-m", "sq", "run", str(mm1), "--samples", "some"],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "samples is 'all' or 'none'" in done.stderr


@pytest.mark.parametrize("bad", [0, -1, float("nan"), "1"])
def test_wall_limit_must_be_positive(bad, mm1):
    with pytest.raises(sq.SqError, match="wall_limit"):
        sq.run(sq.compile(str(mm1)), wall_limit=bad)


# -- progress -----------------------------------------------------------------------------------

def test_progress_never_changes_the_report():
    program = sq.compile(str(ROOT / "examples" / "single-turn" / "mmc.sq"))
    seen: list[Progress] = []
    with_progress = sq.run(program, seed=2, horizon=60000,
                           progress=Tracker(seen.append, 60000, every=0.0))
    without = sq.run(program, seed=2, horizon=60000)
    assert with_progress.to_json() == without.to_json()
    assert seen, "the run was long enough to report progress"
    times = [p.now for p in seen]
    assert times == sorted(times) and 0 <= times[0] and times[-1] == 60000
    assert all(0.0 <= p.fraction <= 1.0 and p.horizon == 60000 for p in seen)
    assert seen[-1].fraction == 1.0 and seen[-1].events == with_progress.events


def test_progress_true_without_tqdm_is_one_note_and_a_plain_line(mm1, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)     # import tqdm fails as if not installed
    report = sq.run(sq.compile(str(mm1)), progress=True, wall_limit=0.5)
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if "pip install 'sq[progress]'" in line]
    assert len(notes) == 1
    assert "%" in err and "ev/s" in err and report.stopped == "wall limit"


def test_progress_must_be_true_or_a_callable(mm1):
    with pytest.raises(sq.SqError, match="progress is True"):
        sq.run(sq.compile(str(mm1)), progress="yes")


def test_progress_callback_error_stops_the_run_and_propagates(mm1):
    def boom(p):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here") as info:
        sq.run(sq.compile(str(mm1)), progress=Tracker(boom, 1e12, every=0.0))
    assert info.value.report.stopped == "interrupted"


def test_progress_bar_is_closed_when_the_run_fails(mm1):
    # an SqError mid-run (here the memory bound) must still end the bar's line
    closed = []
    tracker = Tracker(lambda p: None, 1e12, every=0.0, close=closed.append)
    with pytest.raises(sq.SqError, match="max_memory"):
        sq.run(sq.compile(str(mm1)), progress=tracker, max_memory=1)
    assert len(closed) == 1


# -- samples="none" -----------------------------------------------------------------------------

EXACT_OBSERVE = ("count", "mean", "cv2")


def _pair(path: Path, **settings):
    program = sq.compile(str(path), **settings)
    try:
        exact = sq.run(program)
    except sq.SqError as err:
        pytest.skip(f"{path.name}: {err}")
    return exact, sq.run(program, samples="none")


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _close(approx: float, exact: float, rel: float) -> bool:
    if not (math.isfinite(approx) and math.isfinite(exact)) or exact == 0:
        return _same(approx, exact)
    return abs(approx - exact) <= rel * abs(exact)


def _offline_half_width(samples: np.ndarray, size: int) -> float:
    """The one-pass CI computed from the samples: complete batches of `size` (40 → 20 of 2·size)."""
    k = len(samples) // size
    sums = [math.fsum(samples[i * size:(i + 1) * size]) for i in range(k)]
    return stats.one_pass_half_width(sums, float(size))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT / "examples")))
def test_samples_none_agrees_with_all(path):
    exact, approx = _pair(path)
    e, a = exact.to_dict(), approx.to_dict()
    # everything but the observes' CI and p99 and the gauges' CI is the same to the bit
    for section in ("observes", "gauges"):
        for rows in (e[section], a[section]):
            for row in rows.values():
                row.pop("ci")
                row.pop("p99", None)
    assert a == e
    for name, o in exact.observes.items():
        s = approx.observes[name]
        for q in (0.01, 0.5, 0.9, 0.99, 0.999):
            assert _close(s.quantile(q), o.quantile(q), QUANTILE_ERROR), (name, q)
        assert s.quantile(0.0) == o.quantile(0.0) and s.quantile(1.0) == o.quantile(1.0)
        if o.count >= stats.CI_MIN_SAMPLES:
            assert _close(s.ci, _offline_half_width(o.samples, s.summary.batch_size), 1e-9), name
        else:
            assert s.ci == math.inf
    for name, g in exact.gauges.items():
        # a run to its horizon: the fold's windows are pyserq's 20, up to rounding
        assert _close(approx.gauges[name].ci, g.ci, 1e-9), name


def test_samples_none_keeps_no_sample(mm1):
    report = sq.run(sq.compile(str(mm1), horizon=2000), samples="none")
    o, g = report.observes["response"], report.gauges["number"]
    assert o.samples is None and o.times is None and g.times is None and o.count > 1000
    with pytest.raises(sq.SqError, match="kept no samples"):
        report.dump("unused")


def test_summary_quantiles_of_awkward_samples():
    """Negatives, zeros of both signs, infinities and NaNs of both signs: every rank is the exact
    order statistic within half a bucket, the ends exactly."""
    rng = np.random.default_rng(11)
    xs = np.concatenate([rng.lognormal(0, 2, 3000), -rng.exponential(5, 2000), [0.0, -0.0] * 50,
                         [math.inf, -math.inf, 1e-300, -1e300], [-math.nan] * 3, [math.nan] * 4])
    rng.shuffle(xs)
    summary = _engine.summary_of(xs.tolist())
    m = stats.welford(xs)
    assert (summary.n, summary.mean) == (m.n, m.mean) or math.isnan(summary.mean)
    for rank in range(1, len(xs) + 1, 7):
        q = rank / len(xs)
        want = stats.quantile(xs, q)
        got = stats.summary_quantiles(summary, (q,))[0]
        if math.isnan(want):
            assert math.isnan(got) and math.copysign(1, got) == math.copysign(1, want)
        else:
            assert _close(got, want, QUANTILE_ERROR), (rank, got, want)
    assert stats.summary_quantiles(summary, (1.0,))[0] is not None


def test_one_pass_batches_double_and_keep_20_to_40():
    for n in (19, 20, 39, 40, 41, 80, 81, 1000, 12345):
        s = _engine.summary_of(np.arange(n, dtype=float).tolist())
        assert s.batch_size & (s.batch_size - 1) == 0
        assert len(s.batch_sums) == n // s.batch_size
        assert len(s.batch_sums) <= 40 and (n < 20 or len(s.batch_sums) >= 20)
        assert s.batch_sums.tolist() == [float(sum(range(i * s.batch_size, (i + 1) * s.batch_size)))
                                         for i in range(len(s.batch_sums))]


@pytest.mark.slow
def test_samples_none_memory_is_flat_at_1e7_arrivals(mm1):
    """1e7 arrivals of M/M/1 (one observe, one gauge) in under 100 MB peak RSS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    done = subprocess.run([children.PYTHON, "-m", "sq", "run", str(mm1), "--arrivals", "10000000",
                           "--samples", "none", "--json"], cwd=ROOT, env=ENV, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["arrivals"] == 10_000_000
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert max(peak, before) / 1024 < 100


# -- the command line -------------------------------------------------------------------------

class _Stderr:
    def __init__(self, tty: bool):
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("flags, tty, delay", [
    ([], False, None),                 # not a terminal: no bar
    ([], True, 1.0),                   # a terminal: a bar once the run has taken a second
    (["--no-progress"], True, None),
    (["--progress"], False, 0.0),      # asked for: from the start, terminal or not
])
def test_cli_progress_default_follows_the_terminal(flags, tty, delay, mm1, monkeypatch):
    from sq.cli import main as cli

    monkeypatch.setattr(sys, "stderr", _Stderr(tty))
    args = cli._parser().parse_args(["run", str(mm1), *flags])
    got = cli._progress(args, sq.compile(str(mm1)))
    assert (got is None) if delay is None else (got.delay == delay and got.horizon == 1e12)


def test_cli_samples_none_prints_the_same_counts(mm1):
    def run(*flags):
        done = subprocess.run([children.PYTHON, "-m", "sq", "run", str(mm1), "--horizon", "3000", "--json", *flags],
                              cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    exact, approx = run(), run("--samples", "none")
    assert approx["observes"]["response"]["count"] == exact["observes"]["response"]["count"] > 1000
    assert approx["observes"]["response"]["mean"] == exact["observes"]["response"]["mean"]
    assert approx["gauges"]["number"] == pytest.approx(exact["gauges"]["number"], rel=1e-9)


@pytest.mark.parametrize("horizon", [1e5, 1e12, 1e300])
def test_gauge_fold_of_a_run_ending_before_its_horizon_keeps_20_to_40_windows(horizon, mm1):
    """An arrivals limit ends the run long before the horizon: the windows still number 20 to
    40, and the CI they give is finite (pyserq's 20 windows are of [warmup, end], unknown
    until the end)."""
    from sq.lower.lowering import lower

    program = sq.compile(str(mm1), horizon=horizon, arrivals=5000)
    raw = _engine.run(lower(program.to_dict(exact=True)), samples="none")
    fold = raw.gauges[0].fold
    assert 20 <= len(fold.window_sums) <= 40
    assert 20 * fold.window <= raw.end - raw.warmup < 41 * fold.window
    exact = sq.run(program).gauges["number"]
    approx = sq.run(program, samples="none").gauges["number"]
    assert (approx.mean, approx.min, approx.max) == (exact.mean, exact.min, exact.max)
    assert 0 < approx.ci < math.inf

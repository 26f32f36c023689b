"""Studies (issue 9): sq.sweep, its table, executors, cache, interrupts, metrics and t intervals.

The sweep's promise is exactness: every (point, seed) record is the metrics of
`sq.run(sq.compile(path, sets=point), seed=seed, ...)`, whatever ran it.
"""
from __future__ import annotations

import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sq
from sq.results import metrics as sq_metrics
from sq.study import sweep as study
from sq.errors import SqError

from tests.helpers import children

ROOT = Path(__file__).resolve().parents[2]
MMC = str(ROOT / "examples" / "single-turn" / "mmc.sq")
REPLICA = str(ROOT / "examples" / "multi-turn" / "replica.sq")
GRID = {"lam": [5, 6.4], "c": [8, 9]}
SEEDS = [1, 2, 3]
SHORT = {"horizon": 400.0, "warmup": 50.0}


def _same(a, b) -> bool:
    """Equal floats, NaN equal to NaN: the records of two sweeps, bit for bit."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def _table(records):
    """The records without wall_s (the one metric that is a measurement, not a result)."""
    return [[(k, v) for k, v in r.items() if k != "wall_s"] for r in records]


def _equal_tables(a, b) -> bool:
    ta, tb = _table(a), _table(b)
    return len(ta) == len(tb) and all(
        [k for k, _ in ra] == [k for k, _ in rb] and all(_same(x, y) for (_, x), (_, y) in zip(ra, rb))
        for ra, rb in zip(ta, tb))


@pytest.fixture(scope="module")
def serial():
    return study.sweep(MMC, GRID, SEEDS, executor="serial", metrics=["wait<=1"], **SHORT)


# -- exactness ------------------------------------------------------------------------

def test_every_record_is_the_single_run(serial):
    assert len(serial.records) == 4 * len(SEEDS)
    points = [{"lam": lam, "c": c} for lam in GRID["lam"] for c in GRID["c"]]
    expected = [(p, s) for p in points for s in SEEDS]
    for record, (point, seed) in zip(serial.records, expected):
        assert {k: record[k] for k in ("lam", "c", "seed")} == {**point, "seed": seed}
        report = sq.run(sq.compile(MMC, sets=point), seed=seed, **SHORT)
        mine = sq_metrics.report_metrics(report, ["wait.le(1)"])
        assert list(record)[3:] == list(mine)
        assert all(_same(record[k], v) for k, v in mine.items() if k != "wall_s")
        # p99 is the report's own, to the bit; the other percentiles are order statistics
        wait = report.observes["wait"]
        assert record["wait.p99"] == wait.p99 and record["wait.mean"] == wait.mean
        assert record["wait.count"] == wait.count
        xs = sorted(wait.samples.tolist())
        assert record["wait.min"] == xs[0] and record["wait.max"] == xs[-1]
        assert record["wait.p50"] == xs[math.ceil(0.5 * len(xs)) - 1]
        assert record["wait.le(1)"] == sum(x <= 1 for x in xs) / len(xs)


def test_metric_names_of_arrays_pools_and_the_run():
    report = sq.run(sq.compile(REPLICA, sets={"R": 2}), seed=1, horizon=80, warmup=20)
    m = sq_metrics.report_metrics(report)
    assert set(sq_metrics.program_metric_names(sq.compile(REPLICA, sets={"R": 2}).to_dict())) == set(m)
    assert m["stage.engine[1].iters"] == report.stages_named("engine")[1].iterations
    assert m["pool.kv[0].used"] == report.pools_named("kv")[0].mean_used
    assert m["pool.kv[0].evicted"] == report.pools_named("kv")[0].evicted_units
    assert (m["arrivals"], m["ended"], m["events"]) == (report.arrivals, report.ended, report.events)
    assert m["warnings"] == len(getattr(report, "warnings", []))
    assert m["wall_s"] == report.wall_s > 0


def test_parse_metric_accepts_the_documented_forms_and_nothing_else():
    assert sq_metrics.parse_metric("ttft<=0.5").name == "ttft.le(0.5)"
    assert sq_metrics.parse_metric("ttft.le(2)") == sq_metrics.Metric("ttft.le(2)", "ttft", 2.0)
    for good in ("ttft.p999", "stage.engine[3].util", "pool.kv.preemptions", "mean_live", "g.max"):
        assert sq_metrics.parse_metric(good).name == good
    for bad in ("ttft.p98", "ttft.le(x)", "stage.engine.busy", "pool.kv.admissions", "wall", "ttft<=nan", ""):
        with pytest.raises(SqError):
            sq_metrics.parse_metric(bad)
    with pytest.raises(SqError, match="no observe `ttft`"):
        sq_metrics.check_metrics(["ttft<=1"], sq.compile(MMC))
    with pytest.raises(SqError, match="no such metric"):
        sq_metrics.check_metrics(["stage.engine.util"], sq.compile(MMC))


def test_a_compiled_program_is_compiled_again_with_the_point(serial):
    program = sq.compile(MMC, sets={"mu": 1})
    again = study.sweep(program, GRID, SEEDS, executor="serial", metrics=["wait<=1"], **SHORT)
    assert _equal_tables(again.records, serial.records)
    assert again.provenance["program"] == MMC and again.provenance["overrides"] == {"mu": 1}
    loaded = sq.load(program.to_json())
    assert study.sweep(loaded, {}, [1], executor="serial", **SHORT).records      # no point: runs as it is
    with pytest.raises(SqError, match="^error: sweep: a program read from an IR has no `let`s to vary"):
        study.sweep(loaded, GRID, [1], executor="serial")


def test_a_list_of_points_and_numpy_values():
    np = pytest.importorskip("numpy")
    design = [{"lam": np.float64(5.0)}, {"lam": 6.0, "c": 9}]
    result = study.sweep(MMC, design, [4], executor="serial", **SHORT)
    assert [(r["lam"], r["c"]) for r in result.records] == [(5.0, None), (6.0, 9)]
    assert result.records[1]["wait.mean"] == sq.run(sq.compile(MMC, sets={"lam": 6.0, "c": 9}), seed=4,
                                                    **SHORT).observes["wait"].mean


# -- executors ------------------------------------------------------------------------

def test_threads_give_the_serial_table(serial):
    result = study.sweep(MMC, GRID, SEEDS, executor="threads", jobs=2, metrics=["wait<=1"], **SHORT)
    assert _equal_tables(result.records, serial.records)


UNGUARDED = """
import json, sys, sq
# no `if __name__ == "__main__":` guard: spawned workers must not run this again
result = sq.sweep(sys.argv[1], json.loads(sys.argv[2]), [1, 2, 3], executor="processes", jobs=2,
                  metrics=["wait<=1"], horizon=400.0, warmup=50.0)
print(json.dumps(result.records))
"""


def test_processes_give_the_serial_table_from_an_unguarded_script(serial, tmp_path):
    script = tmp_path / "study.py"   # a file: spawned workers would import it as their __main__
    script.write_text(UNGUARDED)
    done = subprocess.run([children.PYTHON, str(script), MMC, json.dumps(GRID)], capture_output=True,
                          text=True, env=children.env(), timeout=120)
    assert done.returncode == 0, done.stderr
    assert _equal_tables(json.loads(done.stdout), serial.records)


def test_a_stopped_process_pools_wakeup_cannot_race_the_exit():
    # Python < 3.12 wakes a pool's manager thread at exit without the lock under which the thread
    # closes its pipe: a stopped pool's wake-up must not touch the pipe, in the state that race
    # reads (not yet marked closed, its pipe closed)
    from sq.study.executors import owned, process_pool
    pool = process_pool(1)
    with pytest.raises(KeyboardInterrupt):
        with owned(pool):
            assert pool.submit(abs, -1).result() == 1
            wakeup, thread = pool._executor_manager_thread_wakeup, pool._executor_manager_thread
            raise KeyboardInterrupt
    assert not thread.is_alive()       # joined, not left to end during the exit
    wakeup.close()
    wakeup._closed = False
    wakeup.wakeup()


def test_any_concurrent_futures_executor(serial):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        result = study.sweep(MMC, GRID, SEEDS, executor=pool, metrics=["wait<=1"], **SHORT)
    assert _equal_tables(result.records, serial.records)


@pytest.mark.parametrize("processes", [False, True])
def test_a_dask_local_cluster_gives_the_serial_table(serial, processes):
    distributed = pytest.importorskip("distributed")
    options = {} if processes else {"protocol": "tcp://"}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                                  processes=processes, **options) as cluster, distributed.Client(cluster) as client:
        result = study.sweep(MMC, GRID, SEEDS, executor=client, metrics=["wait<=1"], **SHORT)
    assert _equal_tables(result.records, serial.records)


def test_bad_settings_are_refused_before_any_run(monkeypatch):
    monkeypatch.setattr(study, "run_task", _forbidden)
    cases = [({"nope": [1]}, [1], {}, "unknown --set constant `nope`"),
             ({"lam": []}, [1], {}, "`lam` has no values"),
             (GRID, [], {}, "no seeds"),
             (GRID, [-1], {}, "seeds are distinct, each a whole number"),
             (GRID, [1], {"executor": "gpu"}, "unknown executor"),
             (GRID, [1], {"jobs": 0}, "jobs must be"),
             (GRID, [1], {"metrics": ["ttft<=1"]}, "no observe `ttft`"),
             (GRID, [1], {"horizon": 10, "warmup": 20}, "warmup must be below the horizon")]   # sq run's words
    for grid, seeds, kw, message in cases:
        with pytest.raises(SqError, match=message.replace("(", r"\(")):
            study.sweep(MMC, grid, seeds, **{"executor": "serial", **kw})


@pytest.mark.parametrize("grid, words", [
    ({"lam": [5, 5]}, "`lam` is given the value 5 twice"),
    ({"lam": [5, 6], "c": [8, 8.0]}, "`c` is given the value 8 twice (as 8 and 8.0)"),
    ({"lam": [5, "5"]}, "`lam` is given the value 5 twice (as 5 and '5')"),
    ({"lam": ["2*c", " 2*c"]}, "`lam` is given the value '2*c' twice (as '2*c' and ' 2*c')"),
    ([{"lam": 5}, {"lam": 6}, {"lam": 5.0}], "the point lam=5.0 is given twice"),
])
def test_a_repeated_value_is_refused_before_any_run(monkeypatch, grid, words):
    # the summary groups runs by point: a repeated point would count each seed's run twice
    monkeypatch.setattr(study, "run_task", _forbidden)
    with pytest.raises(SqError) as caught:
        study.sweep(MMC, grid, [1, 2], executor="serial")
    assert caught.value.message == f"sweep: {words}; its runs would count twice in the interval"


def test_metrics_may_be_one_name(monkeypatch):
    one = study.sweep(MMC, {"lam": [5]}, [1], executor="serial", metrics="wait<=1", **SHORT)
    assert one.metrics[-1] == "wait.le(1)"
    with pytest.raises(SqError, match="metrics are a metric name or a list of them, found 5"):
        study.sweep(MMC, {"lam": [5]}, [1], executor="serial", metrics=5, **SHORT)


def test_an_interrupt_before_any_run_leaves_tables_with_every_column(monkeypatch):
    pytest.importorskip("pandas")
    args = (MMC, {"lam": [5, 6]}, [1, 2])
    full = study.sweep(*args, executor="serial", metrics=["wait<=1"], **SHORT)

    def stop(task):
        raise KeyboardInterrupt

    monkeypatch.setattr(study, "run_task", stop)
    with pytest.raises(KeyboardInterrupt) as caught:
        study.sweep(*args, executor="serial", metrics=["wait<=1"], **SHORT)
    empty = caught.value.sweep
    assert empty.records == [] and empty.total == 4 and empty.metrics == full.metrics
    assert len(empty.summary()) == 0 and list(empty.summary().columns) == list(full.summary().columns)
    assert len(empty.runs) == 0 and list(empty.runs.columns) == list(full.runs.columns)
    assert list(empty.summary()[["lam", "n"]].columns) == ["lam", "n"]


@pytest.mark.parametrize("seeds, words", [
    ([1, -1], ", found -1"), ([1, 2**64], f", found {2**64}"), ([1, 2.0], ", found 2.0"),
    ([1, True], ", found True"), (["1", "2"], ", found '1'"), ("12", ", found '12'"), (None, ", found None"),
    ([3, 1, 3], "; 3 is given twice"),
])
def test_seeds_are_checked_once_with_one_message_for_the_api_and_the_cli(monkeypatch, capsys, seeds, words):
    from sq.study import capacity as capacity_search
    from sq.cli import main as cli

    monkeypatch.setattr(study, "run_task", _forbidden)
    rule = "seeds are distinct, each a whole number from 0 to 2^64-1"
    with pytest.raises(SqError) as caught:
        study.sweep(MMC, GRID, seeds, executor="serial")
    assert caught.value.message == f"sweep: {rule}{words}"
    with pytest.raises(SqError) as caught:
        capacity_search.capacity(MMC, "c", "wait.mean <= 0.2", seeds=seeds, executor="serial")
    assert caught.value.message == f"capacity: {rule}{words}"
    if isinstance(seeds, list) and all(type(s) is int and s >= 0 for s in seeds):  # what --seeds can say
        text = ",".join(map(str, seeds))
        assert cli.main(["sweep", MMC, "--seeds", text, "-j", "1"]) == 2
        assert f"error: --seeds {text}: {rule}{words}" in capsys.readouterr().err


@pytest.mark.parametrize("seeds, count", [(range(0, 2**64), 2**64), (range(1, 3_000_001, 2), 1_500_000),
                                          (list(range(1_000_001)), 1_000_001)])
def test_seeds_are_at_most_the_clis_cap_checked_before_they_are_listed(monkeypatch, seeds, count):
    from sq.study import capacity as capacity_search
    from sq._support import settings

    monkeypatch.setattr(study, "run_task", _forbidden)
    for run, who in ((study.sweep, "sweep"), (capacity_search.capacity, "capacity")):
        args = (MMC, GRID) if who == "sweep" else (MMC, "c", "wait.mean <= 0.2")
        with pytest.raises(SqError) as caught:
            run(*args, seeds=seeds, executor="serial")
        assert caught.value.message == f"{who}: {count} seeds is more than {settings.MAX_VALUES}"
    assert len(study.seed_list(range(0, settings.MAX_VALUES))) == settings.MAX_VALUES   # the cap itself is fine


def test_seeds_may_be_one_number_a_range_or_numpy_integers():
    np = pytest.importorskip("numpy")
    assert study.seed_list(7) == [7] and study.seed_list(range(3, 6)) == [3, 4, 5]
    got = study.seed_list(np.arange(1, 4, dtype=np.uint64))
    assert got == [1, 2, 3] and all(type(s) is int for s in got)
    with pytest.raises(SqError, match="capacity: give at least two seeds"):
        sq.capacity(MMC, "c", "wait.mean <= 0.2", seeds=[5], executor="serial")


@pytest.mark.parametrize("settings, words", [
    ({"seed": -1}, "the seed is a whole number"), ({"horizon": 10, "warmup": 20}, "need 0 <= warmup < horizon"),
    ({"horizon": math.inf}, "need 0 <= warmup < horizon"), ({"horizon": math.nan}, "horizon must be a number"), ({"arrivals": 0}, "arrivals must be positive"),
    ({"wall_limit": 0}, "wall_limit is a positive number"),
])
def test_run_lowered_checks_its_settings_on_its_own(settings, words):
    lowered = sq.lower_program(sq.compile(MMC))
    with pytest.raises(SqError, match=words):
        sq.run_lowered(lowered, **settings)


def test_a_setting_is_checked_once_on_each_run_path(monkeypatch):
    checked = []
    check = sq._support.settings.checked

    def counted(*args, **settings):
        given = {k: v for k, v in settings.items() if v is not None}
        if given:       # a call with none given checks nothing
            checked.append(given)
        return check(*args, **settings)

    monkeypatch.setattr(sq._support.settings, "checked", counted)
    sq.run(sq.compile(MMC), seed=2, horizon=400, warmup=50)
    assert checked == [{"seed": 2, "horizon": 400, "warmup": 50}]
    checked.clear()
    # a study: its settings once, before any run (in the tasks' IR); each run, its seed
    study.sweep(MMC, {"lam": [5, 6]}, [1, 2], horizon=300, warmup=30, executor="serial")
    assert checked == [{"horizon": 300.0, "warmup": 30.0}] * 2 + [{"seed": s} for s in (1, 2, 1, 2)]


def _die(task):
    """A run whose worker process is killed (as by the out-of-memory killer)."""
    if task == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return {"x": float(task)}


def test_a_worker_killed_mid_run_is_an_error_not_a_hang():
    from sq.study.executors import Executor

    runs = Executor("processes", 2).run(_die, list(range(6)), list(range(6)))
    with pytest.raises(SqError) as caught:
        for _ in runs:
            pass
    assert caught.value.message == ("sweep: a worker process ended in the middle of a run (killed, or out of "
                                    "memory?); the runs that finished are kept with cache=DIR, and a rerun "
                                    "computes only the rest")


def _forbidden(task):
    raise AssertionError("a run started")


_original_run_task = study.run_task


# -- cache ----------------------------------------------------------------------------

def test_a_cached_rerun_performs_no_run(tmp_path, monkeypatch, serial):
    calls = []

    def counting(task):
        calls.append(task.seed)
        return _original_run_task(task)

    monkeypatch.setattr(study, "run_task", counting)
    first = study.sweep(MMC, GRID, SEEDS, executor="serial", cache=tmp_path, metrics=["wait<=1"], **SHORT)
    assert len(calls) == 12 and _equal_tables(first.records, serial.records)
    second = study.sweep(MMC, GRID, SEEDS, executor="serial", cache=tmp_path, metrics=["wait<=1"], **SHORT)
    assert len(calls) == 12
    assert second.records == first.records or _equal_tables(second.records, first.records)
    # lose a third of the runs: only those are computed again
    files = sorted(tmp_path.rglob("*.json"))
    assert len(files) == 12
    for f in files[::3]:
        f.unlink()
    third = study.sweep(MMC, GRID, SEEDS, executor="serial", cache=tmp_path, metrics=["wait<=1"], **SHORT)
    assert len(calls) == 16 and _equal_tables(third.records, serial.records)
    # another horizon is another run
    study.sweep(MMC, {"lam": [5]}, [1], executor="serial", cache=tmp_path, horizon=300.0, warmup=50.0)
    assert len(calls) == 17


def _stored(files, i):
    return json.loads(files[i].read_text())


@pytest.mark.parametrize("stored", ["{}", "[1,2]", "null", '{"wait.count": 1.0}', "RECORD_WITH_TEXT",
                                    "CHANGED_NUMBER", "NAN", "OTHER_SEED", "OTHER_KEY", "DEEP", "HUGE"])
def test_a_cached_file_that_is_not_its_runs_record_is_run_again(tmp_path, monkeypatch, stored):
    # issue 23: records were trusted blindly -- changed numbers, NaNs, a record copied from
    # another seed were used. Each file holds its own key and the checksum of its numbers.
    first = study.sweep(MMC, {"lam": [5]}, [1, 2], executor="serial", cache=tmp_path, **SHORT)
    files = sorted(tmp_path.rglob("*.json"))
    own = _stored(files, 0)
    other = _stored(files, 1)
    record = own["record"]
    text = {"RECORD_WITH_TEXT": json.dumps({**own, "record": {**record, "wait.mean": "x"}}),
            "CHANGED_NUMBER": json.dumps({**own, "record": {**record, "wait.mean": record["wait.mean"] * 2}}),
            "NAN": json.dumps({**own, "record": {**record, "wait.mean": math.nan}}),
            "OTHER_SEED": json.dumps(other),                              # a valid record of another run
            "OTHER_KEY": json.dumps({**other, "key": own["key"]}),        # ... claiming this run's key
            "DEEP": "[" * 100_000 + "]" * 100_000,
            "HUGE": json.dumps({**own, "pad": "x" * (study.RECORD_LIMIT + 1)})}.get(stored, stored)
    files[0].write_text(text)
    calls = []
    monkeypatch.setattr(study, "run_task", lambda task: calls.append(task) or _original_run_task(task))
    again = study.sweep(MMC, {"lam": [5]}, [1, 2], executor="serial", cache=tmp_path, **SHORT)
    assert len(calls) == 1 and _equal_tables(again.records, first.records)
    assert _equal_tables([_stored(files, 0)["record"]], [record])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("special", ["fifo", "devzero"])
def test_a_special_file_at_a_records_path_is_never_read(tmp_path, monkeypatch, special):
    first = study.sweep(MMC, {"lam": [5]}, [1], executor="serial", cache=tmp_path, **SHORT)
    path = next(tmp_path.rglob("*.json"))
    path.unlink()
    os.mkfifo(path) if special == "fifo" else os.symlink("/dev/zero", path)
    again = study.sweep(MMC, {"lam": [5]}, [1], executor="serial", cache=tmp_path, **SHORT)   # no hang
    assert _equal_tables(again.records, first.records)


def test_the_cache_key_is_the_build_not_the_version(tmp_path, monkeypatch):
    from sq._support import files

    study.sweep(MMC, {"lam": [5]}, [1], executor="serial", cache=tmp_path, **SHORT)
    calls = []
    monkeypatch.setattr(study, "run_task", lambda task: calls.append(task) or _original_run_task(task))
    monkeypatch.setattr(study, "build_fingerprint", lambda: "another build")   # a fixed engine, same version
    study.sweep(MMC, {"lam": [5]}, [1], executor="serial", cache=tmp_path, **SHORT)
    assert len(calls) == 1 and len(files.build_fingerprint()) == 16


def test_threads_sharing_one_cache_agree(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    def one(_):
        return study.sweep(MMC, {"lam": [5, 6]}, [1, 2], executor="serial", cache=tmp_path, **SHORT).records

    with ThreadPoolExecutor(4) as pool:
        tables = list(pool.map(one, range(4)))
    assert all(_equal_tables(t, tables[0]) for t in tables)
    assert len(list(tmp_path.rglob("*.json"))) == 4 and not list(tmp_path.rglob("*.part"))


# -- Ctrl-C ---------------------------------------------------------------------------

INTERRUPTED = """
import signal, sys, sq
signal.signal(signal.SIGINT, signal.default_int_handler)   # as from a terminal (see test_long_runs.py)
try:
    sq.sweep(sys.argv[1], {"lam": [5 + k / 100 for k in range(200)]}, [1, 2], executor="serial",
             cache=sys.argv[2], horizon=3000.0)
except KeyboardInterrupt as stop:
    print(len(stop.sweep.records), stop.sweep.total, flush=True)
    sys.exit(130)
print("finished", flush=True)
"""


# A script of the user's own that catches KeyboardInterrupt may still die by SIGINT (shown as
# status 130 by a shell): CPython chooses that when the interrupt left code run by exec(), such
# as the methods dataclasses build while a module loads, even if the script caught it later.
# The `sq` command itself exits with status 130 (sq/__main__.py).
SCRIPT_INTERRUPTED_EXIT = (130, -signal.SIGINT)


def _wait_for(what: str, condition, proc, timeout: float = 300) -> None:
    """Wait until `condition()` holds — however busy the machine, so the bound only catches a
    hang; the process ending first fails the test."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"{what}: did not happen (exit {proc.returncode})\n{out}\n{err}")
        time.sleep(0.05)


def _interrupt_when_cached(cmd, cache: Path, env=None) -> subprocess.CompletedProcess:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    _wait_for("3 runs in the cache", lambda: len(list(cache.rglob("*.json"))) >= 3, proc)
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    out, err = _communicate(proc, 30)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err + f"\n(stopped in {time.monotonic() - sent:.2f} s)")


def _workers_in_a_run(pid: int) -> int:
    """How many child processes of `pid` have loaded sq's engine: a sweep's worker loads it
    (lazily) once it has a task, so each such worker is in the middle of a run."""
    children = [c for task in Path(f"/proc/{pid}/task").iterdir()
                for c in (task / "children").read_text().split()]
    count = 0
    for child in children:
        try:
            count += "/sq/_engine." in Path(f"/proc/{child}/maps").read_text()
        except OSError:  # it has just ended
            pass
    return count


def test_ctrl_c_keeps_the_finished_runs(tmp_path):
    cache = tmp_path / "cache"
    done = _interrupt_when_cached([children.PYTHON, "-c", INTERRUPTED, MMC, str(cache)], cache, children.env())
    assert done.returncode in SCRIPT_INTERRUPTED_EXIT, done.stderr
    kept, total = map(int, done.stdout.split())
    assert total == 400 and 3 <= kept < total
    assert len(list(cache.rglob("*.json"))) == kept   # every finished run is in the cache, no more


def _interrupt_at_line(n: int, first, others, after_calls: int):
    """A trace function raising KeyboardInterrupt at the `n`-th line run in a frame of `first`'s
    code or of `others` during the call of `first` after `after_calls` of them; `fired` says
    whether it did (not when that call runs fewer lines)."""
    state = {"calls": 0, "lines": 0, "fired": False}
    codes = {first, *others}

    def local(frame, event, arg):
        if event == "line" and state["calls"] == after_calls + 1 and not state["fired"]:
            if state["lines"] == n:
                state["fired"] = True
                raise KeyboardInterrupt
            state["lines"] += 1
        return local

    def calls(frame, event, arg):
        if frame.f_code not in codes:
            return None
        state["calls"] += frame.f_code is first
        return local
    return calls, state


def test_an_interrupt_at_any_line_of_keeping_a_run_leaves_the_table_and_the_cache_alike(tmp_path):
    # Ctrl-C comes between any two lines: wherever it comes while the third run is being kept
    # (into the table, then written to the cache), the runs the Sweep carries are the runs cached
    from sq._support import files
    from sq.results.runs import RunTable
    inside = (study._Runs._add.__code__, RunTable.add_run.__code__, RunTable.add.__code__,
              study._Cache.put.__code__, files.write_atomic.__code__, files.atomic_file.__wrapped__.__code__)
    grid, before = {"lam": [5, 6]}, sys.gettrace()     # a coverage tool's, say
    for n in range(1000):
        cache = tmp_path / f"cache{n}"
        tracer, state = _interrupt_at_line(n, study._Runs.keep.__code__, inside, after_calls=2)
        sys.settrace(tracer)
        try:
            study.sweep(MMC, grid, [1, 2], executor="serial", cache=str(cache), **SHORT)
        except KeyboardInterrupt as stop:
            kept = stop.sweep
        else:
            kept = None
        finally:
            sys.settrace(before)
        if not state["fired"]:
            break
        assert len(list(cache.rglob("*.json"))) == len(kept.records) in (2, 3), n
        cached = study.sweep(MMC, grid, [1, 2], executor="serial", cache=str(cache), **SHORT)
        assert cached.records[:len(kept.records)] == kept.records, n    # and the same runs
    assert n > 10       # the lines of keeping a run were all reached


def test_ctrl_c_stops_a_process_pool_sweep_from_the_cli(tmp_path):
    cache = tmp_path / "cache"
    cmd = [children.PYTHON, "-m", "sq", "sweep", MMC, "--set", "lam=5:6.4:0.01", "--seeds", "1..3",
           "--horizon", "3000", "-j", "2", "--cache", str(cache), "--out", str(tmp_path / "runs.csv")]
    done = _interrupt_when_cached(cmd, cache, children.env())
    assert done.returncode == 130, done.stderr
    assert "interrupted:" in done.stderr and "Traceback" not in done.stderr, done.stderr
    kept = len(list(cache.rglob("*.json")))
    rows = (tmp_path / "runs.csv").read_text().splitlines()
    assert 3 <= kept < 423 and len(rows) - 2 == kept      # the provenance comment, the header, the runs
    assert f"interrupted: {kept} of 423 runs finished; kept in {cache}" in done.stderr, done.stderr


def test_ctrl_c_does_not_wait_for_long_runs_in_flight(tmp_path):
    # each run takes tens of seconds; the sweep must stop without finishing them
    cmd = [children.PYTHON, "-m", "sq", "sweep", MMC, "--set", "lam=5,6", "--seeds", "1..2",
           "--horizon", "2000000", "--warmup", "0", "-j", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=children.env())
    _wait_for("both workers in a run", lambda: _workers_in_a_run(proc.pid) == 2, proc)
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, err = _communicate(proc, 60)
    stopped = time.monotonic() - sent
    assert proc.returncode == 130 and "interrupted: 0 of 4 runs finished" in err and "Traceback" not in err, err
    assert stopped < 5, f"stopped {stopped:.1f} s after Ctrl-C"


def _communicate(proc, timeout):
    """The process's output; a process that does not stop in time is killed (and the test fails)."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise




# -- the summary and the t interval ---------------------------------------------------

def test_summary_is_the_t_interval_over_seeds(serial):
    rows = serial.summary_records(0.9)
    assert [(r["lam"], r["c"], r["n"]) for r in rows] == [(5, 8, 3), (5, 9, 3), (6.4, 8, 3), (6.4, 9, 3)]
    for row, k in zip(rows, range(0, 12, 3)):
        values = [r["wait.p99"] for r in serial.records[k:k + 3]]
        assert (row["wait.p99"], row["wait.p99±"]) == study.t_interval(values, 0.9)
    frame = serial.summary()
    assert list(frame["wait.mean"]) == [r["wait.mean"] for r in serial.summary_records()]


# -- writing, plotting and extras -----------------------------------------------------

def test_runs_tables_round_trip(serial, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = serial.runs
    assert list(frame.columns) == list(serial.records[0]) and len(frame) == 12
    serial.to_csv(tmp_path / "runs.csv")
    serial.to_parquet(tmp_path / "runs.parquet")
    serial.to_json(tmp_path / "runs.jsonl")
    for back in (pd.read_csv(tmp_path / "runs.csv", comment="#"), pd.read_parquet(tmp_path / "runs.parquet")):
        assert list(back.columns) == list(frame.columns)
        assert back["wait.p99"].tolist() == frame["wait.p99"].tolist()
        assert back["seed"].tolist() == frame["seed"].tolist()
    lines = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()][1:]
    assert [r["wait.mean"] for r in lines] == [r["wait.mean"] for r in serial.records]


def test_every_writer_records_the_provenance(serial, tmp_path):
    # CSV: a first comment line; JSON: a first object; Parquet: the file's metadata -- all one record,
    # the Sweep's (program, overrides, defs, sq version and build, seeds, settings), as Capacity.to_dict has it
    expected = json.loads(json.dumps(serial.provenance))
    assert expected["sq_build"] and expected["sq_version"] and expected["seeds"] == serial.provenance["seeds"]
    serial.write(tmp_path / "runs.csv")
    first = (tmp_path / "runs.csv").read_text().splitlines()[0]
    assert first.startswith("# sq.provenance: ") and json.loads(first.split(": ", 1)[1]) == expected
    for name in ("runs.jsonl", "runs.json"):
        serial.write(tmp_path / name)
    assert json.loads((tmp_path / "runs.jsonl").read_text().splitlines()[0]) == {"sq.provenance": expected}
    assert json.loads((tmp_path / "runs.json").read_text())[0] == {"sq.provenance": expected}
    if importlib.util.find_spec("pyarrow"):
        import pyarrow.parquet as pq  # noqa: PLC0415

        serial.write(tmp_path / "runs.parquet")
        assert json.loads(pq.read_schema(tmp_path / "runs.parquet").metadata[b"sq.provenance"]) == expected
    cap = sq.capacity(MMC, "lam", "wait.mean <= 1", lo=5, hi=6, tol=0.5, seeds=[1, 2], executor="serial", **SHORT)
    assert set(cap.to_dict()["provenance"]) == set(expected)


def test_write_by_extension_json_is_one_value_jsonl_a_line_per_run(serial, tmp_path):
    serial.write(tmp_path / "runs.json")
    serial.write(tmp_path / "runs.jsonl")
    whole = json.loads((tmp_path / "runs.json").read_text())      # one JSON value: json.load reads it
    lines = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert whole == lines and len(whole) == len(serial.records) + 1        # the provenance first
    assert [r["wait.mean"] for r in whole[1:]] == [r["wait.mean"] for r in serial.records]


def test_the_summary_counts_the_runs_not_in_steady_state():
    # c = 8 servers: at rate 4 the runs settle; at 12 the queue grows all run long, so the
    # means there describe the horizon, and the summary must say so beside them
    pd = pytest.importorskip("pandas")
    from sq.study import capacity as capacity_search
    from sq.results import steady

    overload = study.sweep(MMC, {"lam": [4, 12]}, [1, 2, 3], executor="serial", **SHORT)
    rows = overload.summary_records()
    assert [(r["lam"], r["n"], r["unsteady"]) for r in rows] == [(4, 3, 0), (12, 3, 3)]
    frame = overload.summary()
    assert list(frame.columns[:3]) == ["lam", "n", "unsteady"] and list(frame["unsteady"]) == [0, 3]
    # the capacity search's rule, the one definition
    assert capacity_search.steadiness is steady.steadiness
    assert [steady.in_steady_state(r) for r in overload.records] == [True] * 3 + [False] * 3
    assert not steady.in_steady_state({"warnings": 0.0, "arrivals": 100.0, "ended": 49.0})
    assert steady.in_steady_state({"warnings": 0.0, "arrivals": 100.0, "ended": 50.0})
    assert not steady.in_steady_state({"warnings": 1.0, "arrivals": 100.0, "ended": 100.0})


def test_plot_marks_points_not_in_steady_state_hollow():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    overload = study.sweep(MMC, {"lam": [4, 12], "c": [8, 16]}, [1, 2], executor="serial", **SHORT)
    ax = overload.plot("lam", "wait.mean", by="c")
    hollow = [line for line in ax.lines if line.get_markerfacecolor() == "white"]
    assert len(hollow) == 1 and list(hollow[0].get_xdata()) == [12.0]   # c=8 at rate 12 only
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["hollow: runs not in steady state", "c=8",
                                                                 "c=16"]


def test_plot_draws_a_line_per_group_with_the_slo(serial):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    ax = serial.plot("lam", "wait.p99", by="c", slo=1.5)
    assert len(ax.lines) >= 3   # two error-bar lines and the SLO
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["SLO 1.5", "c=8", "c=9"]
    with pytest.raises(SqError, match="not a metric"):
        serial.plot("lam", "nope.p99")


def test_a_missing_extra_names_the_pip_install(serial, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(SqError) as err:
        serial.runs
    assert str(err.value) == "error: Sweep.runs needs pandas, which is not installed: pip install 'sq[table]'"
    with pytest.raises(SqError, match=r"Report.to_pandas\(\) needs pandas.*pip install 'sq\[table\]'"):
        sq.run(sq.compile(MMC), horizon=20.0, warmup=0.0).to_pandas()
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(SqError, match=r"pip install 'sq\[plot\]'"):
        serial.plot("lam", "wait.p99")
    # a sweep without tqdm falls back to a plain line, as a run does, after a note naming the extra
    monkeypatch.setitem(sys.modules, "tqdm", None)
    capsys.readouterr()
    study.sweep(MMC, {"lam": [5]}, [1, 2], executor="serial", progress=True, **SHORT)
    err = capsys.readouterr().err
    assert "pip install 'sq[progress]'" in err and "(showing a plain line)" in err
    assert "] 2/2 runs" in err and err.endswith("\n")
    study.sweep(MMC, {"lam": [5]}, [1, 2], executor="serial", progress=False, **SHORT)
    assert capsys.readouterr().err == ""


def test_progress_bar_on_request(capsys):
    pytest.importorskip("tqdm")
    study.sweep(MMC, {"lam": [5]}, [1, 2], executor="serial", progress=True, **SHORT)
    assert "2/2" in capsys.readouterr().err


# -- provenance -----------------------------------------------------------------------

def test_a_report_knows_where_it_came_from():
    report = sq.run(sq.compile(MMC, sets={"lam": 5}), seed=2, horizon=100, warmup=10)
    assert (report.program, report.overrides, report.sq_version) == (MMC, {"lam": 5}, sq.__version__)
    assert report.wall_s > 0
    assert "provenance" not in report.to_json()
    extra = json.loads(report.to_json(provenance=True))
    assert extra["provenance"]["overrides"] == {"lam": 5} and extra["provenance"]["program"] == MMC
    assert report.to_json(provenance=True).startswith(report.to_json()[:-1] + ',"provenance":')


def test_a_failing_run_names_its_point_and_seed():
    with pytest.raises(SqError) as err:
        study.sweep(MMC, {"lam": [5]}, [3], executor="serial", horizon=20.0, warmup=0.0, arrivals=10**6)
    assert "the run at lam=5 seed 3 failed" in err.value.message and err.value.phase == "run"


def test_a_swept_name_may_not_shadow_a_column():
    with pytest.raises(SqError, match="`seed` is a column"):
        study.grid_points({"seed": [1, 2]})
    with pytest.raises(SqError, match="`events` is a column"):
        study.grid_points([{"events": 1}])
    # a summary row's own columns: a swept `n` would have been overwritten by the seed count
    for name in ("n", "unsteady"):
        with pytest.raises(SqError, match=f"`{name}` is a column of the sweep's summary"):
            study.grid_points({name: [1, 2]})


# -- a swept `let` that sizes an array ---------------------------------------------------

REPLICAS = {"horizon": 30.0, "warmup": 5.0}


@pytest.fixture(scope="module")
def replicas():
    """Four replicas, then two: the first point has stages and pools the second lacks."""
    return study.sweep(REPLICA, {"R": [4, 2]}, [1, 2], executor="serial", **REPLICAS)


def test_the_columns_are_every_points_stages_and_pools(replicas):
    pd = pytest.importorskip("pandas")
    four, two = replicas.records[0], replicas.records[-1]
    assert "stage.engine[3].util" in four and "stage.engine[3].util" not in two
    assert replicas.metrics == [k for k in four if k not in ("R", "seed")]
    # the other order: the columns of R=4 that R=2 lacks come after the first point's
    grown = study.sweep(REPLICA, {"R": [2, 4]}, [1], executor="serial", **REPLICAS)
    assert set(grown.metrics) == set(replicas.metrics) and grown.metrics == grown.metric_columns
    assert grown.metrics.index("stage.engine[3].util") > grown.metrics.index("warnings")
    summary = replicas.summary()
    assert list(summary["R"]) == [4, 2] and math.isnan(summary["stage.engine[3].util"][1])
    assert summary["stage.engine[3].util"][0] == pytest.approx(
        sum(r["stage.engine[3].util"] for r in replicas.records[:2]) / 2)
    runs = grown.runs
    assert math.isnan(runs["pool.kv[3].used"][0]) and runs["pool.kv[3].used"][1] == grown.records[1]["pool.kv[3].used"]


def test_the_columns_before_any_run_are_every_points(monkeypatch):
    def stop(task):
        raise KeyboardInterrupt
    monkeypatch.setattr(study, "run_task", stop)
    with pytest.raises(KeyboardInterrupt) as caught:
        study.sweep(REPLICA, {"R": [2, 4]}, [1], executor="serial", **REPLICAS)
    assert "stage.engine[3].util" in caught.value.sweep.metrics


def test_every_writer_and_the_plot_hold_every_points_columns(replicas, tmp_path):
    replicas.write(tmp_path / "runs.csv")
    import csv  # noqa: PLC0415
    rows = list(csv.DictReader((tmp_path / "runs.csv").read_text().splitlines()[1:]))
    assert rows[0]["stage.engine[3].util"] != "" and rows[-1]["stage.engine[3].util"] == ""
    replicas.write(tmp_path / "runs.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()][1:]
    assert lines[-1]["stage.engine[3].util"] is None and lines[0]["stage.engine[3].util"] is not None
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    replicas.plot("R", "ttft.p99")
    replicas.plot("R", "stage.engine[3].util")


def test_a_cached_point_is_checked_against_its_own_metrics(tmp_path, monkeypatch):
    first = study.sweep(REPLICA, {"R": [2, 4]}, [1], executor="serial", cache=tmp_path, **REPLICAS)
    monkeypatch.setattr(study, "run_task", _forbidden)
    again = study.sweep(REPLICA, {"R": [2, 4]}, [1], executor="serial", cache=tmp_path, **REPLICAS)
    assert _equal_tables(again.records, first.records)


# -- provenance of a study --------------------------------------------------------------

def test_a_studys_provenance_has_the_defs_and_the_settings_in_effect(monkeypatch, tmp_path):
    ps = str(ROOT / "examples" / "single-turn" / "ps.sq")     # horizon 20000, warmup 2000 in its text
    det = sq.compile(ps, defs={"service": "~det(1)"}, horizon=4000)
    monkeypatch.setattr(study, "run_task", lambda task: {})   # no run needed: provenance only
    made = study.sweep(det, {"lam": [0.5]}, [1], executor="serial").provenance
    assert made["defs"] == {"service": "~det(1)"} and (made["horizon"], made["warmup"]) == (4000.0, 2000.0)
    plain = study.sweep(ps, {"lam": [0.5]}, [1], executor="serial", warmup=100).provenance
    assert plain["defs"] == {} and (plain["horizon"], plain["warmup"], plain["arrivals"]) == (20000.0, 100.0, None)
    # a swept `let` the horizon reads: one horizon per point
    text = Path(MMC).read_text().replace("run { horizon 10000; warmup 1000; }", "let H = 10000;\nrun { horizon H; warmup 10; }")
    (tmp_path / "h.sq").write_text(text)
    each = study.sweep(str(tmp_path / "h.sq"), {"H": [300, 400]}, [1], executor="serial").provenance
    assert (each["horizon"], each["warmup"]) == ([300.0, 400.0], 10.0)


# -- arguments that are no such thing ---------------------------------------------------

@pytest.mark.parametrize("call, words", [
    (lambda s: study.sweep(5, {}, [1]), "sweep: the program is a .sq file's path or a Program from sq.compile, found 5"),
    (lambda s: study.sweep(5, {"lam": [5]}, [1]), "sweep: the program is a .sq file's path or a Program"),
    (lambda s: study.sweep(MMC, {}, [1], cache=5), "sweep: cache is a folder (text or a path), found 5"),
    (lambda s: study.sweep(MMC, {}, [1], progress="yes"), "sweep: progress is True, False or None, found 'yes'"),
    (lambda s: sq.run(sq.compile(MMC), progress="yes"), "run: progress is True, False, None or a callable, found 'yes'"),
    (lambda s: s.write(5), "write: a path is text or os.PathLike, found int"),
    (lambda s: study.sweep(MMC, {}, [1], cache=""), "sweep: cache: the path is empty"),   # (it was the current folder)
    (lambda s: sq.capacity(MMC, "c", "wait.mean <= 1", cache=""), "capacity: cache: the path is empty"),
    (lambda s: s.write(""), "write: the path is empty"),
    (lambda s: s.to_csv(5), "to_csv: a path is text or os.PathLike, found int"),
    (lambda s: s.write("/no/such/dir/x.csv"), "to_csv: cannot write `/no/such/dir/x.csv`: the folder `/no/such/dir` does not exist"),
    (lambda s: s.write("/no/such/dir/x.jsonl"), "to_json: cannot write `/no/such/dir/x.jsonl`: the folder"),
    (lambda s: s.plot("lam", "wait.p99", slo="x"), "plot: slo is a number (where to draw the SLO's line), found 'x'"),
    (lambda s: s.plot("lam", "wait.p99", ax=5), "plot: ax is a matplotlib Axes to draw on, found 5"),
    (lambda s: sq.t_interval(None), "t_interval: values are a list of numbers, found None"),
    (lambda s: sq.t_interval(["a", "b"]), "t_interval: values are numbers, found 'a'"),
])
def test_a_wrong_argument_is_an_error_naming_it(serial, monkeypatch, call, words):
    monkeypatch.setattr(study, "run_task", _forbidden)
    if "plot" in words:
        pytest.importorskip("matplotlib").use("Agg")
    with pytest.raises(SqError) as caught:
        call(serial)
    assert caught.value.message.startswith(words) and "\n" not in caught.value.message


def test_a_share_of_samples_needs_the_samples():
    kept = sq.run(sq.compile(MMC), horizon=100.0, warmup=10.0)
    assert 0.0 <= sq_metrics.report_metrics(kept, ["wait<=1"])["wait.le(1)"] <= 1.0
    none = sq.run(sq.compile(MMC), horizon=100.0, warmup=10.0, samples="none")
    with pytest.raises(SqError, match=r'metric `wait.le\(1\)`: the share of samples needs the samples, and the report kept none \(samples="none"\)'):
        sq_metrics.report_metrics(none, ["wait<=1"])
    assert "wait.p99" in sq_metrics.report_metrics(none)


# -- run settings apply before linking (issue 23) -----------------------------------------

NO_RUN = str(Path(__file__).resolve().parents[1] / "capacity" / "mm1_no_run.sq")


def test_a_program_without_a_horizon_is_studied_with_the_horizon_given(capsys):
    from sq.cli import main as cli

    swept = study.sweep(NO_RUN, {"lam": [0.5]}, [1, 2], horizon=1000, warmup=100, executor="serial")
    assert len(swept.records) == 2 and swept.provenance["horizon"] == 1000.0
    program = sq.compile(NO_RUN, horizon=1000)     # a Program compiled with one is swept too
    assert len(study.sweep(program, {"lam": [0.4, 0.5]}, [1], executor="serial").records) == 2
    cap = sq.capacity(NO_RUN, "lam", "response.mean <= 4", lo=0.5, hi=0.9, tol=0.2, seeds=[1, 2, 3],
                      horizon=2000, warmup=200, executor="serial")
    assert cap.points and cap.value is not None
    for command in (["sweep", NO_RUN, "--set", "lam=0.5", "--seeds", "1..2", "-j", "1"],
                    ["capacity", NO_RUN, "--knob", "lam", "--slo", "response.mean<=4", "--seeds", "1..2",
                     "--lo", "0.5", "--hi", "0.9", "--tol", "0.5", "-j", "1"],
                    ["check", NO_RUN], ["ir", NO_RUN]):
        assert cli.main([*command, "--horizon", "1000"]) == 0, command
    capsys.readouterr()
    with pytest.raises(sq.SqError, match="no horizon"):
        study.sweep(NO_RUN, {"lam": [0.5]}, [1], executor="serial")


def test_a_share_is_pooled_over_seeds_weighted_by_each_runs_count():
    # OBS.le(X) of a long run (1000 samples, 90 % within X) and a short one (10 samples, 50 %):
    # the share over the point is 905 / 1010, not the runs' plain average 0.7
    from sq.results.confidence import ratio_interval, t_quantile

    runs = [{"lam": 1, "seed": 1, "x.count": 1000.0, "x.le(1)": 0.9},
            {"lam": 1, "seed": 2, "x.count": 10.0, "x.le(1)": 0.5},
            {"lam": 1, "seed": 3, "x.count": 0.0, "x.le(1)": math.nan}]    # a run with no samples adds nothing
    row = study.Sweep(["lam"], runs).summary_records()[0]
    assert row["x.le(1)"] == pytest.approx(905 / 1010)
    ratio = 905 / 1010
    spread = ((900 - ratio * 1000) ** 2 + (5 - ratio * 10) ** 2) / 1
    assert row["x.le(1)±"] == pytest.approx(t_quantile(0.975, 1) * math.sqrt(spread / 2) / 505)
    assert row["x.count"] == pytest.approx(1010 / 3)      # other metrics: the plain mean over runs
    assert math.isnan(ratio_interval([0.5], [0])[0])


def test_compare_is_the_paired_interval_over_common_seeds():
    from sq.results.confidence import t_interval

    swept = study.sweep(MMC, {"c": [8, 9]}, range(1, 7), executor="serial", **SHORT)
    got = swept.compare(8, {"c": 9}, "wait.mean")
    by = {(r["c"], r["seed"]): r["wait.mean"] for r in swept.records}
    diffs = [by[9, s] - by[8, s] for s in range(1, 7)]
    assert (got.difference, got.half_width) == t_interval(diffs) and got.n == 6
    # common random numbers: the paired interval is narrower than the difference of independent points
    rows = swept.summary_records()
    assert got.half_width < math.hypot(rows[0]["wait.mean±"], rows[1]["wait.mean±"])
    assert "paired over 6 seeds" in str(got)
    only_some = study.Sweep(swept.names, [r for r in swept.records if not (r["c"] == 9 and r["seed"] > 3)])
    assert only_some.compare(8, 9, "wait.mean").n == 3
    for args, words in (((8, 10, "wait.mean"), "no runs at c=10"), ((8, 9, "nope.mean"), "not a metric"),
                        (({"lam": 1}, 9, "wait.mean"), "point a names lam")):
        with pytest.raises(SqError, match=words):
            swept.compare(*args)


def test_a_write_that_fails_leaves_the_old_file_and_names_it(tmp_path, monkeypatch):
    import errno

    swept = study.sweep(MMC, {"lam": [5, 6]}, [1, 2], executor="serial", **SHORT)
    out = tmp_path / "runs.csv"
    out.write_text("the old table\n")
    cells = []

    def full_disk(v):      # the disk fills after a few cells: the table would be cut mid-row
        cells.append(v)
        if len(cells) > 30:
            raise OSError(errno.ENOSPC, "No space left on device")
        return v

    monkeypatch.setattr(study, "_csv_cell", full_disk)
    with pytest.raises(SqError, match=r"to_csv: cannot write `.*runs.csv`: No space left on device; nothing was"):
        swept.to_csv(out)
    assert out.read_text() == "the old table\n" and [p.name for p in tmp_path.iterdir()] == ["runs.csv"]
    monkeypatch.undo()
    swept.write(out)
    assert out.read_text().count("\n") == 6          # provenance, header, four runs


def test_counts_stay_whole_numbers_in_every_table(tmp_path):
    swept = study.sweep(MMC, {"lam": [5]}, [1, 2], executor="serial", cache=tmp_path / "c", **SHORT)
    for name in ("wait.count", "arrivals", "ended", "events", "warnings", "stage.pool8.iters"):
        assert all(type(r[name]) is int for r in swept.records), name
    assert type(swept.records[0]["wait.mean"]) is float
    swept.to_csv(tmp_path / "runs.csv")
    with open(tmp_path / "runs.csv") as f:
        row = dict(zip(*[line.rstrip("\n").split(",") for line in list(f)[1:3]]))
    assert row["arrivals"].isdigit() and row["wait.count"].isdigit()      # 2239, not 2239.0
    swept.to_json(tmp_path / "runs.jsonl")
    assert type(json.loads((tmp_path / "runs.jsonl").read_text().splitlines()[1])["arrivals"]) is int
    pd = pytest.importorskip("pandas")
    assert pd.api.types.is_integer_dtype(swept.runs["arrivals"])
    again = study.sweep(MMC, {"lam": [5]}, [1, 2], executor="serial", cache=tmp_path / "c", **SHORT)
    assert all(type(r["arrivals"]) is int for r in again.records)       # from the cache too
    if pytest.importorskip("pyarrow"):
        import pyarrow.parquet as pq

        swept.to_parquet(tmp_path / "runs.parquet")
        assert str(pq.read_table(tmp_path / "runs.parquet").schema.field("arrivals").type) == "int64"


def test_provenance_names_the_build_in_parquet_and_in_a_capacity_record(tmp_path):
    from sq._support import files

    swept = study.sweep(MMC, {"lam": [5]}, [1, 2], executor="serial", **SHORT)
    assert swept.provenance["sq_build"] == files.build_fingerprint()
    pq = pytest.importorskip("pyarrow.parquet")
    swept.to_parquet(tmp_path / "runs.parquet")
    stored = json.loads(pq.read_schema(tmp_path / "runs.parquet").metadata[b"sq.provenance"])
    assert stored == json.loads(json.dumps(swept.provenance))
    cap = sq.capacity(MMC, "c", "wait.mean <= 0.2", lo=8, hi=9, seeds=[1, 2], executor="serial", settle=1, **SHORT)
    made = json.loads(cap.to_json())["provenance"]
    assert made["program"] == MMC and made["sq_build"] == files.build_fingerprint() and made["seeds"] == [1, 2]
    assert made["horizon"] == SHORT["horizon"]


def test_a_studys_size_is_bounded_before_anything_is_compiled(monkeypatch):
    import itertools

    def no_compiling(*args, **kwargs):
        raise AssertionError("a point was compiled")

    monkeypatch.setattr(study, "compile_point", no_compiling)
    with pytest.raises(SqError, match=r"the grid has 1000000 points \(1000 × 1000\), more than 20000"):
        study.sweep(MMC, {"lam": range(1, 1001), "mu": range(1, 1001)}, [1])
    with pytest.raises(SqError, match=r"2000000 runs \(1000 points × 2000 seeds\) is more than 1000000"):
        study.sweep(MMC, {"lam": range(1, 1001)}, range(2000))
    with pytest.raises(SqError, match="seeds is more than 1000000"):
        study.sweep(MMC, {"lam": [5]}, itertools.count(1))          # a generator that never ends

"""`python -m sq sweep` (issue 9) and `run --json --provenance`."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import sq
from sq.cli import main as cli
from sq.cli import args as cli_args
from sq.cli import study as cli_study
from sq.errors import SqError

ROOT = Path(__file__).resolve().parents[2]
MMC = str(ROOT / "examples" / "single-turn" / "mmc.sq")
SHORT = ["--horizon", "400", "--warmup", "50"]


def _rows(path) -> list[dict]:
    """The runs of a CSV that `--out` wrote: its first line the provenance comment, then the table."""
    with open(path) as f:
        assert f.readline().startswith("# sq.provenance: {")
        return list(csv.DictReader(f))


def test_seeds_and_values():
    assert cli_args.parse_seeds("1..4") == [1, 2, 3, 4]
    assert cli_args.parse_seeds("1,4,9") == [1, 4, 9]
    assert cli_args.parse_seeds("7") == [7]
    assert cli_study.parse_values("lam=0.1:0.3:0.1") == ("lam", [0.1, 0.2, 0.3])
    assert cli_study.parse_values("R=2:8:2") == ("R", [2, 4, 6, 8])
    assert cli_study.parse_values("R=2:7:2") == ("R", [2, 4, 6])
    assert cli_study.parse_values("x=3:1:-1") == ("x", [3, 2, 1])
    assert cli_study.parse_values("lam=0.5,1e3,2*c") == ("lam", [0.5, 1000.0, "2*c"])
    assert cli_study.parse_values("lam=c > 8 ? 5 : 6") == ("lam", ["c > 8 ? 5 : 6"])   # a colon, no range
    for bad in ("4..1", "a", "1,1", "-3"):
        with pytest.raises(SqError):
            cli_args.parse_seeds(bad)
    for bad, phrase in (("lam=1:2:0", "the step is 0"), ("lam=2:1:1", "the range is empty"),
                        ("lam=1,,2", "empty value"), ("=1", "NAME=")):
        with pytest.raises(SqError, match=phrase):
            cli_study.parse_values(bad)


@pytest.mark.parametrize("args, phrase", [
    (["--set", "nope=1,2"], "unknown --set constant `nope`"),
    (["--set", "lam=5:4:1"], "the range is empty"),
    (["--set", "lam=5:6:0"], "the step is 0"),
    (["--seeds", "5..1"], "the range is empty"),
    (["--metric", "ttft<=1"], "no observe `ttft`"),
    (["--metric", "wait.p98"], "unknown metric"),
    (["--out", "/nonexistent/folder/runs.csv"], "cannot write"),
    (["--out", "runs.xlsx"], "cannot tell the format"),
    (["--out", "runs.png"], "--out: cannot tell the format of `runs.png`"),    # a figure's format, not a table's
    (["--set", "lam=5,6", "--plot", "x=lam,y=wait.p99", "--plot-out", "p.csv"],
     "help: --plot-out takes .png, .pdf, .svg"),
    (["--plot", "x=lam,y=wait.p99"], "--plot needs --plot-out"),
    (["--set", "lam=5,6", "--plot", "x=c,y=wait.p99", "--plot-out", "p.png"], "x=c: not a swept name"),
    (["--set", "lam=5,6", "--plot", "x=lam,y=wait.p99,color=red", "--plot-out", "p.png"], "--plot takes"),
    (["--horizon", "10", "--warmup", "20"], "warmup must be below the horizon"),
    (["--scheduler", "tcp://127.0.0.1:PORT"], "cannot reach the scheduler"),
    # a repeated value would be one point counting each seed's run twice
    (["--set", "lam=5,5"], "error: --set lam=5,5: `lam` is given the value 5 twice; its runs would count"),
    (["--set", "lam=5,5.0"], "error: --set lam=5,5.0: `lam` is given the value 5 twice (as 5 and 5.0)"),
    (["--set", "lam=5:6:0.5", "--set", "lam=1"], "error: --set lam is given twice (one --set per name)\n"),
    (["--seeds", "0..18446744073709551615"],
     "error: --seeds 0..18446744073709551615: 18446744073709551616 seeds is more than 1000000\n"),
    (["--seeds", "1..100000000"], "error: --seeds 1..100000000: 100000000 seeds is more than 1000000\n"),
    (["--set", "lam=1:3"], "error: --set lam=1:3: a range is START:STOP:STEP (e.g. 1:3:0.5)\n"),
    (["--set", "lam=:3:"], "error: --set lam=:3:: a range is START:STOP:STEP"),
])
def test_bad_input_exits_2_before_any_run(tmp_path, capsys, monkeypatch, closed_port, args, phrase):
    monkeypatch.chdir(tmp_path)
    args = [a.replace("PORT", str(closed_port)) for a in args]
    serial = [] if "--scheduler" in args else ["-j", "1"]
    status = cli.main(["sweep", MMC, *args, "--cache", str(tmp_path / "cache"), *serial])
    err = capsys.readouterr().err
    assert status == 2 and phrase in err and "Traceback" not in err, err
    assert not list(tmp_path.rglob("*.json"))  # no run finished, none was cached


def test_the_summary_table_and_the_runs(tmp_path, capsys):
    out = tmp_path / "runs.csv"
    status = cli.main(["sweep", MMC, "--set", "lam=5,6", "--set", "c=8:9:1", "--seeds", "1..3", *SHORT,
                       "--metric", "wait<=1", "-j", "1", "--out", str(out)])
    printed = capsys.readouterr().out.splitlines()
    assert status == 0
    assert printed[0].split() == ["lam", "c", "n", "unsteady", "wait.mean", "wait.p99", "waited.mean",
                                  "waited.p99", "wait.le(1)"]
    assert [line.split()[:4] for line in printed[1:]] == [["5", "8", "3", "0"], ["5", "9", "3", "0"],
                                                         ["6", "8", "3", "0"], ["6", "9", "3", "0"]]
    rows = list(_rows(out))
    expected = sq.sweep(MMC, {"lam": [5, 6], "c": [8, 9]}, [1, 2, 3], executor="serial", horizon=400.0,
                        warmup=50.0, metrics=["wait<=1"])
    assert len(rows) == 12 and [float(r["wait.p99"]) for r in rows] == [r["wait.p99"] for r in expected.records]
    assert [float(r["wait.le(1)"]) for r in rows] == [r["wait.le(1)"] for r in expected.records]
    first = expected.summary_records()[0]
    assert f"{first['wait.mean']:.4g} ± {first['wait.mean±']:.4g}" in printed[1]


def test_the_table_shows_points_not_in_steady_state(capsys):
    # c = 8 servers at rate 4 are lightly loaded; at 12 the queue grows for the whole run, so
    # its means say how long the run was, not how the system behaves: the table must say so
    status = cli.main(["sweep", MMC, "--set", "lam=4,12", "--seeds", "1..3", *SHORT, "-j", "1"])
    printed = capsys.readouterr().out.splitlines()
    assert status == 0 and printed[0].split()[:3] == ["lam", "n", "unsteady"]
    assert [line.split()[:3] for line in printed[1:3]] == [["4", "3", "0"], ["12", "3", "3"]]
    assert len(printed) == 4 and printed[3].startswith("unsteady: runs not in steady state (the report warns")
    # all steady: no legend
    cli.main(["sweep", MMC, "--set", "lam=4", "--seeds", "1..2", *SHORT, "-j", "1"])
    assert [line.split()[:3] for line in capsys.readouterr().out.splitlines()] == [["lam", "n", "unsteady"],
                                                                                 ["4", "2", "0"]]


def test_jsonl_parquet_and_a_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    for name in ("runs.jsonl", "runs.parquet"):
        status = cli.main(["sweep", MMC, "--set", "lam=5,6", "--seeds", "1,2", *SHORT, "-j", "1",
                           "--out", str(tmp_path / name), "--plot", "x=lam,y=wait<=1,slo=0.99",
                           "--plot-out", str(tmp_path / "p.png")])
        assert status == 0
    provenance, *lines = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert provenance["sq.provenance"]["program"] == MMC and provenance["sq.provenance"]["seeds"] == [1, 2]
    table = pd.read_parquet(tmp_path / "runs.parquet")
    assert [r["wait.le(1)"] for r in lines] == table["wait.le(1)"].tolist()
    assert [(r["lam"], r["seed"]) for r in lines] == [(5, 1), (5, 2), (6, 1), (6, 2)]
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()


def test_a_sweep_on_a_dask_scheduler(capsys):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                                  processes=False, protocol="tcp://") as cluster:
        status = cli.main(["sweep", MMC, "--set", "lam=5,6", "--seeds", "1,2", *SHORT,
                           "--scheduler", cluster.scheduler_address])
    dask_out = capsys.readouterr().out
    assert status == 0
    assert cli.main(["sweep", MMC, "--set", "lam=5,6", "--seeds", "1,2", *SHORT, "-j", "1"]) == 0
    assert capsys.readouterr().out == dask_out


def test_run_json_is_unchanged_unless_provenance_is_asked(capsys):
    args = ["run", MMC, "--set", "lam=5", "--horizon", "100", "--warmup", "10", "--json"]
    assert cli.main(args) == 0
    plain = capsys.readouterr().out
    assert plain == sq.run(sq.compile(MMC, sets={"lam": "5"}, horizon=100, warmup=10)).to_json() + "\n"
    assert cli.main([*args, "--provenance"]) == 0
    extra = json.loads(capsys.readouterr().out)
    assert extra["provenance"]["program"] == MMC and extra["provenance"]["overrides"] == {"lam": "5"}
    assert extra["provenance"]["sq_version"] == sq.__version__
    assert {k: v for k, v in extra.items() if k != "provenance"} == json.loads(plain)


def test_a_name_set_twice_is_one_error_for_run_and_sweep(capsys):
    # `run --set lam=5 --set lam=6` kept the last silently, as `sweep` did: one rule for both now
    for command in (["run", MMC, "--horizon", "100"], ["sweep", MMC, "-j", "1", *SHORT]):
        assert cli.main([*command, "--set", "lam=5", "--set", "lam=6"]) == 2
        assert capsys.readouterr().err == "error: --set lam is given twice (one --set per name)\n"
    assert cli.main(["run", MMC, "--def", "x=1", "--def", "x=2"]) == 2
    assert capsys.readouterr().err == "error: --def x is given twice (one --def per name)\n"


def test_a_swept_array_size_keeps_every_points_columns(tmp_path, capsys):
    # R sizes the arrays: the runs with 4 replicas hold engine[2], engine[3]; those with 2 leave them empty
    out = tmp_path / "runs.csv"
    replica = str(Path(MMC).parent.parent / "multi-turn" / "replica.sq")
    status = cli.main(["sweep", replica, "--set", "R=4,2", "--seeds", "1", "--horizon", "30", "--warmup", "5",
                       "-j", "1", "--out", str(out)])
    printed = capsys.readouterr().out.splitlines()
    assert status == 0 and [line.split()[0] for line in printed[1:3]] == ["4", "2"]
    rows = list(_rows(out))
    assert rows[0]["stage.engine[3].util"] != "" and rows[1]["stage.engine[3].util"] == ""


# -- issue 23: one seed says so; a metric is checked at every point -------------------------

def test_one_seed_warns_that_it_is_one(capsys):
    assert cli.main(["sweep", MMC, "--seeds", "10", *SHORT, "-j", "1"]) == 0
    err = capsys.readouterr().err
    assert "warning: --seeds 10 is one seed, 10: a study's intervals need two or more (--seeds 1..10" in err
    cli.main(["sweep", MMC, "--seeds", "1..2", *SHORT, "-j", "1"])
    assert "warning" not in capsys.readouterr().err


def test_a_metric_is_checked_at_every_point_of_the_grid(capsys):
    replica = str(ROOT / "examples" / "multi-turn" / "replica.sq")
    status = cli.main(["sweep", replica, "--set", "R=3,2", "--set", "rate=3", "--seeds", "1..2", "--horizon", "100",
                       "--warmup", "10", "--metric", "pool.kv[2].used", "-j", "1"])
    out, err = capsys.readouterr()
    assert status == 2 and not out
    assert "metric `pool.kv[2].used`: the program has no such metric at R=2, rate=3" in err


def _children(pid: int) -> set[int]:
    """The live descendants of a process (Linux /proc)."""
    import os

    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    kids = {int(k) for k in f.read().split()}
                todo += list(kids - found)
                found |= kids
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGKILL"])
def test_workers_die_with_their_parent(tmp_path, signal_name):
    # a SIGTERM or SIGKILL of `sweep -j 2` left its workers running, holding the caller's stdout
    import os
    import signal
    import subprocess
    import sys
    import time

    workers: set[int] = set()
    proc = subprocess.Popen([sys.executable, "-m", "sq", "sweep", MMC, "--set", "lam=5,6", "--seeds", "1..40",
                             "--horizon", "200000", "-j", "2"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(workers) < 2:
            time.sleep(0.2)
            workers = _children(proc.pid)
        assert len(workers) >= 2, "the workers never started"
        time.sleep(1.0)
        workers = _children(proc.pid)
        proc.send_signal(getattr(signal, signal_name))
        proc.wait(timeout=30)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers), f"workers outlived their parent: {workers}"
    finally:
        if proc.poll() is None:
            proc.kill()
        for w in workers | _children(proc.pid):    # (only a failing test leaves any)
            try:
                os.kill(w, signal.SIGKILL)
            except OSError:
                pass


# -- a scheduler that is none, or has no workers: bounded waits, exit 2 (issue 23) ----------

class _FakePort:
    """A TCP server on 127.0.0.1 that accepts and stays silent, or answers HTTP; stopped by the test."""

    def __init__(self, http: bool):
        import socket
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.http, self.conns, self.running = http, [], True
        self.address = f"tcp://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while self.running:
            try:
                c, _ = self.sock.accept()
            except OSError:
                continue
            self.conns.append(c)
            if self.http:
                try:
                    c.settimeout(2)
                    c.recv(65536)
                    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                except OSError:
                    pass

    def stop(self):
        self.running = False
        self.thread.join(5)
        for c in self.conns:
            c.close()
        self.sock.close()


@pytest.mark.parametrize("http", [False, True], ids=["silent", "http"])
def test_a_port_that_is_no_scheduler_ends_in_bounded_time(capsys, monkeypatch, http):
    import time

    pytest.importorskip("distributed")
    monkeypatch.setattr(cli_args, "CONNECT_WAIT", 2.0)
    port = _FakePort(http)
    try:
        started = time.monotonic()
        status = cli.main(["sweep", MMC, "--seeds", "1..2", *SHORT, "--scheduler", port.address])
        took = time.monotonic() - started
    finally:
        port.stop()
    err = capsys.readouterr().err
    assert status == 2 and took < 20, (status, took)
    assert f"--scheduler {port.address}: cannot reach the scheduler" in err and "out of memory" not in err


def test_a_scheduler_with_no_workers_ends_in_bounded_time(monkeypatch):
    distributed = pytest.importorskip("distributed")
    from sq.study import executors

    monkeypatch.setattr(executors, "WORKER_WAIT", 1.0)
    with distributed.LocalCluster(n_workers=0, processes=False, host="127.0.0.1", protocol="tcp://",
                                  dashboard_address="127.0.0.1:0") as cluster, \
            distributed.Client(cluster) as client:
        with pytest.raises(SqError, match=r"the Dask scheduler .* has no workers \(waited 1 s"):
            sq.sweep(MMC, {"lam": [5]}, [1, 2], executor=client, horizon=400, warmup=50)


class _Cluster:
    """A Dask scheduler and one worker, each its own process on 127.0.0.1, that a test can kill."""

    def __init__(self, folder: Path):
        import subprocess
        import time

        from tests.helpers import children

        env = children.env()
        address_file = folder / "scheduler.json"
        quiet = dict(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.scheduler = subprocess.Popen([children.PYTHON, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                           "--port", "0", "--no-dashboard", "--scheduler-file", str(address_file)],
                                          **quiet)
        started = time.monotonic()
        while not address_file.exists() or not address_file.read_text().strip():
            assert time.monotonic() - started < 60 and self.scheduler.poll() is None, "no scheduler started"
            time.sleep(0.1)
        time.sleep(0.2)     # the file is written in one go, but give it the time to be closed
        self.address = json.loads(address_file.read_text())["address"]
        self.worker = subprocess.Popen([children.PYTHON, "-m", "distributed.cli.dask_worker", self.address, "--nworkers",
                                        "1", "--nthreads", "1", "--no-dashboard", "--death-timeout", "20"], **quiet)

    def stop(self):
        for p in (self.worker, self.scheduler):
            if p.poll() is None:
                p.kill()
            p.wait(30)


def _when(what: str, condition, limit: float = 120.0) -> None:
    import time

    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < limit, f"waited {limit:g} s for {what}"
        time.sleep(0.05)


LOST = ["--set", "lam=5:6.4:0.01", "--seeds", "1..3", "--horizon", "2000", "--warmup", "100"]


@pytest.mark.slow      # ~12 s: a scheduler, a worker and sq, each its own process
def test_a_scheduler_lost_mid_study_ends_the_cli_cleanly_keeping_the_runs(tmp_path):
    import subprocess
    import time

    from tests.helpers import children

    pytest.importorskip("distributed")
    cluster = _Cluster(tmp_path)
    cache, out = tmp_path / "cache", tmp_path / "runs.csv"
    try:
        proc = subprocess.Popen([children.PYTHON, "-m", "sq", "sweep", MMC, *LOST, "--scheduler", cluster.address,
                                 "--cache", str(cache), "--out", str(out)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=children.env())
        _when("3 runs in the cache", lambda: len(list(cache.rglob("*.json"))) >= 3 or proc.poll() is not None)
        cluster.scheduler.kill()
        lost = time.monotonic()
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - lost
    finally:
        cluster.stop()
    kept = len(list(cache.rglob("*.json")))
    assert proc.returncode == 2 and took < 30, (proc.returncode, took, err)
    assert f"error: the Dask scheduler {cluster.address} was lost in the middle of the study" in err, err
    assert f"note: {kept} of 423 runs finished; written to {out}, kept in {cache}" in err, err
    assert "Traceback" not in err and 3 <= kept < 423, err
    assert len(_rows(out)) == kept


def test_a_scheduler_lost_mid_study_is_an_sqerror_carrying_the_runs(tmp_path):
    import threading

    distributed = pytest.importorskip("distributed")
    cluster = _Cluster(tmp_path)
    cache = tmp_path / "cache"
    killer = threading.Thread(target=lambda: (_when("3 runs in the cache", lambda: len(list(cache.rglob("*.json"))) >= 3),
                                              cluster.scheduler.kill()), daemon=True)
    try:
        with distributed.Client(cluster.address, timeout="30s") as client:
            killer.start()
            with pytest.raises(SqError, match="was lost in the middle of the study") as lost:
                sq.sweep(MMC, {"lam": [round(5 + k / 100, 2) for k in range(140)]}, [1, 2, 3], executor=client,
                         horizon=2000, warmup=100, cache=cache)
    finally:
        killer.join(60)
        cluster.stop()
    records = lost.value.sweep.records
    assert 3 <= len(records) <= len(list(cache.rglob("*.json"))) and lost.value.sweep.total == 420


BIG = """stage s : fifo(c);
let c = 1;
let lam = 0.5;
run { horizon 200; warmup 20; }
workload { arrive poisson(lam); }
session { set u = ~uniform(0, 1); set t0 = now; run s (~exp(1)); observe big = u * 1e307; observe wait = now - t0; }
"""


@pytest.mark.filterwarnings("error::RuntimeWarning")   # (the drift's means summed past the largest double)
def test_observations_past_1e154_summarize_as_inf(tmp_path, capsys):
    """Squares of such observations pass the largest double: the summary's half-widths are inf,
    and the sweep and the capacity search end normally (they crashed after every run)."""
    program, out = tmp_path / "big.sq", tmp_path / "runs.csv"
    program.write_text(BIG)
    status = cli.main(["sweep", str(program), "--set", "lam=0.5,0.6", "--seeds", "1..3", "-j", "1", "--out", str(out)])
    printed = capsys.readouterr().out.splitlines()
    assert status == 0 and len(list(_rows(out))) == 6
    assert all("± inf" in line for line in printed[1:]), printed
    status = cli.main(["capacity", str(program), "--knob", "c", "--slo", "big.mean<=1e308", "--lo", "1", "--hi", "3",
                       "--seeds", "1..2", "-j", "1"])
    assert status == 0, capsys.readouterr().err


def test_the_runs_are_written_before_the_summary(tmp_path, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("the summary failed")
    monkeypatch.setattr(cli_study, "summary_table", broken)
    out = tmp_path / "runs.csv"
    try:
        cli.main(["sweep", MMC, "--seeds", "1..2", *SHORT, "-j", "1", "--out", str(out)])
    except RuntimeError:
        pass
    assert len(list(_rows(out))) == 2


@pytest.mark.parametrize("command, args, phrase", [
    ("sweep", ["--set", "lam=0:1e400:1e399"], "error: --set lam=0:1e400:1e399: 1e400 is beyond the largest number"),
    ("sweep", ["--set", "lam=1:2:-1e309"], "-1e309 is beyond the largest number"),
    ("sweep", ["--out", ""], "error: --out: the path is empty\n"),
    ("sweep", ["--set", "lam=5,6", "--plot", "x=lam,y=wait.p99", "--plot-out", ""], "error: --plot-out: the path is empty"),
    ("capacity", ["--knob", "c", "--slo", "wait.mean<=1", "--plot-out", ""], "error: --plot-out: the path is empty"),
    ("sweep", ["--cache", ""], "error: sweep: cache: the path is empty\n"),
    ("capacity", ["--knob", "c", "--slo", "wait.mean<=1", "--cache", ""], "error: capacity: cache: the path is empty\n"),
])
def test_values_that_name_nothing_exit_2(tmp_path, capsys, monkeypatch, command, args, phrase):
    monkeypatch.chdir(tmp_path)
    if "--plot" in args:
        pytest.importorskip("matplotlib")
    status = cli.main([command, MMC, *args, *SHORT, "-j", "1"])
    err = capsys.readouterr().err
    assert status == 2 and phrase in err, err
    assert not list(tmp_path.iterdir())     # nothing written where the empty path would lead: here

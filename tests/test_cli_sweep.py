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

ROOT = Path(__file__).resolve().parent.parent
MMC = str(ROOT / "examples" / "single-turn" / "mmc.sq")
SHORT = ["--horizon", "400", "--warmup", "50"]


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
    (["--horizon", "10", "--warmup", "20"], "warmup < horizon"),
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
    rows = list(csv.DictReader(out.open()))
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
    lines = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
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
    rows = list(csv.DictReader(out.open()))
    assert rows[0]["stage.engine[3].util"] != "" and rows[1]["stage.engine[3].util"] == ""

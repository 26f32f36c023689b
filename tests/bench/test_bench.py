"""`python -m sq bench` runs from an installed sq: a copy of what `pip install` puts in
site-packages (pyproject's packages and package data, the built extensions), run from a folder
with no checkout in sight. It times sq beside pyserq, compares their reports, says when a row is
too short to be a speed figure, and without pyserq gives sq's figures, saying so."""
import shutil
import subprocess
import sys
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from sq.bench import table
from sq.cli.main import main as cli

ROOT = Path(__file__).resolve().parents[2]


def installed_copy(site: Path) -> None:
    """What a non-editable install of this checkout puts in site-packages (sq's part of it):
    the packages pyproject's `find` includes, their modules, built extensions and package data."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    include = tool["packages"]["find"]["include"]
    data = tool.get("package-data", {})
    packages = [p.parent for p in (ROOT / "sq").rglob("__init__.py")
                if any(fnmatch(".".join(p.parent.relative_to(ROOT).parts), pattern) for pattern in include)]
    for folder in packages:
        name = ".".join(folder.relative_to(ROOT).parts)
        for pattern in ["*.py", "*.so", *data.get("*", []), *data.get(name, [])]:
            for file in folder.glob(pattern):
                (site / file.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(file, site / file.relative_to(ROOT))


def test_bench_from_an_installed_sq(tmp_path, pyserq):
    site, elsewhere = tmp_path / "site", tmp_path / "elsewhere"
    installed_copy(site)
    elsewhere.mkdir()
    out = subprocess.run([sys.executable, "-m", "sq", "bench", "--quick", "--rounds", "1", "mm1", "sweep",
                          "--reference", str(ROOT / "benchmarks" / "reference_pyserq.py")],
                         cwd=elsewhere, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    rows = {}
    for line in out.stdout.splitlines():    # a model's row, then (below the table) its description
        if line.strip():
            rows.setdefault(line.split()[0], line)
    for name in ("mm1", "sweep"):
        cells = rows[name].split()
        assert cells[5] == "equal", rows[name]            # the reports' JSON texts
        assert float(cells[3].rstrip("x")) > 1.0          # sq is faster than pyserq
        assert float(cells[4].rstrip("x")) > 1.0          # and its run alone too
    assert "too short to be a speed figure" in rows["mm1"]   # --quick's M/M/1 takes ~10 ms
    assert "per-run costs are what this row times" in rows["sweep"]


def test_bench_without_pyserq_says_so(monkeypatch, capsys, tmp_path):
    # an install: the package folder without a checkout's benchmarks/ beside it (the children
    # still import this sq, whatever its path, not whichever one the environment installed)
    (tmp_path / "sq").symlink_to(ROOT / "sq", target_is_directory=True)
    monkeypatch.setattr(table.measure, "SQ_PATH", str(tmp_path))
    assert table.main(["mm1"], quick=True, rounds=1) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("no pyserq comparison: sq's figures only")
    row = next(line for line in out if line.startswith("mm1 "))
    assert float(row.split()[1]) > 0 and "-" in row.split()


def test_sq_never_imports_pyserq_itself():
    # the reference runs from a driver file outside the package, loaded by the child process
    for path in (ROOT / "sq").rglob("*.py"):
        assert "import pyserq" not in path.read_text(encoding="utf-8"), path


def test_a_missing_reference_file_is_an_error(capsys):
    assert cli(["bench", "--quick", "--reference", "/nonexistent/ref.py", "mm1"]) == 2
    assert "bench: --reference /nonexistent/ref.py: no such file" in capsys.readouterr().err


def test_reports_that_differ_are_named_by_seed():
    ours = {"digests": ["a", "b", "c"]}
    assert table.equality(ours, {"digests": ["a", "b", "c"]}) == "equal"
    assert table.equality(ours, {"digests": ["a", "x", "c"]}) == "DIFFER (seed 2)"
    assert table.equality(ours, {"digests": None}) == "VARY"
    assert table.equality(ours, None) == "-"


def test_an_unknown_model_is_refused(capsys):
    assert cli(["bench", "nope"]) == 2
    assert "bench: unknown model(s) nope; known: mm1," in capsys.readouterr().err


@pytest.mark.parametrize("name", [m.name for m in table.MODELS])
def test_quick_rows_keep_a_warmup_below_the_horizon(name):
    model = next(m for m in table.MODELS if m.name == name).shortened(table.QUICK)
    assert 0 <= model.warmup < model.horizon and model.runs >= 1


def test_the_builds_training_runs_from_an_installed_sq(tmp_path):
    # pgo_build.py trains on sq/bench/rows.py in a copy of the package: an sdist ships no benchmarks/
    sys.path.insert(0, str(ROOT))
    import pgo_build

    site, elsewhere = tmp_path / "site", tmp_path / "elsewhere"
    installed_copy(site)
    elsewhere.mkdir()
    out = subprocess.run([sys.executable, "-c", pgo_build.TRAINING.format(tree=str(site))], cwd=elsewhere,
                         env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert (site / "week-200000.csv").stat().st_size > 1e6   # the week row's trace, written there


def child_spec(round_: float) -> dict:
    model = next(m for m in table.MODELS if m.name == "sweep").shortened(100)   # 10 runs of 1,000 arrivals
    return {"impl": "sq", "source": model.source, "horizon": model.horizon, "warmup": model.warmup,
            "runs": model.runs, "arrivals": model.arrivals, "path": str(ROOT), "round": round_}


def test_a_round_shorter_than_its_least_runs_again_and_counts_the_mean():
    from sq.bench import _child

    once, filled = _child.main(child_spec(0.0)), _child.main(child_spec(0.3))
    assert once["passes"] == 1
    # (10 short runs take a few ms: a round of 0.3 s makes them again)
    assert filled["passes"] >= 2 and filled["cpu"] * filled["passes"] >= 0.3
    assert filled["digests"] == once["digests"] and len(once["digests"]) == 10
    assert filled["events"] == once["events"]


def test_a_round_whose_passes_differ_is_said_to_vary(monkeypatch):
    from sq.bench import _child

    # two passes of 0.6 s each fill a round of 1 s: their texts are compared
    monkeypatch.setattr(_child, "one_pass", _passes_of([["a"], ["b"]]))
    assert _child.main(child_spec(1.0))["digests"] is None
    monkeypatch.setattr(_child, "one_pass", _passes_of([["a"], ["a"]]))
    got = _child.main(child_spec(1.0))
    assert got["passes"] == 2 and got["cpu"] == 0.6
    assert got["digests"] == [_child.hashlib.sha256(b"a").hexdigest()[:16]]


def _passes_of(texts: list[list[str]]):
    """A one_pass that gives these texts pass after pass, each pass taking 0.6 s of CPU."""
    it = iter(texts)

    class Report:
        events = 1

    return lambda run, program, runs: (0.6, 0.0, [Report()], next(it))

"""`python -m sq`: what a user sees at the terminal."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import children

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "single-turn" / "ps.sq"


def sq_cli(*args, cwd=None):
    return subprocess.run([children.PYTHON, "-m", "sq", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=children.env(), timeout=120)


def test_check_prints_a_summary():
    out = sq_cli("check", EXAMPLE)
    assert out.returncode == 0, out.stderr
    assert "ok" in out.stdout and "1 stage" in out.stdout


def test_ir_round_trips_through_from_json():
    from sq.ir import Program

    out = sq_cli("ir", EXAMPLE, "--set", "lam=0.5")
    assert out.returncode == 0, out.stderr
    program = Program.from_json(out.stdout)
    assert json.loads(program.to_json()) == json.loads(out.stdout)
    assert json.loads(out.stdout)["version"] == 10


def test_bad_program_gives_location_and_caret(tmp_path):
    bad = tmp_path / "bad.sq"
    bad.write_text("run { horizon 10; }\nsession {\n  observe x = y[1];\n}\n")
    out = sq_cli("check", bad)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    first = out.stderr.splitlines()[0]
    assert first.startswith(f"{bad}:3:"), out.stderr
    assert "error:" in first
    assert any(line.strip().startswith("|") and "^" in line for line in out.stderr.splitlines()), out.stderr


def test_unknown_set_constant_is_an_error_not_a_traceback():
    out = sq_cli("check", EXAMPLE, "--set", "nosuch=3")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and "nosuch" in out.stderr


def test_missing_file_is_reported():
    out = sq_cli("check", "no/such/file.sq")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr


def test_run_json_matches_the_reference():
    pyserq = pytest.importorskip("pyserq")
    out = sq_cli("run", EXAMPLE, "--json", "--horizon", "2000", "--warmup", "100", "--seed", "4")
    assert out.returncode == 0, out.stderr
    ours = json.loads(out.stdout)
    theirs = json.loads(pyserq.run(pyserq.compile(path=str(EXAMPLE), horizon=2000, warmup=100, seed=4)).json())
    assert same(ours, theirs), (ours, theirs)


def same(a, b, rtol=1e-9):
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(b, (int, float)) and abs(a - b) <= rtol * max(abs(a), abs(b))
    return a == b


def test_run_prints_a_readable_table():
    out = sq_cli("run", EXAMPLE, "--horizon", "500", "--warmup", "50")
    assert out.returncode == 0, out.stderr
    assert "response" in out.stdout


def test_run_prints_the_debug_traces_on_stderr(tmp_path):
    program = tmp_path / "evict.sq"
    program.write_text("""
pool mem { cap 30; block 10; evict lru; }
stage d : delay;
workload { arrive batch(2); }
session { run d (serial); hold mem (20) { run d (0.5); } cache (20); run d (10); }
""")
    out = sq_cli("run", program, "--horizon", "5", "--trace-evictions", "--dump-pools")
    assert out.returncode == 0, out.stderr
    # serial 1's admission at t=1 needs 20 of 30 with serial 0's 20 cached: one block goes
    assert out.stderr.splitlines() == ["EVICT 1.0000 0 10",
                                       'POOL mem used 0 cached 30 by status {"InStage": (2, 30.0)}']


@pytest.mark.parametrize("args, horizon", [(["--horizon", "-5"], "-5"),
                                           (["--horizon", "inf", "--warmup", "0", "--arrivals", "100"], "inf")])
def test_a_bad_horizon_flag_is_named_as_the_problem(args, horizon):
    out = sq_cli("run", str(ROOT / "examples" / "single-turn" / "mg1.sq"), *args)
    assert out.returncode == 2
    assert out.stderr.endswith(f"\nhelp: the horizon must be a positive finite time, found {horizon}\n")


def test_sweep_help_lists_every_plot_option():
    """`logx` works (docs/cli.md): the --plot help names it beside `logy`. (Here, not in
    test_cli_sweep.py: the help text is the one line of sq/cli/study.py this change touches.)"""
    out = sq_cli("sweep", "--help")
    assert out.returncode == 0 and "[,logx][,logy]" in " ".join(out.stdout.split())

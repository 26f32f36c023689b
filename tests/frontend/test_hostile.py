"""Hostile input (issue 14, front end, API and CLI): each case runs in a child
process under a timeout and a memory limit (tests/helpers/hostile.py) and must fail
cleanly — exit 2, a message naming the construct, no traceback, no "internal
error", no signal death — or, where 0.1.2 runs the program, run it.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import children
from tests.helpers.hostile import ROOT, assert_clean, assert_ok, assert_refused, run_process, run_sq
from tests.helpers.oracle import needs_reference

HEAD = "run { horizon 10; }\nstage svc : ps(1);\nworkload { arrive poisson(1); }\n"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---- item 2: budget_left cycles ---------------------------------------------------
SELF_CHUNK = """run { horizon 10; }
pool kv { cap 100; }
stage e : step { budget 10; cost 1; chunk budget_left(e); memory kv; }
workload { arrive poisson(1); }
session { hold kv (8) { run e prefill (8); } }
"""
SELF_BUDGET = """run { horizon 10; }
stage e : step { budget 2 + budget_left(e) / 2; cost 1; chunk 3; }
workload { arrive poisson(1); }
session { run e prefill (8); }
"""
# b's budget reads c (through a def), c's chunk reads b: a cycle of two stages; a reads nothing
THROUGH_DEFS = """run { horizon 10; }
def room(s) = min(4, budget_left(s));
stage a : step { budget 10; cost 1; chunk 2; }
stage b : step { budget room(c) + 1; cost 1; chunk 3; }
stage c : step { budget 10; cost 1; chunk now > 5 ? room(b) : 2; }
workload { arrive poisson(1); }
session { run b prefill (8); run c prefill (2); }
"""


@pytest.mark.parametrize("source, words", [
    (SELF_CHUNK, ["stage `e`", "own `budget_left`", "chunk"]),
    (SELF_BUDGET, ["stage `e`", "own `budget_left`", "budget"]),
    (THROUGH_DEFS, ["`budget_left` cycle", "`b` (budget) → `c` (chunk) → `b`"]),
], ids=["self-chunk", "self-budget", "two-stages-through-defs"])
def test_budget_left_cycle_is_refused_at_link(tmp_path, source, words):
    path = _write(tmp_path, "p.sq", source)
    for command in ("check", "run"):
        assert_refused(run_sq(command, path, timeout=60), *words)


def test_budget_left_cycle_in_the_vllm_example(tmp_path):
    """The natural edit the issue names: the engine's chunk capped by its own budget_left."""
    text = (ROOT / "examples" / "multi-turn" / "vllm.sq").read_text()
    assert "  chunk chunk_cap;" in text
    path = _write(tmp_path, "vllm.sq", text.replace("  chunk chunk_cap;",
                                                     "  chunk min(chunk_cap, budget_left(engine));"))
    assert_refused(run_sq("run", path), "stage `engine`", "budget_left")


def test_budget_left_of_another_stage_is_no_cycle(tmp_path):
    source = """run { horizon 10; }
stage a : step { budget 10; cost 1; chunk 2; }
stage b : step { budget 10; cost 1; chunk min(3, budget_left(a)); }
workload { arrive poisson(1); }
session { run b prefill (8); run a prefill (3); observe x = budget_left(b); }
"""
    assert_ok(run_sq("run", _write(tmp_path, "p.sq", source), "--json"))


# ---- item 9: deep nesting ---------------------------------------------------------
def _parens(n: int) -> str:
    return HEAD + "session { run svc (1); observe x = " + "(now+" * n + "1" + ")" * n + "; }\n"


_REFERENCE_JSON = "import sys, pyserq; print(pyserq.run(pyserq.compile(path=sys.argv[1])).json())"


@needs_reference
def test_nesting_that_pyserq_runs_runs_the_same(tmp_path):
    """2500 levels: 0.1.2 runs it (it crashes from about 3000); sq gives the same report."""
    path = _write(tmp_path, "deep.sq", _parens(2500))
    ours = run_sq("run", path, "--json", timeout=120)
    assert_ok(ours)
    theirs = run_process([children.PYTHON, "-c", _REFERENCE_JSON, str(path)], timeout=120, memory_mb=None)
    assert theirs.code == 0, theirs
    assert ours.stdout.strip() == theirs.stdout.strip()


def test_nesting_beyond_the_limit_is_refused(tmp_path):
    path = _write(tmp_path, "deeper.sq", _parens(10100))
    assert_refused(run_sq("check", path, timeout=120), "nests deeper than 10000 levels")


@pytest.mark.parametrize("shape", ["prefix", "power", "blocks"])
def test_nesting_pyserq_crashes_on_runs_up_to_the_limit(tmp_path, shape):
    """Deeper than 0.1.2 reads blocks (it crashes before 3000); 9,000 prefix operators or `^`s it reads."""
    n = 5000 if shape == "blocks" else 9000
    body = {"prefix": "observe x = " + "-" * n + "now;",
            "power": "observe x = " + "now^" * n + "1;",
            "blocks": "branch (now >= 0) { " * n + "observe x = now;" + " }" * n}[shape]
    path = _write(tmp_path, "deep.sq", HEAD + "session { run svc (1); " + body + " }\n")
    assert_ok(run_sq("run", path, "--json", timeout=240))


def test_deep_program_runs_under_a_tight_address_space_limit(tmp_path):
    """A 512 MB thread stack cannot be reserved under 500 MB: a smaller one is used."""
    path = _write(tmp_path, "deep.sq", _parens(3000))
    assert_ok(run_sq("run", path, "--json", timeout=120, memory_mb=500))


def _deep_stack_mapped(pid: int) -> bool:
    """Whether sq._support.deep's largest thread stack is mapped in the process: a deep walk has started."""
    from sq._support.deep import _STACKS

    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        low, high = (int(x, 16) for x in line.split()[0].split("-"))
        if high - low >= _STACKS[0]:
            return True
    return False


def _loaded(module: str):
    """The moment `python -X importtime` reports `module` loaded (one stderr line per module)."""
    return lambda proc, err_lines: any(line.split("|")[-1].strip() == module for line in err_lines)


# Moments of `sq check` on a deep program, each known from what the child shows, not from a
# sleep: the machine may be busy. The first three come from the lines `-X importtime` prints as
# each module finishes loading; the fourth is the deep walk's thread stack in /proc/PID/maps.
CTRL_C_MOMENTS = {
    # the syntax tree's classes load for a while after it, through exec() (`sq check` loads no numpy)
    "while the syntax tree loads": _loaded("sq.errors"),
    "parsing the arguments": _loaded("sq.cli.main"),
    "the compile starts": _loaded("sq.frontend.parser"),
    "on the deep walk's thread": lambda proc, err_lines: _deep_stack_mapped(proc.pid),
}


@pytest.mark.parametrize("moment", list(CTRL_C_MOMENTS))
def test_ctrl_c_at_any_moment_exits_130_without_a_traceback(tmp_path, moment):
    """Ctrl-C while sq loads, parses its arguments or compiles (40 expressions of 3000
    levels: seconds of work on threads with a large stack) ends it with `interrupted` and
    exit 130 — not death by SIGINT, which CPython chooses when the interrupt went through
    code that exec() runs (dataclasses), even if caught."""
    body = "".join(f"observe x{k} = " + "(now+" * 3000 + "1" + ")" * 3000 + ";\n" for k in range(40))
    path = _write(tmp_path, "slow.sq", HEAD + "session { run svc (1);\n" + body + "}\n")
    proc = subprocess.Popen([children.PYTHON, "-X", "importtime", "-m", "sq", "check", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=children.env(), cwd=ROOT)
    err_lines: list[str] = []

    def read_stderr() -> None:
        for line in proc.stderr:
            err_lines.append(line)

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while not CTRL_C_MOMENTS[moment](proc, list(err_lines)):
            assert proc.poll() is None and time.monotonic() < deadline, (moment, "never came", err_lines[-5:])
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        proc.kill()
    reader.join(10)
    out = proc.stdout.read()
    err = "".join(line for line in err_lines if not line.startswith("import time:"))
    assert "Traceback" not in err, err
    assert proc.returncode == 130 and err == "interrupted\n" and out == "", (moment, proc.returncode, err, out)


# ---- item 13: files that are not regular, memory ------------------------------------
@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("which", ["/dev/zero", "fifo"])
def test_program_that_is_not_a_regular_file(which, fifo):
    path = fifo if which == "fifo" else which
    assert_refused(run_sq("check", path, timeout=20), "cannot read", "not a regular file")


@pytest.mark.parametrize("which", ["/dev/zero", "fifo"])
def test_use_of_a_file_that_is_not_regular(tmp_path, which, fifo):
    target = fifo if which == "fifo" else which
    path = _write(tmp_path, "p.sq", f'use "{target}";\n' + HEAD)
    assert_refused(run_sq("check", path, timeout=20), "cannot read", "not a regular file")


@pytest.mark.parametrize("which", ["/dev/zero", "fifo"])
def test_trace_that_is_not_a_regular_file(which, fifo):
    target = fifo if which == "fifo" else which
    example = ROOT / "examples" / "replay" / "vllm_replay.sq"
    assert_refused(run_sq("run", example, "--trace", target, timeout=20), "cannot read trace", "not a regular file")


def test_directory_is_refused_in_pyserqs_words(tmp_path):
    assert_refused(run_sq("check", tmp_path, timeout=20), "cannot read", "Is a directory (os error 21)")


def test_out_of_memory_while_reading_is_a_clear_error(tmp_path):
    """A 150 MB program under a 160 MB address space: exit 2 saying so, not an internal error."""
    path = tmp_path / "huge.sq"
    with open(path, "wb") as f:
        f.write(b"//")
        f.write(b"x" * (150 << 20))
    r = run_sq("check", path, timeout=60, memory_mb=160)
    assert_refused(r, "out of memory")


# ---- item 15: CLI output plumbing ---------------------------------------------------
EXAMPLE = ROOT / "examples" / "single-turn" / "ps.sq"


def test_empty_dump_folder_is_an_error():
    assert_refused(run_sq("run", EXAMPLE, "--dump", ""), "--dump", "empty")


def test_bad_dump_folder_is_found_before_the_run(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    # a horizon that would run for minutes: the error must come first
    r = run_sq("run", EXAMPLE, "--horizon", "1e12", "--dump", blocker, timeout=30)
    assert_refused(r, f"--dump {blocker}", "not a folder")
    assert_refused(run_sq("run", EXAMPLE, "--horizon", "1e12", "--dump", blocker / "sub", timeout=30),
                   "cannot create the folder")


def test_dump_leaves_only_whole_files(tmp_path):
    out = tmp_path / "out"
    assert_ok(run_sq("run", EXAMPLE, "--horizon", "200", "--warmup", "10", "--dump", out))
    names = sorted(p.name for p in out.iterdir())
    assert names == ["response.csv"]
    assert out.joinpath("response.csv").read_text().startswith("time,session,turn,value\n")


def test_write_atomic_leaves_nothing_on_failure(tmp_path):
    from sq._support.files import write_atomic

    target = tmp_path / "a.csv"
    target.write_text("old\n")

    def chunks():
        yield "new,"
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        write_atomic(target, chunks())
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.csv"]


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_write_atomic_makes_files_as_the_umask_says(tmp_path, umask):
    """--dump's CSV files get the mode of every other output, 0666 less the umask."""
    from sq._support.files import write_atomic

    previous = os.umask(umask)
    try:
        write_atomic(tmp_path / "a.csv", ["x\n"])
    finally:
        os.umask(previous)
    assert (tmp_path / "a.csv").stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", [["check"], ["ir"], ["run", "--json"]])
def test_stdout_on_a_full_disk(command):
    line = " ".join([children.PYTHON, "-m", "sq", command[0], str(EXAMPLE), *command[1:], "--horizon", "100",
                     "--warmup", "10", ">/dev/full"])
    r = run_process(["sh", "-c", line])
    assert_refused(r, "cannot write to standard output", "No space left on device")


def test_stdout_closed_from_the_start():
    """`sq run x.sq >&-`: Python starts with sys.stdout None; sq says so (it was an internal error, exit 1)."""
    for command in (["run"], ["check"]):
        line = f'"{children.PYTHON}" -m sq {command[0]} "{EXAMPLE}" >&-'
        assert_refused(run_process(["sh", "-c", line]), "error: standard output is closed")


def test_an_empty_memory_bound_is_refused():
    assert_refused(run_sq("run", EXAMPLE, "--max-memory", ""), "--max-memory: expected a size like 512M")


MMC = ROOT / "examples" / "single-turn" / "mmc.sq"


@pytest.mark.parametrize("command", [["check"], ["ir"], ["run", "--json"], ["run"],
                                     ["sweep", "--set", "lam=5,6", "-j", "1"]])
def test_stdout_whose_reader_has_gone(command):
    """The reader of sq's stdout has gone before sq writes: no message, and the status a
    shell shows for a tool that SIGPIPE ended (128 + 13)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = subprocess.run([children.PYTHON, "-m", "sq", command[0], str(MMC), *command[1:], "--horizon", "100",
                            "--warmup", "10"], stdout=write_end, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                           env=children.env(), timeout=120)
    finally:
        os.close(write_end)
    assert (r.returncode, r.stderr) == (141, ""), r.stderr


def test_ir_piped_into_head(tmp_path):
    """`sq ir x.sq | head -c 100` on an IR (one line of JSON) far bigger than a pipe holds: its
    first 100 characters and no message. (The status is 141, or 0 when head left in the middle
    of the write: Linux then returns the part written, and Python reports no error for the rest.)"""
    observes = "".join(f"observe o{k} = now + {k};\n" for k in range(5000))
    path = _write(tmp_path, "wide.sq", HEAD + "session { run svc (1);\n" + observes + "}\n")
    script = f'"{children.PYTHON}" -m sq ir "{path}" | head -c 100; echo "status ${{PIPESTATUS[0]}}" >&2'
    r = run_process(["bash", "-c", script], timeout=120)
    first = subprocess.run([children.PYTHON, "-m", "sq", "ir", str(path)], capture_output=True, text=True,
                           cwd=ROOT, env=children.env(), timeout=120).stdout
    assert len(first) > 4 * 65536   # a Linux pipe holds 64 KiB
    assert r.stdout == first[:100] and r.stderr in ("status 141\n", "status 0\n"), r


# ---- item 16: API errors -------------------------------------------------------------
API_CASES = {
    "load-list-json": "sq.load('[]')",
    "load-int": "sq.load(123)",
    "load-bad-bytes": "sq.load(b'\\xff')",
    "load-missing-file": "sq.load('no/such/file.json')",
    "compile-int": "sq.compile(123)",
    "compile-source-int": "sq.compile(source=5)",
    "run-int": "sq.run(123)",
}


@pytest.mark.parametrize("call", API_CASES.values(), ids=API_CASES.keys())
def test_api_bad_input_is_sqerror(call):
    code = f"import sq\ntry:\n    {call}\nexcept sq.SqError as e:\n    print('SqError', e)\n"
    r = run_process([children.PYTHON, "-c", code], timeout=60)
    assert_ok(r)
    assert r.stdout.startswith("SqError"), r


def test_process_limits_are_enforced():
    """The helper itself: a child over its memory limit fails (it does not take the machine)."""
    r = run_process([children.PYTHON, "-c", "x = bytearray(400 << 20)"], memory_mb=200)
    assert r.code != 0 and "MemoryError" in r.stderr
    r = run_process([children.PYTHON, "-c", "import time; time.sleep(30)"], timeout=1)
    assert r.timed_out
    assert_clean(run_process([children.PYTHON, "-c", "pass"]))

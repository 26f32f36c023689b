"""Run sq on hostile input in a child process, and check it failed cleanly.

A hostile input may crash, hang or exhaust memory, so each one runs in its own
process with a wall-clock timeout and an address-space limit (RLIMIT_AS, set
in the child before it starts Python's work).  The API:

    from tests.helpers.hostile import run_sq, run_script, assert_refused, assert_clean

    r = run_sq("check", path)                      # python -m sq check PATH
    r = run_sq("run", path, "--json", timeout=30, memory_mb=500)
    r = run_script("import sq; sq.load(b'[]')")    # any Python code
    assert_refused(r, "budget_left", "cycle")      # exit 2, words in stderr, clean
    assert_clean(r)                                # no crash of any kind (any exit)

`Result` has `code` (negative: killed by that signal), `stdout`, `stderr`
and `timed_out`.  `memory_mb=None` runs without a limit.  The child runs from
the repository root with the repository first on PYTHONPATH, so it imports
the same sq as the tests.
"""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import children

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TIMEOUT = 60.0
DEFAULT_MEMORY_MB = 1024
# What a crash or an unexpected failure prints; none may appear on bad input.
CRASH_MARKS = ("internal error", "Traceback (most recent call last)", "Segmentation fault",
               "double free", "AddressSanitizer", "core dumped")


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str
    timed_out: bool = False

    def __str__(self) -> str:
        how = "timed out" if self.timed_out else f"exit {self.code}"
        return f"{how}\n--- stdout ---\n{self.stdout[-2000:]}\n--- stderr ---\n{self.stderr[-4000:]}"


def _limit(memory_mb: int | None):
    def preexec() -> None:
        if memory_mb is not None:
            size = memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash leaves no core file behind
    return preexec


def run_process(argv: list[str], *, input: str | bytes | None = None, timeout: float = DEFAULT_TIMEOUT,
                memory_mb: int | None = DEFAULT_MEMORY_MB, cwd: str | os.PathLike | None = None,
                env: dict | None = None) -> Result:
    """Run `argv` under the limits; a timeout kills the child's whole process group."""
    child_env = children.env()
    child_env.pop("SQ_DEBUG", None)
    child_env.update(env or {})
    data = input.encode("utf-8") if isinstance(input, str) else input
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd or ROOT, env=child_env,
                            preexec_fn=_limit(memory_mb), start_new_session=True)
    try:
        out, err = proc.communicate(data, timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        timed_out = True
    return Result(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), timed_out)


def run_sq(*args, **limits) -> Result:
    """`python -m sq ARGS…` (arguments are str()-ed); keywords as for `run_process`."""
    return run_process([children.PYTHON, "-m", "sq", *map(str, args)], **limits)


def run_script(code: str, *args, **limits) -> Result:
    """`python -c CODE ARGS…`; keywords as for `run_process`."""
    return run_process([children.PYTHON, "-c", code, *map(str, args)], **limits)


def assert_clean(r: Result) -> None:
    """No hang, no death by a signal, no traceback and no internal error."""
    assert not r.timed_out, f"hung: {r}"
    assert r.code >= 0, f"killed by signal {-r.code}: {r}"
    assert r.code != 3, f"internal error: {r}"
    for mark in CRASH_MARKS:
        assert mark not in r.stderr and mark not in r.stdout, f"{mark!r} printed: {r}"


def assert_refused(r: Result, *words: str, code: int = 2) -> None:
    """A clean refusal: exit `code` (2, bad input) and every word (case-insensitive) in stderr."""
    assert_clean(r)
    assert r.code == code, f"expected exit {code}: {r}"
    for word in words:
        assert word.lower() in r.stderr.lower(), f"{word!r} not in the message: {r}"


def assert_ok(r: Result) -> None:
    """A clean success (exit 0)."""
    assert_clean(r)
    assert r.code == 0, f"expected success: {r}"

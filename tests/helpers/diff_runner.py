"""Run one program through sq and through pyserq 0.1.2 and list where the two runs differ.

The reference runs in a persistent worker subprocess, so a program that hangs
pyserq costs one timeout (the worker is killed and restarted) and never the
test session. Its iteration trace is the `ITER` lines pyserq prints on stderr
when SERQ_TRACE_ITER is set; the worker captures fd 2 per run. sq runs in this
process with `check_invariants=True`.

    python -m tests.helpers.diff_runner PROGRAM.sq [--seed S]          # one file, prints differences
    python -m tests.helpers.diff_runner --generated 0:500 [--family step]   # generated programs

(from the repository root, so that `tests.helpers` and the checkout's sq are the ones imported)
"""
from __future__ import annotations

import json
import math
import os
import re
import select
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

RTOL = 1e-9

WORKER = r'''
import json, os, sys, tempfile, pyserq
out = sys.stdout
while True:
    line = sys.stdin.readline()
    if not line:
        break
    req = json.loads(line)
    reply = {}
    with tempfile.TemporaryFile(mode="w+b") as err:
        saved = os.dup(2)
        os.dup2(err.fileno(), 2)
        if req["iterations"]:
            os.environ["SERQ_TRACE_ITER"] = "1"
        try:
            p = pyserq.compile(source=req["source"], seed=req["seed"])
            reply["report"] = json.loads(pyserq.run(p).json())
        except BaseException as e:
            reply["error"] = f"{type(e).__name__}: {e}"
        finally:
            os.environ.pop("SERQ_TRACE_ITER", None)
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    reply["iters"] = [l.split(" | ")[0].rstrip() for l in text.splitlines() if l.startswith("ITER ")]
    out.write(json.dumps(reply) + "\n")
    out.flush()
'''


class Reference:
    """A pyserq worker process; `run` returns the reply dict, or {"timeout": True} when the
    worker has worked `timeout` seconds of CPU time on a program without answering. CPU time,
    not wall time: on a busy machine the same programs are compared as on an idle one."""

    # A worker that waits instead of working is stopped after this many times its CPU budget.
    WALL_FACTOR = 20

    def __init__(self, timeout: float = 5.0):
        self.timeout = timeout
        self.proc = None

    def _start(self):
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     cwd=tempfile.gettempdir())

    def run(self, source: str, seed: int, iterations: bool) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(json.dumps({"source": source, "seed": seed, "iterations": iterations}) + "\n")
        self.proc.stdin.flush()
        if not self._answers():
            self.close()
            return {"timeout": True}
        line = self.proc.stdout.readline()
        if not line:
            self.close()
            return {"error": "reference worker died"}
        return json.loads(line)

    def _answers(self) -> bool:
        """Whether a reply comes before the worker has spent its CPU budget on this program."""
        spent_before = _cpu_seconds(self.proc.pid)
        wall_end = time.monotonic() + self.WALL_FACTOR * self.timeout
        while not select.select([self.proc.stdout], [], [], 0.05)[0]:
            if _cpu_seconds(self.proc.pid) - spent_before > self.timeout or time.monotonic() > wall_end:
                return False
        return True

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of a live process (Linux /proc); 0 once it is gone."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")   # utime, stime


def run_sq(source: str, seed: int, iterations: bool, check_invariants: bool = True) -> dict:
    import sq

    try:
        program = sq.compile(source=source, seed=seed)
    except sq.SqError as e:
        return {"error": f"SqError: {e}"}
    try:
        report = sq.run(program, trace_iterations=iterations, check_invariants=check_invariants)
    except sq.SqError as e:
        if check_invariants and "invariant" in str(e):
            # Keep the report of the unchecked run, so a broken invariant and a wrong number show apart.
            plain = run_sq(source, seed, iterations, check_invariants=False)
            plain["invariant"] = str(e)
            return plain
        return {"error": f"SqError: {e}"}
    except Exception as e:  # a crash is a finding, not a test-harness error
        return {"error": f"CRASH {type(e).__name__}: {e}"}
    iters = [l.split(" | ")[0].rstrip() for l in (report.iteration_trace or [])] if iterations else []
    return {"report": json.loads(report.to_json()), "iters": iters}


def _same(a, b) -> bool:
    nonfinite = lambda v: v is None or (isinstance(v, float) and not math.isfinite(v))
    if a is None or b is None:
        return nonfinite(a) and nonfinite(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if nonfinite(a) or nonfinite(b):
            return a == b or (a != a and b != b)
        return a == b or abs(a - b) <= RTOL * max(abs(a), abs(b)) + 1e-300
    return a == b


def walk(ref, mine, path="report", out=None) -> list:
    """Every (path, reference, sq) where the two JSON values differ; `serq_version` is not compared."""
    out = [] if out is None else out
    if isinstance(ref, dict) and isinstance(mine, dict):
        for k in ref.keys() | mine.keys():
            if k == "serq_version":
                continue
            if k not in mine or k not in ref:
                out.append((f"{path}.{k}", ref.get(k, "<absent>"), mine.get(k, "<absent>")))
            else:
                walk(ref[k], mine[k], f"{path}.{k}", out)
    elif isinstance(ref, list) and isinstance(mine, list):
        if len(ref) != len(mine):
            out.append((f"{path}.length", len(ref), len(mine)))
        for i, (r, m) in enumerate(zip(ref, mine)):
            tag = r.get("name", i) if isinstance(r, dict) else i
            if isinstance(r, dict) and r.get("index") is not None:
                tag = f"{tag}[{r['index']}]"
            walk(r, m, f"{path}[{tag}]", out)
    elif not _same(ref, mine):
        out.append((path, ref, mine))
    return out


def _headline(message: str) -> str:
    """The reference's message without its exception class and `link error:` prefix, first line only."""
    text = message.split(": ", 1)[1] if message.startswith(("ValueError", "PanicException")) else message
    text = re.sub(r"^\d+:\d+: ", "", text.split("\n")[0])
    return text.replace("link error: ", "", 1).strip()


@dataclass
class Outcome:
    """How a program fared: `status` is agree, differ, both-error, ref-timeout or one-sided-error."""

    status: str
    diffs: list = field(default_factory=list)
    ref_error: str | None = None
    sq_error: str | None = None
    first_iteration: tuple | None = None

    def describe(self) -> str:
        lines = [self.status]
        if self.ref_error or self.sq_error:
            lines.append(f"  reference: {self.ref_error or 'ok'}")
            lines.append(f"  sq:        {self.sq_error or 'ok'}")
        for p, r, m in self.diffs[:12]:
            lines.append(f"  {p}: reference {r!r}  sq {m!r}")
        if len(self.diffs) > 12:
            lines.append(f"  ... {len(self.diffs) - 12} more")
        if self.first_iteration:
            i, r, m = self.first_iteration
            lines.append(f"  iteration {i}: reference {r!r}  sq {m!r}")
        return "\n".join(lines)


def compare(reference: Reference, source: str, seed: int, iterations: bool = True) -> Outcome:
    ref = reference.run(source, seed, iterations)
    if ref.get("timeout"):
        return Outcome("ref-timeout")
    mine = run_sq(source, seed, iterations)
    if "error" in ref and ref["error"].startswith("PanicException"):
        # 0.1.2's documented panics (ch. 09 §9.x): sq may carry on where the reference aborts.
        return Outcome("ref-panic", ref_error=ref["error"])
    if "error" in ref or "error" in mine:
        status = "both-error" if ("error" in ref and "error" in mine) else "one-sided-error"
        if status == "both-error" and _headline(ref["error"]) not in mine["error"]:
            status = "error-differs"
        if "error" in mine and mine["error"].startswith("CRASH"):
            status = "sq-crash"
        return Outcome(status, ref_error=ref.get("error"), sq_error=mine.get("error"))
    diffs = walk(ref["report"], mine["report"])
    if "invariant" in mine:
        diffs.insert(0, ("check_invariants", "holds", mine["invariant"]))
    first = None
    if iterations:
        ri, mi = ref["iters"], mine["iters"]
        for i in range(max(len(ri), len(mi))):
            r = ri[i] if i < len(ri) else None
            m = mi[i] if i < len(mi) else None
            if r != m:
                first = (i, r, m)
                break
    return Outcome("differ" if diffs or first else "agree", diffs, first_iteration=first)


def main():
    import argparse

    ap = argparse.ArgumentParser(description="Compare sq with pyserq 0.1.2 on one program or on generated ones.")
    ap.add_argument("program", nargs="?")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--generated", metavar="LO:HI", help="run tests/helpers/gen_programs.py programs LO..HI-1 instead")
    ap.add_argument("--family", choices=None)
    args = ap.parse_args()
    ref = Reference()
    bad = 0
    try:
        if args.generated:
            bad = _generated(ref, *map(int, args.generated.split(":")), args.family)
        else:
            out = compare(ref, open(args.program).read(), args.seed)
            print(out.describe())
            bad = out.status not in ("agree", "both-error", "ref-panic")
    finally:
        ref.close()
    sys.exit(1 if bad else 0)


def _generated(ref, lo: int, hi: int, family) -> int:
    """Run generated programs lo..hi-1 under seeds 1 and 2; print each that does not agree; count them."""
    import collections

    from tests.helpers import gen_programs

    tally, bad = collections.Counter(), 0
    with tempfile.TemporaryDirectory() as folder:
        for index in range(lo, hi):
            case = gen_programs.generate(index, family)
            source = case.materialise(folder)
            for seed in (1, 2):
                out = compare(ref, source, seed, iterations=case.family != "net")
                tally[out.status] += 1
                if out.status not in ("agree", "both-error", "ref-panic", "ref-timeout"):
                    bad += 1
                    print(f"== program {index} ({case.family}) seed {seed}\n{source}\n{out.describe()}\n")
                    break
    print(dict(tally))
    return bad


if __name__ == "__main__":
    main()

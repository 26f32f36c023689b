"""`python benchmarks/callgrind_rows.py [TREE ...] [--rows NAMES] [--keep DIR]`: the engine's
instruction counts (callgrind) for issue 27's rows, in each built tree of sq given (default: this
checkout), side by side, with each report's sha256 so that a change that moves a result shows.

Instructions, not seconds: this machine's CPU time moves ±10–15 % between runs of one build, and a
speed-up of 1–2 % is what a round measures. The rows are sq/bench/rows.py's (the profile-guided
build trains on the same): the bench's models at horizons callgrind runs in a minute or two; the engine's loop alone is counted (`--toggle-collect='*run_loop*'`), the
sweep row counts the whole process per run (50 runs of 1,000 arrivals inside `functools.reduce`,
after 20 warm-up runs), the week row runs sq/bench/week_replay.sq on 16 replicas at a full
week's load a replica (the synthetic 200 k-request week at `replay(135)`, horizon 900, warm-up 60,
`samples="none"`). `PYTHONHASHSEED=0`, seed 1, valgrind given the interpreter itself.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOOP = "*run_loop*"


def load_rows():
    """This checkout's sq/bench/rows.py (the rows, one definition with the build's training), loaded by
    its path: a tree counted may be older and not hold it, and every tree runs the same rows."""
    spec = importlib.util.spec_from_file_location("sq_bench_rows", HERE.parent / "sq" / "bench" / "rows.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_rows = load_rows()
ALL, SWEEP_RUNS = bench_rows.ALL, bench_rows.SWEEP_RUNS


def counted(tree: Path, row: str, keep: Path) -> tuple[float, str]:
    """(instructions counted, the child's digest) of one row in one tree."""
    out = keep / f"callgrind.{tree.name}.{row}.out"
    toggle = "functools_reduce" if row == "sweep" else LOOP
    cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--toggle-collect={toggle}",
           f"--callgrind-out-file={out}", os.path.realpath(sys.executable), str(Path(__file__).resolve()),
           "--child", row, "--keep", str(keep)]
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(tree)}
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{row} in {tree}: exit {done.returncode}\n{done.stderr[-2000:]}")
    total = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
    if total is None:
        raise SystemExit(f"{row} in {tree}: no totals in {out}")
    count = int(total.group(1))
    return (count / SWEEP_RUNS if row == "sweep" else count), done.stdout.strip()[:8]


def shown(count: float, row: str) -> str:
    return f"{count / 1e3:9.1f} k" if row == "sweep" else f"{count / 1e6:9.2f} M"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="*", help="built trees of sq (folders holding sq/); default: this checkout")
    ap.add_argument("--rows", default=",".join(ALL), help=f"comma-separated, of {', '.join(ALL)}")
    ap.add_argument("--keep", default=os.path.join(tempfile.gettempdir(), "sq-callgrind"),
                    help="where the callgrind outputs and the week's trace are kept")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    keep = Path(a.keep)
    keep.mkdir(parents=True, exist_ok=True)
    if a.child:   # run under valgrind, PYTHONPATH the tree counted
        print(bench_rows.run(a.child, keep))
        return 0
    rows = a.rows.split(",")
    unknown = sorted(set(rows) - set(ALL))
    if unknown:
        ap.error(f"unknown row(s) {', '.join(unknown)}; known: {', '.join(ALL)}")
    trees = [Path(t).resolve() for t in a.trees] or [HERE.parent]
    if "week" in rows:
        bench_rows.week_trace(keep)
    print(f"{'row':8} " + " ".join(f"{t.name[-14:]:>14} sha256  " for t in trees) + (" last/first" if len(trees) > 1 else ""))
    status = 0
    for row in rows:
        got = [counted(t, row, keep) for t in trees]
        status |= len({d for _, d in got}) > 1
        ratio = f" {got[-1][0] / got[0][0]:10.4f}" if len(trees) > 1 else ""
        same = "" if len({d for _, d in got}) == 1 else "  REPORTS DIFFER"
        print(f"{row:8} " + " ".join(f"{shown(c, row):>14} {d}" for c, d in got) + ratio + same, flush=True)
    return status


if __name__ == "__main__":
    raise SystemExit(main())

"""`python benchmarks/week_time_pairs.py BASE TREE [--pairs N] [--cpu C]`: the week row's CPU time in
two built trees of sq, runs alternated one by one, for a change that instructions do not show
(a prefetch, a branch made a conditional move: callgrind counts them, it does not time them).

Each tree runs in a child of its own (PYTHONPATH its tree, `nice -n 19`, pinned to one CPU with
`--cpu`) that compiles sq/bench/rows.py's week row once, runs it once to warm up, then runs it
whenever asked, timed by `time.process_time` in the child. The runs alternate base, tree, tree,
base, … so that the machine's drift falls on both alike, and each pair gives a ratio (tree / base).
Printed: the median of the ratios with its quartiles, and the least and median time of each tree.
On this VM a pair's ratio moves ±10–15 % (base against itself, 50 pairs: median 1.007, quartiles
0.92–1.15), so a median over 100–150 pairs tells ~±2 %, no finer.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

CHILD = r'''
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import sq
assert sq.__file__.startswith(sys.argv[1]), sq.__file__
from sq.bench import rows
from sq.engine.run import run as sq_run
from sq.frontend.compile import compile_program
folder = Path(sys.argv[2])
folder.mkdir(exist_ok=True)
source = rows.WEEK_PROGRAM.read_text().replace("arrive replay(1)", f"arrive replay({rows.WEEK_SPEED})")
program = compile_program(source=source, sets={"R": rows.WEEK_REPLICAS}, trace=str(rows.week_trace(folder)),
                          horizon=rows.WEEK_HORIZON, warmup=rows.WEEK_WARMUP, seed=1)
sq_run(program, samples="none")
print("ready", flush=True)
for line in sys.stdin:
    began = time.process_time()
    sq_run(program, samples="none")
    print(time.process_time() - began, flush=True)
'''


def child(tree: str, cpu: str | None, folder: str) -> subprocess.Popen:
    pin = ["taskset", "-c", cpu] if cpu else []
    kid = subprocess.Popen([*pin, "nice", "-n", "19", sys.executable, "-c", CHILD, os.path.realpath(tree), folder],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                           env={**os.environ, "PYTHONHASHSEED": "0"})
    if kid.stdout.readline().strip() != "ready":
        raise SystemExit(f"{tree}: the child did not start")
    return kid


def timed(kid: subprocess.Popen) -> float:
    kid.stdin.write("run\n")
    kid.stdin.flush()
    return float(kid.stdout.readline())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("tree")
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--cpu", help="pin both children to this CPU (taskset -c)")
    parser.add_argument("--folder", default="/tmp/sq-week-time", help="where the week's trace is kept")
    args = parser.parse_args()
    base, tree = child(args.base, args.cpu, args.folder), child(args.tree, args.cpu, args.folder)
    times_base, times_tree, ratios = [], [], []
    for i in range(args.pairs):
        if i % 2 == 0:
            b = timed(base)
            t = timed(tree)
        else:
            t = timed(tree)
            b = timed(base)
        times_base.append(b)
        times_tree.append(t)
        ratios.append(t / b)
    for kid in (base, tree):
        kid.stdin.close()
        kid.wait()
    low, _, high = statistics.quantiles(ratios, n=4)
    print(f"pairs {args.pairs}: tree / base median {statistics.median(ratios):.4f} (quartiles {low:.4f}–{high:.4f}); "
          f"least {min(times_base):.4f} / {min(times_tree):.4f} s; "
          f"median {statistics.median(times_base):.4f} / {statistics.median(times_tree):.4f} s")


if __name__ == "__main__":
    main()

"""Long runs: peak memory and speed of M/M/1 with samples kept or not, and what progress and
the interrupt poll cost (python benchmarks/bench_long.py [--sizes 1e6,1e7,1e8] [--skip-all 1e8]
[--repeat 3] [--baseline DIR]).

Memory: each run is a fresh `python -m sq run --json` process (one observe, one gauge,
`--arrivals N`); its peak RSS comes from wait4. Speed: the same runs' wall time.

Progress: the same 1e6-arrival run in one process, alternately without progress and with a
callback, `--repeat` times each; the ratio of the medians.

Interrupt poll: with --baseline DIR (a built checkout without the poll, e.g. the commit before
it: `git archive BASE | tar -x -C DIR && cd DIR && python setup.py build_ext --inplace`), the
same run alternately in processes on this build and on DIR's; the ratio of the medians.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MM1 = """// M/M/1, rho = 0.9: one observe, one gauge
stage server : fifo(1);
gauge number = queue(server);
run { horizon 1e15; }
workload { arrive poisson(0.9); }
session { set t0 = now; run server (~exp(1)); observe response = now - t0; }
"""


def run_process(root: Path, program: Path, arrivals: int, samples: str) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of one `sq run` in a fresh process on the checkout `root`."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    cmd = [sys.executable, "-m", "sq", "run", str(program), "--arrivals", str(arrivals), "--json"]
    if root == ROOT:   # a baseline checkout predates these flags
        cmd += ["--no-progress", "--samples", samples]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"{cmd} failed: {proc.stderr.read().decode()}")
    return wall, usage.ru_maxrss / 1024.0


def memory_table(program: Path, sizes: list[int], skip_all: set[int]) -> None:
    print("| arrivals | samples | wall s | Marrivals/s | peak RSS MB |")
    print("|---|---|---|---|---|")
    for n in sizes:
        for samples in ("none", "all"):
            if samples == "all" and n in skip_all:
                print(f"| {n:.0e} | all | skipped | | (~58 B per arrival: {58 * n / 1e9:.1f} GB) |")
                continue
            wall, rss = run_process(ROOT, program, n, samples)
            print(f"| {n:.0e} | {samples} | {wall:.2f} | {n / wall / 1e6:.2f} | {rss:.0f} |", flush=True)


def progress_cost(program: Path, arrivals: int, repeat: int) -> None:
    """One process, one compiled program; runs alternate without progress and with a callback."""
    import sq

    prog = sq.compile(str(program), arrivals=arrivals)
    sq.run(prog, samples="none")   # warm caches
    calls = []
    times = {"off": [], "callback": []}
    for _ in range(repeat):
        for mode in times:
            t0 = time.perf_counter()
            sq.run(prog, samples="none", progress=calls.append if mode == "callback" else None)
            times[mode].append(time.perf_counter() - t0)
    off, on = min(times["off"]), min(times["callback"])
    print(f"\nprogress, {arrivals:.0e} arrivals, best of {repeat}: off {off:.3f} s, "
          f"callback {on:.3f} s ({len(calls)} records), ratio {on / off:.3f} "
          f"(medians {statistics.median(times['off']):.3f} / {statistics.median(times['callback']):.3f})")


ENGINE_TIMING = """
import sys, time, sq
from sq import _engine
from sq.lower.lowering import lower
lowered = lower(sq.compile(sys.argv[1], arrivals=int(sys.argv[2])).to_dict(exact=True))
for _ in range(int(sys.argv[3])):
    t0 = time.perf_counter()
    _engine.run(lowered)
    print(time.perf_counter() - t0)
"""


def engine_seconds(root: Path, program: Path, arrivals: int, runs: int, tool: list[str] = ()) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([*tool, sys.executable, "-c", ENGINE_TIMING, str(program), str(arrivals), str(runs)],
                         env=env, capture_output=True, text=True, check=True)
    return [float(x) for x in out.stdout.split()]


def loop_instructions(root: Path, program: Path, arrivals: int) -> int:
    """Instructions executed inside the event loop (callgrind, collecting in run_loop only)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        engine_seconds(root, program, arrivals, 1, ["valgrind", "--tool=callgrind", "--collect-atstart=no",
                                                    "--toggle-collect=*run_loop*", f"--callgrind-out-file={out}"])
        for line in out.read_text().splitlines():
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise SystemExit("callgrind wrote no totals")


def poll_cost(program: Path, baseline: Path, arrivals: int, repeat: int) -> None:
    """The engine's run alone (no start-up, no report), alternating builds; then, if valgrind is
    installed, the instructions of the loop itself in each."""
    times = {"this build": [], "baseline": []}
    for _ in range(repeat):
        times["this build"] += engine_seconds(ROOT, program, arrivals, 2)
        times["baseline"] += engine_seconds(baseline, program, arrivals, 2)
    new, old = min(times["this build"]), min(times["baseline"])
    print(f"\ninterrupt poll, engine run of {arrivals:.0e} arrivals, best of {2 * repeat}: "
          f"with {new:.3f} s, baseline {old:.3f} s, ratio {new / old:.3f}")
    if shutil.which("valgrind"):
        n = arrivals // 10
        new, old = loop_instructions(ROOT, program, n), loop_instructions(baseline, program, n)
        print(f"interrupt poll, callgrind instructions in run_loop for {n:.0e} arrivals: "
              f"with {new:,}, baseline {old:,}, ratio {new / old:.5f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e6,1e7,1e8")
    ap.add_argument("--skip-all", default="1e8", help="sizes run with samples=none only")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="a built checkout without the interrupt poll")
    args = ap.parse_args(argv)
    sizes = [int(float(x)) for x in args.sizes.split(",") if x]
    skip_all = {int(float(x)) for x in args.skip_all.split(",") if x}
    with tempfile.TemporaryDirectory() as tmp:
        program = Path(tmp) / "mm1.sq"
        program.write_text(MM1)
        memory_table(program, sizes, skip_all)
        progress_cost(program, 1_000_000, args.repeat)
        if args.baseline:
            poll_cost(program, args.baseline, 2_000_000, args.repeat)


if __name__ == "__main__":
    main()

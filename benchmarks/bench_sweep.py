"""`python benchmarks/bench_sweep.py [--runs 200] [--horizon 300]`: what a study costs around its runs.

A sweep of the vLLM-like example (examples/single-turn/vllm_single_turn.sq, 10 request
rates x runs/10 seeds) run three ways in one invocation: serial in this process, a process
pool over every core, and a Dask LocalCluster on 127.0.0.1 (one single-threaded worker
process per core). For each: runs/s, the speed-up over serial, and how busy the workers were with runs: the sum
of the runs' own wall times (`wall_s`: lowering, engine, report) over wall time x workers;
the rest is starting workers, transport (tasks out, records back) and waiting.

The serial pass also splits the time: the engine's own (`sq._engine.run`, timed by
wrapping it) against everything around it (compiling each point, writing and reading the
IR JSON, lowering, building the report, the metrics record). A last serial pass with a
horizon of 0.01 s has almost no engine work: its time per run is the fixed cost a run
pays whatever its length, the figure that says whether 10 000 short runs are dominated by
overhead.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sq  # noqa: E402
import sq._engine  # noqa: E402
from sq.study import sweep as study  # noqa: E402

PROGRAM = str(ROOT / "examples" / "single-turn" / "vllm_single_turn.sq")
RATES = [4, 5, 6, 7, 8, 9, 10, 11, 12, 13]


def grid_and_seeds(runs: int):
    return {"rate": RATES}, list(range(1, max(1, runs // len(RATES)) + 1))


def timed(label: str, fn):
    start = time.perf_counter()
    result = fn()
    wall = time.perf_counter() - start
    return label, wall, result


def engine_share(grid, seeds, horizon):
    """Serial sweep with the engine call timed: (wall, engine seconds, runs)."""
    spent = [0.0]
    real = sq._engine.run

    def clocked(*args, **kwargs):
        t = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - t

    sq._engine.run = clocked
    try:
        label, wall, result = timed("serial", lambda: study.sweep(PROGRAM, grid, seeds, executor="serial",
                                                                  horizon=horizon, warmup=min(30.0, horizon / 10)))
    finally:
        sq._engine.run = real
    return wall, spent[0], len(result.table), busy(result)


def busy(result) -> float:
    """Seconds spent inside runs (the sum of their wall_s)."""
    return sum(result.table.values("wall_s"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--horizon", type=float, default=300.0)
    ap.add_argument("--no-dask", action="store_true")
    args = ap.parse_args(argv)
    grid, seeds = grid_and_seeds(args.runs)
    runs = len(RATES) * len(seeds)
    cores = os.cpu_count() or 1
    kw = {"horizon": args.horizon, "warmup": min(30.0, args.horizon / 10)}
    print(f"{runs} runs of {Path(PROGRAM).name}, horizon {args.horizon:g} s, {cores} cores")

    wall, engine, n, inside = engine_share(grid, seeds, args.horizon)
    rows = [("serial", wall, inside / wall)]
    print(f"serial: engine {engine:.2f} s of {wall:.2f} s; outside the engine {100 * (1 - engine / wall):.1f} %")
    _, w, result = timed("processes", lambda: study.sweep(PROGRAM, grid, seeds, executor="processes", **kw))
    rows.append((f"processes ({cores})", w, busy(result) / (w * cores)))
    if not args.no_dask:
        import distributed

        def on_dask():
            with distributed.LocalCluster(n_workers=cores, threads_per_worker=1, host="127.0.0.1",
                                          dashboard_address=None, processes=True) as cluster, \
                    distributed.Client(cluster) as client:
                client.run(lambda: __import__("sq.study.sweep"))  # workers start and import sq before the clock
                start = time.perf_counter()
                result = study.sweep(PROGRAM, grid, seeds, executor=client, **kw)
                return time.perf_counter() - start, busy(result)

        _, _, (w, inside) = timed("dask", on_dask)
        rows.append((f"dask LocalCluster ({cores} workers)", w, inside / (w * cores)))
    print()
    print("| executor | wall (s) | runs/s | speed-up | workers busy in runs |")
    print("|---|---|---|---|---|")
    for label, w, share in rows:
        print(f"| {label} | {w:.2f} | {runs / w:.1f} | {rows[0][1] / w:.2f} | {100 * share:.0f} % |")

    short_grid, short_seeds = {"rate": RATES}, list(range(1, 101))
    short_runs = len(RATES) * len(short_seeds)
    _, w, _ = timed("short", lambda: study.sweep(PROGRAM, short_grid, short_seeds, executor="serial",
                                                 horizon=0.01, warmup=0.0))
    print(f"\nfixed cost per run (serial, horizon 0.01 s, {short_runs} runs): {1e3 * w / short_runs:.2f} ms "
          f"-> 10 000 short runs: {10_000 * w / short_runs:.0f} s on one core")
    return 0


if __name__ == "__main__":
    sys.exit(main())

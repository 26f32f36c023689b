"""`python benchmarks/bench_study_memory.py [--replica]`: the bytes a Sweep holds per run, and
what its tables cost.

Bytes per run: tracemalloc's count of what is still allocated once a sweep returns, for two
sweeps of different sizes (their difference leaves out what does not grow with the runs: a
point's lowered program, the caches), over the runs between them. M/M/1 (25 metrics) at two
points, 20 and 220 seeds; with --replica also examples/multi-turn/replica.sq at R = 16 (431
metrics), 2 and 8 seeds of a 2 s horizon. Then the time of summary(), to_pandas(),
summary_records(), to_csv, to_json and to_parquet on the M/M/1 sweep (440 runs).
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sq  # noqa: E402

MM1 = """
let lam = 0.5;
stage s : fifo(1);
run { horizon 20; }
workload { arrive poisson(lam); }
session { set t0 = now; run s (~exp(1)); observe wait = now - t0; }
"""


def held(program, grid, seeds, **settings):
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    result = sq.sweep(program, grid, seeds, executor="serial", progress=False, **settings)
    gc.collect()
    size = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return result, size


def per_run(program, grid, few, many, **settings):
    held(program, grid, list(range(1, 3)), **settings)          # caches filled once
    _, a = held(program, grid, list(range(1, few + 1)), **settings)
    result, b = held(program, grid, list(range(1, many + 1)), **settings)
    return result, (b - a) / (len(result.table) * (many - few) // many)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replica", action="store_true", help="also replica.sq at R = 16 (slower)")
    args = parser.parse_args()
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "mm1.sq")
    Path(path).write_text(MM1)
    result, size = per_run(path, {"lam": [0.3, 0.5]}, 20, 220)
    print(f"M/M/1 ({len(result.metrics)} metrics): {size:.0f} bytes per run")
    calls = {"summary": result.summary, "to_pandas": result.to_pandas, "summary_records": result.summary_records,
             "to_csv": lambda: result.to_csv(os.path.join(folder, "runs.csv")), "to_json": result.to_json,
             "to_parquet": lambda: result.to_parquet(os.path.join(folder, "runs.parquet"))}
    for name, call in calls.items():
        call()
        started = time.perf_counter()
        for _ in range(3):
            call()
        print(f"  {name}: {(time.perf_counter() - started) / 3 * 1e3:.1f} ms for {len(result.table)} runs")
    if args.replica:
        replica = str(ROOT / "examples" / "multi-turn" / "replica.sq")
        result, size = per_run(replica, {"R": [16]}, 2, 8, horizon=2.0, warmup=0.0)
        print(f"replica.sq R=16 ({len(result.metrics)} metrics): {size:.0f} bytes per run")


if __name__ == "__main__":
    main()

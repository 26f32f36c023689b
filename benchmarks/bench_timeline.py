"""`python benchmarks/bench_timeline.py`: what a timeline costs a run, side by side in one process.

For an M/M/1 queue and the vLLM-like step engine, the engine's time (best of a few runs)
without a timeline, with one of the whole run, and with one of a window of a tenth of it;
and the file's size. Quote the ratios: the machine is shared.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sq  # noqa: E402
import sq._engine  # noqa: E402
import sq.lower.lowering  # noqa: E402

MM1 = """
stage s : fifo(1);
workload { arrive poisson(0.9); }
session { set t0 = now; run s (~exp(1)); observe r = now - t0; }
run { horizon 200000; }
"""

MODELS = [("mm1", sq.compile(source=MM1)),
          ("vllm", sq.compile(ROOT / "examples" / "single-turn" / "vllm_single_turn.sq", horizon=300))]


def best(low, repeat=3, **kw) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        sq._engine.run(low, **kw)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    print(f"{'model':6} {'off s':>8} {'whole':>8} {'window':>8} {'whole MB':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.json")
        for name, program in MODELS:
            low = sq.lower.lowering.lower(program.to_dict(exact=True))
            off = best(low)
            whole = best(low, timeline=path)
            size = os.path.getsize(path) / 1e6
            h = program.horizon
            window = best(low, timeline=path, timeline_window=(0.45 * h, 0.55 * h))
            print(f"{name:6} {off:8.3f} {whole / off:7.2f}x {window / off:7.2f}x {size:9.1f}")


if __name__ == "__main__":
    main()

"""Cost of the report: `Report.from_results` on synthetic raw results
(python -m benchmarks.bench_report [--sizes 1e6,1e7] [--before FILE] [--run]).

One raw result of n samples per per-sample list: an observation (a tenth
of it before the warm-up), a gauge of n change points, a step stage
(waits, services, decode batches and steps, inter-token gaps) and a
pool's waits -- every loop of `sq.results.stats` sees n samples.

--before FILE times the same call with another `stats.py` in place of
sq.results.stats (benchmarks/baselines/stats_pure_python.py is the pure-Python
one that preceded the `sq.results._stats` kernels) and checks the two reports'
JSON are the same text. --run also times a real run of about a million
arrivals (M/M/1 fifo, rho 0.9), its simulation and its report apart.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

import sq.results.report
from sq.results.report import Report
from sq.results.raw import Area, GaugeRaw, ObserveRaw, PoolRaw, RawResults, StageRaw

MM1 = """stage server : fifo(1);
workload { arrive poisson(0.9); }
session { set t0 = now; run server (~exp(1)); observe response = now - t0; }
"""


def synthetic(n: int, seed: int = 1) -> RawResults:
    rng = np.random.default_rng(seed)
    end = float(n)
    times = np.sort(rng.uniform(0.0, end, n))
    gaps = rng.lognormal(-2.0, 1.0, n)
    gaps[rng.random(n) < 0.01] = 0.0  # tokens ending together
    stage = StageRaw(
        name="engine", kind="step", number=Area(3.1 * end, 2.0), busy=Area(0.9 * end, 1.0),
        waits=rng.exponential(2.0, n), services=rng.exponential(1.0, n), iterations=n,
        decodes=Area(5.0 * end, 4.0), decode_batches=rng.integers(1, 64, n).astype(np.float64),
        decode_steps=rng.uniform(0.01, 0.05, n), itl_gaps=gaps)
    pool = PoolRaw(name="kv", used=Area(40.0 * end, 12.0), waits=rng.exponential(0.5, n),
                   admissions=n)
    return RawResults(
        horizon=end, end=end, warmup=0.1 * end, seed=seed, events=2 * n, arrivals=n,
        ended=n, turns=n, live=Area(7.0 * end, 3.0),
        observes=[ObserveRaw("response", rng.exponential(3.0, n), times,
                             np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64))],
        gauges=[GaugeRaw("queue", times, rng.integers(0, 30, n).astype(np.float64))],
        stages=[stage], pools=[pool])


def load_stats(path: Path):
    spec = importlib.util.spec_from_file_location("stats_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def timed_report(raw: RawResults, stats_module, repeat: int) -> tuple[float, str]:
    """Best time of `repeat` calls with `stats_module` as the report's statistics."""
    kept = sq.results.report.stats
    sq.results.report.stats = stats_module
    try:
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            report = Report.from_results(raw)
            best = min(best, time.perf_counter() - t)
        return best, report.to_json()
    finally:
        sq.results.report.stats = kept


def real_run(before, horizon: float = 1_100_000.0) -> None:
    """Simulation and report of one M/M/1 run, apart (IR from pyserq: the
    front end is not what is measured here)."""
    import json  # noqa: PLC0415

    import pyserq  # noqa: PLC0415

    from sq import _engine  # noqa: PLC0415
    from sq.lower.lowering import lower  # noqa: PLC0415

    ir = json.loads(pyserq.compile(source=MM1, horizon=horizon, seed=1).to_json())
    lowered = lower(ir)
    t = time.perf_counter()
    raw = _engine.run(lowered)
    simulated = time.perf_counter() - t
    print(f"M/M/1 run, {raw.arrivals:,} arrivals: simulation {simulated:.3f} s")
    for label, module in [("kernels", sq.results.report.stats), ("before", before)]:
        if module is not None:
            reported, _ = timed_report(raw, module, 1)
            print(f"  report ({label}) {reported:.3f} s = {reported / simulated:.1%} of the simulation")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e6,1e7", help="samples per list, comma-separated")
    ap.add_argument("--before", type=Path, default=None,
                    help="another stats.py to compare with (e.g. `git show REV:sq/results/stats.py > old.py`)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--run", action="store_true", help="also time a real million-arrival run")
    args = ap.parse_args(argv)
    before = load_stats(args.before) if args.before else None
    for n in (int(float(s)) for s in args.sizes.split(",")):
        raw = synthetic(n)
        after, text = timed_report(raw, sq.results.report.stats, args.repeat)
        line = f"n = {n:>10,}: kernels {after:8.3f} s"
        if before is not None:
            # the pure-Python loops are slow and steady: one timing is enough
            then, old_text = timed_report(raw, before, 1)
            same = "same JSON" if old_text == text else "JSON DIFFERS"
            line += f"   before {then:8.3f} s   speed-up {then / after:6.1f}x   ({same})"
        print(line, flush=True)
    if args.run:
        real_run(before)


if __name__ == "__main__":
    main()

"""`python benchmarks/bench_scale.py [names] [--sizes 100,1000,10000]`: how the engine's cost per
event grows with the number of things it keeps (residents, waiting holds, jobs, leases,
cached prefixes, flows).

Each scenario is a closed system of N sessions, so N is the population the engine carries
at every moment. A cost per event that stays flat as N grows by 10x means O(1) (or
O(log N)) per operation; one that grows 10x means a scan over all N. Only the engine is
timed (`sq._engine.run` on a lowered program), best CPU time of a few runs in this process.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sq  # noqa: E402
import sq._engine  # noqa: E402
import sq.lower.lowering  # noqa: E402


@dataclass(frozen=True)
class Scenario:
    name: str
    what: str
    source: str  # `{n}` is the population
    events: int  # roughly how many events a run should take (the horizon is scaled to it)
    instant: bool = False  # the cost is of one instant (N flows started at time 0): time per flow, no horizon


SCENARIOS = [
    Scenario("fifo", "N jobs at one fifo(1) stage (the waiting line)", """
stage s : fifo(1);
workload { arrive closed({n}); }
session {{ loop {{ run s (~exp(1)); }} }}
""", 200_000),
    Scenario("work", "N jobs at a delay stage, each reading work(d) once per visit", """
stage d : delay;
workload { arrive closed({n}); }
session {{ loop {{ set w = work(d); run d (~exp(1)); }} }}
""", 200_000),
    Scenario("queue", "N-1 holds waiting in one pool's fifo queue (cap 1)", """
pool p {{ cap 1; }}
stage d : delay;
workload {{ arrive closed({n}); }}
session {{ hold p (1) {{ run d (~exp(1)); }} }}
""", 200_000),
    Scenario("lease", "N sessions, each leaving a timed lease behind", """
pool p {{ cap inf; }}
stage d : delay;
workload {{ arrive closed({n}); }}
session {{ hold p (1) {{ run d (~exp(1)); }} lease p (~exp(1)); run d (~exp(1)); }}
""", 200_000),
    Scenario("cache", "N cached prefixes in an lru pool that evicts on every admission", """
pool kv {{ cap {n}; evict lru; }}
stage d : delay;
workload {{ arrive closed({n}); }}
session {{ hold kv (1 + ~uniform(0, 1)) {{ run d (~exp(1)); }} cache (inf); }}
""", 200_000),
    Scenario("holders", "N holders of a pool whose `grow` preempts lifo", """
pool p {{ cap {n} * 2; preempt lifo; }}
stage d : delay;
workload {{ arrive closed({n}); }}
session {{ hold p (1) {{ run d (~exp(1)); grow p (~uniform(0, 2)); run d (~exp(1)); }} }}
""", 200_000),
    Scenario("preempt", "N residents growing in a step engine's pool, preempting lifo", """
pool kv {{ cap {n} * 30; block 4; preempt lifo; evict lru; }}
stage engine : step {{ memory kv; budget inf; cost 0.01; }}
workload {{ arrive closed({n}); }}
session {{ hold kv (4) {{ run engine decode (1 + ~exp(50)) growing kv; }} cache (4); }}
""", 100_000),
    Scenario("step", "N residents of a step stage (decoding, no memory limit)", """
pool seqs {{ cap inf; admit via engine; }}
stage engine : step {{ budget inf; cost 0.01; }}
workload {{ arrive closed({n}); }}
session {{ hold seqs (1) {{ run engine decode (1 + ~exp(50)); }} }}
""", 100_000),
    Scenario("flows", "N flows sharing two ps stages (max-min)", """
share maxmin;
stage a : ps(1);
stage b : ps(2);
workload {{ arrive closed({n}); }}
session {{ loop {{ run a, b (~exp(1)); }} }}
""", 50_000),
    Scenario("idle", "an M/M/1 beside N idle pools and N idle fifo stages (declared, never used)", """
pool idle[{n}] {{ cap 1; }}
stage quiet[{n}] : fifo(1);
stage server : fifo(1);
workload {{ arrive poisson(0.9); }}
session {{ set t0 = now; run server (~exp(1)); observe response = now - t0; }}
""", 400_000),
    Scenario("instant", "N flows (max-min) started in one instant; ns per flow, pyserq's below", """
share maxmin;
stage a : ps(1);
stage b : ps(2);
workload {{ arrive batch({n}); }}
session {{ run a, b (~exp(1)); }}
""", 0, instant=True),
]


def _source(sc: Scenario, n: int) -> str:
    return sc.source.replace("{n}", str(n)).replace("{{", "{").replace("}}", "}")


def _program(sc: Scenario, n: int, horizon: float):
    return sq.lower.lowering.lower(sq.compile(source=_source(sc, n), horizon=horizon, seed=1).to_dict(exact=True))


def measure_instant(sc: Scenario, n: int, impl: str = "sq", repeat: int = 3) -> float:
    """Seconds per session of a run that ends in its first instant (best of `repeat`, CPU time)."""
    if impl == "sq":
        lowered = _program(sc, n, 1e-9)
        run = lambda: sq._engine.run(lowered)   # noqa: E731
    else:
        import pyserq
        program = pyserq.compile(source=_source(sc, n), horizon=1e-9, seed=1)
        run = lambda: pyserq.run(program)   # noqa: E731
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        run()
        best = min(best, time.process_time() - t0)
    return best / n


def measure(sc: Scenario, n: int, repeat: int = 2) -> tuple[float, int]:
    """Seconds per event (best of `repeat`) and the events of one run."""
    if sc.instant:
        return measure_instant(sc, n, repeat=repeat + 1), 0
    # a short probe run sizes the horizon so that each run takes about `sc.events` events
    probe = sq._engine.run(_program(sc, n, 10.0))
    per_time = max(probe.events / 10.0, 1.0)
    lowered = _program(sc, n, max(sc.events / per_time, 1.0))
    best, events = float("inf"), 0
    for _ in range(repeat):
        t0 = time.process_time()   # CPU time: the machine may be shared
        raw = sq._engine.run(lowered)
        best = min(best, time.process_time() - t0)
        events = raw.events
    return best / max(events, 1), events


def _have_pyserq() -> bool:
    try:
        import pyserq  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--sizes", default="10,100,1000")
    a = ap.parse_args(argv)
    sizes = [int(x) for x in a.sizes.split(",")]
    chosen = [s for s in SCENARIOS if not a.names or s.name in a.names]
    print(f"{'scenario':8} " + " ".join(f"{'N=' + str(n):>12}" for n in sizes) + "   (ns per event)")
    for sc in chosen:
        cells = []
        for n in sizes:
            try:
                per, _ = measure(sc, n)
                cells.append(f"{per * 1e9:12.0f}")
            except Exception as e:  # noqa: BLE001 - a scenario that fails is reported, not fatal
                cells.append(f"{'error':>12}")
                print(f"  {sc.name} N={n}: {e}", file=sys.stderr)
        print(f"{sc.name:8} " + " ".join(cells) + f"   {sc.what}", flush=True)
        if sc.instant and _have_pyserq():
            cells = [f"{measure_instant(sc, n, 'pyserq') * 1e9:12.0f}" for n in sizes]
            print(f"{'  pyserq':8} " + " ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Capacity over time of a week of traffic on a Dask cluster: `sq capacity --over-time` per window.

Issue 27 asks for a capacity-over-time search of a week of production traffic on a Dask cluster.
This writes bench_week.py's synthetic week (N requests, Azure-2024-conv-style, in a temporary
folder deleted after), starts a Dask LocalCluster on 127.0.0.1 (W worker processes of one thread
each), and runs, as a child process of its own,

    python -m sq capacity PROGRAM --knob R --slo 'ttft.p99<=0.5' --over-time WINDOW \\
        --seeds 1..2 --lo 1 --hi HI --scheduler tcp://127.0.0.1:PORT --json

where PROGRAM is benchmarks/week_replay.sq with the trace's path written in: one search for the
fewest replicas per window of the week. It prints each window's answer, the figures over the
week (peak, p95, mean replicas; replica-hours against the peak's), the wall time, the CPU time
of the client (the child) and of each worker, and their peak RSS: what the search costs and
whether a worker holds more than one trace.

    python benchmarks/bench_week_over_time.py [--requests 1000000] [--window 21600] [--workers 2]
        [--speed K] [--checkout DIR]

`--checkout` runs another checkout's sq (a built one, e.g. /work/wt/base), client and workers
alike (the workers get it first on PYTHONPATH; they say which sq they imported).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_week import PROGRAM, child   # noqa: E402  (one program, one way to time a child)

SLO = "ttft.p99<=0.5"


def usage() -> dict:
    """This process's CPU (user + sys) and peak RSS: run on each Dask worker."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpu": u.ru_utime + u.ru_stime, "rss_mib": u.ru_maxrss / 1024}


def sq_file() -> str:
    import sq
    return sq.__file__


def program_for(trace: str, folder: str, speed: float) -> str:
    """week_replay.sq with `trace "…"` naming `trace` (capacity has no --trace), replayed `speed`
    times faster (`arrive replay(speed)`: the week's traffic `speed` times denser)."""
    with open(PROGRAM) as f:
        text = f.read()
    text, n = re.subn(r'trace "[^"]*";', f'trace "{trace}";', text)
    text, m = re.subn(r"arrive replay\(1\)", f"arrive replay({speed:g})", text)
    assert n == m == 1, "week_replay.sq names one trace, replayed at its pace"
    path = os.path.join(folder, "week_over_time.sq")
    with open(path, "w") as f:
        f.write(text)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1_000_000, help="requests in the week (default 1,000,000)")
    parser.add_argument("--window", type=float, default=21_600, help="seconds per window (default 6 h)")
    parser.add_argument("--workers", type=int, default=2, help="Dask worker processes (default 2)")
    parser.add_argument("--speed", type=float, default=1.0,
                        help="replay the week this many times faster: denser traffic, the same runs (default 1)")
    parser.add_argument("--hi", type=int, default=4, help="the most replicas searched (default 4)")
    parser.add_argument("--checkout", default=ROOT, help="the checkout whose sq runs (default this one)")
    args = parser.parse_args()
    checkout = os.path.abspath(args.checkout)
    # the workers are processes of the cluster, not children of the client: they find sq on the path
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (checkout, os.environ.get("PYTHONPATH")) if p)
    from distributed import Client, LocalCluster

    with tempfile.TemporaryDirectory() as folder:
        trace = os.path.join(folder, f"week-{args.requests}.csv")
        child(["-c", f"from sq.bench.rows import write_week; write_week({trace!r}, {args.requests})"],
              os.path.join(folder, "write.txt"))
        program = program_for(trace, folder, args.speed)
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, host="127.0.0.1", processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            before = client.run(usage)
            imported = set(client.run(sq_file).values())
            t0 = time.perf_counter()
            run = child(["-m", "sq", "capacity", program, "--knob", "R", "--slo", SLO, "--over-time",
                         str(args.window), "--seeds", "1..2", "--lo", "1", "--hi", str(args.hi),
                         "--scheduler", cluster.scheduler_address, "--json"], os.path.join(folder, "out.json"),
                        cwd=checkout)
            wall = time.perf_counter() - t0
            after = client.run(usage)
    result = json.loads(run["stdout"])
    workers = [(after[w]["cpu"] - before[w]["cpu"], after[w]["rss_mib"]) for w in after]
    print(f"{args.requests:,} requests over a week (replayed at {args.speed:g}x), windows of {args.window:g} s, {args.workers} Dask workers "
          f"on 127.0.0.1, SLO {SLO}, R searched in 1..{args.hi}, seeds 1..2; the workers' sq: {', '.join(imported)}")
    print("answers per window:", " ".join("-" if v is None else f"{v:g}" for v in result["values"]))
    print(f"peak {result['peak']:g}  p95 {result['p95']:g}  mean {result['mean']:.3g}  replica-hours "
          f"{result['hours']:.4g} against {result['peak_hours']:.4g} at the peak")
    print(f"wall {wall:.1f} s; client CPU {run['cpu']:.1f} s, peak RSS {run['rss_mib']:.0f} MiB; workers CPU "
          + ", ".join(f"{c:.1f} s" for c, _ in workers) + "; worker peak RSS "
          + ", ".join(f"{r:.0f} MiB" for _, r in workers))


if __name__ == "__main__":
    main()

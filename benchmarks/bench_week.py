"""A week of traffic: N requests of an Azure-2024-conv-style trace through a vLLM-like program, per run.

Issue 27 asks for a week of production traffic (27 M requests, Azure 2024 conv) through a
vLLM-like program in at most 2 minutes per run on one core, memory bounded with
`--samples none`. For each N this writes a synthetic trace of N requests over a week into a
temporary folder (deleted after, never committed), then runs

    python -m sq run sq/bench/week_replay.sq --trace T --horizon 604800 --samples none --json

in a child process of its own and prints the child's CPU time (user + sys), wall time and peak
RSS, and the CPU time per request, events and step iterations per request. Two more children
give the peak RSS of only reading the trace (`read`: sq.read_trace) and of reading it and making
the corpus a run replays (`load`: sq.traces.corpus), so the trace's memory can be told from the
run's. The trace is written by a child as well: Linux starts a child's peak RSS at its parent's.

    python benchmarks/bench_week.py [--sizes 100000,1000000,5000000] [--replicas R] [--checkout DIR]

`--checkout DIR` runs another built checkout's sq, e.g. /work/wt/base, to compare with this one
on the same traces and the same program (this checkout's sq/bench/week_replay.sq).

The engine replicas R default to ceil(16 N / 27 M): the full week runs on 16 (week_replay.sq says
why), and a smaller N on proportionally fewer, so each replica carries about the load it would in
the full week (mean 2.8 requests/s) and batches as many sequences per iteration. With 16
replicas whatever N, a small N would leave each replica nearly idle, one iteration per sequence,
and overstate the events per request.

The trace: arrivals from a rate with a daily cycle (peak 1.6x the weekday mean in the afternoon, trough
0.4x at night) and quieter weekend days; prompts lognormal (median ~760, mean ~1,230 tokens) and
answers lognormal (median ~150, mean ~210), the shapes of the Azure 2023 conv trace (the 2024
week's are alike), clipped at 16,000 and 1,000 tokens.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)   # this checkout's sq
from sq.bench.rows import WEEK, WEEK_PROGRAM   # noqa: E402  (the week and its program: one definition)

PROGRAM = str(WEEK_PROGRAM)
FULL_WEEK, FULL_REPLICAS = 27_000_000, 16    # issue 27's week and the replicas that serve it


def child(args: list[str], out_path: str, cwd: str = ROOT) -> dict:
    """Run `python ARGS` from the checkout's root (or `cwd`, another checkout: its `sq` is the one
    imported); its own rusage (os.wait4), wall time, stdout."""
    t0 = time.perf_counter()
    with open(out_path, "w") as out:
        proc = subprocess.Popen([sys.executable, *args], cwd=cwd, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"child failed ({proc.returncode}): {' '.join(args)}\n{proc.stderr.read().decode()}")
    with open(out_path) as f:
        text = f.read()
    return {"cpu": usage.ru_utime + usage.ru_stime, "wall": wall,
            "rss_mib": usage.ru_maxrss / 1024, "stdout": text}   # ru_maxrss is in KiB on Linux


def auto_replicas(n: int) -> int:
    return max(1, -(-FULL_REPLICAS * n // FULL_WEEK))


def measure(n: int, folder: str, replicas: int, checkout: str = ROOT) -> dict:
    trace = os.path.join(folder, f"week-{n}.csv")
    # written by a child too: Linux starts a child's peak RSS at its parent's, so this process stays small
    child(["-c", f"from sq.bench.rows import write_week; write_week({trace!r}, {n})"], os.path.join(folder, "write.txt"))
    size = os.path.getsize(trace)
    read = child(["-c", f"import sq; print(len(sq.read_trace({trace!r})))"], os.path.join(folder, "read.txt"),
                 checkout)
    load = child(["-c", f"from sq.traces import corpus; print(len(corpus({trace!r})))"],   # what a run loads
                 os.path.join(folder, "load.txt"), checkout)
    run = child(["-m", "sq", "run", PROGRAM, "--trace", trace, "--horizon", str(WEEK), "--warmup", "3600",
                 "--set", f"R={replicas}", "--samples", "none", "--json", "--no-progress"],
                os.path.join(folder, "run.json"), checkout)
    os.remove(trace)
    report = json.loads(run["stdout"])
    return {"n": n, "r": replicas, "mb": size / 1e6, "read": read, "load": load, "run": run, "report": report}


def summary(report: dict) -> str:
    """What shows the load was stable: every request served, TTFT low, the engines not saturated."""
    ttft = report["observes"]["ttft"]
    busy = max(stage["utilization"] for stage in report["stages"])
    # (a replica the router never chose has no decode batch: at a light load it picks the first idle one)
    batches = [st["mean_decode_batch"] for st in report["stages"] if st["mean_decode_batch"] is not None]
    batch = sum(batches) / len(batches) if batches else float("nan")
    return (f"ended {report['ended']:,}, ttft mean {ttft['mean']:.3f} s p99 {ttft['p99']:.3f} s, "
            f"utilization max {busy:.2f}, decode batch {batch:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000",
                        help="comma-separated request counts (default 100000,1000000)")
    parser.add_argument("--replicas", type=int, help="engine replicas R (default ceil(16 N / 27 M))")
    parser.add_argument("--checkout", default=ROOT, help="the built checkout whose sq runs (default this one)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'requests':>10} {'R':>3} {'trace MB':>8} {'CPU s':>7} {'wall s':>7} {'µs/req':>6} "
          f"{'events/req':>10} {'iter/req':>8} {'RSS MiB':>7} {'read':>5} {'load':>5}")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for n in sizes:
            r = measure(n, folder, args.replicas or auto_replicas(n), os.path.abspath(args.checkout))
            rows.append(r)
            rep, run = r["report"], r["run"]
            iterations = sum(st["iterations"] for st in rep["stages"])
            print(f"{n:>10,} {r['r']:>3} {r['mb']:>8.0f} {run['cpu']:>7.1f} {run['wall']:>7.1f} "
                  f"{run['cpu'] / n * 1e6:>6.1f} {rep['events'] / n:>10.1f} {iterations / n:>8.1f} "
                  f"{run['rss_mib']:>7.0f} {r['read']['rss_mib']:>5.0f} {r['load']['rss_mib']:>5.0f}   {summary(rep)}", flush=True)
    if len(rows) >= 2:
        a, b = rows[-2], rows[-1]
        span = b["n"] - a["n"]
        rss = (b["run"]["rss_mib"] - a["run"]["rss_mib"]) * 2**20 / span
        read, load = ((b[k]["rss_mib"] - a[k]["rss_mib"]) * 2**20 / span for k in ("read", "load"))
        per_req = b["run"]["cpu"] / b["n"]
        print(f"the last two sizes: {rss:.0f} B of peak RSS per request; reading the trace alone {read:.0f} B, "
              f"reading it and making the run's corpus {load:.0f} B")
        print(f"27 M requests, extrapolated linearly from {b['n']:,} (an extrapolation, not a run): "
              f"{per_req * FULL_WEEK:.0f} s CPU (target 120 s), "
              f"{(b['run']['rss_mib'] * 2**20 + rss * (FULL_WEEK - b['n'])) / 2**30:.1f} GiB peak RSS")


if __name__ == "__main__":
    main()

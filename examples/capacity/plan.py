"""A capacity plan for the vLLM-like engine of single-turn/vllm_single_turn.sq.

Three questions, each one `sq.capacity` search with its evidence:

  1. load:    the most requests/s one GPU (6 GiB of KV) serves with a p99 TTFT <= 0.5 s;
  2. memory:  the least KV memory (whole GiB) that serves 8 requests/s with a p99 TTFT <= 1 s;
  3. fleet:   the fewest replicas of multi-turn/replica.sq for 3 new conversations/s,
              with a p99 TTFT <= 0.5 s.

Every value tried runs the same seeds (common random numbers); a value counts as
meeting the SLO only when the whole 95% interval over its seeds is on the good side.
Each answer is printed with its bracket; the plots (the metric against the knob,
the SLO line, the answer) go to the current folder.

    python examples/capacity/plan.py            # about a minute on two cores
    python examples/capacity/plan.py --quick    # fewer seeds, shorter runs: a smoke test

The fleet's runs are never shorter than 300 s with 60 s of warm-up: its
conversations last about a minute, and shorter runs end before the number of
live conversations settles (the search then says so instead of answering).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import sq

HERE = Path(__file__).resolve().parent.parent
ENGINE = HERE / "single-turn" / "vllm_single_turn.sq"
FLEET = HERE / "multi-turn" / "replica.sq"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer seeds and shorter runs")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="worker processes (default 2)")
    args = ap.parse_args(argv)
    seeds, horizon = (range(1, 4), 120) if args.quick else (range(1, 9), 600)
    common = dict(seeds=seeds, horizon=horizon, warmup=horizon / 10, jobs=args.jobs)

    questions = [
        ("load", sq.compile(ENGINE), "rate", "ttft.p99 <= 0.5", dict(tol=0.1)),
        ("memory", sq.compile(ENGINE, sets={"rate": 8}), "kv_gib", "ttft.p99 <= 1", {}),
        ("fleet", sq.compile(FLEET, sets={"rate": 3}), "R", "ttft.p99 <= 0.5",
         dict(horizon=max(horizon, 300), warmup=max(horizon, 300) / 5)),
    ]
    for name, program, knob, slo, options in questions:
        print(f"-- {name}: {knob}, {slo}")
        cap = sq.capacity(program, knob, slo, **{**common, **options},
                          on_point=lambda p, knob=knob: print("  ", p.describe(knob)))
        print(cap.line())
        cap.plot(path=f"capacity-{name}.png")


if __name__ == "__main__":
    main()

"""The share of prompt blocks a prefix cache shared across requests finds, against its size.

    python examples/replay/mooncake_prefix.py [TRACE] [--plot FILE]

Replays Mooncake's `hash_ids` (512-token blocks by content id) in arrival order through one LRU
cache of C blocks (sq.traces.prefix) for C from 1/64 of the trace's distinct blocks to all of
them, and prints each share of prompt blocks found resident; the last line is the unbounded
cache. TRACE defaults to the shipped slice (mooncake/conversation_first2000.jsonl.gz: 0.289
unbounded); the whole conversation trace gives 105,710 of 288,500 = 0.3664. `--plot` draws the
curve (needs matplotlib).
"""
import argparse
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))      # this checkout's sq

import sq                                         # noqa: E402
from sq.traces.prefix import hit_share            # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", nargs="?", default=str(HERE / "mooncake" / "conversation_first2000.jsonl.gz"))
    ap.add_argument("--plot", metavar="FILE")
    args = ap.parse_args()
    records = sq.read_trace(args.trace)
    distinct = len(set(records.hash_ids.tolist()))
    sizes = [max(1, distinct // d) for d in (64, 32, 16, 8, 4, 2)] + [distinct, math.inf]
    points = []
    for c in sizes:
        found, total = hit_share(records, c)
        points.append((c, found / total))
        print(f"cache {c:>8} blocks  found {found:>7} of {total}  share {found / total:.4f}")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        xs = [c for c, _ in points[:-1]]
        fig, ax = plt.subplots(figsize=(5, 3.2))
        ax.plot(xs, [s for _, s in points[:-1]], marker="o")
        ax.axhline(points[-1][1], ls="--", color="grey", label="unbounded")
        ax.set_xscale("log")
        ax.set_xlabel("cache size (512-token blocks)")
        ax.set_ylabel("prompt blocks found")
        ax.set_title("Mooncake conversation trace: shared prefix cache")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)


if __name__ == "__main__":
    main()

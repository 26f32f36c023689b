"""`python benchmarks/compare.py BASE_TREE [NAMES] [--rounds N] [--quick]`: the bench's models in one
run for pyserq 0.1.2, the sq of another built tree (BASE_TREE: a checkout built in place, e.g. main)
and this checkout's sq, the rounds of all three taken in turn: each sq's ratio to pyserq side by
side, this sq's time against the base's, and whether all three give the same reports."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from sq.bench import measure  # noqa: E402
from sq.bench.table import QUICK, chosen  # noqa: E402


def once(impl: str, model, tree: str, round_: float) -> dict:
    measure.SQ_PATH = tree      # the child imports the sq of this tree
    try:
        return measure.once(impl, model, round_)
    finally:
        measure.SQ_PATH = str(HERE.parent)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", help="another built tree of sq (its folder holding sq/)")
    ap.add_argument("names", nargs="*")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_intermixed_args()
    base, here = str(Path(a.base).resolve()), str(HERE.parent)
    print(f"least CPU time of {a.rounds} rounds in turn (the JSON text included); base = {base}")
    print(f"{'model':8} {'pyserq s':>9} {'base s':>8} {'this s':>8} {'base x':>7} {'this x':>7} {'this/base':>9}  reports")
    status = 0
    for model in chosen(a.names):
        model = model.shortened(QUICK) if a.quick else model
        round_ = 0.0 if a.quick else measure.ROUND      # (as python -m sq bench times a round)
        got = measure.in_turn({"pyserq": lambda: once(str(HERE / "reference_pyserq.py"), model, here, round_),
                               "base": lambda: once("sq", model, base, round_),
                               "this": lambda: once("sq", model, here, round_)}, a.rounds)
        if any("error" in m for m in got.values()):
            print(f"{model.name:8} error: {[m['error'] for m in got.values() if 'error' in m][0]}")
            status = 1
            continue
        p, b, t = (got[k]["cpu"] for k in ("pyserq", "base", "this"))
        same = got["pyserq"]["digests"] == got["base"]["digests"] == got["this"]["digests"] is not None
        status |= not same
        print(f"{model.name:8} {p:9.3f} {b:8.3f} {t:8.3f} {p / b:6.2f}x {p / t:6.2f}x {t / b:9.3f}  "
              f"{'equal' if same else 'DIFFER'}", flush=True)
    return status


if __name__ == "__main__":
    raise SystemExit(main())

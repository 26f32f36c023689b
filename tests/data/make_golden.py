"""Record the answers the suite checks sq against when pyserq is not installed (see tests/helpers/golden.py).

Run once with pyserq 0.1.2 installed, from anywhere:

    python tests/data/make_golden.py

and commit tests/data/golden/. Every number here is pyserq's own output; nothing
is computed by sq or written by hand.
"""
from __future__ import annotations

import itertools
import json
import math
import random
import sys
from pathlib import Path

import pyserq

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # the repository root, for tests.helpers
from tests.helpers import golden  # noqa: E402

U64 = (1 << 64) - 1
U32 = (1 << 32) - 1
_seeds = random.Random(20261129)
SEEDS = [0, 1, 2, 3, 7, 11, U64, 1 << 63, 0x5851F42D4C957F2D] + [_seeds.getrandbits(64) for _ in range(3)]
# u32 words cross two 64-word refills; u64s and floats cross one and a half
COUNTS = {"next_u32": 130, "next_u64": 100, "random_f64": 100}
RANGES = [(0, 0), (5, 5), (0, 1), (0, 4), (10, 19), (0, 6), (0, 1 << 31), (1, 1 << 31),
          (0, 3_000_000_000), (7, U32), (0, U32 - 1), (0, U32), (U32, U32), (123_456, 2_000_123_456)]
EDGE = ["0", "(-0)", "1", "(-1)", "2.5", "0.3", "1e-300", "1e300", "(1/0)", "(-1/0)", "(0/0)"]
ERLANG_K = ["0", "(-0)", "1", "(-1)", "2.5", "0.3", "3", "4", "(0/0)", "(-1/0)"]
LAWS = ([("det", (a,)) for a in EDGE] + [("exp", (a,)) for a in EDGE] + [("bernoulli", (a,)) for a in EDGE]
        + [("uniform", p) for p in itertools.product(EDGE, repeat=2)]
        + [("h2", p) for p in itertools.product(EDGE, repeat=2)]
        + [("erlang", (k, m)) for k in ERLANG_K for m in EDGE])
LAW_SEED, LAW_DRAWS = 3, 12
# what each argument's source text folds to
VALUES = {"0": 0.0, "(-0)": -0.0, "1": 1.0, "(-1)": -1.0, "2.5": 2.5, "0.3": 0.3, "1e-300": 1e-300,
          "1e300": 1e300, "(1/0)": math.inf, "(-1/0)": -math.inf, "(0/0)": math.nan, "3": 3.0, "4": 4.0}


def _record(rng, method, args=()):
    value = getattr(rng, method)(*args)
    return golden.bits(value) if isinstance(value, float) else value


def _mixed_calls(seed: int, n: int):
    """Calls mixing widths, so u64 reads land on odd word offsets."""
    pick = random.Random(seed)
    for _ in range(n):
        kind = pick.randrange(4)
        if kind < 3:
            yield ("next_u32", "next_u64", "random_f64")[kind], []
        else:
            lo = pick.randrange(U32 + 1)
            hi = pick.choice([lo, min(U32, lo + pick.randrange(16)), pick.randrange(lo, U32 + 1), U32])
            yield "range_u32", [lo, hi]


def rng_vectors() -> dict:
    streams = [{"seed": s, "method": m, "values": [_record(r, m) for r in [pyserq.Rng(s)] for _ in range(n)]}
               for s in SEEDS for m, n in COUNTS.items()]
    mixed = []
    for s in SEEDS[:4]:
        r = pyserq.Rng(s)
        calls = list(_mixed_calls(s, 500))
        mixed.append({"seed": s, "calls": calls, "values": [_record(r, m, a) for m, a in calls]})
    ranges = []
    for (lo, hi), s in itertools.product(RANGES, (0, 9, U64)):
        r = pyserq.Rng(s)
        values = [r.range_u32(lo, hi) for _ in range(80)]
        ranges.append({"seed": s, "lo": lo, "hi": hi, "values": values, "then_u64": r.next_u64()})
    laws = []
    for name, args in LAWS:
        source = (f"workload {{ arrive batch({LAW_DRAWS}); }}\n"
                  f"session {{ observe v = ~{name}({', '.join(args)}); }}")
        samples = pyserq.run(pyserq.compile(source=source, seed=LAW_SEED, horizon=1)).observes["v"].samples
        values = [golden.bits(VALUES[a]) for a in args]
        laws.append({"law": name, "source": list(args), "args": values,
                     "draws": [golden.bits(float(x)) for x in samples]})
    return {"streams": streams, "mixed": mixed, "ranges": ranges, "law_seed": LAW_SEED, "laws": laws}


def examples() -> dict:
    cases = [(golden.example_id(p), p, {}) for p in golden.example_programs()]
    cases += [(golden.variant_id(rel, kw), golden.EXAMPLES / rel, kw) for rel, kw in golden.VARIANTS]
    out = {}
    for case, path, kw in cases:
        ir = json.loads(pyserq.compile(path=str(path)).to_json())
        settings = golden.short_settings(ir, kw)
        program = pyserq.compile(path=str(path), **golden.compile_keywords(settings))
        out[case] = {"settings": settings, "ir": ir, "report": pyserq.run(program).json()}
    return out


def main() -> None:
    golden.GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, data in (("rng.json", rng_vectors()), ("examples.json", examples())):
        (golden.GOLDEN / name).write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"wrote {golden.GOLDEN / name}")


if __name__ == "__main__":
    main()

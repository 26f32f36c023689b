"""Calibration of the capacity search's verdicts on models with known answers (issue 23).

A point is judged again and again, each time on fresh seeds, exactly as `sq.capacity`
judges one (`capacity_search._point_runner`: seeds doubled while open, a growing point run
longer, the error spent over looks and conditions); the share of wrong verdicts is compared
with the promise, (1 - confidence) / 2 for either wrong side. The models:

* M/M/1 (tests/capacity/mm1.sq, mu = 1): mean response 1 / (1 - lam);
* M/M/c (examples/single-turn/mmc.sq, c = 8, mu = 1): mean wait by Erlang C;
* M/D/1 (examples/single-turn/mg1.sq, service 1): mean wait lam / (2 (1 - lam)) (Pollaczek-Khinchine).

`python tests/helpers/capacity_calibration.py REPS` prints the table of docs/guide.md.
"""
from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MM1 = str(ROOT / "tests" / "capacity" / "mm1.sq")
MMC = str(ROOT / "examples" / "single-turn" / "mmc.sq")
MD1 = str(ROOT / "examples" / "single-turn" / "mg1.sq")
RUNS = dict(horizon=2000.0, warmup=200.0)


def erlang_c_wait(c: int, lam: float, mu: float = 1.0) -> float:
    a = lam / mu
    head = sum(a ** k / math.factorial(k) for k in range(c))
    tail = a ** c / math.factorial(c) * c / (c - a)
    return tail / (head + tail) / (c * mu - lam)


def md1_wait(lam: float) -> float:
    return lam / (2.0 * (1.0 - lam))


# (name, program, knob, value at the bound, metric, its true value there, value of the metric at x)
MODELS = {
    "M/M/1": (MM1, "lam", 0.5, "response.mean", lambda x: 1.0 / (1.0 - x)),
    "M/M/c": (MMC, "lam", 5.6, "wait.mean", lambda x: erlang_c_wait(8, x)),
    "M/D/1": (MD1, "lam", 0.5, "wait.mean", md1_wait),
}


# a second condition at its bound beside the mean's: the M/M/1 response's p90 is ln(10) / (1 - lam)
TWO = (f"response.p90 <= {math.log(10.0) / 0.5!r}",)


def verdicts(model: str, x: float, bound: float, reps: int, *, seeds: int = 10, confidence: float = 0.95,
             first: int = 0, extra_slo=()) -> Counter:
    """How often a point at knob value x is judged meets / violates / undecided against
    `METRIC <= bound` (and `extra_slo`), over `reps` repetitions on fresh seeds."""
    from sq.results.runs import RunTable
    from sq.study.capacity import _point_runner
    from sq.study.slo import parse_slo

    program, knob, _, metric, _ = MODELS[model]
    conditions = parse_slo([f"{metric} <= {bound!r}", *extra_slo])
    out: Counter = Counter()
    for r in range(first, first + reps):
        base = 1000 * r + 1
        run = _point_runner(program, knob, conditions, list(range(base, base + seeds)), 4 * seeds, confidence,
                            16, RunTable([knob]), None, True,
                            dict(**RUNS, arrivals=None, cache=None, progress=False,
                                 metrics=[c.metric for c in conditions]))
        out[run(x, "serial").decision] += 1
    return out


def positions(model: str) -> list[tuple[str, float, float, str]]:
    """(where, x, bound, the wrong verdict) at the bound and 5 % either side of it, in the metric."""
    _, _, x, _, truth = MODELS[model]
    at = truth(x)
    return [("at the bound (meets wrong)", x, at, "meets"), ("at the bound (violates wrong)", x, at, "violates"),
            ("true value 5 % above the bound", x, at / 1.05, "meets"),
            ("true value 5 % below the bound", x, at * 1.05, "violates")]


def binomial_upper(n: int, p: float, level: float = 0.999) -> int:
    """The smallest k with P(Binomial(n, p) <= k) >= level: a count of wrong verdicts above
    it is evidence (at 1 - level) that their rate exceeds p."""
    total, k, term = 0.0, 0, (1.0 - p) ** n
    while True:
        total += term
        if total >= level:
            return k
        term *= (n - k) / (k + 1) * p / (1.0 - p)
        k += 1


if __name__ == "__main__":
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for model in MODELS:
        cache: dict = {}
        for where, x, bound, wrong in positions(model):
            key = (x, bound)
            if key not in cache:
                cache[key] = verdicts(model, x, bound, reps)
            got = cache[key]
            print(f"{model:6} {where:32} {wrong:9} {got[wrong]:4}/{reps} = {got[wrong] / reps:.3f}  {dict(got)}",
                  flush=True)
    got = verdicts("M/M/1", 0.5, 2.0, reps, extra_slo=TWO)
    print(f"M/M/1  two conditions at their bounds     violates {got['violates']:4}/{reps} = "
          f"{got['violates'] / reps:.3f}  {dict(got)}", flush=True)

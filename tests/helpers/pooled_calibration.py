"""Calibration of the pooled quantile's interval (`OBS.p99@pooled`, issue 23) on models whose
quantiles are known exactly.

The runs of one point are made once on seeds 1..G·k, then cut into G groups of k seeds (the
study's seeds at a capacity point: 10, 20, 40); each group's pooled quantile ± half-width
(`sq.results.stats.pooled_interval`) either holds the true quantile or not. The share that holds
it is the coverage, to be compared with the confidence asked, with its binomial interval.

* M/M/1 (tests/capacity/mm1.sq, mu = 1, lam = 0.9): the response is exponential with rate
  mu - lam, its q-quantile -ln(1 - q) / (mu - lam);
* M/M/c (examples/single-turn/mmc.sq, c = 8, mu = 1, lam = 6.4): P(wait > t) = C·e^{-(c mu - lam) t},
  C Erlang's C, so the q-quantile of the wait is ln(C / (1 - q)) / (c mu - lam) for 1 - q < C;
* M/D/1 (examples/single-turn/mg1.sq, service 1, lam = 0.8): the wait's distribution by
  Erlang's formula P(W <= t) = (1 - rho) sum_{k <= t} e^{-lam (k - t)} (lam (t - k))^k (-1)^k / k!.

`python tests/helpers/pooled_calibration.py GROUPS` prints the table of docs/guide.md.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MM1 = str(ROOT / "tests" / "capacity" / "mm1.sq")
MMC = str(ROOT / "examples" / "single-turn" / "mmc.sq")
MD1 = str(ROOT / "examples" / "single-turn" / "mg1.sq")


def erlang_c(c: int, a: float) -> float:
    head = sum(a ** k / math.factorial(k) for k in range(c))
    tail = a ** c / math.factorial(c) * c / (c - a)
    return tail / (head + tail)


def mmc_wait_quantile(q: float, c: int = 8, lam: float = 6.4, mu: float = 1.0) -> float:
    return math.log(erlang_c(c, lam / mu) / (1.0 - q)) / (c * mu - lam)


def md1_wait_cdf(t: float, lam: float) -> float:
    """Erlang's formula for the M/D/1 wait (service 1); its alternating terms lose digits for a
    large lam·t, which is why the wait's sum is taken with math.fsum (fine for lam·t below ~20)."""
    return (1.0 - lam) * math.fsum(math.exp(-lam * (k - t)) * (lam * (t - k)) ** k * (-1) ** k / math.factorial(k)
                                   for k in range(int(math.floor(t)) + 1))


def md1_response_quantile(q: float, lam: float = 0.8) -> float:
    lo, hi = 0.0, 1.0
    while md1_wait_cdf(hi, lam) < q:
        hi *= 2.0
    for _ in range(100):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if md1_wait_cdf(mid, lam) < q else (lo, mid)
    return (lo + hi) / 2.0 + 1.0


# name -> (program, its let values, observe, run settings, the true q-quantile)
MODELS = {
    "M/M/1": (MM1, {"lam": 0.9}, "response", dict(horizon=10000.0, warmup=2000.0),
              lambda q: -math.log(1.0 - q) / (1.0 - 0.9)),
    "M/M/c": (MMC, {"lam": 6.4}, "wait", dict(horizon=2000.0, warmup=500.0), mmc_wait_quantile),
    "M/D/1": (MD1, {"lam": 0.8}, "response", dict(horizon=10000.0, warmup=2000.0), md1_response_quantile),
}


def tails(model: str, seeds, level: str = "p99") -> list:
    """Each seed's run of the model, as the `Tail` of its pooled quantile."""
    from sq.study.sweep import sweep

    program, sets, observe, runs, _ = MODELS[model]
    metric = f"{observe}.{level}@pooled"
    s = sweep(program, {k: [v] for k, v in sets.items()}, list(seeds), metrics=[metric], executor="serial", **runs)
    return [r[metric] for r in s.records]


def coverage(model: str, runs: list, k: int, q: float = 0.99, confidence: float = 0.95) -> tuple[int, int, int]:
    """(groups whose interval holds the truth, groups, groups with no interval) over the runs cut
    into groups of k seeds."""
    from sq.results.stats import pooled_interval

    truth = MODELS[model][4](q)
    hits = unknown = 0
    groups = len(runs) // k
    for g in range(groups):
        estimate, half = pooled_interval(runs[g * k:(g + 1) * k], q, confidence)
        unknown += math.isnan(half)
        hits += abs(estimate - truth) <= half
    return hits, groups, unknown


def wilson(hits: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a binomial share (95 % by default)."""
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def main(groups: int) -> None:
    for model in MODELS:
        runs = tails(model, range(1, groups * 10 + 1))
        for k in (10, 20, 40):
            hits, n, unknown = coverage(model, runs, k)
            lo, hi = wilson(hits, n)
            print(f"{model} p99 ({MODELS[model][4](0.99):.4g}), {k} seeds: {hits}/{n} = {hits / n:.3f} "
                  f"[{lo:.3f}, {hi:.3f}], no interval {unknown}", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)

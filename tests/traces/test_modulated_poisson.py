"""`arrive poisson(r1, …) leave(q1, …);` (an extension): a Markov-modulated poisson, phases in a
cycle. Checked against theory with fixed seeds: the long-run rate Σ πᵢ rᵢ (πᵢ ∝ 1 / qᵢ) and, for
two phases, the index of dispersion of counts against the MMPP formula."""
from __future__ import annotations

import math

import numpy as np
import pytest

import sq
from sq import _engine
from sq.errors import SqError
from sq.lower.lowering import lower


def _times(arrive: str, horizon: float, seed: int) -> np.ndarray:
    source = f"""run {{ horizon {horizon}; }}
    workload {{ arrive {arrive}; init {{ observe t = now; }} }}
    session {{ }}"""
    return _engine.run(lower(sq.compile(source=source).to_dict(exact=True)), seed=seed).observes[0].samples


def _two_phase_variance(t, rates, leave):
    """Var N(t) of a stationary two-phase MMPP: λ̄t + 2 π₁π₂ (λ₁ - λ₂)² [t/σ - (1 - e^{-σt}) / σ²],
    σ = q₁ + q₂ (the rate's autocovariance decays as e^{-σs})."""
    (l1, l2), (q1, q2) = rates, leave
    s = q1 + q2
    p1, p2 = q2 / s, q1 / s
    mean = p1 * l1 + p2 * l2
    return mean, mean * t + 2 * p1 * p2 * (l1 - l2) ** 2 * (t / s - (1 - math.exp(-s * t)) / s ** 2)


def test_two_phases_rate_and_dispersion():
    rates, leave, horizon, window, seeds = (1.0, 8.0), (0.05, 0.2), 20000.0, 20.0, 20
    mean, var_window = _two_phase_variance(window, rates, leave)
    _, var_run = _two_phase_variance(horizon, rates, leave)
    totals, idcs = [], []
    for seed in range(1, seeds + 1):
        t = _times("poisson(1, 8) leave(0.05, 0.2)", horizon, seed)
        totals.append(len(t))
        counts = np.histogram(t, np.arange(0, horizon + window / 2, window))[0]
        # the true mean is known: the squared deviations from it estimate Var N(window) unbiasedly
        idcs.append(((counts - mean * window) ** 2).mean() / (mean * window))
    # long-run rate: the seeds' total against λ̄ · horizon, 4 theoretical standard deviations
    assert abs(sum(totals) - seeds * mean * horizon) < 4 * math.sqrt(seeds * var_run)
    # index of dispersion (here 21.9, a Poisson's is 1): the formula inside the seeds' 99.9 % t
    # interval (t quantile 3.883 for 19 degrees of freedom)
    want = var_window / (mean * window)
    half = 3.883 * np.std(idcs, ddof=1) / math.sqrt(seeds)
    assert abs(np.mean(idcs) - want) < half and want > 20


def test_three_phases_long_run_rate():
    # π ∝ 1 / q = (1, 0.5, 0.25) / 1.75: λ̄ = (2 + 0.5 * 6 + 0.25 * 0) / 1.75 = 20 / 7; the count's
    # variance bounded by a Poisson's with the largest rate plus the modulation's (loose: 10 λ̄ H)
    horizon = 50000.0
    total = sum(len(_times("poisson(2, 6, 0) leave(1, 2, 4)", horizon, seed)) for seed in (1, 2, 3))
    want = 3 * 20 / 7 * horizon
    assert abs(total - want) < 4 * math.sqrt(3 * 10 * 20 / 7 * horizon)
    assert abs(total - want) / want < 0.01


def test_phases_of_rate_zero_bring_nothing():
    # no phase walk to the horizon: at 1e6 phase changes a second it would take ~1e12 steps
    assert len(_times("poisson(0, 0) leave(1e6, 1e6)", 1e6, 1)) == 0


def test_one_phase_is_poisson():
    t = _times("poisson(3) leave(1)", 20000, 4)
    assert abs(len(t) - 60000) < 4 * math.sqrt(60000)
    gaps = np.diff(t)
    assert abs(gaps.std() / gaps.mean() - 1) < 0.02           # exponential gaps: cv 1 (sd of the estimate ~0.004)


def test_phases_are_constants_and_checked():
    ir = sq.compile(source="""let hi = 10; run { horizon 5; }
        workload { arrive poisson(2, hi) leave(0.01, 0.1); } session { }""").to_dict()
    assert ir["arrival"] == {"Modulated": {"rates": [2.0, 10.0], "leave": [0.01, 0.1]}}
    with pytest.raises(SqError, match="leaving rate per phase"):
        sq.compile(source="run { horizon 5; } workload { arrive poisson(2, 3) leave(1); } session { }")
    with pytest.raises(SqError, match="phase 2's leaving rate must be finite and above 0"):
        sq.compile(source="run { horizon 5; } workload { arrive poisson(2, 3) leave(1, 0); } session { }")
    with pytest.raises(SqError, match="expected `leave"):
        sq.compile(source="run { horizon 5; } workload { arrive poisson(2, 3); } session { }")


def test_same_seed_same_arrivals():
    a = _times("poisson(1, 8) leave(0.5, 2)", 500, 9)
    assert np.array_equal(a, _times("poisson(1, 8) leave(0.5, 2)", 500, 9))
    assert not np.array_equal(a, _times("poisson(1, 8) leave(0.5, 2)", 500, 10))

"""`sin`, `cos` and `pi` (an extension, docs/differences.md) in a rate that reads `now`: the
issue's diurnal example runs, per-hour counts agree with the rate's integral (a chi-square test,
fixed seed), the thinning bound is exact on an interval, and a 0.1.2 program's own `pi`, `sin`
keep their meaning."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

import sq
from sq import _engine
from sq.lower.lowering import lower
from sq.traces.rate import bound

DIURNAL = "5 + 3 * sin(2 * pi * now / 86400)"


def _times(rate: str, horizon: float, seed: int) -> np.ndarray:
    source = f"""run {{ horizon {horizon}; }}
    workload {{ arrive poisson({rate}); init {{ observe t = now; }} }}
    session {{ }}"""
    return _engine.run(lower(sq.compile(source=source).to_dict(exact=True)), seed=seed).observes[0].samples


def test_diurnal_counts_per_hour_follow_the_integral():
    # three days; hour h's count is Poisson with mean Λ_h = ∫ r over the hour, independent across
    # hours, so Σ (N_h - Λ_h)² / Λ_h is chi-square with 72 degrees of freedom: its 0.999
    # quantile is 114.835 (scipy.stats.chi2.ppf(0.999, 72))
    t = _times(DIURNAL, 3 * 86400, seed=1)
    edges = np.arange(0, 3 * 86400 + 1, 3600.0)
    counts = np.histogram(t, edges)[0]
    w = 2 * math.pi / 86400
    means = 5 * 3600 + 3 / w * (np.cos(w * edges[:-1]) - np.cos(w * edges[1:]))
    assert ((counts - means) ** 2 / means).sum() < 114.835
    # the shape is the rate's: the busiest hours are near the crest (hour 6), the quietest near
    # the trough (hour 18) — each more than 20 standard deviations apart
    by_hour = counts.reshape(3, 24).sum(axis=0)
    assert by_hour[5] - by_hour[17] > 20 * math.sqrt(by_hour[5] + by_hour[17])


def test_pi_sin_cos_fold_in_constants():
    program = sq.compile(source="""let w = 2 * pi / 86400; let r = 5 + 3 * cos(0) + sin(pi / 2);
        run { horizon 5; } workload { arrive poisson(r); } session { }""")
    assert program.to_dict()["arrival"] == {"Poisson": 9.0}


def test_a_programs_own_pi_and_sin_win():
    # 0.1.2 has no `pi` or `sin`: a program that names them means its own
    program = sq.compile(source="""let pi = 3; def sin(x) = x * 2;
        run { horizon 5; } workload { arrive poisson(sin(pi)); } session { }""")
    assert program.to_dict()["arrival"] == {"Poisson": 6.0}

@pytest.mark.parametrize("fn", ["Sin", "Cos"])
def test_bound_of_sin_and_cos_is_exact_on_the_interval(fn):
    f = math.sin if fn == "Sin" else math.cos
    rng = random.Random(7)
    for _ in range(300):
        # f(now + a) over now in [0, h]: the bound is the largest value on [a, a + h] (dense sampling)
        a, h = rng.uniform(-20, 20), rng.choice([0.01, 0.5, 2.0, 5.0, 7.0])
        expr = {"Binary": ["Add", {"Num": 2.0},
                           {"Call": [fn, [{"Expr": {"Binary": ["Add", {"Ctx": "Now"}, {"Num": a}]}}]]}]}
        top = max(2 + f(a + h * k / 20000) for k in range(20001))
        assert top <= bound(expr, h) <= top * (1 + 1e-6) + 1e-9


def test_bound_of_the_diurnal_rate():
    expr = sq.compile(source=f"run {{ horizon 10; }} workload {{ arrive poisson({DIURNAL}); }} session {{ }}"
                      ).to_dict(exact=True)["arrival"]["PoissonNow"]
    assert bound(expr, 86400) == pytest.approx(8.0, rel=1e-8)         # the crest at 21600 lies inside
    assert bound(expr, 3600) == pytest.approx(5 + 3 * math.sin(2 * math.pi / 24), rel=1e-8)   # rising all hour

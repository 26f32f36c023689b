"""`arrive poisson(r)` with `r` reading `now`: a non-homogeneous Poisson process by thinning (an
extension; sq/traces/rate.py). Checked against theory with fixed seeds: counts per piece of a
piecewise rate, and the time-change theorem for a linear rate (Λ(t_i) / Λ(T) uniform)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import sq
from sq import _engine
from sq.errors import SqError
from sq.lower.lowering import lower
from sq.traces.rate import bound


def _times(rate: str, horizon: float, seed: int = 1, lets: str = "") -> np.ndarray:
    source = f"""{lets}
    run {{ horizon {horizon}; }}
    workload {{ arrive poisson({rate}); init {{ observe t = now; }} }}
    session {{ }}
    """
    raw = _engine.run(lower(sq.compile(source=source).to_dict(exact=True)), seed=seed)
    return raw.observes[0].samples


def test_constant_rates_keep_the_dialect():
    program = sq.compile(source="let r = 2; run { horizon 5; } workload { arrive poisson(r * 3); } session { }")
    assert program.to_dict()["arrival"] == {"Poisson": 6.0}


def test_piecewise_rate_counts():
    for seed in (1, 2, 3):
        t = _times("now < 600 ? 2 : 6", 1200, seed)
        first, second = (t < 600).sum(), (t >= 600).sum()
        # Poisson counts of means 1200 and 3600: within 4 standard deviations
        assert abs(first - 1200) < 4 * math.sqrt(1200) and abs(second - 3600) < 4 * math.sqrt(3600)
        assert (np.diff(t) >= 0).all() and t[0] > 0


def test_linear_rate_time_change_is_uniform():
    # r(t) = 1 + t / 100 on [0, 1000]: Λ(t) = t + t² / 200, and given N the Λ(t_i) / Λ(T) are
    # i.i.d. uniform; Kolmogorov-Smirnov at the 1 % level (critical value 1.63 / sqrt(n))
    for seed in (1, 2):
        t = _times("1 + now / 100", 1000, seed)
        u = np.sort((t + t * t / 200) / (1000 + 1000 * 1000 / 200))
        n = len(u)
        assert abs(n - 6000) < 4 * math.sqrt(6000)
        d = max((np.arange(1, n + 1) / n - u).max(), (u - np.arange(n) / n).max())
        assert d < 1.63 / math.sqrt(n)


def test_same_seed_same_arrivals():
    assert np.array_equal(_times("min(5, 1 + now)", 50, 4), _times("min(5, 1 + now)", 50, 4))
    assert not np.array_equal(_times("min(5, 1 + now)", 50, 4), _times("min(5, 1 + now)", 50, 5))


@pytest.mark.parametrize("expr, horizon, want", [
    ({"Num": 3.0}, 10, 3.0),
    ({"Cond": [{"Binary": ["Lt", {"Ctx": "Now"}, {"Num": 600.0}]}, {"Num": 2.0}, {"Num": 6.0}]}, 1e9, 6.0),
    ({"Binary": ["Add", {"Num": 1.0}, {"Binary": ["Div", {"Ctx": "Now"}, {"Num": 100.0}]}]}, 1000, 11.0),
    ({"Call": ["Min", [{"Expr": {"Num": 5.0}}, {"Expr": {"Ctx": "Now"}}]]}, 1e9, 5.0),
])
def test_bound_is_interval_arithmetic(expr, horizon, want):
    assert bound(expr, horizon) == pytest.approx(want, rel=1e-8) and bound(expr, horizon) >= want


def test_unbounded_and_negative_rates_are_errors():
    with pytest.raises(SqError, match="cannot bound the poisson rate"):
        _times("1 / (now - 5)", 10)
    with pytest.raises(SqError, match="outside \\[0, "):
        _times("now < 5 ? -1 : 1", 10)
    with pytest.raises(SqError, match="a poisson rate may read only `now`, constants and pure functions"):
        _times("now + serial", 10)

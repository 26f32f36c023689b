"""`arrive renewal(g) rate(r);` (an extension): a renewal run in r's operational time
Λ(t) = ∫₀ᵗ r, arrivals at Λ⁻¹(g₁ + … + gₖ). Checked with fixed seeds: at a constant rate the gaps
are g / r (mean and cv), and under a periodic rate the counts per window follow Λ."""
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


def test_constant_rate_scales_the_gaps():
    # erlang(4, 1) gaps at rate 2: mean 0.5, cv 0.5. n = 40000 gaps: the mean's standard error
    # is 0.25 / 200; the cv's about cv · sqrt((1 + 2 cv²) / (2n))... bounded by 0.003 (4 sd: 0.012)
    gaps = np.diff(_times("renewal(~erlang(4, 1)) rate(2)", 20000, 1))
    assert abs(gaps.mean() - 0.5) < 4 * 0.25 / math.sqrt(len(gaps))
    assert abs(gaps.std() / gaps.mean() - 0.5) < 0.012


def test_counts_per_window_follow_the_operational_time():
    # r = 5 + 3 sin(2π t / 3600) over ten periods, windows of 300 s. A renewal's count over an
    # operational length Λ has mean Λ and variance about cv² Λ (cv² = 1/4 for erlang 4): the
    # standardized squares sum to about chi-square with 120 degrees of freedom (0.999 quantile
    # 173.6, scipy.stats.chi2.ppf(0.999, 120)); the first window's start-up bias is below 1
    t = _times("renewal(~erlang(4, 1)) rate(5 + 3 * sin(2 * pi * now / 3600))", 36000, 2)
    edges = np.arange(0, 36000 + 1, 300.0)
    w = 2 * math.pi / 3600
    lam = 5 * 300 + 3 / w * (np.cos(w * edges[:-1]) - np.cos(w * edges[1:]))
    counts = np.histogram(t, edges)[0]
    assert (((counts - lam) ** 2) / (lam / 4)).sum() < 173.6
    # the shape is the rate's, and far less variable than a poisson's would be
    assert abs(counts.sum() - 5 * 36000) < 4 * math.sqrt(5 * 36000 / 4)
    assert ((counts - lam) ** 2).sum() < 0.5 * lam.sum()


def test_operational_time_table():
    # gaps of exactly 1 at rate 2 until 600, then 6: the k-th arrival is where Λ(t) = 2t, then
    # 1200 + 6 (t - 600), reaches k. Λ is linear in each cell and 600 is a cell's edge, so the
    # times are exact to rounding; the rate is the engine's own evaluation of the conditional
    t = _times("renewal(1) rate(now < 600 ? 2 : 6)", 1200, 1)
    k = np.arange(1, len(t) + 1)
    assert len(t) in (4799, 4800)
    assert np.allclose(t, np.where(k <= 1200, k / 2, 600 + (k - 1200) / 6), rtol=1e-9, atol=1e-9)
    with pytest.raises(SqError, match="rate at time .* must be finite and >= 0"):
        _times("renewal(1) rate(1 - now)", 10, 1)
    with pytest.raises(SqError, match="a renewal.s rate may read only"):
        _times("renewal(1) rate(now + serial)", 10, 1)


def test_a_bad_rate_is_placed_at_the_rate_not_the_gap():
    source = "run { horizon 10; }\nworkload { arrive renewal(~exp(1)) rate(1 - now); }\nsession { }\n"
    with pytest.raises(SqError, match="must be finite and >= 0") as caught:
        sq.run(sq.compile(source=source))
    line = source.splitlines()[1]
    assert caught.value.span.line == 2 and caught.value.span.col - 1 > line.index("rate(")

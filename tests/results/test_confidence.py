"""The Student-t interval over seeds (sq.results.confidence): scipy's, to 1e-10, whichever way t is found.

t comes from scipy.special when it is installed, else from inverting the t distribution
(sq.results.confidence._t_quantile). Both paths are run here, the second with scipy made
unimportable, and compared with scipy.stats.t.ppf over many sample sizes and levels.
"""
from __future__ import annotations

import math
import sys

import pytest

from sq.results import confidence
from sq.errors import SqError

np = pytest.importorskip("numpy")
scipy_stats = pytest.importorskip("scipy.stats")   # the oracle

SIZES = [2, 3, 4, 5, 7, 10, 20, 31, 100, 201, 1001, 10**4, 10**5]
LEVELS = [0.5, 0.8, 0.9, 0.95, 0.975, 0.99, 0.999, 0.9999, 0.999999]


@pytest.fixture(params=["scipy", "no scipy"])
def path(request, monkeypatch):
    """Each test once with scipy.special and once as on a machine without it."""
    if request.param == "no scipy":
        monkeypatch.setitem(sys.modules, "scipy.special", None)    # `import scipy.special` now fails
    assert confidence.available("scipy.special") == (request.param == "scipy")
    return request.param


def test_the_interval_is_scipys_for_many_sizes_and_levels(path):
    for n in SIZES:
        xs = np.random.default_rng(n).lognormal(0.0, 1.0, n)      # skewed, as latencies are
        sem = xs.std(ddof=1) / math.sqrt(n)
        for level in LEVELS:
            mean, half = confidence.t_interval(xs.tolist(), level)
            want = scipy_stats.t.ppf((1 + level) / 2, n - 1) * sem
            assert mean == pytest.approx(xs.mean(), rel=1e-13, abs=0), (n, level)
            assert half == pytest.approx(want, rel=1e-10, abs=0), (path, n, level)


def test_the_quantile_without_scipy_is_scipys():
    # the fallback alone, over degrees of freedom from 1 to a million and both far tails
    dfs = [1, 2, 3, 4, 5, 7, 9, 19, 29, 50, 99, 100, 199, 200, 201, 999, 1000, 10**4, 10**5, 10**6]
    for df in dfs:
        for p in [0.6, *((1 + level) / 2 for level in LEVELS)]:
            want = scipy_stats.t.ppf(p, df)
            assert confidence._t_quantile(p, df) == pytest.approx(want, rel=1e-10, abs=0), (df, p)


def test_the_interval_at_the_edges(path):
    assert all(math.isnan(v) for v in confidence.t_interval([], 0.95))
    mean, half = confidence.t_interval([2.5], 0.95)
    assert mean == 2.5 and math.isnan(half)                      # one seed: no width
    assert confidence.t_interval([4.0, 4.0, 4.0], 0.99) == (4.0, 0.0)
    wide, narrow = confidence.t_interval([1.0, 3.0], 0.99)[1], confidence.t_interval([1.0, 3.0], 0.5)[1]
    assert wide == pytest.approx(scipy_stats.t.ppf(0.995, 1), rel=1e-10) and narrow == pytest.approx(1.0)
    for bad in (0.0, 1.0, -0.5, 95, math.nan, "0.9", True):
        with pytest.raises(SqError) as caught:
            confidence.t_interval([1.0, 2.0], bad)
        assert caught.value.message == f"t_interval: confidence must be between 0 and 1, found {bad!r}"


def test_numpy_numbers_are_numbers_here_too():
    # the one test of a number (sq._support.settings.is_number): numpy values and levels, as np.arange gives them
    import numpy as np
    t_interval = confidence.t_interval
    level = np.float32(0.9)     # (not a Python float, as np.float64 is)
    assert t_interval(np.array([1.0, 2.0, 4.0]), level) == t_interval([1.0, 2.0, 4.0], float(level))
    for bad in (True, "0.9", 1.0):
        with pytest.raises(SqError, match="confidence must be between 0 and 1"):
            t_interval([1.0, 2.0], bad)


def test_values_whose_squares_pass_the_largest_double_give_inf_not_an_error():
    # observations of 1e154 and more: the squared deviations (and sums) pass 1.8e308
    mean, half = confidence.t_interval([1e307, 5e307, 9e307])
    assert mean == pytest.approx(5e307, rel=1e-15) and half == math.inf
    mean, half = confidence.t_interval([1.5e308, 1.7e308])      # the sum passes it, the mean does not
    assert mean == pytest.approx(1.6e308, rel=1e-15) and half == math.inf
    mean, half = confidence.t_interval([1e154, 3e154])          # the variance is 2e308: inf
    assert mean == pytest.approx(2e154, rel=1e-15) and half == math.inf
    mean, half = confidence.t_interval([1e153, 3e153])          # 2e306: still a number
    assert half == pytest.approx(scipy_stats.t.ppf(0.975, 1) * 1e153, rel=1e-12)

"""The Student-t interval of a mean over independent replications (a study's seeds).

t comes from scipy when it is installed, else from inverting the t distribution's CDF,
written with the regularized incomplete beta function: no table of constants.
"""
from __future__ import annotations

import math

from sq._optional import available
from sq.errors import SqError


def t_interval(values, confidence: float = 0.95) -> tuple[float, float]:
    """(mean, half-width) of the two-sided Student-t interval of the mean of `values`.

    The half-width is NaN for fewer than two values. t comes from scipy when it is
    installed, else from inverting the t distribution's CDF (`_t_quantile`).
    """
    xs = [float(v) for v in values]
    n = len(xs)
    if not 0.0 < confidence < 1.0:
        raise SqError(f"confidence must be between 0 and 1, found {confidence!r}", phase="settings")
    if n == 0:
        return math.nan, math.nan
    mean = math.fsum(xs) / n
    if n < 2:
        return mean, math.nan
    var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
    return mean, t_quantile((1.0 + confidence) / 2.0, n - 1) * math.sqrt(var / n)


def t_quantile(p: float, df: int) -> float:
    """The p-quantile (p >= 1/2) of Student's t with `df` degrees of freedom."""
    if available("scipy.special"):  # scipy.special: a fraction of scipy.stats's import time
        from scipy.special import stdtrit  # noqa: PLC0415

        return float(stdtrit(df, p))
    return _t_quantile(p, df)


def _t_quantile(p: float, df: int) -> float:
    """Bisection of the t CDF, which is 1 - I_x(df/2, 1/2)/2 at x = df/(df+t²) for t >= 0."""
    lo, hi = 0.0, 1.0
    while _t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if _t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2.0


def _t_cdf(t: float, df: int) -> float:
    return 1.0 - 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta I_x(a, b) by its continued fraction (modified Lentz)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1.0) / (a + b + 2.0):  # the fraction converges fast only below the mean
        return 1.0 - _betainc(b, a, 1.0 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x)) / a
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 500):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            f *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return front * f

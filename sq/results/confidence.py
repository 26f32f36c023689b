"""The Student-t interval of a mean over independent replications (a study's seeds).

t comes from scipy when it is installed, else from inverting the t distribution's CDF,
written with the regularized incomplete beta function: no table of constants.
"""
from __future__ import annotations

import math

from sq._support._optional import available
from sq.errors import SqError
from sq._support.settings import is_number


def t_interval(values, confidence: float = 0.95) -> tuple[float, float]:
    """(mean, half-width) of the two-sided Student-t interval of the mean of `values`.

    The half-width is NaN for fewer than two values. t comes from scipy when it is
    installed, else from inverting the t distribution's CDF (`_t_quantile`).
    """
    confidence = check_level(confidence, "t_interval")
    xs = _numbers(values)
    n = len(xs)
    if n == 0:
        return math.nan, math.nan
    mean = _average(xs, n)
    if n < 2:
        return mean, math.nan
    var = _average([(x - mean) * (x - mean) for x in xs], n - 1)
    return mean, t_quantile((1.0 + confidence) / 2.0, n - 1) * math.sqrt(var / n)


_SCALE = 2.0 ** 600     # a power of two: scaling by it is exact


def _average(xs: list[float], n: int) -> float:
    """fsum(xs) / n. A sum past the largest double (values of 1e154 and more, squared) is taken
    scaled down: the result is then finite if it is, else inf — never an OverflowError."""
    try:
        return math.fsum(xs) / n
    except OverflowError:
        return math.fsum(x / _SCALE for x in xs) / n * _SCALE


def ratio_interval(shares, counts, confidence: float = 0.95) -> tuple[float, float]:
    """(share, half-width) of a share pooled over runs weighted by their counts: the ratio
    estimator sum(share·count) / sum(count) with its delta-method Student-t interval over the
    runs (each run one replication; its residual share·count - R·count). A run with no
    samples (count 0, share NaN) adds nothing; NaN without any sample."""
    pairs = [(float(s) * float(n), float(n)) for s, n in zip(shares, counts) if float(n) > 0]
    k = len(pairs)
    total = math.fsum(n for _, n in pairs)
    if k == 0 or total == 0:
        return math.nan, math.nan
    ratio = math.fsum(y for y, _ in pairs) / total
    if k < 2:
        return ratio, math.nan
    spread = math.fsum((y - ratio * n) ** 2 for y, n in pairs) / (k - 1)
    return ratio, t_quantile((1.0 + check_level(confidence, "ratio_interval")) / 2.0, k - 1) \
        * math.sqrt(spread / k) / (total / k)


def _numbers(values) -> list[float]:
    """The values as floats: any iterable of real numbers (numpy's too), not text or bools."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise SqError(f"t_interval: values are a list of numbers, found {values!r}", phase="settings")
    xs = []
    for v in values:
        if not is_number(v):
            raise SqError(f"t_interval: values are numbers, found {v!r}", phase="settings")
        xs.append(float(v))
    return xs


def check_level(confidence, who: str) -> float:
    """A confidence level: a number strictly between 0 and 1 (`who` starts the error), as a
    Python float (a numpy float32's arithmetic would round in single precision)."""
    if not (is_number(confidence) and 0.0 < confidence < 1.0):
        raise SqError(f"{who}: confidence must be between 0 and 1, found {confidence!r}", phase="settings")
    return float(confidence)


def t_quantile(p: float, df: int) -> float:
    """The p-quantile (p >= 1/2) of Student's t with `df` degrees of freedom."""
    if available("scipy.special"):  # scipy.special: a fraction of scipy.stats's import time
        from scipy.special import stdtrit  # noqa: PLC0415

        return float(stdtrit(df, p))
    return _t_quantile(p, df)


def _t_quantile(p: float, df: int) -> float:
    """Bisection of the t distribution's upper tail, which is I_x(df/2, 1/2)/2 at
    x = df/(df+t²) for t >= 0, against 1 - p (exact in floating point for p >= 1/2);
    1 - x is computed as t²/(df+t²), so that no far tail loses its digits to a subtraction.
    Within 1e-10 (relative) of scipy's for df up to 10^6 and p up to 1 - 5e-7 (tests/results/test_confidence.py);
    beyond ~10^6 degrees of freedom the continued fraction near its mean loses digits."""
    q = 1.0 - p
    lo, hi = 0.0, 1.0
    while _t_tail(hi, df) > q:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if _t_tail(mid, df) > q else (lo, mid)
    return (lo + hi) / 2.0


def _t_tail(t: float, df: int) -> float:
    """P(T > t) for t >= 0."""
    d = df + t * t
    return 0.5 * _betainc(df / 2.0, 0.5, df / d, t * t / d)


def _betainc(a: float, b: float, x: float, y: float) -> float:
    """The regularized incomplete beta I_x(a, b), y = 1 - x given as accurately as x, by its
    continued fraction (modified Lentz)."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    if x > (a + 1.0) / (a + b + 2.0):  # the fraction converges fast only below the mean
        return 1.0 - _betainc(b, a, y, x)
    log_x = math.log1p(-y) if y < 0.5 else math.log(x)
    log_y = math.log1p(-x) if x < 0.5 else math.log(y)
    front = math.exp(-_log_beta(a, b) + a * log_x + b * log_y) / a
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


def _log_beta(a: float, b: float) -> float:
    """log B(a, b). For a large argument (many seeds) lgamma(a+b) - lgamma(a) is a difference
    of two numbers near a·log a, which leaves too few digits; Stirling's series for the
    difference keeps them (its next term, 1/(1188 z⁹), is below 1e-20 for z >= 100)."""
    small, big = sorted((a, b))
    if big < 100.0:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    ratio = (big - 0.5) * math.log1p(small / big) + small * math.log(big + small) - small \
        + _stirling_tail(big + small) - _stirling_tail(big)     # lgamma(big + small) - lgamma(big)
    return math.lgamma(small) - ratio


def _stirling_tail(z: float) -> float:
    """lgamma(z) - ((z - 1/2)·log z - z + log(2π)/2), to 1e-20 for z >= 100."""
    w = 1.0 / (z * z)
    return (1.0 / 12.0 - w * (1.0 / 360.0 - w * (1.0 / 1260.0 - w / 1680.0))) / z

"""`arrive poisson(r)` with `r` reading `now`: the bound its thinning draws against.

The engine makes a non-homogeneous Poisson process by thinning (Lewis and
Shedler, 1979): candidates come from a homogeneous Poisson process of rate
`bound`, and a candidate at time t is kept with probability r(t) / bound. That
is exact — the kept points are a Poisson process of intensity r — whenever
0 <= r(t) <= bound on the whole run, [0, horizon].

The bound is found here, before the run, by interval arithmetic on the rate's
IR expression with `now` in [0, horizon]: each operator maps the intervals of
its operands to an interval holding every value it can take (a comparison or
`!`, `&&`, `||` to [0, 1], a conditional to the union of its branches, min,
max, abs, floor, ceil, sqrt, exp, ln, pow as monotone pieces; sin and cos exactly: the
values at the ends, or ±1 where a crest or trough lies inside). The result
is then widened by one part in 10^9, so a rate computed at one point, rounded
its own way, cannot pass it. A rate the arithmetic cannot bound (a division by
an interval holding 0, a power of a negative base) is refused with the advice
to bound it by hand with `min`.
"""
from __future__ import annotations

import math


from sq.errors import SqError

_HELP = ("help: a rate that reads `now` must be bounded over the run: write it so each part is, "
         "e.g. `min(1000, 2 + now / 60)`")


def bound(expr, horizon: float) -> float:
    """The least upper bound interval arithmetic gives the rate over [0, horizon], widened."""
    lo, hi = _interval(expr, 0.0, horizon)
    if not (math.isfinite(hi) and hi > 0):
        if hi == 0:
            return 0.0
        raise SqError(f"cannot bound the poisson rate over the run [0, {horizon:g}]: "
                      f"interval arithmetic gives up to {hi:g}", phase="run", item=("arrival",), notes=(_HELP,))
    return hi * (1 + 1e-9)


def _interval(e, t0: float, t1: float) -> tuple[float, float]:
    (tag, body), = e.items()
    if tag == "Num":
        v = float(body)          # "inf" and "-inf" in the exact IR form
        return v, v
    if tag == "Ctx":            # only `now` passes the IR's check of a rate
        return t0, t1
    if tag == "Unary":
        op, a = body
        lo, hi = _interval(a, t0, t1)
        return (-hi, -lo) if op == "Neg" else (0.0, 1.0)
    if tag == "Cond":
        _, a, b = body
        (alo, ahi), (blo, bhi) = _interval(a, t0, t1), _interval(b, t0, t1)
        return min(alo, blo), max(ahi, bhi)
    if tag == "Binary":
        op, a, b = body
        if op in ("Lt", "Le", "Gt", "Ge", "Eq", "Ne", "And", "Or"):
            return 0.0, 1.0
        return _binary(op, _interval(a, t0, t1), _interval(b, t0, t1))
    if tag == "Call":
        fn, args = body
        ivs = [_interval(a["Expr"], t0, t1) for a in args]
        return _call(fn, ivs)
    return -math.inf, math.inf


def _binary(op, a, b):
    (alo, ahi), (blo, bhi) = a, b
    if op == "Add":
        return alo + blo, ahi + bhi
    if op == "Sub":
        return alo - bhi, ahi - blo
    if op == "Mul":
        return _span([x * y for x in (alo, ahi) for y in (blo, bhi)])
    if op == "Div":
        if blo <= 0 <= bhi:
            return -math.inf, math.inf
        return _span([x / y for x in (alo, ahi) for y in (blo, bhi)])
    if op == "Pow":
        return _pow(a, b)
    return -math.inf, math.inf


def _call(fn, ivs):
    if fn == "Min":
        (alo, ahi), (blo, bhi) = ivs
        return min(alo, blo), min(ahi, bhi)
    if fn == "Max":
        (alo, ahi), (blo, bhi) = ivs
        return max(alo, blo), max(ahi, bhi)
    (lo, hi), = ivs[:1]
    if fn == "Abs":
        if lo >= 0:
            return lo, hi
        return (0.0 if hi >= 0 else -hi), max(-lo, hi)
    if fn in ("Floor", "Ceil", "Sqrt", "Exp", "Ln"):
        f = {"Floor": math.floor, "Ceil": math.ceil, "Sqrt": math.sqrt, "Exp": math.exp, "Ln": math.log}[fn]
        if fn in ("Sqrt", "Ln") and lo < 0 or fn == "Ln" and lo <= 0:
            return -math.inf, math.inf
        return _monotone(f, lo, hi)
    if fn == "Pow":
        return _pow(*ivs)
    if fn in ("Sin", "Cos"):
        return _periodic(math.sin if fn == "Sin" else math.cos, lo, hi, math.pi / 2 if fn == "Sin" else 0.0)
    return -math.inf, math.inf


def _periodic(f, lo, hi, crest):
    """sin or cos over [lo, hi]: the values at the ends, widened to 1 where a crest (crest + 2πk)
    lies inside and to -1 where a trough (crest + π + 2πk) does; [-1, 1] past a period. The
    test for a crest inside is made a little wide (one part in 10^12 of the argument), so a
    crest at an end, rounded either way, counts: the bound may be loose, never short."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo >= 2 * math.pi:
        return -1.0, 1.0
    ends = (f(lo), f(hi))
    slack = 1e-12 * max(1.0, abs(lo), abs(hi))

    def holds(point):
        k = math.ceil((lo - slack - point) / (2 * math.pi))
        return point + 2 * math.pi * k <= hi + slack

    return (-1.0 if holds(crest + math.pi) else min(ends)), (1.0 if holds(crest) else max(ends))


def _pow(a, b):
    (alo, ahi), (blo, bhi) = a, b
    if alo < 0:
        return -math.inf, math.inf
    return _span([_safe(math.pow, x, y) for x in (alo, ahi) for y in (blo, bhi)])


def _monotone(f, lo, hi):
    return _safe(f, lo), _safe(f, hi)


def _safe(f, *args):
    try:
        return f(*args)
    except (OverflowError, ValueError):
        return math.inf


def _span(values):
    if any(math.isnan(v) for v in values):
        return -math.inf, math.inf
    return min(values), max(values)


# ---------------------------------------------------------------- renewal gaps in operational time
# `arrive renewal(g) rate(r);` (an extension) runs the renewal in r's operational time
# Λ(t) = ∫₀ᵗ r: the arrival after one at t comes at Λ⁻¹(Λ(t) + g). The engine tables Λ when the run
# starts (`_operational_time` in sq/_engine.pyx) on OPERATIONAL_CELLS equal cells of [0, horizon],
# r averaged over each cell by 4-point Gauss-Legendre quadrature (exact for a rate that is a
# polynomial of degree up to 7 on a cell), r evaluated by the engine's own expression code, so it is
# the rate the thinning of `poisson(r)` would read; it inverts the table, linear in each cell. So the
# process is exactly the renewal in the operational time of r averaged cell by cell — for a smooth
# rate, or one that jumps at a few instants, indistinguishable from r's own.
OPERATIONAL_CELLS = 1 << 18
GAUSS_NODES = (-0.8611363115940526, -0.3399810435848563, 0.3399810435848563, 0.8611363115940526)
GAUSS_WEIGHTS = (0.3478548451374538, 0.6521451548625461, 0.6521451548625461, 0.3478548451374538)

"""Constant folding: the value of an operator or pure function on numbers, as the engine computes it.

One place for these, so that the parser (array sizes) and the linker (every other constant
position) fold alike. Python raises where IEEE arithmetic gives inf or NaN; these don't.
"""
from __future__ import annotations

import math


def pure_value(name: str, args: list[float]) -> float:
    """A pure function (min max abs floor ceil sqrt exp ln pow) of folded numbers."""
    if name in ("min", "max"):
        a, b = args
        if math.isnan(a):
            return b
        if math.isnan(b):
            return a
        return min(a, b) if name == "min" else max(a, b)
    if name == "pow":
        return pow_value(*args)
    x = args[0]
    try:
        if name == "abs":
            return abs(x)
        if name == "floor":
            return float(math.floor(x)) if math.isfinite(x) else x
        if name == "ceil":
            return float(math.ceil(x)) if math.isfinite(x) else x
        if name == "sqrt":
            return math.sqrt(x) if x >= 0 else (x if math.isnan(x) else math.nan)
        if name == "exp":
            try:
                return math.exp(x)
            except OverflowError:
                return math.inf
        if name == "ln":
            if math.isnan(x) or x < 0:
                return math.nan
            return -math.inf if x == 0 else math.log(x)
    except (ValueError, OverflowError):
        return math.nan
    raise AssertionError(name)


def pow_value(a: float, b: float) -> float:
    try:
        r = math.pow(a, b)
    except OverflowError:
        r = math.inf if a > 0 or float(b).is_integer() and int(b) % 2 == 0 else -math.inf
    except ValueError:
        r = math.nan if a < 0 else math.inf   # 0 ** negative is +inf in IEEE pow
    return r


def div_value(a: float, b: float) -> float:
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def binary_value(op: str, a: float, b: float) -> float:
    """An arithmetic or comparison operator on folded numbers, with run-time (IEEE) results."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return div_value(a, b)
    if op == "^":
        return pow_value(a, b)
    if op == "<":
        return float(a < b)
    if op == "<=":
        return float(a <= b)
    if op == ">":
        return float(a > b)
    if op == ">=":
        return float(a >= b)
    if op == "==":
        return float(a == b)
    if op == "!=":
        return float(a != b)
    raise AssertionError(op)

"""Constant folding: the value of an operator or pure function on numbers, as the engine computes it,
and `Folder`, the one walk that folds an expression tree with them.

One place for these, so that the parser (array sizes) and the linker (every other constant
position) fold alike. Python raises where IEEE arithmetic gives inf or NaN; these don't.
"""
from __future__ import annotations

import math

from sq.frontend import ast
from sq.frontend.words import PURE_FUNCTIONS


class Folder:
    """Folds an expression to a number: the walk the parser and the linker share.

    What differs between them is a hook: what a name is worth (`name`), whether an aggregate's
    count will do (`count`), and what a construct that is no constant does (`call`, `not_pure`,
    `other`): the parser's folder gives up quietly (the expression is not a constant it can see
    yet), the linker's says why, where. `agg` holds the aggregate indices in scope.
    """

    strict_logic = False    # fold both sides of `&&`/`||` (not only the side that decides)

    def value(self, e, agg: dict) -> float:
        kind = type(e)      # exact types: the expression classes have no subclasses
        if kind is ast.Num:
            return float(e.value)
        if kind is ast.Name:
            return agg[e.name] if e.name in agg else self.name(e)
        if kind is ast.Binary:
            return self.binary(e, agg)
        if kind is ast.Unary:
            v = self.value(e.operand, agg)
            return -v if e.op == "-" else float(v == 0)
        if kind is ast.Cond:
            t = self.value(e.test, agg)
            return self.value(e.then if t != 0 else e.other, agg)
        if kind is ast.Call:
            self.call(e)
            args = [self.value(a, agg) for a in e.args]
            if PURE_FUNCTIONS.get(e.name) != len(args):
                raise self.not_pure(e, len(args))
            return pure_value(e.name, args)
        if kind is ast.Aggregate:
            return self.aggregate(e, agg)
        return self.other(e, agg)

    def binary(self, e, agg: dict) -> float:
        a = self.value(e.left, agg)
        if e.op == "&&" or e.op == "||":
            if self.strict_logic:
                b = self.value(e.right, agg) != 0
                return float(a != 0 and b) if e.op == "&&" else float(a != 0 or b)
            if e.op == "&&":
                return 0.0 if a == 0 else float(self.value(e.right, agg) != 0)
            return 1.0 if a != 0 else float(self.value(e.right, agg) != 0)
        return binary_value(e.op, a, self.value(e.right, agg))

    def aggregate(self, e, agg: dict) -> float:
        return self.terms(e, self.count(e, agg), agg)

    def terms(self, e, n: int, agg: dict) -> float:
        """`sum`/`min`/`max` over its index 0..n-1, left to right, as the written-out terms add."""
        values = [self.value(e.body, {**agg, e.var: float(j)}) for j in range(n)]
        out = values[0]
        for v in values[1:]:
            out = out + v if e.op == "sum" else pure_value(e.op, [out, v])
        return out

    # -- the hooks ----------------------------------------------------------------------------
    def name(self, e) -> float:
        """A name's value (not an aggregate index)."""
        raise NotImplementedError

    def count(self, e, agg: dict) -> int:
        """An aggregate's count of terms (at least 1)."""
        raise NotImplementedError

    def call(self, e) -> None:
        """Before a call's arguments fold: raise if the call can be no constant whatever they are."""

    def not_pure(self, e, nargs: int) -> Exception:
        """The error for a call, its arguments folded, that is no pure function of that many."""
        raise NotImplementedError

    def other(self, e, agg: dict) -> float:
        """Any other expression (a reference, a field, a draw)."""
        raise NotImplementedError


def pure_value(name: str, args: list[float]) -> float:
    """A pure function (min max abs floor ceil sqrt exp ln pow, and the extension's sin cos) of folded numbers."""
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
        if name == "sin":
            return math.sin(x)
        if name == "cos":
            return math.cos(x)
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

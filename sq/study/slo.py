"""Service-level objectives: `"ttft.p99 <= 0.5"` read into conditions on sweep metrics.

A condition compares one metric of `sq.results.metrics` with a number. At a point of a
study it is judged on the Student-t interval of the metric over the seeds: the
whole interval on the good side meets it, the whole interval on the bad side
violates it, an interval across the bound leaves it open (more seeds may close it).
"""
from __future__ import annotations

import math
import operator
import re
from collections.abc import Iterable
from dataclasses import dataclass

from sq.errors import SqError

MEETS, VIOLATES, OPEN = "meets", "violates", "open"

# The operators an SLO may use, longest first so `<=` is not read as `<`, and what each does.
_COMPARE = {"<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt}
OPERATORS = tuple(_COMPARE)
_COMPARISON = re.compile(r"^\s*(?P<metric>.*?)\s*(?P<op><=|>=|==|!=|=<|=>|<|>|=)\s*(?P<bound>.*?)\s*$")


@dataclass(frozen=True)
class Condition:
    """`metric op bound`: one clause of an SLO."""

    metric: str
    op: str
    bound: float

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.bound:g}"

    @property
    def wants_small(self) -> bool:
        """True when smaller values of the metric are the good side (`<=`, `<`)."""
        return self.op in ("<=", "<")

    def holds(self, value: float) -> bool:
        """Whether one number satisfies the condition (NaN never does: no samples is no evidence)."""
        return not math.isnan(value) and _COMPARE[self.op](value, self.bound)

    def judge(self, mean: float, half: float) -> str:
        """MEETS, VIOLATES or OPEN for the interval `mean ± half`."""
        if math.isnan(mean):
            return VIOLATES
        half = abs(half) if not math.isnan(half) else math.inf
        worst, best = (mean + half, mean - half) if self.wants_small else (mean - half, mean + half)
        if self.holds(worst):
            return MEETS
        if not self.holds(best):
            return VIOLATES
        return OPEN


def parse_slo(slo, known=None) -> tuple[Condition, ...]:
    """Read an SLO: one text or a list of texts, each one condition or several joined by
    `,` or `and`. `known(metric)` may reject a metric the program cannot report (it
    raises SqError). Every defect is an SqError naming the clause, before any run."""
    texts = [slo] if isinstance(slo, str) else list(slo) if isinstance(slo, Iterable) else []
    if not texts or not all(isinstance(t, str) for t in texts):
        raise SqError(f"slo: give one or more conditions as text, like 'ttft.p99 <= 0.5', found {slo!r}",
                      phase="settings")
    clauses = [c for text in texts for c in re.split(r",(?![^()]*\))|\band\b", text)]
    return tuple(parse_condition(c, known) for c in clauses)


def parse_condition(text: str, known=None) -> Condition:
    from sq.results.metrics import parse_metric

    m = _COMPARISON.match(text)
    if not text.strip():
        raise SqError("slo: an empty condition (write 'METRIC <= NUMBER')", phase="settings")
    if not m:
        raise SqError(f"slo `{text.strip()}`: no comparison; write 'METRIC <= NUMBER' "
                      f"(operators: {', '.join(OPERATORS)})", phase="settings")
    metric, op, bound = m.group("metric"), m.group("op"), m.group("bound")
    if op not in OPERATORS:
        raise SqError(f"slo `{text.strip()}`: unknown operator `{op}` "
                      f"(an SLO compares with {', '.join(OPERATORS)})", phase="settings")
    if not metric:
        raise SqError(f"slo `{text.strip()}`: no metric before `{op}`", phase="settings")
    try:
        number = float(bound)
    except ValueError:
        number = math.nan
    if not bound or math.isnan(number):
        raise SqError(f"slo `{text.strip()}`: expected a number after `{op}`, found `{bound}`", phase="settings")
    try:
        name = parse_metric(metric).name      # the canonical spelling: the column of the runs table
        if known is not None:
            known(metric)
    except SqError as err:
        raise SqError(f"slo `{text.strip()}`: {err.message}", phase="settings", notes=err.notes) from None
    return Condition(name, op, number)

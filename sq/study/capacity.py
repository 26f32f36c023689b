"""Capacity search: the largest load, or the smallest deployment, that meets an SLO.

`capacity(program, knob, slo)` varies one `let` constant. Each value tried is
a small sweep over the same seeds (common random numbers); the SLO's metrics
are judged on their Student-t intervals over those seeds (`sq.study.slo`): a point
meets, violates, or stays open, and an open point gets more seeds, up to a cap,
before it is called undecided. The search probes geometrically from the
program's own value until the verdict flips (at most `MAX_STEPS` doublings or
halvings each way), then bisects the bracket to `tol` (relative) or to adjacent
whole numbers. The answer is the last value shown to meet, with the value shown
to violate next to it and every run behind both. Verdicts that run against the
direction (a value meets on the worse side of one that violates) stop the
search with the direction to give instead.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
from dataclasses import dataclass, field

from sq._support._optional import require
from sq.errors import SqError
from sq._support.files import check_writable, path_argument
from sq.study.slo import MEETS, OPEN, VIOLATES, Condition, parse_slo
from sq._support.settings import is_count, is_number
from sq.results.runs import RunTable
from sq.results.steady import Steadiness, one_server_stages, steadiness
from sq.study.sweep import compiled_from, json_cell, seed_list

UNDECIDED = "undecided"
DIRECTIONS = ("max", "min")
MAX_STEPS = 8       # geometric probes in one direction (x256): further out, give lo and hi
UNSETTLED_STEPS = 2  # probes toward more room that stay unsettled before the horizon is blamed
SETTLE_STEP = 4     # a point whose runs may still grow is run again this much longer (and its warm-up)
SETTLE = 16         # ... up to this multiple of the horizon given
FIRST_SHARE = 0.75  # of a point's error, spent at the horizon given (the rest on the longer runs)
PERSISTS = 0.5      # growth at the longer horizon at least this share of the shorter one's: overload


# -- the knob -----------------------------------------------------------------

@dataclass(frozen=True)
class Knob:
    """The `let` searched over: its name, the program's value, and how it is searched."""

    name: str
    start: float
    integer: bool
    direction: str      # "max": the largest value that meets; "min": the smallest

    def rank(self, x: float) -> float:
        """Position on the good-to-bad axis: meeting values rank below violating ones."""
        return x if self.direction == "max" else -x

    def step(self, x, worse: bool):
        """The next geometric probe from x, toward more load (`worse`) or more room; None past the domain."""
        up = worse == (self.direction == "max")
        if self.integer:
            nxt = max(2 * x, x + 1) if up else x // 2
            return int(nxt) if nxt >= 1 else None
        return x * 2 if up else x / 2

    def midpoint(self, a, b, tol: float):
        return (a + b) // 2 if self.integer else clean((a + b) / 2, tol)

    def close(self, a, b, tol: float) -> bool:
        """Whether a bracket [a, b] is as narrow as the search goes."""
        if self.integer:
            return abs(a - b) <= 1
        return abs(a - b) <= tol * max(abs(a), abs(b))


def clean(x: float, tol: float) -> float:
    """x rounded to the decimal place below a fortieth of its tolerance (tol * |x| / 40): the value
    the runs use and the output shows, without binary noise (0.65, not 0.6499999999999999), and
    moved by too little to matter to a bracket `tol` wide."""
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, math.ceil(-math.log10(tol * abs(x) / 40)))


def resolve_knob(program, name: str, direction: str | None, lo=None, hi=None) -> Knob:
    """The knob's value in the program and its search: a `let` that changes only the workload
    is load (search up: the largest value that meets); one that changes pools or stages sizes
    the deployment (search down: the smallest), over whole numbers when its value is one."""
    if direction is not None and direction not in DIRECTIONS:
        raise SqError(f"capacity: direction is 'max' or 'min', found {direction!r}", phase="settings")
    start = let_value(program, name)
    if not math.isfinite(start):
        raise SqError(f"capacity: `{name}` is {start}; give lo and hi", phase="settings")
    base = _ir_parts(program, name, start)
    moved = _ir_parts(program, name, start * 2 if start else 1)
    deployment = base["deployment"] != moved["deployment"]
    if direction is None:
        if base == moved:
            raise SqError(f"capacity: `{name}` changes nothing in the program; give direction='max' or 'min'",
                          phase="settings")
        direction = "min" if deployment else "max"
    given = [v for v in (lo, hi) if v is not None]
    integer = deployment and all(float(v).is_integer() for v in (start, *given))
    if deployment and float(start).is_integer() and not integer:
        _check_fractional(program, name, [v for v in given if not float(v).is_integer()])
    if lo is None and start <= 0:
        raise SqError(f"capacity: `{name}` is {start:g} in the program, so a geometric search has nowhere "
                      "to start; give lo and hi", phase="settings")
    return Knob(name, int(start) if integer else float(start), integer, direction)


def _check_fractional(program, name: str, ends) -> None:
    """A fractional lo or hi searches real values: an SqError before any run if the program
    takes only whole numbers there (a server count, an array size)."""
    for v in ends:
        try:
            _ir_parts(program, name, v)
        except SqError as err:
            raise SqError(f"capacity: `{name}` takes whole numbers ({name} = {v:g}: {err.message})",
                          phase="settings", notes=("help: give lo and hi as whole numbers; the search then "
                                                   "tries whole numbers only",)) from None


def let_value(program, name: str) -> float:
    """The value of `let name` in a program (a path, or a Program compiled from a file or text,
    with the `sets` it was compiled with)."""
    from sq.frontend.compile import let_values

    if isinstance(program, (str, os.PathLike)):
        lets = let_values(program)
    else:
        origin = compiled_from(program, "capacity")
        lets = let_values(origin["path"], source=origin["source"], sets=origin["sets"], defs=origin["defs"])
    if name not in lets:
        raise SqError(f"capacity: the knob `{name}` is not a `let` of the program", phase="settings",
                      notes=(f"help: its constants: {', '.join(lets) or 'none'}",))
    return lets[name]


def _ir_parts(program, name: str, value) -> dict:
    from sq.study.sweep import compile_point

    ir = compile_point(program, {name: value}).to_dict()
    return {"deployment": (ir["pools"], ir["stages"]), "workload": (ir["arrival"], ir["blocks"])}


# -- points -------------------------------------------------------------------

@dataclass
class Point:
    """One value of the knob tried: its seeds' verdict and the interval of every SLO metric."""

    value: float
    decision: str                       # MEETS, VIOLATES or UNDECIDED
    seeds: list[int]
    intervals: dict[str, tuple[float, float]]   # metric -> (mean, half-width)
    verdicts: dict[str, str]            # condition text -> MEETS / VIOLATES / OPEN
    stationary: bool
    horizon: dict | None = None         # the run settings of the runs judged (horizon, warmup, arrivals)
    steadiness: Steadiness | None = None
    # growth that a SETTLE_STEP-times longer run did not slow (to PERSISTS of it): overload, not a slow settle
    persistent: bool = False
    warnings: list[str] = field(default_factory=list)   # too few samples in a tail, a warm-up too short

    @property
    def unsettled(self) -> bool:
        """Not stationary, although every condition's interval met it: an overload just begun,
        or a warm-up or horizon too short for the model to settle (then more room changes nothing)."""
        return not self.stationary and set(self.verdicts.values()) == {MEETS}

    def to_dict(self) -> dict:
        return {"value": self.value, "decision": self.decision, "n": len(self.seeds), "seeds": self.seeds,
                "stationary": self.stationary, "settings": self.horizon, "persistent": self.persistent,
                "warnings": list(self.warnings),
                "metrics": {m: {"mean": json_cell(a), "half_width": json_cell(h)}
                            for m, (a, h) in self.intervals.items()},
                "conditions": dict(self.verdicts)}

    def describe(self, knob: str) -> str:
        """One line: the value, each metric as mean ± half-width over n seeds, the verdict."""
        parts = [f"{m} {a:.6g} ± {h:.2g}" for m, (a, h) in self.intervals.items()]
        note = "" if self.stationary else ", not stationary"
        if self.horizon:
            note += ", run longer: " + ", ".join(f"{k} {v:g}" for k, v in self.horizon.items())
        return f"{knob} = {self.value:g}: {', '.join(parts)} (n={len(self.seeds)}{note}) -> {self.decision}"


def judge(value, rows, conditions, confidence: float, steady: Steadiness | None = None,
          level: float | None = None) -> Point:
    """A point's verdict from its runs: every condition's interval (at `confidence`, the level
    of one look at one condition: see `look_level`) on the good side meets; one on the bad
    side, or runs not in steady state (`steady.growing(level)`: growth over the seeds at
    one-sided `level`, default (1 - confidence) / 2, or half the runs warned), violates; else
    it stays open. (Growth is overload, whatever the means say: they describe the horizon, not
    the system; `_point_runner` runs a growing point longer before this verdict counts.)"""
    from sq.study.sweep import point_interval

    steady = steady if steady is not None else steadiness(rows)
    stationary = not steady.growing((1.0 - confidence) / 2.0 if level is None else level)
    intervals, verdicts = {}, {}
    for c in conditions:
        intervals[c.metric] = point_interval(rows, c.metric, confidence)
        verdicts[str(c)] = c.judge(*intervals[c.metric])
    states = set(verdicts.values())
    if not stationary or VIOLATES in states:
        decision = VIOLATES
    elif states == {MEETS}:
        decision = MEETS
    else:
        decision = OPEN
    return Point(value, decision, RunTable.of(rows).values("seed"), intervals, verdicts, stationary,
                 steadiness=steady)


def look_level(confidence: float, looks: int, conditions: int, share: float = 1.0) -> float:
    """The confidence of one interval so that a point's verdicts keep their promise over every
    look and condition (Bonferroni): `share` of the error 1 - confidence, spent evenly over
    `looks` looks at each of `conditions` conditions. A condition that truly fails is then
    called met with probability at most (1 - confidence)·share / 2, and a point whose
    conditions all hold is called violating (by its intervals) with at most as much."""
    return 1.0 - (1.0 - confidence) * share / (looks * conditions)


def planned_looks(start: int, cap: int) -> int:
    """How many times a point's intervals are looked at when its seeds double from `start`
    up to `cap` (10 -> 20 -> 40: three looks)."""
    looks, n = 1, start
    while n < cap:
        n += min(n, cap - n)
        looks += 1
    return looks


def horizon_levels(settle: int) -> list[int]:
    """The factors of the horizon a growing point is run at: 1, SETTLE_STEP, ... up to `settle`."""
    levels = [1]
    while levels[-1] * SETTLE_STEP <= settle:
        levels.append(levels[-1] * SETTLE_STEP)
    return levels


def level_shares(count: int) -> list[float]:
    """The error spent at each horizon level: FIRST_SHARE at the given horizon (where most
    points are decided), the rest evenly over the longer ones; all of it when there is one."""
    if count == 1:
        return [1.0]
    return [FIRST_SHARE] + [(1.0 - FIRST_SHARE) / (count - 1)] * (count - 1)


def more_seeds(seeds: list[int], count: int) -> list[int]:
    """`count` seeds after the largest used, the same at every point (common random numbers)."""
    top = max(seeds)
    return list(range(top + 1, top + 1 + count))


# -- the record -----------------------------------------------------------------

@dataclass
class Capacity:
    """The answer of a capacity search (`sq.capacity`) and the evidence behind it.

    `knob`, `direction` ("max": a load, the largest value that meets; "min": a size, the
    smallest), `value` (the answer, None when no value tried meets), `bracket` (the last
    value that meets, the first that violates), `confident` (both ends decided and within
    `tol`) and `reason`, `points` (every value tried: its verdict, seeds, intervals),
    `table` (every run, with its value's decision: a `sq.results.runs.RunTable`; `records` the
    same rows as dicts), `warnings`, `provenance`.
    Conversions: `line()`, `summary()`, `to_dict()`, `to_json(path=None)` (text without a
    path), `to_pandas()` (the runs), `plot()`.
    """

    knob: str
    direction: str
    integer: bool
    conditions: tuple[Condition, ...]
    confidence: float
    tol: float
    value: float | None                 # the last value shown to meet (None: none met)
    bracket: tuple                      # (meets at, violates at); None where not found
    confident: bool
    reason: str
    points: list[Point]                 # in the order they were tried
    table: RunTable = field(repr=False)  # every run: the knob, seed, metrics and the point's decision
    provenance: dict = field(default_factory=dict, repr=False)   # program, overrides, settings, sq and its build

    def __post_init__(self):
        self.table = RunTable.of(self.table, [self.knob])     # a list of records, as a RunTable

    @property
    def records(self) -> list[dict]:
        """Every run as a dict (made from `table` at each call)."""
        return list(self.table.records())

    @property
    def warnings(self) -> list[str]:
        """Every point's warnings, once each: quantiles on thin tails, warm-ups too short."""
        return list(dict.fromkeys(w for p in self.points for w in p.warnings))

    @property
    def slo(self) -> tuple[str, ...]:
        return tuple(str(c) for c in self.conditions)

    @property
    def runs(self):
        """Every run of every point as a pandas DataFrame (with its point's decision)."""
        require("pandas", "Capacity.runs")
        return self.table.frame(self.table.keys())

    def summary(self):
        """One row per point, in knob order: decision, n, and every SLO metric's mean and ± half-width."""
        rows = []
        for p in sorted(self.points, key=lambda p: p.value):
            row = {self.knob: p.value, "decision": p.decision, "n": len(p.seeds)}
            for m, (mean, half) in p.intervals.items():
                row[m], row[m + "±"] = mean, half
            rows.append(row)
        return require("pandas", "Capacity.summary").DataFrame.from_records(rows)

    def line(self) -> str:
        """The answer in one line, with its bracket."""
        meets, violates = self.bracket
        shown = "none" if self.value is None else f"{self.value:g}"
        side = "largest" if self.direction == "max" else "smallest"
        fmt = lambda v: "-" if v is None else f"{v:g}"  # noqa: E731
        sure = "confident" if self.confident else "NOT confident"
        return (f"capacity: {self.knob} = {shown} ({side} value meeting {' and '.join(self.slo)}); "
                f"meets at {fmt(meets)}, violates at {fmt(violates)}; {sure}: {self.reason}")

    def to_dict(self) -> dict:
        return {"knob": self.knob, "direction": self.direction, "integer": self.integer, "slo": list(self.slo),
                "confidence": self.confidence, "tol": self.tol, "value": self.value,
                "bracket": list(self.bracket), "confident": self.confident, "reason": self.reason,
                "points": [p.to_dict() for p in self.points], "warnings": self.warnings,
                "provenance": self.provenance,
                "runs": [{k: json_cell(v) for k, v in r.items()} for r in self.table.records()]}

    def to_json(self, path=None, indent: int | None = 2) -> str | None:
        """The search as JSON (`to_dict`): returned without a path, written there (atomically)
        with one, as every `to_json` of sq does. (`to_json(4)`, the old form, is an indent.)"""
        from sq._support.files import text_or_file

        if isinstance(path, int) and not isinstance(path, bool):
            path, indent = None, path
        return text_or_file(json.dumps(self.to_dict(), indent=indent), path, "Capacity.to_json")

    def to_pandas(self):
        """Every run of the search as a pandas DataFrame: the knob's value, seed, decision,
        horizon factor and metrics, one row per run (`records`)."""
        require("pandas", "Capacity.to_pandas()")
        return self.table.frame(self.table.keys())

    def plot(self, ax=None, path=None):
        """Each SLO metric against the knob (interval bars coloured by verdict), its bound
        as a line and the answer marked; one panel per metric. Points far beyond the
        bound (an overloaded system) are drawn as arrows at the top, so they do not
        squash the region that matters. Returns the axes (a list for several metrics)."""
        plt = require("matplotlib.pyplot", "Capacity.plot")
        metrics = list(dict.fromkeys(c.metric for c in self.conditions))
        if path is not None:
            _check_plot_path(path)
        if ax is None:
            _, grid = plt.subplots(len(metrics), 1, figsize=(6, 3.2 * len(metrics)), squeeze=False)
            axes = list(grid[:, 0])
        else:
            axes = _given_axes(ax, len(metrics))
        for a, metric in zip(axes, metrics):
            self._plot_metric(a, metric)
        if path is not None:
            axes[0].figure.savefig(path, bbox_inches="tight")
        return axes[0] if len(axes) == 1 else axes

    def _plot_metric(self, a, metric: str) -> None:
        colours = {MEETS: "tab:green", VIOLATES: "tab:red", UNDECIDED: "tab:orange"}
        bounds = [c.bound for c in self.conditions if c.metric == metric]
        points = sorted((p for p in self.points if metric in p.intervals), key=lambda p: p.value)
        top = 3 * max(bounds) if bounds and max(bounds) > 0 else math.inf
        verdict = {p.value: _metric_verdict(p, self.conditions, metric) for p in points}
        for decision, colour in colours.items():
            shown = [p for p in points if verdict[p.value] == decision and p.intervals[metric][0] <= top]
            beyond = [p for p in points if verdict[p.value] == decision and not p.intervals[metric][0] <= top]
            if shown:
                a.errorbar([p.value for p in shown], [p.intervals[metric][0] for p in shown],
                           yerr=[p.intervals[metric][1] for p in shown], fmt="o", color=colour, capsize=3,
                           label=decision)
            if beyond:
                a.plot([p.value for p in beyond], [top] * len(beyond), "^", color=colour,
                       label=None if shown else decision)
        for c in self.conditions:
            if c.metric == metric:
                a.axhline(c.bound, color="grey", linestyle="--", label=f"SLO: {c}")
        if self.value is not None:
            a.axvline(self.value, color="black", linestyle=":", label=f"{self.knob} = {self.value:g}")
        a.set_xlabel(self.knob)
        if self.integer:     # 4.5 replicas is no tick
            from matplotlib.ticker import MaxNLocator

            a.xaxis.set_major_locator(MaxNLocator(integer=True))
        a.set_ylabel(metric)
        a.legend(fontsize="small")


def _metric_verdict(point: Point, conditions, metric: str) -> str:
    """A point's verdict on one metric's panel: its conditions on that metric (a value that meets
    the p99 but violates the mean is green in the p99's panel), violating where its runs are not
    in steady state (overload shows in every panel)."""
    mine = [point.verdicts.get(str(c)) for c in conditions if c.metric == metric]
    if not point.stationary or VIOLATES in mine:
        return VIOLATES
    if mine and all(v == MEETS for v in mine):
        return MEETS
    return UNDECIDED


def _given_axes(ax, count: int) -> list:
    """`ax` as a list of `count` matplotlib Axes (one per SLO metric), or an SqError."""
    from matplotlib.axes import Axes

    axes = list(ax) if isinstance(ax, (list, tuple)) else [ax]
    if len(axes) != count or not all(isinstance(a, Axes) for a in axes):
        want = "a matplotlib Axes" if count == 1 else f"a list of {count} matplotlib Axes (one per metric)"
        raise SqError(f"Capacity.plot: ax is {want}, found {ax!r}", phase="settings")
    return axes


def _check_plot_path(path) -> None:
    """A file matplotlib can write, by its extension (not a folder: savefig would add `.png`)."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = tuple(sorted("." + e for e in FigureCanvasBase.get_supported_filetypes()))
    check_writable(path, "Capacity.plot", formats)


# -- the search -----------------------------------------------------------------

class _Search:
    """The probing and bisection over one knob; `evaluate(x)` returns a decided Point."""

    def __init__(self, knob: Knob, evaluate, tol: float, max_points: int):
        self.knob, self.evaluate, self.tol, self.max_points = knob, evaluate, tol, max_points
        self.points: dict = {}
        self.far: dict = {}         # worse (True/False) -> the last probe of a walk that ran out of steps

    def at(self, x) -> Point:
        if x not in self.points:
            if len(self.points) >= self.max_points:
                raise _OutOfPoints
            self.points[x] = self.evaluate(x)
        return self.points[x]

    def ends(self):
        """(m, v): the best value that meets below the first that violates (on the rank axis)."""
        rank = self.knob.rank
        bad = [x for x, p in self.points.items() if p.decision == VIOLATES]
        v = min(bad, key=rank) if bad else None
        good = [x for x, p in self.points.items() if p.decision == MEETS and (v is None or rank(x) < rank(v))]
        m = max(good, key=rank) if good else None
        return m, v

    def open_between(self, m, v) -> list:
        rank = self.knob.rank
        return sorted((x for x, p in self.points.items() if p.decision == UNDECIDED
                       and (m is None or rank(x) > rank(m)) and (v is None or rank(x) < rank(v))), key=rank)

    def walk(self, x, worse: bool, until: str) -> None:
        """Probe geometrically from x until a point's decision is `until`, the domain ends, after
        MAX_STEPS probes, or, toward more room, after UNSETTLED_STEPS unsettled probes in a row
        (more room that changes nothing blames the horizon, not the load)."""
        unsettled = 0
        for _ in range(MAX_STEPS):
            x = self.knob.step(x, worse)
            if x is None or self.at(x).decision == until or self.backwards():
                return
            unsettled = unsettled + 1 if self.points[x].unsettled else 0
            if not worse and unsettled >= UNSETTLED_STEPS:
                return
        self.far[worse] = x

    def backwards(self):
        """(meets, violates) when the verdicts run against the direction: a value meets on the
        worse side of one that violates (an unsettled one does not count: its runs, not its
        metrics, violate); else None."""
        rank = self.knob.rank
        bad = [x for x, p in self.points.items() if p.decision == VIOLATES and not p.unsettled]
        v = min(bad, key=rank) if bad else None
        good = [x for x, p in self.points.items() if p.decision == MEETS and v is not None and rank(x) > rank(v)]
        return (min(good, key=rank), v) if good else None

    def backwards_reason(self, m, v) -> str:
        knob = self.knob
        other = "min" if knob.direction == "max" else "max"
        side = {"max": "largest", "min": "smallest"}
        return (f"the verdicts run the other way from direction='{knob.direction}' (the {side[knob.direction]} "
                f"value that meets): {knob.name} = {m:g} meets the SLO and {v:g} violates it; give "
                f"direction='{other}' (--direction {other}) to search for the {side[other]}")

    def probe(self, lo, hi) -> None:
        """Find a value that meets and one that violates: the given ends, or geometric steps."""
        if lo is not None:
            self.at(lo), self.at(hi)
            return
        start = self.knob.start
        first = self.at(start).decision
        if first != VIOLATES:
            self.walk(start, worse=True, until=VIOLATES)
        if first != MEETS:
            self.walk(start, worse=False, until=MEETS)
        self.look_back(start, first)

    def look_back(self, start, first: str) -> None:
        """After a walk that ran out of steps without its flip, one probe the other way from the
        start: a flip there means the verdicts run against the direction (`backwards`)."""
        worse = first == VIOLATES
        if (not worse) in self.far and not self.backwards():
            x = self.knob.step(start, worse)
            if x is not None:
                self.at(x)

    def bisect(self) -> tuple[bool, str]:
        """Narrow the bracket; returns (confident, why the search stopped)."""
        knob, tol = self.knob, self.tol
        while True:
            m, v = self.ends()
            if m is None:
                return False, self.none_meets()
            if v is None:
                beyond = self.open_between(m, None)
                if beyond:
                    return False, (f"undecided at {', '.join(f'{u:g}' for u in beyond)} with the seeds allowed, "
                                   "and no value shown to violate the SLO")
                edge = knob.integer and knob.direction == "min" and m == 1
                return edge, ("the smallest possible value meets the SLO" if edge
                              else "no value tried violates the SLO" + self.out_to(True)
                              + ": the answer may lie further out")
            if knob.close(m, v, tol):
                return True, "the bracket is within the tolerance"
            undecided = self.open_between(m, v)
            x = self.flank(m, v, undecided) if undecided else knob.midpoint(m, v, tol)
            if x is None:
                return False, (f"undecided at {', '.join(f'{u:g}' for u in undecided)} with the seeds allowed, "
                               f"between {m:g} (meets) and {v:g} (violates): the SLO is too close to call "
                               "there (more seeds or a longer horizon would tell)")
            self.at(x)

    def none_meets(self) -> str:
        """Why no value meets: runs that never settled, however much room, or the probes' reach."""
        unsettled = sorted(x for x, p in self.points.items() if p.unsettled)
        if unsettled:
            # "more room too" only when it was seen: one value cannot tell the horizon from the load
            room = ", with more room too: lengthen" if len(unsettled) > 1 else ": lengthen"
            more = "" if len(unsettled) > 1 else ", or try more room,"
            return (f"no value tried meets the SLO: at {', '.join(f'{u:g}' for u in unsettled)} its metrics "
                    f"meet it but the runs are not stationary (sessions or queues still grow at the end){room} "
                    f"the warm-up and the horizon{more} until they settle")
        return "no value tried meets the SLO" + self.out_to(False)

    def out_to(self, worse: bool) -> str:
        """`, out to X (N doublings of the program's value); give lo and hi to search further` when
        the probes that way ran out of steps, else nothing."""
        if worse not in self.far:
            return ""
        up = worse == (self.knob.direction == "max")
        return (f", out to {self.far[worse]:g} ({MAX_STEPS} {'doublings' if up else 'halvings'} of the "
                "program's value; give lo and hi to search further)")

    def flank(self, m, v, undecided):
        """The next value to try around undecided points, or None when none can help.

        Bisecting toward an undecided point would land ever closer to the boundary,
        where no number of seeds decides; so around one undecided value of a real knob,
        try the two values a tolerance apart, which bracket it if both decide. When
        that fails too (the undecided band is about as wide as `tol`), or for whole
        numbers (nothing between neighbours), bisect the gaps on each side instead."""
        knob, tol = self.knob, self.tol
        first, last = undecided[0], undecided[-1]
        if knob.integer or len(undecided) > 1:
            if not knob.close(m, first, tol):
                return knob.midpoint(m, first, tol)
            if not knob.close(last, v, tol):
                return knob.midpoint(last, v, tol)
            return None
        half = 0.45 * tol * abs(first)     # so the two flanks are within tol of each other
        good, bad = sorted((clean(first - half, tol), clean(first + half, tol)), key=knob.rank)
        rank = knob.rank
        if rank(m) < rank(good) < rank(first):
            return good
        if rank(last) < rank(bad) < rank(v):
            return bad
        return None


class _OutOfPoints(Exception):
    pass


def search(knob: Knob, evaluate, *, lo=None, hi=None, tol: float = 0.02, max_points: int = 40):
    """Run the search; returns (value, bracket, confident, reason, points in order tried)."""
    s = _Search(knob, evaluate, tol, max_points)
    turned = None
    try:
        s.probe(lo, hi)
        turned = s.backwards()      # checked once the probes are in, not on bisection's noise
        confident, reason = (False, s.backwards_reason(*turned)) if turned else s.bisect()
    except _OutOfPoints:
        confident, reason = False, f"stopped after {max_points} points"
    m, v = (None, None) if turned else s.ends()
    return m, (m, v), confident, reason, list(s.points.values())


# -- the entry point --------------------------------------------------------------

def capacity(program, knob: str, slo, *, lo=None, hi=None, seeds=range(1, 11), confidence: float = 0.95,
             tol: float = 0.02, direction: str | None = None, executor=None, jobs=None, cache=None,
             horizon=None, warmup=None, arrivals=None, progress=None, max_seeds: int | None = None,
             max_points: int = 40, on_point=None, settle: int = SETTLE) -> Capacity:
    """The largest value of the `let` `knob` (a load) or the smallest (a deployment size)
    at which every condition of `slo` holds, judged on `confidence` intervals over `seeds`.

    A point whose interval straddles a bound gets more seeds (doubling, up to `max_seeds`,
    default 4x) and is otherwise undecided; `on_point(point)` is called as each is decided.
    A point whose runs may still grow is run again 4 times longer, up to `settle` times the
    horizon (1: never), before its verdict counts. The other keywords are those of `sq.sweep`.

    program: a .sq path or a Program from `sq.compile`. knob: a `let` of it. slo: one
    condition or a list (`"ttft.p99 <= 0.5"`, `"wait.le(1) >= 0.9"`). lo, hi: both or
    neither (probes from the program's own value). seeds: at least two, checked once.
    direction: "max" or "min" (None: told from the program). tol: the bracket's relative
    width. Each value is compiled once (`sq.study.plan.Plan`) and grows its seeds on that
    plan. Returns a `Capacity`; bad input is an SqError before any run; a Ctrl-C raises
    KeyboardInterrupt with what was found as its `capacity` attribute.
    """
    from sq.results.confidence import check_level
    from sq.results.metrics import check_metrics
    from sq.study.sweep import compile_point

    if not isinstance(program, (str, os.PathLike)):
        compiled_from(program, "capacity")      # refused as sq.sweep refuses it: no `let`s to vary
    run_settings = dict(horizon=horizon, warmup=warmup, arrivals=arrivals)
    base = compile_point(program, {}, run_settings)
    conditions = parse_slo(slo, known=lambda metric: check_metrics([metric], base))
    seeds = seed_list(seeds, "capacity")
    if len(seeds) < 2:
        raise SqError("capacity: give at least two seeds (an interval needs two runs)", phase="settings")
    check_level(confidence, "capacity")
    if not (isinstance(tol, (int, float)) and 0 < tol < 1):
        raise SqError(f"capacity: tol is a relative width between 0 and 1, found {tol!r}", phase="settings")
    _check_ends(lo, hi)
    max_points = _whole("max_points", max_points, "the most values tried, a whole number of at least 1")
    cap = 4 * len(seeds) if max_seeds is None else _whole("max_seeds", max_seeds,
                                                          "the most seeds at one point, a whole number")
    if cap < len(seeds):
        raise SqError(f"capacity: max_seeds ({cap}) is below the number of seeds ({len(seeds)})",
                      phase="settings")
    settle = _whole("settle", settle, "the longest horizon as a multiple of the given one, a whole number")
    if on_point is not None and not callable(on_point):     # before any run, not after the first point
        raise SqError(f"capacity: on_point is a function called with each Point, found {on_point!r}",
                      phase="settings")
    if cache is not None:       # (an empty one, refused by every run, would read as a run that failed)
        path_argument(cache, "capacity: cache")
    k = resolve_knob(base, knob, direction, lo, hi)
    if k.integer and lo is not None:
        lo, hi = int(lo), int(hi)
    records = RunTable([knob])
    run = _point_runner(program, knob, conditions, seeds, cap, confidence, settle, records, on_point, lo is not None,
                        dict(horizon=horizon, warmup=warmup, arrivals=arrivals, cache=cache, progress=progress,
                             metrics=[c.metric for c in conditions]))
    decided: list[Point] = []

    def evaluate(x, ex) -> Point:
        point = run(x, ex)
        decided.append(point)
        return point

    try:
        with _executor(executor, jobs) as ex:
            value, bracket, confident, reason, points = search(k, lambda x: evaluate(x, ex), lo=lo, hi=hi,
                                                               tol=tol, max_points=max_points)
    except KeyboardInterrupt as stop:
        _interrupted(stop, k, conditions, confidence, tol, decided, records)
        raise
    if confident:
        confident, reason = _growth_only(k, bracket, points) or (confident, reason)
    return Capacity(knob, k.direction, k.integer, conditions, confidence, tol,
                    value, bracket, confident, reason, points, records, _provenance(program, seeds, run_settings))


def _provenance(program, seeds, run_settings: dict) -> dict:
    """What made the search's runs: the study's provenance (program, overrides, defs, sq's version
    and build), its seeds and the run settings given (None: each value's program's own)."""
    from sq.study.sweep import study_provenance

    return study_provenance(program, seeds, [run_settings], ())


def _interrupted(stop: KeyboardInterrupt, knob: Knob, conditions, confidence, tol, decided, records) -> None:
    """Ctrl-C during a search: the interrupt carries, as `.capacity`, what was found so far --
    every decided value and its runs, and the finished runs of the value being judged (from the
    sweep's own interrupt; their decision "interrupted") -- never confident."""
    partial = getattr(stop, "sweep", None)
    if partial is not None:
        records.extend(partial.table, decision="interrupted")
    s = _Search(knob, None, tol, len(decided))
    s.points = {p.value: p for p in decided}
    m, v = s.ends()
    reason = (f"interrupted after {len(decided)} values decided; {len(records)} runs kept "
              "(in .records; with a cache, a rerun computes only what is missing)")
    stop.capacity = Capacity(knob.name, knob.direction, knob.integer, conditions, confidence, tol, m, (m, v),
                             False, reason, list(decided), records)


def _growth_only(knob: Knob, bracket, points) -> tuple[bool, str] | None:
    """(False, why) when the bracket's violating end violates only because its runs still grew
    at the longest horizon, by growth that slowed when they ran longer: a load that settles
    slowly cannot be told there from an overload, so the answer may lie beyond it."""
    m, v = bracket
    point = next((p for p in points if p.value == v), None)
    if point is None or point.stationary or VIOLATES in point.verdicts.values() or point.persistent:
        return None
    longest = ", ".join(f"{k} {x:g}" for k, x in (point.horizon or {}).items()) or "the horizon given"
    return False, (f"{knob.name} = {v:g} violates only because its runs still grow at {longest}, and the "
                   "growth slowed as they ran longer: a load that settles slowly cannot be told from an "
                   f"overload there, so the answer may lie beyond {v:g} (a longer horizon, or settle=, would tell)")


def _check_ends(lo, hi) -> None:
    for name, v in (("lo", lo), ("hi", hi)):
        if v is not None and not (is_number(v) and math.isfinite(v)):
            raise SqError(f"capacity: {name} is a finite number, found {v!r}", phase="settings")
    if (lo is None) != (hi is None) or (lo is not None and not lo < hi):
        raise SqError("capacity: give both lo and hi, with lo < hi, or neither", phase="settings")


def _whole(name: str, value, what: str) -> int:
    """A count given to capacity: a Python or numpy integer (not a bool) of at least 1."""
    if not is_count(value):
        raise SqError(f"capacity: {name} is {what}, found {value!r}", phase="settings")
    return int(value)


def _point_runner(program, knob, conditions, seeds, cap, confidence, settle, records, on_point, ranged,
                  sweep_args):
    """`run(x, executor)`: the runs at one value. Seeds are added while the verdict is open;
    a point whose runs may still grow (`Steadiness.suspect`) and does not already violate is
    run again SETTLE_STEP times longer, up to `settle` times the horizon, before its verdict
    counts; growth still there at the longest is a violation. The error 1 - confidence is
    spent over the horizon levels (`level_shares`), the looks (`planned_looks`) and the
    conditions (`look_level`)."""
    from sq.study.plan import Plan, compile_point
    from sq.study.sweep import run_plan

    help_ = ("help: narrow lo and hi to values where the program runs" if ranged
             else "help: give lo and hi to keep the search where the program runs")
    levels = horizon_levels(settle)
    looks = planned_looks(len(seeds), cap)
    drifts = _drift_columns(conditions)
    given = {k: sweep_args[k] for k in ("horizon", "warmup", "arrivals")}
    servers = one_server_stages(compile_point(program, {}, given).to_dict())
    observes = [column.rpartition(".")[0] for column, _ in drifts]
    extra = [*sweep_args["metrics"], *(column for column, _ in drifts), *(f"{o}.mser" for o in observes)]

    @contextlib.contextmanager
    def cannot_run(x):
        try:
            yield
        except SqError as err:
            raise SqError(f"capacity: {knob} = {x:g} cannot run: {err.message}", phase=err.phase,
                          notes=(*err.notes, help_)) from None

    def plan_at(x, settings_) -> Plan:
        """The value's one plan at these run settings: compiled once, whatever seeds it gets."""
        with cannot_run(x):
            return Plan(program, [{knob: x}], **settings_, metrics=extra)

    def runs_at(plan, x, batch, executor) -> RunTable:
        with cannot_run(x):
            return run_plan(plan, batch, executor=executor, cache=sweep_args["cache"],
                            progress=sweep_args["progress"]).table

    def at_level(x, executor, plan, share: float, last: bool) -> tuple[Point, RunTable]:
        level = look_level(confidence, looks, len(conditions), share)
        rows = RunTable([knob])
        batch = seeds
        while True:
            rows.extend(runs_at(plan, x, batch, executor))
            steady = steadiness(rows, drifts, servers)
            # before the longest run only suspect growth sends the point on; there, it is judged
            point = judge(x, rows, conditions, level, steady if last else _calm(steady),
                          level=(1.0 - confidence) / 2.0)
            point.steadiness = steady
            if point.decision != OPEN:
                break
            if len(rows) >= cap:
                point.decision = UNDECIDED
                break
            batch = more_seeds(rows.values("seed"), min(len(rows), cap - len(rows)))
        return point, rows

    def run(x, executor) -> Point:
        kept = RunTable([knob])
        previous = None
        base = plan_at(x, given)
        for factor, share in zip(levels, level_shares(len(levels))):
            last = factor == levels[-1]
            settings_ = given if factor == 1 else _longer(base.settings[0], factor)
            plan = base if factor == 1 else plan_at(x, settings_)
            point, rows = at_level(x, executor, plan, share, last)
            point.horizon = None if factor == 1 else {k: v for k, v in settings_.items() if v is not None}
            kept.extend(rows, horizon_factor=factor)
            growth = point.steadiness.growth
            point.persistent = previous is not None and growth > 0 and growth >= PERSISTS * previous
            previous = growth
            if last or point.decision == VIOLATES or not point.steadiness.suspect():
                break
        point.warnings = _advice(rows, conditions, observes, plan.settings[0])
        records.extend(kept, decision=point.decision)
        if on_point is not None:
            on_point(point)
        return point

    return run


def _calm(steady: Steadiness) -> Steadiness:
    """A point's steadiness with nothing that makes it violate: before the longest run,
    growth only sends a point that does not violate by its metrics to a longer run."""
    return Steadiness(steady.runs, 0, steady.edge, steady.growth, math.nan, math.nan)


def _drift_columns(conditions) -> list[tuple[str, float]]:
    """(`OBS.drift`, sign) for each observe an SLO condition reads: +1 where a rising mean is
    worse (`<=`, and the share `OBS.le(X)`, which falls as the samples rise), else -1."""
    out: dict[str, float] = {}
    for c in conditions:
        observe, _, field_ = c.metric.partition(".")
        if c.metric.startswith(("stage.", "pool.")) or not field_ or "." in observe:
            continue
        sign = 1.0 if c.wants_small or field_.startswith("le(") else -1.0
        out.setdefault(f"{observe}.drift", sign)
    return list(out.items())


def _longer(now: dict, factor: int) -> dict:
    """The run settings `factor` times longer than those in effect at a value (`now`: its plan's
    horizon, warm-up and arrivals, given or the program's own): all three alike."""
    horizon, arrivals = float(now["horizon"]), now["arrivals"]
    return {"horizon": horizon * factor if math.isfinite(horizon) else horizon,
            "warmup": float(now["warmup"]) * factor, "arrivals": None if arrivals is None else int(arrivals) * factor}


def _advice(rows, conditions, observes, run: dict) -> list[str]:
    """A point's warnings: quantile SLO metrics on too few tail samples, warm-ups too short."""
    from sq.study.sweep import tail_advice, warmup_advice

    horizon, warmup = run["horizon"], run["warmup"]
    if not math.isfinite(horizon):
        return []
    found = [tail_advice(rows, c.metric, horizon, warmup) for c in dict.fromkeys(conditions)]
    found += [warmup_advice(rows, o, horizon, warmup) for o in observes]
    return [w for w in dict.fromkeys(found) if w]


@contextlib.contextmanager
def _executor(executor, jobs):
    """One executor for the whole search: the pool `sq.sweep` would start and stop at every
    point (worker processes take a second or more to start) is started here once and handed
    to each point's sweep as a `concurrent.futures.Executor`."""
    from concurrent.futures import ThreadPoolExecutor

    from sq.study.executors import Executor as Where, owned, process_pool

    chosen = Where(executor, jobs, "capacity")        # the sweep's own checks of executor and jobs
    if not isinstance(chosen.kind, str):
        yield chosen.kind
        return
    if chosen.kind == "serial" or chosen.jobs == 1:
        yield "serial"
        return
    pool = ThreadPoolExecutor(chosen.jobs) if chosen.kind == "threads" else process_pool(chosen.jobs)
    with owned(pool, "capacity"):
        yield pool

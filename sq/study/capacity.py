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
from sq.study.slo import MEETS, OPEN, VIOLATES, Condition, parse_slo
from sq._support.settings import is_count, is_number
from sq.results.steady import in_steady_state
from sq.study.sweep import compiled_from, json_cell, seed_list

UNDECIDED = "undecided"
DIRECTIONS = ("max", "min")
MAX_STEPS = 8       # geometric probes in one direction (x256): further out, give lo and hi
UNSETTLED_STEPS = 2  # probes toward more room that stay unsettled before the horizon is blamed


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

    @property
    def unsettled(self) -> bool:
        """Not stationary, although every condition's interval met it: an overload just begun,
        or a warm-up or horizon too short for the model to settle (then more room changes nothing)."""
        return not self.stationary and set(self.verdicts.values()) == {MEETS}

    def to_dict(self) -> dict:
        return {"value": self.value, "decision": self.decision, "n": len(self.seeds), "seeds": self.seeds,
                "stationary": self.stationary,
                "metrics": {m: {"mean": json_cell(a), "half_width": json_cell(h)}
                            for m, (a, h) in self.intervals.items()},
                "conditions": dict(self.verdicts)}

    def describe(self, knob: str) -> str:
        """One line: the value, each metric as mean ± half-width over n seeds, the verdict."""
        parts = [f"{m} {a:.6g} ± {h:.2g}" for m, (a, h) in self.intervals.items()]
        note = "" if self.stationary else ", not stationary"
        return f"{knob} = {self.value:g}: {', '.join(parts)} (n={len(self.seeds)}{note}) -> {self.decision}"


def judge(value, rows: list[dict], conditions, confidence: float) -> Point:
    """A point's verdict from its runs: every condition's interval on the good side meets;
    one on the bad side, or any run that is not stationary, violates; else it stays open.
    (Growth is overload, whatever the means say: they describe the horizon, not the system;
    the search itself notices growth that more room does not remove, see `_Search.walk`.)"""
    from sq.results.confidence import t_interval

    stationary = all(in_steady_state(row) for row in rows)
    intervals, verdicts = {}, {}
    for c in conditions:
        values = [float(row[c.metric]) for row in rows]
        intervals[c.metric] = t_interval(values, confidence)
        verdicts[str(c)] = c.judge(*intervals[c.metric])
    states = set(verdicts.values())
    if not stationary or VIOLATES in states:
        decision = VIOLATES
    elif states == {MEETS}:
        decision = MEETS
    else:
        decision = OPEN
    return Point(value, decision, [row["seed"] for row in rows], intervals, verdicts, stationary)


def more_seeds(seeds: list[int], count: int) -> list[int]:
    """`count` seeds after the largest used, the same at every point (common random numbers)."""
    top = max(seeds)
    return list(range(top + 1, top + 1 + count))


# -- the record -----------------------------------------------------------------

@dataclass
class Capacity:
    """The answer of a capacity search and the evidence behind it."""

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
    records: list[dict] = field(repr=False)   # every run: the knob, seed, metrics and the point's decision

    @property
    def slo(self) -> tuple[str, ...]:
        return tuple(str(c) for c in self.conditions)

    @property
    def runs(self):
        """Every run of every point as a pandas DataFrame (with its point's decision)."""
        return require("pandas", "Capacity.runs").DataFrame.from_records(self.records)

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
                "points": [p.to_dict() for p in self.points],
                "runs": [{k: json_cell(v) for k, v in r.items()} for r in self.records]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

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
        for decision, colour in colours.items():
            shown = [p for p in points if p.decision == decision and p.intervals[metric][0] <= top]
            beyond = [p for p in points if p.decision == decision and not p.intervals[metric][0] <= top]
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
        a.set_ylabel(metric)
        a.legend(fontsize="small")


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

    from sq._support.files import path_argument, writable

    formats = tuple(sorted("." + e for e in FigureCanvasBase.get_supported_filetypes()))
    writable(path_argument(path, "Capacity.plot"), "Capacity.plot", formats)


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
             max_points: int = 40, on_point=None) -> Capacity:
    """The largest value of the `let` `knob` (a load) or the smallest (a deployment size)
    at which every condition of `slo` holds, judged on `confidence` intervals over `seeds`.

    A point whose interval straddles a bound gets more seeds (doubling, up to `max_seeds`,
    default 4x) and is otherwise undecided; `on_point(point)` is called as each is decided.
    The other keywords are those of `sq.sweep`.
    """
    from sq.results.confidence import check_level
    from sq.results.metrics import check_metrics
    from sq.study.sweep import compile_point

    if not isinstance(program, (str, os.PathLike)):
        compiled_from(program, "capacity")      # refused as sq.sweep refuses it: no `let`s to vary
    base = compile_point(program, {})
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
    if on_point is not None and not callable(on_point):     # before any run, not after the first point
        raise SqError(f"capacity: on_point is a function called with each Point, found {on_point!r}",
                      phase="settings")
    k = resolve_knob(base, knob, direction, lo, hi)
    if k.integer and lo is not None:
        lo, hi = int(lo), int(hi)
    records: list[dict] = []
    run = _point_runner(program, knob, conditions, seeds, cap, confidence, records, on_point, lo is not None,
                        dict(horizon=horizon, warmup=warmup, arrivals=arrivals, cache=cache, progress=progress,
                             metrics=[c.metric for c in conditions]))
    with _executor(executor, jobs) as ex:
        value, bracket, confident, reason, points = search(k, lambda x: run(x, ex), lo=lo, hi=hi, tol=tol,
                                                           max_points=max_points)
    return Capacity(knob, k.direction, k.integer, conditions, confidence, tol,
                    value, bracket, confident, reason, points, records)


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


def _point_runner(program, knob, conditions, seeds, cap, confidence, records, on_point, ranged, sweep_args):
    """`run(x, executor)`: the runs at one value, seeds added while the verdict is open."""
    from sq.study.sweep import sweep

    help_ = ("help: narrow lo and hi to values where the program runs" if ranged
             else "help: give lo and hi to keep the search where the program runs")

    def run(x, executor) -> Point:
        rows: list[dict] = []
        batch = seeds
        while True:
            try:
                rows += sweep(program, [{knob: x}], batch, executor=executor, **sweep_args).records
            except SqError as err:
                raise SqError(f"capacity: {knob} = {x:g} cannot run: {err.message}", phase=err.phase,
                              notes=(*err.notes, help_)) from None
            point = judge(x, rows, conditions, confidence)
            if point.decision != OPEN:
                break
            if len(rows) >= cap:
                point.decision = UNDECIDED
                break
            batch = more_seeds([r["seed"] for r in rows], min(len(rows), cap - len(rows)))
        records.extend({**r, "decision": point.decision} for r in rows)
        if on_point is not None:
            on_point(point)
        return point

    return run


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

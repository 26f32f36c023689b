"""A study's plan: its points checked and compiled once, and the small tasks that run them.

`Plan(program, grid, horizon=, warmup=, arrivals=, metrics=)` checks the grid, compiles each
point once (with the study's run settings applied before linking, as `sq run --horizon` does),
window by window as its runs are reached (`WINDOW`), and checks the metrics asked for at every
point. `plan.tasks(seeds)` makes one `Task` per
(point, seed): the point's index, the seed and a reference to the point's IR (`PointIR`), which
pickles as its digest only -- the IR itself travels once per worker (`Executor.run`'s `shared`:
the process pool's initializer, Dask's `scatter`), not once per run. `sq.sweep` runs a plan
once; `sq.capacity` runs one plan per value of its knob, batch after batch of seeds, never
compiling the point again; `sq sweep` makes its plan before any scheduler is reached.
"""
from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import numbers
import os
from dataclasses import dataclass

from sq._support import settings
from sq._support.deep import run_deep
from sq._support.files import build_fingerprint
from sq.errors import SqError
from sq.results import metrics as sq_metrics


WINDOW = 64     # points compiled ahead of their runs: a larger grid compiles window after window


class Plan:
    """A study's points, checked and compiled once, window by window.

    `points` ({name: value} each, in grid order), `names` (the swept names), `extra` (the
    observe metrics asked for beyond every run's own). A plan of up to WINDOW points compiles
    and checks every point when it is made, so every error comes before any run; a larger one
    compiles the first WINDOW then, and each further window when its first run is scheduled
    (`compile_upto`, which `run_plan` calls): a grid of a million points never holds a million
    programs, and an interrupted study compiled only what it reached. What the compiled points
    hold: `programs` (one compiled Program each), `irs` (one `PointIR` each: the IR the workers
    run, the run settings written in), `settings` (horizon, warmup and arrivals in effect),
    `metric_columns` (what a run's record holds, over those points); `compiled` counts them
    (`compile_all()` compiles the rest). Seeds are not part of a plan: `tasks(seeds)` makes the
    runs of any list of checked seeds (`seed_list`) for the compiled points, so seeds can be
    added to a point without compiling it again.
    """

    def __init__(self, program, grid=None, *, horizon=None, warmup=None, arrivals=None, metrics=None,
                 seeds: list[int] | None = None):
        self.program = program
        self.points, self.names = grid_points(grid)
        if seeds is not None:   # the study's size, before any point is compiled
            check_runs(len(self.points), len(seeds), "sweep")
        # 300 and 300.0 are one setting (as they are one IR, and one cache key)
        horizon, warmup = (float(x) if isinstance(x, int) and not isinstance(x, bool) else x
                           for x in (horizon, warmup))
        self._run = dict(horizon=horizon, warmup=warmup, arrivals=arrivals)
        self._metrics = metrics or ()
        self.extra: tuple[str, ...] = ()
        self.programs, self.irs, self.settings = [], [], []
        self._columns: dict[str, None] = {}
        self.compile_upto(WINDOW)

    @property
    def compiled(self) -> int:
        return len(self.programs)

    def compile_upto(self, n: int) -> None:
        """Compile and check the points before index n (those not compiled yet)."""
        for i in range(self.compiled, min(n, len(self.points))):
            point = self.points[i]
            p = compile_point(self.program, point, self._run)
            checked = _metrics_at(self._metrics, p, point if i else None)
            if i == 0:
                self.extra = tuple(m.name for m in checked if m.observe is not None)
            d = _ir_dict(p, self._run["horizon"], self._run["warmup"], self._run["arrivals"])
            self.programs.append(p)
            self.irs.append(PointIR(run_deep(json.dumps, d, separators=(",", ":"))))
            self.settings.append({"horizon": d["horizon"], "warmup": d.get("warmup", 0.0),
                                  "arrivals": d.get("arrivals")})
            # a point's arrays may be larger than the first point's: every point's metrics
            self._columns.update(dict.fromkeys(sq_metrics.program_metric_names(d)))

    def compile_all(self) -> None:
        self.compile_upto(len(self.points))

    @property
    def metric_columns(self) -> list[str]:
        return [*self._columns, *dict.fromkeys(self.extra)]

    def __repr__(self) -> str:
        return f"Plan(names={self.names}, points={len(self.points)}, metrics={len(self.metric_columns)})"

    def tasks(self, seeds: list[int], points=None) -> list[Task]:
        """One task per (point, seed), point by point (seeds checked by `seed_list`), for the
        compiled points, or for the indices `points` (compiled)."""
        points = range(self.compiled) if points is None else points
        return [Task(i, seed, self.irs[i], self.extra) for i in points for seed in seeds]

    def shared(self, points=None) -> dict[str, str]:
        """What every worker needs once: each point's IR text by its digest (of the compiled
        points, or of the indices `points`)."""
        points = range(self.compiled) if points is None else points
        return {self.irs[i].digest: self.irs[i].text for i in points}

    def provenance(self, seeds: list[int]) -> dict:
        return study_provenance(self.program, seeds, self.settings, self.extra)

    def label(self, task: Task) -> tuple[dict, int]:
        return self.points[task.point], task.seed


# -- tasks ----------------------------------------------------------------------------

_SHIPPED: dict[str, str] = {}   # in a worker process: the IRs its pool's initializer received (`ship`)


def ship(irs: dict[str, str]) -> None:
    """Keep a study's IRs in this (worker) process, for the tasks that name them by digest."""
    _SHIPPED.clear()
    _SHIPPED.update(irs)


class PointIR:
    """A point's IR text, which pickles as its digest alone: the text goes to a worker once
    (`ship`, or `attach` beside a task), where a task's `ir.text` finds it."""

    __slots__ = ("digest", "_text")

    def __init__(self, text: str | None, digest: str | None = None):
        self._text = text
        self.digest = digest or hashlib.sha256(text.encode()).hexdigest()

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = _SHIPPED.get(self.digest)
            if self._text is None:
                raise SqError("a study's task reached a worker without its point's IR", phase="run")
        return self._text

    def attach(self, text: str) -> None:
        self._text = text

    def __reduce__(self):
        return (PointIR, (None, self.digest))

    def __eq__(self, other) -> bool:
        return isinstance(other, PointIR) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)


def attach(text: str, fn, task: Task):
    """Run `fn(task)` with the point's IR handed over beside the task (an executor that has
    no per-worker start: Dask passes a scattered IR here, resolved on the worker)."""
    task.ir.attach(text)
    return fn(task)


@dataclass(frozen=True)
class Task:
    """What a worker needs to run one (point, seed): small and picklable (the IR by reference)."""

    point: int                  # the point's index in its plan
    seed: int
    ir: PointIR                 # the point's IR, the study's run settings in it
    extra: tuple[str, ...]

    @property
    def ir_json(self) -> str:
        return self.ir.text


def run_task(task: Task) -> dict:
    """Run one task; the metrics record, or for a run sq refuses {"error": text, "phase": ...,
    "notes": [...]}: the error's parts, so it keeps them when it crosses a worker.

    `sq.run` of the point's program with the task's seed: lowered once per point and
    worker (`_lowered`), then run with the seed, which the engine reads only at the start.
    """
    import time  # noqa: PLC0415

    from sq.engine.run import run_lowered  # noqa: PLC0415

    try:
        started = time.perf_counter()
        lowered = _lowered(task.ir_json)
        report = run_lowered(lowered, seed=task.seed, started=started)
        return sq_metrics.report_metrics(report, task.extra)
    except SqError as err:
        bare = SqError(err.message, err.span, source=err.source, phase=err.phase)
        return {"error": bare.render(), "phase": err.phase, "notes": list(err.notes)}


def record_names(task: Task) -> list[str]:
    """The keys of a run's record, in order: every metric of the point's program, then the
    extra ones asked for."""
    return [*_program_metric_names(task.ir_json), *dict.fromkeys(task.extra)]


@functools.lru_cache(maxsize=4)
def _program_metric_names(ir_json: str) -> tuple[str, ...]:
    return tuple(sq_metrics.program_metric_names(run_deep(json.loads, ir_json)))


@functools.lru_cache(maxsize=4)
def _lowered(ir_json: str):
    """The lowered program of a point; tasks come point by point, so a small cache hits."""
    from sq.engine.run import lower_program  # noqa: PLC0415

    return lower_program(run_deep(json.loads, ir_json))



def _metrics_at(metrics, program, point: dict | None) -> list:
    """The metrics asked for, checked against one point's program (a pool `kv[2]` exists only
    where the array has three members): an SqError naming the point (None: the first, which
    needs no name: its error is the plain one)."""
    try:
        return sq_metrics.check_metrics(metrics, program)
    except SqError as err:
        if point is None:
            raise
        raise SqError(f"{err.message} at {_describe(point)}", phase="settings", notes=err.notes) from None



# -- the points -----------------------------------------------------------------------

def _describe(point: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items()) or "the program's own values"


def grid_points(grid) -> tuple[list[dict], list[str]]:
    """The points of a grid ({name: [values]}: the cartesian product, first name slowest)
    or of a list of {name: value} points; and the swept names in order."""
    if grid is None:
        grid = {}
    if isinstance(grid, dict):
        names = list(grid)
        _check_names(names)
        values = []
        for name in names:
            vs = grid[name]
            vs = list(vs) if isinstance(vs, (list, tuple, range)) or hasattr(vs, "tolist") else [vs]
            if not vs:
                raise SqError(f"sweep: `{name}` has no values", phase="settings")
            values.append(distinct_values(name, [_value(name, v) for v in vs]))
        check_points(math.prod(len(v) for v in values), " × ".join(str(len(v)) for v in values))
        return [dict(zip(names, combo)) for combo in itertools.product(*values)], names
    points = list(itertools.islice(grid, MAX_POINTS + 1))
    check_points(len(points), "given")
    if not points or not all(isinstance(p, dict) for p in points):
        raise SqError("sweep: the grid is {name: [values]} or a non-empty list of {name: value} points",
                      phase="settings")
    names = list(dict.fromkeys(n for p in points for n in p))
    _check_names(names)
    points = [{n: _value(n, v) for n, v in p.items()} for p in points]
    _distinct_points(points, names)
    return points, names


MAX_POINTS = 20_000     # every point is compiled (its IR kept) before the first run


def check_points(count: int, how: str) -> None:
    """A study of more than MAX_POINTS points is refused before any is compiled: its programs
    alone would fill the memory (two ranges of 1,000 values grew past 1.4 GB)."""
    if count > MAX_POINTS:
        raise SqError(f"sweep: the grid has {count} points ({how}), more than {MAX_POINTS}: every point is "
                      "compiled before the first run", phase="settings",
                      notes=("help: split the study into smaller grids, or sweep fewer values",))


def check_runs(points: int, seeds: int, who: str) -> None:
    """The runs of a study (points × seeds), at most settings.MAX_VALUES: refused before any run."""
    settings.at_most(points * seeds, f"runs ({points} points × {seeds} seeds)", who)


def _distinct_points(points: list[dict], names: list[str]) -> None:
    seen = set()
    for p in points:
        key = tuple(_same_value(p.get(n)) for n in names)
        if key in seen:
            raise SqError(f"sweep: the point {_describe(p)} is given twice; {REPEAT_WHY}", phase="settings")
        seen.add(key)


# the summary groups runs by point: a point run twice would count each seed's run twice
REPEAT_WHY = "its runs would count twice in the interval"


def distinct_values(name: str, values: list, who: str = "sweep") -> list:
    """The values of one swept `let`, checked to be distinct (5 and 5.0 are one value); `who`
    starts the error: `sweep` or the flag as typed (`--set lam=5,5`)."""
    seen: dict = {}
    for v in values:
        key = _same_value(v)
        if key not in seen:
            seen[key] = v
        else:
            first = seen[key]
            spelled = f" (as {first!r} and {v!r})" if repr(first) != repr(v) else ""
            raise SqError(f"{who}: `{name}` is given the value {first!r} twice{spelled}; {REPEAT_WHY}",
                          phase="settings")
    return values


def _same_value(v):
    """What makes two values of a `let` one point: numbers by value, text as a number when it
    is one, else by its words."""
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return v.strip()
    return v


def _check_names(names) -> None:
    """A swept name is a column beside `seed` and the run metrics: it may not be one of them."""
    for name in names:
        if name == "seed" or name in sq_metrics.RUN_FIELDS:
            raise SqError(f"sweep: `{name}` is a column of every run's record; a swept `let` cannot be called so",
                          phase="settings")
        if name in SUMMARY_COLUMNS:
            raise SqError(f"sweep: `{name}` is a column of the sweep's summary; a swept `let` cannot be called so",
                          phase="settings")


SUMMARY_COLUMNS = ("n", "unsteady")   # what a summary row holds beside the swept names and the metrics


def _value(name: str, v):
    if settings.is_number(v):
        return settings.plain(v)    # a numpy scalar as Python's own number
    if not isinstance(v, str):
        raise SqError(f"sweep: the value of `{name}` must be a number or an expression (text), found {v!r}",
                      phase="settings")
    return v


SEED_RULE = f"seeds are distinct, each {settings.SEED_RANGE}"   # each one settings.is_u64


def seed_list(seeds, who: str = "sweep") -> list[int]:
    """The seeds of a study, checked: one whole number or an iterable of distinct ones from 0
    to 2^64-1 (numpy integers too; not bools, floats or text). `who` starts the error: the
    API's name (`sweep`, `capacity`) or the flag as typed (`--seeds 1,1`)."""
    if isinstance(seeds, numbers.Integral):
        seeds = [seeds]
    elif isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise SqError(f"{who}: {SEED_RULE}, found {seeds!r}", phase="settings")
    count = _length(seeds)
    if count is not None:  # before a list is built: range(2**64) would fill the memory
        settings.at_most(count, "seeds", who)
    out: list[int] = []
    if count is None:   # an iterator (a generator may never end): read at most one past the cap
        seeds = list(itertools.islice(seeds, settings.MAX_VALUES + 1))
        settings.at_most(len(seeds), "seeds", who)
    for s in seeds:
        if not settings.is_u64(s):
            raise SqError(f"{who}: {SEED_RULE}, found {s!r}", phase="settings")
        out.append(int(s))
    if not out:
        raise SqError(f"{who}: no seeds", phase="settings")
    if len(set(out)) != len(out):
        twice = next(s for s in out if out.count(s) > 1)
        raise SqError(f"{who}: {SEED_RULE}; {twice} is given twice", phase="settings")
    return out


def _length(values) -> int | None:
    """How many values a range or a sized collection holds, without listing them; None for
    an iterator. (len() of a range longer than sys.maxsize raises OverflowError.)"""
    if isinstance(values, range):
        return max(0, -((values.start - values.stop) // values.step))
    try:
        return len(values)
    except TypeError:
        return None


def compile_point(program, point: dict, run: dict | None = None):
    """The program with the point's `let` values: `sq.compile(path, sets=point, **run)`, or a
    compiled Program compiled again from what it was compiled from with the point's values
    added. `run` holds the study's horizon, warmup and arrivals (None: the program's own):
    they apply before linking, as `sq run --horizon` does, so a program without
    `run { horizon T; }` can be studied."""
    from sq.frontend.compile import compile_program  # noqa: PLC0415

    given = {k: v for k, v in (run or {}).items() if v is not None}
    if isinstance(program, (str, os.PathLike)):
        return compile_program(program, sets=point, **given)
    check_program(program, "sweep")
    if not point:       # compiled with a horizon: the settings are written into its IR (`_ir_dict`)
        return program
    origin = compiled_from(program, "sweep")
    return compile_program(origin["path"], **{k: v for k, v in origin.items() if k != "path"}
                           | {"sets": {**origin["sets"], **point}} | given)


def compiled_from(program, who: str) -> dict:
    """The arguments of `sq.compile` that made `program`, to compile it again with other
    `let` values; a program read from an IR (`sq.load`) has none."""
    check_program(program, who)
    origin = getattr(program, "compiled_from", None)
    if origin is None:
        raise SqError(f"{who}: a program read from an IR has no `let`s to vary; give the .sq file",
                      phase="settings")
    return origin


def check_program(program, who: str) -> None:
    """A program given to a study: a .sq file's path or a Program (sq.compile's, or sq.load's)."""
    from sq.ir import Program  # noqa: PLC0415

    if not isinstance(program, (str, os.PathLike, Program)):
        raise SqError(f"{who}: the program is a .sq file's path or a Program from sq.compile, found {program!r}",
                      phase="settings")


def _ir_dict(program, horizon, warmup, arrivals) -> dict:
    """The IR a worker runs: exact (infinities kept), with the run settings checked (here,
    before any run, and only here) and written in, and a relative trace path made absolute
    (a worker may run elsewhere)."""
    from sq.engine.run import with_trace_path  # noqa: PLC0415

    d = settings.with_settings(program.to_dict(exact=True), seed=None, horizon=horizon, warmup=warmup,
                               arrivals=arrivals)
    d = with_trace_path(d, program.trace_base)
    if d.get("trace") and not os.path.isabs(d["trace"]):
        d["trace"] = os.path.abspath(d["trace"])
    return d


def study_provenance(program, seeds, runs: list[dict], extra) -> dict:
    """What made the study's runs: the program with its own `sets` and `defs`, and the run
    settings in effect (the study's or the program's own), one value, or one per point when
    the points differ (a swept `let` the horizon reads)."""
    from sq._support.version import __version__  # noqa: PLC0415

    origin = getattr(program, "compiled_from", None) or {}
    path = os.fspath(program) if isinstance(program, (str, os.PathLike)) else origin.get("path")
    settings_used = {key: _one_or_each([run[key] for run in runs]) for key in ("horizon", "warmup", "arrivals")}
    return {"program": path, "overrides": dict(origin.get("sets") or {}), "defs": dict(origin.get("defs") or {}),
            "sq_version": __version__, "sq_build": build_fingerprint(), "seeds": list(seeds), **settings_used,
            "metrics": list(extra)}


def _one_or_each(values: list):
    return values[0] if all(v == values[0] for v in values) else values

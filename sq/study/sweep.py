"""Studies: one program run over a grid of `let` values and a list of seeds.

`sweep` compiles each point once, then hands out one small task per (point,
seed) -- the IR as JSON text, the seed and the run settings, never an engine --
to an executor (serial, threads, processes, any `concurrent.futures.Executor`
or a Dask `distributed.Client`), and gets back one flat record of metrics
(`sq.results.metrics`) per run. Records are placed by task, not by arrival, so the
table is the same whatever ran it. With `cache=DIR` every finished run is
stored under a key of what determines it, so a rerun (or a sweep resumed after
Ctrl-C) computes only what is missing.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import math
import numbers
import os
import sys
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from sq.results import metrics as sq_metrics
from sq._support import settings
from sq._support._optional import available, require
from sq.results.confidence import pooled_interval, ratio_interval, t_interval
from sq._support.deep import run_deep
from sq.study.executors import Executor
from sq.errors import SqError
from sq._support.files import Unreadable, atomic_file, build_fingerprint, path_argument, read_text, write_atomic
from sq.engine.progress import check_progress
from sq.results.stats import SUMMARY_QUANTILES
from sq.results.steady import in_steady_state

# -- the results -------------------------------------------------------------------------

@dataclass
class Sweep:
    """The runs of a study: one record per (point, seed), in grid order then seed order."""

    names: list[str]                  # the swept `let` names, in grid order
    records: list[dict]               # {name: value, ..., "seed": s, metric: float, ...}
    provenance: dict = field(default_factory=dict)  # program, sq version, settings, seeds
    total: int | None = None          # runs the study asked for (more than len(records) if interrupted)
    # the metric columns the plan's runs record: the tables' columns while no run has finished
    metric_columns: list[str] = field(default_factory=list, repr=False)

    def __repr__(self) -> str:  # the records can be thousands of rows
        total = self.total if self.total is not None else len(self.records)
        return f"Sweep(names={self.names}, runs={len(self.records)} of {total}, metrics={len(self.metrics)})"

    @property
    def metrics(self) -> list[str]:
        """The metric columns: every metric of any record, in order of first appearance (points
        whose arrays differ in size hold different stages and pools: `stage.engine[3].util`
        only where there are four); `metric_columns` while no run has finished."""
        keys = set(self.names) | {"seed"}
        columns = dict.fromkeys(k for r in self.records for k in r) if self.records else self.metric_columns
        return [k for k in columns if k not in keys]

    @property
    def runs(self):
        """The runs as a pandas DataFrame (one row per record)."""
        pd = require("pandas", "Sweep.runs")
        return pd.DataFrame.from_records(self.records, columns=self._columns())

    def _columns(self) -> list[str]:
        return [*self.names, "seed", *self.metrics]

    def summary(self, confidence: float = 0.95):
        """One row per point: the swept names, `n` (seeds), `unsteady` (how many of those runs
        are not in steady state: their means depend on the horizon), and for every metric M the
        mean over seeds `M` and the Student-t half-width `M±` (a pandas DataFrame)."""
        pd = require("pandas", "Sweep.summary")
        columns = [*self.names, *SUMMARY_COLUMNS, *(c for m in self.metrics for c in (m, m + "±"))]
        return pd.DataFrame.from_records(self.summary_records(confidence), columns=columns)

    def summary_records(self, confidence: float = 0.95) -> list[dict]:
        """`summary` as a list of dicts (no pandas needed)."""
        groups: dict[tuple, list[dict]] = {}
        for r in self.records:
            groups.setdefault(tuple(_key(r.get(n)) for n in self.names), []).append(r)
        rows = []
        metrics = self.metrics
        for runs in groups.values():
            row = {n: runs[0].get(n) for n in self.names}
            row["n"] = len(runs)
            row["unsteady"] = sum(not in_steady_state(r) for r in runs)
            for m in metrics:  # NaN where the point has no such stage or pool
                row[m], row[m + "±"] = point_interval(runs, m, confidence)
            rows.append(row)
        return rows

    def compare(self, a, b, metric: str, confidence: float = 0.95) -> "Comparison":
        """The paired difference of `metric` between two points, b minus a, over the seeds both
        ran: each seed's difference, then their Student-t interval. Common random numbers make
        the pairs move together, so the interval is far narrower than the two points' own.
        A point is a {name: value} dict, or its value when one name is swept."""
        a_runs, b_runs = self._point_runs(a, "a"), self._point_runs(b, "b")
        if metric not in self.metrics:
            raise SqError(f"compare: `{metric}` is not a metric of the sweep", phase="settings",
                          notes=(f"help: e.g. {', '.join(self.metrics[:8])}, …",))
        by_seed = {r["seed"]: r for r in a_runs if metric in r}
        pairs = [(by_seed[r["seed"]][metric], r[metric]) for r in b_runs if r["seed"] in by_seed and metric in r]
        if not pairs:
            raise SqError("compare: the two points have no seed in common", phase="settings")
        mean, half = t_interval([y - x for x, y in pairs], confidence)
        return Comparison(metric, self._point_of(a), self._point_of(b), len(pairs), mean, half, confidence)

    def _point_of(self, value) -> dict:
        if isinstance(value, dict):
            return value
        if len(self.names) != 1:
            raise SqError(f"compare: with several swept names ({', '.join(self.names)}) give a point as "
                          "{name: value}", phase="settings")
        return {self.names[0]: value}

    def _point_runs(self, value, which: str) -> list[dict]:
        point = self._point_of(value)
        if set(point) != set(self.names):
            raise SqError(f"compare: point {which} names {', '.join(point) or 'nothing'}; the sweep's points "
                          f"name {', '.join(self.names)}", phase="settings")
        key = {n: _same_value(v) for n, v in point.items()}
        runs = [r for r in self.records if all(_same_value(r.get(n)) == v for n, v in key.items())]
        if not runs:
            raise SqError(f"compare: the sweep has no runs at {_describe(point)}", phase="settings")
        return runs

    # -- writing ------------------------------------------------------------------------
    def to_csv(self, path) -> None:
        """The runs as CSV (no pandas needed): NaN and infinities as `nan`, `inf`."""
        import csv  # noqa: PLC0415

        columns = self._columns()
        with _open_for_writing(path, "to_csv", newline="") as f:
            w = csv.writer(f)
            w.writerow(columns)
            for r in self.records:
                w.writerow([_csv_cell(r.get(c)) for c in columns])

    def to_json(self, path, lines: bool = True) -> None:
        """The runs as JSON lines, one object per run, or (lines=False) one array of them, one
        per line (no pandas needed); NaN and infinities are written null, as JSON has no
        spelling for them."""
        columns = self._columns()
        rows = [json.dumps({c: json_cell(r.get(c)) for c in columns}, allow_nan=False) for r in self.records]
        with _open_for_writing(path, "to_json") as f:
            f.write("".join(row + "\n" for row in rows) if lines else "[" + ",\n".join(rows) + "]\n")

    def to_parquet(self, path) -> None:
        """The runs as a Parquet file (needs pyarrow)."""
        pa = require("pyarrow", "Sweep.to_parquet")
        pq = require("pyarrow.parquet", "Sweep.to_parquet")
        columns = self._columns()
        table = pa.Table.from_pylist([{c: r.get(c) for c in columns} for r in self.records])
        # what made the runs, in the file's own metadata (pyarrow.parquet.read_schema(path).metadata)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"sq.provenance": json.dumps(
            self.provenance, default=str).encode()})
        with _open_for_writing(path, "to_parquet", binary=True) as f:
            pq.write_table(table, f)

    def write(self, path) -> None:
        """`to_csv`, `to_parquet` or `to_json` by the file's extension (.csv, .parquet, .jsonl;
        .json: one JSON array, what a reader of a .json file expects)."""
        path = path_argument(path, "write")
        writer = WRITERS.get(Path(path).suffix.lower())
        if writer is None:
            raise SqError(f"cannot tell the format of `{path}`: use {', '.join(WRITERS)}", phase="settings")
        method, options = writer
        getattr(self, method)(path, **options)

    def plot(self, x: str, y: str, by: str | None = None, slo: float | None = None, ax=None,
             confidence: float = 0.95, logx: bool = False, logy: bool = False):
        """Mean of metric `y` against swept name `x` with t-interval bars, one line per value
        of `by`, a dashed horizontal line at `slo`; returns the matplotlib axes."""
        from sq.study.plot import plot_summary  # noqa: PLC0415

        return plot_summary(self, x, y, by=by, slo=slo, ax=ax, confidence=confidence, logx=logx, logy=logy)


def point_interval(runs: list[dict], metric: str, confidence: float) -> tuple[float, float]:
    """(mean, half-width) of a metric over a point's runs: the Student-t interval of the runs'
    values, for a share (`OBS.le(X)`) the ratio interval weighted by each run's count, for a
    pooled quantile (`OBS.p99@pooled`) the quantile of all the runs' samples with its
    seed-bootstrap interval."""
    q = sq_metrics.pooled_level(metric)
    if q is not None:
        tails = [r[metric] for r in runs if metric in r]
        if not all(isinstance(t, sq_metrics.Tail) for t in tails):
            raise SqError(f"`{metric}` is pooled from the runs' samples, which these records do not hold "
                          "(a table read back keeps only each run's own quantile)", phase="settings")
        return pooled_interval(tails, q, confidence)
    count = sq_metrics.weight_column(metric)
    if count is not None and all(count in r for r in runs):
        have = [r for r in runs if metric in r]
        return ratio_interval([r[metric] for r in have], [r[count] for r in have], confidence)
    return t_interval([r[metric] for r in runs if metric in r], confidence)


TAIL_SAMPLES = 100      # samples beyond a quantile a run needs for its own quantile to be trusted
MSER_SHARE = 0.10       # a warm-up MSER-5 would lengthen by more than this share of the window is short


def tail_advice(runs: list[dict], metric: str, horizon: float, warmup: float) -> str | None:
    """A warning when a quantile metric (`OBS.p99`) rests on fewer than TAIL_SAMPLES samples
    beyond it in the average run (n·(1 - q)): a run's own p99 of few samples is biased low;
    names the horizon that would give enough (the samples grow with the measured window)."""
    observe, _, name = metric.rpartition(".")
    q = dict(SUMMARY_QUANTILES).get(name)
    counts = [r[f"{observe}.count"] for r in runs if f"{observe}.count" in r]
    if q is None or not 0.0 < q < 1.0 or not counts:
        return None
    beyond = math.fsum(counts) / len(counts) * (1.0 - q)
    if beyond >= TAIL_SAMPLES:
        return None
    enough = warmup + (horizon - warmup) * TAIL_SAMPLES / max(beyond, 1e-9)
    return (f"{metric}: a run holds about {beyond:.3g} samples beyond its {name} (n·(1-q)), fewer than "
            f"{TAIL_SAMPLES}: each run's {name} is biased toward the middle; a horizon of about {enough:.3g} "
            f"(warm-up {warmup:g}) would give {TAIL_SAMPLES}")


def warmup_advice(runs: list[dict], observe: str, horizon: float, warmup: float) -> str | None:
    """A warning when MSER-5 (`OBS.mser`) would start the statistics more than MSER_SHARE of the
    measured window later than the warm-up given in three runs of four (its lower quartile over
    the runs: on a stable run MSER-5 sometimes cuts a burst by chance); names that warm-up."""
    column = f"{observe}.mser"
    cuts = sorted(r[column] for r in runs if column in r and not math.isnan(r[column]))
    if not cuts:
        return None
    quartile = cuts[len(cuts) // 4]
    if not quartile > warmup + MSER_SHARE * (horizon - warmup):
        return None
    return (f"{observe}: the warm-up {warmup:g} looks too short: MSER-5 would start the statistics at about "
            f"{quartile:.3g} or later in three runs of four (give a warm-up of about {quartile:.3g}, and a "
            "horizon to match)")


@dataclass(frozen=True)
class Comparison:
    """`Sweep.compare`: metric at b minus metric at a, paired over n common seeds."""

    metric: str
    a: dict
    b: dict
    n: int
    difference: float
    half_width: float
    confidence: float

    def __str__(self) -> str:
        return (f"{self.metric}: ({_describe(self.b)}) - ({_describe(self.a)}) = {self.difference:.6g} "
                f"± {self.half_width:.2g} ({self.confidence:.0%}, paired over {self.n} seeds)")


WRITERS = {".csv": ("to_csv", {}), ".parquet": ("to_parquet", {}), ".jsonl": ("to_json", {}),
           ".json": ("to_json", {"lines": False})}


@contextlib.contextmanager
def _open_for_writing(path, who: str, binary: bool = False, **options):
    """A file to write `path` through, atomically (`files.atomic_file`): a write that fails --
    a full disk, a folder that vanished -- leaves the old file or none, never a table cut
    mid-row, and is one SqError naming the file (the runs are still in the Sweep, and in the
    cache if one was given)."""
    path = path_argument(path, who)
    folder = Path(path).parent
    if not folder.is_dir():
        raise SqError(f"{who}: cannot write `{path}`: the folder `{folder}` does not exist",
                      phase="settings")
    try:
        with atomic_file(path, binary, **options) as f:
            yield f
    except OSError as e:
        raise SqError(f"{who}: cannot write `{path}`: {e.strerror or e}; nothing was written there",
                      phase="settings",
                      notes=("help: the runs are kept in the Sweep (and in the cache, if one was given): "
                             "write them again once there is room",)) from None


def _key(v):
    return json.dumps(v, sort_keys=True) if isinstance(v, (list, dict)) else v


def _csv_cell(v):
    return "" if v is None else repr(v) if isinstance(v, float) else v


def json_cell(v):
    """A value as JSON holds it: a NaN or infinite float becomes null."""
    return None if isinstance(v, float) and not math.isfinite(v) else v


# -- tasks ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Task:
    """What a worker needs to run one (point, seed): small and picklable."""

    ir_json: str                # the point's IR, the study's run settings in it
    seed: int
    extra: tuple[str, ...]

    def key(self) -> str:
        """The cache key: everything that determines the record, and the build of sq that made it
        (`files.build_fingerprint`: a fix to the engine is a new key, where the version was not)."""
        text = json.dumps([build_fingerprint(), self.ir_json, self.seed, sorted(self.extra)])
        return hashlib.sha256(text.encode()).hexdigest()


def run_task(task: Task) -> dict:
    """Run one task; the metrics record, or {"error": text} for a run sq refuses.

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
        return {"error": err.render()}


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


# -- the sweep ------------------------------------------------------------------------

def sweep(program, grid, seeds, *, horizon=None, warmup=None, arrivals=None, executor=None, jobs=None,
          cache=None, progress=None, metrics=None) -> Sweep:
    """Run `program` at every point of `grid` with every seed; see the module doc and docs/api.md.

    Each (point, seed) run is `sq.run(sq.compile(program, sets=point), seed=seed, horizon=...,
    warmup=..., arrivals=...)`. A Ctrl-C stops the sweep and raises KeyboardInterrupt with
    the finished runs as its `sweep` attribute (and in the cache).
    """
    check_progress(progress, "sweep")
    plan = _Plan(program, grid, seeds, horizon, warmup, arrivals, metrics)
    store = _Cache(cache) if cache is not None else None
    pool = Executor(executor, jobs)  # checked before any run
    results: list[dict | None] = [store.get(t) if store else None for t in plan.tasks]
    result = Sweep(plan.names, [], plan.provenance, len(plan.tasks), plan.metric_columns)
    try:
        _collect(plan, pool, store, results, progress)
    except KeyboardInterrupt as interrupt:
        if store:  # the interrupt may have come between a run's end and its write
            for task, record in zip(plan.tasks, results):
                if record is not None and store.get(task) is None:
                    store.put(task, record)
        result.records = plan.records(results)
        interrupt.sweep = result
        raise
    result.records = plan.records(results)
    return result


class _Plan:
    """A study's tasks, checked: every point compiled, settings and metrics valid."""

    def __init__(self, program, grid, seeds, horizon, warmup, arrivals, metrics):
        points, self.names = grid_points(grid)
        seeds = seed_list(seeds)
        check_runs(len(points), len(seeds), "sweep")
        # 300 and 300.0 are one setting (as they are one IR, and one cache key)
        horizon, warmup = (float(x) if isinstance(x, int) and not isinstance(x, bool) else x
                           for x in (horizon, warmup))
        programs = [compile_point(program, point, dict(horizon=horizon, warmup=warmup, arrivals=arrivals))
                    for point in points]
        extra = tuple(m.name for m in _metrics_at_every_point(metrics or (), programs, points)
                      if m.observe is not None)
        irs, runs, columns = [], [], {}
        for p in programs:
            d = _ir_dict(p, horizon, warmup, arrivals)
            irs.append(run_deep(json.dumps, d, separators=(",", ":")))
            runs.append({"horizon": d["horizon"], "warmup": d.get("warmup", 0.0), "arrivals": d.get("arrivals")})
            # a point's arrays may be larger than the first point's: every point's metrics
            columns.update(dict.fromkeys(sq_metrics.program_metric_names(d)))
        self.metric_columns = [*columns, *dict.fromkeys(extra)]
        self.tasks = [Task(ir_json, seed, extra) for ir_json in irs for seed in seeds]
        self.labels = [(point, seed) for point in points for seed in seeds]
        self.provenance = study_provenance(program, seeds, runs, extra)

    def records(self, results) -> list[dict]:
        """The finished runs' rows, in task order: swept values, seed, metrics."""
        return [{**{n: point.get(n) for n in self.names}, "seed": seed, **record}
                for (point, seed), record in zip(self.labels, results) if record is not None]


def _metrics_at_every_point(metrics, programs, points) -> list:
    """The metrics asked for, checked against every point's program (a pool `kv[2]` exists only
    where the array has three members): an SqError naming the first point that lacks one."""
    checked = sq_metrics.check_metrics(metrics, programs[0])
    for program, point in zip(programs[1:], points[1:]):
        try:
            sq_metrics.check_metrics(metrics, program)
        except SqError as err:
            raise SqError(f"{err.message} at {_describe(point)}", phase="settings", notes=err.notes) from None
    return checked


def _collect(plan: _Plan, pool, store, results: list, progress) -> None:
    """Run what `results` lacks, filling it (and the cache) as runs finish."""
    finished = pool.run(run_task, plan.tasks, [i for i, r in enumerate(results) if r is None])
    done = sum(r is not None for r in results)
    with closing(finished), _progress_bar(progress, len(plan.tasks), done) as bar:
        for i, record in finished:
            if "error" in record:
                point, seed = plan.labels[i]
                raise SqError(f"sweep: the run at {_describe(point)} seed {seed} failed:\n{record['error']}",
                              phase="run")
            results[i] = record
            if store:
                store.put(plan.tasks[i], record)
            bar.update(1)


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


# -- the cache ------------------------------------------------------------------------

class _Cache:
    """One JSON file per finished run, DIR/KEY[:2]/KEY.json, written atomically."""

    def __init__(self, directory):
        if not isinstance(directory, (str, os.PathLike)):
            raise SqError(f"sweep: cache is a folder (text or a path), found {directory!r}", phase="settings")
        self.root = Path(directory)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SqError(f"cache: cannot create `{directory}`: {e.strerror}", phase="settings") from None
        if not os.access(self.root, os.W_OK):
            raise SqError(f"cache: `{directory}` is not writable", phase="settings")

    def _path(self, task: Task) -> Path:
        key = task.key()
        return self.root / key[:2] / f"{key}.json"

    def get(self, task: Task) -> dict | None:
        """The stored record of `task`; None, so the run is done again, for a file that cannot be
        read (not a regular file -- a pipe or a link to a device is never read --, larger than
        RECORD_LIMIT), or that is not the record this run makes: its own key inside, the checksum
        of its numbers, its metrics, each a number."""
        key = task.key()
        try:
            stored = run_deep(json.loads, read_text(self._path(task), RECORD_LIMIT))
        except (Unreadable, ValueError):
            return None
        if not isinstance(stored, dict) or stored.get("key") != key:
            return None
        record = stored.get("record")
        if not isinstance(record, dict) or list(record) != record_names(task) \
                or not all(type(v) in (float, int) for v in record.values()) \
                or stored.get("sum") != _checksum(key, record, stored.get("tails")):
            return None
        return _with_tails(record, stored.get("tails"), task)

    def put(self, task: Task, record: dict) -> None:
        """Store a record beside its key and checksum, written atomically (a temporary file
        renamed over: two processes or threads sharing the cache never see half a record)."""
        key = task.key()
        path = self._path(task)
        path.parent.mkdir(exist_ok=True)
        tails = {k: [v.count, v.top.tolist()] for k, v in record.items() if isinstance(v, sq_metrics.Tail)}
        write_atomic(path, [json.dumps({"key": key, "sum": _checksum(key, record, tails), "record": record,
                                        "tails": tails})])


RECORD_LIMIT = 1 << 20      # a run's record is a few KB: anything far larger is not one


def _checksum(key: str, record: dict, tails) -> str:
    """The digest of a record with its key (and its pooled metrics' samples): a record moved
    under another key fails it too."""
    return hashlib.sha256(json.dumps([key, record, tails]).encode()).hexdigest()


def _with_tails(record: dict, tails, task: Task) -> dict | None:
    """A stored record with its pooled metrics' samples put back (`metrics.Tail`); None when
    one is missing or malformed."""
    pooled = [m for m in task.extra if sq_metrics.pooled_level(m) is not None]
    if not pooled:
        return record
    try:
        for m in pooled:
            count, top = tails[m]
            if type(count) is not int or not all(type(v) in (float, int) for v in top):
                return None
            record[m] = sq_metrics.Tail(record[m], count, top)
    except (KeyError, TypeError, ValueError):
        return None
    return record


# -- progress -------------------------------------------------------------------------

class _NoBar:
    def __enter__(self):
        return self

    def __exit__(self, *_):
        return False

    def update(self, n):
        pass


def _progress_bar(progress, total: int, done: int):
    """A tqdm bar on stderr when asked (progress=True), or by default when stderr is a terminal."""
    want = progress if progress is not None else (sys.stderr.isatty() and available("tqdm"))
    if not want:
        return _NoBar()
    tqdm = require("tqdm", "progress=True").tqdm
    return tqdm(total=total, initial=done, unit="run", file=sys.stderr, dynamic_ncols=True)

"""Studies: one program run over a grid of `let` values and a list of seeds.

`sweep` compiles each point once (`sq.study.plan.Plan`), then hands out one small
task per (point, seed) -- the point's index, the seed and a reference to its IR,
which each worker receives once, never an engine -- to an executor (serial, threads, processes, any `concurrent.futures.Executor`
or a Dask `distributed.Client`), and gets back one flat record of metrics
(`sq.results.metrics`) per run. Records are placed by task, not by arrival, so the
table is the same whatever ran it. With `cache=DIR` every finished run is
stored under a key of what determines it, so a rerun (or a sweep resumed after
Ctrl-C) computes only what is missing.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from array import array
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sq.results import metrics as sq_metrics
from sq._support._optional import require
from sq.results.confidence import ratio_interval, t_interval
from sq.results.stats import pooled_interval
from sq._support.deep import run_deep
from sq.study.executors import Executor, owned, process_pool
from sq.study.plan import (SUMMARY_COLUMNS, WINDOW, Plan, Task, _describe, _same_value, check_runs, record_names, run_task,
                           seed_list)
# where capacity and the CLI have long found them
from sq.study.plan import compile_point, compiled_from, distinct_values, grid_points, study_provenance  # noqa: F401
from sq.errors import SqError
from sq._support.files import Unreadable, build_fingerprint, open_for_writing, path_argument, read_text, write_atomic
from sq.engine.progress import check_progress, count_bar
from sq.results.stats import SUMMARY_QUANTILES
from sq.results.runs import MISSING, RunTable, value_key
from sq.results.steady import unsteady_runs

# -- the results -------------------------------------------------------------------------

class Sweep:
    """The runs of a study (`sq.sweep`): one row per (point, seed), in grid order then seed
    order, placed by task whatever executor ran them.

    `names` (the swept `let`s), `table` (a `sq.results.runs.RunTable`: one numpy array per
    column -- `seed`, every metric of `sq.results.metrics` and the extra ones asked for -- and
    each row's point), `records` (the same rows as dicts, made when asked), `metrics` (the
    metric columns), `provenance` (program, overrides, defs, sq version and build, seeds, run
    settings), `total` (runs asked for: more than len(records) after a Ctrl-C).
    `Sweep(names, records, provenance, total)` takes records as a list of dicts or a RunTable.

    Tables: `runs` / `to_pandas()` (one row per run), `summary(confidence, flat=True |
    flat=False | long=True)` (per point: mean, Student-t half-width, n), `summary_records`,
    `compare(a, b, metric)` (paired over common seeds), `to_xarray()` (a full grid). Files: `to_csv`, `to_json(path=None)`
    (text without a path), `to_parquet`, `write(path)` by extension; `plot`. NaN marks a
    metric a point lacks (CSV: empty, JSON: null).
    """

    def __init__(self, names, records=(), provenance: dict | None = None, total: int | None = None,
                 metric_columns=()):
        self.names: list[str] = list(names)          # the swept `let` names, in grid order
        self.table = RunTable.of(records, self.names)
        self.provenance: dict = {} if provenance is None else provenance   # program, sq version, settings, seeds
        self.total = total      # runs the study asked for (more than len(records) if interrupted)
        # the metric columns the plan's runs record: the tables' columns while no run has finished
        self.metric_columns: list[str] = list(metric_columns)

    def __repr__(self) -> str:  # the records can be thousands of rows
        total = self.total if self.total is not None else len(self.table)
        return f"Sweep(names={self.names}, runs={len(self.table)} of {total}, metrics={len(self.metrics)})"

    @property
    def records(self) -> list[dict]:
        """The runs as dicts {name: value, ..., "seed": s, metric: number, ...} (made from
        `table` at each call; a metric a point lacks is not in its rows)."""
        return list(self.table.records())

    @property
    def metrics(self) -> list[str]:
        """The metric columns: every metric of any record, in order of first appearance (points
        whose arrays differ in size hold different stages and pools: `stage.engine[3].util`
        only where there are four); `metric_columns` while no run has finished."""
        keys = set(self.names) | {"seed"}
        columns = self.table.keys() if len(self.table) else self.metric_columns
        return [k for k in columns if k not in keys]

    @property
    def runs(self):
        """The runs as a pandas DataFrame (one row per record)."""
        require("pandas", "Sweep.runs")
        return self.table.frame(self._columns())

    def _columns(self) -> list[str]:
        return [*self.names, "seed", *self.metrics]

    def summary(self, confidence: float = 0.95, *, long: bool = False, flat: bool = True):
        """The runs summed up per point (a pandas DataFrame), in one of three shapes:

        flat (the default): one row per point: the swept names, `n` (seeds), `unsteady` (how
        many of those runs are not in steady state: their means depend on the horizon), and for
        every metric M the mean over seeds `M` and the Student-t half-width `M±`.
        flat=False: the swept names as the index, columns (metric, mean | half_width | n), n
        the runs that hold the metric; `unsteady` as its own column ("unsteady", "n").
        long=True: tidy, one row per (point, metric): the swept names, metric, mean,
        half_width, n."""
        pd = require("pandas", "Sweep.summary")
        if not long and flat:
            columns = [*self.names, *SUMMARY_COLUMNS, *(c for m in self.metrics for c in (m, m + "±"))]
            return pd.DataFrame.from_records(self.summary_records(confidence), columns=columns)
        stats = ("mean", "half_width", "n")
        points, cells = [], []
        for runs in self._by_point():
            points.append(_first_point(runs))
            row = []
            for m in self.metrics:
                mean, half = point_interval(runs, m, confidence)
                row.append((mean, half, int(runs.holds(m).sum())))
            cells.append(row)
        if long:
            return pd.DataFrame.from_records(
                [{**dict(zip(self.names, p)), "metric": m, **dict(zip(stats, cell))}
                 for p, row in zip(points, cells) for m, cell in zip(self.metrics, row)],
                columns=[*self.names, "metric", *stats])
        if len(self.names) > 1:
            index = pd.MultiIndex.from_tuples(points, names=self.names)
        else:
            index = pd.Index([p[0] for p in points], name=self.names[0]) if self.names else None
        columns = pd.MultiIndex.from_tuples([(m, stat) for m in self.metrics for stat in stats],
                                            names=["metric", "stat"])
        frame = pd.DataFrame([[x for cell in row for x in cell] for row in cells], index=index, columns=columns)
        for m in self.metrics:
            frame[(m, "n")] = frame[(m, "n")].astype("int64")
        return frame

    def _by_point(self) -> list[RunTable]:
        """Each point's runs (a RunTable each), points in order of first appearance."""
        return [self.table.take(rows) for rows in self.table.groups().values()]

    def summary_records(self, confidence: float = 0.95) -> list[dict]:
        """`summary` as a list of dicts (no pandas needed)."""
        rows = []
        metrics = self.metrics
        for runs in self._by_point():
            row = dict(zip(self.names, _first_point(runs)))
            row["n"] = len(runs)
            row["unsteady"] = unsteady_runs(runs)
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
        a_held, b_held = (runs.holds(metric) & runs.holds("seed") for runs in (a_runs, b_runs))
        by_seed = dict(zip(a_runs.values("seed", a_held), a_runs.values(metric, a_held)))
        pairs = [(by_seed[seed], y) for seed, y in zip(b_runs.values("seed", b_held), b_runs.values(metric, b_held))
                 if seed in by_seed]
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

    def _point_runs(self, value, which: str) -> RunTable:
        point = self._point_of(value)
        if set(point) != set(self.names):
            raise SqError(f"compare: point {which} names {', '.join(point) or 'nothing'}; the sweep's points "
                          f"name {', '.join(self.names)}", phase="settings")
        key = {n: _same_value(v) for n, v in point.items()}
        at = [all(_same_value(None if v is MISSING else v) == key[n] for n, v in zip(self.names, p))
              for p in self.table.points]
        rows = np.asarray(at, bool)[self.table.point[:len(self.table)]] if at else np.zeros(0, bool)
        if not rows.any():
            raise SqError(f"compare: the sweep has no runs at {_describe(point)}", phase="settings")
        return self.table.take(rows)

    # -- writing ------------------------------------------------------------------------
    def to_csv(self, path) -> None:
        """The runs as CSV (no pandas needed): NaN and infinities as `nan`, `inf`. The first line
        is a comment, `# sq.provenance: {...}` (the provenance as JSON), then the header:
        `pandas.read_csv(path, comment="#")` reads the table."""
        import csv  # noqa: PLC0415

        columns = self._columns()
        with _open_for_writing(path, "to_csv", newline="") as f:
            f.write(f"# {PROVENANCE}: {self._provenance_json()}\n")    # read_csv(path, comment="#")
            w = csv.writer(f)
            w.writerow(columns)
            w.writerows(zip(*(self._cells(c, _csv_cell) for c in columns)))

    def to_json(self, path=None, lines: bool = True) -> str | None:
        """The runs as JSON lines, one object per run, or (lines=False) one array of them, one
        per line (no pandas needed); NaN and infinities are written null, as JSON has no
        spelling for them. The first object is the provenance, `{"sq.provenance": {...}}` (no
        run has that key: it is no metric's or `let`'s name). Without a path the text is returned; with one it is written there
        (atomically) and None returned."""
        columns = self._columns()
        keys = [json.dumps(c) + ": " for c in columns]
        cells = [[key + v for v in self._cells(c, _json_text)] for key, c in zip(keys, columns)]
        rows = [f'{{"{PROVENANCE}": {self._provenance_json()}}}']
        rows += ["{" + ", ".join(row) + "}" for row in zip(*cells)]
        text = "".join(row + "\n" for row in rows) if lines else "[" + ",\n".join(rows) + "]\n"
        if path is None:
            return text
        with _open_for_writing(path, "to_json") as f:
            f.write(text)
        return None

    def _cells(self, column: str, spelled) -> list:
        """A column's cells, each spelled by `spelled` (None for a cell the row does not hold)."""
        if column in self.names:
            return [spelled(v) for v in self.table.swept(column)]
        array, absent = self.table.masked(column)
        return [spelled(None) if a else spelled(v) for v, a in zip(array.tolist(), absent.tolist())]

    def to_pandas(self):
        """The runs as a pandas DataFrame, one row per run: swept names, seed, metrics (`runs`)."""
        return self.runs

    def to_xarray(self):
        """The runs of a full grid as an xarray Dataset (needs xarray): dimensions the swept
        names and `seed`, their coordinates the distinct values in order of first appearance,
        and one variable per metric (NaN where a point lacks the metric). A grid that is not
        full -- some (point, seed) has no run: an interrupted study, points that are not a
        product -- is an SqError naming a missing run (`runs` holds any set of runs)."""
        xr = require("xarray", "Sweep.to_xarray")
        table = self.table
        dims = [*self.names, "seed"]
        coords, places = [], []                          # per dimension: its values; each row's index
        for d in dims:
            values = table.swept(d) if d in self.names else self._cells(d, lambda v: v)
            index: dict = {}
            first: list = []
            at = [index.setdefault(_same_value(value_key(v)), len(index)) for v in values]
            for v, i in zip(values, at):
                if i == len(first):
                    first.append(value_key(v))
            coords.append(first)
            places.append(np.asarray(at, np.intp))
        shape = tuple(len(values) for values in coords)
        flat = np.ravel_multi_index(places, shape) if len(table) else np.zeros(0, np.intp)
        last = len(flat) - 1 - np.unique(flat[::-1], return_index=True)[1]     # a cell's last run wins
        filled = np.zeros(math.prod(shape), bool)
        filled[flat] = True
        if len(last) != math.prod(shape) or not len(last):
            empty = np.flatnonzero(~filled)
            missing = np.unravel_index(empty[0], shape) if len(empty) else None
            where = (_describe({d: coords[k][int(i)] for k, (d, i) in enumerate(zip(dims, missing))})
                     if missing is not None else "any point")
            raise SqError(f"Sweep.to_xarray: the grid is not full: no run at {where} "
                          f"({len(last)} of {math.prod(shape)} runs)", phase="settings",
                          notes=("help: `runs` (to_pandas) holds the runs of a partial grid",))
        variables = {}
        for m in self.metrics:
            column = np.full(math.prod(shape), np.nan)
            column[flat[last]] = _floats(*table.masked(m))[last]
            variables[m] = (dims, column.reshape(shape))
        return xr.Dataset(variables, coords={d: values for d, values in zip(dims, coords)},
                          attrs={"provenance": self._provenance_json()})

    def to_parquet(self, path) -> None:
        """The runs as a Parquet file (needs pyarrow): the table's arrays handed to Arrow."""
        require("pyarrow", "Sweep.to_parquet")
        pq = require("pyarrow.parquet", "Sweep.to_parquet")
        table = self.table.arrow(self._columns())
        # what made the runs, in the file's own metadata (pyarrow.parquet.read_schema(path).metadata)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               PROVENANCE.encode(): self._provenance_json().encode()})
        with _open_for_writing(path, "to_parquet", binary=True) as f:
            pq.write_table(table, f)

    def _provenance_json(self) -> str:
        """The provenance as one line of JSON, what every writer stores (a non-finite setting as null)."""
        return json.dumps(_nulled(self.provenance), default=str, allow_nan=False)

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


def point_interval(runs, metric: str, confidence: float) -> tuple[float, float]:
    """(mean, half-width) of a metric over a point's runs (a RunTable, or a list of records):
    the Student-t interval of the runs' values, for a share (`OBS.le(X)`) the ratio interval
    weighted by each run's count, for a pooled quantile (`OBS.p99@pooled`) the quantile of all
    the runs' samples with the interval of `sq.results.stats.pooled_interval`."""
    runs = RunTable.of(runs)
    q = sq_metrics.pooled_level(metric)
    if q is not None:
        tails = runs.values(metric)
        if not all(isinstance(t, sq_metrics.Tail) for t in tails):
            raise SqError(f"`{metric}` is pooled from the runs' samples, which these records do not hold "
                          "(a table read back keeps only each run's own quantile)", phase="settings")
        return pooled_interval(tails, q, confidence)
    count = sq_metrics.weight_column(metric)
    if count is not None and runs.holds(count).all():
        have = runs.holds(metric)
        return ratio_interval(runs.values(metric), runs.values(count, have), confidence)
    return t_interval(runs.values(metric), confidence)


TAIL_SAMPLES = 100      # samples beyond a quantile a run needs for its own quantile to be trusted
MSER_SHARE = 0.10       # a warm-up MSER-5 would lengthen by more than this share of the window is short


def tail_advice(runs, metric: str, horizon: float, warmup: float) -> str | None:
    """A warning when a quantile metric (`OBS.p99`) rests on fewer than TAIL_SAMPLES samples
    beyond it in the average run (n·(1 - q)): a run's own p99 of few samples is biased low;
    names the horizon that would give enough (the samples grow with the measured window).
    `runs`: a point's RunTable, or a list of records."""
    observe, _, name = metric.rpartition(".")
    q = dict(SUMMARY_QUANTILES).get(name)
    counts = RunTable.of(runs).values(f"{observe}.count")
    if q is None or not 0.0 < q < 1.0 or not counts:
        return None
    beyond = math.fsum(counts) / len(counts) * (1.0 - q)
    if beyond >= TAIL_SAMPLES:
        return None
    enough = warmup + (horizon - warmup) * TAIL_SAMPLES / max(beyond, 1e-9)
    return (f"{metric}: a run holds about {beyond:.3g} samples beyond its {name} (n·(1-q)), fewer than "
            f"{TAIL_SAMPLES}: each run's {name} is biased toward the middle; a horizon of about {enough:.3g} "
            f"(warm-up {warmup:g}) would give {TAIL_SAMPLES}")


def warmup_advice(runs, observe: str, horizon: float, warmup: float) -> str | None:
    """A warning when MSER-5 (`OBS.mser`) would start the statistics more than MSER_SHARE of the
    measured window later than the warm-up given in three runs of four (its lower quartile over
    the runs: on a stable run MSER-5 sometimes cuts a burst by chance); names that warm-up.
    `runs`: a point's RunTable, or a list of records."""
    cuts = sorted(v for v in RunTable.of(runs).values(f"{observe}.mser") if not math.isnan(v))
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


# the key of the provenance in every file a Sweep writes: the CSV's first (comment) line, the JSON's first
# object, the Parquet file's metadata
PROVENANCE = "sq.provenance"

WRITERS = {".csv": ("to_csv", {}), ".parquet": ("to_parquet", {}), ".jsonl": ("to_json", {}),
           ".json": ("to_json", {"lines": False})}


def _open_for_writing(path, who: str, **options):
    """`files.open_for_writing`, saying that the runs are not lost with the file."""
    return open_for_writing(path, who, notes=("help: the runs are kept in the Sweep (and in the cache, if one "
                                              "was given): write them again once there is room",), **options)


def _first_point(runs: RunTable) -> tuple:
    """The swept values of a point's first run (None for a name it lacks)."""
    return tuple(None if v is MISSING else v for v in runs.points[runs.point[0]])


def _floats(array: np.ndarray, absent: np.ndarray) -> np.ndarray:
    """A column as floats, NaN where a row does not hold it (or holds None)."""
    if array.dtype.kind == "O":
        return np.array([np.nan if a or v is None else v for v, a in zip(array.tolist(), absent.tolist())],
                        np.float64)
    return np.where(absent, np.nan, array.astype(np.float64))


def _json_text(v) -> str:
    """A cell as JSON text (`json_cell`: NaN and infinities null), as `json.dumps` spells it: a
    float by its repr, an int by its digits (the two asked first: a table holds mostly these)."""
    if type(v) is float:
        return repr(v) if math.isfinite(v) else "null"
    if type(v) is int:
        return repr(v)
    return json.dumps(json_cell(v), allow_nan=False)


def _csv_cell(v):
    return "" if v is None else repr(v) if isinstance(v, float) else v


def json_cell(v):
    """A value as JSON holds it: a NaN or infinite float becomes null."""
    return None if isinstance(v, float) and not math.isfinite(v) else v


def _nulled(v):
    """`json_cell` of every value inside lists and dicts."""
    if isinstance(v, dict):
        return {k: _nulled(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_nulled(x) for x in v]
    return json_cell(v)


# -- the sweep ------------------------------------------------------------------------

def sweep(program, grid, seeds, *, horizon=None, warmup=None, arrivals=None, executor=None, jobs=None,
          cache=None, progress=None, metrics=None) -> Sweep:
    """Run `program` at every point of `grid` with every seed; returns a `Sweep`.

    program: a .sq file's path, or a Program from `sq.compile` (compiled again with each
    point's values added to its own `sets`); not one from `sq.load` (no `let`s to vary).
    grid: {name: [values]} (the cartesian product, first name slowest), a list of
    {name: value} points, or None (the program's own values). Values are numbers or text
    (an expression), distinct per name. seeds: an int or an iterable of distinct whole
    numbers in [0, 2**64). horizon, warmup, arrivals: the run settings (None: the program's
    own), applied before linking. executor: "processes" (default), "threads", "serial", a
    `concurrent.futures.Executor` or a Dask `distributed.Client`; jobs: its workers (default:
    the CPUs). cache: a folder where each finished run is kept (a rerun computes only what is
    missing). progress: True / False (None: a bar when stderr is a terminal). metrics: extra
    observe metrics (`"ttft.p999"`, `"response.le(2)"`) recorded beside every run's own.

    Each (point, seed) run equals `sq.run(sq.compile(program, sets=point), seed=seed,
    horizon=..., warmup=..., arrivals=...)`; each point is compiled once (`Plan`). Every
    argument is checked, and every point of the first window (`plan.WINDOW` points) compiled,
    before any run, a later window when its first run is scheduled: bad input is an SqError
    (phase "settings", or the compiler's), a run sq refuses is an SqError naming the point and
    seed (its phase and notes kept). A Ctrl-C stops the sweep and raises KeyboardInterrupt
    with the finished runs as its `sweep` attribute (and in the cache); an SqError in the
    middle of the runs (a run refused, a Dask scheduler lost) carries them the same way.
    """
    check_progress(progress, "sweep")
    seeds = seed_list(seeds)
    plan = Plan(program, grid, horizon=horizon, warmup=warmup, arrivals=arrivals, metrics=metrics, seeds=seeds)
    return run_plan(plan, seeds, executor=executor, jobs=jobs, cache=cache, progress=progress)


def run_plan(plan: Plan, seeds: list[int], *, executor=None, jobs=None, cache=None, progress=None,
             who: str = "sweep") -> Sweep:
    """Run a `Plan` with checked seeds (`seed_list`): what `sweep` does after its checks. `sq
    sweep` and `sq.capacity` call it with a plan they made once (capacity: batch after batch of
    seeds at one value). The points run window by window (`plan.WINDOW`), each window compiled
    when its first run is scheduled."""
    check_runs(len(plan.points), len(seeds), who)
    store = _Cache(cache) if cache is not None else None
    pool = Executor(executor, jobs, who)  # checked before any run
    total = len(plan.points) * len(seeds)
    runs = _Runs(plan, seeds, store)
    result = Sweep(plan.names, (), {}, total)
    try:
        runs.look_up(range(plan.compiled))
        with _window_pool(pool, len(plan.points), who) as runner, \
                count_bar(progress, total, len(runs), "run") as bar:
            for start in range(0, len(plan.points), WINDOW):
                points = range(start, min(start + WINDOW, len(plan.points)))
                if points.stop > plan.compiled:
                    plan.compile_upto(points.stop)
                    bar.update(runs.look_up(points))
                _collect(plan, runner, runs, bar, who, points)
    except (KeyboardInterrupt, SqError) as stop:
        # a Ctrl-C, a lost scheduler, a run sq refuses: the runs that finished go with the error
        if isinstance(stop, KeyboardInterrupt):
            runs.keep_last()     # it may have come between a run's end and its write
        stop.sweep = _finished(result, plan, seeds, runs)
        raise
    return _finished(result, plan, seeds, runs)


def _finished(result: Sweep, plan: Plan, seeds: list[int], runs: "_Runs") -> Sweep:
    """The Sweep of the runs finished, with what the points compiled so far say of them."""
    result.table = runs.in_task_order()
    result.provenance = plan.provenance(seeds)
    result.metric_columns = plan.metric_columns
    return result


class _Runs:
    """A study's finished runs as they arrive: a RunTable (each window's cached runs first),
    each row's task, the tasks of the compiled points, and the cache runs are written to."""

    def __init__(self, plan: Plan, seeds: list[int], store):
        self.plan, self.seeds, self.store = plan, seeds, store
        self.table = RunTable(plan.names)
        self.ids = [self.table.point_id(tuple(p.get(n) for n in plan.names)) for p in plan.points]
        self.tasks: list[Task | None] = [None] * (len(plan.points) * len(seeds))
        self.done = bytearray(len(self.tasks))
        self.task = array("q")          # each row's task index
        self.last = None                # the run being kept, until it is in the cache

    def __len__(self) -> int:
        return len(self.task)

    def look_up(self, points: range) -> int:
        """Make the tasks of compiled points, and keep what the cache holds of them: how many."""
        found = 0
        for i, task in enumerate(self.plan.tasks(self.seeds, points), points.start * len(self.seeds)):
            self.tasks[i] = task
            record = self.store.get(task) if self.store else None
            if record is not None:
                self._add(i, record)
                found += 1
        return found

    def _add(self, i: int, record: dict) -> None:
        task = self.tasks[i]
        self.table.add_run(self.ids[task.point], task.seed, record)
        self.task.append(i)
        self.done[i] = 1

    def missing(self, points: range) -> list[int]:
        """The tasks of `points` without a run yet."""
        n = len(self.seeds)
        return [i for i in range(points.start * n, points.stop * n) if not self.done[i]]

    def keep(self, i: int, record: dict) -> None:
        """A finished run: into the table, then into the cache."""
        self.last = (i, record)
        self._add(i, record)
        if self.store:
            self.store.put(self.tasks[i], record)
        self.last = None

    def keep_last(self) -> None:
        """Write the run an interrupt caught between the table and the cache. A run is in the
        table once its task is in `self.task` (`in_task_order` takes only those rows), so that,
        and not `done`, decides: the two are set a line apart, and an interrupt can come between."""
        if self.last is not None and self.store and self.task and self.task[-1] == self.last[0]:
            self.store.put(self.tasks[self.last[0]], self.last[1])

    def in_task_order(self) -> RunTable:
        return self.table.take(np.argsort(np.frombuffer(self.task, np.int64), kind="stable"))


@contextmanager
def _window_pool(pool: Executor, points: int, who: str):
    """The executor the windows share: the one given, except that a grid of several windows on
    worker processes gets one pool for all of them (not one started per window), each task
    then carrying its point's IR (the IRs of later windows do not exist when it starts)."""
    if pool.kind != "processes" or points <= WINDOW or pool.jobs == 1:
        yield pool
        return
    with owned(process_pool(pool.jobs), who) as processes:
        yield Executor(processes, pool.jobs, who)


def _collect(plan: Plan, pool, runs: _Runs, bar, who: str, points: range) -> None:
    """Run the tasks of `points` that `runs` lacks, keeping each (and caching it) as it finishes."""
    finished = pool.run(run_task, runs.tasks, runs.missing(points), plan.shared(points))
    with closing(finished):
        for i, record in finished:
            if "error" in record:
                point, seed = plan.label(runs.tasks[i])
                raise SqError(f"{who}: the run at {_describe(point)} seed {seed} failed:\n{record['error']}",
                              phase=record.get("phase", "run"), notes=record.get("notes", ()))
            runs.keep(i, record)
            bar.update(1)


# -- the cache ------------------------------------------------------------------------

def task_key(task: Task) -> str:
    """The cache key: everything that determines the record, and the build of sq that made it
    (`files.build_fingerprint`: a fix to the engine is a new key, where the version was not)."""
    text = json.dumps([build_fingerprint(), task.ir_json, task.seed, sorted(task.extra)])
    return hashlib.sha256(text.encode()).hexdigest()


class _Cache:
    """One JSON file per finished run, DIR/KEY[:2]/KEY.json, written atomically."""

    def __init__(self, directory):
        if not isinstance(directory, (str, os.PathLike)):
            raise SqError(f"sweep: cache is a folder (text or a path), found {directory!r}", phase="settings")
        self.root = Path(path_argument(directory, "sweep: cache"))
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SqError(f"cache: cannot create `{directory}`: {e.strerror}", phase="settings") from None
        if not os.access(self.root, os.W_OK):
            raise SqError(f"cache: `{directory}` is not writable", phase="settings")

    def _path(self, task: Task) -> Path:
        key = task_key(task)
        return self.root / key[:2] / f"{key}.json"

    def get(self, task: Task) -> dict | None:
        """The stored record of `task`; None, so the run is done again, for a file that cannot be
        read (not a regular file -- a pipe or a link to a device is never read --, larger than
        RECORD_LIMIT), or that is not the record this run makes: its own key inside, the checksum
        of its numbers, its metrics, each a number."""
        key = task_key(task)
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
        key = task_key(task)
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

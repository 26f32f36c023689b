"""The report of a run: statistics from raw results, and pyserq's JSON.

`Report.from_results(raw)` computes every field of chapter 08 from the
engine's `RawResults`; `Report.to_json()` writes the exact text pyserq
0.1.2's `Report.json()` writes (key order, number printing).
"""
from __future__ import annotations

import functools
import itertools
import math
import operator
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

from sq._support.version import __version__
from sq._support import settings
from sq._support.files import text_or_file
from sq.results import _json_text, stats
from sq.results import steady
from sq._support._optional import require
from sq.errors import SqError
from sq._support.files import make_folder, path_argument, write_atomic
from sq._support.number_format import display, json_number
from sq.results.raw import GaugeRaw, ObserveRaw, ObserveSummary, PoolRaw, RawResults, Running, StageRaw, row_label

SERQ_VERSION = "0.1.2"
REPORT_VERSION = 1


# -- rows ----------------------------------------------------------------------

# Field metadata of report rows: a field sq adds beyond pyserq's report, left out of the JSON.
NOT_SERQ = {"serq": False}


class Observe:
    """One observation's statistics over its samples at t >= warmup.

    Beyond pyserq's fields (JSON_FIELDS), the order statistics min, p50, p90,
    p95, p99.9 (`p999`) and max: all exact, from the samples, by the quantile
    function of the p99 (`sq.results.stats.quantile`).

    A run with samples="none" keeps no samples (`samples`, `times`, `sessions`, `turns` are
    None) but their `summary`: count, mean and cv2 are then the same, the CI and the
    quantiles approximate (docs/guide.md, "Long runs").

    The statistics other than `count` are computed the first time one of them is read
    (`_LAZY`), then kept: a sweep of many short runs that reads a few fields of each does
    not pay for the others.
    """

    JSON_FIELDS = ("count", "mean", "ci", "cv2", "p99")
    # what the text report, to_pandas and sweeps show: the JSON's and the order statistics
    SUMMARY_FIELDS = ("count", "mean", "ci", "cv2", *(name for name, _ in stats.SUMMARY_QUANTILES))

    def __init__(self, name: str, samples: np.ndarray | None, times: np.ndarray | None,
                 sessions: np.ndarray | None, turns: np.ndarray | None, summary: ObserveSummary | None = None,
                 moments: tuple[float, float] | None = None):
        self.name = name
        self.samples, self.times, self.sessions, self.turns = samples, times, sessions, turns
        self.summary = summary
        self.count = summary.n if samples is None else len(samples)
        # the engine's Welford (mean, M2) of exactly these samples, or None (computed from them)
        self._moments = moments

    @classmethod
    def from_raw(cls, raw: ObserveRaw, warmup: float) -> "Observe":
        if raw.summary is not None:
            return cls(raw.name, None, None, None, None, raw.summary)
        t, x, s, k = raw.times, raw.samples, raw.sessions, raw.turns
        # the engine's arrays (float64 values, narrow integer ids: widening would copy them all) as
        # they are, tested here (a call per observe and run cost more); others converted
        if type(t) is np.ndarray and type(x) is np.ndarray and type(s) is np.ndarray and type(k) is np.ndarray \
                and t.dtype is _FLOAT64 and x.dtype is _FLOAT64 and s.dtype.kind in "iu" and k.dtype.kind in "iu":
            times, samples, sessions, turns = t, x, s, k
        else:
            times, samples, sessions, turns = _floats(t), _floats(x), _integers(s), _integers(k)
        return cls.of(raw.name, samples, times, sessions, turns, raw.moments, warmup)

    @classmethod
    def of(cls, name: str, samples: np.ndarray, times: np.ndarray, sessions: np.ndarray, turns: np.ndarray,
           moments: tuple[float, float] | None, warmup: float) -> "Observe":
        """The observe of a run's recorded samples (float64 values and times, integer ids) and the
        engine's moments of them all: the samples at t >= warmup (the one warm-up cut, also of
        the engine's own rows, sq/_engine.pyx's _report_rows)."""
        if not warmup <= 0.0:    # (no sample is recorded before time 0: then all are kept)
            # Samples are recorded as the clock runs, so those at t >= warmup are a suffix:
            # slicing keeps views of the engine's arrays instead of copying them.
            first = int(times.searchsorted(warmup, side="left"))
            if first:   # (the engine records only once warm: its moments are of every sample)
                samples, times, sessions, turns = samples[first:], times[first:], sessions[first:], turns[first:]
                moments = None
        return cls(name, samples, times, sessions, turns, None, moments)

    def _computed(self, attr: str, compute):
        kept = vars(self)
        kept.update(_summary_fields(self) if self.samples is None else compute(self))
        return kept[attr]

    def json_values(self) -> tuple:
        """The JSON_FIELDS' values, those not read yet computed here (together: `count` is
        always kept, the others come from one pass)."""
        kept = vars(self)
        if "p99" not in kept or "mean" not in kept:
            if self.samples is None:
                kept.update(_summary_fields(self))
            else:   # (the usual case, per observe of every run: the values straight into the instance)
                kept["mean"], kept["ci"], kept["cv2"], kept["p99"] = stats.json_values(self.samples, self._moments)
        return _OBSERVE_VALUES(self)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.SUMMARY_FIELDS)
        return f"Observe(name={self.name!r}, {shown})"

    def quantile(self, q: float) -> float:
        """The q-quantile of the samples: the ceil(q·n)-th smallest in total order (what the p99
        is), exact; from the histogram (within 0.5 %) when the run kept no samples."""
        if not (settings.is_number(q) and 0.0 <= q <= 1.0):
            raise SqError(f"quantile: q is a number from 0 to 1, found {q!r}", phase="settings")
        if self.samples is None:
            return stats.summary_quantiles(self.summary, (q,))[0]
        return stats.quantile(self.samples, q)


def _summary_fields(o: Observe) -> dict[str, float]:
    """Every statistic of a run that kept only the summary (they come together)."""
    return vars(stats.summary_stats(o.summary))


# An Observe's statistics computed on first read: field name -> what computes it from the
# samples (with the other fields computed alongside).
def _order_statistics(o: Observe) -> dict[str, float]:
    return stats.order_statistics(o.samples)


def _json_statistics(o: Observe) -> dict[str, float]:
    return stats.json_statistics(o.samples, o._moments)


_LAZY = {**dict.fromkeys((name for name, _ in stats.SUMMARY_QUANTILES), _order_statistics),
         # the JSON's statistics from one pass over the samples (the JSON reads them all); the
         # other order statistics, when read, select the p99 again, the same way
         **dict.fromkeys(("mean", "cv2", "ci", "p99"), _json_statistics)}


class _Lazy:
    """An Observe's statistic computed on its first read and kept in the instance (a non-data
    descriptor: once kept, a read is a plain attribute's, not a call through `__getattr__`,
    which made every attribute read of an Observe go through a Python-level hook)."""

    def __init__(self, name: str, compute):
        self.name, self.compute = name, compute

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return obj._computed(self.name, self.compute)


for _attr, _compute in _LAZY.items():
    setattr(Observe, _attr, _Lazy(_attr, _compute))
del _attr, _compute


# The engine's arrays are taken as they are, checked by type (a call into numpy per array of
# every run costs more); other sequences (raw results built by hand) are converted.
_FLOAT64 = np.dtype(np.float64)


def _floats(xs) -> np.ndarray:
    return xs if type(xs) is np.ndarray and xs.dtype is _FLOAT64 else np.asarray(xs, dtype=np.float64)


def _integers(xs) -> np.ndarray:
    if not (type(xs) is np.ndarray):
        xs = np.asarray(xs)
    return xs if xs.dtype.kind in "iu" else xs.astype(np.int64)


def _mean(running: Running | None, xs) -> float:
    """The engine's running mean when it kept one, else the Welford mean of the samples."""
    return running.mean if running is not None else stats.mean_or_nan(xs)


@dataclass
class Gauge:
    """A gauge's time statistics over [warmup, end] and its whole-run change points."""

    name: str
    mean: float
    ci: float
    min: float
    max: float
    times: np.ndarray | None     # None when the run kept no samples
    values: np.ndarray | None

    JSON_FIELDS = ("mean", "ci", "min", "max")

    @classmethod
    def from_raw(cls, raw: GaugeRaw, warmup: float, end: float) -> "Gauge":
        if raw.fold is not None:
            g = stats.fold_stats(raw.fold, warmup, end)
            return cls(raw.name, g.mean, g.ci, g.min, g.max, None, None)
        times = np.asarray(raw.times, dtype=np.float64)
        values = np.asarray(raw.values, dtype=np.float64)
        g = stats.gauge_stats(times, values, warmup, end)
        return cls(raw.name, g.mean, g.ci, g.min, g.max, times, values)


@dataclass
class Stage:
    """One stage row (chapter 08 §3.4); fields in JSON order."""

    name: str
    index: int | None
    mean_number: float
    utilization: float
    completed: int
    throughput: float
    mean_wait: float
    mean_service: float
    iterations: int
    prefill_only: float
    decode_only: float
    mixed: float
    mean_decodes: float
    mean_decode_batch: float
    mean_decode_step: float
    mean_itl: float
    itl_p50: float
    itl_p99: float
    # beyond pyserq's row (not in the JSON): per iteration started warm, the mean of scheduled
    # tokens / budget and of the jobs it served -- headroom that `utilization` does not show
    mean_budget_use: float = field(default=math.nan, metadata=NOT_SERQ)
    mean_batch: float = field(default=math.nan, metadata=NOT_SERQ)

    @classmethod
    def from_raw(cls, raw: StageRaw, warmup: float, end: float) -> "Stage":
        wait, service, batch, step = raw.wait_mean, raw.service_mean, raw.decode_batch_mean, raw.decode_step_mean
        number, busy, prefill_only, decode_only, mixed, decodes = stats.time_means(
            (raw.number, raw.busy, raw.prefill_only, raw.decode_only, raw.mixed, raw.decodes), warmup, end)
        # `_mean` written out where the engine's running mean is the usual case (a call per field
        # of every row and run costs more)
        return cls.of(raw.name, raw.index, end - warmup, number, busy, service.n if service is not None else len(raw.services),
                      wait.mean if wait is not None else _mean(wait, raw.waits),
                      service.mean if service is not None else _mean(service, raw.services), int(raw.iterations),
                      prefill_only, decode_only, mixed, decodes,
                      batch.mean if batch is not None else _mean(batch, raw.decode_batches),
                      step.mean if step is not None else _mean(step, raw.decode_steps),
                      raw.itl if raw.itl is not None else stats.itl_histogram(raw.itl_gaps),
                      raw.budget_use.mean if raw.budget_use is not None else _mean(None, ()),
                      raw.batch.mean if raw.batch is not None else _mean(None, ()))

    @classmethod
    def of(cls, name, index, span, mean_number, utilization, completed, mean_wait, mean_service, iterations,
           prefill_only, decode_only, mixed, mean_decodes, mean_decode_batch, mean_decode_step, itl,
           mean_budget_use, mean_batch) -> "Stage":
        """The row of a stage's measures over the measured span (its time means, running means
        and counts, and its inter-token gaps' histogram `itl`): the throughput and the
        inter-token fields derived here. The one maker of a stage row: from_raw and the engine's
        own rows (sq/_engine.pyx's _report_rows) call it."""
        mean_itl, p50, p99 = stats.itl_fields(itl) if itl.n else stats.NO_ITL
        # the fields in order, positionally (_ROW_CALL)
        return cls(name, index, mean_number, utilization, completed, _ratio(completed, span), mean_wait, mean_service,
                   iterations, prefill_only, decode_only, mixed, mean_decodes, mean_decode_batch, mean_decode_step,
                   mean_itl, p50, p99, mean_budget_use, mean_batch)


@dataclass
class Pool:
    """One pool row (chapter 08 §3.5); fields in JSON order."""

    name: str
    index: int | None
    mean_used: float
    mean_cached: float
    mean_queue: float
    mean_holders: float
    mean_wait: float
    admissions: int
    evicted_entries: int
    evicted_units: float
    preemptions: int
    spills: int
    rejected: int
    stuck: int

    @classmethod
    def from_raw(cls, raw: PoolRaw, warmup: float, end: float) -> "Pool":
        used, cached, queue, holders = stats.time_means((raw.used, raw.cached, raw.queue, raw.holders), warmup, end)
        return cls.of(raw.name, raw.index, used, cached, queue, holders, _mean(raw.wait_mean, raw.waits),
                      raw.admissions, raw.evicted_entries, raw.evicted_units, raw.preemptions, raw.spills,
                      raw.rejected, raw.stuck)

    @classmethod
    def of(cls, name, index, mean_used, mean_cached, mean_queue, mean_holders, mean_wait, admissions,
           evicted_entries, evicted_units, preemptions, spills, rejected, stuck) -> "Pool":
        """The one maker of a pool row (from_raw and the engine's own rows call it): the counts
        as ints, the evicted units a float, whatever number types they came as."""
        # the fields in order, positionally (_ROW_CALL)
        return cls(name, index, mean_used, mean_cached, mean_queue, mean_holders, mean_wait, int(admissions),
                   int(evicted_entries), float(evicted_units), int(preemptions), int(spills), int(rejected), int(stuck))


# _ROW_CALL: a report is built per run, and a class called with keywords first packs them into a
# dict: a row's construction costs ~7x what the same call with its fields in order does. Each
# row's one maker (Stage.of, Pool.of, Report.of) therefore calls its class positionally, in its
# field order; tests/engine/test_engine_results.py checks each field by name against a raw result
# with distinct values.


def _ratio(count: int, span: float) -> float:
    """count / span with IEEE results (inf, NaN) instead of ZeroDivisionError."""
    return count / span if span and type(span) is float else stats.ieee_div(float(count), float(span))


@functools.cache
def _json_fields(row_type) -> tuple[str, ...]:
    """A stage's or pool's fields in its JSON row, in order (those marked serq=False are sq's own)."""
    return tuple(f.name for f in fields(row_type) if f.metadata.get("serq") is not False)


@functools.cache
def _json_object(names: tuple[str, ...]):
    """(the member texts `'"name":'`, a getter of the values in order) of a JSON object with these fields."""
    return tuple(f'"{name}":' for name in names), operator.attrgetter(*names)


_OBSERVE_KEYS, _OBSERVE_VALUES = _json_object(Observe.JSON_FIELDS)
_GAUGE_KEYS, _GAUGE_VALUES = _json_object(Gauge.JSON_FIELDS)


@functools.cache
def _row_object(row_type):
    """`_json_object` of a stage's or pool's row type (one cache lookup by type per row: a
    lookup by the fields' names hashes their tuple each time)."""
    return _json_object(_json_fields(row_type))


# -- the report ------------------------------------------------------------------

def _rows(*columns, chunk: int = 1 << 16):
    """The rows of equal-length arrays as tuples of Python numbers, a chunk at a time: a dump
    streams to its file without a Python object per number of a whole column (issue 14)."""
    for start in range(0, len(columns[0]), chunk):
        yield from zip(*(np.asarray(c)[start:start + chunk].tolist() for c in columns))


# the report's own members of its JSON, in order, before observes, gauges, stages and pools
_HEAD_FIELDS = ("serq_version", "horizon", "end", "warmup", "seed", "events", "arrivals", "ended", "turns", "mean_live")
_HEAD_KEYS, _HEAD_VALUES = _json_object(_HEAD_FIELDS)


@dataclass
class Report:
    """The result of one run (`sq.run`): what pyserq 0.1.2's report holds, field for field.

    Run: `horizon`, `end` (the last instant reached), `warmup`, `seed`, `events`,
    `arrivals`, `ended` (sessions that ended), `turns`; `observes` {name: Observe}
    (count, mean, ci, p50/p90/p99, min, max over samples at t >= warmup, and the samples
    unless samples="none"), `gauges` {name: Gauge}, `stages` and `pools` (utilisation and
    their own statistics), `warnings` (pyserq's, e.g. live sessions still growing).
    Provenance beside it (not in the JSON unless asked): `program`, `overrides`, `defs`,
    `sq_version`, `wall_s`.

    Conversions: `to_json(path=None, provenance=False)` -- pyserq's exact JSON text,
    returned, or written to `path` --, `to_text()`, `to_pandas()` (a dict of DataFrames),
    `samples_frame()`, `dump(folder)` (CSV per observe and gauge). Invariant: for the same
    program, seed and settings `to_json()` equals pyserq 0.1.2's `Report.json()` text.
    """

    horizon: float
    end: float
    warmup: float
    seed: int
    events: int
    arrivals: int
    ended: int
    turns: int
    mean_live: float
    observes: dict[str, Observe] = field(default_factory=dict)
    gauges: dict[str, Gauge] = field(default_factory=dict)
    stages: list[Stage] = field(default_factory=list)
    pools: list[Pool] = field(default_factory=list)
    serq_version: str = SERQ_VERSION
    iteration_trace: list[str] = field(default_factory=list)  # only when the run traced
    eviction_trace: list[str] = field(default_factory=list)   # only with trace_evictions=True
    pool_dump: list[str] = field(default_factory=list)        # only with dump_pools=True
    # what makes the report's means doubtful (a run not in steady state); not in the JSON
    warnings: list[str] = field(default_factory=list)
    # None, or why the run ended early ("interrupted", "wall limit"): `end` is the time reached
    stopped: str | None = None
    # the live sessions' growth per unit of time from the first to the second half of the
    # measured window (`sq.results.steady.live_growth`): a study's slope test; not in the JSON
    growth: float = float("nan")
    # the sessions that arrived after the warm-up (`sq.results.steady.arrivals_measured`); not in the JSON
    arrivals_measured: float = float("nan")
    # provenance (never in the serQ JSON unless asked): the program file, the `let`
    # overrides and `def` replacements applied (two runs differing only in either are told
    # apart), the sq that ran it and the run's wall time (lowering, engine, report)
    program: str | None = None
    overrides: dict = field(default_factory=dict)
    defs: dict = field(default_factory=dict)
    sq_version: str = __version__
    wall_s: float = float("nan")

    @classmethod
    def from_results(cls, raw: RawResults) -> "Report":
        warmup, end = float(raw.warmup), float(raw.end)
        warnings, growth, arrivals_measured = steady.of_run(raw)
        iteration_trace, eviction_trace, pool_dump = (getattr(raw, "iteration_trace", None),
                                                      getattr(raw, "eviction_trace", None),
                                                      getattr(raw, "pool_dump", None))
        # (loops, not comprehensions: a comprehension is a function call of its own, per run)
        observes, gauges, stages, pools = {}, {}, [], []
        for o in raw.observes:
            observes[o.name] = Observe.from_raw(o, warmup)
        for g in raw.gauges:
            gauges[g.name] = Gauge.from_raw(g, warmup, end)
        for s in raw.stages:
            stages.append(Stage.from_raw(s, warmup, end))
        for p in raw.pools:
            pools.append(Pool.from_raw(p, warmup, end))
        return cls.of(float(raw.horizon), end, warmup, raw.seed, raw.events, raw.arrivals, raw.ended, raw.turns,
                      stats.time_means((raw.live,), warmup, end)[0], observes, gauges, stages, pools,
                      iteration_trace, eviction_trace, pool_dump, warnings, getattr(raw, "stopped", None),
                      growth, arrivals_measured)

    @classmethod
    def of(cls, horizon: float, end: float, warmup: float, seed, events, arrivals, ended, turns, mean_live: float,
           observes: dict, gauges: dict, stages: list, pools: list, iteration_trace, eviction_trace, pool_dump,
           warnings: list, stopped: str | None, growth: float, arrivals_measured: float) -> "Report":
        """The one maker of a run's Report (without provenance, which sq.run sets): from_results
        and the engine's own rows (sq/_engine.pyx's _report_rows) call it. The counts as ints,
        the traces as lists (empty when not kept)."""
        if type(seed) is not int or type(events) is not int or type(arrivals) is not int \
                or type(ended) is not int or type(turns) is not int:
            # (a hand-built raw result's numpy counts: the engine's are ints, which five int() calls
            # per run of a sweep only copied, at more than the asking costs)
            seed, events, arrivals, ended, turns = int(seed), int(events), int(arrivals), int(ended), int(turns)
        # the fields in order, positionally (_ROW_CALL)
        return cls(
            horizon, end, warmup, seed, events, arrivals, ended, turns, mean_live,
            observes, gauges, stages, pools, SERQ_VERSION,
            list(iteration_trace) if iteration_trace else [],
            list(eviction_trace) if eviction_trace else [],
            list(pool_dump) if pool_dump else [],
            warnings, stopped, growth, arrivals_measured,
        )

    # lookups, as pyserq's Report has them
    def observe(self, name: str) -> Observe | None:
        return self.observes.get(name)

    def gauge(self, name: str) -> Gauge | None:
        return self.gauges.get(name)

    def stage(self, name: str) -> Stage | None:
        return next((s for s in self.stages if s.name == name), None)

    def pool(self, name: str) -> Pool | None:
        return next((p for p in self.pools if p.name == name), None)

    def stages_named(self, name: str) -> list[Stage]:
        return [s for s in self.stages if s.name == name]

    def pools_named(self, name: str) -> list[Pool]:
        return [p for p in self.pools if p.name == name]

    # -- output --------------------------------------------------------------------

    def to_json(self, path=None, provenance: bool = False) -> str | None:
        """The JSON text of chapter 08 §3, identical to pyserq's `Report.json()`; with
        `provenance=True` a last key `"provenance"` adds the program, overrides, defs, sq
        version and wall time. With a `path` the text is written there (atomically) and None
        returned, as every `to_json` of sq does (`to_json(True)`, the old form, still means
        provenance)."""
        if isinstance(path, bool):
            path, provenance = None, path
        if path is not None:
            return text_or_file(self.to_json(provenance=provenance), path, "Report.to_json")
        # (the whole text written in C, into one buffer: sq/results/_json_text.pyx)
        tail = ""
        if self.stopped:    # a run stopped early says so after pyserq's fields (a complete run's text is pyserq's)
            tail = f',"stopped":"{self.stopped}"'
        if provenance:
            tail += ',"provenance":' + self._provenance_json()
        return _json_text.report_text(self, _HEAD_KEYS, _HEAD_VALUES, _OBSERVE_KEYS, _GAUGE_KEYS, _GAUGE_VALUES,
                                      _row_object, tail, json_number)

    def _provenance_json(self) -> str:
        import json  # noqa: PLC0415

        return json.dumps({"program": self.program, "overrides": self.overrides, "defs": self.defs,
                           "sq_version": self.sq_version, "wall_s": self.wall_s}, separators=(",", ":"))

    json = to_json  # pyserq's spelling

    def to_dict(self) -> dict:
        """The JSON report as Python objects (null for NaN and infinities)."""
        import json  # noqa: PLC0415

        return json.loads(self.to_json())

    def dump(self, directory) -> None:
        """Write every observation as `NAME.csv` (time,session,turn,value) and every
        gauge's change points as `gauge/NAME.csv` (time,value) under `directory`."""
        if any(o.samples is None for o in self.observes.values()) or \
                any(g.times is None for g in self.gauges.values()):
            raise SqError("dump: this run kept no samples (samples='none'); run with samples='all' to dump them",
                          phase="settings")
        root = Path(path_argument(directory, "dump"))
        make_folder(str(root), "dump:")
        d = display
        for o in self.observes.values():
            rows = (f"{d(t)},{s},{k},{d(v)}\n" for t, s, k, v in
                    _rows(o.times, o.sessions, o.turns, o.samples))
            write_atomic(root / f"{o.name}.csv", itertools.chain(["time,session,turn,value\n"], rows))
        if self.gauges:
            (root / "gauge").mkdir(exist_ok=True)
            for g in self.gauges.values():
                rows = (f"{d(t)},{d(v)}\n" for t, v in _rows(g.times, g.values))
                write_atomic(root / "gauge" / f"{g.name}.csv", itertools.chain(["time,value\n"], rows))

    def to_text(self) -> str:
        """A readable report for the terminal (layout only; the numbers are the JSON's)."""
        return _render_text(self)

    def to_pandas(self) -> dict:
        """Per-section DataFrames (observes, gauges, stages, pools), each with the run's `seed`."""
        pd = require("pandas", "Report.to_pandas()")
        obs = [{"name": o.name, **{k: getattr(o, k) for k in Observe.SUMMARY_FIELDS}}
               for o in self.observes.values()]
        gau = [{"name": g.name, **{k: getattr(g, k) for k in Gauge.JSON_FIELDS}}
               for g in self.gauges.values()]
        frames = {
            "observes": pd.DataFrame(obs, columns=["name", *Observe.SUMMARY_FIELDS]),
            "gauges": pd.DataFrame(gau, columns=["name", *Gauge.JSON_FIELDS]),
            "stages": _rows_frame(pd, self.stages, Stage),
            "pools": _rows_frame(pd, self.pools, Pool),
        }
        for frame in frames.values():
            frame.insert(0, "seed", pd.Series([self.seed] * len(frame), dtype="uint64"))
        return frames

    def samples_frame(self):
        """Every observation sample at t >= warmup as one long DataFrame: observe (categorical),
        time, value, session (the arrival serial) and turn (`turn_no` then), in record order
        per observe."""
        pd = require("pandas", "Report.samples_frame()")
        if any(o.samples is None for o in self.observes.values()):
            raise SqError("Report.samples_frame() needs the samples, which a run with samples='none' "
                          "does not keep", phase="settings")
        names = list(self.observes)
        obs = list(self.observes.values())
        codes = np.repeat(np.arange(len(obs), dtype=np.int32), [len(o.samples) for o in obs])
        cat = pd.Categorical.from_codes(codes, categories=pd.Index(names, dtype=object))

        def column(attr, dtype):
            parts = [np.asarray(getattr(o, attr), dtype=dtype) for o in obs]
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

        return pd.DataFrame({"observe": cat, "time": column("times", np.float64),
                             "value": column("samples", np.float64),
                             "session": column("sessions", np.int64), "turn": column("turns", np.int64)})


def _rows_frame(pd, rows, kind):
    """Stage or pool rows as a DataFrame, its columns those of the row type; `index` (None
    outside arrays) as nullable integers, not floats."""
    frame = pd.DataFrame([vars(r) for r in rows], columns=[f.name for f in fields(kind)])
    frame["index"] = pd.array([r.index for r in rows], dtype="Int64")
    return frame


# -- the text report -------------------------------------------------------------

def _fixed(x, digits: int) -> str:
    x = float(x)
    return f"{x:.{digits}f}" if math.isfinite(x) else display(x)


def text_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Columns as wide as their widest cell; the first left-aligned, the rest right."""
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return ["", line(headers), *(line(r) for r in rows)]


def _render_text(r: Report) -> str:
    out = [f"run: horizon {json_number(r.horizon)} end {json_number(r.end)} "
           f"warmup {json_number(r.warmup)} seed {r.seed} events {r.events} "
           f"arrivals {r.arrivals} ended {r.ended} turns {r.turns} "
           f"mean live {_fixed(r.mean_live, 3)}"]
    if any(o.samples is None for o in r.observes.values()):
        out.append("samples: none kept; the observes' CI is by one-pass batches and p99 within 0.5 %")
    if r.stopped:
        out.append(f"{r.stopped}: stopped at simulated time {json_number(r.end)} of horizon "
                   f"{json_number(r.horizon)}; the statistics cover [warmup, {json_number(r.end)}]")
    if r.observes:
        out += text_table(["observe", "count", "mean", "95% CI", "cv2", "min", "p50", "p90", "p95", "p99",
                       "p99.9", "max"],
                      [[o.name, str(o.count), _fixed(o.mean, 4), "±" + _fixed(o.ci, 4), _fixed(o.cv2, 3),
                        *(_fixed(getattr(o, k), 4) for k in ("min", "p50", "p90", "p95", "p99", "p999", "max"))]
                       for o in r.observes.values()])
    if r.gauges:
        out += text_table(["gauge", "mean", "95% CI", "min", "max"],
                      [[g.name, _fixed(g.mean, 4), "±" + _fixed(g.ci, 4), _fixed(g.min, 4),
                        _fixed(g.max, 4)] for g in r.gauges.values()])
    if r.stages:
        out += text_table(["stage", "number", "util", "done", "thru", "wait", "service", "iters"],
                      [[row_label(s.name, s.index), _fixed(s.mean_number, 3), _fixed(s.utilization, 3),
                        str(s.completed), _fixed(s.throughput, 4), _fixed(s.mean_wait, 4),
                        _fixed(s.mean_service, 4), str(s.iterations)] for s in r.stages])
    steps = [s for s in r.stages if s.iterations > 0]
    if steps:
        out += text_table(["step", "prefill only", "decode only", "mixed", "idle", "decodes",
                       "decode batch", "decode step", "itl mean", "itl p50", "itl p99", "budget use",
                       "batch"],
                      [[row_label(s.name, s.index), _fixed(s.prefill_only, 3), _fixed(s.decode_only, 3),
                        _fixed(s.mixed, 3), _fixed(1.0 - s.prefill_only - s.decode_only - s.mixed, 3),
                        _fixed(s.mean_decodes, 3), _fixed(s.mean_decode_batch, 3),
                        _fixed(s.mean_decode_step, 6), _fixed(s.mean_itl, 6), _fixed(s.itl_p50, 6),
                        _fixed(s.itl_p99, 6), _fixed(s.mean_budget_use, 3), _fixed(s.mean_batch, 2)]
                       for s in steps])
    if r.pools:
        out += text_table(["pool", "used", "cached", "queue", "holders", "wait", "admits", "evict(n)",
                       "evict(u)", "preempt", "spill", "rej", "stuck"],
                      [[row_label(p.name, p.index), _fixed(p.mean_used, 1), _fixed(p.mean_cached, 1),
                        _fixed(p.mean_queue, 3), _fixed(p.mean_holders, 3), _fixed(p.mean_wait, 4),
                        str(p.admissions), str(p.evicted_entries), _fixed(p.evicted_units, 0),
                        str(p.preemptions), str(p.spills), str(p.rejected), str(p.stuck)]
                       for p in r.pools])
        for p in r.pools:
            if p.stuck > 0:
                out.append(f"stuck: {p.stuck} session(s) preempted again at pool "
                           f"`{row_label(p.name, p.index)}` without passing the position of "
                           "their previous preemption")
    out += [f"warning: {w}" for w in r.warnings]
    return "\n".join(out)

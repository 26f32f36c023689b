"""Metric names: the one definition of what a study records of a run.

A metric is a flat name and a float. The names are stable and documented
(docs/api.md):

* every observe `OBS`: `OBS.count|mean|ci|cv2|min|p50|p90|p95|p99|p999|max`, and
  `OBS.le(X)` (the share of samples <= X: SLO attainment) when asked for;
* every gauge `G`: `G.mean|min|max`;
* every stage `stage.NAME.util|thru|number|wait|service|iters` (an array member
  is `NAME[i]`);
* every pool `pool.NAME.used|cached|queue|wait|admits|preemptions|evicted|rejected|stuck`;
* the run: `arrivals|ended|turns|events|mean_live|wall_s|warnings|growth|arrivals_measured`
  (`growth`: the live sessions' growth per unit of time between the halves of the measured
  window, `sq.results.steady.live_growth`; `arrivals_measured`: the sessions that arrived
  after the warm-up, as `ended` counts those that ended after it);
* `OBS.drift` when asked for: the growth per unit of time of the observe's mean between
  the halves of the measured window (samples by the time they were recorded), the SLO
  metric's own steady-state test;
* `OBS.mser` when asked for: the warm-up MSER-5 suggests for the run (the time of the
  first sample it would keep; the run's own warm-up when it would cut nothing);
* `OBS.p50|p90|p95|p99|p999@pooled` when asked for: the quantile over all the seeds' samples of
  a study point (not the mean of each run's quantile). A run's value is a `Tail`: its own
  quantile as a number, carrying its count and its largest samples, which the point pools
  (`sq.results.stats.pooled_interval`: a seed-clustered interval of the share).

Percentiles are the report's own order statistics (`Observe.p50` … `Observe.max`,
by `sq.results.stats.quantile`), so `OBS.p99` is the report's p99 to the bit.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from sq.errors import SqError
from sq.results.report import Observe
from sq.results.stats import SUMMARY_QUANTILES, mean_or_nan, quantile

# observe statistics: the report's Observe fields (its order statistics by the p99's quantile)
OBSERVE_FIELDS = Observe.SUMMARY_FIELDS
GAUGE_FIELDS = ("mean", "min", "max")
# metric field -> the report's Stage / Pool attribute
STAGE_FIELDS = {"util": "utilization", "thru": "throughput", "number": "mean_number",
                "wait": "mean_wait", "service": "mean_service", "iters": "iterations"}
POOL_FIELDS = {"used": "mean_used", "cached": "mean_cached", "queue": "mean_queue", "wait": "mean_wait",
               "admits": "admissions", "preemptions": "preemptions", "evicted": "evicted_units",
               "rejected": "rejected", "stuck": "stuck"}
# the metrics that count things: whole numbers in a record, so a table writes 2239, not 2239.0
COUNT_FIELDS = frozenset({"count", "iters", "admits", "preemptions", "rejected", "stuck", "arrivals", "ended",
                          "turns", "events", "warnings"})
RUN_FIELDS = ("arrivals", "ended", "turns", "events", "mean_live", "wall_s", "warnings", "growth",
              "arrivals_measured")

NAN = float("nan")
_IDENT = r"[^\W\d]\w*"
_FROM_SAMPLES = re.compile(rf"^\s*({_IDENT})\.(drift|mser)\s*$")
_POOLED = re.compile(rf"^\s*({_IDENT})\.(\w+)@pooled\s*$")
_LE = re.compile(rf"^\s*({_IDENT})\s*(?:\.le\(\s*([^()]+?)\s*\)|<=\s*(\S+))\s*$")
_PLAIN = re.compile(rf"^({_IDENT})\.(\w+)$|^(stage|pool)\.({_IDENT}(?:\[\d+\])?)\.(\w+)$|^(\w+)$")


@dataclass(frozen=True)
class Metric:
    """A parsed metric name: `name` is its canonical spelling (the column of a table)."""

    name: str
    observe: str | None = None   # for OBS.le(X), OBS.drift, OBS.mser: computed from the samples
    le: float | None = None      # the bound of OBS.le(X); the quantile's level of OBS.pNN@pooled
    kind: str = "le"             # "le", "drift", "mser" or "pooled"


def parse_metric(text: str) -> Metric:
    """Check the form of a metric name; `OBS<=X` is accepted for `OBS.le(X)`.

    Whether the observe, stage or pool exists is checked against a program
    by `check_metrics`.
    """
    if not isinstance(text, str):
        raise SqError(f"a metric name is text, found {text!r}", phase="settings")
    m = _FROM_SAMPLES.match(text)
    if m:
        return Metric(f"{m.group(1)}.{m.group(2)}", m.group(1), kind=m.group(2))
    m = _POOLED.match(text)
    if m:
        q = POOLED_LEVELS.get(m.group(2))
        if q is None:
            raise SqError(f"metric `{text}`: a pooled metric is a quantile of an observe, "
                          f"{'|'.join(POOLED_LEVELS)}@pooled", phase="settings")
        return Metric(f"{m.group(1)}.{m.group(2)}@pooled", m.group(1), q, kind="pooled")
    m = _LE.match(text)
    if m:
        bound = m.group(2) if m.group(2) is not None else m.group(3)
        try:
            x = float(bound)
        except ValueError:
            raise SqError(f"metric `{text}`: the bound of `le` must be a number, found `{bound}`",
                          phase="settings") from None
        if math.isnan(x):
            raise SqError(f"metric `{text}`: the bound of `le` must be a number, found `{bound}`", phase="settings")
        return Metric(f"{m.group(1)}.le({_number(x)})", m.group(1), x)
    m = _PLAIN.match(text.strip())
    ok = m is not None and (
        (m.group(1) is not None and (m.group(2) in OBSERVE_FIELDS or m.group(2) in GAUGE_FIELDS))
        or (m.group(3) == "stage" and m.group(5) in STAGE_FIELDS)
        or (m.group(3) == "pool" and m.group(5) in POOL_FIELDS)
        or (m.group(6) is not None and m.group(6) in RUN_FIELDS))
    if not ok:
        raise SqError(f"unknown metric `{text}`", phase="settings", notes=(
            "help: metrics are OBS.count|mean|ci|cv2|min|p50|p90|p95|p99|p999|max, OBS.le(X), OBS.drift, OBS.mser, "
            "OBS.p99@pooled (any quantile), "
            "G.mean|min|max, stage.NAME.util|thru|number|wait|service|iters, pool.NAME."
            f"{'|'.join(POOL_FIELDS)} and {'|'.join(RUN_FIELDS)}",))
    return Metric(text.strip())


def weight_column(name: str) -> str | None:
    """The count a metric is a share of (`OBS.count` for `OBS.le(X)`): over seeds it is pooled
    weighted by that count, not averaged run by run (a short run's share counts for less)."""
    m = _LE.match(name)
    return f"{m.group(1)}.count" if m else None


def pooled_level(name: str) -> float | None:
    """The quantile level of a pooled metric (`OBS.p99@pooled` -> 0.99), else None."""
    m = _POOLED.match(name)
    return POOLED_LEVELS.get(m.group(2)) if m else None


def _number(x: float) -> str:
    """`0.5`, `2`, `inf`: a bound as it appears in a column name."""
    return str(int(x)) if x.is_integer() else repr(x)


def check_metrics(names, program) -> list[Metric]:
    """Parse `names` (one name, or a list of them) and check each against a compiled program
    (its observes, gauges, stages and pools); the error lists what exists."""
    if isinstance(names, str):
        names = [names]     # one metric, as `capacity` takes one condition and `sweep` one seed
    elif not hasattr(names, "__iter__"):
        raise SqError(f"metrics are a metric name or a list of them, found {names!r}", phase="settings")
    d = program.to_dict() if hasattr(program, "to_dict") else program
    known = set(program_metric_names(d))
    observes = set(d["observes"])
    out = []
    for text in names:
        metric = parse_metric(text)
        if metric.observe is not None:
            if metric.observe not in observes:
                raise SqError(f"metric `{text}`: the program has no observe `{metric.observe}`", phase="settings",
                              notes=(f"help: observes: {', '.join(d['observes']) or '(none)'}",))
        elif metric.name not in known:
            raise SqError(f"metric `{text}`: the program has no such metric", phase="settings",
                          notes=(f"help: e.g. {', '.join(sorted(known)[:12])}, …",))
        out.append(metric)
    return out


def program_metric_names(ir: dict) -> list[str]:
    """Every metric a run of this IR reports without asking (in `report_metrics` order)."""
    names = [f"{o}.{f}" for o in ir["observes"] for f in OBSERVE_FIELDS]
    names += [f"{g['name']}.{f}" for g in ir.get("gauges") or [] for f in GAUGE_FIELDS]
    names += [f"stage.{_label(s['name'], s.get('index'))}.{f}" for s in ir["stages"] for f in STAGE_FIELDS]
    names += [f"pool.{_label(p['name'], p.get('index'))}.{f}" for p in ir["pools"] for f in POOL_FIELDS]
    return names + list(RUN_FIELDS)


def _label(name: str, index: int | None) -> str:
    return name if index is None else f"{name}[{index}]"


def report_metrics(report, extra=()) -> dict[str, float]:
    """Every metric of one report, flat, plus the `extra` ones asked for (`OBS.le(X)`)."""
    out: dict[str, float] = {}
    for o in report.observes.values():
        out.update(_observe_metrics(o))
    for g in report.gauges.values():
        for f in GAUGE_FIELDS:
            out[f"{g.name}.{f}"] = float(getattr(g, f))
    for s in report.stages:
        for f, attr in STAGE_FIELDS.items():
            out[f"stage.{_label(s.name, s.index)}.{f}"] = _cell(f, getattr(s, attr))
    for p in report.pools:
        for f, attr in POOL_FIELDS.items():
            out[f"pool.{_label(p.name, p.index)}.{f}"] = _cell(f, getattr(p, attr))
    for f in RUN_FIELDS[:5]:
        out[f] = _cell(f, getattr(report, f))
    out["wall_s"] = float(getattr(report, "wall_s", NAN))
    out["warnings"] = len(getattr(report, "warnings", None) or [])
    out["growth"] = float(getattr(report, "growth", NAN))
    out["arrivals_measured"] = float(getattr(report, "arrivals_measured", NAN))
    for text in extra:
        metric = text if isinstance(text, Metric) else parse_metric(text)
        if metric.observe is not None:
            o = report.observes[metric.observe]
            out[metric.name] = _FROM_OBSERVE[metric.kind](o, metric, report)
    return out


def _observe_metrics(o) -> dict[str, float]:
    return {f"{o.name}.{f}": _cell(f, getattr(o, f, NAN)) for f in OBSERVE_FIELDS}


def _cell(field_: str, value) -> float | int:
    """A metric's value as a record holds it: an int for a count (COUNT_FIELDS), else a float."""
    return int(value) if field_ in COUNT_FIELDS else float(value)


MSER_BATCH = 5


def _drift(o, metric: Metric, report) -> float:
    """The observe's mean over the second half of the measured window minus that over the
    first, over the distance of their midpoints: growth per unit of time (NaN without samples
    in either half)."""
    samples = _samples(o, metric, "the drift")
    start, end = float(report.warmup), float(report.end)
    if not end > start:
        return NAN
    middle = start + (end - start) / 2.0
    cut = int(np.searchsorted(o.times, middle, side="left"))
    if cut == 0 or cut == len(samples):
        return NAN
    # running (Welford) means: a sum of observations past 1e154 would pass the largest double
    first, second = mean_or_nan(samples[:cut]), mean_or_nan(samples[cut:])
    return (second - first) / ((end - start) / 2.0)


_FROM_OBSERVE = {"le": lambda o, m, report: _share_at_most(o, m), "drift": lambda o, m, r: _drift(o, m, r),
                 "mser": lambda o, m, r: _mser_warmup(o, m, r), "pooled": lambda o, m, r: _tail(o, m)}

# the quantiles a pooled metric may ask for (min and max pool without help: the extremes of the runs')
POOLED_LEVELS = {name: q for name, q in SUMMARY_QUANTILES if 0.0 < q < 1.0}
# A run keeps its largest max(POOL_MIN, POOL_FACTOR·n·(1-q)) samples, at most POOL_MAX: the point's
# pooled quantile (and its interval's ends) needs every run's samples above it, which is about
# n·(1-q) of them unless one run is far worse than the others (then the pool says NaN: unknown).
POOL_MIN, POOL_FACTOR, POOL_MAX = 100, 50, 20_000


class Tail(float):
    """A run's value of a pooled metric: its own quantile (what a table of runs shows), carrying
    `count`, its number of samples, and `top`, its largest samples in descending order."""

    def __new__(cls, value: float, count: int, top):
        self = super().__new__(cls, value)
        self.count = int(count)
        self.top = np.asarray(top, dtype=np.float64)
        return self

    __repr__ = float.__repr__

    def __reduce__(self):    # to a worker process and back
        return (Tail, (float(self), self.count, self.top))


def _tail(o, metric: Metric) -> Tail:
    samples = _samples(o, metric, "a pooled quantile")
    n, q = len(samples), metric.le
    keep = min(n, POOL_MAX, max(POOL_MIN, math.ceil(POOL_FACTOR * n * (1.0 - q))))
    top = np.sort(np.partition(samples, n - keep)[n - keep:])[::-1] if keep else samples[:0]
    return Tail(quantile(samples, q), n, top)


def _samples(o, metric: Metric, what: str) -> np.ndarray:
    """The samples behind an asked-for metric: a report of samples="none" has none to count."""
    if o.samples is None:
        raise SqError(f"metric `{metric.name}`: {what} needs the samples, and the report kept none "
                      '(samples="none")', phase="settings",
                      notes=('help: run with samples="all" (the default) to record it',))
    return np.asarray(o.samples)


def _mser_warmup(o, metric: Metric, report) -> float:
    """The warm-up MSER-5 suggests (White 1997): the samples after the run's warm-up in
    batches of 5, the truncation d (over the first half of the batches) that minimises the
    variance of the mean of what remains, s²(d) / (k - d); the time of the first sample kept,
    so the run's own warm-up when nothing needs to be cut (NaN below 20 batches)."""
    samples = _samples(o, metric, "MSER-5")
    k = len(samples) // MSER_BATCH
    if k < 20:
        return NAN
    means = samples[:k * MSER_BATCH].reshape(k, MSER_BATCH).mean(axis=1)
    # the mean and variance of means[d:] for every d, from the back
    tail_n = np.arange(k, 0, -1, dtype=np.float64)
    tail_sum = np.cumsum(means[::-1])[::-1]
    tail_sq = np.cumsum((means * means)[::-1])[::-1]
    var = np.maximum(tail_sq / tail_n - (tail_sum / tail_n) ** 2, 0.0)
    half = k // 2
    d = int(np.argmin(var[:half] / tail_n[:half]))
    return float(report.warmup) if d == 0 else float(o.times[d * MSER_BATCH])


def _share_at_most(o, metric: Metric, report=None) -> float:
    """The share of the samples <= the bound."""
    samples = _samples(o, metric, "the share of samples")
    if o.count == 0:
        return NAN
    return float(np.count_nonzero(samples <= metric.le)) / o.count

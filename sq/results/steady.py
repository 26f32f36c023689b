"""Is the run in steady state? The report's overload warning (issue 11).

A run whose live sessions or pool queues still pile up at its end reports
means that depend on the horizon: a longer run would report more. The engine
keeps, at the middle of the measured window (`RawResults.middle`), the
integrals of the live-session count and of every pool's queue; this module
compares the mean over the second half of the window with the mean over the
first. A quantity grows when all three hold:

* its second-half mean exceeds the first-half mean by a quarter of it, plus
  one (so a count of 0.1 becoming 0.3 is no growth);
* it grows by at least `PILE_UP` of the arrival rate over the window (the
  difference of the half means over the distance of their midpoints, T/2):
  what a stable run shows only by chance, with a swing that shrinks as the
  window holds more arrivals;
* it still holds more at the end than its first-half mean (a burst that
  drained before the end is no pile-up).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from sq.results.raw import Area, RawResults, row_label
from sq.results.runs import RunTable

UNSTEADY_SHARE = 0.5  # a study's point is not in steady state when this share of its runs is not
SUSPECT = 0.10       # one-sided level of the seeds' growth test that sends a point to a longer run
EDGE = 1e-3          # a stage busy 1 - EDGE of the time or more is at the edge of stability
GROWTH = 0.25      # the second half's mean exceeds the first's by this fraction of it (+1)
PILE_UP = 0.05     # ... and grows at this fraction of the arrival rate, at least
ENDED_SHARE = 0.5  # a run where fewer of its arrivals ended than this is not in steady state
# `in_steady_state` in words, for a table's legend
NOT_STEADY = (f"the report warns that sessions or queues still grow, or fewer than {ENDED_SHARE:.0%} "
              "of the arrivals ended")


@dataclass(frozen=True)
class Growth:
    what: str          # "live sessions", "pool `kv` queue"
    first: float       # mean over the first half of the measured window
    second: float      # mean over the second half
    rate: float        # growth per unit of time: (second - first) / (T / 2)


def of_run(raw: RawResults) -> tuple[list[str], float, float]:
    """(`warnings`, `live_growth`, `arrivals_measured`) of a run, in one call: what a report
    built per run keeps of its steady state."""
    # (a run that ended before its middle, a short sweep run's usual case, asks no more)
    window = _halves(raw) if raw.middle is not None else None
    if window is None:
        return [], math.nan, arrivals_measured(raw)
    return _warnings(raw, *window), _live_growth(raw, *window), arrivals_measured(raw)


def _halves(raw: RawResults):
    """(middle, warmup, end) of a run whose measured window has two halves, else None (the run
    ended before its middle)."""
    mid = raw.middle
    warmup, end = float(raw.warmup), float(raw.end)
    if mid is None or not (mid.time > warmup and end > mid.time):
        return None
    return mid, warmup, end


def warnings(raw: RawResults) -> list[str]:
    """One line naming what grows and how fast, or nothing when the run looks steady."""
    window = _halves(raw)
    return [] if window is None else _warnings(raw, *window)


def _warnings(raw: RawResults, mid, warmup: float, end: float) -> list[str]:
    span = end - warmup
    arrivals = raw.arrivals - mid.warm_arrivals
    series = [("live sessions", mid.live, raw.live)]
    series += [(f"pool `{row_label(p.name, p.index)}` queue", q, p.queue) for p, q in zip(raw.pools, mid.queues)]
    grown = [g for what, at_mid, area in series
             if (g := _growth(what, at_mid, area, warmup, mid.time, end, arrivals / span)) is not None]
    if not grown:
        return []
    parts = [f"{g.what} {'grow' if g.what.endswith('s') else 'grows'} {g.rate:.3g} per unit of time "
             f"(mean {g.first:.3g} -> {g.second:.3g})" for g in grown]
    return ["not in steady state: from the first to the second half of the measured window, " + ", ".join(parts)
            + f"; since warmup {arrivals} sessions arrived and {raw.ended} ended (overload, or a warmup "
            "or horizon too short for the means to settle)"]


def live_growth(raw: RawResults) -> float:
    """How fast the live sessions grow over the measured window: the difference of their mean
    over its second and first halves over the distance of the halves' midpoints (T/2), per unit
    of time; NaN when the run ended before the middle. A stable run in steady state shows 0 on
    average, so over a study's seeds this is the slope test of `sq.study.capacity` (their
    t-interval excludes 0 only for growth; one run alone cannot tell growth from a swing)."""
    window = _halves(raw)
    return math.nan if window is None else _live_growth(raw, *window)


def _live_growth(raw: RawResults, mid, warmup: float, end: float) -> float:
    first = mid.live / (mid.time - warmup)
    second = (raw.live.integral - mid.live) / (end - mid.time)
    return (second - first) / ((end - warmup) / 2.0)


def in_steady_state(record: dict) -> bool:
    """A run, by its record of metrics (`sq.results.metrics`; a sweep's row), in steady state: no
    steady-state warning in its report (queues or live sessions still growing), and at least
    ENDED_SHARE of its arrivals ended (fewer means its sessions are piling up, or the horizon
    is too short for the statistics to mean anything). The one rule of the capacity search's
    verdicts and of a sweep's `unsteady` count."""
    if record.get("warnings"):
        return False
    # `ended` counts the sessions ended after the warm-up, so it is weighed against the ones that
    # arrived after it (a long warm-up, as capacity over time's lead-in, is not a pile-up)
    arrivals, ended = record.get("arrivals_measured"), record.get("ended")
    if arrivals is None or math.isnan(arrivals):
        arrivals = record.get("arrivals")
    return arrivals is None or ended is None or ended >= ENDED_SHARE * arrivals


STEADY_FIELDS = ("warnings", "arrivals", "arrivals_measured", "ended")     # what `in_steady_state` reads of a record


def unsteady_runs(runs) -> int:
    """How many of `runs` (a RunTable, or a list of records) `in_steady_state` refuses."""
    return sum(not in_steady_state(r) for r in RunTable.of(runs).records(STEADY_FIELDS))


def arrivals_measured(raw: RawResults) -> float:
    """The sessions that arrived after the warm-up (NaN for a run that ended before the middle of
    its measured window, where the engine notes the count at the warm-up)."""
    return arrivals_after(raw.warmup, raw.arrivals, None if raw.middle is None else raw.middle.warm_arrivals)


def arrivals_after(warmup: float, arrivals: int, warm_arrivals: int | None) -> float:
    """`arrivals_measured` of a run with this warm-up and these arrivals, `warm_arrivals` of them
    before the warm-up ended (None: the run ended before the middle, where the engine counts them)."""
    if float(warmup) == 0.0:
        return float(arrivals)
    return math.nan if warm_arrivals is None else float(arrivals - warm_arrivals)


def _growth(what: str, at_mid: float, area: Area, warmup: float, mid: float, end: float,
            arrival_rate: float) -> Growth | None:
    first = at_mid / (mid - warmup)
    second = (area.integral - at_mid) / (end - mid)
    rate = (second - first) / ((end - warmup) / 2.0)
    if second > first * (1.0 + GROWTH) + 1.0 and rate >= PILE_UP * arrival_rate and area.value > first:
        return Growth(what, first, second, rate)
    return None



# -- a point of a study: its runs over seeds -----------------------------------------------

@dataclass(frozen=True)
class Steadiness:
    """What a point's runs (one per seed) say of its steady state.

    `growth_t` is the t statistic over the seeds of the live sessions' growth
    (`live_growth`), `drift_t` the largest of the SLO observes' drift (`OBS.drift`, signed so
    that positive is worse): a stable system in steady state shows growth 0 on average, and
    the seeds are independent replications, so their t-test is a slope test that needs no
    assumption about one run's correlations. `unsteady` counts the runs `in_steady_state`
    refuses; `edge` the runs where some one-server stage is busy at least 1 - EDGE of the
    time (a stage of several servers, or a step stage, reports the time any job is present,
    which a stable stage can spend nearly all of)."""

    runs: int
    unsteady: int
    edge: int
    growth: float       # mean over the seeds of the live sessions' growth per unit of time
    growth_t: float
    drift_t: float

    @property
    def worst_t(self) -> float:
        ts = [t for t in (self.growth_t, self.drift_t) if not math.isnan(t)]
        return max(ts) if ts else math.nan

    def growing(self, level: float) -> bool:
        """Whether the seeds show growth at one-sided `level`, or UNSTEADY_SHARE of the runs
        are not in steady state (the rule of a point's share of runs, never "any" run)."""
        from sq.results.confidence import t_quantile

        if self.unsteady >= UNSTEADY_SHARE * self.runs:
            return True
        return self.runs >= 2 and self.worst_t > t_quantile(1.0 - level, self.runs - 1)

    def suspect(self) -> bool:
        """Growth at the lenient level SUSPECT, or a stage at the edge of stability in half the
        runs while the sessions grow at all: a point that meets must then be run longer
        before it counts."""
        at_edge = self.edge >= UNSTEADY_SHARE * self.runs and self.growth > 0
        return at_edge or self.growing(SUSPECT)


def steadiness(rows, drifts=(), servers=()) -> Steadiness:
    """The Steadiness of a point's runs (a RunTable, or a list of records of
    `sq.results.metrics`); `drifts` are the
    (`OBS.drift` column, sign) pairs of the SLO's observes, sign +1 where a rising mean is worse;
    `servers` the utilisation columns of the one-server stages (`one_server_stages`)."""
    rows = RunTable.of(rows)
    unsteady = unsteady_runs(rows)
    edge = sum(any(r.get(column, 0.0) >= 1.0 - EDGE for column in servers) for r in rows.records(servers))
    growth = rows.values("growth")
    drift_t = [_t_statistic([sign * v for v in rows.values(column)]) for column, sign in drifts]
    drift_t = [t for t in drift_t if not math.isnan(t)]
    finite = [g for g in growth if not math.isnan(g)]
    return Steadiness(len(rows), unsteady, edge, math.fsum(finite) / len(finite) if finite else math.nan,
                      _t_statistic(growth), max(drift_t) if drift_t else math.nan)


def _t_statistic(values) -> float:
    """mean / (sd / sqrt(n)) of the finite values (sums past the largest double scaled, not raised); +inf for a constant positive growth, NaN
    for fewer than two values."""
    from sq.results.confidence import _average

    xs = [v for v in values if math.isfinite(v)]   # a metric that overflowed says nothing of growth
    n = len(xs)
    if n < 2:
        return math.nan
    mean = _average(xs, n)
    sd = math.sqrt(_average([(x - mean) * (x - mean) for x in xs], n - 1))
    if sd == 0.0:
        return math.copysign(math.inf, mean) if mean else 0.0
    return mean / (sd / math.sqrt(n))


def one_server_stages(ir: dict) -> list[str]:
    """The `stage.NAME.util` columns whose utilisation is one server's busy time: fifo and ps
    stages of one server (in the IR, `{"Fifo": 1}`)."""
    out = []
    for stage in ir["stages"]:
        kind = stage.get("kind")
        if isinstance(kind, dict) and len(kind) == 1:
            (name, servers), = kind.items()
            if name in ("Fifo", "Ps") and servers == 1:
                out.append(f"stage.{row_label(stage['name'], stage.get('index'))}.util")
    return out

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

from dataclasses import dataclass

from sq.results.raw import Area, RawResults, row_label

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


def warnings(raw: RawResults) -> list[str]:
    """One line naming what grows and how fast, or nothing when the run looks steady."""
    mid = raw.middle
    if mid is None:
        return []
    warmup, end = float(raw.warmup), float(raw.end)
    span = end - warmup
    if not (mid.time > warmup and end > mid.time):
        return []
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


def in_steady_state(record: dict) -> bool:
    """A run, by its record of metrics (`sq.results.metrics`; a sweep's row), in steady state: no
    steady-state warning in its report (queues or live sessions still growing), and at least
    ENDED_SHARE of its arrivals ended (fewer means its sessions are piling up, or the horizon
    is too short for the statistics to mean anything). The one rule of the capacity search's
    verdicts and of a sweep's `unsteady` count."""
    if record.get("warnings"):
        return False
    arrivals, ended = record.get("arrivals"), record.get("ended")
    return arrivals is None or ended is None or ended >= ENDED_SHARE * arrivals


def _growth(what: str, at_mid: float, area: Area, warmup: float, mid: float, end: float,
            arrival_rate: float) -> Growth | None:
    first = at_mid / (mid - warmup)
    second = (area.integral - at_mid) / (end - mid)
    rate = (second - first) / ((end - warmup) / 2.0)
    if second > first * (1.0 + GROWTH) + 1.0 and rate >= PILE_UP * arrival_rate and area.value > first:
        return Growth(what, first, second, rate)
    return None


"""Raw results: what the engine hands over at the end of a run.

This is the contract between the engine (which fills it) and
`sq.results.report` (which turns it into a `Report`). Everything here is raw:
samples, counters and time integrals. No statistic is computed by the
engine, so the arithmetic that must match pyserq 0.1.2 to the last bit
lives in one place (`sq.results.stats`).

Conventions the engine follows:

* Arrays are numpy arrays (float64 for values and times, int64 for
  counts and ids), in the order the engine recorded them. Plain Python
  lists are accepted too; the report converts them.
* Sample lists (`waits`, `services`, ...) hold only samples taken at a
  time >= warmup (the run is "warm"), in record order. Observation
  samples are the exception: they cover the WHOLE run, because the
  report exposes them all; the report keeps those with time >= warmup.
* A time integral is an `Area`. It is accumulated the way pyserq does,
  so means agree bit for bit: the engine keeps `(value, last, integral)`,
  and at every change at time `now` does
  `integral += value * (now - last); last = now; value = new`.
  At warm-up (`EndWarmup`) it sets `integral = 0; last = warmup`
  (keeping `value`). At the end of the run it flushes once more:
  `integral += value * (end - last)`. `Area.integral` is that flushed
  integral over [warmup, end] and `Area.value` the value held at `end`
  (used when the measured span is empty).
* Counters are plain ints.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np


def _empty(dtype) -> np.ndarray:
    a = np.zeros(0, dtype=dtype)
    a.flags.writeable = False
    return a


# The default of every sample list the engine leaves empty: one shared read-only array each
# (an empty array has nothing to change), not a new one per field and run.
EMPTY_F64, EMPTY_I64 = _empty(np.float64), _empty(np.int64)


def _f64() -> np.ndarray:
    return EMPTY_F64


def _i64() -> np.ndarray:
    return EMPTY_I64


def row_label(name: str, index: int | None) -> str:
    """A stage or pool row as reports name it: `kv`, or `kv[2]` for an array member."""
    return name if index is None else f"{name}[{index}]"


class Area(NamedTuple):
    """The integral of a step function over [warmup, end], and its final value.

    Area and Running are named tuples, not dataclasses: a run makes a dozen of them per stage
    and pool, which the engine builds in C (sq_pair in _engine.pyx), no Python frame each."""

    integral: float = 0.0
    value: float = 0.0


class Running(NamedTuple):
    """A mean the engine keeps as it goes instead of the samples behind it.

    The report needs only the count and the Welford mean of some sample
    lists (a stage's waits and services, a pool's waits), so the engine
    runs `d = x - m; m += d/k` in record order -- the very arithmetic of
    `sq.results.stats.welford` -- and saves 8 bytes per job and list. `mean` is
    NaN when `n` is 0.
    """

    n: int = 0
    mean: float = float("nan")


@dataclass
class ItlHistogram:
    """Inter-token gaps as chapter 08 §3.4's 1 % log histogram, which is all the report reads
    of them: the engine fills it token by token instead of keeping one float per token.

    `counts[i]`, `least[i]`, `greatest[i]` describe bucket `kmin + i` (gaps x > 0 with
    floor(ln x / ln 1.01) = kmin + i); `low` and `top` are (count, least, greatest) of the
    gaps x <= 0 or NaN and of the infinite ones. `total` is their left-to-right sum from
    +0.0, in record order (the exact mean is total / n).
    """

    n: int = 0
    total: float = 0.0
    kmin: int = 0
    counts: np.ndarray = field(default_factory=_i64)
    least: np.ndarray = field(default_factory=_f64)
    greatest: np.ndarray = field(default_factory=_f64)
    low: tuple = (0, float("nan"), float("nan"))
    top: tuple = (0, float("nan"), float("nan"))


@dataclass
class ObserveSummary:
    """What a run with samples="none" keeps of one observe's samples at t >= warmup
    (sq/results/_sketch.pxd folds them as they are recorded).

    `n`, `mean`, `m2` are Welford's, step for step as `sq.results.stats.welford`; `least` and
    `greatest` the extremes in IEEE total order. `batch_sums` are the sums of consecutive
    batches of `batch_size` samples (a power of two), the complete ones only (20 to 40 once
    n >= 20). `positive` is the 1 % log histogram of the samples x > 0 (zeros in its low
    bucket), `negative` that of -x for the samples x < 0; NaNs are only counted, by sign.
    """

    n: int
    mean: float
    m2: float
    least: float
    greatest: float
    batch_size: int
    batch_sums: np.ndarray
    positive: ItlHistogram
    negative: ItlHistogram
    nan_low: int = 0
    nan_high: int = 0


@dataclass
class GaugeFold:
    """What a run with samples="none" keeps of one gauge: its step function over
    [warmup, end] folded as it changed (sq/results/_sketch.pxd). `held`, `total`, `least`,
    `greatest` are those of `sq.results._stats.gauge_pass`; `window_sums` the integrals over
    consecutive windows `window` wide from warmup (20 to 40 of them; the last one counted
    only if the run ended at its end)."""

    held: int
    total: float
    least: float
    greatest: float
    window: float
    window_sums: np.ndarray


@dataclass
class ObserveRaw:
    """Every sample of one `observe NAME = e;`, whole run, in record order
    (or, with samples="none", only their `summary` and empty arrays)."""

    name: str
    samples: np.ndarray = field(default_factory=_f64)   # float64: the value
    times: np.ndarray = field(default_factory=_f64)     # float64: simulation time of the record
    # the session's arrival `serial`: the engine hands int32 while every serial fits, else int64
    sessions: np.ndarray = field(default_factory=_i64)
    # the session's `turn_no` then: the engine hands uint32 (a record saturates it to 32 bits)
    turns: np.ndarray = field(default_factory=_i64)
    summary: ObserveSummary | None = None   # samples="none": this instead of the arrays
    # (mean, M2) of every sample by Welford's steps in record order, as the engine kept them while
    # recording (`sq.results.stats.welford`'s to the bit); None: computed from the samples
    moments: tuple[float, float] | None = None


@dataclass
class GaugeRaw:
    """Change points of one `gauge NAME = e;` over the whole run, from time 0.

    The gauge holds `values[k]` from `times[k]` until `times[k+1]` (or the
    end). A point is appended only when the value read after an instant
    differs from the last one.
    """

    name: str
    times: np.ndarray = field(default_factory=_f64)
    values: np.ndarray = field(default_factory=_f64)
    fold: GaugeFold | None = None   # samples="none": this instead of the change points


@dataclass
class StageRaw:
    """One stage row (array members are separate rows, in index order).

    `kind` is "fifo", "ps", "delay" or "step" (informative; the report's
    formulas do not depend on it, except that step-only fields are 0 /
    null on other stages because their sample lists are empty).
    """

    name: str
    index: int | None = None
    kind: str = "fifo"
    # jobs present (waiting + in service; step: residents; shared: flows)
    number: Area = field(default_factory=Area)
    # 1 while at least one job is present; on a shared stage Σ rate/φ
    busy: Area = field(default_factory=Area)
    # one sample per job completed at t >= warmup (a shared flow: one per stage)
    waits: np.ndarray = field(default_factory=_f64)     # start - enqueue
    services: np.ndarray = field(default_factory=_f64)  # completion - start
    # the engine keeps only these running means of the two lists above (and leaves the
    # lists empty); None: use the lists
    wait_mean: Running | None = None
    service_mean: Running | None = None
    # step stages only -------------------------------------------------
    iterations: int = 0  # iterations started over the whole run (not gated)
    # 1 while an iteration of that kind is in flight, else 0
    prefill_only: Area = field(default_factory=Area)
    decode_only: Area = field(default_factory=Area)
    mixed: Area = field(default_factory=Area)
    # number of decode jobs in the in-flight iteration (0 while idle)
    decodes: Area = field(default_factory=Area)
    # per iteration started at t >= warmup that carried >= 1 decode:
    decode_batches: np.ndarray = field(default_factory=_f64)  # its number of decodes
    # its duration as scheduled (the cost value, end = start + duration), not
    # the difference end - start, which can round differently
    decode_steps: np.ndarray = field(default_factory=_f64)
    # inter-token gaps (token time - previous token time) ending on this stage
    # at t >= warmup, in record order
    itl_gaps: np.ndarray = field(default_factory=_f64)
    # what the engine keeps instead of the three lists above (it leaves them empty):
    # running means of the first two and the histogram of the gaps; None: use the lists
    decode_batch_mean: Running | None = None
    decode_step_mean: Running | None = None
    itl: ItlHistogram | None = None
    # per iteration started at t >= warmup: its scheduled tokens / its budget (iterations with a
    # finite positive budget only) and its number of jobs served; beyond pyserq's report
    budget_use: Running | None = None
    batch: Running | None = None


@dataclass
class PoolRaw:
    """One pool row (array members are separate rows, in index order)."""

    name: str
    index: int | None = None
    used: Area = field(default_factory=Area)      # allocated units
    cached: Area = field(default_factory=Area)    # units held as cached prefixes
    queue: Area = field(default_factory=Area)     # holds waiting for admission
    holders: Area = field(default_factory=Area)   # holds holding units
    # now - queued_at at each admission at t >= warmup, on the hold's first pool only
    waits: np.ndarray = field(default_factory=_f64)
    wait_mean: Running | None = None   # the engine's running mean of `waits` instead (None: use them)
    # whole-run counters (not gated by warm-up)
    admissions: int = 0
    evicted_entries: int = 0
    evicted_units: float = 0.0
    preemptions: int = 0
    spills: int = 0
    rejected: int = 0
    stuck: int = 0


@dataclass
class Middle:
    """The run at the middle of the measured window, `time` = warmup + (horizon - warmup) / 2:
    what the steady-state check compares the second half with."""

    time: float
    live: float                 # the live-sessions integral over [warmup, time]
    queues: list[float]         # each pool row's queue integral over [warmup, time]
    warm_arrivals: int          # sessions arrived before warmup ended


@dataclass
class RawResults:
    """Everything one run produced."""

    horizon: float
    end: float
    warmup: float
    seed: int
    events: int = 0    # events popped, whole run (stale ones and EndWarmup included)
    arrivals: int = 0  # sessions arrived, whole run
    ended: int = 0     # sessions ended at t >= warmup
    turns: int = 0     # `turn;` executed at t >= warmup
    live: Area = field(default_factory=Area)  # number of live sessions
    observes: list[ObserveRaw] = field(default_factory=list)  # program order
    gauges: list[GaugeRaw] = field(default_factory=list)      # program order
    stages: list[StageRaw] = field(default_factory=list)      # declaration order, arrays expanded
    pools: list[PoolRaw] = field(default_factory=list)        # declaration order, arrays expanded
    # debug lines describing each iteration, only when the run was asked to trace
    iteration_trace: list[str] = field(default_factory=list)
    # debug lines: one per evicted piece, and each pool's contents at the end, when asked
    eviction_trace: list[str] = field(default_factory=list)
    pool_dump: list[str] = field(default_factory=list)
    # the middle of the measured window; None when the run ended before it
    middle: Middle | None = None
    # None, or why the run ended before its horizon / arrivals: "interrupted" or "wall limit"
    # (`end` is then the simulated time reached)
    stopped: str | None = None

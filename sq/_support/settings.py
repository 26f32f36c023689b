"""The run settings' rules, stated once: what a seed, a horizon, a warmup, an arrival limit, a
wall limit, a memory bound and a timeline window may be, checked before a run starts.

`sq.run`/`sq.run_lowered`, the studies (which check once, before any run) and the CLI flags
use these; the engine trusts what reaches it.
"""
from __future__ import annotations

import math
import numbers

from sq.errors import SqError

U64_END = 2**64
SEED_RANGE = "a whole number from 0 to 2^64-1"     # the words every seed error uses
ARRIVALS_NEED_OPEN = "arrivals applies only to poisson or renewal workloads"


# the most values a study may be given (a `--set` range, `--seeds`, the API's seeds): more is
# surely a typo, and is refused before a list of them is built
MAX_VALUES = 1_000_000


def at_most(count: int, what: str, who: str) -> None:
    """`count` values asked for by `who` (a flag as typed, or the API's function), at most MAX_VALUES."""
    if count > MAX_VALUES:
        raise SqError(f"{who}: {count} {what} is more than {MAX_VALUES}", phase="settings")


def is_u64(value) -> bool:
    """A whole number a u64 holds: a Python or numpy integer (not a bool) in [0, 2^64)."""
    if type(value) is int:      # the usual seed, checked without the ABC's isinstance (once per run)
        return 0 <= value < U64_END
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and bool(0 <= value < U64_END)


def is_number(value) -> bool:
    """A real number: a Python or numpy int or float (`np.arange` gives numpy integers); not a
    bool, which is a yes/no. The one test of "a number" for every setting and override."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_count(value) -> bool:
    """A whole number of at least 1 (a Python or numpy integer, not a bool): jobs, max_points."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1


def plain(value):
    """A number as Python's own int or float (a numpy one too), so that it prints, compares and
    serializes (provenance JSON) as the number it is."""
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def number(name: str, value) -> float:
    if not is_number(value) or math.isnan(value):
        raise SqError(f"run: {name} must be a number, found {value!r}", phase="settings")
    return float(value)


WINDOW_RULE = "need 0 <= warmup < horizon"     # 0.1.2's words for the run's check


def horizon_notes(horizon: float) -> tuple[str, ...]:
    """The help line a refused horizon adds to 0.1.2's words (which speak of the warmup
    only) when the horizon itself is what is wrong: it is a positive, finite time."""
    if math.isfinite(horizon) and horizon > 0:
        return ()
    from sq._support.number_format import display

    return (f"help: the horizon must be a positive finite time, found {display(horizon)}",)


def window_error(horizon: float, warmup: float, phase: str) -> SqError | None:
    """The error of a run's horizon and warmup (None: they are fine): the run's check."""
    if math.isfinite(horizon) and 0 <= warmup < horizon:
        return None
    return SqError(f"run: {WINDOW_RULE}", phase=phase, notes=horizon_notes(horizon))


# the IR's open arrival kinds (the last three: extensions, docs/differences.md)
OPEN_ARRIVALS = ("Poisson", "Renewal", "Replay", "PoissonNow", "Modulated", "RenewalRate")


def open_arrivals(arrival) -> bool:
    """Whether a workload's arrivals (the IR's `arrival`) are open — poisson, renewal or replay: the ones
    an arrival limit can end. The one rule: the IR's check, the Lowered (which keeps the answer)
    and the run settings ask it."""
    return isinstance(arrival, dict) and any(k in arrival for k in OPEN_ARRIVALS)


def of_program(lowered) -> tuple:
    """The lowered program's own horizon, warmup, arrival limit and whether its arrivals are
    open (what run settings are checked against)."""
    return lowered.horizon, lowered.warmup, lowered.arrivals, lowered.open_arrivals


def checked(horizon0: float, warmup0: float, arrivals0, arrivals_open: bool, *, seed, horizon, warmup,
            arrivals) -> dict:
    """Run settings given to `run`, checked as the `run {}` block is against the program's own
    horizon, warmup, arrival limit and arrival kind: the fields (of the IR, or of a Lowered)
    they replace."""
    if seed is None and horizon is None and warmup is None and arrivals is None:
        if arrivals0 and not arrivals_open:
            raise SqError(f"run: {ARRIVALS_NEED_OPEN}", phase="settings")
        return {}
    changes: dict = {}
    h, w, limit = horizon0, warmup0, arrivals0      # what the run will have
    if seed is not None:
        if not is_u64(seed):
            raise SqError(f"run: the seed is {SEED_RANGE}, found {seed!r}", phase="settings")
        changes["seed"] = int(seed)
    if horizon is not None:
        changes["horizon"] = h = number("horizon", horizon)
    if warmup is not None:
        changes["warmup"] = w = number("warmup", warmup)
    error = window_error(h, w, "settings")
    if error is not None:
        raise error
    if arrivals is not None:
        if not is_number(arrivals) or math.isnan(arrivals):
            raise SqError(f"run: arrivals must be a whole number, found {arrivals!r}", phase="settings")
        if not arrivals >= 1:
            raise SqError("run: arrivals must be positive", phase="settings")
        if not arrivals < U64_END:     # the count is a u64, as in 0.1.2 (inf included)
            raise SqError(f"run: arrivals must be a whole number below 2^64, found {arrivals!r}",
                          phase="settings")
        changes["arrivals"] = limit = int(arrivals)
    if limit and not arrivals_open:
        raise SqError(f"run: {ARRIVALS_NEED_OPEN}", phase="settings")
    return changes


def with_settings(ir: dict, *, seed, horizon, warmup, arrivals) -> dict:
    """A copy of the IR with run settings replaced, checked as the `run {}` block is."""
    changes = checked(float(ir["horizon"]), float(ir.get("warmup", 0.0)), ir.get("arrivals"),
                      open_arrivals(ir.get("arrival")),
                      seed=seed, horizon=horizon, warmup=warmup, arrivals=arrivals)
    return {**ir, **changes} if changes else ir


def wall_limit(value):
    """A wall-clock limit in seconds (None: none)."""
    if value is not None and not (number("wall_limit", value) > 0):
        raise SqError(f"run: wall_limit is a positive number of seconds, found {value!r}", phase="settings")
    return value


def is_memory_bound(value) -> bool:
    """A number of bytes the engine's int64 counters hold: from 1 to 2^63 - 1."""
    return is_number(value) and 1 <= value < 2**63


def memory_bound(value) -> int:
    if not is_memory_bound(value):
        raise SqError(f"run: max_memory is a number of bytes from 1 to 2^63 - 1, found {value!r}",
                      phase="settings")
    return int(value)


def window(value):
    """A timeline window (t0, t1) as two floats, checked; None stays None (the whole run)."""
    if value is None:
        return None
    try:
        t0, t1 = (float(t) for t in value)
    except (TypeError, ValueError):
        raise SqError(f"run: a timeline window is a pair of times (t0, t1), found {value!r}",
                      phase="settings") from None
    if not t0 <= t1:
        raise SqError(f"run: the timeline window {t0:g}:{t1:g} is empty (need t0 <= t1)", phase="settings")
    return t0, t1

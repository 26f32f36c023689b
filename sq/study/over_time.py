"""Capacity over time: for each window of a replayed trace, the smallest deployment meeting the SLO.

`capacity_over_time(path, knob, slo, window=W)` cuts the trace a program
replays (`arrive replay … window(window_from, window_to)`, the two `let`s
named below) into windows of W seconds of trace time and runs one capacity
search (`sq.capacity`, direction "min") per window, with the window's own
traffic: the program compiled with `window_from`, `window_to` set to the
window. Its runs go on DRAIN windows past the window's start with nothing more
arriving, so every request of the window is served and measured (a window's
traffic is transient: judged at its end, a busy window would always look like
a growing overload).

A window does not start empty: the trace's `lead_in` seconds before it (one
window by default, less at the trace's start) are replayed first, on the same
deployment, and excluded by the warm-up; so a window entered at a busy time
sees the backlog the deployment under test carries into it. (`lead_in=0`
starts each window empty.) The answer per
window keeps its bracket and every run (`Capacity`); over the windows it gives
the peak, the 95th percentile and the mean deployment, and the deployment-hours
of following the answers against keeping the peak all the time: the lower
bound an autoscaler could reach, against peak provisioning.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from sq.errors import SqError

WINDOW_LETS = ("window_from", "window_to")
DRAIN = 4       # a window's runs last this many windows from its start (the last DRAIN - 1 drain it)


@dataclass(frozen=True)
class OverTime:
    window: float                         # seconds of trace time per window
    starts: tuple[float, ...]             # each window's start, trace seconds
    results: tuple                        # a Capacity per window

    @property
    def values(self) -> np.ndarray:
        """Each window's answer (NaN where none met)."""
        return np.array([np.nan if r.value is None else float(r.value) for r in self.results])

    def figures(self) -> dict:
        """peak, p95 and mean of the answers; deployment-hours following them and at the peak."""
        v = self.values
        met = v[~np.isnan(v)]
        if len(met) == 0:
            return {"peak": math.nan, "p95": math.nan, "mean": math.nan, "hours": math.nan, "peak_hours": math.nan}
        hours = self.window / 3600.0
        return {"peak": float(met.max()), "p95": float(np.percentile(met, 95)), "mean": float(met.mean()),
                "hours": float(met.sum() * hours), "peak_hours": float(met.max() * len(met) * hours)}

    def table(self) -> str:
        lines = [f"{'from':>8} {'to':>8} {'answer':>8}  bracket (meets, violates)"]
        for t0, r in zip(self.starts, self.results):
            lines.append(f"{t0:8g} {t0 + self.window:8g} {'-' if r.value is None else r.value!s:>8}  {r.bracket}")
        f = self.figures()
        lines.append(f"peak {f['peak']:g}  p95 {f['p95']:g}  mean {f['mean']:.4g}  deployment-hours "
                     f"{f['hours']:.4g} against {f['peak_hours']:.4g} at the peak")
        return "\n".join(lines)


def capacity_over_time(path: str | os.PathLike, knob: str, slo, *, window: float, sets: dict | None = None,
                       defs: dict | None = None, warmup: float | None = None, lead_in: float | None = None,
                       on_window=None, **capacity_kwargs) -> OverTime:
    """One capacity search per window of W trace seconds, each after a lead-in of `lead_in` trace
    seconds (None: W) excluded by the warm-up, `warmup` more on top (module docstring); the
    other keywords are `sq.capacity`'s (seeds, tol, lo, hi, jobs, …)."""
    from sq.study.capacity import capacity
    from sq.frontend.compile import compile_program
    from sq.traces import corpus
    from sq.traces.serq import resolve_path

    if not (isinstance(window, (int, float)) and window > 0 and math.isfinite(window)):
        raise SqError(f"--over-time: a window is a positive number of seconds, found {window!r}", phase="settings")
    lead_in = window if lead_in is None else lead_in
    if not (isinstance(lead_in, (int, float)) and lead_in >= 0 and math.isfinite(lead_in)):
        raise SqError(f"--lead-in: a lead-in is a number of seconds >= 0, found {lead_in!r}", phase="settings")
    sets = dict(sets or {})
    base = compile_program(path, sets=sets, defs=defs)
    replay = base.arrival.get("Replay") if isinstance(base.arrival, dict) else None
    if replay is None:
        raise SqError("--over-time needs a program that replays a trace (`arrive replay …`)", phase="settings")
    try:
        probe = compile_program(path, sets={**sets, WINDOW_LETS[0]: 1.0, WINDOW_LETS[1]: 2.0}, defs=defs)
        windowed = probe.arrival["Replay"]["window"] == [1.0, 2.0]
    except SqError:
        windowed = False
    if not windowed:
        raise SqError("--over-time sets the replay's window: write `arrive replay window(window_from, "
                      "window_to)` with `let window_from = 0; let window_to = inf;`", phase="settings") from None
    trace = resolve_path(base.trace, path)
    span = float(corpus(trace).arrival.max())         # (read once: the runs in this process reuse it)
    starts = tuple(float(t) for t in np.arange(0.0, span + (span == 0), window))
    # the runs drain the window: running a value longer to see whether it settles (capacity's
    # `settle`) adds no traffic, and would stretch the warm-up past the lead-in's end
    capacity_kwargs.setdefault("settle", 1)
    results = []
    for t0 in starts:
        lead = min(lead_in, t0)
        program = compile_program(path, sets={**sets, "window_from": t0 - lead, "window_to": t0 + window},
                                  defs=defs)
        result = capacity(program, knob, slo, direction="min", horizon=(lead + DRAIN * window) / replay["speed"],
                          warmup=lead / replay["speed"] + (0.0 if warmup is None else warmup), **capacity_kwargs)
        results.append(result)
        if on_window is not None:
            on_window(t0, result)
    return OverTime(window=float(window), starts=starts, results=tuple(results))

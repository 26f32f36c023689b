"""Progress, the one module for it: a running simulation's record and bars, and a study's count of runs.

The engine calls back every ~50 ms of wall time with (now, events, arrivals); `Tracker`
turns that into a `Progress` record at most every `every` seconds and hands it on. A study
counts finished runs (`count_bar`). A bar is tqdm's when tqdm is installed (the
`sq[progress]` extra), else one plain line redrawn in place on stderr.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass

from sq._support._optional import EXTRA, available
from sq.errors import SqError



@dataclass(frozen=True)
class Progress:
    """Where a run is: simulated time reached of the horizon, events and arrivals so far, wall
    seconds spent, the fraction done (time, or arrivals of an arrivals limit if further),
    events per wall second and the seconds left at the pace so far (inf before any)."""

    now: float
    horizon: float
    events: int
    arrivals: int
    wall: float
    fraction: float
    events_per_s: float
    eta: float


class Tracker:
    """Called by the engine; calls `show(Progress)` every `every` s from `delay` s on, and once
    at the end (`finish`) if it has shown anything."""

    def __init__(self, show, horizon: float, limit: int = 0, *, every: float = 0.2, delay: float = 0.0,
                 close=None):
        self.show, self.horizon, self.limit = show, float(horizon), int(limit or 0)
        self.every, self.delay, self._close = every, delay, close
        self.start = time.monotonic()
        self.next = self.start + delay
        self.shown = False

    def record(self, now: float, events: int, arrivals: int) -> Progress:
        wall = time.monotonic() - self.start
        fraction = now / self.horizon if self.horizon > 0 and math.isfinite(self.horizon) else 0.0
        if self.limit:
            fraction = max(fraction, arrivals / self.limit)
        fraction = min(max(fraction, 0.0), 1.0)
        eta = wall * (1.0 - fraction) / fraction if fraction > 0 else math.inf
        return Progress(now, self.horizon, events, arrivals, wall, fraction,
                        events / wall if wall > 0 else 0.0, eta)

    def __call__(self, now: float, events: int, arrivals: int) -> None:
        t = time.monotonic()
        if t < self.next:
            return
        self.next = t + self.every
        self.shown = True
        self.show(self.record(now, events, arrivals))

    def finish(self, now: float, events: int, arrivals: int) -> None:
        """The last record (only if the run lasted long enough to show one), then close the bar."""
        try:
            if self.shown:
                self.show(self.record(now, events, arrivals))
        finally:
            self.close()

    def close(self) -> None:
        if self._close is not None:
            self._close(self.shown)


def check_progress(progress, who: str, callables: bool = False) -> None:
    """progress=True (a bar), False or None (by default); `sq.run` also takes a callable (or a
    Tracker) that gets the records, a study (whose runs are many) does not."""
    if progress is None or progress is True or progress is False or (callables and callable(progress)):
        return
    allowed = "True, False, None or a callable" if callables else "True, False or None"
    raise SqError(f"{who}: progress is {allowed}, found {progress!r}", phase="settings")


def tracker(progress, horizon: float, limit: int = 0, *, delay: float = 0.0, stream=None,
            note: bool = True) -> Tracker | None:
    """A Tracker for `sq.run(progress=...)`: None/False: none; a Tracker: itself; a callable:
    it gets the records; True: a bar on `stream` (stderr), tqdm's, or a plain line (with a
    one-line note when tqdm is missing and `note`)."""
    check_progress(progress, "run", callables=True)
    if progress is None or progress is False:
        return None
    if isinstance(progress, Tracker):
        return progress
    if callable(progress):
        return Tracker(progress, horizon, limit, delay=delay)
    stream = stream or sys.stderr
    if available("tqdm"):
        from tqdm import tqdm  # noqa: PLC0415
        bar = TqdmBar(tqdm, stream)
    else:
        if note:
            print(f"sq: a progress bar needs tqdm, which is not installed: pip install 'sq[{EXTRA['tqdm']}]' "
                  "(showing a plain line)", file=stream)
        bar = LineBar(stream)
    return Tracker(bar.show, horizon, limit, delay=delay, close=bar.close)


def _rate(x: float) -> str:
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:.2f} {unit}ev/s"
    return f"{x:.0f} ev/s"


def _clock(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    m, s = divmod(int(seconds + 0.5), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def describe(p: Progress) -> str:
    return f"t {p.now:.6g}/{p.horizon:.6g}  {_rate(p.events_per_s)}"


class LineBar:
    """One line on the stream, redrawn in place: bar, percent, simulated time, pace, ETA."""

    WIDTH = 24

    def __init__(self, stream):
        self.stream = stream

    def show(self, p: Progress) -> None:
        done = int(p.fraction * self.WIDTH)
        self.stream.write(f"\r[{'#' * done}{'.' * (self.WIDTH - done)}] {100 * p.fraction:5.1f}%  "
                          f"{describe(p)}  ETA {_clock(p.eta)} ")
        self.stream.flush()

    def close(self, shown: bool) -> None:
        if shown:
            self.stream.write("\n")
            self.stream.flush()


class TqdmBar:
    """tqdm's bar over the fraction done (in per mille), simulated time and pace as its postfix."""

    def __init__(self, tqdm, stream):
        self.tqdm, self.stream, self.bar = tqdm, stream, None

    def show(self, p: Progress) -> None:
        if self.bar is None:
            self.bar = self.tqdm(total=1000, file=self.stream, unit="‰", dynamic_ncols=True,
                                 bar_format="{l_bar}{bar}| {elapsed}<{remaining}{postfix}")
        self.bar.n = int(p.fraction * 1000)
        self.bar.set_postfix_str(describe(p), refresh=False)
        self.bar.refresh()

    def close(self, shown: bool) -> None:
        if self.bar is not None:
            self.bar.close()


def count_bar(progress, total: int, done: int = 0, unit: str = "run", *, stream=None):
    """A bar counting a study's finished runs (`.update(n)`, a context manager): progress=True
    a bar, False none, None a bar when the stream (stderr) is a terminal. tqdm's bar, or
    without tqdm a plain line (with a one-line note when asked for by progress=True), as
    `tracker` does for one run."""
    stream = stream or sys.stderr
    if progress is False or (progress is None and not stream.isatty()):
        return LineCount(None, total, done, unit)
    if available("tqdm"):
        from tqdm import tqdm  # noqa: PLC0415
        return tqdm(total=total, initial=done, unit=unit, file=stream, dynamic_ncols=True)
    if progress is True:
        print(f"sq: a progress bar needs tqdm, which is not installed: pip install 'sq[{EXTRA['tqdm']}]' "
              "(showing a plain line)", file=stream)
    return LineCount(stream, total, done, unit)


class LineCount:
    """A count of finished runs as one plain line redrawn in place (no stream: shows nothing)."""

    WIDTH = LineBar.WIDTH

    def __init__(self, stream, total: int, done: int, unit: str):
        self.stream, self.total, self.done, self.unit = stream, total, done, unit
        self.start = time.monotonic()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        if self.stream is not None and self.total:
            self.stream.write("\n")
            self.stream.flush()
        return False

    def update(self, n: int) -> None:
        self.done += n
        if self.stream is None or not self.total:
            return
        fraction = self.done / self.total
        filled = int(fraction * self.WIDTH)
        wall = time.monotonic() - self.start
        eta = wall * (1.0 - fraction) / fraction if fraction > 0 else math.inf
        self.stream.write(f"\r[{'#' * filled}{'.' * (self.WIDTH - filled)}] {self.done}/{self.total} "
                          f"{self.unit}s  ETA {_clock(eta)} ")
        self.stream.flush()

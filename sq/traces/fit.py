"""`python -m sq fit-workload TRACE`: a workload fitted to a trace, as a library of `def`s.

The fit is a piecewise-constant rate: the trace's span cut into windows of W
seconds, each window's rate its count of requests over W (the last window
over its own length). A non-homogeneous Poisson process with that rate
(`arrive poisson(fitted_rate());`, sq/traces/rate.py) reproduces the trace's
load at the scale of the window — the rate changing, which is what makes
production traffic bursty (per-minute variance/mean 16 on Azure's
conversation trace where a constant-rate process gives about 1). Within a
window arrivals are Poisson, unless the gap shape is used too:
`def fitted_gap()` draws gaps of mean 1 with the CV the trace's gaps have in
the fitted rate's operational time (each gap measured in Λ = ∫ rate, so the
rate's changes are taken out): `~erlang(k, 1)` below 1 (k = round(1/CV²)),
`~exp(1)` at 1, `~h2(1, CV²)` above, for
`arrive renewal(fitted_gap()) rate(fitted_rate());` (an extension: gaps in
operational time). It adds the trace's short-range burstiness (batches,
lulls) to the rate's; counts per window then vary more than a Poisson's.

The library is written as `def fitted_rate() = …;` (a balanced tree of
conditionals on `now`, log2(windows) deep), `def fitted_end() = …;` (the
trace's span) and `def fitted_gap() = …;`, for `use "fit.sq";` in a program:
`workload { arrive poisson(load * fitted_rate()); … }`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sq.errors import SqError
from sq.traces.reader import Records


@dataclass(frozen=True)
class Fit:
    window: float
    end: float                     # the trace's span: seconds from first to last record
    rates: np.ndarray              # per window, requests/s
    counts: np.ndarray             # per window
    gap_cv: float                  # the trace's gaps: standard deviation / mean
    operational_cv: float          # the same of its gaps in the fitted rate's operational time

    def library(self, source: str) -> str:
        """The fit as a library of `def`s (module docstring)."""
        ratio, peak = burstiness(self.counts[:-1] if len(self.counts) > 1 else self.counts)   # whole windows
        lines = [f"// A workload fitted to {source} by `python -m sq fit-workload --window {self.window:g}`:",
                 f"// {int(self.counts.sum())} requests over {self.end:.6g} s, in {len(self.rates)} windows of "
                 f"{self.window:g} s.",
                 f"// Per-window counts: variance/mean {ratio:.4g}, peak/mean {peak:.4g}. Gaps: CV "
                 f"{self.gap_cv:.4g} (within a window the fitted arrivals are Poisson, CV 1).",
                 "// Use: `use \"THIS FILE\";` and `arrive poisson(fitted_rate());` (scale it: "
                 "`poisson(k * fitted_rate())`).",
                 f"// In the rate's operational time its gaps have CV {self.operational_cv:.4g}: "
                 "`arrive renewal(fitted_gap()) rate(fitted_rate());` draws them so.",
                 f"def fitted_end() = {_num(self.end)};",
                 f"def fitted_gap() = {unit_gap(self.operational_cv)};",
                 f"def fitted_rate() = {_tree(self.rates, 0, len(self.rates), self.window)};"]
        return "\n".join(lines) + "\n"


def fit(records: Records, window: float = 60.0) -> Fit:
    """The piecewise rate of `records`' arrivals per `window` seconds."""
    if records.arrival is None:
        raise SqError(f"trace {records.path}: serQ's format has no arrival times to fit", phase="settings")
    if not (window > 0 and math.isfinite(window)):
        raise SqError(f"--window must be a positive number of seconds, found {window}", phase="settings")
    t = np.sort(records.arrival)
    end = float(t[-1])
    counts = window_counts(t, window, end)
    lengths = np.full(len(counts), window)
    lengths[-1] = end - window * (len(counts) - 1) if end > window * (len(counts) - 1) else window
    rates = counts / lengths
    return Fit(window=window, end=end, rates=rates, counts=counts, gap_cv=_cv(np.diff(t)),
               operational_cv=_cv(np.diff(operational(t, rates, window))))


def operational(t: np.ndarray, rates: np.ndarray, window: float) -> np.ndarray:
    """Λ(t) = ∫₀ᵗ of the piecewise rate (`rates` per window of `window` seconds, the last one on)."""
    k = np.minimum(np.floor(t / window).astype(np.int64), len(rates) - 1)
    edges = np.concatenate([[0.0], np.cumsum(rates * window)])
    return edges[k] + rates[k] * (t - window * k)


def unit_gap(cv: float) -> str:
    """A draw of mean 1 with coefficient of variation `cv` (erlang's rounded to a whole phase count)."""
    if not (cv > 0 and math.isfinite(cv)):
        return "~exp(1)"
    if cv < 1:
        k = max(1, round(1 / (cv * cv)))
        return "~exp(1)" if k == 1 else f"~erlang({k}, 1)"
    return "~exp(1)" if cv == 1 else f"~h2(1, {_num(cv * cv)})"


def _cv(gaps: np.ndarray) -> float:
    return float(gaps.std() / gaps.mean()) if len(gaps) > 1 and gaps.mean() > 0 else float("nan")


def window_counts(t: np.ndarray, window: float, end: float) -> np.ndarray:
    """Arrivals per window [k W, (k + 1) W) over [0, end] (the last window holds `end`)."""
    n = max(1, int(math.floor(end / window)) + 1) if end > 0 else 1
    k = np.minimum(np.floor(t / window).astype(np.int64), n - 1)
    return np.bincount(k, minlength=n).astype(np.float64)


def burstiness(counts: np.ndarray) -> tuple[float, float]:
    """Variance/mean (the population variance) and peak/mean of per-window counts."""
    mean = counts.mean()
    return float(counts.var() / mean), float(counts.max() / mean)


def _tree(rates: np.ndarray, lo: int, hi: int, window: float) -> str:
    """`now < boundary ? left : right`, halving the windows [lo, hi) at each level."""
    if hi - lo == 1:
        return _num(rates[lo])
    mid = (lo + hi) // 2
    return f"(now < {_num(mid * window)} ? {_tree(rates, lo, mid, window)} : {_tree(rates, mid, hi, window)})"


def _num(x: float) -> str:
    return repr(float(x))

"""A study's plot: a metric's mean over seeds against a swept `let`, with t-interval bars."""
from __future__ import annotations

import math

from sq._support._optional import require
from sq.errors import SqError
from sq._support.settings import is_number


def plot_summary(sweep, x: str, y: str, *, by=None, slo=None, ax=None, confidence=0.95,
                 logx=False, logy=False):
    """One line per value of `by` (or one line), points at each value of `x`, bars of the
    Student-t half-width; a dashed line at `slo`. Returns the axes."""
    if x not in sweep.names:
        raise SqError(f"plot: x=`{x}` is not a swept name ({', '.join(sweep.names) or 'none'})", phase="settings")
    if by is not None and by not in sweep.names:
        raise SqError(f"plot: by=`{by}` is not a swept name ({', '.join(sweep.names)})", phase="settings")
    if y not in sweep.metrics:
        raise SqError(f"plot: y=`{y}` is not a metric of this sweep", phase="settings",
                      notes=("help: see Sweep.metrics for the names",))
    if slo is not None and not is_number(slo):
        raise SqError(f"plot: slo is a number (where to draw the SLO's line), found {slo!r}", phase="settings")
    if ax is None:
        ax = require("matplotlib.pyplot", "Sweep.plot").subplots()[1]
    elif not all(hasattr(ax, method) for method in ("errorbar", "axhline", "set_xscale")):
        raise SqError(f"plot: ax is a matplotlib Axes to draw on, found {ax!r}", phase="settings")
    lines: dict = {}
    for row in sweep.summary_records(confidence):
        lines.setdefault(row.get(by) if by else None, []).append(row)
    unsteady = False
    for label, rows in lines.items():
        rows = sorted(rows, key=lambda r: _number(r[x]))
        bars = ax.errorbar([_number(r[x]) for r in rows], [r[y] for r in rows],
                           yerr=[0.0 if math.isnan(r[y + "±"]) else r[y + "±"] for r in rows],
                           marker="o", capsize=3, label=None if by is None else f"{by}={label}")
        # one legend entry for the hollow markers, whatever line had them first
        unsteady |= _hollow(ax, [r for r in rows if r["unsteady"]], x, y, bars.lines[0].get_color(),
                            HOLLOW if not unsteady else "_nolegend_")
    if slo is not None:
        ax.axhline(slo, color="grey", linestyle="--", label=f"SLO {slo:g}")
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(f"{y} (mean, {confidence:.0%} t interval over seeds)")
    if by is not None or slo is not None or unsteady:
        ax.legend()
    return ax


def _hollow(ax, rows, x, y, color, label: str) -> bool:
    """Hollow markers over the points with runs not in steady state (their means depend on
    the horizon, as the sweep's table says); whether there were any."""
    if not rows:
        return False
    ax.plot([_number(r[x]) for r in rows], [r[y] for r in rows], linestyle="none", marker="o",
            markerfacecolor="white", color=color, zorder=3, label=label)
    return True


HOLLOW = "hollow: runs not in steady state"


def _number(v):
    """A swept value as a coordinate (an expression given as text stays text)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return v

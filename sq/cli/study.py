"""`python -m sq sweep`: a study from the command line (see docs/cli.md).

Everything the user typed is checked before the first run starts (names, ranges,
seeds, metrics, the output file, the plot, the scheduler); a mistake is one
error line and exit status 2.
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from fractions import Fraction
from pathlib import Path

from sq.cli.args import add_run_args, check_output, headless_plots, once_each, parse_seeds, scheduler
from sq._support import settings
from sq.errors import SqError

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_RANGE = re.compile(rf"^\s*({_NUMBER})\s*:\s*({_NUMBER})\s*:\s*({_NUMBER})\s*$")
# numbers and colons, but not START:STOP:STEP (`1:3`, `1:3:`): a range written wrong, not an expression
_RANGE_LIKE = re.compile(rf"^\s*(?:{_NUMBER})?\s*(?::\s*(?:{_NUMBER})?\s*)+$")


def add_parser(sub) -> None:
    p = sub.add_parser("sweep", help="run a program over a grid of `let` values and seeds; print a summary",
                       description="Run FILE at every combination of the --set values, once per seed; "
                                   "print one row per point (mean ± Student-t half-width over seeds).")
    p.add_argument("file", help="the .sq program")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=V1,V2,…|START:STOP:STEP",
                   help="values of a `let` to sweep (repeatable; the grid is every combination)")
    add_run_args(p)
    p.add_argument("--metric", dest="metrics", action="append", default=[], metavar="OBS<=X",
                   help="also record and show OBS.le(X), the share of OBS's samples <= X; or show "
                        "another metric (e.g. stage.NAME.util) in the table (repeatable)")
    p.add_argument("--out", metavar="FILE", help="write every run as a row: FILE.csv, .jsonl, .json (one array) or .parquet")
    p.add_argument("--plot", metavar="x=NAME,y=METRIC[,by=NAME][,slo=V][,logx][,logy]",
                   help="plot METRIC's mean (with interval bars) against a swept NAME into --plot-out")
    p.add_argument("--plot-out", metavar="FILE.png", help="where --plot writes its figure")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="a progress bar on stderr (default: when stderr is a terminal)")


# -- reading the flags -------------------------------------------------------------------

def parse_values(text: str) -> tuple[str, list]:
    """`NAME=V1,V2,…` or `NAME=START:STOP:STEP` (STOP included when the steps land on it)."""
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or not re.fullmatch(r"[^\W\d]\w*", name):
        raise SqError(f"--set takes NAME=V1,V2,… or NAME=START:STOP:STEP, found `{text}`", phase="settings")
    from sq.study.plan import distinct_values  # noqa: PLC0415  (only for a sweep)

    return name, distinct_values(name, _values(name, values), f"--set {text}")


def _values(name: str, values: str) -> list:
    m = _RANGE.match(values)
    if m:
        return _range(name, *m.groups())
    if _RANGE_LIKE.match(values):
        raise SqError(f"--set {name}={values}: a range is START:STOP:STEP (e.g. 1:3:0.5)", phase="settings")
    items = [v.strip() for v in values.split(",")]
    if not all(items):
        raise SqError(f"--set {name}: an empty value in `{values}`", phase="settings")
    return [_number_or_text(v) for v in items]


_LARGEST = Fraction(sys.float_info.max)


def _range(name: str, start: str, stop: str, step: str) -> list:
    a, b, s = Fraction(start), Fraction(stop), Fraction(step)
    for text, v in ((start, a), (stop, b), (step, s)):
        if abs(v) > _LARGEST:     # its values would not be numbers (float() overflows)
            raise SqError(f"--set {name}={start}:{stop}:{step}: {text.strip()} is beyond the largest number "
                          f"({sys.float_info.max:.4g})", phase="settings")
    if s == 0:
        raise SqError(f"--set {name}={start}:{stop}:{step}: the step is 0", phase="settings")
    count = math.floor((b - a) / s) + 1
    if count < 1:
        raise SqError(f"--set {name}={start}:{stop}:{step}: the range is empty", phase="settings")
    settings.at_most(count, "values", f"--set {name}={start}:{stop}:{step}")
    # exact steps: 0.1:0.3:0.1 gives 0.1, 0.2, 0.3 as written, not 0.30000000000000004
    whole = all(re.fullmatch(r"[-+]?\d+", t.strip()) for t in (start, stop, step))
    return [int(v) if whole else float(v) for v in (a + k * s for k in range(count))]


def _number_or_text(v: str):
    """A number as int (written whole) or float; anything else stays an expression for the linker."""
    if re.fullmatch(r"[-+]?\d+", v):
        return int(v)
    try:
        return float(v) if re.fullmatch(_NUMBER, v) else v
    except ValueError:
        return v


def parse_plot(text: str) -> dict:
    spec: dict = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if key in ("logx", "logy") and not sep:
            spec[key] = True
        elif key in ("x", "y", "by") and sep and value.strip():
            spec[key] = value.strip()
        elif key == "slo" and sep:
            try:
                spec["slo"] = float(value)
            except ValueError:
                raise SqError(f"--plot: slo must be a number, found `{value}`", phase="settings") from None
        else:
            raise SqError(f"--plot takes x=NAME,y=METRIC[,by=NAME][,slo=V][,logx][,logy], found `{part}`",
                          phase="settings")
    if "x" not in spec or "y" not in spec:
        raise SqError("--plot needs x=NAME and y=METRIC", phase="settings")
    return spec


# -- the command -------------------------------------------------------------------------

def cmd_sweep(args) -> int:
    from sq.results import metrics as sq_metrics
    from sq._support._optional import require
    from sq.study.plan import Plan

    grid = once_each((parse_values(t) for t in args.sets), "--set")
    seeds = parse_seeds(args.seeds)
    plot = parse_plot(args.plot) if args.plot else None
    if plot and args.plot_out is None:
        raise SqError("--plot needs --plot-out FILE.png", phase="settings")
    if args.plot_out is not None and not plot:
        raise SqError("--plot-out needs --plot x=NAME,y=METRIC", phase="settings")
    extra = [sq_metrics.parse_metric(m).name for m in args.metrics]
    if plot:
        headless_plots("--plot")
        for key in ("x", "by"):
            if plot.get(key) is not None and plot[key] not in grid:
                raise SqError(f"--plot {key}={plot[key]}: not a swept name (--set NAME=…)", phase="settings")
        y = sq_metrics.parse_metric(plot["y"])
        plot["y"] = y.name
        if y.observe is not None:
            extra.append(y.name)
    # the names and values, the metrics and the run settings are checked by compiling the first
    # window of points, once, here: before a scheduler is reached (the sweep runs this plan)
    plan = Plan(args.file, grid, horizon=args.horizon, warmup=args.warmup, arrivals=args.arrivals, metrics=extra)
    if plot:
        sq_metrics.check_metrics([plot["y"]], plan.programs[0])
    for flag, path in (("--out", args.out), ("--plot-out", args.plot_out)):
        if path is not None:
            check_output(path, flag)
    if args.out and Path(args.out).suffix.lower() == ".parquet":
        require("pyarrow", "--out FILE.parquet")
    with scheduler(args.scheduler) as client:
        return _run(args, plan, seeds, extra, plot, client)


def _run(args, plan, seeds, extra, plot, client) -> int:
    from sq.study.sweep import run_plan

    try:
        result = run_plan(plan, seeds, executor=client, jobs=args.jobs, cache=args.cache, progress=args.progress)
    except KeyboardInterrupt as stop:
        # the same kind of interrupt, carrying the line that `sq.__main__` prints
        raise type(stop)(f"interrupted: {_keep(stop, args, False)}") from None
    except SqError as stop:
        if getattr(stop, "sweep", None) is None:
            raise
        raise SqError(stop.message, phase=stop.phase, notes=(f"note: {_keep(stop, args, True)}",)) from None
    if args.out is not None:    # first: the runs are kept whatever the summary meets
        result.write(args.out)
    print(summary_table(result, extra))
    if plot:
        ax = result.plot(plot["x"], plot["y"], by=plot.get("by"), slo=plot.get("slo"),
                         logx=plot.get("logx", False), logy=plot.get("logy", False))
        ax.figure.savefig(args.plot_out, dpi=120, bbox_inches="tight")
    return 0


def _keep(stop, args, written: bool) -> str:
    """Write the finished runs a stopped study carries to --out; say how many there are and
    where they are kept."""
    partial = getattr(stop, "sweep", None)
    if partial is not None and len(partial.table) and args.out:
        partial.write(args.out)
    done = len(partial.table) if partial is not None else 0
    total = partial.total if partial is not None else "?"
    kept = [f"written to {args.out}"] if written and done and args.out else []
    kept += [f"kept in {args.cache}"] if args.cache else []
    return f"{done} of {total} runs finished" + (f"; {', '.join(kept)}" if kept else "")


def summary_table(result, extra=()) -> str:
    """One aligned row per point: the swept values, n, how many runs are not in steady state,
    and `mean ± half-width` of every observe's mean and p99 and of the metrics asked for; under
    it, when some run is not in steady state, a line saying what that means."""
    from sq.results.report import text_table  # noqa: PLC0415  (the report's own column layout)
    from sq.results.steady import NOT_STEADY  # noqa: PLC0415

    observes = list(dict.fromkeys(m.rsplit(".", 1)[0] for m in result.metrics if m.endswith(".p99")))
    shown = [f"{o}.{f}" for o in observes for f in ("mean", "p99")] + list(dict.fromkeys(extra))
    summary = result.summary_records()
    rows = [[*(_cell(r[n]) for n in result.names), str(r["n"]), str(r["unsteady"]),
             *(f"{_g(r[m])} ± {_g(r[m + '±'])}" for m in shown)] for r in summary]
    headers = [*result.names, "n", "unsteady", *shown]
    if not result.names:  # the table's first column is left-aligned: keep a label there
        headers, rows = ["point", *headers], [["(program)", *row] for row in rows]
    lines = text_table(headers, rows)[1:]
    if any(r["unsteady"] for r in summary):
        lines.append(f"unsteady: runs not in steady state ({NOT_STEADY}): overload, or a horizon "
                     "too short; such a point's means depend on the horizon")
    return "\n".join(lines)


def _g(x: float) -> str:
    return "nan" if x != x else f"{x:.4g}"


def _cell(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)

"""`python -m sq capacity`: the largest load, or the smallest deployment, that meets an SLO.

Each point is printed as it is decided (the value, every SLO metric as mean ±
half-width over the seeds, the verdict), then one line with the answer and its
bracket; `--json` prints the whole `Capacity` record instead.
"""
from __future__ import annotations

import contextlib
import sys

from sq.cli.args import (add_program_args, add_run_args, check_output, headless_plots, number, overrides,
                         parse_seeds, scheduler, whole_number)


def add_parser(sub) -> None:
    p = sub.add_parser("capacity", help="search a `let` for the largest load / smallest deployment meeting an SLO",
                       description="Search one `let` constant (--knob) for the largest value (a load) or the "
                                   "smallest (a deployment size) at which every --slo condition holds, judged "
                                   "on Student-t intervals over the seeds.")
    add_program_args(p, settings=False)
    p.add_argument("--knob", required=True, metavar="NAME", help="the `let` constant to search")
    p.add_argument("--slo", action="append", required=True, metavar="'METRIC OP NUMBER'",
                   help="a condition, e.g. 'ttft.p99<=0.5' or 'ttft.le(0.5)>=0.99' (repeatable: all must hold)")
    p.add_argument("--lo", type=number, help="the lower end of the range searched (with --hi)")
    p.add_argument("--hi", type=number, help="the upper end of the range searched (with --lo)")
    p.add_argument("--tol", type=number, default=0.02, help="relative width of the final bracket (default 0.02)")
    p.add_argument("--confidence", type=number, default=0.95, help="of the intervals (default 0.95)")
    p.add_argument("--direction", choices=("max", "min"),
                   help="search for the largest (max) or smallest (min) value that meets the SLO "
                        "(default: max for a load, min for a deployment size)")
    p.add_argument("--max-seeds", type=whole_number,
                   help="seeds at most at one point before it is called undecided (default: 4x --seeds)")
    p.add_argument("--settle", type=whole_number, default=16,
                   help="a value whose runs may still grow is run 4x longer, up to this many times the "
                        "horizon, before its verdict counts (default 16; 1: never)")
    add_run_args(p)
    p.add_argument("--plot-out", metavar="FILE.png", help="save the plot of the SLO metrics against the knob")
    p.add_argument("--json", action="store_true", help="print the Capacity record as JSON (points go to stderr)")
    p.add_argument("--over-time", type=number, metavar="W",
                   help="a replayed trace: one search (smallest deployment) per window of W trace seconds; "
                        "the program writes `arrive replay window(window_from, window_to)`")
    p.add_argument("--lead-in", type=number, metavar="L",
                   help="with --over-time: replay the L trace seconds before each window first, excluded "
                        "by the warm-up, so a window starts with the backlog it would meet (default: W; 0: "
                        "each window starts empty)")


def cmd_capacity(args) -> int:
    from sq.frontend.compile import compile_program as sq_compile
    from sq.study.capacity import capacity

    if args.over_time is not None:
        return _over_time(args)
    if args.lead_in is not None:
        raise SqError("--lead-in goes with --over-time (the lead-in before each window)", phase="settings")
    # the run settings apply before linking, as `sq run --horizon` does
    program = sq_compile(args.file, sets=overrides(args.sets, "--set"), defs=overrides(args.defs, "--def"),
                         horizon=args.horizon, warmup=args.warmup, arrivals=args.arrivals)
    seeds = parse_seeds(args.seeds)
    if args.plot_out is not None:
        check_output(args.plot_out, "--plot-out")     # before the search, not after all its runs
        headless_plots("--plot-out")
    out = sys.stderr if args.json else sys.stdout

    def show(point) -> None:
        print(point.describe(args.knob), file=out, flush=True)
        for line in point.warnings:
            print(f"  warning: {line}", file=out, flush=True)

    with scheduler(args.scheduler) as client, _interrupt_line(args):
        cap = capacity(program, args.knob, args.slo, lo=args.lo, hi=args.hi, seeds=seeds,
                       confidence=args.confidence, tol=args.tol, direction=args.direction, executor=client,
                       jobs=args.jobs, cache=args.cache, horizon=args.horizon, warmup=args.warmup,
                       arrivals=args.arrivals, max_seeds=args.max_seeds, on_point=show,
                       settle=args.settle)
    if args.plot_out is not None:
        cap.plot(path=args.plot_out)
    print(cap.to_json() if args.json else cap.line())
    return 0


@contextlib.contextmanager
def _interrupt_line(args):
    """Ctrl-C: the line `sq.__main__` prints says what was kept, not only "interrupted"."""
    try:
        yield
    except KeyboardInterrupt as stop:
        partial = getattr(stop, "capacity", None)
        if partial is None:
            raise
        kept = f"; kept in {args.cache}" if args.cache else ""
        raise type(stop)(f"interrupted: {len(partial.points)} values decided, {len(partial.table)} runs "
                         f"finished{kept}") from None


def _over_time(args) -> int:
    """`--over-time W`: one capacity search per window of the replayed trace (sq.capacity_over_time)."""
    from sq.study.over_time import capacity_over_time

    def show(t0, cap) -> None:
        print(f"[{t0:g}, {t0 + args.over_time:g}) {cap.line()}", file=sys.stderr if args.json else sys.stdout,
              flush=True)

    with scheduler(args.scheduler) as client:
        result = capacity_over_time(args.file, args.knob, args.slo, window=args.over_time,
                                    sets=overrides(args.sets, "--set"), defs=overrides(args.defs, "--def"),
                                    warmup=args.warmup, lead_in=args.lead_in, lo=args.lo, hi=args.hi, seeds=parse_seeds(args.seeds),
                                    confidence=args.confidence, tol=args.tol, executor=client, jobs=args.jobs,
                                    cache=args.cache, max_seeds=args.max_seeds, on_window=show)
    if args.json:
        import json
        print(json.dumps({"window": result.window, "starts": list(result.starts),
                          "values": [None if v != v else v for v in result.values.tolist()], **result.figures()}))
    else:
        print(result.table())
    return 0

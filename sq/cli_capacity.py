"""`python -m sq capacity`: the largest load, or the smallest deployment, that meets an SLO.

Each point is printed as it is decided (the value, every SLO metric as mean ±
half-width over the seeds, the verdict), then one line with the answer and its
bracket; `--json` prints the whole `Capacity` record instead.
"""
from __future__ import annotations

import argparse
import sys

from sq.frontend.errors import SqError


def add_parser(sub) -> None:
    from sq.cli import _add_program_args, _number, _positive_int

    p = sub.add_parser("capacity", help="search a `let` for the largest load / smallest deployment meeting an SLO",
                       description="Search one `let` constant (--knob) for the largest value (a load) or the "
                                   "smallest (a deployment size) at which every --slo condition holds, judged "
                                   "on Student-t intervals over the seeds.")
    _add_program_args(p, settings=False)
    p.add_argument("--knob", required=True, metavar="NAME", help="the `let` constant to search")
    p.add_argument("--slo", action="append", required=True, metavar="'METRIC OP NUMBER'",
                   help="a condition, e.g. 'ttft.p99<=0.5' or 'ttft.le(0.5)>=0.99' (repeatable: all must hold)")
    p.add_argument("--lo", type=_number, help="the lower end of the range searched (with --hi)")
    p.add_argument("--hi", type=_number, help="the upper end of the range searched (with --lo)")
    p.add_argument("--tol", type=_number, default=0.02, help="relative width of the final bracket (default 0.02)")
    p.add_argument("--confidence", type=_number, default=0.95, help="of the intervals (default 0.95)")
    p.add_argument("--direction", choices=("max", "min"),
                   help="search for the largest (max) or smallest (min) value that meets the SLO "
                        "(default: max for a load, min for a deployment size)")
    p.add_argument("--max-seeds", type=_positive_int,
                   help="seeds at most at one point before it is called undecided (default: 4x --seeds)")
    p.add_argument("--horizon", type=_number, help="simulated time of each run")
    p.add_argument("--warmup", type=_number, help="time before statistics start")
    p.add_argument("--arrivals", type=_positive_int, help="stop each run after N arrivals have ended")
    add_study_args(p)
    p.add_argument("--plot-out", metavar="FILE.png", help="save the plot of the SLO metrics against the knob")
    p.add_argument("--json", action="store_true", help="print the Capacity record as JSON (points go to stderr)")


def run(args) -> int:
    from sq import compile as sq_compile
    from sq.capacity import capacity
    from sq.cli import _overrides

    program = sq_compile(args.file, sets=_overrides(args.sets, "--set"), defs=_overrides(args.defs, "--def"))
    out = sys.stderr if args.json else sys.stdout

    def show(point) -> None:
        print(point.describe(args.knob), file=out, flush=True)

    with study_executor(args) as executor:
        cap = capacity(program, args.knob, args.slo, lo=args.lo, hi=args.hi, seeds=args.seeds,
                       confidence=args.confidence, tol=args.tol, direction=args.direction, executor=executor,
                       jobs=args.jobs, cache=args.cache, horizon=args.horizon, warmup=args.warmup,
                       arrivals=args.arrivals, max_seeds=args.max_seeds, on_point=show)
    if args.plot_out:
        from sq._optional import require

        require("matplotlib", "--plot-out").use("Agg")
        try:
            cap.plot(path=args.plot_out)
        except OSError as err:
            raise SqError(f"--plot-out: cannot write `{args.plot_out}`: {err.strerror or err}",
                          phase="settings") from None
    print(cap.to_json() if args.json else cap.line())
    return 0


# -- the options every study command shares ---------------------------------------------

def add_study_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seeds", type=_seed_list, default=list(range(1, 11)), metavar="1..10",
                   help="the seeds of every point: a range A..B or a list A,B,C (default 1..10)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("-j", "--jobs", type=_jobs, help="worker processes (default: every core)")
    where.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on a Dask cluster")
    p.add_argument("--cache", metavar="DIR", help="keep every finished run in DIR; a rerun computes only what is missing")


def _seed_list(text: str) -> list[int]:
    try:
        if ".." in text:
            a, b = text.split("..")
            seeds = list(range(int(a), int(b) + 1))
        else:
            seeds = [int(s) for s in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds are A..B or A,B,C, found `{text}`") from None
    if not seeds:
        raise argparse.ArgumentTypeError(f"no seeds in `{text}`")
    return seeds


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"-j takes a positive whole number, found `{text}`")
    return n


class study_executor:
    """The executor the options ask for: a Dask client for --scheduler (closed on the way out)."""

    def __init__(self, args):
        self.address, self.client = args.scheduler, None

    def __enter__(self):
        if self.address is None:
            return None
        from sq._optional import require

        distributed = require("distributed", "--scheduler")
        try:
            self.client = distributed.Client(self.address, timeout="5s")
        except (OSError, TimeoutError) as err:
            raise SqError(f"--scheduler: cannot reach `{self.address}`: {err}", phase="settings") from None
        return self.client

    def __exit__(self, *_):
        if self.client is not None:
            self.client.close()
        return False

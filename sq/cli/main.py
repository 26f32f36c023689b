"""`python -m sq`: check, ir, run, sweep, capacity, fit-workload, bench, costs and validate.

Every subcommand turns bad input into one `FILE:LINE:COL: error: …` report
and exit status 2; a bug in sq itself is reported as an internal error
(exit 3, the Python traceback only with SQ_DEBUG=1).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import traceback

from sq.cli import capacity as cli_capacity
from sq.cli import study as cli_study
from sq.costs import commands as cost_commands
from sq._support import settings
from sq.cli.args import add_program_args, number, overrides
from sq.errors import SqError
from sq._support.number_format import brief

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_WALL_LIMIT = 124   # `--wall-limit` ended the run (as GNU timeout); the report is printed
EXIT_INTERRUPTED = 128 + signal.SIGINT  # Ctrl-C (sq.__main__); a `run` prints the report of what ran
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE   # what a shell shows for a tool that SIGPIPE ended
AUTO_PROGRESS_AFTER = 1.0  # seconds: a terminal sees a bar only for runs longer than this


def _window(text: str) -> tuple[float, float]:
    t0, sep, t1 = text.partition(":")
    try:
        if not sep:
            raise ValueError
        window = float(t0), float(t1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a window is T0:T1 (two times), found `{text}`")
    return window   # checked, as every run setting, by sq.run


_SIZE_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _size(text: str) -> int:
    """A byte count: a whole number with an optional K, M, G or T (powers of 2^10)."""
    number, unit = text.strip(), ""
    if number and number[-1].upper() in _SIZE_UNITS:
        number, unit = number[:-1], number[-1].upper()
    try:
        value = int(number) * _SIZE_UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size like 512M or 4G, found `{text}`")
    if not settings.is_memory_bound(value):
        raise argparse.ArgumentTypeError(f"expected a size from 1 byte to 2^63 - 1, found `{text}`")
    return value


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m sq", description="Run serQ serving programs (pyserq 0.1.2 dialect).")
    sub = ap.add_subparsers(dest="command", required=True)

    check = sub.add_parser("check", help="parse and link a program; print a one-line summary")
    add_program_args(check, settings=True)

    ir = sub.add_parser("ir", help="print a program's IR (pyserq IR version 10) as JSON")
    add_program_args(ir, settings=True)

    run = sub.add_parser("run", help="run a program and print its report")
    add_program_args(run, settings=True)
    run.add_argument("--json", action="store_true", help="print the report as JSON (the fields of pyserq's report)")
    run.add_argument("--provenance", action="store_true",
                     help="with --json: add a last key `provenance` (program, overrides, defs, sq version, wall time)")
    run.add_argument("--trace-iterations", action="store_true",
                     help="print one ITER line per step iteration (on stderr)")
    run.add_argument("--trace-evictions", action="store_true",
                     help="print one EVICT line per evicted piece of cache (on stderr)")
    run.add_argument("--dump-pools", action="store_true",
                     help="print each pool's contents at the end of the run (on stderr)")
    run.add_argument("--dump", metavar="DIR", help="write one CSV per observe and per gauge into DIR")
    run.add_argument("--max-memory", type=_size, metavar="SIZE",
                     help="stop the run (an error) before its tables take more than SIZE bytes "
                          "(suffix K, M, G or T for 2^10…2^40; default 4G)")
    # long runs (docs/cli.md): memory, progress, wall-clock limit
    run.add_argument("--samples", metavar="{all,none}", default="all",  # checked by the engine
                     help="keep every sample (all, the default) or only summaries: flat memory, "
                          "approximate CI and quantiles (none)")
    run.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="show a progress bar on stderr (default: when stderr is a terminal "
                          "and the run lasts over a second)")
    run.add_argument("--wall-limit", type=number, metavar="SECONDS",
                     help=f"stop the run after SECONDS of wall time; print its report so far "
                          f"(exit {EXIT_WALL_LIMIT})")
    run.add_argument("--timeline", metavar="FILE.json",
                     help="write a Chrome/Perfetto trace-event file of the run (opens in ui.perfetto.dev)")
    run.add_argument("--timeline-window", type=_window, metavar="T0:T1",
                     help="only what overlaps simulated times T0 to T1 goes into the timeline")

    cli_study.add_parser(sub)
    cli_capacity.add_parser(sub)
    cost_commands.add_parsers(sub)

    fit = sub.add_parser("fit-workload", help="fit a workload (a rate per window) to a trace; print it as a library",
                         description="Read a trace (any format sq.read_trace reads) and print a library of "
                                     "`def`s: fitted_rate(), the trace's rate per window as a function of `now`, "
                                     "for `arrive poisson(fitted_rate());`, and fitted_end(), its span.")
    fit.add_argument("trace", help="the trace file")
    fit.add_argument("--window", type=number, default=60.0, help="seconds per window (default 60)")
    fit.add_argument("--format", help="the trace's format (default: recognised from the file)")
    fit.add_argument("-o", "--output", metavar="FILE", help="write the library to FILE instead of stdout")

    bench = sub.add_parser("bench", help="run the standard benchmark models")
    bench.add_argument("--quick", action="store_true", help="short runs, for a smoke test")
    bench.add_argument("--no-reference", action="store_true", help="do not run pyserq for comparison")
    bench.add_argument("--reference", metavar="FILE", help="the file that runs pyserq (default: a source checkout's "
                       "benchmarks/reference_pyserq.py; sq itself never imports pyserq)")
    bench.add_argument("--rounds", type=int, default=5, help="rounds per measurement (each a fresh process, at least 1 s of CPU but with --quick); the least CPU time is shown")
    bench.add_argument("names", nargs="*", help="benchmark names (default: all)")
    return ap


def _compile(args):
    from sq.frontend.compile import compile_program as sq_compile

    return sq_compile(
        args.file,
        sets=overrides(args.sets, "--set"),
        defs=overrides(args.defs, "--def"),
        seed=args.seed, horizon=args.horizon, warmup=args.warmup,
        arrivals=args.arrivals, trace=args.trace,
    )


def _emit(text: str) -> None:
    """Print `text` and a newline on stdout, now: a full disk is an error said
    plainly (not at exit, and not as an empty file name); a reader that has gone
    (`sq ir x.sq | head -1`) ends the command quietly (see `main`)."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        _stdout_to_devnull()
        raise SqError(f"cannot write to standard output: {e.strerror or e} (os error {e.errno})",
                      phase="run") from None


def _stdout_to_devnull() -> None:
    """Point stdout at nothing: Python would try the failed flush again at exit and complain."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _dump_folder(folder: str | None) -> None:
    """Check (and create) the `--dump` folder before the run, so a bad one does not cost the run."""
    if folder is None:
        return
    if not folder.strip():
        raise SqError("--dump takes a folder to write the CSV files into, found an empty name", phase="settings")
    from sq._support.files import make_folder

    make_folder(folder, "--dump")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise SqError(f"--dump {folder}: the folder is not writable", phase="settings")


def _cmd_check(args) -> int:
    ir = _compile(args).to_dict()
    _emit(f"{args.file}: ok: {_summary(ir)}")
    return 0


def _summary(ir: dict) -> str:
    def count(n, word):
        return f"{n} {word}{'' if n == 1 else 's'}"

    parts = [count(len(ir["pools"]), "pool"), count(len(ir["stages"]), "stage"),
             count(len(ir["observes"]), "observe"), count(len(ir.get("gauges") or []), "gauge"),
             f"horizon {brief(ir['horizon'])}", f"seed {ir['seed']}"]
    return ", ".join(parts)


def _cmd_ir(args) -> int:
    program = _compile(args)
    _emit(program.to_json())
    return 0


def _cmd_run(args) -> int:
    from sq.engine.run import run

    if args.dump and args.samples == "none":
        raise SqError("--dump writes the samples, which --samples none does not keep", phase="settings")
    _dump_folder(args.dump)
    program = _compile(args)
    if args.timeline_window is not None and args.timeline is None:
        raise SqError("--timeline-window needs --timeline FILE.json", phase="settings")
    # the traces go to stderr as the run goes; EVICT lines follow all ITER lines, so with both
    # they wait in a temporary file until the run ends
    both = args.trace_iterations and args.trace_evictions
    with tempfile.TemporaryFile("w+") if both else contextlib.nullcontext(sys.stderr) as evictions:
        try:
            report = run(program, trace_iterations=args.trace_iterations and sys.stderr,
                         trace_evictions=args.trace_evictions and evictions,
                         dump_pools=args.dump_pools, samples=args.samples, progress=_progress(args, program),
                         wall_limit=args.wall_limit, max_memory=args.max_memory, timeline=args.timeline,
                         timeline_window=args.timeline_window)
        except KeyboardInterrupt as stop:
            if getattr(stop, "report", None) is None:
                raise
            report = stop.report
        finally:
            if both:
                evictions.seek(0)
                shutil.copyfileobj(evictions, sys.stderr)
    _print_report(args, report)
    if report.stopped == "interrupted":
        return EXIT_INTERRUPTED
    return EXIT_WALL_LIMIT if report.stopped else 0


def _progress(args, program):
    """--progress: a bar from the start; by default one on a terminal, after a second."""
    if args.progress is False or (args.progress is None and not sys.stderr.isatty()):
        return None
    from sq.engine.progress import tracker

    auto = args.progress is None
    return tracker(True, program.horizon, program.arrivals or 0,
                   delay=AUTO_PROGRESS_AFTER if auto else 0.0, note=not auto)


def _print_report(args, report) -> None:
    for line in report.iteration_trace + report.eviction_trace + report.pool_dump:
        print(line, file=sys.stderr)
    if args.dump:
        report.dump(args.dump)
    _emit(report.to_json(provenance=args.provenance) if args.json else report.to_text())
    if args.json:
        # the JSON is pyserq's, so the warnings the text report ends with go to stderr
        for warning in report.warnings:
            print(f"warning: {warning}", file=sys.stderr)


def _cmd_fit_workload(args) -> int:
    from sq.traces import read_trace
    from sq.traces.fit import fit
    text = fit(read_trace(args.trace, args.format), args.window).library(args.trace)
    if args.output is None:
        _emit(text.rstrip("\n"))
    else:
        from sq._support.files import open_for_writing
        with open_for_writing(args.output, "--output") as f:   # checked, worded and atomic as every output
            f.write(text)
    return 0


def _cmd_bench(args) -> int:
    from sq.bench import main as bench

    return bench(names=args.names, quick=args.quick, reference=not args.no_reference, rounds=args.rounds,
                 driver=args.reference)


COMMANDS = {"check": _cmd_check, "ir": _cmd_ir, "run": _cmd_run, "sweep": cli_study.cmd_sweep,
            "capacity": cli_capacity.cmd_capacity, "bench": _cmd_bench,
            "fit-workload": _cmd_fit_workload,
            "costs": cost_commands.cmd_costs, "validate": cost_commands.cmd_validate}


def main(argv: list[str] | None = None) -> int:
    """The command's exit status. When stdout's reader has gone, the rest of the
    output is dropped without a word, as Unix tools do (Python's recipe for
    SIGPIPE); Ctrl-C is left to the caller (`sq.__main__`). A standard output closed from
    the start (`sq run x.sq >&-`: Python makes it None) is bad input: every command writes there."""
    if sys.stdout is None:
        print("error: standard output is closed: sq writes its results there "
              "(redirect it to a file, or to /dev/null to drop them)", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        try:
            return _command(argv)
        finally:
            sys.stdout.flush()   # what print() left in the buffer: a closed pipe shows here, not at exit
    except BrokenPipeError:
        _stdout_to_devnull()
        return EXIT_BROKEN_PIPE


def _command(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except SqError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        raise
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        print(f"error: {where}{err.strerror or err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError:  # bad input too: a program or file too big for this machine's memory
        print(f"error: out of memory during `sq {args.command}` (the program, its input files or its "
              "run need more memory than this process may use)", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as err:  # a bug in sq: say so plainly, keep the traceback for SQ_DEBUG
        if os.environ.get("SQ_DEBUG"):
            traceback.print_exc()
        print(f"sq: internal error ({type(err).__name__}: {err}); rerun with SQ_DEBUG=1 for the traceback",
              file=sys.stderr)
        return EXIT_INTERNAL

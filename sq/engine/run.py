"""The Python side of a run: a program lowered to the engine's arrays, run by the event loop
(sq/_engine.pyx), and its raw results made a Report with provenance. `sq.run` is these two halves."""
from __future__ import annotations

import contextlib
import inspect
import os
import time
import weakref

from sq._support import settings
from sq._support.files import cannot_write, check_writable
from sq.errors import SqError


def run(program, *, seed=None, **settings):
    """Run a compiled program and return its Report. Its keywords are run_lowered's (but
    `started`), which its signature shows (`_RUN_SIGNATURE`).

    Settings given here replace the program's own for this run only. The debug
    traces (the reference's SERQ_TRACE_ITER, SERQ_TRACE_EVICT and SERQ_DUMP_POOLS
    lines) land in the report's `iteration_trace`, `eviction_trace` and `pool_dump`;
    `trace_iterations` / `trace_evictions` may instead be a path (the file is written as the
    run goes, and closed at its end), an open text file or a callable
    (given each chunk of lines as a list) that gets the lines while the run goes, and the
    report's list stays empty: memory stays flat however long the trace.
    `max_memory` bounds, in bytes, what the run's growing tables may take (default 4 GiB);
    a run that would pass it stops with an SqError saying how far it got.
    `timeline` (a path) makes the run write a Chrome/Perfetto trace-event file of what
    overlaps `timeline_window` (a pair (t0, t1) of times; None: the whole run).

    Long runs (docs/api.md): `samples="none"` keeps no sample (memory stays flat; the CI
    and quantiles become approximate); `progress=True` shows a bar on stderr, a callable
    gets a `sq.engine.progress.Progress` every ~0.2 s; `wall_limit` seconds stop the run early
    (`report.stopped == "wall limit"`). SIGINT stops it too: KeyboardInterrupt is raised
    with the partial report as its `.report`.
    """
    started = time.perf_counter()
    # A Program run before keeps its arrays (lower_program's `cached`): read here, without
    # lower_program's frame and its keyword defaults, for a sweep's every run.
    kept = getattr(program, "_derived", None)
    lowered = kept.get(_LOWERED) if kept else None
    if lowered is None:
        lowered = lower_program(program)
    if not settings:
        # a plain run (a sweep's): only the seed to check, the engine's defaults (_run_plain, inline:
        # a frame less per run). Taking the settings as **settings, not as 14 keyword-only
        # parameters, spares the interpreter a look-up of each one's default per call.
        if _ENGINE is None:
            _load_run_modules()
        return _run_engine(lowered, program, _seed_checked(lowered, seed), None, None, started)
    if not settings.keys() <= _RUN_SETTINGS:
        unknown = next(name for name in settings if name not in _RUN_SETTINGS)
        raise TypeError(f"run() got an unexpected keyword argument {unknown!r}")
    # the settings go to the engine (checked by run_lowered): the arrays kept on the program stay as they are
    return run_lowered(lowered, program, seed=seed, started=started, **settings)


def lower_program(program, *, seed=None, horizon=None, warmup=None, arrivals=None):
    """The first half of `run`: the program (a Program or an IR dict) with the settings
    applied, lowered to the engine's arrays. A Program is lowered once, on first use, and the
    arrays kept on it (setting one of its fields drops them); settings given here make a
    copy of the `Lowered` that carries them, sharing the arrays."""
    if hasattr(program, "to_dict"):
        try:
            lowered = program.cached(_LOWERED, _lower_program, program)    # (no closure made per run)
        except SqError as e:   # the lowering reads the IR, which has no places: the program knows them
            raise (program.locate(e) if hasattr(program, "locate") else e) from None
    elif isinstance(program, dict):
        lowered = _lower(dict(program), None)
    else:
        raise SqError(f"run takes a Program (from sq.compile or sq.load), found {type(program).__name__}",
                      phase="settings")
    if seed is None and horizon is None and warmup is None and arrivals is None:
        return lowered
    changes = _checked(lowered, seed, horizon, warmup, arrivals)
    import dataclasses

    return dataclasses.replace(lowered, **changes)


def _lower_program(program):
    """A Program's arrays (its IR in the `exact` form, a relative trace read from its folder)."""
    return _lower(program.to_dict(exact=True), program.trace_base)


def _lower(ir: dict, trace_base: str | None):
    """The engine's arrays for an IR (`exact` form: what JSON cannot say, an infinite block or rate, kept)."""
    from sq.lower.lowering import lower

    return lower(with_trace_path(ir, trace_base))


def run_lowered(lowered, program=None, *, seed=None, horizon=None, warmup=None, arrivals=None, started=None,
                trace_iterations=False, trace_evictions=False, dump_pools=False, check_invariants=False,
                max_memory=None, samples="all", progress=None, wall_limit=None, timeline=None,
                timeline_window=None):
    """The second half of `run`: run a lowered program (with other settings if given, checked
    here as `run` checks them: the engine reads them only when the run starts) and build its
    Report with provenance.
    A run stopped by a signal handler (SIGINT) raises its exception with the Report of what
    ran as `.report`."""
    started = time.perf_counter() if started is None else started
    changes = _checked(lowered, seed, horizon, warmup, arrivals)
    if (trace_iterations, trace_evictions, dump_pools, check_invariants, max_memory, samples, progress,
            wall_limit, timeline, timeline_window) == _PLAIN_RUN:
        # a plain run (a sweep's): the engine's defaults, nothing to open, check or track
        return _run_plain(lowered, program, changes, started)
    if _ENGINE is None:
        _load_run_modules()
    with contextlib.ExitStack() as opened:      # trace files given as paths: closed however the run ends
        options = _engine_options(lowered, changes, opened, trace_iterations=trace_iterations,
                                  trace_evictions=trace_evictions, dump_pools=dump_pools,
                                  check_invariants=check_invariants, max_memory=max_memory, samples=samples,
                                  progress=progress, wall_limit=wall_limit, timeline=timeline,
                                  timeline_window=timeline_window)
        return _run_engine(lowered, program, changes, options, options["progress"], started)


# run_lowered's options (trace_iterations .. timeline_window, in this order) at their defaults: a run
# with these passes the engine none of them. A tuple, compared with the options' tuple (a sweep
# asks per run: building and comparing a dict of them cost more)
_OPTIONS = ("trace_iterations", "trace_evictions", "dump_pools", "check_invariants", "max_memory", "samples",
            "progress", "wall_limit", "timeline", "timeline_window")
_PLAIN_RUN = tuple(run_lowered.__kwdefaults__[name] for name in _OPTIONS)
# what `run` takes besides the program and the seed: run_lowered's settings and options, and
# the signature help() and editors show for it (run takes them as **settings: see run)
_RUN_KEYWORDS = [p for name, p in inspect.signature(run_lowered).parameters.items()
                 if p.kind is inspect.Parameter.KEYWORD_ONLY and name != "started"]
_RUN_SETTINGS = frozenset(p.name for p in _RUN_KEYWORDS if p.name != "seed")
_RUN_SIGNATURE = inspect.Signature([inspect.Parameter("program", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                                    *_RUN_KEYWORDS])
run.__signature__ = _RUN_SIGNATURE
# the key under which a Program keeps its lowered arrays (Program.cached), read by run and lower_program
_LOWERED = "lowered"


def _checked(lowered, seed, horizon=None, warmup=None, arrivals=None) -> dict:
    """The run's settings, checked against the lowered program's (settings.checked)."""
    return settings.checked(*settings.of_program(lowered), seed=seed, horizon=horizon, warmup=warmup,
                            arrivals=arrivals)


def _seed_checked(lowered, seed) -> dict:
    """`_checked(lowered, seed)`: a sweep's later runs of one program ask only whether their seed
    is one (the program's own window and arrival limit passed with the first seed given)."""
    global _seed_program
    if type(seed) is int and _seed_program() is lowered and settings.is_u64(seed):
        return {"seed": seed}
    changes = _checked(lowered, seed)
    if seed is not None:    # (with no setting given, settings.checked reads only the arrival limit)
        _seed_program = weakref.ref(lowered)
    return changes


def _no_program():
    return None


# what _seed_checked's weak reference reads before any seed was checked (no program)
_seed_program = _no_program


def _run_plain(lowered, program, changes: dict, started: float):
    """A plain run (every option at its default, _PLAIN_RUN) with checked settings: nothing to
    open, check or track; the engine and the Report."""
    if _ENGINE is None:
        _load_run_modules()
    return _run_engine(lowered, program, changes, {}, None, started)


def _run_engine(lowered, program, changes: dict, options: dict | None, tracker, started: float):
    """The engine's run of a lowered program with checked settings and options (None: `run`'s
    plain run, every option at its default and the seed the one setting), and its Report (the
    engine makes it: `report=True`). A run stopped by a signal handler (SIGINT) raises its
    exception with the Report of what ran as `.report`; a run-time error about a statement is
    placed in the program's text."""
    try:
        if options is None:     # the seed at most (_seed_checked's changes) passed by keyword: a `**`
            # call merges the settings into a new dict for the engine to parse, per run of a sweep
            report = _ENGINE.run(lowered, seed=changes.get("seed"), report=True)
        else:
            report = _ENGINE.run(lowered, **changes, **options, report=True)
    except BaseException as exc:
        # any stop (an SqError such as max_memory, or SIGINT) ends the bar's line
        if tracker is not None:
            tracker.close()
        # stopped by a signal handler (SIGINT: KeyboardInterrupt): the report of what ran
        if getattr(exc, "report", None) is not None:
            _with_provenance(exc.report, program, started)
        # a run-time error about a statement: the program text knows where it is written
        if isinstance(exc, SqError) and exc.item is not None and hasattr(program, "locate"):
            raise program.locate(exc) from None
        raise
    if tracker is not None:
        tracker.finish(report.end, report.events, report.arrivals)
    return _with_provenance(report, program, started)


def _engine_options(lowered, changes, opened, *, trace_iterations, trace_evictions, dump_pools, check_invariants,
                    max_memory, samples, progress, wall_limit, timeline, timeline_window) -> dict:
    """run_lowered's options as the engine takes them, checked (the progress tracker included);
    a trace file given as a path is opened into `opened` (an ExitStack: closed when the run ends)."""
    from sq._support.files import path_argument

    if timeline_window is not None and timeline is None:
        raise SqError("run: timeline_window needs timeline= (the file it is a window of)",
                      phase="settings")
    options = dict(trace_iterations=_trace_sink("trace_iterations", trace_iterations, opened),
                   trace_evictions=_trace_sink("trace_evictions", trace_evictions, opened),
                   dump_pools=dump_pools, check_invariants=check_invariants, samples=samples, progress=None,
                   timeline=None if timeline is None else path_argument(timeline, "run: timeline"),
                   wall_limit=settings.wall_limit(wall_limit), timeline_window=settings.window(timeline_window))
    if max_memory is not None:
        options["max_memory"] = settings.memory_bound(max_memory)
    if progress is not None and progress is not False:
        from sq.engine import progress as progress_mod

        options["progress"] = progress_mod.tracker(progress, changes.get("horizon", lowered.horizon),
                                                   changes.get("arrivals", lowered.arrivals) or 0)
    return options


def _trace_sink(name: str, sink, opened):
    """A debug trace's sink as the engine takes it (True, an open file or a callable); a path
    (`str` or `os.PathLike`) is that file, opened for writing here and written as the run goes."""
    if isinstance(sink, (str, bytes, os.PathLike)):
        path = check_writable(sink, f"run: {name}")
        try:
            return opened.enter_context(open(path, "w", encoding="utf-8", newline=""))
        except OSError as e:
            raise cannot_write(f"run: {name}", path, f"{e.strerror} (os error {e.errno})") from None
    if isinstance(sink, bool) or hasattr(sink, "write") or callable(sink):
        return sink
    raise SqError(f"run: {name} is True, a path, an open text file or a callable, found {sink!r}",
                  phase="settings")


# The engine, imported by the first run (it loads numpy, which `import sq` does not).
_ENGINE = None


def _load_run_modules() -> None:
    global _ENGINE
    from sq import _engine

    _ENGINE = _engine


def _with_provenance(report, program, started: float):
    """The engine's Report of a run with its provenance: the program's origin and the wall time."""
    origin = getattr(program, "compiled_from", None) or {}
    report.program = origin.get("path")
    sets, defs = origin.get("sets"), origin.get("defs")
    if sets:    # (else the Report's own empty dicts: a sweep's runs usually set nothing)
        report.overrides = dict(sets)
    if defs:
        report.defs = dict(defs)
    report.wall_s = time.perf_counter() - started
    return report


def with_trace_path(ir: dict, base: str | None) -> dict:
    """A relative `trace` is read from the program file's folder (kept by compile), else the cwd."""
    trace = ir.get("trace")
    if not trace or not base or os.path.isabs(trace):
        return ir
    return {**ir, "trace": os.path.join(base, trace)}

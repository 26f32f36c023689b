"""The front end's one entry point: program text (or a file) → the linked IR.

`compile_program` takes the keywords of `pyserq.compile` with the same
meaning (spec 01 §9.2); every rejection is an SqError.
"""
from __future__ import annotations

import contextlib
import gc
import inspect
import os
from typing import Any

from sq import ir
from sq._support.files import Unreadable, path_argument, read_text
from sq.frontend import link as linker
from sq.errors import SqError
from sq._support.settings import SEED_RANGE, is_number, is_u64, plain


def compile_program(path: str | os.PathLike | None = None, *, source: str | None = None,
                    sets: dict | None = None, defs: dict | None = None, seed: int | None = None,
                    horizon: float | None = None, warmup: float | None = None,
                    arrivals: int | None = None, trace: str | os.PathLike | None = None) -> ir.Program:
    """Parse, link and validate one program.

    Exactly one of `path` and `source`.  `sets` overrides `let`s (numbers or
    expression text), `defs` replaces expression-definition bodies, and the
    run settings given here win over the program's `run {}` block.
    """
    if (path is None) == (source is None):
        raise SqError("compile takes exactly one of a path and a source", phase="link")
    _check_overrides(sets, defs, seed, horizon, warmup, arrivals)
    sets, horizon, warmup = _plain_sets(sets), _plain(horizon), _plain(warmup)
    trace_path = None if trace is None else path_argument(trace, "compile: trace", "link")
    file = None
    if path is not None:
        file = path_argument(path, "compile", "parse", " (program text goes in `source=`)")
        source = _read(file)
    elif isinstance(source, (bytes, bytearray)):
        try:
            source = bytes(source).decode("utf-8")
        except UnicodeDecodeError:
            raise SqError("compile: the source bytes are not valid UTF-8", phase="parse") from None
    elif not isinstance(source, str):
        raise SqError(f"compile: source must be text, found {type(source).__name__}", phase="parse")
    with _gc_paused():
        tree = ir.run_deep(_parse, source, file, defs or {}, dict(sets or {}))
        settings = linker.Settings(sets=dict(sets or {}), seed=_whole(seed), horizon=horizon, warmup=warmup,
                                   arrivals=_whole(arrivals), trace=trace_path)
        prog = ir.run_deep(linker.link, tree, settings)
    # A relative trace written in a file is read next to that file; one given
    # here or in text compiled from a string is read from the current directory.
    if trace is None and file is not None and prog.trace is not None:
        prog.trace_base = os.path.dirname(os.path.abspath(file))
    prog.compiled_from = {"path": file, "source": None if file is not None else source,
                          "sets": dict(sets or {}), "defs": dict(defs or {}), "seed": seed, "horizon": horizon,
                          "warmup": warmup, "arrivals": arrivals, "trace": trace}
    return prog


@contextlib.contextmanager
def _gc_paused():
    """The cycle collector off while a program is compiled.  Parsing and
    linking allocate tens of thousands of small objects that refcounting frees
    on its own, and every collection rescans all of them: with the collector
    on, a 3000-line program took twice as long (half its time in `gc`).  Any
    cycles made meanwhile are collected once it is back on."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _read(file: str) -> str:
    try:
        return read_text(file)
    except Unreadable as e:
        raise SqError(f"cannot read `{file}`: {e.reason}", phase="parse") from None


def _parse(source: str, file: str | None, defs: dict, sets: dict) -> Any:
    from sq.frontend import parser  # noqa: PLC0415  (the parser is the heaviest import of the front end)
    params = inspect.signature(parser.parse).parameters
    if "defs" in params:
        return parser.parse(source, file=file, defs=defs, sets=sets)
    if defs:
        raise SqError("--def is not supported by this parser", phase="parse")
    return parser.parse(source, file=file)


def _plain_sets(sets: dict | None) -> dict:
    """The `let` overrides with numpy numbers as Python's (the parser, the linker and the
    report's provenance see plain numbers); text stays text."""
    return {name: value if isinstance(value, str) else plain(value) for name, value in (sets or {}).items()}


def _plain(value):
    """A checked horizon or warmup as a Python number, None as None."""
    return None if value is None else plain(value)


def _whole(value):
    """A checked seed or arrival count as a Python int (numpy integers too), None as None."""
    return None if value is None else int(value)


def _check_overrides(sets: Any, defs: Any, seed: Any, horizon: Any, warmup: Any, arrivals: Any) -> None:
    """The keyword types pyserq's binding enforces, as SqErrors."""
    if sets is not None and not isinstance(sets, dict):
        raise SqError("sets must be a mapping of `let` names to values", phase="link")
    for name, value in (sets or {}).items():
        if not (isinstance(value, str) or is_number(value)):
            raise SqError(f"--set {name}: the value must be a number or an expression (text)", phase="link")
    if defs is not None and (not isinstance(defs, dict) or not all(isinstance(v, str) for v in defs.values())):
        raise SqError("defs must be a mapping of def names to expression text", phase="link")
    for what, value in (("seed", seed), ("arrivals", arrivals)):
        if value is None:
            continue
        if not is_u64(value):
            raise SqError(f"{what} must be {SEED_RANGE}, found {value!r}", phase="link")
    for what, value in (("horizon", horizon), ("warmup", warmup)):
        if value is not None and not is_number(value):
            raise SqError(f"{what} must be a number, found {value!r}", phase="link")


def let_values(path: str | os.PathLike | None = None, *, source: str | None = None,
               sets: dict | None = None, defs: dict | None = None) -> dict[str, float]:
    """Every `let` constant of a program and its value, after the `sets` overrides
    (what a study varies: `sq.capacity` starts its search from here)."""
    if (path is None) == (source is None):
        raise SqError("let_values takes exactly one of a path and a source", phase="link")
    _check_overrides(sets, defs, None, None, None, None)
    sets = _plain_sets(sets)
    file = os.fspath(path) if path is not None else None
    text = _read(file) if file is not None else source
    tree = ir.run_deep(_parse, text, file, defs or {}, dict(sets or {}))
    folding = linker.Linker(tree, linker.Settings(sets=dict(sets or {})))
    ir.run_deep(folding._fold_lets)   # the lets alone: no pools, stages or statements linked
    return dict(folding.lets)

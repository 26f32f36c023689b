"""sq: run serQ serving-specification programs (the pyserq 0.1.2 dialect).

    import sq
    program = sq.compile("examples/single-turn/ps.sq", sets={"lam": 0.8})
    report = sq.run(program, seed=3, horizon=10_000)
    report.observes["response"].mean, report.observes["response"].samples

`compile` parses and links (errors are `SqError`, with file:line:col);
`run` lowers the IR to flat arrays and runs the Cython event loop with the
GIL released, so runs in threads proceed in parallel.
"""
from __future__ import annotations

import os

from sq._support.version import __version__

__all__ = ["compile", "run", "load", "sweep", "t_interval", "capacity", "Program", "Report", "Sweep",
           "Capacity", "SqError", "read_trace", "capacity_over_time", "__version__"]

# The face's other names, each loaded from its module on first use: `import sq` loads nothing
# else, so that `python -m sq` can catch Ctrl-C before anything heavy loads (numpy comes with the
# first run or study). With the functions below and __version__ this is the whole namespace
# (tests/face/test_layout.py locks it); lower_program and run_lowered are a run's two halves.
_LAZY = {
    "SqError": "sq.errors",
    "run": "sq.engine.run", "lower_program": "sq.engine.run", "run_lowered": "sq.engine.run",
    "Program": "sq.ir",
    "Report": "sq.results.report",
    "t_interval": "sq.results.confidence",
    "sweep": "sq.study.sweep", "Sweep": "sq.study.sweep",
    "capacity": "sq.study.capacity", "Capacity": "sq.study.capacity",
    "capacity_over_time": "sq.study.over_time",
    "read_trace": "sq.traces",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = globals()[name] = getattr(importlib.import_module(_LAZY[name]), name)
        return value
    raise AttributeError(f"module 'sq' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)


def compile(path=None, *, source=None, sets=None, defs=None, seed=None, horizon=None,
            warmup=None, arrivals=None, trace=None):
    """Parse and link a program (from a file `path`, or from text `source`) into its IR.

    `sets` overrides `let` constants ({name: number or expression text}); `defs`
    replaces the bodies of expression `def`s; the remaining keywords replace the
    program's `run {}` settings.
    """
    from sq.frontend.compile import compile_program

    return compile_program(path, source=source, sets=sets, defs=defs, seed=seed, horizon=horizon,
                           warmup=warmup, arrivals=arrivals, trace=trace)


def load(path_or_json):
    """Read an IR (pyserq IR version 10 JSON) from a file or from JSON text.

    A path is a `str` or `os.PathLike` (`pathlib.Path`); a `str` whose first
    non-blank character is `{` or `[` is JSON text, as are `bytes` (UTF-8).
    """
    from sq._support.files import Unreadable, read_text
    from sq.errors import SqError
    from sq.ir import Program

    if isinstance(path_or_json, (bytes, bytearray)):
        try:
            text = bytes(path_or_json).decode("utf-8")
        except UnicodeDecodeError:
            raise SqError("load: the IR bytes are not valid UTF-8", phase="validate") from None
    elif isinstance(path_or_json, str) and path_or_json.lstrip()[:1] in ("{", "["):
        text = path_or_json
    elif isinstance(path_or_json, (str, os.PathLike)):
        path = os.fspath(path_or_json)
        try:
            text = read_text(path)
        except Unreadable as e:
            raise SqError(f"cannot read `{os.fsdecode(path)}`: {e.reason}", phase="validate") from None
    else:
        raise SqError(f"load takes a path or JSON text, found {type(path_or_json).__name__}", phase="validate")
    return Program.from_json(text)

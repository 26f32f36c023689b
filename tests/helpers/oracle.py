"""Helpers for tests that ask pyserq 0.1.2 (the reference) what a program means.

The corpus lives in tests/programs/{valid,invalid,spec}/*.sq. A program's first
line may carry a header in this form (any of the keys, in any order, values
are JSON):

    // sq-test: sets={"N": 3} defs={"svc": "7"} seed=2 horizon=100 error="is not a constant"

`sets`, `defs`, `seed`, `horizon`, `warmup`, `arrivals`, `trace` are the
keyword overrides of `compile`; `error` marks a program the reference rejects
and is a distinctive substring of its message; `norun="why"` marks a program
that compiles but must not be run through the reference (it crashes or hangs
there), so run-level comparisons skip it. Files under any `lib/` folder
are libraries that programs `use`, not programs.

pyserq is imported lazily: sq itself never touches it, and test modules that
only need the corpus listing or the IR normaliser work without it.
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

PROGRAMS = Path(__file__).parents[1] / "programs"
# why a test that compares with the reference live is skipped without it
REFERENCE_MISSING = "needs pyserq 0.1.2, the reference, live (pip install pyserq==0.1.2)"
CORPUS_KINDS = ("valid", "invalid", "spec")
HEADER_PREFIX = "// sq-test:"
OVERRIDE_KEYS = ("sets", "defs", "seed", "horizon", "warmup", "arrivals", "trace")


# Programs where sq and 0.1.2 are known to part ways today, each with the reason.
# The differential tests run them as non-strict xfails so the suite stays green while the gap is open,
# and show up as XPASS once it closes (then delete the line).
KNOWN_GAPS: dict[str, str] = {
}


@dataclass(frozen=True)
class Header:
    """What a program's `// sq-test:` line says: compile overrides and, for a rejected program, the key phrase."""

    overrides: dict = field(default_factory=dict)
    error: str | None = None
    norun: str | None = None
    sq_error: str | None = None     # 0.1.2 accepts it, sq refuses it on purpose (docs/differences.md)


@dataclass(frozen=True)
class Outcome:
    """What a compiler did with a program: its IR as a dict, or the text of its rejection."""

    ir: dict | None = None
    message: str | None = None

    @property
    def accepted(self) -> bool:
        return self.ir is not None


def same_json(source: str) -> dict:
    """Run one program in sq and in pyserq (imported here: it must be installed), assert the two
    reports' JSON texts equal, and return the report."""
    import pyserq  # noqa: PLC0415

    import sq  # noqa: PLC0415

    ours = sq.run(sq.compile(source=source)).json()
    assert ours == pyserq.run(pyserq.compile(source=source)).json()
    return json.loads(ours)


def require_module(name: str, reason: str):
    """Import a module of sq, skipping the calling test module only while the module does not exist yet.

    Unlike `pytest.importorskip`, an ImportError raised *inside* an existing
    module is not turned into a skip: a broken import must fail loudly.
    """
    import importlib
    import importlib.util

    import pytest

    try:
        missing = importlib.util.find_spec(name) is None
    except ModuleNotFoundError:  # a parent package is missing
        missing = True
    if missing:
        pytest.skip(reason, allow_module_level=True)
    return importlib.import_module(name)


def corpus_files(kind: str | None = None) -> list[Path]:
    """Every program of the corpus (or of one kind), sorted; libraries under `lib/` are left out."""
    kinds = CORPUS_KINDS if kind is None else (kind,)
    files = []
    for k in kinds:
        root = PROGRAMS / k
        files += [p for p in root.rglob("*.sq") if "lib" not in p.relative_to(root).parts[:-1]]
    return sorted(files)


def corpus_id(path: Path) -> str:
    return path.relative_to(PROGRAMS).as_posix()


def parse_header(text: str) -> Header:
    """Read the `// sq-test:` line at the top of a program (absent → no overrides, no error)."""
    first = text.split("\n", 1)[0].strip()
    if not first.startswith(HEADER_PREFIX):
        return Header()
    rest = first[len(HEADER_PREFIX):]
    decoder = json.JSONDecoder()
    values: dict = {}
    pos = 0
    key_re = re.compile(r"\s*([a-z_]+)=")
    while rest[pos:].strip():
        m = key_re.match(rest, pos)
        if not m:
            raise ValueError(f"bad sq-test header near {rest[pos:]!r}")
        value, pos = decoder.raw_decode(rest, m.end())
        values[m.group(1)] = value
    unknown = set(values) - set(OVERRIDE_KEYS) - {"error", "norun", "sq_error"}
    if unknown:
        raise ValueError(f"unknown sq-test header keys: {sorted(unknown)}")
    error = values.pop("error", None)
    norun = values.pop("norun", None)
    sq_error = values.pop("sq_error", None)
    return Header(overrides=values, error=error, norun=norun, sq_error=sq_error)


def read_header(path: Path) -> Header:
    return parse_header(path.read_text(encoding="utf-8"))


def compile_kwargs(header: Header) -> dict:
    """The header's overrides as `compile` keywords (the same names in pyserq and sq)."""
    return dict(header.overrides)


@lru_cache(maxsize=None)
def pyserq_outcome(path: Path) -> Outcome:
    """Compile a corpus file with pyserq 0.1.2 from its path (so `use` resolves), with the header's overrides.

    Cached per process: every test that needs the reference's view of a file
    shares one compilation.
    """
    return pyserq_compile(path=str(path), **compile_kwargs(read_header(path)))


def pyserq_compile(**kwargs) -> Outcome:
    """Ask pyserq to compile; a rejection of any kind (ValueError, a Rust panic, a bad keyword) is an Outcome."""
    import pyserq

    try:
        program = pyserq.compile(**kwargs)
    except BaseException as exc:  # pyo3's PanicException derives from BaseException
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return Outcome(message=str(exc))
    return Outcome(ir=json.loads(program.to_json()))


def headline(message: str) -> str:
    """The first line of an error message without its `L:C:` location and `link error:` prefix."""
    line = message.split("\n", 1)[0]
    line = re.sub(r"^(?:[^:\n]*\.sq:)?\d+:\d+: ", "", line)
    line = re.sub(r"^(?:error: )?(?:link error: )?", "", line)
    return line


# --- IR normalisation -------------------------------------------------------------

# Where a statement names a block by its index (IR v10): Hold's body, both arms of
# a Branch (the else arm may be null) and a Loop's body.
def _child_blocks(stmt) -> list[int]:
    if not isinstance(stmt, dict):
        return []
    (kind, arg), = stmt.items()
    if kind == "Hold":
        return [arg["body"]]
    if kind == "Branch":
        return [b for b in arg[1:3] if b is not None]
    if kind == "Loop":
        return [arg]
    return []


def _renumber_stmt(stmt, new_index: dict[int, int]):
    if not isinstance(stmt, dict):
        return stmt
    (kind, arg), = stmt.items()
    if kind == "Hold":
        return {kind: {**arg, "body": new_index[arg["body"]]}}
    if kind == "Branch":
        arms = [None if b is None else new_index[b] for b in arg[1:3]]
        return {kind: [arg[0], *arms, *arg[3:]]}
    if kind == "Loop":
        return {kind: new_index[arg]}
    return stmt


def normalise_ir(ir: dict) -> dict:
    """The IR with blocks renumbered in depth-first order from init, turn and session.

    Two compilers may number the blocks of one program differently (allocation
    order is not part of the meaning); after this, equal programs give equal
    dicts. Blocks no root reaches are dropped. Float/int spellings of numbers
    are already equal in Python (1 == 1.0), so nothing else needs folding.
    """
    blocks = ir.get("blocks", [])
    order: list[int] = []
    seen: set[int] = set()

    def visit(b: int) -> None:
        if b in seen:
            return
        seen.add(b)
        order.append(b)
        for stmt in blocks[b]:
            for child in _child_blocks(stmt):
                visit(child)

    roots = [ir.get(k) for k in ("init", "turn", "session")]
    for r in roots:
        if r is not None:
            visit(r)
    new_index = {old: new for new, old in enumerate(order)}
    out = dict(ir)
    out["blocks"] = [[_renumber_stmt(s, new_index) for s in blocks[b]] for b in order]
    for k in ("init", "turn", "session"):
        if ir.get(k) is not None:
            out[k] = new_index[ir[k]]
    return out


def first_difference(a, b, path: str = "$") -> str | None:
    """Where two JSON values first differ, as a readable path (None if equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                return f"{path}.{k}: only in {'left' if k in a else 'right'}"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if a == b or (isinstance(a, float) and isinstance(b, float) and a != a and b != b):
        return None
    return f"{path}: {a!r} vs {b!r}"


def report_differences(ours, theirs, path: str = "$") -> list[str]:
    """Differences between two report JSONs: keys and counts exact, floats within 1e-9 relative."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        if list(ours) != list(theirs):
            return [f"{path}: keys {list(ours)} vs {list(theirs)}"]
        return [d for k in ours for d in report_differences(ours[k], theirs[k], f"{path}.{k}")]
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return [f"{path}: {len(ours)} items vs {len(theirs)}"]
        return [d for i, (a, b) in enumerate(zip(ours, theirs)) for d in report_differences(a, b, f"{path}[{i}]")]
    if isinstance(ours, int) and isinstance(theirs, int) and not isinstance(ours, bool):
        return [] if ours == theirs else [f"{path}: count {ours} vs {theirs}"]
    if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)) and not isinstance(ours, bool):
        if math.isnan(ours) and math.isnan(theirs):
            return []
        return [] if math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=0.0) else [f"{path}: {ours!r} vs {theirs!r}"]
    return [] if ours == theirs else [f"{path}: {ours!r} vs {theirs!r}"]


def sq_ir(source: str, **overrides) -> dict:
    """sq's own IR of a program as a dict, in the form the engine runs (`horizon` 10 unless given):
    for unit tests of lowering and the engine, which need IR but not the reference."""
    import sq

    overrides.setdefault("horizon", 10)
    return sq.compile(source=source, **overrides).to_dict(exact=True)


def reference():
    """pyserq if it is installed, else None (a module that imports it at top level uses `needs_reference`)."""
    try:
        import pyserq
    except ImportError:
        return None
    return pyserq


def needs_reference(test):
    """Skip `test` (saying why) when pyserq is not installed; mark it `pyserq` (`-m "not pyserq"`)."""
    import pytest

    return pytest.mark.pyserq(pytest.mark.skipif(reference() is None, reason=REFERENCE_MISSING)(test))


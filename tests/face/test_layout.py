"""One home for each shared piece of sq, checked on the source: what a merge could quietly undo."""
from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

import sq

SQ = Path(sq.__file__).parent


def _sources(*patterns: str) -> list[Path]:
    return sorted(p for pattern in patterns for p in SQ.rglob(pattern))


def test_sq_errors_is_the_home_of_sq_error():
    # the front end's errors module folded into sq.errors (Span, excerpt): one home, no shim
    assert not (SQ / "frontend" / "errors.py").exists()
    stale = [f"{p.relative_to(SQ.parent)}:{n}" for p in _sources("*.py", "*.pyx", "*.pxi")
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"sq\.frontend\.errors|from sq\.frontend import .*\berrors\b", line)]
    assert not stale, f"import SqError, Span and excerpt from sq.errors: {stale}"
    assert sq.SqError.__module__ == "sq.errors"


def test_no_other_module_prints_numbers_its_own_way():
    # sq._support.number_format holds Rust's Display/Debug and the JSON form; a second copy drifts (it did: 4 of them)
    own_way = [f"{p.relative_to(SQ.parent)}:{n}" for p in _sources("*.py", "*.pyx", "*.pxi") if p.name != "number_format.py"
               for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
               if re.search(r"Decimal\(|def (format_number|display_number|fmt_num|format_debug_number)\b", line)]
    assert not own_way, own_way


def test_the_engines_lazy_imports_name_what_exists():
    """The engine imports Python helpers inside functions (run only on an error path):
    each `from sq.X import a, b as c` there must name a module and names that exist."""
    import importlib
    root = Path(sq.__file__).parent
    for path in sorted(root.rglob("*.pyx")) + sorted(root.rglob("*.pxi")):
        for module, names in re.findall(r"^\s*from (sq(?:\.\w+)*) import ([\w, ]+(?: as \w+)?)\s*$",
                                        path.read_text(), flags=re.M):
            mod = importlib.import_module(module)
            for name in names.split(","):
                name = name.split(" as ")[0].strip()
                assert hasattr(mod, name) or importlib.util.find_spec(f"{module}.{name}"), (path.name, module, name)


# ---- the floors (issue 24): benchmarks/import_graph.py reads the graph, these tests hold it --------------

def _graph():
    import sys
    sys.path.insert(0, str(SQ.parent / "benchmarks"))
    try:
        import import_graph
    finally:
        sys.path.pop(0)
    return import_graph


def test_every_module_is_on_a_floor_and_the_floors_are_the_packages():
    g = _graph()
    packages = {p.parent.name for p in SQ.glob("*/__init__.py")}
    assert {f.removeprefix("sq.") for f in g.FLOORS if f.count(".") == 1} - {"errors", "ir"} == packages
    top = {g.module_name(p) for p in SQ.glob("*.py*")} | {g.module_name(p) for p in SQ.glob("*.pxd")}
    # at the top of sq/: the face, `python -m sq`, the error type, the IR and the engine's one translation unit
    assert top == {"sq", "sq.__main__", "sq.errors", "sq.ir", "sq._engine"}
    assert all(g.floor_of(m) in g.FLOORS for m in g.modules())


def test_the_graph_reader_sees_every_kind_of_import():
    # a rule test that read nothing would pass: the reader must find the imports each rule is about
    g = _graph()
    edges = g.imports()
    pairs = {(a, b) for a, b, _ in edges}
    assert ("sq.study.plan", "sq.engine.run") in pairs             # function-level import (ast.walk)
    assert ("sq._engine", "sq.lower._bytecode") in pairs           # a Cython cimport
    assert ("sq._engine", "sq.engine._loop") in pairs              # an include
    assert ("sq.results.report", "sq.results.stats") in pairs      # `from package import module`
    assert g.upward([("sq.lower.lowering", "sq.engine._random", None)])
    assert g.borrowed_private([("sq.cli.study", "sq.results.report", "_table")])
    assert g.cycles([("sq.a", "sq.b", None), ("sq.b", "sq.a", None)]) == [["sq.a", "sq.b"]]


@pytest.mark.parametrize("rule", ["upward", "face_imports", "cycles", "borrowed_private"])
def test_the_floors_hold(rule):
    # no module imports a floor above it; nothing inside sq imports the face; no import cycle;
    # no _private name imported from another floor
    g = _graph()
    assert getattr(g, rule)(g.imports()) == []


def test_the_public_namespace():
    # what `import sq` offers, locked (as pandas' test_api does): a new public name is a decision
    assert sorted(sq.__all__) == sorted(["compile", "run", "load", "sweep", "t_interval", "capacity", "Program",
                                         "Report", "Sweep", "Capacity", "SqError", "__version__",
                                         # issue 25: the trace reader and capacity over time
                                         "read_trace", "capacity_over_time"])
    assert dir(sq) == sorted(sq.__all__)
    for name in sq.__all__:
        assert getattr(sq, name) is not None, name


# ---- tests/ mirrors the packages (issue 24) ------------------------------------------------------------

TESTS = Path(__file__).resolve().parents[1]
# folders of tests/ that are not named after a part of sq, each for a reason
NOT_A_PACKAGE = {
    "differential": "agreement with pyserq 0.1.2 (the `pyserq` marker)",
    "face": "the public API, the layout, the docs and the examples",
    "helpers": "modules the tests share (`from tests.helpers import oracle`)",
    "data": "recorded reference outputs and the spec's probes",
    "programs": "the differential corpus",
    "capacity": "programs of the capacity tests",
    "mutations": "the mutation check of the differential samples (a script)",
    "build_ext": "the build (pgo_build.py beside setup.py) and its checks of the generated C",
}


def test_tests_mirror_the_packages():
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))}
    # `ir` is a module at the top of sq/, a floor of its own
    named = {f for f in folders - NOT_A_PACKAGE.keys() if (SQ / f / "__init__.py").exists() or (SQ / f"{f}.py").exists()}
    assert folders - NOT_A_PACKAGE.keys() - named == set(), "name a test folder after the sq package it tests"
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == [], "a test file goes in its package's folder"
    for folder in named | {"differential", "face", "helpers"}:    # imported as tests.<folder>.<module>
        assert (TESTS / folder / "__init__.py").exists(), folder
    assert len(named) >= 10    # a check that found no folders would pass

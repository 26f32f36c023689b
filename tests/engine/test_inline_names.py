"""The engine's always-inline declarations name C functions Cython generates (sq/engine/_step.pxi).

The attribute sits on a verbatim C declaration of the generated name (`__pyx_f_2sq_7_engine_NAME`).
A renamed or moved Cython function leaves that declaration naming nothing, gcc says nothing, and
the hot path silently gets an out-of-line call again. This holds each declared name to a definition
in the translation unit Cython wrote (sq/_engine.c, present wherever the extension was built in
place: a checkout, an editable install, CI).
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE_C = ROOT / "sq" / "_engine.c"
DECLARED = re.compile(r"__attribute__\(\(always_inline\)\)[^(]*?\b(__pyx_f_\w+)\(")


def declared_names() -> list[str]:
    names = []
    for source in sorted((ROOT / "sq").rglob("*.p*")):
        if source.suffix in (".pyx", ".pxi", ".pxd"):
            names += DECLARED.findall(source.read_text(encoding="utf-8"))
    return names


def test_the_engine_declares_its_always_inline_functions():
    # steady_run's two plans; a failure here means the declaration itself went away
    names = declared_names()
    for plan in ("plan_unchanged", "plan_again"):
        assert any(name.endswith("_engine_" + plan) for name in names), plan


@pytest.mark.skipif(not ENGINE_C.is_file(), reason="sq/_engine.c is written by an in-place build")
def test_every_always_inline_name_is_defined():
    text = ENGINE_C.read_text(encoding="utf-8")
    for name in declared_names():
        # a definition: the name, its parameter list with names, and a body (not `;` /*proto*/)
        definition = re.search(rf"\b{name}\([^;{{]*\)\s*\{{", text)
        assert definition, f"{name} is declared always-inline but Cython defines no such function"

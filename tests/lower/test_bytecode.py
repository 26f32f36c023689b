"""The bytecode contract (sq/lower/_bytecode.pxd): lowering's code decodes exactly, the engine runs every opcode.

The corpus programs are lowered and disassembled: every instruction decodes with the operand layout
of its opcode, the last one ends exactly at the end of the code, and every address an operand names
(an expression entry, a jump target) is the start of an instruction.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import sq
from sq.lower import _bytecode
from sq.errors import SqError
from sq.lower.lowering import decode, disassemble, encode

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted((ROOT / "tests" / "programs" / "valid").glob("*.sq"))

# operands naming an expression's entry in the expression code (-1: none)
EXPR_OPERANDS = {"expr", "guard", "count", "work", "amount", "index"}


def _lowered(path):
    try:
        return sq.lower_program(sq.compile(path))
    except SqError:
        return None          # a program whose settings only a run's overrides make whole


@pytest.fixture(scope="module")
def corpus():
    lowered = {p.name: _lowered(p) for p in PROGRAMS}
    return {name: lw for name, lw in lowered.items() if lw is not None}


def _starts(code, kind):
    return {ins.pc for ins in decode(code, kind)}


def test_corpus_is_there(corpus):
    assert len(corpus) >= 50


def test_every_instruction_decodes_to_the_end(corpus):
    for name, lw in corpus.items():
        for kind in ("code", "stmts"):
            code = getattr(lw, kind)
            instructions = list(decode(code, kind))
            assert sum(i.length for i in instructions) == len(code), name
            if kind == "code" and len(code):
                assert instructions[-1].name == "X_RET", name   # every expression ends with its X_RET


def test_operands_name_instruction_starts(corpus):
    """Jump targets land on statements, expression operands on expression entries."""
    for name, lw in corpus.items():
        exprs, stmts = _starts(lw.code, "code"), _starts(lw.stmts, "stmts")
        entries = set()
        for ins in decode(lw.stmts, "stmts"):
            refs = [v for v in ins.operands.values() if isinstance(v, dict)]
            refs += [r for v in ins.operands.values() if isinstance(v, list) for r in v if isinstance(r, dict)]
            entries |= {ins.operands[k] for k in EXPR_OPERANDS & ins.operands.keys()}
            entries |= {r["index"] for r in refs}
            entries |= set(ins.operands.get("keys", []))
            if ins.name in ("S_JUMP", "S_BRANCH"):
                target = ins.operands["target" if ins.name == "S_JUMP" else "else"]
                assert target in stmts or target == len(lw.stmts), (name, ins)
        entries |= set(lw.gauge_exprs.tolist()) | set(lw.stage_phi.tolist()) | set(lw.serve_keys.tolist())
        entries |= {int(v) for row in lw.step_exprs for v in row} | set(lw.pool_keys.tolist())
        entries |= set(lw.pool_spill["work"].tolist()) | set(lw.pool_spill["when"].tolist())
        entries.discard(-1)
        assert entries <= exprs, (name, sorted(entries - exprs))
        for ins in decode(lw.code, "code"):
            if ins.name in ("X_AND", "X_OR", "X_JZ", "X_JMP"):
                assert ins.operands["arg"] in exprs, (name, ins)


def test_the_corpus_uses_every_opcode(corpus):
    """So the checks above cover each instruction's layout (a new opcode needs a corpus program)."""
    seen = {"code": set(), "stmts": set()}
    for lw in corpus.values():
        for kind in seen:
            seen[kind] |= {ins.name for ins in decode(getattr(lw, kind), kind)}
    assert seen["code"] == set(_bytecode.ExprOp.__members__)
    assert seen["stmts"] == set(_bytecode.StmtOp.__members__)


def test_lowering_writes_what_encode_writes(corpus):
    """Each instruction in the corpus is what `encode` writes from the operands `decode` reads back:
    one layout, read the same both ways (a tail's count is written from the tail)."""
    for name, lw in corpus.items():
        for kind in ("code", "stmts"):
            code = getattr(lw, kind)
            for ins in decode(code, kind):
                given = {k: v for k, v in ins.operands.items() if k not in ("nkeys", "nalso")}
                words = encode(kind, getattr(_bytecode, ins.name), **given)
                assert words == code[ins.pc:ins.pc + ins.length].tolist(), (name, str(ins))


def _ref(base):
    return {"base": base, "count": base + 1, "index": base + 2}


def test_encode_places_operands_at_the_named_offsets():
    """The offsets of sq/lower/_bytecode.pxd, spelled out: a Ref's three words at Ref's offsets from its operand's."""
    b = _bytecode
    run = encode("stmts", b.S_RUN, stage=_ref(10), work=20, mode=b.M_DECODE, growing=_ref(30),
                 growing_site=40, also=[_ref(50), _ref(60)])
    assert run[0] == b.S_RUN and len(run) == b.SR_ALSO + 2 * b.REF_LEN
    assert [run[b.SR_STAGE + b.REF_BASE], run[b.SR_STAGE + b.REF_COUNT], run[b.SR_STAGE + b.REF_INDEX]] == [10, 11, 12]
    assert [run[b.SR_WORK], run[b.SR_MODE], run[b.SR_GROWING + b.REF_INDEX], run[b.SR_GROWING_SITE]] == \
        [20, b.M_DECODE, 32, 40]
    assert run[b.SR_NALSO] == 2 and run[b.SR_ALSO + b.REF_LEN + b.REF_BASE] == 60
    choose = encode("stmts", b.S_CHOOSE, var=3, count=7, keys=[8, 9])
    assert [choose[b.SC_VAR], choose[b.SC_COUNT], choose[b.SC_NKEYS], choose[b.SC_KEYS:]] == [3, 7, 2, [8, 9]]
    load = encode("stmts", b.S_LOAD, ref=_ref(1), amount=5, site=6)
    assert len(load) == b.SPOOL_AMOUNT_LEN and [load[b.SPOOL_AMOUNT], load[b.SPOOL_SITE]] == [5, 6]
    assert len(encode("stmts", b.S_DROP, ref=_ref(1))) == b.SPOOL_LEN
    stage = encode("code", b.X_STAGE, fn=b.SF_BUSY, base=4, count=2, has_index=1)
    assert [stage[b.XREF_FN], stage[b.XREF_BASE], stage[b.XREF_COUNT], stage[b.XREF_HAS_INDEX]] == [b.SF_BUSY, 4, 2, 1]
    assert encode("code", b.X_RET) == [b.X_RET]
    for wrong in ({"target": 1}, {"target": 1, "expr": 2, "site": 3}):    # one missing, one too many
        with pytest.raises(ValueError, match="S_SET` takes"):
            encode("stmts", b.S_SET, **wrong)


def _branches(source: str, function: str, prefix: str) -> set[str]:
    """The opcodes a VM function of the engine compares `op` (or the code at pc) with."""
    body = re.search(rf"^cdef \w+ {function}\(.*?(?=^cdef |^def |\Z)", source, re.S | re.M).group(0)
    return set(re.findall(rf"(?:op|code\[pc\]|c\[pc\]) [=!]= ({prefix}_[A-Z0-9_]+)", body))


def test_the_engine_dispatches_every_opcode():
    # the engine is one translation unit over several files (sq/_engine.pyx includes the .pxi)
    source = "\n".join(p.read_text() for p in sorted((ROOT / "sq" / "engine").glob("_*.pxi")))
    expressions = _branches(source, "evaluate_vm", "X")
    assert expressions | {"X_RET"} == set(_bytecode.ExprOp.__members__)   # X_RET: the final `else`
    statements = _branches(source, "exec_session", "S") | _branches(source, "exec_block", "S")
    assert statements == set(_bytecode.StmtOp.__members__)


def test_python_sees_the_engine_values():
    """Each enum member is also a module-level int, which lower.py imports."""
    for enum in _bytecode.ENUMS:
        for name, member in enum.__members__.items():
            assert getattr(_bytecode, name) == int(member)
    assert _bytecode.X_RET == max(_bytecode.ExprOp)
    # lowering names every context id the engine's moments hold, each once
    from sq.lower.lowering import CTX
    assert sorted(CTX.values()) == list(range(_bytecode.N_CONTEXTS))


def test_table_dtypes_are_the_engine_structs():
    """Derived from the C structs: int32 fields in the order the engine reads them, nothing else."""
    for dtype, names in ((_bytecode.STEP_EXPRS_DTYPE, ("budget", "chunk", "cost")),
                         (_bytecode.STEP_SERVE_DTYPE, ("exclusive", "key_start", "key_count")),
                         (_bytecode.SPILL_DTYPE, ("to", "via", "work", "when"))):
        assert dtype.names == names and dtype.itemsize == 4 * len(names)
        assert all(dtype.fields[n][0] == np.int32 for n in names)
    # a trace's turns: the engine reads sq.traces.serq's (rows, 4) float64 table as these rows
    from sq.traces.serq import FIELDS
    assert _bytecode.TRACE_TURN_DTYPE.names == FIELDS == ("new", "out", "think", "forced")
    assert _bytecode.TRACE_TURN_DTYPE.itemsize == 8 * len(FIELDS)


def test_disassembly_names_operands(corpus):
    text = disassemble(corpus["branch_forms.sq"])
    assert text.startswith("statements:\n")
    # operands by name, and what they mean in the program: the branch's source, a constant's value
    assert re.search(r"^\s+0 S_BRANCH\s+guard=\d+ else=\d+ site=0  # `branch \(serial < 10\)`$", text, re.M)
    assert "\nexpressions:\n" in text and re.search(r"X_NUM\s+arg=\d+  # 0.25$", text, re.M)
    assert re.search(r"X_SAMPLE\s+dist=\d+ nargs=1  # Bernoulli$", text, re.M)
    bare = disassemble(corpus["branch_forms.sq"].stmts, "stmts")   # one array: no program to name things by
    first = bare.splitlines()[0].split()
    assert "#" not in bare and first[:2] == ["0", "S_BRANCH"]
    assert [w.split("=")[0] for w in first[2:]] == ["guard", "else", "site"]
    runs = [line for lw in corpus.values() for line in disassemble(lw.stmts, "stmts").splitlines()
            if "S_RUN" in line]
    assert runs and all("stage=(base=" in line and "also=[" in line for line in runs)


def test_bad_code_is_an_error_not_a_crash():
    with pytest.raises(SqError, match="unknown opcode 99"):
        list(decode(np.array([99], dtype=np.int32), "stmts"))
    with pytest.raises(SqError, match="S_BRANCH` runs past the end"):
        list(decode(np.array([_bytecode.S_BRANCH, 0], dtype=np.int32), "stmts"))
    with pytest.raises(SqError, match="S_CHOOSE` runs past the end"):
        list(decode(np.array([_bytecode.S_CHOOSE, 0, 0], dtype=np.int32), "stmts"))
    with pytest.raises(ValueError):
        disassemble(np.array([], dtype=np.int32))

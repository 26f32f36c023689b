"""The differential corpus: every program under tests/programs/ goes to pyserq 0.1.2 and to sq.

For each file: both accept and give the same IR (after canonical block
numbering), or both reject and sq's message carries the key phrase of the
file's `// sq-test: error="…"` header (which the reference's message carries
too: `test_reference_matches_header` keeps the corpus honest). Valid programs
also go through `python -m sq ir` and back through `Program.from_json`.
"""
from __future__ import annotations

import functools
import json
import re
import subprocess
import sys

import pytest

from tests.helpers import children
from tests.helpers import oracle

pyserq = pytest.importorskip("pyserq", reason="pyserq 0.1.2 (the reference) is needed for differential tests")
compile_mod = oracle.require_module("sq.frontend.compile", "sq's front end (compile_program) is not written yet")
from sq import errors  # noqa: E402

pytestmark = pytest.mark.usefixtures("at_repo_root")

ALL = oracle.corpus_files()
VALID = [p for p in ALL if oracle.read_header(p).error is None]
IDS = [oracle.corpus_id(p) for p in ALL]

KNOWN_GAPS = oracle.KNOWN_GAPS


def _gap(path):
    reason = KNOWN_GAPS.get(oracle.corpus_id(path))
    return [pytest.mark.xfail(reason=reason, strict=False)] if reason else []


def _params(paths):
    return [pytest.param(p, id=oracle.corpus_id(p), marks=_gap(p)) for p in paths]


@functools.lru_cache(maxsize=None)
def sq_outcome(path) -> oracle.Outcome:
    """Compile a corpus file with sq, the way `pyserq_outcome` does with the reference (once per run)."""
    header = oracle.read_header(path)
    try:
        program = compile_mod.compile_program(path=str(path), **oracle.compile_kwargs(header))
    except errors.SqError as exc:
        return oracle.Outcome(message=f"{exc.message}\n{exc}")
    return oracle.Outcome(ir=program.to_dict())


# ------------------------------------------------------------------ corpus health

def test_corpus_is_large_enough():
    kinds = {k: len(oracle.corpus_files(k)) for k in oracle.CORPUS_KINDS}
    assert kinds["valid"] >= 70, kinds
    assert kinds["invalid"] >= 45, kinds
    assert kinds["spec"] >= 30, kinds


def test_valid_and_invalid_folders_match_their_headers():
    for path in oracle.corpus_files("valid"):
        assert oracle.read_header(path).error is None, oracle.corpus_id(path)
    for path in oracle.corpus_files("invalid"):
        assert oracle.read_header(path).error, f"{oracle.corpus_id(path)} has no error= key phrase"


# Every word, function, distribution, context variable and operator of chapters 01,
# 03 and 07 (`fits` only survives as a retired clause, so only invalid/ has it).
LANGUAGE = {
    "keywords": """admission admit arrivals arrive at batch bernoulli block bottleneck branch budget by cache cap
        choose chunk closed cost decode def delay drop else end evict exclusive fifo first from gauge grow growing
        hidden hold horizon in init latency lease let lifo link load loop lru mark maxmin memory nic none observe on
        ordered poisson pool preempt prefill ps pull queue release renewal request reserve reuse run seed serve server
        session set share spill stage step sum to tool trace transfer turn use via warmup when with workload""",
    "functions": """min max abs floor ceil sqrt exp ln pow queue busy work est_lambda est_rho est_wait price used free
        holders queued cachedin budget_left blocksize""",
    "context": """now waited size age last waiting present tokens decoders prefilled residents kv_decode kv_prefill
        attention decoding admission remaining inf""",
    "operators": "+ - * / ^ < <= > >= == != && || ! ? : ~",
}


def test_valid_corpus_uses_every_word_of_the_language():
    text = "\n".join(p.read_text(encoding="utf-8") for p in oracle.corpus_files("valid"))
    tokens = set(re.findall(r"[^\W\d]\w*|&&|\|\||<=|>=|==|!=|\S", text))
    missing = {kind: [w for w in words.split() if w not in tokens] for kind, words in LANGUAGE.items()}
    missing["distributions"] = [d for d in "exp det uniform erlang h2 bernoulli".split() if f"~{d}(" not in text]
    assert not any(missing.values()), missing


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_reference_matches_header(path):
    """pyserq 0.1.2 accepts exactly the programs without `error=`, and its message holds the key phrase."""
    header = oracle.read_header(path)
    ref = oracle.pyserq_outcome(path)
    if header.error is None:
        assert ref.accepted, f"the reference rejects it: {ref.message}"
    else:
        assert not ref.accepted, "the reference accepts it"
        assert header.error in ref.message


# ------------------------------------------------------------------ sq against the reference

@pytest.mark.parametrize("path", _params(ALL))
def test_sq_agrees_with_reference(path):
    header = oracle.read_header(path)
    ref = oracle.pyserq_outcome(path)
    mine = sq_outcome(path)
    if ref.accepted and header.sq_error:
        assert not mine.accepted and header.sq_error in mine.message, \
            f"sq should refuse it on purpose ({header.sq_error!r}):\n{mine.message}"
    elif ref.accepted:
        assert mine.accepted, f"sq rejects a program 0.1.2 accepts:\n{mine.message}"
        diff = oracle.first_difference(oracle.normalise_ir(ref.ir), oracle.normalise_ir(mine.ir))
        assert diff is None, f"IR differs (reference vs sq) at {diff}"
    else:
        assert not mine.accepted, f"sq accepts a program 0.1.2 rejects with: {oracle.headline(ref.message)}"
        phrase = header.error or oracle.headline(ref.message)
        assert phrase in mine.message, f"sq's message lacks {phrase!r}:\n{mine.message}"


def test_use_in_program_text_is_refused():
    """`use` needs a file next to the program; text given as a string has none (01 §5)."""
    source = 'use "lib/util.sq";\nrun { horizon 10; }\n'
    phrase = "reads a file next to the program, and this program was given as text"
    ref = oracle.pyserq_compile(source=source)
    assert not ref.accepted and phrase in ref.message
    with pytest.raises(errors.SqError) as info:
        compile_mod.compile_program(source=source)
    assert phrase in str(info.value)


@pytest.mark.parametrize("kwargs", [{}, {"path": "x.sq", "source": "run { horizon 1; }"}])
def test_compile_takes_exactly_one_of_path_and_source(kwargs):
    phrase = "compile takes exactly one of a path and a source"
    assert phrase in oracle.pyserq_compile(**kwargs).message
    with pytest.raises(errors.SqError) as info:
        compile_mod.compile_program(**kwargs)
    assert phrase in str(info.value)


def test_block_numbering_needs_no_normalising():
    """Informative: sq numbers blocks as 0.1.2 does, so the raw IR dicts are equal too."""
    differ = []
    for path in VALID:
        ref, mine = oracle.pyserq_outcome(path), sq_outcome(path)
        if ref.accepted and mine.accepted and oracle.normalise_ir(ref.ir) == oracle.normalise_ir(mine.ir):
            if ref.ir["blocks"] != mine.ir["blocks"]:
                differ.append(oracle.corpus_id(path))
    assert not differ, f"block numbering differs from 0.1.2's in {differ}"


# ------------------------------------------------------------------ `python -m sq ir` round trip

def _cli_args(path) -> list[str]:
    """`python -m sq ir` arguments equal to the header's compile keywords."""
    over = oracle.read_header(path).overrides
    args = ["ir", str(path)]
    for name, value in over.get("sets", {}).items():
        args += ["--set", f"{name}={value}"]
    for name, value in over.get("defs", {}).items():
        args += ["--def", f"{name}={value}"]
    for key in ("seed", "horizon", "warmup", "arrivals", "trace"):
        if key in over:
            args += [f"--{key}", str(over[key])]
    return args


def _ir_cli_in_process(path, capsys) -> str:
    cli = oracle.require_module("sq.cli.main", "the CLI is not written yet")
    code = cli.main(_cli_args(path))
    out = capsys.readouterr().out
    assert code in (0, None), f"`sq ir` exited {code}"
    return out


def _assert_round_trip(text: str, path) -> None:
    ir_mod = oracle.require_module("sq.ir", "sq.ir is not written yet")
    printed = json.loads(text)
    again = ir_mod.Program.from_json(text)
    assert again.to_dict(exact=True) == printed, "from_json(ir) is not the printed IR"
    assert json.loads(again.to_json()) == printed
    expected = sq_outcome(path)
    assert expected.accepted and again.to_dict() == expected.ir, "`sq ir` prints another IR than compile_program"
    # The reference reads sq's IR too: the schema is pyserq's, except that sq writes an
    # infinite block "inf" where 0.1.2 writes null (docs/differences.md).
    if printed == expected.ir:
        pyserq.Program.from_json(text)


@pytest.mark.parametrize("path", _params(VALID))
def test_cli_ir_round_trips(path, capsys):
    if not sq_outcome(path).accepted:
        pytest.skip("sq does not compile this program yet (test_sq_agrees_with_reference says why)")
    try:
        pyserq.Program.from_json(json.dumps(oracle.pyserq_outcome(path).ir))
    except ValueError as exc:
        # e.g. `poisson(inf)`: 0.1.2 prints the rate as null and then refuses it
        pytest.skip(f"0.1.2 cannot read back its own IR of this program: {exc}")
    _assert_round_trip(_ir_cli_in_process(path, capsys), path)


@pytest.mark.parametrize("name", ["valid/real_vllm.sq", "valid/items_set_override.sq", "spec/ch10_02.sq"])
def test_python_m_sq_ir_subprocess(name):
    """The same round trip through a real `python -m sq ir` process, for a few programs."""
    oracle.require_module("sq.cli.main", "the CLI is not written yet")
    path = oracle.PROGRAMS / name
    done = subprocess.run([children.PYTHON, "-m", "sq", *_cli_args(path)], capture_output=True, text=True,
                          timeout=120, cwd=oracle.PROGRAMS.parent.parent, env=children.env())
    assert done.returncode == 0, done.stderr
    _assert_round_trip(done.stdout, path)


@pytest.mark.parametrize("name", ["invalid/link_unknown_name.sq", "invalid/parse_unknown_statement.sq"])
def test_python_m_sq_ir_rejects_with_the_message(name):
    """A rejected program: a non-zero exit and the key phrase on stderr, no traceback."""
    oracle.require_module("sq.cli.main", "the CLI is not written yet")
    path = oracle.PROGRAMS / name
    done = subprocess.run([children.PYTHON, "-m", "sq", *_cli_args(path)], capture_output=True, text=True,
                          timeout=120, cwd=oracle.PROGRAMS.parent.parent, env=children.env())
    assert done.returncode != 0
    assert oracle.read_header(path).error in done.stderr
    assert "Traceback" not in done.stderr


# ------------------------------------------------------------------ end to end (slow)

# Each side runs in its own process: a program that hangs or crashes one
# implementation must not take the test session with it.
_RUN_REFERENCE = """
import sys, pyserq, json
sys.path.insert(0, sys.argv[2]); from tests.helpers import oracle
from pathlib import Path
path = Path(sys.argv[1]); over = oracle.read_header(path).overrides
print(pyserq.run(pyserq.compile(path=str(path), **over)).json())
"""
_RUN_SQ = """
import sys, sq
sys.path.insert(0, sys.argv[2]); from tests.helpers import oracle
from pathlib import Path
path = Path(sys.argv[1]); over = oracle.read_header(path).overrides
print(sq.run(sq.compile(str(path), **over)).to_json())
"""
RUNNABLE = [p for p in VALID if p.parent.name == "valid" or p.name.startswith("ch")]


def _report(script: str, path) -> dict:
    done = subprocess.run([children.PYTHON, "-c", script, str(path), str(oracle.PROGRAMS.parent.parent)],
                          capture_output=True, text=True, timeout=120, cwd=oracle.PROGRAMS.parent.parent,
                          env=children.env())
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def _close(a, b, where="$"):
    """The first place two reports differ beyond 1e-9 relative, or None."""
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300):
            return None
        return None if a == b else f"{where}: {a!r} vs {b!r}"
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return f"{where}: keys {list(a)} vs {list(b)}"
        return next((d for k in a if (d := _close(a[k], b[k], f"{where}.{k}"))), None)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: length {len(a)} vs {len(b)}"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := _close(x, y, f"{where}[{i}]"))), None)
    return None if a == b else f"{where}: {a!r} vs {b!r}"


@pytest.mark.slow
@pytest.mark.parametrize("path", _params(RUNNABLE))
def test_corpus_runs_like_the_reference(path):
    """The valid corpus end to end: sq's report equals 0.1.2's (floats within 1e-9 relative)."""
    header = oracle.read_header(path)
    if header.norun:
        pytest.skip(f"not run through the reference: {header.norun}")
    if not sq_outcome(path).accepted:
        pytest.skip("sq does not compile this program yet (test_sq_agrees_with_reference says why)")
    expected = _report(_RUN_REFERENCE, path)
    got = _report(_RUN_SQ, path)
    diff = _close(expected, got)
    assert diff is None, f"report differs (reference vs sq) at {diff}"

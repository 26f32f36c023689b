"""What the front end's speed-ups must not change.

The lexer's identifier classes are split at U+FFFF for speed (lexer._one_of),
tokens find their line by line ends seen rather than by counting, and compiling
pauses the cycle collector. Each is checked here against the plain definition.
"""
from __future__ import annotations

import gc
import re
from pathlib import Path

import pytest

import sq
from sq.frontend import lexer, unicode_tables
from sq.errors import SqError

from tests.helpers import children

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _in_table(table, cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in table)


def _edges(table):
    """Every code point at or next to a range's end: where a wrong class would show."""
    out = {0, 0xFFFF, 0x10000, 0x10FFFF}
    for lo, hi in table:
        out.update(cp for cp in (lo - 1, lo, hi, hi + 1) if 0 <= cp <= 0x10FFFF)
    return sorted(out)


@pytest.mark.parametrize("name", ["IDENT_START", "IDENT_PART"])
def test_split_class_is_the_table(name):
    table = getattr(unicode_tables, name)
    one = re.compile(lexer._one_of(table))
    for cp in _edges(table):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        assert (one.fullmatch(chr(cp)) is not None) == _in_table(table, cp), hex(cp)


def test_astral_letters_lex_as_identifiers():
    # U+10000 (Linear B) is alphabetic, U+1F600 (an emoji) is not
    toks = lexer.tokenize("x\U00010000y")
    assert [(t.kind, t.text) for t in toks] == [("Ident", "x\U00010000y"), ("Eof", "")]
    with pytest.raises(SqError, match="unexpected character"):
        lexer.tokenize("x \U0001F600")


def _naive_place(text: str, pos: int) -> tuple[int, int]:
    # 0.1.2 counts a line end inside a string as a column, not a new line
    # (this text has no `"` inside its comments, so a plain regex finds its strings)
    text = re.sub(r'"[^"]*"', lambda m: m.group().replace("\n", " "), text)
    return text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1


def test_token_places_follow_line_ends():
    text = 'let a = 1;\n/* two\nlines */ let b = "x\ny";\n\n  // note\n\tlet c = .5e3 ;\n'
    offsets = [m.start() for m in lexer._tokens(text) if m.lastgroup != "comment"]
    toks = lexer.tokenize(text)
    assert len(toks) == len(offsets) + 1
    for tok, pos in zip(toks, offsets):
        assert (tok.line, tok.col) == _naive_place(text, pos), tok
    assert (toks[-1].line, toks[-1].col) == _naive_place(text, len(text))


def test_compiling_loads_no_numpy():
    # numpy is the run's (the engine's arrays, the report's): a compile or `sq check` goes without
    import subprocess
    import sys

    code = ("import sys, sq; sq.compile(source='stage s : fifo(1); workload { arrive poisson(1); } "
            "session { run s (~exp(2)); observe r = now; }', horizon=10); print(sorted(m for m in ('numpy', 'pandas') if m in sys.modules))")
    out = subprocess.run([children.PYTHON, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2], env=children.env())
    assert out.stdout.strip() == "[]"


def test_the_ascii_token_regex_reads_ascii_text_as_the_whole_one_does():
    # every ASCII character, alone and around identifiers, and every example program
    texts = [chr(c) for c in range(128)] + [f"a{chr(c)}b_9 {chr(c)}x" for c in range(128)]
    texts += [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.rglob("*.sq"))]
    texts = [t for t in texts if t.isascii()]
    assert len(texts) > 256
    for text in texts:
        spans = [[(m.lastgroup, m.span()) for m in lexer._token_regex(ascii_only).finditer(text)]
                 for ascii_only in (True, False)]
        assert spans[0] == spans[1], text


_OK = "let a = 1;\nrun { horizon 10; }\nworkload { arrive poisson(1); }\nsession { set x = a; }\n"


def test_compile_gives_the_collector_back():
    assert gc.isenabled()
    sq.compile(source=_OK)
    assert gc.isenabled()
    with pytest.raises(SqError):
        sq.compile(source="session { set x = ; }")
    assert gc.isenabled()
    gc.disable()
    try:     # a caller that turned it off keeps it off
        sq.compile(source=_OK)
        assert not gc.isenabled()
    finally:
        gc.enable()

"""sq/frontend/grammar.lark is a checked specification of the dialect's syntax.

The grammar is not used at run time (sq parses with parser.py); this module
builds it with lark's LALR(1) generator, fails on any conflict not listed in
EXPECTED_CONFLICTS, and checks that it draws the same line as sq's parser:
for every program of the corpus, every probe and a few thousand token-level
mutations of them, the grammar accepts the token stream exactly when sq's
parser reports no *syntax* error.

What lark reads.  Not text: the tokens of sq's own lexer after `use` and
def-use expansion (parser.py expands as it goes, so the stream is the
parser's token list once it stops). `SqTokens` is a custom lark lexer that
yields them, giving an identifier a word's terminal (`hold` -> HOLD) only
where the parser can shift that terminal (the reductions are run on a copy of
the state stack), and NAME otherwise: words are contextual (spec 10 §10.1).

Syntax errors and the rest.  Everything parser.py raises has phase "parse",
but only some of it is grammar. SYNTAX lists the message classes that are:
a token the rule did not expect (`expected …`, `unexpected … at top level`,
`unknown statement`, `unknown pool option`, …), an unclosed or unmatched
def body. Every other parse-time error is a *side rule* that the descent
checks while it reads but that the grammar leaves to later: names
(a def named with a word, a queue named `tool`, retired words), which
statements a block takes (`turn` in a server, `mark` outside an entry,
`run (w)` outside an entry), order and counts (pools before `serve`,
`serve` twice, a duplicate workload), array sizes, a serving form's stage
among those declared above, a pull relation's queues, def arity and
argument rules, an empty `def f() = ;` (a --def may give its body), and
the nesting and expansion limits. For those the check is one-sided: the
tokens the parser had read when it stopped must be a prefix the grammar can
continue (and the whole stream must be a program when the error comes from
a check after the last item). A lexical error leaves no token stream and is
out of the grammar's reach; such programs are only counted.
"""
from __future__ import annotations

import logging
import random
import re
import sys
import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import oracle

lark = pytest.importorskip("lark")
from lark.lexer import Lexer, Token as LarkToken               # noqa: E402
from lark.parsers.lalr_analysis import Shift                   # noqa: E402

from sq.frontend import parser as sq_parser                    # noqa: E402
from sq.errors import SqError                                  # noqa: E402
from tests.helpers.spec_data import PROBES_FILE                               # noqa: E402
from tests.helpers.source_tokens import TOKEN as _SEAM, VOCAB as _VOCAB       # noqa: E402

GRAMMAR = Path(sq_parser.__file__).with_name("grammar.lark")

# (terminal, rule) pairs of the shift/reduce conflicts lark reports; none today
# (see the grammar's header for why §10.8's aggregate conflict is gone).
EXPECTED_CONFLICTS: set[str] = set()

SYNTAX = re.compile("|".join([
    r"^expected ",                                   # the one token a rule wanted
    r"^unexpected .* (at top level|in workload)$",
    r"^unknown statement ",
    r"^unknown (pool option|step option|stage kind|role|run option) ",
    r"^`serve` takes ", r"^`share` takes ",
    r"names how concurrent reads divide the NICs",   # a pull relation without `share`
    r"^`def \S+` is not closed", r"^unmatched ",
    r"is now `serve (decode first|exclusive prefill);`",
    r"^`transfer` without `from", r"a transfer does not grow a pool",
    r"as a statement: a queue's entry is",
]))


def is_syntax(err: SqError) -> bool:
    return bool(SYNTAX.search(err.message))


# ------------------------------------------------------------------ the grammar

class SqTokens(Lexer):
    """lark lexer over a list of sq tokens (lark's "text" is that list)."""

    __future_interface__ = 2

    def __init__(self, conf):
        self.symbols, self.words = {}, {}
        for term in conf.terminals:
            if term.pattern.type == "str":
                value = term.pattern.value
                (self.words if value[0].isalpha() else self.symbols)[value] = term.name

    def lex(self, lexer_state, parser_state):
        for index, tok in enumerate(lexer_state.text):
            yield LarkToken(self.terminal(tok, parser_state), tok.text, start_pos=index,
                            line=tok.line, column=tok.col)

    def terminal(self, tok, parser_state) -> str:
        kind = tok.kind
        if kind == "Num":
            return "NUMBER"
        if kind == "Str":
            return "STRING"
        if kind != "Ident":
            return self.symbols[tok.text]
        word = self.words.get(tok.text)
        if word is not None and can_shift(parser_state, word):
            return word
        return "NAME"


def can_shift(parser_state, term: str) -> bool:
    """Whether `term` would be shifted next, after the reductions it triggers."""
    states = parser_state.parse_conf.states
    stack = list(parser_state.state_stack)
    while True:
        action = states[stack[-1]].get(term)
        if action is None:
            return False
        what, arg = action
        if what is Shift:
            return True
        if arg.expansion:
            del stack[-len(arg.expansion):]
        stack.append(states[stack[-1]][arg.origin.name][1])


class _Conflicts(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.found: list[str] = []

    def emit(self, record):
        text = record.getMessage()
        if "conflict" in text.lower() or text.startswith(" * "):
            self.found.append(text)


def build_grammar():
    """(the lark parser, the conflicts lark reported while building it)."""
    handler = _Conflicts()
    old_level = lark.logger.level
    lark.logger.addHandler(handler)
    lark.logger.setLevel(logging.DEBUG)
    try:
        built = lark.Lark(GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer=SqTokens,
                          debug=True, cache=False)
    finally:
        lark.logger.removeHandler(handler)
        lark.logger.setLevel(old_level)
    # pair each "Shift/Reduce conflict for terminal X" with the " * rule" line after it
    found, lines = set(), handler.found
    for k, text in enumerate(lines):
        if "conflict" in text.lower():
            rule = lines[k + 1].strip(" *") if k + 1 < len(lines) and lines[k + 1].startswith(" * ") else ""
            found.add(f"{text} | {rule}")
    return built, found


_BUILT = None


def grammar():
    global _BUILT
    if _BUILT is None:
        _BUILT = build_grammar()
    return _BUILT[0]


# ------------------------------------------------------------------ sq's side

@dataclass
class Stream:
    tokens: list            # sq tokens after expansion, without the final Eof
    read: int               # how many the parser had consumed when it stopped
    error: SqError | None
    after_items: bool = False   # the error came from a check after the last item


def _raised_after_items(err: BaseException) -> bool:
    """Whether parser.py raised `err` once every item was read (the pairing and
    def checks at the end of `program`), not while reading one."""
    frames, tb = [], err.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return "program" in frames and "item" not in frames


def sq_stream(text: str, file: str | None = None, defs: dict | None = None) -> Stream | None:
    """Run sq's parser; its expanded token stream, or None for a lexical error."""
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, 12 * sq_parser.MAX_NESTING + 2000))
    try:
        try:
            parser = sq_parser._Parser(text, file, defs or {})
        except SqError:
            return None
        error, after_items = None, False
        try:
            parser.program()
        except SqError as err:
            error, after_items = err, _raised_after_items(err)
        except RecursionError:
            error = SqError("nesting", phase="parse")
        toks = parser.toks
        return Stream(toks[:-1] if toks and toks[-1].kind == "Eof" else list(toks), parser.i, error,
                      after_items)
    finally:
        sys.setrecursionlimit(old_limit)


def grammar_accepts(tokens: list) -> bool:
    try:
        grammar().parse(tokens)
    except lark.exceptions.UnexpectedInput:
        return False
    return True


def grammar_continues(tokens: list) -> bool:
    """Whether `tokens` is a prefix of some program the grammar accepts."""
    try:
        grammar().parse_interactive(tokens).exhaust_lexer()
    except lark.exceptions.UnexpectedInput:
        return False
    return True


def disagreement(text: str, file: str | None = None, defs: dict | None = None) -> str | None:
    """Why the grammar and sq's parser part ways on `text`, or None when they agree."""
    stream = sq_stream(text, file, defs)
    if stream is None:
        return None
    err = stream.error
    if err is None:
        return None if grammar_accepts(stream.tokens) else "sq parses it; the grammar refuses it"
    if is_syntax(err):
        if grammar_accepts(stream.tokens):
            return f"sq: syntax error `{err.message}` at {err.line}:{err.col}; the grammar accepts it"
        return None
    if stream.after_items:
        if not grammar_accepts(stream.tokens):
            return f"sq read every item (then side rule `{err.message}`); the grammar refuses them"
        return None
    if not grammar_continues(stream.tokens[:stream.read]):
        return (f"sq read {stream.read} tokens before side rule `{err.message}` at "
                f"{err.line}:{err.col}; the grammar refuses that prefix")
    return None


def classify(text: str, file=None, defs=None) -> str:
    stream = sq_stream(text, file, defs)
    if stream is None:
        return "lexical"
    if stream.error is None:
        return "ok"
    return "syntax" if is_syntax(stream.error) else "side"


# ------------------------------------------------------------------ inputs

def corpus_cases():
    for path in oracle.corpus_files():
        header = oracle.read_header(path)
        yield oracle.corpus_id(path), path.read_text(encoding="utf-8"), str(path), \
            header.overrides.get("defs")


def probe_cases():
    if not PROBES_FILE.exists():
        return []
    return [(p["id"], p["source"], None, (p.get("overrides") or {}).get("defs"))
            for p in json.loads(PROBES_FILE.read_text(encoding="utf-8"))]


def mutate(rng: random.Random, text: str) -> str:
    """One to three token edits: delete, duplicate, swap with another, or replace by a word or symbol."""
    for _ in range(rng.randint(1, 3)):
        spans = [m.span() for m in _SEAM.finditer(text) if not m.group().startswith(("//", "/*"))]
        if not spans:
            return text
        a, b = spans[rng.randrange(len(spans))]
        op = rng.choice(("delete", "duplicate", "swap", "replace", "replace"))
        if op == "delete":
            text = text[:a] + text[b:]
        elif op == "duplicate":
            text = text[:b] + " " + text[a:b] + text[b:]
        elif op == "replace":
            text = text[:a] + " " + rng.choice(_VOCAB) + " " + text[b:]
        else:
            (a, b), (c, d) = sorted([(a, b), spans[rng.randrange(len(spans))]])
            if b <= c:
                text = text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]
    return text


def mutations(count: int, seed: int):
    rng = random.Random(seed)
    bases = [(text, file, defs) for _, text, file, defs in corpus_cases() if 'use "' not in text]
    bases += [(text, None, defs) for _, text, _, defs in probe_cases()]
    for k in range(count):
        text, _, defs = bases[rng.randrange(len(bases))]
        yield k, mutate(rng, text), defs


def _check_all(cases) -> tuple[dict, list]:
    counts, wrong = {}, []
    for name, text, file, defs in cases:
        kind = classify(text, file, defs)
        counts[kind] = counts.get(kind, 0) + 1
        why = disagreement(text, file, defs)
        if why is not None:
            wrong.append(f"{name}: {why}")
    return counts, wrong


# ------------------------------------------------------------------ tests

def test_grammar_builds_with_only_the_expected_conflicts():
    _, conflicts = build_grammar()
    assert conflicts == EXPECTED_CONFLICTS


def test_grammar_has_no_lexer_of_its_own():
    """Every terminal is a word, a symbol or a declared class: sq's lexer is the only lexer."""
    for term in grammar().terminals:
        assert term.pattern.type == "str" or term.name in ("NAME", "NUMBER", "STRING"), term


@pytest.mark.parametrize("source, accepted", [
    ("set cap = 1;", False),                                  # a statement is not an item
    ("server { set cap = 1; observe run = 2; }", True),       # words are names where a name goes
    ("server { observe a = x k in 3 (k); }", False),          # an aggregate needs sum/min/max
    ("server { set sum = 2; observe a = sum + 1; }", True),
    ("server { observe a = sum k in 3 (k); }", True),
    ("server { observe a = 1 < 2 < 3; }", False),
    ("server { observe a = ~det(2)^2; }", False),
    ("server { hold kv (5) { }; observe z = 1; }", True),
    ("server { hold kv (5) { };; }", False),
    ("server { branch (1) { } else branch (1) { } }", False),
    ("queue D : decode { serve delay; decode (o) { } decode (o) from s { } prefill (n) { } }", True),
])
def test_grammar_on_chapter_10_examples(source, accepted):
    """Examples chapter 10 quotes (§10.1, §10.7, §10.8), through sq's lexer."""
    stream = sq_stream(source)
    assert grammar_accepts(stream.tokens) is accepted


_RUN = "run { horizon 10; }\nworkload { arrive batch(1); session { request; } }\nserver { }\n"
_QUEUES = ("queue %s : decode { pool kv { cap 9; } serve delay; nic ps(1); decode (o) { } }\n"
           "queue P : prefill { pool kv { cap 9; } serve delay; nic ps(1); prefill (n) { } }\n")


# Where pyserq 0.1.2 parses otherwise than chapter 10 says (each answer asked of
# pyserq 0.1.2 itself; "accepted" = no syntax error, a later link error allowed).
@pytest.mark.parametrize("source, accepted", [
    (_RUN + _QUEUES % "share" + "share pull P share maxmin;", True),     # `share` reads as a reader's name
    (_RUN + _QUEUES % "run" + "run pull P share maxmin;", True),         # and so does `run`
    (_RUN + "queue L : link { serve step { cost 1; } latency 1 }", False),  # latency needs its `;`
    (_RUN + "queue L : link { serve step { cost 1; } latency 1; }", True),
    (_RUN + "run { foo 1; }", False),                                    # run keys are words
    ("def rate() = ; stage d : delay;", True),                           # --def may give the body
    ("server { observe a = max(sum[1], 2); }", True),                    # `sum[1]` as a reference
])
def test_grammar_where_pyserq_differs_from_chapter_10(source, accepted):
    stream = sq_stream(source)
    assert grammar_accepts(stream.tokens) is accepted
    assert (stream.error is None or not is_syntax(stream.error)) is accepted


@pytest.mark.parametrize("body", ["serve delay; pool (n) { }", "serve delay; nic (n) { }",
                                  "serve delay; route () { } pool (n) { }"])
def test_grammar_reads_pool_serve_and_nic_as_items_in_a_queue(body):
    """pyserq 0.1.2 starts a pool, serve or nic item at these words even before `(`
    (`nic (n) { }` is "unknown stage kind LParen"); none is an entry verb."""
    assert not grammar_accepts(sq_stream(_RUN + "queue g : gateway { " + body + " }").tokens)


def test_the_split_of_parse_errors_is_by_message():
    assert classify("server { observe a = 1 < 2 < 3; }") == "syntax"
    assert classify("server { turn; }") == "side"                     # a block's statements
    assert classify("def hold(x) = x;") == "side"                     # a def named with a word
    assert classify("server { observe a = 1 $ 2; }") == "lexical"


@pytest.fixture(scope="module")
def corpus_result():
    return _check_all(corpus_cases())


def test_grammar_agrees_with_the_parser_on_the_corpus(corpus_result):
    counts, wrong = corpus_result
    assert counts.get("ok", 0) > 300 and counts.get("syntax", 0) > 20, counts
    assert not wrong, f"{len(wrong)} disagreements:\n" + "\n".join(wrong[:20])


def test_grammar_agrees_with_the_parser_on_the_probes():
    cases = probe_cases()
    if not cases:
        pytest.skip(f"probes not found at {PROBES_FILE}")
    counts, wrong = _check_all(cases)
    assert counts.get("ok", 0) > 100, counts
    assert not wrong, f"{len(wrong)} disagreements:\n" + "\n".join(wrong[:20])


def _check_mutations(count: int, seed: int):
    counts, wrong = _check_all((f"mutation {k} (seed {seed})", text, None, defs)
                               for k, text, defs in mutations(count, seed))
    # the mutations must reach both sides of the line, or they test nothing
    assert counts.get("ok", 0) > count // 50 and counts.get("syntax", 0) > count // 5, counts
    assert not wrong, f"{len(wrong)} disagreements:\n" + "\n".join(wrong[:20])


def test_grammar_agrees_with_the_parser_on_mutations():
    _check_mutations(4000, seed=1)


@pytest.mark.slow
def test_grammar_agrees_with_the_parser_on_many_mutations():
    _check_mutations(20000, seed=2)


@pytest.mark.parametrize("arrive, accepted", [
    ("replay", True), ("replay(2)", True), ("replay(k * 2) window(0, 60)", True),
    ("replay keep(0.5) copies(3, 60)", True), ("replay(1) window(0, 1) keep(1) copies(1, 0)", True),
    ("replay copies(2, 5) window(1, 2)", True),
    ("replay()", False), ("replay window(1)", False), ("replay keep(1, 2)", False), ("replay(1)(2)", False),
    ("replay copies(2)", False), ("replay window 1, 2", False), ("replay 2", False),
])
def test_grammar_and_parser_agree_on_replay(arrive, accepted):
    """`arrive replay` (an extension, docs/differences.md): the grammar and the parser accept
    the same clauses."""
    stream = sq_stream(f"run {{ horizon 10; }}\nlet k = 1; workload {{ arrive {arrive}; trace \"t.csv\"; }} session {{ }}")
    assert grammar_accepts(stream.tokens) is accepted
    assert (stream.error is None or not is_syntax(stream.error)) is accepted


@pytest.mark.parametrize("trace, accepted", [
    ('"t.csv" prefix(10)', True), ('"t.csv" ordered prefix(inf)', True), ('"t.csv" prefix(k * 2)', True),
    ('"t.csv" prefix()', False), ('"t.csv" prefix 3', False), ('"t.csv" prefix(1) ordered', False),
])
def test_grammar_and_parser_agree_on_a_trace_prefix_cache(trace, accepted):
    """`trace "F" [ordered] prefix(C)` (an extension): the grammar and the parser agree."""
    stream = sq_stream(f"run {{ horizon 10; }}\nlet k = 1; workload {{ arrive replay; trace {trace}; }} session {{ }}")
    assert grammar_accepts(stream.tokens) is accepted
    assert (stream.error is None or not is_syntax(stream.error)) is accepted

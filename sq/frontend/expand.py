"""`def` and `use`: token substitution before the grammar sees the tokens (spec 01 §4–5).

A `Definitions` table holds every `def` read so far (from the program and
its libraries); `check_arguments` and `substitute` turn one use into the
tokens that replace it. The parser calls them where a use stands, so the
result is parsed there.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from sq.frontend import ast
from sq.errors import SqError
from sq._support.files import read_text
from sq.errors import Span
from sq.frontend.lexer import EOF, IDENT, Token, tokenize
from sq.frontend.words import (CONTEXT_VARIABLES, DISTRIBUTIONS, FUNCTIONS, KEYWORDS,
                               STATE_FUNCTIONS, retired_name)

_OPEN = {"LParen": "RParen", "LBracket": "RBracket", "LBrace": "RBrace"}
_CLOSE = {v: k for k, v in _OPEN.items()}

# A program's token stream may hold at most this many tokens once its def
# uses are expanded (pyserq 0.1.2's bound: a def may use an earlier def twice
# per level, so expansion grows exponentially without one).
MAX_PROGRAM_TOKENS = 100_000


@dataclass
class Definition:
    name: str
    params: tuple[str, ...]
    body: list[Token]
    is_expression: bool
    span: Span
    assigns: frozenset = frozenset()   # names the body sets, chooses or binds
    draws: bool = False                # the body draws (directly or through a def)
    has_turn: bool = False             # the body says `turn;`
    has_request: bool = False          # the body says `request;`


@dataclass
class Definitions:
    """Every def declared so far, in order, plus the `--def` replacements."""

    table: dict = field(default_factory=dict)
    order: list = field(default_factory=list)
    # name -> the first def whose body calls `name(…)`: a def may only use the
    # ones before it, and this finds a use of a later one without a rescan.
    first_caller: dict = field(default_factory=dict)

    def add(self, defn: "Definition") -> None:
        self.table[defn.name] = defn
        self.order.append(defn.name)
        body = defn.body
        for k in range(len(body) - 1):
            if body[k].kind == IDENT and body[k + 1].kind == "LParen":
                self.first_caller.setdefault(body[k].text, defn.name)

    def get(self, name: str) -> Definition | None:
        return self.table.get(name)


def error_at(tok: Token, message: str, sources: dict, notes=()) -> SqError:
    """A parse error at `tok`, with the def uses it came through as notes."""
    extra = tuple(f"note: in `{use.name}`, used at {use.span.line}:{use.span.col}"
                  for use in reversed(tok.via))
    return SqError(message, Span(tok.line, tok.col, 1, tok.file), source=sources.get(tok.file),
                   phase="parse", notes=tuple(notes) + extra)


def check_def_name(tok: Token, sources: dict) -> None:
    word = tok.text
    retired = retired_name(word)
    if retired:
        raise error_at(tok, retired, sources)
    if word in KEYWORDS or word in FUNCTIONS or word in DISTRIBUTIONS:
        raise error_at(tok, f"`{word}` is a word of the language", sources)


def check_param_name(tok: Token, sources: dict) -> None:
    word = tok.text
    retired = retired_name(word, statement_words=True)
    if retired:
        raise error_at(tok, retired, sources)
    if word in KEYWORDS or word in FUNCTIONS or word in DISTRIBUTIONS:
        raise error_at(tok, f"`{word}` is a word of the language: name the parameter otherwise", sources)


def read_body(tokens: list[Token], i: int, name_tok: Token, expression: bool,
              sources: dict) -> tuple[list[Token], int]:
    """The raw body tokens of a def starting at tokens[i] (just after `=` or `{`),
    and the index after the body's terminator (`;` or the matching `}`)."""
    depth = 0            # pyserq 0.1.2 balances by depth only: `(x]` closes
    start = i
    while True:
        tok = tokens[i]
        if tok.kind == EOF:
            raise error_at(name_tok, f"`def {name_tok.text}` is not closed", sources)
        if depth == 0:
            if expression and tok.kind == "Semi":
                return tokens[start:i], i + 1
            if not expression and tok.kind == "RBrace":
                return tokens[start:i], i + 1
        if tok.kind in _OPEN:
            depth += 1
        elif tok.kind in _CLOSE:
            if depth == 0:
                raise error_at(tok, f"unmatched {tok.kind}", sources)
            depth -= 1
        i += 1


def body_facts(defn: Definition, defs: Definitions) -> None:
    """Fill what the argument checks need to know about a body."""
    body = defn.body
    assigns = set()
    draws = False
    holds = False
    for k, tok in enumerate(body):
        nxt = body[k + 1] if k + 1 < len(body) else None
        if tok.kind == "Tilde":
            draws = True
        if tok.kind != IDENT:
            continue
        if nxt is not None and nxt.kind == "LParen":
            used = defs.get(tok.text)
            if used is not None:
                draws = draws or used.draws
                defn.has_turn = defn.has_turn or used.has_turn
                defn.has_request = defn.has_request or used.has_request
        if tok.text in ("set", "choose") and nxt is not None and nxt.kind == IDENT:
            assigns.add(nxt.text)
        if tok.text == "hold":
            holds = True
        if tok.text == "turn" and nxt is not None and nxt.kind == "Semi":
            defn.has_turn = True
        if tok.text == "request" and nxt is not None and nxt.kind in ("Semi", IDENT):
            defn.has_request = True
    assigns |= set(_bindings(body))
    if holds:
        assigns |= {"cached", "computed"}
    defn.assigns = frozenset(assigns)
    defn.draws = draws


def _bindings(body: list[Token]):
    """Names bound in `at admission (x = e, …)` lists of a body."""
    for k in range(len(body) - 2):
        if body[k].is_word("at") and body[k + 1].is_word("admission") and body[k + 2].kind == "LParen":
            depth = 0
            expect_name = True
            for tok in body[k + 2:]:
                if tok.kind in _OPEN:
                    depth += 1
                    if depth == 1:
                        expect_name = True
                        continue
                elif tok.kind in _CLOSE:
                    depth -= 1
                    if depth == 0:
                        break
                if depth == 1 and tok.kind == "Comma":
                    expect_name = True
                    continue
                if depth == 1 and expect_name and tok.kind == IDENT:
                    yield tok.text
                expect_name = False


def param_binding_clash(defn: Definition) -> str | None:
    """A parameter the body assigns or binds with, if any."""
    body = defn.body
    params = set(defn.params)
    for k, tok in enumerate(body):
        nxt = body[k + 1] if k + 1 < len(body) else None
        after = body[k + 2] if k + 2 < len(body) else None
        if nxt is None or nxt.kind != IDENT or nxt.text not in params:
            continue
        if tok.kind == IDENT and tok.text in ("set", "choose", "observe"):
            return nxt.text
        if tok.kind == IDENT and tok.text in ("sum", "min", "max") and after is not None \
                and after.is_word("in"):
            return nxt.text
    for name in _bindings(body):
        if name in params:
            return name
    return None


def split_arguments(tokens: list[Token], i: int, sources: dict,
                    use: Token | None = None) -> tuple[list[list[Token]], list[Token], int]:
    """Arguments of a use whose `(` is tokens[i]: the argument token lists, the
    separator after each (`,` or `)`), and the index after the `)`."""
    args: list[list[Token]] = []
    seps: list[Token] = []
    current: list[Token] = []
    depth = 0
    i += 1
    while True:
        tok = tokens[i]
        if tok.kind == EOF:
            # 0.1.2 blames the use that never closes, not the end of the file.
            raise error_at(use or tok, "the use of a definition is not closed", sources)
        if depth == 0 and tok.kind in ("Comma", "RParen"):
            args.append(current)
            seps.append(tok)
            current = []
            if tok.kind == "RParen":
                return args, seps, i + 1
        else:
            if tok.kind in _OPEN:
                depth += 1
            elif tok.kind in _CLOSE:
                depth -= 1
                if depth < 0:
                    raise error_at(tok, f"unmatched {tok.kind}", sources)
            current.append(tok)
        i += 1


def _is_reference(arg: list[Token]) -> bool:
    """A single identifier, or an identifier followed by one bracketed index."""
    if not arg or arg[0].kind != IDENT:
        return False
    if len(arg) == 1:
        return True
    if arg[1].kind != "LBracket" or arg[-1].kind != "RBracket":
        return False
    depth = 0
    for k, tok in enumerate(arg[1:], start=1):
        if tok.kind in _OPEN:
            depth += 1
        elif tok.kind in _CLOSE:
            depth -= 1
            if depth == 0 and k != len(arg) - 1:
                return False
    return True


def _arg_draws(arg: list[Token], defs: Definitions) -> bool:
    for k, tok in enumerate(arg):
        if tok.kind == "Tilde":
            return True
        if tok.kind == IDENT and k + 1 < len(arg) and arg[k + 1].kind == "LParen":
            used = defs.get(tok.text)
            if used is not None and used.draws:
                return True
    return False


def check_arguments(defn: Definition, use: Token, args: list[list[Token]], defs: Definitions,
                    sources: dict) -> None:
    """The argument rules of spec 01 §4 for one use."""
    for param, arg in zip(defn.params, args):
        if not arg:
            raise error_at(use, f"`{defn.name}`: the argument for `{param}` is empty", sources)
    for param, arg in zip(defn.params, args):
        reads = sum(1 for tok in defn.body if tok.kind == IDENT and tok.text == param)
        if reads > 1 and _arg_draws(arg, defs):
            raise error_at(use, f"the argument for `{param}` draws, and `{defn.name}` reads "
                           f"`{param}` {reads} times: it would draw {reads} times", sources,
                           ("help: `set` the draw first and pass the name",))
        for tok in arg:
            if tok.kind == IDENT and tok.text in defn.assigns:
                raise error_at(use, f"the argument for `{param}` reads `{tok.text}`, which "
                               f"`{defn.name}` assigns: it would read the body's `{tok.text}`, "
                               "not this one", sources,
                               ("help: `set` the value under another name first and pass that; "
                                "a key over a `choose` of the body is written where the `choose` is",))
        if not defn.is_expression:
            _check_statement_argument(defn, param, arg, use, sources)


def _check_statement_argument(defn: Definition, param: str, arg: list[Token], use: Token,
                              sources: dict) -> None:
    for k, tok in enumerate(arg):
        if tok.kind != IDENT:
            continue
        called = k + 1 < len(arg) and arg[k + 1].kind == "LParen"
        after_dot = k > 0 and arg[k - 1].kind == "Dot"
        if called and tok.text in STATE_FUNCTIONS:
            raise error_at(use, f"the argument for `{param}` of `{defn.name}` reads "
                           f"`{tok.text}(…)`, which changes while statements run: the body "
                           "would read it where it reads the parameter, not here", sources,
                           (f"help: `set` the value first (`set t = {tok.text}(…);`) and pass the name",))
        if not called and not after_dot and tok.text in CONTEXT_VARIABLES:
            raise error_at(use, f"an argument of `{defn.name}` reads `{tok.text}`, which changes "
                           "while statements run: the body would read it where it reads the "
                           "parameter, not here", sources,
                           (f"help: `set` the value first (`set t = {tok.text};`) and pass the name",))


def substitute(defn: Definition, use: Token, args: list[list[Token]], seps: list[Token],
               close: Token) -> list[Token]:
    """The tokens that replace a use: the body with each parameter replaced by
    its argument (parenthesised unless a reference), the whole parenthesised
    for an expression def."""
    via = use.via + (ast.DefUse(defn.name, use.span),)
    by_param = {}
    for param, arg, sep in zip(defn.params, args, seps):
        if _is_reference(arg):
            by_param[param] = arg
        else:
            by_param[param] = ([arg[0].moved(kind="LParen", text="(", length=1)] + arg
                               + [sep.moved(kind="RParen", text=")", length=1)])
    out: list[Token] = []
    if defn.is_expression:
        out.append(use.moved(kind="LParen", text="(", length=1, via=via))
    for tok in defn.body:
        if tok.kind == IDENT and tok.text in by_param:
            out.extend(by_param[tok.text])
        else:
            out.append(tok.moved(via=via))
    if defn.is_expression:
        out.append(close.moved(kind="RParen", text=")", length=1, via=via))
    return out


def read_library(path: str, display: str) -> tuple[str, list[Token]]:
    """Text and tokens of a library file; a read failure (`Unreadable`) is the caller's to report."""
    text = read_text(path)
    return text, tokenize(text, display)


def library_path(base_dir: str, base_display: str | None, relative: str) -> tuple[str, str]:
    """(the path to open, the path errors print) for `use "relative"`."""
    real = os.path.join(base_dir, relative)
    shown_dir = os.path.dirname(base_display) if base_display else ""
    shown = os.path.normpath(os.path.join(shown_dir, relative)) if shown_dir else relative
    return real, shown

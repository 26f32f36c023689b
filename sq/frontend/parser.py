"""Tokens to the syntax tree: `parse(text, file=None, defs=None) -> ast.Program`.

A recursive-descent parser over the grammar of spec chapter 10. pyserq
0.1.2's parser is one too, and its messages name the single token it
wanted (`expected Semi, found LBracket`) at the place it looked, which a
descent reproduces directly. Words are contextual: an identifier is a
keyword only where a rule asks for that word.

`def` uses and `use` libraries are expanded in the token stream as the
parser reaches them (expand.py), so a def's body is parsed where it is
used. Array sizes are folded here (they may read only `let`s above them).

Besides the grammar, this module gives the errors 0.1.2 reports while
parsing: which statements a block takes (server, entry, top-level session),
a queue's order and roles, a serving form's stage among those declared
above, a pull relation's queues, `share` given twice; sides.py checks the
pairing of the workload's session with the server once all items are read.
"""
from __future__ import annotations

import dataclasses
import math
import os

from sq._support.deep import run_deep
from sq._support.files import Unreadable
from sq.frontend import ast
from sq.frontend import expand as ex
from sq.frontend import queues, sides
from sq.errors import SqError
from sq.errors import Span
from sq.frontend.fold import Folder
from sq.frontend.lexer import EOF, IDENT, NUM, STR, Token, tokenize
from sq._support.number_format import display
from sq.frontend.words import (ADMIT_STATEMENT, NAMED_NUMBERS, PURE_FUNCTIONS, QUEUE_ROLES, RETIRED,
                               ROLE_VERB, SERVING_WORDS, retired_name)

# Nesting deeper than this (parentheses, prefix operators, blocks) is refused
# with a message.  0.1.2 crashes (a stack overflow) from about 3000
# parentheses or blocks and 8000-10000 prefix operators or `^`s, so every
# program it reads is read; deeper than the main thread's stack allows, the
# parse runs again on a deep stack (sq._support.deep).
MAX_NESTING = 10000
MAX_ARRAY = 10000

# Binary operators: token kind -> (level, operator); a higher level binds tighter.
_COMPARE = 3
_TIGHTEST = 9
_BINARY = {"OrOr": (1, "||"), "AndAnd": (2, "&&"),
           "Lt": (3, "<"), "Le": (3, "<="), "Gt": (3, ">"), "Ge": (3, ">="), "EqEq": (3, "=="),
           "Ne": (3, "!="), "Plus": (4, "+"), "Minus": (4, "-"), "Star": (5, "*"), "Slash": (5, "/")}

# Which statements a block may hold is decided while parsing it (spec 02 §6, 03 §14).
SESSION, CLIENT, SERVER, WORKLOAD_BLOCK, ENTRY = "session", "client", "server", "workload", "entry"


def parse(text: str, file: str | None = None, *, defs: dict | None = None,
          sets: dict | None = None) -> ast.Program:
    """Parse a whole program. `file` is the program's path when it was read
    from a file (a `use` needs it); `defs` are `--def` replacements; `sets` the
    `--set` values, which array sizes are folded with (0.1.2 refuses a `--set`
    of a size; the linker still applies and checks every `--set`)."""
    if not isinstance(text, str):
        raise SqError("a program is text", phase="parse")
    return run_deep(lambda: _Parser(text, file, defs or {}, sets=sets).program())


def parse_expression(text: str) -> ast.Expr:
    """A lone expression (a `--set` value); an error's place is in `text`."""
    if not isinstance(text, str):
        raise SqError("an expression is text", phase="parse")
    def read() -> ast.Expr:
        parser = _Parser(text, None, {}, allow_use=False)
        expr = parser.expr()
        parser.expect("Eof")
        return expr
    return run_deep(read)


class _Parser:
    def __init__(self, text: str, file: str | None, overrides: dict, allow_use: bool = True,
                 sets: dict | None = None):
        self.source = text
        self.sets = dict(sets or {})
        self.file = file
        self.sources = {file: text}
        self.toks = tokenize(text, file)
        self.i = 0
        self.depth = 0
        self.defs = ex.Definitions()
        self.items: list[ast.Item] = []
        self.lets: dict[str, float | None] = {}
        self.let_deps: dict[str, frozenset] = {}
        self.size_lets: set[str] = set()
        self.seen_files: set[str] = set()
        if file is not None:
            try:
                self.seen_files.add(os.path.realpath(file))
            except (OSError, ValueError):
                pass
        self.allow_use = allow_use
        self.base_dir = os.path.dirname(os.path.abspath(file)) if file else os.getcwd()
        self.dirs = {file: self.base_dir}
        self.context = SESSION
        self.queues: dict[str, ast.Queue] = {}
        self.queue_body: _QueueBody | None = None      # the queue whose entries are being read
        self.stages_above: dict[str, bool] = {}         # stage name -> is a step engine
        self.pulls: set[str] = set()
        self.shared: tuple | None = None     # (line, by a pull relation, policy)
        self.overrides = self._read_overrides(overrides)
        # statement-def uses whose body says `turn;` or `request;`, checked
        # against what those assign once the whole program is read
        self.side_uses: list[tuple] = []

    # ------------------------------------------------------------ tokens

    def peek(self, ahead: int = 0) -> Token:
        if not ahead:
            return self.toks[self.i]          # the cursor never passes the `Eof`
        k = self.i + ahead
        return self.toks[k] if k < len(self.toks) else self.toks[-1]

    def advance(self) -> Token:
        tok = self.toks[self.i]
        if tok.kind != EOF:
            self.i += 1
        return tok

    def at(self, kind: str, ahead: int = 0) -> bool:
        return (self.toks[self.i] if not ahead else self.peek(ahead)).kind == kind

    def at_word(self, word: str, ahead: int = 0) -> bool:
        return self.peek(ahead).is_word(word)

    def error(self, tok: Token, message: str, notes=()) -> SqError:
        return ex.error_at(tok, message, self.sources, notes)

    def expect(self, kind: str) -> Token:
        tok = self.toks[self.i]
        if tok.kind != kind:
            raise self.error(tok, f"expected {kind}, found {tok.show()}")
        if kind != EOF:
            self.i += 1
        return tok

    def accept(self, kind: str) -> Token | None:
        tok = self.toks[self.i]
        if tok.kind != kind:
            return None
        if kind != EOF:
            self.i += 1
        return tok

    def expect_name(self) -> Token:
        tok = self.peek()
        if tok.kind != IDENT:
            raise self.error(tok, f"expected identifier, found {tok.show()}")
        return self.advance()

    def expect_word(self, word: str) -> Token:
        tok = self.peek()
        if not tok.is_word(word):
            raise self.error(tok, f"expected `{word}`, found {tok.show()}")
        return self.advance()

    def defined_name(self) -> Token:
        """An identifier that a `let`, `set`, `choose` or binding defines."""
        tok = self.expect_name()
        retired = retired_name(tok.text, statement_words=True)
        if retired:
            raise self.error(tok, retired)
        return tok

    def splice(self, tokens: list[Token], end: int) -> None:
        """Replace tokens[self.i:end] by `tokens`."""
        self.toks[self.i:end] = tokens

    def nest(self):
        return _Nesting(self)

    # ------------------------------------------------------------ program

    def program(self) -> ast.Program:
        state = _Items()
        while not self.at(EOF):
            self.item(state)
        self._after_items()
        sides.check_pairing(self.items, self.queues, self._span_error)
        sides.check_side_uses(self.items, self.side_uses, self.error)
        return ast.Program(tuple(self.items), self.file, self.source,
                           tuple(self.defs.order), frozenset(self.size_lets))

    def item(self, state: "_Items") -> None:
        tok = self.peek()
        if tok.file != self.file:
            return self.library_item(tok)
        if tok.kind != IDENT:
            raise self.error(tok, f"unexpected {tok.show()} at top level")
        word = tok.text
        if word in ("share", "run") and self.at_word("pull", 1):
            return self.items.append(self.pull())      # 0.1.2 reads these two as a reader's name
        handler = {
            "let": self.let, "def": self.definition, "use": self.use, "pool": self.pool,
            "stage": self.stage, "queue": self.queue, "share": self.share, "gauge": self.gauge,
            "workload": lambda: self.workload(state), "session": lambda: self.session(state),
            "server": lambda: self.server(state), "run": self.run_settings,
        }.get(word)
        if handler is None and self.at_word("pull", 1):
            handler = self.pull
        if handler is None:
            raise self.error(tok, f"unexpected {tok.show()} at top level")
        node = handler()
        if node is not None:
            self.items.append(node)

    def library_item(self, tok: Token) -> None:
        """An item spliced from a library: only `def` and `use`, ending in its file."""
        if not (tok.is_word("def") or tok.is_word("use")):
            raise self.error(tok, f"a library holds definitions: found {tok.show()} where `def` "
                             "or `use` goes")
        if tok.text == "def":
            self.definition()
        else:
            self.use()
        if self.toks[self.i - 1].file != tok.file:
            raise self.error(tok, "this item does not end in the file it starts in: a library's "
                             "definitions are whole")

    def _after_items(self) -> None:
        declared = {}
        for item in self.items:
            if isinstance(item, ast.Pool):
                declared.setdefault(item.name, "a pool")
            elif isinstance(item, ast.Stage):
                declared.setdefault(item.name, "a stage")
            elif isinstance(item, ast.Let):
                declared.setdefault(item.name, "a `let` constant")
        for name in self.defs.order:
            if name in declared:
                defn = self.defs.get(name)
                raise SqError(f"`{name}` is defined, and is also {declared[name]}", defn.span,
                              source=self.sources.get(defn.span.file), phase="parse")
        for name in self.overrides:
            if self.defs.get(name) is None:
                declared_defs = ", ".join(n for n in self.defs.order if self.defs.get(n).is_expression)
                raise SqError(f"unknown --def `{name}`", phase="parse", notes=(
                    "help: --def replaces the body of a declared `def NAME(...) = expr;`; "
                    f"the program declares: {declared_defs}",))

    # ------------------------------------------------------------ def / use

    def _read_overrides(self, overrides: dict) -> dict:
        read = {}
        for name, text in overrides.items():
            text = str(text)
            try:
                tokens = tokenize(text, None)
                probe = _Parser(text, None, {}, allow_use=False)
                probe.expr()
                probe.expect("Eof")
            except SqError as err:
                where = f"{err.line}:{err.col}: " if err.span else ""
                raise SqError(f"invalid expression in --def `{name} = {text}`: {where}{err.message}",
                              phase="parse") from None
            read[name] = (tokens[:-1], text)
        return read

    def definition(self) -> None:
        self.advance()                                   # def
        name_tok = self.expect_name()
        ex.check_def_name(name_tok, self.sources)
        self.expect("LParen")
        params: list[str] = []
        if not self.at("RParen"):
            while True:
                ptok = self.expect_name()
                ex.check_param_name(ptok, self.sources)
                if ptok.text in params:
                    raise self.error(ptok, f"`{ptok.text}` is a parameter twice")
                params.append(ptok.text)
                if not self.accept("Comma"):
                    break
        self.expect("RParen")
        opener = self.peek()
        if opener.kind not in ("Assign", "LBrace"):
            raise self.error(opener, "expected `= expression;` or `{ statements }` after "
                             f"`def {name_tok.text}(…)`, found {opener.show()}")
        self.advance()
        expression = opener.kind == "Assign"
        body, self.i = ex.read_body(self.toks, self.i, name_tok, expression, self.sources)
        self._register(name_tok, tuple(params), body, expression)

    def _register(self, name_tok: Token, params, body, expression) -> None:
        name = name_tok.text
        if self.defs.get(name) is not None:
            raise self.error(name_tok, f"`{name}` is defined twice")
        if name in self.overrides:
            if not expression:
                raise self.error(name_tok, f"--def {name}: `def {name}` is statements; --def "
                                 "replaces the body of an expression definition")
            # The replacement has no place of its own in the program: its
            # tokens stand where the def's name does.
            body = [tok.moved(line=name_tok.line, col=name_tok.col, file=name_tok.file)
                    for tok in self.overrides[name][0]]
        if expression and not body:     # checked after --def: 0.1.2 lets it fill an empty body
            raise self.error(name_tok, f"`def {name}` has no expression")
        for k, tok in enumerate(body[:-1]):
            if tok.kind == IDENT and tok.text == name and body[k + 1].kind == "LParen":
                raise self.error(name_tok, f"`{name}` uses itself")
        earlier = self.defs.first_caller.get(name)
        if earlier is not None:
            raise self.error(name_tok, f"`{earlier}` uses `{name}`, which is defined after "
                             "it: a definition uses the ones before it")
        defn = ex.Definition(name, params, body, expression, name_tok.span)
        clash = ex.param_binding_clash(defn)
        if clash is not None:
            raise self.error(name_tok, f"`{clash}` is a parameter, and the body names with it "
                             "what it assigns or binds")
        ex.body_facts(defn, self.defs)
        self.defs.add(defn)

    def use(self) -> None:
        """Splice a library's tokens in place of `use "path";` (each file once)."""
        use_tok = self.advance()
        path_tok = self.peek()
        if path_tok.kind != STR:
            raise self.error(path_tok, f"expected string, found {path_tok.show()}")
        self.advance()
        self.expect("Semi")
        if not self.allow_use or self.file is None:
            raise self.error(use_tok, f"`use \"{path_tok.text}\"` reads a file next to the program, "
                             "and this program was given as text")
        base_dir = self.dirs.get(use_tok.file, self.base_dir)
        shown_base = None if use_tok.file == self.file else use_tok.file
        real, shown = ex.library_path(base_dir, shown_base, path_tok.text)
        try:
            canonical = os.path.realpath(real)
            if canonical in self.seen_files:
                return
            text, tokens = ex.read_library(real, shown)
        except OSError as err:  # realpath
            raise self.error(use_tok, f"cannot read `{path_tok.text}`: {err.strerror} "
                             f"(os error {err.errno})") from None
        except Unreadable as err:
            raise self.error(use_tok, f"cannot read `{path_tok.text}`: {err.reason}") from None
        self.seen_files.add(canonical)
        self.sources[shown] = text
        self.dirs[shown] = os.path.dirname(real)
        self.toks[self.i:self.i] = tokens[:-1]

    def _expand_here(self, expression: bool) -> None:
        """Replace the def use at the cursor (`NAME (` …) by its expansion."""
        use = self.peek()
        defn = self.defs.get(use.text)
        if defn.is_expression != expression:
            if expression:
                raise self.error(use, f"`{defn.name}` is statements (`def {defn.name}(…) {{ … }}`), "
                                 "not an expression")
            raise self.error(use, f"`{defn.name}` is an expression (`def {defn.name}(…) = …;`), "
                             "not statements")
        args, seps, end = ex.split_arguments(self.toks, self.i + 1, self.sources, use)
        if args == [[]]:
            args, seps = [], []
        if len(args) != len(defn.params):
            raise self.error(use, f"`{defn.name}` takes {len(defn.params)} argument(s), got {len(args)}")
        ex.check_arguments(defn, use, args, self.defs, self.sources)
        if defn.has_turn or defn.has_request:
            self.side_uses.append((use, defn, args))
        body = ex.substitute(defn, use, args, seps, seps[-1] if seps else self.toks[end - 1])
        if not expression:
            semi = self.toks[end] if end < len(self.toks) else self.toks[-1]
            if semi.kind != "Semi":
                raise self.error(semi, f"expected `;` after `{defn.name}(…)`, found {semi.show()}")
            end += 1
        if len(self.toks) - 1 - (end - self.i) + len(body) > ex.MAX_PROGRAM_TOKENS:
            raise self.error(use, "the definitions expand to more than a program can hold")
        self.splice(body, end)

    def is_def_use(self) -> bool:
        tok = self.peek()
        return tok.kind == IDENT and self.at("LParen", 1) and self.defs.get(tok.text) is not None

    # ------------------------------------------------------------ simple items

    def let(self) -> ast.Let:
        start = self.advance()
        name = self.defined_name()
        self.expect("Assign")
        value = self.expr()
        self.expect("Semi")
        folded_from = self._set_value(name.text, value)
        folded, deps = _Folder(self.lets, self.let_deps).fold(folded_from) if folded_from else (None, frozenset())
        self.lets[name.text] = folded
        self.let_deps[name.text] = deps
        return ast.Let(start.span, name.text, value)

    def _set_value(self, name: str, written):
        """The expression a `let` folds to here: its `--set` value if it has one (a bad
        one folds to nothing; the linker reports it), else what the program writes."""
        if name not in self.sets:
            return written
        value = self.sets[name]
        if not isinstance(value, str):
            return ast.Num(written.span, float(value)) if isinstance(value, (int, float)) else None
        try:
            return parse_expression(value)
        except SqError:
            return None

    def gauge(self) -> ast.Gauge:
        start = self.advance()
        name = self.expect_name()
        self.expect("Assign")
        value = self.expr()
        self.expect("Semi")
        return ast.Gauge(start.span, name.text, value)

    def policy(self) -> str:
        tok = self.peek()
        if tok.is_word("maxmin") or tok.is_word("bottleneck"):
            self.advance()
            return tok.text
        raise self.error(tok, f"`share` takes `maxmin` or `bottleneck`, found {tok.show()}")

    def share(self) -> ast.Share:
        start = self.advance()
        if self.shared is not None:
            line, by_pull, _ = self.shared
            first = f"the pull relation on line {line}" if by_pull else f"the first is on line {line}"
            raise self.error(start, f"`share` is given twice: {first}")
        policy = self.policy()
        self.expect("Semi")
        self.shared = (start.line, False, policy)
        return ast.Share(start.span, policy)

    def pull(self) -> ast.Pull:
        reader = self.advance()
        self.advance()                                    # pull
        source = self.expect_name()
        label = f"`{reader.text} pull {source.text}`"
        # 0.1.2 checks each queue where it is named, the reader first, before the latency
        for tok in (reader, source):
            if tok.text not in self.queues:
                raise self.error(tok, f"{label}: no queue `{tok.text}` is declared above")
            if self.queues[tok.text].nic is None:
                raise self.error(tok, f"{label}: queue `{tok.text}` has no `nic`; a read runs over "
                                 "the source's NIC and the reader's")
        if source.text == reader.text:
            raise self.error(source, f"{label}: a queue reads from another")
        if reader.text in self.pulls:
            raise self.error(reader, f"`{reader.text}` pulls from `{source.text}` already: "
                             "one relation per reader")
        latency = None
        if self.at_word("latency"):
            self.advance()
            latency = self.constant_latency("the reader's fixed wait before each read")
        tok = self.peek()
        if not tok.is_word("share"):
            raise self.error(tok, f"{label} names how concurrent reads divide the NICs: "
                             f"`share maxmin` or `share bottleneck`, found {tok.show()}")
        self.advance()
        policy = self.policy()
        self.expect("Semi")
        if self.shared is not None and self.shared[2] != policy:
            raise self.error(reader, "the program divides shared stages by one policy: every "
                             "relation and `share` names the same")
        if self.shared is None:
            self.shared = (reader.line, True, policy)
        self.pulls.add(reader.text)
        return ast.Pull(reader.span, reader.text, source.text, latency, policy)

    def run_settings(self) -> ast.RunSettings:
        start = self.advance()
        self.expect("LBrace")
        settings = []
        while not self.accept("RBrace"):
            key = self.expect_name()
            value = self.expr()
            self.expect("Semi")
            if key.text not in ("horizon", "warmup", "seed", "arrivals"):
                raise self.error(self.peek(), f"unknown run option `{key.text}`")
            settings.append(ast.RunSetting(key.span, key.text, value))
        return ast.RunSettings(start.span, tuple(settings))

    # ------------------------------------------------------------ arrays

    def size(self) -> int | None:
        if not self.at("LBracket"):
            return None
        self.advance()
        tok = self.peek()
        expr = self.expr()
        value, deps = _Folder(self.lets, self.let_deps, sizes=True).fold(expr)
        notes = [f"note: --set {n}={self.sets[n]}" for n in sorted(deps & self.sets.keys())]
        if value is None:
            raise self.error(tok, "array size must be a positive integer or a `let` constant that is one", notes)
        if not (1 <= value < math.inf and value == math.floor(value)):
            raise self.error(tok, f"array size must be a positive integer, found {display(value)}", notes)
        if value > MAX_ARRAY:
            raise self.error(tok, f"array size {display(value)} is more than a family holds "
                             f"({MAX_ARRAY}): every member is a pool or stage of its own")
        self.expect("RBracket")
        self.size_lets |= deps - self.sets.keys()    # a size folded from a --set value is resolved
        return int(value)

    # ------------------------------------------------------------ pools

    def pool(self) -> ast.Pool:
        start = self.advance()
        name = self.expect_name()
        size = self.size()
        options = self.pool_body()
        return ast.Pool(start.span, name.text, size, options)

    def pool_body(self) -> tuple:
        self.expect("LBrace")
        options = []
        while not self.accept("RBrace"):
            options.append(self.pool_option())
        return tuple(options)

    def pool_option(self):
        tok = self.expect_name()
        word = tok.text
        if word in ("cap", "block"):
            value = self.expr()
            self.expect("Semi")
            return (ast.Cap if word == "cap" else ast.Block)(tok.span, value)
        if word in ("evict", "queue"):
            default = "lru" if word == "evict" else "fifo"
            keys = None
            if self.at_word(default):
                self.advance()
            else:
                self.expect_word("by")
                keys = self.keys()
            self.expect("Semi")
            return (ast.Evict if word == "evict" else ast.WaitOrder)(tok.span, keys)
        if word == "preempt":
            policy = "lifo" if self.at_word("lifo") else None
            if policy is None:
                self.expect_word("none")
                policy = "none"
            else:
                self.advance()
            self.expect("Semi")
            return ast.Preempt(tok.span, policy)
        if word == "admit":
            self.expect_word("via")
            stage = self.expect_name()
            self.expect("Semi")
            return ast.AdmitVia(tok.span, stage.text)
        if word == "spill":
            target = self.expect_name()
            self.expect_word("via")
            via = self.expect_name()
            amount = self.paren_expr()
            self.expect_word("when")
            when = self.paren_expr()
            self.expect("Semi")
            return ast.Spill(tok.span, target.text, via.text, amount, when, target.span, via.span)
        raise self.error(self.peek(), f"unknown pool option `{word}`")

    def keys(self) -> tuple:
        self.expect("LParen")
        keys = [self.expr()]
        while self.accept("Comma"):
            keys.append(self.expr())
        self.expect("RParen")
        return tuple(keys)

    def paren_expr(self) -> ast.Expr:
        self.expect("LParen")
        value = self.expr()
        self.expect("RParen")
        return value

    # ------------------------------------------------------------ stages

    def stage(self) -> ast.Stage:
        start = self.advance()
        name = self.expect_name()
        size = self.size()
        self.expect("Colon")
        kind = self.stage_kind()
        self.stages_above[name.text] = isinstance(kind, ast.Step)
        if isinstance(kind, ast.Step):
            self.accept("Semi")
        else:
            self._plain_end()
        return ast.Stage(start.span, name.text, size, kind)

    def _plain_end(self) -> None:
        self._no_latency_here()
        self.expect("Semi")

    def _no_latency_here(self) -> None:
        if self.at_word("latency"):
            raise self.error(self.peek(), "`latency` belongs to the `serve` of a queue that plays "
                             "`link`: a link's fixed wait")

    def stage_kind(self):
        """A stage kind without the `;` that ends a plain kind."""
        tok = self.advance()
        word = tok.text if tok.kind == IDENT else None
        if word == "fifo":
            servers = self.paren_expr() if self.at("LParen") else None
            return ast.Fifo(tok.span, servers)
        if word == "ps":
            return ast.Ps(tok.span, self.paren_expr())
        if word == "delay":
            return ast.Delay(tok.span)
        if word == "step":
            options = self.step_options()
            if ast.last_option(options, ast.Cost) is None:
                raise self.error(self.peek(), "a step stage needs `cost`")
            return ast.Step(tok.span, options)
        raise self.error(tok, f"unknown stage kind {tok.show()}")

    def step_options(self) -> tuple:
        self.expect("LBrace")
        options = []
        served = False
        while not self.accept("RBrace"):
            tok = self.expect_name()
            word = tok.text
            if word in ("budget", "cost", "chunk"):
                value = self.expr()
                self.expect("Semi")
                options.append({"budget": ast.Budget, "cost": ast.Cost, "chunk": ast.Chunk}[word](tok.span, value))
            elif word == "memory":
                pool = self.expect_name()
                self.expect("Semi")
                options.append(ast.Memory(tok.span, pool.text))
            elif word == "serve":
                if served:
                    raise self.error(self.peek(), "`serve` twice: a step stage serves its residents in one way")
                served = True
                options.append(self.serve_order(tok))
            elif word == "decode":
                raise self.error(self.peek(), "`decode first;` is now `serve decode first;`: a step "
                                 "stage serves its residents in one way")
            elif word == "exclusive":
                raise self.error(self.peek(), "`exclusive prefill;` is now `serve exclusive prefill;`: "
                                 "a step stage serves its residents in one way")
            else:
                raise self.error(self.peek(), f"unknown step option `{word}`")
        return tuple(options)

    def serve_order(self, start: Token) -> ast.ServeOrder:
        tok = self.peek()
        if tok.is_word("admission"):
            self.advance()
            order = ast.ServeOrder(start.span, "admission")
        elif tok.is_word("decode"):
            self.advance()
            self.expect_word("first")
            order = ast.ServeOrder(start.span, "decode_first")
        elif tok.is_word("exclusive"):
            self.advance()
            self.expect_word("prefill")
            order = ast.ServeOrder(start.span, "exclusive_prefill")
        elif tok.is_word("by"):
            self.advance()
            order = ast.ServeOrder(start.span, "by", self.keys())
        else:
            raise self.error(tok, "`serve` takes `admission`, `decode first`, `exclusive prefill` "
                             f"or `by (keys)`, found {tok.show()}")
        self.expect("Semi")
        return order

    # ------------------------------------------------------------ queues

    def queue(self) -> ast.Queue:
        start = self.advance()
        name = self.expect_name()
        if name.text in SERVING_WORDS:
            raise self.error(name, f"`{name.text}` is a serving word; a queue needs another name")
        size = self.size()
        roles = []
        if self.accept("Colon"):
            while True:
                role = self.expect_name()
                if role.text not in QUEUE_ROLES:
                    raise self.error(role, f"unknown role `{role.text}`: a queue plays gateway, "
                                     "prefill, decode or link")
                roles.append(role.text)
                if not self.accept("Comma"):
                    break
        if "gateway" in roles and size is not None:
            raise self.error(start, "a gateway is one queue, not a family: the requests enter it")
        body = _QueueBody(name.text, tuple(roles))
        self.expect("LBrace")
        saved, self.queue_body = self.queue_body, body
        try:
            while not self.accept("RBrace"):
                self.queue_item(body)
        finally:
            self.queue_body = saved
        queue = ast.Queue(start.span, name.text, size, tuple(roles), tuple(body.pools), body.serve,
                          body.latency, body.nic, tuple(body.entries))
        self._check_queue(queue, start)
        self.queues[name.text] = queue
        if queue.serve is not None:
            self.stages_above[name.text] = isinstance(queue.serve, ast.Step)
        if queue.nic is not None:
            self.stages_above[f"{name.text}.nic"] = isinstance(queue.nic, ast.Step)
        return queue

    def queue_item(self, body: "_QueueBody") -> None:
        tok = self.peek()
        if tok.kind != IDENT:
            raise self.error(tok, f"expected `pool`, `serve` or an entry in queue `{body.name}`, "
                             f"found {tok.show()}")
        word = tok.text
        after_serve, body.after_serve = body.after_serve, False
        if word == "pool":
            if body.serve_tok is not None or body.entries:
                raise self.error(tok, f"queue `{body.name}` declares its pools first, above its "
                                 "`serve` and entries")
            self.advance()
            pname = self.expect_name()
            if self.at("LBracket"):
                self.size()                 # 0.1.2 reads the size, and its faults, first
                raise self.error(pname, f"`pool {pname.text}[…]` in queue `{body.name}`: a "
                                 f"queue's pool is the member's, one per member of `{body.name}`; "
                                 f"write `pool {pname.text}`")
            body.pools.append(ast.Pool(tok.span, pname.text, None, self.pool_body()))
        elif word == "serve":
            if body.entries:
                raise self.error(tok, f"queue `{body.name}` declares its `serve` above its entries")
            if body.serve_tok is not None:
                raise self.error(tok, f"`serve` twice: queue `{body.name}` is one stage")
            self.advance()
            body.serve_tok = tok
            body.serve = self.stage_kind()
            self._serve_end(body)
        elif word == "nic":
            if body.entries:
                raise self.error(tok, f"queue `{body.name}` declares its `nic` above its entries")
            if body.nic is not None:
                raise self.error(tok, f"`nic` twice: queue `{body.name}` has one NIC")
            self.advance()
            body.nic = self.stage_kind()
            if isinstance(body.nic, ast.Step):
                if not self.accept("Semi"):
                    self._no_latency_here()     # a NIC has no fixed wait, however its kind ends
            else:
                self._plain_end()
        elif word == "latency" and after_serve and body.latency is None:
            self.advance()
            body.latency = self.link_latency()
            self.expect("Semi")
        else:
            body.entries.append(self.entry(body))

    def _serve_end(self, body: "_QueueBody") -> None:
        """What may follow a queue's serve kind: `;`, `latency x;` or both; the
        latency written inside the `serve` only for a link."""
        step = isinstance(body.serve, ast.Step)
        if self.accept("Semi"):
            body.after_serve = True
            return
        if self.at_word("latency"):
            if "link" not in body.roles:
                raise self.error(self.peek(), "`latency` belongs to the `serve` of a queue that "
                                 "plays `link`: a link's fixed wait")
            self.advance()
            body.latency = self.link_latency()
            self.expect("Semi")
            return
        if step:
            body.after_serve = True
            return
        self.expect("Semi")

    def link_latency(self) -> ast.Expr:
        return self.constant_latency("a link's fixed wait, the same for every transfer")

    def constant_latency(self, meaning: str) -> ast.Expr:
        """A fixed wait: 0.1.2 folds it over the `let`s above as soon as it is read,
        before what follows, so a wait that is no constant is the first fault."""
        tok = self.peek()
        value = self.expr()
        if _Folder(self.lets, self.let_deps, sizes=True, strict_logic=True).fold(value)[0] is None:
            raise self.error(tok, f"`latency` is a number or a constant over `let`s: {meaning}")
        return value

    def entry(self, body: "_QueueBody") -> ast.Entry:
        verb = self.expect_name()
        params = None
        if self.accept("LParen"):
            params = []
            if not self.at("RParen"):
                while True:
                    params.append(self.expect_name().text)
                    if not self.accept("Comma"):
                        break
            self.expect("RParen")
            params = tuple(params)
        # An entry with `from` is kept apart from the plain one of the same verb (only
        # `decode` may have both; a stray `from` is refused once the queue is read).
        # 0.1.2 looks for a twin as soon as the parameters are read.
        sourced = self.at_word("from")
        if any(e.verb == verb.text and (e.source is not None) == sourced for e in body.entries):
            raise self.error(verb, f"queue `{body.name}` has `{verb.text}` twice")
        if verb.text in ROLE_VERB.values():
            self._check_entry_params(body, verb, params)
        source = None
        if sourced:
            self.advance()
            source = self.expect_name().text
        body.entry_source = source
        block = self.block(ENTRY)
        entry = ast.Entry(dataclasses.replace(verb.span, length=1), verb.text, params, source, block)
        if verb.text != "route":
            self._check_entry_pools(body, entry)
        # 0.1.2 marks an entry's errors with one caret, whatever the verb's length.
        return entry

    def _check_entry_pools(self, body: "_QueueBody", entry: ast.Entry) -> None:
        """An entry allocates its queue's own pools (and the one its `from` hands it):
        0.1.2 checks every hold, lease, `growing` and `to` as soon as the entry is read."""
        own = {p.name for p in body.pools} | set(entry.params or ()) | {entry.source}
        label = f"`{body.name}.{entry.verb}`"
        for stmt in ast.walk(entry.body):
            for pool, verb in _allocated_pools(stmt):
                if isinstance(pool, ast.Dotted) or getattr(pool, "field", None) is not None:
                    continue        # another queue's pool: refused where the statement is linked
                if pool.name in own:
                    continue
                if verb == "leases":
                    raise self._span_error(entry.span, f"{label} leases `{pool.name}`, which is not a pool "
                                           f"of `{body.name}`")
                also = f" and `{entry.source}`, the pool its `from` names" if entry.source else ""
                raise self._span_error(entry.span, f"{label} holds `{pool.name}`, which is not a pool of "
                                       f"`{body.name}`: an entry allocates its queue's own pools{also}")
        for stmt in ast.walk(entry.body):       # 0.1.2 reads the headers once every pool is known good
            if isinstance(stmt, ast.Hold):
                self._check_hold_header(body, entry, stmt)

    def _check_hold_header(self, body: "_QueueBody", entry: ast.Entry, hold: ast.Hold) -> None:
        """A hold's amounts read the entry's parameters, the queue's pools and stage, and
        the `let`s above (the `at admission` bindings are left to the linker, as 0.1.2 does)."""
        label = f"`{body.name}.{entry.verb}`"
        header = [x for hp in hold.pools for x in (hp.units, hp.reserve) if x is not None]
        header += [hold.reuse] if hold.reuse is not None else []
        bound = {x.var for e in header for x in ast.subexpressions(e) if isinstance(x, ast.Aggregate)}
        seen = set(entry.params or ()) | bound | set(self.lets) | {"inf", "self"}
        # a function may also be handed the pool `from` names (`used(src)`)
        own = {p.name for p in body.pools} | {body.name} | ({entry.source} if entry.source else set())
        for e in header:
            dotted = next((x for x in ast.subexpressions(e) if isinstance(x, ast.Dotted)), None)
            for name, is_ref in _header_names(e, {b.name: b.value for b in hold.bindings}):
                if is_ref and name.name not in seen | own:
                    raise self._span_error(entry.span, f"{label} reads `{name.name}`, which is not a pool or "
                                           f"stage of `{body.name}`: a queue sees its own; the deployment "
                                           "reads across queues")
                if not is_ref and name.name not in seen:
                    raise self._span_error(entry.span, f"{label}: the header reads `{name.name}`; an entry's "
                                           "header sees its parameters and the queue's pools and stage. "
                                           f"Pass `{name.name}` as a parameter")
            if dotted is not None:
                raise self._span_error(entry.span, f"{label} reads `{dotted.base}.{dotted.field}`, another "
                                       "queue's: an entry sees its own; the gateway reads across queues and "
                                       "passes what an entry needs")

    def _check_entry_verb(self, queue: ast.Queue, entry: ast.Entry) -> None:
        """The verb belongs to a declared role."""
        if entry.source is not None and entry.verb != "decode":
            raise self._span_error(entry.span, f"`{entry.verb}` is not an entry of any role: "
                                   f"`{entry.verb}` takes no `from`")
        if entry.verb not in {ROLE_VERB[role] for role in queue.roles}:
            role = next((r for r, v in ROLE_VERB.items() if v == entry.verb), None)
            if role is None:
                raise self._span_error(entry.span, f"`{entry.verb}` is not an entry of any role")
            raise self._span_error(entry.span, f"`{entry.verb}` is an entry of a `{role}` queue; "
                                   f"declare `queue {queue.name} : {role}`")

    def _check_entry_params(self, body: "_QueueBody", verb: Token, params) -> None:
        """A role's entry has the role's parameter count."""
        expected = 0 if verb.text == "route" else 1
        count = len(params or ())
        if count != expected:
            shape = "route" if verb.text == "route" else f"{verb.text} (…)"
            raise self.error(verb, f"`{body.name}.{verb.text}` takes {expected} parameter(s), as "
                             f"the role says (`{shape}`); it declares {count}")

    def _check_queue(self, queue: ast.Queue, start: Token) -> None:
        for role in queue.roles:
            verb = ROLE_VERB[role]
            has_entry = any(e.verb == verb and e.source is None for e in queue.entries)
            if role == "link":
                if queue.serve is None and not has_entry:
                    raise self.error(start, f"queue `{queue.name}` plays `link` and has neither a "
                                     "`serve` nor a `transfer` entry: nothing says what a transfer "
                                     "over it costs")
            elif not has_entry:
                raise self.error(start, f"queue `{queue.name}` plays `{role}` and has no `{verb}` entry")
        for entry in queue.entries:
            self._check_entry_verb(queue, entry)
        if queue.latency is not None and any(e.verb == "transfer" for e in queue.entries):
            raise self.error(start, f"queue `{queue.name}` has a `transfer` entry and a `latency`: a "
                             "called link's time is its entry's; write the latency in the entry body")

    def _span_error(self, span: Span, message: str) -> SqError:
        return SqError(message, Span(span.line, span.col, 1, span.file),
                       source=self.sources.get(span.file), phase="parse")

    # ------------------------------------------------------------ workload, session, server

    def workload(self, state: "_Items") -> ast.Workload:
        start = self.advance()
        if state.workload is not None:
            raise self.error(self.peek(), "duplicate workload")
        self.expect("LBrace")
        items = []
        client = None
        while not self.accept("RBrace"):
            tok = self.peek()
            word = tok.text if tok.kind == IDENT else None
            if word == "arrive":
                items.append(self.arrive())
            elif word == "trace":
                self.advance()
                path = self.peek()
                if path.kind != STR:
                    raise self.error(path, f"expected string, found {path.show()}")
                self.advance()
                ordered = bool(self.at_word("ordered") and self.advance())
                prefix = None
                if self.at_word("prefix"):           # an extension (docs/differences.md)
                    self.advance()
                    prefix = self.paren_expr()
                self.expect("Semi")
                items.append(ast.Trace(tok.span, path.text, ordered, prefix))
            elif word in ("init", "turn"):
                self.advance()
                body = self.block(WORKLOAD_BLOCK)
                items.append((ast.Init if word == "init" else ast.TurnBlock)(tok.span, body))
            elif word == "session":
                if client is not None:
                    raise self.error(tok, "duplicate session in workload")
                self.advance()
                body = self.block(CLIENT)
                client = ast.ClientSession(tok.span, body)
                items.append(client)
                if state.session is not None and state.session.body:
                    raise self.error(self.peek(), "a program has one session: inside `workload` "
                                     "or at top level, not both")
            elif word == "hidden":
                self.advance()
                names = [self.expect_name()]
                while self.accept("Comma"):
                    names.append(self.expect_name())
                self.expect("Semi")
                items.append(ast.Hidden(tok.span, tuple(ast.Name(n.span, n.text) for n in names)))
            else:
                raise self.error(tok, f"unexpected {tok.show()} in workload")
        state.workload = ast.Workload(start.span, tuple(items))
        return state.workload

    def arrive(self) -> ast.Arrive:
        start = self.advance()
        tok = self.peek()
        if tok.is_word("none"):
            self.advance()
            self.expect("Semi")
            return ast.Arrive(start.span, "none", None)
        if tok.kind == IDENT and tok.text == "poisson" and self.at("LParen", 1):
            return self.poisson(start)
        if tok.kind == IDENT and tok.text == "renewal" and self.at("LParen", 1):
            self.advance()
            value = self.paren_expr()
            options = ()
            if self.at_word("rate"):            # an extension: gaps in the rate's operational time
                self.advance()
                options = (("rate", (self.paren_expr(),)),)
            self.expect("Semi")
            return ast.Arrive(start.span, "renewal", value, options)
        if tok.kind == IDENT and tok.text in ("poisson", "renewal", "closed", "batch"):
            self.advance()
            value = self.paren_expr()
            self.expect("Semi")
            return ast.Arrive(start.span, tok.text, value)
        if tok.kind == IDENT and tok.text == "replay":
            return self.replay(start)
        raise self.error(tok, f"expected `none`, found {tok.show()}")

    def poisson(self, start: Token) -> ast.Arrive:
        """`poisson(r);`, or (an extension) a Markov-modulated one: `poisson(r1, …, rn)
        leave(q1, …, qn);`, phase i arriving at rate ri and left at rate qi for phase i + 1
        (the last for the first)."""
        self.advance()
        rates = self.expr_list()
        if len(rates) == 1 and not self.at_word("leave"):
            self.expect("Semi")
            return ast.Arrive(start.span, "poisson", rates[0])
        if not self.at_word("leave"):
            raise self.error(self.peek(), f"expected `leave(…)` after the phases' rates, found {self.peek().show()}",
                             ("help: a Markov-modulated poisson names each phase's leaving rate: "
                              "`arrive poisson(2, 10) leave(0.01, 0.1);`",))
        self.advance()
        leave = self.expr_list()
        self.expect("Semi")
        return ast.Arrive(start.span, "modulated", None, (("rates", rates), ("leave", leave)))

    def expr_list(self) -> tuple:
        """`(e1, …, en)`, n >= 1."""
        self.expect("LParen")
        items = [self.expr()]
        while self.at("Comma"):
            self.advance()
            items.append(self.expr())
        self.expect("RParen")
        return tuple(items)

    # the clauses of `arrive replay` (an extension) and how many arguments each takes
    REPLAY_CLAUSES = {"window": 2, "keep": 1, "copies": 2}

    def replay(self, start: Token) -> ast.Arrive:
        """`replay [(k)] [window(a, b)] [keep(p)] [copies(n, shift)] ;` (docs/differences.md)."""
        self.advance()
        speed = self.paren_expr() if self.at("LParen") else None
        options = []
        while self.peek().kind == IDENT and self.peek().text in self.REPLAY_CLAUSES:
            word = self.advance()
            self.expect("LParen")
            args = [self.expr()]
            for _ in range(self.REPLAY_CLAUSES[word.text] - 1):
                self.expect("Comma")
                args.append(self.expr())
            self.expect("RParen")
            options.append((word.text, tuple(args)))
        self.expect("Semi")
        return ast.Arrive(start.span, "replay", speed, tuple(options))

    def session(self, state: "_Items") -> ast.Session:
        start = self.advance()
        if state.session is not None and state.session.body:
            raise self.error(self.peek(), "duplicate session")
        body = self.block(SESSION)
        if body and state.workload is not None and state.workload.session is not None:
            raise self.error(self.peek(), "a program has one session: inside `workload` or at "
                             "top level, not both")
        state.session = ast.Session(start.span, body)
        return state.session

    def server(self, state: "_Items") -> ast.Server:
        if state.server:
            raise self.error(self.peek(), "duplicate server")
        start = self.advance()
        state.server = True
        return ast.Server(start.span, self.block(SERVER))

    # ------------------------------------------------------------ statements

    def block(self, context: str | None = None) -> tuple:
        self.expect("LBrace")
        saved = self.context
        if context is not None:
            self.context = context
        try:
            with self.nest():
                stmts = []
                while not self.accept("RBrace"):
                    stmts.extend(self.statement())
                return tuple(stmts)
        finally:
            self.context = saved

    def statement(self) -> list:
        """One statement, or the statements a statement-def use expands to."""
        tok = self.peek()
        if tok.kind != IDENT:
            raise self.error(tok, f"expected a statement, found {tok.show()}")
        word = tok.text
        method = getattr(self, "stmt_" + word, None) if word in _STATEMENT_WORDS else None
        if method is not None:
            node = method(tok)
            return [dataclasses.replace(node, via=tok.via)] if tok.via else [node]
        if word in RETIRED:
            raise self.error(tok, RETIRED[word])
        if word == "admit":
            raise self.error(tok, ADMIT_STATEMENT)
        if self.is_def_use():
            self._expand_here(expression=False)
            return []
        if self.at("Dot", 1) or self.at("LBracket", 1):
            return [self.queue_call()]
        raise self.error(tok, f"unknown statement `{word}`")

    def stmt_set(self, start: Token) -> ast.Set:
        self.advance()
        name = self.defined_name()
        self.expect("Assign")
        value = self.expr()
        self.expect("Semi")
        return ast.Set(start.span, name.text, value)

    def stmt_observe(self, start: Token) -> ast.Observe:
        self.advance()
        name = self.expect_name()
        self.expect("Assign")
        value = self.expr()
        self.expect("Semi")
        return ast.Observe(start.span, name.text, value)

    def stmt_turn(self, start: Token) -> ast.Turn:
        if self.context in (SERVER, ENTRY):
            raise self.error(start, "`turn` is the session's: the next turn is the workload's "
                             "decision, not the server's")
        self.advance()
        self.expect("Semi")
        return ast.Turn(start.span)

    def stmt_end(self, start: Token) -> ast.End:
        if self.context in (SERVER, ENTRY):
            raise self.error(start, "`end` is the session's: a server is done with a request when "
                             "its block is, and whether the session goes on is the workload's")
        self.advance()
        self.expect("Semi")
        return ast.End(start.span)

    def stmt_request(self, start: Token) -> ast.Request:
        if self.context in (SERVER, ENTRY):
            raise self.error(start, "`request` inside a server or queue entry: a server does not "
                             "request itself")
        if self.context == SESSION:
            raise self.error(start, "`request` is a statement of the `session` inside `workload`")
        self.advance()
        gateway = gateway_span = None
        if self.at(IDENT):
            name = self.advance()
            gateway, gateway_span = name.text, name.span
        self.expect("Semi")
        return ast.Request(start.span, gateway, gateway_span)

    def stmt_mark(self, start: Token) -> ast.Mark:
        if self.context != ENTRY:
            raise self.error(start, "`mark` is a queue entry's statement: it names a moment the "
                             "caller reads")
        self.advance()
        name = self.expect_name()
        self.expect("Semi")
        return ast.Mark(start.span, name.text)

    def stmt_hold(self, start: Token) -> ast.Hold:
        self.advance()
        pools = [self.hold_pool()]
        while self.accept("Comma"):
            pools.append(self.hold_pool())
        reuse = None
        if self.at_word("reuse"):
            self.advance()
            reuse = self.paren_expr()
        bindings = []
        if self.at_word("where"):
            raise self.error(self.peek(), RETIRED["where"])
        if self.at_word("at"):
            self.advance()
            if not self.at_word("admission"):
                raise self.error(self.peek(), "expected `admission` after `at`")
            self.advance()
            self.expect("LParen")
            bindings.append(self.binding(bindings))
            while self.accept("Comma"):
                bindings.append(self.binding(bindings))
            self._check_binding_order(bindings)
            self.expect("RParen")
        body = self.block()
        cache = lease = None
        if self.at_word("keep"):
            raise self.error(self.peek(), RETIRED["keep"])
        if self.at_word("cache"):
            self.advance()
            cache = self.paren_expr()
        if self.at_word("lease"):
            lease_tok = self.advance()
            pool = self.ref()
            lease = ast.Lease(lease_tok.span, pool, self.paren_expr())
        self.accept("Semi")
        return ast.Hold(start.span, tuple(pools), reuse, tuple(bindings), body, cache, lease)

    def hold_pool(self) -> ast.HoldPool:
        tok = self.peek()
        pool = self.ref()
        units = self.paren_expr()
        reserve = None
        if self.at_word("fits"):
            raise self.error(self.peek(), "`fits` is now `reserve`")
        if self.at_word("reserve"):
            self.advance()
            reserve = self.paren_expr()
        return ast.HoldPool(tok.span, pool, units, reserve)

    # A hold's bindings are checked as 0.1.2 reads them, so that in a program with
    # several faults the same one is reported: a name bound twice at its `=`, a
    # draw just after its value, a read of a later binding once the list ends.
    def binding(self, before: list) -> ast.Binding:
        name = self.defined_name()
        assign = self.expect("Assign")
        if any(b.name == name.text for b in before):
            raise self.error(assign, f"`{name.text}` is bound twice in one `at admission`")
        value = self.expr()
        if any(type(x) is ast.Sample for x in ast.subexpressions(value)):
            raise self.error(self.peek(), f"`{name.text}` draws a sample: a `at admission` binding is "
                             "substituted, so a name used twice would draw twice")
        return ast.Binding(name.span, name.text, value)

    def _check_binding_order(self, bindings: list) -> None:
        names = [b.name for b in bindings]
        for i, b in enumerate(bindings):
            read = {x.name for x in ast.subexpressions(b.value) if type(x) is ast.Name or type(x) is ast.Ref}
            later = [n for n in names[i + 1:] if n in read]
            if later:
                raise self._span_error(b.span, f"`{b.name}` reads `{later[0]}`, which is bound after it: "
                                       "a binding sees the ones before it")

    def stmt_grow(self, start: Token) -> ast.Grow:
        self.advance()
        pool = self.ref()
        amount = self.paren_expr()
        self.expect("Semi")
        return ast.Grow(start.span, pool, amount)

    def stmt_load(self, start: Token) -> ast.Load:
        self.advance()
        pool = self.ref()
        amount = self.paren_expr()
        self.expect("Semi")
        return ast.Load(start.span, pool, amount)

    def stmt_drop(self, start: Token) -> ast.Drop:
        self.advance()
        pool = self.ref()
        self.expect("Semi")
        return ast.Drop(start.span, pool)

    def stmt_release(self, start: Token) -> ast.Release:
        self.advance()
        pool = self.ref()
        self.expect("Semi")
        return ast.Release(start.span, pool)

    def stmt_run(self, start: Token) -> ast.Run:
        self.advance()
        if self.at("LParen"):
            if self.context != ENTRY:
                raise self.error(self.peek(), "`run` names a stage: `run STAGE (X)`")
            if self.queue_body is not None and self.queue_body.serve is None:
                raise self.error(self.peek(), f"`run (…)` in queue `{self.queue_body.name}`, "
                                 "which has no `serve`")
            work = self.paren_expr()
            self.expect("Semi")
            return ast.Run(start.span, (), None, work, None)
        stages = [self.ref()]
        while self.accept("Comma"):
            stages.append(self.ref())
        mode = None
        if self.at_word("prefill") or self.at_word("decode"):
            mode = self.advance().text
        work = self.paren_expr()
        growing = None
        if self.at_word("growing"):
            self.advance()
            growing = self.ref()
        self.expect("Semi")
        return ast.Run(start.span, tuple(stages), mode, work, growing)

    def stmt_branch(self, start: Token) -> ast.Branch:
        self.advance()
        chance = bool(self.at_word("with") and self.advance())
        self.expect("LParen")
        first = self.i
        test = self.expr()
        text = self._text(first, self.i)
        self.expect("RParen")
        then = self.block()
        other = None
        if self.at_word("else"):
            self.advance()
            other = self.block()
        return ast.Branch(start.span, test, then, other, chance, text)

    def stmt_loop(self, start: Token) -> ast.Loop:
        self.advance()
        return ast.Loop(start.span, self.block())

    def stmt_choose(self, start: Token) -> ast.Choose:
        self.advance()
        name = self.defined_name()
        self.expect_word("in")
        count = self.expr()
        self.expect_word("by")
        keys = self.keys()
        self.expect("Semi")
        return ast.Choose(start.span, name.text, count, keys)

    def serving(self, start: Token) -> ast.Serving:
        role = start.text
        self.advance()
        index = on = None
        awaits_pull = role == "transfer" and self._transfer_awaits_pull()
        if awaits_pull and not (self.at("LParen") or self.at_word("on")):
            # 0.1.2 waits for a pull relation only when the work's `(` follows at once
            raise self._no_transfer_stage(start)
        if self.at("LBracket"):
            self.advance()
            index = self.expr()
            self.expect("RBracket")
        if index is None and self.at_word("on"):
            self.advance()
            on = [self.stage_above(role)]
            while self.accept("Comma"):
                on.append(self.stage_above(role))
            on = tuple(on)
        elif awaits_pull:
            on = ()         # no stage yet: the pull relation's NICs, found where the entry is called
        else:
            self._role_stage(start)
        work = self.expr()
        growing = source = dest = amount = None
        if self.at_word("growing"):
            self.advance()
            growing = self.ref()
        if role == "transfer":
            if not self.at_word("from"):
                # the help names the stage the transfer runs on, as 0.1.2 does
                stage = on[0].name if on else next((n for n in ("link", "transfer") if n in self.stages_above),
                                                   "link")
                raise self.error(start, "`transfer` without `from P to Q (n)`: a KV transfer leaves "
                                 "the lease (or hold) on P and enters the hold on Q", (
                                     f"help: write `transfer (w) from P to Q (n);`, or `run {stage} (w);` "
                                     "for a link that only takes time",))
            if growing is not None:
                raise self.error(start, "`transfer … from P to Q`: a transfer does not grow a pool")
            self.advance()
            source = self.ref()
            self.expect_word("to")
            dest = self.ref()
            amount = self.paren_expr()
        self.expect("Semi")
        return ast.Serving(start.span, start.text, index, on, work, growing, source, dest, amount)

    stmt_prefill = stmt_decode = stmt_tool = stmt_transfer = serving

    def stage_above(self, role: str) -> ast.Ref:
        """A stage named after `on`: it must be declared above the statement."""
        tok = self.peek()
        ref = self.ref()
        name = ref.name if ref.field is None else f"{ref.name}.{ref.field}"
        own = self.queue_body.name if self.queue_body is not None else None
        if name not in self.stages_above and name != own:
            raise self.error(tok, f"`{role} on {name}`: no stage `{name}` is declared above",
                             ("help: declare the stage above this statement",))
        return ref

    def _transfer_awaits_pull(self) -> bool:
        """A `from` entry's transfer with no link declared above may run over a pull
        relation written later; 0.1.2 checks for one only where the entry is called."""
        body = self.queue_body if self.context == ENTRY else None
        return (body is not None and body.entry_source is not None
                and not any(n in self.stages_above for n in ("link", "transfer")))

    def _no_transfer_stage(self, start: Token) -> SqError:
        return self.error(start, "no stage declared above plays `transfer`: name a stage `link` or "
                          "`transfer`, or write `transfer on STAGE (...)`")

    def _role_stage(self, start: Token) -> None:
        """A serving form without `on` finds its stage among those declared above
        (spec 03 §13); 0.1.2 looks before it reads the work."""
        role = start.text
        body = self.queue_body if self.context == ENTRY else None
        if body is not None and role in ("prefill", "decode"):
            if isinstance(body.serve, ast.Step) or role in self.stages_above:
                return
            candidates = []
        elif role in ("prefill", "decode"):
            if role in self.stages_above:
                return
            candidates = [n for n, step in self.stages_above.items() if step]
        else:
            names = ("link", "transfer") if role == "transfer" else ("tool",)
            candidates = [n for n in names if n in self.stages_above]
        if len(candidates) == 1:
            return
        if candidates:
            raise self.error(start, f"several stages play `{role}` ({', '.join(candidates)}): write "
                             f"`{role} on STAGE (...)`")
        what = {"tool": "name a stage `tool`", "transfer": "name a stage `link` or `transfer`"}.get(
            role, f"name a stage `{role}`, declare a `step` engine")
        raise self.error(start, f"no stage declared above plays `{role}`: {what}, or write "
                         f"`{role} on STAGE (...)`")

    def queue_call(self) -> ast.QueueCall:
        queue = self.advance()
        index = None
        if self.accept("LBracket"):
            index = self.expr()
            self.expect("RBracket")
            if not self.at("Dot"):
                raise self.error(queue, f"`{queue.text}[…]` as a statement: a queue's entry is "
                                 f"`{queue.text}[i].verb (…)`")
        self.expect("Dot")
        verb = self.expect_name()
        self.expect("LParen")
        args = []
        if not self.at("RParen"):
            args.append(self.expr())
            while self.accept("Comma"):
                args.append(self.expr())
        self.expect("RParen")
        source = source_index = dest = amount = source_span = None
        if self.at_word("from"):
            self.advance()
            source_tok = self.expect_name()
            source, source_span = source_tok.text, source_tok.span
            if self.accept("LBracket"):
                source_index = self.expr()
                self.expect("RBracket")
        if self.at_word("to"):
            self.advance()
            dest = self.ref()
            amount = self.paren_expr()
        self.expect("Semi")
        # 0.1.2 marks a call's errors with one caret, whatever the queue's name
        return ast.QueueCall(dataclasses.replace(queue.span, length=1), queue.text, index, verb.text,
                             tuple(args), source, source_index, dest, amount, source_span)

    def ref(self) -> ast.Ref:
        name = self.expect_name()
        index = field = None
        if self.accept("LBracket"):
            index = self.expr()
            self.expect("RBracket")
        if self.accept("Dot"):
            field = self.expect_name().text
        return ast.Ref(name.span, name.text, index, field)

    def _text(self, first: int, end: int) -> str:
        """The source text of tokens[first:end], or their spelling joined by spaces."""
        toks = self.toks[first:end]
        if not toks:
            return ""
        a, b = toks[0], toks[-1]
        if a.file == b.file and not a.via and not b.via:
            text = self.sources.get(a.file, "")
            start = _offset(text, a.line, a.col)
            stop = _offset(text, b.line, b.col) + b.length
            if 0 <= start < stop <= len(text):
                return text[start:stop]
        return " ".join(t.text for t in toks)

    # ------------------------------------------------------------ expressions

    def expr(self) -> ast.Expr:
        """expr = disj [ "?" expr ":" expr ]"""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(self.peek(), f"the program nests deeper than {MAX_NESTING} levels")
        try:
            tok = self.toks[self.i]
            test = self.binary(1)
            if self.toks[self.i].kind != "Question":
                return test
            self.i += 1
            then = self.expr()
            self.expect("Colon")
            other = self.expr()
            return ast.Cond(tok.span, test, then, other)
        finally:
            self.depth -= 1

    def binary(self, lowest: int) -> ast.Expr:
        """The binary levels of §10.8 (|| && comparisons + - * /) by precedence
        climbing: operators of level `lowest` and above, left to right. A
        comparison takes no comparison as its left operand (`1 < 2 < 3` stops
        before the second `<`)."""
        left = self.unary()
        last = _TIGHTEST
        while True:
            tok = self.toks[self.i]
            entry = _BINARY.get(tok.kind)
            if entry is None:
                return left
            level, op = entry
            if level < lowest or (level == _COMPARE and last <= _COMPARE):
                return left
            self.i += 1
            right = self.binary(level + 1)
            left = ast.Binary(tok.span, op, left, right)
            last = level

    # unary and atom read `self.toks` directly rather than through peek/at/advance:
    # they run once or more per operand, and the method calls were a third of parsing.
    def unary(self) -> ast.Expr:
        tok = self.toks[self.i]
        kind = tok.kind
        if kind == "Minus" or kind == "Not":
            self.i += 1
            with self.nest():
                operand = self.unary()
            return ast.Unary(tok.span, "-" if kind == "Minus" else "!", operand)
        if kind == "Tilde":
            self.i += 1
            dist = self.expect_name()
            self.expect("LParen")
            return ast.Sample(tok.span, dist.text, self.sample_args())
        atom = self.atom()
        op = self.toks[self.i]
        if op.kind == "Caret":
            self.i += 1
            with self.nest():
                exponent = self.unary()
            return ast.Binary(op.span, "^", atom, exponent)
        return atom

    def atom(self) -> ast.Expr:
        toks = self.toks          # splicing a def use in edits this list in place
        tok = toks[self.i]
        while tok.kind == IDENT and toks[self.i + 1].kind == "LParen" and self.defs.get(tok.text) is not None:
            self._expand_here(expression=True)
            tok = toks[self.i]
        kind = tok.kind
        if kind == NUM:
            self.i += 1
            return ast.Num(tok.span, tok.value)
        if kind == "LParen":
            self.i += 1
            inner = self.expr()
            self.expect("RParen")
            return inner
        if kind != IDENT:
            raise self.error(tok, f"expected an expression, found {tok.show()}")
        self.i += 1                                          # an identifier is never the last token
        after = toks[self.i].kind
        if after == "LParen":
            self.i += 1
            return ast.Call(tok.span, tok.text, self.call_args())
        if tok.text in ("sum", "min", "max") and after == IDENT and self.at_word("in", 1):
            var = self.advance()
            self.advance()                                   # in
            count = self.aggregate_count(f"{tok.text} {var.text} in")
            body = self.paren_expr()
            return ast.Aggregate(tok.span, tok.text, var.text, count, body)
        if after == "Dot":
            self.i += 1
            field = self.expect_name()
            return ast.Dotted(tok.span, tok.text, field.text)
        if after == "LBracket":
            self._refuse_member_attribute(tok)
        if tok.text == "self" and self.context != ENTRY:
            raise self.error(tok, "`self` is a queue entry's word: the member's own index")
        return ast.Name(tok.span, tok.text)

    def _refuse_member_attribute(self, name: Token) -> None:
        """`P[i].x` inside an expression: a request attribute belongs to no member.
        0.1.2 says so in these fixed words (always `Q` and `x`) whatever the names."""
        end = self._matching(self.i)
        if end is not None and self.toks[end + 1].kind == "Dot":
            raise self.error(name, "`Q[…].x` reads the request's attribute, which is no member's: write `Q.x`")

    def aggregate_count(self, head: str) -> ast.Expr:
        tok = self.peek()
        if tok.kind == NUM:
            self.advance()
            return ast.Num(tok.span, tok.value)
        if tok.kind == IDENT:
            self.advance()
            return ast.Name(tok.span, tok.text)
        if tok.kind == "LParen":
            return self.paren_expr()
        # 0.1.2 names the bad token but points at the one after it (EOF stays put).
        after = tok if tok.kind == EOF else self.toks[self.i + 1]
        raise self.error(after, f"`{head}` takes a number, a constant's name "
                         f"or `( expr )`, found {tok.show()}")

    def call_args(self) -> tuple:
        """Arguments after `(` up to and including `)`."""
        args = []
        if self.accept("RParen"):
            return ()
        while True:
            args.append(self.call_arg())
            if self.accept("RParen"):
                return tuple(args)
            self.expect_either()

    def sample_args(self) -> tuple:
        """A draw's arguments up to and including `)`: numbers, never references."""
        args = []
        if self.accept("RParen"):
            return ()
        while True:
            args.append(self.expr())
            if self.accept("RParen"):
                return tuple(args)
            self.expect_either()

    def expect_either(self) -> None:
        tok = self.peek()
        if tok.kind != "Comma":
            raise self.error(tok, f"expected RParen, found {tok.show()}")
        self.advance()

    def call_arg(self) -> ast.Expr:
        """A reference (`kv[j]`, `P[i].kv`) when it is the whole argument, else an expression."""
        tok = self.peek()
        if tok.is_word("self") and self.toks[self.i + 1].kind in ("Comma", "RParen"):
            # a whole argument may name a pool or stage: 0.1.2 leaves a stray `self` to the linker
            self.advance()
            return ast.Name(tok.span, tok.text)
        if tok.kind == IDENT and self.at("LBracket", 1) and not self.is_def_use():
            end = self._matching(self.i + 1)
            if end is not None:
                after = end + 1
                if self.toks[after].kind == "Dot" and self.toks[after + 1].kind == IDENT:
                    after += 2
                if self.toks[after].kind in ("Comma", "RParen"):
                    return self._member_pool_ref()
        return self.expr()

    def _member_pool_ref(self) -> ast.Ref:
        """`Q[i].kv` handed to a function names a member's pool; 0.1.2 refuses, where
        it reads the field, one that is no pool of a queue declared above."""
        ref = self.ref()
        queue = self.queues.get(ref.name)
        if ref.field is not None and queue is not None and ref.field not in {p.name for p in queue.pools}:
            raise self.error(self.toks[self.i - 1], f"`{ref.name}[…].{ref.field}` reads the request's "
                             f"attribute, which is no member's: write `{ref.name}.{ref.field}`")
        return ref

    def _matching(self, k: int) -> int | None:
        """The `]` closing the `[` at k, counting square brackets only (as 0.1.2 does)."""
        depth = 0
        while k < len(self.toks):
            kind = self.toks[k].kind
            if kind == "LBracket":
                depth += 1
            elif kind == "RBracket":
                depth -= 1
                if depth == 0:
                    return k
            elif kind == EOF:
                return None
            k += 1
        return None


_STATEMENT_WORDS = frozenset("""set observe turn end request mark hold grow drop release load run
branch loop choose prefill decode tool transfer""".split())


class _Nesting:
    def __init__(self, parser: _Parser):
        self.parser = parser

    def __enter__(self):
        self.parser.depth += 1
        if self.parser.depth > MAX_NESTING:
            tok = self.parser.peek()
            raise self.parser.error(tok, f"the program nests deeper than {MAX_NESTING} levels")

    def __exit__(self, *exc):
        self.parser.depth -= 1
        return False


class _Items:
    """What the top level has seen, for the duplicate rules."""

    def __init__(self):
        self.workload: ast.Workload | None = None
        self.session: ast.Session | None = None
        self.server = False


class _QueueBody:
    def __init__(self, name: str, roles: tuple = ()):
        self.name = name
        self.roles = roles
        self.pools: list = []
        self.serve = None
        self.serve_tok = None
        self.latency = None
        self.nic = None
        self.entries: list = []
        self.after_serve = False
        self.entry_source = None        # the `from` of the entry being read


def _offset(text: str, line: int, col: int) -> int:
    starts = _line_starts(text)
    return starts[line - 1] + col - 1 if line <= len(starts) else -1


_starts_cache: dict = {}


def _line_starts(text: str) -> list[int]:
    """The offset each line of `text` starts at, kept for the last text asked
    about: `_text` is asked about a program's text once per statement, and
    walking the lines each time made it quadratic in the program's length."""
    starts = _starts_cache.get(text)
    if starts is None:
        starts = [0]
        pos = text.find("\n")
        while pos >= 0:
            starts.append(pos + 1)
            pos = text.find("\n", pos + 1)
        _starts_cache.clear()
        _starts_cache[text] = starts
    return starts


def _header_names(e, bindings: dict, depth: int = 0):
    """The names a hold's header reads, an `at admission` binding read in it
    standing for its value (0.1.2 writes the value in before it checks)."""
    for name, is_ref in queues.names_read(e):
        if name.name in bindings and depth < len(bindings):
            yield from _header_names(bindings[name.name], bindings, depth + 1)
        else:
            yield name, is_ref


def _allocated_pools(stmt):
    """The pools a statement of an entry allocates, each with how it does."""
    if isinstance(stmt, ast.Hold):
        if stmt.lease is not None:
            yield stmt.lease.pool, "leases"
        for hp in stmt.pools:
            yield hp.pool, "holds"
    elif isinstance(stmt, ast.Serving):
        for pool in (stmt.growing, stmt.dest, stmt.source):     # a transfer's `to` pool before its `from`
            if pool is not None:
                yield pool, "holds"
    elif isinstance(stmt, ast.QueueCall) and stmt.dest is not None:
        yield stmt.dest, "holds"


class _Folder(Folder):
    """Folds an expression over `let`s to a number, or None when it is not a
    constant the parser can see (array sizes: spec 01 §6.4)."""

    def __init__(self, lets: dict, deps: dict, sizes: bool = False, strict_logic: bool = False):
        self.lets = lets
        self.deps = deps
        self.sizes = sizes
        self.strict_logic = strict_logic    # both sides of `&&`/`||` must fold (a link's latency)
        self.used: set[str] = set()

    def fold(self, expr) -> tuple[float | None, frozenset]:
        try:
            value = self.value(expr, {})
        except _NotConstant:
            value = None
        if not self.sizes:
            # A let keeps only the lets it names: storing every let's full closure
            # made a chain of N lets quadratic.  A size needs the closure.
            return value, frozenset(self.used)
        deps, todo = set(self.used), list(self.used)
        while todo:
            for name in self.deps.get(todo.pop(), ()):
                if name not in deps:
                    deps.add(name)
                    todo.append(name)
        return value, frozenset(deps)

    def name(self, e) -> float:
        if e.name in self.lets:
            self.used.add(e.name)
            if self.lets[e.name] is None:
                raise _NotConstant
            return self.lets[e.name]
        if e.name == "inf":
            return math.inf
        if e.name in NAMED_NUMBERS:
            return NAMED_NUMBERS[e.name]
        raise _NotConstant

    def call(self, e) -> None:
        if PURE_FUNCTIONS.get(e.name) != len(e.args):
            raise _NotConstant

    def not_pure(self, e, nargs: int) -> Exception:
        return _NotConstant()

    def other(self, e, agg: dict) -> float:
        raise _NotConstant

    def terms(self, e, n: int, agg: dict) -> float:
        try:
            return super().terms(e, n, agg)
        finally:
            self.used.discard(e.var)   # the index, were it also a `let`'s name, is no dependency

    def count(self, e, agg: dict) -> int:
        if self.sizes:
            raise _NotConstant         # an array size may not aggregate
        count = self.value(e.count, agg)
        if not (count >= 1 and count == math.floor(count)) or count > 4096:
            raise _NotConstant
        return int(count)


class _NotConstant(Exception):
    pass

"""Link: the parser's tree → the IR (pyserq IR version 10).

The linker resolves every name (attribute → `let` → context variable → `inf`),
folds constants, writes out aggregates, splices `request;` with the server,
rewrites serving forms and `at admission` bindings into kernel statements,
numbers the attributes and blocks the way pyserq does, and applies the run
settings and their overrides.  The IR's own checks (moments, gauges, flows)
run last, in `sq.ir.validate`.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, replace
from typing import Any

from sq import ir
from sq.frontend import ast as A
from sq.frontend import cycles
from sq.frontend import queues
from sq.errors import SqError
from sq._support.number_format import display
from sq._support.settings import horizon_notes
from sq.errors import Span
from sq.frontend.fold import Folder
from sq.frontend.words import NAMED_NUMBERS

# ---------------------------------------------------------------- the language's names

# source name -> IR name, for context variables
CTX = {"now": "Now", "waited": "Waited", "size": "Size", "age": "Age", "last": "Last",
       "waiting": "Queued", "present": "N", "tokens": "Ntok", "decoders": "Ndec",
       "prefilled": "Npre", "residents": "Nres", "kv_decode": "Kvb", "kv_prefill": "Kvp",
       "attention": "Attn", "decoding": "Decoding", "admission": "Admission", "remaining": "Remaining",
       "kv_decode_max": "Kvm"}
RENAMED_CTX = {"n": "present", "queued": "waiting", "ntok": "tokens", "ndec": "decoders",
               "npre": "prefilled", "nres": "residents", "kvb": "kv_decode", "kvp": "kv_prefill",
               "attn": "attention"}
PURE = {"min": ("Min", 2), "max": ("Max", 2), "pow": ("Pow", 2), "abs": ("Abs", 1),
        "floor": ("Floor", 1), "ceil": ("Ceil", 1), "sqrt": ("Sqrt", 1), "exp": ("Exp", 1),
        "ln": ("Ln", 1), "sin": ("Sin", 1), "cos": ("Cos", 1)}   # sin, cos: an extension (words.py)
STAGE_FNS = {"queue": "Queue", "busy": "Busy", "work": "Work", "est_lambda": "EstLambda",
             "est_rho": "EstRho", "est_wait": "EstWait", "budget_left": "BudgetLeft"}
POOL_FNS = {"used": "Used", "free": "Free", "holders": "Holders", "queued": "Queued",
            "cachedin": "CachedIn"}
DISTS = {"exp": ("Exp", 1), "det": ("Det", 1), "uniform": ("Uniform", 2), "erlang": ("Erlang", 2),
         "h2": ("H2", 2), "bernoulli": ("Bernoulli", 1)}
BINARY = {"+": "Add", "-": "Sub", "*": "Mul", "/": "Div", "^": "Pow", "<": "Lt", "<=": "Le",
          ">": "Gt", ">=": "Ge", "==": "Eq", "!=": "Ne", "&&": "And", "||": "Or"}
# functions whose value is live state: an attribute set from one must not feed a hold header
LIVE_FNS = frozenset(("used", "free", "holders", "queued", "cachedin", "queue", "busy", "work",
                      "budget_left", "est_lambda", "est_rho", "est_wait", "price"))
MAX_TERMS = 4096
NAN_HELP = "help: a constant is a number or `inf`; `0/0` and `inf - inf` are not"
CONST_HELP = "help: declare this constant or use the name of an existing constant"


def closest_name(name: str, candidates) -> str | None:
    """The declared name an unknown one is most likely a typo of, as 0.1.2 picks it:
    the one nearest in edit distance, at most 1 edit away for a name of up to 3
    characters and 2 beyond; no suggestion when two are equally near."""
    limit = 1 if len(name) <= 3 else 2
    best, best_d, tie = None, limit + 1, False
    for other in dict.fromkeys(candidates):
        d = _edit_distance(name, other, limit)
        if d < best_d:
            best, best_d, tie = other, d, False
        elif d == best_d:
            tie = True
    return None if best is None or tie else best


def _edit_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance (insert, delete, substitute), or `limit + 1` once it surely exceeds `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        if min(cur) > limit:
            return limit + 1
        prev = cur
    return min(prev[-1], limit + 1)


def _span(node: Any, length: int | None = None) -> Span | None:
    s = getattr(node, "span", None)
    if s is None:
        return None
    return Span(s.line, s.col, length if length is not None else s.length, s.file)


class _Ctx:
    """Where an expression stands while it is linked: aggregate indices, bindings."""

    def __init__(self, agg: dict | None = None, subst: dict | None = None):
        self.agg = agg or {}
        self.subst = subst or {}

    def with_agg(self, var: str, value: float) -> "_Ctx":
        return _Ctx({**self.agg, var: value}, self.subst)


@dataclass
class Family:
    """A declared pool or stage family: its first row in the table and its size."""

    name: str
    base: int
    count: int
    array: bool
    span: Any
    kind: Any = None            # a stage's ast kind
    order: int = 0              # position among items, for "declared above"


@dataclass
class Settings:
    """The keyword overrides of `compile_program` (None = keep the program's)."""

    sets: dict = field(default_factory=dict)
    seed: Any = None
    horizon: Any = None
    warmup: Any = None
    arrivals: Any = None
    trace: Any = None


# ---------------------------------------------------------------- constant folding

class _Constants(Folder):
    """The linker's folder: the final `let` values; what is no constant is an error naming it."""

    def __init__(self, linker: "Linker"):
        self.linker = linker

    def name(self, e: Any) -> float:
        lets = self.linker.lets
        if e.name in lets:
            return lets[e.name]
        if e.name == "inf":
            return math.inf
        if e.name in NAMED_NUMBERS:
            return NAMED_NUMBERS[e.name]
        raise self.linker.error(f"`{e.name}` is not a constant", e, CONST_HELP, length=len(e.name))

    def count(self, e: Any, agg: dict) -> int:
        return self.linker._agg_count(e, agg)

    def call(self, e: Any) -> None:
        if e.name == "blocksize":
            raise self.linker.error("`blocksize` is not a constant: in a constant position (a `let`, `cap`, "
                                    "`block`, an array size, `horizon`, a rate) name the value with a `let` "
                                    "both use", e, length=len(e.name))

    def not_pure(self, e: Any, nargs: int) -> Exception:
        return self.linker.error(f"`{e.name}` with {nargs} argument(s) is not a constant function", e,
                                 length=len(e.name))

    def other(self, e: Any, agg: dict) -> float:
        if isinstance(e, A.Ref):
            return self.value(A.Name(e.span, e.name), agg)
        if isinstance(e, A.Dotted):
            raise self.linker.error(f"`{e.base}.{e.field}` is not a constant", e, CONST_HELP)
        if isinstance(e, A.Sample):
            raise self.linker.error("a constant cannot sample", _after_tilde(e), length=len(e.dist))
        raise self.linker.error(f"unexpected expression {type(e).__name__}", e)


def _reads_now(e: Any) -> bool:
    """Whether an expression names `now` (a poisson rate that does is a time-varying one)."""
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, A.Name) and node.name == "now":
            return True
        if isinstance(node, (tuple, list)):
            stack.extend(node)
        elif dataclasses.is_dataclass(node):
            stack.extend(getattr(node, f.name) for f in dataclasses.fields(node))
    return False


# ---------------------------------------------------------------- the linker

def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _find_word(text: str, word: str, start: int, after: str = "") -> int:
    """Where `word` (right after `after`, else not after a word character or
    `.`) stands whole in `text` at or after `start`; -1 if nowhere.  A plain
    scan, not a regular expression: compiling one per name made a program of
    many `let`s slow."""
    needle = after + word
    edge = not after and _is_word_char(word[:1])
    i = text.find(needle, start)
    while i >= 0:
        end = i + len(needle)
        whole_end = end == len(text) or not _is_word_char(text[end])
        whole_start = not edge or i == 0 or not (_is_word_char(text[i - 1]) or text[i - 1] == ".")
        if whole_end and whole_start:
            return i + len(after)
        i = text.find(needle, i + 1)
    return -1


class Linker:
    def __init__(self, prog: A.Program, settings: Settings | None = None):
        self.prog = prog
        self.source = prog.source
        self._source_lines: list[str] | None = None
        self.settings = settings or Settings()
        self.lets: dict[str, float] = {}
        self.let_spans: dict[str, Any] = {}
        self.let_overrides: dict[str, frozenset] = {}   # a let -> the --set names its value comes from
        self.arrive_value: Any = None                  # the arrival's rate or gap, as written
        self.arrive_rate: Any = None                   # a renewal's `rate(r)`, as written: its errors point there
        self.setting_values: dict[str, Any] = {}       # run setting -> its value as written (not overridden)
        self.pools: dict[str, Family] = {}
        self.stages: dict[str, Family] = {}
        self.pool_rows: list[ir.Pool] = []
        self.stage_rows: list[ir.Stage] = []
        self.attrs: list[str] = list(ir.BUILTIN_ATTRS)
        self.attr_spans: dict[str, Any] = {}
        self.observes: list[str] = []
        self.blocks: list[list] = []
        self.terms = 0.0
        self.bound_only: set[str] = set()   # binding names that exist only inside their hold
        self.items = list(prog.items)
        self.folder = _Constants(self)

    # ------------------------------------------------------------ errors
    def error(self, message: str, node: Any = None, *notes: str, phase: str = "link",
              length: int | None = None) -> SqError:
        return SqError(message, _span(node, length) if node is not None else None,
                       source=self.source, phase=phase, notes=notes)

    # ------------------------------------------------------------ lets
    def _fold_lets(self) -> None:
        sets = dict(self.settings.sets or {})
        declared = [it.name for it in self.items if isinstance(it, A.Let)]
        for name in sets:
            if name not in declared:
                avail = ", ".join(dict.fromkeys(declared)) or "none"
                raise self.error(f"unknown --set constant `{name}`",
                                 None, f"help: --set overrides a declared `let`; available constants: {avail}")
            if name in self.prog.size_lets:
                raise self.error(f"--set {name} affects an array size resolved during parsing")
        for it in self.items:
            if not isinstance(it, A.Let):
                continue
            self._check_defined_name(it.name, it, "a `let` constant")
            if it.name in sets:
                value = self._set_value(it.name, sets[it.name], it)
                self.let_overrides[it.name] = frozenset((it.name,))
            else:
                value = self.fold(it.value)
                if math.isnan(value):
                    raise self.nan(f"`let {it.name}`", it.value)
                self.let_overrides[it.name] = self._overrides_read(it.value)
            self.lets[it.name] = value
            self.let_spans.setdefault(it.name, self._word_at(it.span, it.name).span)

    def _set_value(self, name: str, value: Any, node: Any) -> float:
        if isinstance(value, str):
            from sq.frontend import parser  # noqa: PLC0415  (only overrides need the parser here)
            try:
                expr = parser.parse_expression(value)
            except SqError as e:
                where = f"{e.line}:{e.col}: " if e.span else ""
                raise self.error(f"invalid expression in set `{name} = {value}`: {where}{e.message}") from None
            try:
                value = self.fold(expr)
            except SqError as e:
                # placed in the override's own text, not the program's: no position, as in 0.1.2
                raise SqError(f"--set {name}: {e.message}", None, phase=e.phase, notes=e.notes) from None
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(f"--set {name}: the value must be a number or an expression")
        value = float(value)
        if math.isnan(value):
            raise self.error(f"--set {name}: the value is NaN", None, NAN_HELP)
        return value

    def _overrides_read(self, e: Any) -> frozenset:
        """The --set names whose values a constant expression reads (through other `let`s too)."""
        return frozenset(name for x in A.subexpressions(e) if isinstance(x, A.Name)
                         for name in self.let_overrides.get(x.name, ()))

    def override_notes(self, e: Any) -> tuple[str, ...]:
        """Under an error placed at a constant expression: which of its values an override gave,
        since the text there is not where the value was written."""
        return tuple(f"note: the value here comes from --set {name}, not from the program text"
                     for name in sorted(self._overrides_read(e)))

    def _check_defined_name(self, name: str, node: Any, what: str) -> None:
        if name in CTX or name == "inf":
            read = "read in every expression" if name in ("now", "inf") else f"read in {_ctx_phrase(name)}"
            raise self.error(f"`{name}` is a name the language supplies, {read}; {what} named `{name}` "
                             f"would be read there instead", None,
                             f"help: give the {what[2:] if what.startswith('a ') else what} a name of its own "
                             f"(docs/api/context.md lists the context variables)")

    def fold(self, e: Any, agg: dict | None = None) -> float:
        """Fold a constant expression over the `let`s (and aggregate indices `agg`); SqError where it is none."""
        return self.folder.value(e, agg or {})

    def const(self, e: Any, what: str) -> float:
        """A constant position (rates, caps, run settings): final `let` values, NaN refused."""
        v = self.fold(e)
        if math.isnan(v):
            raise self.nan(what, e)
        return v

    def nan(self, what: str, e: Any) -> SqError:
        """0.1.2 places a NaN constant at its expression only when that is a call."""
        return self.error(f"{what} is NaN", e if isinstance(e, A.Call) else None, NAN_HELP,
                          length=len(e.name) if isinstance(e, A.Call) else None)

    def _agg_count(self, e: A.Aggregate, agg: dict) -> int:
        label = f"`{e.op} {e.var} in`"
        clash = self._agg_clash(e.var)
        if clash:
            raise self.error(f"{label}: `{e.var}` is also {clash}", e, "help: give the index a name of its own",
                             length=len(e.op))
        n = self.fold(e.count, agg)
        if math.isnan(n):
            raise self.error(f"{label}'s count is NaN", e, NAN_HELP, length=len(e.op))
        if math.isinf(n) or not (n >= 1 and n == int(n)):
            raise self.error(f"{label}'s count must be a positive integer, found {display(n)}", e,
                             length=len(e.op))
        self.terms += n          # a float, as in 0.1.2: a huge count is printed whole, rounded as f64 adds
        if self.terms > MAX_TERMS:
            raise self.error(f"{label}: the program's aggregates write out {display(self.terms)} terms, "
                             f"at most {MAX_TERMS}",
                             e, length=len(e.op))
        return int(n)

    def _agg_clash(self, var: str) -> str | None:
        if var in self.lets:
            return "a `let` constant"
        if var in self.attrs or var in getattr(self, "attr_set", ()):
            return "a session attribute"
        if var in self.pools:
            return "a pool"
        if var in self.stages:
            return "a stage"
        if var in CTX or var == "inf":
            return "a name the language supplies"
        return None

    # ------------------------------------------------------------ declarations
    def _declare(self) -> None:
        """Number pools and stages in declaration order (queues expand in place)."""
        for order, it in enumerate(self.items):
            if isinstance(it, A.Pool):
                self._add_family(self.pools, it.name, it.size, it, order, "pool")
            elif isinstance(it, A.Stage):
                self._add_family(self.stages, it.name, it.size, it, order, "stage", it.kind)

    def _add_family(self, table: dict, name: str, size: int | None, node: Any, order: int, what: str,
                    kind: Any = None) -> None:
        if name in table:
            first = table[name].span
            first = self._word_at(first, name).span
            raise self.error(f"duplicate {what} `{name}`", self._word_at(node.span, name),
                             f"note: first declared at {first.line}:{first.col}",
                             "help: rename or remove the duplicate declaration", length=len(name))
        rows = self.pool_rows if what == "pool" else self.stage_rows
        count = size if size is not None else 1
        table[name] = Family(name, len(rows), count, size is not None, node.span, kind, order)
        for i in range(count):
            index = i if size is not None else None
            if what == "pool":
                rows.append(ir.Pool(name=name, index=index))
            else:
                rows.append(ir.Stage(name=name, kind="Delay", index=index))

    # ------------------------------------------------------------ references
    def ref(self, node: Any, table: dict, what: str, c: _Ctx, call: Any = None) -> dict:
        """A pool or stage reference (Name or Ref) → {"base", "count", "index"}."""
        if isinstance(node, A.Name):
            name, index = node.name, None
        elif isinstance(node, A.Ref):
            name, index = _ref_name(node), node.index
        elif isinstance(node, A.Dotted):
            name, index = f"{node.base}.{node.field}", None
        else:
            raise self.error(f"expected a {what} name", node)
        fam = table.get(name)
        if fam is None:
            # 0.1.2 underlines a dotted name's first word only
            raise self.error(f"unknown {what} `{name}`", node, *self._family_hint(name, table, what),
                             length=len(node.base) if isinstance(node, A.Dotted) else len(name))
        if index is None:
            if fam.array:   # located at the function in an argument, unlocated as a statement's target
                raise self.error(f"{what} `{name}` is an array; index it", call,
                                 length=None if call is None else len(call.name))
            return {"base": fam.base, "count": fam.count, "index": None}
        return {"base": fam.base, "count": fam.count, "index": self._index(index, fam, what, node, c)}

    def _index(self, index: Any, fam: Family, what: str, node: Any, c: _Ctx) -> Any:
        if type(index) is A.Name and index.name not in c.agg and index.name not in self.lets \
                and index.name != "inf":
            return self.expr(index, c)     # what `fold` would refuse, without raising (the common `kv[r]`)
        try:
            value = self.fold(index, c.agg)
        except SqError:
            return self.expr(index, c)
        if not (0 <= value < fam.count) or value != int(value):
            raise self.error(f"{what} `{fam.name}[{display(value)}]` is out of range: `{fam.name}` has "
                             f"{fam.count} member(s)", node, length=len(fam.name))
        return {"Num": float(value)}

    # ------------------------------------------------------------ expressions
    def expr(self, e: Any, c: _Ctx | None = None) -> Any:
        c = c or _Ctx()
        kind = type(e)     # exact types, commonest first: the expression classes have no subclasses
        if kind is A.Binary:
            return {"Binary": [BINARY[e.op], self.expr(e.left, c), self.expr(e.right, c)]}
        if kind is A.Name:
            return self._name(e, c)
        if kind is A.Num:
            return {"Num": ir.num_to_json(float(e.value))}
        if kind is A.Call:
            return self._call(e, c)
        if kind is A.Ref:           # a reference given to a numeric parameter reads the bare name
            if e.field is not None and (e.name not in self.qx.queues or self._queue_pool(e.name, e.field)):
                # 0.1.2 names the dotted pair and underlines the family's name only.
                raise self.error(f"unknown name `{e.name}.{e.field}`", e,
                                 "help: declare a `let` constant or assign a session attribute before using it",
                                 length=len(e.name))
            if e.field is not None:
                raise self.error(f"`{e.name}[…].{e.field}` reads the request's attribute, which is no member's: "
                                 f"write `{e.name}.{e.field}`", self._word_at(e.span, e.field, after="."),
                                 phase="parse")
            return self._name(A.Name(e.span, e.name), c)
        if kind is A.Dotted:
            full = f"{e.base}.{e.field}"
            if full in self.attr_set:
                return {"Attr": self._slot(full)}
            if self.qx.queues:      # 0.1.2 says this whenever the program has a queue at all
                raise self.error(f"`{full}`: no entry of `{e.base}` marks or sets `{e.field}`, and `{e.base}` has "
                                 f"no pool `{e.field}`", e, phase="parse", length=1)
            raise self.error(f"unknown name `{full}`", e, *self._name_hint(full), length=len(e.base))
        if kind is A.Unary:
            return {"Unary": ["Neg" if e.op == "-" else "Not", self.expr(e.operand, c)]}
        if kind is A.Cond:
            return {"Cond": [self.expr(e.test, c), self.expr(e.then, c), self.expr(e.other, c)]}
        if kind is A.Sample:
            if e.dist not in DISTS:
                raise self.error(f"unknown distribution `{e.dist}`", _after_tilde(e), length=len(e.dist))
            tag, n = DISTS[e.dist]
            if len(e.args) != n:
                raise self.error(f"`~{e.dist}` takes {n} argument(s)", _after_tilde(e), length=len(e.dist))
            return {"Sample": [tag, [self.expr(a, c) for a in e.args]]}
        if kind is A.Aggregate:
            n = self._agg_count(e, c.agg)
            terms = [self.expr(e.body, c.with_agg(e.var, float(j))) for j in range(n)]
            out = terms[0]
            for t in terms[1:]:
                if e.op == "sum":
                    out = {"Binary": ["Add", out, t]}
                else:
                    out = {"Call": ["Min" if e.op == "min" else "Max", [{"Expr": out}, {"Expr": t}]]}
            return out
        raise self.error(f"unexpected expression {type(e).__name__}", e)

    def _name(self, e: A.Name, c: _Ctx) -> Any:
        name = e.name
        if name in c.agg:
            return {"Num": ir.num_to_json(c.agg[name])}
        if name in c.subst:
            return self.expr(c.subst[name], _Ctx(c.agg, {k: v for k, v in c.subst.items() if k != name}))
        if name in self.attr_set:
            if name in self.bound_only and name not in self.visible_bindings:
                raise self.error(f"`{name}` is read outside the body of the hold that binds it",
                                 self._binding_site(name, e), length=len(name))
            return {"Attr": self._slot(name)}
        if name in self.lets:
            return {"Num": ir.num_to_json(self.lets[name])}
        if name in CTX:
            return {"Ctx": CTX[name]}
        if name == "inf":
            return {"Num": "inf"}
        if name in NAMED_NUMBERS:      # an extension: after lets and attributes, so 0.1.2's own `pi` wins
            return {"Num": ir.num_to_json(NAMED_NUMBERS[name])}
        if name in RENAMED_CTX:
            raise self.error(f"the context variable `{name}` is now `{RENAMED_CTX[name]}`", e, length=len(name))
        # a stray `self` reaches here only as a whole argument: 0.1.2 calls it an unknown name
        if name in self.bound_only:
            raise self.error(f"`{name}` is read outside the body of the hold that binds it",
                             self._binding_site(name, e), length=len(name))
        # an own pool's name an entry passed on (`kv` → `P.kv`) is underlined as written
        length = e.span.length if "." in name and e.span is not None else len(name)
        raise self.error(f"unknown name `{name}`", e, *self._name_hint(name), length=length)

    def _name_hint(self, name: str) -> list[str]:
        """The notes under an unknown name: the one close constant or attribute, or how to declare one."""
        other = closest_name(name, [*self.lets, *self.attr_set])
        if other is None:
            return ["help: declare a `let` constant or assign a session attribute before using it"]
        notes = [f"help: did you mean name `{other}`?"]
        where = self.let_spans.get(other)
        if where is None and self.attr_spans.get(other) is not None:
            where = self._word_at(self.attr_spans[other], other).span
        if where is not None:
            notes.append(f"note: `{other}` declared at {where.line}:{where.col}")
        return notes

    def _call(self, e: A.Call, c: _Ctx) -> Any:
        name, args = e.name, e.args
        if name == "blocksize":
            return self._blocksize(e, c)
        if name in PURE:
            tag, n = PURE[name]
            self._arity(e, n)
            return {"Call": [tag, [{"Expr": self.expr(a, c)} for a in args]]}
        if name in POOL_FNS or name in STAGE_FNS:
            self._arity(e, 1)
            if name in POOL_FNS:
                return {"Call": [POOL_FNS[name], [{"Pool": self._ref_arg(e, args[0], self.pools, "pool", c)}]]}
            return {"Call": [STAGE_FNS[name], [{"Stage": self._ref_arg(e, args[0], self.stages, "stage", c)}]]}
        if name == "price":
            self._arity(e, 3)
            return {"Call": ["Price", [{"Stage": self._ref_arg(e, args[0], self.stages, "stage", c)},
                                       {"Expr": self.expr(args[1], c)}, {"Expr": self.expr(args[2], c)}]]}
        raise self.error(f"unknown function `{name}`", e, length=len(name))

    def _arity(self, e: A.Call, n: int) -> None:
        if len(e.args) != n:
            raise self.error(f"`{e.name}` takes {n} argument(s), got {len(e.args)}", e, length=len(e.name))

    def _queue_pool(self, queue: str, field: str) -> bool:
        """`field` is a pool of queue `queue` (a member's pool read as a number is an unknown name)."""
        return any(p.name == field for p in self.qx.queues[queue].item.pools)

    def _ref_arg(self, call: A.Call, arg: Any, table: dict, what: str, c: _Ctx) -> dict:
        if not isinstance(arg, (A.Name, A.Ref, A.Dotted)):
            raise self.error(f"`{call.name}` expects a {what} name here", call, length=len(call.name))
        if what == "stage" and isinstance(arg, A.Ref) and arg.field is not None:
            # 0.1.2 names queue pools member by member (`P[0].kv`) but reads `Q[1].nic` as an attribute
            return self.expr(arg, c)
        return self.ref(arg, table, what, c, call)

    def _blocksize(self, e: A.Call, c: _Ctx) -> Any:
        if len(e.args) != 1:
            raise self.error(f"`blocksize` takes one pool, got {len(e.args)} argument(s)", e, length=9)
        arg = e.args[0]
        if not isinstance(arg, (A.Name, A.Ref)):
            raise self.error("`blocksize` takes a pool, not an expression", e, length=9)
        if isinstance(arg, A.Ref) and arg.index is not None and _draws(arg.index):
            raise self.error("`blocksize`'s index draws, and the folded number would drop the draw", arg)
        self.ref(arg, self.pools, "pool", c, e)   # the member must exist, as anywhere a pool is named
        # a queue member's pool (`P[i].kv`) is the family `P.kv`
        name = f"{arg.name}.{arg.field}" if isinstance(arg, A.Ref) and arg.field else arg.name
        pool = self._pool_item(self.pools[name])
        block = ast_last(pool.options, A.Block)
        if block is None:
            raise self.error(f"`blocksize({name})`: pool `{name}` has no `block`", arg)
        return {"Num": ir.num_to_json(self.const(block.value, f"pool `{name}`: block"))}

    def _pool_item(self, fam: Family) -> A.Pool:
        return self.items[fam.order]

    # ------------------------------------------------------------ workload and the session body
    def _workload(self) -> A.Workload | None:
        wls = [it for it in self.items if isinstance(it, A.Workload)]
        return wls[-1] if wls else None

    def _session_body(self, wl: A.Workload | None) -> list:
        top = [it for it in self.items if isinstance(it, A.Session)]
        servers = [it for it in self.items if isinstance(it, A.Server)]
        server = servers[-1] if servers else None
        client = wl.session if wl else None
        if client is None:
            if server is not None:
                raise self.error("`server` needs a `session` inside `workload` that says `request;`", server,
                                 phase="parse")
            return list(top[-1].body) if top else []
        requests = _find_requests(client.body)
        if server is None:
            if any(r.gateway is None for r in requests):
                raise self.error("`request;` needs a `server` block; name a gateway with `request NAME;`",
                                 next(r for r in requests if r.gateway is None), phase="parse")
            if not requests:
                raise self.error("a `session` inside `workload` is written against a `server` block; name a "
                                 "gateway with `request NAME;`, or write `session` at top level", client,
                                 phase="parse")
        elif not any(r.gateway is None for r in requests):
            raise self.error("`server` is never requested: the workload's session has no `request;`", server,
                             phase="parse")
        return self._splice(client.body, server.body if server else ())

    def _splice(self, body: tuple, server: tuple) -> list:
        out = []
        for s in body:
            if isinstance(s, A.Request) and s.gateway is None:
                out.extend(server)
            else:
                out.append(_map_blocks(s, lambda b: tuple(self._splice(b, server))))
        return out

    # ------------------------------------------------------------ serving forms and bindings
    def _expand_block(self, body: Any) -> list:
        out: list = []
        for s in body:
            out.extend(self._expand(s))
        return out

    def _expand(self, s: Any) -> list:
        if isinstance(s, A.Serving):
            return self._serving(s)
        if isinstance(s, (A.Mark,)):
            raise self.error("`mark` is a queue entry's statement: it names a moment the caller reads", s,
                             phase="parse")
        if isinstance(s, A.QueueCall):
            return self._expand_block(self.qx.call(s))
        if isinstance(s, A.Request):
            if s.gateway is not None:
                return self._expand_block(self.qx.request(s))
            raise self.error("`request` is a statement of the `session` inside `workload`", s, phase="parse")
        if isinstance(s, A.Run) and not s.stages:
            raise self.error("`run` names a stage: `run STAGE (X)`", s, phase="parse")
        if isinstance(s, A.Hold):
            # the parser's checks of `at admission`: the bindings when it reads them, what the
            # body needs of them once the body (and the holds inside it) is read
            subst = self._bindings(s)
            held = replace(s, body=tuple(self._expand_block(s.body)))
            for b in self._read_bindings(held):
                self._check_body_binding(b, subst[b.name])
            return [held]
        return [_map_blocks(s, lambda b: tuple(self._expand_block(b)))]

    def _position(self, s: Any) -> tuple:
        site = s.via[0].span if getattr(s, "via", ()) else s.span
        return (site.line, site.col)

    def _stages_above(self, s: Any) -> list[Family]:
        pos = self._position(s)
        return [f for f in self.stages.values() if (f.span.line, f.span.col) < pos]

    def _serving(self, s: A.Serving) -> list:
        role = s.role
        above = self._stages_above(s)
        if s.on:
            refs = []
            for r in s.on:
                rname = r.name if isinstance(r, (A.Name, A.Ref)) else None
                if rname not in {f.name for f in above}:
                    raise self.error(f"`{role} on {rname}`: no stage `{rname}` is declared above", r,
                                     "help: declare the stage above this statement", phase="parse")
                refs.append(r)
        else:
            fam = self._role_stage(s, role, above)
            refs = [A.Ref(s.span, fam.name, s.index) if s.index is not None else A.Name(s.span, fam.name)]
        if role == "transfer":
            if s.source is None or s.dest is None:
                raise self.error("`transfer` without `from P to Q (n)`: a KV transfer leaves the lease (or hold) "
                                 "on P and enters the hold on Q", s,
                                 "help: write `transfer (w) from P to Q (n);`, or `run link (w);` for a link "
                                 "that only takes time", phase="parse")
            if s.growing is not None:
                raise self.error("`transfer … from P to Q`: a transfer does not grow a pool", s, phase="parse")
            run = A.Run(s.span, stages=tuple(refs), mode=None, work=s.work, via=s.via)
            wait = queues.latency_runs(s, tuple(refs), self.qx.queues, self._latency) if s.on else []
            return wait + [run, A.Load(s.span, pool=s.dest, amount=s.amount, via=s.via),
                    A.Release(s.span, pool=s.source, via=s.via)]
        mode = None
        if role in ("prefill", "decode") and len(refs) == 1 and self._is_step(refs[0].name):
            mode = role
        return [A.Run(s.span, stages=tuple(refs), mode=mode, work=s.work, growing=s.growing, via=s.via)]

    def _binding_site(self, name: str, use: Any) -> Any:
        sp = self.attr_spans.get(name)
        return A.Name(sp, name) if sp is not None else use

    def _lines(self) -> list[str]:
        """The program's lines, split once (at "\n" only, as the lexer counts them)."""
        if self._source_lines is None:
            self._source_lines = self.source.split("\n")
        return self._source_lines

    def _word_at(self, span: Any, word: str, after: str = "") -> Any:
        """The span of `word` at or after `span` on its line (items keep their keyword's position)."""
        if span is None or span.file != self.prog.file or not self.source:
            return A.Name(span, word) if span is not None else None
        lines = self._lines()
        if not 0 < span.line <= len(lines):
            return A.Name(span, word)
        at = _find_word(lines[span.line - 1], word, span.col, after)
        if at < 0:
            return A.Name(span, word)
        return A.Name(Span(span.line, at + 1, len(word), span.file), word)

    def _after_value(self, b: A.Binding) -> Any:
        """The token after a binding's value (`,` or `)`), where 0.1.2 reports what it found there."""
        sp = b.span
        if sp is None or sp.file != self.prog.file or not self.source:
            return b
        lines = self._lines()
        if not 0 < sp.line <= len(lines):
            return b
        line, col, depth = sp.line, sp.col - 1, 0
        eq = lines[line - 1].find("=", col)   # the value starts after the binding's `=`
        if eq < 0:
            return b
        col = eq + 1
        while line <= len(lines):
            text = lines[line - 1]
            while col < len(text):
                ch = text[col]
                if ch in "([{":
                    depth += 1
                elif ch in ")]}" or ch == ",":
                    if depth == 0:
                        return A.Name(Span(line, col + 1, 1, sp.file), ch)
                    if ch != ",":
                        depth -= 1
                col += 1
            line, col = line + 1, 0
        return b

    def _latency(self, e: Any, stage: str) -> float:
        try:
            v = self.fold(e)
        except SqError:
            raise self.error("`latency` is a number or a constant over `let`s: a link's fixed wait, the same for "
                             "every transfer", e, phase="parse") from None
        if math.isnan(v):
            raise self.nan(f"`let {stage}.time`", e)
        return v

    def _is_step(self, name: str) -> bool:
        fam = self.stages.get(name)
        return fam is not None and isinstance(fam.kind, A.Step)

    def _role_stage(self, s: A.Serving, role: str, above: list[Family]) -> Family:
        named = {"prefill": ("prefill",), "decode": ("decode",), "tool": ("tool",),
                 "transfer": ("link", "transfer")}[role]
        found = [f for f in above if f.name in named]
        if not found and role in ("prefill", "decode"):
            found = [f for f in above if isinstance(f.kind, A.Step)]
        if not found:
            hint = ", declare a `step` engine," if role in ("prefill", "decode") else ","
            stage_word = " or ".join(f"`{n}`" for n in named)
            raise self.error(f"no stage declared above plays `{role}`: name a stage {stage_word}{hint} or write "
                             f"`{role} on STAGE (...)`", s, phase="parse")
        if len(found) > 1:
            names = ", ".join(f.name for f in found)
            raise self.error(f"several stages play `{role}` ({names}): write `{role} on STAGE (...)`", s,
                             phase="parse")
        return found[0]

    # ------------------------------------------------------------ attributes and observations
    def _collect_names(self, init: list, turn: list, body: list) -> None:
        """Slot order: the built-ins, then first assignment in init, turn, session."""
        self.attr_set = set(self.attrs)
        # each attribute's slot, for `_slot` (`attrs.index` scans the list: a program
        # with hundreds of attributes spent milliseconds there)
        self.attr_slots = {name: k for k, name in reversed(list(enumerate(self.attrs)))}
        self.visible_bindings: set[str] = set()
        for stmt in A.walk(init + turn + body):
            if isinstance(stmt, (A.Set, A.Choose)):
                self._new_attr(stmt.name, stmt)
            elif isinstance(stmt, A.Hold):
                for b in self._read_bindings(stmt):
                    self._new_attr(b.name, b, binding=True)
            if isinstance(stmt, A.Observe) and stmt.name not in self.observes:
                self.observes.append(stmt.name)

    def _slot(self, name: str) -> int:
        """`self.attrs.index(name)`, by the table `_collect_names` keeps."""
        slot = self.attr_slots.get(name)
        return self.attrs.index(name) if slot is None else slot

    def _new_attr(self, name: str, node: Any, binding: bool = False) -> None:
        if name in self.attr_set:
            if not binding:
                self.bound_only.discard(name)
            return
        self.attr_slots.setdefault(name, len(self.attrs))
        self.attrs.append(name)
        self.attr_set.add(name)
        self.attr_spans[name] = node.span
        if binding:
            self.bound_only.add(name)

    def _read_bindings(self, h: A.Hold) -> list:
        """The bindings the hold's body reads: they become `set`s at the top of the body.

        Several passes ask this of the same hold and `_reads` walks the whole body,
        so the answer is kept, by the hold's identity (the entry keeps the hold
        alive, so its id is not reused while it is cached)."""
        if not h.bindings:
            return []
        cache = self.__dict__.setdefault("_read_bindings_cache", {})
        hit = cache.get(id(h))
        if hit is not None and hit[0] is h:
            return list(hit[1])
        read = _reads(h.body)
        found = [b for b in h.bindings if b.name in read]
        cache[id(h)] = (h, found)
        return list(found)

    def _check_name_clashes(self) -> None:
        for name in self.attrs[len(ir.BUILTIN_ATTRS):]:
            node = self.attr_spans.get(name)
            if name in self.lets:
                raise self.error(f"`{name}` is both a `let` constant and a session attribute")
            self._check_defined_name(name, node, "a session attribute")

    # ------------------------------------------------------------ statements → blocks
    def _block(self, body: list, index: int, holds: tuple = ()) -> list:
        """Block `index` of the IR; each statement's node is kept for its place (`_places`)."""
        out = []
        for s in body:
            made = self._stmt(s, holds)
            for k in range(len(made)):
                self.stmt_nodes[("statement", index, len(out) + k)] = s
            out.extend(made)
        return out

    def _new_block(self, body: list, holds: tuple) -> int:
        index = len(self.blocks)
        self.blocks.append([])
        self.blocks[index] = self._block(body, index, holds)
        return index

    def _stmt(self, s: Any, holds: tuple) -> list:
        c = _Ctx()
        if isinstance(s, A.Set):
            return [{"Set": [self._slot(s.name), self.expr(s.value, c)]}]
        if isinstance(s, A.Observe):
            return [{"Observe": [self.observes.index(s.name), self.expr(s.value, c)]}]
        if isinstance(s, A.Turn):
            return ["Turn"]
        if isinstance(s, A.End):
            return ["End"]
        if isinstance(s, A.Loop):
            return [{"Loop": self._new_block(list(s.body), holds)}]
        if isinstance(s, A.Branch):
            return [self._branch(s, holds)]
        if isinstance(s, A.Choose):
            keys = [self.expr(k, c) for k in s.keys]
            return [{"Choose": {"var": self._slot(s.name), "count": self.expr(s.count, c), "key": keys}}]
        if isinstance(s, A.Hold):
            return [self._hold(s, holds)]
        if isinstance(s, A.Grow):
            return [{"Grow": [self.ref(s.pool, self.pools, "pool", c), self.expr(s.amount, c)]}]
        if isinstance(s, A.Drop):
            return [{"Drop": self.ref(s.pool, self.pools, "pool", c)}]
        if isinstance(s, A.Release):
            ref = self.ref(s.pool, self.pools, "pool", c)
            self._check_held("release", s.pool, holds, lease_ok=True)
            return [{"Release": ref}]
        if isinstance(s, A.Load):
            ref = self.ref(s.pool, self.pools, "pool", c)
            self._check_held("load", s.pool, holds, lease_ok=False)
            return [{"Load": [ref, self.expr(s.amount, c)]}]
        if isinstance(s, A.Run):
            return [self._run(s)]
        raise self.error(f"unexpected statement {type(s).__name__}", s)

    def _branch(self, s: A.Branch, holds: tuple) -> dict:
        c = _Ctx()
        if s.chance:
            test = {"Sample": ["Bernoulli", [self.expr(s.test, c)]]}
        else:
            test = self.expr(s.test, c)
            if "Num" in test:
                self._check_guard(s, ir.num_from_json(test["Num"], "guard"))
        then = self._new_block(list(s.then), holds)
        other = self._new_block(list(s.other or ()), holds)
        return {"Branch": [test, then, other]}

    def _check_guard(self, s: A.Branch, v: float) -> None:
        if v in (0.0, 1.0):
            return
        text = display(v)   # the folded guard, not its source text
        if 0 < v < 1:
            self._lint(1, f"`branch ({text})` is not a test: a guard is 0 or 1, and a constant strictly between "
                          f"them is a probability. Write `branch with ({text})`.")
        else:
            self._lint(1, f"`branch ({text})` is not a test: a guard is 0 or 1.")

    def _lint(self, kind: int, message: str) -> None:
        """A finding of 0.1.2's last link pass: all are reported together, by kind (live state read
        into a header, constant branch guards, `reuse`/`cached` without `cache`), then in text order."""
        self.lints.append((kind, len(self.lints), message))

    def _raise_lints(self) -> None:
        if self.lints:   # a message found twice is reported once
            raise self.error("\n".join(dict.fromkeys(m for _, _, m in sorted(self.lints))))

    def _run(self, s: A.Run) -> dict:
        c = _Ctx()
        refs = [self.ref(r, self.stages, "stage", c) for r in s.stages]
        names = [r.name for r in s.stages]
        kinds = [self.stages[n].kind for n in names]
        is_step = isinstance(kinds[0], A.Step)
        if is_step != (s.mode is not None):
            raise self.error("`prefill`/`decode` are required on a step stage and not allowed elsewhere")
        if s.growing is not None and not is_step:
            raise self.error("`growing` needs a step stage")
        run = {"stage": refs[0], "mode": {"prefill": "Prefill", "decode": "Decode", None: "Plain"}[s.mode],
               "work": self.expr(s.work, c),
               "growing": None if s.growing is None else self.ref(s.growing, self.pools, "pool", c)}
        if len(refs) > 1:
            run["also"] = refs[1:]
        return {"Run": run}

    def _check_held(self, verb: str, pool: Any, holds: tuple, lease_ok: bool) -> None:
        name = _ref_name(pool)
        text = _ref_text(pool)
        mine = [h for h in holds if any(_ref_name(p.pool) == name for p in h.pools)]
        if mine:
            if isinstance(pool, A.Ref) and pool.index is not None:
                if not any(_ref_text(p.pool) == text for h in mine for p in h.pools):
                    raise self.error(f"`{verb} {name}[…]` outside a hold of `{name}[…]`: write the pool as the "
                                     f"hold does, index included")
            return
        leases = self._leases(name)
        shown = f"{name}[…]" if isinstance(pool, A.Ref) and pool.index is not None else name
        if leases:   # 0.1.2 then takes the statement for a misspelt lease (a `load` never uses one)
            if lease_ok and (not isinstance(pool, A.Ref) or pool.index is None or text in leases):
                return
            raise self.error(f"`{verb} {shown}` outside a hold of `{shown}`: write the pool as the hold does, "
                             f"index included")
        if verb == "release":
            raise self.error(f"`release {shown}` outside a hold of `{shown}`: it takes an enclosing hold's "
                             f"allocation, or a lease of it")
        raise self.error(f"`load {shown}` outside a hold of `{shown}`: it acts on an enclosing hold's allocation")

    def _leases(self, name: str) -> list[str]:
        """How the program's leases of pool family `name` are written."""
        return [_ref_text(s.lease.pool) for s in A.walk(self.body_for_leases)
                if isinstance(s, A.Hold) and s.lease is not None and _ref_name(s.lease.pool) == name]

    def _hold(self, h: A.Hold, holds: tuple) -> dict:
        subst = self._bindings(h)
        c = _Ctx(subst=subst)
        pools = []
        for hp in h.pools:
            if isinstance(hp.pool, A.Dotted) or isinstance(hp.pool, A.Ref) and hp.pool.field is not None:
                q, p = (hp.pool.base, hp.pool.field) if isinstance(hp.pool, A.Dotted) else (hp.pool.name,
                                                                                              hp.pool.field)
                raise self.error(f"`hold {q}.{p}`: `{p}` is a pool of queue `{q}`, and only `{q}`'s entries hold "
                                 f"it; call one (`{q}.verb (…)`)", hp.pool, phase="parse")
            ref = self.ref(hp.pool, self.pools, "pool", _Ctx())
            units = self.expr(hp.units, c)
            pools.append([ref, units, None if hp.reserve is None else self.expr(hp.reserve, c)])
        if h.reuse is not None and h.cache is None:
            self._lint(2, f"`reuse` on a hold on `{_ref_text(h.pools[0].pool)}` that has no `cache` clause: such a "
                             f"hold consumes nothing of the session's cached prefix, so the bound has nothing to "
                             f"bound. Write `cache (0)` to consume the prefix and keep nothing, or `cache (ℓ)` to "
                             f"keep ℓ.")
        reuse = None if h.reuse is None else self.expr(h.reuse, c)
        if h.cache is None and "cached" in _names_read(h.body, stop_at_holds=True):
            pname = _ref_text(h.pools[0].pool)
            self._lint(2, f"`cached` is read in a hold on `{pname}` that has no `cache` clause: such a hold "
                          f"consumes nothing of the session's cached prefix, so `cached` is 0 there. Write "
                          f"`cache (0)` to consume the prefix and keep nothing, `cache (ℓ)` to keep ℓ of what "
                          f"was computed, or read `cached` above the hold, where the admission that set it is "
                          f"the enclosing hold's.")
        sets = [A.Set(b.span, name=b.name, value=subst[b.name]) for b in self._read_bindings(h)]
        # 0.1.2's order: the header, `cache`, the body, then the lease
        cache = None if h.cache is None else self.expr(h.cache, c)
        saved = set(self.visible_bindings)
        self.visible_bindings |= {b.name for b in sets}
        body = self._new_block(sets + list(h.body), holds + (h,))
        self.visible_bindings = saved
        lease = None
        if h.lease is not None:
            text = _ref_text(h.lease.pool)
            if not any(_ref_text(hp.pool) == text for hp in h.pools):
                raise self.error(f"`lease {text}`: the hold does not take that pool (write it as the hold does, "
                                 f"index included)")
            lease = [self.ref(h.lease.pool, self.pools, "pool", _Ctx()), self.expr(h.lease.time, c)]
        return {"Hold": {"pools": pools, "reuse": reuse, "body": body, "cache": cache, "lease": lease}}

    def _bindings(self, h: A.Hold) -> dict:
        subst: dict = {}
        names = [b.name for b in h.bindings]
        for i, b in enumerate(h.bindings):
            if b.name in names[:i]:   # placed, like 0.1.2, at the `=` after the name
                raise self.error(f"`{b.name}` is bound twice in one `at admission`",
                                 self._word_at(b.span, "=", after=""), phase="parse")
            read = _names_read_expr(b.value)
            later = [n for n in names[i + 1:] if n in read]
            if later:
                raise self.error(f"`{b.name}` reads `{later[0]}`, which is bound after it: a binding sees the "
                                 f"ones before it", b, phase="parse")
            if _draws(b.value):
                raise self.error(f"`{b.name}` draws a sample: a `at admission` binding is substituted, so a name "
                                 f"used twice would draw twice", self._after_value(b), phase="parse")
            subst[b.name] = _substitute(b.value, subst)
        return subst

    def _check_body_binding(self, b: A.Binding, value: Any) -> None:
        """A binding the body reads becomes a `set` at the top of the body: its name must be its
        own, and its value must read only attributes and constants."""
        name = b.name
        clash = None
        if name in ir.BUILTIN_ATTRS:
            clash = "an attribute the scheduler sets"
        elif name in CTX or name == "inf":
            clash = "a name the language supplies"
        elif name in self.pools:
            clash = "a pool"
        elif name in self.stages:
            clash = "a stage"
        elif name in self.lets:
            clash = "a `let` constant"
        elif name in self.assigned:
            clash = "an attribute the program sets"
        if clash:
            raise self.error(f"the body reads `{name}`, which is also {clash}: the body would not say which it "
                             f"means", b, "help: rename the binding", phase="parse")
        if name in _names_read_expr(b.value):
            raise self.error(f"the binding `{name}` reads itself", b, phase="parse")
        for e in A.subexpressions(value):
            if isinstance(e, A.Call) and e.name not in PURE:
                hint = ("help: in the body read `cached`, the units the admission consumed"
                        if e.name == "cachedin" else "help: name what the body needs with a `set` in the body")
                raise self.error(f"the body reads `{name}`, and `{name}` reads `{e.name}(…)`: the body sees a "
                                 f"binding that reads only attributes and constants", b, hint, phase="parse")
            if isinstance(e, A.Name) and e.name in CTX:
                raise self.error(f"the body reads `{name}`, and `{name}` reads `{e.name}`: the body sees a "
                                 f"binding that reads only attributes and constants", b,
                                 "help: name what the body needs with a `set` in the body", phase="parse")

    # ------------------------------------------------------------ pools and stages
    def _finish_pools(self) -> None:
        for fam in self.pools.values():
            item = self._pool_item(fam)
            opts = item.options
            cap = ast_last(opts, A.Cap)
            block = ast_last(opts, A.Block)
            evict = ast_last(opts, A.Evict)
            preempt = ast_last(opts, A.Preempt)
            order = ast_last(opts, A.WaitOrder)
            via = ast_last(opts, A.AdmitVia)
            spill = ast_last(opts, A.Spill)
            capv = math.inf if cap is None else self.const(cap.value, f"pool `{fam.name}`: cap")
            blockv = None
            if block is not None:
                blockv = self.const(block.value, f"pool `{fam.name}`: block")
                if not blockv > 0:
                    raise self.error(f"pool `{fam.name}`: block must be positive", block.value,
                                     *self.override_notes(block.value))
            for i in range(fam.count):
                row = self.pool_rows[fam.base + i]
                row.cap, row.block = capv, blockv
                row.evict = "Lru" if evict is None or evict.keys is None else {
                    "By": [self.expr(k) for k in evict.keys]}
                row.preempt = "Lifo" if preempt is not None and preempt.policy == "lifo" else "None"
                row.queue = None if order is None or order.keys is None else [self.expr(k) for k in order.keys]
                row.admit_via = None
                if spill is not None:
                    to = self._family(spill.target, self.pools, "pool", _named(spill.target, spill.target_span, spill))
                    link = self._family(spill.via, self.stages, "stage", _named(spill.via, spill.via_span, spill))
                    row.spill = ir.Spill(to.base, link.base, self.expr(spill.amount), self.expr(spill.when))
                if via is not None:
                    row.admit_via = self._paired(fam, via.stage, self.stages, i, "admit via", via)

    def _family(self, name: str, table: dict, what: str, node: Any) -> Family:
        fam = table.get(name)
        if fam is None:
            raise self.error(f"unknown {what} `{name}`", node, *self._family_hint(name, table, what))
        return fam

    def _family_hint(self, name: str, table: dict, what: str) -> list[str]:
        """The notes under an unknown pool or stage: the one close name, or how to declare one."""
        other = closest_name(name, table)
        if other is None:
            return [f"help: declare this {what} or use the name of an existing {what}"]
        where = self._word_at(table[other].span, other.rsplit(".", 1)[-1]).span
        return [f"help: did you mean {what} `{other}`?", f"note: `{other}` declared at {where.line}:{where.col}"]

    def _paired(self, owner: Family, name: str, table: dict, i: int, option: str, node: Any = None) -> int:
        what = "stage" if table is self.stages else "pool"
        other = self._family(name, table, what, node)
        if other.array and owner.array and other.count == owner.count:
            return other.base + i
        if not other.array:
            return other.base
        raise self.error(f"`{owner.name}`: `{option}` names a family of {other.count}, and `{owner.name}` is a "
                         f"family of {owner.count if owner.array else 1}: one for one, or one for all")

    def _finish_stages(self) -> None:
        for fam in self.stages.values():
            kind = self._stage_kind(fam)
            for i in range(fam.count):
                k = kind(i) if callable(kind) else kind
                self.stage_rows[fam.base + i].kind = k

    def _stage_kind(self, fam: Family) -> Any:
        k = fam.kind
        if isinstance(k, A.Delay):
            return "Delay"
        if isinstance(k, A.Fifo):
            n = 1.0 if k.servers is None else self.const(k.servers, f"stage `{fam.name}`: fifo server count")
            if math.isinf(n) or not (n >= 1 and n == int(n)):
                raise self.error(f"stage `{fam.name}`: fifo servers must be a positive integer", k.servers)
            return {"Fifo": _saturate_u64(n)}
        if isinstance(k, A.Ps):
            return {"Ps": self.expr(k.capacity)}
        if isinstance(k, A.Step):
            opts = k.options
            cost = ast_last(opts, A.Cost)
            if cost is None:
                raise self.error("a step stage needs `cost`", k, phase="parse")
            budget = ast_last(opts, A.Budget)
            chunk = ast_last(opts, A.Chunk)
            serve = ast_last(opts, A.ServeOrder)
            memory = ast_last(opts, A.Memory)
            body = {"budget": {"Num": "inf"} if budget is None else self.expr(budget.value),
                    "cost": self.expr(cost.value),
                    "chunk": {"Num": 0.0} if chunk is None else self.expr(chunk.value),
                    "serve": self._serve(serve), "memory": None}
            if memory is None:
                return {"Step": body}

            def member(i: int) -> dict:
                return {"Step": {**body, "memory": self._paired(fam, memory.pool, self.pools, i, "memory",
                                                                 self._word_at(memory.span, memory.pool))}}
            return member
        raise self.error(f"unknown stage kind {type(k).__name__}")

    def _serve(self, serve: Any) -> Any:
        if serve is None or serve.order == "admission":
            return {"By": []}
        if serve.order == "decode_first":
            return {"By": [{"Cond": [{"Ctx": "Decoding"}, {"Num": 0.0}, {"Num": 1.0}]}]}
        if serve.order == "exclusive_prefill":
            return "ExclusivePrefill"
        return {"By": [self.expr(k) for k in serve.keys]}

    # ------------------------------------------------------------ gauges, hidden, share
    def _gauges(self) -> list:
        out, seen = [], set()
        for it in self.items:
            if not isinstance(it, A.Gauge):
                continue
            if it.name in seen:
                raise self.error(f"gauge `{it.name}`: declared twice", self._word_at(it.span, it.name),
                                 phase="validate")
            if it.name in self.observes:
                raise self.error(f"gauge `{it.name}`: is also an `observe`: one name would be two statistics",
                                 self._word_at(it.span, it.name), phase="validate")
            seen.add(it.name)
            out.append(ir.Gauge(it.name, self._gauge_expr(it)))
        return out

    def _gauge_expr(self, g: A.Gauge) -> Any:
        try:
            return self.expr(g.value)
        except SqError as e:
            if e.phase != "link":
                raise
            raise SqError(f"gauge `{g.name}`: {e.message}", e.span, source=e.source, phase=e.phase,
                          notes=e.notes) from None

    def _hidden(self, wl: A.Workload | None) -> list[int]:
        out: list[int] = []
        for n in (wl.hidden if wl else ()):
            name = n.name
            if name in ("cached", "computed"):
                raise self.error(f"hidden `{name}`: the scheduler sets it, so it cannot be hidden from the "
                                 f"scheduler", n, length=len(name), phase="validate")
            if name not in self.attr_set or name in self.bound_only:
                raise self.error(f"hidden `{name}`: no `set` or `choose` makes it a session attribute")
            slot = self._slot(name)
            if slot in out:
                raise self.error(f"hidden `{name}` twice", n, length=len(name), phase="validate")
            out.append(slot)
        return out

    def _share(self) -> str | None:
        shares = [it for it in self.items if isinstance(it, A.Share)]
        if not shares:
            return None
        return "MaxMin" if shares[-1].policy == "maxmin" else "Bottleneck"

    # ------------------------------------------------------------ arrival and run settings
    def _arrival(self, wl: A.Workload | None, prog: ir.Program) -> None:
        arrive = wl.arrive if wl else None
        self.arrive_value = arrive.value if arrive is not None else None
        if arrive is None or arrive.form == "none":
            prog.arrival = "None"
        elif arrive.form == "poisson" and _reads_now(arrive.value):
            prog.arrival = {"PoissonNow": self.expr(arrive.value)}     # an extension (sq/traces/rate.py)
        elif arrive.form == "poisson":
            prog.arrival = {"Poisson": self.const(arrive.value, "the poisson rate")}
        elif arrive.form in ("closed", "batch"):
            n = self.const(arrive.value, "the closed population" if arrive.form == "closed" else "the batch size")
            prog.arrival = {arrive.form.capitalize(): _saturate_u64(n)}
        elif arrive.form == "renewal" and arrive.options:       # an extension: `renewal(g) rate(r)`
            (_, (rate,)), = arrive.options
            self.arrive_rate = rate
            prog.arrival = {"RenewalRate": {"gap": self.expr(arrive.value), "rate": self.expr(rate)}}
        elif arrive.form == "renewal":
            prog.arrival = {"Renewal": self.expr(arrive.value)}
        elif arrive.form == "modulated":                        # an extension: `poisson(r1, …) leave(q1, …)`
            opts = dict(arrive.options)
            prog.arrival = {"Modulated": {
                "rates": [self.const(r, f"phase {i + 1}'s poisson rate") for i, r in enumerate(opts["rates"])],
                "leave": [self.const(q, f"phase {i + 1}'s leaving rate") for i, q in enumerate(opts["leave"])]}}
            self.arrive_value = arrive
        elif arrive.form == "replay":
            prog.arrival = {"Replay": self._replay(arrive)}
            self.arrive_value = arrive.value if arrive.value is not None else arrive
        trace = wl.trace if wl else None
        if trace is not None:
            prog.trace, prog.trace_ordered = trace.path, trace.ordered
            if trace.prefix is not None:
                prog.trace_prefix = self.const(trace.prefix, "the prefix cache's capacity")
        if self.settings.trace is not None:
            prog.trace = str(self.settings.trace)

    def _replay(self, arrive: A.Arrive) -> dict:
        """`arrive replay(k) window(a, b) keep(p) copies(n, s)`'s constants (sq.ir.REPLAY_KEYS);
        the IR's check judges them."""
        opts = dict(arrive.options)
        def const(word, k, what, default):
            return self.const(opts[word][k], what) if word in opts else default
        speed = self.const(arrive.value, "the replay speed") if arrive.value is not None else 1.0
        window = ([const("window", 0, "the replay window's start", 0.0), const("window", 1, "the replay window's end", 0.0)]
                  if "window" in opts else None)
        return {"speed": speed, "window": window, "keep": const("keep", 0, "the replay's keep", 1.0),
                "copies": const("copies", 0, "the replay's copies", 1.0),
                "shift": const("copies", 1, "the replay's shift", 0.0)}

    def _run_settings(self, prog: ir.Program) -> None:
        st = self.settings
        given = {k for k in ("horizon", "warmup", "seed", "arrivals") if getattr(st, k) is not None}
        values: dict[str, float] = {}
        for it in self.items:
            if isinstance(it, A.RunSettings):
                for s in it.settings:
                    if s.key in given:   # a keyword replaces the value unread, as in 0.1.2
                        continue
                    values[s.key] = self.const(s.value, "arrivals" if s.key == "arrivals" else f"the {s.key}")
                    self.setting_values[s.key] = s.value
        horizon = _override(st.horizon, values.get("horizon"), "horizon")
        warmup = _override(st.warmup, values.get("warmup"), "warmup")
        if horizon is None:
            raise self.error("no horizon (run { horizon T; })")
        warmup = 0.0 if warmup is None else warmup
        if math.isfinite(horizon) and not warmup < horizon:   # (an infinite horizon is refused by the run)
            # placed at the setting at fault, if the text wrote it (a keyword's value has no place)
            at = None if given & {"horizon", "warmup"} else self.setting_values.get(ir.window_item(horizon)[1])
            raise self.error("warmup must be below the horizon", at, *horizon_notes(horizon),
                             *self.override_notes(at))
        prog.horizon, prog.warmup = horizon, warmup
        if st.seed is not None:     # checked by compile (sq.frontend.compile._check_overrides)
            prog.seed = st.seed
        elif "seed" in values:
            prog.seed = _saturate_u64(values["seed"])
        arrivals = st.arrivals if st.arrivals is not None else values.get("arrivals")
        if arrivals is not None:
            if isinstance(arrivals, bool) or not isinstance(arrivals, (int, float)):
                raise SqError("arrivals must be a number", phase="link")
            # an override is a whole number already checked to fit u64: kept exact, as 0.1.2 does
            prog.arrivals = arrivals if isinstance(arrivals, int) else _saturate_u64(float(arrivals))

    # ------------------------------------------------------------ run
    def run(self) -> ir.Program:
        self.body_for_leases: list = []
        wl = self._workload()
        self._fold_lets()
        self.items, table = queues.declarations(self.items, self.error, self._latency)
        hidden = {n.name for n in (wl.hidden if wl else ())}
        self.qx = queues.Expander(table, self.error, self._latency,
                                  lambda name: (name in self.lets or name in CTX   # a retired context name is not seen
                                                or name in ("inf",) or name in hidden or name in self.pools
                                                or name in self.stages))
        self.qx.is_constant = lambda name: name in self.lets or name == "inf"
        self.qx.check_entries()
        self._declare()
        body = self._session_body(wl)
        self.body_for_leases = body
        return self._link_rest(wl, body)

    def _link_rest(self, wl: A.Workload | None, body: list) -> ir.Program:
        """Link in 0.1.2's order, so a program with several faults reports the one it does:
        the parser's checks (serving forms, bindings, queues), then pools, stages, the
        arrival, init, turn, the session, gauges, `hidden` and the run settings."""
        init = list(wl.init.body) if wl and wl.init else []
        turn = list(wl.turn.body) if wl and wl.turn else []
        self.assigned = {s.name for s in A.walk(init + turn + body) if isinstance(s, (A.Set, A.Choose))}
        body = self._expand_block(body)

        self.body_for_leases = body
        if wl and wl.trace and wl.trace.prefix is not None:
            # a shared prefix cache sets these at `turn;` (an extension): attributes the engine writes
            self.attrs.extend(n for n in ir.PREFIX_ATTRS if n not in self.attrs)
        self._collect_names(init, turn, body)
        # names bound by `at admission` that a body reads (and nothing else assigns)
        self.binding_names = {b.name: b for s in A.walk(body) if isinstance(s, A.Hold)
                              for b in self._read_bindings(s) if b.name in self.bound_only}
        self._check_binding_reach(body, frozenset())
        self._check_name_clashes()
        prog = ir.Program()
        self._finish_pools()
        self._finish_stages()
        self._arrival(wl, prog)
        for stmt in init + turn:
            if not isinstance(stmt, (A.Set, A.Observe)):
                raise self.error("workload blocks may only `set` and `observe`")
        self.lints: list = []
        self.live_seen: set = set()
        self._check_live_headers(body)
        self.blocks = [[], [], []]
        self.stmt_nodes: dict = {}
        self.blocks[0] = self._block(init, 0)
        self.blocks[1] = self._block(turn, 1)
        self.blocks[2] = self._block(body, 2)
        prog.attrs, prog.observes = self.attrs, self.observes
        prog.pools, prog.stages, prog.blocks = self.pool_rows, self.stage_rows, self.blocks
        prog.gauges = self._gauges()
        prog.hidden = self._hidden(wl)
        self._run_settings(prog)
        self._raise_lints()
        prog.share = self._share()
        prog.places = self._places()
        try:
            ir.validate(prog)
        except SqError as e:
            raise prog.locate(e) from None
        # Last: 0.1.2 accepts such a program (and overflows its stack running it), so
        # every fault it reports comes first.
        cycles.check({name: fam.kind for name, fam in self.stages.items()},
                     lambda message, call: self.error(message, call))
        return prog

    def _places(self) -> ir.Places:
        """Where the text writes what the IR's checks and the lowering may refuse (sq.ir.Places)."""
        spans: dict = {}

        def put(item: tuple, node: Any, notes: tuple = ()) -> None:
            span = _span(node)
            if span is not None:
                spans[item] = (span, notes)
        for table, what in ((self.pools, "pool"), (self.stages, "stage")):
            for fam in table.values():
                for row in range(fam.base, fam.base + fam.count):
                    put((what, row), self._word_at(fam.span, fam.name.rsplit(".", 1)[-1]))
        gauges = [it for it in self.items if isinstance(it, A.Gauge)]
        for k, it in enumerate(gauges):
            put(("gauge", k), self._word_at(it.span, it.name))
        shares = [it for it in self.items if isinstance(it, A.Share)]
        if shares:
            put(("share",), shares[-1])
        put(("arrival",), self.arrive_value, self.override_notes(self.arrive_value))
        put(("arrival", "rate"), self.arrive_rate, self.override_notes(self.arrive_rate))
        for key, value in self.setting_values.items():
            put(("run", key), value, self.override_notes(value))
        for item, node in self.stmt_nodes.items():     # a run-time error names its statement
            put(item, node)
        return ir.Places(self.source, spans)

    def _check_binding_reach(self, body: list, visible: frozenset) -> None:
        """A binding's name means something only inside the hold that binds it (the parser's check)."""
        bound = self.binding_names
        for s in body:
            if isinstance(s, A.Hold):
                inner = visible | {b.name for b in s.bindings}
                header = [x for hp in s.pools for x in (hp.units, hp.reserve) if x is not None]
                header += [x for x in (s.reuse, s.cache) if x is not None]
                if s.lease is not None:
                    header.append(s.lease.time)
                for e in header:
                    self._reach(e, inner, bound)
                for b in s.bindings:
                    self._reach(b.value, visible | {x.name for x in s.bindings}, bound)
                self._check_binding_reach(list(s.body), inner)
                continue
            for e in A.expressions_of(s):
                self._reach(e, visible, bound)
            for block in A.sub_blocks(s):
                self._check_binding_reach(list(block), visible)

    def _reach(self, e: Any, visible: frozenset, bound: dict) -> None:
        if not bound:       # no binding is read outside its hold's body: nothing to find
            return
        for x in A.subexpressions(e):
            if isinstance(x, A.Name) and x.name in bound and x.name not in visible:
                raise self.error(f"`{x.name}` is read outside the body of the hold that binds it",
                                 bound[x.name], length=len(x.name), phase="parse")

    def _check_live_headers(self, body: list, live: dict | None = None) -> None:
        """A `set` from live state feeding a later hold header reads the wrong moment's value.

        As in 0.1.2 the check follows blocks: a `set` reaches the holds after it in its
        block and in the branches and loops nested there, not a hold's body, and
        nothing set in a nested block reaches out of it.
        """
        live = {} if live is None else live
        for s in body:
            if isinstance(s, A.Set):
                calls = [e for e in A.subexpressions(s.value) if isinstance(e, A.Call) and e.name in LIVE_FNS]
                if calls:
                    live[s.name] = _expr_text(calls[0])
                else:
                    live.pop(s.name, None)
            elif isinstance(s, A.Hold):
                self._check_header(s, live)
                self._check_live_headers(list(s.body), {})
            else:
                for block in A.sub_blocks(s):
                    self._check_live_headers(list(block), dict(live))

    def _check_header(self, h: A.Hold, live: dict) -> None:
        subst: dict = {}
        for b in h.bindings:   # the header as the bindings leave it
            subst[b.name] = _substitute(b.value, subst)
        for hp in h.pools:
            parts = [x for x in (hp.units, hp.reserve) if x is not None]
            if hp is h.pools[0]:   # 0.1.2 counts `reuse` and `cache` under the first pool
                parts += [x for x in (h.reuse, h.cache) if x is not None]
            for e in (e for x in parts for e in A.subexpressions(_substitute(x, subst))):
                if isinstance(e, A.Name) and e.name in live and (id(h), e.name) not in self.live_seen:
                    self.live_seen.add((id(h), e.name))
                    self._lint(0, f"`{e.name}` reads {live[e.name]} when the session reaches the `set`, and is "
                                  f"used in the header of a hold on `{_ref_text(hp.pool)}`, which is read when the "
                                  f"session is admitted. Write `at admission ({e.name} = …)` if the admission value "
                                  f"is what you meant.")


# ---------------------------------------------------------------- tree helpers

def _after_tilde(e: A.Sample) -> Any:
    """Where 0.1.2 places errors about a draw: its distribution's name, after the `~`."""
    sp = e.span
    return A.Name(Span(sp.line, sp.col + 1, len(e.dist), sp.file), e.dist)


def ast_last(options: Any, kind: type) -> Any:
    return A.last_option(options, kind)


def _ctx_phrase(name: str) -> str:
    return ir.ctx_phrase(CTX[name])


def _saturate_u64(x: float) -> int:
    if math.isnan(x) or x <= 0:
        return 0
    if x >= 2.0**64:
        return 2**64 - 1
    return int(x)


def _override(kw: Any, value: float | None, what: str) -> float | None:
    if kw is None:
        return value
    if isinstance(kw, bool) or not isinstance(kw, (int, float)):
        raise SqError(f"{what} must be a number", phase="link")
    return float(kw)


def _ref_name(r: Any) -> str:
    """The family a reference names (`P[i].kv` names the queue pool `P.kv`)."""
    if isinstance(r, A.Ref) and r.field is not None:
        return f"{r.name}.{r.field}"
    if isinstance(r, A.Dotted):
        return f"{r.base}.{r.field}"
    return getattr(r, "name", "?")


def _ref_text(r: Any) -> str:
    if isinstance(r, A.Ref) and r.index is not None:
        return f"{_ref_name(r)}[{_expr_text(r.index)}]"
    return _ref_name(r)


_PREC = {"||": 1, "&&": 2, "<": 3, "<=": 3, ">": 3, ">=": 3, "==": 3, "!=": 3, "+": 4, "-": 4, "*": 5, "/": 5,
         "^": 7}


def _prec(e: Any) -> int:
    if isinstance(e, A.Cond):
        return 0
    if isinstance(e, A.Binary):
        return _PREC[e.op]
    if isinstance(e, (A.Unary, A.Sample)):
        return 6
    return 8


def _expr_text(e: Any) -> str:
    """An expression written back with only the parentheses it needs, as 0.1.2 prints it; also the
    canonical form that "written the same way" compares (so `kv[(j)]` is `kv[j]`)."""
    def wrap(x: Any, needs: bool) -> str:
        text = _expr_text(x)
        return f"({text})" if needs else text
    if isinstance(e, A.Num):
        return display(e.value)
    if isinstance(e, A.Name):
        return e.name
    if isinstance(e, A.Ref):
        return _ref_text(e)
    if isinstance(e, A.Dotted):
        return f"{e.base}.{e.field}"
    if isinstance(e, A.Unary):
        return f"{e.op}{wrap(e.operand, _prec(e.operand) < 6)}"
    if isinstance(e, A.Binary):
        p = _PREC[e.op]
        if e.op == "^":
            left, right = _prec(e.left) < 8, _prec(e.right) < 6
        elif p == 3:
            left, right = _prec(e.left) <= 3, _prec(e.right) <= 3
        else:
            left, right = _prec(e.left) < p, _prec(e.right) <= p
        return f"{wrap(e.left, left)} {e.op} {wrap(e.right, right)}"
    if isinstance(e, A.Cond):
        return f"{wrap(e.test, _prec(e.test) < 1)} ? {_expr_text(e.then)} : {_expr_text(e.other)}"
    if isinstance(e, (A.Call, A.Sample)):
        name = e.name if isinstance(e, A.Call) else "~" + e.dist
        return f"{name}({', '.join(_expr_text(a) for a in e.args)})"
    if isinstance(e, A.Aggregate):
        return f"{e.op} {e.var} in {wrap(e.count, not isinstance(e.count, (A.Num, A.Name)))} ({_expr_text(e.body)})"
    return repr(e)




def _draws(e: Any) -> bool:
    return any(type(x) is A.Sample for x in A.subexpressions(e))


def _names_read_expr(e: Any) -> set[str]:
    """The names of the bare names and references in `e`."""
    return {x.name for x in A.subexpressions(e) if type(x) is A.Name or type(x) is A.Ref}


def _names_read(body: Any, stop_at_holds: bool = False) -> set[str]:
    """Names the statements read; `stop_at_holds` leaves out nested holds' bodies."""
    names: set[str] = set()
    for s in body:
        for e in A.expressions_of(s):
            names |= _names_read_expr(e)
        if not (stop_at_holds and isinstance(s, A.Hold)):
            for b in A.sub_blocks(s):
                names |= _names_read(b, stop_at_holds)
    return names


def _reads(body: Any) -> set[str]:
    """The names statements read once `at admission` bindings are written in: a nested hold's
    header reads its bindings' values, and its body's reads of a binding it inserts are its own."""
    names: set[str] = set()
    for s in body:
        if not isinstance(s, A.Hold):
            for e in A.expressions_of(s):
                names |= _names_read_expr(e)
            for b in A.sub_blocks(s):
                names |= _reads(b)
            continue
        subst: dict = {}
        for b in s.bindings:
            subst[b.name] = _substitute(b.value, subst)
        header = [x for hp in s.pools for x in (hp.units, hp.reserve) if x is not None]
        header += [x for x in (s.reuse, s.cache, s.lease.time if s.lease else None) if x is not None]
        for x in header:
            names |= _names_read_expr(_substitute(x, subst))
        for hp in s.pools:
            names |= _names_read_expr(hp.pool)
        inner = _reads(s.body)
        inserted = {b.name for b in s.bindings if b.name in inner}
        for name in inserted:
            names |= _names_read_expr(subst[name])
        names |= inner - inserted
    return names


def _map_blocks(s: Any, f) -> Any:
    """The statement with `f` applied to each nested block."""
    if isinstance(s, (A.Hold, A.Loop)):
        return replace(s, body=f(s.body))
    if isinstance(s, A.Branch):
        return replace(s, then=f(s.then), other=None if s.other is None else f(s.other))
    return s


def _find_requests(body: Any) -> list:
    return [s for s in A.walk(body) if isinstance(s, A.Request)]


def _substitute(e: Any, subst: dict) -> Any:
    """`e` with bound names replaced by their (already substituted) expressions."""
    if not subst:
        return e
    if isinstance(e, A.Name) and e.name in subst:
        return subst[e.name]
    if isinstance(e, A.Unary):
        return replace(e, operand=_substitute(e.operand, subst))
    if isinstance(e, A.Binary):
        return replace(e, left=_substitute(e.left, subst), right=_substitute(e.right, subst))
    if isinstance(e, A.Cond):
        return replace(e, test=_substitute(e.test, subst), then=_substitute(e.then, subst),
                       other=_substitute(e.other, subst))
    if isinstance(e, (A.Call, A.Sample)):
        return replace(e, args=tuple(_substitute(a, subst) for a in e.args))
    if isinstance(e, A.Aggregate):
        inner = {k: v for k, v in subst.items() if k != e.var}
        return replace(e, count=_substitute(e.count, subst), body=_substitute(e.body, inner))
    if isinstance(e, A.Ref) and e.index is not None:
        return replace(e, index=_substitute(e.index, subst))
    return e


def link(prog: A.Program, settings: Settings | None = None) -> ir.Program:
    """Link a parsed program into the IR; every rejection is an SqError."""
    return Linker(prog, settings).run()


def _named(name: str, span: Any, node: Any) -> Any:
    """The name as written, to underline it whole; the node itself when its place is unknown."""
    return node if span is None else A.Name(span, name)


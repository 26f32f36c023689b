"""The IR: pyserq's IR version 10, as typed dataclasses that read and write its JSON.

The top level (program, pools, stages, gauges) is dataclasses.  Expressions
and statements keep the JSON's own serde shape (`{"Binary": ["Add", a, b]}`,
`{"Set": [slot, e]}`, `"Turn"`): that shape is the contract the lowering reads
(`Program.to_dict()`), so holding it as-is keeps one encoding, and
`check_expr`/`check_stmt` make sure a tree read from JSON has exactly it.

Numbers: a float, or the strings "inf" / "-inf" (IR v10 has no NaN).
A reference to a pool or stage member is `{"base", "count", "index"}`: the
family's first table row, its size, and an index expression (or null).
"""
from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass, field, fields
from typing import Any

from sq._support.deep import run_deep
from sq.errors import SqError
from sq._support.number_format import display
from sq._support.settings import ARRIVALS_NEED_OPEN, horizon_notes, is_u64, open_arrivals, window_error

IR_VERSION = 10

# The nine built-in attributes and the program keys that name their slots.
BUILTIN_ATTRS = ("cached", "serial", "turn_no", "new", "out", "think", "more", "forced", "computed")
SLOT_KEYS = ("slot_cached", "slot_serial", "slot_turn", "slot_new", "slot_out", "slot_think",
             "slot_more", "slot_forced", "slot_computed")

BINARY_OPS = frozenset("Add Sub Mul Div Pow Lt Le Gt Ge Eq Ne And Or".split())
UNARY_OPS = frozenset(("Neg", "Not"))
CTX_VARS = frozenset("Now Waited Size Age Last Queued N Ntok Ndec Npre Nres Kvb Kvp Attn "
                     "Decoding Admission Remaining Kvm".split())
DISTRIBUTIONS = {"Exp": 1, "Det": 1, "Uniform": 2, "Erlang": 2, "H2": 2, "Bernoulli": 1}
# function -> argument kinds, in the IR's own words
FUNCTIONS = {
    "Min": ("Expr", "Expr"), "Max": ("Expr", "Expr"), "Pow": ("Expr", "Expr"),
    "Abs": ("Expr",), "Floor": ("Expr",), "Ceil": ("Expr",), "Sqrt": ("Expr",),
    "Exp": ("Expr",), "Ln": ("Expr",), "Sin": ("Expr",), "Cos": ("Expr",),
    "Queue": ("Stage",), "Busy": ("Stage",), "Work": ("Stage",), "EstLambda": ("Stage",),
    "EstRho": ("Stage",), "EstWait": ("Stage",), "BudgetLeft": ("Stage",),
    "Price": ("Stage", "Expr", "Expr"),
    "Used": ("Pool",), "Free": ("Pool",), "Holders": ("Pool",), "Queued": ("Pool",),
    "CachedIn": ("Pool",),
}
# the functions of numbers alone (Sin and Cos: an extension)
PURE_CALLS = frozenset(("Min", "Max", "Pow", "Abs", "Floor", "Ceil", "Sqrt", "Exp", "Ln", "Sin", "Cos"))
RUN_MODES = frozenset(("Plain", "Prefill", "Decode"))
SHARES = frozenset(("MaxMin", "Bottleneck"))


def _bad(what: str) -> SqError:
    return SqError(f"IR: {what}", phase="validate")


def _copy_tree(v: Any) -> Any:
    """A deep copy of a JSON-shaped tree, without recursion."""
    if not isinstance(v, (dict, list)):
        return v
    root: list = [None]
    stack = [(v, root, 0)]
    while stack:
        src, parent, key = stack.pop()
        if isinstance(src, dict):
            dst: Any = {}
            for k, x in src.items():
                if isinstance(x, (dict, list)):
                    dst[k] = None
                    stack.append((x, dst, k))
                else:
                    dst[k] = x
        elif isinstance(src, list):
            dst = [None] * len(src)
            for i, x in enumerate(src):
                if isinstance(x, (dict, list)):
                    stack.append((x, dst, i))
                else:
                    dst[i] = x
        else:
            dst = src
        parent[key] = dst
    return root[0]


# ---------------------------------------------------------------- numbers

def num_to_json(x: float) -> Any:
    """A float as IR v10 writes it: finite floats as themselves, infinities as strings."""
    if math.isnan(x):
        raise _bad("NaN has no IR encoding")
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x)


def num_from_json(v: Any, where: str) -> float:
    if v == "inf":
        return math.inf
    if v == "-inf":
        return -math.inf
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _bad(f"{where}: expected a number, \"inf\" or \"-inf\", found {v!r}")
    return float(v)


def _float(v: Any, where: str) -> float:
    """A plain f64 field (no "inf" strings): a finite JSON number."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _bad(f"{where}: expected a number, found {v!r}")
    return float(v)


def _num(v: Any, where: str) -> Any:
    return num_to_json(num_from_json(v, where))


def _int(v: Any, where: str, lo: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise _bad(f"{where}: expected an integer >= {lo}, found {v!r}")
    return v


def _list(v: Any, where: str, n: int | None = None) -> list:
    if not isinstance(v, list) or (n is not None and len(v) != n):
        size = f" of {n}" if n is not None else ""
        raise _bad(f"{where}: expected a list{size}, found {v!r}"[:200])
    return v


def _unit_or_by(v: Any, unit: str, what: str, where: str) -> Any:
    """An order that is either the unit variant `unit` or {"By": [keys]} (evict, serve)."""
    tag, keys = _variant(v, where)
    if tag == unit and keys is None:
        return unit
    if tag == "By":
        return {"By": [check_expr(k, where) for k in _list(keys, where)]}
    raise _bad(f"{where}: unknown {what} {v!r}")


def _variant(v: Any, where: str) -> tuple[str, Any]:
    """A serde enum value: a bare string (unit variant) or a one-key object."""
    if isinstance(v, str):
        return v, None
    if isinstance(v, dict) and len(v) == 1:
        (k, body), = v.items()
        return k, body
    raise _bad(f"{where}: expected an enum value, found {v!r}"[:200])


# ---------------------------------------------------------------- expressions

def check_ref(v: Any, where: str, *, nullable: bool = False) -> Any:
    """A member reference {"base", "count", "index"}; returns its normalised copy."""
    if v is None and nullable:
        return None
    if not isinstance(v, dict) or set(v) != {"base", "count", "index"}:
        raise _bad(f"{where}: expected a reference {{base, count, index}}, found {v!r}"[:200])
    index = v["index"]
    return {"base": _int(v["base"], where), "count": _int(v["count"], where, 1),
            "index": None if index is None else check_expr(index, where)}


def check_expr(v: Any, where: str = "expression") -> Any:
    """Validate an expression tree and return its normalised copy (floats as floats)."""
    tag, body = _variant(v, where)
    if tag == "Num":
        return {"Num": _num(body, where)}
    if tag == "Attr":
        return {"Attr": _int(body, where)}
    if tag == "Ctx":
        if body not in CTX_VARS:
            raise _bad(f"{where}: unknown context variable {body!r}")
        return {"Ctx": body}
    if tag == "Binary":
        op, a, b = _list(body, where, 3)
        if op not in BINARY_OPS:
            raise _bad(f"{where}: unknown binary operator {op!r}")
        return {"Binary": [op, check_expr(a, where), check_expr(b, where)]}
    if tag == "Unary":
        op, a = _list(body, where, 2)
        if op not in UNARY_OPS:
            raise _bad(f"{where}: unknown unary operator {op!r}")
        return {"Unary": [op, check_expr(a, where)]}
    if tag == "Cond":
        c, a, b = _list(body, where, 3)
        return {"Cond": [check_expr(c, where), check_expr(a, where), check_expr(b, where)]}
    if tag == "Sample":
        dist, args = _list(body, where, 2)
        if dist not in DISTRIBUTIONS:
            raise _bad(f"{where}: unknown distribution {dist!r}")
        args = _list(args, where, DISTRIBUTIONS[dist])
        return {"Sample": [dist, [check_expr(a, where) for a in args]]}
    if tag == "Call":
        fn, args = _list(body, where, 2)
        if fn not in FUNCTIONS:
            raise _bad(f"{where}: unknown function {fn!r}")
        kinds = FUNCTIONS[fn]
        args = _list(args, where, len(kinds))
        return {"Call": [fn, [_check_arg(a, k, where) for a, k in zip(args, kinds)]]}
    raise _bad(f"{where}: unknown expression {tag!r}")


def _check_arg(v: Any, kind: str, where: str) -> Any:
    tag, body = _variant(v, where)
    if tag != kind:
        raise _bad(f"{where}: expected a {kind} argument, found {tag!r}")
    if kind == "Expr":
        return {"Expr": check_expr(body, where)}
    return {kind: check_ref(body, where)}


def _opt_expr(v: Any, where: str) -> Any:
    return None if v is None else check_expr(v, where)


# ---------------------------------------------------------------- statements

def check_stmt(v: Any, where: str = "statement") -> Any:
    """Validate one statement and return its normalised copy."""
    tag, body = _variant(v, where)
    if tag in ("Turn", "End"):
        if body is not None:
            raise _bad(f"{where}: `{tag}` takes nothing")
        return tag
    if tag in ("Set", "Observe"):
        slot, e = _list(body, where, 2)
        return {tag: [_int(slot, where), check_expr(e, where)]}
    if tag == "Loop":
        return {"Loop": _int(body, where)}
    if tag == "Branch":
        c, a, b = _list(body, where, 3)
        return {"Branch": [check_expr(c, where), _int(a, where), _int(b, where)]}
    if tag in ("Grow", "Load"):
        ref, e = _list(body, where, 2)
        return {tag: [check_ref(ref, where), check_expr(e, where)]}
    if tag in ("Drop", "Release"):
        return {tag: check_ref(body, where)}
    if tag == "Choose":
        _keys(body, where, {"var", "count", "key"})
        keys = _list(body["key"], where)
        return {"Choose": {"var": _int(body["var"], where), "count": check_expr(body["count"], where),
                           "key": [check_expr(k, where) for k in keys]}}
    if tag == "Hold":
        return {"Hold": _check_hold(body, where)}
    if tag == "Run":
        return {"Run": _check_run(body, where)}
    raise _bad(f"{where}: unknown statement {tag!r}")


def _keys(body: Any, where: str, required: set, optional: set = frozenset()) -> None:
    if not isinstance(body, dict):
        raise _bad(f"{where}: expected an object, found {body!r}"[:200])
    missing = required - set(body)
    extra = set(body) - required - set(optional)
    if missing:
        raise _bad(f"{where}: missing field `{sorted(missing)[0]}`")
    if extra:
        raise _bad(f"{where}: unknown field `{sorted(extra)[0]}`")


def _check_hold(body: Any, where: str) -> dict:
    _keys(body, where, {"pools", "reuse", "body", "cache", "lease"})
    pools = []
    for entry in _list(body["pools"], where):
        ref, units, reserve = _list(entry, where, 3)
        pools.append([check_ref(ref, where), check_expr(units, where), _opt_expr(reserve, where)])
    if not pools:
        raise _bad(f"{where}: a hold takes at least one pool")
    lease = body["lease"]
    if lease is not None:
        ref, t = _list(lease, where, 2)
        lease = [check_ref(ref, where), check_expr(t, where)]
    return {"pools": pools, "reuse": _opt_expr(body["reuse"], where), "body": _int(body["body"], where),
            "cache": _opt_expr(body["cache"], where), "lease": lease}


def _check_run(body: Any, where: str) -> dict:
    _keys(body, where, {"stage", "mode", "work", "growing"}, {"also"})
    if body["mode"] not in RUN_MODES:
        raise _bad(f"{where}: unknown run mode {body['mode']!r}")
    out = {"stage": check_ref(body["stage"], where), "mode": body["mode"],
           "work": check_expr(body["work"], where),
           "growing": check_ref(body["growing"], where, nullable=True)}
    if "also" in body:
        also = [check_ref(r, where) for r in _list(body["also"], where)]
        if also:
            out["also"] = also
    return out


def stmt_blocks(stmt: Any) -> list[int]:
    """The block indices a statement owns (bodies it runs)."""
    tag, body = _variant(stmt, "statement")
    if tag == "Loop":
        return [body]
    if tag == "Branch":
        return [body[1], body[2]]
    if tag == "Hold":
        return [body["body"]]
    return []


# ---------------------------------------------------------------- top level

@dataclass
class Spill:
    to: int
    via: int
    work: Any
    when: Any

    def to_dict(self) -> dict:
        return {"to": self.to, "via": self.via, "work": self.work, "when": self.when}

    @staticmethod
    def from_dict(d: Any, where: str) -> "Spill":
        _keys(d, where, {"to", "via", "work", "when"})
        return Spill(_int(d["to"], where), _int(d["via"], where), check_expr(d["work"], where),
                     check_expr(d["when"], where))


@dataclass
class Pool:
    """One pool (one member of a pool family: `index` is its position, None for a single pool)."""

    name: str
    cap: float = math.inf
    block: float | None = None
    evict: Any = "Lru"            # "Lru" or {"By": [keys]}
    preempt: str = "None"         # "None" or "Lifo"
    queue: list | None = None     # None = fifo, else the `queue by` keys
    spill: Spill | None = None
    admit_via: int | None = None  # stage row
    index: int | None = None

    def to_dict(self, exact: bool = False) -> dict:
        d: dict = {"name": self.name}
        if self.index is not None:
            d["index"] = self.index
        # `block` is a plain f64 in 0.1.2's IR: an infinite one is written null (as no block),
        # although the compiled program keeps it infinite; `exact` keeps it ("inf")
        block = self.block
        if block is not None and not math.isfinite(block):
            block = num_to_json(block) if exact else None
        d.update({"cap": num_to_json(self.cap),
                  "block": block,
                  "evict": self.evict, "preempt": self.preempt, "queue": self.queue,
                  "spill": None if self.spill is None else self.spill.to_dict(),
                  "admit_via": self.admit_via})
        return d

    @staticmethod
    def from_dict(d: Any) -> "Pool":
        where = f"pool {d.get('name')!r}" if isinstance(d, dict) else "pool"
        _keys(d, where, {"name", "cap", "block", "evict", "preempt", "queue", "spill", "admit_via"},
              {"index"})
        evict = _unit_or_by(d["evict"], "Lru", "evict policy", where)
        if d["preempt"] not in ("None", "Lifo"):
            raise _bad(f"{where}: unknown preempt policy {d['preempt']!r}")
        queue = d["queue"]
        if queue is not None:
            queue = [check_expr(k, where) for k in _list(queue, where)]
        return Pool(name=_name(d["name"], where), cap=num_from_json(d["cap"], where),
                    block=None if d["block"] is None else _block_from(d["block"], where),
                    evict=evict, preempt=d["preempt"], queue=queue,
                    spill=None if d["spill"] is None else Spill.from_dict(d["spill"], where),
                    admit_via=None if d["admit_via"] is None else _int(d["admit_via"], where),
                    index=None if "index" not in d else _int(d["index"], where))


@dataclass
class Stage:
    """One stage (member).  `kind` is the JSON form: "Delay", {"Fifo": c}, {"Ps": φ}, {"Step": {...}}."""

    name: str
    kind: Any
    index: int | None = None

    def to_dict(self) -> dict:
        d: dict = {"name": self.name}
        if self.index is not None:
            d["index"] = self.index
        d["kind"] = self.kind
        return d

    @staticmethod
    def from_dict(d: Any) -> "Stage":
        where = f"stage {d.get('name')!r}" if isinstance(d, dict) else "stage"
        _keys(d, where, {"name", "kind"}, {"index"})
        return Stage(name=_name(d["name"], where), kind=_check_kind(d["kind"], where),
                     index=None if "index" not in d else _int(d["index"], where))


def _check_kind(v: Any, where: str) -> Any:
    tag, body = _variant(v, where)
    if tag == "Delay" and body is None:
        return "Delay"
    if tag == "Fifo":
        return {"Fifo": _int(body, where, 1)}
    if tag == "Ps":
        return {"Ps": check_expr(body, where)}
    if tag == "Step":
        _keys(body, where, {"budget", "cost", "chunk", "serve", "memory"})
        serve = _unit_or_by(body["serve"], "ExclusivePrefill", "serve order", where)
        memory = body["memory"]
        return {"Step": {"budget": check_expr(body["budget"], where), "cost": check_expr(body["cost"], where),
                         "chunk": check_expr(body["chunk"], where), "serve": serve,
                         "memory": None if memory is None else _int(memory, where)}}
    raise _bad(f"{where}: unknown stage kind {v!r}"[:200])


@dataclass
class Gauge:
    name: str
    expr: Any

    def to_dict(self) -> dict:
        return {"name": self.name, "expr": self.expr}

    @staticmethod
    def from_dict(d: Any) -> "Gauge":
        _keys(d, "gauge", {"name", "expr"})
        where = f"gauge {d['name']!r}"
        return Gauge(_name(d["name"], where), check_expr(d["expr"], where))


def _name(v: Any, where: str) -> str:
    if not isinstance(v, str):
        raise _bad(f"{where}: expected a name, found {v!r}")
    return v


def _block_from(v: Any, where: str) -> float:
    """A pool's block: a finite number, or "inf" (the exact form of `block inf`)."""
    return math.inf if v == "inf" else _float(v, where)


def _arrival_to(v: Any, exact: bool = False) -> Any:
    if isinstance(v, dict) and "Poisson" in v:
        rate = float(v["Poisson"])
        if math.isfinite(rate):
            return {"Poisson": rate}
        return {"Poisson": num_to_json(rate) if exact else None}
    if isinstance(v, dict) and "Modulated" in v:
        return {"Modulated": {k: [num_to_json(x) for x in v["Modulated"][k]] for k in ("rates", "leave")}}
    if isinstance(v, dict) and "Replay" in v:
        body = v["Replay"]
        return {"Replay": {k: (None if body[k] is None else [num_to_json(x) for x in body[k]]) if k == "window"
                           else num_to_json(body[k]) for k in REPLAY_KEYS}}
    return v


def _arrival_from(v: Any) -> Any:
    tag, body = _variant(v, "arrival")
    if tag == "None" and body is None:
        return "None"
    if tag == "Poisson":
        # A plain f64 in 0.1.2, which writes an infinite rate null (and cannot read it
        # back); sq's exact form writes "inf".  Both are read as the infinite rate.
        if body is None or body == "inf":
            return {"Poisson": math.inf}
        return {"Poisson": _float(body, "arrival")}
    if tag in ("Closed", "Batch"):
        return {tag: _int(body, "arrival")}
    if tag in ("Renewal", "PoissonNow"):
        return {tag: check_expr(body, "arrival")}
    if tag == "RenewalRate" and isinstance(body, dict) and set(body) == {"gap", "rate"}:
        return {tag: {k: check_expr(body[k], "arrival") for k in ("gap", "rate")}}
    if tag == "Modulated" and isinstance(body, dict) and set(body) == {"rates", "leave"}:
        return {tag: {k: [num_from_json(x, f"modulated {k}") for x in _list(body[k], f"modulated {k}", None)]
                      for k in ("rates", "leave")}}
    if tag == "Replay" and isinstance(body, dict) and set(body) == set(REPLAY_KEYS):
        window = body["window"]
        return {"Replay": {k: (None if window is None else
                               [num_from_json(x, "replay window") for x in _list(window, "replay window", 2)])
                           if k == "window" else num_from_json(body[k], f"replay {k}") for k in REPLAY_KEYS}}
    raise _bad(f"unknown arrival {v!r}"[:200])


# `arrive replay` (an extension): its IR body's keys. speed k divides the trace's times;
# window [from, to) of trace seconds (None: all of it); keep: each session's chance to arrive;
# copies of the (windowed) trace superposed, copy j shifted by j * shift trace seconds.
REPLAY_KEYS = ("speed", "window", "keep", "copies", "shift")
MAX_PHASES = 4096       # a modulated poisson's phases (an extension)


@dataclass(frozen=True)
class Places:
    """Where a compiled program's items are written, for the checks that run on the IR, which
    has none: the validation here and the lowering (`SqError.item` names the item at fault).

    `spans` maps an item (("arrival",), ("run", "horizon"), ("pool", row), ("stage", row),
    ("gauge", k), ("share",), ("statement", block, position): a run-time error's) to its Span and the notes it adds (that an override gave its value).
    """

    source: str | None
    spans: dict

    def locate(self, error: SqError) -> SqError:
        """`error` placed at its item, if it has one written here and no place yet."""
        place = self.spans.get(error.item)
        if place is None or error.span is not None:
            return error
        span, notes = place
        return SqError(error.message, span, source=self.source, phase=error.phase,
                       notes=(*error.notes, *notes), item=error.item)


def window_item(horizon: float) -> tuple:
    """Which run setting a refused horizon/warmup pair is placed at: the horizon when it is
    itself wrong (then `horizon_notes` says so), else the warmup."""
    return ("run", "horizon") if horizon_notes(horizon) else ("run", "warmup")


@contextlib.contextmanager
def about(item: tuple):
    """Errors raised inside are about `item` (unless they name a narrower one)."""
    try:
        yield
    except SqError as e:
        if e.item is None:
            e.item = item
        raise


_PROGRAM_KEYS = {"version", "attrs", "observes", "pools", "stages", "arrival", "trace", "trace_ordered",
                 "init", "turn", "session", "blocks", "horizon", "warmup", "seed", *SLOT_KEYS, "hidden"}
_PROGRAM_OPTIONAL = {"arrivals", "share", "gauges", "trace_prefix"}
# `trace "F" prefix(C);` (an extension): the attributes a turn sets from the shared prefix cache
PREFIX_ATTRS = ("hit_blocks", "prompt_blocks")


@dataclass
class Program:
    """A linked program, ready to lower and run."""

    attrs: list[str] = field(default_factory=lambda: list(BUILTIN_ATTRS))
    observes: list[str] = field(default_factory=list)
    pools: list[Pool] = field(default_factory=list)
    stages: list[Stage] = field(default_factory=list)
    arrival: Any = "None"
    trace: str | None = None
    trace_ordered: bool = False
    init: int = 0
    turn: int = 1
    session: int = 2
    blocks: list[list] = field(default_factory=lambda: [[], [], []])
    horizon: float = 0.0
    warmup: float = 0.0
    seed: int = 1
    arrivals: int | None = None
    slots: tuple[int, ...] = tuple(range(9))   # slot_cached … slot_computed
    hidden: list[int] = field(default_factory=list)
    share: str | None = None                   # "MaxMin" / "Bottleneck"
    gauges: list[Gauge] = field(default_factory=list)
    trace_prefix: float | None = None          # an extension: a prefix cache of this many blocks
    # Not part of the JSON: the folder a relative `trace` path is read from
    # (the program file's, for a program compiled from a file; else the cwd).
    trace_base: str | None = field(default=None, compare=False)
    # Not part of the JSON: the keywords `sq.compile` was called with (path or source, sets,
    # defs, settings), so a study can compile the program again with other `let` values
    # and a report can say where it came from.
    compiled_from: dict | None = field(default=None, compare=False, repr=False)
    # Not part of the JSON: where the program text writes its items (sq.frontend.link fills it),
    # so that errors found on the IR point there. None once an IR field is set after linking
    # (the text no longer says what the program holds), and for an IR read from JSON.
    places: Places | None = field(default=None, init=False, compare=False, repr=False)

    # ------------------------------------------------------------ derived, kept
    def __setattr__(self, name: str, value: Any) -> None:
        self.__dict__.pop("_derived", None)   # what was derived from the old value is stale
        if name in _IR_FIELDS:
            object.__setattr__(self, "places", None)
        object.__setattr__(self, name, value)

    def locate(self, error: SqError) -> SqError:
        """`error` with the place in the program text of the item it is about, where that is known."""
        places = getattr(self, "places", None)   # (a program pickled before places existed has none)
        return error if places is None else places.locate(error)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_derived"}   # rebuilt where it is used

    def cached(self, key: str, build, *args):
        """`build(*args)`, kept on the program until one of its fields is set (e.g. the lowered arrays,
        so that a sweep of runs lowers once). Fields are replaced, not edited in place, after compile."""
        derived = self.__dict__.get("_derived")
        if derived is not None and key in derived:    # (a sweep's every run: nothing made to ask)
            return derived[key]
        derived = self.__dict__.setdefault("_derived", {})
        if key not in derived:
            derived[key] = build(*args)
        return derived[key]

    # ------------------------------------------------------------ writing
    def to_dict(self, exact: bool = False) -> dict:
        """The IR in its parsed-JSON form, key for key as pyserq writes it.

        0.1.2 writes an infinite `block` or poisson rate as null, so its JSON is not quite the
        program it compiled (a `block inf` pool admits nothing; read back, it has no block).
        `exact=True` keeps them as "inf": the form to run, where to_dict() is the form to compare.
        """
        d: dict = {"version": IR_VERSION, "attrs": list(self.attrs), "observes": list(self.observes),
                   "pools": [p.to_dict(exact) for p in self.pools], "stages": [s.to_dict() for s in self.stages],
                   "arrival": _arrival_to(self.arrival, exact), "trace": self.trace, "trace_ordered": self.trace_ordered,
                   "init": self.init, "turn": self.turn, "session": self.session,
                   "blocks": self.blocks, "horizon": num_to_json(self.horizon),
                   "warmup": num_to_json(self.warmup), "seed": self.seed}
        if self.arrivals is not None:
            d["arrivals"] = self.arrivals
        if self.trace_prefix is not None:
            d["trace_prefix"] = num_to_json(self.trace_prefix)
        d.update(zip(SLOT_KEYS, self.slots))
        d["hidden"] = list(self.hidden)
        if self.share is not None:
            d["share"] = self.share
        if self.gauges:
            d["gauges"] = [g.to_dict() for g in self.gauges]
        return _copy_tree(d)   # detached from this object: callers may edit it

    def to_json(self, indent: int | None = None) -> str:
        """The IR as JSON text: compact by default (pyserq indents by 2; pass indent=2 for its layout).

        The exact form: an infinite `block` or poisson rate is written "inf"
        (0.1.2 writes null, which reads back as no block, or not at all), so
        that `from_json` reads back the same program."""
        return run_deep(lambda: json.dumps(self.to_dict(exact=True), indent=indent))

    # ------------------------------------------------------------ reading
    @staticmethod
    def from_json(text: str | bytes) -> "Program":
        """Read and validate an IR; any defect is an SqError (phase "validate")."""
        try:
            d = run_deep(json.loads, text)
        except (ValueError, TypeError) as e:
            raise _bad(f"not JSON: {e}") from None
        return run_deep(Program.from_dict, d)

    @staticmethod
    def from_dict(d: Any) -> "Program":
        try:
            prog = Program._read(d)
        except SqError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError) as e:  # a shape _variant/_list missed
            raise _bad(f"malformed IR ({e})") from None
        validate(prog)
        return prog

    @staticmethod
    def _read(d: Any) -> "Program":
        _keys(d, "program", _PROGRAM_KEYS, _PROGRAM_OPTIONAL)
        if d["version"] != IR_VERSION:
            raise _bad(f"version {d['version']!r}, this reads version {IR_VERSION}")
        attrs = [_name(a, "attrs") for a in _list(d["attrs"], "attrs")]
        observes = [_name(a, "observes") for a in _list(d["observes"], "observes")]
        blocks = [[check_stmt(s, f"block {i}") for s in _list(b, f"block {i}")]
                  for i, b in enumerate(_list(d["blocks"], "blocks"))]
        trace = d["trace"]
        if trace is not None and not isinstance(trace, str):
            raise _bad(f"trace: expected a path, found {trace!r}")
        if not isinstance(d["trace_ordered"], bool):
            raise _bad("trace_ordered: expected true or false")
        share = d.get("share")
        if share is not None and share not in SHARES:
            raise _bad(f"share: unknown policy {share!r}")
        arrivals = d.get("arrivals")
        prog = Program(
            attrs=attrs, observes=observes,
            pools=[Pool.from_dict(p) for p in _list(d["pools"], "pools")],
            stages=[Stage.from_dict(s) for s in _list(d["stages"], "stages")],
            arrival=_arrival_from(d["arrival"]), trace=trace, trace_ordered=d["trace_ordered"],
            init=_int(d["init"], "init"), turn=_int(d["turn"], "turn"), session=_int(d["session"], "session"),
            blocks=blocks, horizon=num_from_json(d["horizon"], "horizon"),
            warmup=num_from_json(d["warmup"], "warmup"), seed=_int(d["seed"], "seed"),
            arrivals=None if arrivals is None else _int(arrivals, "arrivals"),
            slots=tuple(_int(d[k], k) for k in SLOT_KEYS),
            hidden=[_int(h, "hidden") for h in _list(d["hidden"], "hidden")],
            share=share,
            gauges=[Gauge.from_dict(g) for g in _list(d.get("gauges", []), "gauges")],
            trace_prefix=None if d.get("trace_prefix") is None else num_from_json(d["trace_prefix"], "trace_prefix"))
        if not is_u64(prog.seed):
            raise _bad("seed: more than a u64 holds")
        return prog


# ---------------------------------------------------------------- validation
#
# The IR's own checks, run on every program (linked here or read from JSON):
# tables and indices in range, then the moments: which context variables,
# attributes, functions and draws each place may read (chapter 07).

SESSION, ADMIT, SELECT, EVICT, PS, BUDGET, STEP, SERVE, GAUGE = (
    "a session statement, a run or a hold's cache",
    "a hold's header, read at admission",
    "a pool's queue keys, read before selecting a waiting session",
    "an eviction key or spill clause",
    "a ps stage's capacity",
    "a step stage's budget or chunk, planned before the iteration",
    "a step stage's cost, after the iteration",
    "a step stage's serve keys",
    "a gauge, read on the deployment's state with no session",
)
_ALL_BUT_GAUGE = (SESSION, ADMIT, SELECT, EVICT, PS, BUDGET, STEP, SERVE)
# context variable -> the moments that supply it, in the order messages list them
CTX_MOMENTS = {
    "Now": _ALL_BUT_GAUGE, "Waited": (SELECT,), "Size": (EVICT,), "Age": (EVICT,), "Last": (EVICT,),
    "Queued": (EVICT,), "N": (PS,), "Ndec": (BUDGET, STEP, SERVE), "Nres": (BUDGET, STEP, SERVE),
    "Kvb": (BUDGET, STEP, SERVE), "Kvp": (BUDGET, STEP, SERVE), "Ntok": (STEP,), "Npre": (STEP,),
    "Attn": (STEP,), "Decoding": (SERVE,), "Admission": (SERVE,), "Remaining": (SERVE,),
    "Kvm": (STEP,),     # an extension beyond 0.1.2 (docs/differences.md)
}
CTX_SOURCE = {"Now": "now", "Waited": "waited", "Size": "size", "Age": "age", "Last": "last",
              "Queued": "waiting", "N": "present", "Ntok": "tokens", "Ndec": "decoders", "Npre": "prefilled",
              "Nres": "residents", "Kvb": "kv_decode", "Kvp": "kv_prefill", "Attn": "attention",
              "Decoding": "decoding", "Admission": "admission", "Remaining": "remaining",
              "Kvm": "kv_decode_max"}


def ctx_phrase(ctx: str) -> str:
    """Where a context variable is read, as the `let`/attribute clash message says it."""
    if ctx == "Now":
        return "every expression"
    return ", or ".join(CTX_MOMENTS[ctx])


def _fail(prefix: str, message: str, item: tuple | None = None) -> SqError:
    return SqError(f"{prefix}: {message}" if prefix else message, phase="validate", item=item)


def _walk_expr(e: Any, where: str = "expression"):
    """Every node of an expression, with refs' index expressions, pre-order
    (iteratively), as its (tag, body) pair: decoded here once, since each
    check reads the tag of every node (a malformed node is reported as
    `_variant` reports it, with `where`)."""
    stack = [e]
    pop = stack.pop
    while stack:
        x = pop()
        if type(x) is dict and len(x) == 1:
            (tag, body), = x.items()
        else:
            tag, body = _variant(x, where)
        yield tag, body
        if tag == "Binary":
            stack += (body[2], body[1])
        elif tag == "Unary":
            stack.append(body[1])
        elif tag == "Cond":
            stack += reversed(body)
        elif tag == "Sample":
            stack += reversed(body[1])
        elif tag == "Call":
            for arg in reversed(body[1]):
                (kind, inner), = arg.items()
                if kind == "Expr":
                    stack.append(inner)
                elif inner["index"] is not None:
                    stack.append(inner["index"])


class _Validator:
    def __init__(self, prog: "Program"):
        self.p = prog
        self.hidden = set(prog.hidden)
        self.walked: dict[int, tuple] = {}    # id(expression) -> (expression, its nodes)

    def nodes(self, e: Any, where: str):
        """`_walk_expr(e, where)`, kept as a list per expression: the table checks
        and the moment checks read the same expressions."""
        hit = self.walked.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        try:
            nodes = list(_walk_expr(e, where))
        except Exception:  # noqa: BLE001  (a malformed tree: walk it lazily again, so the
            return _walk_expr(e, where)    # checks of the nodes before the defect run first, as they did)
        self.walked[id(e)] = (e, nodes)
        return nodes

    # -- tables
    def tables(self) -> None:
        p = self.p
        nblocks = len(p.blocks)
        for k in ("init", "turn", "session"):
            if not 0 <= getattr(p, k) < nblocks:
                raise _bad(f"{k}: block {getattr(p, k)} does not exist")
        if len(p.attrs) < 9 or any(not 0 <= s < len(p.attrs) for s in p.slots):
            raise _bad("attrs: the nine built-in slots must exist")
        for h in p.hidden:
            if not 0 <= h < len(p.attrs):
                raise _bad(f"hidden: slot {h} does not exist")
        for i, block in enumerate(p.blocks):
            for s in block:
                self.stmt_tables(s, f"block {i}")
        for pool in p.pools:
            where = f"pool {pool.name!r}"
            if pool.admit_via is not None:
                self.row(pool.admit_via, len(p.stages), where)
            if pool.spill is not None:
                self.row(pool.spill.to, len(p.pools), where)
                self.row(pool.spill.via, len(p.stages), where)
            for e in self.pool_exprs(pool):
                self.expr_tables(e, where)
        for st in p.stages:
            where = f"stage {st.name!r}"
            if isinstance(st.kind, dict) and "Step" in st.kind and st.kind["Step"]["memory"] is not None:
                self.row(st.kind["Step"]["memory"], len(p.pools), where)
            for e in self.stage_exprs(st).values():
                for x in e:
                    self.expr_tables(x, where)
        for g in p.gauges:
            self.expr_tables(g.expr, f"gauge {g.name!r}")
        for kind in ("Renewal", "PoissonNow"):
            if isinstance(p.arrival, dict) and kind in p.arrival:
                self.expr_tables(p.arrival[kind], "arrival")
        if isinstance(p.arrival, dict) and "RenewalRate" in p.arrival:
            for e in p.arrival["RenewalRate"].values():
                self.expr_tables(e, "arrival")

    def row(self, i: int, n: int, where: str) -> None:
        if not 0 <= i < n:
            raise _bad(f"{where}: row {i} does not exist")

    def ref_tables(self, ref: dict, n: int, where: str) -> None:
        if ref["base"] + ref["count"] > n:
            raise _bad(f"{where}: reference {ref['base']}+{ref['count']} past the table's {n} rows")
        if ref["index"] is not None:
            self.expr_tables(ref["index"], where)

    def expr_tables(self, e: Any, where: str) -> None:
        for tag, body in self.nodes(e, where):
            if tag == "Attr" and body >= len(self.p.attrs):
                raise _bad(f"{where}: attribute slot {body} does not exist")
            if tag == "Call":
                for arg in body[1]:
                    (kind, inner), = arg.items()
                    if kind == "Pool":
                        self.ref_tables(inner, len(self.p.pools), where)
                    elif kind == "Stage":
                        self.ref_tables(inner, len(self.p.stages), where)

    def stmt_tables(self, s: Any, where: str) -> None:
        p = self.p
        tag, body = _variant(s, where)
        for b in stmt_blocks(s):
            self.row(b, len(p.blocks), where)
        npools, nstages = len(p.pools), len(p.stages)
        if tag == "Set":
            self.row(body[0], len(p.attrs), where)
        elif tag == "Observe":
            self.row(body[0], len(p.observes), where)
        elif tag == "Choose":
            self.row(body["var"], len(p.attrs), where)
        elif tag in ("Grow", "Load"):
            self.ref_tables(body[0], npools, where)
        elif tag in ("Drop", "Release"):
            self.ref_tables(body, npools, where)
        elif tag == "Hold":
            for ref, _, _ in body["pools"]:
                self.ref_tables(ref, npools, where)
            if body["lease"] is not None:
                self.ref_tables(body["lease"][0], npools, where)
        elif tag == "Run":
            for ref in [body["stage"], *body.get("also", [])]:
                self.ref_tables(ref, nstages, where)
            if body["growing"] is not None:
                self.ref_tables(body["growing"], npools, where)
        for e, _ in self.stmt_exprs(s):
            self.expr_tables(e, where)

    # -- which expressions stand at which moment
    @staticmethod
    def stmt_exprs(s: Any) -> list[tuple[Any, str]]:
        tag, body = _variant(s, "statement")
        out: list[tuple[Any, str]] = []

        def ref(r: Any) -> None:
            if r is not None and r["index"] is not None:
                out.append((r["index"], SESSION))
        if tag in ("Set", "Observe"):
            out.append((body[1], SESSION))
        elif tag == "Branch":
            out.append((body[0], SESSION))
        elif tag == "Choose":
            out.append((body["count"], SESSION))
            out.extend((k, SESSION) for k in body["key"])
        elif tag in ("Grow", "Load"):
            ref(body[0])
            out.append((body[1], SESSION))
        elif tag in ("Drop", "Release"):
            ref(body)
        elif tag == "Hold":
            for r, units, reserve in body["pools"]:
                ref(r)
                out.append((units, ADMIT))
                if reserve is not None:
                    out.append((reserve, ADMIT))
            if body["reuse"] is not None:
                out.append((body["reuse"], ADMIT))
            if body["cache"] is not None:
                out.append((body["cache"], SESSION))
            if body["lease"] is not None:
                ref(body["lease"][0])
                out.append((body["lease"][1], SESSION))
        elif tag == "Run":
            ref(body["stage"])
            for r in body.get("also", []):
                ref(r)
            out.append((body["work"], SESSION))
            ref(body["growing"])
        return out

    @staticmethod
    def pool_exprs(pool: "Pool") -> list:
        out = list(pool.queue or [])
        if isinstance(pool.evict, dict):
            out += pool.evict["By"]
        if pool.spill is not None:
            out += [pool.spill.work, pool.spill.when]
        return out

    @staticmethod
    def stage_exprs(st: "Stage") -> dict[str, list]:
        kind = st.kind
        if isinstance(kind, dict) and "Ps" in kind:
            return {PS: [kind["Ps"]]}
        if isinstance(kind, dict) and "Step" in kind:
            step = kind["Step"]
            serve = step["serve"]["By"] if isinstance(step["serve"], dict) else []
            return {BUDGET: [step["budget"], step["chunk"]], STEP: [step["cost"]], SERVE: serve}
        return {}

    # -- moments
    def moment(self, e: Any, moment: str, prefix: str) -> None:
        for tag, body in self.nodes(e, prefix):
            if tag == "Ctx":
                where = CTX_MOMENTS[body]
                if moment not in where:
                    raise _fail(prefix, f"`{CTX_SOURCE[body]}` is read in {moment}, but it exists only in "
                                        f"{' or '.join(where)}")
            elif tag == "Attr" and body in self.hidden and moment != SESSION:
                raise _fail(prefix, f"`{self.p.attrs[body]}` is hidden from the scheduler, but is read in {moment}")
            elif tag == "Sample" and moment == SELECT:
                raise _fail(prefix, "a queue key may not draw; sample into an attribute first")
            elif tag == "Sample" and moment == SERVE:
                raise _fail(prefix, "a serve key may not draw (`~`): it is read for every resident at every "
                                    "iteration, and the order would change under the scheduler's feet")

    def gauge(self, g: "Gauge") -> None:
        prefix = f"gauge `{g.name}`"
        for tag, body in self.nodes(g.expr, prefix):
            if tag == "Ctx" and body == "Now":
                raise _fail(prefix, "a gauge may not read `now`: it changes between events, and a gauge is "
                                    "held constant between them")
            if tag == "Ctx":
                raise _fail(prefix, f"`{CTX_SOURCE[body]}` is read in {GAUGE}, but it exists only in "
                                    f"{' or '.join(CTX_MOMENTS[body])}")
            if tag == "Attr":
                raise _fail(prefix, f"`{self.p.attrs[body]}` is a session attribute, and a gauge has no session")
            if tag == "Sample":
                raise _fail(prefix, "a gauge may not draw (`~`): it reads the state, and a draw would move the "
                                    "run's streams")
            if tag == "Call":
                fn = body[0]
                if fn == "Work":
                    raise _fail(prefix, "a gauge may not read `work(…)`: the work left drains between events, "
                                        "and a gauge is held constant between them")
                if fn == "BudgetLeft":
                    raise _fail(prefix, "a gauge may not read `budget_left(…)`: it plans the next iteration, "
                                        "which evaluates the stage's budget and may draw")
                if fn == "CachedIn":
                    raise _fail(prefix, "`cachedin` is the session's own cached prefix, and a gauge has no session")
                for arg in body[1]:
                    (kind, inner), = arg.items()
                    if kind != "Expr" and inner["index"] is not None and "Num" not in inner["index"]:
                        what = kind.lower()
                        raise _fail(prefix, f"a gauge's {what} index is a number in range (`kv[0]`, or an "
                                            f"aggregate's `kv[k]`), not one read from the state")

    def renewal(self, e: Any) -> None:
        self.moment(e, SESSION, "")
        for tag, body in self.nodes(e, "arrival"):
            if tag in ("Attr", "Ctx") or tag == "Call" and body[0] not in PURE_CALLS:
                raise _fail("", "renewal arrival may use only constants and sampled distributions")

    def rate(self, e: Any, what: str = "a poisson rate") -> None:
        """A rate that reads `now` (an extension): `now`, constants and pure functions only."""
        for tag, body in self.nodes(e, "arrival"):
            if tag == "Attr" or tag == "Sample" or tag == "Ctx" and body != "Now" or tag == "Call" and body[0] not in PURE_CALLS:
                raise _fail("", f"{what} may read only `now`, constants and pure functions")

    def blocks(self) -> None:
        p = self.p
        named = {p.init: "init", p.turn: "turn"}
        seen: set[int] = set()

        def visit(i: int, prefix: str) -> None:
            if i in seen:
                return
            seen.add(i)
            for s in p.blocks[i]:
                for e, moment in self.stmt_exprs(s):
                    self.moment(e, moment, prefix)
                for b in stmt_blocks(s):
                    visit(b, prefix)
        for i in (p.init, p.turn, p.session):
            visit(i, named.get(i, "session"))

    def flows(self) -> None:
        p = self.p
        shared: set[int] = set()
        multi = False
        for block in p.blocks:
            for s in block:
                tag, body = _variant(s, "statement")
                if tag != "Run" or not body.get("also"):
                    continue
                multi = True
                refs = [body["stage"], *body["also"]]
                rows = [r["base"] + (int(r["index"]["Num"]) if r["index"] and "Num" in r["index"] else 0)
                        for r in refs]
                names = [r["base"] for r in refs]   # 0.1.2 compares families: `E[0], E[1]` is twice
                for k, key in enumerate(names):
                    if key in names[:k]:
                        raise _fail("", f"stage `{p.stages[rows[k]].name}` is named twice in one run")
                for r in refs:
                    shared.update(range(r["base"], r["base"] + r["count"]))
                if body["mode"] != "Plain" or body["growing"] is not None:
                    raise _fail("", f"a run on the shared stage `{p.stages[rows[0]].name}` is plain: a flow "
                                    f"has no mode and grows no pool")
        if multi and p.share is None:
            raise _fail("", "a run over several stages needs the program's `share` (`share maxmin;` or "
                            "`share bottleneck;`)")
        if p.share is not None and not multi:
            raise _fail("", "`share` without a run over several stages", ("share",))
        for row in sorted(shared):
            kind = p.stages[row].kind
            phi = kind.get("Ps") if isinstance(kind, dict) else None
            if not (isinstance(phi, dict) and "Num" in phi and num_from_json(phi["Num"], "ps") > 0):
                raise _fail("", f"stage `{p.stages[row].name}` is held with another stage by one run, so its "
                                f"capacity is shared: it must be `ps(φ)` with a constant φ above 0", ("stage", row))

    def modulated(self, m: dict) -> None:
        """A Markov-modulated poisson's phases (an extension): as many leaving rates as rates,
        each rate finite and >= 0, each leaving rate finite and above 0."""
        def fail(message):
            raise _fail("", message, ("arrival",))
        rates, leave = m["rates"], m["leave"]
        if len(rates) != len(leave):
            fail(f"a modulated poisson needs a leaving rate per phase: {len(rates)} rate(s), {len(leave)} leaving rate(s)")
        if not 1 <= len(rates) <= MAX_PHASES:
            fail(f"a modulated poisson has 1 to {MAX_PHASES} phases, found {len(rates)}")
        for i, (r, q) in enumerate(zip(rates, leave)):
            if not (r >= 0 and math.isfinite(r)):
                fail(f"phase {i + 1}'s poisson rate must be finite and >= 0, found {display(r)}")
            if not (q > 0 and math.isfinite(q)):
                fail(f"phase {i + 1}'s leaving rate must be finite and above 0, found {display(q)}")

    def replay(self, r: dict) -> None:
        """`arrive replay`'s constants, and that the workload has a trace to replay."""
        def fail(message, value=None):
            shown = "" if value is None else f", found {display(value)}"
            raise _fail("", f"{message}{shown}", ("arrival",))
        if not self.p.trace:
            fail("arrive replay needs a trace: add `trace \"FILE\";` to the workload")
        if not (r["speed"] > 0 and math.isfinite(r["speed"])):
            fail("the replay speed must be a finite number above 0", r["speed"])
        if r["window"] is not None:
            lo, hi = r["window"]
            if not (0 <= lo < hi) or not math.isfinite(lo):
                fail(f"a replay window(from, to) needs 0 <= from < to, found window({display(lo)}, {display(hi)})")
        if not (0 < r["keep"] <= 1):
            fail("a replay's keep(p) needs 0 < p <= 1", r["keep"])
        if not (r["copies"] >= 1 and r["copies"] == int(r["copies"]) and r["copies"] <= 1e6):
            fail("a replay's copies(n, shift) needs a whole n from 1 to 1e6", r["copies"])
        if not (r["shift"] >= 0 and math.isfinite(r["shift"])):
            fail("a replay's copies(n, shift) needs a finite shift >= 0", r["shift"])

    def run_settings(self) -> None:
        p = self.p
        error = window_error(p.horizon, p.warmup, "validate")
        if error is not None:
            error.item = window_item(p.horizon)
            raise error
        if p.arrivals is not None:
            if not open_arrivals(p.arrival):
                raise _fail("run", ARRIVALS_NEED_OPEN, ("run", "arrivals"))
            if p.arrivals < 1:
                raise _fail("run", "arrivals must be positive", ("run", "arrivals"))

    def all(self) -> None:
        p = self.p
        self.tables()
        self.blocks()
        for row, pool in enumerate(p.pools):
            prefix = f"pool `{pool.name}`"
            with about(("pool", row)):
                for k in pool.queue or []:
                    self.moment(k, SELECT, prefix)
                for k in self.pool_exprs(pool)[len(pool.queue or []):]:
                    self.moment(k, EVICT, prefix)
        for row, st in enumerate(p.stages):
            with about(("stage", row)):
                for moment, exprs in self.stage_exprs(st).items():
                    for e in exprs:
                        self.moment(e, moment, f"stage `{st.name}`")
        for k, g in enumerate(p.gauges):
            with about(("gauge", k)):
                self.gauge(g)
        names = [g.name for g in p.gauges]
        for k, name in enumerate(names):
            if name in names[:k]:
                raise _fail(f"gauge `{name}`", "declared twice", ("gauge", k))
            if name in p.observes:
                raise _fail(f"gauge `{name}`", "is also an `observe`: one name would be two statistics", ("gauge", k))
        seen: set[int] = set()
        for h in p.hidden:
            name = p.attrs[h]
            if name in ("cached", "computed"):
                raise _fail("", f"hidden `{name}`: the scheduler sets it, so it cannot be hidden from the scheduler")
            if h in seen:
                raise _fail("", f"hidden `{name}` twice")
            seen.add(h)
        if isinstance(p.arrival, dict) and "Renewal" in p.arrival:
            with about(("arrival",)):
                self.renewal(p.arrival["Renewal"])
        if isinstance(p.arrival, dict) and "Replay" in p.arrival:
            self.replay(p.arrival["Replay"])
        if p.trace_prefix is not None:
            if not p.trace:
                raise _fail("", "a prefix cache needs a trace", ("arrival",))
            if not p.trace_prefix >= 0 or any(a not in p.attrs for a in PREFIX_ATTRS):
                raise _fail("", f"a trace's prefix(C) needs a capacity C >= 0 blocks, found {display(p.trace_prefix)}")
        if isinstance(p.arrival, dict) and "PoissonNow" in p.arrival:
            with about(("arrival",)):
                self.rate(p.arrival["PoissonNow"])
        if isinstance(p.arrival, dict) and "RenewalRate" in p.arrival:
            with about(("arrival",)):
                self.renewal(p.arrival["RenewalRate"]["gap"])
                self.rate(p.arrival["RenewalRate"]["rate"], "a renewal's rate")
        if isinstance(p.arrival, dict) and "Modulated" in p.arrival:
            self.modulated(p.arrival["Modulated"])
        self.run_settings()
        self.flows()


def validate(prog: "Program") -> None:
    """The IR's own checks; the first defect found is raised as an SqError (phase "validate")."""
    _Validator(prog).all()


# the fields the IR is made of (what `Program.to_dict` writes): setting one after linking
# leaves the program text's places behind
_IR_FIELDS = frozenset(f.name for f in fields(Program) if f.compare)

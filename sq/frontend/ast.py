"""The syntax tree the parser hands to the linker: plain data, nothing resolved.

Every node carries a `span` (sq.errors.Span) pointing at the token
that starts it, so the linker can place its errors. Lists are tuples, nodes
are frozen dataclasses; the tree is never mutated after parsing.

What the parser has already done, so the tree does not show it:
  * `use` libraries are spliced in and `def`s are expanded (a statement def
    use becomes its statements in place, an expression def use becomes its
    parenthesised body). A call of a name that is no def stays a `Call`.
    Tokens that came out of a def keep their own position (a body token
    points into the def, an argument token at the use); `Node.via` names the
    def uses a node was expanded from, innermost last.
  * array sizes are folded to `int` (they may read only `let`s above them);
    `Program.size_lets` lists every `let` such a size depends on, so the
    linker can refuse a `--set` of one.
  * what 0.1.2 checks while parsing is checked: a block's statements by
    side (chapter 02 §6), the pairing of the workload's session with the
    server or a gateway, a queue's order, roles and entries (chapter 03
    §14), that a serving form has a stage among those declared above, a
    pull relation's queues. A queue's `serve` and `latency` are split out of
    its items. Name resolution, constants and serving rewrites are the
    linker's.

Node families:
  * expressions (`Expr`): Num, Name, Dotted (`Q.x`), Ref (`kv[j]`,
    `P[i].kv` — only as a whole call argument), Call, Unary, Binary, Cond
    (`c ? a : b`), Sample (`~dist(args)`), Aggregate (`sum j in n (e)`).
    A bare name given as a call argument is a `Name` (or `Dotted`); the
    linker decides by the function's signature whether it means a pool,
    a stage or a value.
  * statements (`Stmt`): Set, Observe, Turn, End, Request, Mark, Hold,
    Grow, Drop, Release, Load, Run, Branch, Loop, Choose, Serving (the role
    forms `prefill`/`decode`/`tool`/`transfer`), QueueCall. A pool or stage
    target is a `Ref`.
  * pool options, stage kinds and step options: one small dataclass each,
    kept in source order (the last of a kind wins: `last_option`).
  * items (`Item`): Let, Pool, Stage, Queue, Pull, Share, Gauge, Workload,
    Session, Server, RunSettings, in source order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Tuple, Union

from sq.errors import Span


@dataclass(frozen=True)
class DefUse:
    """One def expansion a node came out of: the def's name and where it was used."""

    name: str
    span: Span


@dataclass(frozen=True)
class Node:
    span: Span = field(compare=False)


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Num(Node):
    value: float = 0.0


@dataclass(frozen=True)
class Name(Node):
    """A bare identifier: an attribute, a `let`, a context variable or `inf`."""

    name: str = ""


@dataclass(frozen=True)
class Dotted(Node):
    """`base.field`: a queue entry's local or mark read by the caller (`P.first`)."""

    base: str = ""
    field: str = ""


@dataclass(frozen=True)
class Ref(Node):
    """A pool or stage reference `name`, `name[index]`, `name[index].field`.

    As a statement target `field` is a queue pool (`P[i].kv`); as a call
    argument a Ref always has an index (a bare name is a `Name`).
    """

    name: str = ""
    index: Optional["Expr"] = None
    field: Optional[str] = None


@dataclass(frozen=True)
class Call(Node):
    name: str = ""
    args: Tuple["Expr", ...] = ()


@dataclass(frozen=True)
class Unary(Node):
    op: str = "-"          # "-" or "!"
    operand: "Expr" = None


@dataclass(frozen=True)
class Binary(Node):
    op: str = "+"          # + - * / ^ < <= > >= == != && ||
    left: "Expr" = None
    right: "Expr" = None


@dataclass(frozen=True)
class Cond(Node):
    test: "Expr" = None
    then: "Expr" = None
    other: "Expr" = None


@dataclass(frozen=True)
class Sample(Node):
    """`~dist(args)`: a draw from the moment's random stream."""

    dist: str = ""
    args: Tuple["Expr", ...] = ()


@dataclass(frozen=True)
class Aggregate(Node):
    """`op var in count (body)`, op one of sum/min/max; the linker writes it out."""

    op: str = "sum"
    var: str = ""
    count: "Expr" = None
    body: "Expr" = None


Expr = Union[Num, Name, Dotted, Ref, Call, Unary, Binary, Cond, Sample, Aggregate]


# ---------------------------------------------------------------- statements


@dataclass(frozen=True)
class Stmt(Node):
    via: Tuple[DefUse, ...] = field(default=(), compare=False, kw_only=True)


@dataclass(frozen=True)
class Set(Stmt):
    name: str = ""
    value: Expr = None


@dataclass(frozen=True)
class Observe(Stmt):
    name: str = ""
    value: Expr = None


@dataclass(frozen=True)
class Turn(Stmt):
    pass


@dataclass(frozen=True)
class End(Stmt):
    pass


@dataclass(frozen=True)
class Request(Stmt):
    """`request;` (the server block) or `request NAME;` (a gateway queue's route)."""

    gateway: Optional[str] = None
    gateway_span: Optional[Span] = field(default=None, compare=False)


@dataclass(frozen=True)
class Mark(Stmt):
    name: str = ""


@dataclass(frozen=True)
class HoldPool(Node):
    pool: Ref = None
    units: Expr = None
    reserve: Optional[Expr] = None


@dataclass(frozen=True)
class Binding(Node):
    """`name = value` in `at admission (…)`; the linker substitutes it."""

    name: str = ""
    value: Expr = None


@dataclass(frozen=True)
class Lease(Node):
    pool: Ref = None
    time: Expr = None


@dataclass(frozen=True)
class Hold(Stmt):
    pools: Tuple[HoldPool, ...] = ()
    reuse: Optional[Expr] = None
    bindings: Tuple[Binding, ...] = ()
    body: Tuple[Stmt, ...] = ()
    cache: Optional[Expr] = None
    lease: Optional[Lease] = None


@dataclass(frozen=True)
class Grow(Stmt):
    pool: Ref = None
    amount: Expr = None


@dataclass(frozen=True)
class Drop(Stmt):
    pool: Ref = None


@dataclass(frozen=True)
class Release(Stmt):
    pool: Ref = None


@dataclass(frozen=True)
class Load(Stmt):
    pool: Ref = None
    amount: Expr = None


@dataclass(frozen=True)
class Run(Stmt):
    """`run S1, S2 [prefill|decode] (w) [growing P];` — `stages` is empty for a
    queue entry's `run (w);`."""

    stages: Tuple[Ref, ...] = ()
    mode: Optional[str] = None        # None, "prefill" or "decode"
    work: Expr = None
    growing: Optional[Ref] = None


@dataclass(frozen=True)
class Branch(Stmt):
    """`branch (test) {…} [else {…}]`; `chance` is True for `branch with (p)`.

    `test_text` is the guard's source text (the run-time error prints it back).
    """

    test: Expr = None
    then: Tuple[Stmt, ...] = ()
    other: Optional[Tuple[Stmt, ...]] = None
    chance: bool = False
    test_text: str = field(default="", compare=False)


@dataclass(frozen=True)
class Loop(Stmt):
    body: Tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class Choose(Stmt):
    name: str = ""
    count: Expr = None
    keys: Tuple[Expr, ...] = ()


@dataclass(frozen=True)
class Serving(Stmt):
    """A serving form: `role [ [i] | on S, … ] work [growing P];` or
    `transfer [ [i] | on S, … ] work from P to Q (n);`.

    role is "prefill", "decode", "tool" or "transfer"; a transfer always has
    `source`, `dest` and `amount` (and no `growing`), the others never.
    """

    role: str = ""
    index: Optional[Expr] = None
    on: Optional[Tuple[Ref, ...]] = None
    work: Expr = None
    growing: Optional[Ref] = None
    source: Optional[Ref] = None
    dest: Optional[Ref] = None
    amount: Optional[Expr] = None


@dataclass(frozen=True)
class QueueCall(Stmt):
    """`Q[i].verb (args) [from S[k]] [to P (m)];`"""

    queue: str = ""
    index: Optional[Expr] = None
    verb: str = ""
    args: Tuple[Expr, ...] = ()
    source: Optional[str] = None
    source_index: Optional[Expr] = None
    dest: Optional[Ref] = None
    amount: Optional[Expr] = None
    source_span: Optional[Span] = None      # where `S` of `from S` is written


# ------------------------------------------------- pool options, stage kinds


@dataclass(frozen=True)
class Cap(Node):
    value: Expr = None


@dataclass(frozen=True)
class Block(Node):
    value: Expr = None


@dataclass(frozen=True)
class Evict(Node):
    """`evict lru;` (keys None) or `evict by (keys);`"""

    keys: Optional[Tuple[Expr, ...]] = None


@dataclass(frozen=True)
class Preempt(Node):
    policy: str = "none"      # "lifo" or "none"


@dataclass(frozen=True)
class WaitOrder(Node):
    """The pool option `queue fifo;` (keys None) or `queue by (keys);`"""

    keys: Optional[Tuple[Expr, ...]] = None


@dataclass(frozen=True)
class AdmitVia(Node):
    stage: str = ""


@dataclass(frozen=True)
class Spill(Node):
    """`spill target via stage (amount) when (condition);`"""

    target: str = ""
    via: str = ""
    amount: Expr = None
    when: Expr = None
    target_span: Optional[Span] = None     # where the two names are written (0.1.2 marks the faulty one)
    via_span: Optional[Span] = None


PoolOption = Union[Cap, Block, Evict, Preempt, WaitOrder, AdmitVia, Spill]


@dataclass(frozen=True)
class Fifo(Node):
    servers: Optional[Expr] = None    # None: `fifo` alone, one server


@dataclass(frozen=True)
class Ps(Node):
    capacity: Expr = None


@dataclass(frozen=True)
class Delay(Node):
    pass


@dataclass(frozen=True)
class Budget(Node):
    value: Expr = None


@dataclass(frozen=True)
class Cost(Node):
    value: Expr = None


@dataclass(frozen=True)
class Chunk(Node):
    value: Expr = None


@dataclass(frozen=True)
class Memory(Node):
    pool: str = ""


@dataclass(frozen=True)
class ServeOrder(Node):
    """A step stage's `serve`: order "admission", "decode_first",
    "exclusive_prefill" or "by" (with keys)."""

    order: str = "admission"
    keys: Tuple[Expr, ...] = ()


StepOption = Union[Budget, Cost, Chunk, Memory, ServeOrder]


@dataclass(frozen=True)
class Step(Node):
    options: Tuple[StepOption, ...] = ()


StageKind = Union[Fifo, Ps, Delay, Step]


def last_option(options, kind):
    """The option of type `kind` that wins (the last written), or None."""
    found = None
    for option in options:
        if isinstance(option, kind):
            found = option
    return found


# ---------------------------------------------------------------- items


@dataclass(frozen=True)
class Item(Node):
    pass


@dataclass(frozen=True)
class Let(Item):
    name: str = ""
    value: Expr = None


@dataclass(frozen=True)
class Pool(Item):
    """`pool name[size] { options }`; size None for a single pool."""

    name: str = ""
    size: Optional[int] = None
    options: Tuple[PoolOption, ...] = ()


@dataclass(frozen=True)
class Stage(Item):
    name: str = ""
    size: Optional[int] = None
    kind: StageKind = None


@dataclass(frozen=True)
class Entry(Node):
    """A queue entry `verb [(params)] [from source] { body }`; params None when
    written without parentheses (`route { … }`)."""

    verb: str = ""
    params: Optional[Tuple[str, ...]] = None
    source: Optional[str] = None
    body: Tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class Queue(Item):
    """`queue name[size] : roles { pools, serve [latency], nic, entries }`."""

    name: str = ""
    size: Optional[int] = None
    roles: Tuple[str, ...] = ()
    pools: Tuple[Pool, ...] = ()
    serve: Optional[StageKind] = None
    latency: Optional[Expr] = None
    nic: Optional[StageKind] = None
    entries: Tuple[Entry, ...] = ()


@dataclass(frozen=True)
class Pull(Item):
    """`reader pull source [latency x] share policy;`"""

    reader: str = ""
    source: str = ""
    latency: Optional[Expr] = None
    policy: str = "maxmin"


@dataclass(frozen=True)
class Share(Item):
    policy: str = "maxmin"     # "maxmin" or "bottleneck"


@dataclass(frozen=True)
class Gauge(Item):
    name: str = ""
    value: Expr = None


@dataclass(frozen=True)
class Arrive(Node):
    """form: "poisson", "renewal", "closed", "batch", "replay", "modulated" or "none" (value None).

    Extensions (docs/differences.md): `renewal` with options (("rate", (r,)),) runs its gaps in
    the rate's operational time; `modulated` (written `poisson(r1, …) leave(q1, …)`) has value
    None and options (("rates", (r1, …)), ("leave", (q1, …))).

    `replay` (an extension): value is the speed-up k (None: 1), `options` its clauses as
    (word, arguments): ("window", (from, to)), ("keep", (p,)), ("copies", (n, shift)).
    """

    form: str = "none"
    value: Optional[Expr] = None
    options: tuple = ()


@dataclass(frozen=True)
class Trace(Node):
    path: str = ""
    ordered: bool = False
    prefix: Optional[Expr] = None     # an extension: `prefix(C)`, a cache of C blocks shared by content id


@dataclass(frozen=True)
class Init(Node):
    body: Tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class TurnBlock(Node):
    body: Tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class ClientSession(Node):
    """The `session { … }` inside `workload` (the client side)."""

    body: Tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class Hidden(Node):
    names: Tuple[Name, ...] = ()


WorkloadItem = Union[Arrive, Trace, Init, TurnBlock, ClientSession, Hidden]


@dataclass(frozen=True)
class Workload(Item):
    """`workload { … }`: items in source order; the properties apply
    "a later arrive/trace/init/turn replaces the earlier one"."""

    items: Tuple[WorkloadItem, ...] = ()

    def _last(self, kind):
        return last_option(self.items, kind)

    @property
    def arrive(self) -> Optional[Arrive]:
        return self._last(Arrive)

    @property
    def trace(self) -> Optional[Trace]:
        return self._last(Trace)

    @property
    def init(self) -> Optional[Init]:
        return self._last(Init)

    @property
    def turn(self) -> Optional[TurnBlock]:
        return self._last(TurnBlock)

    @property
    def session(self) -> Optional[ClientSession]:
        return self._last(ClientSession)

    @property
    def hidden(self) -> Tuple[Name, ...]:
        return tuple(n for item in self.items if isinstance(item, Hidden) for n in item.names)


@dataclass(frozen=True)
class Session(Item):
    """A top-level `session { … }`."""

    body: Tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class Server(Item):
    body: Tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class RunSetting(Node):
    key: str = ""          # horizon, warmup, seed or arrivals
    value: Expr = None


@dataclass(frozen=True)
class RunSettings(Item):
    settings: Tuple[RunSetting, ...] = ()


@dataclass(frozen=True)
class Program:
    """A parsed program: items in source order, defs expanded.

    `defs` names every `def` declared (in order), for `--def` diagnostics;
    `size_lets` the `let`s some array size was folded from.
    """

    items: Tuple[Item, ...] = ()
    file: Optional[str] = None
    source: str = field(default="", compare=False, repr=False)
    defs: Tuple[str, ...] = ()
    size_lets: frozenset = frozenset()


# Each expression node's children, last first (the order `subexpressions` pushes
# them): a lookup by exact type, because the linker's walks visit every node
# of every expression several times and an isinstance chain per node dominated
# its time.  (The expression classes have no subclasses.)
_CHILDREN_REVERSED = {
    Ref: lambda e: () if e.index is None else (e.index,),
    Unary: lambda e: (e.operand,),
    Binary: lambda e: (e.right, e.left),
    Cond: lambda e: (e.other, e.then, e.test),
    Call: lambda e: e.args[::-1],
    Sample: lambda e: e.args[::-1],
    Aggregate: lambda e: (e.body, e.count),
}


def subexpressions(e):
    """Every sub-expression, pre-order (a loop, not recursion: chains run thousands deep)."""
    if e is None:
        return
    stack = [e]
    pop, push, children = stack.pop, stack.extend, _CHILDREN_REVERSED.get
    while stack:
        x = pop()
        yield x
        kids = children(type(x))
        if kids is not None:
            push(kids(x))


# ---------------------------------------------------------------- walking statements
#
# The one toolkit for the front end's walks: the blocks a statement nests, every
# statement of a block in source order, and the expressions a statement reads.

_END = object()


def sub_blocks(stmt) -> list:
    """The blocks a statement nests: a hold's or a loop's body, a branch's two arms."""
    kind = type(stmt)     # exact types: every statement is asked, and the classes have no subclasses
    if kind is Hold or kind is Loop:
        return [stmt.body]
    if kind is Branch:
        return [stmt.then] + ([stmt.other] if stmt.other is not None else [])
    return []


def walk(body):
    """Every statement of a block, nested ones included, pre-order (a hold, then its body), in source
    order (a loop over a stack of blocks, not recursion: blocks may nest thousands deep)."""
    stack = [iter(body)]
    while stack:
        stmt = next(stack[-1], _END)
        if stmt is _END:
            stack.pop()
            continue
        yield stmt
        blocks = sub_blocks(stmt)
        if blocks:
            stack.append(iter([s for b in blocks for s in b]))


def expressions_of(stmt, refs: bool = True) -> list:
    """The expressions a statement reads itself (not those of its nested blocks).

    With `refs` the pool and stage references it names are among them (the linker
    resolves them); without, only the values it computes (the queue expander's view:
    a member index counts for `grow`/`load`, which the expander rewrites, and a
    queue call's arguments and indices).
    """
    kind = type(stmt)
    if kind is Set or kind is Observe:
        return [stmt.value]
    if kind is Choose:
        return [stmt.count, *stmt.keys]
    if kind is Branch:
        return [stmt.test]
    if kind is Grow or kind is Load:
        if refs:
            return [stmt.pool, stmt.amount]
        pool = stmt.pool
        return [stmt.amount] + ([pool.index] if type(pool) is Ref and pool.index is not None else [])
    if kind is Drop or kind is Release:
        return [stmt.pool] if refs else []
    if kind is Run:
        if not refs:
            return [stmt.work]
        return [*stmt.stages, stmt.work] + ([stmt.growing] if stmt.growing is not None else [])
    if kind is Serving:
        parts = (stmt.index, *(stmt.on or ()), stmt.work, stmt.growing, stmt.source, stmt.dest, stmt.amount) \
            if refs else (stmt.index, stmt.work, stmt.amount)
        return [x for x in parts if x is not None]
    if kind is QueueCall and not refs:     # the linker meets queue calls expanded
        return [x for x in (stmt.index, *stmt.args, stmt.source_index, stmt.amount) if x is not None]
    if kind is Hold:
        return _hold_expressions(stmt, refs)
    return []


def _hold_expressions(hold, refs: bool) -> list:
    if refs:
        out = []
        for hp in hold.pools:
            out += [hp.pool, hp.units] + ([hp.reserve] if hp.reserve is not None else [])
        out += [x for x in (hold.reuse, hold.cache) if x is not None]
        if hold.lease is not None:
            out += [hold.lease.pool, hold.lease.time]
        return out + [b.value for b in hold.bindings]
    out = [x for hp in hold.pools for x in (hp.units, hp.reserve) if x is not None]
    out += [x for x in (hold.reuse, hold.cache) if x is not None] + [b.value for b in hold.bindings]
    if hold.lease is not None:
        out.append(hold.lease.time)
    return out

"""Queues (spec 03 §14): a named bundle of pools, one stage and entries, written out.

A queue `Q` declares pools `Q.p`, the stage `Q` (its `serve`), `Q.nic`, and
for a link latency the delay stage `Q.latency`; a pull relation adds
`R.nic.latency`.  `declarations` turns those into ordinary pool and stage
items, in the order pyserq numbers them; `Expander.call` replaces one call
(`Q[i].verb (args) [from S[k]] [to P (m)];`, or `request Q;`) by the entry's
body with its parameters, own pools and stage, `self` and locals written in.
The linker then links the result like any kernel statement.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sq.frontend import ast as A

ROLES = {"gateway": "route", "prefill": "prefill", "decode": "decode", "link": "transfer"}
MAX_STATEMENTS = 100_000


@dataclass
class QueueInfo:
    item: A.Queue
    locals: set            # names its (non-route) entries set, choose or mark
    marks: set
    pull_from: str | None = None          # the queue this one pulls from
    pull_latency: Any = None

    @property
    def name(self) -> str:
        return self.item.name

    @property
    def family(self) -> bool:
        return self.item.size is not None

    def entry(self, verb: str, with_source: bool) -> A.Entry | None:
        found = [e for e in self.item.entries if e.verb == verb and (e.source is not None) == with_source]
        return found[0] if found else None

    def leased_pool(self) -> str | None:
        """The own pool its entries lease (the KV a prefiller leaves for the next stage)."""
        for e in self.item.entries:
            for s in A.walk(e.body):
                if isinstance(s, A.Hold) and s.lease is not None:
                    return s.lease.pool.name
        return None


def declarations(items: list, error, fold_latency) -> tuple[list, dict]:
    """Items with every queue and pull replaced by plain pool/stage declarations (and a share)."""
    out: list = []
    queues: dict[str, QueueInfo] = {}
    for it in items:
        if isinstance(it, A.Queue):
            if it.name in queues:
                raise error(f"duplicate queue `{it.name}`", _word(it, it.name), phase="parse")
            if it.latency is not None:
                fold_latency(it.latency, f"{it.name}.latency")
            queues[it.name] = _info(it)
            out.extend(_queue_items(it))
        elif isinstance(it, A.Pull):
            reader, source = queues.get(it.reader), queues.get(it.source)
            if reader is None or source is None:
                missing = it.reader if reader is None else it.source   # the reader is named first
                raise error(f"`{it.reader} pull {it.source}`: no queue `{missing}` is declared above", it,
                            phase="parse")
            for q in (reader, source):
                if q.item.nic is None:
                    raise error(f"`{it.reader} pull {it.source}`: queue `{q.name}` has no `nic`; a read runs "
                                f"over the source's NIC and the reader's", it, phase="parse")
            if reader.pull_from is not None:
                raise error(f"`{it.reader}` pulls from `{reader.pull_from}` already: one relation per reader", it,
                            phase="parse")
            reader.pull_from, reader.pull_latency = it.source, it.latency
            if it.latency is not None:
                fold_latency(it.latency, f"{it.reader}.pull")
                out.append(A.Stage(it.span, name=f"{it.reader}.nic.latency", size=reader.item.size,
                                   kind=A.Delay(it.span)))
            out.append(A.Share(it.span, policy=it.policy))
        else:
            out.append(it)
    return out, queues


def _info(q: A.Queue) -> QueueInfo:
    names, marks = set(), set()
    for e in q.entries:
        if e.verb == "route":
            continue
        for s in A.walk(e.body):
            if isinstance(s, (A.Set, A.Choose)):
                names.add(s.name)
            elif isinstance(s, A.Mark):
                names.add(s.name)
    for e in q.entries:
        for s in A.walk(e.body):
            if isinstance(s, A.Mark):
                marks.add(s.name)
    return QueueInfo(q, names | marks, marks)


def _queue_items(q: A.Queue) -> list:
    out: list = []
    for p in q.pools:
        out.append(A.Pool(p.span, name=f"{q.name}.{p.name}", size=q.size, options=_own_options(q, p.options)))
    stages = []
    if q.serve is not None:
        stages.append((q.serve.span, A.Stage(q.span, name=q.name, size=q.size, kind=_own_kind(q, q.serve))))
    if q.nic is not None:
        stages.append((q.nic.span, A.Stage(q.span, name=f"{q.name}.nic", size=q.size, kind=q.nic)))
    stages.sort(key=lambda t: (t[0].line, t[0].col))   # `serve` and `nic` as written
    out.extend(s for _, s in stages)
    if q.latency is not None:
        out.append(A.Stage(q.span, name=f"{q.name}.latency", size=q.size, kind=A.Delay(q.span)))
    return out


def _own_options(q: A.Queue, options: tuple) -> tuple:
    own = {p.name for p in q.pools}
    return tuple(replace(o, target=f"{q.name}.{o.target}") if isinstance(o, A.Spill) and o.target in own else o
                 for o in options)


def _own_kind(q: A.Queue, kind: Any) -> Any:
    if not isinstance(kind, A.Step):
        return kind
    own = {p.name for p in q.pools}
    opts = tuple(replace(o, pool=f"{q.name}.{o.pool}") if isinstance(o, A.Memory) and o.pool in own else o
                 for o in kind.options)
    return replace(kind, options=opts)


class Expander:
    """Writes out queue calls; `lets` folds the link latencies."""

    def __init__(self, queues: dict, error, fold_latency, may_read=lambda name: True,
                 is_constant=lambda name: True):
        self.queues = queues
        self.is_constant = is_constant   # a `let` or `inf`
        self.may_read = may_read    # names an entry may read besides its own (lets, context, hidden, …)
        self.error = error
        self.fold_latency = fold_latency
        self.count = 0

    # ------------------------------------------------------------ calls
    def request(self, r: A.Request, stack: tuple = ()) -> list:
        q = self.queues.get(r.gateway)
        if q is None:
            raise self.error(f"`request {r.gateway}`: no queue `{r.gateway}` is declared", _name_of(r), phase="parse")
        if "gateway" not in q.item.roles:
            raise self.error(f"`request {r.gateway}`: queue `{r.gateway}` does not play `gateway`", _name_of(r),
                             phase="parse")
        call = A.QueueCall(r.span, queue=r.gateway, verb="route", via=r.via)
        return self.call(call, stack)

    def call(self, c: A.QueueCall, stack: tuple = (), source_pool: Any = None) -> list:
        label = f"`{c.queue}.{c.verb}`"
        q = self.queues.get(c.queue)
        if q is None:
            raise self.error(f"{label}: no queue `{c.queue}` is declared", c, phase="parse", length=1)
        if q.family and c.index is None:
            raise self.error(f"{label}: `{c.queue}` is a family of {q.item.size}; index it", c, phase="parse")
        if not q.family and c.index is not None:
            raise self.error(f"`{c.queue}[…].{c.verb}`: `{c.queue}` is one queue, not a family", c, phase="parse")
        if c.dest is not None and c.verb != "transfer":
            raise self.error(f"`to` belongs to a link's `transfer`, not to `{c.verb}`", c, phase="parse")
        entry = q.entry(c.verb, c.source is not None) or (q.entry(c.verb, False) if c.source is not None else None)
        if entry is None:
            raise self.error(f"{label}: queue `{c.queue}` has no such entry", c, phase="parse")
        if c.verb == "transfer" and (c.source is None or c.dest is None):
            raise self.error(f"`{c.queue}.transfer (n) from S to P (m)`: a transfer names the pool it takes from "
                             f"and the pool it fills", c, phase="parse")
        params = entry.params or ()
        if len(c.args) != len(params):
            raise self.error(f"{label} takes {len(params)} argument(s), got {len(c.args)}", c, phase="parse")
        key = (c.queue, c.verb)
        if key in stack:
            raise self.error(f"{label}: the entries call each other in a cycle", c, phase="parse")
        for param, a in zip(params, c.args):
            if any(isinstance(x, A.Sample) for x in A.subexpressions(a)):
                raise self.error(f"{label}: the argument for `{param}` draws a sample; a parameter is substituted, "
                                 f"so a name used twice would draw twice", c, phase="parse")
        source = source_pool if source_pool is not None else self._source_pool(c)
        scope = _Scope(q, c.index, dict(zip(params, c.args)), entry.source, source, entry.verb == "route", c,
                       self.error)
        scope.entry, scope.may_read, scope.is_constant = entry, self.may_read, self.is_constant
        body = [s for stmt in entry.body for s in self._stmt(stmt, scope, stack + (key,))]
        if c.dest is not None:
            body.append(A.Load(c.span, pool=c.dest, amount=c.amount, via=c.via))
            body.append(A.Release(c.span, pool=scope.source_pool, via=c.via))
        self.count += len(body)
        if self.count > MAX_STATEMENTS:
            raise self.error("the queue calls write out more than 100000 statements", c, phase="parse")
        return body

    def _source_pool(self, c: A.QueueCall) -> Any:
        if c.source is None:
            return None
        src = self.queues.get(c.source)
        if src is None:
            # 0.1.2 takes an undeclared `S` for a pool's name: a fault only where the entry uses it
            at = c.source_span or c.span
            return A.Name(at, c.source) if c.source_index is None else A.Ref(at, c.source, c.source_index)
        if src.family and c.source_index is None:
            raise self.error(f"`from {c.source}`: `{c.source}` is a family of {src.item.size}; index it", c,
                             phase="parse")
        pool = src.leased_pool()
        if pool is None:
            raise self.error(f"`from {c.source}`: no entry of `{c.source}` leases a pool, so it has nothing to take",
                             c, phase="parse")
        name = f"{c.source}.{pool}"
        at = c.source_span or c.span      # 0.1.2 places a fault in the source pool at `S`
        if c.source_index is None:
            return A.Name(at, name)
        return A.Ref(at, name, c.source_index)

    def check_entries(self) -> None:
        """Every entry is checked once as written, called or not: it may read only its own names."""
        for q in self.queues.values():
            for entry in q.item.entries:
                if entry.verb == "route":
                    continue
                params = entry.params or ()
                args = {p: A.Name(entry.span, p) for p in params}
                sc = _Scope(q, A.Num(entry.span, 0.0), args, entry.source, None, False, entry, self.error)
                sc.entry, sc.may_read = entry, lambda name, ps=frozenset(params): name in ps or self.may_read(name)
                sc.is_constant = self.is_constant
                sc.checking = True
                for stmt in entry.body:
                    self._check_stmt(stmt, sc)

    def _check_stmt(self, s: Any, sc: "_Scope") -> None:
        if isinstance(s, A.Hold):
            sc.check_hold(s)
            outer = sc.bindings
            sc.bindings = outer | {b.name for b in s.bindings}
            try:
                # 0.1.2 writes a binding into the body where it is read: one never read is never checked
                read = _names_read_in(s.body)
                unread = {id(b.value) for b in s.bindings if b.name not in read}
                for e in A.expressions_of(s, refs=False):
                    if id(e) not in unread:
                        sc.expr(e)
                for inner in s.body:
                    self._check_stmt(inner, sc)
            finally:
                sc.bindings = outer
            return
        indices = {id(x) for x in _index_parts(s)}
        for e in A.expressions_of(s, refs=False):
            sc.expr(e, in_index=id(e) in indices)
        for block in A.sub_blocks(s):
            for inner in block:
                self._check_stmt(inner, sc)

    # ------------------------------------------------------------ an entry's statements
    def _stmt(self, s: Any, sc: "_Scope", stack: tuple) -> list:
        if isinstance(s, A.Mark):
            return [A.Set(s.span, name=f"{sc.q.name}.{s.name}", value=A.Name(s.span, "now"), via=s.via)]
        if isinstance(s, A.QueueCall):
            inner = replace(s, index=_opt(sc.index_expr, s.index), args=tuple(sc.expr(a) for a in s.args),
                            source_index=_opt(sc.index_expr, s.source_index),
                            dest=_opt(sc.pool, s.dest), amount=_opt(sc.expr, s.amount))
            passed = sc.source_pool if s.source is not None and s.source == sc.source_param else None
            return self.call(inner, stack, passed)
        if isinstance(s, A.Request):
            raise self.error("`request` inside a server or queue entry: a server does not request itself", s,
                             phase="parse")
        if isinstance(s, A.Set):
            return [replace(s, name=sc.local(s.name), value=sc.expr(s.value))]
        if isinstance(s, A.Observe):
            return [replace(s, value=sc.expr(s.value))]
        if isinstance(s, A.Choose):
            return [replace(s, name=sc.local(s.name), count=sc.expr(s.count),
                            keys=tuple(sc.expr(k) for k in s.keys))]
        if isinstance(s, A.Hold):
            sc.check_hold(s)
            outer = sc.bindings
            sc.bindings = outer | {b.name for b in s.bindings}   # a hold's bindings are its own names
            try:
                return self._hold(s, sc, stack)
            finally:
                sc.bindings = outer
        if isinstance(s, (A.Grow, A.Load)):
            return [replace(s, pool=sc.pool(s.pool), amount=sc.expr(s.amount))]
        return self._plain(s, sc, stack)

    def _hold(self, s: A.Hold, sc: "_Scope", stack: tuple) -> list:
        pools = tuple(replace(hp, pool=sc.pool(hp.pool), units=sc.expr(hp.units),
                              reserve=_opt(sc.expr, hp.reserve)) for hp in s.pools)
        lease = None if s.lease is None else replace(s.lease, pool=sc.pool(s.lease.pool),
                                                     time=sc.expr(s.lease.time))
        read = _names_read_in(s.body)
        # a binding never read is never written into the body, so 0.1.2 checks nothing in it
        bindings = tuple(replace(b, value=sc.expr(b.value)) if b.name in read else b for b in s.bindings)
        return [replace(s, pools=pools, reuse=_opt(sc.expr, s.reuse), bindings=bindings,
                        body=self._block(s.body, sc, stack), cache=_opt(sc.expr, s.cache), lease=lease)]

    def _plain(self, s: Any, sc: "_Scope", stack: tuple) -> list:
        if isinstance(s, (A.Drop, A.Release)):
            return [replace(s, pool=sc.pool(s.pool))]
        if isinstance(s, A.Run):
            stages = tuple(sc.stage(r) for r in s.stages) if s.stages else (sc.own_stage(s),)
            return [replace(s, stages=stages, work=sc.expr(s.work), growing=_opt(sc.pool, s.growing))]
        if isinstance(s, A.Branch):
            return [replace(s, test=sc.expr(s.test), then=self._block(s.then, sc, stack),
                            other=None if s.other is None else self._block(s.other, sc, stack))]
        if isinstance(s, A.Loop):
            return [replace(s, body=self._block(s.body, sc, stack))]
        if isinstance(s, A.Serving):
            return self._serving(s, sc, stack)
        return [s]

    def _block(self, body: tuple, sc: "_Scope", stack: tuple) -> tuple:
        return tuple(x for s in body for x in self._stmt(s, sc, stack))

    def _serving(self, s: A.Serving, sc: "_Scope", stack: tuple) -> list:
        work = sc.expr(s.work)
        growing = _opt(sc.pool, s.growing)
        if s.role != "transfer":
            on = tuple(sc.stage(r) for r in s.on) if s.on else None
            if on is None and s.index is None and sc.q.item.serve is not None:
                on = (sc.own_stage(s),)
            return [replace(s, on=on, index=_opt(sc.index_expr, s.index), work=work, growing=growing)]
        source, dest, amount = _opt(sc.pool, s.source), _opt(sc.pool, s.dest), _opt(sc.expr, s.amount)
        pre: list = []
        on = tuple(sc.stage(r) for r in s.on) if s.on else None
        if on is None and s.index is None and sc.q.pull_from is not None and sc.source_pool is not None:
            taken = getattr(s.source, "name", None)
            if s.source is not None and taken != sc.source_param:
                raise self.error(f"`transfer … from {taken}`: a read takes from the entry's source, "
                                 f"`from {sc.source_param}`", s.source, phase="parse")
            on = self._pull_flow(s, sc, pre)
        elif s.on == () and s.index is None:     # the parser left the stage to a pull relation
            raise self.error(f"`{sc.q.name}`'s `transfer` names no NIC and `{sc.q.name}` pulls from no queue: "
                             f"declare `{sc.q.name} pull SOURCE share …;`, or write `transfer on …`", sc.call,
                             phase="parse", length=1)
        return pre + [replace(s, on=on, index=_opt(sc.index_expr, s.index), work=work, growing=growing, source=source,
                              dest=dest, amount=amount)]

    def _pull_flow(self, s: A.Serving, sc: "_Scope", pre: list) -> tuple:
        """A transfer in a pulling queue's `from` entry runs over both NICs as one flow."""
        q, src = sc.q, self.queues[sc.q.pull_from]
        if q.pull_latency is not None:
            lat = self.fold_latency(q.pull_latency, f"{q.name}.pull")
            pre.append(A.Run(s.span, stages=(sc.member(f"{q.name}.nic.latency"),), work=A.Num(s.span, lat),
                             via=s.via))
        src_ref = sc.source_pool
        index = src_ref.index if isinstance(src_ref, A.Ref) else None
        src_nic = A.Ref(s.span, f"{src.name}.nic", index) if index is not None else A.Name(s.span, f"{src.name}.nic")
        return (src_nic, sc.member(f"{q.name}.nic"))


def latency_runs(s: A.Serving, refs: tuple, queues: dict, fold_latency) -> list:
    """A transfer over a link queue with a `latency` first waits it out on `L.latency`."""
    runs = []
    for r in refs:
        link = queues.get(getattr(r, "name", None))
        if link is None or link.item.latency is None:
            continue
        lat = fold_latency(link.item.latency, f"{link.name}.latency")
        index = r.index if isinstance(r, A.Ref) and link.family else None
        stage = A.Name(s.span, f"{link.name}.latency") if index is None else \
            A.Ref(s.span, f"{link.name}.latency", index)
        runs.append(A.Run(s.span, stages=(stage,), work=A.Num(s.span, lat), via=s.via))
    return runs


class _Scope:
    """What names mean inside one call of an entry."""

    def __init__(self, q: QueueInfo, index: Any, args: dict, source_param: str | None, source_pool: Any,
                 route: bool, call: Any, error):
        self.q, self.index, self.args, self.call, self.error = q, index, args, call, error
        self.bindings: frozenset = frozenset()
        self.checking = False   # checking an entry as written, outside any call
        self.source_param, self._source = source_param, source_pool
        self.route = route
        self.own_pools = {p.name for p in q.item.pools}

    @property
    def source_pool(self) -> Any:
        """The pool `from S` hands over (None without one), found on first use."""
        if callable(self._source):
            self._source = self._source()
        return self._source

    def _arg(self, a: Any, bound: frozenset) -> Any:
        """A call's argument: a bare name there may be the queue's own pool (the
        member's) or stage; anywhere else an entry may not read it as a number."""
        if isinstance(a, A.Name) and a.name not in bound and a.name not in self.args \
                and a.name == self.source_param and (self.checking or self.source_pool is not None):
            return a if self.checking else self.source_pool     # `used(src)`: the pool `from S` hands over
        if isinstance(a, A.Name) and a.name not in bound and a.name not in self.args \
                and a.name != self.source_param:
            if a.name in self.own_pools:
                return self.member(f"{self.q.name}.{a.name}", a.span)
            if a.name == self.q.name:       # the queue's own stage: the member's
                return self.member(a.name, a.span)
        return self.expr(a, bound)

    def member(self, name: str, span: Any = None) -> Any:
        span = span or self.q.item.span
        if self.q.family:
            return A.Ref(span, name, self.index)
        return A.Name(span, name)

    def local(self, name: str) -> str:
        if self.route and name not in self.q.marks:
            return name
        return f"{self.q.name}.{name}"

    def own_stage(self, s: Any) -> Any:
        if self.q.item.serve is None:
            raise self.error(f"`run (…)` in queue `{self.q.name}`, which has no `serve`", s, phase="parse")
        return self.member(self.q.name)

    def pool(self, r: Any) -> Any:
        if isinstance(r, A.Name):
            if r.name == self.source_param and self.source_pool is not None:
                return self.source_pool
            if r.name in self.args:
                return self.args[r.name]
            if r.name in self.own_pools:
                return self.member(f"{self.q.name}.{r.name}")
            return r
        if isinstance(r, A.Ref):
            if r.field is None and r.index is None:
                return self.pool(A.Name(r.span, r.name))
            return replace(r, index=_opt(self.index_expr, r.index))
        return r

    def check_hold(self, h: A.Hold) -> None:
        """An entry allocates its queue's own pools (and the `from` pool it is handed), and its
        header reads only the entry's parameters, the queue's pools and stage, and constants."""
        if self.route:
            return
        label = f"`{self.q.name}.{self.entry.verb}`"
        if h.lease is not None and not self._own(h.lease.pool):
            raise self.error(f"{label} leases `{_pool_name(h.lease.pool)}`, which is not a pool of `{self.q.name}`",
                             self.entry, phase="parse")
        for hp in h.pools:
            if not self._own(hp.pool):
                raise self.error(f"{label} holds `{_pool_name(hp.pool)}`, which is not a pool of `{self.q.name}`: "
                                 f"an entry allocates its queue's own pools", self.entry, phase="parse")
        header = [x for hp in h.pools for x in (hp.units, hp.reserve) if x is not None]
        header += [h.reuse] if h.reuse is not None else []     # 0.1.2 lets `at admission` read freely
        bound = {b.name for b in h.bindings} | {x.var for e in header for x in A.subexpressions(e) if isinstance(x, A.Aggregate)}
        for e in header:
            for x, is_ref in _names(e):
                seen = x.name in self.args or x.name in bound or self.is_constant(x.name)
                if is_ref and not (seen or x.name in self.own_pools or x.name == self.q.name
                                   or x.name == self.source_param):
                    # a bare name handed to a function may be a pool or a stage: only the queue's own are seen
                    raise self.error(f"{label} reads `{x.name}`, which is not a pool or stage of `{self.q.name}`: "
                                     "a queue sees its own; the deployment reads across queues", self.entry,
                                     phase="parse")
                if not is_ref and not seen:
                    raise self.error(f"{label}: the header reads `{x.name}`; an entry's header sees its parameters "
                                     f"and the queue's pools and stage. Pass `{x.name}` as a parameter", self.entry,
                                     phase="parse")

    def _own(self, r: Any) -> bool:
        if isinstance(r, A.Ref) and r.field is not None or isinstance(r, A.Dotted):
            return True   # another queue's pool: refused where the hold is linked
        name = getattr(r, "name", None)
        return name is None or name in self.own_pools or name == self.source_param or name in self.args

    def stage(self, r: Any) -> Any:
        if isinstance(r, A.Name) and r.name in self.args:
            return self.args[r.name]
        if isinstance(r, A.Ref):
            return replace(r, index=_opt(self.index_expr, r.index))
        return r

    def index_expr(self, e: Any, bound: frozenset = frozenset()) -> Any:
        """An index (`L[…]`, `transfer[…]`): there the `from` parameter is the source member's index."""
        return self.expr(e, bound, in_index=True)

    def _source_read(self, e: A.Name, in_index: bool) -> Any:
        """The `from` parameter read in an expression: in an index the source member, else an error."""
        label = f"`{self.q.name}.{self.entry.verb}`"
        if not in_index:
            raise self.error(f"{label} reads `{e.name}` as a number: `{e.name}` is the source pool, and only in "
                             f"an index the source member (`L[{e.name}]`)", self.entry, phase="parse")
        if self.checking:
            return e
        src = self.source_pool
        if not isinstance(src, A.Ref):
            raise self.error(f"`{e.name}` as an index: its source `{_pool_name(src)}` is no family's member",
                             self.call, phase="parse")
        return src.index

    def expr(self, e: Any, bound: frozenset = frozenset(), in_index: bool = False) -> Any:
        """`e` as the entry's call sees it; `bound` are the aggregate indices around it;
        `in_index`: `e` is (part of) an index."""
        if e is None:
            return None
        if isinstance(e, A.Name) and e.name in bound:
            return e
        if isinstance(e, A.Name):
            if e.name in self.args:
                return self.args[e.name]
            if e.name == "self":
                if self.checking:
                    return e
                if not self.q.family:
                    raise self.error(f"`self` inside queue `{self.q.name}`, which is not a family", self.call,
                                     phase="parse")
                return self.index
            if e.name == self.source_param and (self.checking or self.source_pool is not None):
                return self._source_read(e, in_index)
            if e.name in self.own_pools and self.route:
                return self.member(f"{self.q.name}.{e.name}", e.span)
            if e.name in self.q.locals and not (self.route and e.name not in self.q.marks):
                return A.Dotted(e.span, self.q.name, e.name)
            if not self.route and e.name not in self.bindings and not self.may_read(e.name):
                label = f"`{self.q.name}.{self.entry.verb}`"
                raise self.error(f"{label} reads `{e.name}`, a session attribute set outside the queue: an entry "
                                 f"sees its parameters, the queue's pools, the context and the request's `hidden` "
                                 f"attributes; pass `{e.name}` as a parameter or `mark` a moment for the caller "
                                 f"to read", self.entry, phase="parse")
            return e
        if isinstance(e, A.Ref):
            if e.field is None and e.name in self.own_pools and e.index is None:
                return self.member(f"{self.q.name}.{e.name}")
            return replace(e, index=self.index_expr(e.index, bound))
        if isinstance(e, A.Unary):
            return replace(e, operand=self.expr(e.operand, bound, in_index))
        if isinstance(e, A.Binary):
            return replace(e, left=self.expr(e.left, bound, in_index), right=self.expr(e.right, bound, in_index))
        if isinstance(e, A.Cond):
            return replace(e, test=self.expr(e.test, bound, in_index), then=self.expr(e.then, bound, in_index),
                           other=self.expr(e.other, bound, in_index))
        if isinstance(e, (A.Call, A.Sample)):
            return replace(e, args=tuple(self._arg(a, bound) for a in e.args))
        if isinstance(e, A.Aggregate):
            return replace(e, count=self.expr(e.count, bound, in_index),
                           body=self.expr(e.body, bound | {e.var}, in_index))
        return e


def _names(e: Any, is_ref: bool = False):
    """Every name `e` reads, each with whether it is a whole argument of a call
    (there a name may stand for a pool or a stage rather than a number)."""
    if e is None:
        return
    if isinstance(e, A.Name):
        yield e, is_ref
        return
    if isinstance(e, A.Dotted) and is_ref:      # another queue's pool handed to a function
        yield A.Name(e.span, f"{e.base}.{e.field}"), True
        return
    if isinstance(e, A.Call):
        for a in e.args:
            yield from _names(a, True)
        return
    if isinstance(e, A.Sample):                 # a draw's arguments are numbers
        for a in e.args:
            yield from _names(a)
        return
    for name in ("operand", "left", "right", "test", "then", "other", "count", "body", "index"):
        child = getattr(e, name, None)
        if child is not None and not isinstance(child, (tuple, str, bool)):
            yield from _names(child)


def _word(item: A.Queue, name: str) -> Any:
    """The queue's name after `queue ` (items keep their keyword's position)."""
    sp = item.span
    return A.Name(replace(sp, col=sp.col + len("queue "), length=len(name)), name)


def _pool_name(r: Any) -> str:
    return getattr(r, "name", "?")


def _name_of(r: A.Request) -> Any:
    """`request NAME;` is placed at NAME (after `request `)."""
    sp = r.span
    return A.Name(replace(sp, col=sp.col + len("request "), length=len(r.gateway)), r.gateway)


def _index_parts(s: Any) -> list:
    """Those of `ast.expressions_of(s, refs=False)` that are indices (where the `from`
    parameter names the source member)."""
    if isinstance(s, (A.Grow, A.Load)):
        return [s.pool.index] if isinstance(s.pool, A.Ref) and s.pool.index is not None else []
    if isinstance(s, A.Serving):
        return [s.index] if s.index is not None else []
    if isinstance(s, A.QueueCall):
        return [x for x in (s.index, s.source_index) if x is not None]
    return []


def _names_read_in(body: Any) -> set:
    return {x.name for s in A.walk(body) for e in A.expressions_of(s, refs=False) for x in A.subexpressions(e) if isinstance(x, A.Name)}


def _opt(f, x: Any) -> Any:
    return None if x is None else f(x)


# The parser checks an entry's holds where the entry ends, as 0.1.2 does.
names_read = _names


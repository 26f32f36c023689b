"""A seeded generator of small, valid serQ programs for differential testing against pyserq 0.1.2.

`generate(seed)` returns a `Case`: the program text, its family and any trace
files it needs (written by `Case.materialise(folder)`). Eight families cover
the language:

* `net`   — open/closed/batch/renewal workloads over fifo/ps(φ)/delay networks
            with branch, branch with, loop, choose, gauges and warmup;
* `step`  — vLLM-like step engines with a KV pool kept tight so that
            preemption, rejection, eviction, chunked prefill, prefix caching
            across turns, leases and multi-pool holds all happen;
* `flow`  — runs over several stages under `share maxmin`/`bottleneck`, and
            queues with roles, transfers and a pull relation;
* `trace` — replay of a small generated CSV corpus;
* `edge`  — zero, negative, NaN and infinite amounts and works;
* `tiers` — multi-turn sessions on a prefix-cached KV pool: `reuse` bounds
            below the cached prefix (dead entries), `drop`, `load`,
            `release`, leases, `cached`/`cachedin`, `evict lru`/`evict by`
            over sizes, ages, `waiting` and attributes (snapshots of ended
            sessions), and spill chains of one or two tight tiers over fifo
            links, sometimes behind a step engine;
* `engines` — one to three step engines, sometimes sharing one `memory` pool:
            every serve policy (`serve by` keys over attributes, `remaining`,
            `admission`, `decoding`), budgets and chunks as Budget-moment
            expressions (draws, `residents`, `kv_decode`, `budget_left`), costs
            over every Step variable, `admit via` from a seqs pool and the KV
            pool with `queue by` orders, growing KV under `preempt lifo`/`none`,
            disaggregated prefill/decode, a tool call between decode phases
            while the KV is held, prefix caching across turns and leases;
* `holds` — holds on plain pools without any step engine (fifo/ps/delay
            stages): nested and multi-pool holds, `reserve`, `at admission`
            bindings, `queue by` orders with head-of-line blocking, `preempt
            lifo` driven by `grow` statements, `load`, `release` inside and
            outside holds (leases of finite, infinite and zero time), `cache`,
            `reuse`, `drop`, rejection, `stuck`, a pool array indexed by an
            attribute or a `choose`, and sessions that `end` inside holds
            (HOLDS_DIVERGENT_FORMS adds the forms sq is known to get wrong);
* `coinc` — programs whose events fall at one instant on purpose (constant works,
            whole token counts, batch/closed arrivals, equal priorities): see
            tests/helpers/gen_coincidences.py.

Every program keeps a short horizon so the reference runs it in well under a
second, and avoids the forms the spec says hang (a zero-time closed body, an
infinite poisson rate, a loop that never takes time).
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path

FAMILIES = ("net", "step", "flow", "trace", "edge", "tiers", "engines", "holds", "coinc")

# The `holds` form on which sq is known to differ from 0.1.2 (off; see docs/differences.md):
# a pool named twice in one hold (`hold A (u), A (v)`: 0.1.2 adds a `grow` to every entry of
# the pool, which can take `used` below 0, and leases every entry). With this off, the family
# draws the same numbers and writes the same programs, minus that form.
HOLDS_DIVERGENT_FORMS = False


@dataclass
class Case:
    """One generated program, with the trace files it replays (name -> CSV text)."""

    source: str
    family: str
    traces: dict = field(default_factory=dict)

    def materialise(self, folder: Path) -> str:
        """Write the trace files into `folder` and return the source with their absolute paths."""
        text = self.source
        for name, csv in self.traces.items():
            path = Path(folder) / name
            path.write_text(csv)
            text = text.replace(f'"{name}"', f'"{path}"')
        return text


def generate(seed: int, family: str | None = None) -> Case:
    rng = random.Random(seed)
    family = family or rng.choice(FAMILIES)
    return {"net": _net, "step": _step, "flow": _flow, "trace": _trace, "edge": _edge,
            "tiers": _tiers, "engines": _engines, "holds": _holds, "coinc": _coinc}[family](rng)


def _coinc(rng) -> Case:
    from tests.helpers.gen_coincidences import coincidences   # noqa: PLC0415 (loaded only for this family)
    return coincidences(rng, Case)


# ------------------------------------------------------------------ shared pieces

def _num(rng, lo, hi, digits=2):
    return round(rng.uniform(lo, hi), digits)


def _service(rng, mean):
    """A positive service-time expression with mean about `mean` (never zero, so closed bodies take time)."""
    m = round(mean, 3)
    return rng.choice([
        f"~exp({m})",
        f"~det({m})",
        f"~uniform({round(m / 2, 3)}, {round(1.5 * m, 3)})",
        f"~erlang({rng.randint(1, 4)}, {m})",
        f"~h2({m}, {rng.choice([1, 2, 4, 9])})",
        f"{round(m / 2, 3)} + ~exp({round(m / 2, 3)})",
    ])


def _arrival(rng, rate, closed_ok=True):
    kinds = ["poisson", "renewal", "batch"] + (["closed"] if closed_ok else [])
    kind = rng.choice(kinds)
    if kind == "poisson":
        return f"poisson({rate})"
    if kind == "renewal":
        return f"renewal({_service(rng, 1 / rate)})"
    if kind == "batch":
        return f"batch({rng.randint(1, 12)})"
    return f"closed({rng.randint(1, 6)})"


def _run_block(rng, horizon, arrival=""):
    parts = [f"horizon {horizon};"]
    finite = arrival.startswith(("poisson", "renewal")) and rng.random() < 0.15
    if rng.random() < 0.5 and not finite:
        parts.append(f"warmup {round(horizon * rng.choice([0.1, 0.25, 0.5]), 2)};")
    if finite:
        # A finite open run ends when its sessions drain; the horizon is only a deadline, so make it roomy.
        parts = [f"horizon {horizon * 20};", f"arrivals {rng.randint(1, 20)};"]
    return "run { " + " ".join(parts) + " }"


# ------------------------------------------------------------------ family (a): queueing networks

def _net(rng) -> Case:
    n = rng.randint(1, 4)
    stages, kinds = [], {}
    arrays = {}
    for i in range(n):
        name = f"s{i}"
        kind = rng.choice(["fifo", "fifo1", "fifoc", "ps", "psphi", "delay"])
        if kind == "fifo":
            decl = "fifo"
        elif kind == "fifo1":
            decl = "fifo(1)"
        elif kind == "fifoc":
            decl = f"fifo({rng.randint(2, 4)})"
        elif kind == "ps":
            decl = f"ps({_num(rng, 0.5, 3)})"
        elif kind == "psphi":
            decl = "ps(" + rng.choice([
                f"min(present, {rng.randint(1, 3)})",
                f"{_num(rng, 0.5, 2)} * min(present, {rng.randint(1, 4)})",
                f"1 + present / {rng.randint(2, 5)}",
                f"present > {rng.randint(1, 3)} ? {_num(rng, 1, 3)} : {_num(rng, 0.5, 1.5)}",
                f"sqrt(present) + {_num(rng, 0.1, 1)}",
            ]) + ")"
        else:
            decl = "delay"
        size = ""
        if rng.random() < 0.25 and kind != "delay":
            arrays[name] = rng.randint(2, 3)
            size = f"[{arrays[name]}]"
        stages.append(f"stage {name}{size} : {decl};")
        kinds[name] = kind
    names = list(kinds)
    rate = _num(rng, 0.3, 2.5)

    def ref(name, var=None):
        if name in arrays:
            return f"{name}[{var}]" if var else f"{name}[{rng.randrange(arrays[name])}]"
        return name

    def stmt(depth):
        r = rng.random()
        if depth > 1 or r < 0.45:
            name = rng.choice(names)
            if name in arrays:
                return (f"choose j in {arrays[name]} by ({rng.choice(['queue', 'work', 'busy'])}({name}[j]), j); "
                        f"run {name}[j] ({_service(rng, _num(rng, 0.1, 0.8))});")
            return f"run {name} ({_service(rng, _num(rng, 0.1, 0.8))});"
        if r < 0.6:
            return (f"branch with ({_num(rng, 0.1, 0.9)}) {{ {stmt(depth + 1)} }}"
                    + (f" else {{ {stmt(depth + 1)} }}" if rng.random() < 0.6 else ""))
        if r < 0.72:
            return (f"branch (serial - 2 * floor(serial / 2) == 0) {{ {stmt(depth + 1)} }}"
                    f" else {{ {stmt(depth + 1)} observe odd = now; }}")
        if r < 0.82:
            name = rng.choice([x for x in names if x not in arrays] or names)
            return (f"branch (queue({ref(name)}) > {rng.randint(0, 3)}) {{ {stmt(depth + 1)} }}")
        if r < 0.86:
            return f"set v = {_service(rng, 1)}; observe v = v;"
        if r < 0.93 and depth == 0:
            name = rng.choice(names)
            return (f"hold slots ({rng.choice([1, 1, 2, 'v + 1', 3])}) "
                    f"{{ run {ref(name)} ({_service(rng, _num(rng, 0.1, 0.8))}); }}")
        if r < 0.96:
            s_ = ref(rng.choice(names))
            return (f"observe est = est_lambda({s_}) + est_rho({s_}) + est_wait({s_}) "
                    f"+ price({s_}, 0.1, 0.2) + holders(slots) + queued(slots);")
        return f"observe q = queue({ref(rng.choice(names))}) + busy({ref(rng.choice(names))});"

    # The first statement always takes time: a closed population with a zero-time body hangs 0.1.2.
    name = rng.choice(names)
    first = (f"run {ref(name)} ({_service(rng, _num(rng, 0.1, 0.8))});")
    body = " ".join([first] + [stmt(0) for _ in range(rng.randint(0, 3))])
    # A server loop exits only through `end`, which the server refuses: loops live in the session.
    server = f"server {{ set t0 = now; set v = {_service(rng, 1)}; {body} observe resp = now - t0; }}"
    arrival = _arrival(rng, rate)
    if rng.random() < 0.4:
        session = "session { turn; request; }"
    else:
        k = rng.randint(2, 4)
        session = (f"session {{ set k = 0; loop {{ turn; set k = k + 1; request; "
                   f"branch (k >= {k}) {{ end; }} run think ({_service(rng, _num(rng, 0.2, 2))}); }} }}")
        stages.append("stage think : delay;")
    slot_opts = rng.choice(["", "queue by (waited, serial);", "queue by (-v);", "queue fifo;"])
    stages.append(f"pool slots {{ cap {rng.randint(1, 3)}; {slot_opts} }}")
    gauges = []
    for g in range(rng.randint(0, 2)):
        s = rng.choice(names)
        fn = rng.choice(["queue", "busy"])
        gauges.append(f"gauge g{g} = {fn}({ref(s)});")
    prog = "\n".join(stages + gauges + [
        _run_block(rng, rng.choice([20, 40, 60]), arrival),
        f"workload {{ arrive {arrival}; {session} }}",
        server,
    ])
    return Case(prog, "net")


# ------------------------------------------------------------------ family (b): step engines with a KV pool

def _step(rng) -> Case:
    r = rng.random()
    return _engine(rng) if r < 0.45 else _replicas(rng) if r < 0.7 else _chaos(rng)


def _chaos(rng) -> Case:
    """Two step engines, a ps tool and a plain pool, with a server of random kernel statements."""
    bs = rng.choice([1, 2, 4])
    cap = bs * rng.randint(8, 20)
    items = [f"pool kv {{ cap {cap}; block {bs}; evict by ({rng.choice(['size, -last', 'size, last', '-age, waiting'])}); "
             f"preempt {rng.choice(['lifo', 'none'])}; }}",
             f"pool mem {{ cap {cap}; {rng.choice(['', 'evict lru;', 'queue by (waited);'])} "
             f"{'spill disk via wire (size / 20) when (~uniform(0, 1) < 0.5);' if rng.random() < 0.4 else ''} }}",
             "pool disk { cap inf; }",
             f"stage e1 : step {{ budget {rng.choice([4, 8, '4 + ~uniform(0, 8)'])}; chunk {rng.choice([2, 4, 'max(1, 8 - residents)'])}; "
             f"cost 0.01 + 0.001 * tokens + ~exp(0.001); memory kv; {rng.choice(['', 'serve decode first;', 'serve by (-remaining);'])} }}",
             f"stage e2 : step {{ cost 0.005 + 0.0005 * decoders + 0.0001 * kv_prefill; memory mem; "
             f"{rng.choice(['', 'serve exclusive prefill;', 'serve admission;'])} }}",
             f"stage tool : ps({rng.choice(['1', 'min(present, 2)', '0.5 + ~uniform(0, 1)'])});"]

    shared = rng.random() < 0.5
    if shared:
        # Spill writes and in-hold runs become flows of the policy, and preemptions remove them mid-flight.
        items += [f"share {rng.choice(['maxmin', 'bottleneck'])};", f"stage wire : ps({_num(rng, 20, 200)});",
                  f"stage l1 : ps({_num(rng, 50, 500)});"]
    else:
        items.append("stage wire : fifo;")
    flow = f"run l1, wire ({_service(rng, 0.5)});" if shared else ""

    def stmt(depth):
        r = rng.random()
        if r < 0.08 and shared:
            return (f"hold kv (m) {{ run e1 prefill (m) growing kv; {flow} run e1 decode (o) growing kv; }} "
                    f"cache (m);")
        if r < 0.2:
            # `grow` after time has passed: a grow at the admission instant that preempts its own hold
            # re-admits it at once and preempts it again, for ever (both engines hang).
            return f"hold kv (m) {{ run e1 prefill (m) growing kv; grow kv ({rng.randint(1, 4)}); run e1 decode (o) growing kv; }} cache (m);"
        if r < 0.35:
            return (f"hold mem (m) {{ load mem ({rng.choice(['m', '1', 'min(m, 2)'])}); run e2 decode (o); }} "
                    f"cache ({rng.choice(['m', 'inf', '0'])}){rng.choice(['', ' lease mem (0.02)', ' lease mem (inf)'])};")
        if r < 0.45:
            return f"tool {_service(rng, 0.02)};"
        if r < 0.55 and depth < 2:
            return f"branch with ({_num(rng, 0.2, 0.8)}) {{ {stmt(depth + 1)} }} else {{ {stmt(depth + 1)} }}"
        if r < 0.7:
            return f"drop {rng.choice(['kv', 'mem', 'disk'])};"
        if r < 0.8 and depth < 2:
            return (f"hold kv (m) reuse ({rng.choice(['inf', 'm', '2'])}) {{ observe hit = cached; "
                    f"hold mem (1) {{ {stmt(2)} run e1 decode (o) growing kv; }} }} cache (inf);")
        if r < 0.9:
            return "observe u = used(kv) + free(mem) + holders(kv) + queued(mem) + cachedin(kv) + cachedin(disk);"
        return f"run tool ({_service(rng, 0.02)});"

    body = " ".join(stmt(0) for _ in range(rng.randint(2, 4))) + (" " + flow if shared else "")
    arrival = _arrival(rng, _num(rng, 5, 40))
    prog = "\n".join(items + [
        _run_block(rng, rng.choice([1, 2, 3]), arrival),
        f"workload {{ arrive {arrival}; turn {{ set m = 1 + floor(~uniform(0, {cap - 5 * bs})); set o = 1 + floor(~exp(3)); }} "
        f"session {{ loop {{ turn; request; branch (~bernoulli(0.4)) {{ end; }} }} }} }}",
        f"server {{ set t0 = now; {body} observe latency = now - t0; }}",
    ])
    return Case(prog, "step")


def _replicas(rng) -> Case:
    """R replicas (stage, KV pool and running set arrays) behind a router, with spill, grow, tool and drop."""
    R = rng.randint(2, 3)
    bs = rng.choice([2, 4])
    cap = bs * rng.randint(6, 30)
    spill = rng.random() < 0.5
    kv = [f"cap {cap};", f"block {bs};", f"evict {rng.choice(['lru', 'by (waiting, -size)', 'by (size)'])};",
          f"preempt {rng.choice(['lifo', 'none'])};"]
    items = [f"pool seqs[{R}] {{ cap {rng.randint(1, 4)}; admit via engine; }}"]
    if spill:
        kv.append(f"spill host via wire (size / {rng.choice([50, 200])}) when (size >= {rng.choice([1, bs, 2 * bs])});")
        items += [f"pool host {{ cap {cap * rng.choice([1, 4])}; evict lru; }}", "stage wire : fifo;"]
    items.append(f"pool kv[{R}] {{ " + " ".join(kv) + " }")
    serve = rng.choice(["", "serve decode first;", "serve exclusive prefill;", "serve by (remaining, admission);"])
    items.append(f"stage engine[{R}] : step {{ budget {rng.choice([8, 16, 'inf'])}; chunk {rng.choice([4, 8])}; "
                 f"cost 0.01 + 0.001 * tokens + 0.0001 * kv_decode; memory kv; {serve} }}")
    items += ["stage user : delay;", "stage tool : delay;"]
    key = rng.choice(["holders(seqs[r]) + queued(seqs[r])", "-cachedin(kv[r])", "used(kv[r])",
                      "queued(kv[r]) + work(engine[r])"])
    extra = rng.choice(["", "grow kv[r] (1);", "tool 0.01;"])
    # A hold that fills the pool and then grows preempts itself at the same instant for ever (both hang).
    most = cap - bs if extra.startswith("grow") else cap
    nested = rng.random() < 0.3
    inner = (f"set ctx = max(prompt, computed); run engine[r] prefill (ctx - cached) growing kv[r]; {extra} "
             f"run engine[r] decode (prompt + o - ctx) growing kv[r];")
    cache = rng.choice(["inf", "prompt", "prompt + o"])
    if nested:
        hold = (f"hold seqs[r] (1) {{ hold kv[r] (min(max(prompt, computed), {most})) {{ {inner} }} "
                f"cache ({cache}); }}")
    else:
        hold = (f"hold seqs[r] (1), kv[r] (min(max(prompt, computed), min(room, {most}))) at admission "
                f"(room = budget_left(engine[r])) {{ {inner} }} cache ({cache})")
    drop = f"branch (~bernoulli({_num(rng, 0.1, 0.5)})) {{ drop kv[r]; }}" if rng.random() < 0.4 else ""
    server = (f"server {{ choose r in {R} by ({key}, r); set t0 = now; set prompt = K + n; {hold} {drop} "
              f"set K = prompt + o; observe latency = now - t0; observe c = cachedin(kv[r]); }}")
    arrival = _arrival(rng, _num(rng, 4, 30))
    prog = "\n".join(items + [
        _run_block(rng, rng.choice([2, 4]), arrival),
        f"workload {{ arrive {arrival}; init {{ set K = 0; }} "
        f"turn {{ set n = K == 0 ? ~uniform(2, {cap}) : ~uniform(1, {max(2, cap // 4)}); set o = 1 + floor(~exp(4)); "
        f"set more = ~bernoulli(0.6); }} "
        f"session {{ loop {{ turn; request; branch (!more) {{ end; }} run user (~exp(0.1)); }} }} }}",
        server,
    ])
    return Case(prog, "step")


def _engine(rng) -> Case:
    bs = rng.choice([1, 2, 4, 8])
    cap = bs * rng.randint(8, 60)
    evict = rng.choice(["lru", "by (size, -age)", "by (-last)", "by (waiting, -size)", "by (age)", None])
    preempt = rng.choice(["lifo", "lifo", "none", None])
    queue = rng.choice([None, "fifo", "by (-serial)", "by (waited, serial)", "by (n)"])
    kv = [f"cap {cap};", f"block {bs};" if rng.random() < 0.8 else ""]
    if evict:
        kv.append(f"evict {evict};")
    if preempt:
        kv.append(f"preempt {preempt};")
    if queue:
        kv.append(f"queue {queue};")
    seqs = rng.random() < 0.6
    two_kv = rng.random() < 0.2
    items = []
    if seqs:
        items.append(f"pool seqs {{ cap {rng.randint(1, 6)}; admit via engine; }}")
    items.append("pool kv { " + " ".join(x for x in kv if x) + " }")
    if two_kv:
        items.append(f"pool host {{ cap {cap * 2}; {'evict lru;' if rng.random() < 0.5 else ''} }}")
    opts = [f"budget {rng.choice([8, 16, 32, 64, 'inf', '16 + 2 * residents', 'max(8, 64 - kv_decode / 4)'])};"]
    if rng.random() < 0.6:
        opts.append(f"chunk {rng.choice([4, 8, 16, 32])};")
    opts.append("cost " + rng.choice([
        "0.01 + 0.001 * tokens",
        "0.02 + 0.0005 * (kv_decode + kv_prefill) + 0.001 * tokens",
        "0.01 + 0.0001 * attention + 0.002 * decoders",
        "max(0.01, 0.001 * tokens) + 0.001 * prefilled",
        "0.01 + 0.0002 * residents + ~exp(0.002)",
    ]) + ";")
    opts.append("memory kv;")
    serve = rng.choice([None, "decode first", "exclusive prefill", "by (decoding ? 0 : 1, admission)",
                        "by (remaining)", "by (-admission)", "admission", "by (n, remaining)"])
    if serve:
        opts.append(f"serve {serve};")
    items.append("stage engine : step { " + " ".join(opts) + " }")
    items.append("stage user : delay;")
    if rng.random() < 0.3:
        items.append("gauge kv_used = used(kv) + queued(kv);")

    multi = rng.random() < 0.6
    cache = rng.choice(["inf", "inf", "prompt", "n", "0"]) if multi or rng.random() < 0.5 else None
    reuse = f" reuse ({rng.choice(['inf', 'prompt', 8, 32])})" if cache and rng.random() < 0.3 else ""
    growing = rng.random() < 0.8
    lease = f" lease kv ({_num(rng, 0.05, 0.5)})" if rng.random() < 0.2 else ""
    at_adm = rng.random() < 0.5
    amount = ("min(max(prompt, computed), room)" if at_adm else
              rng.choice(["prompt", "max(prompt, computed)", "prompt + o", "n"]))
    pools = (["seqs (1)"] if seqs else []) + [f"kv ({amount})"] + (["host (n)"] if two_kv else [])
    if rng.random() < 0.15:
        pools[-1] += f" reserve (n + {rng.choice([0, 4, 16])})"
    ctx = "max(prompt, computed)"
    prefill_work = rng.choice([f"{ctx} - cached", f"{ctx} - cached", "n"]) if cache else f"{ctx}"
    grow = " growing kv" if growing else ""
    body = [f"set ctx = {ctx};",
            "observe c_in = computed;" if rng.random() < 0.3 else "",
            f"run engine prefill ({prefill_work}){grow};",
            "branch (!started) { set started = 1; observe ttft = now - t0; }",
            f"run engine decode (prompt + o - ctx){grow};"]
    if cache:
        body.insert(1, "observe hit = cached;")
    hold = ("hold " + ", ".join(pools) + reuse
            + (" at admission (room = budget_left(engine))" if at_adm else "")
            + " { " + " ".join(b for b in body if b) + " }"
            + (f" cache ({cache})" if cache else "") + lease)
    server = (f"server {{ set t0 = now; set started = 0; set prompt = K + n; {hold} "
              f"set K = {'prompt + o' if multi else '0'}; observe latency = now - t0; }}")
    prompt_hi = rng.choice([cap // 4, cap // 2, cap, cap + cap // 2])
    out_mean = rng.choice([2, 5, 10, 20])
    turn = (f"turn {{ set n = K == 0 ? ~uniform({max(1, prompt_hi // 4)}, {max(2, prompt_hi)}) "
            f": ~uniform(1, {max(2, prompt_hi // 4)}); set o = 1 + floor(~exp({out_mean})); "
            f"set more = ~bernoulli({_num(rng, 0.3, 0.8)}); }}")
    if multi:
        session = (f"session {{ loop {{ turn; request; branch (!more) {{ end; }} "
                   f"run user ({_service(rng, _num(rng, 0.05, 0.5))}); }} }}")
    else:
        session = "session { turn; request; }"
    hidden = "hidden o; " if rng.random() < 0.5 and "o" not in amount.split() else ""
    arrival = _arrival(rng, _num(rng, 2, 30))
    prog = "\n".join(items + [
        _run_block(rng, rng.choice([2, 4, 8]), arrival),
        f"workload {{ arrive {arrival}; {hidden}init {{ set K = 0; }} {turn} {session} }}",
        server,
    ])
    return Case(prog, "step")


# ------------------------------------------------------------------ family (c): shared runs and queues

def _flow(rng) -> Case:
    r = rng.random()
    return _share(rng) if r < 0.35 else _queues(rng) if r < 0.6 else _links(rng)


def _links(rng) -> Case:
    """Program B of chapter 10 with random sizes: prefillers, called and latency links, three decoders."""
    NP = rng.randint(1, 3)
    cap = rng.randint(30, 150)
    pserve = rng.choice(["serve fifo;", "serve ps(2);", "serve fifo(2);",
                         "serve step { budget 16; chunk 8; cost 0.05 + 0.01 * tokens; memory kv; }"])
    pwork = "prefill n growing kv;" if "step" in pserve else f"run (n / {rng.choice([10, 40])});"
    pool_opts = rng.choice(["", "queue by (waited);", "preempt lifo;"])
    dcost = rng.choice(["1", "0.05 + 0.001 * kv_decode", "0.02 + 0.01 * decoders"])
    policy = rng.choice(["maxmin", "bottleneck"])
    lat = rng.choice([0, 0.1, 0.5])
    pick = rng.choice(["serial - 3 * floor(serial / 3)", "floor(~uniform(0, 3))"])
    return Case("\n".join([
        f"queue P[{NP}] : prefill {{ pool kv {{ cap {cap}; block 2; {pool_opts} }} nic ps({_num(rng, 5, 20)}); {pserve} "
        f"prefill (n) {{ hold kv (n) {{ {pwork} mark first; observe member = self; }} cache (n) lease kv (inf); }} }}",
        f"queue L1 : link {{ serve ps({_num(rng, 1, 8)}); latency {lat}; }}",
        f"queue L2 : link {{ serve ps({_num(rng, 1, 4)}); transfer (n) {{ run (n / 2); }} }}",
        f"queue D : decode {{ pool kv {{ cap {cap}; {rng.choice(['', 'preempt lifo;'])} }} "
        f"serve step {{ budget {rng.choice([4, 8, 'inf'])}; cost {dcost}; memory kv; }} nic ps({_num(rng, 2, 10)}); "
        f"decode (o) {{ hold kv (2) {{ decode o growing kv; }} }} "
        f"decode (o) from src {{ hold kv (2) {{ transfer ({rng.randint(1, 20)}) from src to kv (2); decode (o) growing kv; mark last; }} }} }}",
        f"queue E : decode {{ pool kv {{ cap {cap}; }} serve {rng.choice(['delay', 'fifo', 'ps(1)'])}; decode (o) {{ run (o); }} "
        f"decode (o) from src {{ hold kv (4) {{ L2.transfer ({rng.randint(1, 8)}) from src to kv (4); run (o); }} }} }}",
        f"queue F : decode {{ pool kv {{ cap {cap}; }} serve delay; decode (o) {{ run (o); }} "
        f"decode (o) from src {{ hold kv (4) {{ transfer on L1 ({rng.randint(1, 4)}) from src to kv (4); run (o); }} }} }}",
        f"D pull P latency {rng.choice([0, 0.25])} share {policy};",
        f"queue gw : gateway, prefill {{ serve {rng.choice(['delay', 'fifo'])}; route () {{ "
        f"choose i in {NP} by ({rng.choice(['queued(P[i].kv)', 'work(P[i])', 'holders(P[i].kv)'])}, i); P[i].prefill (n); "
        f"set w = {pick}; branch (w == 0) {{ D.decode (o) from P[i]; }} else {{ branch (w == 1) {{ E.decode (o / 4) from P[i]; }} "
        f"else {{ F.decode (o / 4) from P[i]; }} }} }} prefill (n) {{ run (n / 100); }} }}",
        _run_block(rng, rng.choice([10, 20])),
        f"workload {{ arrive {rng.choice(['batch(' + str(rng.randint(1, 8)) + ')', 'poisson(' + str(_num(rng, 0.2, 2)) + ')', 'closed(' + str(rng.randint(1, 4)) + ')'])}; "
        f"turn {{ set n = ~uniform(2, {cap // 2}); set o = 1 + floor(~exp(3)); }} "
        f"session {{ turn; set t0 = now; request gw; observe ttft = P.first - t0; observe done = now - t0; observe dl = D.last; }} }}",
    ]), "flow")


def _share(rng) -> Case:
    n = rng.randint(2, 4)
    stages = [f"stage l{i} : ps({_num(rng, 0.5, 4)});" for i in range(n)]
    policy = rng.choice(["maxmin", "bottleneck"])
    stmts = []
    for i in range(rng.randint(1, 3)):
        k = rng.randint(2 if i == 0 else 1, n)  # `share` needs at least one run over several stages
        path = sorted(rng.sample(range(n), k))
        stmts.append(f"run {', '.join(f'l{i}' for i in path)} ({_service(rng, _num(rng, 0.2, 1.5))});")
        if rng.random() < 0.3:
            stmts.append(f"observe w = work(l{rng.randrange(n)}) + queue(l{rng.randrange(n)});")
    arrival = _arrival(rng, _num(rng, 0.3, 2))
    prog = "\n".join(stages + [
        f"share {policy};",
        _run_block(rng, rng.choice([20, 40]), arrival),
        f"workload {{ arrive {arrival}; session {{ turn; request; }} }}",
        "server { set t0 = now; " + " ".join(stmts) + " observe resp = now - t0; }",
    ])
    return Case(prog, "flow")


def _queues(rng) -> Case:
    NP, ND = rng.randint(1, 2), rng.randint(1, 2)
    cap = rng.randint(40, 200)
    policy = rng.choice(["maxmin", "bottleneck"])
    pstep = rng.random() < 0.6
    pserve = ("serve step { budget 32; chunk 16; cost 0.01 + 0.001 * tokens; memory kv; }" if pstep
              else f"serve {rng.choice(['fifo', 'ps(2)', 'fifo(2)'])};")
    pwork = "prefill n growing kv;" if pstep else "run (n / 50);"
    prefill = (f"queue P[{NP}] : prefill {{ pool kv {{ cap {cap}; block 4; }} nic ps({_num(rng, 5, 50)}); "
               f"{pserve} prefill (n) {{ hold kv (n) {{ {pwork} mark first; }} cache (0) lease kv (inf); }} }}")
    dserve = "serve step { budget 16; cost 0.01 + 0.0001 * kv_decode; memory kv; }"
    decode = (f"queue D[{ND}] : decode {{ pool kv {{ cap {cap}; {'preempt lifo;' if rng.random() < 0.5 else ''} }} "
              f"nic ps({_num(rng, 5, 50)}); {dserve} "
              f"decode (c) {{ hold kv (c) {{ prefill c growing kv; decode o growing kv; }} }} "
              f"decode (c) from src {{ hold kv (c + 1) {{ mark admitted; transfer (c / 20) from src to kv (c); "
              f"decode o growing kv; }} }} }}")
    pull = f"D pull P latency {rng.choice([0, 0.001, 0.01])} share {policy};"
    pkey = rng.choice(["work(P[i]) + queued(P[i].kv)", "queued(P[i].kv)", "holders(P[i].kv)"])
    dkey = rng.choice(["holders(D[j].kv) + queued(D[j].kv)", "used(D[j].kv)"])
    local = rng.random() < 0.2
    route = (f"choose i in {NP} by ({pkey}, i); P[i].prefill (n); "
             f"choose j in {ND} by ({dkey}, j); "
             + (f"branch (serial - 3 * floor(serial / 3) == 0) {{ D[j].decode (n); }} else {{ D[j].decode (n) from P[i]; }}"
                if local else "D[j].decode (n) from P[i];"))
    gw = f"queue gw : gateway {{ route {{ {route} }} }}"
    nmax = min(cap - 2, rng.choice([20, 60, 150]))
    arrival = _arrival(rng, _num(rng, 1, 10))
    prog = "\n".join([
        prefill, decode, pull, gw,
        _run_block(rng, rng.choice([5, 10]), arrival),
        f"workload {{ arrive {arrival}; hidden o; "
        f"turn {{ set n = ~uniform(4, {nmax}); set o = 1 + floor(~exp(5)); }} "
        f"session {{ turn; set t0 = now; request gw; observe ttft = P.first - t0; observe latency = now - t0; }} }}",
    ])
    return Case(prog, "flow")


# ------------------------------------------------------------------ family (d): trace replay

def _csv(rng) -> str:
    lines = ["session,turn,new,out,think" + (",forced" if rng.random() < 0.3 else "")]
    forced = lines[0].endswith("forced")
    for s in range(rng.randint(1, 8)):
        sid = rng.choice([s, s + 10, rng.randint(0, 3)])
        for t in range(rng.randint(1, 4)):
            row = [sid, t, rng.randint(1, 80), rng.randint(1, 20), round(rng.uniform(0, 2), 3)]
            if forced:
                row.append(rng.randint(0, 1))
            lines.append(",".join(str(x) for x in row))
    return "\n".join(lines) + "\n"


def _trace(rng) -> Case:
    ordered = " ordered" if rng.random() < 0.5 else ""
    cap = rng.choice([64, 128, 256])
    arrival = rng.choice([f"poisson({_num(rng, 1, 10)})", f"batch({rng.randint(1, 10)})",
                          f"closed({rng.randint(1, 4)})", f"renewal(~det({_num(rng, 0.05, 0.5)}))"])
    step = rng.random() < 0.6
    if step:
        items = [f"pool kv {{ cap {cap}; block 4; evict lru; preempt lifo; }}",
                 f"stage engine : step {{ budget {rng.choice([16, 32, 'inf'])}; chunk 16; cost 0.01 + 0.001 * tokens; memory kv; }}"]
        server = ("server { set t0 = now; set prompt = K + new; "
                  "hold kv (min(max(prompt, computed), 2 * " + str(cap) + ")) { set ctx = max(prompt, computed); "
                  "run engine prefill (ctx - cached) growing kv; run engine decode (prompt + out - ctx) growing kv; } "
                  f"cache ({rng.choice(['inf', 'prompt'])}); set K = prompt + out; observe latency = now - t0; "
                  "observe f = forced; }")
    else:
        items = [f"stage cpu : {rng.choice(['fifo(1)', 'ps(2)', 'fifo(2)'])};"]
        server = "server { set t0 = now; run cpu (new / 50 + out / 100); observe latency = now - t0; observe f = forced; }"
    items.append("stage user : delay;")
    session = rng.choice([
        "loop { turn; request; branch (!more) { end; } run user (think); }",
        "turn; request; run user (think); turn; request; turn; observe past = new + more + turn_no;",
        # (a rejected hold takes no time: the pause keeps a closed population from spinning at one instant)
        "loop { turn; request; branch (forced == 1 || !more) { end; } run user (0.01 + think); }",
    ])
    turn = rng.choice(["", "turn { set new = new + 1; } ", "turn { set out = max(1, out - 1); } "])
    # The session body either inside the workload or as a top-level item: the two spellings are one program.
    top = rng.random() < 0.3
    prog = "\n".join(items + [
        _run_block(rng, rng.choice([5, 10, 20]), arrival),
        f'workload {{ arrive {arrival}; trace "corpus.csv"{ordered}; hidden out; init {{ set K = 0; }} {turn}'
        + ("}" if top else f"session {{ {session} }} }}"),
    ] + ([f"session {{ {session.replace('request;', server[len('server {'):-1])} }}"] if top else [server]))
    return Case(prog, "trace", {"corpus.csv": _csv(rng)})


# ------------------------------------------------------------------ family (e): degenerate values

def _edge(rng) -> Case:
    """Zero, negative, NaN and infinite amounts and works where the language accepts them."""
    odd = lambda: rng.choice(["0", "-1", "0.5", "1e-12", "inf", "0/0", "-inf", "1e9", "n", "n - 5", "~exp(0)"])
    bs = rng.choice([1, 3, 16])
    cap = rng.choice([0, 1, 5, 20, "inf"])
    items = [f"pool kv {{ cap {cap}; block {bs}; {rng.choice(['evict lru;', 'evict by (size);', ''])} "
             f"{rng.choice(['preempt lifo;', 'preempt none;', ''])} }}",
             f"stage e : step {{ budget {rng.choice([1, 2, 'inf', '0.5'])}; chunk {rng.choice([1, 2, 'inf'])}; "
             f"cost {rng.choice(['0.1', '0.01 * tokens + 0.01', '0.1 + 0 * attention'])}; memory kv; "
             f"{rng.choice(['', 'serve decode first;', 'serve by (0);', 'serve exclusive prefill;'])} }}",
             f"stage p : ps({rng.choice(['1', 'x + 1', 'x == x ? 1 : 3', 'present', '1 / present'])});",
             f"stage f : fifo({rng.choice([1, 2])});",
             "stage d : delay;"]
    stmts = [
        f"run d ({odd()});", f"run f ({odd()});", f"run p ({odd()});",
        f"hold kv ({odd()}) {{ run e prefill ({odd()}) growing kv; run e decode ({odd()}) growing kv; }}"
        + rng.choice(["", f" cache ({odd()})", f" cache ({odd()}) lease kv ({odd()})"]),
        f"hold kv (1) reuse ({odd()}) {{ grow kv ({odd()}); run d (0.1); }} cache (inf);",
        f"observe v = {odd()};", f"observe w = {odd()} * now;",
        f"run e decode ({odd()});",
    ]
    body = " ".join(rng.sample(stmts, rng.randint(2, 5)))
    return Case("\n".join(items + [
        _run_block(rng, rng.choice([5, 10])),
        f"workload {{ arrive {rng.choice(['batch(3)', 'poisson(1)', 'renewal(~det(0.7))'])}; "
        f"init {{ set x = 5; }} turn {{ set n = floor(~uniform(0, 10)); }} session {{ turn; request; }} }}",
        f"server {{ {body} observe done = now; }}",
    ]), "edge")


# ------------------------------------------------------------------ family (f): the prefix cache and its tiers

def _tiers(rng) -> Case:
    """Multi-turn sessions over a KV pool with a prefix cache spilling into one or two tight tiers.

    `reuse` bounds below the cached prefix leave dead entries; `drop`, `load`, `release`, leases and
    reads of `cached`/`cachedin` act on the entries; eviction keys read sizes, ages, `waiting` and
    session attributes (so the snapshots of ended sessions decide); the tiers have caps small enough
    that they evict and spill further. Links are fifo stages; a step engine sometimes fronts the pool.
    """
    bs = rng.choice([None, None, 1, 2, 4, 8])
    unit = bs or 1
    cap = unit * rng.randint(6, 24)
    engine = rng.random() < 0.3
    ntiers = rng.choice([0, 1, 1, 2, 2])
    gate = rng.random() < 0.3
    host = rng.random() < 0.2

    def evict():
        r = rng.random()
        if r < 0.25:
            return "evict lru;"
        if r < 0.3:
            return ""
        keys = ["size", "-size", "last", "-last", "age", "-age", "waiting", "-waiting", "tag", "-tag",
                "prio", "serial", "-serial", "k", "size - age", "tag * size"]
        if rng.random() < 0.1:
            keys.append(rng.choice(["used(kv)", "cachedin(kv)", "holders(kv)"]))
        return f"evict by ({', '.join(rng.sample(keys, rng.randint(1, 3)))});"

    def pred():
        return rng.choice(["1", "1", f"size >= {unit * rng.randint(1, 3)}", "waiting == 0", f"tag < {rng.randint(1, 3)}",
                           f"age > {_num(rng, 0, 1)}", "size > 0 && k > 0", f"~uniform(0, 1) < {_num(rng, 0.3, 0.9)}",
                           "prio >= 1"])

    def work():
        return rng.choice(["0", f"size / {rng.choice([10, 50, 200])}", f"{_num(rng, 0.01, 0.2)}",
                           f"size / 100 + {_num(rng, 0.01, 0.05)}", "age / 10"])

    def link_decl(name):
        return f"stage {name} : {rng.choice(['fifo', 'fifo', 'fifo(1)', 'fifo(2)'])};"

    items = []
    kv = [f"cap {cap};"]
    if bs:
        kv.append(f"block {bs};")
    kv.append(evict())
    if engine:
        kv.append(rng.choice(["preempt lifo;", "preempt lifo;", "preempt none;"]))
    if rng.random() < 0.2:
        kv.append(f"queue by ({rng.choice(['waited', '-prio', 'tag, serial', '-k'])});")
    if ntiers:
        kv.append(f"spill t1 via l1 ({work()}) when ({pred()});")
    items.append("pool kv { " + " ".join(x for x in kv if x) + " }")
    for t in range(1, ntiers + 1):
        tb = rng.choice([None, None, None, 1, 2, 4])
        tcap = rng.choice([unit * rng.randint(2, 12), unit * rng.randint(2, 6), rng.randint(3, 40)])
        if t == ntiers and rng.random() < 0.15:
            tcap = "inf"
        opts = [f"cap {tcap};", f"block {tb};" if tb else "", evict()]
        if t < ntiers:
            opts.append(f"spill t{t + 1} via l{t + 1} ({work()}) when ({pred()});")
        items.append(f"pool t{t} {{ " + " ".join(x for x in opts if x) + " }")
        items.append(link_decl(f"l{t}"))
    if gate:
        items.append(f"pool gate {{ cap {rng.randint(1, 3)}; }}")
    if host:
        items.append(f"pool host {{ cap {unit * rng.randint(8, 30)}; {evict()} }}")
    items.append("stage think : delay;")
    items.append(f"stage work : {rng.choice(['fifo', 'fifo(2)', 'fifo(4)', 'ps(2)', 'delay'])};")
    if engine:
        items.append(f"stage e : step {{ budget {rng.choice([8, 16, 32, 'inf'])}; "
                     f"{rng.choice(['', 'chunk 4;', 'chunk 8;'])} "
                     f"cost {rng.choice(['0.01 + 0.001 * tokens', '0.02 + 0.0005 * kv_decode', '0.01 + 0.002 * decoders'])}; "
                     f"memory kv; {rng.choice(['', 'serve decode first;', 'serve by (remaining);'])} }}")
    if rng.random() < 0.25:
        items.append(f"gauge gc = {rng.choice(['used(kv)', 'used(kv) + queued(kv)'] + [f'used(t{t})' for t in range(1, ntiers + 1)])};")

    has_lease = [False]
    tiers = [f"t{t}" for t in range(1, ntiers + 1)]

    def cache_amount():
        return rng.choice(["inf", "ctx", "ctx", "K", f"{unit * rng.randint(1, 8)}", "ctx / 2", "0", "ctx + o"])

    def reuse_amount():
        return rng.choice(["inf", f"{unit * rng.randint(0, 4)}", "ctx / 2", "cachedin(kv) / 2", "K - 3",
                           f"{unit * rng.randint(1, 3)}"])

    def kv_hold():
        has_cache = rng.random() < 0.85
        # (Mostly bounded by the cap: a hold that can never fit rejects and ends its session.)
        units = rng.choice(["ctx", "n", f"min(ctx, {cap})", f"min(ctx, {cap})", f"min(ctx, {cap})",
                            f"min(max(ctx, computed), {cap})"])
        pools = [f"kv ({units})"]
        if host and rng.random() < 0.5:
            pools.append(f"host ({rng.choice(['n', 'ctx / 2', str(unit)])})")
        if rng.random() < 0.08:
            pools[0] += f" reserve ({units} + {unit * rng.randint(1, 3)})"
        body = []
        if has_cache and rng.random() < 0.7:
            body.append("observe hit = cached;")
        if rng.random() < 0.4:
            body.append(f"observe c_in = {rng.choice(['cachedin(kv)', 'used(kv)', 'holders(kv)', 'queued(kv)'] + [f'cachedin({t})' for t in tiers])};")
        loaded = False
        if rng.random() < 0.35 and not engine or rng.random() < 0.15:
            # A load must fit the allocation: at most the units minus the consumed prefix.
            # (The consumed prefix can exceed the allocation: then even `load kv (0)` fails, so guard it.)
            amount = f"min({rng.choice(['n', 'ctx', str(unit * 2), 'o'])}, {units} - cached)" if has_cache else units
            load = f"load kv (max(0, {amount}));"
            body.append(f"branch (cached <= {units}) {{ {load} }}" if has_cache else load)
            loaded = True
        if engine:
            pre = "max(1, ctx - cached)" if has_cache else "ctx"
            body.append(f"run e prefill ({pre}){' growing kv' if rng.random() < 0.85 else ''};")
            if rng.random() < 0.3:
                body.append(f"run work ({_service(rng, 0.05)});")
            body.append(f"run e decode (o){' growing kv' if rng.random() < 0.85 else ''};")
        else:
            body.append(f"run work ({_service(rng, _num(rng, 0.05, 0.5))});")
        if rng.random() < 0.2:
            body.append("release kv;")
            body.append(f"run work ({_service(rng, 0.05)});")
        if rng.random() < 0.15:
            body.append("observe u = used(kv) + cachedin(kv);")
        if rng.random() < 0.15:
            body.append(f"set tag = {rng.choice(['tag + 1', '~uniform(0, 3)', 'k'])};")
        reuse = f" reuse ({reuse_amount()})" if has_cache and rng.random() < 0.55 else ""
        text = "hold " + ", ".join(pools) + reuse + " { " + " ".join(body) + " }"
        if has_cache:
            text += f" cache ({cache_amount()})"
        if rng.random() < 0.2:
            has_lease[0] = True
            text += f" lease kv ({rng.choice(['0', '0.05', str(_num(rng, 0.1, 1)), 'inf', '-1'])})"
        text += ";"
        if gate and rng.random() < 0.5:
            text = f"hold gate (1) {{ {text} run work ({_service(rng, 0.05)}); }}"
        return text

    def extra():
        r = rng.random()
        if r < 0.15:
            return f"branch (~bernoulli({_num(rng, 0.1, 0.5)})) {{ drop kv; }}"
        if r < 0.3 and tiers:
            t = rng.choice(tiers)
            l = "l" + t[1:]
            return (f"branch (cachedin({t}) > 0) {{ observe back = cachedin({t}); "
                    f"run {l} (cachedin({t}) / {rng.choice([20, 100])}); {rng.choice(['drop ' + t + ';', ''])} }}")
        if r < 0.4 and tiers:
            return f"drop {rng.choice(tiers)};"
        if r < 0.55:
            return f"observe c = {rng.choice(['cachedin(kv)'] + [f'cachedin({t})' for t in tiers])};"
        if r < 0.65:
            return f"set tag = {rng.choice(['tag + 1', '~uniform(0, 3)', '10 - serial', 'k'])};"
        if r < 0.72 and has_lease[0]:
            return "release kv;"
        if r < 0.8:
            return f"observe f = used(kv) + {rng.choice(['free(kv)', 'queued(kv)', 'holders(kv)'] + [f'used({t}) + cachedin({t})' for t in tiers])};"
        return ""

    turn = [kv_hold()]
    for _ in range(rng.randint(0, 2)):
        turn.append(extra())
    if rng.random() < 0.25:
        turn.insert(rng.randint(0, len(turn)), kv_hold())
    if rng.random() < 0.3:
        turn.append("set K = 0;" if rng.random() < 0.3 else "")
    body = " ".join(x for x in turn if x)
    p_end = _num(rng, 0.2, 0.6)
    think = _service(rng, _num(rng, 0.05, 1))
    # The think time comes first: a rejected hold takes no time, and a closed population would spin.
    session = (f"session {{ set k = 0; loop {{ run think ({think}); set n = {rng.choice(['1 + floor(~uniform(0, ' + str(max(2, cap // 3)) + '))', str(unit * rng.randint(1, 4)), '~uniform(1, ' + str(max(2, cap // 2)) + ')'])}; "
               f"set o = 1 + floor(~exp({rng.choice([1, 2, 4])})); set ctx = K + n; {body} "
               f"set K = ctx + o; set k = k + 1; observe turns = k; "
               f"branch ({rng.choice(['~bernoulli(' + str(p_end) + ')', '~bernoulli(' + str(p_end) + ') || K > ' + str(cap * 3 // 4)] + ['~bernoulli(' + str(p_end) + ') || K > ' + str(cap)] * 2)}) {{ end; }} }} }}")
    init = (f"init {{ set K = 0; set tag = {rng.choice(['serial - 3 * floor(serial / 3)', '~uniform(0, 3)', 'serial'])}; "
            f"set prio = {rng.choice(['~bernoulli(0.5)', 'serial - 2 * floor(serial / 2)'])}; set k = 0; }}")
    arrival = _arrival(rng, _num(rng, 1, 6))
    prog = "\n".join(items + [
        _run_block(rng, rng.choice([5, 10, 15]), arrival),
        f"workload {{ arrive {arrival}; {init} }}",
        session,
    ])
    return Case(prog, "tiers")


# ------------------------------------------------------------------ family (g): step engines under stress

def _engines(rng) -> Case:
    """One to three step engines, sometimes sharing one `memory` pool, under every serve policy.

    Budgets and chunks are expressions of the Budget moment (constants, draws, `residents`,
    `decoders`, `kv_decode`, `kv_prefill` and `budget_left` of a later-declared engine); costs read
    every Step variable; `serve by` keys read attributes (some drawn in the turn), `remaining`,
    `admission` and `decoding`. A seqs pool and the KV pool may `admit via` the first engine with
    `queue by` orders; KV grows under `preempt lifo`/`none`, with blocks, eviction orders, prefix
    caching across turns, leases, `at admission (room = budget_left(E))`, and a tool call between
    two decode phases while the KV stays held. Sessions are multi-turn with think time.
    """
    bs = rng.choice([None, None, 1, 2, 4, 8])
    unit = bs or 1
    cap = unit * rng.randint(8, 40)
    n = rng.choice([1, 2, 2, 3])
    engines = [f"e{i}" for i in range(n)]
    shared = n == 1 or rng.random() < 0.5
    mems = ["kv"] * n if shared else [f"kv{i}" for i in range(n)]
    pools = list(dict.fromkeys(mems))
    seqs = rng.random() < 0.45
    via = {p: (rng.random() < 0.35) for p in pools}
    # A serve order other than admission order makes 0.1.2 panic when a growth preempts a resident
    # already served in the iteration (ch. 04 §4.5.5): such engines' pools mostly do not preempt.
    serves = {e: rng.choice(["", "admission", "decode first", "exclusive prefill", "exclusive prefill",
                             "by (remaining)", "by (-remaining, admission)", "by (decoding ? 0 : 1, -admission)",
                             "by (prio, remaining)", "by (-prio)", "by (decoding, remaining)",
                             "by (n - remaining)", "by (tag, admission)", "by (remaining + prio * 4)",
                             "by (kv_decode > 0 ? decoding : 1 - decoding, remaining)", "by (-admission)",
                             "by (admission)"]) for e in engines}
    unordered = {mems[i] for i, e in enumerate(engines)
                 if serves[e] not in ("", "admission", "exclusive prefill", "by (admission)")}
    items = []
    if seqs:
        q = rng.choice(["", "", "queue fifo;", "queue by (-prio);", "queue by (waited, serial);",
                        "queue by (n, -waited);", f"queue by (budget_left({engines[0]}) < n ? 1 : 0, serial);",
                        "queue by (prio - waited);"])
        items.append(f"pool seqs {{ cap {rng.randint(1, 5)}; admit via {engines[0]}; {q} }}")
    for p in pools:
        i = mems.index(p)
        opts = [f"cap {cap};"]
        if bs:
            opts.append(f"block {bs};")
        opts.append(rng.choice(["evict lru;", "", "evict by (size, -age);", "evict by (-last);", "evict by (waiting, -size);",
                                "evict by (prio, size);", "evict by (-serial);", "evict by (age);", "evict by (-size, prio);"]))
        if p in unordered and rng.random() < 0.7:
            opts.append(rng.choice(["preempt none;", ""]))
        else:
            opts.append(rng.choice(["preempt lifo;", "preempt lifo;", "preempt none;", ""]))
        if rng.random() < 0.3:
            opts.append(f"queue by ({rng.choice(['waited', '-prio', 'serial', 'n, serial', '-waited', 'used(' + p + ')', 'computed'])});")
        if via[p]:
            opts.append(f"admit via {engines[i]};")
        items.append(f"pool {p} {{ " + " ".join(x for x in opts if x) + " }")
    for i, e in enumerate(engines):
        later = engines[i + 1:]
        budget = rng.choice([4, 8, 16, 32, "inf", "8 + 2 * residents", "max(4, 48 - kv_decode / 4)",
                             "4 + ~uniform(0, 12)", "max(2, 16 - decoders)", "max(1, 32 - kv_prefill / 2)",
                             "residents > 3 ? 8 : 24", "floor(~uniform(4, 20))"]
                            + ([f"min(16, budget_left({later[0]}) + 4)", f"max(4, budget_left({later[-1]}))"] if later else []))
        opts = [f"budget {budget};"]
        if rng.random() < 0.6:
            opts.append("chunk " + str(rng.choice([2, 4, 8, 16, "max(1, 8 - residents)", "residents - 1",
                                                  "2 + ~uniform(0, 6)", "max(2, 12 - decoders * 2)", "0"]
                                                 + ([f"min(8, budget_left({later[0]}))"] if later else []))) + ";")
        terms = rng.sample(["0.001 * tokens", "0.002 * decoders", "0.0005 * prefilled", "0.0002 * residents",
                            "0.0001 * kv_decode", "0.0001 * kv_prefill", "0.00001 * attention",
                            "~exp(0.001)", "(decoders > 0 ? 0.003 : 0)", "0.001 * sqrt(tokens)"], rng.randint(1, 4))
        opts.append(f"cost {_num(rng, 0.004, 0.02, 3)} + {' + '.join(terms)};")
        if rng.random() < 0.92:
            opts.append(f"memory {mems[i]};")
        serve = serves[e]
        if serve:
            opts.append(f"serve {serve};")
        items.append(f"stage {e} : step {{ " + " ".join(opts) + " }")
    items += ["stage think : delay;", f"stage tool : {rng.choice(['fifo', 'fifo(2)', 'delay', 'fifo(1)'])};"]
    if rng.random() < 0.25:
        items.append(f"gauge g = {rng.choice(['used(' + pools[0] + ')', 'queued(' + pools[0] + ') + holders(' + pools[0] + ')'])};")

    def grow_flag(p):
        return f" growing {p}" if rng.random() < 0.88 else ""

    def hold(e, p, phases):
        """A hold on `p` (maybe with seqs first) around the runs on `e`; phases: 'pd', 'p', 'd'."""
        cache = rng.random() < 0.7
        at_adm = rng.random() < 0.35
        units = rng.choice(["c", f"min(c, {cap})", f"min(c, {cap})", "n", f"min(c, {cap - unit})",
                            f"{unit} + floor(~uniform(0, {max(2, cap // 2)}))"])
        if at_adm:
            units = f"min({units}, max({unit}, room))"
        pl = []
        if seqs and e == engines[0] and rng.random() < 0.8:
            pl.append("seqs (1)")
        spec = f"{p} ({units})"
        if rng.random() < 0.12:
            spec += f" reserve (min(c + {unit * rng.randint(1, 3)}, {cap}))"
        pl.append(spec)
        body = []
        if cache and rng.random() < 0.4:
            body.append("observe hit = cached;")
        g = grow_flag(p)
        if "p" in phases:
            pre = "max(1, c - cached)" if cache else "c"
            body.append(f"run {e} prefill ({pre}){g};")
            body.append("branch (!started) { set started = 1; observe ttft = now - t0; }")
        if "d" in phases:
            if rng.random() < 0.35:
                body.append(f"run {e} decode (o1){g};")
                body.append(f"run tool ({_service(rng, _num(rng, 0.01, 0.1))});")
                if rng.random() < 0.2:
                    body.append(f"grow {p} ({unit * rng.randint(1, 2)});")
                body.append(f"run {e} decode (max(1, o - o1)){g};")
            else:
                body.append(f"run {e} decode (o){g};")
        if rng.random() < 0.15:
            body.append(f"observe u = used({p}) + queued({p}) + holders({p}) + budget_left({e});")
        text = "hold " + ", ".join(pl)
        if cache and rng.random() < 0.3:
            text += f" reuse ({rng.choice(['inf', 'c', str(unit * 2), 'cachedin(' + p + ') / 2'])})"
        if at_adm:
            text += f" at admission (room = budget_left({e}))"
        text += " { " + " ".join(body) + " }"
        if cache:
            text += f" cache ({rng.choice(['inf', 'c', 'c + o', 'K', 'c / 2', '0'])})"
            if rng.random() < 0.15:
                text += f" lease {p} ({rng.choice(['0', '0.02', str(_num(rng, 0.05, 0.5)), 'inf'])})"
        return text + ";"

    def request():
        r = rng.random()
        if n >= 2 and r < 0.35:
            # Disaggregated: prefill on one engine, decode on another.
            a, b = rng.sample(range(n), 2)
            if mems[a] == mems[b] and rng.random() < 0.5:
                p = mems[a]
                g = grow_flag(p)
                return (f"hold {p} (min(c, {cap})) {{ run {engines[a]} prefill (c){g}; "
                        f"run tool ({_service(rng, 0.02)}); run {engines[b]} decode (o){g}; }} "
                        f"cache ({rng.choice(['inf', 'c + o', 'c'])});")
            return hold(engines[a], mems[a], "p") + " " + hold(engines[b], mems[b], "d")
        if n >= 2 and r < 0.7:
            i = rng.randrange(n)
            j = rng.choice([x for x in range(n) if x != i])
            guard = rng.choice([f"~bernoulli({_num(rng, 0.2, 0.8)})", f"prio == {rng.randint(0, 1)}",
                                f"queued({mems[i]}) <= queued({mems[j]})", f"work({engines[i]}) <= work({engines[j]})"])
            return f"branch ({guard}) {{ {hold(engines[i], mems[i], 'pd')} }} else {{ {hold(engines[j], mems[j], 'pd')} }}"
        i = rng.randrange(n)
        return hold(engines[i], mems[i], "pd")

    body = [request()]
    if rng.random() < 0.2:
        body.append(f"branch (~bernoulli({_num(rng, 0.1, 0.5)})) {{ drop {rng.choice(pools)}; }}")
    if rng.random() < 0.2:
        body.append(f"observe ci = cachedin({rng.choice(pools)});")
    leased = [p for p in pools if f"lease {p} (" in body[0]]
    if leased and rng.random() < 0.5:
        body.append(f"release {rng.choice(leased)};")
    p_end = _num(rng, 0.2, 0.6)
    think = _service(rng, _num(rng, 0.02, 0.3))
    turn = (f"set n = {rng.choice(['1 + floor(~uniform(0, ' + str(max(2, cap // 2)) + '))', '~uniform(1, ' + str(max(2, cap // 3)) + ')', str(unit * rng.randint(1, 4))])}; "
            f"set o = 1 + floor(~exp({rng.choice([2, 4, 8])})); set o1 = floor(o / 2); set c = K + n; "
            f"{'set prio = ~uniform(0, 3); ' if rng.random() < 0.4 else ''}{'set tag = floor(~uniform(0, 3)); ' if rng.random() < 0.3 else ''}"
            "set t0 = now; set started = 0;")
    stop = rng.choice([f"~bernoulli({p_end})", f"~bernoulli({p_end}) || K > {cap * 3 // 4}", f"~bernoulli({p_end}) || K > {cap}"])
    # Without `turn;` every loop shares turn_no 0, which the ITL statistics key on.
    session = (f"session {{ loop {{ run think ({think}); {'turn; ' if rng.random() < 0.5 else ''}{turn} {' '.join(body)} "
               f"set K = {rng.choice(['c + o', 'c + o', '0'])}; observe latency = now - t0; "
               f"branch ({stop}) {{ end; }} }} }}")
    init = (f"init {{ set K = 0; set prio = {rng.choice(['serial - 2 * floor(serial / 2)', '~bernoulli(0.5)', 'floor(~uniform(0, 3))'])}; "
            f"set tag = serial - 3 * floor(serial / 3); set n = 1; }}")
    arrival = _arrival(rng, _num(rng, 4, 30))
    prog = "\n".join(items + [
        f"run {{ horizon {rng.choice([2, 3, 5])};{' warmup 0.5;' if rng.random() < 0.3 else ''} }}",
        f"workload {{ arrive {arrival}; {init} }}",
        session,
    ])
    return Case(prog, "engines")


# ------------------------------------------------------------------ family (h): holds without step engines

def _holds(rng) -> Case:
    """Holds, growth and preemption on plain pools, with fifo/ps/delay stages only (no step engine).

    Nested holds (one pool twice, two pools), multi-pool holds with `reserve`, `at admission`
    bindings over pool state, reserves above the units, `queue by` orders over `waited` and
    attributes (head-of-line blocking), `preempt lifo` driven by `grow` statements (non-engine
    victims: the last holder with an open hold), `load`, `release` inside a hold and outside it
    (ending a lease), leases of finite, infinite and zero time, `cache`/`reuse`/`drop`, holds that
    can never fit (rejection), repeated preemptions (`stuck`), a pool array indexed by an attribute
    or a `choose`, and sessions that `end` inside holds. Every hold body starts with a positive run,
    so a growth that preempts its own hold never re-admits and re-grows in one instant (a hang).
    Forms sq is known to get wrong come only with HOLDS_DIVERGENT_FORMS (see its comment).
    """
    pools = {}  # name -> (cap, unit, is_array)
    # A hot program has small pools and grows often, so preemptions chain and victims repeat (`stuck`).
    hot = rng.random() < 0.5
    p_grow = 0.4 if hot else 0.2

    def pool_decl(name, size=None):
        bs = rng.choice([None, None, None, 1, 2, 3, 4])
        unit = bs or 1
        cap = unit * (rng.randint(3, 6) if hot else rng.randint(3, 12))
        opts = [f"cap {cap};"]
        if bs:
            opts.append(f"block {bs};")
        opts.append(rng.choice(["preempt lifo;", "preempt lifo;", "preempt lifo;", "preempt none;", ""]))
        opts.append(rng.choice(["", "", "queue fifo;", "queue by (waited);", "queue by (-waited);",
                                "queue by (prio, -serial);", "queue by (-prio, waited);", "queue by (waited, prio, -serial);",
                                "queue by (tag, serial);", "queue by (-serial);", "queue by (u);", "queue by (prio - waited);",
                                "queue by (computed, serial);", f"queue by (cachedin({name}{'[0]' if size else ''}), -waited);",
                                "queue by (used(A) > 2 ? serial : -serial);"]))
        opts.append(rng.choice(["", "evict lru;", "evict by (size);", "evict by (-size, serial);", "evict by (waiting, age);",
                                "evict by (tag);"]))
        pools[name] = (cap, unit, size)
        return f"pool {name}{f'[{size}]' if size else ''} {{ " + " ".join(o for o in opts if o) + " }"

    items = [pool_decl("A")]
    if rng.random() < 0.65:
        items.append(pool_decl("B"))
    arr = rng.random() < 0.4
    if arr:
        items.append(pool_decl("p", 3))
    gate = rng.random() < 0.25
    if gate:
        items.append(f"pool g {{ cap {rng.randint(1, 2)}; {rng.choice(['', 'queue by (-prio);', 'queue by (waited, -serial);'])} }}")
        pools["g"] = (2, 1, None)
    items += ["stage d : delay;", f"stage f : {rng.choice(['fifo', 'fifo(2)', 'fifo(1)'])};",
              f"stage s : ps({rng.choice(['1', '2', 'min(present, 2)'])});", "stage think : delay;"]
    names = [p for p in pools if p != "g"]
    leased = set()          # pool refs some hold leases: `release` outside a hold is legal for them
    counter = [0]
    index_mode = rng.choice(["attr", "choose"])
    # 0.1.2 accepts a hold that names one pool twice (`hold A (u), A (v)`); with
    # HOLDS_DIVERGENT_FORMS a few programs try it.
    dup = rng.random() < 0.08

    def ref(name):
        return "p[i]" if name == "p" else name

    def work():
        return rng.choice(["0.5", "1", "0.2", "0.7 + ~uniform(0, 1)", "~det(0.4)", "0.1 + ~exp(0.5)", "1.5"])

    def stage():
        return rng.choice(["d", "d", "f", "s"])

    def units(name):
        cap, unit, _ = pools[name]
        r = rng.random()
        if r < 0.03:
            return f"{cap + unit}", None             # never fits: rejected
        if r < 0.06:
            return f"u + {cap}", None                # u >= 1: never fits either
        if r < 0.3:
            return "max(u, computed)", "u"
        if r < 0.4:
            return f"{rng.randint(1, max(1, cap // 2))}", None
        if r < 0.48:
            return "serial - 2", None               # negative for the first ones: allocates 0
        if r < 0.55:
            return "v", "v"
        if r < 0.63:
            # Header draws: one per evaluation (at the statement and at every admission attempt).
            return rng.choice(["u + floor(~uniform(0, 2))", f"min({cap}, 1 + ~exp(1))", "u * ~uniform(0.5, 1)"]), None
        if r < 0.69:
            # Header reads of pool state and time, evaluated at every attempt.
            return rng.choice([f"max(1, free({ref(name)}) - {unit})", f"1 + used({ref(name)}) / 2", "u + floor(now / 4)",
                               f"max(u, {cap} - cachedin({ref(name)}))"]), None
        return "u", "u"

    def body_stmts(frames, depth, frame):
        """Statements after the first run of a hold body; `frames` are the enclosing holds, innermost last."""
        out = []
        loaded = False
        for _ in range(rng.randint(1, 4 - depth)):
            r = rng.random()
            open_refs = [(f, p) for f in frames for p in f["pools"] if p not in f["released"]]
            if r < p_grow and open_refs:
                f, p = rng.choice(open_refs)
                cap, unit, _ = pools[p.split("[")[0]]
                out.append(f"grow {p} ({rng.choice([1, unit, 2 * unit, cap // 2, cap, 'u'])});")
                out.append(f"run {stage()} ({work()});")
            elif r < p_grow + 0.08 and not loaded and frame["floor"] and not frame["nested"] and frame["pools"][0] not in frame["released"]:
                p = frame["pools"][0]
                fl = frame["floor"]
                amt = rng.choice([fl, f"{fl} / 2", "1"]) if not frame["cache"] else f"min({fl}, max(0, {fl} - cached))"
                if amt == "1":
                    amt = f"min(1, {fl})"
                out.append(f"load {p} ({amt});")
                loaded = True
            elif r < p_grow + 0.16 and open_refs:
                f, p = rng.choice(open_refs)
                out.append(f"release {p};")
                f["released"].add(p)
                if rng.random() < 0.5:
                    out.append(f"run {stage()} ({work()});")
            elif r < p_grow + 0.34 and depth < 2:
                frame["nested"] = True
                out.append(hold(frames, depth + 1))
            elif r < p_grow + 0.4:
                out.append(f"branch ({rng.choice(['serial - 2 * floor(serial / 2) == 1', '~bernoulli(0.25)', 'now > 2', 'k >= 1', 'prio == 0'])}) {{ end; }}")
            elif r < p_grow + 0.46:
                out.append(f"drop {ref(rng.choice(names))};")
            elif r < p_grow + 0.54:
                out.append(f"set tag = {rng.choice(['tag + 1', '10 - serial', 'floor(~uniform(0, 3))'])};")
            elif r < p_grow + 0.64:
                p = ref(rng.choice(list(pools)))
                out.append(f"observe o{rng.randint(0, 2)} = {rng.choice(['used', 'holders', 'queued', 'free', 'cachedin'])}({p}) "
                           f"+ 100 * {rng.choice(['computed', 'now', 'holders(A)', 'used(A)'])};")
            else:
                out.append(f"run {stage()} ({work()});")
        return out

    def hold(frames, depth):
        counter[0] += 1
        hid = counter[0]
        avail = list(names)
        if gate and depth == 0 and rng.random() < 0.3:
            avail = ["g"]
        k = 2 if len(avail) >= 2 and rng.random() < 0.3 else 1
        chosen = rng.sample(avail, k)
        if dup and avail != ["g"] and rng.random() < 0.3 and HOLDS_DIVERGENT_FORMS:
            chosen = [chosen[0], chosen[0]]     # one pool named twice in one hold statement
        if frames and rng.random() < 0.35:
            # Nested on a pool an enclosing hold already takes (the same member for `p[i]`).
            outer = rng.choice([p for f in frames for p in f["pools"]])
            chosen = [outer.split("[")[0]] + [c for c in chosen if c != outer.split("[")[0]][:k - 1]
        bindings = []
        specs, floor = [], None
        for j, name in enumerate(chosen):
            cap, unit, _ = pools[name]
            u, fl = units(name)
            if name != "g" and rng.random() < 0.2:
                b = f"f{hid}_{j}"
                bindings.append(f"{b} = {rng.choice(['free', 'used', 'cachedin', 'holders'])}({ref(name)})")
                u, fl = f"min({u}, max({unit}, {b}))", None
            if name == "g":
                u, fl = "1", None
            spec = f"{ref(name)} ({u})"
            if rng.random() < 0.25:
                spec += f" reserve ({rng.choice([f'{u} + {unit}', f'{u} + {cap // 2}', str(cap), f'{cap + 1}', 'v + 1', 'u * 2', 'u + ~uniform(0, 2)', f'max(u, computed + {unit})'])})"
            specs.append(spec)
            if j == 0:
                floor = fl
        refs = [ref(n) for n in chosen]
        cache = rng.random() < 0.5 and chosen != ["g"]
        frame = {"pools": refs, "released": set(), "cache": cache, "floor": floor, "nested": False}
        first = f"run {stage()} ({work()});"
        head = []
        if rng.random() < 0.6:
            head.append(f"observe adm{min(depth, 2)} = now;")
        if cache and rng.random() < 0.3:
            head.append("observe hit = cached;")
        if rng.random() < 0.2:
            head.append("observe comp = computed;")
        body_reads = None
        if rng.random() < 0.25:
            body_reads = f"w{hid}"
            bindings.append(f"{body_reads} = {rng.choice(['u * 2', 'prio + 1', 'serial', 'tag - k'])}")
            head.append(f"observe w = {body_reads};")
        rest = body_stmts(frames + [frame], depth, frame)
        text = "hold " + ", ".join(specs)
        if cache and rng.random() < 0.35:
            text += f" reuse ({rng.choice(['0', '1', 'u', 'inf', 'u / 2'])})"
        if bindings:
            text += f" at admission ({', '.join(bindings)})"
        text += " { " + " ".join(head + [first] + rest) + " }"
        hdr = [b.split(" = ")[0] for b in bindings if b.startswith("f")]
        if cache:
            # A binding in `cache` is substituted: it reads the pool at the release, not at admission.
            text += f" cache ({rng.choice(['inf', 'u', '0', 'u / 2', '2', 'u + v', 'u * ~uniform(0, 1)', 'computed + 1'] + hdr)})"
        if chosen != ["g"] and rng.random() < 0.25:
            lp = rng.choice([r for r in refs if r != "g"])
            leased.add(lp)
            text += f" lease {lp} ({rng.choice(['0', '0.5', '2', 'inf', 'inf', '-1', '1 + ~uniform(0, 1)'] + [h + ' / 4' for h in hdr])})"
        return text + ";"

    def turn():
        stmts = []
        if arr and index_mode == "choose":
            stmts.append(f"choose i in 3 by ({rng.choice(['used(p[i])', 'queued(p[i]) + holders(p[i])', '-free(p[i])'])}, i);")
        for _ in range(rng.randint(1, 2)):
            stmts.append(hold([], 0))
            if rng.random() < 0.3:
                stmts.append(f"run {stage()} ({work()});")
        if leased and rng.random() < 0.6:
            stmts.insert(rng.randint(1, len(stmts)), f"release {rng.choice(sorted(leased))};")
        if rng.random() < 0.25:
            stmts.append(f"drop {ref(rng.choice(names))};")
        if rng.random() < 0.3:
            stmts.append(f"observe c = cachedin({ref(rng.choice(names))}) + used({ref(rng.choice(names))});")
        return stmts

    caps = min(pools[n][0] for n in names)
    ustat = f"set u = {rng.choice(['1 + floor(~uniform(0, ' + str(max(2, caps // 2)) + '))', str(max(1, caps // 3)), '1 + floor(~uniform(0, ' + str(caps) + '))'])};"
    vstat = f"set v = {rng.choice(['1', '2', '1 + floor(~uniform(0, 3))', 'u'])};"
    # The think time comes first: a rejected hold takes no time, and a closed population would spin.
    body = " ".join(turn())
    if rng.random() < 0.4:
        # Two roles: even and odd serials run different holds, so they meet in each other's pools.
        body = (f"branch (serial - 2 * floor(serial / 2) == {rng.randint(0, 1)}) {{ {body} }} "
                f"else {{ {' '.join(turn())} }}")
    if rng.random() < 0.55:
        kmax = rng.randint(2, 4)
        session = (f"session {{ loop {{ run think ({work()}); {ustat} {vstat} {body} set k = k + 1; "
                   f"branch (k >= {kmax} || ~bernoulli({_num(rng, 0.1, 0.4)})) {{ end; }} }} }}")
    else:
        session = f"session {{ run think ({work()}); {ustat} {vstat} {body} observe done = now; }}"
    init = (f"init {{ set k = 0; set u = 1; set v = 1; set prio = {rng.choice(['serial - 2 * floor(serial / 2)', 'floor(~uniform(0, 3))', 'serial'])}; "
            f"set tag = {rng.choice(['serial - 3 * floor(serial / 3)', 'floor(~uniform(0, 3))'])}; "
            f"set i = {rng.choice(['serial - 3 * floor(serial / 3)', '0', 'floor(~uniform(0, 3))'])}; }}")
    arrival = rng.choice([f"batch({rng.randint(2, 10 if hot else 8)})", f"poisson({_num(rng, 0.5, 3)})",
                          f"closed({rng.randint(1, 4)})", f"renewal(~det({_num(rng, 0.3, 1)}))"])
    warm = f" warmup {rng.choice([1, 2])};" if rng.random() < 0.25 else ""
    prog = "\n".join(items + [
        f"run {{ horizon {rng.choice([6, 10, 15])};{warm} }}",
        f"workload {{ arrive {arrival}; {init} }}",
        session,
    ])
    return Case(prog, "holds")

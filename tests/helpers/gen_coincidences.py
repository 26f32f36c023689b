"""The `coinc` family of tests/helpers/gen_programs.py: programs whose events fall at one instant on purpose.

Random programs with continuous draws almost never put two events at one time; real models do
all the time. Here every time is a multiple of one unit (a power of two, so sums stay exact):
constant works and `~det` draws, whole token counts, step costs of a constant or a constant per
token, `batch`, `closed` and `renewal(unit)` arrivals, equal priorities and equal `serve by` /
`queue by` keys. So jobs of fifo, ps and delay stages finish together and go on to step stages,
iterations end as holds are released and others admitted, growth preempts at an iteration's
boundary, and flows over shared stages start together. tests/differential/test_coincidences.py counts how
often the generated programs really have same-instant events.
"""
from __future__ import annotations

UNITS = (0.25, 0.5, 1, 2)


def coincidences(rng, case_type):
    """One program of the family (`case_type` is gen_programs.Case)."""
    unit = rng.choice(UNITS)

    def work(k_hi=3):
        k = rng.randint(1, k_hi) * unit
        return rng.choice([f"{k:g}", f"{k:g}", f"~det({k:g})", f"{unit:g} * m"])

    items = []
    fronts = []
    for i in range(rng.randint(1, 2)):
        decl = rng.choice(["fifo", f"fifo({rng.randint(1, 3)})", f"ps({rng.choice([1, 2, 4])})",
                           f"ps(min(present, {rng.randint(1, 3)}))", "delay"])
        items.append(f"stage f{i} : {decl};")
        fronts.append(f"f{i}")
    shared = rng.random() < 0.2
    if shared:
        items += ["stage l0 : ps(2);", "stage l1 : ps(1);", "share maxmin;"]

    kv = rng.random() < 0.5
    engines = [f"e{i}" for i in range(rng.choice([1, 1, 2]))]
    if kv:
        cap = rng.choice([6, 8, 12, 16, 32])
        opts = [f"cap {cap};", rng.choice(["", "block 2;", "block 4;"]),
                rng.choice(["preempt lifo;", "preempt lifo;", "preempt none;", ""]),
                rng.choice(["", "evict lru;", "queue by (prio);", "queue fifo;"])]
        items.append("pool kv { " + " ".join(o for o in opts if o) + " }")
    slots = rng.random() < 0.6
    if slots:
        opts = [f"cap {rng.randint(1, 3)};", rng.choice(["", "queue by (prio);", "queue by (-prio);", "preempt lifo;"])]
        items.append("pool slots { " + " ".join(o for o in opts if o) + " }")
    per_token = unit / 4
    for e in engines:
        opts = [f"budget {rng.choice([1, 2, 4, 8, 'inf'])};"]
        if rng.random() < 0.5:
            opts.append(f"chunk {rng.choice([1, 2, 4])};")
        opts.append("cost " + rng.choice([f"{unit:g}", f"{unit / 2:g}", f"{per_token:g} * tokens",
                                          f"{unit / 2:g} + {per_token:g} * tokens",
                                          f"decoders > 1 ? {unit:g} : {unit / 2:g}"]) + ";")
        if kv:
            opts.append("memory kv;")
        opts.append(rng.choice(["", "", "serve decode first;", "serve by (prio);", "serve by (prio, -admission);",
                                "serve exclusive prefill;"]))
        items.append(f"stage {e} : step {{ " + " ".join(o for o in opts if o) + " }")

    def engine_runs(e):
        g = " growing kv" if kv and rng.random() < 0.7 else ""
        runs = []
        if rng.random() < 0.6:
            runs.append(f"run {e} prefill (n){g};")
        runs.append(f"run {e} decode (o){g};")
        if kv:
            return f"hold kv (n) {{ {' '.join(runs)} }}" + rng.choice(["", "", " cache (n);"])
        return " ".join(runs)

    def statement():
        r = rng.random()
        if r < 0.3:
            return f"run {rng.choice(fronts)} ({work()});"
        if r < 0.55:
            return engine_runs(rng.choice(engines))
        if r < 0.75 and slots:
            inner = rng.choice([f"run {rng.choice(fronts)} ({work()});", engine_runs(rng.choice(engines))])
            return f"hold slots (1) {{ {inner} }}"
        if r < 0.85 and shared:
            return f"run l0, l1 ({work()});"
        if r < 0.92:
            return f"branch (m == 1) {{ run {rng.choice(fronts)} ({work()}); }}"
        return f"observe q = queue({rng.choice(fronts)}) + queue({rng.choice(engines)});"

    # a front stage first, then the engines: every ps/fifo/delay finish leads to a step stage
    body = [f"run {rng.choice(fronts)} ({work()});", engine_runs(rng.choice(engines))]
    body += [statement() for _ in range(rng.randint(0, 3))]
    if shared and not any(s.startswith("run l0, l1") for s in body):
        body.append(f"run l0, l1 ({work()});")     # `share` needs a run over several stages
    rng.shuffle(body)
    if not any(s.startswith("run f") for s in body):
        body.insert(0, f"run {fronts[0]} ({work()});")   # a closed body takes time

    arrival = rng.choice([f"batch({rng.randint(2, 8)})", f"closed({rng.randint(1, 6)})",
                          f"closed({rng.randint(1, 6)})", f"renewal({unit:g})", f"renewal(~det({2 * unit:g}))"])
    looped = arrival.startswith("batch") and rng.random() < 0.5
    session = " ".join(body)
    if looped:
        session = f"loop {{ {session} branch (now > {8 * unit:g}) {{ end; }} }}"
    init = (f"init {{ set n = {rng.choice(['2', '4', '1 + serial - 2 * floor(serial / 2)'])}; "
            f"set o = {rng.choice(['1', '2', '3', '1 + serial - 3 * floor(serial / 3)'])}; "
            f"set m = {rng.choice(['1', 'serial - 2 * floor(serial / 2)', '2'])}; "
            f"set prio = {rng.choice(['0', '0', 'serial - 2 * floor(serial / 2)'])}; }}")
    horizon = 16 * unit * rng.choice([1, 2])
    warmup = f" warmup {rng.choice([2, 4]) * unit:g};" if rng.random() < 0.3 else ""
    items += [f"run {{ horizon {horizon:g};{warmup} }}",
              f"workload {{ arrive {arrival}; {init} }}",
              f"session {{ set t0 = now; {session} observe latency = now - t0; }}"]
    return case_type("\n".join(items), "coinc")

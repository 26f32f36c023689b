"""Issue 14, the divergences of the engine and statistics from pyserq 0.1.2 (same program, same seed).

* item 5: the exact p99 orders ±inf, ±0 and NaNs of both signs as 0.1.2 does (IEEE totalOrder), and
  `work(S)` of an empty stage is -0.0 as in 0.1.2 (Rust's empty float sum), so `1 / work(S)` records
  -inf, not +inf (the p99 of {-inf, 1} is 1, where sq once printed null);
* item 7: a step stage's time shares (`prefill_only`, `decode_only`, `mixed`, `mean_decodes`) and a
  shared stage's `utilization` are integrated as 0.1.2 does (over whole iterations; rates summed in
  flow id order), so the report's JSON text is the same digit for digit (also checked on every
  example by tests/differential/test_examples.py).

Values are compared bit for bit (`struct` hex), since the report prints every NaN and inf as null.
"""
from __future__ import annotations

import json
import random
import struct
from collections import Counter

import pytest

import sq
from tests.helpers.oracle import REFERENCE_MISSING

pyserq = pytest.importorskip("pyserq", reason=REFERENCE_MISSING, exc_type=ImportError)   # every test compares

# Each value as an expression over a session attribute `z` = 0 (set at run time, so nothing is
# folded at compile time): the engine's own arithmetic makes the special values.
VALUES = {
    "-inf": "-1 / z", "+inf": "1 / z", "+0": "z", "-0": "-z",
    "-nan": "z / z",                 # x86's default NaN has the sign bit set
    "+nan": "abs(z / z)", "-nan2": "-abs(z / z)",
    "1": "1", "-1": "-1", "2.5": "2.5", "-3": "-3", "1e300": "1e300",
}


def bits(x: float) -> str:
    return struct.pack(">d", x).hex()


def _pick(names: list[str], lo: int, hi: int) -> str:
    """The value for serial s in [lo, hi): a balanced conditional, so 250 values nest only 8 deep."""
    if hi - lo == 1:
        return VALUES[names[lo]]
    mid = (lo + hi) // 2
    return f"(serial < {mid} ? {_pick(names, lo, mid)} : {_pick(names, mid, hi)})"


def _program(names: list[str]) -> str:
    return (f"stage s : fifo(1);\nrun {{ horizon 10; seed 1; }}\n"
            f"workload {{ arrive batch({len(names)}); session {{ request; }} }}\n"
            f"server {{ set z = 0; observe x = {_pick(names, 0, len(names))}; }}\n")


def _both(source: str, name: str):
    ours = sq.run(sq.compile(source=source)).observe(name)
    theirs = pyserq.run(pyserq.compile(source=source)).observe(name)
    return ours, theirs


def _sample_sets(seed: int, count: int):
    rng = random.Random(seed)
    special = [k for k in VALUES if not k[-1].isdigit() or k in ("+0", "-0")]
    plain = [k for k in VALUES if k not in special]
    for _ in range(count):
        n = rng.choice([1, 2, 3, 7, 100, 101, 150, 250])    # p99 is the largest up to n = 100
        kinds = rng.sample(special, rng.randint(1, len(special))) + rng.sample(plain, rng.randint(0, 2))
        yield [rng.choice(kinds) for _ in range(n)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_p99_orders_special_values_as_pyserq(seed):
    for names in _sample_sets(seed, 12):
        ours, theirs = _both(_program(names), "x")
        assert [bits(x) for x in ours.samples] == [bits(x) for x in theirs.samples], "samples differ"
        assert bits(ours.p99) == bits(theirs.p99), f"p99 of {Counter(names)}"


def test_p99_of_minus_inf_and_one_is_one():
    # The case: an observe `1 / (a * work(gpu))` records -inf on an empty stage.
    source = ("stage gpu : fifo(1);\nrun { horizon 10; seed 1; }\n"
              "workload { arrive batch(2); session { request; } }\n"
              "server { branch (serial == 0) { observe x = 1 / (2 * work(gpu)); } else { observe x = 1; } }\n")
    ours, theirs = _both(source, "x")
    assert bits(ours.samples[0]) == bits(float("-inf")) == bits(theirs.samples[0])
    assert ours.p99 == theirs.p99 == 1.0


def test_work_of_an_empty_stage_is_minus_zero_on_every_kind():
    source = ("share maxmin;\nstage f : fifo(1); stage p : ps(1); stage d : delay;\n"
              "stage e : step { budget 8; chunk 4; cost 0.01; }\nstage x : ps(1); stage y : ps(2);\n"
              "run { horizon 100; seed 1; }\nworkload { arrive batch(3); session { request; } }\n"
              "server { observe f = work(f); observe p = work(p); observe d = work(d); observe e = work(e);\n"
              "  observe x = work(x); run x, y (serial); observe y = work(y); observe xy = work(x) + work(y); }\n")
    ours = sq.run(sq.compile(source=source))
    theirs = pyserq.run(pyserq.compile(source=source))
    for name in ("f", "p", "d", "e", "x", "y", "xy"):
        assert [bits(v) for v in ours.observe(name).samples] == \
            [bits(v) for v in theirs.observe(name).samples], name
    assert bits(ours.observe("f").samples[0]) == bits(-0.0)


STEP_AND_SHARED = """
share maxmin;
pool kv { cap 4000; block 16; evict lru; preempt lifo; }
stage engine[2] : step { budget 512; chunk 128; cost 0.004 + 2e-5 * tokens + 1e-7 * kv_decode; memory kv; }
stage up : ps(1); stage down : ps(2);
run { horizon 200; warmup 5; seed 3; }
workload { arrive poisson(20); turn { set p = ~uniform(50, 400); set o = 1 + ~exp(40); } session { turn; request; } }
server {
  set i = serial - 2 * floor(serial / 2);
  hold kv (p) { run engine[i] prefill (p) growing kv; run up, down (p * 1e-4 * (1 + i)); 
                run engine[i] decode (o) growing kv; }
}
"""


def test_step_shares_are_pyserqs_json_text():
    # (a shared stage's utilization, summed in flow id order, is checked digit for digit on the
    # pd-disaggregation examples with congested NICs by tests/differential/test_examples.py)
    ours = sq.run(sq.compile(source=STEP_AND_SHARED)).json()
    theirs = pyserq.run(pyserq.compile(source=STEP_AND_SHARED)).json()
    stages = json.loads(ours)["stages"]
    assert all(s["mean_decodes"] > 0 for s in stages if s["name"] == "engine"), "nothing decoded"
    assert all(s["utilization"] > 0 for s in stages if s["name"] in ("up", "down")), "no flows"
    assert ours == theirs


# The engine computes a step stage's usual costs, `L0 + max(L1 * (L2 + L3), L4 * L5)` and `L0 + L1 * L2`
# over leaves, without its stack machine (sq/engine/_expr.pxi, cost_shape); the near misses run on the
# stack machine.
STEP_COST = """
let step0 = 0.008;
let kvread = 4e-8;
pool kv { cap 20000; block 16; preempt lifo; }
stage engine : step { budget 512; chunk 256; cost COST; memory kv; }
run { horizon 60; seed 3; }
workload { arrive poisson(4); session { set p = 100 + floor(~uniform(0, 900)); set o = 1 + floor(~exp(60));
                                        request; } }
server { hold kv (p) { run engine prefill (p) growing kv; run engine decode (o) growing kv; } }
"""


@pytest.mark.parametrize("cost", [
    "step0 + max(kvread * (kv_decode + kv_prefill), 2e-5 * tokens)",       # the shape
    "now * 1e-9 + max(step0 * (prefilled + residents), kvread * kv_decode)",
    "step0 + max(kvread * (kv_decode + kv_prefill), 2e-5 * tokens) * 1",   # near misses
    "step0 + min(kvread * (kv_decode + kv_prefill), 2e-5 * tokens)",
    "step0 - max(kvread * (kv_decode + kv_prefill), 2e-5 * tokens)",
    "0.01 + 1e-4 * tokens",                                                # the linear shape
    "step0 + kvread * kv_decode",
    "now * 1e-9 + step0 * residents",
    "1e-4 * tokens + 0.01",                                                # near misses
    "0.01 + 1e-4 * tokens * 1",
    "0.01 + 1e-4 / tokens",
    "0.01 - 1e-6 * tokens",
])
def test_a_step_cost_is_pyserqs_json_text(cost):
    source = STEP_COST.replace("COST", cost)
    ours = sq.run(sq.compile(source=source)).json()
    theirs = pyserq.run(pyserq.compile(source=source)).json()
    assert json.loads(ours)["stages"][0]["mean_decodes"] > 0, "nothing decoded"
    assert ours == theirs

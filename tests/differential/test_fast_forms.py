"""The engine's set-up-time decisions (issue 12) change no result: each is checked on programs that
take it and on near misses that must not, against pyserq 0.1.2's JSON text.

* Expression shapes (sq/engine/_expr.pxi, ExprShape): a constant, an attribute, `now`, another context
  variable, two leaves and one of + - * /, a draw whose arguments are constants; anything else runs
  on the stack machine.
* Statement forms (sq/engine/_session.pxi, StmtForm): a `run` of one fifo, ps or delay stage with no index,
  `growing`, other stages or mode (its work drawn without an evaluation when the draw's one
  argument is a constant); a `set` of `now`; an `observe` of `now - attribute`; any other `run`,
  `set` or `observe` takes the general statement.
* `record`'s common sample (room in its arrays, a 4-byte serial, turn 0) and the rest (growth,
  turns stored once one is not 0).
* `choose` (sq/engine/_session.pxi, choose_best): a last key that is one attribute is not evaluated,
  and one key of a router's load shape is taken without the stack machine's dispatch.
* Per-program resets (State.session_extras): a session's job, flow, token and hold fields are reset
  at spawn only where pools or step stages read them, and an ending session releases holds, growth
  and leases only where pools exist.
"""
from __future__ import annotations

import pytest

from tests.helpers.oracle import REFERENCE_MISSING, same_json

pyserq = pytest.importorskip("pyserq", reason=REFERENCE_MISSING, exc_type=ImportError)   # every test compares


def _observed(report: dict) -> dict:
    return {name: o["count"] for name, o in report["observes"].items()}


# Every observe's expression is one shape (or a near miss of one); `x` and `y` are attributes set at
# run time, so nothing folds at compile time.
EXPRESSIONS = {
    "num": "2.5",
    "attr": "x",
    "now": "now",
    "serial": "serial",
    "add": "x + 1", "sub": "now - t0", "mul": "2 * x", "div": "x / y", "div0": "x / z",
    "add_ctx": "now + serial", "since": "now - t1", "since_serial": "now - serial",
    "until": "t0 - now", "now_minus_num": "now - 1",
    "draw1": "~exp(1)", "draw2": "~uniform(0.1, 2)", "draw_h2": "~h2(1, 4)",
    # near misses: the stack machine
    "three": "x + y + 1", "neg": "-x", "nested": "(x + 1) * 2", "compare": "x < y",
    "pow": "x ^ 2", "min": "min(x, y)", "draw_attr": "~exp(x)", "draw_mixed": "~uniform(0, x)",
    "draw_plus": "~exp(1) + 1", "plus_draw": "1 + ~exp(1)", "fn": "abs(x)", "not": "!x",
}


def _observes(expressions: dict) -> str:
    """One observe statement per named expression."""
    return " ".join(f"observe {name} = {expr};" for name, expr in expressions.items())


def _expressions_program() -> str:
    observes = _observes(EXPRESSIONS)
    return ("stage s : fifo(1);\nrun { horizon 200; seed 5; }\n"
            "workload { arrive poisson(0.8); }\n"
            "session { set t0 = now; set t1 = now * 1; set x = ~uniform(0.5, 3); set y = serial + 1; set z = 0;\n"
            f"  run s (~exp(1)); {observes} }}\n")


def test_every_expression_shape_and_its_near_misses_are_pyserqs_json_text():
    counts = _observed(same_json(_expressions_program()))
    assert set(counts) == set(EXPRESSIONS)
    assert min(counts.values()) > 100, counts


@pytest.mark.parametrize("phi", ["1", "2", "present", "min(present, 2)", "1 + present / 4"])
def test_a_ps_rate_of_each_shape_is_pyserqs_json_text(phi):
    # φ is evaluated with `present` bound: a constant, another context variable, a near miss
    same_json(f"stage p : ps({phi});\nrun {{ horizon 300; seed 2; }}\nworkload {{ arrive poisson(0.9); }}\n"
               "session { set t0 = now; run p (~h2(1, 4)); observe r = now - t0; }\n")


@pytest.mark.parametrize("gap", ["~exp(2)", "0.5", "~uniform(0.2, 0.8)", "~exp(1) * 0.5"])
def test_an_arrival_gap_of_each_shape_is_pyserqs_json_text(gap):
    same_json(f"stage s : fifo(2);\nrun {{ horizon 300; seed 4; }}\nworkload {{ arrive renewal({gap}); }}\n"
               "session { set t0 = now; run s (~exp(1.5)); observe r = now - t0; }\n")


# One `run` per program: the fast form (one fifo, ps or delay stage, plain) and its near misses.
RUNS = {
    "fifo": ("stage s : fifo(2);", "run s (~exp(1.8));"),
    "ps": ("stage s : ps(1);", "run s (~exp(1));"),
    "delay": ("stage s : delay;", "run s (~exp(1));"),
    "draw2_work": ("stage s : fifo(1);", "run s (~uniform(0.2, 1.6));"),
    "attr_work": ("stage s : fifo(1);", "set w = ~exp(1); run s (w);"),
    "zero_work": ("stage s : fifo(1);", "run s (floor(serial / 2) * 2 == serial ? 0 : ~exp(1));"),
    "negative_work": ("stage s : fifo(1);", "run s (floor(serial / 3) * 3 == serial ? -1 : ~exp(1));"),
    "nan_work": ("stage s : fifo(1);", "set z = 0; run s (floor(serial / 4) * 4 == serial ? z / z : ~exp(1));"),
    "indexed": ("stage s[3] : fifo(1);", "run s[serial - 3 * floor(serial / 3)] (~exp(2.5));"),
    "indexed_const": ("stage s[2] : fifo(1);", "run s[1] (~exp(1));"),
    # a shared stage's own run is a flow, not a job
    "shared_one": ("share maxmin;\nstage s : ps(1); stage t : ps(2);",
                   "run s (~exp(0.5)); run s, t (~exp(0.5));"),
    "shared": ("share maxmin;\nstage s : ps(1); stage t : ps(2);", "run s, t (~exp(1));"),
    "two_runs": ("stage s : fifo(1); stage t : ps(1);", "run s (~exp(0.5)); run t (~exp(0.5));"),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_each_run_form_and_its_near_misses_are_pyserqs_json_text(name):
    stages, run = RUNS[name]
    report = same_json(f"{stages}\nrun {{ horizon 300; seed 3; }}\nworkload {{ arrive poisson(0.9); }}\n"
                        f"session {{ set t0 = now; {run} observe r = now - t0; }}\n")
    assert _observed(report)["r"] > 100


def test_a_step_stage_run_is_pyserqs_json_text():
    # a run on a step stage (prefill/decode modes, growing) never takes the fast form; a plain run
    # beside it does, in a program whose sessions reset their job, flow and token fields
    report = same_json("pool kv { cap 4000; block 16; preempt lifo; }\n"
               "stage e : step { budget 256; chunk 64; cost 0.004 + 2e-5 * tokens; memory kv; }\n"
               "stage f : fifo(1);\nrun { horizon 60; seed 3; }\n"
               "workload { arrive poisson(6); session { set p = 50 + floor(~uniform(0, 200)); "
               "set o = 1 + floor(~exp(20)); request; } }\n"
               "server { run f (0.01); hold kv (p) { run e prefill (p) growing kv; run e decode (o) growing kv; } "
               "observe done = now; }\n")
    assert report["stages"][0]["mean_decodes"] > 0 and _observed(report)["done"] > 100


@pytest.mark.parametrize("arrive", ["poisson(0.9)", "closed(3)"])
def test_sessions_with_pools_reset_what_pools_read_as_pyserq(arrive):
    # pools: spawn resets job, flow and holds; ending sessions release holds and leases (closed
    # workloads spawn again from end_session)
    report = same_json("pool mem { cap 4; }\nstage s : fifo(2); stage t : ps(1);\n"
                        f"run {{ horizon 400; seed 6; }}\nworkload {{ arrive {arrive}; }}\n"
                        "session { set t0 = now; hold mem (1 + serial - 2 * floor(serial / 2)) { run s (~exp(1)); } "
                        "hold mem (1) { run t (~exp(0.5)); } lease mem (~exp(2)); run s (~exp(0.3)); "
                        "observe r = now - t0; }\n")
    assert _observed(report)["r"] > 50


def test_pools_without_holds_are_pyserqs_json_text():
    # declared pools that no hold takes: sessions skip the hold resets and releases
    report = same_json("pool idle { cap 1; } pool kv { cap 8; block 2; evict lru; }\nstage s : fifo(1);\n"
                        "run { horizon 300; seed 8; }\nworkload { arrive poisson(0.9); }\n"
                        "session { set t0 = now; run s (~exp(1)); observe r = now - t0; "
                        "observe u = used(kv) + free(idle) + holders(kv) + queued(idle); }\n")
    assert _observed(report)["u"] > 100


def test_observes_of_time_since_a_stamp_with_a_warmup_and_turns_are_pyserqs_json_text():
    # `now - t0` records only once warm; turns 0 (before the first `turn`), 1, 2 ... reach the
    # records (the common sample while every turn is 0, stored turns after), next to a general observe
    report = same_json("stage s : fifo(1); stage d : delay;\nrun { horizon 400; warmup 50; seed 9; }\n"
                        "workload { arrive poisson(0.3); turn { set more = ~bernoulli(0.7); } "
                        "session { set t0 = now; run d (~exp(1)); observe r = now - t0; "
                        "loop { turn; request; run d (~exp(2)); branch (!more) { end; } } } }\n"
                        "server { set t0 = now; run s (~exp(1)); observe r = now - t0; "
                        "observe r2 = (now - t0) * 2; }\n")
    assert _observed(report)["r"] > _observed(report)["r2"] > 100


# A router's load (XS_POOLS_ADD: pool function + pool function, each pool indexed by an attribute)
# and its near misses, on pools that hold and queue: `i` and `j` are indices set at run time.
POOL_LOADS = {
    "load": "holders(p[i]) + queued(p[i])", "two_pools": "used(p[i]) + holders(q[j])",
    "free": "free(q[j]) + queued(p[i])", "cached": "cachedin(p[i]) + used(q[j])",
    # near misses: the stack machine
    "minus": "holders(p[i]) - queued(p[i])", "three": "holders(p[i]) + queued(p[i]) + 1",
    "fixed": "holders(p[1]) + queued(p[i])", "stage": "queue(s) + holders(p[i])",
}


def _pool_loads_program(load: str | None = None) -> str:
    observes = _observes(POOL_LOADS if load is None else {"load": load})
    return ("pool p[3] { cap 2; } pool q[3] { cap 40; }\nstage s : fifo(2);\n"
            "run { horizon 300; seed 7; }\nworkload { arrive poisson(1.5); }\n"
            "session { set i = floor(~uniform(0, 3)); set j = floor(~uniform(0, 3)); set b = 3;\n"
            f"  hold p[i] (1), q[j] (~uniform(1, 9)) {{ {observes} run s (~exp(1.2)); }} }}\n")


def test_a_router_load_of_two_indexed_pools_is_pyserqs_json_text():
    counts = _observed(same_json(_pool_loads_program()))
    assert set(counts) == set(POOL_LOADS) and min(counts.values()) > 200, counts


@pytest.mark.parametrize("load", ["holders(p[b]) + queued(q[j])", "holders(p[i]) + queued(q[b])"])
def test_a_router_load_out_of_range_fails_as_on_the_stack_machine(load):
    # an index out of range stops the evaluation with the stack machine's error (`0 + ...` is the
    # same load on the stack machine), and pyserq refuses it too
    import sq

    errors = []
    for expr in (load, "0 + " + load):
        with pytest.raises(sq.SqError) as caught:
            sq.run(sq.compile(source=_pool_loads_program(expr)))
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and "index" in errors[0]
    with pytest.raises(Exception):
        pyserq.run(pyserq.compile(source=_pool_loads_program(load)))


# `choose`'s keys (choose_best): a last key that is one attribute (the candidate, or a session's
# own attribute) decides no tie and is not evaluated; one key of the load shape is its value; the
# near misses (a last key that is not one attribute, the candidate first) compare every key.
# The loads tie often (pools of 2 and 40), so which candidate a tie goes to shows in `pick`.
CHOOSE_KEYS = {
    "load_r": "holders(p[r]) + queued(p[r]), r", "load": "holders(p[r]) + queued(p[r])",
    "load_own": "holders(p[r]) + queued(p[r]), z", "used_r": "used(q[r]), r", "r": "r",
    "two_r": "holders(p[r]), used(q[r]), r",
    # least_loaded: both pools indexed by the candidate, other pool functions than the router's
    "used_load": "used(q[r]) + holders(p[r]), r", "free_queued": "free(q[r]) + queued(p[r])",
    # the load's pools indexed by another attribute (choose_best's loop of pools_add_value)
    "load_z_r": "holders(p[z]) + queued(p[r]), r", "load_r_z": "holders(p[r]) + queued(p[z]), r",
    # near misses
    "load_minus_r": "holders(p[r]) + queued(p[r]), -r", "r_load": "r, holders(p[r]) + queued(p[r])",
    "load_r_minus": "holders(p[r]) + queued(p[r]), r, -r", "minus_used": "-used(q[r])",
}


def _choose_program(keys: str) -> str:
    return ("pool p[4] { cap 2; } pool q[4] { cap 40; }\nstage s : fifo(2);\n"
            "run { horizon 600; seed 11; }\nworkload { arrive poisson(1); }\n"
            f"session {{ set z = floor(~uniform(0, 3)); choose r in 4 by ({keys}); observe pick = r;\n"
            "  observe first = r < 1;\n"
            "  hold p[r] (1), q[r] (~uniform(1, 9)) { run s (~exp(1.4)); } }\n")


@pytest.mark.parametrize("name", sorted(CHOOSE_KEYS))
def test_choose_keys_of_each_form_are_pyserqs_json_text(name):
    report = same_json(_choose_program(CHOOSE_KEYS[name]))
    assert report["observes"]["pick"]["count"] > 400


def test_choose_ties_go_where_the_keys_say():
    # the loads tie often enough that a last key of -r (ties to the last candidate) picks the
    # first one far less often than r (ties to the first), which the skipped key must keep
    def first(name):
        return same_json(_choose_program(CHOOSE_KEYS[name]))["observes"]["first"]["mean"]
    assert first("load_r") == first("load") == first("load_own") > first("load_minus_r") + 0.2


@pytest.mark.parametrize("keys", ["holders(p[r]) + queued(p[r]), r", "holders(p[z]) + queued(p[r]), r"])
def test_a_choose_over_fewer_candidates_than_pools_is_pyserqs_json_text(keys):
    # `choose r in 3` of four pools: p[3] is never a candidate, so its load must not be read
    report = same_json(_choose_program(keys).replace("choose r in 4", "choose r in 3"))
    assert report["observes"]["pick"]["p99"] == 2 and report["observes"]["pick"]["count"] > 400


def test_a_choose_past_its_pools_fails_as_on_the_stack_machine():
    # candidate 4 of `choose r in 5` indexes p[4] of four: choose_best's load stops with the stack
    # machine's error (`0 + ...` and a last key of `-r` take the general loop), and pyserq refuses too
    import sq

    errors = []
    for keys in ("holders(p[r]) + queued(p[r]), r", "0 + holders(p[r]) + queued(p[r]), -r"):
        with pytest.raises(sq.SqError) as caught:
            sq.run(sq.compile(source=_choose_program(keys).replace("choose r in 4", "choose r in 5")))
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and "index" in errors[0]
    with pytest.raises(Exception):
        pyserq.run(pyserq.compile(source=_choose_program(CHOOSE_KEYS["load_r"]).replace("choose r in 4", "choose r in 5")))

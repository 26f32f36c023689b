"""Run-time errors (spec §9.11) and bad input: always an SqError, never a crash.

The reference's message must appear in ours (we add the session and the
time); for the three conditions where 0.1.2 panics or hangs we give a clear
SqError instead.
"""
from __future__ import annotations

import dataclasses
import json
import sys

import pytest

import sq
from sq.errors import SqError
from sq.lower.lowering import lower
from sq._support.number_format import display

from tests.helpers.oracle import sq_ir as _ir
_engine = pytest.importorskip("sq._engine")


def _reference_error(pyserq, source: str, **overrides) -> str:
    overrides.setdefault("horizon", 10)
    with pytest.raises(ValueError) as info:
        pyserq.run(pyserq.compile(source=source, **overrides))
    return str(info.value)


RUN_ERRORS = {
    "stage-index": ("stage s[2] : fifo; workload { arrive batch(1); } session { set j = 2.5; run s[j] (1); }", {}),
    "fn-index": ("stage s[2] : fifo; workload { arrive batch(1); } session { set j = 2; observe q = queue(s[j]); }", {}),
    "index-saturates": ("stage s[2] : fifo; workload { arrive batch(1); } session { set j = 1e30; run s[j] (1); }", {}),
    "pool-index": ("pool kv[2] { cap 5; } workload { arrive batch(1); } session { set j = 2; hold kv[j] (1) { } }", {}),
    "load-fit": ("pool kv { cap 100; } workload { arrive batch(1); } session { hold kv (10) { load kv (11); } }", {}),
    "load-fit-2": ("pool kv[2] { cap 100; block 4; } workload { arrive batch(1); }\n"
                   "session { set j = 1; hold kv[j] (10) { load kv[j] (5); load kv[j] (8 + j); } }", {}),
    "load-member": ("pool kv[2] { cap 100; } workload { arrive batch(1); }\n"
                    "session { set j = 0; hold kv[j] (10) { set j = 1; load kv[j] (1); } }", {}),
    "grow-member": ("pool kv[2] { cap 100; } workload { arrive batch(1); }\n"
                    "session { set j = 0; hold kv[j] (10) { set j = 1; grow kv[j] (1); } }", {}),
    "budget-left": ("stage s : fifo; workload { arrive batch(1); } session { observe q = budget_left(s); }", {}),
    "branch-guard": ("stage s : fifo; workload { arrive batch(3); }\n"
                     "session { run s (1); branch (serial - 1 + 0.5 * (serial == 2)) { observe a = 1; } }", {}),
    "branch-nan": ("workload { arrive batch(1); } session { set x = 0/0; branch (x) { observe a = 1; } }", {}),
    "branch-text": ("workload { arrive batch(1); }\n"
                    "session { set x = 0.5; branch (min(x, 2) * (3 + serial) > 1 && !x ? ~exp(1) : -x^2) { observe a = 1; } }", {}),
    "arrivals-short": ("stage s : fifo; workload { arrive poisson(0.1); } session { run s (1); }",
                       dict(arrivals=30, horizon=2)),
    "arrivals-undrained": ("stage s : fifo; workload { arrive poisson(1); } session { run s (100); }",
                           dict(arrivals=2, horizon=5)),
    "arrivals-before-warmup": ("stage s : fifo; workload { arrive poisson(1); } session { run s (0.1); }",
                               dict(arrivals=1, horizon=5, warmup=1)),
}


@pytest.mark.parametrize("name", sorted(RUN_ERRORS))
def test_run_error_carries_the_reference_message(name, pyserq):
    source, overrides = RUN_ERRORS[name]
    expected = _reference_error(pyserq, source, **dict(overrides))
    with pytest.raises(SqError) as info:
        _engine.run(lower(_ir(source, **dict(overrides))))
    assert info.value.phase == "run"
    assert expected in info.value.message


def test_run_error_names_session_and_time():
    source = ("stage d : delay; workload { arrive batch(3); }\n"
              "session { run d (serial + 1); branch (serial == 2 ? 7 : 0) { observe a = 1; } }")
    with pytest.raises(SqError) as info:
        _engine.run(lower(_ir(source)))
    assert "the guard is 7" in info.value.message
    assert "session 2" in info.value.message and "time 3" in info.value.message


@pytest.mark.parametrize("gap", ["0", "-1", "0/0", "~uniform(-1, 1)", "~exp(0)"])
def test_bad_renewal_gap_is_an_error_not_a_panic(gap):
    source = f"stage s : fifo; workload {{ arrive renewal({gap}); }} session {{ run s (1); }}"
    with pytest.raises(SqError, match="renewal interarrival must be positive and finite"):
        _engine.run(lower(_ir(source, horizon=1000)))


def test_instant_that_never_ends_is_stopped():
    # 0.1.2 hangs here (§9.11); the guard only trips after a huge number of steps in
    # one instant, so a terminating program is never affected
    source = "stage s : fifo; workload { arrive batch(1); } session { loop { set k = k + 1; } }"
    with pytest.raises(SqError, match="does not advance"):
        _engine.run(lower(_ir(source)), step_limit=100_000)


def test_closed_population_without_time_is_stopped():
    source = "workload { arrive closed(1); } session { observe x = 1; }"
    with pytest.raises(SqError, match="does not advance"):
        _engine.run(lower(_ir(source)), step_limit=100_000)


def test_run_settings_are_checked():
    # checked by sq._support.settings before a run reaches the engine (which trusts them)
    ir = _ir("stage s : fifo; workload { arrive batch(1); } session { run s (1); }")
    low = lower(ir)
    with pytest.raises(SqError, match="arrivals applies only to poisson or renewal"):
        sq.run_lowered(low, arrivals=3)
    with pytest.raises(SqError, match="arrivals must be positive"):
        sq.run_lowered(low, arrivals=0)
    with pytest.raises(SqError, match="seed"):
        sq.run_lowered(low, seed=-1)
    with pytest.raises(SqError, match="horizon"):
        sq.run_lowered(low, horizon=float("nan"))


def test_a_programs_own_arrival_limit_needs_open_arrivals():
    # the `run { arrivals }` of a closed workload: refused before the run, as 0.1.2 refuses it at run time
    low = lower(_ir("stage s : fifo; workload { arrive batch(1); } session { run s (1); }"))
    closed = dataclasses.replace(low, arrivals=3)
    with pytest.raises(SqError, match="arrivals applies only to poisson or renewal"):
        sq.run_lowered(closed)


@pytest.mark.parametrize("mutate", [
    lambda ir: ir["blocks"][2].append({"Set": [999, {"Num": 1.0}]}),
    lambda ir: ir["blocks"][2].append({"Observe": [5, {"Num": 1.0}]}),
    lambda ir: ir["blocks"][2].append({"Run": {"stage": {"base": 3, "count": 1, "index": None},
                                               "mode": "Plain", "work": {"Num": 1.0}, "growing": None}}),
    lambda ir: ir["blocks"][2].append({"Loop": 2}),
    lambda ir: ir["blocks"][2].append({"Branch": [{"Num": 1.0}, 17, 3]}),
    lambda ir: ir["blocks"][2].append({"Set": [9, {"Sample": ["Exp", []]}]}),
    lambda ir: ir["blocks"][2].append({"Set": [9, {"Frobnicate": 1}]}),
    lambda ir: ir["blocks"][0].append({"Run": {"stage": {"base": 0, "count": 1, "index": None},
                                               "mode": "Plain", "work": {"Num": 1.0}, "growing": None}}),
    lambda ir: ir.__setitem__("stages", [{"name": "s", "kind": {"Fifo": "x"}}]),
    lambda ir: ir.__setitem__("version", 9),
    lambda ir: ir.pop("blocks"),
], ids=["slot", "observe", "stage-ref", "block-cycle", "block-index", "arity", "unknown-expr",
        "init-run", "fifo-count", "version", "no-blocks"])
def test_malformed_ir_is_an_sqerror(mutate):
    ir = _ir("stage s : fifo; workload { arrive batch(1); } session { set x = 1; observe o = x; run s (1); }")
    mutate(ir)
    with pytest.raises(SqError):
        _engine.run(lower(ir))


def test_deeply_nested_expression_lowers():
    # aggregates are written out at link: 2000 terms nest 2000 deep, past the default recursion limit
    source = "workload { arrive batch(1); } session { observe s = sum k in 2000 (k); }"
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(50_000)   # for the front end and lowering of 2000 nested terms
    try:
        ir = _ir(source)
    finally:
        sys.setrecursionlimit(limit)
    raw = _engine.run(lower(ir))
    assert raw.observes[0].samples.tolist() == [2000 * 1999 / 2]


@pytest.mark.parametrize("x, text", [(2.0, "2"), (0.5, "0.5"), (-0.25, "-0.25"), (float("nan"), "NaN"),
                                     (float("inf"), "inf"), (-float("inf"), "-inf"), (1e21, "1000000000000000000000"),
                                     (1e-7, "0.0000001"), (-0.0, "-0"), (0.1 + 0.2, "0.30000000000000004")])
def test_numbers_print_as_the_reference_prints_them(x, text):
    assert display(x) == text


SPILL_OVER_STEP = """
pool host { cap 100; }
stage e : step { budget 10; cost 1; }
stage d : delay;
pool kv { cap 10; spill host via e (WORK) when (size >= 1); }
run { horizon 50; }
workload { arrive batch(N); }
session { hold kv (6) { run d (1); } cache (6); observe done = now; }
"""


@pytest.mark.parametrize("sessions, work", [(1, "1"), (2, "0")])
def test_a_spill_link_on_a_step_stage_runs_while_it_carries_nothing(sessions, work, pyserq):
    # pyserq 0.1.2 runs these: no piece spills, or a piece spills with no transfer
    import sq

    src = SPILL_OVER_STEP.replace("N", str(sessions)).replace("WORK", work)
    assert json.loads(sq.run(sq.compile(source=src)).to_json()) == \
        json.loads(pyserq.run(pyserq.compile(source=src)).json())


def test_a_spill_transfer_over_a_step_stage_is_a_clear_error(pyserq):
    # pyserq 0.1.2 panics (`entered unreachable code`); sq says what cannot go on, where and when
    import sq

    src = SPILL_OVER_STEP.replace("N", "2").replace("WORK", "1")
    with pytest.raises(BaseException):
        pyserq.run(pyserq.compile(source=src))
    with pytest.raises(sq.SqError) as err:
        sq.run(sq.compile(source=src))
    assert err.value.phase == "run"
    assert "pool `kv` spills a piece over step stage `e`" in str(err.value) and "time 1" in str(err.value)

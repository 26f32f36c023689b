"""A lone ps stage's own loop (ps_loop, sq/engine/_one_ps.pxi) against pyserq 0.1.2: the report's
JSON text at each edge of that path — its own job rows, the current finish kept off the event list
(a superseded one joining it, stale, at its own time and seq), stale finishes taken off at the pop
(the areas split and nothing else), an h2 work drawn from its phases set once, a ps job's wait
counted without its division — with φ constant, of `present` (M/M/c-PS), a draw on the session
stream between the work's draws, and with arrivals and finishes at one instant, a warm-up (also at
a tie), an arrival limit, the horizon in mid-service, gauges and estimators read, work of zero or
infinity. Each program is checked to take ps_loop; a program just outside the shape does not, nor
poisson(0) arrivals (a NaN gap possible: lone_loop runs them).
"""
from __future__ import annotations

import pytest

from tests.helpers.oracle import needs_reference, same_json
from tests.helpers.own_loops import own_loop_and_lone_loop

_engine = pytest.importorskip("sq._engine")

LETS = "let hi = inf; let minus = -1;\n"


def _program(phi: str, work: str, arrive: str, settings: str, body: str | None = None, extra: str = "") -> str:
    body = body or f"set t0 = now; run s ({work}); observe r = now - t0;"
    return (f"{LETS}stage s : ps({phi});\n{extra}\nrun {{ {settings} }}\n"
            f"workload {{ arrive {arrive}; }}\nsession {{ {body} }}\n")


IN_SHAPE = {
    "mg1_ps": _program("1", "~h2(1, 4)", "poisson(0.9)", "horizon 3000; seed 4;"),
    "mg1_ps_overloaded": _program("1", "~h2(1, 4)", "poisson(1.2)", "horizon 400; seed 5;"),
    "mm2_ps": _program("min(present, 2)", "~exp(1)", "poisson(1.7)", "horizon 600; seed 6;"),
    "mm8_ps": _program("min(present, 8)", "~h2(1, 4)", "poisson(7)", "horizon 150; seed 7;"),
    "phi_draw_h2": _program("~uniform(0.5, 1.5)", "~h2(1, 4)", "poisson(0.7)", "horizon 600; seed 8;"),
    "phi_now": _program("1 + now / 300", "~h2(2, 3)", "poisson(0.5)", "horizon 600; seed 9;"),
    "h2_cv2_below_1": _program("1", "~h2(1, 0.5)", "poisson(0.8)", "horizon 500; seed 10;"),
    "h2_cv2_inf": _program("1", "~h2(1, hi)", "poisson(0.8)", "horizon 300; seed 11;"),
    "h2_mean_zero": _program("1", "~h2(0, 4)", "poisson(0.8)", "horizon 100; seed 12;"),
    "ties": _program("1", "1", "renewal(1)", "horizon 40;"),
    "ties_two": _program("2", "1", "renewal(0.5)", "horizon 40;"),
    "ties_present": _program("present", "2", "renewal(0.5)", "horizon 40;"),
    "warmup": _program("1", "~h2(1, 4)", "poisson(0.9)", "horizon 800; warmup 100; seed 13;"),
    "warmup_at_a_tie": _program("1", "1", "renewal(1)", "horizon 30; warmup 10;"),
    "arrival_limit": _program("1", "~h2(1, 4)", "poisson(0.95)", "horizon 1000; warmup 5; arrivals 300; seed 14;"),
    "horizon_mid_service": _program("1", "3", "renewal(1)", "horizon 100.5;"),
    "several_observes": _program("1.5", "~h2(1, 4)", "poisson(1.2)", "horizon 300; seed 15;",
                                 body="set a = now; set b = now; run s (~h2(1, 4)); observe ra = now - a; "
                                      "observe rb = now - b; observe ra = now - a;"),
    "no_stamp": _program("1", "~h2(1, 4)", "poisson(0.5)", "horizon 300;", body="run s (~h2(1, 4));"),
    "gauges": _program("min(present, 4)", "~h2(1, 4)", "poisson(3)", "horizon 200; warmup 20; seed 16;",
                       extra="gauge q = queue(s); gauge b = busy(s); gauge l = est_lambda(s); "
                             "gauge e = est_wait(s); gauge rho = est_rho(s);"),
    # φ constant: the h2 work's draws and the poisson gaps taken 64 ahead, gauges read between them
    "gauges_draws_ahead": _program("1", "~h2(1, 4)", "poisson(0.9)", "horizon 400; warmup 40; seed 18;",
                                   extra="gauge q = queue(s); gauge b = busy(s);"),
    "zero_work": _program("1", "~bernoulli(0.5)", "poisson(1.5)", "horizon 200; warmup 20;"),
    "negative_work": _program("1", "~uniform(minus, 1.5)", "poisson(1)", "horizon 200;"),
    "inf_work": _program("1", "hi", "poisson(0.5)", "horizon 30;"),
    "phi_zero": _program("0", "~h2(1, 4)", "poisson(0.5)", "horizon 30;"),
    "renewal_gaps": _program("2", "~erlang(3, 1.5)", "renewal(~uniform(0.5, 1.5))", "horizon 300; seed 17;"),
    # every arrival supersedes a finish ever further off (the least tag's rest times the jobs): ~300
    # stale finishes pending at once, ps_loop's own event heap grown many times past its first room
    "stale_pile": _program("1", "50", "renewal(0.2)", "horizon 60;"),
}

# just outside the shape (the work reads the session): the general loop runs it
OUTSIDE = _program("1", "", "poisson(0.8)", "horizon 200;",
                   body="set t0 = now; run s (now - t0 + 1); observe r = now - t0;")
# in shape, but poisson(0)'s gap may be -log(1 - 0) / 0, a NaN, which ps_loop's current finish (kept
# in its own slot) would meet in another order than the event list: lone_loop runs it
RATE_ZERO = _program("1", "~h2(1, 4)", "poisson(0)", "horizon 50;")
# each program and the runs it should add to (lone_loop, ps_loop): ps_loop runs within lone_loop's count
CASES = {**{name: (source, (1, 1)) for name, source in IN_SHAPE.items()}, "just_outside_the_shape": (OUTSIDE, (0, 0)),
         "poisson_rate_zero": (RATE_ZERO, (1, 0))}


@needs_reference
@pytest.mark.parametrize("name", sorted(CASES))
def test_pyserqs_json_text_by_ps_loop_exactly_when_in_shape(name):
    source, runs = CASES[name]
    _engine.lone_queues(True, ps=True)
    lone, ps = _engine.lone_queues()[1], _engine.lone_queues()[5]
    same_json(source)
    taken = (_engine.lone_queues()[1] - lone, _engine.lone_queues()[5] - ps)
    assert taken == runs, "lone_loop or ps_loop taken or not taken against the shape"


@pytest.mark.parametrize("name", ["mg1_ps", "mg1_ps_overloaded", "warmup", "mm8_ps"])
def test_the_window_middle_is_lone_loops(name):
    """ps_loop keeps the live sessions' area in the stage's and copies it where it is read: the
    live growth over the window's halves (from the window's middle; not in the JSON, so not held
    to pyserq) is lone_loop's, to the bit, and so are the overload warnings."""
    own, lone = own_loop_and_lone_loop(IN_SHAPE[name], "ps")
    assert own[0] != "nan" and own == lone

"""A lone ps stage of constant φ (issue 27, fourth round) gives pyserq 0.1.2's JSON text.

lone_loop (sq/engine/_one_queue.pxi) takes such a stage's rates φ / n from a table divided once per
run for n below LONE_RATES (64), and its reschedule leaves out the virtual time's update (the
event's join or finish made it: V + rate · 0 is V for a finite rate). Each program here takes that
loop (checked), and together they reach every edge of the change: the table's end crossed both
ways, constant φ that are tiny, huge, zero, negative or not finite (the last take reschedule's
own path), arrivals at a finish's instant, zero and negative work, a warm-up, and a horizon that
ends with jobs in service. (Equal tags, ties broken by job id, need jobs started together, which
an open queue's arrivals never are: spec probe ST-PS-3, tests/engine/test_engine_probes.py.)
"""
from __future__ import annotations

import pytest

from tests.helpers.oracle import REFERENCE_MISSING, same_json

pyserq = pytest.importorskip("pyserq", reason=REFERENCE_MISSING, exc_type=ImportError)   # every test compares


def _lone(source: str) -> dict:
    """pyserq's JSON text, by the lone loop (which must take the program)."""
    from sq import _engine

    runs = _engine.lone_queues()[1]
    report = same_json(source)
    assert _engine.lone_queues()[1] == runs + 1, "the program did not take the lone loop"
    return report


def _program(phi: str, work: str = "~h2(1, 4)", arrive: str = "poisson(0.9)", settings: str = "") -> str:
    return (f"let minus = -1;\nstage s : ps({phi});\nrun {{ horizon 200; seed 3; {settings} }}\n"
            f"gauge q = queue(s);\nworkload {{ arrive {arrive}; }}\n"
            f"session {{ set t0 = now; run s ({work}); observe response = now - t0; }}\n")


@pytest.mark.parametrize(("phi", "rate", "horizon", "seed"), [("1", 0.97, 3000, 5), ("2.5", 2.45, 1500, 2)])
def test_the_table_end_crossed_both_ways(phi, rate, horizon, seed):
    report = _lone(_program(phi, arrive=f"poisson({rate})", settings=f"horizon {horizon}; seed {seed};"))
    assert report["gauges"]["q"]["max"] >= 64 and report["gauges"]["q"]["min"] == 0


@pytest.mark.parametrize("phi", ["0.3", "1e-300", "1e300", "1.7e308", "0", "minus", "0 / 0", "1 / 0"])
def test_a_constant_phi(phi):
    _lone(_program(phi))


@pytest.mark.parametrize(("phi", "work", "arrive"), [
    ("1", "1", "renewal(1)"),                       # each arrival at the instant the job before it finishes
    ("2", "1", "renewal(0.5)"),                     # the same with two jobs present
    ("1", "~uniform(minus, 1)", "poisson(1.5)"),    # half the sessions run no work (no job), ending at once
], ids=["arrival-at-a-finish", "arrival-at-a-finish-two", "zero-and-negative-work"])
def test_same_instants_and_no_work(phi, work, arrive):
    report = _lone(_program(phi, work=work, arrive=arrive))
    assert report["observes"]["response"]["count"] > 50


def test_a_warmup_and_a_horizon_mid_service():
    report = _lone(_program("1.5", arrive="poisson(1.4)", settings="warmup 60; horizon 333.3;"))
    assert report["stages"][0]["mean_number"] > 1 and report["arrivals"] > report["ended"]

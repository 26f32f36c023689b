"""The event order where the next open arrival meets other events at the same time.

The engine keeps the next open arrival in its own slot, beside the event heap (sq/engine/_arrays.pxi,
`next_event`); the two are merged by (time, sequence) exactly as one heap would order them. These
programs make arrivals tie with finishes, iteration ends, lease ends, the warm-up's end and the
horizon, on exact (integer) times, so a wrong tie-break changes an observation's order, a gauge's
change points or a count. Each report's JSON text is compared with pyserq 0.1.2's, and each run is
repeated under the engine's invariant checks. (An event scheduled before every event in the heap
waits in a slot of its own, st.soon, until a still earlier one displaces it: `soon-ties`.)
"""
from __future__ import annotations

import pytest

import sq
from tests.helpers.oracle import REFERENCE_MISSING

pyserq = pytest.importorskip("pyserq", reason=REFERENCE_MISSING, exc_type=ImportError)

PROGRAMS = {
    # arrivals every 1 and services of 2: each finish ties with an arrival (the arrival was
    # scheduled first, one time unit before the finish's job started): the queue an arrival
    # sees shows which came first
    "fifo-ties": ("""stage s : fifo(1); stage d : delay;
        workload { arrive renewal(1); }
        session { observe seen = queue(s); run s (2); observe f = serial; run d (1); observe g = now; }
        gauge q = queue(s);""", dict(horizon=40, warmup=5)),
    # the warm-up's end (scheduled first) ties with the arrival at 5; the horizon with the one at 30
    "warmup-horizon-ties": ("""stage d : delay;
        workload { arrive renewal(2.5); }
        session { observe seen = queue(d); run d (5); observe u = now; }
        gauge n = queue(d);""", dict(horizon=30, warmup=5)),
    # an arrival limit: the slot stays empty after the last arrival, the run drains the rest
    "limit-ties": ("""stage s : fifo(2);
        workload { arrive renewal(0.5); }
        session { run s (1); observe t = now; }""", dict(horizon=100, arrivals=9)),
    "limit-poisson": ("""stage s : ps(1);
        workload { arrive poisson(3); }
        session { set t0 = now; run s (~exp(4)); observe r = now - t0; }
        gauge q = queue(s);""", dict(horizon=1000, arrivals=200, seed=4)),
    # ps finishes are rescheduled (stale ones stay events) and tie with arrivals every 1
    "ps-ties": ("""stage p : ps(1);
        workload { arrive renewal(1); }
        session { observe a = now; run p (1); observe f = now; }
        gauge q = queue(p);""", dict(horizon=30)),
    # leases end on whole times, as arrivals come: a lease's end admits the waiting hold
    "lease-ties": ("""pool m { cap 2; }
        stage d : delay;
        workload { arrive renewal(1); }
        session { observe u = used(m); hold m (1) { observe in = now; } lease m (2); run d (1); observe out = now; }
        gauge w = used(m);""", dict(horizon=30)),
    # a step stage starts an iteration only when no other event is pending at `now`: iteration
    # ends (cost 1) tie with arrivals (every 1), so an arrival still pending holds the start back
    "step-ties": ("""pool kv { cap 100; admit via e; }
        stage e : step { cost 1; memory kv; }
        workload { arrive renewal(1); }
        session { observe seen = queue(e); hold kv (4) { run e prefill (2) growing kv; run e decode (2); } observe t = now; }
        gauge b = busy(e);""", dict(horizon=30)),
    # an iteration end, most often the earliest event, waits outside the heap (st.soon) until an
    # earlier finish displaces it: the delay's whole-number finishes tie with iteration ends
    "soon-ties": ("""pool kv { cap 100; admit via e; }
        stage e : step { cost 1; memory kv; }
        stage d : delay;
        workload { arrive renewal(1.5); }
        session { loop { observe seen = queue(e); hold kv (4) { run e prefill (2) growing kv; run e decode (2); }
                         observe t = now; set more = ~bernoulli(0.7); branch (!more) { end; } run d (floor(~uniform(1, 5))); } }
        gauge b = busy(e);""", dict(horizon=60, seed=3)),
    # the same with random gaps whose sums meet the iteration ends only by chance
    "step-poisson": ("""pool kv { cap 50; admit via e; }
        stage e : step { cost 0.25; memory kv; }
        workload { arrive poisson(2); }
        session { set t0 = now; hold kv (4) { run e prefill (~uniform(1, 3)) growing kv; run e decode (3); }
                  observe r = now - t0; }""", dict(horizon=200, seed=6)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_report_text_as_pyserq(name):
    source, kw = PROGRAMS[name]
    theirs = pyserq.run(pyserq.compile(source=source, **kw)).json()
    program = sq.compile(source=source, **kw)
    ours = sq.run(program).json()
    assert ours == theirs
    assert sq.run(program, check_invariants=True).json() == ours

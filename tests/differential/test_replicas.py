"""Many replicas behind a router against pyserq 0.1.2's JSON text, digit for digit.

With R replicas an event changes one replica or a few, so the engine defers the time averages of
the rows an event left unchanged (a pool's used, cached, queue and holders; a stage's number and
busy time) and adds their samples later, in order (sq/engine/_loop.pxi, sample_pool: SSE2 kernels,
or their AVX copies where the processor runs AVX; both paths are compared here); and its
stages pass visits only the step stages that may start an iteration (`steps_ready`). 0.1.2 samples
every area of every replica at every event and visits every stage, so any addition skipped,
merged or reordered, or any stage not visited when it could start, shows in these reports:
replicas busy under a least-loaded router; replicas left idle for thousands of events (their
rows deferred past the log's length, and their cached KV kept sampled); iterations of every
replica ending at the same instants (gaps of 0 in the log); gauges; one replica preempting while
the others idle; ps, step and fifo replicas together (a stages pass not of step stages alone,
and rows that leave the sampled set).

The week's engine itself (sq/bench/week_replay.sq, whose `arrive replay` pyserq cannot run) is
compared too, its workload made poisson, on 2 to 16 replicas, lightly and heavily loaded: most of
its iteration ends take step_again (sq/engine/_loop.pxi: settle would only begin the same decode
plan again), the others settle.
"""
from __future__ import annotations

import json
import re

import pytest

import sq
from sq import _engine as compiled   # (_engine below is this file's program maker)
from sq.bench.rows import WEEK_PROGRAM
from tests.helpers.oracle import REFERENCE_MISSING

pyserq = pytest.importorskip("pyserq", reason=REFERENCE_MISSING, exc_type=ImportError)   # every test compares

ENGINE = """
let R = 16;
pool seqs[R] { cap 64; admit via engine; }
pool kv[R] { cap KVCAP; block 16; evict lru; preempt lifo; }
stage engine[R] : step { budget 1024; chunk 256; cost COST; memory kv; }
run { horizon HORIZON; warmup 5; seed 3; }
workload {
  arrive ARRIVE;
  hidden o;
  init { set n = floor(~uniform(20, 900)); set o = 1 + floor(~exp(40)); }
  session { request; }
}
server {
  ROUTE
  set t0 = now;
  hold seqs[r] (1), kv[r] (min(n, room)) at admission (room = budget_left(engine[r])) {
    run engine[r] prefill (n - cached) growing kv[r];
    observe ttft = now - t0;
    run engine[r] decode (o) growing kv[r];
  } cache (inf);
  observe latency = now - t0;
}
GAUGES
"""

LEAST_LOADED = "choose r in R by (holders(seqs[r]) + queued(seqs[r]), r);"


def _engine(kv="8192", cost="0.008 + 2e-5 * tokens", horizon="60", arrive="poisson(20)", route=LEAST_LOADED,
            gauges=""):
    source = ENGINE
    for name, value in (("KVCAP", kv), ("COST", cost), ("HORIZON", horizon), ("ARRIVE", arrive),
                        ("ROUTE", route), ("GAUGES", gauges)):
        source = source.replace(name, value)
    return source


def _delayed(replicas: int, seed: int) -> str:
    """Sessions looping over short requests on `replicas` replicas whose iterations last whole
    eighths of a second, each request delayed 0 to 7/8 s after it is routed."""
    return _engine(cost="0.125 * (1 + floor(tokens / 128))", arrive=f"batch({5 * replicas})", horizon="120").replace(
        "let R = 16;", f"let R = {replicas};").replace(
        "stage engine[R]", "stage d : delay;\nstage engine[R]").replace(
        "seed 3;", f"seed {seed};").replace(
        "set n = floor(~uniform(20, 900)); set o = 1 + floor(~exp(40));",
        "set n = floor(~uniform(20, 300)); set o = 1 + floor(~exp(2));").replace(
        "session { request; }", "session { loop { request; } }").replace(
        "  set t0 = now;\n", "  set t0 = now;\n  run d (0.125 * floor(~uniform(0, 8)));\n")


# (replicas, seed)
DELAYED = [(3, 1), (3, 2), (4, 1), (4, 2), (6, 4), (8, 1), (8, 3)]


MIXED = """
let R = 6;
pool kv[R] { cap 4096; block 16; evict lru; }
stage pre[R] : ps(1);
stage engine[R] : step { budget 512; chunk 128; cost 0.01 + 1e-5 * tokens; memory kv; }
stage post[R] : fifo(1);
run { horizon 150; warmup 10; seed 9; }
workload { arrive poisson(12); hidden o;
  init { set n = floor(~uniform(10, 400)); set o = 1 + floor(~exp(20)); } session { request; } }
server {
  choose r in R by (holders(kv[r]) + queued(kv[r]), r);
  set t0 = now;
  run pre[r] (~exp(0.05));
  hold kv[r] (n) { run engine[r] prefill (n - cached) growing kv[r]; run engine[r] decode (o) growing kv[r]; } cache (inf);
  run post[r] (~exp(0.03));
  observe latency = now - t0;
}
"""

# two step stages on one KV pool: a's grows preempt b's residents in the middle of b's iterations
# (step_again's kept plan must be dropped: the victim's hold waits at q, which only a admits)
SHARED = """
pool q { cap 64; admit via a; }
pool kv { cap 1536; block 64; evict lru; preempt lifo; }
stage a : step { budget 256; cost 0.01; memory kv; }
stage b : step { budget 256; cost 0.013; memory kv; }
run { horizon 300; seed 2; }
workload { arrive poisson(2); hidden o;
  init { set o = 1 + floor(~uniform(20, 400)); set n = floor(~uniform(16, 200)); set r = ~bernoulli(0.5); }
  session { request; } }
server { set t0 = now;
  branch (r) { hold q (1), kv (n) { run a prefill (n) growing kv; run a decode (o) growing kv; } }
  branch (!r) { hold q (1), kv (n) { run b prefill (n) growing kv; run b decode (o) growing kv; } }
  observe latency = now - t0; }
"""

PROGRAMS = [
    ("least-loaded router, 16 busy replicas", _engine()),
    # the first replicas take the load; the others idle (a few never start, their rows unmarked),
    # and the lightly used ones keep their cached KV sampled unchanged for thousands of events
    ("idle replicas", _engine(arrive="poisson(6)", horizon="300",
                              route="choose r in R by (holders(seqs[r]) > 3 ? 100 + r : r);")),
    # a constant cost: every replica's iterations end at the same instants
    ("busy at the same instants", _engine(cost="0.25", arrive="batch(200)")),
    # ... and sessions of six requests, each routed afresh as the one before ends: at an instant
    # where one replica's end is the event list's earliest, another's end at the same instant may
    # finish a request whose next one the first replica's plan must admit (step_again, the end
    # taken in place at the heap's top, must see that end below it: pending_under_top; a tie at
    # the top's second child alone these do not show: the delays below do)
    ("turns at the same instants", _engine(cost="0.25", arrive="batch(64)", horizon="120").replace(
        "session { request; }", "session { request; request; request; request; request; request; }")),
    ("turns at the same instants, 4 replicas", _engine(cost="0.25", arrive="batch(24)", horizon="120").replace(
        "session { request; }", "session { request; request; request; request; request; request; }").replace(
        "let R = 16;", "let R = 4;")),
    # ... on 3 and 4 replicas whose iterations last whole eighths of a second (so some end at the
    # same instants, others not), sessions looping over short requests: each end finishes some,
    # whose next requests the replica ending at the same instant, first, must admit
    *[(f"short turns at the same instants, {r} replicas",
       _engine(cost="0.125 * (1 + floor(tokens / 128))", arrive=f"batch({4 * r})", horizon="150").replace(
           "session { request; }", "session { loop { request; } }").replace(
           "set o = 1 + floor(~exp(40));", "set o = 1 + floor(~exp(2));").replace("let R = 16;", f"let R = {r};"))
      for r in (3, 4)],
    # ... and a delay between the router and the hold, of whole eighths of a second as the
    # iterations are: a delay's end at the instant a replica's iteration ends (that end first,
    # taken in place at the event heap's top) puts a request on that replica's queue, which the
    # plan settle makes after it must admit; begun at once, the replica would leave it waiting an
    # iteration. Sometimes the delay's end is below the top only as its second child, the first
    # being later: pending_under_top must read both (these seeds are ones whose runs show it, by
    # the mutation top-second-child-unread: benchmarks/README.md, net8's section)
    *[(f"delays ending at an iteration's end, {r} replicas, seed {seed}", _delayed(r, seed))
      for r, seed in DELAYED],
    # a cost that reads `now` (not only its iteration's totals): a quiet repeat of step_again
    # evaluates it afresh, where one whose cost reads only the totals keeps the last (kept_cost)
    ("a cost that reads the instant", _engine(cost="0.008 + 1e-6 * now")),
    # and the KV sums too: such a quiet repeat's cost reads the sums its plan kept (KeptPlan)
    ("a cost that reads the instant and the KV sums",
     _engine(cost="0.008 + 1e-6 * now + 2e-7 * kv_decode")),
    ("gauges of one replica's pools", _engine(gauges="gauge kv0 = used(kv[0]); gauge q3 = queued(seqs[3]);")),
    # half the requests go to replica 0, whose card is small for them: it preempts while the
    # others (1/30 of the load each) mostly idle
    ("preemption on one replica", _engine(kv="1200", arrive="poisson(8)",
                                          route="set r = ~bernoulli(0.5) ? 0 : 1 + floor(~uniform(0, R - 1));")),
    ("ps, step and fifo replicas", MIXED),
    ("two step stages, one preempting the other's residents", SHARED),
]


@pytest.mark.parametrize("source", [p for _, p in PROGRAMS], ids=[name for name, _ in PROGRAMS])
def test_replicas_same_as_pyserq(source):
    ours = sq.run(sq.compile(source=source)).json()
    theirs = pyserq.run(pyserq.compile(source=source)).json()
    assert ours == theirs


@pytest.fixture(params=[0, 4], ids=["a heap", "sorted to 4"])
def event_list(request):
    """The event list a heap from its first event (0), or sorted only up to 4 events (a heap from
    5, sorted again at 2): sq/engine/_arrays.pxi keeps it sorted up to 32, so these programs' ~R
    pending ends are, and the heap's paths (a top replaced in place among them) and the changes
    between the two run only here."""
    sorted_max = compiled.event_lists()
    compiled.event_lists(request.param)
    try:
        yield request.param
    finally:
        compiled.event_lists(sorted_max)


@pytest.mark.parametrize("source", [p for _, p in PROGRAMS], ids=[name for name, _ in PROGRAMS])
def test_replicas_on_other_event_lists_same_as_pyserq(source, event_list):
    assert compiled.event_lists() == event_list
    assert sq.run(sq.compile(source=source)).json() == pyserq.run(pyserq.compile(source=source)).json()


def test_the_event_lists_switch():
    """event_lists sets how long an event list stays sorted, and gives back what it was."""
    sorted_max = compiled.event_lists()
    try:
        assert sorted_max > 0
        assert compiled.event_lists(0) == 0
        assert compiled.event_lists(sorted_max) == sorted_max
    finally:
        compiled.event_lists(sorted_max)


@pytest.fixture
def sse2_lanes():
    """The deferred samples' catch-up on its SSE2 kernels, where the processor would run the AVX
    copies (sq/engine/_loop.pxi: both paths compared with pyserq, each lane's bits the same)."""
    avx, _ = compiled.lag_lanes()
    compiled.lag_lanes(False)
    try:
        yield
    finally:
        compiled.lag_lanes(avx)


@pytest.mark.parametrize("source", [p for _, p in PROGRAMS], ids=[name for name, _ in PROGRAMS])
def test_replicas_on_the_sse2_lanes_same_as_pyserq(source, sse2_lanes):
    assert compiled.lag_lanes()[0] is False
    ours = sq.run(sq.compile(source=source)).json()
    assert ours == pyserq.run(pyserq.compile(source=source)).json()


def test_the_lanes_switch():
    """lag_lanes turns the AVX copies off and on again where the processor runs AVX (never on where it does not)."""
    avx, runs = compiled.lag_lanes()
    try:
        assert compiled.lag_lanes(False) == (False, runs)
        assert compiled.lag_lanes(True) == (runs, runs)
    finally:
        compiled.lag_lanes(avx)


def test_the_programs_reach_what_they_name():
    """Each program makes the case its name says (else the comparison above tests less)."""
    reports = {name: json.loads(sq.run(sq.compile(source=source)).json()) for name, source in PROGRAMS}
    idle = [s["utilization"] for s in reports["idle replicas"]["stages"]]
    assert idle[0] > 0.5 and 0 < idle[2] < 0.05 and idle[-1] == 0
    preempted = [p["preemptions"] for p in reports["preemption on one replica"]["pools"] if p["name"] == "kv"]
    busy = [s["utilization"] for s in reports["preemption on one replica"]["stages"]]
    assert preempted[0] > 10 * max(preempted[1:]) and max(busy[1:]) < 0.3 < busy[0]
    assert reports["least-loaded router, 16 busy replicas"]["events"] > 3 * 1024   # the log fills
    assert [s["name"] for s in reports["ps, step and fifo replicas"]["stages"]][::6] == ["pre", "engine", "post"]


WEEK = WEEK_PROGRAM   # sq/bench/week_replay.sq


def _week(replicas: int, rate: str, horizon: str) -> str:
    """week_replay.sq's engine and router on `replicas` replicas, fed by poisson(rate) arrivals of
    prompts and answers drawn in the session instead of a trace replayed."""
    source = re.sub(r"^//.*\n", "", WEEK.read_text(), flags=re.M)
    source = re.sub(r"workload \{.*?\n\}\n", "workload {\n  arrive poisson(%s);\n  hidden out;\n"
                    "  init { set new = 1 + floor(~exp(700)); set out = 1 + floor(~exp(200)); }\n"
                    "  session { request; }\n}\n" % rate, source, flags=re.S)
    source, lets = re.subn(r"let R = \d+;", f"let R = {replicas};", source)
    source, runs = re.subn(r"run \{[^}]*\}", f"run {{ horizon {horizon}; warmup 10; seed 1; }}", source)
    assert lets == runs == 1 and "poisson" in source
    return source


# (replicas, arrivals a second, horizon): ~0.4 a replica a second (decode batches of ~1.1, most
# replicas idle between requests) and ~3 (every replica iterating, batches of ~5.5); and 10 (batches
# of ~20, the card full of cached prefixes: step_again's quiet repeats counted with grants past
# steady_run's 6 residents, each grow evicting)
WEEK_RUNS = [(2, "0.8", "200"), (2, "6", "60"), (4, "1.6", "200"), (4, "12", "40"), (8, "3.2", "120"),
             (8, "24", "30"), (16, "6.4", "120"), (16, "48", "20"), (4, "40", "30")]


@pytest.mark.parametrize("replicas,rate,horizon", WEEK_RUNS,
                         ids=[f"R{r}-rate{rate}" for r, rate, _ in WEEK_RUNS])
def test_the_weeks_engine_same_as_pyserq(replicas, rate, horizon):
    source = _week(replicas, rate, horizon)
    before = compiled.steady_runs()[2]
    ours = sq.run(sq.compile(source=source)).json()
    began = compiled.steady_runs()[2] - before
    assert ours == pyserq.run(pyserq.compile(source=source)).json()
    assert began > json.loads(ours)["events"] / 2, "step_again was seldom taken"


@pytest.mark.parametrize("replicas,rate,horizon", WEEK_RUNS[-3:], ids=[f"R{r}-rate{rate}" for r, rate, _ in WEEK_RUNS[-3:]])
def test_the_weeks_engine_on_the_sse2_lanes_same_as_pyserq(replicas, rate, horizon, sse2_lanes):
    source = _week(replicas, rate, horizon)
    assert sq.run(sq.compile(source=source)).json() == pyserq.run(pyserq.compile(source=source)).json()


def test_the_weeks_engine_with_and_without_step_again():
    source = _week(8, "3.2", "120")
    try:
        compiled.steady_runs(False)
        before = compiled.steady_runs()[2]
        off = sq.run(sq.compile(source=source)).json()
        assert compiled.steady_runs()[2] == before
    finally:
        compiled.steady_runs(True)
    assert sq.run(sq.compile(source=source)).json() == off


def test_the_weeks_iterations_same_as_pyserq():
    """Every iteration of the week's engine on 4 busy replicas (each one's residents, modes and
    tokens, in order: SERQ_TRACE_ITER's lines) as pyserq's: step_again's own end and plan
    (plan_unchanged without grants, replica_begin, and replica_quiet, which does a quiet repeat's end and plan
    in one pass) make what end_iteration and start_iteration would."""
    from tests.helpers.diff_runner import Reference, compare

    source = _week(4, "12", "40")
    reference = Reference(timeout=120.0)
    try:
        before = compiled.steady_runs()[2]
        outcome = compare(reference, source, seed=1, iterations=True)
        assert compiled.steady_runs()[2] > before, "step_again was not taken"
    finally:
        reference.close()
    assert outcome.status == "agree", outcome.describe()


def test_the_weeks_traces_and_timeline_with_and_without_step_again(tmp_path):
    """With the iteration trace and a timeline (which keep step_again from its quiet repeats'
    one pass) the report, the trace and the timeline's file are those of the path off."""
    source = _week(4, "12", "40")
    runs = []
    for on in (True, False):
        compiled.steady_runs(on)
        try:
            path = tmp_path / f"timeline-{on}.json"
            report = sq.run(sq.compile(source=source), trace_iterations=True, timeline=str(path))
        finally:
            compiled.steady_runs(True)
        runs.append((report.json(), report.iteration_trace, path.read_bytes()))
    assert runs[0] == runs[1] and len(runs[0][1]) > 1000

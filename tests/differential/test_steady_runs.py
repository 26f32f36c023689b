"""Steady decode runs (sq/engine/_loop.pxi `steady_run`) against pyserq 0.1.2 and against sq's own
general path.

A lone step stage's iterations whose plan cannot change are repeated off the event list, the
general settle and plan_pass; each repeated end still takes its serial, reads the gauges and the
window's middle, counts as an event and is applied by end_iteration. Each program below drives
one of the path's edges: an arrival, a delay's end or the warm-up's end exactly at an iteration's
end (either scheduled first), a resident finishing (also after a fractional last token),
block boundaries (a grow inside a run, two at once, a refusal that preempts right after a steady
stretch, quiet repeats past boundaries near a full card with two pools and the KV in the cost), holds waiting for the stage's admission (refused at the queue's head while a run goes on,
or not provably so: units reading the pool, a queue in key order), the prefix cache's evictions
while growing, gauges, costs that read `now`, the pool, the stage's work or a draw, linear costs
(of the residents, `now`, the decodes' KV), a budget cut short, two step stages (no steady runs),
the horizon and the arrival limit ending a run mid-stretch. Every program is compared with
pyserq on the report and the iteration trace, sq checking its invariants after each instant
(tests.helpers.diff_runner.compare); and run by sq with steady runs on and off, whose JSON texts
must be equal, the runs on having repeated iterations where the program has steady stretches at
all.
"""
from __future__ import annotations

import pytest

from tests.helpers.oracle import REFERENCE_MISSING, same_json

pytest.importorskip("pyserq", reason=REFERENCE_MISSING, exc_type=ImportError)   # every test compares

import sq  # noqa: E402
from sq import _engine  # noqa: E402
from sq.results.report import Report  # noqa: E402
from tests.differential.test_step_paths import _chat  # noqa: E402
from tests.helpers.diff_runner import Reference, compare  # noqa: E402


def _decode_engine(arrive: str, *, cost: str = "0.01 + 0.0001 * tokens", pool: str = "cap 4000; block 16;",
                   budget: str = "512", work: str = "~uniform(10, 100)", run: str = "horizon 60; warmup 5;",
                   extra: str = "", body: str = "", session: str = "request;", hold: str = "kv (n)") -> str:
    """Issue 27's light engine, its knobs exposed."""
    return f"""
pool kv {{ {pool} preempt lifo; admit via engine; }}
stage engine : step {{ budget {budget}; chunk 256; cost {cost}; memory kv; }}
{extra}
workload {{ arrive {arrive}; init {{ set n = ~uniform(10, 200); set o = {work}; }} session {{ {session} }} }}
server {{ set t0 = now;
  hold {hold} {{ run engine prefill (n) growing kv; observe ttft = now - t0; run engine decode (o) growing kv; }}
  {body}
  observe response = now - t0; }}
run {{ {run} }}
"""


PROGRAMS = {
    "light engine": _decode_engine("poisson(2.0)"),
    # ends at multiples of 0.25 and arrivals at whole times: the arrival, scheduled a time unit
    # earlier, comes first at each tie; the run must stop before it
    "arrival at an end, the arrival first": _decode_engine("renewal(1)", cost="0.25", work="40"),
    # iterations of 1.5 from 13 on; a session arriving at 24 waits 1 in a delay, whose end at 25
    # (scheduled at 24) meets the end of an iteration scheduled at 23.5: the end comes first
    "a delay's end at an end, the end first": _decode_engine(
        "renewal(12)", cost="1.5", work="30", extra="stage user : delay;", session="run user (1); request;",
        run="horizon 150; warmup 3;"),
    # think time of whole units after each request: a delay's end meets iteration ends
    "a delay's end at an end": _decode_engine("renewal(2)", cost="0.5", work="9",
                                              extra="stage user : delay;", body="run user (1);"),
    # the last decode token is a fraction: the tokens change one iteration before the finish
    "fractional work": _decode_engine("poisson(1.5)", work="~uniform(10, 100) + 0.37"),
    # a small card: grows refused, residents preempted right after steady stretches
    "preemption": _decode_engine("poisson(3.0)", pool="cap 600; block 16;", run="horizon 80; warmup 5;"),
    # blocks of 1: every decode token grows, several residents at once (grows in one plan)
    "a grow every token": _decode_engine("poisson(2.0)", pool="cap 100000; block 1;"),
    "no blocks": _decode_engine("poisson(2.0)", pool="cap 100000;"),
    # budget 2.5: the third decode gets half a token, a fourth none (the plan stops early)
    "a budget cut short": _decode_engine("poisson(1.0)", budget="2.5", run="horizon 80; warmup 5;"),
    "costs reading now, the pool and the work": _decode_engine(
        "poisson(2.0)", cost="0.01 + 1e-7 * used(kv) + 1e-6 * work(engine) + 1e-9 * now"),
    "a cost with a draw": _decode_engine("poisson(2.0)", cost="0.005 + ~exp(0.005) * tokens"),
    # linear costs, their leaves read where set-up found them: of the residents (an iteration
    # repeating the one before keeps its duration), reading `now` or the decodes' KV (it does not)
    "a linear cost of the residents": _decode_engine("poisson(2.0)", cost="0.005 + 0.002 * residents"),
    "a linear cost reading now": _decode_engine("poisson(2.0)", cost="0.01 + 1e-5 * now"),
    "a linear cost of the decodes' KV": _decode_engine("poisson(2.0)", cost="0.01 + 1e-6 * kv_decode"),
    "a cost reading budget_left": _decode_engine("poisson(2.0)", cost="0.01 + 1e-6 * budget_left(engine)"),
    "a budget with a draw (no steady runs)": _decode_engine("poisson(2.0)", budget="500 + ~uniform(0, 24)"),
    "gauges": _decode_engine("poisson(2.0)", extra="gauge kv_used = used(kv); gauge busy = busy(engine);"),
    # the horizon and the warm-up's end fall inside long decodes
    "long decodes, a horizon mid-run": _decode_engine("poisson(0.05)", work="5000",
                                                      run="horizon 123.456; warmup 61.2;"),
    "an arrival limit": _decode_engine("poisson(2.0)", run="horizon 200; warmup 5; arrivals 40;"),
    # a card too small for the load: holds wait for the stage's admission at most iteration ends;
    # a steady run goes on while the queue's head cannot fit (admission_refused) and stops where
    # it would be admitted
    "holds waiting, refused while decoding": _decode_engine("poisson(8.0)", pool="cap 1500; block 16;"),
    "holds waiting, a constant hold with a reserve": _decode_engine("poisson(8.0)", pool="cap 1500; block 16;",
                                                                    hold="kv (48) reserve (n)"),
    # the head's units read the pool, or the queue is in key order: the refusal is not read, the
    # plan tries its admission
    "holds waiting, units reading the pool": _decode_engine("poisson(8.0)", pool="cap 1500; block 16;",
                                                            hold="kv (n + 0 * used(kv))"),
    "holds waiting in key order": _decode_engine("poisson(8.0)", pool="cap 1500; block 16; queue by (o);"),
    # a card of three or four long decodes: holds wait through most quiet repeats (a quiet count is
    # made for six residents at most, which the card above seldom has while its queue is long), so
    # each repeat's sample_unmoved integrates the queue's area one step at a time, as pyserq does
    "holds waiting through quiet repeats": _decode_engine("poisson(3.0)", pool="cap 700; block 16;",
                                                          work="~uniform(50, 300)", run="horizon 30; warmup 5;"),
    # quiet repeats past block boundaries, each grow granted, on a card that fills (the grants'
    # bound tight near the cap); two pools, whose areas a repeat defers unless its grows move the
    # KV's; the decodes' KV in the cost, its sums made afresh after a grow
    "grows granted near a full card, two pools, the KV in the cost": _decode_engine(
        "poisson(5.0)", pool="cap 900; block 16;", cost="0.01 + 1e-6 * kv_decode",
        extra="pool seqs { cap 64; admit via engine; }", hold="seqs (1), kv (n)", run="horizon 80; warmup 5;"),
    # the multi-turn chat (test_step_paths' card, smaller): the prefix cache, evictions while
    # growing, `admit via` admissions, a delay stage beside
    "cached chat": _chat(kv="6144"),
}

# the stages pass is not one step stage: no steady runs
NONE = {
    "two step stages": """
pool kv { cap 4000; block 16; }
stage a : step { budget 64; cost 0.01; memory kv; }
stage b : step { budget 64; cost 0.013; memory kv; }
workload { arrive poisson(1.0); init { set o = ~uniform(10, 100); } session { request; } }
server { hold kv (16) { run a decode (o) growing kv; run b decode (o) growing kv; } }
run { horizon 60; }
""",
    "a step stage and a ps stage": """
stage tok : ps(2);
stage engine : step { budget 64; cost 0.01; }
workload { arrive poisson(1.0); init { set o = ~uniform(10, 100); } session { request; } }
server { run tok (0.05); run engine decode (o); }
run { horizon 60; }
""",
}


@pytest.fixture(scope="module")
def reference():
    ref = Reference(timeout=60.0)
    yield ref
    ref.close()


@pytest.fixture(autouse=True)
def steady_restored():
    """Every test leaves steady runs enabled, as the rest of the suite expects them."""
    try:
        yield
    finally:
        _engine.steady_runs(True)


def _json_and_repeats(source: str, steady: bool, step_limit: int | None = None) -> tuple[str, int]:
    """The run's JSON text (or its error) and the iterations steady runs repeated in it."""
    _engine.steady_runs(steady)
    before = _engine.steady_runs()[1]
    try:
        if step_limit is None:
            text = sq.run(sq.compile(source=source)).json()
        else:
            text = Report.from_results(_engine.run(sq.lower_program(sq.compile(source=source)),
                                                   step_limit=step_limit)).json()
    except sq.SqError as exc:
        text = f"SqError: {exc}"
    return text, _engine.steady_runs()[1] - before


@pytest.mark.parametrize("name", PROGRAMS)
def test_steady_runs_give_pyserqs_report_and_iterations(name, reference):
    outcome = compare(reference, PROGRAMS[name], seed=1, iterations=True)
    assert outcome.status == "agree", outcome.describe()


@pytest.mark.parametrize("name", PROGRAMS)
def test_steady_runs_on_and_off_give_one_report(name):
    on, repeated = _json_and_repeats(PROGRAMS[name], True)
    off, none = _json_and_repeats(PROGRAMS[name], False)
    assert on == off and none == 0
    if "no steady runs" in name:
        assert repeated == 0
    else:
        assert repeated > 0, "the steady path was never taken"


@pytest.mark.parametrize("name", NONE)
def test_no_steady_runs_without_a_lone_step_stage(name, reference):
    outcome = compare(reference, NONE[name], seed=1, iterations=True)
    assert outcome.status == "agree", outcome.describe()
    assert _json_and_repeats(NONE[name], True)[1] == 0


def test_the_iteration_trace_is_the_same_on_and_off():
    source = PROGRAMS["a grow every token"]
    traces = []
    for steady in (True, False):
        _engine.steady_runs(steady)
        traces.append(sq.run(sq.compile(source=source), trace_iterations=True).iteration_trace)
    assert traces[0] == traces[1] and len(traces[0]) > 1000


def test_an_iteration_of_no_time_is_stuck_on_both_paths():
    # a cost of 0: each end is at `now`, so no end leaves the list and the instant's step limit
    # stops the run with the same error on either path
    source = _decode_engine("poisson(2.0)", cost="0", work="100000")
    on, _ = _json_and_repeats(source, True, step_limit=10_000)
    off, _ = _json_and_repeats(source, False, step_limit=10_000)
    assert on == off and on.startswith("SqError") and "does not advance" in on


# Quiet repeats made in one pass with the end before them (quiet_repeat): taken where the cost
# repeats with the totals (Stage.cost_repeats: the token counts or the KV sums), never where it
# reads `now`, the pool, the stage's work or a draw. Where the cost reads the KV sums the repeats
# are counted with grants, so the pass also grows and makes the totals afresh after a grow
# (cached chat, a linear cost of the decodes' KV). Compared with pyserq's JSON text (without the
# iteration trace, which keeps them off that pass).
QUIET_NONE = ("costs reading now, the pool and the work", "a cost with a draw", "a linear cost reading now",
              "a cost reading budget_left", "a budget with a draw (no steady runs)")
QUIET = ("light engine", "fractional work", "preemption", "a budget cut short", "a linear cost of the residents",
         "gauges", "long decodes, a horizon mid-run", "an arrival limit", "holds waiting, refused while decoding",
         "holds waiting in key order", "holds waiting through quiet repeats", "a linear cost of the decodes' KV",
         "cached chat")


@pytest.mark.parametrize("name", QUIET + QUIET_NONE)
def test_quiet_repeats_in_one_pass_give_pyserqs_json_text(name):
    before = _engine.quiet_repeats()
    same_json(PROGRAMS[name])
    fused = _engine.quiet_repeats() - before
    assert (fused > 0) == (name in QUIET), f"{fused} quiet repeats made in one pass"


def test_holds_wait_through_the_quiet_repeats():
    # the program that tells whether a quiet repeat samples the queue's area (tests/mutations/run.py:
    # quiet-queue-unsampled) keeps a queue while its quiet repeats go on
    before = _engine.quiet_repeats()
    report = sq.run(sq.compile(source=PROGRAMS["holds waiting through quiet repeats"]))
    assert _engine.quiet_repeats() > before and report.pool("kv").mean_queue > 1.0

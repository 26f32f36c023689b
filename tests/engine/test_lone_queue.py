"""A program that is one open queue runs in its own loop (sq/engine/_one_queue.pxi, `lone_plan`): its reports
and run-time errors are the general loop's, byte for byte, and the loop is taken exactly for
programs of that shape.

The shape: poisson or renewal arrivals; a session of zero or more `set X = now;`, one `run` of a
fifo, ps or delay stage (no index, `growing` or mode) whose work is a constant or a draw with
constant arguments, zero or more `observe NAME = now - X;` of stamped attributes, and its end
(gauges may watch it); no holds, init or turn blocks, trace replay, timeline or invariant checks; no step or shared
stage declared beside it (declared pools stay idle: only holds and step stages use one). `sq._engine.lone_queues(False)` sends every program to the general
loop; its count of lone runs tells which loop a run took. A fifo stage takes fifo_loop, the lone loop
without the other stages' cases, and a ps stage ps_loop (sq/engine/_one_ps.pxi); `lone_queues(fifo=False,
ps=False)` sends them to lone_loop, and each in-shape program here is held to all three loops.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import sq
from sq.errors import SqError
from sq.results.report import Report

from tests.helpers.oracle import first_difference, needs_reference, same_json

_engine = pytest.importorskip("sq._engine")

TRACE = Path(__file__).parents[1] / "programs" / "valid" / "traces" / "tr5.csv"


@pytest.fixture(autouse=True)
def lone_restored():
    """Every test leaves the lone loop enabled, as the rest of the suite expects it."""
    try:
        yield
    finally:
        _engine.lone_queues(True, fifo=True, ps=True)


def _source(stages: str, body: str, arrive: str = "poisson(0.9)", settings: str = "horizon 300; seed 3;") -> str:
    return f"{stages}\nrun {{ {settings} }}\nworkload {{ arrive {arrive}; }}\nsession {{ {body} }}\n"


def _stamped(stages: str, work: str = "~exp(1)", **kw) -> str:
    """A session that stamps `t0`, runs at stage `s` and observes the time since."""
    return _source(stages, f"set t0 = now; run s ({work}); observe r = now - t0;", **kw)


# The IR folds no arithmetic (`-1` is a negation): other constants come from `let`s.
LETS = "let minus = -1; let lo = -inf; let hi = inf; let tiny = 1e-300;\n"


def _outcome(program, step_limit=None, **options) -> str:
    """The run's report as JSON text, or its run-time error's message."""
    try:
        if step_limit is None:
            return sq.run(program, **options).to_json()
        return Report.from_results(_engine.run(sq.lower_program(program), step_limit=step_limit)).to_json()
    except SqError as exc:
        return f"SqError: {exc}"


def _both_loops(program, **options) -> tuple[str, bool]:
    """The outcome with the lone loop enabled (a fifo stage's fifo_loop or a ps stage's ps_loop on,
    then off: lone_loop) and with it disabled, asserted equal; returns it and whether the first run
    took the lone loop."""
    assert _engine.lone_queues(True, fifo=True, ps=True)[0]
    before, fifo_before, ps_before = (_engine.lone_queues()[i] for i in (1, 3, 5))
    lone = _outcome(program, **options)
    taken = _engine.lone_queues()[1] - before
    fifo_taken = _engine.lone_queues()[3] - fifo_before
    ps_taken = _engine.lone_queues()[5] - ps_before
    _engine.lone_queues(fifo=False, ps=False)
    lone_loop = _outcome(program, **options)
    assert _engine.lone_queues()[3] == fifo_before + fifo_taken      # fifo_loop off: not taken
    assert _engine.lone_queues()[5] == ps_before + ps_taken          # ps_loop off: not taken
    _engine.lone_queues(False)
    general = _outcome(program, **options)
    assert taken in (0, 1) and _engine.lone_queues()[1] == before + 2 * taken     # disabled: not taken
    assert fifo_taken + ps_taken <= taken
    for other, name in ((lone_loop, "lone_loop's"), (general, "the general loop's")):
        if lone != other and lone[0] == other[0] == "{":
            pytest.fail(f"the report and {name} differ at {first_difference(json.loads(lone), json.loads(other))}")
        assert lone == other, name
    return lone, bool(taken)


def _takes(source: str, loop: int) -> bool:
    """Whether the lone loop runs the program in fifo_loop (loop 3: a fifo stage) or ps_loop (loop 5:
    a ps stage) rather than lone_loop."""
    _engine.lone_queues(True, fifo=True, ps=True)
    before = _engine.lone_queues()[loop]
    sq.run(sq.compile(source=source))
    return _engine.lone_queues()[loop] == before + 1


# name: (source, sq.run options); each takes the lone loop and runs as in the general loop
IN_SHAPE = {
    "fifo1": (_stamped("stage s : fifo(1);"), {}),
    "fifo3": (_stamped("stage s : fifo(3);", arrive="poisson(2.5)"), {}),
    "ps1": (_stamped("stage s : ps(1);", "~h2(1, 4)"), {}),
    "ps_present": (_stamped("stage s : ps(min(present, 2) / 1.5);", arrive="poisson(1.2)"), {}),
    "ps_rate_draw": (_stamped("stage s : ps(~uniform(0.5, 1.5));", arrive="poisson(0.7)"), {}),
    "ps_rate_now": (_stamped("stage s : ps(1 + now / 300);", arrive="poisson(1)"), {}),
    "ps_rate_reads_stages": (_stamped("stage f : fifo(1); stage s : ps(0.8 + 0.1 * busy(s) + 0.01 * queue(f) "
                                      "+ 0.01 * work(s) + 0.001 * present);", arrive="poisson(1)"), {}),
    "ps_rate_reads_attribute": (_stamped("stage s : ps(t0 == t0 ? 2 : 1);", arrive="poisson(1)"), {}),
    # the rate reads the stage's estimators: the run keeps them (lowered.estimates), the only way an
    # in-shape program can (a session that reads one is out of the shape; a renewal gap may not)
    "ps_estimates": (_stamped("stage s : ps(0.6 + est_rho(s) + 0.1 * est_wait(s) + 0.01 * est_lambda(s));"), {}),
    "ps_rate_zero": (_stamped("stage s : ps(0);", settings="horizon 30;"), {}),
    "ps_rate_negative": (LETS + _stamped("stage s : ps(minus);", settings="horizon 30;"), {}),
    "delay": (_stamped("stage s : delay;", "~uniform(0.5, 3)", arrive="poisson(2)"), {}),
    "renewal": (_stamped("stage s : fifo(1);", "~exp(1.2)", arrive="renewal(~uniform(0.5, 1.5))"), {}),
    "renewal_h2": (_stamped("stage s : ps(2);", "~h2(1, 4)", arrive="renewal(~h2(0.6, 3))"), {}),
    "erlang_det": (_stamped("stage s : fifo(2);", "~erlang(3, 2)", arrive="renewal(~det(0.75))"), {}),
    # deterministic gaps and work: arrivals, finishes and the horizon fall on the same instants
    "ties_fifo1": (_stamped("stage s : fifo(1);", "1", arrive="renewal(1)", settings="horizon 50;"), {}),
    "ties_fifo2": (_stamped("stage s : fifo(2);", "1.5", arrive="renewal(0.5)", settings="horizon 40;"), {}),
    "ties_ps": (_stamped("stage s : ps(1);", "1", arrive="renewal(1)", settings="horizon 50;"), {}),
    "ties_ps_present": (_stamped("stage s : ps(present);", "2", arrive="renewal(0.5)", settings="horizon 40;"), {}),
    "ties_delay": (_stamped("stage s : delay;", "1", arrive="renewal(0.5)", settings="horizon 40;"), {}),
    "ties_overloaded": (_stamped("stage s : fifo(1);", "1", arrive="renewal(0.5)", settings="horizon 60;"), {}),
    "zero_work": (_stamped("stage s : fifo(1);", "0"), {}),
    "negative_work": (LETS + _stamped("stage s : ps(1);", "minus"), {}),
    "nan_work": (LETS + _stamped("stage s : fifo(1);", "~uniform(lo, hi)"), {}),
    "inf_work_fifo": (LETS + _stamped("stage s : fifo(2);", "hi", settings="horizon 30;"), {}),
    "inf_work_ps": (LETS + _stamped("stage s : ps(1);", "~det(hi)", settings="horizon 30;"), {}),
    "inf_work_delay": (_stamped("stage s : delay;", "~exp(0)", settings="horizon 30;"), {}),
    "sometimes_negative": (LETS + _stamped("stage s : fifo(1);", "~uniform(minus, 1.5)"), {}),
    "sometimes_zero": (_stamped("stage s : fifo(1);", "~bernoulli(0.5)", arrive="poisson(1.5)",
                                settings="horizon 300; warmup 30;"), {}),
    "sets_and_observes": (_source("stage s : fifo(1);",
                                  "set a = now; set b = now; set c = now; set a = now; run s (~exp(1.1)); "
                                  "observe ra = now - a; observe rc = now - c; observe ra = now - a; "
                                  "observe rb = now - b;"), {}),
    "builtins_stamped": (_source("stage s : fifo(1);", "set serial = now; set think = now; set more = now; "
                                 "set new = now; set out = now; set forced = now; set cached = now; "
                                 "run s (~exp(1)); observe r = now - serial; observe c = now - cached;"), {}),
    "no_observe": (_source("stage s : ps(1);", "set t0 = now; run s (~exp(1));"), {}),
    "run_only": (_source("stage s : delay;", "run s (~exp(0.5));", arrive="poisson(3)"), {}),
    "forty_stamps": (_source("stage s : fifo(1);", " ".join(f"set a{i} = now;" for i in range(40))
                             + " run s (~exp(1)); observe r = now - a39; observe q = now - a0;"), {}),
    "idle_stages_beside": (_stamped("stage f : fifo(2); stage p : ps(present); stage d : delay; stage s : fifo(1); "
                                    "stage a[3] : ps(1);"), {}),
    "gauges": (_stamped("pool kv { cap 2; } stage s : fifo(2); gauge q = queue(s); gauge b = busy(s) + used(kv); "
                        "gauge l = est_lambda(s); gauge w = est_wait(s); gauge c = 5;",
                        settings="horizon 300; warmup 40; seed 3;"), {}),
    "gauge_of_ps": (_stamped("stage s : ps(present); gauge q = queue(s); gauge e = est_rho(s);"),
                    dict(samples="none")),
    "idle_pools_beside": (_stamped("pool kv { cap 4; } pool mem[3] { cap 2; } stage s : fifo(1);",
                                   settings="horizon 300; warmup 50; seed 3;"), {}),
    "overloaded_fifo": (_stamped("stage s : fifo(1);", arrive="poisson(1.6)", settings="horizon 2000; seed 2;"), {}),
    "overloaded_ps": (_stamped("stage s : ps(1);", arrive="poisson(1.3)", settings="horizon 600; seed 2;"), {}),
    "warmup_in_source": (_stamped("stage s : fifo(1);", settings="horizon 300; warmup 100; seed 5;"), {}),
    "warmup_option": (_stamped("stage s : ps(1);", arrive="renewal(~exp(0.8))"), dict(warmup=150)),
    "warmup_at_a_tie": (_stamped("stage s : fifo(1);", "1", arrive="renewal(1)", settings="horizon 30; warmup 10;"),
                        {}),
    "seed_and_horizon": (_stamped("stage s : fifo(1);"), dict(seed=11, horizon=150)),
    "arrivals": (_stamped("stage s : fifo(1);"), dict(arrivals=200)),
    "arrivals_ties": (_stamped("stage s : fifo(1);", "1.5", arrive="renewal(1)"), dict(arrivals=20)),
    "arrivals_warmup": (_stamped("stage s : ps(1);", settings="horizon 1000; warmup 20;"), dict(arrivals=150)),
    "samples_none": (_stamped("stage s : fifo(2);", arrive="poisson(1.5)"), dict(samples="none")),
    "samples_none_warmup": (_stamped("stage s : ps(1);", settings="horizon 300; warmup 50;"), dict(samples="none")),
    "progress_wall_limit": (_stamped("stage s : fifo(1);"), dict(progress=lambda p: None, wall_limit=600)),
    # run-time errors: the arrival limit not reached, sessions left, nothing after the warm-up
    "arrivals_short": (_stamped("stage s : fifo(1);", "1", arrive="poisson(0.1)"), dict(arrivals=30, horizon=2)),
    "arrivals_undrained": (_stamped("stage s : fifo(1);", "100", arrive="poisson(1)"), dict(arrivals=2, horizon=5)),
    "arrivals_before_warmup": (_stamped("stage s : fifo(1);", "0.1", arrive="poisson(1)"),
                               dict(arrivals=1, horizon=5, warmup=1)),
    "arrivals_before_warmup_ps": (_stamped("stage s : ps(1);", "0.1", arrive="poisson(1)"),
                                  dict(arrivals=1, horizon=5, warmup=1)),
    # the memory bound stops an overloaded queue part way (the message says how far it got)
    "max_memory": (_stamped("stage s : fifo(1);", arrive="poisson(3)", settings="horizon 5000;"),
                   dict(max_memory=200_000)),
    "max_memory_samples": (_source("stage s : fifo(1);", "set a = now; set b = now; run s (~exp(2)); "
                                   "observe ra = now - a; observe rb = now - b; observe rc = now - a;",
                                   arrive="poisson(0.5)", settings="horizon 20000; warmup 10;"),
                           dict(max_memory=100_000)),
    "max_memory_samples_none": (_stamped("stage s : ps(1);", arrive="poisson(3)", settings="horizon 5000;"),
                                dict(max_memory=100_000, samples="none")),
}

# the in-shape programs whose run fails, and a phrase of the message
FAILS = {
    "arrivals_short": "reached before requested arrivals",
    "arrivals_undrained": "failed to drain 2 active sessions",
    "arrivals_before_warmup": "no measurement interval",
    "arrivals_before_warmup_ps": "no measurement interval",
    "max_memory": "(max_memory) at time",
    "max_memory_samples": "2380 samples recorded",   # (a job slot charged 89 bytes: JobRec)
    "max_memory_samples_none": "(max_memory) at time",
}

STEP = "stage e : step { budget 64; cost 0.01; }"

# just outside the shape: the general loop runs them (the same reports either way)
NEAR_MISSES = {
    "observe_serial": (_source("stage s : fifo(1);", "set t0 = now; run s (~exp(1)); observe r = now - serial;"), {}),
    "observe_other": (_source("stage s : fifo(1);", "set t0 = now; run s (~exp(1)); observe r = now - t0 + 1;"), {}),
    "work_reads_attribute": (_source("stage s : fifo(1);", "set t0 = now; run s (now - t0 + 1); observe r = now - t0;"),
                             {}),
    "work_draw_of_attribute": (_source("stage s : fifo(1);", "set t0 = now; run s (~exp(1 + t0 - t0)); "
                                       "observe r = now - t0;"), {}),
    "work_expression": (_stamped("stage s : fifo(1);", "0 - 1"), {}),
    "set_not_now": (_source("stage s : fifo(1);", "set t0 = now + 0.5; run s (~exp(1)); observe r = now - t0;"), {}),
    "set_after_run": (_source("stage s : fifo(1);", "set t0 = now; run s (~exp(1)); set t1 = now; "
                              "observe r = now - t0;"), {}),
    "stamp_turn_no": (_source("stage s : fifo(1);", "set turn_no = now; run s (~exp(1)); observe r = now - turn_no;"),
                      {}),
    "sixty_stamps": (_source("stage s : fifo(1);", " ".join(f"set a{i} = now;" for i in range(60))
                             + " run s (~exp(1)); observe r = now - a59;"), {}),
    "two_runs": (_source("stage s : fifo(1);", "set t0 = now; run s (~exp(2)); run s (~exp(2)); "
                         "observe r = now - t0;"), {}),
    "indexed_run": (_stamped("stage s[2] : fifo(1);").replace("run s (", "run s[1] ("), {}),
    "init_block": ("stage s : fifo(1);\nrun { horizon 300; }\nworkload { arrive poisson(0.9); init { set x = 5; } }\n"
                   "session { set t0 = now; run s (~exp(1)); observe r = now - t0 + 0 * x; }\n", {}),
    "trace_replay": (_stamped("stage s : fifo(1);", arrive=f'poisson(0.9); trace "{TRACE.as_posix()}"'), {}),
    "step_stage_beside": (_stamped(f"{STEP} stage s : fifo(1);"), {}),
    "batch_arrivals": (_stamped("stage s : fifo(1);", arrive="batch(50)"), {}),
    "check_invariants": (_stamped("stage s : fifo(1);"), dict(check_invariants=True)),
}


@pytest.mark.parametrize("name", sorted(IN_SHAPE))
def test_one_open_queue_takes_the_lone_loop_and_reports_as_the_general_loop(name):
    source, options = IN_SHAPE[name]
    outcome, taken = _both_loops(sq.compile(source=source), **options)
    assert taken, "the lone loop was not taken"
    if name in FAILS:
        assert outcome.startswith("SqError") and FAILS[name] in outcome, outcome
    else:
        assert not outcome.startswith("SqError"), outcome


@pytest.mark.parametrize("name", ["fifo1", "fifo3", "gauges", "ties_fifo2", "zero_work", "inf_work_fifo"])
def test_a_lone_fifo_stage_takes_fifo_loop(name):
    assert _takes(IN_SHAPE[name][0], 3) and not _takes(IN_SHAPE[name][0], 5)


@pytest.mark.parametrize("name", ["ps1", "ps_present", "ps_rate_draw", "ties_ps"])
def test_a_lone_ps_stage_takes_ps_loop(name):
    assert _takes(IN_SHAPE[name][0], 5) and not _takes(IN_SHAPE[name][0], 3)


@pytest.mark.parametrize("name", ["delay", "inf_work_delay"])
def test_a_lone_delay_stage_takes_lone_loop(name):
    assert not _takes(IN_SHAPE[name][0], 3) and not _takes(IN_SHAPE[name][0], 5)


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_a_near_miss_takes_the_general_loop(name):
    source, options = NEAR_MISSES[name]
    outcome, taken = _both_loops(sq.compile(source=source), **options)
    assert not taken, "the lone loop was taken"
    assert not outcome.startswith("SqError"), outcome


def test_a_timeline_takes_the_general_loop(tmp_path):
    program = sq.compile(source=_stamped("stage s : fifo(1);", settings="horizon 50;"))
    _, taken = _both_loops(program, timeline=tmp_path / "run.json")
    assert not taken


# Instants of many steps: arrivals whose gap is lost to rounding (`1 + 1e-300 == 1`) and jobs of
# no work or such work, or an arrival and a finish at one time; each step limit stops the run at
# another step of an instant (an arrival or a finish; a `set`, the `run`, an `observe`, the end)
LOST = "renewal(~bernoulli(0.3) + tiny)"
STUCK = {
    "zero_work": LETS + _source("stage s : fifo(1);", "set a = now; set b = now; run s (0); observe ra = now - a; "
                                "observe rb = now - b;", arrive=LOST, settings="horizon 20; seed 2;"),
    "fifo": LETS + _stamped("stage s : fifo(1);", "tiny", arrive=LOST, settings="horizon 20; seed 2;"),
    "ps": LETS + _stamped("stage s : ps(1);", "tiny", arrive=LOST, settings="horizon 20; seed 2;"),
    "delay": LETS + _stamped("stage s : delay;", "tiny", arrive=LOST, settings="horizon 20; seed 2;"),
    "ties": _stamped("stage s : fifo(1);", "1", arrive="renewal(1)", settings="horizon 20;"),
}


def _stuck_at(outcome: str) -> str:
    """Which step of its instant stopped the run, by the message (a statement: a `set`, an `observe`
    or the end)."""
    if "does not advance" not in outcome:
        return "ran"
    for step, phrase in (("finish", "repeats jobs"), ("run", "a `run s` that takes"),
                         ("statement", "time-taking `run`")):
        if phrase in outcome:
            return step
    return "arrival"


@pytest.mark.parametrize("name", sorted(STUCK))
def test_the_step_limit_stops_both_loops_at_the_same_step(name):
    program = sq.compile(source=STUCK[name])
    steps = set()
    for limit in range(40):
        outcome, taken = _both_loops(program, step_limit=limit)
        assert taken
        steps.add(_stuck_at(outcome))
    jobs = {"finish"} if name != "zero_work" else set()
    assert steps == {"arrival", "statement", "run"} | jobs | ({"ran"} if name == "ties" else set())


PYSERQ_PROGRAMS = ["gauges", "fifo3", "ps1", "ps_present", "delay", "renewal_h2", "ties_fifo1", "ties_fifo2", "ties_ps",
                   "ties_ps_present", "ties_delay", "zero_work", "sets_and_observes", "warmup_at_a_tie"]


@needs_reference
@pytest.mark.parametrize("name", PYSERQ_PROGRAMS)
def test_the_lone_loop_reports_pyserqs_json_text(name):
    source, options = IN_SHAPE[name]
    assert not options
    before = _engine.lone_queues(True)[1]
    same_json(source)
    assert _engine.lone_queues()[1] == before + 1

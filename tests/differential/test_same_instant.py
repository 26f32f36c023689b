"""Events at one instant, against pyserq 0.1.2's JSON text (issue 22's regressions).

* Jobs of a ps stage that finish at one instant and go on to a step stage: settle's stages pass
  reads whether another event is pending at `now` once, as the pass begins (spec 09 §9.5), so the
  ps finish the pass itself reschedules to this instant holds no iteration back: the iteration
  starts with the first job and the others wait for the next one (commit 6531a92 read it again at
  each step stage, after the ps stage's reschedule, and let them all join).
* A `budget_left` call deep inside an expression: the engine's guard at the call counts what the
  callee needs (its stage's budget and chunk, and their own calls), not the program's deepest
  expression again, so a call 70 operands deep runs as in 0.1.2.
"""
from __future__ import annotations

import pytest

from tests.helpers.oracle import REFERENCE_MISSING, same_json

pytest.importorskip("pyserq", reason=REFERENCE_MISSING, exc_type=ImportError)   # every test compares

PS_THEN_STEP = {
    "batch": """stage s : ps(2);
stage e : step { cost 1; }
session { run s (3); run e decode (2); }
workload { arrive batch(2); }
run { horizon 20; }
""",
    "closed_step_first": """stage s2 : ps(4);
stage e : step { cost 1; }
session { run e decode (2); run s2 (3); }
workload { arrive closed(2); }
run { horizon 17.5; warmup 0; seed 42; }
""",
    "chat_tokenizer": """// a tokenizer shared by processor sharing in front of a continuous-batching engine
pool kv { cap 4096; }
stage tokenizer : ps(4);
stage engine : step { budget 512; cost 0.01 + 0.0001 * tokens; chunk 512; }
run { horizon 200; warmup 10; }
workload { arrive closed(16); }
session {
  set t0 = now;
  run tokenizer (0.002);
  hold kv (256) { run engine prefill (256); set t1 = now; run engine decode (64); }
  observe ttft = t1 - t0;
  observe latency = now - t0;
}
""",
    # the step stage declared before the ps stage: its pass comes first, nothing rescheduled yet
    "step_declared_first": """stage e : step { cost 1; }
stage s : ps(3);
session { run s (2); run e decode (2); }
workload { arrive batch(3); }
run { horizon 20; }
""",
    # two step stages behind one ps stage: both read the one answer of the pass
    "two_engines": """stage s : ps(2);
stage a : step { cost 1; }
stage b : step { cost 0.5; }
session { run s (3); branch (serial - 2 * floor(serial / 2) == 0) { run a decode (2); } else { run b decode (3); } }
workload { arrive closed(4); }
run { horizon 30; }
""",
}


@pytest.mark.parametrize("name", PS_THEN_STEP)
def test_ps_finishes_at_one_instant_before_a_step_stage(name):
    report = same_json(PS_THEN_STEP[name])
    assert report["ended"] > 0 or report["arrivals"] > 0


def test_the_first_finish_starts_the_iteration_alone():
    # what the regression got wrong, named: two jobs finish their ps work at t = 3; the first
    # starts an iteration at 3 by itself, the second joins the next one at 4
    report = same_json(PS_THEN_STEP["batch"])
    engine = next(s for s in report["stages"] if s["name"] == "e")
    assert engine["iterations"] == 3 and report["events"] == 5


def _nested_budget_left(levels: int) -> str:
    inner = "budget_left(e1)"
    for _ in range(levels):
        inner = f"now + ({inner})"
    return (f"stage e0 : step {{ budget 10; cost 1; chunk min(4, {inner}); }}\n"
            "stage e1 : step { budget 10; cost 1; chunk 3; }\n"
            "session { run e0 prefill (6); run e1 prefill (5); }\n"
            "workload { arrive batch(3); }\nrun { horizon 30; }\n")


@pytest.mark.parametrize("levels", [1, 70, 200])
def test_budget_left_deep_inside_a_chunk(levels):
    report = same_json(_nested_budget_left(levels))
    assert report["ended"] == 3

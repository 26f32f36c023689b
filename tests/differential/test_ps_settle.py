"""Processor sharing's fast paths (issue 12) change no result, against pyserq 0.1.2's JSON text:

* settle's inline stages pass for a program whose one ps stage is its only pass (no pools, no other
  ps or step stage: State.ps_lone), and the general pass where that does not hold;
* the areas of a program whose one stage is that ps stage, sampled without the row set's search;
* a constant φ (read where reschedule calls it), a φ that is not (evaluated at every reschedule),
  and a stage holding many jobs.
Each program has superseded finishes (an arrival while the stage is busy) and a gauge, so a stale
finish's instant is read and sampled as 0.1.2 does.
"""
from __future__ import annotations

import pytest

from tests.helpers.oracle import REFERENCE_MISSING, same_json

pyserq = pytest.importorskip("pyserq", reason=REFERENCE_MISSING, exc_type=ImportError)   # every test compares

SESSION = "session { set t0 = now; run p (~h2(1, 4)); observe response = now - t0; }\n"


@pytest.mark.parametrize("phi", ["1", "2.5", "0.25", "min(present, 3)", "present / 2"])
@pytest.mark.parametrize("rate", [0.8, 1.6])      # 1.6 with φ = 1 overloads it
@pytest.mark.parametrize("warmup", [0, 30])
def test_lone_ps_stage(phi, rate, warmup):
    report = same_json(f"stage p : ps({phi});\nrun {{ horizon 150; warmup {warmup}; seed 3; }}\n"
                        f"gauge present_p = queue(p);\nworkload {{ arrive poisson({rate}); }}\n" + SESSION)
    assert report["observes"]["response"]["count"] > 20


def test_lone_ps_stage_holds_many_jobs():
    """An overloaded ps(1) stage: its heap of jobs grows past 32."""
    report = same_json("stage p : ps(1);\nrun { horizon 120; seed 2; }\nworkload { arrive poisson(2); }\n"
                        "session { set t0 = now; run p (~exp(1)); observe response = now - t0; }\n")
    assert report["arrivals"] - report["ended"] > 64 and report["stages"][0]["mean_number"] > 32


@pytest.mark.parametrize("program", [
    # a pool: settle's general pass (the pools' pass comes first)
    "pool mem { cap 3; }\nstage p : ps(1);\nworkload { arrive poisson(1.2); }\n"
    "session { set t0 = now; hold mem (1) { run p (~h2(1, 4)); } observe response = now - t0; }\n",
    # two ps stages: neither is alone
    "stage q : ps(2); stage p : ps(1);\nworkload { arrive poisson(0.8); }\n"
    "session { set t0 = now; run q (~exp(1)); run p (~h2(1, 4)); observe response = now - t0; }\n",
    # fifo and delay stages beside the one ps stage: it is still alone in settle's pass
    "stage f : fifo(1); stage p : ps(1); stage d : delay;\nworkload { arrive poisson(0.7); }\n"
    "session { set t0 = now; run f (~exp(0.5)); run d (1); run p (~h2(1, 4)); observe response = now - t0; }\n",
], ids=["pool", "two-ps", "beside-fifo"])
def test_ps_stage_among_others(program):
    report = same_json("run { horizon 150; seed 4; }\n" + program)
    assert report["observes"]["response"]["count"] > 50


# An infinite φ: the rate is inf, `rate * 0` a NaN, and 0.1.2 takes the larger of the virtual time
# and a finished job's tag, and of a finish's delay and 0, the NaN losing both (Rust's f64::max):
# the finish comes at once and the next tag is finite again. sq once scheduled it at a NaN time.
INFINITE_PHI = {    # stages, the session's run, the arrivals
    "inf": ("stage p : ps(inf);", "run p (~exp(1));", "poisson(1.5)"),
    "inf_batch": ("stage p : ps(inf);", "run p (~exp(1));", "batch(20)"),
    "inf_when_two": ("stage p : ps(present > 1 ? inf : 1);", "run p (~exp(1));", "poisson(1.5)"),
    "inf_when_four": ("stage p : ps(present > 3 ? inf : present);", "run p (~h2(1, 4));", "poisson(1.5)"),
    "inf_beside_fifo": ("stage p : ps(inf); stage f : fifo(1);",
                        "run p (~exp(1)); run f (~exp(0.3)); run p (~exp(1));", "poisson(1.5)"),
    "inf_shared": ("share maxmin;\nstage p : ps(inf); stage b : ps(2);", "run p, b (~exp(1)); run p (~exp(1));",
                   "poisson(1.5)"),
    "inf_held": ("pool m { cap 3; }\nstage p : ps(present > 1 ? inf : 1);", "hold m (1) { run p (~exp(1)); }",
                 "poisson(1.5)"),
}


@pytest.mark.parametrize("name", sorted(INFINITE_PHI))
def test_an_infinite_rate_is_pyserqs_json_text(name):
    stages, run, arrive = INFINITE_PHI[name]
    report = same_json(f"{stages}\nrun {{ horizon 100; seed 4; }}\nworkload {{ arrive {arrive}; }}\n"
                       f"session {{ set t0 = now; {run} observe response = now - t0; }}\n")
    assert report["observes"]["response"]["count"] >= 20 and report["observes"]["response"]["mean"] is not None


@pytest.mark.parametrize("order", ["fifo, ps, delay", "ps, delay, ps", "delay, fifo, ps"])
def test_the_stages_pass_bounded_by_its_ps_stages_and_idle_pool_counts_are_pyserqs_json_text(order):
    # settle's stages pass runs from the first to the last ps stage; a pool's queue and holders
    # areas are skipped while they hold 0 (the pool below queues now and then, with a warm-up and
    # a gauge reading its queue)
    kinds = [k.strip() for k in order.split(",")]
    stages = " ".join(f"stage s{i} : {'ps(1)' if k == 'ps' else 'fifo(1)' if k == 'fifo' else 'delay'};"
                      for i, k in enumerate(kinds))
    runs = " ".join(f"run s{i} (~exp(0.3));" for i in range(len(kinds)))
    report = same_json(f"pool m {{ cap 2; }}\n{stages}\nrun {{ horizon 200; warmup 20; seed 7; }}\n"
                        "gauge waiting = queued(m);\nworkload { arrive poisson(0.9); }\n"
                        f"session {{ set t0 = now; hold m (1) {{ {runs} }} observe response = now - t0; }}\n")
    assert report["observes"]["response"]["count"] > 50
    assert report["pools"][0]["mean_queue"] > 0

"""What sweeps rely on: a compiled Program is lowered once and rerun with other settings, and the
lowering decides which step-stage sums the engine must make. Every result stays the one a fresh
compile gives."""
from __future__ import annotations

import pytest

import sq
from sq.lower import lowering as L

from tests.helpers.oracle import sq_ir as _ir

MM1 = """
stage server : fifo(1);
workload { arrive poisson(0.9); }
session { set t0 = now; run server (~exp(1)); observe response = now - t0; }
"""

ENGINE = """
pool kv {{ cap 4000; block 16; }}
stage engine : step {{ memory kv; budget {budget}; cost {cost}; }}
workload {{ arrive poisson(5); }}
session {{ hold kv (64) {{ run engine prefill (64); run engine decode (8) growing kv; }} }}
"""


def test_one_compiled_program_runs_every_seed_as_a_fresh_compile():
    program = sq.compile(source=MM1, horizon=1e9, arrivals=300)
    for seed in (1, 2, 17):
        again = sq.run(program, seed=seed).to_json()
        fresh = sq.run(sq.compile(source=MM1, horizon=1e9, arrivals=300, seed=seed)).to_json()
        assert again == fresh
    kept = program.cached("lowered", lambda: pytest.fail("the lowered arrays were not kept"))
    assert kept.seed == 1   # the run settings went to the engine, not into the kept arrays


def test_setting_a_field_drops_the_kept_lowering():
    program = sq.compile(source=MM1, horizon=200, seed=3)
    before = sq.run(program)
    program.horizon = 400.0
    after = sq.run(program)
    assert after.to_json() == sq.run(sq.compile(source=MM1, horizon=400, seed=3)).to_json()
    assert after.events > before.events


def test_run_settings_are_checked_against_the_kept_program():
    program = sq.compile(source=MM1, horizon=100)
    with pytest.raises(sq.SqError, match="0 <= warmup < horizon"):
        sq.run(program, warmup=100)
    closed = sq.compile(source="stage s : delay; workload { arrive closed(2); } session { run s (1); }",
                        horizon=10)
    with pytest.raises(sq.SqError, match="only to poisson or renewal"):
        sq.run(closed, arrivals=5)


@pytest.mark.parametrize("budget, cost, at_budget, at_iteration", [
    ("512", "0.01 + tokens * 0.0001", False, False),        # nobody reads kv: no sums
    ("512", "0.01 + kv_decode * 0.00001", False, True),     # the cost reads the iteration's sums only
    ("max(64, 4000 - kv_decode - kv_prefill)", "0.01", True, True),   # the Budget moment reads its own
])
def test_lowering_marks_the_kv_sums_some_expression_reads(budget, cost, at_budget, at_iteration):
    low = L.lower(_ir(ENGINE.format(budget=budget, cost=cost)))
    assert (low.kv_budget, low.kv_iteration) == (at_budget, at_iteration)


def test_a_serve_key_reading_kv_keeps_the_budget_sums():
    source = ENGINE.format(budget="512", cost="0.01 + kv_decode * 0.00001")
    low = L.lower(_ir(source.replace("cost 0.01", "serve by (kv_prefill, remaining); cost 0.01")))
    assert (low.kv_budget, low.kv_iteration) == (True, True)

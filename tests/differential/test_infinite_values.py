"""Infinite and NaN values where the engine clamps or divides, against pyserq 0.1.2's JSON text.

0.1.2 clamps with Rust's `f64::max`, whose NaN argument loses; a C test `x < 0` keeps a NaN. Each
program below puts an inf or a NaN where a clamp, a division or a comparison meets it: a job's
work, a ps rate, a hold's amount, an observe, a gauge (a ps stage's infinite φ: test_ps_settle.py;
a step stage's budget, chunk, cost and tokens: test_step_infinite_values.py).
"""
from __future__ import annotations

import pytest

from tests.helpers.oracle import REFERENCE_MISSING, same_json

pyserq = pytest.importorskip("pyserq", reason=REFERENCE_MISSING, exc_type=ImportError)   # every test compares

RUN = "run { horizon 60; seed 3; }\nworkload { arrive poisson(1.2); }\n"
OBSERVE = "observe r = now - t0;"

PROGRAMS = {
    "delay_inf_work": ("stage d : delay;", "run d (serial > 5 ? inf : ~exp(1));"),
    "fifo_inf_work": ("stage f : fifo(1);", "run f (serial == 3 ? inf : ~exp(0.5));"),
    "ps_inf_work": ("stage p : ps(1);", "run p (serial == 3 ? inf : ~exp(0.5));"),
    "ps_zero_rate": ("stage p : ps(present > 2 ? 0 : 1);", "run p (~exp(0.5));"),
    "ps_negative_rate": ("stage p : ps(present > 2 ? -1 : 1);", "run p (~exp(0.5));"),
    "shared_inf_work": ("share maxmin;\nstage a : ps(1); stage b : ps(2);", "run a, b (serial == 2 ? inf : ~exp(1));"),
    "hold_inf": ("pool m { cap 2; }\nstage f : fifo(1);", "hold m (serial == 4 ? inf : 1) { run f (~exp(0.5)); }"),
    "hold_nan": ("pool m { cap 2; }\nstage f : fifo(1);", "hold m (serial == 4 ? 0 / 0 : 1) { run f (~exp(0.5)); }"),
    "observe_inf": ("stage f : fifo(1);", "run f (~exp(0.5)); observe q = (now - t0) / 0;"),
    "observe_nan": ("stage f : fifo(1);", "run f (~exp(0.5)); observe q = 0 / 0;"),
    "gauge_nan": ("stage f : fifo(1);\ngauge g = 0 / 0;", "run f (~exp(0.5));"),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_an_infinite_or_nan_value_is_pyserqs_json_text(name):
    declarations, statements = PROGRAMS[name]
    source = f"{declarations}\n{RUN}session {{ set t0 = now; {statements} {OBSERVE} }}\n"
    same_json(source)

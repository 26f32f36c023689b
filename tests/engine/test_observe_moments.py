"""The Welford moments the engine keeps per observe as it records (`ObserveRaw.moments`).

The report takes an observe's mean and cv2 from them instead of running Welford's division
chain over the samples again; they must be those of `sq.results.stats.welford` over the very
samples handed over, to the bit, whatever path recorded them (the lone fifo loop, the general
loop's `observe` statements, an `init` or `turn` block) and whatever the values (NaN, ±inf, -0).
"""
from __future__ import annotations

import math
import struct

import numpy as np
import pytest

import sq
import sq._engine as engine
from sq.lower.lowering import lower
from sq.results import stats
from sq.results.report import Report

PROGRAMS = {
    # the lone fifo loop (fifo_loop), a warm-up
    "mm1": """
stage server : fifo(1);
run { horizon 3000; warmup 200; seed 3; }
workload { arrive poisson(0.9); }
session { set t0 = now; run server (~exp(1)); observe response = now - t0; }
""",
    # the general loop: two observes of one session, a pool, a delay, values of every sign,
    # infinities and NaNs (0/0), an observe in the workload's init block
    "general": """
pool slots { cap 2; }
stage server : fifo(1);
stage think : delay;
run { horizon 2000; warmup 50; seed 11; }
workload { arrive poisson(0.8); init { set u = ~uniform(-1, 1); observe drawn = u; } }
session {
  set t0 = now;
  run server (~exp(1));
  observe response = now - t0;
  hold slots (1) { run think (~exp(1)); }
  observe odd = u > 0.9 ? 0 / 0 : (u < -0.9 ? 1 / 0 : (u < 0 ? -0 * u : -u * 1e300));
}
""",
    # no warm-up, a ps stage (the lone loop's ps path)
    "ps": """
stage server : ps(1);
run { horizon 2000; seed 7; }
workload { arrive poisson(0.7); }
session { set t0 = now; run server (~h2(1, 4)); observe response = now - t0; }
""",
}


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_moments_are_welfords_of_the_samples(name):
    raw = engine.run(lower(sq.compile(source=PROGRAMS[name]).to_dict(exact=True)))
    assert raw.observes
    for o in raw.observes:
        assert len(o.samples) > 10, o.name
        w = stats._stats.welford(np.ascontiguousarray(o.samples, dtype=np.float64))
        assert (bits(o.moments[0]), bits(o.moments[1])) == (bits(w[1]), bits(w[2])), o.name


def test_general_program_reaches_nan_and_infinities():
    raw = engine.run(lower(sq.compile(source=PROGRAMS["general"]).to_dict(exact=True)))
    odd = next(o for o in raw.observes if o.name == "odd").samples
    assert np.isnan(odd).any() and np.isinf(odd).any() and (odd < 0).any()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_report_with_and_without_the_engines_moments(name):
    """The JSON text from the engine's moments equals the one computed from the samples alone."""
    raw = engine.run(lower(sq.compile(source=PROGRAMS[name]).to_dict(exact=True)))
    kept = Report.from_results(raw).to_json()
    for o in raw.observes:
        o.moments = None
    assert Report.from_results(raw).to_json() == kept


def test_moments_dropped_when_the_warmup_cuts_samples():
    """Raw results whose samples start before the warm-up (built by hand: the engine records only
    once warm) are sliced, and the moments of the whole array are not used for the suffix."""
    raw = engine.run(lower(sq.compile(source=PROGRAMS["ps"]).to_dict(exact=True)))
    o = raw.observes[0]
    raw.warmup = float(o.times[len(o.times) // 2])
    report = Report.from_results(raw).observes["response"]
    suffix = o.samples[len(o.samples) // 2:]
    assert report.count == len(suffix)
    assert report.mean == stats.welford(suffix).mean
    assert report.mean != o.moments[0] or math.isnan(report.mean)

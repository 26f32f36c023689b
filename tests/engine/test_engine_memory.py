"""What the engine keeps per recorded sample, and that keeping less changes nothing.

An observation's record is value (f64) + time (f64) + session serial + turn number: the
serials come as int32 while they fit, the turns as uint32 (a record saturates them to 32
bits) and not stored at all while every one is 0. A stage's waits and services and a
pool's waits are kept as running Welford means. Each of these must still give pyserq's
numbers exactly, and the report must not copy what the engine hands over.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import sq
from sq import _engine
from sq.results import stats
from sq.lower.lowering import lower
from sq.results.report import Report

pyserq = pytest.importorskip("pyserq")


def _both(source: str, **kw):
    ours = sq.compile(source=source, **kw)
    raw = _engine.run(lower(ours.to_dict(exact=True)))
    ref = pyserq.run(pyserq.compile(source=source, **kw))
    return raw, ref


MULTI_TURN = """
stage s : fifo(1);
workload { arrive poisson(1); }
session { observe a = 1; run s (~exp(2)); turn; observe b = now; run s (~exp(2)); turn;
          observe a = 2; turn; turn; observe a = 3; }
"""


def test_turns_stored_only_once_nonzero_and_equal_to_pyserq():
    raw, ref = _both(MULTI_TURN, seed=5, horizon=200)
    for o in raw.observes:
        r = ref.observes[o.name]
        assert o.turns.dtype == np.uint32 and o.sessions.dtype == np.int32
        assert o.turns.tolist() == list(r.turns) and o.sessions.tolist() == list(r.sessions)
    # `a` mixes turn 0 with later turns: the lazily created array kept the leading zeros
    a = next(o for o in raw.observes if o.name == "a")
    assert 0 in a.turns.tolist() and 4 in a.turns.tolist()


def test_single_turn_turns_are_zeros():
    raw, ref = _both("stage s : fifo(1); workload { arrive poisson(1); } "
                     "session { run s (~exp(2)); observe r = now; }", seed=2, horizon=100)
    (o,) = raw.observes
    assert len(o.turns) == len(ref.observes["r"].turns) > 0 and not o.turns.any()


def test_report_keeps_views_of_the_engine_arrays():
    p = sq.compile(source=MULTI_TURN, seed=5, horizon=200, warmup=50)
    raw = _engine.run(lower(p.to_dict(exact=True)))
    rep = Report.from_results(raw)
    for o in raw.observes:
        ro = rep.observes[o.name]
        for mine, theirs in ((ro.samples, o.samples), (ro.times, o.times),
                             (ro.sessions, o.sessions), (ro.turns, o.turns)):
            assert np.shares_memory(mine, theirs)


def test_running_means_are_welford_of_the_samples():
    # the engine's running mean must be the report's Welford mean of the same samples
    # in the same order: compare with pyserq's stage and pool rows, exactly
    src = """
    pool p { cap 2; }
    stage s : fifo(1);
    stage d : delay;
    workload { arrive poisson(1.5); }
    session { hold p (1) { run s (~exp(2)); run d (~uniform(0, 1)); } observe r = now; }
    """
    ours = sq.run(sq.compile(source=src, seed=9, horizon=300, warmup=20))
    ref = pyserq.run(pyserq.compile(source=src, seed=9, horizon=300, warmup=20))
    a, b = json.loads(ours.json()), json.loads(ref.json())
    assert a["stages"] == b["stages"] and a["pools"] == b["pools"]
    assert a["stages"][0]["completed"] > 100


def test_welford_step_matches_stats():
    # the engine's update `m += (x - m) / n` is stats.welford's, so the means agree to the bit
    xs = np.random.default_rng(1).exponential(1.0, 1000)
    m = 0.0
    for n, x in enumerate(xs.tolist(), 1):
        m += (x - m) / n
    assert m == stats.welford(xs).mean


STEP_TOKENS = """
pool kv { cap 4000; block 16; preempt lifo; evict lru; }
stage e : step { budget 512; chunk 256; cost 0.004 + 0.00002 * tokens; memory kv; }
workload { arrive poisson(8); }
session { hold kv (200) { run e prefill (200) growing kv; run e decode (1 + ~exp(150)) growing kv; } }
"""


def test_inter_token_gaps_are_not_kept_per_token_and_give_pyserqs_numbers():
    raw, ref = _both(STEP_TOKENS, seed=3, horizon=400, warmup=20)
    itl = raw.stages[0].itl
    # ~450k gaps in a histogram of some hundreds of 1 % buckets: nothing grows with the tokens
    assert itl.n > 100_000 and len(itl.counts) < 2_000
    assert len(raw.stages[0].itl_gaps) == 0 and raw.stages[0].decode_batch_mean.n > 1_000
    mine = Report.from_results(raw).stages[0]
    theirs = ref.stages[0]
    for field in ("mean_itl", "itl_p50", "itl_p99", "mean_decode_batch", "mean_decode_step"):
        assert getattr(mine, field) == pytest.approx(getattr(theirs, field), rel=1e-12), field

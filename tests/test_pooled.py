"""Pooled quantiles (`OBS.p99@pooled`): the quantile over all a point's samples, with a seed-bootstrap interval."""
from __future__ import annotations

import math
import pickle
from pathlib import Path

import numpy as np
import pytest

from sq.errors import SqError
from sq.results.metrics import Tail, parse_metric
from sq.results.stats import pooled_interval, pooled_quantile, quantile
from sq.study.capacity import capacity
from sq.study.sweep import sweep

ROOT = Path(__file__).resolve().parents[1]
MM1 = str(ROOT / "tests" / "capacity" / "mm1.sq")
VLLM = str(ROOT / "examples" / "single-turn" / "vllm_single_turn.sq")
MM1_P99 = math.log(100) / 0.1       # response p99 of M/M/1 at rho = 0.9, mu = 1: ln(100)/(mu - lambda)


def _tail(xs, keep):
    xs = np.asarray(xs, dtype=float)
    return Tail(quantile(xs, 0.99), len(xs), np.sort(xs)[::-1][:keep])


def test_the_names_parse_and_only_quantiles_pool():
    m = parse_metric("ttft.p99@pooled")
    assert (m.name, m.observe, m.le, m.kind) == ("ttft.p99@pooled", "ttft", 0.99, "pooled")
    with pytest.raises(SqError, match="a pooled metric is a quantile"):
        parse_metric("ttft.mean@pooled")


def test_the_pooled_quantile_is_the_order_statistic_of_all_samples():
    rng = np.random.default_rng(5)
    runs = [rng.exponential(size=n) for n in (300, 1000, 50)]
    whole = quantile(np.concatenate(runs), 0.99)
    tails = [_tail(xs, 100) for xs in runs]
    assert pooled_quantile([t.count for t in tails], [t.top for t in tails], 0.99) == whole
    # a run that kept too few of its largest samples makes the answer unknown, never wrong
    short = [_tail(xs, 3) for xs in runs]
    assert math.isnan(pooled_quantile([t.count for t in short], [t.top for t in short], 0.99))


def test_a_tail_survives_pickling_and_the_cache(tmp_path):
    t = _tail([1.0, 2.0, 3.0], 2)
    back = pickle.loads(pickle.dumps(t))
    assert float(back) == float(t) and back.count == 3 and list(back.top) == [3.0, 2.0]
    args = dict(horizon=300.0, warmup=30.0, metrics=["response.p99@pooled"], executor="serial", cache=tmp_path)
    first = sweep(MM1, {"lam": [0.9]}, [1, 2], **args)
    again = sweep(MM1, {"lam": [0.9]}, [1, 2], **args)      # read from the cache
    assert [r["response.p99@pooled"].top.tolist() for r in again.records] == \
        [r["response.p99@pooled"].top.tolist() for r in first.records]
    pooled = [{k: r[k] for k in ("response.p99@pooled", "response.p99@pooled±")} for r in first.summary_records()]
    assert pooled == [{k: r[k] for k in pooled[0]} for r in again.summary_records()]


def test_mm1_pooled_p99_is_nearer_the_truth_than_the_mean_of_run_p99s():
    # 10 seeds x horizon 1,000 at rho = 0.9: the mean of per-run p99s is ~27 (issue 23), far below 46.05
    s = sweep(MM1, {"lam": [0.9]}, range(1, 11), horizon=1000.0, warmup=0.0,
              metrics=["response.p99@pooled"], executor="serial")
    row = s.summary_records()[0]
    assert abs(row["response.p99@pooled"] - MM1_P99) < abs(row["response.p99"] - MM1_P99) / 2
    # the per-run interval excludes the truth; the pooled one's bootstrap interval holds it
    assert row["response.p99"] + row["response.p99±"] < MM1_P99
    assert abs(row["response.p99@pooled"] - MM1_P99) <= row["response.p99@pooled±"]


def test_the_bootstrap_interval_is_fixed_and_needs_two_seeds():
    rng = np.random.default_rng(1)
    tails = [_tail(rng.exponential(size=500), 500) for _ in range(8)]
    assert pooled_interval(tails, 0.99) == pooled_interval(tails, 0.99)     # a fixed bootstrap seed
    assert math.isnan(pooled_interval(tails[:1], 0.99)[1])


def test_the_vllm_p99_question_settles_with_the_pooled_metric():
    # the per-run p99 warns at the default 60 s (test_capacity: test_the_vllm_p99_question_at_60_s_warns);
    # the pooled p99 rests on all the seeds' samples: no warning, and two seed sets give one answer
    answers = []
    for seeds in ([1, 2], [3, 4]):
        cap = capacity(VLLM, "rate", "ttft.p99@pooled <= 0.5", lo=5, hi=10, tol=0.5, seeds=seeds,
                       executor="serial", settle=1)
        assert cap.warnings == [] and cap.confident
        answers.append((cap.value, cap.bracket))
    assert answers[0] == answers[1]


@pytest.mark.slow
def test_mm1_pooled_p99_calibration():
    """30 repetitions of 10 seeds x horizon 10,000 (warm-up 1,000) at rho = 0.9. Measured: the pooled
    p99's bootstrap interval covers 46.05 in ~85-90 % of repetitions, below the nominal 95 % (the
    percentile bootstrap over 10 seeds is too narrow); the per-run p99's t interval in ~70 %."""
    pooled_hits = run_hits = 0
    for k in range(30):
        s = sweep(MM1, {"lam": [0.9]}, range(1 + 10 * k, 11 + 10 * k), horizon=10000.0, warmup=1000.0,
                  metrics=["response.p99@pooled"], executor="serial")
        row = s.summary_records()[0]
        pooled_hits += abs(row["response.p99@pooled"] - MM1_P99) <= row["response.p99@pooled±"]
        run_hits += abs(row["response.p99"] - MM1_P99) <= row["response.p99±"]
    assert pooled_hits > run_hits

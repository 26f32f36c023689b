"""Queueing theory checks: long runs of our engine against closed-form results.

Tolerances come from the report's own batch-means half-width, widened from
its 95 % t-quantile (2.093, 19 degrees of freedom) to the 99.9 % one (3.883),
so a correct engine fails a check about once in a thousand seeds.
"""
from __future__ import annotations

import pytest

import sq
from sq.results.report import Report

WIDEN = 3.883 / 2.093


def _report(source: str, **overrides) -> Report:
    return sq.run(sq.compile(source=source, **overrides))


def _within(observe, theory: float) -> None:
    assert observe.count >= 1000
    assert abs(observe.mean - theory) <= WIDEN * observe.ci, (observe.mean, observe.ci, theory)


@pytest.mark.parametrize("kind", ["fifo", "ps(1)"])
def test_mm1_response_time(kind):
    lam, mu = 0.6, 1.0
    r = _report(f"stage s : {kind}; workload {{ arrive poisson({lam}); }}\n"
                "session { set t = now; run s (~exp(1)); observe resp = now - t; }",
                horizon=200_000, warmup=2_000, seed=7)
    _within(r.observes["resp"], 1 / (mu - lam))          # the same mean for FIFO and PS
    assert r.stage("s").utilization == pytest.approx(lam / mu, abs=0.01)


def test_mm2_waiting_time():
    # M/M/2, λ = 1.5, μ = 1: Erlang C, P(wait) = a²/(2(1−ρ))·p0 with a = λ/μ, ρ = a/2,
    # p0 = 1/(1 + a + a²/(2(1−ρ))); mean queue wait Wq = P(wait)/(2μ − λ)
    a, c = 1.5, 2
    rho = a / c
    p0 = 1 / (1 + a + a * a / (2 * (1 - rho)))
    wq = (a * a / (2 * (1 - rho))) * p0 / (c - a)
    r = _report("stage s : fifo(2); workload { arrive poisson(1.5); }\n"
                "session { set t = now; run s (~exp(1)); observe resp = now - t; }",
                horizon=200_000, warmup=2_000, seed=8)
    _within(r.observes["resp"], wq + 1.0)


def test_infinite_server_mean_number():
    # M/G/∞ (a delay stage): mean number in system = λ·E[S], whatever the law of S
    r = _report("stage d : delay; workload { arrive poisson(4); }\n"
                "session { run d (~uniform(0.5, 1.5)); }\ngauge n = queue(d);",
                horizon=50_000, warmup=100, seed=9)
    g = r.gauges["n"]
    assert abs(g.mean - 4.0) <= WIDEN * g.ci
    assert r.stage("d").mean_number == pytest.approx(g.mean, rel=1e-12)


def test_closed_network_littles_law():
    # closed(n): throughput X and cycle time R satisfy n = X·R exactly in the long run
    n = 5
    r = _report(f"stage s : fifo; stage z : delay; workload {{ arrive closed({n}); }}\n"
                "session { set t = now; run s (~exp(1)); run z (~exp(4)); observe cycle = now - t; }",
                horizon=100_000, warmup=1_000, seed=10)
    throughput = r.stage("s").throughput
    assert r.mean_live == pytest.approx(n)
    assert abs(n / throughput - r.observes["cycle"].mean) <= WIDEN * r.observes["cycle"].ci


def test_md1_pollaczek_khinchine():
    # M/D/1, λ = 0.7, S = 1: Wq = λ·E[S²] / (2(1 − ρ)) = 0.7 / 0.6
    lam = 0.7
    r = _report(f"stage s : fifo; workload {{ arrive poisson({lam}); }}\n"
                "session { set t = now; run s (~det(1)); observe wait = now - t - 1; }",
                horizon=200_000, warmup=2_000, seed=11)
    _within(r.observes["wait"], lam * 1.0 / (2 * (1 - lam)))


@pytest.mark.parametrize("service", ["~exp(1)", "~det(1)", "~h2(1, 4)", "~uniform(0, 2)"])
def test_mg1_ps_is_insensitive(service):
    # M/G/1-PS: E[T] = E[S] / (1 − ρ) whatever the law of S (ρ = 0.6 here: 2.5)
    r = _report("stage s : ps(1); workload { arrive poisson(0.6); }\n"
                f"session {{ set t = now; run s ({service}); observe resp = now - t; }}",
                horizon=200_000, warmup=2_000, seed=12)
    _within(r.observes["resp"], 1 / (1 - 0.6))

"""The engine's raw results and the report's rows, field by field.

The engine builds `sq.results.raw` rows, and `sq.results.report` its rows, with their fields in order,
positionally (a class called with keywords costs ~7x more, paid per row of every run); these
tests read each field by its name and check it holds what that name means, so a field passed
in the wrong place fails here.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import sq
import sq._engine as engine
import sq.results.raw as R
from sq.lower.lowering import lower

# A queue (waits far above services at rho 0.9), a pool that admits and queues, a delay stage,
# an array of stages, an observe, a gauge and a warmup: every row kind with distinct values.
SOURCE = """
pool slots { cap 2; }
stage server : fifo(1);
stage think : delay;
stage pair[2] : fifo(1);
gauge busy_slots = used(slots);
run { horizon 2000; warmup 100; seed 5; }
workload { arrive poisson(0.9); }
session {
  set t0 = now;
  run server (~exp(1));
  observe response = now - t0;
  hold slots (1) { run think (~exp(1)); }
  run pair[1] (0.5);
}
"""


@pytest.fixture(scope="module")
def raw():
    program = sq.compile(source=SOURCE)
    return engine.run(lower(program.to_dict(exact=True)))


def test_run_fields(raw):
    assert (raw.horizon, raw.warmup, raw.seed, raw.end) == (2000.0, 100.0, 5, 2000.0)
    assert raw.events > raw.arrivals > raw.ended > 0
    assert raw.turns == 0
    assert isinstance(raw.live, R.Area) and raw.live.integral > 0
    assert isinstance(raw.middle, R.Middle) and raw.middle.time == 1050.0
    assert 0 < raw.middle.warm_arrivals < raw.arrivals
    assert len(raw.middle.queues) == 1 and 0 < raw.middle.live < raw.live.integral
    assert (raw.iteration_trace, raw.eviction_trace, raw.pool_dump, raw.stopped) == ([], [], [], None)
    assert [o.name for o in raw.observes] == ["response"] and [g.name for g in raw.gauges] == ["busy_slots"]


def test_stage_fields(raw):
    server, think, first, second = raw.stages
    assert [(s.name, s.index, s.kind) for s in raw.stages] == [
        ("server", None, "fifo"), ("think", None, "delay"), ("pair", 0, "fifo"), ("pair", 1, "fifo")]
    # fifo(1): busy while anyone is present; the waiting line makes `number` larger
    assert 0 < server.busy.integral < server.number.integral
    assert server.busy.value in (0.0, 1.0)
    assert server.wait_mean.mean > 2 * server.service_mean.mean > 0   # rho 0.9: waits ~9, services ~1
    assert server.wait_mean.n == server.service_mean.n >= second.service_mean.n > 0 == first.service_mean.n
    assert second.service_mean.mean == pytest.approx(0.5) and second.wait_mean.n == second.service_mean.n
    for s in raw.stages:
        assert all(isinstance(a, R.Area) for a in (s.number, s.busy, s.prefill_only, s.decode_only, s.mixed,
                                                   s.decodes))
        assert all(isinstance(r, R.Running) for r in (s.wait_mean, s.service_mean, s.decode_batch_mean,
                                                      s.decode_step_mean, s.budget_use, s.batch))
        assert (s.prefill_only, s.decode_only, s.mixed, s.decodes) == (R.Area(),) * 4
        assert s.iterations == 0 and s.decode_batch_mean.n == s.batch.n == 0
        assert isinstance(s.itl, R.ItlHistogram) and s.itl.n == 0
        for samples in (s.waits, s.services, s.decode_batches, s.decode_steps, s.itl_gaps):
            assert samples.dtype == np.float64 and len(samples) == 0


def test_pool_fields(raw):
    (slots,) = raw.pools
    assert (slots.name, slots.index) == ("slots", None)
    assert all(isinstance(a, R.Area) for a in (slots.used, slots.cached, slots.queue, slots.holders))
    assert 0 < slots.holders.integral == slots.used.integral    # one unit per holder
    assert slots.cached == R.Area() and slots.queue.integral > 0
    assert slots.admissions >= raw.ended and isinstance(slots.admissions, int)
    assert slots.wait_mean.n > 0 and slots.wait_mean.mean > 0
    assert isinstance(slots.evicted_units, float)
    assert (slots.evicted_entries, slots.evicted_units, slots.preemptions, slots.spills, slots.rejected,
            slots.stuck) == (0, 0.0, 0, 0, 0, 0)


def test_observe_and_gauge_fields(raw):
    (response,) = raw.observes
    n = len(response.samples)
    assert n > 1000
    assert response.samples.dtype == np.float64 and (response.samples > 0).all()
    assert response.times.dtype == np.float64 and len(response.times) == n
    assert (np.diff(response.times) >= 0).all() and response.times[-1] <= raw.end
    assert response.sessions.dtype == np.int32 and len(set(response.sessions.tolist())) == n
    assert response.turns.dtype == np.uint32 and len(response.turns) == n and not response.turns.any()
    assert response.summary is None
    (gauge,) = raw.gauges
    assert gauge.times.dtype == gauge.values.dtype == np.float64 and len(gauge.times) == len(gauge.values) > 1
    assert set(gauge.values.tolist()) <= {0.0, 1.0, 2.0} and gauge.fold is None


def test_each_run_builds_its_own_rows(raw):
    """Rows are new objects per run (only the empty sample arrays and the histogram of a stage
    without tokens, read-only by use, are shared)."""
    again = engine.run(lower(sq.compile(source=SOURCE).to_dict(exact=True)))
    assert again.stages[0] is not raw.stages[0] and again.observes[0].samples is not raw.observes[0].samples
    assert again.stages[0].itl is raw.stages[0].itl
    assert repr(again.stages) == repr(raw.stages) and repr(again.pools) == repr(raw.pools)   # (NaN means)


def test_report_rows_take_each_field_from_its_raw_field():
    """The report builds its rows positionally too: raw fields with distinct values land in the
    report fields of the same meaning."""
    from sq.results.report import Report

    span = 10.0    # warmup 2, end 12

    def area(k):
        return R.Area(k * span, -1.0)

    stage = R.StageRaw("s", 3, "step", number=area(1), busy=area(2), wait_mean=R.Running(7, 3.0),
                       service_mean=R.Running(5, 4.0), iterations=9, prefill_only=area(5), decode_only=area(6),
                       mixed=area(7), decodes=area(8), decode_batch_mean=R.Running(2, 10.0),
                       decode_step_mean=R.Running(2, 11.0), itl=R.ItlHistogram(4, 52.0, 0),
                       budget_use=R.Running(1, 14.0), batch=R.Running(1, 15.0))
    pool = R.PoolRaw("p", 1, used=area(21), cached=area(22), queue=area(23), holders=area(24),
                     wait_mean=R.Running(3, 25.0), admissions=26, evicted_entries=27, evicted_units=28.5,
                     preemptions=29, spills=30, rejected=31, stuck=32)
    raw = R.RawResults(40.0, 12.0, 2.0, 41, events=42, arrivals=43, ended=44, turns=45, live=area(46),
                       stages=[stage], pools=[pool], iteration_trace=["i"], eviction_trace=["e"],
                       pool_dump=["d"], stopped="wall limit")
    r = Report.from_results(raw)
    assert (r.horizon, r.end, r.warmup, r.seed, r.events, r.arrivals, r.ended, r.turns, r.mean_live) == (
        40.0, 12.0, 2.0, 41, 42, 43, 44, 45, 46.0)
    assert (r.iteration_trace, r.eviction_trace, r.pool_dump, r.stopped) == (["i"], ["e"], ["d"], "wall limit")
    assert (r.serq_version, r.program, r.overrides, r.warnings) == ("0.1.2", None, {}, [])
    (s,) = r.stages
    assert (s.name, s.index, s.mean_number, s.utilization, s.completed, s.throughput, s.mean_wait,
            s.mean_service, s.iterations, s.prefill_only, s.decode_only, s.mixed, s.mean_decodes,
            s.mean_decode_batch, s.mean_decode_step, s.mean_itl, s.mean_budget_use, s.mean_batch) == (
        "s", 3, 1.0, 2.0, 5, 0.5, 3.0, 4.0, 9, 5.0, 6.0, 7.0, 8.0, 10.0, 11.0, 13.0, 14.0, 15.0)
    (p,) = r.pools
    assert (p.name, p.index, p.mean_used, p.mean_cached, p.mean_queue, p.mean_holders, p.mean_wait,
            p.admissions, p.evicted_entries, p.evicted_units, p.preemptions, p.spills, p.rejected, p.stuck) == (
        "p", 1, 21.0, 22.0, 23.0, 24.0, 25.0, 26, 27, 28.5, 29, 30, 31, 32)


# ---- run(report=True): the report's rows made by the engine itself, each once ----------------------

def _same(a, b) -> bool:
    """Equal values of equal types: floats bit for bit (a NaN equal to a NaN of the same sign),
    arrays element for element with their dtypes, rows and containers field by field."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b and np.signbit(a) == np.signbit(b) or (a != a and b != b and np.signbit(a) == np.signbit(b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if hasattr(a, "__dict__"):
        return _same(vars(a), vars(b))
    return a == b


# Runs the engine's own rows take (ended by their arrival limit before the middle of the measured
# window), each row kind with distinct values: the queue, pool, delay, arrays, gauge and warm-up of
# SOURCE (the observe's samples before the warm-up cut off); the chat model's step stage (every
# step field, inter-token gaps), two pools and five observes, with a warm-up; and the sweep's M/M/1.
# Then runs that take `_collect` and Report.from_results: past their middle, or without samples.
_OWN_ROWS = [(SOURCE, dict(arrivals=300, horizon=1e6)), (SOURCE, dict(arrivals=40, horizon=1e6, warmup=0, seed=9)),
             ("CHAT", dict(arrivals=60, horizon=1e6, warmup=30)), ("MM1", dict(arrivals=1000, horizon=1e9))]
_RAW_ROWS = [(SOURCE, {}), ("CHAT", dict(horizon=200, warmup=20)), (SOURCE, dict(arrivals=300, horizon=1e6)),
             (SOURCE, dict(arrivals=300, horizon=400))]


_CASES = [(s, k, "all") for s, k in _OWN_ROWS + _RAW_ROWS[:2]] + [(s, k, "none") for s, k in _RAW_ROWS[2:]]


@pytest.mark.parametrize("source, settings, samples", _CASES,
                         ids=[f"{s if s.isupper() else 'queues'}-{k}-{n}" for s, k, n in _CASES])
def test_the_engines_report_is_the_report_of_its_raw_results(source, settings, samples, monkeypatch):
    """run(report=True) gives `Report.from_results` of the same run's raw results, every field of
    every row the same value of the same type (a field swapped or computed another way fails)."""
    from sq.bench import models
    from sq.results.report import Report

    program = sq.compile(source=getattr(models, source, source), horizon=settings.get("horizon"))
    lowered = lower(program.to_dict(exact=True))
    expected = Report.from_results(engine.run(lowered, samples=samples, **settings))
    if samples == "all" and (source, settings) in _OWN_ROWS:     # the engine's own rows: no raw results made into a report
        def no_raw_results(raw):
            raise AssertionError("the engine made raw results")

        monkeypatch.setattr(Report, "from_results", no_raw_results)
    made = engine.run(lowered, samples=samples, report=True, **settings)
    assert isinstance(made, Report) and made.stages and made.observes
    if "arrivals" in settings and settings["horizon"] > 1e5:
        # the run ended before its middle, as a sweep's does
        assert made.end < made.warmup + (made.horizon - made.warmup) / 2 and made.arrivals == settings["arrivals"]
    for name in (f.name for f in dataclasses.fields(Report)):
        assert _same(getattr(made, name), getattr(expected, name)), name
    assert made.json() == expected.json()
    if source == "CHAT" and samples == "all":   # the step fields hold values (not all NaN or 0)
        (step, _) = made.stages
        assert step.iterations > 0 and step.mean_itl > 0 and step.mean_decode_batch > 1 and step.mixed > 0
    if source is SOURCE and settings.get("seed") is None and samples == "all":   # warm-up: a suffix
        (response,) = made.observes.values()
        assert 0 < made.observes["response"].times[0] and response.count < made.arrivals


def test_a_stopped_run_carries_the_engines_report():
    """A run stopped by SIGINT (here a progress callback raising KeyboardInterrupt) raises with
    the engine's Report of what ran as `.report` (with report=True), its raw results as `.raw` else."""
    lowered = lower(sq.compile(source=SOURCE).to_dict(exact=True))

    def stop(now, events, arrivals):
        if now > 50:
            raise KeyboardInterrupt

    from sq.results.report import Report

    for report in (True, False):
        with pytest.raises(KeyboardInterrupt) as stopped:
            engine.run(lowered, progress=stop, horizon=1e7, report=report)
        made = stopped.value.report if report else Report.from_results(stopped.value.raw)
        assert isinstance(made, Report) and made.stopped == "interrupted" and made.end > 50
        assert not hasattr(stopped.value, "raw" if report else "report")

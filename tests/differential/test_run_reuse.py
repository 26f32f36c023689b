"""Many runs of one compiled program (a sweep's), kept, against fresh compiles and pyserq 0.1.2.

A short run's sample arrays are copied into slabs shared by the arrays of many runs
(sq/_engine.pyx, `_slab_array`), and what a run sets up it may keep from the runs before: so each
kept report must still be its own run's after the runs that follow it — also when two threads run
the program at once (the engine lets go of the GIL while it runs) — and equal a fresh compile's and
pyserq's JSON text.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import sq
from tests.helpers.oracle import needs_reference

_engine = pytest.importorskip("sq._engine")

# M/M/1 (a sweep's) with a warm-up, a gauge and two observes: each run hands over six arrays
PROGRAM = """
stage server : fifo(1);
workload { arrive poisson(0.9); }
gauge queue = queue(server);
session { set t0 = now; run server (~exp(1)); observe response = now - t0; observe half = (now - t0) / 2; }
run { warmup 20; }
"""
ARRIVALS = 300
ARRAYS = ("samples", "times", "sessions", "turns")


def _compiled():
    return sq.compile(source=PROGRAM, horizon=1e9, arrivals=ARRIVALS)


def _arrays(report) -> dict:
    """Copies of every array a report holds (what a later run must not change)."""
    out = {f"{name}.{field}": np.array(getattr(o, field), copy=True)
           for name, o in report.observes.items() for field in ARRAYS}
    out.update({f"{name}.{field}": np.array(getattr(g, field), copy=True)
                for name, g in report.gauges.items() for field in ("times", "values")})
    return out


def _same_arrays(report, expected: dict) -> bool:
    got = _arrays(report)
    return got.keys() == expected.keys() and all(
        got[k].dtype == expected[k].dtype and np.array_equal(got[k], expected[k], equal_nan=True) for k in got)


@pytest.fixture(scope="module")
def fresh() -> dict:
    """Seed -> (JSON text, arrays) of a run of a program compiled for that run alone."""
    out = {}
    for seed in range(1, 121):
        report = sq.run(_compiled(), seed=seed)
        out[seed] = (report.json(), _arrays(report))
    return out


def test_kept_runs_of_one_program_equal_fresh_compiles(fresh):
    program = _compiled()
    kept = [sq.run(program, seed=seed) for seed in range(1, 121)]    # several runs to a slab
    for seed, report in enumerate(kept, 1):
        text, arrays = fresh[seed]
        assert report.json() == text, seed
        assert _same_arrays(report, arrays), seed


def test_kept_arrays_are_their_own(fresh):
    program = _compiled()
    kept = [sq.run(program, seed=seed) for seed in range(1, 61)]
    # no two arrays of any runs share memory (a slab hands each piece out once)
    every = [getattr(o, field) for r in kept for o in r.observes.values() for field in ARRAYS]
    every += [getattr(g, field) for r in kept for g in r.gauges.values() for field in ("times", "values")]
    every = [a for a in every if len(a)]
    starts = sorted((a.__array_interface__["data"][0], a.nbytes) for a in every)
    assert all(start + nbytes <= after for (start, nbytes), (after, _) in zip(starts, starts[1:]))
    # writing into one run's arrays leaves the others as they were, and they stay writeable
    kept[10].observes["response"].samples[:] = -1.0
    kept[10].observes["response"].turns[:] = 7
    for seed in (10, 12):
        assert _same_arrays(kept[seed - 1], fresh[seed][1])
    # a report kept when the runs around it are dropped keeps its arrays (its slab lives on)
    survivor = kept[29]
    del kept, every, starts
    for seed in range(61, 121):       # later runs take the memory the dropped ones gave back
        sq.run(program, seed=seed)
    assert _same_arrays(survivor, fresh[30][1]) and survivor.json() == fresh[30][0]


def test_two_threads_running_one_program_at_once(fresh):
    program = _compiled()
    kept: dict[int, object] = {}
    errors = []

    def sweep(seeds):
        try:
            for seed in seeds:
                kept[seed] = sq.run(program, seed=seed)
        except BaseException as e:      # (reported by the test, not lost in the thread)
            errors.append(e)

    threads = [threading.Thread(target=sweep, args=(range(first, 121, 2),)) for first in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and sorted(kept) == list(range(1, 121))
    for seed, report in kept.items():
        assert report.json() == fresh[seed][0], seed
        assert _same_arrays(report, fresh[seed][1]), seed


def test_a_long_run_hands_over_its_own_buffers():
    # past the slab's largest piece (256 KiB: 32,768 doubles) a run's arrays are its own buffers
    report = sq.run(sq.compile(source=PROGRAM, horizon=1e9, arrivals=40_000), seed=3)
    samples = report.observes["response"].samples
    assert len(samples) > 32_768 and samples.base is not None
    again = sq.run(sq.compile(source=PROGRAM, horizon=1e9, arrivals=40_000), seed=3)
    assert report.json() == again.json() and _same_arrays(report, _arrays(again))


@needs_reference
def test_kept_runs_equal_pyserq():
    import json

    import pyserq

    program = _compiled()
    kept = [sq.run(program, seed=seed) for seed in range(1, 41)]
    reference = pyserq.compile(source=PROGRAM, horizon=1e9, arrivals=ARRIVALS)
    ir = json.loads(reference.to_json())
    for seed, report in enumerate(kept, 1):
        ir["seed"] = seed
        assert report.json() == pyserq.run(pyserq.Program.from_json(json.dumps(ir))).json(), seed


# ---- the State and its families' tables, kept per thread from run to run ---------------------
# (sq/_engine.pyx, _Kept; sq/engine/_arrays.pxi, spare_keep / spare_take). A new thread starts
# with nothing kept, so a run on one is a fresh one to compare the kept runs with.

# 2,000 sessions alive at once: their tables grow to 2,048 slots (kept: under SPARE_BYTES)
MANY = """
stage server : fifo(1);
workload { arrive batch(2000); }
session { set t0 = now; run server (~exp(1)); observe response = now - t0; }
"""
# 9,000 at once: 16,384 slots, over SPARE_BYTES (given back at the run's end)
HUGE = MANY.replace("batch(2000)", "batch(9000)")
# holds: the session tables' layout differs (hold frames, pool rows), leases and a pool queue
HOLDS = """
pool kv { cap 10; }
stage d : delay;
workload { arrive batch(40); }
session { hold kv (6) { observe u = used(kv); observe q = queued(kv); run d (~exp(1)); } observe t = now; }
"""
# a run-time error half-way (an index past its count, once some sessions ran)
FAILS = """
stage server : fifo(1);
workload { arrive poisson(0.9); }
session { run server (~exp(1)); run server[serial / 50] (1); observe response = now; }
"""


def _on_new_thread(work):
    """`work()` on a thread of its own (nothing kept from earlier runs): its value or its exception."""
    out = {}

    def call():
        try:
            out["value"] = work()
        except BaseException as e:      # (handed back, not lost in the thread)
            out["error"] = e

    thread = threading.Thread(target=call)
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def _compile_args(source):
    return {"horizon": 1e9, "arrivals": ARRIVALS if "poisson" in source else None}


def _text(source, seed, **kw):
    return sq.run(sq.compile(source=source, **_compile_args(source)), seed=seed, **kw).json()


def test_what_a_thread_keeps_is_bounded():
    def kept_after(*sources):
        for source in sources:
            _text(source, 1)
        return _engine.kept_tables()

    # a run keeps its families' blocks; a later run's larger ones replace them; a block over
    # SPARE_BYTES is given back (that run grew out of the small kept one: nothing is kept)
    small = _on_new_thread(lambda: kept_after(PROGRAM))
    assert small and all(0 < cap * slot <= 1 << 20 for cap, slot in small)
    many = _on_new_thread(lambda: kept_after(PROGRAM, MANY))
    assert max(cap for cap, _ in many) == 2048
    huge = _on_new_thread(lambda: kept_after(PROGRAM, HUGE))
    assert all(cap < 16384 and cap * slot <= 1 << 20 for cap, slot in huge)
    assert _on_new_thread(_engine.kept_tables) == []


def test_a_thread_keeps_a_few_small_sample_buffers():
    # the buffers of a run's sample arrays copied into the slab (two observes' three arrays and
    # a gauge's two: its turns are all 0, stored nowhere) are kept for the next run's observes
    # to start in; at most 8, each at most 64 KiB; a new thread keeps none
    assert _on_new_thread(_engine.kept_samples) == []
    kept = _on_new_thread(lambda: [_text(PROGRAM, 1), _engine.kept_samples()][1])
    assert len(kept) == 8 and all(0 < size <= 1 << 16 for size in kept)
    # a long run's arrays are handed over with their buffers: what it kept is the small rest
    kept = _on_new_thread(lambda: [_text(PROGRAM, 1), _text(HUGE, 1), _engine.kept_samples()][2])
    assert len(kept) <= 8 and all(0 < size <= 1 << 16 for size in kept)


def test_a_big_run_then_small_ones_equal_fresh_runs():
    fresh = _on_new_thread(lambda: [_text(PROGRAM, seed) for seed in (1, 2)])
    for big in (MANY, HUGE):
        _text(big, 5)
        assert [_text(PROGRAM, seed) for seed in (1, 2)] == fresh
    assert _text(MANY, 3) == _on_new_thread(lambda: _text(MANY, 3))


def test_a_longer_run_of_the_same_plan_then_short_ones_equal_fresh_runs():
    # a run of the plan the thread ran last is set up in that run's tables (plan_table): each must
    # be as a fresh run's, zero where calloc gave zero, after a longer run (counts, areas, queue
    # positions, row sets, pools' holds all past a short run's) of the same compiled program
    for source, short in ((MANY, 40.0), (HOLDS, 10.0)):
        program = sq.compile(source=source, **_compile_args(source))
        fresh = _on_new_thread(lambda: [sq.run(program, seed=seed, horizon=short).json() for seed in (1, 2)])
        for longer in (None, 10 * short):
            sq.run(program, seed=9, horizon=longer)
            kept = _engine.kept_plan_tables()
            assert len(kept) > 20 and all(size > 0 for size in kept)
            assert [sq.run(program, seed=seed, horizon=short).json() for seed in (1, 2)] == fresh
            assert _engine.kept_plan_tables() == kept      # the same tables, not made again
    # another plan's run makes its own; a new thread keeps none
    _text(PROGRAM, 1)
    assert _engine.kept_plan_tables() != kept
    assert _on_new_thread(_engine.kept_plan_tables) == []


def test_a_run_stopped_by_an_error_then_good_ones():
    _text(MANY, 1)
    with pytest.raises(sq.SqError) as first:
        _text(FAILS, 1)
    assert "stage index" in str(first.value)
    fresh = _on_new_thread(lambda: [_text(PROGRAM, 4), _text(HOLDS, 4)])
    assert [_text(PROGRAM, 4), _text(HOLDS, 4)] == fresh
    # the memory bound stops a run where a fresh one stops (its tables are charged as they grow,
    # also in a block kept from before), with the same text
    for source in (MANY, PROGRAM):
        with pytest.raises(sq.SqError) as kept:
            _text(source, 2, max_memory=40_000)
        with pytest.raises(sq.SqError) as new:
            _on_new_thread(lambda: _text(source, 2, max_memory=40_000))
        assert str(kept.value) == str(new.value) and "max_memory" in str(kept.value)


def test_two_programs_alternating_and_two_threads_at_once():
    seeds = range(1, 7)
    fresh = _on_new_thread(lambda: {(p, s): _on_new_thread(lambda: _text(p, s)) for p in (PROGRAM, HOLDS) for s in seeds})
    assert {(p, s): _text(p, s) for s in seeds for p in (PROGRAM, HOLDS)} == fresh
    got, errors = {}, []

    def sweep(source):
        try:
            for seed in seeds:
                got[source, seed] = _text(source, seed)
                got[MANY, seed] = _text(MANY, seed) if seed == 3 else None
        except BaseException as e:      # (reported by the test, not lost in the thread)
            errors.append(e)

    threads = [threading.Thread(target=sweep, args=(source,)) for source in (PROGRAM, HOLDS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert {k: v for k, v in got.items() if k[0] != MANY} == fresh


@needs_reference
def test_kept_runs_of_several_programs_equal_pyserq():
    import pyserq

    for source in (PROGRAM, MANY, HOLDS, PROGRAM, HUGE, HOLDS, PROGRAM):
        reference = pyserq.compile(source=source, seed=7, **_compile_args(source))
        assert _text(source, 7) == pyserq.run(reference).json(), source


def test_a_program_changed_after_its_runs_runs_as_changed():
    # sq.run reads the arrays a Program kept from its first run (Program.cached's, without a
    # frame per run); setting a field of the Program drops them, and the next run runs the
    # program as it is then: as a fresh compile of it, not its kept arrays
    program = _compiled()
    before = sq.run(program, seed=5).json()
    program.horizon = 700.0
    program.arrivals = None
    after = sq.run(program, seed=5)
    assert after.horizon == 700.0 and after.json() != before
    assert after.json() == sq.run(sq.compile(source=PROGRAM, horizon=700.0), seed=5).json()
    assert sq.run(program, seed=5).json() == after.json()

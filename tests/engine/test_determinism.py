"""The same program and seed give the same report, byte for byte: run after run, and in threads at once."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

import sq

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PROGRAMS = [
    ("single-turn/mmc.sq", 2000),
    ("single-turn/vllm_single_turn.sq", 60),
    ("multi-turn/vllm.sq", 120),
]


@pytest.mark.parametrize("rel, horizon", PROGRAMS, ids=[p for p, _ in PROGRAMS])
def test_repeated_runs_give_identical_json(rel, horizon):
    program = sq.compile(EXAMPLES / rel, horizon=horizon, warmup=0, seed=11)
    first = sq.run(program).to_json()
    assert sq.run(program).to_json() == first
    # A second compile of the same file is the same program.
    assert sq.run(sq.compile(EXAMPLES / rel, horizon=horizon, warmup=0, seed=11)).to_json() == first


def test_different_seeds_differ():
    program = sq.compile(EXAMPLES / "single-turn/mmc.sq", horizon=500, warmup=0)
    assert sq.run(program, seed=1).to_json() != sq.run(program, seed=2).to_json()


@pytest.mark.parametrize("rel, horizon", PROGRAMS, ids=[p for p, _ in PROGRAMS])
def test_two_threads_at_once_give_the_sequential_answer(rel, horizon):
    program = sq.compile(EXAMPLES / rel, horizon=horizon, warmup=0, seed=5)
    expected = sq.run(program).to_json()
    results: dict[int, str] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def work(i):
        try:
            start.wait()
            results[i] = sq.run(program).to_json()
        except BaseException as e:  # surfaced below: a thread's exception would be lost
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert results == {0: expected, 1: expected}


def test_run_releases_the_gil():
    """While one thread runs a long simulation, the other keeps getting the interpreter.

    The main thread ticks every millisecond; if the event loop held the GIL,
    the longest pause between ticks would be about as long as the whole loop.
    """
    import time

    program = sq.compile(EXAMPLES / "single-turn/mmc.sq", horizon=200_000, warmup=0)
    done = threading.Event()
    loop_time = []

    def runner():
        t0 = time.perf_counter()
        sq.run(program)
        loop_time.append(time.perf_counter() - t0)
        done.set()

    t = threading.Thread(target=runner)
    last, longest = time.perf_counter(), 0.0
    t.start()
    while not done.is_set():
        done.wait(0.001)
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    t.join()
    assert longest < 0.5 * loop_time[0], (longest, loop_time[0])

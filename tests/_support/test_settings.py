"""One rule per run setting (sq._support.settings): the API, the studies and the CLI refuse the same
values, in the same words; the engine trusts what reaches it."""
from __future__ import annotations

import argparse
import pathlib

import numpy as np
import pytest

import sq
from sq.cli import args as cli_args
from sq._support import settings
from sq.study import sweep as study
from sq.errors import SqError

MM1 = str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "single-turn" / "mmc.sq")


@pytest.mark.parametrize("value, ok", [(0, True), (2**64 - 1, True), (np.uint64(7), True), (2**64, False),
                                       (-1, False), (True, False), (1.0, False), ("3", False)])
def test_one_seed_rule_for_every_door(value, ok):
    assert settings.is_u64(value) is ok
    program = sq.compile(MM1, horizon=1500)
    doors = [lambda: sq.run(program, seed=value), lambda: study.seed_list([value]),
             lambda: sq.compile(MM1, seed=value)]
    if isinstance(value, int) and not isinstance(value, bool):   # the flag's text
        doors.append(lambda: cli_args.seed(str(int(value))))
    for door in doors:
        if ok:
            door()
        else:
            with pytest.raises((SqError, argparse.ArgumentTypeError)) as info:
                door()
            assert "from 0 to 2^64-1" in str(info.value)


def test_a_given_seed_reaches_the_engine_as_the_same_run():
    program = sq.compile(MM1, horizon=1500)
    assert sq.run(program, seed=np.uint64(5)).to_json() == sq.run(program, seed=5).to_json()


def test_a_closed_workload_refuses_an_arrival_limit_from_either_place():
    closed = str(pathlib.Path(MM1).parent.parent / "multi-turn" / "closed.sq")
    for run in (lambda: sq.run(sq.compile(closed, arrivals=5)), lambda: sq.run(sq.compile(closed), arrivals=5)):
        with pytest.raises(SqError, match="arrivals applies only to poisson or renewal"):
            run()


@pytest.mark.parametrize("arrive, is_open", [("poisson(1)", True), ("renewal(2)", True), ("batch(3)", False),
                                             ("closed(2)", False)])
def test_open_arrivals_one_answer_for_the_ir_and_the_lowered(arrive, is_open):
    """An arrival limit is refused the same way whether the settings go onto the IR (studies)
    or onto the lowered program (sq.run)."""
    from sq.lower.lowering import lower

    program = sq.compile(source=f"stage s : delay; run {{ horizon 9; }} workload {{ arrive {arrive}; }} "
                                "session { run s (1); }")
    ir = program.to_dict(exact=True)
    assert lower(ir).open_arrivals is settings.open_arrivals(ir["arrival"]) is is_open
    for door in (lambda: settings.with_settings(ir, seed=None, horizon=None, warmup=None, arrivals=2),
                 lambda: sq.run(program, arrivals=2)):
        if is_open:
            door()
        else:
            with pytest.raises(SqError, match=settings.ARRIVALS_NEED_OPEN):
                door()


@pytest.mark.parametrize("horizon", [-5, 0, float("inf")])
def test_a_bad_horizon_is_said_to_be_the_horizon_at_every_door(horizon):
    """Not `warmup must be below the horizon` alone: a help line under 0.1.2's words says
    the horizon is what is wrong."""
    program = sq.compile(MM1, horizon=1500)
    doors = [lambda: sq.run(program, horizon=horizon, warmup=0), lambda: sq.compile(MM1, horizon=horizon, warmup=0),
             lambda: sq.compile(MM1, horizon=horizon),     # against the program's own warmup
             lambda: sq.compile(source=f"run {{ horizon {horizon}; }} workload {{ arrive batch(1); }}")]
    for door in doors:
        with pytest.raises(SqError) as info:
            door()
        assert f"\nhelp: the horizon must be a positive finite time, found {horizon:g}" in str(info.value)


def test_numpy_numbers_are_numbers_everywhere_a_number_is_taken():
    """`for c in np.arange(4, 12): sq.compile(..., sets={"c": c})`: numpy integers and floats
    pass as Python's do (np.int64 was refused as "not a number"), with the same runs."""
    assert settings.is_number(np.int64(4)) and settings.is_number(np.float32(0.5))
    assert not settings.is_number(True) and not settings.is_number("4")
    plain = sq.compile(MM1, sets={"c": 9, "lam": 6.5}, horizon=300, warmup=10)
    numpy = sq.compile(MM1, sets={"c": np.int64(9), "lam": np.float64(6.5)}, horizon=np.int64(300),
                       warmup=np.int32(10))
    assert numpy.to_json() == plain.to_json()
    for c in np.arange(8, 10):
        sq.compile(MM1, sets={"c": c})
    run = sq.run(numpy, seed=2, horizon=np.int64(200), warmup=np.int16(5), arrivals=np.int64(50),
                 max_memory=np.int64(2**30), wall_limit=np.int64(60))
    assert run.to_json() == sq.run(plain, seed=2, horizon=200, warmup=5, arrivals=50).to_json()
    assert run.overrides == {"c": 9, "lam": 6.5} and type(run.overrides["c"]) is int


@pytest.mark.parametrize("arrivals", ["10", True, float("nan")])
def test_arrivals_not_a_number_is_said_to_be_a_whole_number(arrivals):
    program = sq.compile(MM1, horizon=1500)
    with pytest.raises(SqError, match="arrivals must be a whole number, found"):
        sq.run(program, arrivals=arrivals)


def test_a_sweeps_later_seeds_are_checked_as_its_first():
    # sq.run checks a program's own window and limit with its first seed, then only the seeds
    # (sq.engine.run._seed_checked): each later one is still refused or taken as the first was
    program = sq.compile(MM1, horizon=1500)
    assert sq.run(program, seed=1).seed == 1
    for bad in (-1, 2**64, True):
        with pytest.raises(SqError, match="from 0 to 2.64-1"):
            sq.run(program, seed=bad)
    assert sq.run(program, seed=2**64 - 1).seed == 2**64 - 1
    assert sq.run(program, seed=np.uint64(3)).to_json() == sq.run(program, seed=3).to_json()


def test_run_takes_its_settings_by_name_and_refuses_others():
    # sq.run takes its settings as **settings (a plain run's call looks up no default): given at
    # their defaults they are the plain run; a name run does not take is refused as before, also
    # run_lowered's own `started`; the arrays a first run kept serve a run with settings too
    program = sq.compile(MM1, horizon=1500)
    plain = sq.run(program, seed=4).to_json()
    assert sq.run(program, seed=4, horizon=None, samples="all", progress=None).to_json() == plain
    assert sq.run(program, seed=4, horizon=1500.0).to_json() == plain
    assert sq.run(program, seed=4, horizon=1400).horizon == 1400
    for name in ("horizn", "started", "report"):
        with pytest.raises(TypeError, match=f"run\\(\\) got an unexpected keyword argument '{name}'"):
            sq.run(program, seed=4, **{name: 1})
    with pytest.raises(TypeError):
        sq.run(program, 4)


def test_run_shows_its_settings_in_its_signature():
    # help(sq.run) and editors read its signature: the program, then each of run_lowered's
    # keywords with its default (but `started`, which run sets itself)
    import inspect

    from sq.engine.run import run_lowered

    shown = inspect.signature(sq.run).parameters
    want = {name: p.default for name, p in inspect.signature(run_lowered).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY and name != "started"}
    assert list(shown)[0] == "program"
    assert {name: p.default for name, p in list(shown.items())[1:]} == want
    assert {"seed", "horizon", "samples", "timeline_window"} <= set(want)

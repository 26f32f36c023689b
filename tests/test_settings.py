"""One rule per run setting (sq.settings): the API, the studies and the CLI refuse the same
values, in the same words; the engine trusts what reaches it."""
from __future__ import annotations

import argparse
import pathlib

import numpy as np
import pytest

import sq
from sq import cli_args, settings, study
from sq.errors import SqError

MM1 = str(pathlib.Path(__file__).resolve().parent.parent / "examples" / "single-turn" / "mmc.sq")


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
    from sq.lower import lower

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
             lambda: sq.compile(source=f"run {{ horizon {horizon}; }} workload {{ arrive batch(1); }}")]
    for door in doors:
        with pytest.raises(SqError) as info:
            door()
        assert f"\nhelp: the horizon must be a positive finite time, found {horizon:g}" in str(info.value)

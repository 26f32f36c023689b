"""The replay examples (examples/replay/*.sq that use sq's extensions): each runs, replays every
record its window holds, and its trace's data is there with a licence and a README; the
time-varying one (diurnal.sq) arrives as its rate's integral says."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

import sq
from tests.helpers import golden

PROGRAMS = golden.extension_programs()
REPLAYS = [p for p in PROGRAMS if "Replay" in sq.compile(p).arrival]
REPLAY = golden.EXAMPLES / "replay"


def test_the_replay_examples_are_there():
    names = {p.name for p in PROGRAMS}
    assert {"azure_replay.sq", "burstgpt_replay.sq", "mooncake_prefix.sq", "vllm_measured.sq"} <= names
    for folder in ("azure-2023", "mooncake", "vllm-run"):
        files = {p.name for p in (REPLAY / folder).iterdir()}
        assert "README.md" in files and any(f.startswith("LICENSE") for f in files), folder


@pytest.mark.parametrize("path", REPLAYS, ids=lambda p: p.name)
def test_example_replays_its_trace(path):
    program = sq.compile(path)
    horizon = min(program.horizon, 200.0)
    report = sq.run(program, horizon=horizon, warmup=0)
    trace = sq.read_trace(Path(program.trace_base) / program.trace)
    k = program.arrival["Replay"]["speed"]
    sessions = trace.corpus().arrival
    # every session whose (compressed) arrival falls in the run arrives, and no other
    assert report.arrivals == int((sessions / k <= horizon).sum()) > 0
    assert report.to_dict()["ended"] > 0


def test_diurnal_example_arrives_at_its_rate():
    # r(t) = 5 + 3 sin(2π t / P): Λ(H) = 5H + 3P/(2π) (1 - cos(2π H / P)) arrivals on average,
    # a Poisson count (4 standard deviations)
    program = sq.compile(REPLAY / "diurnal.sq")
    assert set(program.arrival) == {"PoissonNow"}
    horizon, period = 600.0, 3600.0
    report = sq.run(program, horizon=horizon, warmup=0)
    want = 5 * horizon + 3 * period / (2 * math.pi) * (1 - math.cos(2 * math.pi * horizon / period))
    assert abs(report.arrivals - want) < 4 * math.sqrt(want)


def test_readme_lists_them():
    readme = (golden.EXAMPLES / "README.md").read_text()
    for path in PROGRAMS:
        assert f"python -m sq run examples/{path.relative_to(golden.EXAMPLES).as_posix()}" in readme

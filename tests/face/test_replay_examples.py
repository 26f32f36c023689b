"""The replay examples (examples/replay/*.sq that use sq's extensions): each runs, replays every
record its window holds, and its trace's data is there with a licence and a README."""
from __future__ import annotations

from pathlib import Path

import pytest

import sq
from tests.helpers import golden

PROGRAMS = golden.extension_programs()
REPLAY = golden.EXAMPLES / "replay"


def test_the_replay_examples_are_there():
    names = {p.name for p in PROGRAMS}
    assert {"azure_replay.sq", "burstgpt_replay.sq", "mooncake_prefix.sq", "vllm_measured.sq"} <= names
    for folder in ("azure-2023", "mooncake", "vllm-run"):
        files = {p.name for p in (REPLAY / folder).iterdir()}
        assert "README.md" in files and any(f.startswith("LICENSE") for f in files), folder


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
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


def test_readme_lists_them():
    readme = (golden.EXAMPLES / "README.md").read_text()
    for path in PROGRAMS:
        assert f"python -m sq run examples/{path.relative_to(golden.EXAMPLES).as_posix()}" in readme

"""The eviction trace and pool dump against pyserq 0.1.2's SERQ_TRACE_EVICT / SERQ_DUMP_POOLS.

Neither is part of the semantics (05 intro), but they are how a user checks which prefix
went and what a pool held at the end, so they must say what 0.1.2 says: EVICT lines
exactly; POOL lines exactly but for the sums per status, which 0.1.2 takes in its hash
map's order (the last digits of a fractional sum change between its own runs), so those
compare within 1e-9.
"""
from __future__ import annotations

import math
import os
import re
import subprocess
import sys

import pytest

from tests.helpers import gen_programs
import sq
from tests.helpers.churn_programs import PROGRAMS as CHURN

pytest.importorskip("pyserq")

REFERENCE = r"""
import sys, pyserq
pyserq.run(pyserq.compile(source=sys.stdin.read(), seed=int(sys.argv[1])))
"""
NUMBER = re.compile(r"-?[0-9][0-9.e+-]*|-?inf|NaN")


def reference_lines(source: str, seed: int) -> list[str] | None:
    """0.1.2's debug lines, or None when its run fails."""
    env = dict(os.environ, SERQ_TRACE_EVICT="1", SERQ_DUMP_POOLS="1")
    out = subprocess.run([sys.executable, "-c", REFERENCE, str(seed)], input=source, capture_output=True,
                         text=True, env=env, timeout=60)
    if "panicked" in out.stderr:
        pytest.skip("0.1.2 panics on this program (04 §4.5.5): nothing to compare with")
    if out.returncode != 0:
        assert "Error" in out.stderr, out.stderr[-2000:]
        return None
    return [line for line in out.stderr.splitlines() if line.startswith(("EVICT ", "POOL "))]


def same_dump_line(want: str, got: str) -> bool:
    """Equal text around the numbers; counts equal, sums within 1e-9 relative."""
    if NUMBER.sub("#", want) != NUMBER.sub("#", got):
        return False
    for a, b in zip(NUMBER.findall(want), NUMBER.findall(got)):
        x, y = float(a), float(b)
        if not (x == y or (math.isnan(x) and math.isnan(y)) or abs(x - y) <= 1e-9 * max(abs(x), abs(y))):
            return False
    return True


def check(source: str, seed: int):
    want = reference_lines(source, seed)
    if want is None:
        # e.g. a finite workload the horizon cannot drain: sq must refuse the run too
        with pytest.raises(sq.SqError):
            sq.run(sq.compile(source=source, seed=seed), trace_evictions=True, dump_pools=True)
        return []
    report = sq.run(sq.compile(source=source, seed=seed), trace_evictions=True, dump_pools=True)
    assert report.eviction_trace == [line for line in want if line.startswith("EVICT ")]
    dump = [line for line in want if line.startswith("POOL ")]
    assert len(report.pool_dump) == len(dump)
    for w, g in zip(dump, report.pool_dump):
        assert same_dump_line(w, g), f"pyserq 0.1.2: {w}\nsq:          {g}"
    return want


@pytest.mark.parametrize("name", sorted(CHURN))
def test_churn_programs_evict_and_end_as_in_the_reference(name):
    lines = check(CHURN[name] + "\nrun { horizon 120; }\n", seed=1)
    assert any(line.startswith("POOL ") for line in lines)


@pytest.mark.parametrize("index", range(0, 40))
def test_generated_step_programs_evict_and_end_as_in_the_reference(index, tmp_path):
    case = gen_programs.generate(index, "step")
    check(case.materialise(tmp_path), seed=2)


def test_dump_comparison_notices_a_changed_count():
    line = 'POOL kv used 0 cached 16 by status {"gone": (1, 16.0)}'
    assert same_dump_line(line, line.replace("16.0)", "16.000000000000004)"))
    assert not same_dump_line(line, line.replace("(1,", "(2,"))
    assert not same_dump_line(line, line.replace("gone", "InStage"))

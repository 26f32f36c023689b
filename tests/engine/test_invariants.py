"""Debug mode: `sq.run(..., check_invariants=True)` re-checks the engine's bookkeeping after every event."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import sq
from sq import _engine
from sq.lower.lowering import lower

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*/*.sq"))

POOLED = """
pool kv { cap 100; block 16; preempt lifo; }
stage e : step { budget 64; chunk 32; cost 1 + tokens / 100; memory kv; }
workload { arrive poisson(0.5); }
session { hold kv (20) { run e prefill (40) growing kv; run e decode (30) growing kv; } cache (100); }
run { horizon 200; }
"""


@pytest.mark.parametrize("path", EXAMPLES, ids=[f"{p.parent.name}/{p.name}" for p in EXAMPLES])
def test_examples_keep_every_invariant(path):
    report = sq.run(sq.compile(path, horizon=60, warmup=0), check_invariants=True)
    assert report.events > 0


def test_debug_mode_does_not_change_the_report():
    program = sq.compile(source=POOLED)
    assert sq.run(program, check_invariants=True).to_json() == sq.run(program).to_json()


FIFO = """
stage f : fifo(1);
workload { arrive batch(2); }
session { run f (1); }
run { horizon 20; }
"""


def _lowered_with_servers(servers):
    lowered = lower(sq.compile(source=FIFO).to_dict(exact=True))
    lowered.stage_servers = np.array([servers], dtype=np.int32)
    return lowered


def test_a_broken_invariant_is_reported_with_where_and_when():
    # The engine trusts its tables; a fifo stage of -1 servers (no program says so: the linker
    # wants a positive count) has more servers busy than it has from the first instant, which
    # only the debug mode looks at. (A pool's cap below 0 is a program's: 0.1.2 runs it, and its
    # pool admits nothing: test_step_infinite_values.py.)
    with pytest.raises(sq.SqError) as err:
        _engine.run(_lowered_with_servers(-1), check_invariants=True)
    text = str(err.value)
    assert "engine invariant broken" in text and "stage row 0" in text and "disagrees with its servers" in text
    assert "time 0" in text
    # Without the debug mode the same tables run (wrongly, but without a check).
    _engine.run(_lowered_with_servers(-1))


def test_a_hold_naming_fewer_pools_than_the_widest_is_checked_on_its_own_pools():
    # The frame of a one-pool hold has room for the widest hold's pools; the checker once read
    # those never-written entries, so repeated runs in one process failed at random.
    program = sq.compile(source="""
pool kv { } pool host { } stage d : delay;
workload { arrive batch(2); }
session { loop { hold kv (3) { run d (0.01); } hold kv (3), host (1) { observe u = 1; } } }
run { horizon 1; }
""")
    for _ in range(8):
        assert sq.run(program, check_invariants=True).observes["u"].count > 0

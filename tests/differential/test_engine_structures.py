"""The engine's indexed structures against pyserq 0.1.2 under churn.

The lru heap of cached prefixes, the holders list with stale entries, residents kept in
admission order (found by binary search) and the lifo victim taken from the end of the
residents replace linear scans; each program below drives one of them hard (thousands of
evictions, spills, preemptions and re-admissions) and must give pyserq's report and
iteration trace for several seeds, with `check_invariants=True`, which re-checks the heap,
the holders counts and the residents' order after every event.
"""
from __future__ import annotations

import pytest

from tests.helpers.churn_programs import PROGRAMS
from tests.helpers.diff_runner import Reference, compare

pytest.importorskip("pyserq")

SEEDS = (1, 2, 3)
HORIZON = 300


@pytest.fixture(scope="module")
def reference():
    ref = Reference(timeout=60.0)
    yield ref
    ref.close()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_structures_under_churn_run_as_in_the_reference(reference, name, seed):
    source = PROGRAMS[name] + f"\nrun {{ horizon {HORIZON}; seed {seed}; }}\n"
    out = compare(reference, source, seed, iterations=True)
    assert out.status == "agree", out.describe()

"""Shared test setup: the `pyserq` marker, Hypothesis's profile, and running from the repository root.

tests/ is a package (`tests.helpers.oracle`, `tests.engine.test_random`, ...): pytest's default
import mode puts the repository root, the first folder above without an `__init__.py`, on
sys.path, so the helpers import as `from tests.helpers import oracle` and nothing is inserted here.

Corpus programs with a relative `trace=` override name their file from the
repository root, as `compile(trace=…)` resolves it against the current
directory; tests that compile them ask both compilers from there
(the `at_repo_root` fixture).
"""
from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DIFFERENTIAL = TESTS / "differential"

# Hypothesis keeps its example database and, after a failure, patch files under
# ./.hypothesis; keep them out of the working tree.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "sq-hypothesis"))

# CI runs the suite on 2 busy cores: no property test may fail because an example, or the
# drawing of examples, took long on the wall clock (Hypothesis's default 200 ms deadline and
# its too_slow health check). A test's own @settings starts from this profile.
# In CI (CI set, as CI services do) the examples are derived from each test's name, not drawn
# afresh: a run's result depends on the commit alone, and a failure found there is found again by
# anyone who runs the same command with CI set. Elsewhere they are drawn anew each run, to explore.
settings.register_profile("sq", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                          derandomize=bool(os.environ.get("CI")))
settings.load_profile("sq")


@pytest.hookimpl(tryfirst=True)     # before `-m` deselects by marker
def pytest_collection_modifyitems(items):
    """Mark `pyserq` what needs the reference: tests/differential/ (agreement with 0.1.2, run live
    or from its recorded outputs) and any test elsewhere that asks for the `pyserq` fixture
    (`oracle.needs_reference` marks its own), so `-m "not pyserq"` runs the suite without it."""
    for item in items:
        if item.path.is_relative_to(DIFFERENTIAL) or "pyserq" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.pyserq)


@pytest.fixture
def at_repo_root(monkeypatch):
    """Run the test from the repository root (modules opt in with `pytest.mark.usefixtures`)."""
    monkeypatch.chdir(ROOT)


@pytest.fixture(scope="session")
def pyserq():
    """pyserq 0.1.2 for a differential test; without it the test skips, saying so."""
    from tests.helpers.oracle import REFERENCE_MISSING

    return pytest.importorskip("pyserq", reason=REFERENCE_MISSING, exc_type=ImportError)


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

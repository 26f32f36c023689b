"""The `coinc` family (tests/helpers/gen_coincidences.py) really puts events at one instant.

Each program runs in sq with a timeline (the Chrome trace-event file: every job's service, every
step iteration, every pool's counters, every session) and the instants where two or more events
fall (a job's or an iteration's end, an arrival) are counted by what meets there. A family whose
times are continuous draws almost never does this; the differential samples of
tests/differential/test_random_programs.py rely on this one to reach the engine's order of same-instant work.
"""
from __future__ import annotations

import collections
import json

import pytest

from tests.helpers import gen_programs
from tests.helpers import oracle

oracle.require_module("sq._engine", "sq's engine is not built")
import sq  # noqa: E402

PROGRAMS = 40
TIE = 0.1           # timeline times are in microseconds, written to 1e-3: one instant within this


def meetings(source: str, folder) -> set[str]:
    """What met at one instant somewhere in the program's run (seed 1), by kind."""
    path = folder / "timeline.json"
    sq.run(sq.compile(source=source, seed=1), timeline=str(path))
    data = json.loads(path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    at = collections.defaultdict(list)
    for e in events:
        if e["ph"] == "X" and e.get("cat") in ("service", "iteration"):
            at[round((e["ts"] + e["dur"]) / TIE)].append(("event", e["cat"]))
            if e["cat"] == "iteration":
                at[round(e["ts"] / TIE)].append(("start", "iteration"))
        elif e["ph"] == "X" and e.get("cat") == "session" and e["ts"] > 0:
            at[round(e["ts"] / TIE)].append(("event", "arrival"))
        elif e["ph"] == "C" and e["pid"] == 2:            # pid 2: the pools' counters
            at[round(e["ts"] / TIE)].append(("pool", "pool"))
    kinds = set()
    for xs in at.values():
        happened = [what for kind, what in xs if kind == "event"]
        if len(happened) < 2:
            continue
        kinds.add("two events")
        if "service" in happened and ("start", "iteration") in xs:
            kinds.add("a job ends with another event and an iteration starts")
        if "iteration" in happened and ("pool", "pool") in xs:
            kinds.add("an iteration ends with another event and a pool changes")
        if "arrival" in happened:
            kinds.add("an arrival with another event")
    return kinds


def shares(family: str, folder) -> collections.Counter:
    counts = collections.Counter()
    for index in range(PROGRAMS):
        counts.update(meetings(gen_programs.generate(index, family).source, folder))
    return counts


@pytest.fixture(scope="module")
def counted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("timelines")
    return {family: shares(family, folder) for family in ("coinc", "engines")}


def test_most_coincidence_programs_have_events_at_one_instant(counted):
    coinc = counted["coinc"]
    assert coinc["two events"] >= 0.8 * PROGRAMS, coinc
    assert coinc["a job ends with another event and an iteration starts"] >= 0.6 * PROGRAMS, coinc
    assert coinc["an iteration ends with another event and a pool changes"] >= 0.3 * PROGRAMS, coinc
    assert coinc["an arrival with another event"] >= 0.5 * PROGRAMS, coinc


def test_the_family_makes_them_far_more_often_than_continuous_draws(counted):
    # the step engines family (continuous draws, the same kinds of stages) as the baseline
    for kind in ("two events", "a job ends with another event and an iteration starts"):
        assert counted["coinc"][kind] >= 2 * counted["engines"][kind], (kind, counted)


def test_the_family_reaches_every_pair_of_stage_kinds():
    # fifo, ps and delay stages in front of step engines, pools, flows over shared stages
    sources = [gen_programs.generate(i, "coinc").source for i in range(200)]
    for piece in (": fifo", ": ps(", ": delay", ": step", "memory kv", "pool slots", "preempt lifo",
                  "share maxmin", "batch(", "closed(", "renewal(", "~det(", "serve by (prio"):
        assert sum(piece in s for s in sources) >= 10, piece

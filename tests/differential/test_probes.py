"""The spec's 150 probe programs, run through sq, against pyserq 0.1.2's recorded figures.

probes.json (kept in tests/data/probes/, see spec_data.py) holds each probe's source, the
pyserq.compile keywords it was run with, and what 0.1.2 produced. A probe
whose program uses a construct the engine does not run yet is skipped with
the engine's own "not supported yet" message (SqError phase "unsupported");
every other difference fails.
"""
from __future__ import annotations

import math

import pytest

import sq
from sq.errors import SqError
from tests.helpers.spec_data import PROBES_FILE, probes

RTOL = 1e-9

PROBES = probes()
# Probes where pyserq 0.1.2 panics and sq follows the spec's recommendation instead
# (04 §4.5.5: drop the preempted victim from the iteration and go on).
PANICS = {"ST-PANIC-1"}


def close(a, b) -> bool:
    if a is None or b is None:
        # JSON's null stands for any non-finite number.
        other = b if a is None else a
        return other is None or not math.isfinite(float(other))
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= RTOL * max(abs(a), abs(b)) or abs(a - b) <= 1e-12


def _run(probe):
    kw = dict(probe["overrides"])
    program = sq.compile(source=probe["source"], **kw)
    wants_iters = any(k.startswith(("iters", "iter_at", "costs")) for k in probe["expect"])
    return sq.run(program, trace_iterations=wants_iters, trace_evictions="evicts" in probe["expect"],
                  dump_pools="dump" in probe["expect"])


def _iter_lines(report):
    return [line.split(" | ")[0].rstrip() for line in report.iteration_trace]


def _observed(report, key):
    """The value of one `expect` key, read from sq's report."""
    head, _, rest = key.partition(".")
    if head == "obs":
        name, _, part = rest.rpartition(".") if rest.endswith((".t", ".v")) else (rest, "", "")
        o = report.observes.get(name)
        if o is None:
            return []
        if part == "t":
            return [float(t) for t in o.times]
        if part == "v":
            return [float(v) for v in o.samples]
        return [[float(t), int(s), float(v)] for t, s, v in zip(o.times, o.sessions, o.samples)]
    if head in ("stage", "pool"):
        name, field = rest.rsplit(".", 1)
        row = report.stage(name) if head == "stage" else report.pool(name)
        return None if row is None else getattr(row, field)
    if head == "gauge":
        name, field = rest.rsplit(".", 1)
        return list(map(float, getattr(report.gauges[name], field))) if field in ("times", "values") \
            else getattr(report.gauges[name], field)
    if head == "adm_prefix":
        o = report.observes["adm"]
        return [[float(t), int(s)] for t, s in zip(o.times, o.sessions)]
    if head == "adm_at21":
        o = report.observes["adm"]
        return [int(s) for t, s in zip(o.times, o.sessions) if t == 21]
    if head == "evicts":
        return report.eviction_trace
    if head == "dump":
        return report.pool_dump
    if head == "iters":
        return _iter_lines(report)
    if head == "iters_prefix":
        return _iter_lines(report)
    if head == "costs":
        starts = [float(line.split()[1]) for line in _iter_lines(report)]
        return [round((b - a - 1) * 1000, 6) for a, b in zip(starts, starts[1:])]
    return getattr(report, key)


def _check(key, want, report):
    if key in ("iters_prefix", "adm_prefix"):
        got = _observed(report, key)[: len(want)]
    elif key == "iter_at":
        lines = _iter_lines(report)
        got = {i: (lines[int(i)] if int(i) < len(lines) else None) for i in want}
        want = {i: w.rstrip() for i, w in want.items()}
    elif key == "iters":
        got = _observed(report, key)
        # Entries without the `ITER t` prefix compare composition only.
        got = [g if w.startswith("ITER ") else g.split(" ", 2)[2] if g.count(" ") >= 2 else "" for g, w in zip(got, want)] \
            + got[len(want):]
    else:
        got = _observed(report, key)
    if key == "costs":
        got = got[: len(want)]
    ok = got == want if isinstance(want, (str, dict)) or key.startswith("iter") or key in ("evicts", "dump") \
        else close(want, got)
    assert ok, f"{key}: pyserq 0.1.2 gave {want!r}, sq gave {got!r}"


@pytest.mark.parametrize("probe", PROBES, ids=[p["id"] for p in PROBES])
def test_probe(probe, monkeypatch):
    # A relative trace in a program given as text is read from the current directory.
    monkeypatch.chdir(PROBES_FILE.parent)
    expect = probe["expect"]
    if probe["id"] in PANICS:
        program = sq.compile(source=probe["source"], **probe["overrides"])
        report = sq.run(program, check_invariants=True)
        assert report.arrivals == 2 and report.ended == 2
        return
    try:
        report = _run(probe)
    except SqError as err:
        if err.phase == "unsupported":
            pytest.skip(f"not supported yet: {err.message}")
        if "error" in expect:
            assert expect["error"] in err.message or expect["error"] in str(err), \
                f"pyserq 0.1.2 said `{expect['error']}`, sq said `{err}`"
            return
        raise
    assert "error" not in expect, f"pyserq 0.1.2 refused this probe (`{expect['error']}`); sq ran it"
    for key in expect:
        _check(key, expect[key], report)

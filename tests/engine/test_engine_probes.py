"""The engine against the spec's probe figures (chapters 04 and 09 appendices).

Each probe is compiled by sq's front end; the figures checked are the ones the
spec lists (kept in tests/data/probes), not a run of pyserq.
"""
from __future__ import annotations

import json
import math
import os

import pytest

import sq
from sq.lower.lowering import lower
from sq.results.report import Report
from tests.helpers.spec_data import PROBES_FILE as PROBES

_engine = pytest.importorskip("sq._engine")


# probes this engine covers now: fifo/ps/delay stages, sessions, arrivals, streams
IN_SCOPE = {
    "ST-FIFO-1", "ST-PS-1", "ST-PS-2", "ST-PS-3", "ST-PS-4", "ST-PS-5", "ST-PS-6", "ST-PS-7",
    "ST-DELAY-1", "ST-ZERO-1",
    "EV-ORDER-1", "EV-ORDER-2", "EV-POISSON-1", "EV-RENEWAL-1", "EV-RENEWAL-2", "EV-CLOSED-1",
    "EV-HORIZON-1", "EV-WARMUP-1", "EV-WARMUP-2", "EV-ARRIVALS-1", "EV-RNG-WL",
    "EV-DIST-exp", "EV-DIST-bernoulli", "EV-DIST-erlang", "EV-DIST-h2", "EV-DIST-uniform",
    "EV-RNG-SESSION", "EV-RNG-PS",
    # pools: holds, queues (fifo and `queue by`), reserve, blocks, lru cache, release, drop
    "EV-READY-2", "EV-GAUGE-1", "PL-EVICT-1-lru", "PL-BLOCK-1", "PL-EPS-1", "PL-REJECT-1", "PL-REJECT-2",
    "PL-RESERVE-1", "PL-HOL-1", "PL-QBY-1", "PL-TWO-1", "PL-RELEASE-1", "PL-END-1", "PL-NEG-1",
    "PL-MULTI-1", "PL-NESTED-1", "PL-BLOCKED-1",
    # leases, reuse, grow (preempt none), load
    "PL-CACHE-1", "PL-LEASE-1", "PL-LEASE-2", "PL-LEASE-3", "PL-GROW-1", "PL-GROW-2",
    # trace replay
    "EV-TRACE", "EV-TRACE-ordered", "EV-TRACE-exhausted",
    # step stages (preempt none), admit via, serve policies, exclusive prefill
    "ST-STEP-1", "ST-STEP-2", "ST-STEP-3", "ST-STEP-4", "ST-COST-1-tokens", "ST-COST-1-decoders",
    "ST-COST-1-prefilled", "ST-COST-1-residents", "ST-COST-1-kv_decode", "ST-COST-1-kv_prefill",
    "ST-COST-1-attention", "ST-COST-2-tokens", "ST-COST-2-decoders", "ST-COST-2-residents",
    "ST-COST-2-kv_decode", "ST-COST-3-kv_prefill", "ST-COST-3-residents", "ST-COST-3-tokens",
    "ST-BUDGET-1", "ST-BUDGET-2", "ST-BUDGET-3", "ST-CHUNK-1", "ST-ADMIT-1-via", "ST-ADMIT-1-settle",
    "ST-ADMIT-2", "ST-ADMIT-3", "ST-ORDER-1", "ST-ORDER-2", "ST-SERVE-1", "ST-SERVE-2", "ST-SERVE-3",
    "ST-STALL-1", "ST-STALL-2", "ST-EPS-1", "ST-INSTANT-1", "ST-BL-1", "ST-COST0-zero", "ST-COST0-neg",
    "ST-STATS-1", "ST-PSORDER-before", "ST-PSORDER-after", "ST-PSORDER-late", "ST-STEPORDER-before",
    "ST-STEPORDER-after", "ST-ADMKEY-1", "ST-ADMKEY-2", "ST-EXCL-1", "ST-EXCL-2", "ST-EXCL-3",
    "ST-EXCL-4", "ST-EXCL-5", "ST-EXCL-6", "PL-CACHE-2", "PL-MULTI-2", "EV-ORDER-3", "EV-RNG-COST",
    # `evict by` keys, snapshots of ended sessions, `waiting`
    "PL-EVICT-1-waiting-size", "PL-EVICT-1-neg-size", "PL-SNAP-1", "PL-WAITING-1", "PL-WAITING-2",
    # `preempt lifo`: engine and non-engine victims, re-queueing at the head, `computed`, stuck
    "ST-PREEMPT-1", "ST-PREEMPT-2", "ST-PREEMPT-3", "ST-EXCL-0", "ST-EXCL-7", "PL-LIFO-1", "PL-LIFO-2",
    "PL-LIFO-3", "PL-LIFO-4", "PL-REQ-1", "PL-RESUME-1", "PL-WARM-1", "PL-COMPUTED-1",
    # spills to a tier over a link
    "PL-SPILL-1", "PL-SPILL-2", "PL-SPILL-3", "EV-RNG-EVICT",
    # flows over shared stages
    "SH-1-maxmin", "SH-1-bottleneck", "SH-2-maxmin", "SH-2-bottleneck", "SH-3-maxmin", "SH-3-bottleneck",
    "SH-4", "SH-5",
}
# figures read from the reference's eviction and pool dumps, which this engine does not print
DEBUG_FIGURES = {"evicts", "dump"}


def _probes():
    if not PROBES.exists():
        return []
    return [p for p in json.loads(PROBES.read_text()) if p["id"] in IN_SCOPE]


def _close(a, b) -> bool:
    # the report keeps a missing statistic as NaN; the probe writes it None (JSON null)
    a = float("nan") if a is None else float(a)
    b = float("nan") if b is None else float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)


def _figure(report: Report, key: str):
    """The value a probe key names, read from our report."""
    lines = list(report.iteration_trace)
    if key in ("iters", "iters_prefix", "iter_at"):
        return lines
    if key == "costs":
        # `cost 1 + VAR/1000`: VAR from the gaps between iteration starts
        starts = [float(line.split()[1]) for line in lines]
        return [round((b - a - 1) * 1000, 6) for a, b in zip(starts, starts[1:])]
    if key in ("adm_prefix", "adm_at21"):
        o = report.observes["adm"]
        rows = [[t, s] for t, s in zip(o.times, o.sessions)]
        return rows if key == "adm_prefix" else [s for t, s in rows if t == 21]
    parts = key.split(".")
    if parts[0] == "obs":
        o = report.observes.get(parts[1])
        rows = [] if o is None else list(zip(o.times, o.sessions, o.samples))
        if len(parts) == 2:
            return [list(r) for r in rows]
        return [r[0] if parts[2] == "t" else r[2] for r in rows]
    if parts[0] in ("stage", "pool", "gauge"):
        name, field = ".".join(parts[1:-1]), parts[-1]
        if parts[0] == "gauge":
            g = report.gauges[name]
            return list(getattr(g, field)) if field in ("times", "values") else getattr(g, field)
        row = report.stage(name) if parts[0] == "stage" else report.pool(name)
        return getattr(row, field)
    return getattr(report, key)


def _matches(expected, got) -> bool:
    if isinstance(expected, str) or isinstance(expected, dict):
        return expected == got
    if isinstance(expected, list):
        return isinstance(got, list) and len(expected) == len(got) and all(
            _matches(e, g) for e, g in zip(expected, got))
    # the probe figures quote some times to 9 digits
    if isinstance(expected, float) and isinstance(got, float) and abs(expected) > 0:
        digits = len(repr(expected).split(".")[-1])
        if digits <= 9:
            return abs(expected - got) <= 10.0 ** -digits
    return _close(expected, got)


@pytest.mark.parametrize("probe", _probes(), ids=lambda p: p["id"])
def test_probe(probe):
    cwd = os.getcwd()
    os.chdir(PROBES.parent)   # trace files are read relative to the current directory
    try:
        program = sq.compile(source=probe["source"], **probe["overrides"])
        raw = _engine.run(lower(program.to_dict(exact=True)), trace_iterations=True)
    finally:
        os.chdir(cwd)
    report = Report.from_results(raw)
    for key, expected in probe["expect"].items():
        if key in DEBUG_FIGURES:
            continue
        got = _figure(report, key)
        if key == "iters":
            # entries without the `ITER t` prefix compare the composition only
            got = [g if w.startswith("ITER ") else g.split(" ", 2)[2] if g.count(" ") >= 2 else ""
                   for g, w in zip(got, expected)] + got[len(expected):]
        elif key in ("iters_prefix", "costs", "adm_prefix"):
            got = got[:len(expected)]
        elif key == "iter_at":
            got = {i: (got[int(i)] if int(i) < len(got) else None) for i in expected}
        assert _matches(expected, got), f"{probe['id']} {key}: expected {expected}, got {got}"


def test_probes_cover_the_scope():
    # the spec's probe file is where the figures come from; a renamed probe must not vanish silently
    if not PROBES.exists():
        pytest.skip("spec probes not available")
    assert {p["id"] for p in _probes()} == IN_SCOPE

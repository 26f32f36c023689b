"""Measurements in fresh processes, the implementations' rounds taken in turn, the least kept."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

from sq.bench.models import Model

CHILD = Path(__file__).resolve().parent / "_child.py"
# the folder the sq being measured was imported from: the children import that one
SQ_PATH = str(Path(__file__).resolve().parent.parent.parent)


# The least CPU time of a round (_child.py): a model whose runs take less are run again in the
# round until it lasts this long, and the round counts their mean. One second: the sweep's runs
# take ~0.1 s in sq and ~1 s in pyserq; timed over a second each, neither is a moment of the VM's.
ROUND = 1.0


def once(impl: str, model: Model, round_: float = ROUND) -> dict:
    """One measurement of `impl` ("sq", "sq-engine" or a reference driver's path) on `model` in a fresh process, so
    that its peak memory is its own and one implementation's allocations cannot flatter the
    other's; {"error": the last line of its stderr} if it failed. Its "cpu" is a pass's over the
    model's runs, the mean of the passes of a round of `round_` seconds or more (0: one pass)."""
    spec = {"impl": impl, "source": model.source, "horizon": model.horizon, "warmup": model.warmup,
            "runs": model.runs, "arrivals": model.arrivals, "path": SQ_PATH, "round": round_}
    out = subprocess.run([sys.executable, str(CHILD), json.dumps(spec)], capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def in_turn(measurements: dict[str, Callable[[], dict]], rounds: int) -> dict[str, dict]:
    """Each measurement's least-CPU round, the rounds taken in turn (a, b, a, b, ...): a change in the
    machine's load over the minutes of a measurement falls on each alike. The least time is the
    run least disturbed by others on a shared machine. A measurement whose rounds gave different
    reports keeps "digests": None (it is not deterministic, which is a bug)."""
    taken: dict[str, list[dict]] = {name: [] for name in measurements}
    for _ in range(rounds):
        for name, measure in measurements.items():
            taken[name].append(measure())
    return {name: _least(ms) for name, ms in taken.items()}


def _least(ms: list[dict]) -> dict:
    failed = [m for m in ms if "error" in m]
    if failed:
        return failed[0]
    best = dict(min(ms, key=lambda m: m["cpu"]))
    if "fixed" in best:
        best["fixed"] = min(m["fixed"] for m in ms)
    if any(m.get("digests") != ms[0].get("digests") for m in ms):
        best["digests"] = None
    return best


def side_by_side(impls: dict[str, str], model: Model, rounds: int, round_: float = ROUND) -> dict[str, dict]:
    """{label: measurement} for {label: implementation} ("sq", "sq-engine" or a reference driver's path)."""
    return in_turn({label: lambda impl=impl: once(impl, model, round_) for label, impl in impls.items()}, rounds)

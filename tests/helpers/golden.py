"""Answers recorded once from pyserq 0.1.2, so that the suite checks sq without the reference installed.

`tests/data/make_golden.py` writes them (never edit them by hand):

* `tests/data/golden/rng.json`: known-answer vectors of the random streams:
  raw words, floats and bounded integers of `pyserq.Rng` for many seeds and call
  mixes, and the samples every law draws in a pyserq run (edge arguments included).
  Floats are stored as the hex of their IEEE bits, so NaN signs and -0 survive.
* `tests/data/golden/examples.json`: for every example program (and the variants
  the examples' comments suggest), pyserq's IR and the JSON report of a short run.

With pyserq installed the tests compare with it live as well and fail when a
recorded answer is stale (then rerun the script).
"""
from __future__ import annotations

import json
import struct
from functools import lru_cache
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
GOLDEN = TESTS / "data" / "golden"
EXAMPLES = ROOT / "examples"
TRACE = EXAMPLES / "replay" / "chat.csv"
STALE = "the recorded answer is stale: rerun `python tests/data/make_golden.py`"

# Short runs for the report comparison: this fraction of each program's own
# horizon and warm-up keeps the whole file well under a minute.
SHORT = 0.25

# The settings the examples' comments suggest trying: most of them push the
# engine into preemption, eviction or congested NICs, the paths a default
# run visits least.
VARIANTS = [
    ("single-turn/vllm_single_turn.sq", {"sets": {"rate": 6}}),
    ("single-turn/separate_phases.sq", {"sets": {"rate": 9, "kv_gib": 3}}),
    ("multi-turn/vllm.sq", {"sets": {"kv_gib": 2}}),
    ("multi-turn/closed.sq", {"sets": {"users": 160}}),
    ("multi-turn/routing.sq", {"sets": {"policy": 0}}),
    ("multi-turn/routing.sq", {"sets": {"policy": 1}}),
    ("pd-disaggregation/pull.sq", {"sets": {"nic_gbs": 2}}),
    ("pd-disaggregation/push.sq", {"sets": {"nic_gbs": 2}}),
    ("replay/vllm_replay.sq", {"sets": {"rate": 2}}),
    ("single-turn/ps.sq", {"defs": {"service": "~h2(1, 4)"}}),
]


EXTENSION = "// sq extension:"   # the first line of an example pyserq 0.1.2 cannot run


def example_programs() -> list[Path]:
    """The gallery's dialect programs (those pyserq 0.1.2 runs, so their reports are compared)."""
    return sorted(p for p in EXAMPLES.rglob("*.sq") if not p.read_text().startswith(EXTENSION))


def extension_programs() -> list[Path]:
    """The gallery's programs that use sq's extensions (docs/differences.md)."""
    return sorted(p for p in EXAMPLES.rglob("*.sq") if p.read_text().startswith(EXTENSION))


def example_id(path: Path) -> str:
    return path.relative_to(EXAMPLES).as_posix()


def variant_id(rel: str, kw: dict) -> str:
    return f"{rel}:{next(iter(kw.values()))}"


def short_settings(ir: dict, kw: dict) -> dict:
    """The compile keywords of a short run of a program whose full-length IR is `ir`.

    A trace is named from the repository root (`trace` relative), so the recorded
    settings hold on any checkout; `compile_keywords` makes it absolute."""
    out = dict(kw)
    if ir["trace"] is not None:
        out["trace"] = TRACE.relative_to(ROOT).as_posix()
    out.update(horizon=ir["horizon"] * SHORT, warmup=ir["warmup"] * SHORT)
    return out


def compile_keywords(settings: dict) -> dict:
    """Recorded settings as keywords for `compile` (both implementations), a trace made absolute."""
    out = dict(settings)
    if "trace" in out:
        out["trace"] = str(ROOT / out["trace"])
    return out


def bits(x: float) -> str:
    return struct.pack(">d", x).hex()


def from_bits(text: str) -> float:
    return struct.unpack(">d", bytes.fromhex(text))[0]


@lru_cache(maxsize=None)
def _load(name: str) -> str:
    return (GOLDEN / name).read_text(encoding="utf-8")


def rng_vectors() -> dict:
    return json.loads(_load("rng.json"))


def examples() -> dict:
    """{case id: {"settings": …, "ir": pyserq's IR of the full-length program, "report": JSON text}}."""
    return json.loads(_load("examples.json"))

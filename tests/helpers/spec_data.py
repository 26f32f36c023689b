"""What the tests keep of the serQ spec, inside the repository (a user's clone has no spec folder beside it).

* `tests/data/probes/`: the spec's probe programs with the figures pyserq 0.1.2
  produced (`probes.json`, copied from the spec's `probes/` folder unchanged) and
  the two trace files the probes replay (`trace2.csv`, `trace5.csv`). A probe
  names its trace relative to that folder, so a test runs it from there.
* `tests/data/chapter10/`: the three programs of chapter 10 (the grammar): the
  library `lib/defs.sq` and programs A and B, which between them use every
  production.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
PROBES_DIR = DATA / "probes"
PROBES_FILE = PROBES_DIR / "probes.json"
CHAPTER10 = DATA / "chapter10"


@lru_cache(maxsize=None)
def _probes_text() -> str:
    return PROBES_FILE.read_text(encoding="utf-8")


def probes() -> list[dict]:
    """Every probe: `id`, `source`, `overrides` (pyserq.compile keywords), `debug_traces`, `expect`."""
    return json.loads(_probes_text())


def chapter10_programs() -> tuple[str, str, str]:
    """The text of chapter 10's library `lib/defs.sq`, program A and program B."""
    return tuple((CHAPTER10 / name).read_text(encoding="utf-8")
                 for name in ("lib/defs.sq", "program_a.sq", "program_b.sq"))


# The example trace file of spec 02 §3 (a comment, a short row, a blank line, turns out of order).
SPEC_CORPUS = """session,turn,new,out,think,forced
# comment line
7,0,100,10,1.5,0
7,1,20,5,2,1
9,0,300,30,0
3,0,1,2,3
3,5,4,5,6

3,9,7,8,9
"""

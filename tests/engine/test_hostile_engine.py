"""Issue 14, the engine's crash, hang and memory items, each run in a child process under a time
and an address-space limit (tests/helpers/hostile.py): the child must exit 2 with a message naming the
construct, and never hang, die by a signal, print a traceback or an internal error.

* item 1: a chain of 18 step stages whose chunks read the next stage's budget_left, nested in
  parentheses: the expression stack is sized from the program (it overflowed the heap); the
  engine's own bound check stops a too-small stack cleanly;
* item 3: arrival limits at and past 2^63 (run block, --arrivals, sq.run), and the cleanup of a
  half-built engine state;
* item 11: a run that never advances (a step stage of cost 0, a delay whose time rounds away);
* item 12: an overloaded program whose sessions carry 300 attributes stops at the memory bound.

The slow test at the end runs the crash reproducers once under valgrind's memcheck, which
catches an invalid read or write even where it does not crash.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import children
from tests.helpers.hostile import assert_ok, assert_refused, run_script, run_sq
from tests.helpers.oracle import needs_reference, reference

pyserq = reference()     # None without it: the tests that compare with it skip, saying so


def _nested(inner: str, depth: int) -> str:
    for _ in range(depth):
        inner = f"(now * 0 + {inner})"
    return inner


def budget_left_chain(stages: int = 18, depth: int = 10) -> str:
    """Stage e_i's chunk reads budget_left(e_{i+1}) under `depth` parentheses; the last chunk is 3."""
    lines = ["pool kv { cap 1000; }"]
    for i in range(stages):
        chunk = f"{_nested(f'budget_left(e{i + 1})', depth)} > 4 ? 4 : 2" if i < stages - 1 else "3"
        lines.append(f"stage e{i} : step {{ budget 16; cost 0.01; chunk {chunk}; }}")
    lines += ["run { horizon 5; seed 1; }",
              "workload { arrive poisson(2); session { request; } }",
              "server { hold kv (8) { run e0 prefill (8); } }"]
    return "\n".join(lines) + "\n"


OPEN_RUN = """stage s : fifo(1);
run { horizon 5; seed 1;%s }
workload { arrive poisson(2); session { request; } }
server { run s (~exp(1)); }
"""

COST_ZERO = """stage e : step { cost 0; }
run { horizon 10; seed 1; }
workload { arrive batch(1); session { request; } }
server { run e decode (inf); }
"""

ROUNDED_AWAY = """stage d : delay;
run { horizon 10; seed 1; }
workload { arrive batch(1); session { request; } }
server { run d (1); loop { run d (1e-300); } }
"""


def overloaded(attributes: int = 300) -> str:
    """Arrivals at 100/s to a server that takes 1 s each: sessions pile up, each with its attributes."""
    sets = " ".join(f"set a{i} = {i};" for i in range(attributes))
    return ("stage s : fifo(1);\nrun { horizon 1e9; seed 1; }\n"
            "workload { arrive poisson(100); session { request; } }\n"
            f"server {{ {sets} run s (1); }}\n")


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


LOWERED = ("import dataclasses, sys, sq\nfrom sq import _engine\nfrom sq.lower.lowering import lower\n"
           "low = lower(sq.compile(sys.argv[1]).to_dict(exact=True))\n")


def _script_lines(program: Path, code: str) -> list[str]:
    """Run `code` in a child (argv[1]: the program, `low`: it lowered); its output lines, after a clean exit."""
    r = run_script(LOWERED + code, program)
    assert_ok(r)
    return r.stdout.strip().splitlines()


# ---- item 1: the expression stack ---------------------------------------------------------

@needs_reference
def test_budget_left_chain_runs_as_pyserq(tmp_path):
    path = _write(tmp_path, "chain.sq", budget_left_chain())
    r = run_sq("run", path, "--json", timeout=120)
    assert_ok(r)
    assert r.stdout.strip() == pyserq.run(pyserq.compile(path=str(path))).json()


def test_a_stack_smaller_than_the_chain_stops_cleanly(tmp_path):
    # The engine does not trust the size it is given: whatever the stack, a nesting past it is an
    # SqError naming the budget_left call, never a write past the buffer.
    path = _write(tmp_path, "chain.sq", budget_left_chain())
    lines = _script_lines(path, "for depth in (0, 1, 20, low.stack_depth // 2):\n"
                                "    try:\n        _engine.run(dataclasses.replace(low, stack_depth=depth))\n"
                                "    except sq.SqError as e:\n        print(e)\n    else:\n        print('ran')\n")
    assert len(lines) == 4 and all("nests deeper than the expression stack" in ln for ln in lines), lines
    assert all(re.search(r"`budget_left\(e\d+\)`", ln) for ln in lines), lines


def test_the_stack_is_sized_from_the_deepest_chain():
    from sq.lower.lowering import lower
    import sq
    short = lower(sq.compile(source=budget_left_chain(stages=2)).to_dict(exact=True))
    long = lower(sq.compile(source=budget_left_chain(stages=18)).to_dict(exact=True))
    # a call of budget_left(e_i) needs what e_i's chunk needs and, above its own call, e_{i+1}'s
    frame = short.stage_needs[0] - short.stage_needs[1]   # one chunk's own depth to its call
    assert frame > 0 and short.stage_needs[1] > 0
    assert list(long.stage_needs) == [long.stage_needs[17] + (17 - i) * frame for i in range(18)]
    assert long.stack_depth >= long.stage_needs[0]       # the chain stacks 17 of them


# ---- item 3: arrival limits past 2^63 -----------------------------------------------------

@needs_reference
@pytest.mark.parametrize("value", ["1e19", "1e20", "9223372036854775808", "18446744073709551615"])
def test_an_arrival_limit_past_2_63_in_the_run_block(tmp_path, value):
    path = _write(tmp_path, "open.sq", OPEN_RUN % f" arrivals {value};")
    r = run_sq("run", path)
    assert_refused(r, "reached before requested arrivals", "requested")
    want = pyserq.compile(path=str(path))
    try:
        pyserq.run(want)
    except ValueError as e:
        assert str(e) in r.stderr, r     # 0.1.2's words and numbers
    else:
        pytest.fail("pyserq ran it")


@pytest.mark.parametrize("value", ["9223372036854775807", "9223372036854775808", "18446744073709551615"])
def test_arrivals_on_the_command_line(tmp_path, value):
    path = _write(tmp_path, "open.sq", OPEN_RUN % "")
    assert_refused(run_sq("run", path, "--arrivals", value), f"requested {value}")


def test_arrivals_past_u64_on_the_command_line(tmp_path):
    path = _write(tmp_path, "open.sq", OPEN_RUN % "")
    assert_refused(run_sq("run", path, "--arrivals", str(2**64)), "arrivals", "2^64")


def test_arrivals_of_sq_run(tmp_path):
    path = _write(tmp_path, "open.sq", OPEN_RUN % "")
    lines = _script_lines(path, "for a in (2**63, 2**64 - 1, 1e19, 2**64, 2**70, 1e30, float('inf')):\n"
                                "    try:\n        sq.run(sq.compile(sys.argv[1]), arrivals=a)\n"
                                "    except sq.SqError as e:\n        print(e)\n")
    assert [("requested" in ln) for ln in lines] == [True, True, True, False, False, False, False], lines
    assert all("below 2^64" in ln for ln in lines[3:]), lines


def test_cleanup_of_a_half_built_engine_state(tmp_path):
    # An error while the engine state is being built (here a step limit that does not fit in C,
    # after the table counts are set and before the tables exist) must free what was built only.
    path = _write(tmp_path, "open.sq", OPEN_RUN % "")
    lines = _script_lines(path, "try:\n    _engine.run(low, step_limit=2**70)\nexcept OverflowError:\n    print('refused')\n")
    assert lines == ["refused"]


# ---- item 11: runs that never advance -----------------------------------------------------

def test_a_step_stage_of_cost_zero_stops(tmp_path):
    path = _write(tmp_path, "cost0.sq", COST_ZERO)
    text = "\n".join(_script_lines(path, "try:\n    _engine.run(low, step_limit=10**6)\n"
                                         "except sq.SqError as e:\n    print(e)\n"))
    assert "does not advance" in text and "stage `e`" in text and "time 0" in text, text


def test_a_run_whose_time_rounds_away_stops(tmp_path):
    path = _write(tmp_path, "rounding.sq", ROUNDED_AWAY)
    r = run_sq("run", path, timeout=120)       # the default limit: 10^8 statements and events
    assert_refused(r, "does not advance", "`run d`", "time 1")


STALLED = "stage d : delay;\nrun { horizon %s; }\nworkload { arrive batch(1); }\nsession { loop { run d (%s); } }\n"


def test_a_run_whose_time_gains_nothing_stops(tmp_path):
    """Time advances by 1e-310 an event: the horizon is 5e311 events away, and 0.1.2 runs on
    forever; sq stops after two windows of 2^24 events, at the `run`, with the step and the
    events the horizon would need."""
    path = _write(tmp_path, "stalled.sq", STALLED % (50, "1e-310"))
    r = run_sq("run", path, timeout=300)
    assert_refused(r, f"{path}:4:18", "does not advance", "`run d`", "gains 1e-310 an event", "5.0e+311 more events")


def test_a_long_run_that_advances_is_not_stopped(tmp_path):
    """3.5e7 events at 1e-6 each: past two windows of the stall guard, and the report is whole."""
    path = _write(tmp_path, "slow.sq", STALLED % (35, "1e-6"))
    r = run_sq("run", path, "--json", timeout=300)
    assert_ok(r)
    assert json.loads(r.stdout)["events"] > 2 * 2**24


@pytest.mark.slow
def test_a_step_stage_of_cost_zero_stops_at_the_default_limit(tmp_path):
    path = _write(tmp_path, "cost0.sq", COST_ZERO)
    assert_refused(run_sq("run", path, timeout=300), "does not advance", "stage `e`", "time 0")


# ---- item 12: memory bounded by bytes -------------------------------------------------------

def test_sessions_with_300_attributes_stop_at_the_memory_bound(tmp_path):
    path = _write(tmp_path, "overload.sq", overloaded())
    r = run_sq("run", path, "--max-memory", "64M", timeout=120, memory_mb=1024)
    assert_refused(r, "max_memory", "64 MiB", "sessions alive with 309 attributes", "arrivals")


def test_the_default_bound_stops_before_the_address_space_does(tmp_path):
    # Under a 1 GB address-space limit, malloc failing is "out of memory", clean too.
    path = _write(tmp_path, "overload.sq", overloaded())
    r = run_sq("run", path, timeout=300, memory_mb=1024)
    assert_refused(r, "memory", "sessions alive")


# 64 sessions alive at once (a batch at time 0, all queued at one server): 64 session slots and
# 64 job slots, nothing else charged (no sample, no gauge). A session slot takes 8 bytes per
# attribute slot (9 here: the reserved ones), 12 per hold depth, 22 per depth x pools in a hold,
# 16 per pool, 124 more; a job slot 89 (its record, JobRec, 40 with its padding, and 49 in tables)
# (sq/engine/_session.pxi, sq/engine/_stages.pxi: session_tables, job_tables).
SLOTS_PROGRAM = """
{pools}
stage server : fifo(1);
run {{ horizon 1000; }}
workload {{ arrive batch(64); }}
session {{ {body} }}
"""


@pytest.mark.parametrize("pools, body, least", [
    ("", "run server (1);", 64 * (8 * 9 + 12 + 22 + 124) + 64 * 89),          # depth 1, 1 pool a hold (the least)
    ("pool a { cap 100; } pool b { cap 100; } pool c { cap 100; }",
     "hold a (1), b (1) { hold c (1) { run server (1); } }",
     64 * (8 * 9 + 12 * 2 + 22 * 2 * 2 + 16 * 3 + 124) + 64 * 89),
], ids=["no-pools", "holds"])
def test_max_memory_charges_a_slot_what_its_tables_take(pools, body, least):
    """The run fits a bound of exactly what its session and job tables take, and not one byte less."""
    import sq

    program = sq.compile(source=SLOTS_PROGRAM.format(pools=pools, body=body))
    assert sq.run(program, max_memory=least).ended == 64
    with pytest.raises(sq.SqError, match="max_memory"):
        sq.run(program, max_memory=least - 1)


def test_max_memory_of_sq_run_is_checked(tmp_path):
    path = _write(tmp_path, "open.sq", OPEN_RUN % "")
    lines = _script_lines(path, "p = sq.compile(sys.argv[1])\nfor m in (0, -1, 'lots', 2**63):\n"
                                "    try:\n        sq.run(p, max_memory=m)\n    except sq.SqError as e:\n        print(e)\n"
                                "print(sq.run(p, max_memory=10**8).arrivals > 0)\n")
    assert len(lines) == 5 and all("max_memory" in ln for ln in lines[:4]) and lines[4] == "True", lines


# ---- slow: the crash reproducers under valgrind ------------------------------------------------

VALGRIND = shutil.which("valgrind")


def _memcheck(tmp_path: Path, *args: str) -> str:
    """Run `python -m sq ARGS` under memcheck; its reports whose stack passes through sq's own
    code (CPython's own uninitialised-value reports are not ours)."""
    log = tmp_path / "memcheck.log"
    proc = subprocess.run(["valgrind", "--tool=memcheck", "--leak-check=no", f"--log-file={log}",
                           children.PYTHON, "-m", "sq", *args],
                          capture_output=True, text=True, timeout=1800, env=children.env(PYTHONMALLOC="malloc"))
    assert proc.returncode in (0, 2), proc.stderr[-2000:]
    reports = log.read_text(errors="replace").split("\n==")
    return "\n".join(r for r in reports if "Invalid" in r or "uninitialised" in r if "sq_7_engine" in r or "_engine.c" in r)


@pytest.mark.slow
@pytest.mark.skipif(VALGRIND is None, reason="valgrind is not installed")
def test_reproducers_under_memcheck(tmp_path):
    chain = _write(tmp_path, "chain.sq", budget_left_chain())
    arrivals = _write(tmp_path, "arrivals.sq", OPEN_RUN % " arrivals 1e19;")
    for args in (("run", str(chain), "--json"), ("run", str(arrivals)),
                 ("run", str(_write(tmp_path, "open.sq", OPEN_RUN % "")), "--arrivals", "9223372036854775808")):
        assert _memcheck(tmp_path, *args) == "", args

"""A lone queue's own loop (fifo_loop, ps_loop) taken and not, on one program."""
from __future__ import annotations

import sq
from sq import _engine

# where sq._engine.lone_queues() counts each own loop's runs
_RUNS_AT = {"fifo": 3, "ps": 5}


def own_loop_and_lone_loop(source: str, loop: str) -> list[tuple]:
    """The live growth (its repr) and the warnings of a run of `source` with `loop` ("fifo" or
    "ps") taking its own loop, then with it taking lone_loop. The own loops keep the live sessions'
    area in the stage's and copy it where it is read, so what comes from the window's middle (not
    in the JSON, so not held to pyserq) must be lone_loop's to the bit."""
    program = sq.compile(source=source)
    outcomes = []
    try:
        for own in (True, False):
            _engine.lone_queues(True, **{loop: own})
            runs = _engine.lone_queues()[_RUNS_AT[loop]]
            report = sq.run(program)
            assert _engine.lone_queues()[_RUNS_AT[loop]] == runs + own, f"{loop}_loop taken or not as asked"
            outcomes.append((repr(report.growth), report.warnings))
    finally:
        _engine.lone_queues(True, **{loop: True})
    return outcomes

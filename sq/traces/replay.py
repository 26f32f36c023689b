"""`arrive replay`: the arrival schedule a run follows, made from the corpus before the run starts.

The engine walks two arrays: `at` (each arrival's time, non-decreasing) and `of`
(the corpus session it replays; None when arrival i replays session i, as a whole
trace replayed once does: no copy of a week's 8 B a request). They are made here,
in this order:

1. window(from, to): the corpus sessions whose recorded arrival is in [from, to),
   their times moved back by `from` (the run starts at the window's start);
2. copies(n, shift): n copies of those superposed, copy j shifted by j * shift
   (TraceUpscaler-style scaling past the recorded peak), merged in time order
   (ties: earlier copy first, then corpus order);
3. keep(p): each arrival of that merged list kept with probability p, one draw
   `random_f64() < p` per arrival in order on the run's trace stream
   (seed ^ 0x6A09E667F3BCC908: a replay binds sessions by schedule, so it never
   draws there otherwise); no draw when p = 1;
4. replay(k): every time divided by k (k = 2: the same sessions in half the time).

A session that arrives replays its corpus session's turns (`turn;` loads them
as a `trace … ordered` replay does), whatever `ordered` says.
"""
from __future__ import annotations

import numpy as np

from sq.errors import SqError


def schedule(arrival: np.ndarray | None, replay: dict, rng, path: str) -> tuple[np.ndarray, np.ndarray | None]:
    """(at, of): the run's arrival times and the corpus session of each (module docstring); `rng`
    is the run's trace stream (anything with `random_f64()`), drawn only for keep(p) < 1."""
    if arrival is None:
        raise SqError(f"trace {path}: arrive replay needs arrival times, and this trace has none",
                      phase="run", notes=("help: serQ's session,turn,new,out,think format records no times; "
                                          "replay a trace with timestamps (Azure, BurstGPT, Mooncake, "
                                          "Bailian, vLLM results, Vidur), or arrive by a process",))
    at = np.asarray(arrival, dtype=np.float64)
    of = None                                    # arrival i replays corpus session i
    if replay["window"] is not None:
        lo, hi = replay["window"]
        inside = (at >= lo) & (at < hi)
        if not inside.all():
            of = np.flatnonzero(inside)
            at = at[of]
        if lo != 0:                              # x - 0 is x: no copy for a window from 0
            at = at - lo
    copies = int(replay["copies"])
    if copies > 1:
        at = np.concatenate([at + j * replay["shift"] for j in range(copies)])
        of = np.tile(_sessions(of, len(at) // copies), copies)
        order = np.argsort(at, kind="stable")
        at, of = at[order], of[order]
    if replay["keep"] < 1:
        p = replay["keep"]
        kept = np.fromiter((rng.random_f64() < p for _ in range(len(at))), dtype=bool, count=len(at))
        at, of = at[kept], _sessions(of, len(kept))[kept]
    if replay["speed"] != 1:                     # x / 1 is x: no copy at the recorded pace
        at = at / replay["speed"]
    return np.ascontiguousarray(at), None if of is None else np.ascontiguousarray(of, dtype=np.int64)


def _sessions(of, n: int) -> np.ndarray:
    """The schedule's corpus sessions as an array (`of` None: the first n, in order)."""
    return np.arange(n, dtype=np.int64) if of is None else of

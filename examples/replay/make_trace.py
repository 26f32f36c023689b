"""Write chat.csv: a small synthetic multi-turn chat trace for replay.sq.

Usage: python examples/replay/make_trace.py [SESSIONS] [SEED]  (defaults 300, 7)

One line per turn, in the format the `trace` item reads (spec 02 §3):
    session,turn,new,out,think
`new` is the turn's new prompt tokens (the history is not included: the
program adds it), `out` the answer's tokens, `think` the seconds the user
takes before the next turn (0 on the last turn). The shapes are the usual
ones of chat logs: long-tailed (lognormal) prompts and answers, a first
prompt much longer than follow-ups (it carries the system prompt), a
geometric number of turns, exponential think times.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

MEAN_TURNS = 3.0          # geometric number of turns, at most MAX_TURNS
MAX_TURNS = 12
FIRST_NEW = (6.7, 0.6)    # lognormal (mu, sigma) of first prompts: median ~800 tokens
LATER_NEW = (4.6, 0.8)    # follow-ups: median ~100 tokens
OUT = (5.3, 0.7)          # answers: median ~200 tokens
THINK_MEAN = 10.0         # seconds
MAX_TOKENS = 8000         # the model's context limit clips the tails


def tokens(rng: random.Random, shape: tuple[float, float]) -> int:
    return max(1, min(MAX_TOKENS, round(rng.lognormvariate(*shape))))


def session_rows(rng: random.Random, sid: int) -> list[str]:
    turns = 1
    while turns < MAX_TURNS and rng.random() > 1 / MEAN_TURNS:
        turns += 1
    rows = []
    for t in range(turns):
        new = tokens(rng, FIRST_NEW if t == 0 else LATER_NEW)
        out = tokens(rng, OUT)
        think = round(rng.expovariate(1 / THINK_MEAN), 3) if t < turns - 1 else 0
        rows.append(f"{sid},{t},{new},{out},{think}")
    return rows


def trace_text(sessions: int = 300, seed: int = 7) -> str:
    """The whole CSV; the same arguments always give the same text."""
    rng = random.Random(seed)
    lines = ["session,turn,new,out,think"]
    for sid in range(sessions):
        lines += session_rows(rng, sid)
    return "\n".join(lines) + "\n"


def main(sessions: int = 300, seed: int = 7) -> Path:
    path = Path(__file__).with_name("chat.csv")
    path.write_text(trace_text(sessions, seed), encoding="utf-8")
    return path


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    print(main(*args))

"""Write burstgpt-style.csv: a synthetic trace in BurstGPT v2's columns (not BurstGPT's data).

    python examples/replay/make_burstgpt.py [SESSIONS] [SEED]

BurstGPT v2 (`Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,Session ID,
Elapsed time`) links a conversation's requests by `Session ID`. This writes SESSIONS conversations
(200 by default, seed 3) over ten minutes: each starts at a uniform time, has 1 to 6 turns a
think time apart (exponential, mean 20 s), prompts growing with the history, answers of
exponential length. Rows are sorted by time, as the real trace is.
"""
import random
import sys
from pathlib import Path


def rows(sessions: int, seed: int):
    rng = random.Random(seed)
    out = []
    for s in range(sessions):
        t = rng.uniform(0, 600)
        history = 0
        for turn in range(rng.randint(1, 6)):
            new = int(rng.expovariate(1 / 300)) + 20
            answer = int(rng.expovariate(1 / 250)) + 1
            prompt = history + new
            out.append((round(t, 3), "ChatGPT", prompt, answer, prompt + answer, "Conversation log",
                        f"conv-{s}", round(rng.uniform(1, 9), 3)))
            history = prompt + answer
            t += rng.expovariate(1 / 20)
    return sorted(out)


def main() -> None:
    sessions = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    lines = ["Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,Session ID,Elapsed time"]
    lines += [",".join(str(v) for v in row) for row in rows(sessions, seed)]
    (Path(__file__).parent / "burstgpt-style.csv").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""The bench's rows in short runs: what benchmarks/callgrind_rows.py counts and what the
profile-guided build (pgo_build.py) trains on, one definition for both.

A row is one of the bench's models (models.py) at a horizon of a second or less of CPU, the week
(week_replay.sq, beside this file: 16 replicas behind a `choose` router, a synthetic 200 k-request
week replayed at 135 times its pace) or the sweep (short runs of one compiled program, each
report's JSON text). `run(row, folder)` runs one and returns its reports' sha256.

Here, in the package, because the build runs it from an sdist, which ships the package and not
benchmarks/. It imports numpy and sq only, and sq only inside `run`: callgrind_rows.py loads this
file by its path to run the same rows on another built tree's sq.
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import os
from pathlib import Path

import numpy as np

# (model of models.MODELS, horizon, warm-up)
MODELS = {"mm1": ("mm1", 5e4, 0.0), "mm8": ("mm8", 6e3, 0.0), "mg1-ps": ("mg1-ps", 3e4, 0.0),
          "vllm-lo": ("vllm-lo", 1e4, 100.0), "vllm-hi": ("vllm-hi", 2000.0, 100.0), "chat": ("chat", 3000.0, 60.0)}
SWEEP_WARM, SWEEP_RUNS = 20, 50
WEEK_REQUESTS, WEEK_SPEED, WEEK_HORIZON, WEEK_WARMUP, WEEK_REPLICAS = 200_000, 135, 900.0, 60.0, 16
ALL = [*MODELS, "week", "sweep"]
WEEK_PROGRAM = Path(__file__).resolve().parent / "week_replay.sq"

# The synthetic week (benchmarks/bench_week.py writes it at any size): Azure 2023 conv's shapes.
WEEK = 7 * 86_400
PROMPT = (6.63, 0.99)     # log-mean, log-sd of ContextTokens (Azure 2023 conv's fit)
ANSWER = (5.02, 0.86)     # of GeneratedTokens
MAX_PROMPT, MAX_ANSWER = 16_000, 1_000


def run(row: str, folder: Path) -> str:
    """Runs one row in this process; the sha256 of its reports' JSON text. The week's trace is kept in `folder`."""
    # (sq's face is sq.compile = compile_program and sq.run = sq.engine.run's: nothing inside sq imports the face)
    from sq.bench.models import MODELS as BENCH
    from sq.engine.run import run as sq_run
    from sq.frontend.compile import compile_program

    if row in MODELS:
        name, horizon, warmup = MODELS[row]
        model = next(m for m in BENCH if m.name == name)
        return digest(sq_run(compile_program(source=model.source, horizon=horizon, warmup=warmup, seed=1)).json())
    if row == "week":
        source = WEEK_PROGRAM.read_text().replace("arrive replay(1)", f"arrive replay({WEEK_SPEED})")
        program = compile_program(source=source, sets={"R": WEEK_REPLICAS}, trace=str(week_trace(folder)),
                             horizon=WEEK_HORIZON, warmup=WEEK_WARMUP, seed=1)
        return digest(sq_run(program, samples="none").json())
    # the sweep: what a run of one compiled program costs, its JSON text included (callgrind_rows
    # counts what runs inside functools.reduce: the SWEEP_RUNS runs after the warm-up)
    model = next(m for m in BENCH if m.name == "sweep")
    program = compile_program(source=model.source, horizon=model.horizon, seed=1, arrivals=model.arrivals)
    texts = [sq_run(program, seed=s).json() for s in range(1, SWEEP_WARM + 1)]
    texts = functools.reduce(lambda acc, s: acc + [sq_run(program, seed=s).json()],
                             range(SWEEP_WARM + 1, SWEEP_WARM + SWEEP_RUNS + 1), texts)
    return digest("".join(texts))


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def week_trace(folder: Path) -> Path:
    """The week row's synthetic trace, written once into `folder` and kept there."""
    path = folder / f"week-{WEEK_REQUESTS}.csv"
    if not path.exists():
        write_week(str(path) + ".part", WEEK_REQUESTS)
        os.replace(str(path) + ".part", path)
    return path


def rate_shape(minutes: np.ndarray) -> np.ndarray:
    """The relative rate at each minute of the week: a daily cycle, weekend days at 60%."""
    hour = (minutes / 60) % 24
    daily = 1 + 0.6 * np.sin(2 * np.pi * (hour - 9) / 24)
    weekend = (minutes // 1440) % 7 >= 5
    return daily * np.where(weekend, 0.6, 1.0)


def week_arrivals(rng, n: int) -> np.ndarray:
    """n sorted arrival times (µs) over a week, drawn from rate_shape by inverting its CDF."""
    edges = np.arange(WEEK // 60 + 1, dtype=np.float64)
    cdf = np.concatenate([[0.0], np.cumsum(rate_shape(edges[:-1]))])
    cdf /= cdf[-1]
    minutes = np.interp(np.sort(rng.random(n)), cdf, edges)
    return np.minimum((minutes * 60e6).astype(np.int64), WEEK * 1_000_000 - 1)


def tokens(rng, shape, n: int, cap: int) -> np.ndarray:
    return np.clip(np.rint(rng.lognormal(*shape, n)), 1, cap).astype(np.int64)


def write_week(path: str, n: int, seed: int = 1) -> None:
    """A week of n requests in the Azure 2024 text (arrivals from rate_shape, lognormal tokens)."""
    rng = np.random.default_rng(seed)
    micros = week_arrivals(rng, n)
    write_rows(path, micros, tokens(rng, PROMPT, n, MAX_PROMPT), tokens(rng, ANSWER, n, MAX_ANSWER), rng)


def write_rows(path: str, micros: np.ndarray, new: np.ndarray, out: np.ndarray, rng,
               gz: bool = False) -> None:
    """The Azure 2024 text of sorted arrival times (µs from 2024-05-10 00:00 UTC, under a month) and
    token counts: one stamp in 5 without a fraction, the others with 1 to 6 digits, as in the real file."""
    rows = len(micros)
    digits = rng.integers(0, 7, rows)
    digits[rng.random(rows) < 0.2] = 0
    opener = gzip.open if gz else open
    with opener(path, "wt") as f:
        f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        lines = []
        for us, n, o, d in zip(micros.tolist(), new.tolist(), out.tolist(), digits.tolist()):
            s, frac = divmod(us, 1_000_000)
            day, rest = divmod(s, 86_400)
            h, rest = divmod(rest, 3600)
            m, sec = divmod(rest, 60)
            stamp = f"2024-05-{10 + day:02d} {h:02d}:{m:02d}:{sec:02d}"
            if d:
                stamp += "." + f"{frac:06d}"[:d]
            lines.append(f"{stamp}+00:00,{n},{o}\n")
            if len(lines) == 100_000:
                f.write("".join(lines))
                lines.clear()
        f.write("".join(lines))

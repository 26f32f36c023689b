"""`python benchmarks/callgrind_rows.py [TREE ...] [--rows NAMES] [--keep DIR]`: the engine's
instruction counts (callgrind) for issue 27's rows, in each built tree of sq given (default: this
checkout), side by side, with each report's sha256 so that a change that moves a result shows.

Instructions, not seconds: this machine's CPU time moves ±10–15 % between runs of one build, and a
speed-up of 1–2 % is what a round measures. The rows are the bench's models at horizons callgrind
runs in a minute or two; the engine's loop alone is counted (`--toggle-collect='*run_loop*'`), the
sweep row counts the whole process per run (50 runs of 1,000 arrivals inside `functools.reduce`,
after 20 warm-up runs), the week row runs benchmarks/week_replay.sq on 16 replicas at a full
week's load a replica (the synthetic 200 k-request week at `replay(135)`, horizon 900, warm-up 60,
`samples="none"`). `PYTHONHASHSEED=0`, seed 1, valgrind given the interpreter itself.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOOP = "*run_loop*"
# (model of sq.bench.models, horizon, warm-up)
ROWS = {"mm1": ("mm1", 5e4, 0.0), "mm8": ("mm8", 6e3, 0.0), "mg1-ps": ("mg1-ps", 3e4, 0.0),
        "vllm-lo": ("vllm-lo", 1e4, 100.0), "vllm-hi": ("vllm-hi", 2000.0, 100.0), "chat": ("chat", 3000.0, 60.0)}
SWEEP_WARM, SWEEP_RUNS = 20, 50
WEEK_REQUESTS, WEEK_SPEED, WEEK_HORIZON, WEEK_WARMUP, WEEK_REPLICAS = 200_000, 135, 900.0, 60.0, 16
ALL = [*ROWS, "week", "sweep"]


def digest(report) -> str:
    return hashlib.sha256(report.json().encode()).hexdigest()


def week_trace(folder: Path) -> Path:
    """The synthetic week (benchmarks/bench_week.py), written once into `folder` and kept there."""
    path = folder / f"week-{WEEK_REQUESTS}.csv"
    if not path.exists():
        sys.path.insert(0, str(HERE))
        import bench_week

        bench_week.write_week(str(path) + ".part", WEEK_REQUESTS)
        os.replace(str(path) + ".part", path)
    return path


def child(row: str, keep: Path) -> None:
    """Runs one row in this process (under valgrind) and prints its reports' digest."""
    import sq
    from sq.bench.models import MODELS

    if row in ROWS:
        name, horizon, warmup = ROWS[row]
        model = next(m for m in MODELS if m.name == name)
        print(digest(sq.run(sq.compile(source=model.source, horizon=horizon, warmup=warmup, seed=1))))
    elif row == "week":
        source = (HERE / "week_replay.sq").read_text().replace("arrive replay(1)", f"arrive replay({WEEK_SPEED})")
        program = sq.compile(source=source, sets={"R": WEEK_REPLICAS}, trace=str(week_trace(keep)),
                             horizon=WEEK_HORIZON, warmup=WEEK_WARMUP, seed=1)
        print(digest(sq.run(program, samples="none")))
    else:   # the sweep: what a run of one compiled program costs, its JSON text included
        model = next(m for m in MODELS if m.name == "sweep")
        program = sq.compile(source=model.source, horizon=model.horizon, seed=1, arrivals=model.arrivals)
        texts = [sq.run(program, seed=s).json() for s in range(1, SWEEP_WARM + 1)]
        functools.reduce(lambda acc, s: acc + [sq.run(program, seed=s).json()],
                         range(SWEEP_WARM + 1, SWEEP_WARM + SWEEP_RUNS + 1), texts)
        print(hashlib.sha256("".join(texts).encode()).hexdigest())


def counted(tree: Path, row: str, keep: Path) -> tuple[float, str]:
    """(instructions counted, the child's digest) of one row in one tree."""
    out = keep / f"callgrind.{tree.name}.{row}.out"
    toggle = "functools_reduce" if row == "sweep" else LOOP
    cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--toggle-collect={toggle}",
           f"--callgrind-out-file={out}", os.path.realpath(sys.executable), str(Path(__file__).resolve()),
           "--child", row, "--keep", str(keep)]
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(tree)}
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{row} in {tree}: exit {done.returncode}\n{done.stderr[-2000:]}")
    total = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
    if total is None:
        raise SystemExit(f"{row} in {tree}: no totals in {out}")
    count = int(total.group(1))
    return (count / SWEEP_RUNS if row == "sweep" else count), done.stdout.strip()[:8]


def shown(count: float, row: str) -> str:
    return f"{count / 1e3:9.1f} k" if row == "sweep" else f"{count / 1e6:9.2f} M"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="*", help="built trees of sq (folders holding sq/); default: this checkout")
    ap.add_argument("--rows", default=",".join(ALL), help=f"comma-separated, of {', '.join(ALL)}")
    ap.add_argument("--keep", default=os.path.join(tempfile.gettempdir(), "sq-callgrind"),
                    help="where the callgrind outputs and the week's trace are kept")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    keep = Path(a.keep)
    keep.mkdir(parents=True, exist_ok=True)
    if a.child:
        child(a.child, keep)
        return 0
    rows = a.rows.split(",")
    unknown = sorted(set(rows) - set(ALL))
    if unknown:
        ap.error(f"unknown row(s) {', '.join(unknown)}; known: {', '.join(ALL)}")
    trees = [Path(t).resolve() for t in a.trees] or [HERE.parent]
    if "week" in rows:
        week_trace(keep)
    print(f"{'row':8} " + " ".join(f"{t.name[-14:]:>14} sha256  " for t in trees) + (" last/first" if len(trees) > 1 else ""))
    status = 0
    for row in rows:
        got = [counted(t, row, keep) for t in trees]
        status |= len({d for _, d in got}) > 1
        ratio = f" {got[-1][0] / got[0][0]:10.4f}" if len(trees) > 1 else ""
        same = "" if len({d for _, d in got}) == 1 else "  REPORTS DIFFER"
        print(f"{row:8} " + " ".join(f"{shown(c, row):>14} {d}" for c, d in got) + ratio + same, flush=True)
    return status


if __name__ == "__main__":
    raise SystemExit(main())

"""`python -m sq bench` (or `python benchmarks/suite.py`): the standard models, timed in sq and in pyserq 0.1.2.

Each measurement runs in a fresh subprocess, so that peak memory (the
process's maximum resident set) belongs to that run alone and one
implementation's allocations cannot flatter the other's. Compilation is not
timed: only the run. pyserq is used when it is installed (it is a benchmark
dependency, never a runtime one, which is why this file lives in benchmarks/
and not in the sq package).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

MM1 = """
// M/M/1, rho = 0.9
stage server : fifo(1);
workload { arrive poisson(0.9); }
session { set t0 = now; run server (~exp(1)); observe response = now - t0; }
"""

MG1_PS = """
// M/G/1-PS, rho = 0.9, hyperexponential service (cv^2 = 4)
stage server : ps(1);
workload { arrive poisson(0.9); }
session { set t0 = now; run server (~h2(1, 4)); observe response = now - t0; }
"""

MM8 = """
// M/M/8, rho = 0.9
stage servers : fifo(8);
workload { arrive poisson(7.2); }
session { set t0 = now; run servers (~exp(1)); observe response = now - t0; }
"""

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _example(rel: str, **lets: float) -> str:
    """An example program's text with some `let` constants replaced (the harness passes only source text)."""
    text = (EXAMPLES / rel).read_text(encoding="utf-8")
    for name, value in lets.items():
        text, n = re.subn(rf"^let {name} = [^;]*;", f"let {name} = {value!r};", text, count=1, flags=re.M)
        if n != 1:
            raise ValueError(f"{rel} has no `let {name}`")
    return text


@dataclass(frozen=True)
class Model:
    name: str
    source: str
    horizon: float
    what: str
    runs: int = 1        # > 1: a sweep, `runs` runs of one compiled program with seeds 1..runs
    arrivals: int = 0    # each run's arrival limit (0: none)
    c_loop: bool = False  # also compare sq's engine with benchmarks/mm1_loop.c (the same model in plain C)
    bare: str = ""        # the same model without its extra declarations: sq's cost per event is compared


MODELS = [
    Model("mm1", MM1, 2_000_000, "M/M/1 fifo, rho 0.9", c_loop=True),
    Model("mg1-ps", MG1_PS, 1_000_000, "M/G/1-PS, rho 0.9, h2 service"),
    Model("mm8", MM8, 300_000, "M/M/8 fifo, rho 0.9"),
    # The step engine, pools and prefix cache (examples/): each pyserq run takes ~1-3 s.
    Model("vllm-lo", _example("single-turn/vllm_single_turn.sq", rate=6), 1200,
          "vLLM-like engine, light load: 6 req/s, ~16 decoding, no preemption"),
    Model("vllm-hi", _example("single-turn/vllm_single_turn.sq", rate=10), 1200,
          "vLLM-like engine, heavy load: 10 req/s, KV full, ~1 preemption/s"),
    Model("chat", _example("multi-turn/vllm.sq"), 6000,
          "multi-turn chat, prefix cache across turns, think time"),
    # What sweeps are made of: many short runs of one compiled program (the lowering, the engine's set-up
    # and the report are paid per run). pyserq changes a compiled program's seed only through its JSON.
    Model("sweep", MM1, 1e9, "1,000 short runs of M/M/1 (1 k arrivals each, seeds 1..1000, one compiled program)",
          runs=1000, arrivals=1000),
    Model("idle", "\n".join(f"pool idle{i} {{ cap 1; }} stage quiet{i} : fifo(1);" for i in range(512)) + MM1,
          200_000, "M/M/1 beside 512 idle pools and 512 idle fifo stages", bare=MM1),
    Model("instant", """
share maxmin;
stage a : ps(1);
stage b : ps(2);
workload { arrive batch(30000); }
session { run a, b (~exp(1)); }
""", 1e-9, "30,000 flows (max-min, two ps stages) started in one instant"),
]

# One measurement, run as `python -c` in a fresh process: prints a JSON line.
_MEASURE = r"""
import json, resource, sys, time
impl, source, horizon = sys.argv[1], sys.argv[2], float(sys.argv[3])
runs, arrivals = int(sys.argv[4]), int(sys.argv[5]) or None
if impl == "sq-engine":   # sq's engine alone, on the lowered program (no report): what the C loop does
    import sq, sq._engine, sq.lower.lowering
    lowered = sq.lower.lowering.lower(sq.compile(source=source, horizon=horizon, seed=1, arrivals=arrivals).to_dict(exact=True))
    class _Raw:   # the engine's raw results, read as the report fields used below
        def __init__(self, raw):
            self.events, self.arrivals, self.observes, self.stages = raw.events, raw.arrivals, {}, []
    run = lambda seed: _Raw(sq._engine.run(lowered, seed=seed))
elif impl == "sq":
    import sq
    import sq.lower.lowering, sq.results.report, sq._engine  # loaded here so that import time stays out of the timing
    program = sq.compile(source=source, horizon=horizon, seed=1, arrivals=arrivals)
    run = lambda seed: sq.run(program, seed=seed)
else:
    import pyserq
    program = pyserq.compile(source=source, horizon=horizon, seed=1, arrivals=arrivals)
    if runs == 1:
        run = lambda seed: pyserq.run(program)
    else:
        ir = json.loads(program.to_json())
        def run(seed):
            ir["seed"] = seed
            return pyserq.run(pyserq.Program.from_json(json.dumps(ir)))
reports = []
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.process_time()   # CPU time: the machine is shared
for seed in range(1, runs + 1):
    reports.append(run(seed))
wall = time.process_time() - t0
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
samples = sum(o.count if impl == "sq" else len(o.samples) for r in reports for o in r.observes.values())
print(json.dumps({"wall": wall, "events": sum(r.events for r in reports), "arrivals": sum(r.arrivals for r in reports),
                  "iterations": sum(s.iterations for r in reports for s in r.stages),
                  "samples": samples, "peak_kib": after, "grew_kib": after - before}))
"""


def measure_once(impl: str, model: Model, horizon: float) -> dict:
    out = subprocess.run([sys.executable, "-c", _MEASURE, impl, model.source, repr(horizon), str(model.runs),
                          str(model.arrivals)], capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(impl: str, model: Model, horizon: float, rounds: int) -> dict:
    """The median round by CPU time (each round a fresh process), with its rates."""
    return side_by_side([impl], model, horizon, rounds)[impl]


def side_by_side(impls: list[str], model: Model, horizon: float, rounds: int) -> dict[str, dict]:
    """Each implementation's median round (`in_turn`)."""
    return in_turn({impl: lambda impl=impl: measure_once(impl, model, horizon) for impl in impls}, rounds)


def in_turn(measurements: dict[str, Callable[[], dict]], rounds: int) -> dict[str, dict]:
    """Each measurement's median round, the rounds taken in turn (a, b, a, b, ...): a change in the
    machine's load over the minutes of a measurement falls on each alike, so the ratio of two
    medians compares runs made side by side."""
    taken: dict[str, list[dict]] = {name: [] for name in measurements}
    for _ in range(rounds):
        for name, once in measurements.items():
            taken[name].append(once())
    return {name: _median(ms) for name, ms in taken.items()}


def _median(ms: list[dict]) -> dict:
    if any("error" in m for m in ms):
        return next(m for m in ms if "error" in m)
    m = sorted(ms, key=lambda m: m["wall"])[len(ms) // 2]
    if "events" in m:
        m["events_per_s"] = m["events"] / m["wall"] if m["wall"] > 0 else float("inf")
        m["arrivals_per_s"] = m["arrivals"] / m["wall"] if m["wall"] > 0 else float("inf")
        m["iterations_per_s"] = m["iterations"] / m["wall"] if m["wall"] > 0 else float("inf")
        m["bytes_per_sample"] = 1024 * m["grew_kib"] / m["samples"] if m["samples"] else float("nan")
    return m


def flat(model: Model, horizon: float, rounds: int) -> tuple[float, float] | None:
    """sq's engine time per event with the model's idle declarations and without (its `bare`
    program), each net of what a run costs whatever its length (set-up, collection): the slope
    between a run of the horizon and one of a tenth of it. None: a run failed."""
    bare = Model(model.name, model.bare, horizon, model.what)
    got = in_turn({f"{name} {h}": lambda m=m, h=h: measure_once("sq-engine", m, h)
                   for name, m in (("idle", model), ("bare", bare)) for h in (horizon, horizon / 10)}, rounds)
    per = []
    for name in ("idle", "bare"):
        long, short = got[f"{name} {horizon}"], got[f"{name} {horizon / 10}"]
        if "error" in long or "error" in short or long["events"] == short["events"]:
            return None
        per.append((long["wall"] - short["wall"]) / (long["events"] - short["events"]))
    return per[0], per[1]


def engine_and_c_loop(model: Model, horizon: float, rounds: int) -> tuple[dict, float, float] | None:
    """sq's engine alone and benchmarks/mm1_loop.c built with gcc -O2, bare and with
    -DFULL_REPORT (CPU seconds), medians of rounds taken in turn; None without a compiler."""
    import shutil
    import tempfile

    here = Path(__file__).resolve().parent
    if shutil.which("gcc") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        exes = {}
        for name, flags in (("c", []), ("c-report", ["-DFULL_REPORT"])):
            exes[name] = Path(tmp) / name
            built = subprocess.run(["gcc", "-O2", *flags, "-I", str(here.parent / "sq" / "engine" / "_src"), str(here / "mm1_loop.c"),
                                    "-lm", "-o", str(exes[name])], capture_output=True)
            if built.returncode != 0:
                return None

        def c_loop(exe: Path) -> dict:
            out = subprocess.run([str(exe), repr(horizon), "1"], capture_output=True, text=True).stdout
            return {"wall": float(out.split()[0])}

        got = in_turn({"engine": lambda: measure_once("sq-engine", model, horizon),
                       **{name: lambda exe=exe: c_loop(exe) for name, exe in exes.items()}}, rounds)
    return got["engine"], got["c"]["wall"], got["c-report"]["wall"]


def _have_pyserq() -> bool:
    try:
        import pyserq  # noqa: F401
    except ImportError:
        return False
    return True


def _row(name: str, impl: str, m: dict) -> str:
    if "error" in m:
        return f"{name:8} {impl:7} error: {m['error']}"
    return (f"{name:8} {impl:7} {m['wall']:8.3f}s {m['events_per_s'] / 1e6:8.2f} Mev/s "
            f"{m['arrivals_per_s'] / 1e6:8.2f} Marr/s {m['iterations_per_s'] / 1e3:8.1f} kit/s  "
            f"peak {m['peak_kib'] / 1024:7.1f} MiB (run {m['grew_kib'] / 1024:6.1f}) "
            f"{m['bytes_per_sample']:6.1f} B/sample")


def main(names: list[str] | None = None, quick: bool = False, reference: bool = True, rounds: int = 5) -> int:
    chosen = [m for m in MODELS if not names or m.name in names]
    unknown = set(names or []) - {m.name for m in MODELS}
    if unknown:
        print(f"unknown benchmark(s): {', '.join(sorted(unknown))}; "
              f"known: {', '.join(m.name for m in MODELS)}", file=sys.stderr)
        return 2
    reference = reference and _have_pyserq()
    print(f"CPU time, median of {rounds} rounds (each in a fresh process)")
    print(f"{'model':8} {'impl':7} {'run':>9} {'events/s':>14} {'arrivals/s':>15} {'iterations/s':>14}")
    for model in chosen:
        horizon = model.horizon / 20 if quick else model.horizon
        if quick and model.runs > 1:
            model = Model(model.name, model.source, horizon, model.what, max(1, model.runs // 20), model.arrivals)
        got = side_by_side(["sq", "pyserq"] if reference else ["sq"], model, horizon, rounds)
        ours = got["sq"]
        print(_row(model.name, "sq", ours), flush=True)
        if reference:
            theirs = got["pyserq"]
            print(_row(model.name, "pyserq", theirs), flush=True)
            if "error" not in ours and "error" not in theirs:
                print(f"{model.name:8} ratio   sq is {theirs['wall'] / ours['wall']:.2f}x pyserq "
                      f"({model.what})", flush=True)
        if model.bare:
            per = flat(model, horizon, rounds)
            if per is None:
                print(f"{model.name:8} flat    (not measured: a run failed)")
            else:
                print(f"{model.name:8} flat    sq's engine {per[0] * 1e9:.0f} ns/event, {per[1] * 1e9:.0f} without the "
                      f"idle declarations: {per[0] / per[1]:.2f}x (target: within 1.2x)", flush=True)
        if model.c_loop:
            loops = engine_and_c_loop(model, horizon, rounds)
            if loops is None or "error" in loops[0]:
                print(f"{model.name:8} c-loop  (not measured: no gcc, or the engine run failed)")
            else:
                engine, c, c_report = loops
                print(f"{model.name:8} c-loop  sq's engine {engine['wall']:.3f}s, the C loop {c:.3f}s: "
                      f"{engine['wall'] / c:.2f}x the C loop (benchmarks/mm1_loop.c, gcc -O2; target: within 1.6x)",
                      flush=True)
                print(f"{model.name:8} c-loop  the C loop computing sq's whole report {c_report:.3f}s: "
                      f"{c_report / c:.2f}x the bare loop; sq's engine {engine['wall'] / c_report:.2f}x it "
                      f"(mm1_loop.c -DFULL_REPORT)", flush=True)
    return 0


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--rounds", type=int, default=5, help="rounds per measurement (the median is shown)")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    raise SystemExit(main(names=a.names, quick=a.quick, reference=not a.no_reference, rounds=a.rounds))

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


MODELS = [
    Model("mm1", MM1, 2_000_000, "M/M/1 fifo, rho 0.9"),
    Model("mg1-ps", MG1_PS, 1_000_000, "M/G/1-PS, rho 0.9, h2 service"),
    Model("mm8", MM8, 300_000, "M/M/8 fifo, rho 0.9"),
    # The step engine, pools and prefix cache (examples/): each pyserq run takes ~1-3 s.
    Model("vllm-lo", _example("single-turn/vllm_single_turn.sq", rate=6), 1200,
          "vLLM-like engine, light load: 6 req/s, ~16 decoding, no preemption"),
    Model("vllm-hi", _example("single-turn/vllm_single_turn.sq", rate=10), 1200,
          "vLLM-like engine, heavy load: 10 req/s, KV full, ~1 preemption/s"),
    Model("chat", _example("multi-turn/vllm.sq"), 6000,
          "multi-turn chat, prefix cache across turns, think time"),
]

# One measurement, run as `python -c` in a fresh process: prints a JSON line.
_MEASURE = r"""
import json, resource, sys, time
impl, source, horizon = sys.argv[1], sys.argv[2], float(sys.argv[3])
if impl == "sq":
    import sq
    import sq.lower, sq.report, sq._engine  # loaded here so that import time stays out of the timing
    program = sq.compile(source=source, horizon=horizon, seed=1)
    run = lambda: sq.run(program)
else:
    import pyserq
    program = pyserq.compile(source=source, horizon=horizon, seed=1)
    run = lambda: pyserq.run(program)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
report = run()
wall = time.perf_counter() - t0
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
samples = sum(o.count for o in report.observes.values()) if impl == "sq" else \
    sum(len(o.samples) for o in report.observes.values())
iterations = sum(s.iterations for s in report.stages)
print(json.dumps({"wall": wall, "events": report.events, "arrivals": report.arrivals, "iterations": iterations,
                  "samples": samples, "peak_kib": after, "grew_kib": after - before}))
"""


def measure(impl: str, model: Model, horizon: float) -> dict:
    out = subprocess.run([sys.executable, "-c", _MEASURE, impl, model.source, repr(horizon)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    m = json.loads(out.stdout.strip().splitlines()[-1])
    m["events_per_s"] = m["events"] / m["wall"] if m["wall"] > 0 else float("inf")
    m["arrivals_per_s"] = m["arrivals"] / m["wall"] if m["wall"] > 0 else float("inf")
    m["iterations_per_s"] = m["iterations"] / m["wall"] if m["wall"] > 0 else float("inf")
    m["bytes_per_sample"] = 1024 * m["grew_kib"] / m["samples"] if m["samples"] else float("nan")
    return m


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


def main(names: list[str] | None = None, quick: bool = False, reference: bool = True) -> int:
    chosen = [m for m in MODELS if not names or m.name in names]
    unknown = set(names or []) - {m.name for m in MODELS}
    if unknown:
        print(f"unknown benchmark(s): {', '.join(sorted(unknown))}; "
              f"known: {', '.join(m.name for m in MODELS)}", file=sys.stderr)
        return 2
    reference = reference and _have_pyserq()
    print(f"{'model':8} {'impl':7} {'run':>9} {'events/s':>14} {'arrivals/s':>15} {'iterations/s':>14}")
    for model in chosen:
        horizon = model.horizon / 20 if quick else model.horizon
        ours = measure("sq", model, horizon)
        print(_row(model.name, "sq", ours), flush=True)
        if reference:
            theirs = measure("pyserq", model, horizon)
            print(_row(model.name, "pyserq", theirs), flush=True)
            if "error" not in ours and "error" not in theirs:
                print(f"{model.name:8} ratio   sq is {theirs['wall'] / ours['wall']:.2f}x pyserq "
                      f"({model.what})", flush=True)
    return 0


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    raise SystemExit(main(names=a.names, quick=a.quick, reference=not a.no_reference))

"""`python benchmarks/suite.py [NAMES] [--quick] [--rounds N] [--no-reference]`: `python -m sq bench`
(sq.bench: the standard models, sq beside pyserq 0.1.2), then, for `mm1`, sq's engine against
mm1_loop.c, the same model hand-written in C, bare and computing sq's whole report (-DFULL_REPORT).
The C loop needs gcc and this checkout's sq/engine/_src headers, which is why its rows are here and not in
the package."""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))   # this checkout's sq (built in place), the one the C loop's headers are of

from sq.bench import main as bench  # noqa: E402
from sq.bench import measure  # noqa: E402
from sq.bench.models import MODELS  # noqa: E402
from sq.bench.table import QUICK  # noqa: E402


def build_c_loops(into: Path) -> dict[str, Path] | None:
    """mm1_loop.c built with gcc -O2, bare and with -DFULL_REPORT; None without gcc."""
    if shutil.which("gcc") is None:
        return None
    exes = {}
    for name, flags in (("c", []), ("c-report", ["-DFULL_REPORT"])):
        exes[name] = into / name
        subprocess.run(["gcc", "-O2", *flags, "-I", str(HERE.parent / "sq" / "engine" / "_src"), str(HERE / "mm1_loop.c"),
                        "-lm", "-o", str(exes[name])], check=True)
    return exes


def c_loop_rows(quick: bool, rounds: int) -> None:
    model = next(m for m in MODELS if m.name == "mm1")
    model = model.shortened(QUICK) if quick else model
    with tempfile.TemporaryDirectory() as tmp:
        exes = build_c_loops(Path(tmp))
        if exes is None:
            print("mm1      c-loop  (not measured: no gcc)")
            return

        def c_loop(exe: Path) -> dict:
            out = subprocess.run([str(exe), repr(model.horizon), "1"], capture_output=True, text=True, check=True)
            return {"cpu": float(out.stdout.split()[0])}

        got = measure.in_turn({"engine": lambda: measure.once("sq-engine", model),
                               **{name: lambda exe=exe: c_loop(exe) for name, exe in exes.items()}}, rounds)
    if "error" in got["engine"]:
        print(f"mm1      c-loop  (not measured: {got['engine']['error']})")
        return
    engine, c, full = got["engine"]["cpu"], got["c"]["cpu"], got["c-report"]["cpu"]
    print(f"mm1      c-loop  sq's engine {engine:.3f}s, the C loop {c:.3f}s: {engine / c:.2f}x it "
          f"(benchmarks/mm1_loop.c, gcc -O2); computing sq's whole report {full:.3f}s ({full / c:.2f}x the bare "
          f"loop): sq's engine is {engine / full:.2f}x it")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--rounds", type=int, default=5, help="rounds per measurement (the least CPU time is shown)")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    status = bench(names=a.names, quick=a.quick, reference=not a.no_reference, rounds=a.rounds)
    if not a.names or "mm1" in a.names:
        c_loop_rows(a.quick, a.rounds)
    raise SystemExit(status)

"""The bench's table: each model's least CPU time in sq and pyserq, the ratio, the reports compared."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from sq.bench import measure
from sq.bench.models import MODELS, Model
from sq.errors import SqError

QUICK = 20   # --quick: horizons (a sweep's run count) this many times smaller
# A row whose runs spend this share of their time on what any run costs (set-up, report) times
# those costs rather than the model: it is said to be too short to be a speed figure.
SHORT = 0.10
# Below this much CPU time a run is too short to time either: the clock's grain, the first touch of
# the memory it grows into and the machine's other work weigh more than the model.
BRIEF = 0.05


def reference_driver(given: str | None = None) -> str | None:
    """The file that runs pyserq for the comparison: `given` (--reference FILE), else the source
    checkout's benchmarks/reference_pyserq.py when sq runs from one and pyserq is installed; None
    when there is none. sq never imports pyserq: the driver is loaded by a child process."""
    if given is not None:
        if not Path(given).is_file():
            raise SqError(f"bench: --reference {given}: no such file", phase="settings")
        return str(Path(given).resolve())
    found = Path(measure.SQ_PATH) / "benchmarks" / "reference_pyserq.py"
    return str(found) if found.is_file() and importlib.util.find_spec("pyserq") is not None else None


def chosen(names: list[str] | None) -> list[Model]:
    unknown = sorted(set(names or []) - {m.name for m in MODELS})
    if unknown:
        raise SqError(f"bench: unknown model(s) {', '.join(unknown)}; known: {', '.join(m.name for m in MODELS)}",
                      phase="settings")
    return [m for m in MODELS if not names or m.name in names]


def equality(ours: dict, theirs: dict | None) -> str:
    """Whether each pair of reports (one per seed) has the same JSON text."""
    if theirs is None:
        return "-"
    if ours["digests"] is None or theirs["digests"] is None:
        return "VARY"     # one implementation's rounds disagreed among themselves
    for seed, (a, b) in enumerate(zip(ours["digests"], theirs["digests"]), start=1):
        if a != b:
            return f"DIFFER (seed {seed})"
    return "equal"


def note(model: Model, got: dict[str, dict]) -> str:
    if model.runs > 1:
        return "per-run costs are what this row times"
    share = max(m["fixed"] / m["cpu"] if m["cpu"] > 0 else 1.0 for m in got.values())
    if share >= SHORT:
        return f"too short to be a speed figure: fixed costs are {share:.0%} of a run"
    if min(m["cpu"] for m in got.values()) < BRIEF:
        return f"too short to be a speed figure: under {BRIEF:g} s of CPU"
    return ""


def row(model: Model, got: dict[str, dict]) -> tuple[str, bool]:
    """The model's line, and whether its reports differ from pyserq's."""
    ours, theirs = got["sq"], got.get("pyserq")
    failed = [f"{impl}: {m['error']}" for impl, m in got.items() if "error" in m]
    if failed:
        return f"{model.name:8} error  {'; '.join(failed)}", False
    same = equality(ours, theirs)
    fixed = f"{ours['fixed'] * 1e6:7.0f}" + (f" {theirs['fixed'] * 1e6:7.0f}" if theirs else " " * 8)
    peak = f"{ours['peak_kib'] / 1024:6.1f}" + (f" {theirs['peak_kib'] / 1024:6.1f}" if theirs else " " * 7)
    if theirs:
        # the run alone: what sq's engine and report set-up cost against pyserq's run, its statistics included
        alone = (theirs["cpu"] - theirs["report"]) / (ours["cpu"] - ours["report"])
        against = f"{theirs['cpu']:9.3f} {theirs['cpu'] / ours['cpu']:7.2f}x {alone:7.2f}x"
    else:
        against = f"{'':9} {'':8} {'':8}"
    line = (f"{model.name:8} {ours['cpu']:8.3f} {against} {same:8} {ours['report'] / ours['cpu']:8.0%} "
            f"{ours['events'] / ours['cpu'] / 1e6:8.2f} {fixed}  {peak}  {note(model, got)}")
    return line.rstrip(), same not in ("equal", "-")


def main(names: list[str] | None = None, quick: bool = False, reference: bool = True, rounds: int = 5,
         driver: str | None = None) -> int:
    """Print the table; 1 if some pair of reports differs (or varies between rounds), else 0."""
    models = [m.shortened(QUICK) if quick else m for m in chosen(names)]
    impls = {"sq": "sq"}
    found = reference_driver(driver) if reference else None
    if found:
        impls["pyserq"] = found
    elif reference:
        print("no pyserq comparison: sq's figures only (from a source checkout with pyserq installed, "
              "pip install 'sq[bench]', or --reference benchmarks/reference_pyserq.py, it runs beside sq)")
    print(f"least CPU time of {rounds} round(s), each in a fresh process; a run's time includes its report's JSON text"
          + ("" if quick else f"; runs under {measure.ROUND:g} s are made again in their round, timed by their mean"))
    print(f"{'model':8} {'sq s':>8} {'pyserq s':>9} {'ratio':>8} {'run only':>8} {'reports':8} {'sq json':>8} {'sq Mev/s':>8} "
          f"{'fixed µs/run':>15}  {'peak MiB':>13}")
    differ = False
    for model in models:
        # (--quick is a smoke test: its short runs are not made again to fill a round)
        line, bad = row(model, measure.side_by_side(impls, model, rounds, 0.0 if quick else measure.ROUND))
        print(line, flush=True)
        differ |= bad
    print()
    for model in models:
        print(f"{model.name:8} {model.what}; horizon {model.horizon:g}" + (f", warm-up {model.warmup:g}" if model.warmup else "")
              + (f", {model.runs} runs" if model.runs > 1 else ""))
    return 1 if differ else 0

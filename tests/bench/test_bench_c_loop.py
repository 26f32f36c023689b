"""benchmarks/mm1_loop.c, the hand-written M/M/1 that sq's engine is timed against, computes what it
says: its bare build's response mean and number in system, and its -DFULL_REPORT build's every
figure of sq's report for the model, equal sq's report to the last digit. (A floor that computed
something else would make the comparison meaningless.)"""
import shutil
import subprocess
from pathlib import Path

import pytest

import sq

from sq.bench.models import MODELS

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc to build the C loop")


@pytest.fixture(scope="module")
def loops(tmp_path_factory):
    out = tmp_path_factory.mktemp("mm1_loop")
    built = {}
    for name, flags in (("bare", []), ("report", ["-DFULL_REPORT"])):
        built[name] = out / name
        subprocess.run(["gcc", "-O2", *flags, "-I", str(ROOT / "sq" / "engine" / "_src"), str(ROOT / "benchmarks" / "mm1_loop.c"),
                        "-lm", "-o", str(built[name])], check=True)
    return built


def figures(exe: Path, horizon: float, seed: int) -> list[str]:
    return subprocess.run([str(exe), repr(horizon), str(seed)], capture_output=True, text=True,
                          check=True).stdout.split()


@pytest.mark.parametrize("seed", [1, 2, 7])
@pytest.mark.parametrize("horizon", [300.0, 20000.0])
def test_the_c_loops_give_sqs_report(loops, seed, horizon):
    model = next(m for m in MODELS if m.name == "mm1")
    report = sq.run(sq.compile(source=model.source, horizon=horizon, seed=seed))
    stage = report.stages[0]
    response = report.observes["response"]
    bare = figures(loops["bare"], horizon, seed)
    assert (int(bare[1]), int(bare[2]), float(bare[3])) == (report.events, response.count, response.mean)
    assert float(bare[4]) == pytest.approx(stage.mean_number, rel=1e-12)    # summed as one area, not sq's way
    full = figures(loops["report"], horizon, seed)
    assert full[1:5] == bare[1:5]     # the same loop, with more kept beside it
    assert [int(x) for x in full[5:8]] == [report.arrivals, report.ended, stage.completed]
    assert [float(x) for x in full[8:]] == [stage.mean_wait, stage.mean_service, report.mean_live,
                                            stage.mean_number, stage.utilization]

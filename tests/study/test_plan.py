"""One plan per study (issue 24): each point compiled and checked once, seeds checked once,
tasks that carry (point, seed) and the IR by reference, shipped once per worker."""
from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import sq
import sq.frontend.compile
import sq.study.capacity
import sq.study.plan
import sq.study.sweep
from sq.cli.main import main as cli
from sq.errors import SqError
from sq.study.plan import Plan, PointIR, Task, seed_list
from sq.study.sweep import run_plan, sweep

ROOT = Path(__file__).resolve().parents[2]
MMC = str(ROOT / "examples" / "single-turn" / "mmc.sq")
VLLM = str(ROOT / "examples" / "single-turn" / "vllm_single_turn.sq")
SHORT = {"horizon": 300.0, "warmup": 30.0}


@pytest.fixture
def compiles(monkeypatch):
    """How many times a study compiled a program (sq.frontend.compile.compile_program's calls)."""
    calls = []
    real = sq.frontend.compile.compile_program

    def counting(*args, **kwargs):
        calls.append(kwargs.get("sets"))
        return real(*args, **kwargs)

    monkeypatch.setattr(sq.frontend.compile, "compile_program", counting)
    return calls


@pytest.fixture
def seed_checks(monkeypatch):
    """How many times a study checked its seeds (seed_list, wherever it is imported)."""
    calls = []

    def counting(seeds, who="sweep"):
        calls.append(who)
        return seed_list(seeds, who)

    for module in (sq.study.plan, sq.study.sweep, sq.study.capacity):
        monkeypatch.setattr(module, "seed_list", counting)
    return calls


def test_a_sweep_compiles_each_point_once(compiles, seed_checks):
    result = sweep(MMC, {"lam": [4, 5], "c": [8, 9]}, [1, 2, 3], executor="serial", **SHORT)
    assert len(result.records) == 12
    assert sorted(map(str, compiles)) == sorted(map(str, [{"lam": lam, "c": c} for lam in (4, 5) for c in (8, 9)]))
    assert seed_checks == ["sweep"]


def test_sq_sweep_compiles_each_point_once(compiles, capsys):
    # the CLI used to compile its first point to check it, and the sweep compiled it again
    assert cli(["sweep", MMC, "--set", "lam=4,5", "--seeds", "1..2", "-j", "1", "--horizon", "300",
                "--warmup", "30", "--no-progress"]) == 0
    assert sorted(c["lam"] for c in compiles) == [4.0, 5.0]
    assert "lam" in capsys.readouterr().out


def test_a_plan_runs_more_seeds_without_compiling_again(compiles):
    plan = Plan(MMC, {"lam": [5]}, **SHORT)
    assert len(compiles) == 1
    first = run_plan(plan, [1, 2], executor="serial")
    more = run_plan(plan, [3, 4, 5], executor="serial")
    assert len(compiles) == 1
    assert [r["seed"] for r in first.records + more.records] == [1, 2, 3, 4, 5]
    # the same runs as a sweep of all five seeds
    whole = sweep(MMC, {"lam": [5]}, range(1, 6), executor="serial", **SHORT)
    drop = ("wall_s",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in first.records + more.records] == \
        [{k: v for k, v in r.items() if k not in drop} for r in whole.records]


def test_capacity_grows_seeds_on_one_plan_per_value(compiles, seed_checks, monkeypatch):
    batches = []
    real = sq.study.sweep.run_plan

    def counting(plan, seeds, **kwargs):
        before = len(compiles)
        result = real(plan, seeds, **kwargs)
        batches.append((plan, list(seeds), len(compiles) - before))
        return result

    monkeypatch.setattr(sq.study.sweep, "run_plan", counting)
    cap = sq.capacity(MMC, "lam", "wait.mean <= 0.05", lo=4.0, hi=7.0, tol=0.1, seeds=[1, 2], max_seeds=8,
                      executor="serial", settle=1, **SHORT)
    values = [p.value for p in cap.points]
    plans = {id(plan) for plan, _, _ in batches}
    # some value needed more seeds than the first two: a second batch on the same plan
    assert len(batches) > len(plans) == len(values)
    assert all(compiled == 0 for _, _, compiled in batches)             # running a batch compiles nothing
    assert [plan.points for plan in {id(p): p for p, _, _ in batches}.values()] == [[{"lam": v}] for v in values]
    assert seed_checks == ["capacity"]


def test_a_task_carries_the_point_and_seed_and_names_its_ir():
    plan = Plan(VLLM, {"rate": [2, 3]}, **SHORT)
    task = plan.tasks([7, 8])[3]
    assert (task.point, task.seed) == (1, 8)
    ir = plan.irs[1].text
    assert len(ir) > 2000
    shipped = pickle.dumps(task)
    assert len(shipped) < 400 and ir.encode() not in shipped     # the IR travels beside, once
    arrived = pickle.loads(shipped)
    with pytest.raises(SqError, match="without its point's IR"):
        arrived.ir_json
    sq.study.plan.ship(plan.shared())              # what a worker's initializer does
    assert arrived.ir_json == ir and arrived == task


def test_worker_processes_get_each_ir_once(monkeypatch):
    import sq.study.executors as executors

    sizes, started = [], []
    real = executors.process_pool

    def recording(workers, shared=None):
        started.append(sum(len(text) for text in (shared or {}).values()))
        pool = real(workers, shared)
        submit = pool.submit

        def measured(fn, *args, **kwargs):
            sizes.append(len(pickle.dumps((fn, args, kwargs))))
            return submit(fn, *args, **kwargs)

        pool.submit = measured
        return pool

    monkeypatch.setattr(executors, "process_pool", recording)
    result = sweep(VLLM, {"rate": [2, 3]}, [1, 2], executor="processes", jobs=2, **SHORT)
    serial = sweep(VLLM, {"rate": [2, 3]}, [1, 2], executor="serial", **SHORT)
    assert [r["seed"] for r in result.records] == [1, 2, 1, 2]
    assert [r["ttft.mean"] for r in result.records] == [r["ttft.mean"] for r in serial.records]
    irs = sum(len(text) for text in Plan(VLLM, {"rate": [2, 3]}, **SHORT).shared().values())
    assert started == [irs] and irs > 4000                   # both IRs, once, as the workers start
    assert len(sizes) == 4 and max(sizes) < 500             # each task: its point, seed and the IR's digest


def test_a_dask_cluster_gets_each_ir_once():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                                  processes=False, protocol="tcp://") as cluster, \
            distributed.Client(cluster) as client:
        scattered, submitted = [], []
        scatter, submit = client.scatter, client.submit

        def recording_scatter(data, **kwargs):
            scattered.append(data)
            return scatter(data, **kwargs)

        def recording_submit(fn, *args, **kwargs):
            submitted.append(args)
            return submit(fn, *args, **kwargs)

        client.scatter, client.submit = recording_scatter, recording_submit
        result = sweep(MMC, {"lam": [4, 5]}, [1, 2, 3], executor=client, **SHORT)
    assert len(result.records) == 6
    assert len(scattered) == 1 and len(scattered[0]) == 2            # two points' IRs, one scatter
    assert len(submitted) == 6
    for ir, _fn, task in submitted:
        assert isinstance(ir, distributed.Future) and isinstance(task, Task)
        assert len(pickle.dumps(task)) < 400


def test_an_error_keeps_its_phase_and_notes_across_a_worker(monkeypatch):
    import sq.engine.run

    def refuse(lowered, seed, **_):
        raise SqError("the engine refuses", phase="validate", notes=("help: a note that must survive",))

    monkeypatch.setattr(sq.engine.run, "run_lowered", refuse)
    plan = Plan(MMC, {"lam": [5]}, **SHORT)
    record = sq.study.plan.run_task(plan.tasks([4])[0])
    assert pickle.loads(pickle.dumps(record)) == record       # plain data crosses any worker
    with pytest.raises(SqError) as err:
        run_plan(plan, [4], executor="serial")
    assert err.value.phase == "validate" and err.value.notes == ("help: a note that must survive",)
    assert err.value.message == "sweep: the run at lam=5 seed 4 failed:\nerror: the engine refuses"
    assert str(err.value).count("help: a note that must survive") == 1


def test_the_ir_reference_is_equal_by_digest():
    a, b = PointIR("{}"), PointIR("{}")
    assert a == b and hash(a) == hash(b) and a != PointIR("[]")


def test_a_large_grid_compiles_each_window_when_it_is_reached(compiles, monkeypatch):
    # 200 points, more than three windows: an interrupt in the second window has compiled two
    # windows, not the grid (points were compiled up front before, bounded only by MAX_POINTS)
    window = sq.study.plan.WINDOW
    calls = []
    real = sq.study.sweep.run_task

    def interrupted(task):
        calls.append(task)
        if len(calls) == window + 6:
            raise KeyboardInterrupt
        return real(task)

    monkeypatch.setattr(sq.study.sweep, "run_task", interrupted)
    grid = {"lam": [round(4 + k / 100, 2) for k in range(200)]}
    plan = Plan(MMC, grid, horizon=20.0, warmup=0.0)
    assert plan.compiled == len(compiles) == window          # the first window, checked before any run
    with pytest.raises(KeyboardInterrupt) as stop:
        run_plan(plan, [1], executor="serial")
    assert len(compiles) == 2 * window and len(stop.value.sweep.records) == window + 5
    assert stop.value.sweep.provenance["seeds"] == [1] and stop.value.sweep.total == 200


def test_windows_on_worker_processes_give_the_serial_runs():
    # more points than a window: the windows share one pool of processes, each task carrying its IR
    grid = {"lam": [round(4 + k / 100, 2) for k in range(sq.study.plan.WINDOW + 6)]}
    runs = [sweep(MMC, grid, [1], horizon=20.0, warmup=0.0, executor=executor, jobs=2).records
            for executor in ("serial", "processes")]
    drop = ("wall_s",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in runs[0]] == \
        [{k: v for k, v in r.items() if k not in drop} for r in runs[1]]

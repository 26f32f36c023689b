"""Capacity search (sq.capacity): SLO text, verdicts, the search, and answers checked against theory."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

import sq
from sq.study.capacity import MEETS, UNDECIDED, VIOLATES, Knob, Point, capacity, resolve_knob, search
from sq.study.slo import OPEN, Condition, parse_slo

ROOT = Path(__file__).resolve().parents[2]
MM1 = str(ROOT / "tests" / "capacity" / "mm1.sq")
MD1 = str(ROOT / "examples" / "single-turn" / "mg1.sq")
MMC = str(ROOT / "examples" / "single-turn" / "mmc.sq")
VLLM = str(ROOT / "examples" / "single-turn" / "vllm_single_turn.sq")
REPLICA = str(ROOT / "examples" / "multi-turn" / "replica.sq")


# -- SLO text -------------------------------------------------------------------

def test_slo_texts_read_into_conditions():
    conds = parse_slo(["ttft.p99 <= 0.5", "ttft.le(0.5)>=0.99, pool.kv.preemptions < 5 and latency.mean>1e1"])
    assert [(c.metric, c.op, c.bound) for c in conds] == [
        ("ttft.p99", "<=", 0.5), ("ttft.le(0.5)", ">=", 0.99), ("pool.kv.preemptions", "<", 5.0),
        ("latency.mean", ">", 10.0)]


@pytest.mark.parametrize("text, words", [
    ("ttft.p98 <= 0.5", "unknown metric `ttft.p98`"),
    ("ttft.p99 == 0.5", "unknown operator `==`"),
    ("ttft.p99 <= ", "expected a number after `<=`"),
    ("ttft.p99 <= fast", "expected a number after `<=`, found `fast`"),
    ("ttft.p99 0.5", "no comparison"),
    ("<= 0.5", "no metric"),
])
def test_bad_slo_text_is_a_clear_error(text, words):
    with pytest.raises(sq.SqError) as err:
        parse_slo(text)
    assert words in str(err.value)


def test_an_slo_on_a_metric_the_program_lacks_fails_before_any_run(monkeypatch):
    import sq.study.sweep

    def no_runs(*args, **kwargs):
        raise AssertionError("a run started")

    monkeypatch.setattr(sq.study.sweep, "run_plan", no_runs)
    with pytest.raises(sq.SqError, match="no observe `ttft`"):
        capacity(MM1, "lam", "ttft.le(0.5) >= 0.9")
    with pytest.raises(sq.SqError, match="lo < hi"):
        capacity(MM1, "lam", "response.p99 <= 0.5", lo=2, hi=1)
    with pytest.raises(sq.SqError, match="`nope`"):
        capacity(MM1, "nope", "response.mean <= 5")
    for level in (1.5, 0, "95%"):      # the level checked as t_interval checks it, before the runs
        with pytest.raises(sq.SqError) as caught:
            capacity(MM1, "lam", "response.mean <= 5", confidence=level)
        assert caught.value.message == f"capacity: confidence must be between 0 and 1, found {level!r}"
    with pytest.raises(sq.SqError, match="^error: capacity: jobs must be a positive whole number, found 0$"):
        capacity(MM1, "lam", "response.mean <= 5", jobs=0)
    with pytest.raises(sq.SqError, match="^error: capacity: unknown executor `gpu`\n"):
        capacity(MM1, "lam", "response.mean <= 5", executor="gpu")


@pytest.mark.parametrize("op, mean, half, verdict", [
    ("<=", 4.0, 0.5, MEETS), ("<=", 4.5, 0.5, MEETS), ("<=", 4.6, 0.5, OPEN), ("<=", 5.6, 0.5, VIOLATES),
    ("<", 4.5, 0.5, OPEN), (">=", 0.995, 0.004, MEETS), (">=", 0.99, 0.004, OPEN), (">", 0.98, 0.004, VIOLATES),
    ("<=", math.nan, 0.1, VIOLATES), ("<=", 4.0, math.nan, OPEN),
])
def test_a_condition_judges_an_interval(op, mean, half, verdict):
    assert Condition("x.mean", op, 5.0 if op in ("<=", "<") else 0.99).judge(mean, half) == verdict


@pytest.mark.parametrize("op, below, at, above", [
    ("<=", True, True, False), ("<", True, False, False), (">=", False, True, True), (">", False, False, True),
])
def test_a_condition_holds_for_one_number(op, below, at, above):
    c = Condition("x.mean", op, 2.0)
    assert (c.holds(1.5), c.holds(2.0), c.holds(2.5)) == (below, at, above)
    assert (c.holds(-math.inf), c.holds(math.inf)) == (below, above)
    assert not c.holds(math.nan)       # no samples is no evidence, whichever the side


# -- the search, on made-up verdicts ------------------------------------------------

def _fake(boundary, band=0.0, direction="max"):
    """Verdicts of a monotone SLO with its boundary at `boundary`, undecided within `band` of it."""
    tried = []

    def evaluate(x):
        tried.append(x)
        gap = (x - boundary) if direction == "max" else (boundary - x)
        decision = UNDECIDED if abs(gap) <= band else (VIOLATES if gap > 0 else MEETS)
        return Point(x, decision, [1, 2], {}, {}, True)

    return evaluate, tried


def test_search_a_real_knob_up_to_the_tolerance():
    evaluate, tried = _fake(3.7)
    value, (m, v), confident, _, points = search(Knob("rate", 1.0, False, "max"), evaluate, tol=0.02)
    assert confident and m == value and m <= 3.7 < v and (v - m) <= 0.02 * v
    assert tried[:3] == [1.0, 2.0, 4.0]          # geometric probing from the program's value
    assert len(points) == len(tried)


def test_search_an_integer_knob_for_the_smallest_that_meets():
    evaluate, tried = _fake(8.5, direction="min")        # 9 meets, 8 violates
    value, bracket, confident, _, _ = search(Knob("R", 2, True, "min"), evaluate)
    assert (value, bracket, confident) == (9, (9, 8), True)
    assert all(isinstance(x, int) for x in tried)


def test_an_undecided_band_narrower_than_tol_is_flanked():
    evaluate, tried = _fake(3.7, band=0.015)
    value, (m, v), confident, _, points = search(Knob("rate", 1.0, False, "max"), evaluate, tol=0.02)
    assert confident and m <= 3.7 < v and (v - m) <= 0.02 * v
    assert any(p.decision == UNDECIDED for p in points)


def test_an_undecided_band_wider_than_tol_is_said_so():
    evaluate, _ = _fake(3.7, band=0.3)
    value, (m, v), confident, reason, _ = search(Knob("rate", 1.0, False, "max"), evaluate, tol=0.02)
    assert not confident and "undecided" in reason
    assert value == m and m < 3.4 and v > 4.0


def test_given_ends_that_do_not_bracket():
    evaluate, _ = _fake(3.7)
    value, bracket, confident, reason, _ = search(Knob("rate", 1.0, False, "max"), evaluate, lo=1, hi=2)
    assert (value, bracket, confident) == (2, (2, None), False) and "further out" in reason
    value, bracket, confident, reason, _ = search(Knob("rate", 1.0, False, "max"), evaluate, lo=5, hi=6)
    assert (value, bracket, confident) == (None, (None, 5), False) and "no value" in reason


def test_the_smallest_deployment_can_be_one():
    evaluate, _ = _fake(0.5, direction="min")
    assert search(Knob("R", 4, True, "min"), evaluate)[:3] == (1, (1, None), True)


def test_the_probes_stop_after_max_steps_and_say_how_far_they_went():
    from sq.study.capacity import MAX_STEPS

    tried = []

    def never_meets(x):
        tried.append(x)
        return Point(x, VIOLATES, [1, 2], {}, {}, True)

    value, _, confident, reason, _ = search(Knob("R", 4, True, "min"), never_meets)
    # then one look the other way (2), in case the verdicts run against the direction
    assert tried == [4 * 2 ** k for k in range(MAX_STEPS + 1)] + [2] and value is None and not confident
    assert f"out to {4 * 2 ** MAX_STEPS} ({MAX_STEPS} doublings" in reason and "give lo and hi" in reason


def test_runs_that_never_settle_with_more_room_stop_the_search():
    # growth while the SLO is met by far, at every size: the horizon's fault, not the load's
    tried = []

    def unsettled(x):
        tried.append(x)
        return Point(x, VIOLATES, [1, 2], {"ttft.p99": (0.1, 0.01)}, {"ttft.p99 <= 0.5": MEETS}, False)

    value, _, confident, reason, _ = search(Knob("R", 4, True, "min"), unsettled)
    assert tried == [4, 8, 16] and value is None and not confident
    assert "at 4, 8, 16 its metrics meet it but the runs are not stationary" in reason
    assert "lengthen the warm-up and the horizon" in reason


def test_bisection_tries_clean_values():
    evaluate, tried = _fake(0.66)
    search(Knob("lam", 0.5, False, "max"), evaluate, lo=0.5, hi=0.9, tol=0.05)
    assert 0.65 in tried and 0.6499999999999999 not in tried       # (0.6 + 0.7) / 2 in floats
    assert all(x == round(x, 4) for x in tried)
    evaluate, tried = _fake(3.7, band=0.015)                        # flanks, too
    search(Knob("rate", 1.0, False, "max"), evaluate, tol=0.02)
    assert all(x == round(x, 4) for x in tried)


# -- which way to search ------------------------------------------------------

@pytest.mark.parametrize("path, knob, integer, direction", [
    (VLLM, "rate", False, "max"),      # changes the workload: the largest load
    (VLLM, "kv_gib", True, "min"),     # changes a pool: the smallest memory
    (MMC, "c", True, "min"),           # a fifo stage's servers
    (REPLICA, "R", True, "min"),       # an array size
])
def test_the_knob_says_which_way_to_search(path, knob, integer, direction):
    k = resolve_knob(path, knob, None)
    assert (k.integer, k.direction) == (integer, direction)
    assert resolve_knob(path, knob, "max").direction == "max"


# -- theory -----------------------------------------------------------------------

def _check_theory(cap, exact, tol):
    assert cap.confident, cap.line()
    meets, violates = cap.bracket
    assert min(meets, violates) <= exact <= max(meets, violates), cap.line()
    assert abs(cap.value - exact) <= tol * exact, cap.line()


@pytest.mark.parametrize("tol, horizon", [(0.05, 20000), pytest.param(0.02, 50000, marks=pytest.mark.slow)])
def test_mm1_mean_response(tol, horizon):
    # M/M/1, mu = 1: the mean response 1 / (mu - lam) <= T holds up to lam = mu - 1/T
    mu, target = 1.0, 5.0
    cap = capacity(MM1, "lam", f"response.mean <= {target}", tol=tol, horizon=horizon, warmup=horizon / 10,
                   executor="serial")
    _check_theory(cap, mu - 1 / target, tol)
    assert cap.direction == "max" and not cap.integer


def _erlang_c_wait(c, lam, mu):
    a = lam / mu
    top = a ** c / math.factorial(c) / (1 - a / c)
    return top / (sum(a ** k / math.factorial(k) for k in range(c)) + top) / (c * mu - lam)


def test_mmc_mean_wait_smallest_c():
    lam, mu, target = 6.4, 1.0, 0.2
    exact = next(c for c in range(7, 30) if _erlang_c_wait(c, lam, mu) <= target)
    assert exact == 9     # Wq(8) = 0.286, Wq(9) = 0.101: the SLO sits well between them
    cap = capacity(MMC, "c", f"wait.mean <= {target}", horizon=2000, warmup=200, executor="serial")
    assert cap.confident and cap.value == exact and cap.bracket == (exact, exact - 1), cap.line()
    assert cap.direction == "min" and cap.integer


@pytest.mark.parametrize("tol, horizon", [(0.05, 20000), pytest.param(0.02, 50000, marks=pytest.mark.slow)])
def test_md1_pollaczek_khinchine(tol, horizon):
    # M/D/1, s = 1: Wq = lam s^2 / (2 (1 - lam s)) <= W holds up to lam = 2W / (s (1 + 2W))
    target = 1.0
    cap = capacity(MD1, "lam", f"wait.mean <= {target}", tol=tol, horizon=horizon, warmup=horizon / 10,
                   executor="serial")
    _check_theory(cap, 2 * target / (1 + 2 * target), tol)


# -- noise, determinism, the record --------------------------------------------------

def _runs_at(cap, value):
    return [r for r in cap.records if r[cap.knob] == value]


def test_a_noisy_boundary_adds_seeds_or_stays_undecided():
    # three seeds and short runs around lam = 0.8, where the SLO flips
    cap = capacity(MM1, "lam", "response.mean <= 5", lo=0.7, hi=0.9, seeds=[1, 2, 3], horizon=3000,
                   warmup=300, executor="serial")
    assert any(len(p.seeds) > 3 for p in cap.points)
    assert all(p.decision != UNDECIDED or len(p.seeds) == 12 for p in cap.points)   # the cap: 4x the seeds
    if cap.value is not None:
        from sq import t_interval

        mean, half = t_interval([r["response.mean"] for r in _runs_at(cap, cap.value)], 0.95)
        assert mean + half <= 5, "the answer's own runs do not show it meets the SLO"
    for p in cap.points:
        if p.decision == MEETS:
            assert p.value != cap.bracket[1]
    assert not cap.confident or cap.bracket[0] <= 0.8 <= cap.bracket[1]


def _without_wall(records):
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in records]


@pytest.mark.parametrize("executor", ["threads", "processes"])
def test_the_answer_does_not_depend_on_the_executor(executor):
    args = dict(lo=0.5, hi=1.0, tol=0.05, horizon=5000, warmup=500, seeds=range(1, 6))
    serial = capacity(MM1, "lam", "response.mean <= 5", executor="serial", **args)
    parallel = capacity(MM1, "lam", "response.mean <= 5", executor=executor, jobs=2, **args)
    assert (serial.value, serial.bracket, serial.confident) == (parallel.value, parallel.bracket,
                                                                parallel.confident)
    assert _without_wall(serial.records) == _without_wall(parallel.records)
    assert [p.to_dict() for p in serial.points] == [p.to_dict() for p in parallel.points]


def test_a_dask_cluster_gives_the_serial_answer():
    # in-process workers on loopback TCP: the search hands each point's sweep the client
    distributed = pytest.importorskip("distributed")
    args = dict(tol=0.1, horizon=500, warmup=50, seeds=range(1, 4))
    serial = capacity(MMC, "c", "wait.mean <= 0.2", executor="serial", **args)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                                  processes=False, protocol="tcp://") as cluster, \
            distributed.Client(cluster) as client:
        clustered = capacity(MMC, "c", "wait.mean <= 0.2", executor=client, **args)
    assert (clustered.value, clustered.bracket) == (serial.value, serial.bracket)
    assert _without_wall(clustered.records) == _without_wall(serial.records)


def test_the_record_reads_back_and_plots(tmp_path):
    cap = capacity(MMC, "c", ["wait.mean <= 0.2", "wait.le(1) >= 0.9"], horizon=1000, warmup=100,
                   seeds=range(1, 5), executor="serial")
    d = json.loads(cap.to_json())
    assert d["value"] == cap.value and d["bracket"] == list(cap.bracket)
    assert [p["decision"] for p in d["points"]] == [p.decision for p in cap.points]
    assert {"wait.mean", "wait.le(1)"} <= set(d["points"][0]["metrics"])
    runs = cap.runs
    assert set(runs["decision"]) <= {MEETS, VIOLATES, UNDECIDED}
    for p in cap.points:    # a point run longer keeps its shorter runs too; its seeds are those judged
        at = runs[runs["c"] == p.value]
        assert len(at[at["horizon_factor"] == at["horizon_factor"].max()]) == len(p.seeds)
    assert list(cap.summary()["c"]) == sorted(p.value for p in cap.points)
    import matplotlib

    matplotlib.use("Agg")
    axes = cap.plot(path=tmp_path / "cap.png")
    assert len(axes) == 2 and (tmp_path / "cap.png").stat().st_size > 0
    assert axes[0].get_ylabel() == "wait.mean"


# -- the command line ---------------------------------------------------------------

def _cli(capsys, *argv):
    from sq.cli.main import main

    try:
        status = main(["capacity", *argv])
    except SystemExit as stop:      # argparse's own errors (a flag's type): exit 2 as well
        status = stop.code
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_prints_each_point_then_the_answer(capsys):
    status, out, err = _cli(capsys, MMC, "--knob", "c", "--slo", "wait.mean<=0.2", "--seeds", "1..4",
                            "--horizon", "1000", "--warmup", "100", "-j", "1")
    assert status == 0, err
    lines = out.strip().splitlines()
    assert re.fullmatch(r"c = 8: wait\.mean [0-9.]+ ± [0-9.e-]+ \(n=(4|8|16)\) -> violates", lines[0]), lines[0]
    assert lines[-1].startswith("capacity: c = 9 (smallest value meeting wait.mean <= 0.2); meets at 9, violates at 8")


def test_cli_json_and_plot(capsys, tmp_path):
    status, out, err = _cli(capsys, MMC, "--knob", "c", "--slo", "wait.mean<=0.2", "--seeds", "1,2,3,4",
                            "--horizon", "1000", "--warmup", "100", "-j", "1", "--json",
                            "--plot-out", str(tmp_path / "c.png"))
    assert status == 0 and json.loads(out)["value"] == 9 and "-> violates" in err
    assert (tmp_path / "c.png").stat().st_size > 0


@pytest.mark.parametrize("argv, words", [
    (["--knob", "lam", "--slo", "response.mean == 5"], "unknown operator `==`"),
    (["--knob", "lam", "--slo", "ttft.p99 <= 1"], "metric `ttft.p99`: the program has no such metric"),
    (["--knob", "lamda", "--slo", "response.mean <= 5"], "`lamda` is not a `let`"),
    (["--knob", "lam", "--slo", "response.mean <= 5", "--lo", "1"], "both lo and hi"),
    (["--knob", "lam", "--slo", "response.mean <= 5", "--plot-out", "/nonexistent/c.png"], "cannot write"),
    (["--knob", "lam", "--slo", "response.mean <= 5", "--seeds", "3..1"], "the range is empty"),
    # the flags, checks and resources the capacity command shares with sweep (sq.cli.args)
    (["--knob", "lam", "--slo", "response.mean <= 5", "--plot-out", "c.csv"],
     "--plot-out: cannot tell the format of `c.csv`"),
    (["--knob", "lam", "--slo", "response.mean <= 5", "--horizon", "soon"], "expected a number, found `soon`"),
    (["--knob", "lam", "--slo", "response.mean <= 5", "--scheduler", "tcp://127.0.0.1:PORT"],
     "cannot reach the scheduler"),
])
def test_cli_bad_input_exits_2(capsys, closed_port, argv, words):
    status, out, err = _cli(capsys, MM1, *(a.replace("PORT", str(closed_port)) for a in argv))
    assert status == 2 and words in err and not out


def test_cli_fractional_ends_of_a_knob_that_takes_whole_numbers(capsys):
    status, out, err = _cli(capsys, MMC, "--knob", "c", "--slo", "wait.mean<=0.2", "--lo", "4.5", "--hi", "12")
    assert status == 2 and not out
    assert "`c` takes whole numbers (c = 4.5: " in err and "fifo servers must be a positive integer" in err
    assert "give lo and hi as whole numbers" in err and "to keep the search" not in err


@pytest.mark.parametrize("max_points", [0, -3, 2.5, True])
def test_max_points_is_a_whole_number_of_at_least_one(max_points):
    with pytest.raises(sq.SqError, match=r"max_points is the most values tried, a whole number of at least 1"):
        capacity(MM1, "lam", "response.mean <= 5", max_points=max_points)


# -- verdicts of a point -------------------------------------------------------------

def test_runs_not_stationary_make_their_point_violate_by_their_share():
    from sq.study.capacity import judge

    cond = parse_slo("response.mean <= 5")
    calm = [{"seed": s, "response.mean": 1.0, "warnings": 0.0} for s in (1, 2, 3)]
    assert judge(0.5, calm, cond, 0.95).decision == MEETS
    # one run of three that warns is chance; two of three is the point's state (the share, not "any")
    one = calm[:2] + [{"seed": 3, "response.mean": 1.0, "warnings": 1.0}]
    assert judge(0.5, one, cond, 0.95).decision == MEETS
    drifting = calm[:1] + [{"seed": s, "response.mean": 1.0, "warnings": 1.0} for s in (2, 3)]
    point = judge(0.5, drifting, cond, 0.95)
    assert point.decision == VIOLATES and not point.stationary
    piling = calm[:1] + [{"seed": s, "response.mean": 1.0, "warnings": 0.0, "arrivals": 1000.0, "ended": 400.0}
                         for s in (2, 3)]
    assert judge(0.5, piling, cond, 0.95).decision == VIOLATES
    empty = [{"seed": s, "response.mean": math.nan, "warnings": 0.0} for s in (1, 2, 3)]
    assert judge(0.5, empty, cond, 0.95).decision == VIOLATES     # no samples is no evidence


def test_sessions_growing_over_the_seeds_make_a_point_violate():
    # no run warns, every mean meets: the live sessions grow in every run (the seeds' slope test)
    from sq.study.capacity import judge

    cond = parse_slo("response.mean <= 5")
    rows = [{"seed": s, "response.mean": 1.0, "warnings": 0.0, "growth": 0.01 + 0.001 * s} for s in range(1, 6)]
    assert judge(0.5, rows, cond, 0.95).decision == VIOLATES
    swinging = [{**r, "growth": (-1) ** r["seed"] * 0.01} for r in rows]
    assert judge(0.5, swinging, cond, 0.95).decision == MEETS


def test_a_cached_search_runs_nothing_again(tmp_path, monkeypatch):
    import sq.study.sweep

    args = dict(lo=0.5, hi=1.0, tol=0.1, horizon=3000, warmup=300, seeds=range(1, 4), executor="serial",
                cache=tmp_path)
    first = capacity(MM1, "lam", "response.mean <= 5", **args)

    def no_runs(task):
        raise AssertionError("a run that is in the cache ran again")

    monkeypatch.setattr(sq.study.sweep, "run_task", no_runs)
    again = capacity(MM1, "lam", "response.mean <= 5", **args)
    assert (again.value, again.bracket) == (first.value, first.bracket)
    assert _without_wall(again.records) == _without_wall(first.records)


def test_replicas_with_runs_too_short_to_settle_end_with_advice():
    # 120 s runs end before the conversations (about a minute each) settle, at any number of replicas
    program = sq.compile(REPLICA, sets={"rate": 3})
    cap = capacity(program, "R", "ttft.p99 <= 0.5", seeds=range(1, 4), horizon=120, warmup=24, executor="serial",
                   settle=1)
    assert [p.value for p in cap.points] == [4, 8, 16] and cap.value is None, cap.line()
    assert "not stationary" in cap.reason and "lengthen the warm-up and the horizon" in cap.reason


def test_runs_too_short_to_settle_are_run_longer_before_they_count():
    # the same question with the search free to run a growing point longer (settle=16, the
    # default): 120 s becomes 480 s, where 3 replicas settle -- the answer of the full-length question
    program = sq.compile(REPLICA, sets={"rate": 3})
    cap = capacity(program, "R", "ttft.p99 <= 0.5", seeds=range(1, 4), horizon=120, warmup=24, executor="serial")
    assert (cap.value, cap.bracket) == (3, (3, 2)), cap.line()
    assert any(p.horizon for p in cap.points) and 4 in set(cap.runs["horizon_factor"])


# -- the questions of the guide, at full length --------------------------------------

@pytest.mark.slow
def test_replicas_for_a_load():
    program = sq.compile(REPLICA, sets={"rate": 3})
    cap = capacity(program, "R", "ttft.p99 <= 0.5", seeds=range(1, 6), horizon=300, warmup=60, jobs=2)
    assert (cap.value, cap.bracket, cap.confident) == (3, (3, 2), True), cap.line()
    assert all(r["R"] in (2, 3, 4) for r in cap.records)


@pytest.mark.slow
def test_the_example_plan_runs(tmp_path, monkeypatch):
    import runpy

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.argv", ["plan.py", "--quick"])
    import matplotlib

    matplotlib.use("Agg")
    runpy.run_path(str(ROOT / "examples" / "capacity" / "plan.py"), run_name="__main__")
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["capacity-fleet.png", "capacity-load.png",
                                                               "capacity-memory.png"]


def test_the_search_starts_from_the_programs_value_after_its_sets():
    program = sq.compile(source=Path(MM1).read_text(), sets={"lam": "0.6 + 0.1"})
    knob = resolve_knob(program, "lam", None)
    assert (knob.start, knob.direction, knob.integer) == (0.7, "max", False)
    with pytest.raises(sq.SqError, match="program read from an IR"):
        resolve_knob(sq.load(program.to_json()), "lam", None)


@pytest.mark.parametrize("executor, jobs, threads, processes",
                         [("threads", 2, 1, 0), ("processes", 2, 0, 1), (None, 1, 0, 0)])
def test_one_pool_serves_the_whole_search(monkeypatch, executor, jobs, threads, processes):
    # a pool per point (worker processes take seconds to start) would dominate a search of short runs
    import concurrent.futures as cf
    import multiprocessing.pool

    started = {"threads": 0, "processes": 0}

    def counting(cls, what):
        init = cls.__init__

        def counted(self, *args, **kwargs):
            started[what] += 1
            init(self, *args, **kwargs)
        return counted

    monkeypatch.setattr(cf.ThreadPoolExecutor, "__init__", counting(cf.ThreadPoolExecutor, "threads"))
    monkeypatch.setattr(cf.ProcessPoolExecutor, "__init__", counting(cf.ProcessPoolExecutor, "processes"))
    monkeypatch.setattr(multiprocessing.pool.Pool, "__init__", counting(multiprocessing.pool.Pool, "processes"))
    cap = capacity(MMC, "c", "wait.mean <= 0.2", seeds=range(1, 4), horizon=500, warmup=50,
                   executor=executor, jobs=jobs)
    assert len(cap.points) >= 3 and started == {"threads": threads, "processes": processes}


def test_a_fractional_end_searches_a_deployment_knob_over_real_values():
    knob = resolve_knob(VLLM, "kv_gib", None, lo=4.5, hi=8)
    assert (knob.integer, knob.direction) == (False, "min")
    assert resolve_knob(VLLM, "kv_gib", None, lo=4, hi=8).integer


def test_a_worker_killed_mid_search_is_said_as_the_sweep_says_it():
    # the search's own process pool (one for all its points): a worker that dies is an SqError
    # in the sweep's words, not a BrokenProcessPool traceback nor a hang
    import os

    from sq.study.capacity import _executor

    with pytest.raises(sq.SqError) as caught:
        with _executor("processes", 2) as pool:
            pool.submit(os._exit, 9).result()       # as the out-of-memory killer would end it
    assert caught.value.phase == "run"
    assert caught.value.message == ("capacity: a worker process ended in the middle of a run (killed, or out of "
                                    "memory?); the runs that finished are kept with cache=DIR, and a rerun "
                                    "computes only the rest")


# -- verdicts against the direction, and what one unsettled value can say ------------

def test_verdicts_against_the_direction_stop_and_say_which_to_give():
    # a service rate guessed as a load: it meets on the "worse" side and violates on the better
    evaluate, tried = _fake(1.0, band=0.05, direction="min")         # undecided at the start
    value, bracket, confident, reason, _ = search(Knob("mu", 1.0, False, "max"), evaluate)
    assert (value, bracket, confident) == (None, (None, None), False)
    # meets all the way up (no flip to see yet); stopped at the first step down, which violates
    assert tried == [2.0 ** k for k in range(9)] + [0.5]
    assert "run the other way from direction='max'" in reason and "mu = 2 meets the SLO and 0.5 violates" in reason
    assert "give direction='min' (--direction min)" in reason
    evaluate, tried = _fake(1.07, direction="min")
    value, bracket, *_ = search(Knob("mu", 1.0, False, "min"), evaluate)
    assert value <= 1.07 * 1.02 and bracket[1] < 1.07


@pytest.mark.parametrize("boundary, looked", [(1.07, 2.0), (0.9, 0.5)])
def test_a_walk_that_finds_no_flip_looks_once_the_other_way(boundary, looked):
    # the start violates (meets) and every value toward more room (more load) does too
    evaluate, tried = _fake(boundary, direction="min")
    *_, reason, _ = search(Knob("mu", 1.0, False, "max"), evaluate)
    assert tried[-1] == looked and len(tried) == 10
    assert "give direction='min'" in reason


def test_given_ends_against_the_direction_say_so():
    evaluate, _ = _fake(3.7, direction="min")
    *_, reason, points = search(Knob("R", 2, True, "max"), evaluate, lo=1, hi=8)
    assert len(points) == 2 and "give direction='min'" in reason


def test_the_service_rate_of_mmc_says_to_search_down():
    args = dict(seeds=[1, 2, 3], horizon=300, warmup=30, executor="serial")
    cap = capacity(MMC, "mu", "wait.mean<=0.2", **args)
    assert cap.bracket == (None, None) and "mu = 2 meets the SLO and 0.5 violates" in cap.reason, cap.line()
    assert "give direction='min' (--direction min)" in cap.reason
    # Erlang C: the smallest mu with a mean wait of at most 0.2 is 1.0433; three seeds of short runs,
    # judged at the level that keeps the promise over every look, stay on the safe side of it
    value = capacity(MMC, "mu", "wait.mean<=0.2", direction="min", **args).value
    assert 1.0433 <= value <= 1.0433 * 1.1


def test_one_unsettled_value_does_not_speak_of_more_room():
    def one_unsettled(x):
        stationary = x == 1          # 1 overloaded and stationary: its metrics violate
        verdict = VIOLATES if stationary else MEETS
        return Point(x, VIOLATES, [1, 2], {"ttft.p99": (0.1, 0.01)}, {"ttft.p99 <= 0.5": verdict}, stationary)

    *_, reason, _ = search(Knob("R", 4, True, "min"), one_unsettled, lo=1, hi=4)
    assert "at 4 its metrics meet it but the runs are not stationary" in reason
    assert "with more room too" not in reason and "or try more room" in reason


# -- the arguments, checked before any run --------------------------------------------

@pytest.mark.parametrize("args, words", [
    (dict(program=5), "capacity: the program is a .sq file's path or a Program from sq.compile, found 5"),
    (dict(slo=5), "slo: give one or more conditions as text, like 'ttft.p99 <= 0.5', found 5"),
    (dict(lo="7", hi=9), "capacity: lo is a finite number, found '7'"),
    (dict(lo=1, hi=math.inf), "capacity: hi is a finite number, found inf"),
    (dict(max_seeds="8"), "capacity: max_seeds is the most seeds at one point, a whole number, found '8'"),
    (dict(on_point=5), "capacity: on_point is a function called with each Point, found 5"),
])
def test_bad_arguments_are_clear_errors_before_any_run(monkeypatch, args, words):
    import sq.study.sweep

    monkeypatch.setattr(sq.study.sweep, "run_task", lambda task: pytest.fail("ran"))
    given = {"program": MMC, "knob": "c", "slo": "wait.mean<=0.2", **args}
    with pytest.raises(sq.SqError) as err:
        capacity(given.pop("program"), given.pop("knob"), given.pop("slo"), executor="serial", **given)
    assert words in str(err.value)


def test_numpy_integers_are_counts():
    np = pytest.importorskip("numpy")
    cap = capacity(MMC, "c", "wait.mean<=0.2", seeds=[1, 2, 3], horizon=300, warmup=30, executor="threads",
                   jobs=np.int64(2), max_points=np.int64(3), max_seeds=np.int64(6))
    assert len(cap.points) == 3 and "stopped after 3 points" in cap.reason


def test_plot_refuses_what_it_cannot_draw_on_or_write(tmp_path):
    pytest.importorskip("matplotlib").use("Agg")
    cap = capacity(MMC, "c", "wait.mean<=0.2", seeds=[1, 2, 3], horizon=300, warmup=30, executor="serial",
                   max_points=2)
    for kwargs, words in [(dict(ax=5), "Capacity.plot: ax is a matplotlib Axes, found 5"),
                          (dict(path=str(tmp_path / "x.foo")), "cannot tell the format of"),
                          (dict(path=str(tmp_path)), "Capacity.plot: cannot write")]:
        with pytest.raises(sq.SqError) as err:
            cap.plot(**kwargs)
        assert words in str(err.value)
    assert not (tmp_path.parent / (tmp_path.name + ".png")).exists()


# -- overload is a violation (issue 23) --------------------------------------------------

def test_the_mm1_knee_answers_below_one():
    # M/M/1, mu = 1: a mean response of at most 400 holds up to lam = 1 - 1/400 = 0.9975, and
    # every lam >= 1 is unstable. Runs of 20,000 from empty meet the bound far into overload
    # (lam = 1.02 gives ~260); the seeds' growth test and the longer runs must refuse them.
    cap = capacity(MM1, "lam", "response.mean <= 400", lo=0.9, hi=1.2, tol=0.01, executor="serial")
    assert cap.value is not None and cap.value < 1.0, cap.line()
    assert not cap.confident or abs(cap.value - 0.9975) <= 0.01 * 0.9975, cap.line()
    assert all(p.decision != MEETS for p in cap.points if p.value >= 1.0), cap.line()


# -- tails and warm-ups that are too short say so (issue 23) -------------------------------

def test_a_quantile_on_a_thin_tail_warns_with_the_horizon_that_would_do():
    from sq.study.sweep import tail_advice, warmup_advice

    rows = [{"ttft.count": 500.0}, {"ttft.count": 300.0}]           # 400 samples: 4 beyond the p99
    line = tail_advice(rows, "ttft.p99", horizon=60.0, warmup=10.0)
    assert "about 4 samples beyond its p99" in line and "horizon of about 1.26e+03 (warm-up 10)" in line
    assert tail_advice([{"ttft.count": 20000.0}], "ttft.p99", 60.0, 10.0) is None
    assert tail_advice(rows, "ttft.mean", 60.0, 10.0) is None
    cuts = [{"x.mser": t} for t in (100.0, 1200.0, 1500.0, 2000.0)]  # three of four: from 1200 on
    assert "MSER-5 would start the statistics at about 1.2e+03 or later" in warmup_advice(cuts, "x", 10000.0, 100.0)
    assert warmup_advice(cuts, "x", 10000.0, 1000.0) is None
    assert warmup_advice([{"x.mser": t} for t in (100.0, 100.0, 1500.0, 2000.0)], "x", 10000.0, 100.0) is None


def test_the_vllm_p99_question_at_60_s_warns():
    cap = capacity(VLLM, "rate", "ttft.p99 <= 0.5", lo=5, hi=10, tol=0.5, seeds=[1, 2], executor="serial", settle=1)
    assert any("samples beyond its p99" in w and "horizon of about" in w for w in cap.warnings), cap.warnings
    assert json.loads(cap.to_json())["warnings"] == cap.warnings


def test_mser_finds_the_transient_of_a_run_started_empty():
    # M/M/1 at rho = 0.95 from empty: the response grows for ~1,600 time units; MSER-5 cuts some of
    # the first half, never beyond it, and cuts nothing it need not (the run's own warm-up)
    from sq.study.sweep import sweep

    runs = sweep(MM1, {"lam": [0.95]}, range(1, 6), horizon=20000.0, warmup=0.0, metrics=["response.mser"],
                 executor="serial").records
    cuts = sorted(r["response.mser"] for r in runs)
    assert cuts[2] > 0 and all(0 <= c <= 10000 for c in cuts)


def test_ctrl_c_attaches_what_was_found(monkeypatch):
    import sq.study.sweep

    real = sq.study.sweep.run_plan      # what capacity runs each batch of seeds through
    calls = []

    def interrupted_on_the_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            stop = KeyboardInterrupt()
            stop.sweep = real(*args, **{**kwargs, "executor": "serial"})   # its finished runs
            raise stop
        return real(*args, **kwargs)

    monkeypatch.setattr(sq.study.sweep, "run_plan", interrupted_on_the_third)
    with pytest.raises(KeyboardInterrupt) as caught:
        capacity(MM1, "lam", "response.mean <= 5", lo=0.5, hi=0.95, tol=0.05, seeds=[1, 2, 3], horizon=3000,
                 warmup=300, executor="serial", settle=1)
    partial = caught.value.capacity
    assert partial.points[0].value == 0.5 and partial.value == 0.5 and not partial.confident
    assert f"interrupted after {len(partial.points)} values decided" in partial.reason
    assert sum(r["decision"] == "interrupted" for r in partial.records) == 3


def test_a_plot_colours_each_panel_by_its_own_conditions_and_ticks_whole_numbers():
    from sq.study.capacity import Capacity, _metric_verdict

    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    conds = parse_slo(["a.mean <= 1", "b.p99 <= 1"])
    p = Point(3, VIOLATES, [1, 2], {"a.mean": (0.5, 0.1), "b.p99": (2.0, 0.1)},
              {"a.mean <= 1": MEETS, "b.p99 <= 1": VIOLATES}, True)
    assert _metric_verdict(p, conds, "a.mean") == MEETS and _metric_verdict(p, conds, "b.p99") == VIOLATES
    q = Point(4, MEETS, [1, 2], {"a.mean": (0.2, 0.1), "b.p99": (0.2, 0.1)},
              {"a.mean <= 1": MEETS, "b.p99 <= 1": MEETS}, True)
    cap = Capacity("R", "min", True, conds, 0.95, 0.02, 4, (4, 3), True, "", [p, q], [])
    axes = cap.plot()
    green = [c for c in axes[0].containers if c.lines[0].get_color() == "tab:green"]
    assert green and len(green[0].lines[0].get_xdata()) == 2        # both values meet the mean's bound
    assert all(float(t).is_integer() for t in axes[0].get_xticks())

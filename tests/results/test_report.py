"""sq.results.report: number printing and whole reports, against pyserq 0.1.2's JSON text.

The raw results fed to `Report.from_results` here are worked out by hand
from the programs' semantics (chapters 04, 05, 08), never read back from
pyserq's report; pyserq's JSON is only the expected answer.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from sq import _engine
from sq.errors import SqError
from sq._support.number_format import json_number
from sq.results.report import Report
from sq.results.raw import Area, GaugeRaw, ObserveRaw, PoolRaw, RawResults, StageRaw

def pyserq_json(pyserq, source: str, **settings) -> str:
    return pyserq.run(pyserq.compile(source=source, **settings)).json()


# -- number printing ----------------------------------------------------------------

PRINTED = ["1e21", "1e22", "1e-7", "0.1+0.2", "-0", "123456789012345680", "5e-324",
           "1.7976931348623157e308", "1e16", "1e15 + 0.5", "0.000001234", "-2.5", "100", "1/3",
           "-1e-7", "2.2250738585072014e-308", "1e-5", "9007199254740993", "4.35", "2/3*1e-300",
           "1/0", "0/0", "-1/0", "0.1", "1e300 * 7"]


def test_numbers_print_as_pyserq_prints_them(pyserq):
    # one observation per value; a lone sample is its own p99, so the p99
    # field shows the value itself (the mean would turn -0 into 0)
    body = " ".join(f"observe x{k} = {v};" for k, v in enumerate(PRINTED))
    r = pyserq.run(pyserq.compile(source=f"session {{ {body} }}\nworkload {{ arrive batch(1); }}",
                                  horizon=1))
    text = r.json()
    for k in range(len(PRINTED)):
        sample = r.observes[f"x{k}"].samples[0]
        marker = f'"x{k}":{{'
        obj = text[text.index(marker) + len(marker) - 1:]
        obj = obj[: obj.index("}") + 1]
        want_p99 = obj[obj.index('"p99":') + 6 : -1]
        want_mean = obj[obj.index('"mean":') + 7 : obj.index(',"ci"')]
        assert json_number(sample) == want_p99, (PRINTED[k], sample)
        assert json_number(r.observes[f"x{k}"].mean) == want_mean, (PRINTED[k], sample)


def test_number_printing_rules():
    assert json_number(3) == "3" and json_number(np.int64(12)) == "12"
    assert json_number(1000.0) == "1000"
    assert json_number(-0.0) == "-0"
    assert json_number(float("nan")) == "null" and json_number(-math.inf) == "null"
    assert json_number(1e-7) == "0.0000001"
    for x in np.random.default_rng(3).standard_normal(200) * 10.0 ** np.arange(-100, 100):
        text = json_number(x)
        assert "e" not in text and float(text) == x  # never an exponent, always round-trips


# -- whole reports ----------------------------------------------------------------

def stage(name, **kw) -> StageRaw:
    return StageRaw(name=name, **kw)


def f64(*xs) -> np.ndarray:
    return np.array(xs, dtype=np.float64)


CASES = {}


def case(source, settings):
    def register(build):
        CASES[build.__name__] = (source, settings, build)
        return build
    return register


@case("stage s : fifo;\nsession { run s (2); }\nworkload { arrive batch(3); }",
      dict(horizon=20, warmup=3))
def fifo_warmup():
    # three jobs of 2 from t=0 on one server: present 3 on [0,2], 2 on [2,4],
    # 1 on [4,6]; measured on [3, 20]. Completions at 4 and 6 count (waits 2, 4).
    return RawResults(
        horizon=20, end=20, warmup=3, seed=1, events=4, arrivals=3, ended=2, turns=0,
        live=Area(2 * 1 + 1 * 2, 0),  # sessions end with their jobs
        stages=[stage("s", number=Area(4, 0), busy=Area(3, 0), waits=f64(2, 4), services=f64(2, 2))],
    )


@case("stage e : step { budget 4; cost 1; }\n"
      "session { run e prefill (6); observe ttft = now; run e decode (3); observe done = now; }\n"
      "workload { arrive batch(2); }", dict(horizon=100))
def step_engine():
    # [ST-STEP-1]: prefill iterations on [0,3], decode iterations of 2 on [3,6];
    # both residents from 0 to 6; prefill jobs end at 2 and 3, decodes at 6
    return RawResults(
        horizon=100, end=100, warmup=0, seed=1, events=6, arrivals=2, ended=2, turns=0,
        live=Area(12, 0),
        observes=[ObserveRaw("ttft", f64(2, 3), f64(2, 3), np.array([0, 1]), np.array([0, 0])),
                  ObserveRaw("done", f64(6, 6), f64(6, 6), np.array([0, 1]), np.array([0, 0]))],
        stages=[stage("e", kind="step", number=Area(12, 0), busy=Area(6, 0),
                      waits=f64(0, 0, 0, 0), services=f64(2, 3, 4, 3), iterations=6,
                      prefill_only=Area(3, 0), decode_only=Area(3, 0), decodes=Area(6, 0),
                      decode_batches=f64(2, 2, 2), decode_steps=f64(1, 1, 1),
                      itl_gaps=f64(1, 2, 1, 1, 1, 1))],
    )


@case("pool kv { cap 10; }\nstage d : delay;\nsession { hold kv (6) { run d (2); } }\n"
      "workload { arrive batch(4); }", dict(horizon=100, warmup=1))
def pool_queue():
    # one 6-unit hold at a time, admitted at 0, 2, 4, 6; measured on [1, 100]
    return RawResults(
        horizon=100, end=100, warmup=1, seed=1, events=5, arrivals=4, ended=4, turns=0,
        live=Area(1 + 3 + 5 + 7, 0),
        stages=[stage("d", kind="delay", number=Area(7, 0), busy=Area(7, 0),
                      waits=f64(0, 0, 0, 0), services=f64(2, 2, 2, 2))],
        pools=[PoolRaw("kv", used=Area(6 * 7, 0), queue=Area(3 * 1 + 2 * 2 + 1 * 2, 0),
                       holders=Area(7, 0), waits=f64(2, 4, 6), admissions=4)],
    )


@case("pool kv { cap 10; }\nstage d : delay;\ngauge g = used(kv) + 1;\ngauge h = queue(d);\n"
      "workload { arrive batch(2); }\nsession { hold kv (3) { run d (2); } }", dict(horizon=100))
def gauges():
    # chapter 08 §3.3: both sessions hold 3 units and sit in d during [0, 2]
    return RawResults(
        horizon=100, end=100, warmup=0, seed=1, events=2, arrivals=2, ended=2, turns=0,
        live=Area(4, 0),
        gauges=[GaugeRaw("g", f64(0, 2), f64(7, 1)), GaugeRaw("h", f64(0, 2), f64(2, 0))],
        stages=[stage("d", kind="delay", number=Area(4, 0), busy=Area(2, 0),
                      waits=f64(0, 0), services=f64(2, 2))],
        pools=[PoolRaw("kv", used=Area(12, 0), holders=Area(4, 0), waits=f64(0, 0), admissions=2)],
    )


@case("stage s[2] : fifo;\npool p[2] { cap 4; }\nsession { observe x = serial; }\n"
      "workload { arrive batch(3); }", dict(horizon=5, seed=9))
def arrays_without_work():
    # nothing runs: every time average is 0, every mean null; samples at t=0
    rows = [stage("s", index=i) for i in range(2)]
    pools = [PoolRaw("p", index=i) for i in range(2)]
    return RawResults(
        horizon=5, end=5, warmup=0, seed=9, events=0, arrivals=3, ended=3, turns=0,
        observes=[ObserveRaw("x", f64(0, 1, 2), f64(0, 0, 0), np.arange(3), np.zeros(3, int))],
        stages=rows, pools=pools,
    )


@case("stage s : fifo;\nsession { observe before = 1; run s (1); turn; observe after = now; }\n"
      "workload { arrive batch(5); }", dict(horizon=10, warmup=2.5))
def warmup_filters_observations():
    # [EV-WARMUP-1] shape: completions at 1..5; observations at 0 are dropped,
    # `after` kept for completions at 3, 4, 5; turns counted after warm-up
    return RawResults(
        horizon=10, end=10, warmup=2.5, seed=1, events=6, arrivals=5, ended=3, turns=3,
        live=Area(3 * 0.5 + 2 * 1 + 1 * 1, 0),  # 5 live on [0,1], one fewer each second
        observes=[ObserveRaw("before", f64(1, 1, 1, 1, 1), f64(0, 0, 0, 0, 0), np.arange(5),
                             np.zeros(5, int)),
                  ObserveRaw("after", f64(1, 2, 3, 4, 5), f64(1, 2, 3, 4, 5), np.arange(5),
                             np.ones(5, int))],
        stages=[stage("s", number=Area(3 * 0.5 + 2 * 1 + 1 * 1, 0),
                      busy=Area(2.5, 0), waits=f64(2, 3, 4), services=f64(1, 1, 1))],
    )


@pytest.mark.parametrize("key", sorted(CASES))
def test_report_json_equals_pyserq(key, pyserq):
    source, settings, build = CASES[key]
    ours = Report.from_results(build()).to_json()
    theirs = pyserq_json(pyserq, source, **settings)
    if ours != theirs:  # show the first differing field, not two long lines
        a, b = json.loads(ours), json.loads(theirs)
        assert a == b
    assert ours == theirs


def test_report_attributes_and_lookups():
    rep = Report.from_results(arrays_without_work())
    assert rep.serq_version == "0.1.2"
    assert [s.index for s in rep.stages_named("s")] == [0, 1]
    assert rep.stage("s").index == 0 and rep.stage("nope") is None
    assert [p.index for p in rep.pools_named("p")] == [0, 1] and rep.pool("q") is None
    x = rep.observe("x")
    assert rep.observe("y") is None and rep.gauge("g") is None
    assert isinstance(x.samples, np.ndarray) and x.samples.tolist() == [0, 1, 2]
    assert x.sessions.tolist() == [0, 1, 2] and x.turns.tolist() == [0, 0, 0]
    assert rep.json() == rep.to_json()


def test_observations_before_warmup_are_dropped_from_the_samples():
    rep = Report.from_results(warmup_filters_observations())
    assert rep.observe("before").count == 0 and len(rep.observe("before").samples) == 0
    assert rep.observe("after").times.tolist() == [3, 4, 5]
    assert rep.observe("after").samples.tolist() == [3, 4, 5]


def test_empty_measured_span_gives_null_rates_not_an_exception():
    raw = RawResults(horizon=0, end=0, warmup=0, seed=1,
                     stages=[stage("s", number=Area(0, 2), waits=f64(0), services=f64(0))])
    rep = Report.from_results(raw)
    s = rep.stages[0]
    assert s.mean_number == 2.0 and isinstance(s.mean_number, float)  # the value held at the end
    assert s.throughput == math.inf  # one completion in no time
    row = json.loads(rep.to_json())["stages"][0]
    assert row["throughput"] is None and row["completed"] == 1


def test_text_report_names_every_row():
    for build in (step_engine, pool_queue, gauges):
        text = Report.from_results(build()).to_text()
        assert text.startswith("run: horizon ")
        raw = build()
        for name in [o.name for o in raw.observes] + [g.name for g in raw.gauges] \
                + [s.name for s in raw.stages] + [p.name for p in raw.pools]:
            assert name in text
    assert "itl p99" in Report.from_results(step_engine()).to_text()


def test_text_report_shows_stuck_pools():
    raw = RawResults(horizon=1, end=1, warmup=0, seed=1, pools=[PoolRaw("kv", index=1, stuck=2)])
    assert "stuck: 2 session(s) preempted again at pool `kv[1]`" in Report.from_results(raw).to_text()


def test_dump_writes_observations_and_gauge_points(tmp_path):
    raw = gauges()
    raw.observes = [ObserveRaw("r", f64(0.5, math.nan, 3), f64(1, 2, 2.25), np.array([4, 5, 6]),
                               np.array([0, 1, 2]))]
    Report.from_results(raw).dump(tmp_path / "out")
    assert (tmp_path / "out" / "r.csv").read_text().splitlines() == [
        "time,session,turn,value", "1,4,0,0.5", "2,5,1,NaN", "2.25,6,2,3"]
    assert (tmp_path / "out" / "gauge" / "g.csv").read_text().splitlines() == [
        "time,value", "0,7", "2,1"]


def test_dump_refuses_a_file_and_a_non_path_in_one_line(tmp_path):
    """A path that is a file, or a number, is an SqError (was FileExistsError / TypeError)."""
    report = Report.from_results(gauges())
    (tmp_path / "first.sq").write_text("x")
    with pytest.raises(SqError, match=r"^error: dump: .*first\.sq: exists and is not a folder$"):
        report.dump(tmp_path / "first.sq")
    with pytest.raises(SqError, match="^error: dump: a path is text or os.PathLike, found int$"):
        report.dump(5)


@pytest.mark.parametrize("q", [1.1, -0.1, math.nan, "0.5", None, True])
def test_a_quantile_outside_0_to_1_or_not_a_number_is_an_sq_error(q):
    observe = Report.from_results(RawResults(horizon=3, end=3, warmup=0, seed=1, observes=[
        ObserveRaw("x", [1.0, 2.0], [0.0, 1.0], [0, 1], [0, 0])])).observes["x"]
    assert observe.quantile(np.int64(1)) == 2 and observe.quantile(0.5) == 1
    with pytest.raises(SqError, match="^error: quantile: q is a number from 0 to 1, found "):
        observe.quantile(q)


def test_a_path_keyword_given_a_number_is_an_sq_error():
    import sq

    source = "stage s : delay; run { horizon 9; } workload { arrive batch(1); } session { run s (1); }"
    with pytest.raises(SqError, match="^error: compile: trace: a path is text or os.PathLike, found int$"):
        sq.compile(source=source, trace=5)
    with pytest.raises(SqError, match="^error: run: timeline: a path is text or os.PathLike, found int$"):
        sq.run(sq.compile(source=source), timeline=5)


def test_provenance_tells_a_def_replacement_apart():
    """compile(defs=...) is recorded as sets= is: the report and its provenance JSON said the
    same for a program with a `def` replaced and the plain one."""
    import sq

    path = str(__import__("pathlib").Path(__file__).resolve().parents[2] / "examples" / "single-turn" / "ps.sq")
    plain = sq.run(sq.compile(path, horizon=300, warmup=0))
    replaced = sq.run(sq.compile(path, defs={"service": "~det(1)"}, sets={"lam": 0.5}, horizon=300, warmup=0))
    assert (plain.overrides, plain.defs) == ({}, {})
    assert (replaced.overrides, replaced.defs) == ({"lam": 0.5}, {"service": "~det(1)"})
    provenance = json.loads(replaced.to_json(provenance=True))["provenance"]
    assert provenance["overrides"] == {"lam": 0.5} and provenance["defs"] == {"service": "~det(1)"}
    assert json.loads(plain.to_json(provenance=True))["provenance"]["defs"] == {}


def test_iteration_trace_is_passed_through():
    raw = step_engine()
    raw.iteration_trace = ["ITER 0.0000 0:0:p4"]
    assert Report.from_results(raw).iteration_trace == ["ITER 0.0000 0:0:p4"]
    assert Report.from_results(pool_queue()).iteration_trace == []


def test_raw_results_may_hold_plain_lists():
    raw = RawResults(horizon=10, end=10, warmup=0, seed=2, live=Area(5.0, 0.0),
                     observes=[ObserveRaw("x", [1.0, 2.0], [0.0, 1.0], [0, 1], [0, 0])],
                     gauges=[GaugeRaw("g", [0.0, 5.0], [2.0, 4.0])],
                     stages=[StageRaw("s", waits=[1.0, 3.0], services=[2.0, 2.0], itl_gaps=[1.0])])
    d = Report.from_results(raw).to_dict()
    assert d["observes"]["x"] == {"count": 2, "mean": 1.5, "ci": None, "cv2": pytest.approx(2 / 9),
                                  "p99": 2}
    assert d["gauges"]["g"]["mean"] == 3 and d["gauges"]["g"]["min"] == 2 and d["gauges"]["g"]["max"] == 4
    assert d["stages"][0]["mean_wait"] == 2 and d["stages"][0]["completed"] == 2
    assert d["stages"][0]["itl_p50"] == 1 and d["mean_live"] == 0.5



@given(st.floats(allow_nan=False, allow_infinity=False))
def test_any_finite_float_prints_plainly_and_reads_back(x):
    text = json_number(x)
    assert "e" not in text and "E" not in text and not text.endswith(".0")
    assert float(text) == x and (text.startswith("-") == (math.copysign(1.0, x) < 0))
    # shortest: as many significant digits as Python's shortest repr
    digits = lambda s: len(s.lstrip("-").replace(".", "").strip("0")) or 1  # noqa: E731
    assert digits(text) == digits(repr(x).split("e")[0])


def test_the_engines_named_tuples_are_ordinary_tuples():
    # Area and Running are built in C (sq_pair): equal, hashing and pickling as Python builds them
    import pickle

    import sq
    from sq import _engine

    raw = _engine.run(sq.lower_program(sq.compile(source="stage s : fifo; workload { arrive poisson(1); }"
                                                  " session { run s (~exp(2)); } run { horizon 50; }")))
    built = [raw.live, raw.stages[0].busy]
    assert all(type(a) is Area for a in built)
    for a in built:
        again = Area(*a)
        assert a == again and hash(a) == hash(again) == hash(tuple(a))
        assert pickle.loads(pickle.dumps(a)) == a and a._asdict() == again._asdict()
    assert {built[0]: 1}[Area(*built[0])] == 1


@pytest.mark.parametrize("serials, dtype", [([], np.int32), ([0, 5, 2**31 - 1], np.int32),
                                            ([0, 5, 2**31 - 1, 2**31, 7], np.int64),
                                            (list(range(40)) + [2**40], np.int64)])
def test_serials_handed_over_4_bytes_while_they_fit_then_8(serials, dtype):
    got = _engine.serials_of(serials)
    assert got.dtype == dtype and got.tolist() == serials
    assert got.base is not None or not serials     # a non-empty one took the engine's buffer


def _text_piece_by_piece(r: Report, provenance: bool) -> str:
    """A report's JSON text as its definition puts it together: each object's members by
    json_members, joined in Python (what Report.to_json wrote before the C writer)."""
    from sq._support.number_format import json_members
    from sq.results.report import Gauge, Observe, _json_fields

    def members(obj, names):
        return json_members(tuple(f'"{n}":' for n in names), [getattr(obj, n) for n in names])

    head = ("serq_version", "horizon", "end", "warmup", "seed", "events", "arrivals", "ended", "turns", "mean_live")
    observes = ",".join(f'"{o.name}":{{{members(o, Observe.JSON_FIELDS)}}}' for o in r.observes.values())
    gauges = ",".join(f'"{g.name}":{{{members(g, Gauge.JSON_FIELDS)}}}' for g in r.gauges.values())
    stages = ",".join("{" + members(s, _json_fields(type(s))) + "}" for s in r.stages)
    pools = ",".join("{" + members(p, _json_fields(type(p))) + "}" for p in r.pools)
    text = (f'{{{members(r, head)},"observes":{{{observes}}},"gauges":{{{gauges}}},'
            f'"stages":[{stages}],"pools":[{pools}]')
    if r.stopped:
        text += f',"stopped":"{r.stopped}"'
    if provenance:
        text += ',"provenance":' + r._provenance_json()
    return text + "}"


@pytest.mark.parametrize("key", sorted(CASES))
@pytest.mark.parametrize("provenance", [False, True])
def test_the_c_writer_writes_the_text_piece_by_piece(key, provenance):
    # the whole text in one C pass (sq/results/_json_text.pyx) against each object's members
    # joined in Python; numbers that are not Python floats or ints (numpy's) go through
    # json_number, a stopped run and provenance add their members after pyserq's
    r = Report.from_results(CASES[key][2]())
    assert r.to_json(provenance=provenance) == _text_piece_by_piece(r, provenance)
    r.seed, r.horizon, r.stopped = np.uint64(2**63 + 5), np.float32(0.1), "wall limit"
    for s in r.stages:
        s.completed, s.mean_wait = np.int64(-3), np.float64(2.5)
    text = r.to_json(provenance=provenance)
    assert text == _text_piece_by_piece(r, provenance)
    assert '"seed":9223372036854775813,' in text and '"horizon":0.10000000149011612,' in text
    assert ',"stopped":"wall limit"' in text


def test_the_c_writer_refuses_a_name_that_is_not_text():
    r = Report.from_results(CASES["gauges"][2]())
    r.gauges["g"].name = 7
    with pytest.raises(TypeError):
        r.to_json()

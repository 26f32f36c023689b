"""sq.ir: reading and writing pyserq's IR version 10, and the IR's own checks."""
from __future__ import annotations

import copy
import json

import pytest

from sq.errors import SqError
from sq.ir import Program
from tests.helpers.spec_data import probes

pyserq = pytest.importorskip("pyserq")

PROBES = probes()


def _pyserq_ir(source: str, **overrides) -> str | None:
    try:
        return pyserq.compile(source=source, **overrides).to_json()
    except BaseException:  # noqa: BLE001  (pyserq also panics; such probes have no IR to read)
        return None


PROBE_IRS = [(p["id"], ir) for p in PROBES if (ir := _pyserq_ir(p["source"], **(p.get("overrides") or {})))]

SMALL = """
pool kv[2] { cap 10; block 2; evict by (size, -age); preempt lifo; queue by (waited, serial); }
pool m { cap 5; spill m via f (size / 10) when (size > 1); admit via e; }
stage f : fifo(2); stage p : ps(min(present, 2)); stage d : delay;
stage e : step { cost 1 + tokens; budget 8; chunk 4; memory m; serve by (remaining); }
gauge g = used(kv[0]) + queue(f);
run { horizon 50; warmup 1; seed 4; }
workload { arrive poisson(1); hidden h; init { set h = ~exp(1); } turn { set n = 2; } }
session {
  hold kv[1] (3) reserve (4), m (1) reuse (2) { prefill on e (2) growing m; load kv[1] (1); } cache (1) lease m (inf);
  branch with (0.5) { run p (h); } else { loop { run d (1); end; } }
  choose j in 2 by (used(kv[j]), j); grow kv[0] (0); drop kv[0]; release m; turn;
  observe o = price(f, 1, 2) + budget_left(e) + ~h2(1, 2) + (1 < 2 ? -1 : !0);
}
"""


def _small() -> dict:
    return json.loads(pyserq.compile(source=SMALL).to_json())


@pytest.mark.parametrize("pid,text", PROBE_IRS, ids=[p for p, _ in PROBE_IRS])
def test_reads_every_probe_ir_exactly(pid, text):
    prog = Program.from_json(text)
    assert prog.to_dict() == json.loads(text)
    again = Program.from_json(prog.to_json())
    assert again.to_json() == prog.to_json()


def test_round_trip_keeps_types():
    d = _small()
    out = Program.from_json(json.dumps(d)).to_dict()
    assert out == d
    # serde writes floats as floats and counts as integers: keep both kinds
    assert isinstance(out["horizon"], float) and isinstance(out["seed"], int)
    assert out["stages"][0]["kind"] == {"Fifo": 2}
    assert out["pools"][2]["cap"] == 5.0 and out["pools"][0]["index"] == 0 and "index" not in out["pools"][2]


def test_optional_keys_are_written_only_when_present():
    d = json.loads(pyserq.compile(source="run { horizon 5; }").to_json())
    out = Program.from_json(json.dumps(d)).to_dict()
    assert out == d
    assert "share" not in out and "gauges" not in out and "arrivals" not in out


def test_infinities_are_strings_and_nan_is_refused():
    d = _small()
    d["blocks"][d["session"]].append({"Observe": [0, {"Num": "-inf"}]})
    prog = Program.from_json(json.dumps(d))
    assert prog.to_dict()["blocks"][d["session"]][-1] == {"Observe": [0, {"Num": "-inf"}]}
    d["blocks"][d["session"]][-1] = {"Observe": [0, {"Num": "NaN"}]}
    with pytest.raises(SqError):
        Program.from_json(json.dumps(d))


def _mutations():
    def drop_key(d):
        del d["hidden"]

    def bad_version(d):
        d["version"] = 9

    def unknown_expr(d):
        d["blocks"][d["session"]].append({"Observe": [0, {"Frob": 1}]})

    def bad_binary(d):
        d["blocks"][d["session"]].append({"Observe": [0, {"Binary": ["Mod", {"Num": 1}, {"Num": 2}]}]})

    def block_out_of_range(d):
        d["blocks"][d["session"]].append({"Loop": 99})

    def slot_out_of_range(d):
        d["blocks"][d["session"]].append({"Set": [99, {"Num": 1}]})

    def ref_past_table(d):
        d["blocks"][d["session"]].append({"Drop": {"base": 1, "count": 9, "index": None}})

    def bad_ref_shape(d):
        d["blocks"][d["session"]].append({"Drop": {"base": 0}})

    def wrong_arity(d):
        d["blocks"][d["session"]].append({"Observe": [0, {"Sample": ["Exp", []]}]})

    def arg_kind(d):
        d["blocks"][d["session"]].append({"Observe": [0, {"Call": ["Used", [{"Expr": {"Num": 1}}]]}]})

    def bool_as_int(d):
        d["seed"] = True

    def stage_kind(d):
        d["stages"][0]["kind"] = {"Fifo": 0}

    def extra_key(d):
        d["pools"][0]["colour"] = "red"

    def not_a_list(d):
        d["blocks"] = {}

    return [drop_key, bad_version, unknown_expr, bad_binary, block_out_of_range, slot_out_of_range,
            ref_past_table, bad_ref_shape, wrong_arity, arg_kind, bool_as_int, stage_kind, extra_key, not_a_list]


@pytest.mark.parametrize("mutate", _mutations(), ids=lambda f: f.__name__)
def test_malformed_ir_is_an_sq_error(mutate):
    d = _small()
    mutate(d)
    text = json.dumps(d)
    with pytest.raises(SqError):
        Program.from_json(text)
    if mutate.__name__ not in STRICTER:   # pyserq refuses the same IRs
        with pytest.raises(BaseException):
            pyserq.Program.from_json(text)


# IRs 0.1.2 reads but cannot run sensibly (a draw without its parameter, a pool
# function given a number, a fifo without servers, a key it ignores): sq refuses them.
STRICTER = {"wrong_arity", "arg_kind", "stage_kind", "extra_key"}


@pytest.mark.parametrize("text", ["", "{", "[]", "null", "42", '{"version": 10}'])
def test_not_an_ir_is_an_sq_error(text):
    with pytest.raises(SqError):
        Program.from_json(text)


def _with(d: dict, where: str, expr) -> dict:
    d = copy.deepcopy(d)
    if where == "session":
        d["blocks"][d["session"]].insert(0, {"Observe": [0, expr]})
    elif where == "init":
        d["blocks"][d["init"]].insert(0, {"Observe": [0, expr]})
    elif where == "queue":
        d["pools"][0]["queue"] = [expr]
    elif where == "serve":
        d["stages"][3]["kind"]["Step"]["serve"] = {"By": [expr]}
    elif where == "ps":
        d["stages"][1]["kind"] = {"Ps": expr}
    elif where == "gauge":
        d["gauges"] = [{"name": "g", "expr": expr}]
    elif where == "header":
        hold = d["blocks"][d["session"]][0]["Hold"]
        hold["pools"][0][1] = expr
    return d


VALIDATION = [
    ("session", {"Ctx": "Waited"}, "session: `waited` is read in a session statement"),
    ("init", {"Ctx": "Ntok"}, "init: `tokens` is read in a session statement"),
    ("queue", {"Ctx": "Size"}, "pool `kv`: `size` is read in a pool's queue keys"),
    ("queue", {"Sample": ["Exp", [{"Num": 1}]]}, "a queue key may not draw"),
    ("serve", {"Sample": ["Exp", [{"Num": 1}]]}, "a serve key may not draw"),
    ("ps", {"Ctx": "Ntok"}, "stage `p`: `tokens` is read in a ps stage's capacity"),
    ("gauge", {"Ctx": "Now"}, "a gauge may not read `now`"),
    ("gauge", {"Attr": 1}, "`serial` is a session attribute, and a gauge has no session"),
    ("gauge", {"Sample": ["Exp", [{"Num": 1}]]}, "a gauge may not draw"),
    ("header", {"Attr": 9}, "is hidden from the scheduler, but is read in a hold's header"),
]


@pytest.mark.parametrize("where,expr,phrase", VALIDATION, ids=[v[2][:30] for v in VALIDATION])
def test_validation_reads_moments_like_pyserq(where, expr, phrase):
    text = json.dumps(_with(_small(), where, expr))
    with pytest.raises(SqError) as ours:
        Program.from_json(text)
    assert phrase in ours.value.message
    assert ours.value.phase == "validate"
    with pytest.raises(ValueError) as theirs:
        pyserq.Program.from_json(text)
    assert phrase in str(theirs.value)


def test_validation_accepts_each_moment_its_own_variables():
    d = _small()
    for where, expr in [("queue", {"Ctx": "Waited"}), ("serve", {"Ctx": "Decoding"}), ("ps", {"Ctx": "N"}),
                        ("session", {"Ctx": "Now"}), ("gauge", {"Call": ["Used", [{"Pool": {
                            "base": 0, "count": 2, "index": {"Num": 1.0}}}]]})]:
        text = json.dumps(_with(d, where, expr))
        Program.from_json(text)
        pyserq.Program.from_json(text)


def test_run_settings_are_validated():
    d = _small()
    d["warmup"] = -1.0
    with pytest.raises(SqError, match="need 0 <= warmup < horizon"):
        Program.from_json(json.dumps(d))
    d = _small()
    d["arrivals"] = 0
    with pytest.raises(SqError, match="arrivals must be positive"):
        Program.from_json(json.dumps(d))


def test_exact_form_keeps_what_json_writes_null():
    """0.1.2 writes an infinite block or poisson rate as null; the exact form keeps them for the run."""
    from sq.frontend.compile import compile_program
    source = "pool a { cap 8; block inf; } pool b { block 2; } run { horizon 5; } workload { arrive poisson(inf); }"
    prog = compile_program(source=source)
    theirs = json.loads(pyserq.compile(source=source).to_json())
    assert prog.to_dict() == theirs
    exact = prog.to_dict(exact=True)
    assert exact["pools"][0]["block"] == "inf" and exact["pools"][1]["block"] == 2.0
    assert exact["arrival"] == {"Poisson": "inf"}
    assert {k: v for k, v in exact.items() if k not in ("pools", "arrival")} == \
        {k: v for k, v in theirs.items() if k not in ("pools", "arrival")}

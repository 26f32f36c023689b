"""sq.costs: fits to a measured profile, the roofline, the serQ library, and validation
against measured vLLM runs (data in examples/costs/llmservingsim, MIT, from LLMServingSim)."""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import sq
from sq.cli.main import main
from sq.costs import GPUS, from_profile, from_roofline, load_model
from sq.costs.memory import kv_pool
from sq.costs.profile import read_profile
from sq.costs.roofline import errors, roofline_tables
from sq.costs.validate import predict, read_engine, read_requests, validate
from sq.errors import SqError

DATA = Path(__file__).resolve().parents[2] / "examples" / "costs" / "llmservingsim"
LLAMA = DATA / "model-configs" / "meta-llama" / "Llama-3.1-8B.json"
P4090 = DATA / "profiles" / "RTX4090" / "meta-llama" / "Llama-3.1-8B" / "bf16"
R4090 = DATA / "vllm-runs" / "RTX4090_Llama-3.1-8B"
QWEN_MOE = DATA / "profiles" / "RTXPRO6000" / "Qwen" / "Qwen3-30B-A3B-Instruct-2507" / "bf16"


@pytest.fixture(scope="module")
def cm4090():
    return from_profile(P4090)


def test_fit_follows_the_profile(cm4090):
    s = cm4090.step
    assert s.layers == 32
    assert s.tokens.mape < 0.05 and s.sequences.mape < 0.03 and s.attention.mape < 0.20
    # every coefficient carries a finite standard error
    assert all(np.isfinite(se) for _, se in cm4090.coefficients().values())
    # one decode of 1000 tokens of context on one layer-stack: weights read (~16 GB at ~1 TB/s) dominate
    t = float(cm4090.cost(tokens=1, prefilled=0, attention=0, kv_prefill=0, decoders=1, kv_decode=1008))
    assert 0.014 < t < 0.020


def test_moe_profile_reads_experts():
    model = load_model(DATA / "model-configs" / "Qwen" / "Qwen3-30B-A3B-Instruct-2507.json")
    tables = read_profile(QWEN_MOE, 1, model.experts, model.top_k)
    assert tables.moe is not None and tables.moe_table is not None
    # more tokens hit more experts: the MoE curve grows with tokens
    assert tables.moe[-1] > 5 * tables.moe[0]
    with pytest.raises(SqError, match="names no experts"):
        read_profile(QWEN_MOE, 1, 0, 0)


def test_library_is_the_cost_sq_runs(cm4090, tmp_path):
    """The library's step_cost, evaluated by sq on a real iteration, is CostModel.cost."""
    (tmp_path / "costs.sq").write_text(cm4090.library())
    (tmp_path / "p.sq").write_text("""use "costs.sq";
let blocks = kv_blocks();
pool kv { cap blocks * kv_block(); block kv_block(); }
stage e : step { budget max_batched_tokens(); cost step_cost(); memory kv; }
run { horizon 100; }
workload { arrive batch(1); }
session { hold kv (16) { run e prefill (500) growing kv; observe pf = now; run e decode (2) growing kv; observe dn = now; } }
""")
    report = sq.run(sq.compile(tmp_path / "p.sq"))
    pf = report.observes["pf"].samples[0]
    # the prefill's hold grows to 512 units (blocks of 16) before the cost is read
    want = cm4090.cost(tokens=500, prefilled=500, attention=500 * 250, kv_prefill=512, decoders=0, kv_decode=0)
    assert pf == pytest.approx(float(want), rel=1e-12)
    d1 = cm4090.cost(tokens=1, prefilled=0, attention=0, kv_prefill=0, decoders=1, kv_decode=512)
    d2 = cm4090.cost(tokens=1, prefilled=0, attention=0, kv_prefill=0, decoders=1, kv_decode=512)
    assert report.observes["dn"].samples[0] == pytest.approx(float(pf + d1 + d2), rel=1e-12)


def test_kv_pool_from_memory_matches_vllm():
    model = load_model(LLAMA)
    assert model.kv_bytes_per_token() == 32 * 8 * 128 * 2 * 2
    engine = read_engine(R4090)
    pool = kv_pool(model, engine.memory_bytes, engine.mem_util, 2048, 256)
    assert abs(pool.blocks / engine.recorded_blocks - 1) < 0.02     # vLLM recorded 2588


@pytest.mark.parametrize("name", sorted(GPUS))
def test_roofline_library_compiles(name, tmp_path):
    cm = from_roofline(name, LLAMA, tp=2)
    (tmp_path / "costs.sq").write_text(cm.library())
    (tmp_path / "p.sq").write_text('use "costs.sq"; let b = kv_blocks(); pool kv { cap b * 16 + 16; block 16; }\n'
                                   "stage e : step { cost step_cost(); memory kv; } run { horizon 10; }\n"
                                   "workload { arrive batch(1); } session { hold kv (16) { run e prefill (64) growing kv; } }\n")
    assert sq.run(sq.compile(tmp_path / "p.sq")).ended == 1


def test_roofline_error_is_reported(cm4090):
    assert set(cm4090.roofline_error) == {"dense", "attention", "per_sequence"}
    model = load_model(LLAMA)
    measured = read_profile(P4090)
    predicted = roofline_tables(model, GPUS["RTX4090"], like=measured)
    err = errors(measured, predicted)
    assert err == cm4090.roofline_error
    assert err["dense"] < 0.5       # datasheet peaks with fixed efficiencies: within a factor of 2


def test_validate_rtx4090_meets_targets():
    v = validate(R4090, P4090, with_capacity=False).to_json()
    assert v["ended"] == 300
    assert abs(v["ttft_mean_error"]) <= 0.10
    assert abs(v["tpot_mean_error"]) <= 0.03 and abs(v["e2e_mean_error"]) <= 0.03
    for m in ("ttft", "tpot", "e2e"):
        assert abs(v[f"{m}_p90_error"]) <= 0.15


def test_prediction_reads_no_measured_latency(tmp_path, cm4090):
    """The same prediction from a copy of the run without its latency columns and timeseries."""
    stripped = tmp_path / "run"
    stripped.mkdir()
    for name in ("meta.json", "config.json"):
        shutil.copy(R4090 / name, stripped / name)
    keep = ("request_id", "input_toks", "output_toks", "arrival_time", "queued_ts")
    with open(R4090 / "requests.jsonl") as src, open(stripped / "requests.jsonl", "w") as dst:
        for line in src:
            row = json.loads(line)
            dst.write(json.dumps({k: row[k] for k in keep}) + "\n")
    engine = read_engine(R4090)
    full = predict(cm4090, engine, read_requests(R4090), 1.0, engine.recorded_blocks)
    bare = predict(cm4090, read_engine(stripped), read_requests(stripped), 1.0, engine.recorded_blocks)
    for m in ("ttft", "tpot", "e2e"):
        np.testing.assert_array_equal(getattr(full, m), getattr(bare, m))
    # the latencies are not there: only the comparison, after the prediction, needs them
    with pytest.raises(SqError, match=r"requests.jsonl:1: no `scheduled_ts`"):
        validate(stripped, P4090, with_capacity=False)


def test_bad_run_files_are_sqerrors(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(R4090, run)
    (run / "requests.jsonl").write_text('{"input_toks": 5, "output_toks": 3, "queued_ts": 1.0}\n{oops\n')
    assert main(["validate", "--run", str(run), "--profile", str(P4090), "--no-capacity"]) == 2
    (run / "config.json").write_text("{}")
    with pytest.raises(SqError, match="npu_mem"):
        read_engine(run)
    with pytest.raises(SqError, match="is not a directory"):
        validate(tmp_path / "nowhere", P4090)


def test_replay_and_dialect_arrivals_agree(cm4090):
    """`arrive replay` and the 0.1.2 form (arrive at 0, wait the recorded time) are the same run."""
    engine, req = read_engine(R4090), read_requests(R4090)
    for scale in (1.0, 1.7):
        a = predict(cm4090, engine, req, scale, engine.recorded_blocks, "replay")
        b = predict(cm4090, engine, req, scale, engine.recorded_blocks, "delay")
        for m in ("ttft", "tpot", "e2e"):
            np.testing.assert_array_equal(getattr(a, m), getattr(b, m))
        assert "arrive replay" in a.program and "arrive batch(300)" in b.program


def test_cli_costs_and_validate(capsys):
    assert main(["costs", "--profile", str(P4090)]) == 0
    text = capsys.readouterr().out
    assert "def step_cost() =" in text and "def kv_blocks() = " in text
    assert main(["costs", "--gpu", "Z80", "--model", str(LLAMA)]) == 2
    assert "unknown GPU `Z80`" in capsys.readouterr().err
    assert main(["costs"]) == 2
    assert main(["validate", "--run", str(R4090), "--roofline", "--no-capacity"]) == 2
    assert "needs the model's config" in capsys.readouterr().err
    assert main(["validate", "--run", str(R4090), "--no-capacity"]) == 2
    assert "give --profile DIR or --roofline" in capsys.readouterr().err
    assert main(["validate", "--run", str(R4090), "--profile", str(P4090), "--json", "--no-capacity"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("ttft_mean_error", "tpot_mean_error", "e2e_mean_error", "ttft_p90_error", "tpot_p90_error",
                "e2e_p90_error"):
        assert isinstance(out[key], float)


@pytest.mark.slow
def test_validate_capacity_rtx4090():
    """The rate at which sq just meets the run's own TTFT p90 is within 10 % of the measured rate."""
    v = validate(R4090, P4090).to_json()
    assert abs(v["capacity"]["ttft"]["capacity_error"]) <= 0.10


def test_expert_parallel_reads_fewer_experts():
    model = load_model(DATA / "model-configs" / "Qwen" / "Qwen3-30B-A3B-Instruct-2507.json")
    one = read_profile(QWEN_MOE, 1, model.experts, model.top_k)
    two = read_profile(QWEN_MOE, 1, model.experts, model.top_k, ep=2)
    # a GPU holding half the experts reads fewer of them once a batch hits most of all 128
    at = list(one.tokens).index(256)
    assert two.moe[at] < 0.8 * one.moe[at]
    assert two.moe[0] == pytest.approx(one.moe[0], rel=0.05)     # one token: its 8 experts either way


def test_cost_draws_follow_the_fit(cm4090):
    from sq.costs.uncertainty import coefficient_draw, draw_defs
    n = 400
    draws = [coefficient_draw(cm4090, seed) for seed in range(n)]
    for name, (coef, se) in cm4090.coefficients().items():
        values = np.array([d[name] for d in draws])
        # the mean of n draws lies within 4.5 standard errors of the mean (fixed seeds)
        assert abs(values.mean() - coef) <= 4.5 * se / np.sqrt(n)
        assert 0.8 * se <= values.std() <= 1.2 * se
    defs = draw_defs(cm4090, 7)
    assert set(defs) == set(cm4090.coefficients())
    assert all(f"def {name}() = " in cm4090.library() for name in defs)
    # a draw replaces the library's coefficients in a program that uses it
    prog = Path(__file__).resolve().parents[2] / "examples" / "costs" / "vllm_rtx4090.sq"
    plain = sq.run(sq.compile(prog, horizon=120, warmup=20)).observes["tpot"].mean
    drawn = sq.run(sq.compile(prog, horizon=120, warmup=20, defs=defs)).observes["tpot"].mean
    assert drawn != plain and abs(drawn / plain - 1) < 0.2


def test_bad_profile_files_are_sqerrors(tmp_path):
    prof = tmp_path / "bf16"
    shutil.copytree(P4090, prof)
    with open(prof / "tp1" / "dense.csv", "a") as f:
        f.write("qkv_proj,lots,3\n")
    with pytest.raises(SqError, match=r"dense.csv:\d+: expected NAME,NUMBER,TIME_US"):
        read_profile(prof)
    with pytest.raises(SqError, match="has no tp2/ folder"):
        read_profile(P4090, tp=2)
    assert main(["costs", "--profile", str(prof), "--model", str(LLAMA)]) == 2


PPRO = DATA / "profiles" / "RTXPRO6000" / "meta-llama" / "Llama-3.1-8B" / "bf16"


def test_kv_decode_max_is_the_longest_decode(tmp_path):
    """sq's `kv_decode_max` (docs/differences.md): the largest KV one of the iteration's decodes holds."""
    (tmp_path / "p.sq").write_text("""pool kv { cap 10000; }
stage e : step { budget 1000; cost 0.001 + 1e-6 * kv_decode_max + 1e-9 * kv_decode; memory kv; }
run { horizon 10; warmup 0; }
workload { arrive batch(2); }
session { set p = serial == 0 ? 96 : 304; hold kv (1) { run e prefill (p) growing kv; observe pf = now;
  run e decode (1) growing kv; observe dn = now; } }
""")
    report = sq.run(sq.compile(tmp_path / "p.sq"))
    # both prefill in the first iteration (no decode: 0), then decode together, each having grown
    # its hold by its token: 97 and 305 units
    assert list(report.observes["pf"].samples) == [0.001, 0.001]
    want = 0.001 + 0.001 + 1e-6 * 305 + 1e-9 * (97 + 305)
    assert report.observes["dn"].samples == pytest.approx([want, want], rel=1e-12)
    (tmp_path / "bad.sq").write_text("""stage e : step { budget 10; cost 0.001; }
run { horizon 10; }
workload { arrive batch(1); }
session { observe x = kv_decode_max; run e prefill (3); }
""")
    with pytest.raises(SqError, match="kv_decode_max.*only in a step stage's cost"):
        sq.compile(tmp_path / "bad.sq")


def test_skew_alphas_come_from_the_profile():
    pro = from_profile(PPRO).step
    assert pro.skew_bounds == (2, 4, 8, 16, 32, 64, 128, 256)
    # the profiler's buckets: steps with a prefill chunk and a few decodes skew far more than
    # decode-only ones; a full batch of 128 hardly at all
    at64 = pro.skew_bounds.index(64)
    assert pro.skew_mixed[at64] > 2 * pro.skew_decode[at64] > 0
    assert 0 < pro.skew_mixed[at64 + 1] < 0.05
    # the RTX 4090 bundle's meta.yaml says `skew_fit: enabled: false`: no correction is applied
    assert from_profile(P4090).step.skew_bounds == ()


def test_skewed_library_is_the_cost_sq_runs(tmp_path):
    """With the skew term the library still computes what CostModel.cost does, kv_decode_max included."""
    cm = from_profile(PPRO)
    (tmp_path / "costs.sq").write_text(cm.library(skew=True))
    assert "kv_decode_max" in cm.library(skew=True) and "kv_decode_max" not in cm.library()
    (tmp_path / "p.sq").write_text("""use "costs.sq";
pool kv { cap 100000; }
stage e : step { budget 4096; cost step_cost(); memory kv; }
run { horizon 100; warmup 0; }
workload { arrive batch(2); }
session { set p = serial == 0 ? 96 : 3000; hold kv (1) { run e prefill (p) growing kv; observe pf = now;
  run e decode (1) growing kv; observe dn = now; } }
""")
    report = sq.run(sq.compile(tmp_path / "p.sq"))
    pf = report.observes["pf"].samples[0]
    step = cm.cost(tokens=3096, prefilled=3096, attention=96 * 48 + 3000 * 1500, kv_prefill=3096, decoders=0,
                   kv_decode=0, kv_decode_max=0)
    assert pf == pytest.approx(step, rel=1e-12)
    decode = cm.cost(tokens=2, prefilled=0, attention=0, kv_prefill=0, decoders=2, kv_decode=97 + 3001,
                     kv_decode_max=3001)
    even = cm.cost(tokens=2, prefilled=0, attention=0, kv_prefill=0, decoders=2, kv_decode=97 + 3001)
    assert decode > even
    assert report.observes["dn"].samples[0] == pytest.approx(pf + decode, rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("run, profile", [
    ("RTXPRO6000_Llama-3.1-8B", PPRO),
    ("RTXPRO6000_Qwen3-30B-A3B-Instruct-2507", QWEN_MOE)], ids=["rtxpro6000-llama", "rtxpro6000-qwen-moe"])
def test_validate_rtx_pro_6000_runs_meet_targets(run, profile):
    v = validate(DATA / "vllm-runs" / run, profile, with_capacity=False).to_json()
    assert v["ended"] == 300
    assert abs(v["ttft_mean_error"]) <= 0.10
    assert abs(v["tpot_mean_error"]) <= 0.03 and abs(v["e2e_mean_error"]) <= 0.03
    for m in ("ttft", "tpot", "e2e"):
        assert abs(v[f"{m}_p90_error"]) <= 0.15


def test_lockstep_engines_step_at_the_busiest(tmp_path):
    """Two data-parallel MoE engines in lockstep: a step with one engine's prefill costs what that
    engine's share costs (its dense ops on its own tokens), more than an even split of the work."""
    cm = from_profile(QWEN_MOE, ep=2, max_num_seqs=128)
    lib = cm.library()
    assert "def step_cost_lockstep(r, b, g)" in lib and "def cm_experts_cost(t) = cm_moe_base()" in lib
    (tmp_path / "costs.sq").write_text(lib)
    (tmp_path / "p.sq").write_text("""use "costs.sq";
pool kv { cap 100000; }
stage e : step { budget 4096; chunk 2048; cost step_cost_lockstep(2, 2048, 256); memory kv; }
run { horizon 100; warmup 0; }
workload { arrive batch(1); }
session { hold kv (1) { run e prefill (2000) growing kv; observe pf = now; } }
""")
    pf = sq.run(sq.compile(tmp_path / "p.sq")).observes["pf"].samples[0]
    from sq.costs.fit import hinge_basis
    s = cm.step

    def part(fit, knots, tokens):
        return float((hinge_basis(np.array([float(tokens)]), knots) @ fit.coef)[0])
    alone = cm.cost(tokens=2000, prefilled=2000, attention=2000 * 1000, kv_prefill=2000, decoders=0, kv_decode=0)
    # one engine alone: dense ops and experts at its 2000 tokens; in lockstep the experts see both
    # engines' 2000 tokens spread over 2 GPUs (1000 an engine), the rest is the busy engine's own
    want = alone - part(s.experts, s.expert_knots, 2000) + part(s.experts, s.expert_knots, 1000)
    assert pf == pytest.approx(want, rel=1e-9)
    even = cm.cost(tokens=1000, prefilled=1000, attention=1000 * 500, kv_prefill=1000, decoders=0, kv_decode=0)
    assert pf > even      # an even split of the step (the former model) said less

"""The step engine's shortcuts (issue 12, the chat row) against pyserq 0.1.2's JSON text, digit for digit.

Each shortcut has a general path it must agree with, and each program below makes the engine take
one or the other: iteration totals summed over the final assignment (after admissions ran sessions,
after preemptions dropped assigned jobs, on an exclusive stage, with and without KV totals); an
in-order pass telling its served residents by its cursor, and by their stamps once an admission
joined before it; a budget or chunk that is
one constant, read as set up, and one that is an expression; cached prefixes evicted by the lru
loop without spills or traces (many blocks at once when every number is whole, else one at a
time), and by the general loop when evictions are traced; an iteration's time shares written
only where they are nonzero; a shaped cost read from its leaves' places; a cost at or below 0
(or NaN) clamped to 0 without fmax, -0 kept; assigned job ids checked at an iteration's end only
after a resident left; a job's later decode tokens continuing its turn's gaps (end_iteration's shortcut, their
counts kept in locals when the gap repeats).
"""
from __future__ import annotations

import json

import pytest

import sq
from tests.helpers.oracle import REFERENCE_MISSING

pyserq = pytest.importorskip("pyserq", reason=REFERENCE_MISSING, exc_type=ImportError)   # every test compares

# the conversations both engines below serve: turns with think time, a run and a warm-up
TURNS = """
run { horizon 240; warmup 20; seed 5; }
workload {
  arrive poisson(0.8);
  hidden o;
  init { set K = 0; }
  turn { set n = K == 0 ? floor(~uniform(300, 1500)) : floor(~uniform(20, 300));
         set o = 1 + floor(~exp(120)); set more = ~bernoulli(0.7); }
  session { loop { turn; request; branch (!more) { end; } run user (~exp(8)); } }
}
"""

# Multi-turn chat (examples/multi-turn/vllm.sq, shorter, a smaller card): `admit via` admissions
# during planning, the prefix cache evicted a block at a time, kv totals in the cost.
CHAT = """
let bs = 16;
pool seqs { cap 64; admit via engine; }
pool kv { cap KV; block bs; evict lru; preempt lifo; }
stage engine : step { budget BUDGET; chunk CHUNK; cost 0.008 + max(4e-8 * (kv_decode + kv_prefill), 2e-5 * tokens);
                      memory kv; SERVE }
stage user : delay;
""" + TURNS + """server {
  set prompt = K + n;
  hold seqs (1), kv (min(max(prompt, computed), room)) at admission (room = budget_left(engine)) {
    set ctx = max(prompt, computed);
    observe hit = cached / prompt;
    run engine prefill (ctx - cached) growing kv;
    run engine decode (prompt + o - ctx) growing kv;
  } cache (inf);
  set K = prompt + o;
  observe turn_end = now;
}
"""


def _chat(kv="12288", budget="2048", chunk="512", serve="", block="16", whole=True):
    source = CHAT.replace("KV", kv).replace("BUDGET", budget).replace("CHUNK", chunk).replace("SERVE", serve)
    source = source.replace("let bs = 16;", f"let bs = {block};") if block else source.replace("block bs;", "")
    return source if whole else source.replace("floor(~uniform(300, 1500))", "~uniform(300, 1500)")


def _same_as_pyserq(source: str) -> dict:
    ours = sq.run(sq.compile(source=source)).json()
    theirs = pyserq.run(pyserq.compile(source=source)).json()
    assert ours == theirs
    return json.loads(ours)


PLANNING = [
    ("constant budget and chunk", _chat()),
    ("budget and chunk read totals", _chat(budget="1024 + 64 * residents", chunk="256 + residents")),
    ("exclusive prefill", _chat(serve="serve exclusive prefill;")),
    ("a small card: preemptions", _chat(kv="4096")),
    # evictions many blocks at once where every number is whole, one block at a time where not
    ("fractional prompts", _chat(whole=False)),
    ("a fractional block", _chat(block="2.5")),
    ("no blocks", _chat(block="")),
]


@pytest.mark.parametrize("name, source", PLANNING, ids=[name for name, _ in PLANNING])
def test_step_planning_paths_are_pyserqs_json_text(name, source):
    report = _same_as_pyserq(source)
    engine, kv = report["stages"][0], report["pools"][1]
    assert engine["mean_decodes"] > 0 and engine["prefill_only"] + engine["mixed"] > 0, "no mixed work"
    assert kv["evicted_units"] > 0, "nothing evicted"
    if "preemptions" in name:
        assert kv["preemptions"] > 0, "nothing preempted"


def test_traced_evictions_take_the_general_loop_to_the_same_report(tmp_path):
    # tracing evictions keeps make_room's general loop (each piece is logged): same report
    program = sq.compile(source=_chat())
    with open(tmp_path / "evictions.txt", "w") as f:
        traced = sq.run(program, trace_evictions=f).json()
    assert (tmp_path / "evictions.txt").stat().st_size > 0
    assert traced == sq.run(program).json()


@pytest.mark.parametrize("cost", [
    "0.01 - 2e-5 * tokens",                                  # below 0 for a full chunk: 0
    "tokens > 300 ? -(0 * tokens) : 0.01",                   # -0 stays -0
    "tokens > 300 ? 0 * (1 / (tokens - tokens)) : 0.01",     # NaN: 0
])
def test_an_iteration_cost_at_or_below_zero_is_clamped_as_pyserq(cost):
    source = _chat().replace("cost 0.008 + max(4e-8 * (kv_decode + kv_prefill), 2e-5 * tokens);", f"cost {cost};")
    assert f"cost {cost};" in source
    report = _same_as_pyserq(source.replace("horizon 240", "horizon 60"))
    assert report["stages"][0]["iterations"] > 0


# Prefill and decode on two step stages sharing kv: one stage's growth preempts residents of the
# other while its iteration runs, so that iteration's end finds assigned jobs gone (end_iteration
# checks job ids only after a resident left; otherwise every assigned job is still there).
DISAGGREGATED = """
let bs = 16;
pool seqs { cap 64; admit via pre; }
pool kv { cap 6144; block bs; evict lru; preempt lifo; }
stage pre : step { budget 2048; chunk 512; cost 0.008 + 2e-5 * tokens; memory kv; }
stage dec : step { budget 256; cost 0.006 + 4e-8 * kv_decode; memory kv; }
stage user : delay;
""" + TURNS + """server {
  set prompt = K + n;
  hold seqs (1), kv (min(max(prompt, computed), room)) at admission (room = budget_left(pre)) {
    set ctx = max(prompt, computed);
    run pre prefill (ctx - cached) growing kv;
    run dec decode (prompt + o - ctx) growing kv;
  } cache (inf);
  set K = prompt + o;
  observe turn_end = now;
}
"""


def test_residents_preempted_during_another_stages_iteration_as_pyserq():
    report = _same_as_pyserq(DISAGGREGATED)
    assert report["pools"][1]["preemptions"] > 0, "nothing preempted"
    assert all(stage["iterations"] > 0 for stage in report["stages"][:2])


# Decode-only turns: a turn's first token starts its gaps afresh, the rest continue them; a job
# slot is reused by the next turn's decode job (end_iteration's shortcut is taken only after a decode token of
# the same job, never for a reused slot's first token).
DECODE_TURNS = """
pool kv { cap 4096; block 16; }
stage engine : step { budget 256; cost 0.006 + 2e-5 * tokens; memory kv; }
stage user : delay;
run { horizon 120; warmup 10; seed 3; }
workload {
  arrive poisson(2);
  turn { set o = 1 + floor(~exp(40)); set more = ~bernoulli(0.7); }
  session { loop { turn; request; branch (!more) { end; } run user (~exp(2)); } }
}
server {
  hold kv (16) { run engine decode (o) growing kv; }
  observe turn_end = now;
}
"""


def test_decode_tokens_gaps_per_turn_as_pyserq():
    engine = _same_as_pyserq(DECODE_TURNS)["stages"][0]
    assert engine["iterations"] > 0 and engine["itl_p99"] < 0.1, "a gap across turns"


def test_decode_tokens_with_gaps_of_zero_before_any_positive_gap_as_pyserq():
    # Eight decodes at once, their iterations of cost 0 while more than four decode: their later
    # tokens' gaps are 0 before any positive gap is in the histogram (whose last gap is then 0,
    # and no cell is the last one yet). end_decodes counts only gaps equal to a positive last
    # one, so these go through histogram_add (its bucket below 0's), as pyserq counts them.
    source = ("stage e : step { budget 64; cost decoders > 4 ? 0 : 0.01; }\nrun { horizon 10; seed 1; }\n"
              "workload { arrive batch(8); }\nsession { run e decode (6 + serial); observe t = now; }\n")
    engine = _same_as_pyserq(source)["stages"][0]
    assert engine["itl_p50"] == 0 and engine["itl_p99"] > 0, "no gaps of 0 before the positive ones"


# The cost reads no KV total (tokens, decoders, prefilled only), so no KV sum is made: the
# totals of assignments that admissions in the planning pass add to; the prefix cache, two pools
# and lifo preemptions as in the chat above.
TOKEN_COST = "cost 0.008 + 2e-5 * tokens + 1e-4 * decoders + 3e-6 * prefilled;"


@pytest.mark.parametrize("kv", ["12288", "4096"])
def test_token_totals_through_admissions_without_kv_totals_as_pyserq(kv):
    source = _chat(kv=kv).replace("cost 0.008 + max(4e-8 * (kv_decode + kv_prefill), 2e-5 * tokens);", TOKEN_COST)
    assert TOKEN_COST in source
    report = _same_as_pyserq(source)
    assert report["pools"][0]["admissions"] > 0 and report["pools"][1]["evicted_units"] > 0
    if kv == "4096":
        assert report["pools"][1]["preemptions"] > 0, "nothing preempted"


# Residents that hold no KV (admitted never: their admission number is +inf) sit last; a session
# the planning pass admits joins before them, behind the pass's cursor when they were served
# already: the pass then tells its served residents by their stamps (join_residents). Held
# sessions grow at block boundaries and preempt the newest (lifo), or wait to grow (none).
MIXED = """
pool kv { cap 1200; block 16; admit via engine; preempt PREEMPT; }
stage engine : step { budget 512; chunk 128; cost 0.01 + 0.0001 * tokens; memory kv; }
run { horizon 300; warmup 10; seed 7; }
workload { arrive poisson(12);
           init { set n = ~uniform(10, 200); set o = ~uniform(10, 60); set free = ~bernoulli(0.3); }
           session { request; } }
server { set t0 = now;
  branch (free) { run engine prefill (n); run engine decode (o); }
  branch (!free) { hold kv (n) { run engine prefill (n) growing kv; run engine decode (o) growing kv; } }
  observe response = now - t0; }
"""


@pytest.mark.parametrize("preempt", ["lifo", "none"])
def test_admissions_joining_before_the_served_residents_as_pyserq(preempt):
    report = _same_as_pyserq(MIXED.replace("PREEMPT", preempt))
    kv = report["pools"][0]
    assert kv["admissions"] > 0 and report["stages"][0]["iterations"] > 0
    assert (kv["preemptions"] > 0) == (preempt == "lifo")


# The heavy row (sq.bench.models' step_engine(23.0)): ~20 decode residents an iteration on a full
# card, preempting the newest; plan_pass visits the plain decodes through plan_decodes (a grow due,
# a stalled owner, a prefill or a full assignment left to its own visit) and sums the token totals
# as it pushes them, the final assignment's only where no preemption dropped an entry (else summed
# afresh); end_iteration applies their tokens through end_decodes (a gap not the last one, a
# first token left to its own visit). A budget below the residents' count is spent by decodes
# inside plan_decodes; a cost reading the decodes and prefill tokens reads those totals.
HEAVY = """
pool kv { cap 4000; block 16; preempt lifo; admit via engine; }
stage engine : step { budget BUDGET; chunk 256; cost COST; memory kv; }
run { horizon 40; warmup 4; seed 2; }
workload { arrive poisson(23.0); init { set n = ~uniform(10, 200); set o = ~uniform(10,100); } session { request; } }
server { set t0 = now;
  hold kv (n) { run engine prefill (n) growing kv; observe ttft = now - t0; run engine decode (o) growing kv; }
  observe response = now - t0; }
"""


@pytest.mark.parametrize("budget, cost, prompt", [
    ("512", "0.01 + 0.0001*tokens", "uniform(10, 200)"),
    ("512", "0.01 + 0.0001*tokens + 1e-4 * decoders + 3e-6 * prefilled", "uniform(10, 200)"),
    ("8", "0.004 + 0.0003*tokens + 1e-4 * decoders", "uniform(1, 4)"),   # more residents than the budget
])
def test_decode_residents_planned_and_ended_in_the_plain_loops_as_pyserq(budget, cost, prompt):
    source = HEAVY.replace("BUDGET", budget).replace("COST", cost).replace("uniform(10, 200)", prompt)
    report = _same_as_pyserq(source)
    engine, kv = report["stages"][0], report["pools"][0]
    if budget == "512":
        assert engine["mean_decodes"] > 10 and kv["preemptions"] > 0, "not the heavy row's shape"
    else:
        assert engine["mean_number"] > 8 and engine["mean_decodes"] > 7, "the decodes do not spend the budget"


def test_token_totals_after_a_preemption_of_a_served_resident_are_the_final_assignments():
    # Served newest first, a grower preempts (lifo) a resident served already in the pass being
    # planned: pyserq panics there (docs/differences.md); sq drops the victim's entry, and the
    # iteration's totals must then be the final assignment's, not the sums the plan made as it
    # pushed. A cost that also reads a KV sum (times 0) makes them afresh: the same durations.
    source = HEAVY.replace("BUDGET", "512").replace("memory kv;", "memory kv; serve by (-admission);")
    cost = "0.01 + 0.0001*tokens + 1e-4 * decoders + 3e-6 * prefilled"
    summed = sq.run(sq.compile(source=source.replace("COST", cost))).json()
    afresh = sq.run(sq.compile(source=source.replace("COST", cost + " + 0 * kv_decode"))).json()
    assert summed == afresh
    assert json.loads(summed)["pools"][0]["preemptions"] > 0, "nothing preempted"

"""serQ's random streams (sq.engine._random) against the reference and the spec.

Three kinds of evidence:
* bit-for-bit agreement with pyserq 0.1.2's own generator (`pyserq.Rng`) and
  with the samples its runs observe, over many seeds, call mixes and
  distribution arguments (edge values included);
* the values the spec quotes (chapters 07 §4.2 and 09 §9.7-9.8), which need
  no reference implementation;
* structural facts that follow from the algorithm (how a u64 straddles a
  refill, how many uniforms each law consumes) and, for the laws, moments
  within limits derived from their variances.
"""
from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sq.engine._random import DIST_CODES, STREAM_MASKS, Rng, stream_seed
from sq.errors import SqError
from tests.helpers import golden

from tests.helpers.oracle import needs_reference as needs_pyserq, reference

pyserq = reference()

U64 = (1 << 64) - 1
U32 = (1 << 32) - 1
RAND_REFILL = 64  # rand_chacha refills four 16-word ChaCha blocks at a time

_seeds = random.Random(20261129)
SEEDS = [0, 1, 2, 3, 7, 11, U64, 1 << 63, 0x5851F42D4C957F2D] + [_seeds.getrandbits(64) for _ in range(8)]


def same_float(a: float, b: float) -> bool:
    """Bit-level equality, with every NaN equal to every NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def same_floats(xs, ys) -> bool:
    return len(xs) == len(ys) and all(same_float(x, y) for x, y in zip(xs, ys))


# --- the raw stream against pyserq.Rng -------------------------------------------


@needs_pyserq
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("method", ["next_u32", "next_u64", "random_f64"])
def test_single_method_stream_matches_pyserq(seed, method):
    ours, ref = Rng(seed), pyserq.Rng(seed)
    got = [getattr(ours, method)() for _ in range(3000)]
    want = [getattr(ref, method)() for _ in range(3000)]
    assert got == want


def _mixed_ops(rng: random.Random, n: int):
    """A call sequence mixing widths, so u64 reads land on odd word offsets."""
    for _ in range(n):
        kind = rng.randrange(4)
        if kind < 3:
            yield ("next_u32", "next_u64", "random_f64")[kind], ()
        else:
            lo = rng.randrange(U32 + 1)
            hi = rng.choice([lo, min(U32, lo + rng.randrange(16)), rng.randrange(lo, U32 + 1), U32])
            yield "range_u32", (lo, hi)


@needs_pyserq
@pytest.mark.parametrize("seed", SEEDS)
def test_mixed_call_sequence_matches_pyserq(seed):
    ours, ref = Rng(seed), pyserq.Rng(seed)
    for step, (method, args) in enumerate(_mixed_ops(random.Random(seed), 4000)):
        got, want = getattr(ours, method)(*args), getattr(ref, method)(*args)
        assert got == want, f"call {step}: {method}{args}"


_op = st.one_of(
    st.sampled_from([("next_u32", ()), ("next_u64", ()), ("random_f64", ())]),
    st.integers(0, U32).flatmap(lambda lo: st.tuples(st.just("range_u32"), st.tuples(st.just(lo), st.integers(lo, U32)))),
)


@needs_pyserq
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, U64), ops=st.lists(_op, max_size=300))
def test_any_seed_and_call_sequence_matches_pyserq(seed, ops):
    ours, ref = Rng(seed), pyserq.Rng(seed)
    for method, args in ops:
        assert getattr(ours, method)(*args) == getattr(ref, method)(*args)
    assert ours.next_u64() == ref.next_u64()


@needs_pyserq
@pytest.mark.parametrize("lead", [*range(RAND_REFILL - 3, RAND_REFILL + 3), *range(2 * RAND_REFILL - 2, 2 * RAND_REFILL + 2)])
def test_u64_after_odd_u32_count_matches_pyserq(lead):
    ours, ref = Rng(42), pyserq.Rng(42)
    for _ in range(lead):
        assert ours.next_u32() == ref.next_u32()
    assert [ours.next_u64() for _ in range(40)] == [ref.next_u64() for _ in range(40)]


def test_u64_after_any_word_count_is_the_next_two_words():
    # BlockRng's straddle rule (last word of one refill low, first of the next
    # high) makes a u64 the next two stream words at every offset, whatever the
    # refill size; 300 offsets cover several refills of 64 or 128 words.
    w = Rng(5)
    words = [w.next_u32() for _ in range(310)]
    for lead in range(300):
        r = Rng(5)
        for _ in range(lead):
            r.next_u32()
        assert r.next_u64() == words[lead] | (words[lead + 1] << 32)
        assert r.next_u32() == words[lead + 2]


def test_u64_is_two_consecutive_words_low_first():
    words, pairs = Rng(9), Rng(9)
    w = [words.next_u32() for _ in range(4 * RAND_REFILL)]
    assert [pairs.next_u64() for _ in range(2 * RAND_REFILL)] == [
        w[i] | (w[i + 1] << 32) for i in range(0, 4 * RAND_REFILL, 2)
    ]


def test_random_f64_is_top_53_bits_of_next_u64():
    bits, floats = Rng(17), Rng(17)
    for _ in range(500):
        assert floats.random_f64() == (bits.next_u64() >> 11) * 2.0 ** -53


def test_seeds_give_distinct_streams():
    firsts = {tuple(Rng(s).next_u32() for _ in range(4)) for s in SEEDS}
    assert len(firsts) == len(SEEDS)


# --- range_u32 --------------------------------------------------------------------

# Span sizes that exercise Canon's second draw often (n close to 2^32 and not a
# power of two), never (n a power of two), and the single-value and full cases.
RANGES = [(0, 0), (5, 5), (0, 1), (0, 4), (10, 19), (0, 6), (0, 1 << 31), (1, 1 << 31),
          (0, 3_000_000_000), (7, U32), (0, U32 - 1), (0, U32), (U32, U32), (123_456, 2_000_123_456)]


@needs_pyserq
@pytest.mark.parametrize("lo,hi", RANGES)
def test_range_u32_matches_pyserq(lo, hi):
    for seed in (0, 1, 9, U64):
        ours, ref = Rng(seed), pyserq.Rng(seed)
        got = [ours.range_u32(lo, hi) for _ in range(1500)]
        assert got == [ref.range_u32(lo, hi) for _ in range(1500)]
        # the draw count matched too: the streams are still in step
        assert ours.next_u64() == ref.next_u64()


@pytest.mark.parametrize("lo,hi", RANGES)
def test_range_u32_stays_within_both_bounds(lo, hi):
    r = Rng(3)
    values = [r.range_u32(lo, hi) for _ in range(2000)]
    assert all(lo <= v <= hi for v in values)


def test_range_u32_over_the_whole_domain_is_next_u32():
    ranged, words = Rng(21), Rng(21)
    assert [ranged.range_u32(0, U32) for _ in range(300)] == [words.next_u32() for _ in range(300)]


def test_range_u32_is_widening_multiply_when_no_carry_is_possible():
    # n a power of two: the low product is a multiple of n, never above 2^32 - n,
    # so each value is (word * n) >> 32 and one word is consumed per value.
    n = 1 << 20
    ranged, words = Rng(8), Rng(8)
    assert [ranged.range_u32(0, n - 1) for _ in range(300)] == [
        (words.next_u32() * n) >> 32 for _ in range(300)
    ]


def test_range_u32_small_span_is_roughly_uniform():
    # 60 000 draws over 6 values: each count is Binomial(60000, 1/6); 5 sigma = 456
    r = Rng(2026)
    counts = [0] * 6
    for _ in range(60_000):
        counts[r.range_u32(10, 15) - 10] += 1
    sigma = math.sqrt(60_000 * (1 / 6) * (5 / 6))
    assert all(abs(c - 10_000) < 5 * sigma for c in counts)


# --- the spec's quoted values -----------------------------------------------------


def test_stream_masks_are_the_spec_table():
    assert stream_seed(1, "arrival") == 1
    assert stream_seed(1, "workload") == 1 ^ 0x9E3779B97F4A7C15
    assert stream_seed(1, "session") == 1 ^ 0x5851F42D4C957F2D
    assert stream_seed(1, "eviction") == 1 ^ 0x2545F4914F6CDD1D
    assert stream_seed(1, "trace") == 1 ^ 0x6A09E667F3BCC908
    assert set(STREAM_MASKS) == {"arrival", "workload", "session", "eviction", "trace"}


def test_session_stream_first_draws_seed_1():
    # chapter 07 §4.2: observe x = ~exp(1); y = ~exp(1); z = ~uniform(0, 1)
    r = Rng(stream_seed(1, "session"))
    assert r.draw("exp", 1) == 0.13562021829665472
    assert r.draw("exp", 1) == 0.8316805812218893
    assert r.draw("uniform", 0, 1) == 0.960359177084277


def test_session_stream_exponentials_d1_to_d8_seed_1():
    # chapter 07 §4.2 quotes them to four places
    r = Rng(stream_seed(1, "session"))
    quoted = [0.1356, 0.8317, 3.2279, 0.7304, 3.0189, 0.2233, 1.9303, 0.1863]
    assert [round(r.draw("exp", 1), 4) for _ in quoted] == quoted


def test_ev_rng_wl_workload_and_session_streams():
    wl = Rng(stream_seed(1, "workload"))
    xy = [wl.draw("uniform", 0, 1) for _ in range(6)]
    assert xy[0::2] == [0.9221439071583398, 0.9149841631171861, 0.584939617566649]
    assert xy[1::2] == [0.8953375791941335, 0.6071423893488589, 0.16660695008725568]
    se = Rng(stream_seed(1, "session"))
    assert [se.draw("uniform", 0, 1) for _ in range(3)] == [0.1268258148947381, 0.564682914487077, 0.960359177084277]


EV_DIST = {  # chapter 09 §9.8, [EV-DIST-*]: seed 11, workload stream, four sessions' init
    ("exp", (2,)): [2.689103138320234, 0.33644030768923217, 1.815796047536799, 1.6761488856341922],
    ("bernoulli", (0.3,)): [0, 1, 0, 0],
    ("erlang", (3, 6)): [4.841339493546266, 7.924328623268801, 2.1923298160400644, 4.786991082461835],
    ("h2", (2, 4)): [0.18958691488643276, 0.9445238541728073, 2.6994431120607976, 0.6322901154689935],
    ("uniform", (1, 3)): [2.478686863800193, 1.3096645054548537, 2.1932575795084244, 2.134914784831767],
}


@pytest.mark.parametrize("name,args", list(EV_DIST))
def test_ev_dist_values(name, args):
    r = Rng(stream_seed(11, "workload"))
    assert [r.draw(name, *args) for _ in range(4)] == EV_DIST[(name, args)]


def test_ev_rng_session_init_draws_seed_2():
    # init { a = ~det(5); b = ~uniform(0,1); c = ~erlang(2.7, 3); } for two sessions
    r = Rng(stream_seed(2, "workload"))
    b, c = [], []
    for _ in range(2):
        assert r.draw("det", 5) == 5
        b.append(r.draw("uniform", 0, 1))
        c.append(r.draw("erlang", 2.7, 3))
    assert b == [0.5209607719820512, 0.253984283357197]
    assert c == [1.3163817424589606, 2.2805270795202883]


def test_ev_poisson_1_arrival_gaps():
    # poisson(2), seed 7: arrival times are cumulative -ln(1 - u)/2 on the arrival stream
    r = Rng(stream_seed(7, "arrival"))
    t, times = 0.0, []
    for _ in range(9):
        t += -math.log(1.0 - r.random_f64()) / 2
        times.append(t)
    assert times == [0.015393218584045507, 0.19881811587275278, 0.27576806291985145,
                     0.666776043495678, 0.8258448120945163, 2.3351539253849687,
                     2.4316197259172485, 2.579991857401832, 2.6468836200540604]


def test_ev_renewal_2_and_ev_rng_cost():
    r = Rng(stream_seed(4, "arrival"))
    first = r.draw("exp", 1)
    assert f"{first:.9f}" == "0.761432853"
    assert f"{first + r.draw('exp', 1):.9f}" == "1.831363347"
    cost = Rng(stream_seed(5, "session"))  # iterations start at 0, 1.9663, 3.6893
    c1 = cost.draw("uniform", 1, 2)
    c2 = cost.draw("uniform", 1, 2)
    assert (round(c1, 4), round(c1 + c2, 4)) == (1.9663, 3.6893)


def test_ev_trace_picks_seed_9():
    r = Rng(stream_seed(9, "trace"))
    assert [r.range_u32(0, 4) for _ in range(6)] == [0, 1, 3, 3, 4, 1]


# --- the laws: truncation rules and draw counts ------------------------------------


def _draws_consumed(name, args) -> int:
    """How many random_f64 calls one draw uses, read off the stream position."""
    r = Rng(77)
    r.draw(name, *args)
    marker = r.next_u64()
    probe = Rng(77)
    for used in range(64):
        if probe.next_u64() == marker:
            return used
    raise AssertionError("stream position not found")


@pytest.mark.parametrize("name,args,count", [
    ("det", (3,), 0), ("det", (math.nan,), 0),
    ("exp", (1,), 1), ("exp", (0,), 1), ("uniform", (2, 2), 1), ("bernoulli", (2,), 1),
    ("h2", (2, 4), 2), ("h2", (2, 0.5), 2), ("h2", (math.nan, math.nan), 2),
    ("erlang", (4, 2), 4), ("erlang", (2.7, 3), 2), ("erlang", (0, 2), 1), ("erlang", (-5, 1), 1),
    ("erlang", (math.nan, 1), 1), ("erlang", (0.999, 1), 1), ("erlang", (17, 1), 17),
])
def test_draw_counts(name, args, count):
    assert _draws_consumed(name, args) == count


def test_erlang_truncates_k_and_counts_below_one_as_one():
    def seq(k, m):
        r = Rng(31)
        return [r.draw("erlang", k, m) for _ in range(50)]
    assert seq(2.7, 3) == seq(2, 3)
    assert seq(0, 2) == seq(-3, 2) == seq(1, 2)
    e = Rng(31)
    assert seq(0, 2) == [e.draw("exp", 2) for _ in range(50)]


def test_h2_cv2_below_one_behaves_as_one():
    a, b = Rng(4), Rng(4)
    assert [a.draw("h2", 2, 0.5) for _ in range(50)] == [b.draw("h2", 2, 1) for _ in range(50)]


def test_laws_by_formula():
    # one uniform per draw, transformed as chapter 09 §9.8 writes it
    for seed in (0, 6, U64):
        law, u = Rng(seed), Rng(seed)
        for _ in range(100):
            x = u.random_f64()
            assert law.draw("exp", 3) == -3 * math.log(1 - x)
            x = u.random_f64()
            assert law.draw("uniform", -1, 5) == -1 + 6 * x
            x = u.random_f64()
            assert law.draw("bernoulli", 0.4) == (1.0 if x < 0.4 else 0.0)
            x1, x2 = u.random_f64(), u.random_f64()
            p = 0.5 * (1 + math.sqrt(3 / 5))
            mean = 2 / (2 * p) if x1 < p else 2 / (2 * (1 - p))
            assert law.draw("h2", 2, 4) == -mean * math.log(1 - x2)


def test_degenerate_parameters_are_values_not_errors():
    r = Rng(12)
    assert r.draw("exp", 0) == 0
    assert r.draw("exp", -1) < 0
    assert r.draw("uniform", 2, 2) == 2
    assert 1 <= r.draw("uniform", 3, 1) <= 3
    assert all(r.draw("bernoulli", 2) == 1 for _ in range(100))
    assert all(r.draw("bernoulli", 0) == 0 for _ in range(100))
    assert math.isnan(r.draw("exp", math.nan))


def test_ir_and_source_spellings_are_the_same_law():
    for source, ir in [("det", "Det"), ("exp", "Exp"), ("uniform", "Uniform"),
                       ("erlang", "Erlang"), ("h2", "H2"), ("bernoulli", "Bernoulli")]:
        assert DIST_CODES[source] == DIST_CODES[ir]
    assert len(set(DIST_CODES.values())) == 6


# Moments over n draws: |mean - mu| < 5 sigma / sqrt(n) (a false alarm about 1 in 1.7M).
MOMENTS = [  # name, args, mean, variance
    ("exp", (2,), 2, 4),
    ("uniform", (1, 3), 2, 4 / 12),
    ("bernoulli", (0.25,), 0.25, 0.25 * 0.75),
    ("erlang", (4, 2), 2, 4 / 4),
    ("h2", (2, 4), 2, 4 * 4),
]


@pytest.mark.parametrize("name,args,mu,var", MOMENTS)
def test_law_means(name, args, mu, var):
    n = 40_000
    r = Rng(1234)
    mean = sum(r.draw(name, *args) for _ in range(n)) / n
    assert abs(mean - mu) < 5 * math.sqrt(var / n)


@pytest.mark.parametrize("name,args,mu,var", [m for m in MOMENTS if m[0] in ("exp", "uniform", "erlang")])
def test_law_variances(name, args, mu, var):
    # the sample variance of n draws has variance (mu4 - sigma^4)/n; for these
    # laws mu4/sigma^4 (kurtosis) is 9, 1.8 and 3 + 6/k
    kurtosis = {"exp": 9.0, "uniform": 1.8, "erlang": 3 + 6 / args[0]}[name]
    n = 40_000
    r = Rng(4321)
    xs = [r.draw(name, *args) for _ in range(n)]
    m = sum(xs) / n
    s2 = sum((x - m) ** 2 for x in xs) / (n - 1)
    assert abs(s2 - var) < 5 * math.sqrt((kurtosis - 1) * var * var / n)


# --- the laws against pyserq runs ---------------------------------------------------

EDGE = {"0": 0.0, "(-0)": -0.0, "1": 1.0, "(-1)": -1.0, "2.5": 2.5, "0.3": 0.3,
        "1e-300": 1e-300, "1e300": 1e300, "(1/0)": math.inf, "(-1/0)": -math.inf, "(0/0)": math.nan}
ERLANG_K = ["0", "(-0)", "1", "(-1)", "2.5", "0.3", "3", "4", "(0/0)", "(-1/0)"]
VALUES = {**EDGE, "3": 3.0, "4": 4.0}
ARGSETS = (
    [("det", (a,)) for a in EDGE]
    + [("exp", (a,)) for a in EDGE]
    + [("bernoulli", (a,)) for a in EDGE]
    + [("uniform", pair) for pair in itertools.product(EDGE, repeat=2)]
    + [("h2", pair) for pair in itertools.product(EDGE, repeat=2)]
    + [("erlang", (k, m)) for k in ERLANG_K for m in EDGE]
)


def _pyserq_samples(expr: str, n: int, seed: int) -> list[float]:
    src = f"workload {{ arrive batch({n}); }}\nsession {{ observe v = {expr}; }}"
    return list(pyserq.run(pyserq.compile(source=src, seed=seed, horizon=1)).observes["v"].samples)


@needs_pyserq
@pytest.mark.parametrize("name,args", ARGSETS, ids=[f"{n}({','.join(a)})" for n, a in ARGSETS])
def test_law_matches_pyserq_session_draws(name, args):
    seed = 3
    expr = f"~{name}({', '.join(args)})"
    want = _pyserq_samples(expr, 30, seed)
    r = Rng(stream_seed(seed, "session"))
    got = [r.draw(name, *(VALUES[a] for a in args)) for _ in range(30)]
    assert same_floats(got, want)


@needs_pyserq
def test_interleaved_laws_match_pyserq_over_seeds():
    # every law in one session body, many sessions: the draw counts must line up too
    exprs = [("exp", (1.5,)), ("erlang", (3, 2)), ("h2", (1, 9)), ("det", (4,)),
             ("bernoulli", (0.5,)), ("uniform", (-2, 7)), ("erlang", (2.7, 1))]
    body = " ".join(f"observe v{i} = ~{n}({', '.join(map(str, a))});" for i, (n, a) in enumerate(exprs))
    for seed in (1, 99, U64):
        src = f"workload {{ arrive batch(200); }}\nsession {{ {body} }}"
        obs = pyserq.run(pyserq.compile(source=src, seed=seed, horizon=1)).observes
        r = Rng(stream_seed(seed, "session"))
        got = [[] for _ in exprs]
        for _ in range(200):
            for i, (n, a) in enumerate(exprs):
                got[i].append(r.draw(n, *a))
        for i in range(len(exprs)):
            assert same_floats(got[i], list(obs[f"v{i}"].samples)), exprs[i]


@needs_pyserq
@pytest.mark.slow
@pytest.mark.parametrize("k_source,k", [("4294967297", 4294967297.0), ("(1/0)", math.inf)])
def test_erlang_huge_k_saturates_like_pyserq(k_source, k):
    # k beyond u32 range: 0.1.2 takes u32::MAX phases (about a minute each side)
    want = _pyserq_samples(f"~erlang({k_source}, 1)", 1, 3)
    r = Rng(stream_seed(3, "session"))
    assert same_floats([r.draw("erlang", k, 1.0)], want)


# --- known answers recorded from pyserq.Rng and pyserq's runs (tests/data/golden/rng.json) ---------

VECTORS = golden.rng_vectors()


def _ours(value):
    return golden.bits(value) if isinstance(value, float) else value


@pytest.mark.parametrize("case", VECTORS["streams"], ids=lambda c: f"{c['method']}-{c['seed']:x}")
def test_stream_gives_the_recorded_values(case):
    r = Rng(case["seed"])
    assert [_ours(getattr(r, case["method"])()) for _ in case["values"]] == case["values"]


@pytest.mark.parametrize("case", VECTORS["mixed"], ids=lambda c: f"{c['seed']:x}")
def test_mixed_calls_give_the_recorded_values(case):
    r = Rng(case["seed"])
    for step, ((method, args), want) in enumerate(zip(case["calls"], case["values"])):
        assert _ours(getattr(r, method)(*args)) == want, f"call {step}: {method}{tuple(args)}"


@pytest.mark.parametrize("case", VECTORS["ranges"], ids=lambda c: f"{c['lo']}-{c['hi']}-{c['seed']:x}")
def test_range_u32_gives_the_recorded_values(case):
    r = Rng(case["seed"])
    assert [r.range_u32(case["lo"], case["hi"]) for _ in case["values"]] == case["values"]
    assert r.next_u64() == case["then_u64"]          # as many words consumed as the reference


@pytest.mark.parametrize("case", VECTORS["laws"], ids=lambda c: f"{c['law']}({','.join(c['source'])})")
def test_law_gives_the_recorded_session_draws(case):
    r = Rng(stream_seed(VECTORS["law_seed"], "session"))
    args = [golden.from_bits(a) for a in case["args"]]
    got = [r.draw(case["law"], *args) for _ in case["draws"]]
    assert same_floats(got, [golden.from_bits(d) for d in case["draws"]])


# --- bad input -------------------------------------------------------------------


@pytest.mark.parametrize("seed", [-1, 1 << 64, 1.5, "x", None, math.nan])
def test_bad_seed_is_sq_error(seed):
    with pytest.raises(SqError):
        Rng(seed)


@pytest.mark.parametrize("call", [
    lambda r: r.range_u32(3, 2), lambda r: r.range_u32(-1, 2), lambda r: r.range_u32(0, 1 << 32),
    lambda r: r.draw("gamma", 1), lambda r: r.draw("exp"), lambda r: r.draw("exp", 1, 2),
    lambda r: r.draw("exp", "a"), lambda r: r.draw("h2", 1, None),
])
def test_bad_calls_are_sq_errors(call):
    with pytest.raises(SqError):
        call(Rng(0))


def test_unknown_stream_is_sq_error():
    with pytest.raises(SqError):
        stream_seed(1, "turn")

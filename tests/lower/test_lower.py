"""Lowering: IR dict → flat arrays, and the source form printed in run-time errors."""
from __future__ import annotations


import numpy as np
import pytest

from sq.lower import lowering as L
from sq.errors import SqError

from tests.helpers.oracle import sq_ir as _ir


def test_tables_follow_declarations():
    low = L.lower(_ir("stage a : fifo(3); stage b[2] : ps(min(present, 2)); stage c : delay;\n"
                      "pool kv { cap 12; } gauge g = queue(a);\n"
                      "workload { arrive poisson(2); } session { run a (1); observe r = now; }",
                      warmup=1, seed=4))
    assert low.stage_names == ["a", "b", "b", "c"]
    assert low.stage_indices == [None, 0, 1, None]
    assert low.stage_kinds.tolist() == [L.K_FIFO, L.K_PS, L.K_PS, L.K_DELAY]
    assert low.stage_servers[0] == 3
    assert low.stage_phi[0] == -1 and low.stage_phi[1] >= 0
    assert low.pool_caps.tolist() == [12.0]
    assert (low.arrival_kind, low.arrival_rate) == (L.A_POISSON, 2.0)
    assert (low.horizon, low.warmup, low.seed) == (10.0, 1.0, 4)
    assert low.observe_names == ["r"] and low.gauge_names == ["g"]
    assert low.code.dtype == np.int32 and low.consts.dtype == np.float64 and low.stmts.dtype == np.int32


@pytest.mark.parametrize("arrival, kind, count", [("batch(2.7)", L.A_BATCH, 2), ("closed(-1)", L.A_CLOSED, 0),
                                                  ("none", L.A_NONE, 0)])
def test_population_counts_truncate(arrival, kind, count):
    low = L.lower(_ir(f"workload {{ arrive {arrival}; }} session {{ }}"))
    assert (low.arrival_kind, low.arrival_count) == (kind, count)


def test_loop_jumps_back_to_its_first_statement():
    low = L.lower(_ir("stage d : delay; workload { arrive batch(1); }\n"
                      "session { set k = 0; loop { set k = k + 1; run d (1); } }"))
    code = low.stmts.tolist()
    pc = low.session_pc
    assert code[pc] == L.S_SET                      # set k = 0
    loop_top = pc + 3
    jump = code.index(L.S_JUMP, loop_top)
    assert code[jump + 1] == loop_top


def test_branch_else_target_skips_the_then_block():
    low = L.lower(_ir("workload { arrive batch(1); }\n"
                      "session { branch (serial == 0) { observe a = 1; } else { observe b = 2; } observe c = 3; }"))
    code = low.stmts.tolist()
    pc = low.session_pc
    assert code[pc] == L.S_BRANCH
    else_target = code[pc + 2]
    assert code[pc + 4] == L.S_OBSERVE and code[pc + 7] == L.S_JUMP
    assert else_target == pc + 9 and code[else_target] == L.S_OBSERVE
    assert code[pc + 8] == else_target + 3          # the then block jumps past the else block


def test_constants_are_pooled():
    low = L.lower(_ir("workload { arrive batch(1); } session { observe a = serial + 2; observe b = serial * 2; }"))
    assert low.consts.tolist().count(2.0) == 1


EXPRESSIONS = [
    "serial - 1 + 0.5 * (serial == 2)",
    "min(x, 2) * (3 + serial) > 1 && !x ? ~exp(1) : -x ^ 2",
    "x - (serial - 1)",
    "x / (serial * 2)",
    "(x + 1) ^ 2",
    "2 ^ 3 ^ x",
    "(2 ^ 3) ^ x",
    "-(x + 1)",
    "!(x < 1)",
    "x ? 1 : x ? 2 : 3",
    "(x ? 1 : 2) ? 3 : 4",
    "x || serial && 1",
    "(x || serial) && 1",
    "(x < 1) == (serial < 1)",
    "queue(s[x]) + used(kv) + ~uniform(0, x) + now",
    "1.5 + 0.1 + 1000000 + 0.0000001",
]


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_printed_guard_reads_back_to_the_same_ir(text):
    # the printer must give text that links to the very same expression
    def guard(expr: str):
        ir = _ir("stage s[2] : fifo; pool kv { cap 10; } workload { arrive batch(1); }\n"
                 f"session {{ set x = 0.5; branch ({expr}) {{ observe a = 1; }} }}")
        return ir, ir["blocks"][ir["session"]][1]["Branch"][0]

    ir, expr = guard(text)
    printed = L._Printer(ir["attrs"], ir["stages"], ir["pools"]).text(expr)
    _, again = guard(printed)
    assert again == expr, printed


def test_threads_lowering_at_once_leave_the_recursion_limit_as_they_found_it():
    # the limit is one number for the process: each lowering raised and restored it, so two
    # threads interleaving could restore the other's raised value and leave it at 200000
    import sys
    import threading

    before = sys.getrecursionlimit()
    ir = _ir("workload { arrive batch(1); } session { observe s = sum k in 300 (k * now); }")
    start = threading.Barrier(4)

    def work():
        start.wait()
        for _ in range(15):
            L.lower(ir)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sys.getrecursionlimit() == before


# -- errors found on the IR point at the program text (README: every error has a place) ----------
POISSON = "let lam = {lam};\nlet mu = lam * 2;\nrun {{ horizon 10; }}\nworkload {{ arrive poisson({rate}); }}\n"


@pytest.mark.parametrize("lam, rate, shown", [("1e999", "lam", "inf"), ("-1", "lam", "-1"), ("1", "mu * -1", "-2"),
                                              ("1", "inf", "inf")])
def test_a_bad_poisson_rate_points_at_it(lam, rate, shown):
    """0.1.2 compiles it and gives no place when it runs; sq points at the rate as written."""
    import sq

    program = sq.compile(source=POISSON.format(lam=lam, rate=rate))
    with pytest.raises(SqError) as e:
        sq.run(program)
    assert e.value.message == f"poisson rate {shown} is not a finite rate >= 0"
    at = rate.find(" * ") + 1 if " * " in rate else 0     # a product is placed at its operator
    width = 1 if at else len(rate)
    assert (e.value.file, e.value.line, e.value.col) == (None, 4, 27 + at)
    assert str(e.value).split("\n")[1:] == ["4 | workload { arrive poisson(" + rate + "); }",
                                            "  | " + " " * (26 + at) + "^" * width]


def test_a_rate_an_override_gave_points_at_the_text_and_says_so():
    import sq

    with pytest.raises(SqError) as e:
        sq.run(sq.compile(source=POISSON.format(lam=1, rate="mu"), sets={"lam": "-3"}))
    assert e.value.message == "poisson rate -6 is not a finite rate >= 0"
    assert (e.value.line, e.value.col) == (4, 27)
    assert str(e.value).endswith("\nnote: the value here comes from --set lam, not from the program text")


def test_a_rate_without_program_text_has_the_plain_message():
    """An IR read from JSON has no source, and a program whose IR was changed after compile
    no longer is what its text says: both keep the message alone."""
    import sq

    compiled = sq.compile(source=POISSON.format(lam="1e999", rate="lam"))
    loaded = sq.load(compiled.to_json())
    changed = sq.compile(source=POISSON.format(lam=1, rate="lam"))
    changed.arrival = {"Poisson": float("inf")}
    for program in (loaded, changed):
        with pytest.raises(SqError) as e:
            sq.run(program)
        assert e.value.span is None
        assert str(e.value) == "error: poisson rate inf is not a finite rate >= 0"


def test_the_cli_prints_a_bad_rates_place(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "rate.sq"
    path.write_text(POISSON.format(lam="1e999", rate="lam") + "session { observe r = now; }\n")
    out = subprocess.run([sys.executable, "-m", "sq", "run", str(path)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == [f"{path}:4:27: error: poisson rate inf is not a finite rate >= 0",
                                       "4 | workload { arrive poisson(lam); }",
                                       "  |                           ^^^"]

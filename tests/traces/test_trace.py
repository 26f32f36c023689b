"""sq.traces.serq against pyserq 0.1.2: the trace file format, its errors, and the replay rule (spec 02 §3)."""
from __future__ import annotations

import math
import os
import random
import string
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sq.errors import SqError
from sq.traces.serq import FIELDS, TraceCorpus, pick_session, read_trace, resolve_path, turn_of
from tests.helpers.oracle import needs_reference, reference
from tests.helpers.spec_data import PROBES_DIR, SPEC_CORPUS

pyserq = reference()

PROBES = str(PROBES_DIR)
TRACE_STREAM = 0x6A09E667F3BCC908


# ---- helpers --------------------------------------------------------------------
def _bits(x: float) -> bytes:
    # NaN signs and -0.0 matter: a value may reach a report through arithmetic
    return struct.pack("<d", x)


def _outcome_ours(path: str):
    try:
        corpus = read_trace(path)
    except SqError as e:
        assert e.phase == "run"
        return ("error", "\n".join((e.message,) + e.notes))
    return ("ok", [[tuple(_bits(v) for v in turn) for turn in s] for s in corpus.sessions()])


def _outcome_ref(path: str):
    try:
        sessions = pyserq.read_trace(path)
    except ValueError as e:
        return ("error", str(e))
    return ("ok", [[tuple(_bits(v) for v in turn) for turn in s] for s in sessions])


def _write(path, content) -> str:
    if isinstance(content, str):
        content = content.encode("utf-8")
    with open(path, "wb") as f:
        f.write(content)
    return str(path)


def _same_as_pyserq(path: str):
    ours, ref = _outcome_ours(path), _outcome_ref(path)
    assert ours == ref
    return ours




@needs_reference
def test_spec_example_corpus(tmp_path):
    path = _write(tmp_path / "tr1.csv", SPEC_CORPUS)
    corpus = read_trace(path)
    assert corpus.sessions() == [[(100, 10, 1.5, 0), (20, 5, 2, 1)], [(300, 30, 0, 0)],
                                 [(1, 2, 3, 0), (4, 5, 6, 0), (7, 8, 9, 0)]]
    _same_as_pyserq(path)


def test_flat_layout(tmp_path):
    corpus = read_trace(_write(tmp_path / "t.csv", SPEC_CORPUS))
    assert corpus.turns.dtype == np.float64 and corpus.turns.flags.c_contiguous
    assert corpus.turns.shape == (6, len(FIELDS))
    assert corpus.offset.dtype == np.int64 and corpus.count.dtype == np.int64
    assert corpus.offset.tolist() == [0, 2, 3] and corpus.count.tolist() == [2, 1, 3] and len(corpus) == 3
    # the engine's view: 4 doubles per turn
    flat = corpus.turns.reshape(-1)
    assert flat[4 * (corpus.offset[2] + 1) + FIELDS.index("think")] == 6.0


@needs_reference
@pytest.mark.parametrize("name", ["trace5.csv", "trace2.csv"])
def test_probe_trace_files(name):
    outcome = _same_as_pyserq(os.path.join(PROBES, name))
    assert outcome[0] == "ok"


# ---- edge cases, each compared with pyserq -------------------------------------
EDGE_CASES = [
    # headers, comments, blanks
    "session,turn,new,out,think\n1,0,5,2,0\n",
    "session\n1,0,5,2,0\n",
    "sessionfoo,1\n1,0,5,2,0\n",
    " session,x\n\t# c\n\n   \n1,0,5,2,0\n",
    "1,0,1,1,1\n#x\n  # y\n sessionfoo\n1,0,2,2,2\n",
    "Session,turn,new,out,think\n1,0,1,1,0\n",
    "\ufeffsession,turn,new,out,think\n1,0,1,1,1\n",
    "\u2028session,1\n1,0,1,1,1\n",
    "\x0c#c\n1,0,1,1,1\n",
    # line ends and trimming (Rust whitespace, not Python's)
    "1,0,1,1,1\r\n2,0,2,2,2\r\n",
    "1,0,1,1,1\r2,0,2,2,2\n",
    "  1,0,1,1,1  \n\t2,0,2,2,2\t\n",
    "1,0,1,1,1",
    *[f"{c}1,0,1,1,1{c}\n" for c in "\x0b\x85\xa0\u1680\u2000\u2005\u200a\u2028\u2029\u202f\u205f\u3000"],
    *[f"1,0,1,1,1{c}\n" for c in "\x1c\x1d\x1e\x1f\u200b\u180e\ufeff\x00"],
    *[f"{c}1,0,1,1,1\n" for c in "\x1c\x1f\u200b"],
    # numbers: Rust f64 syntax
    "1,0,inf,-inf,NaN\n",
    "1,0,Infinity,+INF,-nan\n",
    "1,0,inFINITY,-Inf,+NaN\n",
    "1,0,1.,.5,1e5\n",
    "1,0,+1,-0,1E-2\n",
    "1,0,-.5,+.5,-5.\n",
    "1,0,1.5E+03,0.1e+5,1.5e-03\n",
    "1,0,1e400,1e-400,4.9e-324\n",
    "1,0,01,0000000000000000000000000000000000000001,1\n",
    "1,0,1" + "0" * 400 + ",0." + "0" * 400 + "1e400,1\n",
    "1,0,1e99999999999999999999,1e-99999999999999999999,1\n",
    "1,0,1,1,1,2\n",
    "1,0,1,1,1,-0.5\n",
    *[f"1,0,{t},1,1\n" for t in [".", "1e", "0x10", "1_0", " 5", "5 ", "\u0661", "\uff11", "++1", "-", "+",
                                  "e5", "1e5.5", "1.2.3", "infinit", "infinityy", "1d", "1f", "1e+", "1e-",
                                  "in", "na", "nan(1)", "0b1", "1e1_0", "\u00a01", "1\u00a0", "\t1", "i nf"]],
    # fields: counts, the turn column, errors left to right
    "session,turn,new,out,think\n1,0,5,2\n",
    "1,0,1,1,0,5,6\n",
    "1,0,1,1,1,\n",
    "1,0,1,1,\n",
    "1,0,1,1,x,y\n",
    "x,0,y,1,1,x\n",
    ",,,,\n",
    "1,0,1,1,1\n" * 3 + ",\n",
    "x,0,1,1\n",
    "1,x,5,2,0\n",
    "1,,5,2,0\n",
    "1, turn is never read ,5,2,0\n",
    "1,0,1,1,1\n\n\n1,0,x,1,1\n",
    # session ids: runs of consecutive equal ids after `as u64`
    "1.9,0,5,5,5\n1.2,0,6,6,6\n",
    "1,0,1,1,1\n2,0,2,2,2\n1,0,3,3,3\n",
    "1,0,1,1,1\n1,0,2,2,2\n",
    "nan,0,1,1,1\n0,0,2,2,2\n-0.9,0,3,3,3\n0.99,0,4,4,4\n1,0,5,5,5\n",
    "-nan,0,1,1,1\n-inf,0,2,2,2\n-0,0,3,3,3\n",
    "1e20,0,1,1,1\n18446744073709551615,0,2,2,2\n18446744073709549568,0,3,3,3\ninf,0,4,4,4\n1e300,0,5,5,5\n",
    "4294967295,0,1,1,1\n4294967296,0,2,2,2\n4294967296.5,0,3,3,3\n",
    "9007199254740992,0,1,1,1\n9007199254740993,0,2,2,2\n9007199254740994,0,3,3,3\n",
    # empty
    "",
    "\n\n",
    "# only a comment\n",
    "session,turn,new,out,think\n",
    # encoding: the whole file must be UTF-8, checked before any line
    b"x,0,1,1\n1,0,1,1,1\n\xff\xfe\n",
    b"1,0,1,1,1\n\xc3\n",
    b"\xef\xbb\xbf1,0,1,1,1\n",
    "1,0,\u00e9,1,1\n",
]


@needs_reference
@pytest.mark.parametrize("content", EDGE_CASES, ids=[repr(c)[:40] for c in EDGE_CASES])
def test_edge_case_matches_pyserq(tmp_path, content):
    _same_as_pyserq(_write(tmp_path / "t.csv", content))


# ---- every error: phase, file, line, and pyserq's words ------------------------
ERRORS = [
    ("1,0,5,2\n", "line 1: expected 5 or 6 fields, got 4", "help: use session,turn,new,out,think[,forced]"),
    ("# c\n1,0,5,2,0,1,1\n", "line 2: expected 5 or 6 fields, got 7", "help: use session,turn,new,out,think[,forced]"),
    ("session\n1,0, 5,2,0\n", "line 2: column 3 (new): invalid number ` 5`", "help: replace `new` with a numeric value"),
    ("x,0,1,1,0\n", "line 1: column 1 (session): invalid number `x`", "help: replace `session` with a numeric value"),
    ("\n\n1,0,1,z,0\n", "line 3: column 4 (out): invalid number `z`", "help: replace `out` with a numeric value"),
    ("1,0,1,1,1_0\n", "line 1: column 5 (think): invalid number `1_0`", "help: replace `think` with a numeric value"),
    ("1,0,1,1,1,yes\n", "line 1: column 6 (forced): invalid number `yes`",
     "help: replace `forced` with a numeric value"),
    ("", "empty trace", "help: add a data row using session,turn,new,out,think[,forced]"),
    ("session,turn,new,out,think\n# nothing\n", "empty trace",
     "help: add a data row using session,turn,new,out,think[,forced]"),
]


@needs_reference
@pytest.mark.parametrize("content, what, help_line", ERRORS)
def test_format_errors(tmp_path, content, what, help_line):
    path = _write(tmp_path / "bad.csv", content)
    with pytest.raises(SqError) as err:
        read_trace(path)
    e = err.value
    assert e.phase == "run"
    assert e.message == f"trace {path}: {what}" and e.notes == (help_line,)
    with pytest.raises(ValueError) as ref:
        pyserq.read_trace(path)
    assert str(ref.value) == f"{e.message}\n{help_line}"
    assert "Traceback" not in e.render() and path in e.render()


@needs_reference
@pytest.mark.parametrize("make, reason", [
    (lambda d: os.path.join(d, "nope.csv"), "No such file or directory (os error 2)"),
    (lambda d: d, "Is a directory (os error 21)"),
    (lambda d: d + "/", "Is a directory (os error 21)"),
    (lambda d: "", "No such file or directory (os error 2)"),
    (lambda d: os.path.join(d, "nope", "x.csv"), "No such file or directory (os error 2)"),
    (lambda d: _write(os.path.join(d, "f"), "1,0,1,1,1\n") + "/x.csv", "Not a directory (os error 20)"),
    (lambda d: os.path.join(d, "a\0b.csv"), "file name contained an unexpected NUL byte"),
    (lambda d: _write(os.path.join(d, "latin1.csv"), b"1,0,\xe9,1,1\n"), "stream did not contain valid UTF-8"),
])
def test_unreadable_file(tmp_path, make, reason):
    path = make(str(tmp_path))
    with pytest.raises(SqError) as err:
        read_trace(path)
    assert err.value.phase == "run" and err.value.notes == ()
    assert err.value.message == f"cannot read trace {path}: {reason}"
    with pytest.raises(ValueError) as ref:
        pyserq.read_trace(path)
    assert str(ref.value) == err.value.message


@needs_reference
@pytest.mark.parametrize("content", [c for c, _, _ in ERRORS] + ["1,0,1,1,1\x1c\n", b"\xff\n"])
def test_a_run_refuses_with_the_same_words(tmp_path, content):
    # pyserq.run reads the file at run start with the reader read_trace mirrors
    path = _write(tmp_path / "run.csv", content)
    with pytest.raises(SqError) as ours:
        read_trace(path)
    program = pyserq.compile(source=f'stage d : delay;\nworkload {{ arrive batch(1); trace "{path}"; }}\n'
                                    "session { turn; run d (1); }", horizon=10)
    with pytest.raises(ValueError) as ref:
        pyserq.run(program)
    assert str(ref.value) == "\n".join((ours.value.message,) + ours.value.notes)


@needs_reference
def test_a_run_reads_the_file_even_without_sessions(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    program = pyserq.compile(source='stage d : delay;\nworkload { arrive none; trace "nope.csv"; }\n'
                                    "session { turn; run d (1); }", horizon=10)
    with pytest.raises(ValueError, match="cannot read trace nope.csv"):
        pyserq.run(program)


def test_path_like_is_accepted(tmp_path):
    path = tmp_path / "t.csv"
    _write(path, SPEC_CORPUS)
    assert read_trace(path).sessions() == read_trace(str(path)).sessions()


# ---- generated files -------------------------------------------------------------
GOOD_NUMBERS = ["0", "1", "2.5", "-3", ".5", "5.", "1e3", "1E-2", "+4", "-0", "inf", "-Infinity", "NaN", "-nan",
                "1e400", "4.9e-324", "18446744073709551615", "1e20", "-0.9", "0.99", "4294967296.5", "007", "12"]
BAD_NUMBERS = ["", " 1", "1 ", "x", "1_0", "0x10", "\u0661", "1e", ".", "--1", "infinit", "Session", "\u00a01",
               "1\x1c", "\u200b1"]
IDS = ["0", "1", "2", "1.5", "-1", "nan", "3e19", "inf", "7"]
PADS = ["", "", "", " ", "\t", "\u3000", "\xa0", "\x0b", "\x1c", "\u200b", "\r"]


def _random_file(rng: random.Random, dirty: bool) -> str:
    lines, ident = [], rng.choice(IDS)
    for _ in range(rng.randint(0, 14)):
        kind = rng.random()
        if kind < 0.08:
            lines.append(rng.choice(["session,turn,new,out,think", "session,turn,new,out,think,forced", "session",
                                     "sessions!", "# a comment", "#", "", "   "]))
            continue
        if rng.random() > 0.6:
            ident = rng.choice(IDS)
        numbers = BAD_NUMBERS if dirty and rng.random() < 0.03 else GOOD_NUMBERS
        width = rng.choice([5, 6, 4, 7, 1]) if dirty and rng.random() < 0.1 else rng.choice([5, 6])
        fields = [ident, rng.choice(["0", "1", "x", ""])] + [rng.choice(numbers) for _ in range(width - 2)]
        line = ",".join(fields[:width])
        lines.append(rng.choice(PADS if dirty else PADS[:6]) + line + rng.choice(PADS if dirty else PADS[:6]))
    end = rng.choice(["\n", "\r\n"])
    return end.join(lines) + rng.choice([end, ""])


@needs_reference
@pytest.mark.parametrize("dirty", [False, True])
def test_generated_files_match_pyserq(tmp_path, dirty):
    rng = random.Random(20261129 + dirty)
    path = str(tmp_path / "gen.csv")
    kinds = {"ok": 0, "error": 0}
    for _ in range(400):
        _write(path, _random_file(rng, dirty))
        kinds[_same_as_pyserq(path)[0]] += 1
    # the generator must exercise both outcomes, or the comparison proves little
    assert kinds["ok"] > 40 and (kinds["error"] > 40 if dirty else True)


ALPHABET = "0123456789.,eE+-#\n\r \tsessionaf_x\x1c\u3000\xa0\u200b"


@needs_reference
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=ALPHABET, max_size=80))
def test_arbitrary_text_matches_pyserq(tmp_path, text):
    _same_as_pyserq(_write(tmp_path / "fuzz.csv", text))


NUMBERISH = st.one_of(
    st.from_regex(r"[-+.0-9eEinfatyINFATYx_ ]{0,9}", fullmatch=True),
    st.text(alphabet=[c for c in string.printable if c not in ",\n\r"], max_size=6),
    st.sampled_from(["inf", "-infinity", "NaN", "+nan", "1e5", ".5e-3", "5.", "1_000", "1e", "e1", "0x1p3", "1j",
                     "(1)", "1/2", "\u0663", "\u00bd", "\u2155", "\u00b2", "1\u2009", "\u3000"]))


@needs_reference
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fields=st.lists(NUMBERISH, min_size=5, max_size=6))
def test_number_syntax_matches_pyserq(tmp_path, fields):
    # every number field goes through pyserq's f64 parser: Python's float() is looser
    _same_as_pyserq(_write(tmp_path / "num.csv", "1,0,1,1,1\n" + ",".join(fields) + "\n"))


@needs_reference
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.sampled_from(["1", "2", "3"]),
                               st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=3, max_size=4)),
                     min_size=1, max_size=12))
def test_written_floats_read_back_exactly(tmp_path, rows):
    # any double Python prints must come back bit for bit, as in pyserq (repr keeps
    # neither a NaN's payload nor its sign, hence float(repr(v)) below)
    text = "\n".join(f"{i},0," + ",".join(repr(v) for v in vs) for i, vs in rows)
    outcome = _same_as_pyserq(_write(tmp_path / "floats.csv", text))
    assert outcome[0] == "ok"
    corpus = read_trace(str(tmp_path / "floats.csv"))
    assert int(corpus.count.sum()) == len(rows) and all(c >= 1 for c in corpus.count.tolist())
    flat = [float(repr(v)) for _, vs in rows for v in (vs + [0.0])[:4]]
    assert [_bits(v) for v in corpus.turns.reshape(-1).tolist()] == [_bits(v) for v in flat]


# ---- the replay rule ---------------------------------------------------------------
def test_turn_of_rule(tmp_path):
    corpus = read_trace(_write(tmp_path / "t.csv", SPEC_CORPUS))
    assert turn_of(corpus, 0, 1) == {"new": 100, "out": 10, "think": 1.5, "forced": 0, "more": 1}
    assert turn_of(corpus, 0, 2) == {"new": 20, "out": 5, "think": 2, "forced": 1, "more": 0}
    assert turn_of(corpus, 0, 3) == {"more": 0} == turn_of(corpus, 0, 50)
    assert turn_of(corpus, 1, 1)["more"] == 0
    assert [turn_of(corpus, 2, t).get("new") for t in (1, 2, 3, 4)] == [1, 4, 7, None]
    with pytest.raises(ValueError):
        turn_of(corpus, 0, 0)


@needs_reference
def test_ev_trace_picks():
    # [EV-TRACE] / [EV-TRACE-ordered]: 5-session corpus, six sessions, seed 9
    corpus = read_trace(os.path.join(PROBES, "trace5.csv"))
    rng = pyserq.Rng(9 ^ TRACE_STREAM)
    drawn = [turn_of(corpus, pick_session(len(corpus), s, ordered=False, rng=rng), 1)["new"] for s in range(6)]
    assert drawn == [10, 20, 40, 40, 50, 20]
    ordered = [turn_of(corpus, pick_session(len(corpus), s, ordered=True), 1)["new"] for s in range(6)]
    assert ordered == [10, 20, 30, 40, 50, 10]


@needs_reference
def test_picks_on_sq_stream_equal_pyserq_stream():
    _random = pytest.importorskip("sq.engine._random")
    ours, ref = _random.Rng(2 ^ TRACE_STREAM), pyserq.Rng(2 ^ TRACE_STREAM)
    a = [pick_session(3, s, ordered=False, rng=ours) for s in range(200)]
    assert a == [pick_session(3, s, ordered=False, rng=ref) for s in range(200)]
    assert a[:8] == [1, 1, 2, 0, 0, 1, 1, 1]   # spec 02 §3.2, seed 2


def test_ev_trace_exhausted():
    # [EV-TRACE-exhausted]: new 10, 11, 11; more 1, 0, 0; out 1, 2, 2
    corpus = read_trace(os.path.join(PROBES, "trace2.csv"))
    attrs = dict.fromkeys(FIELDS + ("more",), 0.0)
    seen = []
    for t in (1, 2, 3):
        attrs.update(turn_of(corpus, 0, t))
        seen.append((attrs["new"], attrs["more"], attrs["out"]))
    assert seen == [(10, 1, 1), (11, 0, 2), (11, 0, 2)]


def _replay_expected(corpus: TraceCorpus, n: int, turns: int, ordered: bool, seed: int, bump: float):
    """What each (serial, turn_no) observes, replaying as the module docstring says."""
    rng = pyserq.Rng(seed ^ TRACE_STREAM)
    expected = {}
    for serial in range(n):
        session = pick_session(len(corpus), serial, ordered=ordered, rng=rng)
        attrs = dict.fromkeys(FIELDS + ("more",), 0.0)
        for t in range(1, turns + 1):
            attrs.update(turn_of(corpus, session, t))
            expected[serial, t] = dict(attrs)
            attrs["new"] += bump   # the program's `set new = new + bump` after its observes
    return expected


def _same_value(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@needs_reference
@pytest.mark.parametrize("case", range(12))
def test_replay_in_pyserq_follows_the_rule(tmp_path, case):
    rng = random.Random(case)
    path = _write(tmp_path / "t.csv", _random_file(rng, dirty=False) + "\n5,0,1,2,3\n")
    corpus = read_trace(path)
    n, turns, ordered, seed = rng.randint(1, 9), rng.randint(1, 5), case % 2 == 0, rng.randint(0, 2**64 - 1)
    bump = 0.0 if case % 3 else 100.0
    source = (f'stage d : delay;\nworkload {{ arrive batch({n}); trace "{path}"{" ordered" if ordered else ""}; }}\n'
              "session { loop { turn; observe n = new; observe o = out; observe t = think; observe f = forced; "
              f"observe m = more; set new = new + {bump}; run d (1); branch (turn_no >= {turns}) {{ end; }} }} }}")
    report = pyserq.run(pyserq.compile(source=source, seed=seed, horizon=turns + 5))
    expected = _replay_expected(corpus, n, turns, ordered, seed, bump)
    for name, attr in (("n", "new"), ("o", "out"), ("t", "think"), ("f", "forced"), ("m", "more")):
        obs = report.observes[name]
        got = {(s, t): v for s, t, v in zip(obs.sessions, obs.turns, obs.samples)}
        assert set(got) == set(expected)
        assert all(_same_value(got[k], expected[k][attr]) for k in got), name


@needs_reference
def test_resolve_path_names_what_pyserq_opens(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.makedirs("sub")
    program = "stage d : delay;\nworkload { arrive batch(1); trace \"t2.csv\"; }\nsession { turn; run d (1); }\n"
    _write("sub/p.serq", program)
    for file in ("sub/p.serq", str(tmp_path / "sub" / "p.serq")):
        with pytest.raises(ValueError) as ref:
            pyserq.run(pyserq.compile(file, horizon=10))
        assert str(ref.value) == f"cannot read trace {resolve_path('t2.csv', file)}: No such file or directory (os error 2)"
    with pytest.raises(ValueError) as ref:
        pyserq.run(pyserq.compile(source=program, horizon=10))
    assert str(ref.value) == f"cannot read trace {resolve_path('t2.csv')}: No such file or directory (os error 2)"
    _write("sub/t2.csv", "1,0,4,1,0\n")
    assert read_trace(resolve_path("t2.csv", "sub/p.serq")).sessions() == [[(4, 1, 0, 0)]]
    assert resolve_path("/abs/t.csv", "sub/p.serq") == "/abs/t.csv"
    assert resolve_path("t.csv", "p.serq") == "t.csv"


@needs_reference
@pytest.mark.slow
def test_many_generated_files_match_pyserq(tmp_path):
    rng = random.Random(7)
    path = str(tmp_path / "gen.csv")
    for _ in range(20000):
        _write(path, _random_file(rng, rng.random() < 0.5))
        _same_as_pyserq(path)

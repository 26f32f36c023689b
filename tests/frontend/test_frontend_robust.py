"""Issue 14, front end: divergences from pyserq 0.1.2 and API behaviour, checked
in-process against the reference (the crash and error cases are in test_hostile.py).
"""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

import sq
from tests.helpers.oracle import needs_reference, reference
from sq.errors import SqError

from tests.helpers import children

pyserq = reference()   # None without the reference: the tests that compare with it skip

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEAD = "run { horizon 10; }\nstage svc : ps(1);\nworkload { arrive poisson(1); }\n"


def _same_report(source: str, seed: int = 3, horizon: float = 100.0) -> None:
    theirs = pyserq.run(pyserq.compile(source=source, seed=seed, horizon=horizon)).json()
    ours = sq.run(sq.compile(source=source, seed=seed, horizon=horizon)).to_json()
    assert json.loads(ours) == json.loads(theirs)
    assert ours == theirs


# ---- item 4: `from P[i]` between queue-array members that own pools ----------------
PREFILL = """queue P[2] : prefill {
  pool kv { cap 1000; }
  serve fifo;
  prefill (prompt) { hold kv (prompt) { run (prompt / 100); mark first; } cache (0) lease kv (inf); }
}
"""
# the link each form runs the transfer on, and the transfer statement in D's `from` entry
LINKS = {
    "stage": ("stage link : ps(1);\n", "transfer (prompt / 100) from src to kv (prompt);"),
    "stage-array": ("stage link[2] : ps(1);\n", "transfer[self] (prompt / 100) from src to kv (prompt);"),
    "on-link-queue": ("queue L : link { serve ps(1); }\n", "transfer on L (prompt / 100) from src to kv (prompt);"),
    "on-link-queue-latency": ("queue L : link { serve ps(1); latency 0.25; }\n",
                              "transfer on L (prompt / 100) from src to kv (prompt);"),
    "on-link-queue-array": ("queue L[2] : link { serve ps(1); latency 0.5; }\n",
                            "transfer on L[self] (prompt / 100) from src to kv (prompt);"),
    "link-transfer-entry": ("queue L : link { serve ps(1); transfer (n) { run (n); } }\n",
                            "L.transfer (prompt / 100) from src to kv (prompt);"),
}
CALLS = {
    "gateway": ("queue gw : gateway {\n  route { choose i in 2 by (queued(P[i].kv), i); set j = 1 - i; "
                "P[i].prefill (prompt); D[j].decode (prompt) from P[i]; }\n}\n", "request gw;", True),
    "session": ("", "choose i in 2 by (queued(P[i].kv), i); P[i].prefill (prompt); "
                    "D[1 - i].decode (prompt) from P[i];", False),
    "literal-members": ("", "P[1].prefill (prompt); D[0].decode (prompt) from P[1];", False),
}


def _disaggregated(link: str, call: str) -> str:
    declare, transfer = LINKS[link]
    gateway, statement, in_workload = CALLS[call]
    decode = ("queue D[2] : decode {\n  pool kv { cap 1000; }\n  serve delay;\n"
              "  decode (prompt) { hold kv (prompt) { run (1); } }\n"
              f"  decode (prompt) from src {{ hold kv (prompt) {{ {transfer} run (2); }} }}\n}}\n")
    session = f"session {{ set t0 = now; {statement} observe done = now - t0; observe first = P.first - t0; }}"
    workload = "workload { arrive poisson(0.5); init { set prompt = 100 + floor(~uniform(0, 200)); }"
    tail = (f"{workload} {session} }}\n" if in_workload else f"{workload} }}\n{session}\n")
    return declare + PREFILL + decode + gateway + "run { horizon 100; }\n" + tail


@needs_reference
@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("link", LINKS)
def test_transfer_from_a_queue_array_member_runs_as_pyserq(link, call):
    _same_report(_disaggregated(link, call))


@needs_reference
def test_transfer_pulled_from_a_queue_array_member_runs_as_pyserq():
    source = PREFILL.replace("serve fifo;", "serve fifo;\n  nic ps(10);") + """
queue D[2] : decode {
  pool kv { cap 1000; }
  serve delay;
  nic ps(5);
  decode (prompt) { hold kv (prompt) { run (1); } }
  decode (prompt) from src { hold kv (prompt) { transfer (prompt / 100) from src to kv (prompt); run (2); } }
}
D pull P latency 0.5 share maxmin;
queue gw : gateway {
  route { choose i in 2 by (queued(P[i].kv), i); choose j in 2 by (queued(D[j].kv), j);
          P[i].prefill (prompt); D[j].decode (prompt) from P[i]; }
}
run { horizon 100; }
workload { arrive poisson(0.5); init { set prompt = 100; } session { request gw; observe done = now; } }
"""
    _same_report(source)


# ---- item 6: files read as pyserq reads them ----------------------------------------
BODY = "run { horizon 10; }\nstage svc : ps(1);\nworkload { arrive poisson(1); }\nsession { run svc (1);"


def _message_ours(path: pathlib.Path) -> str:
    try:
        sq.compile(path)
    except SqError as e:
        # sq prefixes the file and `error:`; 0.1.2 neither (`link error:` for link errors)
        return e.render().replace(f"{path}:", "", 1).replace("error: ", "", 1)
    return "ok"


def _message_theirs(path: pathlib.Path) -> str:
    try:
        pyserq.compile(path=str(path))
    except ValueError as e:
        return str(e).replace("link error: ", "", 1)
    return "ok"


FILES = {
    # a lone CR is no line end: the comment runs on and hides `observe y = zz`
    "lone-cr-in-comment": BODY + " observe x = 1; // note\r observe y = zz;\n}\n",
    "lone-cr-lines": "let a = 1;\r" + BODY + "\r observe x = zz;\r}\n",
    "crlf": "let a = 1;\r\n" + BODY.replace("\n", "\r\n") + "\r\n observe x = zz;\r\n}\r\n",
    "form-feed-and-u2028": "let a = 1;\f\nlet b = 2;\u2028 let c = 3;\n" + BODY + "\n observe x = zz;\n}\n",
    "vertical-tab-nel": "let a = 1;\x0b\x1c\x85let b = 2;\n" + BODY + "\n observe x = zz;\n}\n",
}


@needs_reference
@pytest.mark.parametrize("name", FILES)
def test_file_lines_and_carets_as_pyserq(tmp_path, name):
    path = tmp_path / "p.sq"
    path.write_bytes(FILES[name].encode("utf-8"))
    assert _message_ours(path) == _message_theirs(path)


def test_a_file_is_the_same_program_as_its_text(tmp_path):
    text = FILES["lone-cr-in-comment"]
    path = tmp_path / "p.sq"
    path.write_bytes(text.encode("utf-8"))
    assert sq.compile(path).to_json() == sq.compile(source=text).to_json()
    assert _message_ours(path) == "ok"


# ---- item 9: the nesting limit ---------------------------------------------------------
def test_nesting_limit_is_a_clean_error():
    from sq.frontend.parser import MAX_NESTING

    source = HEAD + "session { observe x = " + "-" * (MAX_NESTING + 10) + "1; }\n"
    with pytest.raises(SqError, match=f"nests deeper than {MAX_NESTING} levels"):
        sq.compile(source=source)


def test_deep_set_override_is_read():
    deep = "(" * 2000 + "2" + ")" * 2000
    prog = sq.compile(source="let lam = 1;\n" + HEAD.replace("poisson(1)", "poisson(lam)"), sets={"lam": deep})
    assert prog.to_dict()["arrival"] == {"Poisson": 2.0}


# ---- item 10: the IR reads back to the program it came from -----------------------------
INF = """run { horizon 10; }
pool kv { cap 100; block inf; }
stage svc : ps(1);
workload { arrive RATE; }
session { hold kv (1) { run svc (1); } observe x = 1; }
"""


@needs_reference
def test_block_inf_round_trips_and_runs_the_same():
    prog = sq.compile(source=INF.replace("RATE", "poisson(1)"))
    text = prog.to_json()
    assert json.loads(text)["pools"][0]["block"] == "inf"
    again = sq.load(text)
    assert again.to_json() == text
    assert sq.run(again).to_json() == sq.run(prog).to_json()
    assert json.loads(sq.run(again).to_json())["ended"] == 0    # a block-inf pool admits nothing
    # 0.1.2's own IR writes null there (no block): its program runs as pyserq's
    theirs = sq.load(pyserq.compile(source=INF.replace("RATE", "poisson(1)")).to_json())
    assert theirs.to_dict()["pools"][0]["block"] is None


@needs_reference
def test_poisson_inf_round_trips():
    source = INF.replace("RATE", "poisson(inf)").replace(" block inf;", "")
    prog = sq.compile(source=source)
    assert json.loads(prog.to_json())["arrival"] == {"Poisson": "inf"}
    assert sq.load(prog.to_json()).to_json() == prog.to_json()
    # what 0.1.2 writes (null), sq reads as the infinite rate it came from
    assert sq.load(pyserq.compile(source=source).to_json()).to_json() == prog.to_json()


def test_cli_ir_reads_back(tmp_path):
    path = tmp_path / "p.sq"
    path.write_text(INF.replace("RATE", "poisson(inf)"))
    out = subprocess.run([children.PYTHON, "-m", "sq", "ir", str(path)], capture_output=True, text=True,
                         cwd=ROOT, env=children.env(), timeout=60)
    assert out.returncode == 0, out.stderr
    assert sq.load(out.stdout).to_json() == sq.compile(path).to_json()


# ---- item 14: what the near-linear front end must not change -----------------------------
@needs_reference
def test_def_using_a_later_def_is_refused_as_pyserq():
    source = HEAD + "def f(x) = x + 1;\ndef g(x) = h(x) * 2;\ndef k(x) = x;\ndef h(x) = x;\n" \
                    "session { run svc (g(1)); }\n"
    with pytest.raises(ValueError) as theirs:
        pyserq.compile(source=source)
    with pytest.raises(SqError) as ours:
        sq.compile(source=source)
    assert ours.value.message in str(theirs.value)
    assert "`g` uses `h`" in ours.value.message


def test_size_through_a_chain_of_lets_is_still_a_size():
    """A let keeps only the lets it names; an array size still depends on the whole chain."""
    from sq.frontend import parser

    source = "let a = 2;\nlet b = a + 0;\nlet unrelated = 5;\nlet c = b * 1;\nstage s[c] : ps(1);\n" + \
             "run { horizon 10; }\nworkload { arrive poisson(1); }\nsession { run s[0] (1); }\n"
    assert parser.parse(source).size_lets == frozenset({"a", "b", "c"})


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["lets", "defs"])
def test_100k_lines_compile_in_linear_time(shape):
    """Not a timing test: quadratic code took over 10 minutes here (a hang); linear takes seconds."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_frontend_scale as bench

    done = subprocess.run([children.PYTHON, "-c", "import sys, sq; sq.compile(source=sys.stdin.read())"],
                          input=getattr(bench, shape)(100_000), capture_output=True, text=True, cwd=ROOT,
                          env=children.env(), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


# ---- item 16: the API takes what users pass ----------------------------------------------
def test_load_takes_paths_text_and_bytes(tmp_path):
    prog = sq.compile(ROOT / "examples" / "single-turn" / "ps.sq")     # a pathlib.Path
    text = prog.to_json()
    path = tmp_path / "ir.json"
    path.write_text(text)
    for given in (path, str(path), text, text.encode(), "  \n" + text):
        assert sq.load(given).to_json() == text


def test_compile_takes_source_bytes_and_bytes_paths():
    path = ROOT / "examples" / "single-turn" / "ps.sq"
    expected = sq.compile(str(path)).to_json()
    assert sq.compile(source=path.read_bytes()).to_json() == expected
    assert sq.compile(bytes(path)).to_json() == expected


@pytest.mark.parametrize("call", [
    lambda: sq.load("[]"), lambda: sq.load(123), lambda: sq.load(b"\xff"), lambda: sq.load(""),
    lambda: sq.compile(123), lambda: sq.compile(source=5), lambda: sq.compile(source=b"\xff"),
    lambda: sq.run(123), lambda: sq.run("examples/single-turn/ps.sq"),
], ids=["load-list", "load-int", "load-bad-utf8", "load-empty", "compile-int", "compile-source-int",
        "compile-source-bad-utf8", "run-int", "run-path"])
def test_bad_api_input_is_sqerror(call):
    with pytest.raises(SqError):
        call()


# ---- item 4: the `from` parameter in an index is the source member ------------------------
SOURCE_BASE = """stage link : ps(1);
stage link2[2] : ps(1);
queue P[2] : prefill {
  pool kv { cap 1000; block 16; }
  serve fifo;
  prefill (prompt) { hold kv (prompt) { run (prompt / 100); } cache (0) lease kv (inf); }
}
queue D[2] : decode {
  pool kv { cap 1000; block 16; }
  serve delay;
  decode (prompt) { hold kv (prompt) { run (1); } }
  decode (prompt) from src { HOLD { XFER run (2); } }
}
queue gw : gateway {
  route { choose i in 2 by (queued(P[i].kv), i); set j = 1 - i; P[i].prefill (prompt); D[j].decode (prompt) from P[i]; }
}
run { horizon 100; }
workload { arrive poisson(0.5); init { set prompt = 100 + floor(~uniform(0, 100)); }
           session { request gw; observe done = now; } }
"""
PLAIN_HOLD = "hold kv (prompt)"
PLAIN_XFER = "transfer (prompt / 100) from src to kv (prompt);"
SOURCE_FORMS = {
    "transfer-on-member": (PLAIN_HOLD, "transfer on link2[src] (prompt / 100) from src to kv (prompt);"),
    # `transfer[i]` indexes the stage array named `link`
    "transfer-index": (PLAIN_HOLD, "transfer[src] (prompt / 100) from src to kv (prompt);", "stage link[2] : ps(1);"),
    "index-arithmetic": (PLAIN_HOLD, "transfer on link2[1 - src] (prompt / 100) from src to kv (prompt);"),
    "run-on-member": (PLAIN_HOLD, PLAIN_XFER + " run link2[src] (1);"),
    "pool-functions": (PLAIN_HOLD, "transfer (prompt / 100 + used(src) * 0) from src to kv "
                                   "(prompt + blocksize(src) * 0 + cachedin(src) * 0);"),
    "in-the-header": ("hold kv (prompt + queued(src) * 0 + holders(src) * 0)", PLAIN_XFER),
    "observed": (PLAIN_HOLD, PLAIN_XFER + " observe u = used(src);"),
}


def _source_form(hold: str, xfer: str, link: str = "stage link : ps(1);") -> str:
    return SOURCE_BASE.replace("stage link : ps(1);", link).replace("HOLD", hold).replace("XFER", xfer)


def _same_error(source: str) -> SqError:
    """Both refuse `source` with the same message at the same place; sq's error."""
    with pytest.raises(ValueError) as theirs:
        pyserq.compile(source=source)
    with pytest.raises(SqError) as ours:
        sq.compile(source=source)
    assert ours.value.message in str(theirs.value)
    assert (ours.value.line, ours.value.col) == tuple(int(x) for x in str(theirs.value).split(":")[:2])
    return ours.value


@needs_reference
@pytest.mark.parametrize("form", SOURCE_FORMS)
def test_from_parameter_in_an_index_or_a_pool_function_runs_as_pyserq(form):
    _same_report(_source_form(*SOURCE_FORMS[form]))


@pytest.mark.parametrize("hold, xfer", [
    (PLAIN_HOLD, PLAIN_XFER + " observe n = src;"),
    (PLAIN_HOLD, PLAIN_XFER + " run (2 + src);"),
], ids=["observe", "run-work"])
@needs_reference
def test_from_parameter_read_as_a_number_is_refused_as_pyserq(hold, xfer):
    err = _same_error(_source_form(hold, xfer))
    assert "reads `src` as a number: `src` is the source pool" in err.message


@needs_reference
def test_from_parameter_as_an_index_of_a_single_queue_is_refused_as_pyserq():
    source = _source_form(PLAIN_HOLD, "transfer on link2[src] (prompt / 100) from src to kv (prompt);")
    source = source.replace("queue P[2]", "queue P").replace(
        "choose i in 2 by (queued(P[i].kv), i); set j = 1 - i; P[i].prefill (prompt); D[j].decode (prompt) from P[i];",
        "set j = 1; P.prefill (prompt); D[j].decode (prompt) from P;")
    err = _same_error(source)
    assert "`src` as an index: its source `P.kv` is no family's member" in err.message


@needs_reference
def test_blocksize_of_a_queue_members_pool():
    """`blocksize(P[i].kv)` in a route read the family `P`, not `P.kv` (an internal KeyError)."""
    base = _source_form(PLAIN_HOLD, PLAIN_XFER).replace("set j = 1 - i;", "set j = 1 - i; observe b = blocksize(P[i].kv);")
    _same_report(base)
    no_block = base.replace("pool kv { cap 1000; block 16; }\n  serve fifo;", "pool kv { cap 1000; }\n  serve fifo;")
    with pytest.raises(ValueError) as theirs:
        pyserq.compile(source=no_block)
    with pytest.raises(SqError) as ours:
        sq.compile(source=no_block)
    assert ours.value.message == "`blocksize(P.kv)`: pool `P.kv` has no `block`"
    assert ours.value.message in str(theirs.value)

"""sq's rejections read like 0.1.2's: the same message, place, underline and notes.

Each case is a small program (or override) where the two once parted ways:
the position and wording of a fault, which of several faults is reported
first, and the `did you mean` hint under an unknown name. The reference is
asked live, so a case states only the program, never the expected text.
"""
from __future__ import annotations

import re

import pytest

from sq.frontend.compile import compile_program
from sq.errors import SqError
from sq.frontend.link import closest_name

RUN = "run { horizon 100; } workload { arrive batch(1); } "
QUEUE_P = "queue P : prefill { pool kv { } serve fifo; prefill (n) { %s } } "
FROM_QUEUES = ("queue L : prefill { pool kv {} serve fifo; prefill (n) { hold kv (1) {} lease kv (1); run (n); } } "
               "queue D : decode { pool kv {} serve fifo; decode (n) { run (n); } "
               "decode (n) from s { hold s (1) { run (n); } } } "
               "queue E : decode { pool kv {} serve fifo; decode (n) { run (n); } } ")
QUEUE_Q = "queue Q[2] : prefill { serve delay; prefill (n) { run (n); mark x; } } "


def _sq_text(source: str, **overrides) -> str | None:
    try:
        compile_program(source=source, **overrides)
    except SqError as e:
        return str(e)
    return None


def _reference_text(source: str, **overrides) -> str | None:
    pyserq = pytest.importorskip("pyserq")
    try:
        pyserq.compile(source=source, **overrides)
    except BaseException as e:  # noqa: BLE001  (pyo3 panics derive from BaseException)
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        return str(e)
    return None


def _plain(text: str | None) -> str | None:
    """A rendered rejection without the parts each tool spells its own way: sq
    names the file (`<source>:`) and says `error:`, 0.1.2 says `link error:`
    for the linker's faults and nothing for the parser's."""
    if text is None:
        return None
    lines = text.split("\n")
    head = re.sub(r"^<source>:", "", lines[0])
    head = re.sub(r"^((?:\d+:\d+: )?)(?:link error: |error: )", r"\1", head)
    return "\n".join([head, *lines[1:]])


def assert_same_rejection(source: str, **overrides) -> None:
    ref = _reference_text(source, **overrides)
    mine = _sq_text(source, **overrides)
    assert ref is not None, "the case must be one the reference rejects"
    assert _plain(mine) == _plain(ref)


# ------------------------------------------------------------------ places and words

PLACES = {
    "def use cut off by the end": "def f(x) = x; " + RUN + "session { observe a = f((1",
    "def use cut off, second argument": "def f(x, y) = x; " + RUN + "session { observe a = f(1, (2",
    "aggregate count Minus": RUN + "session { observe a = sum k in -1 (k); }",
    "aggregate count spaced Minus": RUN + "session { observe a = sum k in - 1.5e3 (k); }",
    "aggregate count string": RUN + 'session { observe a = max j in "x" foo; }',
    "aggregate count at the end": RUN + "session { observe a = min j in",
    "huge aggregate count": RUN + "session { observe a = sum k in 123456789012345678901 (k); }",
    "huge aggregate total": RUN + "session { observe a = sum k in 3000 (k) + sum j in 1e20 (j); }",
    "member attribute, bare": QUEUE_Q + RUN + "session { Q[0].prefill (1); observe a = Q[0].x; }",
    "member attribute, other names": QUEUE_Q + RUN + "session { Q[0].prefill (1); observe a = 1 + R[1].y; }",
    "member attribute, spaced dot": QUEUE_Q + RUN + "session { Q[0].prefill (1); branch (Q[0] . x) { } }",
    "member attribute of no queue": QUEUE_Q + RUN + "session { Q[0].prefill (1); observe a = min(kvv[0].y, 2); }",
    "unknown entry with from": "queue P : prefill { serve fifo; prefill (n) { run (n); } o (x) from s { run (x); } } "
                               + RUN + "session { P.prefill (1); }",
    "role entry with from": "queue P : prefill, gateway { serve fifo; prefill (n) { run (n); } route () {} "
                            "route () from s { } } " + RUN + "session { P.prefill (1); }",
    "from entry before the plain one": "queue P : prefill { serve fifo; prefill (n) { run (n); } o (n) from s { } "
                                       "o (n) { } } " + RUN + "session { P.prefill (1); }",
    "entry reads its pool's name": QUEUE_P % "run (kv);" + RUN + "session { P.prefill (1); }",
    "entry aggregates its pool's name": QUEUE_P % "run (sum k in 2 (kv));" + RUN + "session { P.prefill (1); }",
    "entry header reads its pool's name": QUEUE_P % "hold kv (kv) { } run (1);" + RUN + "session { P.prefill (1); }",
    "entry header hands a stranger to a function": QUEUE_P % "hold kv (min(zz, 1)) { } run (1);" + RUN
                                                   + "session { set zz = 1; P.prefill (1); }",
    "entry hands its pool to min": QUEUE_P % "run (min(kv, 1));" + RUN + "session { P.prefill (1); }",
    "entry hands its stage to used": QUEUE_P % "run (used(P));" + RUN + "session { P.prefill (1); }",
    "entry reads a retired context name": QUEUE_P % "run (ntok);" + RUN + "session { P.prefill (1); }",
    "uncalled entry of a gateway": "queue gw : gateway, prefill { serve delay; route () { } prefill (m) { run (n); } } "
                                   "run { horizon 10; } workload { arrive batch(1); session { request gw; } }",
    "call of an undeclared queue": QUEUE_Q + RUN + "session { Qabd[0].prefill (1); }",
    "call indexes a single queue": QUEUE_P % "run (n);" + RUN + "session { P[0].prefill (1); }",
    "call with an argument too many": QUEUE_P % "run (n);" + RUN + "session { P.prefill (1, 2); }",
    "call of an entry the queue lacks": QUEUE_P % "run (n);" + RUN + "session { P.decode (1); }",
    "from an undeclared queue the entry takes": FROM_QUEUES + RUN
                                               + "session { L.prefill (1); D.decode (1) from Labc[0]; }",
    "from a queue that leases nothing": FROM_QUEUES + RUN + "session { L.prefill (1); D.decode (1) from E; }",
    "dotted name when a queue exists": QUEUE_Q + RUN + "session { Q[0].prefill (1); set ab = 1; observe a = ab.c; }",
    "unterminated string, trailing lines": 'x "abc\n\n\n',
    "unterminated string after a multi-line one": 'x "a\nbc" \n"',
    "a fault after a multi-line string": 'x "a\nb" \n  "c\nd" e $',
    "bad number after a multi-line string": 'x "a\nb"\n 1.2.3',
}


def test_from_an_undeclared_queue_is_no_fault_when_unused():
    """0.1.2 looks `S` of `from S` up only where the entry takes from it."""
    unused = FROM_QUEUES.replace("hold s (1) { run (n); }", "run (n);")
    source = unused + RUN + "session { L.prefill (1); D.decode (1) from Labc; }"
    assert _reference_text(source) is None
    compile_program(source=source)


@pytest.mark.parametrize("source", list(PLACES.values()), ids=list(PLACES))
def test_rejection_reads_like_the_reference(source):
    assert_same_rejection(source)


# ------------------------------------------------------------------ which fault wins

HOLD = "pool kv {} " + RUN + "session { hold kv (1) at admission "
FIRST_FAULT = {
    "draw beats a read of a later binding": HOLD + "(a = b, b = ~exp(1)) { } }",
    "bound twice beats a read of a later binding": HOLD + "(a = b, b = 1, b = 2) { } }",
    "bound twice beats a bad body": HOLD + "(a = 1, a = 2) { set = ; } }",
    "later binding beats a bad body": HOLD + "(a = b, b = 2) { set = ; } }",
    "draw beats a second session": HOLD + "(a = ~exp(1)) { } } session { }",
    "draw beats an unknown stage above it": HOLD.replace("hold", "run zz (1); hold") + "(a = ~exp(1)) { } }",
    "draw beats a missing parenthesis": HOLD + "(a = ~exp(1) { } }",
    "later binding beats a missing parenthesis": HOLD + "(a = b, b = 1 1) { } }",
    "bound twice beats a missing value": HOLD + "(a = 1, a = ) { } }",
}


@pytest.mark.parametrize("source", list(FIRST_FAULT.values()), ids=list(FIRST_FAULT))
def test_the_same_fault_is_reported_first(source):
    assert_same_rejection(source)


# ------------------------------------------------------------------ did you mean

UNKNOWN = {
    "stage, one edit": "stage server : fifo; " + RUN + "session { run servr (1); }",
    "stage, a swap is two edits": "stage server : fifo; " + RUN + "session { run sever (1); }",
    "stage, too far": "stage server : fifo; " + RUN + "session { run srv (1); }",
    "stage, short name one edit at most": "stage bac : fifo; " + RUN + "session { run abc (1); }",
    "stage, two equally near": "stage abcx : fifo; stage abcy : fifo; " + RUN + "session { run abcz (1); }",
    "stage, the nearer of two": "stage abxx : fifo; stage abcy : fifo; " + RUN + "session { run abcz (1); }",
    "stage family": "stage s[2] : fifo; stage abcd[3] : fifo; " + RUN + "session { run abce[1] (1); }",
    "stage in a function": "stage server : fifo; " + RUN + "session { observe a = queue(servr); }",
    "stage of a pool's name": "pool abcd {} stage abcx : fifo; " + RUN + "session { run abcd (1); }",
    "pool": "pool kv {} stage server : fifo; " + RUN + "session { hold kb (1) { } }",
    "pool in a function": "pool kv {} " + RUN + "session { observe a = used(kb); }",
    "queue pool": "queue srv : prefill { pool kv {} serve fifo; prefill (n) { run (n); } } " + RUN
                  + "session { observe a = used(srv.kb); }",
    "spill target": "pool kv { spill to kb via s when 1 amount 1; } pool k2 {} stage s : delay; " + RUN
                    + "session { hold kv (1) { } }",
    "admit via": "stage server : fifo; stage s2 : fifo admit via servr; " + RUN + "session { run server (1); }",
    "constant": "let alpha = 1;\n  let beta = 2; " + RUN + "session { observe a = bta; }",
    "constant, two edits": "let alpha = 1; " + RUN + "session { observe a = alpxy; }",
    "attribute": RUN + "session { set abcd = 1; observe a = abxd; }",
    "constant and attribute equally near": "let abc = 1; " + RUN + "session { set abd = 1; observe a = abx; }",
    "binding": "pool kv {} " + RUN + "session { hold kv (1) at admission (abcd = 1) { observe a = abce; } }",
    "dotted attribute": RUN + "session { set ab.c = 1; observe a = ab.d; }",
    "context name is no candidate": RUN + "session { observe a = nwo; }",
}


@pytest.mark.parametrize("source", list(UNKNOWN.values()), ids=list(UNKNOWN))
def test_unknown_names_get_the_same_hint(source):
    assert_same_rejection(source)


@pytest.mark.parametrize("name, candidates, expected", [
    ("servr", ["server"], "server"),          # one deletion
    ("a", ["b"], "b"),                        # a one-letter name still allows one edit
    ("xy", ["ab"], None),                     # two edits in a name of two
    ("abx", ["abcd"], None),                  # up to three letters: one edit only
    ("abxy", ["abc"], "abc"),                 # four letters and more: two
    ("abcxyz", ["abc"], None),                # three edits are never enough
    ("ba", ["ab"], None),                     # a swap counts as two edits
    ("abcz", ["abcx", "abcy"], None),         # a tie suggests nothing
    ("abcz", ["abxx", "abcy"], "abcy"),       # the nearest wins over one within reach
    ("server", ["SERVER"], None),             # case matters
])
def test_closest_name_rule(name, candidates, expected):
    assert closest_name(name, candidates) == expected


def test_unknown_stage_is_underlined_whole_with_a_hint():
    text = _sq_text("stage server : fifo;\n" + RUN + "session { run servr (1); }")
    lines = text.split("\n")
    assert lines[2].endswith(" " + "^" * len("servr"))
    assert lines[3:] == ["help: did you mean stage `server`?", "note: `server` declared at 1:7"]


# ------------------------------------------------------------------ overrides

SETS_PROGRAM = "let lam = 1;\nstage d : delay; " + RUN.replace("batch(1)", "poisson(lam)") + "session { run d (1); }"


@pytest.mark.parametrize("value", ["x", "foo(1)", "now", "~exp(1)", "sum k in 1e20 (k)", "sum k in 0 (k)",
                                   "used(kv)", "inf - inf"])
def test_a_bad_set_is_not_placed_in_the_program(value):
    with pytest.raises(SqError) as info:
        compile_program(source=SETS_PROGRAM, sets={"lam": value})
    assert info.value.span is None
    assert info.value.message.startswith("--set lam: ")
    assert_same_rejection(SETS_PROGRAM, sets={"lam": value})


def test_def_override_fills_an_empty_body():
    source = "def rate() = ;\nstage d : delay; " + RUN.replace("batch(1)", "poisson(rate())") + \
             "session { run d (1); }"
    program = compile_program(source=source, defs={"rate": "0.5"})
    assert program.to_dict()["arrival"] is not None
    assert_same_rejection(source)                    # without the override the body is still empty
    assert_same_rejection(source, defs={"rate": ""})


@pytest.mark.parametrize("body", ["run (queue(P));", "run (used(kv));", "hold kv (used(kv)) { } run (1);"])
def test_an_entry_hands_its_own_stage_and_pool_to_functions(body):
    """In a family, `P` and `kv` given to a function are the calling member's."""
    import json

    pyserq = pytest.importorskip("pyserq")
    from tests.helpers.oracle import normalise_ir

    source = ("queue P[2] : prefill { pool kv { } serve fifo; prefill (n) { %s } } " % body) + RUN + \
        "session { P[1].prefill (1); }"
    ref = normalise_ir(json.loads(pyserq.compile(source=source).to_json()))
    assert normalise_ir(compile_program(source=source).to_dict()) == ref


# ------------------------------------------------------------------ pool, serve and nic in a queue

GATEWAY = "run { horizon 10; }\nworkload { arrive batch(1); session { request; } }\nserver { }\n" \
          "queue g : gateway { %s }"


@pytest.mark.parametrize("body", [
    "serve delay; pool (n) { }",                 # a pool below the serve, whatever follows it
    "serve delay; nic (n) { }",                  # `(` is no stage kind
    "serve (n) { }",
    "serve delay; serve (n) { }",                # a second serve, not an entry named `serve`
    "route () { } serve (n) { }",
    "serve delay; route () { } pool (n) { }",
    "serve delay; route () { } nic (n) { }",
    "nic (n) { } serve delay;",
    "pool (n) { } serve delay; route () { }",    # a pool needs its name
])
def test_pool_serve_and_nic_start_a_queue_item_even_before_a_paren(body):
    """0.1.2 reads these words as a pool, serve or nic item, never as an entry verb."""
    assert_same_rejection(GATEWAY % body)


LINK = "run { horizon 10; }\nworkload { arrive batch(1); session { request; } }\nserver { }\n%s"


@pytest.mark.parametrize("source", [
    "queue L : link { serve delay; latency x 1; }",            # the wait is checked before its `;`
    "queue L : link { serve delay latency x }",
    "queue L : link { serve step { cost 1; } latency x 1; }",
    "queue L : link { serve delay; latency a; } let a = 1;",   # only the `let`s above count
    "let a = now; queue L : link { serve delay; latency a; } stage ;",
    "let a = 1; queue L : link { serve delay; latency sum k in 3 (k * a); }",
    "queue L : link { serve delay; latency 0 && x; }",         # both sides of `&&` must fold
    "let a = 1; queue L : link { serve delay; latency 1 > 0 ? a : x; } stage ;",
    "let a = 1; queue L : link { serve delay; latency a 1; }",
])
def test_a_link_latency_is_folded_where_it_is_read(source):
    assert_same_rejection(LINK % source)


@pytest.mark.parametrize("entries", [
    "decode (o) { } decode { }",                   # a twin before a wrong parameter count
    "decode (o) { } decode (a, b) { }",
    "decode (o) { } decode ;",
    "decode (o) { } decode (o) }",                 # and before the block
    "decode (o) from s { } decode from s { }",
    "decode (o) { } decode (o) from s (",          # a `from` entry is no twin of the plain one
])
def test_an_entry_twin_is_found_once_its_parameters_are_read(entries):
    assert_same_rejection(LINK % ("queue D : decode { pool kv { } serve delay; %s }" % entries))


@pytest.mark.parametrize("queue", [
    "queue P : prefill { serve fifo; prefill (n) { hold session (n) { } } bar ( }",   # before the later fault
    "queue P : prefill { pool kv { } serve fifo; prefill (n) { hold kv (n) { } lease foo (1); } } stage ;",
    "queue P : prefill { pool kv { } serve fifo; prefill (n) { hold kv (n), foo (1) { } } } stage ;",
    "queue P : prefill { pool kv { } serve fifo; prefill (n) { run (x); hold foo (n) { } } } stage ;",
    "queue P : prefill { pool kv { } serve fifo; prefill (n) { hold kv (n) { } lease kv (1); "
    "decode n growing foo; } } stage ;",                                                 # `growing` allocates
    "queue P : prefill { pool kv { } serve fifo; prefill (n) { transfer (1) from kv to foo (1); } } stage ;",
    "queue P : decode { pool kv { } serve fifo; decode (n) { } decode (n) from s { hold foo (1) { } } } stage ;",
    "queue P : decode { pool kv { } serve fifo; decode (n) { } "
    "decode (n) from s { transfer (1) from s to foo (1); } } stage ;",
])
def test_an_entry_allocates_only_its_queues_pools_checked_where_it_ends(queue):
    assert_same_rejection(LINK % ("stage decode : delay; stage transfer : delay;\n" + queue))


PREFILL = "queue P : prefill { pool kv { } serve fifo; prefill (n) { %s } } "


@pytest.mark.parametrize("body, after", [
    ("hold kv (x) { }", "stage ;"),                          # before a later syntax fault
    ("hold kv (1) reserve (x) { }", "stage ;"),
    ("hold kv (1) reuse (x) { }", "stage ;"),
    ("hold kv (a) { }", "let a = 1; stage ;"),               # a `let` below is not yet known
    ("hold kv (now) { }", "stage ;"),
    ("hold kv (used(foo)) { }", "stage ;"),
    ("hold kv (free(Q.kv)) { }", "stage ;"),
    ("hold kv (Q.x) { }", "stage ;"),
    ("hold kv (~exp(x)) { }", "stage ;"),                    # a draw's argument is a number
    ("hold kv (x) { } hold foo (1) { }", "stage ;"),         # every pool is checked before any header
    ("hold kv (b) at admission (b = m) { run (1); }", ""),   # a binding read in the header stands for its value
    ("hold kv (b) at admission (b = used(foo)) { run (1); }", ""),
])
def test_a_hold_header_is_checked_where_the_entry_ends(body, after):
    assert_same_rejection(LINK % (PREFILL % body + after))


@pytest.mark.parametrize("body", ["hold kv (1) at admission (u = x) { run (n); }",
                                  "hold kv (1) at admission (u = x) { }"])
def test_a_binding_never_read_is_never_checked(body):
    """0.1.2 writes a binding in where it is read; one nobody reads may read anything."""
    pyserq = pytest.importorskip("pyserq")
    import json
    from tests.helpers.oracle import normalise_ir

    source = "run { horizon 10; } workload { arrive batch(1); } " + PREFILL % body + "session { P.prefill (1); }"
    ref = normalise_ir(json.loads(pyserq.compile(source=source).to_json()))
    assert normalise_ir(compile_program(source=source).to_dict()) == ref


PULL_P = "queue P : prefill { pool kv { } serve fifo; nic ps(1); prefill (n) { hold kv (1) { run (n); } lease kv (1); } }\n"
PULL_D = ("queue D : decode { pool kv { } serve delay; nic ps(1); decode (o) { run (o); } "
          "decode (o) from src { hold kv (5) { %s run (o); } } }\n")
PULL_G = "queue G : gateway { serve delay; route () { P.prefill (1); D.decode (1) from P; } }\n"
PULL_RUN = "run { horizon 10; }\nworkload { arrive batch(1); session { request G; } }\n"


@pytest.mark.parametrize("transfer, tail", [
    ("transfer x;", "D pull P share maxmin;"),       # no `(` after `transfer`: no stage, at once
    ("transfer;", "stage ;"),
    ("transfer from L (1) from src to kv (5);", "D pull P share maxmin;"),
    ("transfer [0] (1) from src to kv (5);", "stage ;"),
    ("transfer (1) from src to kv (5);", ""),        # called with no pull: refused at the call
    ("transfer (1) from src to kv (5);", "stage link : delay;"),
])
def test_a_from_entrys_transfer_waits_for_a_pull_only_before_a_paren(transfer, tail):
    assert_same_rejection(PULL_RUN + PULL_P + PULL_D % transfer + PULL_G + tail)


def test_a_from_entry_never_called_needs_no_pull():
    source = "run { horizon 10; }\nworkload { arrive batch(1); session { request; } }\nserver { }\n" + \
        PULL_P + PULL_D % "transfer (1) from src to kv (5);"
    assert _reference_text(source) is None
    assert _sq_text(source) is None


PULL_DN = "queue Dn : decode { pool kv { } serve delay; decode (o) { run (o); } }\n"
PULL_DEC = "queue Dec : decode { pool kv { } serve delay; nic ps(1); decode (o) { run (o); } }\n"


@pytest.mark.parametrize("queues, relation", [
    (PULL_DEC, "Dec pull Pre share maxmin;"),                   # placed at the name it faults
    (PULL_P + PULL_DN, "P pull Dn;"),
    (PULL_P + PULL_DN, "Dn pull Q latency x;"),                 # the reader is checked first
    (PULL_DEC, "Dec pull Dec latency xyz + 1 share maxmin;"),   # and a self-pull before the latency
    (PULL_DEC, "Dec pull Dec share maxmin; stage ;"),
    (PULL_P + PULL_DEC, "Dec pull P latency x;"),               # the latency before the `share`
    (PULL_P + PULL_DEC, "Dec pull P latency x 1 share maxmin;"),
    (PULL_P + PULL_DEC, "Dec pull P latency 0 && x share maxmin; stage ;"),
    (PULL_P + PULL_DEC, "Dec pull P latency a share maxmin; let a = 1;"),
    (PULL_P + PULL_DEC, "Dec pull P share maxmin; Dec pull P latency x;"),
])
def test_a_pull_relation_is_checked_as_it_is_read(queues, relation):
    assert_same_rejection(LINK % (queues + relation))


@pytest.mark.parametrize("transfer", ["transfer on L (1) from delay to kv (5);",
                                      "transfer on L (1) from aa to bb (5);"])
def test_a_transfers_from_pool_is_the_entrys_too(transfer):
    queue = ("stage L : delay;\nqueue D : decode { pool kv { } serve delay; decode (o) { run (o); } "
             "decode (o) from src { hold kv (5) { %s run (o); } } } stage ;" % transfer)
    assert_same_rejection(LINK % queue)


@pytest.mark.parametrize("pools", ["pool kv { spill pulls via wire (1) when (1); }",
                                   "pool tier { } pool kv { spill tier via wire2 (1) when (1); }"])
def test_an_unknown_spill_name_is_underlined_where_it_is_written(pools):
    assert_same_rejection(LINK % ("stage wire : delay;\n" + pools))


@pytest.mark.parametrize("nic", [
    "queue M : link { nic step { cost 0.5; } latency serve ps(2); }",    # a NIC has no fixed wait
    "queue M : link { serve ps(1); nic step { cost 1; } latency; }",
    "queue M : link { serve ps(1); nic step { cost 1; } latency (n) { } }",
    "queue M : link { serve ps(1); nic step { cost 1; }; latency 1; }",  # after its `;`, an entry
])
def test_latency_after_a_step_nic(nic):
    assert_same_rejection(LINK % nic)


MEMBERS = "run { horizon 10; }\nworkload { arrive batch(1); }\n" \
          "queue P[2] : prefill { pool kv { } nic ps(1); serve delay; prefill (n) { run (n); mark m; } }\n"


@pytest.mark.parametrize("expr", [
    "queued(P[0].kvx)",         # a field that is no pool: refused where the field is read
    "f(P[0].kvx)",              # before the unknown function
    "queued(P[0].nic)",
    "max(P[0].kv, 1)",          # a member's pool read as a number: an unknown name
    "max(P[0].m, 1)",
    "~exp(P[0].x)",             # a draw's arguments are expressions
    "~uniform(P[0].kv, 2)",
])
def test_a_members_field_in_a_call(expr):
    assert_same_rejection(MEMBERS + "session { observe a = %s; }" % expr)


@pytest.mark.parametrize("pool", ["pool kv [ { cap 64; }", "pool kv[2 { cap 64; }", "pool kv[x] { }",
                                  "pool kv[0] { }", "pool kv[2] { cap 64; }"])
def test_a_queue_pools_size_is_read_before_it_is_refused(pool):
    assert_same_rejection(LINK % ("queue E : decode { %s }" % pool))


@pytest.mark.parametrize("session", ["session { observe a = max(self, 1); }", "session { observe a = abs(self); }",
                                     "session { observe a = queue(self); }", "gauge g = f(self);",
                                     "gauge g = queue(self + 1);"])
def test_self_as_a_whole_argument_outside_an_entry(session):
    """A whole argument may name a pool or stage, so 0.1.2 leaves `self` there to the linker."""
    assert_same_rejection("run { horizon 10; }\nworkload { arrive batch(1); }\n" + session)


@pytest.mark.parametrize("stage, transfer", [("stage transfer : delay;", "transfer (1);"),
                                             ("stage link : delay;", "transfer (1);"),
                                             ("stage Lk : delay;", "transfer on Lk (1);")])
def test_a_transfer_without_pools_names_its_stage_in_the_help(stage, transfer):
    assert_same_rejection("run { horizon 10; }\nworkload { arrive batch(1); }\npool kv { }\n" + stage +
                          "session { hold kv (1) { %s } }" % transfer)

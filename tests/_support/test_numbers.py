"""sq._support.number_format, the one home of number printing, against pyserq 0.1.2's printing (Rust's `Display`).

The rules are checked on their own first (no reference needed); then, with
pyserq installed, messages that print a number (an array size at compile time,
the horizon of a run that ends short of its arrivals) are compared word for
word over values where printing goes wrong: near powers of ten, integers from
2^53 to 1e17 (the digits past the shortest ones are zeros, as Rust prints
them), subnormals and negative zero.
"""
from __future__ import annotations

import math
import random
import re
import struct

import pytest

import sq
from sq.errors import SqError
from sq._support.number_format import brief, debug, display, json_members, json_number


def _values() -> list[float]:
    rng = random.Random(13)
    out = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 2.225073858507201e-308,
           1.7976931348623157e308, 0.1 + 0.2, 1 / 3, 2.0 ** 53, 2.0 ** 53 + 2, 77068433900444864.0]
    for k in range(-323, 309):
        p = float(f"1e{k}")
        out += [p, math.nextafter(p, 0.0), math.nextafter(p, math.inf)]
    for k in range(53, 57):                        # 2^53 ≈ 9e15 … 1e17: integers with more digits than shortest
        out += [2.0 ** k, 2.0 ** k - 2 ** (k - 52), 2.0 ** k + 2 ** (k - 52)]
    out += [float(rng.randrange(2 ** 53, 10 ** 17)) for _ in range(200)]
    out += [struct.unpack("<d", struct.pack("<Q", rng.randrange(1, 2 ** 52)))[0] for _ in range(100)]  # subnormals
    out += [-x for x in out[:200]]
    return out


VALUES = _values()


# ---------------------------------------------------------------- the rules, no reference needed

@pytest.mark.parametrize("x, text", [
    (77068433900444864.0, "77068433900444860"), (2.0 ** 53 + 2, "9007199254740994"),
    (1e16, "10000000000000000"), (1e23, "100000000000000000000000"), (-0.0, "-0"), (0.0, "0"),
    (5e-324, "0." + "0" * 323 + "5"), (1e-5, "0.00001"), (123.456, "123.456"), (-2.5e-3, "-0.0025"),
    (math.inf, "inf"), (-math.inf, "-inf"), (math.nan, "NaN")])
def test_display_writes_the_shortest_digits_positionally(x, text):
    assert display(x) == text


@pytest.mark.parametrize("x, text", [
    (16.0, "16.0"), (0.5, "0.5"), (-0.0, "-0.0"), (1e-4, "0.0001"), (9.9e-5, "9.9e-5"), (1e16, "1e16"),
    (9999999999999998.0, "9999999999999998.0"), (1.5e-7, "1.5e-7"), (-5e-324, "-5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e308"), (math.inf, "inf"), (math.nan, "NaN")])
def test_debug_has_a_fraction_and_an_exponent_outside_1e_4_to_1e16(x, text):
    assert debug(x) == text


def test_every_form_reads_back_to_the_same_double():
    for x in VALUES:
        for form in (display, debug, brief):
            text = form(x)
            assert float(text) == x and math.copysign(1, float(text)) == math.copysign(1, x), (form, x, text)
        assert json_number(x) == display(x)          # a finite float: the same text in JSON
        assert len(brief(x)) <= 24, (x, brief(x))     # sq's own messages never run to hundreds of digits


def test_json_members_write_each_value_as_a_report_does():
    import numpy as np

    keys = ('"a":', '"b":', '"c":', '"d":', '"e":', '"f":', '"g":')
    values = (1e-7, 3, None, "engine", np.int32(-4), np.float64(2.5e20), math.nan)
    assert json_members(keys, values) == \
        '"a":0.0000001,"b":3,"c":null,"d":"engine","e":-4,"f":250000000000000000000,"g":null'
    assert json_members(keys[:2], iter([0.5, -0.0])) == '"a":0.5,"b":-0'
    # ints: in C within 64 bits, through str beyond
    ints = (0, -1, 2 ** 63 - 1, -2 ** 63, 2 ** 64, -(2 ** 70), 10 ** 30)
    assert json_members(keys, ints) == ",".join(f"{k}{v}" for k, v in zip(keys, ints))
    for wrong in (True, np.bool_(False)):    # a report number is never a bool
        with pytest.raises(TypeError):
            json_members(keys[:1], (wrong,))
    with pytest.raises(ValueError):
        json_members(keys, (1.0,))


def test_a_run_time_error_prints_a_tiny_time_briefly():
    source = ("stage d : delay;\nworkload { arrive poisson(1); }\n"
              "session { run d (1.5e-300); set g = 0.5 + now * 0; branch (g) { observe x = 1; } }\n")
    with pytest.raises(SqError) as info:
        sq.run(sq.compile(source=source, horizon=1))
    assert info.value.message.endswith("(session 0, time 1.5e-300)"), info.value.message


# ---------------------------------------------------------------- against pyserq

def _message(compiler, source: str, run: bool = False):
    """The first line of a rejection without its position, or None when the program runs."""
    try:
        program = compiler.compile(source=source)
        if run:
            compiler.run(program)
    except (ValueError, SqError) as e:
        text = e.message if isinstance(e, SqError) else str(e)
        return re.sub(r"^(\d+:\d+: )", "", text.splitlines()[0])
    return None


def test_array_sizes_print_as_pyserq_prints_them():
    pyserq = pytest.importorskip("pyserq", reason="the live comparison needs pyserq 0.1.2 (pip install pyserq==0.1.2)")
    differ = []
    for x in VALUES:
        source = (f"let n = {x!r};\nstage s[n] : delay;\nworkload {{ arrive poisson(1); }}\n"
                  "session { run s[0] (1); }\nrun { horizon 1; }\n")
        want, got = _message(pyserq, source), _message(sq, source)
        if want != got:
            differ.append((x, want, got))
    assert not differ, differ[:3]


@pytest.mark.parametrize("horizon", [77068433900444864.0, 2.0 ** 53 + 2, 1e16 + 2, 99999999999999984.0, 123456789012345680.0])
def test_a_run_time_message_prints_the_horizon_as_pyserq(horizon):
    pyserq = pytest.importorskip("pyserq", reason="the live comparison needs pyserq 0.1.2 (pip install pyserq==0.1.2)")
    source = ("stage s : delay;\nworkload { arrive poisson(1e-20); }\n"
              f"session {{ run s (1); observe x = 1; }}\nrun {{ horizon {horizon!r}; arrivals 5; }}\n")
    want = _message(pyserq, source, run=True)
    assert want.startswith(f"run: horizon {display(horizon)} reached before requested arrivals")
    assert _message(sq, source, run=True) == want

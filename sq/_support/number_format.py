"""How sq prints a number: the one home of every number format it writes.

pyserq 0.1.2 is written in Rust, so its messages print an f64 with Rust's
`Display` (`{}`) or `Debug` (`{:?}`), and its report writes JSON numbers its
own way. All of them start from the shortest digits that read back to the same
double (Python's `repr` finds the same digits Rust's `{}` does), then place the
decimal point; they differ only in exponents, `.0` and the non-finite values.
"""
from __future__ import annotations

import math
import sys

from sq._support import _number_text

__all__ = ["display", "debug", "brief", "json_number", "json_members"]


def _digits(x: float) -> tuple[str, int]:
    """The shortest round-trip digits of a finite x >= 0 and where the point goes:
    x == 0.DIGITS * 10**point (`"0", 1` for zero)."""
    mantissa, _, exp = repr(x).partition("e")
    whole, _, frac = mantissa.partition(".")
    every = whole + frac
    digits = every.lstrip("0")
    point = len(whole) + (int(exp) if exp else 0) - (len(every) - len(digits))   # leading zeros move it left
    digits = digits.rstrip("0")
    return (digits, point) if digits else ("0", 1)


def _positional(x: float) -> str:
    """A finite x in positional notation, never an exponent: `1e20` is `100000000000000000000`,
    `1e-7` is `0.0000001`, `-0.0` is `-0`. The digits after the shortest ones are zeros
    (`77068433900444864.0` prints as `77068433900444860`, as Rust does). Written in C
    (`sq._support._number_text`): a report prints ~30 numbers per run."""
    return _number_text.positional(x)


def _exponent(x: float) -> str:
    """A finite nonzero x as Rust's `{:e}` with the shortest digits: `1e16`, `-1.5e-7`, `5e-324`."""
    mantissa, _, exp = repr(x).partition("e")
    if not exp:                      # repr wrote it positionally: normalise by hand
        sign = "-" if x < 0 else ""
        digits, point = _digits(abs(x))
        mantissa, exp = sign + digits[0] + ("." + digits[1:] if len(digits) > 1 else ""), str(point - 1)
    elif mantissa.endswith(".0"):
        mantissa = mantissa[:-2]
    return f"{mantissa}e{int(exp)}"


def _non_finite(x: float) -> str:
    return "NaN" if x != x else ("inf" if x > 0 else "-inf")


def display(x: float) -> str:
    """A float as Rust's `Display` prints it (0.1.2's messages): shortest round-trip
    digits, no exponent, no `.0`; `NaN`, `inf`, `-inf`; `-0` for -0.0."""
    x = float(x)
    return _positional(x) if math.isfinite(x) else _non_finite(x)


def debug(x: float) -> str:
    """A float as Rust's `Debug` prints it (0.1.2's debug dumps): like `display` but always
    with a fraction (`16.0`), and with an exponent below 1e-4 or from 1e16 on (`1e16`, `1.5e-7`)."""
    x = float(x)
    if not math.isfinite(x):
        return _non_finite(x)
    if x != 0 and not 1e-4 <= abs(x) < 1e16:
        return _exponent(x)
    text = _positional(x)
    return text if "." in text else text + ".0"


def brief(x: float) -> str:
    """A float in sq's own words (the time an error happened, `sq check`'s summary): `display`
    between 1e-4 and 1e16, the exponent form of `debug` outside, so that no number runs to
    hundreds of digits (`1e-300`, not 0.000…0001)."""
    text = debug(x)
    return text[:-2] if text.endswith(".0") else text


def quotient(a: float, b: float) -> str:
    """a / b to two significant digits, also past the largest double (50 / 1e-310: `5.0e+311`)."""
    from decimal import Decimal

    return format(Decimal(a) / Decimal(b), ".2g")


def json_number(x) -> str:
    """A number in a report's JSON as 0.1.2 writes it: an integer (a counter) as an integer;
    a float as `display` writes it; `null` for NaN and ±inf."""
    if type(x) is float:
        return _number_text.json_number_of_float(x)
    # numpy's scalars count too; without numpy loaded there are none (the compiler writes
    # numbers without loading it)
    np = sys.modules.get("numpy")
    if isinstance(x, bool) or (np is not None and isinstance(x, np.bool_)):
        raise TypeError("a report number is never a bool")
    if isinstance(x, int) or (np is not None and isinstance(x, np.integer)):
        return str(int(x))
    x = float(x)
    return _positional(x) if math.isfinite(x) else "null"


def json_members(keys: tuple[str, ...], values) -> str:
    """The members `"k":v` of a report's JSON object, joined by commas: `keys` are their texts
    (`'"mean":'`), each value is written by `json_number`, None as `null` and a str (a name:
    serQ writes names unescaped) in quotes. In C for floats, ints and None (a report per run)."""
    return _number_text.json_members(keys, values, json_number)


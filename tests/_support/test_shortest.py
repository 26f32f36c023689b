"""The report's number text through `shortest` (sq/_support/_number_text.pyx: the shortest
round-trip digits in 128-bit integers) is the text dtoa gives, which is Python's `repr`.

A report prints each double with `repr`'s digits (pyserq's JSON does); `shortest` finds them
without dtoa for 2^-13 <= |x| < 2^52. Each check writes millions of doubles both ways
(`positional_lines(xs, fast)`: through `shortest` where it applies, else every one through
dtoa) and compares the texts, and a smaller sample against `repr` itself. The shapes: what
a report prints (means, ratios, sums of exponential draws), random bit patterns (in the
fast range and anywhere), powers of two and their neighbours (the interval is lopsided
there), short decimals and their neighbours, decimals ending in 5 (the ties), and the
special values. The slow check does the same with ten times as many, other seeds.
"""
from __future__ import annotations

import numpy as np
import pytest

from sq._support import _number_text
from sq._support.number_format import _digits


def _shapes(seed: int, n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    exponent = rng.integers(1023 - 13, 1023 + 52, n, dtype=np.uint64)      # 2^-13 <= x < 2^52
    fast_bits = (exponent << np.uint64(52)) | rng.integers(0, 2 ** 52, n, dtype=np.uint64)
    draws = rng.exponential(1.0, (max(1, n // 1000), 1000))
    two = np.ldexp(1.0, np.arange(-1074, 1024))
    with np.errstate(over="ignore"):
        lopsided = np.concatenate([two, np.nextafter(two, 0), np.nextafter(two, np.inf), 3 * two, 1.5 * two])
    short = rng.integers(1, 10 ** 6, n) * 10.0 ** rng.integers(-10, 10, n)
    fives = (rng.integers(1, 10 ** 9, n) * 10 + 5) * 10.0 ** rng.integers(-12, 6, n)
    return {
        "report": np.concatenate([draws.mean(1), draws.var(1) / draws.mean(1) ** 2, draws.sum(1),
                                  np.cumsum(draws, 1)[:, ::7].ravel(), -draws[:, 0]]),
        "ratios": rng.integers(1, 10 ** 6, n) / rng.integers(1, 10 ** 6, n),
        "fast bits": fast_bits.view(np.float64),
        "any bits": rng.integers(0, 2 ** 64, n // 10, dtype=np.uint64).view(np.float64),
        "powers of two": lopsided,
        "short decimals": np.concatenate([short, np.nextafter(short, 0), np.nextafter(short, np.inf)]),
        "ties": np.concatenate([fives, np.nextafter(fives, 0), np.nextafter(fives, np.inf)]),
        "special": np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
                             1.7976931348623157e308, 2.0 ** 53, 2.0 ** 52 - 0.5, 2.0 ** -13,
                             np.nextafter(2.0 ** -13, 0), np.nextafter(2.0 ** 52, 0), 0.1, 0.1 + 0.2, 1 / 3]),
    }


def _same_text(xs: np.ndarray) -> int:
    """How many of xs took `shortest`; fails on the first double whose two texts differ."""
    fast, quick = _number_text.positional_lines(xs, True)
    slow, _ = _number_text.positional_lines(xs, False)
    if fast != slow:
        differ = next((x, a, b) for x, a, b in zip(xs, fast.split("\n"), slow.split("\n")) if a != b)
        pytest.fail(f"{differ[0]!r}: shortest wrote {differ[1]!r}, dtoa {differ[2]!r}")
    return quick


def _check(seed: int, n: int) -> None:
    for name, xs in _shapes(seed, n).items():
        quick = _same_text(np.ascontiguousarray(xs))
        if name == "fast bits":       # every non-integral one (an integral one is its integer's digits)
            assert quick == np.count_nonzero(xs != np.floor(xs))
        if name in ("report", "ratios"):     # the fast path is what these test
            assert quick >= 0.99 * len(xs), (name, quick, len(xs))


def test_shortest_writes_what_dtoa_writes():
    _check(seed=2026, n=300_000)


def test_shortest_writes_repr_s_digits():
    """Against `repr` itself (number_format._digits reads its digits and point)."""
    xs = np.concatenate([a[:20_000] for a in _shapes(7, 20_000).values()])
    lines, _ = _number_text.positional_lines(np.ascontiguousarray(xs), True)
    for x, text in zip(xs.tolist(), lines.split("\n")):
        if x != x or x in (np.inf, -np.inf):
            assert text == "null"
            continue
        if x == 0:
            assert text == ("-0" if str(x)[0] == "-" else "0")
            continue
        digits, point = _digits(abs(x))
        mantissa, _, power = text.lstrip("-").partition("e")
        assert not power and float(text) == x
        whole, _, frac = mantissa.partition(".")
        whole = whole.lstrip("0")
        # where the point goes: after the whole part's digits, or before the fraction's leading zeros
        placed = len(whole) if whole else len(frac.lstrip("0")) - len(frac)
        assert ((whole + frac).strip("0") or "0", placed) == (digits, point), (x, text)


def test_the_fast_path_is_taken_where_it_applies_only():
    _, quick = _number_text.positional_lines(np.array([0.5, 2.0 ** -13, np.nextafter(2.0 ** 52, 0), 1.5]), True)
    assert quick == 4
    _, quick = _number_text.positional_lines(np.array([1.0, np.nextafter(2.0 ** -13, 0), 2.0 ** 52 + 1, 1e-300,
                                                       5e-324, np.nan, np.inf]), True)
    assert quick == 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_shortest_writes_what_dtoa_writes_many(seed):
    _check(seed=seed, n=3_000_000)

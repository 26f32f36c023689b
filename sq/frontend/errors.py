"""Places in a source file, and how one is shown: the source line and a caret.

`sq.errors.SqError` carries a `Span` and renders it with `excerpt`.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A place in a source file: 1-based line and column, and a length in characters."""

    line: int
    col: int
    length: int = 1
    file: str | None = None


def excerpt(span: Span, source: str | None) -> list[str]:
    """The source line of `span` and a caret under it, as `SqError.render` shows them (none without the source)."""
    text = _source_line(source, span.line)
    if text is None:
        return []
    gutter = str(span.line)
    pad = " " * len(gutter)
    caret_at = _display_width(text[: max(span.col - 1, 0)])
    return [f"{gutter} | {text}", f"{pad} | {' ' * caret_at}{'^' * max(1, span.length)}"]


def _source_line(source: str | None, line: int) -> str | None:
    if source is None or line < 1:
        return None
    # Lines end at "\n" only, as the lexer counts them (not at "\r", "\f" or U+2028).
    rows = source.split("\n")
    if line > len(rows):
        return None
    return rows[line - 1].replace("\t", " ")


def _display_width(prefix: str) -> int:
    return len(prefix)


def __getattr__(name: str):
    # SqError lived here once; code written against that still imports it from here.
    # Its one home is sq.errors (tests/test_layout.py keeps sq's own modules importing it there).
    if name == "SqError":
        from sq.errors import SqError
        return SqError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

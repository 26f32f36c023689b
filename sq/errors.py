"""The one error type sq raises for bad input: a program it rejects, a bad setting, or a run that cannot go on.

Every layer (front end, IR, lowering, engine, CLI) raises it. A rejection with a
source position carries a `Span`; `render()` adds the source line and a caret,
the way the CLI prints it (`excerpt`).
"""
from __future__ import annotations

from dataclasses import dataclass


class SqError(Exception):
    """Bad input: a program sq rejects, a bad setting, or a run that cannot go on.

    `phase` says who found it: "parse", "link", "validate" (the IR's own
    checks) or "run". `notes` are extra `help:`/`note:` lines. `item` names the
    IR item a check of the IR (which has no source positions) found at fault,
    e.g. ("arrival",) or ("pool", 2): a program compiled from text knows where
    that item is written (`sq.ir.Places`) and gives the error that place.
    """

    def __init__(self, message: str, span: Span | None = None, *, source: str | None = None,
                 phase: str = "link", notes: tuple[str, ...] | list[str] = (), item: tuple | None = None):
        super().__init__(message)
        self.message = message
        self.span = span
        self.source = source
        self.phase = phase
        self.notes = tuple(notes)
        self.item = item

    @property
    def file(self) -> str | None:
        return self.span.file if self.span else None

    @property
    def line(self) -> int | None:
        return self.span.line if self.span else None

    @property
    def col(self) -> int | None:
        return self.span.col if self.span else None

    def __str__(self) -> str:
        return self.render()

    def render(self) -> str:
        """`FILE:LINE:COL: error: MESSAGE`, then the source line and a caret, then notes."""
        lines = []
        if self.span is None:
            where = f"{self.file}: " if self.file else ""
            lines.append(f"{where}error: {self.message}")
        else:
            s = self.span
            where = f"{s.file or '<source>'}:{s.line}:{s.col}"
            lines.append(f"{where}: error: {self.message}")
            lines.extend(excerpt(s, self.source))
        lines.extend(self.notes)
        return "\n".join(lines)


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

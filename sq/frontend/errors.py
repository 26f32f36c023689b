"""The one error type sq raises for bad input, and how it is shown.

Every rejection carries where it happened (file, line, column, the span's
length) and one line naming the construct; `render()` adds the source line
and a caret, the way the CLI prints it.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Span:
    """A place in a source file: 1-based line and column, and a length in characters."""

    line: int
    col: int
    length: int = 1
    file: str | None = None


class SqError(Exception):
    """Bad input: a program sq rejects, a bad setting, or a run that cannot go on.

    `phase` says who found it: "parse", "link", "validate" (the IR's own
    checks) or "run". `notes` are extra `help:`/`note:` lines.
    """

    def __init__(self, message: str, span: Span | None = None, *, source: str | None = None,
                 phase: str = "link", notes: tuple[str, ...] | list[str] = ()):
        super().__init__(message)
        self.message = message
        self.span = span
        self.source = source
        self.phase = phase
        self.notes = tuple(notes)

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
            text = _source_line(self.source, s.line)
            if text is not None:
                gutter = str(s.line)
                pad = " " * len(gutter)
                lines.append(f"{gutter} | {text}")
                caret_at = _display_width(text[: max(s.col - 1, 0)])
                lines.append(f"{pad} | {' ' * caret_at}{'^' * max(1, s.length)}")
        lines.extend(self.notes)
        return "\n".join(lines)


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

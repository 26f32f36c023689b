"""The one error type sq raises for bad input: a program it rejects, a bad setting, or a run that cannot go on.

Every layer (front end, IR, lowering, engine, CLI) raises it. A rejection with a
source position carries a `Span`; `render()` adds the source line and a caret,
the way the CLI prints it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `python -m sq` imports this module before it can catch Ctrl-C: it stays this light
    from sq.frontend.errors import Span


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
            from sq.frontend.errors import excerpt  # noqa: PLC0415  (see the imports)

            lines.extend(excerpt(s, self.source))
        lines.extend(self.notes)
        return "\n".join(lines)

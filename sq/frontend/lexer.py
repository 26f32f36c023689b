"""Source text to tokens (spec 01 §1, 10 §10.2).

Words are not keywords here: every identifier is an `Ident` token and the
parser decides from its position whether `hold` is the statement or a name.
Token kinds carry pyserq's names (`Semi`, `LBrace`, …) because parse errors
print them.
"""
from __future__ import annotations

import functools
import re

from sq.frontend import unicode_tables
from sq._support.number_format import display
from sq.errors import SqError
from sq.errors import Span

IDENT, NUM, STR, EOF = "Ident", "Num", "Str", "Eof"
_SAME = object()

# Two-character symbols first: the longest match wins.
_SYMBOLS2 = {"<=": "Le", ">=": "Ge", "==": "EqEq", "!=": "Ne", "&&": "AndAnd", "||": "OrOr"}
_SYMBOLS1 = {
    "{": "LBrace", "}": "RBrace", "(": "LParen", ")": "RParen", "[": "LBracket",
    "]": "RBracket", ",": "Comma", ";": "Semi", ":": "Colon", ".": "Dot", "=": "Assign",
    "~": "Tilde", "?": "Question", "+": "Plus", "-": "Minus", "*": "Star", "/": "Slash",
    "^": "Caret", "<": "Lt", ">": "Gt", "!": "Not",
}


class Token:
    """One token. `text` is the identifier, the string's contents or the
    number as written; `value` the number. `via` lists the def uses that
    produced this token (innermost last); empty for tokens read from source.
    Treated as immutable (`moved` makes a changed copy); slotted because a
    program has thousands."""

    __slots__ = ("kind", "text", "line", "col", "length", "file", "value", "via", "_span")

    def __init__(self, kind: str, text: str, line: int, col: int, length: int = 1,
                 file: str | None = None, value: float = 0.0, via: tuple = ()):
        self.kind = kind
        self.text = text
        self.line = line
        self.col = col
        self.length = length
        self.file = file
        self.value = value
        self.via = via
        self._span = None

    def __repr__(self) -> str:
        return f"Token({self.kind}, {self.text!r}, {self.line}:{self.col})"

    @property
    def span(self) -> Span:
        # made once: the parser asks a token for its span several times, and a
        # frozen dataclass is slow to build (the fields cannot change, so one serves)
        if self._span is None:
            self._span = Span(self.line, self.col, self.length, self.file)
        return self._span

    def is_word(self, word: str) -> bool:
        return self.kind == IDENT and self.text == word

    def show(self) -> str:
        """How an error message names this token."""
        if self.kind == IDENT:
            return f"`{self.text}`"
        if self.kind == NUM:
            return display(self.value)
        if self.kind == STR:
            return f'"{self.text}"'
        return self.kind

    def moved(self, kind=None, text=None, length=None, line=None, col=None, file=_SAME,
              via=None) -> "Token":
        """A copy with some fields changed."""
        return Token(self.kind if kind is None else kind, self.text if text is None else text,
                     self.line if line is None else line, self.col if col is None else col,
                     self.length if length is None else length,
                     self.file if file is _SAME else file, self.value,
                     self.via if via is None else via)


def _char_class(table, lo_bound: int = 0, hi_bound: int = 0x10FFFF) -> str:
    """A regex character class body holding the table's ranges clipped to [lo_bound, hi_bound]."""
    parts = []
    for lo, hi in table:
        lo, hi = max(lo, lo_bound), min(hi, hi_bound)
        if lo <= hi:
            parts.append(re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}")
    return "".join(parts)


def _one_of(table, top: int = 0x10FFFF) -> str:
    """A regex for one character of `table` (up to `top`).  `re` tests a class reaching past
    U+FFFF range by range (hundreds of tests per character: 30 ms for a
    300-line program), but one within U+FFFF by a table lookup; so the
    astral ranges get their own class, tried only for an astral character."""
    astral = _char_class(table, 0x10000, top)
    bmp = f"[{_char_class(table, 0, min(top, 0xFFFF))}]"
    return f"(?:{bmp}|(?=[^\\x00-\\uffff])[{astral}])" if astral else bmp


# One pass of `finditer` finds every token: blanks between tokens are skipped
# by the regex engine itself (any other character starts a token, a comment or
# `bad`), so the Python loop runs once per token, not once per character or
# blank run. Identifiers and blanks are read as 0.1.2 reads them (Rust's `char`
# classes, which differ from Python's str methods at the edges): unicode_tables.py.
_TOKEN_TEMPLATE = r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<open_comment>/\*)
  | (?P<num>(?:[0-9]|\.[0-9])[0-9._]*(?:[eE][+-]?[0-9]+)?)
  | (?P<ident>{start}{part}*)
  | (?P<str>"[^"]*")
  | (?P<open_str>")
  | (?P<sym><=|>=|==|!=|&&|\|\||[{{}}()\[\],;:.=~?+\-*/^<>!])
  | (?P<bad>[^{space}])
"""
assert all(hi <= 0xFFFF for _, hi in unicode_tables.WHITE_SPACE)   # the blanks stay one fast class


@functools.cache
def _token_regex(ascii_only: bool) -> re.Pattern:
    """The token regex; for a text of ASCII characters only, the one whose classes hold only
    ASCII: it matches such a text exactly as the whole one does and compiles in a fraction of
    the time (the Unicode identifier classes take tens of ms to compile, at every start)."""
    top = 0x7F if ascii_only else 0x10FFFF
    start, part = (_one_of(unicode_tables.IDENT_START, top), _one_of(unicode_tables.IDENT_PART, top))
    return re.compile(_TOKEN_TEMPLATE.format(start=start, part=part,
                                             space=_char_class(unicode_tables.WHITE_SPACE, 0, top)),
                      re.VERBOSE | re.DOTALL)


def _tokens(text: str):
    return _token_regex(text.isascii()).finditer(text)


_SYMBOL_KINDS = {**_SYMBOLS1, **_SYMBOLS2}


def _error(text: str, file, pos: int, message: str, notes=(), layout: str | None = None) -> SqError:
    layout = text if layout is None else layout
    line = layout.count("\n", 0, pos) + 1
    col = pos - (layout.rfind("\n", 0, pos) + 1) + 1
    return SqError(message, Span(line, col, 1, file), source=text, phase="parse", notes=notes)


class _StringLineEnds(Exception):
    """A string holds a line end: positions must be counted the way 0.1.2 does."""


def _layout(text: str) -> str:
    """`text` with the line ends inside strings (and after an unclosed `"`)
    blanked: 0.1.2 counts those as ordinary characters, not new lines, so every
    position after such a string is on an earlier line than it looks."""
    out = []
    last = 0
    for m in _tokens(text):
        if m.lastgroup == "str":
            out += [text[last:m.start()], m.group().replace("\n", " ")]
            last = m.end()
        elif m.lastgroup == "open_str":
            out += [text[last:m.start()], text[m.start():].replace("\n", " ")]
            last = len(text)
            break
        elif m.lastgroup == "bad":
            break
    out.append(text[last:])
    return "".join(out)


def tokenize(text: str, file: str | None = None) -> list[Token]:
    """All tokens of `text`, ending with one `Eof` token."""
    try:
        return _tokenize(text, text, file)
    except _StringLineEnds:
        return _tokenize(text, _layout(text), file)


def _tokenize(text: str, layout: str, file: str | None) -> list[Token]:
    """`tokenize`, with line ends counted in `layout` (`text` itself, or blanked by `_layout`)."""
    own_layout = layout is text
    tokens: list[Token] = []
    append = tokens.append
    end = len(text)
    line, line_start = 1, 0          # the line of the last token and the offset it starts at
    next_nl = _next_newline(layout, 0)
    for m in _tokens(text):
        kind = m.lastgroup
        pos = m.start()
        if pos > next_nl:            # crossed line ends since the last token
            line += layout.count("\n", next_nl, pos)
            line_start = layout.rfind("\n", next_nl, pos) + 1
            next_nl = _next_newline(layout, pos)
        written = m.group()
        if kind == "ident":
            append(Token(IDENT, written, line, pos - line_start + 1, len(written), file))
        elif kind == "sym":
            append(Token(_SYMBOL_KINDS[written], written, line, pos - line_start + 1, len(written), file))
        elif kind == "num":
            try:
                value = float(written.replace("_", ""))
            except ValueError:
                raise _error(text, file, pos, f"bad number `{written}`", layout=layout) from None
            append(Token(NUM, written, line, pos - line_start + 1, len(written), file, value))
        elif kind == "str":
            if own_layout and "\n" in written:
                raise _StringLineEnds
            append(Token(STR, written[1:-1], line, pos - line_start + 1, len(written), file))
        elif kind != "comment":
            if own_layout and kind == "open_str" and "\n" in text[pos:]:
                raise _StringLineEnds
            raise _lexical_error(text, file, kind, pos, layout)
    newlines = layout.count("\n")
    append(Token(EOF, "", newlines + 1, end - (layout.rfind("\n") + 1) + 1, 1, file))
    return tokens


def _next_newline(text: str, pos: int) -> int:
    """The offset of the first line end at or after `pos` (past the end when none)."""
    nl = text.find("\n", pos)
    return len(text) + 1 if nl < 0 else nl


def _lexical_error(text: str, file, kind: str, pos: int, layout: str) -> SqError:
    if kind == "open_comment":
        return _error(text, file, pos, "unterminated block comment",
                      ("help: close this comment with `*/`",), layout)
    if kind == "open_str":      # found at the end of the text, where 0.1.2 stops looking for `"`
        return _error(text, file, len(text), "unterminated string", layout=layout)
    return _error(text, file, pos, f"unexpected character `{text[pos]}`", layout=layout)

"""Trace replay (spec 02 §3, 09 §9.7–9.8): the corpus file and the rule a replay follows.

A workload with `trace "F.csv" [ordered];` replays recorded sessions. This
module reads the file into a `TraceCorpus` -- flat numpy arrays the engine
indexes without touching Python objects -- and states, as small pure
functions, what the engine does with it. Everything here matches pyserq 0.1.2
(`pyserq.read_trace` and runs), which tests/traces/test_trace.py checks.

The file (read once, when the run starts)
-----------------------------------------
* The whole file is read and must be UTF-8 (else `cannot read trace F: stream
  did not contain valid UTF-8`, even when an earlier line is malformed).
* It is cut at `\\n` only (a lone `\\r` is not a line break); line numbers in
  messages count every line, skipped ones included, from 1.
* Each line is trimmed of Rust whitespace (Unicode White_Space: not the
  `\\x1c`-`\\x1f` separators Python's `str.strip` also removes), then skipped
  when empty, starting with `#`, or starting with `session` (a header; the
  test is case-sensitive and `sessionfoo,1` is a header too).
* Other lines split on `,` (no quoting, no trimming of fields) into 5 or 6
  fields `session,turn,new,out,think[,forced]`; the field count is checked
  before any number. Fields 1, 3, 4, 5, 6 are Rust `f64` literals, read left
  to right, the first bad one reported; field 2 (turn) is never read; a
  missing `forced` is 0.
* The session id is field 1 cast like Rust's `f64 as u64` (truncation,
  saturating; negatives and NaN are 0). A corpus session is a run of
  consecutive lines with the same id, so ids `1,2,1` make three sessions and
  `1.9`, `1.2` one. There is no empty session: every session has a turn.
* No data line at all is an error (`trace F: empty trace`).
* `F` in every message is the path as it was opened: `resolve_path` gives it.

What the engine does
--------------------
With `L = len(corpus)` corpus sessions (L >= 1):

1. At run start, before the first event -- even if no session will ever
   spawn (`arrive none`) -- read the corpus; an error aborts the run and no
   report exists.
2. At every spawn (the serial is assigned, attributes are all 0; before the
   workload's `init` block), bind the session to a corpus session
   (`pick_session`): with `ordered`, number `serial mod L` (serial counts every
   spawn from 0: warm-up sessions and closed-loop replacements included);
   otherwise one draw `range_u32(0, L - 1)` (both bounds included) on the
   trace stream, seeded `seed ^ 0x6A09E667F3BCC908`, which nothing else reads,
   so the picks are the stream's draws in spawn order. Its cursor starts at 0.
3. At every `turn;` (after `turn_no` is incremented, before the workload's
   `turn` block runs) with cursor `k` on a session of `count` turns
   (`turn_of` with `turn_no = k + 1`):
   * `k < count`: set `new`, `out`, `think`, `forced` from row
     `offset + k` of `turns`, `more = 1` if `k + 1 < count` else 0; `k += 1`.
   * otherwise (exhausted): set only `more = 0`. The other four are NOT
     reloaded: they keep whatever they hold now, including values the
     program `set` since the last turn (pyserq: a 2-turn session, `set new =
     new + 100` after each turn, reads new 10, 11, 111, 211).
   `think` is only an attribute: nothing waits for it.
4. Without a trace, `turn;` loads nothing and `more` stays 0.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np

from sq.lower._bytecode import TRACE_TURN_DTYPE
from sq.errors import SqError
from sq._support.files import TRACE_LIMIT, Unreadable, read_text

# The attributes a turn loads, in the column order of `TraceCorpus.turns`: the fields of the
# engine's C row (sq/lower/_bytecode.pxd's TraceTurn), which reads the table as those rows.
FIELDS = TRACE_TURN_DTYPE.names

# Field index in a line -> the name its error message uses.
_NUMBER_COLUMNS = ((0, "session"), (2, "new"), (3, "out"), (4, "think"), (5, "forced"))

# Rust's `str::trim` removes Unicode White_Space, which is narrower than
# Python's `str.strip()` (that one also removes \x1c-\x1f).
_WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006" \
              "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"

# Rust's `f64::from_str`: ASCII digits only, no spaces, no `_`, no hex; inf,
# infinity and nan in any case. Python's float() is looser, so a field it reads
# counts only if this accepts it too (both round correctly: the values agree).
_RUST_F64 = re.compile(r"[+-]?(?:(?i:inf|infinity|nan)|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")

_FIELDS_HELP = "help: use session,turn,new,out,think[,forced]"
_EMPTY_HELP = "help: add a data row using session,turn,new,out,think[,forced]"


@dataclass(frozen=True, eq=False)
class TraceCorpus:
    """The corpus sessions of a trace file, flat.

    `turns[offset[s] + k]` is turn k (from 0) of corpus session s, as
    (new, out, think, forced); `count[s] >= 1` turns per session. `turns` is
    C-contiguous, so `turns.reshape(-1)[4 * row + field]` is the same datum.
    A corpus of one-turn sessions (a trace without sessions: Azure, Vidur, ...)
    has no offset and count (None): session s is row s, which saves 16 B a
    request of a week-long trace (`first`, `turns_in` read both kinds).
    """

    path: str                 # as opened and as the messages name it
    turns: np.ndarray         # float64, shape (rows, 4)
    offset: np.ndarray | None  # int64, shape (sessions,); None: one turn a session
    count: np.ndarray | None   # int64, shape (sessions,); None: one turn a session
    # each session's recorded arrival (s from the first record), sorted; None: serQ's format has
    # no times (an extension: formats with times are read by sq.traces)
    arrival: np.ndarray | None = None
    # each turn's prompt blocks by content id (Mooncake, Bailian): turn r's are
    # blocks[block_offset[r]:block_offset[r + 1]]; None: the trace has none
    blocks: np.ndarray | None = None
    block_offset: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.turns) if self.count is None else len(self.count)

    def first(self, session: int) -> int:
        """The row of the session's first turn."""
        return session if self.offset is None else int(self.offset[session])

    def turns_in(self, session: int) -> int:
        """The session's turns."""
        return 1 if self.count is None else int(self.count[session])

    def sessions(self) -> list[list[tuple[float, float, float, float]]]:
        """The corpus in `pyserq.read_trace`'s shape: sessions of (new, out, think, forced)."""
        rows = [tuple(float(v) for v in row) for row in self.turns]
        if self.count is None:
            return [[row] for row in rows]
        return [rows[o:o + c] for o, c in zip(self.offset.tolist(), self.count.tolist())]


def resolve_path(trace: str, program_file: str | os.PathLike | None = None) -> str:
    """The path a run opens for `trace "…"`, which is also the name its errors show.

    Written in a program compiled from a file, a relative path is joined to
    that file's folder as given (pyserq neither makes it absolute nor
    normalises it: `sub/p.serq` with `trace "t.csv"` opens and names
    `sub/t.csv`, relative to the current directory at run time). From source
    text, or given as the `trace=` override, it is used as it is.
    """
    if program_file is None:
        return trace
    return os.path.join(os.path.dirname(os.fspath(program_file)), trace)


def read_trace(path: str | os.PathLike) -> TraceCorpus:
    """Read a trace file as a run does (module docstring); bad input is SqError(phase="run")."""
    path = os.fspath(path)
    ids: list[float] = []
    rows: list[tuple[float, float, float, float]] = []
    for number, line in enumerate(_read_text(path).split("\n"), start=1):
        line = line.strip(_WHITESPACE)
        if not line or line[0] == "#" or line.startswith("session"):
            continue
        fields = line.split(",")
        try:
            if not _plain(line) or len(fields) not in (5, 6):
                raise ValueError
            ident, turn = _values(fields)
        except ValueError:
            ident, turn = _values(_checked(fields, path, number))
        ids.append(ident)
        rows.append(turn)
    if not rows:
        raise SqError(f"trace {path}: empty trace", phase="run", notes=(_EMPTY_HELP,))
    offset, count = _sessions(np.asarray(ids, dtype=np.float64))
    turns = np.ascontiguousarray(np.asarray(rows, dtype=np.float64).reshape(-1, len(FIELDS)))
    return TraceCorpus(path=path, turns=turns, offset=offset, count=count)


def pick_session(sessions: int, serial: int, *, ordered: bool, rng=None) -> int:
    """The corpus session a spawning session replays (step 2 of the module docstring).

    `rng` is the run's trace stream (anything with `range_u32(lo, hi)`, both
    bounds included); it is drawn once, and only when not `ordered`.
    """
    if ordered:
        return serial % sessions
    return int(rng.range_u32(0, sessions - 1))


def turn_of(corpus: TraceCorpus, session: int, turn_no: int) -> dict[str, float]:
    """The attributes the `turn_no`-th `turn;` (from 1) of a replay of `session` sets.

    While turns remain, all of new, out, think, forced and more; once the
    corpus session is exhausted only `more` (0): the others keep their
    current values, whatever the program did to them.
    """
    if turn_no < 1:
        raise ValueError(f"turn_no counts from 1, got {turn_no}")
    count = corpus.turns_in(session)
    if turn_no > count:
        return {"more": 0.0}
    row = corpus.turns[corpus.first(session) + turn_no - 1]
    fields = {name: float(v) for name, v in zip(FIELDS, row)}
    fields["more"] = 1.0 if turn_no < count else 0.0
    return fields


# ---- reading ------------------------------------------------------------------
def _read_text(path: str) -> str:
    try:
        return read_text(path, TRACE_LIMIT)
    except Unreadable as e:
        raise SqError(f"cannot read trace {path}: {e.reason}", phase="run") from None


def _values(fields: list[str]) -> tuple[float, tuple[float, float, float, float]]:
    """A data line's session id and turn (new, out, think, forced); float() may refuse."""
    forced = float(fields[5]) if len(fields) == 6 else 0.0
    return float(fields[0]), (float(fields[2]), float(fields[3]), float(fields[4]), forced)


def _checked(fields: list[str], path: str, number: int) -> list[str]:
    """The fields of a line off the fast path, once Rust's rules accept them.

    The count is checked first, then the numbers left to right: the first
    bad one is the error.
    """
    if len(fields) not in (5, 6):
        raise SqError(f"trace {path}: line {number}: expected 5 or 6 fields, got {len(fields)}",
                      phase="run", notes=(_FIELDS_HELP,))
    for col, name in _NUMBER_COLUMNS:
        if col < len(fields) and _RUST_F64.fullmatch(fields[col]) is None:
            raise SqError(f"trace {path}: line {number}: column {col + 1} ({name}): invalid number `{fields[col]}`",
                          phase="run", notes=(f"help: replace `{name}` with a numeric value",))
    return fields


def _plain(line: str) -> bool:
    """No character float() would accept where Rust's f64 syntax does not.

    On printable ASCII without spaces and `_`, Python's float() and Rust's
    f64 parser accept the same strings (tests check this against pyserq);
    anything else goes the slow way, field by field, through _RUST_F64.
    """
    return line.isascii() and line.isprintable() and " " not in line and "_" not in line


def _sessions(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and counts of the runs of equal ids, compared as Rust's `id as u64`."""
    # `as u64` truncates, saturates, and sends NaN and negatives to 0; as
    # doubles, trunc() is exact and every saturated id becomes 2^64, a value
    # no unsaturated id reaches (the largest below 2^64 is 2^64 - 2048).
    key = np.where(ids > 0, np.minimum(np.trunc(ids), 2.0**64), 0.0)
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1]))).astype(np.int64)
    count = np.diff(np.append(starts, len(ids))).astype(np.int64)
    return starts, count

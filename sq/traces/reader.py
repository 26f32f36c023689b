"""Reading a trace file of any supported format into records, and records into a replay corpus.

`read_records(path, format=None)` recognises the format (sq/traces/formats.py)
from the header or first record, unless named, and scans the file in chunks
with the compiled scanner (sq/traces/_scan.pyx), gzip too. A record is one
request: `arrival` (seconds from the first record in the file), `new`, `out`,
`session`, `turn`, and `hash_ids` where the format has them.

A session is a record, or a chain of them where the format links turns
(Bailian's parent_chat_id, BurstGPT v2's Session ID); sessions are numbered
in order of their first record, turns from 0 in arrival order (Bailian's own
`turn` when present). `Records.corpus()` is what a run replays: a session's
turns with `think` = the recorded gap from a turn's arrival to the next turn's
arrival (0 after the last), and each session's arrival (its first turn's).
"""
from __future__ import annotations

import gzip
import io
import json
import os
from dataclasses import dataclass

import numpy as np

from sq._support.files import Unreadable, open_regular
from sq.errors import SqError, Span
from sq.traces import formats
from sq.traces._scan import ScanError, scan

_GZIP_MAGIC = b"\x1f\x8b"
_FORMAT_HELP = "help: name one of: " + ", ".join(formats.NAMES)


@dataclass(frozen=True, eq=False)
class Records:
    """A trace's requests as columns (numpy), in file order."""

    path: str
    format: str
    arrival: np.ndarray | None      # float64 seconds from the first record (None: serQ's format)
    new: np.ndarray                 # float64
    out: np.ndarray                 # float64
    session: np.ndarray             # int64, numbered from 0 in order of first record
    turn: np.ndarray                # int64, from 0
    hash_ids: np.ndarray | None = None       # int64, every record's block ids, flat
    hash_offsets: np.ndarray | None = None   # int64, len(self) + 1: record i's ids are [o[i], o[i+1])
    block: int = 0                  # tokens per hash_ids block

    def __len__(self) -> int:
        return len(self.new)

    def blocks_of(self, i: int) -> np.ndarray:
        """Record i's prompt block ids."""
        if self.hash_ids is None:
            raise SqError(f"trace {self.path}: the {self.format} format has no hash_ids", phase="settings")
        return self.hash_ids[self.hash_offsets[i]:self.hash_offsets[i + 1]]

    def columns(self) -> dict:
        """The columns by name (`hash_ids` as one array per record)."""
        cols = {"arrival": self.arrival, "new": self.new, "out": self.out, "session": self.session,
                "turn": self.turn}
        if cols["arrival"] is None:
            del cols["arrival"]
        if self.hash_ids is not None:
            cols["hash_ids"] = np.split(self.hash_ids, self.hash_offsets[1:-1])
        return cols

    def to_pandas(self):
        """The records as a pandas DataFrame (needs pandas)."""
        from sq._support._optional import require
        pd = require("pandas", "Records.to_pandas")
        return pd.DataFrame(self.columns())

    def corpus(self):
        """The replay corpus: sessions in order of arrival, each session's turns in turn order."""
        if int(self.session.max()) == len(self) - 1:        # every record a session of its own
            return self._one_turn_corpus()
        return self._session_corpus()

    def _session_corpus(self):
        """`corpus()` of sessions of any number of turns."""
        from sq.traces.serq import TraceCorpus
        arrival = self.arrival if self.arrival is not None else np.zeros(len(self))
        # a stable sort by (session, turn, arrival) keeps file order among equals
        order = np.lexsort((arrival, self.turn, self.session))
        sess = self.session[order]
        starts = np.flatnonzero(np.concatenate(([True], sess[1:] != sess[:-1])))
        count = np.diff(np.append(starts, len(order)))
        t = arrival[order]
        think = np.zeros(len(order))
        think[:-1] = t[1:] - t[:-1]
        think[np.append(starts[1:], len(order)) - 1] = 0.0          # after a session's last turn
        turns = np.column_stack((self.new[order], self.out[order], think, np.zeros(len(order))))
        first = t[starts]
        by_time = np.argsort(first, kind="stable")
        # re-lay the sessions in order of arrival
        count = count[by_time].astype(np.int64)
        rows, offset = _ranges(starts[by_time], count)
        offset = offset[:-1]
        blocks, block_offset = self._blocks_of(order[rows])
        return TraceCorpus(path=self.path, turns=np.ascontiguousarray(turns[rows]), offset=offset, count=count,
                           arrival=np.ascontiguousarray(first[by_time]) if self.arrival is not None else None,
                           blocks=blocks, block_offset=block_offset)

    def _one_turn_corpus(self):
        """`corpus()` when every session is one turn: the records in order of arrival (file order
        among equals), no offsets or counts (TraceCorpus), no copy when the file is in order."""
        from sq.traces.serq import TraceCorpus
        arrival = self.arrival
        order = None
        if arrival is not None and not bool(np.all(arrival[1:] >= arrival[:-1])):
            order = np.argsort(arrival, kind="stable")
            arrival = arrival[order]
        turns = np.zeros((len(self), 4))       # think 0 after a session's last turn, forced 0
        turns[:, 0] = self.new if order is None else self.new[order]
        turns[:, 1] = self.out if order is None else self.out[order]
        blocks, block_offset = self._blocks_of(np.arange(len(self)) if order is None else order)
        return TraceCorpus(path=self.path, turns=turns, offset=None, count=None, arrival=arrival,
                           blocks=blocks, block_offset=block_offset)

    def _blocks_of(self, records: np.ndarray):
        """The block ids of `records` in that order, flat, and their offsets (None, None without)."""
        if self.hash_ids is None:
            return None, None
        index, offset = _ranges(self.hash_offsets[records], np.diff(self.hash_offsets)[records])
        return np.ascontiguousarray(self.hash_ids[index]), offset


def _ranges(starts: np.ndarray, sizes: np.ndarray):
    """The ranges [start, start + size) laid end to end (int64), and their offsets in it (one more
    than the ranges). Vectorised: a list of one small array per range held ~260 B per session of
    a week-long trace at its peak (benchmarks/README.md, "A week of traffic")."""
    offset = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64))).astype(np.int64)
    index = np.repeat(np.asarray(starts, np.int64) - offset[:-1], sizes) + np.arange(offset[-1], dtype=np.int64)
    return index, offset


def sniff(path: str) -> str:
    """The format of the file at `path`, from its header or first record."""
    with _open(path) as stream:
        line, _ = _first_line(stream)
    fmt = _recognised(line)
    return fmt.name if fmt else formats.SERQ


def read_records(path: str | os.PathLike, format: str | None = None) -> Records:
    """The file's records (module docstring); bad input is an SqError naming file:line:col."""
    path = os.fspath(path)
    if format is not None and format not in formats.NAMES:
        raise SqError(f"unknown trace format `{format}`", phase="settings", notes=(_FORMAT_HELP,))
    if format == formats.SERQ or (format is None and sniff(path) == formats.SERQ):
        return _serq_records(path)
    with _open(path) as stream:
        line, number = _first_line(stream)
        fmt = formats.FORMATS[format] if format else _recognised(line)
        names = _names(line, fmt.json, path, number, fmt)
        roles = {**fmt.columns, **{r: n for r, n in fmt.optional.items() if n in names}}
        for role, name in fmt.columns.items():
            if name not in names:
                raise _error(path, number, 1, line, f"{fmt.title}: no {'key' if fmt.json else 'column'} `{name}`",
                             fmt.help())
        cols = _scan(stream, fmt, names, roles, path, number, line, _left(stream))
    return _records(path, fmt, roles, cols)


def _left(stream) -> int:
    """The bytes of a plain file past the stream's position (0: not known, a gzip)."""
    if isinstance(getattr(stream, "raw", None), gzip.GzipFile):      # its fileno is the packed file's
        return 0
    try:
        return max(os.fstat(stream.fileno()).st_size - stream.tell(), 0)
    except (OSError, AttributeError, io.UnsupportedOperation):
        return 0


def _scan(stream, fmt, names, roles, path, number, header, size=0):
    by_name = {name: role for role, name in roles.items()}
    try:
        if fmt.json:
            keys = list(roles.values())
            kinds = "".join(fmt.kinds.get(by_name[k], "n") for k in keys)
            out = scan(stream, kinds, keys=keys, first_line=number, head=header.encode() + b"\n", size=size)
            return {by_name[k]: col for k, col in zip(keys, out)}
        kinds = "".join(fmt.kinds.get(by_name[n], "n") if n in by_name else "s" for n in names)
        out = scan(stream, kinds, first_line=number + 1, size=size)
        return {by_name[n]: col for n, col in zip(names, out) if n in by_name}
    except ScanError as e:
        raise _error(path, e.line, e.col, _line_of(path, e.line), e.message, fmt.help()) from None


def _records(path, fmt, roles, cols) -> Records:
    if fmt.kinds.get("time") == "t":
        sec, frac = cols["time"]
        arrival = (sec - sec[0]).astype(np.float64) + (frac - frac[0]) if len(sec) else frac
    else:
        t = cols["time"]
        arrival = (t - t[0]) * fmt.unit if len(t) else t
    n = len(arrival)
    if n == 0:
        raise SqError(f"trace {path}: empty trace", phase="run", notes=("help: add a data row",))
    session, turn = _sessions(cols, arrival, n)
    if "turn" in cols:
        turn = cols["turn"].astype(np.int64)
    ids = offsets = None
    if "hash_ids" in cols:
        ids, counts = cols["hash_ids"]
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return Records(path=path, format=fmt.name, arrival=np.ascontiguousarray(arrival, dtype=np.float64),
                   new=cols["new"], out=cols["out"], session=session, turn=turn, hash_ids=ids,
                   hash_offsets=offsets, block=fmt.block if ids is not None else 0)


def _sessions(cols, arrival, n):
    """Session numbers (from 0, in order of first record) and turns (from 0, by arrival)."""
    if "parent" in cols:
        key = _roots(cols["session"], cols["parent"])
    elif "session" in cols:
        key = cols["session"]
    else:
        return np.arange(n, dtype=np.int64), np.zeros(n, np.int64)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    session = rank[inverse]
    order = np.lexsort((arrival, session))
    sorted_sess = session[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_sess[1:] != sorted_sess[:-1])))
    pos = np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))
    turn = np.empty(n, np.int64)
    turn[order] = pos
    return session, turn


def _roots(chat, parent):
    """Each record's first ancestor present in the file (itself if its parent is absent)."""
    order = np.argsort(chat, kind="stable")
    at = np.searchsorted(chat, parent, sorter=order)
    at = np.minimum(at, len(chat) - 1)
    found = chat[order[at]] == parent
    up = np.where(found, order[at], np.arange(len(chat)))
    while True:                                   # pointer jumping: log(depth) rounds
        nxt = up[up]
        if np.array_equal(nxt, up):
            return chat[up]
        up = nxt


def _serq_records(path: str) -> Records:
    from sq.traces.serq import read_trace
    corpus = read_trace(path)
    count = corpus.count
    session = np.repeat(np.arange(len(count), dtype=np.int64), count)
    turn = np.arange(len(session), dtype=np.int64) - np.repeat(corpus.offset, count)
    return Records(path=path, format=formats.SERQ, arrival=None, new=corpus.turns[:, 0].copy(),
                   out=corpus.turns[:, 1].copy(), session=session, turn=turn)


# ---- the file -----------------------------------------------------------------------------------
def _open(path: str):
    """The file, as a binary stream (gzip's undone); a pipe or device is refused, as serQ's reader does."""
    try:
        raw = open_regular(path)
    except Unreadable as e:
        raise SqError(f"cannot read trace {path}: {e.reason}", phase="run") from None
    if raw.peek(2)[:2] == _GZIP_MAGIC:
        return io.BufferedReader(gzip.GzipFile(fileobj=raw), buffer_size=1 << 20)
    return raw


_SNIFF_LIMIT = 1 << 20     # bytes of a line read to recognise a format: no header is longer


def _first_line(stream) -> tuple[str, int]:
    """The first line that is not blank (its first MiB), and its number (from 1)."""
    number = 0
    while raw := stream.readline(_SNIFF_LIMIT):
        number += 1
        line = raw.decode("utf-8", errors="replace").lstrip("\ufeff").strip()
        if line:
            return line, number
    return "", max(number, 1)


def _recognised(line: str) -> formats.Format | None:
    if line.startswith("{"):
        try:
            record = json.loads(line)
        except ValueError:
            return None
        return formats.recognise(list(record), True) if isinstance(record, dict) else None
    return formats.recognise([n.strip() for n in line.split(",")], False)


def _names(line, json_lines, path, number, fmt) -> list[str]:
    if not json_lines:
        return [n.strip() for n in line.split(",")]
    try:
        record = json.loads(line)
    except ValueError as e:
        raise _error(path, number, getattr(e, "colno", 1), line, f"{fmt.title}: not a JSON object",
                     fmt.help()) from None
    if not isinstance(record, dict):
        raise _error(path, number, 1, line, f"{fmt.title}: not a JSON object", fmt.help())
    return list(record)


def _line_of(path: str, number: int) -> str:
    with _open(path) as stream:
        for i, raw in enumerate(stream, start=1):
            if i == number:
                return raw.decode("utf-8", errors="replace").rstrip("\r\n")
    return ""


def _error(path, line, col, text, message, help_line) -> SqError:
    return SqError(f"trace {path}: {message}", Span(line, col, 1, path), source="\n" * (line - 1) + text,
                   phase="run", notes=(help_line,))

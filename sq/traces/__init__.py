"""Production traces: the public formats read into columns, and the corpus a replay runs.

`read_trace(path, format=None)` is the face (`sq.read_trace`); `corpus(path)` is what a run
with `trace "F";` loads (serQ's own format exactly as pyserq 0.1.2 reads it, the others by
sq/traces/reader.py).
"""
from __future__ import annotations

import os

from sq.traces.formats import NAMES as FORMATS
from sq.traces.reader import Records, read_records, sniff


def read_trace(path: str | os.PathLike, format: str | None = None, *, pandas: bool = False):
    """The trace's records as columns (`Records`), or a pandas DataFrame with `pandas=True`.

    `format` is one of `FORMATS`; None recognises it from the header or first record.
    """
    records = read_records(path, format)
    return records.to_pandas() if pandas else records


# the last corpus read, by its file's identity: the runs of a study (a capacity search per window
# of a week-long trace: hundreds of runs in each worker) read their trace once a process, not once
# a run. One entry, so a process holds at most the last trace it replayed.
_last: dict = {}


def corpus(path: str):
    """The corpus a run replays from `path` (sq.traces.serq.TraceCorpus), in any supported format;
    the same file again (path, inode, size and modification time) is not read again."""
    key = _identity(path)
    if key is not None and _last.get("key") == key:
        return _last["corpus"]
    found = _read_corpus(path)
    for a in (found.turns, found.offset, found.count, found.arrival, found.blocks, found.block_offset):
        if a is not None:
            a.flags.writeable = False           # shared by the runs that follow
    _last.clear()
    if key is not None:
        _last.update(key=key, corpus=found)
    return found


def _read_corpus(path: str):
    from sq.traces.serq import read_trace as read_serq
    if sniff(path) == "serq":
        return read_serq(path)
    return read_records(path).corpus()


def _identity(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None                            # the reader says why
    return os.path.abspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


__all__ = ["FORMATS", "Records", "corpus", "read_trace"]

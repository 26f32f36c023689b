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


def corpus(path: str):
    """The corpus a run replays from `path` (sq.traces.serq.TraceCorpus), in any supported format."""
    from sq.traces.serq import read_trace as read_serq
    if sniff(path) == "serq":
        return read_serq(path)
    return read_records(path).corpus()


__all__ = ["FORMATS", "Records", "corpus", "read_trace"]

"""A prefix cache shared across requests by content id, replayed over a trace's `hash_ids`.

Mooncake's and Bailian's traces give each prompt's blocks as content ids (equal
ids: equal prefix blocks, across requests). `leading_hits` replays the records in
arrival order (file order among equal times) through one cache of `capacity`
blocks: a request finds its leading blocks that are resident (counting stops at
the first one that is not: a prefix cache reuses a prefix), then every block of
its prompt is made resident and most recently used, and the least recently
used blocks are evicted while more than `capacity` are held.

A run with `trace "F" prefix(C);` applies the same rule at each `turn;` (the
engine's `prefix_lookup`, sq/engine/_session.pxi, over the tables `engine_tables`
makes), so a replay in arrival order finds exactly what `leading_hits` finds
(tests/traces/test_prefix_cache.py).
"""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from sq.errors import SqError
from sq.traces.reader import Records


def leading_hits(records: Records, capacity: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """(hit_blocks, prompt_blocks) per record, in the records' own order (module docstring)."""
    if records.hash_ids is None:
        raise SqError(f"trace {records.path}: the {records.format} format has no hash_ids to cache by",
                      phase="settings")
    if not capacity >= 0:
        raise SqError(f"a prefix cache's capacity is a number of blocks >= 0, found {capacity}", phase="settings")
    order = np.argsort(records.arrival, kind="stable")
    hits = np.zeros(len(records), np.int64)
    sizes = np.diff(records.hash_offsets)
    lru: OrderedDict = OrderedDict()
    ids, offsets = records.hash_ids.tolist(), records.hash_offsets.tolist()
    for i in order.tolist():
        blocks = ids[offsets[i]:offsets[i + 1]]
        k = 0
        while k < len(blocks) and blocks[k] in lru:
            k += 1
        hits[i] = k
        for b in blocks:
            if b in lru:
                lru.move_to_end(b)
            else:
                lru[b] = None
        while len(lru) > capacity:
            lru.popitem(last=False)
    return hits, sizes


def engine_tables(corpus) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What a run's shared prefix cache (`trace "F" prefix(C)`) starts from: each corpus turn's
    blocks as dense ids (0 .. distinct - 1) with their offsets, and the LRU list's links per id,
    none resident (prev -2)."""
    if corpus.blocks is None:
        raise SqError(f"trace {corpus.path}: a prefix cache needs the blocks' content ids (hash_ids), "
                      f"and this trace has none", phase="run",
                      notes=("help: Mooncake and Qwen Bailian traces record them",))
    distinct, dense = np.unique(corpus.blocks, return_inverse=True)
    prev = np.full(len(distinct), -2, np.int64)
    return (np.ascontiguousarray(dense.astype(np.int64)), np.ascontiguousarray(corpus.block_offset),
            prev, np.full(len(distinct), -1, np.int64))


def hit_share(records: Records, capacity: float = math.inf) -> tuple[int, int]:
    """(blocks found resident, prompt blocks) over the whole trace."""
    hits, sizes = leading_hits(records, capacity)
    return int(hits.sum()), int(sizes.sum())

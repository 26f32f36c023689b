"""sq.traces.prefix: a prefix cache shared across requests by content id (Mooncake / Bailian hash_ids).

The shipped slice of Mooncake's conversation trace (its first 2000 requests) against an independent
count with json and a set; the full trace's figure (105,710 of 288,500 = 0.3664, issue 25) is the
same computation on the whole file, which the repository does not carry (README beside the slice)."""
from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

import sq
from sq.errors import SqError
from sq.traces.prefix import hit_share, leading_hits

SLICE = Path(__file__).resolve().parents[2] / "examples" / "replay" / "mooncake" / "conversation_first2000.jsonl.gz"


def test_unbounded_cache_on_the_slice():
    seen, hits, total = set(), 0, 0
    with gzip.open(SLICE, "rt") as f:
        for line in f:
            blocks = json.loads(line)["hash_ids"]
            k = 0
            while k < len(blocks) and blocks[k] in seen:
                k += 1
            hits, total = hits + k, total + len(blocks)
            seen.update(blocks)
    assert hit_share(sq.read_trace(SLICE)) == (hits, total) == (15771, 54559)


def test_bounded_cache_hits_fall_with_capacity():
    records = sq.read_trace(SLICE)
    shares = [hit_share(records, c)[0] for c in (0, 1000, 5000, 20000, 50000, math.inf)]
    assert shares[0] == 0 and shares == sorted(shares) and shares[-1] == 15771
    distinct = len(set(records.hash_ids.tolist()))
    assert hit_share(records, distinct)[0] == 15771


def test_lru_by_hand(tmp_path):
    rows = [[1, 2, 3], [1, 2, 4], [5, 6], [1, 2, 3], [7, 1]]
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps({"timestamp": i, "input_length": 512 * len(b), "output_length": 1,
                                        "hash_ids": b}) + "\n" for i, b in enumerate(rows)))
    records = sq.read_trace(path)
    # capacity 4: after request 2 the cache holds 1 2 4 5 6 -> 2 4 5 6 ... request 3 finds no leading 1
    hits, sizes = leading_hits(records, 4)
    assert hits.tolist() == [0, 2, 0, 0, 0] and sizes.tolist() == [3, 3, 2, 3, 2]
    hits, _ = leading_hits(records, math.inf)
    assert hits.tolist() == [0, 2, 0, 3, 0]        # [7, 1]: 7 is new, so nothing leads


def test_formats_without_blocks_say_so(tmp_path):
    path = tmp_path / "v.csv"
    path.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n0,1,1\n")
    with pytest.raises(SqError, match="has no hash_ids"):
        hit_share(sq.read_trace(path))


def _run_prefix(capacity: str, trace=SLICE, extra: str = ""):
    from sq import _engine
    from sq.lower.lowering import lower
    source = f"""
    run {{ horizon 1e6; }}
    workload {{ arrive replay; trace "{trace}" prefix({capacity}); {extra} }}
    session {{ turn; observe hit = hit_blocks; observe blocks = prompt_blocks; }}
    """
    raw = _engine.run(lower(sq.compile(source=source).to_dict(exact=True)))
    return [o.samples for o in raw.observes]


@pytest.mark.parametrize("capacity", ["inf", "5000", "0", "20000"])
def test_a_run_shares_the_cache_as_the_trace_analysis_does(capacity):
    """`trace "F" prefix(C)`: replayed in arrival order, each request's `hit_blocks` is what the
    trace analysis (sq.traces.prefix.leading_hits) finds, request by request."""
    records = sq.read_trace(SLICE)
    hits, sizes = _run_prefix(capacity)
    want_hits, want_sizes = leading_hits(records, float(capacity))
    assert (np.diff(records.arrival) >= 0).all()     # file order is arrival order: samples line up
    assert len(hits) == len(records)
    assert hits.tolist() == want_hits.tolist() and sizes.tolist() == want_sizes.tolist()
    if capacity == "inf":
        assert (hits.sum(), sizes.sum()) == (15771, 54559)


def test_prefix_cache_errors(tmp_path):
    csv_trace = tmp_path / "v.csv"
    csv_trace.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n0,1,1\n")
    with pytest.raises(SqError, match="has none"):
        _run_prefix("inf", csv_trace)
    with pytest.raises(SqError, match="needs a capacity C >= 0"):
        _run_prefix("-1")


def test_programs_without_prefix_keep_their_ir():
    d = sq.compile(source=f'run {{ horizon 1; }} workload {{ arrive replay; trace "{SLICE}"; }} '
                          'session { }').to_dict()
    assert "trace_prefix" not in d and "hit_blocks" not in d["attrs"]
    d = sq.compile(source=f'run {{ horizon 1; }} workload {{ arrive replay; trace "{SLICE}" prefix(10); }} '
                          'session { }').to_dict()
    assert d["trace_prefix"] == 10 and d["attrs"][-2:] == ["hit_blocks", "prompt_blocks"]
    from sq.ir import Program
    assert Program.from_json(json.dumps(d)).to_dict() == d

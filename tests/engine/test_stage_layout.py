"""Stage's quiet-path fields sit in the lines its comment (sq/engine/_state.pxd) names.

With R replicas a step stage's record is touched once in ~R events, after the other replicas'
work evicted it: each 64-byte line the quiet repeat reads is a miss (benchmarks/README.md,
layout14). A field added among them, or a type that grows, moves them across lines without any
result changing; this holds the layout the comment describes to the compiled one.
"""
from sq import _engine

LINE = 64


def lines(fields, names):
    """The 64-byte lines the named fields span."""
    out = set()
    for name in names:
        offset, size = fields[name]
        out.update(range(offset // LINE, (offset + size - 1) // LINE + 1))
    return out


def test_stage_is_whole_lines_and_kept_plan_one():
    layout = _engine.stage_layout()
    assert layout["stage"] % LINE == 0 and layout["stage"] == 12 * LINE
    assert layout["kept_plan"] == LINE


def test_the_quiet_repeats_fields_fill_the_first_second_fourth_and_fifth_lines():
    f = _engine.stage_layout()["fields"]
    first = ["iter_epoch", "quiet", "assigned", "na", "iterations", "iter_decodes", "inflight",
             "plan_kept", "iter_kind", "cost_repeats"]
    assert lines(f, first) == {0}
    assert lines(f, ["decode_only", "decodes", "itl.n", "itl.total"]) == {1}
    assert f["itl.n"][0] == LINE + 48                              # the histogram 48 bytes into the second
    assert lines(f, ["itl.low", "itl.top", "itl.cells"]) == {2}    # its buckets: the third, unread by a repeat
    assert lines(f, ["itl.nk", "itl.last_gap", "itl.last_cell"]) == {3}
    assert lines(f, ["budget_k", "decode_batch", "decode_step", "budget_use", "batch"]) == {3, 4}
    read = [name for name in f if name != "kind"]
    assert lines(f, read) == {0, 1, 2, 3, 4}                         # five lines, the third unread
    assert f["kind"][0] == f["batch"][0] + f["batch"][1]             # then what the quiet repeats do not read

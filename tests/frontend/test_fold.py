"""One constant folder (sq/frontend/fold.py): the parser's array sizes and the linker's `let` values
are the same walk, so a size folded from a `let` is the value that `let` links to."""
from __future__ import annotations

import sq

# `sum` over one term of -0 is -0 (the written-out term), so 1/z is -inf and n is 3; the parser
# once started its sums from +0 and sized `s` with 2 members while `n` linked to 3.
SIGNED_ZERO = """\
let z = sum i in 1 (-0);
let n = (1 / z > 0) ? 2 : 3;
stage s[n] : delay;
run { horizon 10; }
workload { arrive poisson(1); }
session { run s[n - 1] (1); }
"""


def test_a_size_folded_from_a_let_is_its_linked_value():
    ir = sq.compile(source=SIGNED_ZERO).to_dict()
    assert len(ir["stages"]) == 3
    run = ir["blocks"][ir["session"]][0]["Run"]
    assert run["stage"]["index"] == {"Num": 2.0}     # s[n - 1]: in range, n linked to 3


def test_min_and_max_aggregates_fold_alike():
    # a guard for the one folder's aggregates (passed before the fold was shared, too)
    source = SIGNED_ZERO.replace("sum i in 1 (-0)", "max i in 3 (i - 2)").replace("(1 / z > 0) ? 2 : 3", "z + 3")
    ir = sq.compile(source=source).to_dict()
    assert len(ir["stages"]) == 3

"""`--set` of a `let` that sizes a pool or stage array (issue 9; docs/differences.md).

pyserq 0.1.2 refuses it ("affects an array size resolved during parsing"); sq
folds the size from the set value, so the program must be exactly the one with
the value written into its `let`: the same report as sq gives for that edited
source, and (with pyserq installed) the same IR and report as pyserq gives.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import sq
from tests.helpers.oracle import first_difference, needs_reference, normalise_ir, reference, report_differences
from sq.errors import SqError

pyserq = reference()

ROOT = Path(__file__).resolve().parents[2]
REPLICA = ROOT / "examples" / "multi-turn" / "replica.sq"

DERIVED = """\
let N = 2;
let M = N * 2 - 1;
pool kv[N] { cap 100; }
stage s[M] : fifo(1);
run { horizon 200; warmup 10; }
workload { arrive poisson(1); }
session {
  choose i in M by (queue(s[i]), i);
  hold kv[N - 1] (10) { run s[i] (~exp(1)); }
  observe r = now;
}
"""


def _edited(tmp_path, source: str, name: str, value) -> Path:
    edited, n = re.subn(rf"^let {name} = [^;]*;", f"let {name} = {value};", source, flags=re.M)
    assert n == 1
    path = tmp_path / "edited.sq"
    path.write_text(edited)
    return path


@pytest.mark.parametrize("value, written", [(6, 6), ("2 * 3 + 1", 7), (1, 1), (4.0, 4)])
def test_replicas_set_equal_the_edited_source_under_pyserq(tmp_path, value, written):
    settings = {"horizon": 60.0, "warmup": 10.0, "seed": 5}
    mine = sq.compile(REPLICA, sets={"R": value}, **settings)
    path = _edited(tmp_path, REPLICA.read_text(), "R", written)
    assert len([s for s in mine.stages if s.name == "engine"]) == written
    _same_program(mine, sq.compile(path, **settings), lambda: pyserq.compile(path=str(path), **settings))


def _same_program(mine, written, ref):
    """The set program is the edited source's: the same IR and report in sq, bit for bit, and
    with pyserq installed the IR pyserq compiles and its report (to 1e-9)."""
    assert mine.to_dict() == written.to_dict()
    report = sq.run(mine).to_json()
    assert report == sq.run(written).to_json()
    if pyserq is not None:
        ref = ref()
        assert first_difference(normalise_ir(json.loads(ref.to_json())), normalise_ir(mine.to_dict())) is None
        assert report_differences(json.loads(report), json.loads(pyserq.run(ref).json())) == []


def test_a_size_derived_from_a_set_let(tmp_path):
    mine = sq.compile(source=DERIVED, sets={"N": 3})
    edited = _edited(tmp_path, DERIVED, "N", 3).read_text()
    assert [s.index for s in mine.stages] == [0, 1, 2, 3, 4]
    _same_program(mine, sq.compile(source=edited), lambda: pyserq.compile(source=edited))


@needs_reference
def test_pyserq_refuses_what_sq_now_accepts():
    with pytest.raises(BaseException, match="affects an array size resolved during parsing"):
        pyserq.compile(source=DERIVED, sets={"N": 3})


@pytest.mark.parametrize("value, phrase", [(0, "array size must be a positive integer, found 0"),
                                           (2.5, "array size must be a positive integer, found 2.5"),
                                           ("nope", "array size must be a positive integer or a `let`")])
def test_a_bad_size_is_refused_where_the_size_is_used(tmp_path, value, phrase):
    with pytest.raises(SqError) as err:
        sq.compile(source=DERIVED, sets={"N": value})
    assert phrase in err.value.message and err.value.line == 3
    assert f"note: --set N={value}" in str(err.value)
    if pyserq is not None and not isinstance(value, str):  # 0.1.2 refuses the edited source in the same words
        with pytest.raises(BaseException, match=re.escape(phrase)):
            pyserq.compile(source=_edited(tmp_path, DERIVED, "N", value).read_text())


def test_other_set_refusals_are_unchanged():
    with pytest.raises(SqError, match="unknown --set constant `R`"):
        sq.compile(source=DERIVED, sets={"R": 3})
    with pytest.raises(SqError, match="the value is NaN"):
        sq.compile(ROOT / "examples" / "single-turn" / "mmc.sq", sets={"lam": float("nan")})


def test_a_sweep_over_replicas(tmp_path):
    result = sq.sweep(str(REPLICA), {"R": [2, 3]}, [1], executor="serial", horizon=40.0, warmup=10.0)
    assert "stage.engine[2].util" not in result.records[0] and "stage.engine[2].util" in result.records[1]

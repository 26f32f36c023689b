"""A study's runs as columns (issue 24, "one plan per study"): `sq.results.runs.RunTable`.

The sweep keeps one numpy array per metric instead of a dict per run: its bytes per run are
bounded here, its dtypes pinned, and every table and file it writes is checked against text
and numbers worked out by hand from records written out below (not copied from the code).
"""
from __future__ import annotations

import gc
import json
import math
import tracemalloc

import numpy as np
import pytest

from sq.results.runs import RunTable
from sq.study import sweep as study

MM1 = """
let lam = 0.5;
let c = 1;
stage s : fifo(c);
run { horizon 5; }
workload { arrive poisson(lam); }
session { set t0 = now; run s (~exp(1)); observe wait = now - t0; }
"""

ARRAY = """
let k = 2;
stage s[k] : fifo(1);
run { horizon 20; warmup 2; }
workload { arrive poisson(1); }
session { choose i in k by (queue(s[i]), i); set t0 = now; run s[i] (~exp(1)); observe wait = now - t0; }
"""


@pytest.fixture
def mm1(tmp_path):
    path = tmp_path / "mm1.sq"
    path.write_text(MM1)
    return str(path)


def _held(program, seeds) -> tuple[study.Sweep, int]:
    """A sweep and the bytes still allocated once it is made (what it holds, plus any cache)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = study.sweep(program, {"lam": [0.3, 0.5]}, seeds, executor="serial", progress=False)
        gc.collect()
        return result, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_a_sweep_holds_under_a_kilobyte_per_run(mm1):
    """M/M/1's 25 metrics: a dict per run held 2.2 KiB; a column per metric holds 8 bytes a
    cell (about 220 bytes a run). The difference of two sweeps' sizes leaves out what does not
    grow with the runs (a point's lowered program, the caches)."""
    _held(mm1, [1, 2])                                   # the caches filled once
    small, a = _held(mm1, list(range(1, 11)))
    large, b = _held(mm1, list(range(1, 211)))
    runs = len(large.table) - len(small.table)
    assert runs == 400 and len(large.metrics) == 25
    assert (b - a) / runs < 1024, f"{(b - a) / runs:.0f} bytes per run"


def test_the_columns_have_their_values_dtypes(tmp_path):
    path = tmp_path / "array.sq"
    path.write_text(ARRAY)
    swept = study.sweep(str(path), {"k": [2, 1]}, [1, 2], executor="serial", progress=False)
    table = swept.table
    assert table.point.dtype == np.int32 and table.point[:len(table)].tolist() == [0, 0, 1, 1]
    assert table.points == [(2,), (1,)]
    for name in ("seed", "wait.count", "arrivals", "ended", "events", "warnings", "stage.s[0].iters"):
        assert table.columns[name].dtype == np.int64, name
    for name in ("wait.mean", "wait.p99", "stage.s[1].util", "growth", "wall_s"):
        assert table.columns[name].dtype == np.float64, name
    # s[1] only where k = 2: absent, not zero, in the rows of k = 1
    values, absent = table.masked("stage.s[1].util")
    assert absent.tolist() == [False, False, True, True]
    assert "stage.s[1].util" in swept.records[0] and "stage.s[1].util" not in swept.records[2]
    pd = pytest.importorskip("pandas")
    runs = swept.runs
    assert runs["seed"].dtype == np.int64 and runs["wait.count"].dtype == np.int64 and runs["k"].dtype == np.int64
    assert runs["stage.s[1].iters"].dtype == np.float64 and math.isnan(runs["stage.s[1].iters"][3])
    pa = pytest.importorskip("pyarrow")
    arrow = table.arrow(swept._columns())
    assert arrow.schema.field("stage.s[1].iters").type == pa.int64()
    assert arrow.column("stage.s[1].iters").null_count == 2 and arrow.schema.field("seed").type == pa.int64()
    # rebuilt from its records, the table writes the same files
    again = study.Sweep(swept.names, swept.records, swept.provenance)
    assert again.to_json() == swept.to_json() and again.records == swept.records
    assert pd.DataFrame.equals(again.runs, runs)


def test_a_column_keeps_every_value_as_given():
    """A seed past 2**63 - 1 makes the column uint64; a column given an int and a float, or
    text, becomes object, so each value reads back as it was (2 stays 2, not 2.0)."""
    table = RunTable.of([{"x": "a", "seed": 1, "m": 2}, {"x": "b", "seed": 2 ** 64 - 1, "m": 2.5}], ["x"])
    assert table.columns["seed"].dtype == np.uint64 and table.columns["m"].dtype == object
    assert list(table.records()) == [{"x": "a", "seed": 1, "m": 2}, {"x": "b", "seed": 2 ** 64 - 1, "m": 2.5}]
    assert [type(v) for v in table.values("m")] == [int, float]
    grown = RunTable(["x"])
    for k in range(100):                                 # past the first capacity, doubled as it fills
        grown.add_record({"x": k % 3, "seed": k, "m": float(k)})
    assert len(grown) == 100 and grown.values("m") == [float(k) for k in range(100)]
    assert [rows.tolist()[:2] for rows in grown.groups().values()] == [[0, 3], [1, 4], [2, 5]]


# -- a sweep's tables, worked out by hand ----------------------------------------------

# two points, two seeds; the point lam=6 lacks `stage.b.util` (fewer array members)
RECORDS = [
    {"lam": 5, "seed": 1, "w.mean": 1.0, "w.count": 10, "stage.b.util": 0.5, "warnings": 0, "arrivals": 10, "ended": 10},
    {"lam": 5, "seed": 2, "w.mean": 3.0, "w.count": 30, "stage.b.util": 0.25, "warnings": 0, "arrivals": 30, "ended": 30},
    {"lam": 6, "seed": 1, "w.mean": 2.0, "w.count": 20, "warnings": 1, "arrivals": 20, "ended": 20},
    {"lam": 6, "seed": 2, "w.mean": float("nan"), "w.count": 0, "warnings": 0, "arrivals": 9, "ended": 4},
]
T_975_1 = math.tan(math.pi * (0.975 - 0.5))     # Student's t with one degree of freedom is Cauchy


def test_the_tables_of_a_sweep_are_worked_out_by_hand(tmp_path):
    swept = study.Sweep(["lam"], RECORDS)
    assert swept.metrics == ["w.mean", "w.count", "stage.b.util", "warnings", "arrivals", "ended"]
    first, second = swept.summary_records()
    # lam=5: w.mean 1 and 3: mean 2, sd sqrt(2), half-width t·sqrt(2)/sqrt(2)
    assert first["n"] == 2 and first["unsteady"] == 0 and first["w.mean"] == 2.0
    assert first["w.mean±"] == pytest.approx(T_975_1, rel=1e-12)
    assert first["stage.b.util"] == 0.375 and first["stage.b.util±"] == pytest.approx(0.125 * T_975_1, rel=1e-12)
    # lam=6: a warning, and 4 of 9 arrivals ended: both runs unsteady; no b at this point
    assert second["unsteady"] == 2 and math.isnan(second["stage.b.util"]) and math.isnan(second["w.mean"])
    assert second["w.count"] == 10.0 and second["w.count±"] == pytest.approx(10 * T_975_1, rel=1e-12)
    comparison = swept.compare(5, 6, "w.count")             # (20 - 10, 0 - 30): mean -10, sd 20√2
    assert comparison.n == 2 and comparison.difference == -10.0
    assert comparison.half_width == pytest.approx(20.0 * T_975_1, rel=1e-12)
    swept.to_csv(tmp_path / "runs.csv")
    provenance, table = (tmp_path / "runs.csv").read_text().split("\n", 1)
    assert provenance.startswith("# sq.provenance: ") and table == (
        "lam,seed,w.mean,w.count,stage.b.util,warnings,arrivals,ended\n"
        "5,1,1.0,10,0.5,0,10,10\n5,2,3.0,30,0.25,0,30,30\n6,1,2.0,20,,1,20,20\n6,2,nan,0,,0,9,4\n")
    lines = swept.to_json().splitlines()[1:]       # after the provenance's object
    assert lines[0] == ('{"lam": 5, "seed": 1, "w.mean": 1.0, "w.count": 10, "stage.b.util": 0.5, '
                        '"warnings": 0, "arrivals": 10, "ended": 10}')
    assert lines[3] == ('{"lam": 6, "seed": 2, "w.mean": null, "w.count": 0, "stage.b.util": null, '
                        '"warnings": 0, "arrivals": 9, "ended": 4}')
    assert json.loads(swept.to_json(lines=False))[1 + 2]["stage.b.util"] is None
    assert swept.records[2] == RECORDS[2] and list(swept.records[0]) == list(RECORDS[0])
    pd = pytest.importorskip("pandas")
    runs = swept.runs
    assert runs["w.count"].dtype == np.int64 and runs["stage.b.util"].tolist()[:2] == [0.5, 0.25]
    assert math.isnan(runs["stage.b.util"][2]) and runs["lam"].tolist() == [5, 5, 6, 6]
    frame = swept.summary(flat=False)
    assert frame[("stage.b.util", "n")].tolist() == [2, 0] and frame.index.tolist() == [5, 6]
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    swept.to_parquet(tmp_path / "runs.parquet")
    back = pq.read_table(tmp_path / "runs.parquet")
    assert back.column("stage.b.util").to_pylist() == [0.5, 0.25, None, None]
    assert str(back.schema.field("w.count").type) == "int64"

"""One face (issue 24): one verb per conversion on Report, Sweep and Capacity, the summary's
shapes, and the docs naming module paths that exist."""
from __future__ import annotations

import importlib
import json
import math
import re
from pathlib import Path

import pytest

import sq

ROOT = Path(__file__).resolve().parents[2]
MMC = str(ROOT / "examples" / "single-turn" / "mmc.sq")
SHORT = {"horizon": 300.0, "warmup": 30.0}


@pytest.fixture(scope="module")
def swept():
    return sq.sweep(MMC, {"lam": [4, 5], "c": [8, 9]}, [1, 2, 3], executor="serial", **SHORT)


@pytest.fixture(scope="module")
def searched():
    return sq.capacity(MMC, "lam", "wait.mean <= 0.05", lo=4.0, hi=7.0, tol=0.2, seeds=[1, 2],
                       executor="serial", settle=1, **SHORT)


def test_every_to_json_returns_text_without_a_path_and_writes_with_one(tmp_path, swept, searched):
    report = sq.run(sq.compile(MMC), seed=3, **SHORT)
    for who, obj, kwargs in (("report", report, {}), ("sweep", swept, {}), ("capacity", searched, {})):
        text = obj.to_json(**kwargs)
        assert isinstance(text, str) and text
        path = tmp_path / f"{who}.json"
        assert obj.to_json(path, **kwargs) is None
        assert path.read_text() == text, who
    # the old forms keep their meaning
    assert report.to_json(True) == report.to_json(provenance=True) != report.to_json()
    assert searched.to_json(4) == json.dumps(searched.to_dict(), indent=4)
    assert json.loads(swept.to_json(lines=False)) == [json.loads(line) for line in swept.to_json().splitlines()]


def test_a_write_that_fails_names_the_file(tmp_path, searched):
    with pytest.raises(sq.SqError, match="Capacity.to_json: cannot write"):
        searched.to_json(tmp_path / "no such folder" / "cap.json")


def test_to_pandas_everywhere(swept, searched):
    pytest.importorskip("pandas")
    runs = swept.to_pandas()
    assert list(runs.columns[:3]) == ["lam", "c", "seed"] and len(runs) == 12
    frame = searched.to_pandas()
    assert len(frame) == len(searched.records) and {"lam", "seed", "decision"} <= set(frame.columns)
    assert set(sq.run(sq.compile(MMC), seed=1, **SHORT).to_pandas()) == {"observes", "gauges", "stages", "pools"}


def test_to_xarray_is_the_grid_by_name_and_seed(swept):
    pytest.importorskip("xarray")
    data = swept.to_xarray()
    assert list(data["wait.mean"].dims) == ["lam", "c", "seed"]
    assert data.sizes == {"lam": 2, "c": 2, "seed": 3}
    assert list(data["c"].values) == [8, 9] and list(data["seed"].values) == [1, 2, 3]
    assert set(data.data_vars) == set(swept.metrics)
    for r in swept.records:      # every run in its own cell
        cell = data["wait.mean"].sel(lam=r["lam"], c=r["c"], seed=r["seed"]).item()
        assert cell == r["wait.mean"]
    assert json.loads(data.attrs["provenance"])["seeds"] == [1, 2, 3]


def test_to_xarray_refuses_a_grid_with_a_run_missing(swept):
    pytest.importorskip("xarray")
    partial = sq.Sweep(swept.names, swept.records[:-1], swept.provenance)
    with pytest.raises(sq.SqError, match=r"to_xarray: the grid is not full: no run at lam=5, c=9, seed=3 \(11 of 12"):
        partial.to_xarray()


def test_the_summary_wide_and_long(swept):
    pytest.importorskip("pandas")
    flat = swept.summary()
    wide = swept.summary(flat=False)
    long = swept.summary(long=True)
    assert list(wide.index.names) == ["lam", "c"] and list(wide.index) == [(4, 8), (4, 9), (5, 8), (5, 9)]
    assert list(wide.columns.names) == ["metric", "stat"]
    assert list(wide["wait.mean"].columns) == ["mean", "half_width", "n"]
    # the same numbers as the flat table's
    for i, (lam, c) in enumerate(wide.index):
        row = flat[(flat["lam"] == lam) & (flat["c"] == c)].iloc[0]
        for m in swept.metrics:
            for got, want in ((wide.loc[(lam, c), (m, "mean")], row[m]), (wide.loc[(lam, c), (m, "half_width")], row[m + "±"])):
                assert got == want or (math.isnan(got) and math.isnan(want)), (m, lam, c)
            assert wide.loc[(lam, c), (m, "n")] == 3
    assert list(long.columns) == ["lam", "c", "metric", "mean", "half_width", "n"]
    assert len(long) == 4 * len(swept.metrics)
    pick = long[(long["lam"] == 5) & (long["c"] == 9) & (long["metric"] == "wait.mean")].iloc[0]
    assert pick["mean"] == wide.loc[(5, 9), ("wait.mean", "mean")]


def test_a_summary_of_one_name_has_a_plain_index():
    pytest.importorskip("pandas")
    one = sq.sweep(MMC, {"lam": [4, 5]}, [1, 2], executor="serial", **SHORT)
    wide = one.summary(flat=False)
    assert wide.index.name == "lam" and list(wide.index) == [4, 5]


def test_the_api_docs_name_module_paths_that_exist():
    text = (ROOT / "docs" / "api.md").read_text()
    named = set(re.findall(r"`(sq(?:\.[A-Za-z_]\w*){2,})", text))
    assert named, "the reader found nothing to check"
    for path in sorted(named):
        module, _, attr = path.rpartition(".")
        while module:
            try:
                found = importlib.import_module(module)
                break
            except ModuleNotFoundError:
                module, _, parent = module.rpartition(".")
                attr = f"{parent}.{attr}"
        else:
            pytest.fail(f"docs/api.md names `{path}`: no such module")
        for part in attr.split("."):
            assert hasattr(found, part), f"docs/api.md names `{path}`, which does not exist"
            found = getattr(found, part)

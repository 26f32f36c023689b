"""A study's runs as a table: one numpy array per column.

A run's record (`sq.results.metrics.report_metrics`: {metric: number}) is one row. Kept as a
dict per run, a study paid for every key slot and every boxed float again in every run
(2.2 KiB per run of M/M/1's 25 metrics, 47 KiB of replica.sq's 431 at R = 16); here a cell
is 8 bytes, and pandas and Arrow take the arrays as they are.

The layout, defined here once:

* `names`: the swept `let`s. Their values are a point's, not a run's: each distinct point
  is kept once (`points`) and a row holds its index (`point`, int32);
* every other column (`seed`, the metrics, and what a study adds: `horizon_factor`,
  `decision`) is one array, its dtype the values' own: int64 for whole numbers (uint64 for a
  seed past 2**63 - 1), float64 for the rest of the numbers, object for anything else (text);
  a column given values of two kinds becomes object, so every value reads back as it was
  given (a count stays an int, as issue 23 made it in every table);
* a row's keys, in order: points whose arrays differ in size hold different metrics
  (`stage.engine[3].util` only where there are four), so each row names its `layout`, one of
  the distinct key tuples (`layouts`); a cell outside its row's layout is absent (NaN in
  pandas, null in Arrow and JSON, empty in CSV), not zero.

Rows are appended (the arrays grow by doubling: amortised O(1) per row) and read by column:
`values(name)` (the rows that hold it), `masked(name)` (the array and what is absent),
`frame()` / `arrow()` (pandas, Arrow), `groups()` (the rows of each point). `records()`
gives the old dict per run, for code that wants rows.
"""
from __future__ import annotations

import json

import numpy as np

MISSING = object()      # a swept name a row does not hold (a list of points naming different lets)
_INT64 = (-(1 << 63), 1 << 63)


def _kind(value) -> str:
    """The dtype a value needs: "i" int64 (a whole number in its range), "u" uint64 (past it,
    below 2**64), "f" float64, "O" anything else (text, a bool, None, a float that carries more)."""
    if isinstance(value, (bool, np.bool_)):
        return "O"
    if isinstance(value, (int, np.integer)):
        v = int(value)
        return "i" if _INT64[0] <= v < _INT64[1] else "u" if 0 <= v < 1 << 64 else "O"
    if type(value) is float or isinstance(value, np.floating):
        return "f"
    return "O"      # a float subclass too: a pooled metric's `Tail` carries its run's samples


_DTYPES = {"i": np.int64, "u": np.uint64, "f": np.float64, "O": object}


def _promoted(column: np.ndarray, kind: str, negative: bool, used: int) -> np.ndarray | None:
    """The column made able to hold values of `kind` (`negative`: some are below 0), or None
    when it already can: int64 becomes uint64 for a value past 2**63 - 1 while it holds
    nothing negative; any other mixture becomes object (every value kept as given)."""
    have = column.dtype.kind
    if have == "O" or (have == kind and not (have == "u" and negative)) or (have == "u" and kind == "i"
                                                                            and not negative):
        return None
    if have == "i" and kind == "u" and not (column[:used] < 0).any():
        return column.astype(np.uint64)
    return column.astype(object)


def value_key(v):
    """A swept value as a key: a list or dict by its JSON, anything else as it is."""
    return json.dumps(v, sort_keys=True) if isinstance(v, (list, dict)) else v


def point_key(values) -> tuple:
    """How a summary groups runs: by their swept values (`value_key`; None for a name not held)."""
    return tuple(None if v is MISSING else value_key(v) for v in values)


class RunTable:
    """The runs of a study, one array per column (module docstring: the layout).

    `names` (swept), `points` (each distinct point's values, a tuple in `names` order),
    `columns` ({name: array}, in order of first appearance; rows [0, len) in use), `point`
    and `layout` (per row: its point's index; its keys' index in `layouts`).
    """

    def __init__(self, names=()):
        self.names = list(names)
        self.points: list[tuple] = []
        self._point_ids: dict = {}
        self.layouts: list[tuple[str, ...]] = []
        self._layout_ids: dict = {}
        self._holders: dict[str, np.ndarray] = {}     # column -> which layouts hold it
        self.columns: dict[str, np.ndarray] = {}
        self.point = np.zeros(0, np.int32)
        self.layout = np.zeros(0, np.int32)
        self._n = 0

    @classmethod
    def of(cls, runs, names=()) -> "RunTable":
        """`runs` as a table: a RunTable as it is, or a list of records (dicts) read row by row."""
        if isinstance(runs, RunTable):
            return runs
        table = cls(names)
        for record in runs:
            table.add_record(record)
        return table

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        return f"RunTable(names={self.names}, rows={self._n}, columns={len(self.columns)})"

    # -- adding rows -------------------------------------------------------------------
    def point_id(self, values: tuple) -> int:
        """The index of a point (its values in `names` order, MISSING where it has none), added
        when new. Points are told apart as written (5 and 5.0 are two), as their rows show them."""
        key = tuple((type(v), value_key(v)) for v in values)
        found = self._point_ids.get(key)
        if found is None:
            found = self._point_ids[key] = len(self.points)
            self.points.append(tuple(values))
        return found

    def add_record(self, record: dict) -> None:
        """Append a record {swept name: value, column: value, ...} (any keys, any order)."""
        point = self.point_id(tuple(record.get(n, MISSING) for n in self.names))
        swept = set(self.names)
        self.add(point, {k: v for k, v in record.items() if k not in swept}, tuple(record))

    def add_run(self, point: int, seed: int, metrics: dict) -> None:
        """Append a study's run: its point's index, its seed, its metrics (a worker's record)."""
        values = {"seed": seed}
        values.update(metrics)
        self.add(point, values, (*(n for n, v in zip(self.names, self.points[point]) if v is not MISSING),
                                 *values))

    def add(self, point: int, values: dict, keys: tuple) -> None:
        """Append a row: its point, its cells ({column: value}, not the swept names) and its
        keys in record order (the swept names it holds among them)."""
        row = self._grow(1)
        self.point[row] = point
        self.layout[row] = self._layout_id(keys)
        for name, value in values.items():
            kind = _kind(value)
            self._column(name, kind, kind == "i" and value < 0)[row] = value

    def extend(self, other: "RunTable", **constants) -> None:
        """Append every row of `other`, with `constants` ({column: value}) added to each, after
        its own keys."""
        if not len(other):
            return
        start = self._grow(len(other))
        end = start + len(other)
        ids = np.array([self.point_id(p) for p in other.points], np.int32)
        self.point[start:end] = ids[other.point[:len(other)]]
        extra = tuple(constants)
        layouts = np.array([self._layout_id(keys + extra) for keys in other.layouts], np.int32)
        self.layout[start:end] = layouts[other.layout[:len(other)]]
        for name, array in other.columns.items():
            values = array[:len(other)]
            kind = values.dtype.kind if values.dtype.kind in "iuf" else "O"
            self._column(name, kind, kind == "i" and bool((values < 0).any()))[start:end] = values
        for name, value in constants.items():
            kind = _kind(value)
            self._column(name, kind, kind == "i" and value < 0)[start:end] = value

    def take(self, rows) -> "RunTable":
        """The rows at `rows` (indices or a mask), in that order: a new table."""
        rows = np.flatnonzero(rows) if np.asarray(rows).dtype == bool else np.asarray(rows, np.intp)
        out = RunTable(self.names)
        out.points, out._point_ids = list(self.points), dict(self._point_ids)
        out.layouts, out._layout_ids = list(self.layouts), dict(self._layout_ids)
        out.point, out.layout = self.point[rows], self.layout[rows]
        out.columns = {name: array[rows] for name, array in self.columns.items()}
        out._n = len(rows)
        return out

    def _grow(self, count: int) -> int:
        """Room for `count` more rows (capacity doubled when full); the first new row's index."""
        start = self._n
        need = start + count
        if need > len(self.point):
            size = max(need, 2 * len(self.point), 16)
            self.point = _resized(self.point, size)
            self.layout = _resized(self.layout, size)
            self.columns = {name: _resized(array, size) for name, array in self.columns.items()}
        self._n = need
        return start

    def _column(self, name: str, kind: str, negative: bool = False) -> np.ndarray:
        """The array of `name`, made (or promoted: `_promoted`) so that values of `kind` fit."""
        column = self.columns.get(name)
        if column is None:
            column = self.columns[name] = np.zeros(len(self.point), _DTYPES[kind])
            if kind == "O":
                column[:] = None
            return column
        wider = _promoted(column, kind, negative, self._n)
        if wider is not None:
            column = self.columns[name] = wider
        return column

    def _layout_id(self, keys: tuple) -> int:
        found = self._layout_ids.get(keys)
        if found is None:
            found = self._layout_ids[keys] = len(self.layouts)
            self.layouts.append(keys)
            self._holders = {}
        return found

    # -- reading ----------------------------------------------------------------------
    def keys(self) -> list[str]:
        """Every key of any row, in order of first appearance over the rows."""
        ids = self.layout[:self._n]
        _, first = np.unique(ids, return_index=True)
        return list(dict.fromkeys(k for i in ids[np.sort(first)] for k in self.layouts[i]))

    def holds(self, name: str) -> np.ndarray:
        """Per row: whether it holds `name` (a bool array)."""
        holders = self._holders.get(name)
        if holders is None:
            holders = self._holders[name] = np.array([name in keys for keys in self.layouts], bool)
        return holders[self.layout[:self._n]] if len(holders) else np.zeros(self._n, bool)

    def swept(self, name: str) -> list:
        """Per row: the value of a swept name (None where the row has none)."""
        k = self.names.index(name)
        per_point = [None if p[k] is MISSING else p[k] for p in self.points]
        return [per_point[i] for i in self.point[:self._n].tolist()]

    def values(self, name: str, among=None) -> list:
        """The values of a column at the rows that hold it (and are in the mask `among`), in row
        order, as Python numbers (a count an int)."""
        held = self.holds(name)
        if among is not None:
            held &= among
        if name in self.names:
            return [v for v, h in zip(self.swept(name), held.tolist()) if h]
        column = self.columns.get(name)
        return [] if column is None else column[:self._n][held].tolist()

    def masked(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(the column's array over the rows, per row whether the cell is absent)."""
        column = self.columns.get(name)
        if column is None:
            return np.full(self._n, np.nan), np.ones(self._n, bool)
        return column[:self._n], ~self.holds(name)

    def records(self, keys=None):
        """Each row as a dict (its own keys, in order; only `keys` when given)."""
        lists = {name: array[:self._n].tolist() for name, array in self.columns.items()
                 if keys is None or name in keys}
        index = {n: k for k, n in enumerate(self.names)}
        for row, (p, lay) in enumerate(zip(self.point[:self._n].tolist(), self.layout[:self._n].tolist())):
            point = self.points[p]
            yield {k: point[index[k]] if k in index else lists[k][row] for k in self.layouts[lay]
                   if keys is None or k in keys}

    def groups(self) -> dict[tuple, np.ndarray]:
        """The rows of each point (by `point_key`: 5 and 5.0 are one), points in order of first
        appearance, rows in order."""
        ids = self.point[:self._n]
        seen, first = np.unique(ids, return_index=True)
        group = np.zeros(len(self.points), np.intp)
        keys: dict[tuple, int] = {}
        for p in seen[np.argsort(first)].tolist():
            group[p] = keys.setdefault(point_key(self.points[p]), len(keys))
        of_row = group[ids]
        order = np.argsort(of_row, kind="stable")
        bounds = np.cumsum(np.bincount(of_row, minlength=len(keys)))[:-1]
        return dict(zip(keys, np.split(order, bounds)))

    def frame(self, columns: list[str]):
        """A pandas DataFrame of these columns (absent cells NaN), the arrays handed over as they
        are; pandas infers each column as `DataFrame.from_records` of the records would."""
        from sq._support._optional import require  # noqa: PLC0415

        pd = require("pandas", "a study's runs")
        if not self._n:
            return pd.DataFrame.from_records([], columns=columns)
        data = {}
        for name in columns:
            if name in self.names:
                data[name] = self._swept_frame(pd, name)
                continue
            array, absent = self.masked(name)
            if array.dtype.kind == "O":
                data[name] = pd.DataFrame.from_records(
                    [{} if a else {name: v} for v, a in zip(array.tolist(), absent.tolist())], columns=[name])[name]
                data[name] = data[name].reset_index(drop=True)
            elif absent.any():
                data[name] = np.where(absent, np.nan, array.astype(np.float64))
            else:
                data[name] = array
        return pd.DataFrame(data, columns=columns)

    def _swept_frame(self, pd, name: str):
        """A swept name's column: pandas reads the distinct points, the rows take theirs."""
        k = self.names.index(name)
        points = pd.DataFrame.from_records([{} if p[k] is MISSING else {name: p[k]} for p in self.points],
                                           columns=[name])[name]
        return points.take(self.point[:self._n]).reset_index(drop=True)

    def arrow(self, columns: list[str]):
        """A pyarrow Table of these columns (absent cells null), typed as
        `pyarrow.Table.from_pylist` of the records types them."""
        from sq._support._optional import require  # noqa: PLC0415

        pa = require("pyarrow", "a study's runs")
        if not self._n:
            return pa.Table.from_pylist([])
        arrays = []
        for name in columns:
            if name in self.names:
                arrays.append(pa.array(self.swept(name)))
                continue
            array, absent = self.masked(name)
            if array.dtype.kind == "O":
                arrays.append(pa.array([None if a else v for v, a in zip(array.tolist(), absent.tolist())]))
            else:
                arrays.append(pa.array(array, mask=absent if absent.any() else None))
        return pa.Table.from_arrays(arrays, names=columns)


def _resized(array: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size, array.dtype)
    if array.dtype.kind == "O":
        out[:] = None
    out[:len(array)] = array
    return out

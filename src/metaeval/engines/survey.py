"""A lazy scores table checked in its engine (polars or DuckDB), through narwhals.

:func:`first_pass` is the first pass over a lazy table: one aggregation grouped by
``(task, metric, system)`` that returns, per group, the number of rows, the sum and
largest magnitude of the scores, how many scores are missing or not finite, how many
query ids are missing or empty, and for every other column its least and greatest
value and its missing ones (to tell task-level columns, as
:func:`metaeval.paired.effect_size.task_attributes` does). Missing or empty task,
metric and system names show up as groups of their own. Missing columns and
wrong types are found from the schema, before any data is read. Duplicate keys are
found where the keys are paired (:mod:`metaeval.paired.pushdown`), or by
:func:`validate`.

When a check fails, :func:`problems` runs a query per problem for its count and first
rows and raises the :class:`~metaeval.SchemaError` that
:func:`metaeval.validate_scores` raises on the same table in pandas, with the same
text: a lazy frame has no index, so rows are numbered from 0 in the engine's scan
order (a polars ``with_row_index``, a DuckDB ``row_number() over ()`` — the one
place narwhals needs the engine's own API: a row number without an order), which is
the pandas index of the same table collected. ``failure_cases`` holds the example
rows (at most five a problem), not every offending cell.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import SchemaError
from ..schema._columns import KEY_COLUMNS, REPLICATE, REPLICATE_DESIGN, SCORE_COLUMNS
from ..schema._failures import (
    PROBLEMS,
    dtype_line,
    duplicate_line,
    missing_column_line,
    no_rows_error,
    problem_line,
    problems_error,
)
from .frames import LazyTable, narwhals

__all__ = ["Survey", "first_pass", "problems", "validate", "ROW", "no_rows_error"]

ROW = "__metaeval_row"
"""The row number column of the error path (0-based, scan order)."""


@dataclass
class Survey:
    """What the first pass over a lazy table learns (see the module docstring); a dask
    table's first pass (:func:`metaeval.engines.dask.dask_survey`) gives the same.

    Attributes
    ----------
    frame : narwhals.LazyFrame or dask.dataframe.DataFrame
        The table as the pushed-down queries read it: integer ids cast to strings and
        a numeric ``value`` to float64, as :func:`metaeval.validate_scores` converts
        (a dask table: with every task's rows in one partition).
    groups : pandas.DataFrame or None
        One row per ``(task, metric, system)``: ``n``, ``total`` (sum of the
        scores), ``top`` (largest |score|), and per extra column ``c`` the columns
        ``c:min``, ``c:max``, ``c:missing`` (None for a dask table, whose statistics
        are computed per partition).
    tasks, metrics, systems : numpy.ndarray
        The names in the in-memory order: an Enum's categories (those with rows),
        else sorted.
    extra : list of str
        The table's other columns (task-level candidates).
    shuffled : bool
        A dask table was shuffled on ``task`` (a task had rows in two partitions).
    """

    frame: Any
    groups: pd.DataFrame | None
    tasks: np.ndarray
    metrics: np.ndarray
    systems: np.ndarray
    extra: list[str] = field(default_factory=list)
    shuffled: bool = False

    def attributes(self) -> pd.DataFrame:
        """The extra columns constant within every task, by task (as
        :func:`metaeval.paired.effect_size.task_attributes`, which takes pandas)."""
        if not self.extra:
            return pd.DataFrame()
        g = self.groups
        assert g is not None
        kept: dict[str, pd.Series] = {}
        for col in self.extra:
            if f"{col}:min" not in g.columns:  # a type without an order: not task-level
                continue
            by = g.groupby("task", sort=False, observed=True)
            nulls, rows = by[f"{col}:missing"].sum(), by["n"].sum()
            low, high = by[f"{col}:min"].min(), by[f"{col}:max"].max()
            constant = ((nulls == 0) & (low == high)) | (nulls == rows)
            if bool(constant.all()):
                kept[col] = low.where(nulls < rows, None if low.dtype == object else np.nan)
        if not kept:
            return pd.DataFrame()
        out = pd.DataFrame(kept)
        out.index.name = "task"
        return out


def _dtype_ok(nw: Any, dtype: Any, key: bool) -> bool | None:
    """True: fine as it is; None: converted (integer ids, numeric values); False: wrong."""
    if key:
        if dtype == nw.String or dtype == nw.Categorical or dtype == nw.Enum:
            return True
        return None if dtype.is_integer() else False
    if dtype == nw.Float64:
        return True
    return None if dtype.is_numeric() or dtype == nw.Boolean else False


def _pandas_dtype(table: LazyTable, column: str) -> str:
    """The dtype pandas gives ``column`` once collected (what its message would name)."""
    empty = table.frame.select(column).head(0)
    return str(table.collect_frame(empty)[column].dtype)


def converted(table: LazyTable) -> tuple[Any, list[str], list[str]]:
    """The table with the lossless conversions, its missing columns and its wrongly typed
    ones (from the schema alone)."""
    nw = narwhals()
    missing = [c for c in SCORE_COLUMNS if c not in table.schema]
    casts, wrong = [], []
    for col in SCORE_COLUMNS:
        if col in missing:
            continue
        ok = _dtype_ok(nw, table.schema[col], key=col != "value")
        if ok is None:
            casts.append(nw.col(col).cast(nw.String if col != "value" else nw.Float64))
        elif not ok:
            wrong.append(col)
    frame = table.frame.with_columns(*casts) if casts else table.frame
    return frame, missing, wrong


def _order(values: pd.Series, dtype: Any) -> np.ndarray:
    """Names in the in-memory order: an Enum's categories with rows, else sorted."""
    nw = narwhals()
    found = {str(v) for v in values}
    if dtype == nw.Enum:
        return np.array([c for c in dtype.categories if c in found], dtype=object)
    return np.array(sorted(found), dtype=object)


def first_pass(table: LazyTable) -> Survey:
    """The first pass over a lazy scores table (computed once, then kept in
    ``table.cache``); a :class:`~metaeval.SchemaError` (the one
    :func:`metaeval.validate_scores` raises in pandas) when a check fails."""
    if "survey" not in table.cache:
        table.cache["survey"] = _survey(table)
    return table.cache["survey"]


def _survey(table: LazyTable) -> Survey:
    nw = narwhals()
    if len(set(table.columns)) != len(table.columns):  # pragma: no cover - engines refuse
        raise SchemaError("The scores table has duplicated column names; rename them.")
    frame, missing, wrong = converted(table)
    if missing or wrong:
        # an empty table is "no rows" first, as in pandas, whatever types its columns got
        # (an empty pandas column of objects comes to polars as strings, to Arrow and
        # DuckDB as the null type): one count, on the error path only
        if not int(table.collect_frame(table.frame.select(nw.len().alias("n")))["n"].iloc[0]):
            raise no_rows_error(missing)
        raise problems(table)
    extra = [c for c in table.columns if c not in (*SCORE_COLUMNS, REPLICATE, REPLICATE_DESIGN)]
    value, query = nw.col("value"), nw.col("query")
    if table.schema["query"] != nw.String and not table.schema["query"].is_integer():
        query = query.cast(nw.String)  # a categorical: compared as names
    flags = [
        nw.when(value.is_null()).then(nw.lit(1)).alias("_missing"),
        nw.when(~value.is_finite()).then(nw.lit(1)).alias("_nonfinite"),
        nw.when(query.is_null() | (query == "")).then(nw.lit(1)).alias("_query"),
    ]
    aggs = [
        nw.len().alias("n"),
        value.sum().alias("total"),
        value.abs().max().alias("top"),
        nw.col("_missing").count().alias("_missing"),
        nw.col("_nonfinite").count().alias("_nonfinite"),
        nw.col("_query").count().alias("_query"),
    ]
    for i, col in enumerate(extra):
        dtype = table.schema[col]
        if not _orderable(nw, dtype):
            continue
        gone = nw.col(col).is_null()
        if dtype.is_float():
            gone = gone | nw.col(col).is_nan()
        flags.append(nw.when(gone).then(nw.lit(1)).alias(f"_x{i}"))
        aggs += [
            nw.col(col).min().alias(f"{col}:min"),
            nw.col(col).max().alias(f"{col}:max"),
            nw.col(f"_x{i}").count().alias(f"{col}:missing"),
        ]
    keys = ["task", "metric", "system"]
    query_frame = frame.with_columns(*flags).group_by(*keys).agg(*aggs)
    groups = table.collect_frame(query_frame)
    if groups.empty:
        raise no_rows_error([])
    for col in keys:
        if isinstance(groups[col].dtype, pd.CategoricalDtype):
            groups[col] = groups[col].astype(object)
    bad_keys = groups[keys].isna().any(axis=1) | (groups[keys] == "").any(axis=1)
    counts = groups[["_missing", "_nonfinite", "_query"]].to_numpy()
    if bool(bad_keys.any()) or bool(counts.any()):
        raise problems(table)
    groups = groups.drop(columns=["_missing", "_nonfinite", "_query"])
    for col in keys:
        groups[col] = groups[col].astype(str)
    return Survey(
        frame=frame,
        groups=groups,
        tasks=_order(groups["task"], table.schema["task"]),
        metrics=_order(groups["metric"], table.schema["metric"]),
        systems=_order(groups["system"], table.schema["system"]),
        extra=extra,
    )


def _orderable(nw: Any, dtype: Any) -> bool:
    return bool(
        dtype.is_numeric()
        or dtype in (nw.String, nw.Boolean, nw.Date, nw.Categorical, nw.Enum)
        or dtype == nw.Datetime
    )


# ------------------------------------------------------------------ the error path
def _numbered(table: LazyTable) -> Any:
    """The table with :data:`ROW`, its rows numbered from 0 in scan order (the engine's
    own API: narwhals numbers the rows of a lazy frame only by a given order)."""
    nw = narwhals()
    native = table.native
    if table.engine == "polars":
        return nw.from_native(native.with_row_index(ROW))
    return nw.from_native(
        native.query(
            "__metaeval_source",
            f"SELECT row_number() OVER () - 1 AS {ROW}, * FROM __metaeval_source",
        )
    )


def _rows(table: LazyTable, frame: Any) -> tuple[int, list[int]]:
    """How many rows ``frame`` (a filter of the numbered table) has, and the first five."""
    nw = narwhals()
    count = int(table.collect_frame(frame.select(nw.len().alias("n")))["n"].iloc[0])
    if not count:
        return 0, []
    first = table.collect_frame(frame.select(ROW).sort(ROW).head(5))[ROW]
    return count, [int(r) for r in first]


def _duplicates(table: LazyTable, numbered: Any, keys: list[str]) -> tuple[int, list[int], tuple]:
    """Rows whose key repeats another row's: how many, the first five, the first one's key."""
    nw = narwhals()
    # missing names are equal to each other in pandas' check: the same here, joined on a
    # marker that no string holds
    marked = numbered.with_columns(
        *[nw.col(k).cast(nw.String).fill_null("\0missing").alias(f"_k_{k}") for k in keys]
    )
    marks = [f"_k_{k}" for k in keys]
    repeated = marked.group_by(*marks).agg(nw.len().alias("_count")).filter(nw.col("_count") > 1)
    rows = marked.join(repeated.select(*marks), on=marks, how="inner")
    count, first = _rows(table, rows)
    if not count:
        return 0, [], ()
    head = table.collect_frame(rows.filter(nw.col(ROW) == first[0]).select(*keys))
    key = tuple(None if pd.isna(v) else v for v in head.iloc[0].tolist())
    return count, first, key


def problems(table: LazyTable, *, duplicates: bool = True) -> SchemaError:
    """The :class:`~metaeval.SchemaError` of :func:`metaeval.validate_scores` for a lazy
    table: every problem with its count and first rows, the same lines in the same order
    as in pandas (``duplicates=False`` leaves out the duplicate-key query, for a caller
    that found none)."""
    nw = narwhals()
    _, missing, wrong = converted(table)
    numbered = _numbered(table)
    casts = []
    for col in SCORE_COLUMNS:
        if col in missing or col in wrong:
            continue
        if _dtype_ok(nw, table.schema[col], key=col != "value") is None:
            casts.append(nw.col(col).cast(nw.String if col != "value" else nw.Float64))
    numbered = numbered.with_columns(*casts) if casts else numbered
    lines: list[str] = []
    cases: list[dict[str, Any]] = []
    keys = [c for c in KEY_COLUMNS if c in table.schema and c not in wrong]
    if duplicates and keys and [c for c in KEY_COLUMNS if c in table.schema] == keys:
        count, first, key = _duplicates(table, numbered, keys)
        if count:
            lines.append(duplicate_line(count, first, keys, key))
            cases += [
                {
                    "problem": PROBLEMS["multiple_fields_uniqueness"],
                    "column": ", ".join(keys),
                    "row": r,
                    "value": None,
                }
                for r in first
            ]
    for col in missing:
        lines.append(missing_column_line(col))
        cases.append({"problem": "missing column", "column": col, "row": None, "value": col})
    for col in SCORE_COLUMNS:
        if col in missing or col in wrong:
            continue
        this = nw.col(col)
        if col == "value":
            checks = [
                ("not_nullable", this.is_null() | this.is_nan()),
                ("finite", this.abs() == float("inf")),
            ]
        else:
            name = this if table.schema[col] == nw.String else this.cast(nw.String)
            checks = [("not_nullable", this.is_null()), ("not_empty", name == "")]
        for check, condition in checks:
            count, first = _rows(table, numbered.filter(condition))
            if count:
                lines.append(problem_line(col, PROBLEMS[check], count, first))
                cases += [
                    {"problem": PROBLEMS[check], "column": col, "row": r, "value": None}
                    for r in first
                ]
    for col in wrong:
        problem = (
            "wrong type (needs float values)"
            if col == "value"
            else PROBLEMS["string_or_categorical"]
        )
        lines.append(dtype_line(col, problem, _pandas_dtype(table, col)))
        cases.append({"problem": problem, "column": col, "row": None, "value": None})
    if not lines:  # pragma: no cover - the caller saw a problem that is not there
        raise AssertionError("a lazy table's first pass and its checks disagree")
    return problems_error("scores", lines, pd.DataFrame(cases))


def validate(table: LazyTable) -> None:
    """Every check of :func:`metaeval.validate_scores`, in the engine: the first pass,
    then a count of the rows of each (task, query, system, metric) key."""
    nw = narwhals()
    found = first_pass(table)
    keys = list(KEY_COLUMNS)
    repeated = (
        found.frame.group_by(*keys)
        .agg(nw.len().alias("_count"))
        .filter(nw.col("_count") > 1)
        .select(nw.len().alias("n"))
    )
    if int(table.collect_frame(repeated)["n"].iloc[0]):
        raise problems(table)

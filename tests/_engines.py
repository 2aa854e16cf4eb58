"""A pandas scores table in every engine metaeval takes, and comparisons of results
(imported as ``from _engines import ...``; polars, pyarrow, DuckDB and narwhals needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

duckdb = pytest.importorskip("duckdb")
pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")
pytest.importorskip("narwhals")

#: The frames besides pandas: eager ones are converted once, lazy ones computed in place.
ENGINES = ("polars", "arrow", "polars-lazy", "duckdb")
LAZY = ("polars-lazy", "duckdb")


def in_engine(df: pd.DataFrame, engine: str) -> Any:
    """``df`` as a frame of ``engine`` (lazy ones over in-memory data). A pandas
    categorical becomes the engine's type with the same categories in the same order: an
    Arrow dictionary (as pyarrow converts it), a polars ``Enum`` and a DuckDB ``ENUM``
    (as ``duckdb.from_df`` converts it; ``pl.from_pandas`` and DuckDB's Arrow import would
    drop the order)."""
    if engine == "pandas":
        return df
    categories = {
        str(c): [str(v) for v in df[c].cat.categories]
        for c in df.columns
        if isinstance(df[c].dtype, pd.CategoricalDtype)
    }
    if engine == "arrow":
        return pa.Table.from_pandas(df, preserve_index=False)
    if engine in ("polars", "polars-lazy"):
        frame = pl.from_pandas(df).with_columns(
            *[pl.col(c).cast(pl.Enum(v)) for c, v in categories.items()]
        )
        return frame.lazy() if engine == "polars-lazy" else frame
    if engine == "duckdb":  # a connection of its own, kept open (duckdb < 2 closes it when
        # it is no longer referenced, under its relations)
        _CONNECTIONS.append(duckdb.connect())
        relation = _CONNECTIONS[-1].from_arrow(pa.Table.from_pandas(df, preserve_index=False))
        if categories:
            relation = relation.project(
                ", ".join(
                    f'CAST("{c}" AS ENUM({", ".join(_quoted(v) for v in categories[c])})) AS "{c}"'
                    if c in categories
                    else f'"{c}"'
                    for c in map(str, df.columns)
                )
            )
        return relation
    raise ValueError(engine)


def _quoted(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


_CONNECTIONS: list = []


def as_parquet(df: pd.DataFrame, folder: Path) -> Path:
    """``df`` written as one Parquet file per task (string keys), the common layout."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, (_, part) in enumerate(df.groupby("task", sort=True)):
        pa_table = pa.Table.from_pandas(part.reset_index(drop=True), preserve_index=False)
        import pyarrow.parquet as pq

        pq.write_table(pa_table, folder / f"task-{i:03d}.parquet")
    return folder


def assert_same(got: pd.DataFrame, ref: pd.DataFrame, *, rtol: float = 1e-12) -> None:
    """The same rows, columns, keys and attrs; numbers equal to ``rtol`` of each column's
    largest magnitude (sums added in another order differ in the last bits; a column's
    scale, not each cell's, is the yardstick: a CI bound near 0 is a difference of two
    numbers of the column's size), NaN where the reference has NaN."""
    assert list(got.columns) == list(ref.columns)
    assert len(got) == len(ref)
    assert got.attrs == ref.attrs
    numbers = [c for c in ref.columns if pd.api.types.is_numeric_dtype(ref[c])]
    others = [c for c in ref.columns if c not in numbers]
    pd.testing.assert_frame_equal(
        got[others].reset_index(drop=True), ref[others].reset_index(drop=True)
    )
    for col in numbers:
        assert pd.api.types.is_numeric_dtype(got[col]), col
        a, b = got[col].to_numpy(float), ref[col].to_numpy(float)
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=col)
        both = ~np.isnan(b)
        if both.any():
            finite = np.isfinite(b[both])
            scale = max(np.max(np.abs(b[both][finite]), initial=0.0), 1e-300)
            np.testing.assert_array_equal(a[both][~finite], b[both][~finite], err_msg=col)
            diff = np.abs(a[both][finite] - b[both][finite])
            assert diff.max(initial=0.0) <= rtol * scale, (col, diff.max(), scale)

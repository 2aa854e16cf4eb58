"""PyTerrier-style per-query results: ``name, qid, measure, value``."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import FormatError, excerpt
from ._text import read_delimited, read_text

__all__ = ["read_pyterrier"]

LAYOUT = "columns name, qid, measure, value (as pt.Experiment(..., perquery=True) writes them)"


def read_pyterrier(source: str | Path | pd.DataFrame, *, task: str = "default") -> pd.DataFrame:
    """A PyTerrier ``perquery=True`` result (a CSV file or the DataFrame) as scores.

    ``name`` becomes ``system``, ``qid`` ``query``, ``measure`` ``metric``; rows
    of PyTerrier's ``"all"`` aggregate (qid ``all``) are not per-query and make
    an error.

    Parameters
    ----------
    source : str, pathlib.Path or pandas.DataFrame
        The CSV file PyTerrier's ``Experiment(..., perquery=True)`` wrote, or the
        DataFrame it returned (columns ``name, qid, measure, value``).
    task : str, default "default"
        The ``task`` of every row (PyTerrier's result has one test collection).

    Examples
    --------
    >>> import pandas as pd
    >>> from metaeval.io import read_pyterrier
    >>> perquery = pd.DataFrame({"name": ["BM25", "BM25", "DPH", "DPH"], "qid": ["1", "2", "1", "2"],
    ...                          "measure": "map", "value": [0.3, 0.5, 0.35, 0.4]})
    >>> read_pyterrier(perquery, task="robust04")
           task query system metric  value
    0  robust04     1   BM25    map   0.30
    1  robust04     2   BM25    map   0.50
    2  robust04     1    DPH    map   0.35
    3  robust04     2    DPH    map   0.40
    """
    if isinstance(source, pd.DataFrame):
        df, path = source, Path("<DataFrame>")
        lines = np.arange(len(df)) + 2  # as if written with a header line
    else:
        path = Path(source)
        text = read_text(path)
        _, lines = read_delimited(path, text, ",", LAYOUT)
        df = pd.read_csv(
            io.StringIO(text), dtype={"qid": str, "name": str, "measure": str}, index_col=False
        )
    missing = [c for c in ("name", "qid", "measure", "value") if c not in df.columns]
    if missing:
        raise FormatError(path, 1, f"missing column(s) {missing}", LAYOUT)
    if (df["qid"].astype(str) == "all").any():
        line = int(lines[(df["qid"].astype(str) == "all").to_numpy().argmax()])
        raise FormatError(path, line, "an aggregate row (qid 'all')", "per-query rows only")
    value = pd.to_numeric(df["value"], errors="coerce")
    if value.isna().any():
        row = int(value.isna().to_numpy().argmax())
        raise FormatError(
            path, int(lines[row]), f"value {excerpt(df['value'].iloc[row])} is not a number", LAYOUT
        )
    return pd.DataFrame(
        {
            "task": task,
            "query": df["qid"].astype(str),
            "system": df["name"].astype(str),
            "metric": df["measure"].astype(str),
            "value": value.astype(float),
        }
    )

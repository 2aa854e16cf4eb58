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
    """
    if isinstance(source, pd.DataFrame):
        df, path = source, Path("<DataFrame>")
        lines = np.arange(len(df)) + 2  # as if written with a header line
    else:
        path = Path(source)
        text = read_text(path)
        _, lines = read_delimited(path, text, ",", LAYOUT)
        df = pd.read_csv(io.StringIO(text), dtype={"qid": str, "name": str, "measure": str},
                         index_col=False)  # fmt: skip
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
    return pd.DataFrame({"task": task, "query": df["qid"].astype(str), "system": df["name"].astype(str),
                         "metric": df["measure"].astype(str), "value": value.astype(float)})  # fmt: skip

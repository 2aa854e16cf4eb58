"""The scores table's columns and the checks of its key values (a leaf: imports nothing of metaeval)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "KEY_COLUMNS",
    "SCORE_COLUMNS",
    "REPLICATE",
    "REPLICATE_DESIGN",
    "JUDGE",
    "keys_of",
    "is_key_dtype",
    "non_string_keys",
    "empty_keys",
    "integer_ids_as_strings",
    "first_repeat",
]

KEY_COLUMNS = ("task", "query", "system", "metric")
"""The columns that identify one observation of a scores table."""


SCORE_COLUMNS = (*KEY_COLUMNS, "value")

REPLICATE = "replicate"
"""The optional column of a scores table that tells repeated runs of a system apart
(random seeds, checkpoints, epochs)."""

JUDGE = "judge"
"""The optional column of a scores table naming who labelled a row (a model judge, a
human): a table of labels holds one score per judge, so its key is
``(task, query, system, metric, judge)`` (see :func:`metaeval.agreement`)."""


def keys_of(columns: Sequence[Any]) -> list[str]:
    """The key of a table with these columns: ``KEY_COLUMNS`` present, and the judge.

    >>> keys_of(["task", "query", "system", "metric", "judge", "value"])
    ['task', 'query', 'system', 'metric', 'judge']
    """
    return [c for c in (*KEY_COLUMNS, JUDGE) if c in columns]


REPLICATE_DESIGN = "replicate_design"
"""The optional column that says how the runs of the ``replicate`` column relate to the
tasks, the same value on every row: ``"epochs"``, ``"crossed"`` or ``"nested"`` (see
:func:`metaeval.effects`' ``replicates=``). :func:`metaeval.io.write_scores` writes it
for a table whose design is known, so that every reader and engine reads the design
with the data (a column survives every format, reader and engine, where pandas'
``attrs`` and a Parquet file's metadata do not)."""


def is_key_dtype(dtype: Any) -> bool:
    return isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_string_dtype(dtype)


def non_string_keys(series: pd.Series) -> np.ndarray:
    """Rows of a key column whose value is present but not a string.

    Object columns and categories can hold anything: a float query id, or
    ``"1"`` and ``1`` side by side (which would print as one system). Key
    columns of another dtype are judged by their dtype alone.
    """
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        cats = series.cat.categories
        if cats.inferred_type in ("string", "empty"):
            return np.zeros(len(series), dtype=bool)
        bad = np.array([not isinstance(c, str) for c in cats], dtype=bool)
        codes = series.cat.codes.to_numpy()
        return (codes >= 0) & bad[np.maximum(codes, 0)]
    if pd.api.types.is_object_dtype(dtype) and pd.api.types.infer_dtype(
        series, skipna=True
    ) not in ("string", "empty"):
        values = series.to_numpy()
        return np.fromiter((not isinstance(v, str) for v in values), bool, len(values)) & (
            series.notna().to_numpy()
        )
    return np.zeros(len(series), dtype=bool)


def empty_keys(series: pd.Series) -> np.ndarray:
    """Rows of a (string or categorical) key column holding the empty string ``""``.

    An empty name prints as nothing and is what a missing field of a CSV file
    reads as, so it is refused like a missing value.
    """
    if isinstance(series.dtype, pd.CategoricalDtype):
        if "" not in series.cat.categories:
            return np.zeros(len(series), dtype=bool)
        return (series.cat.codes == series.cat.categories.get_loc("")).to_numpy()
    return (series == "").to_numpy(dtype=bool, na_value=False)


def integer_ids_as_strings(s: pd.Series) -> pd.Series | None:
    """Integer ids as strings (the column converted), or None when there is nothing to convert."""
    if pd.api.types.is_integer_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
        return s.astype(str)
    if (
        pd.api.types.is_object_dtype(s.dtype)
        and pd.api.types.infer_dtype(s, skipna=True) == "integer"
    ):
        return s.map(str, na_action="ignore")
    if isinstance(s.dtype, pd.CategoricalDtype) and s.cat.categories.inferred_type == "integer":
        return s.cat.rename_categories([str(c) for c in s.cat.categories])
    return None


def first_repeat(*columns: Sequence[Any]) -> tuple[int, int] | None:
    """Positions ``(first, repeat)`` of the first row whose key repeats an earlier row's.

    The key of row i is ``(columns[0][i], columns[1][i], ...)``; None when
    every key is distinct. One check for every reader and table of judgments
    and runs (a document listed twice for a query) and of scores tables (a key
    twice): it lives with the key columns, below both ``io`` and ``measures``.

    >>> first_repeat(["q1", "q1", "q2", "q1"], ["d1", "d2", "d1", "d1"])
    (0, 3)
    >>> first_repeat(["q1"], ["d1"]) is None
    True
    """
    # integer codes per column (NaN: -1, one value) hash far faster than tuples of strings
    codes = [
        pd.factorize(c if isinstance(c, pd.Series) else np.asarray(c, dtype=object))[0] + 1
        for c in columns
    ]
    sizes = [int(c.max(initial=0)) + 1 for c in codes]
    if np.prod(np.asarray(sizes, dtype=float)) < 2.0**62:  # one int64 key per row
        key = np.zeros(len(codes[0]), dtype=np.int64)
        for c, size in zip(codes, sizes, strict=True):
            key = key * size + c
        repeated = pd.Series(key).duplicated(keep="first").to_numpy()
    else:
        repeated = pd.DataFrame(dict(enumerate(codes))).duplicated(keep="first").to_numpy()
    if not repeated.any():
        return None
    repeat = int(repeated.argmax())
    same = np.logical_and.reduce([c == c[repeat] for c in codes])
    return int(same.argmax()), repeat

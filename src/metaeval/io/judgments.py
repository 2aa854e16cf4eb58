"""Judgments and runs in any form (a TREC file, a table, ``{query: {doc: value}}``, a ranx or
ir_measures object) as one checked table: :func:`as_qrels`, :func:`as_run`.

The one normaliser of judgments and runs: :func:`metaeval.ir.evaluate` and the ranx
converters (:mod:`metaeval.io.ranx`) read through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import SchemaError, excerpt
from ..schema import first_repeat
from .trec import invalid_numbers, read_qrels, read_run

__all__ = ["as_qrels", "as_run"]

QrelsLike = Any  # path, DataFrame, {qid: {doc: rel}}, ir_measures/ranx Qrels
RunLike = Any


def _from_mapping(mapping: Mapping, value: str) -> pd.DataFrame:
    for q, docs in mapping.items():
        if not isinstance(docs, Mapping):
            raise SchemaError(
                f"Cannot read a dict as {value}s: the entry of query {excerpt(q)} is a "
                f"{type(docs).__name__}, not a dict {{doc: {value}}}."
            )
    rows = [(str(q), str(d), v) for q, docs in mapping.items() for d, v in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", value])


def as_frame(obj: Any, value: str, reader) -> pd.DataFrame:
    """Judgments (``value="relevance"``) or a run (``"score"``) as a checked table
    ``query_id, doc_id, value``; a path is read by ``reader``."""
    if isinstance(obj, str | Path):
        return reader(obj)  # the readers refuse a repeated (query, document), naming the lines
    if isinstance(obj, pd.DataFrame):
        missing = [c for c in ("query_id", "doc_id", value) if c not in obj.columns]
        if missing:
            raise SchemaError(
                f"A {value} table needs columns query_id, doc_id, {value}; {missing} missing."
            )
        df = obj[["query_id", "doc_id", value]].astype({"query_id": str, "doc_id": str})
        _check_unique(df, value, "table", labels=obj.index)
        return _check_values(df, value, "table", labels=obj.index)
    if hasattr(obj, "to_dict") and callable(obj.to_dict) and not isinstance(obj, Mapping):  # ranx
        df = _from_mapping(obj.to_dict(), value)
        return _check_values(df, value, type(obj).__name__, labels=None)
    if isinstance(obj, Mapping):
        return _check_values(_from_mapping(obj, value), value, "dict", labels=None)
    try:  # an iterable of ir_measures Qrel / ScoredDoc named tuples
        df = pd.DataFrame(
            [(str(r.query_id), str(r.doc_id), getattr(r, value)) for r in obj],
            columns=["query_id", "doc_id", value],
        )
    except (TypeError, AttributeError) as err:
        raise SchemaError(
            f"Cannot read {type(obj).__name__} as {value}s: pass a TREC file path, a DataFrame "
            f"(query_id, doc_id, {value}), a dict {{query: {{doc: {value}}}}}, or a ranx/ir_measures object."
        ) from err
    _check_unique(df, value, "records", labels=df.index)
    return _check_values(df, value, "records", labels=None)


def _check_unique(df: pd.DataFrame, value: str, what: str, labels: pd.Index) -> None:
    """Refuse a document listed twice for a query (as the file readers do)."""
    found = first_repeat(df["query_id"], df["doc_id"])
    if found is not None:
        first, again = found
        raise SchemaError(
            f"The {value} {what} lists document {excerpt(df['doc_id'].iloc[again])} twice for "
            f"query {excerpt(df['query_id'].iloc[again])} (rows {excerpt(labels[first])} and "
            f"{excerpt(labels[again])}); keep one {value} per (query_id, doc_id).",
            pd.DataFrame(
                {
                    "problem": "duplicate (query_id, doc_id)",
                    "column": "doc_id",
                    "row": [labels[first], labels[again]],
                    "value": [df["doc_id"].iloc[again]] * 2,
                }
            ),
        )


def _check_values(df: pd.DataFrame, value: str, what: str, labels: pd.Index | None) -> pd.DataFrame:
    """Refuse grades that are not integers and scores that are not finite numbers.

    What :func:`metaeval.io.read_qrels` and :func:`metaeval.io.read_run` refuse in a
    file (naming the line), refused here in a table, dict or records (naming the column,
    the row, the query and the document) instead of being cut to an integer or passed on.
    """
    integer = value == "relevance"
    number, bad = invalid_numbers(df[value], integer)  # "high" -> NaN
    if not bad.any():
        return df.assign(**{value: number})
    raw = pd.isna(df[value]).to_numpy()
    problem = np.where(
        raw,
        "missing (NaN)",
        np.where(
            np.isnan(number),
            "not a number",
            np.where(np.isinf(number), "not finite", "not an integer"),
        ),
    )[bad]
    rows = np.flatnonzero(bad)
    i = int(rows[0])
    where = f", row {excerpt(labels[i])}" if labels is not None else ""
    if integer:
        advice = (
            "relevance grades are integers, as in TREC qrels (0 not relevant; 1, 2, ... more "
            "relevant): map or round the grades first (e.g. qrels['relevance'].round()) and "
            "leave out pairs without a judgment"
        )
    else:
        advice = "a run ranks documents by finite scores: leave out documents without a score"
    more = f" ({len(rows) - 1} more row(s) in `failure_cases`)" if len(rows) > 1 else ""
    raise SchemaError(
        f"Column {value!r} of the {'qrels' if integer else 'run'} {what}{where} (query "
        f"{excerpt(df['query_id'].iloc[i])}, document {excerpt(df['doc_id'].iloc[i])}): "
        f"{excerpt(df[value].iloc[i])} is {problem[0]}{more}; {advice}.",
        pd.DataFrame(
            {
                "problem": problem,
                "column": value,
                "row": labels[rows] if labels is not None else rows,
                "value": df[value].iloc[rows].to_numpy(),
            }
        ),
    )


def as_qrels(qrels: QrelsLike) -> pd.DataFrame:
    """Judgments as a DataFrame ``query_id, doc_id, relevance`` (ints).

    Parameters
    ----------
    qrels : pandas.DataFrame, dict or path
        Judgments: a frame ``query_id, doc_id, relevance``, a nested dict
        ``{query: {doc: relevance}}``, a ranx or ir_measures ``Qrels``, or a TREC qrels file.

    Raises
    ------
    metaeval.SchemaError
        When a document is judged twice for a query (a
        :class:`~metaeval.FormatError` naming the lines, for a file), or a
        relevance is not an integer (``1.7``, NaN, ``"high"``; naming the
        row, query and document; all in ``failure_cases``).

    Examples
    --------
    >>> from metaeval.io import as_qrels
    >>> as_qrels({"q1": {"d1": 1, "d2": 0}, "q2": {"d7": 2}})
      query_id doc_id  relevance
    0       q1     d1          1
    1       q1     d2          0
    2       q2     d7          2
    """
    df = as_frame(qrels, "relevance", read_qrels)
    return df.astype({"relevance": np.int64})


def as_run(run: RunLike) -> pd.DataFrame:
    """A run as a DataFrame ``query_id, doc_id, score`` (floats).

    Parameters
    ----------
    run : pandas.DataFrame, dict or path
        A ranked list: a frame ``query_id, doc_id, score``, a nested dict
        ``{query: {doc: score}}``, a ranx ``Run``, or a TREC run file.

    Raises
    ------
    metaeval.SchemaError
        When a document is ranked twice for a query (a
        :class:`~metaeval.FormatError` naming the lines, for a file), or a
        score is not a finite number (NaN, infinite, text; naming the row,
        query and document).

    Examples
    --------
    A table with integer query ids and scores (extra columns are dropped):

    >>> import pandas as pd
    >>> from metaeval.io import as_run
    >>> run = pd.DataFrame({"query_id": [1, 1, 2], "doc_id": ["d1", "d2", "d7"],
    ...                     "score": [3, 2, 5], "rank": [1, 2, 1]})
    >>> as_run(run)
      query_id doc_id  score
    0        1     d1    3.0
    1        1     d2    2.0
    2        2     d7    5.0
    >>> as_run({"q1": {"d1": 0.5, "d2": 0.9}})  # ranx's dict layout
      query_id doc_id  score
    0       q1     d1    0.5
    1       q1     d2    0.9
    """
    df = as_frame(run, "score", read_run)
    return df.astype({"score": np.float64})

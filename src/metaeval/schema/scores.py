"""Building a scores table: from a tidy table with other column names, or a wide one.

:func:`scores` (tidy, any column names, any frame), :func:`from_wide` (one column per
system or metric) and :func:`map_columns` (the renaming both use).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..engines.frames import any_frame
from ..errors import SchemaError, excerpt, quote_list
from ._columns import (
    JUDGE,
    SCORE_COLUMNS,
)
from ._columns import first_repeat as first_repeat  # io's readers and measures' checks
from .validate import validate_scores

__all__ = ["scores", "from_wide", "map_columns"]


# ------------------------------------------------------------------ column mapping
def map_columns(
    df: pd.DataFrame,
    columns: Mapping[str, str] | None = None,
    constants: Mapping[str, Any] | None = None,
    *,
    where: str = "metaeval.scores()",
) -> pd.DataFrame:
    """``df`` with its columns renamed to the standard names and constant columns added.

    ``columns`` maps a standard name (``task, query, system, metric, value``, and
    ``judge`` for a table of labels) to the table's column; ``constants`` a standard key name to the value every row takes.
    The input is not changed.
    """
    columns, constants = dict(columns or {}), dict(constants or {})
    standard = [*SCORE_COLUMNS, JUDGE]
    unknown = sorted((set(columns) | set(constants)) - set(standard))
    if unknown:
        raise SchemaError(
            f"{where}: {quote_list(unknown)} are not standard column names; map to "
            f"{quote_list(standard)}."
        )
    if "value" in constants:
        raise SchemaError(f"{where}: `value` holds the scores; it cannot be a constant.")
    both = sorted(set(columns) & set(constants))
    if both:
        raise SchemaError(
            f"{where}: {quote_list(both)} named both as a column and as a constant; pick one."
        )
    mapping = {src: dst for dst, src in columns.items()}
    missing = [src for src in mapping if src not in df.columns]
    if missing:
        keys = [mapping[src] for src in missing if mapping[src] != "value"]
        hint = ""
        if keys:
            names = ", ".join(f"{k}='...'" for k in keys)
            consts = ", ".join(f"'{k}': '...'" for k in keys)
            hint = (
                f" Name the columns that hold them ({names}), or, for a table of one "
                f"{' and one '.join(keys)}, give constants={{{consts}}}."
            )
        numeric = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])]
        if "value" in [mapping[src] for src in missing] and len(numeric) > 1:
            hint += (
                " A table with one column of scores per system is wide: "
                "metaeval.from_wide(df, ...) makes it long."
            )
        raise SchemaError(
            f"{where}: column(s) {quote_list(missing)} are not in the table; its columns are "
            f"{quote_list(list(df.columns))}.{hint}"
        )
    renamed = {src: dst for src, dst in mapping.items() if src != dst}
    taken = [c for c in renamed.values() if c in df.columns and c not in renamed]
    taken += [c for c in constants if c in df.columns and c not in renamed]
    if taken:
        raise SchemaError(
            f"{where}: the table already has column(s) {quote_list(sorted(set(taken)))}, which "
            "the mapping would create again; drop or rename them first."
        )
    bad = {
        k: v for k, v in constants.items() if not isinstance(v, str | numbers.Integral) or v == ""
    }
    if bad:
        raise SchemaError(f"{where}: constants must be non-empty strings, not {bad!r}.")
    out = df.rename(columns=renamed)
    if constants:
        out = out.assign(**{k: str(v) for k, v in constants.items()})
    return out


@any_frame
def scores(
    df: pd.DataFrame,
    *,
    task: str = "task",
    query: str = "query",
    system: str = "system",
    metric: str = "metric",
    value: str = "value",
    judge: str | None = None,
    constants: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Map a table's own column names to the standard ones and validate it.

    Parameters
    ----------
    df : pandas.DataFrame
        Per-query scores in long format. A wide table (one column per system)
        goes through :func:`metaeval.from_wide`.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    task, query, system, metric, value : str
        The names of the columns holding the task (data set), the query
        (sample) id, the system (run, model), the metric (measure) and the
        score.
    judge : str, optional
        The column naming who labelled each row (a model judge, a human), for a table of
        labels: renamed to ``judge``, which joins the key (one score per task, query,
        system, metric and judge; see :func:`metaeval.agreement`). A column already named
        ``judge`` is taken as such without it.
    constants : mapping of str to str, optional
        Key columns the table does not have, with the value of every row:
        ``constants={"metric": "nDCG@10", "task": "robust04"}`` for a table of
        one metric on one collection. A key given here is not looked up as a
        column.

    Returns
    -------
    pandas.DataFrame
        A validated scores table with the columns renamed; other columns kept.
        The input is not changed.

    Raises
    ------
    metaeval.SchemaError
        If a named column does not exist (a missing key column's message
        shows the ``constants=`` that would supply it), a standard name would
        be taken twice, a key is both a column and a constant, or the renamed
        table is not a valid scores table.

    Examples
    --------
    >>> import pandas as pd, metaeval
    >>> runs = pd.DataFrame({"dataset": ["covid"] * 2, "qid": [1, 1],
    ...                      "run": ["bm25", "tasb"], "measure": ["nDCG@10"] * 2,
    ...                      "score": [0.5, 0.7]})
    >>> metaeval.scores(runs, task="dataset", query="qid", system="run",
    ...                 metric="measure", value="score").columns.tolist()
    ['task', 'query', 'system', 'metric', 'value']

    A table of labels, two graders per answer:

    >>> graded = pd.DataFrame({"task": "qa", "qid": [1, 1], "system": "m", "metric": "ok",
    ...                        "grader": ["gpt", "human"], "label": [1, 0]})
    >>> metaeval.scores(graded, query="qid", value="label", judge="grader").columns.tolist()
    ['task', 'query', 'system', 'metric', 'judge', 'value']

    One metric on one collection, without those columns:

    >>> one = pd.DataFrame({"qid": [1, 1], "run": ["bm25", "tasb"], "score": [0.5, 0.7]})
    >>> metaeval.scores(one, query="qid", system="run", value="score",
    ...                 constants={"task": "robust04", "metric": "nDCG@10"})
           task query system   metric  value
    0  robust04     1   bm25  nDCG@10    0.5
    1  robust04     1   tasb  nDCG@10    0.7
    """
    named = {"task": task, "query": query, "system": system, "metric": metric, "value": value}
    if judge is not None:
        named[JUDGE] = judge
    constants = dict(constants or {})
    columns = {k: v for k, v in named.items() if k not in constants}
    out = map_columns(df, columns, constants)
    first = [*SCORE_COLUMNS[:-1], *([JUDGE] if JUDGE in out.columns else []), "value"]
    return validate_scores(out[[*first, *[c for c in out.columns if c not in first]]])


@any_frame
def from_wide(
    df: pd.DataFrame,
    *,
    task: str = "task",
    query: str | None = "query",
    metric: str = "metric",
    systems: Sequence[str] | None = None,
    constants: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """A scores table from a wide one: a column per system, as ``pivot_table`` makes.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per (task, query, metric) and one column of scores per
        system. Key columns may be in the index (a ``pivot_table`` result):
        named index levels are taken as columns.
    task, query, metric : str
        The names of the key columns (as :func:`metaeval.scores`). A table of one
        value per task (autorank's and Demšar's shape: a row per data set, a
        column per system) may leave out the query column: when no column is
        named ``query`` (or ``query=None``) and the rows are unique by their
        other keys, every row is the query ``"all"``, as
        :func:`metaeval.ranking.friedman` takes such tables.
    systems : list of str, optional
        The system columns; None: every column that is not a key.
    constants : mapping of str to str, optional
        Key columns the table does not have (``{"metric": "accuracy"}``), as
        :func:`metaeval.scores`.

    Returns
    -------
    pandas.DataFrame
        A validated scores table, one row per (task, query, system, metric), in the
        order of the rows, then of the systems. The input is not changed.

    Raises
    ------
    metaeval.SchemaError
        A key column that is not there, a system column that is not numeric,
        or a table that is not valid once long (a NaN score names its rows).

    Examples
    --------
    >>> import pandas as pd, metaeval
    >>> wide = pd.DataFrame({"qid": ["q1", "q2"], "bm25": [0.5, 0.2], "tasb": [0.7, 0.4]})
    >>> metaeval.from_wide(wide, query="qid", constants={"task": "covid", "metric": "nDCG@10"})
        task query system   metric  value
    0  covid    q1   bm25  nDCG@10    0.5
    1  covid    q1   tasb  nDCG@10    0.7
    2  covid    q2   bm25  nDCG@10    0.2
    3  covid    q2   tasb  nDCG@10    0.4

    One accuracy per data set, as autorank takes it:

    >>> acc = pd.DataFrame({"dataset": ["iris", "wine"], "svm": [0.95, 0.97], "knn": [0.93, 0.96]})
    >>> metaeval.from_wide(acc, task="dataset", constants={"metric": "accuracy"})
       task query system    metric  value
    0  iris   all    svm  accuracy   0.95
    1  iris   all    knn  accuracy   0.93
    2  wine   all    svm  accuracy   0.97
    3  wine   all    knn  accuracy   0.96
    """
    constants = dict(constants or {})
    levels = [n for n in df.index.names if n is not None]
    if "query" not in constants and (
        query is None or (query == "query" and query not in df.columns and query not in levels)
    ):
        query = "query"
        constants["query"] = "all"  # one value per task; duplicates are refused below
    one_per_task = constants.get("query") == "all"
    named = {"task": task, "query": query, "metric": metric}
    keys = {k: v for k, v in named.items() if k not in constants}
    if levels:  # pivot_table's keys live in the index
        df = df.reset_index(level=[n for n in levels if n in keys.values()], drop=False)
    absent = [v for v in keys.values() if v not in df.columns]
    if absent:
        hint = {k: "..." for k, v in keys.items() if v in absent}
        raise SchemaError(
            f"metaeval.from_wide(): key column(s) {quote_list(absent)} are not in the table "
            f"(columns {quote_list([str(c) for c in df.columns])}); name them (task=, query=, "
            f"metric=) or give them as constants={hint!r}."
        )
    if systems is None:
        systems = [c for c in df.columns if c not in keys.values()]
    else:
        systems = list(systems)
        unknown = [s for s in systems if s not in df.columns]
        if unknown:
            raise SchemaError(
                f"metaeval.from_wide(): system column(s) {quote_list(unknown)} are not in the table."
            )
    not_numeric = [str(s) for s in systems if not pd.api.types.is_numeric_dtype(df[s])]
    if not_numeric or not systems:
        raise SchemaError(
            f"metaeval.from_wide(): every system column holds scores, but {quote_list(not_numeric)} "
            "are not numeric; name the key columns (task=, query=, metric=) or pass systems=[...]."
            if systems
            else "metaeval.from_wide(): the table has no system columns besides its keys."
        )
    id_vars = list(keys.values())
    if one_per_task and id_vars:
        repeated = df.duplicated(subset=id_vars, keep=False)
        if repeated.any():
            first = df.loc[repeated, id_vars].iloc[0].tolist()
            raise SchemaError(
                f"metaeval.from_wide(): the table has no query column, so each row must be one "
                f"(task, metric), but {int(repeated.sum())} rows repeat theirs, e.g. "
                f"{excerpt(tuple(first))}; name the query column (query=...)."
            )
    long = df[[*id_vars, *systems]].melt(id_vars=id_vars, var_name="_system", value_name="_value")
    order = np.tile(np.arange(len(df)), len(systems)) * len(systems) + np.repeat(
        np.arange(len(systems)), len(df)
    )
    long = long.iloc[np.argsort(order, kind="stable")].reset_index(drop=True)
    long["_system"] = long["_system"].astype(str)
    return scores(
        long,
        system="_system",
        value="_value",
        constants=constants,
        **{k: str(v) for k, v in keys.items()},
    )

"""Table schemas (pandera models) and validation with errors a user can act on.

Three kinds of table flow through metaeval:

* **scores** — one row per observation: ``task, query, system, metric, value``,
  plus any task-level columns such as ``domain``. Validated by :class:`Scores`.
* **effects** — one row per ``(metric, treatment, control, task)`` with at least
  ``effect`` and ``variance``. Validated by :class:`Effects`.
* **pooled** — one row per pooled group. Described by :class:`Pooled`.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import SchemaError, quote_list
from ._columns import (
    KEY_COLUMNS,
    SCORE_COLUMNS,
    empty_keys,
    integer_ids_as_strings,
    is_key_dtype,
    non_string_keys,
)
from ._report import in_rows, report

__all__ = [  # noqa: F822  (the pandera models are module attributes loaded lazily)
    "KEY_COLUMNS",
    "SCORE_COLUMNS",
    "Scores",
    "Effects",
    "Pooled",
    "scores",
    "validate_scores",
    "validate_effects",
    "prepare_scores",
    "coerce_keys",
]


# --------------------------------------------------------------------------- models
# The pandera models live in ``_models`` (imported on first use, so that
# ``import metaeval`` stays fast).


def _model(name: str) -> Any:
    """A pandera model of :mod:`metaeval.schema._models` (pandera loads on first use)."""
    from . import _models as models

    return getattr(models, name)


def __getattr__(name: str) -> Any:  # lazy model attributes: schema.Scores etc.
    if name in ("Scores", "Effects", "Pooled"):
        return _model(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -------------------------------------------------------------------- coercion
def coerce_scores(df: pd.DataFrame) -> pd.DataFrame:
    """Lossless conversions done before validation.

    Integer key columns (query ids such as TREC qids) become strings, whether
    their dtype is an integer one, object holding only integers, or a
    categorical with integer categories; integer, boolean and float32 values,
    and object columns holding only Python numbers, become float64. Nothing else is converted: floats in key columns, mixed
    strings and numbers, or strings in ``value`` are reported, never parsed.
    """
    changes: dict[str, pd.Series] = {}
    for col in KEY_COLUMNS:
        if col in df.columns:
            converted = integer_ids_as_strings(df[col])
            if converted is not None:
                changes[col] = converted
    if "value" in df.columns:
        dtype = df["value"].dtype
        if (
            pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype)
        ) and dtype != np.float64:
            changes["value"] = df["value"].astype("float64")
        elif pd.api.types.is_object_dtype(dtype) and _only_numbers(df["value"]):
            changes["value"] = df["value"].astype("float64")  # Python numbers in an object column
    if not changes:
        return df
    return df.assign(**changes)


def _only_numbers(values: pd.Series) -> bool:
    """Whether an object column holds only real numbers (and missing values), no text."""
    kind = pd.api.types.infer_dtype(values, skipna=True)
    if kind in ("floating", "integer", "mixed-integer-float", "boolean", "empty"):
        return kind != "empty"
    if kind not in ("mixed", "mixed-integer"):
        return False
    return all(
        isinstance(v, numbers.Real) and not isinstance(v, str) for v in values.dropna().to_numpy()
    )


def coerce_keys(df: pd.DataFrame, columns: Sequence[str], *, table: str) -> pd.DataFrame:
    """Key columns of any table as plain strings, with the scores table's rules.

    Integer ids become strings; strings and categoricals of strings stay;
    anything else — floats, missing values, mixed strings and numbers (``"1"``
    and ``1`` would become one name) — is a :class:`~metaeval.SchemaError`
    naming the column and example rows. Returns a new frame; ``df`` is not
    changed.

    Examples
    --------
    >>> import pandas as pd
    >>> from metaeval.schema import coerce_keys
    >>> judged = pd.DataFrame({"task": ["a", "a"], "qid": [7, 8], "relevance": [1, 0]})
    >>> coerce_keys(judged, ["task", "qid"], table="judgments")["qid"].tolist()
    ['7', '8']
    >>> coerce_keys(judged.assign(qid=[7.0, 8.5]), ["task", "qid"], table="judgments")
    Traceback (most recent call last):
    ...
    metaeval.errors.SchemaError: The judgments table has 1 problem:
    - column 'qid' must hold strings (or integer ids) but has dtype float64
    """
    out = df.copy(deep=False)
    problems = []
    for col in columns:
        s = integer_ids_as_strings(out[col])
        s = out[col] if s is None else s
        if not is_key_dtype(s.dtype):
            problems.append(
                f"- column {col!r} must hold strings (or integer ids) but has dtype {s.dtype}"
            )
            continue
        missing = s.isna().to_numpy()
        wrong = non_string_keys(s)
        if not wrong.any():
            missing = missing | empty_keys(s)
        if missing.any():
            rows = out.index[missing][:5].tolist()
            problems.append(
                f"- column {col!r} has missing values or empty names "
                f"{in_rows(int(missing.sum()), rows)}"
            )
        if wrong.any():
            rows = out.index[wrong][:3].tolist()
            problems.append(
                f"- column {col!r} holds values that are not strings {in_rows(int(wrong.sum()), rows)} "
                f"with values {quote_list(s[wrong][:3].tolist())}"
            )
        out[col] = s.astype(str)
    if problems:
        raise SchemaError(
            f"The {table} table has {len(problems)} problem{'s' if len(problems) != 1 else ''}:\n"
            + "\n".join(problems)
        )
    return out


def _quick_scores_ok(df: pd.DataFrame) -> bool:
    """Cheap checks that pass exactly when pandera's checks (bar uniqueness) pass."""
    if not all(c in df.columns for c in SCORE_COLUMNS) or df.columns.duplicated().any():
        return False
    if len(df) == 0:
        return False
    for col in KEY_COLUMNS:
        s = df[col]
        if not is_key_dtype(s.dtype) or non_string_keys(s).any() or empty_keys(s).any():
            return False
        if isinstance(s.dtype, pd.CategoricalDtype):
            if (s.cat.codes.to_numpy() < 0).any():
                return False
        elif s.isna().any():
            return False
    if df["value"].dtype != np.float64:
        return False
    return bool(np.isfinite(df["value"].to_numpy()).all())


def validate_scores(df: pd.DataFrame) -> pd.DataFrame:
    """Validate a scores table and return it with lossless conversions applied.

    Every problem is reported at once: missing or mistyped columns, missing
    values in key columns, NaN or ±inf values, and duplicate
    ``(task, query, system, metric)`` keys with examples.

    Parameters
    ----------
    df : pandas.DataFrame
        Columns ``task, query, system, metric`` (strings or categoricals;
        integer ids are converted to strings) and ``value`` (numbers; integers,
        booleans and an object column of Python numbers are converted to
        float). Other columns are kept.

    Returns
    -------
    pandas.DataFrame
        The table, with the conversions above applied (a new object only when
        something was converted).

    Raises
    ------
    metaeval.SchemaError
        Listing every problem; ``.failure_cases`` has one row per offending cell.

    Examples
    --------
    >>> import pandas as pd, metaeval
    >>> df = pd.DataFrame({"task": ["a", "a"], "query": [1, 1], "system": ["s", "s"],
    ...                    "metric": ["acc", "acc"], "value": [1.0, float("nan")]})
    >>> metaeval.validate_scores(df)
    Traceback (most recent call last):
    ...
    metaeval.errors.SchemaError: The scores table has 2 problems:
    - 2 rows share their (task, query, system, metric) key with another row, e.g. rows [0, 1] with key ('a', '1', 's', 'acc')
    - column 'value' has missing values (NaN/None) in 1 row, e.g. row [1]
    """
    import pandera.errors as pe

    if not isinstance(df, pd.DataFrame):
        raise SchemaError(f"A scores table must be a pandas DataFrame, not {type(df).__name__}.")
    if df.columns.duplicated().any():
        dup = list(df.columns[df.columns.duplicated()])
        raise SchemaError(f"The scores table has duplicated column names {dup}; rename them.")
    if len(df) == 0:
        missing = [c for c in SCORE_COLUMNS if c not in df.columns]
        raise SchemaError(
            "The scores table has no rows; there is nothing to analyse."
            + (f" (It also lacks the column(s) {missing}.)" if missing else "")
        )
    df = coerce_scores(df)
    # pandera needs unique row labels to report duplicate keys: check a copy with positions
    checked = df if df.index.is_unique else df.reset_index(drop=True)
    try:
        _model("Scores").validate(checked, lazy=True)
    except pe.SchemaErrors as err:
        labels = None if checked is df else df.index
        raise report("scores", err, checked, KEY_COLUMNS, labels) from None
    return df


def prepare_scores(df: pd.DataFrame) -> pd.DataFrame:
    """Validation as the first step of every method: a fast path for valid tables.

    Uniqueness of keys is checked where the keys are encoded (see
    :mod:`metaeval.paired.sufficient`), which calls :func:`validate_scores` for the full
    report when it finds duplicates.

    Examples
    --------
    A valid table comes back as it is; one that needs lossless conversions
    (integer ids, integer values) comes back converted:

    >>> import pandas as pd, metaeval
    >>> from metaeval.schema import prepare_scores
    >>> example = metaeval.load_example()
    >>> prepare_scores(example) is example
    True
    >>> raw = pd.DataFrame({"task": "a", "query": [1, 2], "system": "s", "metric": "acc",
    ...                     "value": [1, 0]})
    >>> ready = prepare_scores(raw)
    >>> ready["query"].tolist(), ready["value"].dtype
    (['1', '2'], dtype('float64'))
    """
    if isinstance(df, pd.DataFrame) and not df.columns.duplicated().any():
        df = coerce_scores(df)
        if _quick_scores_ok(df):
            return df
    validate_scores(df)  # raises with the full report
    raise AssertionError("unreachable: quick checks and the pandera model disagree")


def validate_effects(df: pd.DataFrame) -> pd.DataFrame:
    """Validate an effects table: numeric ``effect`` and ``variance`` columns.

    ``effect`` must be finite or NaN and ``variance`` positive and finite or NaN.

    Raises
    ------
    metaeval.SchemaError
        Listing every problem at once.

    Examples
    --------
    >>> import pandas as pd, metaeval
    >>> eff = pd.DataFrame({"task": ["a", "b"], "effect": [1, 2], "variance": [0.5, 1]})
    >>> metaeval.validate_effects(eff)["effect"].dtype  # integers become float
    dtype('float64')
    >>> metaeval.validate_effects(eff.assign(variance=[0.5, 0.0]))
    Traceback (most recent call last):
    ...
    metaeval.errors.SchemaError: The effects table has 1 problem:
    - column 'variance' has values that are not positive and finite in 1 row, e.g. row [1]
    """
    import pandera.errors as pe

    if not isinstance(df, pd.DataFrame):
        raise SchemaError(f"An effects table must be a pandas DataFrame, not {type(df).__name__}.")
    if df.columns.duplicated().any():
        dup = list(df.columns[df.columns.duplicated()])
        raise SchemaError(f"The effects table has duplicated column names {dup}; rename them.")
    changes = {
        c: df[c].astype("float64")
        for c in ("effect", "variance")
        if c in df.columns
        and pd.api.types.is_numeric_dtype(df[c].dtype)
        and not pd.api.types.is_bool_dtype(df[c].dtype)
        and df[c].dtype != np.float64
    }
    if changes:
        df = df.assign(**changes)
    if _quick_effects_ok(df):  # the pandera model passes exactly then; it reports otherwise
        return df
    try:
        _model("Effects").validate(df, lazy=True)
    except pe.SchemaErrors as err:
        raise report("effects", err, df, ()) from None
    raise AssertionError("unreachable: quick checks and the pandera model disagree")


def _quick_effects_ok(df: pd.DataFrame) -> bool:
    """Cheap checks that pass exactly when the Effects model passes."""
    if not all(c in df.columns for c in ("effect", "variance")) or df.columns.duplicated().any():
        return False
    if df["effect"].dtype != np.float64 or df["variance"].dtype != np.float64:
        return False
    y, v = df["effect"].to_numpy(), df["variance"].to_numpy()
    with np.errstate(invalid="ignore"):
        return bool(
            (np.isfinite(y) | np.isnan(y)).all()
            and (np.isnan(v) | (np.isfinite(v) & (v > 0))).all()
        )


# ------------------------------------------------------------------ column mapping
def scores(
    df: pd.DataFrame,
    *,
    task: str = "task",
    query: str = "query",
    system: str = "system",
    metric: str = "metric",
    value: str = "value",
) -> pd.DataFrame:
    """Map a table's own column names to the standard ones and validate it.

    Parameters
    ----------
    df : pandas.DataFrame
        Per-query scores in long format.
    task, query, system, metric, value : str
        The names of the columns holding the task (data set), the query
        (sample) id, the system (run, model), the metric (measure) and the
        score.

    Returns
    -------
    pandas.DataFrame
        A validated scores table with the columns renamed; other columns kept.

    Raises
    ------
    metaeval.SchemaError
        If a named column does not exist, a standard name would be taken twice,
        or the renamed table is not a valid scores table.

    Examples
    --------
    >>> import pandas as pd, metaeval
    >>> runs = pd.DataFrame({"dataset": ["covid"] * 2, "qid": [1, 1],
    ...                      "run": ["bm25", "tasb"], "measure": ["nDCG@10"] * 2,
    ...                      "score": [0.5, 0.7]})
    >>> metaeval.scores(runs, task="dataset", query="qid", system="run",
    ...                 metric="measure", value="score").columns.tolist()
    ['task', 'query', 'system', 'metric', 'value']
    """
    mapping = {task: "task", query: "query", system: "system", metric: "metric", value: "value"}
    missing = [src for src in mapping if src not in df.columns]
    if missing:
        raise SchemaError(
            f"Column(s) {missing} named in metaeval.scores() are not in the table; "
            f"its columns are {quote_list(list(df.columns))}."
        )
    renamed = {src: dst for src, dst in mapping.items() if src != dst}
    clash = [c for c in renamed.values() if c in df.columns and c not in renamed]
    if clash:
        raise SchemaError(
            f"The table already has column(s) {clash}, which the mapping would create again; "
            "drop or rename them first."
        )
    return validate_scores(df.rename(columns=renamed))

"""Table schemas (pandera models) and validation with errors a user can act on.

Three kinds of table flow through metaeval:

* **scores** — one row per observation: ``task, query, system, metric, value``,
  plus any task-level columns such as ``domain``. Validated by :class:`Scores`.
* **effects** — one row per ``(metric, treatment, control, task)`` with at least
  ``effect`` and ``variance``. Validated by :class:`Effects`.
* **pooled** — one row per pooled group. Described by :class:`Pooled`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .errors import SchemaError, excerpt, quote_list

__all__ = [  # noqa: F822  (the pandera models are module attributes loaded lazily)
    "KEY_COLUMNS",
    "Scores",
    "Effects",
    "Pooled",
    "scores",
    "validate_scores",
    "validate_effects",
]

KEY_COLUMNS = ("task", "query", "system", "metric")
"""The columns that identify one observation of a scores table."""

SCORE_COLUMNS = (*KEY_COLUMNS, "value")

# --------------------------------------------------------------------------- models
# The pandera models live in ``_models`` (imported on first use, so that
# ``import metaeval`` stays fast).


def _is_key_dtype(dtype: Any) -> bool:
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


def _models() -> dict[str, Any]:
    from . import _models as models

    return {"Scores": models.Scores, "Effects": models.Effects, "Pooled": models.Pooled}


def __getattr__(name: str) -> Any:  # lazy model attributes: schema.Scores etc.
    if name in ("Scores", "Effects", "Pooled"):
        return _models()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ------------------------------------------------------------------ error report
_PROBLEMS = {
    "column_in_dataframe": "missing column",
    "not_nullable": "missing values (NaN/None)",
    "string_or_categorical": "wrong type (needs strings or a categorical)",
    "string_elements": "values that are not strings",
    "not_empty": "empty names ('')",
    "finite": "non-finite values (±inf)",
    "positive_finite": "variance not positive and finite",
    "multiple_fields_uniqueness": "duplicate keys",
}


def _problem_name(check: str) -> str:
    if check in _PROBLEMS:
        return _PROBLEMS[check]
    if check.startswith("dtype("):
        return "wrong type (needs float values)"
    return check


def _report(
    table: str,
    err: Any,
    df: pd.DataFrame,
    keys: tuple[str, ...],
    labels: pd.Index | None = None,
) -> SchemaError:
    """Turn pandera's lazy ``SchemaErrors`` into one :class:`SchemaError`.

    ``labels``: when ``df`` was validated with positions as its index (its own
    labels repeat), the original labels, which the report then shows.
    """
    fc = err.failure_cases
    rows = fc["index"].to_numpy(dtype=object, copy=True)
    cases = pd.DataFrame(
        {
            "problem": [_problem_name(str(c)) for c in fc["check"]],
            "column": fc["column"].to_numpy(dtype=object, copy=True),
            "row": rows,
            "value": fc["failure_case"].to_numpy(dtype=object, copy=True),
        }
    )

    def label(row: Any) -> Any:
        return row if labels is None or row is None or pd.isna(row) else labels[int(row)]

    missing = (cases["problem"] == "missing column").to_numpy()
    cases.loc[missing, "column"] = cases.loc[missing, "value"]
    dup = (cases["problem"] == "duplicate keys").to_numpy()
    if dup.any():  # pandera lists each key column of each row: keep one case per row
        key_label = ", ".join(c for c in keys if c in df.columns)
        cases.loc[dup, "column"] = key_label
        cases.loc[dup, "value"] = None
        cases = cases[~(dup & cases.duplicated(["problem", "row"]).to_numpy())].reset_index(
            drop=True
        )
    lines = []
    for (problem, column), part in cases.groupby(["problem", "column"], sort=False, dropna=False):
        if problem == "missing column":
            lines.append(f"- column {column!r} is missing")
        elif problem == "duplicate keys":
            rows = pd.unique(part["row"].dropna())
            key_cols = [c for c in keys if c in df.columns]
            example = df.loc[rows[:2], key_cols] if len(rows) else df.iloc[:0]
            first = tuple(example.iloc[0]) if len(example) else ()
            lines.append(
                f"- {len(rows)} rows share their ({', '.join(key_cols)}) key with another row, "
                f"e.g. rows {quote_list([label(r) for r in rows[:5]])} with key {excerpt(first, 200)}"
            )
        elif problem.startswith("wrong type"):
            got = df[column].dtype if column in df.columns else "?"
            lines.append(f"- column {column!r} has the {problem} but has dtype {got}")
        elif problem == "values that are not strings":
            rows = list(pd.unique(part["row"].dropna()))
            values = df.loc[rows[:3], column].tolist()
            kinds = sorted({type(v).__name__ for v in df.loc[rows, column]})
            lines.append(
                f"- column {column!r} holds values that are not strings ({', '.join(kinds)}) in "
                f"{len(rows)} rows, e.g. rows {quote_list([label(r) for r in rows[:3]])} with "
                f"values {quote_list(values)}; names must be strings (integer ids are converted), "
                f"e.g. df[{column!r}].astype(str) if they are names"
            )
        else:
            rows = list(pd.unique(part["row"].dropna()))
            lines.append(
                f"- column {column!r} has {problem} in {len(rows)} rows, e.g. rows "
                f"{quote_list([label(r) for r in rows[:5]])}"
            )
    message = (
        f"The {table} table has {len(lines)} problem{'s' if len(lines) != 1 else ''}:\n"
        + "\n".join(lines)
    )
    if labels is not None:
        cases["row"] = [label(r) for r in cases["row"]]
    return SchemaError(message, cases)


# -------------------------------------------------------------------- coercion
def _coerce_scores(df: pd.DataFrame) -> pd.DataFrame:
    """Lossless conversions done before validation.

    Integer key columns (query ids such as TREC qids) become strings, whether
    their dtype is an integer one, object holding only integers, or a
    categorical with integer categories; integer, boolean and float32 values
    become float64. Nothing else is converted: floats in key columns, mixed
    strings and numbers, or strings in ``value`` are reported, never parsed.
    """
    changes: dict[str, pd.Series] = {}
    for col in KEY_COLUMNS:
        if col in df.columns:
            converted = _integer_ids_as_strings(df[col])
            if converted is not None:
                changes[col] = converted
    if "value" in df.columns:
        dtype = df["value"].dtype
        if (
            pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype)
        ) and dtype != np.float64:
            changes["value"] = df["value"].astype("float64")
    if not changes:
        return df
    return df.assign(**changes)


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


def _integer_ids_as_strings(s: pd.Series) -> pd.Series | None:
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


def coerce_keys(df: pd.DataFrame, columns: Sequence[str], *, table: str) -> pd.DataFrame:
    """Key columns of any table as plain strings, with the scores table's rules.

    Integer ids become strings; strings and categoricals of strings stay;
    anything else — floats, missing values, mixed strings and numbers (``"1"``
    and ``1`` would become one name) — is a :class:`~metaeval.SchemaError`
    naming the column and example rows. Returns a new frame; ``df`` is not
    changed.
    """
    out = df.copy(deep=False)
    problems = []
    for col in columns:
        s = _integer_ids_as_strings(out[col])
        s = out[col] if s is None else s
        if not _is_key_dtype(s.dtype):
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
                f"- column {col!r} has missing values or empty names in {int(missing.sum())} "
                f"rows, e.g. rows {quote_list(rows)}"
            )
        if wrong.any():
            rows = out.index[wrong][:3].tolist()
            problems.append(
                f"- column {col!r} holds values that are not strings in {int(wrong.sum())} rows, "
                f"e.g. rows {quote_list(rows)} with values {quote_list(s[wrong][:3].tolist())}"
            )
        out[col] = s.astype(str)
    if problems:
        raise SchemaError(
            f"The {table} table has {len(problems)} problem(s):\n" + "\n".join(problems)
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
        if not _is_key_dtype(s.dtype) or non_string_keys(s).any() or empty_keys(s).any():
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
        integer ids are converted to strings) and ``value`` (numbers; integers
        and booleans are converted to float). Other columns are kept.

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
    - column 'value' has missing values (NaN/None) in 1 rows, e.g. rows [1]
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
    df = _coerce_scores(df)
    # pandera needs unique row labels to report duplicate keys: check a copy with positions
    checked = df if df.index.is_unique else df.reset_index(drop=True)
    try:
        _models()["Scores"].validate(checked, lazy=True)
    except pe.SchemaErrors as err:
        labels = None if checked is df else df.index
        raise _report("scores", err, checked, KEY_COLUMNS, labels) from None
    return df


def prepare_scores(df: pd.DataFrame) -> pd.DataFrame:
    """Validation as the first step of every method: a fast path for valid tables.

    Uniqueness of keys is checked where the keys are encoded (see
    :mod:`metaeval.stats`), which calls :func:`validate_scores` for the full
    report when it finds duplicates.
    """
    if isinstance(df, pd.DataFrame) and not df.columns.duplicated().any():
        df = _coerce_scores(df)
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
        _models()["Effects"].validate(df, lazy=True)
    except pe.SchemaErrors as err:
        raise _report("effects", err, df, ()) from None
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

"""Validation and coercion of scores and effects tables, with errors a user can act on.

The checks behind :func:`metaeval.schema.validate_scores` and
:func:`~metaeval.schema.validate_effects` (the pandera models of ``_models``, loaded on
first use so that ``import metaeval`` stays fast, after a quick path for tables that pass),
the coercion of key columns, and the replicate columns (``replicate``,
``replicate_design``): averaging, checking and the recorded design.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._docs import fill_doc
from ..engines.frames import any_frame
from ..engines.routing import route
from ..errors import SchemaError, excerpt, quote_list
from ._columns import (
    JUDGE,
    KEY_COLUMNS,
    REPLICATE,
    REPLICATE_DESIGN,
    SCORE_COLUMNS,
    empty_keys,
    integer_ids_as_strings,
    is_key_dtype,
    keys_of,
    non_string_keys,
)
from ._columns import first_repeat as first_repeat  # io's readers and measures' checks
from ._failures import in_rows, no_rows_error, report

TAKES = (
    "a pandas DataFrame (or a polars DataFrame or LazyFrame, a pyarrow Table, a DuckDB relation)"
)

__all__ = [
    "validate_scores",
    "validate_effects",
    "prepare_scores",
    "coerce_scores",
    "coerce_keys",
    "average_replicates",
    "checked_replicates",
    "recorded_design",
    "key_column_ok",
    "key_names_ok",
]


def _model(name: str) -> Any:
    """A pandera model of :mod:`metaeval.schema._models` (pandera loads on first use)."""
    from . import _models as models

    return getattr(models, name)


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
    for col in (*KEY_COLUMNS, JUDGE):
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


@any_frame
@fill_doc
def coerce_keys(df: pd.DataFrame, columns: Sequence[str], *, table: str) -> pd.DataFrame:
    """Key columns of any table as plain strings, with the scores table's rules.

    Integer ids become strings; strings and categoricals of strings stay;
    anything else — floats, missing values, mixed strings and numbers (``"1"``
    and ``1`` would become one name) — is a :class:`~metaeval.SchemaError`
    naming the column and example rows. Returns a new frame; ``df`` is not
    changed.

    Parameters
    ----------
    df : pandas.DataFrame
        Any table (scores, judgments, a run, effects).
        {any_frame}
    columns : list of str
        The key columns to convert.
    table : str
        The table's name in an error message (``"judgments"``: "The judgments table has
        1 problem").

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


@any_frame
@fill_doc
def average_replicates(scores: pd.DataFrame) -> pd.DataFrame:
    """A scores table with a ``replicate`` column, each system's scores averaged over it.

    The replicate ids are checked like key columns (integers become strings; missing or
    empty ids are an error), and ``(task, query, system, metric, replicate)`` must be
    unique (:func:`checked_replicates`). The result has one row per ``(task, query, system, metric)``: the mean of the
    replicates that have the query (a query missing from some replicates of a system is
    averaged over the others), other columns kept from the first row. Tables without the
    column come back unchanged.

    Parameters
    ----------
    {scores}
        With or without a ``replicate`` column.

    Raises
    ------
    metaeval.SchemaError
        Missing or non-string replicate ids, or a repeated key with its replicate.

    Examples
    --------
    >>> import pandas as pd
    >>> from metaeval.schema import average_replicates
    >>> runs = pd.DataFrame({"task": "a", "query": ["q1", "q1", "q2", "q2"], "system": "s",
    ...                      "metric": "acc", "replicate": [1, 2, 1, 2],
    ...                      "value": [1.0, 0.0, 1.0, 1.0]})
    >>> average_replicates(runs)
      task query system metric  value
    0    a    q1      s    acc    0.5
    1    a    q2      s    acc    1.0
    """
    if REPLICATE not in scores.columns:
        return scores
    scores = checked_replicates(scores)
    keys = keys_of(scores.columns)
    numeric = "value" in scores.columns and pd.api.types.is_numeric_dtype(scores["value"])
    if all(c in keys for c in KEY_COLUMNS) and numeric:
        # each mean summed in replicate order, whatever the order of the rows
        scores = scores.sort_values(REPLICATE, kind="stable")
        grouped = scores.groupby(keys, sort=False, observed=True, dropna=False)
        extra = [c for c in scores.columns if c not in (*keys, "value", REPLICATE)]
        out = grouped["value"].mean().to_frame()
        if extra:
            out = out.join(grouped[extra].first())
        out = out.reset_index()
        for col in keys:  # keep the categoricals' categories
            if isinstance(scores[col].dtype, pd.CategoricalDtype):
                out[col] = out[col].astype(scores[col].dtype)
        return out[[c for c in scores.columns if c != REPLICATE]]
    return scores.drop(columns=REPLICATE)


@any_frame
@fill_doc
def checked_replicates(scores: pd.DataFrame) -> pd.DataFrame:
    """The checks of :func:`average_replicates`: replicate ids as strings, and a unique
    ``(task, query, system, metric, replicate)`` key; returns the table with the ids.

    Parameters
    ----------
    {scores}
        With a ``replicate`` column.

    Raises
    ------
    metaeval.SchemaError
        Missing or non-string replicate ids, or a repeated key with its replicate.

    Examples
    --------
    >>> import pandas as pd
    >>> from metaeval.schema import checked_replicates
    >>> runs = pd.DataFrame({"task": "a", "query": "q1", "system": "s", "metric": "acc",
    ...                      "replicate": [1, 2], "value": [1.0, 0.0]})
    >>> checked_replicates(runs)["replicate"].tolist()
    ['1', '2']
    """
    ids = integer_ids_as_strings(scores[REPLICATE])
    rep = scores[REPLICATE] if ids is None else ids
    bad = rep.isna().to_numpy() | non_string_keys(rep) | empty_keys(rep)
    if bad.any() or not is_key_dtype(rep.dtype):
        rows = scores.index[bad][:5].tolist() if bad.any() else []
        raise SchemaError(
            f"The column {REPLICATE!r} (the seed or fold of a repeated run) must hold string "
            f"or integer ids with no missing or empty values; rows {rows} do not "
            f"(dtype {rep.dtype})."
        )
    scores = scores.assign(**{REPLICATE: rep})
    keys = [*keys_of(scores.columns), REPLICATE]
    complete = all(c in keys for c in KEY_COLUMNS)
    dup = scores.duplicated(keys, keep=False).to_numpy()
    if complete and dup.any():
        example = scores.loc[dup, keys].head(3).to_string(index=False)
        raise SchemaError(
            f"{int(dup.sum())} rows share their ({', '.join(keys)}) key with another row, "
            f"e.g.\n{example}"
        )
    if complete:
        _check_not_folds(scores)
    return scores


@any_frame
@fill_doc
def recorded_design(scores: pd.DataFrame) -> str | None:
    """The replicate design a scores table records, or None.

    The one value of its ``replicate_design`` column, else ``attrs["replicates"]``
    (what a reader recorded, such as :func:`metaeval.io.read_inspect`'s ``"epochs"``);
    when both are there they must agree.

    Parameters
    ----------
    {scores}
        A frame other than pandas has no ``attrs``, only the column.

    Raises
    ------
    metaeval.SchemaError
        A column with missing values, several values or one that is not a design, or one
        that contradicts ``attrs["replicates"]``.

    Examples
    --------
    >>> import pandas as pd
    >>> from metaeval.schema import recorded_design
    >>> runs = pd.DataFrame({"task": "a", "replicate": [1, 2], "replicate_design": "epochs"})
    >>> recorded_design(runs), recorded_design(runs.drop(columns="replicate_design"))
    ('epochs', None)
    """
    from .._options import REPLICATE_DESIGNS

    noted = scores.attrs.get("replicates")
    noted = noted if noted in REPLICATE_DESIGNS else None
    if REPLICATE_DESIGN not in scores.columns:
        return noted
    column = scores[REPLICATE_DESIGN]
    values = pd.unique(column.dropna().astype(str).to_numpy())
    wrong = sorted(str(v) for v in values if v not in REPLICATE_DESIGNS)
    if column.isna().any() or len(values) != 1 or wrong:
        found = (
            f"values {quote_list(sorted(map(str, values)))}"
            if len(values) > 1
            else f"{quote_list(wrong) if wrong else 'no value'}"
        )
        missing = f" and {int(column.isna().sum())} missing" if column.isna().any() else ""
        raise SchemaError(
            f"The column {REPLICATE_DESIGN!r} says how the 'replicate' column's runs relate to "
            f"the tasks, one value for the whole table among {quote_list(list(REPLICATE_DESIGNS))}, "
            f"but it holds {found}{missing}. Give every row the table's design, or drop the "
            "column and pass effects(..., replicates=...)."
        )
    design = str(values[0])
    if noted is not None and noted != design:
        raise SchemaError(
            f"The column {REPLICATE_DESIGN!r} says {design!r} but the table's attrs['replicates'] "
            f"says {noted!r}; drop one of them, or pass effects(..., replicates=...) to decide."
        )
    return design


def _check_not_folds(df: pd.DataFrame) -> None:
    """Replicates are reruns on the same queries (seeds, checkpoints, epochs); a replicate
    column that partitions a group's queries (each query in one replicate, several
    replicates) holds cross-validation folds, whose average would count every query's noise
    twice. A :class:`SchemaError` names the groups and says how to pass folds."""
    group = ["task", "metric", "system"]
    per_query = df.groupby([*group, "query"], observed=True, sort=False)[REPLICATE].size()
    once = per_query.groupby(level=group, observed=True, sort=False).max() == 1
    replicates = df.groupby(group, observed=True, sort=False)[REPLICATE].nunique()
    folds = once & (replicates.reindex(once.index) > 1)
    if folds.any():
        named = folds[folds].index.to_frame(index=False).drop_duplicates("task").head(3)
        where = "; ".join(
            f"task {t!r} (metric {m!r}, system {s!r})" for t, m, s in named.itertuples(index=False)
        )
        raise SchemaError(
            f"The column {REPLICATE!r} partitions the queries of {where}: each query is in "
            "exactly one replicate, as with cross-validation folds, not reruns on the same "
            "queries (seeds, checkpoints, epochs). Averaging folds and adding their variance "
            "would count each query's noise twice. Drop the column to treat the folds' "
            "predictions as one test set, or pass one row per fold (query = the fold, value = "
            "the fold's score) with effects(..., effect='md', cv=(n_train, n_test)) for the "
            "Nadeau–Bengio corrected variance."
        )


def _quick_scores_ok(df: pd.DataFrame, *, keys: bool = True) -> bool:
    """Cheap checks that pass exactly when pandera's checks (bar uniqueness) pass
    (``keys=False``: bar the values of the key columns too, whose dtypes only are checked)."""
    if not all(c in df.columns for c in SCORE_COLUMNS) or df.columns.duplicated().any():
        return False
    if len(df) == 0:
        return False
    if keys:
        if not all(key_column_ok(df[col]) for col in KEY_COLUMNS):
            return False
    elif not all(is_key_dtype(df[col].dtype) for col in KEY_COLUMNS):
        return False
    if df["value"].dtype != np.float64:
        return False
    return bool(np.isfinite(df["value"].to_numpy()).all())


def key_column_ok(s: pd.Series) -> bool:
    """Whether a key column passes :func:`validate_scores`' checks of its dtype and values
    (no missing, empty or non-string keys), row by row."""
    if not is_key_dtype(s.dtype) or non_string_keys(s).any() or empty_keys(s).any():
        return False
    if isinstance(s.dtype, pd.CategoricalDtype):
        return not (s.cat.codes.to_numpy() < 0).any()
    return not s.isna().any()


def key_names_ok(names: np.ndarray) -> bool:
    """Whether the distinct values of a key column (an object array, missing values left
    out) are all non-empty strings: :func:`key_column_ok` on a column's distinct values."""
    if pd.api.types.infer_dtype(names, skipna=False) not in ("string", "empty"):
        return False
    return not (names == "").any()


def _in_engine(scores: Any) -> Any:
    """A lazy table validated in its engine (every check of :func:`validate_scores`): the
    frame comes back as it is."""
    from ..engines.survey import validate

    validate(scores)
    return scores.native


@any_frame(lazy=True)
@route(engine=_in_engine)
def validate_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """Validate a scores table and return it with lossless conversions applied.

    Every problem is reported at once: missing or mistyped columns, missing
    values in key columns, NaN or ±inf values, and duplicate
    ``(task, query, system, metric)`` keys with examples.

    Parameters
    ----------
    scores : pandas.DataFrame
        Columns ``task, query, system, metric`` (strings or categoricals;
        integer ids are converted to strings) and ``value`` (numbers; integers,
        booleans and an object column of Python numbers are converted to
        float). Other columns are kept.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation; a lazy one is computed in its engine (see the Notes of
        :func:`metaeval.effects`).

    Returns
    -------
    pandas.DataFrame
        The table, with the conversions above applied (a new object only when
        something was converted). A lazy frame (polars LazyFrame, DuckDB relation)
        is checked in its engine and comes back as it is.

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

    if not isinstance(scores, pd.DataFrame):
        raise SchemaError(f"A scores table must be {TAKES}, not {type(scores).__name__}.")
    if scores.columns.duplicated().any():
        dup = list(scores.columns[scores.columns.duplicated()])
        raise SchemaError(f"The scores table has duplicated column names {dup}; rename them.")
    if len(scores) == 0:
        raise no_rows_error([c for c in SCORE_COLUMNS if c not in scores.columns])
    scores = coerce_scores(scores)
    if REPLICATE in scores.columns:  # repeated runs: validate the averaged table
        validate_scores(average_replicates(scores))
        return scores
    # pandera needs unique row labels to report duplicate keys: check a copy with positions
    checked = scores if scores.index.is_unique else scores.reset_index(drop=True)
    model = "Labels" if JUDGE in scores.columns else "Scores"
    try:
        _model(model).validate(checked, lazy=True)
    except pe.SchemaErrors as err:
        labels = None if checked is scores else scores.index
        raise report("scores", err, checked, tuple(keys_of(checked.columns)), labels) from None
    return scores


@any_frame
@fill_doc
def prepare_scores(scores: pd.DataFrame, *, check_keys: bool = True) -> pd.DataFrame:
    """Validation as the first step of every method: a fast path for valid tables.

    Uniqueness of keys is checked where the keys are encoded (see
    :mod:`metaeval.paired.sufficient`), which calls :func:`validate_scores` for the full
    report when it finds duplicates. ``check_keys=False`` leaves the values of the key
    columns (missing, empty, not strings) to the caller as well, which checks them on
    their distinct values once it has encoded them (the paired layout, ``paired.layout``), and
    calls :func:`validate_scores` for the report; their dtypes are checked here.

    Parameters
    ----------
    {scores}
    check_keys : bool, default True
        Check the values of the key columns here; False leaves them to the caller.

    Returns
    -------
    pandas.DataFrame
        The table, with lossless conversions applied and replicates averaged.

    Raises
    ------
    metaeval.SchemaError
        :func:`validate_scores`'s full report, for a table that is not valid.

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
    if isinstance(scores, pd.DataFrame) and JUDGE in scores.columns:
        one_judge(scores)
    if isinstance(scores, pd.DataFrame) and not scores.columns.duplicated().any():
        scores = coerce_scores(scores)
        if REPLICATE in scores.columns and len(scores):
            scores = coerce_scores(average_replicates(scores))
        if _quick_scores_ok(scores, keys=check_keys):
            return scores
    validate_scores(scores)  # raises with the full report
    raise AssertionError("unreachable: quick checks and the pandera model disagree")


def one_judge(scores: pd.DataFrame) -> None:
    """Refuse a table of several judges' labels where one score per (task, query, system,
    metric) is needed: the statistics would take the judges for repeated keys."""
    judges = pd.unique(scores[JUDGE].dropna())
    if len(judges) <= 1:
        return
    named = quote_list([str(j) for j in judges])
    raise SchemaError(
        f"The table holds the labels of {len(judges)} judges ({named}) in its {JUDGE!r} "
        "column, but this function takes one score per (task, query, system, metric). Keep "
        f"one judge's labels (scores[scores[{JUDGE!r}] == {excerpt(str(judges[0]))}]), average the "
        "judges' (scores.groupby(['task', 'query', 'system', 'metric'], as_index=False)"
        "['value'].mean()), or measure the judges with metaeval.agreement, judge_errors "
        "and ppi."
    )


@any_frame
@fill_doc
def validate_effects(effects: pd.DataFrame) -> pd.DataFrame:
    """Validate an effects table: numeric ``effect`` and ``variance`` columns.

    ``effect`` must be finite or NaN and ``variance`` positive and finite or NaN.

    Parameters
    ----------
    effects : pandas.DataFrame
        An effects table (:func:`metaeval.effects`): at least ``effect`` and ``variance``.
        {any_frame}

    Returns
    -------
    pandas.DataFrame
        The table, ``effect`` and ``variance`` as float.

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

    if not isinstance(effects, pd.DataFrame):
        raise SchemaError(f"An effects table must be {TAKES}, not {type(effects).__name__}.")
    if effects.columns.duplicated().any():
        dup = list(effects.columns[effects.columns.duplicated()])
        raise SchemaError(f"The effects table has duplicated column names {dup}; rename them.")
    changes = {
        c: effects[c].astype("float64")
        for c in ("effect", "variance")
        if c in effects.columns
        and pd.api.types.is_numeric_dtype(effects[c].dtype)
        and not pd.api.types.is_bool_dtype(effects[c].dtype)
        and effects[c].dtype != np.float64
    }
    if changes:
        effects = effects.assign(**changes)
    if _quick_effects_ok(effects):  # the pandera model passes exactly then; it reports otherwise
        return effects
    try:
        _model("Effects").validate(effects, lazy=True)
    except pe.SchemaErrors as err:
        raise report("effects", err, effects, ()) from None
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

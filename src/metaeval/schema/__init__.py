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
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..engines.frames import LazyTable, any_frame
from ..errors import SchemaError, excerpt, quote_list
from ._columns import (
    KEY_COLUMNS,
    REPLICATE,
    REPLICATE_DESIGN,
    SCORE_COLUMNS,
    empty_keys,
    integer_ids_as_strings,
    is_key_dtype,
    non_string_keys,
)
from ._columns import first_repeat as first_repeat  # io's readers and measures' checks
from ._report import in_rows, no_rows_error, report

TAKES = (
    "a pandas DataFrame (or a polars DataFrame or LazyFrame, a pyarrow Table, a DuckDB relation)"
)

__all__ = [  # noqa: F822  (the pandera models are module attributes loaded lazily)
    "KEY_COLUMNS",
    "SCORE_COLUMNS",
    "Scores",
    "Effects",
    "Pooled",
    "scores",
    "from_wide",
    "validate_scores",
    "validate_effects",
    "prepare_scores",
    "coerce_keys",
    "REPLICATE",
    "REPLICATE_DESIGN",
    "average_replicates",
    "checked_replicates",
    "recorded_design",
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


@any_frame
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


@any_frame
def average_replicates(df: pd.DataFrame) -> pd.DataFrame:
    """A scores table with a ``replicate`` column, each system's scores averaged over it.

    The replicate ids are checked like key columns (integers become strings; missing or
    empty ids are an error), and ``(task, query, system, metric, replicate)`` must be
    unique (:func:`checked_replicates`). The result has one row per ``(task, query, system, metric)``: the mean of the
    replicates that have the query (a query missing from some replicates of a system is
    averaged over the others), other columns kept from the first row. Tables without the
    column come back unchanged.

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
    if REPLICATE not in df.columns:
        return df
    df = checked_replicates(df)
    keys = [c for c in KEY_COLUMNS if c in df.columns]
    numeric = "value" in df.columns and pd.api.types.is_numeric_dtype(df["value"])
    if len(keys) == len(KEY_COLUMNS) and numeric:
        # each mean summed in replicate order, whatever the order of the rows
        df = df.sort_values(REPLICATE, kind="stable")
        grouped = df.groupby(keys, sort=False, observed=True, dropna=False)
        extra = [c for c in df.columns if c not in (*keys, "value", REPLICATE)]
        out = grouped["value"].mean().to_frame()
        if extra:
            out = out.join(grouped[extra].first())
        out = out.reset_index()
        for col in keys:  # keep the categoricals' categories
            if isinstance(df[col].dtype, pd.CategoricalDtype):
                out[col] = out[col].astype(df[col].dtype)
        return out[[c for c in df.columns if c != REPLICATE]]
    return df.drop(columns=REPLICATE)


@any_frame
def checked_replicates(df: pd.DataFrame) -> pd.DataFrame:
    """The checks of :func:`average_replicates`: replicate ids as strings, and a unique
    ``(task, query, system, metric, replicate)`` key; returns the table with the ids.

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
    ids = integer_ids_as_strings(df[REPLICATE])
    rep = df[REPLICATE] if ids is None else ids
    bad = rep.isna().to_numpy() | non_string_keys(rep) | empty_keys(rep)
    if bad.any() or not is_key_dtype(rep.dtype):
        rows = df.index[bad][:5].tolist() if bad.any() else []
        raise SchemaError(
            f"The column {REPLICATE!r} (the seed or fold of a repeated run) must hold string "
            f"or integer ids with no missing or empty values; rows {rows} do not "
            f"(dtype {rep.dtype})."
        )
    df = df.assign(**{REPLICATE: rep})
    keys = [*(c for c in KEY_COLUMNS if c in df.columns), REPLICATE]
    dup = df.duplicated(keys, keep=False).to_numpy()
    if len(keys) == len(KEY_COLUMNS) + 1 and dup.any():
        example = df.loc[dup, keys].head(3).to_string(index=False)
        raise SchemaError(
            f"{int(dup.sum())} rows share their (task, query, system, metric, replicate) "
            f"key with another row, e.g.\n{example}"
        )
    if len(keys) == len(KEY_COLUMNS) + 1:
        _check_not_folds(df)
    return df


@any_frame
def recorded_design(df: pd.DataFrame) -> str | None:
    """The replicate design a scores table records, or None.

    The one value of its ``replicate_design`` column, else ``attrs["replicates"]``
    (what a reader recorded, such as :func:`metaeval.io.read_inspect`'s ``"epochs"``);
    when both are there they must agree. Any frame (converted to pandas; a frame other
    than pandas has no ``attrs``, only the column).

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

    noted = df.attrs.get("replicates")
    noted = noted if noted in REPLICATE_DESIGNS else None
    if REPLICATE_DESIGN not in df.columns:
        return noted
    column = df[REPLICATE_DESIGN]
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


@any_frame(lazy=True)
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

    if isinstance(df, LazyTable):  # every check in the engine; the frame comes back as it is
        from ..engines.survey import validate

        validate(df)
        return df.native
    if not isinstance(df, pd.DataFrame):
        raise SchemaError(f"A scores table must be {TAKES}, not {type(df).__name__}.")
    if df.columns.duplicated().any():
        dup = list(df.columns[df.columns.duplicated()])
        raise SchemaError(f"The scores table has duplicated column names {dup}; rename them.")
    if len(df) == 0:
        raise no_rows_error([c for c in SCORE_COLUMNS if c not in df.columns])
    df = coerce_scores(df)
    if REPLICATE in df.columns:  # repeated runs: validate the averaged table
        validate_scores(average_replicates(df))
        return df
    # pandera needs unique row labels to report duplicate keys: check a copy with positions
    checked = df if df.index.is_unique else df.reset_index(drop=True)
    try:
        _model("Scores").validate(checked, lazy=True)
    except pe.SchemaErrors as err:
        labels = None if checked is df else df.index
        raise report("scores", err, checked, KEY_COLUMNS, labels) from None
    return df


@any_frame
def prepare_scores(df: pd.DataFrame, *, check_keys: bool = True) -> pd.DataFrame:
    """Validation as the first step of every method: a fast path for valid tables.

    Uniqueness of keys is checked where the keys are encoded (see
    :mod:`metaeval.paired.sufficient`), which calls :func:`validate_scores` for the full
    report when it finds duplicates. ``check_keys=False`` leaves the values of the key
    columns (missing, empty, not strings) to the caller as well, which checks them on
    their distinct values once it has encoded them (the paired layout, ``paired.layout``), and
    calls :func:`validate_scores` for the report; their dtypes are checked here.

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
        if REPLICATE in df.columns and len(df):
            df = coerce_scores(average_replicates(df))
        if _quick_scores_ok(df, keys=check_keys):
            return df
    validate_scores(df)  # raises with the full report
    raise AssertionError("unreachable: quick checks and the pandera model disagree")


@any_frame
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
        raise SchemaError(f"An effects table must be {TAKES}, not {type(df).__name__}.")
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
def map_columns(
    df: pd.DataFrame,
    columns: Mapping[str, str] | None = None,
    constants: Mapping[str, Any] | None = None,
    *,
    where: str = "metaeval.scores()",
) -> pd.DataFrame:
    """``df`` with its columns renamed to the standard names and constant columns added.

    ``columns`` maps a standard name (``task, query, system, metric, value``) to the
    table's column; ``constants`` a standard key name to the value every row takes.
    The input is not changed.
    """
    columns, constants = dict(columns or {}), dict(constants or {})
    standard = set(SCORE_COLUMNS)
    unknown = sorted((set(columns) | set(constants)) - standard)
    if unknown:
        raise SchemaError(
            f"{where}: {quote_list(unknown)} are not standard column names; map to "
            f"{quote_list(list(SCORE_COLUMNS))}."
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

    One metric on one collection, without those columns:

    >>> one = pd.DataFrame({"qid": [1, 1], "run": ["bm25", "tasb"], "score": [0.5, 0.7]})
    >>> metaeval.scores(one, query="qid", system="run", value="score",
    ...                 constants={"task": "robust04", "metric": "nDCG@10"})
           task query system   metric  value
    0  robust04     1   bm25  nDCG@10    0.5
    1  robust04     1   tasb  nDCG@10    0.7
    """
    named = {"task": task, "query": query, "system": system, "metric": metric, "value": value}
    constants = dict(constants or {})
    columns = {k: v for k, v in named.items() if k not in constants}
    out = map_columns(df, columns, constants)
    return validate_scores(
        out[[*SCORE_COLUMNS, *[c for c in out.columns if c not in SCORE_COLUMNS]]]
    )


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

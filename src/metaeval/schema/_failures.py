"""pandera's lazy errors turned into one :class:`~metaeval.SchemaError` a user can act on."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import pandas as pd

from ..errors import SchemaError, excerpt, quote_list

__all__ = [
    "PROBLEMS",
    "problem_name",
    "report",
    "duplicate_line",
    "missing_column_line",
    "problem_line",
    "dtype_line",
    "problems_error",
    "no_rows_error",
]

# ------------------------------------------------------------------ error report
PROBLEMS = {
    "column_in_dataframe": "missing column",
    "not_nullable": "missing values (NaN/None)",
    "string_or_categorical": "wrong type (needs strings or a categorical)",
    "string_elements": "values that are not strings",
    "not_empty": "empty names ('')",
    "finite": "non-finite values (±inf)",
    "positive_finite": "values that are not positive and finite",
    "multiple_fields_uniqueness": "duplicate keys",
}


def no_rows_error(missing: list[str]) -> SchemaError:
    """The error of a scores table without rows (checked before anything else but duplicated
    column names, in every engine): its missing columns are named too."""
    return SchemaError(
        "The scores table has no rows; there is nothing to analyse."
        + (f" (It also lacks the column(s) {missing}.)" if missing else "")
    )


def count_rows(n: int) -> str:
    """``"1 row"``, ``"2 rows"``."""
    return f"{n} row" if n == 1 else f"{n} rows"


def in_rows(n: int, examples: list[Any]) -> str:
    """``"in 1 row, e.g. row [3]"``, ``"in 7 rows, e.g. rows [1, 4]"``."""
    return f"in {count_rows(n)}, e.g. {'row' if n == 1 else 'rows'} {quote_list(examples)}"


def problem_name(check: str) -> str:
    if check in PROBLEMS:
        return PROBLEMS[check]
    if check.startswith("dtype("):
        return "wrong type (needs float values)"
    return check


def duplicate_line(n: int, rows: list[Any], key_columns: list[str], key: tuple[Any, ...]) -> str:
    """The report's line for duplicate keys: ``n`` rows, the first few ``rows``, the key."""
    return (
        f"- {n} rows share their ({', '.join(key_columns)}) key with another row, "
        f"e.g. rows {quote_list(rows[:5])} with key {excerpt(key, 200)}"
    )


def missing_column_line(column: str) -> str:
    return f"- column {column!r} is missing"


def problem_line(column: str, problem: str, n: int, rows: list[Any]) -> str:
    """``- column 'value' has non-finite values (±inf) in 2 rows, e.g. rows [3, 9]``."""
    return f"- column {column!r} has {problem} {in_rows(n, rows[:5])}"


def dtype_line(column: str, problem: str, dtype: Any) -> str:
    return f"- column {column!r} has the {problem} but has dtype {dtype}"


def problems_error(table: str, lines: list[str], cases: pd.DataFrame | None = None) -> SchemaError:
    """One :class:`SchemaError` listing every problem line of a table."""
    message = (
        f"The {table} table has {len(lines)} problem{'s' if len(lines) != 1 else ''}:\n"
        + "\n".join(lines)
    )
    return SchemaError(message, cases)


def _non_numbers(column: pd.Series, label: Any) -> str:
    """Where an object column that should hold numbers holds something else."""
    values = column.to_numpy()
    bad = np.flatnonzero(
        [isinstance(v, str | bytes) or not isinstance(v, numbers.Real) for v in values]
        & column.notna().to_numpy()
    )
    if not len(bad):
        return ""
    kinds = sorted({type(v).__name__ for v in values[bad]})
    return (
        f": {len(bad)} rows hold {', '.join(kinds)} values, e.g. rows "
        f"{quote_list([label(column.index[i]) for i in bad[:3]])} with values "
        f"{quote_list(list(values[bad[:3]]))}; numbers written as text "
        f"need pd.to_numeric(df[{column.name!r}])"
    )


def report(
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
            "problem": [problem_name(str(c)) for c in fc["check"]],
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
            lines.append(missing_column_line(column))
        elif problem == "duplicate keys":
            rows = pd.unique(part["row"].dropna())
            key_cols = [c for c in keys if c in df.columns]
            example = df.loc[rows[:2], key_cols] if len(rows) else df.iloc[:0]
            first = tuple(example.iloc[0]) if len(example) else ()
            lines.append(duplicate_line(len(rows), [label(r) for r in rows[:5]], key_cols, first))
        elif problem.startswith("wrong type"):
            got = df[column].dtype if column in df.columns else "?"
            line = dtype_line(column, problem, got)
            if column in df.columns and pd.api.types.is_object_dtype(got):
                line += _non_numbers(df[column], label)
            lines.append(line)
        elif problem == "values that are not strings":
            rows = list(pd.unique(part["row"].dropna()))
            values = df.loc[rows[:3], column].tolist()
            kinds = sorted({type(v).__name__ for v in df.loc[rows, column]})
            lines.append(
                f"- column {column!r} holds values that are not strings ({', '.join(kinds)}) "
                f"{in_rows(len(rows), [label(r) for r in rows[:3]])} with "
                f"values {quote_list(values)}; names must be strings (integer ids are converted), "
                f"e.g. df[{column!r}].astype(str) if they are names"
            )
        else:
            rows = list(pd.unique(part["row"].dropna()))
            lines.append(problem_line(column, problem, len(rows), [label(r) for r in rows[:5]]))
    if labels is not None:
        cases["row"] = [label(r) for r in cases["row"]]
    return problems_error(table, lines, cases)

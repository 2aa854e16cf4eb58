"""Tidy scores files: CSV, TSV, JSON lines or Parquet, by extension.

A scores file holds one row per ``(task, query, system, metric)`` with its
``value``, the table every metaeval function takes; other columns (a task-level
``domain``, say) are kept. Text formats may be gzip-compressed (``.csv.gz``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..errors import FormatError, MetaEvalError, SchemaError
from ..schema import KEY_COLUMNS, validate_scores

__all__ = ["read_scores", "write_scores", "SCORES_SUFFIXES"]

SCORES_SUFFIXES = (".csv", ".tsv", ".jsonl", ".ndjson", ".parquet", ".pq")
COLUMNS = [*KEY_COLUMNS, "value"]
LAYOUT = (
    "a scores table with the columns task, query, system, metric, value "
    "(one row per task, query, system and metric)"
)


def _kind(path: Path) -> str:
    name = path.name.lower()
    name = name[: -len(".gz")] if name.endswith(".gz") else name
    for suffix in SCORES_SUFFIXES:
        if name.endswith(suffix):
            return {".ndjson": ".jsonl", ".pq": ".parquet"}.get(suffix, suffix)
    raise FormatError(
        path,
        None,
        "the file name does not say its format",
        f"a name ending in one of {list(SCORES_SUFFIXES)} (text formats may add .gz)",
    )


def _parquet_engine_error(err: ImportError) -> MetaEvalError:
    return MetaEvalError(f"Parquet files need pyarrow: pip install 'metaeval[parquet]' ({err}).")


def read_scores(path: str | Path) -> pd.DataFrame:
    """Read a tidy scores file (CSV, TSV, JSON lines or Parquet, by extension).

    Key columns are read as strings (query ``007`` stays ``"007"``) and the
    table is checked with :func:`metaeval.validate_scores`.

    Raises
    ------
    metaeval.FormatError
        Naming the file and the line (for Parquet, the row) of the first
        problem: a missing column, a value that is not a number, NaN or ±inf,
        a repeated ``(task, query, system, metric)`` key, a line that is not
        JSON.

    Examples
    --------
    >>> import tempfile, pathlib, metaeval
    >>> from metaeval.io import read_scores, write_scores
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "scores.csv"
    >>> write_scores(metaeval.load_example(), path)
    >>> read_scores(path).shape
    (26940, 5)
    """
    path = Path(path)
    kind = _kind(path)
    if not path.is_file():
        raise FormatError(path, None, "no such file", "an existing file")
    keys = dict.fromkeys(KEY_COLUMNS, str)
    if kind in (".csv", ".tsv"):
        sep = "," if kind == ".csv" else "\t"
        try:
            df = pd.read_csv(path, sep=sep, dtype=keys, keep_default_na=False,
                             na_values={"value": ["", "NA", "NaN", "nan", "null"]})  # fmt: skip
        except pd.errors.EmptyDataError:
            raise FormatError(path, None, "the file is empty", LAYOUT) from None
        except (pd.errors.ParserError, UnicodeDecodeError) as err:
            raise FormatError(
                path, _line(str(err)), f"not a {kind[1:]} table ({err})", LAYOUT
            ) from None
    elif kind == ".jsonl":
        try:
            df = pd.read_json(path, lines=True, dtype=keys)
        except ValueError:
            raise _bad_json_line(path) from None
    else:
        try:
            df = pd.read_parquet(path)
        except ImportError as err:
            raise _parquet_engine_error(err) from None
        except Exception as err:  # noqa: BLE001 - pyarrow raises its own types
            raise FormatError(path, None, f"not a Parquet file ({err})", LAYOUT) from None
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise FormatError(
            path, 1 if kind != ".parquet" else None,
            f"the column(s) {missing} are missing (found {list(df.columns)})", LAYOUT,
        )  # fmt: skip
    if kind == ".jsonl":  # JSON numbers as keys: 7 -> "7", as in the text formats
        df = df.astype(keys)
    value = pd.to_numeric(df["value"], errors="coerce")
    text = value.isna() & df["value"].notna()
    if text.any():
        row = int(text.to_numpy().nonzero()[0][0])
        raise FormatError(path, _row_line(path, kind, row), f"value {df['value'].iloc[row]!r} is not a number", LAYOUT)  # fmt: skip
    df["value"] = value
    try:
        return validate_scores(df)
    except SchemaError as err:
        rows = pd.to_numeric(err.failure_cases.get("row"), errors="coerce").dropna()
        line = _row_line(path, kind, int(rows.min())) if len(rows) else None
        count = {".parquet": "", ".jsonl": " (rows count records from 0)"}.get(
            kind, " (rows count data lines from 0, after the header)"
        )
        raise FormatError(path, line, str(err).rstrip(".") + count, LAYOUT) from None


def _line(message: str) -> int | None:
    import re

    found = re.search(r"line (\d+)", message)
    return int(found.group(1)) if found else None


def _row_line(path: Path, kind: str, row: int) -> int | None:
    """The 1-based line of data row ``row`` (blank lines skipped); None for Parquet."""
    if kind == ".parquet":
        return None
    from .trec import open_text

    skip = 0 if kind == ".jsonl" else 1  # the header
    with open_text(path) as handle:
        seen = -skip
        for number, line in enumerate(handle, start=1):
            if line.strip():
                if seen == row:
                    return number
                seen += 1
    return None


def _bad_json_line(path: Path) -> FormatError:
    from .trec import open_text

    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                return FormatError(path, number, f"not JSON ({err})", LAYOUT)
            if not isinstance(record, dict):
                return FormatError(path, number, f"{type(record).__name__} instead of an object", LAYOUT)  # fmt: skip
    return FormatError(path, None, "not JSON lines", LAYOUT)


def write_scores(scores: pd.DataFrame, path: str | Path) -> None:
    """Write a scores table as CSV, TSV, JSON lines or Parquet, by extension.

    Text formats are gzip-compressed when the name ends in ``.gz``.
    """
    path = Path(path)
    kind = _kind(path)
    if kind == ".parquet":
        try:
            scores.to_parquet(path, index=False)
        except ImportError as err:
            raise _parquet_engine_error(err) from None
    elif kind == ".jsonl":
        scores.to_json(path, orient="records", lines=True, double_precision=15)
    else:
        scores.to_csv(path, sep="," if kind == ".csv" else "\t", index=False)

"""TREC qrels and run files (plain or gzip), read and written with line-exact errors."""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from ..errors import FormatError

__all__ = ["read_qrels", "read_run", "write_qrels", "write_run", "open_text"]

QRELS_LAYOUT = "TREC qrels: 'query iteration document relevance' per line, relevance an integer"
RUN_LAYOUT = (
    "a TREC run: 'query Q0 document rank score tag' (6 columns) or 'query document rank score' "
    "(4 columns) per line, score a number"
)


def open_text(path: str | Path) -> IO[str]:
    """Open a text file, gzip-compressed or not (recognised by its first bytes)."""
    path = Path(path)
    if not path.is_file():
        raise FormatError(path, None, "no such file", "an existing file")
    with open(path, "rb") as raw:
        magic = raw.read(2)
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def _table(path: str | Path, width: int | None, layout: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Whitespace-separated columns as strings, and each row's line number."""
    with open_text(path) as handle:
        try:
            df = pd.read_csv(handle, sep=r"\s+", header=None, dtype=str, skip_blank_lines=False,
                             keep_default_na=False, na_values=[],  # "nan" is text, not a gap
                             names=range(width) if width else None, engine="c")  # fmt: skip
        except pd.errors.ParserError as err:  # more fields than expected
            line = _line_from(str(err))
            raise FormatError(path, line, f"wrong number of columns ({err})", layout) from None
        except pd.errors.EmptyDataError:
            raise FormatError(path, None, "the file is empty", layout) from None
    lines = np.arange(1, len(df) + 1)
    gap = (df.isna() | (df == "")).to_numpy()
    blank = gap.all(axis=1)
    df, lines, gap = df[~blank].reset_index(drop=True), lines[~blank], gap[~blank]
    short = gap.any(axis=1)
    if short.any():
        raise FormatError(path, int(lines[short][0]), "too few columns", layout)
    return df, lines


def _line_from(message: str) -> int | None:
    import re

    match = re.search(r"line (\d+)", message)
    return int(match.group(1)) if match else None


def _numeric(
    path, values: pd.Series, lines: np.ndarray, layout: str, what: str, integer: bool = False
) -> np.ndarray:
    number = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(number)
    if integer:
        bad |= np.isfinite(number) & (number != np.round(number))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise FormatError(
            path,
            int(lines[i]),
            f"{what} {values.iloc[i]!r} is not {'an integer' if integer else 'a number'}",
            layout,
        )
    return number


def read_qrels(path: str | Path) -> pd.DataFrame:
    """Read TREC qrels: ``query_id, doc_id, relevance`` (the iteration column is dropped).

    Raises
    ------
    metaeval.FormatError
        Naming the file and line of the first malformed line.
    """
    df, lines = _table(path, 4, QRELS_LAYOUT)
    relevance = _numeric(path, df[3], lines, QRELS_LAYOUT, "relevance", integer=True)
    return pd.DataFrame(
        {
            "query_id": df[0].to_numpy(),
            "doc_id": df[2].to_numpy(),
            "relevance": relevance.astype(np.int64),
        }
    )


def read_run(path: str | Path) -> pd.DataFrame:
    """Read a TREC run with 6 or 4 columns: ``query_id, doc_id, score`` (and ``rank``).

    Raises
    ------
    metaeval.FormatError
        Naming the file and line of the first malformed line.
    """
    with open_text(path) as handle:
        first = next((line for line in handle if line.strip()), "")
    width = len(first.split())
    if width not in (4, 6):
        raise FormatError(path, 1, f"{width} columns", RUN_LAYOUT)
    df, lines = _table(path, width, RUN_LAYOUT)
    doc, rank, score = (2, 3, 4) if width == 6 else (1, 2, 3)
    return pd.DataFrame({
        "query_id": df[0].to_numpy(), "doc_id": df[doc].to_numpy(),
        "rank": _numeric(path, df[rank], lines, RUN_LAYOUT, "rank", integer=True).astype(np.int64),
        "score": _numeric(path, df[score], lines, RUN_LAYOUT, "score"),
    })  # fmt: skip


def write_qrels(qrels: pd.DataFrame, path: str | Path) -> None:
    """Write ``query_id, doc_id, relevance`` as TREC qrels (iteration 0)."""
    out = qrels[["query_id", "doc_id", "relevance"]].assign(it="0")[
        ["query_id", "it", "doc_id", "relevance"]
    ]
    out.to_csv(path, sep=" ", header=False, index=False, compression="infer")


def write_run(run: pd.DataFrame, path: str | Path, *, tag: str = "metaeval") -> None:
    """Write ``query_id, doc_id, score`` as a 6-column TREC run, ranked by score within each query."""
    out = run[["query_id", "doc_id", "score"]].sort_values(
        ["query_id", "score"], ascending=[True, False], kind="stable"
    )
    out = out.assign(q0="Q0", rank=out.groupby("query_id").cumcount() + 1, tag=tag)
    out[["query_id", "q0", "doc_id", "rank", "score", "tag"]].to_csv(
        path, sep=" ", header=False, index=False, compression="infer"
    )

"""TREC qrels and run files (plain or gzip), read and written with line-exact errors."""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import FormatError, excerpt
from ..schema import first_repeat
from ._text import no_records, open_text

__all__ = ["read_qrels", "read_run", "write_qrels", "write_run", "open_text"]

QRELS_LAYOUT = "TREC qrels: 'query iteration document relevance' per line, relevance an integer"
RUN_LAYOUT = (
    "a TREC run: 'query Q0 document rank score tag' (6 columns) or 'query document rank score' "
    "(4 columns) per line, score a number"
)


def _table(path: str | Path, width: int, layout: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Whitespace-separated columns as strings, and each row's line number."""
    with open_text(path) as handle:
        try:
            df = pd.read_csv(
                handle,
                sep=r"\s+",
                header=None,
                dtype=str,
                skip_blank_lines=False,
                keep_default_na=False,
                na_values=[],  # "nan" is text, not a gap
                names=range(width),
                engine="c",
                quoting=csv.QUOTE_NONE,
            )  # TREC has no quoting
        except pd.errors.ParserError:  # some rows longer than `width`
            raise _wrong_width(path, width, layout) from None
        except pd.errors.EmptyDataError:  # nothing, or only blank lines
            handle.seek(0)
            raise no_records(path, layout, bool(handle.read(1))) from None
    if not isinstance(df.index, pd.RangeIndex):  # every row longer: pandas made an index of them
        raise _wrong_width(path, width, layout)
    lines = np.arange(1, len(df) + 1)
    gap = (df.isna() | (df == "")).to_numpy()
    blank = gap.all(axis=1)
    df, lines, gap = df[~blank].reset_index(drop=True), lines[~blank], gap[~blank]
    if df.empty:
        raise no_records(path, layout, len(blank) > 0)
    if gap.any():
        raise _wrong_width(path, width, layout)
    return df, lines


def _typed_table(path: str | Path, width: int, numbers: dict[int, Any]) -> pd.DataFrame | None:
    """The columns of a well-formed file, ``numbers`` parsed by the C parser (int64 or
    float64; ids as str objects), or None wherever :func:`_table` and :func:`_numeric`
    must look: a blank or short line, a number the C parser does not read as the type, one
    that is not finite or not exactly a float64, bytes that are not UTF-8.

    What it returns equals what the checked route gives (the C parser's float64 is
    pandas' ``to_numeric``; an int64 below 2^53 is its float): it only skips the route's
    text columns and ``to_numeric`` on them, 2–3x faster for a large qrels file.
    """
    dtype: dict[int, Any] = {i: numbers.get(i, object) for i in range(width)}
    try:
        with open_text(path) as handle:
            df = pd.read_csv(
                handle,
                sep=r"\s+",
                header=None,
                dtype=dtype,
                skip_blank_lines=False,
                keep_default_na=False,
                na_values=[],
                names=range(width),
                engine="c",
                quoting=csv.QUOTE_NONE,
            )
    except (ValueError, OverflowError, TypeError, FormatError, pd.errors.ParserError):
        return None  # EmptyDataError is a ValueError
    if df.empty or not isinstance(df.index, pd.RangeIndex):
        return None
    for i in range(width):
        column = df[i].to_numpy()
        if i in numbers:
            bad = ~np.isfinite(column) if column.dtype.kind == "f" else np.abs(column) > 2**53
        else:
            bad = pd.isna(column) | (column == "")
        if bad.any():
            return None
    return df


def _wrong_width(path: str | Path, width: int, layout: str) -> FormatError:
    """The error for the first line without ``width`` columns (error path only)."""
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            fields = _FIELDS.split(line.strip(" \t\r\n"))
            if fields != [""] and len(fields) != width:
                problem = "too few columns" if len(fields) < width else "wrong number of columns"
                return FormatError(
                    path,
                    number,
                    f"{problem} ({len(fields)}, not {width}): {excerpt(line.rstrip(_EOL))}",
                    layout,
                )
    return FormatError(path, None, f"rows without {width} columns", layout)  # pragma: no cover


_FIELDS = re.compile(r"[ \t]+")  # the separators of pandas' sep=r"\s+"
_EOL = "\r\n"


def invalid_numbers(values: pd.Series, integer: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``values`` as floats (text that is no number becomes NaN) and where they are not finite
    numbers (with ``integer``: not integers): the one rule for relevance grades and run
    scores, in files (:func:`read_qrels`, :func:`read_run`) and in tables
    (:func:`metaeval.io.as_qrels`, :func:`metaeval.io.as_run`).

    >>> invalid_numbers(pd.Series(["1", "1.7", "high"]), integer=True)[1]
    array([False,  True,  True])
    """
    number = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(number)
    if integer:
        bad |= np.isfinite(number) & (number != np.round(number))
    return number, bad


def _numeric(
    path, values: pd.Series, lines: np.ndarray, layout: str, what: str, integer: bool = False
) -> np.ndarray:
    number, bad = invalid_numbers(values, integer)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise FormatError(
            path,
            int(lines[i]),
            f"{what} {excerpt(values.iloc[i])} is not {'an integer' if integer else 'a number'}",
            layout,
        )
    return number


def check_unique_pairs(
    path: str | Path, query: Sequence, doc: Sequence, lines: Sequence[int] | np.ndarray, layout: str
) -> None:
    """Refuse a document listed twice for a query (qrels, runs, elinor JSON lines alike).

    Raises
    ------
    metaeval.FormatError
        Naming the file, the line of the repeat and the line of the first listing.
    """
    found = first_repeat(query, doc)
    if found is not None:
        first, repeat = found
        raise FormatError(
            path,
            int(lines[repeat]),
            f"document {excerpt(doc[repeat])} of query {excerpt(query[repeat])} appears twice "
            f"(first on line {int(lines[first])})",
            f"{layout}, each document at most once per query",
        )


def read_qrels(path: str | Path) -> pd.DataFrame:
    """Read TREC qrels: ``query_id, doc_id, relevance`` (the iteration column is dropped).

    Text is UTF-8 (a byte-order mark and ``\\r\\n`` line ends are fine), plain or
    gzip-compressed.

    Parameters
    ----------
    path : str or pathlib.Path
        The qrels file.

    Raises
    ------
    metaeval.FormatError
        Naming the file and line of the first malformed line (too few or too
        many columns, a relevance that is not an integer, bytes that are not
        UTF-8), a document judged twice for a query (naming both lines), or a
        file without records.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from metaeval.io import read_qrels
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(tmp.name) / "qrels.txt"
    >>> _ = path.write_text("q1 0 d1 1\\nq1 0 d2 0\\nq2 0 d7 2\\n")
    >>> read_qrels(path)
      query_id doc_id  relevance
    0       q1     d1          1
    1       q1     d2          0
    2       q2     d7          2
    >>> tmp.cleanup()
    """
    typed = _typed_table(path, 4, {3: np.int64})
    if typed is not None:
        df, lines, relevance = typed, np.arange(1, len(typed) + 1), typed[3].to_numpy()
    else:
        df, lines = _table(path, 4, QRELS_LAYOUT)
        relevance = _numeric(path, df[3], lines, QRELS_LAYOUT, "relevance", integer=True)
    check_unique_pairs(path, df[0].to_numpy(), df[2].to_numpy(), lines, QRELS_LAYOUT)
    return pd.DataFrame(
        {
            "query_id": df[0].to_numpy(),
            "doc_id": df[2].to_numpy(),
            "relevance": relevance.astype(np.int64),
        }
    )


def read_run(path: str | Path) -> pd.DataFrame:
    """Read a TREC run with 6 or 4 columns: ``query_id, doc_id, score`` (and ``rank``).

    The first record's column count sets the layout of the file. Text is UTF-8
    (a byte-order mark and ``\\r\\n`` line ends are fine), plain or gzip-compressed.

    Parameters
    ----------
    path : str or pathlib.Path
        The run file.

    Raises
    ------
    metaeval.FormatError
        Naming the file and line of the first malformed line (a column count
        other than the first record's, a rank or score that is not a number,
        bytes that are not UTF-8), a document ranked twice for a query (naming
        both lines), or a file without records.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from metaeval.io import read_run
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(tmp.name) / "bm25.run"
    >>> _ = path.write_text("q1 d2 1 0.9\\nq1 d1 2 0.5\\nq2 d7 1 0.3\\n")  # 4 columns
    >>> read_run(path)
      query_id doc_id  rank  score
    0       q1     d2     1    0.9
    1       q1     d1     2    0.5
    2       q2     d7     1    0.3
    >>> tmp.cleanup()
    """
    width = _run_width(path)
    doc, rank, score = (2, 3, 4) if width == 6 else (1, 2, 3)
    typed = _typed_table(path, width, {rank: np.int64, score: np.float64})
    df, lines = (
        (typed, np.arange(1, len(typed) + 1))
        if typed is not None
        else _table(path, width, RUN_LAYOUT)
    )
    check_unique_pairs(path, df[0].to_numpy(), df[doc].to_numpy(), lines, RUN_LAYOUT)
    if typed is not None:
        ranks, scores = typed[rank].to_numpy(), typed[score].to_numpy()
    else:
        ranks = _numeric(path, df[rank], lines, RUN_LAYOUT, "rank", integer=True)
        scores = _numeric(path, df[score], lines, RUN_LAYOUT, "score")
    return pd.DataFrame(
        {
            "query_id": df[0].to_numpy(),
            "doc_id": df[doc].to_numpy(),
            "rank": ranks.astype(np.int64),
            "score": scores,
        }
    )


def _run_width(path: str | Path) -> int:
    """The column count of a run (6 or 4), set by its first record."""
    first, has_lines = None, False
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            has_lines = True
            if line.strip():
                first = (number, line)
                break
    if first is None:
        raise no_records(path, RUN_LAYOUT, has_lines)
    width = len(first[1].split())
    if width not in (4, 6):
        raise FormatError(
            path,
            first[0],
            f"{width} columns, not 6 or 4: {excerpt(first[1].rstrip(_EOL))}",
            RUN_LAYOUT,
        )
    return width


def read_nested(path: str | Path, kind: str) -> dict[str, dict[str, Any]]:
    """A TREC qrels (``kind="qrels"``) or run (``kind="run"``) file as ``{query: {document:
    value}}``: int relevance grades or float scores, queries in file order.

    The form ir_measures evaluates (:func:`metaeval.ir.evaluate` reads files with it),
    without a DataFrame in between; read and checked as :func:`read_qrels` and
    :func:`read_run` read and check.

    Raises
    ------
    metaeval.FormatError
        As :func:`read_qrels` and :func:`read_run`.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from metaeval.io.trec import read_nested
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(tmp.name) / "qrels.txt"
    >>> _ = path.write_text("q2 0 d7 2\\nq1 0 d1 1\\nq2 0 d1 0\\n")
    >>> read_nested(path, "qrels")
    {'q2': {'d7': 2, 'd1': 0}, 'q1': {'d1': 1}}
    >>> tmp.cleanup()
    """
    numbers: dict[int, Any]
    if kind == "qrels":
        layout, width, doc, value, numbers = QRELS_LAYOUT, 4, 2, 3, {3: np.int64}
    else:
        width = _run_width(path)
        doc, rank, value = (2, 3, 4) if width == 6 else (1, 2, 3)
        layout, numbers = RUN_LAYOUT, {rank: np.int64, value: np.float64}
    typed = _typed_table(path, width, numbers)
    if typed is None:  # the checked route: raises, or converts what it accepts
        df = read_qrels(path) if kind == "qrels" else read_run(path)
        query, docs = df["query_id"].to_numpy(dtype=object), df["doc_id"].to_numpy(dtype=object)
        return nested_from_columns(query, docs, df.iloc[:, -1].to_numpy())
    query, docs = typed[0].to_numpy(), typed[doc].to_numpy()
    out = nested_from_columns(query, docs, typed[value].to_numpy())
    if sum(map(len, out.values())) < len(query):  # a document twice for a query
        check_unique_pairs(path, query, docs, np.arange(1, len(query) + 1), layout)
    return out


def nested_from_columns(
    query: np.ndarray, doc: np.ndarray, value: np.ndarray
) -> dict[str, dict[str, Any]]:
    """``{query: {doc: value}}`` from three columns (ids as str objects), queries in order
    of first appearance; values as Python ints or floats. A (query, doc) pair listed twice
    keeps its last value.
    """
    codes, queries = pd.factorize(query)
    order = np.argsort(codes, kind="stable")
    docs = doc[order].tolist()
    values = value[order].tolist()
    bounds = np.r_[0, np.cumsum(np.bincount(codes, minlength=len(queries)))].tolist()
    return {
        q: dict(zip(docs[a:b], values[a:b], strict=True))
        for q, a, b in zip(
            np.asarray(queries, dtype=object).tolist(), bounds[:-1], bounds[1:], strict=True
        )
    }


def write_qrels(qrels: pd.DataFrame, path: str | Path) -> None:
    """Write ``query_id, doc_id, relevance`` as TREC qrels (iteration 0).

    Parameters
    ----------
    qrels : pandas.DataFrame
        ``query_id, doc_id, relevance``, as :func:`~metaeval.io.read_qrels` returns them.
    path : str or pathlib.Path
        The file to write.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pandas as pd
    >>> from metaeval.io import read_qrels, write_qrels
    >>> qrels = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["d1", "d2", "d7"],
    ...                       "relevance": [1, 0, 2]})
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(tmp.name) / "qrels.txt"
    >>> write_qrels(qrels, path)
    >>> print(path.read_text(), end="")
    q1 0 d1 1
    q1 0 d2 0
    q2 0 d7 2
    >>> read_qrels(path).equals(qrels)
    True
    >>> tmp.cleanup()
    """
    out = qrels[["query_id", "doc_id", "relevance"]].assign(it="0")[
        ["query_id", "it", "doc_id", "relevance"]
    ]
    out.to_csv(path, sep=" ", header=False, index=False, compression="infer")


def write_run(run: pd.DataFrame, path: str | Path, *, tag: str = "metaeval") -> None:
    """Write ``query_id, doc_id, score`` as a 6-column TREC run, ranked by score within each query.

    Parameters
    ----------
    run : pandas.DataFrame
        ``query_id, doc_id, score``, as :func:`~metaeval.io.read_run` returns them.
    path : str or pathlib.Path
        The file to write.
    tag : str, default "metaeval"
        The run tag, the sixth column.

    Examples
    --------
    >>> import gzip, pathlib, tempfile
    >>> import pandas as pd
    >>> from metaeval.io import write_run
    >>> run = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["d1", "d2", "d7"],
    ...                     "score": [0.5, 0.9, 0.3]})
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(tmp.name) / "bm25.run.gz"  # gzip-compressed, by the name
    >>> write_run(run, path, tag="bm25")
    >>> with gzip.open(path, "rt") as handle:
    ...     print(handle.read(), end="")
    q1 Q0 d2 1 0.9 bm25
    q1 Q0 d1 2 0.5 bm25
    q2 Q0 d7 1 0.3 bm25
    >>> tmp.cleanup()
    """
    out = run[["query_id", "doc_id", "score"]].sort_values(
        ["query_id", "score"], ascending=[True, False], kind="stable"
    )
    out = out.assign(q0="Q0", rank=out.groupby("query_id").cumcount() + 1, tag=tag)
    out[["query_id", "q0", "doc_id", "rank", "score", "tag"]].to_csv(
        path, sep=" ", header=False, index=False, compression="infer"
    )

"""elinor's formats: true/pred JSONL, per-query CSVs, and TREC <-> JSONL conversion.

elinor (github.com/kampersanda/elinor) reads relevance judgments ("true") and
predictions ("pred") as JSON lines ``{"query_id": ..., "doc_id": ..., "score": ...}``
(integer scores for true, real ones for pred) and writes per-query results as CSV
files with a ``query_id`` column and one column per metric, one file per system.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..engines import any_frame
from ..errors import FormatError, SchemaError, check_option, excerpt, quote_list
from ..schema import first_repeat
from ._text import iter_jsonl, read_delimited, read_text
from .trec import check_unique_pairs, read_qrels, read_run, write_qrels, write_run

__all__ = ["read_jsonl", "write_jsonl", "trec_to_jsonl", "jsonl_to_trec", "read_per_query_csv"]

JSONL_LAYOUT = 'one JSON object per line: {"query_id": str, "doc_id": str, "score": number}'
PER_QUERY_LAYOUT = "a CSV with a query_id column and one numeric column per metric"


def read_jsonl(path: str | Path, *, rel_type: str = "pred") -> pd.DataFrame:
    """Read an elinor true/pred JSONL file.

    Returns ``query_id, doc_id`` and ``relevance`` (int, ``rel_type="true"``) or
    ``score`` (float, ``rel_type="pred"``). Text is UTF-8 (a byte-order mark
    and ``\\r\\n`` line ends are fine), plain or gzip-compressed; blank lines are
    skipped.

    Parameters
    ----------
    path : str or pathlib.Path
        The JSONL file, one ``{"query_id", "doc_id", "relevance" or "score"}``
        record a line.
    rel_type : {"pred", "true"}, default "pred"
        ``"true"``: relevance judgements (elinor's true file); ``"pred"``: a run's
        scores (its pred file).

    Raises
    ------
    metaeval.FormatError
        Naming the file and line of the first bad record (not JSON, a key
        given twice, a missing key, an id that is not a string or integer, a
        non-number score, a non-integer relevance), a repeated
        ``(query_id, doc_id)`` (naming both lines, as :func:`metaeval.io.read_qrels`
        and :func:`metaeval.io.read_run` do), or a file without records.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from metaeval.io import read_jsonl
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(tmp.name) / "true.jsonl"
    >>> _ = path.write_text('{"query_id": "q1", "doc_id": "d1", "score": 1}\\n'
    ...                     '{"query_id": "q2", "doc_id": "d7", "score": 2}\\n')
    >>> read_jsonl(path, rel_type="true")
      query_id doc_id  relevance
    0       q1     d1          1
    1       q2     d7          2
    >>> tmp.cleanup()
    """
    check_option("rel_type", rel_type, ["true", "pred"])
    rows, lines = [], []
    for number, record in iter_jsonl(path, JSONL_LAYOUT, "bad record"):
        try:
            ids = (record["query_id"], record["doc_id"])
            score = record["score"]
        except KeyError as err:
            raise FormatError(path, number, f"bad record ({err})", JSONL_LAYOUT) from None
        for name, given in zip(("query_id", "doc_id"), ids, strict=True):
            if isinstance(given, bool) or not isinstance(given, str | int):
                raise FormatError(
                    path, number, f"{name} {excerpt(given)} is not a string", JSONL_LAYOUT
                )
        if isinstance(score, bool) or not isinstance(score, int | float) or not np.isfinite(score):
            raise FormatError(path, number, f"score {excerpt(score)} is not a number", JSONL_LAYOUT)
        if rel_type == "true" and float(score) != int(score):
            raise FormatError(
                path, number, f"relevance {excerpt(score)} is not an integer", JSONL_LAYOUT
            )
        rows.append((str(ids[0]), str(ids[1]), score))
        lines.append(number)
    value = "relevance" if rel_type == "true" else "score"
    df = pd.DataFrame(rows, columns=["query_id", "doc_id", value])
    check_unique_pairs(
        path, df["query_id"].to_numpy(), df["doc_id"].to_numpy(), lines, JSONL_LAYOUT
    )
    return df.astype({value: np.int64 if rel_type == "true" else np.float64})


@any_frame
def write_jsonl(table: pd.DataFrame, path: str | Path) -> None:
    """Write ``query_id, doc_id`` and ``relevance`` or ``score`` as elinor JSONL.

    Parameters
    ----------
    table : pandas.DataFrame
        ``query_id, doc_id`` and ``relevance`` (a true file) or ``score`` (a pred
        file), as :func:`~metaeval.io.read_jsonl` returns them.
    path : str or pathlib.Path
        The file to write.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pandas as pd
    >>> from metaeval.io import write_jsonl
    >>> run = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["d2", "d7"], "score": [0.9, 0.3]})
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(tmp.name) / "pred.jsonl"
    >>> write_jsonl(run, path)
    >>> print(path.read_text(), end="")
    {"query_id": "q1", "doc_id": "d2", "score": 0.9}
    {"query_id": "q2", "doc_id": "d7", "score": 0.3}
    >>> tmp.cleanup()
    """
    value = "relevance" if "relevance" in table.columns else "score"
    if value not in table.columns:
        raise SchemaError("write_jsonl() needs a relevance or a score column.")
    with open(path, "w", encoding="utf-8") as handle:
        for q, d, s in zip(table["query_id"], table["doc_id"], table[value], strict=True):
            handle.write(
                json.dumps(
                    {
                        "query_id": str(q),
                        "doc_id": str(d),
                        "score": s.item() if hasattr(s, "item") else s,
                    }
                )
                + "\n"
            )


def trec_to_jsonl(trec: str | Path, jsonl: str | Path, *, rel_type: str) -> None:
    """Convert TREC qrels (``rel_type="true"``) or a run (``"pred"``) to elinor JSONL.

    Parameters
    ----------
    trec : str or pathlib.Path
        The TREC qrels or run to read.
    jsonl : str or pathlib.Path
        The elinor JSONL file to write.
    rel_type : {"true", "pred"}
        What the TREC file holds: qrels or a run.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from metaeval.io import trec_to_jsonl
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder = pathlib.Path(tmp.name)
    >>> _ = (folder / "bm25.run").write_text("q1 Q0 d2 1 0.9 bm25\\nq1 Q0 d1 2 0.5 bm25\\n")
    >>> trec_to_jsonl(folder / "bm25.run", folder / "bm25.jsonl", rel_type="pred")
    >>> print((folder / "bm25.jsonl").read_text(), end="")
    {"query_id": "q1", "doc_id": "d2", "score": 0.9}
    {"query_id": "q1", "doc_id": "d1", "score": 0.5}
    >>> tmp.cleanup()
    """
    check_option("rel_type", rel_type, ["true", "pred"])
    table = (
        read_qrels(trec) if rel_type == "true" else read_run(trec)[["query_id", "doc_id", "score"]]
    )
    write_jsonl(table, jsonl)


def jsonl_to_trec(
    jsonl: str | Path, trec: str | Path, *, rel_type: str, tag: str = "metaeval"
) -> None:
    """Convert elinor JSONL to TREC qrels (``rel_type="true"``) or a 6-column run (``"pred"``).

    Parameters
    ----------
    jsonl : str or pathlib.Path
        The elinor JSONL file to read.
    trec : str or pathlib.Path
        The TREC file to write.
    rel_type : {"true", "pred"}
        What the JSONL holds: relevance judgements or a run's scores.
    tag : str, default "metaeval"
        The run tag (the sixth column of a run).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from metaeval.io import jsonl_to_trec
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder = pathlib.Path(tmp.name)
    >>> _ = (folder / "pred.jsonl").write_text('{"query_id": "q1", "doc_id": "d1", "score": 0.5}\\n'
    ...                                        '{"query_id": "q1", "doc_id": "d2", "score": 0.9}\\n')
    >>> jsonl_to_trec(folder / "pred.jsonl", folder / "run.txt", rel_type="pred", tag="dense")
    >>> print((folder / "run.txt").read_text(), end="")
    q1 Q0 d2 1 0.9 dense
    q1 Q0 d1 2 0.5 dense
    >>> tmp.cleanup()
    """
    table = read_jsonl(jsonl, rel_type=rel_type)
    if rel_type == "true":
        write_qrels(table, trec)
    else:
        write_run(table, trec, tag=tag)


def read_per_query_csv(
    files: Mapping[str, str | Path] | Sequence[str | Path], *, task: str = "default"
) -> pd.DataFrame:
    """Per-query CSVs (``query_id`` + one column per metric), one file per system.

    Parameters
    ----------
    files
        ``{system: path}``, or paths (the system is the file name without suffix).
    task : str, default "default"
        The task the files belong to.

    Returns
    -------
    pandas.DataFrame
        A scores table ``task, query, system, metric, value``.

    Raises
    ------
    metaeval.FormatError
        Naming the file and the line: an empty file or one without data rows,
        a header without ``query_id`` and a metric or naming a column twice, a
        row with more or fewer fields than the header (quote a field holding
        a comma), a query id given twice (naming both lines), a value that is
        not a finite number, bytes that are not UTF-8.
    metaeval.SchemaError
        When two paths have the same file name.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from metaeval.io import read_per_query_csv
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder = pathlib.Path(tmp.name)
    >>> _ = (folder / "bm25.csv").write_text("query_id,ndcg@10,recall@100\\nq1,0.5,0.8\\nq2,0.25,1\\n")
    >>> _ = (folder / "splade.csv").write_text("query_id,ndcg@10,recall@100\\nq1,0.75,0.9\\nq2,0.5,1\\n")
    >>> scores = read_per_query_csv([folder / "bm25.csv", folder / "splade.csv"], task="toy")
    >>> scores.query("metric == 'ndcg@10'")
      task query  system   metric  value
    0  toy    q1    bm25  ndcg@10   0.50
    1  toy    q2    bm25  ndcg@10   0.25
    4  toy    q1  splade  ndcg@10   0.75
    5  toy    q2  splade  ndcg@10   0.50
    >>> tmp.cleanup()
    """
    named = dict(files) if isinstance(files, Mapping) else {Path(p).stem: p for p in files}
    if len(named) < (len(files) if not isinstance(files, Mapping) else 0):
        raise SchemaError("Two files have the same name; pass {system: path}.")
    frames = []
    for system, path in named.items():
        text = read_text(path)
        header, starts = read_delimited(path, text, ",", PER_QUERY_LAYOUT)
        if "query_id" not in header or len(header) < 2 or len(set(header)) < len(header):
            problem = (
                "a column named twice"
                if len(set(header)) < len(header)
                else "no query_id column"
                if "query_id" not in header
                else "no metric column"
            )
            raise FormatError(
                path, 1, f"the header {quote_list(header)} has {problem}", PER_QUERY_LAYOUT
            )
        if not len(starts):
            raise FormatError(path, None, "a header but no data rows", PER_QUERY_LAYOUT)
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, index_col=False)
        repeat = first_repeat(df["query_id"])
        if repeat is not None:
            first, again = repeat
            raise FormatError(
                path,
                int(starts[again]),
                f"query_id {excerpt(df['query_id'].iloc[again])} appears twice (first on line "
                f"{int(starts[first])})",
                f"{PER_QUERY_LAYOUT}, one row per query",
            )
        long = df.melt(id_vars="query_id", var_name="metric", value_name="value")
        number = pd.to_numeric(long["value"], errors="coerce")
        bad = number.isna() | ~np.isfinite(number.fillna(0))
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise FormatError(
                path,
                int(starts[i % len(df)]),
                f"{_name(long['metric'].iloc[i])}={excerpt(long['value'].iloc[i])} is not a number",
                PER_QUERY_LAYOUT,
            )
        frames.append(
            pd.DataFrame(
                {
                    "task": task,
                    "query": long["query_id"],
                    "system": str(system),
                    "metric": long["metric"],
                    "value": number.astype(float),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _name(column: str) -> str:
    """A column name for a message: as it is when short and printable, else an excerpt."""
    return column if len(column) <= 40 and column.isprintable() else excerpt(column)

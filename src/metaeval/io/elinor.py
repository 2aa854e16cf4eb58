"""elinor's formats: true/pred JSONL, per-query CSVs, and TREC <-> JSONL conversion.

elinor (github.com/kampersanda/elinor) reads relevance judgments ("true") and
predictions ("pred") as JSON lines ``{"query_id": ..., "doc_id": ..., "score": ...}``
(integer scores for true, real ones for pred) and writes per-query results as CSV
files with a ``query_id`` column and one column per metric, one file per system.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import FormatError, SchemaError, check_option
from .trec import open_text, read_qrels, read_run, write_qrels, write_run

__all__ = ["read_jsonl", "write_jsonl", "trec_to_jsonl", "jsonl_to_trec", "read_per_query_csv"]

JSONL_LAYOUT = 'one JSON object per line: {"query_id": str, "doc_id": str, "score": number}'


def read_jsonl(path: str | Path, *, rel_type: str = "pred") -> pd.DataFrame:
    """Read an elinor true/pred JSONL file.

    Returns ``query_id, doc_id`` and ``relevance`` (int, ``rel_type="true"``) or
    ``score`` (float, ``rel_type="pred"``).

    Raises
    ------
    metaeval.FormatError
        Naming the file and line of the first bad record (not JSON, a missing
        key, a non-number score, a non-integer relevance, a repeated
        (query_id, doc_id)).
    """
    check_option("rel_type", rel_type, ["true", "pred"])
    rows, seen = [], set()
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                key = (str(record["query_id"]), str(record["doc_id"]))
                score = record["score"]
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                raise FormatError(path, number, f"bad record ({err})", JSONL_LAYOUT) from None
            if (
                isinstance(score, bool)
                or not isinstance(score, int | float)
                or not np.isfinite(score)
            ):
                raise FormatError(path, number, f"score {score!r} is not a number", JSONL_LAYOUT)
            if rel_type == "true" and float(score) != int(score):
                raise FormatError(
                    path, number, f"relevance {score!r} is not an integer", JSONL_LAYOUT
                )
            if key in seen:
                raise FormatError(
                    path, number, f"(query_id, doc_id) {key} appears twice", JSONL_LAYOUT
                )
            seen.add(key)
            rows.append((*key, score))
    if not rows:
        raise FormatError(path, None, "the file has no records", JSONL_LAYOUT)
    value = "relevance" if rel_type == "true" else "score"
    df = pd.DataFrame(rows, columns=["query_id", "doc_id", value])
    return df.astype({value: np.int64 if rel_type == "true" else np.float64})


def write_jsonl(table: pd.DataFrame, path: str | Path) -> None:
    """Write ``query_id, doc_id`` and ``relevance`` or ``score`` as elinor JSONL."""
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
    """Convert TREC qrels (``rel_type="true"``) or a run (``"pred"``) to elinor JSONL."""
    check_option("rel_type", rel_type, ["true", "pred"])
    table = (
        read_qrels(trec) if rel_type == "true" else read_run(trec)[["query_id", "doc_id", "score"]]
    )
    write_jsonl(table, jsonl)


def jsonl_to_trec(
    jsonl: str | Path, trec: str | Path, *, rel_type: str, tag: str = "metaeval"
) -> None:
    """Convert elinor JSONL to TREC qrels (``rel_type="true"``) or a 6-column run (``"pred"``)."""
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
    """
    named = dict(files) if isinstance(files, Mapping) else {Path(p).stem: p for p in files}
    if len(named) < (len(files) if not isinstance(files, Mapping) else 0):
        raise SchemaError("Two files have the same name; pass {system: path}.")
    frames = []
    for system, path in named.items():
        layout = "a CSV with a query_id column and one numeric column per metric"
        try:
            with open_text(path) as handle:
                df = pd.read_csv(handle, dtype={"query_id": str})
        except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
            raise FormatError(path, None, str(err), layout) from None
        if "query_id" not in df.columns or df.shape[1] < 2:
            raise FormatError(path, 1, f"header {list(df.columns)}", layout)
        long = df.melt(id_vars="query_id", var_name="metric", value_name="value")
        number = pd.to_numeric(long["value"], errors="coerce")
        bad = number.isna() | ~np.isfinite(number.fillna(0))
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            row = i % len(df)
            raise FormatError(
                path,
                row + 2,
                f"{long['metric'].iloc[i]}={long['value'].iloc[i]!r} is not a number",
                layout,
            )
        frames.append(pd.DataFrame({"task": task, "query": long["query_id"], "system": str(system),
                                    "metric": long["metric"], "value": number.astype(float)}))  # fmt: skip
    return pd.concat(frames, ignore_index=True)

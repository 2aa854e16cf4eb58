"""lighteval per-sample details (``--save-details`` Parquet files)."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import FormatError, MetaEvalWarning, SchemaError, excerpt, warn_groups

__all__ = ["read_lighteval"]

LAYOUT = (
    "a lighteval details Parquet file details_<task>_<timestamp>.parquet with a column "
    "'metrics' (lighteval < 0.10) or 'metric' (≥ 0.10) holding one {metric: number} per sample"
)
_NAME = re.compile(r"^details_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d\-:.]+)\.parquet$")
_COLUMNS = ("metrics", "metric")


def _task_of(path: Path) -> str:
    match = _NAME.match(path.name)
    if not match:
        raise FormatError(
            path, None, "the file name is not details_<task>_<timestamp>.parquet", LAYOUT
        )
    return match["task"]


def _columns(path: Path) -> tuple[str, Any, list[Any] | None]:
    """The metric column's name, the column (a pyarrow array), and the documents' ids
    (None: not logged)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if not path.is_file():
        raise FormatError(path, None, "no such file", LAYOUT)
    try:
        schema = pq.read_schema(path)
        column = next((c for c in _COLUMNS if c in schema.names), None)
        if column is None:
            raise FormatError(
                path,
                None,
                f"no column 'metrics' or 'metric' (columns: {', '.join(schema.names)})",
                LAYOUT,
            )
        doc = schema.field("doc").type if "doc" in schema.names else None
        read = [column] + ["doc"] * (doc is not None)
        table = pq.read_table(path, columns=read)
        ids = None
        if isinstance(doc, pa.StructType) and doc.get_field_index("id") >= 0:
            ids = pc.struct_field(table.column("doc"), "id").to_pylist()
        elif doc is not None and pa.types.is_string(doc):  # cast to str by lighteval
            docs = [_literal(text) for text in table.column("doc").to_pylist()]
            ids = [doc.get("id") if isinstance(doc, dict) else None for doc in docs]
        return column, table.column(column).combine_chunks(), ids
    except (pa.ArrowException, OSError) as error:
        raise FormatError(path, None, f"not a Parquet file ({error})", LAYOUT) from None


def _literal(text: Any) -> Any:
    """A Python literal that lighteval wrote as text (it casts nested objects to str)."""
    if not isinstance(text, str):
        return text
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _rows(path: Path, task: str, system: str) -> tuple[pd.DataFrame, list[str], bool]:
    """``task, query, system, metric, value`` of one details file, the metrics without a
    per-sample number, and whether the file names its documents."""
    import pyarrow as pa

    column, values, logged = _columns(path)
    if not len(values):
        raise FormatError(path, None, "no samples", LAYOUT)
    ids = _ids(path, logged)
    if pa.types.is_struct(values.type) and values.type.num_fields and not values.null_count:
        numbers, pairs = _struct_numbers(path, column, values)
    else:  # text cast by lighteval, a Parquet map: one dict per sample
        numbers, pairs = _dict_numbers(path, column, values.to_pylist())
    rows = numbers["row"].to_numpy()
    query = rows.astype(str) if ids is None else np.asarray(ids, dtype=object)[rows]
    table = pd.DataFrame(
        {
            "task": task,
            "query": query,
            "system": system,
            "metric": numbers["metric"].astype(str),
            "value": numbers["value"],
        }
    )
    twice = table.duplicated(["query", "metric"]).to_numpy()
    if twice.any():
        at = int(np.flatnonzero(twice)[0])
        query_, metric = table["query"].iat[at], table["metric"].iat[at]
        first = rows[
            (table["query"] == query_).to_numpy() & (table["metric"] == metric).to_numpy()
        ][0]
        raise FormatError(
            path,
            None,
            f"row {rows[at]}: document id {query_!r} has metric {metric!r} again (row {first})",
            LAYOUT,
        )
    return table, pairs, ids is not None


def _struct_numbers(path: Path, column: str, values: Any) -> tuple[pd.DataFrame, list[str]]:
    """``row, metric, value`` of a struct column of metrics (lighteval's own layout), one
    pass per metric; a metric whose values are nested (a corpus metric's items) is listed
    in the second item instead."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts, pairs = [], []
    for index, field in enumerate(values.type):  # a loop over metric names, not data
        child = values.field(index)
        rows = np.flatnonzero(child.is_valid().to_numpy(zero_copy_only=False))
        if not len(rows):
            continue
        kind = field.type
        if pa.types.is_nested(kind):  # {golds, preds}, a pair: no per-sample number
            pairs.append(str(field.name))
            continue
        if not (
            pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)
        ):
            raise FormatError(
                path,
                None,
                f"row {rows[0]}: {column} {excerpt(field.name)} has value {excerpt(child[int(rows[0])].as_py())}, not a number",
                LAYOUT,
            )
        number = pc.cast(child, pa.float64()).to_numpy(zero_copy_only=False)[rows]
        bad = np.flatnonzero(~np.isfinite(number))
        if len(bad):
            raise FormatError(
                path,
                None,
                f"row {rows[bad[0]]}: {column} {excerpt(field.name)} has value {number[bad[0]]}, not a number",
                LAYOUT,
            )
        parts.append(
            pd.DataFrame({"row": rows, "order": index, "metric": field.name, "value": number})
        )
    numbers = pd.concat(parts, ignore_index=True) if parts else _no_numbers()
    numbers = numbers.sort_values(["row", "order"], kind="stable", ignore_index=True)
    return numbers[["row", "metric", "value"]], pairs


def _no_numbers() -> pd.DataFrame:
    return pd.DataFrame({"row": np.array([], dtype=int), "order": 0, "metric": "", "value": 0.0})


def _dict_numbers(path: Path, column: str, values: list[Any]) -> tuple[pd.DataFrame, list[str]]:
    """``row, metric, value`` of one ``{metric: number}`` per sample (text or a map)."""
    rows: list[tuple[int, str, float]] = []
    kinds: dict[str, tuple[bool, int]] = {}  # metric: (a number?, first row)
    pairs: dict[str, None] = {}
    for row, metrics in enumerate(values):  # one dict per sample, as Parquet gives them
        metrics = _literal(metrics)
        if isinstance(metrics, list) and all(isinstance(p, tuple) and len(p) == 2 for p in metrics):
            metrics = dict(metrics)  # a Parquet map column
        if not isinstance(metrics, dict) or not metrics:
            raise FormatError(
                path,
                None,
                f"row {row}: {column} {excerpt(metrics)} is not a non-empty {{metric: number}}",
                LAYOUT,
            )
        for name, value in metrics.items():
            if value is None:
                continue  # a metric that other samples have and this one lacks
            if isinstance(value, bool):
                value = float(value)
            numeric = isinstance(value, int | float)
            if not numeric and not isinstance(value, dict | list | tuple):
                raise FormatError(
                    path,
                    None,
                    f"row {row}: {column} {name!r} has value {excerpt(value)}, not a number",
                    LAYOUT,
                )
            kind = kinds.setdefault(name, (numeric, row))
            if kind[0] != numeric:
                raise FormatError(
                    path,
                    None,
                    f"row {row}: {column} {name!r} has value {excerpt(value)} and "
                    f"{'a number' if kind[0] else 'no number'} in row {kind[1]}",
                    LAYOUT,
                )
            if not numeric:  # a corpus metric's per-sample item: {golds, preds}, a pair
                pairs.setdefault(str(name), None)
                continue
            if not np.isfinite(value):
                raise FormatError(
                    path,
                    None,
                    f"row {row}: {column} {name!r} has value {excerpt(value)}, not a number",
                    LAYOUT,
                )
            rows.append((row, str(name), float(value)))
    numbers = pd.DataFrame(rows, columns=["row", "metric", "value"])
    return numbers.astype({"row": int, "value": float}), list(pairs)


def _ids(path: Path, logged: list[Any] | None) -> list[str] | None:
    """Each sample's document id as a string, or None when the file logs none."""
    if logged is None or all(i in (None, "") for i in logged):
        return None
    bad = [
        row
        for row, i in enumerate(logged)
        if isinstance(i, bool) or not isinstance(i, str | int) or i == ""
    ]
    if bad:
        raise FormatError(
            path,
            None,
            f"row {bad[0]}: doc id {excerpt(logged[bad[0]])} is not a document id, though other rows have one",
            LAYOUT,
        )
    return [str(i) for i in logged]


def _files(folder: Path) -> list[Path]:
    if folder.is_file():
        return [folder]
    if not folder.is_dir():
        raise FormatError(folder, None, "no such file or folder", LAYOUT)
    files = sorted(p for p in folder.rglob("details_*.parquet") if p.is_file())
    if not files:
        raise SchemaError(
            f"{folder}: no details_<task>_<timestamp>.parquet files; run lighteval with "
            "--save-details (results_*.json hold only the means)."
        )
    return files


def _system_of(root: Path, path: Path) -> str:
    """The model of a details file found below ``root``: lighteval writes
    ``details/<model>/<timestamp>/details_<task>_<timestamp>.parquet``."""
    model = path.parent.parent
    if model.is_relative_to(root) and model != root:
        return model.relative_to(root).as_posix()
    return model.name if path.parent != root else root.parent.name


def read_lighteval(
    details: str | Path | Mapping[str, str | Path] | Sequence[str | Path],
) -> pd.DataFrame:
    """Scores from lighteval's per-sample details, one system per model.

    Checked against the details that lighteval 0.13.0 writes itself (``lighteval
    custom ... --save-details``, the fixture ``tests/fixtures/lighteval/output``): columns
    ``doc`` (the document, with its index in the data set as ``doc.id``), ``metric`` (a
    struct of the sample's metrics) and ``model_response``. lighteval 0.4 to 0.9 named
    the metric column ``metrics`` (checked at commits 02932a2 and 010dc62); it is read
    too.

    Parameters
    ----------
    details
        One details file, a folder of them (lighteval's
        ``<output_dir>/details``, laid out
        ``details/<model>/<timestamp>/details_<task>_<timestamp>.parquet``,
        searched recursively), a list of files or folders, or ``{system: file or
        folder}``. Without a mapping, a file's system is its model folder: the
        path from the given folder to the timestamp folder (``org/model``), or,
        for a model's or a timestamp's folder or a single file, the name of the
        folder above the timestamp folder.

    Returns
    -------
    pandas.DataFrame
        ``task, query, system, metric, value`` with ``task`` the task of the file
        name (``lighteval|arc:challenge|25``), ``query`` the document's id
        (``doc.id``, a string), one ``metric`` per key of the sample's metric
        dict, and its number as ``value`` (booleans become 0/1; a key that a
        sample lacks is left out).

        The query is the document id, not the row: lighteval (0.10 and later)
        shuffles a task's documents with a fixed seed before it runs them and
        writes the details in that order, so row *i* is the same document in two
        runs only when both shuffled the same list (the same version and data
        revision: a data set with documents added shuffles differently), and a
        task whose metrics need two kinds of request (generation and
        log-likelihoods) gets one row per document and kind, each with its own
        metrics, the kinds in no fixed order (two runs of one model on the same
        data wrote them in opposite orders): rows of one document are merged by
        id. Details without ids
        (lighteval before 0.11) are read by row number with a warning naming the
        (system, task) pairs, since their models pair only if their runs listed
        the documents alike.

        A corpus-level metric (``mcc``, ``f1_score_macro``, ``bleu``, ...) has no
        per-sample number: lighteval logs an item per sample (``{golds, preds}``)
        and computes the metric over the task. Such metrics are left out with one
        warning naming each (system, task, metric).

    Raises
    ------
    metaeval.FormatError
        A path that does not exist, a file that is not Parquet or not named
        ``details_<task>_<timestamp>.parquet``, no ``metrics``/``metric`` column,
        a sample whose metrics are not a ``{name: number}`` dict, a metric that
        is a number in some samples and an item in others, a document id that
        some rows lack, a document with a metric twice (naming file and row).
    metaeval.SchemaError
        A folder without details files; two files of one task of one system (two
        runs: pass the one to read); details without any per-sample number.

    Examples
    --------
    Two models' details as lighteval 0.13 writes them, each run listing the documents
    in its own order; each row names its document:

    >>> import pathlib, tempfile
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> from metaeval.io import read_lighteval
    >>> tmp = tempfile.TemporaryDirectory()
    >>> stamp = "2024-05-01T12-00-00.000001"
    >>> runs = {"org/small": {"1": 0, "0": 1}, "org/large": {"0": 1, "1": 1}}
    >>> for model, em in runs.items():
    ...     folder = pathlib.Path(tmp.name) / model / stamp
    ...     folder.mkdir(parents=True)
    ...     table = pa.table({"doc": [{"id": doc, "query": f"q{doc}"} for doc in em],
    ...                       "metric": [{"em": float(v)} for v in em.values()]})
    ...     pq.write_table(table, folder / f"details_boolq|0_{stamp}.parquet")
    >>> read_lighteval(tmp.name)
          task query     system metric  value
    0  boolq|0     0  org/large     em    1.0
    1  boolq|0     1  org/large     em    1.0
    2  boolq|0     1  org/small     em    0.0
    3  boolq|0     0  org/small     em    1.0
    >>> tmp.cleanup()
    """
    found: list[tuple[str, Path]] = []
    if isinstance(details, Mapping):
        for system, place in details.items():
            found += [(str(system), path) for path in _files(Path(place))]
    else:
        places = [details] if isinstance(details, str | Path) else list(details)
        if not places:
            raise SchemaError(
                "`details` is an empty list; pass lighteval details files or folders."
            )
        for place in map(Path, places):
            found += [(_system_of(place, path), path) for path in _files(place)]
    seen: dict[tuple[str, str], Path] = {}
    frames: list[pd.DataFrame] = []
    pairs: list[tuple[str, str, str]] = []  # (system, task, metric) without a number
    unnamed: list[tuple[str, str]] = []  # (system, task) whose samples carry no document id
    for system, path in found:  # a loop over files, not over data
        task = _task_of(path)
        if (system, task) in seen:
            raise SchemaError(
                f"Two details files of task {task!r} for system {system!r}: "
                f"{seen[system, task]} and {path} (two runs); pass the one to read."
            )
        seen[system, task] = path
        table, corpus, named = _rows(path, task, system)
        frames.append(table)
        pairs.extend((system, task, metric) for metric in corpus)
        if not named:
            unnamed.append((system, task))
    table = pd.concat(frames, ignore_index=True)
    if table.empty:
        raise SchemaError(
            "The lighteval details hold no per-sample number: their metrics "
            f"({', '.join(sorted({m for *_, m in pairs}))}) are computed over the whole task."
        )
    if unnamed:
        warn_groups(
            "The details of {n} (system, task) pair(s) carry no document id (lighteval "
            "before 0.11), so each sample's row number is its query: models pair by row, "
            "which is right only if their runs listed the documents in the same order "
            "(lighteval shuffles them with a fixed seed: the same version and the same "
            "revision of the data)",
            pd.DataFrame(unnamed, columns=["system", "task"]),
            MetaEvalWarning,
        )
    if pairs:
        warn_groups(
            "{n} (system, task, metric) combination(s) have no per-sample number and were "
            "left out: lighteval logs a corpus-level metric (mcc, f1_score_macro, bleu, "
            "...) as an item per sample ({golds, preds}, a pair) and computes it over the "
            "whole task",
            pd.DataFrame(pairs, columns=["system", "task", "metric"]),
            MetaEvalWarning,
        )
    return table.sort_values(["system", "task"], kind="stable").reset_index(drop=True)

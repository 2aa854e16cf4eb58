"""lighteval per-sample details (``--save-details`` Parquet files)."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import FormatError, SchemaError, excerpt

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
        raise FormatError(path, None, "the file name is not details_<task>_<timestamp>.parquet", LAYOUT)  # fmt: skip
    return match["task"]


def _metrics(path: Path) -> tuple[str, list[Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.is_file():
        raise FormatError(path, None, "no such file", LAYOUT)
    try:
        names = pq.read_schema(path).names
        column = next((c for c in _COLUMNS if c in names), None)
        if column is None:
            raise FormatError(path, None, f"no column 'metrics' or 'metric' (columns: {', '.join(names)})", LAYOUT)  # fmt: skip
        return column, pq.read_table(path, columns=[column]).column(0).to_pylist()
    except (pa.ArrowException, OSError) as error:
        raise FormatError(path, None, f"not a Parquet file ({error})", LAYOUT) from None


def _rows(path: Path, task: str, system: str) -> list[tuple]:
    column, values = _metrics(path)
    if not values:
        raise FormatError(path, None, "no samples", LAYOUT)
    rows = []
    for row, metrics in enumerate(values):  # one dict per sample, as Parquet gives them
        if isinstance(metrics, str):  # lighteval casts nested objects to str when it must
            try:
                metrics = ast.literal_eval(metrics)
            except (ValueError, SyntaxError):
                pass
        if isinstance(metrics, list) and all(isinstance(p, tuple) and len(p) == 2 for p in metrics):
            metrics = dict(metrics)  # a Parquet map column
        if not isinstance(metrics, dict) or not metrics:
            raise FormatError(path, None, f"row {row}: {column} {excerpt(metrics)} is not a non-empty {{metric: number}}", LAYOUT)  # fmt: skip
        for name, value in metrics.items():
            if value is None:
                continue  # a struct column: a metric that other samples have and this one lacks
            if isinstance(value, bool):
                value = float(value)
            if not isinstance(value, int | float) or not np.isfinite(value):
                raise FormatError(path, None, f"row {row}: {column} {name!r} has value {excerpt(value)}, not a number", LAYOUT)  # fmt: skip
            rows.append((task, str(row), system, str(name), float(value)))
    return rows


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

    Matches the details lighteval writes with ``--save-details``
    (``logging/evaluation_tracker.py`` and ``info_loggers.py`` ``DetailsLogger.Detail``
    of huggingface/lighteval 0.4 to 0.9, checked at commits 02932a2 and 010dc62: the
    per-sample metric dict is the ``metrics`` column). Later releases rename it
    ``metric`` (beside ``doc`` and ``model_response``); that name is read too, but
    was not checked against a release.

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
        name (``lighteval|arc:challenge|25``), ``query`` the sample's row number in
        the file (lighteval writes the samples of a task in the order of its
        documents and drops their ids, so the row number is the example index),
        one ``metric`` per key of the sample's metric dict, and its number as
        ``value`` (booleans become 0/1; a key that a sample lacks is left out).

    Raises
    ------
    metaeval.FormatError
        A path that does not exist, a file that is not Parquet or not named
        ``details_<task>_<timestamp>.parquet``, no ``metrics``/``metric`` column,
        a sample whose metrics are not a ``{name: number}`` dict (naming file and
        row).
    metaeval.SchemaError
        A folder without details files; two files of one task of one system (two
        runs: pass the one to read).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> from metaeval.io import read_lighteval
    >>> tmp = tempfile.TemporaryDirectory()
    >>> stamp = "2024-05-01T12-00-00.000001"
    >>> for model, em in {"org/small": [1, 0], "org/large": [1, 1]}.items():
    ...     folder = pathlib.Path(tmp.name) / model / stamp
    ...     folder.mkdir(parents=True)
    ...     metrics = pa.array([{"em": float(v)} for v in em])
    ...     pq.write_table(pa.table({"metrics": metrics}),
    ...                    folder / f"details_lighteval|boolq|0_{stamp}.parquet")
    >>> read_lighteval(tmp.name)
                    task query     system metric  value
    0  lighteval|boolq|0     0  org/large     em    1.0
    1  lighteval|boolq|0     1  org/large     em    1.0
    2  lighteval|boolq|0     0  org/small     em    1.0
    3  lighteval|boolq|0     1  org/small     em    0.0
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
    rows: list[tuple] = []
    for system, path in found:  # a loop over files, not over data
        task = _task_of(path)
        if (system, task) in seen:
            raise SchemaError(
                f"Two details files of task {task!r} for system {system!r}: "
                f"{seen[system, task]} and {path} (two runs); pass the one to read."
            )
        seen[system, task] = path
        rows.extend(_rows(path, task, system))
    table = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])
    return table.sort_values(["system", "task"], kind="stable").reset_index(drop=True)

"""lm-evaluation-harness per-sample logs (``--log_samples``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import FormatError, OptionError, SchemaError, excerpt
from ._text import iter_jsonl

__all__ = ["read_lm_eval", "PRIMARY_METRICS"]

LAYOUT = (
    "JSON lines with a 'doc_id' and per-sample metric values — the keys listed in 'metrics' "
    "when present, else every top-level number other than the bookkeeping keys"
)
_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d\-:.]+)\.jsonl(\.gz)?$")
_BOOKKEEPING = {
    "doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
    "doc_hash", "prompt_hash", "target_hash",
}  # fmt: skip


PRIMARY_METRICS: dict[str, str] = {
    "arc_easy": "acc", "arc_challenge": "acc_norm", "hellaswag": "acc_norm",
    "winogrande": "acc", "truthfulqa_mc1": "acc", "truthfulqa_mc2": "acc",
    "gsm8k": "exact_match,strict-match", "gsm8k_cot": "exact_match,strict-match",
    "mmlu": "acc", "piqa": "acc_norm", "boolq": "acc", "openbookqa": "acc_norm",
    "sciq": "acc_norm", "lambada_openai": "acc", "lambada_standard": "acc", "copa": "acc",
    "rte": "acc", "mathqa": "acc_norm", "race": "acc", "siqa": "acc", "logiqa": "acc_norm",
}  # fmt: skip
"""The primary metric of common lm-evaluation-harness tasks: the one the Open LLM
Leaderboard (v1) reports (ARC-Challenge, HellaSwag: ``acc_norm``; MMLU, TruthfulQA,
Winogrande: ``acc``; GSM8K: ``exact_match,strict-match``) and, for the others, the
first metric of the task's ``metric_list`` with the normalized accuracy where the task
has one. MMLU's subtasks (``mmlu_*``) use ``acc``."""


def _primary_of(task: str, metrics: list[str], primary: Any) -> str:
    """The primary metric of ``task`` among the ``metrics`` its logs have."""
    if isinstance(primary, Mapping):
        if task not in primary:
            raise SchemaError(
                f"`primary` has no metric for task {task!r}; its logs have {metrics}. Add "
                f"{{{task!r}: ...}} to the mapping."
            )
        chosen = primary[task]
    else:
        chosen = PRIMARY_METRICS.get(task, "acc" if task.startswith("mmlu_") else None)
        if chosen is None:
            if len(metrics) == 1:
                return metrics[0]
            raise SchemaError(
                f"No primary metric is known for task {task!r}, whose logs have {metrics}; pass "
                f"primary={{{task!r}: {metrics[0]!r}, ...}}."
            )
    if chosen not in metrics:
        raise SchemaError(
            f"The primary metric {chosen!r} of task {task!r} is not in its logs, which have "
            f"{metrics}."
        )
    return str(chosen)


def _records(path: Path, task: str, system: str) -> list[tuple]:
    rows, seen = [], set()
    for number, record in iter_jsonl(path, LAYOUT, "bad record"):
        if "doc_id" not in record:
            raise FormatError(path, number, "bad record ('doc_id')", LAYOUT)
        doc = record["doc_id"]
        if isinstance(doc, bool) or not isinstance(doc, str | int):
            raise FormatError(path, number, f"doc_id {excerpt(doc)} is not an integer or string", LAYOUT)  # fmt: skip
        filt = record.get("filter", "none")
        if filt is not None and not isinstance(filt, str):
            raise FormatError(path, number, f"filter {excerpt(filt)} is not a string", LAYOUT)
        names = record.get("metrics")
        if names is None:
            names = [k for k, v in record.items()
                     if k not in _BOOKKEEPING and isinstance(v, bool | int | float)]  # fmt: skip
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise FormatError(path, number, f"metrics {excerpt(names)} is not a list of names", LAYOUT)  # fmt: skip
        if not names:
            raise FormatError(path, number, "no per-sample metric value", LAYOUT)
        key = (str(doc), filt)
        if key in seen:
            raise FormatError(
                path,
                number,
                f"doc_id {excerpt(doc)} (filter {excerpt(filt)}) appears twice",
                LAYOUT,
            )
        seen.add(key)
        for name in names:
            value = record.get(name)
            if isinstance(value, bool):
                value = float(value)
            if not isinstance(value, int | float) or not np.isfinite(value):
                raise FormatError(
                    path, number, f"metric {excerpt(name)} has value {excerpt(value)}, not a number",
                    LAYOUT,
                )  # fmt: skip
            metric = name if filt in (None, "none") else f"{name},{filt}"
            rows.append((task, str(doc), system, metric, float(value)))
    return rows


def read_lm_eval(
    folders: str | Path | Mapping[str, str | Path] | Sequence[str | Path],
    *,
    primary: bool | Mapping[str, str] = False,
    latest: bool = False,
) -> pd.DataFrame:
    """Scores from lm-evaluation-harness sample logs, one results folder per model.

    Parameters
    ----------
    folders
        ``{system: folder}``; a list of folders (each system is its folder's
        name); or one folder (a ``str`` or path: one system, the folder's
        name). Each folder (searched recursively) holds
        ``samples_<task>_<timestamp>.jsonl`` files (or ``.jsonl.gz``) as
        written by ``lm-eval --log_samples``, one per task.
    primary : bool or mapping of str to str, default False
        Keep one metric per task, named ``"primary"``, so that tasks with
        different metrics pool together: ``True`` takes each task's metric from
        :data:`PRIMARY_METRICS` (or its only metric), a mapping ``{task:
        metric}`` names them (``{"gsm8k": "exact_match,flexible-extract"}``).
        ``attrs["primary"]`` records the metric of every task.
    latest : bool, default False
        When a folder holds several logs of a task (lm-eval run again into the
        same output folder), keep the newest (by the timestamp in the file
        name) instead of raising.

    Returns
    -------
    pandas.DataFrame
        ``task, query, system, metric, value`` with ``query`` the ``doc_id``
        and one metric per per-sample field: the keys a record lists in
        ``metrics`` (lm-eval ≥ 0.4.3), else every top-level number other than
        ``doc_id`` and the hashes; booleans become 0/1. A task logged with a
        filter other than ``"none"`` gets ``metric,filter`` names (as lm-eval's
        results, e.g. ``exact_match,strict-match``).

    Raises
    ------
    metaeval.FormatError
        A record that is not a JSON object, lacks ``doc_id`` or metric values
        or repeats a ``doc_id`` (naming file and line); a folder that does not
        exist.
    metaeval.SchemaError
        A folder without sample logs, two logs of the same task in one folder
        (without ``latest``), two folders of the same name in a list, or a task
        whose primary metric is unknown or absent from its logs.

    Examples
    --------
    Two models' logs of the same task, three samples each:

    >>> import json, pathlib, tempfile
    >>> from metaeval.io import read_lm_eval
    >>> tmp = tempfile.TemporaryDirectory()
    >>> for model, accuracy in {"llama": [1, 0, 1], "mistral": [1, 1, 1]}.items():
    ...     folder = pathlib.Path(tmp.name) / model
    ...     folder.mkdir()
    ...     records = [{"doc_id": i, "filter": "none", "metrics": ["acc"], "acc": a}
    ...                for i, a in enumerate(accuracy)]
    ...     log = folder / "samples_arc_easy_2024-05-01T12-00-00.jsonl"
    ...     _ = log.write_text("".join(json.dumps(r) + "\\n" for r in records))
    >>> read_lm_eval({"llama": pathlib.Path(tmp.name) / "llama",
    ...               "mistral": pathlib.Path(tmp.name) / "mistral"})
           task query   system metric  value
    0  arc_easy     0    llama    acc    1.0
    1  arc_easy     1    llama    acc    0.0
    2  arc_easy     2    llama    acc    1.0
    3  arc_easy     0  mistral    acc    1.0
    4  arc_easy     1  mistral    acc    1.0
    5  arc_easy     2  mistral    acc    1.0

    One metric per task for pooling across tasks, and the newest of two runs:

    >>> _ = (folder / "samples_arc_easy_2024-06-01T09-00-00.jsonl").write_text(
    ...     "".join(json.dumps({"doc_id": i, "metrics": ["acc", "acc_norm"], "acc": 0,
    ...                         "acc_norm": 1}) + "\\n" for i in range(3)))
    >>> newest = read_lm_eval(folder, primary=True, latest=True)
    >>> newest[["task", "metric", "value"]].drop_duplicates()
           task   metric  value
    0  arc_easy  primary    0.0
    >>> newest.attrs["primary"]
    {'arc_easy': 'acc'}
    >>> tmp.cleanup()
    """
    if isinstance(folders, str | Path):
        folders = [folders]
    if isinstance(folders, Mapping):
        named = dict(folders)
    else:
        folders = list(folders)
        named = {Path(f).name: f for f in folders}
        if len(named) < len(folders):
            raise SchemaError("Two folders have the same name; pass {system: folder}.")
    rows: list[tuple] = []
    for system, folder in named.items():
        if not Path(folder).is_dir():
            problem = "is a file, not a folder" if Path(folder).exists() else "no such folder"
            raise FormatError(folder, None, problem, "a folder of lm-eval sample logs")
        files: dict[str, Path] = {}
        for path in sorted(Path(folder).rglob("samples_*.jsonl*")):
            match = _NAME.match(path.name)
            if not match:
                continue
            task = match.group("task")
            if task in files and not latest:
                raise SchemaError(
                    f"{folder}: two sample logs of task {task!r} ({files[task].name}, "
                    f"{path.name}); keep one run per folder, or pass latest=True (--latest) "
                    "to read the newest."
                )
            if task not in files or _stamp(path) > _stamp(files[task]):
                files[task] = path
        if not files:
            raise SchemaError(
                f"{folder}: no samples_<task>_<timestamp>.jsonl files (run lm-eval with --log_samples)."
            )
        for task, path in files.items():
            rows.extend(_records(path, task, str(system)))
    table = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])
    if primary is False:
        return table
    if primary is not True and not isinstance(primary, Mapping):
        raise OptionError(
            f"`primary` must be True, False or a mapping {{task: metric}}, not {primary!r}."
        )
    have = table.groupby("task", sort=False)["metric"].unique()
    chosen = {task: _primary_of(task, list(metrics), primary) for task, metrics in have.items()}
    keep = table["metric"].to_numpy() == table["task"].map(chosen).to_numpy()
    out = table[keep].assign(metric="primary").reset_index(drop=True)
    out.attrs["primary"] = chosen
    return out


def _stamp(path: Path) -> str:
    """The timestamp in a log's name (ISO-like, so that it sorts as text)."""
    match = _NAME.match(path.name)
    return match.group("stamp") if match else ""

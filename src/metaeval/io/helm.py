"""HELM run folders (``per_instance_stats.json``, ``scenario_state.json``, ``run_spec.json``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import FormatError, SchemaError, excerpt

__all__ = ["read_helm"]

LAYOUT = (
    "a HELM run folder (benchmark_output/runs/<suite>/<run spec name>/) with run_spec.json "
    "(name, adapter_spec.model) and per_instance_stats.json (a list of {instance_id, "
    "train_trial_index, perturbation?, stats: [{name: {name, split?}, mean}]})"
)
_MODEL_ARGS = ("model=", "model_deployment=")


def _load(path: Path) -> Any:
    if not path.is_file():
        raise FormatError(path, None, "no such file", LAYOUT)
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise FormatError(
            path, getattr(error, "lineno", None), f"not JSON ({error})", LAYOUT
        ) from None


def _task(name: str) -> str:
    """The run spec name without its ``model=``/``model_deployment=`` arguments, so that
    the runs of one scenario by several models share a task."""
    scenario, _, args = name.partition(":")
    kept = [a for a in args.split(",") if a and not a.startswith(_MODEL_ARGS)]
    return f"{scenario}:{','.join(kept)}" if kept else scenario


def _splits(folder: Path) -> dict[str, str]:
    """``instance id → split`` from ``scenario_state.json`` (empty if the file is absent)."""
    path = folder / "scenario_state.json"
    if not path.exists():
        return {}
    state = _load(path)
    states = state.get("request_states") if isinstance(state, dict) else None
    if not isinstance(states, list):
        raise FormatError(path, None, "no list 'request_states'", LAYOUT)
    splits: dict[str, str] = {}
    for number, request in enumerate(states):
        instance = request.get("instance") if isinstance(request, dict) else None
        if not isinstance(instance, dict) or not isinstance(instance.get("id"), str):
            raise FormatError(path, None, f"request_states[{number}] has no instance.id", LAYOUT)
        splits[instance["id"]] = str(instance.get("split", ""))
    return splits


def _run(folder: Path) -> list[tuple]:
    spec_path, stats_path = folder / "run_spec.json", folder / "per_instance_stats.json"
    spec = _load(spec_path)
    name = spec.get("name") if isinstance(spec, dict) else None
    adapter = spec.get("adapter_spec") if isinstance(spec, dict) else None
    model = adapter.get("model") if isinstance(adapter, dict) else None
    if not isinstance(name, str) or not isinstance(model, str):
        raise FormatError(spec_path, None, "no string 'name' and 'adapter_spec.model'", LAYOUT)
    task = _task(name)
    splits = _splits(folder)
    records = _load(stats_path)
    if not isinstance(records, list):
        raise FormatError(stats_path, None, f"{excerpt(records)} is not a list", LAYOUT)
    rows, seen = [], set()
    for number, record in enumerate(records):  # a loop over records, as json gives them
        where = f"record {number}"
        if not isinstance(record, dict) or not isinstance(record.get("instance_id"), str):
            raise FormatError(stats_path, None, f"{where} has no string 'instance_id'", LAYOUT)
        instance = record["instance_id"]
        if splits and instance not in splits:
            raise FormatError(
                stats_path, None,
                f"{where}: instance_id {instance!r} is not in scenario_state.json", LAYOUT,
            )  # fmt: skip
        trial = record.get("train_trial_index", 0)
        if isinstance(trial, bool) or not isinstance(trial, int):
            raise FormatError(stats_path, None, f"{where}: train_trial_index {excerpt(trial)} is not an integer", LAYOUT)  # fmt: skip
        perturbation = record.get("perturbation")
        if perturbation is not None and not isinstance(perturbation, dict):
            raise FormatError(stats_path, None, f"{where}: perturbation {excerpt(perturbation)} is not an object", LAYOUT)  # fmt: skip
        query = instance
        if trial:
            query += f",trial={trial}"
        if perturbation:
            query += f",perturbation={perturbation.get('name', '?')}"
        stats = record.get("stats")
        if not isinstance(stats, list):
            raise FormatError(stats_path, None, f"{where} ({instance!r}) has no list 'stats'", LAYOUT)  # fmt: skip
        for stat in stats:
            label = stat.get("name") if isinstance(stat, dict) else None
            if not isinstance(label, dict) or not isinstance(label.get("name"), str):
                raise FormatError(stats_path, None, f"{where} ({instance!r}): a stat has no name.name", LAYOUT)  # fmt: skip
            mean = stat.get("mean")
            if mean is None and stat.get("count") == 0:
                continue  # HELM writes a stat with no values without a mean; nothing to read
            if isinstance(mean, bool) or not isinstance(mean, int | float) or not np.isfinite(mean):
                raise FormatError(
                    stats_path, None,
                    f"{where} ({instance!r}): stat {label['name']!r} has mean {excerpt(mean)}, not a number",
                    LAYOUT,
                )  # fmt: skip
            split = label.get("split") or splits.get(instance, "")
            key = (query, label["name"], split)
            if key in seen:
                raise FormatError(
                    stats_path, None,
                    f"{where}: stat {label['name']!r} of instance {query!r} (split {split!r}) appears twice",
                    LAYOUT,
                )  # fmt: skip
            seen.add(key)
            rows.append((task, query, model, label["name"], split, float(mean)))
    if not rows:
        raise FormatError(stats_path, None, "no per-instance stats", LAYOUT)
    return rows


def read_helm(run_folder: str | Path | Sequence[str | Path]) -> pd.DataFrame:
    """Scores from HELM runs: per-instance stats, one system per model.

    Matches the files written by ``helm-run`` (crfm-helm 0.2 to 0.5,
    ``src/helm/benchmark/metrics/metric.py`` ``PerInstanceStats`` and
    ``statistic.py`` ``Stat``; checked against stanford-crfm/helm ``main`` of
    2024-2025).

    Parameters
    ----------
    run_folder
        One run folder (``benchmark_output/runs/<suite>/<run spec name>/``, holding
        ``run_spec.json`` and ``per_instance_stats.json``, and optionally
        ``scenario_state.json``), a suite folder whose sub-folders are run
        folders, or a list of run folders.

    Returns
    -------
    pandas.DataFrame
        ``task, query, system, metric, value``:

        - ``system``: the run spec's ``adapter_spec.model`` (``openai/gpt2``);
        - ``task``: the run spec ``name`` without its ``model=`` and
          ``model_deployment=`` arguments
          (``mmlu:subject=anatomy,method=multiple_choice_joint``), so that the runs of
          one scenario by several models pair up;
        - ``query``: the ``instance_id``; ``,trial=<k>`` is appended for a train trial
          ``k > 0`` and ``,perturbation=<name>`` for a perturbed instance (a perturbed
          input is a different query from the original);
        - ``metric``: the stat's ``name.name``; when the stats of a task come from
          several splits (``valid`` and ``test``), ``,split=<split>`` is appended to
          every metric of that task so the splits never mix;
        - ``value``: the stat's ``mean`` over its values for that instance.

        A stat with ``count`` 0 (no ``mean``) is left out: it has no value.

    Raises
    ------
    metaeval.FormatError
        A missing ``run_spec.json`` or ``per_instance_stats.json``, malformed JSON,
        a record without ``instance_id`` or ``stats``, a stat without a name or a
        numeric mean, an ``instance_id`` missing from ``scenario_state.json``, or a
        stat repeated for one instance (naming the file and the record).
    metaeval.SchemaError
        A folder with neither run files nor run sub-folders; two runs of one task by
        one model.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from metaeval.io import read_helm
    >>> tmp = tempfile.TemporaryDirectory()
    >>> for model, correct in {"openai/gpt2": [1, 0], "meta/llama-7b": [1, 1]}.items():
    ...     run = pathlib.Path(tmp.name) / f"boolq:model={model.replace('/', '_')}"
    ...     run.mkdir()
    ...     spec = {"name": run.name, "adapter_spec": {"model": model}}
    ...     _ = (run / "run_spec.json").write_text(json.dumps(spec))
    ...     stats = [{"instance_id": f"id{i}", "train_trial_index": 0, "stats": [
    ...         {"name": {"name": "exact_match", "split": "test"}, "count": 1, "mean": c}]}
    ...         for i, c in enumerate(correct)]
    ...     _ = (run / "per_instance_stats.json").write_text(json.dumps(stats))
    >>> read_helm(tmp.name)
        task query         system       metric  value
    0  boolq   id0  meta/llama-7b  exact_match    1.0
    1  boolq   id1  meta/llama-7b  exact_match    1.0
    2  boolq   id0    openai/gpt2  exact_match    1.0
    3  boolq   id1    openai/gpt2  exact_match    0.0
    >>> tmp.cleanup()
    """
    if isinstance(run_folder, str | Path):
        root = Path(run_folder)
        if not root.is_dir():
            problem = "is a file, not a folder" if root.exists() else "no such folder"
            raise FormatError(root, None, problem, LAYOUT)
        if (root / "per_instance_stats.json").exists() or (root / "run_spec.json").exists():
            folders = [root]
        else:
            folders = sorted(p.parent for p in root.glob("*/run_spec.json"))
            if not folders:
                raise SchemaError(
                    f"{root}: neither a HELM run folder (run_spec.json, per_instance_stats.json) "
                    "nor a suite folder of runs; point at benchmark_output/runs/<suite>."
                )
    else:
        folders = [Path(f) for f in run_folder]
        if not folders:
            raise SchemaError("`run_folder` is an empty list; pass HELM run folders.")
    rows = [row for folder in folders for row in _run(folder)]
    table = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "split", "value"])
    runs = table.drop_duplicates(["task", "system", "query", "metric", "split"])
    if len(runs) < len(table):
        twice = table[table.duplicated(["task", "system", "query", "metric", "split"])].iloc[0]
        raise SchemaError(
            f"Two HELM runs of task {excerpt(twice['task'])} by model {excerpt(twice['system'])} "
            f"(both give {excerpt(twice['metric'])} of {excerpt(twice['query'])}); pass one run "
            "per model and task."
        )
    several = table.groupby("task")["split"].transform("nunique").to_numpy() > 1
    metric = table["metric"].where(~several, table["metric"] + ",split=" + table["split"])
    table = table.assign(metric=metric).drop(columns="split")
    return table.sort_values("system", kind="stable").reset_index(drop=True)

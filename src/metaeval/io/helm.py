"""HELM run folders (``per_instance_stats.json``, ``scenario_state.json``, ``run_spec.json``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import FormatError, SchemaError, excerpt
from ..schema import KEY_COLUMNS, REPLICATE

__all__ = ["read_helm"]

LAYOUT = (
    "a HELM run folder (benchmark_output/runs/<suite>/<run spec name>/) with run_spec.json "
    "(name, adapter_spec.model) and per_instance_stats.json (a list of {instance_id, "
    "train_trial_index, perturbation?: {name, ...}, stats: [{name: {name, split?}, mean}]})"
)
_MODEL_ARGS = ("model=", "model_deployment=")
#: The fields of HELM's ``PerturbationDescription`` that class a perturbation (robustness,
#: fairness) or say how an aggregate over it was computed; the others (``prob``,
#: ``num_spaces``, ``suffix``, ``seed``, ...) tell perturbations of one name apart.
_FLAGS = ("name", "robustness", "fairness", "computed_on")


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


def _perturbation(description: dict, path: Path, where: str) -> str:
    """``name(field=value,...)`` of a perturbation: HELM's name and the fields that tell
    perturbations of one name apart (``style(suffix=watercolor)``, ``lowercase``)."""
    name = description.get("name")
    if not isinstance(name, str):
        raise FormatError(
            path, None, f"{where}: perturbation {excerpt(description)} has no string 'name'", LAYOUT
        )
    fields = [
        f"{key}={value if isinstance(value, str) else json.dumps(value, separators=(',', ':'))}"
        for key, value in description.items()
        if key not in _FLAGS and value is not None
    ]
    return f"{name}({','.join(fields)})" if fields else name


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
                stats_path,
                None,
                f"{where}: instance_id {instance!r} is not in scenario_state.json",
                LAYOUT,
            )
        trial = record.get("train_trial_index", 0)
        if isinstance(trial, bool) or not isinstance(trial, int):
            raise FormatError(
                stats_path,
                None,
                f"{where} ({instance!r}): train_trial_index {excerpt(trial)} is not an integer",
                LAYOUT,
            )
        perturbation = record.get("perturbation")
        if perturbation is not None and not isinstance(perturbation, dict):
            raise FormatError(
                stats_path,
                None,
                f"{where} ({instance!r}): perturbation {excerpt(perturbation)} is not an object",
                LAYOUT,
            )
        suffix = (
            f",perturbation={_perturbation(perturbation, stats_path, f'{where} ({instance!r})')}"
            if perturbation
            else ""
        )
        stats = record.get("stats")
        if not isinstance(stats, list):
            raise FormatError(
                stats_path, None, f"{where} ({instance!r}) has no list 'stats'", LAYOUT
            )
        for stat in stats:
            label = stat.get("name") if isinstance(stat, dict) else None
            if not isinstance(label, dict) or not isinstance(label.get("name"), str):
                raise FormatError(
                    stats_path, None, f"{where} ({instance!r}): a stat has no name.name", LAYOUT
                )
            mean = stat.get("mean")
            if mean is None and stat.get("count") == 0:
                continue  # HELM writes a stat with no values without a mean; nothing to read
            if isinstance(mean, bool) or not isinstance(mean, int | float) or not np.isfinite(mean):
                raise FormatError(
                    stats_path,
                    None,
                    f"{where} ({instance!r}): stat {label['name']!r} has mean {excerpt(mean)}, not a number",
                    LAYOUT,
                )
            metric = label["name"] + suffix
            split = label.get("split") or splits.get(instance, "")
            key = (instance, trial, metric, split)
            if key in seen:
                raise FormatError(
                    stats_path,
                    None,
                    f"{where}: stat {metric!r} of instance {instance!r} (train trial {trial}, "
                    f"split {split!r}) appears twice",
                    LAYOUT,
                )
            seen.add(key)
            rows.append((task, instance, model, metric, split, float(mean), trial))
    if not rows:
        raise FormatError(stats_path, None, "no per-instance stats", LAYOUT)
    return rows


def read_helm(run_folder: str | Path | Sequence[str | Path]) -> pd.DataFrame:
    """Scores from HELM runs: per-instance stats, one system per model.

    Matches the files written by ``helm-run`` (crfm-helm 0.2 to 0.5,
    ``src/helm/benchmark/metrics/metric.py`` ``PerInstanceStats`` and
    ``statistic.py`` ``Stat``); tested on a suite written by crfm-helm 0.5.16's own
    ``helm-run`` (train trials, perturbations, two models), whose aggregates in
    ``stats.json`` the means of this table equal.

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
        ``task, query, system, metric, value`` (and ``replicate`` when a run has
        several train trials):

        - ``system``: the run spec's ``adapter_spec.model`` (``openai/gpt2``);
        - ``task``: the run spec ``name`` without its ``model=`` and
          ``model_deployment=`` arguments
          (``mmlu:subject=anatomy,method=multiple_choice_joint``), so that the runs of
          one scenario by several models pair up;
        - ``query``: the ``instance_id``, also for its perturbed copies and its train
          trials, so that the models pair by instance;
        - ``metric``: the stat's ``name.name``; for a perturbed instance
          ``,perturbation=<p>`` follows, ``<p>`` being HELM's name of the perturbation
          and the fields that tell perturbations of one name apart
          (``exact_match,perturbation=lowercase``,
          ``num_prompt_tokens,perturbation=extra_space(num_spaces=2)``,
          ``…,perturbation=style(suffix=watercolor)``); when the stats of a task come
          from several splits (``valid`` and ``test``), ``,split=<split>`` is appended
          to every metric of that task so the splits never mix;
        - ``value``: the stat's ``mean`` over its values for that instance (and
          trial);
        - ``replicate`` (int): the ``train_trial_index``, when any run read has two
          or more train trials.

        A stat with ``count`` 0 (no ``mean``) is left out: it has no value.

        **Perturbations are metrics of their own.** A perturbed input is another
        measurement of the same instance: averaged into the plain metric it would mix
        two quantities that HELM reports apart (a run with ``data_augmentation=lower``
        holds both), and as a query of its own it would count the instance twice. As
        a metric, it pairs the models by instance like the plain one, and its mean is
        HELM's aggregate of that perturbation (``computed_on="perturbed"``). HELM's
        derived aggregates are not per-instance records and are not in the table;
        they follow from it: ``"original"`` is the plain metric on the queries the
        perturbed one has, ``"worst"`` the per-query minimum of the two (and the
        ``robustness``/``fairness`` worst cases the minimum over several).

        **Train trials are replicates, nested in the tasks.** HELM draws a trial's
        in-context examples once (its seed is the trial index) and puts the same
        draw before every instance of the run, for every model: a trial shifts all
        the instances of a run together, as a seed does, so it is a replicate of
        the instances and not an epoch (``replicates="epochs"`` of
        :func:`metaeval.effects` assumes the repeats share nothing). It is not
        *crossed* with the tasks either: trial k of another scenario is drawn from
        that scenario's own training set (the same seed, a different draw), so a
        good draw on one task says nothing of another. ``attrs["replicates"]`` is
        therefore ``"nested"``, which :func:`metaeval.effects` takes unless told
        otherwise. Each instance's score is averaged over its trials; the mean over
        instances is then HELM's (the mean over trials of each trial's mean), every
        trial having every instance. A stat with ``count`` > 1 for one instance is
        read as its mean (HELM's aggregate weights it by its count).

    Raises
    ------
    metaeval.FormatError
        A missing ``run_spec.json`` or ``per_instance_stats.json``, malformed JSON,
        a record without ``instance_id`` or ``stats``, a ``train_trial_index`` that
        is not an integer, a ``perturbation`` that is not an object with a string
        ``name``, a stat without a name or a numeric mean, an ``instance_id``
        missing from ``scenario_state.json``, or a stat repeated for one instance,
        trial and perturbation (naming the file and the record).
    metaeval.SchemaError
        A folder with neither run files nor run sub-folders; two runs of one task by
        one model.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from metaeval.io import read_helm
    >>> tmp = tempfile.TemporaryDirectory()
    >>> def stat(value):
    ...     return {"name": {"name": "exact_match", "split": "test"}, "count": 1, "mean": value}
    >>> for model, correct in {"openai/gpt2": [1, 0], "meta/llama-7b": [1, 1]}.items():
    ...     run = pathlib.Path(tmp.name) / f"boolq:model={model.replace('/', '_')}"
    ...     run.mkdir()
    ...     spec = {"name": run.name, "adapter_spec": {"model": model}}
    ...     _ = (run / "run_spec.json").write_text(json.dumps(spec))
    ...     stats = [{"instance_id": f"id{i}", "train_trial_index": 0, "stats": [stat(c)]}
    ...              for i, c in enumerate(correct)]
    ...     _ = (run / "per_instance_stats.json").write_text(json.dumps(stats))
    >>> read_helm(tmp.name)
        task query         system       metric  value
    0  boolq   id0  meta/llama-7b  exact_match    1.0
    1  boolq   id1  meta/llama-7b  exact_match    1.0
    2  boolq   id0    openai/gpt2  exact_match    1.0
    3  boolq   id1    openai/gpt2  exact_match    0.0

    Two train trials and ``data_augmentation=lower``: the lowercased instance is
    a metric of its own, the trial a replicate.

    >>> run = pathlib.Path(tmp.name) / "lower" / "boolq:model=openai_gpt2,data_augmentation=lower"
    >>> run.mkdir(parents=True)
    >>> spec = {"name": run.name, "adapter_spec": {"model": "openai/gpt2"}}
    >>> _ = (run / "run_spec.json").write_text(json.dumps(spec))
    >>> lower = {"name": "lowercase", "robustness": True, "computed_on": "perturbed"}
    >>> stats = [{"instance_id": "id0", "train_trial_index": trial, "stats": [stat(c)],
    ...           **({"perturbation": lower} if perturbed else {})}
    ...          for trial, perturbed, c in [(0, False, 1), (0, True, 0), (1, False, 1),
    ...                                      (1, True, 1)]]
    >>> _ = (run / "per_instance_stats.json").write_text(json.dumps(stats))
    >>> scores = read_helm(run)
    >>> scores[["query", "metric", "value", "replicate"]]
      query                              metric  value  replicate
    0   id0                         exact_match    1.0          0
    1   id0  exact_match,perturbation=lowercase    0.0          0
    2   id0                         exact_match    1.0          1
    3   id0  exact_match,perturbation=lowercase    1.0          1
    >>> scores.attrs["replicates"]
    'nested'
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
    keys = ["task", "system", "query", "metric", "split", REPLICATE]
    table = pd.DataFrame(rows, columns=[*KEY_COLUMNS, "split", "value", REPLICATE])
    runs = table.drop_duplicates(keys)
    if len(runs) < len(table):
        twice = table[table.duplicated(keys)].iloc[0]
        raise SchemaError(
            f"Two HELM runs of task {excerpt(twice['task'])} by model {excerpt(twice['system'])} "
            f"(both give {excerpt(twice['metric'])} of {excerpt(twice['query'])}); pass one run "
            "per model and task."
        )
    several = table.groupby("task")["split"].transform("nunique").to_numpy() > 1
    metric = table["metric"].where(~several, table["metric"] + ",split=" + table["split"])
    table = table.assign(metric=metric).drop(columns="split")
    table = table.sort_values("system", kind="stable").reset_index(drop=True)
    if (table[REPLICATE] == 0).all():
        return table.drop(columns=REPLICATE)  # one train trial: nothing to tell apart
    table.attrs["replicates"] = "nested"  # each task's few-shot draws are its own
    return table

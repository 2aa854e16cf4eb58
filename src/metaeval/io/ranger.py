"""The Ranger toolkit's ``config.yaml`` layouts and per-sample text files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import FormatError, OptionError, PairingWarning, check_option, format_groups, warn
from .trec import open_text

__all__ = ["read_ranger", "read_per_sample"]

CONFIG_LAYOUT = (
    "a Ranger config.yaml with 'eval_metrics: {system: {task: file}}' (classification) or "
    "'qrels: {task: file}' and 'available_rankings: {system: {task: file}}' (retrieval), "
    "and optionally 'display_names: {task: name}'"
)
SAMPLE_LAYOUT = "one number per line, line i being sample i"


def read_per_sample(path: str | Path) -> np.ndarray:
    """A Ranger per-sample file: one number per line.

    Raises
    ------
    metaeval.FormatError
        Naming the line that is not a single number.
    """
    values = []
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            text = line.strip()
            try:
                value = float(text)
            except ValueError:
                raise FormatError(
                    path, number, f"{text!r} is not a number", SAMPLE_LAYOUT
                ) from None
            if not np.isfinite(value):
                raise FormatError(path, number, f"{text!r} is not finite", SAMPLE_LAYOUT)
            values.append(value)
    if not values:
        raise FormatError(path, None, "the file is empty", SAMPLE_LAYOUT)
    return np.asarray(values)


def _resolve(config: Path, entry: str) -> Path | None:
    """A path of the config: relative to its folder, or to the folder above it
    (Ranger's examples write paths relative to the directory holding the data folder)."""
    for base in (config.parent, config.parent.parent):
        candidate = (base / entry).resolve()
        if candidate.exists():
            return candidate
    return None


def read_ranger(
    config: str | Path,
    *,
    metric: str | None = None,
    measures: str | Sequence[str] = ("nDCG@10", "Judged@10"),
    missing_files: str = "error",
) -> pd.DataFrame:
    """Read the data of a Ranger ``config.yaml`` as a scores table.

    Parameters
    ----------
    config : path
        The config file. Its paths are looked up relative to its folder, then
        to the folder above it (where Ranger's examples point them).
    metric : str, optional
        The name of the per-sample metric of a classification config (Ranger's
        files do not say it), e.g. ``"accuracy"``; required for those.
    measures : str or list of str, default ("nDCG@10", "Judged@10")
        For a retrieval config: the ir_measures measures computed from the
        qrels and rankings (:func:`metaeval.ir.evaluate`; judged queries a run
        misses score 0).
    missing_files : {"error", "skip"}, default "error"
        Files the config names that do not exist: an error, or leave those
        (system, task) entries out with a warning naming them.

    Returns
    -------
    pandas.DataFrame
        ``task, query, system, metric, value``; ``attrs["display_names"]``
        holds the config's ``display_names`` (task → label). Classification
        samples are numbered ``"0", "1", …`` by line.

    Raises
    ------
    metaeval.FormatError
        For a config of another layout or a malformed data file (naming the
        file and line).
    """
    import yaml

    check_option("missing_files", missing_files, ["error", "skip"])
    config = Path(config)
    with open_text(config) as handle:
        try:
            spec = yaml.safe_load(handle)
        except yaml.YAMLError as err:
            line = getattr(getattr(err, "problem_mark", None), "line", None)
            raise FormatError(
                config, None if line is None else line + 1, f"not YAML ({err})", CONFIG_LAYOUT
            ) from None
    if not isinstance(spec, dict) or not (
        {"eval_metrics"} <= spec.keys() or {"qrels", "available_rankings"} <= spec.keys()
    ):
        keys = list(spec) if isinstance(spec, dict) else type(spec).__name__
        raise FormatError(config, None, f"top-level keys {keys}", CONFIG_LAYOUT)
    absent: list[tuple[str, str, str]] = []

    def locate(system: str, task: str, entry: str) -> Path | None:
        path = _resolve(config, str(entry))
        if path is None:
            if missing_files == "error":
                raise FormatError(config, None, f"{system}/{task}: file {entry!r} does not exist", "existing files "
                                  "(or missing_files='skip')")  # fmt: skip
            absent.append((system, task, str(entry)))
        return path

    if "eval_metrics" in spec:
        if metric is None:
            raise OptionError(
                "A classification config does not name its metric: pass metric=..., e.g. 'accuracy'."
            )
        frames = []
        for system, tasks in spec["eval_metrics"].items():
            for task, entry in tasks.items():
                path = locate(str(system), str(task), entry)
                if path is None:
                    continue
                values = read_per_sample(path)
                frames.append(pd.DataFrame({"task": str(task), "query": np.arange(len(values)).astype(str),
                                            "system": str(system), "metric": metric, "value": values}))  # fmt: skip
        scores = pd.concat(frames, ignore_index=True)
    else:
        from ..ir import evaluate

        qrels = {}
        for task, entry in spec["qrels"].items():
            path = locate("qrels", str(task), entry)
            if path is not None:
                qrels[str(task)] = path
        runs: dict[str, dict[str, Path]] = {}
        for system, tasks in spec["available_rankings"].items():
            for task, entry in tasks.items():
                if str(task) not in qrels:
                    absent.append((str(system), str(task), "(no qrels)"))
                    continue
                path = locate(str(system), str(task), entry)
                if path is not None:
                    runs.setdefault(str(system), {})[str(task)] = path
        complete = [t for t in qrels if all(t in by_task for by_task in runs.values())]
        for t in set(qrels) - set(complete):
            absent.append(("qrels", t, "(not every system has a ranking)"))
        scores = evaluate({t: qrels[t] for t in complete}, {s: {t: r[t] for t in complete} for s, r in runs.items()},
                          measures)  # fmt: skip
    if absent:
        warn(
            "Entries of the config without data were left out:\n"
            + format_groups(pd.DataFrame(absent, columns=["system", "task", "file"])),
            PairingWarning,
        )
    scores.attrs["display_names"] = {
        str(k): str(v) for k, v in (spec.get("display_names") or {}).items()
    }
    return scores

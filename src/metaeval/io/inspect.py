"""Inspect AI evaluation logs (``.eval`` or ``.json``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import FormatError, MetaEvalWarning, OptionError, SchemaError, excerpt, warn_groups

__all__ = ["read_inspect"]

LAYOUT = "an Inspect AI evaluation log (.eval or .json) that inspect_ai.log.read_eval_log reads"
_KEYS = ("task", "query", "system", "metric", "value", "replicate")


def _inspect_log() -> Any:
    """``inspect_ai.log``, imported when a log is read (an optional dependency)."""
    try:
        from inspect_ai import log
    except ImportError as error:
        raise ImportError(
            "read_inspect needs the inspect_ai package: pip install metaeval[inspect]"
        ) from error
    return log


def _names(value: Any, argument: str) -> list[str] | None:
    """``None``, one name or a list of names, as a list of strings."""
    if value is None:
        return None
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, Sequence) or not all(isinstance(n, str) for n in names):
        raise OptionError(
            f"`{argument}` must be a name or a list of names (strings), not {excerpt(value)}."
        )
    return list(dict.fromkeys(names))


def _files(source: Any) -> list[Path]:
    """The log files of ``source``: a file, a folder (searched recursively) or a list."""
    items = [source] if isinstance(source, str | Path) else list(source)
    files: list[Path] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            found = sorted(
                p for p in path.rglob("*") if p.is_file() and p.suffix in (".eval", ".json")
                and p.name != "logs.json"  # Inspect's listing of a log folder, not a log
            )  # fmt: skip
            if not found:
                raise SchemaError(
                    f"The folder {path} holds no Inspect logs (*.eval or *.json); pass the "
                    "log folder Inspect wrote (its --log-dir) or the log files."
                )
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise FormatError(path, None, "no such file or folder", LAYOUT)
    if not files:
        raise SchemaError("`source` lists no Inspect log; pass a log file, a folder or a list.")
    return files


def _read(log: Any, path: Path) -> Any:
    try:
        return log.read_eval_log(str(path))
    except Exception as error:  # any failure of Inspect's reader: a damaged file
        raise FormatError(
            path, None, f"Inspect could not read it ({type(error).__name__}: {error})", LAYOUT
        ) from error


def _values(value: Any, name: str, to_float: Any) -> list[tuple[str, float]]:
    """``(metric, value)`` of one score: ``name`` itself, or ``name/key`` per key of a dict
    (``name/0``, … per item of a list), each through Inspect's ``value_to_float``."""
    if isinstance(value, dict):
        return [(f"{name}/{key}", float(to_float(v))) for key, v in value.items()]
    if isinstance(value, list):
        return [(f"{name}/{i}", float(to_float(v))) for i, v in enumerate(value)]
    return [(name, float(to_float(value)))]


def read_inspect(
    source: str | Path | Sequence[str | Path],
    *,
    metadata: str | Sequence[str] | None = None,
    scorer: str | Sequence[str] | None = None,
) -> pd.DataFrame:
    """Scores from Inspect AI evaluation logs, one row per sample and score.

    Parameters
    ----------
    source
        An Inspect log file (``.eval`` or ``.json``), a folder of them (Inspect's
        ``--log-dir``, searched recursively for ``*.eval`` and ``*.json``, each
        of which must be a log; Inspect's ``logs.json`` listing is left out) or a
        list of files and folders. The logs are read with
        ``inspect_ai.log.read_eval_log``, so every format Inspect reads is read.
    metadata : str or list of str, optional
        Keys of the samples' ``metadata`` to copy into columns of the same name,
        e.g. ``"passage"`` (cluster ids for clustered standard errors). Every
        sample must have each key.
    scorer : str or list of str, optional
        The scorers to read (by the name under which Inspect records their
        scores); by default every scorer of every log.

    Returns
    -------
    pandas.DataFrame
        ``task, query, system, metric, value`` (and ``replicate``, then the
        ``metadata`` columns): ``task`` the task name, ``system`` the model name
        as Inspect records it (``eval.model``, e.g. ``openai/gpt-4o``), ``query``
        the sample id, ``metric`` the scorer name, or ``scorer/key`` for every key
        of a scorer whose value is a dict (``scorer/0``, … for a list), and
        ``value`` the score through Inspect's own ``value_to_float``
        (``"C"`` = 1, ``"I"`` = 0, ``"P"`` = 0.5, ``"N"`` = 0, booleans 0/1,
        numbers as they are). When a task ran more than one epoch, ``replicate``
        holds the epoch (of every row, 1 for tasks run once) and
        ``attrs["replicates"]`` is ``"epochs"``, which :func:`metaeval.effects`
        takes as its ``replicates=`` unless told otherwise: an epoch is a
        repeated answer to the same item, the item's mean is the unit.

    Raises
    ------
    ImportError
        ``inspect_ai`` is not installed (``pip install metaeval[inspect]``).
    metaeval.FormatError
        A file that does not exist or that Inspect cannot read (truncated,
        damaged, not a log), naming it.
    metaeval.SchemaError
        A log none of whose samples was scored (a failed run: its error is
        shown); a log without samples (Inspect ran without writing them, or the run
        stopped before any finished); a sample without a score of a scorer the
        log has, or without a requested ``metadata`` key (naming file and sample
        id); a sample id repeated for the same task, model and epoch, within a
        log or across logs (naming the files); ``scorer`` naming a scorer no log
        has; a folder without logs.
    metaeval.OptionError
        ``metadata`` or ``scorer`` not names, or a ``metadata`` key that is one of
        the table's own columns.

    Warns
    -----
    metaeval.MetaEvalWarning
        Samples that failed in Inspect (an error and no score: runs with
        ``fail_on_error`` off, or unfinished) are left out, as Inspect leaves them
        out of its metrics, with a warning listing file, task, model, epoch and
        sample id; logs whose status is not ``"success"`` are read with a warning
        naming them.

    Notes
    -----
    Matched and tested with inspect_ai 0.3.285 (the ``.eval`` zip format and the older ``.json``
    format, whatever ``read_eval_log`` of the installed version reads).

    Examples
    --------
    Two questions from one passage, both answered ``4`` (a solver sets the answer,
    so that no model is called), scored by ``match()``; the log is written by
    ``inspect_ai.eval()`` itself:

    >>> import tempfile
    >>> from inspect_ai import Task, eval
    >>> from inspect_ai.dataset import Sample
    >>> from inspect_ai.model import ModelOutput
    >>> from inspect_ai.scorer import match
    >>> from inspect_ai.solver import solver
    >>> from metaeval.io import read_inspect
    >>> @solver
    ... def answer_four():
    ...     async def solve(state, generate):  # no model call: the answer is set here
    ...         state.output = ModelOutput.from_content(model="mockllm/model", content="4")
    ...         return state
    ...     return solve
    >>> samples = [Sample(input="2 + 2?", target="4", id="q1", metadata={"passage": "p1"}),
    ...            Sample(input="3 + 3?", target="6", id="q2", metadata={"passage": "p1"})]
    >>> tmp = tempfile.TemporaryDirectory()
    >>> task = Task(dataset=samples, solver=answer_four(), scorer=match(), name="arithmetic")
    >>> _ = eval(task, model="mockllm/model", log_dir=tmp.name, display="none")
    >>> read_inspect(tmp.name, metadata="passage")
             task query         system metric  value passage
    0  arithmetic    q1  mockllm/model  match    1.0      p1
    1  arithmetic    q2  mockllm/model  match    0.0      p1
    >>> tmp.cleanup()
    """
    keys = _names(metadata, "metadata") or []
    clash = [k for k in keys if k in _KEYS]
    if clash:
        raise OptionError(
            f"`metadata` names {', '.join(clash)}, a column the scores table has already; "
            "rename the key in the samples' metadata."
        )
    chosen = _names(scorer, "scorer")
    log = _inspect_log()
    from inspect_ai.scorer import value_to_float

    to_float = value_to_float()
    rows: list[tuple] = []
    where: dict[tuple, Path] = {}
    scorers: set[str] = set()
    several = False
    failed: list[tuple] = []
    unfinished: list[tuple] = []
    for path in _files(source):
        evaluation = _read(log, path)
        task, system = str(evaluation.eval.task), str(evaluation.eval.model)
        epochs = evaluation.eval.config.epochs or 1
        several = several or epochs > 1
        samples = evaluation.samples or []
        if not samples:
            raise SchemaError(
                f"{path}: the log of task {task!r} (model {system!r}, status "
                f"{evaluation.status!r}) has no samples; rerun Inspect so that it writes "
                "them (no --no-log-samples) and the run finishes."
            )
        if evaluation.status != "success":
            unfinished.append((path.name, task, system, evaluation.status))
        names = list(dict.fromkeys(n for s in samples for n in (s.scores or {})))
        if not names:
            failed = next((s.error.message for s in samples if s.error), evaluation.error)
            raise SchemaError(
                f"{path}: no sample of task {task!r} (model {system!r}, status "
                f"{evaluation.status!r}) was scored"
                + (f"; the run failed: {excerpt(str(failed))}" if failed else "")
                + "; fix the run and rerun it (inspect eval-retry)."
            )
        scorers.update(names)
        wanted = names if chosen is None else [n for n in names if n in chosen]
        for sample in samples:
            key = (task, system, sample.epoch, sample.id)
            if key in where:
                raise SchemaError(
                    f"Sample {sample.id!r} of task {task!r}, model {system!r}, epoch "
                    f"{sample.epoch} is in the logs twice: {where[key]} and {path}; read the "
                    "logs of one run only (one per task and model), or pass them separately."
                )
            where[key] = path
            given = sample.metadata or {}
            missing = [k for k in keys if k not in given]
            if missing:
                raise SchemaError(
                    f"{path}: sample {sample.id!r} of task {task!r} has no metadata "
                    f"{', '.join(map(repr, missing))} (requested by `metadata`); it has "
                    f"{', '.join(map(repr, given)) or 'none'}."
                )
            extra = tuple(given[k] for k in keys)
            scores = sample.scores or {}
            if sample.error is not None and not scores:  # Inspect scored it not either
                failed.append((path.name, task, system, sample.epoch, sample.id,
                               excerpt(str(sample.error.message))))  # fmt: skip
                continue
            absent = [n for n in wanted if n not in scores]
            if absent:
                raise SchemaError(
                    f"{path}: sample {sample.id!r} of task {task!r} (epoch {sample.epoch}) has "
                    f"no score of {', '.join(map(repr, absent))}"
                    + (
                        f" (it failed: {excerpt(str(sample.error.message))})"
                        if sample.error
                        else ""
                    )
                    + "; rerun the failed samples (inspect eval-retry) or choose scorers with `scorer`."
                )
            for name in wanted:
                for metric, value in _values(scores[name].value, name, to_float):
                    rows.append((task, sample.id, system, metric, value, sample.epoch, *extra))
    if chosen is not None:
        unknown = [n for n in chosen if n not in scorers]
        if unknown:
            raise SchemaError(
                f"`scorer` names {', '.join(map(repr, unknown))}, which the logs do not have; "
                f"they have {', '.join(map(repr, sorted(scorers)))}."
            )
    table = pd.DataFrame(rows, columns=[*_KEYS, *keys])
    table["value"] = table["value"].astype(np.float64)
    if not several:
        table = table.drop(columns="replicate")
    else:  # epochs: repeated answers to an item, not runs (effects(replicates="epochs"))
        table.attrs["replicates"] = "epochs"
    if failed:  # once the table is made: no warning before an error
        warn_groups(
            "{n} sample(s) failed in Inspect (an error and no score) and are left out, as "
            "Inspect leaves them out of its metrics; rerun them with inspect eval-retry",
            pd.DataFrame(failed, columns=["file", "task", "system", "epoch", "query", "error"]),
            MetaEvalWarning,
        )
    if unfinished:
        warn_groups(
            "{n} log(s) are of runs that did not finish: they hold only the samples that "
            "completed; rerun them with inspect eval-retry",
            pd.DataFrame(unfinished, columns=["file", "task", "system", "status"]),
            MetaEvalWarning,
        )
    return table

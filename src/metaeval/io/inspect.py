"""Inspect AI evaluation logs (``.eval`` or ``.json``)."""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import FormatError, MetaEvalWarning, OptionError, SchemaError, excerpt, warn_groups
from ._text import check_primary_map

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
                p
                for p in path.rglob("*")
                if p.is_file()
                and p.suffix in (".eval", ".json")
                and p.name != "logs.json"  # Inspect's listing of a log folder, not a log
            )
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


#: The fields of ``system_name``'s format string (see :func:`read_inspect`).
SYSTEM_FIELDS = (
    "model",
    "task",
    "task_args",
    "model_args",
    "solver",
    "solver_args",
    "tags",
    "metadata",
)
_SENTINELS = ("C", "I", "P", "N")  # Inspect's CORRECT, INCORRECT, PARTIAL, NOANSWER


def _kind(value: Any) -> str:
    """How Inspect's ``value_to_float`` takes a scalar score value: ``"number"`` (it converts
    it), ``"unscored"`` (NaN, the sentinel Inspect's metrics and reducers skip) or ``"bad"``
    (it would warn and count 0: any other string, None, a nested value, ±inf)."""
    if isinstance(value, bool | int | float):
        if isinstance(value, float) and math.isnan(value):
            return "unscored"
        return "number" if math.isfinite(value) else "bad"
    if isinstance(value, str):
        if value in _SENTINELS or value.lower() in ("yes", "true", "no", "false"):
            return "number"
        try:
            return "number" if math.isfinite(float(value)) else "bad"
        except ValueError:
            return "bad"
    return "bad"


def _values(value: Any, name: str) -> list[tuple[str, Any]]:
    """``(metric, scalar)`` of one score: ``name`` itself, or ``name/key`` per key of a dict
    (``name/0``, ... per item of a list)."""
    if isinstance(value, dict):
        return [(f"{name}/{key}", v) for key, v in value.items()]
    if isinstance(value, list):
        return [(f"{name}/{i}", v) for i, v in enumerate(value)]
    return [(name, value)]


def _spec(evaluation: Any) -> dict[str, Any]:
    """The fields ``system_name`` formats, from a log's ``eval`` spec (and plan)."""
    spec = evaluation.eval
    steps = evaluation.plan.steps if evaluation.plan is not None else []
    return {
        "model": str(spec.model),
        "task": str(spec.task),
        "task_args": dict(spec.task_args or {}),
        "model_args": dict(spec.model_args or {}),
        "solver": spec.solver or "+".join(str(step.solver) for step in steps),
        "solver_args": dict(spec.solver_args or {}),
        "tags": list(spec.tags or []),
        "metadata": dict(spec.metadata or {}),
    }


def _namer(system_name: Any) -> Callable[[Any, dict[str, Any], Path], str]:
    """The function naming a log's system, from ``system_name`` (checked here)."""
    if system_name is None:
        return lambda evaluation, spec, path: spec["model"]
    if callable(system_name):

        def called(evaluation: Any, spec: dict[str, Any], path: Path) -> str:
            name = system_name(evaluation)
            if not isinstance(name, str) or not name:
                raise SchemaError(
                    f"{path}: `system_name` returned {excerpt(name)} for the log of task "
                    f"{excerpt(spec['task'])} (model {excerpt(spec['model'])}); it must return a non-empty "
                    "string."
                )
            return name

        return called
    if not isinstance(system_name, str):
        raise OptionError(
            "`system_name` (--system-name) must be a format string such as "
            "'{model}:{task_args[prompt]}' or a function of the log returning a string, not "
            f"{excerpt(system_name)}."
        )
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(system_name) if f is not None]
    except ValueError as error:
        raise OptionError(
            f"`system_name` (--system-name) {system_name!r} is not a format string: {error}."
        ) from None
    unknown = [f for f in fields if re.split(r"[.\[]", f, maxsplit=1)[0] not in SYSTEM_FIELDS]
    if unknown:
        raise OptionError(
            f"`system_name` (--system-name) {system_name!r} names "
            f"{', '.join(map(repr, unknown))}; its fields are {', '.join(SYSTEM_FIELDS)} (e.g. "
            "'{model}:{task_args[prompt]}')."
        )

    def formatted(evaluation: Any, spec: dict[str, Any], path: Path) -> str:
        try:
            name = system_name.format(**spec)
        except (KeyError, IndexError) as error:
            key = error.args[0] if error.args else ""
            field = next((f for f in fields if f"[{key}]" in f), system_name)
            raise SchemaError(
                f"{path}: `system_name` {system_name!r} (--system-name) names {field}, but the "
                f"log of task {excerpt(spec['task'])} (model {excerpt(spec['model'])}) has no {key!r}; it has "
                f"task_args {excerpt(spec['task_args'], 200)}, model_args "
                f"{excerpt(spec['model_args'], 200)}, solver_args "
                f"{excerpt(spec['solver_args'], 200)}."
            ) from None
        if not name:
            raise SchemaError(
                f"{path}: `system_name` {system_name!r} gives an empty name for the log of task "
                f"{excerpt(spec['task'])} (model {excerpt(spec['model'])})."
            )
        return name

    return formatted


def _difference(first: dict[str, Any], second: dict[str, Any]) -> str:
    """What tells two runs of the same samples apart, and the ``system_name`` that names it."""
    if first["model"] != second["model"]:  # a system_name without {model}
        shown = f"{excerpt(first['model'])} and {excerpt(second['model'])}"
        return _naming(f"model ({shown})", "{model}:...")
    for field in ("task_args", "solver_args", "model_args"):
        a, b = first[field], second[field]
        keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k, None) != b.get(k, None)]
        if field == "solver_args" and first["solver"] != second["solver"]:
            keys = []  # the solvers differ: name them instead
        if keys:
            shown = "; ".join(f"{k}: {excerpt(a.get(k))} and {excerpt(b.get(k))}" for k in keys)
            name = "{model}:" + ":".join(f"{{{field}[{k}]}}" for k in keys)
            return _naming(f"{field} ({shown})", name)
        if field == "task_args" and first["solver"] != second["solver"]:
            shown = f"{excerpt(first['solver'])} and {excerpt(second['solver'])}"
            return _naming(f"solver ({shown})", "{model}:{solver}")
    return (
        " Read the logs of one run only (one per task and model), or pass them separately; runs "
        "that differ in their task arguments or solver are told apart by naming the systems "
        "with system_name (--system-name), e.g. '{model}:{task_args[NAME]}'."
    )


def _naming(what: str, name: str) -> str:
    return (
        f" The two runs differ in {what}: to compare them, name the systems by it with "
        f"system_name='{name}' (--system-name '{name}' in the command)."
    )


def _headline(evaluation: Any, reducers: list[str]) -> str | None:
    """The table's metric of the log's headline score (Inspect's ``results.headline``, else
    its first score): ``scorer``, ``scorer/key``, with ``[reducer]`` when there are several."""
    results = evaluation.results
    if results is None or not results.scores:
        return None
    head = results.headline
    if head is not None and head.scorer is not None:
        scorer, score, reducer = head.scorer, head.score, head.reducer
    else:
        first = results.scores[0]
        scorer, score, reducer = first.scorer, first.name, first.reducer
    name = scorer if score in (None, scorer) else f"{scorer}/{score}"
    return name + (f"[{reducer or reducers[0]}]" if len(reducers) > 1 else "")


def _primary_metrics(table: pd.DataFrame, primary: Any, heads: dict[str, set]) -> dict[str, str]:
    """The primary metric of every task: the one ``primary`` names, else the logs' headline."""
    have = {
        str(task): sorted(str(m) for m in metrics)
        for task, metrics in table.groupby("task", sort=True)["metric"].unique().items()
    }
    named = dict(primary) if isinstance(primary, Mapping) else {}
    check_primary_map(named, have)
    chosen: dict[str, str] = {}
    for task, metrics in have.items():  # one name per task: a loop over names, not data
        found = sorted(n for n in heads.get(task, set()) if n is not None)
        metric = named.get(task, found[0] if len(found) == 1 else None)
        if metric is None and len(metrics) == 1:
            metric = metrics[0]
        if metric is None:
            why = (
                f"its logs' headline metrics differ ({', '.join(found)})"
                if found
                else "its logs record no headline metric"
            )
            raise SchemaError(
                f"No primary metric is known for task {task!r}: {why}; name it, e.g. "
                f"{task}={metrics[0]} (primary={{task: metric}}; on the command line "
                "--primary TASK=METRIC)."
            )
        if metric not in metrics:
            source = "named in `primary` / --primary" if task in named else "Inspect's headline"
            raise SchemaError(
                f"The primary metric {metric} of task {task!r} ({source}) is not in its logs, "
                f"which have {', '.join(metrics)}; name one of them, e.g. {task}={metrics[0]}."
            )
        chosen[task] = metric
    return chosen


def read_inspect(
    source: str | Path | Sequence[str | Path],
    *,
    metadata: str | Sequence[str] | None = None,
    scorer: str | Sequence[str] | None = None,
    primary: bool | Mapping[str, str] = False,
    system_name: str | Callable[[Any], str] | None = None,
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
    primary : bool or mapping of str to str, default False
        Keep one metric per task, named ``"primary"``, so that tasks scored by
        different scorers pool together (as :func:`read_lm_eval`'s ``primary``):
        ``True`` takes each task's headline metric as Inspect records it
        (``results.headline``: the task's ``headline_metric``, else its first
        scorer, and the first reducer of several), or the task's only metric;
        a mapping ``{task: metric}`` names the metric (as the table names it:
        ``"match"``, ``"scorer/key"``, ``"match[max]"``) of the tasks it lists,
        the others keep their headline. ``attrs["primary"]`` records the metric
        of every task.
    system_name : str or callable, optional
        How to name a log's system (default: its model, ``"{model}"``). A
        format string over the log's ``model``, ``task``, ``task_args``,
        ``model_args``, ``solver`` (``eval(solver=...)``'s name, else the
        plan's solver names joined by ``+``), ``solver_args``, ``tags`` and
        ``metadata``, e.g. ``"{model}:{task_args[prompt]}"`` to compare two
        prompts (or ``"{model}:{solver}"`` two solvers) on the same model; or a
        function of the log (an ``inspect_ai.log.EvalLog``) returning the name.
        Two runs of one task and system are the same samples twice, an error
        that names what differs between them and the ``system_name`` to use.

    Returns
    -------
    pandas.DataFrame
        ``task, query, system, metric, value`` (and ``replicate``, then the
        ``metadata`` columns): ``task`` the task name, ``system`` the model name
        as Inspect records it (``eval.model``, e.g. ``openai/gpt-4o``) or as
        ``system_name`` makes it, ``query`` the sample id as a string (always:
        Inspect allows integer and string ids, and tasks that mix them must
        still pair and pool; ``7`` becomes ``"7"``), ``metric`` the scorer
        name, or ``scorer/key`` for every key of a scorer whose value is a dict
        (as Inspect's metrics per key); ``value`` the score through Inspect's own
        ``value_to_float`` (``"C"`` = 1, ``"I"`` = 0, ``"P"`` = 0.5, ``"N"`` = 0,
        booleans 0/1, ``"yes"``/``"no"``, numbers and numeric strings as they
        are).

        **Epochs.** A task run for several epochs is read with the reducer the
        log records (``Epochs(n, reducer)``, ``eval.config.epochs_reducer``), so
        that each task's mean is the metric Inspect reports:

        - the default ``mean``: every epoch is a row, ``replicate`` holds the
          epoch and ``attrs["replicates"]`` is ``"epochs"``, which
          :func:`metaeval.effects` takes as its ``replicates=`` unless told
          otherwise (an epoch is a repeated answer to the same item: the item's
          mean over its epochs is the unit, and the epochs are its within-item
          replicates, as :func:`metaeval.means` splits them);
        - any other reducer (``max``, ``mode``, ``median``, ``at_least_k``,
          ``pass_at_k``, a custom one): one row per sample holding Inspect's own
          reduced score (the log's ``reductions``), because the epochs of a max
          or a majority vote are not replicates of the value analysed. Its
          ``replicate`` is 1 when the table has the column for other tasks (as
          for a task run once): the reduced score is the item's one value.

        Several reducers give one metric each, ``scorer[reducer]``
        (``match[max]``, ``match[mean]``), Inspect's own labels. Tasks whose
        reducer is not the mean are listed in ``attrs["epochs_reducer"]``
        (``{task: [reducer, ...]}``).

        With ``primary``, ``attrs["primary"]`` maps each task to its metric.

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
        id); a sample id repeated for the same task, system and epoch, within a
        log or across logs (naming the files, what differs between the two runs
        and the ``system_name`` that tells them apart); ``scorer`` naming a
        scorer no log has; a folder without logs. A score value that Inspect's
        ``value_to_float`` cannot convert (a string such as ``"maybe"``, None
        in a dict, ±inf): Inspect counts it as 0 with a log message, which would
        be a guess here, so every such value is listed (file, task, system,
        scorer, sample, epoch, value); leave the scorer out with ``scorer`` or
        rescore the logs. A task reduced over its epochs differently for two
        systems (another reducer, or another number of epochs under a reducer
        other than the mean: a max over 4 epochs is not comparable with a mean or
        a max over 2); a log whose reducer is not the mean but which holds no
        reduced scores. With ``primary``: a task in the mapping that the logs do
        not have, a metric not in its task's logs, or a task without a headline
        metric. ``system_name`` naming a key a log lacks, or giving an empty name.
    metaeval.OptionError
        ``metadata`` or ``scorer`` not names, a ``metadata`` key that is one of
        the table's own columns; ``primary`` not a bool or mapping of names;
        ``system_name`` not a format string or callable, or with a field that is
        not one of the fields above.

    Warns
    -----
    metaeval.MetaEvalWarning
        Samples that failed in Inspect (an error and no score: runs with
        ``fail_on_error`` off, or unfinished) are left out, as Inspect leaves them
        out of its metrics, with a warning listing file, task, model, epoch and
        sample id; so are unscored values (NaN, ``Score.unscored()``), which
        Inspect's metrics and reducers skip. Logs whose status is not
        ``"success"`` are read with a warning naming them. A log that holds fewer
        scored samples than its header says were completed (a log damaged or
        edited after the run: its metrics include samples that are not there) is
        read with a warning naming file, task, system, both counts and the lost
        sample ids. Logs that have none of the scorers ``scorer`` names are left
        out with a warning naming them. A scorer whose values are lists is read as one metric per
        position (``scorer/0``, ``scorer/1``, as Inspect's reducers reduce lists
        position by position), with a warning: Inspect's own metrics convert a
        list to 0, so the log's metrics of that scorer are not these means.

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

    The same task with the answer told apart by a task argument, the system named
    by model and prompt:

    >>> from inspect_ai import task as inspect_task
    >>> @inspect_task
    ... def arithmetic(prompt: str = "plain"):
    ...     return Task(dataset=samples, solver=answer_four(), scorer=match())
    >>> _ = eval([arithmetic(prompt="plain"), arithmetic(prompt="terse")],
    ...          model="mockllm/model", log_dir=tmp.name + "/prompts", display="none")
    >>> table = read_inspect(tmp.name + "/prompts", system_name="{model}:{task_args[prompt]}")
    >>> sorted(table["system"].unique())
    ['mockllm/model:plain', 'mockllm/model:terse']
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
    if primary is not True and primary is not False and not isinstance(primary, Mapping):
        raise OptionError(
            f"`primary` must be True, False or a mapping {{task: metric}}, not {excerpt(primary)}."
        )
    name_system = _namer(system_name)
    log = _inspect_log()
    from inspect_ai.scorer import value_to_float

    to_float = value_to_float()
    rows: list[tuple] = []
    where: dict[tuple, tuple[Path, dict[str, Any]]] = {}
    scorers: set[str] = set()
    failed: list[tuple] = []
    unfinished: list[tuple] = []
    unscored: list[tuple] = []
    lists: dict[tuple, None] = {}
    lost: list[tuple] = []
    unchosen: list[tuple] = []  # logs without any scorer `scorer` names
    designs: dict[str, dict[str, tuple]] = {}  # task -> system -> (reducers, epochs)
    heads: dict[str, set] = {}
    reduced_tasks: dict[str, list[str]] = {}
    for path in _files(source):
        evaluation = _read(log, path)
        file = path.name
        spec = _spec(evaluation)
        task, model = spec["task"], spec["model"]
        system = name_system(evaluation, spec, path)
        epochs = evaluation.eval.config.epochs or 1
        reducers = [str(r) for r in evaluation.eval.config.epochs_reducer or ["mean"]]
        samples = evaluation.samples or []
        if not samples:
            raise SchemaError(
                f"{path}: the log of task {task!r} (model {model!r}, status "
                f"{evaluation.status!r}) has no samples; rerun Inspect so that it writes "
                "them (no --no-log-samples) and the run finishes."
            )
        if evaluation.status != "success":
            unfinished.append((path.name, task, system, evaluation.status))
        names = list(dict.fromkeys(n for s in samples for n in (s.scores or {})))
        if not names:
            error = next((s.error.message for s in samples if s.error), evaluation.error)
            raise SchemaError(
                f"{path}: no sample of task {task!r} (model {model!r}, status "
                f"{evaluation.status!r}) was scored"
                + (f"; the run failed: {excerpt(str(error))}" if error else "")
                + "; fix the run and rerun it (inspect eval-retry)."
            )
        scorers.update(names)
        wanted = names if chosen is None else [n for n in names if n in chosen]
        if not wanted:
            unchosen.append((path.name, task, system, ", ".join(names)))
        designs.setdefault(task, {})[system] = (
            tuple(reducers),
            None if reducers == ["mean"] else epochs,
        )
        heads.setdefault(task, set()).add(_headline(evaluation, reducers))
        if reducers != ["mean"]:
            reduced_tasks[task] = reducers
        scored: dict[str, Any] = {}  # sample id -> its first scored record (reduced metrics)
        for sample in samples:
            query = str(sample.id)
            key = (task, system, sample.epoch, query)
            if key in where:
                first, other = where[key]
                raise SchemaError(
                    f"Sample {sample.id!r} of task {task!r}, system {system!r}, epoch "
                    f"{sample.epoch} is in the logs twice: {first} and {path}."
                    + _difference(other, spec)
                )
            where[key] = (path, spec)
            given = sample.metadata or {}
            missing = [k for k in keys if k not in given]
            if missing:
                raise SchemaError(
                    f"{path}: sample {sample.id!r} of task {task!r} has no metadata "
                    f"{', '.join(map(repr, missing))} (requested by `metadata`); it has "
                    f"{', '.join(map(repr, given)) or 'none'}."
                )
            scores = sample.scores or {}
            if sample.error is not None and not scores:  # Inspect scored it not either
                failed.append(
                    (
                        path.name,
                        task,
                        system,
                        sample.epoch,
                        query,
                        excerpt(str(sample.error.message)),
                    )
                )
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
            extra = tuple(given[k] for k in keys)
            scored.setdefault(query, (sample, extra))
            if "mean" not in reducers:
                continue
            suffix = "[mean]" if len(reducers) > 1 else ""
            epoch = sample.epoch
            here = (file, task, system, epoch, sample.id)
            for name in wanted:  # the epochs are the mean's within-item replicates
                value = scores[name].value
                for metric, item in _values(value, name):
                    rows.append((task, query, system, metric + suffix, item, epoch, *extra, here))
                if isinstance(value, list):
                    lists[(file, task, system, name)] = None
        reductions = {  # (scorer, reducer) -> sample id -> Inspect's reduced score
            (str(r.scorer), str(r.reducer or "mean")): {
                str(x.sample_id): x.value for x in r.samples
            }
            for r in evaluation.reductions or []
            if reducers != ["mean"]  # the mean's epochs are read, not its reductions
        }
        for reducer in (r for r in reducers if r != "mean"):
            suffix = f"[{reducer}]" if len(reducers) > 1 else ""
            for name in wanted:
                values = reductions.get((name, reducer))
                if values is None or any(query not in values for query in scored):
                    raise SchemaError(
                        f"{path}: task {task!r} (model {model!r}) reduces its {epochs} epochs "
                        f"with reducer {reducer!r}, but the log holds no reduced scores of "
                        f"scorer {name!r} for every sample (its 'reductions'); metaeval reads "
                        "Inspect's own reduced scores for reducers other than the mean. Rerun "
                        "or rescore the task (inspect score) so that the log has them."
                    )
                for query, (sample, extra) in scored.items():
                    here = (file, task, system, reducer, sample.id)
                    for metric, value in _values(values[query], name):
                        rows.append((task, query, system, metric + suffix, value, 1, *extra, here))
                    if isinstance(values[query], list):
                        lists[(file, task, system, name)] = None
        results = evaluation.results
        read = sum(1 for s in samples if s.scores)
        if results is not None and results.completed_samples > read:
            listed = {str(x.sample_id) for r in evaluation.reductions or [] for x in r.samples}
            gone = sorted(listed - {str(s.id) for s in samples}, key=_natural)
            lost.append(
                (
                    path.name,
                    task,
                    system,
                    results.completed_samples,
                    read,
                    ", ".join(gone) or "unknown",
                )
            )
    if chosen is not None:
        unknown = [n for n in chosen if n not in scorers]
        if unknown:
            raise SchemaError(
                f"`scorer` names {', '.join(map(repr, unknown))}, which the logs do not have; "
                f"they have {', '.join(map(repr, sorted(scorers)))}."
            )
    _check_designs(designs)
    kinds, numbers = _convert([row[4] for row in rows], to_float)
    if "bad" in kinds:
        _bad_values([row for row, kind in zip(rows, kinds, strict=True) if kind == "bad"])
    if "unscored" in kinds:
        unscored = [
            (*row[-1][:4], row[1], row[3])
            for row, kind in zip(rows, kinds, strict=True)
            if kind == "unscored"
        ]
        keep = np.array(kinds) == "number"
        rows, numbers = [row for row, ok in zip(rows, keep, strict=True) if ok], numbers[keep]
    table = pd.DataFrame([row[:-1] for row in rows], columns=[*_KEYS, *keys])
    table["value"] = numbers
    if primary is not False:
        picked = _primary_metrics(table, primary, heads)
        keep = table["metric"].to_numpy() == table["task"].map(picked).to_numpy()
        table = table[keep].assign(metric="primary").reset_index(drop=True)
        table.attrs["primary"] = picked
    if not (table["replicate"] > 1).any():
        table = table.drop(columns="replicate")
    else:  # epochs: repeated answers to an item, not runs (effects(replicates="epochs"))
        table.attrs["replicates"] = "epochs"
    if reduced_tasks:
        table.attrs["epochs_reducer"] = dict(sorted(reduced_tasks.items()))
    _warn(failed, unfinished, unscored, lists, lost)
    if unchosen:
        warn_groups(
            "{n} log(s) have none of the scorers `scorer` names and are left out",
            pd.DataFrame(unchosen, columns=["file", "task", "system", "scorers"]),
            MetaEvalWarning,
        )
    return table


def _convert(values: list[Any], to_float: Callable[[Any], float]) -> tuple[list[str], Any]:
    """The kind of every logged value (:func:`_kind`) and its number through Inspect's
    ``to_float`` (NaN where it is not a number), each distinct value converted once."""
    memo: dict[Any, tuple[str, float]] = {}
    kinds, numbers = [], np.empty(len(values), dtype=np.float64)
    for i, value in enumerate(values):
        try:
            kind, number = memo[value]
        except KeyError:
            kind = _kind(value)
            number = float(to_float(value)) if kind == "number" else math.nan
            memo[value] = (kind, number)
        except TypeError:  # unhashable: a nested list or dict, never a number
            kind, number = "bad", math.nan
        kinds.append(kind)
        numbers[i] = number
    return kinds, numbers


def _natural(text: str) -> tuple:
    """Sort key of sample ids: numbers by value, then strings."""
    return (0, int(text), "") if text.isdigit() else (1, 0, text)


def _check_designs(designs: dict[str, dict[str, tuple]]) -> None:
    """A SchemaError for a task whose systems reduce their epochs differently."""
    for task, by_system in designs.items():  # a loop over tasks, not data
        if len(set(by_system.values())) > 1:
            shown = "; ".join(
                f"{system}: {', '.join(reducers)}"
                + (f" over {epochs} epochs" if epochs is not None else "")
                for system, (reducers, epochs) in sorted(by_system.items())
            )
            raise SchemaError(
                f"Task {task!r} is reduced over its epochs differently for its systems "
                f"({shown}): their scores would compare one reduction with another (a max "
                "with a mean, or a max over 4 epochs with one over 2). Run every system with "
                "the same Epochs(n, reducer), or read their logs separately."
            )


def _bad_values(rows: list[tuple]) -> None:
    """The SchemaError listing score values that Inspect's value_to_float cannot convert."""
    lines = []
    for row in rows:
        file, task, system, when, sample = row[-1]
        lines.append(
            f"  file {file}, task {task!r}, system {system!r}, scorer {excerpt(row[3])}, sample "
            f"{sample!r}, "
            + (f"epoch {when}" if isinstance(when, int) else f"reducer {when!r}")
            + f": {excerpt(row[4])}"
        )
    more = f"\n  and {len(lines) - 10} more" if len(lines) > 10 else ""
    raise SchemaError(
        f"{len(lines)} score value(s) are not numbers that Inspect's value_to_float converts "
        "(it counts them as 0 with a log message; metaeval does not guess):\n"
        + "\n".join(lines[:10])
        + more
        + '\nMake the scorer return values that convert ("C", "I", "P", "N", numbers, '
        'booleans, "yes"/"no", numeric strings; Score.unscored() for no score) and rescore '
        "the logs (inspect score), or leave the scorer out with `scorer` (--scorer)."
    )


def _warn(failed: list, unfinished: list, unscored: list, lists: dict, lost: list) -> None:
    """The reader's warnings, once the table is made (no warning before an error)."""
    if failed:
        warn_groups(
            "{n} sample(s) failed in Inspect (an error and no score) and are left out, as "
            "Inspect leaves them out of its metrics; rerun them with inspect eval-retry",
            pd.DataFrame(failed, columns=["file", "task", "system", "epoch", "query", "error"]),
            MetaEvalWarning,
        )
    if unscored:
        warn_groups(
            "{n} score(s) are unscored (NaN, Score.unscored()) and are left out, as Inspect "
            "leaves them out of its metrics and reducers",
            pd.DataFrame(unscored, columns=["file", "task", "system", "epoch", "query", "metric"]),
            MetaEvalWarning,
        )
    if lists:
        warn_groups(
            "{n} scorer(s) logged list values: each position is read as its own metric "
            "(scorer/0, scorer/1, ...: one metric per position, as Inspect's reducers reduce "
            "lists position by position); Inspect's own metrics (accuracy, mean) count a list "
            "as 0, so the log's metrics of these scorers are not these means",
            pd.DataFrame(list(lists), columns=["file", "task", "system", "scorer"]),
            MetaEvalWarning,
        )
    if lost:
        warn_groups(
            "{n} log(s) hold fewer samples than their header says were completed (damaged or "
            "edited after the run): the lost samples are not in the table, and the log's "
            "metrics, which include them, are not these means; read the original logs",
            pd.DataFrame(lost, columns=["file", "task", "system", "completed", "read", "lost"]),
            MetaEvalWarning,
        )
    if unfinished:
        warn_groups(
            "{n} log(s) are of runs that did not finish: they hold only the samples that "
            "completed; rerun them with inspect eval-retry",
            pd.DataFrame(unfinished, columns=["file", "task", "system", "status"]),
            MetaEvalWarning,
        )

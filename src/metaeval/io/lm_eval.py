"""lm-evaluation-harness per-sample logs (``--log_samples``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._options import LM_EVAL_REPLICATES, LmEvalReplicates, literal_signature
from ..errors import (
    FormatError,
    MetaEvalWarning,
    OptionError,
    SchemaError,
    check_option,
    excerpt,
    warn,
    warn_groups,
)
from ._text import check_primary_map, iter_jsonl

__all__ = ["read_lm_eval", "PRIMARY_METRICS"]

LAYOUT = (
    "JSON lines with a 'doc_id' and per-sample metric values — the keys listed in 'metrics' "
    "when present, else the top-level fields other than the bookkeeping keys — and, from "
    "lm-eval 0.4.7 on, the 'filter' of every record"
)
_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d\-:.]+)\.jsonl(\.gz)?$")
_BARE = re.compile(r"^samples_(?P<task>.+?)\.jsonl(\.gz)?$")  # no timestamp
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")  # ... nor part of one
_VALUES = (bool, int, float, list, dict)  # per-sample fields: numbers, and corpus items
_BOOKKEEPING = {
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
}


PRIMARY_METRICS: dict[str, str] = {
    "arc_easy": "acc",
    "arc_challenge": "acc_norm",
    "hellaswag": "acc_norm",
    "winogrande": "acc",
    "truthfulqa_mc1": "acc",
    "truthfulqa_mc2": "acc",
    "gsm8k": "exact_match,strict-match",
    "gsm8k_cot": "exact_match,strict-match",
    "mmlu": "acc",
    "piqa": "acc_norm",
    "boolq": "acc",
    "openbookqa": "acc_norm",
    "sciq": "acc_norm",
    "lambada_openai": "acc",
    "lambada_standard": "acc",
    "copa": "acc",
    "rte": "acc",
    "mathqa": "acc_norm",
    "race": "acc",
    "siqa": "acc",
    "logiqa": "acc_norm",
}
"""The primary metric of common lm-evaluation-harness tasks: the one the Open LLM
Leaderboard (v1) reports (ARC-Challenge, HellaSwag: ``acc_norm``; MMLU, TruthfulQA,
Winogrande: ``acc``; GSM8K: ``exact_match,strict-match``) and, for the others, the
first metric of the task's ``metric_list`` with the normalized accuracy where the task
has one. MMLU's subtasks (``mmlu_*``) use ``acc``."""


def _listed(values: Any) -> str:
    """Names for a message, as plain text: ``acc, acc_norm``."""
    return ", ".join(str(v) for v in values)


def _default_primary(task: str) -> str | None:
    return PRIMARY_METRICS.get(task, "acc" if task.startswith("mmlu_") else None)


def _primary_metrics(table: pd.DataFrame, primary: Any, skipped: pd.DataFrame) -> dict[str, str]:
    """The primary metric of every task of ``table``: the one ``primary`` names for the
    task, else its default (:data:`PRIMARY_METRICS`, or the task's only metric).
    ``skipped`` lists the metrics without a per-sample number (never a primary metric)."""
    have = {
        str(task): [str(m) for m in metrics]
        for task, metrics in table.groupby("task", sort=False)["metric"].unique().items()
    }
    named = dict(primary) if isinstance(primary, Mapping) else {}
    for task, metric in named.items():  # a loop over names, not over data
        if ((skipped["task"] == task) & (skipped["metric"] == metric)).any():
            raise _pair_error(f"`primary` (--primary) for task {task!r}", str(metric), [task])
        if metric == "perplexity" and LOGLIKELIHOOD in have.get(task, []):
            raise SchemaError(
                f"`primary` (--primary) names perplexity for task {task!r}: {_PERPLEXITY_HINT}."
            )
    lost = [task for task in named if task not in have and task in set(skipped["task"])]
    if lost:
        raise SchemaError(
            f"`primary` (--primary) names task(s) {_listed(lost)}, whose metrics have no "
            "per-sample number (lm-eval computes them over the whole task)."
        )
    check_primary_map(named, have)
    chosen: dict[str, str] = {}
    for task, metrics in have.items():  # one name per task: a loop over names, not data
        metric = named.get(task, _default_primary(task))
        if metric is None and len(metrics) == 1:
            metric = metrics[0]
        if metric is None:
            raise SchemaError(
                f"No primary metric is known for task {task!r}, whose logs have "
                f"{_listed(metrics)}; name it, e.g. {task}={metrics[0]} (primary={{task: "
                "metric}; on the command line --primary TASK=METRIC)."
            )
        if metric not in metrics:
            source = "named in `primary` / --primary" if task in named else "its default"
            raise SchemaError(
                f"The primary metric {metric} of task {task!r} ({source}) is not in its logs, "
                f"which have {_listed(metrics)}; name one of them, e.g. {task}={metrics[0]}."
            )
        chosen[task] = metric
    return chosen


#: lm-eval's per-sample "perplexity" (a loglikelihood task's metric, aggregated as
#: exp(-mean)) is the log-likelihood of the target: read under this name.
LOGLIKELIHOOD = "loglikelihood"


@dataclass
class _Log:
    """What one samples log gave: its rows, every metric name it has (as metaeval names
    them), and the metrics without a per-sample number (name: first line)."""

    rows: list[tuple]
    names: set[str]
    pairs: dict[str, int]


def _metric_name(name: str, filt: str | None, number: bool) -> str:
    """metaeval's name of lm-eval's per-sample field ``name`` under filter ``filt``."""
    base = LOGLIKELIHOOD if number and name == "perplexity" else name
    return base if filt in (None, "none") else f"{base},{filt}"


def _records(path: Path, task: str, system: str, wanted: frozenset[str] | None) -> _Log:
    rows, seen, names = [], set(), set()
    kinds: dict[str, tuple[bool, int]] = {}  # per-sample field: (a number?, first line)
    pairs: dict[str, int] = {}
    named_filter: tuple[bool, int] | None = None  # does the log name the filter? (line 1)
    for number, record in iter_jsonl(path, LAYOUT, "bad record"):
        if "doc_id" not in record:
            raise FormatError(path, number, "bad record ('doc_id')", LAYOUT)
        doc = record["doc_id"]
        if isinstance(doc, bool) or not isinstance(doc, str | int):
            raise FormatError(
                path, number, f"doc_id {excerpt(doc)} is not an integer or string", LAYOUT
            )
        has_filter = "filter" in record
        if named_filter is None:
            named_filter = (has_filter, number)
        elif has_filter != named_filter[0]:
            raise FormatError(
                path,
                number,
                (
                    "the record has no 'filter', which line {0} names"
                    if named_filter[0]
                    else "the record names a 'filter', which line {0} does not"
                ).format(named_filter[1])
                + ": lm-eval ≥ 0.4.7 names it in every record, older versions in none, so "
                "this record's filter is unknown",
                LAYOUT,
            )
        filt = record.get("filter", "none")
        if filt is not None and not isinstance(filt, str):
            raise FormatError(path, number, f"filter {excerpt(filt)} is not a string", LAYOUT)
        fields = record.get("metrics")
        if fields is None:  # before lm-eval 0.4.7: every field but the bookkeeping
            fields = [
                k
                for k, v in record.items()
                if k not in _BOOKKEEPING and (v is None or isinstance(v, _VALUES))
            ]
        if not isinstance(fields, list) or not all(isinstance(n, str) for n in fields):
            raise FormatError(
                path, number, f"metrics {excerpt(fields)} is not a list of names", LAYOUT
            )
        if not fields:
            raise FormatError(path, number, "no per-sample metric value", LAYOUT)
        key = (str(doc), filt)
        if key in seen:
            if not has_filter:
                raise FormatError(
                    path,
                    number,
                    f"doc_id {excerpt(doc)} (no filter named) appears twice: lm-eval before "
                    "0.4.7 logged a record per filter without naming it; rerun with 0.4.7 or "
                    "later",
                    LAYOUT,
                )
            raise FormatError(
                path,
                number,
                f"doc_id {excerpt(doc)} (filter {excerpt(filt)}) appears twice",
                LAYOUT,
            )
        seen.add(key)
        for name in fields:
            value: Any = record.get(name)
            if isinstance(value, bool):
                value = float(value)
            numeric = isinstance(value, int | float)
            if not numeric and not (value is None or isinstance(value, list | dict)):
                raise FormatError(
                    path,
                    number,
                    f"metric {excerpt(name)} has value {excerpt(value)}, not a number",
                    LAYOUT,
                )
            kind = kinds.setdefault(name, (numeric, number))
            if kind[0] != numeric:
                raise FormatError(
                    path,
                    number,
                    f"metric {excerpt(name)} has value {excerpt(value)} here and "
                    f"{'a number' if kind[0] else 'no number'} on line {kind[1]}",
                    LAYOUT,
                )
            metric = _metric_name(name, filt, numeric)
            names.add(metric)
            if wanted is not None and metric not in wanted:
                continue
            if not numeric:  # a corpus-level item ([ref, pred], [ll, length]) or no score
                pairs.setdefault(metric, number)
                continue
            if not np.isfinite(value):
                raise FormatError(
                    path,
                    number,
                    f"metric {excerpt(name)} has value {excerpt(value)}, not a number",
                    LAYOUT,
                )
            rows.append((task, str(doc), system, metric, float(value)))
    return _Log(rows, names, pairs)


@literal_signature
def read_lm_eval(
    folders: str | Path | Mapping[str, str | Path] | Sequence[str | Path],
    *,
    primary: bool | Mapping[str, str] = False,
    metrics: str | Sequence[str] | None = None,
    latest: bool = False,
    replicates: LmEvalReplicates | None = None,
) -> pd.DataFrame:
    """Scores from lm-evaluation-harness sample logs, one system per model.

    Parameters
    ----------
    folders
        One folder (a ``str`` or path): lm-eval's ``--output_path``, with one
        sub-folder per model as lm-eval writes it
        (``<output_path>/<model_name_sanitized>/samples_<task>_<timestamp>.jsonl``):
        one system per sub-folder, named after it; a folder that holds the logs
        itself is one system, named after the folder. Or ``{system: folder}``,
        or a list of folders (each system named after its folder), each folder
        one model's. A system's logs must lie in one folder (searched
        recursively): logs in several folders would be several models' (or
        runs') merged into one system, which is an error. Logs are
        ``samples_<task>_<timestamp>.jsonl`` (or ``.jsonl.gz``) as written by
        ``lm-eval --log_samples``; a ``samples_<task>.jsonl`` without a
        timestamp is read as the log of ``<task>`` (the name leaves no doubt
        about the task); any other ``samples_*`` file is left out with a
        warning naming it.
    primary : bool or mapping of str to str, default False
        Keep one metric per task, named ``"primary"``, so that tasks with
        different metrics pool together: ``True`` takes each task's metric from
        :data:`PRIMARY_METRICS` (or its only metric); a mapping ``{task:
        metric}`` names the metric of the tasks it lists
        (``{"gsm8k": "exact_match,flexible-extract"}``) and the other tasks
        keep their defaults. ``attrs["primary"]`` records the metric of every
        task. A task whose metrics all lack a per-sample number (see
        ``metrics``) has no primary metric and is left out, with a warning
        naming it; naming such a metric is an error.
    metrics : str or list of str, optional
        Read only these metrics, named as in the result (``acc``,
        ``exact_match,strict-match``, ``loglikelihood``); the logs' other
        fields are not looked at. A name that no log has, or one without a
        per-sample number, is an error. By default every metric with a
        per-sample number is read, and those without one are left out with one
        warning naming each (system, task, metric): lm-eval logs a corpus-level
        metric — ``bleu``, ``chrf``, ``ter``, ``f1``, ``mcc``,
        ``word_perplexity``, ``byte_perplexity``, ``bits_per_byte`` — as a
        ``[reference, prediction]`` or ``[log-likelihood, length]`` pair per
        sample and computes it over the whole task (corpus BLEU, F1 over all
        pairs, exp(−Σ log-likelihood / Σ length) for the perplexities), so no
        per-sample value averages to it; they are skipped rather than computed
        per sample (sentence BLEU or a per-sample F1 is not the metric lm-eval
        reports). A predict-only run's ``bypass`` (no score) is skipped too.
    latest : bool, default False
        When a model's folder holds several logs of a task (lm-eval run again
        into the same output folder), read the newest (by the timestamp in the
        file name) instead of raising; a warning lists, per system and task,
        the log read and the logs left out, and ``attrs["latest"]`` records
        them (see Returns). Logs of one task with the same timestamp, or without
        one, cannot be ordered: an error naming them.
    replicates : {"folders"}, optional
        ``"folders"``: ``folders`` is one folder whose sub-folders are
        replicates, e.g. one lm-eval output folder per seed
        (``<folders>/<seed>/<model>/samples_<task>_<timestamp>.jsonl``), or the
        seed folders of one model (``<folders>/<seed>/samples_*.jsonl``, the
        system then named after ``folders``). The same model in several seed
        folders is one system with several replicates (never several systems,
        never merged rows); the sub-folder's name goes into a ``replicate``
        column. A model or task that some seed folders lack is read where it is,
        with a warning naming the (replicate, system, task) without a log.
        Without it (None), such a layout is an error that suggests this option.

    Returns
    -------
    pandas.DataFrame
        ``task, query, system, metric, value`` with ``query`` the ``doc_id`` (as
        a string) and one metric per per-sample field: the keys a record lists
        in ``metrics`` (lm-eval ≥ 0.4.7), else every top-level field other than
        ``doc_id``, the document, arguments, responses and hashes; booleans
        become 0/1. A task logged with a filter other than ``"none"`` gets
        ``metric,filter`` names (as lm-eval's results, e.g.
        ``exact_match,strict-match``). With ``replicates="folders"`` a
        ``replicate`` column (str) holds the replicate folder's name.

        lm-eval's per-sample ``perplexity`` (a ``loglikelihood`` task such as
        LAMBADA) is the log-likelihood of the target continuation, which lm-eval
        aggregates as ``exp(-mean)`` into the task's perplexity: it is read as
        the metric ``loglikelihood`` (higher is better; its task mean ``m`` gives
        lm-eval's perplexity ``exp(-m)``), never under the name of the
        perplexity it is not.

        With ``latest=True``, ``attrs["latest"]`` lists, for every (system, task)
        logged more than once, a dict ``{"system", "task", "read", "ignored"}``
        (with ``"replicate"`` first when ``replicates="folders"``): the file name
        of the log read and the number of older logs left out; an empty list
        when no task was logged twice (``pd.DataFrame(table.attrs["latest"])``
        shows it as a table).

    Raises
    ------
    metaeval.FormatError
        A record that is not a JSON object, lacks ``doc_id`` or metric values
        or repeats a ``doc_id`` (naming file and line); a log in which some
        records name their ``filter`` and others do not (lm-eval ≥ 0.4.7 names
        it in every record: a record without it cannot be placed), or, from
        lm-eval before 0.4.7, a ``doc_id`` logged twice without a filter (one
        record per filter, which that version does not name); a metric that is
        a number in some records and a pair in others; a folder that does not
        exist.
    metaeval.SchemaError
        A folder without sample logs (with only ``results_*.json``: rerun
        lm-eval with ``--log_samples``); a system whose logs lie in several
        folders; two logs of the same task of one system (without ``latest``;
        with it, when they share a timestamp or lack one); two folders of the
        same name in a list; a task whose primary metric is unknown or absent
        from its logs, or a task in ``primary`` that the logs do not have; a
        metric in ``metrics`` or ``primary`` that the logs lack or log without a
        per-sample number; logs without any per-sample number; with
        ``replicates="folders"``, logs in the folder itself, or replicate
        folders laid out differently (one holding a model's logs, another a
        sub-folder per model).
    metaeval.OptionError
        ``primary`` not a bool or mapping; ``metrics`` not a name or a
        non-empty list of names; ``replicates`` not ``"folders"`` or
        None, or ``"folders"`` with a list or mapping of folders.

    Examples
    --------
    An lm-eval output folder with two models' logs of the same task, three
    samples each:

    >>> import json, pathlib, tempfile, warnings
    >>> from metaeval.io import read_lm_eval
    >>> tmp = tempfile.TemporaryDirectory()
    >>> for model, accuracy in {"llama": [1, 0, 1], "mistral": [1, 1, 1]}.items():
    ...     folder = pathlib.Path(tmp.name) / model
    ...     folder.mkdir()
    ...     records = [{"doc_id": i, "filter": "none", "metrics": ["acc"], "acc": a}
    ...                for i, a in enumerate(accuracy)]
    ...     log = folder / "samples_arc_easy_2024-05-01T12-00-00.jsonl"
    ...     _ = log.write_text("".join(json.dumps(r) + "\\n" for r in records))
    >>> read_lm_eval(tmp.name)
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
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     newest = read_lm_eval(folder, primary=True, latest=True)
    >>> print(caught[0].message)
    latest=True read the newest log of 1 (system, task) pair(s) logged more than once; the older logs were left out:
      system='mistral', task='arc_easy', read='samples_arc_easy_2024-06-01T09-00-00.jsonl', left_out='samples_arc_easy_2024-05-01T12-00-00.jsonl'
    >>> newest[["task", "metric", "value"]].drop_duplicates()
           task   metric  value
    0  arc_easy  primary    0.0
    >>> newest.attrs["primary"]
    {'arc_easy': 'acc'}
    >>> newest.attrs["latest"]
    [{'system': 'mistral', 'task': 'arc_easy', 'read': 'samples_arc_easy_2024-06-01T09-00-00.jsonl', 'ignored': 1}]

    Runs with two seeds, one lm-eval output folder each (``seed1/llama/...``,
    ``seed2/llama/...``): one system, the seed folders as replicates:

    >>> runs = pathlib.Path(tmp.name) / "runs"
    >>> for seed, accuracy in {"seed1": [1, 0], "seed2": [1, 1]}.items():
    ...     folder = runs / seed / "llama"
    ...     folder.mkdir(parents=True)
    ...     records = [{"doc_id": i, "acc": a} for i, a in enumerate(accuracy)]
    ...     log = folder / "samples_boolq_2024-05-01T12-00-00.jsonl"
    ...     _ = log.write_text("".join(json.dumps(r) + "\\n" for r in records))
    >>> read_lm_eval(runs, replicates="folders")
        task query system metric  value replicate
    0  boolq     0  llama    acc    1.0     seed1
    1  boolq     1  llama    acc    0.0     seed1
    2  boolq     0  llama    acc    1.0     seed2
    3  boolq     1  llama    acc    1.0     seed2
    >>> tmp.cleanup()
    """
    if replicates is not None:
        check_option("replicates", replicates, LM_EVAL_REPLICATES)
    if primary is not True and primary is not False and not isinstance(primary, Mapping):
        raise OptionError(
            f"`primary` must be True, False or a mapping {{task: metric}}, not {primary!r}."
        )
    wanted = _wanted(metrics)
    # units: (replicate or None, system, folder, scan), one per model (and seed folder)
    advice: list[str] = []
    units: list[tuple[str | None, str, Path, _Scan]]
    if replicates == "folders":
        if not isinstance(folders, str | Path):
            raise OptionError(
                "`replicates='folders'` reads one folder whose sub-folders are the replicates "
                f"(<folder>/<seed>/<model>/samples_*.jsonl), not {excerpt(folders)}; pass "
                "that folder."
            )
        units = list(_replicate_units(_existing(Path(folders))))
    elif isinstance(folders, str | Path):
        root = _existing(Path(folders))
        found = _scan(root)
        named = _model_folders(root, found)
        units = [(None, system, folder, _below(found, folder)) for system, folder in named.items()]
        seedlike = [name for name in named if _SEEDLIKE.match(name)]
        if len(named) > 1 and len(seedlike) == len(named):  # said once the table is made
            advice.append(
                f"{root}: the sub-folders read as systems are named like runs "
                f"({_listed(seedlike[:5])}): if they are seeds of one model, pass "
                "replicates='folders' (--replicates folders) to read them as replicates of "
                "one system."
            )
    else:
        if isinstance(folders, Mapping):
            named = {str(system): Path(folder) for system, folder in folders.items()}
        else:
            folders = list(folders)
            named = {Path(f).name: Path(f) for f in folders}
            if len(named) < len(folders):
                raise SchemaError("Two folders have the same name; pass {system: folder}.")
        units = [
            (None, system, folder, _scan(_existing(folder))) for system, folder in named.items()
        ]
    odd = sorted({path for *_, scan in units for path in scan.odd})
    if odd:
        warn(
            f"{len(odd)} file(s) named samples_* are not lm-eval sample logs "
            f"(samples_<task>_<timestamp>.jsonl) and were left out: {_listed(odd[:10])}"
            + (f" and {len(odd) - 10} more" if len(odd) > 10 else "")
            + "; rename them samples_<task>.jsonl to read them.",
            MetaEvalWarning,
        )
    rows: list[tuple] = []
    reruns: list[tuple] = []
    read: list[tuple[str | None, str, str]] = []  # (replicate, system, task) of every log read
    names: dict[str, set[str]] = {}  # task: every metric name its logs have
    pairs: list[tuple] = []  # (replicate, system, task, metric) without per-sample numbers
    for replicate, system, folder, scan in units:  # a loop over folders, not over data
        kept: list[tuple] = []
        files = _task_logs(system, folder, scan, latest, kept)
        reruns.extend((replicate, *rerun) for rerun in kept)
        for task, path in files.items():
            read.append((replicate, system, task))
            log = _records(path, task, system, wanted)
            rows.extend(log.rows if replicate is None else [(*r, replicate) for r in log.rows])
            names.setdefault(task, set()).update(log.names)
            pairs.extend((replicate, system, task, metric) for metric in log.pairs)
    columns = ["task", "query", "system", "metric", "value"]
    table = pd.DataFrame(rows, columns=columns + ["replicate"] * (replicates is not None))
    skipped = pd.DataFrame(pairs, columns=["replicate", "system", "task", "metric"])
    if wanted is not None:
        _check_wanted(wanted, names, skipped)
    if replicates is not None:
        _check_replicates(read)
    if table.empty:
        raise SchemaError(
            "The lm-eval logs hold no per-sample number: the metrics of their tasks "
            f"({_listed(f'{t}: {_listed(sorted(m))}' for t, m in names.items())}) are "
            "computed over the whole task (corpus-level) or were not scored."
        )
    if primary is not False:
        chosen = _primary_metrics(table, primary, skipped)
        keep = table["metric"].to_numpy() == table["task"].map(chosen).to_numpy()
        table = table[keep].assign(metric="primary").reset_index(drop=True)
        table.attrs["primary"] = chosen
        # the other metrics are left out by primary; say only which tasks it lost entirely
        skipped = skipped[~skipped["task"].isin(chosen)]
    if latest:  # which log was read, and how many left out, per (replicate,) system, task
        first = 0 if replicates is not None else 1
        keys = ["replicate", "system", "task"][first:]
        table.attrs["latest"] = [
            dict(zip(keys, r[first:3], strict=True)) | {"read": r[3], "ignored": r[4]}
            for r in reruns
        ]
    if reruns:  # once the table is made: no report before an error
        groups = pd.DataFrame(
            [(*r[:4], _listed(r[5])) for r in reruns],
            columns=["replicate", "system", "task", "read", "left_out"],
        )
        warn_groups(
            "latest=True read the newest log of {n} (system, task) pair(s) logged more than "
            "once; the older logs were left out",
            groups if replicates is not None else groups.drop(columns="replicate"),
            MetaEvalWarning,
        )
    if not skipped.empty:
        warn_groups(
            "{n} (system, task, metric) combination(s) have no per-sample number and were "
            "left out: lm-eval logs a corpus-level metric (bleu, chrf, ter, f1, mcc, "
            "word_perplexity, byte_perplexity, bits_per_byte) as a [reference, prediction] or "
            "[log-likelihood, length] pair per sample and computes it over the whole task, "
            "and a predict-only run logs no score; read only the metrics you need with "
            "metrics=[...] (--metric)",
            skipped if replicates is not None else skipped.drop(columns="replicate"),
            MetaEvalWarning,
        )
    for text in advice:
        warn(text, MetaEvalWarning)
    return table


def _wanted(metrics: Any) -> frozenset[str] | None:
    """The metric names ``metrics`` asks for (None: every metric)."""
    if metrics is None:
        return None
    names = [metrics] if isinstance(metrics, str) else metrics
    if (
        not isinstance(names, Sequence)
        or not names
        or not all(isinstance(n, str) and n for n in names)
    ):
        raise OptionError(
            "`metrics` must be a metric name or a non-empty list of them (acc, "
            f"exact_match,strict-match, ...), not {excerpt(metrics)}."
        )
    return frozenset(names)


_PERPLEXITY_HINT = (
    "lm-eval's per-sample 'perplexity' is the log-likelihood of the target (the task's "
    "perplexity is exp(-mean) of it), so it is read as 'loglikelihood'"
)


def _pair_error(option: str, metric: str, tasks: Sequence[str]) -> SchemaError:
    return SchemaError(
        f"{option} names {metric}, which has no per-sample number in task(s) "
        f"{_listed(tasks)}: lm-eval logs it as a pair per sample ([reference, prediction] "
        "or [log-likelihood, length]) and computes it over the whole task; choose a metric "
        "with a per-sample number."
    )


def _check_wanted(wanted: frozenset[str], names: dict[str, set[str]], skipped) -> None:
    """A SchemaError for a name in ``metrics`` that the logs lack or cannot give per sample."""
    have = sorted(set().union(*names.values()))
    for metric in sorted(wanted):  # a loop over names, not over data
        if metric in skipped["metric"].to_numpy():
            tasks = pd.unique(skipped.loc[skipped["metric"] == metric, "task"])
            raise _pair_error("`metrics` (--metric)", metric, list(tasks))
    unknown = sorted(wanted.difference(have))
    if unknown:
        hint = f"; {_PERPLEXITY_HINT}" if "perplexity" in unknown else ""
        raise SchemaError(
            f"`metrics` (--metric) names {_listed(unknown)}, which the logs do not have; "
            f"they have {_listed(have)}{hint}."
        )


def _replicate_units(root: Path) -> list[tuple[str, str, Path, _Scan]]:
    """``(replicate, system, folder, scan)`` of every model folder of every replicate folder
    of ``root`` (``root/<seed>/<model>/`` or, for one model, ``root/<seed>/``)."""
    found = _scan(root)
    holders = [log[0] for log in found.logs] + list(found.results)
    if not holders:
        _no_logs(root, found)
    if any(path.parent == root for path in holders):
        raise SchemaError(
            f"{root}: lm-eval logs lie in the folder itself, but with replicates='folders' "
            "(--replicates folders) its sub-folders are the replicates (one lm-eval output "
            "folder per seed: <folder>/<seed>/<model>/samples_*.jsonl); point at the folder "
            "of the seed folders."
        )
    units, direct = [], {}
    for name in sorted({p.relative_to(root).parts[0] for p in holders}):
        folder = root / name
        scan = _below(found, folder)
        models = _model_folders(folder, scan)
        direct[name] = models == {folder.name: folder}
        if direct[name]:  # root/<seed>/samples_*: the seeds of one model, named after root
            units.append((name, root.name, folder, scan))
        else:
            units += [
                (name, system, place, _below(scan, place)) for system, place in models.items()
            ]
    if len(set(direct.values())) > 1:
        raise SchemaError(
            f"{root}: the replicate folder(s) {_listed(k for k, v in direct.items() if v)} "
            "hold one model's logs themselves, the other(s) "
            f"{_listed(k for k, v in direct.items() if not v)} one sub-folder per model; "
            "lay every replicate folder out alike (<seed>/<model>/samples_*.jsonl)."
        )
    return units


def _check_replicates(read: list[tuple[str | None, str, str]]) -> None:
    """Warn about the (system, task) pairs that some replicate folders lack."""
    replicates = list(dict.fromkeys(rep for rep, _, _ in read))
    pairs = list(dict.fromkeys((system, task) for _, system, task in read))
    present = set(read)
    missing = [(rep, *pair) for rep in replicates for pair in pairs if (rep, *pair) not in present]
    if missing:
        warn_groups(
            "{n} (replicate, system, task) combination(s) have no log: a replicate folder "
            "lacks a model or task that another has; the logs found were read",
            pd.DataFrame(missing, columns=["replicate", "system", "task"]),
            MetaEvalWarning,
        )


@dataclass(frozen=True)
class _Scan:
    """What a folder holds: sample logs ``(path, task, time)``, results files, odd names."""

    logs: tuple[tuple[Path, str, datetime | None], ...]
    results: tuple[Path, ...]
    odd: tuple[Path, ...]


#: Sub-folder names that look like runs rather than models (seed1, run_2, rep-3, 42).
_SEEDLIKE = re.compile(r"(?i)^((seed|run|rep|replicate|trial)[-_]?)?\d+$")


def _existing(folder: Path) -> Path:
    if not folder.is_dir():
        problem = "is a file, not a folder" if folder.exists() else "no such folder"
        raise FormatError(folder, None, problem, "a folder of lm-eval sample logs")
    return folder


def _scan(folder: Path) -> _Scan:
    logs, odd = [], []
    for path in sorted(p for p in folder.rglob("samples_*") if p.is_file()):
        match = _NAME.match(path.name)
        if match:
            logs.append((path, match["task"], _when(match["stamp"])))
            continue
        bare = _BARE.match(path.name)
        if bare and not _DATE.search(bare["task"]):
            logs.append((path, bare["task"], None))
        elif ".jsonl" in path.name:
            odd.append(path)  # other files (samples_x.csv, ...) are not lm-eval's
    results = sorted(p for p in folder.rglob("results_*.json") if p.is_file())
    return _Scan(tuple(logs), tuple(results), tuple(odd))


def _below(scan: _Scan, folder: Path) -> _Scan:
    """The part of ``scan`` inside ``folder``."""

    def inside(path: Path) -> bool:
        return path.is_relative_to(folder)

    return _Scan(
        tuple(log for log in scan.logs if inside(log[0])),
        tuple(p for p in scan.results if inside(p)),
        tuple(p for p in scan.odd if inside(p)),
    )


def _model_folders(root: Path, scan: _Scan) -> dict[str, Path]:
    """The systems of an lm-eval output folder: the folder itself when it holds the logs,
    else each sub-folder holding logs (lm-eval's ``<output_path>/<model>/``)."""
    holders = [log[0] for log in scan.logs] + list(scan.results)
    if not holders:
        _no_logs(root, scan)
    if any(path.parent == root for path in holders):
        deeper = sorted({p.relative_to(root).parts[0] for p in holders if p.parent != root})
        if deeper:
            raise SchemaError(
                f"{root}: lm-eval logs lie both in the folder itself and in its sub-folder(s) "
                f"{_listed(deeper)}, which would merge several models into one system; point "
                "at one model's folder, or at an output folder whose sub-folders hold one "
                "model each."
            )
        return {root.name: root}
    return {name: root / name for name in sorted({p.relative_to(root).parts[0] for p in holders})}


def _no_logs(folder: Path, scan: _Scan) -> None:
    if scan.results:
        raise SchemaError(
            f"{folder}: lm-eval results ({_listed(p.name for p in scan.results[:3])}) but no "
            "per-sample logs (samples_<task>_<timestamp>.jsonl); results files hold only the "
            "means. Rerun lm-eval with --log_samples."
        )
    raise SchemaError(
        f"{folder}: no samples_<task>_<timestamp>.jsonl files (run lm-eval with --log_samples)."
    )


def _task_logs(
    system: str, folder: Path, scan: _Scan, latest: bool, reruns: list
) -> dict[str, Path]:
    """The log to read of each task of one system; with ``latest`` the reruns left out are
    appended to ``reruns`` as ``(system, task, read, number left out, names left out)``."""
    if not scan.logs:
        _no_logs(folder, scan)
    places = sorted({path.parent for path, _, _ in scan.logs})
    if len(places) > 1:
        where = _listed(str(p.relative_to(folder)) or "." for p in places)
        raise SchemaError(
            f"{folder}: the sample logs of system {system!r} lie in {len(places)} folders "
            f"({where}): several models' or runs' logs, which would be merged into one "
            "system. Point at one model's folder, or at an output folder whose sub-folders "
            "hold one model each."
            + (
                f" If {folder.parent} holds one lm-eval output folder per seed "
                "(<seed>/<model>/samples_*.jsonl), read it with replicates='folders' "
                "(--replicates folders in the command): one system per model, the seed "
                "folders as replicates."
                if all(place.parent == folder for place in places)
                else ""
            )
        )
    by_task: dict[str, list[tuple[Path, datetime | None]]] = {}
    for path, task, when in scan.logs:
        by_task.setdefault(task, []).append((path, when))
    files = {}
    for task, logs in by_task.items():  # a loop over files, not over data
        if len(logs) == 1:
            files[task] = logs[0][0]
            continue
        names = _listed(path.name for path, _ in logs)
        if not latest:
            raise SchemaError(
                f"{folder}: {len(logs)} sample logs of task {task!r} ({names}); keep one run "
                "per folder, or pass latest=True (--latest) to read the newest."
            )
        untimed = [path.name for path, when in logs if when is None]
        if untimed:
            raise SchemaError(
                f"{folder}: {len(logs)} sample logs of task {task!r} ({names}), and "
                f"{_listed(untimed)} has no timestamp (samples_<task>_<YYYY-MM-DDTHH-MM-SS>"
                ".jsonl), so latest=True cannot tell the newest; move the logs not to read "
                "out of the folder."
            )
        logs.sort(key=lambda log: log[1])  # type: ignore[arg-type, return-value]
        (second, t2), (newest, t1) = logs[-2], logs[-1]
        if t1 == t2:
            raise SchemaError(
                f"{folder}: the sample logs {second.name} and {newest.name} of task {task!r} "
                "have the same timestamp, so latest=True cannot tell which is newer; move the "
                "one not to read out of the folder."
            )
        files[task] = newest
        reruns.append((system, task, newest.name, len(logs) - 1, [p.name for p, _ in logs[:-1]]))
    return files


def _when(stamp: str) -> datetime | None:
    """The time in a log's name (``2024-05-02T10-00-00.123456``), or None if it is not one."""
    day, _, clock = stamp.partition("T")
    try:
        return datetime.fromisoformat(f"{day}T{clock.replace('-', ':')}")
    except ValueError:
        return None

"""The Ranger toolkit's ``config.yaml`` layouts and per-sample text files."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import (
    FormatError,
    OptionError,
    PairingWarning,
    check_option,
    excerpt,
    format_groups,
    quote_list,
    warn,
)
from ._text import open_text, read_text

__all__ = ["read_ranger", "read_per_sample"]

CONFIG_LAYOUT = (
    "a Ranger config.yaml with 'eval_metrics: {system: {task: file}}' (classification) or "
    "'qrels: {task: file}' and 'available_rankings: {system: {task: file}}' (retrieval), "
    "and optionally 'display_names: {task: name}'"
)
SAMPLE_LAYOUT = "one number per line, line i being sample i"


def read_per_sample(path: str | Path) -> np.ndarray:
    """A Ranger per-sample file: one number per line.

    Parameters
    ----------
    path : str or path-like
        The file.

    Raises
    ------
    metaeval.FormatError
        Naming the line that is not a single number.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from metaeval.io import read_per_sample
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(tmp.name) / "rte.txt"
    >>> _ = path.write_text("1\\n0\\n1\\n0.5\\n")
    >>> read_per_sample(path)
    array([1. , 0. , 1. , 0.5])
    >>> tmp.cleanup()
    """
    values = []
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            text = line.strip()
            try:
                value = float(text)
            except ValueError:
                raise FormatError(
                    path, number, f"{excerpt(text)} is not a number", SAMPLE_LAYOUT
                ) from None
            if not np.isfinite(value):
                raise FormatError(path, number, f"{excerpt(text)} is not finite", SAMPLE_LAYOUT)
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
        qrels and rankings (:func:`metaeval.ir.evaluate` with its defaults:
        judged queries a run misses score 0, with a warning counting them, and a
        run that returns less than half of a collection's judged queries is a
        :class:`~metaeval.PairingError`).
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
    metaeval.PairingError
        From :func:`metaeval.ir.evaluate`: a run covering less than half of its
        collection's judged queries (a truncated run, or one of another collection).
    metaeval.FormatError
        For a config of another layout (naming the key path, e.g.
        ``eval_metrics.bert``, its line and what was found there), a key given
        twice, a config whose files all are missing, or a malformed data file
        (naming the file and line).

    Warns
    -----
    metaeval.PairingWarning
        Naming the entries left out: files that do not exist (with
        ``missing_files="skip"``), rankings of tasks without qrels, and tasks
        some system has no ranking for; and from :func:`metaeval.ir.evaluate`.

    Notes
    -----
    A config is trusted input, like a script: it names the files to read, and
    may name any file the user can read (``/etc/passwd`` as well as
    ``./bert/rte.txt``). Relative paths are resolved against the config's
    folder and, where no file is found there, the folder above it (Ranger's own
    example configs name ``./classification-glue-data/...`` from beside the
    data folder). Error messages quote at most a short, escaped excerpt of a
    line of any file read.

    The layout: ``eval_metrics: {system: {task: file}}`` (classification, one
    number per line per file) or ``qrels: {task: file}`` and
    ``available_rankings: {system: {task: file}}`` (retrieval, TREC files),
    and optionally ``display_names: {task: label}``. Names are YAML keys:
    quote those YAML reads as other types (``yes``, ``no``, ``on``, ``null``).

    Examples
    --------
    A classification config of two systems on two GLUE tasks, three samples each:

    >>> import pathlib, tempfile
    >>> from metaeval.io import read_ranger
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder = pathlib.Path(tmp.name)
    >>> correct = {("bert", "rte"): "1 0 1", ("bert", "mrpc"): "1 1 0",
    ...            ("roberta", "rte"): "1 1 1", ("roberta", "mrpc"): "1 1 0"}
    >>> for (system, task), values in correct.items():
    ...     _ = (folder / f"{system}_{task}.txt").write_text("\\n".join(values.split()))
    >>> _ = (folder / "config.yaml").write_text(
    ...     "eval_metrics:\\n"
    ...     "  bert: {rte: bert_rte.txt, mrpc: bert_mrpc.txt}\\n"
    ...     "  roberta: {rte: roberta_rte.txt, mrpc: roberta_mrpc.txt}\\n"
    ...     "display_names: {rte: RTE, mrpc: MRPC}\\n")
    >>> scores = read_ranger(folder / "config.yaml", metric="accuracy")
    >>> scores.head(3)
      task query system    metric  value
    0  rte     0   bert  accuracy    1.0
    1  rte     1   bert  accuracy    0.0
    2  rte     2   bert  accuracy    1.0
    >>> scores.groupby(["task", "system"])["value"].mean().unstack().round(2)
    system  bert  roberta
    task
    mrpc    0.67     0.67
    rte     0.67     1.00
    >>> scores.attrs["display_names"]
    {'rte': 'RTE', 'mrpc': 'MRPC'}
    >>> tmp.cleanup()
    """
    import yaml

    check_option("missing_files", missing_files, ["error", "skip"])
    config = Path(config)
    text = read_text(config)
    try:
        spec = yaml.load(text, Loader=_unique_key_loader())  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as err:
        raise _yaml_error(config, text, err) from None
    if spec is None:
        problem = "holds no YAML data (only blank lines, comments or null)" if text else "is empty"
        raise FormatError(config, None, f"the file {problem}", CONFIG_LAYOUT)
    _check_layout(config, text, spec)
    absent: list[tuple[str, str, str]] = []

    def locate(system: str, task: str, entry: str) -> Path | None:
        path = _resolve(config, str(entry))
        if path is None:
            if missing_files == "error":
                raise FormatError(
                    config,
                    None,
                    f"{system}/{task}: file {excerpt(entry, 160)} does not exist",
                    "existing files (or missing_files='skip')",
                )
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
                frames.append(
                    pd.DataFrame(
                        {
                            "task": str(task),
                            "query": np.arange(len(values)).astype(str),
                            "system": str(system),
                            "metric": metric,
                            "value": values,
                        }
                    )
                )
        if not frames:
            raise FormatError(config, None, "none of the files it names exist", "existing files")
        scores = pd.concat(frames, ignore_index=True)
    else:
        from ..measures.ir import evaluate

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
        complete = [t for t in qrels if runs and all(t in by_task for by_task in runs.values())]
        for t in set(qrels) - set(complete):
            absent.append(("qrels", t, "(not every system has a ranking)"))
        if not complete:
            raise FormatError(
                config,
                None,
                "no task has qrels and a ranking of every system",
                "existing qrels and ranking files",
            )
        scores = evaluate(
            {t: qrels[t] for t in complete},
            {s: {t: r[t] for t in complete} for s, r in runs.items()},
            measures,
        )
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


@functools.cache
def _unique_key_loader() -> type:
    """PyYAML's safe loader, refusing a mapping that names a key twice (it keeps the last).

    Built on first use, so that importing metaeval does not import yaml.
    """
    import yaml

    class RepeatedKeyError(yaml.constructor.ConstructorError):
        pass

    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml if there

    class UniqueKeyLoader(base):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict:
            if isinstance(node, yaml.MappingNode):
                seen: dict[Any, int] = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(
                        key_node, yaml.ScalarNode
                    ):
                        continue
                    key = self.construct_object(key_node, deep=deep)
                    if key in seen:
                        raise RepeatedKeyError(
                            None,
                            None,
                            f"the key {excerpt(key)} appears twice in one mapping "
                            f"(first on line {seen[key] + 1})",
                            key_node.start_mark,
                        )
                    seen[key] = key_node.start_mark.line
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def _yaml_error(config: Path, text: str, err: Exception) -> FormatError:
    """A FormatError for what PyYAML raised, on one line, naming the line where it can."""
    import yaml

    if isinstance(err, yaml.reader.ReaderError):  # a character YAML does not allow
        line = text.count("\n", 0, err.position) + 1
        char = chr(err.character) if isinstance(err.character, int) else err.character
        return FormatError(
            config, line, f"not YAML (the character {excerpt(char)} is not allowed)", CONFIG_LAYOUT
        )
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    parts = [getattr(err, "context", None), getattr(err, "problem", None)]
    problem = " ".join("; ".join(str(p) for p in parts if p).split()) or "unreadable"
    if type(err).__name__ != "RepeatedKeyError":
        problem = f"not YAML ({problem})"
    return FormatError(config, None if mark is None else mark.line + 1, problem, CONFIG_LAYOUT)


def _check_layout(config: Path, text: str, spec: Any) -> None:
    """Refuse a config whose keys and values do not have Ranger's layout, naming the key path."""

    def fail(keys: tuple, problem: str, key: Any = _VALUE) -> None:
        where = ".".join(str(k) for k in keys)
        line = _yaml_line(text, keys, key)
        raise FormatError(config, line, f"{where}: {problem}", CONFIG_LAYOUT)

    def found(value: Any) -> str:
        return f"{type(value).__name__} {excerpt(value)}"

    def names(keys: tuple, mapping: Any, what: str) -> None:
        if not isinstance(mapping, dict):
            fail(keys, f"found {found(mapping)} where a mapping {what} belongs")
        if not mapping:
            fail(keys, f"an empty mapping; it needs {what}")
        for key in mapping:
            if isinstance(key, bool) or not isinstance(key, str | int | float):
                fail(
                    keys,
                    f"the key {found(key)} is not a name (quote names such as yes, no, on, null)",
                    key,
                )

    def files(keys: tuple, mapping: Any) -> None:
        names(keys, mapping, "{task: file}")
        for task, entry in mapping.items():
            if not isinstance(entry, str) or not entry.strip():
                fail((*keys, task), f"found {found(entry)} where a file path belongs")

    if not isinstance(spec, dict):
        raise FormatError(
            config, None, f"found {found(spec)} instead of a mapping of keys", CONFIG_LAYOUT
        )
    classification = "eval_metrics" in spec
    retrieval = "qrels" in spec or "available_rankings" in spec
    if classification == retrieval or (
        retrieval and not {"qrels", "available_rankings"} <= spec.keys()
    ):
        kind = "both layouts" if classification and retrieval else "neither layout"
        raise FormatError(
            config,
            None,
            f"top-level keys {quote_list([str(k) for k in spec])} ({kind})",
            CONFIG_LAYOUT,
        )
    if classification:
        names(("eval_metrics",), spec["eval_metrics"], "{system: {task: file}}")
        for system, tasks in spec["eval_metrics"].items():
            files(("eval_metrics", system), tasks)
    else:
        files(("qrels",), spec["qrels"])
        names(("available_rankings",), spec["available_rankings"], "{system: {task: file}}")
        for system, tasks in spec["available_rankings"].items():
            files(("available_rankings", system), tasks)
    labels = spec.get("display_names")
    if labels is not None:
        names(("display_names",), labels, "{task: name}")
        for task, label in labels.items():
            if isinstance(label, bool) or not isinstance(label, str | int | float):
                fail(("display_names", task), f"found {found(label)} where a name belongs")


_VALUE = object()  # _yaml_line: the line of a value, not of one of its keys


def _yaml_line(text: str, keys: tuple, key: Any = _VALUE) -> int | None:
    """The 1-based line of the value at ``keys`` in the YAML ``text``, or of its ``key``.

    On the error path only: the text is composed again to find the nodes' marks.
    """
    import yaml

    def loaded(node: Any) -> Any:
        try:
            return yaml.safe_load(yaml.serialize(node))
        except yaml.YAMLError:  # pragma: no cover - a node of text that was loaded before
            return _VALUE

    def same(a: Any, b: Any) -> bool:
        return type(a) is type(b) and a == b

    try:
        node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:  # pragma: no cover - the text was loaded before
        return None
    line = None if node is None else node.start_mark.line + 1
    for wanted in keys if key is _VALUE else (*keys, key):
        if not isinstance(node, yaml.MappingNode):
            break
        match = [(k, v) for k, v in node.value if same(loaded(k), wanted)]
        if not match:
            break
        k, node = match[0]
        line = (node if key is _VALUE or wanted is not key else k).start_mark.line + 1
    return line

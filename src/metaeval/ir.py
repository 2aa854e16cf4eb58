"""IR measures from runs and relevance judgments, on ir_measures.

``evaluate(qrels, runs, measures)`` turns TREC-style judgments and runs into a
tidy scores table, one row per (task, query, system, measure), computed by
ir_measures (MacAvaney et al. 2022) so that measure names and values are the
ones IR researchers already use (``nDCG@10``, ``Judged@10``, ``AP(rel=2)``, …;
``metric`` holds ir_measures' canonical name).

Install with ``pip install metaeval[ir]``.

References
----------
MacAvaney, S., Macdonald, C., & Ounis, I. (2022). Streamlining evaluation with
ir-measures. ECIR 2022. doi:10.1007/978-3-030-99739-7_38
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import (
    MetaEvalError,
    OptionError,
    PairingWarning,
    SchemaError,
    check_option,
    format_groups,
    warn,
)
from .io.trec import read_qrels, read_run

__all__ = ["evaluate", "as_qrels", "as_run"]

QrelsLike = Any  # path, DataFrame, {qid: {doc: rel}}, ir_measures/ranx Qrels
RunLike = Any


def _ir_measures():
    try:
        import ir_measures
    except ImportError as err:  # pragma: no cover - exercised without the extra
        raise MetaEvalError("metaeval.ir needs ir_measures: pip install 'metaeval[ir]'") from err
    return ir_measures


def _from_mapping(mapping: Mapping, value: str) -> pd.DataFrame:
    rows = [(str(q), str(d), v) for q, docs in mapping.items() for d, v in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", value])


def _as_frame(obj: Any, value: str, reader) -> pd.DataFrame:
    if isinstance(obj, str | Path):
        return reader(obj)
    if isinstance(obj, pd.DataFrame):
        missing = [c for c in ("query_id", "doc_id", value) if c not in obj.columns]
        if missing:
            raise SchemaError(
                f"A {value} table needs columns query_id, doc_id, {value}; {missing} missing."
            )
        return obj[["query_id", "doc_id", value]].astype({"query_id": str, "doc_id": str})
    if hasattr(obj, "to_dict") and callable(obj.to_dict) and not isinstance(obj, Mapping):  # ranx
        return _from_mapping(obj.to_dict(), value)
    if isinstance(obj, Mapping):
        return _from_mapping(obj, value)
    try:  # an iterable of ir_measures Qrel / ScoredDoc named tuples
        return pd.DataFrame([(str(r.query_id), str(r.doc_id), getattr(r, value)) for r in obj],
                            columns=["query_id", "doc_id", value])  # fmt: skip
    except (TypeError, AttributeError) as err:
        raise SchemaError(
            f"Cannot read {type(obj).__name__} as {value}s: pass a TREC file path, a DataFrame "
            f"(query_id, doc_id, {value}), a dict {{query: {{doc: {value}}}}}, or a ranx/ir_measures object."
        ) from err


def as_qrels(qrels: QrelsLike) -> pd.DataFrame:
    """Judgments as a DataFrame ``query_id, doc_id, relevance`` (ints)."""
    df = _as_frame(qrels, "relevance", read_qrels)
    return df.astype({"relevance": np.int64})


def as_run(run: RunLike) -> pd.DataFrame:
    """A run as a DataFrame ``query_id, doc_id, score`` (floats)."""
    df = _as_frame(run, "score", read_run)
    return df.astype({"score": np.float64})


def _is_qrels_dict(obj: Any) -> bool:
    """{query: {doc: relevance}} rather than {task: qrels}."""
    return isinstance(obj, Mapping) and all(
        isinstance(v, Mapping)
        and all(isinstance(x, int | float | np.integer | np.floating) for x in v.values())
        for v in obj.values()
    )


def evaluate(
    qrels: QrelsLike | Mapping[str, QrelsLike],
    runs: Mapping[str, RunLike] | Mapping[str, Mapping[str, RunLike]],
    measures: str | Sequence[str],
    *,
    task: str | None = None,
    missing: str = "zero",
) -> pd.DataFrame:
    """Per-query IR measures of several runs, as a tidy scores table.

    Parameters
    ----------
    qrels
        Relevance judgments: a TREC qrels file (``query iter doc relevance``,
        plain or gzip), a DataFrame ``query_id, doc_id, relevance``, a dict
        ``{query: {doc: relevance}}``, or an ir_measures / ranx ``Qrels``.
        For several tasks: a mapping ``{task: qrels}`` (then ``task`` is
        omitted).
    runs
        ``{system: run}`` with runs in the same forms (TREC run files with 6
        columns ``query Q0 doc rank score tag`` or 4 columns ``query doc rank
        score``; a DataFrame ``query_id, doc_id, score``; ``{query: {doc:
        score}}``; an ir_measures / ranx ``Run``). For several tasks:
        ``{system: {task: run}}``.
    measures : str or list of str
        ir_measures names: ``"nDCG@10"``, ``"Judged@10"``, ``"AP(rel=2)"``,
        ``"RR@10"``, ``"R@100"``, ``"P@5"``, …
    task : str, optional
        The task name for single-task inputs.
    missing : {"zero", "drop"}, default "zero"
        Judged queries a run does not return: score 0 (as ``trec_eval -c``), or
        leave them out with a warning counting them. Queries of a run without
        judgments are always left out.

    Returns
    -------
    pandas.DataFrame
        ``task, query, system, metric, value``, ``metric`` the canonical
        ir_measures name.

    Examples
    --------
    >>> import metaeval.ir
    >>> qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}
    >>> runs = {"bm25": {"q1": {"d1": 1.0, "d2": 0.5}}, "dense": {"q1": {"d2": 0.9}, "q2": {"d3": 0.3}}}
    >>> metaeval.ir.evaluate(qrels, runs, ["P@1"], task="toy")
       task query system metric  value
    0   toy    q1   bm25    P@1    1.0
    1   toy    q2   bm25    P@1    0.0
    2   toy    q1  dense    P@1    0.0
    3   toy    q2  dense    P@1    1.0
    """
    irm = _ir_measures()
    check_option("missing", missing, ["zero", "drop"])
    names = [measures] if isinstance(measures, str) else list(measures)
    if not names:
        raise OptionError(
            "`measures` is empty; name at least one ir_measures measure, e.g. 'nDCG@10'."
        )
    parsed = []
    for name in names:
        try:
            parsed.append(irm.parse_measure(name))
        except Exception as err:  # noqa: BLE001 - ir_measures raises various types
            raise OptionError(
                f"{name!r} is not an ir_measures measure ({err}); e.g. 'nDCG@10', 'AP(rel=2)'."
            ) from None
    if not runs:
        raise OptionError("`runs` is empty; pass {system: run}.")

    multi = task is None and isinstance(qrels, Mapping) and not _is_qrels_dict(qrels)
    if multi:
        per_task = {str(t): q for t, q in qrels.items()}
        for system, by_task in runs.items():
            if not isinstance(by_task, Mapping) or _is_qrels_dict(by_task):
                raise SchemaError(
                    f"qrels are keyed by task, so runs must be {{system: {{task: run}}}}; "
                    f"the run of {system!r} is not keyed by task."
                )
            unknown = sorted(set(map(str, by_task)) - set(per_task))
            if unknown:
                raise SchemaError(
                    f"Run of {system!r} has task(s) {unknown} without qrels; tasks: {sorted(per_task)}."
                )
    else:
        if task is None:
            raise OptionError(
                "Name the task: evaluate(..., task='trec-covid'), or key qrels and runs by task."
            )
        per_task = {str(task): qrels}
        runs = {system: {str(task): run} for system, run in runs.items()}

    frames, lost = [], []
    for t, q in per_task.items():
        q_df = as_qrels(q)
        judged = pd.unique(q_df["query_id"])
        for system, by_task in runs.items():
            if t not in {str(k) for k in by_task}:
                raise SchemaError(f"System {system!r} has no run for task {t!r}.")
            run = as_run(next(v for k, v in by_task.items() if str(k) == t))
            result = pd.DataFrame(
                [(m.query_id, str(m.measure), m.value) for m in irm.iter_calc(parsed, q_df, run)],
                columns=["query", "metric", "value"],
            )
            returned = set(run["query_id"])
            absent = [x for x in judged if x not in returned]
            result = result[result["query"].isin(judged)]
            if absent and missing == "zero":
                # ir_measures leaves out some judged queries without results (depending on the
                # measure's provider): trec_eval -c scores them 0
                fill = pd.MultiIndex.from_product(
                    [absent, [str(m) for m in parsed]], names=["query", "metric"]
                )
                result = pd.concat(
                    [result, fill.to_frame(index=False).assign(value=0.0)], ignore_index=True
                )
                result = result.drop_duplicates(["query", "metric"], keep="first")
            if absent and missing == "drop":
                result = result[result["query"].isin(returned)]
                lost.append((t, system, len(absent)))
            frames.append(result.assign(task=t, system=str(system)))
    if lost:
        warn(
            "Judged queries a run did not return were left out (missing='drop'):\n"
            + format_groups(pd.DataFrame(lost, columns=["task", "system", "queries"])),
            PairingWarning,
        )
    out = pd.concat(frames, ignore_index=True)[["task", "query", "system", "metric", "value"]]
    order = {str(m): i for i, m in enumerate(parsed)}
    out = out.assign(_m=out["metric"].map(order)).sort_values(
        ["task", "system", "_m", "query"], kind="stable"
    )
    return out.drop(columns="_m").astype({"value": np.float64}).reset_index(drop=True)

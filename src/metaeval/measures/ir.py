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
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._options import format_number
from ..errors import (
    DegenerateWarning,
    MetaEvalError,
    OptionError,
    PairingError,
    PairingWarning,
    SchemaError,
    check_option,
    excerpt,
    format_groups,
    quote_list,
    warn,
    warn_groups,
)
from ..io.judgments import QrelsLike, RunLike, as_frame
from ..io.trec import nested_from_columns, read_nested, read_qrels, read_run

__all__ = ["evaluate", "measure_name", "MEASURE_ALIASES"]


def _ir_measures():
    try:
        import ir_measures
    except ImportError as err:  # pragma: no cover - exercised without the extra
        raise MetaEvalError("metaeval.ir needs ir_measures: pip install 'metaeval[ir]'") from err
    return ir_measures


MEASURE_ALIASES: dict[str, str] = {
    # ranx
    "ndcg": "nDCG",
    "map": "AP",
    "mrr": "RR",
    "precision": "P",
    "recall": "R",
    "hits": "NumRelRet",
    "hit_rate": "Success",
    "r-precision": "Rprec",
    "bpref": "Bpref",
    # elinor (the same definitions: tests/cli checks them against elinor's output)
    "ap": "AP",
    "rr": "RR",
    "success": "Success",
    # ir_measures' own names, in any case
    "p": "P",
    "r": "R",
    "rprec": "Rprec",
    "err": "ERR",
    "judged": "Judged",
    "numrelret": "NumRelRet",
    "numret": "NumRet",
    "numrel": "NumRel",
    "infap": "infAP",
}
"""Measure names of other tools (lower case, before ``@k``) and their ir_measures names.

trec_eval's names (``P_10``, ``ndcg_cut_10``, ``ndcg_cut.10``, ``map``, ``map_cut_100``,
``recip_rank``, ``recall_100``, ``success_10``, …; also what PyTerrier and pytrec_eval
use) are read by ir_measures' own ``parse_trec_measure`` and need no entry here."""

_EXAMPLES = (
    "nDCG@10",
    "AP",
    "AP@100",
    "RR",
    "RR@10",
    "P@10",
    "R@100",
    "Success@10",
    "Judged@10",
    "NumRelRet@10",
    "Rprec",
    "Bpref",
    "ERR@20",
    "AP(rel=2)",
)


def measure_name(name: str) -> str:
    """The ir_measures name of a measure named in any of the common dialects.

    ir_measures' own names (``nDCG@10``, ``AP(rel=2)``) are kept; trec_eval's
    (``P_10``, ``ndcg_cut_10``, ``ndcg_cut.10``, ``map``, ``recip_rank``,
    ``recall_100``), ranx's (``ndcg@10``, ``map@100``, ``mrr@10``,
    ``precision@10``, ``recall@100``, ``hits@10``, ``hit_rate@10``) and
    elinor's (``precision@3``, ``ap``, ``rr``) become ir_measures' canonical
    name, whatever their case. See :data:`MEASURE_ALIASES` and the guide's
    table of measure names.

    Parameters
    ----------
    name : str
        A measure's name in any of these dialects.

    Raises
    ------
    metaeval.OptionError
        For a name no dialect knows, with the closest valid names.

    Examples
    --------
    >>> from metaeval.ir import measure_name
    >>> [measure_name(n) for n in ["ndcg@10", "P_10", "ndcg_cut.10", "map", "MRR@10", "nDCG@10"]]
    ['nDCG@10', 'P@10', 'nDCG@10', 'AP', 'RR@10', 'nDCG@10']
    """
    irm = _ir_measures()
    if not isinstance(name, str) or not name.strip():
        raise OptionError(f"A measure name must be a non-empty str, not {name!r}.")
    text = name.strip()
    try:
        return str(irm.parse_measure(text))
    except Exception:  # noqa: BLE001 - ir_measures raises NameError, ValueError, ...
        pass
    for candidate in (text, text.lower()):  # trec_eval, pytrec_eval, PyTerrier
        try:
            found = irm.parse_trec_measure(candidate)
        except Exception:  # noqa: BLE001
            continue
        if len(found) == 1:
            return str(found[0])
    base, at, cutoff = text.partition("@")
    alias = MEASURE_ALIASES.get(base.lower())
    if alias is not None and (not at or cutoff.isdigit()):
        return str(irm.parse_measure(f"{alias}{at}{cutoff}"))
    import difflib

    vocabulary = {m.lower(): m for m in _EXAMPLES}
    for alias, target in MEASURE_ALIASES.items():  # with a cutoff where the measure takes one
        try:
            vocabulary[f"{alias}@10"] = str(irm.parse_measure(f"{target}@10"))
        except Exception:  # noqa: BLE001
            vocabulary[alias] = target
    stem = base.lower()
    prefixed = [k for k in vocabulary if len(stem) >= 2 and k.split("@")[0].startswith(stem)]
    close = (prefixed + difflib.get_close_matches(text.lower(), list(vocabulary), n=3, cutoff=0.5))[
        :3
    ]
    hint = dict.fromkeys(vocabulary[c] for c in close) or dict.fromkeys(["nDCG@10", "AP"])
    raise OptionError(
        f"{name!r} is not a measure name metaeval knows (ir_measures, trec_eval, ranx or "
        f"elinor); did you mean {quote_list(list(hint))}? Valid names include "
        f"{quote_list(list(_EXAMPLES))}."
    )


_NUMBER_TYPES = frozenset(
    {
        int,
        float,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float16,
        np.float32,
        np.float64,
    }
)


def _nested(obj: Any, value: str, reader) -> dict[str, dict[str, Any]]:
    """Judgments or a run as ``{query: {doc: value}}``: str ids, int relevance or float
    scores, the form ir_measures evaluates without converting it row by row.

    Validated as :func:`metaeval.io.as_qrels` and :func:`metaeval.io.as_run` validate, with the same errors: a
    dict (or a ranx object) of plain numbers is checked and used (or copied) directly, a
    file read by :func:`metaeval.io.trec.read_nested`; anything else, or a dict that fails
    the check, goes through their tables (which raise, or convert what they accept, such
    as numbers written as text). Queries without documents are left out, as the tables
    have no row for them.
    """
    integer = value == "relevance"
    mapping = None
    if isinstance(obj, Mapping):
        mapping = obj
    elif not isinstance(obj, str | Path | pd.DataFrame) and callable(getattr(obj, "to_dict", None)):
        mapping = obj.to_dict()  # ranx Qrels / Run
    if isinstance(mapping, Mapping):
        nested = _nested_from_mapping(mapping, integer)
        if nested is not None:
            return nested
    if isinstance(obj, str | Path):
        return read_nested(obj, "qrels" if integer else "run")
    df = as_frame(obj, value, reader)
    number = df[value].to_numpy(dtype=float)
    return nested_from_columns(
        df["query_id"].to_numpy(dtype=object),
        df["doc_id"].to_numpy(dtype=object),
        number.astype(np.int64) if integer else number,
    )


def _nested_from_mapping(mapping: Mapping, integer: bool) -> dict[str, dict[str, Any]] | None:
    """``mapping`` itself where it already has str ids and Python int (``integer``) or float
    values, else a copy with them; None where the table route must decide: an entry that is
    not a dict, a value that is not a plain number or not a valid one, two query keys with
    the same str."""
    if not all(isinstance(docs, Mapping) for docs in mapping.values()):
        return None
    values = list(chain.from_iterable(docs.values() for docs in mapping.values()))
    types = set(map(type, values))
    if not types <= _NUMBER_TYPES:
        return None
    number = np.array(values, dtype=float)
    bad = ~np.isfinite(number)
    if integer:
        bad |= np.isfinite(number) & (number != np.round(number))
    if bad.any():
        return None
    exact = int if integer else float
    if (
        types <= {exact}
        and (not integer or not (np.abs(number) > 2**53).any())  # as the tables' float64
        and all(type(docs) is dict and docs for docs in mapping.values())
        and set(map(type, mapping)) <= {str}
        and set(map(type, chain.from_iterable(mapping.values()))) <= {str}
    ):
        return mapping if type(mapping) is dict else dict(mapping)  # ir_measures copies it
    converted = (number.astype(np.int64) if integer else number).tolist()
    out, at = {}, 0
    for query, docs in mapping.items():
        if docs:
            out[str(query)] = dict(zip(map(str, docs), converted[at : at + len(docs)], strict=True))
            at += len(docs)
    if len(out) < sum(1 for docs in mapping.values() if docs):  # 1 and "1": merge as tables do
        return None
    return out


def _is_qrels_dict(obj: Any) -> bool:
    """{query: {doc: relevance}} rather than {task: qrels}."""
    return isinstance(obj, Mapping) and all(
        isinstance(v, Mapping)
        and all(isinstance(x, int | float | np.integer | np.floating) for x in v.values())
        for v in obj.values()
    )


def _coverage_error(
    task: str, system: Any, source: Any, absent: list, judged: int, min_coverage: float
) -> PairingError:
    """The error for a run that lacks judged queries (below ``min_coverage``, or any)."""
    if isinstance(source, str | Path):
        what = f"run file {excerpt(str(source), 200)}"
    else:
        what = f"a run passed as {type(source).__name__}"
    returned = judged - len(absent)
    coverage = returned / judged
    head = (
        f"Task {excerpt(task)}, system {excerpt(system)} ({what}): the run returns {returned:,} of "
        f"the {judged:,} judged queries (coverage {format_number(100 * coverage, 1)}%); it lacks {len(absent):,}, e.g. "
        f"{quote_list(absent, limit=5)}."
    )
    if coverage < min_coverage:
        return PairingError(
            f"{head} That is below min_coverage={min_coverage!r}: are the run and the qrels of the "
            "same collection, and is the run complete? To score it anyway, lower min_coverage "
            "(0 turns the check off) and choose missing='zero' (they score 0, as trec_eval -c) "
            "or missing='drop' (they are left out)."
        )
    return PairingError(
        f"{head} missing='error' refuses that; pass missing='zero' to score them 0 (as "
        "trec_eval -c) or missing='drop' to leave them out."
    )


def evaluate(
    qrels: QrelsLike | Mapping[str, QrelsLike],
    runs: Mapping[str, RunLike] | Mapping[str, Mapping[str, RunLike]],
    measures: str | Sequence[str],
    *,
    task: str | None = None,
    missing: str = "zero",
    min_coverage: float = 0.5,
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
        A mapping ``{system: run}`` (also for one run) with runs in the same forms (TREC run files with 6
        columns ``query Q0 doc rank score tag`` or 4 columns ``query doc rank
        score``; a DataFrame ``query_id, doc_id, score``; ``{query: {doc:
        score}}``; an ir_measures / ranx ``Run``). For several tasks:
        ``{system: {task: run}}``.
    measures : str or list of str
        ir_measures names: ``"nDCG@10"``, ``"Judged@10"``, ``"AP(rel=2)"``,
        ``"RR@10"``, ``"R@100"``, ``"P@5"``, …, or the same measures by
        trec_eval's, ranx's or elinor's names (``"ndcg_cut_10"``,
        ``"map@100"``, ``"precision@5"``; see :func:`measure_name`).
    task : str, optional
        The task name for single-task inputs.
    missing : {"zero", "drop", "error"}, default "zero"
        Judged queries a run does not return: ``"zero"`` scores them 0 for
        every measure (as ``trec_eval -c``, ir_measures' ``calc_aggregate``
        and ranx's ``make_comparable=True`` do), ``"drop"`` leaves them out
        (the run's mean is then over the queries it returned, as
        ``trec_eval`` without ``-c`` and pytrec_eval), ``"error"`` refuses
        such a run (as ranx does by default). With
        ``"zero"`` and ``"drop"`` a :class:`~metaeval.PairingWarning` counts
        them per (task, system). Queries of a run without judgments are
        always left out, with a warning counting them.
    min_coverage : float, default 0.5
        The share of a task's judged queries that each run must return,
        between 0 and 1: a run returning fewer (a truncated run, a run of
        another collection that shares a few query ids) is an error whatever
        ``missing`` says; ``min_coverage=0`` turns the check off (a run that
        shares no query at all is still refused).

    Returns
    -------
    pandas.DataFrame
        ``task, query, system, metric, value``, ``metric`` the canonical
        ir_measures name.

    Raises
    ------
    metaeval.SchemaError
        When ``runs`` is not a mapping ``{system: run}``; the qrels of a task
        are empty; a run shares no query with the judged queries of its task
        (qrels of another collection, or ids written differently, ``q1`` and
        ``1``), naming the task, the system and examples of both sides' ids; a
        table or list repeats a ``(query_id, doc_id)``, or holds a relevance
        that is not an integer or a score that is not a finite number (see
        :func:`metaeval.io.as_qrels`, :func:`metaeval.io.as_run`); a system lacks the run of a task,
        or has runs of tasks without qrels.
    metaeval.PairingError
        When a run returns less than ``min_coverage`` of the judged queries of
        its task, or (with ``missing="error"``) not all of them: naming the
        task, the system, the run file (or the kind of object), the number of
        judged queries it lacks with examples, and the coverage.
    metaeval.FormatError
        A file that cannot be read (naming the file and the line): see
        :func:`metaeval.io.read_qrels` and :func:`metaeval.io.read_run`;
        a file without records, a document listed twice for a query.
    metaeval.OptionError
        An unknown measure, ``missing`` value, a ``min_coverage`` outside
        [0, 1], an empty ``measures`` or ``runs``, or single-task inputs
        without ``task``.

    Warns
    -----
    metaeval.PairingWarning
        Counting, per task and system, the queries a run returned that have no
        judgments (left out); and the judged queries a run did not return
        (scored 0 with ``missing="zero"``, left out with ``missing="drop"``):
        ``groups`` holds ``task, system, missing`` (their number), ``judged``
        (the task's judged queries) and ``coverage`` (the share returned).
    metaeval.DegenerateWarning
        When the qrels of a task judge no document relevant (relevance > 0):
        most measures are then 0 for every query (``Judged@k`` still means
        something).

    Examples
    --------
    >>> import metaeval.ir
    >>> qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}
    >>> runs = {"bm25": {"q1": {"d1": 1.0, "d2": 0.5}, "q2": {"d4": 0.2}},
    ...         "dense": {"q1": {"d2": 0.9}, "q2": {"d3": 0.3}}}
    >>> metaeval.ir.evaluate(qrels, runs, ["P@1"], task="toy")
       task query system metric  value
    0   toy    q1   bm25    P@1    1.0
    1   toy    q2   bm25    P@1    0.0
    2   toy    q1  dense    P@1    0.0
    3   toy    q2  dense    P@1    1.0

    A run that lacks judged queries: they score 0 (``missing="zero"``, as
    ``trec_eval -c``), with a warning counting them; ``missing="drop"`` leaves
    them out, ``missing="error"`` refuses the run:

    >>> import warnings
    >>> short = {"bm25": {"q1": {"d1": 1.0}}}
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     metaeval.ir.evaluate(qrels, short, "P@1", task="toy")["value"].tolist()
    [1.0, 0.0]
    >>> print(caught[0].message)
    Judged queries a run did not return score 0 (missing='zero', as trec_eval -c) in 1 run(s); pass missing='drop' to leave them out or missing='error' to refuse such runs:
      task='toy', system='bm25', missing=1, judged=2, coverage=0.5

    Several collections at once: qrels keyed by task, runs by system and task (files
    work alike, e.g. ``{"bm25": {t: f"runs/bm25/{t}.trec" for t in tasks}}``):

    >>> more = {"toy": qrels, "other": {"q9": {"d7": 1}}}
    >>> by_task = {"bm25": {"toy": runs["bm25"], "other": {"q9": {"d7": 0.1}}},
    ...            "dense": {"toy": runs["dense"], "other": {"q9": {"d8": 0.4}}}}
    >>> metaeval.ir.evaluate(more, by_task, ["ndcg@10"]).groupby(["task", "system"])["value"].mean()
    task   system
    other  bm25      1.0
           dense     0.0
    toy    bm25      0.5
           dense     0.5
    Name: value, dtype: float64
    """
    irm = _ir_measures()
    check_option("missing", missing, ["zero", "drop", "error"])
    if (
        isinstance(min_coverage, bool)
        or not isinstance(min_coverage, int | float | np.integer | np.floating)
        or not 0 <= min_coverage <= 1
    ):
        raise OptionError(
            "`min_coverage` must be a number between 0 and 1 (the share of the judged queries "
            f"each run must return; 0 turns the check off), but {min_coverage!r} was passed."
        )
    names = [measures] if isinstance(measures, str) else list(measures)
    if not names:
        raise OptionError(
            "`measures` is empty; name at least one ir_measures measure, e.g. 'nDCG@10'."
        )
    parsed = [irm.parse_measure(measure_name(name)) for name in names]
    if not isinstance(runs, Mapping):
        raise SchemaError(
            f"`runs` must be a mapping {{system: run}}, not a {type(runs).__name__} "
            f"({excerpt(runs)}); e.g. evaluate(qrels, {{'bm25': 'bm25.run'}}, ...)."
        )
    if not runs:
        raise OptionError("`runs` is empty; pass {system: run}.")
    if _is_qrels_dict(runs):
        raise SchemaError(
            "`runs` looks like one run {query: {doc: score}}; pass a mapping {system: run}, "
            "e.g. {'bm25': run}."
        )

    multi = task is None and isinstance(qrels, Mapping) and not _is_qrels_dict(qrels)
    if multi:
        per_task = {str(t): q for t, q in qrels.items()}
        for system, by_task in runs.items():
            if not isinstance(by_task, Mapping) or _is_qrels_dict(by_task):
                raise SchemaError(
                    f"qrels are keyed by task, so runs must be {{system: {{task: run}}}}; "
                    f"the run of {excerpt(system)} is not keyed by task."
                )
            unknown = sorted(set(map(str, by_task)) - set(per_task))
            if unknown:
                raise SchemaError(
                    f"Run of {excerpt(system)} has task(s) {quote_list(unknown)} without qrels; tasks: "
                    f"{quote_list(sorted(per_task))}."
                )
    else:
        if task is None:
            raise OptionError(
                "Name the task: evaluate(..., task='trec-covid'), or key qrels and runs by task."
            )
        per_task = {str(task): qrels}
        runs = {system: {str(task): run} for system, run in runs.items()}

    parts, short, unjudged = [], [], []
    metric_of: dict[Any, int] = {m: i for i, m in enumerate(parsed)}
    metric_names = [str(m) for m in parsed]
    for t, q in per_task.items():
        q_nested = _nested(q, "relevance", read_qrels)
        if not q_nested:
            raise SchemaError(
                f"The qrels of task {excerpt(t)} are empty; there is nothing to evaluate."
            )
        if not any(v > 0 for docs in q_nested.values() for v in docs.values()):
            warn(
                f"The qrels of task {excerpt(t)} judge no document relevant (relevance > 0): most "
                "measures are 0 for every query (Judged@k still counts judged documents).",
                DegenerateWarning,
            )
        judged = list(q_nested)  # in order of first appearance
        judged_set = set(judged)
        for system, by_task in runs.items():
            if t not in {str(k) for k in by_task}:
                raise SchemaError(f"System {excerpt(system)} has no run for task {excerpt(t)}.")
            source = next(v for k, v in by_task.items() if str(k) == t)
            run = _nested(source, "score", read_run)
            answered = run.keys()
            if not answered & judged_set:
                raise SchemaError(
                    f"Task {excerpt(t)}: the run of {excerpt(system)} shares no query with the qrels; are they of "
                    "the same collection, with query ids written alike? Run queries: "
                    f"{quote_list(sorted(answered), limit=5)}; judged queries: "
                    f"{quote_list(sorted(judged_set), limit=5)}."
                )
            if answered - judged_set:
                unjudged.append((t, str(system), len(answered - judged_set)))
            absent = [x for x in judged if x not in answered]
            if absent:
                coverage = 1 - len(absent) / len(judged)
                if coverage < min_coverage or missing == "error":
                    raise _coverage_error(t, system, source, absent, len(judged), min_coverage)
                short.append((t, str(system), len(absent), len(judged), round(coverage, 4)))
            keep = judged_set & answered if missing == "drop" else judged_set
            queries, metrics, values = [], [], []
            for m in irm.iter_calc(parsed, q_nested, run):
                if m.query_id in keep:
                    queries.append(m.query_id)
                    metrics.append(_metric_index(m.measure, metric_of, metric_names))
                    values.append(m.value)
            if absent and missing == "zero":
                # ir_measures leaves out some judged queries without results (depending on the
                # measure's provider): trec_eval -c scores them 0
                present = set(zip(queries, metrics, strict=True))
                fill = [(a, i) for a in absent for i in range(len(parsed)) if (a, i) not in present]
                queries += [a for a, _ in fill]
                metrics += [i for _, i in fill]
                values += [0.0] * len(fill)
            parts.append((t, str(system), queries, metrics, values))
    if unjudged:
        warn(
            "Queries a run returned that the qrels do not judge were left out:\n"
            + format_groups(pd.DataFrame(unjudged, columns=["task", "system", "queries"])),
            PairingWarning,
        )
    if short:
        done = (
            "score 0 (missing='zero', as trec_eval -c) in {n} run(s); pass missing='drop' to "
            "leave them out"
            if missing == "zero"
            else "were left out (missing='drop') in {n} run(s): their means are over the "
            "queries they returned; pass missing='zero' to score them 0 (as trec_eval -c)"
        )
        warn_groups(
            f"Judged queries a run did not return {done} or missing='error' to refuse such runs",
            pd.DataFrame(short, columns=["task", "system", "missing", "judged", "coverage"]),
            PairingWarning,
        )
    return _table(parts, metric_names)


def _metric_index(measure: Any, metric_of: dict[Any, int], names: list[str]) -> int:
    """The position of a measure ir_measures returned among the ones asked for (by name
    where it is another object; a new position past them for one not asked for)."""
    i = metric_of.get(measure)
    if i is None:
        name = str(measure)
        i = metric_of[measure] = names.index(name) if name in names else len(names)
        if i == len(names):
            names.append(name)
    return i


def _table(parts: list[tuple[str, str, list, list, list]], metric_names: list[str]) -> pd.DataFrame:
    """The scores table of every (task, system), built once: ``task, query, system, metric,
    value`` sorted by task, system, the measures' order, then query (ids in code-point
    order, as pandas sorts text)."""
    sizes = [len(p[2]) for p in parts]
    metric = np.concatenate([np.asarray(p[3], dtype=np.intp) for p in parts])
    value = np.concatenate([np.asarray(p[4], dtype=np.float64) for p in parts])
    query = np.array([q for p in parts for q in p[2]], dtype=object)
    task = np.repeat(np.array([p[0] for p in parts], dtype=object), sizes)
    system = np.repeat(np.array([p[1] for p in parts], dtype=object), sizes)
    keys = [pd.factorize(column, sort=True)[0] for column in (query, system, task)]
    order = np.lexsort((keys[0], metric, keys[1], keys[2]))
    return pd.DataFrame(
        {
            "task": task[order],
            "query": query[order],
            "system": system[order],
            "metric": np.array(metric_names, dtype=object)[metric[order]],
            "value": value[order],
        }
    )

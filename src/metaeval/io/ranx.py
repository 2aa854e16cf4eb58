"""ranx: ``Qrels``/``Run`` objects (through :func:`as_qrels`/:func:`as_run`) and per-query scores."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..errors import SchemaError, excerpt
from .judgments import as_qrels, as_run

__all__ = ["from_ranx_scores", "to_ranx", "from_ranx"]


def _ranx() -> Any:
    try:
        import ranx
    except ImportError as err:
        from ..errors import MetaEvalError

        raise MetaEvalError(
            f"to_ranx() needs ranx: pip install 'metaeval[ranx]' ({err})."
        ) from None
    return ranx


def to_ranx(data: Any, kind: str, *, name: str | None = None) -> Any:
    """Judgments or a run in any form metaeval reads, as a ranx ``Qrels`` or ``Run``.

    Parameters
    ----------
    data
        A TREC qrels or run file, a DataFrame ``query_id, doc_id, relevance``
        (or ``score``) such as :func:`metaeval.io.read_qrels` returns, or a
        dict ``{query: {doc: value}}``.
    kind : {"qrels", "run"}
        What ``data`` holds.
    name : str, optional
        The ``Run``'s name (ranx shows it in its reports).

    Returns
    -------
    ranx.Qrels or ranx.Run
        Built from a dict of plain ``str`` ids, so that pandas' ``str``
        columns (pandas 3), which ``ranx.Qrels.from_df`` refuses, work.

    Raises
    ------
    metaeval.OptionError
        For another ``kind``.
    metaeval.SchemaError
        For judgments or a run without any (query, document) pair, a relevance
        that is not an integer (``1.7``, NaN, ``"high"``) or a score that is not
        a finite number, naming the column, the row (of a DataFrame), the query
        and the document (all offending rows in ``failure_cases``), as
        :func:`metaeval.io.as_qrels` and :func:`metaeval.io.as_run` do; a
        document listed twice for a query.
    metaeval.FormatError
        For a file, what :func:`metaeval.io.read_qrels` and
        :func:`metaeval.io.read_run` refuse, naming the file and line.
    metaeval.MetaEvalError
        When ranx is not installed (``pip install "metaeval[ranx]"``).

    Examples
    --------
    >>> import ranx
    >>> from metaeval.io import to_ranx
    >>> qrels = to_ranx({"q1": {"d1": 1}, "q2": {"d3": 1}}, "qrels")
    >>> run = to_ranx({"q1": {"d1": 0.9, "d2": 0.1}, "q2": {"d2": 0.8, "d3": 0.5}}, "run",
    ...               name="bm25")
    >>> float(ranx.evaluate(qrels, run, "mrr"))
    0.75
    """
    from ..errors import check_option

    check_option("kind", kind, ["qrels", "run"])
    ranx = _ranx()
    frame = as_qrels(data) if kind == "qrels" else as_run(data)
    value = "relevance" if kind == "qrels" else "score"
    if frame.empty:  # ranx fails on it with "max() arg is an empty sequence"
        raise SchemaError(
            f"to_ranx() was given {kind} without any (query, document) pair (an empty "
            f"{type(data).__name__}{'' if isinstance(data, pd.DataFrame) else ' ' + excerpt(data)}"
            f"); ranx cannot hold empty {kind}: pass at least one row query_id, doc_id, {value}."
        )
    nested: dict[str, dict[str, Any]] = {}
    for q, d, v in zip(
        frame["query_id"].astype(str),
        frame["doc_id"].astype(str),
        frame[value].tolist(),
        strict=True,
    ):
        nested.setdefault(q, {})[d] = int(v) if kind == "qrels" else float(v)
    if kind == "qrels":
        return ranx.Qrels(nested)
    return ranx.Run(nested, name=name)


def from_ranx(obj: Any) -> pd.DataFrame:
    """A ranx ``Qrels`` or ``Run`` as metaeval's frame of judgments or of a run.

    Parameters
    ----------
    obj : ranx.Qrels or ranx.Run
        The object to convert.

    Returns
    -------
    pandas.DataFrame
        ``query_id, doc_id, relevance`` (ints) for a ``Qrels``, ``query_id,
        doc_id, score`` for a ``Run``, the forms :func:`metaeval.ir.evaluate`
        and :func:`metaeval.io.write_scores`' neighbours take.

    Raises
    ------
    metaeval.SchemaError
        For an object that is neither.

    Examples
    --------
    >>> from metaeval.io import from_ranx, to_ranx
    >>> from_ranx(to_ranx({"q1": {"d1": 2}}, "qrels"))
      query_id doc_id  relevance
    0       q1     d1          2
    """

    kind = type(obj).__name__
    if kind not in ("Qrels", "Run") or not hasattr(obj, "to_dict"):
        raise SchemaError(f"from_ranx() takes a ranx Qrels or Run, not a {kind}.")
    nested = obj.to_dict()
    return as_qrels(nested) if kind == "Qrels" else as_run(nested)


def from_ranx_scores(runs: Mapping[str, Any], *, task: str = "default") -> pd.DataFrame:
    """Per-query scores that ranx computed, as a scores table.

    Parameters
    ----------
    runs
        ``{system: scores}`` with ``scores`` either ranx's per-query dict
        ``{metric: {query: value}}`` or an evaluated ranx ``Run`` (its
        ``scores`` attribute holds that dict after ``ranx.evaluate``).
    task : str, default "default"

    Returns
    -------
    pandas.DataFrame
        ``task, query, system, metric, value``.

    Examples
    --------
    The per-query dicts that ``ranx.evaluate(qrels, run, "ndcg@10",
    return_mean=False)`` leaves in ``run.scores``:

    >>> from metaeval.io import from_ranx_scores
    >>> runs = {"bm25": {"ndcg@10": {"q1": 0.5, "q2": 0.25}},
    ...         "splade": {"ndcg@10": {"q1": 0.75, "q2": 0.5}}}
    >>> from_ranx_scores(runs, task="scifact")
          task query  system   metric  value
    0  scifact    q1    bm25  ndcg@10   0.50
    1  scifact    q2    bm25  ndcg@10   0.25
    2  scifact    q1  splade  ndcg@10   0.75
    3  scifact    q2  splade  ndcg@10   0.50
    """
    rows: list[tuple] = []
    for system, scores in runs.items():
        per_metric = getattr(scores, "scores", scores)
        if not isinstance(per_metric, Mapping) or not per_metric:
            raise SchemaError(
                f"The scores of {system!r} are not ranx per-query scores {{metric: {{query: value}}}}; "
                "evaluate the run with ranx.evaluate(..., return_mean=False) first."
            )
        for metric, values in per_metric.items():
            if not isinstance(values, Mapping):
                raise SchemaError(
                    f"ranx scores of {system!r} for {metric!r} are not a {{query: value}} dict."
                )
            rows.extend(
                (task, str(q), str(system), str(metric), float(v)) for q, v in values.items()
            )
    df = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])
    if not np.isfinite(df["value"]).all():
        raise SchemaError("ranx scores contain NaN or infinite values.")
    return df

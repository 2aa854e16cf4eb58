"""ranx: ``Qrels``/``Run`` objects (through :func:`metaeval.ir.evaluate`) and per-query scores."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..errors import SchemaError

__all__ = ["from_ranx_scores"]


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

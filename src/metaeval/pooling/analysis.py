"""The Ranger-shaped table: per-task effects, their weights and the summary."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .._options import CIMethod, EffectType, PoolMethod, literal_signature
from ..paired.effect_size import REPORTED, effects
from ._engine import fit

__all__ = ["analyze"]


@literal_signature
def analyze(
    scores: pd.DataFrame,
    *,
    control: str | Sequence[str] | None,
    treatment: str | Sequence[str] | None = None,
    effect: EffectType = "smd",
    method: PoolMethod = "DL",
    ci: CIMethod = "z",
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Effects per task and their pooled summary in one table, as Ranger reports them.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table.
    control, treatment, effect, alpha
        As in :func:`metaeval.effects`.
    method, ci
        As in :func:`metaeval.pool` (``ci="knha"`` gives Knapp–Hartung
        intervals on the summary row; task rows keep their normal intervals).

    Returns
    -------
    pandas.DataFrame
        For every ``(metric, treatment, control)``: one row per task, then one
        summary row. Columns ``metric, treatment, control``; ``row`` ("task" or
        "summary"); ``task`` (the task name, or ``"summary"``); ``n`` (paired
        queries; the total over tasks on the summary row); ``mean_control,
        mean_treatment`` (the metric's means over the paired queries, as in
        Ranger's "control → treatment" column; NaN on the summary row); ``effect, se,
        ci_low, ci_high, p_value`` (analysis scale, as in
        :func:`metaeval.effects`); ``weight``: the task's share of the
        summary, 100·w*_i/Σw*_j in percent with the model's weights w*_i
        (100 on the summary row, NaN for a task left out because its effect is
        NaN). The ``corr`` and ``rom`` reporting-scale columns are kept.

    Examples
    --------
    >>> import metaeval
    >>> table = metaeval.load_example().meta.analyze(
    ...     control="logistic_regression", treatment="gradient_boosting")
    >>> table.query("metric == 'accuracy'")[["task", "effect", "weight"]].round(3)
                task  effect   weight
    0  breast_cancer  -0.084   27.658
    1         digits  -0.016   45.919
    2           iris  -0.115   16.486
    3           wine  -0.184    9.937
    4        summary  -0.068  100.000
    """
    eff = effects(scores, control=control, treatment=treatment, effect=effect, alpha=alpha)
    result = fit(
        eff, method=method, ci=ci, alpha=alpha, over="task", groups=None, heterogeneity_ci=False
    )
    pooled, weights = result.pooled, result.row_weight
    keys = ["metric", "treatment", "control"]
    prefixes = [scale.report_prefix for scale in REPORTED.values()]
    extra = [c for c in eff.columns if any(c == p or c.startswith(f"{p}_") for p in prefixes)]
    columns = [
        "n",
        "mean_control",
        "mean_treatment",
        "effect",
        "se",
        "ci_low",
        "ci_high",
        "p_value",
        *extra,
    ]

    group = result.grouped.code  # the pooled row of every effect
    tasks = eff[keys + ["task"] + columns].assign(row="task", weight=weights, _group=group)
    n_total = np.bincount(group, weights=eff["n"].to_numpy(), minlength=len(pooled))
    summary = pooled[keys + [c for c in columns if c in pooled.columns]].assign(
        row="summary",
        task="summary",
        n=n_total.astype(np.int64),
        weight=100.0,
        _group=np.arange(len(pooled)),
    )
    table = pd.concat([tasks, summary], ignore_index=True).sort_values("_group", kind="stable")
    return table[keys + ["row", "task", *columns, "weight"]].reset_index(drop=True)

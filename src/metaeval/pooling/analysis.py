"""The Ranger-shaped table from an effects table: per-task effects, their weights and the
summary (:func:`metaeval.analyze` computes the effects, then calls this)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._options import (
    DEFAULT_CI,
    DEFAULT_POOL_METHOD,
    REPORTED,
    CIMethod,
    PoolMethod,
)
from ._engine import fit
from ._grouping import valid_rows

__all__ = ["analysis_table"]


def analysis_table(
    eff: pd.DataFrame,
    *,
    method: PoolMethod = DEFAULT_POOL_METHOD,
    test: CIMethod | None = DEFAULT_CI,
    alpha: float = 0.05,
    effect: str | None = None,
) -> pd.DataFrame:
    """:func:`metaeval.analyze`'s table from an effects table (the effects computed elsewhere:
    by a dask scores table's ``.meta.effects()``, say); ``effect`` names the effect
    type of an empty one."""
    result = fit(
        eff,
        method=method,
        test=test,
        alpha=alpha,
        over="task",
        groups=None,
        heterogeneity_ci=False,
        warn_coverage=True,
        warn_narrow=True,
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
    # the summary's n: the queries of the tasks it pools (not of those left out, NaN effect)
    pooled_n = np.where(valid_rows(result.grouped.table), eff["n"].to_numpy(dtype=float), 0.0)
    n_total = np.bincount(group, weights=pooled_n, minlength=len(pooled))
    summary = pooled[keys + [c for c in columns if c in pooled.columns]].assign(
        row="summary",
        task="summary",
        n=n_total.astype(np.int64),
        weight=100.0,
        _group=np.arange(len(pooled)),
    )
    table = pd.concat([tasks, summary], ignore_index=True).sort_values("_group", kind="stable")
    table = table[keys + ["row", "task", *columns, "weight"]].reset_index(drop=True)
    table.insert(0, "effect_type", eff["effect_type"].iloc[0] if len(eff) else effect)
    table.attrs.update(
        method=result.pooled["method"].iloc[0] if len(pooled) else method,
        test=result.pooled["test"].iloc[0] if len(pooled) else test,
        alpha=alpha,
    )
    return table

"""Queries in clusters (questions on one passage): one home for the cluster concept.

The per-query cluster ids and their checks (:func:`cluster_ids`), the cluster-robust
standard error of a mean (:func:`cluster_se`: Miller 2024, App. A, with the finite-cluster
factor C/(C − 1), as Inspect's ``stderr(cluster=)``), the rule for a clustered variance
that is rounding noise (:func:`clustered_variance_is_zero`), and their users' steps:
:func:`metaeval.effects`' clustered variances (:func:`cluster_terms`,
:func:`clustered_effects`; the formulas are in :mod:`metaeval.paired.effect_size`),
:func:`metaeval.compare`'s clustered t (:func:`clustered_t`) and
:func:`metaeval.means`' clustered interval (in :mod:`metaeval.paired.means`).

References
----------
Miller, E. (2024). Adding error bars to evals: A statistical approach to language
model evaluations. arXiv:2411.00640.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._options import add_display
from ..errors import (
    DegenerateWarning,
    OptionError,
    SchemaError,
    format_groups,
    quote_list,
    warn_groups,
)
from .alternatives import critical_value, open_side, p_value
from .replicates import t_inference
from .sufficient import ZERO_TOL

__all__ = [
    "CLUSTER_COLUMNS",
    "cluster_ids",
    "cluster_se",
    "clustered_variance_is_zero",
    "per_query_scores",
    "check_cluster_options",
    "cluster_terms",
    "clustered_effects",
    "clustered_t",
]

#: The columns :func:`effects` adds with ``cluster=``.
CLUSTER_COLUMNS = ("n_clusters", "design_effect", "df")


def cluster_ids(scores: pd.DataFrame, cluster: str) -> pd.DataFrame:
    """The per-query table ``task, query, cluster`` of ``scores``, checked.

    Raises a SchemaError when the column is missing, when a query has two
    cluster ids (across systems or metrics) or none (NaN), and an OptionError
    when a task has fewer than 2 clusters.
    """
    if not isinstance(cluster, str) or cluster not in scores.columns:
        raise SchemaError(
            f"cluster={cluster!r} must name a column of the scores table (one cluster id "
            f"per query, e.g. 'passage'); its columns are {quote_list(list(scores.columns))}."
        )
    ids = scores[["task", "query", cluster]].rename(columns={cluster: "cluster"})
    missing = ids["cluster"].isna()
    if missing.any():
        groups = ids.loc[missing, ["task", "query"]].drop_duplicates().astype(str)
        raise SchemaError(
            f"cluster={cluster!r}: these queries have no cluster id (NaN); give every query "
            f"one:\n{format_groups(groups)}"
        )
    per_query = ids.groupby(["task", "query"], observed=True, sort=False)["cluster"]
    varying = per_query.nunique() > 1
    if varying.any():
        groups = varying[varying].index.to_frame(index=False).astype(str)
        raise SchemaError(
            f"cluster={cluster!r} must be constant within a query (across systems and "
            f"metrics), but these (task, query) have several ids:\n{format_groups(groups)}"
        )
    ids = per_query.first().reset_index()
    n_clusters = ids.groupby("task", observed=True)["cluster"].nunique()
    few = n_clusters < 2
    if few.any():
        groups = pd.DataFrame(
            {"task": n_clusters.index[few].astype(str), "clusters": n_clusters[few].values}
        )
        raise OptionError(
            f"cluster={cluster!r} needs at least 2 clusters on a task (the t has C − 1 "
            f"degrees of freedom), but these tasks have one:\n{format_groups(groups)}\n"
            "Use cluster=None or a finer cluster column."
        )
    return ids


def cluster_se(frame: pd.DataFrame, keys: list[str], value: str = "value") -> pd.DataFrame:
    """Clustered standard error of the mean of ``value`` per ``keys`` group.

    ``frame`` has the ``keys``, ``value`` and a ``cluster`` column. Returns per
    group ``n, mean, se, n_clusters, design_effect, se_naive``:
    SE = √(C/(C − 1) · Σ_c (Σ_{i∈c} (x_i − x̄))²) / n, the design effect
    SE²/(s²/n) (NaN when s = 0) and the unclustered s/√n.
    """
    grouped = frame.groupby(keys, observed=True, sort=False)[value]
    centred = frame[value] - grouped.transform("mean")
    # Σ_{i∈c} by np.bincount, which adds each cluster's rows in their order whatever the
    # other groups (pandas' grouped sum does not: a task alone, as on a dask partition,
    # could differ from the whole table in the last bit)
    by_cluster = frame.groupby([frame[k] for k in keys] + [frame["cluster"]], observed=True)
    codes = by_cluster.ngroup().to_numpy()
    sums = pd.Series(
        np.bincount(codes, weights=centred.to_numpy(float), minlength=by_cluster.ngroups),
        index=by_cluster.size().index,
    )
    level = list(range(len(keys)))
    c = sums.groupby(level=level, observed=True).size().astype(float)
    out = pd.DataFrame({"n": grouped.size(), "mean": grouped.mean(), "var": grouped.var(ddof=1)})
    out = out.join((sums**2).groupby(level=level, observed=True).sum().rename("ss"))
    out["n_clusters"] = c.reindex(out.index).astype(int)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(c.reindex(out.index) / (c.reindex(out.index) - 1) * out["ss"]) / out["n"]
        out["se"] = se
        out["design_effect"] = se**2 / (out["var"] / out["n"])
        out["se_naive"] = np.sqrt(out["var"] / out["n"])
    return out.drop(columns=["var", "ss"]).reset_index()


def clustered_variance_is_zero(clustered: Any, unclustered: Any) -> np.ndarray:
    """Where a clustered variance is 0 up to rounding although the unclustered one is not.

    True where ``unclustered`` is finite and positive and ``clustered`` is not above
    :data:`~metaeval.paired.sufficient.ZERO_TOL` of it (or not finite): the clusters'
    centred sums cancel (each passage's deviations sum to about 0), and the clustered
    standard error is rounding noise, not an estimate. The one rule of
    :func:`metaeval.effects`, :func:`metaeval.compare` and :func:`metaeval.means` with
    ``cluster=``, which give NaN there with a DegenerateWarning naming the groups.
    """
    clustered = np.asarray(clustered, dtype=float)
    unclustered = np.asarray(unclustered, dtype=float)
    with np.errstate(invalid="ignore"):
        known = np.isfinite(unclustered) & (unclustered > 0)
        above = np.isfinite(clustered) & (clustered > ZERO_TOL * unclustered)
    return known & ~above


def per_query_scores(scores: pd.DataFrame, cluster: str) -> pd.DataFrame:
    """``task, query, system, metric, value, cluster``, replicates averaged per query."""
    ids = cluster_ids(scores, cluster)
    keys = ["task", "query", "system", "metric"]
    values = scores.groupby(keys, observed=True, sort=False)["value"].mean().reset_index()
    return values.merge(ids, on=["task", "query"], how="left")


def check_cluster_options(cluster: Any, effect: str, cv: Any) -> None:
    """The OptionErrors of :func:`effects` for ``cluster=`` with what it cannot take."""
    if effect == "corr":
        raise OptionError(
            f"cluster={cluster!r} is not defined for effect='corr' (Fisher's z of r has no "
            "clustered variance here): use effect='md', 'smcc', 'smcrp', 'smd' or 'rom' with "
            "cluster=, or cluster=None for 'corr'."
        )
    if cv is not None:
        raise OptionError(
            f"cluster={cluster!r} and cv={cv!r} cannot be combined: cv= takes one row per fold, "
            "and folds are not clustered queries. Pass one of the two."
        )


def cluster_terms(
    scores: pd.DataFrame, pairs: pd.DataFrame, *, cluster: str, effect: str
) -> pd.DataFrame:
    """Per ``(metric, treatment, control, task)`` group of ``pairs`` whose tasks ``scores``
    has: ``n_clusters`` and the clustered variance ``var_cl`` of the mean of the per-query
    quantity of ``effect`` (z_i = x_i/x̄ − y_i/ȳ for ``rom``, else d_i = x_i − y_i) over
    the paired queries, with its design effect ``deff`` (V_cl over s²/n; see the
    docstring of :mod:`metaeval.paired.effect_size`). Checks ``cluster`` as :func:`metaeval.means` does. A function of each
    task's rows alone, so the dask path computes it partition by partition."""
    keys = ["metric", "treatment", "control", "task"]
    values = per_query_scores(scores, cluster)
    for key in ("task", "metric", "system"):
        values[key] = values[key].astype(str)
    groups = pairs[keys].astype(str).drop_duplicates()
    groups = groups[groups["task"].isin(set(values["task"]))]
    values["query"] = values["query"].astype(str)
    left = values.rename(columns={"system": "treatment", "value": "x"})
    right = values.rename(columns={"system": "control", "value": "y"}).drop(columns="cluster")
    d = groups.merge(left, on=["metric", "treatment", "task"]).merge(
        right, on=["metric", "control", "task", "query"]
    )
    if d.empty:
        return pd.DataFrame(columns=[*keys, "n_clusters", "var_cl", "deff"])
    # one order of the sums whatever the rows' order (in memory and per partition alike)
    d = d.sort_values([*keys, "query"], kind="stable", ignore_index=True)
    if effect == "rom":
        by = d.groupby(keys, observed=True, sort=False)
        with np.errstate(divide="ignore", invalid="ignore"):
            d["z"] = d["x"] / by["x"].transform("mean") - d["y"] / by["y"].transform("mean")
    else:
        d["z"] = d["x"] - d["y"]
    st = cluster_se(d, keys, value="z")
    return pd.DataFrame(
        {
            **{k: st[k] for k in keys},
            "n_clusters": st["n_clusters"].to_numpy(),
            "var_cl": st["se"].to_numpy() ** 2,
            "deff": st["design_effect"].to_numpy(),
        }
    )


def clustered_effects(
    table: pd.DataFrame,
    terms: pd.DataFrame,
    pair_vars: pd.DataFrame,
    *,
    cluster: str,
    effect: str,
    alpha: float,
    correct: bool,
) -> pd.DataFrame:
    """The effects table with the clustered variances of ``terms`` (from
    :func:`cluster_terms`) and ``r`` of ``pair_vars`` (from
    :func:`~metaeval.paired.replicates.pair_variances`): the formulas of the docstring of
    :mod:`metaeval.paired.effect_size`, t inference on C − 1 df, columns :data:`CLUSTER_COLUMNS`; a
    DegenerateWarning for groups with one cluster or a zero clustered variance."""
    keys = ["metric", "treatment", "control", "task"]
    index = pd.MultiIndex.from_frame(table[keys].astype(str))
    t = terms.set_index(keys).reindex(index)
    c = t["n_clusters"].to_numpy(float)
    var_cl, deff = t["var_cl"].to_numpy(float), t["deff"].to_numpy(float)
    old = table["variance"].to_numpy(float)
    n = table["n"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if effect in ("md", "rom"):
            new = np.where(np.isfinite(old), var_cl, np.nan)
        else:
            if effect == "smcc":
                term = 1 / n
            else:
                r = pair_vars.assign(**{k: pair_vars[k].astype(str) for k in keys})
                r = r.set_index(keys)["r"].reindex(index).to_numpy(float)
                r = np.where(1 - np.abs(r) <= ZERO_TOL, np.sign(r), r)  # as the kernel does
                j = 1 - 3 / (4 * (n - 1) - 1) if correct and effect == "smd" else 1.0
                term = j**2 * 2 * (1 - r) / n
            new = old + term * (deff - 1)
        one = np.isfinite(old) & (c < 2)
        zero = ~one & clustered_variance_is_zero(new, old)
        new = np.where(one | zero, np.nan, new)
        design = new / old
    out = table.copy()
    out["variance"] = new
    t_inference(out, np.sqrt(new), c - 1, alpha)
    at = out.columns.get_loc("z") + 1
    for i, (name, col) in enumerate(zip(CLUSTER_COLUMNS, (c, design, c - 1), strict=True)):
        out.insert(at + i, name, col)
    out["n_clusters"] = out["n_clusters"].astype(int)
    add_display(out, ("effect", "ci_low", "ci_high"))
    for mask, why in (
        (one, "their paired queries are all in one cluster"),
        (zero, "a clustered variance of 0"),
    ):
        if mask.any():
            warn_groups(
                f"effects(effect={effect!r}, cluster={cluster!r}) gives a NaN variance for "
                f"{{n}} group(s) because of {why} (the effect is kept)",
                table.loc[mask, keys],
                DegenerateWarning,
            )
    out.attrs["cluster"] = cluster
    return out


def clustered_t(
    frame: pd.DataFrame, scores: pd.DataFrame, cluster: str, alternative: str, alpha: float
) -> pd.DataFrame:
    """compare(test="t", cluster=...): the t-test's columns from the clustered SE of d."""
    from scipy import stats as sps

    values = per_query_scores(scores, cluster)
    keys = ["metric", "treatment", "control", "task"]
    for key in ("task", "metric", "system"):
        values[key] = values[key].astype(str)
    pairs = frame[keys].astype(str)
    pairs["row"] = np.arange(len(frame))
    left = values.rename(columns={"system": "treatment", "value": "x_t"})
    right = values.rename(columns={"system": "control", "value": "x_c"}).drop(columns="cluster")
    d = pairs.merge(left, on=["metric", "treatment", "task"]).merge(
        right, on=["metric", "control", "task", "query"]
    )
    d["d"] = d["x_t"] - d["x_c"]
    st = cluster_se(d, ["row"], value="d").set_index("row").reindex(np.arange(len(frame)))
    se, dof = st["se"].to_numpy(), (st["n_clusters"] - 1).to_numpy(dtype=float)
    diff = frame["diff"].to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        t_stat = np.where(se > 0, diff / se, np.nan)
        crit = critical_value(sps.t(dof), alpha, alternative)
        p = p_value(t_stat, sps.t(dof), alternative)
        low, high = open_side(diff - crit * se, diff + crit * se, alternative, -np.inf, np.inf)
    defined = frame["statistic"].notna().to_numpy()  # groups the naive t-test could test
    one = defined & (st["n_clusters"].to_numpy() < 2)
    # the rule of effects(cluster=): a clustered variance of 0 up to rounding is no estimate
    zero = defined & ~one & clustered_variance_is_zero(se**2, st["se_naive"].to_numpy() ** 2)
    for mask, why in (
        (one, "whose paired queries are all in one cluster"),
        (
            zero,
            "because of a clustered variance of 0 (the clusters' deviations "
            "cancel although the differences vary)",
        ),
    ):
        if mask.any():
            warn_groups(
                f"compare(test='t', cluster={cluster!r}) gives NaN for {{n}} group(s) {why}",
                frame.loc[mask, keys],
                DegenerateWarning,
            )
    ok = defined & ~zero
    nan = np.full(len(frame), np.nan)
    frame = frame.assign(
        statistic=np.where(ok, t_stat, np.nan),
        p_value=np.where(ok, p, np.nan),
        ci_low=np.where(zero, nan, low),
        ci_high=np.where(zero, nan, high),
        moe=np.where(zero, nan, crit * se),
        se=np.where(zero, nan, se),
        df=dof,
        n_clusters=st["n_clusters"].to_numpy(),
        design_effect=np.where(zero, nan, st["design_effect"].to_numpy()),
    )
    return frame

"""Prediction-powered inference: a mean (or a paired difference) from many judge labels and
a few gold ones, without trusting the judge.

For each task, metric and system, the items split into a labelled set L (gold labels y and
the judge's ŷ; n items) and an unlabelled set U (the judge's ŷ alone; N items), disjoint as
in Angelopoulos et al. (2023). The estimate

    θ̂_λ = mean_U(λ ŷ) + mean_L(y − λ ŷ)

is unbiased for any λ (the gold slice rectifies the judge's error); λ = 1 is PPI, λ = 0
the gold labels alone ("classical"), and PPI++ (Angelopoulos, Duchi & Zrnic 2023) tunes
λ̂ = clip(cov(y, ŷ)_L / ((1 + n/N) var(ŷ)_{L∪U}), 0, 1), which is never much worse than
either. Its variance is the sum of squared influences, ψ_i = λ(ŷ_i − mean_U λ ŷ)/N on U and
((y_i − λ ŷ_i) − mean_L(y − λ ŷ))/n on L, as ppi_py computes it (ddof 0, a normal
interval); with ``cluster=`` the variance is the delete-one-cluster jackknife's (each
cluster left out in turn, λ re-estimated, from the sums of the other clusters; a t
interval on C − 1 df), which counts the correlation of a cluster's labelled and unlabelled
items and the estimation of λ from few gold labels. With ``control=`` the same is done on the per-item paired differences
of two systems (gold − gold, judge − judge): an effects table for :func:`metaeval.pool`.

References
----------
Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I., & Zrnic, T. (2023).
Prediction-powered inference. *Science*, 382(6671), 669–674.
Angelopoulos, A. N., Duchi, J. C., & Zrnic, T. (2023). PPI++: Efficient
prediction-powered inference. arXiv:2311.01453.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._options import PPI_ESTIMATORS, PPIEstimator, literal_signature
from ..engines import any_frame
from ..errors import (
    PairingWarning,
    SchemaError,
    check_alpha,
    check_option,
    excerpt,
    quote_list,
    warn_groups,
)
from ..schema import REPLICATE
from ._units import JUDGE, check_labels, judges_with_gold

__all__ = ["ppi"]


@any_frame
@literal_signature
def ppi(
    scores: pd.DataFrame,
    gold: str = "human",
    judge: str | None = None,
    control: str | None = None,
    *,
    estimator: PPIEstimator = "ppi++",
    cluster: str | None = None,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Means (or paired differences) from a judge's labels rectified by a gold slice.

    Parameters
    ----------
    scores : pandas.DataFrame
        Labels with a ``judge`` column (see :func:`metaeval.agreement`): the judge's on
        every item, the gold judge's on a subset (a random sample of the items).
    gold : str, default "human"
        The judge whose labels are the truth.
    judge : str, optional
        The judge whose labels fill in the rest (default: the only other judge).
    control : str, optional
        A system: then every other system's paired difference from it (treatment −
        control, gold and judge labels alike), an effects table.
    estimator : {"ppi++", "ppi", "classical", "judge"}, default "ppi++"
        PPI++ (the tuned λ), PPI (λ = 1), the gold labels alone, or the judge's labels
        alone on every item (no correction: what is reported without a gold slice), to be
        shown side by side.
    cluster : str, optional
        A column shared by related queries: cluster-robust variances (the
        delete-one-cluster jackknife) and t intervals on (clusters − 1) df.
    alpha : float, default 0.05
        1 − the confidence level.

    Returns
    -------
    pandas.DataFrame
        Per task, metric and system (with ``control``: per task, metric, treatment
        and control, ``effect`` and ``variance`` for :func:`metaeval.pool`):
        ``mean`` (or ``effect``), ``se``, ``ci_low, ci_high``, ``n_gold`` (items in
        L), ``n_judge`` (items in U), ``lambda``, ``ess_gain`` (the classical variance
        over this one: how many times the gold slice's worth the judge adds),
        ``estimator``, ``df`` (NaN: normal).

    Examples
    --------
    >>> import metaeval, pandas as pd
    >>> labels = pd.DataFrame({
    ...     "task": "qa", "metric": "correct", "system": "m1",
    ...     "query": [f"q{i}" for i in range(8)] + ["q0", "q1", "q2", "q3"],
    ...     "judge": ["gpt"] * 8 + ["human"] * 4,
    ...     "value": [1, 1, 0, 1, 1, 0, 1, 1] + [1, 1, 0, 0]})
    >>> metaeval.ppi(labels, estimator="ppi")[["mean", "n_gold", "n_judge", "lambda"]]
       mean  n_gold  n_judge  lambda
    0   0.5       4        4     1.0
    """
    check_option("estimator", estimator, PPI_ESTIMATORS)
    alpha = check_alpha(alpha)
    table = check_labels(scores, None, cluster, what="ppi")
    if REPLICATE in table.columns:
        raise SchemaError(
            f"ppi() takes one label per judge and item, but the table has a {REPLICATE!r} "
            "column (repeated runs): average each item's replicates first, or keep one run."
        )
    present = judges_with_gold(table, gold)
    others = [j for j in present if j != str(gold)]
    if judge is None:
        if len(others) != 1:
            raise SchemaError(
                f"ppi() rectifies one judge's labels: name it with judge= (the table's "
                f"judges besides gold are {quote_list(others)})."
            )
        judge = others[0]
    if str(judge) not in others:
        raise SchemaError(
            f"The judge {excerpt(judge)} has no label; the other judges are {quote_list(others)}."
        )
    items = _items(table, str(gold), str(judge), cluster)
    keys = ["task", "metric", "system"]
    if control is not None:
        items, keys = _paired(items, str(control))
    out = _estimate(items, keys, estimator, alpha, cluster is not None)
    out = _in_table_order(out, table, keys)
    if control is not None:
        out = out.rename(columns={"mean": "effect"})
        out.insert(out.columns.get_loc("se") + 1, "variance", out["se"] ** 2)
    out.attrs.update(
        gold=str(gold),
        judge=str(judge),
        estimator=estimator,
        alpha=alpha,
        cluster=cluster,
        control=control,
    )
    return out


def _in_table_order(out: pd.DataFrame, table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``out``'s rows in the order their task, metric and systems first appear in the
    table (a categorical's own order), as every metaeval table."""
    rank = []
    for key in keys:
        column = "system" if key in ("treatment", "control") else key
        values = table[column]
        order = (
            list(values.cat.categories)
            if isinstance(values.dtype, pd.CategoricalDtype)
            else list(pd.unique(values))
        )
        position = {v: i for i, v in enumerate(order)}
        rank.append(out[key].map(position))
    at = np.lexsort(rank[::-1])
    return out.iloc[at].reset_index(drop=True)


def _items(table: pd.DataFrame, gold: str, judge: str, cluster: str | None) -> pd.DataFrame:
    """One row per (task, metric, system, query): ``y`` (gold, NaN where absent), ``h``
    (the judge's), the cluster; items the judge did not label are refused."""
    keys = ["task", "metric", "system", "query"]
    own = table[table[JUDGE] == judge]
    wide = own[[*keys, "value", *([cluster] if cluster else [])]].rename(columns={"value": "h"})
    gold_rows = table[table[JUDGE] == gold][[*keys, "value"]].rename(columns={"value": "y"})
    merged = wide.merge(gold_rows, on=keys, how="outer", indicator=True)
    orphan = merged["_merge"] == "right_only"
    if orphan.any():
        first = merged[orphan].iloc[0]
        raise SchemaError(
            f"{int(orphan.sum())} item(s) have a gold label but none from the judge "
            f"{excerpt(judge)} (first: task {excerpt(first['task'])}, query "
            f"{excerpt(first['query'])}); PPI needs the judge's label on every item."
        )
    groups = merged.groupby(["task", "metric", "system"], observed=True)["y"].count()
    if (groups == 0).any():
        task, metric, system = groups[groups == 0].index[0]
        raise SchemaError(
            f"The gold judge {excerpt(gold)} labelled no item of task {excerpt(task)} "
            f"(metric {excerpt(metric)}, system {excerpt(system)}): nothing rectifies the "
            "judge there."
        )
    return merged.drop(columns="_merge")


def _paired(items: pd.DataFrame, control: str) -> tuple[pd.DataFrame, list[str]]:
    """Each treatment's per-item differences from the control, on the items both have:
    gold differences where gold labelled both."""
    systems = items["system"].astype(str)
    if control not in set(systems):
        raise SchemaError(
            f"control {excerpt(control)} has no item; the systems are "
            f"{quote_list(list(pd.unique(systems)))}."
        )
    base = items[systems == control].drop(columns="system")
    rest = items[systems != control].rename(columns={"system": "treatment"})
    on = ["task", "metric", "query"]
    cluster = [c for c in items.columns if c not in (*on, "system", "y", "h")]
    pair = rest.merge(base, on=on, how="outer", suffixes=("", "_c"), indicator=True)
    lone = pair["_merge"] != "both"
    if lone.any():
        warn_groups(
            "{n} (task, metric, treatment) group(s) have items only one of the pair has; "
            "the differences use the items both have",
            pair.loc[lone, ["task", "metric", "treatment"]].dropna().drop_duplicates(),
            PairingWarning,
        )
    pair = pair[~lone]
    out = pair[["task", "metric", "treatment", "query", *cluster]].assign(
        control=control, y=pair["y"] - pair["y_c"], h=pair["h"] - pair["h_c"]
    )
    return out, ["task", "metric", "treatment", "control"]


def _estimate(
    items: pd.DataFrame, keys: list[str], estimator: str, alpha: float, clustered: bool
) -> pd.DataFrame:
    """Every group's estimate, se and interval, from sums over its items (bincounts)."""
    from scipy import stats

    code, groups = pd.factorize(pd.MultiIndex.from_frame(items[keys].astype(object)))
    n_groups = len(groups)
    y, h = items["y"].to_numpy(float), items["h"].to_numpy(float)
    lab = np.isfinite(y)

    def total(x: np.ndarray, where: np.ndarray) -> np.ndarray:
        return np.bincount(code[where], weights=x[where], minlength=n_groups)

    n = total(np.ones(len(y)), lab)
    big_n = total(np.ones(len(y)), ~lab)
    everyone = np.ones(len(y), dtype=bool)
    y0 = np.where(lab, y, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        my, mh_l, mh_u = total(y0, lab) / n, total(h, lab) / n, total(h, ~lab) / big_n
        mh = total(h, everyone) / (n + big_n)
        cov = total((y0 - my[code]) * (h - mh_l[code]), lab) / n  # ddof 0, labelled
        var_h = total((h - mh[code]) ** 2, everyone) / (n + big_n - 1)  # ddof 1, all
        tuned = np.clip(cov / ((1 + n / big_n) * var_h), 0.0, 1.0)
        tuned = np.where(big_n > 0, tuned, 0.0)  # no unlabelled item: the gold labels
    lam = {"ppi++": tuned, "ppi": np.ones(n_groups), "classical": np.zeros(n_groups)}
    if estimator == "judge":
        estimate, psi = mh, (h - mh[code]) / (n + big_n)[code]
        lam_used = np.full(n_groups, np.nan)
    else:
        lam_used = lam[estimator]
        estimate, psi = _rectified(lam_used, code, lab, y0, h, my, mh_l, mh_u, n, big_n)
    _, classical_psi = _rectified(np.zeros(n_groups), code, lab, y0, h, my, mh_l, mh_u, n, big_n)
    if clustered:  # the delete-one-cluster jackknife, λ re-estimated without each cluster
        cluster_of = _cluster_codes(items, keys)
        variance, df = _jackknife(estimator, code, cluster_of, n_groups, lab, y0, h)
        classical_var, _ = _jackknife("classical", code, cluster_of, n_groups, lab, y0, h)
    else:
        variance, df = _variance(psi, code, n_groups, None)
        classical_var, _ = _variance(classical_psi, code, n_groups, None)
    se = np.sqrt(variance)
    with np.errstate(invalid="ignore"):
        crit = stats.t.isf(alpha / 2, df) if clustered else stats.norm.isf(alpha / 2)
    out = groups.to_frame(index=False)
    out.columns = keys
    with np.errstate(invalid="ignore", divide="ignore"):  # 0/0 where both variances are 0
        gain = classical_var / variance
    out = out.assign(
        mean=estimate,
        se=se,
        ci_low=estimate - crit * se,
        ci_high=estimate + crit * se,
        n_gold=n.astype(int),
        n_judge=big_n.astype(int),
        **{"lambda": lam_used},
        ess_gain=gain,
        estimator=estimator,
        df=df if clustered else np.full(n_groups, np.nan),
    )
    return out


def _rectified(lam, code, lab, y0, h, my, mh_l, mh_u, n, big_n):  # noqa: ANN001, ANN202
    """θ̂_λ per group and every item's influence on it."""
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = np.where(big_n > 0, lam * mh_u, 0.0) + my - lam * mh_l
        resid = y0 - lam[code] * h - (my - lam * mh_l)[code]
        psi = np.where(
            lab, resid / n[code], lam[code] * (h - np.nan_to_num(mh_u)[code]) / big_n[code]
        )
    return estimate, psi


def _cluster_codes(items: pd.DataFrame, keys: list[str]) -> np.ndarray:
    cluster = [c for c in items.columns if c not in (*keys, "query", "y", "h", "system")]
    cols = [*keys, cluster[0]] if cluster else keys
    return pd.factorize(pd.MultiIndex.from_frame(items[cols].astype(object)))[0]


def _theta(estimator: str, s: np.ndarray) -> np.ndarray:
    """The estimate from the sums (…, 8): n, Σy, Σŷ_L, Σyŷ, Σŷ_L², N, Σŷ_U, Σŷ_U²."""
    n, sy, sh, syh, shh, big_n, shu, shhu = np.moveaxis(s, -1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        if estimator == "judge":
            return (sh + shu) / (n + big_n)
        if estimator == "classical":
            return sy / n
        lam = np.ones(n.shape)
        if estimator == "ppi++":
            cov = syh / n - sy * sh / n**2
            total, m = sh + shu, n + big_n
            var_h = (shh + shhu - total**2 / m) / (m - 1)
            lam = np.where(big_n > 0, np.clip(cov / ((1 + n / big_n) * var_h), 0.0, 1.0), 0.0)
        return np.where(big_n > 0, lam * shu / big_n, 0.0) + sy / n - lam * sh / n


def _jackknife(
    estimator: str,
    code: np.ndarray,
    cluster: np.ndarray,
    n_groups: int,
    lab: np.ndarray,
    y0: np.ndarray,
    h: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(C − 1)/C Σ_c (θ̂_(−c) − mean θ̂_(−c))² per group, each θ̂_(−c) from the group's
    sums less cluster c's (its λ re-estimated), and C − 1 df."""
    u = ~lab
    terms = np.column_stack([lab, y0, lab * h, y0 * h, lab * h**2, u, u * h, u * h**2]).astype(
        float
    )
    n_clusters = int(cluster.max()) + 1
    per_cluster = np.stack(
        [np.bincount(cluster, weights=terms[:, k], minlength=n_clusters) for k in range(8)],
        axis=-1,
    )  # a loop over the 8 sums, not over clusters or groups
    group_of = np.zeros(n_clusters, dtype=np.int64)
    group_of[cluster] = code
    totals = np.stack(
        [np.bincount(group_of, weights=per_cluster[:, k], minlength=n_groups) for k in range(8)],
        axis=-1,
    )
    left_out = _theta(estimator, totals[group_of] - per_cluster)
    c = np.bincount(group_of, minlength=n_groups).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(group_of, weights=left_out, minlength=n_groups) / c
        spread = np.bincount(group_of, weights=(left_out - mean[group_of]) ** 2, minlength=n_groups)
        return (c - 1) / c * spread, c - 1


def _variance(
    psi: np.ndarray, code: np.ndarray, n_groups: int, cluster: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Σ ψ² per group, or with clusters C/(C − 1) Σ_c (Σ_{i∈c} ψ_i)² and C − 1 df."""
    if cluster is None:
        return np.bincount(code, weights=psi**2, minlength=n_groups), np.full(n_groups, np.inf)
    sums = np.bincount(cluster, weights=psi)
    group_of = np.zeros(len(sums), dtype=np.int64)
    group_of[cluster] = code
    c = np.bincount(group_of, minlength=n_groups).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = c / (c - 1) * np.bincount(group_of, weights=sums**2, minlength=n_groups)
    return variance, c - 1

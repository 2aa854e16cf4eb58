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
from ._units import JUDGE, check_labels, judges_with_gold, one_per_query

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
    strata: str | None = None,
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
    strata : str, optional
        A column (one value per query) of the strata the gold slice was drawn in, at a
        different rate in each (hard questions labelled more often, say): the stratified
        estimate Σ_h W_h θ̂_h, each stratum's PPI estimate θ̂_h weighted by its share W_h
        of the group's items (known: every item has the judge's label), its variance
        Σ_h W_h² var_h, and PPI++'s λ one per group, its power tuning applied to that
        variance: Σ W_h² cov_h/n_h / Σ W_h² (1/n_h + 1/N_h) var_h(ŷ) (with one stratum,
        PPI++'s own). A stratum without gold labels is refused; one
        gold-labelled throughout enters with its gold mean.
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
    design = [] if strata is None else [strata]
    table = check_labels(scores, None, cluster, what="ppi", columns=design)
    if strata is not None:
        one_per_query(table, strata, "strata")
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
    items = _items(table, str(gold), str(judge), {"cluster": cluster, "stratum": strata})
    keys = ["task", "metric", "system"]
    if control is not None:
        items, keys = _paired(items, str(control))
    out = _estimate(items, keys, estimator, alpha)
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
        strata=strata,
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


def _items(
    table: pd.DataFrame, gold: str, judge: str, design: dict[str, str | None]
) -> pd.DataFrame:
    """One row per (task, metric, system, query): ``y`` (gold, NaN where absent), ``h``
    (the judge's), and the ``design`` columns given (``cluster``, ``stratum``)
    under those names; items the judge did not label are refused."""
    keys = ["task", "metric", "system", "query"]
    own = table[table[JUDGE] == judge]
    named = {column: role for role, column in design.items() if column is not None}
    wide = own[[*keys, "value"]].assign(**{role: own[c] for c, role in named.items()})
    wide = wide.rename(columns={"value": "h"})
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
    design = [c for c in ("cluster", "stratum") if c in items.columns]
    pair = rest.merge(
        base[[*on, "y", "h"]], on=on, how="outer", suffixes=("", "_c"), indicator=True
    )
    lone = pair["_merge"] != "both"
    if lone.any():
        warn_groups(
            "{n} (task, metric, treatment) group(s) have items only one of the pair has; "
            "the differences use the items both have",
            pair.loc[lone, ["task", "metric", "treatment"]].dropna().drop_duplicates(),
            PairingWarning,
        )
    pair = pair[~lone]
    out = pair[["task", "metric", "treatment", "query", *design]].assign(
        control=control, y=pair["y"] - pair["y_c"], h=pair["h"] - pair["h_c"]
    )
    return out, ["task", "metric", "treatment", "control"]


def _strata(items: pd.DataFrame, keys: list[str], code: np.ndarray) -> tuple[np.ndarray, int]:
    """Each item's stratum as a position 0 … H − 1 within its group, and H (1 without
    strata); a stratum without gold labels is refused."""
    if "stratum" not in items.columns:
        return np.zeros(len(items), dtype=np.int64), 1
    cell, cells = pd.factorize(pd.MultiIndex.from_frame(items[[*keys, "stratum"]].astype(object)))
    group_of = np.zeros(len(cells), dtype=np.int64)
    group_of[cell] = code
    gold = np.bincount(cell, weights=items["y"].notna().to_numpy(float), minlength=len(cells))
    if (gold == 0).any():
        where = dict(zip([*keys, "stratum"], cells[int(np.argmax(gold == 0))], strict=True))
        raise SchemaError(
            f"The stratum {excerpt(where['stratum'])} of task {excerpt(where['task'])} "
            f"({excerpt({k: where[k] for k in keys[1:]})}) has no gold label, and "
            f"stratified PPI rectifies each stratum by its own gold items "
            f"({int((gold == 0).sum())} such stratum(s)): label some, or merge the stratum "
            "with another."
        )
    order = np.argsort(group_of, kind="stable")
    start = np.searchsorted(group_of[order], group_of[order])
    position = np.empty(len(cells), dtype=np.int64)
    position[order] = np.arange(len(cells)) - start
    return position[cell], int(position.max()) + 1


def _estimate(items: pd.DataFrame, keys: list[str], estimator: str, alpha: float) -> pd.DataFrame:
    """Every group's estimate, se and interval, from sums of its items' terms per stratum
    (bincounts)."""
    from scipy import stats

    code, groups = pd.factorize(pd.MultiIndex.from_frame(items[keys].astype(object)))
    n_groups = len(groups)
    position, width = _strata(items, keys, code)
    y, h = items["y"].to_numpy(float), items["h"].to_numpy(float)
    lab = np.isfinite(y)
    terms = _terms(lab, np.where(lab, y, 0.0), h)
    sums = _sums(code * width + position, terms, n_groups * width).reshape(n_groups, width, -1)
    estimate, variance, lam = _solve(estimator, sums)
    _, classical_var, _ = _solve("classical", sums)
    clustered = "cluster" in items.columns
    if clustered:  # the delete-one-cluster jackknife, λ re-estimated without each cluster
        of = pd.MultiIndex.from_frame(items[[*keys, "cluster"]].astype(object))
        cluster = pd.factorize(of)[0]
        variance, df = _jackknife(estimator, code, cluster, position, width, terms)
        classical_var, _ = _jackknife("classical", code, cluster, position, width, terms)
    se = np.sqrt(variance)
    with np.errstate(invalid="ignore"):
        crit = stats.t.isf(alpha / 2, df) if clustered else stats.norm.isf(alpha / 2)
    out = groups.to_frame(index=False)
    out.columns = keys
    with np.errstate(invalid="ignore", divide="ignore"):  # 0/0 where both variances are 0
        gain = classical_var / variance
    total = sums.sum(axis=1)
    return out.assign(
        mean=estimate,
        se=se,
        ci_low=estimate - crit * se,
        ci_high=estimate + crit * se,
        n_gold=total[:, 0].astype(int),
        n_judge=total[:, 6].astype(int),
        **{"lambda": lam},
        ess_gain=gain,
        estimator=estimator,
        df=df if clustered else np.full(n_groups, np.nan),
    )


def _terms(lab: np.ndarray, y0: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Each item's terms, whose sums over a stratum's (or a cluster's) items give every
    estimate and its variance: on the gold slice L 1, y, ŷ, yŷ, ŷ², y²; on the rest U 1,
    ŷ, ŷ²."""
    u = ~lab
    columns = [lab, y0, lab * h, y0 * h, lab * h**2, y0**2, u, u * h, u * h**2]
    return np.column_stack(columns).astype(float)


def _sums(code: np.ndarray, terms: np.ndarray, size: int) -> np.ndarray:
    """The terms summed per ``code`` (a loop over the 9 terms, not over groups)."""
    return np.stack(
        [np.bincount(code, weights=terms[:, k], minlength=size) for k in range(terms.shape[1])],
        axis=-1,
    )


def _solve(estimator: str, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The estimate, its (i.i.d.) variance and λ from the sums (…, H, 9) of :func:`_terms`
    per stratum (H = 1 without strata).

    Per stratum h with n_h gold items and N_h others: θ̂_h = mean_L(y) + λ (mean_U(ŷ) −
    mean_L(ŷ)), var_h = var_U(λŷ)/N_h + var_L(y − λŷ)/n_h (ddof 0, as ppi_py); the group's
    estimate Σ W_h θ̂_h and variance Σ W_h² var_h, W_h the stratum's share of the items.
    PPI++'s λ, its power tuning applied to that variance, is Σ W_h² cov_h/n_h /
    Σ W_h² (1/n_h + 1/N_h) var_h(ŷ) (cov on L with ddof 0, var(ŷ) on L ∪ U with ddof 1),
    clipped to [0, 1]: with one
    stratum, Angelopoulos, Duchi & Zrnic's cov/((1 + n/N) var). A stratum without
    unlabelled items enters with its gold mean; with none at all, λ = 0."""
    n, sy, shl, syh, shl2, sy2, big_n, shu, shu2 = np.moveaxis(s, -1, 0)
    m = n + big_n
    with np.errstate(invalid="ignore", divide="ignore"):
        share = m / m.sum(axis=-1, keepdims=True)
        if estimator == "judge":
            mean = (shl + shu) / m
            var = (shl2 + shu2 - (shl + shu) ** 2 / m) / m**2
            total = _combine(share, mean), _combine(share**2, var)
            return total[0], total[1], np.full(total[0].shape, np.nan)
        some = big_n > 0
        my, mhl = sy / n, shl / n
        mhu = np.where(some, shu / big_n, 0.0)
        lam = np.where(some.any(axis=-1), 1.0, 0.0)
        if estimator == "classical":
            lam = np.zeros(lam.shape)
        elif estimator == "ppi++":
            cov = syh / n - my * mhl
            var_h = (shl2 + shu2 - (shl + shu) ** 2 / m) / (m - 1)
            num = _combine(share**2, np.where(some, cov / n, 0.0))
            den = _combine(share**2, np.where(some, (1 / n + 1 / big_n) * var_h, 0.0))
            lam = np.where(den > 0, np.clip(num / den, 0.0, 1.0), 0.0)
        lam_h = lam[..., None] * some
        theta = my + lam_h * (mhu - mhl)
        imputed = np.where(some, lam_h**2 * (shu2 / big_n - mhu**2) / big_n, 0.0)
        r1, r2 = sy - lam_h * shl, sy2 - 2 * lam_h * syh + lam_h**2 * shl2
        rectifier = (r2 / n - (r1 / n) ** 2) / n
        var = np.maximum(imputed, 0.0) + np.maximum(rectifier, 0.0)
    return _combine(share, theta), _combine(share**2, var), lam


def _combine(weight: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Σ_h weight_h x_h over the strata axis, strata without items (weight 0) left out."""
    return np.where(weight > 0, weight * x, 0.0).sum(axis=-1)


def _jackknife(
    estimator: str,
    code: np.ndarray,
    cluster: np.ndarray,
    position: np.ndarray,
    width: int,
    terms: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(C − 1)/C Σ_c (θ̂_(−c) − mean θ̂_(−c))² per group, each θ̂_(−c) from the group's
    sums per stratum less cluster c's (its λ re-estimated), and C − 1 df."""
    n_groups = int(code.max()) + 1
    n_clusters = int(cluster.max()) + 1
    per_cluster = _sums(cluster * width + position, terms, n_clusters * width)
    per_cluster = per_cluster.reshape(n_clusters, width, -1)
    group_of = np.zeros(n_clusters, dtype=np.int64)
    group_of[cluster] = code
    totals = _sums(group_of, per_cluster.reshape(n_clusters, -1), n_groups)
    totals = totals.reshape(n_groups, width, -1)
    left_out = _solve(estimator, totals[group_of] - per_cluster)[0]
    c = np.bincount(group_of, minlength=n_groups).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(group_of, weights=left_out, minlength=n_groups) / c
        spread = np.bincount(group_of, weights=(left_out - mean[group_of]) ** 2, minlength=n_groups)
        return (c - 1) / c * spread, c - 1

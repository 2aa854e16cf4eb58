"""Means of every system on every task: t, ANOVA-based, binomial and clustered intervals.

Each system's mean over its own queries with its own t interval (the harnesses'
standard error), the two-way ANOVA's residual-based display of Sakai (2018, §3), the
binomial intervals of 0/1 scores (Wilson, Clopper–Pearson; :func:`wilson_interval`
also gives McNemar's Newcombe interval in :func:`metaeval.compare`) and the
cluster-robust interval (:mod:`metaeval.paired.clusters`).

References
----------
Sakai, T. (2018). *Laboratory Experiments in Information Retrieval*. Springer.
doi:10.1007/978-981-13-1199-4
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._options import MEANS_INTERVALS, MeansInterval, literal_signature
from ..engines import any_frame, route
from ..errors import (
    DegenerateWarning,
    OptionError,
    SchemaError,
    check_alpha,
    check_option,
    excerpt,
    warn_groups,
)
from ..schema import REPLICATE
from . import pushdown
from ._layout import Layout, layout, per_task_sum
from .alternatives import critical_value
from .anova import TwoWay, lazy_two_way, sums_names
from .clusters import cluster_ids, cluster_se, clustered_variance_is_zero, per_query_scores
from .replicates import REPLICATES_AVERAGED, add_item_variance, has_replicates
from .sufficient import statistics_of

__all__ = ["means", "check_binary", "wilson_interval"]


def _lazy_means(scores: Any, *, interval: str, alpha: float, cluster: str | None) -> pd.DataFrame:
    """:func:`means` of a lazy table (a :class:`~metaeval.engines.LazyTable`) with
    ``interval="t"`` or ``"anova"``, no clusters and no replicates (:func:`means` routes the
    others: ``cluster`` is None), from sums computed in its engine
    (:mod:`metaeval.paired.pushdown`)."""
    if interval == "anova":
        sums, names, two = lazy_two_way(scores)
    else:  # each system on its own queries: no two-way sums needed
        none = np.zeros(0, dtype=int)
        sums, two = pushdown.compute(scores, none, none), None
        names = sums_names(sums)
    own_n = sums.count.astype(float)
    stats_x = sums.own - own_n * sums.d  # each system's own queries, at its shift
    stats_xx = sums.sq - 2 * sums.d * sums.own + own_n * sums.d**2
    return t_means(names, two, sums.count, stats_x, stats_xx, alpha)


def _checked(scores: Any, options: dict[str, Any]) -> dict[str, Any]:
    """:func:`means`' options checked before a lazy table is read."""
    check_option("interval", options["interval"], MEANS_INTERVALS)
    return dict(options, alpha=check_alpha(options["alpha"]))


def _cluster_checked(scores: Any, options: dict[str, Any]) -> None:
    """A ``cluster`` that is not a column of a lazy table: the in-memory error."""
    cluster = options["cluster"]
    if cluster is not None and cluster not in scores.columns:
        cluster_ids(pd.DataFrame(columns=scores.columns), cluster)


@any_frame(lazy=True)
@route(
    check=_checked,
    collect=lambda scores, o: o["interval"] not in ("t", "anova"),  # binomial intervals
    # clusters and replicates: per-query work, in memory, a task at a time
    per_task=lambda scores, o: o["cluster"] is not None or REPLICATE in scores.columns,
    columns=lambda scores, o: (o["cluster"], REPLICATE),
    pieces=_cluster_checked,
    engine=_lazy_means,  # t and ANOVA intervals from sums computed in the engine
)
@literal_signature
def means(
    scores: pd.DataFrame,
    *,
    interval: MeansInterval = "t",
    alpha: float = 0.05,
    cluster: str | None = None,
) -> pd.DataFrame:
    """Mean score of every system on every task and metric, with its margin of error.

    By default (``interval="t"``) each system's mean and interval are its own: mean ∓
    t_{α/2, n−1}·s/√n over its queries, s the sample SD (ddof = 1), as lm-eval's
    ``mean_stderr`` and Inspect's ``stderr()`` report it.

    ``interval="anova"`` gives instead Sakai's (2018, §3) display for comparing the
    systems of a task (3 or more): the means over the queries every system has, the
    margin t_{α/2, φ}·√(V_E/n) from the two-way ANOVA's residual variance V_E,
    φ = (k − 1)(n − 1) — the noise of *differences*, not of one system's mean. With
    ``cluster=`` the standard error is the cluster-robust one (Miller 2024, App. A, as
    Inspect computes it) and the interval t_{α/2, C−1}·SE over C clusters. The formulas
    and when to use which: :ref:`tests-means`.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table: ``task, query, system, metric, value``.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation; a lazy one is computed in its engine (see the Notes of
        :func:`metaeval.effects`).
    interval : {"t", "anova", "wilson", "clopper_pearson"}, default "t"
        The interval. ``"t"``, ``"anova"``: as above. For 0/1 scores (per-query accuracy)
        the binomial intervals of each system's share of successes: ``"wilson"``
        (Wilson's score interval) and ``"clopper_pearson"`` (the exact beta interval),
        which never collapse to a point at 0% or 100%. Both are asymmetric: ``se`` and ``moe`` are NaN, and ``variance_from``
        is the ``interval`` name. Scores other than 0 and 1 raise
        :class:`~metaeval.SchemaError` naming the group and the value.
    alpha : float, default 0.05
        The intervals have level 1 − alpha.
    cluster : str, optional
        A column of ``scores`` with the cluster of each query (constant within a
        query across systems and metrics): clustered standard errors.

    Returns
    -------
    pandas.DataFrame
        ``task, metric, system, n, mean, se, moe, ci_low, ci_high,
        variance_from`` (``"system"``: the system's own SD; ``"cluster"``; ``"anova"``:
        the ANOVA's residual variance; or for a binomial ``interval`` its name); ``se`` is
        the standard error the interval uses. With ``cluster=`` also
        ``n_clusters`` (C) and ``design_effect`` = SE²_clustered / SE²_naive
        (the naive one s²/n; NaN for s = 0). Rows by metric, then task, then system,
        each in the table's order (a categorical's categories, else sorted), as
        in :func:`metaeval.effects`.

        With a ``replicate`` column (epochs, seeds) each system's scores are averaged per
        item first, so the item is the unit of the interval (Miller 2024, §3), and
        ``replicates`` (R), ``var_within`` (an item's variance over its R scores) and
        ``var_between`` (of the items' true means) split the variance
        (:ref:`llm-seeds`); ``attrs["replicates"]`` says so.

    Raises
    ------
    metaeval.SchemaError
        ``cluster`` is not a column, or a query has no cluster id or several.
    metaeval.OptionError
        ``cluster=`` and a task with one cluster; ``cluster=`` with an ``interval`` other
        than ``"t"``.

    Warns
    -----
    metaeval.PairingWarning
        ``interval="anova"``: naming the (task, metric) groups with 3 or more systems whose
        queries missing for some system were left out.
    metaeval.DegenerateWarning
        Naming the groups whose margin of error is NaN: (task, metric, system)
        groups with 1 query (``interval="anova"``: (task, metric) groups with 3 or more
        systems and fewer than 2 complete queries); with ``cluster=``, groups whose
        queries are all in one cluster or whose clustered variance is 0 although the
        scores vary (the rule of :func:`metaeval.effects`).

    References
    ----------
    Sakai, T. (2018). *Laboratory Experiments in Information Retrieval*. Springer.
    doi:10.1007/978-981-13-1199-4
    Miller, E. (2024). Adding error bars to evals: A statistical approach to language
    model evaluations. arXiv:2411.00640.
    Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
    inference. *JASA*, 22(158), 209–212. doi:10.1080/01621459.1927.10502953
    Clopper, C. J., & Pearson, E. S. (1934). The use of confidence or fiducial limits
    illustrated in the case of the binomial. *Biometrika*, 26(4), 404–413.
    doi:10.1093/biomet/26.4.404

    Examples
    --------
    >>> import metaeval
    >>> m = metaeval.load_example().meta.means()
    >>> m.query("task == 'iris' and metric == 'accuracy'")[
    ...     ["system", "n", "mean", "se", "ci_low", "ci_high", "variance_from"]].round(3)
                     system    n   mean     se  ci_low  ci_high variance_from
    10    gradient_boosting  150  0.933  0.020   0.893    0.974        system
    11                  knn  150  0.953  0.017   0.919    0.987        system
    12  logistic_regression  150  0.960  0.016   0.928    0.992        system
    13          naive_bayes  150  0.960  0.016   0.928    0.992        system
    14        random_forest  150  0.940  0.019   0.902    0.978        system

    The two-way ANOVA's residual-based margins, for comparing the five systems (one
    V_E for all of them):

    >>> a = metaeval.load_example().meta.means(interval="anova")
    >>> a.query("task == 'iris' and metric == 'accuracy'")[
    ...     ["system", "mean", "se", "ci_low", "ci_high", "variance_from"]].round(3)
                     system   mean     se  ci_low  ci_high variance_from
    10    gradient_boosting  0.933  0.009   0.915    0.952         anova
    11                  knn  0.953  0.009   0.935    0.972         anova
    12  logistic_regression  0.960  0.009   0.942    0.978         anova
    13          naive_bayes  0.960  0.009   0.942    0.978         anova
    14        random_forest  0.940  0.009   0.922    0.958         anova

    Wilson intervals of a system that is right on every query of 3 (and so
    never a point at 100%):

    >>> import pandas as pd
    >>> hits = pd.DataFrame({"task": "t", "query": ["q1", "q2", "q3"], "system": "s",
    ...                      "metric": "accuracy", "value": 1.0})
    >>> metaeval.means(hits, interval="wilson")[["n", "mean", "ci_low", "ci_high"]].round(3)
       n  mean  ci_low  ci_high
    0  3   1.0   0.439      1.0
    """
    table = _means_table(scores, interval, alpha, cluster)
    if has_replicates(scores):
        table = add_item_variance(table, scores)
        table.attrs["replicates"] = REPLICATES_AVERAGED
    return table


def _means_table(scores: pd.DataFrame, interval: str, alpha: float, cluster: str | None):
    """:func:`means` before the replicates' columns."""
    check_option("interval", interval, MEANS_INTERVALS)
    alpha = check_alpha(alpha)
    if interval != "t" and cluster is not None:
        raise OptionError(
            f"cluster= works with interval='t' only, but interval={interval!r} was passed with "
            f"cluster={cluster!r}; use interval='t' or cluster=None."
        )
    if interval not in ("t", "anova"):
        check_binary(scores, f"means(interval={interval!r})")
        return _binomial_means(scores, interval, alpha)
    lay = layout(scores)
    if cluster is not None:
        return _clustered_means(scores, lay, alpha, cluster)
    n_tasks = len(lay.tasks)
    # each system's own queries: the layout's values are 0 where it has none
    stats_x = per_task_sum(lay.values, lay.block_task, n_tasks)
    stats_xx = per_task_sum(lay.values * lay.values, lay.block_task, n_tasks)
    two = TwoWay(lay) if interval == "anova" else None
    return t_means(lay, two, lay.counts, stats_x, stats_xx, alpha)


def t_means(
    lay: Any,
    two: TwoWay | None,
    own_n: np.ndarray,
    stats_x: np.ndarray,
    stats_xx: np.ndarray,
    alpha: float,
) -> pd.DataFrame:
    """:func:`means` with ``interval="t"`` (``two`` None: each system's own interval) or
    ``interval="anova"`` (``two``, the two-way layout: the residual-based interval on tasks with
    3 or more systems) from each system's own count and sums of shifted scores
    (``(metric, system, task)``); ``lay`` has the names, ``shift`` and ``scale`` of a
    :class:`Layout` (a lazy table's are computed in its engine, see
    :mod:`metaeval.paired.pushdown`)."""
    from scipy import stats as sps

    own_n = np.asarray(own_n, dtype=float)
    present = own_n > 0
    if two is not None:
        two.check(
            "means(interval='anova')", among=two.k >= 3
        )  # the groups on complete queries only
        use_anova = (two.k >= 3)[:, None, :] & two.present
    else:
        use_anova = np.zeros(present.shape, dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = lay.scale[:, None, :]  # the sums are of scores divided by it
        own_mean = lay.shift + stats_x / own_n * unit
        own_var = np.maximum(stats_xx - stats_x**2 / own_n, 0.0) / (own_n - 1)
        n, mean, df, var = own_n, own_mean, own_n - 1, own_var
        if two is not None:
            n = np.where(use_anova, two.q[:, None, :], own_n)
            mean = np.where(use_anova, two.means, own_mean)
            df = np.where(use_anova, two.df_residual[:, None, :], own_n - 1)
            var = np.where(use_anova, two.ms_residual[:, None, :], own_var)
        se = np.sqrt(var / n) * unit
        moe = critical_value(sps.t(df), alpha, "two-sided") * se
    alone = present & ~use_anova & (own_n < 2)
    if alone.any():
        t, m, s = np.nonzero(alone.transpose(2, 0, 1))  # groups listed task by task
        which = "fewer than 3 systems on the task and 1 query" if two is not None else "1 query"
        warn_groups(
            f"means() gives a NaN margin of error for {{n}} (task, metric, system) group(s) "
            f"with {which}",
            pd.DataFrame(
                {"task": lay.tasks[t], "metric": lay.metrics[m], "system": lay.systems[s]}
            ),
            DegenerateWarning,
        )
    return _means_frame(
        lay,
        present,
        n=n,
        mean=mean,
        se=se,
        moe=moe,
        ci_low=mean - moe,
        ci_high=mean + moe,
        variance_from=np.where(use_anova, "anova", "system"),
    )


def _means_frame(lay: Layout, present: np.ndarray, **columns: Any) -> pd.DataFrame:
    """The table of :func:`means`: a row per present (metric, system, task) cell of the
    ``(metric, system, task)`` arrays in ``columns`` (``n`` as integers; a scalar column is
    repeated), ordered by metric, task, system."""
    m, t, s = np.nonzero(present.transpose(0, 2, 1))  # by metric, task, system
    frame = {
        "task": lay.tasks[t].astype(str),
        "metric": lay.metrics[m].astype(str),
        "system": lay.systems[s].astype(str),
    }
    for name, values in columns.items():
        values = np.asarray(values)
        frame[name] = np.full(len(m), values[()]) if values.ndim == 0 else values[m, s, t]
    frame["n"] = frame["n"].astype(int)
    return pd.DataFrame(frame)


def wilson_interval(successes: Any, n: Any, z: Any) -> tuple[Any, Any]:
    """Wilson's score interval of a binomial proportion, elementwise.

    (x + z²/2)/(n + z²) ∓ z/(n + z²)·√(x(n − x)/n + z²/4), with ``z`` the
    normal quantile of the level (z_{α/2} for a two-sided 1 − alpha interval).
    """
    x, n = np.asarray(successes, dtype=float), np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        centre = (x + z**2 / 2) / (n + z**2)
        half = z / (n + z**2) * np.sqrt(x * (n - x) / n + z**2 / 4)
    return centre - half, centre + half


def check_binary(scores: pd.DataFrame, where: str) -> None:
    """Raise :class:`~metaeval.SchemaError` unless every score is 0 or 1.

    With a ``replicate`` column the scores are first averaged per query (as the
    tests see them), so replicates that disagree on a query are named too.
    """
    keys = [k for k in ("task", "query", "system", "metric") if k in scores.columns]
    values = scores.assign(_replicates=1)
    if has_replicates(scores):
        grouped = scores.groupby(keys, observed=True, sort=False)["value"]
        values = grouped.agg(["mean", "size"]).reset_index()
        values = values.rename(columns={"mean": "value", "size": "_replicates"})
    value = pd.to_numeric(values["value"], errors="coerce")
    bad = ~value.isin([0, 1])
    if bad.any():
        cases = values.loc[bad, keys + ["value"]]
        first = {k: cases[k].iloc[0] for k in [*keys, "value"]}  # each column's own type
        group = ", ".join(f"{k}={excerpt(first[k])}" for k in keys)
        n = int(values.loc[bad, "_replicates"].iloc[0])  # a mean of n replicates' scores
        averaged = f" (averaged over its {n} replicates)" if n > 1 else ""
        raise SchemaError(
            f"{where} needs binary scores (0 or 1) in column 'value', but {len(cases)} "
            f"row(s) are not, e.g. {excerpt(first['value'])} at {group}{averaged}. Use it on "
            "0/1 scores such as per-query accuracy, or choose another option.",
            pd.DataFrame(
                {
                    "problem": "not 0 or 1",
                    "column": "value",
                    "row": cases.index,
                    "value": cases["value"].to_numpy(),
                }
            ),
        )


def _binomial_means(scores: pd.DataFrame, interval: str, alpha: float) -> pd.DataFrame:
    """:func:`means` with Wilson or Clopper–Pearson intervals, each system on its own queries."""
    from scipy import stats as sps

    lay = layout(scores)
    ds = statistics_of(lay, warn=False)
    own_n = np.einsum(
        "tmss->mst", ds["n"].transpose("task", "metric", "treatment", "control").values
    )
    stats_x = np.einsum(
        "tmss->mst", ds["sum_x"].transpose("task", "metric", "treatment", "control").values
    )
    present = own_n > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        # the sums are of (score − shift)/scale; the scores are 0/1, so x is a whole number
        x = np.round(lay.shift * own_n + stats_x * lay.scale[:, None, :])
        mean = x / own_n
        if interval == "wilson":
            low, high = wilson_interval(x, own_n, critical_value(sps.norm, alpha, "two-sided"))
        else:
            low = np.where(x > 0, sps.beta.ppf(alpha / 2, x, own_n - x + 1), 0.0)
            high = np.where(x < own_n, sps.beta.isf(alpha / 2, x + 1, own_n - x), 1.0)
    return _means_frame(
        lay,
        present,
        n=own_n,
        mean=mean,
        se=np.nan,
        moe=np.nan,
        ci_low=low,
        ci_high=high,
        variance_from=interval,
    )


def _clustered_means(scores: pd.DataFrame, lay: Layout, alpha: float, cluster: str):
    """means(cluster=...): each system on its own queries, clustered SE, t on C − 1 df."""
    from scipy import stats as sps

    values = per_query_scores(scores, cluster)
    for key in ("task", "metric", "system"):
        values[key] = values[key].astype(str)
    out = cluster_se(values, ["task", "metric", "system"])
    # rows by metric, task, system in the table's order, as without cluster=
    order = {
        key: {str(v): i for i, v in enumerate(getattr(lay, key + "s"))}
        for key in ("metric", "task", "system")
    }
    rank = [out[key].map(order[key]) for key in ("metric", "task", "system")]
    out = out.iloc[np.lexsort(rank[::-1])].reset_index(drop=True)
    one = (out["n_clusters"] < 2).to_numpy()
    zero = ~one & clustered_variance_is_zero(out["se"] ** 2, out["se_naive"] ** 2)
    for mask, why in (
        (one, "whose queries are all in one cluster"),
        (
            zero,
            "because of a clustered variance of 0 (the clusters' "
            "deviations cancel although the scores vary)",
        ),
    ):
        if mask.any():
            warn_groups(
                f"means(cluster={cluster!r}) gives a NaN standard error for {{n}} (task, "
                f"metric, system) group(s) {why}",
                out.loc[mask, ["task", "metric", "system"]],
                DegenerateWarning,
            )
    out.loc[zero, ["se", "design_effect"]] = np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        moe = critical_value(sps.t(out["n_clusters"] - 1), alpha, "two-sided") * out["se"]
    return pd.DataFrame(
        {
            "task": out["task"],
            "metric": out["metric"],
            "system": out["system"],
            "n": out["n"].astype(int),
            "mean": out["mean"],
            "se": out["se"],
            "moe": moe,
            "ci_low": out["mean"] - moe,
            "ci_high": out["mean"] + moe,
            "variance_from": "cluster",
            "n_clusters": out["n_clusters"],
            "design_effect": out["design_effect"],
        }
    )

"""All systems of a task together: two-way ANOVA, Tukey's HSD and means (systems × queries).

Sakai (2018, ch. 3–5) treats a task's systems and queries as a two-way layout
without replication: the query effect is taken out of the residual variance, so
that system means are compared against the variation that remains. Each
(task, metric) uses the queries every system present on it has (a complete
block design); the others are left out with a warning.

References
----------
Sakai, T. (2018). *Laboratory Experiments in Information Retrieval*. Springer.
doi:10.1007/978-981-13-1199-4
Carterette, B. (2012). Multiple testing in statistical analysis of systems-based
information retrieval experiments. *ACM TOIS*, 30(1). doi:10.1145/2094072.2094076
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from .._options import DEFAULT_RESAMPLES, MEANS_CIS, MeansCI, literal_signature
from ..errors import (
    DegenerateWarning,
    OptionError,
    PairingWarning,
    SchemaError,
    check_alpha,
    check_option,
    check_resamples,
    excerpt,
    format_groups,
    quote_list,
    resolve_seed,
    warn_groups,
)
from ..schema.frames import LazyTable, any_frame
from . import _pushdown
from . import _resampling as rs
from ._layout import BLOCK, Layout, layout, per_task_sum
from .replicates import REPLICATES_AVERAGED, add_item_variance, has_replicates
from .sufficient import ZERO_TOL, statistics_of

__all__ = [
    "anova",
    "tukey",
    "means",
    "TwoWay",
    "check_binary",
    "wilson_interval",
    "clustered_variance_is_zero",
]


# ------------------------------------------------------ two-way layout (ANOVA)
class TwoWay:
    """Systems × queries per (task, metric), on the queries every present system has.

    Arrays are indexed ``[metric, system, task]`` or ``[metric, task]``:
    ``present`` (systems with scores on the task), ``k`` (present systems),
    ``q`` (complete queries), ``means`` (system means on them), the sums of
    squares ``ss_system, ss_query, ss_residual`` and ``ms_residual`` in units
    of ``unit²`` (``unit`` = the layout's scale, 1 but for extreme scores) and
    ``complete[metric, row]``.
    """

    def __init__(self, lay: Layout):
        n_metrics, n_systems, n_rows = lay.values.shape
        n_tasks = len(lay.tasks)
        row_task = np.repeat(lay.block_task, BLOCK)
        self.row_task = row_task
        present: np.ndarray = np.asarray(lay.counts > 0)
        k = present.sum(axis=1)
        present_row = present[:, :, row_task]  # (metric, system, row)
        has = lay.mask.any(axis=1)
        self.complete: np.ndarray = np.asarray((lay.mask | ~present_row).all(axis=1) & has)
        dropped = per_task_sum(has & ~self.complete, lay.block_task, n_tasks)
        w = self.complete[:, None, :] & present_row
        # scores relative to the mean shift of the present systems (keeps sums small)
        ref = (lay.shift * present).sum(axis=1) / np.maximum(k, 1)  # (metric, task)
        offset = (lay.shift - ref[:, None, :]) / lay.scale[:, None, :]  # in the values' units
        x = np.where(w, lay.values + offset[:, :, row_task], 0.0)
        q = per_task_sum(self.complete, lay.block_task, n_tasks).astype(float)
        sys_sum = per_task_sum(x, lay.block_task, n_tasks)  # (metric, system, task)
        row_sum = x.sum(axis=1)  # (metric, row)
        cell_sq = per_task_sum((x * x).sum(axis=1), lay.block_task, n_tasks)
        row_sq = per_task_sum(row_sum**2, lay.block_task, n_tasks)
        self._finish(lay, present, q, dropped, sys_sum, row_sq, cell_sq, ref)

    @classmethod
    def of_sums(
        cls,
        names: Any,
        present: np.ndarray,
        q: np.ndarray,
        dropped: np.ndarray,
        sys_sum: np.ndarray,
        row_sq: np.ndarray,
        cell_sq: np.ndarray,
        ref: np.ndarray,
    ) -> TwoWay:
        """The same from sums computed elsewhere (a lazy table's engine): ``names`` has
        ``tasks, metrics, systems, scale`` as a :class:`Layout` does; the sums are over
        the complete queries of scores minus ``ref`` (metric, task), divided by the scale:
        per system ``sys_sum`` (metric, system, task), of the squared row sums ``row_sq``
        and of the squares ``cell_sq`` (metric, task)."""
        two = cls.__new__(cls)
        two._finish(names, present, q, dropped, sys_sum, row_sq, cell_sq, ref)
        return two

    def _finish(
        self,
        lay: Any,
        present: np.ndarray,
        q: np.ndarray,
        dropped: np.ndarray,
        sys_sum: np.ndarray,
        row_sq: np.ndarray,
        cell_sq: np.ndarray,
        ref: np.ndarray,
    ) -> None:
        self.lay = lay
        self.present = present
        self.k = present.sum(axis=1)
        self.dropped = dropped
        self.unit = lay.scale
        self.q = q
        total = sys_sum.sum(axis=1)
        k = self.k.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            correction = total**2 / (self.q * k)
            self.ss_total = cell_sq - correction
            self.ss_system = (sys_sum**2).sum(axis=1) / self.q - correction
            self.ss_query = row_sq / k - correction
            self.ss_residual = np.maximum(self.ss_total - self.ss_system - self.ss_query, 0.0)
            self.df_residual = (k - 1) * (self.q - 1)
            # a sum of squares on 0 degrees of freedom is 0 exactly (one complete query has
            # no query effect and no residual; one system no system effect): set, not left
            # to the rounding of the sums, which an engine adds in another order (its 1e-17
            # over 0 df would be an infinite mean square where pandas has 0/0 = NaN)
            data = (self.q > 0) & (k > 0)
            self.ss_system = np.where(data & (k == 1), 0.0, self.ss_system)
            self.ss_query = np.where(data & (self.q == 1), 0.0, self.ss_query)
            # and a residual below ZERO_TOL of the sum of squares it came from is rounding
            # (systems that differ by the same amount on every query): 0 in every engine
            rounding = self.ss_residual <= ZERO_TOL * cell_sq
            self.ss_residual = np.where(
                data & ((self.df_residual == 0) | rounding), 0.0, self.ss_residual
            )
            self.ms_residual = self.ss_residual / self.df_residual
            self.means = np.where(
                self.present,
                sys_sum / self.q[:, None, :] * self.unit[:, None, :] + ref[:, None, :],
                np.nan,
            )

    def frame_index(self) -> tuple[np.ndarray, np.ndarray]:
        """(metric, task) index arrays of the groups with data."""
        m, t = np.nonzero(self.k > 0)
        return m, t

    def check(self, what: str, minimum: int = 3, among: np.ndarray | None = None) -> None:
        """An OptionError for groups with fewer than ``minimum`` systems; warnings for
        queries left out and for fewer than 2 complete queries. ``among``: the
        ``[metric, task]`` groups to check (default: every group with scores)."""
        lay = self.lay
        among = self.k > 0 if among is None else among
        few = among & (self.k < minimum)
        if few.any():
            t, m = np.nonzero(few.T)  # groups listed task by task
            groups = pd.DataFrame(
                {"task": lay.tasks[t], "metric": lay.metrics[m], "systems": self.k[m, t]}
            )
            raise OptionError(
                f"{what} needs at least {minimum} systems on a task, but these (task, metric) "
                f"groups have fewer:\n{format_groups(groups)}\nUse compare() for two systems."
            )
        dropped = np.where(among, self.dropped, 0)
        if dropped.any():
            t, m = np.nonzero(dropped.T)
            groups = pd.DataFrame(
                {
                    "task": lay.tasks[t],
                    "metric": lay.metrics[m],
                    "queries_left_out": dropped[m, t],
                    "queries_used": self.q[m, t].astype(int),
                }
            )
            warn_groups(
                f"{what} uses the queries every system has; queries missing for some system were "
                "left out of {n} (task, metric) group(s)",
                groups,
                PairingWarning,
            )
        exact = among & (self.q >= 2) & (self.ss_residual == 0)
        if exact.any():
            t, m = np.nonzero(exact.T)
            warn_groups(
                f"{what}: the residual mean square is 0 in {{n}} (task, metric) group(s): "
                "every query moves every system by the same amount (exactly additive scores, "
                "copies shifted by a constant, say), so there is no noise to test against: F "
                "and Tukey's q are infinite (p = 0) and ANOVA margins 0",
                pd.DataFrame({"task": lay.tasks[t], "metric": lay.metrics[m]}),
                DegenerateWarning,
            )
        small = among & (self.q < 2)
        if small.any():
            t, m = np.nonzero(small.T)
            warn_groups(
                f"{what} gives NaN for {{n}} (task, metric) group(s) with fewer than 2 "
                "complete queries",
                pd.DataFrame({"task": lay.tasks[t], "metric": lay.metrics[m]}),
                DegenerateWarning,
            )


@any_frame(lazy=True)
def anova(scores: pd.DataFrame) -> pd.DataFrame:
    """Two-way ANOVA without replication (systems × queries) per task and metric.

    Each (task, metric) uses the queries that every system present on the task
    has (a complete block design); the others are left out with a warning.

    Returns
    -------
    pandas.DataFrame
        Three rows per (task, metric), ``source`` = ``system``, ``query``,
        ``residual``, with ``ss, df, ms, f, p_value`` (F tests of the system
        and query effects against the residual mean square), and ``n_systems,
        n_queries``.

    Raises
    ------
    metaeval.OptionError
        When a (task, metric) has fewer than 3 systems (use :func:`compare`).

    Warns
    -----
    metaeval.PairingWarning
        Queries some system lacks, left out (naming the groups).
    metaeval.DegenerateWarning
        Groups with fewer than 2 complete queries (NaN), and groups whose residual is
        0 (exactly additive scores: F infinite, p 0, kept as computed).

    Examples
    --------
    >>> import metaeval
    >>> a = metaeval.load_example().meta.anova()
    >>> a.query("task == 'iris' and metric == 'accuracy'")[["source", "df", "f", "p_value"]].round(4)
         source     df        f  p_value
    6    system    4.0   1.6572   0.1584
    7     query  149.0  14.1935   0.0000
    8  residual  596.0      NaN      NaN
    """
    from scipy import stats as sps

    if isinstance(scores, LazyTable) and "replicate" in scores.columns:
        # replicates are averaged per query first, in memory, a task at a time
        return _pushdown.per_task(scores, anova, {}, pairs=None, columns=["replicate"])
    two = _two_way(scores)  # a lazy table's sums computed in its engine
    two.check("ANOVA")
    m, t = two.frame_index()
    k, q = two.k[m, t].astype(float), two.q[m, t]
    ss = np.stack([two.ss_system[m, t], two.ss_query[m, t], two.ss_residual[m, t]], axis=1)
    df = np.stack([k - 1, q - 1, (k - 1) * (q - 1)], axis=1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ms = ss / df
        f = ms[:, :2] / ms[:, 2:]
        p = sps.f.sf(f, df[:, :2], df[:, 2:])
        unit2 = (two.unit[m, t] ** 2)[:, None]  # sums of squares in the scores' units
        ss, ms = ss * unit2, ms * unit2
    f = np.c_[f, np.full(len(m), np.nan)]
    p = np.c_[p, np.full(len(m), np.nan)]
    lay = two.lay
    return pd.DataFrame(
        {
            "task": np.repeat(lay.tasks[t].astype(str), 3),
            "metric": np.repeat(lay.metrics[m].astype(str), 3),
            "source": np.tile(["system", "query", "residual"], len(m)),
            "ss": ss.ravel(),
            "df": df.ravel(),
            "ms": ms.ravel(),
            "f": f.ravel(),
            "p_value": p.ravel(),
            "n_systems": np.repeat(k.astype(int), 3),
            "n_queries": np.repeat(q.astype(int), 3),
        }
    )


@any_frame(lazy=True)
@literal_signature
def means(
    scores: pd.DataFrame, *, ci: MeansCI = "t", alpha: float = 0.05, cluster: str | None = None
) -> pd.DataFrame:
    """Mean score of every system on every task and metric, with its margin of error.

    By default (``ci="t"``) each system's mean is over its own queries and its
    interval is its own: the standard error s/√n from the sample SD s (ddof = 1),
    as the evaluation harnesses report it (lm-eval's ``mean_stderr``, Inspect's
    ``stderr()``), and the interval mean ∓ t_{α/2, n−1}·s/√n. A system's
    interval does not depend on which other systems are in the table.

    ``ci="anova"`` gives instead Sakai's (2018, §3) display for comparing the
    systems of a task: with 3 or more systems on a task the means are over the
    queries every system has and the margin of error uses the residual variance
    V_E of the two-way ANOVA (systems × queries): t_{α/2, φ}·√(V_E/n),
    φ = (k − 1)(n − 1); ``variance_from`` is ``"anova"``. V_E is the variance
    of the system-by-query interaction, the noise of *differences* between
    systems once the queries' difficulty is taken out (the SE of a difference
    of two means is √(2V_E/n), as :func:`tukey` uses); it is not the
    uncertainty of one system's mean, and it changes when a system is added or
    removed. With fewer than 3 systems on a task ``ci="anova"`` gives each
    system's own interval (``variance_from`` ``"system"``).

    With ``cluster=`` (a column holding a cluster id per query, e.g. the
    passage several questions share) each system's mean is over its own
    queries and its standard error is the cluster-robust one (Miller 2024,
    App. A, with the finite-cluster factor, as Inspect computes it)

        SE = √(C/(C − 1) · Σ_c (Σ_{i∈c} (x_i − x̄))²) / n,

    with C clusters, and the interval is t_{α/2, C−1}·SE.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table: ``task, query, system, metric, value``.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation; a lazy one is computed in its engine (see the Notes of
        :func:`metaeval.effects`).
    ci : {"t", "anova", "wilson", "clopper_pearson"}, default "t"
        The interval. ``"t"``, ``"anova"``: as above. For 0/1 scores (per-query accuracy)
        the binomial intervals of the share of successes x among each system's
        own n queries: ``"wilson"``, Wilson's score interval
        (x + z²/2)/(n + z²) ∓ z/(n + z²)·√(x(n − x)/n + z²/4), z = z_{α/2};
        ``"clopper_pearson"``, the exact interval from the beta quantiles
        B(α/2; x, n − x + 1) and B(1 − α/2; x + 1, n − x) (0 and 1 at x = 0
        and x = n). Neither collapses to a point at 0% or 100%, unlike the t
        interval. Both are asymmetric: ``se`` and ``moe`` are NaN, and ``variance_from``
        is the ``ci`` name. Scores other than 0 and 1 raise
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
        the ANOVA's residual variance; or for a binomial ``ci`` its name); ``se`` is
        the standard error the interval uses. With ``cluster=`` also
        ``n_clusters`` (C) and ``design_effect`` = SE²_clustered / SE²_naive,
        the naive one s²/n from the system's own variance (NaN for s = 0):
        how many times the variance of the mean exceeds the one of n
        independent queries. Rows by metric, then task, then system,
        each in the table's order (a categorical's categories, else sorted), as
        in :func:`metaeval.effects`.

        With a ``replicate`` column (epochs: the model answered each item R
        times; or seeds) each system's scores are averaged per item first, so
        the item is the unit of the interval (Miller 2024, §3), and three
        columns split the variance of an item's score: ``replicates`` (R, the
        most replicates an item has), ``var_within`` (the mean over items of
        the sample variance of an item's R scores: how much the model's
        answers to one item vary) and ``var_between`` (the variance of the
        items' true means, max(0, s²(x̄_i) − var_within/R)). The squared
        standard error of an item-mean interval is then about (var_between +
        var_within/R)/n: more epochs shrink only the second part.
        ``attrs["replicates"]`` says the scores were averaged.

    Raises
    ------
    metaeval.SchemaError
        ``cluster`` is not a column, or a query has no cluster id or several.
    metaeval.OptionError
        ``cluster=`` and a task with one cluster; ``cluster=`` with a ``ci`` other
        than ``"t"``.

    Warns
    -----
    metaeval.PairingWarning
        ``ci="anova"``: naming the (task, metric) groups with 3 or more systems whose
        queries missing for some system were left out.
    metaeval.DegenerateWarning
        Naming the groups whose margin of error is NaN: (task, metric, system)
        groups with 1 query (``ci="anova"``: (task, metric) groups with 3 or more
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

    >>> a = metaeval.load_example().meta.means(ci="anova")
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
    >>> metaeval.means(hits, ci="wilson")[["n", "mean", "ci_low", "ci_high"]].round(3)
       n  mean  ci_low  ci_high
    0  3   1.0   0.439      1.0
    """
    if isinstance(scores, LazyTable):
        return _lazy_means(scores, ci, alpha, cluster)
    table = _means_table(scores, ci, alpha, cluster)
    if has_replicates(scores):
        table = add_item_variance(table, scores)
        table.attrs["replicates"] = REPLICATES_AVERAGED
    return table


def _lazy_two_way(scores: LazyTable) -> tuple[Any, SimpleNamespace, TwoWay]:
    """The two-way layout of a lazy table from sums computed in its engine, with the sums
    and the names (tasks, metrics, systems, shift, scale) it was built from."""
    none = np.zeros(0, dtype=int)
    sums = _pushdown.compute(scores, none, none, anova=True)
    survey = sums.survey
    present = sums.count > 0
    k = present.sum(axis=1)
    unit = sums.scale  # (metric, task)
    ref = (sums.shift * present).sum(axis=1) / np.maximum(k, 1)  # (metric, task)
    # the engine's sums are of y = (score − a')/unit (a' its provisional shift): the ANOVA's
    # of x = (score − ref)/unit = y + e, e = (a' − ref)/unit, on the complete queries
    e = np.where(present, (sums.start - ref[:, None, :]) / unit[:, None, :], 0.0)
    q = sums.n_shared
    sys_sum = sums.shy + q[:, None, :] * e
    big_e, row = e.sum(axis=1), sums.shy.sum(axis=1)
    row_sq = sums.row_sq + 2 * big_e * row + q * big_e**2
    cell_sq = sums.cell_sq + 2 * (e * sums.shy).sum(axis=1) + q * (e**2).sum(axis=1)
    names = SimpleNamespace(
        tasks=survey.tasks,
        metrics=survey.metrics,
        systems=survey.systems,
        shift=sums.shift,
        scale=sums.scale,
    )
    dropped = np.rint(sums.rows - q).astype(np.int64)
    return sums, names, TwoWay.of_sums(names, present, q, dropped, sys_sum, row_sq, cell_sq, ref)


def _two_way(scores: Any) -> TwoWay:
    """:class:`TwoWay` of a scores table: laid out in memory, or from a lazy table's sums."""
    if isinstance(scores, LazyTable):
        return _lazy_two_way(scores)[2]
    return TwoWay(layout(scores))


def _lazy_means(scores: LazyTable, ci: str, alpha: float, cluster: str | None) -> pd.DataFrame:
    """:func:`means` of a lazy table: with ``ci="t"`` or ``"anova"`` from sums computed in
    its engine; clusters and replicates task by task in memory; binomial intervals in
    memory."""
    check_option("ci", ci, MEANS_CIS)
    alpha = check_alpha(alpha)
    if ci not in ("t", "anova"):
        return means(scores.collect(), ci=ci, alpha=alpha, cluster=cluster)
    if cluster is not None or "replicate" in scores.columns:
        if cluster is not None and cluster not in scores.columns:  # the in-memory error
            cluster_ids(pd.DataFrame(columns=scores.columns), cluster)
        extra = [c for c in (cluster, "replicate") if c is not None and c in scores.columns]
        return _pushdown.per_task(
            scores, means, {"ci": ci, "alpha": alpha, "cluster": cluster}, pairs=None, columns=extra
        )
    if ci == "anova":
        sums, names, two = _lazy_two_way(scores)
    else:  # each system on its own queries: no two-way sums needed
        none = np.zeros(0, dtype=int)
        sums, two = _pushdown.compute(scores, none, none), None
        survey = sums.survey
        names = SimpleNamespace(
            tasks=survey.tasks,
            metrics=survey.metrics,
            systems=survey.systems,
            shift=sums.shift,
            scale=sums.scale,
        )
    own_n = sums.count.astype(float)
    stats_x = sums.own - own_n * sums.d  # each system's own queries, at its shift
    stats_xx = sums.sq - 2 * sums.d * sums.own + own_n * sums.d**2
    return t_means(names, two, sums.count, stats_x, stats_xx, alpha)


def _means_table(scores: pd.DataFrame, ci: str, alpha: float, cluster: str | None):
    """:func:`means` before the replicates' columns."""
    check_option("ci", ci, MEANS_CIS)
    alpha = check_alpha(alpha)
    if ci != "t" and cluster is not None:
        raise OptionError(
            f"cluster= works with ci='t' only, but ci={ci!r} was passed with "
            f"cluster={cluster!r}; use ci='t' or cluster=None."
        )
    if ci not in ("t", "anova"):
        check_binary(scores, f"means(ci={ci!r})")
        return _binomial_means(scores, ci, alpha)
    lay = layout(scores)
    if cluster is not None:
        return _clustered_means(scores, lay, alpha, cluster)
    n_tasks = len(lay.tasks)
    # each system's own queries: the layout's values are 0 where it has none
    stats_x = per_task_sum(lay.values, lay.block_task, n_tasks)
    stats_xx = per_task_sum(lay.values * lay.values, lay.block_task, n_tasks)
    two = TwoWay(lay) if ci == "anova" else None
    return t_means(lay, two, lay.counts, stats_x, stats_xx, alpha)


def t_means(
    lay: Any,
    two: TwoWay | None,
    own_n: np.ndarray,
    stats_x: np.ndarray,
    stats_xx: np.ndarray,
    alpha: float,
) -> pd.DataFrame:
    """:func:`means` with ``ci="t"`` (``two`` None: each system's own interval) or
    ``ci="anova"`` (``two``, the two-way layout: the residual-based interval on tasks with
    3 or more systems) from each system's own count and sums of shifted scores
    (``(metric, system, task)``); ``lay`` has the names, ``shift`` and ``scale`` of a
    :class:`Layout` (a lazy table's are computed in its engine, see
    :mod:`metaeval.paired._pushdown`)."""
    from scipy import stats as sps

    own_n = np.asarray(own_n, dtype=float)
    present = own_n > 0
    if two is not None:
        two.check("means(ci='anova')", among=two.k >= 3)  # the groups on complete queries only
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
        moe = sps.t.isf(alpha / 2, df) * se
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


def _binomial_means(scores: pd.DataFrame, ci: str, alpha: float) -> pd.DataFrame:
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
        if ci == "wilson":
            low, high = wilson_interval(x, own_n, sps.norm.isf(alpha / 2))
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
        variance_from=ci,
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
        moe = sps.t.isf(alpha / 2, out["n_clusters"] - 1) * out["se"]
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


@any_frame(lazy=True)
def tukey(
    scores: pd.DataFrame,
    *,
    randomized: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = None,
    alpha: float = 0.05,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Tukey's HSD for every pair of systems per task and metric, in the paired design.

    The variance is the residual mean square V_E of the two-way ANOVA (systems ×
    queries, on the queries every system has), so the query effect is taken out.
    For systems a, b with means over n queries: q = abs(m_a − m_b) / √(V_E/n),
    p = P(Q > q) for the studentized range with k systems and (k − 1)(n − 1) df,
    and the simultaneous interval (m_a − m_b) ∓ q_{1−α}·√(V_E/n).

    With ``randomized=True``, the randomized Tukey HSD of Carterette (2012):
    each resample permutes the systems' scores within every query; p is the share
    (with the +1 rule) of resamples whose largest minus smallest system mean
    reaches abs(m_a − m_b). Random numbers as in :func:`compare` (same seed, same
    p-values). It needs every system on every complete query of the task.

    Returns
    -------
    pandas.DataFrame
        One row per (task, metric, system pair a < b in the table's system
        order): ``system_a, system_b, diff`` (m_a − m_b), ``effect_size``
        (diff/√V_E), ``statistic`` (q), ``p_value``, ``ci_low, ci_high``
        (simultaneous, from the studentized range), ``n`` (queries), ``test``
        (``"tukey"`` or ``"randomized_tukey"``). ``attrs`` hold ``alpha``,
        ``seed``, ``n_resamples`` and, for a scores table with a ``replicate``
        column (seeds, folds), ``replicates``: each system's scores are averaged
        per query over its replicates first, and the variance between replicates
        is not part of V_E (use :func:`metaeval.effects`, which adds it).
        Rows by metric, then task, then pair, each in the table's order (a
        categorical's categories, else sorted), as in :func:`metaeval.effects`.

    Raises
    ------
    metaeval.OptionError
        When a (task, metric) has fewer than 3 systems.

    Examples
    --------
    >>> import metaeval
    >>> iris = metaeval.load_example().query("task == 'iris'")
    >>> hsd = iris.meta.tukey()
    >>> hsd.query("metric == 'accuracy'")[["system_a", "system_b", "diff", "p_value"]].head(4).round(3)
                system_a             system_b   diff  p_value
    0  gradient_boosting                  knn -0.020    0.561
    1  gradient_boosting  logistic_regression -0.027    0.265
    2  gradient_boosting          naive_bayes -0.027    0.265
    3  gradient_boosting        random_forest -0.007    0.987

    The randomized version (seeded, so the p-values are reproducible):

    >>> rand = iris.meta.tukey(randomized=True, n_resamples=1000, seed=0)
    >>> rand.query("metric == 'accuracy'")[["system_a", "system_b", "p_value"]].head(2).round(3)
                system_a             system_b  p_value
    0  gradient_boosting                  knn    0.754
    1  gradient_boosting  logistic_regression    0.394
    """
    from scipy import stats as sps

    alpha = check_alpha(alpha)
    n_resamples = check_resamples(n_resamples)
    if isinstance(scores, LazyTable) and (randomized or "replicate" in scores.columns):
        kwargs = dict(
            randomized=randomized,
            n_resamples=n_resamples,
            alpha=alpha,
            seed=resolve_seed(seed) if randomized else seed,
            progress=progress,
        )
        return _pushdown.per_task(
            scores,
            tukey,
            kwargs,
            pairs=None,
            columns=[c for c in ("replicate",) if c in scores.columns],
        )
    two = _two_way(scores)  # a lazy table's sums computed in its engine
    lay = two.lay
    two.check("Tukey's HSD")
    n_systems = len(lay.systems)
    a, b = np.triu_indices(n_systems, k=1)
    diff = two.means[:, a, :] - two.means[:, b, :]  # (metric, pairs, task)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = (np.sqrt(two.ms_residual / two.q) * two.unit)[:, None, :]
        stat = np.abs(diff) / scale
        k = np.broadcast_to(two.k[:, None, :].astype(float), diff.shape)
        df = np.broadcast_to(two.df_residual[:, None, :], diff.shape)
        ok = np.isfinite(stat) & (df > 0)
        p = np.full(diff.shape, np.nan)
        p[ok] = sps.studentized_range.sf(stat[ok], k[ok], df[ok])
        crit = np.full(diff.shape, np.nan)
        kd = np.unique(np.c_[k[ok], df[ok]], axis=0)
        for kk, dd in kd:  # one quantile per (systems, df): an integral each
            crit[ok & (k == kk) & (df == dd)] = sps.studentized_range.isf(alpha, kk, dd)
        effect_size = diff / (np.sqrt(two.ms_residual) * two.unit)[:, None, :]
    test = "tukey"
    if randomized:
        seed = resolve_seed(seed)
        p = _randomized_tukey(two, np.abs(diff), n_resamples, seed, progress)
        test = "randomized_tukey"
    keep = two.present[:, a, :] & two.present[:, b, :]
    m, t, pair = np.nonzero(keep.transpose(0, 2, 1))  # by metric, task, pair
    frame = pd.DataFrame(
        {
            "task": lay.tasks[t].astype(str),
            "metric": lay.metrics[m].astype(str),
            "system_a": lay.systems[a[pair]].astype(str),
            "system_b": lay.systems[b[pair]].astype(str),
            "test": test,
            "n": two.q[m, t].astype(int),
            "diff": diff[m, pair, t],
            "effect_size": effect_size[m, pair, t],
            "statistic": stat[m, pair, t],
            "p_value": p[m, pair, t],
            "ci_low": diff[m, pair, t] - crit[m, pair, t] * scale[m, 0, t],
            "ci_high": diff[m, pair, t] + crit[m, pair, t] * scale[m, 0, t],
        }
    )
    frame.attrs.update(
        alpha=alpha,
        seed=seed if randomized else None,
        n_resamples=n_resamples if randomized else None,
    )
    if has_replicates(scores):
        frame.attrs["replicates"] = REPLICATES_AVERAGED
    return frame


def _randomized_tukey(
    two: TwoWay, abs_diff: np.ndarray, n_resamples: int, seed: int, progress
) -> np.ndarray:
    """Carterette's randomized Tukey HSD p-values, ``(metric, pairs, task)``."""
    lay = two.lay
    n_metrics, n_systems, _ = lay.values.shape
    count = np.zeros_like(abs_diff)
    complete_all = np.asarray(two.present.all(axis=1))  # every system on the task
    missing = (two.k > 0) & ~complete_all
    if missing.any():
        m, t = np.nonzero(missing)
        warn_groups(
            "The randomized Tukey HSD needs every system on every task; it gives NaN for",
            pd.DataFrame({"task": lay.tasks[t], "metric": lay.metrics[m]}),
            DegenerateWarning,
        )
    task_names = [str(x) for x in lay.tasks]
    batches = list(rs.task_batches(lay))
    steps = sum(
        len(rs.chunks(n_resamples, len(bt.tasks) * bt.rows.shape[1] * n_systems * 8))
        for bt in batches
    )
    tracker = rs.Progress(steps, "randomized Tukey HSD", progress)
    for batch in batches:
        width = batch.rows.shape[1]
        inside = batch.rows >= 0
        r = np.where(inside, batch.rows, 0)
        task = batch.tasks
        # complete-query scores (metric, tasks, width, systems), 0 elsewhere
        unit = two.unit[:, task]  # (metric, tasks): the values' units
        ref = (lay.shift[:, :, task] / unit[:, None, :])[
            :, :, :, None
        ]  # (metric, systems, tasks, 1)
        x = lay.values[:, :, r] + ref
        use = two.complete[:, r] & inside  # (metric, tasks, width)
        x = np.where(use[:, None], x, 0.0).transpose(0, 2, 3, 1)
        q = two.q[:, task]  # (metric, tasks)
        names = [task_names[i] for i in task]
        for b0, b1 in rs.chunks(n_resamples, len(task) * width * n_systems * 8):
            perm = rs.permutations(
                seed, names, batch.n, width, n_systems, b0, b1
            )  # (tasks, B, width, S)
            shuffled = np.take_along_axis(
                x[:, :, None], perm[None], axis=-1
            )  # (metric, tasks, B, width, S)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = shuffled.sum(axis=3) / q[:, :, None, None]
            spread = mean.max(axis=-1) - mean.min(axis=-1)  # (metric, tasks, B)
            tol = 1e-9 * np.abs(mean).max(axis=-1)
            observed = (abs_diff[:, :, task] / unit[:, None, :])[..., None]
            hit = spread[:, None] >= observed - tol[:, None]  # (metric, pairs, tasks, B)
            count[:, :, task] += hit.sum(axis=-1)
            tracker.step()
    tracker.close()
    p = (1 + count) / (1 + n_resamples)
    return np.where(complete_all[:, None, :] & np.isfinite(abs_diff), p, np.nan)


# ------------------------------------------------------------ clustered errors
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

"""Many systems over many tasks, by ranks: Friedman's test, post-hoc tests, cliques.

Demšar (2006) made this the standard procedure for comparing classifiers over
data sets: rank the systems on every task, test whether the average ranks differ
(Friedman; Iman–Davenport's F), then find which pairs differ (Nemenyi for all
pairs, Holm or Bonferroni–Dunn against a control), and draw it as a
critical-difference diagram. Benavoli, Corani and Mangili (2016) showed that the
mean-rank post-hoc tests depend on which other systems are compared and
recommend the Wilcoxon signed-rank test per pair with Holm's adjustment
(``test="wilcoxon_holm"``).

A system's score on a task is its mean ``value`` over the task's queries (a
table with one row per task and no ``query`` column is taken as it is). Every
metric is analysed on its own, all metrics at once: the per-task scores are a
``(metric, task, system)`` array, ranked along the system axis.

References
----------
Demšar, J. (2006). Statistical comparisons of classifiers over multiple data
sets. *Journal of Machine Learning Research*, 7, 1–30.
Iman, R. L., & Davenport, J. M. (1980). Approximations of the critical region of
the Friedman statistic. *Communications in Statistics – Theory and Methods*,
9(6), 571–595. doi:10.1080/03610928008827904
Benavoli, A., Corani, G., & Mangili, F. (2016). Should we really use post-hoc
tests based on mean-ranks? *Journal of Machine Learning Research*, 17(5), 1–10.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._distributions import studentized_range_sf
from .._multiplicity import adjust_pvalues
from .._options import PosthocTest, literal_signature
from ..engines import any_frame
from ..errors import (
    DegenerateWarning,
    OptionError,
    PairingError,
    check_alpha,
    check_option,
    quote_list,
    warn_groups,
)
from ._aggregate import check_complete, scores_of_metrics, task_means, task_ranks
from .results import POSTHOC_TESTS, FriedmanResult, PosthocResult, clique_runs

__all__ = [
    "POSTHOC_TESTS",
    "TaskScores",
    "task_scores",
    "FriedmanResult",
    "PosthocResult",
    "friedman",
    "posthoc",
    "clique_runs",
]

_CONTROL_TESTS = ("holm", "bonferroni_dunn")


# ----------------------------------------------------------------- per-task scores
@dataclass
class TaskScores:
    """Per-task scores of every metric, ranked: the input of every test here.

    ``x[metric, task, system]`` is the mean value (NaN where absent; tasks in
    sorted order, each mean summed in a fixed order, so that equal data give
    equal numbers whatever the order of the rows, see ``task_means``); ``ranks``
    the average ranks within each (metric, task), 1 = best; ``sys_in`` and
    ``task_in`` mark the systems and tasks of each metric; ``k`` and ``n``
    count them; ``sign`` is +1 where higher is better, −1 where lower is.
    """

    x: np.ndarray
    ranks: np.ndarray
    metrics: pd.Index
    tasks: pd.Index
    systems: pd.Index
    sys_in: np.ndarray
    task_in: np.ndarray
    k: np.ndarray
    n: np.ndarray
    sign: np.ndarray
    directions: dict[str, bool]

    @property
    def mean_ranks(self) -> np.ndarray:
        """Average rank of each (metric, system) over the metric's tasks (NaN if absent)."""
        total = np.nansum(self.ranks, axis=1)
        return np.where(self.sys_in, total / self.n[:, None], np.nan)

    def order(self) -> np.ndarray:
        """Per metric, the systems from the best average rank to the worst (absent last);
        equal average ranks keep the table's order of systems."""
        return np.argsort(np.where(self.sys_in, self.mean_ranks, np.inf), axis=1, kind="stable")


def task_scores(
    scores: pd.DataFrame,
    *,
    metric: str | Sequence[str] | None,
    higher_is_better: bool | Mapping[str, bool],
    caller: str,
) -> TaskScores:
    """The per-task scores of a scores table, checked complete, with their ranks."""
    if isinstance(scores, pd.DataFrame) and "query" not in scores.columns:
        scores = scores.assign(query="all")  # one value per task already: taken as it is
    scores, directions = scores_of_metrics(scores, metric, higher_is_better)
    x, metrics, tasks, systems = task_means(scores)
    metrics, tasks, systems = metrics.astype(str), tasks.astype(str), systems.astype(str)
    sys_in, task_in = check_complete(x, metrics, tasks, systems, caller=caller)
    k, n = sys_in.sum(axis=1), task_in.sum(axis=1)
    few = n < 2
    if few.any():
        raise PairingError(
            f"{caller}() compares systems over tasks and needs at least 2 tasks per metric, but "
            f"the metric(s) {quote_list(list(metrics[few]))} have {quote_list(n[few].tolist())}."
        )
    sign = np.array([1.0 if directions[m] else -1.0 for m in metrics])
    ranks = task_ranks(x, sign)
    return TaskScores(x, ranks, metrics, tasks, systems, sys_in, task_in, k, n, sign, directions)


def _tie_sums(data: TaskScores) -> np.ndarray:
    """Σ (t³ − t) over the groups of tied systems of every task, per metric."""
    from scipy.stats import rankdata

    present = ~np.isnan(data.x)
    key = np.where(present, np.nan_to_num(data.x), np.inf)
    size = rankdata(key, method="max", axis=-1) - rankdata(key, method="min", axis=-1) + 1
    # each member of a group of t adds t² − 1, so a group adds t³ − t
    return np.where(present, size**2 - 1, 0.0).sum(axis=(1, 2))


# ----------------------------------------------------------------- Friedman
@any_frame
def friedman(
    scores: pd.DataFrame,
    *,
    metric: str | Sequence[str] | None = None,
    higher_is_better: bool | Mapping[str, bool] = True,
    correction: bool = True,
) -> FriedmanResult:
    """Friedman's test of equal average ranks over tasks, with Iman–Davenport's F.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table (``task, query, system, metric, value``); a system's
        score on a task is its mean over the task's queries. A table with one
        row per (task, system, metric) may leave out ``query``. Within a
        metric every system needs a score on every task.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    metric : str or list of str, optional
        The metric(s) to test; None tests every metric of the table.
    higher_is_better : bool or mapping of str to bool, default True
        Whether larger values are better (rank 1), for all metrics or per metric.
    correction : bool, default True
        Divide χ² by the correction for tied ranks, as
        :func:`scipy.stats.friedmanchisquare` and R's ``friedman.test`` do;
        False gives Demšar's (2006) formula, which has none.

    Returns
    -------
    FriedmanResult
        ``table``: one row per metric (in the table's order): ``metric``;
        ``n_systems`` (k) and ``n_tasks``; ``chi2``, ``df`` (k − 1) and
        ``p_value`` (χ² distribution); Iman–Davenport's ``f``, ``df1``
        (k − 1), ``df2`` ((k − 1)(N − 1)) and ``f_p_value``; Kendall's
        ``kendall_w``; its ``attrs`` hold ``higher_is_better`` and
        ``correction``. ``ranks``: the average ranks, one row per (metric,
        system), best first, with ``mean_rank`` and ``mean`` (the mean of the
        per-task scores).

    Raises
    ------
    metaeval.SchemaError
        If ``scores`` is not a valid scores table.
    metaeval.OptionError
        An unknown metric, or a ``higher_is_better`` mapping without it.
    metaeval.PairingError
        A system without a score on a task of its metric (listed), fewer than
        2 systems or 2 tasks in a metric.

    Warns
    -----
    metaeval.DegenerateWarning
        For metrics whose every task ties all systems (the statistics are NaN).

    Notes
    -----
    With R_j the average rank of system j over N tasks (1 = best, ties
    averaged) and k systems,

    χ²_F = 12N / (k(k + 1)) · Σ_j (R_j − (k + 1)/2)²,

    divided, with ``correction``, by C = 1 − Σ (t³ − t) / (N k (k² − 1)), the
    sum over the groups of t tied systems of every task. Under the null
    hypothesis χ²_F is χ²-distributed with k − 1 degrees of freedom. Iman and
    Davenport's F_F = (N − 1) χ²_F / (N(k − 1) − χ²_F) follows the F
    distribution with k − 1 and (k − 1)(N − 1) degrees of freedom and is less
    conservative (Demšar 2006, sec. 3.2.2). Kendall's coefficient of
    concordance W = χ²_F / (N(k − 1)) is 0 when the tasks agree on nothing and
    1 when every task ranks the systems alike.

    Examples
    --------
    Demšar's (2006) Table 6: four variants of C4.5 on 14 data sets.

    >>> import metaeval
    >>> from metaeval.ranking import friedman
    >>> auc = metaeval.datasets.load_demsar()
    >>> test = friedman(auc)
    >>> test.table[["n_systems", "n_tasks", "chi2", "p_value", "f", "f_p_value"]].round(4)
       n_systems  n_tasks     chi2  p_value       f  f_p_value
    0          4       14  10.9524    0.012  4.5859     0.0076
    >>> test.ranks[["system", "mean_rank"]].round(3)
          system  mean_rank
    0  C4.5+m+cf      1.929
    1     C4.5+m      2.000
    2    C4.5+cf      2.929
    3       C4.5      3.143

    Demšar's text has χ²_F = 9.28 and F_F = 3.69, without the correction for
    ties, and average ranks 1.964 and 2.893 for C4.5+m+cf and C4.5+cf: his
    ranks come from the unrounded AUCs, which the table's three decimals tie
    on one data set (see :func:`metaeval.datasets.load_demsar`).
    """
    from scipy import stats

    data = task_scores(scores, metric=metric, higher_is_better=higher_is_better, caller="friedman")
    k, n = data.k.astype(float), data.n.astype(float)
    # from the rank sums R_j (multiples of 1/2): Σ (2 R_j − N(k + 1))² is a sum of integers,
    # exact in any order, so equal data give exactly equal statistics whatever the row order
    twice = np.rint(2 * np.nansum(data.ranks, axis=1)).astype(np.int64)
    dev = np.where(data.sys_in, twice - (data.n * (data.k + 1))[:, None], 0)
    chi2 = 3 * (dev**2).sum(axis=1) / (n * k * (k + 1))
    if correction:
        with np.errstate(invalid="ignore", divide="ignore"):
            chi2 = chi2 / (1 - _tie_sums(data) / (n * k * (k**2 - 1)))
    flat = ~np.isfinite(chi2)
    if flat.any():
        chi2 = np.where(flat, np.nan, chi2)
        warn_groups(
            "Every task ties all systems in {n} metric(s); the Friedman statistics are NaN",
            pd.DataFrame({"metric": data.metrics[flat]}),
            DegenerateWarning,
        )
    df1, df2 = k - 1, (k - 1) * (n - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = (n - 1) * chi2 / (n * (k - 1) - chi2)
    table = pd.DataFrame(
        {
            "metric": data.metrics.to_numpy(dtype=object),
            "n_systems": data.k.astype(np.int64),
            "n_tasks": data.n.astype(np.int64),
            "chi2": chi2,
            "df": df1.astype(np.int64),
            "p_value": stats.chi2.sf(chi2, df1),
            "f": f,
            "df1": df1.astype(np.int64),
            "df2": df2.astype(np.int64),
            "f_p_value": stats.f.sf(f, df1, df2),
            "kendall_w": chi2 / (n * (k - 1)),
        }
    )
    table.attrs = {"higher_is_better": data.directions, "correction": correction}
    return FriedmanResult(table, _rank_table(data))


def _rank_table(data: TaskScores) -> pd.DataFrame:
    """(metric, system) rows, best average rank first: ``mean_rank``, ``mean``."""
    order = data.order()
    m_idx = np.repeat(np.arange(len(data.metrics)), data.k)
    s_idx = np.concatenate([order[m, : data.k[m]] for m in range(len(data.metrics))])
    mean = np.nansum(data.x, axis=1) / data.n[:, None]
    return pd.DataFrame(
        {
            "metric": data.metrics[m_idx].to_numpy(dtype=object),
            "system": data.systems[s_idx].to_numpy(dtype=object),
            "mean_rank": data.mean_ranks[m_idx, s_idx],
            "mean": mean[m_idx, s_idx],
        }
    )


# ----------------------------------------------------------------- post-hoc
def _pairs(data: TaskScores, control: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(metric, system_a, system_b) index arrays of the compared pairs.

    All pairs: within each metric, the systems from the best average rank down,
    every pair (i, j), i < j, with a the better ranked. With a control: every
    other system of the metric, best first, as a; the control as b.
    """
    order = data.order()
    n_m, n_s = order.shape
    if control is None:
        i, j = np.triu_indices(n_s, 1)
        keep = j[None, :] < data.k[:, None]  # (metric, pair)
        m, p = np.nonzero(keep)
        return m, order[m, i[p]], order[m, j[p]]
    c = int(data.systems.get_loc(control))
    lacking = ~data.sys_in[:, c]
    if lacking.any():
        raise PairingError(
            f"The control {control!r} is not a system of the metric(s) "
            f"{quote_list(list(data.metrics[lacking]))}."
        )
    pos = np.arange(n_s)[None, :]
    keep = (pos < data.k[:, None]) & (order != c)
    m, q = np.nonzero(keep)
    return m, order[m, q], np.full(len(m), c)


def _signed_ranks(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``d``: W⁺ (average ranks of |d|, zeros dropped), the number n of
    non-zero differences, Σ (t³ − t) over the groups of tied |d|, and whether any tie."""
    a = np.abs(d)
    key = np.where(a == 0, np.inf, a)  # zeros sort last and are not ranked
    order = np.argsort(key, axis=1, kind="stable")
    v = np.take_along_axis(key, order, axis=1)
    n = (a != 0).sum(axis=1)
    width = d.shape[1]
    pos = np.arange(1, width + 1, dtype=float)[None, :]
    same = v[:, 1:] == v[:, :-1]  # infinities (zeros) compare equal but are not ranked
    same &= np.isfinite(v[:, 1:])
    tied = same.any(axis=1)
    rank = np.broadcast_to(pos, v.shape).copy()
    ties = np.zeros(len(d))
    if tied.any():  # average ranks, in the rows that need them
        st = same[tied]
        new = np.ones(st.shape[0:1] + (width,), dtype=bool)
        new[:, 1:] = ~st
        first = np.maximum.accumulate(np.where(new, pos, 0), axis=1)
        end = np.ones_like(new)
        end[:, :-1] = new[:, 1:]
        last = np.minimum.accumulate(np.where(end, pos, width + 1)[:, ::-1], axis=1)[:, ::-1]
        rank[tied] = (first + last) / 2
        size = last - first + 1
        ties[tied] = (size**2 - 1).sum(axis=1)  # a group of t adds t · (t² − 1) = t³ − t
    positive = np.take_along_axis(d, order, axis=1) > 0
    w_plus = np.where(positive, rank, 0.0).sum(axis=1)
    return w_plus, n, ties, tied


def _wilcoxon(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wilcoxon signed-rank statistic and two-sided p-value of every row of ``d``.

    Each row is tested as ``scipy.stats.wilcoxon(row, zero_method="wilcox",
    correction=False)`` would test it alone: the exact null distribution up to
    50 tasks without zero or tied differences, the exact permutation
    distribution up to 13 tasks otherwise, else the normal approximation with
    the tie correction (computed here for all rows at once: W⁺ − n(n + 1)/4 over
    √((n(n + 1)(2n + 1) − Σ(t³ − t)/2) / 24)).
    """
    from scipy import stats

    stat, p = np.full(len(d), np.nan), np.full(len(d), np.nan)
    if len(d) == 0:
        return stat, p
    size = d.shape[1]
    w_plus, n, ties, tied = _signed_ranks(d)
    zeros = n < size
    exact = ~(zeros | tied) if size <= 50 else np.zeros(len(d), dtype=bool)
    small = ~exact & (size <= 13)
    normal = ~(exact | small)
    for rows, method in ((exact, "exact"), (small, stats.PermutationMethod())):
        if rows.any():  # scipy, once per kind of row, vectorized over its rows
            res = stats.wilcoxon(
                d[rows], axis=1, zero_method="wilcox", correction=False, method=method
            )
            stat[rows], p[rows] = res.statistic, res.pvalue
    if normal.any():
        nn = n[normal].astype(float)
        wp = w_plus[normal]
        with np.errstate(invalid="ignore", divide="ignore"):
            se = np.sqrt((nn * (nn + 1) * (2 * nn + 1) - ties[normal] / 2) / 24)
            z = (wp - nn * (nn + 1) / 4) / se
        stat[normal] = np.minimum(wp, nn * (nn + 1) / 2 - wp)
        p[normal] = 2 * stats.norm.sf(np.abs(z))
    return stat, p


@any_frame
@literal_signature
def posthoc(
    scores: pd.DataFrame,
    *,
    test: PosthocTest = "nemenyi",
    control: str | None = None,
    alpha: float = 0.05,
    metric: str | Sequence[str] | None = None,
    higher_is_better: bool | Mapping[str, bool] = True,
) -> PosthocResult:
    """Which systems differ: post-hoc tests after :func:`friedman`, all pairs or vs a control.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table, as for :func:`friedman`.
    test : {"nemenyi", "holm", "bonferroni_dunn", "wilcoxon_holm"}, default "nemenyi"
        ``nemenyi``: every pair, by average ranks (Demšar 2006, sec. 3.2.2);
        ``holm`` and ``bonferroni_dunn``: every system against ``control``, by
        average ranks, with Holm's or Bonferroni's adjustment;
        ``wilcoxon_holm``: Wilcoxon's signed-rank test on the per-task scores
        of each pair, Holm-adjusted over the pairs (every pair, or every
        system against ``control``) — the post-hoc test Benavoli et al. (2016)
        recommend, since it does not depend on the other systems compared.
    control : str, optional
        The control system; required by ``holm`` and ``bonferroni_dunn``,
        optional for ``wilcoxon_holm``; ``nemenyi`` compares all pairs.
    alpha : float, default 0.05
        The level of the ``significant`` and ``cd`` columns, and the default
        level of the result's :meth:`~metaeval.ranking.PosthocResult.cd`,
        :meth:`~metaeval.ranking.PosthocResult.cliques` and :meth:`~metaeval.ranking.PosthocResult.plot`.
    metric, higher_is_better
        As for :func:`friedman`.

    Returns
    -------
    PosthocResult
        ``table``: one row per compared pair, per metric. Within a metric the systems
        come from the best average rank down; all pairs are (a, b) with a
        ranked better, and with a control every other system is a and the
        control b. Columns:

        - ``metric, system_a, system_b``;
        - ``rank_a, rank_b`` (average ranks over the tasks, 1 = best) and
          ``rank_diff`` (rank_a − rank_b);
        - ``statistic``: z = rank_diff / √(k(k + 1) / (6N)) for the rank
          tests, Wilcoxon's W = min(W⁺, W⁻) for ``wilcoxon_holm``;
        - ``p_value`` (unadjusted: 2Φ(−abs(z)), or Wilcoxon's) and
          ``p_adjusted`` (Nemenyi: the studentized range's tail P(Q > √2 abs(z))
          with k systems and infinite degrees of freedom, computed accurately
          down to the smallest p-values; else Holm or Bonferroni over the
          metric's pairs);
        - ``significant`` (p_adjusted < alpha);
        - ``cd``: the critical difference of average ranks, for ``nemenyi``
          (q_α √(k(k + 1) / (6N)), q_α the studentized range's upper α point
          at k and ∞ degrees of freedom, over √2) and ``bonferroni_dunn``
          (z_{1 − α / (2(k − 1))} √(k(k + 1) / (6N))); NaN for the others.

        The table's ``attrs``: ``test, control, alpha, higher_is_better``.
        ``ranks``: the average ranks, as ``FriedmanResult.ranks``;
        ``test``, ``alpha`` and ``control`` as passed. Its
        :meth:`~metaeval.ranking.PosthocResult.cd` and :meth:`~metaeval.ranking.PosthocResult.cliques` give the
        critical difference and the cliques at any level, and
        :meth:`~metaeval.ranking.PosthocResult.plot` draws the critical-difference diagram.

    Raises
    ------
    metaeval.OptionError
        An unknown ``test``; ``holm``/``bonferroni_dunn`` without a
        control; ``nemenyi`` with one.
    metaeval.PairingError
        As :func:`friedman`; a control that is not a system of a metric.

    Notes
    -----
    Rank tests compare average ranks: whether systems A and B differ then
    depends on the other systems in the comparison (Benavoli et al. 2016).
    ``wilcoxon_holm`` compares the per-task scores of A and B only.
    :meth:`metaeval.ranking.PosthocResult.cliques` gives the groups of systems a
    critical-difference diagram joins (:func:`metaeval.plot.critical_difference`).

    Examples
    --------
    >>> import metaeval
    >>> from metaeval.ranking import posthoc
    >>> auc = metaeval.datasets.load_demsar()
    >>> nemenyi = posthoc(auc, test="nemenyi")
    >>> nemenyi.table["cd"].iloc[0].round(3)  # Demšar: CD = 1.25
    np.float64(1.254)
    >>> nemenyi.table[["system_a", "system_b", "rank_diff", "significant"]].head(3)
        system_a system_b  rank_diff  significant
    0  C4.5+m+cf   C4.5+m  -0.071429        False
    1  C4.5+m+cf  C4.5+cf  -1.000000        False
    2  C4.5+m+cf     C4.5  -1.214286        False
    >>> dunn = posthoc(auc, test="bonferroni_dunn", control="C4.5")
    >>> dunn.table["cd"].iloc[0].round(3)  # Demšar: CD = 1.17
    np.float64(1.168)
    """
    from scipy import stats

    check_option("test", test, POSTHOC_TESTS)
    alpha = check_alpha(alpha)
    if test in _CONTROL_TESTS and control is None:
        raise OptionError(
            f"test={test!r} compares every system with a control; pass `control` "
            "(a system name), or use test='nemenyi' for all pairs."
        )
    if test == "nemenyi" and control is not None:
        raise OptionError(
            "test='nemenyi' compares all pairs; against a control use test='holm', "
            "'bonferroni_dunn' or 'wilcoxon_holm'."
        )
    if control is not None and not isinstance(control, str):
        raise OptionError(f"`control` must be one system name (a str), not {control!r}.")
    data = task_scores(scores, metric=metric, higher_is_better=higher_is_better, caller="posthoc")
    if control is not None and control not in data.systems:
        raise PairingError(
            f"The control {control!r} is not a system of the table; the systems are "
            f"{quote_list(list(data.systems))}."
        )
    m, a, b = _pairs(data, control)
    r = data.mean_ranks
    k, n = data.k[m].astype(float), data.n[m].astype(float)
    se = np.sqrt(k * (k + 1) / (6 * n))
    rank_diff = r[m, a] - r[m, b]
    if test == "wilcoxon_holm":
        d = data.x[m, :, a] - data.x[m, :, b]  # (pair, task); tasks of other metrics NaN
        stat, p = np.full(len(m), np.nan), np.full(len(m), np.nan)
        for size in np.unique(data.n[m]):  # one vectorized call per number of tasks
            rows = data.n[m] == size
            cols = data.task_in[m[rows]]
            stat[rows], p[rows] = _wilcoxon(d[rows][cols].reshape(int(rows.sum()), int(size)))
        adjusted = adjust_pvalues(p, "holm", families=m)
        cd = np.full(len(m), np.nan)
    else:
        # z from rank sums, exact multiples of 1/2: pairs at equal distance get equal z
        sums = np.nansum(data.ranks, axis=1)
        stat = (sums[m, a] - sums[m, b]) / n / se
        p = 2 * stats.norm.sf(np.abs(stat))
        if test == "nemenyi":
            adjusted = studentized_range_sf(np.abs(stat) * np.sqrt(2), k, np.inf)
            # the quantile at infinite df: scipy's is quick there (one integral per k)
            ks = np.unique(data.k)
            q = np.atleast_1d(stats.studentized_range.isf(alpha, ks, np.inf)) / np.sqrt(2)
            cd = q[np.searchsorted(ks, data.k[m])] * se
        else:
            adjusted = adjust_pvalues(p, "holm" if test == "holm" else "bonferroni", families=m)
            cd = (
                stats.norm.isf(alpha / (2 * (k - 1))) * se
                if test == "bonferroni_dunn"
                else np.full(len(m), np.nan)
            )
    table = pd.DataFrame(
        {
            "metric": data.metrics[m].to_numpy(dtype=object),
            "system_a": data.systems[a].to_numpy(dtype=object),
            "system_b": data.systems[b].to_numpy(dtype=object),
            "rank_a": r[m, a],
            "rank_b": r[m, b],
            "rank_diff": rank_diff,
            "statistic": stat,
            "p_value": p,
            "p_adjusted": adjusted,
            "significant": adjusted < alpha,
            "cd": cd,
        }
    )
    table.attrs = {
        "test": test,
        "control": control,
        "alpha": alpha,
        "higher_is_better": data.directions,
    }
    return PosthocResult(table, _rank_table(data), test, alpha, control)

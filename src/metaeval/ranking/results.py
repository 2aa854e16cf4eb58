"""The ranking stage's results: Friedman's test, the post-hoc tests and the Bayesian
signed-rank test, each a frozen :class:`~metaeval._results.Result` with its table and
named parts; and :func:`clique_runs`, the cliques a post-hoc result (and a critical-difference
diagram) joins."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, get_args

import numpy as np
import pandas as pd

from .._options import PosthocTest
from .._results import Result
from ..errors import OptionError, SchemaError, check_alpha, check_option, excerpt, quote_list

__all__ = [
    "POSTHOC_TESTS",
    "ROW_KEY",
    "FriedmanResult",
    "PosthocResult",
    "BayesResult",
    "clique_runs",
]

POSTHOC_TESTS: tuple[str, ...] = get_args(PosthocTest)

#: The columns that name a row of a :func:`bayes_signed_rank` table: the key of its draws.
ROW_KEY = ("metric", "treatment", "control")


@dataclass(frozen=True, eq=False, repr=False)
class FriedmanResult(Result):
    """What :func:`friedman` found: the test per metric and the systems' average ranks.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per metric: the test (see :func:`friedman`, *Returns*);
        ``attrs`` hold the options ``higher_is_better`` and ``correction``.
    ranks : pandas.DataFrame
        One row per (metric, system), best average rank first: ``metric,
        system, mean_rank`` (1 = best) and ``mean`` (the mean of the per-task
        scores).

    Examples
    --------
    >>> import metaeval
    >>> from metaeval.ranking import friedman
    >>> test = friedman(metaeval.datasets.load_demsar())
    >>> test.table["p_value"].round(3).tolist(), test.ranks["system"].iloc[0]
    ([0.012], 'C4.5+m+cf')
    """

    ranks: pd.DataFrame
    kind: ClassVar[str] = "friedman"


@dataclass(frozen=True, eq=False, repr=False)
class PosthocResult(Result):
    """What :func:`posthoc` found: the pairs, the average ranks and the test's options.

    The critical difference (:meth:`cd`), the cliques (:meth:`cliques`) and the
    critical-difference diagram (:meth:`plot`) come from the object alone, each
    at the level asked for (by default the test's own ``alpha``): the CD bar and
    the cliques of a diagram are always at one level.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per compared pair, per metric (see :func:`posthoc`, *Returns*);
        ``attrs`` hold the options ``test, control, alpha, higher_is_better``.
    ranks : pandas.DataFrame
        One row per (metric, system), best average rank first: ``metric,
        system, mean_rank, mean``, as ``FriedmanResult.ranks``.
    test : str
        The post-hoc test: "nemenyi", "holm", "bonferroni_dunn" or "wilcoxon_holm".
    alpha : float
        The level of the table's ``significant`` and ``cd`` columns.
    control : str or None
        The control system, or None when all pairs are compared.

    Examples
    --------
    >>> import metaeval
    >>> from metaeval.ranking import posthoc
    >>> nemenyi = posthoc(metaeval.datasets.load_demsar())
    >>> round(nemenyi.cd(), 3), round(nemenyi.cd(0.10), 3)  # Demšar: 1.25 and 1.12
    (1.254, 1.118)
    >>> nemenyi.cliques(0.10).groupby("clique")["system"].agg(list)
    clique
    0    [C4.5+m+cf, C4.5+m, C4.5+cf]
    1                 [C4.5+cf, C4.5]
    Name: system, dtype: object
    >>> fig = nemenyi.plot(alpha=0.10)  # the diagram: CD bar and cliques at α = 0.10
    """

    ranks: pd.DataFrame
    test: str
    alpha: float
    control: str | None = None
    kind: ClassVar[str] = "posthoc"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_option("test", self.test, POSTHOC_TESTS)
        check_alpha(self.alpha)

    def _level(self, alpha: float | None) -> float:
        return self.alpha if alpha is None else check_alpha(alpha)

    def _metrics(self) -> list[str]:
        return list(pd.unique(self.ranks["metric"].astype(str)))

    def cd(self, alpha: float | None = None, *, metric: str | None = None) -> float:
        """The critical difference of average ranks at level ``alpha``.

        Parameters
        ----------
        alpha : float, optional
            The level; defaults to the test's ``alpha``.
        metric : str, optional
            The metric; required when the result holds several (their
            numbers of systems and tasks, and so their CDs, differ).

        Returns
        -------
        float
            For ``nemenyi`` q_α √(k(k + 1) / (6N)) / √2, q_α the upper α point
            of the studentized range with k means and ∞ degrees of freedom; for
            ``bonferroni_dunn`` z_{1 − α / (2(k − 1))} √(k(k + 1) / (6N)); NaN
            for ``holm`` and ``wilcoxon_holm``, which have no critical
            difference (their cliques come from the adjusted p-values).

        Raises
        ------
        metaeval.OptionError
            A bad ``alpha``; no ``metric`` with several metrics, or an unknown one.

        Examples
        --------
        >>> import metaeval
        >>> from metaeval.ranking import posthoc
        >>> auc = metaeval.datasets.load_demsar()
        >>> round(posthoc(auc, test="bonferroni_dunn", control="C4.5").cd(), 3)  # Demšar: 1.17
        1.168
        """
        from scipy import stats

        level = self._level(alpha)
        metrics = self._metrics()
        if metric is None:
            if len(metrics) > 1:
                raise OptionError(
                    f"This post-hoc result has {len(metrics)} metrics, each with its own "
                    f"critical difference; pass `metric` (one of {quote_list(metrics)})."
                )
            metric = metrics[0]
        elif str(metric) not in metrics:
            raise OptionError(
                f"`metric` must be one of {quote_list(metrics)}, but {metric!r} was passed."
            )
        if self.test not in ("nemenyi", "bonferroni_dunn"):
            return float("nan")
        own = self.table[self.table["metric"].astype(str) == str(metric)]
        cd = float(own["cd"].iloc[0])  # at the test's level: rescaled to ``level`` below
        if level == self.alpha:
            return cd
        k = int((self.ranks["metric"].astype(str) == str(metric)).sum())
        if self.test == "nemenyi":
            q = stats.studentized_range.isf([level, self.alpha], k, np.inf)
        else:
            q = stats.norm.isf(np.array([level, self.alpha]) / (2 * (k - 1)))
        return float(cd * q[0] / q[1])

    def cliques(self, alpha: float | None = None) -> pd.DataFrame:
        """The groups of systems a critical-difference diagram joins with a line.

        Parameters
        ----------
        alpha : float, optional
            Pairs with ``p_adjusted < alpha`` differ; defaults to the test's
            ``alpha``.

        Returns
        -------
        pandas.DataFrame
            One row per (metric, clique, system): ``metric``, ``clique`` (0, 1, …
            within the metric, from the best ranked), ``system``, ``rank`` (its
            average rank). Systems in no clique have no row.

        Raises
        ------
        metaeval.OptionError
            A bad ``alpha``.

        Notes
        -----
        All pairs: with the systems ordered by average rank, a clique is a
        maximal run of consecutive systems of which no two differ
        significantly; runs inside another are left out (as in Demšar 2006,
        Fig. 1, and autorank). For ``nemenyi`` that is a run whose first and
        last average ranks are at most :meth:`cd` apart (at the same level);
        for ``wilcoxon_holm`` every pair in the run is checked, so its cliques
        can differ from any rank-based rule. Against a control: one clique,
        the control and the run of systems next to it in rank order that do
        not differ from it significantly.

        Examples
        --------
        >>> import metaeval
        >>> from metaeval.ranking import posthoc
        >>> res = posthoc(metaeval.datasets.load_demsar(), test="wilcoxon_holm")
        >>> res.cliques()["system"].tolist()  # no pair differs on 14 tasks
        ['C4.5+m+cf', 'C4.5+m', 'C4.5+cf', 'C4.5']
        """
        return clique_runs(self.table, alpha=self._level(alpha), control=self.control)

    def plot(self, alpha: float | None = None, **kwargs: Any) -> Any:
        """The critical-difference diagram (:func:`metaeval.plot.critical_difference`),
        its CD bar and cliques at level ``alpha`` (default: the test's)."""
        from ..plot import critical_difference

        return critical_difference(self, alpha=alpha, **kwargs)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class BayesResult(Result):
    """A Bayesian signed-rank test (:func:`bayes_signed_rank`): probabilities and draws.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per (metric, treatment): ``metric, treatment, control,
        prob_worse, prob_equivalent, prob_better, decision, mean_diff, n_tasks``;
        ``attrs`` holds the options ``rope, prior, n_draws, seed, threshold,
        higher_is_better``.
    samples : dict or None
        The posterior's Monte-Carlo draws, by row: keyed by the row's
        ``(metric, treatment, control)``, each an
        ``(n_draws, 3)`` array of the draws' (θ_worse, θ_equivalent,
        θ_better). None unless computed with ``samples=True``.

    Notes
    -----
    The draws follow their rows by key, not by position: sort, filter or
    reorder the table and replace it, ``res.replace(table=res.table[mask])``, and
    :meth:`plot` still draws each row's own posterior (draws of rows left out
    stay in ``samples``, unused). Every row of the table must have its draws, and
    the rows' keys must be distinct (the tables of two results concatenate, but
    are one result only when they compare different pairs).

    Examples
    --------
    >>> import metaeval
    >>> from metaeval.ranking import bayes_signed_rank
    >>> auc = metaeval.datasets.load_demsar()
    >>> res = bayes_signed_rank(auc, control="C4.5", seed=1, n_draws=2000, samples=True)
    >>> better = res.replace(table=res.table[res.table["decision"] == "better"])
    >>> better.table["treatment"].tolist()
    ['C4.5+m+cf']
    >>> bool((better.draws(0) == res.draws(2)).all())  # its own draws, found by its key
    True
    """

    samples: Mapping[tuple[Any, ...], np.ndarray] | None = None
    kind: ClassVar[str] = "bayes"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.samples is None:
            return
        lacking = [c for c in ROW_KEY if c not in self.table.columns]
        if lacking:
            raise SchemaError(
                f"The table of a BayesResult with draws needs the columns {quote_list(ROW_KEY)} "
                f"(the draws' key); it lacks {quote_list(lacking)}."
            )
        keys = self.table[list(ROW_KEY)]
        repeated = keys[keys.duplicated(keep=False)].drop_duplicates()
        if len(repeated):
            raise SchemaError(
                "The rows of a BayesResult with draws are keyed by (metric, treatment, "
                f"control), but {len(repeated)} key(s) repeat, e.g. "
                f"{excerpt(tuple(repeated.iloc[0]))}: keep one row per key (the draws are one "
                "per key)."
            )
        missing = [k for k in keys.itertuples(index=False, name=None) if k not in self.samples]
        if missing:
            raise SchemaError(
                f"No draws for {len(missing)} row(s) of the table, e.g. {missing[0]}: "
                "samples= holds the draws of bayes_signed_rank()'s rows, keyed by "
                "(metric, treatment, control); keep the samples of the result the rows "
                "come from."
            )

    def draws(self, row: int = 0) -> np.ndarray:
        """The ``(n_draws, 3)`` draws of (θ_worse, θ_equivalent, θ_better) of one row.

        Parameters
        ----------
        row : int, default 0
            The position of the row in ``table`` (negative counts from the end).

        Returns
        -------
        numpy.ndarray

        Raises
        ------
        metaeval.OptionError
            No draws (computed without ``samples=True``); a ``row`` out of range.
        """
        if self.samples is None:
            raise OptionError(
                "This result does not keep the posterior's Monte-Carlo draws: "
                "call bayes_signed_rank(..., samples=True)."
            )
        n = len(self.table)
        if isinstance(row, bool) or not isinstance(row, int | np.integer) or not -n <= row < n:
            raise OptionError(f"`row` must be a row position from {-n} to {n - 1}, not {row!r}.")
        key = tuple(self.table[list(ROW_KEY)].iloc[int(row)])
        return np.asarray(self.samples[key], dtype=float)

    def plot(self, row: int = 0, **kwargs: Any) -> Any:
        """The posterior of one row in the probability simplex (:func:`metaeval.plot.simplex`).

        Parameters
        ----------
        row : int, default 0
            The position of the row in ``table``.
        **kwargs
            Passed to :func:`metaeval.plot.simplex` (``ax``, scatter options).

        Returns
        -------
        matplotlib.figure.Figure, or the Axes when ``ax`` is given.
        """
        from ..plot import simplex

        return simplex(self, row=row, **kwargs)


# ----------------------------------------------------------------- cliques
def clique_runs(pairs: pd.DataFrame, *, alpha: float, control: str | None) -> pd.DataFrame:
    """The cliques of a table of pairs (:meth:`metaeval.ranking.PosthocResult.cliques` documents them).

    ``pairs`` has the columns ``metric, system_a, system_b, rank_a, rank_b,
    p_adjusted`` (a :func:`posthoc` table, or the pairs of another test with the
    systems' positions as ranks: :func:`rank_report` after Tukey's HSD); pairs
    with ``p_adjusted < alpha`` differ; ``control`` is the control of a table
    against one, None for all pairs.
    """
    need = {"metric", "system_a", "system_b", "rank_a", "rank_b", "p_adjusted"}
    if not need <= set(pairs.columns):  # a programming error of metaeval
        raise SchemaError(
            f"clique_runs() needs the columns {quote_list(sorted(need))}; this table has "
            f"{quote_list(list(pairs.columns))}."
        )
    alpha = check_alpha(alpha)
    rows: list[pd.DataFrame] = []
    for metric, part in pairs.groupby("metric", sort=False):  # one small matrix each
        names = pd.concat([part["system_a"], part["system_b"]])
        ranks = pd.concat([part["rank_a"], part["rank_b"]]).set_axis(names.to_numpy())
        ranks = ranks.groupby(level=0, sort=False).first().sort_values(kind="stable")
        pos = pd.Series(np.arange(len(ranks)), index=ranks.index)
        i = pos[part["system_a"]].to_numpy()
        j = pos[part["system_b"]].to_numpy()
        differ = (part["p_adjusted"] < alpha).to_numpy()
        k = len(ranks)
        if control is None:
            lo, hi = np.minimum(i, j)[differ], np.maximum(i, j)[differ]
            # the first system that differs from some system at or after position s
            first = np.full(k + 1, k)
            np.minimum.at(first, lo, hi)
            reach = np.minimum.accumulate(first[::-1])[::-1][:k] - 1  # last j of a clean run
            start = np.arange(k)
            keep = (reach > start) & (reach > np.concatenate([[-1], reach[:-1]]))
            spans = [(s, int(reach[s])) for s in start[keep]]
        else:
            c = int(pos[control])
            same = np.ones(k, dtype=bool)
            same[i[differ]] = False
            lo = c
            while lo > 0 and same[lo - 1]:
                lo -= 1
            hi = c
            while hi < k - 1 and same[hi + 1]:
                hi += 1
            spans = [(lo, hi)] if hi > lo else []
        for n_clique, (s, e) in enumerate(spans):
            rows.append(
                pd.DataFrame(
                    {
                        "metric": metric,
                        "clique": n_clique,
                        "system": ranks.index[s : e + 1].to_numpy(dtype=object),
                        "rank": ranks.to_numpy()[s : e + 1],
                    }
                )
            )
    if not rows:
        return pd.DataFrame({"metric": [], "clique": [], "system": [], "rank": []}).astype(
            {"metric": object, "clique": np.int64, "system": object, "rank": float}
        )
    return pd.concat(rows, ignore_index=True)

"""Leaderboards over tasks: :func:`leaderboard` and :func:`rank_intervals`.

Their rules over the per-task scores (Borda, mean rank, Copeland, Kemeny–Young; the means
and Borda points of the rank intervals, their bootstrap and pairwise tests) are the
ranking stage's (:mod:`metaeval.ranking`); their pooled aggregation runs
:func:`metaeval.effects` and :func:`metaeval.pool` (on the data and, for the rank
intervals, on every bootstrap resample), so the public functions live here, above every
stage, and compose them.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._options import (
    AGGREGATIONS,
    CI_METHODS,
    DEFAULT_CI,
    DEFAULT_EFFECT,
    DEFAULT_POOL_METHOD,
    DEFAULT_RESAMPLES,
    EFFECT_TYPES,
    POOL_METHODS,
    RANK_AGGREGATIONS,
    Aggregation,
    CIMethod,
    EffectType,
    PoolMethod,
    RankAggregation,
    literal_signature,
    resolve_ci,
)
from ..engines import any_frame
from ..errors import (
    DegenerateWarning,
    MetaEvalWarning,
    OptionError,
    PairingError,
    SchemaError,
    check_alpha,
    check_option,
    check_resamples,
    quote_list,
    resolve_seed,
    warn_groups,
)
from ..paired import effect_sizes
from ..paired.clusters import cluster_ids
from ..paired.effect_size import effects
from ..pooling import pool
from ..ranking import (
    Board,
    QueryTable,
    aggregate,
    effect_sums,
    interval_table,
    metric_board,
    rank_board,
    rank_data,
    resampled_sums,
    score_board,
    scores_of_metrics,
)

__all__ = ["leaderboard", "rank_intervals"]


# ------------------------------------------------------------------ leaderboard
def _pooled_columns(
    board: Board,
    *,
    control: Any,
    effect: str,
    method: str,
    test: str | None,
    alpha: float,
) -> pd.DataFrame:
    """Pooled effects against ``control`` for the rows of the board."""
    scores, frame = board.scores, board.frame
    if control is None:
        raise OptionError(
            "aggregation='pooled' ranks systems by their pooled effect over a common "
            "control; pass `control` (a system name)."
        )
    if not isinstance(control, str):
        raise OptionError(f"`control` must be one system name (a str), not {control!r}.")
    has = frame.loc[frame["system"] == control, "metric"]
    lacking = [m for m in pd.unique(frame["metric"]) if m not in set(has)]
    if lacking:
        raise PairingError(
            f"The control {control!r} is not a system of the metric(s) {quote_list(lacking)}; "
            f"the systems are {quote_list(list(pd.unique(frame['system'])))}."
        )
    eff = effects(scores, control=control, effect=effect, alpha=alpha)
    pooled = pool(eff, method=method, test=test, alpha=alpha)
    cols = ["effect", "ci_low", "ci_high", "p_value", "k"]
    table = pooled[["metric", "treatment", *cols]].rename(columns={"treatment": "system"})
    table = table.astype({"metric": object, "system": object})
    out = (
        frame[["metric", "system"]].astype(object).merge(table, how="left", on=["metric", "system"])
    )
    is_control = (out["system"] == control).to_numpy()
    out.loc[is_control, "effect"] = 0.0
    out["k"] = out["k"].astype("Int64")
    return out[cols].set_axis(frame.index)


@any_frame
@literal_signature
def leaderboard(
    scores: pd.DataFrame,
    *,
    aggregation: Aggregation = "borda",
    metric: str | Sequence[str] | None = None,
    higher_is_better: bool | Mapping[str, bool] = True,
    control: str | None = None,
    effect: EffectType = DEFAULT_EFFECT,
    method: PoolMethod = DEFAULT_POOL_METHOD,
    test: CIMethod | None = DEFAULT_CI,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Rank systems over tasks: one leaderboard per metric.

    A system's score on a task is its mean ``value`` over the task's queries;
    the per-task scores are aggregated into one ranking per metric by a rank
    aggregation rule (Borda count, mean rank, Copeland, Kemeny–Young) or by a
    random-effects meta-analysis against a common control. How sure each rank is:
    :func:`metaeval.rank_intervals`.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table: ``task, query, system, metric, value``. Within each
        metric every system must have a score on every task.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    aggregation : {"borda", "mean_rank", "copeland", "kemeny", "pooled"}, default "borda"
        The aggregation rule (formulas under *Notes*).
    metric : str or list of str, optional
        The metric(s) to rank on; None ranks on every metric of the table.
    higher_is_better : bool or mapping of str to bool, default True
        Whether larger values are better, for all metrics or per metric
        (``{"accuracy": True, "latency": False}``; every ranked metric needs
        an entry).
    control : str, optional
        The common control (baseline) system; required by ``aggregation="pooled"``
        and not used by the other rules (but checked: a system of the table).
    effect : {"md", "smd", "smcrp", "smcc", "rom", "corr"}, default "smcrp"
        ``aggregation="pooled"`` only: the effect size, see :func:`metaeval.effects`.
    method : {"EE", "FE", "DL", "HE", "HS", "SJ", "ML", "REML", "EB", "PM"}, default "REML"
        ``aggregation="pooled"`` only: the τ² estimator, see :func:`metaeval.pool`.
    test : {"z", "t", "knha", "hksj", "adhoc"} or None, default None
        ``aggregation="pooled"`` only: the test and interval, see :func:`metaeval.pool`
        (``"adhoc"``: Knapp–Hartung never narrower than the normal interval).
    alpha : float, default 0.05
        ``aggregation="pooled"`` only: the intervals have level 1 − alpha.

    Every option is checked whichever the aggregation, so that a typo is an
    error even where the option is not used.

    Returns
    -------
    pandas.DataFrame
        One row per ``(metric, system)``, sorted by metric (in the table's
        order of first appearance), then ``rank``, then system name; RangeIndex;
        columns:

        - ``metric, system`` (str);
        - ``score`` (float): the aggregate — Borda points (higher is
          better), mean rank (lower), Copeland wins − losses (higher), position
          in the Kemeny consensus order (lower; 1 = top), pooled effect over the
          control (higher, or lower with ``higher_is_better=False``);
        - ``rank`` (int): competition ranking of ``score`` within the metric
          ("1, 2, 2, 4"), 1 = best;
        - ``n_tasks`` (int): the tasks of the metric;
        - ``mean`` (float): the mean over tasks of the per-task scores;
        - for ``pooled`` also ``ci_low, ci_high, p_value`` (float) and ``k``
          (nullable Int64, tasks pooled) from :func:`metaeval.pool`; the
          control's row has ``score`` 0.0 and NaN/<NA> elsewhere.

        ``attrs`` hold ``aggregation``, ``higher_is_better`` (a dict metric → bool);
        for ``kemeny`` also ``kemeny_exact`` (bool: True when every metric was
        solved exactly) and ``kemeny_cost`` (dict metric → int: the number of
        (task, pair) disagreements of the returned order, the minimum when
        exact); for ``pooled`` also ``control, effect, method, test, alpha``.

    Raises
    ------
    metaeval.SchemaError
        If ``scores`` is not a valid scores table.
    metaeval.OptionError
        A bad value of any option (named in the message: ``aggregation``,
        ``effect``, ``method``, ``test``, ``alpha``, ``control``,
        ``metric``, ``higher_is_better``), whichever the aggregation; a
        ``higher_is_better`` mapping that misses a ranked metric, or
        ``aggregation="pooled"`` without ``control``.
    metaeval.PairingError
        A system without a score on some task of a metric (every missing
        ``(metric, task, system)`` is listed), fewer than 2 systems on a metric,
        an empty table, or a ``control`` that is not a system of the table (or,
        for ``pooled``, of a metric).

    Notes
    -----
    Let r_t(s) be the rank of system s on task t among the N systems of the
    metric (1 = best) and T the number of tasks. Ties on a task get the
    average of the tied positions (``scipy.stats.rankdata(method="average")``),
    so tied systems share the points of their positions equally: two systems
    tied for first of three both get rank 1.5.

    - ``borda``: score(s) = Σ_t (N − r_t(s)); the best system of a task gets
      N − 1 points, the worst 0.
    - ``mean_rank``: score(s) = (1/T) Σ_t r_t(s).
    - ``copeland``: with W(a, b) = #{t : r_t(a) < r_t(b)} (tasks where a and b
      tie count for neither), a beats b when W(a, b) > W(b, a);
      score(a) = Σ_b sign(W(a, b) − W(b, a)), wins minus losses.
    - ``kemeny``: the Kemeny–Young consensus order π minimises the number of
      (task, pair) disagreements Σ_t Σ_{π(a) < π(b)} [r_t(b) < r_t(a)]
      = Σ_{π(a) < π(b)} W(b, a) (a task tie is no disagreement). Up to
      ``KEMENY_EXACT_MAX`` systems it is found exactly by dynamic programming
      over subsets: placing s right after the set S costs
      Σ_{b ∉ S ∪ {s}} W(b, s), and the least cost of every subset is found
      from the full set down (O(2ᴺ N) time and memory). Among optimal orders,
      the one taken is the first when the top position, then the next, and so
      on go to the system with the highest Borda score, then the first name.
      Above ``KEMENY_EXACT_MAX`` systems a heuristic is used: start from the
      Borda order (ties by name) and repeatedly take one system out and
      reinsert it at the position with the fewest disagreements, while that
      strictly lowers the cost; the result is an order no single move
      improves, not necessarily optimal (``attrs["kemeny_exact"]`` is False).
      ``score`` is the position in the order.
    - ``pooled``: for every metric, ``metaeval.effects(scores, control=control,
      effect=effect)`` then ``metaeval.pool(method=method, test=test)``;
      ``score`` is the pooled effect of each system over the control (0 for
      the control). Systems with a NaN pooled effect rank last.

    Borda, mean rank and Copeland use only the per-task ranks; Colombo et al.
    (2022) discuss these rules for NLP benchmarks and argue for the Kemeny
    consensus, which is the maximum-likelihood ranking under the Mallows model
    (Young & Levenglick 1978 characterise it axiomatically). Unlike them,
    ``pooled`` accounts for the per-task uncertainty and gives intervals.

    References
    ----------
    Borda, J.-C. de (1781). Mémoire sur les élections au scrutin. *Histoire de
    l'Académie Royale des Sciences*, Paris.
    Copeland, A. H. (1951). A "reasonable" social welfare function. Seminar on
    Applications of Mathematics to the Social Sciences, University of Michigan.
    Kemeny, J. G. (1959). Mathematics without numbers. *Daedalus*, 88(4), 577–591.
    Young, H. P., & Levenglick, A. (1978). A consistent extension of Condorcet's
    election principle. *SIAM Journal on Applied Mathematics*, 35(2), 285–300.
    doi:10.1137/0135023
    Colombo, P., Noiry, N., Irurozki, E., & Clémençon, S. (2022). What are the
    best systems? New perspectives on NLP benchmarking. *NeurIPS 2022*.
    arXiv:2202.03799

    Examples
    --------
    Three tasks rank A > B > C, A > C > B and B > A > C:

    >>> import pandas as pd
    >>> from metaeval import leaderboard
    >>> scores = pd.DataFrame({
    ...     "task": ["t1"] * 3 + ["t2"] * 3 + ["t3"] * 3, "query": "q1",
    ...     "system": ["A", "B", "C"] * 3, "metric": "acc",
    ...     "value": [0.9, 0.8, 0.7, 0.6, 0.4, 0.5, 0.7, 0.8, 0.3]})
    >>> leaderboard(scores, aggregation="borda")
      metric system  score  rank  n_tasks      mean
    0    acc      A    5.0     1        3  0.733333
    1    acc      B    3.0     2        3  0.666667
    2    acc      C    1.0     3        3  0.500000
    >>> board = leaderboard(scores, aggregation="kemeny")
    >>> board["system"].tolist(), board.attrs["kemeny_cost"]
    (['A', 'B', 'C'], {'acc': 2})
    """
    # every option is checked, whether or not the aggregation uses it
    check_option("aggregation", aggregation, AGGREGATIONS)
    check_option("effect", effect, EFFECT_TYPES)
    check_option("method", method, POOL_METHODS)
    check_option("test", test, (*CI_METHODS, None))
    alpha = check_alpha(alpha)
    if control is not None and not isinstance(control, str):
        raise OptionError(f"`control` must be one system name (a str), not {control!r}.")
    board = aggregate(
        scores,
        aggregation=aggregation,
        metric=metric,
        higher_is_better=higher_is_better,
        control=control,
    )
    if aggregation != "pooled":
        return rank_board(board)
    extra = _pooled_columns(
        board, control=control, effect=effect, method=method, test=test, alpha=alpha
    )
    frame = board.frame
    frame["score"] = extra.pop("effect")
    frame = pd.concat([frame, extra], axis=1)
    board.attrs.update(control=control, effect=effect, method=method, test=test, alpha=alpha)
    return rank_board(board._replace(frame=frame), descending=board.higher_is_better)


# ------------------------------------------------------------------ rank intervals
def _bootstrap_effects(
    sums: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    shift: np.ndarray,
    n_u: np.ndarray,
    control: int,
    n_resamples: int,
    seed: int,
    key: str,
    effect: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Effects and variances ``(resample, slot, treatment)`` of every system but the
    control against it, in the resamples of the other scores (the same draws).

    ``sums`` and ``shift`` are those of :func:`metaeval.ranking.effect_sums`; the
    count-weighted sums n, Σx, Σy, Σx², Σy², Σxy of each drawn task
    (:func:`metaeval.ranking.resampled_sums`) become effects by
    :func:`metaeval.paired.effect_sizes`, as :func:`metaeval.effects` makes them from the
    data.
    """
    import xarray as xr

    g = sums[0]
    n_tasks, _, n_sys = g.shape
    treat = np.delete(np.arange(n_sys), control)
    est = np.empty((n_resamples, n_tasks, len(treat)))
    var = np.empty_like(est)
    dims = ("resample", "slot", "treatment")
    for rows, n, a, sx, sxx, sxy in resampled_sums(sums, shift, n_u, n_resamples, seed, key):
        n = np.broadcast_to(n, sx[..., treat].shape)
        stats = xr.Dataset(
            {
                "n": (dims, n),
                "shift_treatment": (dims, a[..., treat]),
                "shift_control": (dims, np.broadcast_to(a[..., control : control + 1], n.shape)),
                "sum_x": (dims, sx[..., treat]),
                "sum_y": (dims, np.broadcast_to(sx[..., control : control + 1], n.shape)),
                "sum_xx": (dims, sxx[..., treat]),
                "sum_yy": (dims, np.broadcast_to(sxx[..., control : control + 1], n.shape)),
                "sum_xy": (dims, sxy[..., treat]),
            }
        )
        result, _ = effect_sizes(stats, effect=effect)
        est[rows], var[rows] = result["effect"].values, result["variance"].values
    return est, var


def _pooled_scores(est: list[np.ndarray], var: list[np.ndarray], method: str) -> list[np.ndarray]:
    """The pooled effect of every (resample, treatment) of every metric: one
    :func:`metaeval.pool` call for all of them (a group per resample, treatment and
    metric, its tasks the slots), as :func:`metaeval.design.plan_tasks` pools its
    simulated analyses. Degenerate resamples (a task whose drawn queries do not vary)
    are the data's problems in one resample, not the user's: their warnings are not
    issued; a resample without a pooled effect is counted by the caller."""
    shapes = [e.shape for e in est]
    sizes = [r * t for r, _, t in shapes]
    offsets = np.cumsum([0, *sizes])
    slot = np.concatenate(
        [
            np.broadcast_to(np.arange(k)[None, :, None], e.shape).ravel()
            for e, (_, k, _) in zip(est, shapes, strict=True)
        ]
    )
    group = np.concatenate(
        [
            o + np.broadcast_to((np.arange(r)[:, None, None] * t + np.arange(t)), e.shape).ravel()
            for o, e, (r, _, t) in zip(offsets[:-1], est, shapes, strict=True)
        ]
    )
    frame = pd.DataFrame(
        {
            "task": slot,
            "metric": group,
            "effect": np.concatenate([e.ravel() for e in est]),
            "variance": np.concatenate([w.ravel() for w in var]),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MetaEvalWarning)
        res = pool(frame, method=method, test="z")
    pooled = np.full(int(offsets[-1]), np.nan)
    pooled[res["metric"].to_numpy(dtype=np.int64)] = res["effect"].to_numpy(dtype=float)
    return [
        pooled[a:b].reshape(r, t)
        for a, b, (r, _, t) in zip(offsets[:-1], offsets[1:], shapes, strict=True)
    ]


def _complete_resamples(boot: np.ndarray, metric: str) -> np.ndarray:
    """The resamples in which every system has a pooled effect; a DegenerateWarning
    counts the others (every drawn task of some system without a defined effect)."""
    complete = ~np.isnan(boot).any(axis=1)
    if complete.all():
        return boot
    if complete.sum() < 2:
        raise PairingError(
            f"rank_intervals(aggregation='pooled'): on the metric {metric!r} fewer than 2 of "
            f"{len(boot)} bootstrap resamples give every system a pooled effect (their "
            "per-task effects are undefined, e.g. too few queries or no variation); rank "
            "with aggregation='mean' instead."
        )
    warn_groups(
        "rank_intervals(aggregation='pooled') left out bootstrap resamples in which a system had no "
        "pooled effect (every drawn task's effect undefined) on {n} metric(s)",
        pd.DataFrame(
            {
                "metric": [metric],
                "resamples_left_out": [int((~complete).sum())],
                "resamples": [len(boot)],
            }
        ).astype({"metric": object}),
        DegenerateWarning,
    )
    return boot[complete]


def _observed_pooled(
    scores: pd.DataFrame,
    control: str,
    effect: str,
    method: str,
    test: str,
    alpha: float,
    cluster: str | None,
) -> pd.DataFrame:
    """``pool(effects(scores, control, cluster=cluster), test=test)``: the pooled effect of
    every system over the control, per metric, with its standard error and degrees of
    freedom (as ``leaderboard(aggregation="pooled")``)."""
    eff = effects(scores, control=control, effect=effect, alpha=alpha, cluster=cluster)
    pooled = pool(eff, method=method, test=test, alpha=alpha)
    cols = ["metric", "treatment", "effect", "se", "df"]
    return pooled.reindex(columns=cols).astype({"metric": str, "treatment": str})


def _pooled_board(
    board: dict[str, Any],
    query: QueryTable,
    pooled: pd.DataFrame,
    *,
    name: str,
    control: str,
    effect: str,
    n_resamples: int,
    seed: int,
) -> None:
    """Fill a board of :func:`metaeval.ranking.metric_board` with the pooled effects over
    the control, their standard errors and degrees of freedom, and the effects and
    variances of every bootstrap resample (pooled later, all metrics at once)."""
    names, sign = board["names"], board["sign"]
    v, n_q, unit, n_u = query.v, query.n_q, query.unit, query.n_u
    own = pooled[pooled["metric"] == name].set_index("treatment")
    effect_of = own["effect"].reindex(names)
    observed = sign * effect_of.fillna(0.0).to_numpy()
    keep = (names == control) | effect_of.notna().to_numpy()
    if not keep.all():
        warn_groups(
            "rank_intervals(aggregation='pooled') left out {n} (metric, system) group(s) "
            "without a pooled effect over the control (every task's effect is undefined, "
            "e.g. a copy of the control)",
            pd.DataFrame({"metric": name, "system": names[~keep]}).astype(object),
            DegenerateWarning,
        )
        names, v, observed = names[keep], v[:, :, keep], observed[keep]
    c = int(names.get_loc(control))
    se = own["se"].reindex(names).to_numpy(dtype=float).copy()
    se[c] = 0.0
    df = own["df"].reindex(names).drop(control).to_numpy(dtype=float)
    df_min = float(np.nanmin(df)) if np.isfinite(df).any() else np.inf
    per_unit, shift = effect_sums(v, n_q, unit, n_u, c)
    est, var = _bootstrap_effects(per_unit, shift, n_u, c, n_resamples, seed, name, effect)
    board.update(names=names, observed=observed, control=c, est=est, var=var, se=se, df=df_min)


@any_frame
@literal_signature
def rank_intervals(
    scores: pd.DataFrame,
    *,
    aggregation: RankAggregation = "mean",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = None,
    alpha: float = 0.05,
    simultaneous: bool = True,
    metric: str | Sequence[str] | None = None,
    higher_is_better: bool | Mapping[str, bool] = True,
    control: str | None = None,
    effect: EffectType = DEFAULT_EFFECT,
    method: PoolMethod = DEFAULT_POOL_METHOD,
    test: CIMethod | None = DEFAULT_CI,
    cluster: str | None = None,
) -> pd.DataFrame:
    """Each system's rank with an interval and its tie group: one leaderboard per metric.

    The ranks come from a score per system over the tasks of a metric (the mean of its
    per-task means, its Borda points, or its pooled effect over a control); the intervals
    from which pairs of systems the data tell apart, with tests that keep their level at
    the few tasks (4–10) evaluations have (see *Notes*).

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table: ``task, query, system, metric, value``. Within each metric every
        system must have a score on every query of every task.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    aggregation : {"mean", "borda", "pooled"}, default "mean"
        The score that ranks the systems: ``"mean"``, the mean over tasks of the
        per-task means; ``"borda"``, the Borda points Σ_t (N − r_t) of the per-task ranks
        r_t (1 = best, ties averaged) among the N systems; ``"pooled"``, the pooled
        effect of each system over ``control`` (0 for the control), that is
        ``pool(effects(scores, control, effect=effect), method=method)`` — the score
        of ``leaderboard(aggregation="pooled")``.
    n_resamples : int, default 10,000
        Bootstrap resamples (at least 2) of ``prob_best`` and, for ``aggregation="pooled"``, of the
        correlations of the pooled effects.
    seed : int, optional
        Seed of the resampling and of the critical values' draws; None draws one
        (reported in ``attrs["seed"]``).
    alpha : float, default 0.05
        The intervals have level 1 − alpha.
    simultaneous : bool, default True
        True: intervals that hold for all systems of a metric at once (family-wise);
        False: marginal intervals, each for one system on its own.
    metric : str or list of str, optional
        The metric(s) to rank on; None ranks on every metric of the table.
    higher_is_better : bool or mapping of str to bool, default True
        Whether larger values are better, for all metrics or per metric.
    control : str, optional
        ``aggregation="pooled"`` only (and required there): the common control system.
    effect : {"md", "smd", "smcrp", "smcc", "rom", "corr"}, default "smcrp"
        ``aggregation="pooled"`` only: the per-task effect size, see :func:`metaeval.effects`.
    method : {"REML", "DL", ...}, default "REML"
        ``aggregation="pooled"`` only: the τ² estimator, see :func:`metaeval.pool`.
    test : {"knha", "z", "hksj", "adhoc"} or None, default None
        ``aggregation="pooled"`` only: the pooled model's standard error and test, as in
        :func:`metaeval.pool` (None: Knapp–Hartung for the random-effects methods, z for
        ``EE``); a system is never told apart from the control unless ``pool()``'s
        interval of its effect (the same ``test``, ``alpha``) excludes 0.
    cluster : str, optional
        A column of ``scores`` with the cluster of each query (constant within a query
        across systems and metrics, e.g. the passage several questions share): the
        bootstrap draws whole clusters instead of queries, the query-level standard errors
        are clustered (C/(C − 1), t on C − 1 degrees of freedom with one task), and
        ``aggregation="pooled"`` pools ``effects(..., cluster=cluster)``.

    Returns
    -------
    pandas.DataFrame
        One row per ``(metric, system)``, sorted by metric (table order), ``rank`` and
        system name; RangeIndex; columns:

        - ``metric, system`` (str);
        - ``score`` (float): the mean over tasks (``"mean"``, in the metric's units),
          the Borda points (``"borda"``; higher is better) or the pooled effect over
          the control (``"pooled"``, on the effect's analysis scale; its sign follows
          ``higher_is_better``);
        - ``rank`` (int): competition ranking of ``score`` ("1, 2, 2, 4"), 1 = best;
        - ``rank_low, rank_high`` (int): the interval of the rank (1 ≤ rank_low ≤
          rank_high ≤ N);
        - ``tie_group`` (int): the systems in rank order, cut wherever every interval
          above the cut ends before every interval below begins: 1 for the leader's
          block, 2 for the next, and so on;
        - ``prob_best`` (float): the share of bootstrap resamples in which the system
          ranks first (tied first counts, so the shares can sum to more than 1);
        - ``n_tasks`` (int): the tasks of the metric.

        ``attrs`` hold ``aggregation, n_resamples, seed, alpha, simultaneous, cluster`` and
        ``higher_is_better`` (a dict metric → bool); with ``simultaneous=True`` also
        ``critical_value`` (a dict metric → float: the c of *Notes*); with
        ``aggregation="pooled"`` also ``control, effect, method, test``.

    Raises
    ------
    metaeval.SchemaError
        If ``scores`` is not a valid scores table; a ``cluster`` column that is missing,
        a key column, or not constant within a query.
    metaeval.OptionError
        A bad ``aggregation``, ``n_resamples`` (< 2 or not an integer), ``seed``, ``alpha``,
        ``simultaneous``, ``metric``, ``higher_is_better``, ``effect``, ``method``,
        ``test`` or ``cluster``; ``aggregation="pooled"`` without ``control``, or ``control``
        with another aggregation; a task with one cluster.
    metaeval.PairingError
        A system without a score on some task of a metric or on some query of a task
        (the combinations are listed), repeated rows of a (task, query, system), fewer
        than 2 systems on a metric, a ``control`` missing from a metric, or (``"pooled"``)
        fewer than 2 resamples in which every system has a pooled effect.

    Warns
    -----
    metaeval.DegenerateWarning
        ``aggregation="pooled"``: naming the (metric, system) groups left out because they have no
        pooled effect (every task's effect undefined, e.g. a copy of the control), and the
        metrics on which resamples without a pooled effect for some system were left out
        (with their number); and the warnings of :func:`metaeval.pool` on the data (e.g.
        a Knapp–Hartung interval narrower than the normal one).

    Notes
    -----
    **From pairs to ranks** (Mogstad, Romano, Shaikh & Wilhelm 2024). For every pair of
    the N systems let D_jk = s_j − s_k be the difference of their scores and σ_jk its
    standard error; j is surely above k when D_jk > c σ_jk. With probability ≈ 1 − alpha
    no such statement is false, and then every system's true rank lies in
    [1 + #{k surely above j}, N − #{k surely below j}]. For **simultaneous** intervals c
    is the 1 − alpha quantile of the largest ``|D*_jk − D_jk| / σ_jk`` over all pairs; for
    **marginal** ones (``simultaneous=False``), of the largest over the N − 1 pairs of the
    system whose interval it is. A system's observed rank always lies in its interval.
    A pair whose difference has no error at all (a system and the same system shifted
    by a constant on every query) is apart when the scores differ and known equal
    when they do not.

    **The standard errors and critical values** come from the tasks themselves, because
    with 4–10 tasks a bootstrap of the tasks is too narrow and too coarse: the 6 wins of
    one system on 6 tasks are 6 wins in every bootstrap resample, and its spread
    underestimates the between-task variance by (k − 1)/k, so that two equal systems were
    split in 13–17% of simulated leaderboards at 4–6 tasks (α = 0.05). Here:

    - ``"mean"``: σ_jk² is the variance of the paired per-task differences over the k
      tasks divided by k — the paired t-test over tasks —, never below the variance the
      queries alone give the mean (Σ_t V_t / k², V_t the variance of task t's mean
      difference, clustered with ``cluster``), so that tasks whose differences agree by
      the coarseness of the scores do not make a pair certain; c from the t distribution
      on k − 1 degrees of freedom with the pairs' correlations: 20,000 draws of a normal
      vector with the per-task means' covariance, each divided by √(χ²_{k−1}/(k − 1)).
    - ``"pooled"``: σ_j = the pooled effect's standard error from :func:`metaeval.pool`
      with ``test`` (Knapp–Hartung by default), the control's 0; the correlations of the
      systems' pooled effects from the bootstrap; c as for the mean, on the pool's
      degrees of freedom (k − 1; normal for ``test="z"``).
    - ``"borda"``: the paired t over tasks of the per-task Borda points N − r_t, as for
      the mean; and since Borda points take a few values only (a pair whose tasks all
      agree has no spread at all), a pair is told apart only where the sign flips of its
      whole tasks also reject at alpha (every one of the 2^k patterns up to 14 tasks,
      else 20,000 at random; with two systems, the sign test): with k ≤ 5 tasks no pair
      can be told apart at α = 0.05 (the smallest p-value is 2/2^k).
    - With one task, ``"mean"`` and ``"borda"`` rest on the queries: the paired t over
      the task's queries (clustered with ``cluster``, C − 1 degrees of freedom).

    A family of a single pair gets the exact t quantile. With two systems the intervals
    split them exactly when the paired t-test over tasks (``"mean"``), the pooled
    interval (``"pooled"``) or both the sign test and the t-test of the Borda points
    (``"borda"``) reject at alpha.

    **Resampling** (``prob_best``, and the correlations for ``"pooled"``). One
    resample draws T tasks with replacement from the T tasks of the metric, then, for
    each drawn task independently, its queries (or, with ``cluster``, its clusters) with
    replacement; the same draws weight every system, so that the comparison stays
    paired (Davison & Hinkley 1997, §3.8). For ``"pooled"`` the count-weighted sums n,
    Σx, Σy, Σx², Σy², Σxy of every system x paired with the control y are turned into
    effects by :func:`metaeval.paired.effect_sizes` and one :func:`metaeval.pool` call
    fits every (resample, system). Each metric has its own random streams from ``(seed,
    metric name)``, so a metric ranked alone gets the same intervals as with others.
    Means that are equal in exact arithmetic tie (see ``task_means``), in the data and in
    every resample.

    **Tie groups** cut the ranking only where the intervals separate everything above
    from everything below, so two systems the data cannot order are never in different
    groups when the intervals hold.

    References
    ----------
    Mogstad, M., Romano, J. P., Shaikh, A. M., & Wilhelm, D. (2024). Inference for
    ranks with applications to mobility across neighbourhoods and academic achievement
    across countries. *Review of Economic Studies*, 91(1), 476–518.
    doi:10.1093/restud/rdad006
    Knapp, G., & Hartung, J. (2003). Improved tests for a random effects meta-regression
    with a single covariate. *Statistics in Medicine*, 22(17), 2693–2710.
    doi:10.1002/sim.1482
    Davison, A. C., & Hinkley, D. V. (1997). *Bootstrap Methods and their
    Application*, §3.8. Cambridge University Press. doi:10.1017/CBO9780511802843
    Hall, P., & Miller, H. (2009). Using the bootstrap to quantify the authority of an
    empirical ranking. *Annals of Statistics*, 37(6B), 3929–3959. doi:10.1214/09-AOS699

    Examples
    --------
    Three systems on four tasks of three queries; A and B are close, C far behind:

    >>> import pandas as pd
    >>> from metaeval import rank_intervals
    >>> rows = [(t, q, s, "acc", v + 0.05 * ((q + k * t) % 3))
    ...         for t in range(4) for q in range(3)
    ...         for s, v, k in [("A", 0.80, 1), ("B", 0.79, 2), ("C", 0.40, 1)]]
    >>> scores = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])
    >>> table = rank_intervals(scores, n_resamples=200, seed=1)
    >>> table[["system", "rank", "rank_low", "rank_high", "tie_group"]]
      system  rank  rank_low  rank_high  tie_group
    0      A     1         1          2          1
    1      B     2         1          2          1
    2      C     3         3          3          2

    A and B cannot be told apart (one tie group); C is third in every reading.
    """
    check_option("aggregation", aggregation, RANK_AGGREGATIONS)
    check_option("effect", effect, EFFECT_TYPES)
    check_option("method", method, POOL_METHODS)
    check_option("test", test, (*CI_METHODS, None))
    n_resamples = check_resamples(n_resamples, minimum=2)
    seed = resolve_seed(seed)
    alpha = check_alpha(alpha)
    if not isinstance(simultaneous, bool | np.bool_):
        raise OptionError(f"`simultaneous` must be True or False, but {simultaneous!r} was passed.")
    if control is not None and not isinstance(control, str):
        raise OptionError(f"`control` must be one system name (a str), not {control!r}.")
    if (aggregation == "pooled") != (control is not None):
        raise OptionError(
            "aggregation='pooled' ranks the systems by their pooled effect over a common "
            "control: pass `control` (a system name) with it"
            + (
                "."
                if control is None
                else f", and only with it (aggregation={aggregation!r} uses no control)."
            )
        )
    if cluster is not None and not isinstance(cluster, str):
        raise OptionError(f"`cluster` must be one column name (a str), not {cluster!r}.")
    scores, directions = scores_of_metrics(scores, metric, higher_is_better)
    clusters = None
    if cluster is not None:
        if cluster in ("task", "query", "system", "metric", "value"):
            raise SchemaError(
                f"cluster={cluster!r} names a key column of the scores; it must name another "
                "column with the cluster of each query (e.g. 'passage')."
            )
        ids = cluster_ids(scores, cluster)
        clusters = pd.Series(
            ids["cluster"].to_numpy(),
            index=pd.MultiIndex.from_arrays([ids["task"].astype(str), ids["query"].astype(str)]),
        )
    data = rank_data(scores, directions, clusters)
    pool_test = resolve_ci(method, test)
    if aggregation == "pooled":
        metrics, systems, sys_in = data.metrics, data.systems, data.sys_in
        lacking = [m for i, m in enumerate(metrics) if control not in set(systems[sys_in[i]])]
        if lacking:
            raise PairingError(
                f"The control {control!r} is not a system of the metric(s) "
                f"{quote_list(lacking)}; the systems are {quote_list(list(systems))}."
            )
        pooled = _observed_pooled(scores, str(control), effect, method, pool_test, alpha, cluster)

    boards: list[dict[str, Any]] = []  # per metric: what its leaderboard needs
    for m, name in enumerate(data.metrics):  # one leaderboard per metric, vectorized within
        board, query = metric_board(data, m)
        if aggregation != "pooled":
            score_board(board, query, aggregation, n_resamples, seed, name)
        else:
            _pooled_board(
                board,
                query,
                pooled,
                name=name,
                control=str(control),
                effect=effect,
                n_resamples=n_resamples,
                seed=seed,
            )
        boards.append(board)
    if aggregation == "pooled":  # every resample, treatment and metric pooled by one call
        fits = _pooled_scores([b["est"] for b in boards], [b["var"] for b in boards], method)
        for m, (board, fit) in enumerate(zip(boards, fits, strict=True)):
            boot = board["sign"] * np.insert(fit, board["control"], 0.0, axis=1)  # control: 0
            board["boot"] = _complete_resamples(boot, data.metrics[m])
    frame = interval_table(
        data,
        boards,
        aggregation=aggregation,
        n_resamples=n_resamples,
        seed=seed,
        alpha=alpha,
        simultaneous=simultaneous,
        cluster=cluster,
    )
    if aggregation == "pooled":
        frame.attrs.update(control=control, effect=effect, method=method, test=pool_test)
    return frame

"""Rank aggregation over tasks: leaderboards from a scores table.

A system's score on a task is its mean ``value`` over the task's queries. The
per-task scores are laid out as a ``(metric, task, system)`` array (NaN where a
system or task does not belong to a metric) and ranked along the system axis;
every aggregation rule below works on that array (pairwise counts on a
``(metric, task, system, system)`` broadcast) for all metrics at once. Only the
Kemeny–Young consensus, an optimisation over orders, runs metric by metric.

References: see :func:`leaderboard`.
"""

from __future__ import annotations

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
    EFFECT_TYPES,
    POOL_METHODS,
    Aggregation,
    CIMethod,
    EffectType,
    PoolMethod,
    literal_signature,
)
from ..engines import any_frame
from ..errors import (
    OptionError,
    PairingError,
    check_alpha,
    check_option,
    check_resamples,
    quote_list,
    resolve_seed,
)
from ..paired.effect_size import effects
from ..pooling import pool
from ._tables import (
    check_complete,
    metric_directions,
    scores_of_metrics,
    select_metrics,
    task_means,
    task_ranks,
)

__all__ = [
    "KEMENY_EXACT_MAX",
    "leaderboard",
    "scores_of_metrics",
    "select_metrics",
    "metric_directions",
    "task_means",
    "check_complete",
    "task_ranks",
]

KEMENY_EXACT_MAX = 16
"""Up to this many systems the Kemeny consensus is exact (dynamic programme over
subsets, O(2ⁿ n) time and memory); above it a local search is used."""

# Whether a larger score is better, per method ("meta" follows higher_is_better).
_SCORE_DESCENDING = {"borda": True, "mean_rank": False, "copeland": True, "kemeny": False}

_BIG = np.iinfo(np.int64).max // 4  # "impossible" in the integer Kemeny programme


# ----------------------------------------------------------------- Kemeny
def _kemeny_exact(p: np.ndarray) -> tuple[list[int], int]:
    """Exact Kemeny order of systems ``0..n-1`` by dynamic programming over subsets.

    ``p[b, s]`` counts the tasks ranking b strictly above s. Placing s right
    after the set S costs c(S, s) = Σ_{b ∉ S∪{s}} p[b, s] (the systems put
    below s that tasks rank above it). With h(S) the least cost of ordering the
    systems outside S below S, h(all) = 0 and h(S) = min_{s ∉ S} c(S, s) +
    h(S ∪ {s}); the order is rebuilt from the top, taking the lowest-index
    system among the optimal choices (systems come in tie-break order).
    """
    n = p.shape[0]
    size = 1 << n
    bits = (1 << np.arange(n)).astype(np.int64)
    above = np.zeros((size, n), dtype=np.int64)  # Σ_{b ∈ S} p[b, s]
    count = np.zeros(size, dtype=np.int64)  # |S|
    for i in range(n):  # subsets with top bit i = subsets without it + {i}
        above[1 << i : 1 << (i + 1)] = above[: 1 << i] + p[i]
        count[1 << i : 1 << (i + 1)] = count[: 1 << i] + 1
    cost = p.sum(axis=0)[None, :] - above  # c(S, s), valid for s ∉ S (p[s, s] = 0)
    masks = np.arange(size, dtype=np.int64)
    h = np.zeros(size, dtype=np.int64)
    for k in range(n - 1, -1, -1):  # sets of size k, from the largest down
        layer = masks[count == k]
        free = (layer[:, None] & bits[None, :]) == 0
        cand = np.where(free, cost[layer] + h[layer[:, None] | bits[None, :]], _BIG)
        h[layer] = cand.min(axis=1)
    order: list[int] = []
    placed = 0
    for _ in range(n):
        free = (placed & bits) == 0
        cand = np.where(free, cost[placed] + h[placed | bits], _BIG)
        s = int(np.argmin(cand))  # first optimum: the best by the tie-break order
        order.append(s)
        placed |= 1 << s
    return order, int(h[0])


def _order_cost(p: np.ndarray, order: Sequence[int]) -> int:
    """Σ_{i<j} p[o_j, o_i]: (task, pair) disagreements of an order."""
    po = p[np.ix_(order, order)]
    return int(np.tril(po, -1).sum())


def _kemeny_local(p: np.ndarray) -> tuple[list[int], int]:
    """Local search from the tie-break (Borda) order with single-system moves.

    A move takes a system out and puts it back where it causes the fewest
    disagreements (the topmost such place); it is made only when that lowers
    the cost, so the search ends (the cost is a non-negative integer) at an
    order that no single move improves.
    """
    order = list(range(p.shape[0]))
    improved = True
    while improved:
        improved = False
        for x in list(order):
            rest = [y for y in order if y != x]
            # x inserted before rest[q]: disagreements with the systems above it
            # (tasks rank x above them) plus those below it (tasks rank them above x).
            up = np.concatenate([[0], np.cumsum(p[x, rest])])
            down = np.concatenate([[0], np.cumsum(p[rest, x])])
            contrib = up + (down[-1] - down)
            here = order.index(x)
            best = int(np.argmin(contrib))
            if contrib[best] < contrib[here]:
                order = rest[:best] + [x] + rest[best:]
                improved = True
    return order, _order_cost(p, order)


def _kemeny(
    wins: np.ndarray, borda: np.ndarray, sys_in: np.ndarray, names: pd.Index
) -> tuple[np.ndarray, list[int], list[bool]]:
    """Consensus positions (metric, system), the cost and exactness per metric."""
    position = np.full(sys_in.shape, np.nan)
    costs: list[int] = []
    exact: list[bool] = []
    for m in range(sys_in.shape[0]):  # one optimisation per metric
        members = np.flatnonzero(sys_in[m])
        # Tie-break order: Borda score (descending), then system name.
        tie = sorted(members, key=lambda s: (-borda[m, s], str(names[s])))
        p = wins[m][np.ix_(tie, tie)]
        is_exact = len(tie) <= KEMENY_EXACT_MAX
        order, cost = _kemeny_exact(p) if is_exact else _kemeny_local(p)
        position[m, np.asarray(tie)[order]] = np.arange(1, len(order) + 1)
        costs.append(cost)
        exact.append(is_exact)
    return position, costs, exact


# ----------------------------------------------------------------- meta
def _meta_columns(
    scores: pd.DataFrame,
    frame: pd.DataFrame,
    *,
    control: Any,
    effect: str,
    pool_method: str,
    ci: str | None,
    alpha: float,
) -> pd.DataFrame:
    """Pooled effects against ``control`` for the rows of ``frame``."""
    if control is None:
        raise OptionError(
            "method='meta' ranks systems by their pooled effect over a common control; "
            "pass `control` (a system name)."
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
    pooled = pool(eff, method=pool_method, test=ci, alpha=alpha)
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


# ----------------------------------------------------------------- main
@any_frame
@literal_signature
def leaderboard(
    scores: pd.DataFrame,
    *,
    method: Aggregation = "borda",
    metric: str | Sequence[str] | None = None,
    higher_is_better: bool | Mapping[str, bool] = True,
    control: str | None = None,
    effect: EffectType = DEFAULT_EFFECT,
    pool_method: PoolMethod = DEFAULT_POOL_METHOD,
    ci: CIMethod | None = DEFAULT_CI,
    alpha: float = 0.05,
    rank_intervals: bool = False,
    n_resamples: int = 1000,
    seed: int | None = None,
) -> pd.DataFrame:
    """Rank systems over tasks: one leaderboard per metric.

    A system's score on a task is its mean ``value`` over the task's queries;
    the per-task scores are aggregated into one ranking per metric by a rank
    aggregation rule (Borda count, mean rank, Copeland, Kemeny–Young) or by a
    random-effects meta-analysis against a common control.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table: ``task, query, system, metric, value``. Within each
        metric every system must have a score on every task.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    method : {"borda", "mean_rank", "copeland", "kemeny", "meta"}, default "borda"
        The aggregation rule (formulas under *Notes*).
    metric : str or list of str, optional
        The metric(s) to rank on; None ranks on every metric of the table.
    higher_is_better : bool or mapping of str to bool, default True
        Whether larger values are better, for all metrics or per metric
        (``{"accuracy": True, "latency": False}``; every ranked metric needs
        an entry).
    control : str, optional
        The common control (baseline) system; required by ``method="meta"``
        and not used by the other methods (but checked: a system of the table).
    effect : {"md", "smd", "smcrp", "smcc", "rom", "corr"}, default "smcrp"
        ``method="meta"`` only: the effect size, see :func:`metaeval.effects`.
    pool_method : {"EE", "FE", "DL", "HE", "HS", "SJ", "ML", "REML", "EB", "PM"}, default "REML"
        ``method="meta"`` only: the τ² estimator, see :func:`metaeval.pool`.
    ci : {"z", "t", "knha", "hksj", "adhoc"} or None, default None
        ``method="meta"`` only: the test and interval, see :func:`metaeval.pool`
        (``"adhoc"``: Knapp–Hartung never narrower than the normal interval).
    alpha : float, default 0.05
        ``method="meta"`` and ``rank_intervals=True``: the intervals have level 1 − alpha.
    rank_intervals : bool, default False
        Add the simultaneous rank intervals and tie groups of
        :func:`metaeval.ranking.rank_intervals`: for ``"borda"`` and ``"mean_rank"``
        those of the Borda points (``by="borda"``), whose order is the leaderboard's; for
        ``"meta"`` those of the pooled effects (``by="pooled"`` with the same
        ``control``, ``effect``, ``pool_method`` and ``ci``, so that a system is told
        apart from the control only where its ``ci_low, ci_high`` exclude 0); the other
        methods raise an OptionError.
    n_resamples : int, default 1000
        ``rank_intervals=True`` only: the bootstrap resamples.
    seed : int, optional
        ``rank_intervals=True`` only: the seed of the resampling.

    Every option is checked whichever the method, so that a typo is an
    error even where the option is not used.

    Returns
    -------
    pandas.DataFrame
        One row per ``(metric, system)``, sorted by metric (in the table's
        order of first appearance), then ``rank``, then system name; RangeIndex;
        columns:

        - ``metric, system`` (str);
        - ``score`` (float): the method's aggregate — Borda points (higher is
          better), mean rank (lower), Copeland wins − losses (higher), position
          in the Kemeny consensus order (lower; 1 = top), pooled effect over the
          control (higher, or lower with ``higher_is_better=False``);
        - ``rank`` (int): competition ranking of ``score`` within the metric
          ("1, 2, 2, 4"), 1 = best;
        - ``n_tasks`` (int): the tasks of the metric;
        - ``mean`` (float): the mean over tasks of the per-task scores;
        - for ``meta`` also ``ci_low, ci_high, p_value`` (float) and ``k``
          (nullable Int64, tasks pooled) from :func:`metaeval.pool`; the
          control's row has ``score`` 0.0 and NaN/<NA> elsewhere;
        - with ``rank_intervals=True`` also ``rank_low, rank_high, tie_group`` (int)
          and ``prob_best`` (float) of :func:`metaeval.ranking.rank_intervals`.

        ``attrs`` hold ``method``, ``higher_is_better`` (a dict metric → bool);
        for ``kemeny`` also ``kemeny_exact`` (bool: True when every metric was
        solved exactly) and ``kemeny_cost`` (dict metric → int: the number of
        (task, pair) disagreements of the returned order, the minimum when
        exact); for ``meta`` also ``control, effect, pool_method, ci, alpha``;
        with ``rank_intervals=True`` also ``n_resamples``, ``seed`` and ``alpha``.

    Raises
    ------
    metaeval.SchemaError
        If ``scores`` is not a valid scores table.
    metaeval.OptionError
        A bad value of any option (named in the message: ``method``,
        ``effect``, ``pool_method``, ``ci``, ``alpha``, ``control``,
        ``metric``, ``higher_is_better``), whichever the method; a
        ``higher_is_better`` mapping that misses a ranked metric, or
        ``method="meta"`` without ``control``.
    metaeval.PairingError
        A system without a score on some task of a metric (every missing
        ``(metric, task, system)`` is listed), fewer than 2 systems on a metric,
        an empty table, or a ``control`` that is not a system of the table (or,
        for ``meta``, of a metric).

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
    - ``meta``: for every metric, ``metaeval.effects(scores, control=control,
      effect=effect)`` then ``metaeval.pool(method=pool_method, test=ci)``;
      ``score`` is the pooled effect of each system over the control (0 for
      the control). Systems with a NaN pooled effect rank last.

    Borda, mean rank and Copeland use only the per-task ranks; Colombo et al.
    (2022) discuss these rules for NLP benchmarks and argue for the Kemeny
    consensus, which is the maximum-likelihood ranking under the Mallows model
    (Young & Levenglick 1978 characterise it axiomatically). Unlike them,
    ``meta`` accounts for the per-task uncertainty and gives intervals.

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
    >>> from metaeval.ranking import leaderboard
    >>> scores = pd.DataFrame({
    ...     "task": ["t1"] * 3 + ["t2"] * 3 + ["t3"] * 3, "query": "q1",
    ...     "system": ["A", "B", "C"] * 3, "metric": "acc",
    ...     "value": [0.9, 0.8, 0.7, 0.6, 0.4, 0.5, 0.7, 0.8, 0.3]})
    >>> leaderboard(scores, method="borda")
      metric system  score  rank  n_tasks      mean
    0    acc      A    5.0     1        3  0.733333
    1    acc      B    3.0     2        3  0.666667
    2    acc      C    1.0     3        3  0.500000
    >>> board = leaderboard(scores, method="kemeny")
    >>> board["system"].tolist(), board.attrs["kemeny_cost"]
    (['A', 'B', 'C'], {'acc': 2})
    """
    # every option is checked, whether or not the method uses it
    check_option("method", method, AGGREGATIONS)
    check_option("effect", effect, EFFECT_TYPES)
    check_option("pool_method", pool_method, POOL_METHODS)
    check_option("ci", ci, (*CI_METHODS, None))
    alpha = check_alpha(alpha)
    if control is not None and not isinstance(control, str):
        raise OptionError(f"`control` must be one system name (a str), not {control!r}.")
    if not isinstance(rank_intervals, bool | np.bool_):
        raise OptionError(
            f"`rank_intervals` must be True or False, but {rank_intervals!r} was passed."
        )
    n_resamples = check_resamples(n_resamples, minimum=2)
    if seed is not None:
        resolve_seed(seed)  # checked here too: a typo is an error whatever the options
    if rank_intervals and method not in ("borda", "mean_rank", "meta"):
        raise OptionError(
            f"rank_intervals=True resamples the Borda points or the pooled effects, so it "
            f"needs method='borda', 'mean_rank' or 'meta', but method={method!r} was passed; "
            "for intervals of the mean over tasks call "
            "metaeval.ranking.rank_intervals(scores, by='mean')."
        )
    raw = scores
    scores, directions = scores_of_metrics(scores, metric, higher_is_better)

    x, metrics, _tasks, systems = task_means(scores)
    metrics = metrics.astype(str)
    systems = systems.astype(str)
    sys_in, task_in = check_complete(x, metrics, _tasks.astype(str), systems)
    if control is not None and control not in set(systems):
        raise PairingError(
            f"The control {control!r} is not a system of the table; the systems are "
            f"{quote_list(list(systems))}."
        )
    n_sys = sys_in.sum(axis=1)
    n_tasks = task_in.sum(axis=1)
    sign = np.array([1.0 if directions[m] else -1.0 for m in metrics])

    ranks = task_ranks(x, sign)  # (metric, task, system)
    borda = np.nansum(n_sys[:, None, None] - ranks, axis=1)  # (metric, system)
    mean = np.nansum(x, axis=1) / n_tasks[:, None]
    attrs: dict[str, Any] = {"method": method, "higher_is_better": directions}

    if method == "borda":
        score = borda
    elif method == "mean_rank":
        score = np.nansum(ranks, axis=1) / n_tasks[:, None]
    elif method in ("copeland", "kemeny"):
        # wins[m, a, b]: tasks ranking a strictly above b (NaN compares False).
        wins = (ranks[..., :, None] < ranks[..., None, :]).sum(axis=1)
        if method == "copeland":
            score = np.sign(wins - wins.transpose(0, 2, 1)).sum(axis=-1).astype(float)
        else:
            score, costs, exact = _kemeny(wins, borda, sys_in, systems)
            attrs["kemeny_exact"] = all(exact)
            attrs["kemeny_cost"] = dict(zip(metrics, costs, strict=True))
    else:
        score = np.zeros_like(mean)  # filled from the pooled table below

    m_idx, s_idx = np.nonzero(sys_in)
    frame = pd.DataFrame(
        {
            "metric": metrics[m_idx].to_numpy(dtype=object),
            "system": systems[s_idx].to_numpy(dtype=object),
            "score": score[m_idx, s_idx].astype(float),
            "rank": 0,
            "n_tasks": n_tasks[m_idx].astype(np.int64),
            "mean": mean[m_idx, s_idx],
        }
    )
    if method == "meta":
        extra = _meta_columns(
            scores,
            frame,
            control=control,
            effect=effect,
            pool_method=pool_method,
            ci=ci,
            alpha=alpha,
        )
        frame["score"] = extra.pop("effect")
        frame = pd.concat([frame, extra], axis=1)
        attrs.update(control=control, effect=effect, pool_method=pool_method, ci=ci, alpha=alpha)
        descending = sign[m_idx] > 0
    else:
        descending = np.full(len(frame), _SCORE_DESCENDING[method])
    # Competition ranks; flipping the sign makes every direction "larger is better".
    oriented = pd.Series(np.where(descending, frame["score"], -frame["score"]))
    frame["rank"] = (
        oriented.groupby(m_idx)
        .rank(method="min", ascending=False, na_option="bottom")
        .astype(np.int64)
        .to_numpy()
    )
    frame = frame.assign(_m=m_idx).sort_values(["_m", "rank", "system"], kind="stable")
    frame = frame.drop(columns="_m").reset_index(drop=True)
    if rank_intervals:
        from ._intervals import rank_intervals as intervals_of

        pooled = (
            {
                "by": "pooled",
                "control": control,
                "effect": effect,
                "pool_method": pool_method,
                "ci": ci,
            }
            if method == "meta"
            else {"by": "borda"}
        )
        ints = intervals_of(
            raw,
            n_resamples=n_resamples,
            seed=seed,
            alpha=alpha,
            metric=metric,
            higher_is_better=higher_is_better,
            **pooled,
        )
        cols = ["rank_low", "rank_high", "tie_group", "prob_best"]
        keyed = ints.set_index(["metric", "system"])
        where = pd.MultiIndex.from_frame(frame[["metric", "system"]].astype(object))
        for col in cols:  # four columns, aligned on (metric, system); the dtypes kept
            frame[col] = keyed[col].reindex(where).to_numpy()
        attrs.update(n_resamples=ints.attrs["n_resamples"], seed=ints.attrs["seed"], alpha=alpha)
    frame.attrs = attrs
    return frame

"""Rank intervals: how sure a leaderboard is of each system's place.

One two-level paired bootstrap per metric (tasks with replacement, then queries
within each drawn task, the same queries for every system) gives arrays of shape
``(resamples, tasks, systems)`` of resampled per-task means; the score of each
system (mean over tasks, or Borda points) and its rank follow along the last
axis. Marginal intervals are percentiles of each system's bootstrap rank;
simultaneous ones come from simultaneous intervals for every pairwise
difference of scores (Mogstad, Romano, Shaikh & Wilhelm 2024).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .._options import RANK_BYS, RankBy, literal_signature
from ..errors import (
    OptionError,
    PairingError,
    check_alpha,
    check_option,
    check_resamples,
    format_groups,
    resolve_seed,
)
from ..schema.frames import any_frame
from ._tables import check_complete, scores_of_metrics, task_means

__all__ = ["rank_intervals"]

_CHUNK = 1 << 22
"""Elements of the ``(resamples, tasks, queries, systems)`` block gathered at once."""


def _query_table(sub: pd.DataFrame, systems: pd.Index) -> tuple[np.ndarray, np.ndarray, pd.Index]:
    """The values of one metric as ``(task, query, system)`` (padded with 0), the number
    of queries of each task and the tasks (sorted); PairingError when a system lacks a
    query that another system of the task has."""
    t_codes, tasks = pd.factorize(sub["task"].astype(str), sort=True)
    q_codes, queries = pd.factorize(sub["query"].astype(str), sort=True)
    s_codes = systems.get_indexer(sub["system"].astype(str))
    pair = t_codes.astype(np.int64) * len(queries) + q_codes
    uniq, inv = np.unique(pair, return_inverse=True)
    task_of = uniq // len(queries)
    first = np.searchsorted(task_of, np.arange(len(tasks)))
    n_q = np.bincount(task_of, minlength=len(tasks))
    pos = np.arange(len(uniq)) - first[task_of]
    cell = (t_codes * n_q.max() + pos[inv]) * len(systems) + s_codes
    if len(np.unique(cell)) < len(cell):
        raise PairingError(
            "rank_intervals() needs one row per (task, query, system) of a metric, but the "
            f"metric {sub['metric'].iloc[0]!r} has repeated rows (replicates?); average them "
            "first, e.g. scores.groupby(['task', 'query', 'system', 'metric'], "
            "as_index=False)['value'].mean()."
        )
    v = np.full((len(tasks), int(n_q.max()), len(systems)), np.nan)
    v.flat[cell] = sub["value"].to_numpy(dtype=float)
    valid = np.arange(v.shape[1])[None, :] < n_q[:, None]
    missing = np.isnan(v) & valid[:, :, None]
    if missing.any():
        t, p, s = np.nonzero(missing)
        groups = pd.DataFrame(
            {
                "metric": sub["metric"].iloc[0],
                "task": tasks[t],
                "query": queries[uniq[first[t] + p] % len(queries)],
                "system": systems[s],
            }
        ).astype(object)
        raise PairingError(
            "rank_intervals() resamples queries paired over systems, so every system of a "
            f"task needs a score on each of its queries, but {len(groups)} (metric, task, "
            f"query, system) combination(s) have no row:\n{format_groups(groups)}\n"
            "Keep the queries that every system scored (or fill the missing scores) and "
            "call rank_intervals() again."
        )
    return np.where(valid[:, :, None], v, 0.0), n_q, pd.Index(tasks)


def _score(m: np.ndarray, sign: float, by: str) -> np.ndarray:
    """Each system's score (higher is better) from per-task means ``(..., task, system)``:
    the mean over tasks, or the Borda points Σ_t (N − r_t)."""
    if by == "mean":
        return sign * m.mean(axis=-2)
    from scipy.stats import rankdata

    ranks = rankdata(-sign * m, method="average", axis=-1)
    return (m.shape[-1] - ranks).sum(axis=-2)


def _rank(score: np.ndarray) -> np.ndarray:
    """Competition ranks along the last axis, 1 = the highest score."""
    from scipy.stats import rankdata

    return rankdata(-score, method="min", axis=-1).astype(np.int64)


def _bootstrap(
    v: np.ndarray, n_q: np.ndarray, sign: float, by: str, n_resamples: int, seed: int, key: str
) -> np.ndarray:
    """Scores of every system in ``n_resamples`` two-level paired bootstrap resamples.

    The task draws and the query draws come from two streams of a generator seeded by
    ``(seed, crc32(key))``: a metric gets the same resamples whether or not others are
    ranked with it, and the query draws do not depend on the chunking.
    """
    n_tasks, q_max, n_sys = v.shape
    tasks_rng, query_rng = (
        np.random.default_rng(s)
        for s in np.random.SeedSequence([seed, zlib.crc32(key.encode())]).spawn(2)
    )
    drawn = tasks_rng.integers(0, n_tasks, size=(n_resamples, n_tasks))  # task of each slot
    chunk = max(1, _CHUNK // (n_tasks * q_max * n_sys))
    out = np.empty((n_resamples, n_sys))
    for start in range(0, n_resamples, chunk):  # chunks of resamples, for memory
        tau = drawn[start : start + chunk]  # (b, slot)
        n = n_q[tau]
        p = np.where(np.arange(q_max) < n[..., None], 1.0 / n[..., None], 0.0)
        counts = query_rng.multinomial(n, p).astype(float)  # (b, slot, query), same for all systems
        means = np.matmul(counts[:, :, None, :], v[tau])[:, :, 0, :] / n[..., None]
        out[start : start + chunk] = _score(means, sign, by)
    return out


def _simultaneous(
    boot: np.ndarray, score: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """Rank bounds valid for all systems at once, from max-t intervals for all differences.

    With D_jk the score difference of systems j and k and σ_jk its bootstrap standard
    deviation, c is the 1 − alpha quantile of max_{j<k} |D*_jk − D_jk| / σ_jk over the
    resamples; j beats k when D_jk > c σ_jk. The rank of j lies in
    [1 + #{k beats j}, N − #{j beats k}].
    """
    n_sys = score.shape[0]
    j, k = np.triu_indices(n_sys, 1)
    d = score[j] - score[k]
    d_boot = boot[:, j] - boot[:, k]
    sd = d_boot.std(axis=0, ddof=1)
    tol = 1e-10 * (1.0 + np.abs(score).max())
    # a difference that never varies (a system and itself shifted) is known exactly
    exact = sd <= tol
    z = np.where(exact, 0.0, np.abs(d_boot - d) / np.where(exact, 1.0, sd))
    c = float(np.quantile(z.max(axis=1), 1.0 - alpha, method="inverted_cdf"))
    margin = np.where(exact, tol, c * sd)
    beats = np.zeros((n_sys, n_sys), dtype=bool)
    beats[j, k] = d > margin
    beats[k, j] = -d > margin
    low = 1 + beats.sum(axis=0)
    high = n_sys - beats.sum(axis=1)
    return low, high, c


def _tie_groups(rank: np.ndarray, low: np.ndarray, high: np.ndarray, names: pd.Index) -> np.ndarray:
    """Group 1: the leader and every system whose interval overlaps the leader's; then the
    same from the best system not yet grouped, until every system has a group."""
    order = np.lexsort((np.asarray(names, dtype=str), rank))
    group = np.zeros(len(rank), dtype=np.int64)
    g = 0
    for s in order:  # at most one step per group, not per resample: tiny
        if group[s]:
            continue
        g += 1
        group[(group == 0) & (low <= high[s]) & (high >= low[s])] = g
    return group


@any_frame
@literal_signature
def rank_intervals(
    scores: pd.DataFrame,
    *,
    by: RankBy = "mean",
    n_resamples: int = 1000,
    seed: int | None = None,
    alpha: float = 0.05,
    simultaneous: bool = True,
    metric: str | Sequence[str] | None = None,
    higher_is_better: bool | Mapping[str, bool] = True,
) -> pd.DataFrame:
    """Each system's rank with an interval and its tie group: one leaderboard per metric.

    The ranks come from a score per system over the tasks of a metric (the mean of its
    per-task means, or its Borda points); their uncertainty from a two-level paired
    bootstrap over tasks and queries (see *Notes*).

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table: ``task, query, system, metric, value``. Within each metric every
        system must have a score on every query of every task.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    by : {"mean", "borda"}, default "mean"
        The score that ranks the systems: ``"mean"``, the mean over tasks of the
        per-task means; ``"borda"``, the Borda points Σ_t (N − r_t) of the per-task ranks
        r_t (1 = best, ties averaged) among the N systems.
    n_resamples : int, default 1000
        Bootstrap resamples (at least 2).
    seed : int, optional
        Seed of the resampling; None draws one (reported in ``attrs["seed"]``).
    alpha : float, default 0.05
        The intervals have level 1 − alpha.
    simultaneous : bool, default True
        True: intervals that hold for all systems of a metric at once (family-wise);
        False: marginal intervals, each for one system on its own.
    metric : str or list of str, optional
        The metric(s) to rank on; None ranks on every metric of the table.
    higher_is_better : bool or mapping of str to bool, default True
        Whether larger values are better, for all metrics or per metric.

    Returns
    -------
    pandas.DataFrame
        One row per ``(metric, system)``, sorted by metric (table order), ``rank`` and
        system name; RangeIndex; columns:

        - ``metric, system`` (str);
        - ``score`` (float): the mean over tasks (``by="mean"``, in the metric's units)
          or the Borda points (``by="borda"``; higher is better);
        - ``rank`` (int): competition ranking of ``score`` ("1, 2, 2, 4"), 1 = best;
        - ``rank_low, rank_high`` (int): the interval of the rank (1 ≤ rank_low ≤
          rank_high ≤ N);
        - ``tie_group`` (int): 1 for the leader and the systems whose intervals
          overlap its interval, 2 for the best system not in group 1 and the ungrouped
          systems whose intervals overlap its interval, and so on;
        - ``prob_best`` (float): the share of resamples in which the system ranks first
          (tied first counts);
        - ``n_tasks`` (int): the tasks of the metric.

        ``attrs`` hold ``by, n_resamples, seed, alpha, simultaneous`` and
        ``higher_is_better`` (a dict metric → bool); with ``simultaneous=True`` also
        ``critical_value`` (a dict metric → float: the c of *Notes*).

    Raises
    ------
    metaeval.SchemaError
        If ``scores`` is not a valid scores table.
    metaeval.OptionError
        A bad ``by``, ``n_resamples`` (< 2 or not an integer), ``seed``, ``alpha``,
        ``simultaneous``, ``metric`` or ``higher_is_better``.
    metaeval.PairingError
        A system without a score on some task of a metric or on some query of a task
        (the combinations are listed), repeated rows of a (task, query, system), or
        fewer than 2 systems on a metric.

    Notes
    -----
    **Resampling.** One resample draws T tasks with replacement from the T tasks of the
    metric, then, for each drawn task independently, its n_t queries with replacement
    (a count per query from a multinomial draw); the same counts weight every system,
    so that the comparison stays paired. The per-task means of the resample are the
    count-weighted means (one matrix product per drawn task for all systems), and the
    score and the ranks are recomputed from them. This is the two-stage bootstrap of
    Davison & Hinkley (1997, §3.8), which is conservative (it counts the query
    variance twice, once within the task variance); each metric has its own stream of
    random numbers from ``(seed, metric name)``, so a metric ranked alone gets the
    same intervals as with others.

    **Marginal intervals** (``simultaneous=False``): the alpha/2 and 1 − alpha/2
    quantiles of the system's bootstrap rank (the percentile method, inverted
    empirical distribution).

    **Simultaneous intervals** (default): the method of Mogstad, Romano, Shaikh &
    Wilhelm (2024). For every pair j < k of the N systems let D_jk = s_j − s_k be the
    difference of the scores, D*_jk its value in a resample and σ_jk the standard
    deviation of D*_jk over the resamples. The critical value c is the 1 − alpha
    quantile over resamples of ``max_{j<k} |D*_jk − D_jk| / σ_jk``, so that
    D_jk ± c σ_jk cover all differences at once with probability ≈ 1 − alpha. System
    k beats j when D_kj > c σ_kj; then with probability ≈ 1 − alpha every system's
    true rank lies in [1 + #{k beats j}, N − #{j beats k}]. A pair whose difference
    is the same in every resample (e.g. a system and the same system shifted by a
    constant) is separated whenever the difference is not zero. The observed rank
    always lies in its simultaneous interval. ``by="pooled"`` (a meta-analytic score)
    is not offered: it needs a control and a pooled fit per resample.

    **Tie groups** read the intervals from the top: systems whose rank intervals
    overlap cannot be ordered at this level; group 1 collects those that overlap the
    leader, group 2 those left that overlap the best of the rest, and so on.

    References
    ----------
    Mogstad, M., Romano, J. P., Shaikh, A. M., & Wilhelm, D. (2024). Inference for
    ranks with applications to mobility across neighbourhoods and academic achievement
    across countries. *Review of Economic Studies*, 91(1), 476–518.
    doi:10.1093/restud/rdad006
    Davison, A. C., & Hinkley, D. V. (1997). *Bootstrap Methods and their
    Application*, §3.8. Cambridge University Press. doi:10.1017/CBO9780511802843
    Hall, P., & Miller, H. (2009). Using the bootstrap to quantify the authority of an
    empirical ranking. *Annals of Statistics*, 37(6B), 3929–3959. doi:10.1214/09-AOS699

    Examples
    --------
    Three systems on four tasks of three queries; A and B are close, C far behind:

    >>> import pandas as pd
    >>> from metaeval.ranking import rank_intervals
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
    check_option("by", by, RANK_BYS)
    n_resamples = check_resamples(n_resamples, minimum=2)
    seed = resolve_seed(seed)
    alpha = check_alpha(alpha)
    if not isinstance(simultaneous, bool | np.bool_):
        raise OptionError(f"`simultaneous` must be True or False, but {simultaneous!r} was passed.")
    scores, directions = scores_of_metrics(scores, metric, higher_is_better)
    x, metrics, tasks, systems = task_means(scores)
    metrics, systems = metrics.astype(str), systems.astype(str)
    sys_in, task_in = check_complete(x, metrics, tasks.astype(str), systems, "rank_intervals")

    metric_col = scores["metric"].astype(str).to_numpy()
    parts: list[pd.DataFrame] = []
    critical: dict[str, float] = {}
    for m, name in enumerate(metrics):  # one leaderboard per metric, vectorized within
        names = systems[sys_in[m]]
        v, n_q, _ = _query_table(scores[metric_col == name], names)
        sign = 1.0 if directions[name] else -1.0
        observed = _score(v.sum(axis=1) / n_q[:, None], sign, by)
        boot = _bootstrap(v, n_q, sign, by, n_resamples, seed, name)
        rank = _rank(observed)
        boot_rank = _rank(boot)
        if simultaneous:
            low, high, critical[name] = _simultaneous(boot, observed, alpha)
        else:
            low = np.quantile(boot_rank, alpha / 2, axis=0, method="inverted_cdf")
            high = np.quantile(boot_rank, 1 - alpha / 2, axis=0, method="inverted_cdf")
        low, high = low.astype(np.int64), high.astype(np.int64)
        parts.append(
            pd.DataFrame(
                {
                    "metric": name,
                    "system": names.to_numpy(dtype=object),
                    "score": observed if by == "borda" else sign * observed,
                    "rank": rank,
                    "rank_low": low,
                    "rank_high": high,
                    "tie_group": _tie_groups(rank, low, high, names),
                    "prob_best": (boot_rank == 1).mean(axis=0),
                    "n_tasks": np.int64(task_in[m].sum()),
                    "_m": m,
                }
            )
        )
    frame = pd.concat(parts, ignore_index=True)
    frame = frame.sort_values(["_m", "rank", "system"], kind="stable")
    frame = frame.drop(columns="_m").reset_index(drop=True)
    frame.attrs = {
        "by": by,
        "n_resamples": n_resamples,
        "seed": seed,
        "alpha": alpha,
        "simultaneous": bool(simultaneous),
        "higher_is_better": directions,
    }
    if simultaneous:
        frame.attrs["critical_value"] = critical
    return frame

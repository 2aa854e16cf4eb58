"""Rank intervals: how sure a leaderboard is of each system's place.

A system's rank interval follows from which pairwise differences of scores the data
settle (Mogstad, Romano, Shaikh & Wilhelm 2024): j is surely above k when D_jk = s_j − s_k
exceeds c σ_jk, with σ_jk the standard error of D_jk and c a critical value for the max
over all pairs (simultaneous) or over the pairs of one system (marginal). The standard
errors and critical values come from the few tasks themselves, with t on k − 1 degrees
of freedom: the paired t over tasks for the mean over tasks, the pooled model's own
standard error (Knapp–Hartung) for the pooled effect, the t over tasks gated by sign
flips of whole tasks for the Borda points. A two-level paired bootstrap (tasks with
replacement, then queries — or clusters of queries — within each drawn task, the same for
every system) gives ``prob_best`` and the correlations of the pooled effects, as arrays of
shape ``(resamples, tasks, systems)`` reduced along the last axis.

This module holds the per-task machinery: the boards of the means and the Borda points,
the resampled sums the pooled effects are made of, the pairwise decisions and the table.
The public :func:`metaeval.rank_intervals` (the workflows room) composes them, and for
``aggregation="pooled"`` runs :func:`metaeval.effects` and :func:`metaeval.pool` on the
data and on the resampled sums.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..errors import PairingError, excerpt, format_groups
from ._tables import check_complete, settle_ties, task_means, tie_tolerance

__all__ = [
    "RankData",
    "QueryTable",
    "rank_data",
    "metric_board",
    "score_board",
    "effect_sums",
    "resampled_sums",
    "interval_table",
]

_CHUNK = 1 << 22
"""Elements of the ``(resamples, tasks, units, systems)`` block gathered at once (and of
the ``(draws, systems, systems)`` block of the critical values)."""

_DRAWS = 20_000
"""Monte Carlo draws of a critical value: normal vectors with the scores' covariance (t),
or sign flips of the tasks (Borda; all 2^k of them when 2^k is at most this many)."""


# ------------------------------------------------------------------ the data
def _query_table(
    sub: pd.DataFrame, systems: pd.Index, clusters: pd.Series | None = None
) -> tuple[np.ndarray, np.ndarray, pd.Index, np.ndarray, np.ndarray]:
    """The values of one metric as ``(task, query, system)`` (padded with 0), the number
    of queries of each task, the tasks (sorted), the unit of each ``(task, query)`` slot
    (its cluster's code within the task with ``clusters``, a Series of cluster ids indexed
    by (task, query) as str; else the query itself; −1 for padding) and the number of units
    of each task; PairingError when a system lacks a query that another system of the task
    has."""
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
            f"metric {excerpt(sub['metric'].iloc[0])} has repeated rows (replicates?); average them "
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
    unit = np.full(valid.shape, -1, dtype=np.int64)
    if clusters is None:
        unit[valid] = np.broadcast_to(np.arange(v.shape[1]), valid.shape)[valid]
        n_u = n_q.copy()
    else:  # the cluster of every (task, query) slot, coded within its task
        keys = pd.MultiIndex.from_arrays([tasks[task_of], queries[uniq % len(queries)]])
        label = clusters.reindex(keys).to_numpy()
        code = pd.Series(label).groupby(task_of).transform(lambda c: pd.factorize(c)[0])
        unit[task_of, pos] = code.to_numpy(dtype=np.int64)
        n_u = np.zeros(len(tasks), dtype=np.int64)
        np.maximum.at(n_u, task_of, unit[task_of, pos] + 1)
    return np.where(valid[:, :, None], v, 0.0), n_q, pd.Index(tasks), unit, n_u


def _unit_sums(unit: np.ndarray, n_u: np.ndarray, *arrays: np.ndarray) -> list[np.ndarray]:
    """Per ``(task, unit)`` the sums over its queries of each ``(task, query, system)``
    array, and (last) the number of queries of each unit ``(task, unit)``: the queries
    themselves (one each) without clusters."""
    n_tasks, q_max = unit.shape
    u_max = int(n_u.max())
    t, q = np.nonzero(unit >= 0)
    flat = t * u_max + unit[t, q]
    out: list[np.ndarray] = []
    for a in arrays:
        sums = np.zeros((n_tasks * u_max, a.shape[-1]))
        np.add.at(sums, flat, a[t, q])
        out.append(sums.reshape(n_tasks, u_max, a.shape[-1]))
    out.append(np.bincount(flat, minlength=n_tasks * u_max).reshape(n_tasks, u_max).astype(float))
    return out


def _score(m: np.ndarray, sign: float, aggregation: str) -> np.ndarray:
    """Each system's score (higher is better) from per-task means ``(..., task, system)``:
    the mean over tasks, or the Borda points Σ_t (N − r_t)."""
    if aggregation == "mean":
        return sign * m.mean(axis=-2)
    from scipy.stats import rankdata

    ranks = rankdata(-sign * m, method="average", axis=-1)
    return (m.shape[-1] - ranks).sum(axis=-2)


def _rank(score: np.ndarray) -> np.ndarray:
    """Competition ranks along the last axis, 1 = the highest score."""
    from scipy.stats import rankdata

    return rankdata(-score, method="min", axis=-1).astype(np.int64)


# ------------------------------------------------------------------ the bootstrap
def _resamples(
    n_u: np.ndarray, n_cells: int, n_resamples: int, seed: int, key: str
) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
    """The two-level paired bootstrap, in chunks of resamples: ``(rows, tau, counts)``
    with ``tau`` the task drawn into each slot ``(b, slot)`` and ``counts`` how often each
    unit (query, or cluster of queries) of that task is drawn ``(b, slot, unit)`` — the
    same counts for every system.

    The task draws and the unit draws come from two streams of a generator seeded by
    ``(seed, crc32(key))``: a metric gets the same resamples whether or not others are
    ranked with it, and the unit draws do not depend on the chunking. A chunk gathers at
    most about :data:`_CHUNK` elements of ``n_cells`` per (slot, unit).
    """
    n_tasks, u_max = len(n_u), int(n_u.max())
    tasks_rng, query_rng = (
        np.random.default_rng(s)
        for s in np.random.SeedSequence([seed, zlib.crc32(key.encode())]).spawn(2)
    )
    drawn = tasks_rng.integers(0, n_tasks, size=(n_resamples, n_tasks))  # task of each slot
    chunk = max(1, _CHUNK // (n_tasks * u_max * n_cells))
    for start in range(0, n_resamples, chunk):  # chunks of resamples, for memory
        tau = drawn[start : start + chunk]  # (b, slot)
        n = n_u[tau]
        # n draws with replacement among the n units of each slot: the first n of u_max
        # uniform numbers per slot pick a unit each, counted by one bincount (a multinomial
        # draw, ~50 times faster than numpy's multinomial with a probability array)
        pick = (query_rng.random((*tau.shape, u_max)) * n[..., None]).astype(np.int64)
        cell = np.arange(tau.size).reshape(tau.shape)[..., None] * u_max + pick
        counts = np.bincount(cell[np.arange(u_max) < n[..., None]], minlength=tau.size * u_max)
        yield slice(start, start + len(tau)), tau, counts.reshape(*tau.shape, u_max).astype(float)


def _weighted(counts: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Count-weighted sums over the units: ``(b, slot, u) x (b, slot, u, s) -> (b, slot, s)``
    (one matrix product per drawn task, for all systems)."""
    return np.matmul(counts[:, :, None, :], v)[:, :, 0, :]


def _bootstrap(
    sums: np.ndarray,
    size: np.ndarray,
    n_u: np.ndarray,
    sign: float,
    aggregation: str,
    n_resamples: int,
    seed: int,
    key: str,
    tol: float,
) -> np.ndarray:
    """Scores (mean or Borda) of every system in ``n_resamples`` bootstrap resamples, from
    the per-unit sums ``(task, unit, system)`` and sizes ``(task, unit)``; each resample's
    means settled by :func:`settle_ties` (``tol``), so that equal systems tie in it."""
    out = np.empty((n_resamples, sums.shape[2]))
    for rows, tau, counts in _resamples(n_u, sums.shape[2], n_resamples, seed, key):
        n = np.einsum("bsu,bsu->bs", counts, size[tau])
        means = settle_ties(_weighted(counts, sums[tau]) / n[..., None], tol)
        score = _score(means, sign, aggregation)
        out[rows] = settle_ties(score, tol) if aggregation == "mean" else score
    return out


def effect_sums(
    v: np.ndarray, n_q: np.ndarray, unit: np.ndarray, n_u: np.ndarray, control: int
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """The per-unit sums :func:`resampled_sums` resamples, and the shifts: per ``(task,
    unit, system)`` the sums over the unit's queries of the scores shifted by each system's
    mean on the task, g, of g² and of g times the control's g, and the units' sizes
    ``(task, unit)``; the shifts ``(task, system)``."""
    valid = np.arange(v.shape[1])[None, :] < n_q[:, None]
    shift = v.sum(axis=1) / n_q[:, None]  # (task, system)
    g = np.where(valid[:, :, None], v - shift[:, None, :], 0.0)
    sg, sgg, sgc, size = _unit_sums(unit, n_u, g, g * g, g * g[..., control : control + 1])
    return (sg, sgg, sgc, size), shift


def resampled_sums(
    sums: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    shift: np.ndarray,
    n_u: np.ndarray,
    n_resamples: int,
    seed: int,
    key: str,
) -> Iterator[tuple[slice, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The count-weighted sums of :func:`effect_sums` in the resamples of
    :func:`_resamples` (the same draws as the other scores), in chunks: ``(rows, n, shift,
    Σg, Σg², Σg·g_control)``, the sums ``(resample, slot, system)``, n ``(resample, slot,
    1)``; matrix products for all systems at once. The pooled scores of
    :func:`metaeval.rank_intervals` turn them into effects."""
    g, gg, gc, size = sums
    n_sys = g.shape[2]
    for rows, tau, counts in _resamples(n_u, 3 * n_sys, n_resamples, seed, key):
        sx = _weighted(counts, g[tau])
        sxx = _weighted(counts, gg[tau])
        sxy = _weighted(counts, gc[tau])
        n = np.einsum("bsu,bsu->bs", counts, size[tau])[..., None]
        yield rows, n, shift[tau], sx, sxx, sxy


# ------------------------------------------------------------------ the pairwise decisions
def _t_draws(
    cov: np.ndarray, df: float, rng: np.random.Generator, size: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Draws ``(z, s)`` in chunks: z normal with covariance ``cov`` ``(draws, system)`` and
    s = √(χ²_df / df) ``(draws,)`` (1 for df = ∞), so that (z_j − z_k) / (σ_jk s) is t on df
    degrees of freedom for every pair, with the pairs' correlations."""
    lam, vec = np.linalg.eigh(cov)
    root = vec * np.sqrt(np.clip(lam, 0.0, None))  # cov = root @ root.T
    n = cov.shape[0]
    chunk = max(1, _CHUNK // (n * n))
    for start in range(0, size, chunk):
        m = min(chunk, size - start)
        z = rng.standard_normal((m, n)) @ root.T
        s = np.ones(m) if np.isinf(df) else np.sqrt(rng.chisquare(df, m) / df)
        yield z, s


def _sign_flips(f: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
    """p-values ``(system, system)`` of the sign-flip test of every pair's per-task
    differences d_t = f_tj − f_tk: the share of sign patterns ε (flipping whole tasks)
    with |Σ_t ε_t d_t| ≥ |Σ_t d_t| — every one of the 2^k patterns when there are at most
    ``size`` (exact; with two systems and d_t = ±1 the two-sided sign test), else the
    identity and ``size`` − 1 random ones."""
    k, n = f.shape
    chunk = max(1, _CHUNK // (n * n))
    observed = np.abs(f.sum(axis=0)[:, None] - f.sum(axis=0)[None, :])
    total = 2**k if 2**k <= size else size
    hits = np.zeros((n, n))
    for lo in range(0, total, chunk):
        hi = min(total, lo + chunk)
        if 2**k <= size:  # the patterns lo..hi of all 2^k
            eps = ((np.arange(lo, hi)[:, None] >> np.arange(k)) & 1) * 2.0 - 1.0
        else:  # the identity first, then random patterns
            eps = rng.choice([-1.0, 1.0], size=(hi - lo, k))
            eps[np.arange(lo, hi) == 0] = 1.0
        g = eps @ f
        hits += (np.abs(g[:, :, None] - g[:, None, :]) >= observed * (1 - 1e-12)).sum(axis=0)
    return hits / total


def _critical(
    draws: Iterator[tuple[np.ndarray, np.ndarray]], sigma: np.ndarray, alpha: float
) -> tuple[float, np.ndarray]:
    """The 1 − alpha quantiles of max |z_j − z_k| / (σ_jk s) over all pairs (simultaneous)
    and over the pairs of each system (marginal), pairs with σ_jk not finite and positive
    left out (the inverted empirical distribution: a draw's statistic exceeds the value
    with probability at most alpha)."""
    use = np.isfinite(sigma) & (sigma > 0)
    inv = np.where(use, 1.0 / np.where(use, sigma, 1.0), 0.0)
    sim, marg = [], []
    for z, s in draws:
        t = np.abs(z[:, :, None] - z[:, None, :]) * inv / s[:, None, None]
        marg.append(t.max(axis=2))
        sim.append(marg[-1].max(axis=1))
    c = np.quantile(np.concatenate(sim), 1 - alpha, method="inverted_cdf")
    c_j = np.quantile(np.concatenate(marg), 1 - alpha, axis=0, method="inverted_cdf")
    return float(c), c_j


def _bounds(beats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank bounds from ``beats[j, k]`` (j surely above k): [1 + #{k above j},
    N − #{k below j}]."""
    return 1 + beats.sum(axis=0), beats.shape[0] - beats.sum(axis=1)


def _intervals(
    diff: np.ndarray,
    sigma: np.ndarray,
    exact: np.ndarray,
    draws: Iterator[Any],
    draw_sigma: np.ndarray,
    alpha: float,
    tol: float,
    t_df: float,
    allowed: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """Simultaneous and marginal rank bounds from the score differences ``diff[j, k]`` =
    s_j − s_k, their standard errors ``sigma`` (NaN: the pair is never told apart) and the
    pairs known without error (``exact``: apart when the difference exceeds ``tol``, else
    known equal). The critical values come from ``draws`` standardized by ``draw_sigma``.

    A family of one pair (two systems, or a system with one other it can be told from)
    gets the exact t quantile on ``t_df`` degrees of freedom instead of the draws'. Where
    ``allowed`` is False a pair is never told apart.
    """
    from scipy import stats

    use = np.isfinite(sigma) & (sigma > 0) & ~exact
    if use.sum(axis=1).max() > 1:  # a family of several pairs: the draws
        c, c_j = _critical(draws, np.where(use, draw_sigma, np.nan), alpha)
    else:  # every family has at most one pair: the t quantile alone
        c, c_j = np.nan, np.full(len(diff), np.nan)
    exact_t = stats.t.isf(alpha / 2, t_df) if np.isfinite(t_df) else stats.norm.isf(alpha / 2)
    if use.sum() == 2:  # one pair in all (each counted twice)
        c = float(exact_t)
    c_j = np.where(use.sum(axis=1) == 1, exact_t, c_j)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(use, diff / np.where(use, sigma, 1.0), 0.0)
    if allowed is not None:
        t = np.where(allowed, t, 0.0)
    known = exact & (diff > tol) & (True if allowed is None else allowed)
    equal = exact & (np.abs(diff) <= tol)
    np.fill_diagonal(equal, False)
    above = known | (t > c)  # above[j, k]: j surely above k (all pairs at once)
    low = 1 + above.sum(axis=0)
    high = len(diff) - (above | equal).sum(axis=1)
    above_j = known | (t > c_j[:, None])  # j's own family: j above k
    below_j = known.T | (t.T > c_j[:, None])  # j's own family: k above j
    m_low = 1 + below_j.sum(axis=1)
    m_high = len(diff) - (above_j | equal).sum(axis=1)
    return low, high, m_low, m_high, c


def _tie_groups(rank: np.ndarray, low: np.ndarray, high: np.ndarray, names: pd.Index) -> np.ndarray:
    """Tie groups: the systems in rank order (ties by name), cut wherever every rank
    interval above the cut ends before every interval below it begins; group 1 is the
    block of the leader, group 2 the next, and so on."""
    order = np.lexsort((np.asarray(names, dtype=str), rank))
    top = np.maximum.accumulate(high[order])  # the lowest place any system so far may take
    rest = np.minimum.accumulate(low[order][::-1])[::-1]  # the highest any later one may
    cut = top[:-1] < rest[1:]
    group = np.empty(len(rank), dtype=np.int64)
    group[order] = 1 + np.concatenate([[0], np.cumsum(cut)])
    return group


# ------------------------------------------------------------------ the leaderboards
class RankData(NamedTuple):
    """The per-task means of the ranked metrics (:func:`rank_data`)."""

    scores: pd.DataFrame
    directions: dict[str, bool]
    clusters: pd.Series | None
    x: np.ndarray
    metrics: pd.Index
    tasks: pd.Index
    systems: pd.Index
    sys_in: np.ndarray
    task_in: np.ndarray
    metric_col: np.ndarray


class QueryTable(NamedTuple):
    """One metric's values as ``(task, query, system)`` and its per-task means
    (:func:`metric_board`)."""

    v: np.ndarray
    n_q: np.ndarray
    unit: np.ndarray
    n_u: np.ndarray
    means: np.ndarray
    scale: float


def rank_data(
    scores: pd.DataFrame, directions: dict[str, bool], clusters: pd.Series | None
) -> RankData:
    """The per-task means of the checked scores of :func:`scores_of_metrics` (every
    system on every task of a metric), with the cluster of each ``(task, query)`` (a
    Series of cluster ids indexed by (task, query) as str) or None."""
    x, metrics, tasks, systems = task_means(scores)
    metrics, systems = metrics.astype(str), systems.astype(str)
    sys_in, task_in = check_complete(x, metrics, tasks.astype(str), systems, "rank_intervals")
    metric_col = scores["metric"].astype(str).to_numpy()
    return RankData(
        scores, directions, clusters, x, metrics, tasks, systems, sys_in, task_in, metric_col
    )


def metric_board(data: RankData, m: int) -> tuple[dict[str, Any], QueryTable]:
    """The leaderboard of metric ``m`` before its scores (``names``, ``sign``, ``tol``), and
    its query table."""
    name = data.metrics[m]
    names = data.systems[data.sys_in[m]]
    sign = 1.0 if data.directions[name] else -1.0
    sub = data.scores[data.metric_col == name]
    v, n_q, _, unit, n_u = _query_table(sub, names, data.clusters)
    means = sign * data.x[m][data.task_in[m]][:, data.sys_in[m]]  # (task, system), higher is better
    scale = float(np.abs(v).max())
    depth = np.log2(max(int(n_q.max()), 1)) + 16 + means.shape[0]
    tol = float(tie_tolerance(scale, depth))
    board: dict[str, Any] = {"names": names, "sign": sign, "tol": tol}
    return board, QueryTable(v, n_q, unit, n_u, means, scale)


def score_board(
    board: dict[str, Any],
    query: QueryTable,
    aggregation: str,
    n_resamples: int,
    seed: int,
    key: str,
) -> None:
    """Fill a board of :func:`metric_board` with the scores of ``aggregation`` ``"mean"`` or
    ``"borda"`` and their bootstrap resamples."""
    v, n_q, unit, n_u, means, scale = query
    sign, tol = board["sign"], board["tol"]
    if aggregation == "mean":
        score = settle_ties(_score(means, 1.0, aggregation), tol)
    else:
        score = _score(means, 1.0, aggregation)
    sums, size = _unit_sums(unit, n_u, v)
    tol_boot = float(tie_tolerance(scale, int(n_q.max()) + means.shape[0] + 16))
    boot = _bootstrap(sums, size, n_u, sign, aggregation, n_resamples, seed, key, tol_boot)
    board.update(observed=score, boot=boot, means=means, v=sign * v, n_q=n_q, unit=unit, n_u=n_u)


def interval_table(
    data: RankData,
    boards: list[dict[str, Any]],
    *,
    aggregation: str,
    n_resamples: int,
    seed: int,
    alpha: float,
    simultaneous: bool,
    cluster: str | None,
) -> pd.DataFrame:
    """The table of :func:`metaeval.rank_intervals` from the filled boards (one per metric):
    the ranks, their intervals and tie groups, ``prob_best``; its ``attrs`` but the pooled
    model's."""
    metrics, task_in = data.metrics, data.task_in
    parts: list[pd.DataFrame] = []
    critical: dict[str, float] = {}
    for m, board in enumerate(boards):
        name, names, observed = metrics[m], board["names"], board["observed"]
        low, high, m_low, m_high, critical[name] = _pairwise(board, aggregation, alpha, seed, name)
        if not simultaneous:
            low, high = m_low, m_high
        rank = _rank(observed)
        parts.append(
            pd.DataFrame(
                {
                    "metric": name,
                    "system": names.to_numpy(dtype=object),
                    "score": observed if aggregation == "borda" else board["sign"] * observed,
                    "rank": rank,
                    "rank_low": low.astype(np.int64),
                    "rank_high": high.astype(np.int64),
                    "tie_group": _tie_groups(rank, low, high, names),
                    "prob_best": (_rank(board["boot"]) == 1).mean(axis=0),
                    "n_tasks": np.int64(task_in[m].sum()),
                    "_m": m,
                }
            )
        )
    frame = pd.concat(parts, ignore_index=True)
    frame = frame.sort_values(["_m", "rank", "system"], kind="stable")
    frame = frame.drop(columns="_m").reset_index(drop=True)
    frame.attrs = {
        "aggregation": aggregation,
        "n_resamples": n_resamples,
        "seed": seed,
        "alpha": alpha,
        "simultaneous": bool(simultaneous),
        "higher_is_better": data.directions,
        "cluster": cluster,
    }
    if simultaneous:
        frame.attrs["critical_value"] = critical
    return frame


def _pairwise(
    board: dict[str, Any], aggregation: str, alpha: float, seed: int, key: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """Simultaneous and marginal rank bounds of one leaderboard (see *Notes* of
    :func:`rank_intervals`) and the simultaneous critical value."""
    rng = np.random.default_rng(
        np.random.SeedSequence([seed, zlib.crc32(key.encode())]).spawn(3)[2]
    )
    observed, tol = board["observed"], board["tol"]
    if aggregation == "pooled":
        se, boot = board["se"], board["boot"]
        with np.errstate(invalid="ignore", divide="ignore"):
            corr = np.corrcoef(boot, rowvar=False)
        corr = np.where(np.isfinite(corr), corr, 0.0)
        np.fill_diagonal(corr, 1.0)
        cov = corr * np.nan_to_num(se)[:, None] * np.nan_to_num(se)[None, :]
        sigma = _pair_se(cov)
        sigma[~(np.isfinite(se)[:, None] & np.isfinite(se)[None, :])] = np.nan
        exact = np.zeros_like(sigma, dtype=bool)
        diff = observed[:, None] - observed[None, :]
        draws = _t_draws(cov, board["df"], rng, _DRAWS)
        return _intervals(diff, sigma, exact, draws, sigma, alpha, tol, float(board["df"]))
    means = board["means"]
    k = means.shape[0]
    diff = observed[:, None] - observed[None, :]
    if (
        k >= 2 and aggregation == "borda"
    ):  # the t over tasks of the Borda points, gated by sign flips
        from scipy.stats import rankdata

        f = means.shape[1] - rankdata(-means, method="average", axis=-1)  # Borda points
        cov = np.cov(f, rowvar=False, ddof=1) / k
        sigma = _pair_se(cov)
        exact = sigma <= _noise(cov)
        np.fill_diagonal(exact, False)
        allowed = _sign_flips(f, rng, _DRAWS) <= alpha
        draws = _t_draws(cov, k - 1.0, rng, _DRAWS)
        return _intervals(diff / k, sigma, exact, draws, sigma, alpha, 0.0, k - 1.0, allowed)
    within, n_units = _within(board)  # (task, system, system): each task mean's covariance
    if k >= 2:  # the paired t over tasks, never below the queries' own error
        between = np.cov(means, rowvar=False, ddof=1) / k
        floor = np.nansum(within, axis=0) / k**2
        s_b, s_w = _pair_se(between), _pair_se(floor)
        sigma, df = np.fmax(s_b, s_w), k - 1.0
        cov = between if (s_b > 0).any() else floor
        exact = (s_b <= _noise(between)) & (s_w <= _noise(floor))
    else:  # one task: the paired t over its queries (or clusters of queries)
        cov, df = within[0], n_units[0] - 1.0
        if df < 1:  # one query (or one cluster): no pair can be told apart
            free = _bounds(np.zeros(diff.shape, dtype=bool))
            return *free, *free, float("nan")
        sigma = _pair_se(cov)
        exact = sigma <= _noise(cov)
    np.fill_diagonal(exact, False)
    draws = _t_draws(cov, df, rng, _DRAWS)
    return _intervals(diff, sigma, exact, draws, _pair_se(cov), alpha, tol, df)


def _within(board: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The covariance of each task's mean over its queries ``(task, system, system)``,
    C/(C − 1) Σ_c u_c u_cᵀ / n² with u_c the sum over the queries of cluster c of the
    scores minus their task mean (C = n without clusters: s²/n), and C per task."""
    v, n_q, unit, n_u = board["v"], board["n_q"], board["unit"], board["n_u"]
    valid = np.arange(v.shape[1])[None, :] < n_q[:, None]
    centred = np.where(valid[:, :, None], v - v.sum(axis=1, keepdims=True) / n_q[:, None, None], 0)
    u = _unit_sums(unit, n_u, centred)[0]
    c = n_u.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        factor = c / (c - 1) / n_q.astype(float) ** 2
    return factor[:, None, None] * np.einsum("tuj,tuk->tjk", u, u), n_u


def _noise(cov: np.ndarray) -> np.ndarray:
    """Pair standard errors at or below this are rounding noise of ``cov``: the pair is
    known without error (a system and the same system shifted by a constant)."""
    var = np.abs(np.diag(cov))
    return np.sqrt(64 * np.finfo(float).eps * (var[:, None] + var[None, :]))


def _pair_se(cov: np.ndarray) -> np.ndarray:
    """σ_jk = √(V_jj + V_kk − 2 V_jk) of every pair of a covariance matrix."""
    var = np.diag(cov)
    return np.sqrt(np.clip(var[:, None] + var[None, :] - 2 * cov, 0.0, None))

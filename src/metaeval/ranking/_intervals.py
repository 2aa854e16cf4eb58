"""Rank intervals: how sure a leaderboard is of each system's place.

A system's rank interval follows from which pairwise differences of scores the data
settle (Mogstad, Romano, Shaikh & Wilhelm 2024): j is surely above k when D_jk = s_j − s_k
exceeds c σ_jk, with σ_jk the standard error of D_jk and c a critical value for the max
over all pairs (simultaneous) or over the pairs of one system (marginal). The standard
errors and critical values come from the few tasks themselves, with t on k − 1 degrees
of freedom: the paired t over tasks for the mean over tasks, the pooled model's own
standard error (Knapp–Hartung) for the pooled effect, the t over tasks gated by sign
flips of whole tasks for the Borda points. A two-level paired bootstrap (tasks with replacement, then queries — or
clusters of queries — within each drawn task, the same for every system) gives
``prob_best`` and the correlations of the pooled effects, as arrays of shape
``(resamples, tasks, systems)`` reduced along the last axis.
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._options import (
    CI_METHODS,
    DEFAULT_CI,
    DEFAULT_EFFECT,
    DEFAULT_POOL_METHOD,
    EFFECT_TYPES,
    POOL_METHODS,
    RANK_BYS,
    CIMethod,
    EffectType,
    PoolMethod,
    RankBy,
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
    excerpt,
    format_groups,
    quote_list,
    resolve_seed,
    warn_groups,
)
from ._tables import (
    check_complete,
    scores_of_metrics,
    settle_ties,
    task_means,
    tie_tolerance,
)

__all__ = ["rank_intervals"]

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
    by: str,
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
        score = _score(means, sign, by)
        out[rows] = settle_ties(score, tol) if by == "mean" else score
    return out


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
    control against it, in the resamples of :func:`_resamples` (the same draws as the
    other scores).

    ``sums`` holds, per ``(task, unit, system)``, the sums over the unit's queries of the
    scores shifted by each system's mean on the task, g, of g² and of g times the
    control's g, and the units' sizes ``(task, unit)``; ``shift`` the shifts ``(task,
    system)``. The count-weighted sums n, Σx, Σy, Σx², Σy², Σxy of each drawn task are
    matrix products for all systems at once; :func:`metaeval.paired.effect_sizes` turns
    them into effects, as :func:`metaeval.effects` does for the data.
    """
    import xarray as xr

    from ..paired import effect_sizes

    g, gg, gc, size = sums
    n_tasks, _, n_sys = g.shape
    treat = np.delete(np.arange(n_sys), control)
    est = np.empty((n_resamples, n_tasks, len(treat)))
    var = np.empty_like(est)
    dims = ("resample", "slot", "treatment")
    for rows, tau, counts in _resamples(n_u, 3 * n_sys, n_resamples, seed, key):
        sx = _weighted(counts, g[tau])
        sxx = _weighted(counts, gg[tau])
        sxy = _weighted(counts, gc[tau])
        a = shift[tau]
        n = np.einsum("bsu,bsu->bs", counts, size[tau])[..., None]
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


def _effect_sums(
    v: np.ndarray, n_q: np.ndarray, unit: np.ndarray, n_u: np.ndarray, control: int
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """The per-unit sums :func:`_bootstrap_effects` resamples, and the shifts."""
    valid = np.arange(v.shape[1])[None, :] < n_q[:, None]
    shift = v.sum(axis=1) / n_q[:, None]  # (task, system)
    g = np.where(valid[:, :, None], v - shift[:, None, :], 0.0)
    sg, sgg, sgc, size = _unit_sums(unit, n_u, g, g * g, g * g[..., control : control + 1])
    return (sg, sgg, sgc, size), shift


def _pooled_scores(
    est: list[np.ndarray], var: list[np.ndarray], pool_method: str
) -> list[np.ndarray]:
    """The pooled effect of every (resample, treatment) of every metric: one
    :func:`metaeval.pool` call for all of them (a group per resample, treatment and
    metric, its tasks the slots), as :func:`metaeval.design.plan_tasks` pools its
    simulated analyses. Degenerate resamples (a task whose drawn queries do not vary)
    are the data's problems in one resample, not the user's: their warnings are not
    issued; a resample without a pooled effect is counted by the caller."""
    from ..pooling import pool

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
        res = pool(frame, method=pool_method, test="z")
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
            f"rank_intervals(by='pooled'): on the metric {metric!r} fewer than 2 of "
            f"{len(boot)} bootstrap resamples give every system a pooled effect (their "
            "per-task effects are undefined, e.g. too few queries or no variation); rank "
            "by='mean' instead."
        )
    warn_groups(
        "rank_intervals(by='pooled') left out bootstrap resamples in which a system had no "
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
    pool_method: str,
    ci: str,
    alpha: float,
    cluster: str | None,
) -> pd.DataFrame:
    """``pool(effects(scores, control, cluster=cluster), test=ci)``: the pooled effect of
    every system over the control, per metric, with its standard error and degrees of
    freedom (as ``leaderboard(method="meta")``)."""
    from ..paired.effect_size import effects
    from ..pooling import pool

    eff = effects(scores, control=control, effect=effect, alpha=alpha, cluster=cluster)
    pooled = pool(eff, method=pool_method, test=ci, alpha=alpha)
    cols = ["metric", "treatment", "effect", "se", "df"]
    return pooled.reindex(columns=cols).astype({"metric": str, "treatment": str})


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
    control: str | None = None,
    effect: EffectType = DEFAULT_EFFECT,
    pool_method: PoolMethod = DEFAULT_POOL_METHOD,
    ci: CIMethod | None = DEFAULT_CI,
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
    by : {"mean", "borda", "pooled"}, default "mean"
        The score that ranks the systems: ``"mean"``, the mean over tasks of the
        per-task means; ``"borda"``, the Borda points Σ_t (N − r_t) of the per-task ranks
        r_t (1 = best, ties averaged) among the N systems; ``"pooled"``, the pooled
        effect of each system over ``control`` (0 for the control), that is
        ``pool(effects(scores, control, effect=effect), method=pool_method)`` — the score
        of ``leaderboard(method="meta")``.
    n_resamples : int, default 1000
        Bootstrap resamples (at least 2) of ``prob_best`` and, for ``by="pooled"``, of the
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
        ``by="pooled"`` only (and required there): the common control system.
    effect : {"md", "smd", "smcrp", "smcc", "rom", "corr"}, default "smcrp"
        ``by="pooled"`` only: the per-task effect size, see :func:`metaeval.effects`.
    pool_method : {"REML", "DL", ...}, default "REML"
        ``by="pooled"`` only: the τ² estimator, see :func:`metaeval.pool`.
    ci : {"knha", "z", "hksj", "adhoc"} or None, default None
        ``by="pooled"`` only: the pooled model's standard error and test, as in
        :func:`metaeval.pool` (None: Knapp–Hartung for the random-effects methods, z for
        ``EE``); a system is never told apart from the control unless ``pool()``'s
        interval of its effect (the same ``ci``, ``alpha``) excludes 0.
    cluster : str, optional
        A column of ``scores`` with the cluster of each query (constant within a query
        across systems and metrics, e.g. the passage several questions share): the
        bootstrap draws whole clusters instead of queries, the query-level standard errors
        are clustered (C/(C − 1), t on C − 1 degrees of freedom with one task), and
        ``by="pooled"`` pools ``effects(..., cluster=cluster)``.

    Returns
    -------
    pandas.DataFrame
        One row per ``(metric, system)``, sorted by metric (table order), ``rank`` and
        system name; RangeIndex; columns:

        - ``metric, system`` (str);
        - ``score`` (float): the mean over tasks (``by="mean"``, in the metric's units),
          the Borda points (``by="borda"``; higher is better) or the pooled effect over
          the control (``by="pooled"``, on the effect's analysis scale; its sign follows
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

        ``attrs`` hold ``by, n_resamples, seed, alpha, simultaneous, cluster`` and
        ``higher_is_better`` (a dict metric → bool); with ``simultaneous=True`` also
        ``critical_value`` (a dict metric → float: the c of *Notes*); with
        ``by="pooled"`` also ``control, effect, pool_method, ci``.

    Raises
    ------
    metaeval.SchemaError
        If ``scores`` is not a valid scores table; a ``cluster`` column that is missing,
        a key column, or not constant within a query.
    metaeval.OptionError
        A bad ``by``, ``n_resamples`` (< 2 or not an integer), ``seed``, ``alpha``,
        ``simultaneous``, ``metric``, ``higher_is_better``, ``effect``, ``pool_method``,
        ``ci`` or ``cluster``; ``by="pooled"`` without ``control``, or ``control`` with
        another ``by``; a task with one cluster.
    metaeval.PairingError
        A system without a score on some task of a metric or on some query of a task
        (the combinations are listed), repeated rows of a (task, query, system), fewer
        than 2 systems on a metric, a ``control`` missing from a metric, or (``by="pooled"``)
        fewer than 2 resamples in which every system has a pooled effect.

    Warns
    -----
    metaeval.DegenerateWarning
        ``by="pooled"``: naming the (metric, system) groups left out because they have no
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

    - ``by="mean"``: σ_jk² is the variance of the paired per-task differences over the k
      tasks divided by k — the paired t-test over tasks —, never below the variance the
      queries alone give the mean (Σ_t V_t / k², V_t the variance of task t's mean
      difference, clustered with ``cluster``), so that tasks whose differences agree by
      the coarseness of the scores do not make a pair certain; c from the t distribution
      on k − 1 degrees of freedom with the pairs' correlations: 20,000 draws of a normal
      vector with the per-task means' covariance, each divided by √(χ²_{k−1}/(k − 1)).
    - ``by="pooled"``: σ_j = the pooled effect's standard error from :func:`metaeval.pool`
      with ``ci`` (Knapp–Hartung by default), the control's 0; the correlations of the
      systems' pooled effects from the bootstrap; c as for the mean, on the pool's
      degrees of freedom (k − 1; normal for ``ci="z"``).
    - ``by="borda"``: the paired t over tasks of the per-task Borda points N − r_t, as for
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

    **Resampling** (``prob_best``, and the correlations for ``by="pooled"``). One
    resample draws T tasks with replacement from the T tasks of the metric, then, for
    each drawn task independently, its queries (or, with ``cluster``, its clusters) with
    replacement; the same draws weight every system, so that the comparison stays
    paired (Davison & Hinkley 1997, §3.8). For ``by="pooled"`` the count-weighted sums n,
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
    check_option("effect", effect, EFFECT_TYPES)
    check_option("pool_method", pool_method, POOL_METHODS)
    check_option("ci", ci, (*CI_METHODS, None))
    n_resamples = check_resamples(n_resamples, minimum=2)
    seed = resolve_seed(seed)
    alpha = check_alpha(alpha)
    if not isinstance(simultaneous, bool | np.bool_):
        raise OptionError(f"`simultaneous` must be True or False, but {simultaneous!r} was passed.")
    if control is not None and not isinstance(control, str):
        raise OptionError(f"`control` must be one system name (a str), not {control!r}.")
    if (by == "pooled") != (control is not None):
        raise OptionError(
            "by='pooled' ranks the systems by their pooled effect over a common control: pass "
            "`control` (a system name) with it"
            + ("." if control is None else f", and only with it (by={by!r} uses no control).")
        )
    if cluster is not None and not isinstance(cluster, str):
        raise OptionError(f"`cluster` must be one column name (a str), not {cluster!r}.")
    scores, directions = scores_of_metrics(scores, metric, higher_is_better)
    clusters = None
    if cluster is not None:
        from ..paired.clusters import cluster_ids

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
    x, metrics, tasks, systems = task_means(scores)
    metrics, systems = metrics.astype(str), systems.astype(str)
    sys_in, task_in = check_complete(x, metrics, tasks.astype(str), systems, "rank_intervals")
    pool_ci = resolve_ci(pool_method, ci)
    if by == "pooled":
        lacking = [m for i, m in enumerate(metrics) if control not in set(systems[sys_in[i]])]
        if lacking:
            raise PairingError(
                f"The control {control!r} is not a system of the metric(s) "
                f"{quote_list(lacking)}; the systems are {quote_list(list(systems))}."
            )
        pooled = _observed_pooled(
            scores, str(control), effect, pool_method, pool_ci, alpha, cluster
        )

    metric_col = scores["metric"].astype(str).to_numpy()
    boards: list[dict[str, Any]] = []  # per metric: what its leaderboard needs
    for m, name in enumerate(metrics):  # one leaderboard per metric, vectorized within
        names = systems[sys_in[m]]
        sign = 1.0 if directions[name] else -1.0
        sub = scores[metric_col == name]
        v, n_q, _, unit, n_u = _query_table(sub, names, clusters)
        means = sign * x[m][task_in[m]][:, sys_in[m]]  # (task, system), higher is better
        scale = float(np.abs(v).max())
        depth = np.log2(max(int(n_q.max()), 1)) + 16 + means.shape[0]
        tol = float(tie_tolerance(scale, depth))
        board: dict[str, Any] = {"names": names, "sign": sign, "tol": tol}
        if by != "pooled":
            score = (
                settle_ties(_score(means, 1.0, by), tol) if by == "mean" else _score(means, 1.0, by)
            )
            sums, size = _unit_sums(unit, n_u, v)
            tol_boot = float(tie_tolerance(scale, int(n_q.max()) + means.shape[0] + 16))
            boot = _bootstrap(sums, size, n_u, sign, by, n_resamples, seed, name, tol_boot)
            board.update(
                observed=score, boot=boot, means=means, v=sign * v, n_q=n_q, unit=unit, n_u=n_u
            )
            boards.append(board)
            continue
        own = pooled[pooled["metric"] == name].set_index("treatment")
        effect_of = own["effect"].reindex(names)
        observed = sign * effect_of.fillna(0.0).to_numpy()
        keep = (names == control) | effect_of.notna().to_numpy()
        if not keep.all():
            warn_groups(
                "rank_intervals(by='pooled') left out {n} (metric, system) group(s) without a "
                "pooled effect over the control (every task's effect is undefined, e.g. a "
                "copy of the control)",
                pd.DataFrame({"metric": name, "system": names[~keep]}).astype(object),
                DegenerateWarning,
            )
            names, v, observed = names[keep], v[:, :, keep], observed[keep]
        c = int(names.get_loc(control))
        se = own["se"].reindex(names).to_numpy(dtype=float).copy()
        se[c] = 0.0
        df = own["df"].reindex(names).drop(control).to_numpy(dtype=float)
        df_min = float(np.nanmin(df)) if np.isfinite(df).any() else np.inf
        per_unit, shift = _effect_sums(v, n_q, unit, n_u, c)
        est, var = _bootstrap_effects(per_unit, shift, n_u, c, n_resamples, seed, name, effect)
        board.update(names=names, observed=observed, control=c, est=est, var=var, se=se, df=df_min)
        boards.append(board)
    if by == "pooled":  # every resample, treatment and metric pooled by one call
        fits = _pooled_scores([b["est"] for b in boards], [b["var"] for b in boards], pool_method)
        for m, (board, fit) in enumerate(zip(boards, fits, strict=True)):
            boot = board["sign"] * np.insert(fit, board["control"], 0.0, axis=1)  # control: 0
            board["boot"] = _complete_resamples(boot, metrics[m])
    parts: list[pd.DataFrame] = []
    critical: dict[str, float] = {}
    for m, board in enumerate(boards):
        name, names, observed = metrics[m], board["names"], board["observed"]
        low, high, m_low, m_high, critical[name] = _pairwise(board, by, alpha, seed, name)
        if not simultaneous:
            low, high = m_low, m_high
        rank = _rank(observed)
        parts.append(
            pd.DataFrame(
                {
                    "metric": name,
                    "system": names.to_numpy(dtype=object),
                    "score": observed if by == "borda" else board["sign"] * observed,
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
        "by": by,
        "n_resamples": n_resamples,
        "seed": seed,
        "alpha": alpha,
        "simultaneous": bool(simultaneous),
        "higher_is_better": directions,
        "cluster": cluster,
    }
    if simultaneous:
        frame.attrs["critical_value"] = critical
    if by == "pooled":
        frame.attrs.update(control=control, effect=effect, pool_method=pool_method, ci=pool_ci)
    return frame


def _pairwise(
    board: dict[str, Any], by: str, alpha: float, seed: int, key: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """Simultaneous and marginal rank bounds of one leaderboard (see *Notes* of
    :func:`rank_intervals`) and the simultaneous critical value."""
    rng = np.random.default_rng(
        np.random.SeedSequence([seed, zlib.crc32(key.encode())]).spawn(3)[2]
    )
    observed, tol = board["observed"], board["tol"]
    if by == "pooled":
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
    if k >= 2 and by == "borda":  # the t over tasks of the Borda points, gated by sign flips
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

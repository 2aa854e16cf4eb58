"""Rank intervals: how sure a leaderboard is of each system's place.

One two-level paired bootstrap per metric (tasks with replacement, then queries
within each drawn task, the same queries for every system) gives arrays of shape
``(resamples, tasks, systems)`` of resampled per-task means (or, for the pooled
score, of the count-weighted sums of every system paired with the control, turned
into effects and pooled, every resample and system at once); the score of each
system (mean over tasks, Borda points or pooled effect) and its rank follow along
the last axis. Marginal intervals are percentiles of each system's bootstrap rank;
simultaneous ones come from simultaneous intervals for every pairwise
difference of scores (Mogstad, Romano, Shaikh & Wilhelm 2024).
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from .._options import (
    DEFAULT_EFFECT,
    DEFAULT_POOL_METHOD,
    EFFECT_TYPES,
    POOL_METHODS,
    RANK_BYS,
    EffectType,
    PoolMethod,
    RankBy,
    literal_signature,
)
from ..errors import (
    DegenerateWarning,
    MetaEvalWarning,
    OptionError,
    PairingError,
    check_alpha,
    check_option,
    check_resamples,
    excerpt,
    format_groups,
    quote_list,
    resolve_seed,
    warn_groups,
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


def _resamples(
    n_q: np.ndarray, n_cells: int, n_resamples: int, seed: int, key: str
) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
    """The two-level paired bootstrap, in chunks of resamples: ``(rows, tau, counts)``
    with ``tau`` the task drawn into each slot ``(b, slot)`` and ``counts`` how often each
    query of that task is drawn ``(b, slot, query)`` — the same counts for every system.

    The task draws and the query draws come from two streams of a generator seeded by
    ``(seed, crc32(key))``: a metric gets the same resamples whether or not others are
    ranked with it, and the query draws do not depend on the chunking. A chunk gathers at
    most about :data:`_CHUNK` elements of ``n_cells`` per (slot, query).
    """
    n_tasks, q_max = len(n_q), int(n_q.max())
    tasks_rng, query_rng = (
        np.random.default_rng(s)
        for s in np.random.SeedSequence([seed, zlib.crc32(key.encode())]).spawn(2)
    )
    drawn = tasks_rng.integers(0, n_tasks, size=(n_resamples, n_tasks))  # task of each slot
    chunk = max(1, _CHUNK // (n_tasks * q_max * n_cells))
    for start in range(0, n_resamples, chunk):  # chunks of resamples, for memory
        tau = drawn[start : start + chunk]  # (b, slot)
        n = n_q[tau]
        p = np.where(np.arange(q_max) < n[..., None], 1.0 / n[..., None], 0.0)
        counts = query_rng.multinomial(n, p).astype(float)  # (b, slot, query)
        yield slice(start, start + len(tau)), tau, counts


def _weighted(counts: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Count-weighted sums over the queries: ``(b, slot, q) x (b, slot, q, s) -> (b, slot, s)``
    (one matrix product per drawn task, for all systems)."""
    return np.matmul(counts[:, :, None, :], v)[:, :, 0, :]


def _bootstrap(
    v: np.ndarray, n_q: np.ndarray, sign: float, by: str, n_resamples: int, seed: int, key: str
) -> np.ndarray:
    """Scores (mean or Borda) of every system in ``n_resamples`` bootstrap resamples."""
    out = np.empty((n_resamples, v.shape[2]))
    for rows, tau, counts in _resamples(n_q, v.shape[2], n_resamples, seed, key):
        out[rows] = _score(_weighted(counts, v[tau]) / n_q[tau][..., None], sign, by)
    return out


def _bootstrap_effects(
    v: np.ndarray, n_q: np.ndarray, control: int, n_resamples: int, seed: int, key: str,
    effect: str,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Effects and variances ``(resample, slot, treatment)`` of every system but the
    control against it, in the resamples of :func:`_resamples` (the same draws as the
    other scores).

    The sums of the treatment x and control y over the drawn queries (n, Σx, Σy, Σx²,
    Σy², Σxy, of scores shifted by each system's mean on the task) are count-weighted
    matrix products; :func:`metaeval.paired.effect_sizes` turns them into effects, as
    :func:`metaeval.effects` does for the data.
    """
    import xarray as xr

    from ..paired import effect_sizes

    n_tasks, q_max, n_sys = v.shape
    valid = np.arange(q_max)[None, :] < n_q[:, None]
    shift = v.sum(axis=1) / n_q[:, None]  # (task, system)
    centred = np.where(valid[:, :, None], v - shift[:, None, :], 0.0)
    treat = np.delete(np.arange(n_sys), control)
    est = np.empty((n_resamples, n_tasks, len(treat)))
    var = np.empty_like(est)
    dims = ("resample", "slot", "treatment")
    for rows, tau, counts in _resamples(n_q, 3 * n_sys, n_resamples, seed, key):
        g = centred[tau]  # (b, slot, q, system)
        sx = _weighted(counts, g)
        sxx = _weighted(counts, g * g)
        sxy = _weighted(counts, g * g[..., control : control + 1])
        a = shift[tau]
        n = np.broadcast_to(n_q[tau][..., None], sx[..., treat].shape)
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
        result, _ = effect_sizes(stats, effect=effect)  # type: ignore[arg-type]
        est[rows], var[rows] = result["effect"].values, result["variance"].values
    return est, var


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
    slot = np.concatenate([np.broadcast_to(np.arange(k)[None, :, None], e.shape).ravel()
                           for e, (_, k, _) in zip(est, shapes, strict=True)])  # fmt: skip
    group = np.concatenate([
        o + np.broadcast_to((np.arange(r)[:, None, None] * t + np.arange(t)), e.shape).ravel()
        for o, e, (r, _, t) in zip(offsets[:-1], est, shapes, strict=True)
    ])  # fmt: skip
    frame = pd.DataFrame({"task": slot, "metric": group,
                          "effect": np.concatenate([e.ravel() for e in est]),
                          "variance": np.concatenate([w.ravel() for w in var])})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MetaEvalWarning)
        res = pool(frame, method=pool_method, ci="z")  # type: ignore[arg-type]
    pooled = np.full(int(offsets[-1]), np.nan)
    pooled[res["metric"].to_numpy(dtype=np.int64)] = res["effect"].to_numpy(dtype=float)
    return [pooled[a:b].reshape(r, t) for a, b, (r, _, t) in
            zip(offsets[:-1], offsets[1:], shapes, strict=True)]  # fmt: skip


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
    scores: pd.DataFrame, control: str, effect: str, pool_method: str, alpha: float
) -> pd.DataFrame:
    """``pool(effects(scores, control))``: the pooled effect of every system over the
    control, per metric (the control's own is 0), as ``leaderboard(method="meta")``."""
    from ..paired.effect_size import effects
    from ..pooling import pool

    eff = effects(scores, control=control, effect=effect, alpha=alpha)  # type: ignore[arg-type]
    pooled = pool(eff, method=pool_method, ci="z", alpha=alpha)  # type: ignore[arg-type]
    return pooled[["metric", "treatment", "effect"]].astype({"metric": str, "treatment": str})


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
    control: str | None = None,
    effect: EffectType = DEFAULT_EFFECT,
    pool_method: PoolMethod = DEFAULT_POOL_METHOD,
) -> pd.DataFrame:
    """Each system's rank with an interval and its tie group: one leaderboard per metric.

    The ranks come from a score per system over the tasks of a metric (the mean of its
    per-task means, its Borda points, or its pooled effect over a control); their
    uncertainty from a two-level paired bootstrap over tasks and queries (see *Notes*).

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
    control : str, optional
        ``by="pooled"`` only (and required there): the common control system.
    effect : {"md", "smd", "smcrp", "smcc", "rom", "corr"}, default "smcrp"
        ``by="pooled"`` only: the per-task effect size, see :func:`metaeval.effects`.
    pool_method : {"REML", "DL", ...}, default "REML"
        ``by="pooled"`` only: the τ² estimator, see :func:`metaeval.pool`.

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
        - ``tie_group`` (int): 1 for the leader and the systems whose intervals
          overlap its interval, 2 for the best system not in group 1 and the ungrouped
          systems whose intervals overlap its interval, and so on;
        - ``prob_best`` (float): the share of resamples in which the system ranks first
          (tied first counts);
        - ``n_tasks`` (int): the tasks of the metric.

        ``attrs`` hold ``by, n_resamples, seed, alpha, simultaneous`` and
        ``higher_is_better`` (a dict metric → bool); with ``simultaneous=True`` also
        ``critical_value`` (a dict metric → float: the c of *Notes*); with
        ``by="pooled"`` also ``control, effect, pool_method``.

    Raises
    ------
    metaeval.SchemaError
        If ``scores`` is not a valid scores table.
    metaeval.OptionError
        A bad ``by``, ``n_resamples`` (< 2 or not an integer), ``seed``, ``alpha``,
        ``simultaneous``, ``metric``, ``higher_is_better``, ``effect`` or
        ``pool_method``; ``by="pooled"`` without ``control``, or ``control`` with
        another ``by``.
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
        (with their number).

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
    always lies in its simultaneous interval.

    **Pooled scores** (``by="pooled"``): in each resample and for each drawn task, the
    count-weighted sums n, Σx, Σy, Σx², Σy², Σxy of every system x paired with the
    control y (scores shifted by each system's mean on the task) are three matrix
    products for all systems at once; :func:`metaeval.paired.effect_sizes` turns them
    into the effect and its variance, exactly as :func:`metaeval.effects` does for the
    data, and one :func:`metaeval.pool` call fits every (resample, system) group with
    ``pool_method``. A task drawn twice enters its resample twice, as two tasks. The
    scores are then ranked as the others are; the control's score is 0 in every
    resample.

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
    check_option("effect", effect, EFFECT_TYPES)
    check_option("pool_method", pool_method, POOL_METHODS)
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
    scores, directions = scores_of_metrics(scores, metric, higher_is_better)
    x, metrics, tasks, systems = task_means(scores)
    metrics, systems = metrics.astype(str), systems.astype(str)
    sys_in, task_in = check_complete(x, metrics, tasks.astype(str), systems, "rank_intervals")
    if by == "pooled":
        lacking = [m for i, m in enumerate(metrics) if control not in set(systems[sys_in[i]])]
        if lacking:
            raise PairingError(
                f"The control {control!r} is not a system of the metric(s) "
                f"{quote_list(lacking)}; the systems are {quote_list(list(systems))}."
            )
        pooled = _observed_pooled(scores, str(control), effect, pool_method, alpha)

    metric_col = scores["metric"].astype(str).to_numpy()
    boards = []  # per metric: names, sign, observed score (higher is better), bootstrap
    for m, name in enumerate(metrics):  # one leaderboard per metric, vectorized within
        names = systems[sys_in[m]]
        sign = 1.0 if directions[name] else -1.0
        v, n_q, _ = _query_table(scores[metric_col == name], names)
        if by != "pooled":
            observed = _score(v.sum(axis=1) / n_q[:, None], sign, by)
            boards.append([names, sign, observed, _bootstrap(v, n_q, sign, by, n_resamples,
                                                             seed, name)])  # fmt: skip
            continue
        effect_of = pooled[pooled["metric"] == name].set_index("treatment")["effect"]
        observed = sign * effect_of.reindex(names).fillna(0.0).to_numpy()
        keep = (names == control) | effect_of.reindex(names).notna().to_numpy()
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
        est, var = _bootstrap_effects(v, n_q, c, n_resamples, seed, name, effect)
        boards.append([names, sign, observed, (c, est, var)])
    if by == "pooled":  # every resample, treatment and metric pooled by one call
        fits = _pooled_scores([b[3][1] for b in boards], [b[3][2] for b in boards], pool_method)
        for m, (board, fit) in enumerate(zip(boards, fits, strict=True)):
            c = board[3][0]
            boot = board[1] * np.insert(fit, c, 0.0, axis=1)  # the control's effect is 0
            board[3] = _complete_resamples(boot, metrics[m])
    parts: list[pd.DataFrame] = []
    critical: dict[str, float] = {}
    for m, (names, sign, observed, boot) in enumerate(boards):
        name = metrics[m]
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
    if by == "pooled":
        frame.attrs.update(control=control, effect=effect, pool_method=pool_method)
    return frame

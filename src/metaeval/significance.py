"""Per-task significance tests, for every task, metric and pair of systems at once.

``compare()`` tests each (treatment, control) pair on each task and metric with a
paired t-test, the Wilcoxon signed-rank test, the exact sign test, Fisher's
randomization test or the paired studentized bootstrap test. ``anova()``,
``tukey()`` and ``means()`` treat all systems of a task together in the
two-way layout systems × queries (Sakai 2018).

The two resampling tests draw their random signs and resample counts from
streams tied to the seed, the task and the resample number (see
:mod:`metaeval._resampling`), and evaluate them for every pair and task with
batched matrix products, so that the same ``seed`` gives the same p-values in
any process and however the work is chunked. p-values count the observed
statistic among the resamples, p = (1 + #{T* at least as extreme as T})/(1 + B),
so they are never 0.

References
----------
Smucker, M. D., Allan, J., & Carterette, B. (2007). A comparison of statistical
significance tests for information retrieval evaluation. CIKM '07.
doi:10.1145/1321440.1321528
Sakai, T. (2006). Evaluating evaluation metrics based on the bootstrap. SIGIR '06.
doi:10.1145/1148170.1148261
Sakai, T. (2018). *Laboratory Experiments in Information Retrieval*. Springer.
doi:10.1007/978-981-13-1199-4
Carterette, B. (2012). Multiple testing in statistical analysis of systems-based
information retrieval experiments. *ACM TOIS*, 30(1). doi:10.1145/2094072.2094076
Efron, B., & Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*, §16.4.
Chapman & Hall.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from . import _resampling as rs
from .effects import check_alpha, effect_sizes, paired_groups, warn_undefined
from .errors import (
    DegenerateWarning,
    OptionError,
    PairingWarning,
    check_option,
    format_groups,
    warn_groups,
)
from .pooling import ADJUSTMENTS, _adjust
from .stats import BLOCK, Layout, layout, statistics_of

__all__ = ["TESTS", "ALTERNATIVES", "compare", "anova", "tukey", "means"]

TESTS = ("t", "wilcoxon", "sign", "randomization", "bootstrap")
ALTERNATIVES = ("two-sided", "greater", "less")
_ORDER = ("metric", "treatment", "control", "task")


def _check_resamples(n_resamples: int) -> int:
    if not isinstance(n_resamples, int | np.integer) or n_resamples < 1:
        raise OptionError(
            f"`n_resamples` must be a positive integer, but {n_resamples!r} was passed."
        )
    return int(n_resamples)


def compare(
    scores: pd.DataFrame,
    *,
    control: str | Sequence[str] | None = None,
    treatment: str | Sequence[str] | None = None,
    test: str = "t",
    alternative: str = "two-sided",
    n_resamples: int = 10_000,
    seed: int | None = None,
    adjust: str | None = None,
    alpha: float = 0.05,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Paired significance test of every (treatment, control) pair on every task and metric.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table.
    control, treatment : str, list of str or None
        As in :func:`metaeval.effects`; ``control=None`` tests every ordered pair.
    test : {"t", "wilcoxon", "sign", "randomization", "bootstrap"}, default "t"
        - ``t``: paired Student's t on the differences d = treatment − control.
        - ``wilcoxon``: Wilcoxon signed-rank test, computed by
          :func:`scipy.stats.wilcoxon` with its defaults: zero differences are
          dropped (``zero_method="wilcox"``), no continuity correction, the
          exact distribution for n ≤ 50 without ties, else the normal
          approximation with the tie correction.
        - ``sign``: exact binomial test of the share of positive differences
          among the nonzero ones (as :func:`scipy.stats.binomtest`).
        - ``randomization``: Fisher's paired randomization test: the sign of
          each difference is flipped at random; the statistic is the mean
          difference (two-sided: its absolute value).
        - ``bootstrap``: paired studentized bootstrap test with the shift
          method (Sakai 2006; Efron & Tibshirani 1993 §16.4): the differences
          are centred to mean 0, resampled with replacement, and the observed
          t = mean/(sd/√n) is compared with the resampled t*.
    alternative : {"two-sided", "greater", "less"}, default "two-sided"
        "greater": the treatment scores higher than the control.
    n_resamples : int, default 10,000
        Resamples B of the randomization and bootstrap tests.
    seed : int, optional
        Seed of the resampling tests; None draws one. It is stored in
        ``result.attrs["seed"]``, so every run can be repeated.
    adjust : {"holm", "bonferroni", "fdr_bh"}, optional
        Adjust the p-values over the pairs of one task and metric (statsmodels'
        ``multipletests`` definitions), adding ``p_adjusted``.
    alpha : float, default 0.05
        Level of the confidence intervals (1 − alpha).
    progress : bool, optional
        Report the progress of resampling tests on stderr; None: only for
        runs longer than a few seconds on a terminal.

    Returns
    -------
    pandas.DataFrame
        One row per ``(metric, treatment, control, task)`` with paired queries,
        columns ``metric, treatment, control, task, test, n, mean_treatment,
        mean_control, diff`` (mean difference), ``statistic`` (t; Wilcoxon's W;
        the share of positive differences; the mean difference; the studentized
        t for the bootstrap), ``p_value`` (``p_adjusted``), ``ci_low, ci_high,
        moe``: the t-based confidence interval of the mean difference and its
        margin of error t_{α/2, n−1}·√(V/n) (one-sided intervals for one-sided
        alternatives, as scipy's), and ``effect_size``: d_z = mean difference /
        SD of the differences (elinor's "ES"). ``attrs`` hold ``test``,
        ``alternative``, ``alpha``, ``seed``, ``adjust`` and ``n_resamples``.

    Warns
    -----
    metaeval.PairingWarning
        Queries that only one system of a pair has are left out of that pair.
    metaeval.DegenerateWarning
        Naming the groups whose result is NaN: fewer than 2 paired queries;
        zero variance of the differences (t and bootstrap: t undefined); all
        differences zero (Wilcoxon, sign test).

    Examples
    --------
    >>> import metaeval
    >>> res = metaeval.load_example().meta.compare(control="logistic_regression",
    ...                                            treatment="naive_bayes", test="t")
    >>> res.query("metric == 'accuracy'")[["task", "diff", "statistic", "p_value"]].round(4)
                task    diff  statistic  p_value
    0  breast_cancer -0.0404    -4.0578   0.0001
    1         digits -0.1185   -14.7030   0.0000
    2           iris  0.0000     0.0000   1.0000
    3           wine -0.0112    -0.8157   0.4158
    """
    from scipy import stats as sps

    check_option("test", test, TESTS)
    check_option("alternative", alternative, ALTERNATIVES)
    if adjust is not None:
        check_option("adjust", adjust, ADJUSTMENTS)
    alpha = check_alpha(alpha)
    n_resamples = _check_resamples(n_resamples)
    seed = rs.resolve_seed(seed) if test in ("randomization", "bootstrap") else seed

    lay = layout(scores, keep_raw=test != "t")
    ds = statistics_of(lay, control=control, treatment=treatment)
    keep = paired_groups(ds)
    md, problems = effect_sizes(ds, effect="md", alpha=alpha)
    n = md["n"].astype(float)
    se = md["se"]  # SD of differences / √n
    df = n - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        t_stat = md["z"]  # effect / se, computed where both are representable
        if alternative == "two-sided":
            crit = xr.apply_ufunc(lambda d: sps.t.isf(alpha / 2, d), df)
            p_t = xr.apply_ufunc(lambda x, d: 2 * sps.t.sf(np.abs(x), d), t_stat, df)
            low, high = md["effect"] - crit * se, md["effect"] + crit * se
        else:
            crit = xr.apply_ufunc(lambda d: sps.t.isf(alpha, d), df)
            upper = alternative == "greater"
            p_t = xr.apply_ufunc(
                lambda x, d: sps.t.sf(x, d) if upper else sps.t.cdf(x, d), t_stat, df
            )
            infinite = xr.full_like(md["effect"], np.inf)
            low = md["effect"] - crit * se if upper else -infinite
            high = infinite if upper else md["effect"] + crit * se
    out = xr.Dataset(
        {
            "n": md["n"],
            "mean_treatment": md["mean_treatment"],
            "mean_control": md["mean_control"],
            "diff": md["effect"],
            "statistic": t_stat,
            "p_value": p_t,
            "ci_low": low,
            "ci_high": high,
            "moe": crit * se,
            "effect_size": md["effect"] / (se * np.sqrt(n)),
        }
    )
    undefined = problems["fewer than 2 paired queries"]
    zero_var = problems["zero variance of the differences (effect kept, variance NaN)"]
    reasons = {"fewer than 2 paired queries": undefined}
    if test in ("t", "bootstrap"):
        reasons["zero variance of the differences (t undefined)"] = zero_var & ~undefined
    if test != "t":
        stat, p, extra = _per_query_tests(lay, ds, test, alternative, n_resamples, seed, progress)
        out["statistic"], out["p_value"] = stat, p
        reasons.update(extra)
    bad = xr.zeros_like(keep)
    for mask in reasons.values():
        bad = bad | mask
    for name in ("statistic", "p_value"):
        out[name] = out[name].where(~bad)
    keep_flat = keep.transpose(*_ORDER).values.ravel()
    frame = out.to_dataframe(dim_order=list(_ORDER)).reset_index()[keep_flat]
    frame.insert(4, "test", test)
    frame = frame.reset_index(drop=True)
    if adjust is not None:
        position = frame.columns.get_loc("p_value") + 1
        frame.insert(position, "p_adjusted", _adjust(frame, ["metric", "task"], adjust))
    warn_undefined(f"test={test!r}", reasons, keep, _ORDER)
    frame.attrs.update(
        test=test, alternative=alternative, alpha=alpha, seed=seed, adjust=adjust,
        n_resamples=n_resamples if test in ("randomization", "bootstrap") else None,
    )  # fmt: skip
    return frame


# ------------------------------------------------------------- per-query tests
def _pairs(ds: xr.Dataset, lay: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Layout system indices of the (treatment, control) grid of ``ds``, flattened."""
    index = {str(s): i for i, s in enumerate(lay.systems)}
    left = np.array([index[s] for s in ds["treatment"].values])
    right = np.array([index[s] for s in ds["control"].values])
    t, c = np.meshgrid(left, right, indexing="ij")
    return t.ravel(), c.ravel()


def _differences(
    lay: Layout, rows: np.ndarray, t: np.ndarray, c: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Differences treatment − control, ``(tasks, queries, metric, pairs)``, and where both exist.

    Taken from the unshifted scores (``layout(..., keep_raw=True)``), so that a
    query where both systems have the same score has a difference of exactly 0
    — the one place where the sign and Wilcoxon tests decide what a zero
    difference is, as scipy does on ``x − y``.
    """
    assert lay.raw is not None, "layout(..., keep_raw=True) is needed for per-query tests"
    inside = rows >= 0
    r = np.where(inside, rows, 0)
    xt = lay.raw[:, t][:, :, r]  # (metric, pairs, tasks, width)
    xc = lay.raw[:, c][:, :, r]
    both = lay.mask[:, t][:, :, r] & lay.mask[:, c][:, :, r] & inside
    d = np.where(both, xt - xc, 0.0)
    return d.transpose(2, 3, 0, 1), both.transpose(2, 3, 0, 1)


def _pair_chunks(n_pairs: int, per_pair_bytes: int) -> list[slice]:
    step = max(1, rs.CHUNK_BYTES // max(per_pair_bytes, 1))
    return [slice(i, min(n_pairs, i + step)) for i in range(0, n_pairs, step)]


def _per_query_tests(
    lay: Layout,
    ds: xr.Dataset,
    test: str,
    alternative: str,
    n_resamples: int,
    seed: int | None,
    progress: bool | None,
) -> tuple[xr.DataArray, xr.DataArray, dict[str, xr.DataArray]]:
    """Statistic and p-value of a test that needs the per-query differences."""
    pt, pc = _pairs(ds, lay)
    n_tasks, n_metrics = len(lay.tasks), len(lay.metrics)
    shape = (n_tasks, n_metrics, len(pt))
    stat, p = np.full(shape, np.nan), np.full(shape, np.nan)
    all_zero = np.zeros(shape, dtype=bool)
    pairs = np.flatnonzero(pt != pc)
    resampling = test in ("randomization", "bootstrap")
    per_value = 8 * (4 if test == "bootstrap" else 2)
    plan = [
        (batch, chunk)
        for batch in rs.task_batches(lay)
        for chunk in _pair_chunks(
            len(pairs), len(batch.tasks) * batch.rows.shape[1] * n_metrics * per_value
        )
    ]
    steps = sum(
        len(_resample_chunks(len(b.tasks), b.rows.shape[1], n_resamples)) if resampling else 1
        for b, _ in plan
    )
    tracker = rs.Progress(steps, f"{test} test", progress)
    task_names = [str(t) for t in lay.tasks]
    for batch, chunk in plan:
        sel = pairs[chunk]
        d, both = _differences(lay, batch.rows, pt[sel], pc[sel])
        idx = np.ix_(batch.tasks, np.arange(n_metrics), sel)
        if test == "sign":
            s, pv, z = _sign_test(d, both, alternative)
        elif test == "wilcoxon":
            s, pv, z = _wilcoxon(d, both, alternative)
        else:
            names = [task_names[i] for i in batch.tasks]
            run = _randomization if test == "randomization" else _bootstrap
            s, pv = run(d, both, batch.n, names, alternative, n_resamples, seed, tracker)
            z = np.zeros(s.shape, dtype=bool)
        stat[idx], p[idx], all_zero[idx] = s, pv, z
        if not resampling:
            tracker.step()
    tracker.close()
    grid = (n_tasks, n_metrics, ds.sizes["treatment"], ds.sizes["control"])

    coords: dict[str, Any] = {name: ds[name].values for name in ("metric", "treatment", "control")}
    coords["task"] = [str(t) for t in lay.tasks]  # tasks without data are not in `ds`

    def as_array(a: np.ndarray) -> xr.DataArray:
        out = xr.DataArray(
            a.reshape(grid), dims=("task", "metric", "treatment", "control"), coords=coords
        )
        return out.sel(task=ds["task"].values).transpose(*ds["n"].dims)

    extra = {}
    if test in ("wilcoxon", "sign"):
        extra["all differences zero"] = as_array(all_zero)
    return as_array(stat), as_array(p), extra


def _sign_test(d: np.ndarray, both: np.ndarray, alternative: str):
    """Exact sign test per (task, metric, pair); statistic = share of positive differences."""
    from scipy import stats as sps

    pos = ((d > 0) & both).sum(axis=1).astype(float)
    nonzero = pos + ((d < 0) & both).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        if alternative == "greater":
            p = sps.binom.sf(pos - 1, nonzero, 0.5)
        elif alternative == "less":
            p = sps.binom.cdf(pos, nonzero, 0.5)
        else:  # the distribution is symmetric: twice the smaller tail
            p = np.minimum(
                1.0,
                2
                * np.minimum(sps.binom.cdf(pos, nonzero, 0.5), sps.binom.sf(pos - 1, nonzero, 0.5)),
            )
        share = pos / nonzero
    zero = (nonzero == 0) & (both.sum(axis=1) > 0)
    return np.where(zero, np.nan, share), np.where(zero, np.nan, p), zero


def _wilcoxon(d: np.ndarray, both: np.ndarray, alternative: str):
    """scipy's Wilcoxon signed-rank test on every (task, metric, pair) column, as if alone.

    scipy chooses its method (exact, permutation or normal approximation) from
    the sample size and from whether there are zero or tied differences — once
    per call, for all columns of the call. So that every column gets the
    method a call on its own differences would choose, columns are sent in
    groups of the same size and the same "zeros or ties" flag: one call per
    group, none per task, metric or pair.
    """
    from scipy import stats as sps

    n_tasks, width, n_metrics, n_pairs = d.shape
    cols = both.transpose(1, 0, 2, 3).reshape(width, -1)  # (queries, columns)
    values = d.transpose(1, 0, 2, 3).reshape(width, -1)
    n = cols.sum(axis=0)
    nonzero = ((values != 0) & cols).sum(axis=0)
    zero = (nonzero == 0) & (n > 0)
    stat = np.full(values.shape[1], np.nan)
    p = np.full(values.shape[1], np.nan)
    # each column's paired differences first, in query order; |d| sorted to find ties
    order = np.argsort(~cols, axis=0, kind="stable")
    packed = np.take_along_axis(values, order, axis=0)
    magnitude = np.sort(np.where(cols, np.abs(values), np.inf), axis=0)
    tied = ((magnitude[1:] == magnitude[:-1]) & np.isfinite(magnitude[1:])).any(axis=0)
    irregular = tied | (nonzero < n)  # ties among |d|, or zero differences
    usable = (n > 0) & ~zero
    groups = np.unique(np.c_[n[usable], irregular[usable]], axis=0)
    for size, flag in groups:  # a handful of distinct sample sizes
        members = np.flatnonzero(usable & (n == size) & (irregular == flag))
        res = sps.wilcoxon(packed[:size, members], alternative=alternative, axis=0)
        stat[members], p[members] = res.statistic, res.pvalue
    shape = (n_tasks, n_metrics, n_pairs)
    return stat.reshape(shape), p.reshape(shape), zero.reshape(shape)


def _resample_chunks(n_tasks: int, width: int, n_resamples: int) -> list[tuple[int, int]]:
    per_resample = n_tasks * width * 8
    step = max(1, rs.CHUNK_BYTES // per_resample // rs.RES_BLOCK) * rs.RES_BLOCK
    return [(b, min(n_resamples, b + step)) for b in range(0, n_resamples, step)]


def _tail(star: np.ndarray, observed: np.ndarray, tol: np.ndarray, alternative: str) -> np.ndarray:
    """How many resampled statistics ``star`` (tasks, resamples, columns) are at least
    as extreme as the observed ones (tasks, columns); differences within ``tol`` tie."""
    obs, tol = observed[:, None, :], tol[:, None, :]
    if alternative == "two-sided":
        hit = np.abs(star) >= np.abs(obs) - tol
    elif alternative == "greater":
        hit = star >= obs - tol
    else:
        hit = star <= obs + tol
    return hit.sum(axis=1)


def _column_units(flat: np.ndarray) -> np.ndarray:
    """``(tasks, columns)``: 1, or a power of two near a column's largest |difference| where
    that lies outside 2^±100, so that sums and squares of differences stay finite and normal
    (the scale of :func:`metaeval.stats.layout`; dividing by it is exact)."""
    from .stats import SAFE_MAGNITUDE

    top = np.abs(flat).max(axis=1)
    _, exponent = np.frexp(top)
    extreme = (top > SAFE_MAGNITUDE) | ((top > 0) & (top < 1 / SAFE_MAGNITUDE))
    return np.where(extreme, np.ldexp(1.0, exponent), 1.0)


def _randomization(d, both, n, names, alternative, n_resamples, seed, tracker):
    """Fisher's randomization test by random sign flips, all columns at once.

    With signs s = 2b − 1 (b random bits), T* = Σ s·d = 2·(b @ d) − Σ d; the
    p-value compares T* with T = Σ d (the mean difference times the fixed n).
    """
    n_tasks, width, n_metrics, n_pairs = d.shape
    unit = _column_units(d.reshape(n_tasks, width, -1))
    flat = d.reshape(n_tasks, width, -1) / unit[:, None, :]
    observed = flat.sum(axis=1)  # (tasks, columns)
    tol = 1e-9 * np.abs(flat).sum(axis=1)  # equal sums up to rounding count as ties
    count = np.zeros_like(observed)
    for b0, b1 in _resample_chunks(n_tasks, width, n_resamples):
        bits = rs.draws("signs", seed, names, n, width, b0, b1)  # (tasks, resamples, width)
        star = 2 * np.matmul(bits, flat) - observed[:, None, :]  # (tasks, resamples, columns)
        count += _tail(star, observed, tol, alternative)
        tracker.step()
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = observed / both.reshape(n_tasks, width, -1).sum(axis=1) * unit
    p = (1 + count) / (1 + n_resamples)
    return mean.reshape(n_tasks, n_metrics, n_pairs), p.reshape(n_tasks, n_metrics, n_pairs)


def _bootstrap(d, both, n, names, alternative, n_resamples, seed, tracker):
    """Paired studentized bootstrap test with the shift method, all columns at once.

    The differences are centred (d' = d − d̄ over the pair's queries), resampled
    with replacement by count matrices C, and t* = m*/(s*/√n*) is computed from
    C @ [d', d'², 1] for every resample and column. A pair's resamples draw n
    of its own n paired queries: the task's counts where the pair has every
    query of the task; for a pair that lacks some, counts over its paired
    queries from the stream of a task of that size (one draw per distinct set
    of paired queries, shared by the pairs that have it).
    """
    n_tasks, width, n_metrics, n_pairs = d.shape
    flat = d.reshape(n_tasks, width, -1)
    flat = flat / _column_units(flat)[:, None, :]  # t is the same in any units
    m = both.reshape(n_tasks, width, -1).astype(float)
    n_pair = m.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = flat.sum(axis=1) / n_pair
        centred = (flat - mean[:, None, :]) * m
        sd = np.sqrt((centred**2).sum(axis=1) / (n_pair - 1))
        t_obs = mean / (sd / np.sqrt(n_pair))
    stacked = np.concatenate([centred, centred**2, m], axis=2)
    k = flat.shape[2]
    tol = 1e-9 * np.abs(t_obs)
    scale = np.abs(centred).max(axis=1)[:, None, :]  # flat resamples: 0 up to rounding of it
    partial = _partial_patterns(both.reshape(n_tasks, width, -1), n)
    count = np.zeros_like(mean)
    for b0, b1 in _resample_chunks(n_tasks, width, n_resamples):
        counts = rs.draws("counts", seed, names, n, width, b0, b1)
        sums = np.matmul(counts, stacked)  # (tasks, resamples, 3 columns)
        for task, rows, cols in partial:  # pairs without every query of their task
            own = rs.draws("counts", seed, [names[task]], np.array([len(rows)]), len(rows), b0, b1)
            picked = np.r_[cols, cols + k, cols + 2 * k]
            sums[task][:, picked] = own[0] @ stacked[task][np.ix_(rows, picked)]
        s1, s2, n_star = sums[..., :k], sums[..., k : 2 * k], sums[..., 2 * k :]
        with np.errstate(invalid="ignore", divide="ignore"):
            m_star = s1 / n_star
            var = np.maximum(s2 - n_star * m_star**2, 0.0) / (n_star - 1)
            t_star = m_star / np.sqrt(var / n_star)
            # a resample of equal differences: 0/0 is the null value 0, c/0 is extreme
            flat_zero = var <= 1e-12 * (s2 / n_star)
            t_star = np.where(
                flat_zero,
                np.where(np.abs(m_star) <= 1e-9 * scale, 0.0, np.sign(m_star) * np.inf),
                t_star,
            )
        count += _tail(t_star, t_obs, np.nan_to_num(tol), alternative)
        tracker.step()
    p = np.where(np.isfinite(t_obs), (1 + count) / (1 + n_resamples), np.nan)
    return t_obs.reshape(n_tasks, n_metrics, n_pairs), p.reshape(n_tasks, n_metrics, n_pairs)


def _partial_patterns(both: np.ndarray, n: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """``(task, rows, columns)`` for every distinct set of paired rows short of the task's n.

    ``both`` is ``(tasks, width, columns)``. Columns with no paired row, or with
    every row of the task, are not listed.
    """
    out = []
    size = both.sum(axis=1)
    for task in np.flatnonzero(((size > 0) & (size < n[:, None])).any(axis=1)):
        cols = np.flatnonzero((size[task] > 0) & (size[task] < n[task]))
        masks, which = np.unique(both[task][:, cols].T, axis=0, return_inverse=True)
        for j, mask in enumerate(masks):
            out.append((int(task), np.flatnonzero(mask), cols[which.ravel() == j]))
    return out


# ------------------------------------------------------ two-way layout (ANOVA)
class _TwoWay:
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
        self.lay, self.row_task = lay, row_task
        self.present: np.ndarray = np.asarray(lay.counts > 0)
        self.k = self.present.sum(axis=1)
        present_row = self.present[:, :, row_task]  # (metric, system, row)
        has = lay.mask.any(axis=1)
        self.complete: np.ndarray = np.asarray((lay.mask | ~present_row).all(axis=1) & has)
        self.dropped = _per_task_sum(has & ~self.complete, lay.block_task, n_tasks)
        w = self.complete[:, None, :] & present_row
        # scores relative to the mean shift of the present systems (keeps sums small)
        ref = (lay.shift * self.present).sum(axis=1) / np.maximum(self.k, 1)  # (metric, task)
        self.unit = lay.scale
        offset = (lay.shift - ref[:, None, :]) / self.unit[:, None, :]  # in the values' units
        x = np.where(w, lay.values + offset[:, :, row_task], 0.0)
        self.q = _per_task_sum(self.complete, lay.block_task, n_tasks).astype(float)
        sys_sum = _per_task_sum(x, lay.block_task, n_tasks)  # (metric, system, task)
        row_sum = x.sum(axis=1)  # (metric, row)
        total = sys_sum.sum(axis=1)
        k = self.k.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            correction = total**2 / (self.q * k)
            self.ss_total = _per_task_sum((x * x).sum(axis=1), lay.block_task, n_tasks) - correction
            self.ss_system = (sys_sum**2).sum(axis=1) / self.q - correction
            self.ss_query = _per_task_sum(row_sum**2, lay.block_task, n_tasks) / k - correction
            self.ss_residual = np.maximum(self.ss_total - self.ss_system - self.ss_query, 0.0)
            self.df_residual = (k - 1) * (self.q - 1)
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

    def check(self, what: str, minimum: int = 3) -> None:
        lay = self.lay
        few = (self.k > 0) & (self.k < minimum)
        if few.any():
            m, t = np.nonzero(few)
            groups = pd.DataFrame(
                {"task": lay.tasks[t], "metric": lay.metrics[m], "systems": self.k[m, t]}
            )
            raise OptionError(
                f"{what} needs at least {minimum} systems on a task, but these (task, metric) "
                f"groups have fewer:\n{format_groups(groups)}\nUse compare() for two systems."
            )
        if self.dropped.any():
            m, t = np.nonzero(self.dropped)
            groups = pd.DataFrame(
                {
                    "task": lay.tasks[t],
                    "metric": lay.metrics[m],
                    "queries_left_out": self.dropped[m, t],
                    "queries_used": self.q[m, t].astype(int),
                }  # fmt: skip
            )
            warn_groups(
                f"{what} uses the queries every system has; queries missing for some system were "
                f"left out of {len(groups)} (task, metric) group(s)",
                groups,
                PairingWarning,
            )
        small = (self.k > 0) & (self.q < 2)
        if small.any():
            m, t = np.nonzero(small)
            warn_groups(
                f"{what} gives NaN for {small.sum()} (task, metric) group(s) with fewer than 2 "
                "complete queries",
                pd.DataFrame({"task": lay.tasks[t], "metric": lay.metrics[m]}),
                DegenerateWarning,
            )


def _per_task_sum(a: np.ndarray, block_task: np.ndarray, n_tasks: int) -> np.ndarray:
    """Sum the last (row) axis over the rows of each task."""
    from .stats import _add_segments

    per_block = a.reshape(*a.shape[:-1], len(block_task), BLOCK).sum(axis=-1)
    out = np.zeros((*a.shape[:-1], n_tasks), dtype=per_block.dtype)
    _add_segments(out, per_block, block_task, axis=per_block.ndim - 1)
    return out


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

    two = _TwoWay(layout(scores))
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
        }  # fmt: skip
    )


def means(scores: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """Mean score of every system on every task and metric, with its margin of error.

    With 3 or more systems on a task the means are over the queries every
    system has and the margin of error uses the residual variance of the
    two-way ANOVA: t_{α/2, φ}·√(V_E/n), φ = (k − 1)(n − 1) (Sakai 2018, §3);
    with fewer, each system's own queries and standard deviation:
    t_{α/2, n−1}·s/√n.

    Returns
    -------
    pandas.DataFrame
        ``task, metric, system, n, mean, moe, ci_low, ci_high, variance_from``
        (``"anova"`` or ``"system"``).
    """
    from scipy import stats as sps

    alpha = check_alpha(alpha)
    lay = layout(scores)
    two = _TwoWay(lay)
    if (two.k >= 3).any():
        two.check("means()", minimum=1)
    ds = statistics_of(lay)
    own_n = np.einsum(
        "tmss->mst", ds["n"].transpose("task", "metric", "treatment", "control").values
    )
    stats_xx = np.einsum(
        "tmss->mst", ds["sum_xx"].transpose("task", "metric", "treatment", "control").values
    )
    stats_x = np.einsum(
        "tmss->mst", ds["sum_x"].transpose("task", "metric", "treatment", "control").values
    )
    use_anova = (two.k >= 3)[:, None, :] & two.present
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = lay.scale[:, None, :]  # the sums are of scores divided by it
        own_mean = lay.shift + stats_x / own_n * unit
        own_var = (stats_xx - stats_x**2 / own_n) / (own_n - 1)
        n = np.where(use_anova, two.q[:, None, :], own_n)
        mean = np.where(use_anova, two.means, own_mean)
        df = np.where(use_anova, two.df_residual[:, None, :], own_n - 1)
        var = np.where(use_anova, two.ms_residual[:, None, :], own_var)
        moe = sps.t.isf(alpha / 2, df) * np.sqrt(var / n) * unit
    m, s, t = np.nonzero(two.present)
    return (
        pd.DataFrame(
            {
                "task": lay.tasks[t].astype(str),
                "metric": lay.metrics[m].astype(str),
                "system": lay.systems[s].astype(str),
                "n": n[m, s, t].astype(int),
                "mean": mean[m, s, t],
                "moe": moe[m, s, t],
                "ci_low": mean[m, s, t] - moe[m, s, t],
                "ci_high": mean[m, s, t] + moe[m, s, t],
                "variance_from": np.where(use_anova[m, s, t], "anova", "system"),
            }  # fmt: skip
        )
        .sort_values(["metric", "task"], kind="stable")
        .reset_index(drop=True)
    )


def tukey(
    scores: pd.DataFrame,
    *,
    randomized: bool = False,
    n_resamples: int = 10_000,
    seed: int | None = None,
    alpha: float = 0.05,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Tukey's HSD for every pair of systems per task and metric, in the paired design.

    The variance is the residual mean square V_E of the two-way ANOVA (systems ×
    queries, on the queries every system has), so the query effect is taken out.
    For systems a, b with means over n queries: q = |m_a − m_b| / √(V_E/n),
    p = P(Q > q) for the studentized range with k systems and (k − 1)(n − 1) df,
    and the simultaneous interval (m_a − m_b) ∓ q_{1−α}·√(V_E/n).

    With ``randomized=True``, the randomized Tukey HSD of Carterette (2012):
    each resample permutes the systems' scores within every query; p is the share
    (with the +1 rule) of resamples whose largest minus smallest system mean
    reaches |m_a − m_b|. Random numbers as in :func:`compare` (same seed, same
    p-values). It needs every system on every complete query of the task.

    Returns
    -------
    pandas.DataFrame
        One row per (task, metric, system pair a < b in the table's system
        order): ``system_a, system_b, diff`` (m_a − m_b), ``effect_size``
        (diff/√V_E), ``statistic`` (q), ``p_value``, ``ci_low, ci_high``
        (simultaneous, from the studentized range), ``n`` (queries), ``test``
        (``"tukey"`` or ``"randomized_tukey"``).

    Raises
    ------
    metaeval.OptionError
        When a (task, metric) has fewer than 3 systems.
    """
    from scipy import stats as sps

    alpha = check_alpha(alpha)
    n_resamples = _check_resamples(n_resamples)
    lay = layout(scores)
    two = _TwoWay(lay)
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
        seed = rs.resolve_seed(seed)
        p = _randomized_tukey(two, np.abs(diff), n_resamples, seed, progress)
        test = "randomized_tukey"
    keep = two.present[:, a, :] & two.present[:, b, :]
    m, pair, t = np.nonzero(keep)
    frame = (
        pd.DataFrame(
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
            }  # fmt: skip
        )
        .sort_values(["metric", "task"], kind="stable")
        .reset_index(drop=True)
    )
    frame.attrs.update(
        alpha=alpha,
        seed=seed if randomized else None,
        n_resamples=n_resamples if randomized else None,
    )
    return frame


def _randomized_tukey(
    two: _TwoWay, abs_diff: np.ndarray, n_resamples: int, seed: int, progress
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
        len(_resample_chunks(len(bt.tasks), bt.rows.shape[1] * n_systems, n_resamples))
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
        for b0, b1 in _resample_chunks(len(task), width * n_systems, n_resamples):
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

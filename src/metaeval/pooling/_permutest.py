"""Permutation tests of pooled effects and meta-regression coefficients, every group at once.

:func:`permutest` is metafor's ``permutest()`` (Follmann & Proschan 1999; Higgins &
Thompson 2004) for the models of :func:`metaeval.pool` and :func:`metaeval.metareg`.
The statistic is the model's own z (or t under Knapp–Hartung); every permuted data set
is refitted with the same τ² estimator and test:

- intercept only: the signs of the effects are flipped (all 2^k sign vectors, or random
  ones); under the null of no effect with symmetric errors each is as likely;
- with moderators: the rows of the model matrix (intercept included) are permuted against
  the effects and their variances (all k!/Π m_j! distinct orders, m_j the sizes of sets of
  identical rows, or random orders); p per coefficient and for the omnibus Q_M.

Two-sided p = the share of refits with |z*| ≥ |z| − √ε (the observed data set among them);
Q_M's p the share with Q_M* ≥ Q_M − √ε. The test is exact (every permutation) when asked
or when there are no more distinct permutations than ``n_resamples`` (metafor's rule);
otherwise ``n_resamples`` random ones, the first replaced by the observed data. Refits
that fail (a τ² estimator that does not converge) are left out of both counts.

The refits run as one batch of (group × permutation) models through the estimators of
:mod:`metaeval.pooling._tau2`, in chunks that bound the memory; no Python loop runs over
groups or permutations (only over chunks, sample sizes and patterns of tied rows).

References
----------
Follmann, D. A., & Proschan, M. A. (1999). Valid inference in random effects
meta-analysis. *Biometrics*, 55(3), 732–737. doi:10.1111/j.0006-341X.1999.00732.x
Higgins, J. P. T., & Thompson, S. G. (2004). Controlling the risk of spurious findings
from meta-regression. *Statistics in Medicine*, 23(11), 1663–1682. doi:10.1002/sim.1752
Viechtbauer, W., López-López, J. A., Sánchez-Meca, J., & Marín-Martínez, F. (2015). A
comparison of procedures to test for moderators in mixed-effects meta-regression models.
*Psychological Methods*, 20(3), 360–374. doi:10.1037/met0000023
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .._options import (
    DEFAULT_CI,
    DEFAULT_POOL_METHOD,
    CIMethod,
    PoolMethod,
    literal_signature,
    resolve_ci,
)
from ..engines import any_frame
from ..errors import DegenerateWarning, OptionError, resolve_seed, warn_groups
from . import _tau2 as t2
from ._engine import KH_TESTS, fit, refuse_shared
from ._grouping import group, valid_rows
from ._metareg import INTERCEPT, design, metareg, refit

__all__ = ["permutest", "MAX_EXACT", "PERMUTEST_COLUMNS"]

#: The most distinct permutations per group that ``exact=True`` enumerates.
MAX_EXACT = 10**6

#: The columns of :func:`permutest`'s table besides the group keys (``qm`` and
#: ``qm_p_value`` with moderators only).
PERMUTEST_COLUMNS = (
    "term",
    "estimate",
    "statistic",
    "p_value",
    "model_p_value",
    "exact",
    "n_permutations",
    "qm",
    "qm_p_value",
)

_TOL = np.sqrt(np.finfo(float).eps)  # metafor's comptol
_CELLS = 2**18  # (model × slot × column) cells per chunk of refits


@any_frame
@literal_signature
def permutest(
    effects: pd.DataFrame,
    *,
    exact: bool | None = None,
    n_resamples: int = 1000,
    seed: int | None = None,
    method: PoolMethod = DEFAULT_POOL_METHOD,
    test: CIMethod | None = DEFAULT_CI,
    mods: str | Sequence[str] | None = None,
    alpha: float = 0.05,
    over: str = "task",
    groups: str | Sequence[str] | None = None,
) -> pd.DataFrame:
    """Permutation tests of the pooled effect, or of meta-regression coefficients, per group.

    metafor's ``permutest()``: the model's test statistic (z, or t under Knapp–Hartung)
    compared with its distribution over data sets in which the effects' signs are flipped
    (no moderators) or the moderators are permuted across the tasks, each refitted with the
    same τ² estimator and test. Valid with few tasks, where the model's own p-value leans
    on asymptotics (Follmann & Proschan 1999; Higgins & Thompson 2004).

    Parameters
    ----------
    effects : pandas.DataFrame
        An effects table (from :func:`metaeval.effects`), with the moderator columns when
        ``mods`` is given (see :func:`metaeval.metareg`).
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    exact : bool or None, default None
        None: enumerate every distinct permutation when there are no more of them than
        ``n_resamples`` (2^k sign vectors; k!/Π m_j! orders of the model matrix's rows,
        m_j the sizes of sets of identical rows), else draw ``n_resamples`` at random
        (metafor's rule). True: always enumerate (at most ``MAX_EXACT`` = 10⁶ per group).
        False: always draw at random (metafor has no such choice).
    n_resamples : int, default 1000
        The number of random permutations (metafor's ``iter``), the observed data set
        counted as the first; at least 2.
    seed : int, optional
        Seed of the random permutations (fresh entropy when None; the seed used is in
        ``attrs["seed"]``). Every group uses the same draws (a group gets the same
        permutations alone as among others).
    method : {"REML", "ML", "DL", "HE", "HS", "SJ", "EB", "PM", "EE", "FE"}, default "REML"
        The τ² estimator, as in :func:`metaeval.pool` and :func:`metaeval.metareg`; every
        permuted data set is refitted with it.
    test : {"knha", "z", "t", "hksj", "adhoc"} or None, default None
        The test whose statistic is permuted: Knapp–Hartung t (``hksj`` an alias), its
        factor floored at 1 (``"adhoc"``), or z (``"t"``, the same statistic as z: only
        its reference distribution, which the permutations replace, differs).
        None: ``"knha"`` for the random-effects methods, ``"z"`` for ``EE``.
    mods : str or list of str, optional
        Moderator columns (as :func:`metaeval.metareg`'s ``mods``): permute the rows of
        the model matrix instead of flipping signs.
    alpha : float, default 0.05
        Passed to the model fit (its intervals are not reported here).
    over : str, default "task"
        The column the effects of one model differ in (one row per value).
    groups : str or list of str, optional
        Further columns that tell separate models apart, besides
        ``effect_type, metric, treatment, control``.

    Returns
    -------
    pandas.DataFrame
        One row per group and term (without ``mods`` the one term ``"intercept"``; with
        them the terms of :func:`metaeval.metareg`), RangeIndex. Columns: the group keys;
        ``term``; ``estimate`` (the pooled effect or coefficient); ``statistic`` (its z or
        t); ``p_value`` (the two-sided permutation p-value); ``model_p_value`` (the
        model's own p-value); ``exact`` (every distinct permutation used); and
        ``n_permutations`` (the refits counted, the observed data included); with
        ``mods`` also ``qm`` (the omnibus test of the moderators, as
        :func:`metaeval.metareg` reports it) and ``qm_p_value`` (its permutation p-value),
        the same on every row of a group. ``attrs``: ``method, test, seed, n_resamples,
        mods``.

    Raises
    ------
    metaeval.OptionError
        An unknown ``method`` or ``test``; ``exact`` not a bool or None; ``exact=True`` with
        more than ``MAX_EXACT`` = 10⁶ distinct permutations in a group; ``n_resamples`` < 2;
        a bad ``seed``.
    metaeval.SchemaError
        As :func:`metaeval.pool` and :func:`metaeval.metareg`.

    Warns
    -----
    metaeval.DegenerateWarning
        As :func:`metaeval.pool` (or :func:`metaeval.metareg` with ``mods``), naming the
        groups; a group with fewer than two effects (or a model that cannot be fitted)
        has NaN p-values; a group where some refits failed names how many were left out.

    Notes
    -----
    Two-sided p = ``#{|z*| ≥ |z| − √ε}/N`` over the N refits (the observed one among them),
    √ε ≈ 1.5e-8 as metafor's ``comptol``; Q_M's p = #{Q_M* ≥ Q_M − √ε}/N. Random
    permutations: the first is replaced by the observed data, so p ≥ 1/N. A group whose
    Knapp–Hartung s² is 0 in a refit (moderators that fit exactly) has no statistic there
    and that refit is left out (metafor counts t = ±∞).

    Examples
    --------
    >>> import pandas as pd, metaeval
    >>> eff = pd.DataFrame({
    ...     "task": list("abcdef"),
    ...     "effect": [0.12, 0.30, 0.21, 0.05, 0.26, 0.18],
    ...     "variance": [0.004, 0.006, 0.005, 0.003, 0.008, 0.004]})
    >>> res = eff.meta.permutest()
    >>> res[["term", "estimate", "p_value", "model_p_value", "exact", "n_permutations"]].round(4)
            term  estimate  p_value  model_p_value  exact  n_permutations
    0  intercept    0.1744   0.0312         0.0058   True              64
    >>> int(round(res["p_value"].iloc[0] * 64))  # only the observed signs and their mirror
    2

    With six tasks no sign vector gives a larger ``|t|`` than the observed one: the smallest
    p-value an exact test of 2^6 sign vectors can give is 2/64. metafor gives the same:
    ``permutest(rma(yi, vi, test = "knha"))``.
    """
    if exact is not None and not isinstance(exact, bool | np.bool_):
        raise OptionError(f"`exact` must be True, False or None, but {exact!r} was passed.")
    if (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, int | np.integer)
        or n_resamples < 2
    ):
        raise OptionError(
            f"`n_resamples` must be an integer of at least 2, but {n_resamples!r} was passed."
        )
    seed = resolve_seed(seed)
    refuse_shared(effects, "permutest()")
    if mods is None:
        out, observed, grp, y, v, x, free, valid, test = _intercept_model(
            effects, method, test, alpha, over, groups
        )
        terms = [INTERCEPT]
        mod_list: list[str] = []
    else:
        out, observed, grp, y, v, x, free, valid, test = _moderator_model(
            effects, mods, method, test, alpha, over, groups
        )
        terms = list(out["term"].iloc[: len(out) // max(1, grp.n_groups)])
        mod_list = [mods] if isinstance(mods, str) else list(mods)
    method = "EE" if method == "FE" else method
    n_groups, n_terms = grp.n_groups, len(terms)
    code = grp.code[valid]
    k = np.bincount(code, minlength=n_groups)
    usable = (k >= 2) & np.isfinite(observed["stat"]).any(axis=1)
    if mods is None:
        few = (k < 2) & (k > 0)
        if few.any():
            warn_groups(
                "{n} group(s) have a single effect: no permutation test (p NaN)",
                grp.key_frame.loc[few],
                DegenerateWarning,
            )
    hits = np.zeros((n_groups, n_terms))
    count = np.zeros((n_groups, n_terms))
    qm_hits, qm_count = np.zeros(n_groups), np.zeros(n_groups)
    n_models = np.zeros(n_groups)
    is_exact = np.zeros(n_groups, dtype=bool)
    tallies = (hits, count, qm_hits, qm_count, n_models)
    # every group's rows in slot order (their order in the table)
    order = np.argsort(code, kind="stable")
    rows = np.flatnonzero(valid)[order]
    start = np.concatenate([[0], np.cumsum(k)])
    draws = _Draws(seed, n_resamples)
    model = _Model(method, test, mods is not None, n_groups)
    # the jobs: groups of one size (and, with moderators, one pattern of tied rows)
    jobs = []
    for size in np.unique(k[usable]):
        members = np.flatnonzero(usable & (k == size))
        idx = rows[start[members][:, None] + np.arange(size)]  # (G, k)
        if x is None:
            jobs.append((members, idx, None, None, None, 2**size))
            continue
        xx = np.where(free[members][:, None, :], x[idx], 0.0)
        pattern, reps = _tie_patterns(xx)
        for p_code in np.unique(pattern[:, 0]):
            sel = pattern[:, 0] == p_code
            counts = pattern[sel][0, 1:]
            counts = counts[counts > 0]
            n_exact = math.factorial(int(size)) // math.prod(math.factorial(int(c)) for c in counts)
            jobs.append((members[sel], idx[sel], xx[sel], reps[sel], counts, n_exact))
    decisions = [_decide(exact, job[-1], n_resamples, grp, job[0]) for job in jobs]  # may raise
    for (members, idx, xx, reps, counts, n_exact), exact_here in zip(jobs, decisions, strict=True):
        size = idx.shape[1]
        is_exact[members] = exact_here
        obs = (observed["stat"][members], observed["qm"][members])
        if xx is None:
            if exact_here:
                signs = 1 - 2 * ((np.arange(n_exact)[:, None] >> np.arange(size)) & 1)
            else:
                signs = draws.signs(size)
            model.run(members, y[idx], v[idx], None, None, signs, None, obs, tallies)
        else:
            if exact_here:
                perms = _multiset_permutations(counts)  # (n, k) class labels
                order_rows = reps[:, perms]  # (G, n, k) the row put into each slot
            else:
                order_rows = draws.orders(size)  # (n, k)
            model.run(members, y[idx], v[idx], xx, free[members], None, order_rows, obs, tallies)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.minimum(1.0, hits / count)
        qm_p = np.minimum(1.0, qm_hits / qm_count)
    p[~usable] = np.nan
    qm_p[~usable] = np.nan
    n_models = np.where(usable, n_models, 0)
    _warn_failed(grp, usable, n_models, model.attempted)
    out = out.assign(
        p_value=p.ravel(),
        exact=np.repeat(is_exact & usable, n_terms),
        n_permutations=np.repeat(n_models.astype(np.int64), n_terms),
    )
    if mods is not None:
        out["qm_p_value"] = np.repeat(qm_p, n_terms)
    columns = [c for c in out.columns if c not in PERMUTEST_COLUMNS]
    columns += [c for c in PERMUTEST_COLUMNS if c in out.columns]
    out = out[columns].reset_index(drop=True)
    out.attrs = {
        "method": method,
        "test": test,
        "seed": seed,
        "n_resamples": n_resamples,
        "mods": mod_list,
    }
    return out


# ------------------------------------------------------------------ the observed fits
def _intercept_model(effects, method, test, alpha, over, groups):
    """The observed pooled fits (pool's checks and warnings) and the data to permute."""
    fitted = fit(
        effects,
        method=method,
        test=test,
        alpha=alpha,
        over=over,
        groups=groups,
        heterogeneity_ci=False,
    )
    pooled, grp = fitted.pooled, fitted.grouped
    test = _test(pooled["test"], method, test)
    valid = valid_rows(grp.table)
    y = grp.table["effect"].to_numpy(np.float64)
    v = grp.table["variance"].to_numpy(np.float64)
    out = grp.key_frame.assign(
        term=INTERCEPT,
        estimate=pooled["effect"].to_numpy(),
        statistic=pooled["statistic"].to_numpy(),
        model_p_value=pooled["p_value"].to_numpy(),
    ).reset_index(drop=True)
    stat = pooled["statistic"].to_numpy(np.float64)[:, None]
    observed = {"stat": stat, "qm": np.full(grp.n_groups, np.nan)}
    free = np.ones((grp.n_groups, 1), dtype=bool)
    return out, observed, grp, y, v, None, free, valid, test


def _test(tests: pd.Series, method: str, test: str | None) -> str:
    """The test of the observed fits ("z", "t", "knha" or "adhoc"): the refits use it too."""
    if len(tests):
        return str(tests.iloc[0])
    test = resolve_ci(method, test)
    return "knha" if test == "hksj" else test


def _moderator_model(effects, mods, method, test, alpha, over, groups):
    """The observed meta-regressions (metareg's checks and warnings) and the data to
    permute: the scaled model matrix and each group's estimable columns."""
    res = metareg(effects, mods, method=method, test=test, alpha=alpha, over=over, groups=groups)
    mod_list = [mods] if isinstance(mods, str) else list(mods)
    grp = group(effects, over, groups, None, warn_dependence=False)
    des = design(grp.table, mod_list)
    valid = valid_rows(grp.table) & np.isfinite(des.matrix).all(axis=1)
    x = np.where(np.isfinite(des.matrix), des.matrix, 0.0) / des.scale
    n_terms = len(des.terms)
    table = res.table
    stat = table["statistic"].to_numpy(np.float64).reshape(grp.n_groups, n_terms)
    beta = table["estimate"].to_numpy(np.float64).reshape(grp.n_groups, n_terms)
    free = np.isfinite(beta)
    test = _test(res.fit["test"], method, test)
    out = table[[*grp.keys, "term", "estimate", "statistic", "p_value"]].rename(
        columns={"p_value": "model_p_value"}
    )
    fit_qm = res.fit["qm"].to_numpy(np.float64)
    out = out.assign(qm=np.repeat(fit_qm, n_terms))
    observed = {"stat": stat, "qm": fit_qm}
    y = grp.table["effect"].to_numpy(np.float64)
    v = grp.table["variance"].to_numpy(np.float64)
    return out, observed, grp, y, v, x, free, valid, test


# ------------------------------------------------------------------ the permutations
def _decide(exact, n_exact: int, n_resamples: int, grp, members: np.ndarray) -> bool:
    if exact is None:
        return n_exact <= n_resamples
    if exact and n_exact > MAX_EXACT:
        groups = grp.key_frame.iloc[members[:3]].to_dict("records")
        raise OptionError(
            f"`exact=True` would enumerate {n_exact:,} permutations per group (at most "
            f"{MAX_EXACT:,} are enumerated) in {len(members)} group(s), e.g. {groups}; use "
            "exact=None (random permutations beyond n_resamples) or False."
        )
    return bool(exact)


class _Draws:
    """The random permutations, shared by every group: slot i of resample j is decided by
    the uniform draw (i, j), so a group of k effects uses the first k rows of draws and gets
    the same permutations whatever other groups are fitted with it. Resample 0 is the
    observed data (metafor's replacement of the first)."""

    def __init__(self, seed: int, n: int) -> None:
        self.seed, self.n = seed, n
        self._u = np.zeros((0, n))

    def uniform(self, size: int) -> np.ndarray:
        if self._u.shape[0] < size:
            rng = np.random.default_rng(self.seed)
            self._u = rng.random((int(size), self.n))
        return self._u[:size].T  # (n, size)

    def signs(self, size: int) -> np.ndarray:
        s = np.where(self.uniform(size) < 0.5, 1, -1)
        s[0] = 1
        return s

    def orders(self, size: int) -> np.ndarray:
        o = np.argsort(self.uniform(size), axis=1, kind="stable")
        o[0] = np.arange(size)
        return o


def _tie_patterns(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per group of ``x`` (G, k, P): a code of its pattern of tied rows with the sizes of
    its sets of identical rows (largest first, padded with 0), and the slots of the sets'
    first rows in that order (class c of the pattern is the row ``reps[g, c]``; only the
    first entries, one per set, are used)."""
    n_groups, size = x.shape[:2]
    same = (x[:, :, None, :] == x[:, None, :, :]).all(axis=3)  # (G, k, k)
    first = np.argmax(same, axis=2)  # each row's first identical row
    counts = np.zeros((n_groups, size), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(n_groups), size), first.ravel()), 1)
    # classes ordered by size (largest first), then by slot
    rank = np.lexsort((np.broadcast_to(np.arange(size), counts.shape), -counts), axis=1)
    sorted_counts = np.take_along_axis(counts, rank, axis=1)
    _, p_code = np.unique(sorted_counts, axis=0, return_inverse=True)
    return np.column_stack([p_code.ravel(), sorted_counts]), rank


def _multiset_permutations(counts: np.ndarray) -> np.ndarray:
    """Every distinct arrangement of class labels 0..c−1 with ``counts`` copies each,
    built position by position (a loop over the k positions, vectorized over sequences)."""
    seqs = np.zeros((1, 0), dtype=np.intp)
    remaining = np.asarray(counts, dtype=np.int64)[None, :]
    for _ in range(int(np.sum(counts))):
        s_idx, cls = np.nonzero(remaining > 0)
        seqs = np.column_stack([seqs[s_idx], cls])
        remaining = remaining[s_idx].copy()
        remaining[np.arange(len(cls)), cls] -= 1
    return seqs


class _Model:
    """Refits (group × permutation) models in chunks and tallies the hits."""

    def __init__(self, method: str, test: str, with_mods: bool, n_groups: int) -> None:
        self.method, self.test, self.with_mods = method, test, with_mods
        self.attempted = np.zeros(n_groups)  # the refits tried per group

    def run(self, members, y, v, x, free, signs, orders, obs, tallies) -> None:
        hits, count, qm_hits, qm_count, n_models = tallies
        n_groups, size = y.shape
        per_group = len(signs) if signs is not None else orders.shape[-2]
        width = size * (1 if x is None else x.shape[2])
        chunk = max(1, _CELLS // width)
        total = n_groups * per_group
        obs_stat, obs_qm = obs
        for lo in range(0, total, chunk):
            flat = np.arange(lo, min(total, lo + chunk))
            g, j = np.divmod(flat, per_group)
            if x is None:
                b = t2.Batch(y[g] * signs[j], v[g], np.ones((len(flat), size), dtype=bool))
                stat, qm, failed = _intercept_stats(b, self.method, self.test)
            else:
                rows = orders[g, j] if orders.ndim == 3 else orders[j]
                xx = x[g[:, None], rows]
                m = np.ones((len(flat), size), dtype=bool)
                b = t2.Batch(y[g], v[g], m, xx, free[g])
                stat, qm, failed = refit(b, self.method, self.test)
            stat = np.where(failed[:, None], np.nan, stat)
            ok = np.isfinite(stat)
            with np.errstate(invalid="ignore"):
                hit = ok & (np.abs(stat) >= np.abs(obs_stat[g]) - _TOL)
            np.add.at(hits, members[g], hit)
            np.add.at(count, members[g], ok)
            np.add.at(n_models, members[g], ok.any(axis=1))
            if self.with_mods:
                qm = np.where(failed, np.nan, qm)
                qok = np.isfinite(qm)
                with np.errstate(invalid="ignore"):
                    np.add.at(qm_hits, members[g], qok & (qm >= obs_qm[g] - _TOL))
                np.add.at(qm_count, members[g], qok)
        self.attempted[members] = per_group


def _intercept_stats(b: t2.Batch, method: str, test: str):
    """z (or Knapp–Hartung t, with ``"adhoc"`` its factor floored at 1) of the
    intercept-only model, as :func:`metaeval.pool`."""
    tau2, failed, _ = t2.estimate(b, method)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = b.weights(np.where(failed, 0.0, tau2))
        sw = w.sum(axis=1)
        mu = (w * b.y).sum(axis=1) / sw
        if test in KH_TESTS:
            r = (b.y - mu[:, None]) * b.m
            rss = (w * r * r).sum(axis=1)
            noise = (4 * b.k * np.finfo(float).eps * np.abs(b.y).max(axis=1)) ** 2 * sw
            s2w = np.where(rss <= noise, 0.0, rss / (b.k - 1))
            s2w = np.maximum(s2w, 1.0) if test == "adhoc" else s2w
            se = np.where(s2w == 0, np.nan, np.sqrt(s2w / sw))
        else:
            se = np.sqrt(1 / sw)
        stat = (mu / se)[:, None]
    return stat, np.full(len(mu), np.nan), failed


def _warn_failed(grp, usable, n_models, tried) -> None:
    short = usable & (n_models < tried)
    if short.any():
        table = grp.key_frame.loc[short].assign(
            left_out=(tried - n_models)[short].astype(np.int64), of=tried[short].astype(np.int64)
        )
        warn_groups(
            "{n} group(s) had refits that failed (τ² did not converge, or a Knapp–Hartung "
            "s² of 0): they are left out of the permutation p-value's numerator and "
            "denominator",
            table,
            DegenerateWarning,
        )

"""The multilevel model: several metrics per task, pooled with their sampling covariance.

metafor's ``rma.mv(yi, V, random = ~ 1 | task/metric)`` (Konstantopoulos 2011): the
effect y_i of metric m on task t is

    y_i = μ + u_t + w_tm + e_i,   u_t ~ N(0, σ²_task), w_tm ~ N(0, σ²_metric), e ~ N(0, V),

with V block-diagonal by task (the sampling covariance of the effects of one task's
metrics, :func:`metaeval.effect_covariance`). The marginal covariance of a task's effects
is M_t = V_t + σ²_task·11' + σ²_metric·I. With X = 1 (an intercept):

- μ̂ = 1'M⁻¹y / 1'M⁻¹1 with variance 1/(1'M⁻¹1); ``test="t"`` keeps it and uses t with
  k − 1 df, k the number of effects (metafor's ``rma.mv(test="t")``); ``test="knha"``
  multiplies it by s² = (y − μ̂)'M⁻¹(y − μ̂)/(k − 1) with the same t (Knapp & Hartung's
  factor carried over to the marginal covariance: the formula of metafor's undocumented,
  "experimental" ``rma.mv(test="knha")`` since 4.0, which metafor 3.8 refuses),
  ``test="adhoc"`` by max(1, s²); the df count effects, not tasks, so with few tasks all
  three undercover somewhat where the task variance dominates (the guide's "Beyond one
  pooled mean" has the coverage; ``robust="CR2"`` holds the level there);
- σ²_task, σ²_metric maximize the REML (or ML) likelihood over σ² ≥ 0, found by
  projected Newton steps (Fisher scoring where the observed information is not positive
  definite) with step halving, for every group in lockstep; the likelihood can have
  more than one local maximum, so the search runs on each boundary and inside, from
  metafor's start (half of the variance of the effects beyond the mean sampling
  variance each), from the best point of a coarse grid and from the boundary maxima,
  and keeps the highest maximum (see :func:`_estimate`). With P = M⁻¹ − M⁻¹1(1'M⁻¹1)⁻¹1'M⁻¹ and Z_task, Z_metric the
  derivatives of M, the REML score is −½tr(PZ_j) + ½y'PZ_jPy and the information
  ½tr(PZ_jPZ_k) (ML: M⁻¹ in the trace terms);
- Q_E = y'(V⁻¹ − V⁻¹1(1'V⁻¹1)⁻¹1'V⁻¹)y with k − 1 df, the test of heterogeneity at both
  levels;
- cluster-robust by task (``robust=True`` or ``"CR1"``, metafor's
  ``robust(fit, cluster=task)`` with its default ``adjust=TRUE``):
  Var_R(μ̂) = n/(n − 1) · Σ_t (1'M_t⁻¹e_t)² / (1'M⁻¹1)², e = y − μ̂, n the number of
  tasks, with t on n − 1 df (Hedges, Tipton & Johnson 2010; Pustejovsky & Tipton 2022);
  ``robust="CR2"``: clubSandwich's bias-reduced ``vcovCR(type="CR2")`` with the target
  M and its Satterthwaite df (:mod:`metaeval.pooling._robust`; Tipton 2015), which
  holds its level with few tasks where CR1 does not. It keeps the intervals honest when
  V or the random effects are misspecified; it does not depend on ``test``.

Groups are laid out as ``(group, task, metric)`` arrays padded with inert slots (a 1 on
M's diagonal, no effect), so that every step is a batched operation on the blocks of
all groups at once.

References
----------
Hedges, L. V., Tipton, E., & Johnson, M. C. (2010). Robust variance estimation in
meta-regression with dependent effect size estimates. *Research Synthesis Methods*,
1(1), 39–65. doi:10.1002/jrsm.5
Konstantopoulos, S. (2011). Fixed effects and variance components estimation in
three-level meta-analysis. *Research Synthesis Methods*, 2(1), 61–76.
doi:10.1002/jrsm.35
Pustejovsky, J. E., & Tipton, E. (2022). Meta-analysis with robust variance estimation:
Expanding the range of working models. *Prevention Science*, 23, 425–438.
doi:10.1007/s11121-021-01246-3
Viechtbauer, W. (2010). Conducting meta-analyses in R with the metafor package.
*Journal of Statistical Software*, 36(3). doi:10.18637/jss.v036.i03
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._options import add_display
from ..errors import (
    DegenerateWarning,
    DependenceWarning,
    SchemaError,
    quote_list,
    warn,
    warn_groups,
)
from ._engine import KH_TESTS, T_TESTS, ZERO_S2_TEXT, refuse_shared, warn_each
from ._grouping import Grouped, group, valid_rows
from ._robust import check_robust, sandwich

#: The cluster-robust columns (``robust="CR1"`` or ``"CR2"``).
ROBUST_COLUMNS = (
    "robust_se",
    "robust_df",
    "robust_statistic",
    "robust_p_value",
    "robust_ci_low",
    "robust_ci_high",
)

__all__ = ["fit_multilevel", "MULTILEVEL_METHODS"]

MULTILEVEL_METHODS = ("REML", "ML", "EE")
MAXITER = 200
TOL = 1e-10
"""A step below TOL·max(σ², v_min) ends the search (v_min the smallest sampling variance)."""


@dataclass
class Blocks:
    """G groups as (G, T, S) arrays: T tasks, S metric slots per task."""

    y: np.ndarray  # (G, T, S), 0 in empty slots
    v: np.ndarray  # (G, T, S, S) sampling covariance, identity in empty slots
    m: np.ndarray  # (G, T, S) occupied slots

    def __post_init__(self) -> None:
        self.x = self.m.astype(float)
        self.ones = np.einsum("gts,gtr->gtsr", self.x, self.x)  # 11' per task
        self.eye = np.eye(self.m.shape[2]) * self.x[..., None, :]  # I on occupied slots
        self.k = self.m.sum(axis=(1, 2))
        self.n_task = self.m.any(axis=2).sum(axis=1)
        diag = np.diagonal(self.v, axis1=2, axis2=3)
        self.v_min = np.where(self.m, diag, np.inf).min(axis=(1, 2))

    def marginal(self, theta: np.ndarray) -> np.ndarray:
        """M = V + σ²_task·11' + σ²_metric·I, per task (G, T, S, S)."""
        return (
            self.v
            + theta[:, 0, None, None, None] * self.ones
            + theta[:, 1, None, None, None] * self.eye
        )


def _gls(b: Blocks, minv: np.ndarray) -> dict[str, np.ndarray]:
    """μ̂, 1'M⁻¹1 and the pieces of the score and information, per group."""
    a = np.einsum("gtsr,gtr->gts", minv, b.x)  # M⁻¹1 per task
    sxx = np.einsum("gts,gts->g", a, b.x)
    mu = np.einsum("gts,gts->g", a, b.y) / sxx
    r = (b.y - mu[:, None, None] * b.x) * b.m
    u = np.einsum("gtsr,gtr->gts", minv, r)  # M⁻¹(y − μ̂)
    return {"a": a, "sxx": sxx, "mu": mu, "r": r, "u": u}


def _score_info(b: Blocks, theta: np.ndarray, reml: bool):
    """Log-likelihood, score (G, 2) and information (G, 2, 2, 2): the observed and
    the expected information at θ.

    With u = Py = M⁻¹(y − 1μ̂), a = M⁻¹1 and Q_jk = y'PZ_jPZ_kPy the score is
    ½(u'Z_ju − tr(PZ_j)), the expected information E_jk = ½tr(PZ_jPZ_k) and the
    observed one Q_jk − E_jk (ML: M⁻¹ for P in the traces).
    """
    mat = b.marginal(theta)
    minv = np.linalg.inv(mat)
    g = _gls(b, minv)
    a, sxx, u, r = g["a"], g["sxx"], g["u"], g["r"]
    z = (b.ones, b.eye)
    mz = [minv @ zj for zj in z]  # M⁻¹Z_j per task
    za = [np.einsum("gtsr,gtr->gts", zj, a) for zj in z]
    zu = [np.einsum("gtsr,gtr->gts", zj, u) for zj in z]
    n = len(sxx)
    score, expected, quad = np.empty((n, 2)), np.empty((n, 2, 2)), np.empty((n, 2, 2))
    for j in range(2):
        trace = np.einsum("gtss->g", mz[j])
        if reml:
            trace = trace - np.einsum("gts,gts->g", a, za[j]) / sxx
        score[:, j] = 0.5 * (np.einsum("gts,gts->g", u, zu[j]) - trace)
        for k in range(j, 2):
            t = np.einsum("gtij,gtji->g", mz[j], mz[k])
            if reml:
                cross = np.einsum("gts,gtsr,gtr->g", za[j], minv, za[k])
                aja = np.einsum("gts,gts->g", a, za[j])
                aka = np.einsum("gts,gts->g", a, za[k])
                t = t - 2 * cross / sxx + aja * aka / sxx**2
            expected[:, j, k] = expected[:, k, j] = 0.5 * t
            # y'PZ_jPZ_kPy = (Z_j u)'P(Z_k u), P = M⁻¹ − aa'/sxx
            q = (
                np.einsum("gts,gtsr,gtr->g", zu[j], minv, zu[k])
                - np.einsum("gts,gts->g", a, zu[j]) * np.einsum("gts,gts->g", a, zu[k]) / sxx
            )
            quad[:, j, k] = quad[:, k, j] = q
    info = np.stack([quad - expected, expected], axis=1)
    _, logdet = np.linalg.slogdet(mat)
    ll = -0.5 * (logdet.sum(axis=1) + np.einsum("gts,gts->g", r, u))
    if reml:
        ll = ll - 0.5 * np.log(sxx)
    return ll, score, info


def _newton(b: Blocks, start: np.ndarray, free: np.ndarray, reml: bool):
    """Maximize the likelihood over the ``free`` components (the others stay at 0) for
    every group in lockstep by projected Newton steps.

    Each step holds at 0 the components that sit at 0 with a score pointing below it
    (the active bound), takes the Newton step on the others (Fisher scoring where the
    observed information is not positive definite), projects it onto σ² ≥ 0 and halves
    it while the likelihood falls. If no Newton step raises it (projection can turn the
    Newton direction downhill), the score itself, scaled by the information's diagonal,
    is halved instead: on the free components it points uphill and, for a short enough
    step, into σ² ≥ 0, so every step that moves raises the likelihood. The search ends
    when the full projected Newton step is below TOL·max(σ², v_min).
    Returns θ, the log-likelihood and which groups converged."""
    n = len(b.k)
    theta = np.where(free, start, 0.0)
    ll, score, info = _score_info(b, theta, reml)
    done = np.zeros(n, dtype=bool)
    failed = np.zeros(n, dtype=bool)
    for _ in range(MAXITER):
        act = np.flatnonzero(~done)
        if not len(act):
            break
        sub = _take(b, act)
        th, sc, inf = theta[act], score[act], info[act]
        fr = free[act] & ~((th <= 0) & (sc <= 0))  # components off their bound
        both = fr[:, :, None] & fr[:, None, :]
        held = np.where(fr, 0.0, 1.0)[:, :, None] * np.eye(2)
        # the observed information on the free components where it is positive definite
        observed, expected = (np.where(both, inf[:, j], 0.0) + held for j in (0, 1))
        det = observed[:, 0, 0] * observed[:, 1, 1] - observed[:, 0, 1] ** 2
        use_observed = (observed[:, 0, 0] > 0) & (observed[:, 1, 1] > 0) & (det > 0)
        reduced = np.where(use_observed[:, None, None], observed, expected)
        with np.errstate(invalid="ignore", divide="ignore"):
            newton = np.linalg.solve(reduced, np.where(fr, sc, 0.0)[..., None])[..., 0]
            diag = np.diagonal(reduced, axis1=1, axis2=2)
            ascent = np.where(fr, sc / diag, 0.0)
        full = np.maximum(th + newton, 0.0)
        scale = np.maximum(th.max(axis=1), b.v_min[act])
        converged = np.abs(full - th).max(axis=1) <= TOL * scale
        new, new_ll, new_sc, new_inf, stuck = _line_search(sub, th, ll[act], newton, ascent, reml)
        theta[act], ll[act], score[act], info[act] = new, new_ll, new_sc, new_inf
        done[act[converged | stuck]] = True
        failed[act[stuck & ~converged]] = True
    return theta, ll, done & ~failed


def _line_search(b: Blocks, th, ll, newton, ascent, reml: bool):
    """The first of the projected steps θ + t·d, t = 1, ½, ¼, … along the Newton
    direction, then along the scaled score, that does not lower the likelihood; θ itself
    where none does, flagged ``stuck`` (every group in lockstep)."""
    new, best_ll = th.copy(), ll.copy()
    best_sc, best_inf = np.empty((len(ll), 2)), np.empty((len(ll), 2, 2, 2))
    todo = np.arange(len(ll))
    for direction in (newton, ascent):
        t = 1.0
        for _halving in range(60):
            if not len(todo):
                break
            cand = np.maximum(th[todo] + t * direction[todo], 0.0)
            c_ll, c_sc, c_inf = _score_info(_take(b, todo), cand, reml)
            ok = c_ll >= ll[todo] - 1e-13 * np.abs(ll[todo])
            hit = todo[ok]
            new[hit], best_ll[hit], best_sc[hit], best_inf[hit] = (
                cand[ok],
                c_ll[ok],
                c_sc[ok],
                c_inf[ok],
            )
            todo = todo[~ok]
            t /= 2
    stuck = np.zeros(len(ll), dtype=bool)
    if len(todo):  # no step keeps the likelihood: stay
        _, best_sc[todo], best_inf[todo] = _score_info(_take(b, todo), th[todo], reml)
        stuck[todo] = True
    return new, best_ll, best_sc, best_inf, stuck


def _loglik(b: Blocks, theta: np.ndarray, reml: bool) -> np.ndarray:
    """The (RE)ML log-likelihood at θ (the value of :func:`_score_info`), per group."""
    mat = b.marginal(theta)
    g = _gls(b, np.linalg.inv(mat))
    ll = -0.5 * (np.linalg.slogdet(mat)[1].sum(axis=1) + np.einsum("gts,gts->g", g["r"], g["u"]))
    return ll - 0.5 * np.log(g["sxx"]) if reml else ll


def _grid_starts(b: Blocks, reml: bool, scale: np.ndarray) -> list[np.ndarray]:
    """The best point of a coarse grid, σ² ∈ {0} ∪ scale·4^{-6..1} on each axis, on each
    of the boundaries σ²_metric = 0 and σ²_task = 0 and inside: a start near each
    basin of the likelihood, which can have more than one local maximum."""
    values = np.concatenate([[0.0], 4.0 ** np.arange(-6, 2)])
    pairs = np.array([(a, c) for a in values for c in values])
    ll = np.stack([_loglik(b, scale[:, None] * pair, reml) for pair in pairs], axis=1)
    ll = np.where(np.isfinite(ll), ll, -np.inf)
    out = []
    for face in (
        (pairs[:, 0] > 0) & (pairs[:, 1] == 0),
        (pairs[:, 0] == 0) & (pairs[:, 1] > 0),
        (pairs[:, 0] > 0) & (pairs[:, 1] > 0),
    ):
        pick = np.flatnonzero(face)[np.argmax(ll[:, face], axis=1)]
        out.append(scale[:, None] * pairs[pick])
    return out


def _estimate(b: Blocks, method: str, identified: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(σ²_task, σ²_metric) for every group, and which did not converge.

    The maximum over σ² ≥ 0 lies inside or on one of the boundaries, and the likelihood
    can have more than one local maximum, so it is maximized with both components at 0,
    each alone with the other at 0 (from metafor's start and from the best point of a
    coarse grid on that boundary), and both free (from metafor's start, the best inner
    grid point and each one-component maximum); the best converged candidate is kept.
    ``identified`` False (every task has one metric) leaves σ²_metric at 0.
    """
    n = len(b.k)
    if method == "EE":
        return np.zeros((n, 2)), np.zeros(n, dtype=bool)
    reml = method == "REML"
    y = np.where(b.m, b.y, np.nan)
    diag = np.where(b.m, np.diagonal(b.v, axis1=2, axis2=3), np.nan)
    with np.errstate(invalid="ignore"):
        total = np.nanvar(y, axis=(1, 2), ddof=1)
        spread = total - np.nanmean(diag, axis=(1, 2))
    start = np.repeat(np.maximum(spread, 0.01 * b.v_min)[:, None] / 2, 2, axis=1)
    grid = _grid_starts(b, reml, np.maximum(total, b.v_min))
    best = np.zeros((n, 2))
    best_ll = _loglik(b, best, reml)  # both at 0
    searched = np.zeros(n, dtype=bool)
    inner = [start, grid[2]]  # starts of the search with both free
    for face, free in enumerate(((True, False), (False, True), (True, True))):
        rows = np.flatnonzero(identified | (not free[1]))
        if not len(rows):
            continue
        free_mask = np.broadcast_to(np.array(free), (len(rows), 2))
        for first in inner if face == 2 else [start, grid[face]]:
            theta, ll, ok = _newton(_take(b, rows), first[rows], free_mask, reml)
            better = ok & (ll > best_ll[rows])
            best[rows[better]], best_ll[rows[better]] = theta[better], ll[better]
            searched[rows] |= ok
            if face < 2:  # both free again, from this one-component maximum
                again = start.copy()
                again[rows] = np.where(ok[:, None], theta, start[rows])
                inner.append(again)
    return best, ~searched


def _take(b: Blocks, rows: np.ndarray) -> Blocks:
    out = object.__new__(Blocks)
    for name in ("y", "v", "m", "x", "ones", "eye", "k", "n_task", "v_min"):
        setattr(out, name, getattr(b, name)[rows])
    return out


def _layout(grp: Grouped, valid: np.ndarray, cov: pd.DataFrame | None):
    """The effects as (group, task, slot) blocks, V filled from ``variance`` and ``cov``."""
    df = grp.table
    cluster_col = grp.over[0]
    rows = np.flatnonzero(valid)
    code = grp.code[rows]
    cluster = pd.factorize(pd.MultiIndex.from_arrays([code, df[cluster_col].to_numpy()[rows]]))[0]
    # the task's position within its group, and the effect's slot within its task
    cluster_frame = pd.DataFrame({"g": code, "c": cluster}).drop_duplicates("c")
    cluster_rank = cluster_frame.groupby("g").cumcount()
    rank = np.empty(cluster.max() + 1 if len(cluster) else 0, dtype=np.intp)
    rank[cluster_frame["c"].to_numpy()] = cluster_rank.to_numpy()
    t_of = rank[cluster]
    s_of = pd.Series(cluster).groupby(cluster).cumcount().to_numpy()
    n_groups = grp.n_groups
    width_t = int(t_of.max()) + 1 if len(rows) else 1
    width_s = int(s_of.max()) + 1 if len(rows) else 1
    y = np.zeros((n_groups, width_t, width_s))
    m = np.zeros((n_groups, width_t, width_s), dtype=bool)
    v = np.zeros((n_groups, width_t, width_s, width_s))
    y[code, t_of, s_of] = df["effect"].to_numpy(float)[rows]
    m[code, t_of, s_of] = True
    v[code, t_of, s_of, s_of] = df["variance"].to_numpy(float)[rows]
    missing_pairs = None
    if cov is not None:
        missing_pairs = _fill_cov(grp, rows, code, t_of, s_of, cov, v)
    empty = ~m
    v = v + np.eye(width_s) * empty[..., None, :]  # inert slots: 1 on the diagonal
    return Blocks(y, v, m), missing_pairs


def _fill_cov(grp, rows, code, t_of, s_of, cov, v) -> pd.DataFrame | None:
    """Off-diagonal entries of V from the cov table, in place; the pairs it lacks."""
    df = grp.table
    cluster_col, within_col = grp.over
    other = f"{within_col}_b"
    needed = [cluster_col, within_col, other, "cov"]
    absent = [c for c in needed if c not in cov.columns]
    if absent:
        raise SchemaError(
            f"The `cov` table lacks the column(s) {absent}; it needs the group keys, "
            f"{needed[:-1]} and `cov`, as metaeval.effect_covariance() returns it."
        )
    keys = [c for c in grp.keys if c in cov.columns] + [cluster_col]
    position = pd.DataFrame(
        {
            **{c: df[c].to_numpy()[rows] for c in keys + [within_col]},
            "_g": code,
            "_t": t_of,
            "_s": s_of,
            "_variance": df["variance"].to_numpy(float)[rows],
        }
    )
    right = position.rename(columns={within_col: other, "_s": "_s2", "_variance": "_v2"})
    joined = (
        cov[keys + [within_col, other, "cov"]]
        .merge(position, on=keys + [within_col], how="inner")
        .merge(right[keys + [other, "_s2", "_v2"]], on=keys + [other], how="inner")
    )
    diag = joined[within_col] == joined[other]
    bad = diag & ~np.isclose(joined["cov"], joined["_variance"], rtol=1e-8, atol=0)
    if bad.any():
        raise SchemaError(
            f"The `cov` table does not match the effects: {int(bad.sum())} diagonal "
            f"entries differ from the effects' variance, e.g.\n"
            f"{joined.loc[bad, keys + [within_col, 'cov', '_variance']].head(3)}\n"
            "Compute both from the same scores and options (effects() and "
            "effect_covariance() with the same control, treatment and effect)."
        )
    off = joined.loc[~diag]
    v[off["_g"], off["_t"], off["_s"], off["_s2"]] = off["cov"].to_numpy(float)
    # pairs of metrics of one task that the table lacks
    need = position.groupby(["_g", "_t"]).size()
    need = need * (need - 1)
    found = off.groupby(["_g", "_t"]).size().reindex(need.index, fill_value=0)
    short = need.index[found.to_numpy() < need.to_numpy()]
    if not len(short):
        return None
    return position.set_index(["_g", "_t"]).loc[short, keys].drop_duplicates()


def fit_multilevel(
    effects: pd.DataFrame,
    *,
    over: Sequence[str],
    groups: str | Sequence[str] | None,
    cov: pd.DataFrame | None,
    method: str,
    test: str,
    alpha: float,
    robust: str | None,
) -> pd.DataFrame:
    """The multilevel fit of every group (see the module docstring); :func:`pool`'s
    ``model="multilevel"``."""
    refuse_shared(effects, "pool(model='multilevel')")

    over = list(over)
    if len(over) != 2:
        raise SchemaError(
            "model='multilevel' pools over two columns, the cluster and what tells the "
            f"effects of a cluster apart: over=('task', 'metric'), not {over}."
        )
    grp = group(effects, over, groups, None, warn_dependence=False)
    df = grp.table
    valid = valid_rows(df)
    if not valid.all():
        warn_groups(
            "{n} effect(s) with NaN effect or variance were left out of pooling",
            df.loc[~valid, grp.keys + grp.over],
            DegenerateWarning,
        )
    if cov is None:
        warn(
            "model='multilevel' without `cov`: the effects of one task are taken to have "
            "independent sampling errors, which they do not when they are measured on the "
            "same queries. Pass cov=metaeval.effect_covariance(scores, ...) (the same "
            "control, treatment and effect as the effects).",
            DependenceWarning,
        )
    elif not isinstance(cov, pd.DataFrame):
        raise SchemaError(f"`cov` must be a DataFrame, not {type(cov).__name__}.")
    blocks, missing = _layout(grp, valid, cov)
    if missing is not None and len(missing):
        warn_groups(
            "The `cov` table lacks pairs of effects of {n} task(s); their covariance is taken as 0",
            missing.reset_index(drop=True),
            DependenceWarning,
        )
    n = grp.n_groups
    identified = (blocks.m.sum(axis=2) > 1).any(axis=1)
    # NaN covariances (effect_covariance() of metrics sharing fewer than 2 queries): the
    # group's results are NaN; its blocks are made inert so that nothing else meets a NaN
    nan_task = ~np.isfinite(blocks.v).all(axis=(2, 3))
    nan_cov = nan_task.any(axis=1)
    blocks.v[nan_task] = np.eye(blocks.v.shape[-1])
    # positive definite relative to the block's own entries (its padding of 1 would make
    # the test absolute: variances of order 1e-12 failed it): the padded slots get the
    # block's largest entry on the diagonal for the check
    held = blocks.m[..., :, None] & blocks.m[..., None, :]
    size = np.where(held, np.abs(blocks.v), 0.0).max(axis=(2, 3))
    padded = np.where(held, blocks.v, 0.0) + np.eye(blocks.v.shape[-1]) * (
        ~blocks.m[..., None, :] * np.where(size > 0, size, 1.0)[..., None, None]
    )
    eig_min = np.linalg.eigvalsh(padded)[..., 0]
    not_pd = ((eig_min <= 1e-12 * size) & blocks.m.any(axis=2)).any(axis=1)
    not_pd &= ~nan_cov
    usable = ~not_pd & ~nan_cov & (blocks.n_task >= 2)
    theta = np.full((n, 2), np.nan)
    failed = np.zeros(n, dtype=bool)
    idx = np.flatnonzero(usable)
    if len(idx):
        sub = _take(blocks, idx)
        est, fail = _estimate(sub, method, identified[idx])
        theta[idx], failed[idx] = est, fail
    ok = usable & ~failed
    out, zero_s2 = _inference(blocks, theta, ok, test, alpha, robust, method)
    pooled = grp.key_frame.assign(model="multilevel", method=method, test=test, **out)
    add_display(pooled, ("effect", "ci_low", "ci_high"))
    _warn(pooled, grp.keys, not_pd, nan_cov, blocks.n_task, failed, identified, method)
    warn_each(((zero_s2, ZERO_S2_TEXT),), pooled[grp.keys], "multilevel group(s)")
    return pooled


def _inference(b: Blocks, theta, ok, test: str, alpha: float, robust: str | None, method: str):
    from scipy import stats as sps

    n = len(b.k)
    k = b.k.astype(float)
    n_task = b.n_task.astype(float)
    nan = np.full(n, np.nan)
    cols: dict[str, Any] = {"k": b.k.astype(np.int64), "k_task": b.n_task.astype(np.int64)}
    effect, se, stat, df, p, low, high = (nan.copy() for _ in range(7))
    qe = nan.copy()
    zero_s2 = np.zeros(n, dtype=bool)
    rob = {name: nan.copy() for name in ROBUST_COLUMNS}
    idx = np.flatnonzero(ok)
    if len(idx):
        sub = _take(b, idx)
        th = theta[idx]
        minv = np.linalg.inv(sub.marginal(th))
        g = _gls(sub, minv)
        with np.errstate(invalid="ignore", divide="ignore"):
            var = 1 / g["sxx"]
            kk = k[idx]
            if test in KH_TESTS:
                rss = np.einsum("gts,gts->g", g["r"], g["u"])
                s2w = np.where(rss <= np.finfo(float).eps, 0.0, rss / (kk - 1))
                s2w = np.maximum(s2w, 1.0) if test == "adhoc" else s2w
                var = np.where(s2w == 0, np.nan, var * s2w)  # se 0 would claim certainty
                zero_s2[idx] = s2w == 0
            if test in T_TESTS:  # "t" (metafor's rma.mv test="t") and the KH tests
                dfs = kk - 1
                crit = sps.t.isf(alpha / 2, dfs)
            else:
                dfs = np.full(len(idx), np.nan)
                crit = np.full(len(idx), sps.norm.isf(alpha / 2))
            s = np.sqrt(var)
            z = g["mu"] / s
            pv = 2 * sps.t.sf(np.abs(z), dfs) if test in T_TESTS else 2 * sps.norm.sf(np.abs(z))
            effect[idx], se[idx], stat[idx], df[idx], p[idx] = g["mu"], s, z, dfs, pv
            low[idx], high[idx] = g["mu"] - crit * s, g["mu"] + crit * s
            vinv = np.linalg.inv(sub.v)
            g0 = _gls(sub, vinv)
            qe[idx] = np.einsum("gts,gts->g", g0["r"], g0["u"])
            if robust:
                # clusters = tasks, W = M⁻¹, Θ = M; the bread 1/(1'M⁻¹1) whatever `test`
                var_r, df_r = sandwich(
                    robust,
                    sub.x[..., None],
                    g["r"],
                    minv,
                    sub.marginal(th),
                    (1 / g["sxx"])[:, None, None],
                    n_task[idx],
                    np.ones(len(idx)),
                )
                se_r = np.sqrt(var_r[:, 0, 0])
                df_r = df_r[:, 0]
                crit_r = sps.t.isf(alpha / 2, df_r)
                rob["robust_se"][idx] = se_r
                rob["robust_df"][idx] = df_r
                rob["robust_statistic"][idx] = g["mu"] / se_r
                rob["robust_p_value"][idx] = 2 * sps.t.sf(np.abs(g["mu"] / se_r), df_r)
                rob["robust_ci_low"][idx] = g["mu"] - crit_r * se_r
                rob["robust_ci_high"][idx] = g["mu"] + crit_r * se_r
    cols.update(
        effect=effect,
        ci_low=low,
        ci_high=high,
        p_value=p,
        se=se,
        statistic=stat,
        df=df,
        sigma2_task=np.where(ok, theta[:, 0], np.nan),
        sigma2_metric=np.where(ok, theta[:, 1], np.nan),
        qe=qe,
        qe_df=k - 1,
        qe_p_value=sps.chi2.sf(qe, k - 1),
    )
    if robust:
        cols.update(rob)
    return cols, zero_s2


def _warn(pooled, keys, not_pd, nan_cov, n_task, failed, identified, method) -> None:
    messages = (
        (
            not_pd,
            "have a sampling covariance block V that is not positive definite: all results are NaN",
        ),
        (
            nan_cov,
            "have a NaN sampling covariance in `cov` (effect_covariance() gives NaN "
            "for two metrics of a task that share fewer than 2 queries): all results "
            "are NaN; pool the metrics separately or leave out the metric that lacks "
            "the task's queries",
        ),
        (
            (n_task < 2) & ~not_pd & ~nan_cov,
            "have fewer than two tasks, too few to estimate the "
            "task-level variance: all results are NaN",
        ),
        (failed, f"did not converge ({method}): all results are NaN"),
        (
            ~identified & (n_task >= 2) & (method != "EE"),
            "have one metric per task, where sigma2_task and sigma2_metric cannot be told "
            "apart: sigma2_metric is set to 0 (the model of pool())",
        ),
    )
    warn_each(messages, pooled[keys], "multilevel group(s)")


def check_cov_option(model: str, cov: Any, robust: Any) -> str | None:
    """``cov`` and ``robust`` belong to the multilevel model; ``robust`` checked, as
    "CR1", "CR2" or None (off)."""
    method = check_robust(robust)
    if model != "multilevel" and (cov is not None or method is not None):
        named = (("cov", cov is not None), ("robust", method is not None))
        given = quote_list([n for n, v in named if v])
        raise SchemaError(
            f"{given} apply to model='multilevel' only; pool(over=('task', 'metric'), "
            "model='multilevel', cov=..., robust=True)."
        )
    return method

"""Meta-regression: effects explained by task-level moderators, every group at once.

:func:`metareg` fits metafor's mixed-effects model ``rma(yi, vi, mods = ~ ...)``
(Viechtbauer 2010) to each group of an effects table. With k effects y, the
sampling variances v, a design X (an intercept and the moderators; p columns) and
τ² the residual between-task variance, W = diag(1/(v_i + τ²)) and
P = W − W X (X'W X)⁻¹ X'W:

- β̂ = (X'W X)⁻¹ X'W y with covariance (X'W X)⁻¹; ``test="knha"`` multiplies it by
  s² = Σ w_i (y_i − x_i β̂)² / (k − p) and tests and intervals use t with k − p df
  (Knapp & Hartung 2003);
- τ² as metafor defines it for models with moderators: ``DL``
  (Q_E − (k − p)) / tr P₀ with P₀ the P of W = diag(1/v); ``HE``
  (RSS_OLS − tr(P_OLS V)) / (k − p); ``HS`` (Q_E − k) / Σ(1/v_i); ``ML`` the root of
  y'P²y = tr W and ``REML`` the root of y'P²y = tr P (metafor's Fisher scoring
  equations; solved as for :func:`metaeval.pool`, started from max(0, HE), truncated at
  0, with metafor's check of the likelihood at τ² = 0);
  ``SJ`` (Sidik & Jonkman 2005), ``EB`` (Morris 1983) and ``PM`` (Paule & Mandel
  1982), the last two the root of the generalized Q at its expectation k − p, with
  metafor 3.8's equations for models with moderators (the τ² estimators of
  :mod:`metaeval.pooling`; checked on 240 fits each against metafor);
- Q_M, the omnibus test of the moderators: β̂₂' Σ̂₂₂⁻¹ β̂₂ over the p − 1 coefficients
  besides the intercept, χ² with p − 1 df; under Knapp–Hartung Q_M/(p − 1) with an
  F(p − 1, k − p) distribution;
- Q_E = y'P₀y, the test of residual heterogeneity, χ² with k − p df;
- I² = 100 τ² / (ṽ + τ²), ṽ = (k − p) / tr P₀, and H² = τ²/ṽ + 1 (for ``EE``:
  I² = max(0, 100 (Q_E − (k − p)) / Q_E), H² = Q_E / (k − p));
- R² = max(0, 100 (τ²_RE − τ²) / τ²_RE), the share of the heterogeneity of the
  model without moderators (τ²_RE, same method) that the moderators account for
  (Raudenbush 2009), 0 when τ²_RE = 0; for ``EE`` the adjusted R² of the weighted
  least-squares regression (as metafor computes both).

Moderators are columns of the effects table (task-level columns of the scores
table are carried into it). A numeric column enters as it is; any other column
(strings, categoricals, booleans) is a factor in treatment coding: one indicator
per level but the first, the first level the reference (a categorical's own
order; otherwise the sorted levels, as R's ``factor()``). Terms are named like
statsmodels' formulas: ``domain[T.news]``. Each group is fitted with the levels
present in it, as metafor fits that group's data alone: an absent level's term is
NaN there, and where the reference level is absent the first level present is the
group's reference (its term NaN, the factor's other coefficients compared with it).

The groups are laid out as ``(groups, tasks, terms)`` batches (groups of similar
size together) and every step runs on all groups of a batch at once: batched
``(p, p)`` solves, batched QR decompositions of the weighted designs (Q_E and
tr P₀ as sums of squares, accurate when the variances differ by many orders of
magnitude), and the τ² estimators of :mod:`metaeval.pooling._tau2` — the ones
:func:`metaeval.pool` uses, on a batch with a design — in lockstep.

References
----------
Knapp, G., & Hartung, J. (2003). Improved tests for a random effects
meta-regression with a single covariate. *Statistics in Medicine*, 22(17),
2693–2710. doi:10.1002/sim.1482
Raudenbush, S. W. (2009). Analyzing effect sizes: Random-effects models. In H.
Cooper, L. V. Hedges, & J. C. Valentine (Eds.), *The Handbook of Research Synthesis
and Meta-Analysis* (2nd ed., pp. 295–315). Russell Sage Foundation. (no DOI)
Viechtbauer, W. (2010). Conducting meta-analyses in R with the metafor package.
*Journal of Statistical Software*, 36(3). doi:10.18637/jss.v036.i03
Borenstein, M., Hedges, L. V., Higgins, J. P. T., & Rothstein, H. R. (2009).
*Introduction to Meta-Analysis*, ch. 20. Wiley. doi:10.1002/9780470743386
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._options import (
    CI_METHODS,
    DEFAULT_CI,
    DEFAULT_POOL_METHOD,
    POOLED_COLUMNS,
    CIMethod,
    PoolMethod,
    RobustMethod,
    literal_signature,
    resolve_ci,
)
from ..engines import any_frame
from ..errors import (
    DegenerateWarning,
    MetaEvalWarning,
    OptionError,
    SchemaError,
    check_alpha,
    check_option,
    quote_list,
    warn,
    warn_groups,
)
from . import _tau2 as t2
from ._engine import (
    KH_TESTS,
    T_TESTS,
    batches,
    maxima_warnings,
    refuse_shared,
    solver_messages,
    warn_each,
)
from ._grouping import RESULT_COLUMNS, as_list, group, valid_rows
from ._robust import check_robust, sandwich
from .results import MetaRegResult

__all__ = ["metareg", "METAREG_METHODS", "COEF_COLUMNS", "FIT_COLUMNS", "design", "refit"]

#: The τ² estimators :func:`metareg` offers (``FE`` is an alias of ``EE``).
METAREG_METHODS = ("EE", "FE", "DL", "HE", "HS", "SJ", "ML", "REML", "EB", "PM")

#: The columns of the coefficient table besides the group keys.
COEF_COLUMNS = ("term", "estimate", "se", "statistic", "df", "p_value", "ci_low", "ci_high")

#: The columns of :attr:`MetaRegResult.fit` besides the group keys.
FIT_COLUMNS = (
    "method",
    "test",
    "k",
    "n_coef",
    "tau2",
    "tau",
    "i2",
    "h2",
    "r2",
    "qm",
    "qm_df",
    "qm_df2",
    "qm_p_value",
    "qe",
    "qe_df",
    "qe_p_value",
)

INTERCEPT = "intercept"

#: Result columns that cannot be moderators (``n``, ``mean_control`` and
#: ``mean_treatment`` describe a task and can).
_NOT_MODERATORS = (RESULT_COLUMNS | set(POOLED_COLUMNS)) - {"n", "mean_control", "mean_treatment"}


# ------------------------------------------------------------------ the design
@dataclass
class Design:
    """The moderators as model-matrix columns (the intercept first)."""

    terms: list[str]
    matrix: np.ndarray  # (rows, p), NaN where a moderator is missing
    scale: np.ndarray  # (p,) columns are divided by these while fitting
    numeric: dict[str, bool]  # moderator -> numeric?
    #: factor -> (the indices of its term columns, its levels, the reference first)
    factors: dict[str, tuple[np.ndarray, list[Any]]]


def _factor_levels(values: pd.Series) -> list[Any]:
    if isinstance(values.dtype, pd.CategoricalDtype):
        present = set(values.dropna().unique())
        return [c for c in values.cat.categories if c in present]
    return sorted(values.dropna().unique(), key=lambda x: (str(type(x)), x))


def design(table: pd.DataFrame, mods: list[str]) -> Design:
    """Treatment-coded model matrix of ``mods`` (see the module docstring)."""
    terms, columns, numeric = [INTERCEPT], [np.ones(len(table))], {}
    factors: dict[str, tuple[np.ndarray, list[Any]]] = {}
    for mod in mods:
        values = table[mod]
        is_numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(
            values
        )
        numeric[mod] = is_numeric
        if is_numeric:
            x = values.to_numpy(np.float64, na_value=np.nan)
            if np.isinf(x).any():
                raise SchemaError(
                    f"The moderator {mod!r} has infinite values "
                    f"(rows {table.index[np.isinf(x)][:5].tolist()})."
                )
            terms.append(mod)
            columns.append(x)
            continue
        levels = _factor_levels(values)
        if len(levels) < 2:
            raise SchemaError(
                f"The moderator {mod!r} has {len(levels)} level(s) "
                f"({quote_list([str(v) for v in levels])}); a factor needs at least two."
            )
        missing = values.isna().to_numpy()
        factors[mod] = (np.arange(len(terms), len(terms) + len(levels) - 1), levels)
        for level in levels[1:]:
            terms.append(f"{mod}[T.{level}]")
            columns.append(np.where(missing, np.nan, (values == level).to_numpy(float)))
    matrix = np.column_stack(columns)
    with np.errstate(invalid="ignore"):
        scale = np.sqrt(np.nanmean(matrix**2, axis=0))
    scale = np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)
    return Design(terms, matrix, scale, numeric, factors)


# ------------------------------------------------------------------ the fit
def _fit_batch(b: t2.Batch, method: str, knha: bool, adhoc: bool = False) -> tuple[Any, ...]:
    """Per group: τ² and the fit statistics; per group the coefficients and their
    covariance (in the scaled units of the batch), per slot the weights; the flags; and
    (X'WX)⁻¹ and the residuals (the pieces of the robust covariance). ``knha``: the
    covariance scaled by Knapp–Hartung's s²; with ``adhoc`` too, by max(1, s²)."""
    tau2, failed, maxima = t2.estimate(b, method)
    fit_tau2 = np.where(failed, 0.0, tau2)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = b.weights(fit_tau2)
        inv, beta, r = b.lstsq(w)
        k, p = b.k.astype(float), b.p.astype(float)
        rss = np.einsum("gk,gk,gk->g", w, r, r)
        noise = (4 * b.k * np.finfo(float).eps * np.abs(b.y).max(axis=1)) ** 2 * w.sum(axis=1)
        s2w = np.where(rss <= noise, 0.0, rss / (k - p))
        # Knapp–Hartung with moderators that fit the effects exactly: s² = 0 leaves no
        # covariance (metafor gives se 0, t = ±Inf and Q_M NA): NaN, with a warning
        exact = (s2w == 0) if knha and not adhoc else np.zeros(len(s2w), dtype=bool)
        scale = np.maximum(s2w, 1.0) if adhoc else s2w if knha else np.ones_like(s2w)
        vcov = inv * scale[:, None, None]
        vcov = np.where(
            b.free[:, :, None] & b.free[:, None, :] & ~exact[:, None, None], vcov, np.nan
        )
        beta = np.where(b.free, beta, np.nan)
        _, trace_p0, qe = b.fixed_parts()
        qe = np.maximum(0.0, qe)
        vt = (k - p) / trace_p0
        if method == "EE":
            i2 = np.where(qe > 0, np.maximum(0.0, 100 * (qe - (k - p)) / qe), 0.0)
            h2 = qe / (k - p)
        else:
            i2 = 100 * tau2 / (vt + tau2)
            h2 = tau2 / vt + 1
        # Q_M over the free coefficients besides the intercept
        mod_free = b.free.copy()
        mod_free[:, 0] = False
        both = mod_free[:, :, None] & mod_free[:, None, :] & ~exact[:, None, None]
        sub = np.where(both, vcov, 0.0)
        sub = sub + np.where(both, 0.0, 1.0) * np.eye(sub.shape[1])
        beta_m = np.where(mod_free, beta, 0.0)
        qm = np.einsum("gp,gp->g", beta_m, np.linalg.solve(sub, beta_m[..., None])[..., 0])
        qm = np.where(exact, np.nan, qm)
        m = mod_free.sum(axis=1).astype(float)
    stats = {
        "tau2": tau2,
        "k": k,
        "p": p,
        "m": m,
        "qm": qm,
        "qe": qe,
        "i2": i2,
        "h2": h2,
        "s2w": s2w,
    }
    flags = {"failed": failed, "exact": exact}
    return stats, beta, vcov, w, flags, {"bread": inv, "resid": r, "maxima": maxima}


def refit(b: t2.Batch, method: str, test: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per model of ``b`` (a seam for :func:`metaeval.permutest`) fitted with ``test``
    ("z", "t", "knha" or "adhoc"): the coefficients' z (or t) statistics (NaN for a column
    that is not free), Q_M as :func:`metareg` reports it (divided by its df for the t
    tests) and whether the fit failed."""
    knha = test in KH_TESTS
    stats, beta, vcov, _, flags, _ = _fit_batch(b, method, knha, adhoc=test == "adhoc")
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = beta / np.sqrt(np.diagonal(vcov, axis1=1, axis2=2))
        qm = stats["qm"] / stats["m"] if test in T_TESTS else stats["qm"]
    return stat, qm, flags["failed"]


def _r2(b: t2.Batch, method: str, stats: dict[str, np.ndarray]) -> np.ndarray:
    """R² as metafor computes it (see the module docstring)."""
    k, p = stats["k"], stats["p"]
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "EE":
            # adjusted R² of the weighted least-squares regression with weights 1/v
            w = b.weights(np.zeros(len(b.k)))
            mean = (w * b.y).sum(axis=1) / w.sum(axis=1)
            total = np.einsum("gk,gk->g", w, ((b.y - mean[:, None]) * b.m) ** 2)
            adj = 1 - (stats["qe"] / total) * (k - 1) / (k - p)
            y = np.where(b.m, b.y, np.nan)
            constant = np.nanmax(y, axis=1) == np.nanmin(y, axis=1)
            return np.where(constant, 0.0, np.maximum(0.0, 100 * adj))
        tau2_re, failed, _ = t2.estimate(b.intercept(), method)  # without moderators
        tau2 = stats["tau2"]
        r2 = np.where(tau2_re == 0, 0.0, np.maximum(0.0, 100 * (tau2_re - tau2) / tau2_re))
        return np.where(failed, np.nan, r2)


# ------------------------------------------------------------------ public API
@any_frame
@literal_signature
def metareg(
    effects: pd.DataFrame,
    mods: str | Sequence[str],
    *,
    method: PoolMethod = DEFAULT_POOL_METHOD,
    test: CIMethod | None = DEFAULT_CI,
    alpha: float = 0.05,
    over: str = "task",
    groups: str | Sequence[str] | None = None,
    robust: bool | RobustMethod = False,
    cluster: str | None = None,
) -> MetaRegResult:
    """Meta-regression: how the effect depends on task-level moderators, per group.

    One mixed-effects model (metafor's ``rma(yi, vi, mods = ~ ...)``) per group of
    the effects table, all groups at once. Subgroups (``pool(by=...)``) are the
    special case of one factor with a τ² per subgroup; here τ² is shared and
    moderators may be numeric.

    Parameters
    ----------
    effects : pandas.DataFrame
        An effects table (from :func:`metaeval.effects`) with the moderator
        columns: task-level columns of the scores table are carried into it, or
        merge a table of task attributes (``effects.merge(tasks, on="task")``).
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    mods : str or list of str
        The moderator columns. Numeric columns enter as they are (transform them
        first, e.g. ``log_n = np.log(n_queries)``); other columns are factors in
        treatment coding with the first level as reference (a categorical's
        order, else sorted); in a group that lacks it, the first level present
        there.
    method : {"REML", "ML", "DL", "HE", "HS", "SJ", "EB", "PM", "EE", "FE"}, default "REML"
        The estimator of the residual τ², with metafor's definitions for models
        with moderators; ``EE`` (alias ``FE``) fixes τ² at 0.
    test : {"knha", "z", "t", "hksj", "adhoc"} or None, default None
        Knapp–Hartung (``hksj`` an alias): the coefficients' covariance scaled by
        the weighted residual mean square s², t tests with k − p df and Q_M as an
        F(p − 1, k − p) test; ``"adhoc"`` the same with s² floored at 1 (metafor's
        ``test="adhoc"``); ``"t"`` the same t and F tests with the model's covariance,
        not scaled (metafor's ``test="t"``); or normal tests and a χ² Q_M (``"z"``).
        None: ``"knha"`` for the random-effects methods, ``"z"`` for ``EE``.
    alpha : float, default 0.05
        Intervals have level 1 − alpha.
    over : str, default "task"
        The column the effects of one model differ in (one row per value).
    groups : str or list of str, optional
        Further columns that tell separate models apart, besides
        ``effect_type, metric, treatment, control``.
    robust : {False, True, "CR1", "CR2"}, default False
        Add cluster-robust inference for every coefficient (``robust_*`` columns).
        ``"CR1"`` (or True) is metafor's ``robust(fit, cluster, adjust=TRUE)``: the
        sandwich with the factor n/(n − p), t on n − p df (n clusters); ``"CR2"`` is
        clubSandwich's bias-reduced ``vcovCR(type="CR2")`` (working weights and target
        from the fitted model) with a Satterthwaite df per coefficient
        (``coef_test(test="Satterthwaite")``; Tipton 2015), the choice with few
        clusters. Both use (X'WX)⁻¹ as bread whatever ``test`` is (metafor's ``robust()``
        of a Knapp–Hartung fit multiplies by s² once more).
    cluster : str, optional
        With ``robust``: the column whose values are the clusters, e.g. the study of
        several effects (effects of a cluster may be correlated; the model's weights
        stay those of independent effects). None: the ``over`` column, each effect its
        own cluster.

    Returns
    -------
    MetaRegResult
        ``.table``, the coefficients: one row per (group, term), the groups in the
        order they first appear, the intercept first and then the terms in the
        order of ``mods`` (a factor's levels in order), RangeIndex. Columns: the
        group keys; ``term`` (``"intercept"``, the moderator, or ``mod[T.level]``);
        ``estimate`` (the coefficient on the analysis scale of the effects);
        ``se``; ``statistic`` (z or t); ``df`` (k − p under ``t`` and Knapp–Hartung, else
        NaN); ``p_value``; ``ci_low, ci_high``; with ``robust``, ``robust_se,
        robust_df, robust_statistic, robust_p_value, robust_ci_low,
        robust_ci_high`` (t tests and intervals with ``robust_df``). Its ``attrs``:
        ``method, test, alpha, mods, robust`` (``"CR1"``, ``"CR2"`` or False) and
        ``cluster``.

        ``.fit``: one row per group with the keys and ``method, test, k``
        (effects used), ``n_coef`` (p, the estimable coefficients), ``tau2,
        tau`` (residual heterogeneity), ``i2, h2``, ``r2`` (percent of the
        heterogeneity of the intercept-only model that the moderators account
        for), ``qm, qm_df, qm_df2, qm_p_value`` (the omnibus test of the
        moderators; ``qm_df2`` = k − p for the F test of ``t`` and Knapp–Hartung, else
        NaN), ``qe, qe_df, qe_p_value`` (the test of residual heterogeneity).
        ``.data``: the effects used, with each one's ``weight`` in the fit
        (percent) and ``fitted`` value. ``.vcov``: the coefficients'
        covariance, long (keys, ``term, term_b, cov``, and ``robust_cov`` with
        ``robust``, for tests of contrasts). ``.mods`` and
        ``.alpha``: the options the figure needs. ``.plot()`` draws the bubble
        plot (:func:`metaeval.plot.bubble`) of one group; ``.select(metric=...)``
        keeps some groups in every part. The tables of several results
        concatenate: ``pd.concat([a.table, b.table])``.

    Raises
    ------
    metaeval.SchemaError
        A moderator that is not a column of the table (or a key or result
        column), an infinite moderator value, a factor with a single level; a
        ``cluster`` that is not a column, or has missing values.
    metaeval.OptionError
        An unknown ``method``, ``test`` or ``robust``; ``cluster`` without ``robust``.

    Warns
    -----
    metaeval.DegenerateWarning
        Naming the groups: effects with a NaN effect, variance or moderator are
        left out; a group with k ≤ p effects, or with collinear moderators, is
        NaN; a factor level absent from a group leaves its coefficient NaN there
        (the others are fitted, as metafor drops redundant terms); a factor whose
        reference level is absent from a group has the first level present as its
        reference there (the warning names it; its term is NaN); a fit that did
        not converge is NaN; a REML/ML likelihood with more than one local maximum
        where metafor's rma() stops at a lower one, or where two maxima are close in
        likelihood and far apart in τ² (τ² is the highest maximum's, see
        :func:`metaeval.pool`); with ``test="knha"``, moderators that fit the effects
        exactly (s² = 0) leave the standard errors, tests, intervals and Q_M NaN
        (metafor gives se 0); with ``robust``, a group with no more clusters than
        coefficients has NaN robust results (metafor refuses it).

    Notes
    -----
    With W = diag(1/(v_i + τ̂²)) and the design X (p columns):
    β̂ = (X'WX)⁻¹X'Wy with covariance (X'WX)⁻¹, times s² = Σw_i(y_i − x_iβ̂)²/(k − p)
    under Knapp–Hartung. τ² as metafor defines it with moderators (``DL``:
    (Q_E − (k − p))/tr P₀; ``ML``, ``REML``: the roots of metafor's Fisher-scoring
    equations y'P²y = tr W and y'P²y = tr P, P = W − WX(X'WX)⁻¹X'W). Q_E = y'P₀y
    (P₀ with τ² = 0), Q_M = β̂₂'Σ̂₂₂⁻¹β̂₂ over the moderators' coefficients, I² =
    100τ²/(ṽ + τ²) with ṽ = (k − p)/tr P₀, R² = max(0, 100(τ²_RE − τ²)/τ²_RE). The
    guide's page "Beyond one pooled mean" has the model and a worked example. With a
    single factor and ``method="EE"`` the coefficients are the differences between
    the levels' inverse-variance means.

    Examples
    --------
    >>> import pandas as pd, metaeval
    >>> eff = pd.DataFrame({
    ...     "task": list("abcdefgh"),
    ...     "effect": [0.05, 0.12, 0.30, 0.21, 0.42, 0.38, 0.55, 0.49],
    ...     "variance": [0.004, 0.006, 0.005, 0.003, 0.008, 0.004, 0.006, 0.005],
    ...     "log_n": [3.0, 3.4, 4.1, 4.0, 5.2, 5.0, 6.1, 5.9]})
    >>> res = eff.meta.metareg("log_n")
    >>> res.table[["term", "estimate", "se", "p_value"]].round(4)
            term  estimate      se  p_value
    0  intercept   -0.3972  0.0456   0.0001
    1      log_n    0.1548  0.0099   0.0000
    >>> res.fit[["k", "tau2", "r2", "qm", "qm_p_value", "qe"]].round(4)
       k  tau2     r2        qm  qm_p_value      qe
    0  8   0.0  100.0  243.2396         0.0  1.0767

    metafor gives the same: ``rma(yi, vi, mods = ~ log_n, test = "knha")``. Here the
    size of a task explains all of the heterogeneity (R² = 100%, τ² = 0).

    If the tasks come in suites of two whose effects may be correlated, the CR2
    cluster-robust results by suite:

    >>> eff["suite"] = list("aabbccdd")
    >>> rob = eff.meta.metareg("log_n", robust="CR2", cluster="suite")
    >>> rob.table[["term", "robust_se", "robust_df", "robust_p_value"]].round(4)
            term  robust_se  robust_df  robust_p_value
    0  intercept     0.0486     1.5413          0.0298
    1      log_n     0.0101     1.6190          0.0096

    clubSandwich gives the same: ``coef_test(fit, vcov = "CR2", cluster = suite, test =
    "Satterthwaite")``. Four clusters leave fewer than two degrees of freedom: the
    robust tests are valid but weak.
    """
    opts_method, test, alpha = _checked(method, test, alpha)
    robust_method = check_robust(robust)
    refuse_shared(effects, "metareg()")
    mod_list = as_list(mods)
    grp = group(effects, over, groups, None)
    _check_mods(grp.table, mod_list, grp.keys + grp.over)
    cluster_col = _check_cluster(grp.table, cluster, robust_method, grp.over[0])
    des = design(grp.table, mod_list)
    valid = valid_rows(grp.table) & np.isfinite(des.matrix).all(axis=1)
    _warn_left_out(grp, des, valid)
    n_groups, n_terms = grp.n_groups, len(des.terms)
    stat_names = ("tau2", "k", "p", "m", "qm", "qe", "i2", "h2", "s2w", "r2")
    stats = {name: np.full(n_groups, np.nan) for name in stat_names}
    stats["k"] = np.bincount(grp.code[valid], minlength=n_groups).astype(float)
    beta = np.full((n_groups, n_terms), np.nan)
    vcov = np.full((n_groups, n_terms, n_terms), np.nan)
    weight = np.full(len(grp.table), np.nan)
    flag_names = ("failed", "too_few", "collinear", "exact")
    maxima = t2.Maxima.none(n_groups)
    flags = {name: np.zeros(n_groups, dtype=bool) for name in flag_names}
    absent = np.zeros((n_groups, n_terms), dtype=bool)
    new_refs: list[tuple[np.ndarray, str, np.ndarray]] = []
    y = grp.table["effect"].to_numpy(np.float64)
    v = grp.table["variance"].to_numpy(np.float64)
    x = np.where(np.isfinite(des.matrix), des.matrix, 0.0) / des.scale
    if robust_method is not None:
        clusters = _clusters(grp, valid, cluster_col)
        robust_vcov = np.full((n_groups, n_terms, n_terms), np.nan)
        robust_df = np.full((n_groups, n_terms), np.nan)
    for members, rows, local, slot, width in batches(grp.code, valid, n_groups):
        shape = (len(members), width)
        m = np.zeros(shape, dtype=bool)
        yy, vv = np.zeros(shape), np.zeros(shape)
        xx = np.zeros((*shape, n_terms))
        m[local, slot], yy[local, slot], vv[local, slot] = True, y[rows], v[rows]
        xx[local, slot] = x[rows]
        present = np.abs(xx).max(axis=1) > 0
        free, rerefs = _rereference(des, xx, m, present)
        xx = np.where(free[:, None, :], xx, 0.0)
        too_few = m.sum(axis=1) <= free.sum(axis=1)
        usable = ~too_few & _usable(xx, m, free)
        flags["too_few"][members] = too_few
        flags["collinear"][members] = ~usable & ~too_few
        absent[members] = ~present & usable[:, None]
        for mod, hit, level in rerefs:
            new_refs.append((members[hit & usable], mod, level[usable[hit]]))
        ok = np.flatnonzero(usable)
        if not len(ok):
            continue
        b = t2.Batch(yy[ok], vv[ok], m[ok], xx[ok], free[ok])
        got, coef, cov, w, got_flags, parts = _fit_batch(
            b, opts_method, test in KH_TESTS, adhoc=test == "adhoc"
        )
        got["r2"] = _r2(b, opts_method, got)
        for name, values in got.items():
            stats[name][members[ok]] = values
        for name, values in got_flags.items():
            flags[name][members[ok]] = values
        maxima.put(members[ok], parts["maxima"])
        beta[members[ok]] = coef / des.scale
        vcov[members[ok]] = cov / np.outer(des.scale, des.scale)
        in_ok = np.isin(local, ok)
        position = np.searchsorted(ok, local[in_ok])
        weight[rows[in_ok]] = 100 * w[position, slot[in_ok]] / w.sum(axis=1)[position]
        if robust_method is not None:
            rv, rdf = _robust_batch(
                robust_method,
                clusters,
                rows[in_ok],
                position,
                slot[in_ok],
                xx[ok],
                w,
                parts,
                b.p,
            )
            fr = free[ok]  # a term not estimated in a group: NaN, not 0
            rv = np.where(fr[:, :, None] & fr[:, None, :], rv, np.nan)
            robust_vcov[members[ok]] = rv / np.outer(des.scale, des.scale)
            robust_df[members[ok]] = np.where(fr, rdf, np.nan)
    bad = flags["failed"] | flags["collinear"] | flags["too_few"]
    for name in ("tau2", "qm", "qe", "i2", "h2", "r2", "s2w"):
        stats[name][bad] = np.nan
    beta[bad], vcov[bad] = np.nan, np.nan
    _warn(grp, des, flags, absent, opts_method)
    maxima_warnings(grp.key_frame, maxima, opts_method, ~bad, "meta-regression group(s)")
    _warn_new_references(grp, des, new_refs)
    coefs = _coef_table(grp, des, beta, vcov, stats, test, alpha)
    vcov_table = _vcov_table(grp, des, vcov)
    if robust_method is not None:
        few = _few_clusters(grp, clusters, stats["p"], stats["s2w"], bad)
        robust_vcov[bad | few], robust_df[bad | few] = np.nan, np.nan
        coefs = coefs.assign(**_robust_columns(beta, robust_vcov, robust_df, alpha))
        vcov_table["robust_cov"] = robust_vcov.ravel()
    fit_table = _fit_table(grp, stats, opts_method, test)
    data = grp.table.loc[valid, grp.keys + grp.over + mod_list + ["effect", "variance"]].copy()
    data["weight"] = weight[valid]
    # a term that is not estimable in a group (absent level, reference there) adds nothing
    fit_beta = np.where(np.isnan(beta) & ~bad[:, None], 0.0, beta)
    data["fitted"] = np.einsum("rp,rp->r", des.matrix[valid], fit_beta[grp.code[valid]])
    coefs.attrs.update(
        method=method,
        test=test,
        alpha=alpha,
        mods=mod_list,
        robust=robust_method or False,
        cluster=cluster_col if robust_method else None,
    )
    return MetaRegResult(
        coefs,
        fit=fit_table,
        data=data.reset_index(drop=True),
        vcov=vcov_table,
        mods=tuple(mod_list),
        alpha=alpha,
    )


def _checked(method: str, test: str | None, alpha: float) -> tuple[str, str, float]:
    check_option("method", method, METAREG_METHODS)
    resolved = resolve_ci(method, test)
    check_option("test", resolved, CI_METHODS)
    method = "EE" if method == "FE" else method
    test = "knha" if resolved == "hksj" else resolved
    if method == "EE" and test in KH_TESTS:
        warn(
            "The Knapp–Hartung method is not meant for the common-effect model "
            "(metafor warns the same); consider a random-effects method.",
            MetaEvalWarning,
        )
    return method, test, check_alpha(alpha)


def _check_cluster(table: pd.DataFrame, cluster: Any, robust: str | None, over: str) -> str:
    """The cluster column (``over`` for None), checked."""
    if cluster is None:
        return over
    if robust is None:
        raise OptionError(
            f"`cluster` ({cluster!r}) applies to cluster-robust inference only: pass "
            "robust='CR2' (or 'CR1'/True) with it, or leave cluster=None."
        )
    if not isinstance(cluster, str) or cluster not in table.columns:
        raise SchemaError(
            f"`cluster` must name a column of the effects table, but {cluster!r} was passed; "
            f"its columns are {quote_list([str(c) for c in table.columns])}."
        )
    missing = table[cluster].isna().to_numpy()
    if missing.any():
        raise SchemaError(
            f"The `cluster` column {cluster!r} has {int(missing.sum())} missing value(s) "
            f"(rows {table.index[missing][:5].tolist()}); give every effect its cluster."
        )
    return cluster


def _clusters(grp, valid: np.ndarray, column: str) -> dict[str, np.ndarray]:
    """Per table row: the cluster's rank within its group and the row's slot within its
    cluster (valid rows only); per group the number of clusters."""
    rows = np.flatnonzero(valid)
    code = grp.code[rows]
    cid = pd.factorize(pd.MultiIndex.from_arrays([code, grp.table[column].to_numpy()[rows]]))[0]
    first = pd.DataFrame({"g": code, "c": cid}).drop_duplicates("c")
    rank = np.empty(len(first), dtype=np.intp)
    rank[first["c"].to_numpy()] = first.groupby("g").cumcount().to_numpy()
    j_of = np.zeros(len(grp.table), dtype=np.intp)
    s_of = np.zeros(len(grp.table), dtype=np.intp)
    j_of[rows] = rank[cid]
    s_of[rows] = pd.Series(cid).groupby(cid).cumcount().to_numpy()
    n_cluster = np.bincount(first["g"].to_numpy(), minlength=grp.n_groups)
    return {"j": j_of, "s": s_of, "n": n_cluster}


def _robust_batch(kind, clusters, rows, position, slot, x, w, parts, n_coef):
    """The robust covariance and df of a batch's groups: their effects laid out by
    cluster, W = diag(w), Θ = W⁻¹ (see :mod:`metaeval.pooling._robust`)."""
    j, s = clusters["j"][rows], clusters["s"][rows]
    shape = (len(x), int(j.max()) + 1, int(s.max()) + 1)
    xc = np.zeros((*shape, x.shape[2]))
    ec, wc = np.zeros(shape), np.ones(shape)
    xc[position, j, s] = x[position, slot]
    ec[position, j, s] = parts["resid"][position, slot]
    wc[position, j, s] = w[position, slot]
    eye = np.eye(shape[2])
    n = np.zeros(len(x))
    np.maximum.at(n, position, j + 1)  # the clusters of each group
    with np.errstate(invalid="ignore", divide="ignore"):
        return sandwich(
            kind,
            xc,
            ec,
            wc[..., None] * eye,
            (1 / wc)[..., None] * eye,
            parts["bread"],
            n,
            n_coef.astype(float),
        )


def _few_clusters(grp, clusters, p, s2w, bad) -> np.ndarray:
    """Groups with no more clusters than coefficients, or fitted exactly by their
    moderators (residuals 0: a robust se of 0 would claim certainty): NaN robust
    results, a warning."""
    few = (clusters["n"] <= p) & ~bad & np.isfinite(p)
    exact = (s2w == 0) & ~bad & ~few
    messages = (
        (
            few,
            "have no more clusters than coefficients: their robust results are NaN "
            "(metafor's robust() refuses them); use fewer moderators or more clusters",
        ),
        (
            exact,
            "are fitted exactly by their moderators (residuals 0): their robust results are NaN",
        ),
    )
    warn_each(messages, grp.key_frame, "meta-regression group(s)")
    return few | exact


def _robust_columns(beta, vcov, df, alpha: float) -> dict[str, np.ndarray]:
    from scipy import stats as sps

    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(np.diagonal(vcov, axis1=1, axis2=2))
        stat = beta / se
        crit = sps.t.isf(alpha / 2, df)
        return {
            "robust_se": se.ravel(),
            "robust_df": df.ravel(),
            "robust_statistic": stat.ravel(),
            "robust_p_value": (2 * sps.t.sf(np.abs(stat), df)).ravel(),
            "robust_ci_low": (beta - crit * se).ravel(),
            "robust_ci_high": (beta + crit * se).ravel(),
        }


def _check_mods(table: pd.DataFrame, mods: list[str], taken: list[str]) -> None:
    if not mods:
        raise SchemaError(
            "`mods` is empty: name at least one moderator column (for the model without "
            "moderators use pool())."
        )
    if len(set(mods)) != len(mods):
        raise SchemaError(f"`mods` names a column twice: {mods}.")
    missing = [m for m in mods if m not in table.columns]
    if missing:
        raise SchemaError(
            f"Moderator(s) {missing} are not columns of the effects table; its columns are "
            f"{quote_list(list(table.columns))}. Task-level columns of the scores table "
            "(constant within each task) are carried into the effects table; or merge a table "
            "of task attributes: effects.merge(tasks, on='task')."
        )
    reserved = [m for m in mods if m in taken or m in _NOT_MODERATORS]
    if reserved:
        raise SchemaError(
            f"Column(s) {reserved} cannot be moderators: they are keys of the model "
            f"({taken}) or results of metaeval."
        )


def _rereference(
    des: Design, x: np.ndarray, m: np.ndarray, present: np.ndarray
) -> tuple[np.ndarray, list[tuple[str, np.ndarray, np.ndarray]]]:
    """The estimable columns of each group, with a factor's first present level as its
    reference where the reference level is absent (as metafor, which fits a group with
    the levels present in it).

    ``present`` marks the columns that are not 0 throughout a group. Where every effect
    of a group has a non-reference level of a factor, that factor's first present
    level's column is dropped (not free) and the others compare with it. Returns the
    free columns and, per factor with such groups, (factor, the groups' mask, their
    new reference level).
    """
    free = present.copy()
    rerefs = []
    for mod, (cols, levels) in des.factors.items():
        some_level = (x[:, :, cols] != 0).any(axis=2)  # a non-reference level
        lacking = (some_level | ~m).all(axis=1) & m.any(axis=1)
        if not lacking.any():
            continue
        first = np.argmax(present[:, cols], axis=1)
        hit = np.flatnonzero(lacking)
        free[hit, cols[first[hit]]] = False
        rerefs.append((mod, lacking, np.asarray(levels, dtype=object)[1 + first[hit]]))
    return free, rerefs


def _usable(x: np.ndarray, m: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Groups whose free design columns have full rank."""
    gram = np.einsum("gkp,gkq->gpq", x, x)
    gram = gram + np.where(free, 0.0, 1.0)[:, :, None] * np.eye(x.shape[2])
    s = np.linalg.svd(gram, compute_uv=False)
    return s[:, -1] > 1e-10 * s[:, 0]


def _coef_table(grp, des: Design, beta, vcov, stats, test: str, alpha: float) -> pd.DataFrame:
    from scipy import stats as sps

    n_groups, n_terms = beta.shape
    se = np.sqrt(np.diagonal(vcov, axis1=1, axis2=2))
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = beta / se
        if test in T_TESTS:
            df = np.repeat((stats["k"] - stats["p"])[:, None], n_terms, axis=1)
            crit = t2.per_value(lambda d: sps.t.isf(alpha / 2, d), df.ravel()).reshape(df.shape)
            p = 2 * sps.t.sf(np.abs(stat), df)
        else:
            df = np.full(beta.shape, np.nan)
            crit = sps.norm.isf(alpha / 2)
            p = 2 * sps.norm.sf(np.abs(stat))
    table = grp.key_frame.loc[np.repeat(np.arange(n_groups), n_terms)].reset_index(drop=True)
    columns = {
        "term": np.tile(des.terms, n_groups),
        "estimate": beta.ravel(),
        "se": se.ravel(),
        "statistic": stat.ravel(),
        "df": df.ravel(),
        "p_value": p.ravel(),
        "ci_low": (beta - crit * se).ravel(),
        "ci_high": (beta + crit * se).ravel(),
    }
    return table.assign(**columns)


def _fit_table(grp, stats, method: str, test: str) -> pd.DataFrame:
    from scipy import stats as sps

    k, p, m = stats["k"], stats["p"], stats["m"]
    with np.errstate(invalid="ignore", divide="ignore"):
        if test in T_TESTS:  # F(m, k − p), as metafor's test="t", "knha" and "adhoc"
            qm = stats["qm"] / m
            qm_df2 = k - p
            qm_p = sps.f.sf(qm, m, qm_df2)
        else:
            qm, qm_df2 = stats["qm"], np.full(len(k), np.nan)
            qm_p = sps.chi2.sf(qm, m)
        qe_p = sps.chi2.sf(stats["qe"], k - p)
        tau2 = stats["tau2"]
        columns = {
            "method": method,
            "test": test,
            "k": k.astype(np.int64),
            "n_coef": np.where(np.isfinite(p), p, 0).astype(np.int64),
            "tau2": tau2,
            "tau": np.sqrt(tau2),
            "i2": stats["i2"],
            "h2": stats["h2"],
            "r2": stats["r2"],
            "qm": qm,
            "qm_df": m,
            "qm_df2": qm_df2,
            "qm_p_value": qm_p,
            "qe": stats["qe"],
            "qe_df": k - p,
            "qe_p_value": qe_p,
        }
    return grp.key_frame.assign(**columns)


def _vcov_table(grp, des: Design, vcov: np.ndarray) -> pd.DataFrame:
    n_groups, n_terms = vcov.shape[:2]
    rows = np.repeat(np.arange(n_groups), n_terms * n_terms)
    table = grp.key_frame.loc[rows].reset_index(drop=True)
    return table.assign(
        term=np.tile(np.repeat(des.terms, n_terms), n_groups),
        term_b=np.tile(des.terms, n_groups * n_terms),
        cov=vcov.ravel(),
    )


def _warn_left_out(grp, des: Design, valid: np.ndarray) -> None:
    df = grp.table
    bad_effect = ~valid_rows(df)
    bad_mod = ~np.isfinite(des.matrix).all(axis=1) & ~bad_effect
    for mask, why in ((bad_effect, "NaN effect or variance"), (bad_mod, "a missing moderator")):
        if mask.any():
            warn_groups(
                f"{{n}} effect(s) with {why} were left out of the meta-regression",
                df.loc[mask, grp.keys + grp.over],
                DegenerateWarning,
            )


def _warn_new_references(grp, des: Design, new_refs) -> None:
    if not any(len(g) for g, _, _ in new_refs):
        return
    tables = [
        grp.key_frame.iloc[g].assign(moderator=mod, reference=[str(level) for level in levels])
        for g, mod, levels in new_refs
        if len(g)
    ]
    table = pd.concat(tables, ignore_index=True)
    warn_groups(
        "{n} factor(s) lack their reference level in a group: there the first level "
        "present is the reference (as metafor fits a group with the levels it has), the "
        "factor's coefficients compare with that level and its own term is NaN",
        table,
        DegenerateWarning,
    )


def _warn(grp, des: Design, flags, absent, method: str) -> None:
    keys = grp.key_frame
    messages = (
        (flags["collinear"], "have collinear moderators: all results are NaN"),
        (flags["too_few"], "have no more effects than coefficients (k <= p): all results are NaN"),
        *solver_messages(flags, method),
        (
            flags["exact"],
            "are fitted exactly by their moderators (s² = 0): their Knapp–Hartung standard "
            "errors, tests, intervals and Q_M are NaN (metafor gives se 0); use test='z' for "
            "the model-based ones",
        ),
    )
    warn_each(messages, keys, "meta-regression group(s)")
    if absent.any():
        g, t = np.nonzero(absent)
        table = keys.iloc[g].reset_index(drop=True).assign(term=np.asarray(des.terms)[t])
        warn_groups(
            "{n} term(s) are not estimable in their group (the level is absent there): "
            "their coefficients are NaN and the model is fitted without them",
            table,
            DegenerateWarning,
        )

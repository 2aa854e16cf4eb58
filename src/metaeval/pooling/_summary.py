"""The summary of every group: :func:`pool` and :func:`weights`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from .._options import (
    CI_METHODS,
    DEFAULT_CI,
    DEFAULT_POOL_METHOD,
    POOL_MODELS,
    Adjustment,
    CIMethod,
    PoolMethod,
    PoolModel,
    RobustMethod,
    Tau2CI,
    literal_signature,
    resolve_ci,
)
from ..engines import any_frame
from ..errors import OptionError, check_alpha, check_no_clash, check_option
from ._engine import POOL_PARAMS, check_tau2_ci, fit
from ._multilevel import MULTILEVEL_METHODS, check_cov_option, fit_multilevel

__all__ = ["pool", "weights"]


@any_frame
@literal_signature
def pool(
    effects: pd.DataFrame,
    *,
    method: PoolMethod = DEFAULT_POOL_METHOD,
    test: CIMethod | None = DEFAULT_CI,
    alpha: float = 0.05,
    over: str | Sequence[str] = "task",
    groups: str | Sequence[str] | None = None,
    by: str | Mapping[Any, Any] | None = None,
    adjust: Adjustment | None = None,
    model: PoolModel = "univariate",
    cov: pd.DataFrame | None = None,
    robust: bool | RobustMethod = False,
    tau2_ci: Tau2CI = "qprofile",
) -> pd.DataFrame:
    """Pool effects across tasks, one model per group, all groups at once.

    Parameters
    ----------
    effects : pandas.DataFrame
        An effects table (from :func:`metaeval.effects`) or any table with
        ``effect`` and ``variance`` on the same scale plus the ``over`` column.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    {params}
    adjust : {"holm", "bonferroni", "fdr_bh"}, optional
        Adjust the p-values for multiple comparisons within each family of
        groups that differ only in ``treatment`` (the treatments compared with
        one control on one metric, per subgroup); adds ``p_adjusted``. Values
        equal statsmodels' ``multipletests``. ``"maxt"`` raises an
        :class:`~metaeval.OptionError`: it needs the randomization test's
        resamples (:func:`metaeval.compare`), which pooled effects do not have.
    model : {"univariate", "multilevel"}, default "univariate"
        ``"multilevel"`` pools the effects of several metrics of each task at once
        (``over=("task", "metric")``) with metafor's three-level model
        ``rma.mv(yi, V, random = ~ 1 | task/metric)``: a variance of tasks
        (``sigma2_task``), a variance of metrics within a task
        (``sigma2_metric``) and the sampling covariance ``V`` of a task's effects.
        Methods ``REML``, ``ML`` and ``EE`` (both variances 0); ``test="t"`` is
        metafor's ``rma.mv(test="t")``: the model's variance, t on k − 1 df (k the
        effects); ``test="knha"`` scales the variance by Knapp–Hartung's factor
        s² = r'M⁻¹r/(k − 1) with the same t (metafor 3.8 refuses ``test="knha"``
        for ``rma.mv``; ≥ 4.0 has this formula as an undocumented, experimental
        option), ``"adhoc"`` by the factor floored at 1, ``"z"`` is normal (see the
        guide's "Beyond one pooled mean" for their coverage with few tasks);
        ``by`` and ``adjust`` do not apply.
    cov : pandas.DataFrame, optional
        For ``model="multilevel"``: the sampling covariances of the effects of one
        task, as :func:`metaeval.effect_covariance` returns them (same control,
        treatment and effect as ``effects``). None: independent sampling errors
        within a task, with a :class:`~metaeval.DependenceWarning`.
    robust : {False, True, "CR1", "CR2"}, default False
        For ``model="multilevel"``: add cluster-robust results by task, which stay
        valid when V or the random effects are misspecified (Pustejovsky & Tipton
        2022). ``"CR1"`` (or True) is metafor's ``robust(fit, cluster=task)``: the
        factor n/(n − 1), t on n − 1 df, n the number of tasks; ``"CR2"`` is
        clubSandwich's bias-reduced ``vcovCR(type="CR2")`` (target: the model's
        marginal covariance) with Satterthwaite df (``coef_test(test=
        "Satterthwaite")``; Tipton 2015), the choice with few tasks, where CR1's
        intervals are too narrow. Neither depends on ``test``.
    tau2_ci : {"qprofile", "profile"}, default "qprofile"
        The confidence interval of τ² (``tau2_low, tau2_high``, and ``i2_low,
        i2_high`` from it): the Q-profile interval (metafor's ``confint()``), or
        the profile-likelihood interval (``confint(type="PL")``), whose bounds solve
        −2(ll(τ²) − ll(τ̂²)) = χ²₁,₁₋α with the log-likelihood of the fit (restricted
        for ``REML``, β profiled out); the lower bound is 0 where the statistic at
        τ² = 0 stays below the quantile. ``"profile"`` needs ``method="REML"`` or
        ``"ML"`` (the other estimators do not maximize a likelihood) and the
        univariate model. Unlike metafor, the upper bound is not capped at
        max(100, 10 τ̂²).

    Returns
    -------
    pandas.DataFrame
        One row per group in the order the groups first appear, RangeIndex,
        columns, the answer first:

        - the group keys (and the subgroup column);
        - ``k`` (effects pooled), ``k_total`` (the ``over`` values — tasks — with a
          usable effect in any group of the same analysis: the groups that share
          every key but ``treatment`` and ``control``; k < k_total marks a
          system that lacks tasks other systems have), ``effect`` (the summary effect on the
          analysis scale), ``ci_low, ci_high`` (its confidence interval),
          ``p_value`` (``p_adjusted``) (the z or t test of effect = 0),
          ``pi_low, pi_high`` (the prediction interval for the true effect on
          a new task), ``prob_gain`` (the probability that it is positive),
          ``tau2`` (the between-task variance, 0 for ``EE``), ``i2`` (percent);
        - then ``method``, ``test`` (``"z"``, ``"t"``, ``"knha"`` or ``"adhoc"``),
          ``se``, ``statistic, df`` (``df`` NaN for z), ``tau`` and the Q-profile (or,
          with ``tau2_ci="profile"``, profile-likelihood) interval ``tau2_low,
          tau2_high`` (NaN for ``EE``), ``i2_low,
          i2_high``, ``h2`` (heterogeneity as defined by metafor for the
          method);
        - ``q, q_df, q_p_value``: Cochran's Q test of homogeneity;
        - with ``by``: ``q_between, q_between_df, q_between_p_value``, the test of
          subgroup differences (same on every subgroup row of a group);
        - for ``corr`` also ``r, r_ci_low, r_ci_high, r_pi_low, r_pi_high`` and
          for ``rom`` the same with prefix ``rel_change`` (reporting scale).

        ``attrs`` hold ``method``, ``test``, ``alpha``, ``adjust`` and ``tau2_ci`` (read by
        :mod:`metaeval.report` for table captions).

        With ``model="multilevel"``, one row per group (the keys but ``task`` and
        ``metric``) with ``model, method, test, k`` (effects), ``k_task``
        (tasks), ``effect, ci_low, ci_high, p_value, se, statistic, df``,
        ``sigma2_task, sigma2_metric``, ``qe, qe_df, qe_p_value`` (the test of
        heterogeneity at both levels) and, with ``robust``, ``robust_se,
        robust_df, robust_statistic, robust_p_value, robust_ci_low,
        robust_ci_high``; ``attrs`` also hold ``model`` and ``robust`` (``"CR1"``,
        ``"CR2"`` or False). The model, estimation and formulas
        are in the guide's "Beyond one pooled mean"; checked against metafor's
        ``rma.mv()`` and ``robust()`` on 120 random three-level data sets.

    Raises
    ------
    metaeval.SchemaError
        Missing columns, non-positive or infinite variances, a task appearing
        twice in one group, or a ``by`` mapping that misses tasks.
    metaeval.OptionError
        An unknown ``method``, ``test``, ``adjust``, ``robust`` or ``tau2_ci``, or
        ``tau2_ci="profile"`` with a method other than ``REML`` and ``ML`` or with
        ``model="multilevel"``.

    Warns
    -----
    metaeval.DegenerateWarning
        Naming the groups: effects with NaN effect or variance are left out;
        k = 1 keeps the task's effect and its normal interval with NaN τ² and
        heterogeneity; iterative estimators that do not converge give NaN; a
        REML/ML likelihood with more than one local maximum, where metafor's
        ``rma()`` stops at a lower one (its τ² in the warning's ``.groups``), or where
        two maxima lie within χ²₁,₀.₉₅/2 of each other in log-likelihood at distant τ²
        (τ² and the effect poorly determined);
        with ``test="knha"``, effects that all equal the pooled one (s² = 0) give NaN
        se, statistic, p-value and intervals (metafor gives se 0); with
        ``model="multilevel"``, a NaN in ``cov`` (two metrics sharing fewer than 2
        queries) makes the group's results NaN.
    metaeval.DependenceWarning
        When pooling over metrics.
    metaeval.PairingWarning
        Naming the groups that pool fewer tasks than the other groups of their
        analysis (k < k_total, a system without scores on a task), with the
        tasks they miss in ``.groups["missing"]``.

    Examples
    --------
    >>> import pandas as pd, metaeval
    >>> eff = pd.DataFrame({"task": ["a", "b", "c", "d"], "effect": [0.1, 0.3, 0.2, 0.6],
    ...                     "variance": [0.01, 0.02, 0.015, 0.01]})
    >>> eff.meta.pool(method="REML", test="knha")[["k", "effect", "ci_low", "ci_high", "tau2"]].round(4)
       k  effect  ci_low  ci_high    tau2
    0  4  0.3025 -0.0519   0.6568  0.0394

    The profile-likelihood interval of τ² beside the Q-profile one:

    >>> cols = ["tau2", "tau2_low", "tau2_high"]
    >>> eff.meta.pool()[cols].round(4)
         tau2  tau2_low  tau2_high
    0  0.0394    0.0047     0.6384
    >>> eff.meta.pool(tau2_ci="profile")[cols].round(4)
         tau2  tau2_low  tau2_high
    0  0.0394    0.0036     0.4244
    """
    check_option("model", model, POOL_MODELS)
    robust_method = check_cov_option(model, cov, robust)
    check_tau2_ci(tau2_ci, method)
    if model == "multilevel":
        if tau2_ci != "qprofile":
            raise OptionError(
                f"`tau2_ci={tau2_ci!r}` does not apply to model='multilevel' (it has no "
                "single τ²); leave tau2_ci at its default 'qprofile'."
            )
        return _multilevel(
            effects, method, test, alpha, over, groups, by, adjust, cov, robust_method
        )
    pooled = fit(
        effects,
        method=method,
        test=test,
        alpha=alpha,
        over=over,
        groups=groups,
        by=by,
        adjust=adjust,
        tau2_ci=tau2_ci,
        warn_coverage=True,
        warn_narrow=True,
    ).pooled
    pooled.attrs.update(
        method=method, test=resolve_ci(method, test), alpha=alpha, adjust=adjust, tau2_ci=tau2_ci
    )
    return pooled


def _multilevel(effects, method, test, alpha, over, groups, by, adjust, cov, robust):
    check_option("method", method, MULTILEVEL_METHODS + ("FE",))
    test = resolve_ci(method, test)
    check_option("test", test, CI_METHODS)
    if by is not None or adjust is not None:
        raise OptionError("`by` and `adjust` do not apply to model='multilevel'.")
    fitted = "EE" if method == "FE" else method
    pooled = fit_multilevel(
        effects,
        over=[over] if isinstance(over, str) else over,
        groups=groups,
        cov=cov,
        method=fitted,
        test="knha" if test == "hksj" else test,
        alpha=check_alpha(alpha),
        robust=robust,
    )
    pooled.attrs.update(
        method=method, test=test, alpha=alpha, model="multilevel", robust=robust or False
    )
    return pooled


@any_frame
@literal_signature
def weights(
    effects: pd.DataFrame,
    *,
    method: PoolMethod = DEFAULT_POOL_METHOD,
    test: CIMethod | None = DEFAULT_CI,
    alpha: float = 0.05,
    over: str | Sequence[str] = "task",
    groups: str | Sequence[str] | None = None,
    by: str | Mapping[Any, Any] | None = None,
) -> pd.DataFrame:
    """The effects table with each task's weight in its pooled estimate.

    Parameters
    ----------
    effects : pandas.DataFrame
        As for :func:`pool`.
    {params}

    Returns
    -------
    pandas.DataFrame
        ``effects`` (and the subgroup column) with ``weight``: 100·w*_i/Σw*_j in
        percent, w*_i = 1/(v_i + τ̂²) under the chosen model (metafor's
        ``weights()``); NaN for effects left out of pooling.

    Examples
    --------
    >>> import metaeval
    >>> eff = metaeval.load_example().meta.effects("logistic_regression",
    ...                                            treatment="gradient_boosting")
    >>> acc = eff.query("metric == 'accuracy'")
    >>> acc.meta.weights()[["task", "effect", "variance", "weight"]].round(4)
                task  effect  variance   weight
    0  breast_cancer -0.0850    0.0022  27.9551
    1         digits -0.0158    0.0006  44.5618
    2           iris -0.1181    0.0050  16.9861
    3           wine -0.1867    0.0094  10.4969

    A common-effect model gives the most precise task more of the weight:

    >>> acc.meta.weights(method="EE")["weight"].round(1).tolist()
    [18.8, 68.4, 8.3, 4.4]
    """
    if isinstance(effects, pd.DataFrame):
        check_no_clash(effects.columns, ["weight"], what="weights()")
    result = fit(
        effects,
        method=method,
        test=test,
        alpha=alpha,
        over=over,
        groups=groups,
        by=by,
        heterogeneity_ci=False,
    )
    return result.grouped.table.assign(weight=result.row_weight).reset_index(drop=True)


for _func in (pool, weights):  # the shared parameters, documented once
    _func.__doc__ = _func.__doc__.replace("{params}", POOL_PARAMS)  # type: ignore[union-attr]

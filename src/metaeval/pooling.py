"""Pooling effects across tasks: common-effect and random-effects models.

Every group (by default one per ``effect_type, metric, treatment, control``) is
fitted at once: the sums each estimator needs are grouped sums
(:func:`numpy.bincount`), never a Python loop over groups.

Definitions follow metafor's ``rma.uni()`` and ``predict()`` (Viechtbauer 2010),
with k effects y_i, sampling variances v_i and weights w_i = 1/v_i:

- common-effect estimate  ȳ_w = Σ w_i y_i / Σ w_i;
- Cochran's Q = Σ w_i (y_i − ȳ_w)², df = k − 1, Q-test p from χ²_{k−1};
- DerSimonian–Laird τ² = max(0, (Q − (k − 1)) / (Σw_i − Σw_i²/Σw_i));
- random-effects weights w*_i = 1/(v_i + τ²), estimate μ̂ = Σ w*_i y_i / Σ w*_i,
  SE = 1/√Σw*_i, z-test and intervals μ̂ ∓ z₁₋α/₂ SE;
- "typical" within-task variance ṽ = (k − 1)/(Σw_i − Σw_i²/Σw_i);
  I² = 100 τ²/(ṽ + τ²) and H² = τ²/ṽ + 1 for random-effects models;
  I² = max(0, 100 (Q − (k − 1))/Q) and H² = Q/(k − 1) for the common-effect model;
- prediction interval μ̂ ∓ z₁₋α/₂ √(SE² + τ²) (metafor's ``predict()``; equal to
  the confidence interval for the common-effect model).

References
----------
DerSimonian, R., & Laird, N. (1986). Meta-analysis in clinical trials.
*Controlled Clinical Trials*, 7(3), 177–188. doi:10.1016/0197-2456(86)90046-2
Higgins, J. P. T., & Thompson, S. G. (2002). Quantifying heterogeneity in a
meta-analysis. *Statistics in Medicine*, 21(11), 1539–1558. doi:10.1002/sim.1186
Viechtbauer, W. (2010). Conducting meta-analyses in R with the metafor package.
*Journal of Statistical Software*, 36(3). doi:10.18637/jss.v036.i03
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .effects import add_display, check_alpha
from .errors import DegenerateWarning, SchemaError, check_option, format_groups, quote_list, warn
from .schema import validate_effects

__all__ = ["METHODS", "GROUP_KEYS", "pool"]

METHODS = ("EE", "FE", "DL")
"""Estimators: ``EE`` (common/equal effect; ``FE`` is an alias) and ``DL``."""

GROUP_KEYS = ("effect_type", "metric", "treatment", "control")
"""Columns that identify separate analyses whenever a table has them."""

_RESULT_COLUMNS = {
    "n", "mean_treatment", "mean_control", "effect", "variance", "se", "z",
    "ci_low", "ci_high", "p_value", "weight",
}  # fmt: skip


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _group_keys(df: pd.DataFrame, over: list[str], groups: list[str]) -> list[str]:
    missing = [c for c in over + groups if c not in df.columns]
    if missing:
        raise SchemaError(
            f"Column(s) {missing} named in `over`/`groups` are not in the effects table; "
            f"its columns are {quote_list(list(df.columns))}."
        )
    clash = [c for c in groups if c in over or c in _RESULT_COLUMNS]
    if clash:
        raise SchemaError(f"Column(s) {clash} cannot be used in `groups`.")
    keys = [c for c in GROUP_KEYS if c in df.columns and c not in over]
    return keys + [c for c in groups if c not in keys]


def _fit(
    effects: pd.DataFrame,
    *,
    method: str,
    alpha: float,
    over: str | Sequence[str],
    groups: str | Sequence[str] | None,
) -> tuple[pd.DataFrame, np.ndarray]:
    """Pool every group; return the pooled table and each row's weight (percent)."""
    from scipy import stats as sps

    check_option("method", method, METHODS)
    method = "EE" if method == "FE" else method
    alpha = check_alpha(alpha)
    df = validate_effects(effects)
    over_cols, group_cols = _as_list(over), _as_list(groups)
    keys = _group_keys(df, over_cols, group_cols)

    dup = df.duplicated(keys + over_cols, keep=False)
    if dup.any():
        example = df.loc[dup, keys + over_cols].head(4)
        where = f"within a group of {keys}" if keys else "(there are no group columns)"
        raise SchemaError(
            f"{int(dup.sum())} rows repeat the same {over_cols} {where}, "
            f"so it is unclear what to pool, e.g.:\n{format_groups(example)}\n"
            "Name the columns that tell these analyses apart with `groups=`."
        )

    if keys:
        grouped = df.groupby(keys, sort=False, observed=True, dropna=False)
        g = grouped.ngroup().to_numpy()
        key_frame = grouped.size().reset_index()[keys]
    else:
        g = np.zeros(len(df), dtype=np.intp)
        key_frame = pd.DataFrame(index=range(1 if len(df) else 0))
    n_groups = len(key_frame)

    y = df["effect"].to_numpy(dtype=np.float64)
    v = df["variance"].to_numpy(dtype=np.float64)
    valid = np.isfinite(y) & np.isfinite(v)
    if not valid.all():
        omitted = df.loc[~valid, keys + over_cols]
        warn(
            f"{len(omitted)} effect(s) with NaN effect or variance were left out of pooling:\n"
            f"{format_groups(omitted)}",
            DegenerateWarning,
        )

    def gsum(weights: np.ndarray) -> np.ndarray:
        return np.bincount(g[valid], weights=weights[valid], minlength=n_groups)

    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.bincount(g[valid], minlength=n_groups)
        w = 1.0 / v
        sw, sw2 = gsum(w), gsum(w * w)
        fe = gsum(w * y) / sw
        q = gsum(w * (y - fe[g]) ** 2)
        q_df = k - 1.0
        trace_p = sw - sw2 / sw
        if method == "DL":
            tau2 = np.maximum(0.0, (q - q_df) / trace_p)
            tau2 = np.where(k > 1, tau2, np.nan)
        else:
            tau2 = np.zeros(n_groups)
        tau2_fit = np.where(np.isnan(tau2) & (k == 1), 0.0, tau2)
        w_star = 1.0 / (v + tau2_fit[g])
        sw_star = gsum(w_star)
        est = gsum(w_star * y) / sw_star
        se = np.sqrt(1.0 / sw_star)
        z = est / se
        crit = sps.norm.isf(alpha / 2)
        pi_half = crit * np.sqrt(se**2 + tau2)
        if method == "EE":
            i2 = np.where(q > 0, np.maximum(0.0, 100 * (q - q_df) / q), 0.0)
            h2 = q / q_df
        else:
            vt = q_df / trace_p
            i2 = 100 * tau2 / (vt + tau2)
            h2 = tau2 / vt + 1
        single = k < 2
        q, q_p = np.where(single, np.nan, q), np.where(single, np.nan, sps.chi2.sf(q, q_df))
        i2, h2 = np.where(single, np.nan, i2), np.where(single, np.nan, h2)
        weights = np.where(valid, 100 * w_star / sw_star[g], np.nan)

    pooled = key_frame.reset_index(drop=True)
    pooled = pooled.assign(
        method=method,
        k=k.astype(np.int64),
        effect=est,
        se=se,
        z=z,
        p_value=2 * sps.norm.sf(np.abs(z)),
        ci_low=est - crit * se,
        ci_high=est + crit * se,
        pi_low=est - pi_half,
        pi_high=est + pi_half,
        tau2=tau2,
        tau=np.sqrt(tau2),
        i2=i2,
        h2=h2,
        q=q,
        q_df=np.where(single, np.nan, q_df),
        q_pvalue=q_p,
    )
    add_display(pooled, ("effect", "ci_low", "ci_high", "pi_low", "pi_high"))
    _warn_small(pooled, keys, k, method)
    return pooled, weights


def _warn_small(pooled: pd.DataFrame, keys: list[str], k: np.ndarray, method: str) -> None:
    one = "q, q_pvalue, i2, h2" + (", tau2 and the prediction interval" if method != "EE" else "")
    for label, what, hit in (
        ("no usable effects (k = 0)", "all results", k == 0),
        ("one effect (k = 1)", one, k == 1),
    ):
        if hit.any():
            warn(
                f"{int(hit.sum())} pooled group(s) have {label}; {what} are NaN:\n"
                f"{format_groups(pooled.loc[hit, keys])}",
                DegenerateWarning,
            )


def pool(
    effects: pd.DataFrame,
    *,
    method: str = "DL",
    alpha: float = 0.05,
    over: str | Sequence[str] = "task",
    groups: str | Sequence[str] | None = None,
) -> pd.DataFrame:
    """Pool effects across tasks, one model per group, all groups at once.

    Parameters
    ----------
    effects : pandas.DataFrame
        An effects table (from :func:`metaeval.effects`) or any table with
        ``effect`` and ``variance`` on the same scale plus the ``over`` column.
    method : {"DL", "EE", "FE"}, default "DL"
        ``DL``: random effects with the DerSimonian–Laird τ². ``EE`` (alias
        ``FE``): common (equal) effect, τ² = 0.
    alpha : float, default 0.05
        Intervals have level 1 − alpha.
    over : str or list of str, default "task"
        The column(s) pooled away: each group has one row per value.
    groups : str or list of str, optional
        Further columns that tell separate analyses apart, besides the ones
        used whenever present: ``effect_type, metric, treatment, control``.

    Returns
    -------
    pandas.DataFrame
        One row per group in the order the groups first appear, RangeIndex,
        columns:

        - the group keys;
        - ``method`` (str), ``k`` (int): effects pooled;
        - ``effect, se, z, p_value, ci_low, ci_high``: the summary effect on the
          analysis scale, its standard error, z-test and confidence interval;
        - ``pi_low, pi_high``: the prediction interval for the true effect on a
          new task;
        - ``tau2, tau``: between-task variance and SD (0 for ``EE``);
        - ``i2`` (percent), ``h2``: heterogeneity as defined by metafor;
        - ``q, q_df, q_pvalue``: Cochran's Q test of homogeneity;
        - for ``corr`` also ``r, r_ci_low, r_ci_high, r_pi_low, r_pi_high`` and for
          ``rom`` the same with prefix ``rel_change`` (reporting scale).

    Raises
    ------
    metaeval.SchemaError
        Missing columns, non-positive or infinite variances, or a task appearing
        twice in one group.

    Warns
    -----
    metaeval.DegenerateWarning
        Effects with NaN effect or variance are left out (naming them); groups
        with k = 1 get NaN heterogeneity (and, for ``DL``, NaN τ² and
        prediction interval); groups with k = 0 are all NaN.

    Examples
    --------
    >>> import pandas as pd, metaeval
    >>> eff = pd.DataFrame({"task": ["a", "b", "c"], "effect": [0.1, 0.3, 0.2],
    ...                     "variance": [0.01, 0.02, 0.015]})
    >>> eff.meta.pool(method="DL")[["k", "effect", "tau2", "i2"]].round(4)
       k  effect  tau2   i2
    0  3  0.1769   0.0  0.0
    """
    pooled, _ = _fit(effects, method=method, alpha=alpha, over=over, groups=groups)
    return pooled

"""Leave-one-out and case-deletion diagnostics (metafor's ``leave1out()`` and ``influence()``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._options import DEFAULT_CI, DEFAULT_POOL_METHOD, CIMethod, PoolMethod, literal_signature
from ..engines import any_frame
from ..errors import DegenerateWarning, check_no_clash, warn, warn_groups
from ._engine import POOL_PARAMS, Fit, fit
from ._grouping import GROUP_KEYS, Grouped, group, pairs_within, valid_rows

__all__ = ["INFLUENCE_COLUMNS", "leave_one_out", "influence", "baujat"]


#: The columns :func:`influence` adds to the effects table.
INFLUENCE_COLUMNS = (
    "rstudent",
    "dffits",
    "cook_d",
    "cov_r",
    "tau2_del",
    "q_del",
    "hat",
    "weight",
    "dfbetas",
    "influential",
)


def _left_out_table(grp: Grouped) -> pd.DataFrame:
    """Every group once per member, without that member.

    The expanded table has a column ``_left_out`` with the row number (in
    ``grp.table``) of the effect left out; each (group, ``_left_out``) is a
    group of its own.
    """
    df = grp.table.reset_index(drop=True)
    left, member = pairs_within(grp.code, valid_rows(df))  # ordered by the effect left out
    keep = member != left
    return df.iloc[member[keep]].assign(_left_out=left[keep]).reset_index(drop=True)


def _fit_left_out(grp: Grouped, **options: Any) -> Fit:
    """The model of every group without each of its effects, one warning for k = 2."""
    if (np.bincount(grp.code, minlength=grp.n_groups) == 2).any():
        warn(
            "Groups with two effects leave one effect when one is left out: tau2 and "
            "heterogeneity are NaN there.",
            DegenerateWarning,
        )
    return fit(
        _left_out_table(grp),
        over=grp.over,
        groups=[c for c in grp.keys if c not in GROUP_KEYS] + ["_left_out"],
        heterogeneity_ci=False,
        quiet_single=True,
        warn_dependence=False,  # the full fit warned already; no filter (threads share them)
        warn_maxima=False,  # each left-out fit is at its highest maximum; metafor's may differ
        **options,
    )


@any_frame
@literal_signature
def leave_one_out(
    effects: pd.DataFrame,
    *,
    method: PoolMethod = DEFAULT_POOL_METHOD,
    test: CIMethod | None = DEFAULT_CI,
    alpha: float = 0.05,
    over: str | Sequence[str] = "task",
    groups: str | Sequence[str] | None = None,
    by: str | Mapping[Any, Any] | None = None,
) -> pd.DataFrame:
    """Pool every group again without each of its effects (metafor ``leave1out()``).

    Parameters
    ----------
    effects : pandas.DataFrame
        As for :func:`pool`.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    {params}

    Returns
    -------
    pandas.DataFrame
        One row per (group, left-out effect): the group keys, the ``over``
        column(s) naming the effect left out, ``k`` (effects pooled, one less
        than the group's) and ``effect, se, statistic, p_value, ci_low,
        ci_high, q, q_p_value, tau2, i2, h2`` of the model without it. Groups
        with a single effect have no rows.

    Examples
    --------
    >>> import metaeval
    >>> eff = metaeval.load_example().meta.effects("logistic_regression",
    ...                                            treatment="gradient_boosting")
    >>> loo = eff.query("metric == 'accuracy'").meta.leave_one_out()
    >>> loo[["task", "k", "effect", "ci_low", "ci_high", "i2"]].round(3)
                task  k  effect  ci_low  ci_high      i2
    0  breast_cancer  3  -0.078  -0.288    0.132  54.706
    1         digits  3  -0.108  -0.214   -0.002   0.000
    2           iris  3  -0.062  -0.239    0.115  51.282
    3           wine  3  -0.053  -0.180    0.074  39.234

    All four pooled give −0.070 [−0.174, 0.033]; without ``digits``, the most
    precise task, the effect is −0.108, its interval excludes 0 and I² is 0.
    """
    grp = group(effects, over, groups, by)
    pooled = _fit_left_out(grp, method=method, test=test, alpha=alpha).pooled
    left = pooled["_left_out"].to_numpy()
    out = pooled[grp.keys].copy()
    for col in grp.over:
        out[col] = grp.table.reset_index(drop=True)[col].to_numpy()[left]
    cols = [
        "k",
        "effect",
        "se",
        "statistic",
        "p_value",
        "ci_low",
        "ci_high",
        "q",
        "q_p_value",
        "tau2",
        "i2",
        "h2",
    ]
    return pd.concat([out, pooled[cols]], axis=1)


@any_frame
@literal_signature
def influence(
    effects: pd.DataFrame,
    *,
    method: PoolMethod = DEFAULT_POOL_METHOD,
    test: CIMethod | None = DEFAULT_CI,
    alpha: float = 0.05,
    over: str | Sequence[str] = "task",
    groups: str | Sequence[str] | None = None,
    by: str | Mapping[Any, Any] | None = None,
) -> pd.DataFrame:
    """Case-deletion diagnostics of every effect (metafor ``influence()``).

    Parameters
    ----------
    effects : pandas.DataFrame
        As for :func:`pool`.
    {params}

    Returns
    -------
    pandas.DataFrame
        The effects table (rows pooled) with, for each effect i, from the model
        without it (subscript (−i); τ̂²_(−i) re-estimated, s²_(−i) the
        Knapp–Hartung scale, 1 for z):

        - ``rstudent``: (y_i − μ̂_(−i)) / √(s²_(−i)(v_i + τ̂²_(−i)) + SE²_(−i)),
          the externally standardized residual;
        - ``dffits``: (μ̂ − μ̂_(−i)) / √(s²_(−i) h_i (τ̂²_(−i) + v_i));
        - ``cook_d``: (μ̂ − μ̂_(−i))² / SE²; ``cov_r``: SE²_(−i)/SE²;
        - ``tau2_del``, ``q_del``: τ̂² and Q without it;
        - ``hat``: h_i = w*_i/Σw*_j; ``weight``: 100·h_i;
        - ``dfbetas``: (μ̂ − μ̂_(−i)) / √(s²_(−i) / Σ_j 1/(v_j + τ̂²_(−i)));
        - ``influential``: metafor's rule, abs(dffits) > 3√(1/(k − 1)) or
          P(χ²₁ ≤ cook_d) > 0.5 or hat > 3/k or abs(dfbetas) > 1.

    Examples
    --------
    >>> import metaeval
    >>> eff = metaeval.load_example().meta.effects("logistic_regression",
    ...                                            treatment="gradient_boosting")
    >>> inf = eff.query("metric == 'accuracy'").meta.influence()
    >>> inf[["task", "effect", "rstudent", "cook_d", "hat", "influential"]].round(3)
                task  effect  rstudent  cook_d    hat  influential
    0  breast_cancer  -0.085    -0.081   0.048  0.280        False
    1         digits  -0.016     3.098   1.326  0.446         True
    2           iris  -0.118    -0.568   0.062  0.170        False
    3           wine  -0.187    -1.343   0.293  0.105        False
    """
    from scipy import stats as sps

    if isinstance(effects, pd.DataFrame):
        check_no_clash(effects.columns, INFLUENCE_COLUMNS, what="influence()")
    full = fit(
        effects,
        method=method,
        test=test,
        alpha=alpha,
        over=over,
        groups=groups,
        by=by,
        heterogeneity_ci=False,
    )
    grp = full.grouped
    loo = _fit_left_out(grp, method=method, test=test, alpha=alpha)
    table = grp.table.reset_index(drop=True)
    n = len(table)

    def per_row(values: np.ndarray) -> np.ndarray:
        out = np.full(n, np.nan)
        out[loo.pooled["_left_out"].to_numpy()] = values
        return out

    mu_del = per_row(loo.pooled["effect"].to_numpy())
    var_del = per_row(loo.pooled["se"].to_numpy() ** 2)
    tau2_del = per_row(loo.pooled["tau2"].to_numpy())
    q_del = per_row(loo.pooled["q"].to_numpy())
    s2w_del = per_row(loo.s2w)
    g = grp.code
    mu = full.pooled["effect"].to_numpy()[g]
    var_full = full.pooled["se"].to_numpy()[g] ** 2
    hat = full.row_weight / 100
    y, v = table["effect"].to_numpy(float), table["variance"].to_numpy(float)
    valid = valid_rows(table)
    # |y| of the largest effect of each group: y_i − μ̂_(−i) below rounding of it is 0
    scale = np.zeros(grp.n_groups)
    np.maximum.at(scale, g[valid], np.abs(y[valid]))
    with np.errstate(invalid="ignore", divide="ignore"):
        resid = y - mu_del
        resid = np.where(np.abs(resid) <= 1e-12 * scale[g], 0.0, resid)
        rstudent = resid / np.sqrt(v * s2w_del + var_del + tau2_del * s2w_del)
        diff = mu - mu_del
        dffits = diff / np.sqrt(s2w_del * hat * (tau2_del + v))
        # Σ_j 1/(v_j + τ̂²_(−i)) over all effects j of i's group (i included)
        sw_del_all = _sum_over_group(grp.code, valid, v, tau2_del)
        dfbetas = diff / np.sqrt(s2w_del / np.where(sw_del_all > 0, sw_del_all, np.nan))
        cook = diff**2 / var_full
        cov_r = var_del / var_full
        kk = full.pooled["k"].to_numpy()[g].astype(float)
        influential = (
            (np.abs(dffits) > 3 * np.sqrt(1 / (kk - 1)))
            | (sps.chi2.cdf(cook, 1) > 0.5)
            | (hat > 3 / kk)
            | (np.abs(dfbetas) > 1)
        )
    return table.assign(
        rstudent=rstudent,
        dffits=dffits,
        cook_d=cook,
        cov_r=cov_r,
        tau2_del=tau2_del,
        q_del=q_del,
        hat=hat,
        weight=full.row_weight,
        dfbetas=dfbetas,
        influential=influential & np.isfinite(rstudent),
    )


@any_frame
@literal_signature
def baujat(
    effects: pd.DataFrame,
    *,
    method: PoolMethod = DEFAULT_POOL_METHOD,
    test: CIMethod | None = DEFAULT_CI,
    over: str | Sequence[str] = "task",
    groups: str | Sequence[str] | None = None,
) -> pd.DataFrame:
    """Each task's contribution to Q and influence on the estimate (metafor ``baujat()``).

    The Baujat plot (Baujat et al. 2002; :func:`metaeval.plot.baujat_plot`) draws ``y``
    against ``x``: tasks at the top right both drive heterogeneity and move the
    pooled estimate.

    Parameters
    ----------
    effects : pandas.DataFrame
        As for :func:`pool`.
    method, test, over, groups
        As for :func:`pool`.

    Returns
    -------
    pandas.DataFrame
        One row per group and task (the effects pooled): the group keys, the
        ``over`` column(s) and

        - ``x``: (y_i − μ̂)²/(τ̂² + v_i), the task's contribution to the
          heterogeneity statistic, with the full fit's μ̂ and τ̂² (0 for ``EE``);
        - ``y``: (μ̂₍₋ᵢ₎ − μ̂)²/SE²₍₋ᵢ₎, its influence on the estimate, from the
          model refitted without it (τ̂² re-estimated; under ``test="knha"`` SE²₍₋ᵢ₎
          carries the refit's Knapp–Hartung scale, so ``y`` depends on ``test`` and
          ``x`` does not).

        Groups with a single effect have NaN in both (with a
        :class:`~metaeval.DegenerateWarning` naming them).

    Notes
    -----
    With ``EE``, Σx is Cochran's Q. Values as metafor's ``baujat()`` returns them.

    References
    ----------
    Baujat, B., Mahé, C., Pignon, J.-P., & Hill, C. (2002). A graphical method for
    exploring heterogeneity in meta-analyses: application to a meta-analysis of 65
    trials. *Statistics in Medicine*, 21(18), 2641–2652. doi:10.1002/sim.1221

    Examples
    --------
    >>> import metaeval
    >>> eff = metaeval.load_example().meta.effects("logistic_regression",
    ...                                            treatment="gradient_boosting")
    >>> bj = eff.query("metric == 'accuracy'").meta.baujat()
    >>> bj[["task", "x", "y"]].round(3)
                task      x      y
    0  breast_cancer  0.049  0.021
    1         digits  1.104  2.329
    2           iris  0.320  0.039
    3           wine  1.176  0.357

    ``digits`` moves the estimate most; ``wine`` and ``digits`` contribute most to Q.
    """
    full = fit(
        effects,
        method=method,
        test=test,
        alpha=0.05,
        over=over,
        groups=groups,
        heterogeneity_ci=False,
        quiet_single=True,
    )
    grp = full.grouped
    table = grp.table.reset_index(drop=True)
    valid = valid_rows(table)
    k = np.bincount(grp.code[valid], minlength=grp.n_groups)
    if (k == 1).any():
        warn_groups(
            "{n} group(s) have one effect: baujat() has no heterogeneity or refit there "
            "(x and y are NaN)",
            grp.key_frame.loc[k == 1],
            DegenerateWarning,
        )
    loo = _fit_left_out(grp, method=method, test=test, alpha=0.05)
    mu_del = np.full(len(table), np.nan)
    var_del = np.full(len(table), np.nan)
    left = loo.pooled["_left_out"].to_numpy()
    mu_del[left] = loo.pooled["effect"].to_numpy()
    var_del[left] = loo.pooled["se"].to_numpy() ** 2
    g = grp.code
    mu = full.pooled["effect"].to_numpy()[g]
    tau2 = full.pooled["tau2"].to_numpy()[g]
    y, v = table["effect"].to_numpy(float), table["variance"].to_numpy(float)
    single = k[g] < 2
    with np.errstate(invalid="ignore", divide="ignore"):
        x_val = np.where(single, np.nan, (y - mu) ** 2 / (tau2 + v))
        y_val = (mu_del - mu) ** 2 / var_del
    out = table.loc[valid, grp.keys + grp.over].assign(x=x_val[valid], y=y_val[valid])
    out = out.reset_index(drop=True)
    out.attrs.update(
        method=full.pooled["method"].iloc[0] if len(full.pooled) else method,
        test=test,
        over=tuple(grp.over),
    )
    return out


def _sum_over_group(
    code: np.ndarray, valid: np.ndarray, v: np.ndarray, tau2: np.ndarray
) -> np.ndarray:
    """For every row i: Σ_j 1/(v_j + tau2_i) over the valid rows j of i's group."""
    row_i, row_j = pairs_within(code, valid)
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = 1 / (v[row_j] + tau2[row_i])
    out = np.bincount(row_i, weights=np.nan_to_num(terms, nan=0.0), minlength=len(v))
    out = out.astype(np.float64)  # an empty bincount is an integer array
    out[~np.isfinite(tau2)] = np.nan
    return out


for _func in (leave_one_out, influence):  # the shared parameters, documented once
    _func.__doc__ = _func.__doc__.replace("{params}", POOL_PARAMS)  # type: ignore[union-attr]

"""Pooling effects across tasks: common-effect and random-effects models.

Every group (by default one per ``effect_type, metric, treatment, control``) is
fitted at once. The effects are laid out as a ``(groups, tasks)`` batch (groups
of similar size share a batch, so padding stays small) and every estimator runs
along the task axis for all groups together — iterative ones in lockstep with a
convergence mask (see :mod:`metaeval._estimators`). No Python loop runs over
groups.

Definitions follow metafor's ``rma.uni()``, ``predict()``, ``confint()``,
``leave1out()`` and ``influence()`` for intercept-only models (Viechtbauer
2010). With k effects y_i, sampling variances v_i, an estimate τ̂² of the
between-task variance and weights w*_i = 1/(v_i + τ̂²):

- estimate μ̂ = Σ w*_i y_i / Σ w*_i with variance 1/Σw*_i; with
  ``ci="knha"`` (Knapp & Hartung 2003) the variance is multiplied by
  s² = Σ w*_i (y_i − μ̂)²/(k − 1) and tests and intervals use t with k − 1 df;
- Cochran's Q = Σ w_i (y_i − ȳ_w)² with w_i = 1/v_i, df = k − 1;
- "typical" within-task variance ṽ = (k − 1)/(Σw_i − Σw_i²/Σw_i);
  I² = 100 τ̂²/(ṽ + τ̂²) and H² = τ̂²/ṽ + 1 for random-effects models,
  I² = max(0, 100 (Q − (k − 1))/Q) and H² = Q/(k − 1) for the common-effect model;
- prediction interval μ̂ ∓ c √(SE² + τ̂²), c the same normal or t quantile as
  the confidence interval (metafor's ``predict()``);
- ``p_gain`` = F(μ̂ / √(SE² + τ̂²)), F the standard normal (``ci="z"``) or t_{k−1}
  (``ci="knha"``) distribution function: the probability that the true effect
  on a new task is positive under the predictive distribution whose central
  interval is the prediction interval;
- Q-profile confidence interval of τ² (and I² from it), metafor's
  ``confint()`` default for these models.

References
----------
DerSimonian, R., & Laird, N. (1986). Meta-analysis in clinical trials.
*Controlled Clinical Trials*, 7(3), 177–188. doi:10.1016/0197-2456(86)90046-2
Knapp, G., & Hartung, J. (2003). Improved tests for a random effects
meta-regression with a single covariate. *Statistics in Medicine*, 22(17),
2693–2710. doi:10.1002/sim.1482
Viechtbauer, W. (2005). Bias and efficiency of meta-analytic variance
estimators in the random-effects model. *Journal of Educational and Behavioral
Statistics*, 30(3), 261–293. doi:10.3102/10769986030003261
Viechtbauer, W. (2007). Confidence intervals for the amount of heterogeneity in
meta-analysis. *Statistics in Medicine*, 26(1), 37–52. doi:10.1002/sim.2514
Viechtbauer, W. (2010). Conducting meta-analyses in R with the metafor package.
*Journal of Statistical Software*, 36(3). doi:10.18637/jss.v036.i03
Borenstein, M., Hedges, L. V., Higgins, J. P. T., & Rothstein, H. R. (2009).
*Introduction to Meta-Analysis*, ch. 19. Wiley. doi:10.1002/9780470743386
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from . import _estimators as est
from .effects import add_display, check_alpha, display_columns
from .errors import (
    DegenerateWarning,
    DependenceWarning,
    MetaEvalWarning,
    SchemaError,
    check_no_clash,
    check_option,
    format_groups,
    quote_list,
    warn,
    warn_groups,
)
from .schema import validate_effects

__all__ = [
    "METHODS",
    "TESTS",
    "ADJUSTMENTS",
    "GROUP_KEYS",
    "pool",
    "weights",
    "leave_one_out",
    "influence",
]

METHODS = ("EE", "FE", "DL", "HE", "HS", "SJ", "ML", "REML", "EB", "PM")
"""τ² estimators, as metafor's ``rma(method=...)``; ``FE`` is an alias of ``EE``."""

TESTS = ("z", "knha", "hksj")
"""Tests and intervals: normal (``z``) or Knapp–Hartung (``knha``, alias ``hksj``)."""

ADJUSTMENTS = ("holm", "bonferroni", "fdr_bh")
"""Multiple-comparison adjustments of the pooled p-values (as statsmodels names them)."""

GROUP_KEYS = ("effect_type", "metric", "treatment", "control")
"""Columns that identify separate analyses whenever a table has them."""

_RESULT_COLUMNS = {
    "n", "mean_treatment", "mean_control", "effect", "variance", "se", "z",
    "ci_low", "ci_high", "p_value", "weight",
}  # fmt: skip

#: The columns :func:`pool` writes besides the group keys (no key may use them).
POOLED_COLUMNS = (
    "method", "test", "k", "effect", "se", "statistic", "df", "p_value", "p_adjusted",
    "ci_low", "ci_high", "pi_low", "pi_high", "p_gain", "tau2", "tau", "tau2_low",
    "tau2_high", "i2", "i2_low", "i2_high", "h2", "q", "q_df", "q_pvalue", "q_between",
    "df_between", "p_between",
    *display_columns(("effect", "ci_low", "ci_high", "pi_low", "pi_high")),
)  # fmt: skip

#: The columns :func:`influence` adds to the effects table.
INFLUENCE_COLUMNS = (
    "rstudent", "dffits", "cook_d", "cov_r", "tau2_del", "q_del", "hat", "weight", "dfbetas",
    "influential",
)  # fmt: skip


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


# ------------------------------------------------------------------- grouping
@dataclass
class _Grouped:
    """An effects table split into the groups to pool."""

    table: pd.DataFrame  # validated, with the subgroup column when `by` is given
    keys: list[str]  # columns identifying a pooled group (subgroup included)
    subgroup: str | None  # the subgroup column, if any
    over: list[str]
    code: np.ndarray  # group of every row
    key_frame: pd.DataFrame  # one row per group

    @property
    def n_groups(self) -> int:
        return len(self.key_frame)


def _group(
    effects: pd.DataFrame,
    over: str | Sequence[str],
    groups: str | Sequence[str] | None,
    by: str | Mapping[Any, Any] | None,
    *,
    warn_dependence: bool = True,
) -> _Grouped:
    df = validate_effects(effects)
    over_cols, group_cols = _as_list(over), _as_list(groups)
    missing = [c for c in over_cols + group_cols if c not in df.columns]
    if missing:
        raise SchemaError(
            f"Column(s) {missing} named in `over`/`groups` are not in the effects table; "
            f"its columns are {quote_list(list(df.columns))}."
        )
    clash = [c for c in group_cols if c in over_cols or c in _RESULT_COLUMNS]
    if clash:
        raise SchemaError(f"Column(s) {clash} cannot be used in `groups`.")
    named = group_cols + ([by] if isinstance(by, str) else [])
    check_no_clash(named, POOLED_COLUMNS, what="pool()")
    keys = [c for c in GROUP_KEYS if c in df.columns and c not in over_cols]
    keys += [c for c in group_cols if c not in keys]

    subgroup = None
    if by is not None:
        df, subgroup = _add_subgroup(df, by, over_cols)
        keys = keys + [subgroup]

    column_codes = {c: pd.factorize(df[c], use_na_sentinel=False)[0] for c in keys + over_cols}
    code = _combine([column_codes[c] for c in keys], len(df))
    cell = _combine([code, *(column_codes[c] for c in over_cols)], len(df))
    if warn_dependence and "metric" in over_cols:
        # dependent: two metrics of one task (the other `over` columns) in one group
        same_task = _combine(
            [code, *(column_codes[c] for c in over_cols if c != "metric")], len(df)
        )
        if len(same_task) and np.bincount(same_task).max() > 1:
            warn(
                "Pooling over metrics: some groups hold several metrics of one task, measured "
                "on the same queries and so not independent; the pooled standard error is "
                "too small.",
                DependenceWarning,
            )
    dup = np.bincount(cell)[cell] > 1 if len(cell) else np.zeros(0, dtype=bool)
    if dup.any():
        example = df.loc[dup, keys + over_cols].head(4)
        where = f"within a group of {keys}" if keys else "(there are no group columns)"
        raise SchemaError(
            f"{int(dup.sum())} rows repeat the same {over_cols} {where}, "
            f"so it is unclear what to pool, e.g.:\n{format_groups(example)}\n"
            "Name the columns that tell these analyses apart with `groups=`."
        )
    n_groups = int(code.max()) + 1 if len(code) else 0
    first = np.full(n_groups, len(df))
    np.minimum.at(first, code, np.arange(len(df)))
    key_frame = df[keys].iloc[first].reset_index(drop=True)
    if not keys:
        key_frame = pd.DataFrame(index=range(n_groups))
    return _Grouped(df, keys, subgroup, over_cols, code, key_frame)


def _combine(codes: list[np.ndarray], n: int) -> np.ndarray:
    """Codes 0..g-1 of the distinct combinations of several code arrays.

    Combinations are numbered in lexicographic order of the codes (each column
    numbered by first appearance), so a table sorted by its keys keeps its
    order. A dense grid of all combinations is used while it is small; past
    that, hashing.
    """
    combined = np.zeros(n, dtype=np.int64)
    size = 1
    for c in codes:
        width = int(c.max()) + 1 if len(c) else 1
        if size * width > max(4 * n, 2**20):  # keep the grid small: renumber what occurs
            combined, size = _compact(combined, size)
        combined = combined * width + c
        size *= width
    return _compact(combined, size)[0]


def _compact(combined: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    if size <= max(4 * len(combined), 2**20):
        present = np.zeros(size, dtype=bool)
        present[combined] = True
        number = np.cumsum(present) - 1
        return number[combined], int(present.sum())
    uniques, inverse = np.unique(combined, return_inverse=True)
    return inverse.ravel(), len(uniques)


def _add_subgroup(
    df: pd.DataFrame, by: str | Mapping[Any, Any], over: list[str]
) -> tuple[pd.DataFrame, str]:
    if isinstance(by, str):
        if by not in df.columns:
            raise SchemaError(
                f"`by={by!r}` is not a column of the effects table; its columns are "
                f"{quote_list(list(df.columns))}. Task-level columns of the scores table "
                "(constant within each task) are carried into the effects table."
            )
        if df[by].isna().any():
            rows = df.index[df[by].isna()][:5].tolist()
            raise SchemaError(f"The subgroup column {by!r} has missing values, e.g. rows {rows}.")
        return df, by
    if not isinstance(by, Mapping):
        raise SchemaError(f"`by` must be a column name or a mapping, not {type(by).__name__}.")
    if len(over) != 1:
        raise SchemaError("A `by` mapping needs a single `over` column to map from.")
    values = df[over[0]]
    unmapped = sorted({str(v) for v in values if v not in by})
    if unmapped:
        raise SchemaError(
            f"The `by` mapping has no subgroup for {over[0]}(s) {quote_list(unmapped)}."
        )
    name = "subgroup" if "subgroup" not in df.columns else "subgroup_"
    return df.assign(**{name: values.map(by).to_numpy()}), name


# -------------------------------------------------------------------- fitting
@dataclass
class _Fit:
    """Per-group results (arrays over groups) and per-row weights."""

    pooled: pd.DataFrame
    row_weight: np.ndarray  # percent, NaN for rows left out
    s2w: np.ndarray  # Knapp–Hartung scale (1 for z tests)
    grouped: _Grouped


_GROUP_FIELDS = ("tau2", "sw", "effect", "q", "trace_p", "s2w", "tau2_low", "tau2_high")


def _valid(df: pd.DataFrame) -> np.ndarray:
    """Rows with a finite effect and variance (the others are left out of pooling)."""
    return np.isfinite(df["effect"].to_numpy(float)) & np.isfinite(df["variance"].to_numpy(float))


def _slots(code: np.ndarray, valid: np.ndarray, n_groups: int):
    """The valid rows ordered by group, each group's size k, and each row's slot in it."""
    rows = np.flatnonzero(valid)
    rows = rows[np.argsort(code[rows], kind="stable")]
    k = np.bincount(code[rows], minlength=n_groups)
    first = np.r_[0, np.cumsum(k)[:-1]]
    return rows, k, np.arange(len(rows)) - first[code[rows]]


_BATCH_CELLS = 2**17
"""Slots per batch: small enough for a batch's arrays to stay in the CPU cache."""


def _batches(code: np.ndarray, valid: np.ndarray, n_groups: int):
    """Rows laid out as (group, slot) batches of groups with similar k.

    Groups whose k lies in the same power-of-two class share a batch, so a
    batch is at most twice as wide as its smallest group, and a batch holds at
    most about :data:`_BATCH_CELLS` slots (more groups are split into several
    batches, which keeps the estimators' temporaries in the cache). Yields
    ``(groups, rows, local, slot, width)``: the groups of a batch, the table
    rows they hold, each row's group within the batch, its slot, and the width.
    """
    rows, k, slot = _slots(code, valid, n_groups)
    size_class = np.where(k > 0, np.ceil(np.log2(np.maximum(k, 1))), -1)
    # order groups by size class, rows by group: every batch is then a contiguous slice
    groups = np.lexsort((np.arange(n_groups), size_class))
    groups = groups[size_class[groups] >= 0]
    rank = np.empty(n_groups, dtype=np.intp)
    rank[groups] = np.arange(len(groups))
    order = np.argsort(rank[code[rows]], kind="stable")
    rows, slot = rows[order], slot[order]
    row_end = np.cumsum(k[groups])  # end of each group's rows in `rows`
    start = 0
    while start < len(groups):
        cls = size_class[groups[start]]
        width = int(2**cls) if cls > 0 else 1
        stop = min(len(groups), start + max(1, _BATCH_CELLS // width))
        stop = start + int(np.searchsorted(size_class[groups[start:stop]], cls, side="right"))
        members = groups[start:stop]
        lo = row_end[start - 1] if start else 0
        hi = row_end[stop - 1]
        local = rank[code[rows[lo:hi]]] - start
        yield members, rows[lo:hi], local, slot[lo:hi], int(k[members].max())
        start = stop


def _fit_arrays(
    y: np.ndarray,
    v: np.ndarray,
    code: np.ndarray,
    valid: np.ndarray,
    n_groups: int,
    method: str,
    want_ci: bool,
    alpha: float,
) -> tuple[dict[str, np.ndarray], np.ndarray, dict[str, np.ndarray]]:
    """τ² and the sums every output needs, for every group; per-row w*."""
    out = {name: np.full(n_groups, np.nan) for name in _GROUP_FIELDS}
    flags = {name: np.zeros(n_groups, dtype=bool) for name in ("failed", "reset")}
    w_row = np.full(len(y), np.nan)
    for members, rows, local, slot, width in _batches(code, valid, n_groups):
        shape = (len(members), width)
        m = np.zeros(shape, dtype=bool)
        yy, vv = np.zeros(shape), np.zeros(shape)
        m[local, slot], yy[local, slot], vv[local, slot] = True, y[rows], v[rows]
        b = est.Batch(yy, vv, m)
        with np.errstate(invalid="ignore", divide="ignore"):
            _, trace_p, q = est.fe_parts(b)
            failed = np.zeros(len(members), dtype=bool)
            reset = np.zeros(len(members), dtype=bool)
            if method == "EE":
                tau2 = np.zeros(len(members))
            elif method in ("ML", "REML", "EB", "PM"):
                tau2, failed = est.tau2_root(b, method)
                reset = est.ll0_check(b, tau2, method)
                tau2 = np.where(reset, 0.0, tau2)
            else:
                tau2 = est.tau2_closed(b, method)
            tau2 = np.maximum(0.0, tau2)  # NaN stays NaN
            single = b.k < 2
            fit_tau2 = np.where(single | failed, 0.0, tau2)
            w = b.weights(fit_tau2)
            sw = w.sum(axis=1)
            mu = (w * b.y).sum(axis=1) / sw
            r = (b.y - mu[:, None]) * b.m
            rss = (w * r * r).sum(axis=1)
            # residuals of equal effects are rounding of μ̂, at most ~k·eps·max|y| each:
            # below that, s² (Knapp–Hartung) is 0, whatever the scale of the effects
            noise = (4 * b.k * np.finfo(float).eps * np.abs(b.y).max(axis=1)) ** 2 * sw
            s2w = np.where(rss <= noise, 0.0, rss / (b.k - 1))
        group_values = {
            "tau2": np.where(single & (method != "EE"), np.nan, tau2),
            "sw": sw,
            "effect": mu,
            "q": q,
            "trace_p": trace_p,
            "s2w": s2w,
        }
        if want_ci and method != "EE":
            low, high = est.q_profile(b, fit_tau2, alpha)  # finite; k = 1 gives NaN bounds
            group_values["tau2_low"], group_values["tau2_high"] = low, high
        for name, values in group_values.items():
            out[name][members] = values
        flags["failed"][members] = failed
        flags["reset"][members] = reset
        w_row[rows] = w[local, slot]
    return out, w_row, flags


def _fit(
    effects: pd.DataFrame,
    *,
    method: str,
    ci: str,
    alpha: float,
    over: str | Sequence[str],
    groups: str | Sequence[str] | None,
    by: str | Mapping[Any, Any] | None = None,
    adjust: str | None = None,
    heterogeneity_ci: bool = True,
    quiet_single: bool = False,
    warn_dependence: bool = True,
) -> _Fit:
    """Pool every group; the engine behind :func:`pool` and its relatives."""
    from scipy import stats as sps

    check_option("method", method, METHODS)
    check_option("ci", ci, TESTS)
    if adjust is not None:
        check_option("adjust", adjust, ADJUSTMENTS)
    method = "EE" if method == "FE" else method
    test = "knha" if ci == "hksj" else ci
    alpha = check_alpha(alpha)
    grp = _group(effects, over, groups, by, warn_dependence=warn_dependence)
    df, n_groups, code = grp.table, grp.n_groups, grp.code

    y = df["effect"].to_numpy(dtype=np.float64)
    v = df["variance"].to_numpy(dtype=np.float64)
    valid = _valid(df)
    if not valid.all():
        omitted = df.loc[~valid, grp.keys + grp.over]
        warn_groups(
            f"{len(omitted)} effect(s) with NaN effect or variance were left out of pooling",
            omitted,
            DegenerateWarning,
        )
    if method == "EE" and test == "knha":
        warn(
            "The Knapp–Hartung method is not meant for the common-effect model "
            "(metafor warns the same); consider a random-effects method.",
            MetaEvalWarning,
        )

    g, w_row, flags = _fit_arrays(y, v, code, valid, n_groups, method, heterogeneity_ci, alpha)
    k = np.bincount(code[valid], minlength=n_groups)
    bad = flags["failed"]
    with np.errstate(invalid="ignore", divide="ignore"):
        single = k < 2
        knha = (test == "knha") & ~single  # k = 1: no t distribution with 0 df, use z
        s2w = np.where(knha, g["s2w"], 1.0)
        se = np.sqrt(s2w / g["sw"])
        df_t = np.where(knha, k - 1.0, np.nan)
        crit = np.where(
            knha, est.per_value(lambda df: sps.t.isf(alpha / 2, df), df_t), sps.norm.isf(alpha / 2)
        )
        stat = g["effect"] / se
        p = np.where(knha, 2 * sps.t.sf(np.abs(stat), df_t), 2 * sps.norm.sf(np.abs(stat)))
        tau2 = np.where(method == "EE", 0.0, g["tau2"])
        pred_sd = np.sqrt(se**2 + tau2)
        pi_low, pi_high = g["effect"] - crit * pred_sd, g["effect"] + crit * pred_sd
        p_gain = np.where(
            knha, sps.t.cdf(g["effect"] / pred_sd, df_t), sps.norm.cdf(g["effect"] / pred_sd)
        )
        q_df = k - 1.0
        vt = q_df / g["trace_p"]
        if method == "EE":
            q = g["q"]
            i2 = np.where(q > 0, np.maximum(0.0, 100 * (q - q_df) / q), 0.0)
            h2 = q / q_df
        else:
            i2 = 100 * tau2 / (vt + tau2)
            h2 = tau2 / vt + 1
        i2_low = 100 * g["tau2_low"] / (vt + g["tau2_low"])
        i2_high = 100 * g["tau2_high"] / (vt + g["tau2_high"])
        q_p = sps.chi2.sf(g["q"], q_df)

    columns = {
        "method": method,
        "test": test,
        "k": k.astype(np.int64),
        "effect": g["effect"],
        "se": se,
        "statistic": stat,
        "df": df_t,
        "p_value": p,
        "ci_low": g["effect"] - crit * se,
        "ci_high": g["effect"] + crit * se,
        "pi_low": pi_low,
        "pi_high": pi_high,
        "p_gain": p_gain,
        "tau2": tau2,
        "tau": np.sqrt(tau2),
        "tau2_low": g["tau2_low"],
        "tau2_high": g["tau2_high"],
        "i2": i2,
        "i2_low": i2_low,
        "i2_high": i2_high,
        "h2": h2,
        "q": g["q"],
        "q_df": q_df,
        "q_pvalue": q_p,
    }
    pooled = grp.key_frame.assign(**columns)
    numeric = [c for c in columns if c not in ("method", "test", "k")]
    none_for_single = [
        "pi_low",
        "pi_high",
        "p_gain",
        "i2",
        "i2_low",
        "i2_high",
        "h2",
        "q",
        "q_df",
        "q_pvalue",
    ]
    pooled.loc[single, none_for_single] = np.nan
    if method != "EE":
        pooled.loc[single, ["tau2", "tau", "tau2_low", "tau2_high"]] = np.nan
    pooled.loc[bad, numeric] = np.nan
    if grp.subgroup is not None:
        _subgroup_test(pooled, grp)
    if adjust is not None:
        family = [c for c in grp.keys if c != "treatment"]
        pooled.insert(
            pooled.columns.get_loc("p_value") + 1, "p_adjusted", _adjust(pooled, family, adjust)
        )
    add_display(pooled, ("effect", "ci_low", "ci_high", "pi_low", "pi_high"))
    _warn_groups(pooled, grp.keys, np.where(quiet_single & (k == 1), -1, k), flags, method, test)
    weights = np.where(valid & ~bad[code], 100 * w_row / g["sw"][code], np.nan)
    return _Fit(pooled, weights, s2w, grp)


def _subgroup_test(pooled: pd.DataFrame, grp: _Grouped) -> None:
    """Test of subgroup differences (Borenstein et al. 2009, ch. 19, separate τ²).

    Q_between = Σ_g (μ̂_g − μ̄)² / SE_g², μ̄ the inverse-variance mean of the
    subgroup estimates, compared with χ² on (number of subgroups − 1) df — the
    common-effect Q of the subgroup estimates, as metafor computes it with
    ``rma(estimates, sei=se, method="EE")``. Added to every subgroup row.
    """
    from scipy import stats as sps

    parent_keys = [c for c in grp.keys if c != grp.subgroup]
    if parent_keys:
        parent = (
            pooled.groupby(parent_keys, sort=False, observed=True, dropna=False).ngroup().to_numpy()
        )
    else:
        parent = np.zeros(len(pooled), dtype=np.intp)
    n_parent = int(parent.max()) + 1 if len(parent) else 0
    mu, se = pooled["effect"].to_numpy(), pooled["se"].to_numpy()
    ok = np.isfinite(mu) & np.isfinite(se) & (se > 0)
    w = np.where(ok, 1 / se**2, 0.0)
    mu0 = np.where(ok, mu, 0.0)
    sw = np.bincount(parent, weights=w, minlength=n_parent)
    mean = np.bincount(parent, weights=w * mu0, minlength=n_parent) / np.where(sw > 0, sw, np.nan)
    q = np.bincount(parent, weights=w * (mu0 - mean[parent]) ** 2, minlength=n_parent)
    df = np.bincount(parent, weights=ok.astype(float), minlength=n_parent) - 1
    with np.errstate(invalid="ignore"):
        p = np.where(df > 0, sps.chi2.sf(q, np.maximum(df, 1)), np.nan)
    pooled["q_between"] = np.where(df[parent] > 0, q[parent], np.nan)
    pooled["df_between"] = df[parent]
    pooled["p_between"] = p[parent]


def _adjust(pooled: pd.DataFrame, family: list[str], method: str) -> np.ndarray:
    """Adjusted p-values within each family of groups (statsmodels' definitions).

    ``bonferroni``: min(1, m p); ``holm``: step-down max_{j≤i} min(1, (m − j + 1) p_(j));
    ``fdr_bh``: step-up min_{j≥i} min(1, m p_(j)/j); m the number of non-NaN
    p-values in the family. NaN p-values stay NaN and are not counted.
    """
    p = pooled["p_value"].to_numpy(dtype=float)
    if family:
        fam = pooled.groupby(family, sort=False, observed=True, dropna=False).ngroup().to_numpy()
    else:
        fam = np.zeros(len(p), dtype=np.intp)
    ok = np.isfinite(p)
    out = np.full(len(p), np.nan)
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        return out
    order = idx[np.lexsort((p[idx], fam[idx]))]
    f, ps = fam[order], p[order]
    m = np.bincount(f)[f].astype(float)
    rank = pd.Series(np.ones(len(f))).groupby(f).cumsum().to_numpy()  # 1-based, within family
    if method == "bonferroni":
        adj = np.minimum(1.0, m * ps)
    elif method == "holm":  # step-down: running maximum from the smallest p
        adj = pd.Series(np.minimum(1.0, (m - rank + 1) * ps)).groupby(f).cummax().to_numpy()
    else:  # fdr_bh, step-up: running minimum from the largest p
        # p / (rank/m), statsmodels' order of operations: never below p in floating point
        raw = pd.Series(np.minimum(1.0, ps / (rank / m))[::-1])
        adj = raw.groupby(f[::-1]).cummin().to_numpy()[::-1]
    out[order] = adj
    return out


def _warn_groups(
    pooled: pd.DataFrame,
    keys: list[str],
    k: np.ndarray,
    flags: dict[str, np.ndarray],
    method: str,
    test: str,
) -> None:
    single_what = "q, q_pvalue, i2, h2, the prediction interval and p_gain" + (
        "" if method == "EE" else ", tau2 and its interval"
    )
    if test == "knha":
        single_what += "; the interval uses z (no t distribution with 0 df)"
    messages = (
        (k == 0, "have no usable effects (k = 0): all results are NaN"),
        (k == 1, f"have one effect (k = 1): {single_what} are NaN"),
        (flags["failed"], f"did not converge ({method}): all results are NaN"),
        (
            flags["reset"],
            f"reached a local maximum of the {method} likelihood below the one at tau2 = 0; "
            "tau2 was set to 0 (as metafor does)",
        ),
    )
    for hit, text in messages:
        if hit.any():
            warn_groups(f"{int(hit.sum())} pooled group(s) {text}", pooled.loc[hit, keys],
                        DegenerateWarning)  # fmt: skip


# --------------------------------------------------------------- public API
_POOL_PARAMS = """\
method : {"DL", "REML", "ML", "EB", "PM", "HE", "HS", "SJ", "EE", "FE"}, default "DL"
        The τ² estimator, as metafor's ``rma(method=...)``; ``EE`` (alias
        ``FE``) is the common-effect model (τ² = 0).
    ci : {"z", "knha", "hksj"}, default "z"
        Normal tests and intervals, or Knapp–Hartung (``hksj`` is an alias):
        the variance scaled by the weighted residual mean square and t with
        k − 1 df (metafor's ``test="knha"``).
    alpha : float, default 0.05
        Intervals have level 1 − alpha.
    over : str or list of str, default "task"
        The column(s) pooled away: each group has at most one row per value.
        Including ``"metric"`` pools across metrics (with a
        :class:`~metaeval.DependenceWarning`: metrics measured on the same
        queries are not independent).
    groups : str or list of str, optional
        Further columns that tell separate analyses apart, besides the ones
        used whenever present: ``effect_type, metric, treatment, control``.
    by : str or mapping, optional
        Subgroups: a column of the effects table (e.g. a task-level ``domain``
        carried over from the scores) or a mapping from the ``over`` values to
        subgroup labels (the output column is then ``subgroup``). Each
        subgroup gets its own τ²."""


def pool(
    effects: pd.DataFrame,
    *,
    method: str = "DL",
    ci: str = "z",
    alpha: float = 0.05,
    over: str | Sequence[str] = "task",
    groups: str | Sequence[str] | None = None,
    by: str | Mapping[Any, Any] | None = None,
    adjust: str | None = None,
) -> pd.DataFrame:
    """Pool effects across tasks, one model per group, all groups at once.

    Parameters
    ----------
    effects : pandas.DataFrame
        An effects table (from :func:`metaeval.effects`) or any table with
        ``effect`` and ``variance`` on the same scale plus the ``over`` column.
    {params}
    adjust : {"holm", "bonferroni", "fdr_bh"}, optional
        Adjust the p-values for multiple comparisons within each family of
        groups that differ only in ``treatment`` (the treatments compared with
        one control on one metric, per subgroup); adds ``p_adjusted``. Values
        equal statsmodels' ``multipletests``.

    Returns
    -------
    pandas.DataFrame
        One row per group in the order the groups first appear, RangeIndex,
        columns:

        - the group keys (and the subgroup column);
        - ``method``, ``test`` (``"z"`` or ``"knha"``), ``k`` (effects pooled);
        - ``effect, se``: the summary effect on the analysis scale and its SE;
        - ``statistic, df, p_value`` (``p_adjusted``): the z or t test of
          effect = 0 (``df`` NaN for z);
        - ``ci_low, ci_high``: confidence interval; ``pi_low, pi_high``:
          prediction interval for the true effect on a new task; ``p_gain``:
          the probability that it is positive;
        - ``tau2, tau, tau2_low, tau2_high``: between-task variance, SD and
          the Q-profile interval of τ² (0 and NaN for ``EE``);
        - ``i2, i2_low, i2_high`` (percent), ``h2``: heterogeneity as defined
          by metafor for the method;
        - ``q, q_df, q_pvalue``: Cochran's Q test of homogeneity;
        - with ``by``: ``q_between, df_between, p_between``, the test of
          subgroup differences (same on every subgroup row of a group);
        - for ``corr`` also ``r, r_ci_low, r_ci_high, r_pi_low, r_pi_high`` and
          for ``rom`` the same with prefix ``rel_change`` (reporting scale).

        ``attrs`` hold ``method``, ``ci``, ``alpha`` and ``adjust`` (read by
        :mod:`metaeval.report` for table captions).

    Raises
    ------
    metaeval.SchemaError
        Missing columns, non-positive or infinite variances, a task appearing
        twice in one group, or a ``by`` mapping that misses tasks.
    metaeval.OptionError
        An unknown ``method``, ``ci`` or ``adjust``.

    Warns
    -----
    metaeval.DegenerateWarning
        Naming the groups: effects with NaN effect or variance are left out;
        k = 1 keeps the task's effect and its normal interval with NaN τ² and
        heterogeneity; iterative estimators that do not converge give NaN; a
        REML/ML fit stuck in a local maximum is reset to τ² = 0 (as metafor).
    metaeval.DependenceWarning
        When pooling over metrics.

    Examples
    --------
    >>> import pandas as pd, metaeval
    >>> eff = pd.DataFrame({"task": ["a", "b", "c", "d"], "effect": [0.1, 0.3, 0.2, 0.6],
    ...                     "variance": [0.01, 0.02, 0.015, 0.01]})
    >>> eff.meta.pool(method="REML", ci="knha")[["k", "effect", "ci_low", "ci_high", "tau2"]].round(4)
       k  effect  ci_low  ci_high    tau2
    0  4  0.3025 -0.0519   0.6568  0.0394
    """
    pooled = _fit(
        effects, method=method, ci=ci, alpha=alpha, over=over, groups=groups, by=by, adjust=adjust
    ).pooled
    pooled.attrs.update(method=method, ci=ci, alpha=alpha, adjust=adjust)
    return pooled


def weights(
    effects: pd.DataFrame,
    *,
    method: str = "DL",
    ci: str = "z",
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
    """
    if isinstance(effects, pd.DataFrame):
        check_no_clash(effects.columns, ["weight"], what="weights()")
    fit = _fit(
        effects,
        method=method,
        ci=ci,
        alpha=alpha,
        over=over,
        groups=groups,
        by=by,
        heterogeneity_ci=False,
    )
    return fit.grouped.table.assign(weight=fit.row_weight).reset_index(drop=True)


def _pairs(code: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair (i, j) of valid rows in the same group, i == j included."""
    rows, k, slot = _slots(code, valid, int(code.max()) + 1 if len(code) else 0)
    reps = k[code[rows]]
    start = np.arange(len(rows)) - slot  # where each row's group begins in `rows`
    j = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)  # 0..k-1 for each i
    return np.repeat(rows, reps), rows[np.repeat(start, reps) + j]


def _left_out_table(grp: _Grouped) -> pd.DataFrame:
    """Every group once per member, without that member.

    The expanded table has a column ``_left_out`` with the row number (in
    ``grp.table``) of the effect left out; each (group, ``_left_out``) is a
    group of its own.
    """
    df = grp.table.reset_index(drop=True)
    left, member = _pairs(grp.code, _valid(df))  # ordered by the effect left out
    keep = member != left
    return df.iloc[member[keep]].assign(_left_out=left[keep]).reset_index(drop=True)


def _fit_left_out(grp: _Grouped, **options: Any) -> _Fit:
    """The model of every group without each of its effects, one warning for k = 2."""
    if (np.bincount(grp.code, minlength=grp.n_groups) == 2).any():
        warn(
            "Groups with two effects leave one effect when one is left out: tau2 and "
            "heterogeneity are NaN there.",
            DegenerateWarning,
        )
    return _fit(
        _left_out_table(grp),
        over=grp.over,
        groups=[c for c in grp.keys if c not in GROUP_KEYS] + ["_left_out"],
        heterogeneity_ci=False,
        quiet_single=True,
        warn_dependence=False,  # the full fit warned already; no filter (threads share them)
        **options,
    )


def leave_one_out(
    effects: pd.DataFrame,
    *,
    method: str = "DL",
    ci: str = "z",
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
    {params}

    Returns
    -------
    pandas.DataFrame
        One row per (group, left-out effect): the group keys, the ``over``
        column(s) naming the effect left out, ``k`` (effects pooled, one less
        than the group's) and ``effect, se, statistic, p_value, ci_low,
        ci_high, q, q_pvalue, tau2, i2, h2`` of the model without it. Groups
        with a single effect have no rows.
    """
    grp = _group(effects, over, groups, by)
    pooled = _fit_left_out(grp, method=method, ci=ci, alpha=alpha).pooled
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
        "q_pvalue",
        "tau2",
        "i2",
        "h2",
    ]
    return pd.concat([out, pooled[cols]], axis=1)


def influence(
    effects: pd.DataFrame,
    *,
    method: str = "DL",
    ci: str = "z",
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
        - ``influential``: metafor's rule, |dffits| > 3√(1/(k − 1)) or
          P(χ²₁ ≤ cook_d) > 0.5 or hat > 3/k or |dfbetas| > 1.
    """
    from scipy import stats as sps

    if isinstance(effects, pd.DataFrame):
        check_no_clash(effects.columns, INFLUENCE_COLUMNS, what="influence()")
    full = _fit(
        effects,
        method=method,
        ci=ci,
        alpha=alpha,
        over=over,
        groups=groups,
        by=by,
        heterogeneity_ci=False,
    )
    grp = full.grouped
    loo = _fit_left_out(grp, method=method, ci=ci, alpha=alpha)
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
    valid = _valid(table)
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
        rstudent=rstudent, dffits=dffits, cook_d=cook, cov_r=cov_r, tau2_del=tau2_del,
        q_del=q_del, hat=hat, weight=full.row_weight, dfbetas=dfbetas,
        influential=influential & np.isfinite(rstudent),
    )  # fmt: skip


def _sum_over_group(
    code: np.ndarray, valid: np.ndarray, v: np.ndarray, tau2: np.ndarray
) -> np.ndarray:
    """For every row i: Σ_j 1/(v_j + tau2_i) over the valid rows j of i's group."""
    row_i, row_j = _pairs(code, valid)
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = 1 / (v[row_j] + tau2[row_i])
    out = np.bincount(row_i, weights=np.nan_to_num(terms, nan=0.0), minlength=len(v))
    out = out.astype(np.float64)  # an empty bincount is an integer array
    out[~np.isfinite(tau2)] = np.nan
    return out


for _func in (pool, weights, leave_one_out, influence):  # the shared parameters, documented once
    _func.__doc__ = _func.__doc__.replace("{params}", _POOL_PARAMS)  # type: ignore[union-attr]

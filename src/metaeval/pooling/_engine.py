"""The pooling engine: every group of an effects table fitted at once.

:func:`fit` is the one entry point behind :func:`metaeval.pool`,
:func:`~metaeval.weights`, :func:`~metaeval.leave_one_out`,
:func:`~metaeval.influence`, :func:`~metaeval.analyze` and the forest plot; it
returns a :class:`Fit` with the pooled table, each row's weight, the
Knapp–Hartung scales and the grouping. The groups are laid out as
``(groups, tasks)`` batches of similar size, and the τ² estimators of
:mod:`metaeval.pooling._tau2` (the family :func:`~metaeval.metareg` uses too, here
on its intercept-only fast path) run along the task axis for all of them together
(see :mod:`metaeval.pooling` for the definitions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._multiplicity import adjust_in_table, check_adjustment
from .._options import (
    CI_METHODS,
    POOL_METHODS,
    POOLED_COLUMNS,
    POOLED_FIRST,
    SHARED_COLUMNS,
    TAU2_CIS,
    add_display,
    answer_first,
    format_number,
    resolve_ci,
)
from ..errors import (
    DegenerateWarning,
    MetaEvalWarning,
    OptionError,
    PairingWarning,
    check_alpha,
    check_option,
    warn,
    warn_groups,
)
from . import _tau2 as t2
from ._grouping import Grouped, coverage, group, slots, valid_rows

__all__ = [
    "Fit",
    "fit",
    "usable_rows",
    "KH_TESTS",
    "T_TESTS",
    "narrower_than_z",
    "check_tau2_ci",
    "PROFILE_METHODS",
    "refuse_shared",
    "batches",
    "POOL_PARAMS",
    "solver_messages",
    "maxima_warnings",
    "warn_each",
]


# -------------------------------------------------------------------- fitting
@dataclass
class Fit:
    """Per-group results (arrays over groups) and per-row weights."""

    pooled: pd.DataFrame
    row_weight: np.ndarray  # percent, NaN for rows left out
    s2w: np.ndarray  # Knapp–Hartung scale (1 for z tests)
    grouped: Grouped


_GROUP_FIELDS = ("tau2", "sw", "effect", "q", "trace_p", "s2w", "tau2_low", "tau2_high")


_BATCH_CELLS = 2**17
"""Slots per batch: small enough for a batch's arrays to stay in the CPU cache."""


def batches(code: np.ndarray, valid: np.ndarray, n_groups: int):
    """Rows laid out as (group, slot) batches of groups with similar k.

    Groups whose k lies in the same power-of-two class share a batch, so a
    batch is at most twice as wide as its smallest group, and a batch holds at
    most about :data:`_BATCH_CELLS` slots (more groups are split into several
    batches, which keeps the estimators' temporaries in the cache). Yields
    ``(groups, rows, local, slot, width)``: the groups of a batch, the table
    rows they hold, each row's group within the batch, its slot, and the width.
    """
    rows, k, slot = slots(code, valid, n_groups)
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
    tau2_ci: str = "qprofile",
) -> tuple[dict[str, np.ndarray], np.ndarray, dict[str, np.ndarray], t2.Maxima]:
    """τ² and the sums every output needs, for every group; per-row w*; the flags and
    what the likelihood search found (ML, REML)."""
    out = {name: np.full(n_groups, np.nan) for name in _GROUP_FIELDS}
    flags = {name: np.zeros(n_groups, dtype=bool) for name in ("failed",)}
    maxima = t2.Maxima.none(n_groups)
    w_row = np.full(len(y), np.nan)
    for members, rows, local, slot, width in batches(code, valid, n_groups):
        shape = (len(members), width)
        m = np.zeros(shape, dtype=bool)
        yy, vv = np.zeros(shape), np.zeros(shape)
        m[local, slot], yy[local, slot], vv[local, slot] = True, y[rows], v[rows]
        b = t2.Batch(yy, vv, m)
        with np.errstate(invalid="ignore", divide="ignore"):
            _, trace_p, q = b.fixed_parts()
            tau2, failed, found = t2.estimate(b, method)  # truncated at 0, NaN stays NaN
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
            if tau2_ci == "profile":  # ML or REML (checked): that fit's likelihood
                with np.errstate(invalid="ignore", divide="ignore"):
                    low, high = t2.profile_ci(b, fit_tau2, alpha, reml=method == "REML")
            else:
                low, high = t2.q_profile(b, fit_tau2, alpha)  # finite; k = 1 gives NaN bounds
            group_values["tau2_low"], group_values["tau2_high"] = low, high
        for name, values in group_values.items():
            out[name][members] = values
        flags["failed"][members] = failed
        maxima.put(members, found)
        w_row[rows] = w[local, slot]
    return out, w_row, flags, maxima


#: The τ² estimators with a likelihood: the ones ``tau2_ci="profile"`` takes.
PROFILE_METHODS = ("ML", "REML")


def check_tau2_ci(tau2_ci: str, method: str) -> None:
    """An OptionError for an unknown ``tau2_ci``, or ``"profile"`` with a method that
    does not maximize a likelihood (the profile-likelihood interval is relative to
    the likelihood's maximum)."""
    check_option("tau2_ci", tau2_ci, TAU2_CIS)
    if tau2_ci == "profile" and method not in PROFILE_METHODS:
        raise OptionError(
            f"`tau2_ci='profile'` needs the likelihood of a method that maximizes it, "
            f"{list(PROFILE_METHODS)}, but method={method!r} was passed; use "
            f"method='REML' (or 'ML'), or tau2_ci='qprofile'."
        )


def pool_options(method: str, test: str | None, alpha: float) -> None:
    """Check :func:`pool`'s options (for callers that check them before other work)."""
    _Options.checked(method, test, alpha, None)


@dataclass(frozen=True)
class _Options:
    """The checked options of a fit."""

    method: str  # "EE" for "FE"
    test: str  # "z", "t", "knha" ("hksj" is an alias) or "adhoc"
    alpha: float
    adjust: str | None

    @classmethod
    def checked(cls, method: str, test: str | None, alpha: float, adjust: str | None) -> _Options:
        check_option("method", method, POOL_METHODS)
        test = resolve_ci(method, test)
        check_option("test", test, CI_METHODS)
        if adjust is not None:
            check_adjustment("adjust", adjust, "pool(): pooled effects have no sign flips")
        return cls(
            "EE" if method == "FE" else method,
            "knha" if test == "hksj" else test,
            check_alpha(alpha),
            adjust,
        )


def fit(
    effects: pd.DataFrame,
    *,
    method: str,
    test: str | None,
    alpha: float,
    over: str | Sequence[str],
    groups: str | Sequence[str] | None,
    by: str | Mapping[Any, Any] | None = None,
    adjust: str | None = None,
    heterogeneity_ci: bool = True,
    tau2_ci: str = "qprofile",
    quiet_single: bool = False,
    warn_dependence: bool = True,
    warn_coverage: bool = False,
    warn_narrow: bool = False,
    warn_maxima: bool = True,
) -> Fit:
    """Pool every group; the engine behind :func:`pool` and its relatives.

    The steps: check the options, group the table, take the usable effects,
    fit τ² and the sums every output needs for all groups at once, derive the
    tests, intervals and heterogeneity, blank what a single effect or a failed
    fit cannot give, add the subgroup test, adjusted p-values and reporting-
    scale columns, and warn about degenerate groups (and, with ``warn_coverage``,
    about groups that pool fewer tasks than their analysis has; with ``warn_narrow``,
    about Knapp–Hartung intervals narrower than the normal ones: :func:`pool` and
    :func:`analyze` warn, the refits of the diagnostics do not; with ``warn_maxima``,
    about likelihoods with more than one maximum, :func:`maxima_warnings`).
    """
    opts = _Options.checked(method, test, alpha, adjust)
    check_tau2_ci(tau2_ci, method)
    grp = group(effects, over, groups, by, warn_dependence=warn_dependence)
    y, v, valid = _inputs(grp, opts)
    shared = _shared_parts(grp)
    if shared is not None:  # pool on each task's own variance; the shared part comes after
        v = v - np.minimum(shared[0] ** 2 + shared[1] ** 2, shared[4])
    g, w_row, flags, maxima = _fit_arrays(
        y, v, grp.code, valid, grp.n_groups, opts.method, heterogeneity_ci, opts.alpha, tau2_ci
    )
    k = np.bincount(grp.code[valid], minlength=grp.n_groups)
    if shared is not None:
        _pool_shared(g, shared, w_row, grp.code, valid, grp.n_groups)
    columns, s2w = _inference(g, k, opts)
    k_total, missing = coverage(grp, valid)
    flags["zero_s2"] = (opts.test == "knha") & (k >= 2) & (s2w == 0) & ~flags["failed"]
    narrow = warn_narrow & (opts.test == "knha") & (shared is None)
    flags["narrow_kh"] = narrow & (k >= 2) & narrower_than_z(s2w, k, opts.alpha)
    flags["narrow_kh"] &= ~flags["failed"] & ~flags["zero_s2"]
    pooled = grp.key_frame.assign(**columns)
    pooled.insert(pooled.columns.get_loc("k") + 1, "k_total", k_total)
    _blank_undefined(pooled, k, flags["failed"], opts, list(columns))
    _add_extras(pooled, grp, opts)
    pooled = answer_first(pooled, POOLED_FIRST, POOLED_COLUMNS)
    flags["own_metric"] = own_metric(grp, valid, k)
    _warn_groups(
        pooled, grp.keys, np.where(quiet_single & (k == 1), -1, k), flags, opts.method, opts.test
    )
    if warn_maxima:
        maxima_warnings(
            pooled[grp.keys], maxima, opts.method, ~flags["failed"] & (k >= 2), "pooled group(s)"
        )
    if warn_coverage:
        _warn_coverage(pooled, grp, missing)
    weights = np.where(valid & ~flags["failed"][grp.code], 100 * w_row / g["sw"][grp.code], np.nan)
    return Fit(pooled, weights, s2w, grp)


def usable_rows(grp: Grouped) -> np.ndarray:
    """Which rows have an effect and a variance, warning (naming them) about the others."""
    valid = valid_rows(grp.table)
    if not valid.all():
        omitted = grp.table.loc[~valid, grp.keys + grp.over]
        warn_groups(
            f"{len(omitted)} effect(s) with NaN effect or variance were left out of pooling",
            omitted,
            DegenerateWarning,
        )
    return valid


def _inputs(grp: Grouped, opts: _Options) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Effects, variances and which rows are usable (warning about the others)."""
    df = grp.table
    valid = usable_rows(grp)
    if opts.method == "EE" and opts.test in KH_TESTS:
        warn(
            "The Knapp–Hartung method is not meant for the common-effect model "
            "(metafor warns the same); consider a random-effects method.",
            MetaEvalWarning,
        )
    return df["effect"].to_numpy(np.float64), df["variance"].to_numpy(np.float64), valid


def refuse_shared(effects: pd.DataFrame, what: str) -> None:
    """An OptionError for a model that does not take the shared part of crossed
    replicates (``se_shared_*`` columns with a non-zero value) into account."""
    if not all(c in effects.columns for c in SHARED_COLUMNS):
        return
    if (effects[list(SHARED_COLUMNS)].fillna(0.0).to_numpy() > 0).any():
        raise OptionError(
            f"{what} does not model replicates crossed with the tasks (the effects table's "
            "se_shared_treatment/se_shared_control columns: a seed's shift shared by every "
            "task), and would report intervals that ignore it. Pool them with "
            "metaeval.pool(), or compute the effects with replicates='nested' if each "
            "task's replicates were separate runs."
        )


def _shared_parts(grp: Grouped) -> tuple[np.ndarray, ...] | None:
    """Per row, the standard errors shared by every task (crossed replicates: the
    ``se_shared_*`` columns of :func:`metaeval.effects`), the replicates behind them and
    the variance the replicates added to the row (which holds the shared part: the task's
    own part is what is left of it); None for a table without them."""
    df = grp.table
    if not all(c in df.columns for c in SHARED_COLUMNS):
        return None
    return (
        np.nan_to_num(df["se_shared_treatment"].to_numpy(np.float64)),
        np.nan_to_num(df["se_shared_control"].to_numpy(np.float64)),
        df["replicates_treatment"].to_numpy(np.float64),
        df["replicates_control"].to_numpy(np.float64),
        np.nan_to_num(df["variance_replicates"].to_numpy(np.float64)),
    )


def _pool_shared(g: dict, shared: tuple[np.ndarray, ...], w_row, code, valid, n_groups) -> None:
    """The pooled shared standard errors of each group, in place (``g["shared_t"]``, ...).

    A shift common to every task enters each task's effect with its loading ℓ_i (the
    ``se_shared_*`` of the row, its standard error on the effect's scale), so it enters
    the pooled mean Σ w_i y_i / Σ w_i with Σ w_i ℓ_i / Σ w_i: that, squared, is its
    variance, which does not shrink with the number of tasks. Each system's part rests
    on its R replicates (R − 1 degrees of freedom).
    """
    rows = np.flatnonzero(valid)
    for name, loading in (("shared_t", shared[0]), ("shared_c", shared[1])):
        total = np.bincount(code[rows], weights=w_row[rows] * loading[rows], minlength=n_groups)
        g[name] = total / g["sw"]
    for name, reps in (("r_t", shared[2]), ("r_c", shared[3])):
        most = np.full(n_groups, np.nan)
        np.fmax.at(most, code[rows], reps[rows])
        g[name] = most


def _inference(
    g: dict[str, np.ndarray], k: np.ndarray, opts: _Options
) -> tuple[dict[str, Any], np.ndarray]:
    """The pooled table's columns from the fitted sums, and the Knapp–Hartung scales.

    With shared parts (crossed replicates, :func:`_pool_shared`) the variance is the
    model's plus each system's shared part, on Welch–Satterthwaite degrees of freedom:
    the model's part on k − 1 (``t``, Knapp–Hartung) or taken as known (``z``), each shared
    part on R − 1; the intervals and tests then use t on them.
    """
    from scipy import stats as sps

    alpha = opts.alpha
    with np.errstate(invalid="ignore", divide="ignore"):
        single = k < 2
        tdist = (opts.test in T_TESTS) & ~single  # k = 1: no t distribution with 0 df, use z
        knha = (opts.test in KH_TESTS) & ~single
        # ad hoc Knapp–Hartung (metafor's test="adhoc"): the factor floored at 1
        s2w = np.where(knha, np.maximum(g["s2w"], 1.0 if opts.test == "adhoc" else 0.0), 1.0)
        base = s2w / g["sw"]
        part_t, part_c = g.get("shared_t", 0.0) ** 2, g.get("shared_c", 0.0) ** 2
        shared = part_t + part_c
        # s² = 0 (every effect equals μ̂) would claim certainty, se = 0: NaN (with a warning)
        se = np.where(knha & (s2w == 0), np.nan, np.sqrt(base + shared))
        denom = (
            np.where(tdist, base**2 / (k - 1.0), 0.0)
            + np.where(part_t > 0, part_t**2 / (g.get("r_t", np.nan) - 1), 0.0)
            + np.where(part_c > 0, part_c**2 / (g.get("r_c", np.nan) - 1), 0.0)
        )
        use_t = tdist | (shared > 0)
        df_t = np.where(shared > 0, (base + shared) ** 2 / denom, np.where(tdist, k - 1.0, np.nan))
        crit = np.where(
            use_t, t2.per_value(lambda df: sps.t.isf(alpha / 2, df), df_t), sps.norm.isf(alpha / 2)
        )
        stat = g["effect"] / se
        p = np.where(use_t, 2 * sps.t.sf(np.abs(stat), df_t), 2 * sps.norm.sf(np.abs(stat)))
        tau2 = np.where(opts.method == "EE", 0.0, g["tau2"])
        pred_sd = np.sqrt(se**2 + tau2)
        prob_gain = np.where(
            use_t, sps.t.cdf(g["effect"] / pred_sd, df_t), sps.norm.cdf(g["effect"] / pred_sd)
        )
        q_df = k - 1.0
        vt = q_df / g["trace_p"]
        if opts.method == "EE":
            q = g["q"]
            i2 = np.where(q > 0, np.maximum(0.0, 100 * (q - q_df) / q), 0.0)
            h2 = q / q_df
        else:
            i2 = 100 * tau2 / (vt + tau2)
            h2 = tau2 / vt + 1
        columns = {
            "method": opts.method,
            "test": opts.test,
            "k": k.astype(np.int64),
            "effect": g["effect"],
            "se": se,
            **({"se_shared": np.sqrt(shared)} if "shared_t" in g else {}),
            "statistic": stat,
            "df": df_t,
            "p_value": p,
            "ci_low": g["effect"] - crit * se,
            "ci_high": g["effect"] + crit * se,
            "pi_low": g["effect"] - crit * pred_sd,
            "pi_high": g["effect"] + crit * pred_sd,
            "prob_gain": prob_gain,
            "tau2": tau2,
            "tau": np.sqrt(tau2),
            "tau2_low": g["tau2_low"],
            "tau2_high": g["tau2_high"],
            "i2": i2,
            "i2_low": 100 * g["tau2_low"] / (vt + g["tau2_low"]),
            "i2_high": 100 * g["tau2_high"] / (vt + g["tau2_high"]),
            "h2": h2,
            "q": g["q"],
            "q_df": q_df,
            "q_p_value": sps.chi2.sf(g["q"], q_df),
        }
    return columns, s2w


#: What one effect cannot give: heterogeneity and prediction (and τ² but for EE).
_NONE_FOR_SINGLE = (
    "pi_low",
    "pi_high",
    "prob_gain",
    "i2",
    "i2_low",
    "i2_high",
    "h2",
    "q",
    "q_df",
    "q_p_value",
)


def _blank_undefined(
    pooled: pd.DataFrame, k: np.ndarray, failed: np.ndarray, opts: _Options, columns: list[str]
) -> None:
    """NaN where k = 1 leaves a value undefined, and everywhere in failed fits."""
    single = k < 2
    pooled.loc[single, list(_NONE_FOR_SINGLE)] = np.nan
    if opts.method != "EE":
        pooled.loc[single, ["tau2", "tau", "tau2_low", "tau2_high"]] = np.nan
    numeric = [c for c in columns if c not in ("method", "test", "k")]
    pooled.loc[failed, numeric] = np.nan


def _add_extras(pooled: pd.DataFrame, grp: Grouped, opts: _Options) -> None:
    """The subgroup test, adjusted p-values and reporting-scale columns, in place."""
    if grp.subgroup is not None:
        _subgroup_test(pooled, grp)
    if opts.adjust is not None:
        family = [c for c in grp.keys if c != "treatment"]
        pooled.insert(
            pooled.columns.get_loc("p_value") + 1,
            "p_adjusted",
            adjust_in_table(pooled, family, opts.adjust),
        )
    add_display(pooled, ("effect", "ci_low", "ci_high", "pi_low", "pi_high"))


def _subgroup_test(pooled: pd.DataFrame, grp: Grouped) -> None:
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
    pooled["q_between_df"] = df[parent]
    pooled["q_between_p_value"] = p[parent]


def _warn_groups(
    pooled: pd.DataFrame,
    keys: list[str],
    k: np.ndarray,
    flags: dict[str, np.ndarray],
    method: str,
    test: str,
) -> None:
    single_what = "q, q_p_value, i2, h2, the prediction interval and prob_gain" + (
        "" if method == "EE" else ", tau2 and its interval"
    )
    single_text = f"have one effect (k = 1): {single_what} are NaN"
    if test in T_TESTS:
        single_text += (
            "; the test and confidence interval use the normal distribution, as a t "
            "distribution with 0 degrees of freedom does not exist"
        )
    own = flags.get("own_metric", np.zeros(len(k), dtype=bool))
    messages = (
        (k == 0, "have no usable effects (k = 0): all results are NaN"),
        ((k == 1) & ~own, single_text),
        ((k == 1) & own, single_text + OWN_METRIC_TEXT),
        *solver_messages(flags, method),
        (flags.get("zero_s2", np.zeros(len(k), dtype=bool)), ZERO_S2_TEXT),
        (flags.get("narrow_kh", np.zeros(len(k), dtype=bool)), NARROW_KH_TEXT),
    )
    warn_each(messages, pooled[keys], "pooled group(s)")


#: The cause of k = 1 that :func:`own_metric` finds, added to the k = 1 warning.
OWN_METRIC_TEXT = (
    ". Their task is the only one with their metric, and the other tasks of the comparison "
    "have other metric names (metric names differ across tasks, e.g. each Inspect task's "
    "own scorer or an lm-eval task's own metrics), so nothing pools: give the tasks one "
    "metric name (read_inspect()/read_lm_eval() with primary=..., --primary in the command, "
    "or rename the metrics, --constant metric=NAME)"
)


def own_metric(grp: Grouped, valid: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Which groups pool one task (k = 1) because metric names differ across tasks: their
    task shares no metric with any other task of the same comparison (the group's keys but
    metric and subgroup), and that comparison has other tasks. False where k ≠ 1, where the
    table has no ``metric`` column or pools over other columns than ``task``."""
    alone = np.zeros(len(k), dtype=bool)
    if not (k == 1).any() or "metric" not in grp.keys or grp.over != ["task"]:
        return alone
    rest = [c for c in grp.keys if c not in ("metric", grp.subgroup)]
    rows = grp.table.loc[valid, [*rest, "task", "metric"]].assign(_group=grp.code[valid])
    rows = rows.astype({c: str for c in [*rest, "task", "metric"]})  # categoricals, NaN keys
    tasks_of_metric = rows.groupby([*rest, "metric"])["task"].transform("nunique")
    # a task is on its own when every one of its metrics is on it alone
    shared = (tasks_of_metric > 1).groupby([rows[c] for c in [*rest, "task"]]).transform("any")
    tasks = rows.groupby(rest)["task"].transform("nunique") if rest else rows["task"].nunique()
    hit = rows.loc[~shared.to_numpy() & (np.asarray(tasks) > 1), "_group"].to_numpy()
    alone[hit] = True
    return alone & (k == 1)


def _warn_coverage(pooled: pd.DataFrame, grp: Grouped, missing: pd.DataFrame) -> None:
    """One :class:`~metaeval.PairingWarning` naming the groups that pool fewer tasks than
    the other groups of their analysis: k of k_total, and the tasks they miss."""
    if missing.empty:
        return
    names = missing.groupby("group", sort=True)["name"].agg(", ".join)
    short = names.index.to_numpy()
    what = "tasks" if grp.over == ["task"] else f"{' / '.join(grp.over)} values"
    groups = pooled.loc[short, grp.keys].assign(
        k=pooled["k"].to_numpy()[short],
        k_total=pooled["k_total"].to_numpy()[short],
        missing=names.to_numpy(),
    )
    warn_groups(
        f"{{n}} pooled group(s) have no effect on {what} that other systems of their analysis "
        f"have (no paired scores there, or a NaN effect): each summary pools k of k_total "
        f"{what} (missing: those named) and is not comparable with the summaries over all "
        f"k_total",
        groups,
        PairingWarning,
    )


#: The tests that scale the variance by Knapp–Hartung's factor s² and use t with k − 1 df.
KH_TESTS = ("knha", "adhoc")

#: The tests that use t with k − p df (``"t"``: metafor's ``test="t"``, the model's variance).
T_TESTS = ("t", *KH_TESTS)

NARROW_KH_TEXT = (
    "have a Knapp–Hartung interval narrower than the normal (z) one: the effects scatter "
    "less than their variances imply (s² · t²(k − 1) < z²). test='adhoc' floors s² at 1 "
    "(metafor's test='adhoc'), so the interval is never narrower than z's"
)


def narrower_than_z(s2w: np.ndarray, k: np.ndarray, alpha: float) -> np.ndarray:
    """Where a Knapp–Hartung interval (factor ``s2w``, t on k − 1 df) is narrower than the
    normal one: s² · t²_{k−1} < z² (False where k < 2 or s² is NaN)."""
    from scipy import stats as sps

    with np.errstate(invalid="ignore"):
        t = t2.per_value(lambda df: sps.t.isf(alpha / 2, df), np.where(k >= 2, k - 1.0, np.nan))
        return (k >= 2) & (s2w * t**2 < sps.norm.isf(alpha / 2) ** 2)


ZERO_S2_TEXT = (
    "have effects that all equal the pooled effect, so Knapp–Hartung's scale s² is 0 and "
    "the standard error would be 0: se, statistic, p-value, confidence and prediction "
    "intervals and prob_gain are NaN (test='z' gives the normal test)"
)


def solver_messages(
    flags: dict[str, np.ndarray], method: str
) -> tuple[tuple[np.ndarray, str], ...]:
    """The warning of an iterative fit: groups that did not converge."""
    return ((flags["failed"], f"did not converge ({method}): all results are NaN"),)


def maxima_warnings(
    groups: pd.DataFrame, maxima: t2.Maxima, method: str, fitted: np.ndarray, what: str
) -> None:
    """The warnings about an ML/REML likelihood with more than one local maximum, each
    naming its groups (one row of ``groups`` per group; ``fitted`` the groups that have
    a τ²), with the τ² of both maxima in ``.groups``:

    - where the highest maximum (the estimate) is not the one metafor's ``rma()`` stops at
      (Fisher scoring from its start and its check of τ² = 0), which is given;
    - where another maximum is within ``LL_CLOSE`` (χ²₁,₀.₉₅/2) of the highest in
      log-likelihood and far from it in τ² (``FAR``): τ² and the pooled effect are then
      poorly determined.
    """
    elsewhere = maxima.elsewhere & fitted
    if elsewhere.any():
        warn_groups(
            f"{{n}} {what} have a {method} likelihood with more than one local maximum, and "
            "metafor's rma() stops at a lower one (Fisher scoring from its start): tau2 is "
            "the highest maximum's, metafor's is in the warning's .groups (tau2_metafor)",
            groups.loc[elsewhere].assign(tau2_metafor=maxima.metafor[elsewhere]),
            DegenerateWarning,
        )
    close = maxima.ambiguous & fitted
    if close.any():
        warn_groups(
            f"{{n}} {what} have two maxima of the {method} likelihood within "
            f"{format_number(t2.LL_CLOSE, 2)} (chi-square(1) 95% / 2) of each other at distant tau2 (the "
            "other in .groups: tau2_other, loglik_gap): tau2 and the pooled effect are "
            "poorly determined by these effects; compare method='PM' or 'DL', or "
            "bayes_pool() with a prior on tau",
            groups.loc[close].assign(
                tau2_other=maxima.other[close], loglik_gap=maxima.other_gap[close]
            ),
            DegenerateWarning,
        )


def warn_each(messages, groups: pd.DataFrame, what: str) -> None:
    """One :class:`~metaeval.DegenerateWarning` per (mask, text) that hits a group of
    ``groups`` (one row per group), naming them: "{n} <what> <text>"."""
    for hit, text in messages:
        if hit.any():
            warn_groups(f"{{n}} {what} {text}", groups.loc[hit], DegenerateWarning)


# --------------------------------------------------------------- public API
POOL_PARAMS = """\
method : {"DL", "REML", "ML", "EB", "PM", "HE", "HS", "SJ", "EE", "FE"}, default "REML"
        The τ² estimator, as metafor's ``rma(method=...)``; ``EE`` (alias
        ``FE``) is the common-effect model (τ² = 0).
    test : {"knha", "z", "t", "hksj", "adhoc"} or None, default None
        Knapp–Hartung (``hksj`` is an alias): the variance scaled by the
        weighted residual mean square s² and t with k − 1 df (metafor's
        ``test="knha"``); ``"adhoc"``: the same with s² floored at 1, so the
        interval is never narrower than the normal one (metafor's
        ``test="adhoc"``); ``"t"``: the model's variance, not scaled, with t on
        k − 1 df (metafor's ``test="t"``); or normal tests and intervals
        (``"z"``). None: ``"knha"`` for the random-effects methods, ``"z"`` for
        ``EE``.
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

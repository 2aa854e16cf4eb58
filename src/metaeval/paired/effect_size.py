"""Paired effect sizes from sufficient statistics, for every group at once.

All effects are treatment − control over the queries both systems have on a
task (paired by query id). Notation: n paired queries; x̄, ȳ the treatment and
control means; s_x, s_y their sample SDs (ddof = 1); r their Pearson
correlation; D = x̄ − ȳ; S_diff the sample SD of the differences.

``md`` — raw mean difference (metafor ``MC``)
    effect = D, variance = S_diff² / n.
``smd`` — the Ranger paper's paired standardized mean difference (Borenstein
    et al. 2009, eqs. 4.25–4.28): S_within = S_diff / √(2(1 − r)),
    d = D / S_within, V_d = (1/n + d²/(2n)) · 2(1 − r); Hedges' J = 1 − 3/(4·df − 1)
    with df = n − 1; effect g = J·d, variance J²·V_d. Ranger itself uses the
    population SD (ddof = 0); metaeval uses the sample SD. metafor's author
    regards this variance as too small when r is high (it is Borenstein's
    eq. 4.28, which metafor's ``SMCR`` documentation calls incorrect); prefer
    ``smcrp`` for a standardizer on the raw-score scale.
``smcrp`` — standardized by the pooled SD of both systems (metafor ≥ 4
    ``SMCRP``): d = D / √((s_x² + s_y²)/2), g = c(m)·d with
    c(m) = exp(lgamma(m/2) − log√(m/2) − lgamma((m−1)/2)), m = 2(n − 1)/(1 + r²),
    variance 2(1 − r)/n + g²(1 + r²)/(4n) (Cousineau 2020).
``smcc`` — standardized by the SD of the differences (Cohen's d_z, metafor
    ``SMCC``): g = c(n − 1)·D / S_diff, variance 1/n + g²/(2n).
``rom`` — log ratio of means for paired data (metafor ``ROMC``):
    log(x̄/ȳ) + ½(s_x²/(n x̄²) − s_y²/(n ȳ²)) (bias correction of Senior et al.
    2020, eq. 7; ``correct=False`` leaves it out, as metafor 3.8 does);
    variance s_x²/(n x̄²) + s_y²/(n ȳ²) − 2 r s_x s_y/(n x̄ ȳ). Needs positive means.
``corr`` — Pearson r between treatment and control scores over the queries
    (Ranger eqs. 6–8), analysed on Fisher's z = atanh(r) with variance 1/(n − 3).

Clusters (``effects(..., cluster="passage")``). Queries that share a cluster
(questions on one passage) are not independent. With C clusters of the paired
queries, the clustered variance of the mean of a per-query quantity z is
V_cl(z̄) = C/(C − 1) · Σ_c (Σ_{i∈c} (z_i − z̄))² / n² (Miller 2024, App. A, with
the finite-cluster factor, as Inspect's ``stderr(cluster=)``); when every query
is its own cluster it equals the independent s_z²/n exactly. Let
DE_d = V_cl(d̄) / (S_diff²/n), the design effect of the mean difference.

- ``md``: variance V_cl(d̄) of the differences d_i = x_i − y_i.
- ``smcc``: the term 1/n, which is Var(D̄)/S_diff² under independence, becomes
  V_cl(d̄)/S_diff² = DE_d/n; variance DE_d/n + g²/(2n).
- ``smd``: the term J²·2(1 − r)/n, which is J²·Var(D̄)/S_within², becomes
  J²·V_cl(d̄)/S_within² = J²·2(1 − r)·DE_d/n.
- ``smcrp``: the term 2(1 − r)/n (metafor's approximation of Var(D̄)/s_p²) is
  multiplied by DE_d, so that it is the one above when each cluster is one query.
- In ``smd``, ``smcrp`` and ``smcc`` the term in g² (the sampling error of the
  standardizer itself) is kept as it is: clustering enters through the mean
  difference only.
- ``rom``: the delta method with clusters: z_i = x_i/x̄ − y_i/ȳ, variance
  V_cl(z̄) (the unclustered variance is s_z²/n, which this equals when every
  cluster is one query).
- ``corr``: not defined (an :class:`~metaeval.OptionError`).

Intervals and p-values then use t on C − 1 degrees of freedom.

Rounding. Sums of shifted scores leave rounding noise where the exact value is
0; it is told apart by tolerances relative to the quantities involved, never by
absolute ones, so multiplying every score by a constant changes no outcome: a
(co)variance below :data:`ZERO_TOL` (1e-10) of the sums of squares it came from
is 0, so is 1 − |r| (r is then exactly ±1), and a mean difference below
:data:`ZERO_DIFF` (1e-12) of the scores' magnitude is exactly 0. A group whose
sampling variance is then 0 (``smcrp`` with r = +1 and equal means, say) is
NaN with a :class:`~metaeval.DegenerateWarning`, never a rounding-noise
variance that would take all the weight when pooled.

References
----------
Miller, E. (2024). Adding error bars to evals: A statistical approach to language
model evaluations. arXiv:2411.00640
Borenstein, M., Hedges, L. V., Higgins, J. P. T., & Rothstein, H. R. (2009).
*Introduction to Meta-Analysis*. Wiley. doi:10.1002/9780470743386
Sertkan, M., Althammer, S., & Hofstätter, S. (2023). Ranger: A toolkit for
effect-size based multi-task evaluation. arXiv:2305.15048
Cousineau, D. (2020). Approximating the distribution of Cohen's d_p in
within-subject designs. *The Quantitative Methods for Psychology*, 16(4),
418–421. doi:10.20982/tqmp.16.4.p418
Senior, A. M., Viechtbauer, W., & Nakagawa, S. (2020). Revisiting and expanding
the meta-analysis of variation: The log coefficient of variation ratio.
*Research Synthesis Methods*, 11(4), 553–567. doi:10.1002/jrsm.1423
Viechtbauer, W. (2010). Conducting meta-analyses in R with the metafor package.
*Journal of Statistical Software*, 36(3). doi:10.18637/jss.v036.i03
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import pandas as pd
import xarray as xr

from .._docs import fill_doc
from .._options import (
    DEFAULT_EFFECT,
    EFFECT_TYPES,
    EFFECTS_FIRST,
    EffectType,
    ReplicateDesign,
    add_display,
    answer_first,
    display_columns,
    literal_signature,
)
from ..engines import any_frame, first_pass, frame_kind, route
from ..errors import (
    DegenerateWarning,
    OptionError,
    PairingError,
    check_alpha,
    check_no_clash,
    check_option,
    quote_list,
    warn_groups,
)
from ..schema import REPLICATE, REPLICATE_DESIGN, SCORE_COLUMNS
from .clusters import (
    CLUSTER_COLUMNS,
    check_cluster_options,
    cluster_terms,
    clustered_effects,
)
from .replicates import (
    REPLICATE_COLUMNS,
    add_replicate_variance,
    check_design_has_replicates,
    has_replicates,
    pair_variances,
    replicate_design,
    t_inference,
)
from .sufficient import ZERO_TOL, sufficient_statistics

__all__ = ["EFFECT_TYPES", "effects", "effect_sizes"]


#: A mean difference below this share of the scores' magnitude (|x̄| + |ȳ| plus
#: their root mean squares) is rounding error and is treated as exactly zero. It
#: is far below what could change a statistic: a difference that small is never
#: large against a standard deviation that :data:`ZERO_TOL` lets through.
ZERO_DIFF = 1e-12

#: The columns :func:`effects` writes (the scores' task-level columns may not use them).
OUTPUT_COLUMNS = (
    "metric",
    "treatment",
    "control",
    "task",
    "effect_type",
    "n",
    "mean_treatment",
    "mean_control",
    "effect",
    "variance",
    "se",
    "z",
    "ci_low",
    "ci_high",
    "p_value",
    *display_columns(("effect", "ci_low", "ci_high")),
)


def check_extra_columns(
    columns: Sequence[object], *, replicates: bool = False, cluster: bool = False
) -> None:
    """A :class:`~metaeval.SchemaError` for extra columns of a scores table (``columns``: all
    of its columns) that :func:`effects` would overwrite: those in :data:`OUTPUT_COLUMNS`,
    with ``replicates`` (a table with a ``replicate`` column) :data:`REPLICATE_COLUMNS`,
    and with ``cluster`` (``cluster=`` given) :data:`CLUSTER_COLUMNS`."""
    extra = [c for c in columns if c not in (*SCORE_COLUMNS, REPLICATE, REPLICATE_DESIGN)]
    reserved = (*OUTPUT_COLUMNS, *REPLICATE_COLUMNS) if replicates else OUTPUT_COLUMNS
    reserved = (*reserved, *CLUSTER_COLUMNS) if cluster else reserved
    check_no_clash(extra, reserved, what="effects()")


def checked_options(effect: str, alpha: float) -> tuple[EffectType, float]:
    """``effect`` (case-insensitive) and ``alpha`` checked, as :func:`effects` takes them."""
    lowered = str(effect).lower()
    check_option("effect", lowered, EFFECT_TYPES)
    return cast(EffectType, lowered), check_alpha(alpha)


def _c(m: np.ndarray) -> np.ndarray:
    """metafor's small-sample correction c(m); NaN for m <= 1."""
    from scipy.special import gammaln

    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.exp(gammaln(m / 2) - np.log(np.sqrt(m / 2)) - gammaln((m - 1) / 2))
    return np.where(m > 1, c, np.nan)


@literal_signature
def effect_sizes(
    stats: xr.Dataset,
    *,
    effect: EffectType = DEFAULT_EFFECT,
    alpha: float = 0.05,
    correct: bool = True,
) -> tuple[xr.Dataset, dict[str, xr.DataArray]]:
    """Effect sizes from sufficient statistics, vectorized over every dim.

    Parameters
    ----------
    stats : xarray.Dataset
        As returned by :func:`metaeval.sufficient_statistics` (any dims).
    effect : {"md", "smd", "smcrp", "smcc", "rom", "corr"}
        See the module docstring.
    alpha : float
        1 − confidence level of the intervals.
    correct : bool
        Apply the small-sample corrections (Hedges' J for ``smd``, c(m) for
        ``smcc``/``smcrp``, the bias correction for ``rom``).

    Returns
    -------
    result : xarray.Dataset
        ``n, mean_treatment, mean_control, effect, variance, se, z, ci_low,
        ci_high, p_value``, all on the analysis scale.
    problems : dict of str to xarray.DataArray
        For each reason a result is NaN, a boolean mask of the affected groups.

    Examples
    --------
    >>> import metaeval
    >>> from metaeval.paired import effect_sizes
    >>> ds = metaeval.sufficient_statistics(metaeval.load_example(), control="logistic_regression",
    ...                                     treatment=["knn", "naive_bayes"])
    >>> result, problems = effect_sizes(ds, effect="md")
    >>> result["effect"].sel(metric="accuracy", control="logistic_regression").to_pandas().round(4)
    treatment         knn  naive_bayes
    task
    breast_cancer -0.0141      -0.0404
    digits         0.0072      -0.1185
    iris          -0.0067       0.0000
    wine          -0.0225      -0.0112
    >>> {reason: int(mask.sum()) for reason, mask in problems.items()}
    {'fewer than 2 paired queries': 0, 'zero variance of the differences (effect kept, variance NaN)': 0}
    """
    effect, alpha = checked_options(effect, alpha)
    names = [
        "n",
        "shift_treatment",
        "shift_control",
        "sum_x",
        "sum_y",
        "sum_xx",
        "sum_yy",
        "sum_xy",
    ]
    scale = stats["scale"] if "scale" in stats else xr.ones_like(stats["n"], dtype=float)
    arrays = xr.broadcast(*(stats[name] for name in names), scale)
    template = arrays[0]
    est, var, se, z, mx, my, problems = _kernel(
        *(a.values for a in arrays), effect=effect, correct=correct
    )
    columns = {
        "n": template.values,
        "mean_treatment": mx,
        "mean_control": my,
        "effect": est,
        "variance": var,
        **normal_inference(est, se, alpha, z=z),
    }
    out = xr.Dataset({k: template.copy(data=v) for k, v in columns.items()})
    return out, {reason: template.copy(data=mask) for reason, mask in problems.items()}


def normal_inference(
    effect: np.ndarray, se: np.ndarray, alpha: float, *, z: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """``se``, ``z`` = effect/se, the normal interval effect ∓ z₁₋α/₂·se and the two-sided
    p-value (from the survival function, so tiny p-values stay positive).

    ``z`` may be given when it was computed where effect and se are better
    represented (see :func:`effect_sizes`).
    """
    from scipy import stats as sps

    with np.errstate(divide="ignore", invalid="ignore"):
        z = effect / se if z is None else z
        crit = sps.norm.isf(alpha / 2)
        return {
            "se": se,
            "z": z,
            "ci_low": effect - crit * se,
            "ci_high": effect + crit * se,
            "p_value": 2 * sps.norm.sf(np.abs(z)),
        }


def _kernel(n, a, b, sx, sy, sxx, syy, sxy, scale, *, effect: str, correct: bool):
    """Effect and variance from shifted sums (numpy arrays of one shape).

    The sums are of (score − shift)/scale (``scale`` a power of two, see
    :func:`metaeval.sufficient_statistics`); everything is computed in those
    units and the effect, variance and means are taken back to the scores'
    own (``md``; the others do not depend on the scale).

    Returns ``(effect, variance, se, z, mean_treatment, mean_control,
    problems)``; se and z = effect/se come from the scaled units, so that they
    are right even where the variance itself (a square) cannot be represented;
    ``problems`` maps each reason a result is NaN to a boolean mask.

    Rounding is told from zero in one place each: a (co)variance below
    :data:`ZERO_TOL` of the sums of squares it came from is 0, 1 − |r| below it
    makes r exactly ±1, and a mean difference below :data:`ZERO_DIFF` of the
    scores' magnitude is exactly 0. A variance that is then 0 (or not finite)
    makes the result NaN with a reason, so that :func:`metaeval.pool` never
    meets a zero or rounding-noise variance.
    """
    n = n.astype(np.float64)
    a, b = a / scale, b / scale
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        dx, dy = sx / n, sy / n
        mx, my = a + dx, b + dy
        css_x, css_y, csp = sxx - sx * dx, syy - sy * dy, sxy - sx * dy
        css_d = css_x + css_y - 2 * csp
        # a (co)variance below ZERO_TOL of the sums of squares it came from is rounding
        zero_x = css_x <= ZERO_TOL * sxx
        zero_y = css_y <= ZERO_TOL * syy
        zero_d = css_d <= ZERO_TOL * (sxx + syy)
        var_x = np.where(zero_x, 0.0, css_x) / (n - 1)
        var_y = np.where(zero_y, 0.0, css_y) / (n - 1)
        var_d = np.where(zero_d, 0.0, css_d) / (n - 1)
        cov = csp / (n - 1)
        r = np.clip(csp / np.sqrt(css_x * css_y), -1, 1)
        r = np.where(1 - np.abs(r) <= ZERO_TOL, np.sign(r), r)  # rounding away from ±1
        diff = (a - b) + (dx - dy)
        magnitude = np.abs(a) + np.abs(b) + np.sqrt(sxx / n) + np.sqrt(syy / n)
        diff = np.where(np.abs(diff) <= ZERO_DIFF * magnitude, 0.0, diff)

        problems = {"fewer than 2 paired queries": n < 2}
        keep_effect = np.zeros(n.shape, dtype=bool)  # effect kept although variance is NaN
        small_m = None  # where the correction c(m) has m <= 1 (it would be 0)
        if effect == "md":
            est, var = diff, var_d / n
            problems["zero variance of the differences (effect kept, variance NaN)"] = zero_d
            keep_effect = zero_d & (n >= 2)
        elif effect in ("smd", "smcrp", "corr"):
            undefined_r = zero_x | zero_y
            problems["a system has zero variance (r undefined)"] = undefined_r
            unit_r = (np.abs(r) == 1) & ~undefined_r
            if effect == "smd":
                problems["zero variance of the differences"] = zero_d
                problems["r = ±1"] = unit_r
                d = diff / np.sqrt(var_d / (2 * (1 - r)))
                v_d = (1 / n + d**2 / (2 * n)) * 2 * (1 - r)
                j = 1 - 3 / (4 * (n - 1) - 1) if correct else 1.0
                est, var = j * d, j**2 * v_d
            elif effect == "smcrp":
                problems["zero variance of the differences"] = zero_d
                m = 2 * (n - 1) / (1 + r**2)
                small_m = m <= 1
                d = diff / np.sqrt((var_x + var_y) / 2)
                est = (_c(m) if correct else 1.0) * d
                var = 2 * (1 - r) / n + est**2 * (1 + r**2) / (4 * n)
            else:  # corr
                problems["r = ±1"] = unit_r
                problems["fewer than 4 paired queries (Fisher z needs n > 3)"] = (n < 4) & (n >= 2)
                est, var = np.arctanh(r), 1 / (n - 3)
        elif effect == "smcc":
            problems["zero variance of the differences"] = zero_d
            small_m = n - 1 <= 1
            est = (_c(n - 1) if correct else 1.0) * diff / np.sqrt(var_d)
            var = 1 / n + est**2 / (2 * n)
        else:  # rom
            positive = (mx > 0) & (my > 0)
            problems["a mean is not positive (log ratio undefined)"] = ~positive
            rel = css_x / mx**2 + css_y / my**2 - 2 * csp / (mx * my)
            zero_rel = rel <= ZERO_TOL * (sxx / mx**2 + syy / my**2)
            problems["zero sampling variance"] = zero_rel & positive
            est = np.log(mx / my)
            if correct:
                est = est + 0.5 * (var_x / (n * mx**2) - var_y / (n * my**2))
            var = (var_x / mx**2 + var_y / my**2 - 2 * cov / (mx * my)) / n
        if correct and small_m is not None:
            problems[
                "2 paired queries: the small-sample correction c(m) has m <= 1 and is undefined "
                "(correct=False gives the uncorrected effect)"
            ] = small_m & (n >= 2)
        if effect != "md":  # whatever is left that is not a positive, finite variance
            earlier = np.logical_or.reduce(list(problems.values()))
            degenerate = ~earlier & ~(np.isfinite(var) & (var > 0) & np.isfinite(est))
            key = "zero sampling variance"
            problems[key] = problems.get(key, np.zeros(n.shape, dtype=bool)) | degenerate

        se = np.sqrt(var)
        z = est / se
        unrepresentable = np.zeros(n.shape, dtype=bool)
        if effect == "md":  # back to the scores' units
            est, se, in_units = est * scale, se * scale, var
            var = var * scale**2  # its square may leave double precision where se does not
            unrepresentable = (
                (in_units > 0) & np.isfinite(in_units) & ~((var > 0) & np.isfinite(var))
            )
        mx, my = mx * scale, my * scale
    bad = np.logical_or.reduce(list(problems.values()))
    if unrepresentable.any():
        problems[
            "a variance beyond double precision (scores near 1e±300): effect, se, interval and "
            "p-value kept, variance NaN"
        ] = unrepresentable & ~bad
    return (
        np.where(bad & ~keep_effect, np.nan, est),
        np.where(bad | unrepresentable, np.nan, var),
        np.where(bad, np.nan, se),
        np.where(bad, np.nan, z),
        mx,
        my,
        problems,
    )


def _checked(scores: Any, options: dict[str, Any]) -> None:
    """:func:`effects`' options checked before a lazy table is read."""
    checked_options(options["effect"], options["alpha"])


def _per_query(scores: Any, options: dict[str, Any]) -> bool:
    """Clusters and replicates: per-query work, done in memory (a lazy table collected)."""
    return options["cluster"] is not None or REPLICATE in scores.columns


@any_frame(lazy=True)
@route(check=_checked, collect=_per_query)  # else summed in the engine: sufficient_statistics
@literal_signature
@fill_doc
def effects(
    scores: pd.DataFrame,
    control: str | Sequence[str] | None,
    *,
    treatment: str | Sequence[str] | None = None,
    effect: EffectType = DEFAULT_EFFECT,
    alpha: float = 0.05,
    correct: bool = True,
    cv: tuple[float, float] | None = None,
    replicates: ReplicateDesign | None = None,
    cluster: str | None = None,
) -> pd.DataFrame:
    """Paired effect of each treatment over each control on every task and metric.

    Parameters
    ----------
    {scores_lazy}
    {control}
    {treatment}
    effect : {"md", "smd", "smcrp", "smcc", "rom", "corr"}, default "smcrp"
        The effect size (case-insensitive); formulas in :ref:`effects-definitions`.
    {alpha}
    correct : bool, default True
        Small-sample corrections: Hedges' J (``smd``), c(m) (``smcc``,
        ``smcrp``), the log-ratio bias correction (``rom``).
    cv : (n_train, n_test), optional
        Per-fold scores of (repeated) k-fold cross-validation (``query`` names the
        fold), each fold trained on ``n_train`` and tested on ``n_test`` items: Nadeau
        & Bengio's corrected variance and t on J − 1 df for J folds (:ref:`beyond-cv`).
        ``effect="md"`` only; folds given as replicates are refused with this advice.
    {cluster}
        The sampling variance is then the clustered one (Miller 2024, App. A), and
        ``pool()`` pools it as it is. Not defined for ``corr``, nor with ``cv=``.
    replicates : {"crossed", "nested", "epochs"}, optional
        How the runs of a ``replicate`` column relate to the tasks: one run (a seed, a
        checkpoint) on every task (``"crossed"``), each task's own runs (``"nested"``),
        or repeated answers to the same item (``"epochs"``: the item's mean is the unit,
        nothing is added). None: the design the table records (a ``replicate_design``
        column, ``scores.attrs["replicates"]``), else a guess with a warning:
        ``"crossed"`` when every system has the same replicate ids on every one of two
        or more tasks, else ``"nested"``. The models and their coverage:
        :ref:`beyond-replicates` and :ref:`llm-seeds`.

    Returns
    -------
    pandas.DataFrame
        One row per ``(metric, treatment, control, task)`` whose two systems share a
        query, RangeIndex, columns:

        - ``metric, treatment, control, task`` (str): the group; ``effect_type`` (str);
        - the scores table's task-level columns (constant within every task, such as a
          ``domain``), for ``pool(by=...)``; one named like a column of this table
          (``n``, ``se``, ``r``, ...) is an error, never an overwrite;
        - ``effect`` on the **analysis scale** (:ref:`effects-definitions`), ``ci_low,
          ci_high`` (effect ∓ z₁₋α/₂·se), ``p_value`` (the two-sided normal test of 0);
        - ``n`` (int): paired queries; ``mean_treatment, mean_control``: their means;
        - ``variance, se, z``: the sampling variance, standard error and effect / se;
        - for ``corr`` also ``r, r_ci_low, r_ci_high`` (the correlation scale), for
          ``rom`` ``rel_change, rel_change_ci_low, rel_change_ci_high`` (ratio − 1);
        - with a ``replicate`` column (scores averaged per query over each system's
          replicates before pairing): ``variance_replicates`` (the variance added, but
          for ``"epochs"``; in ``variance``), ``replicates_treatment, replicates_control``
          (R) and ``df`` (Welch–Satterthwaite, inf when nothing is added) of the t
          intervals; ``attrs["replicates"]``; with ``"crossed"`` also ``se_shared_treatment,
          se_shared_control``, the standard error every task shares, which
          :func:`metaeval.pool` adds to the pooled variance (:ref:`shared seeds
          <llm-seeds-shared>`);
        - with ``cluster=``: ``n_clusters`` (C), ``design_effect`` (over the unclustered
          variance) and ``df`` = C − 1 of the t interval; ``attrs["cluster"]``.

    Raises
    ------
    metaeval.SchemaError
        For an invalid scores table, extra columns named like output columns, or
        ``replicates="crossed"`` when a system lacks some of its replicate ids on a task.
    metaeval.PairingError
        For unknown systems, or when no pair of different systems shares a query.
    metaeval.OptionError
        For ``cluster=`` with ``effect="corr"`` or ``cv=``, a task whose queries are
        all in one cluster, and ``replicates=`` without a ``replicate`` column.

    Warns
    -----
    metaeval.MetaEvalWarning
        When the design of a ``replicate`` column is guessed (nothing states it).
    metaeval.PairingWarning
        When queries are left out of a pair because one system lacks them.
    metaeval.DegenerateWarning
        Naming every group whose result is NaN and why (:ref:`effects-degenerate`).

    Notes
    -----
    A lazy frame is summed in its engine per (task, metric); with a ``replicate`` column
    or ``cluster=`` it is collected first (:ref:`engines-pushdown`).

    Examples
    --------
    >>> import metaeval
    >>> scores = metaeval.load_example()
    >>> eff = scores.meta.effects(control="logistic_regression",
    ...                           treatment="knn", effect="md")
    >>> eff[["metric", "task", "n", "effect"]].round(4)
             metric           task     n  effect
    0      accuracy  breast_cancer   569 -0.0141
    1      accuracy         digits  1797  0.0072
    2      accuracy           iris   150 -0.0067
    3      accuracy           wine   178 -0.0225
    4  p_true_class  breast_cancer   569 -0.0139
    5  p_true_class         digits  1797  0.0123
    6  p_true_class           iris   150  0.0568
    7  p_true_class           wine   178 -0.0155

    Queries in blocks of ten (say, questions on one passage) as clusters:

    >>> scores["passage"] = scores["query"].astype(int) // 10
    >>> eff = scores.meta.effects(control="logistic_regression", treatment="knn",
    ...                           effect="md", cluster="passage")
    >>> eff[["metric", "task", "se", "df", "design_effect"]].head(4).round(4)
         metric           task      se     df  design_effect
    0  accuracy  breast_cancer  0.0085   56.0         1.2993
    1  accuracy         digits  0.0042  179.0         1.0253
    2  accuracy           iris  0.0067   14.0         0.1989
    3  accuracy           wine  0.0130   17.0         0.9073
    """
    effect, alpha = checked_options(effect, alpha)
    check_design_has_replicates(scores, replicates)
    if cluster is not None:
        check_cluster_options(cluster, effect, cv)
    if frame_kind(scores) is not None:  # a table (not a frame: the error comes below)
        check_extra_columns(
            list(scores.columns), replicates=has_replicates(scores), cluster=cluster is not None
        )
    # both routed: a lazy table's sums and task-level columns are computed in its engine
    stats = sufficient_statistics(scores, control=control, treatment=treatment)
    attributes = task_attributes(scores)
    if cluster is not None:
        attributes = attributes.drop(columns=[cluster], errors="ignore")
    table = effects_table(stats, attributes, effect=effect, alpha=alpha, correct=correct)
    if cluster is not None:
        terms = cluster_terms(scores, table, cluster=cluster, effect=effect)
        table = clustered_effects(
            table,
            terms,
            pair_variances(stats),
            cluster=cluster,
            effect=effect,
            alpha=alpha,
            correct=correct,
        )
    if has_replicates(scores):
        design = replicate_design(scores, replicates)
        table = add_replicate_variance(table, scores, pair_variances(stats), alpha, design)
        table.attrs["replicates"] = design
    if cv is not None:
        table = cv_corrected(
            table, cv, effect=effect, replicates=has_replicates(scores), alpha=alpha
        )
    return table


def cv_corrected(
    table: pd.DataFrame, cv: Any, *, effect: str, replicates: bool, alpha: float
) -> pd.DataFrame:
    """Nadeau and Bengio's corrected variance of a mean over J folds: the effects table with
    ``variance`` × (1 + J·n_test/n_train), t inference on J − 1 df (see :func:`effects`)."""
    if (
        not isinstance(cv, tuple | list)
        or len(cv) != 2
        or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in cv)
        or not all(np.isfinite(x) and x > 0 for x in cv)
    ):
        raise OptionError(
            f"`cv` must be (n_train, n_test), two positive numbers (the sizes of a fold's "
            f"training and test sets), not {cv!r}."
        )
    if effect != "md":
        raise OptionError(
            f"cv= corrects the mean difference over folds: pass effect='md', not {effect!r}."
        )
    if replicates:
        raise OptionError("cv= takes one row per fold (query = the fold) and no replicate column.")
    n_train, n_test = float(cv[0]), float(cv[1])
    folds = table["n"].to_numpy(float)
    out = table.copy()
    variance = out["variance"].to_numpy(float) * (1 + folds * n_test / n_train)
    out["variance"] = variance
    t_inference(out, np.sqrt(variance), folds - 1, alpha)
    out.insert(out.columns.get_loc("z") + 1, "df", folds - 1)
    add_display(out, ("effect", "ci_low", "ci_high"))
    out.attrs["cv"] = (n_train, n_test)
    return out


def effects_table(
    stats: xr.Dataset,
    attributes: pd.DataFrame,
    *,
    effect: EffectType,
    alpha: float,
    correct: bool,
) -> pd.DataFrame:
    """The table of :func:`effects` from sufficient statistics and the task-level columns
    (indexed by task), with its warnings: the second half of :func:`effects`, shared by
    the partitioned (dask) path, which sums the statistics first."""
    result, problems = effect_sizes(stats, effect=effect, alpha=alpha, correct=correct)
    order = ("metric", "treatment", "control", "task")
    keep = paired_groups(stats)
    keep_flat = keep.transpose(*order).values.ravel()
    frame = result.to_dataframe(dim_order=list(order)).reset_index()[keep_flat]
    frame.insert(4, "effect_type", effect)
    frame = frame.reset_index(drop=True)
    for i, col in enumerate(attributes.columns):
        frame.insert(5 + i, col, frame["task"].map(attributes[col]).to_numpy())
    add_display(frame, ("effect", "ci_low", "ci_high"))
    warn_undefined(f"effect={effect!r}", problems, keep, order)
    return answer_first(frame, EFFECTS_FIRST, OUTPUT_COLUMNS[5:])


def paired_groups(stats: xr.Dataset) -> xr.DataArray:
    """Groups of two different systems with paired queries; an error when there are none.

    Raises
    ------
    metaeval.PairingError
        When treatment and control name the same system(s) only, or no pair of
        different systems shares a query on any task and metric (the result
        would be an empty table).
    """
    distinct = stats["treatment"] != stats["control"]
    keep = (stats["n"] > 0) & distinct
    if not bool(keep.any()):
        if not bool(distinct.any()):
            raise PairingError(
                f"The treatment and the control are the same system "
                f"({quote_list(list(stats['control'].values))}), so there is no pair to compare: "
                "name two different systems, and check that the table has the treatment(s) "
                "(by default every system of the table besides the control)."
            )
        raise PairingError(
            "No (treatment, control) pair of systems shares a query on any task and metric, so "
            f"there is nothing to compare (treatments {quote_list(list(stats['treatment'].values))}, "
            f"controls {quote_list(list(stats['control'].values))}). Queries are paired by their "
            "id within a task: check that the systems' query ids and task names match."
        )
    return keep


def _lazy_attributes(scores: Any) -> pd.DataFrame:
    """:func:`task_attributes` of a lazy table, from its first pass."""
    return first_pass(scores).attributes()


@route(engine=_lazy_attributes)
def task_attributes(scores: pd.DataFrame) -> pd.DataFrame:
    """The scores table's extra columns that are constant within every task, by task."""
    extra = [c for c in scores.columns if c not in (*SCORE_COLUMNS, REPLICATE, REPLICATE_DESIGN)]
    if not extra:
        return pd.DataFrame()
    task = scores["task"].astype(str)
    distinct = scores[extra].groupby(task, sort=False, observed=True).nunique(dropna=False)
    task_level = [c for c in extra if (distinct[c] <= 1).all()]
    return scores[task_level].groupby(task, sort=False, observed=True).first()


def warn_undefined(
    what: str, problems: dict[str, xr.DataArray], keep: xr.DataArray, order: Sequence[str]
) -> None:
    """One DegenerateWarning per reason, naming the groups of ``keep`` it makes NaN.

    ``what`` starts the message (``effect='smd'``, ``test='t'``); the warning's
    ``groups`` holds every group (the text names the first ten).
    """
    for reason, mask in problems.items():
        hit = (mask & keep).transpose(*order)
        if not bool(hit.any()):
            continue
        idx = np.nonzero(hit.values)
        groups = pd.DataFrame({dim: hit[dim].values[i] for dim, i in zip(order, idx, strict=True)})
        warn_groups(
            f"{what} gives NaN for {{n}} group(s) because of {reason}",
            groups,
            DegenerateWarning,
        )

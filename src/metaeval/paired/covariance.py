"""The sampling covariance of paired effects across metrics measured on the same queries.

Effects of two metrics a and b (nDCG@10 and AP, say) of one (treatment, control,
task) come from the same queries and are correlated. :func:`effect_covariance`
computes their covariance from the per-query scores, for every pair of metrics
at once, so that a multilevel model (``pool(model="multilevel", cov=...)``)
uses the true within-task covariance matrix instead of an assumed correlation.

Notation for one (treatment, control, task): x_m, y_m the treatment's and the
control's scores on metric m, d_m = x_m − y_m; n_a the queries paired for
metric a (both systems have a score), n_ab those paired for both metrics; c(·,·)
sample covariances (ddof = 1) over the n_ab common queries, and within one metric
over its n_a queries; v_a the effect's sampling variance from
:func:`metaeval.effects`.

``md``
    Cov(d̄_a, d̄_b) = n_ab · c(d_a, d_b) / (n_a n_b), exactly (the covariance of two
    means over overlapping samples), computed as ρ̂_ab·√(v_a v_b)·n_ab/√(n_a n_b) with
    ρ̂_ab the correlation of d_a and d_b over the common queries.
the other effect types
    cov = ρ̂_ab · √(v_a v_b) · n_ab / √(n_a n_b), where ρ̂_ab is the correlation of the
    two estimates that the delta method gives under normal theory (Olkin & Finn
    1995; Gleser & Olkin 2009): each effect is a function of its metric's means
    (x̄, ȳ) and second moments (s_xx, s_yy, s_xy); with gradients ∇_a, ∇_b,
    Cov(means) = c(·,·) of the four scores and Cov(s_uv, s_wz) = c(u,w)c(v,z) +
    c(u,z)c(v,w) (Isserlis' theorem), Σ_ab = ∇_a' Cov ∇_b and
    ρ̂_ab = Σ_ab / √(Σ_aa Σ_bb). Scaling the correlation by the effects' own
    standard errors keeps the diagonal equal to :func:`metaeval.effects`'
    variances exactly (they are metafor's formulas, which are the delta method
    only approximately) and the matrix a covariance matrix. The effects as
    functions of the moments:

    - ``smcc``: D / s_d with D = x̄ − ȳ and s_d² = s_xx + s_yy − 2 s_xy (Cohen's d_z);
    - ``smd``: D·√(2(1 − r))/s_d with r treated as known, as its variance
      (Borenstein et al. 2009, eq. 4.28) treats it: the correlation is ``smcc``'s;
    - ``smcrp``: D / √((s_xx + s_yy)/2);
    - ``rom``: log x̄ − log ȳ;
    - ``corr``: atanh(s_xy / √(s_xx s_yy)); ρ̂_ab is then the correlation of two
      Fisher-z values of non-overlapping correlations measured on the same
      sample (Steiger 1980; Olkin & Finn 1990).

    The small-sample corrections (Hedges' J, c(m)) multiply an effect by a
    constant and leave ρ̂ unchanged.

Within-metric moments (s_xx, s_yy, s_xy, and the means) are taken over each
metric's own paired queries, cross-metric covariances over the common ones; when
every query has every metric (the usual case) the two coincide.

Computed from cross-metric products of the scores, as the sufficient statistics
are (:mod:`metaeval.paired.sufficient`): for every (treatment, control) pair the
scores of all metrics, masked to the queries that pair has for each metric, form
the columns of a matrix A per block of rows, and the products A'A, A'P and P'P
(P the masks) summed over each task's blocks give every cross-metric sum at
once; there is no Python loop over metrics, tasks or systems.

**Precision.** The variables are not the two systems' scores x and y but e = x − b·y
and y, e formed query by query (from scores shifted by each system's mean, so that
the sums are centred), with b = 1 for ``md``, ``smd``, ``smcc`` and ``smcrp`` (e is
the difference d), b = x̄/ȳ for ``rom`` and the regression slope c(x, y)/c(y, y) for
``corr``; the gradients are taken with respect to e's and y's moments in closed
forms (the map is linear, so exact arithmetic gives the same ρ̂ for any b). In x and
y the delta method subtracts terms of order 1 to get one of order (s_d/s_x)² — for
near-identical systems c(d, d) = c(x, x) − 2c(x, y) + c(y, y) loses every digit, and
ρ̂ of two metrics came out as 0.697 one way and −0.0076 the other where exact
arithmetic gives −0.069 (issue 39). In e and y no term is larger than the result by
more than a small factor: ρ̂ agrees with an 80-digit computation to 1e-12 down to
differences of 1e-5 of the scores' spread (``tests/paired/test_covariance.py``), and
below that, where the differences are rounding, :func:`metaeval.effects` already
gives a NaN variance with a warning naming the group, and the covariances are NaN.
The covariance of two effects is ρ̂ times the overlap times the two effects'
standard errors, for ``md`` too.

References
----------
Gleser, L. J., & Olkin, I. (2009). Stochastically dependent effect sizes. In
H. Cooper, L. V. Hedges, & J. C. Valentine (Eds.), *The Handbook of Research
Synthesis and Meta-Analysis* (2nd ed., pp. 357–376). Russell Sage Foundation.
(no DOI)
Olkin, I., & Finn, J. D. (1990). Testing correlated correlations. *Psychological
Bulletin*, 108(2), 330–333. doi:10.1037/0033-2909.108.2.330
Olkin, I., & Finn, J. D. (1995). Correlations redux. *Psychological Bulletin*,
118(1), 155–164. doi:10.1037/0033-2909.118.1.155
Steiger, J. H. (1980). Tests for comparing elements of a correlation matrix.
*Psychological Bulletin*, 87(2), 245–251. doi:10.1037/0033-2909.87.2.245
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import xarray as xr

from .._options import DEFAULT_EFFECT, EffectType, ReplicateDesign, literal_signature
from ..engines import any_frame
from ._layout import BLOCK, Layout, add_segments, layout
from .effect_size import checked_options, effects_table
from .replicates import (
    add_replicate_covariance,
    add_replicate_variance,
    check_design_has_replicates,
    has_replicates,
    pair_variances,
    replicate_design,
)
from .sufficient import statistics_of, task_chunks

__all__ = ["effect_covariance"]

_CHUNK_BYTES = 32 * 2**20
"""Approximate bytes of the masked scores per chunk of row blocks."""

#: Result columns, in order.
COLUMNS = ("effect_type", "treatment", "control", "task", "metric", "metric_b", "n", "cov", "corr")


def _cross_sums(
    lay: Layout, left: np.ndarray, right: np.ndarray, slope: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every (left[p], right[p]) pair and task: the cross-metric sums.

    Returns ``gram`` (pair, task, 2M, 2M): Σ over the rows both metrics are paired on
    of u·w, the variables ordered e_1..e_M, y_1..y_M, with y the control's scores and
    e = x − b·y, b the ``slope`` (metric, pair, task) (1: e is the difference d);
    ``sums`` (pair, task, 2M, M): Σ u over the rows where u's metric and the second
    index's metric are paired; ``counts`` (pair, task, M, M): those rows. Shifted,
    scaled scores (see :class:`~metaeval.paired._layout.Layout`): each system's shift is
    its mean, so e is centred as y is, and e is formed per query, never recovered as
    x − b·y from sums (see the module docstring).
    """
    n_metrics = lay.values.shape[0]
    n_pairs, n_tasks = len(left), len(lay.tasks)
    nb = lay.n_blocks
    values = lay.values.reshape(n_metrics, -1, nb, BLOCK)
    mask = lay.mask.reshape(n_metrics, -1, nb, BLOCK)
    gram = np.zeros((n_pairs, n_tasks, 2 * n_metrics, 2 * n_metrics))
    sums = np.zeros((n_pairs, n_tasks, 2 * n_metrics, n_metrics))
    counts = np.zeros((n_pairs, n_tasks, n_metrics, n_metrics))
    per_block = 3 * n_metrics * n_pairs * BLOCK * 8
    step = max(1, _CHUNK_BYTES // per_block // 2)
    for sl in task_chunks(lay.block_task, step):  # memory-bounded chunks of row blocks
        paired = (mask[:, left, sl] & mask[:, right, sl]).astype(np.float64)  # (M, P, n, B)
        segment = lay.block_task[sl]
        y = values[:, right, sl] * paired
        b = slope[:, :, segment, None]  # (M, P, n, 1)
        a = np.concatenate([values[:, left, sl] * paired - b * y, y])  # e, y
        add_segments(gram, np.einsum("ipnb,jpnb->pnij", a, a), segment, axis=1)
        add_segments(sums, np.einsum("ipnb,jpnb->pnij", a, paired), segment, axis=1)
        add_segments(counts, np.einsum("ipnb,jpnb->pnij", paired, paired), segment, axis=1)
    return gram, sums, counts


def _covariances(gram, sums, counts, n_metrics: int):
    """Sample covariances of the 2M variables over the rows both variables' metrics are
    paired on, (pair, task, 2M, 2M) indexed [u of metric a, w of metric b] (for two
    variables of one metric: over that metric's rows), and those rows' counts."""
    var_metric = np.r_[np.arange(n_metrics), np.arange(n_metrics)]  # metric of each variable
    n = counts[..., var_metric[:, None], var_metric[None, :]]  # (P, T, 2M, 2M)
    sum_u = sums[..., :, var_metric]  # Σ u over the rows u's metric and w's metric share
    sum_w = np.swapaxes(sum_u, -1, -2)
    with np.errstate(invalid="ignore", divide="ignore"):
        cross = (gram - sum_u * sum_w / n) / (n - 1)
    return cross, n


def _gradients(effect: str, mean_x, mean_y, see, syy, sey, slope):
    """∂effect/∂(ē, ȳ, s_ee, s_yy, s_ey), each (..., metric), for e = x − b·y with b the
    ``slope`` (see :func:`_slopes`; 1: e is the difference d): the gradients of the
    module docstring in closed forms that keep their precision when the two systems
    nearly coincide (s_dd ≪ s_yy) or their scores are nearly proportional (r → 1)."""
    zero = np.zeros_like(see)
    diff = mean_x - mean_y
    with np.errstate(invalid="ignore", divide="ignore"):
        if effect in ("smcc", "smd"):  # D/s_d: a function of d alone
            sd = np.sqrt(see)
            return 1 / sd, zero, -diff / (2 * sd**3), zero, zero
        if effect == "smcrp":  # D/s_p, s_p² = (s_xx + s_yy)/2 = (s_dd + 2s_dy + 2s_yy)/2
            sp = np.sqrt((see + 2 * sey + 2 * syy) / 2)
            k = diff / (4 * sp**3)
            return 1 / sp, zero, -k, -2 * k, -2 * k
        if effect == "rom":  # log(ē + bȳ) − log ȳ: ∂/∂ȳ = b/x̄ − 1/ȳ = (bȳ − x̄)/(x̄ȳ)
            return 1 / mean_x, (slope * mean_y - mean_x) / (mean_x * mean_y), zero, zero, zero
        # corr: z = atanh(r), r = s_xy/√(s_xx s_yy), with s_xx = s_ee + 2b s_ey + b² s_yy,
        # s_xy = s_ey + b s_yy; 1/(1 − r²) = s_xx s_yy/det, det = s_xx s_yy − s_xy² =
        # s_ee s_yy − s_ey² (the same 2 × 2 determinant), s_ey ≈ 0 for b the regression
        # slope, so that nothing below cancels
        b = slope
        sxx = see + 2 * b * sey + b * b * syy
        q = np.sqrt(sxx * syy)
        det = see * syy - sey**2
        r = (sey + b * syy) / q
        g_ee = -r * syy / (2 * det)  # ∂z/∂s_xx
        g_ey = syy * (see + b * sey) / (q * det)  # 2b ∂z/∂s_xx + ∂z/∂s_xy
        g_yy = (b * syy * see - see * sey - 2 * b * sey**2) / (2 * q * det)
        return zero, zero, g_ee, g_yy, g_ey


def _delta_covariance(grad_a, grad_b, c, idx_a, idx_b):
    """∇_a' Cov ∇_b with Cov of the means c(·,·) and of the second moments by Isserlis.

    ``c(u, w)`` gives the covariance of variables u (of metric a) and w (of metric b);
    ``idx_a = (e_a, y_a)``, ``idx_b = (e_b, y_b)`` name them, and the gradients are
    with respect to (ē, ȳ, s_ee, s_yy, s_ey) of each metric.
    """
    (xa, ya), (xb, yb) = idx_a, idx_b
    mx_a, my_a, sxx_a, syy_a, sxy_a = grad_a
    mx_b, my_b, sxx_b, syy_b, sxy_b = grad_b
    means = (
        mx_a * mx_b * c(xa, xb)
        + mx_a * my_b * c(xa, yb)
        + my_a * mx_b * c(ya, xb)
        + my_a * my_b * c(ya, yb)
    )
    moments_a = ((sxx_a, xa, xa), (syy_a, ya, ya), (sxy_a, xa, ya))
    moments_b = ((sxx_b, xb, xb), (syy_b, yb, yb), (sxy_b, xb, yb))
    second = 0.0
    for ga, u, v in moments_a:
        for gb, w, z in moments_b:
            second = second + ga * gb * (c(u, w) * c(v, z) + c(u, z) * c(v, w))
    return means + second


@any_frame
@literal_signature
def effect_covariance(
    scores: pd.DataFrame,
    control: str | Sequence[str] | None,
    *,
    treatment: str | Sequence[str] | None = None,
    effect: EffectType = DEFAULT_EFFECT,
    correct: bool = True,
    replicates: ReplicateDesign | None = None,
) -> pd.DataFrame:
    """The sampling covariance of the effects of every pair of metrics of a task.

    Effects of several metrics measured on the same queries (nDCG@10, AP and RR;
    accuracy and F1) are not independent. This is the within-task covariance
    matrix V that a multilevel model needs (``effects.meta.pool(over=("task",
    "metric"), model="multilevel", cov=...)``), computed from the per-query scores
    instead of guessed.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table with at least one metric.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    control, treatment, effect, correct, replicates
        As in :func:`metaeval.effects`; the covariances are those of its effects (with
        ``replicates="epochs"`` nothing is added for the replicates, as there; a design
        neither given nor recorded is guessed with the same warning).

    Returns
    -------
    pandas.DataFrame
        One row per ordered pair of metrics (``metric``, ``metric_b``; the pair
        with itself included) of every (treatment, control, task) that
        :func:`metaeval.effects` has a row for with both metrics, RangeIndex,
        columns ``effect_type, treatment, control, task, metric, metric_b``;
        ``n`` (queries paired for both metrics); ``cov``, the covariance of the two
        effects (on the diagonal exactly the effect's ``variance``); ``corr``,
        cov / √(v_a v_b). ``cov`` and ``corr`` are NaN where an effect or its
        variance is (:func:`metaeval.effects` warns about those) or fewer than two
        queries are paired for both metrics. With a ``replicate`` column,
        ``cov`` also holds the replicates' part: on the diagonal exactly the
        variance :func:`metaeval.effects` gives (with its ``variance_replicates``),
        off it the covariance of the two metrics' replicate shifts (see Notes; none
        for ``"epochs"``). ``attrs`` hold ``effect`` and ``correct`` (and ``replicates``,
        the design, with a ``replicate`` column).

    Raises
    ------
    metaeval.SchemaError
        An invalid scores table.
    metaeval.PairingError
        Unknown systems, or no pair of different systems sharing a query.

    Warns
    -----
    metaeval.PairingWarning, metaeval.DegenerateWarning
        As :func:`metaeval.effects`.

    Notes
    -----
    ``md``: Cov(d̄_a, d̄_b) = n_ab · c(d_a, d_b)/(n_a n_b), with c the sample
    covariance of the per-query differences over the n_ab queries paired for both
    metrics. The other effect types: cov = ρ̂_ab √(v_a v_b) n_ab/√(n_a n_b), with
    ρ̂_ab the correlation of the two estimates by the delta method under normal
    theory (Olkin & Finn 1995; Steiger 1980 for ``corr``) and v the effects'
    variances. The delta method differentiates each effect as a function of its
    metric's means and second moments: ``smcc`` D/s_d (D = x̄ − ȳ, s_d² = s_xx +
    s_yy − 2s_xy); ``smd`` D·√(2(1 − r))/s_d with r held fixed, as its variance
    holds it (so its ρ̂ is ``smcc``'s); ``smcrp`` D/√((s_xx + s_yy)/2); ``rom``
    log x̄ − log ȳ; ``corr`` atanh(s_xy/√(s_xx s_yy)). Covariances of the means
    are the scores' covariances, those of the second moments follow Isserlis'
    theorem, Cov(s_uv, s_wz) = c(u,w)c(v,z) + c(u,z)c(v,w); the small-sample
    corrections scale an effect by a constant and leave ρ̂ unchanged.

    Replicates (a ``replicate`` column): the shift a seed gives a system's whole run is
    shared by its metrics, so their averaged shifts are correlated. Each system adds
    σ̂_rep,ab·R_ab/(R_a R_b)·√(w_a w_b) to the covariance of metrics a and b, with
    σ̂_rep,ab the method-of-moments covariance of the replicate shifts (the estimator of
    σ̂²_rep of :func:`metaeval.effects` (the guide's "Repeated runs") for two metrics, kept within
    ±√(σ̂²_rep,a σ̂²_rep,b)), R the replicates (R_ab those with both metrics) and w the
    weight that puts the scores' units on the effect's scale (1 for ``md``, as for the
    variance). A simulation (``tests/paired/test_replicates.py``) checks it.

    A simulation of 2,000
    tasks (``tests/paired/test_covariance.py``) checks that the covariance matches
    the empirical covariance of the estimates.

    Examples
    --------
    >>> import metaeval
    >>> scores = metaeval.load_example()
    >>> cov = scores.meta.effect_covariance(control="logistic_regression", treatment="knn",
    ...                                     effect="md")
    >>> cov.query("task == 'iris'")[["metric", "metric_b", "n", "cov", "corr"]].round(6)
             metric      metric_b    n       cov      corr
    8       accuracy      accuracy  150  0.000223  1.000000
    9       accuracy  p_true_class  150  0.000050  0.374639
    10  p_true_class      accuracy  150  0.000050  0.374639
    11  p_true_class  p_true_class  150  0.000079  1.000000
    """
    effect, _ = checked_options(effect, 0.05)
    lay = layout(scores)
    stats = statistics_of(lay, control=control, treatment=treatment)
    eff = effects_table(stats, pd.DataFrame(), effect=effect, alpha=0.05, correct=correct)
    # the (treatment, control) pairs of the effects table, as system indices
    lookup = pd.Series(np.arange(len(lay.systems)), index=[str(s) for s in lay.systems])
    pairs = eff[["treatment", "control"]].drop_duplicates().reset_index(drop=True)
    t_idx = pairs["treatment"].map(lookup).to_numpy()
    c_idx = pairs["control"].map(lookup).to_numpy()
    slope = _slopes(effect, stats, eff, pairs, lay)
    gram, sums, counts = _cross_sums(lay, t_idx, c_idx, slope)
    table = _assemble(lay, eff, pairs, gram, sums, counts, effect, slope)
    check_design_has_replicates(scores, replicates)
    if has_replicates(scores):  # effects() adds the replicates' variance: so does its cov
        design = replicate_design(scores, replicates)
        if design != "epochs":  # epochs: the item is the unit, nothing added (as effects())
            variances = pair_variances(stats)
            with_rep = add_replicate_variance(eff, scores, variances, 0.05, design)
            table = add_replicate_covariance(table, with_rep, scores, variances)
        table.attrs["replicates"] = design
    table.attrs.update(effect=effect, correct=correct)
    return table


def _slopes(
    effect: str, stats: xr.Dataset, eff: pd.DataFrame, pairs: pd.DataFrame, lay: Layout
) -> np.ndarray:
    """(metric, pair, task): the b of e = x − b·y, the variable of the treatment's scores
    x the delta method uses beside the control's y. Any constant gives the same
    covariance in exact arithmetic; each effect's own makes e small exactly where the
    plain sums would cancel: 1 for the standardized mean differences (e = d, small for
    near-identical systems), the regression slope c(x, y)/c(y, y) for ``corr`` (r → 1),
    x̄/ȳ for ``rom`` (x/x̄ − y/ȳ); 1 where undefined."""
    shape = (len(lay.metrics), len(pairs), len(lay.tasks))
    if effect not in ("corr", "rom"):
        return np.ones(shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        if effect == "rom":
            index = {"metric": [str(m) for m in lay.metrics], "task": [str(t) for t in lay.tasks]}
            p_of = pd.MultiIndex.from_frame(pairs).get_indexer(
                pd.MultiIndex.from_frame(eff[["treatment", "control"]])
            )
            b = np.full(shape, np.nan)
            at = (
                pd.Index(index["metric"]).get_indexer(eff["metric"]),
                p_of,
                pd.Index(index["task"]).get_indexer(eff["task"]),
            )
            b[at] = (eff["mean_treatment"] / eff["mean_control"]).to_numpy(float)
        else:
            sel = {
                "treatment": xr.DataArray(pairs["treatment"].to_numpy(), dims="pair"),
                "control": xr.DataArray(pairs["control"].to_numpy(), dims="pair"),
            }
            ds = stats[["n", "sum_x", "sum_y", "sum_yy", "sum_xy"]].sel(sel)
            ds = ds.reindex(task=[str(t) for t in lay.tasks], metric=[str(m) for m in lay.metrics])
            ds = ds.transpose("metric", "pair", "task")
            n, sx, sy = ds["n"].values.astype(float), ds["sum_x"].values, ds["sum_y"].values
            b = (ds["sum_xy"].values - sx * sy / n) / (ds["sum_yy"].values - sy * sy / n)
    return np.where(np.isfinite(b), b, 1.0)


def _assemble(lay, eff, pairs, gram, sums, counts, effect: str, slope) -> pd.DataFrame:
    """The long table from the cross sums and the effects table."""
    n_metrics, n_tasks = len(lay.metrics), len(lay.tasks)
    n_pairs = len(pairs)
    cross, n_common = _covariances(gram, sums, counts, n_metrics)
    m = np.arange(n_metrics)
    es, ys = m, m + n_metrics  # variable indices of e_m and y_m

    # the effects table as arrays (pair, task, metric)
    metric_pos = {str(name): i for i, name in enumerate(lay.metrics)}
    task_pos = {str(name): i for i, name in enumerate(lay.tasks)}
    p_of = pd.MultiIndex.from_frame(pairs).get_indexer(
        pd.MultiIndex.from_frame(eff[["treatment", "control"]])
    )
    t_of = eff["task"].map(task_pos).to_numpy()
    m_of = eff["metric"].map(metric_pos).to_numpy()
    shape = (n_pairs, n_tasks, n_metrics)
    present = np.zeros(shape, dtype=bool)
    present[p_of, t_of, m_of] = True
    arrays = {}
    for name in ("n", "effect", "variance", "mean_treatment", "mean_control"):
        arr = np.full(shape, np.nan)
        arr[p_of, t_of, m_of] = eff[name].to_numpy(float)
        arrays[name] = arr
    scale = np.broadcast_to(lay.scale.T[None], shape)  # (metric, task) -> (pair, task, metric)
    variance = arrays["variance"]
    n_own = arrays["n"]

    # c(u, w) of variable u of metric a with w of metric b, shaped (pair, task, a, b)
    def c(u, w):
        return cross[:, :, u[:, None], w[None, :]]

    # within-metric moments (own rows), as (pair, task, metric)
    own = np.diagonal(cross, axis1=2, axis2=3)  # c(v, v)
    see, syy = own[..., es], own[..., ys]
    sey = cross[:, :, es, ys]
    n_ab = n_common[:, :, es[:, None], es[None, :]]
    with np.errstate(invalid="ignore", divide="ignore"):
        if effect == "md":  # e = d: the correlation of the differences, scaled below
            rho = c(es, es) / np.sqrt(see[..., :, None] * see[..., None, :])
        else:
            grad = _gradients(
                effect,
                arrays["mean_treatment"] / scale,
                arrays["mean_control"] / scale,
                see,
                syy,
                sey,
                slope.transpose(1, 2, 0),
            )
            grad_a = tuple(g[..., :, None] for g in grad)
            grad_b = tuple(g[..., None, :] for g in grad)
            sigma_ab = _delta_covariance(grad_a, grad_b, c, (es, ys), (es, ys))
            sigma_own = np.diagonal(sigma_ab, axis1=2, axis2=3)  # Σ_aa: a with itself
            rho = sigma_ab / np.sqrt(sigma_own[..., :, None] * sigma_own[..., None, :])
        rho = np.clip(rho, -1, 1)  # rounding only: ρ is now computed without cancellation
        overlap = n_ab / np.sqrt(n_own[..., :, None] * n_own[..., None, :])
        cov = rho * overlap * np.sqrt(variance[..., :, None] * variance[..., None, :])
        # the diagonal is the effects' variance, exactly
        diag = np.arange(n_metrics)
        # NaN where either effect's variance is NaN (effects() warns about those)
        known = np.isfinite(variance[..., :, None]) & np.isfinite(variance[..., None, :])
        cov = np.where((n_ab >= 2) & known & np.isfinite(cov), cov, np.nan)
        cov[:, :, diag, diag] = variance
        corr = cov / np.sqrt(variance[..., :, None] * variance[..., None, :])

    keep = present[..., :, None] & present[..., None, :]
    p, t, a, b = np.nonzero(keep)
    table = pd.DataFrame(
        {
            "effect_type": effect,
            "treatment": pairs["treatment"].to_numpy()[p],
            "control": pairs["control"].to_numpy()[p],
            "task": np.asarray([str(x) for x in lay.tasks], dtype=object)[t],
            "metric": np.asarray([str(x) for x in lay.metrics], dtype=object)[a],
            "metric_b": np.asarray([str(x) for x in lay.metrics], dtype=object)[b],
            "n": n_ab[p, t, a, b].astype(np.int64),
            "cov": cov[p, t, a, b],
            "corr": corr[p, t, a, b],
        }
    )
    return table

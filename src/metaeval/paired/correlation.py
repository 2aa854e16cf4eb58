"""Correlation meta-evaluation: how well systems (metrics) agree with a reference, per task.

``correlation_effects()`` correlates every system's per-segment scores with a
reference system's (human judgments, say) on every task and returns Fisher's z
with its sampling variance as an effects table, so that :func:`metaeval.pool`
answers "does metric A correlate with humans across test sets?" and, with a
``control``, "does A correlate better than B?".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._options import CORRELATIONS, Correlation, add_display, literal_signature
from ..engines import any_frame
from ..errors import (
    DegenerateWarning,
    OptionError,
    PairingError,
    check_alpha,
    check_option,
    warn_groups,
)
from .effect_size import normal_inference

__all__ = ["fisher_z_variance", "correlation_effects"]


@literal_signature
def fisher_z_variance(n: Any, correlation: Correlation = "pearson") -> Any:
    """Sampling variance of Fisher's z = atanh(r) of a correlation from n pairs.

    1/(n − 3) for Pearson's r; 1.06/(n − 3) for Spearman's ρ and 0.437/(n − 4)
    for Kendall's τ (Fieller, Hartley & Pearson 1957). NaN where n ≤ 3 (n ≤ 4
    for Kendall).

    Parameters
    ----------
    n : int or array-like of int
        The number of pairs each correlation is computed from.
    correlation : {"pearson", "spearman", "kendall"}, default "pearson"
        The coefficient whose z is taken.

    Returns
    -------
    float or numpy.ndarray
        The variance, shaped as ``n``.

    References
    ----------
    Fieller, E. C., Hartley, H. O., & Pearson, E. S. (1957). Tests for rank
    correlation coefficients. I. *Biometrika*, 44(3/4), 470–481.
    doi:10.1093/biomet/44.3-4.470

    Examples
    --------
    >>> from metaeval.paired import fisher_z_variance
    >>> fisher_z_variance([13, 3], "pearson").tolist(), fisher_z_variance(14, "kendall")
    ([0.1, nan], 0.0437)
    """
    check_option("correlation", correlation, CORRELATIONS)
    n = np.asarray(n, dtype=float)
    factor, offset = {"pearson": (1.0, 3), "spearman": (1.06, 3), "kendall": (0.437, 4)}[
        correlation
    ]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(n > offset, factor / (n - offset), np.nan)
    return out.item() if out.ndim == 0 else out


def _unit_rows(a: np.ndarray) -> np.ndarray:
    """Each row divided by a power of two near its largest |value| (exact)."""
    with np.errstate(invalid="ignore"):
        top = np.nanmax(np.abs(a), axis=1, initial=0.0)
    _, exponent = np.frexp(np.where(np.isfinite(top) & (top > 0), top, 1.0))
    return np.ldexp(a, -exponent[:, None])


def _pearson(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pearson r along axis 1 over the places where both are finite."""
    both = np.isfinite(x) & np.isfinite(y)
    x, y = np.where(both, x, np.nan), np.where(both, y, np.nan)
    x, y = _unit_rows(x), _unit_rows(y)  # r is the same; squares stay finite and normal
    n = both.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = x - np.nansum(x, axis=1, keepdims=True) / n[:, None]
        dy = y - np.nansum(y, axis=1, keepdims=True) / n[:, None]
        sxx, syy = np.nansum(dx * dx, axis=1), np.nansum(dy * dy, axis=1)
        # a constant column: its spread is rounding of its own magnitude
        flat = (sxx <= 1e-24 * np.nansum(x * x, axis=1)) | (syy <= 1e-24 * np.nansum(y * y, axis=1))
        r = np.nansum(dx * dy, axis=1) / np.sqrt(sxx * syy)
    return np.clip(np.where(flat, np.nan, r), -1, 1), n


def _spearman(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from scipy.stats import rankdata

    both = np.isfinite(x) & np.isfinite(y)
    rx = rankdata(np.where(both, x, np.nan), axis=1, nan_policy="omit")
    ry = rankdata(np.where(both, y, np.nan), axis=1, nan_policy="omit")
    return _pearson(np.where(both, rx, np.nan), np.where(both, ry, np.nan))


def _kendall(
    x: np.ndarray, y: np.ndarray, budget: int = 20_000_000
) -> tuple[np.ndarray, np.ndarray]:
    """Kendall's τ-b along axis 1 (as scipy.stats.kendalltau), in chunks of bounded memory."""
    rows, q = x.shape[0], x.shape[1]
    rest = x.shape[2:]
    x2 = np.moveaxis(x, 1, -1).reshape(-1, q)
    y2 = np.moveaxis(y, 1, -1).reshape(-1, q)
    tau, n = np.full(len(x2), np.nan), np.zeros(len(x2), dtype=int)
    step = max(1, budget // max(q * q, 1))
    for start in range(0, len(x2), step):
        a, b = x2[start : start + step], y2[start : start + step]
        both = np.isfinite(a) & np.isfinite(b)
        a, b = np.where(both, a, np.nan), np.where(both, b, np.nan)
        with np.errstate(invalid="ignore"):
            sa = np.nan_to_num(np.sign(a[:, :, None] - a[:, None, :]))
            sb = np.nan_to_num(np.sign(b[:, :, None] - b[:, None, :]))
        s = (sa * sb).sum(axis=(1, 2)) / 2
        untied_a, untied_b = np.abs(sa).sum(axis=(1, 2)) / 2, np.abs(sb).sum(axis=(1, 2)) / 2
        with np.errstate(invalid="ignore", divide="ignore"):
            tau[start : start + step] = s / np.sqrt(untied_a * untied_b)
        n[start : start + step] = both.sum(axis=1)
    shape = (rows, *rest)
    return tau.reshape(shape), n.reshape(shape)


_CORR = {"pearson": _pearson, "spearman": _spearman, "kendall": _kendall}


@any_frame
@literal_signature
def correlation_effects(
    scores: pd.DataFrame,
    control: str,
    *,
    reference: str | None = None,
    correlation: Correlation = "pearson",
    treatment: str | Sequence[str] | None = None,
    alpha: float = 0.05,
) -> pd.DataFrame:
    r"""Per-task correlation of systems with a reference, as an effects table for ``pool()``.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table. On each task and metric, a system's values over the
        queries (segments) are correlated with the reference's values on the
        same queries.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    control : str
        What each treatment is compared with: the system holding the reference scores
        (e.g. ``"human"``), or with ``reference`` a system whose correlation with the
        reference each treatment's is compared with.
    reference : str, optional
        The system holding the reference scores, when ``control`` is another system:
        the effect is then z_treatment − z_control on the queries all three systems
        share. None: ``control`` is the reference.
    correlation : {"pearson", "spearman", "kendall"}, default "pearson"
        Pearson's r, Spearman's ρ (average ranks for ties) or Kendall's τ-b.
    treatment : str or list of str, optional
        The systems to correlate; default: every system but the reference and
        the control.
    alpha : float, default 0.05
        Intervals have level 1 − alpha.

    Returns
    -------
    pandas.DataFrame
        One row per ``(metric, treatment, task)``, columns ``metric, treatment,
        control, task, effect_type, correlation, n, effect, variance, se, z, ci_low,
        ci_high, p_value``, on Fisher's z scale. Without ``reference``:
        ``control`` is the reference, ``effect_type = "corr"`` and ``r,
        r_ci_low, r_ci_high`` give the coefficient and its interval (tanh of
        the z interval), so :func:`metaeval.pool` reports the summary as a
        correlation too. With ``reference``: ``effect_type = "corr_diff"``,
        ``reference``, and the three coefficients ``r_treatment, r_control,
        r_between``.

    Raises
    ------
    metaeval.PairingError
        When ``reference``, ``control`` or a treatment is not a system.
    metaeval.OptionError
        For an unknown ``correlation``, or ``reference`` with ``correlation="kendall"``.

    Warns
    -----
    metaeval.DegenerateWarning
        Naming the groups whose effect is NaN: too few shared queries (n ≤ 3;
        n ≤ 4 for Kendall), a constant system (r undefined) or abs(r) = 1.

    Notes
    -----
    z = atanh(r) with variance 1/(n − 3) (Pearson), 1.06/(n − 3) (Spearman)
    or 0.437/(n − 4) (Kendall), after Fieller, Hartley & Pearson (1957); see
    :func:`fisher_z_variance`. Without ``reference``, ``correlation="pearson"`` gives
    the same effects as :func:`metaeval.effects` with ``effect="corr"`` and the same
    ``control``.

    The difference of two correlations with the same reference is not a
    difference of independent estimates: z_A − z_B has variance
    2(1 − r_AB)·h/(n − 3), h = (1 − f·r̄²)/(1 − r̄²), f = min(1, (1 − r_AB)/(2(1 − r̄²))),
    r̄² = (r_A² + r_B²)/2 (Meng, Rosenthal & Rubin 1992), with r_AB the
    correlation of A and B. For Spearman's ρ the same formula is used on the
    ρ's and scaled by 1.06, an approximation that the tests check by
    simulation; no such result is established for Kendall's τ, which is
    therefore refused with a control.

    References
    ----------
    Meng, X.-L., Rosenthal, R., & Rubin, D. B. (1992). Comparing correlated
    correlation coefficients. *Psychological Bulletin*, 111(1), 172–175.
    doi:10.1037/0033-2909.111.1.172
    Fieller, E. C., Hartley, H. O., & Pearson, E. S. (1957). Tests for rank
    correlation coefficients. I. *Biometrika*, 44(3/4), 470–481.
    doi:10.1093/biomet/44.3-4.470

    Examples
    --------
    >>> import metaeval
    >>> from metaeval.paired import correlation_effects
    >>> scores = metaeval.load_example().query("metric == 'p_true_class'")
    >>> eff = correlation_effects(scores, "logistic_regression", correlation="spearman",
    ...                           treatment="knn")
    >>> eff[["task", "n", "r", "effect", "variance"]].round(4)
                task     n       r  effect  variance
    0  breast_cancer   569  0.5200  0.5763    0.0019
    1         digits  1797  0.3630  0.3804    0.0006
    2           iris   150  0.5959  0.6868    0.0072
    3           wine   178  0.5168  0.5719    0.0061
    """

    from ..schema import prepare_scores

    check_option("correlation", correlation, CORRELATIONS)
    alpha = check_alpha(alpha)
    # below, `control` is the system compared with the reference's correlation (None: none)
    reference, control = (control, None) if reference is None else (reference, control)
    if control is not None and correlation == "kendall":
        raise OptionError(
            "Comparing correlations (`reference`) is available for pearson and spearman only; "
            "no variance of a difference of dependent Kendall taus is established."
        )
    scores = prepare_scores(scores)
    systems = list(pd.unique(scores["system"]))
    named = [reference] + ([control] if control is not None else [])
    chosen = [treatment] if isinstance(treatment, str) else list(treatment or [])
    unknown = [s for s in named + chosen if s not in systems]
    if unknown:
        raise PairingError(f"System(s) {unknown} are not in the scores table; it has {systems}.")
    if not chosen:
        chosen = [s for s in systems if s not in named]
    if not chosen:
        raise PairingError(
            f"No system to correlate with {reference!r}: the table only has {systems}."
        )

    wide = scores.set_index(["metric", "task", "query", "system"])["value"].unstack("system")
    groups = wide.index.droplevel("query")
    g = pd.MultiIndex.from_arrays([groups.get_level_values(0), groups.get_level_values(1)])
    code, uniques = pd.factorize(g)
    row = pd.Series(code).groupby(code).cumcount().to_numpy()
    cube = np.full((len(uniques), int(row.max()) + 1, wide.shape[1]), np.nan)
    cube[code, row] = wide.to_numpy(dtype=float)  # (groups, queries, systems)
    col = {s: i for i, s in enumerate(wide.columns)}
    ref = cube[:, :, col[reference]][:, :, None]
    x = cube[:, :, [col[s] for s in chosen]]
    corr = _CORR[correlation]
    if control is None:
        r, n = corr(x, np.broadcast_to(ref, x.shape))
        with np.errstate(invalid="ignore", divide="ignore"):
            effect = np.where(np.abs(r) < 1, np.arctanh(r), np.nan)
        variance = fisher_z_variance(n, correlation)
        extra: dict[str, Any] = {}
    else:
        c = cube[:, :, col[control]][:, :, None]
        shared = np.isfinite(x) & np.isfinite(ref) & np.isfinite(c)
        xs = np.where(shared, x, np.nan)
        rs_, cs = np.where(shared, ref, np.nan), np.where(shared, c, np.nan)
        r_t, n = corr(xs, rs_)
        r_c, _ = corr(cs, rs_)
        r_tc, _ = corr(xs, cs)
        with np.errstate(invalid="ignore", divide="ignore"):
            effect = np.where(
                (np.abs(r_t) < 1) & (np.abs(r_c) < 1), np.arctanh(r_t) - np.arctanh(r_c), np.nan
            )
            mean_sq = (r_t**2 + r_c**2) / 2
            f = np.minimum(1.0, (1 - r_tc) / (2 * (1 - mean_sq)))
            h = (1 - f * mean_sq) / (1 - mean_sq)
            variance = 2 * (1 - r_tc) * h * fisher_z_variance(n, correlation)
            variance = np.where(variance > 0, variance, np.nan)
        extra = {"r_treatment": r_t, "r_control": r_c, "r_between": r_tc}
    se = np.sqrt(variance)
    metric_of, task_of = uniques.get_level_values(0), uniques.get_level_values(1)
    grid_g, grid_t = np.meshgrid(np.arange(len(uniques)), np.arange(len(chosen)), indexing="ij")
    gi, ti = grid_g.ravel(), grid_t.ravel()
    table = pd.DataFrame(
        {
            "metric": np.asarray(metric_of)[gi],
            "treatment": np.asarray(chosen)[ti],
            "control": reference if control is None else control,
            "task": np.asarray(task_of)[gi],
            "effect_type": "corr" if control is None else "corr_diff",
            "correlation": correlation,
            "n": n.ravel().astype(int),
        }
    )
    if control is not None:
        table.insert(4, "reference", reference)
        for name, values in extra.items():
            table[name] = values.ravel()
    inference = normal_inference(effect.ravel(), se.ravel(), alpha)
    table = table.assign(effect=effect.ravel(), variance=np.asarray(variance).ravel(), **inference)
    order = np.lexsort((gi, ti, pd.factorize(table["metric"])[0]))  # metric, treatment, task
    table = table.iloc[order]
    table = table[table["n"] > 0].reset_index(drop=True)
    if control is None:
        add_display(table, ["effect", "ci_low", "ci_high"])
    bad = table["effect"].isna()
    if bad.any():
        warn_groups(
            "{n} correlation effect(s) are NaN (too few shared queries, "
            "a constant system, or |r| = 1)",
            table.loc[bad, ["metric", "treatment", "task", "n"]],
            DegenerateWarning,
        )
    return table

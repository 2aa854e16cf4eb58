"""How much judges agree: Krippendorff's α, Cohen's, Fleiss' κ, Gwet's AC1 and the ICCs,
per task and metric, with bootstrap intervals over items or clusters of items.

Every coefficient is a function of sums over units (a unit is one output a judge labels:
a ``(query, system)`` pair, with its ``replicate`` where there is one), so one sparse
matrix holds each unit's terms and a bootstrap resample is one matrix product: a count per
unit times that matrix gives every group's sums, for a block of resamples at once. With
``cluster=`` the units' terms are added up per cluster first and the clusters resampled
(the sums are the same; only what is drawn changes).

References
----------
Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School
for Communication Departmental Papers 43.
Cohen, J. (1968). Weighted kappa. *Psychological Bulletin*, 70(4), 213–220.
Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters.
*Psychological Bulletin*, 76(5), 378–382.
Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence
of high agreement. *British Journal of Mathematical and Statistical Psychology*, 61, 29–48.
Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations: uses in assessing rater
reliability. *Psychological Bulletin*, 86(2), 420–428.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._options import (
    AGREEMENT_COEFFICIENTS,
    KAPPA_WEIGHTS,
    LEVELS,
    AgreementCoefficient,
    KappaWeights,
    Level,
    literal_signature,
)
from ..engines import any_frame
from ..errors import (
    DegenerateWarning,
    OptionError,
    SchemaError,
    check_alpha,
    check_option,
    check_resamples,
    excerpt,
    quote_list,
    resolve_seed,
    warn_groups,
)
from ._units import (
    JUDGE,
    Units,
    bootstrap,
    check_labels,
    dense,
    require_judges,
    spread,
    stack,
    unit_matrix,
)
from .results import AgreementResult

__all__ = ["agreement"]

_CATEGORICAL = {"kappa", "fleiss", "ac1"}
_COMPLETE = {"fleiss", "icc2", "icc3"}  # units every judge labelled
_MAX_CATEGORIES = 100  # labels of a categorical coefficient; more look like scores
_MAX_RATIO_VALUES = 2000  # ratio α: a values × values table per group


@any_frame
@literal_signature
def agreement(
    scores: pd.DataFrame,
    judges: Sequence[str] | None = None,
    *,
    level: Level = "nominal",
    coefficient: AgreementCoefficient = "alpha",
    weights: KappaWeights | None = None,
    per_system: bool = False,
    cluster: str | None = None,
    alpha: float = 0.05,
    n_resamples: int = 1000,
    seed: int | None = None,
) -> AgreementResult:
    """How much the judges of a scores table agree, per task and metric, with intervals.

    Parameters
    ----------
    scores : pandas.DataFrame
        Per-query labels with a ``judge`` column (who labelled the row: rename yours to
        ``judge``): ``task, query, system, metric, judge, value``, one row per label
        (a label a judge did not give is an absent row). A unit is one ``(query,
        system)`` output (with its ``replicate``, where there is one).
        Any frame: pandas, polars, a pyarrow Table or a DuckDB relation.
    judges : sequence of str, optional
        The judges to compare, in this order (Cohen's κ: exactly two); default all.
    level : {"nominal", "ordinal", "interval", "ratio"}, default "nominal"
        The level of measurement of the labels (Krippendorff's α; the difference
        function δ²: unequal, rank distance through the label counts, (c − k)²,
        ((c − k)/(c + k))²). Ratio labels must be ≥ 0.
    coefficient : {"alpha", "kappa", "fleiss", "ac1", "icc2", "icc3"}, default "alpha"
        Krippendorff's α (any number of judges, missing labels allowed: units with
        one label are not pairable and left out, as Krippendorff defines it);
        Cohen's κ (two judges, units both labelled; scikit-learn's
        ``cohen_kappa_score``); Fleiss' κ (units every judge labelled; statsmodels'
        ``fleiss_kappa``); Gwet's AC1 (missing labels allowed: agreement over units
        with two labels or more, category shares over units with one or more, as
        Gwet 2014 and irrCAC); ICC(2,1) (two-way random, absolute agreement) and
        ICC(3,1) (two-way mixed, consistency) of Shrout & Fleiss (1979), from the
        two-way ANOVA of the units every judge labelled, the labels as numbers.
    weights : {"linear", "quadratic"}, optional
        Cohen's weighted κ, on the order of the categories (as scikit-learn's).
    per_system : bool, default False
        One coefficient per system too (task, metric, system), not over all systems'
        outputs.
    cluster : str, optional
        A column whose value is shared by related queries (the passage of several
        questions): the bootstrap draws clusters instead of units.
    alpha : float, default 0.05
        1 − the confidence level of the percentile bootstrap intervals.
    n_resamples : int, default 1000
        Bootstrap resamples (of units, or of clusters); 0 for no interval.
    seed : int, optional
        The random seed (fresh entropy when None, reported in ``attrs``).

    Returns
    -------
    AgreementResult
        ``table``: per group (``task, metric``, and ``system`` with
        ``per_system``) ``coefficient, level, agreement, se, ci_low, ci_high,
        n_units`` (units used), ``n_labels`` (their labels), ``n_judges``;
        ``pairs``: the coefficient of every two judges (``judge_a, judge_b,
        agreement, n_units``); ``.plot()`` draws the pairs as a heatmap and
        ``.pool()`` pools the coefficient over tasks on Fisher's z scale.

    Notes
    -----
    The interval is the percentile interval of the coefficient over resamples of units
    drawn with replacement within each task (or of clusters); ``se`` is their standard
    deviation. A coefficient whose expected disagreement is 0 (labels that never vary)
    is NaN with a :class:`~metaeval.DegenerateWarning` naming the group.

    Examples
    --------
    >>> import metaeval, pandas as pd
    >>> labels = pd.DataFrame({
    ...     "task": "qa", "metric": "correct", "system": "m1",
    ...     "query": [f"q{i}" for i in range(6)] * 3,
    ...     "judge": ["gpt"] * 6 + ["claude"] * 6 + ["human"] * 6,
    ...     "value": [1, 1, 0, 0, 1, 0] + [1, 1, 0, 1, 1, 0] + [1, 1, 0, 0, 1, 1]})
    >>> res = metaeval.agreement(labels, n_resamples=0)
    >>> res.table[["task", "coefficient", "agreement", "n_units"]].round(3)
      task coefficient  agreement  n_units
    0   qa       alpha      0.558        6
    """
    check_option("level", level, LEVELS)
    check_option("coefficient", coefficient, AGREEMENT_COEFFICIENTS)
    if weights is not None:
        check_option("weights", weights, KAPPA_WEIGHTS)
        if coefficient != "kappa":
            raise OptionError(
                f"`weights` weighs Cohen's κ (coefficient='kappa'), not {coefficient!r}: "
                "for ordered labels use coefficient='alpha' with level='ordinal' or 'interval'."
            )
    alpha = check_alpha(alpha)
    n_resamples = check_resamples(n_resamples, minimum=0)
    seed = resolve_seed(seed)
    table = check_labels(scores, judges, cluster, what="agreement")
    require_judges(table, 2, "agreement")
    if coefficient == "kappa":
        names = list(judges) if judges is not None else list(pd.unique(table[JUDGE]))
        if len(names) != 2:
            raise OptionError(
                f"Cohen's κ compares two judges, but {len(names)} are given "
                f"({quote_list(names)}): pass judges=[a, b], or use coefficient='fleiss', "
                "'ac1' or 'alpha' for more."
            )
    keys = ["task", "metric", "system"] if per_system else ["task", "metric"]
    units = Units.of(table, keys, cluster)
    _check_level(units, table, level, coefficient)
    kernel = _kernel(coefficient, level, weights, units)
    point = kernel.finish(kernel.sums(units, np.ones((1, units.n)))[None])[0]
    out = units.groups.copy()
    out["coefficient"] = coefficient
    out["level"] = level
    out["agreement"] = point[0]
    out["se"], out["ci_low"], out["ci_high"] = np.nan, np.nan, np.nan
    if n_resamples:
        matrix = kernel.matrix(units)
        draws = bootstrap(units, matrix, kernel.width, kernel.finish, n_resamples, seed)
        out["se"], out["ci_low"], out["ci_high"] = spread(draws, alpha)
    out["n_units"], out["n_labels"] = kernel.used(units)
    out["n_judges"] = units.n_judges
    bad = ~np.isfinite(point[0])
    if bad.any():
        warn_groups(
            f"agreement ({coefficient}) is undefined (NaN) in {{n}} group(s): their labels "
            "never vary, or no unit has the labels the coefficient needs",
            out.loc[bad, keys],
            DegenerateWarning,
        )
    pairs = _pairs(units, keys, coefficient, level, weights)
    out.attrs.update(
        coefficient=coefficient,
        level=level,
        weights=weights,
        alpha=alpha,
        n_resamples=n_resamples,
        seed=seed,
        cluster=cluster,
    )
    return AgreementResult(out.reset_index(drop=True), pairs=pairs)


def _check_level(units: Units, table: pd.DataFrame, level: str, coefficient: str) -> None:
    """Labels the level and the coefficient can take: categories for the categorical
    coefficients and α's nominal and ordinal levels, non-negative numbers for ratio."""
    categorical = coefficient in _CATEGORICAL or (
        coefficient == "alpha" and level in ("nominal", "ordinal")
    )
    present = np.zeros((len(units.starts), len(units.categories)), dtype=bool)
    has = units.codes >= 0
    present[np.repeat(units.group, has.sum(axis=1)), units.codes[has]] = True
    many = present.sum(axis=1) > _MAX_CATEGORIES
    if categorical and many.any():
        where = units.groups.iloc[int(np.flatnonzero(many)[0])].to_dict()
        raise OptionError(
            f"{coefficient!r} (level={level!r}) treats labels as categories, but "
            f"{excerpt(where, 200)} has {int(present[many][0].sum())} distinct labels (at most "
            f"{_MAX_CATEGORIES}): scores call for level='interval' or coefficient='icc2'."
        )
    if level == "ratio" and coefficient == "alpha":
        if (units.categories < 0).any():
            bad = table[table["value"] < 0].iloc[0]
            raise SchemaError(
                f"level='ratio' needs labels ≥ 0, but judge {excerpt(bad[JUDGE])} gave "
                f"{bad['value']} (task {excerpt(bad['task'])}); use level='interval'."
            )
        if len(units.categories) > _MAX_RATIO_VALUES:
            raise OptionError(
                f"level='ratio' compares every two distinct labels: {len(units.categories)} "
                f"of them is more than {_MAX_RATIO_VALUES}; round them or use level='interval'."
            )


# ---------------------------------------------------------------------------- the kernels
@dataclass(frozen=True)
class _Kernel:
    """A coefficient as sums over units: ``terms`` builds each unit's terms (rows: units,
    columns: ``width`` terms) and ``finish`` the coefficient from the sums (…, group,
    term)."""

    width: int
    terms: Callable[[Units], tuple[np.ndarray, np.ndarray, np.ndarray]]  # unit, term, value
    finish: Callable[[np.ndarray], np.ndarray]
    count: Callable[[Units], tuple[np.ndarray, np.ndarray]]  # the units and labels used

    def matrix(self, units: Units) -> Any:
        """Each unit's terms in its group's columns: a sparse (unit, group·term) matrix."""
        return unit_matrix(units, self.width, *self.terms(units))

    def sums(self, units: Units, counts: np.ndarray, matrix: Any = None) -> np.ndarray:
        """(resample, group, term) sums of the units' terms, each unit ``counts`` times."""
        m = self.matrix(units) if matrix is None else matrix
        flat = np.asarray((m.T @ counts.T).T)
        return flat.reshape(len(counts), len(units.starts), self.width)

    def used(self, units: Units) -> tuple[np.ndarray, np.ndarray]:
        return self.count(units)


def _kernel(coefficient: str, level: str, weights: str | None, units: Units) -> _Kernel:
    n_cat = len(units.categories)
    if coefficient == "alpha":
        return _alpha(level, units)
    if coefficient == "kappa":
        return _kappa(weights, units)
    if coefficient == "fleiss":
        return _fleiss(n_cat)
    if coefficient == "ac1":
        return _ac1(units)
    return _icc(coefficient, units.codes.shape[1])


def _label_counts(units: Units, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per unit of ``mask``: the number of its labels of each category (unit, category)."""
    counts = np.zeros((units.n, len(units.categories)))
    has = (units.codes >= 0) & mask[:, None]
    np.add.at(counts, (np.nonzero(has)[0], units.codes[has]), 1.0)
    return counts, has.sum(axis=1)


def _pairable(units: Units) -> np.ndarray:
    return (units.codes >= 0).sum(axis=1) >= 2


def _labels_used(mask: Callable[[Units], np.ndarray]) -> Callable[[Units], tuple[Any, Any]]:
    def count(units: Units) -> tuple[np.ndarray, np.ndarray]:
        m = mask(units)
        labels = ((units.codes >= 0) & m[:, None]).sum(axis=1)
        return (
            np.add.reduceat(m.astype(np.int64), units.starts),
            np.add.reduceat(labels, units.starts),
        )

    return count


def _alpha(level: str, units: Units) -> _Kernel:
    """Krippendorff's α = 1 − (n − 1) Σ_u Σ_{i≠j∈u} δ²(x_i, x_j)/(m_u − 1) / Σ_{i,j} δ²(x_i, x_j)
    over the pairable labels (units with two or more), n of them."""
    c = len(units.categories)
    values = units.categories
    if level == "interval":
        width = 4  # m, observed, Σx, Σx²

        def terms(u: Units) -> tuple[np.ndarray, ...]:
            ok = _pairable(u)
            x = np.where(u.codes >= 0, u.values, 0.0)[ok]
            m = (u.codes[ok] >= 0).sum(axis=1).astype(float)
            s, ss = x.sum(axis=1), (x**2).sum(axis=1)
            observed = 2 * (m * ss - s**2) / (m - 1)
            rows = np.flatnonzero(ok)
            block = np.column_stack([m, observed, s, ss])
            return tuple(
                np.concatenate(p)
                for p in zip(
                    *[(rows, np.full(len(rows), t), block[:, t]) for t in range(width)], strict=True
                )
            )

        def finish(s: np.ndarray) -> np.ndarray:
            n = s[..., 0]
            expected = 2 * (n * s[..., 3] - s[..., 2] ** 2)
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(expected > 0, 1 - (n - 1) * s[..., 1] / expected, np.nan)

        return _Kernel(width, terms, finish, _labels_used(_pairable))
    if level == "ordinal":
        width = 1 + c * c + c  # n, the coincidences, the category counts
    else:
        width = 2 + c  # n, observed, the category counts
    if level == "ratio":
        with np.errstate(invalid="ignore", divide="ignore"):
            delta = ((values[:, None] - values[None, :]) / (values[:, None] + values[None, :])) ** 2
        delta = np.nan_to_num(delta)  # 0/0 at c = k = 0
    else:
        delta = 1.0 - np.eye(c)  # nominal

    def terms(u: Units) -> tuple[np.ndarray, ...]:
        ok = _pairable(u)
        counts, m = _label_counts(u, ok)
        rows = np.flatnonzero(ok)
        counts, m = counts[ok], m[ok].astype(float)
        # the unit's coincidences: n_c n_k − [c = k] n_c over m − 1
        if level == "ordinal":
            pairs = counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(c)
            pairs = (pairs / (m - 1)[:, None, None]).reshape(len(rows), c * c)
            return stack(
                (rows, np.zeros(len(rows), int), m),
                dense(rows, pairs, 1),
                dense(rows, counts, 1 + c * c),
            )
        own = counts @ delta  # Σ_k n_k δ(c, k), per category c
        observed = (counts * own).sum(axis=1) / (m - 1)  # δ(c, c) = 0: no [c = k] term
        return stack(
            (rows, np.zeros(len(rows), int), m),
            (rows, np.ones(len(rows), int), observed),
            dense(rows, counts, 2),
        )

    def finish(s: np.ndarray) -> np.ndarray:
        n = s[..., 0]
        if level == "ordinal":
            coinc = s[..., 1 : 1 + c * c].reshape(*s.shape[:-1], c, c)
            nc = s[..., 1 + c * c :]
            cum = np.cumsum(nc, axis=-1)
            # δ(c, k) = (Σ_{g=c..k} n_g − (n_c + n_k)/2)², c ≤ k
            lo, hi = (
                np.minimum.outer(np.arange(c), np.arange(c)),
                np.maximum.outer(np.arange(c), np.arange(c)),
            )
            between = cum[..., hi] - cum[..., lo] + nc[..., lo]
            d = (between - (nc[..., :, None] + nc[..., None, :]) / 2) ** 2
            observed = (coinc * d).sum(axis=(-1, -2))
            expected = np.einsum("...c,...ck,...k->...", nc, d, nc)
        else:
            nc = s[..., 2:]
            observed = s[..., 1]
            expected = np.einsum("...c,ck,...k->...", nc, delta, nc)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(expected > 0, 1 - (n - 1) * observed / expected, np.nan)

    return _Kernel(width, terms, finish, _labels_used(_pairable))


def _category_positions(units: Units, mask: np.ndarray) -> np.ndarray:
    """(group, category): the category's position among the group's categories that
    ``mask``'s units use (scikit-learn weighs κ by these), −1 where absent."""
    present = np.zeros((len(units.starts), len(units.categories)), dtype=bool)
    has = (units.codes >= 0) & mask[:, None]
    present[np.repeat(units.group, has.sum(axis=1)), units.codes[has]] = True
    return np.where(present, np.cumsum(present, axis=1) - 1, -1)


def _kappa(weights: str | None, units: Units) -> _Kernel:
    """Cohen's κ = 1 − Σ w O / Σ w E of the two judges' confusion table O and its
    expectation E from the margins, on the units both labelled."""
    c = len(units.categories)
    width = 1 + c * c

    def both(u: Units) -> np.ndarray:
        return (u.codes >= 0).all(axis=1)

    pos = _category_positions(units, both(units)).astype(float)
    if weights is None:
        w = 1.0 - (pos[:, :, None] == pos[:, None, :])  # (group, c, k)
    else:
        gap = np.abs(pos[:, :, None] - pos[:, None, :])
        w = gap if weights == "linear" else gap**2

    def terms(u: Units) -> tuple[np.ndarray, ...]:
        ok = both(u)
        rows = np.flatnonzero(ok)
        cell = u.codes[ok, 0] * c + u.codes[ok, 1]
        one = np.ones(len(rows))
        return stack((rows, np.zeros(len(rows), int), one), (rows, 1 + cell, one))

    def finish(s: np.ndarray) -> np.ndarray:
        n = s[..., 0]
        table = s[..., 1:].reshape(*s.shape[:-1], c, c)
        expected = table.sum(axis=-1)[..., :, None] * table.sum(axis=-2)[..., None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            expected = expected / n[..., None, None]
            ww = np.nan_to_num(w)
            num = (ww * table).sum(axis=(-1, -2))
            den = (ww * expected).sum(axis=(-1, -2))
            return np.where(den > 0, 1 - num / den, np.nan)

    return _Kernel(width, terms, finish, _labels_used(both))


def _complete(u: Units) -> np.ndarray:
    """Units labelled by every judge of their group."""
    labelled = (u.codes >= 0).sum(axis=1)
    return labelled == u.n_judges[u.group]


def _fleiss(c: int) -> _Kernel:
    """Fleiss' κ = (P̄ − P_e) / (1 − P_e) over the units every judge labelled."""
    width = 2 + c  # units, Σ P_i, category counts

    def terms(u: Units) -> tuple[np.ndarray, ...]:
        ok = _complete(u) & _pairable(u)
        counts, m = _label_counts(u, ok)
        rows = np.flatnonzero(ok)
        counts, m = counts[ok], m[ok].astype(float)
        agree = ((counts**2).sum(axis=1) - m) / (m * (m - 1))
        return stack(
            (rows, np.zeros(len(rows), int), np.ones(len(rows))),
            (rows, np.ones(len(rows), int), agree),
            dense(rows, counts, 2),
        )

    def finish(s: np.ndarray) -> np.ndarray:
        n, total = s[..., 0], s[..., 2:]
        with np.errstate(invalid="ignore", divide="ignore"):
            p_bar = s[..., 1] / n
            share = total / total.sum(axis=-1, keepdims=True)
            p_e = (share**2).sum(axis=-1)
            return np.where(p_e < 1, (p_bar - p_e) / (1 - p_e), np.nan)

    return _Kernel(width, terms, finish, _labels_used(lambda u: _complete(u) & _pairable(u)))


def _ac1(units: Units) -> _Kernel:
    """Gwet's AC1 = (p_a − p_e) / (1 − p_e), p_e = Σ_c π_c (1 − π_c) / (q − 1) over the
    group's q categories."""
    c = len(units.categories)
    width = 3 + c  # pairable units, Σ agreement, rated units, Σ n_uc / r_u
    rated = (units.codes >= 0).any(axis=1)
    q = (_category_positions(units, rated) >= 0).sum(axis=1).astype(float)  # per group

    def terms(u: Units) -> tuple[np.ndarray, ...]:
        ok = (u.codes >= 0).any(axis=1)
        counts, r = _label_counts(u, ok)
        rows = np.flatnonzero(ok)
        counts, r = counts[ok], r[ok].astype(float)
        two = r >= 2
        with np.errstate(invalid="ignore", divide="ignore"):
            agree = np.where(two, (counts * (counts - 1)).sum(axis=1) / (r * (r - 1)), 0.0)
        return stack(
            (rows, np.zeros(len(rows), int), two.astype(float)),
            (rows, np.ones(len(rows), int), agree),
            (rows, np.full(len(rows), 2), np.ones(len(rows))),
            dense(rows, counts / r[:, None], 3),
        )

    def finish(s: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            p_a = s[..., 1] / s[..., 0]
            pi = s[..., 3:] / s[..., 2][..., None]
            p_e = (pi * (1 - pi)).sum(axis=-1) / (q - 1)
            return np.where((q > 1) & (p_e < 1), (p_a - p_e) / (1 - p_e), np.nan)

    return _Kernel(width, terms, finish, _labels_used(lambda u: (u.codes >= 0).any(axis=1)))


def _icc(coefficient: str, n_judges: int) -> _Kernel:
    """ICC(2,1) and ICC(3,1) from the two-way ANOVA of the units every judge labelled."""
    j = n_judges
    width = 4 + j  # units, Σ row sums², Σ x², Σ x, then each judge's column sum

    def terms(u: Units) -> tuple[np.ndarray, ...]:
        ok = _complete(u) & _pairable(u)
        rows = np.flatnonzero(ok)
        x = np.where(u.codes >= 0, u.values, 0.0)[ok]
        block = np.column_stack(
            [np.ones(len(rows)), x.sum(axis=1) ** 2, (x**2).sum(axis=1), x.sum(axis=1), x]
        )
        return dense(rows, np.where(block == 0, 0.0, block), 0)

    def finish(s: np.ndarray) -> np.ndarray:
        n, rows2, xx, total, cols = s[..., 0], s[..., 1], s[..., 2], s[..., 3], s[..., 4:]
        k = (cols != 0).sum(axis=-1).astype(float)  # the group's judges (a zero sum aside)
        k = np.where(k > 0, np.maximum(k, 2), np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            grand = total**2 / (n * k)
            ss_rows = rows2 / k - grand
            ss_cols = (cols**2).sum(axis=-1) / n - grand
            ss_err = xx - grand - ss_rows - ss_cols
            msr, msc = ss_rows / (n - 1), ss_cols / (k - 1)
            mse = ss_err / ((n - 1) * (k - 1))
            if coefficient == "icc3":
                return (msr - mse) / (msr + (k - 1) * mse)
            return (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)

    return _Kernel(width, terms, finish, _labels_used(lambda u: _complete(u) & _pairable(u)))


# ---------------------------------------------------------------------------- judge pairs
def _pairs(
    units: Units, keys: list[str], coefficient: str, level: str, weights: str | None
) -> pd.DataFrame:
    """The coefficient of every two judges, per group: each pair's labels as a group of
    their own (one computation for all pairs)."""
    pairs, judge_a, judge_b = units.judge_pairs()
    kernel = _kernel(coefficient, level, weights, pairs)
    with np.errstate(invalid="ignore"):
        point = kernel.finish(kernel.sums(pairs, np.ones((1, pairs.n))))[0]
    out = pairs.groups.assign(judge_a=judge_a, judge_b=judge_b, agreement=point)
    out["n_units"] = kernel.used(pairs)[0]
    return out.reset_index(drop=True)

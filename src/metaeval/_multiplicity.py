"""Adjusting p-values for multiple comparisons, within families of tests.

Used by :func:`metaeval.compare` and :func:`metaeval.pool` (``adjust=``) and the
``metaeval compare --adjust`` command; public as :func:`adjust_pvalues`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._options import ADJUSTMENTS, Adjustment, literal_signature
from .errors import check_option

__all__ = ["adjust_pvalues", "adjust_in_table"]

PVALUE_ADJUSTMENTS = tuple(a for a in ADJUSTMENTS if a != "maxt")
"""The adjustments computed from p-values alone (every one but ``"maxt"``)."""


def check_adjustment(name: str, value: Any, where: str) -> None:
    """Check an adjustment of p-values alone: one of :data:`PVALUE_ADJUSTMENTS`.

    ``"maxt"`` gets its own :class:`~metaeval.OptionError`, which says why ``where``
    cannot take it and what to use instead.
    """
    if value == "maxt":
        from .errors import OptionError

        raise OptionError(
            f"`{name}`='maxt' (Westfall–Young max-T) is not available in {where}: it needs "
            "the randomization test's resampled statistics of every test of a family, not "
            "their p-values. Use compare(..., test='randomization', adjust='maxt') on the "
            f"scores, or `{name}` one of {list(PVALUE_ADJUSTMENTS)} here."
        )
    check_option(name, value, PVALUE_ADJUSTMENTS)


@literal_signature
def adjust_pvalues(p: Any, adjust: Adjustment = "holm", *, families: Any = None) -> np.ndarray:
    """Adjusted p-values, within each family; equal to statsmodels' ``multipletests``.

    Parameters
    ----------
    p : array-like of float
        The p-values. NaN p-values stay NaN and are not counted.
    adjust : {"holm", "bonferroni", "fdr_bh"}, default "holm"
        ``"maxt"`` raises an :class:`~metaeval.OptionError`: max-T needs the
        resamples of a randomization test (:func:`metaeval.compare`), not p-values.
        ``bonferroni``: min(1, m p); ``holm``: step-down
        max_{j≤i} min(1, (m − j + 1) p_(j)); ``fdr_bh`` (Benjamini–Hochberg):
        step-up min_{j≥i} min(1, p_(j) / (j/m)); m the number of non-NaN
        p-values in the family, p_(j) the j-th smallest.
    families : array-like, optional
        A label per p-value; each family is adjusted on its own. None: one
        family.

    Returns
    -------
    numpy.ndarray
        The adjusted p-values, in the order of ``p``.

    Examples
    --------
    >>> from metaeval import adjust_pvalues
    >>> adjust_pvalues([0.01, 0.04, 0.03], "holm").round(4).tolist()
    [0.03, 0.06, 0.06]
    >>> adjust_pvalues([0.01, 0.04, 0.03, 0.2], "bonferroni", families=["a", "a", "b", "b"]).tolist()
    [0.02, 0.08, 0.06, 0.4]

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure.
    *Scandinavian Journal of Statistics*, 6(2), 65–70.
    Benjamini, Y., & Hochberg, Y. (1995). Controlling the false discovery rate.
    *JRSS B*, 57(1), 289–300. doi:10.1111/j.2517-6161.1995.tb02031.x
    """
    check_adjustment("adjust", adjust, "adjust_pvalues()")
    p = np.asarray(p, dtype=float).ravel()
    fam = (
        np.zeros(len(p), dtype=np.intp)
        if families is None
        else pd.factorize(np.asarray(families, dtype=object).ravel())[0]
    )
    if len(fam) != len(p):
        from .errors import OptionError

        raise OptionError(f"`families` has {len(fam)} labels for {len(p)} p-values.")
    out = np.full(len(p), np.nan)
    idx = np.flatnonzero(np.isfinite(p))
    if idx.size == 0:
        return out
    order = idx[np.lexsort((p[idx], fam[idx]))]
    f, ps = fam[order], p[order]
    m = np.bincount(f)[f].astype(float)
    rank = pd.Series(np.ones(len(f))).groupby(f).cumsum().to_numpy()  # 1-based, within family
    if adjust == "bonferroni":
        adj = np.minimum(1.0, m * ps)
    elif adjust == "holm":  # step-down: running maximum from the smallest p
        adj = pd.Series(np.minimum(1.0, (m - rank + 1) * ps)).groupby(f).cummax().to_numpy()
    else:  # fdr_bh, step-up: running minimum from the largest p
        # p / (rank/m), statsmodels' order of operations: never below p in floating point
        raw = pd.Series(np.minimum(1.0, ps / (rank / m))[::-1])
        adj = raw.groupby(f[::-1]).cummin().to_numpy()[::-1]
    out[order] = adj
    return out


def adjust_in_table(table: pd.DataFrame, family: Sequence[str], adjust: str) -> np.ndarray:
    """:func:`adjust_pvalues` of a table's ``p_value`` within the families of ``family`` columns."""
    families = (
        table.groupby(list(family), sort=False, observed=True, dropna=False).ngroup().to_numpy()
        if family
        else None
    )
    return adjust_pvalues(table["p_value"].to_numpy(dtype=float), adjust, families=families)

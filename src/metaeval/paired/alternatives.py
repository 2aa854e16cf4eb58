"""One home for ``alternative``: p-values, critical values and intervals of every test.

scipy computes every test's p-value for ``alternative`` in one helper
(``scipy/stats/_stats_py.py::_get_pvalue``); these are metaeval's: :func:`p_value` (the
lower, the upper or both tails of a distribution), :func:`critical_value` (the quantile an
interval at level 1 − alpha uses: α/2 in each tail, or α in the one tested),
:func:`open_side` (a one-sided interval's bound on the side not tested),
:func:`as_extreme` (how many resampled statistics are at least as extreme as the observed
one) and :func:`oriented` (a statistic turned so that large means "against the null").
``compare`` (t, sign, McNemar, Newcombe, randomization, bootstrap, max-T), its clustered
t, ``means`` and ``design``'s power use them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

__all__ = [
    "AtLeast",
    "tail_level",
    "p_value",
    "critical_value",
    "open_side",
    "as_extreme",
    "oriented",
]


class AtLeast:
    """A discrete distribution whose ``sf(x)`` is P(X ≥ x) (scipy's ``sf`` is P(X > x)),
    less ``mid`` × P(X = x) in both tails (``mid=0.5``: the mid-p value)."""

    def __init__(self, distribution: Any, mid: float = 0.0) -> None:
        self.distribution, self.mid = distribution, mid

    def cdf(self, x: Any) -> Any:
        if not self.mid:
            return self.distribution.cdf(x)
        return self.distribution.cdf(x) - self.mid * self.distribution.pmf(x)

    def sf(self, x: Any) -> Any:
        if not self.mid:
            return self.distribution.sf(x - 1)
        return self.distribution.sf(x - 1) - self.mid * self.distribution.pmf(x)


def tail_level(alpha: float, alternative: str) -> float:
    """The probability in each tested tail: alpha/2 two-sided, alpha one-sided."""
    return alpha / 2 if alternative == "two-sided" else alpha


def p_value(statistic: Any, distribution: Any, alternative: str, *, symmetric: bool = True) -> Any:
    """The p-value of ``statistic`` under ``distribution`` (anything with ``cdf`` and ``sf``,
    a frozen scipy distribution or :class:`AtLeast`): the lower tail (``"less"``), the
    upper tail (``"greater"``), or twice the upper tail of ``|statistic|`` (``symmetric``)
    or of the smaller tail, at most 1 (``"two-sided"``)."""
    if alternative == "less":
        return distribution.cdf(statistic)
    if alternative == "greater":
        return distribution.sf(statistic)
    if symmetric:
        return 2 * distribution.sf(np.abs(statistic))
    return np.minimum(1.0, 2 * np.minimum(distribution.cdf(statistic), distribution.sf(statistic)))


def critical_value(distribution: Any, alpha: float, alternative: str) -> Any:
    """The upper quantile an interval at level 1 − alpha uses: ``isf(tail_level)``."""
    return distribution.isf(tail_level(alpha, alternative))


def open_side(low: Any, high: Any, alternative: str, lower: float, upper: float) -> tuple[Any, Any]:
    """A one-sided interval: the bound on the side not tested set to ``lower`` (``"less"``)
    or ``upper`` (``"greater"``); a two-sided one as it is. Arrays and DataArrays alike."""

    def full(like: Any, value: float) -> Any:
        if isinstance(like, xr.DataArray):
            return xr.full_like(like, value)
        return np.full(np.shape(like), value)

    if alternative == "greater":
        return low, full(high, upper)
    if alternative == "less":
        return full(low, lower), high
    return low, high


def as_extreme(star: Any, observed: Any, tol: Any, alternative: str) -> Any:
    """Where the resampled statistics ``star`` are at least as extreme as ``observed`` in the
    direction of ``alternative``; differences within ``tol`` tie."""
    if alternative == "two-sided":
        return np.abs(star) >= np.abs(observed) - tol
    if alternative == "greater":
        return star >= observed - tol
    return star <= observed + tol


def oriented(statistic: Any, alternative: str) -> Any:
    """The statistic turned so that larger is more extreme: |t|, t or −t."""
    if alternative == "two-sided":
        return np.abs(statistic)
    return statistic if alternative == "greater" else -statistic

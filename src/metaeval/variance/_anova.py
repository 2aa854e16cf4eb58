"""The ANOVA estimator of :func:`metaeval.facets` (``method="ANOVA"``): expected mean squares
on balanced, fully crossed designs, every (task, metric) group of one shape in one
vectorized pass.

A group's scores sit in an array of shape (systems, levels of facet 1, …, levels of facet
k), one observation per cell. For every term T of the model (a set of axes: a facet, a
system × facet interaction, a facet × facet interaction asked for) the effect is the
inclusion–exclusion of the marginal means over T's subsets, its sum of squares SS_T =
(N / L_T) Σ effect_T² (L_T the cells of T) on Π_{a∈T}(n_a − 1) degrees of freedom; the
terms left out of the model are pooled into the residual. In the unrestricted model (the
effects independent, as lme4 fits them),

    E[MS_T] = σ²_e + Σ_{U ⊇ T, U random} (N / L_U) σ²_U,

solved from the highest-order terms down (an exact linear system: σ² = M⁻¹ MS); estimates
below 0 are set to 0, and said. Every variance the result reports — a component, a
system's mean, a paired difference — is a linear combination Σ k_i MS_i of mean squares,
whose Satterthwaite (1946) degrees of freedom are (Σ k_i MS_i)² / Σ (k_i MS_i)² / df_i.

References
----------
Brennan, R. L. (2001). *Generalizability Theory*. Springer. doi:10.1007/978-1-4757-3456-0
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

__all__ = ["AnovaFit", "anova_fit"]


class AnovaFit:
    """The ANOVA estimates of G groups of one shape: ``variances`` (G, terms) clipped at 0
    (``negative`` where they were below), ``sigma2`` (G,), the system means ``beta``
    (G, S) and their covariance ``vcov`` (G, S, S), the mean squares ``ms`` (G, terms + 1,
    the residual last) with their ``df``, and ``k(w)``: the mean-square weights of the
    variance combination w'σ² (w over the terms and the residual)."""

    def __init__(self, terms, sizes, ms, df, raw, beta, n):  # noqa: ANN001
        self.terms, self.sizes, self.ms, self.df, self.n = terms, sizes, ms, df, n
        self.raw = raw
        self.negative = raw[:, :-1] < 0
        clipped = np.clip(raw, 0.0, None)
        self.variances, self.sigma2 = clipped[:, :-1], clipped[:, -1]
        self.beta = beta
        self.emss = _ems_matrix(terms, sizes, n)
        s = sizes[0]
        own = np.array([(0 in t) * s / _cells(t, sizes) for t in terms] + [s / n])
        shared = np.array([(0 not in t) / _cells(t, sizes) for t in terms] + [0.0])
        self.own_weights, self.shared_weights = own, shared
        a = clipped @ shared
        b = clipped @ own
        self.vcov = a[:, None, None] + b[:, None, None] * np.eye(s)[None]

    def k(self, w: np.ndarray) -> np.ndarray:
        """The mean-square weights of w'σ²: w'M⁻¹."""
        return np.linalg.solve(self.emss.T, w)

    def satterthwaite(self, w: np.ndarray) -> np.ndarray:
        """The df of the estimate w'σ² in every group."""
        k = self.k(w)
        terms = k[None, :] * self.ms
        with np.errstate(invalid="ignore", divide="ignore"):
            return terms.sum(1) ** 2 / (terms**2 / self.df[None, :]).sum(1)


def _cells(term: tuple[int, ...], sizes: Sequence[int]) -> float:
    return float(np.prod([sizes[a] for a in term]))


def _ems_matrix(terms: list[tuple[int, ...]], sizes: Sequence[int], n: int) -> np.ndarray:
    """M with E[MS] = M σ² (rows: the terms, then the residual)."""
    m = len(terms)
    out = np.zeros((m + 1, m + 1))
    for i, t in enumerate(terms):
        for j, u in enumerate(terms):
            if set(t) <= set(u):
                out[i, j] = n / _cells(u, sizes)
        out[i, m] = 1.0
    out[m, m] = 1.0
    return out


def anova_fit(cube: np.ndarray, terms: list[tuple[int, ...]]) -> AnovaFit:
    """ANOVA estimates for ``cube`` (G groups × systems × facet levels …) and the random
    ``terms`` (tuples of axes of one group's array: 0 the system, 1 … k the facets)."""
    g = cube.shape[0]
    sizes = cube.shape[1:]
    axes = len(sizes)
    n = int(np.prod(sizes))
    means: dict[tuple[int, ...], np.ndarray] = {}

    def mean(keep: tuple[int, ...]) -> np.ndarray:
        """The group's mean over the axes not in ``keep`` (kept as size-1 axes)."""
        if keep not in means:
            drop = tuple(1 + a for a in range(axes) if a not in keep)
            means[keep] = cube.mean(axis=drop, keepdims=True) if drop else cube
        return means[keep]

    def effect(term: tuple[int, ...]) -> np.ndarray:
        out = np.zeros((g,) + tuple(sizes[a] if a in term else 1 for a in range(axes)))
        for r in range(len(term) + 1):
            for sub in itertools.combinations(term, r):
                out = out + (-1) ** (len(term) - r) * mean(sub)
        return out

    def ss(term: tuple[int, ...]) -> np.ndarray:
        e = effect(term)
        return (n / _cells(term, sizes)) * (e**2).reshape(g, -1).sum(1)

    def dof(term: tuple[int, ...]) -> float:
        return float(np.prod([sizes[a] - 1 for a in term]))

    total = ((cube - mean(())) ** 2).reshape(g, -1).sum(1)
    fixed = (0,) if sizes[0] > 1 else ()
    model_ss = [ss(t) for t in terms]
    resid_ss = total - sum(model_ss) - (ss(fixed) if fixed else 0.0)
    df = np.array([dof(t) for t in terms] + [n - 1 - sum(dof(t) for t in terms) - dof(fixed)])
    ms = np.column_stack([*model_ss, resid_ss]) / df[None, :]
    emss = _ems_matrix(terms, sizes, n)
    raw = np.linalg.solve(emss, ms.T).T
    beta = mean((0,)).reshape(g, sizes[0])
    return AnovaFit(terms, sizes, ms, df, raw, beta, n)

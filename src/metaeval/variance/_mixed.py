"""A linear mixed model with crossed random intercepts, fitted by REML or ML on sparse
matrices: the engine of :func:`metaeval.facets`.

The model is y = Xβ + Σ_k Z_k b_k + ε, b_k ~ N(0, σ_k² I) for each random factor k (a
facet such as the query, the prompt, the seed, or an interaction such as system × query),
ε ~ N(0, σ² I). As lme4 (Bates, Mächler, Bolker & Walker 2015), the variances are
parameterized by θ_k = σ_k / σ ≥ 0, and the deviance profiled over β and σ is a function
of θ alone:

    A(θ) = Λ Z'Z Λ + I,   Λ = diag(θ_k on the columns of factor k),

    REML: log|A| + log|X'X − X'ZΛ A⁻¹ ΛZ'X| + (n − p)(1 + log(2π r² / (n − p)))
    ML:   log|A| + n (1 + log(2π r² / n)),

r² the penalized residual sum of squares. Every term comes from the cross-products Z'Z,
Z'X, Z'y, X'X, X'y and y'y, computed once. The factor with the most levels has a diagonal
block in Z'Z (a row has one level of it), so A's solves eliminate it first and factor only
the Schur complement of the other factors' levels: dense (Cholesky) when it is small or
full, as for two crossed factors, sparse (SuperLU) otherwise, as for a system × query
interaction beside the query. θ is found by bounded quasi-Newton (L-BFGS-B) from θ = 1,
then polished.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from scipy import linalg, optimize
from scipy.sparse import linalg as splinalg

__all__ = ["CrossedDesign", "Fit", "fit", "deviance", "solve_parts", "cholesky", "chol_solve"]


def cholesky(a: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor of a symmetric positive definite matrix (LAPACK's potrf
    directly: the evaluations are many and small)."""
    factor, info = linalg.lapack.dpotrf(a, lower=1, clean=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"not positive definite (potrf info {info})")
    return factor


def chol_solve(factor: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A⁻¹b from :func:`cholesky`'s factor."""
    x, info = linalg.lapack.dpotrs(factor, b, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"potrs info {info}")
    return x


def logdet(factor: np.ndarray) -> float:
    """log|A| from :func:`cholesky`'s factor."""
    return 2.0 * float(np.log(np.diagonal(factor)).sum())


_DENSE = 4000
"""The largest Schur complement factored dense (4000² doubles: 128 MB)."""


@dataclasses.dataclass(frozen=True)
class CrossedDesign:
    """The cross-products of one group's data, computed once per fit. Z's columns are
    ordered with the largest factor's first (``first`` of them: its block of Z'Z is the
    diagonal ``d1``), the other factors' after: ``n12`` the block between them, ``m22``
    the others' own block; ``b`` is Z'[y X] in that order."""

    n: int
    p: int
    sizes: tuple[int, ...]  # levels per factor, in the order given
    order: np.ndarray  # factor index of each column of the permuted Z
    first: int
    d1: np.ndarray
    n12: sp.csr_matrix
    m22: np.ndarray | sp.csr_matrix  # dense when the Schur complement is factored dense
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # N'WN's terms (dense path)
    b: np.ndarray
    xtx: np.ndarray
    xty: np.ndarray
    yty: float

    @classmethod
    def of(cls, y: np.ndarray, x: np.ndarray, codes: Sequence[np.ndarray]) -> CrossedDesign:
        """``codes``: one array of level codes 0 … L_k − 1 per random factor."""
        n, p = x.shape
        sizes = tuple(int(c.max()) + 1 for c in codes)
        big = int(np.argmax(sizes))
        ranked = [big, *(k for k in range(len(codes)) if k != big)]
        offsets = np.cumsum([0, *(sizes[k] for k in ranked)])
        rows = np.repeat(np.arange(n), len(codes))
        cols = np.column_stack([codes[k] + offsets[i] for i, k in enumerate(ranked)]).ravel()
        z = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, int(offsets[-1])))
        ztz = (z.T @ z).tocsr()
        f = sizes[big]
        m22 = ztz[f:, f:]
        return cls(
            n=n,
            p=p,
            sizes=sizes,
            order=np.repeat(ranked, [sizes[k] for k in ranked]),
            first=f,
            d1=ztz.diagonal()[:f],
            n12=ztz[:f, f:].tocsr(),
            m22=m22.toarray() if m22.shape[0] <= _DENSE else m22.tocsr(),
            pairs=_pairs(ztz[:f, f:].tocsr()) if m22.shape[0] <= _DENSE else None,
            b=np.column_stack([np.asarray(z.T @ y).ravel(), np.asarray(z.T @ x)]),
            xtx=x.T @ x,
            xty=x.T @ y,
            yty=float(y @ y),
        )


@dataclasses.dataclass(frozen=True)
class Fit:
    """One fitted model: θ, σ², each factor's variance (in the order given), β, its
    covariance and the deviance (−2 log-likelihood, REML or ML)."""

    theta: np.ndarray
    sigma2: float
    variances: np.ndarray
    beta: np.ndarray
    vcov: np.ndarray
    deviance: float
    reml: bool
    converged: bool


def solve_parts(design: CrossedDesign, theta: np.ndarray) -> tuple[float, np.ndarray]:
    """log|A(θ)| and B'A⁻¹B for B = ΛZ'[y X] (a (1 + p)² matrix), by eliminating the
    largest factor (diagonal) and factoring the Schur complement of the others:
    S = Λ₂(M₂₂ − N'WN)Λ₂ + I, W = diag(λ₁²/(λ₁² d₁ + 1))."""
    f = design.first
    lam = theta[design.order]
    lam1, lam2 = lam[:f], lam[f:]
    a11 = lam1**2 * design.d1 + 1.0
    w = lam1**2 / a11
    b1, b2 = design.b[:f], design.b[f:]
    logdet_a = float(np.log(a11).sum())
    quad = b1.T @ (w[:, None] * b1)
    if len(lam2):
        r = lam2[:, None] * (b2 - design.n12.T @ (w[:, None] * b1))
        if design.pairs is not None:
            rows, flat, values = design.pairs
            q2 = len(lam2)
            nwn = np.bincount(flat, weights=w[rows] * values, minlength=q2 * q2)
            s = design.m22 - nwn.reshape(q2, q2)
            s = lam2[:, None] * s * lam2[None, :]
            s[np.diag_indices_from(s)] += 1.0
            chol = cholesky(s)
            logdet_a += logdet(chol)
            quad = quad + r.T @ chol_solve(chol, r)
        else:
            nw = design.n12.multiply(w[:, None]).tocsr()
            scale = sp.diags(lam2)
            s = scale @ (design.m22 - design.n12.T @ nw) @ scale + sp.identity(len(lam2))
            lu = splinalg.splu(sp.csc_matrix(s), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0)
            logdet_a += float(np.log(np.abs(lu.U.diagonal())).sum())
            quad = quad + r.T @ lu.solve(np.asarray(r))
    return logdet_a, quad


def _pairs(n12: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The terms of N'WN = Σ_rows w_r n_r n_r': for every two nonzeros of a row of N, the
    row, the flat position (column a, column b) in the q₂ × q₂ result and the product of
    their values, so that each evaluation is one weighted bincount."""
    lengths = np.diff(n12.indptr)
    row_of = np.repeat(np.arange(n12.shape[0]), lengths)
    rep = lengths[row_of]
    a = np.repeat(np.arange(n12.nnz), rep)
    within = np.arange(int(rep.sum())) - np.repeat(np.cumsum(rep) - rep, rep)
    b = n12.indptr[row_of[a]] + within
    q2 = n12.shape[1]
    flat = n12.indices[a].astype(np.int64) * q2 + n12.indices[b]
    return row_of[a], flat, n12.data[a] * n12.data[b]


def _profile(design: CrossedDesign, theta: np.ndarray, reml: bool) -> tuple[float, ...]:
    """The profiled deviance at θ, with σ², β and (X'X − ...)⁻¹ (for vcov)."""
    logdet_a, quad = solve_parts(design, theta)
    n, p = design.n, design.p
    xtx = design.xtx - quad[1:, 1:]
    rhs = design.xty - quad[1:, 0]
    chol = cholesky(xtx)
    beta = chol_solve(chol, rhs)
    r2 = design.yty - quad[0, 0] - rhs @ beta
    df = n - p if reml else n
    dev = logdet_a + df * (1.0 + np.log(2.0 * np.pi * r2 / df))
    if reml:
        dev += logdet(chol)
    return float(dev), r2 / df, beta, chol


def deviance(design: CrossedDesign, theta: np.ndarray, reml: bool) -> float:
    """The profiled REML (or ML) deviance at θ."""
    return _profile(design, np.asarray(theta, float), reml)[0]


def fit(design: CrossedDesign, *, reml: bool = True, start: np.ndarray | None = None) -> Fit:
    """θ minimizing the profiled deviance on θ ≥ 0, and the model at it: L-BFGS-B from
    θ = 1 (lme4's start), then Newton steps on the coordinates inside the bounds (the
    gradient and Hessian by central differences) until the step is below 1e-10."""
    k = len(design.sizes)
    x0 = np.ones(k) if start is None else np.asarray(start, float)

    def f(t: np.ndarray) -> float:
        return deviance(design, t, reml)

    # derivative-free first (as lme4's bobyqa): at θ_k = 0 the deviance's derivative in
    # θ_k is 0 (it depends on θ_k²), so a gradient method that reaches 0 never leaves it
    res = optimize.minimize(
        f,
        x0,
        method="Powell",
        bounds=[(0.0, None)] * k,
        options={"xtol": 1e-4, "ftol": 1e-10, "maxfev": 200 * k * k},
    )
    theta = np.clip(res.x, 0.0, None)
    best = f(theta)
    theta, best = _newton(f, theta, best)
    for _ in range(k):  # a component at 0 that should not be: leave the bound, polish again
        moved = _off_the_bound(f, theta, best)
        if moved is None:
            break
        theta, best = _newton(f, *moved)
    dev, sigma2, beta, chol = _profile(design, theta, reml)
    inv = chol_solve(chol, np.eye(design.p))
    return Fit(
        theta=theta,
        sigma2=float(sigma2),
        variances=theta**2 * sigma2,
        beta=beta,
        vcov=sigma2 * inv,
        deviance=dev,
        reml=reml,
        converged=bool(np.isfinite(dev)),
    )


def _off_the_bound(f, theta: np.ndarray, best: float) -> tuple[np.ndarray, float] | None:  # noqa: ANN001
    """A point off the bound θ_k = 0 with a lower deviance, or None."""
    for at in np.flatnonzero(theta <= 1e-7):
        for value in (0.05, 0.2, 0.5):
            trial = theta.copy()
            trial[at] = value
            v = f(trial)
            if v < best - 1e-9:
                return trial, v
    return None


def _newton(f, theta: np.ndarray, best: float) -> tuple[np.ndarray, float]:  # noqa: ANN001
    """Newton's steps on the coordinates inside the bounds (saddle-free: the Hessian's
    eigenvalues made positive), the Hessian kept while it works, until the step is below
    1e-9 relative or no step improves the deviance."""
    hess = None
    for _ in range(30):  # Newton's steps, the Hessian kept while it works (chord)
        free = np.flatnonzero(theta > 1e-7)
        if not len(free):
            break
        fresh = hess is None or hess[0].tolist() != free.tolist()
        if fresh:
            g, h = _derivatives(f, theta, free)
            hess = (free, h)
        else:
            g = _gradient(f, theta, free)
        try:  # a saddle or ridge: the Hessian's eigenvalues made positive (saddle-free)
            values, vectors = np.linalg.eigh(hess[1])
            values = np.maximum(np.abs(values), 1e-8 * max(1.0, np.abs(values).max()))
            step = -(vectors / values) @ (vectors.T @ g)
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(step)):
            break
        t = 1.0
        while t > 1e-6:
            trial = theta.copy()
            trial[free] = np.clip(theta[free] + t * step, 0.0, None)
            value = f(trial)
            if value <= best + 1e-12:
                break
            t /= 2
        else:
            if not fresh:
                hess = None  # a stale Hessian: take a fresh one
                continue
            break  # no step improves: at the optimum to the deviance's precision
        moved = np.max(np.abs(trial - theta) / np.maximum(theta, 1e-3))
        theta, best = trial, min(value, best)
        if moved < 1e-9:
            break
    return theta, best


def _gradient(f, theta: np.ndarray, free: np.ndarray) -> np.ndarray:  # noqa: ANN001
    """The gradient of ``f`` in the ``free`` coordinates by central differences."""
    g = np.empty(len(free))
    for i, at in enumerate(free):  # a few facets: 2m evaluations
        h = min(1e-5 * max(theta[at], 1e-2), theta[at] * 0.5)
        up, down = theta.copy(), theta.copy()
        up[at] += h
        down[at] -= h
        g[i] = (f(up) - f(down)) / (2 * h)
    return g


def _derivatives(f, theta: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN001
    """The gradient and Hessian of ``f`` in the ``free`` coordinates (central differences;
    a coordinate near its bound of 0 by a forward difference)."""
    m = len(free)
    steps = 1e-4 * np.maximum(theta[free], 1e-2)
    f0 = f(theta)

    def at(i: int, di: float, j: int = -1, dj: float = 0.0) -> float:
        t = theta.copy()
        t[free[i]] += di
        if j >= 0:
            t[free[j]] += dj
        return f(t)

    g = np.empty(m)
    h = np.empty((m, m))
    for i in range(m):  # a few facets: 2m² + 1 evaluations
        hi = min(steps[i], theta[free[i]] * 0.5)
        plus, minus = at(i, hi), at(i, -hi)
        g[i] = (plus - minus) / (2 * hi)
        h[i, i] = (plus - 2 * f0 + minus) / hi**2
        for j in range(i):
            hj = min(steps[j], theta[free[j]] * 0.5)
            h[i, j] = h[j, i] = (
                at(i, hi, j, hj) - at(i, hi, j, -hj) - at(i, -hi, j, hj) + at(i, -hi, j, -hj)
            ) / (4 * hi * hj)
    return g, h

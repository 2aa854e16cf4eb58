"""The τ² estimators of :func:`metaeval.pool` and :func:`metaeval.metareg`: one family.

Every function works on a :class:`Batch`: G models padded to K slots, as
``(G, K)`` arrays ``y`` (effects), ``v`` (sampling variances) and ``m`` (which
slots hold an effect), and optionally a ``(G, K, P)`` design ``x`` with the
estimable columns ``free`` of each model (p of them). Sums run along the slot
axis, so one numpy operation serves every model; iterative estimators iterate
all models in lockstep and drop each one from the work set when it has
converged, never looping over models.

Definitions follow metafor's ``rma.uni()`` (Viechtbauer 2010). With
W = diag(w_i), w_i = 1/(v_i + τ²), β̂(τ²) = (X'WX)⁻¹X'Wy, the residuals
r = y − Xβ̂, P = W − WX(X'WX)⁻¹X'W and the generalized Q(τ²) = y'Py = Σ w_i r_i²
(P₀, Q_E = Q(0) with the weights 1/v):

- ``DL``  τ² = (Q_E − (k − p)) / tr P₀ (DerSimonian & Laird 1986)
- ``HS``  τ² = (Q_E − k) / Σ(1/v_i) (Hunter & Schmidt 2004)
- ``HE``  τ² = (RSS_OLS − tr(P_OLS V)) / (k − p) (Hedges 1983)
- ``SJ``  τ₀² = Σ(y − ȳ)²/k, τ² = τ₀² Q(τ₀²)/(k − p) (Sidik & Jonkman 2005)
- ``ML``   the highest maximum of the likelihood, a root of y'P²y − tr W = 0 (the ML
  score equation) or τ² = 0
- ``REML`` the same for the restricted likelihood, y'P²y − tr P = 0 (:func:`maximize`)
- ``PM``, ``EB`` the root of Q(τ²) = k − p (Paule & Mandel 1982; Morris 1983:
  metafor's EB scoring step (Q·k/(k − p) − k)/Σw vanishes exactly there)

each truncated at 0: τ² = 0 when the left side is already ≤ 0 at τ² = 0.

The intercept-only model (:func:`metaeval.pool`; ``x`` None) is the case X = 1,
p = 1, and :class:`Batch` computes its pieces as closed-form sums (the fast
path): μ̂ = Σw y/Σw, tr P = Σw − Σw²/Σw (without cancellation, see
:func:`trace_p_intercept`), y'P²y = Σw²r², RSS_OLS = Σ(y − ȳ)² and
tr(P_OLS V) = (1 − 1/k) Σv. With a design (:func:`metaeval.metareg`) the same
pieces come from batched ``(p, p)`` solves and, for Q_E and tr P₀, a QR
decomposition of the weighted design. The estimators below are written once
over these pieces.

Convergence (the same for every model): metafor reaches ML, REML and EB by
Fisher scoring from the HE value (truncated at 0) and PM by ``uniroot`` on
[0, τ²_max]; :func:`root` solves EB's and PM's equations (each has one root) with
Newton steps kept inside a bracket (bisection when a step leaves it), started from
the same HE value, so both end at the same root. ML and REML likelihoods can have
several maxima, of which Fisher scoring finds the one next to its start:
:func:`maximize` brackets every one on a grid and keeps the highest (metafor's where
they tie). The differences are in how close they get:
:func:`solve` stops when a step is below :data:`ROOT_TOL`·max(τ², v_min) (v_min
the smallest sampling variance) or after :data:`MAXITER` steps (NaN, reported as
a failed fit), metafor by default when a scoring step is below 1e-5 in absolute
terms or ``uniroot``'s bracket below ε^¼ ≈ 1.2e-4, which leaves τ² off by up to
a few percent. With ``control=list(threshold=1e-12, tol=1e-12)`` metafor gives
metaeval's values. Newton also converges where metafor's Fisher scoring
oscillates and stops with "did not converge" (its help suggests ``stepadj``).
metafor's check of ML and REML fits (τ² = 0 when the likelihood there exceeds the
one at the root by more than ε^¼, where τ̂² > 1e-5) tells which maximum metafor reports,
for the warning where it is not the highest (its 1e-5 taken relative to the smallest
sampling variance, so that rescaling the effects changes nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Batch",
    "Maxima",
    "maximize",
    "LL_CLOSE",
    "FAR",
    "RE_METHODS",
    "estimate",
    "tau2_dl",
    "tau2_hs",
    "tau2_he",
    "tau2_sj",
    "tau2_ml",
    "tau2_reml",
    "tau2_eb",
    "tau2_pm",
    "root",
    "solve",
    "bracket",
    "q_profile",
    "profile_ci",
    "pl_equation",
    "per_value",
    "trace_p_intercept",
]

RE_METHODS = ("DL", "HE", "HS", "SJ", "ML", "REML", "EB", "PM")
MAXITER = 500
ROOT_TOL = 1e-10
LL0_TOL = np.finfo(float).eps ** 0.25  # metafor's ll0check tolerance
LL0_THRESHOLD = 1e-5  # metafor's threshold of its ll0check (here relative to the smallest variance)
# doublings of the PM search's upper end beyond max(100, 10·mad²): 2**200 covers any float scale
PM_DOUBLINGS = 200


# ---------------------------------------------------------------------- the batch
class Batch:
    """G models padded to K slots (see the module docstring).

    Without ``x`` the model is intercept-only (p = 1) and every piece is a
    closed-form sum (``free`` is then the intercept's one column). With ``x``
    (``(G, K, P)``, 0 in empty slots) columns that are 0 in every slot of a model
    (a factor level absent from it) are not estimable there: ``free`` marks the
    others (all columns when None), and the normal equations get a 1 on the
    diagonal of the others, which leaves their coefficient at 0.
    """

    x: np.ndarray | None
    fixed: np.ndarray | None

    def __init__(
        self,
        y: np.ndarray,
        v: np.ndarray,
        m: np.ndarray,
        x: np.ndarray | None = None,
        free: np.ndarray | None = None,
    ) -> None:
        self.m = m
        self.y = np.where(m, y, 0.0)
        self.v = np.where(m, v, np.inf)  # empty slots get weight 1/inf = 0
        self.k = m.sum(axis=1)
        if x is None:
            self.x = self.fixed = None
            self.free = np.ones((len(self.k), 1), dtype=bool)
            self.p = np.ones(len(self.k), dtype=self.k.dtype)
        else:
            self.x = np.where(m[..., None], x, 0.0)
            self.free = np.ones((x.shape[0], x.shape[2]), dtype=bool) if free is None else free
            self.p = self.free.sum(axis=1)
            self.fixed = np.where(self.free, 0.0, 1.0)[:, :, None] * np.eye(x.shape[2])
        self._fixed_parts: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def take(self, rows: np.ndarray) -> Batch:
        """The models ``rows`` of the batch."""
        out = object.__new__(Batch)
        for name in ("y", "v", "m", "k", "p", "x", "free", "fixed"):
            value = getattr(self, name)
            setattr(out, name, None if value is None else value[rows])
        out._fixed_parts = None
        return out

    def weights(self, tau2: np.ndarray) -> np.ndarray:
        """w_i = 1/(v_i + τ²) in the occupied slots, 0 elsewhere."""
        return 1.0 / (self.v + tau2[:, None])

    def small_variance(self) -> np.ndarray:
        """The smallest sampling variance of each model: the scale of τ² that matters.

        The estimate is decided by the precise effects; a mean of the variances
        would be swamped by one imprecise effect (1e14 beside 1e-3) and stop the
        root search long before τ² is found.
        """
        return np.where(self.m, self.v, np.inf).min(axis=1, initial=np.inf)

    # -- the design's linear algebra (with ``x`` only)
    def gram(self, w: np.ndarray, power: int = 1) -> np.ndarray:
        """X' W^power X (with 1 on the diagonal of the columns that are not free)."""
        assert self.x is not None and self.fixed is not None
        return np.einsum("gkp,gk,gkq->gpq", self.x, w**power, self.x) + self.fixed * (power == 1)

    def wls(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(X'WX)⁻¹, β̂ and the residuals y − Xβ̂ (0 in empty slots) for weights ``w``."""
        assert self.x is not None
        inv = np.linalg.inv(self.gram(w))
        beta = np.einsum("gpq,gq->gp", inv, np.einsum("gkp,gk->gp", self.x, w * self.y))
        r = (self.y - np.einsum("gkp,gp->gk", self.x, beta)) * self.m
        return inv, beta, r

    def weighted_design(
        self, w: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """W^½X and W^½y with the rows sorted by weight (heaviest first, which keeps
        Householder QR accurate row by row) and the free columns first; the weights
        in that order, and the column order."""
        assert self.x is not None
        rows = np.argsort(-w, axis=1, kind="stable")
        cols = np.argsort(~self.free, axis=1, kind="stable")
        ws = np.take_along_axis(w, rows, axis=1)
        root = np.sqrt(ws)
        xs = np.take_along_axis(self.x, rows[:, :, None], axis=1)
        xs = np.take_along_axis(xs, cols[:, None, :], axis=2) * root[:, :, None]
        return xs, np.take_along_axis(self.y, rows, axis=1) * root, ws, cols

    def lstsq(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """As :meth:`wls`, from the QR decomposition W^½X = QR: β̂ = R⁻¹Q'W^½y and
        (X'WX)⁻¹ = R⁻¹R⁻ᵀ, accurate when the normal equations are ill-conditioned (one
        variance 1e-8 of the others cost 7 digits of β̂ there)."""
        xs, ys, _, cols = self.weighted_design(w)
        q, r = np.linalg.qr(xs)
        n, n_terms = r.shape[1], xs.shape[2]
        block = np.arange(n_terms) < self.p[:, None]  # the free columns, in R's order
        square = np.zeros((len(r), n_terms, n_terms))
        square[:, :n] = r
        square = np.where(block[:, :, None] & block[:, None, :], square, np.eye(n_terms))
        qty = np.zeros((len(r), n_terms))
        qty[:, :n] = np.einsum("gkj,gk->gj", q, ys)
        r_inv = np.linalg.inv(square)
        beta = np.einsum("gpq,gq->gp", r_inv, np.where(block, qty, 0.0))
        back = np.argsort(cols, axis=1)
        beta = np.take_along_axis(beta, back, axis=1)
        inv = r_inv @ np.swapaxes(r_inv, 1, 2)
        inv = np.take_along_axis(np.take_along_axis(inv, back[:, :, None], 1), back[:, None, :], 2)
        assert self.x is not None
        res = (self.y - np.einsum("gkp,gp->gk", self.x, beta)) * self.m
        return inv, beta, res

    def intercept(self) -> Batch:
        """The model without moderators, as the design of the intercept column (the
        first; metareg's R²). Not the fast path: that agrees to ~1e-11, which R² near
        0, a difference of two τ², would amplify."""
        assert self.x is not None
        return Batch(self.y, self.v, self.m, self.x[:, :, :1], self.free[:, :1])

    # -- the pieces every estimator is written in (closed forms without ``x``)
    def residuals(self, w: np.ndarray) -> np.ndarray:
        """r = y − Xβ̂ for weights ``w`` (without ``x``: y − μ̂, −μ̂ in empty slots,
        where every sum weighs it by w = 0)."""
        if self.x is None:
            mu = np.einsum("gk,gk->g", w, self.y) / w.sum(axis=1)
            return self.y - mu[:, None]
        return self.wls(w)[2]

    def q(self, tau2: np.ndarray) -> np.ndarray:
        """The generalized Q statistic Q(τ²) = y'Py = Σ w_i r_i²."""
        w = self.weights(tau2)
        r = self.residuals(w)
        return np.einsum("gk,gk,gk->g", w, r, r)

    def fixed_parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Σ(1/v), tr P₀ and Q_E = y'P₀y with the common-effect weights 1/v (cached).

        Without ``x``: tr P₀ from :func:`trace_p_intercept` and Q_E = Σw(y − ȳ_w)².
        With ``x``: from a QR decomposition of the weighted design. With
        W^½X = Q R (complete: Q is K × K) and Q₂ the columns of Q past the p free
        ones (an orthonormal basis of the complement of the design's span),
        I − H = Q₂Q₂', so Q_E = ‖Q₂'W^½y‖² and tr P₀ = Σ_i w_i ‖Q₂[i]‖²: sums of
        squares, without the cancellation of Σw − tr((X'WX)⁻¹X'W²X), which put
        tr P₀ (and DL's τ²) 2% off when one variance was 1e-8 of the others.
        """
        if self._fixed_parts is None:
            zero = np.zeros(len(self.k))
            w = self.weights(zero)
            sw = w.sum(axis=1)
            if self.x is None:
                self._fixed_parts = sw, trace_p_intercept(w, sw), self.q(zero)
            else:
                xs, ys, ws, _ = self.weighted_design(w)
                q, _ = np.linalg.qr(xs, mode="complete")
                rest = np.arange(q.shape[2])[None, :] >= self.p[:, None]  # the columns of Q₂
                q2 = np.where(rest[:, None, :], q, 0.0)
                qe = (np.einsum("gkj,gk->gj", q2, ys) ** 2).sum(axis=1)
                self._fixed_parts = sw, np.einsum("gk,gkj,gkj->g", ws, q2, q2), qe
        return self._fixed_parts

    def ols_parts(self) -> tuple[np.ndarray, np.ndarray]:
        """RSS_OLS and tr(P_OLS V): the residual sum of squares of the unweighted fit
        and its expectation without heterogeneity (Hedges' estimator)."""
        if self.x is None:
            ybar = self.y.sum(axis=1) / self.k
            r = (self.y - ybar[:, None]) * self.m
            k = self.k.astype(float)
            return (r * r).sum(axis=1), np.where(self.m, self.v, 0.0).sum(axis=1) * (1 - 1 / k)
        inv, _, r = self.wls(self.m.astype(float))
        v = np.where(self.m, self.v, 0.0)
        xvx = np.einsum("gkp,gk,gkq->gpq", self.x, v, self.x)
        return (r * r).sum(axis=1), v.sum(axis=1) - np.einsum("gpq,gqp->g", inv, xvx)

    def score_parts(
        self, tau2: np.ndarray, reml: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """y'P²y, u'Pu (u = Py), t and −dt/dτ² with t = tr W (ML) or tr P (REML).

        With u = Py = Wr: y'P²y = u'u, d(y'P²y)/dτ² = −2u'Pu with
        u'Pu = u'Wu − (X'Wu)'A⁻¹(X'Wu), d tr W/dτ² = −Σw², d tr P/dτ² = −tr P²,
        tr P² = Σw² − 2 tr(A⁻¹X'W³X) + tr((A⁻¹X'W²X)²) with A = X'WX. Without
        ``x``: u'u = Σw²r², u'Pu = Σw³r² − (Σw²r)²/Σw and
        tr P² = Σw² − 2Σw³/Σw + (Σw²)²/(Σw)².
        """
        w = self.weights(tau2)
        if self.x is None:
            sw = w.sum(axis=1)
            mu = np.einsum("gk,gk->g", w, self.y) / sw
            r = self.y - mu[:, None]
            w2 = w * w
            w2r = w2 * r
            a = np.einsum("gk,gk->g", w2r, r)
            c = w2r.sum(axis=1)
            upu = np.einsum("gk,gk->g", w2r * w, r) - c * c / sw
            sw2 = w2.sum(axis=1)
            if not reml:
                return a, upu, sw, sw2
            sw3 = np.einsum("gk,gk->g", w2, w)
            return a, upu, trace_p_intercept(w, sw), sw2 - 2 * sw3 / sw + sw2 * sw2 / (sw * sw)
        inv, _, r = self.wls(w)
        u = w * r
        xu = np.einsum("gkp,gk->gp", self.x, w * u)
        upu = np.einsum("gk,gk,gk->g", w, u, u) - np.einsum("gp,gpq,gq->g", xu, inv, xu)
        a = np.einsum("gk,gk->g", u, u)
        if not reml:
            return a, upu, w.sum(axis=1), (w * w).sum(axis=1)
        g2 = self.gram(w, 2)
        c2 = inv @ g2
        trace_pp = (
            (w * w).sum(axis=1)
            - 2 * np.einsum("gpq,gqp->g", inv, self.gram(w, 3))
            + np.einsum("gpq,gqp->g", c2, c2)
        )
        return a, upu, w.sum(axis=1) - np.einsum("gpq,gqp->g", inv, g2), trace_pp

    def log_lik(self, tau2: np.ndarray, reml: bool) -> np.ndarray:
        """The (restricted) log-likelihood at τ² (metafor's ``logLik()``)."""
        w = self.weights(tau2)
        if self.x is None:
            sw = w.sum(axis=1)
            mu = np.einsum("gk,gk->g", w, self.y) / sw
            r = self.y - mu[:, None]
            logdet_a = np.log(sw)
        else:
            _, _, r = self.wls(w)
            logdet_a = np.linalg.slogdet(self.gram(w))[1] if reml else None
        rss = np.einsum("gk,gk,gk->g", w, r, r)
        k = self.k.astype(float)
        logdet = np.log(np.where(self.m, self.v + tau2[:, None], 1.0)).sum(axis=1)
        if not reml:
            return -0.5 * k * np.log(2 * np.pi) - 0.5 * logdet - 0.5 * rss
        return -0.5 * (k - self.p) * np.log(2 * np.pi) - 0.5 * logdet - 0.5 * logdet_a - 0.5 * rss


def trace_p_intercept(w: np.ndarray, sw: np.ndarray) -> np.ndarray:
    """tr P = Σw − Σw²/Σw of the intercept-only model (``sw`` = Σw), without cancellation.

    Written as Σ_i w_i (Σw − w_i) / Σw. Only the largest weight can exceed half
    of Σw, so for it Σw − w_i is taken as the sum of the other weights; the
    textbook form cancels to 0 (or below) when one variance is many orders of
    magnitude smaller than the others (1e-3 beside 1e21), which made DL's τ²
    infinite.
    """
    rows = np.arange(w.shape[0])
    top = np.argmax(w, axis=1)
    w_top = w[rows, top]
    others = w.copy()
    others[rows, top] = 0.0
    rest = others.sum(axis=1)  # Σw − w_top, summed directly
    inner = np.einsum("gk,gk->g", others, sw[:, None] - others)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w_top * rest + inner) / sw


# ----------------------------------------------------------------- closed forms
def tau2_he(b: Batch) -> np.ndarray:
    """Hedges: (RSS_OLS − tr(P_OLS V)) / (k − p), untruncated."""
    rss, trace_pv = b.ols_parts()
    return (rss - trace_pv) / (b.k - b.p)


def tau2_dl(b: Batch) -> np.ndarray:
    """DerSimonian–Laird: (Q_E − (k − p)) / tr P₀, untruncated."""
    _, trace_p0, qe = b.fixed_parts()
    return (qe - (b.k - b.p)) / trace_p0


def tau2_hs(b: Batch) -> np.ndarray:
    """Hunter–Schmidt: (Q_E − k) / Σ(1/v), untruncated."""
    sw0, _, qe = b.fixed_parts()
    return (qe - b.k) / sw0


def tau2_sj(b: Batch) -> np.ndarray:
    """Sidik–Jonkman: τ₀² Q(τ₀²)/(k − p) with τ₀² = Σ(y − ȳ)²/k, untruncated."""
    ybar = b.y.sum(axis=1) / b.k
    r = (b.y - ybar[:, None]) * b.m
    tau2_0 = (r * r).sum(axis=1) / b.k
    return tau2_0 * b.q(tau2_0) / (b.k - b.p)


# ------------------------------------------------------- estimating equations
# Each returns f(τ²) and df/dτ² for a batch; the estimate is where f crosses 0
# from above.
Equation = Callable[[Batch, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def ml_equation(b: Batch, tau2: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """y'P²y − tr W and its slope (``target`` unused)."""
    a, upu, t, dt = b.score_parts(tau2, reml=False)
    return a - t, -2 * upu + dt


def reml_equation(b: Batch, tau2: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """y'P²y − tr P and its slope (``target`` unused)."""
    a, upu, t, dt = b.score_parts(tau2, reml=True)
    return a - t, -2 * upu + dt


def q_equation(b: Batch, tau2: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log Q(τ²) − log target and its derivative (dQ/dτ²)/Q, dQ/dτ² = −Σ w² r².

    On the log scale Q(τ²), which falls like 1/τ², is nearly linear, so Newton
    steps land close to the root; the root is the one of Q(τ²) = target.
    """
    w = b.weights(tau2)
    r = b.residuals(w)
    wr2 = w * r * r
    q = wr2.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(q) - np.log(target), -np.einsum("gk,gk->g", wr2, w) / q


# --------------------------------------------------------------- root search
def solve(
    b: Batch,
    equation: Equation,
    target: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    start: np.ndarray,
) -> np.ndarray:
    """The root of ``equation`` in [lo, hi] for every model, in lockstep.

    Requires f(lo) > 0 ≥ f(hi). Newton steps from ``start`` (clipped into the
    bracket), replaced by bisection when they would leave the bracket, which
    shrinks around the sign change at every step. A model is done when a
    step is below :data:`ROOT_TOL`·max(τ², v_min) (the result of that step, past
    Newton's quadratic convergence, is far more accurate), f is exactly 0 or
    the bracket is that narrow. NaN where that does not happen within
    :data:`MAXITER` steps.
    """
    lo, hi = lo.astype(float).copy(), hi.astype(float).copy()
    x = np.clip(np.nan_to_num(start), lo, hi)
    out = np.full(len(x), np.nan)
    floor = b.small_variance()
    # `sub` holds the models still being solved plus, until it is compacted (when
    # fewer than half remain), some finished ones, so rows are copied O(log G) times
    sub, rows = b, np.arange(len(x))
    active = np.ones(len(x), dtype=bool)
    for _ in range(MAXITER):
        if not active.any():
            break
        if active.sum() < len(rows) / 2:
            keep = np.flatnonzero(active)
            sub, rows, active = sub.take(keep), rows[keep], active[keep]
        f, slope = equation(sub, x[rows], target[rows])
        a, c, xa = lo[rows], hi[rows], x[rows]
        a = np.where(f > 0, xa, a)
        c = np.where(f <= 0, xa, c)
        with np.errstate(invalid="ignore", divide="ignore"):
            step = xa - f / slope
        new = np.where(f == 0, xa, np.where((step >= a) & (step <= c), step, 0.5 * (a + c)))
        tol = ROOT_TOL * np.maximum(np.abs(new), floor[rows])
        done = active & ((np.abs(new - xa) <= tol) | (c - a <= tol) | (f == 0))
        live = rows[active]
        lo[live], hi[live], x[live] = a[active], c[active], new[active]
        out[rows[done]] = new[done]
        active &= ~done
    return out


def bracket(
    b: Batch, equation: Equation, target: np.ndarray, start: np.ndarray, f_start: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Bounds [lo, hi] around the root next to ``start``, with f(lo) > 0 ≥ f(hi).

    Where f(start) > 0 the search goes up, quadrupling from max(start, v_min);
    otherwise down, dividing by 4 until 1e-10·v_min and then trying 0. ``lo`` is NaN
    where f stays ≤ 0 down to 0 (the estimate is then 0); ``hi`` is NaN where f
    stays positive up to 4⁶⁰·v_min.
    """
    up = f_start > 0
    lo = np.where(up, start, np.nan)
    hi = np.where(up, np.nan, start)
    floor = 1e-10 * b.small_variance()
    probe = np.where(up, np.maximum(start, b.small_variance()), start / 4)
    probe = np.where(~up & (probe < floor), 0.0, probe)
    active = np.arange(len(start))
    for _ in range(60):
        if active.size == 0:
            break
        x = probe[active]
        f, _ = equation(b.take(active), x, target[active])
        going_up = up[active]
        found = np.where(going_up, f <= 0, f > 0)
        hi[active[found & going_up]] = x[found & going_up]
        lo[active[found & ~going_up]] = x[found & ~going_up]
        give_up = ~found & ~going_up & (x == 0)  # f(0) <= 0: no root below start
        active = active[~found & ~give_up]
        nxt = np.where(up[active], probe[active] * 4, probe[active] / 4)
        probe[active] = np.where(~up[active] & (nxt < floor[active]), 0.0, nxt)
    return lo, hi


def tau2_max_pm(b: Batch) -> np.ndarray:
    """metafor's upper end of the PM search: max(100, 10·mad(y)²)."""
    y = np.where(b.m, b.y, np.nan)
    med = np.nanmedian(y, axis=1)
    mad = 1.4826 * np.nanmedian(np.abs(y - med[:, None]), axis=1)
    return np.maximum(100.0, 10 * mad**2)


_EQUATIONS: dict[str, Equation] = {
    "ML": ml_equation,
    "REML": reml_equation,
    "EB": q_equation,
    "PM": q_equation,
}


def root(b: Batch, method: str) -> tuple[np.ndarray, np.ndarray]:
    """ML, REML, EB or PM: τ² and a mask of models without a result.

    The root is searched next to metafor's starting value max(0, HE): upwards
    when the equation is positive there, downwards otherwise, ending at 0 when
    it stays negative all the way down — the root Fisher scoring from that start
    converges to. PM follows metafor's rules: 0 when Q(0) < k − p, else the
    root in [0, τ²_max], τ²_max = max(100, 10·mad(y)²) — except that where the
    root lies beyond τ²_max (metafor stops with an error there) the upper end is
    doubled until it brackets the root: Q(τ²) falls to 0 as τ² grows, so the
    root always exists. Models with k ≤ p get 0 (and no search).
    """
    k = b.k.astype(float)
    equation = _EQUATIONS[method]
    target = k - b.p  # used by the Q equation only
    real = b.k > b.p
    with np.errstate(invalid="ignore", divide="ignore"):
        start = np.where(real, np.maximum(0.0, np.nan_to_num(tau2_he(b))), 0.0)
        if method == "PM":
            start = np.zeros(len(k))
        f_start, _ = equation(b, start, target)
    tau2 = np.where(f_start == 0, start, 0.0)
    failed = np.zeros(len(k), dtype=bool)
    search = real & (f_start != 0) & ~((f_start < 0) & (start == 0))
    if search.any():
        idx = np.flatnonzero(search)
        sub = b.take(idx)
        if method == "PM":  # f(0) > 0 here: the root lies in [0, tau2_max] or beyond
            lo, hi = np.zeros(len(idx)), tau2_max_pm(sub)
            f_hi, _ = equation(sub, hi, target[idx])
            for _ in range(PM_DOUBLINGS):  # rare: a handful of doublings over the few beyond
                beyond = f_hi > 0
                if not beyond.any():
                    break
                lo[beyond], hi[beyond] = hi[beyond], 2 * hi[beyond]
                f_hi[beyond] = equation(
                    sub.take(np.flatnonzero(beyond)), hi[beyond], target[idx][beyond]
                )[0]
            hi[f_hi > 0] = np.nan
        else:
            lo, hi = bracket(sub, equation, target[idx], start[idx], f_start[idx])
        boundary = np.isnan(lo) & np.isfinite(hi)  # negative down to 0: the estimate is 0
        ok = np.isfinite(lo) & np.isfinite(hi)
        found = np.where(boundary, 0.0, np.nan)
        if ok.any():
            j = np.flatnonzero(ok)
            found[j] = solve(sub.take(j), equation, target[idx][j], lo[j], hi[j], start[idx][j])
        tau2[idx] = found
        failed[idx] = np.isnan(found)
    return tau2, failed


@dataclass
class Maxima:
    """What the search of an ML/REML likelihood found besides the estimate, per model
    (for the other estimators: none of it).

    ``metafor``: the τ² metafor's ``rma()`` reaches (Fisher scoring from max(0, HE) to the
    nearest maximum on the side the score points to, then its check of the likelihood
    at τ² = 0); ``elsewhere``: the highest maximum, which is the
    estimate, is not that one; ``other``: the τ² of another local maximum whose
    log-likelihood is within :data:`LL_CLOSE` of the highest and which lies far from it
    (:data:`FAR`), NaN where there is none, and ``other_gap`` its log-likelihood below
    the highest.
    """

    metafor: np.ndarray
    elsewhere: np.ndarray
    other: np.ndarray
    other_gap: np.ndarray

    @classmethod
    def none(cls, n: int) -> Maxima:
        nan = np.full(n, np.nan)
        return cls(nan, np.zeros(n, dtype=bool), nan.copy(), nan.copy())

    @property
    def ambiguous(self) -> np.ndarray:
        """Models with two maxima close in likelihood and far apart in τ²."""
        return np.isfinite(self.other)

    def put(self, rows: np.ndarray, part: Maxima) -> None:
        """Write ``part`` (the models ``rows`` of this one) in place."""
        for name in ("metafor", "elsewhere", "other", "other_gap"):
            getattr(self, name)[rows] = getattr(part, name)


#: Two maxima whose log-likelihoods differ by less than χ²₁,₀.₉₅/2 (a likelihood-ratio
#: test at 5% cannot tell them apart) are close.
LL_CLOSE = 1.9207294103470622
#: Two values of τ² are far apart when (larger + v_min)/(smaller + v_min) exceeds this:
#: the weight of the most precise effect changes by more than this factor between them.
FAR = 2.0
#: The grid of the search starts at this fraction of the smallest sampling variance
#: (below it every value of τ² gives the same weights to ~1e-4) ...
GRID_LOW = 1e-4
#: ... and steps by this factor (two maxima in one step would need a minimum between them
#: within a factor of 4 of τ²; on 40,000 fuzzed meta-analyses with variances over up to 12
#: orders of magnitude, steps of 1.25, 2, 4 and 8 found the same highest maximum).
GRID_STEP = 4.0
#: Log-likelihoods within this of each other tie (the estimate is then metafor's).
LL_TIE = 1e-9


def _grid_top(b: Batch, rss_ols: np.ndarray) -> np.ndarray:
    """An upper end for the search: 16·max(max_i (y_i − ȳ)², RSS_OLS/(k − p), v_min). A
    residual is at most the range of the effects (≤ 2 max|y_i − ȳ|) for the intercept-only
    model, and ML's score Σw²r² − Σw is negative once τ² exceeds every r_i²; REML's
    root lies near RSS/(k − p) for large τ². Both are checked: where the score is still
    positive at the end, the search goes on above it (:func:`bracket`)."""
    k = b.k.astype(float)
    ybar = b.y.sum(axis=1) / k
    spread = np.where(b.m, (b.y - ybar[:, None]) ** 2, 0.0).max(axis=1)
    return 16 * np.maximum(np.maximum(spread, rss_ols / (k - b.p)), b.small_variance())


#: The grid search evaluates the score of models × points × slots at once, in chunks of
#: models of at most this many elements (about 16 MB per array).
SCORE_CHUNK = 1 << 21


def _scores(b: Batch, points: np.ndarray, reml: bool) -> np.ndarray:
    """The score (:func:`ml_equation`, :func:`reml_equation`) of every model at every
    column of ``points`` (models × points), for the signs of the grid search.

    Vectorized over models and points together, in chunks of models of at most
    :data:`SCORE_CHUNK` elements (models × points × slots). Only the score itself is
    formed (the equations also form its slope). Without a design, on arrays broadcast
    over the points: with the most precise effect's weight w₁ (the largest at every τ²)
    apart and R = Σ_{i>1} w_i, Σw = w₁ + R, tr W = Σw and
    tr P = (w₁R + Σ_{i>1} w_i(Σw − w_i))/Σw, without cancellation (as
    :func:`trace_p_intercept`). With one, each model repeated once per point: y'P²y − t
    with t = tr W (ML) or tr W − tr((X'WX)⁻¹X'W²X) (REML).
    """
    n, n_points = points.shape
    width = b.y.shape[1] * (1 if b.x is None else b.x.shape[2] ** 2)
    chunk = max(1, SCORE_CHUNK // max(1, n_points * width))
    out = np.empty(points.shape)
    for lo in range(0, n, chunk):  # one pass unless the batch is large
        rows = np.arange(lo, min(n, lo + chunk))
        part = b.take(rows)
        if b.x is None:
            out[rows] = _intercept_scores(part, points[rows], reml)
        else:
            rep = part.take(np.repeat(np.arange(len(rows)), n_points))
            flat = _design_scores(rep, points[rows].ravel(), reml)
            out[rows] = flat.reshape(len(rows), n_points)
    return out


def _intercept_scores(b: Batch, points: np.ndarray, reml: bool) -> np.ndarray:
    """:func:`_scores` of intercept-only models (models × points × slots at once)."""
    rows = np.arange(len(b.k))
    first = np.argmin(b.v, axis=1)
    others = b.m.copy()
    others[rows, first] = False
    v1, y1 = b.v[rows, first][:, None], b.y[rows, first][:, None]
    w = np.where(others[:, None, :], 1.0 / (b.v[:, None, :] + points[:, :, None]), 0.0)
    w1 = 1.0 / (v1 + points)
    rest = w.sum(axis=2)
    sw = w1 + rest
    mu = (np.einsum("gpk,gk->gp", w, b.y) + w1 * y1) / sw
    wr = w * (b.y[:, None, :] - mu[:, :, None])
    a = np.einsum("gpk,gpk->gp", wr, wr) + (w1 * (y1 - mu)) ** 2
    if reml:
        return a - (w1 * rest + rest * sw - np.einsum("gpk,gpk->gp", w, w)) / sw
    return a - sw


def _design_scores(b: Batch, tau2: np.ndarray, reml: bool) -> np.ndarray:
    """:func:`_scores` of models with a design, each at its own τ²."""
    w = b.weights(tau2)
    inv, _, r = b.wls(w)
    u = w * r
    t = w.sum(axis=1)
    if reml:
        t = t - np.einsum("gpq,gqp->g", inv, b.gram(w, 2))
    return np.einsum("gk,gk->g", u, u) - t


def maximize(b: Batch, method: str) -> tuple[np.ndarray, np.ndarray, Maxima]:
    """ML or REML: the τ² of the highest maximum of the (restricted) likelihood, the
    models that failed, and what else the search found (:class:`Maxima`).

    The likelihood can have more than one local maximum (variances that differ by orders
    of magnitude make it so), and Fisher scoring (metafor) or a root search from one start
    ends at the one nearest the start. Here the score (:func:`ml_equation`,
    :func:`reml_equation`) is evaluated, for every model at once, at τ² = 0, at
    metafor's start max(0, HE) and on a grid from :data:`GRID_LOW`·v_min to
    :func:`_grid_top` in steps of :data:`GRID_STEP` (:func:`_scores`); every step over
    which it turns from
    positive to negative brackets a local maximum, solved by :func:`solve`, and τ² = 0
    is one where the score is ≤ 0 there. The highest is kept (metafor's where they tie).
    The work is one evaluation of the score on every model × grid point at once
    (:func:`_scores`) and the root searches of all brackets of all models together;
    models with k ≤ p get 0. On 10,000 models of k = 20 (``benchmarks/bench_pooling.py``)
    this costs about 1.5 times the single root search it replaces (0.41–0.50 s against
    0.25–0.35 s for :func:`metaeval.pool`), about half of it the grid's ~14 points.
    """
    reml = method == "REML"
    equation = _EQUATIONS[method]
    n = len(b.k)
    tau2 = np.zeros(n)
    failed = np.zeros(n, dtype=bool)
    info = Maxima.none(n)
    info.metafor[:] = 0.0
    real = np.flatnonzero(b.k > b.p)
    if not real.size:
        return tau2, failed, info
    sub = b.take(real)
    g = len(real)
    target = np.zeros(g)  # the likelihood equations take no target
    v_min = sub.small_variance()
    rss, trace_pv = sub.ols_parts()
    start = np.maximum(0.0, np.nan_to_num((rss - trace_pv) / (sub.k - sub.p)))  # HE
    lo, top = GRID_LOW * v_min, np.maximum(_grid_top(sub, rss), 2 * GRID_LOW * v_min)
    steps = max(2, int(np.ceil(np.log(np.max(top / lo)) / np.log(GRID_STEP))) + 1)
    grid = lo[:, None] * (top / lo)[:, None] ** np.linspace(0.0, 1.0, steps)
    points = np.concatenate([np.zeros((g, 1)), grid, start[:, None]], axis=1)
    order = np.argsort(points, axis=1, kind="stable")
    points = np.take_along_axis(points, order, axis=1)
    at_start = np.argmax(order == points.shape[1] - 1, axis=1)  # the column of the start
    f = _scores(sub, points, reml)
    # where the score is still positive at the top, the last maximum lies above it
    above = np.flatnonzero(f[:, -1] > 0)
    extra_hi = np.full(g, np.nan)
    if above.size:
        _, extra_hi[above] = bracket(
            sub.take(above), equation, target[above], points[above, -1], f[above, -1]
        )
    # brackets: the score turns from positive to non-positive between columns j and j + 1
    turn = (f[:, :-1] > 0) & (f[:, 1:] <= 0)
    rows, cols = np.nonzero(turn)
    lo_b, hi_b = points[rows, cols], points[rows, cols + 1]
    ext = np.flatnonzero(np.isfinite(extra_hi))
    rows = np.r_[rows, ext]
    cols = np.r_[cols, np.full(ext.size, points.shape[1] - 1)]
    lo_b, hi_b = np.r_[lo_b, points[ext, -1]], np.r_[hi_b, extra_hi[ext]]
    failed_sub = np.zeros(g, dtype=bool)
    failed_sub[np.flatnonzero((f[:, -1] > 0) & ~np.isfinite(extra_hi))] = True
    roots = np.empty(0)
    if rows.size:
        mid = np.where(lo_b > 0, np.sqrt(lo_b * hi_b), 0.5 * hi_b)
        roots = solve(sub.take(rows), equation, target[rows], lo_b, hi_b, mid)
        np.logical_or.at(failed_sub, rows, ~np.isfinite(roots))
    # the candidates: every bracket's root, and τ² = 0 where the score is ≤ 0 there
    zero_rows = np.flatnonzero(f[:, 0] <= 0)
    ll0 = sub.log_lik(np.zeros(g), reml)
    cand_row = np.r_[rows, zero_rows]
    cand_tau2 = np.r_[roots, np.zeros(zero_rows.size)]
    cand_ll = np.r_[
        sub.take(rows).log_lik(np.nan_to_num(roots), reml) if rows.size else [], ll0[zero_rows]
    ]
    cand_ll = np.where(np.isfinite(cand_tau2), cand_ll, -np.inf)
    # metafor's: the nearest bracket above its start where the score is positive there,
    # else the nearest below, else 0; then its check of the likelihood at 0
    f_start = f[np.arange(g), at_start]
    up = f_start > 0
    is_bracket = np.r_[np.ones(rows.size, dtype=bool), np.zeros(zero_rows.size, dtype=bool)]
    col = np.r_[cols, np.full(zero_rows.size, -1)]
    near = np.where(up[cand_row], col >= at_start[cand_row], col < at_start[cand_row])
    near &= is_bracket
    # among the near ones: the first above, the last below
    rank = np.where(up[cand_row], col, -col)
    key = np.where(near, rank, np.iinfo(np.int64).max)
    pick = np.full(g, -1)
    if cand_row.size:
        by = np.lexsort((key, cand_row))
        first = by[np.r_[True, cand_row[by][1:] != cand_row[by][:-1]]]
        first = first[near[first]]
        pick[cand_row[first]] = first
    metafor = np.where(pick >= 0, cand_tau2[np.maximum(pick, 0)], 0.0)
    metafor_ll = np.where(pick >= 0, cand_ll[np.maximum(pick, 0)], ll0)
    reset = (metafor > LL0_THRESHOLD * v_min) & (ll0 - metafor_ll > LL0_TOL)
    metafor = np.where(reset, 0.0, metafor)
    metafor_ll = np.where(reset, ll0, metafor_ll)
    # the highest, metafor's where they tie
    best_ll = np.full(g, -np.inf)
    np.maximum.at(best_ll, cand_row, cand_ll)
    best_ll = np.maximum(best_ll, np.where(reset, ll0, -np.inf))
    metafor_wins = metafor_ll >= best_ll - LL_TIE
    best = np.where(metafor_wins, metafor, np.nan)
    top_cand = np.flatnonzero(cand_ll >= best_ll[cand_row] - LL_TIE)
    top_cand = top_cand[np.isnan(best[cand_row[top_cand]])]
    best[cand_row[top_cand[::-1]]] = cand_tau2[top_cand[::-1]]  # the first of any tie
    # another maximum close in likelihood, far in τ²
    lo_t = np.minimum(cand_tau2, best[cand_row])
    hi_t = np.maximum(cand_tau2, best[cand_row])
    far = (hi_t + v_min[cand_row]) > FAR * (lo_t + v_min[cand_row])
    gap = best_ll[cand_row] - cand_ll
    close = far & (gap < LL_CLOSE) & np.isfinite(cand_ll)
    other = np.full(g, np.nan)
    other_gap = np.full(g, np.nan)
    idx = np.flatnonzero(close)
    if idx.size:
        by = idx[np.lexsort((gap[idx], cand_row[idx]))]
        first = by[np.r_[True, cand_row[by][1:] != cand_row[by][:-1]]]
        other[cand_row[first]] = cand_tau2[first]
        other_gap[cand_row[first]] = gap[first]
    elsewhere = ~metafor_wins & np.isfinite(best)
    best = np.where(failed_sub, np.nan, best)
    tau2[real] = best
    failed[real] = failed_sub | ~np.isfinite(best)
    info.put(real, Maxima(metafor, elsewhere & ~failed_sub, other, other_gap))
    return tau2, failed, info


def _iterative(b: Batch, method: str) -> tuple[np.ndarray, np.ndarray, Maxima]:
    if method in ("ML", "REML"):
        return maximize(b, method)
    tau2, failed = root(b, method)  # EB, PM: Q(τ²) falls as τ² grows, one root
    return tau2, failed, Maxima.none(len(b.k))


def tau2_ml(b: Batch) -> tuple[np.ndarray, np.ndarray, Maxima]:
    """ML: the highest maximum of the likelihood (:func:`maximize`); τ², the failed fits
    and the other maxima."""
    return _iterative(b, "ML")


def tau2_reml(b: Batch) -> tuple[np.ndarray, np.ndarray, Maxima]:
    """REML: the highest maximum of the restricted likelihood (:func:`maximize`); τ², the
    failed fits and the other maxima."""
    return _iterative(b, "REML")


def tau2_eb(b: Batch) -> tuple[np.ndarray, np.ndarray, Maxima]:
    """Empirical Bayes: the root of Q(τ²) = k − p started from max(0, HE); τ², the
    failed fits and (none) other maxima: Q falls strictly as τ² grows (dQ/dτ² =
    −y'P²y), so the root is unique."""
    return _iterative(b, "EB")


def tau2_pm(b: Batch) -> tuple[np.ndarray, np.ndarray, Maxima]:
    """Paule–Mandel: the root of Q(τ²) = k − p in [0, τ²_max]; τ², the failed fits
    and (none) other maxima (the root is unique, as for EB)."""
    return _iterative(b, "PM")


_CLOSED: dict[str, Callable[[Batch], np.ndarray]] = {
    "DL": tau2_dl,
    "HS": tau2_hs,
    "HE": tau2_he,
    "SJ": tau2_sj,
}
_ITERATIVE = {"ML": tau2_ml, "REML": tau2_reml, "EB": tau2_eb, "PM": tau2_pm}


def estimate(b: Batch, method: str) -> tuple[np.ndarray, np.ndarray, Maxima]:
    """τ² by ``method`` (``EE`` or one of :data:`RE_METHODS`), truncated at 0 (NaN
    stays NaN); the fits that failed to converge (NaN); for ML and REML what the search
    of the likelihood found besides (:class:`Maxima`). The one entry point of
    :func:`metaeval.pool` and :func:`metaeval.metareg`."""
    none = np.zeros(len(b.k), dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "EE":
            return np.zeros(len(b.k)), none, Maxima.none(len(b.k))
        if method in _CLOSED:
            tau2, failed, info = _CLOSED[method](b), none, Maxima.none(len(b.k))
        elif method in _ITERATIVE:
            tau2, failed, info = _ITERATIVE[method](b)
        else:
            raise ValueError(method)
    return np.maximum(0.0, tau2), failed, info


# --------------------------------------------------------------- Q-profile CI
def per_value(func: Callable[[np.ndarray], Any], x: np.ndarray) -> np.ndarray:
    """``func(x)`` computed once per distinct value of x (quantiles by degrees of freedom)."""
    values, inverse = np.unique(x, return_inverse=True)
    with np.errstate(invalid="ignore"):
        return np.asarray(func(values), dtype=float)[inverse]


def q_profile(b: Batch, tau2: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Q-profile confidence interval for τ² (metafor's ``confint()``, type "QP").

    The bounds solve Q(τ²) = χ²_{k−p} quantiles at 1 − α/2 (lower bound) and
    α/2 (upper bound); a bound is 0 when Q(0) is already below its quantile and
    τ²_max = max(100, 10 τ̂²) when Q(τ²_max) is still above it, as in metafor.
    Both bounds of every model are solved in one batch.
    """
    from scipy import stats as sps

    df = (b.k - b.p).astype(float)
    crit_u = per_value(lambda d: sps.chi2.isf(alpha / 2, d), df)
    crit_l = per_value(lambda d: sps.chi2.ppf(alpha / 2, d), df)
    zero = np.zeros(len(df))
    hi = np.maximum(100.0, 10 * np.nan_to_num(tau2))
    q0, qmax = b.q(zero), b.q(hi)
    low, high = np.full(len(df), np.nan), np.full(len(df), np.nan)
    # metafor's cases, in its order (the second block overrides the first)
    both_zero = q0 < crit_l
    low[both_zero] = high[both_zero] = 0.0
    cap_high = ~both_zero & (qmax > crit_l)
    high[cap_high] = hi[cap_high]
    both_max = qmax > crit_u
    low[both_max] = high[both_max] = hi[both_max]
    low_zero = ~both_max & (q0 < crit_u)
    low[low_zero] = 0.0
    real = b.k > b.p
    find_high = np.flatnonzero(~both_zero & ~cap_high & ~both_max & real)
    find_low = np.flatnonzero(~both_max & ~low_zero & real)
    rows = np.r_[find_high, find_low]
    if rows.size:
        target = np.r_[crit_l[find_high], crit_u[find_low]]
        start = np.nan_to_num(np.r_[tau2[find_high], tau2[find_low]])
        roots = solve(b.take(rows), q_equation, target, zero[rows], hi[rows], start)
        high[find_high], low[find_low] = roots[: len(find_high)], roots[len(find_high) :]
    low[~real] = high[~real] = np.nan
    return low, high


# ------------------------------------------------------- profile-likelihood CI
def pl_equation(b: Batch, tau2: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s·(−2 ll(τ²) − c) and its slope, ``target`` the columns (c, s, reml).

    Without a design the constant (k − p) log 2π of −2 ll is left out. c = −2 ll(τ̂²) +
    χ²₁,₁₋α (computed by this function, constants alike), so −2 ll(τ²) − c is the likelihood-ratio statistic
    minus its quantile; s = +1 for the lower bound (positive at 0, where the
    statistic exceeds the quantile, negative at τ̂²) and −1 for the upper one
    (positive at τ̂², negative beyond the bound), so that both cross 0 from above
    as :func:`solve` requires. d(−2 ll)/dτ² = −(y'P²y − t) with t = tr W (ML) or
    tr P (REML): the score of :func:`ml_equation` / :func:`reml_equation`.
    """
    crit, sign, reml = target[:, 0], target[:, 1], bool(target[0, 2] > 0)
    if b.x is None:  # one pass over the slots: the likelihood and its score together
        w = b.weights(tau2)
        sw = w.sum(axis=1)
        r = b.y - (np.einsum("gk,gk->g", w, b.y) / sw)[:, None]
        wr = w * r
        rss = np.einsum("gk,gk->g", wr, r)
        logdet = np.log(np.where(b.m, b.v + tau2[:, None], 1.0)).sum(axis=1)
        # the score only steers Newton's steps (the bracket keeps them safe): tr P in
        # its textbook form is accurate enough there
        t = sw - np.einsum("gk,gk->g", w, w) / sw if reml else sw
        neg2ll = logdet + rss + (np.log(sw) if reml else 0.0)
        return sign * (neg2ll - crit), -sign * (np.einsum("gk,gk->g", wr, wr) - t)
    a, _, t, _ = b.score_parts(tau2, reml=reml)
    return sign * (-2 * b.log_lik(tau2, reml) - crit), -sign * (a - t)


def profile_ci(
    b: Batch, tau2: np.ndarray, alpha: float, reml: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Profile-likelihood confidence interval for τ² (metafor's ``confint(type="PL")``).

    The bounds solve −2(ll(τ²) − ll(τ̂²)) = χ²₁,₁₋α with the (restricted, ``reml``)
    log-likelihood of the fit, β profiled out (:meth:`Batch.log_lik`). The lower
    bound is 0 where the statistic at τ² = 0 does not exceed the quantile (always
    when τ̂² = 0); the upper one is bracketed by quadrupling from max(τ̂², v_min)
    (:func:`bracket`) until the statistic exceeds the quantile — metafor stops at
    max(100, 10 τ̂²) and reports that cap instead, which only matters for effects
    whose τ² is of that order. Both bounds of every model are solved in one batch
    by :func:`solve` (relative tolerance :data:`ROOT_TOL`). NaN where k ≤ p or the
    bracket fails.
    """
    from scipy import stats as sps

    n = len(tau2)
    tau2 = np.nan_to_num(tau2)
    real = b.k > b.p
    flag = float(reml)
    # −2 ll(τ̂²) as pl_equation computes it (its constants, if any, cancel in the statistic)
    at_hat, _ = pl_equation(b, tau2, np.c_[np.zeros(n), np.ones(n), np.full(n, flag)])
    crit = at_hat + sps.chi2.isf(alpha, 1)
    low, high = np.full(n, np.nan), np.full(n, np.nan)
    zero = np.zeros(n)
    lower = np.c_[crit, np.ones(n), np.full(n, flag)]
    upper = np.c_[crit, -np.ones(n), np.full(n, flag)]
    f0, _ = pl_equation(b, zero, lower)
    low[real & ~(f0 > 0)] = 0.0  # the statistic at 0 is below the quantile
    find_low = np.flatnonzero(real & (f0 > 0))
    # the upper bound: bracket above τ̂², where the (upper) equation is χ²₁,₁₋α > 0
    find_high = np.flatnonzero(real)
    hi = np.full(n, np.nan)
    if find_high.size:
        sub = b.take(find_high)
        f_start = np.full(find_high.size, sps.chi2.isf(alpha, 1))
        _, hi[find_high] = bracket(sub, pl_equation, upper[find_high], tau2[find_high], f_start)
    find_high = find_high[np.isfinite(hi[find_high])]
    rows = np.r_[find_low, find_high]
    if rows.size:
        target = np.r_[lower[find_low], upper[find_high]]
        lo_end = np.r_[zero[find_low], tau2[find_high]]
        hi_end = np.r_[tau2[find_low], hi[find_high]]
        start = 0.5 * (lo_end + hi_end)
        roots = solve(b.take(rows), pl_equation, target, lo_end, hi_end, start)
        low[find_low], high[find_high] = roots[: len(find_low)], roots[len(find_low) :]
    return low, high

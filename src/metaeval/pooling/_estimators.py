"""Random-effects estimators for many intercept-only meta-analyses at once.

Every function works on a *batch*: G meta-analyses padded to K slots, as
``(G, K)`` arrays ``y`` (effects), ``v`` (sampling variances) and ``m`` (which
slots hold an effect). Sums run along the last axis, so one numpy operation
serves every analysis; iterative estimators iterate all analyses in lockstep
and drop each one from the work set when it has converged, never looping over
analyses.

Definitions follow metafor's ``rma.uni()`` for a model with an intercept only
(Viechtbauer 2010), with w_i = 1/(v_i + τ²), μ̂(τ²) = Σw_i y_i/Σw_i,
r_i = y_i − μ̂ and the generalized Q(τ²) = Σ w_i r_i²:

- ``DL``  τ² = (Q(0) − (k − 1)) / (Σw − Σw²/Σw) at τ² = 0 (DerSimonian & Laird 1986)
- ``HS``  τ² = (Q(0) − k) / Σw at τ² = 0 (Hunter & Schmidt 2004)
- ``HE``  τ² = (Σ(y − ȳ)² − (1 − 1/k) Σv) / (k − 1) (Hedges 1983)
- ``SJ``  τ₀² = Σ(y − ȳ)²/k, τ² = τ₀² Q(τ₀²)/(k − 1) (Sidik & Jonkman 2005)
- ``ML``   the root of Σw²r² − Σw = 0 (the ML score equation)
- ``REML`` the root of Σw²r² − (Σw − Σw²/Σw) = 0 (the REML score equation)
- ``PM``, ``EB`` the root of Q(τ²) = k − 1 (Paule & Mandel 1982; Morris 1983:
  metafor's EB scoring step (Q·k/(k − 1) − k)/Σw vanishes exactly there)

each truncated at 0: τ² = 0 when the left side is already ≤ 0 at τ² = 0.

metafor reaches ML, REML and EB by Fisher scoring from the HE value (truncated at
0) and PM by ``uniroot`` on [0, τ²_max]; metaeval solves the same equations with
Newton steps kept inside a bracket (bisection when a step leaves it), started
from the same HE value, so both end at the same root. The differences are in
how close they get: metaeval stops when a step is below 1e-10·max(τ², v_min)
(v_min the smallest sampling variance), metafor by default when a scoring step is below
1e-5 in absolute terms or ``uniroot``'s bracket below ε^¼ ≈ 1.2e-4, which leaves
τ² off by up to a few percent. With ``control=list(threshold=1e-12, tol=1e-12)``
metafor gives metaeval's values. Newton also converges where metafor's Fisher
scoring oscillates and stops with "did not converge" (its help suggests
``stepadj``). For ML and REML, metafor's check is kept: when the likelihood at
τ² = 0 exceeds the one at the root by more than ε^¼, τ² is set to 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

RE_METHODS = ("DL", "HE", "HS", "SJ", "ML", "REML", "EB", "PM")
MAXITER = 500
ROOT_TOL = 1e-10
LL0_TOL = np.finfo(float).eps ** 0.25  # metafor's ll0check tolerance
LL0_THRESHOLD = 1e-5  # metafor's threshold of its ll0check (here relative to the mean variance)
# doublings of the PM search's upper end beyond max(100, 10·mad²): 2**200 covers any float scale
PM_DOUBLINGS = 200


@dataclass
class Batch:
    """G meta-analyses padded to K slots (see the module docstring)."""

    y: np.ndarray
    v: np.ndarray
    m: np.ndarray

    def __post_init__(self) -> None:
        self.y = np.where(self.m, self.y, 0.0)
        self.v = np.where(self.m, self.v, np.inf)  # empty slots get weight 1/inf = 0
        self.k = self.m.sum(axis=1)

    def take(self, rows: np.ndarray) -> Batch:
        out = object.__new__(Batch)
        out.y, out.v, out.m, out.k = self.y[rows], self.v[rows], self.m[rows], self.k[rows]
        return out

    def weights(self, tau2: np.ndarray) -> np.ndarray:
        """w_i = 1/(v_i + τ²) in the occupied slots, 0 elsewhere."""
        return 1.0 / (self.v + tau2[:, None])

    def residuals(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Σw and r_i = y_i − μ̂ (−μ̂ in empty slots, where every sum weighs it by w = 0)."""
        sw = w.sum(axis=1)
        mu = np.einsum("gk,gk->g", w, self.y) / sw
        return sw, self.y - mu[:, None]

    def q(self, tau2: np.ndarray) -> np.ndarray:
        """The generalized Q statistic Q(τ²) = Σ w_i (y_i − μ̂(τ²))²."""
        w = self.weights(tau2)
        _, r = self.residuals(w)
        return np.einsum("gk,gk,gk->g", w, r, r)

    def small_variance(self) -> np.ndarray:
        """The smallest sampling variance of each analysis: the scale of τ² that matters.

        The estimate is decided by the precise effects; a mean of the variances
        would be swamped by one imprecise effect (1e14 beside 1e-3) and stop the
        root search long before τ² is found.
        """
        return np.where(self.m, self.v, np.inf).min(axis=1, initial=np.inf)


# ----------------------------------------------------------------- closed forms
def trace_p(w: np.ndarray, sw: np.ndarray) -> np.ndarray:
    """tr P = Σw − Σw²/Σw for every row of weights ``w`` (``sw`` = Σw), without cancellation.

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


def fe_parts(b: Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Σw, Σw − Σw²/Σw (tr P) and Cochran's Q with the common-effect weights 1/v."""
    w = b.weights(np.zeros(len(b.k)))
    sw = w.sum(axis=1)
    return sw, trace_p(w, sw), b.q(np.zeros(len(b.k)))


def _unweighted_rss(b: Batch) -> np.ndarray:
    ybar = b.y.sum(axis=1) / b.k
    r = (b.y - ybar[:, None]) * b.m
    return (r * r).sum(axis=1)


def tau2_he(b: Batch) -> np.ndarray:
    k = b.k.astype(float)
    tr_pv = np.where(b.m, b.v, 0.0).sum(axis=1) * (1 - 1 / k)
    return (_unweighted_rss(b) - tr_pv) / (k - 1)


def tau2_closed(b: Batch, method: str) -> np.ndarray:
    """DL, HS, HE or SJ (untruncated)."""
    k = b.k.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "HE":
            return tau2_he(b)
        if method == "SJ":
            tau2_0 = _unweighted_rss(b) / k
            return tau2_0 * b.q(tau2_0) / (k - 1)
        sw, trace_p, q = fe_parts(b)
        if method == "DL":
            return (q - (k - 1)) / trace_p
        if method == "HS":
            return (q - k) / sw
    raise ValueError(method)


# ------------------------------------------------------- estimating equations
# Each returns f(τ²) and df/dτ² for a batch; the estimate is where f crosses 0
# from above. With r the residuals: d(Σw²r²)/dτ² = −2Σw³r² + 2(Σw²r)²/Σw, and
# d(Σw − Σw²/Σw)/dτ² = −(Σw² − 2Σw³/Σw + (Σw²)²/(Σw)²).
Equation = Callable[[Any, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


class Analyses(Protocol):
    """What the root search needs of a batch: :class:`Batch`, or the meta-regressions'."""

    def take(self, rows: np.ndarray) -> Analyses: ...

    def small_variance(self) -> np.ndarray: ...


def _score(b: Batch, tau2: np.ndarray, reml: bool) -> tuple[np.ndarray, np.ndarray]:
    w = b.weights(tau2)
    sw, r = b.residuals(w)
    w2 = w * w
    w2r = w2 * r
    a = np.einsum("gk,gk->g", w2r, r)
    b3 = np.einsum("gk,gk->g", w2r * w, r)
    c = w2r.sum(axis=1)
    sw2 = w2.sum(axis=1)
    slope = -2 * b3 + 2 * c * c / sw
    if reml:
        sw3 = np.einsum("gk,gk->g", w2, w)
        trace_pp = sw2 - 2 * sw3 / sw + sw2 * sw2 / (sw * sw)
        return a - trace_p(w, sw), slope + trace_pp
    return a - sw, slope + sw2


def _ml(b: Batch, tau2: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _score(b, tau2, reml=False)


def _reml(b: Batch, tau2: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _score(b, tau2, reml=True)


def _q_minus(b: Batch, tau2: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log Q(τ²) − log target and its derivative (dQ/dτ²)/Q, dQ/dτ² = −Σ w² r².

    On the log scale Q(τ²), which falls like 1/τ², is nearly linear, so Newton
    steps land close to the root; the root is the one of Q(τ²) = target.
    """
    w = b.weights(tau2)
    _, r = b.residuals(w)
    wr2 = w * r * r
    q = wr2.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(q) - np.log(target), -np.einsum("gk,gk->g", wr2, w) / q


# --------------------------------------------------------------- root search
def solve(
    b: Analyses,
    equation: Equation,
    target: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    start: np.ndarray,
) -> np.ndarray:
    """The root of ``equation`` in [lo, hi] for every analysis, in lockstep.

    Requires f(lo) > 0 ≥ f(hi). Newton steps from ``start`` (clipped into the
    bracket), replaced by bisection when they would leave the bracket, which
    shrinks around the sign change at every step. An analysis is done when a
    step is below :data:`ROOT_TOL`·max(τ², v_min) (the result of that step, past
    Newton's quadratic convergence, is far more accurate), f is exactly 0 or
    the bracket is that narrow. NaN where that does not happen within
    :data:`MAXITER` steps.
    """
    lo, hi = lo.astype(float).copy(), hi.astype(float).copy()
    x = np.clip(np.nan_to_num(start), lo, hi)
    out = np.full(len(x), np.nan)
    floor = b.small_variance()
    # `sub` holds the analyses still being solved plus, until it is compacted (when
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
    b: Analyses, equation: Equation, target: np.ndarray, start: np.ndarray, f_start: np.ndarray
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


def tau2_root(b: Batch, method: str) -> tuple[np.ndarray, np.ndarray]:
    """ML, REML, EB or PM: τ² and a mask of analyses without a result.

    The root is searched next to metafor's starting value max(0, HE): upwards
    when the equation is positive there, downwards otherwise, ending at 0 when
    it stays negative all the way down — the root Fisher scoring from that start
    converges to. PM follows metafor's rules: 0 when Q(0) < k − 1, else the
    root in [0, τ²_max], τ²_max = max(100, 10·mad(y)²) — except that where the
    root lies beyond τ²_max (metafor stops with an error there) the upper end is
    doubled until it brackets the root: Q(τ²) falls to 0 as τ² grows, so the
    root always exists.
    """
    k = b.k.astype(float)
    equation: Equation = {"ML": _ml, "REML": _reml}.get(method, _q_minus)
    target = k - 1  # used by the Q equation only
    real = b.k > 1
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


def _log_lik(b: Batch, tau2: np.ndarray, reml: bool) -> np.ndarray:
    w = b.weights(tau2)
    sw, r = b.residuals(w)
    rss = np.einsum("gk,gk,gk->g", w, r, r)
    k = b.k.astype(float)
    logdet = np.log(np.where(b.m, b.v + tau2[:, None], 1.0)).sum(axis=1)
    if reml:
        return -0.5 * (k - 1) * np.log(2 * np.pi) - 0.5 * logdet - 0.5 * np.log(sw) - 0.5 * rss
    return -0.5 * k * np.log(2 * np.pi) - 0.5 * logdet - 0.5 * rss


def ll0_check(b: Batch, tau2: np.ndarray, method: str) -> np.ndarray:
    """metafor's check for ML/REML: where ll(0) − ll(τ̂²) > ε^¼ (and τ̂² > 1e-5·v_min).

    metafor checks where τ̂² > 1e-5; the threshold here is relative to the mean
    smallest sampling variance v_min (the same for v_min = 1), so that rescaling the effects
    changes nothing. The likelihood difference itself does not depend on the
    scale.
    """
    reset = np.zeros(len(tau2), dtype=bool)
    check = np.isfinite(tau2) & (tau2 > LL0_THRESHOLD * b.small_variance()) & (b.k > 1)
    if method in ("ML", "REML") and check.any():
        idx = np.flatnonzero(check)
        sub = b.take(idx)
        reml = method == "REML"
        gap = _log_lik(sub, np.zeros(len(idx)), reml) - _log_lik(sub, tau2[idx], reml)
        reset[idx[gap > LL0_TOL]] = True
    return reset


def per_value(func: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """``func(x)`` computed once per distinct value of x (quantiles by degrees of freedom)."""
    values, inverse = np.unique(x, return_inverse=True)
    with np.errstate(invalid="ignore"):
        return np.asarray(func(values), dtype=float)[inverse]


def tau2_max_pm(b: Batch) -> np.ndarray:
    """metafor's upper end of the PM search: max(100, 10·mad(y)²)."""
    y = np.where(b.m, b.y, np.nan)
    med = np.nanmedian(y, axis=1)
    mad = 1.4826 * np.nanmedian(np.abs(y - med[:, None]), axis=1)
    return np.maximum(100.0, 10 * mad**2)


def q_profile(b: Batch, tau2: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Q-profile confidence interval for τ² (metafor's ``confint()``, type "QP").

    The bounds solve Q(τ²) = χ²_{k−1} quantiles at 1 − α/2 (lower bound) and
    α/2 (upper bound); a bound is 0 when Q(0) is already below its quantile and
    τ²_max = max(100, 10 τ̂²) when Q(τ²_max) is still above it, as in metafor.
    Both bounds of every analysis are solved in one batch.
    """
    from scipy import stats as sps

    k = b.k.astype(float)
    crit_u = per_value(lambda df: sps.chi2.isf(alpha / 2, df), k - 1)
    crit_l = per_value(lambda df: sps.chi2.ppf(alpha / 2, df), k - 1)
    zero = np.zeros(len(k))
    hi = np.maximum(100.0, 10 * np.nan_to_num(tau2))
    q0, qmax = b.q(zero), b.q(hi)
    low, high = np.full(len(k), np.nan), np.full(len(k), np.nan)
    # metafor's cases, in its order (the second block overrides the first)
    both_zero = q0 < crit_l
    low[both_zero] = high[both_zero] = 0.0
    cap_high = ~both_zero & (qmax > crit_l)
    high[cap_high] = hi[cap_high]
    both_max = qmax > crit_u
    low[both_max] = high[both_max] = hi[both_max]
    low_zero = ~both_max & (q0 < crit_u)
    low[low_zero] = 0.0
    real = b.k > 1
    find_high = np.flatnonzero(~both_zero & ~cap_high & ~both_max & real)
    find_low = np.flatnonzero(~both_max & ~low_zero & real)
    rows = np.r_[find_high, find_low]
    if rows.size:
        target = np.r_[crit_l[find_high], crit_u[find_low]]
        start = np.nan_to_num(np.r_[tau2[find_high], tau2[find_low]])
        roots = solve(b.take(rows), _q_minus, target, zero[rows], hi[rows], start)
        high[find_high], low[find_low] = roots[: len(find_high)], roots[len(find_high) :]
    low[~real] = high[~real] = np.nan
    return low, high

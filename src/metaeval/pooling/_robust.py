"""Cluster-robust (sandwich) covariance of GLS coefficients: CR1 and CR2, every group at once.

A fit with working weights W = Σ̂⁻¹ (Σ̂ the model's marginal covariance: v_i + τ̂² for
:func:`metaeval.metareg`, V_t + σ²_task·11' + σ²_metric·I per task for the multilevel
:func:`metaeval.pool`), coefficients β̂ = M X'Wy with M = (X'WX)⁻¹ and residuals
e = y − Xβ̂, and clusters j (blocks of Σ̂ never cross them):

- ``CR1`` (metafor's ``robust(fit, cluster, adjust = TRUE)``):
  V = n/(n − p) · M Σ_j X_j'W_j e_j e_j'W_j X_j M, t with n − p df (n clusters, p
  coefficients);
- ``CR2`` (Bell & McCaffrey 2002; the bias-reduced linearization of clubSandwich's
  ``vcovCR(type = "CR2")`` with the target Θ = Σ̂): with L_j the lower Cholesky factor of
  Θ_j and G_j = L_j'(I − X_j M X_j'W_j)Θ_j L_j, the adjustment
  A_j = L_j G_j^(−1/2) L_j' (eigenvalues of G_j at most 1e-12/w̄² give 0, w̄ the group's
  mean working weight: clubSandwich's ``matrix_power`` tolerance 1e-12 on the scale where
  the weights average 1, as clubSandwich scales an ``rma.uni`` fit's, so that multiplying
  every variance by c multiplies the robust se by √c and leaves the df as they are; an
  absolute 1e-12 gave se 0 and df NaN for variances of order 1e-6) and V = M Σ_j X_j'W_j A_j e_j e_j'A_j'W_j X_j M. Each coefficient i
  has the Satterthwaite df of Pustejovsky & Tipton (2018, clubSandwich's
  ``coef_test(test = "Satterthwaite")``): with g_ij = (M E_j L_j)[i, ·] and
  h_ij = (M E_j X_j L_M)[i, ·] (E_j = X_j'W_j A_j, L_M L_M' = M), the J × J matrix
  P_i = diag(|g_ij|²) − (h_ij·h_ij') gives df_i = (tr P_i)² / ‖P_i‖²_F.

The clusters are laid out as ``(group, cluster, slot)`` arrays padded with inert slots
(no design row, no residual, identity blocks of W and Θ), so every step is a batched
operation over all groups and clusters.

References
----------
Bell, R. M., & McCaffrey, D. F. (2002). Bias reduction in standard errors for linear
regression with multi-stage samples. *Survey Methodology*, 28(2), 169–181. (no DOI)
Pustejovsky, J. E., & Tipton, E. (2018). Small-sample methods for cluster-robust variance
estimation and hypothesis testing in fixed effects models. *Journal of Business &
Economic Statistics*, 36(4), 672–683. doi:10.1080/07350015.2016.1247004
Tipton, E. (2015). Small sample adjustments for robust variance estimation with
meta-regression. *Psychological Methods*, 20(3), 375–393. doi:10.1037/met0000011
"""

from __future__ import annotations

import numpy as np

from .._options import ROBUST_METHODS
from ..errors import OptionError

__all__ = ["check_robust", "sandwich", "weight_scale", "EIGEN_TOL"]


def check_robust(robust: object) -> str | None:
    """``robust`` as "CR1"/"CR2" or None (off): True means "CR1"; anything else is an
    :class:`~metaeval.OptionError` naming ``robust``."""
    if robust is False or robust is None or robust is np.False_:
        return None
    if robust is True or robust is np.True_:
        return "CR1"
    if isinstance(robust, str) and robust in ROBUST_METHODS:
        return robust
    raise OptionError(
        f"The value for `robust` must be False, True (meaning 'CR1') or one of "
        f"{list(ROBUST_METHODS)}, but {robust!r} was passed."
    )


#: Eigenvalues of G_j at or below this (on the scale where the working weights average 1)
#: count as 0: clubSandwich's ``matrix_power(tol = -12)``.
EIGEN_TOL = 1e-12


def _inv_sqrt(g: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """The symmetric G^(−1/2), eigenvalues ≤ ``tol`` (broadcast against G's leading axes)
    giving 0 (clubSandwich's matrix_power)."""
    g = 0.5 * (g + np.swapaxes(g, -1, -2))
    val, vec = np.linalg.eigh(g)
    small = val <= tol[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        root = np.where(small, 0.0, 1 / np.sqrt(np.where(small, 1.0, val)))
    return np.einsum("...ij,...j,...kj->...ik", vec, root, vec)


def weight_scale(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The mean working weight of each group, (G,): the mean diagonal of W over the
    slots that hold an effect (a design row that is not all 0)."""
    held = (x != 0).any(axis=-1)  # (G, J, S)
    diag = np.diagonal(w, axis1=-2, axis2=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(held, diag, 0.0).sum(axis=(1, 2)) / held.sum(axis=(1, 2))


def sandwich(
    kind: str,
    x: np.ndarray,
    e: np.ndarray,
    w: np.ndarray,
    theta: np.ndarray,
    bread: np.ndarray,
    n_cluster: np.ndarray,
    n_coef: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The robust covariance (G, p, p) and the df (G, p) of every coefficient.

    ``x`` (G, J, S, p) the design rows of each cluster's slots (0 in padded slots and
    in columns not estimated), ``e`` (G, J, S) the residuals (0 padded), ``w`` and
    ``theta`` (G, J, S, S) W_j and Θ_j = W_j⁻¹ (identity in padded slots), ``bread``
    (G, p, p) M = (X'WX)⁻¹, ``n_cluster`` and ``n_coef`` (G,) the clusters with
    effects and the estimated coefficients (see the module docstring).
    """
    xw = np.einsum("gjsp,gjsr->gjpr", x, w)  # X_j'W_j (G, J, p, S)
    if kind == "CR1":
        u = np.einsum("gjps,gjs->gjp", xw, e)
        meat = np.einsum("gjp,gjq->gpq", u, u)
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = n_cluster / (n_cluster - n_coef)
        vcov = factor[:, None, None] * (bread @ meat @ bread)
        df = np.repeat((n_cluster - n_coef).astype(float)[:, None], x.shape[-1], axis=1)
        return vcov, df
    low = np.linalg.cholesky(theta)  # Θ_j = L L'
    hat = np.einsum("gjsp,gpq,gjqr->gjsr", x, bread, xw)  # X_j M X_j'W_j
    ih = np.eye(x.shape[2]) - hat
    g = np.swapaxes(low, -1, -2) @ ih @ theta @ low
    # G_j scales as Θ²: its zero eigenvalues are judged on the scale where the weights
    # average 1 (as clubSandwich normalizes an rma.uni fit's), not in absolute terms
    tol = EIGEN_TOL / weight_scale(x, w) ** 2
    adj = low @ _inv_sqrt(g, tol[:, None]) @ np.swapaxes(low, -1, -2)  # A_j
    est = xw @ adj  # E_j = X_j'W_j A_j (G, J, p, S)
    me = np.einsum("gpq,gjqs->gjps", bread, est)  # M E_j
    u = np.einsum("gjps,gjs->gjp", me, e)
    vcov = np.einsum("gjp,gjq->gpq", u, u)
    # Satterthwaite: |g_ij|² = (M E_j Θ_j E_j' M)_ii, h_ij·h_ik = (F_j M F_k')_ii
    gg = np.einsum("gjps,gjsr,gjpr->gpj", me, theta, me)
    f = np.einsum("gjps,gjsq->gjpq", me, x)  # M E_j X_j (G, J, p, p)
    cross = np.einsum("gjpq,gqr,gkpr->gpjk", f, bread, f)  # (G, p, J, J)
    diag_cross = np.einsum("gpjj->gpj", cross)
    trace = gg.sum(axis=2) - diag_cross.sum(axis=2)
    frob = (cross**2).sum(axis=(2, 3)) - 2 * (gg * diag_cross).sum(axis=2) + (gg**2).sum(axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = trace**2 / frob
    return vcov, df

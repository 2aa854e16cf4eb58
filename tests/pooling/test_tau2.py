"""The τ² estimators: one family for pool() and metareg() (pooling/_tau2.py).

Checked against a naive per-model loop of the documented formulas (explicit
matrices P = W − WX(X'WX)⁻¹X'W, scipy's ``brentq`` for the roots), with and
without moderators, against metafor with a moderator for every estimator
(fixtures/metafor/make_tau2_mods.R), and the intercept-only fast path against the
same functions given the design X = 1.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _helpers import FIXTURES
from scipy import optimize

import metaeval
from metaeval.pooling import _tau2 as t2

LL0_TOL = np.finfo(float).eps ** 0.25


def _naive(y: np.ndarray, v: np.ndarray, x: np.ndarray, method: str) -> float:
    """τ² of one model from the formulas of the module docstring, matrix by matrix."""
    k, p = x.shape

    def parts(tau2: float) -> tuple[np.ndarray, np.ndarray]:
        w = np.diag(1 / (v + tau2))
        p_mat = w - w @ x @ np.linalg.solve(x.T @ w @ x, x.T @ w)
        return w, p_mat

    w0, p0 = parts(0.0)
    if method == "DL":
        return max(0.0, (y @ p0 @ y - (k - p)) / np.trace(p0))
    if method == "HS":
        return max(0.0, (y @ p0 @ y - k) / np.trace(w0))
    if method == "HE":
        resid = np.eye(k) - x @ np.linalg.solve(x.T @ x, x.T)
        return max(0.0, (y @ resid @ y - np.trace(resid @ np.diag(v))) / (k - p))
    if method == "SJ":
        tau2_0 = np.var(y)
        return max(0.0, tau2_0 * (y @ parts(tau2_0)[1] @ y) / (k - p))

    def f(tau2: float) -> float:
        w, p_mat = parts(tau2)
        if method == "ML":
            return y @ p_mat @ p_mat @ y - np.trace(w)
        if method == "REML":
            return y @ p_mat @ p_mat @ y - np.trace(p_mat)
        return y @ p_mat @ y - (k - p)  # PM, EB

    if f(0.0) <= 0:
        return 0.0
    hi = 1.0
    while f(hi) > 0:
        hi *= 2
    tau2 = optimize.brentq(f, 0.0, hi, xtol=1e-16, rtol=1e-14)

    def log_lik(t: float) -> float:
        w, p_mat = parts(t)
        out = -0.5 * np.sum(np.log(v + t)) - 0.5 * y @ p_mat @ y
        return out - 0.5 * np.linalg.slogdet(x.T @ w @ x)[1] if method == "REML" else out

    if method in ("ML", "REML") and tau2 > 1e-5 * v.min():
        if log_lik(0.0) - log_lik(tau2) > LL0_TOL:
            return 0.0
    return tau2


def _models(rng: np.random.Generator, n: int, p: int, spread: float = 100.0):
    """n models of 2p + 1..16 effects with an intercept and p − 1 normal moderators,
    padded to one batch."""
    ks = rng.integers(2 * p + 1, 17, n)
    width = int(ks.max())
    m = np.arange(width) < ks[:, None]
    v = 0.01 * np.exp(rng.uniform(0, np.log(spread), (n, width)))
    x = np.concatenate([np.ones((n, width, 1)), rng.normal(size=(n, width, p - 1))], axis=2)
    beta = rng.normal(0, 0.2, (n, p))
    tau2 = np.where(rng.random(n) < 0.2, 0.0, rng.exponential(0.05, n))
    y = np.einsum("gkp,gp->gk", x, beta) + rng.normal(0, np.sqrt(v + tau2[:, None]))
    return y, v, m, x


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("method", t2.RE_METHODS)
def test_estimators_match_the_formulas(method, p):
    rng = np.random.default_rng(len(method) * 10 + p)
    y, v, m, x = _models(rng, 40, p)
    batch = t2.Batch(y, v, m) if p == 1 else t2.Batch(y, v, m, x)
    got, failed, _ = t2.estimate(batch, method)
    expected = [_naive(y[g, m[g]], v[g, m[g]], x[g, m[g]], method) for g in range(len(y))]
    assert not failed.any()
    assert (got > 0).sum() >= 10  # the truncation at 0 is not all that is checked
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-13)


@pytest.mark.parametrize("method", ["EE", *t2.RE_METHODS])
def test_intercept_fast_path_is_the_design_with_a_column_of_ones(method):
    """pool()'s closed-form sums are the p = 1 case of metareg()'s design path, also
    with padded slots and variances over ten orders of magnitude."""
    rng = np.random.default_rng(7)
    n, width = 300, 25
    ks = rng.integers(2, width + 1, n)
    m = np.arange(width) < ks[:, None]
    v = 1e-3 * np.exp(rng.uniform(0, np.log(10.0 ** rng.uniform(1, 10, (n, 1))), (n, width)))
    y = rng.normal(0, np.sqrt(v + rng.exponential(0.05, (n, 1))))
    fast = t2.Batch(y, v, m)
    design = t2.Batch(y, v, m, np.ones((n, width, 1)))
    tau2, failed, found = t2.estimate(fast, method)
    tau2_x, failed_x, found_x = t2.estimate(design, method)
    np.testing.assert_array_equal(failed, failed_x)
    np.testing.assert_array_equal(found.elsewhere, found_x.elsewhere)
    np.testing.assert_array_equal(found.ambiguous, found_x.ambiguous)
    np.testing.assert_allclose(tau2, tau2_x, rtol=1e-9, atol=1e-12 * v.min())
    for part, part_x in zip(fast.fixed_parts(), design.fixed_parts(), strict=True):
        np.testing.assert_allclose(part, part_x, rtol=1e-9)


def test_pool_and_metareg_share_one_estimator(monkeypatch):
    """Both fits reach τ² through the one entry point: pool() with the intercept-only
    batch, metareg() with its design (and the model without moderators for R²)."""
    seen: list[tuple[str, int]] = []
    estimate = t2.estimate

    def spy(b, method):
        seen.append((method, 1 if b.x is None else b.x.shape[2]))
        return estimate(b, method)

    monkeypatch.setattr(t2, "estimate", spy)
    eff = pd.DataFrame(
        {
            "task": list("abcdefgh"),
            "effect": [0.05, 0.12, 0.30, 0.21, 0.42, 0.38, 0.55, 0.49],
            "variance": [0.004, 0.006, 0.005, 0.003, 0.008, 0.004, 0.006, 0.005],
            "log_n": [3.0, 3.4, 4.1, 4.0, 5.2, 5.0, 6.1, 5.9],
        }
    )
    pooled = metaeval.pool(eff, method="PM")
    assert seen == [("PM", 1)]
    assert pooled["tau2"].iloc[0] > 0
    metaeval.metareg(eff, "log_n", method="ML")
    assert seen[1:] == [("ML", 2), ("ML", 1)]


@pytest.mark.parametrize("method", t2.RE_METHODS)
def test_design_path_matches_metafor(method):
    """rma(yi, vi, mods = ~ x, method=...) for all eight estimators, SJ, EB and PM
    included (metareg() does not offer them; the family computes them all)."""
    d = pd.read_csv(FIXTURES / "metafor" / "tau2_mods.csv.gz")
    slot = d.groupby("id").cumcount().to_numpy()
    g = d["id"].rank(method="dense").to_numpy(int) - 1
    shape = (g.max() + 1, slot.max() + 1)
    y, v, m, x = np.zeros(shape), np.ones(shape), np.zeros(shape, bool), np.zeros((*shape, 2))
    y[g, slot], v[g, slot], m[g, slot] = d["yi"], d["vi"], True
    x[g, slot, 0], x[g, slot, 1] = 1.0, d["x"]
    got, failed, _ = t2.estimate(t2.Batch(y, v, m, x), method)
    expected = d.groupby("id")[f"tau2_{method}"].first().to_numpy()
    assert not failed.any()
    assert (expected > 0).sum() >= 20
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-14)

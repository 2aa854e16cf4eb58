"""bayes_pool(): against an independent quadrature (scipy ``quad``) of the posterior written
from its formulas, against bayesmeta's published examples, groups at once, bad input."""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, optimize, stats

import metaeval
from metaeval.errors import DegenerateWarning, OptionError

SCHOOLS_Y = [28.39, 7.94, -2.75, 6.82, -0.64, 0.63, 18.01, 12.16]
SCHOOLS_SE = [14.9, 10.2, 16.3, 11.0, 9.4, 11.4, 10.4, 17.6]


def table(y, v, **keys) -> pd.DataFrame:
    return pd.DataFrame({"task": [f"t{i}" for i in range(len(y))], "effect": y, "variance": v,
                         **keys})  # fmt: skip


# ------------------------------------------------------------------ the reference
class Reference:
    """The posterior by scipy quad, from the formulas (bayesmeta; Röver 2020, sec. 2)."""

    def __init__(self, y, v, prior, scale, df=3.0, mu_prior=None):
        self.y, self.v = np.asarray(y, float), np.asarray(v, float)
        self.prior, self.scale, self.df, self.mu_prior = prior, scale, df, mu_prior
        self.upper = scale if prior == "uniform" else np.inf
        self.z = self._quad(lambda t: self.dens(t))

    def p_tau(self, t):
        s = self.scale
        if self.prior == "halfnormal":
            return 2 * stats.norm.pdf(t / s) / s
        if self.prior == "halfcauchy":
            return 2 / (math.pi * s * (1 + (t / s) ** 2))
        if self.prior == "halfstudent":
            return 2 * stats.t.pdf(t / s, self.df) / s
        if self.prior == "uniform":
            return 1.0 / s if t <= s else 0.0
        return math.sqrt(np.sum((t / (self.v + t * t)) ** 2))  # Jeffreys

    def cond(self, t):
        """μ̂(τ), Σw (with the μ prior as an observation whose variance has no τ²)."""
        y, vt = self.y, self.v + t * t
        if self.mu_prior is not None:
            y, vt = np.r_[y, self.mu_prior[0]], np.r_[vt, self.mu_prior[1] ** 2]
        w = 1 / vt
        return np.sum(w * y) / np.sum(w), np.sum(w), w, y

    def dens(self, t):
        mu, sw, w, y = self.cond(t)
        loglik = -0.5 * (np.sum(np.log(self.v + t * t)) + math.log(sw) + np.sum(w * (y - mu) ** 2))
        return self.p_tau(t) * math.exp(loglik)

    def _quad(self, f, a=0.0, b=None):
        b = self.upper if b is None else b
        opts = dict(epsabs=1e-13, epsrel=1e-12, limit=500)
        if np.isinf(b):  # split where the mass is, then the tail
            m = 3 * (math.sqrt(np.median(self.v)) + self.scale)
            if a < m:
                return integrate.quad(f, a, m, **opts)[0] + integrate.quad(f, m, b, **opts)[0]
        return integrate.quad(f, a, b, **opts)[0]

    def tau_cdf(self, x):
        return self._quad(self.dens, 0.0, x) / self.z

    def tau_quantile(self, q):
        hi = 1.0
        while self.tau_cdf(hi) < q:
            hi *= 2
        return optimize.brentq(lambda x: self.tau_cdf(x) - q, 0.0, hi, xtol=1e-13, rtol=1e-13)

    def mixture_cdf(self, x, new=False):
        def f(t):
            mu, sw, _, _ = self.cond(t)
            sd = math.sqrt(1 / sw + (t * t if new else 0.0))
            return self.dens(t) * stats.norm.cdf((x - mu) / sd)

        return self._quad(f) / self.z

    def mixture_quantile(self, q, new=False):
        lo, hi = -1.0, 1.0
        while self.mixture_cdf(lo, new) > q:
            lo *= 2
        while self.mixture_cdf(hi, new) < q:
            hi *= 2
        return optimize.brentq(lambda x: self.mixture_cdf(x, new) - q, lo, hi, xtol=1e-13,
                               rtol=1e-13)  # fmt: skip

    def mu_moments(self):
        m1 = self._quad(lambda t: self.dens(t) * self.cond(t)[0]) / self.z
        m2 = self._quad(lambda t: self.dens(t) * (self.cond(t)[0] ** 2 + 1 / self.cond(t)[1]))
        return m1, math.sqrt(m2 / self.z - m1 * m1)

    def shrunk(self, i):
        def mean_var(t):
            mu, sw, _, _ = self.cond(t)
            b = self.v[i] / (self.v[i] + t * t)
            return b * mu + (1 - b) * self.y[i], self.v[i] * t * t / (self.v[i] + t * t) + b * b / sw

        m1 = self._quad(lambda t: self.dens(t) * mean_var(t)[0]) / self.z
        m2 = self._quad(lambda t: self.dens(t) * (mean_var(t)[0] ** 2 + mean_var(t)[1])) / self.z
        return m1, math.sqrt(m2 - m1 * m1)


DATA = {
    "schools": (SCHOOLS_Y, [s * s for s in SCHOOLS_SE]),
    "small": ([0.12, 0.31, -0.05, 0.22], [0.01, 0.02, 0.015, 0.04]),
    "hetero": ([0.9, -0.4, 0.3, 1.6, 0.05, 0.7], [0.05, 0.3, 0.02, 0.1, 0.2, 0.08]),
}
CASES = [
    ("small", "halfnormal", 0.5, None),
    ("small", "halfcauchy", 0.1, None),
    ("small", "halfstudent", 0.2, None),
    ("small", "uniform", 2.0, None),
    ("small", "jeffreys", 1.0, None),
    ("hetero", "halfnormal", 0.5, (0.0, 1.0)),
    ("hetero", "jeffreys", 1.0, None),
    ("hetero", "uniform", 0.8, None),
    ("schools", "halfcauchy", 25.0, (0.0, 50.0)),
]  # fmt: skip


@pytest.mark.parametrize(("data", "prior", "scale", "mu_prior"), CASES)
def test_the_posterior_equals_a_quadrature_of_its_formulas(data, prior, scale, mu_prior):
    y, v = DATA[data]
    ref = Reference(y, v, prior, scale, mu_prior=mu_prior)
    res = metaeval.bayes_pool(table(y, v), tau_prior=prior, tau_scale=scale, tau_df=3.0,
                              mu_prior=mu_prior)  # fmt: skip
    row = res.table.iloc[0]
    mu_mean, mu_sd = ref.mu_moments()
    # tolerance: 1e-6 of the posterior SD of each quantity (absolute), 1e-7 for probabilities
    tau_sd = math.sqrt(ref._quad(lambda t: ref.dens(t) * t * t) / ref.z
                       - (ref._quad(lambda t: ref.dens(t) * t) / ref.z) ** 2)  # fmt: skip
    for col, q in (("tau_median", 0.5), ("tau_low", 0.025), ("tau_high", 0.975)):
        assert row[col] == pytest.approx(ref.tau_quantile(q), abs=1e-6 * tau_sd), col
    assert row["mu_mean"] == pytest.approx(mu_mean, abs=1e-6 * mu_sd)
    assert row["mu_sd"] == pytest.approx(mu_sd, abs=1e-6 * mu_sd)
    for col, q in (("effect", 0.5), ("ci_low", 0.025), ("ci_high", 0.975)):
        assert row[col] == pytest.approx(ref.mixture_quantile(q), abs=1e-6 * mu_sd), col
    new_sd = math.sqrt(mu_sd**2 + ref._quad(lambda t: ref.dens(t) * t * t) / ref.z)
    for col, q in (("pi_low", 0.025), ("pi_high", 0.975)):
        assert row[col] == pytest.approx(ref.mixture_quantile(q, new=True), abs=1e-6 * new_sd)
    assert row["prob_positive"] == pytest.approx(1 - ref.mixture_cdf(0.0), abs=1e-7)
    assert row["prob_gain"] == pytest.approx(1 - ref.mixture_cdf(0.0, new=True), abs=1e-7)
    for i in (0, len(y) - 1):
        m, sd = ref.shrunk(i)
        task = res.tasks.iloc[i]
        assert task["shrunk_mean"] == pytest.approx(m, abs=1e-6 * sd)
        assert task["shrunk_sd"] == pytest.approx(sd, abs=1e-6 * sd)

"""bayes_pool(): against an independent quadrature (scipy ``quad``) of the posterior written
from its formulas, against bayesmeta's published examples, groups at once, bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, optimize, stats

import metaeval
from metaeval.errors import DegenerateWarning, MetaEvalWarning, OptionError

SCHOOLS_Y = [28.39, 7.94, -2.75, 6.82, -0.64, 0.63, 18.01, 12.16]
SCHOOLS_SE = [14.9, 10.2, 16.3, 11.0, 9.4, 11.4, 10.4, 17.6]


def table(y, v, **keys) -> pd.DataFrame:
    return pd.DataFrame(
        {"task": [f"t{i}" for i in range(len(y))], "effect": y, "variance": v, **keys}
    )


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
        return optimize.brentq(
            lambda x: self.mixture_cdf(x, new) - q, lo, hi, xtol=1e-13, rtol=1e-13
        )

    def mu_moments(self):
        m1 = self._quad(lambda t: self.dens(t) * self.cond(t)[0]) / self.z
        m2 = self._quad(lambda t: self.dens(t) * (self.cond(t)[0] ** 2 + 1 / self.cond(t)[1]))
        return m1, math.sqrt(m2 / self.z - m1 * m1)

    def shrunk(self, i):
        def mean_var(t):
            mu, sw, _, _ = self.cond(t)
            b = self.v[i] / (self.v[i] + t * t)
            return b * mu + (1 - b) * self.y[i], self.v[i] * t * t / (
                self.v[i] + t * t
            ) + b * b / sw

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
]


@pytest.mark.parametrize(("data", "prior", "scale", "mu_prior"), CASES)
def test_the_posterior_equals_a_quadrature_of_its_formulas(data, prior, scale, mu_prior):
    y, v = DATA[data]
    ref = Reference(y, v, prior, scale, mu_prior=mu_prior)
    res = metaeval.bayes_pool(
        table(y, v), tau_prior=prior, tau_scale=scale, tau_df=3.0, mu_prior=mu_prior
    )
    row = res.table.iloc[0]
    mu_mean, mu_sd = ref.mu_moments()
    # tolerance: 1e-6 of the posterior SD of each quantity (absolute), 1e-7 for probabilities
    tau_sd = math.sqrt(
        ref._quad(lambda t: ref.dens(t) * t * t) / ref.z
        - (ref._quad(lambda t: ref.dens(t) * t) / ref.z) ** 2
    )
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


def test_shrunken_intervals_equal_a_quadrature_of_the_mixture():
    y, v = DATA["hetero"]
    ref = Reference(y, v, "halfnormal", 0.5)
    res = metaeval.bayes_pool(table(y, v), tau_prior="halfnormal", tau_scale=0.5)
    i = 3
    _, sd = ref.shrunk(i)

    def cdf(x):
        def f(t):
            mu, sw, _, _ = ref.cond(t)
            b = ref.v[i] / (ref.v[i] + t * t)
            m = b * mu + (1 - b) * ref.y[i]
            s = math.sqrt(ref.v[i] * t * t / (ref.v[i] + t * t) + b * b / sw)
            return ref.dens(t) * stats.norm.cdf((x - m) / s)

        return ref._quad(f) / ref.z

    for col, q in (("shrunk_low", 0.025), ("shrunk_high", 0.975)):
        want = optimize.brentq(lambda x, q=q: cdf(x) - q, -10, 10, xtol=1e-13, rtol=1e-13)
        assert res.tasks[col].iloc[i] == pytest.approx(want, abs=1e-6 * sd)


# ------------------------------------------------------------------ published values
def crins() -> pd.DataFrame:
    """Crins et al. (2014), acute rejection: escalc(measure="OR") log odds ratios (0.5
    added to every cell of a study with a zero cell), in the order of bayesmeta's data."""
    a = np.array([14, 16, 3, 9, 4, 0.0])
    n1 = np.array([61, 28, 18, 54, 36, 50.0])
    c = np.array([15, 19, 8, 29, 11, 3.0])
    n2 = np.array([20, 28, 12, 54, 36, 34.0])
    b, d = n1 - a, n2 - c
    zero = (a == 0) | (b == 0) | (c == 0) | (d == 0)
    a, b, c, d = (x + 0.5 * zero for x in (a, b, c, d))
    return table(np.log(a * d / (b * c)), 1 / a + 1 / b + 1 / c + 1 / d)


def test_the_log_odds_ratios_are_metafor_s():
    eff = crins()  # metafor 3.8-1 escalc(measure="OR"), printed to 12 decimals
    assert eff["effect"].to_numpy() == pytest.approx(
        [
            -2.309702560763,
            -0.459532329378,
            -2.302585092994,
            -1.757857917552,
            -1.258460989610,
            -2.417895939505,
        ],
        abs=1e-12,
    )
    assert eff["variance"].iloc[[0, 5]].to_numpy() == pytest.approx(
        [0.359371833840, 2.337262297658], abs=1e-12
    )


def test_roever_2020_crins_example():
    """Röver (2020, JSS 93(6), p. 22): half-normal(0.5) on τ, μ ~ N(0, 4²): τ median
    0.3445022 / 0.3445023 (two printings); μ mean −1.5764366 / −1.5764365, median
    −1.5734823 / −1.5734819, sd 0.3295298 / 0.3295301. bayesmeta's μ figures come from its
    discretized mixture (they differ between its two printings in the 7th digit, and
    from the exact values by up to ~1e-4 posterior SDs); its τ figures are exact."""
    row = metaeval.bayes_pool(
        crins(), tau_prior="halfnormal", tau_scale=0.5, mu_prior=(0.0, 4.0)
    ).table.iloc[0]
    assert row["tau_median"] == pytest.approx(0.34450225, abs=1e-7)
    sd = 0.3295
    assert row["mu_mean"] == pytest.approx(-1.5764366, abs=1e-4 * sd)
    assert row["effect"] == pytest.approx(-1.5734821, abs=1e-4 * sd)
    assert row["mu_sd"] == pytest.approx(0.32953, rel=1e-3)


@pytest.mark.parametrize(
    ("prior", "scale", "mu_prior", "tau_median", "mu_median", "mu_mean"),
    [
        ("uniform", 1e4, None, 5.227732, 8.055861, 8.092138),
        ("halfcauchy", 25.0, (0.0, 50.0), 4.758539, 7.962961, 7.985729),
    ],
)
def test_bayesmeta_eight_schools_vignette(prior, scale, mu_prior, tau_median, mu_median, mu_mean):
    """bayesmeta's vignette (version 3.4): ``bayesmeta(y, sigma)`` (uniform prior on τ over
    [0, ∞): here over [0, 10⁴], which leaves out a tail of mass ~1e-20) and with a
    half-Cauchy(25) prior and μ ~ N(0, 50²); printed to 7 digits."""
    eff = table(SCHOOLS_Y, [s * s for s in SCHOOLS_SE])
    row = metaeval.bayes_pool(eff, tau_prior=prior, tau_scale=scale, mu_prior=mu_prior).table
    row = row.iloc[0]
    assert row["tau_median"] == pytest.approx(tau_median, abs=1e-6)
    sd = 5.2  # μ: bayesmeta's discretized mixture, to ~1e-4 posterior SDs
    assert row["effect"] == pytest.approx(mu_median, abs=1.5e-4 * sd)
    assert row["mu_mean"] == pytest.approx(mu_mean, abs=1e-4 * sd)


# ------------------------------------------------------------------ many groups at once
def test_several_groups_at_once_equal_each_group_alone():
    rng = np.random.default_rng(3)
    parts = []
    for g, k in enumerate([2, 3, 5, 8, 13, 1]):
        parts.append(table(rng.normal(0.2, 0.4, k), rng.uniform(0.01, 0.2, k), metric=f"m{g}"))
    eff = pd.concat(parts, ignore_index=True).sample(frac=1.0, random_state=1)
    for prior in ("halfnormal", "halfstudent"):
        together = metaeval.bayes_pool(eff, tau_prior=prior, tau_scale=0.3)
        for metric, part in eff.groupby("metric"):
            alone = metaeval.bayes_pool(part.drop(columns="metric"), tau_prior=prior, tau_scale=0.3)
            row = together.table.set_index("metric").loc[metric]
            for col in (
                "effect",
                "ci_low",
                "ci_high",
                "tau_median",
                "tau_high",
                "pi_low",
                "prob_gain",
                "mu_sd",
            ):
                assert row[col] == pytest.approx(alone.table[col].iloc[0], rel=1e-9, abs=1e-12)
            got = together.tasks[together.tasks["metric"] == metric].sort_values("task")
            want = alone.tasks.sort_values("task")
            np.testing.assert_allclose(got["shrunk_low"], want["shrunk_low"], rtol=1e-9)
    k = dict(zip(together.table["metric"], together.table["k"], strict=True))
    assert k == {"m0": 2, "m1": 3, "m2": 5, "m3": 8, "m4": 13, "m5": 1}


def test_the_input_is_not_changed_and_the_result_has_its_parts():
    eff = table(*DATA["small"])
    before = eff.copy()
    res = eff.meta.bayes_pool()
    pd.testing.assert_frame_equal(eff, before)
    assert isinstance(res, metaeval.BayesPoolResult)
    assert res.kind == "bayes_pooled"
    assert res.table.attrs["tau_prior"] == "halfnormal"
    assert list(res.tasks["effect"]) == list(eff["effect"])
    pd.concat([res.table, res.table])  # scalar attrs only
    # equal-tailed intervals nest: the credible interval of μ inside the predictive one
    row = res.table.iloc[0]
    assert row["pi_low"] < row["ci_low"] < row["effect"] < row["ci_high"] < row["pi_high"]
    assert row["tau_low"] < row["tau_median"] < row["tau_high"]


def test_a_thousand_groups_in_chunks_equal_each_group_alone():
    """1,000 groups go through the grid in several chunks; a group's answer does not depend
    on its chunk (the time is in benchmarks/bench_bayes.py, not asserted here)."""
    rng = np.random.default_rng(1)
    n_groups, k = 1000, 10
    eff = pd.DataFrame(
        {
            "metric": np.repeat([f"m{i:04d}" for i in range(n_groups)], k),
            "task": np.tile([f"t{j}" for j in range(k)], n_groups),
            "effect": rng.normal(0.2, 0.3, n_groups * k),
            "variance": rng.uniform(0.005, 0.05, n_groups * k),
        }
    )
    res = metaeval.bayes_pool(eff).table.set_index("metric")
    cols = ["effect", "ci_low", "ci_high", "tau_median", "tau_high", "pi_low", "prob_gain"]
    for name in ("m0000", "m0499", "m0999"):
        alone = metaeval.bayes_pool(eff[eff["metric"] == name]).table.iloc[0]
        np.testing.assert_allclose(
            res.loc[name, cols].to_numpy(float), alone[cols].to_numpy(float), rtol=1e-9, atol=1e-12
        )


# ------------------------------------------------------------------ edge cases, bad input
def test_one_task_under_a_proper_prior_is_prior_driven():
    """k = 1 with a flat μ: p(τ | y) is the prior (the likelihood is constant in τ)."""
    res = metaeval.bayes_pool(table([0.3], [0.04]), tau_prior="halfnormal", tau_scale=0.5)
    row = res.table.iloc[0]
    assert row["tau_median"] == pytest.approx(0.5 * stats.norm.ppf(0.75), rel=1e-8)
    assert row["tau_high"] == pytest.approx(0.5 * stats.norm.ppf(0.9875), rel=1e-8)
    assert row["effect"] == pytest.approx(0.3, abs=1e-10)  # symmetric around y


def test_heavy_tails_leave_the_mean_or_sd_of_mu_undefined():
    eff = table([0.1, 0.4], [0.01, 0.02])
    row = metaeval.bayes_pool(eff, tau_prior="halfcauchy", tau_scale=0.5).table.iloc[0]
    assert np.isinf(row["mu_sd"]) and np.isfinite(row["mu_mean"])  # b + k = 4
    row = metaeval.bayes_pool(eff, tau_prior="jeffreys").table.iloc[0]
    assert np.isnan(row["mu_mean"]) and np.isinf(row["mu_sd"])  # b + k = 3
    assert np.isfinite(row["effect"]) and np.isfinite(row["ci_high"])  # quantiles exist


def test_jeffreys_with_one_task_is_refused_or_blanked():
    with pytest.raises(OptionError, match="tau_prior"):
        metaeval.bayes_pool(table([0.3], [0.04]), tau_prior="jeffreys")
    eff = pd.concat(
        [
            table([0.3], [0.04], metric="one"),
            table([0.1, 0.4, 0.2], [0.01, 0.02, 0.03], metric="three"),
        ]
    )
    with pytest.warns(DegenerateWarning, match="one task .* Jeffreys") as record:
        res = metaeval.bayes_pool(eff, tau_prior="jeffreys")
    assert "one" in str(record[0].message)
    assert res.table.set_index("metric").loc["one", ["effect", "tau_median"]].isna().all()
    assert res.table.set_index("metric").loc["three", ["effect", "tau_median"]].notna().all()
    # a normal prior on μ makes the posterior proper again
    res = metaeval.bayes_pool(table([0.3], [0.04]), tau_prior="jeffreys", mu_prior=(0, 1))
    assert np.isfinite(res.table["tau_median"].iloc[0])


def test_nan_effects_are_left_out_with_a_warning():
    eff = table([0.1, np.nan, 0.2, 0.3], [0.01, 0.01, 0.02, 0.02])
    with pytest.warns(DegenerateWarning, match="left out"):
        res = metaeval.bayes_pool(eff)
    assert res.table["k"].iloc[0] == 3
    alone = metaeval.bayes_pool(eff.dropna())
    assert res.table["effect"].iloc[0] == pytest.approx(alone.table["effect"].iloc[0], rel=1e-12)
    assert np.isnan(res.tasks["shrunk_mean"].iloc[1])


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"tau_prior": "halfnormel"}, "tau_prior"),
        ({"tau_scale": 0}, "tau_scale"),
        ({"tau_scale": -1.0}, "tau_scale"),
        ({"tau_scale": np.inf}, "tau_scale"),
        ({"tau_scale": "big"}, "tau_scale"),
        ({"tau_df": 0}, "tau_df"),
        ({"mu_prior": (0.0, 0.0)}, "mu_prior"),
        ({"mu_prior": 1.0}, "mu_prior"),
        ({"mu_prior": (0.0, 1.0, 2.0)}, "mu_prior"),
        ({"mu_prior": "01"}, "mu_prior"),
        ({"alpha": 1.5}, "alpha"),
    ],
)
def test_bad_options_name_the_argument(kwargs, name):
    with pytest.raises(OptionError, match=name):
        metaeval.bayes_pool(table(*DATA["small"]), **kwargs)


def test_the_forest_plot_shows_the_posterior():
    import matplotlib.pyplot as plt

    scores = metaeval.load_example()
    eff = metaeval.effects(
        scores[scores["metric"] == "accuracy"],
        control="logistic_regression",
        treatment="gradient_boosting",
    )
    res = metaeval.bayes_pool(eff)
    row = res.table.iloc[0]
    _, ax = plt.subplots()
    res.plot(ax=ax)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[-1] == "Bayesian RE model (halfnormal prior on τ)"
    # the diamond: the posterior median and credible interval of μ
    xy = [p.get_xy() for p in ax.patches if type(p).__name__ == "Polygon"][-1]
    assert xy[:, 0].min() == pytest.approx(row["ci_low"])
    assert xy[:, 0].max() == pytest.approx(row["ci_high"])
    assert xy[1, 0] == pytest.approx(row["effect"])
    # the thin line: the predictive interval of θ_new
    spans = [sorted(line.get_xdata()) for line in ax.lines if len(line.get_xdata()) == 2]
    assert any(np.allclose(x, [row["pi_low"], row["pi_high"]]) for x in spans)
    fig = res.plot()  # the full figure: its footnote tells what is drawn
    notes = " ".join(t.get_text() for t in fig.texts)
    assert "posterior median τ" in notes and "credible interval of μ" in notes


# ------------------------------------------------------------------ accuracy (issue 39, 28)
class Precise:
    """The posterior integrated over u = log τ in unit steps from −40 to 40 by scipy quad
    (relative tolerance 1e-13 per step), the second moments centred (the variance of a
    mixture as E[variance] + E[(mean − m1)²]), the tails as survival functions: an
    independent reference where a task's variance is ~1e-20 (Reference's E[x²] − E[x]²
    cancels there) and in the far tails of heavy-tailed mixtures."""

    EDGES = np.arange(-40.0, 41.0, 1.0)

    def __init__(self, y, v, prior, scale=0.5):
        self.y, self.v = np.asarray(y, float), np.asarray(v, float)
        self.prior, self.scale = prior, scale
        self.z = self.integral(lambda c: 1.0)

    def logd(self, u):
        t2 = math.exp(2 * u)
        w = 1 / (self.v + t2)
        sw, mu = w.sum(), (w * self.y).sum() / w.sum()
        loglik = -0.5 * (np.log(self.v + t2).sum() + math.log(sw) + (w * (self.y - mu) ** 2).sum())
        t = math.exp(u) / self.scale
        prior = {
            "halfnormal": -0.5 * t * t,
            "halfcauchy": -math.log1p(t * t),
            "halfstudent": -2.0 * math.log1p(t * t / 3.0),  # 3 df
            "jeffreys": u + 0.5 * math.log((w * w).sum()),
        }[self.prior]
        return prior + u + loglik

    def cond(self, u):
        t2 = math.exp(2 * u)
        w = 1 / (self.v + t2)
        return {"mu": (w * self.y).sum() / w.sum(), "sw": w.sum(), "t2": t2}

    def integral(self, f, atol=0.0):
        """∫ p(u) f(u) du (unnormalized), with quad's error bound below 1e-12 of it (+ atol)."""

        def g(u):
            return math.exp(self.logd(u)) * f(self.cond(u))

        with warnings.catch_warnings():  # quad's roundoff notes: its error bound is checked
            warnings.simplefilter("ignore", integrate.IntegrationWarning)
            parts = [
                integrate.quad(g, a, b, epsabs=atol / len(self.EDGES), epsrel=1e-13, limit=200)
                for a, b in zip(self.EDGES[:-1], self.EDGES[1:], strict=True)
            ]
        total = math.fsum(value for value, _ in parts)
        assert sum(err for _, err in parts) <= 1e-12 * abs(total) + atol
        return total

    def mean(self, f, atol=0.0):
        return self.integral(f, atol * self.z) / self.z

    def shrunk(self, i):
        """Mean and SD of θ_i: E[m_i], sqrt(E[s_i²] + E[(m_i − E[m_i])²]); m_i − y_i =
        b_i(μ̂ − y_i) is formed as such (b_i = v_i/(v_i + τ²))."""
        vi, yi = self.v[i], self.y[i]

        def parts(c):
            b = vi / (vi + c["t2"])
            return b * (c["mu"] - yi), vi * c["t2"] / (vi + c["t2"]) + b * b / c["sw"]

        shift = self.mean(lambda c: parts(c)[0], atol=1e-12 * math.sqrt(vi))  # ~1e-20 here
        var = self.mean(lambda c: parts(c)[1] + (parts(c)[0] - shift) ** 2)
        return yi + shift, math.sqrt(var)

    def mu(self):
        m1 = self.mean(lambda c: c["mu"])
        return m1, math.sqrt(self.mean(lambda c: 1 / c["sw"] + (c["mu"] - m1) ** 2))

    def tail(self, x, upper, new):
        """P(μ < x) (or P(μ > x), ``upper``); θ_new with ``new``."""

        def f(c):
            z = (x - c["mu"]) / math.sqrt(1 / c["sw"] + (c["t2"] if new else 0.0))
            return stats.norm.sf(z) if upper else stats.norm.cdf(z)

        return self.mean(f)


def test_second_moments_are_centred_where_a_variance_is_1e_minus_20():
    """A task measured to a variance of 1e-20 beside others of ~0.01 (issue 39, item 28):
    its shrunken SD is ~1e-10 and came out 0 (E[θ²] − E[θ]² cancels at 1e-16 of θ²); the
    SDs are now E[variance] + E[(mean − E[mean])²], checked to 1e-9 relative against a
    centred high-precision quadrature."""
    y, v = [0.1, 0.3, -0.2, 0.45], [1e-20, 0.01, 0.02, 0.015]
    ref = Precise(y, v, "halfnormal", 0.5)
    res = metaeval.bayes_pool(table(y, v), tau_prior="halfnormal", tau_scale=0.5)
    for i in (0, 2):
        mean, sd = ref.shrunk(i)
        task = res.tasks.iloc[i]
        assert task["shrunk_mean"] == pytest.approx(mean, abs=1e-9 * sd + 1e-15 * abs(mean)), i
        assert task["shrunk_sd"] == pytest.approx(sd, rel=1e-9), i
    mean, sd = ref.mu()
    row = res.table.iloc[0]
    assert row["mu_mean"] == pytest.approx(mean, abs=1e-9 * sd)
    assert row["mu_sd"] == pytest.approx(sd, rel=1e-9)


@pytest.mark.parametrize(
    ("y", "v"),
    [
        ([-0.4, 0.685], [0.022845525228103843, 0.04765770498872665]),
        ([-0.091, 0.27], [0.007677832985001658, 0.12391047978875863]),
        ([-0.351, -0.465], [0.04334195184569234, 7.549702988432455e-16]),
    ],
)
def test_jeffreys_intervals_hold_their_level(y, v):
    """Two tasks under the Jeffreys prior: μ and θ_new have tails like 1/x² and the
    mixture's SD is dominated by the far tail; the quantile search stopped at a tolerance
    of 1e-13 of that SD, leaving each tail of the intervals off by up to 2e-8 in
    probability (found by fuzzing: 1.6e-7 in level). Now each tail probability is within
    1e-11 of alpha/2 by a high-precision quadrature."""
    ref = Precise(y, v, "jeffreys")
    row = metaeval.bayes_pool(table(y, v), tau_prior="jeffreys").table.iloc[0]
    for low, high, new in (("ci_low", "ci_high", False), ("pi_low", "pi_high", True)):
        assert ref.tail(row[low], upper=False, new=new) == pytest.approx(0.025, abs=1e-11), low
        assert ref.tail(row[high], upper=True, new=new) == pytest.approx(0.025, abs=1e-11), high


# ------------------------------------------------------------------ the prior's scale (item 16)
def _accuracy_effects(effect: str) -> pd.DataFrame:
    scores = metaeval.load_example().query("metric == 'accuracy'")
    return scores.meta.effects("logistic_regression", effect=effect)


def test_raw_unit_effects_get_a_prior_scale_in_their_units():
    """``md`` of accuracies (issue 39, item 16): the default scale 0.5 is for standardized
    effects (a τ of 1 would be 100 points of accuracy). Without ``tau_scale`` a raw-unit
    effect gets half its unit-information SD, s_u/2 with s_u = sqrt(Σn_i / Σ(1/v_i))
    (Röver et al. 2021, eq. 6; bayesmeta's uisd()), computed here from its formula per
    group — the prior that 0.5 is on the standardized scale. The posterior equals the
    one with that scale given."""
    eff = _accuracy_effects("md")
    res = metaeval.bayes_pool(eff)
    for treatment, part in eff.groupby("treatment"):
        uisd = math.sqrt(part["n"].sum() / (1 / part["variance"]).sum())
        row = res.table.set_index("treatment").loc[treatment]
        assert row["tau_scale"] == pytest.approx(uisd / 2, rel=1e-12)
        assert 0.01 < uisd / 2 < 0.5  # an accuracy difference's per-item SD is below 1
        given = metaeval.bayes_pool(part, tau_scale=uisd / 2).table.iloc[0]
        for col in ("effect", "ci_low", "ci_high", "tau_median", "pi_high"):
            assert row[col] == pytest.approx(given[col], rel=1e-12, abs=1e-15)
    assert res.table.attrs["tau_scale"] is None  # the option as passed; the column per group


def test_standardized_effects_keep_the_default_scale_and_a_given_scale_wins():
    smcrp = metaeval.bayes_pool(_accuracy_effects("smcrp")).table
    assert (smcrp["tau_scale"] == 0.5).all()
    md = metaeval.bayes_pool(_accuracy_effects("md"), tau_scale=0.05).table
    assert (md["tau_scale"] == 0.05).all() and md.attrs["tau_scale"] == 0.05


def test_raw_unit_effects_without_n_warn_and_keep_the_default():
    """Without an ``n`` column the unit-information SD is unknown: the default 0.5 is used
    and a warning names the groups and what to pass."""
    eff = _accuracy_effects("md").drop(columns="n")
    with pytest.warns(MetaEvalWarning, match=r"tau_scale.*standardized") as record:
        res = metaeval.bayes_pool(eff)
    assert (res.table["tau_scale"] == 0.5).all()
    groups = record[0].message.groups
    assert sorted(groups["treatment"]) == sorted(eff["treatment"].unique())

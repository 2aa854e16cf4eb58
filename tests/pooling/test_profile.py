"""The profile-likelihood interval of τ²: ``pool(tau2_ci="profile")`` (issue 29, item 5).

Checked against metafor 3.8's ``confint(fit, type="PL")`` on 40 random data sets (k 3..20,
REML and ML, 14 fits with τ̂² = 0 and 38 with lower bound 0; the R script
fixtures/metafor/make_profile.R, run with uniroot's tolerance 1e-13), to 1e-6 relative;
against a likelihood-ratio statistic written in this file from the formula of the
(restricted) log-likelihood; and for batching, scale and bad input.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _helpers import FIXTURES, NARROW_KH
from scipy import stats

import metaeval

# the τ² interval does not depend on ci; some data sets have a KH interval narrower than z
pytestmark = NARROW_KH

DATA = FIXTURES / "metafor" / "profile_data.csv.gz"
FITS = FIXTURES / "metafor" / "profile_fits.csv.gz"
COLS = ["tau2", "tau2_low", "tau2_high"]


def _effects() -> pd.DataFrame:
    data = pd.read_csv(DATA)
    data["task"] = data.groupby("id").cumcount().map("t{}".format)
    return data.rename(columns={"yi": "effect", "vi": "variance"})


def _pool(eff: pd.DataFrame, **kwargs) -> pd.DataFrame:
    return metaeval.pool(eff, groups="id", tau2_ci="profile", **kwargs)


def _neg2ll(y: np.ndarray, v: np.ndarray, tau2: float, reml: bool) -> float:
    """−2 × the (restricted) log-likelihood of the intercept-only model, from the formula
    (constants dropped): Σlog(v + τ²) + Σw(y − μ̂)² (+ log Σw for REML)."""
    w = 1 / (v + tau2)
    mu = np.sum(w * y) / np.sum(w)
    out = np.sum(np.log(v + tau2)) + np.sum(w * (y - mu) ** 2)
    return out + np.log(np.sum(w)) if reml else out


@pytest.mark.parametrize("method", ["REML", "ML"])
def test_equals_metafor_confint_pl(method):
    """All 40 data sets at once equal metafor's bounds to 1e-6 relative (exact 0 where
    metafor gives 0); I² bounds from the τ² bounds with the typical within variance."""
    eff = _effects()
    got = _pool(eff, method=method).set_index("id")
    ref = pd.read_csv(FITS).query("method == @method").set_index("id")
    assert len(got) == len(ref) == 40
    np.testing.assert_allclose(got["tau2"], ref["tau2"], rtol=1e-6, atol=1e-12)
    zero = ref["ci_lb"] == 0
    assert 10 <= zero.sum() <= 30 and (ref["tau2"] == 0).sum() >= 5  # the fixture's mix
    assert (got.loc[zero, "tau2_low"] == 0).all()
    np.testing.assert_allclose(got.loc[~zero, "tau2_low"], ref.loc[~zero, "ci_lb"], rtol=1e-6)
    np.testing.assert_allclose(got["tau2_high"], ref["ci_ub"], rtol=1e-6)
    for i, one in eff.groupby("id"):
        w = 1 / one["variance"].to_numpy()
        vt = (len(w) - 1) * w.sum() / (w.sum() ** 2 - (w**2).sum())
        for side in ("low", "high"):
            t = got.loc[i, f"tau2_{side}"]
            assert got.loc[i, f"i2_{side}"] == pytest.approx(100 * t / (vt + t), rel=1e-12)


@pytest.mark.parametrize("method", ["REML", "ML"])
@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_bounds_solve_the_likelihood_ratio_equation(method, alpha):
    """At each positive bound the statistic −2(ll(τ²) − ll(τ̂²)) equals χ²₁,₁₋α (to 1e-8);
    a lower bound 0 only where the statistic at 0 stays below it."""
    reml = method == "REML"
    eff = _effects()
    got = _pool(eff, method=method, alpha=alpha).set_index("id")
    crit = stats.chi2.isf(alpha, 1)
    for i, one in eff.groupby("id"):
        y, v = one["effect"].to_numpy(), one["variance"].to_numpy()
        base = _neg2ll(y, v, got.loc[i, "tau2"], reml)
        low, high = got.loc[i, "tau2_low"], got.loc[i, "tau2_high"]
        assert low <= got.loc[i, "tau2"] < high
        assert _neg2ll(y, v, high, reml) - base == pytest.approx(crit, rel=1e-8)
        if low > 0:
            assert _neg2ll(y, v, low, reml) - base == pytest.approx(crit, rel=1e-8)
        else:
            assert _neg2ll(y, v, 0.0, reml) - base <= crit


def test_many_groups_at_once_equal_each_alone():
    eff = _effects()
    together = _pool(eff).set_index("id")[COLS]
    for i, one in eff.groupby("id"):
        alone = metaeval.pool(one.drop(columns="id"), tau2_ci="profile")
        np.testing.assert_allclose(alone[COLS].to_numpy()[0], together.loc[i], rtol=1e-9)


def test_scales_with_the_effects():
    """Effects ×c and variances ×c² scale τ² and its bounds by c² (no absolute tolerance
    or cap inside)."""
    eff = _effects().query("id <= 12")
    base = _pool(eff)[COLS].to_numpy()
    for c in (1e-4, 1e3):
        scaled = eff.assign(effect=eff["effect"] * c, variance=eff["variance"] * c**2)
        np.testing.assert_allclose(_pool(scaled)[COLS].to_numpy(), base * c**2, rtol=1e-8)


def test_default_is_the_q_profile_and_attrs_name_the_interval():
    eff = _effects().query("id <= 5")
    default = metaeval.pool(eff, groups="id")
    assert default.attrs["tau2_ci"] == "qprofile"
    pd.testing.assert_frame_equal(default, metaeval.pool(eff, groups="id", tau2_ci="qprofile"))
    profile = _pool(eff)
    assert profile.attrs["tau2_ci"] == "profile"
    assert not np.allclose(profile["tau2_high"], default["tau2_high"])
    other = [c for c in default.columns if c not in ("tau2_low", "tau2_high", "i2_low", "i2_high")]
    pd.testing.assert_frame_equal(profile[other], default[other])
    assert eff.meta.pool(groups="id", tau2_ci="profile")["tau2_high"].equals(profile["tau2_high"])


def test_single_effect_gives_nan_bounds():
    eff = pd.DataFrame(
        {
            "task": ["a", "b", "c", "a"],
            "id": [1, 1, 1, 2],
            "effect": [0.1, 0.5, 0.3, 0.2],
            "variance": [0.01, 0.02, 0.01, 0.01],
        }
    )
    with pytest.warns(metaeval.DegenerateWarning, match=r"(?s)k = 1.*id=2"):
        out = _pool(eff)
    assert out.loc[1, ["tau2_low", "tau2_high"]].isna().all()
    assert out.loc[0, ["tau2_low", "tau2_high"]].notna().all()


@pytest.mark.parametrize("method", ["DL", "PM", "EB", "HE", "HS", "SJ", "EE", "FE"])
def test_profile_needs_a_likelihood_method(method):
    eff = _effects().query("id == 5")
    with pytest.raises(metaeval.OptionError, match=r"`tau2_ci='profile'`.*'REML'") as err:
        metaeval.pool(eff, method=method, tau2_ci="profile")
    assert repr(method) in str(err.value)


def test_bad_tau2_ci_options():
    eff = _effects().query("id == 5")
    with pytest.raises(metaeval.OptionError, match=r"`tau2_ci`.*qprofile.*'PL'"):
        metaeval.pool(eff, tau2_ci="PL")
    multi = eff.assign(metric="m")
    with pytest.raises(metaeval.OptionError, match=r"tau2_ci='profile'.*multilevel"):
        metaeval.pool(multi, model="multilevel", over=("task", "metric"), tau2_ci="profile")


@pytest.mark.parametrize("reml", [True, False])
def test_design_path_equals_the_intercept_fast_path(reml):
    """_tau2.profile_ci on the design X = 1 (the general likelihood, ragged k) gives the
    closed-form intercept-only path's bounds."""
    from metaeval.pooling import _tau2 as t2

    eff = _effects().query("id <= 16")
    slot = eff.groupby("id").cumcount().to_numpy()
    g = eff["id"].to_numpy() - 1
    shape = (16, slot.max() + 1)
    y, v, m = np.zeros(shape), np.ones(shape), np.zeros(shape, dtype=bool)
    y[g, slot], v[g, slot], m[g, slot] = eff["effect"], eff["variance"], True
    fast = t2.Batch(y, v, m)
    tau2 = t2.estimate(fast, "REML" if reml else "ML")[0]
    design = t2.Batch(y, v, m, x=np.ones((*shape, 1)))
    bounds = zip(
        t2.profile_ci(fast, tau2, 0.05, reml), t2.profile_ci(design, tau2, 0.05, reml), strict=True
    )
    for a, b in bounds:
        np.testing.assert_allclose(a, b, rtol=1e-8)
        assert np.isfinite(a).all()

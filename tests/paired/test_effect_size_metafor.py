"""Effects against metafor 3.8 escalc() (fixtures made by fixtures/metafor/make_fixtures.R)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _helpers import FIXTURES

import metaeval

DIR = FIXTURES / "metafor"
KEYS = ["metric", "treatment", "task"]


@pytest.fixture(scope="module")
def fixture_scores() -> pd.DataFrame:
    return pd.read_csv(DIR / "scores.csv")


@pytest.fixture(scope="module")
def escalc() -> pd.DataFrame:
    return pd.read_csv(DIR / "escalc.csv")


@pytest.mark.parametrize(
    ("effect", "measure", "kwargs"),
    [
        ("md", "MC", {}),
        ("smcc", "SMCC", {}),
        ("rom", "ROMC", {"correct": False}),
        ("corr", "ZCOR", {}),
    ],
)
def test_effect_matches_escalc(fixture_scores, escalc, effect, measure, kwargs):
    ours = metaeval.effects(fixture_scores, control="control", effect=effect, **kwargs)
    ref = escalc[escalc["measure"] == measure]
    both = ours.merge(ref, on=KEYS, validate="one_to_one")
    assert len(both) == len(ref) == 24
    np.testing.assert_array_equal(both["n"], both["ni"])
    np.testing.assert_allclose(both["mean_treatment"], both["m1i"], rtol=1e-12)
    np.testing.assert_allclose(both["mean_control"], both["m2i"], rtol=1e-12)
    np.testing.assert_allclose(both["effect"], both["yi"], rtol=1e-8)
    np.testing.assert_allclose(both["variance"], both["vi"], rtol=1e-8)


def test_corr_reports_r(fixture_scores, escalc):
    ours = metaeval.effects(fixture_scores, control="control", effect="corr")
    both = ours.merge(escalc[escalc["measure"] == "ZCOR"], on=KEYS)
    np.testing.assert_allclose(both["r"], both["ri"], rtol=1e-10)
    assert (both["r_ci_low"] < both["r"]).all() and (both["r"] < both["r_ci_high"]).all()
    np.testing.assert_allclose(np.arctanh(both["r_ci_high"]), both["ci_high"], rtol=1e-10)


def _summaries(escalc: pd.DataFrame) -> pd.DataFrame:
    """R's per-group n, means, SDs and r (independent of metaeval's sums)."""
    return escalc[escalc["measure"] == "MC"][KEYS + ["ni", "m1i", "m2i", "sd1i", "sd2i", "ri"]]


def _c(m):
    from scipy.special import gammaln

    return np.exp(gammaln(m / 2) - np.log(np.sqrt(m / 2)) - gammaln((m - 1) / 2))


def test_smcrp_matches_metafor4_formula(fixture_scores, escalc):
    # metafor 3.8 predates SMCRP: the formula of metafor >= 4 on R's summary statistics
    s = _summaries(escalc)
    n, r = s["ni"], s["ri"]
    m = 2 * (n - 1) / (1 + r**2)
    g = _c(m) * (s["m1i"] - s["m2i"]) / np.sqrt((s["sd1i"] ** 2 + s["sd2i"] ** 2) / 2)
    v = 2 * (1 - r) / n + g**2 * (1 + r**2) / (4 * n)
    ours = metaeval.effects(fixture_scores, control="control", effect="smcrp").merge(s, on=KEYS)
    both = ours.merge(s.assign(g=g, v=v)[KEYS + ["g", "v"]], on=KEYS)
    np.testing.assert_allclose(both["effect"], both["g"], rtol=1e-8)
    np.testing.assert_allclose(both["variance"], both["v"], rtol=1e-8)


def test_rom_bias_correction(fixture_scores, escalc):
    s = _summaries(escalc)
    n = s["ni"]
    corr = 0.5 * (s["sd1i"] ** 2 / (n * s["m1i"] ** 2) - s["sd2i"] ** 2 / (n * s["m2i"] ** 2))
    ref = escalc[escalc["measure"] == "ROMC"][KEYS + ["yi", "vi"]].merge(s.assign(c=corr), on=KEYS)
    ours = metaeval.effects(fixture_scores, control="control", effect="rom").merge(ref, on=KEYS)
    np.testing.assert_allclose(ours["effect"], ours["yi"] + ours["c"], rtol=1e-8)
    np.testing.assert_allclose(ours["variance"], ours["vi"], rtol=1e-8)
    np.testing.assert_allclose(ours["rel_change"], np.expm1(ours["effect"]), rtol=1e-12)
    assert (ours["c"].abs() > 0).all()  # the correction is not vacuous on this data


def test_smd_matches_borenstein_formula(fixture_scores, escalc):
    # Borenstein et al. (2009) eqs. 4.25-4.28 (Ranger eqs. 2-5) on R's summary statistics
    s = _summaries(escalc)
    n, r = s["ni"], s["ri"]
    s_diff = np.sqrt(s["sd1i"] ** 2 + s["sd2i"] ** 2 - 2 * r * s["sd1i"] * s["sd2i"])
    d = (s["m1i"] - s["m2i"]) / (s_diff / np.sqrt(2 * (1 - r)))
    v_d = (1 / n + d**2 / (2 * n)) * 2 * (1 - r)
    j = 1 - 3 / (4 * (n - 1) - 1)
    ref = s.assign(g=j * d, v=j**2 * v_d)[KEYS + ["g", "v"]]
    ours = metaeval.effects(fixture_scores, control="control", effect="smd").merge(ref, on=KEYS)
    np.testing.assert_allclose(ours["effect"], ours["g"], rtol=1e-8)
    np.testing.assert_allclose(ours["variance"], ours["v"], rtol=1e-8)

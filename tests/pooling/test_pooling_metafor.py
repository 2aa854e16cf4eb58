"""Pooling against metafor 3.8 rma() + predict() (fixtures/metafor/make_fixtures.R)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _helpers import FIXTURES

import metaeval

DIR = FIXTURES / "metafor"
COLUMNS = {  # ours -> metafor
    "effect": "estimate",
    "se": "se",
    "statistic": "zval",
    "p_value": "pval",
    "ci_low": "ci.lb",
    "ci_high": "ci.ub",
    "tau2": "tau2",
    "i2": "I2",
    "h2": "H2",
    "q": "QE",
    "q_p_value": "QEp",
    "pi_low": "pi.lb",
    "pi_high": "pi.ub",
}


@pytest.fixture(scope="module")
def escalc() -> pd.DataFrame:
    return pd.read_csv(DIR / "escalc.csv")


@pytest.fixture(scope="module")
def rma() -> pd.DataFrame:
    return _rma()


def _rma() -> pd.DataFrame:
    ref = pd.read_csv(DIR / "rma.csv")
    return ref.rename(
        columns={c: f"R_{c}" for c in ref.columns if c not in ("measure", "metric", "treatment")}
    )


@pytest.mark.parametrize("method", ["EE", "DL"])
def test_pool_matches_rma(escalc, rma, method):
    # metafor's own yi/vi as input: this checks pooling alone
    effects = escalc.rename(columns={"yi": "effect", "vi": "variance"})
    pooled = metaeval.pool(effects, method=method, test="z", groups="measure")  # rma: test="z"
    ref = rma[rma["R_method"] == method]
    both = pooled.merge(ref, on=["measure", "metric", "treatment"], validate="one_to_one")
    assert len(both) == len(ref) == 16
    np.testing.assert_array_equal(both["k"], both["R_k"])
    for ours, theirs in COLUMNS.items():
        np.testing.assert_allclose(
            both[ours], both[f"R_{theirs}"], rtol=1e-8, atol=1e-14, err_msg=ours
        )
    if method == "DL":  # the fixture covers both sides of the truncation at 0
        assert (both["tau2"] == 0).any() and (both["tau2"] > 0).any()


def test_pipeline_matches_rma():
    """scores -> effects -> pool on the fixture's raw scores agrees with R end to end."""
    scores = pd.read_csv(DIR / "scores.csv")
    rma = _rma()
    pooled = scores.meta.effects(control="control", effect="smcc").meta.pool(method="DL", test="z")
    ref = rma[(rma["measure"] == "SMCC") & (rma["R_method"] == "DL")]
    both = pooled.merge(ref, on=["metric", "treatment"], validate="one_to_one")
    assert len(both) == 4
    for ours, theirs in COLUMNS.items():
        np.testing.assert_allclose(
            both[ours], both[f"R_{theirs}"], rtol=1e-8, atol=1e-14, err_msg=ours
        )


@pytest.mark.parametrize("method", ["REML", "DL"])
def test_t_matches_rma_test_t(method):
    """test="t" (issue 39, item 17) is metafor's rma(test="t"): the model-based se, t with
    k − 1 df for the test and the confidence and prediction intervals
    (fixtures/metafor/make_t_test.R: 20 data sets of robust_metareg_data)."""
    ref = pd.read_csv(DIR / "t_test_pool.csv").query("method == @method")
    data = pd.read_csv(DIR / "robust_metareg_data.csv.gz")
    data = data[data["id"].isin(ref["id"])].rename(columns={"yi": "effect", "vi": "variance"})
    res = metaeval.pool(data, method=method, test="t", groups="id")
    assert (res["test"] == "t").all()
    both = res.merge(ref, on="id", suffixes=("", "_R"), validate="1:1")
    assert len(both) == 20
    np.testing.assert_array_equal(both["df"], both["df_R"])
    pairs = {
        "effect": "estimate",
        "se": "se_R",
        "statistic": "tval",
        "p_value": "pval",
        "ci_low": "ci_lb",
        "ci_high": "ci_ub",
        "pi_low": "pi_lb",
        "pi_high": "pi_ub",
    }
    for ours, theirs in pairs.items():
        np.testing.assert_allclose(both[ours], both[theirs], rtol=1e-8, err_msg=ours)
    z = metaeval.pool(data, method=method, test="z", groups="id")
    np.testing.assert_allclose(res["se"], z["se"], rtol=1e-12)  # not scaled

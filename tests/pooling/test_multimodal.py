"""ML and REML at the highest maximum of a likelihood that has more than one (issue 39,
item 23): pool() and metareg() against a dense grid of the (restricted) log-likelihood and
against metafor's rma(), on 60 small meta-analyses with very unequal sampling variances
(fixtures/metafor/make_multimodal.R; in 40 of them metafor stops below the highest
maximum of some model)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import FIXTURES
from scipy import stats

import metaeval
from metaeval import DegenerateWarning

DIR = FIXTURES / "metafor"
CLOSE = stats.chi2.isf(0.05, 1) / 2  # two maxima closer than this in log-likelihood are close


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return pd.read_csv(DIR / "multimodal_data.csv").rename(
        columns={"yi": "effect", "vi": "variance"}
    )


@pytest.fixture(scope="module")
def fits() -> pd.DataFrame:
    return pd.read_csv(DIR / "multimodal_fits.csv")


def loglik(tau2: float, y: np.ndarray, v: np.ndarray, x: np.ndarray, reml: bool):
    """The (restricted) log-likelihood at τ², β profiled out (metafor's logLik() but for
    the constant ½log|X'X| it adds under REML), and the size of its terms (its rounding
    is a few ulp of that: weights of 1e8 times squared residuals cancel)."""
    w = 1 / (v + tau2)
    a = x.T @ (w[:, None] * x)
    beta = np.linalg.solve(a, x.T @ (w * y))
    r = y - x @ beta
    k, p = x.shape
    terms = np.abs(np.log(v + tau2)).sum() + (w * y * y).sum() + k
    ll = -0.5 * np.log(v + tau2).sum() - 0.5 * (w * r * r).sum()
    if reml:
        return ll - 0.5 * (k - p) * np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(a)[1], terms
    return ll - 0.5 * k * np.log(2 * np.pi), terms


def _fit(data, model, method):
    """τ² and the intercept of every data set, and the groups each warning names."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if model == "1":
            out = metaeval.pool(data, method=method, test="z", groups="id")
            got = out.set_index("id")[["tau2", "effect"]]
        else:
            res = metaeval.metareg(data, "x", method=method, test="z", groups="id")
            est = res.table[res.table["term"] == "intercept"].set_index("id")["estimate"]
            got = res.fit.set_index("id")[["tau2"]].assign(effect=est)
    named = {
        kind: w.message.groups
        for w in caught
        if issubclass(w.category, DegenerateWarning)
        for kind, text in (("elsewhere", "metafor's rma() stops"), ("close", "two maxima"))
        if text in str(w.message)
    }
    return got, named


@pytest.mark.parametrize("model", ["1", "x"])
@pytest.mark.parametrize("method", ["REML", "ML"])
def test_the_estimate_is_the_highest_maximum(data, fits, model, method):
    """τ² is the grid's highest maximum (refined by optimize()) and its log-likelihood is
    no lower (to the rounding of the formula: a few ulp of its largest terms); where
    metafor's rma() reaches that maximum, τ² is metafor's; where it stops at a lower one,
    the warning names exactly those data sets, with metafor's τ². Values of τ² within
    1e-4 of the smallest sampling variance v_min count as equal: the weights differ by
    less than 1e-4 of themselves there and the likelihood is flat to its rounding (the
    grid's and metafor's stopping points near 0, 1e-21 and 1e-12, against a root at
    4e-5·v_min); the pooled effects are checked to 1e-5 besides."""
    ref = fits[(fits["model"] == model) & (fits["method"] == method)].set_index("id")
    sub = data[data["id"].isin(ref.index)]
    got, named = _fit(sub, model, method)
    got = got.loc[ref.index]
    reml = method == "REML"
    for i, row in ref.iterrows():
        part = sub[sub["id"] == i]
        y, v = part["effect"].to_numpy(), part["variance"].to_numpy()
        x = np.column_stack([np.ones(len(y))] + ([part["x"].to_numpy()] if model == "x" else []))
        ours, terms = loglik(got.loc[i, "tau2"], y, v, x, reml)
        theirs, _ = loglik(row["tau2_grid"], y, v, x, reml)
        tol = 1e-10 * max(1.0, abs(theirs)) + 64 * np.finfo(float).eps * terms
        assert ours >= theirs - tol, (i, got.loc[i, "tau2"], row["tau2_grid"])
        assert got.loc[i, "tau2"] == pytest.approx(row["tau2_grid"], rel=1e-4, abs=1e-4 * v.min())
        assert got.loc[i, "effect"] == pytest.approx(row["beta0_grid"], rel=1e-5, abs=1e-8)
    # metafor stops below the highest maximum: lower in likelihood, at another τ² (data set
    # 55 has v_min 1e-9, where 0 and 2e-21 differ by 1e-6 in the formula's rounding)
    v_min = sub.groupby("id")["variance"].min().loc[ref.index]
    apart = np.abs(ref["tau2_metafor"] - ref["tau2_grid"]) > 1e-4 * v_min
    reached = ~((ref["ll_metafor"] < ref["ll_grid"] - 1e-6) & apart)
    diff = np.abs(got.loc[reached, "tau2"] - ref.loc[reached, "tau2_metafor"])
    assert (diff <= 1e-6 * ref.loc[reached, "tau2_metafor"] + 1e-4 * v_min[reached]).all()
    below = ref.index[~reached]
    if method == "ML" or model == "1":
        assert len(below) > 0
    elsewhere = named.get("elsewhere", pd.DataFrame({"id": []}))
    assert sorted(elsewhere["id"]) == sorted(below)
    if len(below):
        lower = elsewhere.set_index("id").loc[below, "tau2_metafor"]
        np.testing.assert_allclose(lower, ref.loc[below, "tau2_metafor"], rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("model", ["1", "x"])
@pytest.mark.parametrize("method", ["REML", "ML"])
def test_two_close_maxima_far_apart_are_named(data, fits, model, method):
    """A second maximum within χ²₁,₀.₉₅/2 of the highest in log-likelihood, at a τ² far from
    it ((larger + v_min)/(smaller + v_min) > 2): the warning names those data sets and
    gives the other τ² (the grid's second maximum)."""
    ref = fits[(fits["model"] == model) & (fits["method"] == method)].set_index("id")
    sub = data[data["id"].isin(ref.index)]
    v_min = sub.groupby("id")["variance"].min().loc[ref.index]
    hi = np.maximum(ref["tau2_grid"], ref["tau2_second"])
    lo = np.minimum(ref["tau2_grid"], ref["tau2_second"])
    want = ref.index[(ref["ll_grid"] - ref["ll_second"] < CLOSE) & (hi + v_min > 2 * (lo + v_min))]
    _, named = _fit(sub, model, method)
    close = named.get("close", pd.DataFrame({"id": [], "tau2_other": []})).set_index("id")
    assert sorted(close.index) == sorted(want)
    np.testing.assert_allclose(
        close.loc[want, "tau2_other"], ref.loc[want, "tau2_second"], rtol=1e-4, atol=1e-8
    )


def test_groups_at_once_equal_each_alone(data, fits):
    """The search runs on every group at once; a group's answer does not depend on the
    others."""
    ids = fits.loc[fits["ll_metafor"] < fits["ll_grid"] - 1e-6, "id"].unique()[:6]
    sub = data[data["id"].isin(ids)]
    for method in ("REML", "ML"):
        together, _ = _fit(sub, "1", method)
        for i in ids:
            alone, _ = _fit(sub[sub["id"] == i], "1", method)
            np.testing.assert_allclose(
                together.loc[[i]].to_numpy(), alone.to_numpy(), rtol=1e-12, atol=1e-15
            )


# ------------------------------------------------- the issue's two reproductions (item 23)
@pytest.mark.parametrize(("case", "method"), [("reml", "REML"), ("ml", "ML")])
def test_the_issues_reproductions_reach_the_highest_maximum(case, method):
    """The two data sets of issue 39, item 23 (fixtures/metafor/make_multimodal_repro.R):
    REML stopped at τ² 0.00326 (restricted log-likelihood 3.4116, effect −0.0389) where the
    highest maximum is τ² 4.19e-05 (3.9402, −0.0668); ML at τ² = 0 (effect 1.97) where it
    is at τ² 2.31 (effect 0.10). pool() gives the grid's highest maximum, which is above
    metafor's rma() fit, and names the group with metafor's τ² (and, for REML, the other
    maximum, 0.53 below in log-likelihood)."""
    data = pd.read_csv(DIR / "multimodal_repro.csv").rename(
        columns={"yi": "effect", "vi": "variance"}
    )
    ref = pd.read_csv(DIR / "multimodal_repro_fits.csv").set_index(["case", "method"])
    ref = ref.loc[(case, method)]
    part = data[data["case"] == case]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        row = metaeval.pool(part, method=method, test="z", groups="case").iloc[0]
    assert row["tau2"] == pytest.approx(ref["tau2_grid"], rel=1e-6)
    assert row["effect"] == pytest.approx(ref["beta0_grid"], rel=1e-6)
    y, v = part["effect"].to_numpy(), part["variance"].to_numpy()
    x = np.ones((len(y), 1))
    ours, _ = loglik(row["tau2"], y, v, x, method == "REML")
    theirs, _ = loglik(ref["tau2_metafor"], y, v, x, method == "REML")
    assert ours > theirs + 0.5  # metafor's fit is lower by 0.53 (REML), 13.9 (ML)
    # the grid's maximum is not higher (to 1e-9): metafor's logLik() adds ½log k under REML
    shift = 0.5 * np.log(len(y)) if method == "REML" else 0.0
    assert ours + shift >= ref["ll_grid"] - 1e-9
    named = [w for w in caught if "metafor's rma() stops" in str(w.message)]
    assert len(named) == 1 and issubclass(named[0].category, DegenerateWarning)
    assert named[0].message.groups["case"].tolist() == [case]
    assert named[0].message.groups["tau2_metafor"].item() == pytest.approx(
        ref["tau2_metafor"], rel=1e-6, abs=1e-12
    )
    close = [w for w in caught if "two maxima" in str(w.message)]
    assert len(close) == (case == "reml")
    if close:
        assert close[0].message.groups["tau2_other"].item() == pytest.approx(
            ref["tau2_second"], rel=1e-6
        )

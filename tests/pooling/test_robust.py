"""Cluster-robust inference, CR1 and CR2 (issue 29, item 4): metareg(robust=, cluster=) and
pool(model="multilevel", robust=) against metafor's robust() and clubSandwich's
coef_test(vcov="CR2", test="Satterthwaite") (fixtures/metafor/make_robust.R)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import FIXTURES
from scipy import stats

import metaeval
from metaeval import DegenerateWarning, OptionError, SchemaError

DIR = FIXTURES / "metafor"
TERMS = {"intrcpt": "intercept", "x": "x", "fb": "f[T.b]", "fc": "f[T.c]"}


def _read(name: str) -> pd.DataFrame:
    return pd.read_csv(DIR / f"{name}.csv.gz")


@pytest.fixture(scope="module")
def reg_data() -> pd.DataFrame:
    return _read("robust_metareg_data").rename(columns={"yi": "effect", "vi": "variance"})


@pytest.fixture(scope="module")
def reg_ref() -> pd.DataFrame:
    ref = _read("robust_metareg")
    return ref.assign(term=ref["term"].map(TERMS))


def _metareg(data, **kwargs):
    with warnings.catch_warnings():
        # data sets with n_study - 4 < 1 are in the data, not the reference: they warn
        warnings.simplefilter("ignore", DegenerateWarning)
        return metaeval.metareg(data, ["x", "f"], test="z", groups="id", cluster="study", **kwargs)


@pytest.mark.parametrize("method", ["REML", "DL", "EE"])
@pytest.mark.parametrize("kind", ["CR1", "CR2"])
def test_metareg_matches_robust_and_club_sandwich(reg_data, reg_ref, method, kind):
    """55 meta-regressions with 1–4 effects per study: robust se, df, p and interval of
    every coefficient to 1e-8 relative (CR1: metafor's robust(adjust=TRUE); CR2:
    clubSandwich's coef_test/conf_int with Satterthwaite df). REML converged to 1e-12 in
    metafor, so that the estimates agree as closely."""
    res = _metareg(reg_data, method=method, robust=kind)
    assert res.table.attrs["robust"] == kind and res.table.attrs["cluster"] == "study"
    ref = reg_ref[reg_ref["method"] == method]
    both = res.table.merge(ref, on=["id", "term"], suffixes=("", "_R"), validate="1:1")
    assert len(both) == len(ref) > 200
    lo = kind.lower()
    pairs = {
        "estimate": "estimate_R",
        "robust_se": f"{lo}_se",
        "robust_df": f"{lo}_df",
        "robust_p_value": f"{lo}_pval",
        "robust_ci_low": f"{lo}_ci_lb",
        "robust_ci_high": f"{lo}_ci_ub",
    }
    for ours, theirs in pairs.items():
        np.testing.assert_allclose(both[ours], both[theirs], rtol=1e-8, err_msg=f"{kind} {ours}")
    t = both["estimate"] / both["robust_se"]
    np.testing.assert_allclose(both["robust_statistic"], t, rtol=1e-12)
    if kind == "CR2":  # Satterthwaite df differ between coefficients, unlike CR1's n − p
        assert (both.groupby("id")["robust_df"].nunique() > 1).all()
    # the robust covariance is in the vcov part; its diagonal is robust_se²
    v = res.vcov[res.vcov["term"] == res.vcov["term_b"]]
    diag = v.merge(res.table, on=["id", "term"])
    np.testing.assert_allclose(diag["robust_cov"], diag["robust_se"] ** 2, rtol=1e-12)


def test_metareg_robust_does_not_depend_on_ci(reg_data):
    """The bread is (X'WX)⁻¹ whatever ``ci`` is (metafor's robust() of a knha fit carries
    s² once more; clubSandwich does not)."""
    sub = reg_data[reg_data["id"] <= 5]
    z = _metareg(sub, robust="CR2").table
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateWarning)
        knha = metaeval.metareg(
            sub, ["x", "f"], test="knha", groups="id", cluster="study", robust="CR2"
        ).table
    cols = ["robust_se", "robust_df", "robust_p_value"]
    np.testing.assert_allclose(z[cols], knha[cols], rtol=1e-12)
    assert not np.allclose(z["se"], knha["se"], rtol=1e-6)


def test_metareg_default_cluster_is_each_effect_a_naive_sandwich():
    """cluster=None: every effect its own cluster. CR1 is then n/(n − p)·M X'W diag(e²) W X M
    (written here with a loop over effects from the formula); CR2 with one effect per
    cluster divides e_i² by 1 − h_ii (h the diagonal of X M X'W)."""
    rng = np.random.default_rng(5)
    k = 9
    eff = pd.DataFrame(
        {
            "task": [f"t{i}" for i in range(k)],
            "x": rng.normal(size=k),
            "variance": rng.uniform(0.01, 0.05, k),
        }
    )
    eff["effect"] = 0.2 + 0.1 * eff["x"] + rng.normal(0, 0.15, k)
    before = eff.copy()
    res = {
        kind: metaeval.metareg(eff, "x", method="EE", robust=kind).table for kind in ("CR1", "CR2")
    }
    pd.testing.assert_frame_equal(eff, before)  # the input is not mutated
    x = np.column_stack([np.ones(k), eff["x"]])
    w = 1 / eff["variance"].to_numpy()
    y = eff["effect"].to_numpy()
    m = np.linalg.inv(x.T @ (w[:, None] * x))
    beta = m @ x.T @ (w * y)
    e = y - x @ beta
    meat1, meat2 = np.zeros((2, 2)), np.zeros((2, 2))
    for i in range(k):
        u = x[i] * w[i] * e[i]
        h = x[i] @ m @ x[i] * w[i]
        meat1 += np.outer(u, u)
        meat2 += np.outer(u, u) / (1 - h)
    se1 = np.sqrt(np.diag(k / (k - 2) * m @ meat1 @ m))
    se2 = np.sqrt(np.diag(m @ meat2 @ m))
    np.testing.assert_allclose(res["CR1"]["robust_se"], se1, rtol=1e-10)
    np.testing.assert_allclose(res["CR1"]["robust_df"], k - 2)
    np.testing.assert_allclose(res["CR2"]["robust_se"], se2, rtol=1e-10)
    t = res["CR1"]["estimate"] / se1
    np.testing.assert_allclose(
        res["CR1"]["robust_p_value"], 2 * stats.t.sf(np.abs(t), k - 2), rtol=1e-10
    )


# ------------------------------------------------------------------ multilevel
@pytest.fixture(scope="module")
def ml():
    data = _read("multilevel_data").rename(columns={"yi": "effect", "vi": "variance"})
    cov = _read("multilevel_cov")
    return data[data["id"] <= 40], cov[cov["id"] <= 40], _read("robust_multilevel")


@pytest.mark.parametrize("method", ["EE", "REML"])
@pytest.mark.parametrize("kind", ["CR1", "CR2"])
def test_multilevel_matches_club_sandwich(ml, method, kind):
    """40 three-level data sets: CR2 (clubSandwich, cluster = task, target the marginal
    covariance) and CR1 (metafor's robust()). EE has no variance components, so the
    kernels are compared exactly (1e-9); REML to 1e-6 for se and df and 1e-5 for p, the
    agreement of metafor's variance components (nlminb rel.tol 1e-10 on log σ²)."""
    data, cov, ref = ml
    res = metaeval.pool(
        data,
        over=("task", "metric"),
        groups="id",
        model="multilevel",
        cov=cov,
        method=method,
        test="z",
        robust=kind,
    )
    assert res.attrs["robust"] == kind
    both = res.merge(ref[ref["method"] == method], on="id", validate="1:1")
    assert len(both) == 40
    lo = kind.lower()
    tol = {"EE": (1e-9, 1e-9), "REML": (1e-6, 1e-5)}[method]
    for ours, theirs in (("robust_se", "se"), ("robust_df", "df"), ("robust_p_value", "pval")):
        rtol = tol[1] if ours == "robust_p_value" else tol[0]
        np.testing.assert_allclose(both[ours], both[f"{lo}_{theirs}"], rtol=rtol, err_msg=ours)
    if kind == "CR2":
        for ours, theirs in (("robust_ci_low", "cr2_ci_lb"), ("robust_ci_high", "cr2_ci_ub")):
            np.testing.assert_allclose(both[ours], both[theirs], rtol=tol[0] * 10)


def test_multilevel_cr2_is_not_cr1(ml):
    """robust="CR2" used to run and silently give CR1 (a truthy value): now it is CR2,
    whose df are Satterthwaite's, below CR1's n − 1 here, and whose se differ."""
    data, cov, ref = ml
    kw = dict(over=("task", "metric"), groups="id", model="multilevel", cov=cov, method="EE")
    cr1 = metaeval.pool(data, robust="CR1", **kw)
    cr2 = metaeval.pool(data, robust="CR2", **kw)
    assert cr2.attrs["robust"] == "CR2"
    assert (cr2["robust_df"] < cr1["robust_df"]).all()
    assert (np.abs(cr2["robust_se"] / cr1["robust_se"] - 1) > 1e-3).mean() > 0.5
    np.testing.assert_allclose(cr2["robust_se"], ref.query("method == 'EE'")["cr2_se"], rtol=1e-9)
    # True is CR1
    same = metaeval.pool(data, robust=True, **kw)
    assert same.attrs["robust"] == "CR1"
    np.testing.assert_array_equal(same["robust_se"], cr1["robust_se"])


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("bad", ["CR3", "cr2", 1, "yes"])
def test_an_unknown_robust_is_an_option_error_naming_it(ml, reg_data, bad):
    data, cov, _ = ml
    with pytest.raises(OptionError, match=r"`robust`.*'CR1', 'CR2'"):
        metaeval.pool(
            data, over=("task", "metric"), groups="id", model="multilevel", cov=cov, robust=bad
        )
    with pytest.raises(OptionError, match=r"`robust`.*'CR1', 'CR2'"):
        metaeval.metareg(reg_data, ["x"], groups="id", robust=bad)


def test_univariate_pool_still_refuses_robust(reg_data):
    with pytest.raises(SchemaError, match="robust"):
        metaeval.pool(reg_data[reg_data["id"] == 1], robust="CR2")


def test_bad_cluster_is_a_typed_error(reg_data):
    one = reg_data[reg_data["id"] == 1]
    with pytest.raises(SchemaError, match=r"`cluster`.*'studies'"):
        metaeval.metareg(one, "x", robust="CR2", cluster="studies")
    with pytest.raises(SchemaError, match=r"`cluster` column 'study' has 1 missing"):
        metaeval.metareg(
            one.assign(study=one["study"].where(one.index != one.index[0])),
            "x",
            robust="CR2",
            cluster="study",
        )
    with pytest.raises(OptionError, match=r"`cluster`.*robust='CR2'"):
        metaeval.metareg(one, "x", cluster="study")


def test_too_few_clusters_are_nan_with_a_warning(reg_data):
    """Two studies and two coefficients: metafor's robust() refuses; here NaN, named."""
    one = reg_data[reg_data["id"] == 1]
    largest = one["study"].value_counts().index[:2]
    two = one[one["study"].isin(largest)]
    assert len(two) > 2
    with pytest.warns(DegenerateWarning, match="no more clusters than coefficients"):
        res = metaeval.metareg(two, "x", robust="CR2", cluster="study")
    assert res.table["robust_se"].isna().all() and res.table["se"].notna().all()


@pytest.mark.parametrize("ci", ["z", "knha"])
def test_an_exact_fit_has_nan_robust_results(ci):
    """Moderators that fit the effects exactly leave residuals 0: a robust se of 0 would
    claim certainty; NaN with a warning, whatever ``ci``."""
    eff = pd.DataFrame(
        {
            "task": list("abcdef"),
            "x": [0.0, 1, 2, 3, 4, 5],
            "variance": [0.01, 0.02, 0.01, 0.03, 0.02, 0.01],
        }
    )
    eff["effect"] = 0.1 + 0.2 * eff["x"]
    with pytest.warns(DegenerateWarning, match="fitted exactly"):
        res = metaeval.metareg(eff, "x", method="DL", test=ci, robust="CR1").table
    assert res["robust_se"].isna().all()
    np.testing.assert_allclose(res["estimate"], [0.1, 0.2], rtol=1e-10)


def test_a_term_not_estimable_in_a_group_has_nan_robust_results(reg_data):
    """A factor level absent from a group (present in another): its coefficient is NaN,
    and so are its robust se and df (not 0); the other terms equal the group's fit
    alone, where the level does not exist."""
    most = reg_data.groupby("id")["study"].nunique().idxmax()  # 14 studies
    lacking = reg_data[(reg_data["id"] == most) & (reg_data["f"] != "c")]
    other = reg_data[reg_data["id"] == 1]
    both = pd.concat([lacking, other])
    with pytest.warns(DegenerateWarning, match="not estimable"):
        res = metaeval.metareg(both, ["x", "f"], groups="id", robust="CR2", cluster="study")
    res = res.table[res.table["id"] == most].set_index("term")
    cols = ["estimate", "robust_se", "robust_df", "robust_p_value"]
    assert res.loc["f[T.c]", cols].astype(float).isna().all()
    alone = metaeval.metareg(lacking, ["x", "f"], robust="CR2", cluster="study").table
    alone = alone.set_index("term")
    np.testing.assert_allclose(res.loc[alone.index, cols], alone[cols], rtol=1e-10)


# ------------------------------------------------------------------ scale (issue 39, item 24)
SCALES = [1e-12, 1e-9, 1e-6, 1e-3, 1.0, 1e3, 1e6]


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("method", ["REML", "EE"])
def test_metareg_cr2_is_scale_free(reg_data, method, scale):
    """Every variance times s and every effect times √s: clubSandwich's CR2 se is √s times
    the one at s = 1 and its df the same at every s (it divides an rma.uni fit's weights by
    their mean); so are metaeval's, checked against clubSandwich at each s
    (fixtures/metafor/make_robust_scale.R). Before, an absolute 1e-12 on the eigenvalues
    of G_j gave se 0 and df NaN at s ≤ 1e-6."""
    ref = pd.read_csv(DIR / "robust_scale_metareg.csv")
    ref = ref[(ref["method"] == method) & np.isclose(ref["scale"], scale, rtol=1e-12, atol=0)]
    ref = ref.assign(term=ref["term"].map(TERMS))
    sub = reg_data[reg_data["id"].isin(ref["id"].unique())]
    sub = sub.assign(effect=sub["effect"] * np.sqrt(scale), variance=sub["variance"] * scale)
    res = _metareg(sub, method=method, robust="CR2").table
    both = res.merge(ref, on=["id", "term"], validate="1:1")
    assert len(both) == len(ref) > 20
    np.testing.assert_allclose(both["robust_se"], both["cr2_se"], rtol=1e-7)
    np.testing.assert_allclose(both["robust_df"], both["cr2_df"], rtol=1e-7)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("method", ["REML", "EE"])
def test_multilevel_cr2_is_scale_free(ml, method, scale):
    """The same for the multilevel model (variances and covariances times s). clubSandwich
    does not normalize rma.mv's weights and gives se 0, df NaN at s ≤ 1e-6 itself (its
    absolute 1e-12; the fixture holds those rows too), so the reference is its s = 1 fit:
    se times √s, the same df. Before, metaeval gave se 0 and df NaN at 1e-6, and at 1e-12
    called V not positive definite (a 1e-12 relative to the padding's 1)."""
    data, cov, _ = ml
    ref = pd.read_csv(DIR / "robust_scale_multilevel.csv")
    ref = ref[(ref["method"] == method) & (ref["scale"] == 1.0)]
    data = data[data["id"].isin(ref["id"])]
    cov = cov[cov["id"].isin(ref["id"])]
    data = data.assign(effect=data["effect"] * np.sqrt(scale), variance=data["variance"] * scale)
    cov = cov.assign(cov=cov["cov"] * scale)
    res = metaeval.pool(
        data,
        over=("task", "metric"),
        groups="id",
        model="multilevel",
        cov=cov,
        method=method,
        test="z",
        robust="CR2",
    )
    both = res.merge(ref, on="id", suffixes=("", "_R"), validate="1:1")
    assert len(both) == 6
    rtol = 1e-9 if method == "EE" else 1e-6
    np.testing.assert_allclose(both["robust_se"], both["cr2_se"] * np.sqrt(scale), rtol=rtol)
    np.testing.assert_allclose(both["robust_df"], both["cr2_df"], rtol=rtol)
    for col in ("sigma2_task", "sigma2_metric"):  # metafor's nlminb: ~1e-6 of the largest
        np.testing.assert_allclose(
            both[col],
            both[f"{col}_R"] * scale,
            rtol=1e-4,
            atol=1e-6 * scale * both[f"{col}_R"].max(),
        )

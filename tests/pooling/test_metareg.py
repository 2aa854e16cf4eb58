"""Meta-regression against metafor (fixtures/metafor/make_metareg.R) and its edges."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import FIXTURES

import metaeval
from metaeval import DegenerateWarning, MetaEvalWarning, OptionError, SchemaError

DIR = FIXTURES / "metafor"
FORMULAS = {"~ x1": ["x1"], "~ x1 + x2": ["x1", "x2"], "~ f": ["f"], "~ x1 + f": ["x1", "f"]}
METHODS = ["EE", "DL", "HE", "ML", "REML"]
COEFS = {"estimate": "estimate", "se": "se", "statistic": "zval", "p_value": "pval",
         "ci_low": "ci_lb", "ci_high": "ci_ub"}  # fmt: skip
FIT = {"tau2": "tau2", "i2": "I2", "h2": "H2", "r2": "R2", "qm": "QM", "qm_df": "QMdf1",
       "qm_df2": "QMdf2", "qm_p_value": "QMp", "qe": "QE", "qe_p_value": "QEp",
       "n_coef": "p", "k": "k"}  # fmt: skip


def _read(name: str) -> pd.DataFrame:
    return pd.read_csv(DIR / f"{name}.csv.gz", keep_default_na=True)


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    d = _read("metareg_data").rename(columns={"yi": "effect", "vi": "variance"})
    return d.assign(study=d.groupby("id").cumcount() + 1)


@pytest.fixture(scope="module")
def coefs() -> pd.DataFrame:
    ref = _read("metareg_coefs")
    term = ref["term"].replace({"intrcpt": "intercept"})
    return ref.assign(term=term.str.replace(r"^f([a-d])$", r"f[T.\1]", regex=True))


@pytest.fixture(scope="module")
def fits() -> pd.DataFrame:
    return _read("metareg_fits")


def _metareg(data, mods, **kwargs) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MetaEvalWarning)
        return metaeval.metareg(data, mods, over="study", groups="id", **kwargs)


def _pool_tau2(data, method) -> pd.Series:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MetaEvalWarning)
        pooled = metaeval.pool(data, over="study", groups="id", method=method, ci="z")
    return pooled.set_index("id")["tau2"]


def _close(ours, theirs, rtol, atol, what):
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    assert np.array_equal(np.isnan(ours), np.isnan(theirs)), what
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, err_msg=what)


@pytest.mark.parametrize("test", ["z", "knha"])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("formula", list(FORMULAS))
def test_metareg_matches_rma(data, coefs, fits, formula, method, test):
    """Every coefficient, se, test, CI, τ², I², H², R², Q_M and Q_E of 240 fits to 1e-6."""
    res = _metareg(data, FORMULAS[formula], method=method, ci=test)
    sel = dict(formula=formula, method=method, test=test)
    ref = coefs.loc[(coefs[list(sel)] == pd.Series(sel)).all(axis=1)]
    merged = res.merge(ref, on=["id", "term"], how="outer", suffixes=("", "_R"), indicator=True)
    # factor levels absent from a data set are terms of ours with NaN results (R has no row)
    absent = merged["_merge"] == "left_only"
    assert merged.loc[absent, list(COEFS)].isna().all().all()
    assert absent.any() == formula.endswith("f")
    merged = merged.loc[~absent]
    assert (merged["_merge"] == "both").all(), merged.loc[merged["_merge"] != "both"].head()
    assert len(merged) == len(ref) > 240
    for ours, theirs in COEFS.items():
        col = f"{theirs}_R" if theirs in res.columns else theirs
        atol = 1e-300 if ours == "p_value" else 1e-9
        _close(merged[ours], merged[col], 1e-6, atol, f"{formula} {method} {test} {ours}")
    ref_fit = fits.loc[(fits[list(sel)] == pd.Series(sel)).all(axis=1)]
    expected_df = merged["id"].map(ref_fit.set_index("id")["QMdf2"])
    _close(merged["df"], expected_df, 0, 0, "df")  # k − p for knha, NaN for z
    fit = res.attrs["fit"]
    assert ref_fit["error"].isna().all()
    both = fit.merge(ref_fit, on="id", suffixes=("", "_R"))
    assert len(both) == 240
    assert both["id"].is_unique
    if method in ("ML", "REML"):
        # where both τ² are 0, metafor's R² compares its stopping points (4e-14 against
        # 2e-14 gives 54%): ours is 0 there, by its definition for τ²_RE = 0
        tau2_re = _pool_tau2(data, method).reindex(both["id"]).to_numpy()
        artifact = (tau2_re == 0) & (both["tau2_R"] < 1e-10) & (both["r2"] == 0)
        assert artifact.sum() <= 5  # 3 of the 240 for ML
        both = both.loc[~artifact]
    for ours, theirs in FIT.items():
        col = f"{theirs}_R" if theirs in fit.columns else theirs
        # where τ² is 0, metafor's Fisher scoring stops at about 1e-11 (steps halved
        # towards the boundary): a few 1e-9 percent of I² and R²
        atol = 1e-6 if ours in ("i2", "r2") else 1e-10
        _close(both[ours], both[col], 1e-6, atol, f"{formula} {method} {test} {ours}")


# ------------------------------------------------------------------ edges
def _toy(seed=0, k=12) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=k)
    v = rng.uniform(0.005, 0.05, size=k)
    return pd.DataFrame({
        "task": [f"t{i}" for i in range(k)],
        "effect": 0.2 + 0.3 * x + rng.normal(0, np.sqrt(v + 0.01)),
        "variance": v,
        "x": x,
        "domain": rng.choice(["web", "news", "bio"], size=k),
    })  # fmt: skip


def test_ee_coefficients_equal_weighted_least_squares():
    """EE: statsmodels WLS with weights 1/v; its se divided by √scale (known variances)."""
    sm = pytest.importorskip("statsmodels.api")
    eff = _toy()
    res = metaeval.metareg(eff, ["x", "domain"], method="EE")
    dummies = pd.get_dummies(eff["domain"], dtype=float)[["news", "web"]]  # "bio" first: reference
    design = sm.add_constant(pd.concat([eff[["x"]], dummies], axis=1))
    wls = sm.WLS(eff["effect"], design, weights=1 / eff["variance"]).fit()
    assert res["term"].tolist() == ["intercept", "x", "domain[T.news]", "domain[T.web]"]
    np.testing.assert_allclose(res["estimate"], wls.params.to_numpy(), rtol=1e-10)
    np.testing.assert_allclose(res["se"], wls.bse.to_numpy() / np.sqrt(wls.scale), rtol=1e-10)
    fit = res.attrs["fit"].iloc[0]
    assert fit["qe"] == pytest.approx(wls.ssr, rel=1e-10)  # Q_E: the weighted RSS


def _plain(table: pd.DataFrame) -> pd.DataFrame:
    """The table without attrs: pandas compares attrs with == when it concatenates, which
    fails for attrs that hold tables."""
    table = table.copy()
    table.attrs = {}
    return table


def test_groups_fitted_together_equal_fitted_alone():
    """Batched over groups of different sizes: each group as if fitted on its own."""
    parts = [_toy(seed, k).assign(metric=f"m{seed}") for seed, k in [(1, 8), (2, 30), (3, 15)]]
    together = _plain(metaeval.metareg(pd.concat(parts, ignore_index=True), ["x", "domain"]))
    alone = pd.concat(
        [_plain(metaeval.metareg(p, ["x", "domain"])) for p in parts], ignore_index=True
    )
    pd.testing.assert_frame_equal(together, alone, check_exact=False, rtol=1e-9)
    fits = pd.concat([metaeval.metareg(p, "x").attrs["fit"] for p in parts], ignore_index=True)
    both = metaeval.metareg(pd.concat(parts, ignore_index=True), "x").attrs["fit"]
    pd.testing.assert_frame_equal(both, fits, check_exact=False, rtol=1e-9)


def test_input_not_mutated_and_order_kept():
    eff = _toy()
    before = eff.copy()
    res = eff.meta.metareg(["domain", "x"])
    pd.testing.assert_frame_equal(eff, before)
    assert res["term"].tolist() == ["intercept", "domain[T.news]", "domain[T.web]", "x"]


def test_categorical_order_sets_the_reference():
    eff = _toy()
    eff["domain"] = pd.Categorical(eff["domain"], categories=["web", "news", "bio"])
    res = metaeval.metareg(eff, "domain", method="EE")
    assert res["term"].tolist() == ["intercept", "domain[T.news]", "domain[T.bio]"]
    web = eff.query("domain == 'web'")
    w = 1 / web["variance"]
    assert res["estimate"].iloc[0] == pytest.approx((w * web["effect"]).sum() / w.sum())


def test_absent_level_is_nan_in_its_group_with_a_warning():
    a = _toy(1).assign(metric="a")
    b = _toy(2).assign(metric="b", domain="web")
    b.loc[:5, "domain"] = "bio"
    with pytest.warns(DegenerateWarning, match="not estimable") as record:
        res = metaeval.metareg(pd.concat([a, b], ignore_index=True), ["x", "domain"])
    groups = [w.message.groups for w in record if "not estimable" in str(w.message)][0]
    assert groups[["metric", "term"]].values.tolist() == [["b", "domain[T.news]"]]
    row = res.query("metric == 'b' and term == 'domain[T.news]'")
    assert row[["estimate", "se", "p_value"]].isna().all(axis=None)
    alone = metaeval.metareg(b, ["x", "domain"])  # bio/web only: no news term at all
    got = res.query("metric == 'b'").dropna(subset=["estimate"])
    np.testing.assert_allclose(got["estimate"], alone["estimate"], rtol=1e-10)
    assert res.attrs["fit"].set_index("metric").loc["b", "qm_df"] == 2


def test_missing_moderator_rows_left_out_with_a_warning():
    eff = _toy()
    eff.loc[3, "x"] = np.nan
    with pytest.warns(DegenerateWarning, match="missing moderator"):
        res = metaeval.metareg(eff, "x")
    assert res.attrs["fit"]["k"].item() == len(eff) - 1
    expected = metaeval.metareg(eff.drop(index=3), "x")
    np.testing.assert_allclose(res["estimate"], expected["estimate"], rtol=1e-12)


def test_too_few_effects_and_collinear_moderators_are_nan():
    eff = _toy(k=3)
    with pytest.warns(DegenerateWarning, match="k <= p"):
        res = metaeval.metareg(eff, ["x", "domain"])
    assert res["estimate"].isna().all()
    eff = _toy().assign(x2=lambda d: 2 * d["x"] + 1)
    with pytest.warns(DegenerateWarning, match="collinear"):
        res = metaeval.metareg(eff, ["x", "x2"])
    assert res["estimate"].isna().all() and res.attrs["fit"]["tau2"].isna().all()


@pytest.mark.parametrize(
    ("mods", "match"),
    [
        ("nope", "not columns of the effects table"),
        ([], "empty"),
        (["x", "x"], "twice"),
        ("task", "cannot be moderators"),
        ("variance", "cannot be moderators"),
        ("one", "at least two"),
    ],
)
def test_bad_moderators_are_schema_errors(mods, match):
    eff = _toy().assign(one="same")
    with pytest.raises(SchemaError, match=match):
        metaeval.metareg(eff, mods)


def test_bad_options():
    with pytest.raises(OptionError, match="method"):
        metaeval.metareg(_toy(), "x", method="PM")
    with pytest.warns(MetaEvalWarning, match="not meant for the common-effect"):
        metaeval.metareg(_toy(), "x", method="EE", ci="knha")


def test_r2_is_the_share_of_tau2_explained():
    eff = _toy(5, k=40)
    res = metaeval.metareg(eff, "x", method="REML", ci="z")
    tau2_re = metaeval.pool(eff, method="REML", ci="z")["tau2"].item()
    fit = res.attrs["fit"].iloc[0]
    assert tau2_re > 0
    assert fit["r2"] == pytest.approx(max(0, 100 * (tau2_re - fit["tau2"]) / tau2_re), rel=1e-12)


def test_data_and_vcov_attrs_describe_the_fit():
    eff = _toy()
    res = metaeval.metareg(eff, ["x", "domain"])
    data, vcov = res.attrs["data"], res.attrs["vcov"]
    assert data["weight"].sum() == pytest.approx(100)
    cov = vcov.pivot(index="term", columns="term_b", values="cov").loc[res["term"], res["term"]]
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), res["se"], rtol=1e-12)
    x = np.column_stack([np.ones(len(eff)), eff["x"], eff["domain"] == "news",
                         eff["domain"] == "web"]).astype(float)  # fmt: skip
    np.testing.assert_allclose(data["fitted"], x @ res["estimate"].to_numpy(), rtol=1e-12)

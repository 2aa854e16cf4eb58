"""Meta-regression against metafor (fixtures/metafor/make_metareg.R) and its edges."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from _helpers import FIXTURES

import metaeval
from metaeval import DegenerateWarning, MetaEvalWarning, OptionError, SchemaError

DIR = FIXTURES / "metafor"
FORMULAS = {"~ x1": ["x1"], "~ x1 + x2": ["x1", "x2"], "~ f": ["f"], "~ x1 + f": ["x1", "f"]}
METHODS = ["EE", "DL", "HE", "ML", "REML", "SJ", "EB", "PM"]
COEFS = {
    "estimate": "estimate",
    "se": "se",
    "statistic": "zval",
    "p_value": "pval",
    "ci_low": "ci_lb",
    "ci_high": "ci_ub",
}
FIT = {
    "tau2": "tau2",
    "i2": "I2",
    "h2": "H2",
    "r2": "R2",
    "qm": "QM",
    "qm_df": "QMdf1",
    "qm_df2": "QMdf2",
    "qm_p_value": "QMp",
    "qe": "QE",
    "qe_p_value": "QEp",
    "n_coef": "p",
    "k": "k",
}


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


def _metareg(data, mods, **kwargs) -> metaeval.MetaRegResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MetaEvalWarning)
        return metaeval.metareg(data, mods, over="study", groups="id", **kwargs)


def _pool_tau2(data, method) -> pd.Series:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MetaEvalWarning)
        pooled = metaeval.pool(data, over="study", groups="id", method=method, test="z")
    return pooled.set_index("id")["tau2"]


def _close(ours, theirs, rtol, atol, what):
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    assert np.array_equal(np.isnan(ours), np.isnan(theirs)), what
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, err_msg=what)


@pytest.mark.parametrize("test", ["z", "knha", "adhoc"])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("formula", list(FORMULAS))
def test_metareg_matches_rma(data, coefs, fits, formula, method, test):
    """Every coefficient, se, test, CI, τ², I², H², R², Q_M and Q_E of 240 fits to 1e-6;
    but for one ML fit whose likelihood has two maxima, where metafor stops at the lower
    (τ² = 0) and metareg() takes the higher and names it (issue 39, item 23)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = metaeval.metareg(
            data, FORMULAS[formula], over="study", groups="id", method=method, test=test
        )
    elsewhere = [w.message.groups for w in caught if "metafor's rma() stops" in str(w.message)]
    lower = sorted(elsewhere[0]["id"]) if elsewhere else []
    assert lower == ([182] if (formula, method) == ("~ x1 + f", "ML") else [])
    table, fit = (part[~part["id"].isin(lower)] for part in (res.table, res.fit))
    sel = dict(formula=formula, method=method, test=test)
    ref = coefs.loc[(coefs[list(sel)] == pd.Series(sel)).all(axis=1) & ~coefs["id"].isin(lower)]
    merged = table.merge(ref, on=["id", "term"], how="outer", suffixes=("", "_R"), indicator=True)
    # factor levels absent from a data set are terms of ours with NaN results (R has no row)
    absent = merged["_merge"] == "left_only"
    assert merged.loc[absent, list(COEFS)].isna().all().all()
    assert absent.any() == formula.endswith("f")
    merged = merged.loc[~absent]
    assert (merged["_merge"] == "both").all(), merged.loc[merged["_merge"] != "both"].head()
    assert len(merged) == len(ref) > 240
    for ours, theirs in COEFS.items():
        col = f"{theirs}_R" if theirs in table.columns else theirs
        atol = 1e-300 if ours == "p_value" else 1e-9
        _close(merged[ours], merged[col], 1e-6, atol, f"{formula} {method} {test} {ours}")
    ref_fit = fits.loc[(fits[list(sel)] == pd.Series(sel)).all(axis=1) & ~fits["id"].isin(lower)]
    expected_df = merged["id"].map(ref_fit.set_index("id")["QMdf2"])
    _close(merged["df"], expected_df, 0, 0, "df")  # k − p for knha, NaN for z
    assert ref_fit["error"].isna().all()
    both = fit.merge(ref_fit, on="id", suffixes=("", "_R"))
    assert len(both) == 240 - len(lower)
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
    return pd.DataFrame(
        {
            "task": [f"t{i}" for i in range(k)],
            "effect": 0.2 + 0.3 * x + rng.normal(0, np.sqrt(v + 0.01)),
            "variance": v,
            "x": x,
            "domain": rng.choice(["web", "news", "bio"], size=k),
        }
    )


def test_ee_coefficients_equal_weighted_least_squares():
    """EE: statsmodels WLS with weights 1/v; its se divided by √scale (known variances)."""
    sm = pytest.importorskip("statsmodels.api")
    eff = _toy()
    res = metaeval.metareg(eff, ["x", "domain"], method="EE")
    dummies = pd.get_dummies(eff["domain"], dtype=float)[["news", "web"]]  # "bio" first: reference
    design = sm.add_constant(pd.concat([eff[["x"]], dummies], axis=1))
    wls = sm.WLS(eff["effect"], design, weights=1 / eff["variance"]).fit()
    assert res.table["term"].tolist() == ["intercept", "x", "domain[T.news]", "domain[T.web]"]
    np.testing.assert_allclose(res.table["estimate"], wls.params.to_numpy(), rtol=1e-10)
    np.testing.assert_allclose(res.table["se"], wls.bse.to_numpy() / np.sqrt(wls.scale), rtol=1e-10)
    fit = res.fit.iloc[0]
    assert fit["qe"] == pytest.approx(wls.ssr, rel=1e-10)  # Q_E: the weighted RSS


def test_groups_fitted_together_equal_fitted_alone():
    """Batched over groups of different sizes: each group as if fitted on its own (and the
    tables of several results concatenate as they are)."""
    parts = [_toy(seed, k).assign(metric=f"m{seed}") for seed, k in [(1, 8), (2, 30), (3, 15)]]
    together = metaeval.metareg(pd.concat(parts, ignore_index=True), ["x", "domain"]).table
    alone = pd.concat(
        [metaeval.metareg(p, ["x", "domain"]).table for p in parts], ignore_index=True
    )
    pd.testing.assert_frame_equal(together, alone, check_exact=False, rtol=1e-9)
    fits = pd.concat([metaeval.metareg(p, "x").fit for p in parts], ignore_index=True)
    both = metaeval.metareg(pd.concat(parts, ignore_index=True), "x").fit
    pd.testing.assert_frame_equal(both, fits, check_exact=False, rtol=1e-9)


def test_input_not_mutated_and_order_kept():
    eff = _toy()
    before = eff.copy()
    res = eff.meta.metareg(["domain", "x"])
    pd.testing.assert_frame_equal(eff, before)
    assert res.table["term"].tolist() == ["intercept", "domain[T.news]", "domain[T.web]", "x"]


def test_categorical_order_sets_the_reference():
    eff = _toy()
    eff["domain"] = pd.Categorical(eff["domain"], categories=["web", "news", "bio"])
    res = metaeval.metareg(eff, "domain", method="EE")
    assert res.table["term"].tolist() == ["intercept", "domain[T.news]", "domain[T.bio]"]
    web = eff.query("domain == 'web'")
    w = 1 / web["variance"]
    assert res.table["estimate"].iloc[0] == pytest.approx((w * web["effect"]).sum() / w.sum())


def test_absent_level_is_nan_in_its_group_with_a_warning():
    a = _toy(1).assign(metric="a")
    b = _toy(2).assign(metric="b", domain="web")
    b.loc[:5, "domain"] = "bio"
    with pytest.warns(DegenerateWarning, match="not estimable") as record:
        res = metaeval.metareg(pd.concat([a, b], ignore_index=True), ["x", "domain"])
    groups = [w.message.groups for w in record if "not estimable" in str(w.message)][0]
    assert groups[["metric", "term"]].values.tolist() == [["b", "domain[T.news]"]]
    row = res.table.query("metric == 'b' and term == 'domain[T.news]'")
    assert row[["estimate", "se", "p_value"]].isna().all(axis=None)
    alone = metaeval.metareg(b, ["x", "domain"])  # bio/web only: no news term at all
    got = res.table.query("metric == 'b'").dropna(subset=["estimate"])
    np.testing.assert_allclose(got["estimate"], alone.table["estimate"], rtol=1e-10)
    assert res.fit.set_index("metric").loc["b", "qm_df"] == 2


def test_missing_moderator_rows_left_out_with_a_warning():
    eff = _toy()
    eff.loc[3, "x"] = np.nan
    with pytest.warns(DegenerateWarning, match="missing moderator"):
        res = metaeval.metareg(eff, "x")
    assert res.fit["k"].item() == len(eff) - 1
    expected = metaeval.metareg(eff.drop(index=3), "x")
    np.testing.assert_allclose(res.table["estimate"], expected.table["estimate"], rtol=1e-12)


def test_too_few_effects_and_collinear_moderators_are_nan():
    eff = _toy(k=3)
    with pytest.warns(DegenerateWarning, match="k <= p"):
        res = metaeval.metareg(eff, ["x", "domain"])
    assert res.table["estimate"].isna().all()
    eff = _toy().assign(x2=lambda d: 2 * d["x"] + 1)
    with pytest.warns(DegenerateWarning, match="collinear"):
        res = metaeval.metareg(eff, ["x", "x2"])
    assert res.table["estimate"].isna().all() and res.fit["tau2"].isna().all()


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
        metaeval.metareg(_toy(), "x", method="XX")
    with pytest.warns(MetaEvalWarning, match="not meant for the common-effect"):
        metaeval.metareg(_toy(), "x", method="EE", test="knha")


def test_r2_is_the_share_of_tau2_explained():
    eff = _toy(5, k=40)
    res = metaeval.metareg(eff, "x", method="REML", test="z")
    tau2_re = metaeval.pool(eff, method="REML", test="z")["tau2"].item()
    fit = res.fit.iloc[0]
    assert tau2_re > 0
    assert fit["r2"] == pytest.approx(max(0, 100 * (tau2_re - fit["tau2"]) / tau2_re), rel=1e-12)


def test_data_and_vcov_describe_the_fit():
    eff = _toy()
    res = metaeval.metareg(eff, ["x", "domain"])
    data, vcov = res.data, res.vcov
    assert data["weight"].sum() == pytest.approx(100)
    cov = vcov.pivot(index="term", columns="term_b", values="cov").loc[
        res.table["term"], res.table["term"]
    ]
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), res.table["se"], rtol=1e-12)
    x = np.column_stack(
        [np.ones(len(eff)), eff["x"], eff["domain"] == "news", eff["domain"] == "web"]
    ).astype(float)
    np.testing.assert_allclose(data["fitted"], x @ res.table["estimate"].to_numpy(), rtol=1e-12)


# ------------------------------------------------------------------ absent levels
LEVEL_FITS = {
    "tau2": "tau2",
    "qm": "QM",
    "qm_df": "QMdf1",
    "qm_p_value": "QMp",
    "qe": "QE",
    "n_coef": "p",
    "k": "k",
}


@pytest.mark.parametrize("test", ["z", "knha"])
@pytest.mark.parametrize("method", ["EE", "DL", "REML"])
@pytest.mark.parametrize("formula", ["~ f", "~ x1 + f"])
def test_absent_levels_match_rma(formula, method, test):
    """Groups without the reference level (ids 2, 4, 6) or without other levels (3, 5, 6)
    are fitted with the levels present, the first the reference, as metafor fits them
    (fixtures/metafor/make_metareg_levels.R); the reference is named in a warning."""
    d = _read("metareg_levels_data").rename(columns={"yi": "effect", "vi": "variance"})
    d = d.assign(study=d.groupby("id").cumcount() + 1)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        res = metaeval.metareg(
            d, FORMULAS[formula], method=method, test=test, over="study", groups="id"
        )
    sel = dict(formula=formula, method=method, test=test)
    ref = _read("metareg_levels_coefs")
    ref = ref.loc[(ref[list(sel)] == pd.Series(sel)).all(axis=1)]
    ref = ref.assign(
        term=ref["term"]
        .replace({"intrcpt": "intercept"})
        .str.replace(r"^f([a-d])$", r"f[T.\1]", regex=True)
    )
    merged = res.table.merge(
        ref, on=["id", "term"], how="outer", suffixes=("", "_R"), indicator=True
    )
    ours_only = merged.loc[merged["_merge"] == "left_only"]
    assert (merged["_merge"] != "right_only").all()
    assert ours_only[list(COEFS)].isna().all(axis=None)
    # the terms metafor does not have: absent levels, and the new reference of 2, 4 and 6
    assert sorted(map(tuple, ours_only[["id", "term"]].values)) == [
        (2, "f[T.b]"),
        (3, "f[T.b]"),
        (4, "f[T.b]"),
        (4, "f[T.c]"),
        (5, "f[T.d]"),
        (6, "f[T.b]"),
        (6, "f[T.c]"),
    ]
    both = merged.loc[merged["_merge"] == "both"]
    assert len(both) == len(ref)
    for ours, theirs in COEFS.items():
        col = f"{theirs}_R" if theirs in res.table.columns else theirs
        _close(both[ours], both[col], 1e-6, 1e-300 if ours == "p_value" else 1e-9, ours)
    fits = _read("metareg_levels_fits")
    fits = fits.loc[(fits[list(sel)] == pd.Series(sel)).all(axis=1)]
    fit = res.fit.merge(fits, on="id", suffixes=("", "_R"))
    assert len(fit) == 6
    for ours, theirs in LEVEL_FITS.items():
        col = f"{theirs}_R" if theirs in res.fit.columns else theirs
        _close(fit[ours], fit[col], 1e-6, 1e-10, ours)
    new_ref = [w.message for w in record if "reference level" in str(w.message)]
    assert len(new_ref) == 1 and issubclass(new_ref[0].__class__, DegenerateWarning)
    named = new_ref[0].groups
    assert named[["id", "moderator", "reference"]].values.tolist() == [
        [2, "f", "b"],
        [4, "f", "c"],
        [6, "f", "b"],
    ]


# ------------------------------------------------------------------ numerical edges
@pytest.mark.parametrize("method", ["ML", "REML"])
def test_ml_reml_tau2_does_not_depend_on_the_unit(data, fits, method):
    """Effects × c and variances × c² give τ² × c², for c from 1e-6 to 1e12 (the ML/REML
    slope had a rounding term that dominated at large c: τ² ended 5% off); REML on the
    unscaled data is metafor's."""
    sel = (fits["formula"] == "~ x1 + x2") & (fits["method"] == method) & (fits["test"] == "z")
    ref = fits.loc[sel].set_index("id")["tau2"]
    got = {}
    for c in (1e-6, 1.0, 1e6, 1e12):
        scaled = data.assign(effect=data["effect"] * c, variance=data["variance"] * c**2)
        res = _metareg(scaled, ["x1", "x2"], method=method, test="z")
        got[c] = res.fit.set_index("id")["tau2"].reindex(ref.index) / c**2
    assert (ref > 0).sum() > 100
    for c, tau2 in got.items():
        np.testing.assert_allclose(tau2, got[1.0], rtol=1e-10, atol=0, err_msg=str(c))
    np.testing.assert_allclose(got[1.0], ref, rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("line", [(1.0, 2.0), (0.3, 0.1)])
def test_knha_with_an_exact_fit_is_nan_with_a_warning(line):
    """Moderators that fit the effects exactly (s² = 0, also when only rounding is left):
    the estimates are the line, the Knapp–Hartung se, tests, intervals and Q_M are NaN
    with a warning naming the group (metafor: se 0, t = ±Inf, Q_M NA); was LinAlgError."""
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    exact = pd.DataFrame(
        {
            "task": list("abcdef"),
            "effect": line[0] + line[1] * x,
            "variance": [0.1, 0.2, 0.1, 0.3, 0.1, 0.2],
            "x": x,
        }
    )
    other = _toy(4, k=6).drop(columns="domain")
    both = pd.concat([exact.assign(metric="exact"), other.assign(metric="other")])
    with pytest.warns(DegenerateWarning, match="fitted exactly") as record:
        res = metaeval.metareg(both, "x", method="REML", test="knha")
    named = [w.message.groups for w in record if "fitted exactly" in str(w.message)][0]
    assert named["metric"].tolist() == ["exact"]
    got = res.table.query("metric == 'exact'")
    np.testing.assert_allclose(got["estimate"], line, rtol=1e-12, atol=1e-12)
    assert got[["se", "statistic", "p_value", "ci_low", "ci_high"]].isna().all(axis=None)
    fit = res.fit.set_index("metric")
    assert np.isnan(fit.loc["exact", "qm"]) and np.isnan(fit.loc["exact", "qm_p_value"])
    alone = metaeval.metareg(other, "x", method="REML", test="knha")
    np.testing.assert_allclose(
        res.table.query("metric == 'other'")["se"], alone.table["se"], rtol=1e-12
    )


def _solve_exact(a: list[list[Fraction]], b: list[Fraction]) -> list[Fraction]:
    """Gauss–Jordan elimination in exact arithmetic."""
    n = len(a)
    rows = [[*a[i], b[i]] for i in range(n)]
    for c in range(n):
        pivot = next(r for r in range(c, n) if rows[r][c] != 0)
        rows[c], rows[pivot] = rows[pivot], rows[c]
        for r in range(n):
            if r != c and rows[r][c] != 0:
                f = rows[r][c] / rows[c][c]
                rows[r] = [x - f * y for x, y in zip(rows[r], rows[c], strict=True)]
    return [rows[i][n] / rows[i][i] for i in range(n)]


def _dl_exact(y, v, x) -> float:
    """metafor's DL τ² with moderators, (Q_E − (k − p)) / tr P₀, in exact arithmetic:
    tr P₀ = Σ w_i (1 − h_i), h_i = w_i x_i'(X'WX)⁻¹x_i, Q_E = Σ w_i (y_i − x_iβ̂)²."""
    k, p = x.shape
    y, w = [Fraction(t) for t in y], [1 / Fraction(t) for t in v]
    x = [[Fraction(t) for t in row] for row in x]
    a = [[sum(w[i] * x[i][r] * x[i][c] for i in range(k)) for c in range(p)] for r in range(p)]
    beta = _solve_exact(a, [sum(w[i] * x[i][r] * y[i] for i in range(k)) for r in range(p)])
    qe = sum(w[i] * (y[i] - sum(x[i][r] * beta[r] for r in range(p))) ** 2 for i in range(k))
    trace = sum(
        w[i] * (1 - w[i] * sum(x[i][r] * z for r, z in enumerate(_solve_exact(a, x[i]))))
        for i in range(k)
    )
    return float(max(Fraction(0), (qe - (k - p)) / trace))


@pytest.mark.parametrize("seed", range(5))
def test_dl_is_exact_when_one_variance_is_tiny(seed):
    """One sampling variance 1e-8 of the others: DL τ² as exact arithmetic gives it to
    1e-13 (tr P₀ was formed as Σw − tr((X'WX)⁻¹X'W²X), 2% off); and with a moderator
    that only singles out one ordinary task, metareg's DL is pool's DL on the other
    tasks (the same Q_E and tr P₀) to 1e-14."""
    rng = np.random.default_rng(seed)
    k = 9
    v = rng.uniform(0.5, 2.0, k)
    v[2] = 1e-8 * v[2]
    x = rng.normal(size=k)
    eff = pd.DataFrame(
        {
            "task": [f"t{i}" for i in range(k)],
            "effect": 0.3 * x + rng.normal(0, 2, k),
            "variance": v,
            "x": x,
        }
    )
    res = metaeval.metareg(eff, "x", method="DL", test="z")
    exact = _dl_exact(eff["effect"], v, np.column_stack([np.ones(k), x]))
    assert exact > 0
    assert res.fit["tau2"].item() == pytest.approx(exact, rel=1e-13)
    single = eff.assign(only=(eff["task"] == "t5").astype(float))
    tau2 = metaeval.metareg(single, "only", method="DL", test="z").fit["tau2"].item()
    pooled = metaeval.pool(eff.query("task != 't5'"), method="DL", test="z")["tau2"].item()
    assert pooled > 0
    assert tau2 == pytest.approx(pooled, rel=1e-14)


@pytest.mark.parametrize("seed", range(5))
def test_ee_coefficients_are_exact_when_one_variance_is_tiny(seed):
    """One sampling variance 1e-8 of the others: the EE coefficients and their se as
    exact arithmetic gives them to 1e-12 (the normal equations lost 7 digits)."""
    rng = np.random.default_rng(seed)
    k = 10
    v = rng.uniform(0.5, 2.0, k)
    v[3] = 1e-8 * v[3]
    x = rng.normal(size=k)
    f = rng.choice(["a", "b"], size=k)
    f[:2] = ["a", "b"]
    eff = pd.DataFrame(
        {
            "task": [f"t{i}" for i in range(k)],
            "effect": rng.normal(size=k),
            "variance": v,
            "x": x,
            "f": f,
        }
    )
    res = metaeval.metareg(eff, ["x", "f"], method="EE")
    design = [
        [Fraction(1), Fraction(a), Fraction(int(b == "b"))] for a, b in zip(x, f, strict=True)
    ]
    w = [1 / Fraction(t) for t in v]
    y = [Fraction(t) for t in eff["effect"]]
    gram = [
        [sum(w[i] * design[i][r] * design[i][c] for i in range(k)) for c in range(3)]
        for r in range(3)
    ]
    beta = _solve_exact(gram, [sum(w[i] * design[i][r] * y[i] for i in range(k)) for r in range(3)])
    var = [_solve_exact(gram, [Fraction(int(r == c)) for r in range(3)])[c] for c in range(3)]
    np.testing.assert_allclose(res.table["estimate"], [float(b) for b in beta], rtol=1e-12)
    np.testing.assert_allclose(res.table["se"], [float(t) ** 0.5 for t in var], rtol=1e-12)


@pytest.mark.parametrize("method", ["REML", "DL"])
def test_t_matches_rma_test_t(method):
    """test="t" (issue 39, item 17) is metafor's rma(mods, test="t"): the model-based
    covariance, t with k − p df, Q_M/m as F(m, k − p) (fixtures/metafor/make_t_test.R)."""
    ref = pd.read_csv(DIR / "t_test_metareg.csv").query("method == @method")
    ref = ref.assign(
        term=ref["term"].map({"intrcpt": "intercept", "x": "x", "fb": "f[T.b]", "fc": "f[T.c]"})
    )
    data = pd.read_csv(DIR / "robust_metareg_data.csv.gz")
    data = data[data["id"].isin(ref["id"])].rename(columns={"yi": "effect", "vi": "variance"})
    res = metaeval.metareg(data, ["x", "f"], method=method, test="t", groups="id")
    assert (res.fit["test"] == "t").all()
    both = res.table.merge(ref, on=["id", "term"], suffixes=("", "_R"), validate="1:1")
    assert len(both) == len(ref) == 80
    np.testing.assert_array_equal(both["df"], both["df_R"])
    for ours, theirs in {
        "estimate": "estimate_R",
        "se": "se_R",
        "statistic": "tval",
        "p_value": "pval",
        "ci_low": "ci_lb",
        "ci_high": "ci_ub",
    }.items():
        np.testing.assert_allclose(both[ours], both[theirs], rtol=1e-7, err_msg=ours)
    fit = res.fit.merge(ref.drop_duplicates("id"), on="id", suffixes=("", "_R"), validate="1:1")
    for ours, theirs in {
        "qm": "qm_R",
        "qm_df": "qm_df_R",
        "qm_df2": "qm_df2_R",
        "qm_p_value": "qm_pval",
    }.items():
        np.testing.assert_allclose(fit[ours], fit[theirs], rtol=1e-7, err_msg=ours)
    z = metaeval.metareg(data, ["x", "f"], method=method, test="z", groups="id").table
    np.testing.assert_allclose(res.table["se"], z["se"], rtol=1e-12)  # not scaled

"""pool(model="multilevel") against metafor's rma.mv() and robust() (fixtures/metafor/make_multilevel.R)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _helpers import FIXTURES
from scipy import stats

import metaeval
from metaeval import DegenerateWarning, DependenceWarning, OptionError, SchemaError

DIR = FIXTURES / "metafor"
COLUMNS = {  # ours -> metafor
    "effect": "estimate",
    "se": "se",
    "statistic": "zval",
    "p_value": "pval",
    "ci_low": "ci_lb",
    "ci_high": "ci_ub",
    "qe": "QE",
    "qe_p_value": "QEp",
    "robust_se": "robust_se",
    "robust_p_value": "robust_pval",
    "robust_ci_low": "robust_ci_lb",
    "robust_ci_high": "robust_ci_ub",
    "robust_df": "robust_df",
    "k": "k",
    "k_task": "k_task",
}


def _read(name: str) -> pd.DataFrame:
    return pd.read_csv(DIR / f"{name}.csv.gz", keep_default_na=True)


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return _read("multilevel_data").rename(columns={"yi": "effect", "vi": "variance"})


@pytest.fixture(scope="module")
def cov() -> pd.DataFrame:
    return _read("multilevel_cov")


@pytest.fixture(scope="module")
def fits() -> pd.DataFrame:
    return _read("multilevel_fits")


def _pool(data, cov, **kwargs) -> pd.DataFrame:
    return metaeval.pool(
        data, over=("task", "metric"), groups="id", model="multilevel", cov=cov, **kwargs
    )


@pytest.mark.parametrize("method", ["REML", "ML"])
def test_multilevel_matches_rma_mv_and_robust(data, cov, fits, method):
    """120 three-level data sets: estimate, se, CI, p, both variances, Q_E and the robust
    results to 1e-4 relative (metafor's optimizer tolerance); σ² near 0 to 1e-4 of the
    data set's median sampling variance (metafor optimizes log σ², which reaches 0 only
    approximately)."""
    res = _pool(data, cov, method=method, test="z", robust=True)
    ref = fits.query("method == @method and test == 'z'")
    assert ref["error"].isna().all()
    both = res.merge(ref, on="id", suffixes=("", "_R"), validate="1:1")
    assert len(both) == 120
    for ours, theirs in COLUMNS.items():
        col = f"{theirs}_R" if theirs in res.columns else theirs
        a, b = both[ours].to_numpy(float), both[col].to_numpy(float)
        if ours.endswith("p_value"):  # tiny p-values: 1e-4 of the statistic is more of p
            underflow = (a < 1e-300) & (b < 1e-300)  # 0 in one library, 1e-320 in the other
            a, b = np.log(a[~underflow]), np.log(b[~underflow])
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=0, err_msg=f"{method} {ours}")
    scale = data.groupby("id")["variance"].median().loc[both["id"]].to_numpy()
    for name in ("sigma2_task", "sigma2_metric"):
        diff = np.abs(both[name] - both[f"{name}_R"])
        assert (diff <= 1e-4 * np.abs(both[f"{name}_R"]) + 1e-4 * scale).all(), name
    assert (both["sigma2_task"] == 0).any() and (both["sigma2_metric"] > 0).any()


def test_knha_scales_by_the_weighted_residual_mean_square(data, cov, fits):
    """Knapp–Hartung (metafor ≥ 4's test="knha" for rma.mv): se² × s², s² =
    e'M⁻¹e/(k − 1) with metafor's M, and t with k − 1 df (metafor 3.8's test="t" gives
    the df)."""
    res = _pool(data, cov, method="REML", test="knha").set_index("id")
    ref = fits.query("method == 'REML' and test == 't'").set_index("id")
    for i in (1, 7, 52, 90):
        d, c = data[data["id"] == i], cov[cov["id"] == i]
        keys = list(zip(d["task"], d["metric"], strict=True))
        pos = {key: j for j, key in enumerate(keys)}
        v = np.zeros((len(d), len(d)))
        for task, a, b, value in c[["task", "metric", "metric_b", "cov"]].itertuples(index=False):
            v[pos[(task, a)], pos[(task, b)]] = value
        r = ref.loc[i]
        same_task = np.equal.outer(d["task"].to_numpy(), d["task"].to_numpy())
        m = v + r["sigma2_task"] * same_task + r["sigma2_metric"] * np.eye(len(d))
        e = d["effect"].to_numpy() - r["estimate"]
        s2w = e @ np.linalg.solve(m, e) / (len(d) - 1)
        got = res.loc[i]
        assert got["se"] == pytest.approx(r["se"] * np.sqrt(s2w), rel=1e-4)
        assert got["df"] == len(d) - 1
        crit = stats.t.isf(0.025, len(d) - 1)
        assert got["ci_high"] == pytest.approx(got["effect"] + crit * got["se"], rel=1e-12)
        width_t = r["ci_ub"] - r["ci_lb"]  # metafor's t interval: the same quantile
        assert width_t == pytest.approx(2 * crit * r["se"], rel=1e-6)


def test_adhoc_floors_the_knha_factor_at_one(data, cov, fits):
    """test="adhoc" (metafor's test="adhoc" for rma.uni, Röver et al. 2015) in the three-level
    model: se = max(se_z, se_knha), with metafor's z standard error (the fixture's test="z"
    fits) as the floor, and t on k − 1 df (issue 29, item 1)."""
    adhoc = _pool(data, cov, method="REML", test="adhoc").set_index("id")
    knha = _pool(data, cov, method="REML", test="knha").set_index("id")
    ref = fits.query("method == 'REML' and test == 'z'").set_index("id").loc[adhoc.index]
    np.testing.assert_allclose(
        adhoc["se"], np.maximum(ref["se"], knha["se"]), rtol=1e-4
    )  # the fits' tolerance, as for knha above
    floored = (knha["se"] < ref["se"] * (1 - 1e-3)).to_numpy()
    assert floored.any() and (~floored).any()  # the data hold both cases
    np.testing.assert_array_equal(adhoc["df"], adhoc["k"] - 1)
    crit = stats.t.isf(0.025, adhoc["df"])
    np.testing.assert_allclose(adhoc["ci_high"], adhoc["effect"] + crit * adhoc["se"], rtol=1e-12)
    assert (adhoc["test"] == "adhoc").all()


def test_ee_is_generalized_least_squares(data, cov):
    d, c = data[data["id"] == 3], cov[cov["id"] == 3]
    res = _pool(d, c, method="EE", test="z")
    pos = {key: j for j, key in enumerate(zip(d["task"], d["metric"], strict=True))}
    v = np.zeros((len(d), len(d)))
    for task, a, b, value in c[["task", "metric", "metric_b", "cov"]].itertuples(index=False):
        v[pos[(task, a)], pos[(task, b)]] = value
    ones = np.ones(len(d))
    w = np.linalg.solve(v, ones)
    assert res["effect"].item() == pytest.approx(w @ d["effect"] / (w @ ones), rel=1e-10)
    assert res["se"].item() == pytest.approx(1 / np.sqrt(w @ ones), rel=1e-10)
    assert res[["sigma2_task", "sigma2_metric"]].to_numpy().tolist() == [[0.0, 0.0]]


def test_one_metric_per_task_is_the_univariate_model():
    rng = np.random.default_rng(1)
    eff = pd.DataFrame(
        {
            "task": [f"t{i}" for i in range(12)],
            "metric": "m",
            "effect": rng.normal(0.2, 0.3, 12),
            "variance": rng.uniform(0.01, 0.05, 12),
        }
    )
    with pytest.warns(DependenceWarning, match="without `cov`"):
        with pytest.warns(DegenerateWarning, match="one metric per task"):
            ml = metaeval.pool(eff, over=("task", "metric"), model="multilevel", test="z")
    uni = metaeval.pool(eff, method="REML", test="z")
    assert ml["effect"].item() == pytest.approx(uni["effect"].item(), rel=1e-8)
    assert ml["se"].item() == pytest.approx(uni["se"].item(), rel=1e-8)
    assert ml["sigma2_task"].item() == pytest.approx(uni["tau2"].item(), rel=1e-8)
    assert ml["sigma2_metric"].item() == 0


def test_chain_from_scores_with_effect_covariance():
    scores = metaeval.load_example()
    eff = scores.meta.effects(control="logistic_regression", treatment="knn", effect="md")
    cov = scores.meta.effect_covariance(control="logistic_regression", treatment="knn", effect="md")
    res = eff.meta.pool(over=("task", "metric"), model="multilevel", cov=cov, robust=True)
    assert res[["k", "k_task"]].values.tolist() == [[8, 4]]
    assert {"sigma2_task", "sigma2_metric", "robust_se"} <= set(res.columns)
    assert res.attrs["model"] == "multilevel" and res.attrs["robust"] == "CR1"
    with pytest.warns(DependenceWarning, match="effect_covariance"):
        independent = eff.meta.pool(over=("task", "metric"), model="multilevel")
    assert independent["se"].item() != res["se"].item()


def test_errors():
    scores = metaeval.load_example()
    eff = scores.meta.effects(control="logistic_regression", treatment="knn", effect="md")
    cov = scores.meta.effect_covariance(control="logistic_regression", treatment="knn", effect="md")
    with pytest.raises(SchemaError, match="model='multilevel' only"):
        eff.meta.pool(cov=cov)
    with pytest.raises(SchemaError, match="over=\\('task', 'metric'\\)"):
        eff.meta.pool(model="multilevel", cov=cov)
    with pytest.raises(OptionError, match="method"):
        eff.meta.pool(over=("task", "metric"), model="multilevel", cov=cov, method="DL")
    with pytest.raises(OptionError, match="model"):
        eff.meta.pool(model="three-level")
    wrong = cov.assign(cov=lambda d: np.where(d["metric"] == d["metric_b"], 2 * d["cov"], d["cov"]))
    with pytest.raises(SchemaError, match="does not match the effects"):
        eff.meta.pool(over=("task", "metric"), model="multilevel", cov=wrong)
    with pytest.raises(SchemaError, match="lacks the column"):
        eff.meta.pool(over=("task", "metric"), model="multilevel", cov=cov.drop(columns="metric_b"))
    short = cov[~((cov["task"] == "iris") & (cov["metric"] != cov["metric_b"]))]
    with pytest.warns(DependenceWarning, match="lacks pairs"):
        eff.meta.pool(over=("task", "metric"), model="multilevel", cov=short)


@pytest.mark.parametrize("shared", [0, 1])
def test_metrics_sharing_too_few_queries_give_nan_with_a_warning(shared):
    """effect_covariance() is NaN for two metrics of a task that share fewer than 2
    queries; pool_metrics() then gives NaN for that group, with a warning naming it, and
    fits the other groups as before (issue 25, 17b: it raised LinAlgError)."""
    rng = np.random.default_rng(25)
    rows = []
    for task in ("a", "b", "c", "d", "e"):
        for q in range(8):
            for system in ("x", "y", "z"):
                for metric in ("m1", "m2", "m3"):
                    # on task a, system z has m1 on q0..q3 and m2 on q(4 - shared)..q7
                    if (
                        task == "a"
                        and system == "z"
                        and ((metric == "m1" and q >= 4) or (metric == "m2" and q < 4 - shared))
                    ):
                        continue
                    rows.append((task, f"q{q}", system, metric, rng.normal()))
    scores = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])
    with pytest.warns(metaeval.PairingWarning):
        cov = metaeval.effect_covariance(scores, "x", effect="md")
    assert (
        cov.query(
            "treatment == 'z' and task == 'a' and metric != metric_b and "
            "metric in ['m1', 'm2'] and metric_b in ['m1', 'm2']"
        )["cov"]
        .isna()
        .all()
    )
    with pytest.warns(metaeval.PairingWarning):
        with pytest.warns(DegenerateWarning, match="NaN sampling covariance") as record:
            res = metaeval.pool_metrics(scores, "x", effect="md", test="z").set_index("treatment")
    text = " ".join(str(w.message) for w in record if issubclass(w.category, DegenerateWarning))
    assert "treatment='z'" in text and "treatment='y'" not in text
    assert res.loc["z", ["effect", "se", "sigma2_task"]].isna().all()
    full = metaeval.pool_metrics(scores[scores["system"] != "z"], "x", effect="md", test="z")
    assert res.loc["y", "effect"] == pytest.approx(full["effect"].item(), rel=1e-12)


def test_knha_with_equal_effects_warns_and_gives_nan():
    """Every effect equal: Knapp–Hartung's s² is 0, and se, p-value and interval are NaN
    with a warning, not se = 0 (issue 25, 17d)."""
    eff = pd.DataFrame(
        {
            "task": ["a", "a", "b", "b", "c"],
            "metric": ["m1", "m2"] * 2 + ["m1"],
            "effect": 0.25,
            "variance": [0.01, 0.02, 0.015, 0.01, 0.02],
        }
    )
    with pytest.warns(DependenceWarning), pytest.warns(DegenerateWarning, match="s² is 0"):
        res = metaeval.pool(eff, over=("task", "metric"), model="multilevel", test="knha")
    assert res["effect"].item() == pytest.approx(0.25, rel=1e-12)
    assert res[["se", "statistic", "p_value", "ci_low", "ci_high"]].isna().all(axis=None)


def _loglik(theta, y, v, task, reml):
    """The (RE)ML log-likelihood of the module docstring, μ profiled out (no constants)."""
    m = v + theta[0] * np.equal.outer(task, task) + theta[1] * np.eye(len(y))
    ones = np.ones(len(y))
    sxx = ones @ np.linalg.solve(m, ones)
    e = y - ones @ np.linalg.solve(m, y) / sxx
    ll = -0.5 * (np.linalg.slogdet(m)[1] + e @ np.linalg.solve(m, e))
    return ll - 0.5 * np.log(sxx) if reml else ll


@pytest.mark.parametrize("method", ["ML", "REML"])
def test_ml_and_reml_find_the_highest_maximum(method):
    """Seven small data sets (fixtures/metafor/make_multilevel_hard.R) on which the search
    stopped below the maximum (ML on six, REML on one: a projected Newton step halved to
    nothing, or a local maximum on a boundary): the likelihood at metaeval's estimate is
    the highest scipy finds from nine starts over σ² ≥ 0, and the variances are metafor's
    (rma.mv from five starts) (issue 25, 17a)."""
    from scipy import optimize

    data = pd.read_csv(DIR / "multilevel_hard_data.csv")
    cov = pd.read_csv(DIR / "multilevel_hard_cov.csv")
    ref = pd.read_csv(DIR / "multilevel_hard_fits.csv").query("method == @method").set_index("id")
    res = _pool(data, cov, method=method, test="z").set_index("id")
    for i, d in data.groupby("id"):
        c = cov[cov["id"] == i]
        pos = {key: j for j, key in enumerate(zip(d["task"], d["metric"], strict=True))}
        v = np.zeros((len(d), len(d)))
        for task, a, b, value in c[["task", "metric", "metric_b", "cov"]].itertuples(index=False):
            v[pos[(task, a)], pos[(task, b)]] = value
        y, task = d["effect"].to_numpy(), d["task"].to_numpy()
        reml = method == "REML"
        scale = y.var() + d["variance"].mean()
        best = -np.inf

        def negative(t, y=y, v=v, task=task, reml=reml):
            return -_loglik(np.maximum(t, 0), y, v, task, reml)

        for s0 in [(a, b) for a in (0.0, 0.3, 3.0) for b in (0.0, 0.3, 3.0)]:
            r = optimize.minimize(
                negative,
                np.array(s0) * scale,
                bounds=[(0, None)] * 2,
                method="L-BFGS-B",
                options={"ftol": 1e-15, "gtol": 1e-12},
            )
            best = max(best, -r.fun)
        got = res.loc[i, ["sigma2_task", "sigma2_metric"]].to_numpy(float)
        assert _loglik(got, y, v, task, reml) >= best - 1e-9, (i, got)
        np.testing.assert_allclose(
            got,
            ref.loc[i, ["sigma2_task", "sigma2_metric"]].to_numpy(float),
            rtol=1e-3,
            atol=1e-5 * d["variance"].median(),
            err_msg=str(i),
        )


# ------------------------------------------------------------------ test="t" (issue 39, item 17)
@pytest.mark.parametrize("method", ["REML", "EE"])
def test_t_matches_rma_mv_test_t(data, cov, method):
    """test="t" is metafor's rma.mv(test="t"): the model-based se, t on k − 1 df (k the
    effects; metafor 3.8 refuses test="knha" for rma.mv). 20 data sets
    (fixtures/metafor/make_t_test.R); REML to 1e-6 (metafor's nlminb), EE to 1e-9."""
    ref = pd.read_csv(DIR / "t_test_multilevel.csv").query("method == @method")
    sub, sub_cov = data[data["id"].isin(ref["id"])], cov[cov["id"].isin(ref["id"])]
    res = metaeval.pool(
        sub,
        over=("task", "metric"),
        groups="id",
        model="multilevel",
        cov=sub_cov,
        method=method,
        test="t",
    )
    assert (res["test"] == "t").all() and res.attrs["test"] == "t"
    both = res.merge(ref, on="id", suffixes=("", "_R"), validate="1:1")
    assert len(both) == 20
    np.testing.assert_array_equal(both["df"], both["df_R"])
    np.testing.assert_array_equal(both["df"], both["k"] - 1)
    rtol = 1e-9 if method == "EE" else 1e-6
    for ours, theirs in (
        ("effect", "estimate"),
        ("se", "se_R"),
        ("statistic", "tval"),
        ("p_value", "pval"),
        ("ci_low", "ci_lb"),
        ("ci_high", "ci_ub"),
    ):
        # p-values down to 1e-18 move by ~t² times the statistic's relative difference
        tol = rtol * 50 if ours == "p_value" else rtol
        np.testing.assert_allclose(both[ours], both[theirs], rtol=tol, err_msg=ours)
    # the se is the model's (unscaled): that of test="z"
    z = metaeval.pool(
        sub,
        over=("task", "metric"),
        groups="id",
        model="multilevel",
        cov=sub_cov,
        method=method,
        test="z",
    )
    np.testing.assert_allclose(res["se"], z["se"], rtol=1e-12)

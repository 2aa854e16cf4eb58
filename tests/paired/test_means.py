"""means(): each system's own standard error; the ANOVA's residual one only when asked
(issue 39, item 9).

References: Inspect's own ``stderr()`` metric (the harness's definition, sample SD with
ddof = 1 over √n, which is also lm-eval's ``mean_stderr``), ``scipy.stats.sem`` and
``scipy.stats.ttest_1samp``'s interval for a system alone; statsmodels' OLS ANOVA for the
residual-based ``interval="anova"``; statsmodels' cluster-robust SE of an intercept-only OLS for
``cluster=``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import make_scores
from scipy import stats

import metaeval
from metaeval.errors import DegenerateWarning, PairingWarning


def _inspect_stderr(x: np.ndarray, clusters: np.ndarray | None = None) -> float:
    """Inspect's ``stderr()`` metric (``stderr(cluster=...)`` with clusters) on scores x."""
    from inspect_ai.scorer import SampleScore, Score, stderr

    meta = [None] * len(x) if clusters is None else [{"p": str(c)} for c in clusters]
    samples = [
        SampleScore(score=Score(value=float(v)), sample_id=i, sample_metadata=m)
        for i, (v, m) in enumerate(zip(x, meta, strict=True))
    ]
    metric = stderr() if clusters is None else stderr(cluster="p")
    return float(metric(samples))


def _identical(systems=("a", "b", "c"), n=50, right=17) -> pd.DataFrame:
    """Models that agree on every one of n binary items (right of them correct)."""
    value = np.r_[np.ones(right), np.zeros(n - right)]
    return pd.concat(
        [
            pd.DataFrame(
                {"task": "t", "query": np.arange(n), "system": s, "metric": "acc", "value": value}
            )
            for s in systems
        ],
        ignore_index=True,
    )


def test_three_models_that_agree_get_the_harness_stderr():
    """The user's step: three models agreeing on 50 binary items had [0.34, 0.34]."""
    scores = _identical()
    out = metaeval.means(scores)
    x = scores.loc[scores["system"] == "a", "value"].to_numpy()
    se = _inspect_stderr(x)
    assert se == pytest.approx(stats.sem(x), rel=1e-12) and round(se, 3) == 0.068
    ci = stats.ttest_1samp(x, 0).confidence_interval(0.95)
    for row in out.itertuples():
        assert row.n == 50 and row.mean == pytest.approx(0.34, rel=1e-14)
        assert row.se == pytest.approx(se, rel=1e-12)
        assert row.ci_low == pytest.approx(ci.low, rel=1e-12)
        assert row.ci_high == pytest.approx(ci.high, rel=1e-12)
        assert row.variance_from == "system"


@pytest.mark.parametrize("cluster", [None, "passage"])
def test_adding_a_model_does_not_change_the_others_intervals(rng, cluster):
    scores = make_scores(rng, systems=("ctrl", "a", "b", "c"), drop=0.1)
    scores["passage"] = scores["query"].str[1:].astype(int) // 3
    three = scores[scores["system"] != "c"]
    cols = ["task", "metric", "system", "n", "mean", "se", "moe", "ci_low", "ci_high"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is left out: nothing to warn about
        before = metaeval.means(three, cluster=cluster)[cols]
        after = metaeval.means(scores, cluster=cluster)
    after = after[after["system"] != "c"][cols].reset_index(drop=True)
    pd.testing.assert_frame_equal(after, before, check_exact=False, rtol=1e-13)
    # each system's own queries, its own sample SD: scipy's interval (or the cluster-robust
    # SE of an intercept-only OLS, with the finite-cluster factor, on C − 1 df)
    sm = pytest.importorskip("statsmodels.api")
    for row in after.itertuples():
        sel = scores[
            (scores["task"] == row.task)
            & (scores["metric"] == row.metric)
            & (scores["system"] == row.system)
        ]
        x = sel["value"].to_numpy()
        assert row.n == len(x) and row.mean == pytest.approx(x.mean(), rel=1e-12)
        if cluster is None:
            ci = stats.ttest_1samp(x, 0).confidence_interval(0.95)
            assert row.se == pytest.approx(stats.sem(x), rel=1e-10)
            assert row.ci_low == pytest.approx(ci.low, rel=1e-10)
            continue
        codes = pd.factorize(sel["passage"])[0]
        c = codes.max() + 1
        fit = sm.OLS(x, np.ones((len(x), 1))).fit(
            cov_type="cluster", cov_kwds={"groups": codes, "use_correction": False}
        )
        assert row.se == pytest.approx(fit.bse[0] * np.sqrt(c / (c - 1)), rel=1e-10)
        assert row.se == pytest.approx(_inspect_stderr(x, codes), rel=1e-10)
        assert row.moe == pytest.approx(stats.t.isf(0.025, c - 1) * row.se, rel=1e-10)


def _ols_residual(scores: pd.DataFrame) -> tuple[float, float]:
    """The residual mean square and df of the two-way OLS ANOVA (statsmodels)."""
    import statsmodels.api as sm
    from statsmodels.formula.api import ols

    table = sm.stats.anova_lm(ols("value ~ C(system) + C(query)", data=scores).fit(), typ=2)
    ss, df = table.loc["Residual", "sum_sq"], table.loc["Residual", "df"]
    return ss / df, df


def test_the_anova_interval_is_asked_for_and_named(rng):
    """interval="anova": Sakai's display, √(V_E/n) on (k − 1)(n − 1) df over the queries every
    system has, said in ``variance_from``; with fewer than 3 systems each system's own."""
    scores = make_scores(rng, tasks={"t1": 20}, systems=("ctrl", "a", "b"), metrics=("m",))
    out = metaeval.means(scores, interval="anova").set_index("system")
    ms, df = _ols_residual(scores)
    assert (out["variance_from"] == "anova").all()
    for system in ("ctrl", "a", "b"):
        assert out.loc[system, "se"] == pytest.approx(np.sqrt(ms / 20), rel=1e-9)
        assert out.loc[system, "moe"] == pytest.approx(
            stats.t.isf(0.025, df) * np.sqrt(ms / 20), rel=1e-9
        )
    two = metaeval.means(scores[scores["system"] != "b"], interval="anova")
    assert (two["variance_from"] == "system").all()
    # the default is each system's own, whatever the others
    own = metaeval.means(scores).set_index("system")
    for system, part in scores.groupby("system"):
        assert own.loc[system, "se"] == pytest.approx(stats.sem(part["value"]), rel=1e-10)


def test_only_the_anova_interval_leaves_queries_out(rng):
    """Queries some system lacks are left out (with a warning) of the ANOVA only; the
    default means are over each system's own queries and warn about nothing."""
    scores = make_scores(rng, tasks={"t1": 6}, metrics=("m",)).drop(index=[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        own = metaeval.means(scores).set_index("system")
    assert own.loc["ctrl", "n"] == 5 and own.loc["a", "n"] == 6
    with pytest.warns(PairingWarning, match="means\\(interval='anova'\\) uses the queries every"):
        anova = metaeval.means(scores, interval="anova").set_index("system")
    assert (anova["n"] == 5).all()
    one = make_scores(rng, tasks={"t3": 1}, systems=("ctrl", "a", "b"), metrics=("m",))
    with pytest.warns(DegenerateWarning, match="NaN margin of error for 3 .* with 1 query"):
        res = metaeval.means(one)
    assert res["moe"].isna().all() and res["mean"].notna().all()


def test_the_design_effect_is_the_square_of_the_se_ratio(rng):
    """The guide's claim (llm.md, "Clustered and naive standard errors"): a system's
    ``design_effect`` is (clustered se / naive se)², with four systems on a task too —
    both standard errors are the system's own over its own queries."""
    scores = make_scores(rng, systems=("ctrl", "a", "b", "c"), metrics=("m",))
    scores["passage"] = scores["query"].str[1:].astype(int) // 4
    keys = ["task", "metric", "system"]
    side = metaeval.means(scores).merge(
        metaeval.means(scores, cluster="passage"), on=keys, suffixes=("_naive", "_clustered")
    )
    assert (side["n_naive"] == side["n_clustered"]).all() and len(side) == 16
    ratio = side["se_clustered"] / side["se_naive"]
    np.testing.assert_allclose(side["design_effect"], ratio**2, rtol=1e-12)


@pytest.mark.parametrize("engine", ["polars-lazy", "duckdb"])
@pytest.mark.parametrize("interval", ["t", "anova"])
def test_a_lazy_table_gives_the_same_intervals(rng, engine, interval):
    """Computed in the engine (interval="t" from each system's own sums, without the two-way
    ones; interval="anova" from them): pandas' numbers and warnings, missing queries and all."""
    from _engines import assert_same, in_engine

    scores = make_scores(rng, systems=("ctrl", "a", "b", "c"), drop=0.1)
    scores = scores[~((scores["task"] == "t2") & (scores["system"] == "c"))]
    with warnings.catch_warnings(record=True) as ref_warned:
        warnings.simplefilter("always")
        ref = metaeval.means(scores, interval=interval)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        got = metaeval.means(in_engine(scores, engine), interval=interval)
    assert_same(got, ref)
    assert [str(w.message) for w in warned] == [str(w.message) for w in ref_warned]
    assert bool(ref_warned) == (interval == "anova")

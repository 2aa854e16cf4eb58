"""Clustered standard errors in means(cluster=) and compare(test="t", cluster=) (issue 27).

The reference is the formula of Miller (2024, "Adding Error Bars to Evals", App. A)
with the finite-cluster factor, written out as a loop here, and statsmodels' OLS
with ``cov_type="cluster"``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from reference import clustered_variance_loop
from scipy import stats

import metaeval
from metaeval.errors import OptionError, SchemaError


def clustered_se_loop(x: np.ndarray, g: np.ndarray) -> float:
    """SE = √(C/(C−1) · Σ_c (Σ_{i∈c} (x_i − x̄))²) / n, one cluster at a time."""
    return float(np.sqrt(clustered_variance_loop(x, g)))


def make_scores(rng, n_tasks=2, n_clusters=6, per=5, systems=("a", "b", "c"), icc=0.4):
    rows = []
    for t in range(n_tasks):
        sizes = rng.integers(1, 2 * per, size=n_clusters)  # unequal cluster sizes
        cl = np.repeat(np.arange(n_clusters), sizes)
        u = rng.normal(0, np.sqrt(icc), n_clusters)[cl]
        for k, s in enumerate(systems):
            v = (
                0.1 * k
                + u
                + rng.normal(0, np.sqrt(1 - icc), len(cl))
                + 0.5 * rng.normal(0, 1, n_clusters)[cl]
            )
            rows.append(
                pd.DataFrame(
                    {
                        "task": f"t{t}",
                        "query": [f"q{i}" for i in range(len(cl))],
                        "system": s,
                        "metric": "m",
                        "value": v,
                        "passage": [f"p{c}" for c in cl],
                    }
                )
            )
    return pd.concat(rows, ignore_index=True)


@pytest.fixture
def clustered(rng) -> pd.DataFrame:
    return make_scores(rng)


def test_means_cluster_equals_the_formula_loop(clustered):
    out = metaeval.means(clustered, cluster="passage", alpha=0.1)
    assert len(out) == 6
    for row in out.itertuples():
        sel = clustered[(clustered.task == row.task) & (clustered.system == row.system)]
        x, g = sel["value"].to_numpy(), sel["passage"].to_numpy()
        se = clustered_se_loop(x, g)
        c = len(set(g))
        assert row.mean == pytest.approx(x.mean(), rel=1e-12)
        assert row.se == pytest.approx(se, rel=1e-10)
        assert row.n_clusters == c
        assert row.design_effect == pytest.approx(se**2 / stats.sem(x) ** 2, rel=1e-10)
        assert row.moe == pytest.approx(stats.t.isf(0.05, c - 1) * se, rel=1e-10)
        assert row.ci_low == pytest.approx(x.mean() - stats.t.isf(0.05, c - 1) * se, rel=1e-10)
        assert row.variance_from == "cluster"


def test_means_cluster_equals_statsmodels_ols_cluster(clustered):
    """statsmodels with use_correction=False gives sqrt(sum_c (sum u)^2)/n; ours has the
    finite-cluster factor C/(C-1) on the variance: SE_ours = SE_sm * sqrt(C/(C-1))."""
    sm = pytest.importorskip("statsmodels.api")
    out = metaeval.means(clustered, cluster="passage")
    for row in out.itertuples():
        sel = clustered[(clustered.task == row.task) & (clustered.system == row.system)]
        codes = pd.factorize(sel["passage"])[0]
        fit = sm.OLS(sel["value"].to_numpy(), np.ones((len(sel), 1))).fit(
            cov_type="cluster", cov_kwds={"groups": codes, "use_correction": False}
        )
        c = len(set(codes))
        assert row.se == pytest.approx(fit.bse[0] * np.sqrt(c / (c - 1)), rel=1e-10)
        assert row.mean == pytest.approx(fit.params[0], rel=1e-12)


def test_means_has_the_naive_se_without_cluster(rng):
    scores = make_scores(rng, systems=("a", "b"))  # 2 systems: each its own variance
    out = metaeval.means(scores)
    for row in out.itertuples():
        x = scores[(scores.task == row.task) & (scores.system == row.system)]["value"]
        assert row.se == pytest.approx(stats.sem(x), rel=1e-10)
    assert "n_clusters" not in out.columns


def test_compare_cluster_equals_the_formula_loop(clustered):
    out = metaeval.compare(clustered, control="a", cluster="passage")
    assert len(out) == 4
    for row in out.itertuples():
        wide = clustered[clustered.task == row.task].pivot(
            index=["query", "passage"], columns="system", values="value"
        )
        d = (wide[row.treatment] - wide[row.control]).to_numpy()
        g = wide.index.get_level_values("passage").to_numpy()
        se, c = clustered_se_loop(d, g), len(set(g))
        t = d.mean() / se
        assert row.se == pytest.approx(se, rel=1e-10)
        assert row.df == c - 1
        assert row.n_clusters == c
        assert row.statistic == pytest.approx(t, rel=1e-9)
        assert row.p_value == pytest.approx(2 * stats.t.sf(abs(t), c - 1), rel=1e-9)
        crit = stats.t.isf(0.025, c - 1)
        assert row.ci_low == pytest.approx(d.mean() - crit * se, rel=1e-9)
        assert row.ci_high == pytest.approx(d.mean() + crit * se, rel=1e-9)
        assert row.design_effect == pytest.approx(se**2 / stats.sem(d) ** 2, rel=1e-10)


def test_compare_cluster_one_sided(clustered):
    out = metaeval.compare(
        clustered, control="a", treatment="b", cluster="passage", alternative="greater"
    )
    for row in out.itertuples():
        assert row.p_value == pytest.approx(stats.t.sf(row.statistic, row.df), rel=1e-9)
        assert row.ci_high == np.inf
        assert row.ci_low == pytest.approx(row.diff - stats.t.isf(0.05, row.df) * row.se, rel=1e-9)


def test_cluster_errors(clustered):
    with pytest.raises(SchemaError, match="'nope'"):
        metaeval.means(clustered, cluster="nope")
    bad = clustered.copy()
    bad.loc[(bad.task == "t1") & (bad["query"] == "q0") & (bad.system == "b"), "passage"] = "x"
    with pytest.raises(SchemaError, match="task='t1', query='q0'"):
        metaeval.compare(bad, control="a", cluster="passage")
    missing = clustered.copy()
    missing["passage"] = missing["passage"].where(missing.task != "t0")
    with pytest.raises(SchemaError, match="task='t0'"):
        metaeval.means(missing, cluster="passage")
    one = clustered.copy()
    one.loc[one.task == "t1", "passage"] = "p0"
    with pytest.raises(OptionError, match="task='t1'"):
        metaeval.means(one, cluster="passage")
    with pytest.raises(OptionError, match="test='t'"):
        metaeval.compare(clustered, control="a", test="wilcoxon", cluster="passage")
    assert "x" not in clustered["passage"].values  # the input is not mutated


def test_clustered_intervals_cover_where_naive_ones_do_not(capsys):
    """1000 benchmarks x 40 clusters x 10 items, ICC 0.3 of the paired differences:
    design effect 1 + 9 * 0.3 = 3.7, so naive 95% intervals cover about 69%."""
    rng = np.random.default_rng(27)
    n_tasks, n_clusters, per, icc, delta = 1000, 40, 10, 0.3, 0.2
    n_items = n_clusters * per
    cl = np.tile(np.repeat(np.arange(n_clusters), per), n_tasks)
    u = rng.normal(0, np.sqrt(icc), (n_tasks, n_clusters))
    control = rng.normal(0, 1, n_tasks * n_items)
    d = delta + np.repeat(u.ravel(), per) + rng.normal(0, np.sqrt(1 - icc), n_tasks * n_items)
    base = pd.DataFrame(
        {
            "task": np.repeat(np.arange(n_tasks), n_items).astype(str),
            "query": np.tile(np.arange(n_items), n_tasks),
            "metric": "m",
            "passage": cl,
        }
    )
    scores = pd.concat(
        [
            base.assign(system="control", value=control),
            base.assign(system="new", value=control + d),
        ],
        ignore_index=True,
    )
    cover = {}
    for name, kw in [("naive", {}), ("clustered", {"cluster": "passage"})]:
        out = metaeval.compare(scores, control="control", treatment="new", **kw)
        cover[name] = float(((out.ci_low <= delta) & (delta <= out.ci_high)).mean())
    with capsys.disabled():
        print(f"\ncoverage of 95% intervals, {n_tasks} benchmarks: {cover}")
    assert cover["clustered"] >= 0.93
    assert cover["naive"] < 0.85


def test_dask_tables_give_the_same_clustered_results(clustered):
    dd = pytest.importorskip("dask.dataframe")
    lazy = dd.from_pandas(clustered, npartitions=2)
    for name, kwargs in [("means", {}), ("compare", {"control": "a"})]:
        want = getattr(clustered.meta, name)(cluster="passage", **kwargs)
        got = getattr(lazy.meta, name)(cluster="passage", **kwargs)
        pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))


def test_a_group_in_one_cluster_is_nan_with_a_warning(clustered):
    from metaeval.errors import DegenerateWarning, PairingWarning

    part = clustered[
        (clustered.task != "t0") | (clustered.system != "c") | (clustered.passage == "p0")
    ]
    with pytest.warns(DegenerateWarning, match="system='c'"):
        out = metaeval.means(part, cluster="passage")
    row = out[(out.task == "t0") & (out.system == "c")].iloc[0]
    assert row.n_clusters == 1 and np.isnan(row.se) and np.isnan(row.moe)
    assert out.drop(index=row.name)["se"].notna().all()
    with (
        pytest.warns(DegenerateWarning, match="treatment='c'"),
        pytest.warns(PairingWarning),
    ):
        res = metaeval.compare(part, control="a", treatment="c", cluster="passage")
    bad = res[res.task == "t0"].iloc[0]
    assert np.isnan(bad.statistic) and np.isnan(bad.p_value) and np.isnan(bad.se)
    assert res[res.task == "t1"]["p_value"].notna().all()


def test_a_clustered_variance_of_0_is_nan_in_compare_as_in_effects():
    """The user's step (issue 39, item 27): each passage's differences sum to the mean's
    share (0.3 ± δ), so the clustered SE is 0 up to rounding while s_d > 0; compare(
    cluster=) gave p = 2e-14 where effects(cluster=) gives NaN with a warning. One rule
    for both (and for means(cluster=), whose treatment scores are those differences)."""
    from metaeval.errors import DegenerateWarning

    d = 0.3 + np.array([0.1, -0.1, 0.2, -0.2, 0.05, -0.05])
    scores = pd.DataFrame(
        {
            "task": "t",
            "query": [f"q{i}" for i in range(6)] * 2,
            "system": ["c"] * 6 + ["x"] * 6,
            "metric": "m",
            "value": np.concatenate([np.zeros(6), d]),
            "passage": [0, 0, 1, 1, 2, 2] * 2,
        }
    )
    sums = [(d[i : i + 2] - d.mean()).sum() for i in (0, 2, 4)]
    assert max(map(abs, sums)) < 1e-15 < d.std()  # the loop's own clustered sums: rounding
    with pytest.warns(DegenerateWarning, match="clustered variance of 0") as caught:
        eff = metaeval.effects(scores, "c", effect="md", cluster="passage")
    assert np.isnan(eff["variance"].item())
    with pytest.warns(DegenerateWarning, match="clustered variance of 0") as caught:
        out = metaeval.compare(scores, control="c", cluster="passage")
    assert caught[0].message.groups[["treatment", "task"]].values.tolist() == [["x", "t"]]
    row = out.iloc[0]
    assert row["diff"] == pytest.approx(0.3) and np.isnan(row["p_value"])
    assert np.isnan(row["statistic"]) and np.isnan(row["ci_low"]) and np.isnan(row["se"])
    with pytest.warns(DegenerateWarning, match="clustered variance of 0") as caught:
        means = metaeval.means(scores, cluster="passage").set_index("system")
    assert caught[0].message.groups["system"].tolist() == ["x"]
    assert np.isnan(means.loc["x", "se"]) and means.loc["c", "se"] == 0  # constant: exact 0

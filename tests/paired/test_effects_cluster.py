"""Clustered sampling variances in effects(cluster=) and so in pool() (issue 27, item 2).

References: the formula of Miller (2024, "Adding Error Bars to Evals", App. A) with the
finite-cluster factor, as a loop over clusters here; compare(test="t", cluster=) (another
path through the code); the effect types' documented formulas written out with numpy; the
DerSimonian–Laird closed form for pool(); and a coverage simulation.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from reference import clustered_variance_loop
from scipy import stats

import metaeval
from metaeval.errors import DegenerateWarning, OptionError, SchemaError

KEYS = ["metric", "treatment", "control", "task"]


def v_cl_loop(z: np.ndarray, g: np.ndarray) -> float:
    return clustered_variance_loop(z, g)


def make_scores(rng, n_tasks=3, n_clusters=7, icc=0.4) -> pd.DataFrame:
    """Positive scores of systems a (control), b, c; unequal cluster sizes; a cluster
    effect in b's and c's difference from a."""
    frames = []
    for t in range(n_tasks):
        sizes = rng.integers(1, 8, size=n_clusters)
        cl = np.repeat(np.arange(n_clusters), sizes)
        base = 5 + rng.normal(0, np.sqrt(icc), n_clusters)[cl] + rng.normal(0, 1, len(cl))
        for k, system in enumerate(("a", "b", "c")):
            value = base + 0.3 * k + rng.normal(0, 0.7, len(cl))
            value = value + k * rng.normal(0, 0.6, n_clusters)[cl]
            frames.append(
                pd.DataFrame(
                    {
                        "task": f"t{t}",
                        "query": [f"q{i}" for i in range(len(cl))],
                        "system": system,
                        "metric": "m",
                        "value": value,
                        "passage": [f"p{c}" for c in cl],
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


@pytest.fixture
def scores(rng) -> pd.DataFrame:
    return make_scores(rng)


def pair_arrays(scores: pd.DataFrame, task: str, treatment: str, control: str):
    """x, y and the cluster of each query of one pair on one task (metric 'm')."""
    wide = scores[scores["task"] == task].pivot(index="query", columns="system", values="value")
    g = scores[scores["task"] == task].groupby("query")["passage"].first().loc[wide.index]
    return wide[treatment].to_numpy(), wide[control].to_numpy(), g.to_numpy()


def test_md_variance_is_the_cluster_loop_and_compare_se_squared(scores):
    out = metaeval.effects(scores, "a", effect="md", cluster="passage", alpha=0.1)
    cmp = metaeval.compare(scores, control="a", cluster="passage", alpha=0.1)
    assert len(out) == 6
    for row in out.itertuples():
        x, y, g = pair_arrays(scores, row.task, row.treatment, row.control)
        want = v_cl_loop(x - y, g)
        assert row.variance == pytest.approx(want, rel=1e-12)
        assert row.n_clusters == len(set(g)) and row.df == len(set(g)) - 1
        assert row.design_effect == pytest.approx(want / (np.var(x - y, ddof=1) / len(x)))
        crit = stats.t.isf(0.05, len(set(g)) - 1)
        assert row.ci_low == pytest.approx(row.effect - crit * np.sqrt(want), rel=1e-12)
        p = 2 * stats.t.sf(abs(row.effect) / np.sqrt(want), len(set(g)) - 1)
        assert row.p_value == pytest.approx(p, rel=1e-10)
        other = cmp[(cmp.task == row.task) & (cmp.treatment == row.treatment)].iloc[0]
        assert row.variance == pytest.approx(other.se**2, rel=1e-12)
        assert (row.ci_low, row.ci_high) == pytest.approx((other.ci_low, other.ci_high))
    assert out.attrs["cluster"] == "passage"
    assert (out["design_effect"] != 1).all()


@pytest.mark.parametrize("effect", ["smcc", "smcrp", "smd"])
def test_standardized_effects_take_the_clusters_in_the_mean_difference_term(scores, effect):
    """The documented formulas, with r, g and V_cl from numpy and the loop."""
    plain = metaeval.effects(scores, "a", effect=effect)
    out = metaeval.effects(scores, "a", effect=effect, cluster="passage")
    pd.testing.assert_series_equal(out["effect"], plain["effect"])
    for row in out.itertuples():
        x, y, g = pair_arrays(scores, row.task, row.treatment, row.control)
        n, d = len(x), x - y
        de = v_cl_loop(d, g) / (np.var(d, ddof=1) / n)
        r = np.corrcoef(x, y)[0, 1]
        if effect == "smcc":
            want = de / n + row.effect**2 / (2 * n)
        elif effect == "smcrp":
            want = 2 * (1 - r) * de / n + row.effect**2 * (1 + r**2) / (4 * n)
        else:
            j = 1 - 3 / (4 * (n - 1) - 1)
            dd = row.effect / j
            want = j**2 * (2 * (1 - r) * de / n + dd**2 * (1 - r) / n)
        assert row.variance == pytest.approx(want, rel=1e-10)
        old = plain.loc[row.Index, "variance"]
        assert row.design_effect == pytest.approx(want / old, rel=1e-10)


def test_rom_is_the_delta_method_with_clusters(scores):
    out = metaeval.effects(scores, "a", effect="rom", cluster="passage")
    for row in out.itertuples():
        x, y, g = pair_arrays(scores, row.task, row.treatment, row.control)
        z = x / x.mean() - y / y.mean()
        assert row.variance == pytest.approx(v_cl_loop(z, g), rel=1e-10)
        assert row.rel_change_ci_low == pytest.approx(np.expm1(row.ci_low))


@pytest.mark.parametrize("effect", ["md", "smcc", "smcrp", "smd", "rom"])
def test_one_query_per_cluster_gives_the_unclustered_variance(scores, effect):
    """With every query its own cluster, C/(C-1)·Σ(z_i − z̄)²/n² = s_z²/n: the factor
    C/(C − 1) = n/(n − 1) is exactly the unclustered formula's ddof = 1, so the variance
    of every effect type is the unclustered one (only df = n − 1 differs)."""
    single = scores.assign(passage=scores["query"])
    plain = metaeval.effects(single, "a", effect=effect)
    out = metaeval.effects(single, "a", effect=effect, cluster="passage")
    np.testing.assert_allclose(out["variance"], plain["variance"], rtol=1e-12)
    np.testing.assert_allclose(out["design_effect"], 1.0, rtol=1e-12)
    np.testing.assert_array_equal(out["df"], plain["n"] - 1)


def test_pool_pools_the_clustered_variances(scores):
    """pool() needs no change: its DL estimate and se are the closed form on the
    clustered variances; with larger variances (design effects > 1 here) the
    fixed-effect (EE) se, √(1/Σ 1/v), is larger than without clusters."""
    eff = metaeval.effects(scores, "a", treatment="c", effect="md", cluster="passage")
    plain = metaeval.effects(scores, "a", treatment="c", effect="md")
    got = metaeval.pool(eff, method="DL", test="z")
    y, v = eff["effect"].to_numpy(), eff["variance"].to_numpy()
    w = 1 / v
    q = np.sum(w * (y - np.sum(w * y) / w.sum()) ** 2)
    tau2 = max(0.0, (q - (len(y) - 1)) / (w.sum() - np.sum(w**2) / w.sum()))
    ws = 1 / (v + tau2)
    assert got["effect"].iloc[0] == pytest.approx(np.sum(ws * y) / ws.sum(), rel=1e-10)
    assert got["se"].iloc[0] == pytest.approx(np.sqrt(1 / ws.sum()), rel=1e-10)
    assert (eff["design_effect"] > 1).all()
    ee, ee_plain = (metaeval.pool(e, method="EE", test="z")["se"].iloc[0] for e in (eff, plain))
    assert ee == pytest.approx(np.sqrt(1 / np.sum(1 / v)), rel=1e-10)
    assert ee > ee_plain


def test_accessor_passes_cluster(scores):
    got = scores.meta.effects("a", effect="md", cluster="passage")
    pd.testing.assert_frame_equal(
        got, metaeval.effects(scores, "a", effect="md", cluster="passage")
    )


def test_coverage_of_clustered_intervals():
    """400 simulated tasks × 30 clusters × 5 queries, a cluster effect in the difference
    (intra-cluster correlation 1/3 of d), true md 0.1: one effects() call."""
    rng = np.random.default_rng(2024)
    n_tasks, n_clusters, per = 400, 30, 5
    n = n_clusters * per
    cl = np.tile(np.repeat(np.arange(n_clusters), per), n_tasks)
    task = np.repeat([f"t{i:03d}" for i in range(n_tasks)], n)
    query = np.tile([f"q{i}" for i in range(n)], n_tasks)
    u = rng.normal(0, np.sqrt(0.5), (n_tasks, n_clusters)).repeat(per, axis=1).ravel()
    base = rng.normal(0, 1, n_tasks * n)
    control = base
    treated = base + 0.1 + u + rng.normal(0, 1, n_tasks * n)
    scores = pd.DataFrame(
        {
            "task": np.concatenate([task, task]),
            "query": np.concatenate([query, query]),
            "system": np.repeat(["ctrl", "trt"], n_tasks * n),
            "metric": "m",
            "value": np.concatenate([control, treated]),
            "passage": np.concatenate([cl, cl]),
        }
    )
    naive = metaeval.effects(scores, "ctrl", effect="md")
    clustered = metaeval.effects(scores, "ctrl", effect="md", cluster="passage")
    cover = {
        name: float(((t["ci_low"] <= 0.1) & (0.1 <= t["ci_high"])).mean())
        for name, t in (("naive", naive), ("clustered", clustered))
    }
    print(
        f"\ncoverage of 95% intervals of md over {n_tasks} tasks "
        f"({n_clusters} clusters x {per} queries): {cover}, "
        f"mean design effect {clustered['design_effect'].mean():.2f}"
    )
    assert cover["clustered"] >= 0.93
    assert cover["naive"] < 0.85


def test_a_group_with_one_cluster_is_nan_with_a_warning(scores):
    """The task has two clusters, but the pair (b, a) shares queries of one only."""
    biggest = scores.loc[scores["task"] == "t0", "passage"].mode().iloc[0]
    gone = (scores["task"] == "t0") & (scores["system"] == "b") & (scores["passage"] != biggest)
    with (
        pytest.warns(metaeval.PairingWarning),
        pytest.warns(DegenerateWarning, match="one cluster"),
    ):
        out = metaeval.effects(scores[~gone], "a", effect="smcc", cluster="passage")
    row = out[(out.task == "t0") & (out.treatment == "b")].iloc[0]
    assert np.isnan(row.variance) and np.isnan(row.ci_low) and np.isfinite(row.effect)
    assert row.n_clusters == 1
    assert out.drop(index=row.name)["variance"].notna().all()


def test_zero_clustered_variance_is_nan_with_a_warning():
    """Two clusters whose centred sums of d are 0: V_cl = 0 although s_d > 0."""
    d = np.array([1.0, -1.0, 2.0, -2.0])
    scores = pd.DataFrame(
        {
            "task": "t",
            "query": list("abcd") * 2,
            "system": ["c"] * 4 + ["t"] * 4,
            "metric": "m",
            "value": np.concatenate([np.zeros(4), d]),
            "passage": [0, 0, 1, 1] * 2,
        }
    )
    with pytest.warns(DegenerateWarning, match="clustered variance of 0"):
        out = metaeval.effects(scores, "c", effect="md", cluster="passage")
    assert np.isnan(out["variance"].iloc[0]) and out["effect"].iloc[0] == 0


def test_errors(scores):
    with pytest.raises(SchemaError, match="'nope' must name a column"):
        metaeval.effects(scores, "a", effect="md", cluster="nope")
    nan = scores.assign(passage=scores["passage"].where(scores.index != 3))
    with pytest.raises(SchemaError, match="no cluster id"):
        metaeval.effects(nan, "a", effect="md", cluster="passage")
    varying = scores.copy()
    varying.loc[(varying.system == "b") & (varying["query"] == "q0"), "passage"] = "other"
    with pytest.raises(SchemaError, match="constant within a query"):
        metaeval.effects(varying, "a", effect="md", cluster="passage")
    with pytest.raises(OptionError, match="needs at least 2 clusters"):
        metaeval.effects(scores.assign(passage="one"), "a", effect="md", cluster="passage")
    with pytest.raises(OptionError, match="not defined for effect='corr'"):
        metaeval.effects(scores, "a", effect="corr", cluster="passage")
    with pytest.raises(OptionError, match="cannot be combined"):
        metaeval.effects(scores, "a", effect="md", cluster="passage", cv=(90, 10))
    with pytest.raises(SchemaError, match="design_effect"):
        metaeval.effects(scores.assign(design_effect=1.0), "a", effect="md", cluster="passage")


def test_clusters_with_replicates_epochs_average_and_seeds_add_their_variance() -> None:
    """Passages as clusters and repeated runs together (the LLM case: Inspect epochs, or
    seeds). Epochs: each item's mean over its epochs is the unit, so the result equals the
    clustered effects of the per-item means. Seeds: the replicates' variance is added to
    the clustered one, with Welch–Satterthwaite df over the query part's C − 1 and each
    system's R − 1."""
    rng = np.random.default_rng(21)
    tasks, passages, per, seeds = 3, 12, 4, 3
    rows = []
    for t in range(tasks):
        effect_p = rng.normal(0, 0.4, passages)
        for system, gain in (("a", 0.0), ("b", 0.15)):
            shift = rng.normal(0, 0.1, seeds)
            for p in range(passages):
                for i in range(per):
                    for r in range(seeds):
                        value = gain + effect_p[p] + shift[r] + rng.normal(0, 0.5)
                        rows.append((f"t{t}", f"p{p}q{i}", system, "m", f"s{r}", f"p{p}", value))
    scores = pd.DataFrame(
        rows, columns=["task", "query", "system", "metric", "replicate", "passage", "value"]
    )
    averaged = scores.groupby(["task", "query", "system", "metric", "passage"], as_index=False)[
        "value"
    ].mean()
    clustered = metaeval.effects(averaged, "a", effect="md", cluster="passage")
    epochs = metaeval.effects(scores, "a", effect="md", cluster="passage", replicates="epochs")
    pd.testing.assert_frame_equal(epochs, clustered, check_exact=False, rtol=1e-12)
    nested = metaeval.effects(scores, "a", effect="md", cluster="passage", replicates="nested")
    plain = metaeval.effects(scores, "a", effect="md", replicates="nested")  # no clusters
    added = plain["variance_replicates"].to_numpy()
    np.testing.assert_allclose(nested["variance_replicates"], added, rtol=1e-12)
    np.testing.assert_allclose(nested["variance"], clustered["variance"] + added, rtol=1e-12)
    # Welch–Satterthwaite by hand, from each system's part (σ̂²_rep / R on R − 1 df)
    rep = metaeval.paired.replicates.replicate_variance(scores).set_index(["task", "system"])
    for row, base in zip(nested.itertuples(), clustered.itertuples(), strict=True):
        parts = [rep.loc[(row.task, s), "sigma2_rep"] / seeds for s in ("a", "b")]
        denom = base.variance**2 / base.df + sum(p**2 / (seeds - 1) for p in parts if p > 0)
        assert row.df == pytest.approx(row.variance**2 / denom, rel=1e-12)
        assert row.n_clusters == passages

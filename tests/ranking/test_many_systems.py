"""Friedman, post-hoc tests, cliques, the Bayesian signed-rank test and rank_report.

References: scipy (friedmanchisquare, wilcoxon), scikit-posthocs, autorank, baycomp,
statsmodels, and Demšar's (2006) published worked example.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.stats as ss

import metaeval
from metaeval.errors import DegenerateWarning, OptionError, PairingError
from metaeval.ranking import (
    FriedmanResult,
    PosthocResult,
    bayes_signed_rank,
    friedman,
    posthoc,
)
from metaeval.workflows import rank_report

sp = pytest.importorskip("scikit_posthocs")


def wide_to_scores(wide: pd.DataFrame, metric: str = "m") -> pd.DataFrame:
    """A (task × system) table as a scores table with one row per task (no query column)."""
    long = wide.rename_axis(index="task", columns="system").stack().rename("value").reset_index()
    return long.assign(metric=metric, task=long["task"].astype(str))


def random_wide(rng, n_tasks: int, k: int, *, grid: float | None = None, shift=0.3) -> pd.DataFrame:
    x = rng.normal(size=(n_tasks, k)) + shift * np.arange(k)[None, :] * rng.uniform(0.5, 1.5)
    if grid is not None:
        x = np.round(x / grid) * grid  # ties within tasks and between differences
    return pd.DataFrame(
        x, index=[f"t{i:03d}" for i in range(n_tasks)], columns=[f"s{j:02d}" for j in range(k)]
    )


def paper_ranks() -> pd.DataFrame:
    """Demšar's Table 6 as ranks: the printed AUCs tie C4.5+cf and C4.5+m+cf on voting
    (0.975 each); the paper's ranks, from the unrounded AUCs, put C4.5+cf second."""
    auc = metaeval.datasets.load_demsar()
    wide = auc.pivot(index="task", columns="system", values="value")
    ranks = wide.rank(axis=1, ascending=False)
    assert ranks.loc["voting", "C4.5+cf"] == ranks.loc["voting", "C4.5+m+cf"] == 2.5
    ranks.loc["voting", ["C4.5+cf", "C4.5+m+cf"]] = [2.0, 3.0]
    return wide_to_scores(ranks, metric="rank")


# ----------------------------------------------------------------- Demšar (2006)
def test_demsar_worked_example_is_reproduced():
    ranks = paper_ranks()
    test = friedman(ranks, higher_is_better=False, correction=False)
    mean = test.ranks.set_index("system")["mean_rank"].round(3).to_dict()
    assert mean == {"C4.5": 3.143, "C4.5+m": 2.000, "C4.5+cf": 2.893, "C4.5+m+cf": 1.964}
    row = test.table.iloc[0]
    assert round(row["chi2"], 2) == 9.28 and round(row["f"], 2) == 3.69
    assert (row["df1"], row["df2"]) == (3, 39)
    # Table 5: q_0.05 = 2.569 (Nemenyi), 2.394 (Bonferroni–Dunn) for k = 4; CD = 1.25
    nemenyi = posthoc(ranks, higher_is_better=False)
    assert nemenyi.table["cd"].iloc[0] == pytest.approx(2.569 * np.sqrt(20 / 84), abs=5e-4)
    assert round(nemenyi.cd(), 2) == 1.25
    dunn = posthoc(ranks, test="bonferroni_dunn", control="C4.5", higher_is_better=False)
    assert dunn.cd() == pytest.approx(2.394 * np.sqrt(20 / 84), abs=5e-4)
    # At α = 0.10 (CD = 1.12): C4.5 is worse than C4.5+m and C4.5+m+cf, nothing else
    loose = posthoc(ranks, alpha=0.10, higher_is_better=False)
    assert round(loose.table["cd"].iloc[0], 2) == 1.12
    # Table 5 at α = 0.10: q_0.10 = 2.291 for k = 4, from the result at α = 0.05 as well
    assert nemenyi.cd(0.10) == pytest.approx(2.291 * np.sqrt(20 / 84), abs=5e-4)
    differ = {
        (a, b) for a, b, s in loose.table[["system_a", "system_b", "significant"]].to_numpy() if s
    }
    assert differ == {("C4.5+m+cf", "C4.5"), ("C4.5+m", "C4.5")}
    groups = loose.cliques().groupby("clique")["system"].agg(list).tolist()
    assert groups == [["C4.5+m+cf", "C4.5+m", "C4.5+cf"], ["C4.5+cf", "C4.5"]]


def test_the_printed_table_gives_the_tie_on_voting():
    test = friedman(metaeval.datasets.load_demsar(), correction=False)
    mean = test.ranks.set_index("system")["mean_rank"]
    assert mean["C4.5+m+cf"] == pytest.approx(27 / 14) and mean["C4.5+cf"] == pytest.approx(41 / 14)


# ----------------------------------------------------------------- Friedman
@pytest.mark.parametrize("grid", [None, 0.5])
def test_friedman_equals_scipy_and_the_formulas(rng, grid):
    a, b = random_wide(rng, 12, 5, grid=grid), random_wide(rng, 30, 3, grid=grid)
    table = pd.concat([wide_to_scores(a, "ma"), wide_to_scores(b, "mb")], ignore_index=True)
    test = friedman(table).table.set_index("metric")
    plain = friedman(table, correction=False).table.set_index("metric")
    for name, wide in (("ma", a), ("mb", b)):
        ref = ss.friedmanchisquare(*wide.to_numpy().T)
        row = test.loc[name]
        assert row["chi2"] == pytest.approx(ref.statistic, rel=1e-12)
        assert row["p_value"] == pytest.approx(ref.pvalue, rel=1e-10)
        n, k = wide.shape
        r = wide.rank(axis=1, ascending=False).mean().to_numpy()
        chi2 = 12 * n / (k * (k + 1)) * (np.sum(r**2) - k * (k + 1) ** 2 / 4)
        assert plain.loc[name, "chi2"] == pytest.approx(chi2, rel=1e-12)
        f = (n - 1) * row["chi2"] / (n * (k - 1) - row["chi2"])
        assert row["f"] == pytest.approx(f, rel=1e-12)
        assert row["f_p_value"] == pytest.approx(ss.f.sf(f, k - 1, (k - 1) * (n - 1)), rel=1e-10)
        assert row["kendall_w"] == pytest.approx(row["chi2"] / (n * (k - 1)), rel=1e-12)
        if grid is None:  # W from its own definition (no ties): 12 S / (N² (k³ − k))
            sums = wide.rank(axis=1).sum().to_numpy()
            s = np.sum((sums - sums.mean()) ** 2)
            assert row["kendall_w"] == pytest.approx(12 * s / (n**2 * (k**3 - k)), rel=1e-12)


def test_friedman_averages_queries_and_lower_is_better(rng):
    scores = metaeval.load_example()
    means = scores.groupby(["metric", "task", "system"])["value"].mean()
    wide = means.loc["accuracy"].unstack()
    test = friedman(scores, metric="accuracy").table.iloc[0]
    assert test["chi2"] == pytest.approx(ss.friedmanchisquare(*wide.to_numpy().T).statistic)
    low = friedman(scores.assign(value=-scores["value"]), metric="accuracy", higher_is_better=False)
    assert low.table["chi2"].iloc[0] == pytest.approx(test["chi2"], rel=1e-12)
    ranks = friedman(scores, metric="accuracy").ranks
    expected = wide.rank(axis=1, ascending=False).mean().sort_values(kind="stable")
    assert ranks["system"].tolist() == expected.index.tolist()


def test_friedman_all_ties_is_nan_with_a_warning():
    wide = pd.DataFrame(np.ones((4, 3)), index=list("abcd"), columns=list("xyz"))
    with pytest.warns(DegenerateWarning, match="m"):
        test = friedman(wide_to_scores(wide))
    assert np.isnan(test.table["chi2"].iloc[0]) and np.isnan(test.table["p_value"].iloc[0])


def test_missing_cells_and_too_few_tasks_are_errors(rng):
    scores = wide_to_scores(random_wide(rng, 5, 3))
    with pytest.raises(PairingError, match=r"friedman\(\) again"):
        friedman(scores.iloc[1:])
    with pytest.raises(PairingError, match="at least 2 tasks"):
        posthoc(scores[scores["task"] == "t000"])
    frozen = scores.copy()
    friedman(scores)
    pd.testing.assert_frame_equal(scores, frozen)


# ----------------------------------------------------------------- post-hoc
def _matrix(ref: pd.DataFrame, wide: pd.DataFrame) -> pd.DataFrame:
    ref = ref.copy()
    ref.index = ref.columns = wide.columns
    return ref


@pytest.mark.parametrize("grid", [None, 0.5])
def test_nemenyi_equals_scikit_posthocs(rng, grid):
    wide = random_wide(rng, 25, 7, grid=grid)
    res = posthoc(wide_to_scores(wide), test="nemenyi").table
    ref = _matrix(sp.posthoc_nemenyi_friedman(wide.to_numpy()), wide)
    got = [ref.loc[a, b] for a, b in zip(res["system_a"], res["system_b"], strict=True)]
    np.testing.assert_allclose(res["p_adjusted"], got, rtol=0, atol=1e-10)
    assert len(res) == 21 and (res["rank_a"] <= res["rank_b"]).all()
    assert res["significant"].any() and not res["significant"].all()


def test_holm_and_bonferroni_dunn_equal_siegel_friedman_adjusted(rng):
    from statsmodels.stats.multitest import multipletests

    wide = random_wide(rng, 40, 6)
    raw = _matrix(sp.posthoc_siegel_friedman(wide.to_numpy(), p_adjust=None), wide)
    for method, adjust in (("holm", "holm"), ("bonferroni_dunn", "bonferroni")):
        res = posthoc(wide_to_scores(wide), test=method, control="s02").table
        assert (res["system_b"] == "s02").all() and len(res) == 5
        ref = [raw.loc[a, "s02"] for a in res["system_a"]]
        np.testing.assert_allclose(res["p_value"], ref, rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            res["p_adjusted"], multipletests(ref, method=adjust)[1], rtol=0, atol=1e-12
        )


@pytest.mark.parametrize(
    ("n_tasks", "grid"),
    [(10, None), (10, 0.25), (30, None), (30, 0.25), (80, 0.25)],
    ids=["exact", "permutation", "exact-30", "normal-ties", "normal-80"],
)
def test_wilcoxon_holm_equals_scikit_posthocs(rng, n_tasks, grid):
    wide = random_wide(rng, n_tasks, 5, grid=grid, shift=0.2)
    res = posthoc(wide_to_scores(wide), test="wilcoxon_holm").table
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy: exact distribution unavailable with ties
        ref = _matrix(sp.posthoc_wilcoxon(wide.to_numpy().T.tolist(), p_adjust="holm"), wide)
    got = [ref.loc[a, b] for a, b in zip(res["system_a"], res["system_b"], strict=True)]
    np.testing.assert_allclose(res["p_adjusted"], got, rtol=0, atol=1e-10)
    one = ss.wilcoxon(
        wide[res["system_a"][0]] - wide[res["system_b"][0]], zero_method="wilcox", correction=False
    )
    assert res["statistic"].iloc[0] == one.statistic


def test_wilcoxon_holm_against_a_control_adjusts_over_its_pairs(rng):
    wide = random_wide(rng, 20, 5)
    res = posthoc(wide_to_scores(wide), test="wilcoxon_holm", control="s00").table
    raw = [ss.wilcoxon(wide[a] - wide["s00"]).pvalue for a in res["system_a"]]
    np.testing.assert_allclose(res["p_value"], raw, rtol=1e-12)
    np.testing.assert_allclose(res["p_adjusted"], metaeval.adjust_pvalues(raw, "holm"))


def test_metrics_with_different_systems_and_tasks(rng):
    a, b = random_wide(rng, 10, 4), random_wide(rng, 16, 6)
    both = pd.concat([wide_to_scores(a, "ma"), wide_to_scores(b, "mb")], ignore_index=True)
    for method in ("nemenyi", "wilcoxon_holm"):
        res = posthoc(both, test=method).table
        assert res.groupby("metric").size().to_dict() == {"ma": 6, "mb": 15}
        alone = posthoc(wide_to_scores(b, "mb"), test=method).table
        pd.testing.assert_frame_equal(
            res[res["metric"] == "mb"].reset_index(drop=True), alone, check_exact=False, rtol=1e-13
        )


def test_posthoc_option_errors(rng):
    scores = wide_to_scores(random_wide(rng, 6, 3))
    with pytest.raises(OptionError, match="control"):
        posthoc(scores, test="holm")
    with pytest.raises(OptionError, match="all pairs"):
        posthoc(scores, test="nemenyi", control="s00")
    with pytest.raises(OptionError, match="test"):
        posthoc(scores, test="tukey")
    with pytest.raises(PairingError, match="not a system"):
        posthoc(scores, test="holm", control="nope")


# ----------------------------------------------------------------- cliques vs autorank
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_cd_and_cliques_equal_autoranks(seed):
    autorank = pytest.importorskip("autorank")
    from autorank._util import get_sorted_rank_groups

    rng = np.random.default_rng(seed)
    wide = random_wide(rng, 15, 8, shift=0.25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = autorank.autorank(wide.reset_index(drop=True), alpha=0.05, force_mode="nonparametric")
    res = posthoc(wide_to_scores(wide))
    # autorank's q_α is statsmodels' qsturng, interpolated in a table (~1e-5 here); ours is
    # scipy's studentized_range.isf: the published critical values are checked above
    assert res.cd() == pytest.approx(ref.cd, rel=2e-5)
    ranks, names, groups = get_sorted_rank_groups(ref, reverse=True)  # best first
    expected = [{names[i] for i in range(a, b + 1)} for a, b in groups]
    got = res.cliques().groupby("clique")["system"].agg(set).tolist()
    assert got == expected  # as sets: systems with equal average ranks come in either order


def test_wilcoxon_cliques_check_every_pair():
    # a and c differ, b differs from neither: cliques {a, b} and {b, c}
    pairs = pd.DataFrame(
        {
            "metric": "m",
            "system_a": ["a", "a", "b"],
            "system_b": ["b", "c", "c"],
            "rank_a": [1.0, 1.0, 2.0],
            "rank_b": [2.0, 3.0, 3.0],
            "p_adjusted": [0.5, 0.01, 0.5],
            "cd": np.nan,
        }
    )
    ranks = pd.DataFrame(
        {
            "metric": "m",
            "system": list("abc"),
            "mean_rank": [1.0, 2.0, 3.0],
            "mean": [0.3, 0.2, 0.1],
        }
    )
    results = PosthocResult(pairs, ranks, "wilcoxon_holm", 0.05)
    got = results.cliques().groupby("clique")["system"].agg(list).tolist()
    assert got == [["a", "b"], ["b", "c"]]
    assert results.cliques(0.001).groupby("clique")["system"].agg(list).tolist() == [
        ["a", "b", "c"]
    ]
    assert np.isnan(results.cd()) and np.isnan(results.cd(0.10))


def test_cliques_against_a_control_join_its_neighbours(rng):
    wide = random_wide(rng, 30, 6, shift=0.5)
    res = posthoc(wide_to_scores(wide), test="bonferroni_dunn", control="s03")
    got = res.cliques()
    pairs = res.table
    rank_c = pairs["rank_b"].iloc[0]
    inside = pairs[(pairs["rank_a"] - rank_c).abs() <= res.cd()]["system_a"]
    assert set(got["system"]) == {*inside, "s03"}


# ----------------------------------------------------------------- Bayesian signed rank
def _mc_close(got: float, ref: float, n: int) -> bool:
    """Two independent Monte-Carlo estimates of one probability agree within 4.5 SE."""
    p = (got + ref) / 2
    return abs(got - ref) <= 4.5 * np.sqrt(2 * max(p * (1 - p), 1e-4) / n)


@pytest.mark.parametrize(("rope", "grid"), [(0.01, None), (0.0, None), (0.05, 0.025)])
def test_bayes_signed_rank_agrees_with_baycomp(rng, rope, grid):
    baycomp = pytest.importorskip("baycomp")
    wide = random_wide(rng, 25, 4, grid=grid, shift=0.0) * 0.05 + 0.5
    wide["s01"] = wide["s00"] + rng.normal(0.01, 0.02, len(wide))
    if grid is not None:  # differences on a grid: pairs summing to exactly ±2·rope
        wide = (wide / grid).round() * grid
    n = 20_000
    res = bayes_signed_rank(wide_to_scores(wide), control="s00", rope=rope, n_draws=n, seed=3)
    res = res.table
    for _, row in res.iterrows():
        ref = baycomp.SignedRankTest.probs(
            wide["s00"].to_numpy(),
            wide[row["treatment"]].to_numpy(),
            rope=rope,
            nsamples=n,
            random_state=5,
        )
        ref = ref if rope > 0 else (ref[0], 0.0, ref[1])
        got = (row["prob_worse"], row["prob_equivalent"], row["prob_better"])
        assert all(_mc_close(g, r, n) for g, r in zip(got, ref, strict=True)), (got, ref)
    assert np.allclose(res[["prob_worse", "prob_equivalent", "prob_better"]].sum(axis=1), 1.0)


def test_bayes_draws_match_the_quadratic_form():
    """Each kept draw equals baycomp's double sum for the same weights (no Monte-Carlo)."""
    from metaeval.ranking import _signed_rank

    c = np.array([32, 38, 35, 45, 26]) / 64  # binary fractions: sums are exact
    t = c + np.array([2, 0, 3, -4, 4]) / 64
    wide = pd.DataFrame({"c": c, "t": t}, index=list("abcde"))
    rope = 2 / 64  # differences (2, 0, 3, −4, 4)/64: sums hit ±2·rope exactly
    res = bayes_signed_rank(
        wide_to_scores(wide), control="c", rope=rope, n_draws=300, seed=9, samples=True
    )
    draws = res.draws(0)
    w = _signed_rank._weights(res.table.attrs["seed"], "m", 0, 300, 5, 0.5)
    z = np.r_[0.0, (wide["t"] - wide["c"]).to_numpy()]
    s = z[:, None] + z[None, :]
    above = (s > 2 * rope) + 0.5 * (s == 2 * rope)
    below = (s < -2 * rope) + 0.5 * (s == -2 * rope)
    assert (s == 2 * rope).any() and (s == -2 * rope).any()
    worse = np.einsum("di,ij,dj->d", w, below, w)
    better = np.einsum("di,ij,dj->d", w, above, w)
    np.testing.assert_allclose(draws[:, 0], worse, atol=1e-12)
    np.testing.assert_allclose(draws[:, 2], better, atol=1e-12)
    np.testing.assert_allclose(draws.sum(axis=1), 1.0, atol=1e-12)


def test_bayes_seed_pairs_and_direction(rng):
    wide = random_wide(rng, 12, 4, shift=0.1) * 0.02
    scores = wide_to_scores(wide)
    result = bayes_signed_rank(scores, control="s00", seed=11, n_draws=3000)
    full = result.table
    one = bayes_signed_rank(scores, control="s00", treatment="s02", seed=11, n_draws=3000).table
    pd.testing.assert_frame_equal(
        full[full["treatment"] == "s02"].reset_index(drop=True), one, check_exact=True
    )
    flipped = bayes_signed_rank(
        scores.assign(value=-scores["value"]),
        control="s00",
        seed=11,
        n_draws=3000,
        higher_is_better=False,
    ).table
    cols = ["prob_worse", "prob_equivalent", "prob_better", "mean_diff"]
    pd.testing.assert_frame_equal(full[cols], flipped[cols], check_exact=False, rtol=1e-12)
    other = bayes_signed_rank(scores, control="s00", seed=12, n_draws=3000).table
    assert not other["prob_better"].equals(full["prob_better"])
    assert full.attrs["seed"] == 11 and result.samples is None


def test_bayes_decision_and_errors(rng):
    wide = pd.DataFrame({"c": np.linspace(0.3, 0.9, 30)})
    wide["better"] = wide["c"] + 0.1
    wide["same"] = wide["c"] + 0.001
    res = bayes_signed_rank(wide_to_scores(wide), control="c", seed=0, n_draws=2000)
    assert res.table.set_index("treatment")["decision"].to_dict() == {
        "better": "better",
        "same": "equivalent",
    }
    for bad in ({"rope": -1}, {"prior": 0}, {"n_draws": 0}, {"threshold": 0.2}):
        with pytest.raises(OptionError):
            bayes_signed_rank(wide_to_scores(wide), control="c", **bad)
    with pytest.raises(PairingError, match="not a system"):
        bayes_signed_rank(wide_to_scores(wide), control="x")
    with pytest.raises(OptionError, match="Unknown treatment"):
        bayes_signed_rank(wide_to_scores(wide), control="c", treatment="x")


# ----------------------------------------------------------------- rank_report
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5])
def test_rank_report_chooses_as_autorank(seed):
    autorank = pytest.importorskip("autorank")
    rng = np.random.default_rng(seed)
    wide = random_wide(rng, 20, 4, shift=0.4)
    if seed % 2:  # skewed scores: not normal
        wide = np.exp(2 * wide)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = autorank.autorank(wide.reset_index(drop=True), alpha=0.05)
    report = rank_report(wide_to_scores(wide))
    row = report.table.iloc[0]
    assert row["omnibus"] == {"anova": "rm_anova", "friedman": "friedman"}[ref.omnibus]
    assert row["normal"] == ref.all_normal
    assert row["homogeneity_p_value"] == pytest.approx(ref.pval_homogeneity, rel=1e-10)
    assert row["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    if ref.omnibus == "friedman":
        assert row["cd"] == pytest.approx(ref.cd, rel=2e-5)  # qsturng's table, see above
    assert f"{row['p_value']:.3f}" in report.text or "p < 0.001" in report.text


def test_rank_report_anova_equals_statsmodels(rng):
    from statsmodels.stats.anova import AnovaRM

    wide = random_wide(rng, 18, 4, shift=0.2)
    report = rank_report(wide_to_scores(wide), force="parametric")
    long = wide_to_scores(wide)
    ref = AnovaRM(long, "value", "task", within=["system"]).fit().anova_table
    row = report.table.iloc[0]
    assert row["statistic"] == pytest.approx(ref["F Value"].iloc[0], rel=1e-10)
    assert row["p_value"] == pytest.approx(ref["Pr > F"].iloc[0], rel=1e-9)
    assert "As requested (parametric)" in report.text


def test_rank_report_text_tables_and_latex(tmp_path):
    import shutil
    import subprocess

    report = rank_report(metaeval.datasets.load_demsar(), force="nonparametric")
    assert "χ²(3) = 10.95" in report.text and "CD = 1.25" in report.text
    assert str(report) == report.text
    assert report.ranks["system"].iloc[0] == "C4.5+m+cf"
    tex = report.to_latex()
    assert r"\toprule" in tex and "CD = 1.254" in tex and tex.count(r"\\") == 7
    if shutil.which("pdflatex"):
        doc = tmp_path / "t.tex"
        doc.write_text(
            "\\documentclass{article}\\usepackage{booktabs}\\begin{document}"
            + tex
            + "\\end{document}"
        )
        run = subprocess.run(
            ["pdflatex", "-interaction=nonstopmode", doc.name],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stdout[-2000:]
    two = rank_report(metaeval.load_example())
    assert len(two.table) == 2 and two.text.count("We compared") == 2
    with pytest.raises(OptionError, match="metric"):
        two.to_latex()


def test_accessor_methods_reach_the_functions():
    auc = metaeval.datasets.load_demsar()
    via, direct = auc.meta.friedman(), friedman(auc)
    assert isinstance(via, FriedmanResult)
    pd.testing.assert_frame_equal(via.table, direct.table)
    pd.testing.assert_frame_equal(via.ranks, direct.ranks)
    res = auc.meta.posthoc()
    assert isinstance(res, PosthocResult)
    pd.testing.assert_frame_equal(res.table, posthoc(auc).table)
    # a result draws and finds its cliques itself: no accessor method takes its table
    for gone in ("cliques", "critical_difference"):
        assert not hasattr(metaeval.accessor.MetaAccessor, gone)


# ----------------------------------------------------------------- row order (issue 25, item 16)
def _twins(rng, n_tasks=20, n_queries=9) -> pd.DataFrame:
    """Systems A and B with identical per-query scores, B's rows in the reverse order; C other."""
    rows = []
    for t in range(n_tasks):
        v = rng.uniform(size=n_queries)
        w = rng.uniform(size=n_queries)
        rows += [(f"t{t:02d}", f"q{q}", "A", "m", v[q]) for q in range(n_queries)]
        rows += [(f"t{t:02d}", f"q{q}", "B", "m", v[q]) for q in reversed(range(n_queries))]
        rows += [(f"t{t:02d}", f"q{q}", "C", "m", w[q]) for q in range(n_queries)]
    return pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])


def _exact_pivot(scores: pd.DataFrame) -> pd.DataFrame:
    """Per-task means with a correctly rounded sum (math.fsum): equal data, equal means."""
    import math

    return (
        scores.groupby(["task", "system"])["value"].agg(lambda v: math.fsum(v) / len(v)).unstack()
    )


def test_identical_systems_tie_whatever_the_row_order(rng):
    scores = _twins(rng)
    wide = _exact_pivot(scores)
    assert (wide["A"] == wide["B"]).all()
    ref = ss.friedmanchisquare(*wide.to_numpy().T)
    test = friedman(scores).table.iloc[0]
    assert test["chi2"] == pytest.approx(ref.statistic, rel=1e-12)
    assert test["p_value"] == pytest.approx(ref.pvalue, rel=1e-10)
    ranks = friedman(scores).ranks.set_index("system")
    assert ranks.loc["A", "mean_rank"] == ranks.loc["B", "mean_rank"]
    assert ranks.loc["A", "mean"] == ranks.loc["B", "mean"]
    pair = posthoc(scores).table.set_index(["system_a", "system_b"])
    ab = pair.loc[("A", "B")] if ("A", "B") in pair.index else pair.loc[("B", "A")]
    assert ab["rank_diff"] == 0 and ab["p_adjusted"] == pytest.approx(1.0, abs=1e-12)
    report = rank_report(scores, force="nonparametric").ranks.set_index("system")
    assert report.loc["A", "mean_rank"] == report.loc["B", "mean_rank"]


def test_bayes_draws_do_not_depend_on_the_row_order(rng):
    wide = random_wide(rng, 15, 3, shift=0.05) * 0.02
    scores = wide_to_scores(wide)
    kwargs = {"control": "s00", "seed": 5, "n_draws": 2000}
    forward = bayes_signed_rank(scores, **kwargs).table
    for shuffled in (scores.iloc[::-1], scores.sample(frac=1, random_state=3)):
        again = bayes_signed_rank(shuffled, **kwargs).table
        again = again.set_index("treatment").loc[forward["treatment"]].reset_index()
        pd.testing.assert_frame_equal(again[forward.columns], forward, check_exact=True)


# ----------------------------------------------------------------- rank_report as autorank
def _autorank(wide: pd.DataFrame, **kwargs):
    autorank = pytest.importorskip("autorank")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return autorank.autorank(wide.reset_index(drop=True), alpha=0.05, **kwargs)


def _check_per_system(report, wide, ref, *, ci: bool = True):
    """The per-system summary against autorank's rankdf and its effect-size functions."""
    from autorank._util import _akinshin_gamma, _cohen_d, _effect_level

    got = report.ranks.set_index("system")
    df = ref.rankdf
    np.testing.assert_allclose(got.loc[df.index, "mean_rank"], df["meanrank"].astype(float))
    cols = ["mean", "std"] if "mean" in df.columns else ["median", "mad"]
    for col in cols:
        np.testing.assert_allclose(got.loc[df.index, col], df[col].astype(float), rtol=1e-12)
    if ci:
        for ours, theirs in (("ci_low", "ci_lower"), ("ci_high", "ci_upper")):
            np.testing.assert_allclose(
                got.loc[df.index, ours], df[theirs].astype(float), rtol=1e-12
            )
    # against the best ranked system, with autorank's own functions (its table relates every
    # system to its first row, the worst ranked)
    func, kind = (
        (_cohen_d, "cohen_d") if "mean" in df.columns else (_akinshin_gamma, "akinshin_gamma")
    )
    assert report.table["effect_size_type"].iloc[0] == kind
    best = got.index[0]
    expected = [func(wide[best], wide[s]) for s in got.index]
    np.testing.assert_allclose(got["effect_size"], expected, rtol=1e-10, atol=1e-14)
    assert got["magnitude"].tolist() == [_effect_level(e, kind) for e in expected]


@pytest.mark.parametrize("seed", range(6))
def test_rank_report_two_systems_as_autorank(seed):
    rng = np.random.default_rng(seed)
    wide = random_wide(rng, 16, 2, shift=0.6)
    if seed % 2:  # skewed scores: not normal
        wide = np.exp(2 * wide)
    ref = _autorank(wide)
    report = rank_report(wide_to_scores(wide))
    row = report.table.iloc[0]
    assert row["omnibus"] == ref.omnibus and row["posthoc"] == "none"
    assert row["normal"] == ref.all_normal
    if ref.omnibus == "ttest":
        assert row["p_value"] == pytest.approx(ref.pvalue, rel=1e-10)
        pair = report.posthoc["m"].iloc[0]
        assert row["statistic"] == pytest.approx(
            ss.ttest_rel(wide[pair["treatment"]], wide[pair["control"]]).statistic, rel=1e-10
        )
    else:  # autorank: one-sided, in the direction of the larger median; here two-sided
        assert ref.pvalue <= 0.5
        assert row["p_value"] == pytest.approx(min(1.0, 2 * ref.pvalue), rel=1e-10)
    assert "Friedman" not in report.text and "Nemenyi" not in report.text
    _check_per_system(report, wide, ref)
    assert r"$p$" in report.to_latex() and "Magnitude" in report.to_latex(table="systems")


def test_rank_report_forced_two_system_tests():
    rng = np.random.default_rng(7)
    wide = random_wide(rng, 20, 2, shift=0.5)
    scores = wide_to_scores(wide)
    t = rank_report(scores, force="parametric").table.iloc[0]
    w = rank_report(scores, force="nonparametric").table.iloc[0]
    assert (t["omnibus"], w["omnibus"]) == ("ttest", "wilcoxon")
    assert t["p_value"] == pytest.approx(ss.ttest_rel(wide["s00"], wide["s01"]).pvalue, rel=1e-10)
    assert w["p_value"] == pytest.approx(ss.wilcoxon(wide["s00"], wide["s01"]).pvalue, rel=1e-10)


@pytest.mark.parametrize("seed", [1, 3, 5])
def test_rank_report_per_system_summary_after_friedman_equals_autoranks(seed):
    rng = np.random.default_rng(seed)
    wide = np.exp(2 * random_wide(rng, 25, 5, shift=0.3))  # skewed: Friedman and Nemenyi
    ref = _autorank(wide)
    assert ref.omnibus == "friedman"
    report = rank_report(wide_to_scores(wide))
    assert report.table["ci_of"].iloc[0] == "median"
    _check_per_system(report, wide, ref)


def test_rank_report_per_system_summary_after_the_anova():
    rng = np.random.default_rng(0)
    wide = random_wide(rng, 20, 4, shift=0.4)
    ref = _autorank(wide)
    assert ref.omnibus == "anova"
    report = rank_report(wide_to_scores(wide))
    _check_per_system(report, wide, ref, ci=False)
    # the intervals: mean ± q_α(k, df) √(MS/N) / 2; autorank's with the one-way residual,
    # metaeval's with the residual of systems × tasks
    x = wide.to_numpy()
    n, k = x.shape
    one_way = ((x - x.mean(axis=0)) ** 2).sum() / (n * k - k)
    half = ss.studentized_range.isf(0.05, k, n * k - k) * np.sqrt(one_way / n) / 2
    np.testing.assert_allclose((ref.rankdf["ci_upper"] - ref.rankdf["mean"]).astype(float), half)
    res = x - x.mean(axis=0) - x.mean(axis=1, keepdims=True) + x.mean()
    two_way = (res**2).sum() / ((n - 1) * (k - 1))
    half = ss.studentized_range.isf(0.05, k, (n - 1) * (k - 1)) * np.sqrt(two_way / n) / 2
    got = report.ranks
    np.testing.assert_allclose(got["ci_high"] - got["mean"], half, rtol=1e-10)
    np.testing.assert_allclose(got["mean"] - got["ci_low"], half, rtol=1e-10)


def test_rank_report_prose_groups_by_cliques_and_figures_follow_the_ranks():
    import re

    rng = np.random.default_rng(11)
    wide = np.exp(random_wide(rng, 30, 8, shift=0.35))
    report = rank_report(wide_to_scores(wide), force="nonparametric")
    text = report.text
    assert "is better than" not in text
    expected = posthoc(wide_to_scores(wide)).cliques().groupby("clique")["system"].agg(list)
    assert len(expected) >= 2
    found = re.findall(r"\{([^}]*)\}", text)
    assert [re.split(r", | and ", g) for g in found] == expected.tolist()
    # Tukey's heatmap lists the systems in order of average rank
    normal = random_wide(np.random.default_rng(0), 20, 4, shift=0.4)
    tukey_report = rank_report(wide_to_scores(normal), force="parametric")
    fig = tukey_report.plot()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == tukey_report.ranks["system"].tolist()
    pairs = tukey_report.posthoc["m"]
    pos = {s: i for i, s in enumerate(tukey_report.ranks["system"])}
    assert all(pos[a] < pos[b] for a, b in zip(pairs["system_a"], pairs["system_b"], strict=True))
    mean = normal.mean()
    np.testing.assert_allclose(
        pairs["diff"],
        mean[pairs["system_a"]].to_numpy() - mean[pairs["system_b"]].to_numpy(),
        rtol=1e-12,
    )
    tex = tukey_report.to_latex(table="systems")
    assert tex.count(r"\\") == 5 and "Cohen's $d$" in tex
    with pytest.raises(OptionError, match="`table`"):
        tukey_report.to_latex(table="ranks")


def test_rank_report_markdown_escapes_names():
    markdown_it = pytest.importorskip("markdown_it")
    rng = np.random.default_rng(2)
    wide = random_wide(rng, 12, 3, shift=2.0)
    names = ["<b>bold</b>", "*em* [link](http://x.org)", "a_b `code` <script>x</script>"]
    wide.columns = names
    report = rank_report(wide_to_scores(wide, metric="<i>m</i>"), force="nonparametric")
    html = markdown_it.MarkdownIt("commonmark").render(report._repr_markdown_())
    for tag in ("<b>", "<em>", "<a ", "<code>", "<script>", "<i>"):
        assert tag not in html
    for name in ["<b>bold</b>", "<script>x</script>", "<i>m</i>"]:
        assert name.replace("<", "&lt;").replace(">", "&gt;") in html
    assert "*em* [link](http://x.org)" in html
    assert "<b>bold</b>" in report.text  # the plain text keeps the names as they are


# ----------------------------------------------------------------- result objects (issue 26)
def _results(rng):
    """A FriedmanResult and a PosthocResult of every method, on two metrics."""
    a, b = random_wide(rng, 12, 5), random_wide(rng, 20, 4)
    scores = pd.concat([wide_to_scores(a, "ma"), wide_to_scores(b, "mb")], ignore_index=True)
    return [
        friedman(scores),
        posthoc(scores, test="nemenyi"),
        posthoc(scores, test="holm", control="s01", alpha=0.10),
        posthoc(scores, test="bonferroni_dunn", control="s01"),
        posthoc(scores, test="wilcoxon_holm"),
        posthoc(scores, test="wilcoxon_holm", control="s00"),
    ]


def test_results_concatenate_pickle_and_keep_only_options_in_attrs(rng):
    import pickle

    for res in _results(rng):
        assert isinstance(res, FriedmanResult | PosthocResult)
        for value in res.table.attrs.values():
            assert not isinstance(value, pd.DataFrame | pd.Series | np.ndarray), value
        both = pd.concat([res.table, res.table], ignore_index=True)
        assert len(both) == 2 * len(res.table)
        back = pickle.loads(pickle.dumps(res))
        assert type(back) is type(res)
        pd.testing.assert_frame_equal(back.table, res.table)
        pd.testing.assert_frame_equal(back.ranks, res.ranks)
        assert back.table.attrs == res.table.attrs
        if isinstance(res, PosthocResult):
            assert (back.test, back.alpha, back.control) == (res.test, res.alpha, res.control)
            pd.testing.assert_frame_equal(back.cliques(), res.cliques())
    fr, nem = _results(rng)[:2]
    assert fr.kind == "friedman" and nem.kind == "posthoc"
    assert "PosthocResult" in repr(nem) and "system_a" in repr(nem)
    # the ranks of both are one table: (metric, system), best average rank first
    pd.testing.assert_frame_equal(fr.ranks, nem.ranks)


def test_cd_at_any_level_equals_the_formulas(rng):
    """CD from scipy's quantiles and k, N counted from the data (Demšar 2006, sec. 3.2.2)."""
    a, b = random_wide(rng, 12, 5), random_wide(rng, 20, 4)
    scores = pd.concat([wide_to_scores(a, "ma"), wide_to_scores(b, "mb")], ignore_index=True)
    nemenyi = posthoc(scores)
    dunn = posthoc(scores, test="bonferroni_dunn", control="s01", alpha=0.10)
    for metric, wide in (("ma", a), ("mb", b)):
        n, k = wide.shape
        se = np.sqrt(k * (k + 1) / (6 * n))
        for alpha in (0.01, 0.05, 0.10, 0.2):
            q = ss.studentized_range.isf(alpha, k, np.inf) / np.sqrt(2)
            assert nemenyi.cd(alpha, metric=metric) == pytest.approx(q * se, rel=1e-9)
            z = ss.norm.isf(alpha / (2 * (k - 1)))
            assert dunn.cd(alpha, metric=metric) == pytest.approx(z * se, rel=1e-12)
        # the default level is the test's, and equals the table's column
        own = nemenyi.table.loc[nemenyi.table["metric"] == metric, "cd"].iloc[0]
        assert nemenyi.cd(metric=metric) == own
        assert dunn.cd(metric=metric) == pytest.approx(ss.norm.isf(0.10 / (2 * (k - 1))) * se)
    for method, control in (("holm", "s01"), ("wilcoxon_holm", None)):
        res = posthoc(scores, test=method, control=control)
        assert np.isnan(res.cd(metric="ma")) and np.isnan(res.cd(0.10, metric="mb"))
    with pytest.raises(OptionError, match=r"`metric`.*'ma', 'mb'"):
        nemenyi.cd()
    with pytest.raises(OptionError, match="`metric` must be one of"):
        nemenyi.cd(metric="nope")
    with pytest.raises(OptionError, match="alpha"):
        nemenyi.cd(1.5, metric="ma")
    with pytest.raises(OptionError, match="alpha"):
        nemenyi.cliques(0)


@pytest.mark.parametrize(
    ("method", "control"),
    [("nemenyi", None), ("holm", "s02"), ("bonferroni_dunn", "s02"), ("wilcoxon_holm", None)],
)
def test_cliques_at_a_level_equal_the_test_run_at_that_level(rng, method, control):
    wide = random_wide(rng, 25, 7, shift=0.25)
    at05 = posthoc(wide_to_scores(wide), test=method, control=control)
    for alpha in (0.01, 0.10, 0.25):
        rerun = posthoc(wide_to_scores(wide), test=method, control=control, alpha=alpha)
        pd.testing.assert_frame_equal(at05.cliques(alpha), rerun.cliques())
        if method == "nemenyi":  # a run is a clique when its extreme ranks are within the CD
            for _, g in at05.cliques(alpha).groupby("clique"):
                assert g["rank"].max() - g["rank"].min() <= at05.cd(alpha)


def test_results_write_latex():
    auc = metaeval.datasets.load_demsar()
    for res in (friedman(auc), posthoc(auc)):
        tex = res.to_latex()
        assert f"\\caption{{{type(res).__name__}}}" in tex
        assert tex.count(r"\\") == len(res.table) + 1  # the header and one line per row


def test_a_posthoc_result_checks_its_options(rng):
    res = posthoc(wide_to_scores(random_wide(rng, 8, 3)))
    with pytest.raises(OptionError, match="`test`.*'tukey'"):
        res.replace(test="tukey")
    with pytest.raises(OptionError, match="alpha"):
        res.replace(alpha=1.5)


def test_rank_report_keeps_the_posthoc_result_and_draws_it():
    auc = metaeval.datasets.load_demsar()
    report = rank_report(auc, force="nonparametric", alpha=0.10)
    found = report.posthoc["AUC"]
    assert isinstance(found, PosthocResult) and found.alpha == 0.10
    # Demšar's Table 5(b): q_0.10 = 2.291 for k = 4, N = 14
    assert report.table["cd"].iloc[0] == pytest.approx(2.291 * np.sqrt(20 / 84), abs=5e-4)
    ax = report.plot().axes[0]
    (bar,) = [line for line in ax.lines if line.get_gid() == "cd-bar"]
    assert bar.get_xdata()[1] - bar.get_xdata()[0] == pytest.approx(report.table["cd"].iloc[0])
    cliques = [line for line in ax.lines if line.get_gid() == "cd-clique"]
    assert len(cliques) == 2  # at 0.10: {C4.5+m+cf, C4.5+m, C4.5+cf} and {C4.5+cf, C4.5}
    assert "CD = 1.118" in report.to_latex()

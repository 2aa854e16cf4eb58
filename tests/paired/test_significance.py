"""compare(): against scipy, exact enumeration and itself (reproducibility)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import reference
from _helpers import make_scores
from scipy import stats

import metaeval
from metaeval import DegenerateWarning, OptionError, PairingWarning
from metaeval.paired import _resampling as rs

KEYS = ["metric", "treatment", "control", "task"]


def _groups(scores: pd.DataFrame, result: pd.DataFrame):
    for row in result.itertuples():
        x, y = reference.paired(scores, row.metric, row.treatment, row.control, row.task)
        yield row, x, y


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_t_matches_scipy(rng, alternative):
    scores = make_scores(rng, drop=0.05)
    with pytest.warns(PairingWarning):
        res = metaeval.compare(scores, control="ctrl", test="t", alternative=alternative, alpha=0.1)
    assert len(res) == 2 * 2 * 4
    for row, x, y in _groups(scores, res):
        ref = stats.ttest_rel(x, y, alternative=alternative)
        ci = ref.confidence_interval(confidence_level=0.9)
        assert row.statistic == pytest.approx(ref.statistic, rel=1e-10)
        assert row.p_value == pytest.approx(ref.pvalue, rel=1e-10)
        assert row.ci_low == pytest.approx(ci.low, rel=1e-10)
        assert row.ci_high == pytest.approx(ci.high, rel=1e-10)
        assert row.diff == pytest.approx(np.mean(x - y), rel=1e-10, abs=1e-15)
        assert row.effect_size == pytest.approx(np.mean(x - y) / np.std(x - y, ddof=1), rel=1e-10)
        assert row.n == len(x)
    if alternative == "two-sided":
        crit = stats.t.isf(0.05, res["n"] - 1)
        np.testing.assert_allclose(res["ci_high"] - res["diff"], res["moe"], rtol=1e-12)
        np.testing.assert_allclose(
            res["moe"], crit * res["diff"].abs() / res["statistic"].abs(), rtol=1e-9
        )


def _discrete(rng, n=40, levels=5) -> pd.DataFrame:
    """Scores on a coarse grid, so that differences tie and are zero."""
    scores = make_scores(rng, tasks={"t1": n, "t2": n + 7}, metrics=("m",))
    scores["value"] = np.round(scores["value"] * levels) / levels
    return scores


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_wilcoxon_and_sign_match_scipy(rng, alternative):
    scores = _discrete(rng)
    small = make_scores(rng, tasks={"t3": 12}, metrics=("m",))  # exact distribution path
    scores = pd.concat([scores, small], ignore_index=True)
    wil = metaeval.compare(scores, control="ctrl", test="wilcoxon", alternative=alternative)
    sign = metaeval.compare(scores, control="ctrl", test="sign", alternative=alternative)
    for (row, x, y), srow in zip(_groups(scores, wil), sign.itertuples(), strict=True):
        ref = stats.wilcoxon(x - y, alternative=alternative)
        assert row.statistic == pytest.approx(ref.statistic, rel=1e-10)
        assert row.p_value == pytest.approx(ref.pvalue, rel=1e-10)
        d = x - y
        b = stats.binomtest(int((d > 0).sum()), int((d != 0).sum()), alternative=alternative)
        assert srow.p_value == pytest.approx(b.pvalue, rel=1e-10)
        assert srow.statistic == pytest.approx(b.statistic, rel=1e-12)


def _exact_randomization(d: np.ndarray, alternative: str) -> float:
    t = d.sum()
    sums = np.array([np.dot(s, d) for s in itertools.product((-1, 1), repeat=len(d))])
    tol = 1e-9 * np.abs(d).sum()
    if alternative == "two-sided":
        return float(np.mean(np.abs(sums) >= abs(t) - tol))
    if alternative == "greater":
        return float(np.mean(sums >= t - tol))
    return float(np.mean(sums <= t + tol))


def _within_4_se(p_mc: float, p_exact: float, b: int) -> None:
    se = np.sqrt(max(p_exact * (1 - p_exact), 1 / b) / b)
    assert abs(p_mc - p_exact) <= 4 * se + 1 / b, (p_mc, p_exact, se)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_randomization_against_exact_enumeration(rng, alternative):
    scores = make_scores(rng, tasks={"a": 10, "b": 12, "c": 8}, metrics=("m",))
    b = 20_000
    res = metaeval.compare(
        scores, control="ctrl", test="randomization", alternative=alternative, n_resamples=b, seed=7
    )
    for row, x, y in _groups(scores, res):
        _within_4_se(row.p_value, _exact_randomization(x - y, alternative), b)
        assert row.statistic == pytest.approx(np.mean(x - y))
    assert res.attrs["seed"] == 7 and res.attrs["n_resamples"] == b


def test_randomization_against_scipy_at_large_b(rng):
    scores = _discrete(rng, n=60)
    b = 20_000
    res = metaeval.compare(scores, control="ctrl", test="randomization", n_resamples=b, seed=3)
    compared = 0
    for row, x, y in _groups(scores, res):
        if abs(np.sum(x - y)) <= 1e-9 * np.abs(x - y).sum():
            # T = 0: every resample ties it, p = 1; scipy's relative tie tolerance
            # misses ties with an observed 0 that rounding made -4e-17
            assert row.p_value == 1.0
            continue
        ref = stats.permutation_test(
            (x, y),
            lambda a, c: np.mean(a - c),
            permutation_type="samples",
            n_resamples=b,
            random_state=1,
        ).pvalue
        se = np.sqrt(max(ref * (1 - ref), 1 / b) / b)
        assert abs(row.p_value - ref) <= 4 * np.sqrt(2) * se + 2 / b
        compared += 1
    assert compared >= 3


def _exact_bootstrap(d: np.ndarray, alternative: str) -> float:
    """Every one of the n^n equally likely resamples of the centred differences."""
    n = len(d)
    t = d.mean() / (d.std(ddof=1) / np.sqrt(n))
    c = d - d.mean()
    hits = 0
    for idx in itertools.product(range(n), repeat=n):
        s = c[list(idx)]
        m, v = s.mean(), s.var(ddof=1)
        if v <= 1e-12 * np.mean(s**2):
            ts = 0.0 if abs(m) <= 1e-12 else np.sign(m) * np.inf
        else:
            ts = m / np.sqrt(v / n)
        if alternative == "two-sided":
            hits += abs(ts) >= abs(t) * (1 - 1e-9)
        elif alternative == "greater":
            hits += ts >= t - 1e-9 * abs(t)
        else:
            hits += ts <= t + 1e-9 * abs(t)
    return hits / n**n


@pytest.mark.parametrize("alternative", ["two-sided", "greater"])
def test_bootstrap_against_exact_enumeration(rng, alternative):
    scores = make_scores(rng, tasks={"a": 6, "b": 5}, systems=("ctrl", "a"), metrics=("m",))
    b = 20_000
    res = metaeval.compare(
        scores, control="ctrl", test="bootstrap", alternative=alternative, n_resamples=b, seed=11
    )
    for row, x, y in _groups(scores, res):
        _within_4_se(row.p_value, _exact_bootstrap(x - y, alternative), b)
        d = x - y
        assert row.statistic == pytest.approx(d.mean() / (d.std(ddof=1) / np.sqrt(len(d))))


@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_same_seed_same_p_values_however_computed(rng, monkeypatch, test):
    scores = make_scores(
        rng, tasks={"t1": 300, "t2": 120, "t3": 45}, systems=("ctrl", "a", "b", "c")
    )
    kwargs = dict(control="ctrl", test=test, n_resamples=1000, seed=2026)
    first = metaeval.compare(scores, **kwargs)
    monkeypatch.setattr(rs, "CHUNK_BYTES", 1)  # one resample block and one pair per chunk
    monkeypatch.setattr(rs, "ITEM_BYTES", 1)  # one resample block per work item
    chunked = metaeval.compare(scores, **kwargs)
    np.testing.assert_array_equal(first["p_value"], chunked["p_value"])
    shuffled = metaeval.compare(scores.sample(frac=1, random_state=5), **kwargs)
    np.testing.assert_array_equal(first["p_value"], shuffled["p_value"])
    alone = metaeval.compare(scores[scores["task"] == "t2"], **kwargs)  # other tasks do not matter
    np.testing.assert_array_equal(first.loc[first["task"] == "t2", "p_value"], alone["p_value"])
    other = metaeval.compare(scores, **{**kwargs, "seed": 2027})
    assert not np.array_equal(first["p_value"], other["p_value"])
    assert (first["p_value"] > 0).all()


@pytest.mark.slow
def test_same_seed_across_processes_and_thread_counts(tmp_path):
    code = (
        "import sys, numpy as np, pandas as pd, metaeval;"
        f"sys.path.insert(0, {str(Path(__file__).parents[1])!r});"
        "from _helpers import make_scores;"
        "s = make_scores(np.random.default_rng(1), systems=('ctrl','a','b'));"
        "r = metaeval.compare(s, control='ctrl', test='randomization', n_resamples=2000, seed=5);"
        "print(repr(r['p_value'].tolist()))"
    )
    outputs = []
    for threads in ("1", "2"):
        env = {
            **os.environ,
            "OMP_NUM_THREADS": threads,
            "OPENBLAS_NUM_THREADS": threads,
            "MKL_NUM_THREADS": threads,
        }
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] and outputs[0].startswith("[")


def test_adjust_over_pairs_of_a_task_and_metric(rng):
    from statsmodels.stats.multitest import multipletests

    scores = make_scores(rng, systems=("ctrl", "a", "b", "c", "d"))
    res = metaeval.compare(scores, control=None, test="t", adjust="fdr_bh")
    assert len(res) == 2 * 4 * 20
    for _, fam in res.groupby(["metric", "task"]):
        assert len(fam) == 20
        np.testing.assert_allclose(
            fam["p_adjusted"], multipletests(fam["p_value"], method="fdr_bh")[1], rtol=1e-12
        )


def test_degenerate_and_bad_input():
    df = pd.DataFrame(
        {
            "task": "t",
            "query": [f"q{i}" for i in range(4)] * 2,
            "system": ["c"] * 4 + ["t"] * 4,
            "metric": "m",
            "value": [0.1, 0.2, 0.3, 0.4, 0.1, 0.2, 0.3, 0.4],
        }
    )
    for test, reason in [
        ("t", "zero variance"),
        ("bootstrap", "zero variance"),
        ("sign", "all differences zero"),
        ("wilcoxon", "all differences zero"),
    ]:
        with pytest.warns(DegenerateWarning, match=reason):
            res = metaeval.compare(df, control="c", test=test, seed=1, n_resamples=200)
        assert np.isnan(res["p_value"]).all()
    same = metaeval.compare(df, control="c", test="randomization", seed=1, n_resamples=200)
    assert same["p_value"].iloc[0] == 1.0  # identical systems: every resample ties
    with pytest.raises(OptionError, match="`test` must be one of"):
        metaeval.compare(df, control="c", test="mann-whitney")
    with pytest.raises(OptionError, match="n_resamples"):
        metaeval.compare(df, control="c", test="randomization", n_resamples=0)
    with pytest.raises(OptionError, match="seed"):
        metaeval.compare(df, control="c", test="randomization", seed=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = metaeval.compare(df, control="c", test="randomization", n_resamples=100)
    assert isinstance(res.attrs["seed"], int)  # drawn, and reported for repeating the run


def test_unused_task_categories(rng):
    scores = make_scores(rng, tasks={"t1": 20, "t2": 30}).astype({"task": "category"})
    part = scores[scores["task"] == "t2"]  # t1 remains a category without rows
    res = metaeval.compare(part, control="ctrl", test="sign")
    assert set(res["task"]) == {"t2"} and res["p_value"].notna().all()


# ------------------------------------------------------------ ANOVA and Tukey
def _ols_anova(part: pd.DataFrame) -> pd.DataFrame:
    import statsmodels.api as sm
    from statsmodels.formula.api import ols

    fit = ols("value ~ C(system) + C(query)", data=part).fit()
    return sm.stats.anova_lm(fit, typ=2)


def test_anova_matches_statsmodels(rng):
    from statsmodels.stats.anova import AnovaRM

    scores = make_scores(rng, tasks={"t1": 15, "t2": 9}, systems=("ctrl", "a", "b", "c"))
    res = metaeval.anova(scores)
    assert len(res) == 2 * 2 * 3
    for (task, metric), part in scores.groupby(["task", "metric"]):
        ours = res[(res["task"] == task) & (res["metric"] == metric)].set_index("source")
        ref = _ols_anova(part)
        for src, name in (("system", "C(system)"), ("query", "C(query)"), ("residual", "Residual")):
            assert ours.loc[src, "ss"] == pytest.approx(ref.loc[name, "sum_sq"], rel=1e-9)
            assert ours.loc[src, "df"] == ref.loc[name, "df"]
        assert ours.loc["system", "f"] == pytest.approx(ref.loc["C(system)", "F"], rel=1e-9)
        assert ours.loc["query", "p_value"] == pytest.approx(
            ref.loc["C(query)", "PR(>F)"], rel=1e-8
        )
        rm = AnovaRM(part, "value", "query", within=["system"]).fit().anova_table
        assert ours.loc["system", "f"] == pytest.approx(rm.loc["system", "F Value"], rel=1e-9)
        assert ours.loc["system", "p_value"] == pytest.approx(rm.loc["system", "Pr > F"], rel=1e-8)


def test_exactly_additive_scores_warn_that_f_is_infinite():
    """Three systems a constant apart on every query: the residual is 0, F infinite and p 0
    (statsmodels' anova_lm: F 1.8e30 on a residual of rounding), said with a warning
    naming the group; data
    with noise does not warn."""
    sm = pytest.importorskip("statsmodels.formula.api")
    anova_lm = pytest.importorskip("statsmodels.stats.anova").anova_lm
    base = [0.3, 0.7, 0.5, 0.1, 0.9]
    rows = [
        ("t", f"q{q}", s, "m", b + d)
        for s, d in (("a", 0.0), ("b", 0.25), ("c", 0.5))
        for q, b in enumerate(base)
    ]
    df = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])
    with pytest.warns(DegenerateWarning, match=r"residual mean square is 0 in 1 \(task, metric\)"):
        got = metaeval.anova(df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # statsmodels divides by its 0
        ref = anova_lm(sm.ols("value ~ C(system) + C(query)", data=df).fit())
    assert got["f"].iloc[0] == np.inf and ref.loc["C(system)", "F"] > 1e20
    np.testing.assert_allclose(got["ss"].iloc[0], ref.loc["C(system)", "sum_sq"], rtol=1e-12)
    with pytest.warns(DegenerateWarning, match="Tukey's HSD: the residual mean square is 0"):
        metaeval.tukey(df)
    noisy = df.assign(value=df["value"] + np.r_[np.zeros(14), 0.01])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isfinite(metaeval.anova(noisy)["f"].iloc[0])


def test_anova_uses_complete_queries_and_checks_systems(rng):
    scores = make_scores(rng, tasks={"t1": 15}, systems=("ctrl", "a", "b"), metrics=("m",))
    gone = scores[(scores["system"] == "a") & scores["query"].isin(["q1", "q2"])].index
    with pytest.warns(PairingWarning, match="queries_left_out=2, queries_used=13"):
        res = metaeval.anova(scores.drop(gone))
    complete = scores[~scores["query"].isin(["q1", "q2"])]
    ref = _ols_anova(complete)
    assert res.set_index("source").loc["residual", "ss"] == pytest.approx(
        ref.loc["Residual", "sum_sq"], rel=1e-9
    )
    with pytest.raises(OptionError, match="at least 3 systems"):
        metaeval.anova(scores[scores["system"] != "b"])


def test_tukey_matches_studentized_range(rng):
    scores = make_scores(rng, tasks={"t1": 25, "t2": 11}, systems=("ctrl", "a", "b", "c"))
    res = metaeval.tukey(scores, alpha=0.1)
    assert len(res) == 2 * 2 * 6
    for (task, metric), part in scores.groupby(["task", "metric"]):
        ref = _ols_anova(part)
        ms_res = ref.loc["Residual", "sum_sq"] / ref.loc["Residual", "df"]
        df = ref.loc["Residual", "df"]
        wide = part.pivot(index="query", columns="system", values="value")
        n = len(wide)
        for row in res[(res["task"] == task) & (res["metric"] == metric)].itertuples():
            diff = wide[row.system_a].mean() - wide[row.system_b].mean()
            q = abs(diff) / np.sqrt(ms_res / n)
            assert row.diff == pytest.approx(diff, rel=1e-9)
            assert row.statistic == pytest.approx(q, rel=1e-9)
            assert row.p_value == pytest.approx(stats.studentized_range.sf(q, 4, df), rel=1e-6)
            half = stats.studentized_range.isf(0.1, 4, df) * np.sqrt(ms_res / n)
            assert row.ci_high - row.diff == pytest.approx(half, rel=1e-6)
            assert row.effect_size == pytest.approx(diff / np.sqrt(ms_res), rel=1e-9)


def _exact_randomized_tukey(wide: np.ndarray) -> np.ndarray:
    """p of every pair over all (k!)^n within-query permutations (no +1 rule)."""
    n, k = wide.shape
    means = wide.mean(axis=0)
    a, b = np.triu_indices(k, 1)
    diffs = np.abs(means[a] - means[b])
    perms = list(itertools.permutations(range(k)))
    hits = np.zeros(len(a))
    total = 0
    for choice in itertools.product(perms, repeat=n):
        m = np.mean([wide[i, list(p)] for i, p in enumerate(choice)], axis=0)
        hits += (m.max() - m.min()) >= diffs - 1e-9
        total += 1
    return hits / total


def test_randomized_tukey_against_exact_enumeration(rng):
    scores = make_scores(rng, tasks={"t1": 4}, systems=("ctrl", "a", "b"), metrics=("m",))
    b = 20_000
    res = metaeval.tukey(scores, randomized=True, n_resamples=b, seed=4)
    wide = scores.pivot(index="query", columns="system", values="value")[["a", "b", "ctrl"]]
    exact = _exact_randomized_tukey(wide.to_numpy())
    assert len(res) == 3 and (res["test"] == "randomized_tukey").all()
    for p_mc, p_exact in zip(res["p_value"], exact, strict=True):
        _within_4_se(p_mc, p_exact, b)
    again = metaeval.tukey(
        scores.sample(frac=1, random_state=1), randomized=True, n_resamples=b, seed=4
    )
    np.testing.assert_array_equal(res["p_value"], again["p_value"])


def test_means_margin_of_error(rng):
    """interval="anova": Sakai's margin from the two-way residual (the default: issue 39, item 9,
    tests/paired/test_means.py)."""
    scores = make_scores(rng, tasks={"t1": 20}, systems=("ctrl", "a", "b"), metrics=("m",))
    res = metaeval.means(scores, interval="anova", alpha=0.05).set_index("system")
    ref = _ols_anova(scores)
    ms_res, df = (
        ref.loc["Residual", "sum_sq"] / ref.loc["Residual", "df"],
        ref.loc["Residual", "df"],
    )
    for system, part in scores.groupby("system"):
        assert res.loc[system, "mean"] == pytest.approx(part["value"].mean(), rel=1e-12)
        assert res.loc[system, "moe"] == pytest.approx(
            stats.t.isf(0.025, df) * np.sqrt(ms_res / 20), rel=1e-9
        )
    two = metaeval.means(scores[scores["system"] != "b"], interval="anova").set_index("system")
    x = scores[scores["system"] == "a"]["value"]
    ci = stats.ttest_1samp(x, 0).confidence_interval(0.95)
    assert two.loc["a", "ci_low"] == pytest.approx(ci.low, rel=1e-10)
    assert (two["variance_from"] == "system").all() and (res["variance_from"] == "anova").all()


def test_progress_bar(rng, capsys):
    scores = make_scores(rng, tasks={"t1": 30}, metrics=("m",))
    metaeval.compare(
        scores, control="ctrl", test="bootstrap", n_resamples=300, seed=1, progress=True
    )
    err = capsys.readouterr().err
    assert "bootstrap test" in err and "100%" in err and err.endswith("\n")
    metaeval.compare(
        scores, control="ctrl", test="bootstrap", n_resamples=300, seed=1, progress=False
    )
    assert capsys.readouterr().err == ""


@pytest.mark.filterwarnings("ignore::metaeval.PairingWarning")
def test_bootstrap_reports_the_t_tests_statistic_and_a_zero_mean_is_zero(rng):
    scores = make_scores(rng, drop=0.1)
    t = metaeval.compare(scores, control=None, test="t")
    boot = metaeval.compare(scores, control=None, test="bootstrap", n_resamples=99, seed=1)
    np.testing.assert_array_equal(boot["statistic"], t["statistic"])
    # differences ±0.125 whose scores carry rounding (scaled by 1e-300, not a power of
    # two): the mean is 0 up to rounding, so t = 0 and every resample is as extreme
    table = pd.DataFrame(
        {
            "task": "t",
            "query": ["0", "1"] * 2,
            "system": ["a", "a", "b", "b"],
            "metric": "m",
            "value": np.array([0.5, 0.25, 0.375, 0.375]) * 1e-300,
        }
    )
    res = metaeval.compare(table, treatment="b", control="a", test="bootstrap", seed=3)
    assert res["statistic"].item() == 0 and res["p_value"].item() == 1


def test_means_and_tukey_follow_categorical_task_and_metric_orders(rng):
    """Rows metric by metric, task by task in the categories' order (as effects(), compare()
    and anova() give them), systems in the table's order; the numbers unchanged."""
    scores = make_scores(rng, systems=("ctrl", "a", "b"))
    tasks, metrics, systems = ["t4", "t2", "t1", "t3"], ["m2", "m1"], ["a", "b", "ctrl"]
    ordered = scores.astype(
        {"task": pd.CategoricalDtype(tasks), "metric": pd.CategoricalDtype(metrics)}
    )
    assert list(pd.unique(metaeval.anova(ordered)["task"])) == tasks  # what the others do
    keys = ["metric", "task", "system"]
    got = metaeval.means(ordered)
    want = [(m, t, s) for m in metrics for t in tasks for s in systems]
    assert list(got[keys].itertuples(index=False, name=None)) == want
    plain = metaeval.means(scores).set_index(keys).loc[want].reset_index()
    pd.testing.assert_frame_equal(got[plain.columns], plain, check_exact=True)
    keys = ["metric", "task", "system_a", "system_b"]
    got = metaeval.tukey(ordered)
    pairs = list(itertools.combinations(systems, 2))
    want = [(m, t, a, b) for m in metrics for t in tasks for a, b in pairs]
    assert list(got[keys].itertuples(index=False, name=None)) == want
    plain = metaeval.tukey(scores).set_index(keys).loc[want].reset_index()
    pd.testing.assert_frame_equal(got[plain.columns], plain, check_exact=True)


def test_means_warns_only_about_what_it_leaves_out(rng):
    """interval="anova": queries left out on tasks with 3 or more systems (complete queries); none
    on a task with 2 (each system's own queries) whatever other tasks have; nothing about
    pairs."""
    three = make_scores(rng, tasks={"t1": 6}, metrics=("m",))
    two = make_scores(rng, tasks={"t2": 5}, systems=("ctrl", "a"), metrics=("m",))
    one = make_scores(rng, tasks={"t3": 1}, systems=("ctrl", "a"), metrics=("m",))
    scores = pd.concat([three.drop(index=[0]), two.drop(index=[0]), one], ignore_index=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = metaeval.means(scores, interval="anova").set_index(["task", "system"])
    by_kind = {w.category: str(w.message) for w in caught}
    assert len(caught) == 2 and set(by_kind) == {PairingWarning, DegenerateWarning}
    left_out = by_kind[PairingWarning]
    assert left_out.startswith("means(interval='anova') uses the queries every system has")
    assert "task='t1', metric='m', queries_left_out=1, queries_used=5" in left_out
    assert "t2" not in left_out and "t3" not in left_out
    assert "NaN margin of error for 2 (task, metric, system)" in by_kind[DegenerateWarning]
    assert "task='t3', metric='m', system='a'" in by_kind[DegenerateWarning]
    # t2: each system's own queries, mean and t interval, as documented
    for system in ("ctrl", "a"):
        x = scores.query("task == 't2' and system == @system")["value"]
        assert res.loc[("t2", system), "n"] == len(x)
        ci = stats.ttest_1samp(x, 0).confidence_interval(0.95)
        assert res.loc[("t2", system), "ci_low"] == pytest.approx(ci.low, rel=1e-10)
    assert res.loc["t3", "moe"].isna().all() and res.loc["t1", "moe"].notna().all()


def test_t_reports_the_standard_error_and_df_scipy_uses():
    """compare(test="t") reports se and df (issue 27): scipy's ttest_rel's df, and its
    interval diff ∓ t·se; McNemar's tests leave them NaN (Newcombe's interval has no SE)."""
    scores = metaeval.load_example()
    table = metaeval.compare(scores, control="logistic_regression", test="t")
    wide = scores.pivot_table(index=["task", "metric", "query"], columns="system", values="value")
    for row in table.itertuples():
        pair = wide.loc[(row.task, row.metric)][[row.treatment, row.control]].dropna()
        ref = stats.ttest_rel(pair[row.treatment], pair[row.control])
        assert row.df == ref.df
        low, high = ref.confidence_interval(0.95)
        assert row.diff - stats.t.isf(0.025, row.df) * row.se == pytest.approx(low, rel=1e-9)
    binary = scores[scores["metric"] == "accuracy"]
    mcnemar = metaeval.compare(binary, control="logistic_regression", test="mcnemar")
    assert mcnemar[["se", "df"]].isna().all(axis=None)

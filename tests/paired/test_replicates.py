"""Repeated runs (a ``replicate`` column): averaging, the added variance, and coverage."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import OptionError, SchemaError

N_TASKS, N_QUERIES, DELTA = 2000, 50, 0.1


def simulate(rng, replicates: int, sd_rep: float = 0.1, sd_e: float = 0.5) -> pd.DataFrame:
    """2,000 tasks alike: 50 queries with a shared difficulty (SD 1), two systems whose
    runs differ by seed — a shift per replicate common to every query (SD ``sd_rep``) and
    noise per query (SD ``sd_e``) — and a true mean difference of 0.1."""
    shape = (N_TASKS, replicates, N_QUERIES)
    difficulty = rng.normal(0, 1, (N_TASKS, 1, N_QUERIES))
    frames = []
    for system, shift in (("control", 0.0), ("treatment", DELTA)):
        seed_shift = rng.normal(0, sd_rep, (N_TASKS, replicates, 1))
        value = 0.5 + shift + difficulty + seed_shift + rng.normal(0, sd_e, shape)
        frames.append(
            pd.DataFrame(
                {
                    "task": np.repeat(
                        [f"t{i:04d}" for i in range(N_TASKS)], replicates * N_QUERIES
                    ),
                    "query": np.tile([f"q{i:02d}" for i in range(N_QUERIES)], N_TASKS * replicates),
                    "system": system,
                    "metric": "m",
                    "replicate": np.tile(np.repeat(np.arange(replicates), N_QUERIES), N_TASKS),
                    "value": value.ravel(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def averaged(scores: pd.DataFrame) -> pd.DataFrame:
    """What ignoring the seeds means: average per query, then one run per system."""
    keys = ["task", "query", "system", "metric"]
    return scores.drop(columns="replicate").groupby(keys, as_index=False)["value"].mean()


def coverage(eff: pd.DataFrame, truth: float) -> float:
    return float(((eff["ci_low"] <= truth) & (truth <= eff["ci_high"])).mean())


@pytest.mark.parametrize("replicates", [3, 5, 10])
@pytest.mark.slow
def test_intervals_cover_with_seed_variance_and_ignoring_it_does_not(replicates):
    """md: 95% intervals over 2,000 simulated tasks, with the replicates' variance and
    without. Printed with ``pytest -s``; R = 3 is reported, R = 5 and 10 asserted."""
    scores = simulate(np.random.default_rng(replicates), replicates)
    honest = coverage(metaeval.effects(scores, "control", effect="md", replicates="nested"), DELTA)
    naive = coverage(metaeval.effects(averaged(scores), "control", effect="md"), DELTA)
    print(
        f"\nR = {replicates}: coverage with the replicates' variance {honest:.4f}, "
        f"ignoring it {naive:.4f}"
    )
    assert naive < 0.80
    if replicates >= 5:
        assert 0.93 <= honest <= 0.97
    else:
        assert honest > 0.90


@pytest.mark.slow
def test_smcrp_coverage():
    """smcrp: the true effect is 0.1 / √(1 + σ_e²/R), the SD of the averaged scores."""
    replicates = 10
    scores = simulate(np.random.default_rng(110), replicates)
    truth = DELTA / np.sqrt(1 + 0.25 / replicates)
    honest = coverage(metaeval.effects(scores, "control", replicates="nested"), truth)
    naive = coverage(metaeval.effects(averaged(scores), "control"), truth)
    print(f"\nsmcrp, R = {replicates}: coverage {honest:.4f}, ignoring the seeds {naive:.4f}")
    assert 0.93 <= honest <= 0.97 and naive < 0.85


def test_no_seed_variance_adds_little():
    """σ_rep = 0: the estimate σ̂²_rep = max(0, ·) is 0 or small, the intervals are
    slightly conservative."""
    scores = simulate(np.random.default_rng(7), 10, sd_rep=0.0)
    eff = metaeval.effects(scores, "control", effect="md", replicates="nested")
    base = eff["variance"] - eff["variance_replicates"]
    share = float((eff["variance_replicates"] / base).mean())
    honest = coverage(eff, DELTA)
    print(
        f"\nno seed variance, R = 10: added variance {share:.1%} of the queries' part, "
        f"coverage {honest:.4f}"
    )
    assert share < 0.25 and (eff["variance_replicates"] == 0).mean() > 0.3
    assert 0.94 <= honest <= 0.985


def test_one_replicate_is_todays_result():
    scores = metaeval.load_example()
    with_rep = scores.assign(replicate=1)
    got = metaeval.effects(with_rep, "logistic_regression", replicates="nested")
    expected = metaeval.effects(scores, "logistic_regression")
    assert (got["variance_replicates"] == 0).all()
    assert (got[["replicates_treatment", "replicates_control"]] == 1).all(axis=None)
    shared = [c for c in expected.columns if c != "df"]
    pd.testing.assert_frame_equal(got[shared], expected[shared], check_exact=False, rtol=1e-12)


def test_variance_added_by_hand():
    """Two replicates each, a shift per replicate: the added part by the formula."""
    rng = np.random.default_rng(5)
    n = 30
    rows = []
    for system, shifts in (("a", [0.0, 0.4]), ("b", [0.1, 0.2, 0.9])):
        for r, shift in enumerate(shifts):
            rows.append(
                pd.DataFrame(
                    {
                        "task": "t",
                        "query": [f"q{i}" for i in range(n)],
                        "system": system,
                        "metric": "m",
                        "replicate": r,
                        "value": shift + rng.normal(0, 0.3, n),
                    }
                )
            )
    scores = pd.concat(rows, ignore_index=True)
    with pytest.warns(metaeval.MetaEvalWarning, match=r"guessed 'nested' \(one task\)"):
        eff = metaeval.effects(scores, "a", effect="md")  # the design said by nothing
    expected = 0.0
    for system in ("a", "b"):
        part = scores[scores["system"] == system]
        means = part.groupby("replicate")["value"].mean()
        within = part.groupby("query")["value"].var(ddof=1).mean()
        expected += max(0.0, means.var(ddof=1) - within / n) / len(means)
    assert eff["variance_replicates"].item() == pytest.approx(expected, rel=1e-12)
    assert eff[["replicates_treatment", "replicates_control"]].values.tolist() == [[3, 2]]
    assert eff.attrs["replicates"] == "nested"  # one task: nothing to cross


def test_other_functions_average_and_say_so():
    scores = simulate(np.random.default_rng(1), 3).query("task < 't0005'")
    before = scores.copy()
    res = metaeval.compare(scores, "control")
    plain = metaeval.compare(averaged(scores), "control")
    np.testing.assert_allclose(res["diff"], plain["diff"], rtol=1e-12)
    np.testing.assert_allclose(res["p_value"], plain["p_value"], rtol=1e-12)
    assert res.attrs["replicates"].startswith("averaged")
    assert "replicates" not in plain.attrs
    pd.testing.assert_frame_equal(scores, before)
    board = metaeval.leaderboard(scores)
    assert len(board) == 2


def test_bad_replicates_are_schema_errors():
    scores = simulate(np.random.default_rng(2), 2).query("task < 't0002'")
    dup = pd.concat([scores, scores.head(1)], ignore_index=True)
    with pytest.raises(SchemaError, match="replicate\\) key"):
        metaeval.effects(dup, "control")
    missing = scores.astype({"replicate": object})
    missing.loc[0, "replicate"] = None
    with pytest.raises(SchemaError, match="'replicate'"):
        metaeval.effects(missing, "control")


def test_dask_path_refuses_replicates():
    dd = pytest.importorskip("dask.dataframe")
    scores = simulate(np.random.default_rng(3), 2).query("task < 't0002'")
    with pytest.raises(SchemaError, match="in-memory path"):
        dd.from_pandas(scores, npartitions=1).meta.effects(control="control")


def simulate_two_metrics(rng, n_tasks: int = 2000, replicates: int = 4, n_queries: int = 30):
    """Tasks alike: two metrics, a per-query difficulty shared by both systems, a shift
    per replicate of each system correlated across the metrics (covariance 0.03, variances
    0.04 and 0.05) and per-query noise correlated across the metrics (0.5)."""
    rep_cov = np.array([[0.04, 0.03], [0.03, 0.05]])
    noise_cov = 0.09 * np.array([[1.0, 0.5], [0.5, 1.0]])
    difficulty = rng.normal(0, 1, (n_tasks, 1, n_queries, 1))
    frames = []
    for system, delta in (("control", 0.0), ("treatment", 0.1)):
        shift = rng.multivariate_normal([0, 0], rep_cov, (n_tasks, replicates))[:, :, None, :]
        noise = rng.multivariate_normal([0, 0], noise_cov, (n_tasks, replicates, n_queries))
        value = 5.0 + delta + difficulty + shift + noise  # (task, replicate, query, metric)
        for j, metric in enumerate(("m1", "m2")):
            frames.append(
                pd.DataFrame(
                    {
                        "task": np.repeat(
                            [f"t{i:04d}" for i in range(n_tasks)], replicates * n_queries
                        ),
                        "query": np.tile(
                            [f"q{i:02d}" for i in range(n_queries)], n_tasks * replicates
                        ),
                        "system": system,
                        "metric": metric,
                        "replicate": np.tile(np.repeat(np.arange(replicates), n_queries), n_tasks),
                        "value": value[..., j].ravel(),
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def two_metrics() -> pd.DataFrame:
    return simulate_two_metrics(np.random.default_rng(18))


@pytest.mark.parametrize("effect", ["md", "smcrp"])
@pytest.mark.slow
def test_covariance_with_replicates_matches_the_spread_of_simulated_estimates(two_metrics, effect):
    """effect_covariance() on replicate tables: its diagonal is effects()' variance
    (with the replicates' part), exactly, and the mean covariance of the two metrics'
    effects matches the empirical covariance of the estimates over 2,000 tasks within 4
    Monte-Carlo SEs (issue 25, item 18: the replicates' part was left out)."""
    eff = metaeval.effects(two_metrics, "control", effect=effect, replicates="nested")
    cov = metaeval.effect_covariance(two_metrics, "control", effect=effect, replicates="nested")
    diag = cov[cov["metric"] == cov["metric_b"]].merge(
        eff, on=["treatment", "control", "task", "metric"], validate="1:1"
    )
    assert len(diag) == len(eff)
    assert np.array_equal(diag["cov"].to_numpy(), diag["variance"].to_numpy())
    est = eff.pivot(index="task", columns="metric", values="effect")
    empirical = est.cov()
    n = len(est)
    got = cov.query("metric == 'm1' and metric_b == 'm2'")["cov"].mean()
    s_ab = empirical.loc["m1", "m2"]
    mc_se = np.sqrt((empirical.loc["m1", "m1"] * empirical.loc["m2", "m2"] + s_ab**2) / (n - 1))
    assert abs(got - s_ab) < 4 * mc_se, (got, s_ab, mc_se)
    # the queries' part alone (the replicates averaged away) misses by many standard errors
    alone = metaeval.effect_covariance(averaged(two_metrics), "control", effect=effect)
    query_part = alone.query("metric == 'm1' and metric_b == 'm2'")["cov"].mean()
    print(
        f"\n{effect}: computed {got:.6f}, queries' part {query_part:.6f}, empirical "
        f"{s_ab:.6f} (MC SE {mc_se:.6f})"
    )
    assert abs(query_part - s_ab) > 4 * mc_se


@pytest.mark.parametrize("design", ["epochs", "crossed", "nested"])
def test_covariance_diagonal_is_the_effects_variance_for_every_design(two_metrics, design):
    """effect_covariance(replicates=) takes the design as effects() does: for epochs
    nothing is added for the replicates (the diagonal was the nested variance, 0.0069
    where effects() gave 0.0041), for crossed and nested the replicates' part; a design
    neither given nor recorded is guessed with effects()' warning (issue 39, item 13)."""
    scores = two_metrics[two_metrics["task"] < "t0020"]
    eff = metaeval.effects(scores, "control", effect="md", replicates=design)
    cov = metaeval.effect_covariance(scores, "control", effect="md", replicates=design)
    diag = cov[cov["metric"] == cov["metric_b"]].merge(
        eff, on=["treatment", "control", "task", "metric"], validate="1:1"
    )
    assert len(diag) == len(eff) == 40
    np.testing.assert_allclose(diag["cov"], diag["variance"], rtol=1e-12)
    assert cov.attrs["replicates"] == design
    off = cov.query("metric == 'm1' and metric_b == 'm2'")["cov"].to_numpy()
    plain = metaeval.effect_covariance(averaged(scores), "control", effect="md")
    plain_off = plain.query("metric == 'm1' and metric_b == 'm2'")["cov"].to_numpy()
    if design == "epochs":  # the queries' covariance of the averaged scores, nothing added
        np.testing.assert_allclose(off, plain_off, rtol=1e-12)
    else:
        assert (off > plain_off).mean() > 0.8  # the shared shifts covary positively (0.03)
    with pytest.warns(metaeval.MetaEvalWarning, match="guessed 'crossed'"):
        metaeval.effect_covariance(scores, "control", effect="md")
    with pytest.raises(OptionError, match="'replicate' column"):
        metaeval.effect_covariance(averaged(scores), "control", replicates=design)


def test_pool_metrics_on_replicate_tables(two_metrics):
    """pool_metrics() accepts replicate tables (the cov diagonal matches the effects)."""
    scores = two_metrics[two_metrics["task"] < "t0030"]
    res = metaeval.pool_metrics(
        scores, "control", effect="md", test="z", replicates="nested", robust=True
    )
    assert res[["k", "k_task"]].values.tolist() == [[60, 30]]
    # the same seeds on every task: crossed, which the multilevel model does not take
    with (
        pytest.raises(OptionError, match="replicates='nested'"),
        pytest.warns(metaeval.MetaEvalWarning, match="guessed 'crossed'"),
    ):
        metaeval.pool_metrics(scores, "control", effect="md", test="z")
    assert np.isfinite(res[["effect", "se", "robust_se"]]).all(axis=None)


@pytest.mark.parametrize(
    "column", ["df", "variance_replicates", "replicates_treatment", "replicates_control"]
)
def test_task_level_column_named_like_a_replicate_output_is_a_schema_error(column):
    scores = simulate(np.random.default_rng(4), 2).query("task < 't0003'").assign(**{column: 1})
    with pytest.raises(SchemaError, match=f"'{column}'"):
        metaeval.effects(scores, "control")

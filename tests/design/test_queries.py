"""plan_queries (issue 28, item 1): Sakai's three designs against statsmodels and scipy,
the clustered and epoch plans against simulations of the analysis, and the errors.

References are independent of the code: the pilot's SD of the paired differences is
computed here from a pivot of the scores, powers and sizes by statsmodels' ``TTestPower``
and ``FTestAnovaPower``, the interval width from scipy's t quantile, and the simulated
powers from models whose parameters the tests set."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import FIXTURES
from scipy import optimize, stats
from statsmodels.stats.power import FTestAnovaPower, TTestPower

import metaeval
from metaeval.design import PowerResult
from metaeval.design.queries import plan_queries
from metaeval.errors import DegenerateWarning, MetaEvalWarning, OptionError, PairingError

CONTROL = "logistic_regression"
SM_ALTERNATIVE = {"two-sided": "two-sided", "greater": "larger", "less": "smaller"}


@pytest.fixture(scope="module")
def pilot() -> pd.DataFrame:
    return metaeval.load_example()


def _sd_diff(scores: pd.DataFrame, control: str) -> pd.DataFrame:
    """SD (ddof 1) and count of treatment − control per (metric, treatment, task), naively."""
    wide = scores.pivot_table(
        index=["metric", "task", "query"], columns="system", values="value"
    ).reset_index()
    systems = [s for s in scores["system"].unique() if s != control]
    long = wide.melt(
        id_vars=["metric", "task", "query", control], value_vars=systems, var_name="treatment"
    )
    long["d"] = long["value"] - long[control]
    out = long.groupby(["metric", "treatment", "task"])["d"].agg(["std", "count"])
    return out.reset_index()


def _with_reference(plan: PowerResult, scores: pd.DataFrame) -> pd.DataFrame:
    ref = _sd_diff(scores, CONTROL)
    merged = plan.table.astype({"metric": str, "treatment": str, "task": str}).merge(
        ref, on=["metric", "treatment", "task"], validate="one_to_one"
    )
    assert len(merged) == len(plan.table) == len(ref)
    np.testing.assert_allclose(merged["sd_diff"], merged["std"], rtol=1e-10)
    assert (merged["pilot_n"] == merged["count"]).all()
    return merged


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_the_t_design_is_statsmodels_ttestpower(pilot, alternative):
    sm = TTestPower()
    side = SM_ALTERNATIVE[alternative]
    sign = -1.0 if alternative == "less" else 1.0
    # n from mde and power: n is statsmodels' continuous solution rounded up
    plan = plan_queries(pilot, CONTROL, mde=0.02, power=0.8, alternative=alternative)
    merged = _with_reference(plan, pilot)
    assert len(merged) == 32 and merged["n"].dtype == "Int64"
    for row in merged.itertuples():
        want = sm.solve_power(
            effect_size=sign * 0.02 / row.std, alpha=0.05, power=0.8, alternative=side
        )
        assert row.n == math.ceil(want), (row.task, row.treatment, row.n, want)
        assert row.power >= 0.8
        assert sm.power(sign * 0.02 / row.std, row.n, 0.05, alternative=side) == pytest.approx(
            row.power, abs=1e-10
        )
        assert sm.power(sign * 0.02 / row.std, row.n - 1, 0.05, alternative=side) < 0.8
    # mde from n and power
    plan = plan_queries(pilot, CONTROL, n=60, power=0.9, alternative=alternative, alpha=0.01)
    merged = _with_reference(plan, pilot)
    for row in merged.itertuples():
        d = sm.solve_power(nobs=60, alpha=0.01, power=0.9, alternative=side)
        assert row.mde == pytest.approx(abs(d) * row.std, abs=1e-6)
        assert row.power == pytest.approx(0.9, abs=1e-6)
    # power from n and mde
    plan = plan_queries(pilot, CONTROL, n=50, mde=0.05, alternative=alternative)
    merged = _with_reference(plan, pilot)
    for row in merged.itertuples():
        want = sm.power(sign * 0.05 / row.std, 50, 0.05, alternative=side)
        assert row.power == pytest.approx(want, abs=1e-6)
    assert plan.unit == "queries"
    assert set(plan.table["test"]) == {"t"} and set(plan.table["alpha"]) == {0.05}


def test_the_curve_holds_the_power_of_each_size(pilot):
    plan = plan_queries(pilot, CONTROL, treatment="knn", mde=0.03, power=0.8)
    curve = plan.curve
    assert list(curve.columns) == [
        "metric",
        "treatment",
        "control",
        "task",
        "size",
        "power",
        "target",
    ]
    assert (curve["target"] == 0.8).all() and curve["size"].min() == 2
    for row in plan.table.itertuples():
        mine = curve[(curve["task"] == row.task) & (curve["metric"] == row.metric)]
        assert mine["size"].is_monotonic_increasing and mine["size"].is_unique
        assert mine["size"].max() == 2 * row.n
        d = 0.03 / row.sd_diff
        want = TTestPower().power(d, mine["size"].to_numpy(), 0.05)
        np.testing.assert_allclose(mine["power"], want, atol=1e-10)
        assert mine.loc[mine["size"] == row.n, "power"].item() == pytest.approx(row.power)


def _within_ms(scores: pd.DataFrame) -> pd.DataFrame:
    """The one-way ANOVA's within-system variance (Sakai's σ²), naively per group: the mean
    over systems of each system's sample variance over the queries every system has."""
    rows = []
    for (metric, task), g in scores.groupby(["metric", "task"]):
        y = g.pivot(index="query", columns="system", values="value").dropna().to_numpy()
        q, m = y.shape
        rows.append((metric, task, y.var(axis=0, ddof=1).mean(), m, q))
    return pd.DataFrame(rows, columns=["metric", "task", "ms", "m", "q"])


def _sm_anova_power(D: float, ms: float, m: int, n: float, alpha: float) -> float:
    """Sakai's design through statsmodels' FTestAnovaPower: one-way ANOVA of k = m
    groups of n queries, N = m·n observations, df (m − 1, m(n − 1)); Sakai's
    noncentrality λ = n·D²/(2σ²) is f²·N, so f = √(λ/N)."""
    lam = n * D**2 / (2 * ms)
    N = m * n
    return FTestAnovaPower().power(effect_size=math.sqrt(lam / N), nobs=N, alpha=alpha, k_groups=m)


@pytest.mark.parametrize("treatment", [None, ["knn", "naive_bayes"]])
def test_the_anova_design_is_statsmodels_ftestanovapower(pilot, treatment):
    systems = None if treatment is None else [CONTROL, *treatment]
    sub = pilot if systems is None else pilot[pilot["system"].isin(systems)]
    ref = _within_ms(sub)
    plan = plan_queries(pilot, CONTROL, treatment=treatment, test="anova", mde=0.05, power=0.8)
    merged = plan.table.astype({"metric": str, "task": str}).merge(ref, on=["metric", "task"])
    assert len(merged) == len(ref) == 8
    np.testing.assert_allclose(merged["ms_within"], merged["ms"], rtol=1e-9)
    assert (merged["n_systems"] == merged["m"]).all() and (merged["pilot_n"] == merged["q"]).all()
    for row in merged.itertuples():
        assert _sm_anova_power(0.05, row.ms, row.m, row.n, 0.05) >= 0.8
        assert _sm_anova_power(0.05, row.ms, row.m, row.n - 1, 0.05) < 0.8
        assert row.power == pytest.approx(
            _sm_anova_power(0.05, row.ms, row.m, row.n, 0.05), abs=1e-8
        )
    plan = plan_queries(pilot, CONTROL, treatment=treatment, test="anova", n=40, power=0.8)
    merged = plan.table.astype({"metric": str, "task": str}).merge(ref, on=["metric", "task"])
    for row in merged.itertuples():
        want = optimize.brentq(
            lambda D, r=row: _sm_anova_power(D, r.ms, r.m, 40, 0.05) - 0.8, 1e-6, 1.0, xtol=1e-12
        )
        assert row.mde == pytest.approx(want, abs=1e-6)


def test_the_ci_design_gives_the_smallest_n_whose_interval_is_narrow_enough(pilot):
    plan = plan_queries(pilot, CONTROL, test="ci", width=0.04, alpha=0.05)
    merged = _with_reference(plan, pilot)

    def width(k, sd):
        return 2 * stats.t.ppf(0.975, k - 1) * sd / np.sqrt(k)

    for row in merged.itertuples():
        assert width(row.n, row.std) <= 0.04 < width(row.n - 1, row.std)
        assert row.expected_width == pytest.approx(width(row.n, row.std))
    assert plan.table["mde"].isna().all() and plan.table["power"].isna().all()
    assert (plan.curve["target"] == 0.04).all() and plan.curve["power"].isna().all()


def _two_systems(
    diff: np.ndarray, *, task: str = "t", base: np.ndarray | None = None, **extra
) -> pd.DataFrame:
    """A scores table of systems "a" (control) and "b" = a + diff."""
    base = np.zeros_like(diff) if base is None else base
    q = len(diff)
    frame = pd.DataFrame(
        {
            "task": task,
            "query": np.tile(np.arange(q).astype(str), 2),
            "system": np.repeat(["a", "b"], q),
            "metric": "m",
            "value": np.concatenate([base, base + diff]),
        }
    )
    for name, values in extra.items():
        frame[name] = np.tile(values, 2)
    return frame


def _t_rejects(d: np.ndarray, alpha: float = 0.05) -> np.ndarray:
    """Two-sided one-sample t-tests of mean 0 along the last axis."""
    k = d.shape[-1]
    t = d.mean(-1) / (d.std(-1, ddof=1) / np.sqrt(k))
    return np.abs(t) > stats.t.ppf(1 - alpha / 2, k - 1)


def test_a_clustered_plan_reaches_its_power_and_one_cluster_less_does_not():
    rng = np.random.default_rng(20261125)
    mu, sd_u, sd_e, m = 0.2, 0.1, 0.3, 5  # cluster shift and item noise, items per cluster
    big = 4000  # a large pilot from the model: its estimates are the model's
    diff = mu + np.repeat(rng.normal(0, sd_u, big), m) + rng.normal(0, sd_e, big * m)
    base = rng.normal(0.5, 0.2, big * m)
    scores = _two_systems(diff, base=base, passage=np.repeat(np.arange(big), m))
    plan = plan_queries(scores, "a", treatment="b", mde=mu, power=0.8, cluster="passage")
    row = plan.table.iloc[0]
    assert plan.unit == "clusters" and row["n_clusters"] == big
    sd_cluster = math.sqrt(sd_u**2 + sd_e**2 / m)  # SD of a cluster's mean difference
    assert row["sd_cluster"] == pytest.approx(sd_cluster, rel=0.03)
    want = math.ceil(TTestPower().solve_power(mu / sd_cluster, alpha=0.05, power=0.8))
    assert abs(row["n"] - want) <= 1
    assert row["n_items"] == row["n"] * m
    assert row["design_effect"] == pytest.approx(m * sd_cluster**2 / (sd_u**2 + sd_e**2), rel=0.05)
    # the analysis metaeval runs on C equal clusters is the t-test on the C cluster means
    sims, n = 4000, int(row["n"])
    reached = []
    for k in (n, n - 1):
        items = mu + np.repeat(rng.normal(0, sd_u, (sims, k)), m, axis=1)
        items = items + rng.normal(0, sd_e, (sims, k * m))
        means = items.reshape(sims, k, m).mean(-1)
        reached.append(_t_rejects(means).mean())
    # Monte-Carlo SE at 0.8 with 4000 studies: 0.0063
    assert reached[0] >= 0.77, reached
    assert reached[1] <= 0.78, reached
    assert n < 12  # a design where one cluster matters (power falls ~0.04 per cluster)


def test_an_epoch_plan_reaches_its_power_and_uses_the_variance_split():
    rng = np.random.default_rng(7)
    mu, sd_b, sd_w, pilot_epochs, items = 0.3, 0.15, 0.4, 2, 20000
    delta = rng.normal(mu, sd_b, items)
    level = rng.normal(0.5, 0.2, items)
    frames = []
    for e in range(pilot_epochs):
        x = level + rng.normal(0, sd_w, items)
        y = level + delta + rng.normal(0, sd_w, items)
        frames.append(_two_systems(y - x, base=x).assign(replicate=e))
    scores = pd.concat(frames, ignore_index=True)
    epochs = 6
    plan = plan_queries(
        scores, "a", treatment="b", mde=mu, power=0.8, replicates="epochs", epochs=epochs
    )
    row = plan.table.iloc[0]
    assert row["epochs"] == epochs and row["pilot_n"] == items
    # s²(d̄_i) − 2σ²_w/2 estimates σ²_b; its SE ≈ √(2/items)·(σ²_b + σ²_w): 4 SE allowed
    se = math.sqrt(2 / items) * (sd_b**2 + sd_w**2)
    assert row["var_between"] == pytest.approx(sd_b**2, abs=4 * se)
    assert row["var_within"] == pytest.approx(2 * sd_w**2, rel=0.05)
    sd_plan = math.sqrt(sd_b**2 + 2 * sd_w**2 / epochs)
    assert row["sd_epochs"] == pytest.approx(sd_plan, rel=0.05)
    want = math.ceil(TTestPower().solve_power(mu / sd_plan, alpha=0.05, power=0.8))
    assert abs(row["n"] - want) <= 1
    # more epochs: less variance, fewer items; never below the between-item variance
    more = plan_queries(
        scores, "a", treatment="b", mde=mu, power=0.8, replicates="epochs", epochs=1000
    ).table.iloc[0]
    floor = math.ceil(TTestPower().solve_power(mu / sd_b, alpha=0.05, power=0.8))
    assert more["n"] < row["n"] and abs(more["n"] - floor) <= 2
    # simulate studies of n items with `epochs` epochs each, analysed on the item means
    sims, n = 4000, int(row["n"])
    reached = []
    for k in (n, n - 1):
        true = rng.normal(mu, sd_b, (sims, k, 1))
        noise = rng.normal(0, sd_w, (sims, k, epochs)) - rng.normal(0, sd_w, (sims, k, epochs))
        reached.append(_t_rejects((true + noise).mean(-1)).mean())
    assert reached[0] >= 0.77, reached
    assert reached[1] <= 0.78, reached
    assert n < 12


def test_degenerate_groups_are_nan_rows_named_in_a_warning():
    rng = np.random.default_rng(3)
    good = _two_systems(rng.normal(0.1, 0.3, 40), task="good")
    flat = _two_systems(np.full(40, 0.1), task="flat")  # zero variance of the differences
    one = _two_systems(np.array([0.2]), task="one")  # one paired query
    scores = pd.concat([good, flat, one], ignore_index=True)
    before = scores.copy()
    with pytest.warns(DegenerateWarning, match="No plan") as caught:
        plan = plan_queries(scores, "a", mde=0.1, power=0.8)
    groups = next(w.message.groups for w in caught if "No plan" in str(w.message))
    assert sorted(groups["task"]) == ["flat", "one"]
    table = plan.table.set_index("task")
    assert table.loc[["flat", "one"], ["n", "mde", "power"]].isna().all().all()
    assert table.loc["good", "n"] > 2
    assert set(plan.curve["task"]) == {"good"}
    pd.testing.assert_frame_equal(scores, before)  # the input is not changed
    with pytest.raises(PairingError, match="No group"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateWarning)
        plan_queries(pd.concat([flat, one]), "a", mde=0.1, power=0.8)


@pytest.mark.parametrize(
    ("kwargs", "names"),
    [
        ({"mde": 0.1}, "`n`, `mde`, `power`"),
        ({}, "`n`, `mde`, `power`"),
        ({"n": 10, "mde": 0.1, "power": 0.8}, "`n`, `mde`, `power`"),
        ({"mde": 0.1, "power": 1.0}, "`power`"),
        ({"mde": 0.1, "power": 0.04}, "`power`"),
        ({"mde": 0.0, "power": 0.8}, "`mde`"),
        ({"mde": -0.1, "power": 0.8}, "`mde`"),
        ({"n": 1, "power": 0.8}, "`n`"),
        ({"n": 10.5, "power": 0.8}, "`n`"),
        ({"mde": 0.1, "power": 0.8, "width": 0.1}, "`width`"),
        ({"test": "ci"}, "`width`"),
        ({"test": "ci", "width": -1.0}, "`width`"),
        ({"test": "ci", "width": 0.1, "n": 20}, "`n`"),
        ({"test": "bogus", "mde": 0.1, "power": 0.8}, "`test`"),
        ({"alternative": "larger", "mde": 0.1, "power": 0.8}, "`alternative`"),
        ({"alpha": 1.5, "mde": 0.1, "power": 0.8}, "`alpha`"),
        ({"test": "anova", "alternative": "greater", "mde": 0.1, "power": 0.8}, "`alternative`"),
        ({"test": "anova", "cluster": "query", "mde": 0.1, "power": 0.8}, "test='anova'"),
        ({"replicates": "bogus", "mde": 0.1, "power": 0.8}, "`replicates`"),
        ({"replicates": "seeds", "mde": 0.1, "power": 0.8}, "replicate"),
        ({"seeds": 3, "mde": 0.1, "power": 0.8}, "`seeds`"),
        ({"epochs": 3, "mde": 0.1, "power": 0.8}, "`epochs`"),
        ({"replicates": "epochs", "mde": 0.1, "power": 0.8}, "replicate"),
    ],
)
def test_bad_options_are_option_errors_naming_the_argument(pilot, kwargs, names):
    with pytest.raises(OptionError, match=names.replace("(", r"\(")):
        plan_queries(pilot, CONTROL, **kwargs)


def test_unknown_systems_in_an_anova_plan_are_pairing_errors(pilot):
    with pytest.raises(PairingError, match="nobody"):
        plan_queries(pilot, CONTROL, treatment=["nobody"], test="anova", mde=0.1, power=0.8)


# ------------------------------------------- power at any noncentrality (issue 39, item 14)
PWR = FIXTURES / "design"


def _pilot_with_sds(sds: np.ndarray, n: int = 40) -> pd.DataFrame:
    """A pilot whose task i has paired differences of sample SD ``sds[i]`` exactly."""
    z = np.resize([1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 0.0], n)
    z = (z - z.mean()) / z.std(ddof=1)
    frames = []
    for i, sd in enumerate(sds):
        task = f"t{i:02d}"
        frames += [
            pd.DataFrame(
                {"task": task, "query": np.arange(n), "system": "base", "metric": "m", "value": 0.0}
            ),
            pd.DataFrame(
                {
                    "task": task,
                    "query": np.arange(n),
                    "system": "new",
                    "metric": "m",
                    "value": sd * z,
                }
            ),
        ]
    return pd.concat(frames, ignore_index=True)


def test_the_t_power_is_rs_pwr_at_every_noncentrality():
    """R's pwr.t.test (tests/fixtures/design/make_pwr.R) over df 1-999 and noncentrality
    0.5-37, two-sided and one-sided: scipy's nct.cdf is NaN from about 7 on, and the power
    was NaN there."""
    grid = pd.read_csv(PWR / "pwr_grid.csv")
    checked = 0
    for (n, alpha, side), rows in grid.groupby(["n", "sig_level", "alternative"]):
        pilot = _pilot_with_sds(1.0 / rows["d"].to_numpy())  # mde = 1: d = 1/sd
        alternative = {"two.sided": "two-sided"}.get(side, side)
        plan = plan_queries(pilot, "base", n=int(n), mde=1.0, alpha=alpha, alternative=alternative)
        np.testing.assert_allclose(plan.table["sd_diff"], 1.0 / rows["d"], rtol=1e-13)
        got = plan.table["power"].to_numpy()
        assert np.isfinite(got).all(), (n, alpha, side)
        np.testing.assert_allclose(got, rows["power"], rtol=1e-9, atol=1e-13)
        checked += len(rows)
    assert checked == len(grid) == 546


def test_plan_in_clusters_at_high_noncentrality_is_rs_pwr(pilot):
    """The user's step: 30 passages at mde 0.341 gave power NaN on breast_cancer and wine;
    R computes the clustered SD per passage from the example and pwr's power."""
    ref = pd.read_csv(PWR / "pwr_example_clusters.csv").query("floored")
    acc = pilot.query("metric == 'accuracy'")
    acc = acc.assign(passage=acc["query"].astype(int) // 10)
    for mde, want in ref.groupby("mde"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MetaEvalWarning)  # the floor's (item 15)
            plan = plan_queries(acc, CONTROL, treatment="knn", n=30, mde=mde, cluster="passage")
        got = plan.table.set_index("task").loc[want["task"]]
        np.testing.assert_allclose(got["sd_cluster"], want["sd_cluster"], rtol=1e-10)
        np.testing.assert_allclose(got["power"], want["power"], rtol=1e-9, atol=1e-13)
        assert np.isfinite(plan.curve["power"]).all()


# --------------------------------------- a pilot's design effect below 1 (issue 39, item 15)
def _passages(seed: int = 71, passages: int = 20, size: int = 5) -> pd.DataFrame:
    """A pilot of 20 passages x 5 questions with independent differences (no clustering
    at all) whose clustered variance happens to be 0.71 of the naive one."""
    rng = np.random.default_rng(seed)
    d = rng.normal(0.1, 1, (passages, size)).ravel()
    q = np.arange(passages * size)
    base = pd.DataFrame(
        {
            "task": "t",
            "query": q,
            "system": "base",
            "metric": "m",
            "value": 0.0,
            "passage": q // size,
        }
    )
    return pd.concat([base, base.assign(system="new", value=d)], ignore_index=True)


def test_a_design_effect_below_1_is_floored_with_a_warning():
    """The user's step: 20 passages giving a design effect of 0.71 planned fewer questions
    than ignoring the passages. With the floor the plan in passages needs at least the
    questions of the naive plan (t on C' − 1 df, not n − 1), and the warning names the
    group and the pilot's value (tests/fixtures/design/deff_floor_simulation.py: a pilot
    design effect below 1 is noise in half the pilots of independent questions)."""
    pilot = _passages()
    naive = plan_queries(pilot, "base", mde=0.3, power=0.8).table.iloc[0]
    with pytest.warns(MetaEvalWarning, match="design effect is below 1 in 1 group") as caught:
        plan = plan_queries(pilot, "base", mde=0.3, power=0.8, cluster="passage")
    groups = caught[0].message.groups
    assert groups["task"].tolist() == ["t"] and groups["n_clusters"].tolist() == [20]
    # the pilot's own design effect, by the formula (CR1 over the naive variance)
    d = pilot.loc[pilot["system"] == "new", "value"].to_numpy()
    sums = (d - d.mean()).reshape(20, 5).sum(axis=1)
    pilot_deff = 20 / 19 * (sums**2).sum() / 100**2 / (d.var(ddof=1) / 100)
    assert round(pilot_deff, 2) == 0.71
    assert groups["pilot_design_effect"].item() == pytest.approx(pilot_deff, rel=1e-10)
    row = plan.table.iloc[0]
    assert row["design_effect"] == 1.0
    # σ_c² = V_naive·C: the t design on clusters with the naive variance (statsmodels)
    sd_c = d.std(ddof=1) * np.sqrt(20 / 100)
    assert row["sd_cluster"] == pytest.approx(sd_c, rel=1e-12)
    want = TTestPower().solve_power(effect_size=0.3 / sd_c, alpha=0.05, power=0.8)
    assert row["n"] == math.ceil(want)
    assert row["n_items"] >= naive["n"]
    # a design effect of 1 or more is the pilot's, as before
    clustered = pilot.assign(passage=pilot["query"] % 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        other = plan_queries(clustered, "base", mde=0.3, power=0.8, cluster="passage").table
    assert other["design_effect"].item() >= 1

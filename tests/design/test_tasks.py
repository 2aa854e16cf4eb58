"""plan_tasks: how many tasks a pooled comparison needs (issue 28, item 2).

The references are independent of the planner: the normal-theory power is written here
from Hedges & Pigott's formula with scipy, and the promised power of a plan is checked by
fresh simulated comparisons (another seed, drawn here with y ~ N(mde, v + τ²) directly,
not shifted) pooled by metaeval.pool, the analysis the plan is for.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import metaeval
from metaeval.design.tasks import plan_tasks

V, TAU2 = 0.01, 0.01  # within-task variance and between-task variance of the planned tasks


@pytest.fixture
def pilot() -> pd.DataFrame:
    """A pilot of six tasks, one comparison, within-task variance V on every task."""
    return pd.DataFrame(
        {
            "metric": "m",
            "task": list("abcdef"),
            "effect": [0.1, 0.3, -0.1, 0.2, 0.0, 0.25],
            "variance": V,
        }
    )


def normal_power(mde: float, v: float, tau2: float, k: int, alpha: float = 0.05) -> float:
    """Hedges & Pigott (2001): power of the two-sided z test of the pooled effect."""
    z = stats.norm.ppf(1 - alpha / 2)
    x = abs(mde) / np.sqrt((v + tau2) / k)
    return float(stats.norm.cdf(x - z) + stats.norm.cdf(-x - z))


def fresh_power(
    k: int,
    mde: float,
    *,
    tau2: float = TAU2,
    v: float = V,
    n: int = 3000,
    seed: int = 12345,
    method: str = "REML",
    ci: str | None = None,
) -> float:
    """The share of ``n`` fresh comparisons of ``k`` tasks (effects drawn around ``mde``)
    whose metaeval.pool interval excludes 0 on the side of ``mde``."""
    rng = np.random.default_rng(seed)
    y = rng.normal(mde, np.sqrt(v + tau2), size=(n, k))
    frame = pd.DataFrame(
        {
            "metric": np.repeat(np.arange(n), k),
            "task": np.tile(np.arange(k), n),
            "effect": y.ravel(),
            "variance": v,
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metaeval.MetaEvalWarning)  # simulated boundary fits
        res = metaeval.pool(frame, method=method, test=ci)
    hit = res["ci_low"] > 0 if mde > 0 else res["ci_high"] < 0
    return float(hit.mean())


def mc_error(p: float, n: int) -> float:
    return float(np.sqrt(p * (1 - p) / n))


# ------------------------------------------------------------------ known cases
@pytest.mark.parametrize("k", [3, 5, 8])
def test_common_effect_without_tau2_has_the_normal_theory_power(pilot, k):
    plan = plan_tasks(pilot, k=k, mde=0.15, tau2=0.0, method="EE", test="z", n_draws=4000, seed=1)
    row = plan.table.iloc[0]
    expected = normal_power(0.15, V, 0.0, k)
    assert row["power_normal"] == pytest.approx(expected, abs=1e-12)
    assert abs(row["power"] - expected) < 4 * mc_error(expected, 4000)
    assert (row["method"], row["test"], row["tau2_source"]) == ("EE", "z", "given")


def test_reml_knapp_hartung_at_few_tasks_has_less_power_than_the_normal_theory(pilot):
    plan = {k: plan_tasks(pilot, k=k, mde=0.25, tau2=TAU2, seed=2).table.iloc[0] for k in (3, 4, 5)}
    for k, row in plan.items():
        assert row["power_normal"] == pytest.approx(normal_power(0.25, V, TAU2, k), abs=1e-12)
        # e.g. k = 3: 0.40 simulated against 0.86 normal-theory; k = 5: 0.83 against 0.98
        assert row["power"] < row["power_normal"] - 0.1, (k, row["power"], row["power_normal"])
        assert (row["method"], row["test"]) == ("REML", "knha")


def test_the_planned_number_of_tasks_reaches_the_promised_power(pilot):
    plan = plan_tasks(pilot, mde=0.25, power=0.8, tau2=TAU2, seed=3)
    row = plan.table.iloc[0]
    k = int(row["k"])
    assert row["power"] >= 0.8
    assert k > row["k_normal"]  # the normal theory promises too much at few tasks
    assert row["k_normal"] == min(n for n in range(2, 100) if normal_power(0.25, V, TAU2, n) >= 0.8)
    reached = fresh_power(k, 0.25)
    short = fresh_power(k - 1, 0.25)
    assert reached >= 0.77, reached
    assert short < 0.77 - 0.05, short  # one task fewer falls clearly short (0.66 for k − 1 = 4)


def test_the_solved_mde_is_detected_with_the_promised_power(pilot):
    plan = plan_tasks(pilot, k=6, power=0.8, tau2=TAU2, seed=4)
    row = plan.table.iloc[0]
    assert row["power"] >= 0.8 and row["k"] == 6
    # the normal-theory mde solves Hedges & Pigott's power = 0.8, and is too optimistic
    assert normal_power(row["mde_normal"], V, TAU2, 6) == pytest.approx(0.8, abs=1e-9)
    assert row["mde"] > row["mde_normal"]
    # fresh comparisons with their mean at the solved mde: power 0.8 within Monte-Carlo error
    assert abs(fresh_power(6, row["mde"]) - 0.8) < 4 * mc_error(0.8, 3000) + 4 * mc_error(0.8, 2000)


def test_shifting_the_simulated_intervals_is_pooling_the_shifted_effects(pilot):
    """The planner pools comparisons with mean 0 and shifts their intervals by mde
    (location equivariance of τ̂², weights and Knapp–Hartung's interval). Pooling the
    same draws around mde directly gives the same decisions."""
    k, n_draws, seed, mde = 4, 500, 21, 0.25
    plan = plan_tasks(pilot, k=k, mde=mde, tau2=TAU2, seed=seed, n_draws=n_draws)
    # the planner's draws: one generator of the seed, task by task, n_draws per task
    z = np.random.default_rng(seed).standard_normal((k, n_draws))
    y = mde + np.sqrt(V + TAU2) * z.T
    frame = pd.DataFrame(
        {
            "metric": np.repeat(np.arange(n_draws), k),
            "task": np.tile(np.arange(k), n_draws),
            "effect": y.ravel(),
            "variance": V,
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metaeval.MetaEvalWarning)
        direct = float((metaeval.pool(frame)["ci_low"] > 0).mean())
    assert abs(plan.table["power"].iloc[0] - direct) <= 2 / n_draws


def test_a_negative_mde_is_planned_in_its_direction(pilot):
    up = plan_tasks(pilot, k=5, mde=0.25, tau2=TAU2, seed=5).table.iloc[0]
    down = plan_tasks(pilot, k=5, mde=-0.25, tau2=TAU2, seed=5).table.iloc[0]
    assert abs(up["power"] - down["power"]) < 4 * mc_error(0.8, 2000) * np.sqrt(2)
    assert abs(down["power"] - fresh_power(5, -0.25)) < 0.05


# ------------------------------------------------------------------ the pilot
def test_the_pilot_gives_tau2_and_the_mean_variance_of_each_group():
    eff = metaeval.load_example().meta.effects("logistic_regression", effect="md")
    plan = plan_tasks(eff, k=4, mde=0.02, seed=1, n_draws=200)
    keys = ["effect_type", "metric", "treatment", "control"]
    pooled = metaeval.pool(eff).set_index(keys)
    means = eff.groupby(keys)["variance"].mean()
    table = plan.table.set_index(keys)
    assert len(table) == len(pooled) == 8
    np.testing.assert_allclose(table["tau2"], pooled.loc[table.index, "tau2"], rtol=1e-12)
    np.testing.assert_allclose(table["variance"], means.loc[table.index], rtol=1e-12)
    assert (table["pilot_k"] == 4).all() and (table["tau2_source"] == "pilot").all()
    given = plan_tasks(eff, k=4, mde=0.02, tau2=0.001, variance=0.002, seed=1, n_draws=200)
    assert (given.table["tau2"] == 0.001).all() and (given.table["variance"] == 0.002).all()
    assert (given.table["tau2_source"] == "given").all()


def test_the_pilot_table_is_not_changed(pilot):
    before = pilot.copy()
    plan_tasks(pilot, k=4, mde=0.2, seed=1, n_draws=200)
    pd.testing.assert_frame_equal(pilot, before)


def test_a_group_without_a_pilot_tau2_is_nan_with_a_warning_naming_it(pilot):
    one = pd.DataFrame({"metric": "lonely", "task": ["a"], "effect": [0.1], "variance": [V]})
    both = pd.concat([pilot, one], ignore_index=True)
    with pytest.warns(metaeval.DegenerateWarning) as caught:  # pool()'s k = 1, and the plan's
        plan = plan_tasks(both, mde=0.25, power=0.8, seed=1, n_draws=200)
    mine = [str(w.message) for w in caught if "give `tau2=`" in str(w.message)]
    assert len(mine) == 1 and "metric='lonely'" in mine[0] and "'m'" not in mine[0]
    table = plan.table.set_index("metric")
    assert pd.isna(table.loc["lonely", "k"]) and np.isnan(table.loc["lonely", "power"])
    assert table.loc["m", "k"] >= 2 and table.loc["m", "power"] >= 0.8
    assert set(plan.curve["metric"]) == {"m"}


def test_a_group_needing_more_than_a_thousand_tasks_is_na_with_a_warning(pilot):
    # the normal theory already needs (1.96 + 0.84)² (V + τ²)/mde² ≈ 47,000 tasks
    with pytest.warns(metaeval.DegenerateWarning, match="more than 1000 tasks") as caught:
        plan = plan_tasks(pilot, mde=0.002, power=0.8, seed=1, n_draws=100)
    assert "metric='m'" in str(caught[0].message)
    row = plan.table.iloc[0]
    assert pd.isna(row["k"]) and np.isnan(row["power"]) and row["k_normal"] > 1000
    assert plan.curve.empty


# ------------------------------------------------------------------ result and seed
def test_a_seeded_plan_is_reproducible_and_reports_its_seed(pilot):
    a = plan_tasks(pilot, mde=0.25, power=0.8, tau2=TAU2, seed=7, n_draws=500)
    b = plan_tasks(pilot, mde=0.25, power=0.8, tau2=TAU2, seed=7, n_draws=500)
    pd.testing.assert_frame_equal(a.table, b.table)
    pd.testing.assert_frame_equal(a.curve, b.curve)
    drawn = plan_tasks(pilot, k=4, mde=0.25, tau2=TAU2, n_draws=500)
    seed = int(drawn.table["seed"].iloc[0])
    again = plan_tasks(pilot, k=4, mde=0.25, tau2=TAU2, n_draws=500, seed=seed)
    pd.testing.assert_frame_equal(drawn.table, again.table)


def test_the_curve_runs_from_two_tasks_to_twice_the_plan(pilot):
    plan = plan_tasks(pilot, mde=0.25, power=0.8, tau2=TAU2, seed=3)
    k = int(plan.table["k"].iloc[0])
    assert plan.unit == "tasks" and isinstance(plan, metaeval.design.PowerResult)
    assert list(plan.curve.columns) == ["metric", "size", "power", "target"]
    assert list(plan.curve["size"]) == list(range(2, max(2 * k, 10) + 1))
    assert (plan.curve["target"] == 0.8).all()
    at_k = plan.curve.set_index("size")["power"]
    assert at_k[k] == plan.table["power"].iloc[0]  # the same draws
    assert at_k[k - 1] < 0.8 <= at_k[k]
    solved_power = plan_tasks(pilot, k=4, mde=0.25, tau2=TAU2, seed=3, n_draws=200)
    assert solved_power.curve["target"].isna().all()


def test_the_table_has_the_documented_columns(pilot):
    common = ["k", "mde", "power", "power_normal"]
    rest = ["tau2", "tau2_source", "variance", "pilot_k", "method", "test", "n_draws", "seed"]
    by_k = plan_tasks(pilot, mde=0.25, power=0.8, seed=1, n_draws=200).table
    by_mde = plan_tasks(pilot, k=4, power=0.8, seed=1, n_draws=200).table
    by_power = plan_tasks(pilot, k=4, mde=0.25, seed=1, n_draws=200).table
    assert list(by_k.columns) == ["metric", *common, "k_normal", *rest]
    assert list(by_mde.columns) == ["metric", *common, "mde_normal", *rest]
    assert list(by_power.columns) == ["metric", *common, *rest]
    assert by_k["k"].dtype == "Int64" and by_power["n_draws"].iloc[0] == 200


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"k": 4, "mde": 0.1, "power": 0.8}, "`k`, `mde` and `power`"),
        ({}, "`k`, `mde` and `power`"),
        ({"k": 4}, "`k`, `mde` and `power`"),
        ({"mde": 0.1, "power": 1.0}, "`power`"),
        ({"mde": 0.1, "power": 0.04}, "`power`"),
        ({"mde": 0.1, "power": 0.05}, "`power`"),
        ({"k": 1, "mde": 0.1}, "`k`"),
        ({"k": 1001, "mde": 0.1}, "`k`"),
        ({"k": 4.0, "mde": 0.1}, "`k`"),
        ({"k": 4, "mde": 0.0}, "`mde`"),
        ({"k": 4, "mde": float("nan")}, "`mde`"),
        ({"k": 4, "mde": 0.1, "tau2": -0.1}, "`tau2`"),
        ({"k": 4, "mde": 0.1, "variance": 0.0}, "`variance`"),
        ({"k": 4, "mde": 0.1, "n_draws": 10}, "`n_draws`"),
        ({"k": 4, "mde": 0.1, "method": "dl2"}, "`method`"),
        ({"k": 4, "mde": 0.1, "test": "tdist"}, "`test`"),
        ({"k": 4, "mde": 0.1, "seed": -1}, "`seed`"),
        ({"k": 4, "mde": 0.1, "alpha": 2}, "`alpha`"),
    ],
)
def test_bad_options_are_option_errors_naming_the_argument(pilot, kwargs, named):
    with pytest.raises(metaeval.OptionError, match=named.replace("`", ".")):
        plan_tasks(pilot, **kwargs)


@pytest.mark.parametrize("option", ["method", "test"])
def test_a_bogus_option_is_named_before_the_missing_sizes(pilot, option):
    with pytest.raises(metaeval.OptionError, match=f"`{option}` must be one of"):
        plan_tasks(pilot, **{option: "bogus_value"})


def test_an_empty_or_non_effects_table_is_a_schema_error(pilot):
    with pytest.raises(metaeval.SchemaError, match="`effects` is an empty"):
        plan_tasks(pilot.iloc[:0], k=4, mde=0.1)
    scores = metaeval.load_example()
    with pytest.raises(metaeval.SchemaError, match="`effects` must be a pilot effects table"):
        plan_tasks(scores, k=4, mde=0.1)
    with pytest.raises(metaeval.SchemaError, match="not list"):
        plan_tasks([1, 2], k=4, mde=0.1)


@pytest.mark.parametrize("start", [2, 5, 40, 90])
def test_the_search_for_k_finds_the_smallest_k_from_any_start(start):
    """The windows move down when their first k already reaches the power, up when none
    does: from any normal-theory start, the answer is the smallest k whose simulated
    power (the same draws) reaches the target, found here by trying k = 2, 3, ... ."""
    from metaeval.design.tasks import _Simulation

    sd = np.array([np.sqrt(V + TAU2), np.sqrt(V)])
    sim = _Simulation(
        sd, np.array([V, V]), method="REML", test="knha", alpha=0.05, n_draws=400, seed=11
    )
    both = np.array([0, 1])
    found = sim.solve_k(both, 0.2, 0.8, np.array([start, start]))
    naive = [
        next(
            k
            for k in range(2, 60)
            if sim.power(np.array([g]), np.array([k]), np.array([0.2]))[0] >= 0.8
        )
        for g in both
    ]
    assert list(found) == naive

"""metaeval.facets (issue 42): variance components and facet-aware standard errors,
against lme4 / lmerTest / pbkrtest (tests/fixtures/facets, with the R script that made the
values) and by a coverage simulation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import metaeval
from metaeval import OptionError, SchemaError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "facets"


def _design(rng, tasks: int, queries: int = 40, prompts: int = 4, seeds: int = 2):
    """Two systems (b better by 0.2) on queries × prompts × seeds, with a query, prompt
    and seed effect, system × query and system × prompt interactions (the prompt changes
    the systems' difference: what an item-only SE misses) and noise."""
    grid = np.meshgrid(
        np.arange(tasks),
        np.arange(queries),
        np.arange(prompts),
        np.arange(seeds),
        np.arange(2),
        indexing="ij",
    )
    t, q, p, s, m = (a.ravel() for a in grid)
    value = (
        rng.normal(0, 1.0, (tasks, queries))[t, q]
        + rng.normal(0, 0.3, (tasks, prompts))[t, p]
        + rng.normal(0, 0.1, (tasks, seeds))[t, s]
        + rng.normal(0, 0.4, (tasks, 2, queries))[t, m, q]
        + rng.normal(0, 0.25, (tasks, 2, prompts))[t, m, p]
        + 0.2 * m
        + rng.normal(0, 0.5, len(t))
    )
    return pd.DataFrame(
        {
            "task": t.astype(str),
            "query": q,
            "prompt": p,
            "seed": s,
            "system": np.where(m == 1, "b", "a"),
            "metric": "m",
            "value": value,
        }
    )


@pytest.mark.slow
def test_facet_aware_intervals_cover_where_item_only_ones_do_not():
    rng = np.random.default_rng(1)
    table = _design(rng, 100)
    res = metaeval.facets(table, ["query", "prompt", "seed"], control="a")
    p = res.pairs
    covered = ((p["ci_low"] <= 0.2) & (0.2 <= p["ci_high"])).mean()
    crit = stats.t.isf(0.025, 40 - 1)
    item_only = (
        (p["effect"] - crit * p["naive_se"] <= 0.2) & (0.2 <= p["effect"] + crit * p["naive_se"])
    ).mean()
    print(
        f"\n100 tasks of 40 queries x 4 prompts x 2 seeds, 2 systems: 95% intervals of the paired"
        f" difference cover {covered:.3f} (facet-aware, Satterthwaite df median "
        f"{p['df'].median():.1f}) and {item_only:.3f} (item-only, t on 39 df); the facet-aware "
        f"SE is {p['se_ratio'].mean():.2f} times the item-only one"
    )
    assert covered >= 0.92  # Monte-Carlo error ±2.2% at 100 tasks
    assert item_only <= 0.85
    assert p["se_ratio"].mean() > 1.5


def test_one_system_gives_components_only():
    rng = np.random.default_rng(2)
    table = _design(rng, 1, seeds=1)
    one = table[table["system"] == "a"]
    res = metaeval.facets(one, ["query", "prompt"])
    assert res.components["component"].tolist() == ["query", "prompt", "residual"]
    assert res.pairs.empty and len(res.table) == 1
    assert res.g["g_relative"].isna().all()


def test_the_pairs_are_an_effects_table_pool_pools():
    rng = np.random.default_rng(3)
    res = metaeval.facets(_design(rng, 3, queries=20, seeds=1), ["query", "prompt"], control="a")
    pooled = metaeval.pool(res.pairs, method="EE")
    w = 1 / res.pairs["variance"]
    assert pooled["effect"].item() == pytest.approx((w * res.pairs["effect"]).sum() / w.sum())


def test_bad_input():
    rng = np.random.default_rng(4)
    table = _design(rng, 1, queries=10)
    with pytest.raises(SchemaError, match="names \\['promptt'\\], which the table lacks"):
        metaeval.facets(table, ["query", "promptt"])
    with pytest.raises(SchemaError, match="The facet 'prompt' has one level in task '0'"):
        metaeval.facets(table[table["prompt"] == 0], ["query", "prompt", "seed"])
    with pytest.raises(
        SchemaError, match=r"share their.*add to random= \(columns that vary among them: \['seed'\]"
    ):
        metaeval.facets(table, ["query", "prompt"])
    with pytest.raises(SchemaError, match="facet column 'prompt' has missing values"):
        metaeval.facets(
            table.assign(prompt=table["prompt"].where(table.index > 0)), ["query", "prompt", "seed"]
        )
    with pytest.raises(OptionError, match="method"):
        metaeval.facets(table, ["query", "prompt", "seed"], method="ANOVAS")
    with pytest.raises(OptionError, match="interactions"):
        metaeval.facets(table, ["query", "prompt", "seed"], interactions=[("query", "judge")])
    with pytest.raises(SchemaError, match="control 'z' has no scores"):
        metaeval.facets(table, ["query", "prompt", "seed"], control="z")


def test_the_d_study_at_the_observed_counts_is_the_models_se_and_the_plan_is_the_cheapest():
    rng = np.random.default_rng(6)
    res = metaeval.facets(_design(rng, 2), ["query", "prompt", "seed"], control="a")
    given = res.plan(n={"query": 40})
    rows = given.table[given.table["design"] == "given"]
    np.testing.assert_allclose(rows["se"], res.pairs["se"], rtol=1e-6)  # balanced: exact
    costs = {"query": 1, "prompt": 50, "seed": 200}
    planned = res.plan(costs=costs, target_se=0.07)
    best = planned.table[planned.table["design"] == "planned"].iloc[0]
    assert best["se"] <= 0.07
    # brute force over the same grid with the components written out
    comp = res.components[res.components["task"] == "0"].set_index("component")["variance"]
    q = np.unique(np.round(np.geomspace(10, 320, 40)))
    grid = np.stack(np.meshgrid(q, np.arange(1, 17), np.arange(1, 17), indexing="ij"), -1).reshape(
        -1, 3
    )
    se = np.sqrt(
        2
        * (
            comp["system:query"] / grid[:, 0]
            + comp["system:prompt"] / grid[:, 1]
            + comp["system:seed"] / grid[:, 2]
            + comp["residual"] / grid.prod(1)
        )
    )
    cost = grid @ np.array([1, 50, 200])
    assert best["cost"] == cost[se <= 0.07].min()
    fig = planned.plot()
    assert len(fig.axes[0].lines) == 3  # two tasks' curves and the target
    with pytest.warns(metaeval.DegenerateWarning, match="reaches the target in 2"):
        unreachable = res.plan(costs=costs, target_se=0.001)
    assert unreachable.table.loc[unreachable.table["design"] == "planned", "se"].isna().all()


@pytest.mark.slow
def test_the_projected_se_is_the_se_realised_at_the_planned_counts():
    """The D study's SE at planned counts, from the simulation's own components, against
    the spread of the paired differences of 300 simulated designs of those counts (the
    formula; with estimated components its error is the pilot's: a prompt × system
    variance from 8 prompts is uncertain by about half)."""
    from metaeval.variance.plan import plan

    truth = pd.DataFrame(
        {
            "task": "t",
            "metric": "m",
            "component": ["query", "prompt", "seed", "system:query", "system:prompt", "residual"],
            "variance": [1.0, 0.09, 0.01, 0.16, 0.0625, 0.25],
            "n_levels": [40, 4, 2, 40, 4, np.nan],
        }
    )
    planned = plan(
        truth,
        ["query", "prompt", "seed"],
        costs={"query": 1, "prompt": 40, "seed": 100},
        target_se=0.1,
    )
    row = planned.table[planned.table["design"] == "planned"].iloc[0]
    nq, npr, ns = int(row["n_query"]), int(row["n_prompt"]), int(row["n_seed"])
    rng = np.random.default_rng(7)
    sims = _design(rng, 300, queries=nq, prompts=npr, seeds=ns)
    means = sims.groupby(["task", "system"])["value"].mean().unstack()
    realised = (means["b"] - means["a"]).std(ddof=1)
    print(
        f"\nplanned {nq} queries x {npr} prompts x {ns} seeds: projected SE {row['se']:.4f}, "
        f"realised {realised:.4f} over 300 simulated designs"
    )
    assert realised == pytest.approx(row["se"], rel=0.10)  # Monte-Carlo error about ±4%

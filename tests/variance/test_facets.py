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

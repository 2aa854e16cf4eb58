"""power(): one verb on two table kinds (issue 28) — plan_queries for a scores table,
plan_tasks for an effects table, typed errors for anything else."""

from __future__ import annotations

import pandas as pd
import pytest

import metaeval
from metaeval.design import plan_queries, plan_tasks
from metaeval.errors import OptionError, TableKindError

CONTROL = "logistic_regression"


@pytest.fixture(scope="module")
def accuracy() -> pd.DataFrame:
    scores = metaeval.load_example()
    return scores[scores["metric"] == "accuracy"]


def test_a_scores_table_plans_queries_and_an_effects_table_plans_tasks(accuracy):
    by_verb = metaeval.power(accuracy, CONTROL, mde=0.02, power=0.8)
    direct = plan_queries(accuracy, CONTROL, mde=0.02, power=0.8)
    pd.testing.assert_frame_equal(by_verb.table, direct.table)
    assert by_verb.unit == "queries"
    effects = accuracy.meta.effects(CONTROL, treatment="knn", effect="md")
    by_method = effects.meta.power(k=6, power=0.8, seed=3, n_draws=500)
    direct = plan_tasks(effects, k=6, power=0.8, seed=3, n_draws=500)
    pd.testing.assert_frame_equal(by_method.table, direct.table)
    assert by_method.unit == "tasks"
    # the accessor's power on scores is the same call
    pd.testing.assert_frame_equal(
        accuracy.meta.power(CONTROL, mde=0.02, power=0.8).table,
        plan_queries(accuracy, CONTROL, mde=0.02, power=0.8).table,
    )


def test_the_wrong_table_or_control_is_a_typed_error(accuracy):
    effects = accuracy.meta.effects(CONTROL, effect="md")
    with pytest.raises(OptionError, match="control="):
        metaeval.power(accuracy, mde=0.02, power=0.8)
    with pytest.raises(OptionError, match="leave out control="):
        metaeval.power(effects, CONTROL, k=5, power=0.8)
    pooled = metaeval.pool(effects)
    with pytest.raises(TableKindError, match="pilot scores table"):
        metaeval.power(pooled, k=5, power=0.8)

"""leaderboard(aggregation="pooled", test=...) takes every interval of pool(), "adhoc" included, and
says so (issue 39, item 31: the CHANGELOG of issue 29 credited ci="adhoc" to rank_report(),
which pools nothing; leaderboard() is the ranking function that pools)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import metaeval
from metaeval import leaderboard
from metaeval.workflows import rank_report


@pytest.mark.parametrize("test", ["z", "knha", "adhoc"])
def test_the_pooled_leaderboard_reports_pools_interval(test):
    scores = metaeval.load_example().query("metric == 'accuracy'")
    board = leaderboard(scores, aggregation="pooled", control="logistic_regression", test=test)
    pooled = metaeval.pool(metaeval.effects(scores, "logistic_regression"), test=test)
    got = board.set_index("system").loc[pooled["treatment"], ["ci_low", "ci_high", "p_value"]]
    np.testing.assert_array_equal(got.to_numpy(), pooled[["ci_low", "ci_high", "p_value"]])
    assert board.attrs["test"] == test


def test_the_documented_intervals_are_pools_and_rank_report_takes_none():
    doc = inspect.getdoc(leaderboard)
    line = next(x for x in doc.splitlines() if x.startswith("test : "))
    assert all(f'"{c}"' in line for c in metaeval.pooling.CI_METHODS), line
    assert "ci" not in inspect.signature(rank_report).parameters  # it pools nothing

"""leaderboard(method="meta", ci=...) takes every interval of pool(), "adhoc" included, and
says so (issue 39, item 31: the CHANGELOG of issue 29 credited ci="adhoc" to rank_report(),
which pools nothing; leaderboard() is the ranking function that pools)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import metaeval
from metaeval.ranking import leaderboard
from metaeval.workflows import rank_report


@pytest.mark.parametrize("ci", ["z", "knha", "adhoc"])
def test_the_meta_leaderboard_reports_pools_interval(ci):
    scores = metaeval.load_example().query("metric == 'accuracy'")
    board = leaderboard(scores, method="meta", control="logistic_regression", ci=ci)
    pooled = metaeval.pool(metaeval.effects(scores, "logistic_regression"), test=ci)
    got = board.set_index("system").loc[pooled["treatment"], ["ci_low", "ci_high", "p_value"]]
    np.testing.assert_array_equal(got.to_numpy(), pooled[["ci_low", "ci_high", "p_value"]])
    assert board.attrs["ci"] == ci


def test_the_documented_intervals_are_pools_and_rank_report_takes_none():
    doc = inspect.getdoc(leaderboard)
    line = next(x for x in doc.splitlines() if x.startswith("ci : "))
    assert all(f'"{c}"' in line for c in metaeval.pooling.CI_METHODS), line
    assert "ci" not in inspect.signature(rank_report).parameters  # it pools nothing

"""metaeval.plot.rank_plot: systems by rank with their rank intervals."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval.errors import OptionError, SchemaError


def table() -> pd.DataFrame:
    """A hand-made rank_intervals() table: two metrics, tie groups 1, 1, 2 and 1, 2, 3."""
    out = pd.DataFrame(
        {
            "metric": ["acc"] * 3 + ["f1"] * 3,
            "system": ["B", "A", "C", "A", "C", "B"],
            "score": [0.9, 0.8, 0.1, 0.7, 0.5, 0.2],
            "rank": [1, 2, 3, 1, 2, 3],
            "rank_low": [1, 1, 3, 1, 2, 3],
            "rank_high": [2, 2, 3, 1, 2, 3],
            "tie_group": [1, 1, 2, 1, 2, 3],
        }
    )
    out.attrs = {"alpha": 0.1, "simultaneous": False}
    return out


def test_one_panel_per_metric_best_at_the_top():
    fig = metaeval.plot.rank_plot(table())
    assert len(fig.axes) == 2
    assert fig._suptitle.get_text() == "90% marginal rank intervals"
    for ax, (metric, part) in zip(fig.axes, table().groupby("metric", sort=False), strict=True):
        assert ax.get_title() == metric
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert labels == part["system"].tolist()
        ylow, yhigh = ax.get_ylim()
        assert ylow > yhigh  # row 0 (the best) at the top
        (bars,) = [c for c in ax.collections if c.get_gid() == "rank-intervals"]
        segments = bars.get_segments()
        assert [(s[0][0], s[1][0]) for s in segments] == list(
            zip(part["rank_low"].astype(float), part["rank_high"].astype(float), strict=True)
        )
        colours = [tuple(c) for c in bars.get_colors()]
        # the same colour within a tie group, another between groups
        same = [colours[i] == colours[j] for i in range(3) for j in range(3)]
        group = part["tie_group"].tolist()
        assert same == [group[i] == group[j] for i in range(3) for j in range(3)]
        (points,) = [c for c in ax.collections if c.get_gid() == "rank-points"]
        np.testing.assert_array_equal(points.get_offsets()[:, 0], part["rank"])


def test_into_an_axes_and_bad_tables():
    _, ax = plt.subplots()
    one = table().query("metric == 'acc'")
    assert metaeval.plot.rank_plot(one, ax=ax) is ax
    with pytest.raises(OptionError, match="one metric"):
        metaeval.plot.rank_plot(table(), ax=ax)
    with pytest.raises(SchemaError, match="tie_group"):
        metaeval.plot.rank_plot(table().drop(columns="tie_group"))
    with pytest.raises(OptionError, match="empty"):
        metaeval.plot.rank_plot(table().iloc[:0])


def test_draws_what_rank_intervals_returns(scores):
    result = metaeval.rank_intervals(scores, n_resamples=50, seed=1)
    fig = metaeval.plot.rank_plot(result)
    assert len(fig.axes) == result["metric"].nunique()

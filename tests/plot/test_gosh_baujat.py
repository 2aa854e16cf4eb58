"""The GOSH and Baujat plots: what they draw (the artists hold the result's numbers)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import OptionError, SchemaError
from metaeval.plot import baujat_plot, gosh_plot


def _effects(k=6, seed=0, groups=("a",)) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    v = rng.uniform(0.002, 0.03, size=k * len(groups))
    return pd.DataFrame(
        {
            "metric": np.repeat(groups, k),
            "task": [f"t{i}" for i in range(k)] * len(groups),
            "effect": rng.normal(0.1, np.sqrt(v + 0.01)),
            "variance": v,
        }
    )


def _by_gid(ax, gid):
    found = [c for c in ax.collections if c.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


def test_gosh_plot_points_are_the_subsets():
    res = metaeval.gosh(_effects(), method="DL")
    fig = res.plot()
    main = fig.axes[0]
    xy = _by_gid(main, "gosh-points").get_offsets()
    np.testing.assert_allclose(xy[:, 0], res.table["effect"])
    np.testing.assert_allclose(xy[:, 1], res.table["i2"])
    assert main.get_xlabel() == "estimate" and main.get_ylabel().startswith("I²")
    assert {ax.get_gid() for ax in fig.axes[1:]} == {"gosh-top", "gosh-right"}


def test_gosh_plot_colours_by_task():
    res = metaeval.gosh(_effects(), method="REML")
    main = gosh_plot(res, task="t2").axes[0]
    with_t2 = res.included["t2"].to_numpy()
    np.testing.assert_allclose(
        _by_gid(main, "gosh-with").get_offsets()[:, 0], res.table["effect"][with_t2]
    )
    np.testing.assert_allclose(
        _by_gid(main, "gosh-without").get_offsets()[:, 0], res.table["effect"][~with_t2]
    )
    assert len(_by_gid(main, "gosh-with").get_offsets()) == 2**5


def test_gosh_plot_hexbin_and_ax():
    import matplotlib.pyplot as plt

    res = metaeval.gosh(_effects(), method="DL")
    _, ax = plt.subplots()
    out = gosh_plot(res, hexbin=True, ax=ax)
    assert out is ax and _by_gid(ax, "gosh-hexbin") is not None


def test_gosh_plot_refuses():
    res = metaeval.gosh(_effects(groups=("a", "b")), method="DL", groups="metric")
    with pytest.raises(OptionError, match="select"):
        res.plot()
    with pytest.raises(OptionError, match="`task`"):
        res.select(metric="a").plot(task="nope")
    with pytest.raises(SchemaError, match="GoshResult"):
        gosh_plot(res.table)


def test_baujat_plot_points_and_labels():
    bj = metaeval.baujat(_effects())
    ax = baujat_plot(bj).axes[0]
    np.testing.assert_allclose(_by_gid(ax, "baujat-points").get_offsets(), bj[["x", "y"]])
    assert [t.get_text() for t in ax.texts] == list(bj["task"])
    assert not baujat_plot(bj, labels=False).axes[0].texts


def test_baujat_plot_refuses():
    bj = metaeval.baujat(_effects(groups=("a", "b")), groups="metric")
    with pytest.raises(OptionError, match="one group"):
        baujat_plot(bj)
    assert baujat_plot(bj.query("metric == 'a'")).axes[0].get_title() == "metric=a"
    with pytest.raises(SchemaError, match="baujat"):
        baujat_plot(bj.drop(columns="y"))

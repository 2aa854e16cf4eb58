"""The bubble plot of a meta-regression: what it draws, checked against statsmodels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import OptionError, SchemaError
from metaeval.plot import bubble


def _effects(seed=0, k=15) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.uniform(3, 7, size=k)
    v = rng.uniform(0.002, 0.03, size=k)
    return pd.DataFrame({
        "metric": "nDCG@10", "treatment": "new", "control": "bm25",
        "task": [f"t{i}" for i in range(k)],
        "effect": 0.5 - 0.08 * x + rng.normal(0, np.sqrt(v)),
        "variance": v, "log_n": x, "domain": rng.choice(["web", "bio"], size=k),
    })  # fmt: skip


def _artist(ax, gid):
    found = [a for a in [*ax.lines, *ax.collections] if a.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


def test_line_and_band_equal_statsmodels_prediction():
    """EE model: the line is WLS's prediction, the band its normal CI (se / √scale)."""
    sm = pytest.importorskip("statsmodels.api")
    eff = _effects()
    res = metaeval.metareg(eff, "log_n", method="EE")
    fig = bubble(res)
    ax = fig.axes[0]
    xs, ys = _artist(ax, "bubble-fit").get_data()
    wls = sm.WLS(eff["effect"], sm.add_constant(eff["log_n"]), weights=1 / eff["variance"]).fit()
    pred = wls.get_prediction(sm.add_constant(pd.Series(xs, name="log_n"))).summary_frame()
    np.testing.assert_allclose(ys, pred["mean"], rtol=1e-10)
    band = _artist(ax, "bubble-ci").get_paths()[0].vertices
    half = 1.959963984540054 * pred["mean_se"].to_numpy() / np.sqrt(wls.scale)
    for edge in (ys - half, ys + half):  # every point of both edges is a vertex of the band
        nearest = np.abs(band[None, :, :] - np.column_stack([xs, edge])[:, None, :]).sum(axis=2)
        assert nearest.min(axis=1).max() < 1e-9
    assert xs.min() == eff["log_n"].min() and xs.max() == eff["log_n"].max()


def test_points_sized_by_weight_and_other_moderators_at_their_means():
    eff = _effects(1)
    res = metaeval.metareg(eff, ["log_n", "domain"])
    ax = bubble(res, "log_n").axes[0]
    points = _artist(ax, "bubble-points")
    np.testing.assert_allclose(points.get_offsets()[:, 1], eff["effect"])
    weight = res.attrs["data"]["weight"].to_numpy()
    np.testing.assert_allclose(points.get_sizes() / points.get_sizes().sum(), weight / weight.sum())
    xs, ys = _artist(ax, "bubble-fit").get_data()
    b = res.set_index("term")["estimate"]
    share = (eff["domain"] == "web").mean()  # domain[T.web] held at its share
    np.testing.assert_allclose(ys, b["intercept"] + b["log_n"] * xs + b["domain[T.web]"] * share)
    assert ax.get_title() == "nDCG@10: new vs bm25"
    assert ax.get_ylabel() == "effect"


def test_accessor_and_ax():
    import matplotlib.pyplot as plt

    res = _effects().meta.metareg("log_n")
    fig, ax = plt.subplots()
    assert res.meta.bubble(ax=ax, ci=False) is ax
    assert not [c for c in ax.collections if c.get_gid() == "bubble-ci"]


def test_errors():
    eff = pd.concat([_effects(0), _effects(1).assign(metric="AP")], ignore_index=True)
    res = metaeval.metareg(eff, ["log_n", "domain"])
    with pytest.raises(OptionError, match="holds 2"):
        bubble(res)
    one = res[res["metric"] == "AP"]
    assert bubble(one, "log_n").axes[0].get_title().startswith("AP")
    with pytest.raises(OptionError, match="numeric moderator"):
        bubble(one, "domain")
    with pytest.raises(OptionError, match="numeric moderators of the model"):
        bubble(metaeval.metareg(_effects().assign(x=1.0 * np.arange(15)), ["log_n", "x"]))
    with pytest.raises(OptionError, match="factors only"):
        bubble(metaeval.metareg(_effects(), "domain"))
    plain = res.copy()
    plain.attrs = {}
    with pytest.raises(SchemaError, match="as metareg"):
        bubble(plain)


def test_names_with_dollars_are_shown_literally(tmp_path):
    """Issue 25, item 21: a moderator (or system) named with ``$`` is no mathtext."""
    from matplotlib import cbook

    mod = "cost ($) per query ($)"
    eff = _effects().rename(columns={"log_n": mod}).assign(treatment="$5 model", control="bm25$")
    fig = bubble(metaeval.metareg(eff, mod, method="EE"))
    ax = fig.axes[0]
    for text, shown in ((ax.xaxis.label, mod), (ax.title, "nDCG@10: $5 model vs bm25$")):
        assert not cbook.is_math_text(text.get_text()), text.get_text()  # no mathtext
        assert text.get_text() == shown.replace("$", r"\$")
        assert text._preprocess_math(text.get_text()) == (shown, False)  # what is drawn
    fig.savefig(tmp_path / "bubble.png", dpi=80)
    assert (tmp_path / "bubble.png").stat().st_size > 1000

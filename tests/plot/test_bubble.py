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
    return pd.DataFrame(
        {
            "metric": "nDCG@10",
            "treatment": "new",
            "control": "bm25",
            "task": [f"t{i}" for i in range(k)],
            "effect": 0.5 - 0.08 * x + rng.normal(0, np.sqrt(v)),
            "variance": v,
            "log_n": x,
            "domain": rng.choice(["web", "bio"], size=k),
        }
    )


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
    weight = res.data["weight"].to_numpy()
    np.testing.assert_allclose(points.get_sizes() / points.get_sizes().sum(), weight / weight.sum())
    xs, ys = _artist(ax, "bubble-fit").get_data()
    b = res.table.set_index("term")["estimate"]
    share = (eff["domain"] == "web").mean()  # domain[T.web] held at its share
    np.testing.assert_allclose(ys, b["intercept"] + b["log_n"] * xs + b["domain[T.web]"] * share)
    assert ax.get_title() == "nDCG@10: new vs bm25"
    assert ax.get_ylabel() == "effect"


def test_plot_method_and_ax():
    import matplotlib.pyplot as plt

    res = _effects().meta.metareg("log_n")
    fig, ax = plt.subplots()
    assert res.plot(ax=ax, band=False) is ax
    assert not [c for c in ax.collections if c.get_gid() == "bubble-ci"]
    assert len(_artist(ax, "bubble-points").get_offsets()) == len(res.data) == 15


def test_drawn_from_the_object_alone():
    """The figure needs nothing but the result, not its table's attrs (a concat of tables
    with other options loses them): the object's own ``mods`` and ``alpha`` serve."""
    res = metaeval.metareg(_effects(2), "log_n", method="EE", alpha=0.10)
    bare = res.table.copy()
    bare.attrs = {}
    ax = res.replace(table=bare).plot().axes[0]
    xs, ys = _artist(ax, "bubble-fit").get_data()
    band = _artist(ax, "bubble-ci").get_paths()[0].vertices
    # the band's half-width at the first x: z(0.95) times the fitted value's se
    cov = res.vcov.pivot(index="term", columns="term_b", values="cov")
    row = np.array([1.0, xs[0]])
    se = np.sqrt(row @ cov.loc[["intercept", "log_n"], ["intercept", "log_n"]].to_numpy() @ row)
    low = band[np.isclose(band[:, 0], xs[0])][:, 1].min()
    assert ys[0] - low == pytest.approx(1.6448536269514722 * se, rel=1e-9)  # z at 1 − 0.10/2


def test_a_table_is_not_a_result():
    """bubble() takes the result; its table alone, or another result, is refused by name."""
    res = metaeval.metareg(_effects(), "log_n")
    with pytest.raises(SchemaError, match="MetaRegResult.*a DataFrame was passed"):
        bubble(res.table)
    with pytest.raises(SchemaError, match="MetaRegResult.*int was passed"):
        bubble(3)


def test_errors():
    eff = pd.concat([_effects(0), _effects(1).assign(metric="AP")], ignore_index=True)
    res = metaeval.metareg(eff, ["log_n", "domain"])
    with pytest.raises(OptionError, match=r"holds 2(.|\n)*result.select\(metric='nDCG@10'"):
        bubble(res)
    one = res.select(metric="AP")
    assert bubble(one, "log_n").axes[0].get_title().startswith("AP")
    # the table's rows of one group choose the group too (the other parts follow by key)
    rows = res.replace(table=res.table[res.table["metric"] == "AP"])
    assert len(_artist(rows.plot("log_n").axes[0], "bubble-points").get_offsets()) == 15
    with pytest.raises(OptionError, match="numeric moderator"):
        bubble(one, "domain")
    with pytest.raises(OptionError, match="numeric moderators of the model"):
        bubble(metaeval.metareg(_effects().assign(x=1.0 * np.arange(15)), ["log_n", "x"]))
    with pytest.raises(OptionError, match="factors only"):
        bubble(metaeval.metareg(_effects(), "domain"))


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

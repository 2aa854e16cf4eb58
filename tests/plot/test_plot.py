"""Forest plots and pairwise heatmaps, checked through their artists."""

from __future__ import annotations

import warnings

import matplotlib
import numpy as np
import pandas as pd
import pytest
from _helpers import NARROW_KH, make_scores
from matplotlib.collections import PathCollection
from matplotlib.patches import Polygon
from matplotlib.text import Text

import metaeval
from metaeval import DegenerateWarning, OptionError, SchemaError, forest_plot
from metaeval.measures import ir_columns
from metaeval.plot import forest, pairwise, save

matplotlib.use("Agg")
MINUS = "\u2212"


def _effects(rng, tasks=None, **kw) -> pd.DataFrame:
    scores = make_scores(rng, tasks=tasks, metrics=("m1",), **kw)
    return scores.meta.effects(control="ctrl", treatment="b", effect="smd")


def _gid(fig, gid):
    return [a for a in fig.findobj() if getattr(a, "get_gid", lambda: None)() == gid]


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text()]


def test_markers_sized_and_placed_by_weight_and_effect(rng):
    eff = _effects(rng, tasks={"t1": 12, "t2": 40, "t3": 7, "t4": 90, "t5": 25})
    fig = forest_plot(eff, method="REML")
    (markers,) = _gid(fig, "tasks")
    assert isinstance(markers, PathCollection)
    offsets = markers.get_offsets()
    sizes = markers.get_sizes()
    assert len(offsets) == len(eff) == 5
    w = metaeval.weights(eff, method="REML")
    by_row = dict(
        zip(offsets[:, 1].round().astype(int), zip(offsets[:, 0], sizes, strict=True), strict=True)
    )
    # rows follow the table order; x at the effect; area ordered as the weights
    np.testing.assert_allclose([by_row[i][0] for i in range(5)], eff["effect"], rtol=1e-12)
    order_w = np.argsort(w["weight"].to_numpy())
    order_s = np.argsort([by_row[i][1] for i in range(5)])
    assert list(order_w) == list(order_s)


def test_summary_diamond_spans_the_pooled_ci_and_numbers_are_printed(rng):
    eff = _effects(rng)
    pooled = eff.meta.pool(method="DL").iloc[0]
    fig = forest_plot(eff, method="DL", title="A title")
    (diamond,) = _gid(fig, "diamond-summary")
    assert isinstance(diamond, Polygon)
    xs = diamond.get_xy()[:4, 0]
    np.testing.assert_allclose(
        xs, [pooled["ci_low"], pooled["effect"], pooled["ci_high"], pooled["effect"]], rtol=1e-12
    )
    (pi,) = _gid(fig, "pi")
    np.testing.assert_allclose(pi.get_xdata(), [pooled["pi_low"], pooled["pi_high"]], rtol=1e-12)
    texts = _texts(fig)
    for task in eff["task"]:
        assert task in texts
    summary = f"{pooled['effect']:.2f} [{pooled['ci_low']:.2f}, {pooled['ci_high']:.2f}]".replace(
        "-", MINUS
    )
    assert summary in texts
    assert "A title" in texts
    assert any(
        t.startswith("heterogeneity τ² = ") and f"I² = {pooled['i2']:.1f}%" in t for t in texts
    )
    assert any("Hedges' g" in t for t in texts)


@pytest.mark.parametrize("k", [1, 7, 60])
def test_nothing_outside_the_figure(rng, k):
    names = [f"task {i} " + "with a long name " * (i % 3) for i in range(k)]
    eff = pd.DataFrame(
        {
            "task": names,
            "treatment": "new",
            "effect": rng.normal(0.2, 0.2, k),
            "variance": rng.uniform(0.001, 0.05, k),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateWarning)  # k = 1
        fig = forest_plot(eff, title="Title")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
    assert len(texts) >= 2 * k
    for t in texts:
        ext = t.get_window_extent(renderer)
        assert ext.x0 >= box.x0 - 1 and ext.x1 <= box.x1 + 1, t.get_text()
        assert ext.y0 >= box.y0 - 1 and ext.y1 <= box.y1 + 1, t.get_text()
    assert fig.get_size_inches()[1] > 0.27 * k  # the height follows the rows


@NARROW_KH
def test_height_grows_with_rows(rng):
    small = forest_plot(_effects(rng, tasks={"a": 10, "b": 12}))
    big = forest_plot(_effects(rng, tasks={f"t{i}": 10 for i in range(20)}))
    assert big.get_size_inches()[1] - small.get_size_inches()[1] == pytest.approx(18 * 0.27)


def test_subgroups_get_their_own_diamonds(rng):
    eff = _effects(rng, tasks={"t1": 12, "t2": 40, "t3": 17, "t4": 90, "t5": 30})
    groups = {"t1": "x", "t2": "x", "t3": "y", "t4": "y", "t5": "y"}
    fig = forest_plot(eff, by=groups, method="REML")
    subs = _gid(fig, "diamond-subgroup")
    assert len(subs) == 2
    pooled = eff.meta.pool(by=groups, method="REML")
    got = sorted(p.get_xy()[1, 0] for p in subs)
    np.testing.assert_allclose(got, sorted(pooled["effect"]), rtol=1e-12)
    (overall,) = _gid(fig, "diamond-summary")
    assert overall.get_xy()[1, 0] == pytest.approx(eff.meta.pool(method="REML")["effect"].iloc[0])
    texts = _texts(fig)
    assert "x" in texts and "y" in texts
    assert any(t.startswith("test of subgroup differences: Q = ") for t in texts)


@NARROW_KH
def test_several_treatments_share_rows_and_x_scale(rng):
    scores = make_scores(rng, systems=("ctrl", "a", "b", "c"), metrics=("m1",))
    eff = scores.meta.effects(control="ctrl")
    fig = forest_plot(eff)
    axes = [ax for ax in fig.axes if _gid_in(ax, "tasks")]
    assert len(axes) == 3
    assert len({ax.get_xlim() for ax in axes}) == 1
    assert len({ax.get_ylim() for ax in axes}) == 1
    assert {"a vs ctrl", "b vs ctrl", "c vs ctrl"} <= {ax.get_title() for ax in axes}


def _gid_in(ax, gid):
    return any(getattr(a, "get_gid", lambda: None)() == gid for a in ax.get_children())


def test_panels_wrap_into_rows_that_each_repeat_the_task_labels(rng):
    scores = make_scores(rng, systems=("ctrl", "a", "b", "c", "d"), metrics=("m1",))
    eff = scores.meta.effects(control="ctrl")
    wrapped = forest_plot(eff)  # col_wrap=2: two rows of two panels
    axes = [ax for ax in wrapped.axes if _gid_in(ax, "tasks")]
    lefts = sorted({round(ax.get_position().x0, 6) for ax in axes})
    bottoms = sorted({round(ax.get_position().y0, 6) for ax in axes}, reverse=True)
    assert len(axes) == 4 and len(lefts) == 2 and len(bottoms) == 2
    top_row = sorted(
        (ax for ax in axes if round(ax.get_position().y0, 6) == bottoms[0]),
        key=lambda ax: ax.get_position().x0,
    )
    assert [ax.get_title() for ax in top_row] == ["a vs ctrl", "b vs ctrl"]
    tasks = sorted(set(scores["task"]))
    assert all(_texts(wrapped).count(task) == 2 for task in tasks)  # each row of panels
    one_row = forest_plot(eff, col_wrap=None)
    width, height = wrapped.get_size_inches()
    assert one_row.get_size_inches()[0] > 1.7 * width
    assert height > 1.6 * one_row.get_size_inches()[1]
    assert all(_texts(one_row).count(task) == 1 for task in tasks)
    for bad in (0, 1.5, True):
        with pytest.raises(OptionError, match="col_wrap"):
            forest_plot(eff, col_wrap=bad)


def test_a_notebook_draws_a_returned_figure_once_and_one_panel_is_labelled(rng, monkeypatch):
    import pickle

    import matplotlib.pyplot as plt
    from IPython.core.formatters import DisplayFormatter

    eff = _effects(rng)
    fig = forest_plot(eff)
    assert fig.number in plt.get_fignums()  # pyplot holds it: plt.show() shows it in scripts
    (ax,) = [ax for ax in fig.axes if _gid_in(ax, "tasks")]
    assert ax.get_title() == "b vs ctrl"
    formatter = DisplayFormatter()
    # Agg (a script, a test): IPython's usual display of a figure proceeds (in a notebook
    # its png formatter draws it; this bare formatter gives the text form)
    assert "text/plain" in formatter.format(fig)[0]
    # under the inline backend, the first drawing (the cell's value, or the backend's at the
    # end of the cell) releases the figure from pyplot, so the backend does not draw it again
    monkeypatch.setattr(
        matplotlib, "get_backend", lambda: "module://matplotlib_inline.backend_inline"
    )
    assert "text/plain" in formatter.format(fig)[0]
    assert fig.number not in plt.get_fignums()
    assert "text/plain" in formatter.format(fig)[0]  # and it can be drawn again on request
    # a widget backend shows the figure itself: the cell's value adds nothing
    monkeypatch.setattr(matplotlib, "get_backend", lambda: "module://ipympl.backend_nbagg")
    heat = pairwise(make_scores(rng, metrics=("m1",)).meta.compare("ctrl"))
    assert formatter.format(heat) == ({}, {}) and heat.number in plt.get_fignums()
    assert type(pickle.loads(pickle.dumps(fig))).__name__ == "NotebookFigure"


def test_interval_bounds_below_zero_keep_their_sign(rng):
    eff = pd.DataFrame(
        {
            "metric": "m",
            "treatment": "b",
            "control": "a",
            "effect_type": "md",
            "task": ["t1", "t2"],
            "effect": [0.0440, -0.07],
            "variance": [(0.0445 / 1.959964) ** 2, (0.0677 / 1.959964) ** 2],
        }
    )
    eff = eff.assign(
        ci_low=eff["effect"] - 1.959964 * np.sqrt(eff["variance"]),
        ci_high=eff["effect"] + 1.959964 * np.sqrt(eff["variance"]),
    )
    assert eff["ci_low"].iloc[0] < 0 > eff["ci_high"].iloc[1]
    texts = _texts(forest_plot(eff, digits=2, method="EE"))
    assert f"0.04 [{MINUS}0.00, 0.09]" in texts
    assert f"{MINUS}0.07 [{MINUS}0.14, {MINUS}0.00]" in texts


def test_sort_orders_rows(rng):
    eff = _effects(rng, tasks={"b": 30, "c": 12, "a": 50, "d": 20})
    fig = forest_plot(eff, sort="effect")
    (markers,) = _gid(fig, "tasks")
    offsets = markers.get_offsets()
    by_y = offsets[np.argsort(offsets[:, 1])]
    assert np.all(np.diff(by_y[:, 0]) <= 0)  # largest effect on top
    fig = forest_plot(eff, sort="name")
    texts = [t for t in _texts(fig) if t in {"a", "b", "c", "d"}]
    assert texts == ["a", "b", "c", "d"]


def test_arrows_where_cis_leave_the_axis(rng):
    eff = _effects(rng)
    fig = forest_plot(eff, xlim=(-0.01, 0.01))
    arrows = _gid(fig, "arrow")
    beyond = (eff["ci_low"] < -0.01).sum() + (eff["ci_high"] > 0.01).sum()
    assert beyond > 0 and len(arrows) == beyond


def test_rom_and_corr_axes_are_back_transformed(rng):
    eff = pd.DataFrame(
        {
            "task": list("abcd"),
            "treatment": "t",
            "effect_type": "rom",
            "effect": [0.1, 0.2, -0.05, 0.3],
            "variance": [0.01, 0.02, 0.01, 0.03],
        }
    )
    fig = forest_plot(eff)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels and all(lbl.endswith("%") for lbl in labels)
    for tick, lbl in zip(ax.get_xticks(), labels, strict=True):
        value = float(lbl.replace(MINUS, "-").rstrip("%")) / 100
        assert np.expm1(tick) == pytest.approx(value, abs=1e-9)
    texts = _texts(fig)
    assert f"+{100 * np.expm1(0.1):.0f}%" in " ".join(texts)
    corr = eff.assign(effect_type="corr")
    ax = forest_plot(corr).axes[0]
    for tick, lbl in zip(ax.get_xticks(), ax.get_xticklabels(), strict=True):
        assert np.tanh(tick) == pytest.approx(float(lbl.get_text().replace(MINUS, "-")), abs=1e-9)


def test_compact_mode_draws_into_given_axes(rng):
    import matplotlib.pyplot as plt

    eff = _effects(rng)
    fig, ax = plt.subplots()
    out = forest_plot(eff, ax=ax, color="tab:red")
    assert out is ax
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[:4] == list(eff["task"]) and labels[-1].startswith("RE model")
    (markers,) = [c for c in ax.collections if c.get_gid() == "tasks"]
    np.testing.assert_allclose(markers.get_facecolor()[0], matplotlib.colors.to_rgba("tab:red"))


def test_ir_columns_match_the_means(rng):
    scores = make_scores(rng, metrics=("nDCG@10", "Judged@10"))
    cols = ir_columns(scores, control="ctrl", treatment="a")
    means = scores.groupby(["task", "system", "metric"])["value"].mean()
    for task in scores["task"].unique():
        c, t = means[task, "ctrl", "nDCG@10"], means[task, "a", "nDCG@10"]
        assert cols.loc[task, "nDCG@10"] == f"{c:.3f} → {t:.3f}"
        c, t = means[task, "ctrl", "Judged@10"], means[task, "a", "Judged@10"]
        assert cols.loc[task, "J@10"] == f"{100 * c:.0f}% → {100 * t:.0f}%"
    eff = scores[scores.metric == "nDCG@10"].meta.effects(
        control="ctrl", treatment="a", effect="md"
    )
    fig = forest_plot(eff, columns={"right": cols})
    assert cols.loc["t1", "nDCG@10"] in _texts(fig)
    with pytest.raises(SchemaError, match="no metric 'Judged@10'"):
        ir_columns(scores[scores.metric == "nDCG@10"], control="ctrl", treatment="a")


def test_vector_output_embeds_truetype_and_leaves_rcparams(rng, tmp_path):
    before = dict(matplotlib.rcParams)
    fig = forest_plot(_effects(rng))
    save(fig, tmp_path / "f.pdf")
    save(fig, tmp_path / "f.png")
    pdf = (tmp_path / "f.pdf").read_bytes()
    assert b"/FontFile2" in pdf and b"/Type3" not in pdf
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    after = dict(matplotlib.rcParams)
    assert {k for k in before if before[k] != after[k]} == set()


def test_forest_errors(rng):
    scores = make_scores(rng)
    eff = scores.meta.effects(control="ctrl")
    with pytest.raises(SchemaError, match="one metric at a time"):
        forest_plot(eff)
    one = eff[eff.metric == "m1"]
    with pytest.raises(OptionError, match="sort"):
        forest_plot(one, sort="size")
    import matplotlib.pyplot as plt

    with pytest.raises(OptionError, match="one treatment"):
        forest_plot(one, ax=plt.gca())
    with pytest.raises(SchemaError, match="'variance'"):
        forest_plot(one.drop(columns="variance"))


def test_accessor_forest(rng):
    eff = _effects(rng)
    fig = eff.meta.forest(method="REML")
    assert _gid(fig, "diamond-summary")
    with pytest.raises(metaeval.TableKindError, match="effects"):
        make_scores(rng).meta.forest()


# ------------------------------------------------------------------ pairwise
def test_pairwise_tukey_is_mirrored_with_stars(rng):
    scores = make_scores(rng, systems=("ctrl", "a", "b", "c"), metrics=("m1",), tasks={"t": 200})
    tk = scores.meta.tukey()
    fig = pairwise(tk, value="effect_size")
    ax = fig.axes[0]
    mesh = ax.collections[0]
    systems = [t.get_text() for t in ax.get_yticklabels()]
    grid = np.ma.filled(mesh.get_array(), np.nan).reshape(len(systems), len(systems))
    for _, r in tk.iterrows():
        i, j = systems.index(r["system_a"]), systems.index(r["system_b"])
        assert grid[i, j] == pytest.approx(r["effect_size"])
        assert grid[j, i] == pytest.approx(-r["effect_size"])
    assert np.isnan(np.diag(grid)).all()
    stars = sum(t.get_text().endswith("★") for t in ax.texts)
    assert stars == 2 * int((tk["p_value"] < 0.05).sum())


def test_pairwise_p_values_from_compare_with_adjustment(rng):
    scores = make_scores(rng, metrics=("m1",))
    cmp = scores.meta.compare(control="ctrl", adjust="holm")
    fig = pairwise(cmp)
    assert (
        len([ax for ax in fig.axes if ax.get_visible() and ax.get_title()])
        == scores["task"].nunique()
    )
    ax = next(ax for ax in fig.axes if ax.get_title() == "m1 · t4")
    systems = [t.get_text() for t in ax.get_yticklabels()]
    texts = {
        (round(t.get_position()[1] - 0.5), round(t.get_position()[0] - 0.5)): t.get_text()
        for t in ax.texts
    }
    row = cmp[(cmp.task == "t4") & (cmp.treatment == "b")].iloc[0]
    expected = "< 0.01" if row["p_adjusted"] < 0.01 else f"{row['p_adjusted']:.2f}"
    cell = texts[(systems.index("b"), systems.index("ctrl"))]
    assert cell.rstrip("★") == expected
    assert cell.endswith("★") == (row["p_adjusted"] < 0.05)
    with pytest.raises(OptionError, match="value"):
        pairwise(cmp, value="t")
    with pytest.raises(SchemaError, match="compare"):
        pairwise(scores)


def test_a_given_pooled_result_is_drawn(rng):
    eff = _effects(rng)
    pooled = eff.meta.pool(method="EE")
    fig = forest(eff, pooled)
    (diamond,) = _gid(fig, "diamond-summary")
    np.testing.assert_allclose(
        diamond.get_xy()[:3, 0], pooled[["ci_low", "effect", "ci_high"]].iloc[0], rtol=1e-12
    )
    assert pooled["effect"].iloc[0] != pytest.approx(eff.meta.pool(method="DL")["effect"].iloc[0])
    weights = [t for t in _texts(fig) if t.endswith("%") and t != "100%"]
    ee = metaeval.weights(eff, method="EE")["weight"]
    assert weights == [f"{w:.1f}%" for w in ee]


def _text_x(fig, text: str) -> float:
    """The x position, in inches from the figure's left edge, of the one text ``text``."""
    (found,) = [t for t in fig.texts if t.get_text() == text]
    renderer = fig.canvas.get_renderer()
    return found.get_window_extent(renderer).x0 / fig.dpi


def _panel_x(fig, treatment: str) -> tuple[float, float]:
    (ax,) = [ax for ax in fig.axes if ax.get_title().startswith(treatment + " vs")]
    box = ax.get_position()
    width = fig.get_size_inches()[0]
    return box.x0 * width, box.x1 * width


def test_ir_columns_of_one_treatment_go_beside_its_own_panel(rng):
    """issue 25, item 4: ColBERTer's columns were drawn beside the other treatment's panel."""
    scores = make_scores(rng, metrics=("nDCG@10", "Judged@10"))
    eff = scores[scores.metric == "nDCG@10"].meta.effects(control="ctrl", effect="md")
    assert list(pd.unique(eff["treatment"])) == ["a", "b"]
    cols_b = ir_columns(scores, control="ctrl", treatment="b")
    fig = forest_plot(eff, columns=cols_b, col_wrap=None)
    a_left, a_right = _panel_x(fig, "a")
    b_left, _ = _panel_x(fig, "b")
    x = _text_x(fig, cols_b.loc["t1", "nDCG@10"])
    assert a_right < x < b_left  # left of b's panel, right of a's
    every = ir_columns(scores, control="ctrl", treatment=None)
    assert set(every) == {"a", "b"} and every["b"].equals(cols_b)
    fig = forest_plot(eff, columns=every, col_wrap=None)
    a_left, a_right = _panel_x(fig, "a")
    b_left, _ = _panel_x(fig, "b")
    assert _text_x(fig, every["a"].loc["t1", "nDCG@10"]) < a_left
    assert a_right < _text_x(fig, every["b"].loc["t1", "nDCG@10"]) < b_left
    # wrapped into one panel per row, each keeps its own columns
    fig = forest_plot(eff, columns=every, col_wrap=1)
    assert every["a"].loc["t1", "nDCG@10"] in _texts(fig)
    assert every["b"].loc["t1", "nDCG@10"] in _texts(fig)
    only_a = eff[eff.treatment == "a"]
    with pytest.raises(metaeval.OptionError, match=r"treatment 'b'.*panels are \['a'\]"):
        forest_plot(only_a, columns=cols_b)
    with pytest.raises(metaeval.OptionError, match=r"'b'.*not a panel.*treatment=\['a'\]"):
        forest_plot(only_a, columns=every)
    with pytest.raises(
        metaeval.OptionError, match=r"panel 'a' are ir_columns\(\) of treatment 'b'"
    ):
        forest_plot(eff, columns={"a": cols_b})
    with pytest.raises(SchemaError, match="no system 'nope'"):
        ir_columns(scores, control="ctrl", treatment="nope")

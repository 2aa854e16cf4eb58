"""Critical-difference diagrams, checked through their artists."""

from __future__ import annotations

import io
import math

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

import metaeval
from metaeval import OptionError, SchemaError
from metaeval.plot import critical_difference, save
from metaeval.ranking import friedman, posthoc

matplotlib.use("Agg")
H = math.sqrt(3) / 2


def _gid(container, gid):
    return [a for a in container.findobj() if getattr(a, "get_gid", lambda: None)() == gid]


def _ranks(result, metric: str | None = None) -> dict[str, float]:
    """System → average rank, from the pairs of a posthoc() result."""
    table = result.table
    if metric is not None:
        table = table[table["metric"] == metric]
    a = dict(zip(table["system_a"], table["rank_a"], strict=True))
    b = dict(zip(table["system_b"], table["rank_b"], strict=True))
    return {**a, **b}


def _scores(rng, k: int, n: int, names=None, metric="nDCG@10", spread=1.2) -> pd.DataFrame:
    """Per-task scores of k systems on n tasks, the later systems better on average."""
    names = names or [f"system {i}" for i in range(k)]
    skill = np.linspace(0, spread, k)
    return pd.DataFrame(
        [
            {"task": f"t{j}", "system": s, "metric": metric, "value": skill[i] + rng.normal(0, 0.6)}
            for j in range(n)
            for i, s in enumerate(names)
        ]
    )


@pytest.fixture
def demsar() -> pd.DataFrame:
    return metaeval.datasets.load_demsar()


# ------------------------------------------------------------------ the diagram
def test_one_label_and_one_line_per_system_at_its_average_rank(demsar):
    table = posthoc(demsar, test="nemenyi")
    ranks = _ranks(table)
    fig = critical_difference(table)
    (ax,) = fig.axes
    labels = _gid(ax, "cd-label")
    lines = _gid(ax, "cd-label-line")
    assert len(labels) == len(lines) == len(ranks) == 4
    k = len(ranks)
    # a line ends at its label's height, left of rank 1 or right of rank k
    by_end = {(round(ln.get_ydata()[-1], 9), ln.get_xdata()[-1] < 1): ln for ln in lines}
    assert len(by_end) == k
    order = sorted(ranks, key=ranks.get)
    for label in labels:
        (name,) = [s for s in ranks if label.get_text().startswith(s + " (")]
        assert label.get_text() == f"{name} ({ranks[name]:.2f})"
        x_label, y_label = label.get_position()
        line = by_end[round(y_label, 9), x_label < 1]
        xs = line.get_xdata()
        np.testing.assert_allclose(xs[:2], ranks[name], rtol=0, atol=1e-12)
        # the best half is labelled on the left of rank 1, the worse half right of rank k
        if order.index(name) < math.ceil(k / 2):
            assert x_label < 1 and label.get_ha() == "right"
        else:
            assert x_label > k and label.get_ha() == "left"
    # rank 1 is at the left: the axis runs from 1 to k, ticks labelled 1..k
    (axis,) = _gid(ax, "cd-axis")
    assert list(axis.get_xdata()) == [1, k]
    assert [t.get_text() for t in _gid(ax, "cd-tick-label")] == ["1", "2", "3", "4"]
    assert ax.get_title() == "AUC"


def test_nemenyi_bar_is_the_critical_difference_from_rank_one(demsar):
    table = posthoc(demsar, test="nemenyi")
    cd = table.table["cd"].iloc[0]
    ax = critical_difference(table).axes[0]
    (bar,) = _gid(ax, "cd-bar")
    np.testing.assert_allclose(bar.get_xdata(), [1, 1 + cd], rtol=1e-12)
    assert bar.get_xdata()[1] - bar.get_xdata()[0] == pytest.approx(1.2536, abs=1e-4)  # Demšar
    (text,) = _gid(ax, "cd-bar-label")
    assert text.get_text() == "CD = 1.25"


def test_bonferroni_dunn_interval_is_around_the_control(demsar):
    table = posthoc(demsar, test="bonferroni_dunn", control="C4.5")
    cd = table.table["cd"].iloc[0]
    rc = _ranks(table)["C4.5"]
    ax = critical_difference(table).axes[0]
    (bar,) = _gid(ax, "cd-bar")
    np.testing.assert_allclose(bar.get_xdata(), [rc - cd, rc + cd], rtol=1e-12)
    assert [t.get_text() for t in _gid(ax, "cd-bar-label")] == ["CD = 1.17"]
    (control,) = [t for t in _gid(ax, "cd-label") if t.get_text().startswith("C4.5 (")]
    assert control.get_fontweight() == "bold"
    others = [t for t in _gid(ax, "cd-label") if t is not control]
    assert {t.get_fontweight() for t in others} == {"normal"}


@pytest.mark.parametrize("method", ["holm", "wilcoxon_holm"])
def test_no_bar_without_a_critical_difference(demsar, method):
    table = posthoc(demsar, test=method, control="C4.5")
    ax = critical_difference(table).axes[0]
    assert _gid(ax, "cd-bar") == [] and _gid(ax, "cd-bar-label") == []
    assert len(_gid(ax, "cd-label")) == 4


def _tables(rng, demsar):
    twelve = _scores(rng, 12, 30)
    return [
        posthoc(demsar, test="nemenyi", alpha=0.10),  # two overlapping cliques
        posthoc(demsar, test="wilcoxon_holm"),
        posthoc(demsar, test="holm", control="C4.5"),
        posthoc(twelve, test="nemenyi"),
        posthoc(twelve, test="wilcoxon_holm"),
        posthoc(twelve, test="bonferroni_dunn", control="system 5"),
    ]


def test_one_thick_line_per_clique_spanning_its_ranks(rng, demsar):
    for table in _tables(rng, demsar):
        expected = table.cliques().groupby("clique")["rank"].agg(["min", "max"])
        ax = critical_difference(table).axes[0]
        drawn = _gid(ax, "cd-clique")
        assert len(drawn) == len(expected) >= 1, table.method
        spans = sorted((line.get_xdata()[0], line.get_xdata()[1]) for line in drawn)
        np.testing.assert_allclose(spans, sorted(expected.itertuples(index=False)), rtol=1e-12)
        # below the axis, and two cliques on one line are apart
        y_axis = _gid(ax, "cd-axis")[0].get_ydata()[0]
        assert all(line.get_ydata()[0] > y_axis for line in drawn)  # y runs down
        for i, a in enumerate(drawn):
            for b in drawn[i + 1 :]:
                if a.get_ydata()[0] == b.get_ydata()[0]:
                    (a0, a1), (b0, b1) = a.get_xdata(), b.get_xdata()
                    assert a1 < b0 or b1 < a0
    assert len(_gid(critical_difference(_tables(rng, demsar)[0]).axes[0], "cd-clique")) == 2


def _drawn(ax) -> tuple[float, list[tuple[float, float]]]:
    """The CD bar's half-length or length (NaN without a bar) and the clique spans drawn."""
    bars = _gid(ax, "cd-bar")
    length = np.nan
    if bars:
        (bar,) = bars
        length = float(bar.get_xdata()[1] - bar.get_xdata()[0])
    spans = sorted(
        (float(c.get_xdata()[0]), float(c.get_xdata()[1])) for c in _gid(ax, "cd-clique")
    )
    return length, spans


@pytest.mark.parametrize(
    ("method", "control"),
    [("nemenyi", None), ("bonferroni_dunn", "C4.5"), ("holm", "C4.5"), ("wilcoxon_holm", None)],
)
def test_cd_bar_and_cliques_are_drawn_at_one_level(demsar, method, control):
    """Issue 26: the bar and the cliques of a diagram at alpha=0.10 are both at 0.10, whether
    the test ran at 0.05 or 0.10, drawn by critical_difference() or by the result's plot()."""
    at05 = posthoc(demsar, test=method, control=control, alpha=0.05)
    at10 = posthoc(demsar, test=method, control=control, alpha=0.10)
    # the Nemenyi CD at 0.10 from Demšar's Table 5(b), q_0.10 = 2.291 (k = 4, N = 14)
    if method == "nemenyi":
        assert at05.cd(0.10) == pytest.approx(2.291 * np.sqrt(20 / 84), abs=5e-4)
        assert len(at05.cliques(0.10)["clique"].unique()) == 2  # two cliques at 0.10, one at 0.05
        assert len(at05.cliques()["clique"].unique()) == 1
    for ax in (
        critical_difference(at05, alpha=0.10).axes[0],
        at05.plot(alpha=0.10).axes[0],
        at10.plot().axes[0],
        critical_difference(at10).axes[0],
    ):
        length, spans = _drawn(ax)
        cd = at05.cd(0.10)
        if np.isnan(cd):
            assert np.isnan(length)
        else:
            assert length / (1 if control is None else 2) == pytest.approx(cd, rel=1e-12)
            assert cd == pytest.approx(at10.table["cd"].iloc[0], rel=1e-9)
        expected = at05.cliques(0.10).groupby("clique")["rank"].agg(["min", "max"])
        np.testing.assert_allclose(spans, sorted(expected.itertuples(index=False)), rtol=1e-12)
    if method in ("nemenyi", "bonferroni_dunn"):  # and the level tells: 0.05 draws another bar
        assert _drawn(at05.plot().axes[0])[0] > _drawn(at10.plot().axes[0])[0]


def test_a_bare_or_concatenated_table_is_refused(demsar):
    """A table alone has lost the test's method, level and control: drawing it could put the
    cliques and the CD bar at two levels (issue 26), so the diagram takes the result only."""
    res = posthoc(demsar, test="nemenyi")
    for table in (res.table, pd.concat([res.table, res.table.iloc[:0]]), res.table.copy()):
        with pytest.raises(SchemaError, match=r"[Pp]ass posthoc\(\.\.\.\)'s result"):
            critical_difference(table, alpha=0.10)
    with pytest.raises(SchemaError, match=r"posthoc\(\.\.\.\)'s result, not a FriedmanResult"):
        critical_difference(friedman(demsar))


def test_one_panel_per_metric_wrapped(rng):
    example = metaeval.load_example()
    table = posthoc(example, test="nemenyi")
    fig = critical_difference(table)
    assert [ax.get_title() for ax in fig.axes] == ["accuracy", "p_true_class"]
    left, right = (ax.get_position() for ax in fig.axes)
    assert left.y0 == pytest.approx(right.y0) and left.x1 <= right.x0  # side by side
    for ax in fig.axes:
        ranks = _ranks(table, ax.get_title())
        assert len(_gid(ax, "cd-label")) == len(ranks) == 5
        got = sorted(line.get_xdata()[0] for line in _gid(ax, "cd-label-line"))
        np.testing.assert_allclose(got, sorted(ranks.values()), rtol=1e-12)
    stacked = critical_difference(table, col_wrap=1)
    top, bottom = (ax.get_position() for ax in stacked.axes)
    assert top.x0 == pytest.approx(bottom.x0) and bottom.y1 <= top.y0
    assert stacked.get_size_inches()[1] > fig.get_size_inches()[1]


def test_into_a_given_axes(demsar):
    ax = Figure(figsize=(6, 2.5)).subplots()
    table = posthoc(demsar, test="nemenyi")
    assert critical_difference(table, ax=ax) is ax
    assert len(_gid(ax, "cd-label")) == 4
    two = posthoc(metaeval.load_example(), test="nemenyi")
    with pytest.raises(OptionError, match="one metric"):
        critical_difference(two, ax=Figure().subplots())


def test_errors(rng, demsar):
    compare = metaeval.load_example().meta.compare(control="knn")
    with pytest.raises(SchemaError, match="posthoc"):
        critical_difference(compare)
    with pytest.raises(SchemaError, match="posthoc"):
        critical_difference(demsar)
    table = posthoc(demsar)
    with pytest.raises(SchemaError, match="without rows"):
        critical_difference(table.replace(table=table.table.iloc[:0]))
    with pytest.raises(OptionError, match="col_wrap"):
        critical_difference(table, col_wrap=0)
    with pytest.raises(OptionError, match="alpha"):
        critical_difference(table, alpha=5)


def _texts(fig) -> list[Text]:
    """The texts drawn: the axes' texts and titles (their hidden axes' tick labels are not)."""
    found = [*fig.texts]
    for ax in fig.axes:
        found += [*ax.texts, ax.title]
    return [t for t in found if t.get_visible() and t.get_text()]


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 - 0.5 and b.x0 < a.x1 - 0.5 and a.y0 < b.y1 - 0.5 and b.y0 < a.y1 - 0.5


@pytest.mark.parametrize("k", [2, 4, 12, 20, 30])
def test_no_text_overlaps_or_leaves_the_figure(rng, k):
    names = [f"sys-{i}" + ("-with-a-long-name" if i % 3 == 0 else "") for i in range(k)]
    scores = _scores(rng, k, 25, names)
    scores = pd.concat([scores, _scores(rng, k, 25, names, metric="MRR", spread=0.3)])
    for table in (posthoc(scores), posthoc(scores, test="bonferroni_dunn", control=names[-1])):
        fig = critical_difference(table)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        box = fig.bbox
        texts = _texts(fig)
        assert len(texts) >= 2 * (k + 2)
        extents = [t.get_window_extent(renderer) for t in texts]
        for t, ext in zip(texts, extents, strict=True):
            assert t.get_fontsize() >= 8
            assert box.x0 - 1 <= ext.x0 and ext.x1 <= box.x1 + 1, t.get_text()
            assert box.y0 - 1 <= ext.y0 and ext.y1 <= box.y1 + 1, t.get_text()
        for i, a in enumerate(extents):
            for j in range(i + 1, len(extents)):
                assert not _overlap(a, extents[j]), (texts[i].get_text(), texts[j].get_text())
        # no label crosses a line: the label lines end before their text
        for ax in fig.axes:
            span = ax.transData.transform([[1, 0], [len(_gid(ax, "cd-label")), 0]])[:, 0]
            for t in _gid(ax, "cd-label"):
                ext = t.get_window_extent(renderer)
                assert ext.x1 < span[0] or ext.x0 > span[1], t.get_text()


def test_size_follows_the_systems(rng):
    small = critical_difference(posthoc(_scores(rng, 4, 20)))
    big = critical_difference(posthoc(_scores(rng, 16, 20)))
    (w0, h0), (w1, h1) = small.get_size_inches(), big.get_size_inches()
    assert h1 - h0 >= 6 * 0.19 and w1 > w0


def test_names_shown_literally(rng):
    names = ["$x$", "a_b", "50$", "plain"]
    fig = critical_difference(posthoc(_scores(rng, 4, 12, names)))
    fig.canvas.draw()  # mathtext would fail on an unescaped "$x$"
    texts = [t.get_text() for t in _gid(fig.axes[0], "cd-label")]
    assert any(t.startswith(r"\$x\$ (") for t in texts)
    assert any(t.startswith(r"50\$ (") for t in texts)


def test_pdf_embeds_its_fonts_and_rcparams_are_left_alone(demsar, tmp_path):
    before = dict(matplotlib.rcParams)
    fig = critical_difference(posthoc(demsar))
    buf = io.BytesIO()
    fig.savefig(buf, format="pdf")
    pdf = buf.getvalue()
    assert b"/FontFile" in pdf or b"/CharProcs" in pdf  # TrueType/Type 1 or Type 3 glyphs
    save(fig, tmp_path / "cd.pdf")
    pdf = (tmp_path / "cd.pdf").read_bytes()
    assert b"/FontFile2" in pdf and b"/Type3" not in pdf
    after = dict(matplotlib.rcParams)
    assert {k for k in before if before[k] != after[k]} == set()

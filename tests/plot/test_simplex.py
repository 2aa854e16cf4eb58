"""The simplex of a Bayesian signed-rank test, checked through its artists."""

from __future__ import annotations

import math
import warnings

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

import metaeval
from metaeval import OptionError, SchemaError
from metaeval.plot import simplex
from metaeval.ranking import BayesResult, bayes_signed_rank, posthoc

matplotlib.use("Agg")
H = math.sqrt(3) / 2
KEY = ["metric", "treatment", "control"]


def _gid(container, gid):
    return [a for a in container.findobj() if getattr(a, "get_gid", lambda: None)() == gid]


def _texts(fig) -> list[Text]:
    """The texts drawn: the axes' texts and titles (their hidden axes' tick labels are not)."""
    found = [*fig.texts]
    for ax in fig.axes:
        found += [*ax.texts, ax.title]
    return [t for t in found if t.get_visible() and t.get_text()]


@pytest.fixture
def demsar() -> pd.DataFrame:
    return metaeval.datasets.load_demsar()


def _bayes(rng, n=4000, rope=0.01) -> BayesResult:
    """A bayes_signed_rank()-shaped result whose draws are Dirichlet samples."""
    draws = np.stack(
        [rng.dirichlet(a, size=n) for a in ([2, 3, 14], [1, 9, 2], [12, 1, 1])]
    )  # (rows, draws, 3): better, equivalent, worse most of the time
    share = np.stack([np.bincount(d.argmax(axis=1), minlength=3) / n for d in draws])
    table = pd.DataFrame(
        {
            "metric": "nDCG@10",
            "treatment": ["monoT5", "SPLADE$", "BM25+RM3"],
            "control": "BM25",
            "prob_worse": share[:, 0],
            "prob_equivalent": share[:, 1],
            "prob_better": share[:, 2],
            "decision": "inconclusive",
        }
    )
    table.attrs = {"rope": rope}
    keys = table[KEY].itertuples(index=False, name=None)
    return BayesResult(table, samples=dict(zip(keys, draws, strict=True)))


def _barycentric(scatter) -> np.ndarray:
    """Back from the drawn (x, y) to (worse, equivalent, better)."""
    xy = scatter.get_offsets()
    equivalent = xy[:, 1] / H
    better = xy[:, 0] - equivalent / 2
    return np.c_[1 - better - equivalent, equivalent, better]


def test_simplex_points_are_the_draws_inside_the_triangle(rng):
    res = _bayes(rng)
    for row in range(3):
        fig = simplex(res, row=row)
        ax = fig.axes[0]
        (scatter,) = _gid(ax, "simplex-draws")
        key = tuple(res.table[KEY].iloc[row])
        theta = res.samples[key]
        assert len(scatter.get_offsets()) == len(theta)
        # back from (x, y) to the barycentric coordinates: the draws, all within the triangle
        np.testing.assert_allclose(_barycentric(scatter), theta, atol=1e-12)
        assert (_barycentric(scatter) >= -1e-12).all()
        # the region boundaries: from the centre to the three sides' midpoints
        boundaries = _gid(ax, "simplex-boundary")
        assert len(boundaries) == 3
        ends = sorted((round(b.get_xdata()[1], 9), round(b.get_ydata()[1], 9)) for b in boundaries)
        assert ends == sorted([(0.25, round(H / 2, 9)), (0.75, round(H / 2, 9)), (0.5, 0.0)])
        for b in boundaries:
            assert (b.get_xdata()[0], b.get_ydata()[0]) == pytest.approx((0.5, H / 3))


def test_simplex_labels_give_the_probabilities(rng):
    res = _bayes(rng, rope=0.02)
    fig = res.plot(row=1)
    texts = [t.get_text() for t in _gid(fig.axes[0], "simplex-vertex")]
    row = res.table.iloc[1]
    assert texts == [
        f"SPLADE\\$ worse\nP = {row['prob_worse']:.3f}",
        f"equivalent (ROPE ±0.02)\nP = {row['prob_equivalent']:.3f}",
        f"SPLADE\\$ better\nP = {row['prob_better']:.3f}",
    ]
    assert row["prob_equivalent"] > 0.5  # the row drawn is row 1, not row 0
    assert "SPLADE\\$ vs BM25 · nDCG@10" in [t.get_text() for t in _texts(fig)]
    fig.canvas.draw()
    box = fig.bbox
    renderer = fig.canvas.get_renderer()
    assert len(_texts(fig)) == 4
    for t in _texts(fig):
        ext = t.get_window_extent(renderer)
        assert box.x0 - 1 <= ext.x0 and ext.x1 <= box.x1 + 1, t.get_text()
        assert box.y0 - 1 <= ext.y0 and ext.y1 <= box.y1 + 1, t.get_text()


def test_a_reordered_or_filtered_table_draws_each_rows_own_draws(rng):
    """The draws follow their rows by key: a table sorted and filtered after the test
    (replaced in the result) draws each row's posterior, no statistical guess needed."""
    res = _bayes(rng)
    kept = res.replace(table=res.table.sort_values("prob_better").iloc[:2])
    assert kept.table["treatment"].tolist() == ["BM25+RM3", "SPLADE$"]
    for row, original in enumerate([2, 1]):
        (scatter,) = _gid(kept.plot(row=row).axes[0], "simplex-draws")
        theta = res.samples[tuple(res.table[KEY].iloc[original])]
        np.testing.assert_allclose(_barycentric(scatter), theta, atol=1e-12)
    with pytest.raises(OptionError, match="row position from -2 to 1"):
        kept.plot(row=2)


def test_simplex_errors_and_axes(rng):
    res = _bayes(rng)
    with pytest.raises(OptionError, match="samples=True"):
        simplex(res.replace(samples=None))
    with pytest.raises(OptionError, match="row"):
        simplex(res, row=3)
    with pytest.raises(SchemaError, match="BayesResult.*a DataFrame was passed"):
        simplex(res.table)
    with pytest.raises(SchemaError, match="BayesResult.*was passed"):
        simplex(posthoc(metaeval.datasets.load_demsar()))  # another result
    ax = Figure().subplots()
    assert simplex(res, row=-1, ax=ax, color="black") is ax
    (scatter,) = _gid(ax, "simplex-draws")
    assert len(np.unique(scatter.get_facecolors()[:, :3], axis=0)) == 1


def test_simplex_of_a_bayes_signed_rank_result(demsar):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bayes_signed_rank(demsar, control="C4.5", n_draws=3000, seed=3, samples=True)
    fig = simplex(res, row=2)
    (scatter,) = _gid(fig.axes[0], "simplex-draws")
    assert len(scatter.get_offsets()) == 3000
    # the share of the draws in each region is the row's probability
    share = np.bincount(_barycentric(scatter).argmax(axis=1), minlength=3) / 3000
    row = res.table.iloc[2]
    probs = row[["prob_worse", "prob_equivalent", "prob_better"]].to_numpy(float)
    np.testing.assert_allclose(share, probs, rtol=0, atol=1e-12)
    texts = [t.get_text() for t in _gid(fig.axes[0], "simplex-vertex")]
    assert texts[2].startswith(f"{row['treatment']} better\nP = ")
    assert texts[2].endswith(f"{row['prob_better']:.3f}")

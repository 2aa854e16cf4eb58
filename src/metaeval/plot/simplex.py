"""The posterior of a Bayesian signed-rank test in a triangle (Benavoli et al. 2017, Fig. 4).

Every Monte-Carlo draw of (θ_worse, θ_equivalent, θ_better) is a point of the
probability simplex, shown by its barycentric coordinates in an equilateral
triangle: "worse" at the bottom left, "better" at the bottom right,
"equivalent" at the top. The lines from the centre to the midpoints of the
sides bound the regions where each outcome is the most probable; the share of
draws in a region is the row's ``prob_worse``, ``prob_equivalent`` or ``prob_better``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._options import format_number
from .._results import Result
from ..errors import SchemaError
from ._figure import new_figure
from ._labels import literal, text_width

__all__ = ["simplex"]

PROBS = ["prob_worse", "prob_equivalent", "prob_better"]
H = float(np.sqrt(3) / 2)  # the triangle's height (side 1)
VERTICES = np.array([[0.0, 0.0], [0.5, H], [1.0, 0.0]])  # worse, equivalent, better
COLOURS = ("#c44e52", "#8c8c8c", "#4c72b0")  # worse, equivalent, better
FONT = 9.0
SIDE = 3.2  # inches: the triangle's side


def project(theta: np.ndarray) -> np.ndarray:
    """Points (x, y) of the triangle for rows of (worse, equivalent, better) probabilities.

    >>> project(np.array([[1, 0, 0], [0, 0, 1], [1 / 3, 1 / 3, 1 / 3]])).round(3)
    array([[0.   , 0.   ],
           [1.   , 0.   ],
           [0.5  , 0.289]])
    """
    theta = np.asarray(theta, dtype=float)
    return theta @ VERTICES


def _samples(result: Any, row: Any) -> tuple[pd.Series, np.ndarray]:
    """The row and its draws (``result`` a BayesResult, told by its kind: the plot stage
    imports no other stage)."""
    if not (isinstance(result, Result) and result.kind == "bayes"):
        what = "a DataFrame" if isinstance(result, pd.DataFrame) else type(result).__name__
        raise SchemaError(
            "simplex() draws the result of metaeval.ranking.bayes_signed_rank(..., "
            f"samples=True) (a BayesResult: the table and the draws), but {what} was passed; "
            "pass what bayes_signed_rank() returned, or call its .plot(row=...)."
        )
    res: Any = result  # a BayesResult (its class lives in the ranking stage)
    draws = res.draws(row)  # OptionError: no draws, or a row out of range
    return res.table.iloc[int(row)], draws


def simplex(result: Result, *, row: int = 0, ax: Any = None, **kwargs: Any) -> Any:
    """The posterior of one row of :func:`metaeval.ranking.bayes_signed_rank`, in a triangle.

    Each Monte-Carlo draw of the probabilities (worse, practically equivalent,
    better) is a point of the triangle (barycentric coordinates): the nearer a
    vertex, the more probable that outcome. Lines from the centre to the
    sides' midpoints bound the regions where each outcome is the most
    probable; points are coloured by region, and each vertex's label gives
    the share of draws in its region (``prob_worse``, ``prob_equivalent``,
    ``prob_better``), as baycomp's ``plot_simplex``.

    Parameters
    ----------
    result : BayesResult
        What :func:`metaeval.ranking.bayes_signed_rank` returned with
        ``samples=True``; its table may be filtered or reordered
        (``result.replace(table=...)``): each row's draws follow it by key.
        ``result.plot(row)`` is ``simplex(result, row=row)``.
    row : int, default 0
        The position of the row (a treatment and metric) in ``result.table``.
    ax : matplotlib Axes, optional
        Draw into this Axes.
    **kwargs
        Passed to :meth:`matplotlib.axes.Axes.scatter` (e.g. ``s``, ``alpha``,
        ``color`` for one colour).

    Returns
    -------
    matplotlib.figure.Figure, or the Axes when ``ax`` is given.
        A notebook draws it once, as :func:`forest`'s. The draws are the
        scatter with gid ``simplex-draws`` (rasterized in vector output).

    Raises
    ------
    metaeval.OptionError
        A result without draws (computed without ``samples=True``); a ``row``
        out of range.
    metaeval.SchemaError
        Not a :class:`metaeval.ranking.BayesResult` (e.g. its ``.table`` alone).

    Notes
    -----
    The vertex "equivalent" is the region of practical equivalence, ±``rope``
    (the table's ``attrs["rope"]``) on the metric's scale. A cloud near one vertex is a
    confident conclusion; a cloud across a boundary is an inconclusive one
    (Benavoli et al. 2017, sec. 4).

    References
    ----------
    Benavoli, A., Corani, G., Demšar, J., & Zaffalon, M. (2017). Time for a
    change: a tutorial for comparing multiple classifiers through Bayesian
    analysis. *Journal of Machine Learning Research*, 18(77), 1–36.

    Examples
    --------
    >>> import metaeval
    >>> from metaeval.plot import simplex
    >>> from metaeval.ranking import bayes_signed_rank
    >>> auc = metaeval.datasets.load_demsar()
    >>> res = bayes_signed_rank(auc, control="C4.5", seed=1, n_draws=2000, samples=True)
    >>> fig = simplex(res, row=2)  # or res.plot(row=2)
    >>> ax = fig.axes[0]
    >>> labels = [t.get_text() for t in ax.texts if t.get_gid() == "simplex-vertex"]
    >>> [label.splitlines()[0] for label in labels]
    ['C4.5+m+cf worse', 'equivalent (ROPE ±0.01)', 'C4.5+m+cf better']
    >>> labels[2].splitlines()[1] == f"P = {res.table['prob_better'].iloc[2]:.3f}"
    True
    >>> len(ax.collections[0].get_offsets())  # one point per draw
    2000

    Without the draws:

    >>> simplex(bayes_signed_rank(auc, control="C4.5", seed=1, n_draws=2000))
    Traceback (most recent call last):
    ...
    metaeval.errors.OptionError: This result does not keep the posterior's Monte-Carlo draws: call bayes_signed_rank(..., samples=True).
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Polygon

    line, draws = _samples(result, row)
    treatment, control = literal(line["treatment"]), literal(line["control"])
    rope = result.table.attrs.get("rope")
    probs = line[PROBS].to_numpy(float)
    equivalent = (
        f"equivalent (ROPE ±{format_number(float(rope))})" if rope is not None else "equivalent"
    )
    names = (f"{treatment} worse", equivalent, f"{treatment} better")
    labels = [f"{name}\nP = {format_number(p, 3)}" for name, p in zip(names, probs, strict=True)]

    # room around the triangle for the labels: below the bottom corners, above the top
    plain = [names[0].replace(r"\$", "$"), names[2].replace(r"\$", "$")]
    half = text_width(plain, {"fontsize": FONT}) / 2 + 0.12
    margin_x = half / SIDE  # in data units (side = 1)
    below, above = 0.5 / SIDE, 0.45 / SIDE  # two lines of 9 pt text and their gap
    title = 0.3 if ax is None else 0.0
    width, height = SIDE * (1 + 2 * margin_x), SIDE * (H + below + above) + title
    if ax is None:
        fig = new_figure(figsize=(width, height))
        target = fig.add_axes((0, 0, 1, 1 - title / height))
    else:
        fig, target = None, ax
    target.set_axis_off()
    target.set_xlim(-margin_x, 1 + margin_x)
    target.set_ylim(-below, H + above)
    target.set_aspect("equal", adjustable="datalim" if ax is not None else "box")

    target.add_patch(
        Polygon(
            VERTICES,
            closed=True,
            fill=False,
            edgecolor="black",
            linewidth=1.0,
            gid="simplex-triangle",
            zorder=1,
        )
    )
    centre = VERTICES.mean(axis=0)
    for a, b in ((0, 1), (1, 2), (0, 2)):  # from the centre to each side's midpoint
        mid = (VERTICES[a] + VERTICES[b]) / 2
        target.add_line(
            Line2D(
                [centre[0], mid[0]],
                [centre[1], mid[1]],
                color="#303030",
                linewidth=0.8,
                linestyle="--",
                gid="simplex-boundary",
                zorder=1,
            )
        )

    points = project(draws)
    style: dict[str, Any] = {
        "s": 4,
        "alpha": float(np.clip(300 / len(points), 0.03, 0.6)),
        "linewidths": 0,
        "rasterized": True,
        "zorder": 2,  # over the triangle: a posterior on a side stays visible
        "c": np.array(COLOURS, dtype=object)[draws.argmax(axis=1)].tolist(),
    }
    if "color" in kwargs or "c" in kwargs:
        del style["c"]
    style.update(kwargs)
    target.scatter(points[:, 0], points[:, 1], gid="simplex-draws", **style)

    pad = 0.04
    where = (
        (0.0, -pad, "center", "top"),
        (0.5, H + pad, "center", "bottom"),
        (1.0, -pad, "center", "top"),
    )
    for (x, y, ha, va), text in zip(where, labels, strict=True):
        target.text(
            x,
            y,
            text,
            ha=ha,
            va=va,
            fontsize=FONT,
            gid="simplex-vertex",
            multialignment="center",
            clip_on=False,
        )
    heading = f"{treatment} vs {control}"
    if "metric" in line.index:
        heading += f" · {literal(line['metric'])}"
    if fig is None:
        target.set_title(heading, fontsize=10)
        return ax
    fig.suptitle(heading, fontsize=10, y=1 - 0.08 / height, va="top")
    return fig

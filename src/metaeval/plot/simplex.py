"""The posterior of a Bayesian signed-rank test in a triangle (Benavoli et al. 2017, Fig. 4).

Every Monte-Carlo draw of (θ_worse, θ_equivalent, θ_better) is a point of the
probability simplex, shown by its barycentric coordinates in an equilateral
triangle: "worse" at the bottom left, "better" at the bottom right,
"equivalent" at the top. The lines from the centre to the midpoints of the
sides bound the regions where each outcome is the most probable; the share of
draws in a region is the row's ``p_worse``, ``p_equivalent`` or ``p_better``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._options import format_number
from ..errors import OptionError, SchemaError
from ._figure import new_figure
from ._text import literal, text_width

__all__ = ["simplex"]

NEED = ("treatment", "control", "p_worse", "p_equivalent", "p_better")
H = float(np.sqrt(3) / 2)  # the triangle's height (side 1)
VERTICES = np.array([[0.0, 0.0], [0.5, H], [1.0, 0.0]])  # worse, equivalent, better
COLOURS = ("#c44e52", "#8c8c8c", "#4c72b0")  # worse, equivalent, better
FONT = 9.0
SIDE = 3.2  # inches: the triangle's side
MATCH = 0.02  # how far the row's probabilities may be from the draws' shares (rounding)


def project(theta: np.ndarray) -> np.ndarray:
    """Points (x, y) of the triangle for rows of (worse, equivalent, better) probabilities.

    >>> project(np.array([[1, 0, 0], [0, 0, 1], [1 / 3, 1 / 3, 1 / 3]])).round(3)
    array([[0.   , 0.   ],
           [1.   , 0.   ],
           [0.5  , 0.289]])
    """
    theta = np.asarray(theta, dtype=float)
    return theta @ VERTICES


def _samples(result: pd.DataFrame, row: Any) -> tuple[pd.Series, np.ndarray]:
    if not isinstance(result, pd.DataFrame) or not set(NEED) <= set(result.columns):
        has = list(result.columns)[:12] if isinstance(result, pd.DataFrame) else type(result)
        raise SchemaError(
            "simplex() draws a metaeval.ranking.bayes_signed_rank() table, with the columns "
            f"{', '.join(NEED)}; this one has {has}."
        )
    samples = result.attrs.get("samples")
    if samples is None:
        raise OptionError(
            "simplex() draws the posterior's Monte-Carlo draws, which this table does not keep: "
            "call bayes_signed_rank(..., samples=True)."
        )
    samples = np.asarray(samples, dtype=float)
    if samples.ndim != 3 or samples.shape[2] != 3 or samples.shape[0] != len(result):
        raise SchemaError(
            f"attrs['samples'] has the shape {samples.shape}, not (rows, draws, 3) for the "
            f"table's {len(result)} rows: the draws belong to the table bayes_signed_rank() "
            "returned (filtering it keeps all of them); pass that table and choose with row=."
        )
    n = len(result)
    if isinstance(row, bool) or not isinstance(row, int | np.integer) or not -n <= row < n:
        raise OptionError(f"`row` must be a row position from {-n} to {n - 1}, not {row!r}.")
    line = result.iloc[int(row)]
    draws = samples[int(row)]
    share = np.bincount(draws.argmax(axis=1), minlength=3) / len(draws)
    stated = line[["p_worse", "p_equivalent", "p_better"]].to_numpy(float)
    if np.any(np.abs(share - stated) > MATCH):
        raise SchemaError(
            f"Row {row}'s probabilities {np.round(stated, 3).tolist()} are not those of its "
            f"draws in attrs['samples'] ({np.round(share, 3).tolist()}): the table was "
            "reordered or filtered after bayes_signed_rank(); pass the table it returned."
        )
    return line, draws


def simplex(result: pd.DataFrame, *, row: int = 0, ax: Any = None, **kwargs: Any) -> Any:
    """The posterior of one row of :func:`metaeval.ranking.bayes_signed_rank`, in a triangle.

    Each Monte-Carlo draw of the probabilities (worse, practically equivalent,
    better) is a point of the triangle (barycentric coordinates): the nearer a
    vertex, the more probable that outcome. Lines from the centre to the
    sides' midpoints bound the regions where each outcome is the most
    probable; points are coloured by region, and each vertex's label gives
    the share of draws in its region (``p_worse``, ``p_equivalent``,
    ``p_better``), as baycomp's ``plot_simplex``.

    Parameters
    ----------
    result : pandas.DataFrame
        A bayes_signed_rank() table computed with ``samples=True``, as it was
        returned (its draws in ``attrs["samples"]`` follow the rows by position).
    row : int, default 0
        The position of the row (a treatment and metric) to draw.
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
        A table without draws (computed without ``samples=True``); a ``row``
        out of range.
    metaeval.SchemaError
        Not a bayes_signed_rank() table; draws that do not match the rows
        (the table was filtered or reordered).

    Notes
    -----
    The vertex "equivalent" is the region of practical equivalence, ±``rope``
    (``attrs["rope"]``) on the metric's scale. A cloud near one vertex is a
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
    >>> res = bayes_signed_rank(auc, control="C4.5", seed=1, n_samples=2000, samples=True)
    >>> fig = simplex(res, row=2)
    >>> ax = fig.axes[0]
    >>> labels = [t.get_text() for t in ax.texts if t.get_gid() == "simplex-vertex"]
    >>> [label.splitlines()[0] for label in labels]
    ['C4.5+m+cf worse', 'equivalent (ROPE ±0.01)', 'C4.5+m+cf better']
    >>> labels[2].splitlines()[1] == f"P = {res['p_better'].iloc[2]:.3f}"
    True
    >>> len(ax.collections[0].get_offsets())  # one point per draw
    2000

    Without the draws:

    >>> simplex(bayes_signed_rank(auc, control="C4.5", seed=1, n_samples=2000))
    Traceback (most recent call last):
    ...
    metaeval.errors.OptionError: simplex() draws the posterior's Monte-Carlo draws, which this table does not keep: call bayes_signed_rank(..., samples=True).
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Polygon

    line, draws = _samples(result, row)
    treatment, control = literal(line["treatment"]), literal(line["control"])
    rope = result.attrs.get("rope")
    probs = line[["p_worse", "p_equivalent", "p_better"]].to_numpy(float)
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

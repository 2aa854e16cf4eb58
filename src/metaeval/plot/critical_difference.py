"""Critical-difference diagrams of posthoc() results: average ranks, cliques and the CD.

The diagram is laid out in inches, as the forest plot: its width follows the measured
width of the system labels and the number of systems, its height the number of
label rows and of clique lines, so that nothing overlaps or is clipped. Each panel
is one Axes without axis decorations whose x axis is the average rank and whose
y axis runs in inches from the top of the panel down.

The diagram draws a :class:`metaeval.ranking.PosthocResult` and computes nothing: the
ranks, the critical difference and the cliques at the level asked for come from the
result's ``ranks``, ``cd(alpha)`` and ``cliques(alpha)``, so that the CD bar and the
cliques are at one level. This module imports no other stage.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._options import format_number
from .._results import Result
from ..errors import OptionError, SchemaError, check_alpha
from ._figure import new_figure
from ._labels import literal, text_width

__all__ = ["critical_difference"]

FONT = 9.0  # points: tick labels, system labels and the CD
TITLE_FONT = 10.0
TITLE = 0.3  # inches above a panel for its title
OUTER = 0.1  # inches between a panel's edge and its outermost text
EXT = 0.15  # inches a label line runs past the end of the axis
GAP = 0.06  # inches between a label line's end and its text
TICK, MINOR = 0.08, 0.045  # tick lengths, inches
BAR_Y = 0.3  # the CD bar, inches from the top
CLIQUE_TOP, CLIQUE_STEP = 0.17, 0.1  # first clique line below the axis; between lines
CLIQUE_GAP = 0.12  # inches between two cliques drawn on one line
LABEL_GAP = 0.22  # inches between the last clique line and the first label row
HGAP, VGAP = 0.25, 0.15  # inches between panels


@dataclass
class _Panel:
    """One metric: its systems from the best average rank down, and what to draw."""

    metric: str
    systems: list[str]
    ranks: np.ndarray
    cd: float  # NaN: no CD to draw
    control: str | None
    cliques: list[tuple[float, float]] = field(default_factory=list)

    @property
    def k(self) -> int:
        return len(self.systems)

    @property
    def bar(self) -> tuple[float, float] | None:
        """The CD bar's ends in ranks: from rank 1, or around the control's rank."""
        if not np.isfinite(self.cd):
            return None
        if self.control is None:
            return 1.0, 1.0 + self.cd
        rank = float(self.ranks[self.systems.index(self.control)])
        return rank - self.cd, rank + self.cd

    def clique_rows(self, gap: float) -> list[tuple[float, float, int]]:
        """Each clique's ends and the line it is drawn on (0 nearest the axis): a
        clique shares a line with earlier ones that end more than ``gap`` ranks before it."""
        ends: list[float] = []  # per line, the rightmost end so far
        out = []
        for lo, hi in self.cliques:
            line = next((i for i, e in enumerate(ends) if lo - e > gap), len(ends))
            if line == len(ends):
                ends.append(hi)
            ends[line] = hi
            out.append((lo, hi, line))
        return out


def _check(result: Any) -> Any:
    """``result`` itself, a posthoc() result (a :class:`Result` of kind "posthoc": the
    plot stage reads its parts, ``ranks``, ``control``, ``cd()`` and ``cliques()``,
    without importing the ranking stage)."""
    if isinstance(result, pd.DataFrame):
        raise SchemaError(
            "critical_difference() draws the result of metaeval.ranking.posthoc(), not a "
            f"DataFrame (columns {list(result.columns)[:12]}): a table alone has lost the "
            "test, its level and control. Pass posthoc(...)'s result (or call its "
            ".plot()), not its .table."
        )
    if not isinstance(result, Result) or result.kind != "posthoc":
        raise SchemaError(
            "critical_difference() draws the result of metaeval.ranking.posthoc(); pass "
            f"posthoc(...)'s result, not a {type(result).__name__}."
        )
    if result.table.empty:
        raise SchemaError("critical_difference() was given a posthoc() result without rows.")
    return result


def _panels(result: Any, alpha: float | None) -> list[_Panel]:
    """One panel per metric, from the result alone: its ranks, its CD and its cliques at
    ``alpha`` (the result's own level when None)."""
    groups = result.cliques(alpha)
    control = result.control
    panels = []
    for metric, part in result.ranks.groupby("metric", sort=False):
        part = part.sort_values("mean_rank", kind="stable")
        systems = [str(s) for s in part["system"]]
        own = groups[groups["metric"].astype(str) == str(metric)]
        spans = [
            (float(g["rank"].min()), float(g["rank"].max()))
            for _, g in own.groupby("clique", sort=True)
        ]
        panels.append(
            _Panel(
                str(metric),
                systems,
                part["mean_rank"].to_numpy(float),
                result.cd(alpha, metric=str(metric)),
                None if control is None or str(control) not in systems else str(control),
                spans,
            )
        )
    return panels


def _label(system: str, rank: float) -> str:
    return f"{literal(system)} ({format_number(rank, 2, to='unicode')})"


@dataclass
class _Geometry:
    """A panel's layout in inches: text margins left and right of the rank axis, the
    axis's length, the heights of its parts."""

    left: float
    scale: float
    right: float
    axis_y: float
    clique_y: float
    label_y: float
    row: float
    height: float

    @property
    def width(self) -> float:
        return self.left + self.scale + self.right


def _geometry(
    panel: _Panel, props: dict[str, Any], scale: float | None = None, width: float | None = None
) -> _Geometry:
    """The layout of ``panel``: with ``scale`` (the axis's length), or fitted into ``width``."""
    size = float(props.get("fontsize", FONT)) / 72  # inches
    half = math.ceil(panel.k / 2)
    widths = [
        text_width(
            [_label(name, rank).replace(r"\$", "$")],  # drawn as "$"
            {**props, "fontweight": "bold"} if name == panel.control else props,
        )
        for name, rank in zip(panel.systems, panel.ranks, strict=True)
    ]
    text = OUTER + EXT + GAP
    left, right = text + max(widths[:half]), text + max(widths[half:], default=0.0)
    k1 = max(panel.k - 1, 1)
    if scale is None:
        scale = max((width or 0.0) - left - right, 0.5)
    bar = panel.bar
    if bar is not None:  # a CD bar beyond the axis's ends needs room (and its label half a width)
        per = scale / k1
        cd_text = text_width([f"CD = {format_number(panel.cd, 2)}"], {"fontsize": FONT}) / 2 + OUTER
        left = max(left, (1 - bar[0]) * per + OUTER, cd_text - (sum(bar) / 2 - 1) * per)
        right = max(
            right, (bar[1] - panel.k) * per + OUTER, cd_text - (panel.k - sum(bar) / 2) * per
        )
        if width is not None:
            scale = max(width - left - right, 0.5)
    axis_y = (
        (BAR_Y + 0.07 + 0.03 + TICK + size * 1.25 + 0.05)
        if bar is not None
        else 0.12 + TICK + size * 1.25
    )
    gap = CLIQUE_GAP * k1 / scale  # in ranks
    lines = 1 + max((line for *_, line in panel.clique_rows(gap)), default=-1)
    clique_y = axis_y + CLIQUE_TOP
    label_y = clique_y + (lines - 1) * CLIQUE_STEP + LABEL_GAP if lines else axis_y + 0.28
    row = max(0.19, 1.6 * size)
    height = label_y + (half - 1) * row + 0.15
    return _Geometry(left, scale, right, axis_y, clique_y, label_y, row, height)


def _scale(k: int) -> float:
    """The rank axis's length in inches for k systems (0.36 in per rank, 2.4 to 6 in)."""
    return float(np.clip(0.36 * (k - 1), 2.4, 6.0))


def critical_difference(
    result: Any,
    *,
    alpha: float | None = None,
    col_wrap: int = 2,
    ax: Any = None,
    **kwargs: Any,
) -> Any:
    """Critical-difference diagram of a :func:`metaeval.ranking.posthoc` result (Demšar 2006).

    The systems' average ranks on one axis, **the best (rank 1) at the left**;
    every system a line down to its label (name and average rank), the better
    half labelled on the left, the worse half on the right. Thick lines join
    the systems of each clique (:meth:`metaeval.ranking.PosthocResult.cliques`):
    systems the post-hoc test does not tell apart. Above the axis, the critical
    difference: for ``nemenyi`` a bar of that length from rank 1 (two systems
    further apart differ); for ``bonferroni_dunn`` an interval of ± CD around
    the control's rank (systems outside it differ from the control; Demšar
    2006, Fig. 2). ``holm`` and ``wilcoxon_holm`` have no critical
    difference: only their cliques are drawn. A control's label is bold.

    Parameters
    ----------
    result : metaeval.ranking.PosthocResult
        What :func:`metaeval.ranking.posthoc` returns, any test (its
        :meth:`~metaeval.ranking.PosthocResult.plot` calls this function).
        Several metrics give one panel each.
    alpha : float, optional
        The level of the cliques and of the critical difference, both
        (``result.cliques(alpha)`` and ``result.cd(alpha)``); defaults to the
        test's ``result.alpha``.
    col_wrap : int, default 2
        Panels per row of the figure.
    ax : matplotlib Axes, optional
        Draw into this Axes (the result must hold one metric); its size sets
        the length of the rank axis.
    **kwargs
        Text properties of the system labels (e.g. ``fontsize=10``,
        ``fontfamily="serif"``); the layout follows their measured width.

    Returns
    -------
    matplotlib.figure.Figure, or the Axes when ``ax`` is given.
        A notebook draws it once, as :func:`forest`'s. Its artists carry gids:
        ``cd-label`` and ``cd-label-line`` (one per system), ``cd-clique``
        (one per clique), ``cd-bar`` (the critical difference), ``cd-axis``.

    Raises
    ------
    metaeval.SchemaError
        Anything but a posthoc() result (a DataFrame, such as its ``table``,
        has lost the test, its level and control).
    metaeval.OptionError
        ``ax`` with several metrics; a ``col_wrap`` below 1; a bad ``alpha``.

    Notes
    -----
    The size follows the result: the rank axis is 0.36 in per rank (2.4 to
    6 in) and the label rows 0.19 in apart, so that up to about 30 systems
    fit with no overlapping labels; text is 9 pt (titles 10 pt). The cliques
    are those of the test: for ``nemenyi`` the runs of systems within one CD,
    for ``wilcoxon_holm`` not a function of the average ranks at all, so that
    systems close in rank may stay apart (Benavoli et al. 2016). Save with
    :func:`metaeval.plot.save` for TrueType fonts in a PDF.

    References
    ----------
    Demšar, J. (2006). Statistical comparisons of classifiers over multiple
    data sets. *Journal of Machine Learning Research*, 7, 1–30.
    Benavoli, A., Corani, G., & Mangili, F. (2016). Should we really use
    post-hoc tests based on mean-ranks? *Journal of Machine Learning
    Research*, 17(5), 1–10.

    Examples
    --------
    >>> import metaeval
    >>> from metaeval.plot import critical_difference
    >>> from metaeval.ranking import posthoc
    >>> auc = metaeval.datasets.load_demsar()
    >>> fig = critical_difference(posthoc(auc, test="nemenyi"), alpha=0.10)
    >>> ax = fig.axes[0]
    >>> sorted(t.get_text() for t in ax.texts if t.get_gid() == "cd-label")
    ['C4.5 (3.14)', 'C4.5+cf (2.93)', 'C4.5+m (2.00)', 'C4.5+m+cf (1.93)']
    >>> [t.get_text() for t in ax.texts if t.get_gid() == "cd-bar-label"]
    ['CD = 1.12']
    >>> [line.get_xdata().round(2) for line in ax.lines if line.get_gid() == "cd-clique"]
    [array([1.93, 2.93]), array([2.93, 3.14])]

    Against a control (the CD interval is drawn around C4.5), into an Axes of your own:

    >>> from matplotlib.figure import Figure
    >>> ax = Figure(figsize=(6, 2.5)).subplots()
    >>> dunn = posthoc(auc, test="bonferroni_dunn", control="C4.5")
    >>> critical_difference(dunn, ax=ax) is ax
    True
    >>> [line.get_xdata().round(3) for line in ax.lines if line.get_gid() == "cd-bar"]
    [array([1.975, 4.311])]
    """
    result = _check(result)
    if alpha is not None:
        alpha = check_alpha(alpha)
    if isinstance(col_wrap, bool) or not isinstance(col_wrap, int | np.integer) or col_wrap < 1:
        raise OptionError(f"`col_wrap` must be a whole number of panels ≥ 1, not {col_wrap!r}.")
    panels = _panels(result, alpha)
    if ax is not None and len(panels) > 1:
        raise OptionError(
            f"With ax=, critical_difference() draws one metric; this result has {len(panels)} "
            f"({', '.join(p.metric for p in panels)}): run posthoc(..., metric=...) for one, "
            "or leave out ax."
        )
    props: dict[str, Any] = {"fontsize": FONT, **kwargs}

    if ax is not None:
        fig = ax.figure
        box = ax.get_position()
        width, height = box.width * fig.get_figwidth(), box.height * fig.get_figheight()
        geo = _geometry(panels[0], props, width=width)
        _draw(ax, panels[0], geo, props, height=height)
        return ax

    scale = _scale(max(p.k for p in panels))
    geos = [_geometry(p, props, scale=scale) for p in panels]
    left = max(g.left for g in geos)
    right = max(g.right for g in geos)
    cell_w = left + scale + right
    cell_h = max(g.height for g in geos) + TITLE
    ncols = min(int(col_wrap), len(panels))
    nrows = -(-len(panels) // ncols)
    fig_w = ncols * cell_w + (ncols - 1) * HGAP
    fig_h = nrows * cell_h + (nrows - 1) * VGAP
    fig = new_figure(figsize=(fig_w, fig_h))
    for i, (panel, geo) in enumerate(zip(panels, geos, strict=True)):
        r, c = divmod(i, ncols)
        x0 = c * (cell_w + HGAP)
        top = r * (cell_h + VGAP) + TITLE
        geo.left, geo.right = left, right
        geo.height = cell_h - TITLE
        rect = (x0 / fig_w, 1 - (top + geo.height) / fig_h, cell_w / fig_w, geo.height / fig_h)
        target = fig.add_axes(rect)
        _draw(target, panel, geo, props, height=geo.height)
    return fig


def _draw(ax: Any, panel: _Panel, geo: _Geometry, props: dict[str, Any], height: float) -> None:
    """Draw ``panel`` into ``ax`` with the layout ``geo`` (x in ranks, y in inches down)."""
    from matplotlib.lines import Line2D

    k = panel.k
    per = geo.scale / max(k - 1, 1)  # inches per rank

    def x(inches: float) -> float:  # a distance in inches, in ranks
        return inches / per

    ax.set_axis_off()
    ax.set_xlim(1 - x(geo.left), k + x(geo.right))
    ax.set_ylim(max(height, geo.height), 0)
    ax.set_title(literal(panel.metric), fontsize=TITLE_FONT, pad=4)
    line = {"color": "black", "clip_on": False, "solid_capstyle": "butt"}

    def add(xs: Any, ys: Any, gid: str, **style: Any) -> None:
        ax.add_line(
            Line2D(np.asarray(xs, float), np.asarray(ys, float), gid=gid, **{**line, **style})
        )

    # the axis, its ticks and their labels (every 1, 2 or 5 ranks, as room allows)
    y0 = geo.axis_y
    add([1, k], [y0, y0], "cd-axis", linewidth=1.0)
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100) if s * per >= 0.2)
    for t in range(1, k + 1):
        add([t, t], [y0 - TICK, y0], "cd-tick", linewidth=0.8)
        if (t - 1) % step == 0 or (t == k and (k - 1) % step >= step / 2):
            ax.text(
                t,
                y0 - TICK - 0.03,
                str(t),
                ha="center",
                va="bottom",
                fontsize=FONT,
                gid="cd-tick-label",
                clip_on=False,
            )
    for half_rank in np.arange(1.5, k, 1.0):
        add([half_rank, half_rank], [y0 - MINOR, y0], "cd-tick", linewidth=0.6)

    # the critical difference
    bar = panel.bar
    if bar is not None:
        lo, hi = bar
        add([lo, hi], [BAR_Y, BAR_Y], "cd-bar", linewidth=1.2)
        for end in (lo, hi):
            add([end, end], [BAR_Y - 0.05, BAR_Y + 0.05], "cd-bar-end", linewidth=1.2)
        if panel.control is not None:  # the interval's centre: the control's rank
            centre = (lo + hi) / 2
            add([centre], [BAR_Y], "cd-bar-end", marker="o", markersize=3.5, linestyle="none")
        ax.text(
            (lo + hi) / 2,
            BAR_Y - 0.07,
            f"CD = {format_number(panel.cd, 2)}",
            ha="center",
            va="bottom",
            fontsize=FONT,
            gid="cd-bar-label",
            clip_on=False,
        )

    # the cliques, below the axis
    for lo, hi, row in panel.clique_rows(x(CLIQUE_GAP)):
        y = geo.clique_y + row * CLIQUE_STEP
        add([lo, hi], [y, y], "cd-clique", linewidth=2.8, solid_capstyle="round")

    # every system: a line down from its rank to its label, best half left, worst half right
    half = math.ceil(k / 2)
    label = {"va": "center", "gid": "cd-label", "clip_on": False, **props}
    for i in range(k):
        name, rank = panel.systems[i], float(panel.ranks[i])
        left = i < half
        row = i if left else k - 1 - i
        y = geo.label_y + row * geo.row
        end = 1 - x(EXT) if left else k + x(EXT)
        add([rank, rank, end], [y0, y, y], "cd-label-line", linewidth=0.8)
        style = {**label, "fontweight": "bold"} if name == panel.control else label
        ax.text(
            end - x(GAP) if left else end + x(GAP),
            y,
            _label(name, rank),
            ha="right" if left else "left",
            **style,
        )

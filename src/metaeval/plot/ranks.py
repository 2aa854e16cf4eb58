"""Rank intervals as a figure: systems ordered by rank, each with its interval (the
Chatbot-Arena style), tie groups coloured."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._options import format_number
from ..engines import any_frame
from ..errors import OptionError, SchemaError
from ._figure import new_figure
from ._labels import literal

__all__ = ["rank_plot"]

_COLUMNS = ["metric", "system", "rank", "rank_low", "rank_high", "tie_group"]


def _panel(target: Any, part: pd.DataFrame, kwargs: dict[str, Any]) -> None:
    """One metric: a row per system (best at the top), its interval as a bar."""
    import matplotlib as mpl
    import matplotlib.ticker  # noqa: F401  (mpl.ticker)

    part = part.sort_values(["rank", "system"], kind="stable")
    y = np.arange(len(part))
    cycle = mpl.colormaps["tab10"].colors
    groups = part["tie_group"].to_numpy(dtype=np.int64)
    colours = [cycle[(g - 1) % len(cycle)] for g in groups]
    low, high = part["rank_low"].to_numpy(float), part["rank_high"].to_numpy(float)
    style = {"linewidth": 3.0, "alpha": 0.8}
    target.hlines(y, low, high, colors=colours, gid="rank-intervals", **{**style, **kwargs})
    target.scatter(
        part["rank"].to_numpy(float),
        y,
        color=colours,
        edgecolor="black",
        linewidth=0.5,
        s=28,
        zorder=3,
        gid="rank-points",
    )
    target.set_yticks(y, [literal(s) for s in part["system"]])
    target.set_ylim(len(part) - 0.5, -0.5)  # the best at the top
    n = len(part)
    target.set_xlim(0.5, n + 0.5)
    target.xaxis.set_major_locator(mpl.ticker.MaxNLocator(nbins=10, integer=True, min_n_ticks=1))
    target.grid(axis="x", color="0.9", linewidth=0.6)
    target.set_axisbelow(True)
    target.set_xlabel("rank (1 = best)")
    for g in np.unique(groups):  # a legend entry per tie group
        target.plot([], [], color=cycle[(g - 1) % len(cycle)], linewidth=3, label=f"tie group {g}")
    # beside the panel: inside it, the legend would cover the best systems' bars
    target.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    target.set_title(literal(part["metric"].iloc[0]), fontsize=10)


@any_frame
def rank_plot(table: pd.DataFrame, *, ax: Any = None, **kwargs: Any) -> Any:
    """Systems ordered by rank with their rank intervals, tie groups coloured.

    One panel per metric of :func:`metaeval.rank_intervals`' table: a row per
    system, the best at the top; a bar from ``rank_low`` to ``rank_high`` and a point
    at the observed ``rank``, coloured by ``tie_group``.

    Parameters
    ----------
    table : pandas.DataFrame
        What :func:`metaeval.rank_intervals` returned (columns ``metric, system,
        rank, rank_low, rank_high, tie_group``).
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    ax : matplotlib Axes, optional
        Draw into this Axes (the table must hold one metric).
    **kwargs
        Passed to :meth:`matplotlib.axes.Axes.hlines` (the intervals).

    Returns
    -------
    matplotlib.figure.Figure, or the Axes when ``ax`` is given.
        The intervals carry the gid ``rank-intervals``, the points ``rank-points``.

    Raises
    ------
    metaeval.SchemaError
        A table without the columns of :func:`metaeval.rank_intervals`.
    metaeval.OptionError
        An ``ax`` with a table of several metrics, or an empty table.

    Examples
    --------
    >>> import metaeval
    >>> scores = metaeval.load_example()
    >>> table = metaeval.rank_intervals(scores, n_resamples=100, seed=1)
    >>> fig = metaeval.plot.rank_plot(table)
    >>> first = table[table["metric"] == table["metric"].iloc[0]]
    >>> labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    >>> len(fig.axes), labels == first["system"].tolist()
    (2, True)
    """
    missing = [c for c in _COLUMNS if c not in table.columns]
    if missing:
        raise SchemaError(
            f"plot.rank_plot() draws the table of metaeval.rank_intervals() (columns "
            f"{_COLUMNS}), but {missing} are missing; pass what scores.meta.rank_intervals() "
            "returned."
        )
    metrics = list(pd.unique(table["metric"]))
    if not metrics:
        raise OptionError("plot.rank_plot() got an empty table; rank some systems first.")
    if ax is not None and len(metrics) > 1:
        raise OptionError(
            f"plot.rank_plot(ax=...) draws one metric, but the table holds {metrics!r}; "
            "select one (table.query('metric == ...')) or leave out `ax` for a panel per metric."
        )
    if ax is None:
        rows = table.groupby("metric", sort=False).size().max()
        fig = new_figure(figsize=(5.8 * len(metrics), 1.2 + 0.28 * rows))
        axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    else:
        fig, axes = None, [ax]
    for target, metric in zip(axes, metrics, strict=True):
        _panel(target, table[table["metric"] == metric], kwargs)
    level = table.attrs.get("alpha")
    if level is not None and fig is not None:
        kind = "simultaneous" if table.attrs.get("simultaneous", True) else "marginal"
        fig.suptitle(f"{format_number(100 * (1 - level))}% {kind} rank intervals", fontsize=10)
    if fig is None:
        return axes[0]
    fig.tight_layout()
    return fig

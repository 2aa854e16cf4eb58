"""The GOSH plot: the pooled estimate against I² over subsets of tasks (metafor ``plot.gosh``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._results import Result
from ..errors import OptionError, SchemaError, excerpt, format_groups, quote_list
from ._figure import new_figure
from ._labels import literal

__all__ = ["gosh_plot"]

_HEXBIN_FROM = 20_000
"""Subsets from which the cloud is drawn as hexagonal bins (without ``task``)."""

_BINS = 60


def _one_group(result: Any) -> tuple[Any, list[str]]:
    """The GoshResult of one group and its keys (told by its kind: the plot stage imports
    no other stage)."""
    if not (isinstance(result, Result) and result.kind == "gosh"):
        what = "a DataFrame" if isinstance(result, pd.DataFrame) else type(result).__name__
        raise SchemaError(
            "plot.gosh_plot() draws the result of metaeval.gosh() (a GoshResult), but "
            f"{what} was passed; pass what effects.meta.gosh() returned, or call its .plot()."
        )
    res: Any = result
    keys = list(res.group_keys)
    if len(res.fit) != 1:
        first = res.fit.iloc[0]
        raise OptionError(
            f"plot.gosh_plot() draws one group, but this result holds {len(res.fit)}:\n"
            f"{format_groups(res.fit[keys])}\nSelect one, e.g. "
            f"result.select({', '.join(f'{k}={excerpt(first[k])}' for k in keys)}).plot()."
        )
    return res, keys


def gosh_plot(
    result: Result,
    *,
    task: Any = None,
    hexbin: bool | None = None,
    ax: Any = None,
    **kwargs: Any,
) -> Any:
    """The GOSH plot: each subset's pooled estimate against its I², with marginal histograms.

    As metafor's ``plot(gosh(...))`` (Olkin et al. 2012): one point per subset of
    tasks from :func:`metaeval.gosh`; clusters in the cloud point to tasks that on
    their own move the estimate or the heterogeneity. With ``task``, the subsets
    that include it are drawn in red and the others in blue, on the scatter and in
    the marginal histograms (densities, each colour normalized on its own), as
    metafor's ``out=``.

    Parameters
    ----------
    result : GoshResult
        What :func:`metaeval.gosh` returned, of one group (choose one with
        ``result.select(metric=...)``). ``result.plot()`` is ``gosh_plot(result)``.
    task : optional
        A task (a column of ``result.included``) to colour the subsets by.
    hexbin : bool, optional
        Draw hexagonal bins of the subsets' density instead of points. Default:
        when there are more than 20,000 subsets and no ``task``.
    ax : matplotlib Axes, optional
        Draw the scatter alone into this Axes (no marginal histograms).
    **kwargs
        Passed to :meth:`matplotlib.axes.Axes.scatter` (or
        :meth:`~matplotlib.axes.Axes.hexbin`).

    Returns
    -------
    matplotlib.figure.Figure, or the Axes when ``ax`` is given.
        The scatter's artists carry the gids ``gosh-points`` (``gosh-with`` and
        ``gosh-without`` with ``task``) or ``gosh-hexbin``; the marginal axes
        ``gosh-top`` and ``gosh-right``.

    Raises
    ------
    metaeval.SchemaError
        Not a :class:`metaeval.GoshResult`.
    metaeval.OptionError
        Several groups; ``task`` not one of the tasks.

    Examples
    --------
    >>> import metaeval
    >>> eff = metaeval.load_example().meta.effects("logistic_regression",
    ...                                            treatment="gradient_boosting")
    >>> res = eff.query("metric == 'accuracy'").meta.gosh()
    >>> fig = res.plot(task="digits")  # or metaeval.plot.gosh_plot(res, task="digits")
    >>> main = fig.axes[0]
    >>> [c.get_gid() for c in main.collections]
    ['gosh-without', 'gosh-with']
    >>> len(main.collections[1].get_offsets())  # the 8 subsets with digits
    8
    """
    res, keys = _one_group(result)
    table = res.table
    x = table["effect"].to_numpy(float)
    y = table["i2"].to_numpy(float)
    ok = np.isfinite(x) & np.isfinite(y)
    with_task = None
    if task is not None:
        if task not in res.included.columns:
            raise OptionError(
                f"`task` must be one of the tasks {quote_list(list(res.included.columns))}, "
                f"but {task!r} was passed."
            )
        with_task = res.included[task].to_numpy(bool)
    if hexbin is None:
        hexbin = with_task is None and len(table) > _HEXBIN_FROM

    if ax is None:
        fig = new_figure(figsize=(6.0, 5.0))
        grid = fig.add_gridspec(
            2, 2, width_ratios=(4, 1), height_ratios=(1, 4), wspace=0.05, hspace=0.05
        )
        main = fig.add_subplot(grid[1, 0])
        top = fig.add_subplot(grid[0, 0], sharex=main)
        right = fig.add_subplot(grid[1, 1], sharey=main)
    else:
        fig, main, top, right = None, ax, None, None

    groups: list[tuple[np.ndarray, str, str]]
    if with_task is None:
        groups = [(ok, "tab:blue", "gosh-points")]
    else:
        groups = [
            (ok & ~with_task, "tab:blue", "gosh-without"),
            (ok & with_task, "tab:red", "gosh-with"),
        ]
    if hexbin:
        style = {"gridsize": 50, "cmap": "Blues", "mincnt": 1, "bins": "log"}
        main.hexbin(x[ok], y[ok], gid="gosh-hexbin", **{**style, **kwargs})
    else:
        alpha = float(np.clip(200 / max(ok.sum(), 1), 0.05, 0.8))
        for rows, color, gid in groups:
            style = {"s": 8, "color": color, "alpha": alpha, "linewidths": 0}
            main.scatter(x[rows], y[rows], gid=gid, **{**style, **kwargs})
    if top is not None and right is not None:
        x_edges = np.histogram_bin_edges(x[ok], bins=_BINS)
        y_edges = np.histogram_bin_edges(y[ok], bins=_BINS)
        for rows, color, _ in groups:
            if rows.any():
                top.hist(x[rows], bins=x_edges, density=True, color=color, alpha=0.5)
                right.hist(
                    y[rows],
                    bins=y_edges,
                    density=True,
                    color=color,
                    alpha=0.5,
                    orientation="horizontal",
                )
        top.set_gid("gosh-top")
        right.set_gid("gosh-right")
        top.tick_params(labelbottom=False, left=False, labelleft=False)
        right.tick_params(labelleft=False, bottom=False, labelbottom=False)
        for side in ("top", "right", "left"):
            top.spines[side].set_visible(False)
        for side in ("top", "right", "bottom"):
            right.spines[side].set_visible(False)
    main.set_xlabel("estimate")
    main.set_ylabel("I² (%)")
    if with_task is not None:
        from matplotlib.lines import Line2D

        handles = [
            Line2D([], [], marker="o", linestyle="", color=c, label=lab)
            for c, lab in (("tab:red", f"with {task}"), ("tab:blue", f"without {task}"))
        ]
        for h in handles:
            h.set_label(literal(h.get_label()))
        main.legend(handles=handles, loc="best", fontsize=8, frameon=False)
    title = ", ".join(f"{k}={res.fit[k].iloc[0]}" for k in keys)
    subtitle = f"{len(table)} {'subsets' if res.fit['exact'].iloc[0] else 'random subsets'}"
    (top if top is not None else main).set_title(
        literal(f"{title}\n{subtitle}" if title else subtitle), fontsize=9
    )
    if fig is None:
        return main
    return fig

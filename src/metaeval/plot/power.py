"""Power curves of a plan: the power of each group against the size (queries, clusters or
tasks), the target power and the size the plan asks for.

The figure draws a :class:`metaeval.design.PowerResult` and computes nothing: the curves
are its ``curve``, the planned sizes its ``table``. This module imports no other stage
(the result is told by its kind, as :func:`bubble` tells a meta-regression).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from .._options import format_number
from .._results import Result
from ..errors import OptionError, SchemaError, quote_list
from ._figure import new_figure
from ._labels import literal, text_width

__all__ = ["power_curves"]

CURVE_COLUMNS = ("size", "power", "target")
"""The curve's columns that are not group keys."""

PLANNED = {"queries": ("n",), "clusters": ("n_clusters", "n"), "tasks": ("k",)}
"""The table's column of the planned size, by unit (the first one the table has)."""

PANEL = (3.6, 2.7)  # inches: one panel's axes with its labels
HGAP, VGAP = 0.15, 0.1  # inches between panels (constrained layout's pads)
FONT = 9.0
STYLES = ("-", "--", ":", "-.")  # after the ten colours, the next line style


def _check(plan: Any) -> Any:
    """``plan`` itself, a PowerResult (a :class:`Result` of kind "power")."""
    if isinstance(plan, pd.DataFrame):
        raise SchemaError(
            "power_curves() draws the result of a plan (a PowerResult of "
            "metaeval.design.power(), plan_queries() or plan_tasks(): its table, curves and "
            f"unit), but a DataFrame was passed (columns {list(plan.columns)[:12]}); pass the "
            "PowerResult itself, or call its .plot(), not its .table or .curve."
        )
    if not (isinstance(plan, Result) and plan.kind == "power"):
        raise SchemaError(
            "power_curves() draws the result of a plan (a PowerResult of "
            f"metaeval.design.power()), but a {type(plan).__name__} was passed; pass what "
            "scores.meta.power(...) or effects.meta.power(...) returned, or call its .plot()."
        )
    res: Any = plan  # a PowerResult (its class lives in the design stage)
    curve = res.curve
    lacking = [c for c in ("size", "power") if c not in curve.columns]
    if lacking:
        raise SchemaError(
            f"The plan's curve lacks the column(s) {quote_list(lacking)} (its columns are "
            f"{quote_list(list(curve.columns))}); pass a PowerResult as metaeval.design "
            "made it."
        )
    if curve.empty:
        raise SchemaError("The plan's curve has no rows: there is no power curve to draw.")
    return res


def _planned(plan: Any, keys: list[str], curve: pd.DataFrame) -> pd.DataFrame:
    """Each group's keys with the planned size (``planned``, NaN where the table has none),
    for the groups of the plan's table: a filtered table draws its own groups."""
    table = plan.table
    unit = str(plan.unit)
    column = next((c for c in PLANNED.get(unit, ("n", "k")) if c in table.columns), None)
    shared = [k for k in keys if k in table.columns]
    groups = curve[keys].drop_duplicates() if keys else pd.DataFrame(index=[0])
    if column is None:
        raise SchemaError(
            f"The plan's table has no column {quote_list(list(PLANNED.get(unit, ('n', 'k'))))} "
            f"of the planned {literal(unit)} (its columns are {quote_list(list(table.columns))}); "
            "pass planned=False to "
            "draw the curves without the planned sizes."
        )
    sizes = table[[*shared, column]].rename(columns={column: "planned"})
    if not shared:  # the table names no group: one row, for the curve's one group
        if len(sizes) != 1 or len(groups) != 1:
            raise SchemaError(
                f"The plan's table has {len(sizes)} rows and its curve {len(groups)} groups, "
                f"but no group column in common to match them ({quote_list(keys)}); pass a "
                "PowerResult as metaeval.design made it."
            )
        return groups.assign(planned=float(sizes["planned"].iloc[0]))
    if sizes.duplicated(shared).any():
        raise SchemaError(
            f"The plan's table has several rows for one group of {quote_list(shared)}; "
            "pass a PowerResult as metaeval.design made it (one row per group)."
        )
    return groups.merge(sizes, on=shared, how="inner")


def _label(row: pd.Series, keys: list[str]) -> str:
    """ "metric: treatment vs control, task", the keys given (as bubble's titles)."""
    parts = []
    if "metric" in keys:
        parts.append(str(row["metric"]))
    pair = []
    if "treatment" in keys and "control" in keys:
        pair.append(f"{row['treatment']} vs {row['control']}")
    else:
        pair += [str(row[k]) for k in ("treatment", "control") if k in keys]
    pair += [str(row[k]) for k in keys if k not in ("metric", "treatment", "control")]
    return ": ".join(p for p in (", ".join(parts), ", ".join(pair)) if p)


def power_curves(
    plan: Result,
    *,
    target: bool = True,
    planned: bool = True,
    col: str | None = None,
    col_wrap: int = 3,
    title: str | None = None,
    xlabel: str | None = None,
    ax: Any = None,
    **kwargs: Any,
) -> Any:
    """Power curves of a plan: power against the number of queries, clusters or tasks.

    One line per group of the plan (task, metric, treatment, control, …: the
    columns of ``plan.curve`` other than ``size``, ``power`` and ``target``),
    the power the plan aims at as a dashed horizontal line, and the size the
    plan asks for (``plan.table``'s ``n``, ``n_clusters`` or ``k``) as a dot on
    each curve. Lines are named by the keys that differ between them (in the
    legend, with the planned size); the keys all groups share make the title.
    With several metrics (or ``col=``), one panel per value, side by side.

    Parameters
    ----------
    plan : PowerResult
        What :func:`metaeval.power` (``scores.meta.power(...)``,
        ``effects.meta.power(...)``) returned; ``plan.plot()`` is
        ``power_curves(plan)``. Its table may be filtered
        (``plan.replace(table=plan.table.query(...))``): the curves of the
        groups left in it are drawn.
    target : bool, default True
        Draw the target power (the curve's ``target``; none where the plan
        solved for power).
    planned : bool, default True
        Mark each group's planned size on its curve (and give it in the legend).
    col : str, optional
        The group key whose values get a panel each; by default ``metric``
        when the plan has several metrics, else one panel.
    col_wrap : int, default 3
        Panels side by side before the next row starts.
    title : str, optional
        The figure's title; by default the keys every group shares.
    xlabel : str, optional
        Defaults to "number of <unit>" (``plan.unit``: queries, clusters, tasks).
    ax : matplotlib Axes, optional
        Draw into this Axes (one panel only) and return it.
    **kwargs
        Passed to :meth:`matplotlib.axes.Axes.plot` for the curves
        (``linewidth``, ``alpha``, …).

    Returns
    -------
    matplotlib.figure.Figure, or the Axes when ``ax`` is given.
        A notebook draws it once. Its artists carry gids: ``power-curve``
        (one line per group, its data the group's ``size`` and ``power``),
        ``power-target`` (the target line), ``power-planned`` (one marker per
        group at its planned size). The legend stands beside the panels, so it
        never covers a curve.

    Raises
    ------
    metaeval.SchemaError
        Anything but a PowerResult (a DataFrame, such as its ``table`` or
        ``curve``, has lost the rest of the plan); a curve without ``size`` or
        ``power``; a table without the planned size (with ``planned=True``).
    metaeval.OptionError
        ``col`` not a group key; ``col_wrap`` below 1; ``ax`` with several panels.

    Notes
    -----
    The planned size of a group is the smallest size whose power reaches the
    target, so its dot sits on the curve at or just above the target line; a
    planned size outside the curve's range is drawn at the target's height.
    Curves are drawn as given (straight lines between the sizes of the curve);
    colours follow matplotlib's ten-colour cycle, then repeat with another line
    style. Save with :func:`metaeval.plot.save` for TrueType fonts in a PDF.

    Examples
    --------
    A plan for two tasks, power from the normal approximation Φ(d√n − z):

    >>> import numpy as np, pandas as pd
    >>> from scipy.stats import norm
    >>> from metaeval.design import PowerResult
    >>> from metaeval.plot import power_curves
    >>> d = pd.Series({"robust04": 0.25, "msmarco": 0.4})
    >>> n = np.arange(5, 201)
    >>> curve = pd.concat([pd.DataFrame({"task": t, "size": n, "target": 0.8,
    ...     "power": norm.cdf(d[t] * np.sqrt(n) - norm.isf(0.025))}) for t in d.index])
    >>> table = pd.DataFrame({"task": d.index, "n": [126, 50], "power": 0.8})
    >>> fig = power_curves(PowerResult(table, curve=curve, unit="queries"))
    >>> ax = fig.axes[0]
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('number of queries', 'power')
    >>> [line.get_label() for line in ax.lines if line.get_gid() == "power-curve"]
    ['robust04 (n = 126)', 'msmarco (n = 50)']
    >>> [float(line.get_xdata()[0]) for line in ax.lines if line.get_gid() == "power-planned"]
    [126.0, 50.0]
    >>> [text.get_text() for text in fig.legends[0].get_texts()][2:]
    ['target power 0.80', 'planned queries']
    """
    plan = _check(plan)
    if isinstance(col_wrap, bool) or not isinstance(col_wrap, int | np.integer) or col_wrap < 1:
        raise OptionError(f"`col_wrap` must be a whole number of panels ≥ 1, not {col_wrap!r}.")
    curve: pd.DataFrame = plan.curve
    unit = str(plan.unit)
    # the interval-width design (plan_queries(test="ci")): its curve is the expected width
    measure = "width" if "width" in curve.columns and curve["power"].isna().all() else "power"
    keys = [c for c in curve.columns if c not in (*CURVE_COLUMNS, "width")]
    if col is not None and col not in keys:
        raise OptionError(
            f"`col` must be one of the plan's group keys {quote_list(keys)}, but {col!r} "
            "was passed."
        )
    groups = _planned(plan, keys, curve) if planned else _groups(plan, keys, curve)
    if keys:  # the groups of the (possibly filtered) table, in the curve's order
        curve = curve.merge(groups[keys], on=keys, how="inner")
    if curve.empty:
        raise SchemaError(
            "No group of the plan's table has a curve: the table was filtered to groups "
            "the curve does not hold; filter both alike (plan.replace(table=...)) or pass "
            "the plan as metaeval.design made it."
        )
    varying = [k for k in keys if groups[k].nunique(dropna=False) > 1]
    if col is None and "metric" in varying:
        col = "metric"
    panel_values = list(pd.unique(groups[col])) if col is not None else [None]
    if ax is not None and len(panel_values) > 1:
        raise OptionError(
            f"With ax=, power_curves() draws one panel; this plan has {len(panel_values)} "
            f"values of {col!r} ({', '.join(map(str, panel_values))}): filter the plan "
            "(plan.replace(table=plan.table.query(...))) or leave out ax."
        )
    line_keys = [k for k in varying if k != col]
    shared = [k for k in keys if k not in varying]
    if title is None and shared:
        title = _label(groups.iloc[0], shared)

    # one colour (and style) per line group, the same in every panel
    line_ids = (
        groups.groupby(line_keys, sort=False, dropna=False).ngroup().to_numpy()
        if line_keys
        else np.zeros(len(groups), int)
    )
    groups = groups.assign(_line=line_ids, _group=np.arange(len(groups)))
    ids = curve.merge(groups[[*keys, "_group"]], on=keys, how="left")["_group"] if keys else 0
    points = dict(iter(curve.assign(_group=np.asarray(ids)).groupby("_group", sort=False)))
    ncols = min(int(col_wrap), len(panel_values))
    nrows = math.ceil(len(panel_values) / ncols)
    if ax is None:
        size = (PANEL[0] * ncols, PANEL[1] * nrows + (0.3 if title else 0.0))
        fig = new_figure(figsize=size, layout="constrained")
        fig.get_layout_engine().set(w_pad=HGAP / 2, h_pad=VGAP / 2)
        axes = fig.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True).ravel()
        for extra in axes[len(panel_values) :]:
            extra.set_visible(False)
    else:
        fig, axes = None, [ax]

    targets = curve["target"].to_numpy(float) if "target" in curve.columns else np.array([])
    levels = np.unique(targets[np.isfinite(targets)]) if target else np.array([])
    xlabel = xlabel if xlabel is not None else f"number of {literal(unit)}"
    span = float(curve["size"].max() - curve["size"].min()) or 1.0
    per_inch = span / (PANEL[0] - 0.7)  # sizes per inch of a panel's axis (about)
    handles: dict[int, Any] = {}
    # one panel of named lines: each line's legend entry gives its planned size; else
    # each planned size's number stands beside its dot
    in_legend = planned and bool(line_keys) and len(panel_values) == 1
    short = {"queries": "n", "clusters": "clusters", "tasks": "k"}.get(unit, literal(unit))
    for i, value in enumerate(panel_values):
        where = axes[i]
        own = groups if col is None else groups[groups[col] == value]
        marks: list[tuple[float, float, str]] = []
        for _, row in own.iterrows():  # one line per group drawn: a few dozen at most
            part = points[int(row["_group"])].sort_values("size", kind="stable")
            x, y = part["size"].to_numpy(float), part[measure].to_numpy(float)
            style = {
                "color": f"C{int(row['_line']) % 10}",
                "linestyle": STYLES[(int(row["_line"]) // 10) % len(STYLES)],
                "linewidth": 1.4,
            }
            name = literal(_label(row, line_keys)) if line_keys else measure
            if in_legend and np.isfinite(row["planned"]):
                name += f" ({short} = {format_number(float(row['planned']), 0, to='unicode')})"
            (line,) = where.plot(x, y, gid="power-curve", label=name, **{**style, **kwargs})
            handles.setdefault(int(row["_line"]), line)
            if planned and np.isfinite(row["planned"]):
                at = float(row["planned"])
                own_target = part["target"].to_numpy(float) if "target" in part else []
                fallback = next((t for t in own_target if np.isfinite(t)), np.nan)
                height = float(np.interp(at, x, y)) if x.min() <= at <= x.max() else fallback
                where.plot(
                    [at],
                    [height],
                    marker="o",
                    markersize=5,
                    linestyle="none",
                    color=line.get_color(),
                    markeredgecolor="white",
                    markeredgewidth=0.6,
                    zorder=4,
                    gid="power-planned",
                )
                marks.append((at, height, line.get_color()))
        if not in_legend:
            _annotate(where, marks, per_inch)
        for level in levels:
            where.axhline(
                level,
                color="0.35",
                linewidth=0.9,
                linestyle=(0, (4, 3)),
                zorder=1,
                gid="power-target",
                label=f"target {measure}",
            )
        if measure == "power":
            where.set_ylim(0, 1.02)
        else:  # widths fall from the widest (at 2) to the target and below
            top = float(np.nanquantile(curve["width"], 0.9)) * 1.1
            where.set_ylim(0, min(top, 4 * levels.max()) if len(levels) else top)
        where.grid(True, color="0.92", linewidth=0.6)
        where.set_axisbelow(True)
        if col is not None:
            where.set_title(literal(value), fontsize=10)
        if ax is not None or i % ncols == 0:
            where.set_ylabel("power" if measure == "power" else "expected interval width")
        if ax is not None or i >= len(panel_values) - ncols:
            where.set_xlabel(xlabel)
            where.tick_params(labelbottom=True)
        from matplotlib.ticker import MaxNLocator

        where.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))

    entries = [handles[k] for k in sorted(handles)] if line_keys else []
    if len(levels):
        from matplotlib.lines import Line2D

        text = " / ".join(format_number(float(v), 2, to="unicode") for v in levels)
        entries.append(
            Line2D(
                [],
                [],
                color="0.35",
                linewidth=0.9,
                linestyle=(0, (4, 3)),
                label=f"target {measure} {text}",
            )
        )
    if planned and groups["planned"].notna().any():
        from matplotlib.lines import Line2D

        what = {"queries": "queries", "clusters": "clusters", "tasks": "tasks"}.get(unit, unit)
        entries.append(
            Line2D(
                [],
                [],
                marker="o",
                markersize=5,
                linestyle="none",
                color="0.35",
                markeredgecolor="white",
                label=f"planned {literal(what)}",
            )
        )
    if ax is not None:
        if entries:
            ax.legend(handles=entries, fontsize=FONT - 1, loc="best", frameon=False)
        if title:
            ax.set_title(literal(title), fontsize=10)
        return ax
    if entries:
        labels = [h.get_label() for h in entries]
        per_column = max(1, int(PANEL[1] * nrows / (1.45 * FONT / 72)) - 1)  # rows that fit
        ncol = math.ceil(len(labels) / per_column)
        fig.legend(
            handles=entries, loc="outside right upper", fontsize=FONT, frameon=False, ncol=ncol
        )
        widest = text_width([t.replace(r"\$", "$") for t in labels], {"fontsize": FONT})
        fig.set_figwidth(fig.get_figwidth() + ncol * (widest + 0.5))
    if title and col is None:  # one panel: its title, wrapped to the panel's width (the
        # legend stands to its right: a longer line would run into it)
        import textwrap

        chars = max(20, int((PANEL[0] - 0.8) * 72 / (10 * 0.55)))  # the axes, 10 pt text
        axes[0].set_title(literal("\n".join(textwrap.wrap(title, chars))), fontsize=10)
    elif title:
        fig.suptitle(literal(title), fontsize=10)
    return fig


def _annotate(ax: Any, marks: list[tuple[float, float, str]], per_inch: float) -> None:
    """Each planned size's number beside its dot: below it, or on the next free line
    (above, then further down and up) when it would touch the number before it."""
    width = 0.3 * per_inch  # a number's width and a gap, in sizes
    ends: dict[int, float] = {}  # per line of numbers, where its last number ends
    for at, height, colour in sorted(marks):
        line = next(j for j in range(len(marks) + 1) if at - ends.get(j, -np.inf) > width)
        ends[line] = at
        up = line % 2 == 1
        offset = (line // 2) * 9 + 5
        ax.annotate(
            format_number(at, 0, to="unicode"),
            xy=(at, height),
            xytext=(0, offset if up else -offset),
            textcoords="offset points",
            ha="center",
            va="bottom" if up else "top",
            fontsize=FONT - 1.5,
            color=colour,
            bbox={
                "boxstyle": "round,pad=0.1",
                "facecolor": "white",
                "edgecolor": "none",
                "alpha": 0.8,
            },
            zorder=5,
            gid="power-planned-label",
        )


def _groups(plan: Any, keys: list[str], curve: pd.DataFrame) -> pd.DataFrame:
    """The groups of the plan's table (all the curve's when the table lacks the keys),
    without planned sizes."""
    groups = curve[keys].drop_duplicates() if keys else pd.DataFrame(index=[0])
    shared = [k for k in keys if k in plan.table.columns]
    if shared:
        groups = groups.merge(plan.table[shared].drop_duplicates(), on=shared, how="inner")
    return groups.assign(planned=np.nan)

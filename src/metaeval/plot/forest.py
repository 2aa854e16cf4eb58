"""The forest plot: per-task effects, weights and the pooled summary at one glance.

The figure is laid out in inches: its height follows the number of rows and its
width the measured width of every text column, so labels are never clipped,
for one task or sixty. Text columns share the forest's y axis through a blended
transform (x in inches from the figure's left edge, y in rows).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, get_args

import numpy as np
import pandas as pd

from .._options import (
    DEFAULT_CI,
    DEFAULT_POOL_METHOD,
    EffectScale,
    ForestSort,
    effect_scale,
    format_number,
    format_p,
    literal_signature,
)
from ..engines import any_frame
from ..errors import OptionError, SchemaError, check_option, quote_list
from ..schema import validate_effects
from ._figure import new_figure
from ._labels import literal

__all__ = ["forest"]

ROW = 0.27  # inches per row
GAP = 0.18  # inches between columns
SORTS: tuple[str | None, ...] = (None, *get_args(ForestSort))
# the keys of one pooled panel (pooling's GROUP_KEYS: the figure reads a pooled table, it
# does not import the stage that makes one)
GROUP_KEYS = ("effect_type", "metric", "treatment", "control")


def _fmt(x: float, digits: int, bound: bool = False) -> str:
    return format_number(x, digits, to="unicode", keep_sign=bound)


def _interval(e: float, lo: float, hi: float, display: EffectScale | None, digits: int) -> str:
    """'effect [low, high]' on the reporting scale ('' without an effect)."""
    if not np.isfinite(e):
        return ""
    if display is None:
        return f"{_fmt(e, digits)} [{_fmt(lo, digits, True)}, {_fmt(hi, digits, True)}]"
    cell = display.cell or _fmt
    e, lo, hi = (float(display.report(x)) if np.isfinite(x) else np.nan for x in (e, lo, hi))
    return f"{cell(e, digits)} [{cell(lo, digits) if np.isfinite(lo) else ''}, {cell(hi, digits) if np.isfinite(hi) else ''}]"


@dataclass
class _Row:
    kind: str  # "task", "header", "subgroup", "summary"
    label: str
    values: dict[str, dict[str, float]] = field(default_factory=dict)  # per treatment
    cells: dict[str, str] = field(default_factory=dict)  # extra left/right column text


def _display(effect_type: str) -> EffectScale | None:
    """The effect type's scale when it is reported on another than analysed, else None."""
    scale = effect_scale(effect_type)
    return scale if scale.to_report is not None else None


def _prepare(effects: pd.DataFrame) -> tuple[pd.DataFrame, str, str, str]:
    for col in ("task", "treatment", "effect", "variance"):
        if col not in effects.columns:
            raise SchemaError(
                f"forest() needs an effects table with a {col!r} column (from .meta.effects())."
            )
    single = {}
    for col in ("metric", "control", "effect_type"):
        if col in effects.columns:
            values = pd.unique(effects[col])
            if len(values) > 1:
                raise SchemaError(
                    f"forest() draws one {col} at a time, but the table has {quote_list(values)}; "
                    f"select one, e.g. effects.query(\"{col} == '{values[0]}'\")."
                )
            single[col] = str(values[0])
    return (
        effects,
        single.get("metric", ""),
        single.get("control", ""),
        single.get("effect_type", "md"),
    )


def _weighted(
    effects: pd.DataFrame, pooled: pd.DataFrame, subgroup: str | None = None
) -> pd.DataFrame:
    """The effects table with each task's weight in its panel's pooled estimate, from the
    pooled table: 100·w_i/Σw_j with w_i = 1/(v_i + τ̂²) over the usable rows (finite effect
    and variance) of the panel, τ̂² the panel's ``tau2`` (0 for a single task and for the
    common-effect model); NaN for rows left out and for a panel whose fit failed (τ̂² NaN
    with two tasks or more). These are :func:`metaeval.weights` of the same model. With a
    ``subgroup`` column (of both tables), each subgroup is a panel of its own."""
    table = validate_effects(effects)
    keys = [c for c in GROUP_KEYS if c in table.columns and c in pooled.columns]
    keys += [subgroup] if subgroup is not None else []
    if "tau2" not in pooled.columns:
        raise SchemaError(
            f"`pooled` has no 'tau2' column (its columns are {quote_list(list(pooled.columns))}); "
            "pass the table metaeval.pool() returned for these effects, or leave `pooled` out."
        )
    if pooled.duplicated(keys).any():
        raise SchemaError(
            f"`pooled` has several rows for one panel ({keys}); pass one pooled row per "
            "treatment, e.g. the table metaeval.pool() returned for these effects."
        )
    where = table[keys].merge(pooled[keys + ["tau2"]], on=keys, how="left", indicator=True)
    if (where["_merge"] != "both").any():
        lost = table.loc[(where["_merge"] != "both").to_numpy(), keys].drop_duplicates()
        raise SchemaError(
            f"`pooled` has no row for {lost.to_dict('records')}; pass the table "
            "metaeval.pool() returned for these effects."
        )
    v = table["variance"].to_numpy(float)
    usable = np.isfinite(table["effect"].to_numpy(float)) & np.isfinite(v)
    panel = (
        table.groupby(keys, sort=False).ngroup().to_numpy() if keys else np.zeros(len(table), int)
    )
    k = np.bincount(panel[usable], minlength=panel.max(initial=-1) + 1)[panel]
    tau2 = where["tau2"].to_numpy(float)
    failed = np.isnan(tau2) & (k > 1)
    w = np.where(usable & ~failed, 1.0 / (v + np.nan_to_num(tau2, nan=0.0)), 0.0)
    total = np.bincount(panel, weights=w, minlength=panel.max(initial=-1) + 1)[panel]
    with np.errstate(invalid="ignore", divide="ignore"):
        return table.assign(weight=np.where(usable & ~failed, 100 * w / total, np.nan))


@any_frame(tables=("pooled", "subgroups"))
@literal_signature
def forest(
    effects: pd.DataFrame,
    pooled: pd.DataFrame,
    *,
    subgroups: pd.DataFrame | None = None,
    title: str | None = None,
    sort: ForestSort | None = None,
    columns: pd.DataFrame | Mapping[str, pd.DataFrame] | None = None,
    labels: Mapping[str, str] | None = None,
    xlim: tuple[float, float] | None = None,
    xlabel: str | None = None,
    digits: int | None = None,
    width: float | None = None,
    col_wrap: int | None = 2,
    ax: Any = None,
    **kwargs: Any,
) -> Any:
    """Forest plot of an effects table and its pooled result: per-task effects with their
    weights and the summary.

    This draws and never pools: :func:`metaeval.forest_plot` (``.meta.forest()``) pools the
    effects first and then draws them here.

    Parameters
    ----------
    effects : pandas.DataFrame
        An effects table of one metric and one control (filter first); several
        treatments give one panel each, sharing the task rows and the x scale.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected). With ``subgroups``,
        the table :func:`metaeval.weights` returned with the same ``by`` (its subgroup
        column and each task's ``weight`` within its subgroup).
    pooled : pandas.DataFrame
        The pooled result of ``effects`` (:func:`metaeval.pool`, or the table of
        :func:`metaeval.bayes_pool`): its summary is the diamond, its τ² gives the
        weights, its ``method`` and ``test`` columns name the model and its
        ``attrs["alpha"]`` the level of the intervals (0.05 without it).
    subgroups : pandas.DataFrame, optional
        The subgroups' pooled results (:func:`metaeval.pool` with ``by=``): one block per
        subgroup with its own diamond, then ``pooled`` as the overall summary.
    title : str, optional
    sort : {None, "effect", "weight", "name"}
        Order of the task rows (None: the table's order); by the first panel.
    columns : DataFrame or mapping of str to DataFrame, optional
        Extra text columns indexed by task. A DataFrame alone goes left of the
        panels and is shared by all; ``{"left": ..., "right": ...}`` places
        shared columns on either side; a key naming a treatment
        (``{"tasb": ..., "colberter": ...}``) draws those columns just left of
        that treatment's panel. :func:`metaeval.ir.ir_columns` gives one DataFrame per
        treatment (drawn beside its own panel) or, with ``treatment=None``, the
        mapping for every panel. A key or an :func:`metaeval.ir.ir_columns` table that names
        no panel of the figure is an :class:`~metaeval.OptionError`.
    labels : mapping, optional
        Display names of the tasks (e.g. Ranger's ``display_names``).
    xlim : (float, float), optional
        Limits on the analysis scale; CIs beyond them end in arrows. By default
        they cover every estimate, the summary's prediction interval and the
        CIs not much wider than those.
    xlabel : str, optional
        Defaults to the effect type's name (and the metric).
    digits : int, optional
        Decimals of the effect column (default: enough for the CIs).
    width : float, optional
        Width of each forest panel in inches (default 3.0, or 2.2 per panel
        with several treatments).
    col_wrap : int or None, default 2
        Panels (treatments) side by side before the next row of panels starts
        (each row repeats the task labels); None puts them all in one row.
    ax : matplotlib Axes, optional
        Draw a compact single-panel version into this Axes (task labels as tick
        labels, the numbers as right-hand tick labels) and return it.
    **kwargs
        Passed to :meth:`matplotlib.axes.Axes.scatter` of the tasks' squares
        (``color``, ``marker``, ...).

    Returns
    -------
    matplotlib.figure.Figure, or the Axes when ``ax`` is given.
        A notebook draws it once, whether it ends the cell or is assigned
        (its class tells IPython that pyplot draws it); in a script,
        ``plt.show()`` shows it. Save it with :func:`save`.

    Notes
    -----
    Squares: task effects, area proportional to the task's weight in the
    summary; whiskers: their confidence intervals (arrows where they leave the
    axis). Diamond: the summary effect spanning its confidence interval; the
    thin line through it: the prediction interval for a new task. The
    footnote gives τ², I² and the Q-test's p-value. Effects of ``rom`` and
    ``corr`` are drawn on their analysis scale (log ratio, Fisher's z) with tick
    labels on the reporting scale (relative change, r). The figure is styled
    with seaborn's "ticks" style inside a context, so global rcParams are not
    changed; save it with :func:`save` to embed TrueType fonts in PDF/SVG.

    Examples
    --------
    Three treatments give three panels, two to a row (``col_wrap=2``):

    >>> import metaeval
    >>> eff = metaeval.load_example().meta.effects(
    ...     "logistic_regression", treatment=["knn", "gradient_boosting", "random_forest"])
    >>> acc = eff.query("metric == 'accuracy'")
    >>> fig = acc.meta.forest(title="Accuracy against logistic regression")
    >>> [ax.get_title() for ax in fig.axes]
    ['knn vs logistic_regression', 'gradient_boosting vs logistic_regression', 'random_forest vs logistic_regression']
    >>> fig.get_size_inches().round(1)
    array([12.1,  6.3])

    The compact version draws one treatment into an Axes of your own, here from a pooled
    table at hand:

    >>> from matplotlib.figure import Figure
    >>> from metaeval.plot import forest
    >>> knn = acc.query("treatment == 'knn'")
    >>> ax = Figure().subplots()
    >>> forest(knn, metaeval.pool(knn), ax=ax) is ax
    True
    >>> [label.get_text() for label in ax.get_yticklabels()]
    ['breast_cancer', 'digits', 'iris', 'wine', 'RE model (REML, Knapp–Hartung)']
    """
    import matplotlib.pyplot as plt
    import seaborn as sns

    check_option("sort", sort, SORTS)
    if col_wrap is not None and (
        isinstance(col_wrap, bool) or not isinstance(col_wrap, int) or col_wrap < 1
    ):
        raise OptionError(f"`col_wrap` must be a positive integer or None, not {col_wrap!r}.")
    alpha = float(pooled.attrs.get("alpha", 0.05))
    method, ci = DEFAULT_POOL_METHOD, DEFAULT_CI
    if {"method", "test"} <= set(pooled.columns) and len(pooled):
        # the label names the model of the given result
        method, ci = str(pooled["method"].iloc[0]), str(pooled["test"].iloc[0])
    effects, metric, control, effect_type = _prepare(effects)
    overall, subgroup = None, None
    if subgroups is None:  # the weights are drawn from the pooled τ²
        summary = pooled
        table = _weighted(effects, summary)
    else:  # the subgroups' own fits (the weights within each subgroup), then the overall
        # the subgroup column: the one the subgroups' table shares with the effects only
        subgroup = next(
            (c for c in subgroups.columns if c in effects.columns and c not in pooled.columns),
            None,
        )
        if subgroup is None:
            raise SchemaError(
                "forest() finds no subgroup column shared by `effects` and `subgroups`; pass "
                "the tables metaeval.weights(effects, by=...) and metaeval.pool(effects, "
                "by=...) returned."
            )
        table = effects if "weight" in effects.columns else _weighted(effects, subgroups, subgroup)
        summary = subgroups
        overall = pooled
    treatments = list(pd.unique(table["treatment"]))
    if ax is not None and len(treatments) > 1:
        raise OptionError("With ax=, forest() draws one treatment; filter the effects table first.")
    columns = _text_columns(columns, treatments)
    rows = _rows(table, summary, overall, treatments, subgroup, sort, labels or {}, method, ci)
    display = _display(effect_type)
    if digits is None:
        widths = (
            (table["ci_high"] - table["ci_low"]).to_numpy()
            if "ci_high" in table
            else np.array([0.1])
        )
        w = np.nanmedian(widths[np.isfinite(widths)]) if np.isfinite(widths).any() else 0.1
        digits = int(np.clip(np.ceil(-np.log10(max(w, 1e-12))) + 1, 2, 4))
    limits = xlim if xlim is not None else _limits(rows, treatments)
    label = xlabel or (
        effect_scale(effect_type).label + (f" ({literal(metric)})" if metric else "")
    )
    style: dict[str, Any] = {
        "pdf.fonttype": 42,
        "ps.fonttype": 42,
        "svg.fonttype": "path",
        "font.size": 9,
    }
    # the figure is made before the style contexts, which restore every rcParam on exit,
    # including the interactive mode a notebook backend may switch on for its first figure
    fig = new_figure() if ax is None else None
    with sns.axes_style("ticks"), plt.rc_context(style):  # type: ignore[arg-type]
        if ax is not None:
            _draw_compact(ax, rows, treatments[0], limits, display, digits, label, kwargs)
            return ax
        if width is None:
            width = 3.0 if len(treatments) == 1 else 2.2
        spec = _ForestSpec(
            rows,
            treatments,
            limits,
            display,
            digits,
            label,
            title,
            columns,
            control,
            alpha,
            width,
            kwargs,
            named=len(treatments) > 1,
        )
        _draw(fig, spec, col_wrap)
    return fig


# ------------------------------------------------------------------ rows
def _values(frame: pd.DataFrame, treatment: str) -> dict[str, float]:
    part = frame[frame["treatment"] == treatment]
    if part.empty:
        return {}
    row = part.iloc[0]
    return {
        k: float(row[k])
        for k in (
            "effect",
            "ci_low",
            "ci_high",
            "weight",
            "pi_low",
            "pi_high",
            "tau2",
            "i2",
            "q",
            "q_p_value",
            "k",
            "q_between",
            "q_between_df",
            "q_between_p_value",
            "tau_median",
            "tau_low",
            "tau_high",
        )
        if k in row.index
    }


def _rows(table, summary, overall, treatments, subgroup, sort, labels, method, ci) -> list[_Row]:
    tasks = list(pd.unique(table["task"]))
    first = table[table["treatment"] == treatments[0]].set_index("task")
    if sort == "effect":
        tasks.sort(key=lambda t: -first["effect"].get(t, -np.inf))
    elif sort == "weight":
        tasks.sort(key=lambda t: -first["weight"].get(t, -np.inf))
    elif sort == "name":
        tasks.sort(key=lambda t: labels.get(t, t).lower())
    model = (
        "EE model"
        if method in ("EE", "FE")
        else f"RE model ({method}{', Knapp–Hartung' if ci != 'z' else ''})"
    )
    if "tau_prior" in summary.columns and len(summary):  # a bayes_pool() table
        model = f"Bayesian RE model ({summary['tau_prior'].iloc[0]} prior on τ)"
    rows: list[_Row] = []

    def task_row(task: str, part: pd.DataFrame) -> _Row:
        row = _Row("task", literal(labels.get(task, str(task))))
        for t in treatments:
            row.values[t] = _values(part[part["task"] == task], t)
        row.cells["task"] = str(task)
        return row

    if subgroup is None:
        rows += [task_row(t, table) for t in tasks]
        rows.append(_Row("summary", model, {t: _values(summary, t) for t in treatments}))
        return rows
    for group in pd.unique(table[subgroup]):
        part = table[table[subgroup] == group]
        rows.append(_Row("header", literal(group)))
        rows += [task_row(t, part) for t in tasks if t in set(part["task"])]
        rows.append(
            _Row(
                "subgroup",
                f"{model} for {literal(group)}",
                {t: _values(summary[summary[subgroup] == group], t) for t in treatments},
            )
        )
    rows.append(
        _Row("summary", f"{model}, all tasks", {t: _values(overall, t) for t in treatments})
    )
    return rows


def _limits(rows: list[_Row], treatments: list[str]) -> tuple[float, float]:
    core, wide = [], []
    for row in rows:
        for t in treatments:
            v = row.values.get(t, {})
            if row.kind == "task":
                core.append(v.get("effect", np.nan))
                wide += [v.get("ci_low", np.nan), v.get("ci_high", np.nan)]
            else:
                core += [
                    v.get(k, np.nan) for k in ("effect", "ci_low", "ci_high", "pi_low", "pi_high")
                ]
    core_arr, wide_arr = np.array(core, float), np.array(wide, float)
    core_arr, wide_arr = core_arr[np.isfinite(core_arr)], wide_arr[np.isfinite(wide_arr)]
    if core_arr.size == 0:
        return (-1.0, 1.0)
    lo, hi = min(core_arr.min(), 0.0), max(core_arr.max(), 0.0)
    span = max(hi - lo, 1e-9)
    # CIs may widen the axis by up to 1.5 core spans on each side; beyond that, arrows
    if wide_arr.size:
        lo = max(min(lo, wide_arr.min()), lo - 1.5 * span)
        hi = min(max(hi, wide_arr.max()), hi + 1.5 * span)
    pad = 0.04 * (hi - lo)
    return (lo - pad, hi + pad)


# ----------------------------------------------------------------- drawing
def _text_width(fig, renderer, text: str, **kw) -> float:
    if not text:
        return 0.0
    t = fig.text(0, 0, text, **kw)
    width = t.get_window_extent(renderer).width / fig.dpi
    t.remove()
    return width


@dataclass(frozen=True)
class _TextColumns:
    """The user's extra columns by place: shared left and right, and per treatment's panel."""

    left: pd.DataFrame | None = None
    right: pd.DataFrame | None = None
    panel: Mapping[str, pd.DataFrame] = field(default_factory=dict)


def _text_columns(columns: Any, treatments: list[str]) -> _TextColumns:
    """``forest(columns=...)`` sorted by place; columns that name no panel are an error."""
    if columns is None:
        return _TextColumns()
    panels = [str(t) for t in treatments]

    def no_panel(name: Any, what: str) -> OptionError:
        return OptionError(
            f"`columns`: {what} {name!r}, which is not a panel of this figure; its panels are "
            f"{quote_list(panels)} (and 'left'/'right' for shared columns). Filter the effects "
            f"or build the columns for these panels, e.g. ir_columns(..., treatment={panels!r})."
        )

    if isinstance(columns, pd.DataFrame):
        owner = columns.attrs.get("treatment")  # ir_columns(treatment=...) says whose they are
        if owner is None:
            return _TextColumns(left=columns)
        if str(owner) not in panels:
            raise no_panel(owner, "the columns are of treatment")
        return _TextColumns(panel={str(owner): columns})
    if not isinstance(columns, Mapping):
        raise OptionError(
            f"`columns` takes a DataFrame or a mapping of 'left', 'right' or treatment names to "
            f"DataFrames, not {type(columns).__name__}."
        )
    panel = {}
    for key, frame in columns.items():
        if not isinstance(frame, pd.DataFrame):
            raise OptionError(
                f"`columns`: the value for {key!r} must be a DataFrame, not {type(frame).__name__}."
            )
        if key in ("left", "right"):
            continue
        if str(key) not in panels:
            raise no_panel(key, "a key names")
        owner = frame.attrs.get("treatment")
        if owner is not None and str(owner) != str(key):
            raise OptionError(
                f"`columns`: the columns given for panel {key!r} are ir_columns() of treatment "
                f"{owner!r}."
            )
        panel[str(key)] = frame
    return _TextColumns(columns.get("left"), columns.get("right"), panel)


def _column_cells(frame: pd.DataFrame | None, rows: list[_Row]) -> list[tuple[str, list[str]]]:
    if frame is None:
        return []
    if "task" in frame.columns:
        frame = frame.set_index("task")
    out = []
    for col in frame.columns:
        values = frame[col]
        out.append(
            (
                str(col),
                [
                    str(values.get(r.cells.get("task"), "")) if r.kind == "task" else ""
                    for r in rows
                ],
            )
        )
    return out


@dataclass(frozen=True)
class _ForestSpec:
    """Everything a multi-panel forest figure shows, decided before drawing."""

    rows: list[_Row]
    treatments: list[str]
    limits: tuple[float, float]
    display: EffectScale | None  # the reporting scale, if not the analysis scale
    digits: int
    xlabel: str
    title: str | None
    columns: _TextColumns  # the user's extra columns (see forest(columns=...))
    control: str
    alpha: float
    panel_width: float  # inches
    kwargs: dict[str, Any]
    named: bool = False  # notes name their treatment (the figure has several)

    @property
    def level(self) -> str:
        """The confidence level in percent as text: 95, 97.5 (not rounded to 98)."""
        return format_number(100 * (1 - self.alpha))

    @property
    def grouped(self) -> bool:
        """Rows come in subgroup blocks (task labels are indented under headers)."""
        return any(r.kind == "header" for r in self.rows)


@dataclass(frozen=True)
class _Columns:
    """The text columns beside the panels: (header, cells) pairs and their widths in inches."""

    left: list[tuple[str, list[str]]]  # the task labels and the user's left columns
    right: list[list[tuple[str, list[str]]]]  # per treatment: weight and effect [CI]
    user: list[tuple[str, list[str]]]  # the user's right columns
    left_w: list[float]
    right_w: list[list[float]]
    user_w: list[float]
    panel: list[list[tuple[str, list[str]]]]  # per treatment: the user's columns left of it
    panel_w: list[list[float]]


@dataclass(frozen=True)
class _Geometry:
    """Where things go, in inches (x positions) and the figure's size."""

    left_x: list[float]
    panels: list[tuple[float, list[float]]]  # per treatment: axes left edge, right-aligned columns
    panel_x: list[list[float]]  # per treatment: the left edges of its own text columns
    user_x: list[float]
    total_w: float
    height: float  # of this block of panels
    top: float
    bottom: float
    notes: list[str]
    y0: float = 0.0  # the block's lower edge, from the figure's lower edge
    fig_w: float = 0.0  # the whole figure's size (0: this block's)
    fig_h: float = 0.0

    def x(self, inches: float) -> float:
        """A figure fraction from inches from the left edge."""
        return inches / (self.fig_w or self.total_w)

    def y(self, inches: float) -> float:
        """A figure fraction from inches above the block's lower edge."""
        return (self.y0 + inches) / (self.fig_h or self.height)


_BOLD = {"fontweight": "bold"}
_MARGIN = 0.12  # inches around the figure
_INDENT = 0.12  # inches of a task label under a subgroup header


def _draw(fig: Any, spec: _ForestSpec, col_wrap: int | None) -> Any:
    """The whole forest figure: blocks of at most ``col_wrap`` panels, one under the other,
    each measured, placed and drawn with its text columns and notes."""
    wrap = len(spec.treatments) if col_wrap is None else col_wrap
    blocks = []
    for i in range(0, len(spec.treatments), wrap):
        block = replace(
            spec, treatments=spec.treatments[i : i + wrap], title=spec.title if i == 0 else None
        )
        cols = _measure_columns(fig, block)
        blocks.append((block, cols, _place(block, cols)))
    fig_w = max(geo.total_w for _, _, geo in blocks)
    fig_h = sum(geo.height for _, _, geo in blocks)
    fig.set_size_inches(fig_w, fig_h)
    y0 = fig_h
    for block, cols, geo in blocks:
        y0 -= geo.height
        geo = replace(geo, y0=y0, fig_w=fig_w, fig_h=fig_h)
        axes = _draw_panels(fig, block, geo)
        _draw_text_columns(fig, block, cols, geo, axes[0])
        _footnote(fig, block, geo)
    return fig


def _measure_columns(fig: Any, spec: _ForestSpec) -> _Columns:
    rows = spec.rows
    left = [("Task", [r.label for r in rows]), *_column_cells(spec.columns.left, rows)]
    panel = [_column_cells(spec.columns.panel.get(str(t)), rows) for t in spec.treatments]
    right = []
    for t in spec.treatments:
        weight = [
            _fmt(r.values[t]["weight"], 1) + "%"
            if r.kind == "task" and np.isfinite(r.values.get(t, {}).get("weight", np.nan))
            else ("100%" if r.kind == "summary" else "")
            for r in rows
        ]
        eff = []
        for r in rows:
            v = r.values.get(t, {})
            e, lo, hi = v.get("effect", np.nan), v.get("ci_low", np.nan), v.get("ci_high", np.nan)
            eff.append(_interval(e, lo, hi, spec.display, spec.digits))
        right.append([("Weight", weight), (f"Effect [{spec.level}% CI]", eff)])
    user = _column_cells(spec.columns.right, rows)
    renderer = fig.canvas.get_renderer()

    def width(header: str, cells: list[str], is_label: bool = False) -> float:
        widths = [_text_width(fig, renderer, header, **_BOLD)]
        for r, c in zip(rows, cells, strict=True):
            kw = _BOLD if r.kind in ("summary", "header") else {}
            indent = _INDENT if is_label and r.kind == "task" and spec.grouped else 0
            widths.append(_text_width(fig, renderer, c, **kw) + indent)
        return max(widths)

    return _Columns(
        left,
        right,
        user,
        [width(h, c, i == 0) for i, (h, c) in enumerate(left)],
        [[width(h, c) for h, c in s] for s in right],
        [width(h, c) for h, c in user],
        panel,
        [[width(h, c) for h, c in p] for p in panel],
    )


def _place(spec: _ForestSpec, cols: _Columns) -> _Geometry:
    several = len(spec.treatments) > 1
    notes = _notes(spec.rows, spec.treatments, spec.level, spec.named)
    top = 0.35 + (0.35 if spec.title else 0.0) + 0.22  # 0.22: the panel titles
    bottom = 0.6 + 0.2 * len(notes) + 0.05 + (0.2 if several else 0.0)
    height = top + len(spec.rows) * ROW + bottom
    x = _MARGIN
    left_x = []
    for w in cols.left_w:
        left_x.append(x)
        x += w + GAP
    panels: list[tuple[float, list[float]]] = []
    panel_x: list[list[float]] = []
    for widths, own in zip(cols.right_w, cols.panel_w, strict=True):
        panel_x.append([])
        for w in own:  # the panel's own columns, left of it
            panel_x[-1].append(x)
            x += w + GAP
        ax_left = x
        x += spec.panel_width + GAP
        xs = []
        for w in widths:
            xs.append(x + w)  # right-aligned
            x += w + GAP
        panels.append((ax_left, xs))
    user_x = []
    for w in cols.user_w:
        user_x.append(x + w)
        x += w + GAP
    return _Geometry(left_x, panels, panel_x, user_x, x - GAP + _MARGIN, height, top, bottom, notes)


def _draw_panels(fig: Any, spec: _ForestSpec, geo: _Geometry) -> list[Any]:
    n = len(spec.rows)
    axes = [
        fig.add_axes(
            [
                geo.x(left),
                geo.y(geo.bottom),
                geo.x(spec.panel_width),
                geo.y(geo.bottom + n * ROW) - geo.y(geo.bottom),
            ]
        )
        for left, _ in geo.panels
    ]
    several = len(axes) > 1
    for ax, t in zip(axes, spec.treatments, strict=True):
        _panel(
            ax,
            spec.rows,
            t,
            spec.limits,
            spec.display,
            "" if several else spec.xlabel,
            **spec.kwargs,
        )
        title = f"{t} vs {spec.control}" if spec.control else t
        ax.set_title(literal(title), fontsize=9, pad=18)
    if several:  # one x label centred under all panels, below the tick labels
        centre = geo.x((geo.panels[0][0] + geo.panels[-1][0] + spec.panel_width) / 2)
        fig.text(centre, geo.y(geo.bottom - 0.42), spec.xlabel, ha="center", va="top")
    return axes


def _draw_text_columns(fig: Any, spec: _ForestSpec, cols: _Columns, geo: _Geometry, ref: Any):
    from matplotlib import transforms

    rows = spec.rows
    header_y = -0.5 - 0.55  # above the first row, in row units
    blend = transforms.blended_transform_factory(fig.dpi_scale_trans, ref.transData)
    kw = {"transform": blend, "va": "center", "clip_on": False}
    for (header, cells), x0 in zip(cols.left, geo.left_x, strict=True):
        fig.text(x0, header_y, header, ha="left", **kw, **_BOLD)
        for y, (r, c) in enumerate(zip(rows, cells, strict=True)):
            indent = _INDENT if header == "Task" and r.kind == "task" and spec.grouped else 0
            weight = _BOLD if r.kind in ("summary", "header") else {}
            fig.text(x0 + indent, y, c, ha="left", **kw, **weight)
    for own, xs0 in zip(cols.panel, geo.panel_x, strict=True):
        for (header, cells), x0 in zip(own, xs0, strict=True):
            fig.text(x0, header_y, header, ha="left", **kw, **_BOLD)
            for y, (r, c) in enumerate(zip(rows, cells, strict=True)):
                fig.text(x0, y, c, ha="left", **kw, **(_BOLD if r.kind == "summary" else {}))
    for (_, xs), columns in zip(geo.panels, cols.right, strict=True):
        for (header, cells), x1 in zip(columns, xs, strict=True):
            fig.text(x1, header_y, header, ha="right", **kw, **_BOLD)
            for y, (r, c) in enumerate(zip(rows, cells, strict=True)):
                fig.text(x1, y, c, ha="right", **kw, **(_BOLD if r.kind == "summary" else {}))
    for (header, cells), x1 in zip(cols.user, geo.user_x, strict=True):
        fig.text(x1, header_y, header, ha="right", **kw, **_BOLD)
        for y, c in enumerate(cells):
            fig.text(x1, y, c, ha="right", **kw)


def _footnote(fig: Any, spec: _ForestSpec, geo: _Geometry) -> None:
    """The rule under the headers, the title and the heterogeneity notes."""
    import matplotlib.pyplot as plt

    line_y = geo.y(geo.height - (geo.top - 0.08))
    fig.add_artist(
        plt.Line2D(
            [geo.x(_MARGIN), geo.x(geo.total_w - _MARGIN)], [line_y, line_y], color="0.3", lw=0.6
        )
    )
    if spec.title:
        fig.text(
            0.5,
            geo.y(geo.height - 0.3),
            spec.title,
            ha="center",
            va="center",
            fontsize=11,
            fontweight="bold",
        )
    for i, note in enumerate(geo.notes):
        fig.text(
            geo.x(_MARGIN),
            geo.y(0.12 + 0.2 * (len(geo.notes) - 1 - i)),
            note,
            ha="left",
            va="bottom",
            fontsize=7.5,
            color="0.25",
        )


def _notes(rows, treatments, level, named: bool) -> list[str]:
    """Footnote lines: heterogeneity of every summary, subgroup differences."""
    foot_lines = [r for r in rows if r.kind == "summary"]
    notes = []
    for t in treatments:
        for r in foot_lines:
            v = r.values.get(t, {})
            prefix = f"{literal(t)}: " if named else ""
            if np.isfinite(v.get("tau_median", np.nan)):  # a posterior (bayes_pool)
                notes.append(
                    f"{prefix}posterior median τ = {format_number(v['tau_median'], 3, significant=True)} "
                    f"[{format_number(v['tau_low'], 3, significant=True)}, "
                    f"{format_number(v['tau_high'], 3, significant=True)}]; diamond: posterior "
                    f"median and {level}% credible interval of μ; thin line: {level}% "
                    "predictive interval of a new task's effect"
                )
            elif v.get("k", 0) >= 2 and np.isfinite(v.get("q", np.nan)):
                tau2 = v.get("tau2", np.nan)
                notes.append(
                    f"{prefix}heterogeneity τ² = {format_number(tau2, 3, significant=True)}, "
                    f"I² = {format_number(v.get('i2', np.nan), 1, missing='nan')}%, "
                    f"Q-test {_p(v.get('q_p_value', np.nan))}; thin line: {level}% prediction interval"
                )
            else:
                notes.append(f"{prefix}one task: no heterogeneity estimate")
        between = [r.values.get(t, {}) for r in rows if r.kind == "subgroup"]
        if between and np.isfinite(between[0].get("q_between", np.nan)):
            v = between[0]
            notes.append(
                f"{prefix}test of subgroup differences: Q = {_fmt(v['q_between'], 2)}, "
                f"df = {_fmt(v['q_between_df'], 0)}, {_p(v['q_between_p_value'])}"
            )
    return notes


def _p(p: float) -> str:
    return "p " + format_p(p, 3, equals=True, missing="= –")


def _panel(ax, rows, treatment, limits, display, xlabel, **kwargs):
    from matplotlib.patches import Polygon

    n = len(rows)
    lo_lim, hi_lim = limits
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlim(lo_lim, hi_lim)
    ax.axvline(0.0, color="0.35", lw=0.8, ls=":", zorder=0)
    tasks = [(y, r.values.get(treatment, {})) for y, r in enumerate(rows) if r.kind == "task"]
    weights = np.array([v.get("weight", np.nan) for _, v in tasks], float)
    wmax = np.nanmax(weights) if np.isfinite(weights).any() else 1.0
    ys, xs, sizes = [], [], []
    for (y, v), w in zip(tasks, weights, strict=True):
        e, lo, hi = v.get("effect", np.nan), v.get("ci_low", np.nan), v.get("ci_high", np.nan)
        if not np.isfinite(e):
            continue
        left, right = max(lo, lo_lim), min(hi, hi_lim)
        if np.isfinite(lo) and np.isfinite(hi):
            ax.plot([left, right], [y, y], color="0.15", lw=1.0, solid_capstyle="butt", zorder=2)
            for end, beyond, marker in ((left, lo < lo_lim, "<"), (right, hi > hi_lim, ">")):
                if beyond:
                    ax.plot([end], [y], marker=marker, color="0.15", ms=5, zorder=3, gid="arrow")
        ys.append(y)
        xs.append(e)
        sizes.append(12 + 110 * (w / wmax if np.isfinite(w) else 0))
    style = {"marker": "s", "color": "0.15", "linewidths": 0, **kwargs}
    ax.scatter(xs, ys, s=sizes, zorder=4, gid="tasks", **style)
    for y, r in enumerate(rows):
        if r.kind not in ("summary", "subgroup"):
            continue
        v = r.values.get(treatment, {})
        e, lo, hi = v.get("effect", np.nan), v.get("ci_low", np.nan), v.get("ci_high", np.nan)
        if not np.isfinite(e):
            continue
        pl, ph = v.get("pi_low", np.nan), v.get("pi_high", np.nan)
        if np.isfinite(pl) and np.isfinite(ph):
            ax.plot(
                [max(pl, lo_lim), min(ph, hi_lim)], [y, y], color="0.15", lw=0.8, zorder=3, gid="pi"
            )
            for end in (max(pl, lo_lim), min(ph, hi_lim)):
                ax.plot([end, end], [y - 0.12, y + 0.12], color="0.15", lw=0.8, zorder=3)
        h = 0.32
        color = "0.1" if r.kind == "summary" else "0.55"
        ax.add_patch(
            Polygon(
                [(lo, y), (e, y - h), (hi, y), (e, y + h)],
                closed=True,
                facecolor=color,
                edgecolor="0.1",
                lw=0.6,
                zorder=5,
                gid=f"diamond-{r.kind}",
            )
        )
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel(xlabel)
    if display is not None:
        _display_ticks(ax, display, limits)


def _display_ticks(ax, display, limits):
    """Ticks at round values of the reporting scale, thinned where the analysis scale crowds them."""
    from matplotlib.ticker import FixedLocator, MaxNLocator

    lo, hi = display.to_report(np.array(limits, float))
    ticks = MaxNLocator(nbins=8, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi)
    ticks = ticks[(ticks > lo) & (ticks < hi)]
    with np.errstate(divide="ignore", invalid="ignore"):  # r = ±1 has no place on Fisher's z
        positions = display.from_report(ticks)
    ticks, positions = ticks[np.isfinite(positions)], positions[np.isfinite(positions)]
    # keep a tick only when it is at least a sixth of the axis from every one kept,
    # always keeping 0 (no effect)
    min_gap = (limits[1] - limits[0]) / 6
    keep: list[int] = []
    zero = int(np.argmin(np.abs(ticks))) if ticks.size and np.isclose(ticks, 0).any() else None
    for i in ([zero] if zero is not None else []) + list(range(len(ticks))):
        if i in keep:
            continue
        if all(abs(positions[i] - positions[j]) >= min_gap for j in keep):
            keep.append(i)
    keep.sort()
    ax.xaxis.set_major_locator(FixedLocator(positions[keep]))
    ax.set_xticklabels([display.tick(t) for t in ticks[keep]])


def _draw_compact(ax, rows, treatment, limits, display, digits, xlabel, kwargs):
    _panel(ax, rows, treatment, limits, display, xlabel, **kwargs)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r.label for r in rows])
    right = ax.secondary_yaxis("right")
    right.set_yticks(range(len(rows)))
    texts = []
    for r in rows:
        v = r.values.get(treatment, {})
        e, lo, hi = v.get("effect", np.nan), v.get("ci_low", np.nan), v.get("ci_high", np.nan)
        texts.append(_interval(e, lo, hi, display, digits))
    right.set_yticklabels(texts)
    right.tick_params(length=0)
    right.spines["right"].set_visible(False)
    ax.tick_params(axis="y", length=0)

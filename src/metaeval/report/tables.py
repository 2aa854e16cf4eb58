"""Result tables as LaTeX (booktabs) and HTML, built on pandas' Styler.

Effects, pooled, analyze() and compare() tables go through one layout: a long frame
of cells (row label, column label, value, interval, p-value, marks), pivoted to
systems × columns, turned into display strings for the target format, with the
best value of every column in bold, and every value that prints as it does. Every
other result (a :class:`metaeval._results.Result` or a result table of another kind)
is shown as it is: its columns as they are, every cell through the one formatter
(:func:`metaeval._options.format_cell`; p-value columns through ``format_p``).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any, get_args

import numpy as np
import pandas as pd

from .._kinds import REPORT_KINDS, table_kind
from .._options import (
    Best,
    TableCells,
    TableLayout,
    TextTarget,
    counts_as_int,
    format_cell,
    is_p_column,
    literal_signature,
)
from .._results import Result
from ..engines import any_frame
from ..errors import OptionError, check_option, excerpt
from ._layouts import Layout, build_layout, check_show, frame_and_kind, layout_caption
from ._render import (
    CaptionMarkup,
    best_cells,
    cell_text,
    check_distinct,
    check_latex_options,
    escape,
    escape_latex,
    latex_table,
    text_styler,
)

__all__ = ["to_latex", "to_html", "style"]

SHOWS: tuple[str, ...] = get_args(TableCells)


BESTS: tuple[str | None, ...] = (*get_args(Best), None)


TABLE_LAYOUTS: tuple[str, ...] = get_args(TableLayout)


def _frames(lay: Layout, show: str, digits: int, fmt: str, best: str | None, transpose: bool):
    """(strings, bold mask) DataFrames in the final orientation, labels escaped."""
    cells = lay.cells.assign(
        text=[cell_text(r, show, digits, fmt, lay.kind) for _, r in lay.cells.iterrows()]
    )
    text = cells.pivot(index="row", columns="col", values="text").reindex(
        index=lay.rows, columns=lay.cols
    )
    value = cells.pivot(index="row", columns="col", values="value").reindex(
        index=lay.rows, columns=lay.cols
    )
    bold = pd.DataFrame(False, index=value.index, columns=value.columns)
    if best is not None:
        bold.iloc[:, :] = best_cells(value.to_numpy(float), best, digits)
    text = text.fillna("")
    escape = escape_latex if fmt == "latex" else html.escape
    row_labels = [escape(r) for r in text.index]
    col_labels = [tuple(escape(x) for x in c) for c in text.columns]
    check_distinct(list(text.index), row_labels, "rows", "treatment or control")
    check_distinct(list(text.columns), col_labels, "columns", " or ".join(lay.col_names))
    index = pd.Index(row_labels, name=None)
    columns: pd.Index
    if len(lay.col_names) == 1:
        columns = pd.Index([c[0] for c in col_labels], name=None)
    else:
        columns = pd.MultiIndex.from_tuples(col_labels, names=[None] * len(lay.col_names))
    text.index = bold.index = index
    text.columns = bold.columns = columns
    if transpose:
        text, bold = text.T, bold.T
    return text, bold


def _styler(lay: Layout, show: str, digits: int, fmt: str, best: str | None, transpose: bool):
    """The Styler, and whether any cell is bold (the caption says so only then)."""
    text, bold = _frames(lay, show, digits, fmt, best, transpose)
    return text_styler(text, bold), bool(bold.to_numpy().any())


def _check(show: str | None, best: str | None, digits: int, lay_kind: str) -> str:
    show = show or ("value" if lay_kind == "compare" else "ci")
    check_option("show", show, SHOWS)
    check_option("best", best, BESTS)
    _check_digits(digits)
    return show


def _check_digits(digits: Any) -> None:
    if not isinstance(digits, int) or not 0 <= digits <= 10:
        raise OptionError(f"`digits` must be an integer from 0 to 10, but {digits!r} was passed.")


def _table_and_kind(x: Any, layout: str) -> tuple[pd.DataFrame, str | None, str | None]:
    """The table of ``x`` (a DataFrame or a :class:`~metaeval._results.Result`), the kind
    whose layout it gets (None: shown as it is) and, for a result, its class's name."""
    check_option("layout", layout, TABLE_LAYOUTS)
    if not isinstance(x, Result | pd.DataFrame):
        frame_and_kind(x)  # the report's error, naming what it got
    table = x.table if isinstance(x, Result) else x
    name = type(x).__name__ if isinstance(x, Result) else None
    if layout == "table":
        return table, None, name
    kind = table_kind(x)
    if kind == "scores":  # a scores table is not a result: the error says what to make
        frame_and_kind(x)
    return table, (kind if kind in REPORT_KINDS else None), name


def _check_as_is(
    pooled: Any, show: Any, order: Any, transpose: bool, digits: int, name: str | None
) -> None:
    """The options of the layouts have no meaning for a table shown as it is: refuse them."""
    what = f"a {name}" if name else "a table shown as it is"
    for option, value, default in (
        ("pooled", pooled, None),
        ("show", show, None),
        ("order", order, None),
        ("transpose", transpose, False),
    ):
        if (value is not None) if default is None else bool(value):
            raise OptionError(
                f"`{option}` applies to effects, pooled, analyze() and compare() tables; "
                f"{what} is shown with its columns as they are, so leave `{option}` out "
                f"(it was {excerpt(value)})."
            )
    _check_digits(digits)


def _as_is(table: pd.DataFrame, digits: int, fmt: str) -> tuple[pd.DataFrame, list[bool]]:
    """The cells of ``table`` as display text for ``fmt`` (names escaped, numbers through
    the one formatter, p-value columns through ``format_p``) and which columns are numeric."""
    frame = counts_as_int(table.reset_index(drop=True))
    to: TextTarget = "latex" if fmt == "latex" else "unicode"
    p = [is_p_column(c) for c in frame.columns]
    numbers = (int, float, np.integer, np.floating, np.bool_)
    rows = [
        [
            format_cell(v, digits, p=is_p, to=to)
            if fmt == "latex" and isinstance(v, numbers)  # "$-$", "$<$": markup on purpose
            else escape(format_cell(v, digits, p=is_p, to=to), fmt)
            for v, is_p in zip(record, p, strict=True)
        ]
        for record in frame.itertuples(index=False, name=None)
    ]  # display only: one string per cell
    heads = [escape(c, fmt) for c in frame.columns]
    numeric = [pd.api.types.is_numeric_dtype(d) for d in frame.dtypes]
    return pd.DataFrame(rows, columns=heads, dtype=object), numeric


def _transposed(text: pd.DataFrame, numeric: list[bool]) -> tuple[pd.DataFrame, list[bool]]:
    """The display cells of a table shown as it is, its columns as rows: each row a
    column headed by the first text column whose values differ on every row (taken out
    of the rows), else by the row's number; the column names a first, left column."""
    head = next(
        (
            i
            for i, (col, n) in enumerate(zip(text.columns, numeric, strict=True))
            if not n and text[col].is_unique
        ),
        None,
    )
    if head is None:
        names = [str(i + 1) for i in range(len(text))]
        body = text
    else:
        names = list(text.iloc[:, head])
        body = text.drop(columns=text.columns[head])
    out = pd.DataFrame(body.to_numpy().T, columns=pd.Index(names, dtype=object), dtype=object)
    out.insert(0, "", list(body.columns))
    return out, [False] + [True] * len(names)


def _caption_as_is(caption: str | None, name: str | None, fmt: str) -> str | None:
    if caption is not None:
        return escape(caption, fmt)
    return escape(name, fmt) if name else None


@any_frame(tables=("pooled",))
@literal_signature
def to_latex(
    table: pd.DataFrame | Result,
    *,
    pooled: pd.DataFrame | None = None,
    show: TableCells | None = None,
    best: Best | None = "max",
    alpha: float | None = None,
    digits: int = 3,
    transpose: bool = False,
    caption: str | None = None,
    label: str | None = None,
    position: str | None = None,
    fit: bool = True,
    order: Sequence[str] | None = None,
    layout: TableLayout = "auto",
) -> str:
    r"""A result table as a LaTeX ``table`` with booktabs rules.

    Needs ``\usepackage{booktabs}`` in the preamble, and ``\usepackage{graphicx}``
    with ``fit=True`` (the default).

    Parameters
    ----------
    table : pandas.DataFrame or metaeval result
        An effects table (:func:`metaeval.effects`), a pooled table
        (:func:`metaeval.pool`), an :func:`metaeval.analyze` table or a
        :func:`metaeval.compare` table, in their layout: rows the systems
        (treatments; with several controls "treatment vs control"; for
        compare tables every system, lettered (a), (b), …), columns the tasks
        and/or metrics present (levels that do not vary are dropped), for an
        effects table plus a "Pooled" column when ``pooled`` is given.
        Any other result — a result object with parts (its ``.table``, e.g.
        of :func:`metaeval.metareg`) or a result table of another kind
        (:func:`metaeval.tukey`, :func:`metaeval.leaderboard`, ...) —
        is shown as it is: its columns as they are, numbers with ``digits``
        decimals, p-value columns (``p_value``, ``*_p_value``, ``p_adjusted``)
        as p-values (below 10^-digits: ``< 0.001``), counts as integers, the
        index left out; the caption defaults to the result's class name.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    pooled : pandas.DataFrame, optional
        The pooled result of ``table`` (an effects table), shown as an extra
        column.
    show : {"value", "ci", "p_value"}, optional
        What a cell carries besides its value: the confidence interval in
        brackets (default for effects and pooled tables) or the p-value. For
        compare tables (default ``"value"``: the system's mean) the interval
        and p-value are those of the difference to the control and need a
        table with one control.
    best : {"max", "min", None}, default "max"
        Bold the highest (lowest) value of each column (row when
        ``transpose``) among the rows, and every value that prints as it does
        at ``digits`` decimals (equal printed values are bold alike); only
        where at least two rows have values. For compare tables it also
        decides which system a significant difference favours.
    alpha : float, optional
        Significance level of the marks; defaults to the table's
        ``attrs["alpha"]``, else 0.05. Effects and pooled cells with
        p < α carry a dagger (using ``p_adjusted`` where present); compare
        cells carry the letters of the systems they are significantly
        better than (ranx's convention).
    digits : int, default 3
    transpose : bool, default False
        Systems as columns instead: tasks as rows, for many tasks and few systems.
        For a table shown as it is: its columns as rows, a column per row, headed by
        the first text column whose values differ on every row (dropped from the
        rows), else by the row numbers — for wide tables of few rows (a pooled row
        of 29 columns prints at text size as 29 rows).
    fit : bool, default True
        Scale the tabular down to ``\linewidth`` when it is wider than the line
        (``\resizebox`` of graphicx, as ranx does, but never enlarging a table
        that fits). Many tasks shrink the font; ``transpose=True`` keeps it.
    caption : str, optional
        Replaces the generated caption, which states the effect or test, α
        and the correction. Plain text, escaped like every name in the table;
        wrap it in :class:`metaeval.report.Markup` to pass LaTeX markup on purpose.
    label, position : str, optional
        ``\label`` (letters, digits and ``: . _ + / -``) and float position
        (e.g. ``"t"``); anything else is refused, since neither can be escaped.
    order : list of str, optional
        The order of the rows' systems, e.g. ``list(scores["system"].unique())``
        for the order of the scores; it must list every system of the table
        (names the table lacks are skipped). Rows "treatment vs control" follow
        the treatment, then the control. Default: a compare table's systems in
        :func:`metaeval.compare`'s order, whichever is the control (the category
        order of a categorical ``system`` column, else sorted by name); other
        tables' rows in the order they appear.
    layout : {"auto", "table"}, default "auto"
        ``"auto"``: the layout of the table's kind (effects, pooled, analysis,
        compare), any other result as it is; ``"table"``: the table as it is
        whatever its kind (the ``metaeval`` command's tables). ``pooled``,
        ``show`` and ``order`` belong to the layouts and are refused for a table
        shown as it is; ``best`` and ``alpha`` are not used there.

    Returns
    -------
    str

    Notes
    -----
    Every name and the caption go through :func:`escape`, so names print as they are and
    cannot run commands; a pooled row over fewer tasks (``k < k_total``) carries a mark
    and a footnote; ``rom`` and ``corr`` are shown as relative changes and r. The
    details: :ref:`report-tables`.

    Examples
    --------
    >>> import pandas as pd
    >>> eff = pd.DataFrame({"task": ["a_1", "b"], "treatment": "new", "control": "old",
    ...                     "effect": [0.1, -0.2], "variance": [0.01, 0.04],
    ...                     "ci_low": [-0.096, -0.592], "ci_high": [0.296, 0.192],
    ...                     "p_value": [0.317, 0.317]})
    >>> print(to_latex(eff, caption="Effects."))  # doctest: +NORMALIZE_WHITESPACE
    \begin{table}
    \caption{Effects.}
    \resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%
    \begin{tabular}{lrr}
    \toprule
     & a\_1 & b \\
    \midrule
    new & 0.100 [$-$0.096, 0.296] & $-$0.200 [$-$0.592, 0.192] \\
    \bottomrule
    \end{tabular}}
    \end{table}

    Any other result is shown as it is, e.g. a Tukey HSD table:

    >>> import metaeval
    >>> hsd = metaeval.load_example().query("task == 'iris' and metric == 'accuracy'")
    >>> tex = to_latex(metaeval.tukey(hsd)[["system_a", "system_b", "diff", "p_value"]],
    ...                caption="Tukey's HSD on iris.", fit=False)
    >>> print(tex.splitlines()[5])
    system\_a & system\_b & diff & p\_value \\
    """
    check_latex_options(label, position)
    table, kind, name = _table_and_kind(table, layout)
    if kind is None:
        _check_as_is(pooled, show, order, False, digits, name)
        text, numeric = _as_is(table, digits, "latex")
        if transpose:
            text, numeric = _transposed(text, numeric)
        return latex_table(
            text_styler(text).hide(axis="index"),
            _caption_as_is(caption, name, "latex"),
            column_format="".join("r" if n else "l" for n in numeric) or "l",
            label=label,
            position=position,
            centering=True,
            fit=fit,
        )
    mk = CaptionMarkup("latex")
    lay, alpha = build_layout(table, pooled, alpha, best, mk, order)
    cells = _check(show, best, digits, lay.kind)
    check_show(lay, cells, table)
    styler, any_bold = _styler(lay, cells, digits, "latex", best, transpose)
    text_caption = (
        escape(caption, "latex")
        if caption is not None
        else layout_caption(lay, cells, best if any_bold else None, alpha, transpose, mk)
    )
    return latex_table(
        styler,
        text_caption,
        column_format="l" * styler.data.index.nlevels + "r" * styler.data.shape[1],
        label=label,
        position=position,
        fit=fit,
        notes=lay.notes,
    )


@any_frame(tables=("pooled",))
@literal_signature
def style(
    table: pd.DataFrame | Result,
    *,
    pooled: pd.DataFrame | None = None,
    show: TableCells | None = None,
    best: Best | None = "max",
    alpha: float | None = None,
    digits: int = 3,
    transpose: bool = False,
    caption: str | None = None,
    order: Sequence[str] | None = None,
    layout: TableLayout = "auto",
):
    """The table of :func:`to_latex` as a pandas Styler with HTML cells (displays in notebooks).

    The same options as :func:`to_latex` but ``label``, ``position`` and ``fit``;
    footnotes follow the caption, under the table. A result without a layout of its
    own is shown as it is (names escaped, numbers through the one formatter).

    Parameters
    ----------
    table, pooled, show, best, alpha, digits, transpose, caption, order, layout
        As in :func:`to_latex`.

    Returns
    -------
    pandas.io.formats.style.Styler

    Examples
    --------
    >>> import metaeval
    >>> eff = metaeval.load_example().meta.effects("logistic_regression",
    ...                                            treatment=["knn", "naive_bayes"])
    >>> acc = eff.query("metric == 'accuracy'")
    >>> styler = acc.meta.style(pooled=acc.meta.pool(), digits=2)
    >>> styler.data.loc["naive_bayes"].iloc[:2].tolist()  # † marks p < 0.05
    ['−0.20<sup>†</sup> [−0.30, −0.11]', '−0.42<sup>†</sup> [−0.48, −0.37]']
    >>> styler.caption  # doctest: +ELLIPSIS
    'Standardized mean change (pooled SD) of each system over logistic_regression per task and pooled over tasks (random-effects model, REML, Knapp-Hartung t-test), ...'
    """
    table, kind, name = _table_and_kind(table, layout)
    if kind is None:
        _check_as_is(pooled, show, order, transpose, digits, name)
        text, _ = _as_is(table, digits, "html")
        styler = text_styler(text).hide(axis="index")
        head = _caption_as_is(caption, name, "html")
        return _html_look(styler if head is None else styler.set_caption(head))
    mk = CaptionMarkup("html")
    lay, alpha = build_layout(table, pooled, alpha, best, mk, order)
    cells = _check(show, best, digits, lay.kind)
    check_show(lay, cells, table)
    styler, any_bold = _styler(lay, cells, digits, "html", best, transpose)
    if caption is None:
        caption = layout_caption(lay, cells, best if any_bold else None, alpha, transpose, mk)
    else:
        caption = escape(caption, "html")
    caption = " ".join([caption, *lay.notes])
    return _html_look(styler.set_caption(caption))


def _html_look(styler: Any) -> Any:
    """The caption under the table, cells right-aligned."""
    return styler.set_table_styles(
        [
            {
                "selector": "caption",
                "props": "caption-side: bottom; text-align: left; font-size: 0.9em;",
            },
            {"selector": "td", "props": "text-align: right; padding: 0 0.6em;"},
        ]
    )


@any_frame(tables=("pooled",))
@literal_signature
def to_html(
    table: pd.DataFrame | Result,
    *,
    pooled: pd.DataFrame | None = None,
    show: TableCells | None = None,
    best: Best | None = "max",
    alpha: float | None = None,
    digits: int = 3,
    transpose: bool = False,
    caption: str | None = None,
    order: Sequence[str] | None = None,
    layout: TableLayout = "auto",
) -> str:
    """The table of :func:`to_latex` as an HTML ``<table>`` (same options but ``label``,
    ``position`` and ``fit``).

    Parameters
    ----------
    table, pooled, show, best, alpha, digits, transpose, caption, order, layout
        As in :func:`to_latex`.

    Returns
    -------
    str

    Examples
    --------
    >>> import metaeval
    >>> eff = metaeval.load_example().meta.effects("logistic_regression",
    ...                                            treatment=["knn", "naive_bayes"])
    >>> html = eff.query("metric == 'accuracy'").meta.to_html(digits=2)
    >>> html.count("<tr>")  # the header and one row per system
    3
    >>> "−0.20<sup>†</sup> [−0.30, −0.11]" in html, "font-weight: bold" in html
    (True, True)
    """
    return style(
        table,
        pooled=pooled,
        show=show,
        best=best,
        alpha=alpha,
        digits=digits,
        transpose=transpose,
        caption=caption,
        order=order,
        layout=layout,
    ).to_html()

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

import heapq
import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

import numpy as np
import pandas as pd

from .._kinds import KINDS, REPORT_KINDS, describe_kinds, table_kind
from .._options import (
    POOLED_COLUMNS,
    Best,
    TableCells,
    TableLayout,
    TextTarget,
    counts_as_int,
    effect_scale,
    escape_markdown,
    format_cell,
    format_number,
    format_p,
    is_p_column,
    literal_signature,
)
from .._results import Result
from ..errors import OptionError, SchemaError, check_alpha, check_option, excerpt, quote_list
from ..schema.frames import any_frame

__all__ = ["Markup", "escape", "escape_latex", "style", "to_html", "to_latex"]

SHOWS: tuple[str, ...] = get_args(TableCells)
BESTS: tuple[str | None, ...] = (*get_args(Best), None)
TABLE_LAYOUTS: tuple[str, ...] = get_args(TableLayout)
TEST_NAMES = {
    "t": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank test",
    "sign": "exact sign test",
    "randomization": "paired randomization test",
    "bootstrap": "paired studentized bootstrap test",
}
ADJUST_NAMES = {
    "holm": "Holm",
    "bonferroni": "Bonferroni",
    "fdr_bh": "Benjamini–Hochberg",
    "maxt": "Westfall–Young max-T",
}
_LATEX = {
    "\n": " ",
    "\r": " ",
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    # glyphs that the default OT1 font encoding puts elsewhere (< prints ¡, > ¿, | —, " ”)
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    '"': r"\texttt{\char34}",  # OT1 has no straight double quote but in typewriter
    # a row or a line that starts with [ after \\ would be read as \\'s optional argument
    "[": "{[}",
    "]": "{]}",
    # ` is typeset as an opening quote (`` and !` ?` as ligatures): the grave accent itself
    "`": r"\textasciigrave{}",
}


def escape_latex(text: Any) -> str:
    r"""``text`` with LaTeX's special characters ``\ & % $ # _ { } ~ ^`` escaped.

    Line breaks become spaces (a blank line would end a table cell's paragraph).
    ``< > | "``, which the default (OT1) font encoding prints as other glyphs
    (¡ ¿ — ”), become ``\textless{}``, ``\textgreater{}``, ``\textbar{}`` and a
    typewriter ``"`` (``\texttt{\char34}``), all in plain LaTeX without packages.
    Brackets are braced (``{[}``, ``{]}``): a table row that starts with ``[`` would
    otherwise be read as the optional argument of the ``\\`` before it. A backtick
    becomes ``\textasciigrave{}`` (LaTeX prints an opening quote), and ``--`` becomes
    ``-{}-`` (not a dash).
    Everything then reads as the literal text: a name such as ``\write18{...}``
    prints as itself instead of running.

    Examples
    --------
    >>> from metaeval.report import escape_latex
    >>> print(escape_latex("50% of R&D_{x}~^#$\\"))
    50\% of R\&D\_\{x\}\textasciitilde{}\textasciicircum{}\#\$\textbackslash{}
    >>> print(escape_latex('<a|"b">'))
    \textless{}a\textbar{}\texttt{\char34}b\texttt{\char34}\textgreater{}
    """
    # "--" and "---" would print as dashes: a hyphen before a hyphen is closed with {}
    return re.sub(r"-(?=-)", "-{}", "".join(_LATEX.get(c, c) for c in str(text)))


class Markup(str):
    r"""Text that is already LaTeX (or HTML) markup, passed through unescaped.

    Every other string that metaeval writes into LaTeX or HTML — names of
    tasks, systems and metrics, headers, captions, notes — is escaped by
    :func:`escape`. Wrap a caption in ``Markup`` to use markup in it on
    purpose, e.g. ``to_latex(table, caption=Markup(r"Effects, $\alpha = 0.05$."))``.
    """

    __slots__ = ()


def escape(text: Any, fmt: str) -> str:
    r"""``text`` escaped for ``fmt`` (``"latex"``, ``"html"`` or ``"markdown"``), unless it
    is :class:`Markup`.

    The one escaping function per format of metaeval's LaTeX, HTML and Markdown output,
    in Python and in the ``metaeval`` command alike: :func:`escape_latex`,
    ``html.escape`` (quotes too) and ``metaeval._options.escape_markdown``
    (a backslash before every character that could start Markdown markup).

    Examples
    --------
    >>> from metaeval.report import Markup, escape
    >>> escape("bm25_v2 <b>", "latex"), escape("bm25_v2 <b>", "html")
    ('bm25\\_v2 \\textless{}b\\textgreater{}', 'bm25_v2 &lt;b&gt;')
    >>> print(escape("[l](javascript:alert(1))", "markdown"))
    \[l\](javascript:alert(1))
    >>> escape(Markup("$x$"), "latex")
    '$x$'
    """
    if isinstance(text, Markup):
        return str(text)
    if fmt == "latex":
        return escape_latex(text)
    if fmt == "markdown":
        return escape_markdown(text)
    check_option("fmt", fmt, ["latex", "html", "markdown"])
    return html.escape(str(text))


_LABEL = re.compile(r"^[A-Za-z0-9:._+/-]+$")
_POSITION = re.compile(r"^[htbpH!]+$")


def _check_latex_options(label: str | None, position: str | None) -> None:
    """``\\label`` and float positions cannot be escaped: refuse what would break LaTeX."""
    if label is not None and not _LABEL.match(str(label)):
        raise OptionError(
            f"`label` may hold letters, digits and : . _ + / - only, but {excerpt(label)} was "
            "passed (a LaTeX label cannot be escaped)."
        )
    if position is not None and not _POSITION.match(str(position)):
        raise OptionError(
            f"`position` is a LaTeX float position such as 't', 'htbp' or 'H', but "
            f"{excerpt(position)} was passed."
        )


class _Markup:
    """The few pieces of markup captions need, in LaTeX or HTML."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt

    def esc(self, text: Any) -> str:
        return escape(text, self.fmt)

    def math(self, latex: str, plain: str) -> str:
        return f"${latex}$" if self.fmt == "latex" else html.escape(plain)

    @property
    def pct(self) -> str:
        return "\\%" if self.fmt == "latex" else "%"

    @property
    def dag(self) -> str:
        return "\\dag{}" if self.fmt == "latex" else "†"


# ------------------------------------------------------------------ the cells
@dataclass
class _Layout:
    cells: pd.DataFrame  # row, col, value, low, high, p, marks (list of str)
    rows: list[str]  # row order
    cols: list[tuple[str, ...]]  # column order
    col_names: list[str]  # names of the column levels
    legend: list[str]  # rows' letters for compare tables ("" otherwise)
    caption: str  # default caption in the target format
    kind: str
    adjust: str | None = None  # the correction behind p_adjusted, if any
    notes: list[str] = field(default_factory=list)  # footnotes, marked "note:<i>" in cells


def _kind(table: Any) -> tuple[pd.DataFrame, str]:
    """The table to write (a result's ``.table``) and its kind, one the report writes."""
    kind = table_kind(table)
    if kind in REPORT_KINDS:
        return (table.table if isinstance(table, Result) else table), kind
    if kind is not None:
        found = f"this is {KINDS[kind]}"
    elif isinstance(table, pd.DataFrame):
        found = f"this table has columns {list(table.columns)[:12]}"
    else:
        found = f"got a {type(table).__name__}"
    raise SchemaError(
        f"to_latex(), to_html() and style() take {describe_kinds(REPORT_KINDS)}; {found}. "
        "Make one with .meta.effects(), .meta.pool(), .meta.compare() or .meta.analyze()."
    )


def _levels(frame: pd.DataFrame, candidates: list[str]) -> list[str]:
    """The candidate columns that vary in ``frame`` (at least one, the last, is kept)."""
    present = [c for c in candidates if c in frame.columns]
    varying = [c for c in present if frame[c].nunique(dropna=False) > 1]
    return varying or present[-1:]


def _p_column(table: pd.DataFrame) -> str:
    return "p_adjusted" if "p_adjusted" in table.columns else "p_value"


def _pair_label(frame: pd.DataFrame) -> pd.Series:
    """Row labels of effect rows: the treatment, or "treatment vs control" with several controls."""
    treatment = frame["treatment"].astype(str)
    if "control" in frame.columns and frame["control"].nunique() > 1:
        return treatment + " vs " + frame["control"].astype(str)
    return treatment


def _effects_layout(
    effects: pd.DataFrame,
    pooled: pd.DataFrame | None,
    alpha: float,
    mk: _Markup,
    order: list[str] | None = None,
    *,
    pooled_only: bool = False,
) -> _Layout:
    """The layout of an effects table (with a pooled column), or of a pooled table alone
    (``pooled_only``: its rows are the pooled rows, with their footnotes)."""
    col_levels = _levels(effects, ["metric", "task"])
    notes: list[str] = []
    if pooled_only:
        note_of, notes = _coverage_notes(effects, None, mk)
        parts = [_effect_cells(effects, col_levels, alpha, note_of)]
    else:
        parts = [_effect_cells(effects, col_levels, alpha)]
    if pooled is not None:
        note_of, notes = _coverage_notes(pooled, effects, mk)
        parts.append(
            _effect_cells(pooled.assign(task=_pooled_label(pooled)), col_levels, alpha, note_of)
        )
    cells = pd.concat(parts, ignore_index=True)
    _check_one_cell_each(cells)
    effect_type = _single(effects, "effect_type", "md")
    controls = list(pd.unique(effects["control"].astype(str))) if "control" in effects else []
    level = _level(alpha)
    scale = {"corr": " (r)"}.get(effect_type, "")
    caption = (
        f"{effect_scale(effect_type).label}{scale} of each system over "
        f"{', '.join(mk.esc(c) for c in controls) or 'the control'} per task"
    )
    if pooled is not None:
        caption += f" and pooled over tasks ({_model(pooled)})"
    caption += f", with {level}{mk.pct} confidence intervals in brackets"
    adjusted = [t for t in (effects, pooled) if t is not None and "p_adjusted" in t.columns]
    adjust = (adjusted[0].attrs.get("adjust") or "multiplicity") if adjusted else None
    return _Layout(
        cells,
        _effect_rows([effects] if pooled is None else [effects, pooled], order),
        _order_cols(pd.Series(_merged(parts[0]) + list(dict.fromkeys(cells["col"])), dtype=object)),
        col_levels,
        [],
        caption,
        "effects",
        adjust,
        notes,
    )


def _merged(cells: pd.DataFrame) -> list[Any]:
    """The columns of ``cells`` in an order that keeps every row's order of its columns,
    else their order of appearance: a task that the first system lacks keeps its place
    among the others instead of moving to the end (rows in conflict: appearance order)."""
    first = list(dict.fromkeys(cells["col"]))
    rank = {c: i for i, c in enumerate(first)}
    after: dict[Any, set[Any]] = {c: set() for c in first}
    needs = dict.fromkeys(first, 0)
    previous: dict[Any, Any] = {}
    for row, col in zip(cells["row"], cells["col"], strict=True):  # display only: few cells
        before = previous.get(row)
        if before is not None and col not in after[before]:
            after[before].add(col)
            needs[col] += 1
        previous[row] = col
    ready = [rank[c] for c in first if needs[c] == 0]
    heapq.heapify(ready)
    merged = []
    while ready:
        col = first[heapq.heappop(ready)]
        merged.append(col)
        for nxt in after[col]:
            needs[nxt] -= 1
            if needs[nxt] == 0:
                heapq.heappush(ready, rank[nxt])
    return merged if len(merged) == len(first) else first


def _effect_rows(frames: list[pd.DataFrame], order: list[str] | None) -> list[str]:
    """The row labels of effect rows in order of appearance, or by the systems' places in
    ``order``: treatment first, then control (rows "treatment vs control")."""
    pairs = pd.concat(
        [
            pd.DataFrame(
                {
                    "row": _pair_label(f).to_numpy(),
                    "treatment": f["treatment"].astype(str).to_numpy(),
                    "control": f["control"].astype(str).to_numpy() if "control" in f else "",
                }
            )
            for f in frames
        ],
        ignore_index=True,
    ).drop_duplicates("row")
    if order is None:
        return pairs["row"].tolist()
    several = pairs["row"].ne(pairs["treatment"]).any()  # labels name the control too
    names = _order(pairs["treatment"]) + (_order(pairs["control"]) if several else [])
    rank = {n: i for i, n in enumerate(_ranked(list(dict.fromkeys(names)), order))}
    key = pairs["treatment"].map(rank) * (len(rank) + 1) + (
        pairs["control"].map(rank) if several else 0
    )
    return pairs.assign(_key=key).sort_values("_key", kind="stable")["row"].tolist()


def _check_order(order: Any) -> list[str] | None:
    """``order`` as a list of distinct names (text), or an error saying what it should be."""
    if order is None:
        return None
    if isinstance(order, str) or not isinstance(order, Iterable):
        raise OptionError(
            "`order` is a list of the systems' names in the order of the table's rows (e.g. "
            f"list(scores['system'].unique())), but {excerpt(order)} was passed."
        )
    names = [str(n) for n in order]
    repeated = [n for n in dict.fromkeys(names) if names.count(n) > 1]
    if repeated:
        raise OptionError(f"`order` names system(s) {quote_list(repeated)} more than once.")
    return names


def _ranked(names: list[str], order: list[str] | None) -> list[str]:
    """``names`` (the table's systems) in the order of ``order``, which must list them all
    (names in ``order`` that the table does not have are skipped: the scores' systems can
    be passed for any table made from them)."""
    if order is None:
        return names
    listed = set(order)
    lacking = [n for n in names if n not in listed]
    if lacking:
        raise OptionError(
            f"`order` must list every system of the table, but lacks {quote_list(lacking)} "
            f"(it lists {quote_list(order)})."
        )
    rank = {n: i for i, n in enumerate(order)}
    return sorted(names, key=rank.__getitem__)


_NOTE_MARKS = {"latex": (r"\ddag{}", r"\S{}", r"\P{}"), "html": ("‡", "§", "¶")}
"""Footnote marks: ‡ § ¶, then doubled (‡‡ §§ ¶¶), ..."""


def _note_mark(i: int, fmt: str) -> str:
    marks = _NOTE_MARKS[fmt]
    return marks[i % len(marks)] * (i // len(marks) + 1)


def _coverage_notes(
    pooled: pd.DataFrame, effects: pd.DataFrame | None, mk: _Markup
) -> tuple[np.ndarray, list[str]]:
    """The footnote of every pooled row with k < k_total (-1 for the others), and the notes:
    "Pooled over k of K tasks; missing: ..." (the tasks named when ``effects`` tells them)."""
    note_of = np.full(len(pooled), -1)
    if not {"k", "k_total"} <= set(pooled.columns):
        return note_of, []
    k = pooled["k"].to_numpy(float)
    total = pooled["k_total"].to_numpy(float)
    bodies: list[str] = []
    for i in np.flatnonzero((k > 0) & (k < total)):  # the few rows pooled over fewer tasks
        body = f"Pooled over {int(k[i])} of {int(total[i])} tasks"
        names = _missing_tasks(effects, pooled, int(i)) if effects is not None else None
        if names is not None and len(names) == total[i] - k[i]:
            body += "; missing: " + ", ".join(mk.esc(t) for t in names)
        if body not in bodies:
            bodies.append(body)
        note_of[i] = bodies.index(body)
    return note_of, [f"{_note_mark(j, mk.fmt)} {b}." for j, b in enumerate(bodies)]


def _missing_tasks(effects: pd.DataFrame, pooled: pd.DataFrame, i: int) -> list[str] | None:
    """The tasks of pooled row ``i``'s analysis (its keys but treatment and control) with an
    effect in ``effects`` that the row's own effects lack; None when the keys are not there."""
    keys = _pooled_keys(pooled)
    if "task" not in effects.columns or not {"treatment", "control"} <= set(keys):
        return None
    row = pooled.iloc[i]
    ok = np.isfinite(effects["effect"].to_numpy(float)) & np.isfinite(
        effects["variance"].to_numpy(float)
    )
    family = ok.copy()
    for c in keys:
        if c in ("treatment", "control"):
            continue
        if c not in effects.columns:
            return None  # a subgroup of a mapping: the effects do not say which tasks are in it
        family &= (effects[c] == row[c]).to_numpy()
    mine = family & (effects["treatment"] == row["treatment"]).to_numpy()
    mine &= (effects["control"] == row["control"]).to_numpy()
    have = set(effects.loc[mine, "task"].astype(str))
    return [t for t in _order(effects.loc[family, "task"]) if t not in have]


def _pooled_keys(pooled: pd.DataFrame) -> list[str]:
    """The key columns of a pooled table: those before its results."""
    results = [i for i, c in enumerate(pooled.columns) if c in POOLED_COLUMNS]
    return list(pooled.columns[: results[0]]) if results else []


def _pooled_label(pooled: pd.DataFrame) -> pd.Series | str:
    """Column label of pooled rows: "Pooled", or "Pooled: <subgroup>" for the key columns that
    :func:`metaeval.pool` added with ``by=`` or ``groups=`` (the columns before its results)."""
    extra = [
        c
        for c in _pooled_keys(pooled)
        if c not in ("effect_type", "metric", "treatment", "control")
    ]
    if not extra:
        return "Pooled"
    return "Pooled: " + pooled[extra].astype(str).agg(", ".join, axis=1)


def _check_one_cell_each(cells: pd.DataFrame) -> None:
    """One value per (row, column) of the table, or an error saying which rows collide."""
    dup = cells.duplicated(["row", "col"], keep=False)
    if dup.any():
        first = cells.loc[dup].iloc[0]
        raise SchemaError(
            f"The table has {int(dup.sum())} rows that would share a cell (e.g. row "
            f"{excerpt(first['row'])}, column {excerpt(first['col'])}): rows must differ in "
            "treatment, control, metric or task. Select one analysis first (for instance one "
            "subgroup or one value of an extra key column)."
        )


def _effect_cells(
    frame: pd.DataFrame, col_levels: list[str], alpha: float, note_of: np.ndarray | None = None
) -> pd.DataFrame:
    effect_type = _single(frame, "effect_type", "md")
    forward = effect_scale(effect_type).report
    p = (
        frame[_p_column(frame)].to_numpy(float)
        if _p_column(frame) in frame
        else np.full(len(frame), np.nan)
    )
    marks = [["dagger"] if np.isfinite(v) and v < alpha else [] for v in p]
    if note_of is not None:
        for i in np.flatnonzero(note_of >= 0):
            marks[i].append(f"note:{note_of[i]}")
    return pd.DataFrame(
        {
            "row": _pair_label(frame).to_numpy(),
            "col": list(
                zip(
                    *(
                        frame[c].astype(str) if c in frame else frame["task"].astype(str)
                        for c in col_levels
                    ),
                    strict=True,
                )
            ),
            "value": forward(frame["effect"].to_numpy(float)),
            "low": forward(frame["ci_low"].to_numpy(float)),
            "high": forward(frame["ci_high"].to_numpy(float)),
            "p": p,
            "marks": marks,
        }
    )


def _compare_layout(
    table: pd.DataFrame, alpha: float, best: str | None, mk: _Markup, order: list[str] | None
) -> _Layout:
    col_levels = _levels(table, ["metric", "task"])
    col = list(zip(*(table[c].astype(str) for c in col_levels), strict=True))
    systems = _ranked(_systems(table), order)
    letters = {s: _letter(i) for i, s in enumerate(systems)}
    p = table[_p_column(table)].to_numpy(float)
    diff = table["diff"].to_numpy(float)
    sign = -1.0 if best == "min" else 1.0
    significant = np.isfinite(p) & (p < alpha)
    winner = np.where(sign * diff > 0, table["treatment"].astype(str), table["control"].astype(str))
    loser = np.where(sign * diff > 0, table["control"].astype(str), table["treatment"].astype(str))
    single_control = table["control"].nunique() == 1
    rows = []
    for who, mean_col in (("treatment", "mean_treatment"), ("control", "mean_control")):
        part = pd.DataFrame(
            {
                "row": table[who].astype(str).to_numpy(),
                "col": col,
                "value": table[mean_col].to_numpy(float),
                # the difference to the control belongs to the treatment's cell
                "low": table["ci_low"].to_numpy(float)
                if who == "treatment" and single_control
                else np.nan,
                "high": table["ci_high"].to_numpy(float)
                if who == "treatment" and single_control
                else np.nan,
                "p": p if who == "treatment" and single_control else np.nan,
            }
        )
        rows.append(part)
    cells = pd.concat(rows, ignore_index=True).drop_duplicates(["row", "col"], keep="first")
    wins = pd.DataFrame(
        {
            "row": winner[significant],
            "col": [col[i] for i in np.flatnonzero(significant)],
            "mark": loser[significant],
        }
    )
    marks = wins.groupby(["row", "col"], sort=False)["mark"].agg(
        lambda m: sorted(letters[x] for x in set(m))
    )
    cells["marks"] = [
        marks.get((r, c), []) for r, c in zip(cells["row"], cells["col"], strict=True)
    ]
    cells["row"] = [f"({letters[r]}) {r}" for r in cells["row"]]
    attrs = table.attrs
    test = attrs.get("test") or _single(table, "test", "t")
    name = TEST_NAMES.get(test, str(test))
    if test in ("randomization", "bootstrap") and attrs.get("n_resamples"):
        name += f", {attrs['n_resamples']:,} resamples, seed {attrs.get('seed')}"
    elif test == "randomization" and attrs.get("exact"):
        name += ", all sign flips"
    alternative = attrs.get("alternative", "two-sided")
    adjust = attrs.get("adjust")
    correction = (
        f", {ADJUST_NAMES.get(adjust, adjust)} correction over the pairs of each task and metric"
        if adjust and "p_adjusted" in table.columns
        else ", no correction for multiple comparisons"
    )
    level = mk.math("\\alpha = " + _num(alpha), "α = " + _num(alpha))
    caption = (
        "Mean score of each system. A superscript letter marks a significant difference "
        f"in favour of the system over the system with that letter ({mk.esc(name)}, "
        f"{alternative}, {level}{correction})"
    )
    rows_order = [f"({letters[s]}) {s}" for s in systems]
    adjusted = (adjust or "multiplicity") if "p_adjusted" in table.columns else None
    return _Layout(
        cells,
        rows_order,
        _order_cols(cells["col"]),
        col_levels,
        list(letters.values()),
        caption,
        "compare",
        adjusted,
    )


def _systems(table: pd.DataFrame) -> list[str]:
    """The systems of a compare table in :func:`metaeval.compare`'s order, whichever is the
    control: the category order of categorical columns, else sorted by name."""
    treatment, control = table["treatment"], table["control"]
    if isinstance(treatment.dtype, pd.CategoricalDtype) and isinstance(
        control.dtype, pd.CategoricalDtype
    ):
        present = set(treatment.astype(str)) | set(control.astype(str))
        categories = [*treatment.cat.categories, *control.cat.categories]
        return [n for n in dict.fromkeys(map(str, categories)) if n in present]
    names = pd.unique(pd.concat([treatment, control], ignore_index=True).astype(object))
    try:
        ordered = sorted(names)
    except TypeError:  # names of different types: by their text
        ordered = sorted(names, key=str)
    return list(dict.fromkeys(str(n) for n in ordered))


def _model(pooled: pd.DataFrame) -> str:
    method = pooled.attrs.get("method") or _single(pooled, "method", "")
    test = pooled.attrs.get("test") or _single(pooled, "test", "z")
    model = "common-effect model" if method in ("EE", "FE") else f"random-effects model, {method}"
    return model + {"z": "", "t": ", t-test"}.get(test, ", Knapp-Hartung t-test")


def _letter(i: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    return alphabet[i] if i < 26 else alphabet[i // 26 - 1] + alphabet[i % 26]


def _single(frame: pd.DataFrame, col: str, default: str) -> str:
    if col not in frame.columns:
        return default
    values = pd.unique(frame[col])
    if len(values) > 1:
        raise SchemaError(
            f"A table holds one {col} at a time, but this one has {quote_list(values)}; select "
            "one first."
        )
    return str(values[0]) if len(values) else default


def _order(values: pd.Series) -> list[str]:
    return list(dict.fromkeys(values.astype(str)))


def _order_cols(values: pd.Series) -> list[tuple[str, ...]]:
    """Columns in order of appearance, grouped by their first level (a metric's pooled column
    follows its tasks)."""
    cols = list(dict.fromkeys(values))
    first = list(dict.fromkeys(c[0] for c in cols))
    return sorted(cols, key=lambda c: first.index(c[0])) if len(cols[0]) > 1 else cols


def _names(names: list[str]) -> str:
    return ", ".join(repr(n) for n in names)


def _level(alpha: float) -> str:
    return format_number(100 * (1 - alpha))


def _num(x: float) -> str:
    return format_number(x)


def _layout(
    table: pd.DataFrame,
    pooled: pd.DataFrame | None,
    alpha: float | None,
    best: str | None,
    mk: _Markup,
    order: Any = None,
) -> tuple[_Layout, float]:
    table, kind = _kind(table)
    order = _check_order(order)
    if alpha is None:
        alpha = float(
            table.attrs.get(
                "alpha", pooled.attrs.get("alpha", 0.05) if pooled is not None else 0.05
            )
        )
    alpha = check_alpha(alpha)
    if kind == "analysis":
        if pooled is not None:
            raise OptionError("An analyze() table holds its pooled rows already; omit `pooled=`.")
        table, pooled = _split_analysis(table)
        kind = "effects"
    if pooled is not None and kind != "effects":
        raise OptionError(
            "`pooled=` adds a pooled column to an effects table; this is a " + kind + " table."
        )
    if kind == "compare":
        return _compare_layout(table, alpha, best, mk, order), alpha
    if kind == "pooled":
        frame = table.assign(task=_pooled_label(table))
        lay = _effects_layout(
            frame.assign(variance=frame["se"] ** 2), None, alpha, mk, order, pooled_only=True
        )
        lay.caption = lay.caption.replace(" per task", f" pooled over tasks ({_model(table)})")
        return lay, alpha
    return _effects_layout(table, pooled, alpha, mk, order), alpha


def _split_analysis(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An :func:`metaeval.analyze` table as the effects and pooled tables it was made of."""
    keys = [c for c in ("effect_type", "metric", "treatment", "control") if c in table.columns]
    is_task = (table["row"] == "task").to_numpy()
    effects = table[is_task].drop(columns=["row", "weight"], errors="ignore")
    effects = effects.assign(variance=effects["se"] ** 2)
    summary = table[~is_task].drop(columns=["row", "task", "weight"], errors="ignore")
    model = {
        "method": table.attrs.get("method", ""),
        "test": table.attrs.get("test", "z"),
    }
    pooled = summary[keys].assign(**model).join(summary.drop(columns=keys))
    # k and k_total of each summary (as pool() reports them) from its task rows
    valid = effects[
        np.isfinite(effects["effect"].to_numpy(float))
        & np.isfinite(effects["variance"].to_numpy(float))
    ]
    family = [c for c in keys if c not in ("treatment", "control")]
    k = valid.groupby(keys, sort=False, dropna=False).size().rename("k")
    total = (
        valid.groupby(family, sort=False, dropna=False)["task"].nunique().rename("k_total")
        if family
        else pd.Series([valid["task"].nunique()], index=[0], name="k_total")
    )
    counts = pooled[keys].join(k, on=keys)
    counts = counts.join(total, on=family) if family else counts.assign(k_total=total.iloc[0])
    pooled.insert(len(keys) + 2, "k", counts["k"].fillna(0).astype(np.int64).to_numpy())
    pooled.insert(len(keys) + 3, "k_total", counts["k_total"].fillna(0).astype(np.int64).to_numpy())
    pooled.attrs.update(table.attrs)
    return effects, pooled


# --------------------------------------------------------------- formatting
def _text(x: float, digits: int, fmt: str, signed: bool = False, bound: bool = False) -> str:
    """A number of a cell; ``bound``: an interval bound (a negative one keeps its sign)."""
    to: TextTarget = "latex" if fmt == "latex" else "unicode"
    missing = "--" if fmt == "latex" else "–"
    return format_number(x, digits, signed=signed, to=to, missing=missing, keep_sign=bound)


def _marks(marks: list[str], fmt: str) -> str:
    """Superscript marks: "dagger" (p < α), "note:<i>" (the i-th footnote) or letters."""
    if not marks:
        return ""

    def mark(m: str) -> str:
        if m == "dagger":
            return r"\dag{}" if fmt == "latex" else "†"
        if m.startswith("note:"):
            return _note_mark(int(m[5:]), fmt)
        return m

    text = "".join(mark(m) for m in marks)
    if fmt == "latex":
        return r"\textsuperscript{" + text + "}"
    return f"<sup>{html.escape(text)}</sup>"


def _cell(row: pd.Series, show: str, digits: int, fmt: str, kind: str) -> str:
    text = _text(row["value"], digits, fmt) + _marks(row["marks"], fmt)
    signed = kind == "compare"  # the interval is of a difference there
    if show == "ci" and np.isfinite(row["low"]):
        low, high = (_text(row[b], digits, fmt, signed, bound=True) for b in ("low", "high"))
        text += f" [{low}, {high}]"
    elif show == "p_value" and np.isfinite(row["p"]):
        ptext = format_p(row["p"], digits, to="latex" if fmt == "latex" else "unicode", equals=True)
        text += f" (p {ptext})"
    return text


def _frames(lay: _Layout, show: str, digits: int, fmt: str, best: str | None, transpose: bool):
    """(strings, bold mask) DataFrames in the final orientation, labels escaped."""
    cells = lay.cells.assign(
        text=[_cell(r, show, digits, fmt, lay.kind) for _, r in lay.cells.iterrows()]
    )
    text = cells.pivot(index="row", columns="col", values="text").reindex(
        index=lay.rows, columns=lay.cols
    )
    value = cells.pivot(index="row", columns="col", values="value").reindex(
        index=lay.rows, columns=lay.cols
    )
    bold = pd.DataFrame(False, index=value.index, columns=value.columns)
    if best is not None:
        bold.iloc[:, :] = _best(value.to_numpy(float), best, digits)
    text = text.fillna("")
    escape = escape_latex if fmt == "latex" else html.escape
    row_labels = [escape(r) for r in text.index]
    col_labels = [tuple(escape(x) for x in c) for c in text.columns]
    _check_distinct(list(text.index), row_labels, "rows", "treatment or control")
    _check_distinct(list(text.columns), col_labels, "columns", " or ".join(lay.col_names))
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


def _best(arr: np.ndarray, best: str, digits: int) -> np.ndarray:
    """Which values of each column are bold: all that print as the best one does (at
    ``digits`` decimals), where the column has at least two values."""
    finite = np.isfinite(arr)
    enough = finite.sum(axis=0) >= 2
    filled = np.where(finite, arr, -np.inf if best == "max" else np.inf)
    target = filled.max(axis=0) if best == "max" else filled.min(axis=0)
    printed = np.vectorize(lambda x: format_number(x, digits), otypes=[object])
    return finite & enough[None, :] & (printed(arr) == printed(target)[None, :])


def _check_distinct(names: list[Any], labels: list[Any], what: str, column: str) -> None:
    """Two rows (columns) whose labels print alike cannot be told apart: an error naming them.

    A line break and runs of spaces print as one space in LaTeX and HTML alike."""
    shown = [
        " ".join(" ".join(str(x).split()) for x in (label if isinstance(label, tuple) else [label]))
        for label in labels
    ]
    seen: dict[str, int] = {}
    for i, text in enumerate(shown):
        j = seen.setdefault(text, i)
        if j != i:
            a, b = (
                n[0] if isinstance(n, tuple) and len(n) == 1 else n for n in (names[j], names[i])
            )
            raise SchemaError(
                f"The {what} {a!r} and {b!r} of the table print alike ({text!r}: a line break "
                "or several spaces print as one space), so a reader could not tell them apart. "
                f"Rename one of them in the table's {column} column first."
            )


FIT_OPEN = "\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%\n"
"""Opens a ``\\resizebox`` that scales what it holds down to the line's width when it is
wider, and leaves it as it is otherwise (``\\width`` is the natural width)."""


def text_styler(text: pd.DataFrame, bold: pd.DataFrame | None = None) -> Any:
    """A Styler showing ``text`` (cells and labels already rendered) as it is.

    The one place where metaeval's tables meet pandas' Styler: :func:`to_latex`,
    :func:`to_html` and the ``metaeval`` command's LaTeX output all go through
    it. ``bold`` (same shape, booleans) marks cells to set in bold.
    """
    bold = pd.DataFrame(False, index=text.index, columns=text.columns) if bold is None else bold
    labels = None
    if not isinstance(text.columns, pd.MultiIndex):
        # pandas' Styler iterates rows as namedtuples named after the columns, which fails
        # for names equal after Unicode normalization (é as U+00E9 and as e + U+0301):
        # style positions and show the names as labels
        labels = list(text.columns)
        text = text.set_axis(range(text.shape[1]), axis=1)
        bold = bold.set_axis(range(bold.shape[1]), axis=1)
    styler = text.style
    if labels is not None:  # relabel_index reads labels as format strings: double the braces
        shown = [str(x).replace("{", "{{").replace("}", "}}") for x in labels]
        styler = styler.relabel_index(shown, axis="columns")
    mask = bold.to_numpy()
    if mask.any():
        styler = styler.apply(lambda _: np.where(mask, "font-weight: bold;", ""), axis=None)
    return styler


def latex_table(
    styler: Any,
    caption: str | None,
    *,
    column_format: str,
    label: str | None = None,
    position: str | None = None,
    centering: bool = False,
    fit: bool = False,
    notes: list[str] | None = None,
) -> str:
    """``styler`` as a LaTeX ``table`` float with booktabs rules and ``caption`` (LaTeX);
    ``fit`` shrinks the tabular to ``\\linewidth`` when it is wider (graphicx); ``notes``
    (LaTeX) are set in small type under the tabular, one per line."""
    text: str = styler.to_latex(
        hrules=True,
        caption=caption,
        label=label,
        position=position,
        position_float="centering" if centering else None,
        environment="table",
        convert_css=True,
        multicol_align="c",
        column_format=column_format,
        multirow_align="naive",  # row groups without the multirow package
    )
    if fit:  # shrink the tabular to the line's width when it is wider, never enlarge it
        start, end = (
            text.index("\\begin{tabular}"),
            text.index("\\end{tabular}") + len("\\end{tabular}"),
        )
        text = text[:start] + FIT_OPEN + text[start:end] + "}" + text[end:]
    return add_latex_notes(text, notes or [])


def add_latex_notes(text: str, notes: list[str]) -> str:
    """``text`` (a LaTeX ``table`` float) with ``notes`` (LaTeX) set in small type under
    its tabular, inside the float, one per line."""
    if not notes:
        return text
    end = text.rindex("\\end{table}")
    lines = "".join(f"{note}\\par\n" for note in notes)
    return text[:end] + "\\par\\smallskip{\\footnotesize\n" + lines + "}\n" + text[end:]


def _styler(lay: _Layout, show: str, digits: int, fmt: str, best: str | None, transpose: bool):
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


def _caption(
    lay: _Layout, show: str, best: str | None, alpha: float, transpose: bool, mk: _Markup
) -> str:
    head = lay.caption
    if show == "p_value":  # the cells carry p-values instead of intervals
        head = head.replace(f", with {_level(alpha)}{mk.pct} confidence intervals in brackets", "")
    return head + _caption_tail(lay, show, best, alpha, transpose, mk)


def _caption_tail(
    lay: _Layout, show: str, best: str | None, alpha: float, transpose: bool, mk: _Markup
) -> str:
    tail = ""
    adjusted = f"{ADJUST_NAMES.get(lay.adjust, lay.adjust)}-adjusted " if lay.adjust else ""
    if lay.kind != "compare" and lay.cells["marks"].map(bool).any():
        tail += f". {mk.dag} {adjusted}" + mk.math("p < " + _num(alpha), "p < " + _num(alpha))
    if lay.kind == "compare" and show == "ci":
        tail += f". Brackets: {_level(alpha)}{mk.pct} confidence interval of the difference to the control"
    if lay.kind == "compare" and show == "p_value":
        tail += f". Parentheses: {adjusted}p-value of the difference to the control"
    if lay.kind != "compare" and show == "p_value":
        tail += f". Parentheses: {adjusted}p-values"
    if best is not None:
        where = "row" if transpose else "column"
        tail += f". Bold: the {'highest' if best == 'max' else 'lowest'} value of each {where}"
    return tail + "."


def _table_and_kind(x: Any, layout: str) -> tuple[pd.DataFrame, str | None, str | None]:
    """The table of ``x`` (a DataFrame or a :class:`~metaeval._results.Result`), the kind
    whose layout it gets (None: shown as it is) and, for a result, its class's name."""
    check_option("layout", layout, TABLE_LAYOUTS)
    if not isinstance(x, Result | pd.DataFrame):
        _kind(x)  # the report's error, naming what it got
    table = x.table if isinstance(x, Result) else x
    name = type(x).__name__ if isinstance(x, Result) else None
    if layout == "table":
        return table, None, name
    kind = table_kind(x)
    if kind == "scores":  # a scores table is not a result: the error says what to make
        _kind(x)
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
        (:func:`metaeval.tukey`, :func:`metaeval.ranking.leaderboard`, ...) —
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
    Every string that reaches the LaTeX source — task, system and metric
    names, headers, the caption — goes through :func:`escape` (``\ & % $ #
    _ { } ~ ^ < > | "`` escaped, line breaks made spaces), so names print as they are
    and cannot run commands (``\write18``) even under ``pdflatex
    -shell-escape``. Non-ASCII letters need a font that has them (pdflatex's
    default covers Latin accents). Effects of ``rom`` are reported as relative changes and
    of ``corr`` as r (their CIs transformed the same way).

    A pooled row over fewer tasks than the other rows of its metric (``k <
    k_total`` of :func:`metaeval.pool`: a system without scores on a task)
    carries a mark (‡, §, ¶, ...) and a footnote under the table, "Pooled over
    5 of 6 tasks; missing: nfcorpus." (the tasks named when the effects table
    is there to tell them). Two rows or columns whose names print alike (a line
    break prints as a space) are refused with :class:`metaeval.SchemaError`.

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
    _check_latex_options(label, position)
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
    mk = _Markup("latex")
    lay, alpha = _layout(table, pooled, alpha, best, mk, order)
    cells = _check(show, best, digits, lay.kind)
    _check_show(lay, cells, table)
    styler, any_bold = _styler(lay, cells, digits, "latex", best, transpose)
    text_caption = (
        escape(caption, "latex")
        if caption is not None
        else _caption(lay, cells, best if any_bold else None, alpha, transpose, mk)
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


def _check_show(lay: _Layout, show: str, table: pd.DataFrame) -> None:
    table = table.table if isinstance(table, Result) else table
    if lay.kind == "compare" and show != "value" and table["control"].nunique() > 1:
        raise OptionError(
            f"show={show!r} puts the difference to the control in each cell, but this compare "
            f"table has several controls ({_names(_order(table['control'])[:5])}); "
            "use show='value' or compare(control=...)."
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
    mk = _Markup("html")
    lay, alpha = _layout(table, pooled, alpha, best, mk, order)
    cells = _check(show, best, digits, lay.kind)
    _check_show(lay, cells, table)
    styler, any_bold = _styler(lay, cells, digits, "html", best, transpose)
    if caption is None:
        caption = _caption(lay, cells, best if any_bold else None, alpha, transpose, mk)
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

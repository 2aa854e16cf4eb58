"""The four layouts of result tables: effects, pooled, analyze() and compare().

Each lays a table out as one long frame of cells (row label, column label, value,
interval, p-value, marks) with its row and column order, caption and notes
(:class:`Layout`); :mod:`metaeval.report.tables` pivots it to systems × columns and
renders it.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._kinds import KINDS, REPORT_KINDS, describe_kinds, table_kind
from .._options import (
    POOLED_COLUMNS,
    effect_scale,
    format_number,
)
from .._results import Result
from ..errors import OptionError, SchemaError, check_alpha, excerpt, quote_list
from ._render import CaptionMarkup, note_mark

__all__ = ["Layout", "build_layout", "TEST_NAMES", "ADJUST_NAMES"]

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


# ------------------------------------------------------------------ the cells
@dataclass
class Layout:
    cells: pd.DataFrame  # row, col, value, low, high, p, marks (list of str)
    rows: list[str]  # row order
    cols: list[tuple[str, ...]]  # column order
    col_names: list[str]  # names of the column levels
    legend: list[str]  # rows' letters for compare tables ("" otherwise)
    caption: str  # default caption in the target format
    kind: str
    adjust: str | None = None  # the correction behind p_adjusted, if any
    notes: list[str] = field(default_factory=list)  # footnotes, marked "note:<i>" in cells


def frame_and_kind(table: Any) -> tuple[pd.DataFrame, str]:
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
    mk: CaptionMarkup,
    order: list[str] | None = None,
    *,
    pooled_only: bool = False,
) -> Layout:
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
    return Layout(
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


def _coverage_notes(
    pooled: pd.DataFrame, effects: pd.DataFrame | None, mk: CaptionMarkup
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
    return note_of, [f"{note_mark(j, mk.fmt)} {b}." for j, b in enumerate(bodies)]


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
    table: pd.DataFrame, alpha: float, best: str | None, mk: CaptionMarkup, order: list[str] | None
) -> Layout:
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
    return Layout(
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


def build_layout(
    table: pd.DataFrame,
    pooled: pd.DataFrame | None,
    alpha: float | None,
    best: str | None,
    mk: CaptionMarkup,
    order: Any = None,
) -> tuple[Layout, float]:
    table, kind = frame_and_kind(table)
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


def layout_caption(
    lay: Layout, show: str, best: str | None, alpha: float, transpose: bool, mk: CaptionMarkup
) -> str:
    head = lay.caption
    if show == "p_value":  # the cells carry p-values instead of intervals
        head = head.replace(f", with {_level(alpha)}{mk.pct} confidence intervals in brackets", "")
    return head + _caption_tail(lay, show, best, alpha, transpose, mk)


def _caption_tail(
    lay: Layout, show: str, best: str | None, alpha: float, transpose: bool, mk: CaptionMarkup
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


def check_show(lay: Layout, show: str, table: pd.DataFrame) -> None:
    table = table.table if isinstance(table, Result) else table
    if lay.kind == "compare" and show != "value" and table["control"].nunique() > 1:
        raise OptionError(
            f"show={show!r} puts the difference to the control in each cell, but this compare "
            f"table has several controls ({_names(_order(table['control'])[:5])}); "
            "use show='value' or compare(control=...)."
        )

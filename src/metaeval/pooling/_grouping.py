"""An effects table split into the groups to pool: keys, subgroups, one row per ``over`` value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._options import POOLED_COLUMNS
from ..errors import DependenceWarning, SchemaError, check_no_clash, format_groups, quote_list, warn
from ..schema import validate_effects

__all__ = [
    "GROUP_KEYS",
    "RESULT_COLUMNS",
    "Grouped",
    "group",
    "as_list",
    "valid_rows",
    "slots",
    "pairs_within",
    "coverage",
]


GROUP_KEYS = ("effect_type", "metric", "treatment", "control")
"""Columns that identify separate analyses whenever a table has them."""


RESULT_COLUMNS = {
    "n",
    "mean_treatment",
    "mean_control",
    "effect",
    "variance",
    "se",
    "z",
    "ci_low",
    "ci_high",
    "p_value",
    "weight",
}


#: The columns :func:`pool` writes besides the group keys (no key may use them).
def as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


# ------------------------------------------------------------------- grouping
@dataclass
class Grouped:
    """An effects table split into the groups to pool."""

    table: pd.DataFrame  # validated, with the subgroup column when `by` is given
    keys: list[str]  # columns identifying a pooled group (subgroup included)
    subgroup: str | None  # the subgroup column, if any
    over: list[str]
    code: np.ndarray  # group of every row
    key_frame: pd.DataFrame  # one row per group

    @property
    def n_groups(self) -> int:
        return len(self.key_frame)


def group(
    effects: pd.DataFrame,
    over: str | Sequence[str],
    groups: str | Sequence[str] | None,
    by: str | Mapping[Any, Any] | None,
    *,
    warn_dependence: bool = True,
) -> Grouped:
    df = validate_effects(effects)
    over_cols, group_cols = as_list(over), as_list(groups)
    missing = [c for c in over_cols + group_cols if c not in df.columns]
    if missing:
        raise SchemaError(
            f"Column(s) {missing} named in `over`/`groups` are not in the effects table; "
            f"its columns are {quote_list(list(df.columns))}."
        )
    clash = [c for c in group_cols if c in over_cols or c in RESULT_COLUMNS]
    if clash:
        raise SchemaError(f"Column(s) {clash} cannot be used in `groups`.")
    named = group_cols + ([by] if isinstance(by, str) else [])
    check_no_clash(named, POOLED_COLUMNS, what="pool()")
    keys = [c for c in GROUP_KEYS if c in df.columns and c not in over_cols]
    keys += [c for c in group_cols if c not in keys]

    subgroup = None
    if by is not None:
        df, subgroup = _add_subgroup(df, by, over_cols)
        keys = keys + [subgroup]

    column_codes = {c: pd.factorize(df[c], use_na_sentinel=False)[0] for c in keys + over_cols}
    code = _combine([column_codes[c] for c in keys], len(df))
    cell = _combine([code, *(column_codes[c] for c in over_cols)], len(df))
    if warn_dependence and "metric" in over_cols:
        # dependent: two metrics of one task (the other `over` columns) in one group
        same_task = _combine(
            [code, *(column_codes[c] for c in over_cols if c != "metric")], len(df)
        )
        if len(same_task) and np.bincount(same_task).max() > 1:
            warn(
                "Pooling over metrics: some groups hold several metrics of one task, measured "
                "on the same queries and so not independent; the pooled standard error is "
                "too small.",
                DependenceWarning,
            )
    dup = np.bincount(cell)[cell] > 1 if len(cell) else np.zeros(0, dtype=bool)
    if dup.any():
        example = df.loc[dup, keys + over_cols].head(4)
        where = f"within a group of {keys}" if keys else "(there are no group columns)"
        raise SchemaError(
            f"{int(dup.sum())} rows repeat the same {over_cols} {where}, "
            f"so it is unclear what to pool, e.g.:\n{format_groups(example)}\n"
            "Name the columns that tell these analyses apart with `groups=`."
        )
    n_groups = int(code.max()) + 1 if len(code) else 0
    first = np.full(n_groups, len(df))
    np.minimum.at(first, code, np.arange(len(df)))
    key_frame = df[keys].iloc[first].reset_index(drop=True)
    if not keys:
        key_frame = pd.DataFrame(index=range(n_groups))
    return Grouped(df, keys, subgroup, over_cols, code, key_frame)


def _combine(codes: list[np.ndarray], n: int) -> np.ndarray:
    """Codes 0..g-1 of the distinct combinations of several code arrays.

    Combinations are numbered in lexicographic order of the codes (each column
    numbered by first appearance), so a table sorted by its keys keeps its
    order. A dense grid of all combinations is used while it is small; past
    that, hashing.
    """
    combined = np.zeros(n, dtype=np.int64)
    size = 1
    for c in codes:
        width = int(c.max()) + 1 if len(c) else 1
        if size * width > max(4 * n, 2**20):  # keep the grid small: renumber what occurs
            combined, size = _compact(combined, size)
        combined = combined * width + c
        size *= width
    return _compact(combined, size)[0]


def _compact(combined: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    if size <= max(4 * len(combined), 2**20):
        present = np.zeros(size, dtype=bool)
        present[combined] = True
        number = np.cumsum(present) - 1
        return number[combined], int(present.sum())
    uniques, inverse = np.unique(combined, return_inverse=True)
    return inverse.ravel(), len(uniques)


def _add_subgroup(
    df: pd.DataFrame, by: str | Mapping[Any, Any], over: list[str]
) -> tuple[pd.DataFrame, str]:
    if isinstance(by, str):
        if by not in df.columns:
            raise SchemaError(
                f"`by={by!r}` is not a column of the effects table; its columns are "
                f"{quote_list(list(df.columns))}. Task-level columns of the scores table "
                "(constant within each task) are carried into the effects table."
            )
        if df[by].isna().any():
            rows = df.index[df[by].isna()][:5].tolist()
            raise SchemaError(f"The subgroup column {by!r} has missing values, e.g. rows {rows}.")
        return df, by
    if not isinstance(by, Mapping):
        raise SchemaError(f"`by` must be a column name or a mapping, not {type(by).__name__}.")
    if len(over) != 1:
        raise SchemaError("A `by` mapping needs a single `over` column to map from.")
    values = df[over[0]]
    unmapped = sorted({str(v) for v in values if v not in by})
    if unmapped:
        raise SchemaError(
            f"The `by` mapping has no subgroup for {over[0]}(s) {quote_list(unmapped)}."
        )
    name = "subgroup" if "subgroup" not in df.columns else "subgroup_"
    return df.assign(**{name: values.map(by).to_numpy()}), name


def valid_rows(df: pd.DataFrame) -> np.ndarray:
    """Rows with a finite effect and variance (the others are left out of pooling)."""
    return np.isfinite(df["effect"].to_numpy(float)) & np.isfinite(df["variance"].to_numpy(float))


def slots(code: np.ndarray, valid: np.ndarray, n_groups: int):
    """The valid rows ordered by group, each group's size k, and each row's slot in it."""
    rows = np.flatnonzero(valid)
    rows = rows[np.argsort(code[rows], kind="stable")]
    k = np.bincount(code[rows], minlength=n_groups)
    first = np.r_[0, np.cumsum(k)[:-1]]
    return rows, k, np.arange(len(rows)) - first[code[rows]]


def pairs_within(code: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair (i, j) of valid rows in the same group, i == j included."""
    rows, k, slot = slots(code, valid, int(code.max()) + 1 if len(code) else 0)
    reps = k[code[rows]]
    start = np.arange(len(rows)) - slot  # where each row's group begins in `rows`
    j = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)  # 0..k-1 for each i
    return np.repeat(rows, reps), rows[np.repeat(start, reps) + j]


def _distinct(codes: np.ndarray, size: int) -> np.ndarray:
    """The distinct values of ``codes`` (integers in [0, size)), sorted: a presence mask
    where ``size`` is small next to the codes (no sort or hash), else ``np.unique``."""
    if size <= max(4 * len(codes), 1 << 20):
        seen = np.zeros(size, dtype=bool)
        seen[codes] = True
        return np.flatnonzero(seen)
    return np.unique(codes)


def coverage(grp: Grouped, valid: np.ndarray) -> tuple[np.ndarray, pd.DataFrame]:
    """How many ``over`` values (tasks) each group pools of those its analysis has.

    The groups of one analysis share every key but ``treatment`` and ``control``
    (one metric, effect type, subgroup, ...); ``k_total`` of a group is the number
    of ``over`` values with a usable effect in any group of its analysis, so that a
    group with k < k_total lacks tasks that other systems have. Returns ``k_total``
    per group and the missing (``group``, ``name``) pairs of those groups, ``name``
    the ``over`` value as text (several ``over`` columns joined by " / "), in the
    order the values first appear in the table.
    """
    df = grp.table
    n = len(df)
    if n == 0:
        return np.zeros(grp.n_groups, dtype=np.int64), pd.DataFrame({"group": [], "name": []})

    def codes(columns: list[str]) -> np.ndarray:
        return _combine([pd.factorize(df[c], use_na_sentinel=False)[0] for c in columns], n)

    family = codes([c for c in grp.keys if c not in ("treatment", "control")])
    over = codes(grp.over)
    n_family, n_over = int(family.max()) + 1, int(over.max()) + 1
    family_of_group = np.zeros(grp.n_groups, dtype=np.int64)
    family_of_group[grp.code] = family
    present = _distinct(family[valid] * n_over + over[valid], n_family * n_over)
    k_total = np.bincount(present // n_over, minlength=n_family)[family_of_group]
    have = _distinct(grp.code[valid] * n_over + over[valid], grp.n_groups * n_over)
    k = np.bincount(have // n_over, minlength=grp.n_groups)
    short = np.flatnonzero((k > 0) & (k < k_total))
    if not len(short):  # the usual case: every system has every task
        return k_total.astype(np.int64), pd.DataFrame({"group": [], "name": []})
    expected = pd.DataFrame({"family": present // n_over, "over": present % n_over})
    pairs = pd.DataFrame({"group": short, "family": family_of_group[short]}).merge(
        expected, on="family", sort=False
    )
    lacking = ~np.isin(pairs["group"].to_numpy() * n_over + pairs["over"].to_numpy(), have)
    first = np.full(n_over, n)
    np.minimum.at(first, over, np.arange(n))
    labels = df[grp.over].iloc[first].astype(str).agg(" / ".join, axis=1).to_numpy()
    missing = pairs.loc[lacking, ["group", "over"]].sort_values(["group", "over"], kind="stable")
    names = pd.DataFrame(
        {"group": missing["group"].to_numpy(), "name": labels[missing["over"].to_numpy()]}
    )
    return k_total.astype(np.int64), names

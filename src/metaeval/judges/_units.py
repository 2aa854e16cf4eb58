"""The judges' stage's table of labels: checked, as a units × judges matrix, and the sums
over units every coefficient and error rate is made of, with their bootstrap.

A unit is one output a judge labels: a ``(query, system)`` pair within a task and metric
(with its ``replicate``, where there is one). Every statistic of the stage is a function of
sums over units, so each unit's terms sit in one sparse (unit, group·term) matrix and a
bootstrap resample is a count per unit times that matrix: a block of resamples per sparse
product, no loop over resamples, tasks or judges. With a cluster column the units' terms
are summed per cluster and the clusters drawn.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import SchemaError, excerpt, quote_list
from ..schema import JUDGE, REPLICATE

__all__ = [
    "JUDGE",
    "judges_with_gold",
    "spread",
    "Units",
    "check_labels",
    "one_per_query",
    "require_judges",
    "unit_matrix",
    "group_sums",
    "bootstrap",
    "dense",
    "stack",
    "unique_rows",
    "sorted_codes",
]


_BLOCK = 4_000_000  # resample counts held at once


def check_labels(
    frame: pd.DataFrame,
    judges: Sequence[str] | None,
    cluster: str | None,
    *,
    what: str,
    columns: Sequence[str] = (),
) -> pd.DataFrame:
    """The labels, checked: the key columns, a judge on every row, a number for every
    label, one label per judge and unit, the judges asked for; ``what`` (the function)
    names the caller in the messages; ``columns`` are further columns it needs (kept)."""
    need = ["task", "query", "system", "metric", JUDGE, "value"]
    if cluster is not None:
        need.append(cluster)
    need += [c for c in columns if c not in need]
    missing = [c for c in need if c not in frame.columns]
    if missing:
        hint = (
            f" Rename the column naming who labelled a row to {JUDGE!r} "
            "(df.rename(columns={'grader': 'judge'}))."
            if JUDGE in missing
            else ""
        )
        raise SchemaError(f"{what}() needs the column(s) {missing}.{hint}")
    cols = [*need, *([REPLICATE] if REPLICATE in frame.columns else [])]
    table = frame[list(dict.fromkeys(cols))]
    if table[JUDGE].isna().any():
        rows = table[table[JUDGE].isna()]
        raise SchemaError(
            f"The {JUDGE!r} column is missing on {len(rows)} row(s) (tasks "
            f"{quote_list(rows['task'].astype(str).unique())}); every label needs its judge."
            f" First: {excerpt(rows.iloc[0].to_dict(), 200)}"
        )
    if not pd.api.types.is_numeric_dtype(table["value"]) or pd.api.types.is_bool_dtype(
        table["value"]
    ):
        raise SchemaError(
            f"{what}() needs numeric labels in 'value' (categories as numbers: 0, 1, 2, "
            f"...), but its dtype is {table['value'].dtype}; map text labels to codes first."
        )
    if table["value"].isna().any():
        rows = table[table["value"].isna()]
        raise SchemaError(
            f"{len(rows)} label(s) are NaN (tasks {quote_list(rows['task'].astype(str).unique())},"
            f" judges {quote_list(rows[JUDGE].astype(str).unique())}): a label a judge did not "
            "give is an absent row, not a NaN."
        )
    table = table.assign(**{JUDGE: table[JUDGE].astype(str)})
    present = list(pd.unique(table[JUDGE]))
    if judges is not None:
        if isinstance(judges, str):
            judges = [judges]
        unknown = [j for j in judges if str(j) not in present]
        if unknown:
            raise SchemaError(
                f"judges {quote_list(unknown)} have no label; the table's judges are "
                f"{quote_list(present)}."
            )
        table = table[table[JUDGE].isin([str(j) for j in judges])]
    unit = ["task", "metric", "query", "system", *([REPLICATE] if REPLICATE in table else [])]
    dup = table.duplicated([*unit, JUDGE], keep=False)
    if dup.any():
        first = table[dup].iloc[0]
        raise SchemaError(
            f"{int(dup.sum())} rows repeat a judge's label of one output (first: "
            f"{excerpt({k: first[k] for k in [*unit, JUDGE]}, 200)}); one label per judge "
            "and output."
        )
    if cluster is not None:
        one_per_query(table, cluster, "cluster")
    return table


def one_per_query(table: pd.DataFrame, column: str, role: str) -> None:
    """Check that ``column`` (the ``role`` it plays: cluster, stratum, ...) holds one value
    per (task, query), on every row."""
    if table[column].isna().any():
        rows = table[table[column].isna()]
        raise SchemaError(
            f"The {role} column {column!r} has missing values on {len(rows)} row(s) (first: "
            f"task {excerpt(rows['task'].iloc[0])}, query {excerpt(rows['query'].iloc[0])})."
        )
    per_query = table.groupby(["task", "query"], observed=True)[column].nunique()
    if (per_query > 1).any():
        task, query = per_query[per_query > 1].index[0]
        raise SchemaError(
            f"The {role} column {column!r} must be one value per query, but query "
            f"{excerpt(query)} of task {excerpt(task)} has several."
        )


@dataclass(frozen=True)
class Units:
    """The labels as a units × judges matrix, the units sorted by group."""

    groups: pd.DataFrame  # one row per group: its key columns
    group: np.ndarray  # the group of each unit
    starts: np.ndarray  # the first unit of each group
    codes: np.ndarray  # (unit, judge): the label's category, −1 where absent
    values: np.ndarray  # (unit, judge): the label, NaN where absent
    categories: np.ndarray  # the labels' distinct values, sorted
    cluster: np.ndarray | None  # the cluster of each unit (within its group), or None
    judge_names: list[str]
    n_judges: np.ndarray  # per group: the judges with a label

    @property
    def n(self) -> int:
        return len(self.group)

    @classmethod
    def of(cls, table: pd.DataFrame, keys: list[str], cluster: str | None) -> Units:
        unit = [*keys, "query", *([] if "system" in keys else ["system"])]
        unit += [REPLICATE] if REPLICATE in table.columns else []
        judge_names = list(pd.unique(table[JUDGE]))
        coded = [sorted_codes(table[col]) for col in unit]  # a categorical keeps its order
        rows = np.column_stack([c for c, _ in coded])
        # units sorted by (keys..., query, system): a group's units are consecutive
        sizes = [len(values) for _, values in coded]
        unit_codes, of_row = unique_rows(rows, sizes)
        group_codes, group = unique_rows(unit_codes[:, : len(keys)], sizes[: len(keys)])
        starts = np.searchsorted(group, np.arange(len(group_codes)))
        groups = pd.DataFrame({col: coded[i][1][group_codes[:, i]] for i, col in enumerate(keys)})
        jcode = pd.Categorical(table[JUDGE], categories=judge_names).codes
        values = table["value"].to_numpy(float)
        categories, ccode = np.unique(values, return_inverse=True)
        lab = np.full((len(unit_codes), len(judge_names)), -1, dtype=np.int64)
        val = np.full((len(unit_codes), len(judge_names)), np.nan)
        lab[of_row, jcode] = ccode.ravel()
        val[of_row, jcode] = values
        n_judges = np.add.reduceat((lab >= 0).astype(np.int64), starts, axis=0)
        n_judges = (n_judges > 0).sum(axis=1)
        clusters = None
        if cluster is not None:  # one cluster per query (checked): the unit's first row's
            first = np.empty(len(unit_codes), dtype=np.int64)
            first[of_row] = np.arange(len(of_row))
            name = pd.factorize(table[cluster])[0][first]
            both = np.column_stack([group, name])
            clusters = unique_rows(both, [len(group_codes), int(name.max()) + 1])[1]
        return cls(groups, group, starts, lab, val, categories, clusters, judge_names, n_judges)

    def judge_pairs(self) -> tuple[Units, np.ndarray, np.ndarray]:
        """Every two judges' labels as units of their own groups, (group, pair) in that
        order; and the pairs' judges a and b."""
        a, b = np.triu_indices(len(self.judge_names), k=1)
        n_pairs = len(a)
        pair_group = (self.group[None, :] * n_pairs + np.arange(n_pairs)[:, None]).ravel()
        order = np.argsort(pair_group, kind="stable")
        codes = np.stack([self.codes[:, a].T, self.codes[:, b].T], axis=-1).reshape(-1, 2)
        values = np.stack([self.values[:, a].T, self.values[:, b].T], axis=-1).reshape(-1, 2)
        group = pair_group[order]
        n_groups = len(self.starts) * n_pairs
        starts = np.searchsorted(group, np.arange(n_groups))
        which = np.tile(np.arange(n_pairs), len(self.starts))
        groups = self.groups.iloc[np.repeat(np.arange(len(self.starts)), n_pairs)]
        codes = codes[order]
        n_judges = np.zeros(n_groups, dtype=np.int64)
        for side in (0, 1):  # the pair's judges with a label in the group
            n_judges += np.bincount(group[codes[:, side] >= 0], minlength=n_groups) > 0
        pairs = Units(
            groups.reset_index(drop=True),
            group,
            starts,
            codes,
            values[order],
            self.categories,
            None,
            ["a", "b"],
            n_judges,
        )
        names = np.asarray(self.judge_names)
        return pairs, names[a[which]], names[b[which]]


def unique_rows(rows: np.ndarray, sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a table of codes (each column's codes below its size), sorted,
    and each row's position among them: one integer key per row where they fit in 63
    bits (a sort of integers), rows compared whole otherwise."""
    if np.prod([float(max(1, n)) for n in sizes]) < 2.0**62:
        radix = np.cumprod([1, *[max(1, n) for n in sizes[:0:-1]]])[::-1].astype(np.int64)
        keys, inverse = np.unique(rows @ radix, return_inverse=True)
        digits = (keys[:, None] // radix[None, :]) % np.array([max(1, n) for n in sizes])
        return digits.astype(np.int64), inverse.ravel()
    distinct, inverse = np.unique(rows, axis=0, return_inverse=True)
    return distinct, inverse.ravel()


def sorted_codes(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A column's codes and values, in the order they first appear (a categorical's: its
    categories' order), so that groups come out in the table's order."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy(np.int64), np.asarray(column.cat.categories, object)
    codes, uniques = pd.factorize(column, sort=False)
    return codes.astype(np.int64), np.asarray(uniques, object)


def require_judges(table: pd.DataFrame, minimum: int, why: str) -> None:
    """A SchemaError unless every task and metric has ``minimum`` judges or more."""
    counts = table.groupby(["task", "metric"], observed=True)[JUDGE].nunique()
    few = counts[counts < minimum]
    if len(few):
        task, metric = few.index[0]
        only = table.loc[(table["task"] == task) & (table["metric"] == metric), JUDGE].unique()
        raise SchemaError(
            f"{why} needs {minimum} judges or more, but task {excerpt(task)} (metric "
            f"{excerpt(metric)}) has only {quote_list(only)}"
            + (f" (and {len(few) - 1} more groups)." if len(few) > 1 else ".")
        )


def judges_with_gold(table: pd.DataFrame, gold: str) -> list[str]:
    """The table's judges, in order, after checking that ``gold`` is one of them."""
    present = list(pd.unique(table[JUDGE]))
    if str(gold) not in present:
        raise SchemaError(
            f"The gold judge {excerpt(gold)} has no label; the table's judges are "
            f"{quote_list(present)} (gold= names the judge whose labels are the truth)."
        )
    return present


def spread(draws: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bootstrap's standard error and percentile interval along the resamples (axis
    0); NaN, without numpy's warning, where a group is NaN in every resample."""
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanquantile(draws, [alpha / 2, 1 - alpha / 2], axis=0)
        return np.nanstd(draws, axis=0, ddof=1), low, high


def dense(rows: np.ndarray, block: np.ndarray, offset: int) -> tuple[np.ndarray, ...]:
    """The non-zero entries of a (unit, term) block as (unit, term, value)."""
    r, c = np.nonzero(block)
    return rows[r], c + offset, block[r, c]


def stack(*parts: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))  # type: ignore[return-value]


def unit_matrix(
    units: Units, width: int, rows: np.ndarray, terms: np.ndarray, data: np.ndarray
) -> Any:
    """Each unit's ``width`` terms in its group's columns: a sparse (unit, group·term)
    matrix from the (unit, term, value) entries."""
    from scipy import sparse

    cols = units.group[rows] * width + terms
    shape = (units.n, len(units.starts) * width)
    return sparse.csr_matrix((data, (rows, cols)), shape=shape)


def group_sums(units: Units, matrix: Any, width: int) -> np.ndarray:
    """(1, group, term): every group's sums of its units' terms."""
    flat = np.asarray(matrix.sum(axis=0)).reshape(1, len(units.starts), width)
    return flat


def bootstrap(
    units: Units,
    matrix: Any,
    width: int,
    finish: Callable[[np.ndarray], np.ndarray],
    n_resamples: int,
    seed: int,
) -> np.ndarray:
    """``finish`` of the (resample, group, term) sums of resamples of units (or clusters)
    drawn with replacement within each group, a block of resamples per sparse product:
    (resample, group, ...) as ``finish`` returns them."""
    from scipy import sparse

    if units.cluster is not None:  # each cluster's terms summed: clusters are drawn
        ids, first = np.unique(units.cluster, return_index=True)
        member = sparse.csr_matrix(
            (np.ones(units.n), (units.cluster, np.arange(units.n))), shape=(len(ids), units.n)
        )
        matrix = member @ matrix
        group = units.group[first]
        order = np.argsort(group, kind="stable")
        matrix, group = matrix[order], group[order]
    else:
        group = units.group
    size = np.bincount(group, minlength=len(units.starts))
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    rng = np.random.default_rng(seed)
    n = len(group)
    step = max(1, _BLOCK // max(1, n))
    out: list[np.ndarray] = []
    for first in range(0, n_resamples, step):  # blocks of resamples: bounded memory
        b = min(step, n_resamples - first)
        draw = start[group] + np.floor(rng.random((b, n)) * size[group]).astype(np.int64)
        flat = (np.arange(b)[:, None] * n + draw).ravel()
        counts = np.bincount(flat, minlength=b * n).reshape(b, n).astype(float)
        sums = np.asarray((matrix.T @ counts.T).T).reshape(b, len(units.starts), width)
        out.append(finish(sums))
    return np.concatenate(out)

"""Scores scattered into dense ``(metric, system, row)`` arrays, rows blocked by task.

The layout behind every paired computation (see :mod:`metaeval.paired.sufficient`):
the scores of each task are rows padded to a multiple of :data:`BLOCK`, every
score shifted by its system's mean on the task (and, for extreme magnitudes,
divided by a power of two), so that batched matrix products over blocks give
sums for all system pairs at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..engines import keeps_whole_table_names
from ..schema import key_column_ok, key_names_ok, prepare_scores, validate_scores

__all__ = ["BLOCK", "SAFE_MAGNITUDE", "Layout", "layout", "per_task_sum", "add_segments"]

BLOCK = 256
"""Rows per block in the dense layout (each task is padded to a multiple)."""

_COMPACT_SLACK = 2**20
"""Cells the dense arrays may exceed twice the table by before unused categories
are compacted away ahead of the scatter (see :func:`layout`)."""


def _use_dense_grid(cells: int, rows: int) -> bool:
    """Index (task, query) on a dense grid unless it is much larger than the table."""
    return cells <= max(4 * rows, 2**24)


@dataclass(frozen=True)
class Layout:
    """Scores scattered into dense arrays (see the module docstring).

    Attributes
    ----------
    values, mask : numpy.ndarray
        ``(metric, system, row)`` arrays; ``values`` holds each score minus its
        system's shift on the task, divided by the (metric, task)'s ``scale``,
        and is 0 where ``mask`` is False.
    tasks, metrics, systems : numpy.ndarray
        Names along each axis (category order for categoricals, sorted
        otherwise). Unused categories are left out: every task, metric and
        system has at least one score.
    block_task : numpy.ndarray
        The task index of every block of :data:`BLOCK` rows (non-decreasing).
    counts, shift : numpy.ndarray
        ``(metric, system, task)``: queries each system has, and its shift: its
        mean score over the queries every system present on the task has (over
        its own queries where no query is shared by all; 0 where it has none),
        in the scores' own units.
    scale : numpy.ndarray
        ``(metric, task)``: 1, or a power of two near the largest |score| of a
        (metric, task) whose scores are so large (beyond 2¹⁰⁰ ≈ 1.3e30) or so
        small (below 2⁻¹⁰⁰) that their squares would overflow or underflow.
        Dividing by a power of two is exact.
    raw : numpy.ndarray or None
        With ``layout(..., keep_raw=True)``: the scores themselves, unshifted,
        ``(metric, system, row)``. Per-query differences are taken from them,
        so that two equal scores give a difference of exactly 0 (scores
        rebuilt as shifted value + shift can differ from the originals in the
        last bit).
    """

    values: np.ndarray
    mask: np.ndarray
    tasks: np.ndarray
    metrics: np.ndarray
    systems: np.ndarray
    block_task: np.ndarray
    counts: np.ndarray
    shift: np.ndarray
    scale: np.ndarray
    raw: np.ndarray | None = None

    @property
    def n_blocks(self) -> int:
        return len(self.block_task)


def per_task_sum(a: np.ndarray, block_task: np.ndarray, n_tasks: int) -> np.ndarray:
    """Sum the last (row) axis of ``a`` over the rows of each task: ``(..., task)``."""
    per_block = a.reshape(*a.shape[:-1], len(block_task), BLOCK).sum(axis=-1)
    out = np.zeros((*a.shape[:-1], n_tasks), dtype=per_block.dtype)
    add_segments(out, per_block, block_task, axis=per_block.ndim - 1)
    return out


def add_segments(out: np.ndarray, a: np.ndarray, segment: np.ndarray, axis: int) -> None:
    """``out[..., s, ...] += sum of a along axis over the entries with segment id s``.

    ``segment`` (one id per entry of ``a`` along ``axis``) must be non-decreasing.
    """
    starts = np.flatnonzero(np.r_[True, segment[1:] != segment[:-1]])
    index: list[Any] = [slice(None)] * a.ndim
    index[axis] = segment[starts]
    out[tuple(index)] += np.add.reduceat(a, starts, axis=axis)


def _codes(
    series: pd.Series, *, sort: bool, named: bool = True
) -> tuple[np.ndarray, np.ndarray] | None:
    """Integer codes and the names they index (categories may include unused ones); None
    when a key is missing, empty or not a string (for :func:`validate_scores` to report).

    Categoricals keep their category order; other values are numbered in sorted
    order when ``sort`` is set, else in order of first appearance. The checks of the keys
    are those of :func:`metaeval.schema.prepare_scores`, on the distinct values.
    ``named=False``: only the number of names is needed, which they may then give as a
    pyarrow array (no Python string for each).
    """
    if isinstance(series.dtype, pd.CategoricalDtype):
        if not key_column_ok(series):
            return None
        return series.cat.codes.to_numpy(), np.asarray(series.cat.categories, dtype=object)
    strings = _arrow_strings(series)
    if strings is not None:
        return _arrow_codes(strings, sort=sort, named=named)
    codes, uniques = pd.factorize(series, sort=False)
    if (codes < 0).any():  # missing keys
        return None
    uniques = np.asarray(uniques, dtype=object)
    if not key_names_ok(uniques):  # (not strings: not sorted either)
        return None
    if sort:  # sorting the few uniques and renumbering beats factorize(sort=True)
        order = _name_order(uniques)
        rank = np.empty(len(order), dtype=codes.dtype)
        rank[order] = np.arange(len(order), dtype=codes.dtype)
        codes, uniques = np.take(rank, codes), uniques[order]
    return codes, uniques


def _arrow_strings(series: pd.Series) -> Any:
    """The pyarrow array of a column of pyarrow-backed strings (pandas' ``str``), or None."""
    array = series.array
    if not isinstance(array, pd.arrays.ArrowStringArray) or not len(array):
        return None
    import pyarrow as pa

    data = array.__arrow_array__()
    if isinstance(data, pa.ChunkedArray):
        data = data.chunk(0) if data.num_chunks == 1 else data.combine_chunks()
    return data


def _arrow_codes(data: Any, *, sort: bool, named: bool) -> tuple[np.ndarray, Any] | None:
    """:func:`_codes` of pyarrow strings, encoded by pyarrow without a Python string per
    row. A column of one value (the task or metric of a partition by task) is checked,
    not encoded; names sort by their UTF-8 bytes, which is Python's order of strings."""
    import pyarrow.compute as pc

    if data.null_count:  # missing keys
        return None
    first = data[0]
    if data[len(data) - 1] == first and pc.all(pc.equal(data, first)).as_py():
        name = first.as_py()
        return (
            (np.zeros(len(data), dtype=np.intp), np.array([name], dtype=object)) if name else None
        )
    encoded = pc.dictionary_encode(data)
    codes, names = encoded.indices.to_numpy(), encoded.dictionary
    if pc.any(pc.equal(names, "")).as_py():  # an empty key
        return None
    if sort:
        order = pc.array_sort_indices(names)
        rank = np.empty(len(order), dtype=codes.dtype)
        rank[np.asarray(order)] = np.arange(len(order), dtype=codes.dtype)
        codes = np.take(rank, codes)
        names = names.take(order) if named else names
    return codes, names.to_numpy(zero_copy_only=False) if named else names


def _name_order(names: np.ndarray) -> np.ndarray:
    """``np.argsort(names)`` of distinct names: by pyarrow for strings, 3x faster on many
    (query ids) and in the same order (UTF-8 bytes sort as code points, Python's order)."""
    if len(names) > 1000:
        try:
            import pyarrow as pa
            import pyarrow.compute as pc

            return np.asarray(pc.array_sort_indices(pa.array(names, type=pa.string())))
        except (ImportError, TypeError, ValueError, UnicodeError):  # not strings, or no pyarrow
            pass
    return np.argsort(names, kind="stable")


def _int(a: np.ndarray, itype: type) -> np.ndarray:
    """``a`` as a fresh array of ``itype`` (safe to modify in place)."""
    return a.astype(itype, copy=True)


def _rows(
    task: np.ndarray, query: np.ndarray, n_tasks: int, n_queries: int, n_cells: int, itype: type
):
    """Map every (task, query) to a row; each task's rows contiguous, padded to BLOCK.

    Returns the row of every table row and the number of rows of each task.
    Three strategies, cheapest first: when nearly every task has nearly every
    query id (at least 80% of the grid, judged from the table size), the query
    code itself is the row within the task; else the (task, query) pairs that
    occur are ranked on a dense grid, or, when that grid would be huge, sorted.
    """
    q_pad = -(-n_queries // BLOCK) * BLOCK
    if n_tasks * q_pad * n_cells <= 1.25 * len(task):
        row = _int(task, itype)
        row *= q_pad
        row += query
        return row, np.full(n_tasks, q_pad)
    if _use_dense_grid(n_tasks * n_queries, len(task)):
        flat = _int(task, itype)
        flat *= n_queries
        flat += query
        seen = np.zeros(n_tasks * n_queries, dtype=bool)
        seen[flat] = True
        present = seen.reshape(n_tasks, n_queries)
        padded = -(-present.sum(axis=1) // BLOCK) * BLOCK
        lookup: np.ndarray = np.cumsum(present, axis=1, dtype=itype)
        lookup += (np.r_[0, np.cumsum(padded)[:-1]] - 1).astype(itype)[:, None]
        return np.take(lookup.ravel(), flat), padded
    combined = task.astype(np.int64) * n_queries + query
    uniq, inverse = np.unique(combined, return_inverse=True)
    uniq_task = uniq // n_queries
    task_rows = np.bincount(uniq_task, minlength=n_tasks)
    padded = -(-task_rows // BLOCK) * BLOCK
    first = np.r_[0, np.cumsum(task_rows)[:-1]]
    row_of_pair = (
        np.arange(len(uniq)) - first[uniq_task] + np.r_[0, np.cumsum(padded)[:-1]][uniq_task]
    )
    return row_of_pair.astype(itype)[inverse], padded


def _used_only(codes: np.ndarray, names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes renumbered over the names that occur (unused categories dropped)."""
    used = np.bincount(codes, minlength=len(names)) > 0
    if used.all():
        return codes, names
    renumber = np.cumsum(used) - 1
    return np.take(renumber, codes).astype(codes.dtype), names[used]


def layout(scores: pd.DataFrame, *, keep_raw: bool = False) -> Layout:
    """Validate a scores table and scatter it into the dense block layout.

    ``keep_raw`` also keeps the unshifted scores (:attr:`Layout.raw`), for
    tests that need exact per-query differences.

    Raises
    ------
    metaeval.SchemaError
        For any problem with the table, duplicate keys included.
    """
    df = prepare_scores(scores, check_keys=False)  # the keys are checked as they are encoded
    # queries sorted by id (category order for categoricals): rows do not depend on the
    # order of the table's rows, which resampling tests need to be reproducible
    coded = [
        _codes(df[c], sort=True, named=c != "query") for c in ("task", "metric", "system", "query")
    ]
    if any(c is None for c in coded):  # a missing, empty or non-string key
        validate_scores(df)  # raises with the full report
        raise AssertionError("unreachable: a bad key not reported by the schema")
    (task, tasks), (metric, metrics), (system, systems), (query, queries) = coded  # type: ignore[misc]
    if isinstance(df["task"].dtype, pd.CategoricalDtype):  # tasks without rows: not in the layout
        task, tasks = _used_only(task, tasks)
    n_tasks, n_metrics, n_systems = len(tasks), len(metrics), len(systems)
    itype = np.int32 if len(df) < 2**31 and n_tasks * len(queries) < 2**31 else np.int64

    row, padded = _rows(task, query, n_tasks, len(queries), n_metrics * n_systems, itype)
    n_rows = int(padded.sum())

    # (metric, system) cell of every row
    cell = _int(metric, itype)
    cell *= n_systems
    cell += system
    # Unused categories (of categorical columns) are compacted away: before the
    # scatter when they could make the dense arrays much larger than the table,
    # else afterwards from the mask (cheaper).
    compact = not keeps_whole_table_names()  # a piece of a table keeps the table's names
    compact_first = n_metrics * n_systems * n_rows > 2 * len(df) + _COMPACT_SLACK
    if compact and compact_first:
        used = np.bincount(cell, minlength=n_metrics * n_systems).reshape(n_metrics, n_systems) > 0
        keep_m, keep_s = used.any(axis=1), used.any(axis=0)
        if not (keep_m.all() and keep_s.all()):
            new = np.full((n_metrics, n_systems), -1, dtype=itype)
            new[np.ix_(keep_m, keep_s)] = np.arange(
                keep_m.sum() * keep_s.sum(), dtype=itype
            ).reshape(keep_m.sum(), keep_s.sum())
            cell = np.take(new.ravel(), cell)
            metrics, systems = metrics[keep_m], systems[keep_s]
            n_metrics, n_systems = len(metrics), len(systems)

    size = n_metrics * n_systems * n_rows
    if size >= 2**31 and itype is np.int32:
        cell, row, itype = cell.astype(np.int64), row.astype(np.int64), np.int64
    index = cell
    index *= n_rows
    index += row
    del row
    values = np.zeros(size)
    mask = np.zeros(size, dtype=bool)
    values[index] = df["value"].to_numpy()
    mask[index] = True
    del index
    if int(np.count_nonzero(mask)) != len(df):  # two rows wrote the same cell
        validate_scores(df)  # raises with the full report
        raise AssertionError("unreachable: duplicate keys not reported by the schema")
    shape = (n_metrics, n_systems, n_rows)
    values, mask = values.reshape(shape), mask.reshape(shape)
    if compact and not compact_first:
        used = np.asarray(mask.any(axis=2))
        keep_m, keep_s = used.any(axis=1), used.any(axis=0)
        if not (keep_m.all() and keep_s.all()):
            values = values[np.ix_(keep_m, keep_s)]
            mask = mask[np.ix_(keep_m, keep_s)]
            metrics, systems = metrics[keep_m], systems[keep_s]
    raw = values.copy() if keep_raw else None
    block_task = np.repeat(np.arange(n_tasks), padded // BLOCK)
    blocked = values.reshape(*values.shape[:2], len(block_task), BLOCK)
    # scores of a (metric, task) far from 1 in magnitude are divided by a power of two
    scale = _scales(blocked, block_task, n_tasks)
    if (scale != 1).any():
        blocked /= scale[:, None, block_task, None]
    # shift every score by its system's mean on the task, in place: the mean over the
    # queries every system of the task has, where there are any (a query only some
    # systems have, far from the rest, would otherwise pull the shift away from the
    # paired queries and leave their small variances to cancellation), else over its own
    counts = per_task_sum(mask, block_task, n_tasks)
    shift = _shifts(blocked, mask, counts, block_task, n_tasks)
    np.subtract(
        blocked,
        shift[:, :, block_task, None],
        out=blocked,
        where=mask.reshape(blocked.shape),
    )
    shift *= scale[:, None, :]  # back to the scores' own units
    return Layout(
        values=values,
        mask=mask,
        tasks=tasks,
        metrics=metrics,
        systems=systems,
        block_task=block_task,
        counts=counts,
        shift=shift,
        scale=scale,
        raw=raw,
    )


def _shifts(
    blocked: np.ndarray, mask: np.ndarray, counts: np.ndarray, block_task: np.ndarray, n_tasks: int
) -> np.ndarray:
    """``(metric, system, task)`` shifts: means over the task's shared queries, else own ones."""
    values = blocked.reshape(mask.shape)
    present = counts > 0  # (metric, system, task)
    row_task = np.repeat(block_task, BLOCK)
    has = mask.any(axis=1)  # (metric, row): rows with a score (not padding)
    shared = np.asarray((mask | ~present[:, :, row_task]).all(axis=1) & has)
    with np.errstate(invalid="ignore", divide="ignore"):
        own = per_task_sum(values, block_task, n_tasks) / counts
        if (shared == has).all():  # complete data: every query is shared
            return np.nan_to_num(own)
        n_shared = per_task_sum(shared[:, None, :], block_task, n_tasks)  # (metric, 1, task)
        # sums over the shared rows of every block, without a table-sized temporary
        per_block = np.einsum("msbk,mbk->msb", blocked, shared.reshape(blocked.shape[0], -1, BLOCK))
        common = np.zeros_like(own)
        add_segments(common, per_block, block_task, axis=2)
        # tasks whose every query is shared keep ``own`` (the same mean, summed as when all
        # tasks are complete): a task's shift does not depend on the table's other tasks
        partial = per_task_sum((shared != has)[:, None, :], block_task, n_tasks) > 0
        return np.nan_to_num(np.where(partial & (n_shared > 0), common / n_shared, own))


SAFE_MAGNITUDE = 2.0**100
"""Scores of a (metric, task) whose largest magnitude lies outside [1/SAFE, SAFE] are
scaled (see :attr:`Layout.scale`); within it, squares and sums of squares of any
number of them are finite and normal."""


def _scales(blocked: np.ndarray, block_task: np.ndarray, n_tasks: int) -> np.ndarray:
    """``(metric, task)`` powers of two near the largest |score|, 1 within the safe band."""
    n_metrics = blocked.shape[0]
    top = np.zeros((n_metrics, n_tasks))
    if blocked.size:  # largest |score| of every (metric, block), then of every task
        per_block = np.maximum(blocked.max(axis=(1, 3)), -blocked.min(axis=(1, 3)))
        starts = np.flatnonzero(np.r_[True, block_task[1:] != block_task[:-1]])
        top[:, block_task[starts]] = np.maximum.reduceat(per_block, starts, axis=1)
    _, exponent = np.frexp(top)
    extreme = (top > SAFE_MAGNITUDE) | ((top > 0) & (top < 1 / SAFE_MAGNITUDE))
    return np.where(extreme, np.ldexp(1.0, exponent), 1.0)

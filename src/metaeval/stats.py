"""Sufficient statistics of paired scores, for every pair of systems at once.

For every ``(task, metric)`` and every (treatment, control) pair of systems this
module computes, over the queries both systems have (paired by query id),

    n, Σx, Σy, Σx², Σy², Σxy        (x = treatment − a, y = control − b)

as an :class:`xarray.Dataset` with dims ``(task, metric, treatment, control)``,
where a and b are fixed shifts: each system's mean score on the task and metric
over the queries that every system of the task has (over all its own queries
where no query is shared by all). Sums of shifted scores are the textbook remedy for the
cancellation in Σx² − (Σx)²/n; they are additive across rows for fixed shifts,
and :func:`raw_sums` turns them into sums of the scores themselves.

How it is computed (no Python loop over systems, tasks or metrics): the scores
are scattered into a dense array ``X[metric, system, row]`` (zero where a system
has no score) with a boolean mask ``W`` of the same shape. Rows are the queries
of each task, each task padded to a multiple of a block of ``B`` rows, so every
block belongs to one task. For each block, batched matrix products give all
pairs at once:

    n = Wᵀ W,  Σx = Xᵀ W,  Σy = Wᵀ Y,  Σx² = (X∘X)ᵀ W,  Σy² = Wᵀ (Y∘Y),  Σxy = Xᵀ Y

(left factor: the treatment columns, right factor: the control columns), and a
segmented sum over the blocks of each task finishes the job. Blocks are
processed in chunks of bounded memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .errors import PairingError, PairingWarning, quote_list, warn_groups
from .schema import prepare_scores, validate_scores

__all__ = ["sufficient_statistics", "statistics_of", "raw_sums", "Layout", "layout"]

BLOCK = 256
"""Rows per block in the dense layout (each task is padded to a multiple)."""

_CHUNK_BYTES = 32 * 2**20
"""Approximate input bytes per chunk of blocks in the Gram products."""

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


def _per_task(a: np.ndarray, block_task: np.ndarray, n_tasks: int) -> np.ndarray:
    """Sum a ``(metric, system, row)`` array over the rows of each task."""
    m, s, _ = a.shape
    per_block = a.reshape(m, s, len(block_task), BLOCK).sum(axis=-1)
    out = np.zeros((m, s, n_tasks), dtype=per_block.dtype)
    _add_segments(out, per_block, block_task, axis=2)
    return out


def _add_segments(out: np.ndarray, a: np.ndarray, segment: np.ndarray, axis: int) -> None:
    """``out[..., s, ...] += sum of a along axis over the entries with segment id s``.

    ``segment`` (one id per entry of ``a`` along ``axis``) must be non-decreasing.
    """
    starts = np.flatnonzero(np.r_[True, segment[1:] != segment[:-1]])
    index: list[Any] = [slice(None)] * a.ndim
    index[axis] = segment[starts]
    out[tuple(index)] += np.add.reduceat(a, starts, axis=axis)


def _codes(series: pd.Series, *, sort: bool) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and the names they index (categories may include unused ones).

    Categoricals keep their category order; other values are numbered in sorted
    order when ``sort`` is set, else in order of first appearance.
    """
    if isinstance(series.dtype, pd.CategoricalDtype):
        return series.cat.codes.to_numpy(), np.asarray(series.cat.categories, dtype=object)
    codes, uniques = pd.factorize(series, sort=False)
    uniques = np.asarray(uniques, dtype=object)
    if sort:  # sorting the few uniques and renumbering beats factorize(sort=True)
        order = np.argsort(uniques, kind="stable")
        rank = np.empty(len(order), dtype=codes.dtype)
        rank[order] = np.arange(len(order), dtype=codes.dtype)
        codes, uniques = np.take(rank, codes), uniques[order]
    return codes, uniques


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
    df = prepare_scores(scores)
    task, tasks = _codes(df["task"], sort=True)
    if isinstance(df["task"].dtype, pd.CategoricalDtype):  # tasks without rows: not in the layout
        task, tasks = _used_only(task, tasks)
    metric, metrics = _codes(df["metric"], sort=True)
    system, systems = _codes(df["system"], sort=True)
    # queries sorted by id (category order for categoricals): rows do not depend on the
    # order of the table's rows, which resampling tests need to be reproducible
    query, queries = _codes(df["query"], sort=True)
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
    compact_first = n_metrics * n_systems * n_rows > 2 * len(df) + _COMPACT_SLACK
    if compact_first:
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
    if not compact_first:
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
    counts = _per_task(mask, block_task, n_tasks)
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
    shared = (mask | ~present[:, :, row_task]).all(axis=1) & has
    with np.errstate(invalid="ignore", divide="ignore"):
        own = _per_task(values, block_task, n_tasks) / counts
        if (shared == has).all():  # complete data: every query is shared
            return np.nan_to_num(own)
        n_shared = _per_task(shared[:, None, :], block_task, n_tasks)  # (metric, 1, task)
        # sums over the shared rows of every block, without a table-sized temporary
        per_block = np.einsum("msbk,mbk->msb", blocked, shared.reshape(blocked.shape[0], -1, BLOCK))
        common = np.zeros_like(own)
        _add_segments(common, per_block, block_task, axis=2)
        return np.nan_to_num(np.where(n_shared > 0, common / n_shared, own))


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


def _select(names: np.ndarray, wanted: str | Sequence[str] | None, role: str) -> np.ndarray | None:
    """Indices of ``wanted`` systems in ``names`` (None: all of them)."""
    if wanted is None:
        return None
    wanted_list = [wanted] if isinstance(wanted, str) else list(wanted)
    if not wanted_list:
        raise PairingError(f"`{role}` is empty; name at least one system or pass None.")
    lookup = {str(name): i for i, name in enumerate(names)}
    unknown = [w for w in wanted_list if str(w) not in lookup]
    if unknown:
        raise PairingError(
            f"The {role} system(s) {unknown} are not in the scores table; "
            f"its systems are {quote_list([str(s) for s in names])}."
        )
    idx = np.array([lookup[str(w)] for w in wanted_list])
    if len(np.unique(idx)) != len(idx):
        raise PairingError(f"`{role}` names a system twice: {wanted_list}.")
    return idx


def _gram(lay: Layout, left: np.ndarray | None, right: np.ndarray | None) -> dict[str, np.ndarray]:
    """The six sums (of shifted scores) for every (left, right) system pair, per (metric, task).

    ``left``/``right`` index the systems (None: all, without copying).
    Returns arrays of shape ``(metric, task, left, right)``.
    """
    n_metrics = lay.values.shape[0]
    nb, n_tasks = lay.n_blocks, len(lay.tasks)

    def blocks(a: np.ndarray, idx: np.ndarray | None) -> np.ndarray:
        # (metric, system, row) -> (metric, system, block, B), systems picked by idx
        a = a if idx is None else a[:, idx]
        return a.reshape(a.shape[0], a.shape[1], nb, BLOCK)

    xl_b, wl_b = blocks(lay.values, left), blocks(lay.mask, left)
    xr_b, wr_b = blocks(lay.values, right), blocks(lay.mask, right)
    n_left, n_right = xl_b.shape[1], xr_b.shape[1]

    out = {
        name: np.zeros((n_metrics, n_tasks, n_left, n_right))
        for name in ("n", "sum_x", "sum_y", "sum_xx", "sum_yy", "sum_xy")
    }
    per_block = n_metrics * (n_left + n_right) * BLOCK * 8 * 3
    step = max(1, _CHUNK_BYTES // per_block)
    k = n_right
    for b0 in range(0, nb, step):  # memory-bounded chunks of row blocks
        sl = slice(b0, min(nb, b0 + step))
        # left factors: (metric, block, left, B); right factors: (metric, block, B, right)
        xl = xl_b[:, :, sl].transpose(0, 2, 1, 3)
        wl = wl_b[:, :, sl].transpose(0, 2, 1, 3).astype(np.float64)
        xr = xr_b[:, :, sl].transpose(0, 2, 3, 1)
        wr = wr_b[:, :, sl].transpose(0, 2, 3, 1).astype(np.float64)
        # three products with stacked right factors instead of six
        by_mask = wl @ np.concatenate([wr, xr, xr * xr], axis=-1)
        by_value = xl @ np.concatenate([wr, xr], axis=-1)
        products = {
            "n": by_mask[..., :k],
            "sum_y": by_mask[..., k : 2 * k],
            "sum_yy": by_mask[..., 2 * k :],
            "sum_x": by_value[..., :k],
            "sum_xy": by_value[..., k:],
            "sum_xx": (xl * xl) @ wr,
        }
        for name, prod in products.items():
            _add_segments(out[name], prod, lay.block_task[sl], axis=1)
    return out


def sufficient_statistics(
    scores: pd.DataFrame,
    *,
    control: str | Sequence[str] | None = None,
    treatment: str | Sequence[str] | None = None,
) -> xr.Dataset:
    """Paired sufficient statistics for every ``(task, metric, treatment, control)``.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table (see :func:`metaeval.validate_scores`).
    control : str or list of str, optional
        The control system(s). None: every system.
    treatment : str or list of str, optional
        The treatment system(s). None: every system.

    Returns
    -------
    xarray.Dataset
        Dims ``task, metric, treatment, control``; coordinates hold the names.
        Data variables (sums over the queries both systems have on that task
        and metric, of x = treatment score − ``shift_treatment`` and
        y = control score − ``shift_control``):

        - ``n`` (int64): number of paired queries;
        - ``sum_x, sum_y, sum_xx, sum_yy, sum_xy`` (float64): Σx, Σy, Σx², Σy², Σxy;
        - ``n_treatment``, ``n_control`` (int64; task, metric, system):
          queries each system has on its own;
        - ``shift_treatment``, ``shift_control`` (float64; task, metric,
          system): the shifts, each system's mean over the queries every
          system of the task has (over its own where there are none);
        - ``scale`` (float64; task, metric): 1, or, for scores so large or so
          small that their squares would overflow or underflow (beyond
          2^±100), the power of two the shifted scores are divided by before
          they are summed: the sums are of (x − a)/scale.

        Pairs of a system with itself are included (their sums describe the
        system alone). :func:`raw_sums` gives the sums of unshifted scores.

    Warns
    -----
    metaeval.PairingWarning
        When queries of a task are present for only one system of a pair; they
        are left out of that pair. The warning names the task, metric, systems
        and how many queries.

    Notes
    -----
    Shifting by the systems' means keeps variances and covariances accurate
    whatever the scores' offset; what remains is the cancellation inherent in
    Var(x − y) = Var x + Var y − 2 Cov(x, y), which loses about
    log10(1/(1 − r)) digits for two systems whose scores correlate at r.

    Examples
    --------
    >>> import metaeval
    >>> ds = metaeval.sufficient_statistics(metaeval.load_example(), control="logistic_regression")
    >>> ds["n"].dims, ds["n"].shape
    (('task', 'metric', 'treatment', 'control'), (4, 2, 5, 1))
    """
    return statistics_of(layout(scores), control=control, treatment=treatment)


def statistics_of(
    lay: Layout,
    *,
    control: str | Sequence[str] | None = None,
    treatment: str | Sequence[str] | None = None,
) -> xr.Dataset:
    """:func:`sufficient_statistics` of a table already laid out by :func:`layout`."""
    right = _select(lay.systems, control, "control")
    left = _select(lay.systems, treatment, "treatment")
    sums = _gram(lay, left, right)
    counts, shift = lay.counts, lay.shift  # (metric, system, task)
    left, right = (np.arange(len(lay.systems)) if i is None else i for i in (left, right))

    dims = ("task", "metric", "treatment", "control")
    coords = {
        "task": [str(t) for t in lay.tasks],
        "metric": [str(m) for m in lay.metrics],
        "treatment": [str(s) for s in lay.systems[left]],
        "control": [str(s) for s in lay.systems[right]],
    }
    data: dict[str, tuple[tuple[str, ...], np.ndarray]] = {
        name: (dims, arr.swapaxes(0, 1)) for name, arr in sums.items()
    }
    data["n"] = (dims, np.rint(data["n"][1]).astype(np.int64))
    data["n_treatment"] = (("task", "metric", "treatment"), counts[:, left].transpose(2, 0, 1))
    data["n_control"] = (("task", "metric", "control"), counts[:, right].transpose(2, 0, 1))
    data["shift_treatment"] = (("task", "metric", "treatment"), shift[:, left].transpose(2, 0, 1))
    data["shift_control"] = (("task", "metric", "control"), shift[:, right].transpose(2, 0, 1))
    data["scale"] = (("task", "metric"), lay.scale.T)
    ds = xr.Dataset(data, coords=coords)
    _warn_unpaired(ds)
    return ds


def _warn_unpaired(ds: xr.Dataset) -> None:
    """One warning listing every pair that lost queries to pairing."""
    unpaired = ds["n_treatment"] + ds["n_control"] - 2 * ds["n"]
    same = ds["treatment"] == ds["control"]
    lost = (unpaired > 0) & ~same
    if not bool(lost.any()):
        return
    frame = (
        xr.Dataset({"unpaired_queries": unpaired, "paired_queries": ds["n"]})
        .where(lost)
        .to_dataframe()
        .dropna()
        .reset_index()[
            ["task", "metric", "treatment", "control", "paired_queries", "unpaired_queries"]
        ]
        .astype({"paired_queries": np.int64, "unpaired_queries": np.int64})
    )
    warn_groups(
        f"Queries present for only one system of a pair were left out of {len(frame)} "
        "(task, metric, treatment, control) group(s)",
        frame,
        PairingWarning,
    )


def raw_sums(stats: xr.Dataset) -> xr.Dataset:
    """Sums of the unshifted scores from :func:`sufficient_statistics` output.

    Σx_raw = Σx + n·a, Σx²_raw = Σx² + 2a·Σx + n·a², Σxy_raw = Σxy + b·Σx + a·Σy + n·a·b
    (a, b the treatment and control shifts, the sums first multiplied back by
    ``scale``), and the same for y.

    Examples
    --------
    >>> import metaeval
    >>> from metaeval.stats import raw_sums
    >>> scores = metaeval.load_example()
    >>> ds = metaeval.sufficient_statistics(scores, control="knn", treatment="knn")
    >>> float(raw_sums(ds)["sum_x"].sel(task="iris", metric="accuracy").item())
    143.0
    >>> float(scores.query("task == 'iris' and metric == 'accuracy' and system == 'knn'")["value"].sum())
    143.0
    """
    n = stats["n"]
    a, b = stats["shift_treatment"], stats["shift_control"]
    c = stats["scale"] if "scale" in stats else 1.0
    sx, sy = c * stats["sum_x"], c * stats["sum_y"]
    return xr.Dataset(
        {
            "n": n,
            "sum_x": sx + n * a,
            "sum_y": sy + n * b,
            "sum_xx": c**2 * stats["sum_xx"] + 2 * a * sx + n * a**2,
            "sum_yy": c**2 * stats["sum_yy"] + 2 * b * sy + n * b**2,
            "sum_xy": c**2 * stats["sum_xy"] + b * sx + a * sy + n * a * b,
        }
    ).transpose("task", "metric", "treatment", "control")

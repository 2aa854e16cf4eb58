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

import numpy as np
import pandas as pd
import xarray as xr

from ..engines import LazyTable, any_frame, first_pass
from ..errors import PairingError, PairingWarning, quote_list, warn_groups
from . import pushdown
from ._layout import BLOCK, Layout, layout

__all__ = [
    "sufficient_statistics",
    "statistics_of",
    "statistics_arrays",
    "statistics_dataset",
    "lazy_statistics",
    "raw_sums",
    "ZERO_TOL",
]

_CHUNK_BYTES = 32 * 2**20
"""Approximate input bytes per chunk of blocks in the Gram products."""

#: A (co)variance below this share of the sums of squared (shifted) scores it is
#: computed from is rounding error and is treated as exactly zero; so is 1 − |r|
#: (:func:`metaeval.effects`), and so is a clustered variance below this share of the
#: unclustered one (:func:`metaeval.paired.clusters.clustered_variance_is_zero`).
ZERO_TOL = 1e-10


def select_systems(
    names: np.ndarray, wanted: str | Sequence[str] | None, role: str
) -> np.ndarray | None:
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


#: A task is summed in pieces of this many row blocks, counted from its own first block, and
#: the pieces are added in order: its sums then do not depend on how the table's blocks
#: are cut into memory-bounded chunks (which follows the number of systems and metrics).
PIECE = 8


def task_pieces(block_task: np.ndarray, size: int = PIECE) -> np.ndarray:
    """The first block of every piece: each task cut every ``size`` blocks from its start.

    >>> task_pieces(np.array([0, 0, 0, 1, 2, 2, 2, 2, 2]), 2)
    array([0, 2, 3, 4, 6, 8])
    """
    nb = len(block_task)
    if nb == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, block_task[1:] != block_task[:-1]])
    cuts = (np.diff(np.r_[starts, nb]) - 1) // size  # cuts inside each task
    nth = np.arange(cuts.sum()) - np.repeat(np.cumsum(cuts) - cuts, cuts) + 1
    return np.sort(np.r_[starts, np.repeat(starts, cuts) + nth * size])


def task_chunks(block_task: np.ndarray, step: int, size: int | None = None) -> list[slice]:
    """Chunks of row blocks, at most ``step + size`` long, made of whole pieces
    (:func:`task_pieces`; ``size`` defaults to ``step``): a piece goes into the chunk of
    the ``step``-window it starts in.

    >>> task_chunks(np.array([0, 0, 0, 1, 2, 2, 2, 2, 2]), 2)
    [slice(0, 2, None), slice(2, 4, None), slice(4, 6, None), slice(6, 8, None), slice(8, 9, None)]
    """
    pieces = task_pieces(block_task, step if size is None else size)
    if not len(pieces):
        return []
    window = pieces // max(step, 1)
    bounds = pieces[np.r_[True, window[1:] != window[:-1]]]
    return [
        slice(int(a), int(b))
        for a, b in zip(bounds, np.r_[bounds[1:], len(block_task)], strict=True)
    ]


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` over the last axis of both, ``(m, k, i, B) x (m, k, j, B) -> (m, k, i, j)``."""
    return np.einsum("mkiq,mkjq->mkij", a, b)


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
    step = max(1, _CHUNK_BYTES // per_block // 2)
    k = n_right
    pieces = task_pieces(lay.block_task)
    piece_task = lay.block_task[pieces]
    for sl in task_chunks(lay.block_task, step, PIECE):  # memory-bounded, whole pieces
        # factors (metric, block, system, B), the block's B rows last
        xl = xl_b[:, :, sl].transpose(0, 2, 1, 3)
        wl = wl_b[:, :, sl].transpose(0, 2, 1, 3).astype(np.float64)
        xr = xr_b[:, :, sl].transpose(0, 2, 1, 3)
        wr = wr_b[:, :, sl].transpose(0, 2, 1, 3).astype(np.float64)
        # Products over the B rows by einsum, not matmul: every sum is a dot product of
        # two contiguous rows of length B in numpy's own kernel, whose order of additions
        # depends on B only. A matrix product picks its BLAS kernel, and so its order of
        # additions, by the number of systems: a task in a subset with fewer systems then
        # differed from itself in the whole table in the last bits (issue 25).
        # Three products with stacked right factors instead of six.
        by_mask = _dot(wl, np.concatenate([wr, xr, xr * xr], axis=2))
        by_value = _dot(xl, np.concatenate([wr, xr], axis=2))
        products = {
            "n": by_mask[..., :k],
            "sum_y": by_mask[..., k : 2 * k],
            "sum_yy": by_mask[..., 2 * k :],
            "sum_x": by_value[..., :k],
            "sum_xy": by_value[..., k:],
            "sum_xx": _dot(xl * xl, wr),
        }
        # each piece summed over its blocks, then the pieces added to their task in order
        # (np.add.at: one after the other), whatever chunk they fell into
        first = np.searchsorted(pieces, sl.start)
        last = np.searchsorted(pieces, sl.stop)
        for name, prod in products.items():
            partial = np.add.reduceat(prod, pieces[first:last] - sl.start, axis=1)
            # tasks first in a view of out, so that the index is one array
            np.add.at(out[name].swapaxes(0, 1), piece_task[first:last], partial.swapaxes(0, 1))
    return out


@any_frame(lazy=True)
def sufficient_statistics(
    scores: pd.DataFrame,
    control: str | Sequence[str] | None = None,
    *,
    treatment: str | Sequence[str] | None = None,
) -> xr.Dataset:
    """Paired sufficient statistics for every ``(task, metric, treatment, control)``.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table (see :func:`metaeval.validate_scores`).
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation; a lazy one is computed in its engine (see the Notes of
        :func:`metaeval.effects`).
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
    if isinstance(scores, LazyTable):  # computed in the engine
        return lazy_statistics(scores, control=control, treatment=treatment)
    return statistics_of(layout(scores), control=control, treatment=treatment)


def statistics_of(
    lay: Layout,
    *,
    control: str | Sequence[str] | None = None,
    treatment: str | Sequence[str] | None = None,
    warn: bool = True,
) -> xr.Dataset:
    """:func:`sufficient_statistics` of a table already laid out by ``paired._layout.layout``
    (for the functions of this package that lay a table out once and select from it);
    ``warn=False`` leaves the warning about unpaired queries to the caller."""
    right = select_systems(lay.systems, control, "control")
    left = select_systems(lay.systems, treatment, "treatment")
    ds = statistics_dataset(*statistics_arrays(lay, left, right))
    if warn:
        warn_unpaired(ds)
    return ds


STATISTICS_DIMS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        ("n", "sum_x", "sum_y", "sum_xx", "sum_yy", "sum_xy"),
        ("task", "metric", "treatment", "control"),
    ),
    "n_treatment": ("task", "metric", "treatment"),
    "n_control": ("task", "metric", "control"),
    "shift_treatment": ("task", "metric", "treatment"),
    "shift_control": ("task", "metric", "control"),
    "scale": ("task", "metric"),
}
"""The data variables of :func:`sufficient_statistics` and their dims, in its order."""


def statistics_arrays(
    lay: Layout, left: np.ndarray | None, right: np.ndarray | None
) -> tuple[dict[str, list[str]], dict[str, np.ndarray]]:
    """The data of :func:`statistics_of` as numpy arrays: the names along each dim, and
    every variable of :data:`STATISTICS_DIMS` with those dims (tasks first). ``left``,
    ``right``: the treatment and control systems' indices in ``lay.systems`` (None: all),
    as :func:`select_systems` gives them (or any, an empty one too)."""
    sums = _gram(lay, left, right)
    left, right = (np.arange(len(lay.systems)) if i is None else i for i in (left, right))
    names = (lay.tasks, lay.metrics, lay.systems)
    return arrays_of_sums(sums, names, left, right, lay.counts, lay.shift, lay.scale)


def arrays_of_sums(
    sums: dict[str, np.ndarray],
    names: tuple[np.ndarray, np.ndarray, np.ndarray],
    left: np.ndarray,
    right: np.ndarray,
    counts: np.ndarray,
    shift: np.ndarray,
    scale: np.ndarray,
) -> tuple[dict[str, list[str]], dict[str, np.ndarray]]:
    """:func:`statistics_arrays` from the six sums ``(metric, task, left, right)``, the
    (tasks, metrics, systems) names, the systems' ``counts`` and ``shift`` ``(metric, system,
    task)`` and the ``scale`` ``(metric, task)``, wherever they were computed (in memory or
    in a lazy table's engine)."""
    tasks, metrics, systems = names
    coords = {
        "task": [str(t) for t in tasks],
        "metric": [str(m) for m in metrics],
        "treatment": [str(s) for s in systems[left]],
        "control": [str(s) for s in systems[right]],
    }
    data = {name: arr.swapaxes(0, 1) for name, arr in sums.items()}
    data["n"] = np.rint(data["n"]).astype(np.int64)
    data["n_treatment"] = counts[:, left].transpose(2, 0, 1)
    data["n_control"] = counts[:, right].transpose(2, 0, 1)
    data["shift_treatment"] = shift[:, left].transpose(2, 0, 1)
    data["shift_control"] = shift[:, right].transpose(2, 0, 1)
    data["scale"] = scale.T
    return coords, data


def statistics_dataset(names: dict[str, list[str]], data: dict[str, np.ndarray]) -> xr.Dataset:
    """The :func:`sufficient_statistics` dataset of :func:`statistics_arrays`' output."""
    return xr.Dataset(
        {name: (STATISTICS_DIMS[name], data[name]) for name in STATISTICS_DIMS}, coords=names
    )


def lazy_statistics(
    table: LazyTable,
    control: str | Sequence[str] | None = None,
    treatment: str | Sequence[str] | None = None,
    *,
    warn: bool = True,
) -> xr.Dataset:
    """:func:`sufficient_statistics` of a lazy table (a polars LazyFrame or a DuckDB
    relation), computed in its engine (:mod:`metaeval.paired.pushdown`): the same
    Dataset, its sums equal to the in-memory ones to rounding."""
    survey = first_pass(table)
    right = select_systems(survey.systems, control, "control")
    left = select_systems(survey.systems, treatment, "treatment")
    every = np.arange(len(survey.systems))
    left, right = (every if i is None else i for i in (left, right))
    sums = pushdown.compute(table, left, right)
    names = (survey.tasks, survey.metrics, survey.systems)
    ds = statistics_dataset(
        *arrays_of_sums(
            pushdown.matrices(sums, left, right),
            names,
            left,
            right,
            sums.count,
            sums.shift,
            sums.scale,
        )
    )
    if warn:
        warn_unpaired(ds)
    return ds


def warn_unpaired(ds: xr.Dataset) -> None:
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
        "Queries present for only one system of a pair were left out of {n} "
        "(task, metric, treatment, control) group(s)",
        frame,
        PairingWarning,
    )


def raw_sums(stats: xr.Dataset) -> xr.Dataset:
    """Sums of the unshifted scores from :func:`sufficient_statistics` output.

    Σx_raw = Σx + n·a, Σx²_raw = Σx² + 2a·Σx + n·a², Σxy_raw = Σxy + b·Σx + a·Σy + n·a·b
    (a, b the treatment and control shifts, the sums first multiplied back by
    ``scale``), and the same for y.

    Parameters
    ----------
    stats : xarray.Dataset
        What :func:`sufficient_statistics` returned.

    Examples
    --------
    >>> import metaeval
    >>> from metaeval.paired import raw_sums
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

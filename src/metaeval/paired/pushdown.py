"""Paired sufficient statistics of a lazy scores table, computed in its engine.

For a polars LazyFrame or a DuckDB relation (a :class:`~metaeval.engines.LazyTable`)
the statistics that :func:`metaeval.sufficient_statistics` computes in memory are
computed by the engine, through narwhals (one code path for both), and only
per-(task, metric) aggregates come back to Python:

1. **the first pass** (:func:`metaeval.engines.first_pass`): one aggregation grouped by
   ``(task, metric, system)`` — the validation counts, each group's number of rows,
   sum and largest |score|, which give the names in the in-memory order, the
   queries each system has, a provisional shift a' (each system's mean on the task)
   and the power-of-two scale of extreme scores;
2. **the per-query pivot**: one aggregation grouped by ``(task, metric, query)``: the
   number of rows and a column per system with its score (more rows than scores: a
   duplicate key), joined with a small table of the provisional shifts and scales per
   ``(task, metric)``;
3. **the sums**: over that pivot, grouped by ``(task, metric)``: per system Σy, Σy²
   and the sums over the queries every present system has (for the in-memory shift,
   see :class:`metaeval.paired._layout.Layout`), and per unordered pair {a, b} of the
   systems asked for Σ m_a m_b, Σ y_a m_b, Σ y_b m_a, Σ y_a² m_b, Σ y_b² m_a and
   Σ y_a y_b, where y = (score − a')/scale where the system has the query and 0
   elsewhere, m = 1 where it has it. Steps 2 and 3 are one query; the engine never
   sends a row per query.

In Python the sums are moved from the provisional shift a' to the in-memory one a
(Σ(y − d) = Σy − n·d and so on, d = a − a' in scaled units, small) and laid out as
the :class:`xarray.Dataset` of :func:`metaeval.sufficient_statistics`, with the same
coordinates in the same order; the engine adds in its own order, so the sums equal the
in-memory ones to rounding, not bit for bit (nor from one run to the next: DuckDB's
threads add their parts in the order they finish).

Tests that need the per-query differences (randomization, bootstrap, Wilcoxon, sign,
McNemar, clusters) run in memory task by task (:func:`metaeval.engines.per_task`): each task's rows of
the systems asked for are fetched alone and given to the in-memory function, whose
random streams depend on the seed and the task only, so the p-values are the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..engines import LazyTable, Survey, first_pass, narwhals
from ..engines.survey import problems
from ._layout import SAFE_MAGNITUDE

__all__ = [
    "PairSums",
    "compute",
    "matrices",
    "task_groups",
    "MAX_PAIRS",
    "POLARS_LIMIT",
]

MAX_PAIRS = 2000
"""Unordered pairs of systems whose sums one query computes at most (six aggregates
each); more pairs are split over several queries."""

POLARS_LIMIT = 2**30
"""Bytes the per-query pivot of a polars LazyFrame may take before it is computed a few
tasks at a time (polars has no memory limit of its own; see :func:`task_groups`). At 3e7
rows (3e6 groups) it brings polars' peak RSS from 3.1 to 1.5 GB, and its time down."""


class PairSums:
    """The per-(metric, task) results of the pushed-down query, as numpy arrays.

    ``count`` (queries), ``start`` (the provisional shift a'), ``own`` (Σy), ``sq`` (Σy²),
    ``shy`` (Σy over the queries every present system has), ``d`` and ``shift`` (the
    in-memory shift, in scaled units from a' and in the scores' units) are ``(metric,
    system, task)``; ``scale, rows`` (queries of the task), ``n_shared`` (those every
    present system has) and, for means(), ``row_sq, cell_sq`` are ``(metric, task)``;
    ``pairs`` lists the unordered pairs (a, b), a < b, whose sums were asked for, and
    ``pair[name]`` is a ``(metric, task, pair)`` array of the sums named in the module
    docstring: ``n`` and ``p`` (Σ m_a m_b, Σ y_a y_b), ``s`` and ``q`` (Σ y_a m_b,
    Σ y_a² m_b) and ``s_swap`` and ``q_swap`` (the same with a and b swapped).
    """

    # set by compute() and _shifts() once the engine's sums are in
    own: np.ndarray
    sq: np.ndarray
    shy: np.ndarray
    d: np.ndarray
    shift: np.ndarray
    rows: np.ndarray
    n_shared: np.ndarray
    row_sq: np.ndarray
    cell_sq: np.ndarray

    def __init__(self, survey: Survey) -> None:
        self.survey = survey
        tasks, metrics, systems = survey.tasks, survey.metrics, survey.systems
        self.shape = (len(metrics), len(systems), len(tasks))
        g = survey.groups
        at = (
            pd.Index(metrics).get_indexer(g["metric"]),
            pd.Index(systems).get_indexer(g["system"]),
            pd.Index(tasks).get_indexer(g["task"]),
        )
        self.count = np.zeros(self.shape, dtype=np.int64)
        self.count[at] = g["n"].to_numpy()
        total = np.zeros(self.shape)
        total[at] = g["total"].to_numpy(dtype=float)
        top = np.zeros(self.shape)
        top[at] = g["top"].to_numpy(dtype=float)
        self.scale = _scales(top.max(axis=1))  # (metric, task)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            start = total / self.count
        # the provisional shift: each system's mean (0 where it has no scores, or where the
        # sum overflows; the sums are moved to the in-memory shift afterwards)
        self.start = np.where((self.count > 0) & np.isfinite(start), start, 0.0)
        self.pairs: list[tuple[int, int]] = []
        self.pair: dict[str, np.ndarray] = {}


def _scales(top: np.ndarray) -> np.ndarray:
    """``(metric, task)`` powers of two near the largest |score|, 1 within the safe band
    (the rule of :class:`metaeval.paired._layout.Layout`'s ``scale``)."""
    _, exponent = np.frexp(top)
    extreme = (top > SAFE_MAGNITUDE) | ((top > 0) & (top < 1 / SAFE_MAGNITUDE))
    return np.where(extreme, np.ldexp(1.0, exponent), 1.0)


def _constants(table: LazyTable, sums: PairSums) -> Any:
    """The small table of every (task, metric): ``a{i}`` (the provisional shifts),
    ``p{i}`` (1 where system i has scores) and ``inv`` (1/scale), in the engine.

    Made from Arrow data: polars reads it as it is; a DuckDB relation can only be
    joined with relations of its own connection, reached by ``DuckDBPyRelation.query``
    (the engine's API: narwhals makes new DuckDB frames on the default connection)."""
    import pyarrow as pa

    nw = narwhals()
    survey = sums.survey
    m, t = np.nonzero(sums.count.sum(axis=1) > 0)  # the (metric, task) groups with rows
    columns: dict[str, Any] = {
        "task": pa.array(survey.tasks[t].astype(str), type=pa.string()),
        "metric": pa.array(survey.metrics[m].astype(str), type=pa.string()),
        "inv": pa.array(1.0 / sums.scale[m, t]),
    }
    for i in range(len(survey.systems)):
        columns[f"a{i}"] = pa.array(sums.start[m, i, t])
        columns[f"p{i}"] = pa.array((sums.count[m, i, t] > 0).astype(np.int8))
    arrow = pa.table(columns)
    if table.engine == "polars":
        return nw.from_arrow(arrow, backend="polars").lazy()
    __metaeval_constants = arrow  # noqa: F841 - read by DuckDB's replacement scan below
    return nw.from_native(
        table.native.query("__metaeval_source", "SELECT * FROM __metaeval_constants")
    )


def _pairs_of(left: np.ndarray, right: np.ndarray) -> list[tuple[int, int]]:
    """The unordered pairs {a, b}, a < b, of different systems in ``left`` x ``right``."""
    found = {(min(a, b), max(a, b)) for a in left for b in right if a != b}
    return sorted(found)


def task_groups(table: LazyTable, sums: PairSums, limit: float | None = None) -> list[Any]:
    """The tasks in groups whose per-query pivot fits in the engine's memory: ``[None]``
    (every task in one query) unless the pivot's hash table — a group per (task, metric,
    query) with its keys and a score per system, about 100 + 24·(systems + 1) bytes —
    would take more than ``limit`` bytes (by default DuckDB's ``memory_limit``, for polars
    :data:`POLARS_LIMIT`); then groups of tasks of half that size, each its own query over
    the rows of its tasks (a filter on ``task``, which both engines push into a Parquet
    scan: files laid out by task are read once in all), so that a table of any size is
    summed in bounded memory, without spilling: tasks never meet in the sums."""
    survey = sums.survey
    if limit is None:
        limit = _duckdb_limit(table) if table.engine == "duckdb" else POLARS_LIMIT
    if limit is None:
        return [None]
    queries = sums.count.max(axis=1).sum(axis=0)  # (task,): at least this many groups each
    size = queries * (100 + 24 * (len(survey.systems) + 1))
    if size.sum() <= limit:
        return [None]
    groups: list[list[str]] = [[]]
    used = 0.0
    for task, bytes_ in zip(survey.tasks, size, strict=True):
        if groups[-1] and used + bytes_ > limit / 2:
            groups.append([])
            used = 0.0
        groups[-1].append(str(task))
        used += bytes_
    return groups


def _duckdb_limit(table: LazyTable) -> float | None:
    """The ``memory_limit`` of a DuckDB relation's connection, in bytes."""
    units = {
        "bytes": 1,
        "KiB": 2**10,
        "MiB": 2**20,
        "GiB": 2**30,
        "TiB": 2**40,
        "KB": 1e3,
        "MB": 1e6,
        "GB": 1e9,
        "TB": 1e12,
    }
    try:
        setting = table.native.query(
            "__metaeval_source", "SELECT current_setting('memory_limit')"
        ).fetchall()[0][0]
        number, unit = str(setting).split()
        return float(number) * units[unit]
    except Exception:  # noqa: BLE001 - an engine without the setting: one query
        return None


def _query(
    table: LazyTable,
    sums: PairSums,
    pairs: list[tuple[int, int]],
    per_system: bool,
    anova: bool,
    tasks: list[str] | None = None,
) -> pd.DataFrame:
    """Steps 2 and 3 of the module docstring: the per-(task, metric) sums, one row each
    (of ``tasks`` only, if given)."""
    nw = narwhals()
    survey = sums.survey
    k = len(survey.systems)
    value, system = nw.col("value"), nw.col("system")
    frame = survey.frame
    if tasks is not None:
        task = (
            nw.col("task") if table.schema["task"] == nw.String else nw.col("task").cast(nw.String)
        )
        frame = frame.filter(task.is_in(tasks))
    pivot = (
        frame.select(
            "task",
            "metric",
            "query",
            *[
                nw.when(system == s).then(value).alias(f"v{i}")
                for i, s in enumerate(survey.systems)
            ],
        )
        .group_by("task", "metric", "query")
        .agg(nw.len().alias("rows_q"), *[nw.col(f"v{i}").max().alias(f"v{i}") for i in range(k)])
    )
    keys = [
        nw.col(c).cast(nw.String)
        for c in ("task", "metric")
        if table.schema[c] != nw.String and not table.schema[c].is_integer()
    ]
    if keys:
        pivot = pivot.with_columns(*keys)
    joined = pivot.join(_constants(table, sums), on=["task", "metric"], how="inner")
    # the first pass refused missing scores: a system has the query where its score is there
    here = [~nw.col(f"v{i}").is_null() for i in range(k)]
    joined = joined.with_columns(
        *[
            nw.when(here[i])
            .then((nw.col(f"v{i}") - nw.col(f"a{i}")) * nw.col("inv"))
            .otherwise(nw.lit(0.0))
            .alias(f"y{i}")
            for i in range(k)
        ],
        *[here[i].cast(nw.Float64).alias(f"m{i}") for i in range(k)],
        nw.all_horizontal(*[here[i] | (nw.col(f"p{i}") == 0) for i in range(k)], ignore_nulls=True)
        .cast(nw.Float64)
        .alias("shared"),
    )
    y = [nw.col(f"y{i}") for i in range(k)]
    w = [nw.col(f"m{i}") for i in range(k)]
    shared = nw.col("shared")
    # more rows at a query than systems with a score there: a duplicate key
    extra_rows = nw.col("rows_q") - nw.sum_horizontal(*w)
    aggs = [nw.len().alias("rows"), shared.sum().alias("n_shared"), extra_rows.max().alias("dup")]
    if per_system:
        aggs += [y[i].sum().alias(f"own{i}") for i in range(k)]
        aggs += [(y[i] * y[i]).sum().alias(f"sq{i}") for i in range(k)]
        aggs += [(shared * y[i]).sum().alias(f"shy{i}") for i in range(k)]
    for a, b in pairs:
        aggs += [
            (w[a] * w[b]).sum().alias(f"n{a}_{b}"),
            (y[a] * w[b]).sum().alias(f"s{a}_{b}"),
            (y[b] * w[a]).sum().alias(f"s{b}_{a}"),
            (y[a] * y[a] * w[b]).sum().alias(f"q{a}_{b}"),
            (y[b] * y[b] * w[a]).sum().alias(f"q{b}_{a}"),
            (y[a] * y[b]).sum().alias(f"p{a}_{b}"),
        ]
    if anova:  # the two-way ANOVA of means(): sums over the complete queries
        row = nw.sum_horizontal(*y)
        aggs += [
            (shared * row * row).sum().alias("row_sq"),
            (shared * nw.sum_horizontal(*[v * v for v in y])).sum().alias("cell_sq"),
        ]
    return table.collect_frame(joined.group_by("task", "metric").agg(*aggs))


def compute(
    table: LazyTable, left: np.ndarray, right: np.ndarray, *, anova: bool = False
) -> PairSums:
    """The sums of the systems ``left`` x ``right`` (indices into the survey's systems)."""
    survey = first_pass(table)
    sums = PairSums(survey)
    pairs = _pairs_of(left, right)
    chunks = [pairs[i : i + MAX_PAIRS] for i in range(0, len(pairs), MAX_PAIRS)] or [[]]
    tasks, metrics = pd.Index(survey.tasks), pd.Index(survey.metrics)
    groups = task_groups(table, sums)
    sums.pairs = pairs
    sums.pair = {name: np.zeros((sums.shape[0], sums.shape[2], len(pairs))) for name in _PAIR_SUMS}
    for number, chunk in enumerate(chunks):
        first = number == 0
        parts = [
            _query(table, sums, chunk, per_system=first, anova=anova and first, tasks=g)
            for g in groups
        ]
        out = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
        t = tasks.get_indexer(out["task"].astype(str))
        m = metrics.get_indexer(out["metric"].astype(str))
        if first:
            k = len(survey.systems)
            if (out["dup"].to_numpy(dtype=float) > 0).any():
                raise problems(table)
            sums.rows = _grid(sums, m, t, out["rows"])
            sums.n_shared = _grid(sums, m, t, out["n_shared"])
            for name in ("own", "sq", "shy"):
                arr = np.zeros(sums.shape)
                values = out[[f"{name}{i}" for i in range(k)]].to_numpy(dtype=float)
                arr[m[:, None], np.arange(k)[None, :], t[:, None]] = values
                setattr(sums, name, arr)
            if anova:
                sums.row_sq = _grid(sums, m, t, out["row_sq"])
                sums.cell_sq = _grid(sums, m, t, out["cell_sq"])
        at = number * MAX_PAIRS + np.arange(len(chunk))
        for name, column in _PAIR_SUMS.items():
            values = out[[column.format(a=a, b=b) for a, b in chunk]].to_numpy(dtype=float)
            sums.pair[name][m[:, None], t[:, None], at[None, :]] = values
    _shifts(sums)
    return sums


_PAIR_SUMS = {
    "n": "n{a}_{b}",
    "p": "p{a}_{b}",
    "s": "s{a}_{b}",
    "s_swap": "s{b}_{a}",
    "q": "q{a}_{b}",
    "q_swap": "q{b}_{a}",
}
"""The sums of each pair (a, b), a < b, in :class:`PairSums` ``.pair``, and their columns
in the query's result (the aliases of :func:`_query`)."""


def _grid(sums: PairSums, m: np.ndarray, t: np.ndarray, column: pd.Series) -> np.ndarray:
    out = np.zeros((sums.shape[0], sums.shape[2]))
    out[m, t] = column.to_numpy(dtype=float)
    return out


def _shifts(sums: PairSums) -> None:
    """The in-memory shifts (see ``Layout.shift``): ``sums.d`` in scaled units from the
    provisional ones, ``sums.shift`` in the scores' units."""
    with np.errstate(invalid="ignore", divide="ignore"):
        own = np.nan_to_num(sums.own / sums.count)
        partial = sums.rows > sums.n_shared  # (metric, task)
        if partial.any():
            common = sums.shy / sums.n_shared[:, None, :]
            use = (partial & (sums.n_shared > 0))[:, None, :]
            d = np.nan_to_num(np.where(use, common, own))
        else:
            d = own
    sums.d = np.where(sums.count > 0, d, 0.0)
    sums.shift = np.where(sums.count > 0, sums.start + sums.d * sums.scale[:, None, :], 0.0)


def matrices(sums: PairSums, left: np.ndarray, right: np.ndarray) -> dict[str, np.ndarray]:
    """The six sums of the in-memory layout, ``(metric, task, left, right)``, moved to the
    in-memory shifts."""
    k = sums.shape[1]
    own, sq = sums.own.transpose(0, 2, 1), sums.sq.transpose(0, 2, 1)  # (metric, task, system)
    count = sums.count.transpose(0, 2, 1).astype(float)
    # each (treatment, control) cell's pair of different systems, and whether the
    # treatment is the pair's second (its sums then are the swapped ones)
    shape = (*count.shape[:2], len(left), len(right))
    if sums.pairs:
        index = np.zeros((k, k), dtype=np.int64)
        low, high = np.array(sums.pairs).T
        index[low, high] = index[high, low] = np.arange(len(sums.pairs))
        cell = index[left[:, None], right[None, :]]
        pair = {name: arr[..., cell] for name, arr in sums.pair.items()}
    else:  # a system against itself only
        pair = dict.fromkeys(_PAIR_SUMS, np.zeros(shape))
    swap, same = left[:, None] > right[None, :], left[:, None] == right[None, :]

    def side(x: str, swapped: str) -> np.ndarray:  # the treatment's sum, a pair's either side
        return np.where(swap, pair[swapped], pair[x])

    own_n, own_s, own_q = (a[..., left][..., :, None] for a in (count, own, sq))
    raw = {
        "n": np.where(same, own_n, pair["n"]),
        "sx": np.where(same, own_s, side("s", "s_swap")),
        "sy": np.where(same, own_s, side("s_swap", "s")),
        "sxx": np.where(same, own_q, side("q", "q_swap")),
        "syy": np.where(same, own_q, side("q_swap", "q")),
        "sxy": np.where(same, own_q, pair["p"]),
    }
    d = sums.d.transpose(0, 2, 1)  # (metric, task, system)
    dx, dy = d[..., left][..., :, None], d[..., right][..., None, :]
    n, sx, sy = raw["n"], raw["sx"], raw["sy"]
    return {
        "n": n,
        "sum_x": sx - n * dx,
        "sum_y": sy - n * dy,
        "sum_xx": raw["sxx"] - 2 * dx * sx + n * dx**2,
        "sum_yy": raw["syy"] - 2 * dy * sy + n * dy**2,
        "sum_xy": raw["sxy"] - dy * sx - dx * sy + n * dx * dy,
    }

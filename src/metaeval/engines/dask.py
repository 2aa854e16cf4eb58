"""A dask DataFrame's first pass, partition map and tree reduction, and validation.

Every statistic metaeval computes from a scores table is a function of one task's rows
at a time. So a dask table is analysed as:

1. **every partition** is computed by a given per-piece function, in the task that
   reads it (:func:`map_reduce`);
2. **a tree reduction** on the workers joins the partitions' results
   (:data:`SPLIT_EVERY` a node) — statistics per task × metric × pair, or result rows,
   small whatever the number of queries — and tells whether any task had rows in two
   partitions, in which case the table is shuffled on ``task`` and the work done again
   (one Parquet file per task, the common layout, moves nothing);
3. **the client** puts the results in the in-memory order and issues the warnings once,
   merged (:func:`dask_per_task`, through :func:`metaeval.engines.per_task.gathered`).

What is computed per piece is said elsewhere: the sufficient statistics by
:mod:`metaeval.paired.pushdown` (each partition laid out on its own names, the arrays
aligned as they are joined), the per-task tests and tables by the in-memory functions,
through the one per-task driver (:func:`dask_per_task`). Their first pass
(:func:`dask_survey`) reads the ``task``, ``system`` and ``metric`` columns for the whole
table's names, and shuffles the table on ``task`` where a task has rows in two partitions.

Errors are the in-memory ones, raised on a worker and re-raised by dask on the client;
but a :class:`~metaeval.PairingError` of a partition without a pair to compare travels up
the tree as data, raised only if no partition has a pair (as in memory). ``import
metaeval`` does not import dask: the ``.meta`` accessor is registered on
``dask.dataframe.DataFrame`` when dask.dataframe is imported (:mod:`metaeval.accessor`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..errors import SchemaError, quote_list
from ..schema import KEY_COLUMNS, SCORE_COLUMNS
from ..schema._failures import no_rows_error
from .per_task import gathered, run_piece
from .survey import Survey

__all__ = [
    "SPLIT_EVERY",
    "Piece",
    "check_columns",
    "key_order",
    "dask_survey",
    "whole_tasks",
    "partition",
    "map_reduce",
    "dask_pieces",
    "concat_frames",
    "validate",
]

SPLIT_EVERY = 8
"""Partial results combined per node of the reduction tree."""


# ------------------------------------------------------------------ first pass
def _names(part: pd.DataFrame) -> tuple[list[str], list[str], list[str]]:
    """A partition's tasks, systems and metrics (as the strings the layout will use)."""
    return tuple(  # type: ignore[return-value]
        [str(v) for v in pd.unique(part[c].dropna())] for c in ("task", "system", "metric")
    )


def check_columns(ddf: Any) -> None:
    """The score columns a dask table must have, and no ``replicate`` column (the in-memory
    path's errors)."""
    missing = [c for c in SCORE_COLUMNS if c not in ddf.columns]
    if missing:
        raise SchemaError(
            f"The scores table has 1 problem:\n- column(s) {missing} missing; the dask "
            f"DataFrame has columns {quote_list([str(c) for c in ddf.columns])}."
        )
    if "replicate" in ddf.columns:
        raise SchemaError(
            "Repeated runs (a 'replicate' column) need the in-memory path: the variance "
            "between replicates is estimated per system across partitions. Compute on "
            "ddf.compute(), or average the replicates first (groupby task, query, system, "
            "metric; mean) and drop the column, knowing that this ignores their variance."
        )


def key_order(ddf: Any, column: str, found: set[str]) -> list[str]:
    """The in-memory order of a key column's values: categories where the dask frame
    declares them, else sorted."""
    dtype = ddf._meta[column].dtype
    if isinstance(dtype, pd.CategoricalDtype) and dtype.categories is not None:
        known = [str(c) for c in dtype.categories]
        if "__UNKNOWN_CATEGORIES__" not in known:
            return [c for c in known if c in found]
    return sorted(found)


def dask_survey(ddf: Any) -> Survey:
    """The first pass over a dask table: its :class:`~metaeval.engines.survey.Survey`, with
    ``frame`` the table with whole tasks in each partition (``shuffled`` on ``task`` if a
    task had rows in two), and the order of its tasks, systems and metrics."""
    import dask

    check_columns(ddf)
    names = ddf[["task", "system", "metric"]].map_partitions(
        _names, meta=pd.Series(dtype=object), enforce_metadata=False
    )  # in the task that reads the three columns
    parts = dask.compute(*names.to_delayed())
    seen: set[str] = set()
    aligned = True
    for tasks, _, _ in parts:
        aligned = aligned and seen.isdisjoint(tasks)
        seen.update(tasks)
    return Survey(
        frame=ddf if aligned else ddf.shuffle(on="task"),
        groups=None,
        tasks=key_order(ddf, "task", seen),  # type: ignore[arg-type]
        systems=key_order(ddf, "system", {s for _, found, _ in parts for s in found}),  # type: ignore[arg-type]
        metrics=key_order(ddf, "metric", {m for _, _, found in parts for m in found}),  # type: ignore[arg-type]
        shuffled=not aligned,
    )


def whole_tasks(ddf: Any) -> Any:
    """``ddf`` with every task's rows in one partition: as it is, or shuffled on ``task``."""
    return dask_survey(ddf).frame


# --------------------------------------------------------------- the partitions
def _as_in_memory(part: pd.DataFrame, systems: list[str], metrics: list[str]) -> pd.DataFrame:
    """A partition, validated as in memory, with the systems and metrics of the whole
    table as categories: its layout then has every system and metric, in the order the
    in-memory layout of the whole table has them."""
    from ..schema import prepare_scores

    part = prepare_scores(part)
    return part.assign(
        system=_categorical(part["system"], systems), metric=_categorical(part["metric"], metrics)
    )


def _categorical(column: pd.Series, names: list[str]) -> pd.Categorical:
    """``column`` (validated strings) as a categorical of ``names``: the column's few
    distinct values are looked up, not every row."""
    codes, uniques = pd.factorize(column)
    lookup = pd.Index(names).get_indexer(np.asarray(uniques, dtype=object).astype(str))
    return pd.Categorical.from_codes(np.where(codes < 0, -1, lookup[codes]), categories=names)


class Piece(NamedTuple):
    """A partition's result, or several joined: what travels up the reduction tree."""

    result: Any  # None: no rows, or no pair to compare
    held: list[Any]  # warnings, issued by the client
    tasks: frozenset[str]  # the tasks whose rows were there
    split: bool  # a task's rows were in two of the joined partitions
    unpaired: Any = None  # a PairingError: no pair to compare in any of them


def partition(
    part: pd.DataFrame,
    func: Any,
    kwargs: dict[str, Any],
    names: tuple[list[str], list[str]],
    run: Any,
) -> Piece:
    """``func`` of one partition, with the warnings it held and the tasks it saw;
    ``names``: the whole table's systems and metrics, to lay the partition out with;
    ``run``: how the driver runs a piece (:func:`metaeval.engines.per_task.run_piece`).

    A :class:`~metaeval.PairingError` — no pair of systems shares a query in the
    partition (a task with only the control, say) — is held, not raised: in memory it
    is raised only when no task of the whole table has a pair (see :func:`_combine`).
    Its message is the whole table's, as the partition is laid out with the whole
    table's systems; the warnings issued before it are kept, as in memory.
    """
    from ..errors import MetaEvalError

    if part.empty:
        return Piece(None, [], frozenset(), False)
    tasks = frozenset(str(t) for t in pd.unique(part["task"]))
    try:
        # validated and laid out inside the driver's context (its warnings held too)
        prepared = lambda p, **kw: func(_as_in_memory(p, *names), **kw)  # noqa: E731
        out, held, unpaired = run(part, prepared, kwargs)
    except MetaEvalError as err:  # travels to the client alone: not with pandera's context
        err.__context__ = err.__cause__ = None
        raise err
    if unpaired is not None:
        unpaired.__context__ = unpaired.__cause__ = None
        return Piece(None, held, tasks, False, unpaired)
    return Piece(out, held, tasks, False)


def _combine(pieces: list[Piece], join: Any) -> Piece:
    """One node of the reduction tree: the pieces' results joined, their warnings kept,
    and whether two of them had rows of the same task; a held PairingError is kept
    only while no piece has a result."""
    results = [p.result for p in pieces if p.result is not None]
    tasks: frozenset[str] = frozenset().union(*(p.tasks for p in pieces))
    split = any(p.split for p in pieces) or len(tasks) < sum(len(p.tasks) for p in pieces)
    if split:  # the result is thrown away: save the work
        return Piece(None, [], tasks, True)
    held = [w for p in pieces for w in p.held]
    if results:
        return Piece(join(results), held, tasks, False)
    return Piece(None, held, tasks, False, next((p.unpaired for p in pieces if p.unpaired), None))


def concat_frames(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The join of per-task result tables: one after the other."""
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def map_reduce(ddf: Any, piece: Any, args: tuple[Any, ...], join: Any) -> tuple[Piece, Any]:
    """``piece(partition, *args)`` of every partition (:func:`partition`, or
    :func:`metaeval.paired.pushdown.statistics_piece`), the results joined by a tree
    reduction on the workers (:data:`SPLIT_EVERY` pieces a node), the root brought to the
    client; and the table as computed.

    Should a task's rows turn out to be in two partitions — a table not laid out by
    task (found here where no first pass looked), or dask reading a file otherwise for
    the first pass's three columns than for all of them — the work is done again on the
    table shuffled on ``task``.
    """
    import dask

    def tree(ddf: Any) -> Piece:
        # map_partitions: each piece in the task that reads its partition (fused), which
        # then never waits in a worker's memory or travels
        pieces = ddf.map_partitions(
            piece,
            *args,
            meta=pd.Series(dtype=object),
            enforce_metadata=False,
            align_dataframes=False,
        )
        nodes = pieces.to_delayed()
        while len(nodes) > 1:
            nodes = [
                dask.delayed(_combine)(nodes[i : i + SPLIT_EVERY], join)
                for i in range(0, len(nodes), SPLIT_EVERY)
            ]
        (root,) = dask.compute(nodes[0])
        return root

    root = tree(ddf)
    if root.split:
        ddf = ddf.shuffle(on="task")
        root = tree(ddf)
    return root, ddf


def dask_per_task(
    ddf: Any,
    func: Any,
    kwargs: dict[str, Any],
    *,
    pairs: tuple[str, str] | None,
    control: Any = None,
    treatment: Any = None,
    survey: Survey | None = None,
) -> pd.DataFrame:
    """:func:`metaeval.engines.per_task` of a dask table: ``func`` on its partitions (whole
    tasks each, shuffled on ``task`` first where a task is split; ``survey``: its first
    pass, where the caller has it), the results gathered in the in-memory order
    (``metaeval.engines.per_task.gathered``)."""
    survey = survey or dask_survey(ddf)
    found = dask_pieces(survey, func, kwargs, run_piece)
    return gathered(survey, *found, pairs=pairs, control=control, treatment=treatment)


def dask_pieces(
    survey: Survey, func: Any, kwargs: dict[str, Any], run: Any
) -> tuple[list[pd.DataFrame], list[Any], Any]:
    """``func`` of every partition of a surveyed dask table, joined on the workers: the
    result (one table, or none), the warnings held and a PairingError held (for
    :func:`metaeval.engines.per_task.per_task`)."""
    names = (survey.systems, survey.metrics)
    root, _ = map_reduce(survey.frame, partition, (func, kwargs, names, run), concat_frames)
    return ([] if root.result is None else [root.result]), root.held, root.unpaired


# ------------------------------------------------------------------ validation
SHOWN_PARTITIONS = 5
"""Partitions whose problems the message of :func:`validate` spells out."""


def _problems(part: pd.DataFrame, number: int) -> tuple[int, tuple[list[str], pd.DataFrame] | None]:
    """The in-memory validation of one partition: its number of rows, and its report's
    lines and failure cases (None when it has none)."""
    from ..schema import validate_scores

    if part.empty:
        return 0, None
    try:
        validate_scores(part)
    except SchemaError as err:
        lines = [f"- partition {number}: {line[2:]}" for line in str(err).splitlines()[1:]]
        return len(part), (lines, err.failure_cases.assign(partition=number))
    return len(part), None


def _key_hashes(part: pd.DataFrame) -> pd.Series:
    """64-bit hashes of a partition's distinct (task, query, system, metric) keys."""
    keys = part[list(KEY_COLUMNS)].astype(str).drop_duplicates()
    return pd.Series(pd.util.hash_pandas_object(keys, index=False).to_numpy(), dtype="uint64")


def _rows_with(part: pd.DataFrame, hashes: set[int], number: int) -> pd.DataFrame:
    keys = part[list(KEY_COLUMNS)].astype(str)
    hit = pd.util.hash_pandas_object(keys, index=False).isin(hashes).to_numpy()
    return keys[hit].assign(partition=number, row=part.index[hit])


def _shared_keys(ddf: Any) -> tuple[list[str], pd.DataFrame]:
    """Keys that rows in two or more partitions share (the partitions' own duplicates are
    found by their validation): a count of key hashes, then the rows behind the repeats."""
    import dask

    counts = ddf.map_partitions(_key_hashes, meta=pd.Series(dtype="uint64")).value_counts()
    repeated = {int(h) for h in counts[counts > 1].index.compute()}
    if not repeated:
        return [], pd.DataFrame()
    parts = ddf[list(KEY_COLUMNS)].to_delayed()
    rows = pd.concat(
        dask.compute(*[dask.delayed(_rows_with)(p, repeated, i) for i, p in enumerate(parts)])
    )
    spread = rows.groupby(list(KEY_COLUMNS), sort=True)["partition"].agg(["nunique", "unique"])
    spread = spread[spread["nunique"] > 1]  # (not a 64-bit hash collision)
    if spread.empty:
        return [], pd.DataFrame()
    key, where = spread.index[0], sorted(int(p) for p in spread["unique"].iloc[0])
    line = (
        f"- {len(spread)} (task, query, system, metric) key(s) have rows in more than one "
        f"partition, e.g. key {key} in partitions {where}"
    )
    shared = rows.set_index(list(KEY_COLUMNS)).loc[spread.index].reset_index()
    cases = pd.DataFrame(
        {
            "problem": "duplicate keys",
            "column": ", ".join(KEY_COLUMNS),
            "row": shared["row"].to_numpy(),
            "value": None,
            "partition": shared["partition"].to_numpy(),
        }
    )
    return [line], cases


def validate(ddf: Any) -> Any:
    """Validate a dask scores table as :func:`metaeval.validate_scores` does a pandas one.

    Each partition gets the in-memory checks (types, missing and non-finite values,
    duplicate keys within it); keys repeated across partitions are found by a count of
    key hashes. Every problem is reported at once, by partition number and row label
    within the partition.

    Returns
    -------
    dask.dataframe.DataFrame
        The table, with the lossless conversions of the in-memory validation applied
        lazily where its dtypes call for them.

    Raises
    ------
    metaeval.SchemaError
        Listing the problems of the first few partitions that have any;
        ``.failure_cases`` has every offending cell, with a ``partition`` column.
    """
    import dask

    from ..schema import coerce_scores

    check_columns(ddf)
    if ddf.columns.duplicated().any():
        dup = list(ddf.columns[ddf.columns.duplicated()])
        raise SchemaError(f"The scores table has duplicated column names {dup}; rename them.")
    checked = dask.compute(*[dask.delayed(_problems)(p, i) for i, p in enumerate(ddf.to_delayed())])
    if not sum(rows for rows, _ in checked):  # as in memory: a table without rows is an error
        raise no_rows_error([])
    found = [f for _, f in checked if f is not None]
    lines = [line for f in found[:SHOWN_PARTITIONS] for line in f[0]]
    if len(found) > SHOWN_PARTITIONS:
        lines.append(
            f"- ... and problems in {len(found) - SHOWN_PARTITIONS} more partition(s); "
            "see .failure_cases"
        )
    cases = [f[1] for f in found]
    count = sum(len(f[0]) for f in found)
    shared, shared_cases = _shared_keys(ddf)
    if shared:
        lines, cases, count = lines + shared, [*cases, shared_cases], count + 1
    if count:
        raise SchemaError(
            f"The scores table has {count} problem{'s' if count != 1 else ''}:\n"
            + "\n".join(lines),
            pd.concat(cases, ignore_index=True),
        )
    meta = coerce_scores(ddf._meta)
    if meta is ddf._meta:
        return ddf
    return ddf.map_partitions(coerce_scores, meta=meta)

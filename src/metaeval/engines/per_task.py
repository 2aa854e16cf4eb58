"""One per-task driver for every out-of-core table: whole tasks in, an in-memory function
on each, one result out.

Every statistic metaeval computes from a scores table is a function of one task's rows at
a time (sums over its queries, its system means, its resamples drawn from streams keyed
by the seed and the task's name). :func:`per_task` runs such an in-memory function on the
whole-task pieces of a lazy table (polars, DuckDB: fetched one task at a time through
narwhals), :func:`metaeval.engines.dask.dask_per_task` on those of a dask DataFrame (its
partitions, whole tasks each, on dask's workers), and :func:`gathered` does what is the
same for every engine (the dask module uses this one, this one does not know dask):

1. each piece is laid out with the whole table's systems and metrics as its axes
   (:func:`whole_table_names`: a system absent from a task is absent there, not
   unknown), and its warnings are held as data (:func:`metaeval.errors.collected_warnings`);
2. the pieces' results are concatenated and put in the in-memory order (:func:`in_order`),
   their ``attrs`` kept;
3. the warnings are issued once, merged; a :class:`~metaeval.PairingError` of a piece
   without a pair is raised only if no piece has a pair, as in memory.

The driver knows how to run, never what: the function and its arguments are given (by
the statistic's route, :func:`metaeval.engines.route`, or by
:mod:`metaeval.paired.partitions` for a dask table).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import pandas as pd

from ..errors import PairingError, collected_warnings, reissue
from ..schema._columns import SCORE_COLUMNS
from ..schema._failures import no_rows_error
from .frames import LazyTable, narwhals
from .survey import Survey, first_pass

__all__ = [
    "per_task",
    "gathered",
    "run_piece",
    "whole_table_names",
    "keeps_whole_table_names",
    "in_order",
    "systems_of",
]

_WHOLE_TABLE: ContextVar[bool] = ContextVar("metaeval_whole_table", default=False)

_SYSTEM_COLUMNS = ("system", "system_a", "system_b", "treatment", "control")
"""The columns of a result (or of a warning's groups) that name systems."""


@contextmanager
def whole_table_names() -> Iterator[None]:
    """Within it, layouts keep the unused categories of ``system`` and ``metric``.

    For a piece of a table — a task, a dask partition — whose ``system`` and ``metric``
    are categoricals with the whole table's names: its layout then has the axes the whole
    table's layout has, and every function computed from it gives, for the piece's tasks,
    what it gives on the whole table (a system absent from a task is absent there, not
    unknown). Set by :func:`per_task` only; a context variable: other threads are
    unaffected.
    """
    token = _WHOLE_TABLE.set(True)
    try:
        yield
    finally:
        _WHOLE_TABLE.reset(token)


def keeps_whole_table_names() -> bool:
    """Whether a layout computed now keeps the whole table's names (see
    :func:`whole_table_names`; read by :func:`metaeval.paired._layout.layout`)."""
    return _WHOLE_TABLE.get()


def run_piece(part: pd.DataFrame, func: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """``func(part, **kwargs)`` with the whole table's names, its warnings held: returns
    ``(result or None, held warnings, PairingError or None)``."""
    with collected_warnings() as held, whole_table_names():
        try:
            return func(part, **kwargs), held, None
        except PairingError as err:
            return None, held, err


def systems_of(wanted: Any, systems: Sequence[str]) -> list[str]:
    """The systems of a treatment/control dim in the in-memory order (all: ``None``)."""
    if wanted is None:
        return list(systems)
    return [str(s) for s in ([wanted] if isinstance(wanted, str) else wanted)]


def in_order(frame: pd.DataFrame, orders: dict[str, Sequence[str]]) -> pd.DataFrame:
    """Rows by each column's position in ``orders``, stably (the in-memory order)."""
    positions = [
        frame[c].astype(str).map({v: i for i, v in enumerate(order)}).to_numpy()
        for c, order in orders.items()
        if c in frame.columns
    ]
    if not positions:
        return frame.reset_index(drop=True)
    return frame.iloc[np.lexsort(positions[::-1])].reset_index(drop=True)


def per_task(
    table: LazyTable,
    func: Callable[..., pd.DataFrame],
    kwargs: dict[str, Any],
    *,
    pairs: tuple[str, str] | None,
    control: Any = None,
    treatment: Any = None,
    columns: Sequence[str] = (),
) -> pd.DataFrame:
    """``func`` (an in-memory function that treats each task on its own) run on each task's
    rows of ``table`` (a ``LazyTable``), with the results in the in-memory order and the
    warnings issued once (see the module docstring).

    The tasks are fetched one at a time: only ``SCORE_COLUMNS`` and ``columns``, and only
    the systems of ``control`` and ``treatment`` (all when either is None). ``pairs`` names
    the two system columns of a pairwise result (ordered as treatment and control are).
    The caller checks the system names first (``select_systems``), as in memory. A dask
    table's pieces are its partitions: :func:`metaeval.engines.dask.dask_per_task`.
    """
    survey = first_pass(table)
    found = _lazy_pieces(table, survey, func, kwargs, pairs, control, treatment, columns)
    return gathered(survey, *found, pairs=pairs, control=control, treatment=treatment)


def gathered(
    survey: Survey,
    results: list[pd.DataFrame],
    held: list[Any],
    unpaired: PairingError | None,
    *,
    pairs: tuple[str, str] | None,
    control: Any = None,
    treatment: Any = None,
) -> pd.DataFrame:
    """The pieces' results of a surveyed table as one result: concatenated, in the
    in-memory order, ``attrs`` kept, the held warnings issued once (steps 2 and 3 of the
    module docstring; the same for every engine)."""
    names = (list(survey.systems), list(survey.metrics))
    systems = dict.fromkeys(_SYSTEM_COLUMNS, names[0])
    if pairs is not None:
        systems = {
            pairs[0]: systems_of(treatment, names[0]),
            pairs[1]: systems_of(control, names[0]),
        }
    order = {"task": list(survey.tasks), "metric": names[1], **systems}
    if not results:
        reissue(held, order)
        if unpaired is not None:
            raise unpaired
        raise no_rows_error([])
    attrs = dict(results[0].attrs)
    out = pd.concat(results, ignore_index=True) if len(results) > 1 else results[0]
    sort: dict[str, Sequence[str]] = {"metric": names[1]}
    if pairs is not None:
        sort.update({pairs[0]: order[pairs[0]], pairs[1]: order[pairs[1]]})
    sort["task"] = list(survey.tasks)
    out = in_order(out, sort)
    out.attrs = attrs
    reissue(held, order)
    return out


def _lazy_pieces(
    table: LazyTable,
    survey: Survey,
    func: Callable[..., pd.DataFrame],
    kwargs: dict[str, Any],
    pairs: tuple[str, str] | None,
    control: Any,
    treatment: Any,
    columns: Sequence[str],
) -> tuple[list[pd.DataFrame], list[Any], PairingError | None]:
    """The results of ``func`` on each task of a lazy table, fetched one at a time."""
    nw = narwhals()
    wanted = None
    if pairs is not None and control is not None and treatment is not None:
        wanted = sorted({*systems_of(control, []), *systems_of(treatment, [])})
    names = (list(survey.systems), list(survey.metrics))
    frame = survey.frame.select(*SCORE_COLUMNS, *[c for c in columns if c not in SCORE_COLUMNS])
    if wanted is not None:
        frame = frame.filter(nw.col("system").cast(nw.String).is_in(wanted))
    results: list[pd.DataFrame] = []
    held: list[Any] = []
    unpaired: PairingError | None = None
    for task in survey.tasks:
        part = table.collect_frame(frame.filter(nw.col("task").cast(nw.String) == str(task)))
        if part.empty:
            continue
        part = part.assign(
            system=pd.Categorical(part["system"].astype(str), categories=names[0]),
            metric=pd.Categorical(part["metric"].astype(str), categories=names[1]),
        )
        out, caught, err = run_piece(part, func, kwargs)
        held += caught
        if err is not None:
            unpaired = unpaired or err
            continue
        results.append(out)
    return results, held, unpaired

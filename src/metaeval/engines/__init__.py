"""How to run, never what: every frame metaeval takes, and every engine it computes in.

- :mod:`~metaeval.engines.frames`: the one adapter — what a frame is
  (:func:`frame_kind`), to pandas (:func:`to_pandas`), lazy or not (:class:`LazyTable`),
  and :func:`any_frame`, through which every function meets its table;
- :mod:`~metaeval.engines.survey`: the first pass over a lazy table (polars, DuckDB) —
  the names in the in-memory order, the checks, the pandas messages; a dask table's
  first pass (:func:`metaeval.engines.dask.dask_survey`) gives the same ``Survey``;
- :mod:`~metaeval.engines.per_task`: the one per-task driver — whole-task pieces → a
  given in-memory function → concatenated, in order, ``attrs`` kept, warnings re-issued;
- :mod:`~metaeval.engines.routing`: :func:`route`, through which a statistic declares at
  its definition how a lazy table is handled (collected, task by task, or in its engine),
  so that its body never asks what kind of table it has;
- :mod:`~metaeval.engines.dask`: a dask table's partition map and tree reduction of a
  given per-piece function, and its validation (loaded on use: it needs dask).

What an engine computes (the expression plan, the per-piece sums) is said by
:mod:`metaeval.paired.pushdown`; the faces on other libraries' frames (dask's ``.meta``,
polars' ``.metaeval``) are generated in :mod:`metaeval.accessor`. This package imports
only the core; nothing here is imported by ``import metaeval`` beyond pandas (narwhals,
polars, DuckDB and dask load when a frame of theirs arrives).
"""

from __future__ import annotations

from .frames import (
    EAGER_KINDS,
    FRAMES,
    LAZY_KINDS,
    LazyTable,
    any_frame,
    declared_orders,
    frame_kind,
    is_lazy,
    lazy_table,
    narwhals,
    to_pandas,
)
from .per_task import keeps_whole_table_names, per_task, whole_table_names
from .routing import route
from .survey import Survey, first_pass

__all__ = [
    "FRAMES",
    "EAGER_KINDS",
    "LAZY_KINDS",
    "frame_kind",
    "is_lazy",
    "to_pandas",
    "any_frame",
    "LazyTable",
    "lazy_table",
    "narwhals",
    "declared_orders",
    "Survey",
    "first_pass",
    "per_task",
    "whole_table_names",
    "keeps_whole_table_names",
    "route",
]

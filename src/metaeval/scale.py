"""Past one process: ``.meta`` on dask DataFrames (needs the ``dask`` extra).

The sufficient statistics are sums over a task's queries, shifted by each system's
mean over the queries every system of the task has; a task whose rows are whole in
one partition therefore gets exactly the statistics it gets in memory. So:

1. a first, cheap pass reads the ``task`` column of every partition; where a task
   has rows in two partitions, the table is shuffled on ``task`` once (where every
   partition holds whole tasks — one Parquet file per task, say — nothing moves);
2. every partition is laid out and reduced by the in-memory kernels to its
   :class:`xarray.Dataset` of statistics — small: tasks × metrics × pairs — and to
   its task-level columns; warnings wait for step 3;
3. the client concatenates the partitions' statistics along ``task`` (a task is in
   one of them only) and runs the in-memory code from there on: the same effects,
   the same warnings, the same errors.

``import metaeval`` does not import dask: the accessor is registered on
``dask.dataframe.DataFrame`` when dask.dataframe is imported (see :func:`install`).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ._options import DEFAULT_EFFECT, EffectType
from .errors import PairingError, SchemaError, quote_list

__all__ = ["DaskMetaAccessor", "install", "register"]

_FILL = {"n": 0, "n_treatment": 0, "n_control": 0, "scale": 1.0}
"""Values of the statistics of a (task, system) that a partition does not have."""


def _aligned(ddf: Any) -> bool:
    """Whether every task's rows are in one partition (a pass over the task column)."""
    tasks = ddf["task"].map_partitions(
        lambda s: pd.Series([list(pd.unique(s.astype(str)))], dtype=object),
        meta=pd.Series(dtype=object),
    )
    seen: set[str] = set()
    for part in tasks.compute():
        for task in part:
            if task in seen:
                return False
            seen.add(task)
    return True


def whole_tasks(ddf: Any) -> Any:
    """``ddf`` with every task's rows in one partition: as it is, or shuffled on ``task``."""
    missing = [c for c in ("task", "query", "system", "metric", "value") if c not in ddf.columns]
    if missing:
        raise SchemaError(
            f"The scores table has 1 problem:\n- column(s) {missing} missing; the dask "
            f"DataFrame has columns {quote_list([str(c) for c in ddf.columns])}."
        )
    return ddf if _aligned(ddf) else ddf.shuffle(on="task")


def _present(wanted: str | Sequence[str] | None, systems: pd.Index) -> list[str] | None:
    """The ``wanted`` systems this partition has (None: all of them)."""
    if wanted is None:
        return None
    names = [wanted] if isinstance(wanted, str) else list(wanted)
    return [str(s) for s in names if str(s) in systems]


def _partition_statistics(
    part: pd.DataFrame,
    control: str | Sequence[str] | None,
    treatment: str | Sequence[str] | None,
) -> tuple[xr.Dataset | None, pd.DataFrame, list[str]]:
    """One partition's statistics (no warnings: the client warns), task-level columns and
    systems; None for a partition without rows or without the requested systems."""
    from .paired._layout import layout
    from .paired.effect_size import task_attributes
    from .paired.sufficient import statistics_of

    if part.empty:
        return None, pd.DataFrame(), []
    systems = pd.Index(pd.unique(part["system"].astype(str)))
    right, left = _present(control, systems), _present(treatment, systems)
    if right == [] or left == []:
        return None, task_attributes(part), list(systems)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the client warns once, for the whole table
        stats = statistics_of(layout(part), control=right, treatment=left)
    return stats, task_attributes(part), list(systems)


def _order(wanted: str | Sequence[str] | None, found: Sequence[str]) -> list[str]:
    """The systems of a treatment/control dim in the in-memory order."""
    if wanted is None:
        return sorted(found)
    return [str(s) for s in ([wanted] if isinstance(wanted, str) else wanted)]


def statistics(
    ddf: Any,
    control: str | Sequence[str] | None = None,
    treatment: str | Sequence[str] | None = None,
) -> tuple[xr.Dataset, pd.DataFrame]:
    """The sufficient statistics of a dask scores table, and its task-level columns."""
    import dask

    from .paired.sufficient import warn_unpaired

    whole = whole_tasks(ddf)
    tasks = [dask.delayed(_partition_statistics)(p, control, treatment) for p in whole.to_delayed()]
    (parts,) = dask.compute(tasks)
    systems = sorted({s for _, _, found in parts for s in found})
    for role, wanted in (("control", control), ("treatment", treatment)):
        unknown = [s for s in (_order(wanted, systems) if wanted is not None else [])
                   if s not in systems]  # fmt: skip
        if unknown:
            raise PairingError(
                f"The {role} system(s) {unknown} are not in the scores table; "
                f"its systems are {quote_list(systems)}."
            )
    datasets = [ds for ds, _, _ in parts if ds is not None]
    if not datasets:
        raise PairingError("No partition has both a treatment and a control system.")
    stats = xr.concat(datasets, dim="task", join="outer", fill_value=_FILL)
    stats = stats.sortby("task").sortby("metric")
    stats = stats.reindex(
        treatment=_order(treatment, list(stats["treatment"].values)),
        control=_order(control, list(stats["control"].values)),
        fill_value=_FILL,
    )
    for name in ("n", "n_treatment", "n_control"):
        stats[name] = stats[name].astype(np.int64)
    attributes = [a for _, a, _ in parts if len(a.columns)]
    attrs = pd.concat(attributes) if attributes else pd.DataFrame()
    warn_unpaired(stats)
    return stats, attrs


class DaskMetaAccessor:
    """``.meta`` on a dask DataFrame of scores: the same results as in memory."""

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def sufficient_statistics(
        self,
        control: str | Sequence[str] | None = None,
        *,
        treatment: str | Sequence[str] | None = None,
    ) -> xr.Dataset:
        """:func:`metaeval.sufficient_statistics` of the whole table, reduced per partition."""
        return statistics(self._obj, control, treatment)[0]

    def effects(
        self,
        control: str | Sequence[str] | None,
        *,
        treatment: str | Sequence[str] | None = None,
        effect: EffectType = DEFAULT_EFFECT,
        alpha: float = 0.05,
        correct: bool = True,
    ) -> pd.DataFrame:
        """:func:`metaeval.effects` of the whole table: a pandas effects table."""
        from .paired.effect_size import checked_options, effects_table

        effect, alpha = checked_options(effect, alpha)
        stats, attrs = statistics(self._obj, control, treatment)
        return effects_table(stats, attrs, effect=effect, alpha=alpha, correct=correct)


def register() -> None:
    """Register :class:`DaskMetaAccessor` as ``.meta`` on dask DataFrames."""
    from dask.dataframe.extensions import register_dataframe_accessor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "registration ... overriding"
        register_dataframe_accessor("meta")(DaskMetaAccessor)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs :func:`register` right after ``dask.dataframe`` is imported."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "dask.dataframe":
            return None
        sys.meta_path.remove(self)  # find the real spec, once
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_and_register(module: Any) -> None:
            exec_module(module)
            register()

        loader.exec_module = exec_and_register  # type: ignore[method-assign]
        return spec


def install() -> None:
    """Register now if dask.dataframe is imported, else as soon as it is."""
    if "dask.dataframe" in sys.modules:
        register()
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())

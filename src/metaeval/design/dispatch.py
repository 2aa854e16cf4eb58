"""``power()``: the one verb of planning, on a scores table or an effects table."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .._kinds import table_kind
from ..engines import any_frame
from ..errors import OptionError, TableKindError
from .results import PowerResult

__all__ = ["power"]


@any_frame
def power(table: pd.DataFrame, control: Any = None, **options: Any) -> PowerResult:
    """A plan from a pilot: queries per task from a scores table, tasks from an effects
    table.

    On a scores table (``task, query, system, metric, value``) this is
    :func:`metaeval.design.plan_queries` ``(table, control, **options)``: the queries
    (or clusters) each task needs. On an effects table (:func:`metaeval.effects`) it is
    :func:`metaeval.design.plan_tasks` ``(table, **options)``: the tasks a pooled
    comparison needs. Give exactly two of the size (``n`` or ``k``), ``mde`` and
    ``power``; the third is solved for. See those functions for every option.

    Parameters
    ----------
    table : pandas.DataFrame
        A pilot scores table or a pilot effects table.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    control : str or list of str, optional
        The control system(s) of a scores table (required there); not for an effects
        table, whose rows already name their control.
    **options
        The options of :func:`metaeval.design.plan_queries` or
        :func:`metaeval.design.plan_tasks`.

    Returns
    -------
    metaeval.design.PowerResult

    Raises
    ------
    metaeval.TableKindError
        ``table`` is neither a scores nor an effects table.
    metaeval.OptionError
        ``control`` with an effects table, or without it for a scores table.

    Examples
    --------
    Queries per task for a paired t-test to detect a difference of 0.02 in accuracy
    with power 0.8, from the bundled example as a pilot:

    >>> import metaeval
    >>> pilot = metaeval.load_example()
    >>> accuracy = pilot[pilot["metric"] == "accuracy"]
    >>> plan = accuracy.meta.power("logistic_regression", treatment="knn", mde=0.02,
    ...                            power=0.8)
    >>> plan.table[["task", "pilot_n", "sd_diff", "n"]].round(3)
                task  pilot_n  sd_diff    n
    0  breast_cancer      569    0.177  620
    1         digits     1797    0.175  602
    2           iris      150    0.183  660
    3           wine      178    0.183  658

    Tasks a pooled comparison needs for the same difference (REML with Knapp–Hartung
    intervals, simulated; the pilot's τ² and mean within-task variance):

    >>> effects = accuracy.meta.effects("logistic_regression", treatment="knn", effect="md")
    >>> tasks = effects.meta.power(mde=0.02, power=0.8, seed=1)
    >>> tasks.table[["pilot_k", "k", "power", "k_normal"]]
       pilot_k  k  power  k_normal
    0        4  8  0.867         5
    """
    kind = table_kind(table)
    if kind == "scores":
        if control is None:
            raise OptionError(
                "power() on a scores table plans the queries of a paired comparison: pass "
                "control= (the baseline system)."
            )
        from .queries import plan_queries

        return plan_queries(table, control, **options)
    if kind == "effects":
        if control is not None:
            raise OptionError(
                "power() on an effects table plans the tasks of its pooled comparisons, "
                f"whose rows name their control already; leave out control={control!r}."
            )
        from .tasks import plan_tasks

        return plan_tasks(table, **options)
    raise TableKindError(
        f"power() plans from a pilot scores table (queries per task) or a pilot effects "
        f"table (tasks), not a {kind or 'table of unknown kind'} table."
    )

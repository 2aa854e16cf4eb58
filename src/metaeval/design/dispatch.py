"""``power()``: the one verb of planning, on a scores table or an effects table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from .._kinds import table_kind
from .._options import (
    CI_METHODS,
    DEFAULT_CI,
    DEFAULT_POOL_METHOD,
    Alternative,
    CIMethod,
    PlanTest,
    PoolMethod,
    literal_signature,
)
from ..engines import any_frame
from ..errors import OptionError, TableKindError, check_option, excerpt
from .results import PowerResult

__all__ = ["power"]


_QUERIES = (
    "treatment",
    "n",
    "alternative",
    "cluster",
    "replicates",
    "epochs",
    "seeds",
    "test",
    "width",
)
"""The options of :func:`plan_queries` alone (a scores table)."""

_TASKS = ("k", "tau2", "variance", "method", "pool_test", "n_draws", "seed")
"""The options of :func:`plan_tasks` alone (an effects table)."""

_DEFAULTS: dict[str, Any] = {
    "alternative": "two-sided",
    "test": "t",
    "method": DEFAULT_POOL_METHOD,
    "pool_test": DEFAULT_CI,
    "n_draws": 2000,
}
"""The options whose default is not None."""


@any_frame
@literal_signature
def power(
    table: pd.DataFrame,
    control: str | Sequence[str] | None = None,
    *,
    treatment: str | Sequence[str] | None = None,
    n: int | None = None,
    k: int | None = None,
    mde: float | None = None,
    power: float | None = None,
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    cluster: str | None = None,
    replicates: str | None = None,
    epochs: int | None = None,
    seeds: int | None = None,
    test: PlanTest = "t",
    width: float | None = None,
    tau2: float | None = None,
    variance: float | None = None,
    method: PoolMethod = DEFAULT_POOL_METHOD,
    pool_test: CIMethod | None = DEFAULT_CI,
    n_draws: int = 2000,
    seed: int | None = None,
) -> PowerResult:
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
    treatment, n, alternative, cluster, replicates, epochs, seeds, test, width
        A scores table only: as in :func:`metaeval.design.plan_queries`.
    k, tau2, variance, method, n_draws, seed
        An effects table only: as in :func:`metaeval.design.plan_tasks`.
    pool_test : {"z", "t", "knha", "hksj", "adhoc"} or None, default None
        An effects table only: the pooling test of :func:`metaeval.design.plan_tasks`
        (its ``test``; ``test`` here is the design of a scores table).
    mde, power, alpha
        Both: the minimum detectable effect, the power and the level.

    Returns
    -------
    metaeval.design.PowerResult

    Raises
    ------
    metaeval.TableKindError
        ``table`` is neither a scores nor an effects table.
    metaeval.OptionError
        ``control`` with an effects table, or without it for a scores table; an option
        of the other planner (``k`` for a scores table, ``n`` for an effects table, ...).

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
    given = {
        "treatment": treatment,
        "n": n,
        "alternative": alternative,
        "cluster": cluster,
        "replicates": replicates,
        "epochs": epochs,
        "seeds": seeds,
        "test": test,
        "width": width,
        "k": k,
        "tau2": tau2,
        "variance": variance,
        "method": method,
        "pool_test": pool_test,
        "n_draws": n_draws,
        "seed": seed,
    }
    if pool_test is not None:  # named as power() calls it, not as plan_tasks' test=
        check_option("pool_test", pool_test, CI_METHODS)
    kind = table_kind(table)
    if kind in ("scores", "effects"):
        own, other = (_QUERIES, _TASKS) if kind == "scores" else (_TASKS, _QUERIES)
        wrong = [name for name in other if given[name] != _DEFAULTS.get(name)]
        if wrong:
            planner = "plan_queries" if kind == "scores" else "plan_tasks"
            raise OptionError(
                f"power() on {'a scores' if kind == 'scores' else 'an effects'} table is "
                f"metaeval.design.{planner}(), which has no option `{wrong[0]}` (given "
                f"{excerpt(given[wrong[0]])}); its options are {', '.join(own)}, mde, power, alpha."
            )
        options = {name: given[name] for name in own}
        options.update(mde=mde, power=power, alpha=alpha)
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

        # power()'s pool_test= is plan_tasks' test= (power's own test= is plan_queries' design)
        return plan_tasks(
            table, **{("test" if k == "pool_test" else k): v for k, v in options.items()}
        )
    raise TableKindError(
        f"power() plans from a pilot scores table (queries per task) or a pilot effects "
        f"table (tasks), not a {kind or 'table of unknown kind'} table."
    )

"""Planning an evaluation: how many queries, clusters, epochs and tasks a comparison needs.

From a pilot, a plan gives exactly one of a size, the minimum detectable effect or the
power when the other two are given (as :func:`statsmodels.stats.power.TTestPower`'s
``solve_power``), for the analysis metaeval will run:

- :func:`plan_queries`, from a pilot scores table: per task, the queries (or clusters of
  queries) a paired t-test, a one-way ANOVA over several systems or a confidence interval
  of a given width needs (Sakai's topic-set-size designs; Miller 2024, §4, for clusters
  and epochs);
- :func:`plan_tasks`, from a pilot effects table: the tasks a random-effects comparison
  (REML with Knapp–Hartung intervals by default) needs, with τ² from the pilot or given;
- :func:`power` is the one verb of both (``scores.meta.power(...)``,
  ``effects.meta.power(...)``): it plans queries for a scores table and tasks for an
  effects table.

Each returns a :class:`PowerResult`: the plan's table and the power curves that
``.plot()`` draws.
"""

from __future__ import annotations

from .dispatch import power
from .results import PowerResult

__all__ = ["PowerResult", "plan_queries", "plan_tasks", "power"]


def __getattr__(name: str):  # the planners load on first use
    if name == "plan_queries":
        from .queries import plan_queries

        return plan_queries
    if name == "plan_tasks":
        from .tasks import plan_tasks

        return plan_tasks
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The result of :func:`metaeval.facets`: :class:`FacetResult`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .._results import Result, one_metric

__all__ = ["FacetResult", "FacetPlan"]


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class FacetResult(Result):
    """Variance components and facet-aware standard errors (:func:`metaeval.facets`).

    ``table`` has one row per task, metric and system (the model's mean, its facet-aware
    ``se`` and the item-only ``naive_se``); ``components`` one per task, metric and
    component; ``pairs`` the paired differences, an effects table :func:`metaeval.pool`
    pools; ``g`` the G coefficients per task and metric.
    """

    components: pd.DataFrame
    pairs: pd.DataFrame
    g: pd.DataFrame
    kind: ClassVar[str] = "facets"

    def plot(self, *, metric: str | None = None, ax: Any = None, **kwargs: Any) -> Any:
        """A stacked bar of each task's variance components (shares of the total).

        Parameters
        ----------
        metric : str, optional
            The metric to draw (default the first).
        ax : matplotlib.axes.Axes, optional
            Draw on it; a new figure otherwise.
        **kwargs
            Passed to :meth:`matplotlib.axes.Axes.bar`.

        Returns
        -------
        matplotlib.figure.Figure, or the Axes when ``ax`` is given.
        """
        import matplotlib.pyplot as plt

        own = one_metric(self.components, metric)
        chosen = str(own["metric"].iloc[0])
        wide = own.pivot_table(index="task", columns="component", values="share", sort=False)
        order = list(pd.unique(own["component"]))
        wide = wide[order]
        fig = None
        if ax is None:
            fig, ax = plt.subplots(
                figsize=(max(5.0, 0.9 * len(wide) + 3.5), 3.5), layout="constrained"
            )
        bottom = pd.Series(0.0, index=wide.index)
        for name in order:  # display: one bar segment per component
            ax.bar(wide.index.astype(str), wide[name], bottom=bottom, label=name, **kwargs)
            bottom += wide[name].fillna(0)
        ax.set_ylabel("share of the variance")
        ax.set_ylim(0, 1)
        ax.set_title(f"variance components: {chosen}")
        ax.set_xlabel("task")
        ax.legend(fontsize="small", bbox_to_anchor=(1.02, 1), loc="upper left")
        return ax if fig is None else fig

    def plan(
        self,
        n: Mapping[str, int] | None = None,
        *,
        costs: Mapping[str, float] | None = None,
        target_se: float | None = None,
        mde: float | None = None,
        power: float = 0.8,
        budget: float | None = None,
        alpha: float = 0.05,
    ) -> Any:
        """A decision study: the SE of a paired difference for other numbers of levels of
        the facets, and the cheapest design that reaches a target.

        Parameters
        ----------
        n : mapping of str to int, optional
            Counts to project (``{"query": 500, "prompt": 8}``; a facet left out keeps
            its observed count): one ``"given"`` row per task and metric.
        costs : mapping of str to float, optional
            The cost of one level of each facet (``{"query": 1, "prompt": 50, "seed":
            200}``); a design costs Σ cost_f · n_f (a facet without a cost: 0).
        target_se : float, optional
            The SE of a paired difference to reach, at the least cost.
        mde : float, optional
            The difference to detect with ``power`` by a two-sided z test of level
            ``alpha``: a target SE of mde / (z_{1−α/2} + z_power); the table's ``power``.
        power : float, default 0.8
            The power wanted for ``mde``.
        budget : float, optional
            The most a design may cost: alone, the smallest SE within it.
        alpha : float, default 0.05
            The test's level.

        Returns
        -------
        FacetPlan
            ``table`` (per task and metric: the observed and the planned or given design,
            counts ``n_<facet>``, ``cost``, ``se``, ``power``), ``curve`` (the smallest SE
            at each cost) and ``.plot()``.

        Notes
        -----
        SE²(n) = 2 (Σ_f σ²_{system:f}/n_f + σ²_residual/Π_f n_f) for two systems on the
        same crossed, balanced levels (Brennan 2001, the D study): the facets' own effects
        cancel in a paired difference. See the guide, :doc:`/user_guide/facets`.
        """
        from .plan import plan

        table, curve, target = plan(
            self.components,
            list(self.table.attrs.get("random", [])),
            n=n,
            costs=costs,
            target_se=target_se,
            mde=mde,
            power=power,
            budget=budget,
            alpha=alpha,
        )
        return FacetPlan(table, curve=curve, target_se=target)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class FacetPlan(Result):
    """A decision study: ``table`` has, per task and metric, the observed design and the
    planned one (``design``: ``"observed"``, ``"planned"`` or ``"given"``) with the counts
    of every facet (``n_<facet>``), ``cost``, the projected ``se`` of a paired difference
    and the ``power`` to detect ``mde``; ``curve`` the smallest SE at each cost (the
    cheapest designs, one row each), for :meth:`plot`."""

    curve: pd.DataFrame
    target_se: float = float("nan")
    kind: ClassVar[str] = "facet_plan"

    def plot(self, *, ax: Any = None, **kwargs: Any) -> Any:
        """The smallest projected SE at each cost, one line per task (log-log), with the
        target SE and the planned designs marked."""
        import matplotlib.pyplot as plt

        fig = None
        if ax is None:
            fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
        c = self.curve
        for (task, metric), own in c.groupby(["task", "metric"], sort=False):  # one line each
            ax.plot(
                own["cost"], own["se"], drawstyle="steps-post", label=f"{task}: {metric}", **kwargs
            )
        planned = self.table[self.table["design"] != "observed"]
        ax.scatter(planned["cost"], planned["se"], color="black", zorder=3, s=18, label="planned")
        if np.isfinite(self.target_se):
            ax.axhline(self.target_se, color="grey", linestyle="--", linewidth=1, label="target SE")
        from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):  # plain numbers, no crowded minor labels
            axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            axis.set_major_formatter(ScalarFormatter())
            axis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("cost")
        ax.set_ylabel("SE of a paired difference")
        ax.legend(fontsize="small")
        return ax if fig is None else fig

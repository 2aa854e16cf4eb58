"""The result of :func:`metaeval.facets`: :class:`FacetResult`."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import pandas as pd

from .._results import Result

__all__ = ["FacetResult"]


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

        c = self.components
        metrics = list(pd.unique(c["metric"].astype(str)))
        chosen = metrics[0] if metric is None else str(metric)
        if chosen not in metrics:
            from ..errors import OptionError

            raise OptionError(f"`metric` must be one of {metrics}, but {metric!r} was passed.")
        own = c[c["metric"].astype(str) == chosen]
        wide = own.pivot_table(index="task", columns="component", values="share", sort=False)
        order = list(pd.unique(own["component"]))
        wide = wide[order]
        fig = None
        if ax is None:
            fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(wide) + 2), 3.5))
        bottom = pd.Series(0.0, index=wide.index)
        for name in order:  # display: one bar segment per component
            ax.bar(wide.index.astype(str), wide[name], bottom=bottom, label=name, **kwargs)
            bottom += wide[name].fillna(0)
        ax.set_ylabel("share of the variance")
        ax.set_ylim(0, 1)
        ax.set_title(f"variance components: {chosen}")
        ax.legend(fontsize="small", bbox_to_anchor=(1.02, 1), loc="upper left")
        return ax if fig is None else fig

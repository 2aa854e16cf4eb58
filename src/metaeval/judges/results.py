"""The results of the judges' stage: :class:`AgreementResult`."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .._options import format_number
from .._results import Result, one_metric

__all__ = ["AgreementResult", "JudgeErrorsResult", "pair_heatmap"]


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class AgreementResult(Result):
    """How much judges agree (:func:`metaeval.agreement`).

    ``table`` has one row per task and metric (and system): the coefficient with its
    bootstrap interval; ``pairs`` the coefficient of every two judges.
    """

    pairs: pd.DataFrame
    kind: ClassVar[str] = "agreement"

    def plot(self, *, metric: str | None = None, ax: Any = None, **kwargs: Any) -> Any:
        """A judge × judge heatmap of the pairs' coefficient, averaged over tasks.

        Parameters
        ----------
        metric : str, optional
            The metric to draw (default the first).
        ax : matplotlib.axes.Axes, optional
            Draw on it; a new figure otherwise.
        **kwargs
            Passed to :meth:`matplotlib.axes.Axes.imshow` (``cmap``, ``vmin``, ...).

        Returns
        -------
        matplotlib.figure.Figure, or the Axes when ``ax`` is given.
        """
        coefficient = self.table.attrs.get("coefficient", "agreement")
        title = f"{coefficient} of each two judges"
        return pair_heatmap(self.pairs, "agreement", title, metric, ax, 0.0, **kwargs)

    def pool(self, **kwargs: Any) -> pd.DataFrame:
        """The coefficient pooled over tasks on Fisher's z scale.

        Each task's coefficient r becomes z = atanh(r) with variance (se / (1 − r²))²
        (the delta method on the bootstrap ``se``), pooled by :func:`metaeval.pool`
        per metric (and system); the pooled z and its intervals are shown back on the
        coefficient's scale as ``agreement``, ``agreement_low`` and ``agreement_high``
        (tanh), beside pool's own columns on the z scale. The z transform is exact for
        a correlation (the ICCs, roughly); for α and κ it is an approximation that keeps
        the intervals inside (−1, 1). Tasks with a coefficient of ±1 or no ``se`` (no
        resamples) have no finite z and are left out by :func:`~metaeval.pool` with its
        warning.

        Parameters
        ----------
        **kwargs
            Passed to :func:`metaeval.pool` (``method``, ``test``, ``alpha``).

        Returns
        -------
        pandas.DataFrame
        """
        from ..pooling import pool

        t = self.table
        keys = [c for c in ("metric", "system") if c in t.columns]
        r = t["agreement"].to_numpy(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.arctanh(r)
            variance = (t["se"].to_numpy(float) / (1 - r**2)) ** 2
        effects = t[["task", *keys, "coefficient"]].assign(effect=z, variance=variance)
        pooled = pool(effects, groups=[*keys, "coefficient"], **kwargs)
        pooled["agreement"] = np.tanh(pooled["effect"])
        pooled["agreement_low"] = np.tanh(pooled["ci_low"])
        pooled["agreement_high"] = np.tanh(pooled["ci_high"])
        return pooled


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class JudgeErrorsResult(Result):
    """Judges against gold labels (:func:`metaeval.judge_errors`).

    ``table`` has one row per task, metric and judge (its error rates against gold);
    ``panel`` one per task and metric (the mean error correlation and the effective
    number of independent judges); ``correlations`` every two judges' error correlation.
    """

    panel: pd.DataFrame
    correlations: pd.DataFrame
    kind: ClassVar[str] = "judge_errors"

    def plot(self, *, metric: str | None = None, ax: Any = None, **kwargs: Any) -> Any:
        """A judge × judge heatmap of the error correlations, averaged over tasks.

        Parameters
        ----------
        metric : str, optional
            The metric to draw (default the first).
        ax : matplotlib.axes.Axes, optional
            Draw on it; a new figure otherwise.
        **kwargs
            Passed to :meth:`matplotlib.axes.Axes.imshow` (``cmap``, ``vmin``, ...).

        Returns
        -------
        matplotlib.figure.Figure, or the Axes when ``ax`` is given.
        """
        title = "correlation of two judges' errors (judge − gold)"
        return pair_heatmap(self.correlations, "error_corr", title, metric, ax, -1.0, **kwargs)


def pair_heatmap(
    pairs: pd.DataFrame,
    value: str,
    title: str,
    metric: str | None,
    ax: Any,
    vmin: float,
    **kwargs: Any,
) -> Any:
    """A judge × judge heatmap of ``pairs[value]`` averaged over tasks (one metric)."""
    import matplotlib.pyplot as plt

    own = one_metric(pairs, metric)
    chosen = str(own["metric"].iloc[0])
    mean = own.groupby(["judge_a", "judge_b"], sort=False)[value].mean()
    judges = list(dict.fromkeys([*own["judge_a"], *own["judge_b"]]))
    grid = np.full((len(judges), len(judges)), np.nan)
    pos = {j: i for i, j in enumerate(judges)}
    for (a, b), value in mean.items():
        grid[pos[a], pos[b]] = grid[pos[b], pos[a]] = value
    fig = None
    if ax is None:
        size = 1.6 + 0.75 * len(judges)
        fig, ax = plt.subplots(figsize=(size + 1.4, size), layout="constrained")
    # the diagonal (a judge with itself) is left empty, in light grey
    cmap = plt.get_cmap(kwargs.pop("cmap", "viridis")).with_extremes(bad="#eeeeee")
    image = ax.imshow(
        grid,
        cmap=cmap,
        vmin=kwargs.pop("vmin", vmin),
        vmax=kwargs.pop("vmax", 1),
        **kwargs,
    )
    for i in range(len(judges)):
        for j in range(len(judges)):
            if i != j and np.isfinite(grid[i, j]):
                light = grid[i, j] < 0.5
                ax.text(
                    j,
                    i,
                    format_number(grid[i, j], 2, to="unicode"),
                    ha="center",
                    va="center",
                    color="white" if light else "black",
                    fontsize=9,
                )
    ax.set_xticks(range(len(judges)), judges, rotation=30, ha="right")
    ax.set_yticks(range(len(judges)), judges)
    n_tasks = own["task"].nunique()
    tasks = "1 task" if n_tasks == 1 else f"mean over {n_tasks} tasks"
    ax.set_title(f"{title}\n{chosen}, {tasks}", fontsize=10)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax if fig is None else fig

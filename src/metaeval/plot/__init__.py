"""Figures drawn from metaeval's result tables: forest plots, pairwise heatmaps,
critical-difference diagrams, the simplex of a Bayesian signed-rank test, the
bubble plot of a meta-regression, the GOSH and Baujat plots and the power curves of a plan and the rank intervals of a leaderboard.

matplotlib and seaborn are imported when a figure is drawn, not on import.
"""

from __future__ import annotations

from ._figure import save
from .baujat import baujat_plot
from .bubble import bubble
from .critical_difference import critical_difference
from .forest import forest
from .gosh import gosh_plot
from .pairwise import pairwise
from .power import power_curves
from .ranks import rank_plot
from .simplex import simplex

__all__ = [
    "baujat_plot",
    "bubble",
    "critical_difference",
    "forest",
    "gosh_plot",
    "pairwise",
    "power_curves",
    "rank_plot",
    "save",
    "simplex",
]

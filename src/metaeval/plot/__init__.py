"""Figures drawn from metaeval's result tables: forest plots, pairwise heatmaps,
critical-difference diagrams and the simplex of a Bayesian signed-rank test.

matplotlib and seaborn are imported when a figure is drawn, not on import.
"""

from __future__ import annotations

from .critical_difference import critical_difference
from .forest import forest, ir_columns, save
from .pairwise import pairwise
from .simplex import simplex

__all__ = ["critical_difference", "forest", "ir_columns", "pairwise", "save", "simplex"]

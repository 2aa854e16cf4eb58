"""Figures drawn from metaeval's result tables: forest plots and pairwise heatmaps.

matplotlib and seaborn are imported when a figure is drawn, not on import.
"""

from __future__ import annotations

from .forest import forest, ir_columns, save
from .pairwise import pairwise

__all__ = ["forest", "ir_columns", "pairwise", "save"]

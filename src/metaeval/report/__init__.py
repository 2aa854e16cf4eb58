"""Result tables for papers and notebooks: LaTeX (booktabs) and HTML.

:func:`to_latex` and :func:`to_html` lay out an effects table, a pooled table, an
:func:`metaeval.analyze` table or a :func:`metaeval.compare` table, and write any other
result (a result object's ``.table``, a ``tukey()`` or ``leaderboard()`` table, ...) as it
is; :func:`style` gives the HTML table as a pandas Styler, which notebooks display. Every string written into LaTeX or
HTML goes through :func:`escape` (wrap deliberate markup in :class:`Markup`).
"""

from __future__ import annotations

# The names of tests and adjustments and the notes under a LaTeX table, for the report of
# metaeval.build_report (the workflows room). Not in __all__: a seam.
from ._layouts import ADJUST_NAMES as ADJUST_NAMES
from ._layouts import TEST_NAMES as TEST_NAMES
from ._render import Markup, escape, escape_latex
from ._render import add_latex_notes as add_latex_notes

# The one path from rendered cells to pandas' Styler, for the other stages' own LaTeX tables
# (the command's console output): reached through the report's face, not its private
# module. Not in __all__: a seam between stages, not a user function.
from ._render import latex_table as latex_table
from ._render import text_styler as text_styler
from .tables import style, to_html, to_latex

__all__ = [
    "Markup",
    "escape",
    "escape_latex",
    "style",
    "to_html",
    "to_latex",
]

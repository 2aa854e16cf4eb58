"""Result tables for papers and notebooks: LaTeX (booktabs) and HTML.

:func:`to_latex` and :func:`to_html` lay out an effects table, a pooled table, an
:func:`metaeval.analyze` table or a :func:`metaeval.compare` table, and write any other
result (a result object's ``.table``, a ``tukey()`` or ``leaderboard()`` table, ...) as it
is; :func:`style` gives the HTML table as a pandas Styler, which notebooks display. Every string written into LaTeX or
HTML goes through :func:`escape` (wrap deliberate markup in :class:`Markup`).
"""

from __future__ import annotations

from ._render import Markup, escape, escape_latex

# The one path from rendered cells to pandas' Styler, for the other stages' own LaTeX tables
# (the command's console output): reached through the report's face, not its private
# module. Not in __all__: a seam between stages, not a user function.
from ._render import latex_table as latex_table
from ._render import text_styler as text_styler
from ._report import Report, build_report
from .tables import style, to_html, to_latex

__all__ = [
    "Markup",
    "Report",
    "build_report",
    "escape",
    "escape_latex",
    "style",
    "to_html",
    "to_latex",
]

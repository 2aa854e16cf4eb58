"""Names shown in figures as they are."""

from __future__ import annotations

from typing import Any

__all__ = ["literal", "text_width"]


def literal(text: Any) -> str:
    r"""``text`` for a matplotlib label, shown literally.

    matplotlib reads text between two ``$`` as mathtext, so a task or system
    named ``$\foo$`` would fail to draw (``Unknown symbol``) and ``a$b$c``
    would print in italics; every ``$`` is escaped (matplotlib shows ``\$`` as
    ``$`` in plain text).

    >>> literal("50$ $x$")
    '50\\$ \\$x\\$'
    """
    return str(text).replace("$", r"\$")


def text_width(texts: list[str], props: dict[str, Any] | None = None) -> float:
    """The widest of ``texts`` in inches, drawn with the Text properties ``props``: the
    glyphs' outlines, plus 8% for the hinting of raster output, which widens text by up
    to 6% at some resolutions."""
    from matplotlib.text import Text
    from matplotlib.textpath import TextToPath

    if not texts:
        return 0.0
    font = Text(0, 0, "", **(props or {})).get_fontproperties()
    path = TextToPath()
    widths = [path.get_text_width_height_descent(t, font, ismath=False)[0] for t in texts]
    return 1.08 * max(widths) / 72  # points to inches

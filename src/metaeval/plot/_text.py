"""Names shown in figures as they are."""

from __future__ import annotations

from typing import Any


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

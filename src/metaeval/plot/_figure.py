"""Figures that a notebook draws once (matplotlib is imported on first use)."""

from __future__ import annotations

import os
from typing import Any

from ..errors import OptionError, quote_list


def _ipython_display_(self: Any) -> None:
    """IPython's hook, called for a cell's value and by the inline backend alike.

    Under pyplot's inline backend the figure is released from pyplot before IPython
    draws it, so the backend's own drawing at the end of the cell skips it: drawn
    once. A widget backend (ipympl) shows it already: nothing more. Otherwise, and
    for a figure pyplot no longer holds, IPython's usual display of a Figure.
    """
    import matplotlib
    import matplotlib.pyplot as plt

    if getattr(self, "number", None) in plt.get_fignums():
        backend = str(matplotlib.get_backend()).lower()
        if "inline" in backend:
            plt.close(self)  # drawn now, not again when the cell ends
        elif "ipympl" in backend or "widget" in backend:
            return None  # the widget shows it
    raise NotImplementedError  # IPython's usual display of a Figure


def _notebook_figure() -> type:
    """The class ``NotebookFigure`` (made on first use, so that matplotlib loads late)."""
    cls = globals().get("NotebookFigure")
    if cls is None:
        from matplotlib.figure import Figure

        cls = type(
            "NotebookFigure",
            (Figure,),
            {
                "__module__": __name__,
                "__doc__": NOTEBOOK_FIGURE_DOC,
                "_ipython_display_": _ipython_display_,
            },
        )
        globals()["NotebookFigure"] = cls
    return cls


NOTEBOOK_FIGURE_DOC = """A matplotlib Figure that a notebook draws once.

The plotting functions return their figure, which stays one of pyplot's figures
(``plt.show()`` shows it in a script). In a notebook, pyplot's backend draws every open
figure at the end of the cell, and IPython draws a cell's value too: a returned Figure
would be drawn twice. When IPython draws this one (as the cell's value, or as the
inline backend draws the open figures at the end of the cell), it is released from
pyplot first, so that it is drawn once; under a widget backend the widget shows it.
"""


def __getattr__(name: str) -> Any:
    if name == "NotebookFigure":  # also how pickle finds the class
        return _notebook_figure()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def new_figure(**kwargs: Any) -> Any:
    """A new ``NotebookFigure``, through pyplot (so that a notebook's backend is set up and
    draws it as any other figure)."""
    import matplotlib.pyplot as plt

    return plt.figure(FigureClass=_notebook_figure(), **kwargs)


def save(fig: Any, path: str | os.PathLike[str], **kwargs: Any) -> None:
    """Save a figure with embedded TrueType fonts (PDF/PS) and text as paths (SVG).

    ``fig.savefig`` would use the rcParams in force at save time; this applies
    ``pdf.fonttype=42`` (no Type 3 fonts, as many venues require) for the call only.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure (a metaeval plot's return value, or any figure).
    path : str or path-like
        The file; its suffix gives the format unless ``format=`` is given.
    **kwargs
        Passed to :meth:`matplotlib.figure.Figure.savefig` (``dpi``, ``format``, ...).

    Raises
    ------
    metaeval.OptionError
        When the file name's suffix is not a format matplotlib writes (and no
        ``format=`` is given).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from matplotlib.figure import Figure
    >>> from metaeval.plot import save
    >>> fig = Figure(figsize=(3, 2))
    >>> _ = fig.subplots().plot([0, 1], [0, 1])
    >>> tmp = tempfile.TemporaryDirectory()
    >>> save(fig, pathlib.Path(tmp.name) / "figure.pdf")
    >>> (pathlib.Path(tmp.name) / "figure.pdf").read_bytes()[:5]
    b'%PDF-'
    >>> save(fig, pathlib.Path(tmp.name) / "figure.pfd")
    Traceback (most recent call last):
    ...
    metaeval.errors.OptionError: save() writes the format its file name ends with, and '.../figure.pfd' ends with .pfd; use one of [...] (e.g. 'forest.pdf'), or pass format=.
    >>> tmp.cleanup()
    """
    import matplotlib.pyplot as plt

    if "format" not in kwargs:
        kinds = fig.canvas.get_supported_filetypes()
        suffix = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
        if suffix not in kinds:
            raise OptionError(
                f"save() writes the format its file name ends with, and {os.fspath(path)!r} "
                f"ends with {('.' + suffix) if suffix else 'no suffix'}; use one of "
                f"{quote_list(sorted(kinds))} (e.g. 'forest.pdf'), or pass format=."
            )
    kwargs.setdefault("dpi", 200)
    with plt.rc_context({"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "path"}):
        fig.savefig(path, **kwargs)

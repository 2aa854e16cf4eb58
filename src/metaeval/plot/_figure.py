"""Figures that a notebook draws once."""

from __future__ import annotations

from typing import Any


def new_figure(**kwargs: Any) -> Any:
    """A new pyplot figure (through pyplot, so that a notebook's backend and its display
    of figures are set up as for any other figure); see :func:`released`."""
    import matplotlib.pyplot as plt

    return plt.figure(**kwargs)


def released(fig: Any) -> Any:
    """``fig`` closed in pyplot, with an Agg canvas, ready to be returned.

    A returned figure that pyplot still holds is drawn twice in a notebook: once
    as pyplot's open figure at the end of the cell, once as the cell's value.
    Closed, it is drawn once, as the cell's value (seaborn's objects interface
    behaves the same), figures do not pile up in loops, and it still measures,
    saves to every format and displays with IPython's ``display(fig)``.
    """
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    plt.close(fig)
    FigureCanvasAgg(fig)
    return fig

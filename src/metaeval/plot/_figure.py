"""Figures outside pyplot's state."""

from __future__ import annotations

from typing import Any


def new_figure(**kwargs: Any) -> Any:
    """A Figure with an Agg canvas that pyplot does not know of.

    The plotting functions return their figure; made through pyplot, a notebook
    would draw it twice (once as pyplot's open figure, once as the cell's value)
    and loops would pile up open figures. This one displays in notebooks as the
    cell's value (IPython renders it from its canvas, as for seaborn's objects
    interface) and saves to every format; ``plt.show()`` does not know it.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(**kwargs)
    FigureCanvasAgg(fig)
    return fig

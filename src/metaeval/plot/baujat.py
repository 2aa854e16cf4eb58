"""The Baujat plot: each task's influence on the estimate against its contribution to Q."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..engines import any_frame
from ..errors import OptionError, SchemaError, format_groups
from ._figure import new_figure
from ._labels import literal

__all__ = ["baujat_plot"]


@any_frame
def baujat_plot(table: pd.DataFrame, *, labels: bool = True, ax: Any = None, **kwargs: Any) -> Any:
    """The Baujat plot of one group (metafor ``baujat()``; Baujat et al. 2002).

    Each task at (``x``, ``y``) from :func:`metaeval.baujat`: its contribution to
    the heterogeneity statistic on the horizontal axis, its influence on the pooled
    estimate on the vertical one. Tasks at the top right both drive heterogeneity
    and move the estimate.

    Parameters
    ----------
    table : pandas.DataFrame
        What :func:`metaeval.baujat` returned, of one group (e.g.
        ``bj.query("metric == 'accuracy'")``).
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    labels : bool, default True
        Name each point by its task (the ``over`` column(s)).
    ax : matplotlib Axes, optional
        Draw into this Axes.
    **kwargs
        Passed to :meth:`matplotlib.axes.Axes.scatter`.

    Returns
    -------
    matplotlib.figure.Figure, or the Axes when ``ax`` is given.
        The scatter carries the gid ``baujat-points``; each label ``baujat-label``.

    Raises
    ------
    metaeval.SchemaError
        A table without the columns ``x`` and ``y`` of :func:`metaeval.baujat`.
    metaeval.OptionError
        Several groups.

    Examples
    --------
    >>> import metaeval
    >>> eff = metaeval.load_example().meta.effects("logistic_regression",
    ...                                            treatment="gradient_boosting")
    >>> bj = eff.query("metric == 'accuracy'").meta.baujat()
    >>> ax = metaeval.plot.baujat_plot(bj).axes[0]
    >>> [t.get_text() for t in ax.texts]
    ['breast_cancer', 'digits', 'iris', 'wine']
    """
    over = list(table.attrs.get("over", ("task",)))
    missing = [c for c in ["x", "y", *over] if c not in table.columns]
    if missing:
        raise SchemaError(
            f"plot.baujat_plot() draws the table of metaeval.baujat() (columns x, y and {over}), "
            f"but {missing} are missing; pass what effects.meta.baujat() returned."
        )
    keys = [c for c in table.columns if c not in ("x", "y", *over)]
    groups = table[keys].drop_duplicates() if keys else pd.DataFrame(index=[0])
    if len(groups) > 1:
        raise OptionError(
            f"plot.baujat_plot() draws one group, but this table holds {len(groups)}:\n"
            f"{format_groups(groups)}\nSelect one, e.g. with table.query(...)."
        )
    if ax is None:
        fig = new_figure(figsize=(5.5, 4.5))
        target = fig.add_subplot()
    else:
        fig, target = None, ax
    x, y = table["x"].to_numpy(float), table["y"].to_numpy(float)
    style = {"s": 30, "color": "tab:blue", "edgecolor": "black", "linewidth": 0.5}
    target.scatter(x, y, gid="baujat-points", zorder=3, **{**style, **kwargs})
    if labels:
        names = table[over].astype(str).agg(" / ".join, axis=1)
        for xi, yi, name in zip(x, y, names, strict=True):
            if np.isfinite(xi) and np.isfinite(yi):
                target.annotate(
                    literal(name),
                    (xi, yi),
                    xytext=(4, 4),
                    fontsize=8,
                    textcoords="offset points",
                    gid="baujat-label",
                )
    target.grid(color="0.9", linewidth=0.6)
    target.set_axisbelow(True)
    target.set_xlabel("contribution to heterogeneity (x)")
    target.set_ylabel("influence on the estimate (y)")
    if keys:
        first = groups.iloc[0]
        target.set_title(literal(", ".join(f"{k}={first[k]}" for k in keys)), fontsize=9)
    if fig is None:
        return target
    fig.tight_layout()
    return fig

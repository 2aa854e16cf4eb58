"""Pairwise heatmaps of compare() and tukey() results: every system pair at one glance."""

from __future__ import annotations

from typing import Any, get_args

import numpy as np
import pandas as pd

from .._options import PairwiseValue, format_number, format_p, literal_signature
from ..engines import any_frame
from ..errors import OptionError, SchemaError, check_option
from ._figure import new_figure
from ._labels import literal

__all__ = ["pairwise"]

VALUES: tuple[str, ...] = get_args(PairwiseValue)


def _pairs(results: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The results as ordered pairs (row system, column system) with both directions present."""
    if {"system_a", "system_b"} <= set(results.columns):  # tukey(): a − b, each pair once
        a, b, source = "system_a", "system_b", "tukey"
    elif {"treatment", "control", "diff"} <= set(results.columns):  # compare(): treatment − control
        a, b, source = "treatment", "control", "compare"
    else:
        raise SchemaError(
            "pairwise() takes a compare() or tukey() table (columns treatment/control or "
            f"system_a/system_b); this one has {list(results.columns)[:12]}."
        )
    p = "p_adjusted" if "p_adjusted" in results.columns else "p_value"
    keep = [c for c in ("task", "metric") if c in results.columns]
    forward = results[keep].assign(
        row=results[a].astype(str),
        col=results[b].astype(str),
        p=results[p],
        diff=results["diff"],
        effect_size=results["effect_size"],
    )
    backward = forward.assign(
        row=forward["col"],
        col=forward["row"],
        diff=-forward["diff"],
        effect_size=-forward["effect_size"],
    )
    both = pd.concat([forward, backward], ignore_index=True)
    # compare(control=None) holds both directions already; keep the first of each
    both = both.drop_duplicates([*keep, "row", "col"], keep="first")
    return both, source


@any_frame
@literal_signature
def pairwise(
    results: pd.DataFrame,
    *,
    value: PairwiseValue = "p_value",
    alpha: float | None = None,
    digits: int = 2,
    col_wrap: int = 3,
    ax: Any = None,
    **kwargs: Any,
) -> Any:
    """Heatmap of every system pair of a :func:`metaeval.compare` or :func:`metaeval.tukey` table.

    Parameters
    ----------
    results : pandas.DataFrame
        A compare() table (any ``control``; cell (i, j) is system i − system j)
        or a tukey() table (system_a − system_b, mirrored). Several tasks or
        metrics give one heatmap each.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    value : {"p_value", "effect_size", "diff"}, default "p_value"
        The cell colour and number: the p-value (``p_adjusted`` where present;
        colour on a log scale from 10⁻⁴ to 1), the effect size (d_z for
        compare, diff/√MS_residual for tukey; diverging colours centred at 0)
        or the raw difference.
    alpha : float, optional
        Cells with p < α are marked with a star; defaults to the table's
        ``attrs["alpha"]``, else 0.05.
    digits : int, default 2
        Decimals of the numbers in the cells (p-values below 10⁻ᵈ print as "<0.01").
    col_wrap : int, default 3
        Heatmaps per row of the figure.
    ax : matplotlib Axes, optional
        Draw into this Axes (the table must hold one task and metric).
    **kwargs
        Passed to :func:`seaborn.heatmap` (e.g. ``cmap``, ``annot_kws``).

    Returns
    -------
    matplotlib.figure.Figure, or the Axes when ``ax`` is given.
        A notebook draws it once, as :func:`forest`'s.

    Examples
    --------
    >>> import metaeval
    >>> iris = metaeval.load_example().query("task == 'iris'")
    >>> fig = iris.meta.compare().meta.pairwise()
    >>> [ax.get_title() for ax in fig.axes if ax.get_title()]  # one heatmap per metric
    ['accuracy · iris', 'p_true_class · iris']
    >>> fig.get_size_inches().round(1)
    array([9.9, 4.4])

    Tukey's HSD differences, into an Axes of your own:

    >>> from matplotlib.figure import Figure
    >>> ax = Figure().subplots()
    >>> hsd = iris.query("metric == 'accuracy'").meta.tukey()
    >>> hsd.meta.pairwise(value="diff", ax=ax) is ax
    True
    >>> [label.get_text() for label in ax.get_xticklabels()][:2]
    ['gradient_boosting', 'knn']
    """
    import seaborn as sns
    from matplotlib.colors import LogNorm

    check_option("value", value, VALUES)
    pairs, source = _pairs(results)
    if alpha is None:
        alpha = float(results.attrs.get("alpha", 0.05))
    keep = [c for c in ("metric", "task") if c in pairs.columns]
    groups = list(pairs.groupby(keep, sort=False, observed=True)) if keep else [((), pairs)]
    if ax is not None and len(groups) > 1:
        raise OptionError(
            f"With ax=, pairwise() draws one task and metric; this table has {len(groups)}."
        )
    systems = list(dict.fromkeys(pd.concat([pairs["row"], pairs["col"]])))
    n = len(systems)
    column = {"p_value": "p", "effect_size": "effect_size", "diff": "diff"}[value]
    style: dict[str, Any]
    if value == "p_value":
        style = {"cmap": "mako", "norm": LogNorm(vmin=1e-4, vmax=1.0)}
    else:
        vals = pairs[column].to_numpy(float)
        span = np.nanmax(np.abs(vals)) if np.isfinite(vals).any() else 1.0
        style = {"cmap": "vlag", "center": 0.0, "vmin": -span, "vmax": span}
    style.update(
        linewidths=0.5,
        linecolor="white",
        square=True,
        cbar_kws={"shrink": 0.7},
        annot_kws={"fontsize": 7},
    )
    style.update(kwargs)
    label = {"p_value": "p-value", "effect_size": "effect size", "diff": "difference"}[value]
    ncols = min(col_wrap, len(groups))
    nrows = -(-len(groups) // ncols)
    side = 0.55 * n + 2.2
    # made before the style context, which restores every rcParam (interactive mode included)
    fig = new_figure(figsize=(ncols * side, nrows * (side - 0.6))) if ax is None else None
    with sns.axes_style("white"):
        if fig is not None:
            axes = fig.subplots(nrows, ncols, squeeze=False)
            flat = axes.ravel()
            for extra in flat[len(groups) :]:
                extra.set_visible(False)
        else:
            flat = np.array([ax])
        for target, (key, part) in zip(flat, groups, strict=False):
            grid = part.pivot(index="row", columns="col", values=column).reindex(
                index=systems, columns=systems
            )
            pgrid = part.pivot(index="row", columns="col", values="p").reindex(
                index=systems, columns=systems
            )
            text = _annotations(grid.to_numpy(float), pgrid.to_numpy(float), value, alpha, digits)
            grid = grid.rename(index=literal, columns=literal)  # names shown as they are
            # p-values below the colour scale (even 0 from an underflowing tail) get its end colour
            colour = grid.clip(lower=1e-4) if value == "p_value" else grid
            sns.heatmap(
                colour,
                ax=target,
                annot=text,
                fmt="",
                mask=grid.isna(),
                cbar_kws={**style.pop("cbar_kws", {}), "label": label},
                **style,
            )
            style["cbar_kws"] = {"shrink": 0.7}
            target.set_xlabel("")
            target.set_ylabel("")
            key = key if isinstance(key, tuple) else (key,)
            target.set_title(literal(" · ".join(str(k) for k in key)), fontsize=10)
        if fig is None:
            return ax
        what = "row − column" if value != "p_value" else "row vs column"
        fig.suptitle(
            f"{'Tukey HSD' if source == 'tukey' else 'Paired comparisons'}: {label}, {what}; "
            f"★ p < {format_number(alpha)}",
            fontsize=10,
        )
        fig.tight_layout()
        return fig


def _annotations(
    grid: np.ndarray, p: np.ndarray, value: str, alpha: float, digits: int
) -> np.ndarray:
    out = np.full(grid.shape, "", dtype=object)
    for i, j in zip(*np.nonzero(np.isfinite(grid)), strict=True):
        x = grid[i, j]
        if value == "p_value":
            text = format_p(x, digits, to="unicode")
        else:
            text = format_number(x, digits, to="unicode")
        if np.isfinite(p[i, j]) and p[i, j] < alpha:
            text += "★"
        out[i, j] = text
    return out

"""Bubble plot of a meta-regression: each task's effect against a moderator, with the fit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._results import Result
from ..errors import OptionError, SchemaError, excerpt, format_groups, quote_list
from ._figure import new_figure
from ._labels import literal

__all__ = ["bubble"]

_POINTS = 200
"""Points along the fitted line."""


def _design_column(data: pd.DataFrame, term: str) -> np.ndarray:
    """The model-matrix column of ``term`` (``"intercept"``, a numeric moderator, or
    ``mod[T.level]``) for the rows of ``data``."""
    if term == "intercept":
        return np.ones(len(data))
    if term in data.columns:
        return data[term].to_numpy(float)
    name, level = term.split("[T.", 1)
    return (data[name].astype(str) == level[:-1]).to_numpy(float)


def _one_group(result: Any) -> tuple[list[str], pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The group keys, the coefficient rows, the effects and the covariance of one group
    (``result`` a MetaRegResult, told by its kind: the plot stage imports no other stage)."""
    if not (isinstance(result, Result) and result.kind == "metareg"):
        what = "a DataFrame" if isinstance(result, pd.DataFrame) else type(result).__name__
        raise SchemaError(
            "bubble() draws the result of metaeval.metareg() (a MetaRegResult: coefficients, "
            f"fit, data and covariance), but {what} was passed; pass what "
            "effects.meta.metareg(mods=...) returned, or call its .plot()."
        )
    res: Any = result  # a MetaRegResult (its class lives in the pooling stage)
    coefs, fit = res.table, res.fit
    keys = [c for c in fit.columns if c in res.vcov.columns and c in coefs.columns]
    groups = coefs[keys].drop_duplicates() if keys else pd.DataFrame(index=[0])
    if len(groups) != 1:
        first = groups.iloc[0]
        raise OptionError(
            f"bubble() draws one meta-regression, but this result holds {len(groups)}:\n"
            f"{format_groups(groups)}\nSelect one, e.g. "
            f"result.select({', '.join(f'{k}={excerpt(first[k])}' for k in keys)}).plot()."
        )

    def select(table: pd.DataFrame) -> pd.DataFrame:
        if not keys:
            return table
        match = (table[keys] == groups.iloc[0]).all(axis=1) | (
            table[keys].isna() & groups.iloc[0].isna()
        ).all(axis=1)
        return table.loc[match]

    return keys, coefs, select(res.data), select(res.vcov)


def _options(result: Any) -> tuple[list[str], float]:
    """The moderators and alpha of a MetaRegResult."""
    return list(result.mods), float(result.alpha)


def bubble(
    result: Result,
    mod: str | None = None,
    *,
    band: bool = True,
    ax: Any = None,
    **kwargs: Any,
) -> Any:
    """Each task's effect against one moderator, sized by weight, with the fitted line.

    metafor's ``regplot()``: the points are the effects of one meta-regression
    (:func:`metaeval.metareg`) at their moderator value, each point's area
    proportional to its weight in the fit; the line is the fitted effect with
    its confidence band (the coefficients' intervals' distribution: t with
    k − p df under Knapp–Hartung, else normal), the other moderators held at
    their means over the tasks (a factor at its levels' shares), as
    ``regplot()`` does.

    Parameters
    ----------
    result : MetaRegResult
        What :func:`metaeval.metareg` returned, of one group (when it has
        several, choose one with ``result.select(metric=...)``).
        ``result.plot()`` is ``bubble(result)``.
    mod : str, optional
        The numeric moderator on the x axis; needed when the model has several.
    band : bool, default True
        Draw the confidence band of the fitted line.
    ax : matplotlib Axes, optional
        Draw into this Axes.
    **kwargs
        Passed to :meth:`matplotlib.axes.Axes.scatter` (``color``, ``alpha``, ...).

    Returns
    -------
    matplotlib.figure.Figure, or the Axes when ``ax`` is given.
        The axis labels and title show the names of the data as they are: a
        ``$`` is escaped, never read as mathtext.
        A notebook draws it once. Artists carry gids: ``bubble-points`` (the
        scatter), ``bubble-fit`` (the line) and ``bubble-ci`` (the band).

    Raises
    ------
    metaeval.SchemaError
        Not a :class:`metaeval.MetaRegResult` (e.g. its ``.table`` alone).
    metaeval.OptionError
        Several groups; ``mod`` not a numeric moderator of the model, or missing
        when there are several.

    Examples
    --------
    >>> import pandas as pd, metaeval
    >>> eff = pd.DataFrame({
    ...     "task": list("abcdefgh"),
    ...     "effect": [0.05, 0.12, 0.30, 0.21, 0.42, 0.38, 0.55, 0.49],
    ...     "variance": [0.004, 0.006, 0.005, 0.003, 0.008, 0.004, 0.006, 0.005],
    ...     "log_n": [3.0, 3.4, 4.1, 4.0, 5.2, 5.0, 6.1, 5.9]})
    >>> res = eff.meta.metareg("log_n")
    >>> fig = metaeval.plot.bubble(res)  # or res.plot()
    >>> ax = fig.axes[0]
    >>> [line.get_gid() for line in ax.lines if line.get_gid()]
    ['bubble-fit']
    >>> ax.get_xlabel()
    'log_n'
    >>> len(ax.collections[0].get_offsets()) == len(res.data)  # one bubble per effect
    True
    """
    keys, coefs, data, vcov = _one_group(result)
    mods, alpha = _options(result)
    numeric = [
        m
        for m in mods
        if pd.api.types.is_numeric_dtype(data[m]) and not pd.api.types.is_bool_dtype(data[m])
    ]
    if mod is None:
        if len(numeric) != 1:
            raise OptionError(
                f"Name the moderator to draw: mod= one of {quote_list(numeric)} "
                "(the numeric moderators of the model)."
                if numeric
                else "bubble() needs a numeric moderator; this model has factors only "
                f"({quote_list(mods)}): compare its levels with pool(by=...) and forest()."
            )
        mod = numeric[0]
    if mod not in numeric:
        raise OptionError(
            f"`mod` must be a numeric moderator of the model, one of {quote_list(numeric)}, "
            f"but {mod!r} was passed."
        )
    terms = coefs["term"].tolist()
    beta = coefs["estimate"].to_numpy(float)
    free = np.isfinite(beta)
    cov = vcov.pivot(index="term", columns="term_b", values="cov").loc[terms, terms].to_numpy()
    x = data[mod].to_numpy(float)
    grid = np.linspace(np.nanmin(x), np.nanmax(x), _POINTS)
    at = np.array([_design_column(data, t).mean() for t in terms])
    rows = np.tile(at, (_POINTS, 1))
    rows[:, terms.index(mod)] = grid
    rows, b, c = rows[:, free], beta[free], cov[np.ix_(free, free)]
    fitted = rows @ b
    se = np.sqrt(np.einsum("np,pq,nq->n", rows, c, rows))
    crit = _critical(coefs, alpha)

    if ax is None:
        fig = new_figure(figsize=(5.5, 4.0))
        target = fig.add_subplot()
    else:
        fig, target = None, ax
    weight = data["weight"].to_numpy(float)
    sizes = 60 * weight / np.nanmean(weight)
    style = {"color": "tab:blue", "alpha": 0.6, "edgecolor": "black", "linewidth": 0.5}
    target.scatter(x, data["effect"], s=sizes, gid="bubble-points", zorder=3, **{**style, **kwargs})
    target.plot(grid, fitted, color="black", linewidth=1.2, gid="bubble-fit", zorder=2)
    if band and np.isfinite(crit):
        target.fill_between(
            grid,
            fitted - crit * se,
            fitted + crit * se,
            color="0.8",
            alpha=0.6,
            linewidth=0,
            gid="bubble-ci",
            zorder=1,
        )
    target.axhline(0, color="0.5", linewidth=0.8, linestyle=":", zorder=0)
    # names come from the data: shown literally, never as mathtext (a `$` is escaped)
    target.set_xlabel(literal(mod))
    effect_type = data["effect_type"].iloc[0] if "effect_type" in data.columns else None
    target.set_ylabel(literal(f"effect ({effect_type})" if effect_type else "effect"))
    if keys:
        target.set_title(literal(_title(coefs.iloc[0], keys)), fontsize=10)
    if fig is None:
        return target
    fig.tight_layout()
    return fig


def _title(row: pd.Series, keys: list[str]) -> str:
    """ "metric: treatment vs control" and any further keys, as the forest plot's titles."""
    parts = [str(row["metric"])] if "metric" in keys else []
    if "treatment" in keys and "control" in keys:
        parts.append(f"{row['treatment']} vs {row['control']}")
    rest = [str(row[k]) for k in keys if k not in ("metric", "treatment", "control", "effect_type")]
    return ": ".join([", ".join(parts[:1]), ", ".join(parts[1:] + rest)]).strip(": ")


def _critical(coefs: pd.DataFrame, alpha: float) -> float:
    from scipy import stats as sps

    df = coefs["df"].to_numpy(float)
    if np.isfinite(df).any():
        return float(sps.t.isf(alpha / 2, df[np.isfinite(df)][0]))
    return float(sps.norm.isf(alpha / 2))

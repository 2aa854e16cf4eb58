"""Pool, then draw: the forest plot of an effects table (:func:`forest_plot`, the
``.meta.forest()`` of an effects table and the command's ``--plot``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import pandas as pd

from .._options import DEFAULT_CI, DEFAULT_POOL_METHOD, CIMethod, PoolMethod, literal_signature
from ..engines import any_frame
from ..pooling import pool, weights

__all__ = ["forest_plot"]


@any_frame(tables=("pooled",))
@literal_signature
def forest_plot(
    effects: pd.DataFrame,
    *,
    method: PoolMethod = DEFAULT_POOL_METHOD,
    test: CIMethod | None = DEFAULT_CI,
    alpha: float = 0.05,
    pooled: pd.DataFrame | None = None,
    by: str | Mapping[Any, Any] | None = None,
    **options: Any,
) -> Any:
    """Pool an effects table and draw its forest plot (:func:`metaeval.plot.forest`).

    Parameters
    ----------
    effects : pandas.DataFrame
        An effects table of one metric and one control (filter first); several
        treatments give one panel each.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    method, test, alpha
        The pooling model (:func:`metaeval.pool`); ``alpha`` is also the level of the
        intervals drawn.
    pooled : pandas.DataFrame, optional
        An already pooled result of ``effects``; its summary and τ² are drawn
        instead of pooling again, and its ``method`` and ``test`` replace
        ``method`` and ``test`` for the weights (and the subgroups' fits).
    by : str or mapping, optional
        Subgroups (as :func:`metaeval.pool`): one block per subgroup with its
        own diamond, then the overall summary.
    **options
        The drawing options of :func:`metaeval.plot.forest` (``title``, ``sort``,
        ``columns``, ``labels``, ``xlim``, ``xlabel``, ``digits``, ``width``,
        ``col_wrap``, ``ax``, and matplotlib's scatter options for the task squares).

    Returns
    -------
    matplotlib.figure.Figure, or the Axes when ``ax`` is given.
        As :func:`metaeval.plot.forest`.

    Examples
    --------
    >>> import metaeval
    >>> eff = metaeval.load_example().meta.effects("logistic_regression", treatment="knn")
    >>> fig = metaeval.forest_plot(eff.query("metric == 'accuracy'"), method="DL")
    >>> [ax.get_title() for ax in fig.axes][:1]
    ['knn vs logistic_regression']
    """
    from ..plot import forest

    if pooled is not None and {"method", "test"} <= set(pooled.columns) and len(pooled):
        # weights and subgroup fits follow the model of the given result
        method = cast(PoolMethod, str(pooled["method"].iloc[0]))
        test = cast(CIMethod, str(pooled["test"].iloc[0]))
    model: dict[str, Any] = {"method": method, "test": test, "alpha": alpha}
    overall = pool(effects, **model) if pooled is None else pooled
    # the figure reads its level from the pooled table: the one asked for here
    overall = overall.copy(deep=False)
    overall.attrs = {**overall.attrs, "alpha": alpha}
    if by is None:
        return forest(effects, overall, **options)
    return forest(
        weights(effects, **model, by=by),
        overall,
        subgroups=pool(effects, **model, by=by),
        **options,
    )

"""Effects, then pooled: the Ranger-shaped table (:func:`analyze`) and several metrics in one
multilevel model (:func:`pool_metrics`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from .._options import (
    DEFAULT_CI,
    DEFAULT_EFFECT,
    DEFAULT_POOL_METHOD,
    CIMethod,
    EffectType,
    PoolMethod,
    ReplicateDesign,
    RobustMethod,
    literal_signature,
)
from ..engines import any_frame
from ..errors import SchemaError, quote_list
from ..paired import effect_covariance, effects
from ..pooling import pool
from ..pooling.analysis import analysis_table

__all__ = ["analyze", "pool_metrics"]


@any_frame(lazy=True)
@literal_signature
def analyze(
    scores: pd.DataFrame,
    control: str | Sequence[str] | None,
    *,
    treatment: str | Sequence[str] | None = None,
    effect: EffectType = DEFAULT_EFFECT,
    method: PoolMethod = DEFAULT_POOL_METHOD,
    test: CIMethod | None = DEFAULT_CI,
    alpha: float = 0.05,
) -> pd.DataFrame:
    r"""Effects per task and their pooled summary in one table, as Ranger reports them.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation; a lazy one is computed in its engine (see the Notes of
        :func:`metaeval.effects`).
    control, treatment, effect, alpha
        As in :func:`metaeval.effects`.
    method, test
        As in :func:`metaeval.pool` (``test="knha"`` gives Knapp–Hartung
        intervals on the summary row; task rows keep their normal intervals).

    Returns
    -------
    pandas.DataFrame
        For every ``(metric, treatment, control)``: one row per task, then one
        summary row. Columns ``effect_type, metric, treatment, control``; ``row`` ("task" or
        "summary"); ``task`` (the task name, or ``"summary"``); ``n`` (paired
        queries; on the summary row the total over the tasks it pools, not those left
        out with an undefined effect); ``mean_control,
        mean_treatment`` (the metric's means over the paired queries, as in
        Ranger's "control → treatment" column; NaN on the summary row); ``effect, se,
        ci_low, ci_high, p_value`` (analysis scale, as in
        :func:`metaeval.effects`); ``weight``: the task's share of the
        summary, 100·w*_i/Σw*_j in percent with the model's weights w*_i
        (100 on the summary row, NaN for a task left out because its effect is
        NaN). The ``corr`` and ``rom`` reporting-scale columns are kept.
        ``attrs`` hold ``method``, ``test`` and ``alpha``; :func:`metaeval.report.to_latex`
        and ``.meta.to_latex()`` take the table as it is.

    Examples
    --------
    >>> import metaeval
    >>> scores = metaeval.load_example()
    >>> table = scores.meta.analyze("logistic_regression", treatment="gradient_boosting")
    >>> table.query("metric == 'accuracy'")[["task", "effect", "ci_low", "ci_high", "weight"]].round(3)
                task  effect  ci_low  ci_high   weight
    0  breast_cancer  -0.085  -0.177    0.007   27.955
    1         digits  -0.016  -0.064    0.033   44.562
    2           iris  -0.118  -0.257    0.021   16.986
    3           wine  -0.187  -0.377    0.003   10.497
    4        summary  -0.070  -0.174    0.033  100.000

    The Ranger paper's procedure (``smd``, DerSimonian–Laird, normal
    intervals) gives a narrower summary interval on these four tasks:

    >>> ranger = scores.meta.analyze("logistic_regression", treatment="gradient_boosting",
    ...                              **metaeval.RANGER)
    >>> ranger.query("metric == 'accuracy' and row == 'summary'")[["effect", "ci_low", "ci_high"]].round(3)
       effect  ci_low  ci_high
    4  -0.068  -0.133   -0.002
    >>> print(table.query("metric == 'accuracy'").meta.to_latex(digits=2))  # doctest: +ELLIPSIS
    \begin{table}
    ...
    gradient\_boosting & $-$0.08 [$-$0.18, 0.01] & ... & $-$0.07 [$-$0.17, 0.03] \\
    ...
    """
    eff = effects(scores, control=control, treatment=treatment, effect=effect, alpha=alpha)
    return analysis_table(eff, method=method, test=test, alpha=alpha, effect=effect)


def analyze_on_dask(ddf: Any, options: dict[str, Any]) -> pd.DataFrame:
    """``ddf.meta.analyze()``: :func:`analyze` of a dask scores table, its effects reduced
    per partition (:func:`metaeval.paired.partitions.effects_on_dask`); ``options``: the
    call's arguments bound to :func:`analyze`'s signature."""
    from ..paired.effect_size import checked_options
    from ..paired.partitions import effects_on_dask
    from ..pooling import pool_options

    effect, method, test, alpha = (options[k] for k in ("effect", "method", "test", "alpha"))
    checked_options(effect, alpha)
    pool_options(method, test, alpha)  # before the work, not after
    wanted = {"control": options["control"], "treatment": options["treatment"]}
    eff = effects_on_dask(
        ddf,
        {
            **wanted,
            "effect": effect,
            "alpha": alpha,
            "correct": True,
            "cv": None,
            "replicates": None,
            "cluster": None,
        },
    )
    return analysis_table(eff, method=method, test=test, alpha=alpha, effect=effect)


@any_frame
@literal_signature
def pool_metrics(
    scores: pd.DataFrame,
    control: str | Sequence[str] | None,
    *,
    treatment: str | Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    effect: EffectType = DEFAULT_EFFECT,
    method: PoolMethod = DEFAULT_POOL_METHOD,
    test: CIMethod | None = DEFAULT_CI,
    alpha: float = 0.05,
    robust: bool | RobustMethod = False,
    replicates: ReplicateDesign | None = None,
) -> pd.DataFrame:
    """Several metrics of the same queries pooled in one model, from the scores.

    The whole chain of the multilevel analysis: :func:`metaeval.effects`, their
    covariance across metrics (:func:`metaeval.effect_covariance`) and
    :func:`metaeval.pool` with ``over=("task", "metric"), model="multilevel"``.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    control, treatment, effect
        As in :func:`metaeval.effects`.
    metrics : list of str, optional
        The metrics to pool together; by default every metric of the table.
    method : {"REML", "ML", "EE"}, default "REML"
        As in :func:`metaeval.pool` with ``model="multilevel"``.
    test : {"knha", "z", "t", "hksj", "adhoc"} or None, default None
        As in :func:`metaeval.pool`.
    alpha : float, default 0.05
        Intervals have level 1 − alpha.
    robust : {False, True, "CR1", "CR2"}, default False
        Add cluster-robust results by task (see :func:`metaeval.pool`; True means
        ``"CR1"``; ``"CR2"`` with few tasks).
    replicates : {"crossed", "nested", "epochs"}, optional
        As in :func:`metaeval.effects`. The multilevel model does not take a
        replicate shift shared by every task into account, so a crossed design
        (the default when every task has the same replicate ids) is an
        :class:`~metaeval.OptionError`: pool each metric with
        :func:`metaeval.pool`, or pass ``"nested"`` if each task's replicates
        were runs of their own.

    Returns
    -------
    pandas.DataFrame
        :func:`metaeval.pool`'s multilevel table: one row per (treatment, control).

    Raises
    ------
    metaeval.SchemaError
        ``metrics`` names a metric the table does not have.

    Examples
    --------
    >>> import metaeval
    >>> scores = metaeval.load_example()
    >>> res = scores.meta.pool_metrics("logistic_regression", treatment="knn", effect="md",
    ...                                test="z", robust=True)
    >>> res[["k", "k_task", "effect", "ci_low", "ci_high", "sigma2_task", "sigma2_metric"]].round(6)
       k  k_task    effect    ci_low   ci_high  sigma2_task  sigma2_metric
    0  8       4  0.001601 -0.019269  0.022471     0.000192        0.00041
    >>> round(float(res["robust_se"].iloc[0]), 6)
    0.010635

    metafor gives the same numbers: ``rma.mv(yi, V, random = ~ 1 | task/metric)`` and
    ``robust(fit, cluster = task)`` with V from ``effect_covariance()``.
    """
    if metrics is not None:
        wanted = [metrics] if isinstance(metrics, str) else list(metrics)
        present = set(scores["metric"].astype(str))
        unknown = [m for m in wanted if str(m) not in present]
        if unknown:
            raise SchemaError(
                f"`metrics` names {unknown}, which the scores table does not have; its "
                f"metrics are {quote_list(sorted(present))}."
            )
        scores = scores[scores["metric"].astype(str).isin([str(m) for m in wanted])]
    eff = effects(
        scores,
        control=control,
        treatment=treatment,
        effect=effect,
        alpha=alpha,
        replicates=replicates,
    )
    # the design effects() used (given, recorded or guessed once): the same diagonal
    cov = effect_covariance(
        scores,
        control=control,
        treatment=treatment,
        effect=effect,
        replicates=eff.attrs.get("replicates", replicates),
    )
    return pool(
        eff,
        over=("task", "metric"),
        model="multilevel",
        cov=cov,
        method=method,
        test=test,
        alpha=alpha,
        robust=robust,
    )

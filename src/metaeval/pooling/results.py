"""The results of the pooling stage that have several parts: :class:`MetaRegResult`,
:class:`GoshResult`, :class:`BayesPoolResult`.

A :class:`metaeval._results.Result` keeps a tidy ``table`` (with only scalar options in
its ``attrs``) and names its other parts, so that tables concatenate, results pickle
and a figure is drawn from the object alone.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .._results import Result
from ..errors import OptionError, quote_list

__all__ = ["MetaRegResult", "GoshResult", "BayesPoolResult"]


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class MetaRegResult(Result):
    """A meta-regression (:func:`metaeval.metareg`): coefficients, fit, data and covariance.

    Attributes
    ----------
    table : pandas.DataFrame
        The coefficients: one row per (group, term), with the group keys, ``term,
        estimate, se, statistic, df, p_value, ci_low, ci_high`` (and the ``robust_*``
        columns with ``robust``); ``attrs`` holds the options ``method, test, alpha, mods,
        robust, cluster``.
    fit : pandas.DataFrame
        One row per group: the keys and ``method, test, k, n_coef, tau2, tau, i2, h2,
        r2, qm, qm_df, qm_df2, qm_p_value, qe, qe_df, qe_p_value``.
    data : pandas.DataFrame
        The effects used: the keys, the column the effects differ in (``task``), the
        moderators, ``effect, variance``, each effect's ``weight`` in the fit (percent)
        and its ``fitted`` value.
    vcov : pandas.DataFrame
        The coefficients' covariance, long: the keys, ``term, term_b, cov`` (and
        ``robust_cov``, the cluster-robust one, with ``robust``).
    mods : tuple of str
        The moderator columns, in the order of the model.
    alpha : float
        The intervals' level is 1 − alpha; the bubble plot's band uses it.

    Notes
    -----
    :meth:`plot` draws the bubble plot (:func:`metaeval.plot.bubble`) of one group;
    :meth:`~metaeval.MetaRegResult.select` keeps the groups of some keys in every part.
    ``pandas.concat([a.table, b.table])`` concatenates the coefficients of two results.
    """

    fit: pd.DataFrame
    data: pd.DataFrame
    vcov: pd.DataFrame
    mods: tuple[str, ...]
    alpha: float
    kind: ClassVar[str] = "metareg"

    @property
    def group_keys(self) -> list[str]:
        """The columns that tell the groups (separate models) apart (those of ``fit``
        that ``vcov`` shares)."""
        return [c for c in self.fit.columns if c in self.vcov.columns]

    def select(self, **keys: Any) -> MetaRegResult:
        """The groups whose keys have the values given, in every part.

        Parameters
        ----------
        **keys
            Group keys and their values, e.g. ``metric="AP"``,
            ``treatment="dense"``: the groups where each key equals its value.

        Returns
        -------
        MetaRegResult
            The same result restricted to those groups (its table, fit, data and
            covariance alike).

        Raises
        ------
        metaeval.OptionError
            A name that is not a group key; a value that no group has.

        Examples
        --------
        >>> import pandas as pd, metaeval
        >>> eff = pd.DataFrame({
        ...     "metric": ["AP"] * 4 + ["nDCG"] * 4, "task": list("abcd") * 2,
        ...     "effect": [0.1, 0.2, 0.35, 0.4, 0.0, 0.1, 0.1, 0.3],
        ...     "variance": [0.01] * 8, "log_n": [3.0, 4.0, 5.0, 6.0] * 2})
        >>> res = metaeval.metareg(eff, "log_n", method="EE")
        >>> len(res.table), len(res.select(metric="AP").table)
        (4, 2)
        >>> res.select(metric="AP").fit["metric"].tolist()
        ['AP']
        """
        _check_select(self.fit, self.group_keys, keys, "meta-regression")

        def part(frame: pd.DataFrame) -> pd.DataFrame:
            return frame.loc[_select_rows(frame, keys)].reset_index(drop=True)

        return dataclasses.replace(
            self,
            table=part(self.table),
            fit=part(self.fit),
            data=part(self.data),
            vcov=part(self.vcov),
        )

    def plot(self, mod: str | None = None, **kwargs: Any) -> Any:
        """The bubble plot of one group (:func:`metaeval.plot.bubble`).

        Parameters
        ----------
        mod : str, optional
            The numeric moderator on the x axis; needed when the model has several.
        **kwargs
            Passed to :func:`metaeval.plot.bubble` (``test``, ``ax``, scatter options).

        Returns
        -------
        matplotlib.figure.Figure, or the Axes when ``ax`` is given.
        """
        from ..plot import bubble

        return bubble(self, mod, **kwargs)


def _check_select(fit: pd.DataFrame, names: list[str], keys: dict[str, Any], what: str) -> None:
    """``select(**keys)``'s checks: every name a group key, every value one a group has."""
    unknown = [k for k in keys if k not in names]
    if unknown:
        raise OptionError(
            f"select() takes the group keys {quote_list(names)} of this {what}, "
            f"but {quote_list(unknown)} was passed."
        )
    missing = {k: v for k, v in keys.items() if not (fit[k] == v).any()}
    if missing:
        name, value = next(iter(missing.items()))
        raise OptionError(
            f"No group has {name}={value!r}; its values are "
            f"{quote_list(list(pd.unique(fit[name])))}."
        )


def _select_rows(frame: pd.DataFrame, keys: dict[str, Any]) -> np.ndarray:
    match = np.ones(len(frame), dtype=bool)
    for name, value in keys.items():  # the few keys given, not the groups
        match &= (frame[name] == value).to_numpy()
    return match


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class GoshResult(Result):
    """The fits of every subset of tasks (:func:`metaeval.gosh`).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per group and subset: the group keys and ``k, effect, tau2, i2, h2,
        q``; ``attrs`` holds the options ``method, test, over``.
    included : pandas.DataFrame
        Booleans with the rows of ``table``, one column per task: whether the task is
        in the subset. A boolean frame rather than a bitmask column: it reads as it
        is (``res.included["digits"]``), selects the subsets with or without a task
        directly, and holds any number of tasks (a 64-bit mask holds 64).
    fit : pandas.DataFrame
        One row per group: the keys, ``k`` (its tasks), ``n_subsets`` (rows of
        ``table``) and ``exact`` (True when they are all its non-empty subsets, False
        when they are a random sample).

    Notes
    -----
    :meth:`plot` draws the GOSH plot (:func:`metaeval.plot.gosh_plot`) of one group;
    :meth:`select` keeps the groups of some keys in every part.
    """

    included: pd.DataFrame
    fit: pd.DataFrame
    kind: ClassVar[str] = "gosh"

    @property
    def group_keys(self) -> list[str]:
        """The columns that tell the groups apart."""
        return [c for c in self.fit.columns if c not in ("k", "n_subsets", "exact")]

    def select(self, **keys: Any) -> GoshResult:
        """The groups whose keys have the values given, in every part.

        Parameters
        ----------
        **keys
            Group keys and their values, e.g. ``metric="accuracy"``.

        Returns
        -------
        GoshResult
            The same result restricted to those groups (table, membership and fit).

        Raises
        ------
        metaeval.OptionError
            A name that is not a group key; a value that no group has.

        Examples
        --------
        >>> import metaeval
        >>> eff = metaeval.load_example().meta.effects("logistic_regression",
        ...                                            treatment="gradient_boosting")
        >>> res = eff.meta.gosh(method="DL")
        >>> len(res.fit), len(res.select(metric="accuracy").fit)
        (2, 1)
        """
        _check_select(self.fit, self.group_keys, keys, "GOSH result")
        rows = _select_rows(self.table, keys)
        return dataclasses.replace(
            self,
            table=self.table.loc[rows].reset_index(drop=True),
            included=self.included.loc[rows].reset_index(drop=True),
            fit=self.fit.loc[_select_rows(self.fit, keys)].reset_index(drop=True),
        )

    def plot(self, task: Any = None, **kwargs: Any) -> Any:
        """The GOSH plot of one group (:func:`metaeval.plot.gosh_plot`).

        Parameters
        ----------
        task : optional
            Colour the subsets by whether they include this task.
        **kwargs
            Passed to :func:`metaeval.plot.gosh_plot`.

        Returns
        -------
        matplotlib.figure.Figure
        """
        from ..plot import gosh_plot

        return gosh_plot(self, task=task, **kwargs)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class BayesPoolResult(Result):
    """A Bayesian random-effects pooling (:func:`metaeval.bayes_pool`): groups and tasks.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per group: the group keys, ``k, effect, ci_low, ci_high, prob_positive,
        mu_mean, mu_sd, tau_median, tau_low, tau_high, pi_low, pi_high, prob_gain,
        tau_prior, tau_scale`` (see :func:`metaeval.bayes_pool`); ``attrs`` holds the
        options ``alpha, tau_prior, tau_scale, tau_df, mu_prior``.
    tasks : pandas.DataFrame
        One row per group and task: the keys, the ``over`` column(s), ``effect,
        variance`` and the posterior of the task's true effect, ``shrunk_mean,
        shrunk_sd, shrunk_low, shrunk_high``.
    alpha : float
        The intervals have probability 1 − alpha.

    Notes
    -----
    :meth:`plot` draws the forest plot of the posterior: each task's effect with its
    normal interval, the posterior median and credible interval of μ (the diamond) and
    the predictive interval of a new task's effect.
    """

    tasks: pd.DataFrame
    alpha: float
    kind: ClassVar[str] = "bayes_pooled"

    def plot(self, **kwargs: Any) -> Any:
        """The forest plot of the posterior (:func:`metaeval.plot.forest`).

        The summary row shows the posterior median of μ with its credible interval (the
        diamond) and the predictive interval of θ_new (the bar); tasks are weighted by
        1/(v_i + τ²) with τ the posterior median.

        Parameters
        ----------
        **kwargs
            Passed to :func:`metaeval.plot.forest` (``ax``, ``sort``, ...).

        Returns
        -------
        matplotlib.figure.Figure, or the Axes when ``ax`` is given.
        """
        from ..plot import forest

        pooled = self.table.assign(tau2=self.table["tau_median"] ** 2)
        effects = self.tasks.drop(
            columns=[c for c in self.tasks.columns if c.startswith("shrunk_")]
        )
        return forest(effects, pooled, **kwargs)

"""How many queries (or clusters of queries) a comparison on one task needs, from a pilot.

Sakai's three topic-set-size designs (Sakai 2016; 2018, ch. 6), vectorized over every
(task, metric, treatment, control) group of a pilot scores table: the paired t-test
(exact power from the noncentral t, as :class:`statsmodels.stats.power.TTestPower`), the
one-way ANOVA over several systems (the noncentral F) and the width of a confidence
interval; with clusters of queries or epochs per item as Miller (2024) describes, and
with seeds (runs whose shift is common to all their queries), whose variance more
queries do not reduce.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._docs import fill_doc
from .._options import ALTERNATIVES, PLAN_TESTS, Alternative, PlanTest, literal_signature
from ..engines import any_frame
from ..errors import (
    DegenerateWarning,
    MetaEvalWarning,
    OptionError,
    PairingError,
    check_option,
    quote_list,
    warn,
    warn_groups,
)
from ..paired import anova, effects, means
from ..paired.alternatives import critical_value
from ..paired.replicates import has_replicates, replicate_variance
from ..schema import recorded_design
from .results import PowerResult

__all__ = ["plan_queries"]

KEYS = ["metric", "treatment", "control", "task"]
MAX_SIZE = 10**8  # a plan that needs more is no plan: NaN
CURVE_POINTS = 40


def _nct_power(df: Any, nc: Any, alpha: float, alternative: str) -> np.ndarray:
    """P(T' > t_{α/2, df}) + P(T' < −t_{α/2, df}) (two-sided; one tail at α otherwise) for
    T' noncentral t on ``df`` with noncentrality ``nc`` ≥ 0.

    The lower tail is taken as P(−T' > t) = ``nct.sf(t, df, −nc)``: scipy's ``nct.cdf``
    is NaN from a noncentrality of about 7 on (scipy 1.17), where this is the tiny
    number it should be; ``nct.sf`` is finite over the whole range (checked against R's
    pwr over df 1–999 and noncentralities up to 37 in the tests)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        crit = critical_value(stats.t(df), alpha, alternative)
        if alternative == "two-sided":
            return stats.nct.sf(crit, df, nc) + stats.nct.sf(crit, df, -np.asarray(nc))
        # "greater" with effect +mde, or "less" with effect −mde: the same by symmetry
        return stats.nct.sf(crit, df, nc)


def _t_power(mde: Any, sd: Any, n: Any, alpha: float, alternative: str) -> np.ndarray:
    """Power of the one-sample (paired) t-test of a mean difference ``mde`` > 0 with
    per-unit SD ``sd`` on ``n`` units (df = n − 1), as statsmodels' ``ttest_power``."""
    n = np.asarray(n, dtype=float)
    nc = np.asarray(mde, dtype=float) / np.asarray(sd, dtype=float) * np.sqrt(n)
    return _nct_power(n - 1, nc, alpha, alternative)


def _seed_variance(q: Any, s_t: Any, s_c: Any, seeds: Any, n: Any) -> tuple[Any, Any]:
    """Var(D̄) = σ²_d/n + (σ²_rep,T + σ²_rep,C)/R and its Welch–Satterthwaite df (the
    query part on n − 1, each system's seed part on R − 1); n = inf: the seeds alone."""
    n = np.asarray(n, dtype=float)
    seeds = np.asarray(seeds, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        part_q = np.where(np.isinf(n), 0.0, np.asarray(q, dtype=float) / n)
        part_t = np.asarray(s_t, dtype=float) / seeds
        part_c = np.asarray(s_c, dtype=float) / seeds
        var = part_q + part_t + part_c
        denom = (
            np.where(part_q > 0, part_q**2 / (n - 1), 0.0)
            + np.where(part_t > 0, part_t**2 / (seeds - 1), 0.0)
            + np.where(part_c > 0, part_c**2 / (seeds - 1), 0.0)
        )
        df = np.where(denom > 0, var**2 / denom, np.inf)
    return var, df


def _seed_power(
    mde: Any, q: Any, s_t: Any, s_c: Any, seeds: Any, n: Any, alpha: float, alternative: str
) -> np.ndarray:
    """Power of the t-test of D̄ with the seeds' variance: noncentral t with
    noncentrality mde/√Var(D̄) on the Welch–Satterthwaite df of :func:`_seed_variance`."""
    var, df = _seed_variance(q, s_t, s_c, seeds, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        nc = np.asarray(mde, dtype=float) / np.sqrt(var)
    return _nct_power(df, nc, alpha, alternative)


def _anova_power(mde: Any, ms: Any, m: Any, n: Any, alpha: float) -> np.ndarray:
    """Power of the one-way ANOVA's F test of m systems on n queries each when the best
    and worst systems differ by ``mde``: λ = n·D²/(2σ²), F on (m − 1, m(n − 1)) df
    (Sakai 2016, after Nagata)."""
    n = np.asarray(n, dtype=float)
    m = np.asarray(m, dtype=float)
    lam = n * np.asarray(mde, dtype=float) ** 2 / (2 * np.asarray(ms, dtype=float))
    df1, df2 = m - 1, m * (n - 1)
    return stats.ncf.sf(stats.f.isf(alpha, df1, df2), df1, df2, lam)


def _ci_width(sd: Any, n: Any, alpha: float) -> np.ndarray:
    """The width 2·t_{α/2, n−1}·σ/√n of the t interval of a mean difference."""
    n = np.asarray(n, dtype=float)
    crit = critical_value(stats.t(n - 1), alpha, "two-sided")
    return 2 * crit * np.asarray(sd, dtype=float) / np.sqrt(n)


def _smallest_n(ok: Callable[[np.ndarray], np.ndarray], valid: np.ndarray) -> np.ndarray:
    """The smallest integer n ≥ 2 with ``ok(n)`` per group (``ok`` monotone in n), by
    doubling then integer bisection on all groups at once; NaN where invalid or beyond
    :data:`MAX_SIZE`."""
    size = valid.shape[0]
    lo = np.full(size, 1.0)  # ok(lo) is False (n = 1 is no design)
    hi = np.full(size, 2.0)
    todo = valid.copy()
    while True:  # doubling: ≤ log2(MAX_SIZE) rounds
        reached = np.zeros(size, dtype=bool)
        reached[todo] = ok(hi)[todo]
        grow = todo & ~reached
        if not grow.any():
            break
        lo = np.where(grow, hi, lo)
        hi = np.where(grow, hi * 2, hi)
        too_big = grow & (hi > MAX_SIZE)
        todo &= ~too_big
    while True:  # bisection: invariant ok(hi) and not ok(lo)
        open_ = todo & (hi - lo > 1)
        if not open_.any():
            break
        mid = np.floor((lo + hi) / 2)
        good = np.zeros(size, dtype=bool)
        good[open_] = ok(mid)[open_]
        hi = np.where(open_ & good, mid, hi)
        lo = np.where(open_ & ~good, mid, lo)
    return np.where(todo, hi, np.nan)


def _smallest_effect(
    power_of: Callable[[np.ndarray], np.ndarray],
    target: float,
    scale: np.ndarray,
    valid: np.ndarray,
) -> np.ndarray:
    """The effect x > 0 with ``power_of(x)`` = ``target`` per group (power increasing in
    x), by bisection on all groups at once; ``scale`` is a first upper guess."""
    hi = np.where(valid, scale, 1.0)
    for _ in range(200):  # doubling until the target is reached
        short = valid & ~(power_of(hi) >= target)
        if not short.any():
            break
        hi = np.where(short, hi * 2, hi)
    lo = np.zeros_like(hi)
    for _ in range(100):  # bisection to |hi − lo| ≤ 2⁻¹⁰⁰·hi
        mid = (lo + hi) / 2
        above = power_of(mid) >= target
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    return np.where(valid, (lo + hi) / 2, np.nan)


def _given(n: Any, mde: Any, power: Any, alpha: float, test: str, width: Any) -> str:
    """Check which of n, mde, power (or width) are given; the one to solve for."""
    given = {"n": n, "mde": mde, "power": power}
    if test == "ci":
        extra = [k for k, v in given.items() if v is not None]
        if extra:
            raise OptionError(
                f"test='ci' plans n from `width` alone; {', '.join(f'`{k}`' for k in extra)} "
                f"cannot be used with it, but {', '.join(f'{k}={given[k]!r}' for k in extra)} "
                "was passed. Drop it, or use test='t'."
            )
        if width is None:
            raise OptionError("test='ci' needs `width`, the widest interval wanted (e.g. 0.05).")
        if not np.isfinite(width) or width <= 0:
            raise OptionError(f"`width` must be a positive number, but {width!r} was passed.")
        return "n"
    if width is not None:
        raise OptionError(
            f"`width` is used with test='ci' only, but width={width!r} was passed with "
            f"test={test!r}. Use test='ci', or give two of `n`, `mde`, `power`."
        )
    missing = [k for k, v in given.items() if v is None]
    if len(missing) != 1:
        shown = ", ".join(f"{k}={v!r}" for k, v in given.items())
        raise OptionError(
            f"Give exactly two of `n`, `mde`, `power` (the third is solved for), but {shown} "
            "was passed."
        )
    if power is not None and not (alpha < power < 1):
        raise OptionError(
            f"`power` must be above alpha ({alpha!r}) and below 1, but {power!r} was passed."
        )
    if mde is not None and not (np.isfinite(mde) and mde > 0):
        raise OptionError(
            f"`mde` must be a positive difference (in the metric's units), but {mde!r} was "
            "passed; the alternative's direction is set by `alternative`."
        )
    if n is not None and (isinstance(n, bool) or not float(n).is_integer() or n < 2):
        raise OptionError(f"`n` must be an integer ≥ 2, but {n!r} was passed.")
    return missing[0]


def _check_options(
    alpha: Any,
    alternative: str,
    test: str,
    cluster: Any,
    replicates: Any,
    epochs: Any,
    seeds: Any = None,
) -> None:
    check_option("test", test, PLAN_TESTS)
    check_option("alternative", alternative, ALTERNATIVES)
    if replicates is not None:
        check_option("replicates", replicates, ["epochs", "seeds"])
    if seeds is not None:
        if replicates != "seeds":
            raise OptionError(
                f"`seeds` is the planned seeds per system of replicates='seeds', but "
                f"seeds={seeds!r} was passed with replicates={replicates!r}."
            )
        if isinstance(seeds, bool) or not float(seeds).is_integer() or seeds < 2:
            raise OptionError(
                f"`seeds` must be an integer ≥ 2 (one seed leaves the seeds' variance "
                f"unestimated), but {seeds!r} was passed."
            )
    if replicates == "seeds" and test == "ci":
        raise OptionError("replicates='seeds' plans with test='t' only, but test='ci' was passed.")
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
        raise OptionError(f"`alpha` must be a number in (0, 1), but {alpha!r} was passed.")
    if test == "anova" and (cluster is not None or replicates is not None):
        raise OptionError(
            "test='anova' plans queries without clusters or epochs, but "
            f"cluster={cluster!r}, replicates={replicates!r} was passed."
        )
    if test == "anova" and alternative != "two-sided":
        raise OptionError(
            f"The F test has no direction: `alternative` must be 'two-sided' with "
            f"test='anova', but {alternative!r} was passed."
        )
    if cluster is not None and replicates is not None:
        raise OptionError(
            f"Plan with `cluster` or with `replicates`, not both (cluster={cluster!r}, "
            f"replicates={replicates!r} was passed)."
        )
    if epochs is not None:
        if replicates != "epochs":
            raise OptionError(
                f"`epochs` is the planned epochs per item of replicates='epochs', but "
                f"epochs={epochs!r} was passed with replicates={replicates!r}."
            )
        if isinstance(epochs, bool) or not float(epochs).is_integer() or epochs < 1:
            raise OptionError(f"`epochs` must be an integer ≥ 1, but {epochs!r} was passed.")


@any_frame
@literal_signature
@fill_doc
def plan_queries(
    scores: pd.DataFrame,
    control: str,
    *,
    treatment: str | Sequence[str] | None = None,
    n: int | None = None,
    mde: float | None = None,
    power: float | None = None,
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    cluster: str | None = None,
    replicates: str | None = None,
    epochs: int | None = None,
    seeds: int | None = None,
    test: PlanTest = "t",
    width: float | None = None,
) -> PowerResult:
    """Queries (or clusters of queries) a comparison on each task needs, from a pilot.

    Per (task, metric, treatment, control) group of a pilot, give two of ``n``, ``mde``
    and ``power`` and get the third, as statsmodels' ``TTestPower.solve_power`` does
    (Sakai's topic-set-size design), for the paired t-test, the one-way ANOVA over
    several systems, or the width of a confidence interval.

    Parameters
    ----------
    scores : pandas.DataFrame
        The pilot: a scores table ``task, query, system, metric, value``.
        {any_frame}
    {control_one}
    treatment : str, list of str or None
        The treatment system(s); None means every other system. With
        ``test="anova"`` the systems compared are the control and these (None: all).
    n : int, optional
        The planned queries (clusters with ``cluster=``), ≥ 2.
    mde : float, optional
        The minimum detectable effect, > 0, in the metric's units: the mean paired
        difference (``test="t"``; treatment above control for
        ``alternative="greater"``, below for ``"less"``), or the range between the
        best and the worst system's means (``test="anova"``).
    power : float, optional
        The power wanted, alpha < power < 1.
    alpha : float, default 0.05
        The test's level (the interval's level is 1 − alpha).
    alternative : {"two-sided", "greater", "less"}, default "two-sided"
        The t-test's alternative (two-sided: both tails count).
    {cluster}
        Plan in clusters of the pilot's mean size.
    replicates : {"epochs", "seeds"}, optional
        What the pilot's ``replicate`` column holds: repeated answers to the same item
        (plan with the between- and within-item variance), or runs of each system with
        their own seed (plan with the seeds' variance, which more queries do not
        reduce). None with a ``replicate`` column leaves the seeds' variance out, and
        warns.
    epochs : int, optional
        With ``replicates="epochs"``: the planned epochs per item (default the pilot's).
    seeds : int, optional
        With ``replicates="seeds"``: the planned seeds (runs) per system, ≥ 2 (default
        the pilot's R; the larger of the two systems' when they differ).
    test : {"t", "anova", "ci"}, default "t"
        The design: the paired t-test; Sakai's one-way ANOVA over the systems of a task
        (F test on (m − 1, m(n − 1)) df); or the queries for a (1 − alpha) t
        interval of the mean difference no wider than ``width``.
    width : float, optional
        With ``test="ci"`` (and only then): the widest interval wanted.

    Returns
    -------
    PowerResult
        ``table``: one row per group, with columns

        - ``metric, treatment, control, task`` (``test="anova"``: ``metric, task,
          control`` and ``n_systems``, the m systems compared);
        - ``n`` (Int64): the planned queries — clusters with ``cluster=`` —, the
          smallest whole number reaching ``power`` (or ``width``) when solved for;
        - ``mde``: the minimum detectable effect in the metric's units; ``power``;
        - ``sd_diff``: the pilot's SD of the paired differences (of item means with
          epochs); ``ms_within`` (ANOVA): the pilot's within-system variance σ²;
        - ``pilot_n``: the pilot's paired queries; ``alpha``; ``test``;
        - with ``cluster=``: ``sd_cluster`` (σ_c), ``n_clusters`` and ``design_effect``
          (the pilot's, floored at 1) and ``n_items`` (Int64), ⌈n·m̄⌉ items in the
          planned n clusters of the pilot's mean size m̄;
        - with ``replicates="epochs"``: ``var_between``, ``var_within``, ``epochs``
          (planned) and ``sd_epochs`` = √(var_between + var_within/epochs) (NaN
          variances where a system has one epoch per item in the pilot);
        - with ``replicates="seeds"``: ``seeds`` (planned, per system), ``var_seeds``
          = (σ²_rep,T + σ²_rep,C)/seeds, the part of Var(D̄) that more queries do not
          reduce, and ``sd_diff`` = σ_d at the planned seeds;
        - with ``test="ci"``: ``width`` (the target) and ``expected_width`` at ``n``;
          ``mde`` and ``power`` are NaN.

        ``curve``: per group, the power (``test="ci"``: the ``width``) over a grid of
        sizes from 2 to twice ``n``, with ``target``. ``unit``: ``"queries"`` or
        ``"clusters"``.

    Raises
    ------
    metaeval.OptionError
        For none, one or three of ``n``, ``mde``, ``power``; ``power`` ≤ alpha or
        ≥ 1, ``mde`` ≤ 0, ``n`` < 2; ``width`` without ``test="ci"`` or missing with
        it; options that do not go together (``cluster`` with ``replicates``, either
        with ``test="anova"``, ``replicates="seeds"`` with ``test="ci"``, ``epochs`` or
        ``seeds`` without their ``replicates``); ``seeds`` < 2; and ``replicates``
        without a ``replicate`` column.
    metaeval.PairingError
        Unknown systems, or no group that can be planned.

    Warns
    -----
    metaeval.DegenerateWarning
        Naming the groups whose row is NaN: fewer than 2 paired queries (clusters) or
        zero variance of the differences; a system with one epoch per item (planned
        only at the pilot's epochs) or one seed; or a power that no number of queries
        reaches with ``seeds`` seeds, with ``seeds_needed``, the fewest that do.
    metaeval.MetaEvalWarning
        ``replicates=None`` on a pilot with a ``replicate`` column; with ``cluster=``,
        a pilot design effect below 1, floored at 1.

    Notes
    -----
    The power of each design — the paired t-test, clusters (a pilot design effect below
    1 is floored at 1), epochs, seeds (whose variance more queries do not reduce), the
    ANOVA and the interval width — is derived in :ref:`planning-formulas`.

    References
    ----------
    Sakai, T. (2016). Topic set size design. *Information Retrieval Journal*, 19(3),
    256–283. doi:10.1007/s10791-015-9273-z
    Miller, E. (2024). Adding error bars to evals. arXiv:2411.00640. The others:
    :ref:`planning-formulas`.

    Examples
    --------
    >>> import metaeval
    >>> from metaeval.design import plan_queries
    >>> scores = metaeval.load_example().query("metric == 'accuracy'")
    >>> plan = plan_queries(scores, "logistic_regression", treatment="knn",
    ...                     mde=0.02, power=0.8)
    >>> plan.table[["task", "n", "sd_diff", "pilot_n"]].round(4)
                task    n  sd_diff  pilot_n
    0  breast_cancer  620   0.1775      569
    1         digits  602   0.1748     1797
    2           iris  660   0.1831      150
    3           wine  658   0.1827      178

    The same comparison in clusters of ten queries (say, questions on one passage), on
    the two tasks whose pilot design effect is above 1 (on iris and wine it is below 1:
    the plan would use 1 and warn):

    >>> scores = scores.assign(passage=scores["query"].astype(int) // 10)
    >>> two = scores.query("task in ['breast_cancer', 'digits']")
    >>> plan = plan_queries(two, "logistic_regression", treatment="knn",
    ...                     mde=0.02, power=0.8, cluster="passage")
    >>> plan.table[["task", "n", "n_items", "n_clusters", "design_effect"]].round(4)
                task   n  n_items  n_clusters  design_effect
    0  breast_cancer  83      829          57         1.2993
    1         digits  64      639         180         1.0253
    >>> plan.unit
    'clusters'

    A pilot of 5 runs (seeds) per system, each run's seed shifting all its queries;
    with 5 seeds no number of queries reaches 0.8 (a DegenerateWarning names the 7
    seeds needed), with 10:

    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> shift = rng.normal(0, 0.03, (2, 1, 5))  # [system, query, seed]
    >>> x = 0.6 + np.array([0, 0.04])[:, None, None] + shift + rng.normal(0, 0.2, (2, 200, 5))
    >>> s, q, r = np.indices(x.shape).reshape(3, -1)
    >>> runs = pd.DataFrame({"task": "t", "query": q, "system": np.array(["a", "b"])[s],
    ...                      "metric": "acc", "replicate": r, "value": x.ravel()})
    >>> plan = plan_queries(runs, "a", mde=0.05, power=0.8, replicates="seeds", seeds=10)
    >>> plan.table[["n", "power", "sd_diff", "seeds", "var_seeds"]].round(5)
        n    power  sd_diff  seeds  var_seeds
    0  52  0.80336   0.0896     10    0.00015
    """
    _check_options(alpha, alternative, test, cluster, replicates, epochs, seeds)
    solve = _given(n, mde, power, alpha, test, width)
    if test == "anova":
        return _plan_anova(scores, control, treatment, n, mde, power, alpha, solve)
    if replicates == "seeds":
        return _plan_seeds(
            scores, control, treatment, n, mde, power, alpha, alternative, seeds, solve
        )
    pilot = _pilot(scores, control, treatment, cluster, replicates, epochs, alpha)
    sd = pilot.pop("_sd").to_numpy(dtype=float)
    # groups whose NaN _pilot has explained (one epoch per item)
    explained = pilot.pop("_explained").to_numpy(bool) if "_explained" in pilot else False
    size = pilot["n_clusters" if cluster is not None else "pilot_n"].to_numpy(dtype=float)
    valid = (size >= 2) & np.isfinite(sd) & (sd > 0)
    _warn_degenerate(
        pilot, valid | explained, KEYS, "clusters" if cluster is not None else "queries"
    )
    rows = len(pilot)
    if test == "ci":
        widest = float(width)  # type: ignore[arg-type]  # checked by _given
        planned = _smallest_n(lambda k: _ci_width(sd, k, alpha) <= widest, valid)
        table = pilot.assign(
            n=planned,
            mde=np.nan,
            power=np.nan,
            width=widest,
            expected_width=_ci_width(sd, planned, alpha),
        )
    else:

        def power_at(effect: Any, k: Any) -> np.ndarray:
            return _t_power(effect, sd, k, alpha, alternative)

        n_col = np.full(rows, np.nan if n is None else float(n))
        mde_col = np.full(rows, np.nan if mde is None else float(mde))
        if solve == "n":
            n_col = _smallest_n(lambda k: power_at(mde_col, k) >= power, valid)
        elif solve == "mde":
            mde_col = _smallest_effect(
                lambda x: power_at(x, n_col),
                float(power),  # type: ignore[arg-type]
                sd / np.sqrt(n_col),
                valid,
            )
        power_col = np.where(valid, power_at(mde_col, n_col), np.nan)
        table = pilot.assign(n=n_col, mde=np.where(valid, mde_col, np.nan), power=power_col)
    if cluster is not None:
        mean_size = pilot["pilot_n"].to_numpy(dtype=float) / pilot["n_clusters"].to_numpy(float)
        table["n_items"] = np.ceil(table["n"].to_numpy(dtype=float) * mean_size - 1e-9)
    table = _ordered(table.assign(alpha=alpha, test=test), KEYS)
    curve = _curve(
        table,
        KEYS,
        test,
        power,
        lambda i, k: (
            _ci_width(sd[i], k, alpha)
            if test == "ci"
            else _t_power(table["mde"].to_numpy()[i], sd[i], k, alpha, alternative)
        ),
    )
    return PowerResult(
        table=table, curve=curve, unit="clusters" if cluster is not None else "queries"
    )


def _pilot(
    scores: pd.DataFrame,
    control: str,
    treatment: Any,
    cluster: Any,
    replicates: Any,
    epochs: Any,
    alpha: float,
) -> pd.DataFrame:
    """Per group: ``pilot_n``, ``sd_diff`` and the SD per planned unit ``_sd`` (with the
    cluster or epoch columns), from :func:`metaeval.effects` with ``effect="md"``."""
    design = replicates
    if replicates is None and has_replicates(scores):
        # the table's own design, else "nested": which of crossed and nested does not change
        # a task's variance, and the seeds' part is left out below with its own warning
        design = recorded_design(scores) or "nested"
    with warnings.catch_warnings():  # plan_queries names the degenerate groups itself
        warnings.simplefilter("ignore", DegenerateWarning)
        eff = effects(
            scores,
            control,
            treatment=treatment,
            effect="md",
            alpha=alpha,
            cluster=cluster,
            replicates=design,
        )
    pilot_n = eff["n"].to_numpy(dtype=float)
    variance = eff["variance"].to_numpy(dtype=float)
    if "variance_replicates" in eff and replicates is None:
        variance = variance - eff["variance_replicates"].fillna(0).to_numpy(dtype=float)
        warn(
            "The pilot has a `replicate` column: its scores are averaged over each "
            "system's replicates and the plan leaves out the replicates' (seeds') "
            "variance, which more queries do not reduce, so it promises more power than "
            "n queries can give. Pass replicates='seeds' (runs with their own seed) or "
            "replicates='epochs' (repeated answers to the same item).",
            MetaEvalWarning,
        )
    out = eff[KEYS].copy()
    out["pilot_n"] = pilot_n
    if cluster is not None:
        n_clusters = eff["n_clusters"].to_numpy(dtype=float)
        pilot_deff = eff["design_effect"].to_numpy(dtype=float)
        var_naive = variance / pilot_deff
        # a pilot's design effect below 1 is mostly noise (see Notes): floored at 1
        below = pilot_deff < 1
        if below.any():
            warn_groups(
                "The pilot's design effect is below 1 in {n} group(s) (the clustered "
                "variance of the mean difference is smaller than the one of independent "
                "queries); with few clusters that is mostly noise, and it would plan fewer "
                "clusters than ignoring them, so the plan uses 1 (`design_effect`; the "
                "pilot's is `pilot_design_effect` here)",
                out.loc[below, KEYS].assign(
                    pilot_design_effect=pilot_deff[below], n_clusters=n_clusters[below].astype(int)
                ),
                MetaEvalWarning,
            )
        deff = np.where(below, 1.0, pilot_deff)
        out["sd_diff"] = np.sqrt(var_naive * pilot_n)
        out["sd_cluster"] = np.sqrt(np.where(below, var_naive, variance) * n_clusters)
        out["n_clusters"] = n_clusters
        out["design_effect"] = deff
        out["_sd"] = out["sd_cluster"]
        return out
    out["sd_diff"] = np.sqrt(variance * pilot_n)
    if replicates is None:
        out["_sd"] = out["sd_diff"]
        return out
    parts = means(scores)[["task", "metric", "system", "replicates", "var_within"]]
    parts = parts.astype({"task": str, "metric": str, "system": str})
    keyed = out[KEYS].astype(str)
    tr = keyed.merge(
        parts,
        how="left",
        left_on=["task", "metric", "treatment"],
        right_on=["task", "metric", "system"],
    )
    co = keyed.merge(
        parts,
        how="left",
        left_on=["task", "metric", "control"],
        right_on=["task", "metric", "system"],
    )
    e_t, e_c = tr["replicates"].to_numpy(float), co["replicates"].to_numpy(float)
    var_within = tr["var_within"].to_numpy(float) + co["var_within"].to_numpy(float)
    shrink = tr["var_within"].to_numpy(float) / e_t + co["var_within"].to_numpy(float) / e_c
    planned = np.maximum(e_t, e_c) if epochs is None else np.full(len(out), float(epochs))
    out["var_between"] = np.maximum(out["sd_diff"].to_numpy() ** 2 - shrink, 0.0)
    out["var_within"] = var_within
    out["epochs"] = planned
    out["sd_epochs"] = np.sqrt(out["var_between"] + var_within / planned)
    # one epoch per item (of either system): no within-item variance to split off. At the
    # pilot's own epochs the split is not needed (the item differences' SD is the plan's);
    # at other epochs there is no plan
    one = ((e_t < 2) | (e_c < 2)) & (out["pilot_n"].to_numpy() >= 2)
    same = one & (e_t == planned) & (e_c == planned)
    out["sd_epochs"] = np.where(same, out["sd_diff"], out["sd_epochs"])
    for mask, what in (
        (
            same,
            "so `var_within` and `var_between` are NaN; planned at the pilot's epochs "
            "from the item differences (`sd_epochs` = `sd_diff`)",
        ),
        (
            one & ~same,
            "so no plan (NaN) for other epochs than the pilot's; run the pilot "
            "with ≥ 2 epochs per item, or plan its epochs (`epochs`)",
        ),
    ):
        if mask.any():
            warn_groups(
                "The pilot has one epoch per item of a system in {n} group(s) (its "
                "epochs: `epochs_treatment`, `epochs_control`; planned: `epochs`): the "
                "within-item variance cannot be estimated, " + what,
                out.loc[mask, KEYS].assign(
                    epochs_treatment=e_t[mask].astype(int),
                    epochs_control=e_c[mask].astype(int),
                    epochs=planned[mask].astype(int),
                ),
                DegenerateWarning,
            )
    out["_sd"] = np.where(one & ~same, np.nan, out["sd_epochs"])
    out["_explained"] = one & ~same
    return out


def _plan_seeds(
    scores: pd.DataFrame,
    control: str,
    treatment: Any,
    n: Any,
    mde: Any,
    power: Any,
    alpha: float,
    alternative: str,
    seeds: Any,
    solve: str,
) -> PowerResult:
    """The t design with each system's seed variance (see plan_queries' Notes)."""
    if not has_replicates(scores):
        raise OptionError(
            "replicates='seeds' needs the pilot's `replicate` column (the seed of each "
            "run), which the scores table does not have. Drop `replicates`, or add the "
            "column."
        )
    with warnings.catch_warnings():  # plan_queries names the degenerate groups itself
        warnings.simplefilter("ignore", DegenerateWarning)
        eff = effects(
            scores, control, treatment=treatment, effect="md", alpha=alpha, replicates="nested"
        )
    pilot_n = eff["n"].to_numpy(dtype=float)
    # the query-level variance of the differences of the replicate-averaged scores
    q_pilot = (
        eff["variance"].to_numpy(float) - eff["variance_replicates"].fillna(0).to_numpy(float)
    ) * pilot_n
    out = eff[KEYS].copy()
    out["pilot_n"] = pilot_n
    keys = ["task", "metric", "system"]
    rep = replicate_variance(scores).astype({k: str for k in keys})
    item = means(scores)[[*keys, "var_within"]].astype({k: str for k in keys})
    rep = rep.merge(item, on=keys, how="left")
    keyed = out[KEYS].astype(str)
    tr = keyed.merge(rep, how="left", left_on=["task", "metric", "treatment"], right_on=keys)
    co = keyed.merge(rep, how="left", left_on=["task", "metric", "control"], right_on=keys)
    r_t, r_c = tr["replicates"].to_numpy(float), co["replicates"].to_numpy(float)
    s_t, s_c = tr["sigma2_rep"].to_numpy(float), co["sigma2_rep"].to_numpy(float)
    # σ̂²_e = w − σ̂²_rep, the per-query noise of one run, which averages over the seeds
    e_t = np.maximum(tr["var_within"].to_numpy(float) - s_t, 0.0)
    e_c = np.maximum(co["var_within"].to_numpy(float) - s_c, 0.0)
    planned = (
        np.where(r_t == r_c, r_t, np.maximum(r_t, r_c))
        if seeds is None
        else np.full(len(out), float(seeds))
    )
    q = np.maximum(q_pilot - e_t / r_t - e_c / r_c, 0.0) + (e_t + e_c) / planned
    out["sd_diff"] = np.sqrt(q)
    out["seeds"] = planned
    out["var_seeds"] = (s_t + s_c) / planned
    one_seed = (np.minimum(r_t, r_c) < 2) & (pilot_n >= 2)
    if one_seed.any():
        warn_groups(
            "No plan (NaN) for {n} group(s): a system has a single replicate in the pilot, "
            "so its seeds' variance cannot be estimated; run the pilot with ≥ 2 seeds per "
            "system",
            out.loc[one_seed, KEYS],
            DegenerateWarning,
        )
    valid = (pilot_n >= 2) & np.isfinite(q) & (q > 0) & ~one_seed
    _warn_degenerate(out, valid | one_seed, KEYS, "queries")
    valid &= ~one_seed
    if not valid.any():
        raise PairingError("No group of the pilot can be planned with replicates='seeds'.")

    def power_at(effect: Any, k: Any, r: Any = planned) -> np.ndarray:
        return _seed_power(effect, q, s_t, s_c, r, k, alpha, alternative)

    rows = len(out)
    n_col = np.full(rows, np.nan if n is None else float(n))
    mde_col = np.full(rows, np.nan if mde is None else float(mde))
    if solve == "n":
        reachable = ~(power_at(mde_col, np.inf) < power)
        stuck = valid & ~reachable
        n_col = _smallest_n(lambda k: power_at(mde_col, k) >= power, valid & reachable)
        if stuck.any():
            needed = _smallest_n(lambda r: power_at(mde_col, np.inf, r) >= power, stuck)
            groups = out.loc[stuck, [*KEYS, "seeds"]].assign(seeds_needed=needed[stuck])
            warn_groups(
                f"No number of queries reaches power {power} (NaN) for {{n}} group(s): "
                "with these seeds the seeds' variance alone, which more queries do not "
                "reduce, is too large. More seeds are needed: `seeds_needed` is the "
                "smallest number per system that makes the power reachable (pass "
                "seeds=; more still need fewer queries)",
                groups.astype({"seeds": "Int64", "seeds_needed": "Int64"}),
                DegenerateWarning,
            )
    elif solve == "mde":
        scale = np.sqrt(_seed_variance(q, s_t, s_c, planned, n_col)[0])
        mde_col = _smallest_effect(lambda x: power_at(x, n_col), float(power), scale, valid)
    power_col = np.where(valid, power_at(mde_col, n_col), np.nan)
    table = out.assign(n=n_col, mde=np.where(valid, mde_col, np.nan), power=power_col)
    table = _ordered(table.assign(alpha=alpha, test="t"), KEYS)
    mde_arr = table["mde"].to_numpy(dtype=float)
    curve = _curve(
        table,
        KEYS,
        "t",
        power,
        lambda i, k: _seed_power(
            mde_arr[i], q[i], s_t[i], s_c[i], planned[i], k, alpha, alternative
        ),
    )
    return PowerResult(table=table, curve=curve, unit="queries")


def _plan_anova(
    scores: pd.DataFrame,
    control: str,
    treatment: Any,
    n: Any,
    mde: Any,
    power: Any,
    alpha: float,
    solve: str,
) -> PowerResult:
    """Sakai's ANOVA design per (task, metric) over the control and the treatments."""
    known = set(scores["system"].astype(str).unique())
    wanted = (
        None
        if treatment is None
        else [control, *([treatment] if isinstance(treatment, str) else list(treatment))]
    )
    unknown = [s for s in ([control] + (wanted or [])) if s not in known]
    if unknown:
        raise PairingError(
            f"Unknown system(s) {quote_list(sorted(set(unknown)))} for `control`/`treatment`; "
            f"the pilot has {quote_list(sorted(known))}."
        )
    pilot = scores if wanted is None else scores[scores["system"].astype(str).isin(wanted)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateWarning)
        table = anova(pilot)
    res = table[table["source"] == "residual"].reset_index(drop=True)
    query = table[table["source"] == "query"].reset_index(drop=True)
    keys = ["metric", "task", "control"]
    out = pd.DataFrame(
        {
            "metric": res["metric"].to_numpy(),
            "task": res["task"].to_numpy(),
            "control": control,
            "n_systems": res["n_systems"].to_numpy(dtype=float),
        }
    )
    # the within-system variance of the one-way ANOVA (Sakai 2016): the queries' and the
    # residual sums of squares of the two-way table together, on m(n − 1) df
    ms = ((query["ss"] + res["ss"]) / (query["df"] + res["df"])).to_numpy(dtype=float)
    m = out["n_systems"].to_numpy(dtype=float)
    pilot_n = res["n_queries"].to_numpy(dtype=float)
    valid = (pilot_n >= 2) & (m >= 2) & np.isfinite(ms) & (ms > 0)
    _warn_degenerate(out.assign(pilot_n=pilot_n), valid, keys, "queries")
    rows = len(out)
    n_col = np.full(rows, np.nan if n is None else float(n))
    mde_col = np.full(rows, np.nan if mde is None else float(mde))
    if solve == "n":
        n_col = _smallest_n(lambda k: _anova_power(mde_col, ms, m, k, alpha) >= power, valid)
    elif solve == "mde":
        mde_col = _smallest_effect(
            lambda x: _anova_power(x, ms, m, n_col, alpha), power, np.sqrt(ms / n_col), valid
        )
    out["n"] = n_col
    out["mde"] = np.where(valid, mde_col, np.nan)
    out["power"] = np.where(valid, _anova_power(mde_col, ms, m, n_col, alpha), np.nan)
    out["ms_within"] = ms
    out["pilot_n"] = pilot_n
    out = _ordered(out.assign(alpha=alpha, test="anova"), keys)
    curve = _curve(
        out,
        keys,
        "anova",
        power,
        lambda i, k: _anova_power(out["mde"].to_numpy()[i], ms[i], m[i], k, alpha),
    )
    return PowerResult(table=out, curve=curve, unit="queries")


def _warn_degenerate(pilot: pd.DataFrame, valid: np.ndarray, keys: list[str], unit: str) -> None:
    bad = ~valid
    if bad.all():
        raise PairingError(
            f"No group of the pilot can be planned: each has fewer than 2 paired {unit} or "
            "zero variance of the differences. Check `control`/`treatment` and the pilot."
        )
    if bad.any():
        warn_groups(
            f"No plan (NaN) for {{n}} group(s): fewer than 2 paired {unit} or zero variance "
            "of the differences in the pilot",
            pilot.loc[bad, keys],
            DegenerateWarning,
        )


def _ordered(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The plan's columns in their documented order; sizes as Int64."""
    first = [*keys, *(["n_systems"] if "n_systems" in table else []), "n", "mde", "power"]
    rest = [c for c in table.columns if c not in first]
    out = table[first + rest].reset_index(drop=True)
    for col in ("n", "n_items", "n_clusters", "pilot_n", "epochs", "seeds", "n_systems"):
        if col in out:
            out[col] = out[col].astype("Int64")
    return out


def _curve(
    table: pd.DataFrame,
    keys: list[str],
    test: str,
    target: Any,
    value: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> pd.DataFrame:
    """Per group, ``value`` (power, or the width for ``test="ci"``) over sizes from 2 to
    twice the plan's n on a log grid (with n itself), all groups in one call."""
    n = table["n"].to_numpy(dtype=float, na_value=np.nan)
    rows = np.flatnonzero(np.isfinite(n))
    top = np.maximum(2 * n[rows], 4)
    grid = np.linspace(0, 1, CURVE_POINTS)
    sizes = np.round(2 * (top[:, None] / 2) ** grid[None, :])
    sizes = np.concatenate([sizes, n[rows, None]], axis=1)
    group = np.repeat(rows, sizes.shape[1])
    size = sizes.ravel()
    frame = pd.DataFrame({"_row": group, "size": size}).drop_duplicates()
    frame = frame.sort_values(["_row", "size"], kind="stable")
    values = value(frame["_row"].to_numpy(), frame["size"].to_numpy())
    out = table[keys].iloc[frame["_row"].to_numpy()].reset_index(drop=True)
    out["size"] = frame["size"].to_numpy().astype(int)
    if test == "ci":
        out["power"] = np.nan
        out["width"] = values
        out["target"] = table["width"].iloc[0] if len(table) else np.nan
    else:
        out["power"] = values
        out["target"] = np.nan if target is None else float(target)
    return out

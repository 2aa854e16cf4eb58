"""How many tasks a pooled comparison needs: :func:`plan_tasks`, from a pilot effects table."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._docs import fill_doc
from .._options import (
    CI_METHODS,
    DEFAULT_CI,
    DEFAULT_POOL_METHOD,
    POOL_METHODS,
    CIMethod,
    PoolMethod,
    literal_signature,
    resolve_ci,
)
from ..engines import any_frame
from ..errors import (
    DegenerateWarning,
    MetaEvalWarning,
    OptionError,
    SchemaError,
    check_alpha,
    check_option,
    quote_list,
    resolve_seed,
    warn_groups,
)
from ..pooling import GROUP_KEYS, pool
from .results import PowerResult

__all__ = ["plan_tasks"]

MAX_K = 1_000
"""The largest number of tasks :func:`plan_tasks` plans (beyond it: NA and a warning)."""
ROW_BUDGET = 2_000_000
"""Simulated effects per call of :func:`metaeval.pool` when searching for k."""
CURVE_SIZES = 30
"""At most this many sizes on a power curve (every size from 2 while they fit)."""


@any_frame
@literal_signature
@fill_doc
def plan_tasks(
    effects: pd.DataFrame,
    *,
    k: int | None = None,
    mde: float | None = None,
    power: float | None = None,
    tau2: float | None = None,
    variance: float | None = None,
    alpha: float = 0.05,
    method: PoolMethod = DEFAULT_POOL_METHOD,
    test: CIMethod | None = DEFAULT_CI,
    n_draws: int = 2000,
    seed: int | None = None,
) -> PowerResult:
    r"""How many tasks a pooled comparison needs, what it can detect, or its power.

    From a pilot effects table, per group (as :func:`metaeval.pool` groups): give two of
    ``k``, ``mde`` and ``power`` and get the third, for the analysis that will be run
    (:func:`metaeval.pool` with ``method`` and ``test``), by simulating that analysis.
    The normal-theory answer of Hedges & Pigott (2001) is reported beside it.

    Parameters
    ----------
    effects : pandas.DataFrame
        A pilot effects table (from :func:`metaeval.effects`): its within-task
        variances and, by default, its τ̂² plan the comparison.
        {any_frame}
    k : int, optional
        Tasks in the planned comparison (at least 2).
    mde : float, optional
        The pooled effect to detect, on the analysis scale of the effects (the sign
        gives the direction; a solved ``mde`` is positive).
    power : float, optional
        The probability of a significant pooled effect in the direction of ``mde``
        (alpha < power < 1).
    tau2 : float, optional
        The between-task variance of the planned tasks; by default the pilot's τ̂²
        (from :func:`metaeval.pool` with ``method``).
    variance : float, optional
        The within-task sampling variance of a planned task; by default the mean of the
        group's pilot variances that :func:`metaeval.pool` uses (an average pilot task).
    alpha : float, default 0.05
        The level of the two-sided test (the pooled interval has level 1 − alpha).
    method : {"EE", "FE", "DL", "HE", "HS", "SJ", "ML", "REML", "EB", "PM"}, default "REML"
        The τ² estimator of the planned analysis (and of the pilot's τ̂²).
    test : {"z", "t", "knha", "hksj", "adhoc"} or None, default None
        The intervals of the planned analysis, as in :func:`metaeval.pool`: None is
        Knapp–Hartung for random-effects methods and ``"z"`` for ``EE``/``FE``.
    n_draws : int, default 2000
        Simulated comparisons per size (Monte-Carlo standard error of a power near 0.8:
        about √(0.8·0.2/n_draws), 0.009 for 2000).
    seed : int, optional
        The seed of the simulation; None draws one, reported in the ``seed`` column.

    Returns
    -------
    PowerResult
        ``table``: one row per group, the group keys and

        - ``k`` (tasks, an integer), ``mde``, ``power`` (simulated, at that ``k`` and
          ``mde``: at least the target when ``k`` or ``mde`` was solved);
        - ``power_normal``: the normal-theory power at ``k`` and ``mde``; with ``k``
          solved also ``k_normal``, with ``mde`` solved also ``mde_normal``;
        - ``tau2``, ``tau2_source`` (``"pilot"`` or ``"given"``), ``variance`` (the
          planned within-task variance), ``pilot_k`` (the pilot's tasks),
          ``method``, ``test``, ``n_draws``, ``seed``.

        ``table.attrs`` hold ``method, test, alpha, n_draws, seed`` and ``solve`` (``"k"``,
        ``"mde"`` or ``"power"``: what was solved).

        ``curve``: the simulated power of each group over ``size`` (tasks) from 2 to
        max(2k, 10) (up to 30 sizes), at the row's ``mde``, with ``target`` (the
        ``power`` asked for; NaN when power was solved). ``unit`` is ``"tasks"``.

    Raises
    ------
    metaeval.OptionError
        Not exactly two of ``k``, ``mde`` and ``power``; ``power`` not between
        ``alpha`` and 1; ``k`` < 2; ``mde`` zero; ``tau2`` < 0; ``variance`` ≤ 0; an
        unknown ``method`` or ``test``; ``n_draws`` < 100.
    metaeval.SchemaError
        ``effects`` is not an effects table (columns ``effect, variance``), or is empty.

    Warns
    -----
    metaeval.DegenerateWarning
        Naming the groups whose pilot τ̂² is NaN (one usable pilot task; give ``tau2=``),
        and those that need more than 1,000 tasks (``k`` NA).

    Notes
    -----
    The power is simulated by pooling draws of the planned comparison with
    :func:`metaeval.pool` itself; the model, the normal theory beside it and how ``k``
    and ``mde`` are solved: :ref:`planning-tasks-simulation`.

    References
    ----------
    Hedges, L. V., & Pigott, T. D. (2001). The power of statistical tests in
    meta-analysis. *Psychological Methods*, 6(3), 203–217. doi:10.1037/1082-989X.6.3.203
    Jackson, D., & Turner, R. (2017). Power analysis for random-effects meta-analysis.
    *Research Synthesis Methods*, 8(3), 290–302. doi:10.1002/jrsm.1240

    Examples
    --------
    >>> import metaeval
    >>> from metaeval.design import plan_tasks
    >>> eff = metaeval.load_example().meta.effects("logistic_regression", effect="md")
    >>> accuracy = eff.query("metric == 'accuracy'")

    The pooled accuracy difference that 10 tasks like the pilot's four detect with power
    0.8, for REML with Knapp–Hartung intervals, and the normal theory's smaller answer:

    >>> plan = plan_tasks(accuracy, k=10, power=0.8, seed=1)
    >>> plan.table[["treatment", "k", "mde", "mde_normal", "power_normal"]].round(4)
               treatment   k     mde  mde_normal  power_normal
    0  gradient_boosting  10  0.0154      0.0137         0.882
    1                knn  10  0.0157      0.0140         0.882
    2        naive_bayes  10  0.0536      0.0478         0.882
    3      random_forest  10  0.0138      0.0123         0.882

    The tasks knn needs to show one point of accuracy (the normal theory says 20):

    >>> plan = plan_tasks(accuracy.query("treatment == 'knn'"), mde=0.01, power=0.8, seed=1)
    >>> plan.table[["k", "k_normal", "power", "power_normal", "pilot_k"]].round(4)
        k  k_normal  power  power_normal  pilot_k
    0  22        20  0.808        0.8446        4
    >>> plan.curve.query("size in [6, 12, 22]")[["size", "power", "target"]]
        size  power  target
    3      6  0.245     0.8
    7     12  0.523     0.8
    14    22  0.808     0.8
    >>> plan.unit
    'tasks'
    """
    ci_name, solve, alpha, n_draws, seed = _check(
        k, mde, power, tau2, variance, alpha, method, test, n_draws, seed
    )
    pilot = _pilot(effects, method=method, test=test, alpha=alpha, tau2=tau2, variance=variance)
    keys, table = pilot.keys, pilot.table
    n_groups = len(table)
    sd = np.sqrt(table["variance"].to_numpy() + table["tau2"].to_numpy())
    usable = np.isfinite(sd)
    z = stats.norm.ppf(1 - alpha / 2)
    sim = _Simulation(
        sd,
        table["variance"].to_numpy(float),
        method=method,
        test=ci_name,
        alpha=alpha,
        n_draws=n_draws,
        seed=seed,
    )

    k_col = np.full(n_groups, -1, dtype=np.int64)
    mde_col = np.full(n_groups, np.nan)
    extra: dict[str, np.ndarray] = {}
    if solve == "power":
        k_col[:] = k
        mde_col[:] = mde
    elif solve == "mde":
        k_col[:] = k
        mde_col[usable] = sim.solve_mde(np.flatnonzero(usable), int(k), float(power))
        extra["mde_normal"] = np.where(usable, sd / math.sqrt(k) * _normal_x(power, z), np.nan)
    else:
        k_normal = _k_normal(abs(float(mde)), sd, float(power), z)
        extra["k_normal"] = k_normal
        k_col[usable] = sim.solve_k(
            np.flatnonzero(usable), float(mde), float(power), k_normal[usable]
        )
        mde_col[:] = mde
        if (k_col == 0).any():
            warn_groups(
                f"{{n}} group(s) need more than {MAX_K} tasks for this `mde` and `power`, so "
                "their k is NA and their power NaN",
                table.loc[k_col == 0, keys] if keys else table.loc[k_col == 0, ["pilot_k"]],
                DegenerateWarning,
            )
    usable &= k_col > 0
    target = np.nan if solve == "power" else float(power)
    # the curve's one pool() call includes each group's k: its power is the plan's
    curve, power_col = _curve(sim, table[keys], k_col, mde_col, usable, target)
    power_normal = _normal_power(np.abs(mde_col), sd, k_col.astype(float), z)

    out = table[keys].copy()
    out["k"] = pd.array(np.where(k_col > 0, k_col, 0), dtype="Int64")
    out.loc[k_col <= 0, "k"] = pd.NA  # no pilot τ̂², or more than MAX_K tasks
    out["mde"] = mde_col
    out["power"] = power_col
    out["power_normal"] = np.where(usable, power_normal, np.nan)
    if "k_normal" in extra:
        out["k_normal"] = pd.array(extra["k_normal"], dtype="Int64")
        out.loc[~np.isfinite(sd), "k_normal"] = pd.NA
    if "mde_normal" in extra:
        out["mde_normal"] = extra["mde_normal"]
    out["tau2"] = table["tau2"].to_numpy()
    out["tau2_source"] = "pilot" if tau2 is None else "given"
    out["variance"] = table["variance"].to_numpy()
    out["pilot_k"] = table["pilot_k"].to_numpy()
    out["method"] = method
    out["test"] = ci_name
    out["n_draws"] = n_draws
    out["seed"] = seed
    out = out.reset_index(drop=True)
    out.attrs.update(
        method=method, test=ci_name, alpha=alpha, n_draws=n_draws, seed=seed, solve=solve
    )
    return PowerResult(table=out, curve=curve, unit="tasks")


# ------------------------------------------------------------------- checks
def _check(
    k: Any,
    mde: Any,
    power: Any,
    tau2: Any,
    variance: Any,
    alpha: Any,
    method: Any,
    test: Any,
    n_draws: Any,
    seed: Any,
) -> tuple[str, str, float, int, int]:
    alpha = check_alpha(alpha)  # the options first: a bogus one is named whatever else is given
    check_option("method", method, POOL_METHODS)
    if test is not None:
        check_option("test", test, CI_METHODS)
    given = {"k": k, "mde": mde, "power": power}
    named = [name for name, value in given.items() if value is not None]
    if len(named) != 2:
        raise OptionError(
            f"Give exactly two of `k`, `mde` and `power` (the third is solved), but "
            f"{'none' if not named else quote_list(named)} {'was' if len(named) == 1 else 'were'} "
            "given."
        )
    solve = next(name for name, value in given.items() if value is None)
    if k is not None and (
        isinstance(k, bool) or not isinstance(k, int | np.integer) or not 2 <= k <= MAX_K
    ):
        raise OptionError(
            f"`k` must be an integer number of tasks from 2 to {MAX_K}, but {k!r} was passed."
        )
    if mde is not None and (not _is_number(mde) or not math.isfinite(mde) or mde == 0):
        raise OptionError(
            f"`mde` must be a finite nonzero effect (on the analysis scale), but {mde!r} was "
            "passed."
        )
    if power is not None and (not _is_number(power) or not alpha < power < 1):
        raise OptionError(
            f"`power` must be a number between `alpha` ({alpha}) and 1, but {power!r} was passed."
        )
    if tau2 is not None and (not _is_number(tau2) or not math.isfinite(tau2) or tau2 < 0):
        raise OptionError(
            f"`tau2` must be a finite between-task variance ≥ 0, but {tau2!r} was passed; "
            "leave it None to use the pilot's τ̂²."
        )
    if variance is not None and (
        not _is_number(variance) or not math.isfinite(variance) or variance <= 0
    ):
        raise OptionError(
            f"`variance` must be a positive finite within-task variance, but {variance!r} was "
            "passed; leave it None to use the mean of the pilot's variances."
        )
    if isinstance(n_draws, bool) or not isinstance(n_draws, int | np.integer) or n_draws < 100:
        raise OptionError(
            f"`n_draws` must be an integer of at least 100 simulated comparisons, but {n_draws!r} "
            "was passed."
        )
    return resolve_ci(method, test), solve, alpha, int(n_draws), resolve_seed(seed)


def _is_number(x: Any) -> bool:
    return not isinstance(x, bool) and isinstance(x, int | float | np.integer | np.floating)


class _Pilot:
    def __init__(self, keys: list[str], table: pd.DataFrame):
        self.keys, self.table = keys, table


def _pilot(
    effects: Any,
    *,
    method: str,
    test: Any,
    alpha: float,
    tau2: float | None,
    variance: float | None,
) -> _Pilot:
    """Per group: the keys, the pilot's tasks, its τ̂² (or ``tau2``) and mean variance."""
    if not isinstance(effects, pd.DataFrame):
        raise SchemaError(
            f"`effects` must be a pilot effects table (a pandas DataFrame), not "
            f"{type(effects).__name__}."
        )
    missing = [c for c in ("effect", "variance") if c not in effects.columns]
    if missing:
        raise SchemaError(
            f"`effects` must be a pilot effects table (from metaeval.effects()) with columns "
            f"'effect' and 'variance', but it lacks {missing}; its columns are "
            f"{quote_list([str(c) for c in effects.columns])}."
        )
    if effects.empty:
        raise SchemaError("`effects` is an empty effects table: a plan needs a pilot's effects.")
    pooled = pool(effects, method=method, test=test, alpha=alpha)
    keys = [c for c in GROUP_KEYS if c in effects.columns]
    eff = effects.loc[:, [*keys, "effect", "variance"]]
    ok = np.isfinite(eff["effect"].to_numpy(float)) & np.isfinite(eff["variance"].to_numpy(float))
    if keys:
        means = (
            eff[ok]
            .groupby(keys, sort=False, observed=True, dropna=False)["variance"]
            .mean()
            .rename("_variance")
            .reset_index()
        )
        table = pooled[keys + ["k", "tau2"]].merge(means, on=keys, how="left", validate="1:1")
    else:
        table = pooled[["k", "tau2"]].assign(_variance=eff.loc[ok, "variance"].mean())
    table = table.rename(columns={"k": "pilot_k"})
    table["variance"] = table.pop("_variance") if variance is None else float(variance)
    if tau2 is not None:
        table["tau2"] = float(tau2)
    bad = ~np.isfinite(table["tau2"].to_numpy(float)) | ~np.isfinite(table["variance"].to_numpy())
    if bad.any():
        warn_groups(
            "{n} group(s) have no pilot τ̂² (fewer than 2 usable pilot tasks), so their plan is "
            "NaN; give `tau2=` (and `variance=` if no pilot task is usable)",
            table.loc[bad, keys] if keys else table.loc[bad, ["pilot_k"]],
            DegenerateWarning,
        )
    return _Pilot(keys, table.reset_index(drop=True))


# ------------------------------------------------------------------- normal theory
def _normal_power(mde: np.ndarray, sd: np.ndarray, k: np.ndarray, z: float) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        x = mde / (sd / np.sqrt(k))
    return stats.norm.cdf(x - z) + stats.norm.cdf(-x - z)


def _normal_x(power: float, z: float) -> float:
    """The x = |mde|/σ_k at which Φ(x − z) + Φ(−x − z) = power (bisection)."""
    lo, hi = 0.0, z + stats.norm.ppf(power) + 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if stats.norm.cdf(mid - z) + stats.norm.cdf(-mid - z) < power:
            lo = mid
        else:
            hi = mid
    return hi


def _k_normal(mde: float, sd: np.ndarray, power: float, z: float) -> np.ndarray:
    """The smallest k ≥ 2 whose normal-theory power reaches ``power`` (−1 where sd is NaN)."""
    with np.errstate(invalid="ignore"):
        k0 = np.ceil((z + stats.norm.ppf(power)) ** 2 * sd**2 / mde**2)
    k0 = np.where(np.isfinite(k0), np.maximum(k0, 2), -1)
    # the second tail only adds power: k0 suffices, k0 − 1 may too
    smaller = np.maximum(k0 - 1, 2)
    ok = _normal_power(np.full_like(sd, mde), sd, smaller, z) >= power
    return np.where(k0 < 0, -1, np.where(ok, smaller, k0)).astype(np.int64)


# ------------------------------------------------------------------- simulation
class _Simulation:
    """Pools simulated comparisons of the planned analysis, all at once.

    The draws ``Z`` have shape (tasks, n_draws) and are drawn row by row from one seeded
    generator, so the first k rows are the same whatever the largest k asked for:
    every k and every group uses the same draws (common random numbers)."""

    def __init__(
        self,
        sd: np.ndarray,
        variance: np.ndarray,
        *,
        method: str,
        test: str,
        alpha: float,
        n_draws: int,
        seed: int,
    ) -> None:
        self.sd, self._variance = sd, variance
        self.method, self.test, self.alpha = method, test, alpha
        self.n_draws, self.seed = n_draws, seed
        self._z = np.empty((0, n_draws))

    def draws(self, k_max: int) -> np.ndarray:
        if k_max > len(self._z):
            rng = np.random.default_rng(self.seed)
            self._z = rng.standard_normal((k_max, self.n_draws))
        return self._z[:k_max]

    def intervals(self, groups: np.ndarray, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``ci_low`` and ``ci_high`` of comparisons with mean 0, shape (len(ks), n_draws),
        of ``ks[j]`` tasks of group ``groups[j]``: one :func:`metaeval.pool` call."""
        n_draws = self.n_draws
        ks = np.asarray(ks, dtype=np.int64)
        z = self.draws(int(ks.max()))
        sizes = ks * n_draws
        total = int(sizes.sum())
        spec = np.repeat(np.arange(len(ks)), sizes)
        local = np.arange(total) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        task, sim = np.divmod(local, n_draws)
        sd = self.sd[groups]
        v = self._variance[groups]
        frame = pd.DataFrame(
            {
                "task": task,
                "metric": spec * n_draws + sim,
                "effect": sd[spec] * z[task, sim],
                "variance": v[spec],
            }
        )
        with warnings.catch_warnings():
            # simulated comparisons: a REML fit stuck at a boundary, s² = 0 ... count as
            # not significant (NaN interval), not as warnings about the user's data
            warnings.simplefilter("ignore", MetaEvalWarning)
            res = pool(frame, method=self.method, test=self.test, alpha=self.alpha)
        order = np.argsort(res["metric"].to_numpy(), kind="stable")
        low = res["ci_low"].to_numpy(float)[order].reshape(len(ks), n_draws)
        high = res["ci_high"].to_numpy(float)[order].reshape(len(ks), n_draws)
        return low, high

    def power(self, groups: np.ndarray, ks: np.ndarray, mde: np.ndarray) -> np.ndarray:
        low, high = self.intervals(groups, ks)
        return _significant(low, high, np.asarray(mde, float)[:, None]).mean(axis=1)

    def solve_mde(self, groups: np.ndarray, k: int, power: float) -> np.ndarray:
        if not len(groups):
            return np.empty(0)
        low, _ = self.intervals(groups, np.full(len(groups), k))
        d = np.sort(np.where(np.isfinite(low), -low, np.inf), axis=1)
        c = math.ceil(power * self.n_draws - 1e-9)  # significant in ≥ c of n_draws
        upper = d[:, c] if c < self.n_draws else np.nextafter(d[:, c - 1], np.inf)
        return np.where(
            np.isfinite(upper), (d[:, c - 1] + upper) / 2, np.nextafter(d[:, c - 1], np.inf)
        )

    def solve_k(
        self, groups: np.ndarray, mde: float, power: float, k_normal: np.ndarray
    ) -> np.ndarray:
        """The smallest k ≥ 2 whose simulated power reaches ``power``, per group: windows
        of consecutive k, each group's first from its normal-theory k − 2; a window whose
        first k already reaches the power starts again at half that k (not below a k known
        to fall short), one in which no k does moves up past its last k."""
        found = np.where(k_normal > MAX_K, 0, -1).astype(np.int64)  # beyond: not simulated
        lo = np.maximum(k_normal - 2, 2).astype(np.int64)
        floor = np.full(len(groups), 2, dtype=np.int64)  # k below this are known to fall short
        for _ in range(200):
            todo = np.flatnonzero(found < 0)
            if not len(todo):
                break
            # windows of about a quarter of the normal-theory k (4 to 30 sizes), narrowed
            # so that one pool() call stays within ROW_BUDGET simulated effects
            width = np.clip(np.ceil(0.25 * k_normal[todo]).astype(np.int64) + 3, 4, 30)
            rows = self.n_draws * (width * lo[todo] + width * (width - 1) // 2).sum()
            width = np.maximum(1, (width * min(1.0, ROW_BUDGET / rows)).astype(np.int64))
            width = np.minimum(width, MAX_K - lo[todo] + 1)
            spec_group = np.repeat(todo, width)
            spec_k = lo[spec_group] + (
                np.arange(len(spec_group)) - np.repeat(np.cumsum(width) - width, width)
            )
            reached = self.power(groups[spec_group], spec_k, np.full(len(spec_k), mde)) >= power
            starts = np.cumsum(width) - width
            any_hit = np.logical_or.reduceat(reached, starts)
            first_hit = (
                np.minimum.reduceat(
                    np.where(reached, np.arange(len(reached)), len(reached)), starts
                )
                - starts
            )
            below = reached[starts] & (lo[todo] > floor[todo])  # maybe smaller: search below
            hit = any_hit & ~below
            beyond = ~any_hit & (lo[todo] + width > MAX_K)
            short = ~any_hit & ~beyond  # every k of the window falls short: search above
            found[todo[hit]] = lo[todo[hit]] + first_hit[hit]
            found[todo[beyond]] = 0
            floor[todo[short]] = lo[todo[short]] + width[short]
            lo[todo[short]] = floor[todo[short]]
            lo[todo[below]] = np.maximum(floor[todo[below]], lo[todo[below]] // 2)
        return found


def _significant(low: np.ndarray, high: np.ndarray, mde: np.ndarray) -> np.ndarray:
    """A significant pooled effect in the direction of ``mde`` (NaN intervals: not)."""
    with np.errstate(invalid="ignore"):
        return np.where(mde > 0, low + mde > 0, high + mde < 0)


def _curve(
    sim: _Simulation,
    keys: pd.DataFrame,
    k: np.ndarray,
    mde: np.ndarray,
    usable: np.ndarray,
    target: float,
) -> tuple[pd.DataFrame, np.ndarray]:
    """Simulated power over 2..max(2k, 10) tasks (and at k), per usable group, at its
    ``mde``; and the power at each group's k (NaN for the others)."""
    power_at_k = np.full(len(k), np.nan)
    groups = np.flatnonzero(usable)
    if not len(groups):
        return pd.DataFrame({c: [] for c in [*keys.columns, "size", "power", "target"]}), power_at_k
    tops = np.maximum(2 * k[groups], 10)
    # at most CURVE_SIZES sizes, fewer (at least 5) so that the curve's one pool() call
    # stays within ROW_BUDGET simulated effects
    per_group = ROW_BUDGET / len(groups) / (sim.n_draws * (tops + 2) / 2)
    counts = np.clip(per_group.astype(np.int64), 5, CURVE_SIZES)
    sizes = [
        np.union1d(_sizes(int(top), int(n)), [kk])
        for top, n, kk in zip(tops, counts, k[groups], strict=True)
    ]
    counts = np.array([len(s) for s in sizes])
    spec_group = np.repeat(groups, counts)
    spec_k = np.concatenate(sizes).astype(np.int64)
    power = sim.power(spec_group, spec_k, mde[spec_group])
    at_k = spec_k == k[spec_group]
    power_at_k[spec_group[at_k]] = power[at_k]
    curve = keys.iloc[spec_group].reset_index(drop=True)
    curve["size"] = spec_k
    curve["power"] = power
    curve["target"] = target
    return curve, power_at_k


def _sizes(top: int, count: int) -> np.ndarray:
    """Every size from 2 to ``top``, or ``count`` of them spread evenly."""
    if top - 1 <= count:
        return np.arange(2, top + 1)
    return np.unique(np.round(np.linspace(2, top, count)).astype(np.int64))

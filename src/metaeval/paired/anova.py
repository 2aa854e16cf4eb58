"""All systems of a task together: the two-way ANOVA and Tukey's HSD (systems × queries).

Sakai (2018, ch. 3–5) treats a task's systems and queries as a two-way layout
without replication: the query effect is taken out of the residual variance, so
that system means are compared against the variation that remains. Each
(task, metric) uses the queries every system present on it has (a complete
block design); the others are left out with a warning.

References
----------
Sakai, T. (2018). *Laboratory Experiments in Information Retrieval*. Springer.
doi:10.1007/978-981-13-1199-4
Carterette, B. (2012). Multiple testing in statistical analysis of systems-based
information retrieval experiments. *ACM TOIS*, 30(1). doi:10.1145/2094072.2094076
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from .._distributions import studentized_range_isf, studentized_range_sf
from .._docs import fill_doc
from .._options import DEFAULT_RESAMPLES
from ..engines import any_frame, route
from ..errors import (
    DegenerateWarning,
    OptionError,
    PairingWarning,
    check_alpha,
    check_resamples,
    format_groups,
    resolve_seed,
    warn_groups,
)
from ..schema import REPLICATE
from . import _resampling as rs
from . import pushdown
from ._layout import BLOCK, Layout, layout, per_task_sum
from .replicates import REPLICATES_AVERAGED, has_replicates
from .sufficient import ZERO_TOL

__all__ = ["anova", "tukey", "TwoWay"]


# ------------------------------------------------------ two-way layout (ANOVA)
class TwoWay:
    """Systems × queries per (task, metric), on the queries every present system has.

    Arrays are indexed ``[metric, system, task]`` or ``[metric, task]``:
    ``present`` (systems with scores on the task), ``k`` (present systems),
    ``q`` (complete queries), ``means`` (system means on them), the sums of
    squares ``ss_system, ss_query, ss_residual`` and ``ms_residual`` in units
    of ``unit²`` (``unit`` = the layout's scale, 1 but for extreme scores) and
    ``complete[metric, row]``.
    """

    def __init__(self, lay: Layout):
        n_metrics, n_systems, n_rows = lay.values.shape
        n_tasks = len(lay.tasks)
        row_task = np.repeat(lay.block_task, BLOCK)
        self.row_task = row_task
        present: np.ndarray = np.asarray(lay.counts > 0)
        k = present.sum(axis=1)
        present_row = present[:, :, row_task]  # (metric, system, row)
        has = lay.mask.any(axis=1)
        self.complete: np.ndarray = np.asarray((lay.mask | ~present_row).all(axis=1) & has)
        dropped = per_task_sum(has & ~self.complete, lay.block_task, n_tasks)
        w = self.complete[:, None, :] & present_row
        # scores relative to the mean shift of the present systems (keeps sums small)
        ref = (lay.shift * present).sum(axis=1) / np.maximum(k, 1)  # (metric, task)
        offset = (lay.shift - ref[:, None, :]) / lay.scale[:, None, :]  # in the values' units
        x = np.where(w, lay.values + offset[:, :, row_task], 0.0)
        q = per_task_sum(self.complete, lay.block_task, n_tasks).astype(float)
        sys_sum = per_task_sum(x, lay.block_task, n_tasks)  # (metric, system, task)
        row_sum = x.sum(axis=1)  # (metric, row)
        cell_sq = per_task_sum((x * x).sum(axis=1), lay.block_task, n_tasks)
        row_sq = per_task_sum(row_sum**2, lay.block_task, n_tasks)
        self._finish(lay, present, q, dropped, sys_sum, row_sq, cell_sq, ref)

    @classmethod
    def of_sums(
        cls,
        names: Any,
        present: np.ndarray,
        q: np.ndarray,
        dropped: np.ndarray,
        sys_sum: np.ndarray,
        row_sq: np.ndarray,
        cell_sq: np.ndarray,
        ref: np.ndarray,
    ) -> TwoWay:
        """The same from sums computed elsewhere (a lazy table's engine): ``names`` has
        ``tasks, metrics, systems, scale`` as a :class:`Layout` does; the sums are over
        the complete queries of scores minus ``ref`` (metric, task), divided by the scale:
        per system ``sys_sum`` (metric, system, task), of the squared row sums ``row_sq``
        and of the squares ``cell_sq`` (metric, task)."""
        two = cls.__new__(cls)
        two._finish(names, present, q, dropped, sys_sum, row_sq, cell_sq, ref)
        return two

    def _finish(
        self,
        lay: Any,
        present: np.ndarray,
        q: np.ndarray,
        dropped: np.ndarray,
        sys_sum: np.ndarray,
        row_sq: np.ndarray,
        cell_sq: np.ndarray,
        ref: np.ndarray,
    ) -> None:
        self.lay = lay
        self.present = present
        self.k = present.sum(axis=1)
        self.dropped = dropped
        self.unit = lay.scale
        self.q = q
        total = sys_sum.sum(axis=1)
        k = self.k.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            correction = total**2 / (self.q * k)
            self.ss_total = cell_sq - correction
            self.ss_system = (sys_sum**2).sum(axis=1) / self.q - correction
            self.ss_query = row_sq / k - correction
            self.ss_residual = np.maximum(self.ss_total - self.ss_system - self.ss_query, 0.0)
            self.df_residual = (k - 1) * (self.q - 1)
            # a sum of squares on 0 degrees of freedom is 0 exactly (one complete query has
            # no query effect and no residual; one system no system effect): set, not left
            # to the rounding of the sums, which an engine adds in another order (its 1e-17
            # over 0 df would be an infinite mean square where pandas has 0/0 = NaN)
            data = (self.q > 0) & (k > 0)
            self.ss_system = np.where(data & (k == 1), 0.0, self.ss_system)
            self.ss_query = np.where(data & (self.q == 1), 0.0, self.ss_query)
            # and a residual below ZERO_TOL of the sum of squares it came from is rounding
            # (systems that differ by the same amount on every query): 0 in every engine
            rounding = self.ss_residual <= ZERO_TOL * cell_sq
            self.ss_residual = np.where(
                data & ((self.df_residual == 0) | rounding), 0.0, self.ss_residual
            )
            self.ms_residual = self.ss_residual / self.df_residual
            self.means = np.where(
                self.present,
                sys_sum / self.q[:, None, :] * self.unit[:, None, :] + ref[:, None, :],
                np.nan,
            )

    def frame_index(self) -> tuple[np.ndarray, np.ndarray]:
        """(metric, task) index arrays of the groups with data."""
        m, t = np.nonzero(self.k > 0)
        return m, t

    def check(self, what: str, minimum: int = 3, among: np.ndarray | None = None) -> None:
        """An OptionError for groups with fewer than ``minimum`` systems; warnings for
        queries left out and for fewer than 2 complete queries. ``among``: the
        ``[metric, task]`` groups to check (default: every group with scores)."""
        lay = self.lay
        among = self.k > 0 if among is None else among
        few = among & (self.k < minimum)
        if few.any():
            t, m = np.nonzero(few.T)  # groups listed task by task
            groups = pd.DataFrame(
                {"task": lay.tasks[t], "metric": lay.metrics[m], "systems": self.k[m, t]}
            )
            raise OptionError(
                f"{what} needs at least {minimum} systems on a task, but these (task, metric) "
                f"groups have fewer:\n{format_groups(groups)}\nUse compare() for two systems."
            )
        dropped = np.where(among, self.dropped, 0)
        if dropped.any():
            t, m = np.nonzero(dropped.T)
            groups = pd.DataFrame(
                {
                    "task": lay.tasks[t],
                    "metric": lay.metrics[m],
                    "queries_left_out": dropped[m, t],
                    "queries_used": self.q[m, t].astype(int),
                }
            )
            warn_groups(
                f"{what} uses the queries every system has; queries missing for some system were "
                "left out of {n} (task, metric) group(s)",
                groups,
                PairingWarning,
            )
        exact = among & (self.q >= 2) & (self.ss_residual == 0)
        if exact.any():
            t, m = np.nonzero(exact.T)
            warn_groups(
                f"{what}: the residual mean square is 0 in {{n}} (task, metric) group(s): "
                "every query moves every system by the same amount (exactly additive scores, "
                "copies shifted by a constant, say), so there is no noise to test against: F "
                "and Tukey's q are infinite (p = 0) and ANOVA margins 0",
                pd.DataFrame({"task": lay.tasks[t], "metric": lay.metrics[m]}),
                DegenerateWarning,
            )
        small = among & (self.q < 2)
        if small.any():
            t, m = np.nonzero(small.T)
            warn_groups(
                f"{what} gives NaN for {{n}} (task, metric) group(s) with fewer than 2 "
                "complete queries",
                pd.DataFrame({"task": lay.tasks[t], "metric": lay.metrics[m]}),
                DegenerateWarning,
            )


@any_frame(lazy=True)
@route(  # replicates are averaged per query first, in memory, a task at a time
    per_task=lambda scores, o: REPLICATE in scores.columns,
    columns=lambda scores, o: (REPLICATE,),
)  # else from sums computed in the engine (_two_way)
@fill_doc
def anova(scores: pd.DataFrame) -> pd.DataFrame:
    """Two-way ANOVA without replication (systems × queries) per task and metric.

    Each (task, metric) uses the queries that every system present on the task
    has (a complete block design); the others are left out with a warning.

    Parameters
    ----------
    {scores_lazy}

    Returns
    -------
    pandas.DataFrame
        Three rows per (task, metric), ``source`` = ``system``, ``query``,
        ``residual``, with ``ss, df, ms, f, p_value`` (F tests of the system
        and query effects against the residual mean square), and ``n_systems,
        n_queries``.

    Raises
    ------
    metaeval.OptionError
        When a (task, metric) has fewer than 3 systems (use :func:`compare`).

    Warns
    -----
    metaeval.PairingWarning
        Queries some system lacks, left out (naming the groups).
    metaeval.DegenerateWarning
        Groups with fewer than 2 complete queries (NaN), and groups whose residual is
        0 (exactly additive scores: F infinite, p 0, kept as computed).

    Examples
    --------
    >>> import metaeval
    >>> a = metaeval.load_example().meta.anova()
    >>> a.query("task == 'iris' and metric == 'accuracy'")[["source", "df", "f", "p_value"]].round(4)
         source     df        f  p_value
    6    system    4.0   1.6572   0.1584
    7     query  149.0  14.1935   0.0000
    8  residual  596.0      NaN      NaN
    """
    from scipy import stats as sps

    two = _two_way(scores)  # routed: a lazy table's sums computed in its engine
    two.check("ANOVA")
    m, t = two.frame_index()
    k, q = two.k[m, t].astype(float), two.q[m, t]
    ss = np.stack([two.ss_system[m, t], two.ss_query[m, t], two.ss_residual[m, t]], axis=1)
    df = np.stack([k - 1, q - 1, (k - 1) * (q - 1)], axis=1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ms = ss / df
        f = ms[:, :2] / ms[:, 2:]
        p = sps.f.sf(f, df[:, :2], df[:, 2:])
        unit2 = (two.unit[m, t] ** 2)[:, None]  # sums of squares in the scores' units
        ss, ms = ss * unit2, ms * unit2
    f = np.c_[f, np.full(len(m), np.nan)]
    p = np.c_[p, np.full(len(m), np.nan)]
    lay = two.lay
    return pd.DataFrame(
        {
            "task": np.repeat(lay.tasks[t].astype(str), 3),
            "metric": np.repeat(lay.metrics[m].astype(str), 3),
            "source": np.tile(["system", "query", "residual"], len(m)),
            "ss": ss.ravel(),
            "df": df.ravel(),
            "ms": ms.ravel(),
            "f": f.ravel(),
            "p_value": p.ravel(),
            "n_systems": np.repeat(k.astype(int), 3),
            "n_queries": np.repeat(q.astype(int), 3),
        }
    )


def lazy_two_way(scores: Any) -> tuple[Any, SimpleNamespace, TwoWay]:
    """The two-way layout of a lazy table (a :class:`~metaeval.engines.LazyTable`) from sums
    computed in its engine (:mod:`metaeval.paired.pushdown`), with the sums
    and the names (tasks, metrics, systems, shift, scale) it was built from."""
    none = np.zeros(0, dtype=int)
    sums = pushdown.compute(scores, none, none, anova=True)
    present = sums.count > 0
    k = present.sum(axis=1)
    unit = sums.scale  # (metric, task)
    ref = (sums.shift * present).sum(axis=1) / np.maximum(k, 1)  # (metric, task)
    # the engine's sums are of y = (score − a')/unit (a' its provisional shift): the ANOVA's
    # of x = (score − ref)/unit = y + e, e = (a' − ref)/unit, on the complete queries
    e = np.where(present, (sums.start - ref[:, None, :]) / unit[:, None, :], 0.0)
    q = sums.n_shared
    sys_sum = sums.shy + q[:, None, :] * e
    big_e, row = e.sum(axis=1), sums.shy.sum(axis=1)
    row_sq = sums.row_sq + 2 * big_e * row + q * big_e**2
    cell_sq = sums.cell_sq + 2 * (e * sums.shy).sum(axis=1) + q * (e**2).sum(axis=1)
    names = sums_names(sums)
    dropped = np.rint(sums.rows - q).astype(np.int64)
    return sums, names, TwoWay.of_sums(names, present, q, dropped, sys_sum, row_sq, cell_sq, ref)


@route(engine=lambda scores: lazy_two_way(scores)[2])
def sums_names(sums: Any) -> SimpleNamespace:
    """The names and scales of a lazy table's engine sums, as a layout gives them."""
    survey = sums.survey
    return SimpleNamespace(
        tasks=survey.tasks,
        metrics=survey.metrics,
        systems=survey.systems,
        shift=sums.shift,
        scale=sums.scale,
    )


def _two_way(scores: Any) -> TwoWay:
    """:class:`TwoWay` of a scores table: laid out in memory, or from a lazy table's sums."""
    return TwoWay(layout(scores))


def _tukey_options(options: dict[str, Any]) -> dict[str, Any]:
    """:func:`tukey`'s options checked before a lazy table is read, the seed of the
    randomized version drawn once (every task resamples from it)."""
    return dict(
        options,
        alpha=check_alpha(options["alpha"]),
        n_resamples=check_resamples(options["n_resamples"]),
        seed=resolve_seed(options["seed"]) if options["randomized"] else options["seed"],
    )


@any_frame(lazy=True)
@route(  # the randomized version and replicates: in memory, a task at a time
    check=lambda scores, o: _tukey_options(o),
    per_task=lambda scores, o: o["randomized"] or REPLICATE in scores.columns,
    columns=lambda scores, o: (REPLICATE,),
)  # else from sums computed in the engine (_two_way)
@fill_doc
def tukey(
    scores: pd.DataFrame,
    *,
    randomized: bool = False,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = None,
    alpha: float = 0.05,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Tukey's HSD for every pair of systems per task and metric, in the paired design.

    The variance is the residual mean square V_E of the two-way ANOVA (systems ×
    queries, on the queries every system has), so the query effect is taken out.
    For systems a, b with means over n queries: q = abs(m_a − m_b) / √(V_E/n),
    p = P(Q > q) for the studentized range with k systems and (k − 1)(n − 1) df,
    and the simultaneous interval (m_a − m_b) ∓ q_{1−α}·√(V_E/n).

    With ``randomized=True``, the randomized Tukey HSD of Carterette (2012):
    each resample permutes the systems' scores within every query; p is the share
    (with the +1 rule) of resamples whose largest minus smallest system mean
    reaches abs(m_a − m_b). Random numbers as in :func:`compare` (same seed, same
    p-values). It needs every system on every complete query of the task.

    Parameters
    ----------
    {scores_lazy}
    randomized : bool, default False
        Carterette's randomized Tukey HSD instead of the studentized range.
    n_resamples : int, default 10,000
        The number of random permutations (``randomized=True`` only).
    seed : int, optional
        Seed of the random draws; None draws one, stored in the result's
        ``attrs["seed"]`` so that the run can be repeated.
    alpha : float, default 0.05
        Intervals have level 1 − alpha.
    progress : bool, optional
        Report the progress of the resampling on stderr; None: only for runs longer
        than a few seconds on a terminal.

    Returns
    -------
    pandas.DataFrame
        One row per (task, metric, system pair a < b in the table's system
        order): ``system_a, system_b, diff`` (m_a − m_b), ``effect_size``
        (diff/√V_E), ``statistic`` (q), ``p_value``, ``ci_low, ci_high``
        (simultaneous, from the studentized range), ``n`` (queries), ``test``
        (``"tukey"`` or ``"randomized_tukey"``). ``attrs`` hold ``alpha``,
        ``seed``, ``n_resamples`` and, for a scores table with a ``replicate``
        column (seeds, folds), ``replicates``: each system's scores are averaged
        per query over its replicates first, and the variance between replicates
        is not part of V_E (use :func:`metaeval.effects`, which adds it).
        Rows by metric, then task, then pair, each in the table's order (a
        categorical's categories, else sorted), as in :func:`metaeval.effects`.

    Raises
    ------
    metaeval.OptionError
        When a (task, metric) has fewer than 3 systems.

    Examples
    --------
    >>> import metaeval
    >>> iris = metaeval.load_example().query("task == 'iris'")
    >>> hsd = iris.meta.tukey()
    >>> hsd.query("metric == 'accuracy'")[["system_a", "system_b", "diff", "p_value"]].head(4).round(3)
                system_a             system_b   diff  p_value
    0  gradient_boosting                  knn -0.020    0.561
    1  gradient_boosting  logistic_regression -0.027    0.265
    2  gradient_boosting          naive_bayes -0.027    0.265
    3  gradient_boosting        random_forest -0.007    0.987

    The randomized version (seeded, so the p-values are reproducible):

    >>> rand = iris.meta.tukey(randomized=True, n_resamples=1000, seed=0)
    >>> rand.query("metric == 'accuracy'")[["system_a", "system_b", "p_value"]].head(2).round(3)
                system_a             system_b  p_value
    0  gradient_boosting                  knn    0.754
    1  gradient_boosting  logistic_regression    0.394
    """
    alpha = check_alpha(alpha)
    n_resamples = check_resamples(n_resamples)
    two = _two_way(scores)  # routed: a lazy table's sums computed in its engine
    lay = two.lay
    two.check("Tukey's HSD")
    n_systems = len(lay.systems)
    a, b = np.triu_indices(n_systems, k=1)
    diff = two.means[:, a, :] - two.means[:, b, :]  # (metric, pairs, task)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = (np.sqrt(two.ms_residual / two.q) * two.unit)[:, None, :]
        stat = np.abs(diff) / scale
        k = np.broadcast_to(two.k[:, None, :].astype(float), diff.shape)
        df = np.broadcast_to(two.df_residual[:, None, :], diff.shape)
        ok = np.isfinite(stat) & (df > 0)
        p = np.full(diff.shape, np.nan)
        p[ok] = studentized_range_sf(stat[ok], k[ok], df[ok])
        crit = np.full(diff.shape, np.nan)
        crit[ok] = studentized_range_isf(alpha, k[ok], df[ok])  # once per (systems, df)
        effect_size = diff / (np.sqrt(two.ms_residual) * two.unit)[:, None, :]
    test = "tukey"
    if randomized:
        seed = resolve_seed(seed)
        p = _randomized_tukey(two, np.abs(diff), n_resamples, seed, progress)
        test = "randomized_tukey"
    keep = two.present[:, a, :] & two.present[:, b, :]
    m, t, pair = np.nonzero(keep.transpose(0, 2, 1))  # by metric, task, pair
    frame = pd.DataFrame(
        {
            "task": lay.tasks[t].astype(str),
            "metric": lay.metrics[m].astype(str),
            "system_a": lay.systems[a[pair]].astype(str),
            "system_b": lay.systems[b[pair]].astype(str),
            "test": test,
            "n": two.q[m, t].astype(int),
            "diff": diff[m, pair, t],
            "effect_size": effect_size[m, pair, t],
            "statistic": stat[m, pair, t],
            "p_value": p[m, pair, t],
            "ci_low": diff[m, pair, t] - crit[m, pair, t] * scale[m, 0, t],
            "ci_high": diff[m, pair, t] + crit[m, pair, t] * scale[m, 0, t],
        }
    )
    frame.attrs.update(
        alpha=alpha,
        seed=seed if randomized else None,
        n_resamples=n_resamples if randomized else None,
    )
    if has_replicates(scores):
        frame.attrs["replicates"] = REPLICATES_AVERAGED
    return frame


def _randomized_tukey(
    two: TwoWay, abs_diff: np.ndarray, n_resamples: int, seed: int, progress
) -> np.ndarray:
    """Carterette's randomized Tukey HSD p-values, ``(metric, pairs, task)``."""
    lay = two.lay
    n_metrics, n_systems, _ = lay.values.shape
    count = np.zeros_like(abs_diff)
    complete_all = np.asarray(two.present.all(axis=1))  # every system on the task
    missing = (two.k > 0) & ~complete_all
    if missing.any():
        m, t = np.nonzero(missing)
        warn_groups(
            "The randomized Tukey HSD needs every system on every task; it gives NaN for",
            pd.DataFrame({"task": lay.tasks[t], "metric": lay.metrics[m]}),
            DegenerateWarning,
        )
    task_names = [str(x) for x in lay.tasks]
    batches = list(rs.task_batches(lay))
    steps = sum(
        len(rs.chunks(n_resamples, len(bt.tasks) * bt.rows.shape[1] * n_systems * 8))
        for bt in batches
    )
    tracker = rs.Progress(steps, "randomized Tukey HSD", progress)
    for batch in batches:
        width = batch.rows.shape[1]
        inside = batch.rows >= 0
        r = np.where(inside, batch.rows, 0)
        task = batch.tasks
        # complete-query scores (metric, tasks, width, systems), 0 elsewhere
        unit = two.unit[:, task]  # (metric, tasks): the values' units
        ref = (lay.shift[:, :, task] / unit[:, None, :])[
            :, :, :, None
        ]  # (metric, systems, tasks, 1)
        x = lay.values[:, :, r] + ref
        use = two.complete[:, r] & inside  # (metric, tasks, width)
        x = np.where(use[:, None], x, 0.0).transpose(0, 2, 3, 1)
        q = two.q[:, task]  # (metric, tasks)
        names = [task_names[i] for i in task]
        for b0, b1 in rs.chunks(n_resamples, len(task) * width * n_systems * 8):
            perm = rs.permutations(
                seed, names, batch.n, width, n_systems, b0, b1
            )  # (tasks, B, width, S)
            shuffled = np.take_along_axis(
                x[:, :, None], perm[None], axis=-1
            )  # (metric, tasks, B, width, S)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = shuffled.sum(axis=3) / q[:, :, None, None]
            spread = mean.max(axis=-1) - mean.min(axis=-1)  # (metric, tasks, B)
            tol = 1e-9 * np.abs(mean).max(axis=-1)
            observed = (abs_diff[:, :, task] / unit[:, None, :])[..., None]
            hit = spread[:, None] >= observed - tol[:, None]  # (metric, pairs, tasks, B)
            count[:, :, task] += hit.sum(axis=-1)
            tracker.step()
    tracker.close()
    p = (1 + count) / (1 + n_resamples)
    return np.where(complete_all[:, None, :] & np.isfinite(abs_diff), p, np.nan)

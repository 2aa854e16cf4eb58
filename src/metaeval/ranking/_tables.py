"""The per-task array that every leaderboard starts from, and the checks of its arguments.

A system's score on a task is its mean ``value`` over the task's queries, laid out as a
``(metric, task, system)`` array; :mod:`._aggregate` (the leaderboards), :mod:`._friedman`
(the rank tests) and :mod:`._intervals` (the rank intervals) share it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import OptionError, PairingError, format_groups, quote_list
from ..schema import prepare_scores

__all__ = [
    "scores_of_metrics",
    "select_metrics",
    "metric_directions",
    "task_means",
    "check_complete",
    "task_ranks",
    "tie_tolerance",
    "settle_ties",
]


# ----------------------------------------------------------------- arguments
def select_metrics(available: Sequence[str], metric: str | Sequence[str] | None) -> list[str]:
    """The selected metrics in the table's order of first appearance."""
    if metric is None:
        return list(available)
    wanted = [metric] if isinstance(metric, str) else list(metric)
    if not wanted:
        raise OptionError("`metric` is an empty list; pass None to rank on every metric.")
    unknown = [m for m in wanted if m not in set(available)]
    if unknown:
        raise OptionError(
            f"Unknown metric(s) {quote_list(unknown)} in `metric`; the table has the metrics "
            f"{quote_list(list(available))}."
        )
    chosen = set(wanted)
    return [m for m in available if m in chosen]


def scores_of_metrics(
    scores: pd.DataFrame, metric: str | Sequence[str] | None, higher_is_better: Any
) -> tuple[pd.DataFrame, dict[str, bool]]:
    """The checked scores of the selected metrics and each metric's direction."""
    scores = prepare_scores(scores)  # an empty table is a SchemaError there
    available = [str(m) for m in pd.unique(scores["metric"].astype(str))]
    selected = select_metrics(available, metric)
    if len(selected) < len(available):
        scores = scores[scores["metric"].astype(str).isin(selected).to_numpy()]
    return scores, metric_directions(higher_is_better, selected)


def metric_directions(higher_is_better: Any, metrics: Sequence[str]) -> dict[str, bool]:
    """``higher_is_better`` as one bool per metric."""
    if isinstance(higher_is_better, bool | np.bool_):
        return dict.fromkeys(metrics, bool(higher_is_better))
    if not isinstance(higher_is_better, Mapping):
        raise OptionError(
            "`higher_is_better` must be a bool or a mapping {metric: bool}, "
            f"but {higher_is_better!r} was passed."
        )
    missing = [m for m in metrics if m not in higher_is_better]
    if missing:
        raise OptionError(
            f"`higher_is_better` has no entry for the metric(s) {quote_list(missing)}; "
            "give a bool for every metric ranked."
        )
    bad = {
        m: higher_is_better[m]
        for m in metrics
        if not isinstance(higher_is_better[m], bool | np.bool_)
    }
    if bad:
        raise OptionError(f"The values of `higher_is_better` must be bools, but got {bad!r}.")
    return {m: bool(higher_is_better[m]) for m in metrics}


# ----------------------------------------------------------------- equal means
def tie_tolerance(scale: np.ndarray | float, depth: np.ndarray | float) -> np.ndarray:
    """How far apart two computed means may be when their exact values are equal.

    A mean of values of magnitude at most ``scale`` carries the rounding error of its sum,
    at most about ``depth`` units in the last place of ``scale`` (``depth`` is the number
    of additions one value goes through: log₂ n + 16 for numpy's pairwise sum of n values,
    n for a sum in sequence), plus the error of the decimal values themselves (half a
    unit each). Two means differ by at most twice that; the tolerance is 4 (depth + 1)
    units, a safety factor of 2 over the bound. At 10⁶ queries of scores in [0, 1] it is
    3e-14, far below the 1e-6 that one query changes a mean by.
    """
    eps = np.finfo(float).eps
    return 4.0 * (np.asarray(depth, dtype=float) + 1.0) * eps * np.asarray(scale, dtype=float)


def settle_ties(x: np.ndarray, tol: np.ndarray | float) -> np.ndarray:
    """``x`` with the values along the last axis that lie within ``tol`` of each other made
    exactly equal: the one rule by which every ranking of means in metaeval tells a tie.

    Along the last axis (the systems), the values sorted, a run of neighbours each within
    ``tol`` of the next becomes the run's smallest value; NaN stays NaN. The result does
    not depend on the order of the values, so two systems whose means are equal in exact
    arithmetic (0.7 and 0.1 against 0.4 and 0.4: 0.39999999999999997 and 0.4 in floats)
    tie whatever the order of the rows, and every ranking that reads the settled means
    (Friedman's test, the post-hoc tests, the leaderboards, the rank intervals) sees the
    same tie. ``tol`` broadcasts against ``x[..., :1]`` (see :func:`tie_tolerance`).

    Examples
    --------
    >>> import numpy as np
    >>> from metaeval.ranking._tables import settle_ties
    >>> settle_ties(np.array([[0.4, (0.7 + 0.1) / 2, 0.2]]), 1e-15).tolist()
    [[0.39999999999999997, 0.39999999999999997, 0.2]]
    """
    x = np.asarray(x, dtype=float)
    if x.shape[-1] < 2:
        return x.copy()
    order = np.argsort(x, axis=-1, kind="stable")  # NaN last
    s = np.take_along_axis(x, order, axis=-1)
    with np.errstate(invalid="ignore"):
        apart = ~(np.diff(s, axis=-1) <= np.asarray(tol, dtype=float))  # NaN gaps: apart
    pos = np.arange(x.shape[-1])
    start = np.concatenate([np.ones_like(apart[..., :1]), apart], axis=-1)
    first = np.maximum.accumulate(np.where(start, pos, 0), axis=-1)
    out = np.empty_like(x)
    np.put_along_axis(out, order, np.take_along_axis(s, first, axis=-1), axis=-1)
    return out


# ----------------------------------------------------------------- per-task array
def task_means(
    scores: pd.DataFrame,
) -> tuple[np.ndarray, pd.Index, pd.Index, pd.Index]:
    """Mean value per ``(metric, task, system)`` as an array, NaN where absent.

    The tasks come in sorted order (metrics and systems in the table's order of
    first appearance), and each cell's values are summed in increasing order
    (numpy's pairwise sum), so equal data give exactly equal means whatever the
    order of the rows. Means that are equal in exact arithmetic but not in floats
    (0.7 and 0.1 against 0.4 and 0.4) are then made equal within each (metric,
    task) by :func:`settle_ties`, with the :func:`tie_tolerance` of the task's
    largest absolute value and of its largest number of queries: every ranking
    of these means (Friedman, post-hoc tests, leaderboards, rank intervals)
    sees the same ties. A settled mean moves by less than the tolerance
    (about 1e-14 of the values' scale).
    """
    m_codes, metrics = pd.factorize(scores["metric"], sort=False)
    t_codes, tasks = pd.factorize(scores["task"], sort=True)
    s_codes, systems = pd.factorize(scores["system"], sort=False)
    value = scores["value"].to_numpy(dtype=float)
    shape = (len(metrics), len(tasks), len(systems))
    cell = np.ravel_multi_index((m_codes, t_codes, s_codes), shape)
    # by cell, then by value: a sort by value (equal values are interchangeable, so an
    # unstable one does), then a stable one by cell, a radix sort on 16-bit codes
    order = np.argsort(value)
    small = np.uint16 if cell.size == 0 or np.prod(shape) <= 1 << 16 else np.int64
    order = order[np.argsort(cell[order].astype(small), kind="stable")]
    cell, value = cell[order], value[order]
    start = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
    count = np.diff(np.r_[start, len(value)])
    x = np.full(shape, np.nan)
    x.flat[cell[start]] = np.add.reduceat(value, start) / count
    if len(start):
        scale, depth = np.zeros(shape), np.zeros(shape)
        scale.flat[cell[start]] = np.maximum.reduceat(np.abs(value), start)
        depth.flat[cell[start]] = np.log2(count) + 16
        x = settle_ties(
            x, tie_tolerance(scale.max(axis=2, keepdims=True), depth.max(axis=2, keepdims=True))
        )
    return x, pd.Index(metrics), pd.Index(tasks), pd.Index(systems)


def check_complete(
    x: np.ndarray,
    metrics: pd.Index,
    tasks: pd.Index,
    systems: pd.Index,
    caller: str = "leaderboard",
) -> tuple[np.ndarray, np.ndarray]:
    """Masks of the systems and tasks of each metric; raise if a cell is missing."""
    present = ~np.isnan(x)
    sys_in = present.any(axis=1)  # (metric, system)
    task_in = present.any(axis=2)  # (metric, task)
    missing = task_in[:, :, None] & sys_in[:, None, :] & ~present
    if missing.any():
        m, t, s = np.nonzero(missing)
        groups = pd.DataFrame(
            {"metric": metrics[m], "task": tasks[t], "system": systems[s]}
        ).astype(object)
        raise PairingError(
            "Every system needs a score on every task of a metric to be ranked, but "
            f"{len(groups)} (metric, task, system) combination(s) have no rows:\n"
            f"{format_groups(groups)}\n"
            "Filter the table to the systems and tasks that have scores everywhere "
            f"(e.g. scores[scores['system'].isin([...])]) and call {caller}() again."
        )
    n_sys = sys_in.sum(axis=1)
    few = n_sys < 2
    if few.any():
        raise PairingError(
            f"{caller}() needs at least 2 systems, but the metric(s) "
            f"{quote_list(list(metrics[few]))} have {quote_list(n_sys[few].tolist())} system(s)."
        )
    return sys_in, task_in


def task_ranks(x: np.ndarray, sign: np.ndarray) -> np.ndarray:
    """Average ranks along the system axis, 1 = best; NaN where a cell is absent."""
    present = ~np.isnan(x)
    # Absent cells sort after every present one, so they do not shift its rank.
    key = np.where(present, -sign[:, None, None] * np.nan_to_num(x), np.inf)
    from scipy.stats import rankdata

    ranks = rankdata(key, method="average", axis=-1)
    return np.where(present, ranks, np.nan)

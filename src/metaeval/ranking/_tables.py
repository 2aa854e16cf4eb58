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
    "scores_of_metrics", "select_metrics", "metric_directions", "task_means", "check_complete",
    "task_ranks",
]  # fmt: skip


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


# ----------------------------------------------------------------- per-task array
def task_means(
    scores: pd.DataFrame,
) -> tuple[np.ndarray, pd.Index, pd.Index, pd.Index]:
    """Mean value per ``(metric, task, system)`` as an array, NaN where absent.

    The tasks come in sorted order (metrics and systems in the table's order of
    first appearance), and each cell's values are summed in increasing order:
    equal data give exactly equal means and equal sums over tasks, whatever the
    order of the rows (a sum in row order can differ in the last bit, and two
    systems with the same per-query scores would then not tie).
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

"""Rank aggregation over tasks: leaderboards from a scores table.

A system's score on a task is its mean ``value`` over the task's queries. The
per-task scores are laid out as a ``(metric, task, system)`` array (NaN where a
system or task does not belong to a metric) and ranked along the system axis;
every aggregation rule below works on that array (pairwise counts on a
``(metric, task, system, system)`` broadcast) for all metrics at once. Only the
Kemeny–Young consensus, an optimisation over orders, runs metric by metric.

The public :func:`metaeval.leaderboard` (the workflows room) checks its options, calls
:func:`aggregate`, fills the pooled effects for ``aggregation="pooled"`` and ranks the board
with :func:`rank_board`; the references are in its docstring.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..errors import PairingError, quote_list
from ._tables import (
    check_complete,
    metric_directions,
    scores_of_metrics,
    select_metrics,
    task_means,
    task_ranks,
)

__all__ = [
    "KEMENY_EXACT_MAX",
    "Board",
    "aggregate",
    "rank_board",
    "scores_of_metrics",
    "select_metrics",
    "metric_directions",
    "task_means",
    "check_complete",
    "task_ranks",
]

KEMENY_EXACT_MAX = 16
"""Up to this many systems the Kemeny consensus is exact (dynamic programme over
subsets, O(2ⁿ n) time and memory); above it a local search is used."""

# Whether a larger score is better, per aggregation ("pooled" follows higher_is_better).
_SCORE_DESCENDING = {"borda": True, "mean_rank": False, "copeland": True, "kemeny": False}

_BIG = np.iinfo(np.int64).max // 4  # "impossible" in the integer Kemeny programme


# ----------------------------------------------------------------- Kemeny
def _kemeny_exact(p: np.ndarray) -> tuple[list[int], int]:
    """Exact Kemeny order of systems ``0..n-1`` by dynamic programming over subsets.

    ``p[b, s]`` counts the tasks ranking b strictly above s. Placing s right
    after the set S costs c(S, s) = Σ_{b ∉ S∪{s}} p[b, s] (the systems put
    below s that tasks rank above it). With h(S) the least cost of ordering the
    systems outside S below S, h(all) = 0 and h(S) = min_{s ∉ S} c(S, s) +
    h(S ∪ {s}); the order is rebuilt from the top, taking the lowest-index
    system among the optimal choices (systems come in tie-break order).
    """
    n = p.shape[0]
    size = 1 << n
    bits = (1 << np.arange(n)).astype(np.int64)
    above = np.zeros((size, n), dtype=np.int64)  # Σ_{b ∈ S} p[b, s]
    count = np.zeros(size, dtype=np.int64)  # |S|
    for i in range(n):  # subsets with top bit i = subsets without it + {i}
        above[1 << i : 1 << (i + 1)] = above[: 1 << i] + p[i]
        count[1 << i : 1 << (i + 1)] = count[: 1 << i] + 1
    cost = p.sum(axis=0)[None, :] - above  # c(S, s), valid for s ∉ S (p[s, s] = 0)
    masks = np.arange(size, dtype=np.int64)
    h = np.zeros(size, dtype=np.int64)
    for k in range(n - 1, -1, -1):  # sets of size k, from the largest down
        layer = masks[count == k]
        free = (layer[:, None] & bits[None, :]) == 0
        cand = np.where(free, cost[layer] + h[layer[:, None] | bits[None, :]], _BIG)
        h[layer] = cand.min(axis=1)
    order: list[int] = []
    placed = 0
    for _ in range(n):
        free = (placed & bits) == 0
        cand = np.where(free, cost[placed] + h[placed | bits], _BIG)
        s = int(np.argmin(cand))  # first optimum: the best by the tie-break order
        order.append(s)
        placed |= 1 << s
    return order, int(h[0])


def _order_cost(p: np.ndarray, order: Sequence[int]) -> int:
    """Σ_{i<j} p[o_j, o_i]: (task, pair) disagreements of an order."""
    po = p[np.ix_(order, order)]
    return int(np.tril(po, -1).sum())


def _kemeny_local(p: np.ndarray) -> tuple[list[int], int]:
    """Local search from the tie-break (Borda) order with single-system moves.

    A move takes a system out and puts it back where it causes the fewest
    disagreements (the topmost such place); it is made only when that lowers
    the cost, so the search ends (the cost is a non-negative integer) at an
    order that no single move improves.
    """
    order = list(range(p.shape[0]))
    improved = True
    while improved:
        improved = False
        for x in list(order):
            rest = [y for y in order if y != x]
            # x inserted before rest[q]: disagreements with the systems above it
            # (tasks rank x above them) plus those below it (tasks rank them above x).
            up = np.concatenate([[0], np.cumsum(p[x, rest])])
            down = np.concatenate([[0], np.cumsum(p[rest, x])])
            contrib = up + (down[-1] - down)
            here = order.index(x)
            best = int(np.argmin(contrib))
            if contrib[best] < contrib[here]:
                order = rest[:best] + [x] + rest[best:]
                improved = True
    return order, _order_cost(p, order)


def _kemeny(
    wins: np.ndarray, borda: np.ndarray, sys_in: np.ndarray, names: pd.Index
) -> tuple[np.ndarray, list[int], list[bool]]:
    """Consensus positions (metric, system), the cost and exactness per metric."""
    position = np.full(sys_in.shape, np.nan)
    costs: list[int] = []
    exact: list[bool] = []
    for m in range(sys_in.shape[0]):  # one optimisation per metric
        members = np.flatnonzero(sys_in[m])
        # Tie-break order: Borda score (descending), then system name.
        tie = sorted(members, key=lambda s: (-borda[m, s], str(names[s])))
        p = wins[m][np.ix_(tie, tie)]
        is_exact = len(tie) <= KEMENY_EXACT_MAX
        order, cost = _kemeny_exact(p) if is_exact else _kemeny_local(p)
        position[m, np.asarray(tie)[order]] = np.arange(1, len(order) + 1)
        costs.append(cost)
        exact.append(is_exact)
    return position, costs, exact


# ----------------------------------------------------------------- the board
class Board(NamedTuple):
    """A leaderboard before its ranks (:func:`aggregate`), for :func:`rank_board`."""

    scores: pd.DataFrame
    """The checked scores of the ranked metrics."""
    frame: pd.DataFrame
    """One row per ``(metric, system)``: ``metric, system, score, rank`` (0 until
    :func:`rank_board`), ``n_tasks, mean``; ``score`` is 0 for ``"pooled"`` (the caller
    fills it)."""
    attrs: dict[str, Any]
    """``aggregation``, ``higher_is_better`` and, for Kemeny, ``kemeny_exact, kemeny_cost``."""
    metric_of_row: np.ndarray
    """The code of each row's metric (the metrics in the table's order)."""
    higher_is_better: np.ndarray
    """Whether a larger value is better on each row's metric."""


def aggregate(
    scores: pd.DataFrame,
    *,
    aggregation: str,
    metric: str | Sequence[str] | None,
    higher_is_better: bool | Mapping[str, bool],
    control: str | None,
) -> Board:
    """The leaderboard of each metric by a rule over the per-task scores (see
    :func:`metaeval.leaderboard`), before its ranks; ``"pooled"`` leaves ``score`` at 0 for
    the caller. ``control``, when given, must be a system of the table."""
    scores, directions = scores_of_metrics(scores, metric, higher_is_better)

    x, metrics, _tasks, systems = task_means(scores)
    metrics = metrics.astype(str)
    systems = systems.astype(str)
    sys_in, task_in = check_complete(x, metrics, _tasks.astype(str), systems)
    if control is not None and control not in set(systems):
        raise PairingError(
            f"The control {control!r} is not a system of the table; the systems are "
            f"{quote_list(list(systems))}."
        )
    n_sys = sys_in.sum(axis=1)
    n_tasks = task_in.sum(axis=1)
    sign = np.array([1.0 if directions[m] else -1.0 for m in metrics])

    ranks = task_ranks(x, sign)  # (metric, task, system)
    borda = np.nansum(n_sys[:, None, None] - ranks, axis=1)  # (metric, system)
    mean = np.nansum(x, axis=1) / n_tasks[:, None]
    attrs: dict[str, Any] = {"aggregation": aggregation, "higher_is_better": directions}

    if aggregation == "borda":
        score = borda
    elif aggregation == "mean_rank":
        score = np.nansum(ranks, axis=1) / n_tasks[:, None]
    elif aggregation in ("copeland", "kemeny"):
        # wins[m, a, b]: tasks ranking a strictly above b (NaN compares False).
        wins = (ranks[..., :, None] < ranks[..., None, :]).sum(axis=1)
        if aggregation == "copeland":
            score = np.sign(wins - wins.transpose(0, 2, 1)).sum(axis=-1).astype(float)
        else:
            score, costs, exact = _kemeny(wins, borda, sys_in, systems)
            attrs["kemeny_exact"] = all(exact)
            attrs["kemeny_cost"] = dict(zip(metrics, costs, strict=True))
    else:
        score = np.zeros_like(mean)  # filled from the pooled table by the caller

    m_idx, s_idx = np.nonzero(sys_in)
    frame = pd.DataFrame(
        {
            "metric": metrics[m_idx].to_numpy(dtype=object),
            "system": systems[s_idx].to_numpy(dtype=object),
            "score": score[m_idx, s_idx].astype(float),
            "rank": 0,
            "n_tasks": n_tasks[m_idx].astype(np.int64),
            "mean": mean[m_idx, s_idx],
        }
    )
    return Board(scores, frame, attrs, m_idx, sign[m_idx] > 0)


def rank_board(board: Board, descending: np.ndarray | None = None) -> pd.DataFrame:
    """The leaderboard with its competition ranks (NaN scores last), sorted by metric, rank
    and system; ``descending`` says, per row, whether a larger score is better (by default
    as the aggregation's score reads)."""
    frame = board.frame
    if descending is None:
        descending = np.full(len(frame), _SCORE_DESCENDING[board.attrs["aggregation"]])
    m_idx = board.metric_of_row
    # Competition ranks; flipping the sign makes every direction "larger is better".
    oriented = pd.Series(np.where(descending, frame["score"], -frame["score"]))
    frame["rank"] = (
        oriented.groupby(m_idx)
        .rank(method="min", ascending=False, na_option="bottom")
        .astype(np.int64)
        .to_numpy()
    )
    frame = frame.assign(_m=m_idx).sort_values(["_m", "rank", "system"], kind="stable")
    frame = frame.drop(columns="_m").reset_index(drop=True)
    frame.attrs = board.attrs
    return frame

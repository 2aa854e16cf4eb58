"""The Bayesian signed-rank test over tasks (Benavoli et al. 2014, 2017), for many pairs at once.

The per-task differences z_1 … z_N of a treatment and its control get a Dirichlet
process posterior with a prior pseudo-observation at 0 of strength s; a posterior
draw is a weight vector w ~ Dirichlet(s, 1, …, 1) over {0, z_1, …, z_N}, and the
draw's probabilities that the treatment is worse, practically equivalent or
better are

    θ_worse  = Σ_i Σ_j w_i w_j H(−2r − (z_i + z_j)),
    θ_better = Σ_i Σ_j w_i w_j H(z_i + z_j − 2r),       θ_equiv = 1 − θ_worse − θ_better,

with H the Heaviside step (½ at 0) and r the half-width of the region of practical
equivalence (ROPE). baycomp evaluates the double sums as an (N + 1)² outer product
per draw. Here the differences are sorted once per pair: then z_i + z_j > 2r holds
for a suffix of j, whose length is counted once per pair, and each draw's double
sum is a cumulative sum of its weights, O(N) instead of O(N²). The draws are
shared by every pair of a metric (the same weights over its tasks), generated in
blocks from streams keyed by the seed, the metric and the block, and given to the
metric's tasks in sorted order of their names, so that a pair's probabilities do not
depend on which other pairs are computed nor on the order of the table's rows.

References
----------
Benavoli, A., Corani, G., Mangili, F., Zaffalon, M., & Ruggeri, F. (2014). A Bayesian
Wilcoxon signed-rank test based on the Dirichlet process. *ICML 2014*, PMLR 32(2),
1026–1034.
Benavoli, A., Corani, G., Demšar, J., & Zaffalon, M. (2017). Time for a change: a
tutorial for comparing multiple classifiers through Bayesian analysis. *Journal of
Machine Learning Research*, 18(77), 1–36.
"""

from __future__ import annotations

import functools
import os
import zlib
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd

from ..engines import any_frame
from ..errors import OptionError, PairingError, quote_list, resolve_seed
from ._friedman import task_scores
from .results import ROW_KEY, BayesResult

__all__ = ["bayes_signed_rank", "BayesResult", "SAMPLE_BLOCK"]

SAMPLE_BLOCK = 1024
"""Posterior draws per random stream (and per step of the computation)."""

_CHUNK_BYTES = 64 * 2**20
_THREADS = min(4, os.cpu_count() or 1)
_OUTCOMES = ("worse", "equivalent", "better")


def _weights(seed: int, metric: str, block: int, size: int, n: int, prior: float) -> np.ndarray:
    """``size`` Dirichlet(prior, 1, …, 1) draws over the pseudo-observation and n tasks."""
    key = zlib.crc32(metric.encode("utf-8"))
    gen = np.random.Generator(
        np.random.Philox(np.random.SeedSequence(seed, spawn_key=(key, block)))
    )
    g = np.empty((size, n + 1))
    g[:, 0] = gen.standard_gamma(prior, size)
    g[:, 1:] = gen.standard_exponential((size, n))  # Gamma(1)
    return g / g.sum(axis=1, keepdims=True)


def _check(rope: Any, prior: Any, n_draws: Any, threshold: Any) -> tuple[float, float, int, float]:
    def number(name: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
            raise OptionError(f"`{name}` must be a number, not {value!r}.")
        return float(value)

    rope, prior, threshold = (
        number("rope", rope),
        number("prior", prior),
        number("threshold", threshold),
    )
    if not (np.isfinite(rope) and rope >= 0):
        raise OptionError(
            f"`rope` must be a finite number ≥ 0 (on the metric's scale), not {rope!r}."
        )
    if not (np.isfinite(prior) and prior > 0):
        raise OptionError(
            f"`prior` (the prior's strength) must be a finite number > 0, not {prior!r}."
        )
    if not 0.5 < threshold <= 1:
        raise OptionError(f"`threshold` must be in (0.5, 1], not {threshold!r}.")
    if isinstance(n_draws, bool) or not isinstance(n_draws, int | np.integer) or n_draws < 1:
        raise OptionError(f"`n_draws` must be a positive integer, not {n_draws!r}.")
    return rope, prior, int(n_draws), threshold


@any_frame
def bayes_signed_rank(
    scores: pd.DataFrame,
    control: str,
    *,
    treatment: str | Sequence[str] | None = None,
    rope: float = 0.01,
    prior: float = 0.5,
    n_draws: int = 50_000,
    seed: int | None = None,
    threshold: float = 0.95,
    metric: str | Sequence[str] | None = None,
    higher_is_better: bool | Mapping[str, bool] = True,
    samples: bool = False,
) -> BayesResult:
    """Bayesian signed-rank test over tasks: P(worse), P(practically equivalent), P(better).

    For every treatment and metric, the posterior probabilities that the
    treatment is worse than the control, practically equivalent to it (their
    difference within the ROPE, ±``rope``), or better, from the per-task
    differences of their scores (Benavoli et al. 2017, sec. 4.2; baycomp's
    ``SignedRankTest``).

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table, as for :func:`friedman` (per-task means of the
        per-query scores, or one row per task without ``query``).
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    control : str
        The control system.
    treatment : str or list of str, optional
        The systems compared with the control; None: every other system.
    rope : float, default 0.01
        Half-width of the region of practical equivalence, on the metric's
        scale: differences within ±rope do not matter in practice (0.01 is one
        point of accuracy or nDCG). 0 gives no region: prob_equivalent is 0.
    prior : float, default 0.5
        Strength of the Dirichlet process prior, a pseudo-observation at 0
        (baycomp's default).
    n_draws : int, default 50000
        Monte-Carlo draws from the posterior; the probabilities have a Monte-Carlo
        standard error of at most 0.5/√n_draws (0.0022 at the default).
    seed : int, optional
        Seeds the draws; None draws fresh entropy (stored in the table's
        ``attrs["seed"]``).
        The same seed gives the same probabilities for a pair, whichever other
        pairs are computed with it and whatever the order of the rows (the
        draws go to the tasks in sorted order of their names).
    threshold : float, default 0.95
        The posterior probability a ``decision`` needs.
    metric, higher_is_better
        As for :func:`friedman`; with ``higher_is_better=False`` "better" means
        lower.
    samples : bool, default False
        Keep the draws: the result's ``samples``, each row's ``(n_draws, 3)``
        array of the draws' (θ_worse, θ_equivalent, θ_better), keyed by the
        row's (metric, treatment, control), for ``.plot()``
        (:func:`metaeval.plot.simplex`; 24 bytes per draw and row).

    Returns
    -------
    BayesResult
        Always a :class:`~metaeval.ranking.BayesResult`, with ``samples`` None unless
        ``samples=True``. Its ``table``: one row per (metric, treatment),
        treatments in the table's order: ``metric, treatment, control``;
        ``prob_worse, prob_equivalent, prob_better`` (the share of draws in
        which that outcome is the most probable, as baycomp's ``probs()``; they
        sum to 1); ``decision`` ("better", "worse", "equivalent" when its
        probability reaches ``threshold``, else "inconclusive"); ``mean_diff``
        (the mean per-task difference treatment − control, oriented so that
        positive is better) and ``n_tasks``. The table's ``attrs``: ``rope,
        prior, n_draws, seed, threshold, higher_is_better``. ``.plot(row)``
        draws a row's posterior in the simplex.

    Raises
    ------
    metaeval.OptionError
        Bad ``rope``, ``prior``, ``n_draws``, ``threshold`` or ``seed``; an
        unknown treatment.
    metaeval.PairingError
        As :func:`friedman`; a control or treatment that is not a system of a
        metric.

    Notes
    -----
    The ROPE is what makes the test answer the practical question: without it
    a posterior puts all its mass on "worse" or "better", and with many tasks
    any tiny difference becomes certain. With it, two systems can be shown
    *equivalent*, which no null-hypothesis test can do (Benavoli et al. 2017,
    sec. 3). Draws of the posterior are computed in O(N) per pair, not O(N²)
    (see the module's documentation); ties z_i + z_j = ±2r count one half, as
    in baycomp.

    Examples
    --------
    >>> import metaeval
    >>> from metaeval.ranking import bayes_signed_rank
    >>> auc = metaeval.datasets.load_demsar()
    >>> res = bayes_signed_rank(auc, control="C4.5", rope=0.01, seed=1)
    >>> cols = ["treatment", "prob_worse", "prob_equivalent", "prob_better", "decision"]
    >>> res.table[cols].round(2)
       treatment  prob_worse  prob_equivalent  prob_better      decision
    0     C4.5+m        0.00             0.33         0.67  inconclusive
    1    C4.5+cf        0.12             0.69         0.19  inconclusive
    2  C4.5+m+cf        0.00             0.03         0.97        better
    """
    rope, prior, n_draws, threshold = _check(rope, prior, n_draws, threshold)
    seed = resolve_seed(seed)
    if not isinstance(control, str):
        raise OptionError(f"`control` must be one system name (a str), not {control!r}.")
    data = task_scores(
        scores, metric=metric, higher_is_better=higher_is_better, caller="bayes_signed_rank"
    )
    systems = list(data.systems)
    if control not in systems:
        raise PairingError(
            f"The control {control!r} is not a system of the table; the systems are "
            f"{quote_list(systems)}."
        )
    c = systems.index(control)
    wanted = set(systems) - {control}
    if treatment is not None:
        asked = [treatment] if isinstance(treatment, str) else list(treatment)
        unknown = [t for t in asked if t not in set(systems)]
        if unknown or not asked:
            raise OptionError(
                f"Unknown treatment(s) {quote_list(unknown)}; the systems are {quote_list(systems)}."
            )
        wanted = set(asked) - {control}
    lacking = ~data.sys_in[:, c]
    if lacking.any():
        raise PairingError(
            f"The control {control!r} is not a system of the metric(s) "
            f"{quote_list(list(data.metrics[lacking]))}."
        )
    chosen = np.array([s in wanted for s in systems])
    m, t = np.nonzero(data.sys_in & chosen[None, :])
    n_rows, n_max = len(m), int(data.n.max())

    # per row: the differences on its metric's tasks, first, padded with +inf (weight 0)
    first = np.argsort(~data.task_in, axis=1, kind="stable")[:, :n_max]  # (metric, n_max)
    cols = first[m]
    diff = data.sign[m, None] * (data.x[m[:, None], cols, t[:, None]] - data.x[m[:, None], cols, c])
    valid = np.arange(n_max)[None, :] < data.n[m][:, None]
    z = np.concatenate([np.zeros((n_rows, 1)), np.where(valid, diff, np.inf)], axis=1)
    perm = np.argsort(z, axis=1, kind="stable")
    zs = np.take_along_axis(z, perm, axis=1)
    width = n_max + 1

    # counts per row and position i of the sorted differences (one O(N²) pass per pair)
    above, above_eq, below, below_eq = (np.zeros((n_rows, width), dtype=np.int64) for _ in range(4))
    step = max(1, _CHUNK_BYTES // (8 * width * width))
    for r0 in range(0, n_rows, step):  # blocks of rows of bounded memory
        s = zs[r0 : r0 + step, :, None] + zs[r0 : r0 + step, None, :]
        above[r0 : r0 + step] = (s <= 2 * rope).sum(axis=2)  # z_i + z_j > 2r from here on
        above_eq[r0 : r0 + step] = (s == 2 * rope).sum(axis=2)
        below[r0 : r0 + step] = (s < -2 * rope).sum(axis=2)  # z_i + z_j < −2r before here
        below_eq[r0 : r0 + step] = (s == -2 * rope).sum(axis=2)
    ties = bool(above_eq.any() or below_eq.any())

    # a draw's θ_better = Σ_i W_i [Σ_{j ≥ a_i} W_j + ½ Σ_{a_i − e_i ≤ j < a_i} W_j]
    #                = 1 − ½ Σ_i W_i (C[a_i] + C[a_i − e_i]), C the cumulative sums of W;
    # θ_worse = ½ Σ_i W_i (C[b_i] + C[b_i + f_i]) likewise (W in sorted order)
    # flat positions in a chunk's (row, position) cumulative sums, of C[a_i], C[a_i − e_i],
    # C[b_i], C[b_i + f_i] (the row's start is subtracted per chunk)
    start = (np.arange(n_rows) * (width + 1))[:, None]
    better_at = (start + above, start + above - above_eq)
    worse_at = (start + below, start + below + below_eq)
    shifted = perm + (m * width)[:, None]  # positions in the weights of every metric side by side
    counts = np.zeros((n_rows, 3), dtype=np.int64)
    kept = np.empty((n_rows, n_draws, 3)) if samples else None
    row_step = max(1, _CHUNK_BYTES // (4 * 8 * SAMPLE_BLOCK * (width + 1)))
    tasks_of = data.n.astype(int)

    def _chunk(w: np.ndarray, b0: int, size: int, r0: int) -> None:
        """The draws b0 … b0 + size − 1 of the rows r0 … r0 + row_step − 1."""
        rows = slice(r0, r0 + row_step)
        ws = np.take(w, shifted[rows], axis=1)  # (draw, row, sorted position)
        n_r = ws.shape[1]
        cum = np.empty((size, n_r, width + 1))
        cum[:, :, 0] = 0.0
        np.cumsum(ws, axis=2, out=cum[:, :, 1:])
        flat = cum.reshape(size, -1)
        base = r0 * (width + 1)

        def part(idx: np.ndarray) -> np.ndarray:
            picked = np.take(flat, (idx[rows] - base).ravel(), axis=1)
            return np.einsum("dri,dri->dr", ws, picked.reshape(ws.shape))

        def weighted(at: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
            return part(at[0]) if not ties else 0.5 * (part(at[0]) + part(at[1]))

        better = 1.0 - weighted(better_at)  # (draw, row)
        worse = weighted(worse_at)
        theta = np.stack([worse, 1.0 - worse - better, better], axis=2)
        winner = theta.argmax(axis=2)
        counts[rows] += (winner[:, :, None] == np.arange(3)).sum(axis=0)
        if kept is not None:
            kept[rows, b0 : b0 + size] = theta.transpose(1, 0, 2)

    with ThreadPoolExecutor(_THREADS) as pool:  # numpy releases the GIL in these steps
        for block in range(-(-n_draws // SAMPLE_BLOCK)):  # blocks of draws, all pairs at once
            b0 = block * SAMPLE_BLOCK
            size = min(SAMPLE_BLOCK, n_draws - b0)
            w = np.zeros((size, len(data.metrics), width))  # (draw, metric, position)
            for j, name in enumerate(data.metrics):  # one random stream per metric and block
                w[:, j, : tasks_of[j] + 1] = _weights(seed, name, block, size, tasks_of[j], prior)
            chunk = functools.partial(_chunk, w.reshape(size, -1), b0, size)
            list(pool.map(chunk, range(0, n_rows, row_step)))  # rows: disjoint outputs
    p = counts / n_draws
    decision = np.where(
        p.max(axis=1) >= threshold, np.array(_OUTCOMES)[p.argmax(axis=1)], "inconclusive"
    )
    table = pd.DataFrame(
        {
            "metric": data.metrics[m].to_numpy(dtype=object),
            "treatment": data.systems[t].to_numpy(dtype=object),
            "control": control,
            "prob_worse": p[:, 0],
            "prob_equivalent": p[:, 1],
            "prob_better": p[:, 2],
            "decision": decision.astype(object),
            "mean_diff": np.where(valid, diff, 0.0).sum(axis=1) / data.n[m],
            "n_tasks": data.n[m].astype(np.int64),
        }
    )
    table.attrs = {
        "rope": rope,
        "prior": prior,
        "n_draws": n_draws,
        "seed": seed,
        "threshold": threshold,
        "higher_is_better": data.directions,
    }
    if kept is None:
        return BayesResult(table)
    keys = table[list(ROW_KEY)].itertuples(index=False, name=None)
    return BayesResult(table, samples=dict(zip(keys, kept, strict=True)))

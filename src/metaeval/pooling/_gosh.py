"""GOSH: the model fitted to every subset of each group's tasks (metafor's ``gosh()``).

Olkin, Dahabreh & Trikalinos (2012) plot the pooled estimate against I² for all
2ᵏ − 1 non-empty subsets of k studies: clusters in that cloud point to tasks that
pull the estimate or the heterogeneity on their own. Every subset of every group is
one model of a :class:`~metaeval.pooling._tau2.Batch` (the subsets are the batch axis,
the group's tasks the slots, membership the mask), fitted in chunks of a bounded
number of cells: no Python loop runs over subsets or groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._options import DEFAULT_POOL_METHOD, CIMethod, PoolMethod, literal_signature, resolve_ci
from ..engines import any_frame
from ..errors import DegenerateWarning, OptionError, PairingError, warn_groups
from . import _tau2 as t2
from ._engine import pool_options
from ._grouping import group, slots, valid_rows
from .results import GoshResult

__all__ = ["gosh", "GOSH_MAX_SUBSETS"]

GOSH_MAX_SUBSETS = 10**6
"""All subsets are fitted up to this many (metafor's limit), else this many random ones."""

_CHUNK_CELLS = 2**18
"""Subset × task cells fitted at once (bounds the memory of a chunk to a few MB)."""


def _check_subsets(subsets: Any) -> int:
    if subsets is None:
        return GOSH_MAX_SUBSETS
    if isinstance(subsets, bool) or not isinstance(subsets, int | np.integer) or subsets < 2:
        raise OptionError(
            f"`subsets` must be an integer ≥ 2 (the number of subsets to fit), but {subsets!r} "
            "was passed; leave it None for all subsets up to 10**6."
        )
    return int(subsets)


def _memberships(
    k: np.ndarray, n_max: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The subsets of every group: their group, their membership (a ``(N, max k)``
    boolean array over the group's slots) and whether each group has all its subsets.

    All 2ᵏ − 1 non-empty subsets where that is at most ``n_max`` (slot i is bit i of
    1, 2, …, 2ᵏ − 1); otherwise ``n_max`` subsets drawn uniformly among the non-empty
    ones (each task in with probability ½, empty draws redrawn), duplicates possible:
    the size then follows metafor's Binomial(k, ½) restricted to 1..k.
    """
    width = int(k.max())
    with np.errstate(over="ignore"):
        exact = (k <= 62) & (2.0 ** k.astype(float) - 1 <= n_max)  # 62: masks fit in int64
    counts = np.where(exact, 2.0 ** k.astype(float) - 1, n_max).astype(np.int64)
    gid = np.repeat(np.arange(len(k)), counts)
    offset = np.arange(len(gid)) - np.repeat(np.cumsum(counts) - counts, counts)
    masks = np.zeros(len(gid), dtype=np.uint64)
    ex = exact[gid]
    masks[ex] = offset[ex] + 1
    small = ~ex & (k[gid] <= 62)  # random masks drawn directly, uniform in 1 .. 2ᵏ − 1
    if small.any():
        top = np.left_shift(1, k[gid[small]].astype(np.int64))
        masks[small] = rng.integers(1, top, dtype=np.int64)
    incl = _unpack(masks, width)
    drawn = np.flatnonzero(~ex & ~small)  # more than 62 tasks: random bits
    while drawn.size:  # the first pass draws all; later ones redraw the rare empty draws
        in_group = np.arange(width)[None, :] < k[gid[drawn]][:, None]
        incl[drawn] = (rng.random((drawn.size, width)) < 0.5) & in_group
        drawn = drawn[~incl[drawn].any(axis=1)]
    return gid, incl, exact


def _unpack(masks: np.ndarray, width: int) -> np.ndarray:
    """The bits of ``masks`` (uint64) as a ``(N, width)`` boolean array, bit i in column i
    (columns past 64 False)."""
    le = masks.astype("<u8").view(np.uint8).reshape(len(masks), 8)
    if width <= 64:
        used = le[:, : -(-width // 8)]  # the bytes that hold bits
        return np.unpackbits(used, axis=1, count=width, bitorder="little").view(bool)
    bits = np.unpackbits(le, axis=1, bitorder="little").view(bool)
    return np.hstack([bits, np.zeros((len(masks), width - 64), dtype=bool)])


def _fit_subsets(
    y: np.ndarray, v: np.ndarray, incl: np.ndarray, method: str
) -> dict[str, np.ndarray]:
    """effect, τ², I², H², Q (and the failed fits) of the subsets ``incl`` of ``y, v``
    (both ``(N, K)``, the group's values for each subset row)."""
    b = t2.Batch(y, v, incl)
    with np.errstate(invalid="ignore", divide="ignore"):
        _, trace_p, q = b.fixed_parts()
        tau2, failed, _ = t2.estimate(b, method)
        single = b.k < 2
        tau2 = np.where(single, 0.0, tau2)
        failed = failed & ~single
        w = b.weights(np.where(failed, 0.0, tau2))
        mu = (w * b.y).sum(axis=1) / w.sum(axis=1)
        df = b.k - 1.0
        if method in ("EE", "DL"):  # metafor's shortcut: I² and H² from Q
            i2 = np.where(q > 0, np.maximum(0.0, 100 * (q - df) / q), 0.0)
            h2 = q / df
        else:
            vt = df / trace_p
            i2 = 100 * tau2 / (vt + tau2)
            h2 = tau2 / vt + 1
    out = {
        "effect": mu,
        "tau2": tau2,
        "i2": np.where(single, 0.0, i2),
        "h2": np.where(single, 1.0, h2),
        "q": np.where(single, 0.0, q),
    }
    return {name: np.where(failed, np.nan, values) for name, values in out.items()} | {
        "failed": failed
    }


def _labels(table: pd.DataFrame, over: list[str], rows: np.ndarray) -> list[Any]:
    """The task label of each row: the ``over`` value, a tuple for several columns."""
    if len(over) == 1:
        return table[over[0]].to_numpy()[rows].tolist()
    return list(table[over].iloc[rows].itertuples(index=False, name=None))


@any_frame
@literal_signature
def gosh(
    effects: pd.DataFrame,
    *,
    subsets: int | None = None,
    seed: int | np.random.Generator | None = None,
    method: PoolMethod = DEFAULT_POOL_METHOD,
    test: CIMethod | None = None,
    over: str | Sequence[str] = "task",
    groups: str | Sequence[str] | None = None,
) -> GoshResult:
    """The pooled model of every subset of tasks (GOSH; metafor ``gosh()``).

    Each group's model is fitted again to every non-empty subset of its tasks —
    single tasks included — when there are at most ``subsets`` (10⁶ by default)
    of them, 2ᵏ − 1 for k tasks; otherwise to ``subsets`` random ones. The GOSH plot
    (:meth:`~metaeval.GoshResult.plot`) shows the estimate against I² over the subsets
    (Olkin et al. 2012).

    Parameters
    ----------
    effects : pandas.DataFrame
        As for :func:`pool`.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    subsets : int, optional
        The most subsets to fit per group (≥ 2). When a group has more (2ᵏ − 1 >
        ``subsets``), this many random subsets are fitted instead: each task is in
        with probability ½ (empty draws are redrawn), so every non-empty subset is
        equally likely and the subset size follows metafor's Binomial(k, ½);
        subsets may repeat. Default: 10⁶, metafor's limit (all subsets up to 19
        tasks).
    seed : int or numpy.random.Generator, optional
        Seed of the random subsets (unused when every group has all its subsets).
    method : str
        The τ² estimator of every fit, as for :func:`pool` (default REML).
    test : {"z", "t", "knha", "hksj", "adhoc"}, optional
        As for :func:`pool`; checked and recorded in ``table.attrs``. The columns do
        not depend on it.
    over, groups
        As for :func:`pool`.

    Returns
    -------
    GoshResult
        ``table``: one row per group and subset (ordered by group, then by ``k``; all
        subsets of a size in metafor's order), the group keys and

        - ``k``: the tasks in the subset;
        - ``effect``: the pooled estimate μ̂;
        - ``tau2``: τ̂² (0 for ``EE`` and for single tasks);
        - ``i2``, ``h2``: I² (percent) and H²;
        - ``q``: Cochran's Q of the subset (0 for a single task).

        ``included``: a boolean DataFrame with the rows of ``table``, one column per
        task (the ``over`` value; a tuple for several ``over`` columns): whether the
        task is in the subset (False in the rows of a group that has no such task).
        ``fit``: one row per group with the keys, ``k`` (its tasks),
        ``n_subsets`` and ``exact`` (all subsets fitted).

    Raises
    ------
    metaeval.OptionError
        An unknown ``method`` or ``test``; ``subsets`` not an integer ≥ 2.
    metaeval.SchemaError
        A group that holds the same task twice (as for :func:`pool`).
    metaeval.PairingError
        No effect with a finite effect and variance.

    Warns
    -----
    DegenerateWarning
        Effects with NaN effect or variance (left out); groups with a single task (their one subset is the task itself); groups
        with subsets whose fit did not converge (NaN in those rows).

    Notes
    -----
    A single task's row is its effect y_i with τ² = 0, Q = 0, I² = 0 and H² = 1. For
    the other subsets I² and H² follow the fit's estimator as in :func:`pool`
    (I² = 100 τ̂²/(ṽ + τ̂²), H² = τ̂²/ṽ + 1), except for ``EE`` and ``DL``, where
    metafor's ``gosh()`` takes I² = max(0, 100 (Q − (k − 1))/Q) and H² = Q/(k − 1):
    so does this function (the same values whenever Q ≥ k − 1, but H² falls below 1
    where Q < k − 1, where :func:`pool` reports 1 for ``DL``).

    Every subset is a full fit with ``method``, the iterative estimators converged
    to a relative 1e-10 (metafor's default tolerance leaves τ² off by up to a few
    percent; with ``control=list(threshold=1e-13)`` it gives the same values).

    References
    ----------
    Olkin, I., Dahabreh, I. J., & Trikalinos, T. A. (2012). GOSH – a graphical
    display of study heterogeneity. *Research Synthesis Methods*, 3(3), 214–223.
    doi:10.1002/jrsm.1053

    Examples
    --------
    >>> import metaeval
    >>> eff = metaeval.load_example().meta.effects("logistic_regression",
    ...                                            treatment="gradient_boosting")
    >>> res = eff.query("metric == 'accuracy'").meta.gosh()
    >>> res.table[["k", "effect", "tau2", "i2", "q"]].tail(3).round(3)
        k  effect   tau2      i2      q
    12  3  -0.108  0.000   0.000  0.918
    13  3  -0.078  0.004  54.706  4.434
    14  4  -0.070  0.002  44.969  5.326
    >>> res.included.tail(3)
        breast_cancer  digits  iris  wine
    12           True   False  True  True
    13          False    True  True  True
    14           True    True  True  True

    The last row is the full model; without ``digits`` (row 12) the heterogeneity
    is gone.
    """
    pool_options(method, test, 0.05)
    test = resolve_ci(method, test)
    method = "EE" if method == "FE" else method
    n_max = _check_subsets(subsets)
    rng = np.random.default_rng(seed)
    grp = group(effects, over, groups, None)
    table = grp.table.reset_index(drop=True)
    valid = valid_rows(table)
    if not valid.all():
        warn_groups(
            f"{int((~valid).sum())} effect(s) with NaN effect or variance were left out of gosh()",
            table.loc[~valid, grp.keys + grp.over],
            DegenerateWarning,
        )
    if not valid.any():
        raise PairingError("gosh() found no effect with a finite effect and variance to fit.")
    rows, k, slot = slots(grp.code, valid, grp.n_groups)
    code = grp.code[rows]
    lab, names = pd.factorize(pd.Index(_labels(table, grp.over, rows), tupleize_cols=False))
    fitted = np.flatnonzero(k > 0)  # groups with a usable effect
    if (k[fitted] == 1).any():
        warn_groups(
            "{n} group(s) have a single task: their one subset is that task",
            grp.key_frame.iloc[np.flatnonzero(k == 1)],
            DegenerateWarning,
        )
    width = int(k.max())
    y_pad, v_pad = np.zeros((grp.n_groups, width)), np.ones((grp.n_groups, width))
    y_pad[code, slot] = table["effect"].to_numpy(float)[rows]
    v_pad[code, slot] = table["variance"].to_numpy(float)[rows]
    local_gid, incl, exact = _memberships(k[fitted], n_max, rng)
    gid = fitted[local_gid]
    size = incl.sum(axis=1, dtype=np.int64)
    # stable: within a size, the masks' (metafor's) order
    order = np.argsort(gid * (width + 1) + size, kind="stable")
    gid, incl, size = gid[order], incl[order], size[order]

    n = len(gid)
    cols: dict[str, np.ndarray] = {c: np.empty(n) for c in ("effect", "tau2", "i2", "h2", "q")}
    failed = np.zeros(n, dtype=bool)
    step = max(1, _CHUNK_CELLS // width)
    for start in range(0, n, step):  # chunks bound the memory, not a loop over subsets
        part = slice(start, start + step)
        g = gid[part]
        res = _fit_subsets(y_pad[g], v_pad[g], incl[part], method)
        for name in cols:
            cols[name][part] = res[name]
        failed[part] = res["failed"]
    if failed.any():
        bad = np.unique(gid[failed])
        warn_groups(
            f"{int(failed.sum())} subset fit(s) did not converge (NaN) in {{n}} group(s)",
            grp.key_frame.iloc[bad],
            DegenerateWarning,
        )

    keys = grp.key_frame.iloc[gid].reset_index(drop=True)
    out = keys.assign(k=size.astype(np.int64), **cols)
    out.attrs.update(method=method, test=test, over=tuple(grp.over))
    # membership: one boolean column per task label (in the order the table has them)
    label_slot = np.full((grp.n_groups, len(names)), width)  # `width`: no such task
    label_slot[code, lab] = slot
    padded = np.hstack([incl, np.zeros((n, 1), dtype=bool)])
    if grp.n_groups == 1:
        member = padded[:, label_slot[0]]
    else:
        member = np.take_along_axis(padded, label_slot[gid], axis=1)
    included = pd.DataFrame(member, columns=pd.Index(list(names), tupleize_cols=False))
    n_subsets = np.bincount(gid, minlength=grp.n_groups)
    all_exact = np.zeros(grp.n_groups, dtype=bool)
    all_exact[fitted] = exact
    fit = grp.key_frame.reset_index(drop=True).assign(
        k=k.astype(np.int64), n_subsets=n_subsets.astype(np.int64), exact=all_exact
    )
    return GoshResult(out, included=included, fit=fit.iloc[fitted].reset_index(drop=True))

"""Segment-level ranking measures (RankEval): a system's ranking against the humans'.

- segment level: :func:`normalize_ranks`, :func:`kendall_tau`, :func:`reciprocal_rank`,
  :func:`ndcg`, :func:`err`, :func:`best_human_rank`; set level: :func:`kendall_tau_set`,
  :func:`best_predicted_vs_human`; to a scores table: :func:`segment_scores`.

Machine translation and quality estimation compare a system's *ranking* of the
candidates of a segment (the translations of one source sentence) with the
humans' ranking. This module scores such rankings segment by segment — Kendall's τ
with WMT's tie penalty, the reciprocal rank of the human-best item, nDCG and ERR —
so that they become a scores table (``query`` = segment) that flows into
:func:`metaeval.effects` and :func:`metaeval.pool` like any other metric.

Every segment-level function takes rank arrays of shape ``(items,)`` for one
segment or ``(segments, items)`` for many, padded with NaN where a segment has
fewer items, and works on all segments at once. Ranks follow the convention
"1 is best"; ties are equal ranks.

References
----------
Avramidis, E. (2013). RankEval: Open tool for evaluation of machine-learned
ranking. *The Prague Bulletin of Mathematical Linguistics*, 100, 63–72.
doi:10.2478/pralin-2013-0012
Callison-Burch, C., Koehn, P., Monz, C., Post, M., Soricut, R., & Specia, L.
(2012). Findings of the 2012 Workshop on Statistical Machine Translation. WMT '12.
Chapelle, O., Metzler, D., Zhang, Y., & Grinspan, P. (2009). Expected reciprocal
rank for graded relevance. CIKM '09. doi:10.1145/1645953.1646033
Järvelin, K., & Kekäläinen, J. (2002). Cumulated gain-based evaluation of IR
techniques. *ACM TOIS*, 20(4), 422–446. doi:10.1145/582415.582418
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from ..errors import (
    DegenerateWarning,
    OptionError,
    SchemaError,
    check_option,
    format_groups,
    warn,
    warn_groups,
)
from ..schema import coerce_keys

__all__ = [
    "TIES",
    "MEASURES",
    "JUDGMENT_COLUMNS",
    "normalize_ranks",
    "KendallTauResult",
    "kendall_tau",
    "kendall_tau_set",
    "reciprocal_rank",
    "ndcg",
    "err",
    "best_human_rank",
    "best_predicted_vs_human",
    "segment_scores",
]

TIES = ("minimize", "floor", "ceiling", "middle")
_SCIPY_METHOD = {"minimize": "dense", "floor": "min", "ceiling": "max", "middle": "average"}
MEASURES = ("kendall_tau", "reciprocal_rank", "ndcg", "err", "best_human_rank")


def _padded(a: Any) -> np.ndarray:
    """An array of ranks; a ragged list of segments is padded with NaN."""
    try:
        return np.asarray(a, dtype=float)
    except ValueError:
        rows = [np.asarray(r, dtype=float).ravel() for r in a]
        out = np.full((len(rows), max((len(r) for r in rows), default=0)), np.nan)
        for i, r in enumerate(rows):  # building the padded array, not a computation
            out[i, : len(r)] = r
        return out


def _as_2d(a: Any, name: str) -> tuple[np.ndarray, bool]:
    x = _padded(a)
    if x.ndim not in (1, 2):
        raise SchemaError(
            f"`{name}` must be 1-D (one segment) or 2-D (segments × items), not {x.ndim}-D."
        )
    if np.isinf(x).any():
        raise SchemaError(f"`{name}` has infinite ranks; use NaN for absent items.")
    return (x[None, :], True) if x.ndim == 1 else (x, False)


def _pair(predicted: Any, human: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    p, single = _as_2d(predicted, "predicted")
    h, _ = _as_2d(human, "human")
    if p.shape != h.shape:
        raise SchemaError(f"`predicted` {p.shape} and `human` {h.shape} must have the same shape.")
    if (np.isnan(p) != np.isnan(h)).any():
        seg, item = np.argwhere(np.isnan(p) != np.isnan(h))[0]
        raise SchemaError(
            f"Segment {seg}, item {item} is ranked by one side only; pad both with NaN at the same places."
        )
    return p, h, single


def _out(x: np.ndarray, single: bool) -> Any:
    return x[0].item() if single else x


def normalize_ranks(ranks: Any, method: str = "ceiling") -> np.ndarray:
    """Rewrite ranks with ties in one of RankEval's four conventions.

    Parameters
    ----------
    ranks : array-like, 1-D or 2-D (segments × items)
        Ranks (1 is best; equal values are ties), NaN for absent items; a
        ragged list of segments is padded with NaN.
    method : {"minimize", "floor", "ceiling", "middle"}, default "ceiling"
        ``minimize``: one position per group of tied items, [1, 2, 2, 3, 4];
        ``floor``: tied items take the first of their positions, [1, 2, 2, 4, 5];
        ``ceiling``: the last, [1, 3, 3, 4, 5] (RankEval's default);
        ``middle``: the mean, [1, 2.5, 2.5, 4, 5].

    Returns
    -------
    numpy.ndarray
        Float ranks of the same shape; NaN stays NaN.

    Examples
    --------
    >>> from metaeval.measures import normalize_ranks
    >>> [normalize_ranks([1, 2, 2, 3, 4], m).tolist() for m in ("minimize", "floor", "ceiling", "middle")]
    [[1.0, 2.0, 2.0, 3.0, 4.0], [1.0, 2.0, 2.0, 4.0, 5.0], [1.0, 3.0, 3.0, 4.0, 5.0], [1.0, 2.5, 2.5, 4.0, 5.0]]
    """
    from scipy.stats import rankdata

    check_option("ties", method, TIES)
    x, single = _as_2d(ranks, "ranks")
    out = np.full(x.shape, np.nan)
    if x.shape[1]:
        with np.errstate(invalid="ignore"):
            out = rankdata(x, method=_SCIPY_METHOD[method], axis=1, nan_policy="omit").astype(float)
        out[np.isnan(x)] = np.nan
    return out[0] if single else out


def _signs(x: np.ndarray) -> np.ndarray:
    """sign(x_i − x_j) for every pair, ``(segments, items, items)``; 0 where either is NaN."""
    with np.errstate(invalid="ignore"):
        s = np.sign(x[:, :, None] - x[:, None, :])
    return np.nan_to_num(s, nan=0.0)


@dataclass(frozen=True)
class KendallTauResult:
    """Segment-level Kendall τ: scalars for one segment, arrays for many.

    Attributes
    ----------
    tau : float
        (C − D)/(C + D); NaN where C + D = 0 (no comparable pair).
    p_value : float
        Two-sided, normal approximation with n = ``items``.
    concordant, discordant : int
        C and D, after the tie rules.
    pairs : int
        All pairs of ranked items, n(n − 1)/2.
    human_ties, predicted_ties : int
        Pairs tied in the human and in the predicted ranking.
    items : int
        Ranked items n.
    """

    tau: Any
    p_value: Any
    concordant: Any
    discordant: Any
    pairs: Any
    human_ties: Any
    predicted_ties: Any
    items: Any

    def to_frame(self) -> pd.DataFrame:
        """One row per segment."""
        return pd.DataFrame({f.name: np.atleast_1d(getattr(self, f.name)) for f in fields(self)})


def kendall_tau(
    predicted: Any,
    human: Any,
    *,
    ties: str = "ceiling",
    exclude_human_ties: bool = True,
    penalize_predicted_ties: bool = True,
    invert: bool = False,
) -> KendallTauResult:
    r"""Kendall's τ of predicted against human ranks with WMT's tie rules, per segment.

    Every pair of items the humans did not tie is *concordant* when the
    prediction orders it the same way and *discordant* when it orders it the
    other way or ties it (WMT 2012; RankEval's default):
    τ = (C − D)/(C + D).

    Parameters
    ----------
    predicted, human : array-like, 1-D or 2-D (segments × items)
        Ranks, 1 is best, NaN for absent items (at the same places in both).
    ties : {"minimize", "floor", "ceiling", "middle"}, default "ceiling"
        RankEval normalizes both rankings first; τ depends only on the order
        and the ties, which every normalization keeps, so the choice does not
        change the result. Accepted for parity and checked.
    exclude_human_ties : bool, default True
        Leave out pairs the humans tied. False counts them: concordant when the
        prediction ties them too, otherwise discordant.
    penalize_predicted_ties : bool, default True
        Count a predicted tie of a pair the humans ordered as discordant. False
        leaves such pairs out.
    invert : bool, default False
        Reverse the human order first (for human scores where higher is better).

    Returns
    -------
    KendallTauResult
        ``tau, p_value, concordant, discordant, pairs, human_ties,
        predicted_ties, items``: scalars for 1-D input, arrays (one per
        segment) for 2-D input.

    Warns
    -----
    metaeval.DegenerateWarning
        For segments without a comparable pair (τ NaN).

    Notes
    -----
    The p-value is RankEval's normal approximation (as scipy's ``kendalltau``
    without ties): z = τ / √((4n + 10)/(9n(n − 1))), p = erfc(abs(z)/√2), with n
    the number of ranked items of the segment, as the paper defines it
    (RankEval's code passes the number of compared pairs instead). Without ties
    τ equals Kendall's τ-a and τ-b and the p-value equals
    ``scipy.stats.kendalltau(..., method="asymptotic")``.

    Examples
    --------
    >>> from metaeval.measures import kendall_tau
    >>> res = kendall_tau([1, 2, 2, 4], [1, 2, 3, 3])  # one human tie, one predicted tie
    >>> res.tau, res.concordant, res.discordant, res.human_ties, res.predicted_ties
    (0.6, 4, 1, 1, 1)
    """
    result, empty, single = _kendall(
        predicted,
        human,
        ties=ties,
        exclude_human_ties=exclude_human_ties,
        penalize_predicted_ties=penalize_predicted_ties,
        invert=invert,
    )
    if empty.any():
        where = (
            "the segment"
            if single
            else f"{int(empty.sum())} segment(s) {np.flatnonzero(empty)[:10].tolist()}"
        )
        warn(
            f"Kendall's tau is NaN for {where}: no pair of items the humans ordered.",
            DegenerateWarning,
        )
    return result


def _kendall(
    predicted: Any,
    human: Any,
    *,
    ties: str,
    exclude_human_ties: bool,
    penalize_predicted_ties: bool,
    invert: bool,
) -> tuple[KendallTauResult, np.ndarray, bool]:
    """:func:`kendall_tau` without its warning: the result, the segments without a
    human-ordered pair (τ NaN) and whether the input was a single segment."""
    check_option("ties", ties, TIES)
    p, h, single = _pair(predicted, human)
    sp, sh = _signs(p), _signs(-h if invert else h)
    present = ~np.isnan(p)
    both = present[:, :, None] & present[:, None, :]
    upper = np.triu(np.ones(p.shape[1:] * 2, dtype=bool), k=1)[None] & both
    h_tie = upper & (sh == 0)
    p_tie = upper & (sp == 0)
    ordered = upper & (sh != 0)
    concordant = (ordered & (sp == sh)).sum(axis=(1, 2))
    discordant = (ordered & (sp == -sh)).sum(axis=(1, 2))
    if penalize_predicted_ties:
        discordant = discordant + (ordered & p_tie).sum(axis=(1, 2))
    if not exclude_human_ties:
        concordant = concordant + (h_tie & p_tie).sum(axis=(1, 2))
        discordant = discordant + (h_tie & ~p_tie).sum(axis=(1, 2))
    n = present.sum(axis=1)
    total = concordant + discordant
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (concordant - discordant) / total
        z = tau / np.sqrt((4 * n + 10) / (9 * n * (n - 1)))
    from scipy.special import erfc

    p_value = np.where(n >= 2, erfc(np.abs(z) / np.sqrt(2)), np.nan)
    values = dict(
        tau=tau,
        p_value=p_value,
        concordant=concordant,
        discordant=discordant,
        pairs=n * (n - 1) // 2,
        human_ties=h_tie.sum(axis=(1, 2)),
        predicted_ties=p_tie.sum(axis=(1, 2)),
        items=n,
    )
    result = KendallTauResult(**{k: _out(np.asarray(v), single) for k, v in values.items()})
    return result, total == 0, single


def kendall_tau_set(predicted: Any, human: Any, **kwargs: Any) -> pd.Series:
    """Set-level Kendall τ over many segments: micro and macro averages.

    Parameters
    ----------
    predicted, human : array-like, 2-D (segments × items) or a list of segments
        As in :func:`kendall_tau`; segments of different lengths may be given
        as a list of lists.
    **kwargs
        The tie options of :func:`kendall_tau`.

    Returns
    -------
    pandas.Series
        ``micro_tau`` = (ΣC − ΣD)/(ΣC + ΣD) over all segments (the WMT figure);
        ``macro_tau``: the mean of the segment τ over the segments where τ is
        defined — segments with τ = 0 included (RankEval's code drops them,
        which biases the mean away from 0); ``segments`` (with τ defined),
        ``concordant, discordant, pairs, human_ties, predicted_ties`` (sums).

    Examples
    --------
    >>> from metaeval.measures import kendall_tau_set
    >>> kendall_tau_set([[1, 2, 3], [2, 1, 3]], [[1, 2, 3], [1, 2, 3]])[["micro_tau", "macro_tau"]].tolist()
    [0.6666666666666666, 0.6666666666666666]
    """
    res = kendall_tau(np.atleast_2d(_padded(predicted)), np.atleast_2d(_padded(human)), **kwargs)
    c, d = int(np.sum(res.concordant)), int(np.sum(res.discordant))
    tau = np.asarray(res.tau)
    return pd.Series(
        {
            "micro_tau": (c - d) / (c + d) if c + d else np.nan,
            "macro_tau": float(np.nanmean(tau)) if np.isfinite(tau).any() else np.nan,
            "segments": int(np.isfinite(tau).sum()),
            "concordant": c,
            "discordant": d,
            "pairs": int(np.sum(res.pairs)),
            "human_ties": int(np.sum(res.human_ties)),
            "predicted_ties": int(np.sum(res.predicted_ties)),
        },
        dtype=object,
    )


def reciprocal_rank(predicted: Any, human: Any, *, ties: str = "ceiling") -> Any:
    """Reciprocal rank of the human-best item in the prediction (RankEval's FARR), per segment.

    Both rankings are normalized with ``ties`` first; with ``ceiling`` a
    prediction that ties k items for first place puts each at rank k. When the
    humans tie several items for best, the best predicted rank among them counts.

    Parameters
    ----------
    predicted, human : array-like, 1-D or 2-D (segments × items)
        Ranks, 1 is best, NaN for absent items (at the same places in both).
    ties : {"minimize", "floor", "ceiling", "middle"}, default "ceiling"
        RankEval's normalization of tied ranks, applied to both rankings first
        (:func:`~metaeval.measures.normalize_ranks`).

    Returns
    -------
    float or numpy.ndarray
        1/r, one value per segment (NaN for an empty segment).

    Examples
    --------
    >>> from metaeval.measures import reciprocal_rank
    >>> reciprocal_rank([[2, 1, 3], [1, 1, 2]], [[1, 2, 3], [1, 2, 3]]).tolist()
    [0.5, 0.5]
    """
    p, h, single = _pair(predicted, human)
    r = _at_best(normalize_ranks(h, ties), normalize_ranks(p, ties), np.nanmin)
    return _out(1.0 / r, single)


def _at_best(key: np.ndarray, value: np.ndarray, pick: Any) -> np.ndarray:
    """Per segment, ``pick`` (nanmin/nanmax) of ``value`` over the items with the lowest ``key``.

    NaN for an empty segment, computed without numpy's "All-NaN slice" warning
    (and without touching the warning filters, which all threads share).
    """
    lowest = np.where(np.isnan(key), np.inf, key).min(axis=1, keepdims=True)
    best = (key == lowest) & ~np.isnan(value)
    fill = np.inf if pick is np.nanmin else -np.inf
    reduce = np.min if pick is np.nanmin else np.max
    picked = reduce(np.where(best, value, fill), axis=1)
    return np.where(best.any(axis=1), picked, np.nan)


def _gains(
    predicted: Any, human: Any, relevance: Any, name: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Predicted ranks and the grades l of the items, from human ranks or from relevance."""
    if (human is None) == (relevance is None):
        raise OptionError(
            f"{name}() needs exactly one of `human` (ranks) and `relevance` (grades)."
        )
    if human is not None:
        p, h, single = _pair(predicted, human)
        h = normalize_ranks(h, "ceiling")
        n = (~np.isnan(h)).sum(axis=1, keepdims=True).astype(float)
        grade = n - h + 1  # RankEval: the human-best item gets n, the worst 1
        scale = n  # R_i = (2^l − 1)/2^n
    else:
        p, g, single = _pair(predicted, relevance)
        if (g[~np.isnan(g)] < 0).any():
            raise SchemaError("`relevance` grades must be >= 0.")
        grade = g
        top = np.nanmax(g) if np.isfinite(g).any() else 0.0
        scale = np.full((g.shape[0], 1), top)
    return normalize_ranks(p, "ceiling"), grade, scale, single


def _ranked(p: np.ndarray, grade: np.ndarray) -> np.ndarray:
    """Grades in predicted order, ties broken pessimistically (the lower grade first)."""
    key_grade = np.where(np.isnan(grade), np.inf, grade)
    key_rank = np.where(np.isnan(p), np.inf, p)
    order = np.lexsort((key_grade, key_rank), axis=-1)
    return np.take_along_axis(grade, order, axis=1)


def _cutoff(k: int | None, width: int) -> int:
    if k is None:
        return width
    if not isinstance(k, int | np.integer) or k < 1:
        raise OptionError(f"`k` must be a positive integer or None, but {k!r} was passed.")
    return min(int(k), width)


def ndcg(
    predicted: Any,
    human: Any = None,
    *,
    relevance: Any = None,
    k: int | None = None,
    gain: str = "exponential",
) -> Any:
    r"""nDCG of a predicted ranking, against human ranks or graded relevance, per segment.

    DCG@k = Σ_{i ≤ k} g(l_i)/log₂(i + 1) over the items in predicted order and
    nDCG@k = DCG@k / IDCG@k, IDCG@k the DCG of the items sorted by grade.

    Parameters
    ----------
    predicted : array-like, 1-D or 2-D (segments × items)
        Predicted ranks (1 is best), NaN for absent items.
    human : array-like, optional
        Human ranks: RankEval's grades l = n − h + 1 with h the ceiling-normalized
        human rank and n the segment's items (the human-best item gets n).
    relevance : array-like, optional
        Graded relevance (≥ 0, higher is better) instead of human ranks.
    k : int, optional
        Cut-off; None uses every item.
    gain : {"exponential", "linear"}, default "exponential"
        g(l) = 2^l − 1 (RankEval, Burges et al.) or g(l) = l.

    Returns
    -------
    float or numpy.ndarray
        One value per segment; 1.0 where IDCG = 0 (no item has a positive
        gain, so every order is ideal — as RankEval).

    Notes
    -----
    Items the prediction ties are put in the order least favourable to it
    (lower grades first), so that predicting ties cannot raise the score —
    the same stance as the tie penalty of :func:`kendall_tau`. RankEval
    instead lets tied items overwrite one another's position.

    Examples
    --------
    >>> from metaeval.measures import ndcg
    >>> round(ndcg([1, 2, 3], [1, 2, 3]), 12), round(ndcg([3, 2, 1], relevance=[0, 1, 2]), 12)
    (1.0, 1.0)
    """
    check_option("gain", gain, ["exponential", "linear"])
    p, grade, _, single = _gains(predicted, human, relevance, "ndcg")
    k = _cutoff(k, p.shape[1])
    g = np.nan_to_num(grade, nan=0.0)
    g = np.expm1(g * np.log(2)) if gain == "exponential" else g
    g = np.where(np.isnan(grade), 0.0, g)
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    ranked = np.nan_to_num(_ranked(p, np.where(np.isnan(grade), np.nan, g)), nan=0.0)
    dcg = (ranked[:, :k] * discount).sum(axis=1)
    ideal = (-np.sort(-g, axis=1)[:, :k] * discount).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(ideal > 0, dcg / ideal, 1.0)
    out = np.where((~np.isnan(p)).any(axis=1), out, np.nan)
    return _out(out, single)


def err(predicted: Any, human: Any = None, *, relevance: Any = None, k: int | None = None) -> Any:
    r"""Expected reciprocal rank of a predicted ranking (Chapelle et al. 2009), per segment.

    ERR = Σ_{r ≤ k} (1/r) R_r Π_{i<r} (1 − R_i) with the stopping probability
    R = (2^l − 1)/2^{l_max}, computed by Chapelle et al.'s linear algorithm
    (a running product) for all segments at once.

    Parameters
    ----------
    predicted, human, relevance, k
        As in :func:`ndcg`. From human ranks, l = n − h + 1 and l_max = n (the
        segment's items), as RankEval; from relevance, l_max is the largest
        grade in ``relevance`` (all segments), the top of the scale.

    Returns
    -------
    float or numpy.ndarray
        One value per segment. Predicted ties are ordered pessimistically, as
        in :func:`ndcg`.

    Examples
    --------
    >>> from metaeval.measures import err
    >>> err([1, 2], relevance=[1, 0])  # R = (2 - 1)/2 for the first item
    0.5
    """
    p, grade, scale, single = _gains(predicted, human, relevance, "err")
    k = _cutoff(k, p.shape[1])
    ranked = _ranked(p, grade)[:, :k]
    with np.errstate(invalid="ignore", over="ignore"):
        stop = np.where(
            np.isnan(ranked), 0.0, np.expm1(np.nan_to_num(ranked) * np.log(2)) / 2.0**scale
        )
    reach = np.cumprod(np.c_[np.ones(len(stop)), 1 - stop[:, :-1]], axis=1)
    out = (reach * stop / np.arange(1, k + 1)).sum(axis=1)
    out = np.where((~np.isnan(p)).any(axis=1), out, np.nan)
    return _out(out, single)


def best_human_rank(predicted: Any, human: Any, *, ties: str = "ceiling") -> Any:
    """The human rank of the item the prediction puts first, per segment.

    Both rankings are normalized with ``ties``; when the prediction ties items
    for first place, the worst human rank among them counts (RankEval).

    Parameters
    ----------
    predicted, human : array-like, 1-D or 2-D (segments × items)
        Ranks, 1 is best, NaN for absent items (at the same places in both).
    ties : {"minimize", "floor", "ceiling", "middle"}, default "ceiling"
        RankEval's normalization of tied ranks, applied to both rankings first
        (:func:`~metaeval.measures.normalize_ranks`).

    Examples
    --------
    >>> from metaeval.measures import best_human_rank
    >>> best_human_rank([[2, 1, 3], [1, 1, 3]], [[1, 2, 3], [1, 2, 3]], ties="floor").tolist()
    [2.0, 2.0]
    """
    p, h, single = _pair(predicted, human)
    out = _at_best(normalize_ranks(p, ties), normalize_ranks(h, ties), np.nanmax)
    return _out(out, single)


def best_predicted_vs_human(predicted: Any, human: Any, *, ties: str = "ceiling") -> pd.DataFrame:
    """How often the predicted-best item has each human rank (RankEval's BPH).

    Parameters
    ----------
    predicted, human : array-like, 1-D or 2-D (segments × items)
        Ranks, 1 is best, NaN for absent items (at the same places in both).
    ties : {"minimize", "floor", "ceiling", "middle"}, default "ceiling"
        RankEval's normalization of tied ranks, applied to both rankings first
        (:func:`~metaeval.measures.normalize_ranks`).

    Returns
    -------
    pandas.DataFrame
        One row per human rank that occurs, ``human_rank, segments, share``
        (share of the segments, in [0, 1]); ``attrs["mean_human_rank"]`` is the
        average human rank of the predicted-best item (RankEval's "average
        predicted").

    Examples
    --------
    Four segments of three items each, ranked by a metric and by humans:

    >>> from metaeval.measures import best_predicted_vs_human
    >>> predicted = [[1, 2, 3], [2, 1, 3], [1, 3, 2], [3, 1, 2]]
    >>> human = [[1, 2, 3], [1, 2, 3], [2, 1, 3], [1, 2, 3]]
    >>> bph = best_predicted_vs_human(predicted, human)
    >>> bph
       human_rank  segments  share
    0         1.0         1   0.25
    1         2.0         3   0.75
    >>> bph.attrs["mean_human_rank"]
    1.75
    """
    best = np.atleast_1d(
        best_human_rank(np.atleast_2d(_padded(predicted)), np.atleast_2d(_padded(human)), ties=ties)
    )
    best = best[~np.isnan(best)]
    values, counts = np.unique(best, return_counts=True)
    table = pd.DataFrame(
        {"human_rank": values, "segments": counts, "share": counts / max(len(best), 1)}
    )
    table.attrs["mean_human_rank"] = float(best.mean()) if len(best) else np.nan
    return table


# --------------------------------------------------------------- long tables
JUDGMENT_COLUMNS = ("task", "segment", "system", "item", "human_rank", "predicted_rank")


def _parse_measures(measures: str | Sequence[str]) -> list[tuple[str, str, int | None]]:
    names = [measures] if isinstance(measures, str) else list(measures)
    if not names:
        raise OptionError(
            f"`measures` is empty; name some of {list(MEASURES)} (nDCG and ERR take @k)."
        )
    parsed = []
    for name in names:
        base, at, cut = str(name).partition("@")
        if base not in MEASURES or (
            at and (base not in ("ndcg", "err") or not cut.isdigit() or int(cut) < 1)
        ):
            raise OptionError(
                f"{name!r} is not a ranking measure; use {list(MEASURES)}, with '@k' for ndcg and err."
            )
        parsed.append((str(name), base, int(cut) if at else None))
    return parsed


def segment_scores(
    judgments: pd.DataFrame,
    measures: str | Sequence[str] = ("kendall_tau", "reciprocal_rank", "ndcg", "err"),
    *,
    ties: str = "ceiling",
    exclude_human_ties: bool = True,
    penalize_predicted_ties: bool = True,
    invert: bool = False,
) -> pd.DataFrame:
    """Per-segment ranking measures of every system, as a scores table.

    Parameters
    ----------
    judgments : pandas.DataFrame
        A long table with one row per ranked item: ``task, segment, system,
        item, human_rank, predicted_rank`` (the human rank repeats for every
        system that ranks the item).
    measures : str or list of str
        Any of ``kendall_tau, reciprocal_rank, ndcg, ndcg@k, err, err@k,
        best_human_rank`` (the last: lower is better).
    ties, exclude_human_ties, penalize_predicted_ties, invert
        As in :func:`kendall_tau` (``ties`` also for :func:`reciprocal_rank`
        and :func:`best_human_rank`).

    Returns
    -------
    pandas.DataFrame
        A scores table ``task, query, system, metric, value`` with ``query`` =
        segment, ready for :func:`metaeval.effects` and :func:`metaeval.pool`.

    Raises
    ------
    metaeval.SchemaError
        Missing columns, missing or infinite ranks, an item listed twice for a
        system and segment, or human ranks that differ between systems.

    Warns
    -----
    metaeval.DegenerateWarning
        Segments whose Kendall τ is undefined (no pair the humans ordered) are
        left out of ``kendall_tau``, named in the warning.

    Examples
    --------
    >>> import pandas as pd
    >>> from metaeval.measures import segment_scores
    >>> j = pd.DataFrame({"task": "wmt", "segment": ["s1"] * 6, "system": ["a"] * 3 + ["b"] * 3,
    ...                   "item": ["x", "y", "z"] * 2, "human_rank": [1, 2, 3] * 2,
    ...                   "predicted_rank": [1, 2, 3, 3, 2, 1]})
    >>> segment_scores(j, ["kendall_tau", "reciprocal_rank"])
      task query system           metric     value
    0  wmt    s1      a      kendall_tau  1.000000
    1  wmt    s1      a  reciprocal_rank  1.000000
    2  wmt    s1      b      kendall_tau -1.000000
    3  wmt    s1      b  reciprocal_rank  0.333333
    """
    parsed = _parse_measures(measures)
    if not isinstance(judgments, pd.DataFrame):
        raise SchemaError(f"`judgments` must be a DataFrame, not {type(judgments).__name__}.")
    missing = [c for c in JUDGMENT_COLUMNS if c not in judgments.columns]
    if missing:
        raise SchemaError(
            f"`judgments` lacks the column(s) {missing}; it needs {list(JUDGMENT_COLUMNS)}."
        )
    j = coerce_keys(
        judgments[list(JUDGMENT_COLUMNS)], ["task", "segment", "system", "item"], table="judgments"
    )
    for col in ("human_rank", "predicted_rank"):
        values = pd.to_numeric(j[col], errors="coerce")
        bad = ~np.isfinite(values.to_numpy(dtype=float))
        if bad.any():
            raise SchemaError(
                f"Column {col!r} has {int(bad.sum())} missing, infinite or non-numeric ranks, "
                f"e.g. rows {j.index[bad][:5].tolist()}."
            )
        j[col] = values.astype(float)
    dup = j.duplicated(["task", "segment", "system", "item"], keep=False)
    if dup.any():
        raise SchemaError(
            "An item is ranked twice for one system and segment:\n"
            + format_groups(j.loc[dup, ["task", "segment", "system", "item"]])
        )
    human = j.groupby(["task", "segment", "item"], sort=False)["human_rank"].nunique()
    if (human > 1).any():
        raise SchemaError(
            "Human ranks differ between systems for:\n"
            + format_groups(human[human > 1].reset_index()[["task", "segment", "item"]])
        )

    keys = ["task", "segment", "system"]
    group = j.groupby(keys, sort=False).ngroup().to_numpy()
    position = j.groupby(keys, sort=False).cumcount().to_numpy()
    n_groups, width = (
        int(group.max()) + 1 if len(j) else 0,
        int(position.max()) + 1 if len(j) else 0,
    )
    pred = np.full((n_groups, width), np.nan)
    hum = np.full((n_groups, width), np.nan)
    pred[group, position] = j["predicted_rank"].to_numpy()
    hum[group, position] = j["human_rank"].to_numpy()
    labels = j.drop_duplicates(keys)[keys].reset_index(drop=True)

    frames: list[pd.DataFrame] = []
    for name, base, cut in parsed:
        if base == "kendall_tau":
            value = _kendall(
                pred,
                hum,
                ties=ties,
                exclude_human_ties=exclude_human_ties,
                penalize_predicted_ties=penalize_predicted_ties,
                invert=invert,
            )[0].tau
            undefined = np.isnan(value)
            if undefined.any():
                warn_groups(
                    "kendall_tau is undefined (no pair the humans ordered) and left out "
                    "for {n} (task, segment, system)",
                    labels[undefined],
                    DegenerateWarning,
                )
        elif base == "reciprocal_rank":
            value = reciprocal_rank(pred, hum, ties=ties)
        elif base == "ndcg":
            value = ndcg(pred, hum, k=cut)
        elif base == "err":
            value = err(pred, hum, k=cut)
        else:
            value = best_human_rank(pred, hum, ties=ties)
        keep = ~np.isnan(value)
        frames.append(
            pd.DataFrame(
                {
                    "task": labels["task"][keep],
                    "query": labels["segment"][keep],
                    "system": labels["system"][keep],
                    "metric": name,
                    "value": np.asarray(value, dtype=float)[keep],
                    "_group": np.flatnonzero(keep),
                    "_measure": len(frames),
                }
            )
        )
    out = pd.concat(frames, ignore_index=True)
    out = out.sort_values(["_group", "_measure"], kind="stable")
    return out.drop(columns=["_group", "_measure"]).reset_index(drop=True)

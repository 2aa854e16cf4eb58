"""Textbook list-level IR measures from the relevance grades of ranked result lists.

:func:`list_measures` computes P@k, AP@k, RR and nDCG@k for many result lists
at once from nothing but the grades of the returned items in ranked order, as
courses and lecture notes define them. Measures that need the judgments of
items that were *not* returned (trec_eval's AP, nDCG with the ideal ranking
taken from the qrels) are :mod:`metaeval.ir`'s business.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import OptionError, SchemaError, check_option, excerpt

__all__ = ["GAINS", "LIST_MEASURES", "list_measures"]

GAINS = ("linear", "exponential")
"""Named gain functions of :func:`list_measures`: g(rel) = rel and g(rel) = 2^rel − 1."""

LIST_MEASURES = ("p_at_k", "ap_at_k", "rr", "ndcg_at_k", "ndcg_at_k_exp")
"""The columns of :func:`list_measures`, in order."""

_GAIN_FUNCS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "linear": lambda rel: rel,
    "exponential": lambda rel: np.exp2(rel) - 1.0,
}


def _padded(relevance_lists: Any) -> tuple[np.ndarray, pd.Index]:
    """The grades as a float array (lists, positions) padded with NaN, and the row labels."""
    if isinstance(relevance_lists, pd.DataFrame):
        index = relevance_lists.index
        try:
            return relevance_lists.to_numpy(dtype=float), index
        except (TypeError, ValueError):
            raise SchemaError("`relevance_lists` must hold numeric grades.") from None
    if isinstance(relevance_lists, pd.Series):
        index, lists = relevance_lists.index, relevance_lists.tolist()
    elif isinstance(relevance_lists, np.ndarray) and relevance_lists.dtype != object:
        if relevance_lists.ndim != 2:
            raise SchemaError(
                "`relevance_lists` as an array must be 2-D (lists × positions, padded with NaN), "
                f"but it has shape {relevance_lists.shape}; for one list pass [grades]."
            )
        return relevance_lists.astype(float), pd.RangeIndex(len(relevance_lists))
    elif isinstance(relevance_lists, Sequence | np.ndarray) and not isinstance(
        relevance_lists, str | bytes
    ):
        lists = list(relevance_lists)
        index = pd.RangeIndex(len(lists))
    else:
        raise SchemaError(
            "`relevance_lists` must be a sequence of lists of grades, a 2-D array or a "
            f"pandas Series of lists, not {type(relevance_lists).__name__}."
        )
    rows = []
    for label, grades in zip(index, lists, strict=True):
        if np.ndim(grades) != 1 or isinstance(grades, str | bytes):
            raise SchemaError(
                f"List {label!r} is {grades!r}, not a sequence of grades; "
                "pass one list of grades per query (for one query: [grades])."
            )
        try:
            rows.append(np.asarray(grades, dtype=float))
        except (TypeError, ValueError):
            raise SchemaError(f"List {label!r} has non-numeric grades: {grades!r}.") from None
    lengths = np.array([len(r) for r in rows], dtype=np.intp)
    out = np.full((len(rows), int(lengths.max(initial=0))), np.nan)
    out[np.arange(out.shape[1]) < lengths[:, None]] = np.concatenate([np.empty(0), *rows])
    return out, index


def _check_grades(grades: np.ndarray, index: pd.Index) -> np.ndarray:
    """SchemaError for infinite, negative or interior-NaN grades; returns the padding mask."""
    missing = np.isnan(grades)
    positions = np.arange(grades.shape[1])
    # a list ends after its last grade; NaN before that is a hole, not padding
    length = np.where(~missing, positions + 1, 0).max(axis=1, initial=0)
    padding = positions >= length[:, None]
    problems = []
    for what, bad in (
        ("a missing grade (NaN) before the list's last grade", missing & ~padding),
        ("an infinite grade", np.isinf(grades)),
        ("a negative grade", grades < 0),
    ):
        rows, cols = np.nonzero(bad)
        if rows.size:
            shown = ", ".join(
                f"list {excerpt(index[r])} rank {c + 1} ({grades[r, c]})"
                for r, c in zip(rows[:5], cols[:5], strict=True)
            )
            more = f" and {rows.size - 5} more" if rows.size > 5 else ""
            places = f"{rows.size} position{'s' if rows.size > 1 else ''}"
            problems.append(f"- {what} at {places}: {shown}{more}")
    if problems:
        raise SchemaError(
            "Relevance grades must be finite and >= 0, with NaN only as padding after a "
            "list's last item:\n" + "\n".join(problems)
        )
    return padding


def list_measures(
    relevance_lists: Any,
    k: int,
    *,
    gain: str | Callable[[np.ndarray], np.ndarray] = "linear",
) -> pd.DataFrame:
    """P@k, AP@k, reciprocal rank and nDCG@k of ranked lists from their relevance grades.

    Parameters
    ----------
    relevance_lists : sequence of sequences, 2-D array, pandas Series or DataFrame
        For each query, the relevance grades of the returned items in ranked
        order (grade > 0 means relevant). Lists may differ in length; a 2-D
        array or DataFrame is padded with trailing NaN. The index of a Series
        of lists (or a DataFrame) becomes the index of the result.
    k : int
        The cutoff, a positive integer; it may exceed the lists' lengths.
    gain : {"linear", "exponential"} or callable, default "linear"
        The gain g of the ``ndcg_at_k`` column: ``"linear"`` g(rel) = rel,
        ``"exponential"`` g(rel) = 2^rel − 1, or a vectorized function that
        maps an array of grades to finite gains >= 0 of the same shape.

    Returns
    -------
    pandas.DataFrame
        One row per list, with the float columns

        - ``p_at_k`` : (# relevant items among the top k) / k; positions past
          the end of a short list count as not relevant;
        - ``ap_at_k`` : (1 / # relevant items in the top k) ·
          Σ_{i ≤ k, item i relevant} P@i, 0 when the top k has none;
        - ``rr`` : 1 / rank of the first relevant item of the whole list,
          0 when there is none;
        - ``ndcg_at_k`` : DCG@k / IDCG@k with the gain ``gain``;
        - ``ndcg_at_k_exp`` : the same with g(rel) = 2^rel − 1 (equal to
          ``ndcg_at_k`` for binary grades).

    Raises
    ------
    metaeval.OptionError
        When ``k`` is not a positive integer or ``gain`` is unknown, or a
        callable ``gain`` returns gains of another shape, non-finite or negative.
    metaeval.SchemaError
        When a list is not a sequence of numbers, or a grade is infinite,
        negative or NaN before the list's last grade (naming the list and the
        1-based rank).

    Notes
    -----
    DCG@k = Σ_{i=1}^{k} g(rel_i) / log2(i + 1), and IDCG@k is the DCG@k of the
    same list's grades sorted in decreasing order (Järvelin & Kekäläinen
    2002; exponential gain after Burges et al. 2005). A list without a
    relevant item has DCG = IDCG = 0; its nDCG is reported as 0.0, as its
    AP@k and RR.

    These are the textbook forms, which see only the returned list. They differ
    from trec_eval and ``ir_measures`` where those use relevance judgments of
    items that were not returned:

    - ``AP@k`` there divides by the number of *all* relevant items of the
      query, not by those retrieved in the top k;
    - ``nDCG@k`` there takes the ideal ranking from all judged items.

    For example, if a query has three relevant documents and a system returns
    grades [1, 0, 1] (the third relevant document is not retrieved), then
    ``ap_at_k`` at k = 3 is (1 + 2/3) / 2 = 0.833 while trec_eval's AP@3 is
    (1 + 2/3) / 3 = 0.556, and ``ndcg_at_k`` is
    (1 + 1/2) / (1 + 1/log2 3) = 0.920 while trec_eval's nDCG@3 is
    (1 + 1/2) / (1 + 1/log2 3 + 1/2) = 0.704. The textbook AP@k rewards a list that
    returns one relevant item at rank 1 and nothing else with 1.0.

    References
    ----------
    Manning, C. D., Raghavan, P., & Schütze, H. (2008). *Introduction to
    Information Retrieval*, ch. 8. Cambridge University Press.
    doi:10.1017/CBO9780511809071
    Järvelin, K., & Kekäläinen, J. (2002). Cumulated gain-based evaluation of
    IR techniques. *ACM TOIS*, 20(4), 422–446. doi:10.1145/582415.582418
    Burges, C., Shaked, T., Renshaw, E., Lazier, A., Deeds, M., Hamilton, N.,
    & Hullender, G. (2005). Learning to rank using gradient descent. ICML '05,
    89–96. doi:10.1145/1102351.1102363

    Examples
    --------
    >>> import pandas as pd
    >>> from metaeval.measures import list_measures
    >>> runs = pd.Series({"q1": [1, 0, 1, 0, 1], "q2": [0, 0, 1, 1, 0]})
    >>> table = list_measures(runs, k=5)
    >>> table.round(4)
        p_at_k  ap_at_k      rr  ndcg_at_k  ndcg_at_k_exp
    q1     0.6   0.7556  1.0000     0.8855         0.8855
    q2     0.4   0.4167  0.3333     0.5706         0.5706
    >>> table.mean().round(4)
    p_at_k           0.5000
    ap_at_k          0.5861
    rr               0.6667
    ndcg_at_k        0.7281
    ndcg_at_k_exp    0.7281
    dtype: float64

    Graded relevance, ragged lists and a cutoff past the end of a list:

    >>> list_measures([[2, 3, 0], [0, 1], []], k=3).round(4)
       p_at_k  ap_at_k   rr  ndcg_at_k  ndcg_at_k_exp
    0  0.6667      1.0  1.0     0.9134         0.8340
    1  0.3333      0.5  0.5     0.6309         0.6309
    2  0.0000      0.0  0.0     0.0000         0.0000
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise OptionError(f"`k` must be a positive integer, but {k!r} was passed.")
    k = int(k)
    if callable(gain):
        gain_func = gain
    else:
        check_option("gain", gain, GAINS)
        gain_func = _GAIN_FUNCS[gain]
    grades, index = _padded(relevance_lists)
    padding = _check_grades(grades, index)
    m, width = grades.shape
    if width < k:  # positions past the end of every list are padding
        grades = np.pad(grades, ((0, 0), (0, k - width)), constant_values=np.nan)
        padding = np.pad(padding, ((0, 0), (0, k - width)), constant_values=True)
    grades = np.where(padding, 0.0, grades)

    relevant = grades > 0
    top = relevant[:, :k]
    hits = top.sum(axis=1)
    ranks = np.arange(1, k + 1)
    precision_at = np.cumsum(top, axis=1) / ranks  # P@i for i = 1..k
    with np.errstate(invalid="ignore", divide="ignore"):
        ap = np.where(hits > 0, (precision_at * top).sum(axis=1) / hits, 0.0)
        rr = np.where(relevant.any(axis=1), 1.0 / (relevant.argmax(axis=1) + 1), 0.0)

    discount = 1.0 / np.log2(ranks + 1)

    def ndcg(func: Callable[[np.ndarray], np.ndarray], name: str) -> np.ndarray:
        gains = np.asarray(func(grades), dtype=float)
        if gains.shape != grades.shape or not np.isfinite(gains).all() or (gains < 0).any():
            raise OptionError(
                f"`gain` must map an array of grades to finite gains >= 0 of the same shape; "
                f"{name} did not."
            )
        gains = np.where(padding, 0.0, gains)
        dcg = (gains[:, :k] * discount).sum(axis=1)
        idcg = (-np.sort(-gains, axis=1)[:, :k] * discount).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(idcg > 0, dcg / idcg, 0.0)

    return pd.DataFrame(
        {
            "p_at_k": hits / k,
            "ap_at_k": ap,
            "rr": rr,
            "ndcg_at_k": ndcg(gain_func, repr(gain)),
            "ndcg_at_k_exp": ndcg(_GAIN_FUNCS["exponential"], "'exponential'"),
        },
        index=index,
    )

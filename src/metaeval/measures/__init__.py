"""From judgments to per-query scores: the first stage of the pipeline.

- :mod:`~metaeval.measures.ir`: IR measures of TREC runs and qrels, by ir_measures
  (``nDCG@10``, ``AP``, ``Judged@10`` with trec_eval's definitions); also
  reachable as ``metaeval.ir``.
- :mod:`~metaeval.measures.columns`: :func:`ir_columns`, each task's means as
  ``control → treatment`` text for ``forest(columns=...)`` (also ``metaeval.ir.ir_columns``).
- :mod:`~metaeval.measures.segments`: RankEval's segment-level measures of a
  system's ranking against the humans' (Kendall's τ with WMT's ties, reciprocal
  rank, nDCG and ERR of human ranks) and :func:`segment_scores`; all exported here.
- :mod:`~metaeval.measures.lists`: textbook list measures (P@k, AP@k, RR,
  nDCG@k with linear or exponential gain) from the grades of ranked lists.
- :mod:`~metaeval.measures.classification`: per-sample correctness, metrics
  and correlations of classifiers' predictions.

Three nDCGs live here and differ on purpose: ir_measures' (trec_eval's: the ideal
DCG from the qrels), RankEval's (gains from human ranks) and the textbook one of
:func:`list_measures` (the ideal DCG from the list's own grades).
"""

from __future__ import annotations

from .classification import confusion_matrix, correlation, metrics, per_sample
from .columns import ir_columns
from .lists import list_measures
from .segments import (
    MEASURES,
    TIES,
    KendallTauResult,
    best_human_rank,
    best_predicted_vs_human,
    err,
    kendall_tau,
    kendall_tau_set,
    ndcg,
    normalize_ranks,
    reciprocal_rank,
    segment_scores,
)

__all__ = [
    "segment_scores",
    "TIES",
    "MEASURES",
    "normalize_ranks",
    "KendallTauResult",
    "kendall_tau",
    "kendall_tau_set",
    "reciprocal_rank",
    "ndcg",
    "err",
    "best_human_rank",
    "best_predicted_vs_human",
    "list_measures",
    "per_sample",
    "metrics",
    "confusion_matrix",
    "correlation",
    "ir_columns",
]

"""Ranking systems and metrics: leaderboards, RankEval's measures, correlations with humans.

A facade over the stages that do the work:

- leaderboards over tasks (Borda, mean rank, Copeland, Kemeny–Young,
  meta-analytic): :func:`leaderboard`;
- many systems over many tasks (Demšar 2006): :func:`friedman`
  (a :class:`FriedmanResult`), :func:`posthoc` (Nemenyi, Holm,
  Bonferroni–Dunn, Wilcoxon–Holm; a :class:`PosthocResult`, whose ``cd()``,
  ``cliques()`` and ``plot()`` give the critical difference, the groups and the
  critical-difference diagram),
  :func:`bayes_signed_rank` (Benavoli et al. 2017), and :func:`rank_report`,
  which chooses the tests as autorank does and writes them up;
- segment-level ranking measures (:mod:`metaeval.measures.segments`):
  :func:`normalize_ranks`, :func:`kendall_tau`, :func:`reciprocal_rank`,
  :func:`ndcg`, :func:`err`, :func:`best_human_rank`, :func:`kendall_tau_set`,
  :func:`best_predicted_vs_human`, :func:`segment_scores`;
- correlation with a reference, as effects (:mod:`metaeval.paired.correlation`):
  :func:`correlation_effects`, :func:`fisher_z_variance`;
- textbook list-level IR measures (:mod:`metaeval.measures.lists`):
  :func:`list_measures`.
"""

from __future__ import annotations

from .._options import AGGREGATIONS, CORRELATIONS
from ..measures.lists import list_measures
from ..measures.segments import (
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
from ..paired.correlation import correlation_effects, fisher_z_variance
from ._aggregate import leaderboard
from ._bayes import BayesResult, bayes_signed_rank
from ._friedman import POSTHOC_METHODS, FriedmanResult, PosthocResult, friedman, posthoc
from ._report import RankReport, rank_report

__all__ = [
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
    "segment_scores",
    "CORRELATIONS",
    "fisher_z_variance",
    "correlation_effects",
    "list_measures",
    "AGGREGATIONS",
    "leaderboard",
    "POSTHOC_METHODS",
    "friedman",
    "FriedmanResult",
    "posthoc",
    "PosthocResult",
    "bayes_signed_rank",
    "BayesResult",
    "rank_report",
    "RankReport",
]

"""Ranking systems: leaderboards over tasks and the rank tests of many systems.

- leaderboards over tasks (Borda, mean rank, Copeland, Kemeny–Young,
  meta-analytic): :func:`leaderboard`; how sure each rank is (intervals and tie
  groups from a two-level paired bootstrap): :func:`rank_intervals`;
- many systems over many tasks (Demšar 2006): :func:`friedman`
  (a :class:`FriedmanResult`), :func:`posthoc` (Nemenyi, Holm,
  Bonferroni–Dunn, Wilcoxon–Holm; a :class:`PosthocResult`, whose ``cd()``,
  ``cliques()`` and ``plot()`` give the critical difference, the groups and the
  critical-difference diagram),
  :func:`bayes_signed_rank` (Benavoli et al. 2017), and :func:`rank_report`,
  which chooses the tests as autorank does and writes them up.

The measures a ranking meta-evaluation scores segments with live in the stages that
own them: RankEval's segment measures in :mod:`metaeval.measures.segments`
(:func:`~metaeval.measures.segment_scores`, :func:`~metaeval.measures.segments.kendall_tau`,
...), textbook list measures in :func:`metaeval.measures.list_measures`, and
correlations with a reference as effects in :func:`metaeval.paired.correlation_effects`.
"""

from __future__ import annotations

from .._options import AGGREGATIONS
from ._aggregate import leaderboard

# The per-task scores of the rank tests and the runs of a clique, for metaeval.rank_report
# (the workflows room). Not in __all__: seams.
from ._friedman import TaskScores as TaskScores
from ._friedman import friedman, posthoc
from ._friedman import task_scores as task_scores
from ._intervals import rank_intervals
from ._signed_rank import bayes_signed_rank
from .results import POSTHOC_TESTS, BayesResult, FriedmanResult, PosthocResult
from .results import clique_runs as clique_runs

__all__ = [
    "AGGREGATIONS",
    "leaderboard",
    "rank_intervals",
    "POSTHOC_TESTS",
    "friedman",
    "FriedmanResult",
    "posthoc",
    "PosthocResult",
    "bayes_signed_rank",
    "BayesResult",
]

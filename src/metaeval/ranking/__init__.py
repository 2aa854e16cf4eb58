"""Ranking systems: the aggregations of per-task scores and the rank tests of many systems.

- many systems over many tasks (Demšar 2006): :func:`friedman`
  (a :class:`FriedmanResult`), :func:`posthoc` (Nemenyi, Holm,
  Bonferroni–Dunn, Wilcoxon–Holm; a :class:`PosthocResult`, whose ``cd()``,
  ``cliques()`` and ``plot()`` give the critical difference, the groups and the
  critical-difference diagram), and :func:`bayes_signed_rank` (Benavoli et al. 2017);
- the machinery of the leaderboards: the rank aggregation rules (Borda, mean rank,
  Copeland, Kemeny–Young) and the rank intervals of the means and Borda points.

The leaderboards themselves run several stages where they pool (effects, then
:func:`metaeval.pool`), so they live in the workflows room, above every stage:
:func:`metaeval.leaderboard` and :func:`metaeval.rank_intervals`, like
:func:`metaeval.rank_report`, which chooses the tests as autorank does and writes them up.

The measures a ranking meta-evaluation scores segments with live in the stages that
own them: RankEval's segment measures in :mod:`metaeval.measures.segments`
(:func:`~metaeval.measures.segment_scores`, :func:`~metaeval.measures.segments.kendall_tau`,
...), textbook list measures in :func:`metaeval.measures.list_measures`, and
correlations with a reference as effects in :func:`metaeval.paired.correlation_effects`.
"""

from __future__ import annotations

from .._options import AGGREGATIONS

# The leaderboards' per-task machinery, for metaeval.leaderboard and metaeval.rank_intervals
# (the workflows room). Not in __all__: seams.
from ._aggregate import Board as Board
from ._aggregate import aggregate as aggregate
from ._aggregate import rank_board as rank_board

# The per-task scores of the rank tests and the runs of a clique, for metaeval.rank_report
# (the workflows room). Not in __all__: seams.
from ._friedman import TaskScores as TaskScores
from ._friedman import friedman, posthoc
from ._friedman import task_scores as task_scores
from ._intervals import QueryTable as QueryTable
from ._intervals import RankData as RankData
from ._intervals import effect_sums as effect_sums
from ._intervals import interval_table as interval_table
from ._intervals import metric_board as metric_board
from ._intervals import rank_data as rank_data
from ._intervals import resampled_sums as resampled_sums
from ._intervals import score_board as score_board
from ._signed_rank import bayes_signed_rank
from ._tables import scores_of_metrics as scores_of_metrics
from .results import POSTHOC_TESTS, BayesResult, FriedmanResult, PosthocResult
from .results import clique_runs as clique_runs

__all__ = [
    "AGGREGATIONS",
    "POSTHOC_TESTS",
    "friedman",
    "FriedmanResult",
    "posthoc",
    "PosthocResult",
    "bayes_signed_rank",
    "BayesResult",
]

"""The verbs that run several stages: above every stage, below the faces.

Each stage takes one table and returns one result; a workflow chains them:

- :func:`analyze`: :func:`metaeval.effects`, then the Ranger-shaped table of
  :func:`metaeval.pooling.analysis.analysis_table`; :func:`pool_metrics`: the effects of
  several metrics, their covariance and the multilevel :func:`metaeval.pool`;
- :func:`leaderboard` and :func:`rank_intervals`: the ranking stage's rules over the
  per-task scores, and the pooled effects over a control (:func:`metaeval.effects`, then
  :func:`metaeval.pool`) as one more aggregation;
- :func:`forest_plot`: :func:`metaeval.pool` (and :func:`metaeval.weights` of subgroups),
  then the figure of :func:`metaeval.plot.forest`;
- :func:`rank_report`: the rank tests chosen by their checks (:func:`metaeval.ranking.friedman`,
  :func:`metaeval.ranking.posthoc`, :func:`metaeval.anova`, :func:`metaeval.tukey`,
  :func:`metaeval.compare`), written up as a :class:`RankReport`;
- :func:`build_report`: means, tests, pooled effects, ranks and figures as one :class:`Report`.

Only the faces import this room (the ``DataFrame.meta`` accessor, ``metaeval``'s top-level
names and the command); the stages never do.
"""

from __future__ import annotations

from .analysis import analyze, pool_metrics
from .forest import forest_plot
from .leaderboard import leaderboard, rank_intervals
from .rank_report import RankReport, rank_report
from .report import Report, build_report

__all__ = [
    "analyze",
    "pool_metrics",
    "forest_plot",
    "leaderboard",
    "rank_intervals",
    "rank_report",
    "RankReport",
    "build_report",
    "Report",
]

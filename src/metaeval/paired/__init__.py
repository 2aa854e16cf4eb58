"""From per-query scores to per-task results, for every pair of systems at once.

Queries are paired by id within a task and metric; every computation runs for
all (task, metric, treatment, control) groups together on one dense layout.

- :mod:`~metaeval.paired.sufficient`: the paired sufficient statistics
  (:func:`sufficient_statistics`), batched matrix products over the layout;
- :mod:`~metaeval.paired.effect_size`: effect sizes from them (:func:`effects`);
- :mod:`~metaeval.paired.significance`: per-task paired tests (:func:`compare`);
- :mod:`~metaeval.paired.anova`: all systems of a task together
  (:func:`anova`, :func:`tukey`);
- :mod:`~metaeval.paired.means`: every system's mean with its interval (:func:`means`);
- :mod:`~metaeval.paired.clusters`: clustered queries (``cluster=`` of
  :func:`effects`, :func:`compare` and :func:`means`);
- :mod:`~metaeval.paired.bootstrap`: corpus-level statistics as effects
  (:func:`bootstrap_effects`);
- :mod:`~metaeval.paired.correlation`: correlation with a reference as effects
  (:func:`correlation_effects`);
- :func:`adjust_pvalues` (the one implementation, in the core: ``pool``, ``compare`` and
  the rank tests adjust with it).
"""

from __future__ import annotations

from .._multiplicity import adjust_pvalues
from .._options import (
    ADJUSTMENTS,
    ALTERNATIVES,
    COMPARE_TESTS,
    CORRELATIONS,
    EFFECT_TYPES,
    STATISTICS,
)

# The seam of metaeval.paired.pushdown's dask statistics, which lay a partition out as
# the whole table would be: reached through the package's face, not its private module.
# Not in __all__: a seam, not a user function.
from ._layout import layout as layout
from .anova import anova, tukey
from .bootstrap import bootstrap_effects
from .correlation import correlation_effects, fisher_z_variance
from .covariance import effect_covariance
from .effect_size import effect_sizes, effects
from .means import means
from .significance import compare
from .sufficient import raw_sums, sufficient_statistics

__all__ = [
    "sufficient_statistics",
    "raw_sums",
    "effects",
    "effect_sizes",
    "effect_covariance",
    "compare",
    "anova",
    "tukey",
    "means",
    "bootstrap_effects",
    "correlation_effects",
    "fisher_z_variance",
    "adjust_pvalues",
    "EFFECT_TYPES",
    "COMPARE_TESTS",
    "ALTERNATIVES",
    "ADJUSTMENTS",
    "STATISTICS",
    "CORRELATIONS",
]

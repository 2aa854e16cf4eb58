"""metaeval: effect-size meta-analysis for multi-task evaluation, the pandas way.

``import metaeval`` registers the ``DataFrame.meta`` accessor::

    scores.meta.effects(control="bm25", effect="smd").meta.pool(method="DL")

The package is one subpackage per stage of the pipeline
scores → paired statistics → effects → pooled → figures and tables:
:mod:`~metaeval.schema`, :mod:`~metaeval.io`, :mod:`~metaeval.measures`,
:mod:`~metaeval.paired`, :mod:`~metaeval.pooling`, :mod:`~metaeval.design` (planning),
:mod:`~metaeval.ranking`,
:mod:`~metaeval.plot`, :mod:`~metaeval.report`, and above them :mod:`~metaeval.workflows` (the
verbs that run several stages); the ``metaeval`` command is the
package :mod:`metaeval_cli` beside it. The functions most analyses need are here at
the top; submodules load on first use.
"""

from __future__ import annotations

import importlib as _importlib
from typing import Any as _Any

from . import _after_import, _aliases, _options
from . import accessor as _accessor  # registers DataFrame.meta
from ._options import (
    ADJUSTMENTS,
    CI_METHODS,
    COMPARE_TESTS,
    EFFECT_TYPES,
    POOL_METHODS,
    RANGER,
    STATISTICS,
)
from .datasets import load_example
from .design import PowerResult
from .design.dispatch import power
from .errors import (
    DegenerateWarning,
    DependenceWarning,
    FormatError,
    MetaEvalError,
    MetaEvalWarning,
    OptionError,
    PairingError,
    PairingWarning,
    SchemaError,
    TableKindError,
)
from .io import scores_from_arrays
from .judges import AgreementResult, JudgeErrorsResult, agreement, judge_errors, ppi
from .paired import (
    adjust_pvalues,
    anova,
    bootstrap_effects,
    compare,
    effect_covariance,
    effects,
    means,
    sufficient_statistics,
    tukey,
)
from .pooling import (
    BayesPoolResult,
    GoshResult,
    MetaRegResult,
    baujat,
    bayes_pool,
    gosh,
    influence,
    leave_one_out,
    metareg,
    permutest,
    pool,
    weights,
)
from .schema import from_wide, scores, validate_effects, validate_scores
from .variance import FacetResult, facets
from .workflows import (
    RankReport,
    Report,
    analyze,
    build_report,
    forest_plot,
    leaderboard,
    pool_metrics,
    rank_intervals,
    rank_report,
)

_aliases.install()
# .meta on dask DataFrames once dask.dataframe is imported, .metaeval on polars
# DataFrames and LazyFrames once polars is imported
_accessor.install()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("metaeval")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


__version__ = _version()

_SUBMODULES = (
    "classification",
    "datasets",
    "design",
    "errors",
    "io",
    "ir",
    "judges",
    "measures",
    "paired",
    "plot",
    "pooling",
    "ranking",
    "report",
    "schema",
    "variance",
    "workflows",
)
"""Submodules reachable as attributes; the ones not loaded yet load on first use."""

__all__ = [
    # functions
    "scores",
    "from_wide",
    "scores_from_arrays",
    "validate_scores",
    "validate_effects",
    "sufficient_statistics",
    "effects",
    "effect_covariance",
    "pool",
    "weights",
    "leave_one_out",
    "influence",
    "gosh",
    "baujat",
    "metareg",
    "bayes_pool",
    "permutest",
    "pool_metrics",
    "analyze",
    "forest_plot",
    "leaderboard",
    "rank_intervals",
    "rank_report",
    "build_report",
    "power",
    "compare",
    "anova",
    "tukey",
    "means",
    "bootstrap_effects",
    "adjust_pvalues",
    "agreement",
    "facets",
    "judge_errors",
    "ppi",
    "load_example",
    # classes
    "MetaRegResult",
    "GoshResult",
    "BayesPoolResult",
    "PowerResult",
    "RankReport",
    "Report",
    "AgreementResult",
    "FacetResult",
    "JudgeErrorsResult",
    # modules
    *_SUBMODULES,
    # constants
    "EFFECT_TYPES",
    "POOL_METHODS",
    "CI_METHODS",
    "COMPARE_TESTS",
    "ADJUSTMENTS",
    "STATISTICS",
    "RANGER",
    # exceptions and warnings
    "MetaEvalError",
    "FormatError",
    "SchemaError",
    "PairingError",
    "OptionError",
    "TableKindError",
    "MetaEvalWarning",
    "PairingWarning",
    "DegenerateWarning",
    "DependenceWarning",
    "__version__",
]


# help() shows evaluated annotations, not strings: in every module imported so far and in
# each one imported later (a stage package, a module it loads on first use)
_after_import.after_each_import(f"{__name__}.", _options.public_signatures)
_options.public_signatures(_importlib.import_module(__name__))


def __getattr__(name: str) -> _Any:
    """Submodules on first use (``metaeval.plot``, ``metaeval.ir``, ...); renamed constants."""
    if name in _SUBMODULES or f"{__name__}.{name}" in _aliases.ALIASES:
        return _importlib.import_module(f"{__name__}.{name}")
    if name in _options.RENAMED:
        return _options.renamed(__name__, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)

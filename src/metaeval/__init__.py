"""metaeval: effect-size meta-analysis for multi-task evaluation, the pandas way.

``import metaeval`` registers the ``DataFrame.meta`` accessor::

    scores.meta.effects(control="bm25", effect="smd").meta.pool(method="DL")
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from . import accessor as _accessor  # noqa: F401  (registers DataFrame.meta)
from . import plot, ranking, report  # matplotlib and jinja2 load when first used
from .analysis import analyze
from .classification import STATISTICS, bootstrap_effects
from .datasets import load_example
from .effects import EFFECT_TYPES, effects
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
from .pooling import ADJUSTMENTS, METHODS, TESTS, influence, leave_one_out, pool, weights
from .schema import scores, validate_effects, validate_scores
from .significance import anova, compare, means, tukey
from .stats import sufficient_statistics

try:
    __version__ = version("metaeval")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

__all__ = [
    # functions
    "scores",
    "scores_from_arrays",
    "validate_scores",
    "validate_effects",
    "sufficient_statistics",
    "effects",
    "pool",
    "weights",
    "leave_one_out",
    "influence",
    "analyze",
    "compare",
    "anova",
    "tukey",
    "means",
    "bootstrap_effects",
    "load_example",
    # modules
    "plot",
    "ranking",
    "report",
    # constants
    "EFFECT_TYPES",
    "METHODS",
    "TESTS",
    "ADJUSTMENTS",
    "STATISTICS",
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

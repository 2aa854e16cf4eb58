"""Table schemas (pandera models) and validation with errors a user can act on.

Three kinds of table flow through metaeval:

* **scores** — one row per observation: ``task, query, system, metric, value``,
  plus any task-level columns such as ``domain``. Validated by :class:`Scores`.
* **effects** — one row per ``(metric, treatment, control, task)`` with at least
  ``effect`` and ``variance``. Validated by :class:`Effects`.
* **pooled** — one row per pooled group. Described by :class:`Pooled`.

The stage's functions live in :mod:`~metaeval.schema.scores` (building a table) and
:mod:`~metaeval.schema.validate` (validation, coercion, replicates); this module is their
face.
"""

from __future__ import annotations

from typing import Any

from ._columns import JUDGE, KEY_COLUMNS, REPLICATE, REPLICATE_DESIGN, SCORE_COLUMNS
from ._columns import first_repeat as first_repeat  # io's readers and measures' checks
from .scores import from_wide, scores
from .scores import map_columns as map_columns  # io.tidy's reader
from .validate import (
    average_replicates,
    checked_replicates,
    coerce_keys,
    prepare_scores,
    recorded_design,
    validate_effects,
    validate_scores,
)
from .validate import coerce_scores as coerce_scores  # io, paired.replicates, engines.dask
from .validate import key_column_ok as key_column_ok  # paired._layout
from .validate import key_names_ok as key_names_ok  # paired._layout

__all__ = [  # noqa: F822  (the pandera models are module attributes loaded lazily)
    "KEY_COLUMNS",
    "SCORE_COLUMNS",
    "Scores",
    "Effects",
    "Pooled",
    "scores",
    "from_wide",
    "validate_scores",
    "validate_effects",
    "prepare_scores",
    "coerce_keys",
    "REPLICATE",
    "JUDGE",
    "REPLICATE_DESIGN",
    "average_replicates",
    "checked_replicates",
    "recorded_design",
]


def __getattr__(name: str) -> Any:  # lazy model attributes: schema.Scores etc. (PEP 562)
    if name in ("Scores", "Effects", "Pooled"):
        from . import _models as models  # pandera loads on first use

        return getattr(models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The ``DataFrame.meta`` accessor: one line per method, each calling a module function."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .analysis import analyze
from .effects import effects
from .errors import TableKindError
from .pooling import influence, leave_one_out, pool, weights
from .schema import validate_effects, validate_scores
from .significance import anova, compare, means, tukey
from .stats import sufficient_statistics

__all__ = ["MetaAccessor", "table_kind"]

_KINDS = {
    "scores": "a scores table (columns task, query, system, metric, value)",
    "effects": "an effects table (columns effect, variance)",
}


def table_kind(df: pd.DataFrame) -> str | None:
    """``"effects"`` if the table has ``effect`` and ``variance``, ``"scores"`` if it
    has ``value``, else None."""
    if "effect" in df.columns and "variance" in df.columns:
        return "effects"
    if "value" in df.columns:
        return "scores"
    return None


@pd.api.extensions.register_dataframe_accessor("meta")
class MetaAccessor:
    """Meta-analysis methods on scores and effects tables (``df.meta``).

    The accessor tells the table kind from its columns (raising
    :class:`metaeval.TableKindError`, an ``AttributeError``, for a table of
    neither kind) and says which method belongs to which kind. Every method is a thin wrapper of a documented
    module-level function that can be called directly as well.
    """

    def __init__(self, obj: pd.DataFrame) -> None:
        if table_kind(obj) is None:
            raise TableKindError(
                f"DataFrame.meta needs {_KINDS['scores']} or {_KINDS['effects']}; this "
                f"table has columns {list(obj.columns)[:12]}. Map other column names "
                "with metaeval.scores(df, task=..., query=..., system=..., metric=..., value=...)."
            )
        self._obj = obj

    def _need(self, kind: str, method: str, hint: str) -> pd.DataFrame:
        found = table_kind(self._obj)
        if found != kind:
            raise TableKindError(
                f".meta.{method}() needs {_KINDS[kind]}, but this is {_KINDS[str(found)]}. {hint}"
            )
        return self._obj

    def validate(self) -> pd.DataFrame:
        """Validate the table (scores or effects); see :func:`metaeval.validate_scores`."""
        if table_kind(self._obj) == "effects":
            return validate_effects(self._obj)
        return validate_scores(self._obj)

    def sufficient_statistics(self, **kwargs: Any):
        """See :func:`metaeval.sufficient_statistics`."""
        hint = "Map your column names with metaeval.scores(df, value=..., ...)."
        return sufficient_statistics(self._need("scores", "sufficient_statistics", hint), **kwargs)

    def effects(self, **kwargs: Any) -> pd.DataFrame:
        """See :func:`metaeval.effects`."""
        hint = "Map your column names with metaeval.scores(df, value=..., ...)."
        return effects(self._need("scores", "effects", hint), **kwargs)

    def pool(self, **kwargs: Any) -> pd.DataFrame:
        """See :func:`metaeval.pool`."""
        hint = "Compute effects first: scores.meta.effects(control=...).meta.pool()."
        return pool(self._need("effects", "pool", hint), **kwargs)

    def weights(self, **kwargs: Any) -> pd.DataFrame:
        """See :func:`metaeval.weights`."""
        hint = "Compute effects first: scores.meta.effects(control=...).meta.weights()."
        return weights(self._need("effects", "weights", hint), **kwargs)

    def leave_one_out(self, **kwargs: Any) -> pd.DataFrame:
        """See :func:`metaeval.leave_one_out`."""
        hint = "Compute effects first: scores.meta.effects(control=...).meta.leave_one_out()."
        return leave_one_out(self._need("effects", "leave_one_out", hint), **kwargs)

    def influence(self, **kwargs: Any) -> pd.DataFrame:
        """See :func:`metaeval.influence`."""
        hint = "Compute effects first: scores.meta.effects(control=...).meta.influence()."
        return influence(self._need("effects", "influence", hint), **kwargs)

    def compare(self, **kwargs: Any) -> pd.DataFrame:
        """See :func:`metaeval.compare`."""
        hint = "compare() starts from per-query scores."
        return compare(self._need("scores", "compare", hint), **kwargs)

    def anova(self) -> pd.DataFrame:
        """See :func:`metaeval.anova`."""
        return anova(self._need("scores", "anova", "anova() starts from per-query scores."))

    def tukey(self, **kwargs: Any) -> pd.DataFrame:
        """See :func:`metaeval.tukey`."""
        return tukey(
            self._need("scores", "tukey", "tukey() starts from per-query scores."), **kwargs
        )

    def means(self, **kwargs: Any) -> pd.DataFrame:
        """See :func:`metaeval.means`."""
        return means(
            self._need("scores", "means", "means() starts from per-query scores."), **kwargs
        )

    def analyze(self, **kwargs: Any) -> pd.DataFrame:
        """See :func:`metaeval.analyze`."""
        hint = "analyze() starts from per-query scores."
        return analyze(self._need("scores", "analyze", hint), **kwargs)

"""The ``DataFrame.meta`` accessor: one line per method, each calling a module function."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .errors import TableKindError
from .paired import anova, compare, effects, means, sufficient_statistics, tukey
from .pooling import analyze, influence, leave_one_out, pool, weights
from .schema import validate_effects, validate_scores

__all__ = ["MetaAccessor", "table_kind"]

_KINDS = {
    "scores": "a scores table (columns task, query, system, metric, value)",
    "effects": "an effects table (columns effect, variance)",
    "pooled": "a pooled table (columns effect, se, k)",
    "compare": "a compare() table (columns treatment, control, diff, p_value)",
    "tukey": "a tukey() table (columns system_a, system_b, diff, p_value)",
}


def table_kind(df: pd.DataFrame) -> str | None:
    """The kind of a table, told from its columns, or None.

    ``"effects"`` (``effect, variance``), ``"pooled"`` (``effect, se, k``),
    ``"scores"`` (``value``), ``"compare"`` (``treatment, control, diff,
    p_value``) or ``"tukey"`` (``system_a, system_b, diff, p_value``).
    """
    cols = set(df.columns)
    if {"effect", "variance"} <= cols:
        return "effects"
    if {"effect", "se", "k"} <= cols:
        return "pooled"
    if "value" in cols:
        return "scores"
    if {"treatment", "control", "diff", "p_value"} <= cols:
        return "compare"
    if {"system_a", "system_b", "diff", "p_value"} <= cols:
        return "tukey"
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
                f"DataFrame.meta needs {_KINDS['scores']}, {_KINDS['effects']} or a result "
                "table of metaeval (pooled, compare, tukey); this "
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

    def correlation_effects(self, **kwargs: Any) -> pd.DataFrame:
        """See :func:`metaeval.ranking.correlation_effects`."""
        from .ranking import correlation_effects

        hint = "correlation_effects() correlates per-query scores with a reference system."
        return correlation_effects(self._need("scores", "correlation_effects", hint), **kwargs)

    def leaderboard(self, **kwargs: Any) -> pd.DataFrame:
        """See :func:`metaeval.ranking.leaderboard`."""
        from .ranking import leaderboard

        hint = "leaderboard() ranks systems from per-query scores."
        return leaderboard(self._need("scores", "leaderboard", hint), **kwargs)

    # ---------------------------------------------------------------- output
    def forest(self, **kwargs: Any):
        """See :func:`metaeval.plot.forest`."""
        from .plot import forest

        hint = "Compute effects first: scores.meta.effects(control=...).meta.forest()."
        return forest(self._need("effects", "forest", hint), **kwargs)

    def pairwise(self, **kwargs: Any):
        """See :func:`metaeval.plot.pairwise`."""
        from .plot import pairwise

        if table_kind(self._obj) not in ("compare", "tukey"):
            raise TableKindError(
                f".meta.pairwise() needs {_KINDS['compare']} or {_KINDS['tukey']}, but this is "
                f"{_KINDS[str(table_kind(self._obj))]}. Run scores.meta.compare() or .meta.tukey() first."
            )
        return pairwise(self._obj, **kwargs)

    def _report(self, method: str) -> pd.DataFrame:
        if table_kind(self._obj) not in ("effects", "pooled", "compare"):
            raise TableKindError(
                f".meta.{method}() needs an effects, pooled or compare() table, but this is "
                f"{_KINDS[str(table_kind(self._obj))]}."
            )
        return self._obj

    def to_latex(self, **kwargs: Any) -> str:
        """See :func:`metaeval.report.to_latex`."""
        from .report import to_latex

        return to_latex(self._report("to_latex"), **kwargs)

    def to_html(self, **kwargs: Any) -> str:
        """See :func:`metaeval.report.to_html`."""
        from .report import to_html

        return to_html(self._report("to_html"), **kwargs)

    def style(self, **kwargs: Any):
        """See :func:`metaeval.report.style` (an HTML Styler that notebooks display)."""
        from .report import style

        return style(self._report("style"), **kwargs)

"""The ``DataFrame.meta`` accessor: each method is a module function, with its face.

Every method calls a documented module-level function with the table as its
first argument, and *shows* that function: ``help(df.meta.pool)`` and a
notebook's Shift-Tab give the function's full docstring and its signature
without the table argument, and the method takes the same positional arguments
(xarray's pattern). The functions are looked up on first use, so that
``import metaeval`` loads neither matplotlib (``forest``) nor the report module.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from typing import Any

import pandas as pd

from ._kinds import KINDS, REPORT_KINDS, describe_kinds, table_kind
from .errors import TableKindError

__all__ = ["MetaAccessor", "table_kind", "ACCESSOR_METHODS"]

_SCORES_HINT = "Map your column names with metaeval.scores(df, value=..., ...)."
_EFFECTS_HINT = "Compute effects first: scores.meta.effects(control=...).meta.{name}()."

ACCESSOR_METHODS: dict[str, tuple[str, tuple[str, ...], str]] = {
    # name: (function, table kinds accepted, hint when the kind is wrong)
    "sufficient_statistics": ("metaeval.paired:sufficient_statistics", ("scores",), _SCORES_HINT),
    "effects": ("metaeval.paired:effects", ("scores",), _SCORES_HINT),
    "effect_covariance": ("metaeval.paired:effect_covariance", ("scores",), _SCORES_HINT),
    "compare": ("metaeval.paired:compare", ("scores",), "compare() starts from per-query scores."),
    "anova": ("metaeval.paired:anova", ("scores",), "anova() starts from per-query scores."),
    "tukey": ("metaeval.paired:tukey", ("scores",), "tukey() starts from per-query scores."),
    "means": ("metaeval.paired:means", ("scores",), "means() starts from per-query scores."),
    "analyze": ("metaeval.pooling:analyze", ("scores",), "analyze() starts from per-query scores."),
    "pool_metrics": (
        "metaeval.pooling:pool_metrics", ("scores",), "pool_metrics() starts from per-query scores.",
    ),
    "pool": ("metaeval.pooling:pool", ("effects",), _EFFECTS_HINT),
    "weights": ("metaeval.pooling:weights", ("effects",), _EFFECTS_HINT),
    "leave_one_out": ("metaeval.pooling:leave_one_out", ("effects",), _EFFECTS_HINT),
    "influence": ("metaeval.pooling:influence", ("effects",), _EFFECTS_HINT),
    "metareg": ("metaeval.pooling:metareg", ("effects",), _EFFECTS_HINT),
    "correlation_effects": (
        "metaeval.paired:correlation_effects", ("scores",),
        "correlation_effects() correlates per-query scores with a reference system.",
    ),
    "leaderboard": (
        "metaeval.ranking:leaderboard", ("scores",),
        "leaderboard() ranks systems from per-query scores.",
    ),
    "friedman": (
        "metaeval.ranking:friedman", ("scores",),
        "friedman() ranks systems from per-query or per-task scores.",
    ),
    "posthoc": (
        "metaeval.ranking:posthoc", ("scores",),
        "posthoc() ranks systems from per-query or per-task scores.",
    ),
    "bayes_signed_rank": (
        "metaeval.ranking:bayes_signed_rank", ("scores",),
        "bayes_signed_rank() compares systems from per-query or per-task scores.",
    ),
    "rank_report": (
        "metaeval.ranking:rank_report", ("scores",),
        "rank_report() ranks systems from per-query or per-task scores.",
    ),
    "cliques": ("metaeval.ranking:cliques", ("posthoc",), "Run scores.meta.posthoc() first."),
    "critical_difference": (
        "metaeval.plot:critical_difference", ("posthoc",), "Run scores.meta.posthoc() first.",
    ),
    "simplex": (
        "metaeval.plot:simplex", ("bayes",),
        "Run scores.meta.bayes_signed_rank(control=..., samples=True) first.",
    ),
    "forest": ("metaeval.plot:forest", ("effects",), _EFFECTS_HINT),
    "bubble": ("metaeval.plot:bubble", ("metareg",), "Run effects.meta.metareg(mods=...) first."),
    "pairwise": (
        "metaeval.plot:pairwise", ("compare", "tukey"),
        "Run scores.meta.compare() or .meta.tukey() first.",
    ),
    "to_latex": ("metaeval.report:to_latex", REPORT_KINDS, ""),
    "to_html": ("metaeval.report:to_html", REPORT_KINDS, ""),
    "style": ("metaeval.report:style", REPORT_KINDS, ""),
}  # fmt: skip
"""Every accessor method but ``validate``: the function it calls (``module:name``), the
table kinds it accepts and the hint its error gives for another kind."""


class _Method:
    """A descriptor that becomes the accessor method of a module function on first use.

    On the instance (``df.meta.pool``) it gives a bound method; on the class
    (``pd.DataFrame.meta.pool``, what Sphinx documents) a function whose first
    parameter is ``self``. Both carry the function's name, docstring and
    signature (``functools.wraps`` plus ``__signature__``).
    """

    def __init__(self, target: str, kinds: tuple[str, ...], hint: str) -> None:
        self.target, self.kinds, self.hint = target, kinds, hint
        self.name = ""
        self._method: Callable[..., Any] | None = None

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def function(self) -> Callable[..., Any]:
        """The module function this method calls."""
        module, name = self.target.split(":")
        return getattr(importlib.import_module(module), name)

    def _build(self) -> Callable[..., Any]:
        func = self.function()
        name, kinds, hint = self.name, self.kinds, self.hint.format(name=self.name)

        @functools.wraps(func)
        def method(self: MetaAccessor, *args: Any, **kwargs: Any) -> Any:
            return func(self._need(kinds, name, hint), *args, **kwargs)

        sig = inspect.signature(func)
        table, *rest = sig.parameters.values()
        me = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        method.__signature__ = sig.replace(parameters=[me, *rest])  # type: ignore[attr-defined]
        method.__qualname__ = f"MetaAccessor.{name}"
        method.__module__ = __name__
        del method.__wrapped__  # inspect would follow it back to the table argument
        return method

    def __get__(self, obj: MetaAccessor | None, objtype: type | None = None) -> Any:
        if self._method is None:
            self._method = self._build()
        if obj is None:
            return self._method
        return self._method.__get__(obj, objtype)


@pd.api.extensions.register_dataframe_accessor("meta")
class MetaAccessor:
    """Meta-analysis methods on scores and effects tables (``df.meta``).

    The accessor tells the table kind from its columns (raising
    :class:`metaeval.TableKindError`, an ``AttributeError``, for a table of
    neither kind) and says which method belongs to which kind. Every method is
    a module-level function that can be called directly as well, with the table
    as its first argument: ``scores.meta.effects("bm25")`` is
    ``metaeval.effects(scores, "bm25")``.
    """

    def __init__(self, obj: pd.DataFrame) -> None:
        if table_kind(obj) is None:
            raise TableKindError(
                f"DataFrame.meta needs {KINDS['scores']}, {KINDS['effects']} or a result "
                "table of metaeval (pooled, analysis, compare, tukey, posthoc, bayes); this "
                f"table has columns {list(obj.columns)[:12]}. Map other column names "
                "with metaeval.scores(df, task=..., query=..., system=..., metric=..., value=..., "
                "constants={...}), or make a wide table (a column per system) long with "
                "metaeval.from_wide(df, ...)."
            )
        self._obj = obj

    def _need(self, kinds: tuple[str, ...], method: str, hint: str) -> pd.DataFrame:
        found = table_kind(self._obj)
        if found not in kinds:
            raise TableKindError(
                f".meta.{method}() needs {describe_kinds(kinds)}, but this is {KINDS[str(found)]}. "
                f"{hint}".rstrip()
            )
        return self._obj

    def validate(self) -> pd.DataFrame:
        """Validate the table: :func:`metaeval.validate_effects` for an effects table,
        :func:`metaeval.validate_scores` otherwise.

        Returns
        -------
        pandas.DataFrame
            The validated table (a new frame; the input is not changed).

        Examples
        --------
        >>> import metaeval
        >>> metaeval.load_example().meta.validate().shape
        (26940, 5)
        """
        from .schema import validate_effects, validate_scores

        if table_kind(self._obj) == "effects":
            return validate_effects(self._obj)
        return validate_scores(self._obj)

    sufficient_statistics = _Method(*ACCESSOR_METHODS["sufficient_statistics"])
    effects = _Method(*ACCESSOR_METHODS["effects"])
    effect_covariance = _Method(*ACCESSOR_METHODS["effect_covariance"])
    compare = _Method(*ACCESSOR_METHODS["compare"])
    anova = _Method(*ACCESSOR_METHODS["anova"])
    tukey = _Method(*ACCESSOR_METHODS["tukey"])
    means = _Method(*ACCESSOR_METHODS["means"])
    analyze = _Method(*ACCESSOR_METHODS["analyze"])
    pool_metrics = _Method(*ACCESSOR_METHODS["pool_metrics"])
    pool = _Method(*ACCESSOR_METHODS["pool"])
    weights = _Method(*ACCESSOR_METHODS["weights"])
    leave_one_out = _Method(*ACCESSOR_METHODS["leave_one_out"])
    influence = _Method(*ACCESSOR_METHODS["influence"])
    metareg = _Method(*ACCESSOR_METHODS["metareg"])
    correlation_effects = _Method(*ACCESSOR_METHODS["correlation_effects"])
    leaderboard = _Method(*ACCESSOR_METHODS["leaderboard"])
    friedman = _Method(*ACCESSOR_METHODS["friedman"])
    posthoc = _Method(*ACCESSOR_METHODS["posthoc"])
    bayes_signed_rank = _Method(*ACCESSOR_METHODS["bayes_signed_rank"])
    rank_report = _Method(*ACCESSOR_METHODS["rank_report"])
    cliques = _Method(*ACCESSOR_METHODS["cliques"])
    critical_difference = _Method(*ACCESSOR_METHODS["critical_difference"])
    simplex = _Method(*ACCESSOR_METHODS["simplex"])
    forest = _Method(*ACCESSOR_METHODS["forest"])
    bubble = _Method(*ACCESSOR_METHODS["bubble"])
    pairwise = _Method(*ACCESSOR_METHODS["pairwise"])
    to_latex = _Method(*ACCESSOR_METHODS["to_latex"])
    to_html = _Method(*ACCESSOR_METHODS["to_html"])
    style = _Method(*ACCESSOR_METHODS["style"])

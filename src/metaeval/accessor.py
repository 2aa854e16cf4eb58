"""The faces: ``DataFrame.meta``, ``.meta`` on dask DataFrames and ``.metaeval`` on polars
frames; each method is a module function, with its face.

Every method calls a documented module-level function with the table as its
first argument, and *shows* that function: ``help(df.meta.pool)`` and a
notebook's Shift-Tab give the function's full docstring and its signature
without the table argument, and the method takes the same positional arguments
(xarray's pattern). The functions are looked up on first use, so that
``import metaeval`` loads neither matplotlib (``forest``) nor the report module.

All three faces are generated from :data:`ACCESSOR_METHODS` (:func:`with_methods`); each
class says only how a call meets its table (``_call``), never a method's parameters. The
dask and polars faces are registered when dask.dataframe and polars are imported
(:func:`install`), so that ``import metaeval`` imports neither.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import pandas as pd

from ._after_import import after_import
from ._kinds import KINDS, REPORT_KINDS, describe_kinds, kind_of_columns, table_kind
from .errors import TableKindError

__all__ = [
    "MetaAccessor",
    "DaskMetaAccessor",
    "PolarsMetaNamespace",
    "NAMESPACE",
    "table_kind",
    "ACCESSOR_METHODS",
    "AccessorMethod",
    "with_methods",
    "install",
]

_SCORES_HINT = "Map your column names with metaeval.scores(df, value=..., ...)."
_EFFECTS_HINT = "Compute effects first: scores.meta.effects(control=...).meta.{name}()."


class AccessorMethod(NamedTuple):
    """An entry of :data:`ACCESSOR_METHODS`."""

    function: str
    """The module function the method calls, as ``"module:name"``."""
    kinds: tuple[str, ...]
    """The table kinds the method accepts (see :func:`table_kind`)."""
    hint: str
    """What the error for a table of another kind advises (``{name}``: the method)."""
    per_task: bool = False
    """The function treats each task on its own (or pools what it found per task): it is
    a method of ``.meta`` on a dask DataFrame too (:class:`DaskMetaAccessor`)."""
    dask: str = ""
    """With ``per_task``: how a dask table computes it, ``"module:name"`` of a function of
    the table and the call's arguments bound to the function's signature."""


_M = AccessorMethod
ACCESSOR_METHODS: dict[str, AccessorMethod] = {
    # name: (function, table kinds accepted, hint when the kind is wrong, per_task=...)
    "sufficient_statistics": _M(
        "metaeval.paired:sufficient_statistics",
        ("scores",),
        _SCORES_HINT,
        per_task=True,
        dask="metaeval.paired.partitions:statistics_on_dask",
    ),
    "effects": _M(
        "metaeval.paired:effects",
        ("scores",),
        _SCORES_HINT,
        per_task=True,
        dask="metaeval.paired.partitions:effects_on_dask",
    ),
    "effect_covariance": _M("metaeval.paired:effect_covariance", ("scores",), _SCORES_HINT),
    "compare": _M(
        "metaeval.paired:compare",
        ("scores",),
        "compare() starts from per-query scores.",
        per_task=True,
        dask="metaeval.paired.partitions:compare_on_dask",
    ),
    "anova": _M(
        "metaeval.paired:anova",
        ("scores",),
        "anova() starts from per-query scores.",
        per_task=True,
        dask="metaeval.paired.partitions:anova_on_dask",
    ),
    "tukey": _M(
        "metaeval.paired:tukey",
        ("scores",),
        "tukey() starts from per-query scores.",
        per_task=True,
        dask="metaeval.paired.partitions:tukey_on_dask",
    ),
    "means": _M(
        "metaeval.paired:means",
        ("scores",),
        "means() starts from per-query scores.",
        per_task=True,
        dask="metaeval.paired.partitions:means_on_dask",
    ),
    "agreement": _M(
        "metaeval.judges:agreement",
        ("scores",),
        "agreement() starts from per-query labels with a 'judge' column.",
    ),
    "judge_errors": _M(
        "metaeval.judges:judge_errors",
        ("scores",),
        "judge_errors() starts from per-query labels with a 'judge' column.",
    ),
    "ppi": _M(
        "metaeval.judges:ppi",
        ("scores",),
        "ppi() starts from per-query labels with a 'judge' column.",
    ),
    "facets": _M(
        "metaeval.variance:facets",
        ("scores",),
        "facets() starts from per-query scores with a column per facet.",
    ),
    "analyze": _M(
        "metaeval.workflows:analyze",
        ("scores",),
        "analyze() starts from per-query scores.",
        per_task=True,
        dask="metaeval.workflows.analysis:analyze_on_dask",
    ),
    "pool_metrics": _M(
        "metaeval.workflows:pool_metrics",
        ("scores",),
        "pool_metrics() starts from per-query scores.",
    ),
    "pool": _M("metaeval.pooling:pool", ("effects",), _EFFECTS_HINT),
    "power": _M(
        "metaeval.design:power",
        ("scores", "effects"),
        "power() plans from a pilot scores table (queries) or effects table (tasks).",
    ),
    "weights": _M("metaeval.pooling:weights", ("effects",), _EFFECTS_HINT),
    "leave_one_out": _M("metaeval.pooling:leave_one_out", ("effects",), _EFFECTS_HINT),
    "influence": _M("metaeval.pooling:influence", ("effects",), _EFFECTS_HINT),
    "gosh": _M("metaeval.pooling:gosh", ("effects",), _EFFECTS_HINT),
    "baujat": _M("metaeval.pooling:baujat", ("effects",), _EFFECTS_HINT),
    "metareg": _M("metaeval.pooling:metareg", ("effects",), _EFFECTS_HINT),
    "bayes_pool": _M("metaeval.pooling:bayes_pool", ("effects",), _EFFECTS_HINT),
    "permutest": _M("metaeval.pooling:permutest", ("effects",), _EFFECTS_HINT),
    "correlation_effects": _M(
        "metaeval.paired:correlation_effects",
        ("scores",),
        "correlation_effects() correlates per-query scores with a reference system.",
    ),
    "leaderboard": _M(
        "metaeval.workflows:leaderboard",
        ("scores",),
        "leaderboard() ranks systems from per-query scores.",
    ),
    "rank_intervals": _M(
        "metaeval.workflows:rank_intervals",
        ("scores",),
        "rank_intervals() resamples the per-query scores of the systems.",
    ),
    "friedman": _M(
        "metaeval.ranking:friedman",
        ("scores",),
        "friedman() ranks systems from per-query or per-task scores.",
    ),
    "posthoc": _M(
        "metaeval.ranking:posthoc",
        ("scores",),
        "posthoc() ranks systems from per-query or per-task scores.",
    ),
    "bayes_signed_rank": _M(
        "metaeval.ranking:bayes_signed_rank",
        ("scores",),
        "bayes_signed_rank() compares systems from per-query or per-task scores.",
    ),
    "rank_report": _M(
        "metaeval.workflows:rank_report",
        ("scores",),
        "rank_report() ranks systems from per-query or per-task scores.",
    ),
    "forest": _M("metaeval.workflows:forest_plot", ("effects",), _EFFECTS_HINT),
    "pairwise": _M(
        "metaeval.plot:pairwise",
        ("compare", "tukey"),
        "Run scores.meta.compare() or .meta.tukey() first.",
    ),
    "report": _M(
        "metaeval.workflows:build_report",
        ("scores",),
        "report() starts from per-query scores.",
    ),
    "to_latex": _M("metaeval.report:to_latex", REPORT_KINDS, ""),
    "to_html": _M("metaeval.report:to_html", REPORT_KINDS, ""),
    "style": _M("metaeval.report:style", REPORT_KINDS, ""),
}
"""Every accessor method but ``validate``: the function it calls (``module:name``), the
table kinds it accepts, the hint its error gives for another kind, and whether it works
per task on a dask DataFrame (:class:`AccessorMethod`)."""


def _resolve(target: str) -> Callable[..., Any]:
    """The function ``"module:name"`` names, imported on first use."""
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


class _Method:
    """A descriptor that becomes the accessor method of a module function on first use.

    On the instance (``df.meta.pool``) it gives a bound method; on the class
    (``pd.DataFrame.meta.pool``, what Sphinx documents) a function whose first
    parameter is ``self``. Both carry the function's name, docstring and
    signature (``functools.wraps`` plus ``__signature__``; ``hide``: parameters the
    method leaves out). The method calls ``self._call(descriptor, func, args,
    kwargs)``: the accessor class says how the function meets its table.
    """

    def __init__(
        self,
        target: str,
        kinds: tuple[str, ...],
        hint: str,
        per_task: bool = False,
        dask: str = "",
        *,
        hide: tuple[str, ...] = (),
    ) -> None:
        self.target, self.kinds, self.hint, self.per_task = target, kinds, hint, per_task
        self.dask = dask
        self.hide = hide
        self.name = ""
        self.owner, self.module = "MetaAccessor", __name__
        self.signature: inspect.Signature | None = None  # as shown, with ``self`` first
        self._method: Callable[..., Any] | None = None

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.owner = name, owner.__name__
        self.module = owner.__module__

    def function(self) -> Callable[..., Any]:
        """The module function this method calls."""
        return _resolve(self.target)

    def bind(self, owner: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """A call's arguments by parameter name, as the method's signature binds them with
        its defaults (the table and the hidden parameters left out)."""
        if self.signature is None:
            self._build()
        assert self.signature is not None
        bound = self.signature.bind(owner, *args, **kwargs)
        bound.apply_defaults()
        return {k: v for k, v in bound.arguments.items() if k != "self"}

    def _build(self) -> Callable[..., Any]:
        func = self.function()
        me = self

        @functools.wraps(func)
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            return self._call(me, func, args, kwargs)

        sig = inspect.signature(func)
        table, *rest = sig.parameters.values()
        this = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        self.signature = sig.replace(
            parameters=[this, *(p for p in rest if p.name not in self.hide)]
        )
        method.__signature__ = self.signature  # type: ignore[attr-defined]
        method.__qualname__ = f"{self.owner}.{self.name}"
        method.__module__ = self.module
        del method.__wrapped__  # inspect would follow it back to the table argument
        return method

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if self._method is None:
            self._method = self._build()
        if obj is None:
            return self._method
        return self._method.__get__(obj, objtype)


def with_methods(*, per_task: bool = False, hide: tuple[str, ...] = ()) -> Callable[[type], type]:
    """A class decorator that gives an accessor class the methods of :data:`ACCESSOR_METHODS`
    (those marked ``per_task`` only, with ``per_task=True``), each with its function's face
    (signature without the table argument and the parameters in ``hide``; docstring).

    The class defines ``_call(method, func, args, kwargs)``: what a call of a method does
    with its table (``method.name``, ``method.kinds``, ``method.signature`` describe it).
    """

    def decorate(cls: type) -> type:
        for name, entry in ACCESSOR_METHODS.items():
            if per_task and not entry.per_task:
                continue
            method = _Method(*entry, hide=hide)
            method.__set_name__(cls, name)
            setattr(cls, name, method)
        return cls

    return decorate


@pd.api.extensions.register_dataframe_accessor("meta")
@with_methods()
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

    def __dir__(self) -> list[str]:
        """Tab completion offers the methods of this table's kind (and ``validate``); the
        others stay callable and say what they need."""
        kind = table_kind(self._obj)
        hidden = {name for name, entry in ACCESSOR_METHODS.items() if kind not in entry.kinds}
        return sorted(set(super().__dir__()) - hidden)

    def _call(
        self,
        method: _Method,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        hint = method.hint.format(name=method.name)
        return func(self._need(method.kinds, method.name, hint), *args, **kwargs)

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


@with_methods(per_task=True, hide=("progress",))
class DaskMetaAccessor:
    """``.meta`` on a dask DataFrame of scores: the same results as in memory.

    Its methods are the pandas accessor's that work per task (those marked ``per_task``
    in ``ACCESSOR_METHODS``), with their functions' signatures and docstrings, but
    ``progress`` (dask's diagnostics show progress). Each binds its arguments as the
    function does and calls the entry the method's ``dask`` field names, which computes
    (the results are small: per task, metric and pair) and returns what the pandas
    method returns; see ``metaeval.engines.dask`` for how.
    """

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def _call(self, method: Any, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return _resolve(method.dask)(self._obj, method.bind(self, args, kwargs))

    def validate(self) -> Any:
        """:func:`metaeval.validate_scores` of the whole table; see
        :func:`metaeval.engines.dask.validate`."""
        from .engines.dask import validate

        return validate(self._obj)


@with_methods()
class PolarsMetaNamespace:
    """``.metaeval`` on a polars DataFrame or LazyFrame of scores or effects.

    Its methods are the pandas accessor's, with their functions' signatures and
    docstrings; each passes the polars frame to its function (a LazyFrame is computed
    in polars where the function pushes the work down, collected otherwise) and returns
    what the function returns on pandas. The name is not ``.meta``: polars reserves the
    names of its own namespaces (``Expr.meta``) on every class and refuses to register
    another under them. A pyarrow Table or a DuckDB relation cannot take an attribute:
    pass it to the functions.
    """

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def _columns(self) -> list[str]:
        obj = self._obj
        names = obj.collect_schema().names() if hasattr(obj, "collect_schema") else obj.columns
        return [str(c) for c in names]

    def _call(self, method: Any, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        kind = kind_of_columns(self._columns())
        if kind not in method.kinds:
            found = KINDS[kind] if kind else f"a table with columns {self._columns()[:12]}"
            hint = method.hint.format(name=method.name)
            raise TableKindError(
                f".metaeval.{method.name}() needs {describe_kinds(method.kinds)}, but this is "
                f"{found}. {hint}".rstrip()
            )
        return func(self._obj, *args, **kwargs)

    def validate(self) -> Any:
        """:func:`metaeval.validate_effects` of an effects table (collected), else
        :func:`metaeval.validate_scores` (a LazyFrame checked in polars and returned as
        it is)."""
        from .schema import validate_effects, validate_scores

        if kind_of_columns(self._columns()) == "effects":
            return validate_effects(self._obj)
        return validate_scores(self._obj)


NAMESPACE = "metaeval"
"""The name of the namespace on polars frames (polars reserves ``meta``)."""


def _register_dask() -> None:
    """Register :class:`DaskMetaAccessor` as ``.meta`` on dask DataFrames."""
    from dask.dataframe.extensions import register_dataframe_accessor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "registration ... overriding"
        register_dataframe_accessor("meta")(DaskMetaAccessor)


def _register_polars() -> None:
    """Register :class:`PolarsMetaNamespace` as ``.metaeval`` on polars frames."""
    import polars as pl

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "overriding an existing namespace"
        pl.api.register_dataframe_namespace(NAMESPACE)(PolarsMetaNamespace)
        pl.api.register_lazyframe_namespace(NAMESPACE)(PolarsMetaNamespace)


def install() -> None:
    """Register the dask and polars faces now if their library is imported, else as soon
    as it is (``import metaeval`` imports neither)."""
    after_import("dask.dataframe", _register_dask)
    after_import("polars", _register_polars)

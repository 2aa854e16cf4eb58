"""``.metaeval`` on polars DataFrames and LazyFrames (needs the ``engines`` extra).

Every method of the pandas accessor (:data:`metaeval.accessor.ACCESSOR_METHODS`) is a
method of ``.metaeval`` on a polars ``DataFrame`` and ``LazyFrame`` too, with its
function's signature and docstring: ``lf.metaeval.effects("bm25")`` is
``metaeval.effects(lf, "bm25")``, which computes what it can in polars (see
:mod:`metaeval.schema.frames`) and returns pandas, as every function does. The name is
not ``.meta``: polars reserves the names of its own namespaces (``Expr.meta``) on every
class and refuses to register another under them. A pyarrow Table or a DuckDB
relation cannot take an attribute: pass it to the functions.

``import metaeval`` does not import polars: the namespace is registered when polars is
imported (:func:`install`), as :mod:`metaeval.scale` registers dask's ``.meta``.
"""

from __future__ import annotations

import warnings
from typing import Any

from ._after_import import after_import
from ._kinds import KINDS, describe_kinds, kind_of_columns
from .accessor import with_methods
from .errors import TableKindError

__all__ = ["PolarsMetaNamespace", "NAMESPACE", "install", "register"]


@with_methods()
class PolarsMetaNamespace:
    """``.metaeval`` on a polars DataFrame or LazyFrame of scores or effects.

    Its methods are the pandas accessor's, with their functions' signatures and
    docstrings; each passes the polars frame to its function (a LazyFrame is computed
    in polars where the function pushes the work down, collected otherwise) and returns
    what the function returns on pandas.
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


def register() -> None:
    """Register :class:`PolarsMetaNamespace` as ``.metaeval`` on polars frames."""
    import polars as pl

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "overriding an existing namespace"
        pl.api.register_dataframe_namespace(NAMESPACE)(PolarsMetaNamespace)
        pl.api.register_lazyframe_namespace(NAMESPACE)(PolarsMetaNamespace)


def install() -> None:
    """Register now if polars is imported, else as soon as it is."""
    after_import("polars", register)

"""Any dataframe in: pandas, polars (eager and lazy), pyarrow Tables and DuckDB relations.

Every public function that takes a scores or effects table is wrapped by
:func:`any_frame`, which meets its table argument once, on the way in:

* a :class:`pandas.DataFrame` goes through untouched (and nothing here is imported
  beyond pandas: no narwhals, no polars);
* an **eager** frame (polars ``DataFrame``, pyarrow ``Table``) is converted once, by
  :func:`to_pandas` — through Arrow, zero-copy where Arrow allows it;
* a **lazy** frame (polars ``LazyFrame``, DuckDB relation) becomes a :class:`LazyTable`,
  which the functions that push work down into the engine take as it is
  (``any_frame(lazy=True)``: :func:`metaeval.effects`, :func:`metaeval.sufficient_statistics`,
  :func:`metaeval.analyze`, :func:`metaeval.compare`, :func:`metaeval.means`,
  :func:`metaeval.anova`, :func:`metaeval.tukey`, :func:`metaeval.validate_scores`); every
  other function gets it collected into pandas, once.

narwhals (the ``engines`` extra) is the one adapter between them: it reads the
frames' schemas, converts them and writes the lazy queries, so that polars and DuckDB
share one code path (see :mod:`metaeval.engines.survey`). The result is always pandas.

Key columns keep an order where the frame's dtype declares one — pandas categoricals,
polars and DuckDB ``Enum`` columns, and Arrow dictionaries that are ``ordered`` or were
made from a pandas categorical (as the schema's pandas metadata records; pandas keeps the
order of its categoricals, ordered or not) — and are sorted otherwise (strings, polars
``Categorical``, other Arrow dictionaries, whose order is an encoding's), as in memory.
``pl.from_pandas`` (a polars ``Categorical``) and DuckDB's import of Arrow dictionaries
(``VARCHAR``) drop an order: cast to ``pl.Enum``, or to a DuckDB ``ENUM``
(``duckdb.from_df`` makes one of a pandas categorical).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Collection
from typing import Any, TypeVar

import pandas as pd

from ..errors import MetaEvalError

__all__ = [
    "FRAMES",
    "EAGER_KINDS",
    "LAZY_KINDS",
    "frame_kind",
    "is_lazy",
    "to_pandas",
    "any_frame",
    "LazyTable",
    "lazy_table",
    "narwhals",
    "declared_orders",
]

FRAMES = (
    "a pandas DataFrame, or a polars DataFrame or LazyFrame, a pyarrow Table or a DuckDB "
    "relation (converted once; lazy ones computed in their engine where the function "
    "pushes the work down)"
)
"""The phrase the ``scores`` parameter of every function uses for the frames it takes."""

EAGER_KINDS = ("polars", "arrow")
"""Frames held in memory: converted to pandas once, on the way in."""

LAZY_KINDS = ("polars-lazy", "duckdb")
"""Frames computed where they are: a query per step, small results back."""

F = TypeVar("F", bound=Callable[..., Any])


def frame_kind(table: Any) -> str | None:
    """What kind of frame ``table`` is, told from its class without importing anything.

    ``"pandas"``, ``"polars"`` (a polars DataFrame), ``"polars-lazy"`` (a polars
    LazyFrame), ``"arrow"`` (a pyarrow Table or RecordBatch), ``"duckdb"`` (a DuckDB
    relation), ``"narwhals"`` (a narwhals frame wrapping one of these), ``"lazy"`` (a
    :class:`LazyTable`), or None for anything else (a dask DataFrame has its own
    ``.meta``, see :mod:`metaeval.engines.dask`).

    Examples
    --------
    >>> import metaeval
    >>> from metaeval.engines import frame_kind
    >>> frame_kind(metaeval.load_example()), frame_kind([1, 2])
    ('pandas', None)
    """
    if isinstance(table, pd.DataFrame):
        return "pandas"
    if isinstance(table, LazyTable):
        return "lazy"
    cls = type(table)
    package, name = cls.__module__.split(".")[0], cls.__name__
    if package == "polars":
        return {"DataFrame": "polars", "LazyFrame": "polars-lazy"}.get(name)
    if package == "pyarrow":
        return "arrow" if name in ("Table", "RecordBatch") else None
    if package in ("duckdb", "_duckdb") and name == "DuckDBPyRelation":
        return "duckdb"
    if package == "narwhals" and name in ("DataFrame", "LazyFrame"):
        return "narwhals"
    return None


def is_lazy(table: Any) -> bool:
    """Whether ``table`` is a lazy frame (a :class:`LazyTable`, a polars LazyFrame or a
    DuckDB relation, or a narwhals LazyFrame over one)."""
    kind = frame_kind(table)
    if kind == "narwhals":
        return frame_kind(narwhals().to_native(table)) in LAZY_KINDS
    return kind == "lazy" or kind in LAZY_KINDS


def narwhals() -> Any:
    """The narwhals module, or an error saying how to install it."""
    try:
        import narwhals.stable.v2 as nw
    except ImportError as err:
        raise MetaEvalError(
            "polars, pyarrow and DuckDB tables are read through narwhals: "
            f"pip install 'metaeval[engines]' ({err})."
        ) from None
    return nw


def to_pandas(table: Any) -> Any:
    """``table`` as a pandas DataFrame: converted once (eager frames) or collected (lazy
    ones); a pandas DataFrame, or anything that is not a frame, comes back as it is.

    The value column of a numeric dtype other than float (decimals, integers, booleans)
    becomes float64 in the engine first, as :func:`metaeval.validate_scores` would
    convert it; polars ``Categorical`` key columns get their categories sorted (the
    dtype declares no order; an ``Enum`` keeps its own). The input is not changed.

    Examples
    --------
    >>> import polars as pl
    >>> from metaeval.engines import to_pandas
    >>> df = to_pandas(pl.DataFrame({"task": ["a"], "value": [1]}))
    >>> type(df).__name__, str(df["value"].dtype)
    ('DataFrame', 'float64')
    """
    kind = frame_kind(table)
    if kind is None or kind == "pandas":
        return table
    if kind == "lazy":
        return table.collect()
    nw = narwhals()
    if kind == "narwhals":
        return to_pandas(nw.to_native(table))
    if kind in LAZY_KINDS:
        return LazyTable(table).collect()
    frame = nw.from_native(table, eager_only=True)
    keep = declared_orders(table.schema) if kind == "arrow" else set()
    return _pandas_of(frame.lazy(), frame.collect_schema(), eager=frame, keep=keep)


def declared_orders(schema: Any) -> set[str]:
    """The columns of a pyarrow schema whose dictionary declares an order: ``ordered``
    dictionaries, and those the schema's pandas metadata says were pandas categoricals
    (whose categories' order metaeval keeps in pandas). Other dictionaries (Arrow's
    ``dictionary_encode``, a polars ``Categorical``) are an encoding: their values are
    sorted, as strings are.

    Examples
    --------
    >>> import pandas as pd, pyarrow as pa
    >>> from metaeval.engines import declared_orders
    >>> df = pd.DataFrame({"task": pd.Categorical(["b", "a"], categories=["b", "a"]),
    ...                    "system": ["s", "t"]})
    >>> table = pa.Table.from_pandas(df).append_column("run", pa.array(["x", "y"]).dictionary_encode())
    >>> sorted(declared_orders(table.schema))
    ['task']
    """
    import pyarrow as pa

    meta = schema.pandas_metadata or {}
    from_pandas = {
        c.get("name") for c in meta.get("columns", []) if c.get("pandas_type") == "categorical"
    }
    return {
        field.name
        for field in schema
        if pa.types.is_dictionary(field.type) and (field.type.ordered or field.name in from_pandas)
    }


def _pandas_of(
    frame: Any, schema: Any, *, eager: Any = None, keep: Collection[str] = ()
) -> pd.DataFrame:
    """A narwhals frame as pandas, with the value cast and the categories as
    :func:`to_pandas` describes (``eager``: the frame itself when it is in memory; ``keep``:
    categorical columns whose order is declared, :func:`declared_orders`)."""
    nw = narwhals()
    casts = _value_cast(schema)
    if eager is not None:
        out = (eager.with_columns(*casts) if casts else eager).to_pandas()
    else:
        out = (frame.with_columns(*casts) if casts else frame).collect().to_pandas()
    for name, dtype in schema.items():
        if name in keep:
            continue
        if dtype == nw.Categorical and isinstance(out[name].dtype, pd.CategoricalDtype):
            categories = out[name].cat.categories
            out[name] = out[name].cat.reorder_categories(sorted(categories))
    return out


def _value_cast(schema: Any) -> list[Any]:
    """The cast of a numeric, non-float ``value`` column to float64, if it needs one."""
    nw = narwhals()
    dtype = schema.get("value")
    if dtype is None or dtype == nw.Float64:
        return []
    if dtype.is_numeric() or dtype == nw.Boolean:
        return [nw.col("value").cast(nw.Float64)]
    return []


def lazy_table(table: Any) -> LazyTable:
    """``table`` as a :class:`LazyTable` (itself, if it is one)."""
    if isinstance(table, LazyTable):
        return table
    if frame_kind(table) == "narwhals":
        table = narwhals().to_native(table)
    return LazyTable(table)


def any_frame(func: F | None = None, *, lazy: bool = False, tables: tuple[str, ...] = ()) -> Any:
    """Let a function take any frame as its first argument (and those named in ``tables``).

    pandas passes through; eager frames are converted once (:func:`to_pandas`); lazy
    frames become a :class:`LazyTable` for a function that pushes work down
    (``lazy=True``), and are collected into pandas for the others. The wrapper shows
    the function's name, docstring and signature (``functools.wraps``).

    Examples
    --------
    >>> import polars as pl
    >>> from metaeval.engines import any_frame
    >>> @any_frame
    ... def columns(table):
    ...     return type(table).__name__, list(table.columns)
    >>> columns(pl.DataFrame({"a": [1]}))
    ('DataFrame', ['a'])
    """

    def wrap(func: F) -> F:
        names = tables
        parameters = list(inspect.signature(func).parameters)
        first = parameters[0]
        unknown = [n for n in names if n not in parameters]
        assert not unknown, f"{func.__name__} has no parameter {unknown}"

        @functools.wraps(func)
        def call(*args: Any, **kwargs: Any) -> Any:
            if args:
                table, args = args[0], args[1:]
            elif first in kwargs:  # the table passed by name
                table = kwargs.pop(first)
            else:  # no table: Python's own error
                return func(**kwargs)
            if not isinstance(table, pd.DataFrame):
                table = _meet(table, lazy)
            for name in names:
                other = kwargs.get(name)
                if other is not None and not isinstance(other, pd.DataFrame):
                    kwargs[name] = to_pandas(other)
            return func(table, *args, **kwargs)

        call.__any_frame__ = {"lazy": lazy, "tables": names}  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return wrap(func) if func is not None else wrap


def _meet(table: Any, lazy: bool) -> Any:
    """A non-pandas table as the wrapped function takes it."""
    kind = frame_kind(table)
    if kind is None:
        return table  # not a frame: the function's own error names it
    if kind == "narwhals" or kind in LAZY_KINDS or kind == "lazy":
        if is_lazy(table):
            table = lazy_table(table)
            return table if lazy else table.collect()
    return to_pandas(table)


class LazyTable:
    """A lazy frame (polars LazyFrame or DuckDB relation) seen through narwhals.

    Holds the native frame, its narwhals view (:attr:`frame`) and schema, and — once
    computed — the result of the first pass over it (:attr:`cache`; the validation and
    the per-(task, metric, system) sums of :func:`metaeval.engines.survey.first_pass`), so that
    the functions computing from it read the data as few times as they can.
    """

    def __init__(self, native: Any) -> None:
        nw = narwhals()
        self.native = native
        self.kind = frame_kind(native)
        if self.kind not in LAZY_KINDS:
            raise TypeError(f"not a lazy frame: {type(native).__name__}")
        self.frame = nw.from_native(native)
        self.schema = dict(self.frame.collect_schema())
        self.columns: list[str] = list(self.schema)
        self.cache: dict[str, Any] = {}  # results of passes over it (the first pass)

    def __repr__(self) -> str:
        return f"LazyTable({self.kind}, columns={self.columns})"

    @property
    def engine(self) -> str:
        """``"polars"`` or ``"duckdb"``."""
        return "polars" if self.kind == "polars-lazy" else "duckdb"

    def collect(self, columns: list[str] | None = None) -> pd.DataFrame:
        """The table (or these columns of it) as a pandas DataFrame, computed now."""
        frame = self.frame if columns is None else self.frame.select(*columns)
        schema = self.schema if columns is None else {c: self.schema[c] for c in columns}
        return _pandas_of(frame, schema)

    def collect_frame(self, frame: Any) -> pd.DataFrame:
        """A narwhals lazy frame derived from this table, computed into pandas; polars
        frames run on its streaming engine."""
        if self.engine == "polars":
            try:
                done = frame.collect(engine="streaming")
            except TypeError:  # pragma: no cover - a polars without the streaming engine
                done = frame.collect()
        else:
            done = frame.collect()
        return done.to_pandas()

"""One routing decorator: how a statistic meets a lazy table, said once at its definition.

A function that takes lazy tables (``any_frame(lazy=True)``) gets them as a
:class:`~metaeval.engines.LazyTable`. Instead of branching on the table's kind in its body,
it declares with :func:`route` what a lazy table needs, and its body computes from an
in-memory table only (or passes the lazy table on to functions that are routed
themselves):

.. code-block:: python

    @any_frame(lazy=True)
    @route(
        check=checked,  # the options' checks: before any data is read
        collect=lambda scores, o: o["interval"] not in ("t", "anova"),  # in memory, whole
        per_task=lambda scores, o: o["cluster"] is not None,  # in memory, task by task
        columns=lambda scores, o: (o["cluster"], "replicate"),
        engine=_lazy_means,  # otherwise: sums computed in the engine
    )
    def means(scores, *, interval="t", alpha=0.05, cluster=None): ...

For a lazy table, in this order:

1. ``check(table, options)``: the checks the body makes first, so that a bad option is
   refused before any data is read; it may return the options normalized (a seed that
   every task must share), which every route below receives;
2. ``collect(table, options)`` holds: the table is collected into pandas and given to
   the body;
3. ``per_task(table, options)`` holds: the body runs on each task's rows in memory,
   through :func:`metaeval.engines.per_task` (``pairs``: the two system columns of a
   pairwise result; ``columns(table, options)``: the columns a task's rows need beyond
   the scores columns, those the table has; ``pieces(table, options)``: the options
   each task runs with, checked against the whole table; ``finish(frame, options)``:
   what is done to the whole result, e.g. a family adjusted across tasks);
4. otherwise ``engine(table, **options)``: the statistic computed in the engine (a
   ``_lazy_x`` of the statistic's module, from sums :mod:`metaeval.paired.pushdown`
   computes); without one, the body takes the lazy table (and hands it only to routed
   functions).

Any other table (pandas, or not a frame: the body's own error names it) goes straight
to the body, untouched, and ``options`` are the call's arguments bound to the
signature, the defaults applied, the table left out.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from .frames import LazyTable

__all__ = ["route"]

F = TypeVar("F", bound=Callable[..., Any])
Options = dict[str, Any]
When = Callable[[Any, Options], bool]


def route(
    *,
    check: Callable[[Any, Options], Options | None] | None = None,
    collect: When | None = None,
    per_task: When | None = None,
    pairs: tuple[str, str] | None = None,
    columns: Callable[[Any, Options], Iterable[str | None]] | None = None,
    pieces: Callable[[Any, Options], Options | None] | None = None,
    finish: Callable[[Any, Options], Any] | None = None,
    engine: Callable[..., Any] | None = None,
) -> Callable[[F], F]:
    """Declare, at a statistic's definition, how it handles a lazy table.

    A ``LazyTable`` (what ``any_frame(lazy=True)`` gives the function for a polars
    LazyFrame or a DuckDB relation) takes the first of these routes that holds; any other
    table goes straight to the function. ``options`` are the call's arguments bound to the
    signature, the defaults applied, the table left out. The wrapper shows the function's
    name, docstring and signature (``functools.wraps``) and records the routes in
    ``__route__``.

    Parameters
    ----------
    check : callable, optional
        ``check(table, options)``, run first: the checks the body makes first, so that a
        bad option is refused before any data is read. It may return the options
        normalized (a seed every task must share), which the routes below receive.
    collect : callable, optional
        ``collect(table, options)``: when true, the table is collected into pandas and
        given to the function.
    per_task : callable, optional
        ``per_task(table, options)``: when true, the function runs on each task's rows in
        memory (:func:`metaeval.engines.per_task`).
    pairs : tuple of str, optional
        With ``per_task``: the two system columns of a pairwise result (treatment first).
    columns : callable, optional
        With ``per_task``: ``columns(table, options)``, the columns a task's rows need
        beyond the scores columns (those the table has are fetched; None is skipped).
    pieces : callable, optional
        With ``per_task``: ``pieces(table, options)``, the options each task runs with,
        checked against the whole table (None: ``options`` unchanged).
    finish : callable, optional
        With ``per_task``: ``finish(result, options)``, applied to the whole result (a
        family adjusted across tasks, say).
    engine : callable, optional
        Otherwise ``engine(table, **options)`` computes the result in the engine; without
        one, the function takes the lazy table and hands it only to routed functions.

    Examples
    --------
    >>> import polars as pl
    >>> from metaeval.engines import any_frame, route
    >>> @any_frame(lazy=True)
    ... @route(collect=lambda table, options: options["whole"], engine=lambda table, whole: "engine")
    ... def where(table, *, whole=False):
    ...     return type(table).__name__
    >>> lazy = pl.LazyFrame({"a": [1]})
    >>> where(lazy), where(lazy, whole=True), where(lazy.collect())
    ('engine', 'DataFrame', 'DataFrame')
    """
    spec = {
        "check": check,
        "collect": collect,
        "per_task": per_task,
        "pairs": pairs,
        "columns": columns,
        "pieces": pieces,
        "finish": finish,
        "engine": engine,
    }

    def wrap(func: F) -> F:
        signature = inspect.signature(func)
        parameters = list(signature.parameters.values())
        first = parameters[0].name
        variadic = [p.name for p in parameters if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        assert not variadic, f"{func.__name__} routes no variadic parameters {variadic}"

        @functools.wraps(func)
        def call(*args: Any, **kwargs: Any) -> Any:
            table = args[0] if args else kwargs.get(first)
            if not isinstance(table, LazyTable):
                return func(*args, **kwargs)
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:  # Python's own error, as the function gives it
                return func(*args, **kwargs)
            bound.apply_defaults()
            options = dict(bound.arguments)
            del options[first]
            if check is not None:
                options = check(table, options) or options
            if collect is not None and collect(table, options):
                return call(table.collect(), **options)
            if per_task is not None and per_task(table, options):
                # loaded here: the schema's own functions are routed, and the per-task
                # driver reads the schema's columns
                from .per_task import per_task as run_per_task

                each = (pieces(table, options) if pieces is not None else None) or options
                wanted = columns(table, options) if columns is not None else ()
                frame = run_per_task(
                    table,
                    call,
                    each,
                    pairs=pairs,
                    control=each.get("control"),
                    treatment=each.get("treatment"),
                    columns=[c for c in wanted if c is not None and c in table.columns],
                )
                return finish(frame, options) if finish is not None else frame
            if engine is not None:
                return engine(table, **options)
            return func(table, **options)

        call.__route__ = spec  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return wrap

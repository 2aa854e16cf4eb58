"""The base of results made of several parts (scipy's ``_result_classes``, statsmodels'
``CombineResults``).

A function whose answer is one tidy table returns a :class:`pandas.DataFrame`
(``effects``, ``pool``, ``compare``, ...). A function whose answer has more than one
part returns a :class:`Result`: a frozen dataclass whose ``table`` is the tidy table
(only scalar options in its ``attrs``, so that :func:`pandas.concat` of two tables
works) and whose other parts are named attributes. It shows its table in a notebook
and a console, writes it with :meth:`Result.to_latex` / :meth:`Result.to_html`
through :mod:`metaeval.report`, and draws its figure with :meth:`Result.plot` from
the object alone: a figure never refits. Results pickle (the dask path sends them
between processes).

This module is the core layer: it imports neither pandas' plotting nor another stage
at import time.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
import pandas as pd

__all__ = ["Result", "check_scalar_attrs", "one_metric"]


def one_metric(table: pd.DataFrame, metric: str | None) -> pd.DataFrame:
    """The rows of ``table`` of one metric, for a figure that draws one: ``metric``, or the
    first; an OptionError naming the metrics for one the table lacks."""
    from .errors import OptionError, excerpt, quote_list

    metrics = list(pd.unique(table["metric"].astype(str)))
    chosen = metrics[0] if metric is None else str(metric)
    if chosen not in metrics:
        raise OptionError(
            f"`metric` must be one of {quote_list(metrics)}, but {excerpt(metric)} was passed."
        )
    return table[table["metric"].astype(str) == chosen]


def check_scalar_attrs(table: pd.DataFrame, where: str) -> pd.DataFrame:
    """``table`` itself, after checking that its ``attrs`` hold only scalars, strings,
    tuples and dicts of them: a DataFrame, Series or array there is a part of a result
    (a named attribute of a :class:`Result`), and :func:`pandas.concat` refuses it."""
    bad = [k for k, v in table.attrs.items() if not _is_scalar_option(v)]
    if bad:  # a programming error of metaeval, not of the user
        raise TypeError(f"{where}: attrs {bad} hold arrays or tables; make them result parts.")
    return table


def _is_scalar_option(value: Any) -> bool:
    if value is None or isinstance(value, str | bytes | bool | int | float | np.generic):
        return True
    if isinstance(value, tuple | list | frozenset | set):
        return all(_is_scalar_option(v) for v in value)
    if isinstance(value, dict):
        return all(_is_scalar_option(k) and _is_scalar_option(v) for k, v in value.items())
    return False


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Result:
    """A result with several parts; ``table`` is the tidy table a user reads first.

    Subclasses are frozen dataclasses that name their other parts as fields and set
    ``kind`` (the kind of ``table``: :func:`metaeval.accessor.table_kind` and the report
    ask the result for it). Equality is identity (the parts are tables); compare
    ``r.table``.
    """

    table: pd.DataFrame
    kind: ClassVar[str] = ""

    def __post_init__(self) -> None:
        check_scalar_attrs(self.table, type(self).__name__)

    # ------------------------------------------------------------------ display
    def __repr__(self) -> str:
        parts = ", ".join(f.name for f in dataclasses.fields(self) if f.name != "table")
        return f"{type(self).__name__}({parts})\n{self.table!r}"

    def _repr_html_(self) -> str | None:
        html = self.table._repr_html_()
        name = type(self).__name__
        return None if html is None else f"<p><code>{name}</code></p>{html}"

    def __len__(self) -> int:
        return len(self.table)

    # ------------------------------------------------------------------ writing
    def to_latex(self, **kwargs: Any) -> str:
        """The table as LaTeX (booktabs), through :func:`metaeval.report.to_latex`."""
        from .report import to_latex

        return to_latex(self, **kwargs)

    def to_html(self, **kwargs: Any) -> str:
        """The table as HTML, through :func:`metaeval.report.to_html`."""
        from .report import to_html

        return to_html(self, **kwargs)

    # ------------------------------------------------------------------ figure
    def plot(self, **kwargs: Any) -> Any:
        """The result's figure, drawn from the object alone."""
        raise NotImplementedError(f"{type(self).__name__} has no figure.")

    def replace(self, **changes: Any) -> Result:
        """A copy with some parts replaced (:func:`dataclasses.replace`)."""
        return dataclasses.replace(self, **changes)

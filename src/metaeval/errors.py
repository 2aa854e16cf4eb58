"""Exceptions and warnings raised by metaeval.

Every error a user can cause derives from :class:`MetaEvalError` (and from
:class:`ValueError`, so generic handlers keep working); every warning derives
from :class:`MetaEvalWarning`. Messages name the argument, the offending value
or group and what to do about it.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

__all__ = [
    "MetaEvalError",
    "FormatError",
    "OptionError",
    "SchemaError",
    "PairingError",
    "TableKindError",
    "MetaEvalWarning",
    "PairingWarning",
    "DegenerateWarning",
    "DependenceWarning",
]


class MetaEvalError(ValueError):
    """Base class of every error raised by metaeval for bad input."""


class OptionError(MetaEvalError):
    """An option has a value that is not one of the accepted ones."""


class SchemaError(MetaEvalError):
    """A table does not have the columns, types or keys a method needs.

    Attributes
    ----------
    failure_cases : pandas.DataFrame
        One row per problem found, with the columns ``problem``, ``column``,
        ``row`` (the index label of an offending row, where there is one) and
        ``value``.
    """

    def __init__(self, message: str, failure_cases: pd.DataFrame | None = None):
        super().__init__(message)
        if failure_cases is None:
            failure_cases = pd.DataFrame(columns=["problem", "column", "row", "value"])
        self.failure_cases = failure_cases


class FormatError(MetaEvalError):
    """A file does not have the layout its reader expects.

    Attributes
    ----------
    path : str
        The file.
    line : int or None
        The 1-based line number of the first offending line, where there is one.
    """

    def __init__(self, path: Any, line: int | None, problem: str, expected: str):
        where = f"{path}, line {line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {problem}. Expected {expected}.")
        self.path, self.line = str(path), line


class PairingError(MetaEvalError):
    """Systems named for a comparison are missing or cannot be paired."""


class TableKindError(MetaEvalError, AttributeError):
    """A ``.meta`` method was called on the wrong kind of table."""


class MetaEvalWarning(UserWarning):
    """Base class of every warning issued by metaeval."""


class PairingWarning(MetaEvalWarning):
    """Queries were left out because only one system of a pair has them."""


class DegenerateWarning(MetaEvalWarning):
    """A group gave NaN (n < 2, zero variance, r = ±1, k = 1, ...)."""


class DependenceWarning(MetaEvalWarning):
    """Effects that are not independent are pooled together."""


def check_option(name: str, value: Any, valid: Iterable[Any]) -> None:
    """Raise :class:`OptionError` unless ``value`` is one of ``valid``.

    >>> check_option("method", "DL", ["EE", "DL"])
    >>> check_option("method", "dl2", ["EE", "DL"])
    Traceback (most recent call last):
    ...
    metaeval.errors.OptionError: The value for `method` must be one of ['EE', 'DL'], but 'dl2' was passed.
    """
    valid = list(valid)
    if value not in valid:
        raise OptionError(
            f"The value for `{name}` must be one of {valid}, but {value!r} was passed."
        )


def format_groups(groups: pd.DataFrame, limit: int = 10) -> str:
    """Render the first ``limit`` rows of a table of groups as ``a=x, b=y`` lines."""
    lines = []
    for row in groups.head(limit).itertuples(index=False):
        lines.append(
            "  " + ", ".join(f"{col}={val!r}" for col, val in zip(groups.columns, row, strict=True))
        )
    if len(groups) > limit:
        lines.append(f"  ... and {len(groups) - limit} more")
    return "\n".join(lines)


def quote_list(values: Sequence[Any], limit: int = 20) -> str:
    """Render a list of names for an error message, shortened past ``limit``."""
    values = list(values)
    if len(values) <= limit:
        return repr(values)
    return repr(values[:limit])[:-1] + f", ... ({len(values) - limit} more)]"


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def warn(message: str, category: type[Warning]) -> None:
    """Issue a warning attributed to the first caller outside metaeval.

    Like pandas' ``find_stack_level``: the warning points at the user's line
    whether they called a module function or a ``.meta`` accessor method.
    """
    frame: Any = sys._getframe(1)  # the caller of warn(), i.e. stacklevel 2
    level = 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)

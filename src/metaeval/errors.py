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
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np
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
        # a problem may quote the offending line: never more than a short excerpt of it
        super().__init__(f"{where}: {shorten(problem, MESSAGE_LIMIT)}. Expected {expected}.")
        self.path, self.line = str(path), line

    def __reduce__(self) -> tuple[Any, ...]:  # picklable (multiprocessing, dask workers)
        return (_rebuild_format_error, (self.args[0], self.path, self.line))


class PairingError(MetaEvalError):
    """Systems named for a comparison are missing or cannot be paired."""


class TableKindError(MetaEvalError, AttributeError):
    """A ``.meta`` method was called on the wrong kind of table."""


class MetaEvalWarning(UserWarning):
    """Base class of every warning issued by metaeval.

    Attributes
    ----------
    groups : pandas.DataFrame or None
        For a warning about groups (tasks, pairs, pooled groups): all of them,
        one row each, while the message names the first ten. Read it from a
        caught warning: ``[w.message.groups for w in record]``.
    """

    def __init__(self, message: str = "", groups: pd.DataFrame | None = None):
        super().__init__(message)
        self.groups = groups


class PairingWarning(MetaEvalWarning):
    """Queries were left out because only one system of a pair has them."""


class DegenerateWarning(MetaEvalWarning):
    """A group gave NaN (n < 2, zero variance, r = ±1, k = 1, ...)."""


class DependenceWarning(MetaEvalWarning):
    """Effects that are not independent are pooled together."""


def _rebuild_format_error(message: str, path: str, line: int | None) -> FormatError:
    err = FormatError.__new__(FormatError)
    MetaEvalError.__init__(err, message)
    err.path, err.line = path, line
    return err


#: The longest quotation of user data (a value, a line of a file) an error message holds.
MESSAGE_LIMIT = 200


def shorten(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out.

    A text that the cut and its notice would make no shorter is kept whole (a file name
    cut by 4 characters, with 22 to say so, helps nobody).

    >>> shorten("x" * 60, 10)
    'xxxxxxxxxx… (50 more characters)'
    >>> shorten("x" * 30, 10)
    'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'
    """
    text = str(text)
    cut = len(text) - limit
    if cut <= len(f"… ({cut} more characters)"):
        return text
    return f"{text[:limit]}… ({cut} more characters)"


def excerpt(value: Any, limit: int = 60) -> str:
    """``repr(value)`` for a message, cut to ``limit`` characters.

    Control characters and quotes are escaped by ``repr``, so a value from a
    file can neither break the message's lines nor pass for part of it.

    >>> print(excerpt("two" + chr(10) + "lines"))
    'two\\nlines'
    >>> excerpt("y" * 100, 10)
    "'yyyyyyyyy… (92 more characters)"
    """
    if isinstance(value, np.generic):  # 3, not np.int64(3)
        value = value.item()
    elif isinstance(value, tuple):
        value = tuple(v.item() if isinstance(v, np.generic) else v for v in value)
    return shorten(repr(value), limit)


def check_no_clash(columns: Iterable[Any], reserved: Iterable[str], *, what: str) -> None:
    """Refuse user columns that an output would overwrite.

    Raises :class:`SchemaError` naming every column of ``columns`` that is in
    ``reserved`` (the columns ``what`` adds), before any work is done.

    >>> check_no_clash(["task", "n"], ["n", "effect"], what="effects()")
    Traceback (most recent call last):
    ...
    metaeval.errors.SchemaError: The table has column(s) ['n'], which effects() adds to its result; rename them first (e.g. df.rename(columns={'n': 'n_'})).
    """
    reserved = set(reserved)
    clash = [c for c in columns if c in reserved]
    if clash:
        raise SchemaError(
            f"The table has column(s) {clash}, which {what} adds to its result; rename them "
            f"first (e.g. df.rename(columns={{{excerpt(clash[0])}: {excerpt(str(clash[0]) + '_')}}}))."
        )


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
            f"The value for `{name}` must be one of {valid}, but {excerpt(value)} was passed."
        )


def check_alpha(alpha: Any) -> float:
    """``alpha`` as a float, or :class:`OptionError` unless 0 < alpha < 1.

    >>> check_alpha(0.05)
    0.05
    >>> check_alpha(5)
    Traceback (most recent call last):
    ...
    metaeval.errors.OptionError: `alpha` must be a number between 0 and 1, but 5 was passed.
    """
    if (
        isinstance(alpha, bool)
        or not isinstance(alpha, int | float | np.floating)
        or not 0 < alpha < 1
    ):
        raise OptionError(
            f"`alpha` must be a number between 0 and 1, but {excerpt(alpha)} was passed."
        )
    return float(alpha)


def check_resamples(n_resamples: Any, minimum: int = 1) -> int:
    """``n_resamples`` as an int, or :class:`OptionError` unless it is an integer >= ``minimum``.

    >>> check_resamples(2.5)
    Traceback (most recent call last):
    ...
    metaeval.errors.OptionError: `n_resamples` must be an integer of at least 1, but 2.5 was passed.
    """
    if (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, int | np.integer)
        or n_resamples < minimum
    ):
        raise OptionError(
            f"`n_resamples` must be an integer of at least {minimum}, but "
            f"{excerpt(n_resamples)} was passed."
        )
    return int(n_resamples)


def resolve_seed(seed: int | None) -> int:
    """The seed to use: ``seed`` itself, or fresh entropy (reported with the results).

    One rule for every resampling function (``compare``, ``tukey``,
    ``bootstrap_effects``, ``bayes_signed_rank``) and the command, so it lives with the
    other option checks rather than in one stage.

    >>> resolve_seed(7)
    7
    >>> resolve_seed(-1)
    Traceback (most recent call last):
    ...
    metaeval.errors.OptionError: `seed` must be a non-negative integer or None, but -1 was passed.
    """
    if seed is None:
        return int(np.random.SeedSequence().generate_state(2, np.uint64)[0] % 2**63)
    if not isinstance(seed, int | np.integer) or seed < 0:
        raise OptionError(
            f"`seed` must be a non-negative integer or None, but {excerpt(seed)} was passed."
        )
    return int(seed)


_PATH_COLUMNS = ("file", "path")
_PATH_LIMIT = 240  # a file name is what the user must find: cut only past this


def format_groups(groups: pd.DataFrame, limit: int = 10) -> str:
    """Render the first ``limit`` rows of a table of groups as ``a=x, b=y`` lines (values
    cut at 60 characters, file names at 240)."""
    lines = []
    for row in groups.head(limit).itertuples(index=False, name=None):
        lines.append(
            "  "
            + ", ".join(
                f"{col}={excerpt(val, _PATH_LIMIT if col in _PATH_COLUMNS else 60)}"
                for col, val in zip(groups.columns, row, strict=True)
            )
        )
    if len(groups) > limit:
        lines.append(f"  ... and {len(groups) - limit} more")
    return "\n".join(lines)


def quote_list(values: Sequence[Any], limit: int = 20) -> str:
    """Render a list of names for an error message, shortened past ``limit``."""
    values = list(values)
    shown = "[" + ", ".join(excerpt(v) for v in values[:limit])
    if len(values) <= limit:
        return shown + "]"
    return shown + f", ... ({len(values) - limit} more)]"


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


@dataclass
class Collected:
    """A warning held by :func:`collected_warnings` instead of being issued."""

    category: type[Warning]
    message: str
    groups: pd.DataFrame | None = None
    template: str | None = None  # warn_groups' text, "{n}" standing for the number of groups


_COLLECTOR: ContextVar[list[Collected] | None] = ContextVar("metaeval_collector", default=None)


@contextmanager
def collected_warnings() -> Iterator[list[Collected]]:
    """Hold metaeval's warnings in a list instead of issuing them.

    For work done away from the caller — a dask partition on a worker — whose
    warnings the caller re-issues once, merged (see :func:`reissue`). A context
    variable, so threads running other partitions at the same time are unaffected
    (``warnings.catch_warnings`` is process-wide).
    """
    held: list[Collected] = []
    token = _COLLECTOR.set(held)
    try:
        yield held
    finally:
        _COLLECTOR.reset(token)


def warn(
    message: str,
    category: type[Warning],
    groups: pd.DataFrame | None = None,
    template: str | None = None,
) -> None:
    """Issue a warning attributed to the first caller outside metaeval.

    Like pandas' ``find_stack_level``: the warning points at the user's line
    whether they called a module function or a ``.meta`` accessor method.
    ``groups`` (for a :class:`MetaEvalWarning`) is attached as its ``groups``.
    Inside :func:`collected_warnings` the warning is held instead.
    """
    held = _COLLECTOR.get()
    if held is not None:
        held.append(Collected(category, message, groups, template))
        return
    frame: Any = sys._getframe(1)  # the caller of warn(), i.e. stacklevel 2
    level = 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    if issubclass(category, MetaEvalWarning):
        warnings.warn(category(message, groups), stacklevel=level)
    else:
        warnings.warn(message, category, stacklevel=level)


def warn_groups(text: str, groups: pd.DataFrame, category: type[MetaEvalWarning]) -> None:
    """One warning about ``groups``: ``text``, the first ten groups, and all in ``.groups``.

    ``{n}`` in ``text`` stands for the number of groups. A table without key columns
    (the effects of one comparison, no group columns) has no names to list.
    """
    groups = groups.reset_index(drop=True)
    header = text.replace("{n}", str(len(groups)))
    if groups.shape[1] == 0:  # a table without group keys: nothing to name
        warn(f"{header}.", category, groups, template=text)
        return
    warn(f"{header}:\n{format_groups(groups)}", category, groups, template=text)


def reissue(held: Iterable[Collected], order: dict[str, Sequence[Any]] | None = None) -> None:
    """Issue held warnings once each: those of :func:`warn_groups` with the same text
    merged into one warning about all their groups, the others without repeats.

    ``order`` gives the order of a column's values (systems in the order of the
    results); other key columns are sorted, so that the groups come in the order
    the in-memory computation lists them.
    """

    merged: dict[tuple[type[Warning], str], list[Collected]] = {}
    for item in held:
        key = (item.category, item.message if item.template is None else item.template)
        merged.setdefault(key, []).append(item)
    for (category, text), items in merged.items():
        frames = [i.groups for i in items if i.groups is not None]
        if items[0].template is None or not frames:
            warn(items[0].message, category, items[0].groups)
            continue
        groups = pd.concat(frames, ignore_index=True)
        keys = [c for c in groups.columns if not pd.api.types.is_numeric_dtype(groups[c])]
        rank = {c: {v: i for i, v in enumerate(order[c])} for c in keys if order and c in order}
        groups = groups.sort_values(
            keys,
            key=lambda col: col.map(rank[col.name]) if col.name in rank else col,
            kind="stable",
        )
        warn_groups(text, groups, category)  # type: ignore[arg-type]

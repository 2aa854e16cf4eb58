"""Shared numpydoc parameter entries, written once and filled into docstrings.

A parameter that means the same thing in several functions (``scores``, ``control``,
``alpha``, ``n_resamples``, ...) is described once here, in :data:`ENTRIES`, as
seaborn's ``DocstringComponents`` does. A docstring asks for an entry with a line that
holds only its name in braces, indented as the entry should be::

    @fill_doc
    def compare(scores, control=None, *, alpha=0.05):
        \"\"\"Paired tests.

        Parameters
        ----------
        {scores}
        {alpha}
            Lines below a placeholder, indented further, extend its description.
        \"\"\"

:func:`fill_doc` replaces each such line when the function is defined, so ``__doc__``
stays a plain string for Sphinx autodoc, doctest and ``help()``. Only a whole line of
``{name}`` is a placeholder: braces anywhere else (a dict in an example, a set of
options in a type) are left as they are. An unknown name raises at import time, and
``{default}`` inside an entry becomes the function's default for that parameter (read
from its signature, so the text cannot drift from the code).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = ["ENTRIES", "PLACEHOLDER", "fill", "fill_doc"]

F = TypeVar("F", bound=Callable[..., Any])

#: A whole line ``{name}`` (only spaces around it) asks for ``ENTRIES[name]``.
PLACEHOLDER = re.compile(r"^(?P<indent>[ \t]*)\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)\}[ \t]*$", re.M)

_ANY_FRAME = """\
Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
relation, converted to pandas once (a lazy one collected)."""

_LAZY_FRAME = """\
Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
relation; a lazy one is computed in its engine (:ref:`engines-pushdown`)."""

_SCORES_LINE = "A scores table: ``task, query, system, metric, value``."

#: name → numpydoc text, written without indentation (the placeholder's line gives it).
ENTRIES: dict[str, str] = {
    # sentences, for a description that says more than the shared entry
    "any_frame": _ANY_FRAME,
    "lazy_frame": _LAZY_FRAME,
    # the table
    "scores": f"scores : pandas.DataFrame\n    {_SCORES_LINE}\n"
    + "\n".join("    " + line for line in _ANY_FRAME.splitlines()),
    "scores_lazy": f"scores : pandas.DataFrame\n    {_SCORES_LINE}\n"
    + "\n".join("    " + line for line in _LAZY_FRAME.splitlines()),
    # the systems compared
    "control": """\
control : str, list of str or None
    The control (baseline) system(s); None compares every ordered pair.""",
    "control_one": """\
control : str
    The control (baseline) system.""",
    "treatment": """\
treatment : str, list of str or None
    The treatment system(s); None means every other system.""",
    # levels
    "alpha": """\
alpha : float, default {default}
    Intervals have level 1 − alpha.""",
    # resampling
    "n_resamples": """\
n_resamples : int, default {default}
    The number of resamples (bootstrap draws or random permutations).""",
    "seed": """\
seed : int, optional
    Seed of the random draws; None draws one, stored in the result's
    ``attrs["seed"]`` so that the run can be repeated.""",
    "progress": """\
progress : bool, optional
    Report the progress of the resampling on stderr; None: only for runs longer
    than a few seconds on a terminal.""",
    # metrics
    "metric": """\
metric : str or list of str, optional
    The metric(s) to use; None uses every metric of the table.""",
    "higher_is_better": """\
higher_is_better : bool or mapping of str to bool, default True
    Whether larger values are better, for all metrics or per metric
    (``{"accuracy": True, "latency": False}``; every metric used needs an entry).""",
    # clusters
    "cluster": """\
cluster : str, optional
    A column of ``scores`` with the cluster of each query (e.g. the passage several
    questions share), constant within a query across systems and metrics; see
    :ref:`effects-clusters`.""",
}


def _format_default(value: Any) -> str:
    """A signature default as numpydoc writes it: ``10,000``, ``"REML"``, ``0.05``."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


def fill(
    doc: str,
    entries: Mapping[str, str] = ENTRIES,
    *,
    signature: inspect.Signature | None = None,
) -> str:
    """``doc`` with every placeholder line replaced by its entry, indented as the line.

    ``{default}`` in an entry is the default of the entry's first parameter in
    ``signature``. Raises :class:`ValueError` for an unknown name, and when ``{default}`` cannot be read (no signature, no such parameter, no default).

    >>> print(fill("Parameters\\n----------\\n{x}\\n", {"x": "x : int\\n    An int."}))
    Parameters
    ----------
    x : int
        An int.
    <BLANKLINE>
    >>> fill("{'a': 1}\\n{nope}", {})
    Traceback (most recent call last):
    ...
    ValueError: Unknown docstring placeholder {nope}; known: .
    """

    def replace(match: re.Match[str]) -> str:
        name, indent = match.group("name"), match.group("indent")
        if name not in entries:
            raise ValueError(
                f"Unknown docstring placeholder {{{name}}}; known: {', '.join(sorted(entries))}."
            )
        text = entries[name]
        if "{default}" in text:
            param = text.split(":", 1)[0].split(",")[0].strip()
            if signature is None or param not in signature.parameters:
                raise ValueError(f"The entry {{{name}}} needs the default of `{param}`.")
            default = signature.parameters[param].default
            if default is inspect.Parameter.empty:
                raise ValueError(f"The entry {{{name}}} needs a default, but `{param}` has none.")
            text = text.replace("{default}", _format_default(default))
        return "\n".join(indent + line if line else line for line in text.splitlines())

    return PLACEHOLDER.sub(replace, doc)


def fill_doc(func: F) -> F:
    """Fill ``func.__doc__``'s placeholders from :data:`ENTRIES` (see the module docstring).

    A docstring without a placeholder is an error: the decorator would do nothing.
    """
    doc = func.__doc__ or ""
    if not PLACEHOLDER.search(doc):
        raise ValueError(f"{func.__qualname__}'s docstring has no placeholder to fill.")
    func.__doc__ = fill(doc, signature=inspect.signature(func))
    return func

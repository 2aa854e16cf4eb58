"""Every public function and accessor method has a numpydoc ``Examples`` section that runs;
docstrings are reference: shared entries filled in once, every parameter documented, and at
most ``MAX_LINES`` lines (methods prose goes to the docs pages, linked from Notes).

The public API is every function in the ``__all__`` of the documented modules plus every
``DataFrame.meta`` method. An Examples section counts when it holds at least one ``>>>``
line and :mod:`doctest` collects it from the function's own module, so that
``pytest --doctest-modules src/metaeval`` (part of the suite, see pyproject.toml) runs it.
An accessor method's docstring is its function's (``functools.wraps``), so it is checked
through that function; ``validate`` is the one method with a docstring of its own.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import re
from collections.abc import Callable

import pandas as pd
import pytest
from _helpers import public_names

from metaeval import _docs
from metaeval.accessor import ACCESSOR_METHODS, MetaAccessor

PUBLIC_MODULES = (
    "metaeval",
    "metaeval.io",
    "metaeval.ir",
    "metaeval.plot",
    "metaeval.report",
    "metaeval.ranking",
    "metaeval.classification",
    "metaeval.datasets",
    "metaeval.measures",
    "metaeval.paired",
    "metaeval.pooling",
    "metaeval.design",
    "metaeval.schema",
    "metaeval_cli",
)

_SECTION = re.compile(r"^(\S[^\n]*)\n-{3,}[ \t]*$", re.M)  # numpydoc "Title\n-----"


def public_functions() -> dict[str, Callable]:
    """``module.qualname`` → function, for every function in a public ``__all__``."""
    found: dict[str, Callable] = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in public_names(module_name):
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def accessor_methods() -> dict[str, Callable]:
    """``DataFrame.meta.<name>`` → the method as Sphinx sees it (on the class)."""
    names = [*ACCESSOR_METHODS, "validate"]
    return {f"DataFrame.meta.{n}": getattr(pd.DataFrame.meta, n) for n in names}


def examples_section(doc: str | None) -> str:
    """The text of the numpydoc ``Examples`` section of ``doc`` ('' when there is none)."""
    doc = inspect.cleandoc(doc or "")
    headings = list(_SECTION.finditer(doc))
    for i, heading in enumerate(headings):
        if heading.group(1).strip() == "Examples":
            end = headings[i + 1].start() if i + 1 < len(headings) else len(doc)
            return doc[heading.end() : end]
    return ""


def has_examples(doc: str | None) -> bool:
    return re.search(r"^\s*>>> ", examples_section(doc), re.M) is not None


def _collected_doctests(module_name: str) -> dict[str, int]:
    """Name → number of examples, for the doctests pytest's doctest collection finds."""
    module = importlib.import_module(module_name)
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, module_name)
    return {t.name: len(t.examples) for t in tests}


def test_the_public_api_is_enumerated():
    functions, methods = public_functions(), accessor_methods()
    assert len(functions) >= 64, sorted(functions)
    # bubble, simplex, cliques, critical_difference: result methods now (issue 26);
    # power: planning (issue 28); agreement, judge_errors, ppi: judges (issue 41)
    assert len(methods) == 37, sorted(methods)
    names = {f.__name__ for f in functions.values()}
    assert {
        "effects",
        "pool",
        "analyze",
        "read_run",
        "forest",
        "evaluate",
        "to_latex",
        "friedman",
        "posthoc",
        "bayes_signed_rank",
        "critical_difference",
    } <= names
    assert all(name.startswith(("metaeval.", "metaeval_cli.")) for name in functions)


def test_the_section_parser():
    doc = """Summary.

    Returns
    -------
    int

    Examples
    --------
    >>> 1 + 1
    2

    References
    ----------
    .. [1] A paper.
    """
    assert has_examples(doc)
    assert not has_examples(doc.replace(">>> 1 + 1", "1 + 1"))
    assert not has_examples("Summary.\n\n>>> 1 + 1\n2\n")  # a doctest outside Examples
    assert not has_examples(None)


def test_every_public_function_and_accessor_method_has_examples():
    missing = [name for name, f in public_functions().items() if not has_examples(f.__doc__)]
    missing += [name for name, m in accessor_methods().items() if not has_examples(m.__doc__)]
    assert not missing, (
        f"{len(missing)} public functions or accessor methods have no Examples section "
        "with a >>> line:\n  " + "\n  ".join(sorted(missing))
    )


def test_every_examples_section_is_collected_as_a_doctest():
    """The examples run: doctest finds each one in the module that defines the function."""
    not_collected = []
    for name, func in public_functions().items():
        if has_examples(func.__doc__) and not _collected_doctests(func.__module__).get(name):
            not_collected.append(name)
    validate = f"{MetaAccessor.__module__}.MetaAccessor.validate"
    if _collected_doctests(MetaAccessor.__module__).get(validate, 0) == 0:
        not_collected.append(validate)
    assert not not_collected, not_collected


@pytest.mark.parametrize("name", sorted(ACCESSOR_METHODS))
def test_an_accessor_method_shows_its_functions_examples(name):
    module, func = ACCESSOR_METHODS[name][0].split(":")
    function = getattr(importlib.import_module(module), func)
    assert getattr(pd.DataFrame.meta, name).__doc__ == function.__doc__


def section(doc: str | None, title: str) -> str:
    """The text of the numpydoc section ``title`` of ``doc`` ('' when there is none)."""
    doc = inspect.cleandoc(doc or "")
    headings = list(_SECTION.finditer(doc))
    for i, heading in enumerate(headings):
        if heading.group(1).strip() == title:
            end = headings[i + 1].start() if i + 1 < len(headings) else len(doc)
            return doc[heading.end() : end]
    return ""


def documented_parameters(doc: str | None) -> set[str]:
    """The names the Parameters (and Other Parameters) sections describe: an entry is a line
    at the section's indentation, ``name : type`` or ``a, b : type`` or a bare name."""
    names: set[str] = set()
    for title in ("Parameters", "Other Parameters"):
        for line in section(doc, title).splitlines():
            if line and not line[0].isspace():
                head = line.split(" : ", 1)[0]
                names |= {name.strip().lstrip("*") for name in head.split(",")}
    return names


# ------------------------------------------------------- shared entries (metaeval._docs)
def test_a_filled_docstring_holds_the_entry_text_at_the_placeholders_indentation():
    def compare(scores, control=None, *, n_resamples=10_000, alpha=0.05):
        """Summary.

        Parameters
        ----------
        {scores}
        {control}
        {n_resamples}
            Not used with ``exact=True``.
        {alpha}

        Examples
        --------
        >>> {"a": {1, 2}}
        {'a': {1, 2}}
        """

    doc = inspect.cleandoc(_docs.fill_doc(compare).__doc__)
    params = section(doc, "Parameters")
    assert params.startswith("\n" + _docs.ENTRIES["scores"] + "\n" + _docs.ENTRIES["control"])
    assert "n_resamples : int, default 10,000\n" in params
    assert params.endswith(
        "exact=True``.\nalpha : float, default 0.05\n" + "    Intervals have level 1 − alpha.\n\n"
    )
    assert ">>> {\"a\": {1, 2}}\n{'a': {1, 2}}" in doc  # braces that are not a placeholder
    assert not _docs.PLACEHOLDER.search(doc)


def test_an_unknown_placeholder_or_a_missing_default_raises_at_definition():
    def unknown():
        """Summary.

        Parameters
        ----------
        {no_such_entry}
        """

    with pytest.raises(ValueError, match="no_such_entry"):
        _docs.fill_doc(unknown)

    def no_default(alpha):
        """{alpha}"""

    with pytest.raises(ValueError, match="`alpha` has none"):
        _docs.fill_doc(no_default)

    def nothing_to_fill():
        """Summary with {braces} inside a line, which is not a placeholder."""

    with pytest.raises(ValueError, match="no placeholder"):
        _docs.fill_doc(nothing_to_fill)


def test_no_public_docstring_keeps_an_unfilled_placeholder():
    docs = {name: f.__doc__ for name, f in public_functions().items()}
    docs |= {name: m.__doc__ for name, m in accessor_methods().items()}
    unfilled = {
        name: match.group(0).strip()
        for name, doc in docs.items()
        if (match := _docs.PLACEHOLDER.search(doc or ""))
    }
    assert not unfilled, unfilled


# ------------------------------------------------------------------ ratchets
MAX_LINES = 120

# Public functions whose docstring is still over MAX_LINES lines. The list may only shrink:
# move the methods prose (derivations, simulations, engine plans) to the docs page it belongs
# to and link it from Notes, then delete the name here (a name no longer over fails).
LONG_DOCSTRINGS: set[str] = {
    # second round of issue 40 (moved or renamed by other items at the same time)
    "rank_intervals",
    "pool",
    "leaderboard",
    "metareg",
    "evaluate",
    # methods prose still to move
    "read_lm_eval",
    "read_inspect",
    "plan_queries",  # its Notes are in the planning guide; the three Examples are 44 lines
    "bayes_pool",
    "read_helm",
}

# Parameters a public function does not document yet, by function name. The list may only
# shrink: a parameter documented (or gone) since must be deleted here.
UNDOCUMENTED: dict[str, set[str]] = {}


def _by_name() -> dict[str, Callable]:
    functions: dict[str, Callable] = {}
    for func in public_functions().values():
        assert functions.setdefault(func.__name__, func) is func, func.__name__
    return functions


def test_the_parameter_parser():
    doc = """Summary.

    Parameters
    ----------
    scores : pandas.DataFrame
        A table: not ``an_entry : here``.
    control, treatment
        As in effects.
    **kwargs
        Passed on.

    Returns
    -------
    out : int
    """
    assert documented_parameters(doc) == {"scores", "control", "treatment", "kwargs"}


def test_no_docstring_is_longer_than_the_limit():
    functions = _by_name()
    lines = {
        name: len(inspect.cleandoc(f.__doc__ or "").splitlines()) for name, f in functions.items()
    }
    too_long = {
        name: n for name, n in lines.items() if n > MAX_LINES and name not in LONG_DOCSTRINGS
    }
    stale = sorted(name for name in LONG_DOCSTRINGS if lines.get(name, 0) <= MAX_LINES)
    assert not too_long, (
        f"Docstrings over {MAX_LINES} lines: {too_long}. Move the methods prose to the docs "
        "page it belongs to and link it from Notes."
    )
    assert not stale, (
        f"Now within {MAX_LINES} lines (or gone): delete {stale} from LONG_DOCSTRINGS."
    )


def test_every_parameter_is_documented():
    missing: dict[str, list[str]] = {}
    stale: dict[str, list[str]] = {}
    functions = _by_name()
    for name, func in functions.items():
        params = list(inspect.signature(func).parameters)
        absent = [p for p in params if p not in documented_parameters(func.__doc__)]
        allowed = UNDOCUMENTED.get(name, set())
        if unexpected := [p for p in absent if p not in allowed]:
            missing[name] = unexpected
        if gone := sorted(allowed - set(absent)):
            stale[name] = gone
    stale |= {
        name: sorted(params) for name, params in UNDOCUMENTED.items() if name not in functions
    }
    assert not missing, f"Parameters missing from the Parameters section: {missing}"
    assert not stale, f"Documented (or gone) since: delete from UNDOCUMENTED {stale}"

"""Every public function and accessor method has a numpydoc ``Examples`` section that runs.

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
    # power: planning (issue 28)
    assert len(methods) == 33, sorted(methods)
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

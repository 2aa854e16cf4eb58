"""Every option typed with a ``Literal`` of every public function rejects a bogus value with
an :class:`~metaeval.OptionError` that names the option (scikit-learn's
``test_public_functions`` in spirit; issue 26, part 4).

The options are found from the functions' type hints, so a new public function or option
is covered without editing this file; each is called with a valid table for its first
argument and every other option at its default.
"""

from __future__ import annotations

import importlib
import inspect
import typing
import warnings

import numpy as np
import pytest

import metaeval
from metaeval import _options as vocabulary

STAGES = [
    "metaeval",
    "metaeval.io",
    "metaeval.measures",
    "metaeval.paired",
    "metaeval.pooling",
    "metaeval.ranking",
    "metaeval.plot",
    "metaeval.report",
    "metaeval.schema",
    "metaeval.datasets",
    "metaeval.classification",
    "metaeval.design",
]
BOGUS = "bogus_value"


def _is_literal(hint: typing.Any) -> bool:
    if typing.get_origin(hint) is typing.Literal:
        return True
    return any(_is_literal(arg) for arg in typing.get_args(hint))


def _literal_options() -> list[tuple[str, typing.Callable[..., typing.Any], str, typing.Any]]:
    """``(qualified name, function, option, type hint)`` of every Literal-typed option of
    every public function."""
    found = {}
    for stage in STAGES:
        module = importlib.import_module(stage)
        for name in getattr(module, "__all__", []):
            func = getattr(module, name, None)
            if not inspect.isfunction(func):
                continue
            for param, hint in typing.get_type_hints(func).items():
                if param != "return" and _is_literal(hint):
                    found[(f"{func.__module__}.{func.__qualname__}", param)] = (func, hint)
    return [(qual, func, param, hint) for (qual, param), (func, hint) in sorted(found.items())]


LITERALS = _literal_options()


OPTIONS = [(qual, func, param) for qual, func, param, _ in LITERALS]


def _first_argument(func: typing.Callable[..., typing.Any]) -> tuple[list, dict]:
    """Valid positional and keyword arguments for ``func``, its options at their defaults."""
    scores = metaeval.load_example().query("task in ['iris', 'wine']")
    first = next(iter(inspect.signature(func).parameters))
    name = func.__name__
    if name in ("correlation", "fisher_z_variance"):
        return ([np.arange(5.0), np.arange(5.0)[::-1]] if name == "correlation" else [10]), {}
    if name == "adjust_pvalues":
        return [np.array([0.01, 0.2])], {}
    if name == "fetch_ranger":
        return [], {}
    if name == "bootstrap_effects":
        return [scores], {"control": "logistic_regression"}
    if name == "correlation_effects":
        return [scores, "logistic_regression"], {}
    if name == "pairwise":
        return [metaeval.tukey(scores)], {}
    if name == "metareg":
        effects = metaeval.effects(scores, "logistic_regression")
        return [effects.assign(size=effects["n"])], {"mods": ["size"]}
    effects = metaeval.effects(scores, "logistic_regression")
    if name == "forest":  # one metric per figure, drawn with its pooled result
        accuracy = effects.query("metric == 'accuracy'")
        return [accuracy, metaeval.pool(accuracy)], {}
    if name == "forest_plot":  # one metric per figure
        return [effects.query("metric == 'accuracy'")], {}
    if first in ("scores", "data"):
        needs = "control" in inspect.signature(func).parameters
        return [scores], ({"control": "logistic_regression"} if needs else {})
    return [effects], {}


def test_every_literal_option_is_found():
    """The search itself: the options named in the issue are among those tested."""
    names = {(qual.rsplit(".", 1)[-1], param) for qual, _, param in OPTIONS}
    assert {
        ("pool", "method"),
        ("effects", "effect"),
        ("compare", "test"),
        ("leaderboard", "aggregation"),
        ("to_latex", "show"),
    } <= names
    assert len(OPTIONS) >= 30
    assert len(ACCESSOR_OPTIONS) >= 25  # defined below, at import


@pytest.mark.parametrize(
    ("qual", "func", "param"), OPTIONS, ids=[f"{q}-{p}" for q, _, p in OPTIONS]
)
def test_a_bogus_option_is_an_option_error_naming_it(qual, func, param):
    args, kwargs = _first_argument(func)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metaeval.MetaEvalWarning)
        with pytest.raises(metaeval.OptionError, match=rf"`{param}`"):
            func(*args, **{**kwargs, param: BOGUS})


def _accessor_options() -> list[tuple[str, str, typing.Callable[..., typing.Any], str]]:
    """(accessor method, function, option) for every method forwarding to a tested function."""
    from metaeval.accessor import ACCESSOR_METHODS

    out = []
    for method, entry in sorted(ACCESSOR_METHODS.items()):
        module, name = entry.function.split(":")
        func = getattr(importlib.import_module(module), name)
        for qual, tested, param in OPTIONS:
            if tested is func:
                out.append((method, qual, func, param))
    return [(m, p, f, q) for m, q, f, p in out]


ACCESSOR_OPTIONS = _accessor_options()


@pytest.mark.parametrize(
    ("method", "param", "func", "qual"),
    ACCESSOR_OPTIONS,
    ids=[f"meta.{m}-{p}" for m, p, _, _ in ACCESSOR_OPTIONS],
)
def test_a_bogus_option_of_an_accessor_method_is_an_option_error_naming_it(
    method, param, func, qual
):
    args, kwargs = _first_argument(func)
    table, rest = args[0], args[1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metaeval.MetaEvalWarning)
        with pytest.raises(metaeval.OptionError, match=rf"`{param}`"):
            getattr(table.meta, method)(*rest, **{**kwargs, param: BOGUS})


# ---------------------------------------------------------------- the vocabulary
# Every option typed with a Literal in a public signature takes its values from a Literal
# alias of metaeval._options, and help() shows it evaluated (issue 26; ARCHITECTURE.md §3.3).


def _literals(hint: typing.Any) -> list[tuple[typing.Any, ...]]:
    """The value tuples of every ``Literal`` inside ``hint`` (``Literal[...] | None`` too)."""
    if typing.get_origin(hint) is typing.Literal:
        return [typing.get_args(hint)]
    return [values for arg in typing.get_args(hint) for values in _literals(arg)]


VOCABULARY = {
    typing.get_args(alias): name
    for name, alias in vars(vocabulary).items()
    if typing.get_origin(alias) is typing.Literal
}


def test_literal_options_are_found():
    assert len(LITERALS) > 30, len(LITERALS)


@pytest.mark.parametrize(
    ("qual", "func", "param", "hint"), LITERALS, ids=[f"{o[0]}:{o[2]}" for o in LITERALS]
)
def test_every_literal_comes_from_options_and_shows_evaluated(qual, func, param, hint):
    for values in _literals(hint):
        assert values in VOCABULARY, (
            f"{qual}({param}=...) spells its own Literal{list(values)}; define it in "
            "metaeval._options and import it"
        )
    shown = inspect.signature(func).parameters[param].annotation
    assert not isinstance(shown, str), (
        f"help({qual}) shows {param}: {shown!r}; decorate it with _options.literal_signature"
    )

"""The ``.meta`` accessor shows each module function's face: its signature without the table,
its docstring, its positional arguments; and it tells table kinds apart."""

from __future__ import annotations

import importlib
import inspect

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval.accessor import ACCESSOR_METHODS, MetaAccessor


def _function(target: str):
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("name", sorted(ACCESSOR_METHODS))
def test_every_method_has_the_functions_signature_without_the_table(name, scores):
    func = _function(ACCESSOR_METHODS[name][0])
    bound = getattr(scores.meta, name)
    expected = list(inspect.signature(func).parameters.values())[1:]
    assert list(inspect.signature(bound).parameters.values()) == expected
    assert inspect.signature(bound).return_annotation == inspect.signature(func).return_annotation
    assert bound.__doc__ == func.__doc__ and "(**kwargs)" not in str(inspect.signature(bound))
    assert bound.__name__ == func.__name__
    # on the class (what Sphinx documents as DataFrame.meta.<name>): self first
    unbound = getattr(pd.DataFrame.meta, name)
    assert list(inspect.signature(unbound).parameters)[0] == "self"
    assert list(inspect.signature(unbound).parameters.values())[1:] == expected


def test_every_public_method_of_the_accessor_is_listed():
    public = {n for n in vars(MetaAccessor) if not n.startswith("_")}
    assert public == set(ACCESSOR_METHODS) | {"validate"}


def test_options_show_their_values_and_the_first_argument_is_positional(scores):
    params = inspect.signature(scores.meta.pool).parameters
    assert "Literal['EE', 'FE', 'DL'" in str(params["method"].annotation)
    assert params["method"].default == "REML"
    by_position = scores.meta.effects("ctrl")
    by_name = metaeval.effects(scores, control="ctrl")
    pd.testing.assert_frame_equal(by_position, by_name)
    with pytest.raises(TypeError, match="positional"):
        scores.meta.effects("ctrl", "b")  # treatment is keyword-only
    pooled = by_position.meta.pool(method="DL", ci="z")
    pd.testing.assert_frame_equal(pooled, metaeval.pool(by_name, method="DL", ci="z"))


def test_a_method_of_another_kind_names_the_kind_and_the_way(scores):
    eff = scores.meta.effects("ctrl")
    with pytest.raises(metaeval.TableKindError, match=r"\.meta\.pool\(\) needs an effects table"):
        scores.meta.pool()
    with pytest.raises(
        metaeval.TableKindError,
        match=r"\.meta\.pairwise\(\) needs a compare\(\) table .* or a tukey\(\) table",
    ):
        eff.meta.pairwise()
    with pytest.raises(metaeval.TableKindError, match="Compute effects first"):
        scores.meta.forest()
    assert isinstance(eff.meta.validate(), pd.DataFrame)


def test_the_accessor_does_not_change_the_table(scores):
    before = scores.copy()
    scores.meta.effects("ctrl").meta.pool()
    pd.testing.assert_frame_equal(scores, before)
    assert np.all(scores.columns == before.columns)

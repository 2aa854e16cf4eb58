"""``.metaeval`` on polars DataFrames and LazyFrames (metaeval.engines)."""

from __future__ import annotations

import inspect
import json

import pandas as pd
import pytest
from _engines import assert_same, pl
from _helpers import run_fresh

import metaeval
from metaeval.accessor import ACCESSOR_METHODS


@pytest.fixture(scope="module")
def example() -> pd.DataFrame:
    return metaeval.load_example()


def test_every_accessor_method_with_its_functions_face(example):
    frame = pl.from_pandas(example)
    for name in ACCESSOR_METHODS:
        method = getattr(frame.metaeval, name)
        func = getattr(example.meta, name)
        assert inspect.signature(method) == inspect.signature(func), name
        assert method.__doc__ == func.__doc__, name


@pytest.mark.parametrize("lazy", [False, True])
def test_methods_give_the_pandas_results(example, lazy):
    frame = pl.from_pandas(example)
    frame = frame.lazy() if lazy else frame
    assert_same(
        frame.metaeval.effects("knn", effect="md"), example.meta.effects("knn", effect="md")
    )
    assert_same(frame.metaeval.means(), example.meta.means())
    effects = pl.from_pandas(example.meta.effects("knn", effect="md"))
    assert_same(effects.metaeval.pool(), example.meta.effects("knn", effect="md").meta.pool())
    assert frame.metaeval.validate() is not None


def test_a_method_for_another_kind_of_table_says_so(example):
    with pytest.raises(metaeval.TableKindError, match=r"\.metaeval\.pool\(\) needs an effects"):
        pl.from_pandas(example).lazy().metaeval.pool()


def test_registered_when_polars_is_imported_after_metaeval():
    code = (
        "import sys, json, metaeval; before = 'polars' in sys.modules; import polars as pl;"
        "df = pl.DataFrame({'task': ['a'] * 4, 'query': ['1', '2'] * 2, 'system': ['s'] * 2 +"
        " ['t'] * 2, 'metric': ['m'] * 4, 'value': [0.1, 0.5, 0.3, 0.4]});"
        "print(json.dumps([before, df.metaeval.effects('s', effect='md')['n'].tolist()]))"
    )
    assert json.loads(run_fresh(code).strip().splitlines()[-1]) == [False, [2]]

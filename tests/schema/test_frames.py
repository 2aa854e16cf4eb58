"""Any frame in (metaeval.engines.frames, metaeval.engines.survey): conversion, dispatch, and
the checks of validate_scores with the same messages from every engine."""

from __future__ import annotations

import importlib
import inspect
import json

import numpy as np
import pandas as pd
import pytest
from _engines import ENGINES, LAZY, duckdb, in_engine, pa, pl
from _helpers import run_fresh

import metaeval
from metaeval.accessor import ACCESSOR_METHODS
from metaeval.engines import LazyTable, any_frame, frame_kind, to_pandas


@pytest.fixture(scope="module")
def example() -> pd.DataFrame:
    return metaeval.load_example()


def test_frame_kinds(example):
    kinds = {engine: frame_kind(in_engine(example, engine)) for engine in ENGINES}
    assert kinds == {
        "polars": "polars",
        "arrow": "arrow",
        "polars-lazy": "polars-lazy",
        "duckdb": "duckdb",
    }
    assert frame_kind(example) == "pandas" and frame_kind({"a": [1]}) is None


@pytest.mark.parametrize("engine", ENGINES)
def test_converted_once_to_the_pandas_table(example, engine):
    """String keys and float values, the rows in order: what the pandas path takes."""
    frame = in_engine(example, engine)
    converted = to_pandas(frame)
    pd.testing.assert_frame_equal(converted, example, check_dtype=False)
    assert converted["value"].dtype == np.float64
    assert all(pd.api.types.is_string_dtype(converted[c]) for c in ("task", "query", "system"))


def test_integer_values_and_ids_convert_as_in_pandas():
    df = pd.DataFrame(
        {"task": "a", "query": [3, 1, 2], "system": "s", "metric": "m", "value": [1, 0, 1]}
    )
    ref = metaeval.validate_scores(df)
    for engine in ENGINES:
        got = to_pandas(in_engine(df, engine))
        assert got["value"].dtype == np.float64  # cast in the engine
        pd.testing.assert_frame_equal(metaeval.validate_scores(got), ref, check_dtype=False)


def test_polars_categories_are_sorted_an_enum_keeps_its_order():
    df = pl.DataFrame({"system": ["b", "c", "a"], "metric": ["y", "x", "y"]}).with_columns(
        pl.col("system").cast(pl.Categorical), pl.col("metric").cast(pl.Enum(["y", "x"]))
    )
    out = to_pandas(df)
    assert out["system"].cat.categories.tolist() == ["a", "b", "c"]  # no order declared
    assert out["metric"].cat.categories.tolist() == ["y", "x"]
    assert out["system"].tolist() == ["b", "c", "a"]


def test_the_input_is_not_changed(example):
    frame = pl.from_pandas(example[example["task"] == "wine"])
    before = frame.clone()
    metaeval.effects(frame, "knn", effect="md")
    metaeval.effects(frame.lazy(), "knn", effect="md")
    assert frame.equals(before)


def test_any_frame_takes_the_table_by_name_and_leaves_pandas_alone(example):
    seen = []

    @any_frame
    def first(scores, n=1):
        seen.append(scores)
        return type(scores).__name__

    assert first(scores=pl.from_pandas(example.head(3))) == "DataFrame"
    assert isinstance(seen[-1], pd.DataFrame)
    assert first(example) == "DataFrame" and seen[-1] is example
    assert first([1, 2]) == "list"  # not a frame: the function's own error names it
    with pytest.raises(TypeError):
        first()
    with pytest.raises(metaeval.SchemaError, match="must be a pandas DataFrame .or a polars"):
        metaeval.validate_scores([1, 2])


def _takes_a_table(func) -> bool:
    first = next(iter(inspect.signature(func).parameters), "")
    return first in ("scores", "effects", "table", "df", "results", "data")


def test_every_public_function_that_takes_a_table_takes_any_frame():
    """The rule, written once: every accessor method's function and every public
    function whose first parameter is a table goes through any_frame."""
    from _helpers import public_names

    found = {}
    for entry in ACCESSOR_METHODS.values():
        module, name = entry.function.split(":")
        found[entry.function] = getattr(importlib.import_module(module), name)
    for module in (
        "metaeval",
        "metaeval.io",
        "metaeval.paired",
        "metaeval.pooling",
        "metaeval.ranking",
        "metaeval.report",
        "metaeval.plot",
        "metaeval.design",
        "metaeval.schema",
    ):
        for name in public_names(module):
            obj = getattr(importlib.import_module(module), name)
            # to_ranx takes judgments or a run (a file, a dict or a frame), not scores
            if inspect.isfunction(obj) and _takes_a_table(obj) and name != "to_ranx":
                found[f"{module}:{name}"] = obj
    unwrapped = sorted(n for n, f in found.items() if not hasattr(f, "__any_frame__"))
    assert not unwrapped, unwrapped
    assert len(found) > 40


def test_pandas_input_imports_no_narwhals():
    code = (
        "import sys, json, metaeval; s = metaeval.load_example();"
        "metaeval.effects(s, 'knn'); metaeval.pool(metaeval.effects(s, 'knn'));"
        "print(json.dumps([m for m in ('narwhals', 'polars', 'duckdb') if m in sys.modules]))"
    )
    assert json.loads(run_fresh(code).strip().splitlines()[-1]) == []


# ------------------------------------------------------------------ the same errors
def _faulty(example: pd.DataFrame) -> dict[str, pd.DataFrame]:
    head = example.head(60).reset_index(drop=True)
    nan = head.copy()
    nan.loc[[7, 30], "value"] = np.nan
    inf = head.copy()
    inf.loc[12, "value"] = np.inf
    dup = pd.concat([head, head.iloc[[4, 9]]], ignore_index=True)
    null_key = head.copy()
    null_key.loc[3, "system"] = None
    empty = head.copy()
    empty.loc[[5, 6], "task"] = ""
    several = dup.copy()
    several.loc[[1, 2], "value"] = np.nan
    several.loc[50, "query"] = None
    return {
        "missing column": head.drop(columns="metric"),
        "missing value column": head.drop(columns="value"),
        "NaN": nan,
        "inf": inf,
        "duplicate key": dup,
        "missing name": null_key,
        "empty name": empty,
        "several": several,
        "text value": head.assign(value=head["value"].astype(str)),
    }


def _message(func, table) -> str:
    with pytest.raises(metaeval.SchemaError) as err:
        func(table)
    return str(err.value)


@pytest.mark.parametrize("engine", ENGINES)
def test_schema_errors_have_the_pandas_messages(example, engine):
    """Missing columns, NaN and ±inf values, duplicate keys with their first rows and key,
    missing and empty names: the same text whatever the engine (a lazy one numbers its
    rows in scan order, the pandas index of the same table)."""
    for name, table in _faulty(example).items():
        ref = _message(metaeval.validate_scores, table)
        frame = in_engine(table, engine)
        assert _message(metaeval.validate_scores, frame) == ref, name
        if name != "text value":
            assert _message(lambda t: metaeval.effects(t, None), frame) == ref, name
    assert "rows [4, 9, 60, 61] with key ('iris', '4', 'logistic_regression'" in _message(
        metaeval.validate_scores, _faulty(example)["duplicate key"]
    )


@pytest.mark.parametrize("engine", LAZY)
def test_lazy_validation_returns_the_frame(example, engine):
    frame = in_engine(example, engine)
    assert metaeval.validate_scores(frame) is frame
    assert metaeval.validate_effects(in_engine(metaeval.effects(example, "knn"), engine)).shape


@pytest.mark.parametrize("engine", LAZY)
def test_no_rows(example, engine):
    empty = in_engine(example.head(0), engine)
    with pytest.raises(metaeval.SchemaError, match="no rows"):
        metaeval.effects(empty, "knn")


#: Every function that computes in a lazy table's engine (or fetches it task by task).
PUSHED_DOWN = {
    "validate_scores": lambda t: metaeval.validate_scores(t),
    "effects": lambda t: metaeval.effects(t, "knn"),
    "sufficient_statistics": lambda t: metaeval.sufficient_statistics(t),
    "analyze": lambda t: metaeval.analyze(t, "knn"),
    "compare t": lambda t: metaeval.compare(t, "knn"),
    "compare randomization": lambda t: metaeval.compare(t, "knn", test="randomization"),
    "means": lambda t: metaeval.means(t),
    "anova": lambda t: metaeval.anova(t),
    "tukey": lambda t: metaeval.tukey(t),
}


def _empty_tables(example: pd.DataFrame) -> dict[str, pd.DataFrame]:
    columns = list(metaeval.schema.SCORE_COLUMNS)
    return {
        "typed": example.head(0),
        "untyped": pd.DataFrame(columns=columns),  # object columns: null types elsewhere
        "without metric": pd.DataFrame(columns=[c for c in columns if c != "metric"]),
    }


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("call", list(PUSHED_DOWN))
def test_an_empty_table_says_no_rows_in_every_engine(example, engine, call):
    """The pandas message, word for word (the guide promises it): "no rows" first, a
    missing column named in it, however the engine types the empty columns."""
    func = PUSHED_DOWN[call]
    for name, empty in _empty_tables(example).items():
        ref = _message(func, empty)
        assert ref.startswith("The scores table has no rows"), (name, ref)
        assert _message(func, in_engine(empty, engine)) == ref, (name, engine)
    if engine.startswith("polars"):  # made in polars: every column of the Null type
        native = pl.DataFrame({c: [] for c in metaeval.schema.SCORE_COLUMNS})
        native = native.lazy() if engine == "polars-lazy" else native
        assert _message(func, native) == _message(func, _empty_tables(example)["typed"])


def test_lazy_table_is_passed_through_and_collected_where_not_pushed_down(example):
    frame = in_engine(example, "duckdb")
    table = LazyTable(frame)
    assert table.engine == "duckdb" and table.columns == list(example.columns)
    board = metaeval.leaderboard(frame)  # no pushdown: collected once
    pd.testing.assert_frame_equal(board, metaeval.leaderboard(example))
    pooled = metaeval.pool(pa.Table.from_pandas(metaeval.effects(example, "knn")))
    pd.testing.assert_frame_equal(pooled, metaeval.pool(metaeval.effects(example, "knn")))
    assert isinstance(duckdb, object)

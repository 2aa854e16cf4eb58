"""Validation of scores and effects tables: every problem reported at once."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import SchemaError, TableKindError


def _good() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "task": ["a", "a", "a", "a"],
            "query": ["q1", "q2", "q1", "q2"],
            "system": ["s", "s", "t", "t"],
            "metric": ["acc"] * 4,
            "value": [1.0, 0.0, 1.0, 1.0],
            "domain": ["news"] * 4,  # extra task-level column: allowed
        }
    )


def test_valid_table_passes_and_keeps_extra_columns():
    out = metaeval.validate_scores(_good())
    assert list(out.columns) == ["task", "query", "system", "metric", "value", "domain"]


def test_all_problems_reported_at_once():
    df = _good().drop(columns="metric")
    df.loc[1, "value"] = np.nan
    df.loc[2, "value"] = np.inf
    df.loc[3, ["query", "system"]] = ["q1", "t"]  # duplicate of row 2
    with pytest.raises(SchemaError) as info:
        metaeval.validate_scores(df)
    msg = str(info.value)
    assert "4 problems" in msg
    assert "column 'metric' is missing" in msg
    assert "missing values (NaN/None) in 1 row, e.g. row [1]" in msg
    assert "non-finite values (±inf) in 1 row, e.g. row [2]" in msg
    assert "2 rows share their (task, query, system) key" in msg
    cases = info.value.failure_cases
    assert set(cases["problem"]) == {
        "missing column",
        "missing values (NaN/None)",
        "non-finite values (±inf)",
        "duplicate keys",
    }


def test_mistyped_columns():
    df = _good()
    df["value"] = ["1", "0", "1", "1"]
    df["task"] = [1.5, 1.5, 1.5, 1.5]
    with pytest.raises(SchemaError) as info:
        metaeval.validate_scores(df)
    msg = str(info.value)
    assert "column 'value' has the wrong type (needs float values)" in msg
    assert (
        "column 'task' has the wrong type (needs strings or a categorical) but has dtype float64"
        in msg
    )


def test_lossless_conversions():
    df = _good()
    df["query"] = [1, 2, 1, 2]
    df["value"] = [True, False, True, True]
    out = metaeval.validate_scores(df)
    assert out["value"].dtype == np.float64
    assert out["query"].tolist() == ["1", "2", "1", "2"]
    assert df["query"].dtype.kind == "i"  # the input is not modified


def test_categorical_keys_accepted():
    df = _good().astype({"task": "category", "system": "category"})
    assert metaeval.validate_scores(df) is df


def test_null_key_reported():
    df = _good().astype({"system": "category"})
    df["system"] = df["system"].cat.add_categories("x")
    df.loc[0, "system"] = np.nan
    with pytest.raises(SchemaError, match="column 'system' has missing values"):
        metaeval.validate_scores(df)


def test_methods_validate_first():
    df = _good()
    df.loc[0, "value"] = np.inf
    with pytest.raises(SchemaError, match="non-finite"):
        df.meta.effects(control="s")
    dup = pd.concat([_good(), _good().iloc[:1]], ignore_index=True)
    with pytest.raises(SchemaError, match=r"rows \[0, 4\] with key \('a', 'q1', 's', 'acc'\)"):
        dup.meta.effects(control="s")


def test_scores_maps_column_names():
    df = _good().rename(columns={"task": "dataset", "query": "qid", "value": "score"})
    out = metaeval.scores(df, task="dataset", query="qid", value="score")
    assert list(out.columns[:5]) == ["task", "query", "system", "metric", "value"]
    with pytest.raises(
        SchemaError, match=r"metaeval.scores\(\): column\(s\) \['run'\] are not in the table"
    ):
        metaeval.scores(df, task="dataset", query="qid", value="score", system="run")
    clash = df.assign(task="x")
    with pytest.raises(SchemaError, match="already has column"):
        metaeval.scores(clash, task="dataset", query="qid", value="score")


def test_accessor_kinds():
    with pytest.raises(TableKindError, match=r"metaeval.scores\(df, task=\.\.\."):
        pd.DataFrame({"score": [1.0]}).meta  # noqa: B018
    eff = pd.DataFrame({"task": ["a"], "effect": [0.1], "variance": [0.01]})
    with pytest.raises(
        TableKindError, match=r"\.meta\.effects\(\) needs a scores table .* effects table"
    ):
        eff.meta.effects(control="x")
    with pytest.raises(TableKindError, match=r"Compute effects first"):
        _good().meta.pool()
    assert isinstance(eff.meta.validate(), pd.DataFrame)


def test_effects_table_validation():
    eff = pd.DataFrame(
        {"task": list("abc"), "effect": [0.1, np.inf, 0.2], "variance": [0.01, 0.02, 0.0]}
    )
    with pytest.raises(SchemaError) as info:
        metaeval.validate_effects(eff)
    msg = str(info.value)
    assert "column 'effect' has non-finite values (±inf) in 1 row, e.g. row [1]" in msg
    assert (
        "column 'variance' has values that are not positive and finite in 1 row, e.g. row [2]"
        in msg
    )


def test_pandera_models_are_exposed():
    from metaeval import schema

    schema.Scores.validate(_good())
    pooled = _good().meta.effects(control="s", effect="md", treatment="t")
    assert len(pooled) == 1


def test_object_value_column_of_numbers_is_converted_and_text_is_located():
    base = pd.DataFrame(
        {
            "task": ["t"] * 3,
            "query": ["1", "2", "3"],
            "system": "s",
            "metric": "m",
            "value": pd.Series([0.5, 1, True], dtype=object),
        }
    )
    out = metaeval.validate_scores(base)
    assert out["value"].dtype == np.float64 and out["value"].tolist() == [0.5, 1.0, 1.0]
    assert base["value"].dtype == object  # the input is not changed
    text = base.assign(value=pd.Series([0.5, "0.25", None], dtype=object)).set_axis([7, 8, 9])
    with pytest.raises(SchemaError) as err:
        metaeval.validate_scores(text)
    assert "rows [8] with values ['0.25']" in str(err.value)
    assert "pd.to_numeric(df['value'])" in str(err.value)

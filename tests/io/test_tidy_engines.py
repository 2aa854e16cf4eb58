"""read_scores(engine="duckdb" | "polars"): a lazy table over Parquet files."""

from __future__ import annotations

import pandas as pd
import pytest
from _engines import as_parquet, assert_same

import metaeval
from metaeval.io import read_scores, write_scores


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return as_parquet(metaeval.load_example(), tmp_path_factory.mktemp("scores"))


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
def test_a_folder_as_a_lazy_table(folder, engine):
    frame = read_scores(folder, engine=engine)
    assert metaeval.engines.is_lazy(frame)
    ref = metaeval.effects(read_scores(folder), "knn", effect="md")
    assert_same(metaeval.effects(frame, "knn", effect="md"), ref)


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
def test_columns_renamed_and_constants_added(folder, tmp_path, engine):
    renamed = metaeval.load_example().rename(columns={"task": "dataset", "value": "score"})
    renamed = renamed[renamed["metric"] == "accuracy"].drop(columns="metric").reset_index(drop=True)
    path = tmp_path / "renamed.parquet"
    renamed.to_parquet(path)
    mapping = {"columns": {"task": "dataset", "value": "score"}, "constants": {"metric": "acc"}}
    frame = read_scores(path, engine=engine, **mapping)
    ref = read_scores(path, **mapping)
    pd.testing.assert_frame_equal(
        metaeval.engines.to_pandas(frame)[list(ref.columns)], ref, check_dtype=False
    )


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
def test_what_a_lazy_engine_cannot_read(folder, tmp_path, engine):
    write_scores(metaeval.load_example().head(10), tmp_path / "a.csv")
    with pytest.raises(metaeval.FormatError, match="reads Parquet files only"):
        read_scores(tmp_path / "a.csv", engine=engine)
    metaeval.load_example().drop(columns="metric").to_parquet(tmp_path / "b.parquet")
    with pytest.raises(metaeval.FormatError, match=r"the column\(s\) \['metric'\] are missing"):
        read_scores(tmp_path / "b.parquet", engine=engine)
    with pytest.raises(metaeval.OptionError, match="`engine`"):
        read_scores(folder, engine="spark")
    with pytest.raises(metaeval.OptionError, match="lazy=True"):
        read_scores(folder, lazy=True, engine=engine)


def test_the_order_a_parquet_file_declares_in_every_engine(tmp_path):
    """Issue 39, item 29: a polars Enum (an ordered dictionary) keeps its order, a polars
    Categorical (a dictionary that declares none) is sorted — by pandas and by the lazy
    engines alike, where pandas kept the dictionary's order and DuckDB dropped the Enum's."""
    pl = pytest.importorskip("polars")
    example = metaeval.load_example()
    systems = ["random_forest", "knn", "naive_bayes", "logistic_regression", "gradient_boosting"]
    frame = pl.from_pandas(example.iloc[::-1].reset_index(drop=True)).with_columns(
        pl.col("task").cast(pl.Categorical), pl.col("system").cast(pl.Enum(systems))
    )
    path = tmp_path / "polars.parquet"
    frame.write_parquet(path)
    frame.rename({"system": "run"}).write_parquet(tmp_path / "renamed.parquet")
    for engine in (None, "polars", "duckdb"):
        got = metaeval.means(read_scores(path, engine=engine))
        assert got["task"].unique().tolist() == sorted(example["task"].unique()), engine
        assert got["system"].unique().tolist() == systems, engine
        renamed = read_scores(
            tmp_path / "renamed.parquet", engine=engine, columns={"system": "run"}
        )
        assert metaeval.means(renamed)["system"].unique().tolist() == systems, engine

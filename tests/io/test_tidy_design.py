"""The replicate design kept with the data (issue 39, item 13): a table of epochs written
by write_scores, in any format, read back by any reader and engine, pools as epochs.

The reference is the in-memory pandas table (whose ``attrs["replicates"]`` says
``"epochs"``); it is checked in turn against the table averaged over its epochs, which
is what the epochs design means (each item's mean is the unit, nothing is added).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _engines import ENGINES, assert_same, duckdb, in_engine, pl

import metaeval
from metaeval.io import read_scores, write_scores
from metaeval.schema import REPLICATE_DESIGN, average_replicates

pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture(scope="module")
def epochs() -> pd.DataFrame:
    """Two models answering 40 questions of each of 5 tasks 4 times (0/1 scores): the
    questions' difficulty varies, each answer is a coin with the question's chance."""
    rng = np.random.default_rng(39)
    tasks, items, runs = 5, 40, 4
    easy = rng.uniform(0.15, 0.85, (tasks, items))
    rows = []
    for t in range(tasks):
        for q in range(items):
            for system, gain in (("base", 0.0), ("tuned", 0.05)):
                p = min(easy[t, q] + gain, 1.0)
                for epoch in range(1, runs + 1):
                    rows.append(
                        (f"task{t}", f"q{q}", system, "correct", float(rng.random() < p), epoch)
                    )
    df = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value", "replicate"])
    df.attrs["replicates"] = "epochs"  # as read_inspect records it
    return df


def _pooled(frame) -> tuple[pd.DataFrame, pd.DataFrame]:
    effects = metaeval.effects(frame, "base", effect="md")
    return effects, metaeval.pool(effects)


@pytest.fixture(scope="module")
def reference(epochs):
    effects, pooled = _pooled(epochs)
    assert effects.attrs["replicates"] == "epochs"
    # epochs: the items' means are the unit and nothing is added
    averaged = metaeval.effects(average_replicates(epochs), "base", effect="md")
    cols = ["effect", "variance", "ci_low", "ci_high"]
    np.testing.assert_allclose(effects[cols], averaged[cols], rtol=1e-14, atol=1e-16)
    # the design matters here: taken as crossed seeds the interval is another one
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metaeval.MetaEvalWarning)
        crossed = metaeval.pool(metaeval.effects(epochs, "base", effect="md", replicates="crossed"))
    assert abs(crossed["ci_low"].iloc[0] - pooled["ci_low"].iloc[0]) > 1e-3
    return effects, pooled


def _readers(path, fmt: str) -> dict:
    """Every reader of a file of this format: read_scores with each of its engines, and
    the engines' own readers (a user's pl.read_csv, duckdb.read_json, ...)."""
    name = str(path)
    con = duckdb.connect()
    if fmt == "parquet":
        return {
            "read_scores": lambda: read_scores(path),
            "read_scores polars": lambda: read_scores(path, engine="polars"),
            "read_scores duckdb": lambda: read_scores(path, engine="duckdb"),
            "pl.read_parquet": lambda: pl.read_parquet(name),
            "pq.read_table": lambda: pq.read_table(name),
            "duckdb.read_parquet": lambda: con.read_parquet(name),
        }
    if fmt == "csv":
        from pyarrow import csv

        return {
            "read_scores": lambda: read_scores(path),
            "pl.read_csv": lambda: pl.read_csv(name),
            "pl.scan_csv": lambda: pl.scan_csv(name),
            "pyarrow.csv": lambda: csv.read_csv(name),
            "duckdb.read_csv": lambda: con.read_csv(name),
        }
    from pyarrow import json

    return {
        "read_scores": lambda: read_scores(path),
        "pl.read_ndjson": lambda: pl.read_ndjson(name),
        "pl.scan_ndjson": lambda: pl.scan_ndjson(name),
        "pyarrow.json": lambda: json.read_json(name),
        "duckdb.read_json": lambda: con.read_json(name),
    }


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_epochs_pool_as_epochs_from_every_format_and_engine(tmp_path, epochs, reference, fmt):
    """No reader guesses (the suite turns the guess's warning into an error) and every one
    gives the in-memory table's effects and pooled interval, to 1e-12."""
    ref_effects, ref_pooled = reference
    path = tmp_path / f"epochs.{fmt}"
    write_scores(epochs, path)
    for name, read in _readers(path, fmt).items():
        effects, pooled = _pooled(read())
        assert effects.attrs["replicates"] == "epochs", name
        assert_same(effects, ref_effects)
        assert_same(pooled, ref_pooled)


def test_a_folder_of_files_keeps_the_design(tmp_path, epochs, reference):
    folder = tmp_path / "by-task"
    folder.mkdir()
    for task, part in epochs.groupby("task"):
        write_scores(part, folder / f"{task}.parquet")
    for engine in (None, "polars", "duckdb"):
        assert_same(_pooled(read_scores(folder, engine=engine))[1], reference[1])


def test_a_parquet_file_pandas_wrote_keeps_its_attrs_in_every_engine(tmp_path, epochs, reference):
    """pandas' own to_parquet keeps attrs in the file's metadata (no column): the lazy
    engines read it from there."""
    path = tmp_path / "pandas.parquet"
    epochs.to_parquet(path, index=False)
    assert REPLICATE_DESIGN not in pq.read_schema(path).names
    for engine in (None, "polars", "duckdb"):
        assert_same(_pooled(read_scores(path, engine=engine))[1], reference[1])


def test_written_as_a_column_and_read_back_as_the_same_table(tmp_path, epochs):
    path = tmp_path / "epochs.csv"
    write_scores(epochs, path)
    assert pd.read_csv(path)[REPLICATE_DESIGN].unique().tolist() == ["epochs"]
    back = read_scores(path)
    assert back.attrs["replicates"] == "epochs"
    assert list(back.columns) == list(epochs.columns)  # the column back in attrs
    assert REPLICATE_DESIGN not in epochs.columns  # the input is not changed


@pytest.mark.parametrize("engine", ["pandas", *ENGINES])
def test_a_guessed_design_warns(epochs, engine):
    """Replicates whose design nothing states: the guess is said, in every engine."""
    bare = epochs.copy()
    bare.attrs = {}
    frame = in_engine(bare, engine)
    with pytest.warns(metaeval.MetaEvalWarning, match=r"guessed 'crossed'.*replicates="):
        effects = metaeval.effects(frame, "base", effect="md")
    assert effects.attrs["replicates"] == "crossed"
    stated = metaeval.effects(frame, "base", effect="md", replicates="epochs")  # no warning
    assert stated.attrs["replicates"] == "epochs"


@pytest.mark.parametrize("engine", ["pandas", *ENGINES])
def test_the_design_column_states_it_in_every_engine(epochs, reference, engine):
    bare = epochs.copy()
    bare.attrs = {}
    frame = in_engine(bare.assign(**{REPLICATE_DESIGN: "epochs"}), engine)
    effects, pooled = _pooled(frame)
    assert_same(pooled, reference[1])
    assert REPLICATE_DESIGN not in effects.columns  # not a task-level column


def test_a_design_that_contradicts_itself_is_refused(tmp_path, epochs):
    mixed = epochs.assign(
        **{REPLICATE_DESIGN: np.where(epochs["task"] == "task0", "crossed", "epochs")}
    )
    with pytest.raises(
        metaeval.SchemaError, match=r"'replicate_design' .* \['crossed', 'epochs'\]"
    ):
        metaeval.effects(mixed, "base", effect="md")
    with pytest.raises(metaeval.SchemaError, match=r"'replicate_design' .*'seeds'"):
        metaeval.effects(epochs.assign(**{REPLICATE_DESIGN: "seeds"}), "base", effect="md")
    with pytest.raises(metaeval.SchemaError, match=r"attrs\['replicates'\] .* 'epochs'"):
        metaeval.effects(epochs.assign(**{REPLICATE_DESIGN: "nested"}), "base", effect="md")
    with pytest.raises(metaeval.SchemaError, match=r"attrs\['replicates'\] .* 'epochs'"):
        write_scores(epochs.assign(**{REPLICATE_DESIGN: "nested"}), tmp_path / "x.csv")
    # said explicitly, replicates= decides
    stated = metaeval.effects(mixed, "base", effect="md", replicates="nested")
    assert stated.attrs["replicates"] == "nested"


def test_a_file_that_does_not_record_the_design_warns(tmp_path, epochs):
    """Files written without the design (pandas' own to_csv, a table without attrs): every
    reader's table has a guessed design, and says so."""
    bare = epochs.copy()
    bare.attrs = {}
    bare.to_csv(tmp_path / "bare.csv", index=False)
    bare.to_parquet(tmp_path / "bare.parquet", index=False)
    frames = [read_scores(tmp_path / "bare.csv")]
    frames += [read_scores(tmp_path / "bare.parquet", engine=e) for e in (None, "polars", "duckdb")]
    for frame in frames:
        with pytest.warns(metaeval.MetaEvalWarning, match=r"guessed 'crossed'"):
            metaeval.effects(frame, "base", effect="md")

"""Column mapping: metaeval.scores(constants=), metaeval.from_wide, read_scores(columns=,
constants=, several paths) and the command's --columns / --constant."""

from __future__ import annotations

import pandas as pd
import pytest

import metaeval
from metaeval.errors import FormatError, SchemaError
from metaeval.io import read_scores

RUNS = pd.DataFrame(
    {"qid": ["007", "007", "q2", "q2"], "run": ["bm25", "tasb"] * 2, "score": [0.5, 0.7, 0.2, 0.5]}
)


def test_constants_supply_missing_key_columns():
    frozen = RUNS.copy()
    table = metaeval.scores(
        RUNS,
        query="qid",
        system="run",
        value="score",
        constants={"task": "robust04", "metric": "nDCG@10"},
    )
    pd.testing.assert_frame_equal(RUNS, frozen)  # the input is not changed
    assert table.columns.tolist() == ["task", "query", "system", "metric", "value"]
    assert set(table["task"]) == {"robust04"} and set(table["metric"]) == {"nDCG@10"}
    assert table["query"].tolist() == ["007", "007", "q2", "q2"]
    effects = table.meta.effects(control="bm25", effect="md")
    assert effects["effect"].iloc[0] == pytest.approx(0.25)  # (0.2 + 0.3) / 2


def test_missing_key_columns_say_how_to_supply_them():
    with pytest.raises(SchemaError, match=r"constants=\{'task': '...', 'metric': '...'\}"):
        metaeval.scores(RUNS, query="qid", system="run", value="score")
    wide = RUNS.pivot(index="qid", columns="run", values="score").reset_index()
    with pytest.raises(SchemaError, match=r"metaeval.from_wide"):
        metaeval.scores(wide, query="qid")
    with pytest.raises(SchemaError, match="both as a column and as a constant"):
        metaeval.schema.map_columns(RUNS, {"metric": "qid"}, {"metric": "x"})
    with pytest.raises(SchemaError, match="already has"):
        metaeval.scores(
            RUNS.assign(task="x"),
            query="qid",
            system="run",
            value="score",
            constants={"task": "t", "metric": "m"},
        )
    with pytest.raises(SchemaError, match="cannot be a constant"):
        metaeval.scores(RUNS, query="qid", system="run", constants={"value": 1, "task": "t"})


def test_from_wide_equals_the_long_table():
    example = metaeval.load_example()
    wide = example.pivot_table(index=["task", "query", "metric"], columns="system", values="value")
    back = metaeval.from_wide(wide)  # keys in the index, as pivot_table leaves them
    key = ["task", "query", "system", "metric"]
    pd.testing.assert_frame_equal(
        back.sort_values(key).reset_index(drop=True),
        example.sort_values(key).reset_index(drop=True),
    )
    flat = RUNS.pivot(index="qid", columns="run", values="score").reset_index()
    table = metaeval.from_wide(flat, query="qid", constants={"task": "t", "metric": "m"})
    assert table[["query", "system", "value"]].values.tolist() == [
        ["007", "bm25", 0.5],
        ["007", "tasb", 0.7],
        ["q2", "bm25", 0.2],
        ["q2", "tasb", 0.5],
    ]
    only = metaeval.from_wide(
        flat.assign(note="x"), query="qid", systems=["tasb"], constants={"task": "t", "metric": "m"}
    )
    assert set(only["system"]) == {"tasb"} and "note" not in only.columns


def test_from_wide_errors():
    flat = RUNS.pivot(index="qid", columns="run", values="score").reset_index()
    with pytest.raises(SchemaError, match=r"key column\(s\) \['task', 'metric'\]"):
        metaeval.from_wide(flat, query="qid")
    with pytest.raises(SchemaError, match="not numeric"):
        metaeval.from_wide(
            flat.assign(note="x"), query="qid", constants={"task": "t", "metric": "m"}
        )
    with pytest.raises(SchemaError, match="NaN|missing|null"):  # a missing score is not dropped
        metaeval.from_wide(
            flat.assign(tasb=[0.7, None]), query="qid", constants={"task": "t", "metric": "m"}
        )


def test_read_scores_maps_columns_and_concatenates_paths(tmp_path):
    RUNS.to_csv(tmp_path / "a.csv", index=False)
    RUNS.assign(qid=["x", "x", "y", "y"]).to_json(
        tmp_path / "b.jsonl", orient="records", lines=True
    )
    mapping = {
        "columns": {"query": "qid", "system": "run", "value": "score"},
        "constants": {"task": "robust04", "metric": "nDCG@10"},
    }
    table = read_scores([tmp_path / "a.csv", tmp_path / "b.jsonl"], **mapping)
    assert len(table) == 8 and table["query"].tolist()[:2] == ["007", "007"]  # read as strings
    with pytest.raises(FormatError, match="a.csv has too"):
        read_scores([tmp_path / "a.csv", tmp_path / "a.csv"], **mapping)
    with pytest.raises(FormatError, match="not in the table"):
        read_scores(tmp_path / "a.csv", columns={"query": "nope"}, constants=mapping["constants"])


@pytest.mark.parametrize("lazy", [False, True])
def test_read_scores_maps_parquet_columns(tmp_path, lazy):
    pytest.importorskip("pyarrow")
    if lazy:
        pytest.importorskip("dask")
    RUNS.to_parquet(tmp_path / "a.parquet")
    table = read_scores(
        tmp_path / "a.parquet",
        lazy=lazy,
        columns={"query": "qid", "system": "run", "value": "score"},
        constants={"task": "t", "metric": "m"},
    )
    table = table.compute() if lazy else table
    assert sorted(table.columns[:5]) == sorted(["task", "query", "system", "metric", "value"])
    assert table["value"].sum() == pytest.approx(1.9)


def test_the_command_reads_several_files_with_mapped_columns(tmp_path, capsys):
    from metaeval_cli import main

    example = metaeval.load_example().query("metric == 'accuracy'")
    files = []
    for task, part in example.groupby("task"):
        path = tmp_path / f"{task}.csv"
        part.drop(columns="metric").rename(
            columns={"task": "dataset", "query": "qid", "system": "run", "value": "score"}
        ).to_csv(path, index=False)
        files.append(str(path))
    out = tmp_path / "out"
    code = main(
        [
            "meta",
            *files,
            "--control",
            "naive_bayes",
            "--columns",
            "task=dataset,query=qid",
            "--columns",
            "system=run,value=score",
            "--constant",
            "metric=accuracy",
            "--tables",
            str(out) + ".csv",
            "--print-mode",
            "raw",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    pooled_cli = captured.out
    direct = example.meta.effects(control="naive_bayes").meta.pool()
    for effect in direct["effect"]:
        assert f"{effect}"[:10] in pooled_cli
    code = main(["meta", files[0], "--control", "naive_bayes"])
    err = capsys.readouterr().err
    assert code == 1 and "--columns" in err and "--constant" in err


def test_from_wide_one_value_per_task_needs_no_query_column():
    """autorank's input shape — a row per data set, a column per system — as the guide
    promises (issue 25, item 12); friedman() on it equals scipy's test on the same matrix."""
    from scipy import stats

    acc = pd.DataFrame(
        {
            "dataset": ["iris", "wine", "adult", "digits"],
            "svm": [0.95, 0.97, 0.85, 0.98],
            "knn": [0.93, 0.96, 0.84, 0.97],
            "tree": [0.94, 0.91, 0.86, 0.88],
        }
    )
    table = metaeval.from_wide(acc, task="dataset", constants={"metric": "accuracy"})
    assert (table["query"] == "all").all() and len(table) == 12
    got = table.pivot(index="task", columns="system", values="value")
    pd.testing.assert_frame_equal(
        got.loc[acc["dataset"], ["svm", "knn", "tree"]],
        acc.set_index("dataset")[["svm", "knn", "tree"]],
        check_names=False,
    )
    same = metaeval.from_wide(
        acc.set_index("dataset"), task="dataset", query=None, constants={"metric": "accuracy"}
    )
    pd.testing.assert_frame_equal(same, table)
    chi2 = table.meta.friedman(correction=True).table["chi2"].iloc[0]
    assert chi2 == pytest.approx(stats.friedmanchisquare(acc.svm, acc.knn, acc.tree).statistic)
    with pytest.raises(SchemaError, match=r"no query column.*2 rows repeat.*'iris'.*query="):
        metaeval.from_wide(
            pd.concat([acc, acc.head(1)]), task="dataset", constants={"metric": "accuracy"}
        )
    assert list(acc.columns) == ["dataset", "svm", "knn", "tree"]  # not mutated

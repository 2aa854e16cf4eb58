"""read_helm: HELM run folders, each row checked against the fixture read with json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from metaeval.errors import FormatError, SchemaError
from metaeval.io import read_helm

SUITE = Path(__file__).parents[1] / "fixtures" / "helm" / "suite"


def _expected(folders: list[Path]) -> pd.DataFrame:
    """The rows read_helm documents, built from the JSON files by a naive loop."""
    rows = []
    for folder in folders:
        spec = json.loads((folder / "run_spec.json").read_text())
        scenario, args = spec["name"].split(":")
        task = scenario + ":" + ",".join(a for a in args.split(",") if not a.startswith("model"))
        for record in json.loads((folder / "per_instance_stats.json").read_text()):
            query = record["instance_id"]
            if record["train_trial_index"]:
                query += f",trial={record['train_trial_index']}"
            if "perturbation" in record:
                query += ",perturbation=" + record["perturbation"]["name"]
            for stat in record["stats"]:
                if stat["count"]:
                    name = stat["name"]
                    rows.append(
                        (
                            task,
                            query,
                            spec["adapter_spec"]["model"],
                            name["name"],
                            name["split"],
                            stat["mean"],
                        )
                    )
    table = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "split", "value"])
    table["metric"] += ",split=" + table["split"]  # the fixture's task has valid and test
    return table.drop(columns="split")


def _key(table: pd.DataFrame) -> pd.DataFrame:
    return table.sort_values(["system", "query", "metric"]).reset_index(drop=True)


def test_suite_folder_rows_match_the_json():
    runs = sorted(SUITE.iterdir())
    got = read_helm(SUITE)
    assert list(got.columns) == ["task", "query", "system", "metric", "value"]
    pd.testing.assert_frame_equal(_key(got), _key(_expected(runs)))
    assert set(got["system"]) == {"openai/gpt2", "meta/llama-7b"}
    assert "inference_runtime" not in " ".join(got["metric"])  # count 0: no mean, left out


def test_one_run_folder_and_a_list():
    runs = sorted(SUITE.iterdir())
    one = read_helm(runs[0])
    assert set(one["system"]) == {"meta/llama-7b"}
    pd.testing.assert_frame_equal(_key(read_helm(runs)), _key(read_helm(SUITE)))


def test_one_split_keeps_plain_metric_names(tmp_path):
    run = tmp_path / "boolq:model=a"
    run.mkdir()
    (run / "run_spec.json").write_text(
        json.dumps({"name": run.name, "adapter_spec": {"model": "a"}})
    )
    stats = [
        {
            "instance_id": "i",
            "train_trial_index": 0,
            "stats": [{"name": {"name": "em", "split": "test"}, "count": 1, "mean": 0.5}],
        }
    ]
    (run / "per_instance_stats.json").write_text(json.dumps(stats))
    got = read_helm(run)
    assert got.to_dict("records") == [
        {"task": "boolq", "query": "i", "system": "a", "metric": "em", "value": 0.5}
    ]


def _copy(tmp_path: Path) -> Path:
    run = sorted(SUITE.iterdir())[0]
    shutil.copytree(run, tmp_path / run.name)
    return tmp_path / run.name


@pytest.mark.parametrize("name", ["run_spec.json", "per_instance_stats.json"])
def test_missing_file(tmp_path, name):
    run = _copy(tmp_path)
    (run / name).unlink()
    with pytest.raises(FormatError, match=f"{name}: no such file"):
        read_helm(run)


def test_malformed_json(tmp_path):
    run = _copy(tmp_path)
    (run / "per_instance_stats.json").write_text("[{")
    with pytest.raises(FormatError, match="per_instance_stats.json.*not JSON"):
        read_helm(run)


def _drop_id(records):
    del records[1]["instance_id"]


def _unknown_id(records):
    records[0]["instance_id"] = "id99"


def _repeat_stat(records):
    records.append(records[0])


def _text_mean(records):
    records[0]["stats"][0]["mean"] = "1"


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (_drop_id, "record 1 has no string 'instance_id'"),
        (_unknown_id, "'id99' is not in scenario_state.json"),
        (_repeat_stat, "stat 'exact_match' of instance 'id10'.*appears twice"),
        (_text_mean, "stat 'exact_match' has mean '1', not a number"),
    ],
    ids=["missing_instance_id", "instance_id_not_in_scenario_state", "duplicate_stat",
         "non_numeric_mean"],
)  # fmt: skip
def test_a_spoiled_record_is_a_format_error_naming_it(tmp_path, spoil, message):
    run = _copy(tmp_path)
    path = run / "per_instance_stats.json"
    records = json.loads(path.read_text())
    spoil(records)
    path.write_text(json.dumps(records))
    with pytest.raises(FormatError, match=message):
        read_helm(run)


def test_two_runs_of_one_task_by_one_model(tmp_path):
    run = _copy(tmp_path)
    shutil.copytree(run, tmp_path / "again")
    with pytest.raises(SchemaError, match="Two HELM runs of task"):
        read_helm(tmp_path)


def test_not_a_run_folder(tmp_path):
    with pytest.raises(SchemaError, match="neither a HELM run folder"):
        read_helm(tmp_path)
    with pytest.raises(FormatError, match="no such folder"):
        read_helm(tmp_path / "nope")


def test_empty_list():
    with pytest.raises(SchemaError, match="`run_folder` is an empty list"):
        read_helm([])

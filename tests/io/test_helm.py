"""read_helm on a suite written by HELM's own ``helm-run`` (crfm-helm 0.5.16, offline;
``tests/fixtures/helm/make_helm_suite.sh``): three scenarios by two models, 3 instances,
2 train trials and a data augmentation per run (issue 39, item 7). Every row is checked
against the files read with json, and every per-(task, metric, model) mean against the
aggregate HELM itself wrote into the run's ``stats.json``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _helpers import HELM_SUITE, helm_suite

import metaeval
from metaeval.errors import FormatError, SchemaError
from metaeval.io import read_helm

RUNS = sorted(p.name for p in HELM_SUITE.iterdir())
DYCK = [r for r in RUNS if r.startswith("dyck_language")]
MCQA = [r for r in RUNS if r.startswith("simple_mcqa")]
#: The fields of HELM's PerturbationDescription that say what kind of perturbation it is and
#: how it was aggregated, not which one; the others (num_spaces, suffix, prob, ...) name it.
FLAGS = ("name", "robustness", "fairness", "computed_on")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return helm_suite(tmp_path_factory.mktemp("helm") / "v1")


def _load(folder: Path, name: str):
    return json.loads((folder / name).read_text())


def _perturbation(description: dict) -> str:
    """The documented label: HELM's name, then the fields that tell it apart."""
    fields = [f"{k}={v}" for k, v in description.items() if k not in FLAGS]
    return description["name"] + (f"({','.join(fields)})" if fields else "")


def _metric(name: dict) -> str:
    """The metric of a HELM MetricName ({name, split, perturbation?}) in one split."""
    perturbation = name.get("perturbation")
    return name["name"] + (f",perturbation={_perturbation(perturbation)}" if perturbation else "")


def _task(spec: dict) -> str:
    scenario, args = spec["name"].split(":")
    kept = [a for a in args.split(",") if not a.startswith("model")]
    return f"{scenario}:{','.join(kept)}" if kept else scenario


def _expected(folders: list[Path]) -> pd.DataFrame:
    """The rows read_helm documents, built from the JSON files by a naive loop."""
    rows = []
    for folder in folders:
        spec = _load(folder, "run_spec.json")
        for record in _load(folder, "per_instance_stats.json"):
            for stat in record["stats"]:
                if stat["count"]:
                    rows.append(
                        (
                            _task(spec),
                            record["instance_id"],
                            spec["adapter_spec"]["model"],
                            _metric(stat["name"]),
                            stat["mean"],
                            record["train_trial_index"],
                        )
                    )
    return pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value", "replicate"])


def _key(table: pd.DataFrame) -> pd.DataFrame:
    return table.sort_values(["system", "task", "query", "metric", "replicate"]).reset_index(
        drop=True
    )


def test_rows_match_the_json(suite):
    got = read_helm(suite)
    assert list(got.columns) == ["task", "query", "system", "metric", "value", "replicate"]
    pd.testing.assert_frame_equal(_key(got), _key(_expected(sorted(suite.iterdir()))))
    assert set(got["system"]) == {"simple/model1", "simple/model2"}
    assert "training_co2_cost" not in " ".join(got["metric"])  # count 0: no mean, left out


def _helm_means(suite: Path) -> pd.DataFrame:
    """HELM's own aggregates (stats.json) of the stats it writes per instance: the mean
    over instances of each train trial, averaged over the trials; for a perturbation, the
    mean over the perturbed instances (``computed_on="perturbed"``)."""
    rows = []
    for folder in sorted(suite.iterdir()):
        spec = _load(folder, "run_spec.json")
        per_instance = {
            json.dumps(stat["name"], sort_keys=True)
            for record in _load(folder, "per_instance_stats.json")
            for stat in record["stats"]
            if stat["count"]
        }
        for stat in _load(folder, "stats.json"):
            if json.dumps(stat["name"], sort_keys=True) in per_instance:
                rows.append(
                    (
                        _task(spec),
                        _metric(stat["name"]),
                        spec["adapter_spec"]["model"],
                        stat["mean"],
                        stat["count"],
                    )
                )
    return pd.DataFrame(rows, columns=["task", "metric", "system", "helm", "trials"])


def test_means_equal_helms_own_aggregates(suite):
    """metaeval's mean of every (task, metric, model) is the one HELM reports: the
    perturbed instances are not averaged into the plain metric and each instance counts
    once however many train trials it has (before: simple1's num_prompt_tokens 218.83 over
    12 "queries" where HELM reports 216.83 over 3 instances, and 220.83 perturbed; the
    dyck runs, whose six perturbations HELM all names "style", were refused)."""
    scores = read_helm(suite)
    means = metaeval.means(scores)
    helm = _helm_means(suite)
    assert (helm["trials"] == 2).all()  # HELM's count: one mean per train trial
    both = helm.merge(means, on=["task", "metric", "system"], how="outer", indicator=True)
    assert (both["_merge"] == "both").all(), both.loc[both["_merge"] != "both", ["task", "metric"]]
    np.testing.assert_allclose(both["mean"], both["helm"], rtol=1e-12, atol=1e-15)
    assert (both["n"] == 3).all()  # the 3 instances, not instances x trials x perturbations
    dyck = both[(both["system"] == "simple/model1") & both["task"].str.startswith("dyck")]
    accuracy = dyck.set_index("metric")["helm"].filter(like="exact_match_indicator")
    assert accuracy["exact_match_indicator"] == pytest.approx(1 / 3)  # the data vary
    assert (accuracy.drop("exact_match_indicator") == 0).all() and len(accuracy) == 7


def test_train_trials_are_a_replicate_column(suite):
    """A train trial is one few-shot draw, the same for every instance of a run: a
    replicate of the instance (not a query of its own), recorded as nested in the task."""
    scores = read_helm(suite)
    assert scores.attrs["replicates"] == "nested"
    for folder in sorted(suite.iterdir()):
        spec = _load(folder, "run_spec.json")
        state = _load(folder, "scenario_state.json")
        instances = {r["instance"]["id"] for r in state["request_states"]}
        trials = {r["train_trial_index"] for r in state["request_states"]}
        assert trials == set(range(spec["adapter_spec"]["num_train_trials"])) == {0, 1}
        run = scores[scores["system"] == spec["adapter_spec"]["model"]]
        run = run[run["task"] == _task(spec)]
        assert set(run["query"]) == instances
        per_query = run.groupby(["query", "metric"])["replicate"].agg(lambda r: sorted(r))
        assert all(r == sorted(trials) for r in per_query)


def test_perturbed_instances_are_metrics_of_their_own(suite):
    """data_augmentation=art gives six perturbations that HELM names "style" (one per
    suffix); each is a metric, named with its suffix, and an instance keeps its id."""
    scores = read_helm(suite)
    dyck = scores[scores["task"] == "dyck_language_np=2:data_augmentation=art"]
    names = sorted(m for m in dyck["metric"].unique() if m.startswith("exact_match_indicator"))
    suffixes = [
        "animation",
        "oil painting",
        "pencil sketch",
        "pixel art",
        "vector graphics",
        "watercolor",
    ]
    assert names == ["exact_match_indicator"] + [
        f"exact_match_indicator,perturbation=style(suffix={s})" for s in suffixes
    ]
    assert set(dyck["query"]) == {"id93", "id257", "id286"}
    mcqa = scores[scores["task"] == "simple_mcqa:data_augmentation=lower"]
    assert "exact_match,perturbation=lowercase" in set(mcqa["metric"])


def test_paired_effects_are_helms_differences(suite):
    """The two models pair by instance id (and average over their trials) on every metric:
    the mean difference is the difference of HELM's means."""
    scores = read_helm(suite)
    scores = scores[scores["task"].str.startswith("dyck")]
    scores = scores[scores["metric"].str.startswith("num_prompt_tokens")]
    effects = metaeval.effects(scores, control="simple/model1", effect="md")
    assert "se_shared_treatment" not in effects  # the trials are nested in the task
    assert (effects["variance_replicates"] > 0).all()  # model2's draws differ: added
    helm = _helm_means(suite).pivot(index=["task", "metric"], columns="system", values="helm")
    want = (helm["simple/model2"] - helm["simple/model1"]).rename("want")
    both = effects.join(want, on=["task", "metric"])
    assert len(both) == 7 and both["want"].notna().all()
    np.testing.assert_allclose(both["effect"], both["want"], rtol=1e-12)
    assert (both["n"] == 3).all()


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
    assert "replicates" not in got.attrs  # one train trial: no replicate column


def test_two_splits_name_the_split(tmp_path):
    """The simple scenarios evaluate one split; a run whose instances come from valid and
    test (id60 moved to valid here) gets ``,split=`` on every metric of the task."""
    run = helm_suite(tmp_path, [MCQA[0]]) / MCQA[0]
    for name in ("per_instance_stats.json", "scenario_state.json"):
        text = (run / name).read_text()
        records = json.loads(text)
        for item in records if isinstance(records, list) else records["request_states"]:
            if item.get("instance_id", item.get("instance", {}).get("id")) == "id60":
                for stat in item.get("stats", []):
                    stat["name"]["split"] = "valid"
                if "instance" in item:
                    item["instance"]["split"] = "valid"
        (run / name).write_text(json.dumps(records))
    got = read_helm(run)
    valid = got[got["query"] == "id60"]
    assert set(valid["metric"]) >= {
        "exact_match,split=valid",
        "exact_match,perturbation=lowercase,split=valid",
    }
    assert all(m.endswith(",split=test") for m in got.loc[got["query"] != "id60", "metric"])


def test_one_run_folder_and_a_list(suite):
    runs = sorted(suite.iterdir())
    one = read_helm(runs[0])
    assert set(one["system"]) == {"simple/model1"} and one.attrs["replicates"] == "nested"
    pd.testing.assert_frame_equal(_key(read_helm(runs)), _key(read_helm(suite)))


def _copy(tmp_path: Path) -> Path:
    return helm_suite(tmp_path, [MCQA[0]]) / MCQA[0]


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


def _text_trial(records):
    records[1]["train_trial_index"] = "1"


def _text_perturbation(records):
    records[1]["perturbation"] = "lowercase"


def _nameless_perturbation(records):
    del records[1]["perturbation"]["name"]


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (_drop_id, "record 1 has no string 'instance_id'"),
        (_unknown_id, "'id99' is not in scenario_state.json"),
        (_repeat_stat, "stat 'num_references' of instance 'id60'.*train trial 0.*appears twice"),
        (_text_mean, "stat 'num_references' has mean '1', not a number"),
        (_text_trial, "record 1 .*train_trial_index '1' is not an integer"),
        (_text_perturbation, "record 1 .*perturbation 'lowercase' is not an object"),
        (_nameless_perturbation, "record 1 .*perturbation .* has no string 'name'"),
    ],
    ids=[
        "missing_instance_id",
        "instance_id_not_in_scenario_state",
        "duplicate_stat",
        "non_numeric_mean",
        "non_integer_trial",
        "perturbation_not_an_object",
        "perturbation_without_name",
    ],
)
def test_a_spoiled_record_is_a_format_error_naming_it(tmp_path, spoil, message):
    run = _copy(tmp_path)
    path = run / "per_instance_stats.json"
    records = json.loads(path.read_text())
    assert records[1].get("perturbation", {}).get("name") == "lowercase"
    spoil(records)
    path.write_text(json.dumps(records))
    with pytest.raises(FormatError, match=message):
        read_helm(run)


def test_two_runs_of_one_task_by_one_model(tmp_path):
    run = _copy(tmp_path)
    (tmp_path / "again").mkdir()
    for file in run.iterdir():
        (tmp_path / "again" / file.name).write_bytes(file.read_bytes())
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

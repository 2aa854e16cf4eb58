"""lm-evaluation-harness output folders: one system per model, reruns, primary metrics, the
command.

The folders are written in lm-eval 0.4's layout (``EvaluationTracker``): ``lm-eval
--output_path OUT --log_samples`` writes ``OUT/<model_name_sanitized>/results_<date_id>.json``
and ``OUT/<model_name_sanitized>/samples_<task>_<date_id>.jsonl``, with ``date_id =
datetime.now().isoformat().replace(":", "-")`` and the model name's ``/`` made ``__``. The
expected values are the arrays the logs were written from (never the reader's output).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _helpers import parse_raw

import metaeval
from metaeval.errors import MetaEvalWarning, SchemaError
from metaeval.io import read_lm_eval

MODELS = ("meta-llama/Llama-2-7b-hf", "mistralai/Mistral-7B-v0.1", "Qwen/Qwen2-7B")
TASKS = {
    "arc_easy": ["acc", "acc_norm"],
    "hellaswag": ["acc", "acc_norm"],
    "gsm8k": ["exact_match,strict-match", "exact_match,flexible-extract"],
}


def sanitized(model: str) -> str:
    """lm-eval's ``model_name_sanitized`` (``/`` and friends become ``__``)."""
    return model.replace("/", "__")


def _log(path: Path, task: str, values: dict[str, np.ndarray]) -> None:
    """A samples_<task>_<stamp>.jsonl as lm-eval --log_samples writes it (0.4.x fields)."""
    lines = []
    n = len(next(iter(values.values())))
    filters = {"gsm8k": ["strict-match", "flexible-extract"]}.get(task, ["none"])
    for i in range(n):
        for filt in filters:
            names = (
                [m for m in values if m.endswith(f",{filt}")] if filt != "none" else list(values)
            )
            record = {
                "doc_id": i,
                "doc": {"question": f"q{i}"},
                "target": "A",
                "arguments": [["ctx", " A"]],
                "resps": [[["-1.2", "False"]]],
                "filtered_resps": [["-1.2", "False"]],
                "filter": filt,
                "metrics": [m.split(",")[0] for m in names],
                "doc_hash": "ab",
                "prompt_hash": "cd",
                "target_hash": "ef",
            }
            record.update({m.split(",")[0]: float(values[m][i]) for m in names})
            lines.append(json.dumps(record))
    text = "\n".join(lines) + "\n"
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)


def _results(folder: Path, model: str, stamp: str, truth: dict[str, dict[str, np.ndarray]]):
    """results_<stamp>.json: lm-eval's aggregate file (means only)."""
    results = {
        task: {(m if "," in m else f"{m},none"): float(np.mean(v)) for m, v in values.items()}
        | {"alias": task}
        for task, values in truth.items()
    }
    doc = {
        "results": results,
        "config": {"model": "hf", "model_args": f"pretrained={model}"},
        "model_name": model,
        "model_name_sanitized": sanitized(model),
        "date": 1714644000.0,
    }
    (folder / f"results_{stamp}.json").write_text(json.dumps(doc))


def write_run(
    out: Path, model: str, stamp: str, rng, n: int = 20, tasks=TASKS, samples: bool = True
) -> dict[str, dict[str, np.ndarray]]:
    """One ``lm-eval --output_path out --model_args pretrained=MODEL --log_samples`` run."""
    folder = out / sanitized(model)
    folder.mkdir(parents=True, exist_ok=True)
    truth = {task: {m: rng.integers(0, 2, n) for m in metrics} for task, metrics in tasks.items()}
    if samples:
        for task, values in truth.items():
            _log(folder / f"samples_{task}_{stamp}.jsonl", task, values)
    _results(folder, model, stamp, truth)
    return truth


def make_output(out: Path, rng) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """Three models x three tasks in one output folder; the first model ran arc_easy again
    later (a newer log, and an older one that must not be read)."""
    truth = {}
    for k, model in enumerate(MODELS):
        run = write_run(out, model, f"2024-05-0{k + 2}T10-00-00.123456", rng)
        truth.update({(sanitized(model), task): values for task, values in run.items()})
    first = sanitized(MODELS[0])
    rerun = write_run(
        out, MODELS[0], "2024-05-09T08-00-00.000001", rng, tasks={"arc_easy": TASKS["arc_easy"]}
    )
    truth[(first, "arc_easy")] = rerun["arc_easy"]
    return truth


def _by_key(table: pd.DataFrame) -> pd.Series:
    return table.set_index(["system", "task", "metric", "query"])["value"].sort_index()


def _expected(truth, metric_of=None) -> pd.Series:
    """The long table the logs were written from: ``truth[(system, task)][metric][doc]``."""
    rows = [
        (system, task, "primary" if metric_of else metric, str(i), float(v))
        for (system, task), values in truth.items()
        for metric, column in values.items()
        if metric_of is None or metric_of[task] == metric
        for i, v in enumerate(column)
    ]
    frame = pd.DataFrame(rows, columns=["system", "task", "metric", "query", "value"])
    return _by_key(frame)


def test_an_output_folder_is_one_system_per_model(tmp_path, rng):
    truth = make_output(tmp_path / "out", rng)
    with pytest.raises(SchemaError, match="latest=True"):  # the rerun: an error by default
        read_lm_eval(tmp_path / "out")
    with pytest.warns(MetaEvalWarning, match="read the newest log of 1 ") as caught:
        table = read_lm_eval(tmp_path / "out", latest=True)
    # one system per model sub-folder (the command's naming), never one system "out"
    assert sorted(table["system"].unique()) == sorted(sanitized(m) for m in MODELS)
    pd.testing.assert_series_equal(_by_key(table), _expected(truth))  # nothing merged or lost
    # what latest kept and left out, per system and task: only the model that ran it twice
    groups = caught[0].message.groups
    assert groups.to_dict("records") == [
        {
            "system": sanitized(MODELS[0]),
            "task": "arc_easy",
            "read": "samples_arc_easy_2024-05-09T08-00-00.000001.jsonl",
            "left_out": "samples_arc_easy_2024-05-02T10-00-00.123456.jsonl",
        }
    ]
    # a str names the same systems as a path, and a model's own folder is one system
    with pytest.warns(MetaEvalWarning):
        assert read_lm_eval(str(tmp_path / "out"), latest=True).equals(table)
    one = read_lm_eval(tmp_path / "out" / sanitized(MODELS[1]))
    assert set(one["system"]) == {sanitized(MODELS[1])}


def test_latest_never_mixes_models(tmp_path, rng):
    """The newest log of a task is chosen among one model's logs: each model keeps its own
    (before, latest=True kept the newest log across models and dropped the others)."""
    out = tmp_path / "out"
    truth = {}
    for k, model in enumerate(MODELS):  # every model a different time: one is the newest
        run = write_run(out, model, f"2024-06-0{k + 1}T12-00-00.5", rng, tasks={"boolq": ["acc"]})
        truth[(sanitized(model), "boolq")] = run["boolq"]
    table = read_lm_eval(out, latest=True)  # no rerun: nothing to report
    pd.testing.assert_series_equal(_by_key(table), _expected(truth))


def test_seed_folders_are_refused_not_merged(tmp_path, rng, capsys):
    """seed1/<model>/..., seed2/<model>/...: each seed folder holds three models; reading
    them as three systems "seed1, seed2, seed3" would merge the models of each seed."""
    from metaeval_cli import main

    for seed in (1, 2, 3):
        for k, model in enumerate(MODELS):
            write_run(
                tmp_path / "runs" / f"seed{seed}", model, f"2024-07-0{seed}T0{k}-00-00.000000", rng
            )
    for latest in (False, True):
        with pytest.raises(SchemaError, match=r"seed1.* lie in 3 folders \(Qwen__Qwen2-7B, "):
            read_lm_eval(tmp_path / "runs", latest=latest)
        with pytest.raises(SchemaError, match="lie in 3 folders"):
            read_lm_eval({"seed1": tmp_path / "runs" / "seed1"}, latest=latest)
    for extra in ([], ["--latest"]):
        code = main(["meta", str(tmp_path / "runs"), "--control", "seed1", *extra])
        err = capsys.readouterr().err
        assert code == 1 and "lie in 3 folders" in err and "--latest" not in err, err
    one_seed = read_lm_eval(tmp_path / "runs" / "seed1")  # three models of one seed: fine
    assert sorted(one_seed["system"].unique()) == sorted(sanitized(m) for m in MODELS)


def test_logs_both_in_the_folder_and_in_sub_folders_are_refused(tmp_path, rng):
    write_run(tmp_path / "out", MODELS[0], "2024-05-01T00-00-00", rng)
    write_run(tmp_path, "out", "2024-05-01T00-00-00", rng)  # out/samples_*: logs of "out"
    with pytest.raises(SchemaError, match="both in the folder itself and in its sub-folder"):
        read_lm_eval(tmp_path / "out")


def test_logs_with_the_same_timestamp_are_an_error_naming_both(tmp_path, rng):
    """Decision: a typed error naming both files; latest cannot tell which is newer."""
    folder = tmp_path / "out" / "m"
    folder.mkdir(parents=True)
    values = {"acc": rng.integers(0, 2, 5)}
    _log(folder / "samples_boolq_2024-05-01T10-00-00.123456.jsonl", "boolq", values)
    _log(folder / "samples_boolq_2024-05-01T10-00-00.123456.jsonl.gz", "boolq", values)
    with pytest.raises(SchemaError, match="latest=True"):
        read_lm_eval(tmp_path / "out")
    with pytest.raises(
        SchemaError,
        match=r"samples_boolq_2024-05-01T10-00-00\.123456\.jsonl and "
        r"samples_boolq_2024-05-01T10-00-00\.123456\.jsonl\.gz .* same timestamp",
    ):
        read_lm_eval(tmp_path / "out", latest=True)


def test_a_log_without_a_timestamp(tmp_path, rng):
    """Decision: samples_<task>.jsonl is read as the log of <task> (the name leaves no doubt
    about the task); with a timestamped log of the same task latest cannot order them (an
    error); a name with a broken timestamp is left out with a warning naming the file."""
    folder = tmp_path / "m"
    folder.mkdir()
    values = {"acc": rng.integers(0, 2, 7)}
    _log(folder / "samples_boolq.jsonl", "boolq", values)
    table = read_lm_eval(folder)
    assert table["task"].unique().tolist() == ["boolq"]
    assert table["value"].tolist() == values["acc"].astype(float).tolist()
    _log(folder / "samples_copa_2024-05-01.jsonl", "copa", values)  # the time is missing
    with pytest.warns(MetaEvalWarning, match=r"left out: .*samples_copa_2024-05-01\.jsonl"):
        assert read_lm_eval(folder)["task"].unique().tolist() == ["boolq"]
    (folder / "samples_copa_2024-05-01.jsonl").unlink()
    _log(folder / "samples_boolq_2024-05-01T10-00-00.jsonl", "boolq", values)
    with pytest.raises(SchemaError, match=r"samples_boolq\.jsonl has no timestamp"):
        read_lm_eval(folder, latest=True)


def test_results_without_samples_ask_for_log_samples(tmp_path, rng, capsys):
    from metaeval_cli import main

    write_run(tmp_path / "out", MODELS[0], "2024-05-01T00-00-00", rng, samples=False)
    for given in (tmp_path / "out", tmp_path / "out" / sanitized(MODELS[0])):
        with pytest.raises(SchemaError, match=r"results_2024-05-01T00-00-00\.json.*--log_samples"):
            read_lm_eval(given)
    code = main(["meta", str(tmp_path / "out"), "--control", sanitized(MODELS[0])])
    err = capsys.readouterr().err
    assert code == 1 and "Rerun lm-eval with --log_samples" in err, err
    # a model run without --log_samples beside others is not left out silently
    write_run(tmp_path / "out", MODELS[1], "2024-05-01T00-00-00", rng)
    with pytest.raises(SchemaError, match=rf"{sanitized(MODELS[0])}: lm-eval results"):
        read_lm_eval(tmp_path / "out")


def test_primary_names_override_only_their_tasks(tmp_path, rng):
    truth = make_output(tmp_path / "out", rng)
    with pytest.warns(MetaEvalWarning, match="newest"):
        table = read_lm_eval(tmp_path / "out", primary=True, latest=True)
    defaults = {"arc_easy": "acc", "gsm8k": "exact_match,strict-match", "hellaswag": "acc_norm"}
    assert table.attrs["primary"] == defaults  # the Open LLM Leaderboard's, by hand
    pd.testing.assert_series_equal(_by_key(table), _expected(truth, defaults))
    with pytest.warns(MetaEvalWarning, match="newest"):
        named = read_lm_eval(
            tmp_path / "out", latest=True, primary={"gsm8k": "exact_match,flexible-extract"}
        )
    chosen = {**defaults, "gsm8k": "exact_match,flexible-extract"}  # the others keep theirs
    assert named.attrs["primary"] == chosen
    pd.testing.assert_series_equal(_by_key(named), _expected(truth, chosen))
    with pytest.raises(SchemaError, match="names task.*'arc_eazy'.*which the logs do not have"):
        read_lm_eval(tmp_path / "out", primary={"arc_eazy": "acc"}, latest=True)
    with pytest.raises(
        SchemaError, match=r"f1 of task 'arc_easy' \(named in `primary` / --primary\) is not"
    ):
        read_lm_eval(tmp_path / "out", primary={"arc_easy": "f1"}, latest=True)
    pooled = table.meta.effects(control=sanitized(MODELS[0]), effect="md").meta.pool()
    assert pooled["k"].tolist() == [3, 3]  # the three tasks pool together, per treatment


def test_the_command_names_the_primary_metric_of_each_task(tmp_path, rng, capsys, monkeypatch):
    import metaeval.plot
    from metaeval_cli import main

    truth = make_output(tmp_path / "out", rng)
    drawn = []
    monkeypatch.setattr(metaeval.plot, "save", lambda fig, path: drawn.append(fig))
    control = sanitized(MODELS[0])
    latex = tmp_path / "t.tex"
    code = main(
        [
            "meta",
            str(tmp_path / "out"),
            "--control",
            control,
            "--latest",
            "--effect",
            "md",
            "--primary",
            "gsm8k=exact_match,flexible-extract,hellaswag=acc",
            "--print-mode",
            "raw",
            "--latex",
            str(latex),
            "--plot",
            str(tmp_path / "f.pdf"),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    chosen = {"arc_easy": "acc", "gsm8k": "exact_match,flexible-extract", "hellaswag": "acc"}
    text = "arc_easy=acc, gsm8k=exact_match,flexible-extract, hellaswag=acc"
    assert f"metric 'primary' of each task: {text}" in captured.out
    assert "{'" not in captured.out + captured.err  # no Python dict syntax
    assert "left_out='samples_arc_easy_2024-05-02T10-00-00.123456.jsonl'" in captured.err
    effects = parse_raw(captured.out)["Effects per task and summary: primary"]
    rows = effects[effects["task"] != "summary"]
    assert dict(zip(rows["task"], rows["primary_metric"], strict=True)) == chosen
    # the per-task means are those of the chosen metric's logs
    for treatment, task, mean in zip(
        rows["treatment"], rows["task"], rows["mean_treatment"], strict=True
    ):
        assert mean == pytest.approx(truth[(treatment, task)][chosen[task]].mean())
    assert "Metric primary of each task: arc\\_easy=acc, gsm8k=exact\\_match,flexible-extract" in (
        latex.read_text()
    )
    labels = {t.get_text() for fig in drawn for t in fig.findobj(lambda a: hasattr(a, "get_text"))}
    assert {"arc_easy (acc)", "gsm8k (exact_match,flexible-extract)", "hellaswag (acc)"} <= labels


def test_the_command_speaks_its_own_syntax_in_primary_errors(tmp_path, rng, capsys):
    from metaeval_cli import main

    folder = tmp_path / "out" / "m"
    folder.mkdir(parents=True)
    _log(
        folder / "samples_mytask_2024-05-01T10-00-00.jsonl",
        "mytask",
        {"acc": rng.integers(0, 2, 5), "f1": rng.integers(0, 2, 5)},
    )
    write_run(
        tmp_path / "out", "n", "2024-05-01T10-00-00", rng, n=5, tasks={"mytask": ["acc", "f1"]}
    )
    code = main(["meta", str(tmp_path / "out"), "--control", "m", "--primary"])
    err = capsys.readouterr().err
    assert code == 1 and "logs have acc, f1" in err and "--primary TASK=METRIC" in err, err
    assert "{'" not in err and "['" not in err
    code = main(
        [
            "meta",
            str(tmp_path / "out"),
            "--control",
            "m",
            "--primary",
            "mytask=f1",
            "--print-mode",
            "raw",
        ]
    )
    assert code == 0 and "metric 'primary' of each task: mytask=f1" in capsys.readouterr().out


def test_the_command_reads_an_lm_eval_output_folder(tmp_path, rng, capsys):
    from metaeval_cli import main

    make_output(tmp_path / "out", rng)
    control = sanitized(MODELS[0])
    code = main(
        [
            "meta",
            str(tmp_path / "out"),
            "--control",
            control,
            "--primary",
            "--latest",
            "--effect",
            "md",
            "--print-mode",
            "raw",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    with pytest.warns(MetaEvalWarning):
        direct = read_lm_eval(tmp_path / "out", primary=True, latest=True)
    pooled = direct.meta.effects(control=control, effect="md").meta.pool()
    for effect in pooled["effect"]:
        assert repr(float(effect))[:10] in captured.out  # the same summaries
    code = main(["meta", str(tmp_path / "out"), "--control", control])
    assert code == 1 and "--latest" in capsys.readouterr().err
    scores_file = tmp_path / "s.csv"
    metaeval.io.write_scores(direct, scores_file)
    code = main(["meta", str(scores_file), "--control", control, "--primary"])
    assert code == 2 and "lm-eval output folder" in capsys.readouterr().err


def test_read_lm_eval_rejects_a_bad_primary(tmp_path, rng):
    write_run(tmp_path, "m", "2024-05-01T00-00-00", rng)
    with pytest.raises(metaeval.OptionError, match="primary"):
        read_lm_eval(tmp_path / "m", primary="acc")
    with pytest.raises(metaeval.OptionError, match="a string"):
        read_lm_eval(tmp_path / "m", primary={"arc_easy": 1})
    assert isinstance(read_lm_eval(tmp_path / "m"), pd.DataFrame)

"""read_lm_eval: seed folders as replicates (``replicates="folders"``) and what
``latest=True`` records in ``attrs`` (issue 27).

The folders are written in lm-eval 0.4's layout by the helpers of
``test_lm_eval_workflow.py``; the expected values are the arrays the logs were written from
(never the reader's output).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _helpers import parse_raw
from test_lm_eval_workflow import MODELS, TASKS, make_output, sanitized, write_run

import metaeval
from metaeval.errors import MetaEvalWarning, OptionError, SchemaError
from metaeval.io import read_lm_eval
from metaeval_cli import main

KEYS = ["system", "task", "metric", "query", "replicate"]


def _seed_runs(root, rng, seeds=("seed1", "seed2", "seed3"), models=MODELS, tasks=TASKS):
    """``root/<seed>/<model>/samples_*``: every model run once per seed; returns the values
    written, ``{(seed, system, task): {metric: array}}``."""
    truth = {}
    for s, seed in enumerate(seeds):
        for k, model in enumerate(models):
            run = write_run(
                root / seed, model, f"2024-07-0{s + 1}T0{k}-00-00.000000", rng, tasks=tasks
            )
            truth.update({(seed, sanitized(model), t): v for t, v in run.items()})
    return truth


def _expected(truth) -> pd.Series:
    rows = [
        (system, task, metric, str(i), seed, float(v))
        for (seed, system, task), values in truth.items()
        for metric, column in values.items()
        for i, v in enumerate(column)
    ]
    frame = pd.DataFrame(rows, columns=[*KEYS, "value"])
    return frame.set_index(KEYS)["value"].sort_index()


def _by_key(table: pd.DataFrame) -> pd.Series:
    return table.set_index(KEYS)["value"].sort_index()


def test_seed_folders_are_replicates_of_one_system_per_model(tmp_path, rng):
    truth = _seed_runs(tmp_path / "runs", rng)
    table = read_lm_eval(tmp_path / "runs", replicates="folders")
    assert list(table.columns) == ["task", "query", "system", "metric", "value", "replicate"]
    # one system per model, never one per seed folder, never merged rows
    assert sorted(table["system"].unique()) == sorted(sanitized(m) for m in MODELS)
    assert sorted(table["replicate"].unique()) == ["seed1", "seed2", "seed3"]
    assert not table.duplicated(KEYS).any()
    pd.testing.assert_series_equal(_by_key(table), _expected(truth))  # every value, once
    # the replicates reach the analysis: each task mean is over seeds and samples
    means = table.meta.means()
    for (system, task, metric), mean in means.set_index(["system", "task", "metric"])[
        "mean"
    ].items():
        values = np.concatenate(
            [truth[(s, system, task)][metric] for s in ("seed1", "seed2", "seed3")]
        )
        assert mean == pytest.approx(values.mean())


def test_the_seed_folders_of_one_model_are_one_system_named_after_the_folder(tmp_path, rng):
    """``llama/seed1/samples_*``, ``llama/seed2/samples_*``: one system, "llama"."""
    truth = {}
    for seed in ("seed1", "seed2"):
        run = write_run(
            tmp_path / "llama", seed, "2024-07-01T00-00-00", rng, tasks={"boolq": ["acc"]}
        )
        truth[(seed, "llama", "boolq")] = run["boolq"]
    table = read_lm_eval(tmp_path / "llama", replicates="folders")
    pd.testing.assert_series_equal(_by_key(table), _expected(truth))
    # without the option the seed folders are read as systems, with a warning that says so
    with pytest.warns(
        MetaEvalWarning,
        match=r"named like runs \(seed1, seed2\).*"
        r"replicates='folders'",
    ):
        as_systems = read_lm_eval(tmp_path / "llama")
    assert sorted(as_systems["system"].unique()) == ["seed1", "seed2"]


def test_without_replicates_the_seed_layout_is_an_error_that_suggests_it(tmp_path, rng, capsys):
    _seed_runs(tmp_path / "runs", rng)
    with pytest.raises(SchemaError, match=r"replicates='folders' \(--replicates folders"):
        read_lm_eval(tmp_path / "runs")
    code = main(["meta", str(tmp_path / "runs"), "--control", sanitized(MODELS[0])])
    err = capsys.readouterr().err
    assert code == 1 and "--replicates folders" in err, err
    # a model's folder whose logs lie in two places that are not seed folders: no such hint
    write_run(tmp_path / "m" / "a" / "deeper", "x", "2024-07-01T00-00-00", rng)
    write_run(tmp_path / "m" / "b", "x", "2024-07-01T00-00-00", rng)
    with pytest.raises(SchemaError, match="lie in 2 folders") as caught:
        read_lm_eval({"m": tmp_path / "m"})
    assert "replicates=" not in str(caught.value)


def test_a_seed_folder_missing_a_model_or_a_task_is_named_in_a_warning(tmp_path, rng):
    truth = _seed_runs(tmp_path / "runs", rng, seeds=("seed1", "seed2"))
    truth.update(
        _seed_runs(
            tmp_path / "runs",
            rng,
            seeds=("seed3",),
            models=MODELS[:2],
            tasks={"arc_easy": TASKS["arc_easy"]},
        )
    )
    with pytest.warns(MetaEvalWarning, match="7 .replicate, system, task. combination") as got:
        table = read_lm_eval(tmp_path / "runs", replicates="folders")
    missing = got[0].message.groups
    q, m0, m1 = (sanitized(m) for m in (MODELS[2], MODELS[0], MODELS[1]))
    want = {("seed3", m, t) for m in (m0, m1) for t in ("gsm8k", "hellaswag")}
    want |= {("seed3", q, t) for t in TASKS}
    assert set(map(tuple, missing[["replicate", "system", "task"]].to_numpy())) == want
    assert len(missing) == len(want)  # every missing triple named once ...
    pd.testing.assert_series_equal(_by_key(table), _expected(truth))  # ... the rest read


def test_replicates_is_checked(tmp_path, rng):
    _seed_runs(tmp_path / "runs", rng, seeds=("seed1",))
    with pytest.raises(OptionError, match=r"`replicates`.*'seeds'"):
        read_lm_eval(tmp_path / "runs", replicates="seeds")
    with pytest.raises(OptionError, match="replicates='folders'.*one folder"):
        read_lm_eval([tmp_path / "runs" / "seed1"], replicates="folders")
    # logs in the folder itself: it is not a folder of seed folders
    write_run(tmp_path, "runs", "2024-07-01T00-00-00", rng)
    with pytest.raises(SchemaError, match="in the folder itself.*sub-folders are the replicates"):
        read_lm_eval(tmp_path / "runs", replicates="folders")


def test_replicate_folders_laid_out_differently_are_an_error(tmp_path, rng):
    write_run(tmp_path / "runs" / "seed1", MODELS[0], "2024-07-01T00-00-00", rng)
    write_run(tmp_path / "runs", "seed2", "2024-07-01T00-00-00", rng)  # logs in seed2/ itself
    with pytest.raises(SchemaError, match=r"seed2 hold one model's logs themselves.*seed1"):
        read_lm_eval(tmp_path / "runs", replicates="folders")


def test_latest_records_the_log_read_and_how_many_were_left_out(tmp_path, rng):
    make_output(tmp_path / "out", rng)  # the first model ran arc_easy twice
    first = sanitized(MODELS[0])
    write_run(
        tmp_path / "out",
        MODELS[0],
        "2024-05-01T08-00-00.000001",
        rng,
        tasks={"arc_easy": TASKS["arc_easy"]},
    )  # a third, oldest arc_easy log
    with pytest.warns(MetaEvalWarning, match="newest"):
        table = read_lm_eval(tmp_path / "out", latest=True)
    assert table.attrs["latest"] == [
        {
            "system": first,
            "task": "arc_easy",
            "read": "samples_arc_easy_2024-05-09T08-00-00.000001.jsonl",
            "ignored": 2,
        }
    ]
    assert "latest" not in read_lm_eval(tmp_path / "out" / sanitized(MODELS[1])).attrs
    # latest=True and no task logged twice: recorded as nothing left out
    assert read_lm_eval(tmp_path / "out" / sanitized(MODELS[1]), latest=True).attrs == {
        "latest": []
    }


def test_latest_with_seed_folders_names_the_replicate(tmp_path, rng):
    _seed_runs(tmp_path / "runs", rng, seeds=("seed1", "seed2"), tasks={"boolq": ["acc"]})
    write_run(
        tmp_path / "runs" / "seed2", MODELS[1], "2024-08-01T00-00-00", rng, tasks={"boolq": ["acc"]}
    )  # a rerun in seed2 only
    with pytest.raises(SchemaError, match="latest=True"):
        read_lm_eval(tmp_path / "runs", replicates="folders")
    with pytest.warns(MetaEvalWarning, match="newest") as caught:
        table = read_lm_eval(tmp_path / "runs", replicates="folders", latest=True)
    record = {
        "replicate": "seed2",
        "system": sanitized(MODELS[1]),
        "task": "boolq",
        "read": "samples_boolq_2024-08-01T00-00-00.jsonl",
        "ignored": 1,
    }
    assert table.attrs["latest"] == [record]
    assert caught[0].message.groups.iloc[0]["replicate"] == "seed2"


def test_the_command_reads_seed_folders(tmp_path, rng, capsys):
    _seed_runs(tmp_path / "runs", rng, tasks={"boolq": ["acc"], "copa": ["acc"], "rte": ["acc"]})
    control = sanitized(MODELS[0])
    code = main(
        [
            "meta",
            str(tmp_path / "runs"),
            "--control",
            control,
            "--replicates",
            "folders",
            "--effect",
            "md",
            "--print-mode",
            "raw",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    printed = parse_raw(captured.out)["Effects per task and summary: acc"]
    summary = printed[printed["task"] == "summary"].set_index("treatment")
    scores = read_lm_eval(tmp_path / "runs", replicates="folders")
    # the design read_lm_eval does not record, which the command guessed (and said so)
    assert "guessed 'crossed'" in captured.err
    pooled = metaeval.pool(
        metaeval.effects(scores, control=control, effect="md", replicates="crossed")
    )
    assert len(summary) == len(pooled) == 2
    for row in pooled.itertuples():
        assert summary.loc[row.treatment, "effect"] == pytest.approx(row.effect, rel=1e-12)
        assert summary.loc[row.treatment, "ci_low"] == pytest.approx(row.ci_low, rel=1e-12)
    scores_file = tmp_path / "s.csv"
    metaeval.io.write_scores(scores, scores_file)
    code = main(["meta", str(scores_file), "--control", control, "--replicates", "folders"])
    assert code == 2 and "--replicates: only for an lm-eval" in capsys.readouterr().err

"""lm-evaluation-harness output folders: primary metrics, reruns, the command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval.errors import SchemaError
from metaeval.io import read_lm_eval


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
            record = {"doc_id": i, "doc": {"question": f"q{i}"}, "target": "A",
                      "arguments": [["ctx", " A"]], "resps": [[["-1.2", "False"]]],
                      "filtered_resps": [["-1.2", "False"]], "filter": filt,
                      "metrics": [m.split(",")[0] for m in names],
                      "doc_hash": "ab", "prompt_hash": "cd", "target_hash": "ef"}  # fmt: skip
            record.update({m.split(",")[0]: float(values[m][i]) for m in names})
            lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")


def make_output(root: Path, rng) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """Two models x three tasks, with a rerun of one task (older and newer logs)."""
    truth = {}
    for model in ("llama", "mistral"):
        folder = root / model.replace("/", "__")
        folder.mkdir(parents=True)
        for task, metrics in (("arc_easy", ["acc", "acc_norm"]), ("hellaswag", ["acc", "acc_norm"]),
                              ("gsm8k", ["exact_match,strict-match", "exact_match,flexible-extract"])):  # fmt: skip
            values = {m: rng.integers(0, 2, 20) for m in metrics}
            _log(folder / f"samples_{task}_2024-05-02T10-00-00.123.jsonl", task, values)
            truth[(model, task)] = values
        stale = {m: np.zeros(20, dtype=int) for m in ("acc", "acc_norm")}
        _log(folder / "samples_arc_easy_2024-05-01T09-00-00.000.jsonl", "arc_easy", stale)
    return truth


def test_primary_metrics_and_the_latest_log(tmp_path, rng):
    truth = make_output(tmp_path, rng)
    folders = {"llama": tmp_path / "llama", "mistral": tmp_path / "mistral"}
    with pytest.raises(SchemaError, match="latest=True"):
        read_lm_eval(folders)
    table = read_lm_eval(folders, primary=True, latest=True)
    assert set(table["metric"]) == {"primary"}
    assert table.attrs["primary"] == {"arc_easy": "acc", "gsm8k": "exact_match,strict-match",
                                      "hellaswag": "acc_norm"}  # fmt: skip
    got = table.set_index(["system", "task", "query"])["value"]
    for (model, task), values in truth.items():
        metric = table.attrs["primary"][task]
        expected = values[metric]  # the newer arc_easy log, not the all-zero stale one
        assert got.loc[(model, task)].sort_index(key=lambda q: q.astype(int)).tolist() == list(
            expected
        )
    named = read_lm_eval(folders, primary={"arc_easy": "acc_norm", "hellaswag": "acc",
                                           "gsm8k": "exact_match,flexible-extract"}, latest=True)  # fmt: skip
    assert named.attrs["primary"]["gsm8k"] == "exact_match,flexible-extract"
    with pytest.raises(SchemaError, match="no metric for task 'gsm8k'"):
        read_lm_eval(folders, primary={"arc_easy": "acc", "hellaswag": "acc"}, latest=True)
    with pytest.raises(SchemaError, match="not in its logs"):
        read_lm_eval(folders, primary={"arc_easy": "f1", "hellaswag": "acc", "gsm8k": "x"},
                     latest=True)  # fmt: skip
    pooled = table.meta.effects(control="llama", effect="md").meta.pool()
    assert pooled["k"].tolist() == [3]  # the three tasks pool together


def test_the_command_reads_an_lm_eval_output_folder(tmp_path, rng, capsys):
    from metaeval_cli import main

    make_output(tmp_path / "out", rng)
    code = main(["meta", str(tmp_path / "out"), "--control", "llama", "--primary", "--latest",
                 "--effect", "md", "--print-mode", "raw"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    folders = {m: tmp_path / "out" / m for m in ("llama", "mistral")}
    direct = read_lm_eval(folders, primary=True, latest=True)
    pooled = direct.meta.effects(control="llama", effect="md").meta.pool()
    assert repr(float(pooled["effect"].iloc[0]))[:10] in captured.out  # the same summary
    table = read_lm_eval(tmp_path / "out" / "llama", primary=True, latest=True)
    assert set(table["task"]) == {"arc_easy", "hellaswag", "gsm8k"}
    code = main(["meta", str(tmp_path / "out"), "--control", "llama"])
    assert code == 1 and "--latest" in capsys.readouterr().err
    scores_file = tmp_path / "s.csv"
    metaeval.io.write_scores(table, scores_file)
    code = main(["meta", str(scores_file), "--control", "llama", "--primary"])
    assert code == 2 and "lm-eval output folder" in capsys.readouterr().err


def test_read_lm_eval_rejects_a_bad_primary(tmp_path, rng):
    make_output(tmp_path, rng)
    with pytest.raises(metaeval.OptionError, match="primary"):
        read_lm_eval(tmp_path / "llama", primary="acc", latest=True)
    assert isinstance(read_lm_eval(tmp_path / "llama", latest=True), pd.DataFrame)

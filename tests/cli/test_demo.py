"""The bundled example and the `metaeval demo` command."""

from __future__ import annotations

import subprocess
import sys

import pytest

import metaeval
from metaeval_cli import main


def test_example_is_a_valid_scores_table():
    scores = metaeval.load_example()
    assert len(scores) == 26_940
    metaeval.validate_scores(scores)
    assert sorted(scores["task"].unique()) == ["breast_cancer", "digits", "iris", "wine"]
    assert scores.groupby(["task", "metric", "system"]).size().nunique() == 4  # complete per task
    acc = scores[scores["metric"] == "accuracy"]["value"]
    assert set(acc.unique()) == {0.0, 1.0}


def test_demo_prints_the_analysis(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "control = logistic_regression" in out
    assert out.count("summary") == 4  # one summary row per treatment
    for task in ["breast_cancer", "digits", "iris", "wine"]:
        assert task in out


def test_demo_writes_figure_and_table(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["demo"]) == 0
    folder = tmp_path / "metaeval-demo"
    assert f"wrote forest.pdf, forest.png, table.tex to {folder}" in capsys.readouterr().out
    assert (folder / "forest.pdf").read_bytes()[:5] == b"%PDF-"
    assert (folder / "forest.png").read_bytes()[:4] == b"\x89PNG"
    tex = (folder / "table.tex").read_text()
    scores = metaeval.load_example()
    eff = scores[scores.metric == "accuracy"].meta.effects("logistic_regression")  # the defaults
    assert tex == metaeval.report.to_latex(eff, pooled=eff.meta.pool(), label="tab:metaeval-demo")
    assert main(["demo", "--ranger", "--output", str(tmp_path / "ranger")]) == 0
    eff = scores[scores.metric == "accuracy"].meta.effects("logistic_regression", effect="smd")
    pooled = eff.meta.pool(method="DL", test="z")
    assert (tmp_path / "ranger" / "table.tex").read_text() == metaeval.report.to_latex(
        eff, pooled=pooled, label="tab:metaeval-demo"
    )
    capsys.readouterr()
    assert main(["demo", "--output", str(tmp_path / "elsewhere"), "--method", "REML"]) == 0
    assert (tmp_path / "elsewhere" / "forest.png").exists()
    assert "wrote" in capsys.readouterr().out
    assert main(["demo", "--no-output"]) == 0
    assert "wrote" not in capsys.readouterr().out


def test_demo_usage_and_data_error_exit_codes(capsys):
    with pytest.raises(SystemExit) as stop:  # argparse: an unknown choice is a usage error
        main(["demo", "--effect", "nope"])
    assert stop.value.code == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err
    assert main(["demo", "--control", "nope", "--no-output"]) == 1  # no such system
    err = capsys.readouterr().err
    assert err.startswith("metaeval demo: error:") and "'nope'" in err and "Traceback" not in err


def test_console_script_runs():
    done = subprocess.run(
        [sys.executable, "-m", "metaeval", "demo", "--effect", "md", "--no-output"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "gradient_boosting" in done.stdout

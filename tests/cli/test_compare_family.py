"""``metaeval compare --adjust ... --family`` (issue 39, item 18): with one treatment the
default family (the pairs of one task and metric) holds one test and the adjustment does
nothing — the command says so — and ``--family tasks|metrics|all`` adjusts across tasks,
metrics or every test. Reference: statsmodels' ``multipletests`` on the printed p-values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _helpers import parse_raw
from statsmodels.stats.multitest import multipletests

import metaeval
from metaeval_cli import main

EXAMPLE = str(Path(metaeval.__file__).parent / "datasets" / "example.csv.gz")
KEYS = {"tasks": ["metric"], "metrics": ["task"], "all": []}


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _compact(out: str) -> pd.DataFrame:
    tables = parse_raw(out)
    parts = [t.assign(metric=title.split(":")[0]) for title, t in tables.items()]
    return pd.concat(parts, ignore_index=True)


def _reference(table: pd.DataFrame, keys: list[str], method: str = "holm") -> np.ndarray:
    out = np.full(len(table), np.nan)
    groups = table.groupby(keys, sort=False).indices if keys else {(): np.arange(len(table))}
    for rows in groups.values():  # the reference: one family at a time
        out[rows] = multipletests(table["p_value"].to_numpy()[rows], method=method)[1]
    return out


def test_one_treatment_with_the_default_family_warns_that_nothing_is_adjusted(capsys):
    code, out, err = _run(
        capsys,
        "compare",
        EXAMPLE,
        "--control",
        "logistic_regression",
        "--treatment",
        "knn",
        "--adjust",
        "holm",
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    assert "metaeval: warning: adjust='holm' changes nothing" in err and "--family" in err
    table = _compact(out)
    np.testing.assert_array_equal(table["p_adjusted"], table["p_value"])


@pytest.mark.parametrize("family", ["tasks", "metrics", "all"])
@pytest.mark.parametrize("method", ["holm", "fdr_bh"])
def test_family_adjusts_across_tasks_metrics_or_every_test(capsys, family, method):
    code, out, err = _run(
        capsys,
        "compare",
        EXAMPLE,
        "--control",
        "logistic_regression",
        "--treatment",
        "knn",
        "--adjust",
        method,
        "--family",
        family,
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    assert "changes nothing" not in err
    table = _compact(out)
    assert len(table) == 8  # 4 tasks x 2 metrics
    # printed at full precision: the reference on the printed p-values
    np.testing.assert_allclose(
        table["p_adjusted"], _reference(table, KEYS[family], method), rtol=1e-12
    )
    assert f"over {'every test' if family == 'all' else 'every ' + family[:-1]}" in out


def test_family_without_adjust_is_a_usage_error(capsys):
    code, _, err = _run(capsys, "compare", EXAMPLE, "--control", "knn", "--family", "tasks")
    assert code == 2 and "--family" in err and "--adjust" in err


def test_two_systems_without_control_adjust_over_the_metrics(capsys, tmp_path):
    scores = metaeval.load_example()
    two = scores[scores["system"].isin(["knn", "naive_bayes"]) & (scores["task"] == "iris")]
    path = tmp_path / "two.csv"
    metaeval.io.write_scores(two, path)
    code, out, err = _run(
        capsys,
        "compare",
        str(path),
        "--adjust",
        "holm",
        "--family",
        "metrics",
        "--print-mode",
        "raw",
        "--seed",
        "1",
        "--n-resamples",
        "100",
    )
    assert code == 0, err
    (t_test,) = [t for title, t in parse_raw(out).items() if title.startswith("Paired t-test")]
    np.testing.assert_allclose(t_test["p_adjusted"], _reference(t_test, []), rtol=1e-12)
    # the default family: one test per metric, said and not printed
    code, out, err = _run(
        capsys,
        "compare",
        str(path),
        "--adjust",
        "holm",
        "--print-mode",
        "raw",
        "--seed",
        "1",
        "--n-resamples",
        "100",
    )
    assert code == 0 and "--family" in out + err


def test_report_takes_the_family_and_says_it_in_the_methods(capsys, tmp_path):
    out = tmp_path / "r.json"
    code, _, err = _run(
        capsys,
        "report",
        EXAMPLE,
        "--control",
        "logistic_regression",
        "--family",
        "tasks",
        "--n-resamples",
        "20",
        "--seed",
        "1",
        "-o",
        str(out),
    )
    assert code == 0, err
    doc = json.loads(out.read_text())
    tests = pd.DataFrame(doc["tests"])
    np.testing.assert_allclose(tests["p_adjusted"], _reference(tests, ["metric"]), rtol=1e-12)
    assert doc["options"]["family"] == "tasks"
    assert "within each family of one metric" in doc["methods"]
    assert "16 tests per family, 2 families" in doc["methods"]  # 4 treatments x 4 tasks

"""``metaeval plan`` (issue 28): the printed plans equal the library's planners on the same
pilot (queries, clusters, epochs, tasks), and misplaced options are usage errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _helpers import parse_raw

import metaeval
from metaeval.design import plan_queries, plan_tasks
from metaeval.errors import MetaEvalWarning
from metaeval_cli import main

EXAMPLE = Path(metaeval.__file__).parent / "datasets" / "example.csv.gz"
CONTROL = "logistic_regression"


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main(["plan", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _printed(out: str) -> pd.DataFrame:
    return parse_raw(out)["Plan"]


def _same(printed: pd.DataFrame, expected: pd.DataFrame, columns: list[str]) -> None:
    assert len(printed) == len(expected) > 0
    for column in columns:
        np.testing.assert_allclose(
            printed[column].to_numpy(float), expected[column].to_numpy(float), rtol=1e-12
        )


def test_queries_per_task_as_plan_queries(capsys, tmp_path):
    figure = tmp_path / "curves.png"
    code, out, err = _run(
        capsys,
        EXAMPLE,
        "--control",
        CONTROL,
        "--metric",
        "accuracy",
        "--mde",
        0.02,
        "--power",
        0.8,
        "--plot",
        figure,
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    scores = metaeval.load_example()
    expected = plan_queries(
        scores[scores["metric"] == "accuracy"], CONTROL, mde=0.02, power=0.8
    ).table
    _same(_printed(out), expected, ["n", "mde", "power", "sd_diff", "pilot_n"])
    assert figure.stat().st_size > 0
    # the other two unknowns: the mde of 300 queries, the power of 300 queries
    code, out, _ = _run(
        capsys, EXAMPLE, "--control", CONTROL, "--n", 300, "--power", 0.8, "--print-mode", "raw"
    )
    _same(_printed(out), plan_queries(scores, CONTROL, n=300, power=0.8).table, ["mde"])
    code, out, _ = _run(
        capsys,
        EXAMPLE,
        "--control",
        CONTROL,
        "--test",
        "ci",
        "--width",
        0.05,
        "--print-mode",
        "raw",
    )
    _same(_printed(out), plan_queries(scores, CONTROL, test="ci", width=0.05).table, ["n"])


def test_tasks_as_plan_tasks_on_the_pilots_effects(capsys):
    code, out, err = _run(
        capsys,
        EXAMPLE,
        "--control",
        CONTROL,
        "--metric",
        "accuracy",
        "--tasks",
        "--effect",
        "md",
        "--mde",
        0.02,
        "--power",
        0.8,
        "--seed",
        4,
        "--n-draws",
        500,
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    scores = metaeval.load_example()
    effects = metaeval.effects(scores[scores["metric"] == "accuracy"], CONTROL, effect="md")
    expected = plan_tasks(effects, mde=0.02, power=0.8, seed=4, n_draws=500).table
    _same(_printed(out), expected, ["k", "power", "power_normal", "k_normal", "tau2"])
    assert "seed 4" in out


def test_clusters_and_epochs(capsys, tmp_path):
    """A pilot with passages and three epochs: --cluster plans clusters, --epochs plans
    with the between/within-item split, as the library does."""
    rng = np.random.default_rng(8)
    passages, per, epochs = 20, 4, 3
    item = np.repeat(rng.normal(0, 0.3, passages), per) + rng.normal(0, 0.2, passages * per)
    rows = []
    for system, gain in (("base", 0.0), ("tuned", 0.1)):
        for e in range(epochs):
            value = item + gain + rng.normal(0, 0.4, item.size)
            rows.append(
                pd.DataFrame(
                    {
                        "task": "qa",
                        "query": [f"i{i}" for i in range(item.size)],
                        "system": system,
                        "metric": "score",
                        "replicate": e + 1,
                        "value": value,
                        "passage": np.repeat([f"p{p}" for p in range(passages)], per),
                    }
                )
            )
    pilot = pd.concat(rows, ignore_index=True)
    path = tmp_path / "pilot.csv"
    pilot.to_csv(path, index=False)
    code, out, err = _run(
        capsys,
        path,
        "--control",
        "base",
        "--mde",
        0.1,
        "--power",
        0.8,
        "--epochs",
        5,
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    expected = plan_queries(pilot, "base", mde=0.1, power=0.8, replicates="epochs", epochs=5)
    _same(_printed(out), expected.table, ["n", "var_between", "var_within"])
    # the same replicates read as seeds: their variance is planned with
    code, out, err = _run(
        capsys,
        path,
        "--control",
        "base",
        "--mde",
        0.1,
        "--power",
        0.8,
        "--seeds",
        4,
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    expected = plan_queries(pilot, "base", mde=0.1, power=0.8, replicates="seeds", seeds=4)
    _same(_printed(out), expected.table, ["n", "var_seeds", "sd_diff"])
    averaged = pilot.groupby(["task", "query", "system", "metric", "passage"], as_index=False)[
        "value"
    ].mean()
    path = tmp_path / "items.csv"
    averaged.to_csv(path, index=False)
    code, out, err = _run(
        capsys,
        path,
        "--control",
        "base",
        "--mde",
        0.1,
        "--power",
        0.8,
        "--cluster",
        "passage",
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    # the passages' shift cancels in the differences: a design effect below 1, floored
    # at 1 with a warning (issue 39, item 15)
    assert "design effect is below 1" in err
    with pytest.warns(MetaEvalWarning, match="design effect is below 1"):
        expected = plan_queries(averaged, "base", mde=0.1, power=0.8, cluster="passage").table
    assert expected["design_effect"].item() == 1
    _same(_printed(out), expected, ["n", "n_items", "design_effect"])
    assert "clusters of queries" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tasks", "--n", "30", "--mde", "0.02"], "--n: only for per-task designs"),
        (["--k", "5", "--mde", "0.02"], "--k: only for --tasks"),
        (["--mde", "0.02"], "power"),  # the library's OptionError: two of n, mde, power
    ],
)
def test_misplaced_or_missing_options_are_usage_errors(capsys, argv, message):
    code, _, err = _run(capsys, EXAMPLE, "--control", CONTROL, *argv)
    assert code == 2 and message in err, err


def _one_and_three_epochs(rng: np.random.Generator) -> pd.DataFrame:
    """Binary answers of two models on two tasks of 40 items: 'one' run with 1 epoch,
    'three' with 3 (an Inspect folder where tasks have different epochs)."""
    rows = []
    for task, epochs in (("one", 1), ("three", 3)):
        p = rng.uniform(0.2, 0.8, 40)
        for system, gain in (("base", 0.0), ("new", 0.1)):
            for e in range(epochs):
                rows.append(
                    pd.DataFrame(
                        {
                            "task": task,
                            "query": np.arange(40),
                            "system": system,
                            "metric": "acc",
                            "replicate": e,
                            "value": (rng.random(40) < p + gain).astype(float),
                        }
                    )
                )
    return pd.concat(rows, ignore_index=True)


def test_epochs_with_a_one_epoch_task_says_why(capsys, tmp_path, rng):
    """The user's step (issue 39, item 19): --epochs on tasks of 1 and 3 epochs gave the
    1-epoch task NaN with "fewer than 2 paired queries". At the pilot's own epochs it is
    planned from its item differences (the t design of the paired scores, statsmodels);
    for more epochs it is NaN, and the warning and the table say why: one epoch, no
    within-item variance to estimate."""
    from statsmodels.stats.power import TTestPower

    pilot = _one_and_three_epochs(rng)
    path = tmp_path / "pilot.csv"
    pilot.to_csv(path, index=False)
    code, out, err = _run(
        capsys,
        path,
        "--control",
        "base",
        "--mde",
        0.1,
        "--power",
        0.8,
        "--epochs",
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    assert "fewer than 2 paired" not in err and "one epoch per item" in err
    table = _printed(out).set_index("task")
    one = pilot[pilot["task"] == "one"].pivot(index="query", columns="system", values="value")
    sd = (one["new"] - one["base"]).std(ddof=1)
    want = TTestPower().solve_power(effect_size=0.1 / sd, alpha=0.05, power=0.8)
    assert table.loc["one", "n"] == int(np.ceil(want)) and table.loc["one", "epochs"] == 1
    assert table.loc["one", "sd_epochs"] == pytest.approx(sd, rel=1e-4)  # 4 decimals shown
    assert np.isnan(table.loc["one", "var_within"]) and np.isfinite(table.loc["three", "n"])
    # five epochs: the 1-epoch task cannot be planned, for the reason said
    code, out, err = _run(
        capsys,
        path,
        "--control",
        "base",
        "--mde",
        0.1,
        "--power",
        0.8,
        "--epochs",
        5,
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    assert "fewer than 2 paired" not in err
    assert "one epoch per item" in err and "task='one'" in err and "task='three'" not in err
    table = _printed(out).set_index("task")
    assert np.isnan(table.loc["one", "n"]) and table.loc["three", "n"] > 0

"""``metaeval facets`` (issue 42, item 4): the library's components, facet-aware
differences and decision study, from a file of scores with a column per facet."""

from __future__ import annotations

import numpy as np
import pytest

import metaeval
from metaeval_cli import main

RANDOM = ["query", "prompt", "seed"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    rng = np.random.default_rng(11)
    rows = [(q, p, s, m) for q in range(30) for p in range(4) for s in range(2) for m in "ab"]
    import pandas as pd

    t = pd.DataFrame(rows, columns=["query", "prompt", "seed", "system"]).assign(
        task="qa", metric="acc"
    )
    t["value"] = (
        rng.normal(0, 1, 30)[t["query"]]
        + rng.normal(0, 0.3, 4)[t["prompt"]]
        + 0.2 * (t["system"] == "b")
        + rng.normal(0, 0.5, len(t))
    )
    path = tmp_path_factory.mktemp("facets") / "runs.csv"
    t.to_csv(path, index=False)
    return path, t


def test_the_tables_are_the_librarys(runs, capsys):
    path, table = runs
    code = main(
        [
            "facets",
            str(path),
            "--random",
            *RANDOM,
            "--control",
            "a",
            "--print-mode",
            "raw",
            "--plan",
            "--costs",
            "query=1,prompt=50,seed=200",
            "--mde",
            "0.2",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    res = metaeval.facets(table, RANDOM, control="a")
    for title in (
        "Variance components",
        "Paired differences",
        "Means",
        "G coefficients",
        "Decision study",
    ):
        assert f"# {title}" in out
    effect = res.pairs["effect"].item()
    assert repr(effect) in out or f"{effect:.10g}"[:8] in out
    plan = res.plan(costs={"query": 1, "prompt": 50, "seed": 200}, mde=0.2).table
    planned = plan[plan["design"] == "planned"].iloc[0]
    assert f"\tplanned\t{planned['n_query']}\t{planned['n_prompt']}\t{planned['n_seed']}\t" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--plan"], "--plan needs what to aim at"),
        (["--mde", "0.1"], "go with --plan"),
        (["--plan", "--mde", "0.1", "--costs", "judge=5"], "'judge' is not one of --random"),
        (["--plan", "--mde", "0.1", "--costs", "query=cheap"], "is not FACET=NUMBER"),
        (["--control", "z"], "'z' is not a system"),
    ],
)
def test_bad_options_exit_2(runs, capsys, args, message):
    path, _ = runs
    assert main(["facets", str(path), "--random", *RANDOM, *args]) == 2
    assert message in capsys.readouterr().err


def test_a_missing_facet_column_exits_2(runs, capsys):
    path, _ = runs
    assert main(["facets", str(path), "--random", "query", "template"]) == 2
    assert "--random 'template' is not a column" in capsys.readouterr().err

"""analyze(): the summary row's ``n`` counts the queries of the tasks it pools (issue 39,
item 22); a task left out of pooling (its effect undefined) was counted too."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import DegenerateWarning


def test_the_summary_n_counts_only_the_pooled_tasks():
    scores = metaeval.load_example().query("metric == 'accuracy'")
    pair = scores[scores["system"].isin(["knn", "logistic_regression"])]
    copy = pair[(pair["system"] == "logistic_regression") & (pair["task"] == "iris")]
    pair = pd.concat(
        [pair[~((pair["system"] == "knn") & (pair["task"] == "iris"))], copy.assign(system="knn")],
        ignore_index=True,
    )
    with pytest.warns(DegenerateWarning) as record:  # iris: zero variance, left out
        table = metaeval.analyze(pair, "logistic_regression", effect="smd")
    assert any("left out of pooling" in str(w.message) for w in record)
    tasks = table[table["row"] == "task"]
    assert tasks.set_index("task").loc["iris", ["effect", "weight"]].isna().all()
    summary = table[table["row"] == "summary"].iloc[0]
    with pytest.warns(DegenerateWarning):
        effects = metaeval.effects(pair, "logistic_regression", effect="smd")
    pooled = np.isfinite(effects["effect"]) & np.isfinite(effects["variance"])
    assert summary["n"] == effects.loc[pooled, "n"].sum() == 569 + 1797 + 178

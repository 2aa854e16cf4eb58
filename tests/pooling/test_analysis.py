"""The Ranger-shaped table."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import NARROW_KH, make_scores

import metaeval


def test_analyze_rows_and_weights(rng):
    scores = make_scores(rng, systems=("ctrl", "a", "b"))
    table = scores.meta.analyze(control="ctrl", effect="smd", method="DL")
    eff = scores.meta.effects(control="ctrl", effect="smd")
    pooled = eff.meta.pool(method="DL")
    assert len(table) == len(eff) + len(pooled)
    for (metric, treatment), group in table.groupby(["metric", "treatment"], sort=False):
        assert group["row"].tolist() == ["task"] * 4 + ["summary"]
        tasks, summary = group.iloc[:-1], group.iloc[-1]
        assert tasks["weight"].sum() == pytest.approx(100)
        p = pooled[(pooled["metric"] == metric) & (pooled["treatment"] == treatment)].iloc[0]
        w = 1 / (tasks["se"] ** 2 + p["tau2"])
        np.testing.assert_allclose(tasks["weight"], 100 * w / w.sum(), rtol=1e-12)
        assert summary["effect"] == p["effect"] and summary["ci_low"] == p["ci_low"]
        assert summary["task"] == "summary" and summary["weight"] == 100
        assert summary["n"] == tasks["n"].sum()
        assert np.isnan(summary["mean_control"])
    merged = table[table["row"] == "task"].merge(eff, on=["metric", "treatment", "control", "task"])
    np.testing.assert_array_equal(merged["mean_control_x"], merged["mean_control_y"])
    np.testing.assert_array_equal(merged["mean_treatment_x"], merged["mean_treatment_y"])


@NARROW_KH
def test_analyze_order_follows_categories(rng):
    scores = make_scores(rng).astype({"system": "category"})
    scores["system"] = scores["system"].cat.reorder_categories(["ctrl", "b", "a"])
    table = metaeval.analyze(scores, control="ctrl", effect="md")
    assert table["treatment"].drop_duplicates().tolist() == ["b", "a"]


def test_analyze_keeps_reporting_scale(rng):
    table = make_scores(rng).meta.analyze(control="ctrl", effect="corr")
    np.testing.assert_allclose(table["r"], np.tanh(table["effect"]), rtol=1e-12)
    np.testing.assert_allclose(table["r_ci_low"], np.tanh(table["ci_low"]), rtol=1e-12)
    assert "rel_change" not in table.columns

"""metaeval.judge_errors against scikit-learn's confusion matrix and κ, numpy's
correlation, the Rogan–Gladen and n_eff formulas, and coverage simulations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

import metaeval
from metaeval import DegenerateWarning, SchemaError


def panel(rng, n_tasks=2, n_items=400, gold_share=0.3, judges=None, prevalence=0.4):
    """Right/wrong labels of judges (name: (sensitivity, specificity)) and a gold judge on
    a random share of the items, one system."""
    judges = judges or {"a": (0.9, 0.85), "b": (0.8, 0.9), "c": (0.8, 0.75)}
    rows = []
    for t in range(n_tasks):
        truth = rng.random(n_items) < prevalence
        shared = rng.random(n_items) < 0.15  # an item that fools every judge at once
        query = [f"q{i}" for i in range(n_items)]
        for name, (sens, spec) in judges.items():
            right = np.where(truth, rng.random(n_items) < sens, rng.random(n_items) < spec)
            right &= ~shared
            rows.append(
                pd.DataFrame(
                    {
                        "task": f"t{t}",
                        "metric": "m",
                        "system": "s",
                        "query": query,
                        "judge": name,
                        "value": np.where(right, truth, ~truth) * 1.0,
                    }
                )
            )
        keep = rng.random(n_items) < gold_share
        rows.append(
            pd.DataFrame(
                {
                    "task": f"t{t}",
                    "metric": "m",
                    "system": "s",
                    "query": np.array(query)[keep],
                    "judge": "gold",
                    "value": truth[keep] * 1.0,
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def test_error_rates_kappa_and_correlations_equal_direct_computations(rng):
    table = panel(rng)
    res = metaeval.judge_errors(table, "gold", n_resamples=0)
    for task in ("t0", "t1"):
        wide = table[table["task"] == task].pivot(index="query", columns="judge", values="value")
        labelled = wide.dropna(subset=["gold"])
        for judge in ("a", "b", "c"):
            row = res.table.query("task == @task and judge == @judge").iloc[0]
            tn, fp, fn, tp = confusion_matrix(labelled["gold"], labelled[judge]).ravel()
            assert row["n_gold"] == len(labelled)
            assert row["sensitivity"] == pytest.approx(tp / (tp + fn), abs=1e-12)
            assert row["specificity"] == pytest.approx(tn / (tn + fp), abs=1e-12)
            assert row["accuracy"] == pytest.approx((tp + tn) / len(labelled), abs=1e-12)
            kappa = cohen_kappa_score(labelled["gold"], labelled[judge])
            assert row["kappa"] == pytest.approx(kappa, abs=1e-12)
            assert row["bias"] == pytest.approx((labelled[judge] - labelled["gold"]).mean())
            rate = wide[judge].mean()
            assert row["positive_rate"] == pytest.approx(rate, abs=1e-12)
            sens, spec = tp / (tp + fn), tn / (tn + fp)
            rogan = np.clip((rate + spec - 1) / (sens + spec - 1), 0, 1)
            assert row["prevalence"] == pytest.approx(rogan, abs=1e-12)
        errors = labelled[["a", "b", "c"]].sub(labelled["gold"], axis=0)
        corr = errors.corr().to_numpy()[np.triu_indices(3, k=1)]
        got = res.correlations.query("task == @task")["error_corr"].to_numpy()
        np.testing.assert_allclose(got, corr, atol=1e-12)
        rho = corr.mean()
        one = res.panel.query("task == @task").iloc[0]
        assert one["error_corr"] == pytest.approx(rho, abs=1e-12)
        assert one["n_eff"] == pytest.approx(3 / (1 + 2 * rho), abs=1e-12)
        assert one["n_judges"] == 3


def test_numeric_labels_give_the_bias_and_no_rates(rng):
    truth = rng.normal(3, 1, 300)
    table = pd.concat(
        [
            pd.DataFrame(
                {
                    "task": "t",
                    "metric": "m",
                    "system": "s",
                    "query": np.arange(300).astype(str),
                    "judge": "j",
                    "value": truth + 0.4 + rng.normal(0, 0.5, 300),
                }
            ),
            pd.DataFrame(
                {
                    "task": "t",
                    "metric": "m",
                    "system": "s",
                    "query": np.arange(300).astype(str),
                    "judge": "human",
                    "value": truth,
                }
            ),
        ]
    )
    res = metaeval.judge_errors(table, n_resamples=400, seed=3).table.iloc[0]
    assert np.isnan(res["sensitivity"]) and np.isnan(res["prevalence"])
    assert res["bias"] == pytest.approx(0.4, abs=0.1)
    assert res["bias_se"] == pytest.approx(0.5 / np.sqrt(300), rel=0.15)


def test_a_judge_no_better_than_chance_has_no_prevalence_and_a_warning(rng):
    table = panel(rng, n_tasks=1, judges={"coin": (0.45, 0.5), "good": (0.9, 0.9)})
    with pytest.warns(DegenerateWarning, match="Rogan–Gladen") as caught:
        res = metaeval.judge_errors(table, "gold", n_resamples=0)
    assert np.isnan(res.table.query("judge == 'coin'")["prevalence"].item())
    groups = [w.message.groups for w in caught if "Rogan" in str(w.message)][0]
    assert groups["judge"].tolist() == ["coin"]


def test_bad_input_names_the_gold_judge_and_the_task(rng):
    table = panel(rng)
    with pytest.raises(SchemaError, match="gold judge 'human' has no label"):
        metaeval.judge_errors(table)
    no_gold = table[~((table["task"] == "t1") & (table["judge"] == "gold"))]
    with pytest.raises(SchemaError, match="labelled no output of task 't1'"):
        metaeval.judge_errors(no_gold, "gold")
    with pytest.raises(SchemaError, match="2 judges or more"):
        metaeval.judge_errors(table[table["judge"] == "gold"], "gold")


@pytest.mark.slow
def test_prevalence_and_n_eff_intervals_cover():
    # 300 replications as 300 tasks of one call: 1,000 items, a 10% gold slice, three
    # judges whose errors share a cause on 15% of the items
    rng = np.random.default_rng(5)
    table = panel(rng, n_tasks=300, n_items=1000, gold_share=0.1, prevalence=0.3)
    res = metaeval.judge_errors(table, "gold", n_resamples=400, seed=2)
    t = res.table.query("judge == 'a'")
    cover = ((t["prevalence_low"] <= 0.3) & (0.3 <= t["prevalence_high"])).mean()
    # the true n_eff of this design: its error correlation on a very large sample
    big = panel(np.random.default_rng(6), n_tasks=1, n_items=400_000, gold_share=1.0)
    true_n_eff = metaeval.judge_errors(big, "gold", n_resamples=0).panel["n_eff"].item()
    p = res.panel
    cover_eff = ((p["n_eff_low"] <= true_n_eff) & (true_n_eff <= p["n_eff_high"])).mean()
    print(
        f"coverage of 95% intervals over 300 tasks: Rogan–Gladen prevalence {cover:.3f}, "
        f"n_eff {cover_eff:.3f} (true n_eff {true_n_eff:.3f})"
    )
    assert 0.91 <= cover <= 0.99  # Monte-Carlo error ±0.013
    assert 0.90 <= cover_eff <= 0.99

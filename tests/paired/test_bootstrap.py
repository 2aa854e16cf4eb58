"""bootstrap_effects(): statistics against scikit-learn/scipy, resamples against a loop."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

import metaeval
from metaeval import PairingWarning, SchemaError
from metaeval.paired import _resampling as rs


def _data(rng, kind: str, tasks=(("a", 60), ("b", 37))) -> pd.DataFrame:
    frames = []
    for task, n in tasks:
        if kind == "numeric":
            label = np.round(rng.normal(size=n), 1)  # ties, as in graded similarity
            preds = {
                s: np.round(label + rng.normal(0, sd, n), 1)
                for s, sd in (("ctrl", 0.8), ("t1", 0.5), ("t2", 1.0))
            }
        else:
            classes = 2 if kind == "binary" else 3
            label = rng.integers(0, classes, n)
            preds = {
                s: np.where(rng.random(n) < acc, label, rng.integers(0, classes, n))
                for s, acc in (("ctrl", 0.6), ("t1", 0.75), ("t2", 0.5))
            }
        for s, p in preds.items():
            frames.append(
                pd.DataFrame(
                    {
                        "task": task,
                        "query": np.arange(n),
                        "system": s,
                        "prediction": p,
                        "label": label,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


REFS = {
    "accuracy": ("binary", lambda y, p: accuracy_score(y, p)),
    "f1": ("binary", lambda y, p: f1_score(y, p)),
    "f1_macro": ("multi", lambda y, p: f1_score(y, p, average="macro")),
    "mcc": ("multi", lambda y, p: matthews_corrcoef(y, p)),
    "pearson": ("numeric", lambda y, p: stats.pearsonr(p, y).statistic),
    "spearman": ("numeric", lambda y, p: stats.spearmanr(p, y).statistic),
}


@pytest.mark.parametrize("name", list(REFS))
def test_statistics_and_resamples_match_references(rng, name):
    kind, ref = REFS[name]
    data = _data(rng, kind)
    b = 200
    eff = metaeval.bootstrap_effects(data, "ctrl", name, n_resamples=b, seed=9)
    assert len(eff) == 4 and (eff["metric"] == name).all()
    for row in eff.itertuples():
        part = data[data["task"] == row.task]
        part = part.iloc[
            np.argsort(part["query"].astype(str).to_numpy(), kind="stable")
        ]  # samples by id
        y = part[part["system"] == "ctrl"]["label"].to_numpy()
        pc = part[part["system"] == "ctrl"]["prediction"].to_numpy()
        pt = part[part["system"] == row.treatment]["prediction"].to_numpy()
        assert row.statistic_control == pytest.approx(ref(y, pc), rel=1e-10, abs=1e-12)
        assert row.effect == pytest.approx(ref(y, pt) - ref(y, pc), rel=1e-10, abs=1e-12)
        # the same resamples, one by one, through the reference implementation
        n = len(y)
        counts = np.concatenate([rs._block("counts", 9, row.task, j, n) for j in range(2)])[:b]
        diffs = []
        for c in counts:
            idx = np.repeat(np.arange(n), c)
            diffs.append(ref(y[idx], pt[idx]) - ref(y[idx], pc[idx]))
        assert row.variance == pytest.approx(np.var(diffs, ddof=1), rel=1e-8)
        assert row.boot_ci_low == pytest.approx(np.quantile(diffs, 0.025), rel=1e-8, abs=1e-12)


def test_pool_accepts_bootstrap_effects_and_seed_reproduces(rng):
    data = _data(rng, "multi")
    eff = metaeval.bootstrap_effects(data, "ctrl", "mcc", treatment="t1", n_resamples=300, seed=3)
    pooled = eff.meta.pool(method="REML")
    assert len(pooled) == 1 and pooled["k"].iloc[0] == 2
    again = metaeval.bootstrap_effects(
        data.sample(frac=1, random_state=2),
        "ctrl",
        "mcc",
        treatment="t1",
        n_resamples=300,
        seed=3,
    )
    np.testing.assert_array_equal(eff["variance"], again["variance"])
    assert eff.attrs["seed"] == 3


def test_custom_statistic(rng):
    data = _data(rng, "binary")

    def balanced_accuracy(label, pred, counts):
        recall = [
            (counts * ((label == c) & (pred == c))).sum(-1) / (counts * (label == c)).sum(-1)
            for c in (0, 1)
        ]
        return np.mean(recall, axis=0)

    eff = metaeval.bootstrap_effects(
        data, "ctrl", balanced_accuracy, treatment="t1", n_resamples=128, seed=1
    )
    from sklearn.metrics import balanced_accuracy_score

    part = data[data["task"] == "a"]
    y = part[part["system"] == "ctrl"]["label"].to_numpy()
    ref = balanced_accuracy_score(
        y, part[part["system"] == "t1"]["prediction"]
    ) - balanced_accuracy_score(y, part[part["system"] == "ctrl"]["prediction"])
    assert eff["effect"].iloc[0] == pytest.approx(ref, rel=1e-12)
    assert (eff["metric"] == "balanced_accuracy").all()


def test_bad_input(rng):
    data = _data(rng, "multi")
    with pytest.raises(SchemaError, match="`f1` is binary"):
        metaeval.bootstrap_effects(data, "ctrl", "f1")
    with pytest.raises(metaeval.OptionError, match="`statistic` must be one of"):
        metaeval.bootstrap_effects(data, "ctrl", "auc")
    with pytest.raises(metaeval.PairingError, match="not in the data"):
        metaeval.bootstrap_effects(data, "bert", "mcc")
    bad = data.copy()
    bad.loc[(bad["system"] == "t1") & (bad["query"] == 0), "label"] = 9
    with pytest.raises(SchemaError, match="label of a sample differs"):
        metaeval.bootstrap_effects(bad, "ctrl", "mcc")
    short = data.drop(
        data[(data["system"] == "t2") & (data["query"] < 3) & (data["task"] == "a")].index
    )
    with pytest.warns(PairingWarning, match="samples_left_out=3"):
        eff = metaeval.bootstrap_effects(short, "ctrl", "accuracy", n_resamples=128, seed=1)
    assert (eff.loc[eff["task"] == "a", "n"] == 57).all()


def test_accuracy_bootstrap_variance_matches_theory():
    """For accuracy the paired bootstrap variance of the difference is ≈ var(d)(n − 1)/n²."""
    scores = metaeval.load_example()
    acc = scores[scores["metric"] == "accuracy"]
    data = acc.assign(prediction=acc["value"].astype(int), label=1).drop(
        columns=["metric", "value"]
    )
    eff = metaeval.bootstrap_effects(
        data,
        "logistic_regression",
        "accuracy",
        treatment="naive_bayes",
        n_resamples=4000,
        seed=1,
    )
    md = acc.meta.effects(control="logistic_regression", treatment="naive_bayes", effect="md")
    both = eff.merge(md, on=["treatment", "control", "task"], suffixes=("", "_md"))
    np.testing.assert_allclose(both["effect"], both["effect_md"], atol=1e-12)
    theory = both["variance_md"] * (both["n"] - 1) / both["n"]
    assert np.all(
        np.abs(both["variance"] / theory - 1) < 4 * np.sqrt(2 / 4000)
    )  # 4 SEs of a variance

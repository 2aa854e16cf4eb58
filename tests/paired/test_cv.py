"""Cross-validation folds (issue 27, item 4): folds given as replicates are refused, and
per-fold scores with ``effects(cv=(n_train, n_test))`` get Nadeau and Bengio's corrected
variance (1/J + n_test/n_train)·S²_d with t inference on J − 1 degrees of freedom."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import metaeval
from metaeval import OptionError, SchemaError


def _folds(rng, datasets=("a", "b", "c"), folds=10, repeats=1) -> pd.DataFrame:
    rows = []
    for d in datasets:
        for r in range(repeats):
            for f in range(folds):
                base = rng.normal(0.8, 0.03)
                rows.append((d, f"r{r}f{f}", "svm", "acc", base + rng.normal(0.01, 0.01)))
                rows.append((d, f"r{r}f{f}", "tree", "acc", base))
    return pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])


@pytest.mark.parametrize("repeats", [1, 10])  # 10-fold and 10×10-fold cross-validation
def test_the_corrected_variance_equals_the_formula_by_hand(rng, repeats):
    scores = _folds(rng, repeats=repeats)
    n_train, n_test = 900, 100
    got = metaeval.effects(scores, "tree", effect="md", cv=(n_train, n_test)).set_index("task")
    for task, part in scores.groupby("task"):
        wide = part.pivot(index="query", columns="system", values="value")
        d = (wide["svm"] - wide["tree"]).to_numpy()
        j = len(d)
        var = (1 / j + n_test / n_train) * d.var(ddof=1)  # Nadeau & Bengio (2003)
        t = d.mean() / np.sqrt(var)
        crit = stats.t.isf(0.025, j - 1)
        row = got.loc[task]
        assert row["n"] == j and row["df"] == j - 1
        np.testing.assert_allclose(row["effect"], d.mean(), rtol=1e-12)
        np.testing.assert_allclose(row["variance"], var, rtol=1e-12)
        np.testing.assert_allclose(row["se"], np.sqrt(var), rtol=1e-12)
        np.testing.assert_allclose(
            [row["ci_low"], row["ci_high"]],
            [d.mean() - crit * np.sqrt(var), d.mean() + crit * np.sqrt(var)],
            rtol=1e-12,
        )
        np.testing.assert_allclose(row["p_value"], 2 * stats.t.sf(abs(t), j - 1), rtol=1e-10)


def test_the_correction_is_what_pool_weighs(rng):
    scores = _folds(rng)
    eff = metaeval.effects(scores, "tree", effect="md", cv=(90, 10))
    plain = metaeval.effects(scores, "tree", effect="md")
    np.testing.assert_allclose(eff["variance"], plain["variance"] * (1 + 10 * 10 / 90), rtol=1e-12)
    pooled = metaeval.pool(eff, method="EE", test="z")
    w = 1 / eff["variance"]
    np.testing.assert_allclose(
        pooled["effect"].iloc[0], (w * eff["effect"]).sum() / w.sum(), rtol=1e-12
    )


def test_folds_given_as_replicates_are_refused_with_the_way_out():
    """The issue's case: breast_cancer's queries split into 5 folds as `replicate`."""
    scores = metaeval.load_example().query("task == 'breast_cancer'")
    codes = scores["query"].astype("category").cat.codes
    folds = scores.assign(replicate=(codes % 5).astype(str))
    with pytest.raises(
        SchemaError, match=r"partitions the queries of task 'breast_cancer'.*cv=\(n_train, n_test\)"
    ):
        metaeval.effects(folds, "logistic_regression")
    with pytest.raises(SchemaError, match="folds"):
        metaeval.compare(folds, control="logistic_regression")
    # seeds: every query in every replicate, accepted
    seeds = pd.concat([scores.assign(replicate=r) for r in ("1", "2", "3")], ignore_index=True)
    assert len(metaeval.effects(seeds, "logistic_regression", replicates="crossed"))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"cv": (0, 10)}, "two positive numbers"),
        ({"cv": (90,)}, "two positive numbers"),
        ({"cv": "90/10"}, "two positive numbers"),
        ({"cv": (90, 10), "effect": "smd"}, "effect='md'"),
    ],
)
def test_bad_cv_options(rng, kwargs, match):
    kwargs = {"effect": "md", **kwargs}
    with pytest.raises(OptionError, match=match):
        metaeval.effects(_folds(rng), "tree", **kwargs)


def test_cv_with_a_replicate_column_is_refused(rng):
    scores = _folds(rng)
    seeds = pd.concat([scores.assign(replicate=r) for r in ("1", "2")], ignore_index=True)
    with pytest.raises(OptionError, match="no replicate column"):
        metaeval.effects(seeds, "tree", effect="md", cv=(90, 10), replicates="nested")


def test_the_dask_path_gives_the_same_corrected_effects(rng):
    dd = pytest.importorskip("dask.dataframe")
    scores = _folds(rng)
    want = metaeval.effects(scores, "tree", effect="md", cv=(90, 10))
    got = dd.from_pandas(scores, npartitions=2).meta.effects("tree", effect="md", cv=(90, 10))
    cols = ["effect", "variance", "se", "df", "ci_low", "ci_high", "p_value"]
    np.testing.assert_allclose(got[cols].to_numpy(float), want[cols].to_numpy(float), rtol=1e-12)

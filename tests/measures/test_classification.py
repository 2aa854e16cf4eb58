"""Tests of metaeval.measures.classification: per_sample, metrics, correlation."""

from __future__ import annotations

import math
import re
import statistics
import sys
import warnings

import numpy as np
import pytest
import scipy.stats as sps
import sklearn.metrics as skm

import metaeval
from metaeval.errors import MetaEvalError, OptionError, PairingError, SchemaError
from metaeval.measures.classification import confusion_matrix, correlation, metrics, per_sample
from metaeval.paired import correlation as _correlation
from metaeval.paired.correlation import fisher_z_variance

# ------------------------------------------------------------------ per_sample


def test_per_sample_round_trip(rng):
    n = 50
    y = rng.integers(0, 3, n)
    preds = {"good": np.where(rng.random(n) < 0.8, y, (y + 1) % 3), "bad": rng.integers(0, 3, n)}
    df = per_sample(y, preds, task="nli", metric="acc")
    assert metaeval.validate_scores(df) is df
    assert list(df.columns) == ["task", "query", "system", "metric", "value"]
    assert (df["task"] == "nli").all() and (df["metric"] == "acc").all()
    for system, pred in preds.items():
        rows = df[df["system"] == system]
        assert rows["query"].tolist() == [str(i) for i in range(n)]
        np.testing.assert_array_equal(rows["value"].to_numpy(), (pred == y).astype(float))
        assert rows["value"].mean() == pytest.approx(skm.accuracy_score(y, pred), abs=1e-15)


def test_per_sample_queries_and_label_types():
    df = per_sample(
        np.array(["pos", "neg", "pos"]),
        {1: ["pos", "pos", "neg"], "ints": [1, 0, 1]},
        task="sst2",
        queries=[10, 11, 12],
    )
    assert df["query"].tolist() == ["10", "11", "12"] * 2
    assert df["system"].tolist() == ["1"] * 3 + ["ints"] * 3
    assert df["value"].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]  # "1" != 1, "pos" != 1
    assert per_sample([1, 0], {"f": [1.0, 0.0]}, task="t")["value"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize(
    ("y", "preds", "kwargs", "error", "match"),
    [
        ([1, 0, 1], {"a": [1, 0, 1], "b": [1, 0]}, {}, PairingError, r"'b' has 2 .* 3 labels"),
        ([], {"a": []}, {}, SchemaError, r"`y_true` is empty"),
        ([1, None, 0], {"a": [1, 0, 0]}, {}, SchemaError, r"`y_true` has 1 missing .* \[1\]"),
        ([1, 0, 1], {"a": [1, np.nan, 1]}, {}, SchemaError, r"predictions\['a'\].* missing"),
        ([1, 0], {}, {}, PairingError, r"`predictions` is empty"),
        ([1, 0], [[1, 0]], {}, OptionError, r"must be a mapping"),
        ([1, 0], {"a": [1, 0]}, {"queries": ["q"]}, SchemaError, r"1 ids for 2 labels"),
        ([1, 0], {"a": [1, 0]}, {"queries": ["q", "q"]}, SchemaError, r"duplicated ids \['q'\]"),
        ([1, 0], {"a": [1, 0]}, {"task": ""}, OptionError, r"`task` must be a non-empty"),
        ([[1, 0]], {"a": [[1, 0]]}, {}, SchemaError, r"one-dimensional"),
    ],
)
def test_per_sample_errors(y, preds, kwargs, error, match):
    kwargs = {"task": "t", **kwargs}
    with pytest.raises(error, match=match):
        per_sample(y, preds, **kwargs)


# --------------------------------------------------------------------- metrics


def _sklearn_reference(y, p, average, labels=None):
    prec, rec, f1, _ = skm.precision_recall_fscore_support(
        y, p, average=average, labels=labels, zero_division=0
    )
    return [skm.accuracy_score(y, p), prec, rec, f1, skm.matthews_corrcoef(y, p)]


def _gorodkin(cm):
    s, c = cm.sum(), np.trace(cm)
    t, p = cm.sum(axis=1), cm.sum(axis=0)
    return (c * s - t @ p) / math.sqrt((s**2 - p @ p) * (s**2 - t @ t))


@pytest.mark.parametrize(
    ("average", "n_classes"),
    [("binary", 2), ("macro", 2), ("micro", 2), ("macro", 4), ("micro", 4)],
)
def test_metrics_match_sklearn(rng, average, n_classes):
    y = rng.integers(0, n_classes, 300)
    p = np.where(rng.random(300) < 0.6, y, rng.integers(0, n_classes, 300))
    m = metrics(y, p, average=average)
    assert m.index.tolist() == ["accuracy", "precision", "recall", "f1", "mcc"]
    np.testing.assert_allclose(m.to_numpy(), _sklearn_reference(y, p, average), rtol=1e-14)
    cm = confusion_matrix(y, p, average=average)
    np.testing.assert_array_equal(cm.to_numpy(), skm.confusion_matrix(y, p))
    assert cm.index.name == "true" and cm.columns.name == "predicted"
    assert cm.index.tolist() == cm.columns.tolist() == list(range(n_classes))
    # the multi-class MCC is Gorodkin's, from the confusion matrix, whatever the average
    assert m["mcc"] == pytest.approx(_gorodkin(cm.to_numpy()), rel=1e-12)
    if average == "micro":
        assert m["precision"] == m["recall"] == pytest.approx(m["accuracy"], rel=1e-15)


def test_metrics_pos_label_and_string_labels(rng):
    y = rng.choice(["ham", "spam"], 100)
    p = np.where(rng.random(100) < 0.7, y, rng.choice(["ham", "spam"], 100))
    m = metrics(y, p, pos_label="spam")
    assert m["precision"] == skm.precision_score(y, p, pos_label="spam")
    assert m["recall"] == skm.recall_score(y, p, pos_label="spam")
    assert confusion_matrix(y, p, pos_label="spam").index.tolist() == ["ham", "spam"]


def test_metrics_notes_worked_example():
    m = metrics([1, 0, 1, 0, 1], [1, 0, 1, 1, 0])
    tn, fp, fn, tp = confusion_matrix([1, 0, 1, 0, 1], [1, 0, 1, 1, 0]).to_numpy().ravel()
    assert (tn, fp, fn, tp) == (1, 1, 1, 2)
    assert m["precision"] == pytest.approx(2 / 3) and m["recall"] == pytest.approx(2 / 3)
    assert m["accuracy"] == pytest.approx(3 / 5)
    assert m["mcc"] == pytest.approx((tp * tn - fp * fn) / math.sqrt(3 * 3 * 2 * 2))


def test_metrics_one_class_missing_in_y_true():
    y, p = [1, 1, 1, 1, 1, 1], [1, 0, 1, 1, 0, 1]
    with pytest.warns(metaeval.DegenerateWarning, match=r"mcc .* y_true has a single class \(1\)"):
        m = metrics(y, p)
    assert m["mcc"] == 0.0
    assert m["f1"] == pytest.approx(2 * 4 / (2 * 4 + 0 + 2))
    assert confusion_matrix(y, p).loc[1].tolist() == [2, 4]


def test_metrics_notes_example_1():
    y, p = [1] * 9 + [0], [1] * 10
    with pytest.warns(metaeval.DegenerateWarning, match=r"mcc .* y_pred has a single class \(1\)"):
        m = metrics(y, p)
    assert round(m["f1"], 4) == 0.9474
    assert m["mcc"] == 0.0


def test_metrics_notes_example_2():
    # TP = 90, TN = 0, FP = 9, FN = 1
    y = np.array([1] * 90 + [0] * 9 + [1])
    p = np.array([1] * 90 + [1] * 9 + [0])
    m = metrics(y, p)  # no warning: every quantity is defined
    assert confusion_matrix(y, p).to_numpy().ravel().tolist() == [0, 9, 1, 90]
    assert round(m["f1"], 2) == 0.95 and m["f1"] == pytest.approx(180 / 190)
    assert round(m["mcc"], 2) == -0.03
    assert m["mcc"] == pytest.approx(-9 / math.sqrt(99 * 91 * 9 * 1), rel=1e-12)


@pytest.mark.parametrize(
    ("y", "p", "kwargs", "matches"),
    [
        ([1, 1, 0], [0, 0, 0], {}, [r"^precision: no sample was predicted as 1", "mcc"]),
        ([0, 0, 0], [0, 1, 1], {}, [r"^recall: no true label is 1", "mcc"]),
        (
            [0, 1, 2, 0],
            [0, 1, 1, 0],
            {"average": "macro"},
            [r"^precision of class\(es\) \[2\] \(entering the macro average as 0\)"],
        ),
        (
            [0, 1, 2],
            [0, 1, 2],
            {"average": "micro", "labels": [3]},
            [r"^precision \(counts pooled", r"^recall \(counts pooled", r"^f1 \(counts pooled"],
        ),
    ],
)
def test_metrics_undefined_values_warn(y, p, kwargs, matches):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = metrics(y, p, **kwargs)
    messages = [str(w.message) for w in caught]
    assert all(w.category is metaeval.DegenerateWarning for w in caught), messages
    assert len(messages) == len(matches)
    for pattern, message in zip(matches, messages, strict=True):
        assert re.search(pattern, message), (pattern, message)
        assert "set to 0 by scikit-learn's" in message
    expected = _sklearn_reference(y, p, kwargs.get("average", "binary"), kwargs.get("labels"))
    np.testing.assert_allclose(m.to_numpy(), expected, rtol=1e-14)


def test_confusion_matrix_checks_its_arguments_as_metrics_does():
    """The confusion matrix left ``metrics().attrs`` (issue 26: no tables in attrs) for a
    function of its own, which refuses what metrics() refuses."""
    assert metrics([1, 0, 1, 0], [1, 0, 0, 1]).attrs == {}
    with pytest.raises(PairingError, match="paired by position"):
        confusion_matrix([1, 0], [1, 0, 1])
    with pytest.raises(OptionError, match="`pos_label`"):
        confusion_matrix(["a", "b"], ["a", "a"], pos_label="c")
    with pytest.raises(OptionError, match="`average`"):
        confusion_matrix([1, 0], [1, 0], average="weighted")


def test_metrics_labels_extend_confusion_matrix():
    # precision of classes 2 and 3, recall and F1 of class 3 are undefined
    with pytest.warns(metaeval.DegenerateWarning, match=r"class\(es\) \[(2, )?3\]"):
        m = metrics([0, 1, 2], [0, 1, 1], average="macro", labels=[0, 1, 2, 3])
    cm = confusion_matrix([0, 1, 2], [0, 1, 1], average="macro", labels=[0, 1, 2, 3])
    assert cm.index.tolist() == [0, 1, 2, 3]
    assert cm.loc[3].sum() == cm[3].sum() == 0
    assert m["precision"] == pytest.approx((1 + 0.5 + 0 + 0) / 4)


@pytest.mark.parametrize(
    ("y", "p", "kwargs", "error", "match"),
    [
        ([0, 1, 2], [0, 1, 1], {}, OptionError, r"at most two classes, but there are 3"),
        (["a", "b"], ["a", "b"], {}, OptionError, r"`pos_label` must be one of \['a', 'b'\]"),
        ([0, 1], [0, 1], {"average": "weighted"}, OptionError, r"`average` must be one of"),
        ([0, 1, 1], [0, 1], {}, PairingError, r"`y_true` has 3 labels but `y_pred` has 2"),
        ([0, None], [0, 1], {}, SchemaError, r"`y_true` has 1 missing"),
        ([0, 1], [0, float("nan")], {}, SchemaError, r"`y_pred` has 1 missing"),
        ([], [], {}, SchemaError, r"empty"),
        ([0, "a"], [0, 0], {}, SchemaError, r"mix types \['int', 'str'\]"),
    ],
)
def test_metrics_errors(y, p, kwargs, error, match):
    with pytest.raises(error, match=match):
        metrics(y, p, **kwargs)


def test_metrics_without_sklearn(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn.metrics", None)
    with pytest.raises(MetaEvalError, match=r"pip install 'metaeval\[classification\]'"):
        metrics([0, 1], [0, 1])


# ----------------------------------------------------------------- correlation


@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_pearson_interval_matches_scipy(rng, alpha):
    x = rng.normal(size=40)
    y = 0.5 * x + rng.normal(size=40)
    c = correlation(x, y, alpha=alpha)
    ref = sps.pearsonr(x, y)
    ci = ref.confidence_interval(1 - alpha)
    assert c.index.tolist() == ["r", "ci_low", "ci_high", "p_value", "n", "se_z"]
    assert c["r"] == pytest.approx(ref.statistic, abs=1e-15)
    assert c["p_value"] == pytest.approx(ref.pvalue, rel=1e-12)
    assert abs(c["ci_low"] - ci.low) < 1e-12 and abs(c["ci_high"] - ci.high) < 1e-12
    assert c["n"] == 40 and c["se_z"] == pytest.approx(1 / math.sqrt(37))


@pytest.mark.parametrize(
    ("method", "factor", "offset", "scipy_func"),
    [("spearman", 1.06, 3, sps.spearmanr), ("kendall", 0.437, 4, sps.kendalltau)],
)
def test_rank_interval_by_hand(method, factor, offset, scipy_func):
    x = [3.1, 1.2, 4.4, 2.0, 5.5, 6.1, 0.3, 7.7, 8.2, 6.9, 9.4, 2.8]
    y = [2.0, 1.0, 3.9, 3.0, 4.1, 7.2, 0.9, 6.0, 9.9, 8.1, 8.8, 1.5]
    n = len(x)
    r = float(scipy_func(x, y).statistic)
    se = math.sqrt(factor / (n - offset))
    crit = statistics.NormalDist().inv_cdf(0.975)
    low, high = math.tanh(math.atanh(r) - crit * se), math.tanh(math.atanh(r) + crit * se)
    c = correlation(x, y, correlation=method)
    assert c.name == method
    assert c["r"] == r and c["se_z"] == pytest.approx(se, rel=1e-15)
    assert c["ci_low"] == pytest.approx(low, abs=1e-12)
    assert c["ci_high"] == pytest.approx(high, abs=1e-12)
    assert c["p_value"] == float(scipy_func(x, y).pvalue)


def test_fisher_z_variance():
    assert fisher_z_variance is _correlation.fisher_z_variance  # one implementation
    np.testing.assert_allclose(fisher_z_variance([13, 23], "pearson"), [0.1, 0.05])
    assert fisher_z_variance(13, "spearman") == pytest.approx(0.106)
    assert fisher_z_variance(14, "kendall") == pytest.approx(0.0437)
    assert np.isnan(fisher_z_variance([2, 3], "spearman")).all()
    assert np.isnan(fisher_z_variance([3, 4], "kendall")).all()


@pytest.mark.parametrize(("method", "n"), [("pearson", 3), ("spearman", 3), ("kendall", 4)])
def test_correlation_too_few_pairs(method, n):
    x, y = np.arange(n, dtype=float), np.array([0.0, 2.0, 1.0, 3.0][:n])
    with pytest.warns(metaeval.DegenerateWarning, match=rf"needs n >= {n + 1} pairs, but n={n}"):
        c = correlation(x, y, correlation=method)
    assert np.isfinite(c["r"]) and c["n"] == n
    assert np.isnan(c[["ci_low", "ci_high", "se_z"]]).all()


@pytest.mark.parametrize(
    ("x", "y", "match"),
    [([1.0, 2.0, 3.0, 4.0, 5.0], [2.0] * 5, r"y is constant"), ([1.0], [2.0], r"n=1 pair")],
)
def test_correlation_undefined(x, y, match):
    with pytest.warns(metaeval.DegenerateWarning, match=match):
        c = correlation(x, y, correlation="spearman")
    assert np.isnan(c.drop("n")).all() and c["n"] == len(x)


def test_correlation_perfect():
    c = correlation([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 4.0, 6.0, 8.0, 10.0])
    assert c["r"] == pytest.approx(1.0) and c["ci_low"] == c["ci_high"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("x", "y", "kwargs", "error", "match"),
    [
        ([1, 2, 3], [1, 2], {}, PairingError, r"`x` has 3 values but `y` has 2"),
        ([1, np.nan, 3], [1, 2, 3], {}, SchemaError, r"`x` has 1 non-finite .* \[1\]"),
        ([1, 2, 3], [1, 2, np.inf], {}, SchemaError, r"`y` has 1 non-finite .* \[2\]"),
        ([], [], {}, SchemaError, r"empty"),
        ([1, 2], [1, 2], {"correlation": "tau"}, OptionError, r"`correlation` must be one of"),
        ([1, 2], [1, 2], {"alpha": 1.5}, OptionError, r"`alpha`"),
    ],
)
def test_correlation_errors(x, y, kwargs, error, match):
    with pytest.raises(error, match=match):
        correlation(x, y, **kwargs)

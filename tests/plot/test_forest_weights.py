"""forest_plot() draws the weights of the pooled result it is given (issue 26, item 4): the plot
stage reaches pooling through its public face and never refits a model it was handed."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import metaeval
import metaeval.pooling._engine as engine
from metaeval import forest_plot
from metaeval.plot import forest

TREATMENTS = ["knn", "gradient_boosting", "random_forest"]


@pytest.fixture(scope="module")
def acc() -> pd.DataFrame:
    eff = metaeval.load_example().meta.effects("logistic_regression", treatment=TREATMENTS)
    return eff.query("metric == 'accuracy'").reset_index(drop=True)


def _drawn(fig) -> list[np.ndarray]:
    """Each panel's drawn weights relative to its largest: the squares' sizes are
    12 + 110·w/max(w) (``plot/forest.py::_panel``)."""
    out = []
    for ax in fig.axes:
        for coll in ax.collections:
            if coll.get_gid() == "tasks":
                out.append((np.asarray(coll.get_sizes(), float) - 12) / 110)
    return out


def _expected(weights: pd.DataFrame) -> list[np.ndarray]:
    return [(w / w.max()).to_numpy() for _, w in weights.groupby("treatment", sort=False)["weight"]]


@pytest.mark.parametrize(
    ("method", "ci"), [("REML", "knha"), ("DL", "z"), ("EE", "z"), ("PM", "knha")]
)
def test_drawn_weights_are_the_models_weights(acc, method, ci):
    """Today's drawn weights are the fit's row weights, i.e. metaeval.weights() of the same
    model; with and without `pooled=` the figure draws them (to 1e-12)."""
    expected = _expected(metaeval.weights(acc, method=method, test=ci))
    pooled = metaeval.pool(acc, method=method, test=ci)
    for fig in (forest_plot(acc, method=method, test=ci), forest_plot(acc, pooled=pooled)):
        drawn = _drawn(fig)
        assert len(drawn) == len(TREATMENTS)
        for d, e in zip(drawn, expected, strict=True):
            np.testing.assert_allclose(d, e, rtol=0, atol=1e-12)


def test_weights_from_the_pooled_tau2_follow_the_formula(acc):
    """w_i = 1/(v_i + τ̂²), 100·w_i/Σw_j per treatment: a loop over the documented formula."""
    from metaeval.plot.forest import _weighted

    pooled = metaeval.pool(acc, method="REML")
    table = _weighted(acc, pooled)
    for _, row in pooled.iterrows():
        rows = acc["treatment"] == row["treatment"]
        w = [1.0 / (v + row["tau2"]) for v in acc.loc[rows, "variance"]]
        want = [100 * x / sum(w) for x in w]
        np.testing.assert_allclose(table.loc[rows.to_numpy(), "weight"], want, rtol=1e-13)
    assert table["weight"].groupby(table["treatment"]).sum().round(10).eq(100).all()


def test_a_given_pooled_result_is_drawn_without_fitting_again(acc, monkeypatch):
    pooled = metaeval.pool(acc, method="DL")

    def refit(*args, **kwargs):
        raise AssertionError("forest_plot(pooled=...) fitted the model again")

    monkeypatch.setattr(engine, "fit", refit)
    for fig in (forest_plot(acc, pooled=pooled), forest(acc, pooled)):
        assert len(_drawn(fig)) == len(TREATMENTS)


def test_a_pooled_table_without_tau2_or_a_panel_is_refused(acc):
    pooled = metaeval.pool(acc)
    with pytest.raises(metaeval.SchemaError, match="no 'tau2' column"):
        forest(acc, pooled.drop(columns="tau2"))
    with pytest.raises(metaeval.SchemaError, match="no row for .*random_forest"):
        forest(acc, pooled[pooled["treatment"] != "random_forest"])


def test_left_out_rows_and_single_tasks(acc):
    """A row with a NaN variance weighs NaN (left out of pooling); a treatment with one
    usable task weighs 100% — as metaeval.weights() gives them."""
    eff = acc.copy()
    eff.loc[eff.index[0], "variance"] = np.nan
    eff = eff[(eff["treatment"] != "knn") | (eff["task"].isin(["breast_cancer", "iris"]))]
    with warnings.catch_warnings(record=True) as caught:  # the NaN row; knn's single task
        warnings.simplefilter("always")
        pooled = metaeval.pool(eff, method="REML")
        want = metaeval.weights(eff, method="REML")["weight"].to_numpy()
    assert {w.category for w in caught} == {metaeval.DegenerateWarning, metaeval.PairingWarning}
    from metaeval.plot.forest import _weighted

    got = _weighted(eff, pooled)["weight"].to_numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert np.isnan(got[0]) and 100.0 in got


@pytest.mark.parametrize("by", ["domain", "mapping"])
def test_subgroups_draw_each_subgroups_weights(acc, by):
    """With ``by=``, the weights are those within each subgroup's own fit."""
    domain = {"breast_cancer": "medical", "digits": "vision", "iris": "botany", "wine": "food"}
    domain = {t: ("small" if t in ("iris", "wine") else "large") for t in domain}
    eff = acc.assign(domain=acc["task"].map(domain))
    option = "domain" if by == "domain" else domain
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metaeval.MetaEvalWarning)  # two tasks a subgroup
        want = metaeval.weights(eff, by=option)
        fig = forest_plot(eff, by=option)
    drawn = _drawn(fig)
    assert len(drawn) == len(TREATMENTS)
    for d, (_, w) in zip(drawn, want.groupby("treatment", sort=False)["weight"], strict=True):
        assert sorted(d.round(12)) == sorted((w / w.max()).round(12))


@pytest.mark.parametrize("by", ["domain", "mapping"])
def test_the_figure_draws_given_subgroups_without_fitting(acc, by, monkeypatch):
    """plot.forest only draws (issue 40): given the subgroups' weights and fits, it draws
    the figure forest_plot(by=) draws, and never fits; without a weight column it weighs
    each subgroup by its own τ̂²."""
    size = {"breast_cancer": "large", "digits": "large", "iris": "small", "wine": "small"}
    eff = acc.assign(domain=acc["task"].map(size))
    option = "domain" if by == "domain" else size
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metaeval.MetaEvalWarning)  # two tasks a subgroup
        want = forest_plot(eff, by=option)
        weighted = metaeval.weights(eff, by=option)
        subgroups = metaeval.pool(eff, by=option)
        pooled = metaeval.pool(eff)

    def refit(*args, **kwargs):
        raise AssertionError("plot.forest fitted a model")

    monkeypatch.setattr(engine, "fit", refit)
    unweighted = weighted.drop(columns="weight")
    for table in (weighted, unweighted):
        got = forest(table, pooled, subgroups=subgroups)
        assert [t.get_text() for t in got.texts] == [t.get_text() for t in want.texts]
        for d, e in zip(_drawn(got), _drawn(want), strict=True):
            np.testing.assert_allclose(d, e, rtol=0, atol=1e-12)

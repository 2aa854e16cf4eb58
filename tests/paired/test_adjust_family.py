"""compare(adjust=..., family=...): the family of a multiplicity adjustment (issue 39,
item 18). With one treatment against one control the default family (the pairs of one task
and metric) holds one test, so an adjustment changes nothing: compare() says so, and
``family`` adjusts over the tasks of a metric, the metrics of a task, or every test.
Reference: statsmodels' ``multipletests`` on the same p-values, family by family."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

import metaeval
from metaeval import DegenerateWarning, OptionError

CONTROL = "logistic_regression"
FAMILY_COLUMNS = {"pairs": ["metric", "task"], "tasks": ["metric"], "metrics": ["task"], "all": []}


@pytest.fixture(scope="module")
def scores() -> pd.DataFrame:
    return metaeval.load_example()


def _statsmodels(table: pd.DataFrame, family: str, method: str) -> np.ndarray:
    """``multipletests`` of ``table``'s p-values within each family, in the table's order."""
    out = np.full(len(table), np.nan)
    keys = FAMILY_COLUMNS[family]
    groups = table.groupby(keys, sort=False).indices if keys else {(): np.arange(len(table))}
    for rows in groups.values():  # a reference: a plain loop over the families
        p = table["p_value"].to_numpy()[rows]
        ok = np.isfinite(p)
        out[rows[ok]] = multipletests(p[ok], method=method)[1]
    return out


@pytest.mark.parametrize("family", ["tasks", "metrics", "all"])
@pytest.mark.parametrize("method", ["holm", "bonferroni", "fdr_bh"])
@pytest.mark.parametrize("treatment", ["knn", ["knn", "naive_bayes", "random_forest"]])
def test_the_family_spans_tasks_metrics_or_everything_as_multipletests(
    scores, family, method, treatment
):
    res = metaeval.compare(scores, CONTROL, treatment=treatment, adjust=method, family=family)
    np.testing.assert_allclose(res["p_adjusted"], _statsmodels(res, family, method), rtol=1e-12)
    plain = metaeval.compare(scores, CONTROL, treatment=treatment)
    pd.testing.assert_series_equal(res["p_value"], plain["p_value"])
    assert res.attrs["family"] == family and res.attrs["adjust"] == method
    n_fam = res.groupby(FAMILY_COLUMNS[family]).ngroups if FAMILY_COLUMNS[family] else 1
    assert n_fam < len(res)  # a real family: adjusting changed something
    assert (res["p_adjusted"] >= res["p_value"] - 1e-15).all()


def test_one_test_per_family_is_said_and_the_default_family_is_the_pairs(scores):
    with pytest.warns(DegenerateWarning, match=r"family='tasks'.*--family") as record:
        res = metaeval.compare(scores, CONTROL, treatment="knn", adjust="holm")
    assert len(record) == 1 and "one test" in str(record[0].message)
    np.testing.assert_array_equal(res["p_adjusted"], res["p_value"])  # Holm did nothing
    assert res.attrs["family"] == "pairs"
    # several treatments: the pairs of a task and metric are a family, nothing to say
    many = metaeval.compare(scores, CONTROL, treatment=["knn", "naive_bayes"], adjust="holm")
    np.testing.assert_allclose(many["p_adjusted"], _statsmodels(many, "pairs", "holm"))


def test_family_options_are_checked(scores):
    with pytest.raises(OptionError, match="`family`.*'task'"):
        metaeval.compare(scores, CONTROL, adjust="holm", family="task")
    with pytest.raises(OptionError, match="`family`.*adjust"):
        metaeval.compare(scores, CONTROL, family="tasks")
    with pytest.raises(OptionError, match="maxt.*family"):
        metaeval.compare(
            scores,
            CONTROL,
            test="randomization",
            adjust="maxt",
            family="tasks",
            n_resamples=50,
            seed=1,
        )


def test_a_lazy_table_adjusts_over_the_tasks_it_computed_one_at_a_time(scores):
    pl = pytest.importorskip("polars")
    lazy = pl.from_pandas(
        scores.astype({"task": str, "system": str, "metric": str, "query": str})
    ).lazy()
    kw = dict(treatment="knn", test="wilcoxon", adjust="holm", family="tasks")
    got = metaeval.compare(lazy, CONTROL, **kw)
    want = metaeval.compare(scores.astype({"query": str}), CONTROL, **kw)
    np.testing.assert_allclose(got["p_adjusted"], want["p_adjusted"], rtol=1e-12)
    np.testing.assert_allclose(got["p_adjusted"], _statsmodels(got, "tasks", "holm"))
    assert got.attrs["family"] == "tasks"


def test_a_dask_table_adjusts_over_the_tasks_of_its_partitions(scores):
    dd = pytest.importorskip("dask.dataframe")
    frame = scores.astype({"query": str})
    kw = dict(treatment=["knn", "naive_bayes"], adjust="bonferroni", family="all")
    got = dd.from_pandas(frame, npartitions=3).meta.compare(CONTROL, **kw)
    want = metaeval.compare(frame, CONTROL, **kw)
    key = ["metric", "treatment", "control", "task"]
    got = got.sort_values(key).reset_index(drop=True)
    want = want.sort_values(key).reset_index(drop=True)
    np.testing.assert_allclose(got["p_adjusted"], want["p_adjusted"], rtol=1e-12)
    np.testing.assert_allclose(got["p_adjusted"], _statsmodels(got, "all", "bonferroni"))
    assert got.attrs["family"] == "all"

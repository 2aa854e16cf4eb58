"""BayesResult: the probabilities and the draws of a Bayesian signed-rank test as one
object (issue 26, item 1)."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import OptionError, SchemaError
from metaeval.ranking import BayesResult, bayes_signed_rank

KEY = ["metric", "treatment", "control"]
PROBS = ["prob_worse", "prob_equivalent", "prob_better"]


@pytest.fixture(scope="module")
def result() -> BayesResult:
    auc = metaeval.datasets.load_demsar()
    return bayes_signed_rank(auc, control="C4.5", seed=1, n_draws=1500, samples=True)


def test_the_result_and_its_draws_by_key(result):
    assert isinstance(result, BayesResult) and result.kind == "bayes"
    assert list(result.table.columns) == [*KEY, *PROBS, "decision", "mean_diff", "n_tasks"]
    keys = list(result.table[KEY].itertuples(index=False, name=None))
    assert sorted(result.samples) == sorted(keys) and len(keys) == 3
    for (_, row), key in zip(result.table.iterrows(), keys, strict=True):
        draws = result.samples[key]
        assert draws.shape == (1500, 3)
        np.testing.assert_allclose(draws.sum(axis=1), 1.0, atol=1e-12)
        # each row's probabilities are the shares of its draws' most probable outcome
        share = np.bincount(draws.argmax(axis=1), minlength=3) / len(draws)
        np.testing.assert_array_equal(share, row[PROBS].to_numpy(float))


def test_without_samples_it_is_a_result_without_draws(result):
    auc = metaeval.datasets.load_demsar()
    bare = bayes_signed_rank(auc, control="C4.5", seed=1, n_draws=1500)
    assert isinstance(bare, BayesResult) and bare.samples is None
    pd.testing.assert_frame_equal(bare.table, result.table)
    with pytest.raises(OptionError, match=r"samples=True"):
        bare.plot()


def test_table_attrs_hold_options_only(result):
    attrs = result.table.attrs
    assert set(attrs) == {"rope", "prior", "n_draws", "seed", "threshold", "higher_is_better"}
    for value in attrs.values():
        assert not isinstance(value, pd.DataFrame | pd.Series | np.ndarray)


def test_tables_concatenate(result):
    both = pd.concat([result.table, result.table], ignore_index=True)
    assert len(both) == 6 and both.attrs == result.table.attrs
    # one result holds one row per key: its draws are one per key
    with pytest.raises(SchemaError, match="repeat"):
        result.replace(table=both)


def test_pickle_keeps_every_part(result):
    back = pickle.loads(pickle.dumps(result))
    assert type(back) is BayesResult
    pd.testing.assert_frame_equal(back.table, result.table)
    assert back.table.attrs == result.table.attrs
    assert back.samples.keys() == result.samples.keys()
    for key, draws in result.samples.items():
        np.testing.assert_array_equal(back.samples[key], draws)


def test_a_filtered_table_keeps_its_draws(result):
    """Filtering the table and replacing it keeps both in step: the draws follow by key."""
    better = result.replace(table=result.table[result.table["decision"] == "better"])
    assert better.table["treatment"].tolist() == ["C4.5+m+cf"]
    np.testing.assert_array_equal(better.draws(0), result.draws(2))
    with pytest.raises(SchemaError, match=r"No draws for 3 row\(s\).*'C4.5\+m', 'other'"):
        result.replace(table=result.table.assign(control="other"))
    with pytest.raises(SchemaError, match=r"lacks \['metric'\]"):
        result.replace(table=result.table.drop(columns="metric"))


def test_plot_draws_every_sample_from_the_object(result):
    fig = result.plot(row=1)
    (scatter,) = [c for c in fig.axes[0].collections if c.get_gid() == "simplex-draws"]
    assert len(scatter.get_offsets()) == 1500


def test_repr_shows_the_table(result):
    assert repr(result).startswith("BayesResult(samples)\n")
    assert "<table" in result._repr_html_()


def test_to_latex(result):
    tex = result.to_latex()
    assert r"\caption{BayesResult}" in tex and "prob\\_better" in tex
    assert tex.count(r"\\") == len(result.table) + 1  # the header and one line per row

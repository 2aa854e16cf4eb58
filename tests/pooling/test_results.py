"""MetaRegResult: the parts of a meta-regression as one object (issue 26, item 1)."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import MetaRegResult, OptionError
from metaeval.report import escape_latex


def _effects() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    parts = []
    for metric, slope in (("AP", 0.08), ("nDCG", -0.05)):
        x = rng.uniform(3, 7, size=10)
        v = rng.uniform(0.002, 0.03, size=10)
        parts.append(
            pd.DataFrame(
                {
                    "metric": metric,
                    "treatment": "new",
                    "control": "bm25",
                    "task": [f"t{i}" for i in range(10)],
                    "log_n": x,
                    "variance": v,
                    "effect": slope * x + rng.normal(0, np.sqrt(v)),
                    "domain": np.tile(["web", "bio"], 5),
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="module")
def result() -> MetaRegResult:
    return metaeval.metareg(_effects(), ["log_n", "domain"])


def test_metareg_returns_the_result_with_its_parts(result):
    assert isinstance(result, MetaRegResult) and result.kind == "metareg"
    assert metaeval.pooling.MetaRegResult is MetaRegResult
    assert len(result.table) == 2 * 3 and len(result.fit) == 2 and len(result.data) == 20
    assert len(result.vcov) == 2 * 3 * 3
    assert result.mods == ("log_n", "domain") and result.alpha == 0.05
    assert result.group_keys == ["metric", "treatment", "control"]


def test_table_attrs_hold_options_only(result):
    attrs = result.table.attrs
    assert attrs == {
        "method": "REML",
        "test": "knha",
        "alpha": 0.05,
        "mods": ["log_n", "domain"],
        "robust": False,
        "cluster": None,
    }
    for value in attrs.values():
        assert not isinstance(value, pd.DataFrame | pd.Series | np.ndarray)


def test_tables_concatenate(result):
    both = pd.concat([result.table, result.table], ignore_index=True)
    assert len(both) == 2 * len(result.table)
    pd.testing.assert_frame_equal(both.iloc[: len(result.table)], result.table)


def test_pickle_keeps_every_part(result):
    back = pickle.loads(pickle.dumps(result))
    assert type(back) is MetaRegResult
    for name in ("table", "fit", "data", "vcov"):
        pd.testing.assert_frame_equal(getattr(back, name), getattr(result, name))
    assert back.table.attrs == result.table.attrs
    assert (back.mods, back.alpha) == (result.mods, result.alpha)


def test_select_keeps_the_parts_in_step(result):
    ap = result.select(metric="AP")
    for part in (ap.table, ap.fit, ap.data, ap.vcov):
        assert set(part["metric"]) == {"AP"}
    pd.testing.assert_frame_equal(
        ap.table, result.table[result.table["metric"] == "AP"].reset_index(drop=True)
    )
    assert len(ap.data) == 10 and ap.mods == result.mods
    with pytest.raises(OptionError, match=r"group keys.*'task'"):
        result.select(task="t1")
    with pytest.raises(OptionError, match=r"metric='MRR'.*'AP', 'nDCG'"):
        result.select(metric="MRR")


def test_plot_draws_one_group_from_the_object(result):
    ax = result.select(metric="nDCG").plot("log_n").axes[0]
    (points,) = [c for c in ax.collections if c.get_gid() == "bubble-points"]
    data = result.select(metric="nDCG").data
    np.testing.assert_array_equal(points.get_offsets(), data[["log_n", "effect"]].to_numpy())
    with pytest.raises(OptionError, match="holds 2"):
        result.plot("log_n")


def test_repr_shows_the_table(result):
    assert repr(result).startswith("MetaRegResult(fit, data, vcov, mods, alpha)\n")
    assert "<table" in result._repr_html_()


def test_to_latex(result):
    """The coefficient table as a booktabs table: one line per term, p-values by the rule."""
    tex = result.to_latex()
    assert r"\caption{MetaRegResult}" in tex and "p\\_value" in tex
    assert tex.count(r"\\") == len(result.table) + 1  # the header and one line per row
    for term in result.table["term"]:  # domain[T.web]: brackets braced, as escape_latex does
        assert escape_latex(str(term)) in tex

"""Property-based fuzzing of Friedman's test and Nemenyi's post-hoc test over many systems.

Random scores tables — one or two metrics, three to six systems of which some
are exact copies of another (the same per-query scores, their rows elsewhere in
the table), scores on a coarse grid (ties within tasks) or continuous, one to
four queries per task — with the rows in a random order. Checks:

- :func:`metaeval.ranking.friedman`: χ² and p equal
  :func:`scipy.stats.friedmanchisquare` on a (task × system) pivot of per-task
  means built here exactly (``fractions.Fraction``, rounded once), so that copies
  tie exactly, and with the documented tie rule applied (means of a task closer
  than 4 (log₂ n + 17) ε times the task's largest absolute score are one value, the
  run's smallest; see ``metaeval.ranking._tables.settle_ties``), written here as a
  plain loop; a table whose every task ties all systems gives NaN with a
  :class:`metaeval.DegenerateWarning`;
- :func:`metaeval.ranking.posthoc` (Nemenyi): the adjusted p-values equal
  scikit-posthocs' ``posthoc_nemenyi_friedman`` on the same pivot, and copies
  have equal average ranks;
- shuffling the rows changes nothing: the tables are exactly equal once their
  rows are put in one order and every pair is written with its systems in order
  of name.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from metaeval import DegenerateWarning
from metaeval.ranking import friedman, posthoc

sp = pytest.importorskip("scikit_posthocs")

pytestmark = pytest.mark.fuzz

GRID = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])
VALUE = st.one_of(GRID, st.floats(0.0, 1.0, allow_nan=False, allow_subnormal=False))


@st.composite
def tables(draw: Any) -> tuple[pd.DataFrame, list[int]]:
    """A scores table with ties and copied systems, and a permutation of its rows."""
    k = draw(st.integers(3, 6))
    n_tasks = draw(st.integers(2, 8))
    # system j has scores of its own (source[j] = j) or copies those of an earlier system
    source: list[int] = []
    for j in range(k):
        pick = draw(st.sampled_from([j, *range(j)]))
        source.append(j if pick == j else source[pick])
    rows = []
    for metric in [f"m{i}" for i in range(draw(st.integers(1, 2)))]:
        for t in range(n_tasks):
            n_queries = draw(st.integers(1, 4))
            own: dict[int, list[float]] = {}
            for j in range(k):
                if source[j] == j:
                    own[j] = draw(st.lists(VALUE, min_size=n_queries, max_size=n_queries))
                vals = own[source[j]]
                rows += [(f"t{t}", f"q{q}", f"s{j}", metric, vals[q]) for q in range(n_queries)]
    table = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])
    perm = draw(st.permutations(range(len(table))))
    return table.iloc[list(perm)].reset_index(drop=True), list(perm)


def pivot(scores: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per-task means (task × system): exact means rounded once to a float, then the means
    of a task within the documented tolerance of their sorted neighbour made equal."""
    part = scores[scores["metric"] == metric]
    exact = part.groupby(["task", "system"])["value"].agg(
        lambda v: float(sum(map(Fraction, v)) / len(v))
    )
    wide = exact.unstack()
    for task in wide.index:
        rows = part[part["task"] == task]
        n = rows.groupby("system").size().max()
        tol = 4 * (math.log2(n) + 17) * np.finfo(float).eps * rows["value"].abs().max()
        order = wide.loc[task].sort_values(kind="stable")
        first = order.iloc[0]
        for i, (system, value) in enumerate(order.items()):
            if i and value - order.iloc[i - 1] > tol:
                first = value
            wide.loc[task, system] = first
    return wide


def canonical_pairs(table: pd.DataFrame) -> pd.DataFrame:
    """Every pair with its systems in order of name, the rows sorted."""
    swap = (table["system_a"] > table["system_b"]).to_numpy()
    out = table.copy()
    for a, b in (("system_a", "system_b"), ("rank_a", "rank_b")):
        out.loc[swap, [a, b]] = table.loc[swap, [b, a]].to_numpy()
    for col in ("rank_diff", "statistic"):
        out.loc[swap, col] = -table.loc[swap, col]
    return out.sort_values(["metric", "system_a", "system_b"]).reset_index(drop=True)


def run(scores: pd.DataFrame, flat: bool) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Friedman's table, its ranks and the Nemenyi table."""
    if flat:
        with pytest.warns(DegenerateWarning):
            test = friedman(scores)
    else:
        test = friedman(scores)
    return test.table, test.ranks, posthoc(scores, test="nemenyi").table


@given(tables())
def test_friedman_and_nemenyi_against_scipy_and_scikit_posthocs(drawn):
    scores, perm = drawn
    metrics = list(pd.unique(scores["metric"]))
    wides = {m: pivot(scores, m) for m in metrics}
    flat = any((w.nunique(axis=1) == 1).all() for w in wides.values())
    test, ranks_of, res = run(scores, flat)
    test = test.set_index("metric")
    for m, wide in wides.items():
        row = test.loc[m]
        if (wide.nunique(axis=1) == 1).all():  # every task ties all systems
            assert np.isnan(row["chi2"]) and np.isnan(row["p_value"])
            continue
        ref = stats.friedmanchisquare(*wide.to_numpy().T)
        assert row["chi2"] == pytest.approx(ref.statistic, rel=1e-12, abs=1e-12)
        assert row["p_value"] == pytest.approx(ref.pvalue, rel=1e-10, abs=1e-14)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scikit-posthocs' own warnings
            nem = sp.posthoc_nemenyi_friedman(wide.to_numpy())
        nem.index = nem.columns = wide.columns
        part = res[res["metric"] == m]
        expected = [nem.loc[a, b] for a, b in zip(part["system_a"], part["system_b"], strict=True)]
        np.testing.assert_allclose(part["p_adjusted"], expected, rtol=0, atol=1e-10)
        # copies tie: equal per-task means give equal average ranks
        same = wide.T.duplicated(keep=False)
        ranks = ranks_of.query("metric == @m").set_index("system")["mean_rank"]
        for _, group in wide.T[same].groupby(list(wide.index)):
            assert ranks[group.index].nunique() == 1

    # the rows in their first order (the drawn table is a permutation of it)
    original = scores.iloc[np.argsort(perm)].reset_index(drop=True)
    test2, ranks2, res2 = run(original, flat)
    pd.testing.assert_frame_equal(test2.set_index("metric").loc[test.index], test, check_exact=True)
    rank_cols = ["metric", "system"]
    pd.testing.assert_frame_equal(
        ranks2.sort_values(rank_cols).reset_index(drop=True),
        ranks_of.sort_values(rank_cols).reset_index(drop=True),
        check_exact=True,
    )
    pd.testing.assert_frame_equal(canonical_pairs(res2), canonical_pairs(res), check_exact=True)

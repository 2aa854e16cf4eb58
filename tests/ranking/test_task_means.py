"""The per-task means every ranking starts from: equal means compare equal (issue 39, item 25).

Two systems whose per-query scores have the same mean (0.7 and 0.1 against 0.4 and 0.4)
get float means that differ in the last bit (0.39999999999999997 and 0.4), whatever the
order of the sum. Every ranking of means (Friedman, the post-hoc tests, the leaderboards,
the rank intervals) must see them tied. The references rank the means computed exactly
(``fractions.Fraction`` of the decimal scores, then rounded once to a float): scipy's
``friedmanchisquare`` and ``rankdata``, scikit-posthocs, autorank.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import scipy.stats as ss

from metaeval import leaderboard, rank_intervals
from metaeval.ranking import friedman, posthoc

sp = pytest.importorskip("scikit_posthocs")

# per task: system -> its per-query scores, as decimals; A and B tie on t1, t4 and t5
# (on t4 the float sums agree too)
DATA = {
    "t1": {"A": ["0.7", "0.1"], "B": ["0.4", "0.4"], "C": ["0.2", "0.3"]},
    "t2": {"A": ["0.6", "0.6"], "B": ["0.5", "0.5"], "C": ["0.4", "0.4"]},
    "t3": {"A": ["0.3", "0.3"], "B": ["0.5", "0.5"], "C": ["0.4", "0.4"]},
    "t4": {"A": ["0.9", "0.3"], "B": ["0.6", "0.6"], "C": ["0.2", "0.2"]},
    "t5": {"A": ["0.3", "0.6"], "B": ["0.45", "0.45"], "C": ["0.1", "0.1"]},
}
SYSTEMS = ["A", "B", "C"]


def scores_of(data: dict) -> pd.DataFrame:
    rows = [
        (t, f"q{i}", s, "acc", float(v))
        for t, per in data.items()
        for s, vals in per.items()
        for i, v in enumerate(vals)
    ]
    return pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])


def exact_means(data: dict) -> pd.DataFrame:
    """(task x system) means computed exactly, then rounded once to the nearest float."""
    return pd.DataFrame(
        {
            s: [float(sum(map(Fraction, data[t][s])) / len(data[t][s])) for t in data]
            for s in SYSTEMS
        },
        index=list(data),
    )


def test_the_data_ties_only_in_exact_arithmetic():
    # the premise: summed in floats, the tied means differ (in either order of the sum)
    assert 0.7 + 0.1 != 0.4 + 0.4 and 0.1 + 0.7 != 0.4 + 0.4
    assert 0.3 + 0.6 != 0.45 + 0.45 and 0.6 + 0.3 != 0.45 + 0.45
    exact = exact_means(DATA)
    assert (exact["A"] == exact["B"]).loc[["t1", "t4", "t5"]].all()


@pytest.mark.parametrize("correction", [True, False])
def test_friedman_ranks_exactly_rounded_means(correction):
    exact = exact_means(DATA)
    table = friedman(scores_of(DATA), correction=correction).table.iloc[0]
    if correction:
        ref = ss.friedmanchisquare(*(exact[s] for s in SYSTEMS))
        assert table["chi2"] == pytest.approx(ref.statistic, rel=1e-12)  # 4.0 (4.133 before)
        assert table["p_value"] == pytest.approx(ref.pvalue, rel=1e-12)
    ranks = exact.rank(axis=1, ascending=False).mean()
    got = friedman(scores_of(DATA)).ranks.set_index("system")["mean_rank"]
    np.testing.assert_allclose(got.reindex(SYSTEMS), ranks.reindex(SYSTEMS), rtol=1e-12)


def test_posthoc_tests_follow_the_exact_ties():
    exact = exact_means(DATA)
    nemenyi = posthoc(scores_of(DATA), test="nemenyi").table
    ref = sp.posthoc_nemenyi_friedman(exact.to_numpy())
    ref.index = ref.columns = SYSTEMS
    for row in nemenyi.itertuples():
        assert row.p_adjusted == pytest.approx(ref.loc[row.system_a, row.system_b], rel=1e-6)
    # Wilcoxon: the tied tasks are zero differences (dropped), not ±1e-16
    wil = posthoc(scores_of(DATA), test="wilcoxon_holm").table.set_index(["system_a", "system_b"])
    for a, b in wil.index:
        d = (exact[a] - exact[b]).to_numpy()
        assert wil.loc[(a, b), "p_value"] == pytest.approx(
            ss.wilcoxon(d, zero_method="wilcox").pvalue, rel=1e-12
        )


def test_autorank_agrees_on_the_mean_ranks():
    autorank = pytest.importorskip("autorank")
    exact = exact_means(DATA)
    ref = autorank.autorank(exact, alpha=0.05, verbose=False, force_mode="nonparametric")
    got = friedman(scores_of(DATA)).ranks.set_index("system")["mean_rank"]
    np.testing.assert_allclose(
        got.reindex(SYSTEMS), ref.rankdf["meanrank"].reindex(SYSTEMS), rtol=1e-12
    )


@pytest.mark.parametrize("method", ["borda", "mean_rank", "copeland"])
def test_leaderboards_rank_exactly_rounded_means(method):
    exact = exact_means(DATA)
    ranks = ss.rankdata(-exact.to_numpy(), axis=1)  # 1 = best, ties averaged
    want = {
        "borda": (3 - ranks).sum(axis=0),
        "mean_rank": ranks.mean(axis=0),
        "copeland": np.sign(
            (ranks[:, :, None] < ranks[:, None, :]).sum(0)
            - (ranks[:, None, :] < ranks[:, :, None]).sum(0)
        ).sum(axis=1),
    }[method]
    board = leaderboard(scores_of(DATA), aggregation=method).set_index("system")
    np.testing.assert_allclose(board["score"].reindex(SYSTEMS), want, rtol=1e-12)


def binary_tie() -> pd.DataFrame:
    """0/1 scores on 10 queries: A gets 1 and 7 right, B 4 and 4, C 2 and 2. The task means
    are exact (k/10), their means over the tasks (0.1 + 0.7)/2 and (0.4 + 0.4)/2 are not."""
    right = {"A": (1, 7), "B": (4, 4), "C": (2, 2)}
    rows = [
        (t, f"q{q}", s, "acc", float(q < right[s][i]))
        for i, t in enumerate(["t1", "t2"])
        for s in right
        for q in range(10)
    ]
    return pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])


def test_rank_intervals_tie_equal_means_over_tasks():
    assert (0.1 + 0.7) / 2 != (0.4 + 0.4) / 2
    table = rank_intervals(binary_tie(), n_resamples=200, seed=0).set_index("system")
    assert table.loc["A", "rank"] == table.loc["B", "rank"] == 1
    assert table.loc["A", "score"] == table.loc["B", "score"]
    assert table.loc["A", "tie_group"] == table.loc["B", "tie_group"]


def copies(rng: np.random.Generator, n_queries: int, n_systems: int) -> pd.DataFrame:
    """S0 and S1 score alike on every query; the others at random."""
    base = rng.uniform(size=(5, n_queries))
    rows = [
        (t, q, f"S{s}", "acc", base[t, q] if s < 2 else rng.uniform())
        for t in range(5)
        for q in range(n_queries)
        for s in range(n_systems)
    ]
    return pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])


@pytest.mark.parametrize("by", ["mean", "borda"])
@pytest.mark.parametrize("simultaneous", [False, True])
def test_rank_intervals_do_not_depend_on_the_row_order(rng, by, simultaneous):
    scores = copies(rng, 50, 9)
    first = None
    for i in range(6):
        shuffled = scores.sample(frac=1, random_state=i)
        table = rank_intervals(
            shuffled, aggregation=by, simultaneous=simultaneous, n_resamples=200, seed=1
        ).sort_values("system", ignore_index=True)
        table.attrs = {}
        if first is None:
            first = table
            pair = table.set_index("system").loc[["S0", "S1"]]
            # the copies tie in the data and in every resample
            assert pair["rank"].nunique() == pair["rank_low"].nunique() == 1
            assert pair["rank_high"].nunique() == pair["prob_best"].nunique() == 1
        pd.testing.assert_frame_equal(table, first)


def test_friedman_of_the_issue_example():
    """The issue's example: A and B both average 0.52 on t1 (A's five scores in exact
    arithmetic; in floats 0.52 or 0.5199999999999999 by the order of the sum), then A > B >
    C on t2 and C > B > A on t3. Friedman's χ² (tie-corrected, as scipy) is 6/11 = 0.545
    on the correctly rounded means; breaking the tie gives 2/3."""
    data = {
        "t1": {"A": ["0.88", "0.82", "0.23", "0.48", "0.19"], "B": ["0.52"] * 5, "C": ["0.2"] * 5},
        "t2": {"A": ["0.9"] * 5, "B": ["0.5"] * 5, "C": ["0.1"] * 5},
        "t3": {"A": ["0.1"] * 5, "B": ["0.5"] * 5, "C": ["0.9"] * 5},
    }
    a = [0.88, 0.82, 0.23, 0.48, 0.19]
    assert sum(sorted(a)) / 5 == 0.52 != sum(sorted(a, reverse=True)) / 5
    assert np.add.reduceat(np.sort(a), [0])[0] / 5 != 0.52  # numpy's sum in increasing order
    exact = exact_means(data)
    ref = ss.friedmanchisquare(*(exact[s] for s in SYSTEMS))
    assert ref.statistic == pytest.approx(6 / 11, rel=1e-12)
    got = friedman(scores_of(data)).table.iloc[0]
    assert got["chi2"] == pytest.approx(ref.statistic, rel=1e-12)  # 0.667 before
    assert got["p_value"] == pytest.approx(ref.pvalue, rel=1e-12)

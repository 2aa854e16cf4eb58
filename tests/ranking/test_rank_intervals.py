"""metaeval.ranking.rank_intervals: rank intervals and tie groups from a paired bootstrap."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from _helpers import make_scores

import metaeval
from metaeval.errors import OptionError, PairingError
from metaeval.ranking import leaderboard, rank_intervals

SYSTEMS = np.array(list("ABCDEF"))


def simulate(seed: int, *, n_boards: int, step: float, task_sd: float, query_sd: float,
             n_tasks: int, n_queries: int) -> tuple[pd.DataFrame, pd.Series]:  # fmt: skip
    """``n_boards`` leaderboards (one metric each) of 6 systems with true means
    ``step * (0..5)``: value = μ_s + a_t + b_ts + e_tqs, a task effect a_t ~ N(0, 1), a
    task × system interaction b_ts ~ N(0, task_sd²) and query noise e ~ N(0, query_sd²).
    The true rank of F is 1, of A 6 (the rank of μ_s; the estimand of the mean over tasks)."""
    rng = np.random.default_rng(seed)
    n_sys = len(SYSTEMS)
    mu = step * np.arange(n_sys)
    shape = (n_boards, n_tasks, n_queries, n_sys)
    b, t, q, s = np.meshgrid(*map(np.arange, shape), indexing="ij")
    value = (
        mu
        + rng.normal(size=(n_boards, n_tasks, 1, 1))
        + task_sd * rng.normal(size=(n_boards, n_tasks, 1, n_sys))
        + query_sd * rng.normal(size=shape)
    )
    frame = pd.DataFrame(
        {
            "task": t.ravel(), "query": q.ravel(), "system": SYSTEMS[s.ravel()],
            "metric": b.ravel().astype(str), "value": value.ravel(),
        }
    )  # fmt: skip
    return frame, pd.Series(n_sys - np.arange(n_sys), index=SYSTEMS)


# Task × system interaction larger than the query noise of a task mean: resampling the
# queries alone (every task kept once) covers every true rank in only 84% (simultaneous)
# and each rank in 92% (marginal) of these leaderboards (measured when this test was
# written), so these checks fail for a bootstrap that ignores the tasks.
SIM = dict(n_boards=150, step=0.2, task_sd=0.4, query_sd=0.3, n_tasks=12, n_queries=10)


@pytest.fixture(scope="module")
def simulated() -> tuple[pd.DataFrame, pd.Series]:
    return simulate(7, **SIM)


def coverage(table: pd.DataFrame, true: pd.Series) -> pd.Series:
    rank = table["system"].map(true)
    return (table["rank_low"] <= rank) & (rank <= table["rank_high"])


def test_simultaneous_cover_every_true_rank(simulated):
    scores, true = simulated
    table = rank_intervals(scores, n_resamples=200, seed=1)
    covered = coverage(table, true).groupby(table["metric"]).all()
    assert len(covered) == 150
    # measured: 1.0 (150 of 150); the two-stage bootstrap is conservative
    assert covered.mean() >= 0.90
    width = (table["rank_high"] - table["rank_low"] + 1).mean()
    assert width < 4.0  # measured 3.47 ranks of 6 (2.57 marginal): informative
    assert (table["rank_low"] <= table["rank"]).all() and (
        table["rank"] <= table["rank_high"]
    ).all()


def test_marginal_cover_each_true_rank(simulated):
    scores, true = simulated
    table = rank_intervals(scores, n_resamples=200, seed=1, simultaneous=False)
    assert coverage(table, true).mean() >= 0.95  # measured 0.998
    simultaneous = rank_intervals(scores, n_resamples=200, seed=1)
    # the same resamples: the family-wise intervals are wider on average
    assert (table["rank_high"] - table["rank_low"]).mean() < (
        simultaneous["rank_high"] - simultaneous["rank_low"]
    ).mean()


def shifted(rng: np.random.Generator) -> pd.DataFrame:
    """B = A + 0.05 and C = A + 0.1 on every query: paired, their order never changes."""
    base = pd.DataFrame(
        [(t, q, "A", "acc", rng.uniform()) for t in range(3) for q in range(5)],
        columns=["task", "query", "system", "metric", "value"],
    )
    return pd.concat(
        [base, base.assign(system="B", value=base["value"] + 0.05),
         base.assign(system="C", value=base["value"] + 0.1)],
        ignore_index=True,
    )  # fmt: skip


@pytest.mark.parametrize("by", ["mean", "borda"])
def test_paired_resampling_keeps_a_constant_shift(rng, by):
    scores = shifted(rng)
    for simultaneous in (True, False):
        table = rank_intervals(scores, by=by, n_resamples=300, seed=3, simultaneous=simultaneous)
        assert table["system"].tolist() == ["C", "B", "A"]
        # every resample ranks C, B, A: degenerate intervals, C always first
        assert table["rank_low"].tolist() == [1, 2, 3]
        assert table["rank_high"].tolist() == [1, 2, 3]
        assert table["tie_group"].tolist() == [1, 2, 3]
        assert table["prob_best"].tolist() == [1.0, 0.0, 0.0]


# Two systems, two tasks of two queries; differences A − B per query:
DIFF = {"t1": [Fraction(4, 10), Fraction(-3, 10)], "t2": [Fraction(2, 10), Fraction(-1, 10)]}


def two_systems() -> pd.DataFrame:
    rows = []
    for task, diffs in DIFF.items():
        for q, d in enumerate(diffs):
            rows.append((task, f"q{q}", "B", "acc", 0.5))
            rows.append((task, f"q{q}", "A", "acc", 0.5 + float(d)))
    return pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])


def exact_prob_a_first() -> Fraction:
    """P*(mean_A ≥ mean_B) under the two-level bootstrap, by enumerating its 4 × 4² = 64
    equally likely outcomes: 2 task slots drawn from 2 tasks, 2 queries per slot."""
    tasks = list(DIFF)
    wins = total = 0
    for slots in itertools.product(tasks, repeat=2):
        per_slot = [list(itertools.product(DIFF[t], repeat=2)) for t in slots]
        for draws in itertools.product(*per_slot):
            d = sum(sum(pair) / 2 for pair in draws) / 2
            wins += d >= 0
            total += 1
    assert total == 64
    return Fraction(wins, total)


def test_an_identical_copy_ties_in_every_resample(rng):
    scores = shifted(rng)
    scores = pd.concat([scores, scores[scores["system"] == "B"].assign(system="B2")])
    table = rank_intervals(scores, n_resamples=200, seed=3, simultaneous=False)
    rows = table.set_index("system")
    # B and its copy share rank 2 (competition ranking) in the data and in every resample
    assert rows.loc["B", "rank"] == rows.loc["B2", "rank"] == 2
    assert rows.loc["B", "rank_low"] == rows.loc["B", "rank_high"] == 2
    assert rows.loc["B2", "rank_low"] == rows.loc["B2", "rank_high"] == 2
    assert rows.loc["A", "rank"] == 4 and rows.loc["B", "tie_group"] == rows.loc["B2", "tie_group"]


def test_two_systems_match_exact_enumeration():
    p = exact_prob_a_first()
    # by hand: slot means of A − B are t1 ∈ {0.4, 0.05, 0.05, −0.3}, t2 ∈ {0.2, 0.05, 0.05,
    # −0.1}; of the 16 sums of two slots, (t1, t1) has 5 negative, (t1, t2) and (t2, t1)
    # 6 each, (t2, t2) 5: 64 − 22 = 42 with A first
    assert p == Fraction(42, 64)
    n = 20_000
    table = rank_intervals(two_systems(), n_resamples=n, seed=11, simultaneous=False, alpha=0.5)
    got = dict(zip(table["system"], table["prob_best"], strict=True))
    se = np.sqrt(float(p) * (1 - float(p)) / n)
    assert abs(got["A"] - float(p)) < 4 * se
    assert abs(got["B"] - (1 - float(p))) < 4 * se
    # observed: mean difference (0.05 + 0.05) / 2 > 0, A first
    assert table["system"].tolist() == ["A", "B"]
    # A's bootstrap rank is 1 with probability 42/64 = 0.656: its 25% quantile is 1 and its
    # 75% quantile 2; B's (rank 1 with 0.344) 25% quantile is 1, 75% quantile 2
    assert table["rank_low"].tolist() == [1, 1] and table["rank_high"].tolist() == [2, 2]
    narrow = rank_intervals(two_systems(), n_resamples=n, seed=11, simultaneous=False, alpha=0.9)
    # the 45% and 55% quantiles: A's rank is 1 in 65.6% (> 55%) of resamples, B's is 2
    assert narrow["rank_low"].tolist() == [1, 2] and narrow["rank_high"].tolist() == [1, 2]


def test_by_hand_count_of_the_enumeration():
    # Slot means of A − B: t1 ∈ {0.4, 0.05, 0.05, −0.3}, t2 ∈ {0.2, 0.05, 0.05, −0.1}.
    slot = {"t1": [0.4, 0.05, 0.05, -0.3], "t2": [0.2, 0.05, 0.05, -0.1]}
    wins = sum(
        (a + b) >= -1e-12
        for s1, s2 in itertools.product(slot, repeat=2)
        for a in slot[s1]
        for b in slot[s2]
    )
    assert Fraction(wins, 64) == exact_prob_a_first()


@pytest.mark.parametrize("by", ["mean", "borda"])
def test_scores_and_ranks_agree_with_leaderboard(scores, by):
    table = rank_intervals(scores, by=by, n_resamples=50, seed=0)
    board = leaderboard(scores, method="borda")
    merged = table.merge(board, on=["metric", "system"], suffixes=("", "_board"))
    assert len(merged) == len(table) == len(board)
    if by == "borda":
        np.testing.assert_allclose(merged["score"], merged["score_board"])
        assert (merged["rank"] == merged["rank_board"]).all()
    else:
        np.testing.assert_allclose(merged["score"], merged["mean"])


def test_reproducible_with_seed(scores):
    a = rank_intervals(scores, n_resamples=100, seed=5)
    b = rank_intervals(scores, n_resamples=100, seed=5)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs["seed"] == 5
    fresh = rank_intervals(scores, n_resamples=100)
    again = rank_intervals(scores, n_resamples=100, seed=fresh.attrs["seed"])
    pd.testing.assert_frame_equal(fresh, again)


def test_several_metrics_equal_each_alone(simulated):
    scores, _ = simulated
    few = scores[scores["metric"].isin(["0", "1", "2"])].copy()
    few.loc[few["metric"] == "1", "value"] *= -1  # lower is better on metric "1"
    hib = {"0": True, "1": False, "2": True}
    for simultaneous in (True, False):
        kw = dict(n_resamples=100, seed=9, simultaneous=simultaneous)
        together = rank_intervals(few, higher_is_better=hib, **kw)
        alone = pd.concat(
            [rank_intervals(few, metric=m, higher_is_better=hib[m], **kw) for m in hib],
            ignore_index=True,
        )
        pd.testing.assert_frame_equal(together, alone)
    # metric "1" is metric "0" of another seed, negated with lower-is-better: the best
    # system is still F (true mean highest before negation)
    assert together.loc[together["metric"] == "1", "system"].iloc[0] == "F"


def test_tie_groups_follow_the_documented_rule():
    from metaeval.ranking._intervals import _tie_groups

    names = pd.Index(list("ABCDE"))
    rank = np.array([1, 2, 3, 4, 5])
    low = np.array([1, 1, 2, 4, 4])
    high = np.array([2, 3, 4, 5, 5])
    # group 1: A's [1, 2] overlaps B and C; then D's [4, 5] overlaps E
    assert _tie_groups(rank, low, high, names).tolist() == [1, 1, 1, 2, 2]


def test_accessor_and_input_unchanged(scores):
    before = scores.copy()
    via = scores.meta.rank_intervals(n_resamples=50, seed=2)
    pd.testing.assert_frame_equal(
        via, metaeval.ranking.rank_intervals(scores, n_resamples=50, seed=2)
    )
    pd.testing.assert_frame_equal(scores, before)
    assert list(via.columns) == [
        "metric", "system", "score", "rank", "rank_low", "rank_high", "tie_group",
        "prob_best", "n_tasks",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"n_resamples": 1}, "n_resamples"),
        ({"n_resamples": 2.5}, "n_resamples"),
        ({"by": "best"}, "by"),
        ({"by": "pooled"}, "control"),
        ({"control": "ctrl"}, "only with it"),
        ({"by": "pooled", "control": ["ctrl"]}, "control"),
        ({"by": "pooled", "control": "ctrl", "effect": "d"}, "effect"),
        ({"by": "pooled", "control": "ctrl", "pool_method": "reml"}, "pool_method"),
        ({"simultaneous": "yes"}, "simultaneous"),
        ({"alpha": 1.5}, "alpha"),
        ({"seed": -1}, "seed"),
        ({"metric": "nope"}, "metric"),
    ],
)
def test_bad_options(scores, kwargs, needle):
    with pytest.raises(OptionError, match=needle):
        rank_intervals(scores, **kwargs)


def test_incomplete_scores(rng):
    scores = shifted(rng)
    no_task = scores[~((scores["system"] == "B") & (scores["task"] == 1))]
    with pytest.raises(PairingError, match="every task"):
        rank_intervals(no_task, n_resamples=10, seed=0)
    no_query = scores[~((scores["system"] == "B") & (scores["task"] == 1) & (scores["query"] == 3))]
    with pytest.raises(PairingError, match="task='1', query='3', system='B'"):
        rank_intervals(no_query, n_resamples=10, seed=0)
    one = scores[scores["system"] == "A"]
    with pytest.raises(PairingError, match="at least 2 systems"):
        rank_intervals(one, n_resamples=10, seed=0)


@pytest.mark.parametrize("method", ["borda", "mean_rank"])
def test_leaderboard_gains_the_interval_columns(scores, method):
    board = leaderboard(scores, method=method, rank_intervals=True, n_resamples=60, seed=4)
    alone = rank_intervals(scores, by="borda", n_resamples=60, seed=4)
    cols = ["rank_low", "rank_high", "tie_group", "prob_best"]
    merged = board.merge(alone, on=["metric", "system"], suffixes=("", "_alone"))
    assert len(merged) == len(board)
    for col in cols:
        assert (merged[col] == merged[f"{col}_alone"]).all()
    assert (board["rank_low"] <= board["rank"]).all() and (
        board["rank"] <= board["rank_high"]
    ).all()
    assert board.attrs["seed"] == 4 and board.attrs["n_resamples"] == 60
    plain = leaderboard(scores, method=method)
    pd.testing.assert_frame_equal(board.drop(columns=cols), plain, check_like=False)


def test_leaderboard_rank_intervals_options(scores):
    with pytest.raises(OptionError, match="method='borda', 'mean_rank' or 'meta'"):
        leaderboard(scores, method="copeland", rank_intervals=True)
    with pytest.raises(OptionError, match="rank_intervals"):
        leaderboard(scores, rank_intervals="yes")
    with pytest.raises(OptionError, match="n_resamples"):
        leaderboard(scores, n_resamples=1)


# ------------------------------------------------------------------ by="pooled"
POOLED = dict(by="pooled", control="ctrl", effect="md", pool_method="REML")


def test_pooled_scores_are_the_meta_leaderboard(scores):
    table = rank_intervals(scores, n_resamples=50, seed=0, **POOLED)
    board = leaderboard(scores, method="meta", control="ctrl", effect="md", pool_method="REML",
                        ci="z")  # fmt: skip
    merged = table.merge(board, on=["metric", "system"], suffixes=("", "_board"))
    assert len(merged) == len(table) == len(board) == 6
    np.testing.assert_allclose(merged["score"], merged["score_board"], rtol=0, atol=1e-12)
    assert (merged["rank"] == merged["rank_board"]).all()
    # the leaderboard's score is pool(effects()) itself: an independent path to the numbers
    eff = metaeval.effects(scores, control="ctrl", effect="md")
    pooled = metaeval.pool(eff, method="REML", ci="z").set_index(["metric", "treatment"])["effect"]
    got = table[table["system"] != "ctrl"].set_index(["metric", "system"])["score"]
    np.testing.assert_allclose(got, pooled.reindex(got.index), rtol=0, atol=1e-12)
    assert (table.loc[table["system"] == "ctrl", "score"] == 0).all()
    assert table.attrs["control"] == "ctrl" and table.attrs["effect"] == "md"


def resampled_table(scores: pd.DataFrame, tasks: np.ndarray, tau: np.ndarray,
                    counts: np.ndarray) -> pd.DataFrame:  # fmt: skip
    """One bootstrap resample written out as a scores table: slot i holds the drawn task
    tau[i], each of its queries repeated as often as it was drawn (as new query ids)."""
    frames = []
    for i, t in enumerate(tau):
        part = scores[scores["task"] == tasks[t]]
        queries = np.sort(part["query"].unique())  # _query_table's order: sorted strings
        for j, q in enumerate(queries):
            for copy in range(int(counts[i, j])):
                frames.append(part[part["query"] == q].assign(task=f"slot{i}", query=f"{q}#{copy}"))
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("effect", ["md", "smcrp"])
def test_pooled_resamples_equal_effects_then_pool_of_the_resampled_table(rng, effect):
    """The vectorized path (weighted sums → effect_sizes → one pool call for all
    resamples) against writing each resample out and calling effects() and pool()."""
    from metaeval.ranking._intervals import (
        _bootstrap_effects,
        _pooled_scores,
        _query_table,
        _resamples,
    )

    scores = make_scores(rng, tasks={"t1": 6, "t2": 9, "t3": 5}, systems=("ctrl", "a", "b", "c"),
                         metrics=("m",))  # fmt: skip
    names = pd.Index(["a", "b", "c", "ctrl"])  # the order rank_intervals lays them out in
    v, n_q, tasks = _query_table(scores, names)
    n_res = 6
    est, var = _bootstrap_effects(v, n_q, 3, n_res, 17, "m", effect)
    (boot,) = _pooled_scores([est], [var], "REML")
    draws = [(tau, counts) for _, tau_b, counts_b in _resamples(n_q, 12, n_res, 17, "m")
             for tau, counts in zip(tau_b, counts_b, strict=True)]  # fmt: skip
    assert len(draws) == n_res
    for r, (tau, counts) in enumerate(draws):
        table = resampled_table(scores, np.asarray(tasks), tau, counts)
        eff = metaeval.effects(table, control="ctrl", effect=effect)
        ref = metaeval.pool(eff, method="REML", ci="z").set_index("treatment")["effect"]
        np.testing.assert_allclose(boot[r], ref.reindex(["a", "b", "c"]), rtol=1e-9, atol=1e-12)


@pytest.fixture(scope="module")
def simulated_pooled() -> tuple[pd.DataFrame, pd.Series]:
    # the md effect over system A estimates mu_s - mu_A: its true ranks are those of mu_s
    return simulate(8, **{**SIM, "n_boards": 100})


def test_pooled_intervals_cover_the_true_ranks(simulated_pooled):
    scores, true = simulated_pooled
    kw = dict(by="pooled", control="A", effect="md", n_resamples=200, seed=1)
    table = rank_intervals(scores, **kw)
    covered = coverage(table, true).groupby(table["metric"]).all()
    assert len(covered) == 100
    assert covered.mean() >= 0.90  # measured: 1.0 (100 of 100)
    width = (table["rank_high"] - table["rank_low"] + 1).mean()
    assert width < 4.0  # measured: 3.52 of 6 ranks (2.59 marginal)
    marginal = rank_intervals(scores, simultaneous=False, **kw)
    assert coverage(marginal, true).mean() >= 0.95  # measured: 0.997


def test_pooled_copy_of_the_control_is_left_out_with_a_warning(scores):
    copy = scores[scores["system"] == "ctrl"].assign(system="ctrl_copy")
    both = pd.concat([scores, copy], ignore_index=True)
    with pytest.warns(metaeval.DegenerateWarning, match="ctrl_copy"):
        table = rank_intervals(both, n_resamples=30, seed=0, **POOLED)
    assert "ctrl_copy" not in set(table["system"])
    assert len(table) == 6


def test_pooled_control_must_rank_on_every_metric(scores):
    no_ctrl = scores[~((scores["metric"] == "m2") & (scores["system"] == "ctrl"))]
    with pytest.raises(PairingError, match="'m2'"):
        rank_intervals(no_ctrl, n_resamples=10, seed=0, **POOLED)


def test_leaderboard_meta_gains_the_pooled_intervals(scores):
    board = leaderboard(scores, method="meta", control="ctrl", effect="md", ci="z", rank_intervals=True,
                        n_resamples=60, seed=4)  # fmt: skip
    alone = rank_intervals(scores, n_resamples=60, seed=4, **POOLED)
    merged = board.merge(alone, on=["metric", "system"], suffixes=("", "_alone"))
    assert len(merged) == len(board) == 6
    for col in ["rank_low", "rank_high", "tie_group", "prob_best"]:
        assert (merged[col] == merged[f"{col}_alone"]).all()

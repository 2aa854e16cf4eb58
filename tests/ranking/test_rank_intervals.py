"""metaeval.rank_intervals: rank intervals and tie groups from pairwise tests over tasks."""

from __future__ import annotations

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from _helpers import make_scores

import metaeval
from metaeval import leaderboard, rank_intervals
from metaeval.errors import OptionError, PairingError

SYSTEMS = np.array(list("ABCDEF"))


def simulate(
    seed: int,
    *,
    n_boards: int,
    step: float,
    task_sd: float,
    query_sd: float,
    n_tasks: int,
    n_queries: int,
) -> tuple[pd.DataFrame, pd.Series]:
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
            "task": t.ravel(),
            "query": q.ravel(),
            "system": SYSTEMS[s.ravel()],
            "metric": b.ravel().astype(str),
            "value": value.ravel(),
        }
    )
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


@pytest.mark.slow
def test_simultaneous_cover_every_true_rank(simulated):
    scores, true = simulated
    table = rank_intervals(scores, n_resamples=200, seed=1)
    covered = coverage(table, true).groupby(table["metric"]).all()
    assert len(covered) == 150
    # measured: 1.0 (150 of 150); max-|t| over 15 pairs is conservative for the whole table
    assert covered.mean() >= 0.90
    width = (table["rank_high"] - table["rank_low"] + 1).mean()
    # measured 4.11 ranks of 6 (3.68 marginal): informative. The bootstrap of the tasks
    # gave 3.47 (2.57), from normal quantiles and a spread (k − 1)/k too small, which at 4-6
    # heterogeneous tasks split equal systems in 13-17% of leaderboards
    assert width < 4.5
    assert (table["rank_low"] <= table["rank"]).all() and (
        table["rank"] <= table["rank_high"]
    ).all()


@pytest.mark.slow
def test_marginal_cover_each_true_rank(simulated):
    scores, true = simulated
    table = rank_intervals(scores, n_resamples=200, seed=1, simultaneous=False)
    assert coverage(table, true).mean() >= 0.95  # measured 1.0
    simultaneous = rank_intervals(scores, n_resamples=200, seed=1)
    # the same resamples: the family-wise intervals are wider on average
    assert (table["rank_high"] - table["rank_low"]).mean() < (
        simultaneous["rank_high"] - simultaneous["rank_low"]
    ).mean()


def shifted(rng: np.random.Generator, n_tasks: int = 3) -> pd.DataFrame:
    """B = A + 0.05 and C = A + 0.1 on every query: paired, their order never changes."""
    base = pd.DataFrame(
        [(t, q, "A", "acc", rng.uniform()) for t in range(n_tasks) for q in range(5)],
        columns=["task", "query", "system", "metric", "value"],
    )
    return pd.concat(
        [
            base,
            base.assign(system="B", value=base["value"] + 0.05),
            base.assign(system="C", value=base["value"] + 0.1),
        ],
        ignore_index=True,
    )


@pytest.mark.parametrize(("by", "n_tasks"), [("mean", 3), ("borda", 6)])
def test_paired_resampling_keeps_a_constant_shift(rng, by, n_tasks):
    scores = shifted(rng, n_tasks)
    for simultaneous in (True, False):
        table = rank_intervals(
            scores, aggregation=by, n_resamples=300, seed=3, simultaneous=simultaneous
        )
        assert table["system"].tolist() == ["C", "B", "A"]
        # every resample ranks C, B, A: degenerate intervals, C always first
        assert table["rank_low"].tolist() == [1, 2, 3]
        assert table["rank_high"].tolist() == [1, 2, 3]
        assert table["tie_group"].tolist() == [1, 2, 3]
        assert table["prob_best"].tolist() == [1.0, 0.0, 0.0]


def test_borda_points_of_three_tasks_cannot_order_anything(rng):
    # C > B > A on each of 3 tasks: by sign flips of the tasks, 2 of the 2³ patterns are as
    # extreme (p = 0.25 > 0.05) — the sign test's answer; the mean's differences have no
    # error at all and order them (above)
    table = rank_intervals(shifted(rng, 3), aggregation="borda", n_resamples=100, seed=3)
    assert table["rank_low"].tolist() == [1, 1, 1] and table["rank_high"].tolist() == [3, 3, 3]
    assert table["tie_group"].tolist() == [1, 1, 1]
    assert table["rank"].tolist() == [1, 2, 3]


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
    # B and its copy share rank 2 (competition ranking) in the data and in every resample;
    # their difference is 0 without error: known equal, so neither can be third
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
    table = rank_intervals(two_systems(), n_resamples=n, seed=11, simultaneous=False)
    got = dict(zip(table["system"], table["prob_best"], strict=True))
    se = np.sqrt(float(p) * (1 - float(p)) / n)
    assert abs(got["A"] - float(p)) < 4 * se
    assert abs(got["B"] - (1 - float(p))) < 4 * se
    # observed: mean difference (0.05 + 0.05) / 2 > 0, A first
    assert table["system"].tolist() == ["A", "B"]


@pytest.mark.parametrize("alpha", [0.05, 0.5, 0.9])
def test_two_systems_whose_tasks_agree_rest_on_the_queries(alpha):
    """Both tasks have the mean difference 0.05: its spread over the tasks is 0, which
    would make the pair certain; the queries' own error is the floor, Σ_t s²_t/n_t / k²,
    with t on k − 1 = 1 degree of freedom (scipy's quantile)."""
    from scipy import stats

    d = 0.05
    floor = sum(np.var([float(x) for x in v], ddof=1) / len(v) for v in DIFF.values()) / 4
    split = d / np.sqrt(floor) > stats.t.isf(alpha / 2, 1)
    assert split == (alpha == 0.9)  # t = 0.26: only the 10% interval separates them
    for simultaneous in (True, False):
        table = rank_intervals(
            two_systems(), n_resamples=50, seed=11, alpha=alpha, simultaneous=simultaneous
        )
        want = ([1, 2], [1, 2]) if split else ([1, 1], [2, 2])
        assert (table["rank_low"].tolist(), table["rank_high"].tolist()) == want


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
    table = rank_intervals(scores, aggregation=by, n_resamples=50, seed=0)
    board = leaderboard(scores, aggregation="borda")
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

    names = pd.Index(list("ABCDEF"))
    rank = np.array([1, 2, 3, 4, 5, 6])
    low = np.array([1, 1, 3, 3, 4, 6])
    high = np.array([2, 2, 4, 5, 5, 6])
    # cuts after B (A, B end at 2; the rest start at 3 or later) and after E (F starts at
    # 6); C [3, 4] and E [4, 5] overlap, so C..E is one group although C and E are apart
    # from nothing but each other's neighbours
    assert _tie_groups(rank, low, high, names).tolist() == [1, 1, 2, 2, 2, 3]
    # the old rule (the leader and whatever overlaps it, then the same from the best of
    # the rest) split C [2, 4] from D [4, 5]; they overlap, so they cannot be told apart
    low, high = np.array([1, 1, 2, 4, 4]), np.array([2, 3, 4, 5, 5])
    assert _tie_groups(rank[:5], low, high, names[:5]).tolist() == [1, 1, 1, 1, 1]
    # equal observed ranks are never cut apart; a shuffled input gives the same groups
    perm = np.array([4, 0, 3, 1, 2])
    got = _tie_groups(rank[:5][perm], low[perm], high[perm], names[:5][perm])
    assert got.tolist() == [1, 1, 1, 1, 1]


def test_accessor_and_input_unchanged(scores):
    before = scores.copy()
    via = scores.meta.rank_intervals(n_resamples=50, seed=2)
    pd.testing.assert_frame_equal(via, metaeval.rank_intervals(scores, n_resamples=50, seed=2))
    pd.testing.assert_frame_equal(scores, before)
    assert list(via.columns) == [
        "metric",
        "system",
        "score",
        "rank",
        "rank_low",
        "rank_high",
        "tie_group",
        "prob_best",
        "n_tasks",
    ]


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"n_resamples": 1}, "n_resamples"),
        ({"n_resamples": 2.5}, "n_resamples"),
        ({"aggregation": "best"}, "aggregation"),
        ({"aggregation": "pooled"}, "control"),
        ({"control": "ctrl"}, "only with it"),
        ({"aggregation": "pooled", "control": ["ctrl"]}, "control"),
        ({"aggregation": "pooled", "control": "ctrl", "effect": "d"}, "effect"),
        ({"aggregation": "pooled", "control": "ctrl", "method": "reml"}, "method"),
        ({"aggregation": "pooled", "control": "ctrl", "test": "wald"}, "test"),
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


def test_leaderboard_does_not_resample():
    """leaderboard(rank_intervals=True) went (issue 40): the intervals are rank_intervals'."""
    import inspect

    params = inspect.signature(leaderboard).parameters
    assert not {"rank_intervals", "n_resamples", "seed"} & set(params)


# ------------------------------------------------------------------ aggregation="pooled"
POOLED = dict(aggregation="pooled", control="ctrl", effect="md", method="REML", test="z")


def test_pooled_scores_are_the_pooled_leaderboard(scores):
    table = rank_intervals(scores, n_resamples=50, seed=0, **POOLED)
    board = leaderboard(
        scores, aggregation="pooled", control="ctrl", effect="md", method="REML", test="z"
    )
    merged = table.merge(board, on=["metric", "system"], suffixes=("", "_board"))
    assert len(merged) == len(table) == len(board) == 6
    np.testing.assert_allclose(merged["score"], merged["score_board"], rtol=0, atol=1e-12)
    assert (merged["rank"] == merged["rank_board"]).all()
    # the leaderboard's score is pool(effects()) itself: an independent path to the numbers
    eff = metaeval.effects(scores, control="ctrl", effect="md")
    pooled = metaeval.pool(eff, method="REML", test="z").set_index(["metric", "treatment"])[
        "effect"
    ]
    got = table[table["system"] != "ctrl"].set_index(["metric", "system"])["score"]
    np.testing.assert_allclose(got, pooled.reindex(got.index), rtol=0, atol=1e-12)
    assert (table.loc[table["system"] == "ctrl", "score"] == 0).all()
    assert table.attrs["control"] == "ctrl" and table.attrs["effect"] == "md"


def resampled_table(
    scores: pd.DataFrame, tasks: np.ndarray, tau: np.ndarray, counts: np.ndarray, unit: np.ndarray
) -> pd.DataFrame:
    """One bootstrap resample written out as a scores table: slot i holds the drawn task
    tau[i], each of its queries repeated as often as its unit (the query, or its cluster)
    was drawn (as new query ids)."""
    frames = []
    for i, t in enumerate(tau):
        part = scores[scores["task"] == tasks[t]]
        queries = np.sort(part["query"].unique())  # _query_table's order: sorted strings
        for j, q in enumerate(queries):
            for copy in range(int(counts[i, unit[t, j]])):
                frames.append(part[part["query"] == q].assign(task=f"slot{i}", query=f"{q}#{copy}"))
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("cluster", [None, "passage"])
@pytest.mark.parametrize("effect", ["md", "smcrp"])
def test_pooled_resamples_equal_effects_then_pool_of_the_resampled_table(rng, effect, cluster):
    """The vectorized path (weighted sums → effect_sizes → one pool call for all
    resamples) against writing each resample out and calling effects() and pool(); with
    clusters, whole clusters are drawn."""
    from metaeval.ranking._intervals import _query_table, _resamples, effect_sums
    from metaeval.workflows.leaderboard import _bootstrap_effects, _pooled_scores

    scores = make_scores(
        rng, tasks={"t1": 6, "t2": 9, "t3": 5}, systems=("ctrl", "a", "b", "c"), metrics=("m",)
    )
    scores["passage"] = (
        scores["task"] + "/" + (scores["query"].str[1:].astype(int) // 2).astype(str)
    )
    clusters = None
    if cluster:
        ids = scores.drop_duplicates(["task", "query"])
        clusters = pd.Series(
            ids["passage"].to_numpy(), index=pd.MultiIndex.from_frame(ids[["task", "query"]])
        )
    names = pd.Index(["a", "b", "c", "ctrl"])  # the order rank_intervals lays them out in
    v, n_q, tasks, unit, n_u = _query_table(scores, names, clusters)
    assert (n_u == (n_q + 1) // 2).all() if cluster else (n_u == n_q).all()
    n_res = 6
    sums, shift = effect_sums(v, n_q, unit, n_u, 3)
    est, var = _bootstrap_effects(sums, shift, n_u, 3, n_res, 17, "m", effect)
    (boot,) = _pooled_scores([est], [var], "REML")
    draws = [
        (tau, counts)
        for _, tau_b, counts_b in _resamples(n_u, 12, n_res, 17, "m")
        for tau, counts in zip(tau_b, counts_b, strict=True)
    ]
    assert len(draws) == n_res
    for r, (tau, counts) in enumerate(draws):
        table = resampled_table(scores, np.asarray(tasks), tau, counts, unit)
        with warnings.catch_warnings():  # a slot of one cluster drawn twice has no spread:
            warnings.simplefilter("ignore", metaeval.DegenerateWarning)  # left out of both
            eff = metaeval.effects(table, control="ctrl", effect=effect)
            ref = metaeval.pool(eff, method="REML", test="z").set_index("treatment")["effect"]
        np.testing.assert_allclose(boot[r], ref.reindex(["a", "b", "c"]), rtol=1e-9, atol=1e-12)


@pytest.fixture(scope="module")
def simulated_pooled() -> tuple[pd.DataFrame, pd.Series]:
    # the md effect over system A estimates mu_s - mu_A: its true ranks are those of mu_s
    return simulate(8, **{**SIM, "n_boards": 100})


@pytest.mark.slow
def test_pooled_intervals_cover_the_true_ranks(simulated_pooled):
    scores, true = simulated_pooled
    kw = dict(aggregation="pooled", control="A", effect="md", n_resamples=200, seed=1)
    table = rank_intervals(scores, **kw)
    covered = coverage(table, true).groupby(table["metric"]).all()
    assert len(covered) == 100
    assert covered.mean() >= 0.90  # measured: 1.0 (100 of 100)
    width = (table["rank_high"] - table["rank_low"] + 1).mean()
    assert width < 4.5  # measured: 4.04 of 6 ranks (3.68 marginal)
    marginal = rank_intervals(scores, simultaneous=False, **kw)
    assert coverage(marginal, true).mean() >= 0.95  # measured: 1.0


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


# ------------------------------------------------------------------ few tasks (issue 39, item 12)
def heterogeneous(
    seed: int,
    *,
    n_boards: int,
    n_tasks: int,
    ratio: float,
    n_queries: int = 20,
    mu: tuple[float, ...] = (0.0, 0.0),
) -> pd.DataFrame:
    """Leaderboards whose systems' effects vary over tasks as on real data: a per-task
    difference of two systems has query noise of SE = √(2/n) and a task-by-system part of
    SD ``ratio`` × SE (3.3 on Ranger's BEIR runs, up to 14 on the bundled example; see
    tests/fixtures/ranking/rank_coverage.py for the long simulation)."""
    rng = np.random.default_rng(seed)
    se = np.sqrt(2 / n_queries)
    shape = (n_boards, n_tasks, n_queries, len(mu))
    value = (
        np.asarray(mu)
        + rng.normal(size=(n_boards, n_tasks, 1, 1))
        + ratio * se / np.sqrt(2) * rng.normal(size=(n_boards, n_tasks, 1, len(mu)))
        + rng.normal(size=(n_boards, n_tasks, n_queries, 1))
        + rng.normal(size=shape)
    )
    b, t, q, s = np.meshgrid(*map(np.arange, shape), indexing="ij")
    return pd.DataFrame(
        {
            "task": t.ravel(),
            "query": q.ravel(),
            "system": SYSTEMS[s.ravel()],
            "metric": b.ravel().astype(str),
            "value": value.ravel(),
        }
    )


def split_share(table: pd.DataFrame) -> float:
    groups = table.pivot(index="metric", columns="system", values="tie_group")
    return float((groups["A"] != groups["B"]).mean())


@pytest.mark.parametrize("by", ["mean", "pooled", "borda"])
@pytest.mark.slow
def test_equal_systems_are_not_split_at_few_heterogeneous_tasks(by):
    """Two equal systems on 4 tasks, task-by-system SD 10 times the query noise: the
    bootstrap of the tasks split them in 26% (mean, pooled) and 20% (Borda) of 200
    leaderboards; the intervals must keep alpha = 0.05 (measured: 8%, 8%, 0%; at 6 tasks
    5%, 5%, 4% against 19%, 18%, 13%). The long simulation with clusters, k = 4-20 and
    three levels of heterogeneity: tests/fixtures/ranking/rank_coverage.py."""
    kw = dict(aggregation=by, n_resamples=20, seed=1)
    if by == "pooled":
        kw.update(control="A", effect="md")
    scores = heterogeneous(44, n_boards=200, n_tasks=4, ratio=10, n_queries=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metaeval.DegenerateWarning)  # narrow KH intervals
        share = split_share(rank_intervals(scores, **kw))
    assert share <= 0.09  # binomial SE at 5%: 1.5%


def boards_of_two(seed: int, n_boards: int, n_tasks: int, n_queries: int = 30) -> pd.DataFrame:
    """Two systems A and B per board, B's gain varying over boards (so that some pairs
    split and some do not) and over tasks far more than the queries' noise."""
    rng = np.random.default_rng(seed)
    gain = rng.uniform(0, 1.2, size=(n_boards, 1, 1))
    task = (
        rng.normal(size=(n_boards, n_tasks, 1))
        + gain
        + 0.5 * rng.normal(size=(n_boards, n_tasks, 1))
    )
    a = rng.normal(size=(n_boards, n_tasks, n_queries))
    b = a + task + 0.05 * rng.normal(size=a.shape)
    rows = [
        pd.DataFrame(
            {
                "task": np.repeat(np.arange(n_tasks), n_queries)[None].repeat(n_boards, 0).ravel(),
                "query": np.tile(np.arange(n_queries), n_boards * n_tasks),
                "system": s,
                "metric": np.repeat(np.arange(n_boards), n_tasks * n_queries).astype(str),
                "value": v.ravel(),
            }
        )
        for s, v in (("A", a), ("B", b))
    ]
    return pd.concat(rows, ignore_index=True)


def split_of(table: pd.DataFrame) -> pd.Series:
    return table.pivot(index="metric", columns="system", values="tie_group").nunique(axis=1) > 1


@pytest.mark.parametrize("simultaneous", [True, False])
def test_two_systems_split_exactly_where_the_reference_test_rejects(simultaneous):
    """N = 2: the mean splits where scipy's paired t-test over the tasks rejects, the
    pooled effect where pool()'s Knapp–Hartung interval excludes 0, the Borda points where
    the sign test (scipy's binomtest) and the t-test of the ±1 points (infinite where every
    task agrees) both reject."""
    from scipy import stats

    scores = boards_of_two(3, 40, 6)
    means = scores.groupby(["metric", "task", "system"])["value"].mean().unstack()
    diff = (means["B"] - means["A"]).groupby(level="metric")
    kw = dict(n_resamples=20, seed=2, simultaneous=simultaneous)
    mean = split_of(rank_intervals(scores, **kw))
    t_rejects = diff.apply(lambda d: stats.ttest_1samp(d, 0).pvalue < 0.05)
    assert 5 < t_rejects.sum() < 35  # both outcomes occur
    pd.testing.assert_series_equal(mean, t_rejects.reindex(mean.index), check_names=False)
    borda = split_of(rank_intervals(scores, aggregation="borda", **kw))
    sign = diff.apply(lambda d: stats.binomtest(int((d > 0).sum()), len(d)).pvalue <= 0.05)
    points = np.sign(diff.obj).groupby(level="metric")  # Borda points of B minus A: ±1
    t_points = points.apply(lambda d: d.std() == 0 or stats.ttest_1samp(d, 0).pvalue < 0.05)
    both = sign & t_points.reindex(sign.index)
    assert 2 < both.sum() < 38
    pd.testing.assert_series_equal(borda, both.reindex(borda.index), check_names=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metaeval.DegenerateWarning)  # narrow KH intervals
        pooled = split_of(
            rank_intervals(scores, aggregation="pooled", control="A", effect="md", **kw)
        )
        ref = metaeval.pool(metaeval.effects(scores, control="A", effect="md")).set_index("metric")
    excludes = (ref["ci_low"] > 0) | (ref["ci_high"] < 0)
    pd.testing.assert_series_equal(pooled, excludes.reindex(pooled.index), check_names=False)


@pytest.mark.parametrize("cluster", [None, "passage"])
def test_one_task_rests_on_the_paired_t_over_its_queries(cluster):
    """One task: two systems split where compare(test="t") (clustered with cluster=)
    rejects: its interval of the mean difference excludes 0."""
    rng = np.random.default_rng(5)
    frames = []
    for board in range(30):
        passage = np.repeat(np.arange(8), 5)
        shared = rng.normal(size=8)[passage]
        a = rng.normal(size=40)
        b = a + rng.uniform(0, 0.8) + shared * 0.6 + 0.4 * rng.normal(size=40)
        for s, v in (("A", a), ("B", b)):
            frames.append(
                pd.DataFrame(
                    {
                        "task": "t",
                        "query": np.arange(40),
                        "system": s,
                        "metric": str(board),
                        "value": v,
                        "passage": passage,
                    }
                )
            )
    scores = pd.concat(frames, ignore_index=True)
    table = rank_intervals(scores, n_resamples=20, seed=0, cluster=cluster)
    ref = metaeval.compare(scores, control="A", cluster=cluster).set_index("metric")
    rejects = (ref["ci_low"] > 0) | (ref["ci_high"] < 0)
    assert 3 < rejects.sum() < 27
    got = split_of(table)
    pd.testing.assert_series_equal(got, rejects.reindex(got.index), check_names=False)
    if cluster:  # the clustered intervals are wider here: fewer splits than without
        plain = split_of(rank_intervals(scores, n_resamples=20, seed=0))
        assert got.sum() < plain.sum()
        assert table.attrs["cluster"] == "passage"


def test_critical_value_is_the_studentized_range_for_independent_systems():
    """Independent systems with equal variances: max_jk |z_j − z_k| / (σ√2 s) is the
    studentized range over √2, whose 95% point scipy gives."""
    from scipy import stats

    from metaeval.ranking._intervals import _critical, _pair_se, _t_draws

    n, df = 4, 10.0
    cov = np.eye(n) * 0.3
    c, c_j = _critical(_t_draws(cov, df, np.random.default_rng(0), 200_000), _pair_se(cov), 0.05)
    assert c == pytest.approx(stats.studentized_range.isf(0.05, n, df) / np.sqrt(2), rel=0.01)
    # one system's three pairs: the max of three |t| that share a system (correlation 1/2)
    ref = stats.multivariate_t(shape=np.full((3, 3), 0.5) + 0.5 * np.eye(3), df=df, seed=1).rvs(
        200_000
    )
    assert c_j == pytest.approx(np.quantile(np.abs(ref).max(axis=1), 0.95), rel=0.02)


def test_ranger_beir_ranks_agree_with_the_pooled_interval(shared_data):
    """Ranger's 6 BEIR collections: Uni-ColBERTer wins on all six, but pool() gives
    [−0.046, 0.490] for its gain over TAS-B (Knapp–Hartung, 5 df) and the paired t over the
    collections p = 0.088: no split by the mean or the pooled effect. The sign test of 6
    wins of 6 (p = 2/2⁶ = 0.031) splits them by Borda points."""
    from scipy import stats

    from metaeval.io import read_ranger

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metaeval.MetaEvalWarning)  # collections it skips
        scores = read_ranger(
            shared_data / "ranger" / "retrieval-colberter-data" / "config.yaml",
            measures="nDCG@10",
            missing_files="skip",
        )
    pooled = metaeval.pool(metaeval.effects(scores, control="tasb_dim768_hf")).iloc[0]
    assert pooled["k"] == 6 and pooled["ci_low"] < 0 < pooled["ci_high"]
    means = scores.groupby(["task", "system"])["value"].mean().unstack()
    d = means["colberter_dim1"] - means["tasb_dim768_hf"]
    assert (d > 0).all() and stats.ttest_1samp(d, 0).pvalue > 0.05
    for kw in ({}, {"aggregation": "pooled", "control": "tasb_dim768_hf"}):
        for simultaneous in (True, False):
            table = rank_intervals(
                scores, n_resamples=1000, seed=0, simultaneous=simultaneous, **kw
            )
            assert table["rank"].tolist() == [1, 2]
            assert table["rank_low"].tolist() == [1, 1] and table["rank_high"].tolist() == [2, 2]
            assert table["tie_group"].tolist() == [1, 1]
    borda = rank_intervals(scores, aggregation="borda", n_resamples=1000, seed=0)
    assert borda["tie_group"].tolist() == [1, 2]

"""metaeval.leaderboard: rank aggregation over tasks (the rules of metaeval.ranking)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import leaderboard
from metaeval.errors import OptionError, PairingError
from metaeval.ranking import _aggregate as _aggregation


def table(values: dict[str, dict[str, float]], metric: str = "acc") -> pd.DataFrame:
    """A scores table with one query per task from {task: {system: value}}."""
    rows = [
        {"task": t, "query": "q1", "system": s, "metric": metric, "value": float(v)}
        for t, by_system in values.items()
        for s, v in by_system.items()
    ]
    return pd.DataFrame(rows)


def as_dict(board: pd.DataFrame, column: str = "score") -> dict[str, float]:
    return dict(zip(board["system"], board[column], strict=True))


# Tasks rank A > B > C, A > C > B and B > A > C.
HAND = table(
    {
        "t1": {"A": 0.9, "B": 0.8, "C": 0.7},
        "t2": {"A": 0.6, "B": 0.4, "C": 0.5},
        "t3": {"A": 0.7, "B": 0.8, "C": 0.3},
    }
)
# A Condorcet cycle: A > B > C, B > C > A, C > A > B.
CYCLE = table(
    {
        "t1": {"A": 3, "B": 2, "C": 1},
        "t2": {"A": 1, "B": 3, "C": 2},
        "t3": {"A": 2, "B": 1, "C": 3},
    }
)
# Ties: t1 A = B > C (ranks 1.5, 1.5, 3); t2 A > B = C (ranks 1, 2.5, 2.5).
TIES = table({"t1": {"A": 0.9, "B": 0.9, "C": 0.1}, "t2": {"A": 0.5, "B": 0.2, "C": 0.2}})


# ------------------------------------------------------------ simple rules
def test_borda_hand_example():
    board = leaderboard(HAND, aggregation="borda")
    # 1-based ranks A (1, 1, 2), B (2, 3, 1), C (3, 2, 3); points N - r.
    assert as_dict(board) == {"A": 5.0, "B": 3.0, "C": 1.0}
    assert board["system"].tolist() == ["A", "B", "C"]
    assert board["rank"].tolist() == [1, 2, 3]
    assert board["n_tasks"].tolist() == [3, 3, 3]
    assert board["mean"].to_numpy() == pytest.approx([2.2 / 3, 2.0 / 3, 1.5 / 3])
    assert board.attrs["aggregation"] == "borda"
    assert board.attrs["higher_is_better"] == {"acc": True}
    assert board.columns.tolist() == ["metric", "system", "score", "rank", "n_tasks", "mean"]


def test_mean_rank_hand_example():
    board = leaderboard(HAND, aggregation="mean_rank")
    assert as_dict(board) == pytest.approx({"A": 4 / 3, "B": 2.0, "C": 8 / 3})
    assert board["system"].tolist() == ["A", "B", "C"]
    assert board["rank"].tolist() == [1, 2, 3]


def test_copeland_hand_example_and_cycle():
    board = leaderboard(HAND, aggregation="copeland")
    # A beats B 2-1 and C 3-0; B beats C 2-1.
    assert as_dict(board) == {"A": 2.0, "B": 0.0, "C": -2.0}
    assert board["rank"].tolist() == [1, 2, 3]
    cycle = leaderboard(CYCLE, aggregation="copeland")
    assert as_dict(cycle) == {"A": 0.0, "B": 0.0, "C": 0.0}
    assert cycle["rank"].tolist() == [1, 1, 1]


def test_ties_share_points():
    borda = as_dict(leaderboard(TIES, aggregation="borda"))
    assert borda == {"A": 1.5 + 2.0, "B": 1.5 + 0.5, "C": 0.0 + 0.5}
    assert as_dict(leaderboard(TIES, aggregation="mean_rank")) == {"A": 1.25, "B": 2.0, "C": 2.75}
    # A-B: tie, A; A-C: A, A; B-C: B, tie -> A beats both, B beats C.
    assert as_dict(leaderboard(TIES, aggregation="copeland")) == {"A": 2.0, "B": 0.0, "C": -2.0}


def test_competition_ranks():
    board = leaderboard(table({"t": {"A": 0.9, "B": 0.5, "C": 0.5, "D": 0.1}}), aggregation="borda")
    assert as_dict(board) == {"A": 3.0, "B": 1.5, "C": 1.5, "D": 0.0}
    assert board["rank"].tolist() == [1, 2, 2, 4]
    assert board["system"].tolist() == ["A", "B", "C", "D"]


def test_task_score_is_mean_over_queries():
    scores = pd.DataFrame(
        {
            "task": "t",
            "query": ["q1", "q2", "q1", "q2"],
            "system": ["A", "A", "B", "B"],
            "metric": "acc",
            "value": [1.0, 0.0, 0.6, 0.6],  # A has the best query but the lower mean
        }
    )
    board = leaderboard(scores, aggregation="borda")
    assert board["system"].tolist() == ["B", "A"]
    assert as_dict(board, "mean") == pytest.approx({"A": 0.5, "B": 0.6})


def test_metrics_have_their_own_systems_and_order():
    m2 = table({"t1": {"B": 1.0, "A": 2.0}, "t2": {"B": 0.0, "A": 1.0}}, metric="m2")
    scores = pd.concat([m2, table({"t1": {"A": 1, "B": 2, "C": 3}}, metric="m1")])
    board = leaderboard(scores, aggregation="borda")
    assert board["metric"].tolist() == ["m2", "m2", "m1", "m1", "m1"]  # first appearance
    # m2 has N = 2 systems: the winner of a task gets 1 point, not 2.
    assert as_dict(board[board["metric"] == "m2"]) == {"A": 2.0, "B": 0.0}
    assert board.loc[board["metric"] == "m1", "n_tasks"].tolist() == [1, 1, 1]
    only = leaderboard(scores, aggregation="borda", metric=["m1"])
    assert only["system"].tolist() == ["C", "B", "A"]
    assert leaderboard(scores, metric="m2")["metric"].unique().tolist() == ["m2"]


@pytest.mark.parametrize("method", ["borda", "mean_rank", "copeland", "kemeny"])
def test_lower_is_better_reverses_order(method):
    up = leaderboard(HAND, aggregation=method)
    down = leaderboard(HAND, aggregation=method, higher_is_better=False)
    assert down["system"].tolist() == up["system"].tolist()[::-1]
    assert down.attrs["higher_is_better"] == {"acc": False}


def test_higher_is_better_mapping():
    error = HAND.assign(metric="err", value=1.0 - HAND["value"])
    scores = pd.concat([HAND, error], ignore_index=True)
    board = leaderboard(scores, aggregation="borda", higher_is_better={"acc": True, "err": False})
    assert board.loc[board["metric"] == "err", "system"].tolist() == ["A", "B", "C"]
    assert board.loc[board["metric"] == "err", "score"].tolist() == [5.0, 3.0, 1.0]
    flipped = leaderboard(scores, aggregation="borda")
    assert flipped.loc[flipped["metric"] == "err", "system"].tolist() == ["C", "B", "A"]
    with pytest.raises(OptionError, match=r"no entry for the metric\(s\) \['err'\]"):
        leaderboard(scores, higher_is_better={"acc": True})


def test_shuffled_rows_give_the_same_leaderboard(rng):
    scores = metaeval.load_example()
    shuffled = scores.iloc[rng.permutation(len(scores))].reset_index(drop=True)
    for method in ("borda", "copeland", "kemeny"):
        a = leaderboard(scores, aggregation=method).sort_values(["metric", "system"])
        b = leaderboard(shuffled, aggregation=method).sort_values(["metric", "system"])
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))


# ------------------------------------------------------------ Kemeny
def wins_matrix(values: np.ndarray) -> np.ndarray:
    """P[b, s]: tasks (rows of ``values``) scoring b strictly above s."""
    return (values[:, :, None] > values[:, None, :]).sum(axis=0)


def order_cost(p: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Disagreements of orders (..., n): Σ_{i<j} P[o_j, o_i]."""
    n = order.shape[-1]
    i, j = np.triu_indices(n, k=1)
    return p[order[..., j], order[..., i]].sum(axis=-1)


def brute_force_min(p: np.ndarray) -> int:
    perms = np.array(list(itertools.permutations(range(p.shape[0]))))
    return int(order_cost(p, perms).min())


def kemeny_order(board: pd.DataFrame, names: list[str]) -> np.ndarray:
    ordered = board.sort_values("score")["system"].tolist()
    return np.array([names.index(s) for s in ordered])


def test_kemeny_hand_examples():
    board = leaderboard(HAND, aggregation="kemeny")
    # Majorities A > B, A > C, B > C agree; A > B > C misses t3's B > A and t2's C > B.
    assert board["system"].tolist() == ["A", "B", "C"]
    assert board["score"].tolist() == [1.0, 2.0, 3.0]
    assert board.attrs["kemeny_cost"] == {"acc": 2}
    assert board.attrs["kemeny_exact"] is True
    cycle = leaderboard(CYCLE, aggregation="kemeny")
    # The three rotations cost 4, the reversals 5; equal Borda scores -> by name.
    assert cycle["system"].tolist() == ["A", "B", "C"]
    assert cycle.attrs["kemeny_cost"] == {"acc": 4}


def test_kemeny_optimal_ties_broken_by_borda():
    # Z > B > C, B > Z > C and Z > C > B all cost 2; Borda Z 3, B 2, C 1.
    scores = table({"t1": {"B": 3, "Z": 2, "C": 1}, "t2": {"Z": 3, "C": 2, "B": 1}})
    board = leaderboard(scores, aggregation="kemeny")
    assert board["system"].tolist() == ["Z", "B", "C"]
    assert board.attrs["kemeny_cost"] == {"acc": 2}


@pytest.mark.parametrize("seed", range(12))
def test_kemeny_exact_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, t = int(rng.integers(3, 8)), int(rng.integers(1, 10))
    values = rng.integers(0, 3, size=(t, n)).astype(float)  # many ties
    names = [f"s{i}" for i in range(n)]
    scores = table({f"t{k}": dict(zip(names, values[k], strict=True)) for k in range(t)})
    board = leaderboard(scores, aggregation="kemeny")
    p = wins_matrix(values)
    best = brute_force_min(p)
    assert board.attrs["kemeny_cost"] == {"acc": best}
    assert int(order_cost(p, kemeny_order(board, names))) == best
    assert sorted(board["score"]) == list(range(1, n + 1))
    assert board.attrs["kemeny_exact"] is True


@pytest.mark.parametrize("seed", range(8))
def test_kemeny_heuristic(monkeypatch, seed):
    monkeypatch.setattr(_aggregation, "KEMENY_EXACT_MAX", 3)
    rng = np.random.default_rng(100 + seed)
    n, t = 6, 5
    values = rng.integers(0, 4, size=(t, n)).astype(float)
    names = [f"s{i}" for i in range(n)]
    scores = table({f"t{k}": dict(zip(names, values[k], strict=True)) for k in range(t)})
    board = leaderboard(scores, aggregation="kemeny")
    assert board.attrs["kemeny_exact"] is False
    p = wins_matrix(values)
    order = kemeny_order(board, names)
    cost = int(order_cost(p, order))
    assert board.attrs["kemeny_cost"] == {"acc": cost}
    assert cost >= brute_force_min(p)
    # No single remove-and-reinsert move lowers the cost.
    for x in order:
        rest = [y for y in order if y != x]
        moves = np.array([rest[:q] + [x] + rest[q:] for q in range(n)])
        assert order_cost(p, moves).min() >= cost


def test_kemeny_heuristic_improves_on_borda(monkeypatch):
    # A beats everyone; B > D, D > C, C > B is a cycle. Borda A 7, D 4, B 3.5, C 3.5
    # gives A, D, B, C with 6 disagreements. The three rotations of the cycle below A
    # cost 5, the optimum: the exact order takes D first (highest Borda); the local
    # search, visiting A then D, moves D below B (D's own cost 4 -> 3).
    scores = table(
        {
            "t1": {"A": 3, "B": 1, "C": 2, "D": 0},
            "t2": {"A": 1, "B": 0, "C": 1, "D": 2},
            "t3": {"A": 3, "B": 3, "C": 1, "D": 2},
        }
    )
    assert leaderboard(scores)["system"].tolist() == ["A", "D", "B", "C"]
    exact = leaderboard(scores, aggregation="kemeny")
    assert exact["system"].tolist() == ["A", "D", "C", "B"]
    assert exact.attrs["kemeny_cost"] == {"acc": 5}
    monkeypatch.setattr(_aggregation, "KEMENY_EXACT_MAX", 2)
    local = leaderboard(scores, aggregation="kemeny")
    assert local["system"].tolist() == ["A", "B", "D", "C"]
    assert local.attrs["kemeny_cost"] == {"acc": 5}
    assert local.attrs["kemeny_exact"] is False


# ------------------------------------------------------------ pooled
@pytest.mark.parametrize(
    "options",
    [{}, {"effect": "md", "method": "REML", "test": "knha", "alpha": 0.1}],
)
def test_pooled_matches_pool(options):
    scores = metaeval.load_example()
    control = "logistic_regression"
    board = leaderboard(scores, aggregation="pooled", control=control, **options)
    pool_options = {k: v for k, v in options.items() if k in ("method", "test", "alpha")}
    effect_options = {k: v for k, v in options.items() if k in ("effect", "alpha")}
    eff = metaeval.effects(scores, control=control, **effect_options)  # {}: the defaults
    pooled = metaeval.pool(eff, **pool_options)
    treated = board[board["system"] != control].merge(
        pooled, left_on=["metric", "system"], right_on=["metric", "treatment"], suffixes=("", "_p")
    )
    assert len(treated) == 8
    np.testing.assert_allclose(treated["score"], treated["effect"], rtol=1e-12)
    for col in ("ci_low", "ci_high", "p_value"):
        np.testing.assert_allclose(treated[col], treated[f"{col}_p"], rtol=1e-12)
    assert (treated["k"] == treated["k_p"]).all()
    ctrl = board[board["system"] == control]
    assert ctrl["score"].tolist() == [0.0, 0.0]
    assert ctrl[["ci_low", "ci_high", "p_value"]].isna().all().all()
    for _, part in board.groupby("metric"):
        assert part["score"].is_monotonic_decreasing
        assert part["rank"].tolist() == [1, 2, 3, 4, 5]
    assert board.columns.tolist()[-4:] == ["ci_low", "ci_high", "p_value", "k"]


def test_pooled_lower_is_better_reverses():
    scores = metaeval.load_example()
    up = leaderboard(scores, aggregation="pooled", control="knn", metric="accuracy")
    down = leaderboard(
        scores, aggregation="pooled", control="knn", metric="accuracy", higher_is_better=False
    )
    assert down["system"].tolist() == up["system"].tolist()[::-1]
    assert down["score"].is_monotonic_increasing


# ------------------------------------------------------------ errors
def test_missing_system_on_a_task():
    scores = HAND[~((HAND["task"] == "t2") & (HAND["system"] == "C"))]
    with pytest.raises(PairingError, match=r"metric='acc', task='t2', system='C'") as info:
        leaderboard(scores)
    assert "1 (metric, task, system)" in str(info.value)
    assert "Filter the table" in str(info.value)


def test_option_errors():
    with pytest.raises(OptionError, match=r"`aggregation` must be one of .*'borda'.*'plurality'"):
        leaderboard(HAND, aggregation="plurality")
    with pytest.raises(OptionError, match=r"Unknown metric\(s\) \['ndcg'\].*\['acc'\]"):
        leaderboard(HAND, metric="ndcg")
    with pytest.raises(OptionError, match="pass `control`"):
        leaderboard(HAND, aggregation="pooled")
    with pytest.raises(OptionError, match="bool or a mapping"):
        leaderboard(HAND, higher_is_better="yes")


def test_pairing_errors():
    with pytest.raises(PairingError, match=r"'Q' is not a system"):
        leaderboard(HAND, aggregation="pooled", control="Q")
    with pytest.raises(PairingError, match="at least 2 systems"):
        leaderboard(HAND[HAND["system"] == "A"])
    with pytest.raises(metaeval.SchemaError, match="no rows"):
        leaderboard(HAND.iloc[:0])
    with pytest.raises(metaeval.SchemaError):
        leaderboard(HAND.drop(columns="value"))


# A bogus value of every option of leaderboard(): each must be an OptionError naming it,
# whichever the method (also where the method does not use the option).
BOGUS = {
    "aggregation": "plurality",
    "metric": "no_such_metric",
    "higher_is_better": "yes",
    "control": 42,
    "effect": "smd_typo",
    "method": "REML2",
    "test": "wald",
    "alpha": 1.5,
}


@pytest.mark.parametrize("method", metaeval.ranking.AGGREGATIONS)
@pytest.mark.parametrize("option", list(BOGUS))
def test_every_option_rejects_a_bogus_value(method, option):
    import inspect

    options = [
        name
        for name, par in inspect.signature(leaderboard).parameters.items()
        if par.kind is par.KEYWORD_ONLY
    ]
    assert sorted(options) == sorted(BOGUS)  # a new option needs a bogus value here
    kwargs = {"aggregation": method, "control": "A" if method == "pooled" else None}
    kwargs[option] = BOGUS[option]
    with pytest.raises(OptionError, match=rf"`{option}`") as info:
        leaderboard(HAND, **kwargs)
    assert repr(BOGUS[option]) in str(info.value) or str(BOGUS[option]) in str(info.value)


def test_an_unknown_control_is_an_error_for_every_method():
    for method in metaeval.ranking.AGGREGATIONS:
        with pytest.raises(PairingError, match=r"'Q' is not a system"):
            leaderboard(HAND, aggregation=method, control="Q")

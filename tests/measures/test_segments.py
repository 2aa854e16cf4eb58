"""metaeval.measures.segments: RankEval's segment measures, segment_scores, correlation meta-evaluation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from _helpers import NARROW_KH
from scipy import stats

import metaeval
from metaeval.measures import (
    best_human_rank,
    best_predicted_vs_human,
    err,
    kendall_tau,
    kendall_tau_set,
    ndcg,
    normalize_ranks,
    reciprocal_rank,
    segment_scores,
)
from metaeval.paired import correlation_effects, fisher_z_variance


# ------------------------------------------------------------ normalization
@pytest.mark.parametrize(
    "method, expected",
    [
        ("minimize", [1, 2, 2, 3, 4]),
        ("floor", [1, 2, 2, 4, 5]),
        ("ceiling", [1, 3, 3, 4, 5]),
        ("middle", [1, 2.5, 2.5, 4, 5]),
    ],
)
def test_normalize_ranks_all_four(method, expected):
    for ranks in ([1, 2, 2, 3, 4], [1, 3, 3, 4, 5], [10, 20, 20, 21, 99]):
        assert normalize_ranks(ranks, method).tolist() == expected
    padded = normalize_ranks([[1, 2, 2, 3, 4, np.nan]], method)
    assert padded[0, :5].tolist() == expected and np.isnan(padded[0, 5])


def test_normalize_ranks_rejects_unknown_method():
    with pytest.raises(metaeval.OptionError, match="`ties` must be one of"):
        normalize_ranks([1, 2], "average")


# --------------------------------------------------------------- Kendall tau
def test_kendall_tau_hand_example_with_ties_on_both_sides():
    # pairs: (a,b) C; (a,c) C; (a,d) C; (b,c) human-ordered, predicted tie -> D; (b,d) C;
    # (c,d) human tie -> left out
    res = kendall_tau([1, 2, 2, 4], [1, 2, 3, 3])
    assert (res.concordant, res.discordant, res.human_ties, res.predicted_ties) == (4, 1, 1, 1)
    assert res.tau == pytest.approx(3 / 5) and res.pairs == 6 and res.items == 4
    kept = kendall_tau([1, 2, 2, 4], [1, 2, 3, 3], penalize_predicted_ties=False)
    assert (kept.concordant, kept.discordant, kept.tau) == (4, 0, 1.0)
    counted = kendall_tau([1, 2, 2, 4], [1, 2, 3, 3], exclude_human_ties=False)
    # the human tie (c,d) is predicted as ordered -> discordant
    assert (counted.concordant, counted.discordant) == (4, 2)
    both_tied = kendall_tau([1, 2, 3, 3], [1, 2, 3, 3], exclude_human_ties=False)
    assert (both_tied.concordant, both_tied.discordant) == (6, 0)


def test_kendall_tau_segment_of_two_and_invert():
    assert kendall_tau([1, 2], [1, 2]).tau == 1.0
    assert kendall_tau([2, 1], [1, 2]).tau == -1.0
    assert kendall_tau([1, 1], [1, 2]).tau == -1.0  # a predicted tie is discordant
    assert kendall_tau([2, 1], [1, 2], invert=True).tau == 1.0  # human scores, higher is better
    with pytest.warns(metaeval.DegenerateWarning, match="no pair of items the humans ordered"):
        assert math.isnan(kendall_tau([1, 2], [1, 1]).tau)


def test_kendall_tau_p_value_formula_and_scipy_without_ties(rng):
    for n in (2, 5, 9, 30):
        human = np.arange(1, n + 1)
        predicted = rng.permutation(n) + 1
        res = kendall_tau(predicted, human)
        z = res.tau / math.sqrt((4 * n + 10) / (9 * n * (n - 1)))
        assert res.p_value == pytest.approx(math.erfc(abs(z) / math.sqrt(2)), rel=1e-12)
        if n > 2:  # scipy's asymptotic variant divides by zero for n = 2
            ref = stats.kendalltau(predicted, human, method="asymptotic")
            assert res.tau == pytest.approx(ref.statistic, abs=1e-14)
            assert res.p_value == pytest.approx(ref.pvalue, rel=1e-10)


def test_kendall_tau_vectorized_equals_one_segment_at_a_time(rng):
    predicted = rng.integers(1, 4, size=(50, 6)).astype(float)
    human = rng.integers(1, 5, size=(50, 6)).astype(float)
    width = rng.integers(2, 7, size=50)
    for i, w in enumerate(width):  # ragged segments, padded with NaN
        predicted[i, w:] = human[i, w:] = np.nan
    human[:, :2] = [1, 2]  # every segment has an ordered pair
    many = kendall_tau(predicted, human).to_frame()
    for i, w in enumerate(width):
        one = kendall_tau(predicted[i, :w], human[i, :w])
        assert many.loc[i, "tau"] == one.tau and many.loc[i, "items"] == w
        assert many.loc[i, "p_value"] == one.p_value


def test_kendall_tau_set_micro_and_macro_keep_zero_segments():
    predicted = [[1, 2, 3], [2, 1, 3], [1, 3, 2, 4]]
    human = [[1, 2, 3], [1, 2, 3], [2, 1, 4, 3]]
    padded_p = np.array([p + [np.nan] * (4 - len(p)) for p in predicted], dtype=float)
    padded_h = np.array([h + [np.nan] * (4 - len(h)) for h in human], dtype=float)
    res = kendall_tau_set(padded_p, padded_h)
    # segments: (C, D) = (3, 0), tau 1; (2, 1), tau 1/3; the third orders (a,c), (a,d), (b,d)
    # as the humans do and (a,b), (b,c), (c,d) the other way: (3, 3), tau 0
    third = kendall_tau([1, 3, 2, 4], [2, 1, 4, 3])
    assert (third.concordant, third.discordant, third.tau) == (3, 3, 0.0)
    assert res["concordant"] == 3 + 2 + 3 and res["discordant"] == 0 + 1 + 3
    assert res["micro_tau"] == pytest.approx((8 - 4) / 12)
    assert res["macro_tau"] == pytest.approx((1 + 1 / 3 + 0) / 3)  # the tau = 0 segment counts
    zero = kendall_tau_set([[1, 2], [2, 1], [1, 2, 3]], [[1, 2], [1, 2], [1, 3, 2]])
    # taus 1, -1 and 1/3: the macro mean keeps every segment (RankEval would drop a tau of 0)
    assert zero["macro_tau"] == pytest.approx((1 - 1 + 1 / 3) / 3)


# --------------------------------------------------------- FARR, nDCG, ERR
def test_reciprocal_rank_and_best_human_rank_with_ties():
    assert reciprocal_rank([2, 1, 3], [1, 2, 3]) == 0.5
    assert (
        reciprocal_rank([1, 1, 2], [1, 2, 3]) == 0.5
    )  # ceiling: a two-way tie for first is rank 2
    assert reciprocal_rank([1, 1, 2], [1, 2, 3], ties="floor") == 1.0
    assert reciprocal_rank([3, 1, 2], [1, 1, 2]) == 1.0  # humans tie two items for best
    assert best_human_rank([2, 1, 3], [1, 2, 3]) == 2
    assert best_human_rank([1, 1, 3], [1, 3, 3], ties="ceiling") == 3  # the worst of the tied
    bph = best_predicted_vs_human([[1, 2, 3], [2, 1, 3], [3, 1, 2], [1, 2, 3]], [[1, 2, 3]] * 4)
    # the predicted-best items have human ranks 1, 2, 2, 1
    assert bph["human_rank"].tolist() == [1, 2] and bph["segments"].tolist() == [2, 2]
    assert bph["share"].tolist() == [0.5, 0.5] and bph.attrs["mean_human_rank"] == 1.5


def test_ndcg_from_human_ranks_uses_rankeval_gains():
    # n = 3: grades l = 3, 2, 1 for human ranks 1, 2, 3; gains 2^l - 1 = 7, 3, 1
    predicted, human = [2, 1, 3], [1, 2, 3]
    dcg = 3 / math.log2(2) + 7 / math.log2(3) + 1 / math.log2(4)
    ideal = 7 / math.log2(2) + 3 / math.log2(3) + 1 / math.log2(4)
    assert ndcg(predicted, human) == pytest.approx(dcg / ideal, rel=1e-14)
    assert ndcg(predicted, human, k=1) == pytest.approx(3 / 7, rel=1e-14)
    lin = (2 / 1 + 3 / math.log2(3) + 1 / 2) / (3 + 2 / math.log2(3) + 1 / 2)
    assert ndcg(predicted, human, gain="linear") == pytest.approx(lin, rel=1e-14)
    # a predicted tie is ordered pessimistically: [1, 1, 3] puts the human-second item first
    assert ndcg([1, 1, 3], human) == pytest.approx(dcg / ideal, rel=1e-14)


def test_ndcg_from_relevance_equals_sklearn_and_ir_measures(rng):
    from sklearn.metrics import ndcg_score

    rel = rng.integers(0, 4, size=(20, 7)).astype(float)
    rel[:, 0] = 3  # an item with gain in every segment
    scores = rng.random((20, 7))  # no ties
    predicted = stats.rankdata(-scores, axis=1)
    mine = ndcg(predicted, relevance=rel, k=5)
    for i in range(20):
        expected = ndcg_score([2.0 ** rel[i] - 1], [scores[i]], k=5)
        assert mine[i] == pytest.approx(expected, rel=1e-12)
    linear = ndcg(predicted, relevance=rel, gain="linear")
    import ir_measures

    qrels = [
        ir_measures.Qrel(f"q{i}", f"d{j}", int(rel[i, j])) for i in range(20) for j in range(7)
    ]
    run = [
        ir_measures.ScoredDoc(f"q{i}", f"d{j}", float(scores[i, j]))
        for i in range(20)
        for j in range(7)
    ]
    ref = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.nDCG], qrels, run)}
    for i in range(20):
        assert linear[i] == pytest.approx(ref[f"q{i}"], rel=1e-12)


def _err_loop(grades: list[float], top: float) -> float:
    value, reach = 0.0, 1.0
    for r, g in enumerate(grades, start=1):
        stop = (2**g - 1) / 2**top
        value += reach * stop / r
        reach *= 1 - stop
    return value


def test_err_by_hand_and_by_loop(rng):
    assert err([1, 2], relevance=[1, 0]) == 0.5
    # human ranks, n = 3: R = 7/8, 3/8, 1/8 for human ranks 1, 2, 3
    by_hand = 3 / 8 + (1 - 3 / 8) * (7 / 8) / 2 + (1 - 3 / 8) * (1 - 7 / 8) * (1 / 8) / 3
    assert err([2, 1, 3], [1, 2, 3]) == pytest.approx(by_hand, rel=1e-14)
    rel = rng.integers(0, 5, size=(30, 6)).astype(float)
    predicted = np.argsort(np.argsort(rng.random((30, 6)), axis=1), axis=1) + 1.0
    mine = err(predicted, relevance=rel, k=4)
    for i in range(30):
        order = np.argsort(predicted[i])
        assert mine[i] == pytest.approx(_err_loop(rel[i, order][:4].tolist(), rel.max()), rel=1e-13)


def test_measures_reject_bad_input():
    with pytest.raises(metaeval.OptionError, match="exactly one of"):
        ndcg([1, 2], [1, 2], relevance=[1, 0])
    with pytest.raises(metaeval.SchemaError, match="same shape"):
        kendall_tau([1, 2, 3], [1, 2])
    with pytest.raises(metaeval.SchemaError, match="ranked by one side only"):
        kendall_tau([1, np.nan], [1, 2])
    with pytest.raises(metaeval.OptionError, match="`k` must be a positive integer"):
        err([1, 2], [1, 2], k=0)


# ------------------------------------------------------------ segment_scores
@pytest.fixture
def judgments(rng) -> pd.DataFrame:
    rows = []
    for task in ("wmt12", "wmt13"):
        for s in range(25):
            items = int(rng.integers(2, 6))
            human = rng.integers(1, items + 1, size=items)
            human[0], human[-1] = 1, items  # at least one ordered pair
            for system, noise in (("good", 0.5), ("bad", 3.0)):
                predicted = stats.rankdata(human + rng.normal(0, noise, items), method="min")
                for i in range(items):
                    rows.append((task, f"s{s}", system, f"i{i}", human[i], predicted[i]))
    return pd.DataFrame(
        rows, columns=["task", "segment", "system", "item", "human_rank", "predicted_rank"]
    )


def test_segment_scores_equal_the_segment_functions(judgments):
    measures = ["kendall_tau", "reciprocal_rank", "ndcg", "ndcg@2", "err", "best_human_rank"]
    scores = segment_scores(judgments, measures)
    metaeval.validate_scores(scores)
    assert scores["metric"].unique().tolist() == measures
    for (task, seg, system), part in judgments.groupby(["task", "segment", "system"]):
        p, h = part["predicted_rank"].to_numpy(float), part["human_rank"].to_numpy(float)
        hit = (scores["task"] == task) & (scores["query"] == seg) & (scores["system"] == system)
        got = scores[hit].set_index("metric")["value"]
        assert got["kendall_tau"] == kendall_tau(p, h).tau
        assert got["reciprocal_rank"] == reciprocal_rank(p, h)
        assert got["ndcg"] == pytest.approx(ndcg(p, h), rel=1e-15)
        assert got["ndcg@2"] == pytest.approx(ndcg(p, h, k=2), rel=1e-15)
        assert got["err"] == pytest.approx(err(p, h), rel=1e-15)
        assert got["best_human_rank"] == best_human_rank(p, h)


def test_segment_scores_flow_into_effects_and_pool(judgments):
    scores = segment_scores(judgments, ["kendall_tau", "ndcg"])
    effects = scores.meta.effects(control="bad", effect="md")
    pooled = effects.meta.pool(method="REML")
    assert len(effects) == 4 and set(pooled["metric"]) == {"kendall_tau", "ndcg"}
    assert (pooled["effect"] > 0).all()  # the less noisy ranker agrees better with humans


def test_segment_scores_errors_and_undefined_tau(judgments):
    with pytest.raises(metaeval.SchemaError, match=r"lacks the column\(s\) \['item'\]"):
        segment_scores(judgments.drop(columns="item"))
    with pytest.raises(metaeval.SchemaError, match="ranked twice"):
        segment_scores(pd.concat([judgments, judgments.head(1)]))
    bad = judgments.copy()
    bad.loc[bad.index[0], "human_rank"] = 99
    with pytest.raises(metaeval.SchemaError, match="Human ranks differ between systems"):
        segment_scores(bad)
    bad = judgments.copy()
    bad.loc[bad.index[3], "predicted_rank"] = np.nan
    with pytest.raises(metaeval.SchemaError, match="'predicted_rank' has 1 missing"):
        segment_scores(bad)
    with pytest.raises(metaeval.OptionError, match="is not a ranking measure"):
        segment_scores(judgments, ["kendall_tau@3"])
    tied = pd.DataFrame(
        {
            "task": "t",
            "segment": "s",
            "system": ["a", "a"],
            "item": ["x", "y"],
            "human_rank": [1, 1],
            "predicted_rank": [1, 2],
        }
    )
    with pytest.warns(metaeval.DegenerateWarning, match="kendall_tau is undefined"):
        out = segment_scores(tied, ["kendall_tau", "reciprocal_rank"])
    assert out["metric"].tolist() == ["reciprocal_rank"]


# --------------------------------------------------- correlation meta-evaluation
def test_fisher_z_variance():
    assert fisher_z_variance(13) == pytest.approx(0.1)
    assert fisher_z_variance(13, "spearman") == pytest.approx(0.106)
    assert fisher_z_variance(14, "kendall") == pytest.approx(0.0437)
    assert np.isnan(fisher_z_variance([3, 4], "kendall")).all()


def test_pearson_correlation_effects_equal_effects_corr():
    scores = metaeval.load_example().query("metric == 'p_true_class'")
    mine = correlation_effects(scores, "logistic_regression")
    ref = scores.meta.effects(control="logistic_regression", effect="corr")
    merged = mine.merge(ref, on=["metric", "treatment", "control", "task"], suffixes=("", "_ref"))
    assert len(merged) == len(ref) == 16
    np.testing.assert_allclose(merged["effect"], merged["effect_ref"], rtol=1e-10)
    np.testing.assert_allclose(merged["variance"], merged["variance_ref"], rtol=1e-12)
    np.testing.assert_allclose(merged["r_ci_low"], merged["r_ci_low_ref"], rtol=1e-10)


@NARROW_KH
@pytest.mark.parametrize("method", ["spearman", "kendall"])
def test_rank_correlation_effects_equal_scipy(method):
    scores = metaeval.load_example().query("metric == 'p_true_class'")
    eff = correlation_effects(scores, "logistic_regression", correlation=method)
    wide = scores.pivot_table(index=["task", "query"], columns="system", values="value")
    fn = stats.spearmanr if method == "spearman" else stats.kendalltau
    for row in eff.itertuples():
        part = wide.loc[row.task]
        expected = fn(part[row.treatment], part["logistic_regression"]).statistic
        assert row.r == pytest.approx(expected, abs=1e-12)
        assert row.variance == pytest.approx(fisher_z_variance(row.n, method), rel=1e-15)
    pooled = eff.meta.pool()
    assert {"r", "r_ci_low", "r_ci_high"} <= set(pooled.columns)


@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_difference_of_dependent_correlations_variance_by_simulation(method):
    # metrics A and B correlate 0.6 and 0.4 with humans and 0.5 with each other; the
    # spread of z_A - z_B over simulated test sets must match the effects' variance
    rng = np.random.default_rng(7)
    cov = np.array([[1, 0.6, 0.4], [0.6, 1, 0.5], [0.4, 0.5, 1]])
    n, reps = 60, 1500
    draws = rng.multivariate_normal(np.zeros(3), cov, size=(reps, n))
    frame = pd.DataFrame(
        {
            "task": np.repeat([f"t{i}" for i in range(reps)], n * 3),
            "query": np.tile(np.repeat([f"q{j}" for j in range(n)], 3), reps),
            "system": np.tile(["human", "A", "B"], reps * n),
            "metric": "m",
            "value": draws.reshape(-1),
        }
    )
    eff = correlation_effects(frame, "B", reference="human", treatment="A", correlation=method)
    assert (eff["effect_type"] == "corr_diff").all() and (eff["reference"] == "human").all()
    empirical = eff["effect"].var(ddof=1)
    predicted = eff["variance"].mean()
    assert empirical == pytest.approx(predicted, rel=0.12)
    naive = fisher_z_variance(n, method) * 2  # as if the two correlations were independent
    assert predicted < 0.8 * naive
    pooled = eff.head(20).meta.pool()
    assert pooled.loc[0, "k"] == 20


def test_correlation_effects_errors():
    scores = metaeval.load_example().query("metric == 'accuracy' and task == 'iris'")
    with pytest.raises(metaeval.PairingError, match=r"\['nope'\] are not in the scores table"):
        correlation_effects(scores, "nope")
    with pytest.raises(metaeval.OptionError, match="pearson and spearman only"):
        correlation_effects(scores, "naive_bayes", reference="knn", correlation="kendall")
    with pytest.raises(metaeval.OptionError, match="`correlation` must be one of"):
        correlation_effects(scores, "knn", correlation="distance")
    constant = scores.assign(value=np.where(scores["system"] == "knn", 1.0, scores["value"]))
    with pytest.warns(metaeval.DegenerateWarning, match="correlation effect"):
        eff = correlation_effects(constant, "knn")
    assert eff["effect"].isna().all()


def test_accessor_methods_call_the_module_functions():
    scores = metaeval.load_example()
    pd.testing.assert_frame_equal(
        scores.meta.leaderboard(aggregation="copeland"),
        metaeval.leaderboard(scores, aggregation="copeland"),
    )
    part = scores.query("metric == 'p_true_class'")
    pd.testing.assert_frame_equal(
        part.meta.correlation_effects("knn", correlation="kendall"),
        correlation_effects(part, "knn", correlation="kendall"),
    )
    effects = part.meta.effects(control="knn")
    with pytest.raises(metaeval.TableKindError, match="leaderboard"):
        effects.meta.leaderboard()

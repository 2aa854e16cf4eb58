"""Tests of metaeval.measures.lists.list_measures."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from metaeval.errors import OptionError, SchemaError
from metaeval.measures.lists import LIST_MEASURES, list_measures

log2 = math.log2


def test_notes_worked_example():
    """The P@k / AP@k / nDCG@k example of the notes (004, section "Ranking")."""
    out = list_measures([[1, 0, 1, 0, 1], [0, 0, 1, 1, 0]], k=5)
    assert list(out.columns) == list(LIST_MEASURES)
    assert out["p_at_k"].tolist() == [3 / 5, 2 / 5]
    assert out["p_at_k"].mean() == 0.5
    ap = [(1 + 2 / 3 + 3 / 5) / 3, (1 / 3 + 1 / 2) / 2]
    np.testing.assert_allclose(out["ap_at_k"], ap, rtol=1e-15)
    assert out["ap_at_k"].round(3).tolist() == [0.756, 0.417]
    # MAP@5: the notes' 0.587 is the mean of the *rounded* APs, (0.756 + 0.417) / 2 = 0.5865,
    # rounded half up; the exact mean is 0.58611...
    assert out["ap_at_k"].round(3).mean() == pytest.approx(0.5865, abs=1e-12)
    assert out["ap_at_k"].mean() == pytest.approx(np.mean(ap), rel=1e-15)
    assert round(out["ap_at_k"].mean(), 4) == 0.5861
    dcg = [1 + 1 / log2(4) + 1 / log2(6), 1 / log2(4) + 1 / log2(5)]
    idcg = [1 + 1 / log2(3) + 1 / log2(4), 1 + 1 / log2(3)]
    np.testing.assert_allclose(out["ndcg_at_k"], np.divide(dcg, idcg), rtol=1e-15)
    np.testing.assert_allclose(out["ndcg_at_k_exp"], np.divide(dcg, idcg), rtol=1e-15)
    assert out["rr"].tolist() == [1.0, 1 / 3]


def test_graded_relevance_by_hand():
    # the grade-1 item at rank 4 is past k but enters the ideal ranking's top 3
    out = list_measures([[2, 0, 3, 1]], k=3).iloc[0]
    assert out["p_at_k"] == pytest.approx(2 / 3)
    assert out["ap_at_k"] == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert out["rr"] == 1.0
    dcg, idcg = 2 + 0 + 3 / log2(4), 3 + 2 / log2(3) + 1 / log2(4)
    assert out["ndcg_at_k"] == pytest.approx(dcg / idcg, rel=1e-14)
    dcg_exp, idcg_exp = 3 + 0 + 7 / log2(4), 7 + 3 / log2(3) + 1 / log2(4)
    assert out["ndcg_at_k_exp"] == pytest.approx(dcg_exp / idcg_exp, rel=1e-14)
    assert out["ndcg_at_k"] != pytest.approx(out["ndcg_at_k_exp"])


def test_k_larger_than_list():
    out = list_measures([[0, 2]], k=5).iloc[0]
    assert out["p_at_k"] == 1 / 5  # missing positions count as not relevant
    assert out["ap_at_k"] == 1 / 2
    assert out["rr"] == 1 / 2
    assert out["ndcg_at_k"] == pytest.approx((2 / log2(3)) / 2, rel=1e-15)


def test_list_without_relevant_items():
    out = list_measures([[0, 0, 0], []], k=2)
    assert (out.to_numpy() == 0.0).all()


def test_rr_looks_past_k():
    out = list_measures([[0, 0, 0, 1]], k=2).iloc[0]
    assert out["rr"] == 1 / 4 and out["p_at_k"] == 0.0 and out["ap_at_k"] == 0.0


def test_ragged_padded_and_series_agree():
    ragged = [[1, 0, 2], [0, 1], [3], [0, 0, 0, 1]]
    padded = np.full((4, 4), np.nan)
    for i, row in enumerate(ragged):
        padded[i, : len(row)] = row
    series = pd.Series(ragged, index=pd.Index(["q1", "q2", "q3", "q4"], name="query"))
    expected = pd.DataFrame(
        {
            "p_at_k": [2 / 3, 1 / 3, 1 / 3, 0.0],
            "ap_at_k": [(1 + 2 / 3) / 2, 1 / 2, 1.0, 0.0],
            "rr": [1.0, 1 / 2, 1.0, 1 / 4],
        }
    )
    from_ragged = list_measures(ragged, k=3)
    pd.testing.assert_frame_equal(from_ragged[["p_at_k", "ap_at_k", "rr"]], expected)
    pd.testing.assert_frame_equal(list_measures(padded, k=3), from_ragged)
    from_series = list_measures(series, k=3)
    assert from_series.index.equals(series.index) and from_series.index.name == "query"
    np.testing.assert_array_equal(from_series.to_numpy(), from_ragged.to_numpy())
    frame = pd.DataFrame(padded, index=series.index)
    pd.testing.assert_frame_equal(list_measures(frame, k=3), from_series)


def test_ap_differs_from_ir_measures():
    """Textbook AP@k divides by the relevant items retrieved; trec_eval by all relevant ones."""
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import AP, RR, P

    grades = [1, 0, 1, 0, 1]  # d1..d5 in ranked order; d6 is relevant but not retrieved
    qrels = {"q1": {f"d{i + 1}": g for i, g in enumerate(grades)} | {"d6": 1}}
    run = {"q1": {f"d{i + 1}": float(5 - i) for i in range(5)}}
    theirs = ir_measures.calc_aggregate([AP @ 5, P @ 5, RR], qrels, run)
    per_query = {m.measure: m.value for m in ir_measures.iter_calc([AP @ 5], qrels, run)}
    assert per_query[AP @ 5] == pytest.approx(theirs[AP @ 5], rel=1e-15)
    ours = list_measures([grades], k=5).iloc[0]
    precision_sum = 1 + 2 / 3 + 3 / 5
    assert theirs[AP @ 5] == pytest.approx(precision_sum / 4, rel=1e-12)
    assert ours["ap_at_k"] == pytest.approx(precision_sum / 3, rel=1e-15)
    assert ours["ap_at_k"] - theirs[AP @ 5] == pytest.approx(precision_sum * (1 / 3 - 1 / 4))
    # the measures that only look at the returned list agree
    assert ours["p_at_k"] == pytest.approx(theirs[P @ 5], rel=1e-12)
    assert ours["rr"] == pytest.approx(theirs[RR], rel=1e-12)


def test_gain_option():
    lists = [[2, 3, 0], [1, 0, 2]]
    exp = list_measures(lists, k=3, gain="exponential")
    np.testing.assert_array_equal(exp["ndcg_at_k"], exp["ndcg_at_k_exp"])
    linear = list_measures(lists, k=3)
    same = list_measures(lists, k=3, gain=lambda g: 1.0 * g)
    pd.testing.assert_frame_equal(same, linear)
    assert not np.allclose(linear["ndcg_at_k"], linear["ndcg_at_k_exp"])


@pytest.mark.parametrize("k", [0, -1, 2.5, True, "3", None])
def test_invalid_k(k):
    with pytest.raises(OptionError, match=r"`k` must be a positive integer"):
        list_measures([[1, 0]], k=k)


@pytest.mark.parametrize(
    ("lists", "kwargs", "error", "match"),
    [
        ([[1, 0], [0, -1]], {}, SchemaError, r"a negative grade at 1 position: list 1 rank 2"),
        ([[1, np.inf]], {}, SchemaError, r"an infinite grade at 1 position: list 0 rank 2"),
        (np.array([[1, np.nan, 1]]), {}, SchemaError, r"missing grade .* list 0 rank 2"),
        (pd.Series({"q7": [0, -2]}), {}, SchemaError, r"list 'q7' rank 2 \(-2.0\)"),
        ([["a", "b"]], {}, SchemaError, r"List 0 has non-numeric grades"),
        ([1, 0, 1], {}, SchemaError, r"List 0 is 1, not a sequence of grades"),
        (np.array([1, 0, 1]), {}, SchemaError, r"must be 2-D"),
        ("101", {}, SchemaError, r"must be a sequence of lists"),
        ([[1, 0]], {"gain": "log"}, OptionError, r"`gain` must be one of"),
        ([[1, 0]], {"gain": lambda g: g - 3}, OptionError, r"finite gains >= 0"),
    ],
)
def test_invalid_input(lists, kwargs, error, match):
    with pytest.raises(error, match=match):
        list_measures(lists, k=2, **kwargs)


def test_trailing_nan_is_padding():
    out = list_measures([[1, 0, float("nan")]], k=3)
    pd.testing.assert_frame_equal(out, list_measures([[1, 0]], k=3))


@given(
    st.lists(st.lists(st.integers(0, 3), min_size=0, max_size=8), min_size=1, max_size=6),
    st.integers(1, 10),
)
def test_invariants(lists, k):
    out = list_measures(lists, k=k)
    assert ((out >= 0) & (out <= 1 + 1e-12)).all().all()
    ideal = list_measures([sorted(g, reverse=True) for g in lists], k=k)
    has_relevant = np.array([max(g, default=0) > 0 for g in lists])
    np.testing.assert_allclose(ideal["ndcg_at_k"], has_relevant.astype(float), rtol=1e-12)
    np.testing.assert_allclose(ideal["ndcg_at_k_exp"], has_relevant.astype(float), rtol=1e-12)
    # shuffling the lists permutes the rows and changes nothing else
    order = np.arange(len(lists))[::-1]
    shuffled = list_measures([lists[i] for i in order], k=k)
    np.testing.assert_array_equal(shuffled.to_numpy(), out.to_numpy()[order])

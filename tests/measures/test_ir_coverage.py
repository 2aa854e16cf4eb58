"""metaeval.ir.evaluate and judged queries a run does not return: missing=, min_coverage=.

Reference values come from ir_measures itself, called here on the runs, independently
of the filling and dropping metaeval does.
"""

from __future__ import annotations

import re
import warnings

import metaeval.ir
import numpy as np
import pandas as pd
import pytest

from metaeval import OptionError, PairingError, PairingWarning
from metaeval import io as mio

ir_measures = pytest.importorskip("ir_measures")


def _reference(qrels: pd.DataFrame, run: pd.DataFrame, measure) -> dict[str, float]:
    """ir_measures' per-query values of the queries the run returned."""
    returned = set(run["query_id"])
    return {
        m.query_id: m.value
        for m in ir_measures.iter_calc([measure], qrels, run)
        if m.query_id in returned
    }


def _one_warning(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    assert [w.category for w in caught] == [PairingWarning], [str(w.message) for w in caught]
    return result, caught[0].message


# ------------------------------------------------------------ small, self-made
QRELS = pd.DataFrame(
    {
        "query_id": ["q1", "q1", "q2", "q3", "q4"],
        "doc_id": ["d1", "d2", "d3", "d4", "d5"],
        "relevance": [1, 0, 2, 1, 1],
    }
)
# returns q1 (d1 relevant at rank 1), q2 (d3 at rank 2), q3 (d4 at rank 1); not q4
RUN = pd.DataFrame(
    {
        "query_id": ["q1", "q1", "q2", "q2", "q3"],
        "doc_id": ["d1", "d2", "d9", "d3", "d4"],
        "score": [2.0, 1.0, 2.0, 1.0, 1.0],
    }
)


def test_zero_drop_and_error_on_a_small_run():
    rr = ir_measures.RR
    ref = _reference(QRELS, RUN, rr)
    assert ref == {"q1": 1.0, "q2": 0.5, "q3": 1.0}  # by hand: reciprocal ranks 1, 1/2, 1
    # zero: the mean over all 4 judged queries, q4 scoring 0 (trec_eval -c)
    zero, message = _one_warning(lambda: metaeval.ir.evaluate(QRELS, {"s": RUN}, "RR", task="t"))
    assert zero.set_index("query")["value"].to_dict() == {**ref, "q4": 0.0}
    assert zero["value"].mean() == pytest.approx(sum(ref.values()) / 4, rel=1e-15)
    assert str(message).startswith(
        "Judged queries a run did not return score 0 (missing='zero', as trec_eval -c) in 1 run(s)"
    )
    assert "task='t', system='s', missing=1, judged=4, coverage=0.75" in str(message)
    pd.testing.assert_frame_equal(
        message.groups,
        pd.DataFrame(
            {"task": ["t"], "system": ["s"], "missing": [1], "judged": [4], "coverage": [0.75]}
        ),
    )
    # drop: the mean over the 3 queries it returned
    drop, message = _one_warning(
        lambda: metaeval.ir.evaluate(QRELS, {"s": RUN}, "RR", task="t", missing="drop")
    )
    assert drop.set_index("query")["value"].to_dict() == ref
    assert drop["value"].mean() == pytest.approx(np.mean(list(ref.values())), rel=1e-15)
    assert "were left out (missing='drop') in 1 run(s)" in str(message)
    assert "system='s', missing=1, judged=4, coverage=0.75" in str(message)
    # error: refused, naming task, system, the run's kind and the coverage
    with pytest.raises(PairingError) as err:
        metaeval.ir.evaluate(QRELS, {"s": RUN}, "RR", task="t", missing="error")
    assert str(err.value) == (
        "Task 't', system 's' (a run passed as DataFrame): the run returns 3 of the 4 judged "
        "queries (coverage 75.0%); it lacks 1, e.g. ['q4']. missing='error' refuses that; pass "
        "missing='zero' to score them 0 (as trec_eval -c) or missing='drop' to leave them out."
    )
    # a complete run: no warning, no error, whatever `missing` says
    full = pd.concat([RUN, pd.DataFrame({"query_id": ["q4"], "doc_id": ["d5"], "score": [1.0]})])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for how in ("zero", "drop", "error"):
            metaeval.ir.evaluate(QRELS, {"s": full}, "RR", task="t", missing=how)


def test_min_coverage_is_a_floor_for_every_missing_choice(tmp_path):
    one = RUN[RUN["query_id"] == "q1"]  # 1 of 4 judged queries: coverage 0.25
    path = tmp_path / "one.run"
    mio.write_run(one, path)
    for how in ("zero", "drop", "error"):
        with pytest.raises(PairingError) as err:
            metaeval.ir.evaluate(QRELS, {"bm25": path}, "RR", task="t", missing=how)
        message = str(err.value)
        assert message.startswith(
            f"Task 't', system 'bm25' (run file {str(path)!r}): the run returns 1 of the 4 judged "
            "queries (coverage 25.0%); it lacks 3, e.g. ['q2', 'q3', 'q4']. That is below "
            "min_coverage=0.5"
        )
        assert "lower min_coverage (0 turns the check off)" in message
    # at the floor it passes (3 of 4 = 0.75 >= 0.75); below it, not
    _one_warning(lambda: metaeval.ir.evaluate(QRELS, {"s": RUN}, "RR", task="t", min_coverage=0.75))
    with pytest.raises(PairingError, match=r"below min_coverage=0\.8"):
        metaeval.ir.evaluate(QRELS, {"s": RUN}, "RR", task="t", min_coverage=0.8)
    # min_coverage=0: scored, with the warning
    scores, message = _one_warning(
        lambda: metaeval.ir.evaluate(QRELS, {"bm25": path}, "RR", task="t", min_coverage=0)
    )
    assert scores["value"].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert "missing=3, judged=4, coverage=0.25" in str(message)
    for bad in (1.5, -0.1, True, "0.5", float("nan")):
        with pytest.raises(OptionError, match=re.escape(f"but {bad!r} was passed")):
            metaeval.ir.evaluate(QRELS, {"s": RUN}, "RR", task="t", min_coverage=bad)
    with pytest.raises(OptionError, match=r"`missing` must be one of \['zero', 'drop', 'error'\]"):
        metaeval.ir.evaluate(QRELS, {"s": RUN}, "RR", task="t", missing="ignore")


def test_the_warning_lists_every_short_run_of_every_task():
    runs = {"a": {"t": RUN, "u": RUN}, "b": {"t": RUN, "u": RUN[RUN["query_id"] != "q3"]}}
    scores, message = _one_warning(
        lambda: metaeval.ir.evaluate({"t": QRELS, "u": QRELS}, runs, "RR", min_coverage=0.5)
    )
    assert message.groups[["task", "system", "missing"]].values.tolist() == [
        ["t", "a", 1],
        ["t", "b", 1],
        ["u", "a", 1],
        ["u", "b", 2],
    ]
    assert "in 4 run(s)" in str(message)
    assert len(scores) == 4 * 4  # every judged query of every (task, system), zeros included


# ---------------------------------------------------------- the BEIR data of Ranger
@pytest.fixture
def beir(shared_data):
    return shared_data / "ranger" / "retrieval-colberter-data"


def test_trec_covid_run_truncated_to_half_its_queries(beir, tmp_path):
    qrels = mio.read_qrels(beir / "qrels" / "trec-covid_qrels.txt")
    run = mio.read_run(beir / "tasb_dim768_hf" / "trec-covid_top10.txt")
    assert qrels["query_id"].nunique() == 50 and run["query_id"].nunique() == 50
    kept = [str(i) for i in range(1, 26)]  # queries 1-25 of 1-50
    half = run[run["query_id"].isin(kept)]
    path = tmp_path / "tasb-half.run"
    mio.write_run(half, path)
    ndcg = ir_measures.nDCG @ 10
    ref = _reference(qrels, half, ndcg)
    assert len(ref) == 25
    full_mean = ir_measures.calc_aggregate([ndcg], qrels, run)[ndcg]

    complete = metaeval.ir.evaluate(qrels, {"tasb": run}, "nDCG@10", task="trec-covid")
    assert complete["value"].mean() == pytest.approx(full_mean, rel=1e-12)  # 0.4938
    zero, message = _one_warning(
        lambda: metaeval.ir.evaluate(qrels, {"tasb": path}, "nDCG@10", task="trec-covid")
    )
    assert "task='trec-covid', system='tasb', missing=25, judged=50, coverage=0.5" in str(message)
    assert len(zero) == 50
    assert zero["value"].mean() == pytest.approx(sum(ref.values()) / 50, rel=1e-12)  # 0.1970
    # ... which is ir_measures' (and trec_eval -c's) mean of the truncated run
    assert zero["value"].mean() == pytest.approx(
        ir_measures.calc_aggregate([ndcg], qrels, half)[ndcg], rel=1e-12
    )
    drop, message = _one_warning(
        lambda: metaeval.ir.evaluate(
            qrels, {"tasb": path}, "nDCG@10", task="trec-covid", missing="drop"
        )
    )
    assert "(missing='drop')" in str(message) and "missing=25, judged=50" in str(message)
    assert set(drop["query"]) == set(kept)
    assert drop["value"].mean() == pytest.approx(np.mean(list(ref.values())), rel=1e-12)  # 0.3939
    with pytest.raises(PairingError) as err:
        metaeval.ir.evaluate(qrels, {"tasb": path}, "nDCG@10", task="trec-covid", missing="error")
    assert str(err.value).startswith(
        f"Task 'trec-covid', system 'tasb' (run file {str(path)!r}): the run returns 25 of the 50 "
        "judged queries (coverage 50.0%); it lacks 25, e.g."
    )
    # one query fewer is below the default min_coverage of 0.5
    with pytest.raises(PairingError, match=r"returns 24 of the 50 .* below min_coverage=0\.5"):
        metaeval.ir.evaluate(
            qrels, {"tasb": half[half["query_id"] != kept[0]]}, "nDCG@10", task="trec-covid"
        )


def test_run_of_another_collection_that_shares_two_query_ids(beir):
    """TripClick's qrels with TREC-COVID's run: 2 of 1,143 ids in common, all scores 0."""
    qrels = beir / "qrels" / "tripclick_qrels.txt"
    run = beir / "tasb_dim768_hf" / "trec-covid_top10.txt"
    with pytest.raises(PairingError) as err:
        metaeval.ir.evaluate(qrels, {"tasb": run}, "nDCG@10", task="tripclick")
    message = str(err.value)
    assert message.startswith(
        f"Task 'tripclick', system 'tasb' (run file {str(run)!r}): the run returns 2 of the 1,143 "
        "judged queries (coverage 0.2%); it lacks 1,141, e.g."
    )
    assert "below min_coverage=0.5: are the run and the qrels of the same collection" in message
    with warnings.catch_warnings(record=True) as caught:  # the user insists
        warnings.simplefilter("always")
        scores = metaeval.ir.evaluate(
            qrels, {"tasb": run}, "nDCG@10", task="tripclick", min_coverage=0
        )
    lacking = [w.message for w in caught if "did not return" in str(w.message)]
    assert len(lacking) == 1 and "missing=1141, judged=1143, coverage=0.0017" in str(lacking[0])
    assert len(scores) == 1143

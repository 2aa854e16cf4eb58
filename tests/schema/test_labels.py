"""A scores table with a ``judge`` column (a table of labels, issue 41): mapped like the
other key columns, validated with the judge in the key, read from files, and refused with
a typed error by the functions that need one score per (task, query, system, metric)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import SchemaError
from metaeval.io import read_scores
from metaeval.schema import average_replicates

MULTI = "holds the labels of 2 judges"


@pytest.fixture
def graded() -> pd.DataFrame:
    """Two tasks × 6 questions × 2 systems, a human's 0/1 label and gpt's, right 5 times in 6."""
    rng = np.random.default_rng(0)
    rows = []
    for t in ("a", "b"):
        for q in range(6):
            for s in ("base", "new"):
                truth = int(rng.random() < 0.6)
                gpt = truth if rng.random() < 5 / 6 else 1 - truth
                for grader, label in (("gpt", gpt), ("human", truth)):
                    rows.append(
                        {
                            "dataset": t,
                            "qid": q,
                            "run": s,
                            "measure": "ok",
                            "grader": grader,
                            "label": label,
                        }
                    )
    return pd.DataFrame(rows)


def _mapped(frame: pd.DataFrame) -> pd.DataFrame:
    return metaeval.scores(
        frame,
        task="dataset",
        query="qid",
        system="run",
        metric="measure",
        value="label",
        judge="grader",
    )


def test_judge_is_mapped_like_a_key_and_joins_the_key(graded):
    before = graded.copy()
    table = _mapped(graded)
    pd.testing.assert_frame_equal(graded, before)  # the input is not changed
    assert list(table.columns) == ["task", "query", "system", "metric", "judge", "value"]
    assert table["query"].tolist()[:2] == ["0", "0"] and table["value"].dtype == np.float64
    assert sorted(table["judge"].unique()) == ["gpt", "human"]
    with pytest.raises(SchemaError, match=r"share their \(task, query, system, metric, judge\)"):
        _mapped(pd.concat([graded, graded.iloc[:1]], ignore_index=True))
    with pytest.raises(SchemaError, match="column 'judge' has missing values"):
        _mapped(graded.assign(grader=graded["grader"].where(graded.index > 0)))
    with pytest.raises(SchemaError, match="column 'judge' has empty"):
        _mapped(graded.assign(grader=graded["grader"].where(graded.index > 0, "")))
    with pytest.raises(SchemaError, match=r"column\(s\) \['rater'\] are not in the table"):
        metaeval.scores(
            graded,
            task="dataset",
            query="qid",
            system="run",
            metric="measure",
            value="label",
            judge="rater",
        )


def test_integer_judge_ids_become_strings_and_a_constant_judge_names_one(graded):
    ids = graded.assign(grader=graded["grader"].map({"gpt": 1, "human": 2}))
    assert sorted(_mapped(ids)["judge"].unique()) == ["1", "2"]
    human = graded[graded["grader"] == "human"].drop(columns="grader")
    one = metaeval.scores(
        human,
        task="dataset",
        query="qid",
        system="run",
        metric="measure",
        value="label",
        constants={"judge": "human"},
    )
    assert set(one["judge"]) == {"human"}


@pytest.mark.parametrize(
    "call",
    [
        lambda t: metaeval.means(t),
        lambda t: metaeval.effects(t, "base"),
        lambda t: metaeval.compare(t, "base"),
        lambda t: metaeval.rank_intervals(t, n_resamples=10, seed=0),
        lambda t: metaeval.ranking.friedman(t),
    ],
    ids=["means", "effects", "compare", "rank_intervals", "friedman"],
)
def test_the_statistics_refuse_several_judges_and_say_what_to_do(graded, call):
    table = _mapped(graded)
    with pytest.raises(SchemaError, match=MULTI) as err:
        call(table)
    assert "scores[scores['judge'] == 'gpt']" in str(err.value)
    assert "metaeval.agreement" in str(err.value)


def test_one_judge_is_an_extra_column(graded):
    table = _mapped(graded)
    gpt = table[table["judge"] == "gpt"]
    got = metaeval.means(gpt)
    want = metaeval.means(gpt.drop(columns="judge"))
    pd.testing.assert_frame_equal(got, want)


def test_replicates_are_averaged_per_judge(graded):
    table = _mapped(graded)
    runs = pd.concat([table.assign(replicate="1"), table.assign(replicate="2", value=1.0)])
    out = average_replicates(runs)
    assert len(out) == len(table)  # the judges stay apart
    np.testing.assert_allclose(out["value"], (table["value"].to_numpy() + 1.0) / 2)
    assert metaeval.validate_scores(runs) is not None  # a valid table of labels


def test_read_scores_reads_a_table_of_labels(graded, tmp_path):
    path = tmp_path / "labels.csv"
    graded.to_csv(path, index=False)
    mapping = {
        "task": "dataset",
        "query": "qid",
        "system": "run",
        "metric": "measure",
        "value": "label",
        "judge": "grader",
    }
    got = read_scores(path, columns=mapping)
    pd.testing.assert_frame_equal(
        got.reset_index(drop=True), _mapped(graded).reset_index(drop=True)
    )
    twice = tmp_path / "twice.csv"
    pd.concat([graded, graded.iloc[:2]]).to_csv(twice, index=False)
    with pytest.raises((SchemaError, metaeval.FormatError), match="judge"):
        read_scores(twice, columns=mapping)
    # the labels' statistics run on what was read
    errors = metaeval.judge_errors(got, "human", n_resamples=0)
    assert errors.table["n_gold"].tolist() == [12, 12]  # 6 questions x 2 systems

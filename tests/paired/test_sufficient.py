"""Sufficient statistics against a pandas merge/groupby computation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _helpers import make_scores

import metaeval
from metaeval import PairingError, PairingWarning
from metaeval.paired import _layout, sufficient


def _reference(scores: pd.DataFrame) -> pd.DataFrame:
    """All ordered pairs via a self-merge on (task, metric, query)."""
    both = scores.merge(scores, on=["task", "metric", "query"], suffixes=("_x", "_y"))
    both = both.rename(columns={"system_x": "treatment", "system_y": "control"})
    x, y = both["value_x"], both["value_y"]
    both = both.assign(one=1, xx=x * x, yy=y * y, xy=x * y)
    agg = both.groupby(["task", "metric", "treatment", "control"])[
        ["one", "value_x", "value_y", "xx", "yy", "xy"]
    ].sum()
    agg.columns = ["n", "sum_x", "sum_y", "sum_xx", "sum_yy", "sum_xy"]
    return agg


def _frame(ds) -> pd.DataFrame:
    frame = sufficient.raw_sums(ds).to_dataframe()
    return frame[frame["n"] > 0]


def test_all_pairs_match_merge(rng):
    scores = make_scores(rng, systems=("a", "b", "c", "d"), drop=0.1)
    with pytest.warns(PairingWarning):
        ds = metaeval.sufficient_statistics(scores)
    assert ds["n"].dims == ("task", "metric", "treatment", "control")
    ours = _frame(ds)
    ref = _reference(scores).reindex(ours.index)
    assert len(ours) == len(_reference(scores))
    np.testing.assert_array_equal(ours["n"], ref["n"])
    for col in ["sum_x", "sum_y", "sum_xx", "sum_yy", "sum_xy"]:
        np.testing.assert_allclose(ours[col], ref[col], rtol=1e-12, err_msg=col)


def test_counts_and_unpaired_warning(rng):
    scores = make_scores(rng, tasks={"t1": 10, "t2": 20}, metrics=("m",))
    gone = scores[
        (scores["system"] == "a")
        & (scores["task"] == "t2")
        & scores["query"].isin(["q1", "q5", "q7"])
    ]
    scores = scores.drop(gone.index)
    with pytest.warns(PairingWarning) as record:
        ds = metaeval.sufficient_statistics(scores, control="ctrl")
    msg = str(record[0].message)
    assert "left out of 1 (task, metric, treatment, control) group(s)" in msg
    assert (
        "task='t2', metric='m', treatment='a', control='ctrl', paired_queries=17, unpaired_queries=3"
        in msg
    )
    assert int(ds["n"].sel(task="t2", metric="m", treatment="a", control="ctrl")) == 17
    assert int(ds["n_treatment"].sel(task="t2", metric="m", treatment="a")) == 17
    assert int(ds["n_control"].sel(task="t2", metric="m", control="ctrl")) == 20


def _assert_same(got, expected):
    for name in ["n", "n_treatment", "n_control"]:
        np.testing.assert_array_equal(got[name], expected[name])
    for name in ["shift_treatment", "shift_control"]:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-13)
    raw_got, raw_expected = sufficient.raw_sums(got), sufficient.raw_sums(expected)
    for name in raw_expected.data_vars:
        np.testing.assert_allclose(raw_got[name], raw_expected[name], rtol=1e-12)
    # the shifted sums themselves are near 0; compare them on the scale of the raw ones
    for name in ["sum_x", "sum_xx", "sum_xy"]:
        scale = float(np.abs(raw_expected[name]).max())
        np.testing.assert_allclose(got[name], expected[name], rtol=0, atol=1e-13 * scale)


def test_chunking_and_sparse_paths_agree(rng, monkeypatch):
    scores = make_scores(rng, tasks={"t1": 300, "t2": 700, "t3": 20}, systems=("a", "b", "c"))
    expected = metaeval.sufficient_statistics(scores, control="a")
    monkeypatch.setattr(sufficient, "_CHUNK_BYTES", 1)  # one block per chunk
    _assert_same(metaeval.sufficient_statistics(scores, control="a"), expected)
    # query ids unique per task: ranked on the dense grid, or sorted when the grid is too big
    sparse = scores.assign(query=scores["task"] + ":" + scores["query"])
    for dense_ok in (True, False):
        monkeypatch.setattr(_layout, "_use_dense_grid", lambda cells, rows, ok=dense_ok: ok)
        _assert_same(metaeval.sufficient_statistics(sparse, control="a"), expected)


@pytest.mark.filterwarnings("ignore::metaeval.PairingWarning")
@pytest.mark.parametrize("chunk_bytes", [1, 120_000, 400_000])
def test_a_tasks_statistics_do_not_depend_on_the_other_tasks_to_the_last_bit(
    rng, monkeypatch, chunk_bytes
):
    # a dask partition holds some tasks: each must get the bits it gets in the whole table,
    # which needs chunks of row blocks that cut a task at the same places in both
    tasks = {"t1": 700, "t2": 1300, "t3": 90, "t4": 2600, "t5": 1}
    scores = make_scores(rng, tasks=tasks, systems=("a", "b", "c", "d"))
    gaps = scores["task"].isin(["t2", "t4"]) & (rng.random(len(scores)) < 0.05)
    scores = scores[~gaps]  # queries some systems lack in two tasks, none in the others
    monkeypatch.setattr(sufficient, "_CHUNK_BYTES", chunk_bytes)  # tasks over several chunks
    whole = metaeval.sufficient_statistics(scores, control="a")
    for task in tasks:
        alone = metaeval.sufficient_statistics(scores[scores["task"] == task], control="a")
        for name in whole.data_vars:
            np.testing.assert_array_equal(
                alone[name].values[0], whole[name].sel(task=task).values, err_msg=f"{task} {name}"
            )


def test_shifts_are_the_systems_means_over_shared_queries(rng):
    scores = make_scores(rng, drop=0.1)
    with pytest.warns(PairingWarning):
        ds = metaeval.sufficient_statistics(scores, control="ctrl")
    # the queries every system of the task has (for this metric)
    systems = scores.groupby(["task", "metric"])["system"].transform("nunique")
    per_query = scores.groupby(["task", "metric", "query"])["system"].transform("nunique")
    shared = scores[per_query == systems]
    means = shared.groupby(["task", "metric", "system"])["value"].mean()
    got = ds["shift_treatment"].to_series()
    np.testing.assert_allclose(got.to_numpy(), means.reindex(got.index).to_numpy(), rtol=1e-13)


def test_a_far_away_unpaired_query_does_not_hide_a_small_variance():
    # four paired queries near 1e6 with variance ~1, and one query of the treatment
    # alone far below: the shift no longer includes it, so r and d are found
    x = [1e6 + 0.1, 1e6 - 0.7, 1e6 + 1.3, 1e6 + 0.2, 0.123]
    y = [1e6 + 0.3, 1e6 - 0.2, 1e6 + 1.1, 1e6 - 0.4]
    scores = pd.DataFrame(
        {
            "task": "t",
            "query": [f"q{i}" for i in [*range(5), *range(4)]],
            "system": ["a"] * 5 + ["b"] * 4,
            "metric": "m",
            "value": x + y,
        }
    )
    with pytest.warns(PairingWarning):
        eff = scores.meta.effects(control="b", effect="corr")
    xs, ys = np.array(x[:4]) - 1e6, np.array(y) - 1e6
    assert eff["r"].iloc[0] == pytest.approx(np.corrcoef(xs, ys)[0, 1], rel=1e-8)


def test_row_strategies(rng):
    # shared query ids, complete: the query code is the row (no ranking)
    full = make_scores(rng, tasks={"t1": 300, "t2": 300})
    lay = _layout.layout(full)
    assert lay.values.shape[2] == 2 * 512
    # one task has few queries: the grid is sparse, so queries are ranked per task
    uneven = make_scores(rng, tasks={"t1": 1000, "t2": 10})
    assert _layout.layout(uneven).values.shape[2] == 1024 + 256


@pytest.mark.parametrize("compact_first", [False, True])
def test_categorical_and_string_keys_agree(rng, monkeypatch, compact_first):
    if compact_first:  # unused categories dropped before the scatter rather than after
        monkeypatch.setattr(_layout, "_COMPACT_SLACK", -(10**12))
    scores = make_scores(rng)
    cat = scores.astype({c: "category" for c in ["task", "query", "system", "metric"]})
    for col in ["system", "metric", "task"]:
        cat[col] = (
            cat[col]
            .cat.add_categories([f"unused_{col}"])
            .cat.reorder_categories([f"unused_{col}", *sorted(scores[col].unique())])
        )
    a = metaeval.sufficient_statistics(scores, control="ctrl")
    b = metaeval.sufficient_statistics(cat, control="ctrl")
    _assert_same(b, a)
    assert list(b["treatment"].values) == ["a", "b", "ctrl"]  # unused categories left out
    assert list(b["metric"].values) == ["m1", "m2"] and list(b["task"].values) == [
        "t1",
        "t2",
        "t3",
        "t4",
    ]


def test_category_order_is_kept(rng):
    scores = make_scores(rng)
    order = ["t4", "t1", "t3", "t2"]
    cat = scores.astype({"task": pd.CategoricalDtype(order)})
    assert list(metaeval.sufficient_statistics(cat, control="ctrl")["task"].values) == order
    assert list(metaeval.sufficient_statistics(scores, control="ctrl")["task"].values) == sorted(
        order
    )


def test_unknown_systems(scores):
    with pytest.raises(
        PairingError,
        match=r"control system\(s\) \['bm25'\] are not in the scores table; its systems are \['a', 'b', 'ctrl'\]",
    ):
        metaeval.sufficient_statistics(scores, control="bm25")
    with pytest.raises(PairingError, match="treatment"):
        metaeval.sufficient_statistics(scores, control="ctrl", treatment=["a", "zzz"])
    with pytest.raises(PairingError, match="twice"):
        metaeval.sufficient_statistics(scores, control=["a", "a"])


def test_a_tasks_sums_do_not_depend_on_the_memory_chunks(monkeypatch):
    """A task longer than a memory chunk was summed in pieces whose length followed the
    number of systems and metrics, so its statistics differed in the last bits between a
    table and its subset (issue 25, 17e). Pieces of a fixed length, added in order, make
    them the same for every chunk size."""
    import warnings

    import metaeval.paired.sufficient as sufficient

    rng = np.random.default_rng(5)
    frames = []
    for task, n in (("long", 9_000), ("short", 300)):
        for system in ("a", "b", "c"):
            keep = rng.random(n) > 0.05  # unpaired queries
            frames.append(
                pd.DataFrame(
                    {
                        "task": task,
                        "query": np.flatnonzero(keep).astype(str),
                        "system": system,
                        "metric": "m",
                        "value": rng.normal(0.5, 0.3, keep.sum()),
                    }
                )
            )
    scores = pd.concat(frames, ignore_index=True)
    results = []
    for chunk in (2**14, 2**17, sufficient._CHUNK_BYTES):
        monkeypatch.setattr(sufficient, "_CHUNK_BYTES", chunk)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", metaeval.MetaEvalWarning)
            results.append(metaeval.effects(scores, None, effect="md"))
    for other in results[1:]:
        for column in ("effect", "variance", "mean_treatment", "n"):
            assert np.array_equal(other[column], results[0][column]), column


def _layouts_equal(a: _layout.Layout, b: _layout.Layout) -> None:
    for name in ("values", "mask", "block_task", "counts", "shift", "scale"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    for name in ("tasks", "metrics", "systems"):
        assert list(getattr(a, name)) == list(getattr(b, name)), name


def test_pyarrow_python_and_object_strings_give_one_layout(rng):
    """Keys as pandas' pyarrow-backed ``str`` (encoded by pyarrow), Python strings and
    objects (encoded by pandas): the same layout, bit for bit, names in Python's order of
    strings — query ids past 1,000 with non-ASCII ones, a column of one value, a column
    in two pyarrow chunks."""
    pa = pytest.importorskip("pyarrow")
    ids = [f"q{i}" for i in range(1100)] + ["é", "Z", "ä", "z", "日本", "q\U0001f600", "Q"]
    scores = make_scores(rng, tasks={"t1": len(ids), "t2": 40}, drop=0.1)
    scores["query"] = np.array(ids, dtype=object)[scores["query"].str[1:].astype(int)]
    keys = ["task", "query", "system", "metric"]
    as_object = scores.astype(dict.fromkeys(keys, object))
    want = _layout.layout(as_object)
    assert list(want.tasks) == ["t1", "t2"]
    for dtype in ("str", object):  # the codes index names in Python's order of strings
        codes, names = _layout._codes(scores["query"].astype(dtype), sort=True)
        assert list(names) == sorted(set(scores["query"]))
        assert names[codes].tolist() == scores["query"].tolist()
    for dtype in ("str", "string[python]", "string[pyarrow]"):
        got = _layout.layout(scores.astype(dict.fromkeys(keys, dtype)))
        _layouts_equal(got, want)
    one_task = scores[scores["task"] == "t1"].reset_index(drop=True)
    _layouts_equal(
        _layout.layout(one_task.astype(dict.fromkeys(keys, "str"))),
        _layout.layout(one_task.astype(dict.fromkeys(keys, object))),
    )
    half = len(scores) // 2
    chunked = scores.assign(
        **{
            key: pd.arrays.ArrowStringArray(
                pa.chunked_array(
                    [
                        pa.array(scores[key].iloc[:half].tolist()),
                        pa.array(scores[key].iloc[half:].tolist()),
                    ]
                )
            )
            for key in keys
        }
    )
    assert chunked["query"].array.__arrow_array__().num_chunks == 2
    _layouts_equal(_layout.layout(chunked), want)


@pytest.mark.parametrize("dtype", ["str", "string[python]", object])
@pytest.mark.parametrize("column", ["task", "query", "system", "metric"])
@pytest.mark.parametrize("bad", [None, ""])
def test_a_missing_or_empty_key_gets_the_schema_report(rng, dtype, column, bad):
    """Keys checked as the layout encodes them, on their distinct values: the report of
    validate_scores, whichever the column, its dtype, and the row."""
    scores = make_scores(rng).astype(dict.fromkeys(["task", "query", "system", "metric"], dtype))
    for row in (0, len(scores) - 1, 7):  # the first and last rows: the one-value shortcut
        broken = scores.copy()
        broken.loc[row, column] = bad
        with pytest.raises(metaeval.SchemaError) as want:
            metaeval.validate_scores(broken)
        with pytest.raises(metaeval.SchemaError) as got:
            _layout.layout(broken)
        assert str(got.value) == str(want.value)
        assert "empty names" in str(got.value) if bad == "" else "missing" in str(got.value)
    one = scores[scores["task"] == "t1"].reset_index(drop=True)  # one task, one value but a row
    one.loc[len(one) - 1, "task"] = bad
    with pytest.raises(
        metaeval.SchemaError, match=f"column 'task' has {'empty' if bad == '' else 'missing'}"
    ):
        _layout.layout(one)

"""``.meta`` on dask DataFrames, on a real ``distributed.LocalCluster`` with worker processes:
the same effects and tests (bit for bit), warnings and errors as in memory, for any
partitioning."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from _helpers import make_scores, run_fresh
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

import metaeval
from metaeval import PairingError, SchemaError

pytestmark = pytest.mark.slow  # the inner loop: pytest -m 'not slow'

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def _split(df: pd.DataFrame, rng: np.random.Generator, parts: int):
    """``df`` in ``parts`` chunks of shuffled rows (tasks split across them), one empty."""
    rows = df.sample(frac=1, random_state=int(rng.integers(2**31))).reset_index(drop=True)
    cuts = np.sort(rng.choice(np.arange(1, len(rows)), parts - 2, replace=False))
    edges = [0, *cuts.tolist(), len(rows)]
    chunks = [rows.iloc[a:b].reset_index(drop=True) for a, b in zip(edges, edges[1:], strict=False)]
    chunks.insert(int(rng.integers(len(chunks) + 1)), rows.iloc[:0])
    return dd.from_map(lambda c: c, chunks, meta=rows.iloc[:0])


def _by_task(df: pd.DataFrame):
    """One partition per task, as one Parquet file per task reads."""
    tasks = sorted(df["task"].unique())
    return dd.from_map(
        lambda t: df[df["task"] == t].reset_index(drop=True), tasks, meta=df.iloc[:0]
    )


def _caught(func, *args, **kwargs):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        result = func(*args, **kwargs)
    return result, sorted(str(w.message) for w in record)


def test_import_metaeval_does_not_import_dask_and_importing_dask_registers_meta():
    code = (
        "import sys, metaeval; assert 'dask' not in sys.modules, 'dask imported'\n"
        "import dask.dataframe as dd, pandas as pd\n"
        "print(type(dd.from_pandas(metaeval.load_example(), npartitions=2).meta).__name__)"
    )
    assert run_fresh(code).strip() == "DaskMetaAccessor"


@pytest.mark.parametrize("seed", range(3))
def test_effects_equal_the_in_memory_ones_for_any_partitioning(client, seed):
    rng = np.random.default_rng(seed)
    scores = make_scores(rng, systems=("ctrl", "a", "b", "c"), drop=0.05 * (seed % 2))
    scores["domain"] = scores["task"].map({"t1": "x", "t2": "x", "t3": "y", "t4": "y"})
    for ddf in (_split(scores, rng, 2 + seed), _by_task(scores)):
        # every effect type once; the effect only changes the client's last step
        for effect in metaeval.EFFECT_TYPES if seed == 0 else ("smcrp", "rom"):
            for control in ("ctrl", None):
                want, want_w = _caught(scores.meta.effects, control, effect=effect)
                got, got_w = _caught(ddf.meta.effects, control, effect=effect)
                pd.testing.assert_frame_equal(got, want, check_exact=True)
                assert got_w == want_w, (effect, control)
        pooled, _ = _caught(lambda d: d.meta.effects("ctrl").meta.pool(by="domain"), ddf)
        want, _ = _caught(lambda d: d.meta.effects("ctrl").meta.pool(by="domain"), scores)
        pd.testing.assert_frame_equal(pooled, want, check_exact=True)


@pytest.mark.parametrize("seed", range(2))
def test_clustered_effects_equal_the_in_memory_ones(client, seed):
    """effects(cluster=) on dask: the clustered variances per partition, the same table
    (bit for bit) and warnings as in memory, for split and per-task partitions."""
    rng = np.random.default_rng(seed)
    scores = make_scores(rng, systems=("ctrl", "a", "b"), drop=0.05 * seed)
    number = scores["query"].str[1:].astype(int)
    scores["passage"] = "p" + (number // 3).astype(str)  # clusters of 3 queries
    scores["domain"] = scores["task"].map({"t1": "x", "t2": "x", "t3": "y", "t4": "y"})
    for ddf in (_split(scores, rng, 3 + seed), _by_task(scores)):
        for effect in ("md", "smcrp", "smd", "smcc", "rom") if seed == 0 else ("md", "rom"):
            want, want_w = _caught(scores.meta.effects, "ctrl", effect=effect, cluster="passage")
            got, got_w = _caught(ddf.meta.effects, "ctrl", effect=effect, cluster="passage")
            pd.testing.assert_frame_equal(got, want, check_exact=True)
            assert got.attrs["cluster"] == "passage" and "n_clusters" in got.columns
            assert got_w == want_w, effect
    with pytest.raises(SchemaError, match="'nope' must name a column"):
        _by_task(scores).meta.effects("ctrl", cluster="nope")
    with pytest.raises(metaeval.OptionError, match="not defined for effect='corr'"):
        _by_task(scores).meta.effects("ctrl", effect="corr", cluster="passage")
    with pytest.raises(metaeval.SchemaError, match="in-memory path"):  # as without cluster=
        _by_task(scores.assign(replicate=1)).meta.effects("ctrl", cluster="passage")


def test_statistics_are_identical_with_systems_and_metrics_missing_on_some_tasks(client, rng):
    from metaeval.engines import dask as scale

    scores = _with_gaps(rng, drop=0.05)  # system c not on t3
    scores = scores[~((scores["task"] == "t1") & (scores["metric"] == "m2"))]  # m2 not on t1
    by_task = _by_task(scores)
    assert scale.whole_tasks(by_task) is by_task  # one partition per task: nothing moves
    for ddf in (by_task, _split(scores, rng, 4)):
        for control, treatment in (("ctrl", None), (None, None), (["c", "a"], ["b", "ctrl"])):
            want, want_w = _caught(scores.meta.sufficient_statistics, control, treatment=treatment)
            got, got_w = _caught(ddf.meta.sufficient_statistics, control, treatment=treatment)
            xr.testing.assert_identical(got, want)
            assert got_w == want_w


def test_bad_input_gets_the_in_memory_errors(client, rng):
    scores = make_scores(rng)
    with pytest.raises(SchemaError, match=r"\['value'\] missing"):
        _by_task(scores.drop(columns="value")).meta.effects("ctrl")
    nan = scores.copy()
    nan.loc[5, "value"] = np.nan
    with pytest.raises(SchemaError, match="missing values"):
        _split(nan, rng, 3).meta.effects("ctrl")
    twice = pd.concat([scores, scores.iloc[[0]]], ignore_index=True)
    chunks = dd.from_map(
        lambda c: c, [scores, scores.iloc[[0]].reset_index(drop=True)], meta=scores.iloc[:0]
    )  # the same key in two partitions
    with pytest.raises(SchemaError, match="share their"):
        twice.meta.effects("ctrl")
    with pytest.raises(SchemaError, match="share their"):
        chunks.meta.effects("ctrl")
    with pytest.raises(PairingError, match=r"\['nope'\] are not in the scores table"):
        _by_task(scores).meta.effects("nope")


def _logged(path, frame: pd.DataFrame) -> pd.DataFrame:
    with open(path, "a") as log:  # one line per partition read, by any worker process
        log.write(f"{frame['task'].iloc[0] if len(frame) else '-'}\n")
    return frame


def test_effects_read_every_partition_once(client, rng, tmp_path):
    """The statistics need no first pass: one read of each partition, when every task's
    rows are in one of them; a split table is read again for the shuffle, once."""
    scores = make_scores(rng)
    tasks = sorted(scores["task"].unique())
    log = tmp_path / "reads.txt"
    by_task = dd.from_map(
        lambda t: _logged(log, scores[scores["task"] == t].reset_index(drop=True)),
        tasks,
        meta=scores.iloc[:0],
    )
    got = by_task.meta.effects("ctrl")
    pd.testing.assert_frame_equal(got, scores.meta.effects("ctrl"), check_exact=True)
    assert sorted(log.read_text().split()) == tasks
    log.unlink()
    halves = [scores.iloc[i::2].reset_index(drop=True) for i in range(2)]  # every task in both
    split = dd.from_map(lambda i: _logged(log, halves[i]), [0, 1], meta=scores.iloc[:0])
    got = split.meta.effects("ctrl")
    pd.testing.assert_frame_equal(got, scores.meta.effects("ctrl"), check_exact=True)
    assert len(log.read_text().split()) == 4  # the pass that found the split, the shuffle's


def test_control_lists_get_the_in_memory_errors(client, rng):
    """Unknown, repeated and missing names in a list of systems: the in-memory error, the
    same one first, though the whole table's systems are known only after the pass."""
    scores = make_scores(rng, systems=("ctrl", "a", "b", "c"))
    scores = scores[(scores["system"] != "c") | (scores["task"] == "t4")]  # c on one task only
    for control, treatment in (
        (["a", "nope", "a"], None),
        (["ctrl", "ctrl"], None),
        ([], None),
        ("ctrl", ["c", "zz"]),
        (["c", "a"], ["c", "c"]),
    ):
        want, want_w = _outcome(scores.meta.effects, control, treatment=treatment)
        got, got_w = _outcome(_by_task(scores).meta.effects, control, treatment=treatment)
        assert got == want and got_w == want_w
        assert want[0] is PairingError
    want, want_w = _caught(scores.meta.effects, ["c", "a"], treatment=["ctrl", "b"])
    got, got_w = _caught(_by_task(scores).meta.effects, ["c", "a"], treatment=["ctrl", "b"])
    pd.testing.assert_frame_equal(got, want, check_exact=True)  # c only in one partition
    assert got_w == want_w


def test_extra_columns_named_like_outputs_get_the_in_memory_schema_error(client, rng):
    scores = make_scores(rng)
    # r: was overwritten by tanh(effect); n: was pandas' "cannot insert n, already exists"
    for column, effect in (("r", "corr"), ("n", "md")):
        named = scores.assign(**{column: 1.0})
        with pytest.raises(SchemaError) as want:
            named.meta.effects("ctrl", effect=effect)
        for call in ("effects", "analyze"):
            with pytest.raises(SchemaError) as got:
                getattr(_by_task(named).meta, call)("ctrl", effect=effect)
            assert str(got.value) == str(want.value)
            assert f"[{column!r}], which effects() adds" in str(got.value)


def _with_gaps(rng: np.random.Generator, drop: float) -> pd.DataFrame:
    """Four systems, one of them missing on task t3, ``drop`` of the rows gone."""
    scores = make_scores(rng, systems=("ctrl", "a", "b", "c"), drop=drop)
    return scores[~((scores["task"] == "t3") & (scores["system"] == "c"))].reset_index(drop=True)


PER_TASK_CALLS = [
    ("compare", {"control": "ctrl"}),
    ("compare", {"control": None, "test": "wilcoxon", "adjust": "holm"}),
    ("compare", {"control": ["c", "ctrl"], "treatment": ["b", "a"], "test": "sign"}),
    (
        "compare",
        {
            "control": "ctrl",
            "test": "randomization",
            "n_resamples": 300,
            "seed": 7,
            "alternative": "greater",
        },
    ),
    ("compare", {"control": "a", "test": "bootstrap", "n_resamples": 300, "seed": 7}),
    (
        "compare",
        {
            "control": ["ctrl", "a"],
            "test": "randomization",
            "n_resamples": 300,
            "seed": 7,
            "adjust": "maxt",
        },
    ),
    ("anova", {}),
    ("means", {"alpha": 0.1}),
    ("tukey", {}),
    ("tukey", {"randomized": True, "n_resamples": 200, "seed": 3}),
]


@pytest.mark.parametrize("seed", range(2))
def test_tests_and_tables_equal_the_in_memory_ones(client, seed):
    rng = np.random.default_rng(100 + seed)
    scores = _with_gaps(rng, drop=0.06 * seed)
    for ddf in (_split(scores, rng, 3 + seed), _by_task(scores)):
        for name, kwargs in PER_TASK_CALLS:
            want, want_w = _caught(getattr(scores.meta, name), **kwargs)
            got, got_w = _caught(getattr(ddf.meta, name), **kwargs)
            pd.testing.assert_frame_equal(got, want, check_exact=True)
            assert got.attrs == want.attrs, name
            assert got_w == want_w, (name, kwargs)
            if kwargs.get("seed") is not None:  # resampled p-values: identical, not close
                np.testing.assert_array_equal(got["p_value"].to_numpy(), want["p_value"].to_numpy())
    assert any("left out" in w for w in want_w) == (seed > 0)  # the warnings were exercised


def test_a_seedless_resampling_test_reports_the_seed_it_drew(client, rng):
    scores = make_scores(rng)
    got = _by_task(scores).meta.compare("ctrl", test="randomization", n_resamples=200)
    again = scores.meta.compare(
        "ctrl", test="randomization", n_resamples=200, seed=got.attrs["seed"]
    )
    np.testing.assert_array_equal(got["p_value"].to_numpy(), again["p_value"].to_numpy())


def test_per_task_methods_raise_the_in_memory_errors(client, rng):
    scores = make_scores(rng)
    ddf = _split(scores, rng, 3)
    with pytest.raises(metaeval.OptionError, match="test"):
        ddf.meta.compare("ctrl", test="nope")
    with pytest.raises(metaeval.OptionError, match="alpha"):
        ddf.meta.tukey(alpha=2)
    with pytest.raises(PairingError, match=r"\['nope'\] are not in the scores table"):
        ddf.meta.compare(treatment="nope")
    two = scores[scores["system"] != "b"]
    with pytest.raises(metaeval.OptionError, match="at least 3 systems"):
        _by_task(two).meta.anova()


def test_validate_reports_every_partition_and_keys_repeated_across_partitions(client, rng):
    scores = make_scores(rng)
    assert _by_task(scores).meta.validate() is not None
    parts = [scores.iloc[i::3].reset_index(drop=True) for i in range(3)]
    parts[0].loc[2, "value"] = np.nan
    parts[2].loc[4, "value"] = np.inf
    parts[2] = pd.concat([parts[2], parts[2].iloc[[0]]], ignore_index=True)  # within partition 2
    parts[1] = pd.concat([parts[1], parts[0].iloc[[5]]], ignore_index=True)  # across 0 and 1
    ddf = dd.from_map(lambda c: c, parts, meta=scores.iloc[:0])
    with pytest.raises(SchemaError) as caught:
        ddf.meta.validate()
    message, cases = str(caught.value), caught.value.failure_cases
    for number in (0, 2):
        with pytest.raises(SchemaError) as alone:
            metaeval.validate_scores(parts[number])
        for line in str(alone.value).splitlines()[1:]:
            assert f"- partition {number}: {line[2:]}" in message
    key = tuple(parts[0].loc[5, ["task", "query", "system", "metric"]])
    assert (
        f"1 (task, query, system, metric) key(s) have rows in more than one partition, "
        f"e.g. key {key} in partitions [0, 1]" in message
    )
    assert message.startswith("The scores table has 4 problems:")
    shared = cases[cases["problem"].eq("duplicate keys") & cases["partition"].isin([0, 1])]
    assert sorted(zip(shared["partition"], shared["row"], strict=True)) == [
        (0, 5),
        (1, len(parts[1]) - 1),
    ]
    assert set(cases["partition"]) == {0, 1, 2}


def test_validate_converts_integer_ids_lazily(client, rng):
    scores = make_scores(rng).assign(query=lambda d: d["query"].str[1:].astype(int))
    checked = _by_task(scores).meta.validate().compute()
    raw = _by_task(scores).compute()["query"]
    assert raw.dtype == np.int64 and checked["query"].tolist() == raw.astype(str).tolist()
    pd.testing.assert_frame_equal(
        _by_task(scores).meta.effects("ctrl"), scores.meta.effects("ctrl")
    )


def test_validate_of_a_table_without_rows_is_the_in_memory_error(client, rng):
    """Every partition empty: "no rows", as validate_scores says in memory (issue 39,
    item 29), where the partitions' checks alone found nothing wrong."""
    empty = make_scores(rng).iloc[:0]
    ref = pytest.raises(SchemaError, metaeval.validate_scores, empty).value
    for table in (dd.from_pandas(empty, npartitions=1), dd.from_map(lambda c: c, [empty] * 3)):
        with pytest.raises(SchemaError) as got:
            table.meta.validate()
        assert str(got.value) == str(ref)


def _die(chunk: pd.DataFrame) -> pd.DataFrame:
    import os

    if chunk["task"].iloc[0] == "t3":
        os._exit(1)  # the worker process dies reading this partition
    return chunk


def test_a_worker_dying_mid_run_surfaces_as_dasks_error_not_a_partial_result(rng):
    import dask

    scores = make_scores(rng)
    tasks = sorted(scores["task"].unique())
    ddf = dd.from_map(
        lambda t: _die(scores[scores["task"] == t].reset_index(drop=True)),
        tasks,
        meta=scores.iloc[:0],
    )
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster),
    ):
        with pytest.raises(distributed.KilledWorker):
            ddf.meta.effects("ctrl")


def test_a_task_found_in_two_partitions_by_the_main_pass_is_redone_after_a_shuffle(client, rng):
    from metaeval.engines.dask import dask_survey
    from metaeval.paired.partitions import dask_effects

    scores = make_scores(rng)
    survey = dask_survey(_by_task(scores))  # whole tasks: no shuffle planned
    assert not survey.shuffled
    survey.frame = _split(scores, rng, 4)  # as if dask read the files otherwise for all columns
    got = dask_effects(None, "ctrl", survey=survey)  # (without the redo: tasks twice, an error)
    pd.testing.assert_frame_equal(got, scores.meta.effects("ctrl"), check_exact=True)


def test_parquet_files_splitting_tasks_read_lazily_give_the_in_memory_results(
    client, rng, tmp_path
):
    scores = make_scores(rng, systems=("ctrl", "a", "b", "c"))
    for i, half in enumerate((scores.iloc[::2], scores.iloc[1::2])):  # every task in both files
        for task, part in half.groupby("task"):
            metaeval.io.write_scores(part, tmp_path / f"{task}-{i}.parquet")
    lazy = metaeval.io.read_scores(tmp_path, lazy=True)
    pd.testing.assert_frame_equal(
        lazy.meta.effects("ctrl"), scores.meta.effects("ctrl"), check_exact=True
    )
    got = lazy.meta.compare("ctrl", test="randomization", n_resamples=500, seed=3)
    want = scores.meta.compare("ctrl", test="randomization", n_resamples=500, seed=3)
    np.testing.assert_array_equal(got["p_value"].to_numpy(), want["p_value"].to_numpy())


def _outcome(func, *args, **kwargs):
    """``func``'s result, or its error's type and message; and its warnings' messages."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        try:
            result = func(*args, **kwargs)
        except metaeval.MetaEvalError as err:
            result = (type(err), str(err))
    return result, sorted(str(w.message) for w in record)


def test_compare_over_parquet_files_per_task_with_only_the_control_on_one(client, rng, tmp_path):
    scores = make_scores(rng)
    scores = scores[(scores["task"] != "t3") | (scores["system"] == "ctrl")]
    for task, part in scores.groupby("task"):
        metaeval.io.write_scores(part, tmp_path / f"{task}.parquet")
    lazy = metaeval.io.read_scores(tmp_path, lazy=True)
    for kwargs in ({"control": "ctrl"}, {"control": "ctrl", "treatment": "a", "test": "sign"}):
        want, want_w = _caught(scores.meta.compare, **kwargs)
        got, got_w = _caught(lazy.meta.compare, **kwargs)  # was a PairingError
        pd.testing.assert_frame_equal(got, want, check_exact=True)
        assert got_w == want_w
        assert "t3" not in set(got["task"]) and "task='t3'" in got_w[0]  # the control alone
    # no pair on any task: the in-memory PairingError, after the in-memory warning
    apart = scores[
        ((scores["system"] == "a") & (scores["task"] <= "t2"))
        | ((scores["system"] == "ctrl") & (scores["task"] > "t2"))
    ]
    got, got_w = _outcome(_by_task(apart).meta.compare, "ctrl", treatment="a")
    want, want_w = _outcome(apart.meta.compare, "ctrl", treatment="a")
    assert got == want and got_w == want_w
    assert got[0] is PairingError and len(got_w) == 1


@pytest.mark.parametrize(
    "name",
    ["sufficient_statistics", "effects", "analyze", "compare", "anova", "tukey", "means"],
)
def test_dask_methods_take_the_in_memory_parameters(name):
    import inspect

    from metaeval.accessor import DaskMetaAccessor

    def parameters(func, skip_first):
        found = list(inspect.signature(func).parameters.values())[skip_first:]
        # a progress bar belongs to the process that runs: dask's diagnostics on dask
        return [(p.name, p.kind, p.default) for p in found if p.name != "progress"]

    assert parameters(getattr(DaskMetaAccessor, name), 1) == parameters(getattr(metaeval, name), 1)


def test_tables_follow_a_categorical_task_order_as_in_memory(client, rng):
    order = pd.CategoricalDtype(["t4", "t2", "t1", "t3"])
    scores = make_scores(rng).astype({"task": order, "metric": pd.CategoricalDtype(["m2", "m1"])})
    ddf = _by_task(scores)
    for name in ("means", "tukey", "anova", "compare"):
        want = getattr(scores.meta, name)()  # means(), tukey(): were by task name
        pd.testing.assert_frame_equal(getattr(ddf.meta, name)(), want, check_exact=True)
        assert list(pd.unique(want["task"])) == list(order.categories), name


# ---------------------------------------------------------------------- fuzzing
SYSTEMS, TASKS, METRICS = ("ctrl", "a", "b", "c"), ("t1", "t2", "t3", "t4"), ("m1", "m2")


@st.composite
def _tables(draw) -> tuple[pd.DataFrame, dict[str, pd.CategoricalDtype]]:
    """A scores table — systems (the control too) missing on some tasks, queries missing
    for some systems, tied scores — and categorical orders for some key columns (with an
    unused category at times)."""
    tasks = TASKS[: draw(st.integers(1, 4))]
    systems = SYSTEMS[: draw(st.integers(2, 4))]
    metrics = METRICS[: draw(st.integers(1, 2))]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    frames = []
    for task in tasks:
        n = draw(st.integers(1, 9))
        present = [s for s in systems if draw(st.integers(0, 4)) > 0]  # each gone 1 time in 5
        for metric in metrics:
            base = rng.normal(0.5, 0.2, n)
            for system in present:
                value = np.round(base + rng.normal(0, 0.1, n), draw(st.sampled_from([1, 8])))
                keep = rng.random(n) >= draw(st.sampled_from([0.0, 0.0, 0.3]))
                frames.append(
                    pd.DataFrame(
                        {
                            "task": task,
                            "query": [f"q{i}" for i in range(n)],
                            "system": system,
                            "metric": metric,
                            "value": value,
                        }
                    )[keep]
                )
    assume(frames)
    scores = pd.concat(frames, ignore_index=True)
    assume(len(scores) > 0)
    dtypes = {}
    for column in ("task", "system", "metric"):
        if draw(st.booleans()):
            names = list(draw(st.permutations(sorted(scores[column].unique()))))
            if draw(st.booleans()):
                names.insert(draw(st.integers(0, len(names))), "unused")
            dtypes[column] = pd.CategoricalDtype(names)
    return scores, dtypes


@pytest.mark.fuzz
@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    report_multiple_bugs=False,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: a cluster call each step
    suppress_health_check=[HealthCheck.too_slow],
)
@given(table=_tables())
def test_fuzz_parquet_files_per_task_give_the_in_memory_results(client, tmp_path_factory, table):
    scores, dtypes = table
    folder = tmp_path_factory.mktemp("fuzz")
    for task, part in scores.groupby("task"):
        metaeval.io.write_scores(part, folder / f"{task}.parquet")
    lazy = metaeval.io.read_scores(folder, lazy=True).astype(dtypes)
    scores = scores.astype(dtypes)
    for name, args in (("effects", ("ctrl",)), ("compare", ("ctrl",)), ("means", ())):
        want, want_w = _outcome(getattr(scores.meta, name), *args)
        got, got_w = _outcome(getattr(lazy.meta, name), *args)
        if isinstance(want, pd.DataFrame):
            pd.testing.assert_frame_equal(got, want, check_exact=True)
            assert got.attrs == want.attrs
        else:
            assert got == want
        assert got_w == want_w, name

"""Any frame in: polars (eager and lazy), pyarrow and DuckDB give the pandas results.

Lazy frames (a polars LazyFrame, a DuckDB relation) have their statistics computed in
the engine (``metaeval.paired.pushdown``); the references are the in-memory functions
on the same table in pandas, to 1e-12 of each column's scale (the engine adds in its
own order) and resampled p-values exactly (their random streams depend on the seed and
the task only).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from _engines import ENGINES, LAZY, as_parquet, assert_same, in_engine, pa, pl
from _helpers import make_scores

import metaeval
from metaeval.engines import LazyTable
from metaeval.io import read_scores


@pytest.fixture(scope="module")
def example() -> pd.DataFrame:
    return metaeval.load_example()


def _caught(func, *args, **kwargs):
    """``func``'s result and the texts of the metaeval warnings it issued."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = func(*args, **kwargs)
    return out, [str(w.message) for w in caught if issubclass(w.category, metaeval.MetaEvalWarning)]


@pytest.mark.parametrize("engine", ENGINES)
def test_effects_and_pooled_tables_equal_pandas(example, engine):
    frame = in_engine(example, engine)
    for effect in ("smd", "md", "corr"):
        ref = metaeval.effects(example, None, effect=effect)
        assert_same(metaeval.effects(frame, None, effect=effect), ref)
    assert_same(
        metaeval.analyze(frame, "logistic_regression", effect="smd"),
        metaeval.analyze(example, "logistic_regression", effect="smd"),
    )


@pytest.mark.parametrize("engine", LAZY)
def test_smcrp_equal_to_its_own_conditioning(example, engine):
    """smcrp's small-sample factor c(m) = exp(lgamma(m/2) − log√(m/2) − lgamma((m−1)/2))
    subtracts two lgammas near 9,000 (m ≈ 2,900 at n = 1,797): the last bit of r moves it
    by ~2e-12 relative, on either path, so the two agree to that."""
    ref = metaeval.effects(example, None, effect="smcrp")
    assert_same(metaeval.effects(in_engine(example, engine), None, effect="smcrp"), ref, rtol=1e-11)


@pytest.mark.parametrize("engine", LAZY)
def test_sufficient_statistics_are_the_same_dataset(example, engine):
    ref = metaeval.sufficient_statistics(example, control=["knn", "naive_bayes"])
    got = metaeval.sufficient_statistics(in_engine(example, engine), control=["knn", "naive_bayes"])
    assert list(got.data_vars) == list(ref.data_vars)
    assert {k: v.dims for k, v in got.data_vars.items()} == {
        k: v.dims for k, v in ref.data_vars.items()
    }
    assert {k: v.dtype for k, v in got.data_vars.items()} == {
        k: v.dtype for k, v in ref.data_vars.items()
    }
    for dim in ref.dims:
        assert got[dim].values.tolist() == ref[dim].values.tolist()
    xr.testing.assert_equal(got["n"], ref["n"])
    xr.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("engine", "test"),
    [(e, t) for e in ENGINES for t in ("t", "randomization")]
    + [(e, t) for e in LAZY for t in ("bootstrap", "wilcoxon", "sign")],
)
def test_compare_p_values(example, engine, test):
    kwargs = dict(
        control="logistic_regression",
        treatment=["knn", "naive_bayes"],
        test=test,
        n_resamples=300,
        seed=7,
    )
    ref = metaeval.compare(example, **kwargs)
    got = metaeval.compare(in_engine(example, engine), **kwargs)
    if test == "t":
        assert_same(got, ref)
    else:  # in memory, task by task: exactly the pandas results
        pd.testing.assert_frame_equal(got, ref)
        assert got.attrs == ref.attrs


@pytest.mark.parametrize("engine", LAZY)
def test_compare_maxt_families_kept_task_by_task(example, engine):
    kwargs = dict(control=None, test="randomization", adjust="maxt", n_resamples=200, seed=3)
    ref = metaeval.compare(example, **kwargs)
    pd.testing.assert_frame_equal(metaeval.compare(in_engine(example, engine), **kwargs), ref)


@pytest.mark.parametrize("engine", ENGINES)
def test_means_equal_pandas(example, engine):
    assert_same(metaeval.means(in_engine(example, engine)), metaeval.means(example))


def _ragged(rng: np.random.Generator) -> pd.DataFrame:
    """Missing queries (a share of rows dropped) and a system missing from a task, with a
    task-level column and a query-level one."""
    df = make_scores(rng, systems=("ctrl", "a", "b", "c"), drop=0.15)
    df = df[~((df["task"] == "t2") & (df["system"] == "c"))].reset_index(drop=True)
    df["domain"] = df["task"].map({"t1": "web", "t2": "web", "t3": "bio", "t4": "bio"})
    df["length"] = np.arange(len(df)) % 7  # varies within a task: not carried over
    return df


@pytest.mark.parametrize("engine", ENGINES)
def test_missing_queries_and_systems(rng, engine):
    df = _ragged(rng)
    frame = in_engine(df, engine)
    ref, ref_warned = _caught(metaeval.effects, df, None, effect="md")
    got, warned = _caught(metaeval.effects, frame, None, effect="md")
    assert_same(got, ref)
    assert warned == ref_warned and ref_warned  # the unpaired queries, named alike
    assert "domain" in got.columns and "length" not in got.columns
    ref, ref_warned = _caught(metaeval.means, df)
    got, warned = _caught(metaeval.means, frame)
    assert_same(got, ref)
    assert warned == ref_warned
    for test in ("t", "randomization"):
        kwargs = dict(control="ctrl", test=test, n_resamples=200, seed=1)
        ref, ref_warned = _caught(metaeval.compare, df, **kwargs)
        got, warned = _caught(metaeval.compare, frame, **kwargs)
        assert_same(got, ref) if test == "t" else pd.testing.assert_frame_equal(got, ref)
        assert warned == ref_warned


@pytest.mark.parametrize("engine", LAZY)
def test_replicates_and_clusters_give_the_pandas_results(rng, engine):
    """A replicate column or cluster= needs per-query work: collected (effects) or task by
    task (compare, means); the results are pandas' all the same."""
    base = make_scores(rng, systems=("ctrl", "a", "b"))
    runs = pd.concat(
        [
            base.assign(replicate=r, value=base["value"] + rng.normal(0, 0.02, len(base)))
            for r in (1, 2, 3)
        ],
        ignore_index=True,
    )
    for func, kwargs in (
        (metaeval.effects, {"control": "ctrl", "effect": "md", "replicates": "nested"}),
        (metaeval.compare, {"control": "ctrl"}),
        (metaeval.means, {}),
    ):
        assert_same(func(in_engine(runs, engine), **kwargs), func(runs, **kwargs))
    clustered = base.assign(passage=base["query"].str[1:].astype(int) // 3)
    for func, kwargs in (
        (metaeval.effects, {"control": "ctrl", "effect": "md"}),
        (metaeval.compare, {"control": "ctrl"}),
        (metaeval.means, {}),
    ):
        ref = func(clustered, cluster="passage", **kwargs)
        assert_same(func(in_engine(clustered, engine), cluster="passage", **kwargs), ref)


@pytest.mark.parametrize("engine", LAZY)
def test_parquet_files_through_read_scores(example, tmp_path, engine):
    folder = as_parquet(example, tmp_path / "scores")
    frame = read_scores(
        folder / "*.parquet", engine="polars" if engine == "polars-lazy" else engine
    )
    assert type(frame).__name__ == ("DuckDBPyRelation" if engine == "duckdb" else "LazyFrame")
    assert_same(
        metaeval.analyze(frame, "knn", effect="md"), metaeval.analyze(example, "knn", effect="md")
    )
    kwargs = dict(control="knn", test="randomization", n_resamples=200, seed=11)
    pd.testing.assert_frame_equal(
        metaeval.compare(frame, **kwargs), metaeval.compare(example, **kwargs)
    )


def test_real_data_ranger_glue(shared_data):
    """The Ranger paper's GLUE data (7 tasks, up to 40k examples each) in every engine."""
    from metaeval.io import read_ranger

    config = shared_data / "ranger" / "classification-glue-data" / "config.yaml"
    scores = read_ranger(config, metric="accuracy")
    ref = metaeval.analyze(scores, control="bert", **metaeval.RANGER)
    ref_t = metaeval.compare(scores, control="bert", test="t")
    for engine in ENGINES:
        frame = in_engine(scores, engine)
        assert_same(metaeval.analyze(frame, control="bert", **metaeval.RANGER), ref)
        assert_same(metaeval.compare(frame, control="bert", test="t"), ref_t)


@pytest.mark.parametrize("engine", LAZY)
def test_only_aggregates_come_back(example, engine, monkeypatch):
    """The engine returns a row per (task, metric, system) (the first pass) and per
    (task, metric) (the sums), never a row per query; nothing is collected whole."""
    returned: list[int] = []
    original = LazyTable.collect_frame

    def counted(self, frame):
        out = original(self, frame)
        returned.append(len(out))
        return out

    def refused(self, columns=None):
        raise AssertionError("the lazy table was collected")

    monkeypatch.setattr(LazyTable, "collect_frame", counted)
    monkeypatch.setattr(LazyTable, "collect", refused)
    metaeval.analyze(in_engine(example, engine), None)
    metaeval.compare(in_engine(example, engine), "knn", test="t")
    metaeval.means(in_engine(example, engine))
    groups = example.groupby(["task", "metric", "system"]).ngroups  # 40
    assert returned and max(returned) <= groups < len(example) / 100
    assert example.groupby(["task", "metric"]).ngroups in returned  # the sums: 8 rows


@pytest.mark.parametrize("engine", LAZY)
def test_declared_order_of_an_enum_is_kept(example, engine):
    """Systems in the order an Enum declares (as a pandas categorical's), not sorted."""
    order = ["random_forest", "knn", "naive_bayes", "logistic_regression", "gradient_boosting"]
    cat = example.assign(system=pd.Categorical(example["system"], categories=order))
    if engine == "polars-lazy":
        frame = pl.from_pandas(example).lazy().with_columns(pl.col("system").cast(pl.Enum(order)))
    else:
        names = ", ".join(f"'{s}'" for s in order)
        frame = in_engine(example, "duckdb").project(
            f"task, query, CAST(system AS ENUM({names})) AS system, metric, value"
        )
    ref = metaeval.effects(cat, "knn", effect="md")
    assert ref["treatment"].unique().tolist() == [s for s in order if s != "knn"]
    assert_same(metaeval.effects(frame, "knn", effect="md"), ref)


@pytest.mark.parametrize("engine", LAZY)
def test_pairing_errors_are_the_in_memory_ones(example, engine):
    frame = in_engine(example, engine)
    for kwargs in ({"control": "nope"}, {"control": "knn", "treatment": ["knn", "knn"]}):
        with pytest.raises(metaeval.PairingError) as ref:
            metaeval.effects(example, **kwargs)
        with pytest.raises(metaeval.PairingError) as got:
            metaeval.effects(frame, **kwargs)
        assert str(got.value) == str(ref.value)


@pytest.mark.parametrize("engine", LAZY)
def test_summed_a_few_tasks_at_a_time_past_the_memory_limit(example, engine, monkeypatch):
    """Where the per-query pivot would not fit (DuckDB's memory_limit; polars'
    POLARS_LIMIT), each group of tasks is its own query: the same results."""
    from metaeval.paired import pushdown as _pushdown

    seen: list[list] = []
    original = _pushdown.task_groups

    def small(table, sums, limit=None):
        groups = original(table, sums, 20_000)  # bytes: a task or two a group
        seen.append(groups)
        return groups

    monkeypatch.setattr(_pushdown, "task_groups", small)
    frame = in_engine(example, engine)
    assert_same(
        metaeval.effects(frame, None, effect="md"), metaeval.effects(example, None, effect="md")
    )
    assert_same(metaeval.means(frame), metaeval.means(example))
    assert seen and all(len(groups) > 1 for groups in seen)
    assert sorted(t for g in seen[0] for t in g) == sorted(example["task"].unique())


@pytest.mark.parametrize("engine", LAZY)
def test_anova_and_tukey(rng, engine):
    """The two-way ANOVA and Tukey's HSD from sums computed in the engine; the randomized
    Tukey task by task (the same p-values for the same seed)."""
    df = _ragged(rng)
    frame = in_engine(df, engine)
    for func, kwargs in ((metaeval.anova, {}), (metaeval.tukey, {})):
        ref, ref_warned = _caught(func, df, **kwargs)
        got, warned = _caught(func, frame, **kwargs)
        assert_same(got, ref)
        assert warned == ref_warned
    kwargs = dict(randomized=True, n_resamples=100, seed=5)
    ref, ref_warned = _caught(metaeval.tukey, df, **kwargs)
    got, warned = _caught(metaeval.tukey, frame, **kwargs)
    pd.testing.assert_frame_equal(got, ref)
    assert warned == ref_warned


# ------------------------------------------------------------ issue 39, item 29
TASK_ORDER = ["wine", "iris", "digits", "breast_cancer"]
SYSTEM_ORDER = ["random_forest", "knn", "naive_bayes", "logistic_regression", "gradient_boosting"]

#: The functions whose rows come in the table's order, and what they take here.
ORDERED_CALLS = {
    "effects": (metaeval.effects, {"control": "knn", "effect": "md"}),
    "analyze": (metaeval.analyze, {"control": "knn", "effect": "md"}),
    "compare t": (metaeval.compare, {"control": "knn"}),
    "compare sign": (metaeval.compare, {"control": "knn", "test": "sign"}),
    "means": (metaeval.means, {}),
    "anova": (metaeval.anova, {}),
    "tukey": (metaeval.tukey, {}),
}


@pytest.fixture(scope="module")
def in_order(example) -> pd.DataFrame:
    """The example with its tasks and systems in an order of their own (unsorted)."""
    return example.assign(
        task=pd.Categorical(example["task"], categories=TASK_ORDER, ordered=True),
        system=pd.Categorical(example["system"], categories=SYSTEM_ORDER),
    )


def _ordered_frames(df: pd.DataFrame, tmp_path) -> dict:
    """``df`` in every engine, its categoricals as each engine's ordered type (an Arrow
    dictionary, a polars Enum, a DuckDB ENUM), and as a Parquet file read by each engine."""
    frames = {engine: in_engine(df, engine) for engine in ENGINES}
    frames["arrow, ordered=False"] = pa.Table.from_pandas(
        df.assign(task=df["task"].cat.as_unordered()), preserve_index=False
    )
    path = tmp_path / "ordered.parquet"
    metaeval.io.write_scores(df, path)
    for engine in (None, "polars", "duckdb"):
        frames[f"read_scores {engine}"] = read_scores(path, engine=engine)
    return frames


@pytest.mark.parametrize("call", list(ORDERED_CALLS))
@pytest.mark.slow
def test_the_category_order_in_every_engine(in_order, tmp_path, call):
    """A pandas categorical's order is kept by the engines' ordered types: the rows come
    in the categories' order, as in pandas, not sorted."""
    func, kwargs = ORDERED_CALLS[call]
    ref = func(in_order, **kwargs)
    tasks = lambda table: [t for t in table["task"].unique() if t != "summary"]  # noqa: E731
    assert tasks(ref) == TASK_ORDER
    for name, frame in _ordered_frames(in_order, tmp_path).items():
        got = func(frame, **kwargs)
        assert tasks(got) == TASK_ORDER, name
        if call in ("compare sign",):
            pd.testing.assert_frame_equal(got, ref)
        else:
            assert_same(got, ref)


@pytest.mark.parametrize("engine", LAZY)
def test_anova_and_tukey_with_one_complete_query_give_nan_as_in_pandas(engine):
    """One query that every system has: the residual and query sums of squares have 0 df,
    so their mean squares, F, p and Tukey's effect size are NaN (not inf and −0.0 from
    rounding left in the engine's sums), with the same warnings."""
    rows = [("t", "q1", s, "m", v) for s, v in (("a", 0.61), ("b", 0.35), ("c", 0.13))]
    rows += [("t", "q2", "a", "m", 0.3), ("t", "q2", "b", "m", 0.1)]
    df = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])
    for func in (metaeval.anova, metaeval.tukey, metaeval.means):
        ref, ref_warned = _caught(func, df)
        got, warned = _caught(func, in_engine(df, engine))
        assert_same(got, ref)
        assert warned == ref_warned and ref_warned
    anova = _caught(metaeval.anova, in_engine(df, engine))[0]
    assert anova.loc[anova["source"] != "system", "ms"].isna().all()
    assert anova["f"].isna().all() and anova["p_value"].isna().all()
    assert _caught(metaeval.tukey, in_engine(df, engine))[0]["effect_size"].isna().all()


@pytest.mark.parametrize("engine", LAZY)
def test_a_residual_of_rounding_is_zero_in_every_engine(engine):
    """Systems 0.1 apart on every query: the residual is 0 in exact arithmetic; what the
    engine's sums leave of it (2e-16 here) is taken as 0, as the in-memory sums give it."""
    base = [0.3, 0.7, 0.55, 0.1, 0.9]
    df = pd.DataFrame(
        [
            ("t", f"q{q}", s, "m", b + d)
            for s, d in (("a", 0.0), ("b", 0.1), ("c", 0.2))
            for q, b in enumerate(base)
        ],
        columns=["task", "query", "system", "metric", "value"],
    )
    for func in (metaeval.anova, metaeval.tukey, metaeval.means):
        ref, ref_warned = _caught(func, df)
        got, warned = _caught(func, in_engine(df, engine))
        assert_same(got, ref)
        assert warned == ref_warned
    with pytest.warns(metaeval.DegenerateWarning, match="residual mean square is 0"):
        assert metaeval.anova(in_engine(df, engine))["ss"].iloc[2] == 0.0

"""``.meta`` on dask DataFrames, on a real ``distributed.LocalCluster`` with worker processes:
the same effects, warnings and errors as in memory, for any partitioning."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import make_scores

import metaeval
from metaeval import PairingError, SchemaError

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as c:  # fmt: skip
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
    return dd.from_map(lambda t: df[df["task"] == t].reset_index(drop=True), tasks,
                       meta=df.iloc[:0])  # fmt: skip


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
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "DaskMetaAccessor"


@pytest.mark.parametrize("seed", range(4))
def test_effects_equal_the_in_memory_ones_for_any_partitioning(client, seed):
    rng = np.random.default_rng(seed)
    scores = make_scores(rng, systems=("ctrl", "a", "b", "c"), drop=0.05 * (seed % 2))
    scores["domain"] = scores["task"].map({"t1": "x", "t2": "x", "t3": "y", "t4": "y"})
    for ddf in (_split(scores, rng, 2 + seed), _by_task(scores)):
        for effect in metaeval.EFFECT_TYPES:
            for control in ("ctrl", None):
                want, want_w = _caught(scores.meta.effects, control, effect=effect)
                got, got_w = _caught(ddf.meta.effects, control, effect=effect)
                pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=1e-12, atol=0)
                assert got_w == want_w, (effect, control)
        pooled, _ = _caught(lambda d: d.meta.effects("ctrl").meta.pool(by="domain"), ddf)
        want, _ = _caught(lambda d: d.meta.effects("ctrl").meta.pool(by="domain"), scores)
        pd.testing.assert_frame_equal(pooled, want, check_exact=False, rtol=1e-10)


def test_statistics_equal_and_whole_tasks_are_not_shuffled(client, rng):
    from metaeval import scale

    scores = make_scores(rng)
    by_task = _by_task(scores)
    assert scale.whole_tasks(by_task) is by_task  # one partition per task: nothing moves
    want = scores.meta.sufficient_statistics("ctrl")
    got = by_task.meta.sufficient_statistics("ctrl")
    assert got["n"].dtype == want["n"].dtype
    for name in want.data_vars:
        np.testing.assert_allclose(got[name].values, want[name].values, rtol=1e-12, err_msg=name)
    assert list(got["task"].values) == list(want["task"].values)


def test_bad_input_gets_the_in_memory_errors(client, rng):
    scores = make_scores(rng)
    with pytest.raises(SchemaError, match=r"\['value'\] missing"):
        _by_task(scores.drop(columns="value")).meta.effects("ctrl")
    nan = scores.copy()
    nan.loc[5, "value"] = np.nan
    with pytest.raises(SchemaError, match="missing values"):
        _split(nan, rng, 3).meta.effects("ctrl")
    twice = pd.concat([scores, scores.iloc[[0]]], ignore_index=True)
    chunks = dd.from_map(lambda c: c, [scores, scores.iloc[[0]].reset_index(drop=True)],
                         meta=scores.iloc[:0])  # the same key in two partitions  # fmt: skip
    with pytest.raises(SchemaError, match="share their"):
        twice.meta.effects("ctrl")
    with pytest.raises(SchemaError, match="share their"):
        chunks.meta.effects("ctrl")
    with pytest.raises(PairingError, match=r"\['nope'\] are not in the scores table"):
        _by_task(scores).meta.effects("nope")

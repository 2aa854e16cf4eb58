"""GOSH and Baujat against metafor 3.8 (fixtures/metafor/make_gosh.R) and their edges.

Tolerance: 1e-6 relative (absolute 1e-9) for every value; metafor's fits there are
converged with ``control=list(threshold=1e-13)``.
"""

from __future__ import annotations

import itertools
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import FIXTURES

import metaeval
from metaeval import DegenerateWarning, OptionError, PairingError, SchemaError

DIR = FIXTURES / "metafor"
RTOL, ATOL = 1e-6, 1e-9


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return pd.read_csv(DIR / "gosh_data.csv")


@pytest.fixture(scope="module")
def fits() -> pd.DataFrame:
    return pd.read_csv(DIR / "gosh_fits.csv.gz", skipinitialspace=True)


def _masks(res: metaeval.GoshResult) -> np.ndarray:
    """Each row's subset as metafor's bitmask (task ti is bit i − 1)."""
    inc = res.included
    return sum(inc[c].to_numpy(np.int64) << (int(c[1:]) - 1) for c in inc.columns)


@pytest.mark.parametrize("method", ["REML", "ML", "DL", "EE"])
def test_gosh_matches_metafor_all_subsets(data, fits, method):
    """Four groups (k = 5..8) at once: every subset's values and metafor's row order."""
    res = metaeval.gosh(data, method=method, groups="dataset")
    ref = fits[fits["method"] == method].reset_index(drop=True)
    assert list(res.fit["n_subsets"]) == [2**k - 1 for k in (5, 6, 7, 8)]
    assert res.fit["exact"].all()
    got = res.table
    assert list(got["dataset"]) == list(ref["dataset"])
    np.testing.assert_array_equal(_masks(res), ref["mask"])
    np.testing.assert_array_equal(got["k"], ref["k"])
    np.testing.assert_array_equal(res.included.sum(axis=1), ref["k"])
    for col in ("effect", "tau2", "i2", "h2", "q"):
        np.testing.assert_allclose(got[col], ref[col], rtol=RTOL, atol=ATOL, err_msg=col)
    if method in ("DL", "EE"):  # metafor's H² = Q/(k − 1), below 1 for some subsets
        assert (got["h2"] < 1).any()


@pytest.mark.parametrize("method", ["EE", "DL", "HE", "HS", "SJ", "ML", "REML", "EB", "PM"])
def test_gosh_single_tasks_and_definitions(data, method):
    """Single tasks: y_i, τ² = Q = I² = 0, H² = 1; every subset of four or more tasks
    equals pool() on it (pool() is checked against metafor on every estimator); H² of EE
    and DL is Q/(k − 1)."""
    d6 = data[data["dataset"] == "d6"].reset_index(drop=True)
    res = metaeval.gosh(d6, method=method)
    ones = res.table[res.table["k"] == 1]
    np.testing.assert_array_equal(ones["effect"], d6["effect"])
    assert (ones[["tau2", "q", "i2"]] == 0).all().all() and (ones["h2"] == 1).all()
    rows = np.flatnonzero(res.table["k"] >= 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateWarning)
        pooled = pd.concat(
            [metaeval.pool(d6[res.included.iloc[i].to_numpy()], method=method) for i in rows]
        )
    got = res.table.iloc[rows]
    for col in ("effect", "tau2", "i2", "q"):
        np.testing.assert_allclose(got[col], pooled[col], rtol=1e-7, atol=1e-12, err_msg=col)
    want_h2 = pooled["q"] / (got["k"].to_numpy() - 1) if method in ("EE", "DL") else pooled["h2"]
    np.testing.assert_allclose(got["h2"], want_h2, rtol=1e-7)
    restored = pickle.loads(pickle.dumps(res))
    pd.testing.assert_frame_equal(restored.included, res.included)


def test_gosh_random_subsets_are_seeded_and_exact_fits(data):
    """Beyond ``subsets``: that many random subsets, reproducible with the seed, each
    fitted exactly as in the full enumeration."""
    d7 = data[data["dataset"] == "d7"]
    exact = metaeval.gosh(d7, method="REML")
    by_mask = exact.table.assign(mask=_masks(exact)).set_index("mask")
    a = metaeval.gosh(d7, method="REML", subsets=40, seed=3)
    b = metaeval.gosh(d7, method="REML", subsets=40, seed=3)
    c = metaeval.gosh(d7, method="REML", subsets=40, seed=4)
    assert len(a.table) == 40 and not a.fit["exact"].iloc[0]
    pd.testing.assert_frame_equal(a.table, b.table)
    pd.testing.assert_frame_equal(a.included, b.included)
    assert not a.included.equals(c.included)
    assert (a.table["k"].diff().dropna() >= 0).all()  # ordered by size, as metafor
    ref = by_mask.loc[_masks(a)]
    for col in ("k", "effect", "tau2", "i2", "h2", "q"):
        np.testing.assert_allclose(a.table[col], ref[col], rtol=1e-12, err_msg=col)
    # subsets ≥ 2ᵏ − 1 gives all of them
    assert metaeval.gosh(d7, subsets=127).fit["exact"].iloc[0]


def test_gosh_random_subset_sizes_follow_binomial():
    """Uniform over the non-empty subsets: size ~ Binomial(k, ½) restricted to ≥ 1."""
    from scipy import stats

    k = 16
    eff = pd.DataFrame(
        {"task": [f"t{i}" for i in range(k)], "effect": np.linspace(0, 1, k), "variance": 0.01}
    )
    res = metaeval.gosh(eff, method="DL", subsets=20000, seed=1)
    assert len(res.table) == 20000 and not res.fit["exact"].iloc[0]
    counts = np.bincount(res.table["k"], minlength=k + 1)[1:]
    p = stats.binom.pmf(np.arange(1, k + 1), k, 0.5) / (1 - 0.5**k)
    bins = np.r_[0, np.arange(4, 12), k]  # sizes 1–4, 5, …, 12, 13–16
    observed = np.add.reduceat(counts, bins[:-1])
    expected = 20000 * np.add.reduceat(p, bins[:-1])
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_gosh_groups_labels_and_select(data):
    res = metaeval.gosh(data, method="DL", groups="dataset")
    assert list(res.included.columns) == [f"t{i}" for i in range(1, 9)]
    d5 = res.select(dataset="d5")
    assert len(d5.table) == 31 and not d5.included[["t6", "t7", "t8"]].any().any()
    with pytest.raises(OptionError, match="select"):
        res.select(nope=1)
    with pytest.raises(OptionError, match="d9"):
        res.select(dataset="d9")
    assert res.table.attrs["method"] == "DL"


def test_gosh_bad_input(data):
    d5 = data[data["dataset"] == "d5"]
    for bad in (1, 0, 2.5, "10", True):
        with pytest.raises(OptionError, match="subsets"):
            metaeval.gosh(d5, subsets=bad)
    with pytest.raises(OptionError, match="method"):
        metaeval.gosh(d5, method="reml")
    with pytest.raises(OptionError, match="`test`"):
        metaeval.gosh(d5, test="tdist")
    with pytest.raises(SchemaError, match="repeat"):
        metaeval.gosh(pd.concat([d5, d5.iloc[:1]]))
    with pytest.raises(PairingError, match="finite"), pytest.warns(DegenerateWarning):
        metaeval.gosh(d5.assign(effect=np.nan))
    with pytest.warns(DegenerateWarning, match="1 effect.*left out"):
        res = metaeval.gosh(d5.assign(effect=d5["effect"].where(d5["task"] != "t2")))
    assert len(res.table) == 15 and "t2" not in res.included.columns
    one = pd.concat([d5, data[data["dataset"] == "d6"].iloc[:1].assign(dataset="solo")])
    with pytest.warns(DegenerateWarning, match="single task"):
        res = metaeval.gosh(one, groups="dataset")
    solo = res.select(dataset="solo").table
    assert len(solo) == 1 and solo["tau2"].iloc[0] == 0
    before = d5.copy()
    metaeval.gosh(d5)
    pd.testing.assert_frame_equal(d5, before)  # the input is never mutated


@pytest.fixture(scope="module")
def baujat_ref() -> pd.DataFrame:
    return pd.read_csv(DIR / "baujat.csv", skipinitialspace=True)


@pytest.mark.parametrize(
    ("method", "test"),
    [
        ("REML", "z"),
        ("REML", "knha"),
        ("ML", "z"),
        ("ML", "knha"),
        ("DL", "z"),
        ("DL", "knha"),
        ("EE", "z"),
    ],
)
def test_baujat_matches_metafor(data, baujat_ref, method, test):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metaeval.errors.MetaEvalWarning)  # EE + knha note
        got = metaeval.baujat(data, method=method, test=test, groups="dataset")
    ref = baujat_ref[(baujat_ref["method"] == method) & (baujat_ref["test"] == test)]
    assert list(got["task"]) == list(ref["task"]) and list(got["dataset"]) == list(ref["dataset"])
    np.testing.assert_allclose(got["x"], ref["x"], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(got["y"], ref["y"], rtol=RTOL, atol=ATOL)


def test_baujat_definitions(data):
    """EE: Σx is Q; x does not depend on ci, y does (knha); one effect → NaN."""
    d6 = data[data["dataset"] == "d6"]
    ee = metaeval.baujat(d6, method="EE")
    assert ee["x"].sum() == pytest.approx(metaeval.pool(d6, method="EE")["q"].iloc[0])
    z, kh = metaeval.baujat(d6, test="z"), metaeval.baujat(d6, test="knha")
    np.testing.assert_allclose(z["x"], kh["x"], rtol=1e-12)
    assert not np.allclose(z["y"], kh["y"])
    # y from a naive loop of refits with pool()
    mu = metaeval.pool(d6, test="z")["effect"].iloc[0]
    naive = [
        (lambda p: (p["effect"].iloc[0] - mu) ** 2 / p["se"].iloc[0] ** 2)(
            metaeval.pool(d6.drop(index=i), test="z")
        )
        for i in d6.index
    ]
    np.testing.assert_allclose(z["y"], naive, rtol=1e-9)


def test_baujat_bad_input(data):
    one = pd.concat(
        [
            data[data["dataset"] == "d5"],
            data[data["dataset"] == "d6"].iloc[:1].assign(dataset="solo"),
        ]
    )
    with pytest.warns(DegenerateWarning, match="x and y are NaN") as record:
        got = metaeval.baujat(one, groups="dataset")
    assert len(record) == 1 and "solo" in str(record[0].message)
    assert got.loc[got["dataset"] == "solo", ["x", "y"]].isna().all().all()
    with pytest.raises(OptionError, match="method"):
        metaeval.baujat(data, method="bogus")


def test_every_subset_once():
    """The enumeration holds each non-empty subset once (k = 4: 15)."""
    eff = pd.DataFrame({"task": list("abcd"), "effect": [0.1, 0.3, 0.2, 0.5], "variance": 0.02})
    res = metaeval.gosh(eff, method="DL")
    seen = {tuple(r) for r in res.included.to_numpy()}
    want = {s for s in itertools.product([False, True], repeat=4) if any(s)}
    assert seen == want and len(res.table) == 15

"""metaeval.permutest against metafor's permutest(exact=TRUE), and its own rules.

The fixture (tests/fixtures/metafor/make_permutest.R) holds metafor 3.8's exact
permutation p-values of 10 generated data sets (k = 4..8) under the intercept-only model
and with a numeric moderator (distinct values), a numeric moderator with tied values and
a factor (tied rows), for REML and DL with z and Knapp–Hartung tests and EE with z. The
p-values are compared as counts: p·N (hits among N refits) equal as integers, N equal to
metafor's refits; the observed statistics to 1e-6 (relative).
"""

from __future__ import annotations

import itertools
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval.errors import DegenerateWarning, OptionError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "metafor"
TERMS = {"intrcpt": "intercept", "x": "x", "xt": "xt", "fb": "f[T.b]", "fc": "f[T.c]"}
MODELS = [
    (model, method, test)
    for model in ("int", "x", "xt", "f")
    for method, test in (("REML", "z"), ("REML", "knha"), ("DL", "z"), ("DL", "knha"), ("EE", "z"))
]


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    d = pd.read_csv(FIXTURES / "permutest_data.csv.gz")
    return d.rename(columns={"yi": "effect", "vi": "variance"})


@pytest.fixture(scope="module")
def reference() -> pd.DataFrame:
    ref = pd.read_csv(FIXTURES / "permutest_pvals.csv.gz")
    # metafor's Fisher scoring failed in some REML refits there (they were dropped): the
    # same fits with halved scoring steps, where every refit converges
    redo = pd.read_csv(FIXTURES / "permutest_pvals_stepadj.csv.gz")
    assert (redo["n_ok"] == redo["n_exact"]).all()
    key = ["case", "model", "method", "test", "term"]
    ref = pd.concat(
        [
            ref.merge(redo[key], on=key, how="left", indicator=True)
            .query("_merge == 'left_only'")
            .drop(columns="_merge"),
            redo.drop(columns="stepadj"),
        ],
        ignore_index=True,
    )
    return ref.assign(term=ref["term"].map(TERMS))


def _run(data: pd.DataFrame, model: str, **kwargs) -> pd.DataFrame:
    mods = None if model == "int" else model
    with warnings.catch_warnings():
        # metafor's likelihood check resets some REML fits of these small sets to τ² = 0
        warnings.simplefilter("ignore", DegenerateWarning)
        return metaeval.permutest(data, mods=mods, groups="case", **kwargs)


@pytest.mark.parametrize(("model", "method", "test"), MODELS)
def test_exact_p_values_equal_metafor(data, reference, model, method, test):
    ref = reference.query("model == @model and method == @method and test == @test")
    assert len(ref)  # every model is in the fixture
    cases = ref["case"].unique()
    got = _run(data[data["case"].isin(cases)], model, method=method, test=test, exact=True)
    both = got.merge(ref, on=["case", "term"], how="outer", validate="one_to_one")
    assert len(both) == len(ref) == len(got)
    assert both["exact"].all()
    # the observed statistic (to 1e-6) and the counts (exactly)
    np.testing.assert_allclose(both["statistic"], both["zval"], rtol=1e-6)
    np.testing.assert_array_equal(both["n_permutations"], both["n_ok"])
    np.testing.assert_array_equal(both["n_permutations"], both["n_exact"])
    hits = np.round(both["p_value"] * both["n_permutations"])
    np.testing.assert_array_equal(hits, both["hits"])
    np.testing.assert_allclose(both["p_value"], both["pval"], rtol=0, atol=1e-12)
    if model != "int":
        np.testing.assert_allclose(both["qm"], both["QM"], rtol=1e-6)
        qm_hits = np.round(both["qm_p_value"] * both["n_permutations"])
        np.testing.assert_array_equal(qm_hits, both["QM_hits"])
        np.testing.assert_allclose(both["qm_p_value"], both["QMp"], rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("model", "method"), [(m, t) for m in ("int", "xt") for t in ("REML", "DL")]
)
def test_adhoc_p_values_equal_metafor(data, model, method):
    """test="adhoc": the observed fit and every refit use Knapp–Hartung's factor floored at
    1 (metafor's permutest of a test="adhoc" fit; make_permutest_adhoc.R). Compared where
    every one of metafor's refits converged (its Fisher scoring fails on a few REML refits
    with ~ xt, which it drops)."""
    ref = pd.read_csv(FIXTURES / "permutest_adhoc.csv.gz")
    ref = ref.assign(term=ref["term"].map(TERMS))
    ref = ref.query("model == @model and method == @method and n_ok == n_exact")
    assert ref["case"].nunique() >= 8
    got = _run(data[data["case"].isin(ref["case"])], model, method=method, test="adhoc", exact=True)
    assert got.attrs["test"] == "adhoc"
    both = got.merge(ref, on=["case", "term"], how="inner", validate="one_to_one")
    assert len(both) == len(ref) == len(got)
    np.testing.assert_allclose(both["statistic"], both["zval"], rtol=1e-6)
    np.testing.assert_array_equal(both["n_permutations"], both["n_exact"])
    np.testing.assert_array_equal(np.round(both["p_value"] * both["n_permutations"]), both["hits"])
    if model != "int":
        qm_hits = np.round(both["qm_p_value"] * both["n_permutations"])
        np.testing.assert_array_equal(qm_hits, both["QM_hits"])


def test_the_number_of_distinct_permutations(data):
    """2^k sign vectors; k!/Π m_j! orders of the rows with tied rows (counted here)."""
    one = data[data["case"] == 10]  # k = 8
    k = len(one)
    assert _run(one, "int")["n_permutations"].iloc[0] == 2**k
    sizes = one["f"].value_counts().to_numpy()
    expected = math.factorial(k) // math.prod(math.factorial(int(m)) for m in sizes)
    got = _run(one, "f", exact=True)
    assert (got["n_permutations"] == expected).all()
    assert expected == 560  # 8!/(3! 3! 2!)


def test_exact_when_cheaper_than_the_resamples():
    """metafor's rule: exact when 2^k <= n_resamples, else random."""
    rng = np.random.default_rng(3)
    eff = pd.DataFrame(
        {
            "task": [f"t{i}" for i in range(10)],
            "effect": rng.normal(0.1, 0.1, 10),
            "variance": rng.uniform(0.002, 0.02, 10),
        }
    )
    nine = metaeval.permutest(eff.iloc[:9], seed=1)
    assert nine["exact"].all() and (nine["n_permutations"] == 512).all()
    ten = metaeval.permutest(eff, seed=1)
    assert not ten["exact"].any() and (ten["n_permutations"] == 1000).all()
    ten_exact = metaeval.permutest(eff, seed=1, n_resamples=1024)
    assert ten_exact["exact"].all() and (ten_exact["n_permutations"] == 1024).all()
    forced = metaeval.permutest(eff.iloc[:9], seed=1, exact=False)
    assert not forced["exact"].any() and (forced["n_permutations"] == 1000).all()


def test_random_permutations(data):
    one = data[data["case"] == 10]
    exact = _run(one, "int", exact=True)["p_value"].iloc[0]
    a = _run(one, "int", exact=False, seed=7, n_resamples=400)
    b = _run(one, "int", exact=False, seed=7, n_resamples=400)
    pd.testing.assert_frame_equal(a, b)  # reproducible
    assert a.attrs["seed"] == 7 and a.attrs["n_resamples"] == 400
    p = a["p_value"].iloc[0]
    assert 1 / 400 <= p <= 1 and not a["exact"].iloc[0]
    assert p * 400 == pytest.approx(round(p * 400), abs=1e-9)
    # many resamples: within 3 binomial standard errors of the exact p
    n = 20000
    big = _run(one, "int", exact=False, seed=11, n_resamples=n)["p_value"].iloc[0]
    assert abs(big - exact) <= 3 * math.sqrt(exact * (1 - exact) / n) + 1 / n
    got = _run(one, "xt", exact=False, seed=11, n_resamples=n)
    want = _run(one, "xt", exact=True)
    se = np.sqrt(want["p_value"] * (1 - want["p_value"]) / n)
    assert (np.abs(got["p_value"] - want["p_value"]) <= 3 * se + 1 / n).all()
    assert abs(got["qm_p_value"].iloc[0] - want["qm_p_value"].iloc[0]) <= 3 * se.max() + 1 / n


def test_seed_recorded_when_not_given(data):
    one = data[data["case"] == 10]
    res = _run(one, "int", exact=False, n_resamples=50)
    assert isinstance(res.attrs["seed"], int)
    again = _run(one, "int", exact=False, n_resamples=50, seed=res.attrs["seed"])
    pd.testing.assert_frame_equal(res, again)


@pytest.mark.parametrize("model", ["int", "xt", "f"])
@pytest.mark.parametrize("exact", [True, False])
def test_groups_at_once_equal_each_alone(data, model, exact):
    together = _run(data, model, exact=exact, seed=5, n_resamples=200)
    alone = pd.concat(
        [
            _run(data[data["case"] == c], model, exact=exact, seed=5, n_resamples=200)
            for c in data["case"].unique()
        ],
        ignore_index=True,
    )
    pd.testing.assert_frame_equal(together, alone, check_exact=False, rtol=1e-12)


def test_input_not_mutated(data):
    before = data.copy()
    _run(data, "f", exact=False, seed=1, n_resamples=20)
    pd.testing.assert_frame_equal(data, before)


def test_accessor(data):
    one = data[data["case"] == 3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateWarning)
        a = one.meta.permutest(mods="x", seed=2)
        b = metaeval.permutest(one, mods="x", seed=2)
    pd.testing.assert_frame_equal(a, b)


def test_single_effect_is_nan_with_a_warning(data):
    one = data[data["case"] == 1].assign(case=1)
    lone = one.iloc[:1].assign(case=99)
    two = pd.concat([one, lone], ignore_index=True)
    with pytest.warns(DegenerateWarning) as record:  # pool's warning, then permutest's
        res = metaeval.permutest(two, groups="case", method="EE")
    assert any("single effect: no permutation test" in str(w.message) for w in record)
    assert res.loc[res["case"] == 99, "p_value"].isna().all()
    assert (res.loc[res["case"] == 99, "n_permutations"] == 0).all()
    alone = metaeval.permutest(one, groups="case", method="EE")
    np.testing.assert_array_equal(
        res.loc[res["case"] == 1, "p_value"].to_numpy(), alone["p_value"].to_numpy()
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"exact": "yes"}, "`exact`.*'yes'"),
        ({"n_resamples": 1}, "`n_resamples`.*1"),
        ({"n_resamples": 2.5}, "`n_resamples`"),
        ({"seed": -1}, "`seed`"),
        ({"method": "bogus"}, "method"),
        ({"test": "tdist"}, "test"),
    ],
)
def test_bad_options(data, kwargs, match):
    with pytest.raises(OptionError, match=match):
        metaeval.permutest(data, groups="case", **kwargs)


def test_exact_with_too_many_permutations():
    rng = np.random.default_rng(1)
    eff = pd.DataFrame(
        {
            "task": [f"t{i}" for i in range(21)],
            "effect": rng.normal(0.1, 0.1, 21),
            "variance": rng.uniform(0.002, 0.02, 21),
            "x": rng.normal(size=21),
        }
    )
    with pytest.raises(OptionError, match=r"`exact=True`.*2,097,152"):
        metaeval.permutest(eff, exact=True)
    with pytest.raises(OptionError, match=r"`exact=True`"):
        metaeval.permutest(eff.iloc[:11], exact=True, mods="x")  # 11! = 39,916,800
    res = metaeval.permutest(eff, seed=1, n_resamples=100)  # random: fine
    assert not res["exact"].any()


def test_failed_refits_are_left_out_with_a_warning():
    """Two of the 24 orders of x fit the effects exactly (Knapp–Hartung s² = 0, no t):
    left out of both counts. Checked by a naive loop of metareg() over the orders."""
    eff = pd.DataFrame(
        {
            "task": list("abcd"),
            "effect": [0.1, 0.2, 0.3, 0.4],
            "variance": [0.01, 0.02, 0.01, 0.02],
            "x": [2.0, 1.0, 3.0, 4.0],
        }
    )
    with pytest.warns(DegenerateWarning, match="left_out=2, of=24"):
        got = metaeval.permutest(eff, mods="x", method="DL")
    assert (got["n_permutations"] == 22).all() and got["exact"].all()
    observed = metaeval.metareg(eff, "x", method="DL").table["statistic"].to_numpy()
    stats = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateWarning)  # the exact fits
        for order in itertools.permutations(range(4)):
            shuffled = eff.assign(x=eff["x"].to_numpy()[list(order)])
            stats.append(metaeval.metareg(shuffled, "x", method="DL").table["statistic"])
    stats = np.array(stats)
    ok = np.isfinite(stats).all(axis=1)
    assert ok.sum() == 22
    hits = (np.abs(stats[ok]) >= np.abs(observed) - np.sqrt(np.finfo(float).eps)).sum(axis=0)
    np.testing.assert_array_equal(np.round(got["p_value"] * 22), hits)

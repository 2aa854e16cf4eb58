"""Pooling against metafor on a battery of 1,030 meta-analyses (fixtures/metafor/make_battery.R)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import FIXTURES

import metaeval
from metaeval import DegenerateWarning

DIR = FIXTURES / "metafor"
CLOSED = ["EE", "DL", "HE", "HS", "SJ"]
ITERATIVE = ["ML", "REML", "EB", "PM"]
COLUMNS = {  # ours -> metafor
    "effect": "estimate",
    "se": "se",
    "statistic": "zval",
    "p_value": "pval",
    "ci_low": "ci.lb",
    "ci_high": "ci.ub",
    "pi_low": "pi.lb",
    "pi_high": "pi.ub",
    "tau2": "tau2",
    "i2": "I2",
    "h2": "H2",
    "q": "QE",
    "q_p_value": "QEp",
}


def _read(name: str) -> pd.DataFrame:
    return pd.read_csv(DIR / f"{name}.csv.gz", keep_default_na=True)


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    d = _read("battery_data").rename(columns={"yi": "effect", "vi": "variance"})
    return d.assign(study=d.groupby("id").cumcount() + 1)


@pytest.fixture(scope="module")
def fits() -> pd.DataFrame:
    return _r(_read("battery_fits"), keep=("id", "method", "test"))


def _r(ref: pd.DataFrame, keep=("id",)) -> pd.DataFrame:
    """metafor's columns prefixed with R_, but for the join keys."""
    return ref.rename(columns={c: f"R_{c}" for c in ref.columns if c not in keep})


def _pool(data, **kwargs) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateWarning)
        warnings.simplefilter("ignore", metaeval.MetaEvalWarning)
        return metaeval.pool(data, over="study", groups="id", **kwargs)


def _close(ours, theirs, rtol, atol, what):
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    assert np.array_equal(np.isnan(ours), np.isnan(theirs)), what
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, err_msg=what)


@pytest.mark.parametrize("test", ["z", "knha", "adhoc"])
@pytest.mark.parametrize("method", CLOSED + ITERATIVE)
def test_battery_matches_rma(data, fits, method, test):
    ref = fits[(fits["method"] == method) & (fits["test"] == test)].drop(columns=["method", "test"])
    ours = _pool(data, method=method, test=test).merge(ref, on="id", validate="one_to_one")
    assert len(ours) == 1030
    failed = ours["R_error"].notna()
    if failed.any():
        # metafor's EB scoring oscillates on 3 analyses; ours restarts with smaller steps
        # (metafor's stepadj remedy). EB's fixed point solves Q(tau2) = k - 1, which is PM.
        assert method == "EB" and failed.sum() == 3
        pm = fits[(fits["method"] == "PM") & (fits["test"] == test)].set_index("id")
        for col, ref_col in {"tau2": "R_tau2", "effect": "R_estimate", "ci_low": "R_ci.lb"}.items():
            got = ours.loc[failed, col].to_numpy()
            _close(
                got, pm.loc[ours.loc[failed, "id"], ref_col].to_numpy(), 1e-6, 1e-10, f"EB=PM {col}"
            )
    ok = ours[~failed].copy()
    np.testing.assert_array_equal(ok["k"], ok["R_k"])
    if test == "knha":
        # equal effects: Knapp–Hartung's s² is 0; metafor gives se 0, the interval [μ̂, μ̂]
        # and p 0 (or NaN), metaeval NaN with a warning (tests/pooling/test_pooling.py)
        zero = (ok["R_se"] == 0).to_numpy()
        assert zero.sum() == 10
        inference = ["se", "statistic", "p_value", "ci_low", "ci_high", "pi_low", "pi_high"]
        assert ok.loc[zero, inference].isna().all(axis=None)
        ok.loc[zero, [f"R_{COLUMNS[c]}" for c in inference]] = np.nan
    rtol = 1e-8 if method in CLOSED else 1e-6
    for col, ref_col in COLUMNS.items():
        ours_v, theirs = ok[col].to_numpy(float), ok[f"R_{ref_col}"].to_numpy(float)
        if col in ("p_value", "q_p_value"):  # compare tail probabilities on the log scale
            tiny = theirs < 1e-290  # where float64 underflows, R and scipy differ in how
            assert (ours_v[tiny] < 1e-280).all(), f"{method}/{test}/{col} tiny"
            ours_v, theirs = np.log(ours_v[~tiny]), np.log(theirs[~tiny])
        atol = {"tau2": 1e-10, "i2": 1e-6}.get(col, 1e-10)
        _close(ours_v, theirs, rtol, atol, f"{method}/{test}/{col}")


@pytest.mark.parametrize("method", CLOSED + ITERATIVE)
def test_battery_weights(data, method):
    ref = _r(_read("battery_weights"), keep=("id", "method", "study"))
    ref = ref[ref["method"] == method]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateWarning)
        ours = metaeval.weights(data[data["id"] <= 200], method=method, over="study", groups="id")
    both = ours.merge(ref, on=["id", "study"], validate="one_to_one")
    assert len(both) == len(ref) > 4000
    both = both[both["R_weight"].notna()]
    _close(both["weight"], both["R_weight"], 1e-8 if method in CLOSED else 1e-6, 1e-10, method)


def test_battery_q_profile(data):
    ref = _r(_read("battery_confint"))
    ours = _pool(data[data["id"] <= 150], method="REML").merge(ref, on="id", validate="one_to_one")
    assert len(ours) == 150
    assert (ours["tau2_low"] == 0).any() and (ours["tau2_low"] > 0).any()  # both branches
    for col, ref_col in {
        "tau2_low": "tau2.lb",
        "tau2_high": "tau2.ub",
        "i2_low": "I2.lb",
        "i2_high": "I2.ub",
    }.items():
        _close(ours[col], ours[f"R_{ref_col}"], 1e-7, 1e-9, col)
    assert (ours["tau2_low"] <= ours["tau2"]).all() and (ours["tau2"] <= ours["tau2_high"]).all()


LOO = {
    "effect": "estimate",
    "se": "se",
    "statistic": "zval",
    "p_value": "pval",
    "ci_low": "ci.lb",
    "ci_high": "ci.ub",
    "q": "Q",
    "q_p_value": "Qp",
    "tau2": "tau2",
    "i2": "I2",
    "h2": "H2",
}


def _per_study(data, name, func, method, test):
    """metafor's per-study fixture ``name`` for one fit, joined to ``func`` on the same analyses."""
    ref = _r(_read(name), keep=("id", "method", "test", "study"))
    ref = ref[(ref["method"] == method) & (ref["test"] == test)]
    sub = data[data["id"].isin(ref["id"].unique())]
    ours = func(sub, method=method, test=test, over="study", groups="id")
    both = ours.merge(ref, on=["id", "study"], validate="one_to_one")
    assert len(both) == len(ref) > 2000
    return both, sub


@pytest.mark.parametrize(("method", "test"), [("REML", "z"), ("DL", "knha")])
def test_battery_leave_one_out(data, method, test):
    both, sub = _per_study(data, "battery_loo", metaeval.leave_one_out, method, test)
    np.testing.assert_array_equal(
        both["k"], sub.groupby("id").size().reindex(both["id"]).to_numpy() - 1
    )
    for col, ref_col in LOO.items():  # I² in percent: metafor stops a hair above tau2 = 0
        atol = 1e-6 if col == "i2" else 1e-9
        _close(both[col], both[f"R_{ref_col}"], 1e-6, atol, f"{method}/{test}/{col}")


INFL = {
    "rstudent": "rstudent",
    "dffits": "dffits",
    "cook_d": "cook.d",
    "cov_r": "cov.r",
    "tau2_del": "tau2.del",
    "q_del": "QE.del",
    "hat": "hat",
    "weight": "weight",
    "dfbetas": "dfbs",
}


@pytest.mark.parametrize(("method", "test"), [("REML", "z"), ("DL", "knha")])
def test_battery_influence(data, method, test):
    both, _ = _per_study(data, "battery_infl", metaeval.influence, method, test)
    for col, ref_col in INFL.items():
        _close(both[col], both[f"R_{ref_col}"], 1e-6, 1e-9, f"{method}/{test}/{col}")
    np.testing.assert_array_equal(both["influential"], both["R_inf"])
    assert both["influential"].any()


@pytest.mark.parametrize("test", ["z", "knha"])
def test_battery_subgroups(data, test):
    ref = _r(_read("battery_sub"), keep=("id", "test", "subgroup"))
    ref = ref[ref["test"] == test]
    sub = data[data["id"].isin(ref["id"].unique())].copy()
    sub["g"] = np.array(["a", "b", "c"])[(sub["study"] - 1) % 3]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = metaeval.pool(sub, over="study", groups="id", method="REML", test=test, by="g")
    ours = ours.rename(columns={"g": "subgroup"})
    both = ours.merge(ref, on=["id", "subgroup"], validate="one_to_one")
    assert len(both) == len(ref) > 150
    # one subgroup (id 44, b) has two maxima of the restricted likelihood: metafor stops at
    # τ² = 0, the lower one (issue 39, item 23); pool() takes the higher and says so
    elsewhere = [w.message.groups for w in caught if "metafor's rma() stops" in str(w.message)]
    assert len(elsewhere) == 1
    named = elsewhere[0].rename(columns={"g": "subgroup"})
    assert named[["id", "subgroup"]].values.tolist() == [[44, "b"]]
    assert (
        named["tau2_metafor"].tolist()
        == both.query("id == 44 and subgroup == 'b'")["R_tau2"].tolist()
    )
    lower = (both["id"] == 44) & (both["subgroup"] == "b")
    assert both.loc[lower, "tau2"].item() > 0
    whole = both.loc[~lower]
    for col, ref_col in {"k": "k", "effect": "estimate", "se": "se", "tau2": "tau2"}.items():
        _close(whole[col], whole[f"R_{ref_col}"], 1e-6, 1e-9, f"{test}/{col}")
    # Q_between combines the subgroups of an id: id 44's differs with its subgroup b
    rest = both[both["id"] != 44]
    for col, ref_col in {"q_between": "Qb", "q_between_p_value": "Qbp"}.items():
        _close(rest[col], rest[f"R_{ref_col}"], 1e-6, 1e-9, f"{test}/{col}")
    assert (both["q_between_df"] == 2).all()

"""Properties of compare() on random tables: swapping the pair, shuffling rows, self-pairs.

Tables are small (2–3 systems, 1–2 tasks and metrics, 1–10 queries) with the
degeneracies of real evaluations: scores on a grid (ties, zero differences),
copies of a system, constant systems and queries only some systems have.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import metaeval
from metaeval import DegenerateWarning, MetaEvalWarning, PairingError

TESTS = ["t", "wilcoxon", "sign", "randomization", "bootstrap"]
FLIP = {"two-sided": "two-sided", "greater": "less", "less": "greater"}


@st.composite
def tables(draw: Any) -> pd.DataFrame:
    n_systems = draw(st.integers(2, 3))
    grid = draw(st.booleans())
    rows = []
    for metric in [f"m{i}" for i in range(draw(st.integers(1, 2)))]:
        for task in [f"t{i}" for i in range(draw(st.integers(1, 2)))]:
            n = draw(st.integers(1, 10))
            first = None
            for s in range(n_systems):
                kind = draw(st.sampled_from(["own", "own", "copy", "constant"]))
                if grid:
                    own = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))) / 4
                else:
                    own = np.array(draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
                values = {"own": own, "copy": first, "constant": np.full(n, 0.5)}[kind]
                values = own if values is None else values
                first = values if first is None else first
                keep = draw(st.lists(st.booleans(), min_size=n, max_size=n))
                rows += [
                    (task, f"q{q}", f"s{s}", metric, float(values[q]))
                    for q in range(n)
                    if keep[q] or q == 0
                ]
    return pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])


def run(table: pd.DataFrame, **kwargs: Any) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MetaEvalWarning)
        return metaeval.compare(table, n_resamples=199, seed=7, **kwargs)


def key(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.set_index(["metric", "task"]).sort_index()


@given(tables(), st.sampled_from(TESTS), st.sampled_from(list(FLIP)))
@pytest.mark.slow
def test_swapping_treatment_and_control_flips_the_statistic_and_keeps_p(table, test, alt):
    ab = key(run(table, treatment="s1", control="s0", test=test, alternative=alt))
    ba = key(run(table, treatment="s0", control="s1", test=test, alternative=FLIP[alt]))
    assert ab.index.equals(ba.index)
    np.testing.assert_allclose(ba["p_value"], ab["p_value"], rtol=1e-12, atol=0)
    np.testing.assert_allclose(ba["diff"], -ab["diff"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ba["effect_size"], -ab["effect_size"], rtol=1e-12)
    np.testing.assert_allclose(ba["ci_low"], -ab["ci_high"], rtol=1e-12, atol=1e-15)
    s, swapped = ab["statistic"].to_numpy(), ba["statistic"].to_numpy()
    np.testing.assert_array_equal(np.isnan(swapped), np.isnan(s))
    if test in ("t", "randomization", "bootstrap"):  # t, mean difference, studentized t
        np.testing.assert_allclose(swapped, -s, rtol=1e-12, atol=1e-15)
    elif test == "sign":  # the share of positive differences among the nonzero ones
        np.testing.assert_allclose(swapped, 1 - s, rtol=1e-12)
    elif alt == "two-sided":  # scipy's W = min(W+, W−): symmetric
        np.testing.assert_array_equal(swapped, s)
    else:  # W+ of one is W− of the other: they add up to the rank sum of the nonzero |d|
        d = paired_differences(table, "s1", "s0")
        total = [len(d[i][d[i] != 0]) * (len(d[i][d[i] != 0]) + 1) / 2 for i in ab.index]
        np.testing.assert_allclose(s + swapped, np.where(np.isnan(s), np.nan, total))


def paired_differences(table: pd.DataFrame, a: str, b: str) -> dict[tuple[str, str], np.ndarray]:
    wide = table.pivot_table(
        index=["metric", "task", "query"], columns="system", values="value", aggfunc="first"
    )
    d = (wide[a] - wide[b]).dropna()
    return {k: g.to_numpy() for k, g in d.groupby(level=["metric", "task"])}


@given(tables(), st.sampled_from(TESTS), st.randoms(use_true_random=False))
@pytest.mark.slow
def test_shuffling_rows_changes_nothing(table, test, random):
    before = run(table, control=None, test=test)
    shuffled = table.sample(frac=1.0, random_state=random.randint(0, 2**31))
    after = run(shuffled, control=None, test=test)
    pd.testing.assert_frame_equal(after, before, check_exact=False, rtol=1e-12)


@given(tables(), st.sampled_from(TESTS))
def test_a_system_is_never_its_own_pair(table, test):
    every = run(table, control=None, test=test)
    assert not (every["treatment"] == every["control"]).any()
    systems = set(table["system"])
    pairs = set(zip(every["treatment"], every["control"], strict=True))
    assert pairs <= {(a, b) for a in systems for b in systems if a != b}
    with pytest.raises(PairingError, match="same system"):
        metaeval.compare(table, treatment="s0", control="s0", test=test)


@given(tables(), st.sampled_from(TESTS))
def test_a_system_against_its_copy_is_nan_with_a_warning_or_p_1(table, test):
    copy = table[table["system"] == "s0"].assign(system="copy")
    both = pd.concat([table, copy], ignore_index=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = metaeval.compare(
            both, treatment="copy", control="s0", test=test, n_resamples=199, seed=7
        )
    assert (res["diff"] == 0).all()
    one = res["n"] < 2  # a single paired query: NaN for every test
    if test == "randomization":  # every sign flip is as extreme as the observed 0
        assert (res.loc[~one, "statistic"] == 0).all() and (res.loc[~one, "p_value"] == 1).all()
        undefined = one
    else:  # zero variance (t, bootstrap) or all differences zero (Wilcoxon, sign test)
        undefined = pd.Series(True, index=res.index)
    assert res.loc[undefined, ["statistic", "p_value"]].isna().all(axis=None)
    warned = [w.message for w in caught if issubclass(w.category, DegenerateWarning)]
    named = pd.concat([pd.DataFrame(w.groups) for w in warned]) if warned else pd.DataFrame()
    assert len(named) == undefined.sum()

"""compare() with several baselines as one family: ``adjust="maxt"`` (Westfall–Young
single-step max-T on the randomization test's sign flips) and ``exact=True`` (all 2^n
sign flips), against naive enumerations written here from the definitions, statsmodels'
``multipletests`` and itself (issue 30, item 2)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from _helpers import make_scores

import metaeval
from metaeval import OptionError
from metaeval.paired import _resampling as rs

CONTROLS = ["c1", "c2"]
TREATMENTS = ["x", "y", "z"]
SYSTEMS = (*CONTROLS, *TREATMENTS)


def _wide(scores: pd.DataFrame, task: str, metric: str) -> pd.DataFrame:
    part = scores[(scores["task"] == task) & (scores["metric"] == metric)]
    return part.pivot(index="query", columns="system", values="value")


def _all_signs(n: int) -> np.ndarray:
    """Every sign vector of length n, one per row (2^n rows), the identity among them."""
    return np.array(list(itertools.product((-1.0, 1.0), repeat=n)))


def _t(d: np.ndarray) -> np.ndarray:
    """The paired t of each row of ``d``: mean / (SD / √n), the textbook formula."""
    n = d.shape[-1]
    return d.mean(axis=-1) / (d.std(axis=-1, ddof=1) / np.sqrt(n))


def _naive_maxt(diffs: dict, alternative: str) -> dict:
    """Max-T adjusted p-values by full enumeration of the sign flips of one task:
    p_i = share of flips s whose max over the pairs j of u(t(s·d_j)) ≥ u(t(d_i)),
    u = |·|, identity or negation; the same s for every pair."""
    u = {"two-sided": np.abs, "greater": lambda t: t, "less": lambda t: -t}[alternative]
    keys = list(diffs)
    signs = _all_signs(len(diffs[keys[0]]))
    flipped = np.stack([u(_t(signs * diffs[k])) for k in keys])  # (pairs, flips)
    top = flipped.max(axis=0)
    out = {}
    for k in keys:
        observed = u(_t(diffs[k]))
        out[k] = float(np.mean(top >= observed - 1e-9 * abs(observed)))
    return out


def _naive_randomization(d: np.ndarray, alternative: str) -> float:
    """Share of all 2^n sign flips whose sum is at least as extreme as the observed sum."""
    sums = _all_signs(len(d)) @ d
    t, tol = d.sum(), 1e-9 * np.abs(d).sum()
    if alternative == "two-sided":
        return float(np.mean(np.abs(sums) >= abs(t) - tol))
    if alternative == "greater":
        return float(np.mean(sums >= t - tol))
    return float(np.mean(sums <= t + tol))


@pytest.fixture
def small(rng) -> pd.DataFrame:
    # two tasks of 12 and 10 queries (one batch: the 10-query task padded to 12)
    return make_scores(rng, tasks={"a": 12, "b": 10}, systems=SYSTEMS, metrics=("m1", "m2"))


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_maxt_equals_exact_enumeration_of_all_sign_flips(small, alternative):
    res = metaeval.compare(
        small,
        control=CONTROLS,
        treatment=TREATMENTS,
        test="randomization",
        adjust="maxt",
        exact=True,
        alternative=alternative,
    )
    assert len(res) == 2 * 2 * 6  # 3 treatments x 2 controls on each task and metric
    for (metric, task), family in res.groupby(["metric", "task"]):
        wide = _wide(small, task, metric)
        diffs = {(t, c): (wide[t] - wide[c]).to_numpy() for t in TREATMENTS for c in CONTROLS}
        want = _naive_maxt(diffs, alternative)
        for row in family.itertuples():
            assert row.p_adjusted == pytest.approx(want[row.treatment, row.control], abs=1e-12)
            d = diffs[row.treatment, row.control]
            assert row.p_value == pytest.approx(_naive_randomization(d, alternative), abs=1e-12)
    assert res.attrs["exact"] is True and res.attrs["n_resamples"] is None


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_exact_randomization_equals_naive_enumeration(rng, alternative):
    scores = make_scores(rng, tasks={"a": 7, "b": 13, "c": 16}, metrics=("m",))
    res = metaeval.compare(
        scores, control="ctrl", test="randomization", exact=True, alternative=alternative
    )
    assert len(res) == 2 * 3
    for row in res.itertuples():
        wide = _wide(scores, row.task, row.metric)
        d = (wide[row.treatment] - wide[row.control]).to_numpy()
        assert row.p_value == pytest.approx(_naive_randomization(d, alternative), abs=1e-12)
        assert row.statistic == pytest.approx(d.mean())


def test_holm_bonferroni_bh_over_several_baselines_are_one_family(small):
    from statsmodels.stats.multitest import multipletests

    for method in ("holm", "bonferroni", "fdr_bh"):
        res = metaeval.compare(
            small, control=CONTROLS, treatment=TREATMENTS, test="t", adjust=method
        )
        for _, family in res.groupby(["metric", "task"]):
            assert len(family) == 6  # both baselines in one family, not one per control
            want = multipletests(family["p_value"], method=method)[1]
            np.testing.assert_allclose(family["p_adjusted"], want, rtol=1e-12)


def test_maxt_is_between_the_raw_p_and_bonferroni(rng):
    scores = make_scores(rng, tasks={"a": 60, "b": 45}, systems=SYSTEMS, metrics=("m",))
    b = 4000
    kwargs = dict(
        control=CONTROLS, treatment=TREATMENTS, test="randomization", n_resamples=b, seed=11
    )
    res = metaeval.compare(scores, adjust="maxt", **kwargs)
    plain = metaeval.compare(scores, **kwargs)
    # the unadjusted p-values are the randomization test's, from the same sign flips
    np.testing.assert_array_equal(res["p_value"], plain["p_value"])
    assert (res["p_adjusted"] >= res["p_value"]).all()
    bonferroni = metaeval.compare(scores, adjust="bonferroni", **kwargs)["p_adjusted"]
    # Bonferroni's bound up to Monte Carlo error (max-T's t statistics are nearly pivotal)
    assert (res["p_adjusted"] <= bonferroni + 3 / np.sqrt(b)).all()
    # and below it: the pairs share their controls and treatments, so they are correlated
    assert res["p_adjusted"].sum() < bonferroni.sum()


def test_the_same_sign_flips_for_every_pair(rng):
    scores = make_scores(rng, tasks={"a": 30, "b": 50}, systems=("c1", "x", "y"))
    copy = scores[scores["system"] == "x"].assign(system="x_copy")
    scores = pd.concat([scores, copy], ignore_index=True)
    res = metaeval.compare(
        scores, control="c1", test="randomization", adjust="maxt", n_resamples=1000, seed=3
    )
    x = res[res["treatment"] == "x"].reset_index(drop=True)
    x_copy = res[res["treatment"] == "x_copy"].reset_index(drop=True)
    # identical pairs: identical resampled statistics, so identical counts, only when
    # both are flipped with the same signs
    np.testing.assert_array_equal(x["p_value"], x_copy["p_value"])
    np.testing.assert_array_equal(x["p_adjusted"], x_copy["p_adjusted"])
    # a family of one: max-T is the test itself
    with pytest.warns(metaeval.DegenerateWarning, match="changes nothing"):
        alone = metaeval.compare(
            scores,
            control="c1",
            treatment="y",
            test="randomization",
            adjust="maxt",
            n_resamples=1000,
            seed=3,
        )
    np.testing.assert_array_equal(alone["p_adjusted"], alone["p_value"])


def test_maxt_is_reproducible_however_computed(rng, monkeypatch):
    scores = make_scores(rng, tasks={"t1": 200, "t2": 70, "t3": 20}, systems=SYSTEMS)
    kwargs = dict(control=CONTROLS, test="randomization", adjust="maxt", n_resamples=700, seed=2026)
    first = metaeval.compare(scores, **kwargs)
    assert first.attrs["seed"] == 2026 and first.attrs["adjust"] == "maxt"
    np.testing.assert_array_equal(
        first["p_adjusted"], metaeval.compare(scores, **kwargs)["p_adjusted"]
    )
    monkeypatch.setattr(rs, "CHUNK_BYTES", 1)  # one resample block and one pair per chunk
    monkeypatch.setattr(rs, "ITEM_BYTES", 1)  # one resample block per work item
    chunked = metaeval.compare(scores, **kwargs)
    np.testing.assert_array_equal(first["p_adjusted"], chunked["p_adjusted"])
    np.testing.assert_array_equal(first["p_value"], chunked["p_value"])
    monkeypatch.undo()
    shuffled = metaeval.compare(scores.sample(frac=1, random_state=5), **kwargs)
    np.testing.assert_array_equal(first["p_adjusted"], shuffled["p_adjusted"])
    alone = metaeval.compare(scores[scores["task"] == "t2"], **kwargs)
    np.testing.assert_array_equal(
        first.loc[first["task"] == "t2", "p_adjusted"], alone["p_adjusted"]
    )
    other = metaeval.compare(scores, **{**kwargs, "seed": 2027})
    assert not np.array_equal(first["p_adjusted"], other["p_adjusted"])


def test_exact_matches_many_random_flips_and_ignores_the_seed(small):
    kwargs = dict(control=CONTROLS, treatment=TREATMENTS, test="randomization", adjust="maxt")
    exact = metaeval.compare(small, exact=True, **kwargs)
    again = metaeval.compare(small, exact=True, seed=99, **kwargs)
    np.testing.assert_array_equal(exact["p_adjusted"], again["p_adjusted"])
    b = 20_000
    sampled = metaeval.compare(small, n_resamples=b, seed=4, **kwargs)
    se = np.sqrt(np.maximum(exact["p_adjusted"] * (1 - exact["p_adjusted"]), 1 / b) / b)
    assert (np.abs(sampled["p_adjusted"] - exact["p_adjusted"]) <= 4 * se + 1 / b).all()


def test_bad_input(small):
    kwargs = dict(control=CONTROLS, treatment=TREATMENTS)
    with pytest.raises(OptionError, match=r"`adjust`='maxt'.*test='t'.*test='randomization'"):
        metaeval.compare(small, adjust="maxt", **kwargs)
    with pytest.raises(OptionError, match=r"`exact`=True.*test='bootstrap'"):
        metaeval.compare(small, test="bootstrap", exact=True, **kwargs)
    with pytest.raises(OptionError, match=r"`exact` must be True or False, but 'yes'"):
        metaeval.compare(small, test="randomization", exact="yes", **kwargs)
    big = make_scores(np.random.default_rng(0), tasks={"short": 12, "long": 25}, metrics=("m",))
    with pytest.raises(OptionError, match=r"`exact`=True.*at most 20.*'long' \(25\)"):
        metaeval.compare(big, control="ctrl", test="randomization", exact=True)
    effects = metaeval.effects(small, "c1")
    with pytest.raises(OptionError, match=r"`adjust`='maxt'.*pool\(\).*compare\("):
        metaeval.pool(effects, adjust="maxt")
    with pytest.raises(OptionError, match=r"`adjust`='maxt'.*compare\("):
        metaeval.adjust_pvalues([0.01, 0.2], "maxt")


def test_cli_refuses_maxt_without_a_randomization_table(small, tmp_path, capsys):
    from metaeval_cli import main

    path = tmp_path / "scores.csv"
    small.to_csv(path, index=False)
    assert main(["compare", str(path), "--adjust", "maxt"]) == 2
    assert "--adjust maxt" in capsys.readouterr().err
    assert (
        main(
            [
                "compare",
                str(path),
                "--control",
                "c1",
                "--test",
                "randomization",
                "--adjust",
                "maxt",
                "--n-resamples",
                "200",
                "--seed",
                "1",
                "--print-mode",
                "raw",
            ]
        )
        == 0
    )
    assert "p_adjusted" in capsys.readouterr().out


def test_maxt_with_pairs_missing_queries_equals_exact_enumeration(small):
    """Each pair is tested on its own paired queries; the flips are the task's, shared."""
    gone = (small["task"] == "a") & (
        ((small["system"] == "x") & small["query"].isin(["q0", "q1"]))
        | ((small["system"] == "c2") & (small["query"] == "q5"))
    )
    scores = small[~gone]
    with pytest.warns(metaeval.PairingWarning):
        res = metaeval.compare(
            scores,
            control=CONTROLS,
            treatment=TREATMENTS,
            test="randomization",
            adjust="maxt",
            exact=True,
        )
    for (metric, task), family in res.groupby(["metric", "task"]):
        wide = _wide(scores, task, metric)
        signs = _all_signs(len(wide))  # the task's flips, one sign per query
        stats, observed = {}, {}
        for t in TREATMENTS:
            for c in CONTROLS:
                d = (wide[t] - wide[c]).to_numpy()
                paired = ~np.isnan(d)
                stats[t, c] = np.abs(_t(signs[:, paired] * d[paired]))
                observed[t, c] = abs(_t(d[paired]))
        top = np.max(list(stats.values()), axis=0)
        for row in family.itertuples():
            o = observed[row.treatment, row.control]
            assert row.n == (~np.isnan(wide[row.treatment] - wide[row.control])).sum()
            assert row.p_adjusted == pytest.approx(np.mean(top >= o - 1e-9 * o), abs=1e-12)


def test_a_group_without_a_test_has_no_adjusted_p(small):
    lonely = (small["task"] == "a") & (small["system"] == "x") & (small["query"] != "q0")
    with pytest.warns(metaeval.DegenerateWarning, match="fewer than 2 paired queries"):
        with pytest.warns(metaeval.PairingWarning):
            res = metaeval.compare(
                small[~lonely],
                control=CONTROLS,
                treatment=TREATMENTS,
                test="randomization",
                adjust="maxt",
                exact=True,
            )
    one = (res["task"] == "a") & (res["treatment"] == "x")
    assert res.loc[one, ["p_value", "p_adjusted"]].isna().all().all()
    assert res.loc[~one, "p_adjusted"].notna().all()
    assert (res.loc[~one, "p_adjusted"] >= res.loc[~one, "p_value"]).all()


def test_tables_name_max_t_and_exact_flips(small):
    from metaeval.report import to_latex

    kwargs = dict(control="c1", treatment=["x", "y"], test="randomization", adjust="maxt")
    part = small[(small["metric"] == "m1") & (small["task"] == "a")]
    tex = to_latex(metaeval.compare(part, n_resamples=300, seed=1, **kwargs))
    assert "300 resamples, seed 1" in tex and "Westfall–Young max-T correction" in tex
    tex = to_latex(metaeval.compare(part, exact=True, **kwargs))
    assert "paired randomization test, all sign flips, two-sided" in tex


@pytest.mark.parametrize("alternative", ["greater", "less"])
@pytest.mark.parametrize("shared", [0, 1])
def test_a_pair_without_a_test_is_not_in_the_max(alternative, shared):
    """The user's step (issue 39, item 27): with a one-sided alternative, a pair with no
    shared queries (or one) made every pair whose t points the other way p_adjusted = 1,
    where the enumeration of the family's sign flips gives 0.75: its t of 0 entered every
    maximum. Pairs without a test (p NaN) are not in the family, as documented."""
    d_a = np.array([0.0, -0.14, 0.24, 0.07, 0.26, -0.08])  # t = 0.87
    d_b = np.array([-0.06, -0.37, 0.15, -0.04, 0.0, 0.02])  # t = −0.71
    ctrl = np.array([0.5, 0.4, 0.6, 0.3, 0.55, 0.45])
    rows = [("ctrl", f"q{i}", v) for i, v in enumerate(ctrl)]
    rows += [("a", f"q{i}", v) for i, v in enumerate(ctrl + d_a)]
    rows += [("b", f"q{i}", v) for i, v in enumerate(ctrl + d_b)]
    rows += [("c", f"q{i}", 0.5) for i in range(6 - shared, 8)]  # q6, q7: ctrl lacks them
    scores = pd.DataFrame(rows, columns=["system", "query", "value"]).assign(task="t", metric="m")
    with pytest.warns(metaeval.PairingWarning):
        if shared:
            with pytest.warns(metaeval.DegenerateWarning, match="fewer than 2 paired"):
                res = metaeval.compare(
                    scores,
                    control="ctrl",
                    test="randomization",
                    adjust="maxt",
                    exact=True,
                    alternative=alternative,
                )
        else:
            res = metaeval.compare(
                scores,
                control="ctrl",
                test="randomization",
                adjust="maxt",
                exact=True,
                alternative=alternative,
            )
    want = _naive_maxt({"a": d_a, "b": d_b}, alternative)
    got = res.set_index("treatment")
    assert sorted(got.index) == (["a", "b", "c"] if shared else ["a", "b"])
    against = "b" if alternative == "greater" else "a"  # its t points the other way
    assert want[against] == 0.875  # by enumeration; it was 1
    for system in ("a", "b"):
        assert got.loc[system, "p_adjusted"] == pytest.approx(want[system], abs=1e-12)

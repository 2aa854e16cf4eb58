"""Pooling: reference loop, groups, degenerate groups and bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import reference
from _helpers import NARROW_KH, make_scores
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

import metaeval
from metaeval import DegenerateWarning, OptionError, SchemaError


@pytest.mark.parametrize("method", ["EE", "FE", "DL"])
def test_every_group_equals_reference_loop(rng, method):
    scores = make_scores(rng, systems=("ctrl", "a", "b", "c"), metrics=("m1", "m2", "m3"))
    eff = scores.meta.effects(control="ctrl", effect="smcc")
    # test="z" for DL; the default (None) is z for the common-effect model
    pooled = eff.meta.pool(method=method, test="z" if method == "DL" else None)
    assert len(pooled) == 3 * 3
    assert (pooled["test"] == "z").all()
    assert (pooled["method"] == ("EE" if method == "FE" else method)).all()
    for row in pooled.itertuples():
        part = eff[(eff["metric"] == row.metric) & (eff["treatment"] == row.treatment)]
        ref = reference.pool_loop(
            part["effect"].to_numpy(), part["variance"].to_numpy(), "DL" if method == "DL" else "EE"
        )
        for col in ["effect", "se", "ci_low", "ci_high", "tau2", "q"]:
            assert getattr(row, col) == pytest.approx(ref[col], rel=1e-10, abs=1e-15), col
        assert row.q_p_value == pytest.approx(stats.chi2.sf(ref["q"], len(part) - 1), rel=1e-10)


def test_k1_because_metric_names_differ_across_tasks_says_so():
    """Issue 39, item 2: tasks that each have their own metric names (Inspect scorers, an
    lm-eval task's own metrics) pool nothing; the k = 1 warning names that cause for the
    groups whose task shares no metric with the other tasks, and only for them."""
    eff = pd.DataFrame(
        {
            "metric": ["match", "includes", "acc", "acc", "acc_norm", "em"],
            "task": ["qa", "quiz", "arc", "hella", "arc", "gsm8k"],
            "treatment": "b",
            "control": "a",
            "effect": [0.2, 0.1, 0.3, 0.25, 0.2, 0.05],
            "variance": [0.01, 0.02, 0.01, 0.02, 0.01, 0.02],
        }
    )
    with pytest.warns(DegenerateWarning) as record:
        pooled = metaeval.pool(eff, method="DL", test="z")
    assert dict(zip(pooled["metric"], pooled["k"], strict=True)) == {
        "match": 1,
        "includes": 1,
        "acc": 2,
        "acc_norm": 1,
        "em": 1,
    }
    (cause,) = [str(w.message) for w in record if "metric names differ" in str(w.message)]
    assert cause.startswith("3 pooled group(s) have one effect (k = 1)"), cause
    assert all(f"metric='{m}'" in cause for m in ("match", "includes", "em")), cause
    assert "primary" in cause and "acc_norm" not in cause, cause
    # acc_norm: its task shares acc with another task, so metric names do not explain it
    (plain,) = [str(w.message) for w in record if "metric='acc_norm'" in str(w.message)]
    assert plain.startswith("1 pooled group(s) have one effect (k = 1)"), plain
    # one task in all: k = 1 is the whole table, no cause to name
    with pytest.warns(DegenerateWarning) as record:
        metaeval.pool(eff[eff["task"] == "qa"], method="DL", test="z")
    assert not any("metric names differ" in str(w.message) for w in record)


def test_pool_any_table_and_groups():
    eff = pd.DataFrame(
        {
            "study": ["a", "b", "c", "a", "b", "c"],
            "model": ["x"] * 3 + ["y"] * 3,
            "effect": [0.1, 0.3, 0.2, 0.5, -0.1, 0.2],
            "variance": [0.01, 0.02, 0.015, 0.01, 0.03, 0.02],
        }
    )
    with pytest.raises(
        SchemaError,
        match=r"(?s)repeat the same \['study'\] \(there are no group columns\).*groups=",
    ):
        metaeval.pool(eff, over="study")
    pooled = metaeval.pool(eff, over="study", groups="model")
    assert pooled["model"].tolist() == ["x", "y"] and pooled["k"].tolist() == [3, 3]
    single = metaeval.pool(eff[eff["model"] == "x"], over="study")
    assert single["effect"].iloc[0] == pytest.approx(pooled["effect"].iloc[0], rel=1e-12)
    with pytest.raises(SchemaError, match=r"\['domain'\] named in `over`/`groups` are not in"):
        metaeval.pool(eff, over="study", groups="domain")


def test_k1_and_nan_effects_warn(rng):
    eff = pd.DataFrame(
        {
            "metric": ["m", "m", "m", "n"],
            "task": ["a", "b", "c", "a"],
            "effect": [0.2, np.nan, 0.4, 0.3],
            "variance": [0.01, 0.02, 0.02, 0.01],
        }
    )
    with pytest.warns(DegenerateWarning) as record:
        pooled = eff.meta.pool(method="DL", test="z")
    messages = [str(w.message) for w in record]
    assert any(
        "1 effect(s) with NaN effect or variance were left out" in m and "task='b'" in m
        for m in messages
    )
    assert any(
        "have one effect (k = 1): q, q_p_value, i2, h2, the prediction interval and prob_gain, tau2 and its interval are NaN:"
        in m
        and "metric='n'" in m
        for m in messages
    )
    m, n = pooled.iloc[0], pooled.iloc[1]
    assert m["k"] == 2 and n["k"] == 1
    assert n["effect"] == 0.3 and n["se"] == pytest.approx(0.1)
    assert np.isnan([n["tau2"], n["i2"], n["h2"], n["q"], n["q_p_value"], n["pi_low"]]).all()


def test_ee_prediction_interval_is_ci():
    eff = pd.DataFrame(
        {"task": list("abcd"), "effect": [0.1, 0.5, 0.2, 0.4], "variance": [0.01] * 4}
    )
    pooled = eff.meta.pool(method="EE")
    assert pooled["pi_low"].iloc[0] == pooled["ci_low"].iloc[0]
    assert pooled["tau2"].iloc[0] == 0


def test_dl_interval_wider_than_ee_under_heterogeneity():
    eff = pd.DataFrame(
        {"task": list("abcd"), "effect": [0.1, 0.9, 0.2, 0.7], "variance": [0.01] * 4}
    )
    dl, ee = eff.meta.pool(method="DL").iloc[0], eff.meta.pool(method="EE").iloc[0]
    assert dl["tau2"] > 0 and dl["se"] > ee["se"]
    assert dl["pi_high"] - dl["pi_low"] > dl["ci_high"] - dl["ci_low"]
    assert dl["i2"] == pytest.approx(
        100 * dl["tau2"] / (dl["tau2"] + 3 / (4 / 0.01 - 4 * 0.01**-2 / (4 / 0.01)))
    )


def test_display_scales(rng):
    scores = make_scores(rng)
    corr = scores.meta.effects(control="ctrl", effect="corr").meta.pool()
    np.testing.assert_allclose(corr["r"], np.tanh(corr["effect"]), rtol=1e-12)
    np.testing.assert_allclose(corr["r_pi_low"], np.tanh(corr["pi_low"]), rtol=1e-12)
    rom = scores.meta.effects(control="ctrl", effect="rom").meta.pool()
    np.testing.assert_allclose(rom["rel_change_ci_high"], np.expm1(rom["ci_high"]), rtol=1e-12)
    assert "r" not in rom.columns


def test_bad_input():
    eff = pd.DataFrame({"task": list("ab"), "effect": [0.1, 0.2], "variance": [0.01, -0.02]})
    with pytest.raises(SchemaError, match="'variance' has values that are not positive"):
        eff.meta.pool()
    ok = eff.assign(variance=[0.01, 0.02])
    with pytest.raises(OptionError, match=r"`method` must be one of \['EE', 'FE', 'DL', 'HE',"):
        ok.meta.pool(method="dl2")
    with pytest.raises(SchemaError, match="`over`"):
        ok.meta.pool(over="dataset")


def test_output_matches_pooled_schema_and_warnings_point_at_caller(rng):
    from metaeval import schema

    eff = make_scores(rng).meta.effects(control="ctrl", effect="smd")
    schema.Pooled.validate(eff.meta.pool(method="DL"))
    with pytest.warns(DegenerateWarning) as record:
        eff.iloc[:1].meta.pool()
    assert record[0].filename == __file__  # the user's line, not metaeval's internals


# ------------------------------------------------------------------ issue 3 options
def _many(rng, n_groups=6, k=8) -> pd.DataFrame:
    rows = []
    for g in range(n_groups):
        v = np.exp(rng.uniform(np.log(0.001), np.log(0.1), k))
        y = rng.normal(0.05 * g, 0.1, k) + rng.normal(0, np.sqrt(v))
        rows.append(
            pd.DataFrame(
                {
                    "metric": "m",
                    "control": "c",
                    "treatment": f"t{g}",
                    "task": [f"task{i}" for i in range(k)],
                    "effect": y,
                    "variance": v,
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


@NARROW_KH
@pytest.mark.parametrize("adjust", ["holm", "bonferroni", "fdr_bh"])
def test_adjust_matches_statsmodels(rng, adjust):
    from statsmodels.stats.multitest import multipletests

    eff = pd.concat([_many(rng).assign(metric=m) for m in ("m1", "m2")], ignore_index=True)
    pooled = eff.meta.pool(method="REML", adjust=adjust)
    for _, fam in pooled.groupby("metric"):
        expected = multipletests(fam["p_value"].to_numpy(), method=adjust)[1]
        np.testing.assert_allclose(fam["p_adjusted"], expected, rtol=1e-12)
    assert (pooled["p_adjusted"] >= pooled["p_value"]).all()
    assert (pooled["p_adjusted"] > pooled["p_value"]).any()


def test_adjust_leaves_nan_out(rng):
    from statsmodels.stats.multitest import multipletests

    eff = _many(rng)
    eff.loc[eff["treatment"] == "t0", "effect"] = np.nan  # a group with k = 0
    with pytest.warns(DegenerateWarning):
        pooled = eff.meta.pool(adjust="holm")
    assert np.isnan(pooled["p_adjusted"].iloc[0])
    expected = multipletests(pooled["p_value"].iloc[1:].to_numpy(), method="holm")[1]
    np.testing.assert_allclose(pooled["p_adjusted"].iloc[1:], expected, rtol=1e-12)


def test_by_task_level_column_and_mapping(rng):
    scores = make_scores(rng, tasks={f"t{i}": 30 for i in range(6)}, metrics=("m",))
    domain = {"t0": "news", "t1": "news", "t2": "bio", "t3": "bio", "t4": "bio", "t5": "web"}
    scores["domain"] = scores["task"].map(domain)
    scores["query_len"] = np.arange(len(scores))  # varies within tasks: not carried
    eff = scores.meta.effects(control="ctrl", effect="md")
    assert "domain" in eff.columns and "query_len" not in eff.columns
    with pytest.warns(DegenerateWarning, match="one effect"):  # web has one task
        by_col = eff.meta.pool(method="REML", by="domain")
    assert by_col.groupby("treatment").size().tolist() == [3, 3]
    for _, row in by_col.iterrows():
        part = eff[(eff["treatment"] == row["treatment"]) & (eff["domain"] == row["domain"])]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateWarning)
            alone = metaeval.pool(part, method="REML").iloc[0]
        assert row["effect"] == pytest.approx(alone["effect"], rel=1e-12)
        assert row["k"] == len(part)
    with pytest.warns(DegenerateWarning):
        by_map = eff.meta.pool(method="REML", by=domain)
    np.testing.assert_allclose(by_map["q_between"], by_col["q_between"], rtol=1e-12)
    with pytest.raises(SchemaError, match=r"no subgroup for task\(s\) \['t5'\]"):
        eff.meta.pool(by={k: v for k, v in domain.items() if k != "t5"})


def test_pooling_over_metrics_warns(rng):
    eff = make_scores(rng).meta.effects(control="ctrl", effect="smd")
    with pytest.warns(metaeval.DependenceWarning, match="not independent"):
        pooled = eff.meta.pool(over=("task", "metric"))
    assert "metric" not in pooled.columns and (pooled["k"] == 8).all()


def test_knha_with_one_task_uses_z_and_ee_knha_warns():
    eff = pd.DataFrame({"task": ["a"], "effect": [0.2], "variance": [0.04]})
    sentence = (
        r"are NaN; the test and confidence interval use the normal distribution, as a t "
        r"distribution with 0 degrees of freedom does not exist\."
    )
    with pytest.warns(DegenerateWarning, match=sentence):
        one = eff.meta.pool(method="REML", test="knha").iloc[0]
    with pytest.warns(DegenerateWarning, match=sentence):
        eff.meta.pool()  # the default is Knapp–Hartung
    assert one["ci_high"] == pytest.approx(0.2 + stats.norm.ppf(0.975) * 0.2)
    two = pd.DataFrame({"task": ["a", "b"], "effect": [0.2, 0.3], "variance": [0.04, 0.02]})
    with pytest.warns(metaeval.MetaEvalWarning, match="not meant for the common-effect"):
        two.meta.pool(method="EE", test="knha")


def test_prob_gain_follows_the_prediction_distribution(rng):
    eff = _many(rng)
    for ci, dist in (("z", stats.norm), ("knha", None)):
        pooled = eff.meta.pool(method="REML", test=ci)
        sd = np.sqrt(pooled["se"] ** 2 + pooled["tau2"])
        if dist is None:
            expected = stats.t.cdf(pooled["effect"] / sd, pooled["k"] - 1)
            crit = stats.t.isf(0.025, pooled["k"] - 1)
        else:
            expected, crit = stats.norm.cdf(pooled["effect"] / sd), stats.norm.isf(0.025)
        np.testing.assert_allclose(pooled["prob_gain"], expected, rtol=1e-12)
        np.testing.assert_allclose(pooled["pi_high"] - pooled["effect"], crit * sd, rtol=1e-12)


@NARROW_KH
def test_weights_leave_one_out_influence_tables(rng):
    eff = _many(rng, n_groups=2, k=5)
    w = eff.meta.weights(method="REML")
    assert list(w.columns) == [*eff.columns, "weight"]
    np.testing.assert_allclose(w.groupby("treatment")["weight"].sum(), 100)
    loo = eff.meta.leave_one_out(method="REML")
    assert len(loo) == 10 and (loo["k"] == 4).all()
    again = metaeval.pool(eff[(eff["treatment"] == "t1") & (eff["task"] != "task3")], method="REML")
    row = loo[(loo["treatment"] == "t1") & (loo["task"] == "task3")].iloc[0]
    assert row["effect"] == pytest.approx(again["effect"].iloc[0], rel=1e-12)
    infl = eff.meta.influence(method="REML")
    assert len(infl) == 10 and infl["hat"].sum() == pytest.approx(2.0)
    pair = eff.groupby("treatment").head(2)
    with pytest.warns(DegenerateWarning, match="Groups with two effects"):
        assert pair.meta.leave_one_out(method="DL")["tau2"].isna().all()


@NARROW_KH
def test_pooled_schema_with_all_options(rng):
    from metaeval import schema

    eff = _many(rng).assign(domain=lambda d: np.where(d["task"] < "task4", "x", "y"))
    for method in metaeval.POOL_METHODS:
        pooled = eff.meta.pool(
            method=method,
            test="z" if method in ("EE", "FE") else "knha",
            by="domain",
            adjust="holm",
        )
        schema.Pooled.validate(pooled)


# ------------------------------------------------------------------ invariants
@st.composite
def meta_analyses(draw):
    k = draw(st.integers(2, 12))
    y = draw(st.lists(st.floats(-2, 2, allow_nan=False), min_size=k, max_size=k))
    v = draw(st.lists(st.floats(1e-3, 1.0, allow_nan=False), min_size=k, max_size=k))
    return pd.DataFrame({"task": [f"t{i}" for i in range(k)], "effect": y, "variance": v})


def _fit_quiet(eff, method, ci):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metaeval.MetaEvalWarning)
        return metaeval.pool(eff, method=method, test=ci).iloc[0]


METHOD_TEST = st.tuples(
    st.sampled_from([m for m in metaeval.POOL_METHODS if m != "FE"]), st.sampled_from(["z", "knha"])
)
LOCATION = ["effect", "ci_low", "ci_high", "pi_low", "pi_high"]
SCALE2 = ["tau2", "tau2_low", "tau2_high"]


@settings(max_examples=60, deadline=None)
@given(meta_analyses(), METHOD_TEST, st.randoms(use_true_random=False))
def test_permuting_tasks_changes_nothing(eff, method_test, random):
    method, ci = method_test
    a = _fit_quiet(eff, method, ci)
    b = _fit_quiet(eff.sample(frac=1.0, random_state=random.randint(0, 2**31)), method, ci)
    for col in LOCATION + SCALE2 + ["se", "i2", "q", "prob_gain"]:
        assert a[col] == pytest.approx(b[col], rel=1e-7, abs=1e-10, nan_ok=True), col


@settings(max_examples=60, deadline=None)
@given(meta_analyses(), METHOD_TEST, st.floats(-5, 5, allow_nan=False))
def test_adding_a_constant_shifts_location_only(eff, method_test, shift):
    method, ci = method_test
    a = _fit_quiet(eff, method, ci)
    b = _fit_quiet(eff.assign(effect=eff["effect"] + shift), method, ci)
    for col in LOCATION:
        assert b[col] == pytest.approx(a[col] + shift, rel=1e-7, abs=1e-7, nan_ok=True), col
    for col in SCALE2 + ["se", "i2", "q"]:
        assert b[col] == pytest.approx(a[col], rel=1e-6, abs=1e-9, nan_ok=True), col


@settings(max_examples=60, deadline=None)
@given(meta_analyses(), METHOD_TEST, st.floats(0.1, 10, allow_nan=False))
def test_scaling_effects_scales_variances(eff, method_test, c):
    method, ci = method_test
    a = _fit_quiet(eff, method, ci)
    b = _fit_quiet(
        eff.assign(effect=eff["effect"] * c, variance=eff["variance"] * c**2), method, ci
    )
    for col in LOCATION + ["se"]:
        assert b[col] == pytest.approx(a[col] * c, rel=1e-6, abs=1e-9, nan_ok=True), col
    for col in SCALE2:  # PM and the Q-profile search stop at max(100, ...): compare below that cap
        assert np.isnan(a[col]) == np.isnan(b[col]), col
        if np.isfinite(a[col]) and max(a[col], a[col] * c**2, b[col]) < 50:
            assert b[col] == pytest.approx(a[col] * c**2, rel=1e-6, abs=1e-9), col
    for col in ["i2", "q", "p_value"]:
        assert b[col] == pytest.approx(a[col], rel=1e-6, abs=1e-9, nan_ok=True), col


def test_leave_one_out_over_metrics_warns_once(rng):
    eff = make_scores(rng).meta.effects(control="ctrl", effect="md")
    with pytest.warns(metaeval.DependenceWarning) as record:
        loo = eff.meta.leave_one_out(over=("task", "metric"))
    assert len([w for w in record if issubclass(w.category, metaeval.DependenceWarning)]) == 1
    assert len(loo) == 2 * 8 and (loo["k"] == 7).all()


@pytest.mark.parametrize("scale", [1.0, 5.0, 1e3])
def test_pm_root_beyond_metafor_search_limit_is_found(scale):
    """metafor stops with an error when the PM root exceeds max(100, 10·mad²); we search on.

    y = (2, 2, −2)·c, v = c²: mad(y) = 0, so metafor's limit is 100 and the root
    4.33·c² lies beyond it from c = 5 on. Reference: scipy's brentq on Q(τ²) = k − 1.
    """
    y = np.array([2.0, 2.0, -2.0]) * scale
    v = np.full(3, scale**2)

    def q_minus(tau2):
        w = 1 / (v + tau2)
        mu = (w * y).sum() / w.sum()
        return (w * (y - mu) ** 2).sum() - 2

    tau2 = optimize.brentq(q_minus, 0, 1e12, xtol=1e-14, rtol=1e-14)
    eff = pd.DataFrame({"task": ["t0", "t1", "t2"], "effect": y, "variance": v})
    got = eff.meta.pool(method="PM").iloc[0]
    assert got["tau2"] == pytest.approx(tau2, rel=1e-9)
    w = 1 / (v + tau2)
    assert got["effect"] == pytest.approx((w * y).sum() / w.sum(), rel=1e-9)
    assert got["se"] == pytest.approx(np.sqrt(1 / w.sum()), rel=1e-9)


@pytest.mark.parametrize("variance", [0.003, 0.0123, 0.3])
def test_one_effect_gives_no_numpy_warnings(variance):
    """k = 1: DL's τ² is 0/0 up to rounding (±inf for some v); nothing may overflow."""
    one = pd.DataFrame({"task": ["a"], "effect": [0.4], "variance": [variance]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.warns(DegenerateWarning, match="k = 1"):
            got = one.meta.pool(method="DL").iloc[0]
    assert got["effect"] == pytest.approx(0.4, rel=1e-14)
    assert got["se"] == pytest.approx(np.sqrt(variance))
    assert np.isnan(got["tau2"]) and np.isnan(got["tau2_low"]) and np.isnan(got["tau2_high"])


# ------------------------------------------------- issue 25: a system missing a task
BEIR = ("trec-covid", "nfcorpus", "fiqa", "arguana", "scidocs", "scifact")


def _beir_scores(rng) -> pd.DataFrame:
    """Six BEIR-like tasks; rrf has no scores on nfcorpus, splade none on fiqa and scidocs
    (of nDCG@10 only: on recall@100 every system has every task)."""
    scores = make_scores(
        rng,
        tasks={t: 25 for t in BEIR},
        systems=("bm25", "tasb", "rrf", "splade"),
        metrics=("nDCG@10", "recall@100"),
    )
    absent = (scores["metric"] == "nDCG@10") & (
        ((scores["system"] == "rrf") & (scores["task"] == "nfcorpus"))
        | ((scores["system"] == "splade") & scores["task"].isin(["fiqa", "scidocs"]))
    )
    return scores[~absent].reset_index(drop=True)


@NARROW_KH
def test_a_system_without_a_task_is_named_with_k_of_k_total(rng):
    scores = _beir_scores(rng)
    with pytest.warns(metaeval.PairingWarning, match="Queries present for only one system"):
        eff = scores.meta.effects(control="bm25", effect="md")
    with pytest.warns(metaeval.PairingWarning, match="pools k of k_total tasks") as record:
        pooled = eff.meta.pool(method="DL")
    (warning,) = [w.message for w in record if "k_total" in str(w.message)]
    assert "2 pooled group(s)" in str(warning)
    assert "treatment='rrf'" in str(warning) and "missing='nfcorpus'" in str(warning)
    groups = warning.groups
    assert groups[["metric", "treatment", "k", "k_total", "missing"]].values.tolist() == [
        ["nDCG@10", "rrf", 5, 6, "nfcorpus"],
        ["nDCG@10", "splade", 4, 6, "fiqa, scidocs"],  # in the order of the table's tasks
    ]
    # k and k_total from the scores: tasks where both systems have scores, and all tasks
    for row in pooled.itertuples():
        part = scores[scores["metric"] == row.metric]
        tasks = part.groupby("system")["task"].agg(set)
        assert row.k == len(tasks[row.treatment] & tasks["bm25"]), row
        assert row.k_total == len(set.union(*tasks)) == len(BEIR)
    full = pooled[pooled["metric"] == "recall@100"]
    assert (full["k"] == 6).all() and (full["k_total"] == 6).all()
    # the summary of rrf pools its five tasks, the same as pooling them alone
    mine = eff[(eff["treatment"] == "rrf") & (eff["metric"] == "nDCG@10")]
    alone = metaeval.pool(mine, method="DL")
    rrf = pooled[(pooled["treatment"] == "rrf") & (pooled["metric"] == "nDCG@10")].iloc[0]
    assert rrf["effect"] == pytest.approx(alone["effect"].iloc[0], rel=1e-12)
    assert alone["k"].iloc[0] == alone["k_total"].iloc[0] == 5  # alone: nothing to miss


def test_k_total_counts_the_tasks_of_each_subgroup_and_nan_effects(rng):
    scores = _beir_scores(rng)
    with pytest.warns(metaeval.PairingWarning):
        eff = scores.meta.effects(control="bm25", effect="md").query("metric == 'nDCG@10'")
    domain = {t: ("bio" if t in ("trec-covid", "nfcorpus", "scifact") else "other") for t in BEIR}
    with pytest.warns(metaeval.MetaEvalWarning) as record:  # and splade's "other": k = 1
        pooled = eff.meta.pool(method="DL", by=domain)
    (warning,) = [w.message for w in record if "k_total" in str(w.message)]
    assert warning.groups[["treatment", "subgroup", "k", "k_total", "missing"]].values.tolist() == [
        ["rrf", "bio", 2, 3, "nfcorpus"],
        ["splade", "other", 1, 3, "fiqa, scidocs"],
    ]
    assert (pooled["k_total"] == 3).all()
    # an effect that is NaN is missing from its summary as an absent one is
    nan = eff.assign(
        effect=np.where(
            (eff["treatment"] == "tasb") & (eff["task"] == "arguana"), np.nan, eff["effect"]
        )
    )
    with pytest.warns(metaeval.MetaEvalWarning) as record:
        pooled = nan.meta.pool(method="DL")
    texts = [str(w.message) for w in record]
    assert any("NaN effect or variance were left out" in t for t in texts)
    assert any("treatment='tasb'" in t and "missing='arguana'" in t for t in texts)
    # a task no system has an effect on is no task of the analysis
    gone = eff.assign(effect=np.where(eff["task"] == "arguana", np.nan, eff["effect"]))
    with pytest.warns(metaeval.MetaEvalWarning) as record:
        pooled = gone.meta.pool(method="DL")
    assert pooled["k_total"].tolist() == [5, 5, 5]
    assert [w.message.groups["k"].tolist() for w in record if "k_total" in str(w.message)] == [
        [4, 3]
    ]


@pytest.mark.parametrize("method", ["REML", "DL"])
def test_knha_with_equal_effects_warns_and_gives_nan(method):
    """Effects that all equal the pooled one make Knapp–Hartung's s² = 0: metafor 3.8.1
    (fixtures/metafor/knha_zero_effects.R) gives se 0, the interval [0, 0] and p NaN
    without a warning; metaeval keeps the effect (0), and gives NaN se, statistic,
    p-value and intervals with a DegenerateWarning naming the group (issue 25, 17d)."""
    eff = pd.DataFrame(
        {
            "g": ["zero"] * 4 + ["spread"] * 4,
            "task": list("abcd") * 2,
            "effect": [0.0] * 4 + [0.1, 0.3, 0.2, 0.6],
            "variance": [0.01, 0.02, 0.015, 0.01] * 2,
        }
    )
    with pytest.warns(DegenerateWarning, match="s² is 0") as record:
        res = metaeval.pool(eff, groups="g", method=method, test="knha").set_index("g")
    text = " ".join(str(w.message) for w in record)
    assert "g='zero'" in text and "g='spread'" not in text
    zero = res.loc["zero"]
    assert zero["effect"] == 0 and zero["tau2"] == 0 and zero["q"] == 0
    assert (
        zero[["se", "statistic", "p_value", "ci_low", "ci_high", "pi_low", "pi_high", "prob_gain"]]
        .isna()
        .all()
    )
    spread = metaeval.pool(eff[eff["g"] == "spread"], method=method, test="knha")
    assert res.loc["spread", "se"] == spread["se"].item() > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        z = metaeval.pool(eff[eff["g"] == "zero"], method=method, test="z")
    assert z["se"].item() > 0 and z["p_value"].item() == 1


#: metafor 3.8.1 on four tasks with τ̂² = 0 (fixtures/metafor/adhoc_four_tasks.R):
#: ci_low, ci_high, pi_low, pi_high, se, tau2, p_value per test
ADHOC_METAFOR = {
    "z": (
        6.030287664e-02,
        7.599019807e-02,
        6.030287664e-02,
        7.599019807e-02,
        4.001941248e-03,
        0.0,
        5.059372555e-65,
    ),
    "knha": (
        6.519055114e-02,
        7.110252356e-02,
        6.519055114e-02,
        7.110252356e-02,
        9.288408746e-04,
        0.0,
        5.580497797e-06,
    ),
    "adhoc": (
        0.0554105742158,
        0.0808825004914,
        0.0554105742158,
        0.0808825004914,
        0.0040019412477,
        0.0,
        0.0004411494371,
    ),
}


def test_adhoc_floors_knha_at_the_normal_interval():
    """Four tasks that agree more closely than their variances imply (τ̂² = 0, s² < 1):
    Knapp–Hartung's interval is narrower than the normal one, and pool() says so naming
    the group; test="adhoc" (metafor's test="adhoc") floors the factor at 1. All three
    against metafor 3.8.1 (issue 29, item 1)."""
    eff = pd.DataFrame(
        {
            "task": ["arc", "gsm8k", "mmlu", "hellaswag"],
            "effect": [0.066, 0.070, 0.067, 0.069],
            "variance": np.array([0.0081, 0.0074, 0.0088, 0.0079]) ** 2,
        }
    )
    columns = ["ci_low", "ci_high", "pi_low", "pi_high", "se", "tau2", "p_value"]
    got = {}
    for ci in ("z", "adhoc"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got[ci] = metaeval.pool(eff, method="REML", test=ci)
    with pytest.warns(DegenerateWarning, match="narrower than the normal") as record:
        got["knha"] = metaeval.pool(eff, method="REML", test="knha")
    assert len(record) == 1 and "test='adhoc'" in str(record[0].message)
    for ci, ref in ADHOC_METAFOR.items():
        row = got[ci].iloc[0]
        np.testing.assert_allclose(row[columns].to_numpy(float), ref, rtol=1e-8, atol=1e-13)
        assert row["test"] == ci
    assert got["adhoc"]["df"].item() == got["knha"]["df"].item() == 3
    # the identity metafor's documentation states: se_adhoc = max(se_z, se_knha)
    assert got["adhoc"]["se"].item() == max(got["z"]["se"].item(), got["knha"]["se"].item())


def test_knha_narrow_warning_names_only_narrow_groups():
    """The warning fires where s² · t²(k − 1) < z² and nowhere else (a group whose effects
    scatter widely stays quiet; leave_one_out's refits never warn)."""
    eff = pd.DataFrame(
        {
            "g": ["tight"] * 4 + ["wide"] * 4,
            "task": list("abcd") * 2,
            "effect": [0.066, 0.070, 0.067, 0.069, 0.1, 0.3, 0.2, 0.6],
            "variance": [0.0081**2] * 4 + [0.01, 0.02, 0.015, 0.01],
        }
    )
    with pytest.warns(DegenerateWarning, match="narrower than the normal") as record:
        res = metaeval.pool(eff, groups="g", test="knha").set_index("g")
    text = " ".join(str(w.message) for w in record)
    assert "g='tight'" in text and "g='wide'" not in text
    z = metaeval.pool(eff, groups="g", test="z").set_index("g")
    width = res["ci_high"] - res["ci_low"]
    assert width["tight"] < (z["ci_high"] - z["ci_low"])["tight"]
    assert width["wide"] > (z["ci_high"] - z["ci_low"])["wide"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metaeval.leave_one_out(eff, groups="g", test="knha")


def test_a_warning_about_a_table_without_group_keys_names_no_groups():
    """An effects table of one comparison without group columns: the warning ends its
    sentence instead of listing an empty group line."""
    eff = pd.DataFrame(
        {
            "task": ["arc", "gsm8k", "mmlu", "hellaswag"],
            "effect": [0.066, 0.070, 0.067, 0.069],
            "variance": np.array([0.0081, 0.0074, 0.0088, 0.0079]) ** 2,
        }
    )
    with pytest.warns(DegenerateWarning) as record:
        metaeval.pool(eff, test="knha")
    (message,) = [str(w.message) for w in record]
    assert message.endswith("never narrower than z's.") and "\n" not in message
    assert record[0].message.groups.shape == (1, 0)

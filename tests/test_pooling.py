"""Pooling: reference loop, groups, degenerate groups and bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import reference
from conftest import make_scores
from scipy import stats

import metaeval
from metaeval import DegenerateWarning, OptionError, SchemaError


@pytest.mark.parametrize("method", ["EE", "FE", "DL"])
def test_every_group_equals_reference_loop(rng, method):
    scores = make_scores(rng, systems=("ctrl", "a", "b", "c"), metrics=("m1", "m2", "m3"))
    eff = scores.meta.effects(control="ctrl", effect="smcc")
    pooled = eff.meta.pool(method=method)
    assert len(pooled) == 3 * 3
    assert (pooled["method"] == ("EE" if method == "FE" else method)).all()
    for row in pooled.itertuples():
        part = eff[(eff["metric"] == row.metric) & (eff["treatment"] == row.treatment)]
        ref = reference.pool_loop(
            part["effect"].to_numpy(), part["variance"].to_numpy(), "DL" if method == "DL" else "EE"
        )
        for col in ["effect", "se", "ci_low", "ci_high", "tau2", "q"]:
            assert getattr(row, col) == pytest.approx(ref[col], rel=1e-10, abs=1e-15), col
        assert row.q_pvalue == pytest.approx(stats.chi2.sf(ref["q"], len(part) - 1), rel=1e-10)


def test_pool_any_table_and_groups():
    eff = pd.DataFrame({
        "study": ["a", "b", "c", "a", "b", "c"], "model": ["x"] * 3 + ["y"] * 3,
        "effect": [0.1, 0.3, 0.2, 0.5, -0.1, 0.2], "variance": [0.01, 0.02, 0.015, 0.01, 0.03, 0.02],
    })  # fmt: skip
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
    eff = pd.DataFrame({
        "metric": ["m", "m", "m", "n"], "task": ["a", "b", "c", "a"],
        "effect": [0.2, np.nan, 0.4, 0.3], "variance": [0.01, 0.02, 0.02, 0.01],
    })  # fmt: skip
    with pytest.warns(DegenerateWarning) as record:
        pooled = eff.meta.pool(method="DL")
    messages = [str(w.message) for w in record]
    assert any(
        "1 effect(s) with NaN effect or variance were left out" in m and "task='b'" in m
        for m in messages
    )
    assert any(
        "have one effect (k = 1); q, q_pvalue, i2, h2, tau2 and the prediction interval are NaN"
        in m
        and "metric='n'" in m
        for m in messages
    )
    m, n = pooled.iloc[0], pooled.iloc[1]
    assert m["k"] == 2 and n["k"] == 1
    assert n["effect"] == 0.3 and n["se"] == pytest.approx(0.1)
    assert np.isnan([n["tau2"], n["i2"], n["h2"], n["q"], n["q_pvalue"], n["pi_low"]]).all()


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
    with pytest.raises(SchemaError, match="variance not positive"):
        eff.meta.pool()
    ok = eff.assign(variance=[0.01, 0.02])
    with pytest.raises(OptionError, match=r"`method` must be one of \['EE', 'FE', 'DL'\]"):
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

"""Property-based fuzzing of :func:`metaeval.metareg` against references written here.

Random small meta-regressions — one to three groups of 3 to 12 effects, one or two
moderators (a numeric one, a second on another scale, a factor whose levels, the
reference among them, may be absent from a group), sampling variances spread over
up to four orders of magnitude — are fitted, and each group is checked against a
reference computed from the documented formulas with numpy's dense linear algebra:

- ``EE`` and ``DL``: the coefficients are the weighted least-squares fit
  (``np.linalg.lstsq`` on W^½X, W^½y) with W = diag(1/(v + τ²)), and DL's τ² is
  max(0, (Q_E − (k − p)) / tr P₀), P₀ = W − WX(X'WX)⁻¹X'W at τ² = 0, Q_E = y'P₀y;
- ``ML`` and ``REML``: τ² is a stationary point of the (restricted) likelihood,
  y'P²y = tr W (ML) or tr P (REML), or the boundary 0 where the derivative there is
  ≤ 0 (or the group is named by the warning that metafor's likelihood check reset it);
- the design of each group is the one metafor builds from the group alone: the
  factor's first level present in the group is its reference;
- a group with k ≤ p effects, or collinear moderators, is NaN, named by a
  :class:`metaeval.DegenerateWarning`.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import metaeval
from metaeval import DegenerateWarning, MetaEvalWarning

pytestmark = pytest.mark.fuzz

LEVELS = ["a", "b", "c", "d"]
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def models(draw: Any) -> tuple[pd.DataFrame, list[str]]:
    """Groups (``metric``) of effects with the moderators ``x``, ``x2`` (another scale)
    and the factor ``f`` (a categorical over a–d); the moderators of the model."""
    mods = draw(st.sampled_from([["x"], ["f"], ["x", "f"], ["x", "x2"], ["f", "x2"]]))
    spread = draw(st.sampled_from([0.0, 2.0, 4.0]))  # orders of magnitude of the variances
    tau2 = draw(st.sampled_from([0.0, 0.02, 0.5]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    parts = []
    for g in range(draw(st.integers(1, 3))):
        k = draw(st.integers(3, 12))
        levels = sorted(
            draw(
                st.lists(
                    st.sampled_from(LEVELS), min_size=2 if g == 0 else 1, max_size=4, unique=True
                )
            )
        )
        f = rng.choice(levels, size=k)
        f[: min(k, len(levels))] = levels[:k]
        v = 0.01 * 10 ** rng.uniform(0, spread, size=k)
        x = rng.normal(size=k)
        shift = np.array([0.0, 0.4, -0.3, 0.2])[[LEVELS.index(level) for level in f]]
        y = 0.2 + 0.3 * x + shift + rng.normal(0, np.sqrt(v + tau2))
        parts.append(
            pd.DataFrame(
                {
                    "metric": f"m{g}",
                    "task": [f"t{i}" for i in range(k)],
                    "effect": y,
                    "variance": v,
                    "x": x,
                    "x2": np.exp(rng.normal(4, 1, size=k)),
                    "f": pd.Categorical(f, categories=LEVELS),
                }
            )
        )
    return pd.concat(parts, ignore_index=True), mods


def _design(part: pd.DataFrame, mods: list[str], terms: list[str]) -> tuple[np.ndarray, list]:
    """The group's design as metafor builds it from the group alone, and for each of
    its columns the term of metaeval's table it estimates."""
    columns, names = [np.ones(len(part))], ["intercept"]
    for mod in mods:
        if mod != "f":
            columns.append(part[mod].to_numpy(float))
            names.append(mod)
            continue
        present = [level for level in LEVELS if (part["f"] == level).any()]
        for level in present[1:]:
            columns.append((part["f"] == level).to_numpy(float))
            names.append(f"f[T.{level}]")
    assert set(names) <= set(terms)
    return np.column_stack(columns), names


def _p_matrix(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """P = W − WX(X'WX)⁻¹X'W."""
    wx = w[:, None] * x
    return np.diag(w) - wx @ np.linalg.solve(x.T @ wx, wx.T)


def _wls(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    root = np.sqrt(w)
    return np.linalg.lstsq(root[:, None] * x, root * y, rcond=None)[0]


def _named(record, metric: str, text: str = "") -> bool:
    return any(
        isinstance(w.message, DegenerateWarning)
        and text in str(w.message)
        and metric in set(w.message.groups.get("metric", []))
        for w in record
    )


def _fit(eff: pd.DataFrame, mods: list[str], method: str):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        res = metaeval.metareg(eff, mods, method=method, test="z")
    assert all(isinstance(w.message, MetaEvalWarning) for w in record), record
    return res.table, res.fit.set_index("metric"), record


def _groups(eff, mods, res, fit, record):
    """(metric, y, v, design, the estimates in the design's order, τ²) of each group
    that can be fitted; checks that the others are NaN and named by a warning."""
    terms = res["term"].unique().tolist()
    for metric, part in eff.groupby("metric", sort=False):
        x, names = _design(part, mods, terms)
        k, p = x.shape
        ours = res.loc[res["metric"] == metric].set_index("term")["estimate"]
        if k <= p or np.linalg.matrix_rank(x) < p:
            assert ours.isna().all() and np.isnan(fit.loc[metric, "tau2"])
            assert _named(record, metric)
            continue
        others = ours.drop(index=names)
        assert others.isna().all()  # absent levels and the group's own reference
        if others.size:
            assert _named(record, metric)
        y, v = part["effect"].to_numpy(), part["variance"].to_numpy()
        yield metric, y, v, x, ours.loc[names].to_numpy(), fit.loc[metric, "tau2"]


@FUZZ
@given(models(), st.sampled_from(["EE", "DL"]))
def test_ee_and_dl_equal_weighted_least_squares(model, method):
    eff, mods = model
    res, fit, record = _fit(eff, mods, method)
    for _, y, v, x, beta, tau2 in _groups(eff, mods, res, fit, record):
        k, p = x.shape
        expected = 0.0
        if method == "DL":
            p0 = _p_matrix(x, 1 / v)
            expected = max(0.0, (y @ p0 @ y - (k - p)) / np.trace(p0))
        assert tau2 == pytest.approx(expected, rel=1e-8, abs=1e-10 * v.min())
        reference = _wls(x, y, 1 / (v + expected))
        scale = np.abs(reference).max()
        np.testing.assert_allclose(beta, reference, rtol=1e-7, atol=1e-9 * scale)


@FUZZ
@given(models(), st.sampled_from(["ML", "REML"]))
def test_ml_and_reml_tau2_is_a_stationary_point(model, method):
    eff, mods = model
    res, fit, record = _fit(eff, mods, method)
    for metric, y, v, x, beta, tau2 in _groups(eff, mods, res, fit, record):
        assert np.isfinite(tau2) and tau2 >= 0
        w = 1 / (v + tau2)
        p_mat = _p_matrix(x, w)
        u = p_mat @ y
        trace = np.trace(p_mat) if method == "REML" else w.sum()
        score = u @ u - trace  # twice the derivative of the (restricted) log-likelihood
        if tau2 > 0:
            assert abs(score) <= 1e-6 * trace, (tau2, score, trace)
        else:
            assert score <= 1e-6 * trace or _named(record, metric, "likelihood"), score
        reference = _wls(x, y, w)
        scale = np.abs(reference).max()
        np.testing.assert_allclose(beta, reference, rtol=1e-7, atol=1e-9 * scale)

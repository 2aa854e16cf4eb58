"""Property-based fuzzing of the paired effects, the per-task tests and pooling.

Random tidy tables — random key dtypes, unpaired and missing queries, ties,
constant, identical, scaled and negated systems, one to twelve queries, huge and
tiny scales — are run through :func:`metaeval.effects`, :func:`metaeval.compare`
and :func:`metaeval.pool`, and every outcome is classified:

- ``correct``: the numbers equal an independent reference: a naive per-pair loop
  written here from the documented formulas, on moments computed in exact
  rational arithmetic (so that "zero variance" or "r = ±1" is decided exactly),
  scipy (``ttest_rel``, ``wilcoxon``, ``binomtest``) on the paired differences,
  and exact (fractions) or statsmodels/brentq references for pooling;
- ``nan_warned``: the reference says the quantity is undefined for the input, and
  the library gives NaN with a :class:`metaeval.DegenerateWarning` naming the group;
- ``typed_error``: the input is invalid (an injected fault), and the library
  raises a :class:`metaeval.MetaEvalError` naming what to fix.

Anything else fails the test. Scores are drawn from a dyadic grid or from
continuous floats whose only exact degeneracies are the constructed ones, so a
quantity is either exactly zero or far from the library's relative rounding
tolerances. Invariants: row order, key dtype (str, object, category, pyarrow)
and a common scale factor change nothing; the input frame is never mutated; four
threads give the single-threaded results.

The counts of outcomes are printed at the end of the session. Profiles (see
``tests/conftest.py``): ``fast`` (default, in CI) and ``long``::

    pytest -m fuzz --hypothesis-profile=long
"""

from __future__ import annotations

import math
import threading
import warnings
from collections import Counter
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from _helpers import FAULTS, inject
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy import optimize, special, stats

import metaeval
from metaeval import DegenerateWarning, MetaEvalError, MetaEvalWarning

pytestmark = pytest.mark.fuzz

#: outcome counts, printed by conftest.pytest_terminal_summary
OUTCOMES: Counter[tuple[str, str]] = Counter()
TABLES: Counter[str] = Counter()

EFFECTS = ["md", "smd", "smcrp", "smcc", "rom", "corr"]
ZERO_TOL = 1e-10  # metaeval.effects.ZERO_TOL, as documented
ZERO_DIFF = 1e-12  # metaeval.effects.ZERO_DIFF
KEY_DTYPES = ["str", "object", "category", "pyarrow", "int_query"]
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------- tables
@st.composite
def score_tables(draw: Any, min_systems: int = 2) -> pd.DataFrame:
    """A random scores table with the degeneracies of real evaluations built in."""
    n_systems = draw(st.integers(min_systems, 3))
    n_metrics = draw(st.integers(1, 2))
    n_tasks = draw(st.integers(1, 3))
    continuous = draw(st.booleans())
    scale = draw(st.sampled_from([1.0, 2.0**-40, 2.0**40, 1e-12, 1e12, 2.0**-1000, 1e300]))
    offset = draw(st.sampled_from([0.0, 0.0, 1.0, -0.5]))
    rows = []
    for m in range(n_metrics):
        for t in range(n_tasks):
            n = draw(st.integers(1, 12))
            if continuous:
                base = np.array(draw(st.lists(st.floats(0.01, 1.0), min_size=n, max_size=n)))
            else:
                base = np.array(draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))) / 8
            for s in range(n_systems):
                kind = draw(
                    st.sampled_from(
                        ["own", "own", "copy", "ties", "constant", "scaled", "negated", "shifted"]
                    )
                )
                if s == 0 or kind == "own":
                    if continuous:
                        own = draw(st.lists(st.floats(0.01, 1.0), min_size=n, max_size=n))
                        values = np.array(own)
                    else:
                        own = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
                        values = np.array(own) / 8
                elif kind == "copy":
                    values = base.copy()
                elif kind == "ties":
                    other = np.array(draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))) / 8
                    tie = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
                    values = np.where(tie, base, other)
                elif kind == "constant":
                    values = np.full(n, draw(st.integers(0, 8)) / 8)
                elif kind == "scaled":
                    values = 2 * base  # r = +1, exactly
                elif kind == "negated":
                    values = 1 - base if not continuous else -base  # r = -1
                else:  # shifted: constant differences (exact on the grid)
                    values = base + (0.25 if not continuous else 0.0)
                if s == 0:
                    base = values
                keep = draw(st.lists(st.booleans(), min_size=n, max_size=n))
                keep_all = draw(st.booleans())
                for q in range(n):
                    if keep_all or keep[q] or n == 1 or (s == 0 and q == 0):
                        value = scale * (values[q] + offset)
                        rows.append((f"task{t}", str(q), f"sys{s}", f"metric{m}", value))
    table = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])
    return with_key_dtype(table, draw(st.sampled_from(KEY_DTYPES)))


def with_key_dtype(table: pd.DataFrame, dtype: str) -> pd.DataFrame:
    keys = ["task", "query", "system", "metric"]
    if dtype == "str":
        return table.astype(dict.fromkeys(keys, "str"))
    if dtype == "object":
        return table.astype(dict.fromkeys(keys, object))
    if dtype == "category":
        return table.astype(dict.fromkeys(keys, "category"))
    if dtype == "pyarrow":
        pytest.importorskip("pyarrow")
        return table.astype(dict.fromkeys(keys, "string[pyarrow]"))
    return table.assign(query=table["query"].astype(int))  # integer ids, converted to strings


# ---------------------------------------------------------------- reference
def paired(table: pd.DataFrame) -> dict[tuple[str, str, str, str], tuple[np.ndarray, ...]]:
    """Every (metric, treatment, control, task) with at least one shared query: (x, y, a, b).

    a and b are the documented shifts: each system's mean over the queries every
    system of the task (and metric) has, or over its own queries where none is
    shared by all; the library's rounding tolerances are relative to sums of
    squares about them.
    """
    df = table.astype({"query": str, "task": str, "system": str, "metric": str})
    out = {}
    for (metric, task), part in df.groupby(["metric", "task"]):
        by_system = {s: p.set_index("query")["value"] for s, p in part.groupby("system")}
        common = set.intersection(*(set(v.index) for v in by_system.values()))
        shift = {
            s: Fraction(sum(Fraction(x) for x in (v[sorted(common)] if common else v)))
            / (len(common) if common else len(v))
            for s, v in by_system.items()
        }
        for a, xa in by_system.items():
            for b, yb in by_system.items():
                if a == b:
                    continue
                shared = xa.index.intersection(yb.index).sort_values()
                if len(shared):
                    out[(metric, a, b, task)] = (
                        xa[shared].to_numpy(float),
                        yb[shared].to_numpy(float),
                        shift[a],
                        shift[b],
                    )
    return out


def tied_magnitudes(table: pd.DataFrame) -> bool:
    """Whether some pair's nonzero per-query differences have equal magnitudes."""
    for x, y, _, _ in paired(table).values():
        d = np.abs(x - y)
        d = d[d != 0]
        if len(np.unique(d)) < len(d):
            return True
    return False


def fraction_sqrt(f: Fraction) -> Fraction:
    """√f to about 2^-60 relative, for any magnitude (floats overflow near 1e±300 squared)."""
    return Fraction(math.isqrt(f.numerator * f.denominator * 4**60), f.denominator * 2**60)


def moments(x: np.ndarray, y: np.ndarray, a: Fraction, b: Fraction) -> dict[str, Any]:
    """Exact means and (co)variances (ddof 1) of the paired scores, and which of them the
    documented relative tolerances call zero (sums of squares about the shifts a, b)."""
    fx, fy = [Fraction(v) for v in x], [Fraction(v) for v in y]
    n = len(fx)
    mx, my = sum(fx) / n, sum(fy) / n
    if n < 2:
        return {"n": Fraction(n), "mx": mx, "my": my}
    vx = sum((u - mx) ** 2 for u in fx) / (n - 1)
    vy = sum((v - my) ** 2 for v in fy) / (n - 1)
    cov = sum((u - mx) * (v - my) for u, v in zip(fx, fy, strict=True)) / (n - 1)
    vd = vx + vy - 2 * cov
    ssx, ssy = sum((u - a) ** 2 for u in fx), sum((v - b) ** 2 for v in fy)
    size = abs(a) + abs(b) + fraction_sqrt(ssx / n) + fraction_sqrt(ssy / n)
    out = {
        "n": Fraction(n),
        "mx": mx,
        "my": my,
        "vx": vx,
        "vy": vy,
        "cov": cov,
        "vd": vd,
        "zero_x": vx * (n - 1) <= Fraction(ZERO_TOL) * ssx,
        "zero_y": vy * (n - 1) <= Fraction(ZERO_TOL) * ssy,
        "zero_d": vd * (n - 1) <= Fraction(ZERO_TOL) * (ssx + ssy),
        "zero_diff": abs(mx - my) <= Fraction(ZERO_DIFF) * size,
    }
    if mx > 0 and my > 0:
        rel = vx / mx**2 + vy / my**2 - 2 * cov / (mx * my)
        out["zero_rel"] = rel * (n - 1) <= Fraction(ZERO_TOL) * (ssx / mx**2 + ssy / my**2)
    return out


def c_m(m: float) -> float:
    return float(
        np.exp(special.gammaln(m / 2) - np.log(np.sqrt(m / 2)) - special.gammaln((m - 1) / 2))
    )


def as_float(x: Fraction) -> float:
    """An exact value as the nearest float, ±inf beyond the largest one."""
    try:
        return float(x)
    except OverflowError:
        return float(np.sign(x)) * np.inf


def ratio_sqrt(num: Fraction, den: Fraction) -> float:
    """sign(num)·√(num²/den), computed where num and den may be far beyond float range."""
    return float(np.sign(num)) * float(np.sqrt(as_float(num * num / den)))


def reference_effect(mo: dict[str, Fraction], kind: str) -> tuple[float, float]:
    """(effect, variance) by the documented formulas; NaN where documented undefined.

    Degeneracies are decided on the exact moments; standardized quantities are
    formed as exact ratios first, so scores near 1e±300 are fine. For ``md``
    with zero variance of the differences, or a variance beyond double
    precision, the effect is kept and the variance is NaN.
    """
    nan = (np.nan, np.nan)
    n = int(mo["n"])
    if n < 2:
        return nan
    vx, vy, cov, vd = mo["vx"], mo["vy"], mo["cov"], mo["vd"]
    exact_diff = Fraction(0) if mo["zero_diff"] else mo["mx"] - mo["my"]
    diff = as_float(exact_diff)
    if kind == "md":
        var = as_float(vd / n)
        if mo["zero_d"] or not np.isfinite(var) or var == 0:
            return diff, np.nan
        return diff, var
    if kind == "rom":
        mx, my = mo["mx"], mo["my"]
        if mx <= 0 or my <= 0:
            return nan
        rel = vx / mx**2 + vy / my**2 - 2 * cov / (mx * my)
        if mo["zero_rel"]:
            return nan
        est = np.log(as_float(mx / my)) + 0.5 * (as_float(vx / mx**2) - as_float(vy / my**2)) / n
        return est, as_float(rel) / n
    if kind in ("smd", "smcrp", "corr") and (mo["zero_x"] or mo["zero_y"]):
        return nan
    r = ratio_sqrt(cov, vx * vy) if kind != "smcc" else np.nan
    # documented: 1 - |r| below ZERO_TOL is rounding, and r is then exactly ±1
    unit_r = kind != "smcc" and (cov * cov == vx * vy or 1 - abs(r) <= ZERO_TOL)
    if unit_r:
        r = float(np.sign(cov))
    if kind == "corr":
        if unit_r or n < 4:
            return nan
        return float(np.arctanh(r)), 1 / (n - 3)
    if mo["zero_d"]:
        return nan
    if kind == "smd":
        if unit_r:
            return nan
        d = ratio_sqrt(exact_diff, vd) * np.sqrt(2 * (1 - r))
        j = 1 - 3 / (4 * (n - 1) - 1)
        return j * d, j**2 * (1 / n + d**2 / (2 * n)) * 2 * (1 - r)
    if kind == "smcc":
        if n == 2:  # c(m) with m = 1 is undefined
            return nan
        g = c_m(n - 1) * ratio_sqrt(exact_diff, vd)
        return g, 1 / n + g**2 / (2 * n)
    # smcrp
    m = 2 * (n - 1) / (1 + r**2)
    if m <= 1:
        return nan
    g = c_m(m) * ratio_sqrt(exact_diff, (vx + vy) / 2)
    var = 2 * (1 - r) / n + g**2 * (1 + r**2) / (4 * n)
    if var == 0 or (r == 1 and exact_diff == 0):
        return nan
    return g, var


# ------------------------------------------------------------------ helpers
def run(func, *args, **kwargs) -> tuple[Any, list[warnings.WarningMessage], BaseException | None]:
    """``func(...)``, the metaeval warnings it issued, and the exception it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out, err = func(*args, **kwargs), None
        except Exception as exc:  # noqa: BLE001 - classified by the caller
            out, err = None, exc
    return out, [w for w in caught if issubclass(w.category, MetaEvalWarning)], err


def warned_for(caught: list[warnings.WarningMessage], key: tuple[str, ...]) -> bool:
    """A DegenerateWarning names the group (metric, treatment, control, task).

    The message names the first ten groups; the warning's ``groups`` holds all.
    """
    wanted = dict(zip(["metric", "treatment", "control", "task"], key, strict=True))
    for w in caught:
        groups = getattr(w.message, "groups", None)
        if not issubclass(w.category, DegenerateWarning) or groups is None:
            continue
        match = np.logical_and.reduce([groups[c].astype(str) == v for c, v in wanted.items()])
        if match.any():
            return True
    return False


def close(got: float, want: float, *, rtol: float, atol: float) -> bool:
    if np.isnan(want):
        return bool(np.isnan(got))
    return bool(np.isfinite(got)) and abs(got - want) <= atol + rtol * abs(want)


def outcome(func: str, kind: str) -> None:
    OUTCOMES[(func, kind)] += 1


def magnitude(table: pd.DataFrame) -> float:
    return float(np.abs(table["value"]).max()) or 1.0


def unchanged(before: pd.DataFrame, after: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(before, after, check_exact=True)
    assert before.attrs == after.attrs


def every_pair(table: pd.DataFrame, name: str, func, **kwargs):
    """``func(table, control=None, ...)`` for every ordered pair: the reference's groups, the
    result indexed by group and the warnings; None when no pair shares a query (then a
    PairingError is the outcome). The table must come back unchanged."""
    TABLES[name] += 1
    before = table.copy(deep=True)
    groups = paired(table)
    res, caught, err = run(func, table, control=None, **kwargs)
    unchanged(before, table)
    if not groups:
        assert isinstance(err, metaeval.PairingError), err
        outcome(name, "typed_error")
        return None
    assert err is None, repr(err)
    got = res.set_index(["metric", "treatment", "control", "task"])
    assert sorted(got.index) == sorted(groups)
    return groups, got, caught


# ------------------------------------------------------------------ effects
@FUZZ
@given(score_tables(), st.sampled_from(EFFECTS))
def test_effects_match_the_reference_loop(table, kind):
    checked = every_pair(table, "effects", metaeval.effects, effect=kind)
    if checked is None:
        return
    groups, got, caught = checked
    size = magnitude(table)
    for key, (x, y, a, b) in groups.items():
        row = got.loc[key]
        mo = moments(x, y, a, b)
        want_e, want_v = reference_effect(mo, kind)
        assert int(row["n"]) == len(x)
        assert close(row["mean_treatment"], float(mo["mx"]), rtol=1e-9, atol=1e-12 * size)
        if np.isnan(want_v):
            assert np.isnan(row["variance"]), (key, row["variance"])
            assert warned_for(caught, key), (key, [str(w.message) for w in caught])
            if np.isnan(want_e):
                assert np.isnan(row["effect"]), (key, row["effect"])
            else:  # md keeps the effect
                assert close(row["effect"], want_e, rtol=1e-9, atol=1e-12 * size)
            outcome("effects", "nan_warned")
            continue
        atol_e = 1e-12 * size if kind == "md" else 1e-9
        atol_v = 0.0
        assert close(row["effect"], want_e, rtol=1e-7, atol=atol_e), (key, row["effect"], want_e)
        assert close(row["variance"], want_v, rtol=1e-7, atol=atol_v), (
            key,
            row["variance"],
            want_v,
        )
        z = want_e / np.sqrt(want_v)
        assert close(row["p_value"], 2 * stats.norm.sf(abs(z)), rtol=1e-6, atol=1e-12)
        outcome("effects", "correct")


# ------------------------------------------------------------ per-task tests
@FUZZ
@given(score_tables(), st.sampled_from(["t", "wilcoxon", "sign"]))
@pytest.mark.slow
def test_compare_matches_scipy_on_the_differences(table, test):
    checked = every_pair(table, "compare", metaeval.compare, test=test)
    if checked is None:
        return
    groups, got, caught = checked
    for key, (x, y, a, b) in groups.items():
        row = got.loc[key]
        d = x - y
        undefined = (
            len(d) < 2
            or (test == "t" and moments(x, y, a, b)["zero_d"])
            or (test != "t" and not (d != 0).any())
        )
        if undefined:
            assert np.isnan(row["p_value"]) and np.isnan(row["statistic"]), key
            assert warned_for(caught, key), key
            outcome("compare", "nan_warned")
            continue
        if test == "t":  # scipy squares the differences: give it units near 1 (t is the same)
            unit = np.ldexp(1.0, np.frexp(np.abs(np.r_[x, y]).max())[1])
            ref = stats.ttest_rel(x / unit, y / unit)
            stat, p = ref.statistic, ref.pvalue
        elif test == "wilcoxon":
            ref = stats.wilcoxon(d)
            stat, p = ref.statistic, ref.pvalue
        else:
            nonzero = d[d != 0]
            stat = (nonzero > 0).mean()
            p = stats.binomtest(int((nonzero > 0).sum()), len(nonzero)).pvalue
        assert close(row["statistic"], stat, rtol=1e-7, atol=1e-9), (key, row["statistic"], stat)
        assert close(row["p_value"], p, rtol=1e-6, atol=1e-14), (key, row["p_value"], p)
        outcome("compare", "correct")


# ------------------------------------------------------------------- pooling
@st.composite
def effect_tables(draw: Any) -> pd.DataFrame:
    k = draw(st.integers(1, 6))
    extreme = draw(st.booleans())
    y = np.array(draw(st.lists(st.integers(-16, 16), min_size=k, max_size=k))) / 8
    exponents = st.floats(-3, 21 if extreme else 2)
    v = 10.0 ** np.array(draw(st.lists(exponents, min_size=k, max_size=k)))
    scale = draw(st.sampled_from([1.0, 1e-6, 1e6]))
    if draw(st.booleans()) and k > 1:  # a missing effect is left out with a warning
        y[draw(st.integers(0, k - 1))] = np.nan
    return pd.DataFrame(
        {"task": [f"t{i}" for i in range(k)], "effect": scale * y, "variance": scale**2 * v}
    )


def exact_pool(y: np.ndarray, v: np.ndarray, method: str, ci: str) -> dict[str, float]:
    """Common-effect or DerSimonian-Laird pooling in exact rational arithmetic."""
    fy, fv = [Fraction(a) for a in y], [Fraction(a) for a in v]
    k = len(fy)
    w = [1 / a for a in fv]
    sw = sum(w)
    mean = sum(a * b for a, b in zip(w, fy, strict=True)) / sw
    q = sum(a * (b - mean) ** 2 for a, b in zip(w, fy, strict=True))
    tau2 = Fraction(0)
    if method == "DL":
        tau2 = max(Fraction(0), (q - (k - 1)) / (sw - sum(a * a for a in w) / sw))
    ws = [1 / (a + tau2) for a in fv]
    mu = sum(a * b for a, b in zip(ws, fy, strict=True)) / sum(ws)
    var = 1 / sum(ws)
    if ci == "knha":
        var *= sum(a * (b - mu) ** 2 for a, b in zip(ws, fy, strict=True)) / (k - 1)
    crit = stats.t.isf(0.025, k - 1) if ci == "knha" else stats.norm.isf(0.025)
    # documented: Knapp–Hartung's s² = 0 (every effect equal to μ̂) gives NaN, not se = 0
    se = float(var) ** 0.5 if var > 0 else float("nan")
    return {
        "effect": float(mu),
        "se": se,
        "tau2": float(tau2),
        "q": float(q),
        "ci_low": float(mu) - crit * se,
        "ci_high": float(mu) + crit * se,
    }


def restricted_loglik(tau2: float, y: np.ndarray, v: np.ndarray) -> float:
    """The REML log-likelihood of the intercept-only model at τ² (μ profiled out), as
    metafor's logLik() but for its constants."""
    w = 1 / (v + tau2)
    mu = (w * y).sum() / w.sum()
    return float(-0.5 * (np.log(v + tau2).sum() + np.log(w.sum()) + (w * (y - mu) ** 2).sum()))


def pm_tau2(y: np.ndarray, v: np.ndarray) -> float:
    """Paule-Mandel: the root of Q(tau2) = k - 1 (0 when Q(0) <= k - 1), by brentq."""
    k = len(y)

    def q(t: float) -> float:
        w = 1 / (v + t)
        mu = (w * y).sum() / w.sum()
        return float((w * (y - mu) ** 2).sum()) - (k - 1)

    if q(0.0) <= 0:
        return 0.0
    hi = max(1.0, float(v.max()))
    while q(hi) > 0:
        hi *= 4
    return optimize.brentq(q, 0.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps)


@FUZZ
@given(effect_tables(), st.sampled_from(["EE", "DL", "PM", "REML"]), st.sampled_from(["z", "knha"]))
def test_pool_matches_exact_and_root_finding_references(eff, method, ci):
    TABLES["pool"] += 1
    before = eff.copy(deep=True)
    pooled, caught, err = run(metaeval.pool, eff, method=method, test=ci)
    unchanged(before, eff)
    assert err is None, repr(err)
    row = pooled.iloc[0]
    ok = eff.dropna()
    y, v = ok["effect"].to_numpy(), ok["variance"].to_numpy()
    if len(ok) < len(eff):
        assert any("left out of pooling" in str(w.message) for w in caught)
    if len(y) == 1:  # documented: the effect and its normal interval, heterogeneity NaN
        assert row["effect"] == pytest.approx(y[0], rel=1e-12)
        assert row["se"] == pytest.approx(np.sqrt(v[0]), rel=1e-12)
        assert np.isnan(row["q"]) and (method == "EE" or np.isnan(row["tau2"]))
        assert any("k = 1" in str(w.message) for w in caught)
        outcome("pool", "nan_warned")
        return
    if method == "REML":  # checked against metafor elsewhere; here: the highest maximum
        assert np.isfinite(row["effect"]) and row["tau2"] >= 0
        # no point of a dense grid has a higher restricted likelihood (issue 39, item 23)
        grid = np.r_[0.0, np.geomspace(1e-6, 1e8, 1500) * v.min()]
        with np.errstate(all="ignore"):
            lls = [restricted_loglik(t, y, v) for t in grid]
        best = max(ll for ll in lls if np.isfinite(ll))
        got = restricted_loglik(row["tau2"], y, v)
        assert got >= best - 1e-9 * max(1.0, abs(best)), (row["tau2"], got, best)
        outcome("pool", "correct")
        return
    if method == "PM":
        tau2 = pm_tau2(y, v)
        assert row["tau2"] == pytest.approx(tau2, rel=1e-6, abs=1e-12 * v.min())
        w = 1 / (v + tau2)
        assert row["effect"] == pytest.approx(
            (w * y).sum() / w.sum(), rel=1e-6, abs=1e-9 * np.abs(y).max()
        )
        outcome("pool", "correct")
        return
    want = exact_pool(y, v, method, ci)
    if np.isnan(want["se"]):
        assert any("s² is 0" in str(w.message) for w in caught)
    size = max(np.abs(y).max(), np.sqrt(v.min()))
    for col in ("effect", "ci_low", "ci_high"):
        assert close(row[col], want[col], rtol=1e-9, atol=1e-12 * size), (col, row[col], want[col])
    assert close(row["se"], want["se"], rtol=1e-9, atol=0), ("se", row["se"], want["se"])
    assert close(row["tau2"], want["tau2"], rtol=1e-9, atol=1e-14 * v.min()), (
        row["tau2"],
        want["tau2"],
    )
    assert close(row["q"], want["q"], rtol=1e-9, atol=1e-12), (row["q"], want["q"])
    # statsmodels cancels when variances span many orders and does not truncate DL's tau2 at 0
    if not np.any(v > 1e6 * v.min()) and (method == "EE" or want["tau2"] > 0):
        from statsmodels.stats.meta_analysis import combine_effects

        with np.errstate(all="ignore"):  # its own 0/0 where Q = 0
            sm = combine_effects(y, v, method_re="chi2").summary_frame()
        line = "random effect" if method == "DL" else "fixed effect"
        line += " wls" if ci == "knha" else ""
        if np.isfinite(sm.loc[line, "eff"]):  # statsmodels gives NaN for Q = 0 and tau2 = 0
            assert row["effect"] == pytest.approx(sm.loc[line, "eff"], rel=1e-9, abs=1e-12)
    outcome("pool", "correct")


# ------------------------------------------------------------------- faults
@FUZZ
@given(score_tables(), st.sampled_from(FAULTS), st.integers(0, 10_000))
def test_every_injected_fault_is_a_typed_error_naming_it(table, fault, i):
    TABLES["faults"] += 1
    bad, word = inject(table, fault, i)
    before = bad.copy(deep=True)
    calls = {
        "effects": lambda d: metaeval.effects(d, control=None),
        "compare": lambda d: metaeval.compare(d, control=None),
        "validate": metaeval.validate_scores,
    }
    for call, func in calls.items():
        if fault == "output_column" and call != "effects":
            continue  # extra columns are allowed where nothing is written next to them
        _, _, err = run(func, bad)
        unchanged(before, bad)
        assert isinstance(err, MetaEvalError), (fault, call, repr(err))
        assert word in str(err), (fault, str(err))
        assert len(str(err)) < 3000
        outcome(f"faults:{call}", "typed_error")


# --------------------------------------------------------------- invariants
ALL_CALLS = [*EFFECTS, "t", "wilcoxon", "sign", "randomization", "bootstrap"]


def results(
    table: pd.DataFrame, calls: list[str] = ALL_CALLS, *, quiet: bool = True
) -> dict[str, pd.DataFrame]:
    """The effect types and tests named in ``calls`` (resampling seeded), warnings silenced."""

    def compute() -> dict[str, pd.DataFrame]:
        out = {}
        for name in calls:
            if name in EFFECTS:
                out[name] = metaeval.effects(table, control=None, effect=name)
            else:
                out[name] = metaeval.compare(
                    table, control=None, test=name, n_resamples=256, seed=3
                )
        return out

    if not quiet:  # in threads: warnings.catch_warnings is not thread-safe
        return compute()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MetaEvalWarning)
        return compute()


# each example runs two effect types and two tests on three tables and a rescaled one (about
# 1.5 s): half the profile's examples keep the suite's time (the long profile still fuzzes)
@settings(FUZZ, max_examples=max(1, settings.default.max_examples // 2))
@given(
    score_tables(),
    st.randoms(use_true_random=False),
    st.sampled_from(KEY_DTYPES),
    st.sampled_from([2.0**-30, 2.0**30, 1e-12, 1e9, 2.0**-1000, 2.0**1000, 1e-300, 1e300]),
    st.sampled_from(EFFECTS),
    st.sampled_from(["t", "wilcoxon", "sign", "randomization", "bootstrap"]),
)
@pytest.mark.slow
def test_row_order_key_dtype_and_scale_change_nothing(table, random, dtype, factor, kind, test):
    TABLES["invariants"] += 1
    if not paired(table):
        return
    calls = [kind, test]
    base = results(table, calls)
    shuffled = table.sample(frac=1.0, random_state=random.randint(0, 2**31))
    retyped = with_key_dtype(table.astype({"query": str}), dtype)
    for other in (results(shuffled, calls), results(retyped, calls)):
        for name, frame in base.items():
            pd.testing.assert_frame_equal(
                other[name].reset_index(drop=True),
                frame.reset_index(drop=True),
                check_exact=False,
                rtol=1e-12,
                check_dtype=False,
                check_categorical=False,
            )
    exact = np.log2(factor).is_integer()
    with np.errstate(over="ignore", under="ignore"):  # overflowing tables are assumed away
        values = factor * table["value"].to_numpy()
    tiny = (np.abs(values) < np.finfo(float).tiny) & (table["value"].to_numpy() != 0)
    assume(np.isfinite(values).all() and not tiny.any())  # still normal, finite numbers
    scaled = results(table.assign(value=values), calls)
    rtol = 1e-12 if exact else 1e-7
    a, b = base[kind]["effect"].to_numpy(), scaled[kind]["effect"].to_numpy()
    if kind == "md":  # the effect scales, its p-value does not
        np.testing.assert_allclose(b, factor * a, rtol=rtol, atol=1e-11 * factor * magnitude(table))
    else:
        np.testing.assert_allclose(b, a, rtol=rtol, atol=1e-9, err_msg=kind)
    np.testing.assert_allclose(
        scaled[kind]["p_value"], base[kind]["p_value"], rtol=rtol, atol=1e-12, err_msg=kind
    )
    a, b = base[test]["p_value"].to_numpy(), scaled[test]["p_value"].to_numpy()
    np.testing.assert_array_equal(np.isnan(b), np.isnan(a))
    if test == "wilcoxon" and not exact and tied_magnitudes(table):
        # ties among |x − y| are exact, as in scipy; an inexact rescaling rounds
        # each difference on its own and may break them (e.g. 1e-300·(1 − 0.75)
        # against 1e-300·0.25), so ranks and p-values may rightly change
        outcome("invariants", "correct")
        return
    np.testing.assert_allclose(b, a, rtol=rtol, atol=1e-12, err_msg=test)
    if test in ("wilcoxon", "sign", "bootstrap"):  # scale-free statistics
        a, b = base[test]["statistic"].to_numpy(), scaled[test]["statistic"].to_numpy()
        np.testing.assert_allclose(b, a, rtol=rtol, atol=1e-12, err_msg=test)
    outcome("invariants", "correct")


# ------------------------------------------------------------------ threads
@pytest.mark.filterwarnings("ignore::metaeval.MetaEvalWarning")
def test_four_threads_give_the_single_threaded_results():
    from _helpers import make_scores

    tables = [make_scores(np.random.default_rng(i), drop=0.1 * i) for i in range(4)]
    tables[3].loc[tables[3]["system"] == "b", "value"] = 0.5  # a constant system
    calls = ["md", "smcrp", "t", "wilcoxon", "randomization"]
    expected = [results(t, calls) for t in tables]
    got: dict[int, list[dict[str, pd.DataFrame]]] = {i: [] for i in range(4)}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for _ in range(2):
                got[i].append(results(tables[i], calls, quiet=False))
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i in range(4):
        assert len(got[i]) == 2
        for res in got[i]:
            for name, frame in expected[i].items():
                pd.testing.assert_frame_equal(res[name], frame)
    outcome("threads", "correct")

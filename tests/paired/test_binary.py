"""Binary (0/1) scores: binomial intervals in ``means`` and McNemar's test in ``compare``
(issue 27, item 3). References: statsmodels, exact fractions, and Newcombe's formula
written out here from the paper."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.proportion import proportion_confint

import metaeval
from metaeval.errors import OptionError, PairingWarning, SchemaError


def _binary_scores(rng, probs=None, n_queries=25, tasks=("t1", "t2", "t3")) -> pd.DataFrame:
    """0/1 scores of correlated systems; system 'all' is always right, 'none' never."""
    probs = probs or {"a": 0.7, "b": 0.55, "c": 0.4, "all": 1.0, "none": 0.0}
    rows = []
    for task in tasks:
        latent = rng.random(n_queries)  # a shared query difficulty: correlated pairs
        for system, p in probs.items():
            noise = rng.random(n_queries)
            hit = np.where(rng.random(n_queries) < 0.5, latent, noise) < p
            for q in range(n_queries):
                rows.append((task, f"q{q}", system, "acc", float(hit[q])))
    return pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])


# ------------------------------------------------------------------------ means
@pytest.mark.parametrize(
    ("interval", "sm_method"), [("wilson", "wilson"), ("clopper_pearson", "beta")]
)
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_means_binomial_intervals_match_statsmodels(rng, interval, sm_method, alpha):
    scores = _binary_scores(rng)
    scores = scores.drop(index=scores.index[:7])  # system 'a' misses 7 queries on t1
    out = metaeval.means(scores, interval=interval, alpha=alpha)
    assert (out["variance_from"] == interval).all()
    assert out["moe"].isna().all() and out["se"].isna().all()
    for row in out.itertuples():
        own = scores[
            (scores["task"] == row.task)
            & (scores["system"] == row.system)
            & (scores["metric"] == row.metric)
        ]["value"]
        x, n = int(own.sum()), len(own)
        low, high = proportion_confint(x, n, alpha=alpha, method=sm_method)
        assert row.n == n
        assert row.mean == pytest.approx(x / n, abs=1e-12)
        assert row.ci_low == pytest.approx(low, abs=1e-10)
        assert row.ci_high == pytest.approx(high, abs=1e-10)
    assert (out.query("system == 'a' and task == 't1'")["n"] == 18).all()


@pytest.mark.parametrize("interval", ["wilson", "clopper_pearson"])
def test_means_binomial_interval_is_never_a_point_at_0_or_100_percent(rng, interval):
    out = metaeval.means(_binary_scores(rng), interval=interval).set_index(["task", "system"])
    for system, mean in [("all", 1.0), ("none", 0.0)]:
        part = out.xs(system, level="system")
        assert (part["mean"] == mean).all()
        assert (part["ci_high"] - part["ci_low"] > 0.05).all()
        assert ((part["ci_low"] <= mean) & (mean <= part["ci_high"])).all()


def test_means_default_is_still_t(rng):
    scores = _binary_scores(rng)
    assert metaeval.means(scores).equals(metaeval.means(scores, interval="t"))


@pytest.mark.parametrize("interval", ["wilson", "clopper_pearson"])
def test_means_binomial_ci_rejects_non_binary_scores_naming_the_group(rng, interval):
    scores = _binary_scores(rng)
    scores.loc[scores.index[30], "value"] = 0.5
    bad = scores.loc[scores.index[30]]
    with pytest.raises(SchemaError, match="binary") as info:
        metaeval.means(scores, interval=interval)
    message = str(info.value)
    for part in ("0.5", repr(bad["task"]), repr(bad["system"]), repr(bad["query"]), interval):
        assert part in message
    assert info.value.failure_cases["value"].tolist() == [0.5]


def test_means_rejects_a_bogus_ci(rng):
    with pytest.raises(OptionError, match="interval"):
        metaeval.means(_binary_scores(rng), interval="wald")


def test_means_binomial_ci_is_not_combined_with_cluster(rng):
    scores = _binary_scores(rng)
    scores["passage"] = scores["query"].str.len()
    with pytest.raises(OptionError, match=r"cluster=.*interval='wilson'"):
        metaeval.means(scores, interval="wilson", cluster="passage")


# ---------------------------------------------------------------------- McNemar
def _table(scores, treatment, control, task):
    """(a, b, c, d): both right, only treatment, only control, both wrong."""
    part = scores[scores["task"] == task].pivot(index="query", columns="system", values="value")
    x, y = part[treatment].dropna(), part[control].dropna()
    x, y = x[x.index.isin(y.index)], y[y.index.isin(x.index)]
    y = y.loc[x.index]
    return (
        int(((x == 1) & (y == 1)).sum()),
        int(((x == 1) & (y == 0)).sum()),
        int(((x == 0) & (y == 1)).sum()),
        int(((x == 0) & (y == 0)).sum()),
    )


def _newcombe10(a, b, c, d, alpha=0.05, z=None):
    """Newcombe RG (1998) Stat Med 17:2635-2650, method 10, written out from the paper:
    with the 2x2 table e=a, f=b, g=c, h=d and n = a+b+c+d, p1 = (a+b)/n, p2 = (a+c)/n,
    (l_i, u_i) the Wilson score limits of p_i (no continuity correction), and
    phi = (ad - bc)/sqrt((a+b)(c+d)(a+c)(b+d)) (0 if the denominator is 0):
        delta   = sqrt((p1-l1)^2 - 2 phi (p1-l1)(u2-p2) + (u2-p2)^2)
        epsilon = sqrt((u1-p1)^2 - 2 phi (u1-p1)(p2-l2) + (p2-l2)^2)
        (L, U)  = (p1 - p2 - delta, p1 - p2 + epsilon).
    The Wilson limits come from statsmodels, not from metaeval."""
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = proportion_confint(a + b, n, alpha=alpha, method="wilson")
    l2, u2 = proportion_confint(a + c, n, alpha=alpha, method="wilson")
    den = (a + b) * (c + d) * (a + c) * (b + d)
    phi = (a * d - b * c) / math.sqrt(den) if den > 0 else 0.0
    delta = math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    eps = math.sqrt((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
    return p1 - p2 - delta, p1 - p2 + eps


def _exact_tail_le(k, m):
    """P(B <= k), B ~ Binomial(m, 1/2), as a fraction."""
    return Fraction(sum(math.comb(m, i) for i in range(k + 1)), 2**m)


def test_mcnemar_matches_statsmodels_and_newcombe(rng):
    scores = _binary_scores(rng)
    scores = scores.drop(index=scores.index[3:6])  # a few unpaired queries
    with pytest.warns(PairingWarning, match="left out"):
        out = metaeval.compare(scores, test="mcnemar")
    assert len(out) == 3 * 5 * 4
    assert (out["test"] == "mcnemar").all()
    for row in out.itertuples():
        a, b, c, d = _table(scores, row.treatment, row.control, row.task)
        assert (row.n, row.n_treatment_only, row.n_control_only) == (a + b + c + d, b, c)
        assert row.n_discordant == b + c
        assert row.statistic == b - c
        expected = sm_mcnemar([[a, b], [c, d]], exact=True).pvalue
        assert row.p_value == pytest.approx(expected, rel=1e-12, abs=1e-15)
        low, high = _newcombe10(a, b, c, d)
        assert row.ci_low == pytest.approx(low, abs=1e-12)
        assert row.ci_high == pytest.approx(high, abs=1e-12)
        assert row.diff == pytest.approx((b - c) / (a + b + c + d), abs=1e-12)
        assert np.isnan(row.moe)
    assert out[["n_discordant", "n_treatment_only", "n_control_only"]].dtypes.eq(int).all()


def test_newcombe_interval_by_hand():
    """a=36, b=12, c=2, d=0: Wilson's limits written out in
    the form (2x + z^2 -/+ z sqrt(z^2 + 4x(1 - x/n))) / (2(n + z^2)) of Newcombe's paper.
    (The paper's own worked example was not at hand to check against.)"""
    a, b, c, d = 36, 12, 2, 0
    z = sps.norm.isf(0.025)
    n = a + b + c + d

    def wilson(x):
        centre = (2 * x + z**2) / (2 * (n + z**2))
        half = z * math.sqrt(z**2 + 4 * x * (1 - x / n)) / (2 * (n + z**2))
        return centre - half, centre + half

    (l1, u1), (l2, u2) = wilson(a + b), wilson(a + c)
    p1, p2 = (a + b) / n, (a + c) / n
    phi = (0 - 12 * 2) / math.sqrt(48 * 2 * 38 * 12)  # (ad - bc)/sqrt of the margins
    low = p1 - p2 - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2))
    high = p1 - p2 + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2))
    assert _newcombe10(a, b, c, d) == pytest.approx((low, high), abs=1e-12)
    rows = [("t", f"q{i}", "x", "acc", float(v)) for i, v in enumerate([1] * 48 + [0] * 2)]
    rows += [
        ("t", f"q{i}", "y", "acc", float(v)) for i, v in enumerate([1] * 36 + [0] * 12 + [1] * 2)
    ]
    scores = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])
    out = metaeval.compare(scores, control="y", test="mcnemar").iloc[0]
    assert (out["ci_low"], out["ci_high"]) == pytest.approx((low, high), abs=1e-12)
    assert out["p_value"] == pytest.approx(float(2 * _exact_tail_le(2, 14)), rel=1e-12)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_mcnemar_midp_and_one_sided_match_exact_fractions(rng, alternative):
    scores = _binary_scores(rng)
    exact = metaeval.compare(scores, control="b", test="mcnemar", alternative=alternative)
    mid = metaeval.compare(scores, control="b", test="mcnemar_midp", alternative=alternative)
    for e, m in zip(exact.itertuples(), mid.itertuples(), strict=True):
        b, c = e.n_treatment_only, e.n_control_only
        s = b + c

        def pmf(k, s=s):
            return Fraction(math.comb(s, k), 2**s)

        if alternative == "two-sided":
            k = min(b, c)
            p_exact = min(Fraction(1), 2 * _exact_tail_le(k, s))
            p_mid = min(Fraction(1), 2 * (_exact_tail_le(k, s) - pmf(k) / 2))
        elif alternative == "greater":
            p_exact = 1 - _exact_tail_le(b - 1, s) if b > 0 else Fraction(1)
            p_mid = p_exact - pmf(b) / 2
            assert e.p_value == pytest.approx(sps.binomtest(b, s, 0.5, "greater").pvalue)
        else:
            p_exact = _exact_tail_le(b, s)
            p_mid = p_exact - pmf(b) / 2
        if s == 0:
            p_exact = p_mid = Fraction(1)
        assert e.p_value == pytest.approx(float(p_exact), rel=1e-12)
        assert m.p_value == pytest.approx(float(p_mid), rel=1e-12)
        assert m.p_value <= e.p_value
    if alternative != "two-sided":  # one bound at level 1 - alpha, the other the edge
        row = exact.iloc[0]
        a, b, c, d = _table(scores, row["treatment"], row["control"], row["task"])
        low, high = _newcombe10(a, b, c, d, alpha=0.10)
        if alternative == "greater":
            assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, 1.0), abs=1e-12)
        else:
            assert (row["ci_low"], row["ci_high"]) == pytest.approx((-1.0, high), abs=1e-12)


def test_mcnemar_swapping_treatment_and_control(rng):
    scores = _binary_scores(rng)
    ab = metaeval.compare(scores, control="b", treatment="a", test="mcnemar").iloc[0]
    ba = metaeval.compare(scores, control="a", treatment="b", test="mcnemar").iloc[0]
    assert ba["statistic"] == -ab["statistic"]
    assert ba["p_value"] == pytest.approx(ab["p_value"])
    assert (ba["ci_low"], ba["ci_high"]) == pytest.approx((-ab["ci_high"], -ab["ci_low"]))
    assert (ba["n_treatment_only"], ba["n_control_only"]) == (
        ab["n_control_only"],
        ab["n_treatment_only"],
    )


def test_mcnemar_without_discordant_queries_has_p_one(rng):
    scores = _binary_scores(rng)
    copy = scores[scores["system"] == "a"].assign(system="a2")
    both = pd.concat([scores, copy], ignore_index=True)
    out = metaeval.compare(both, control="a", treatment="a2", test="mcnemar")
    assert (out["p_value"] == 1.0).all()
    assert (out["n_discordant"] == 0).all()
    assert (out["ci_low"] < 0).all() and (out["ci_high"] > 0).all()


@pytest.mark.parametrize("test", ["mcnemar", "mcnemar_midp"])
def test_mcnemar_rejects_non_binary_scores(rng, test):
    scores = _binary_scores(rng)
    scores.loc[scores.index[5], "value"] = 2.0
    with pytest.raises(SchemaError, match=r"binary.*2\.0"):
        metaeval.compare(scores, test=test)
    rep = pd.concat([scores.assign(replicate=0), scores.assign(replicate=1)], ignore_index=True)
    rep.loc[5, "value"] = 1.0  # replicate 0 of one query scores 1,
    rep.loc[len(scores) + 5, "value"] = 0.0  # replicate 1 scores 0: averaged 0.5
    with pytest.raises(SchemaError, match=r"0\.5.*averaged over its 2 replicates"):
        metaeval.compare(rep, test=test)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize(("a", "d"), [(11, 11), (14, 14), (19, 19), (30, 10), (40, 0), (0, 25)])
def test_mcnemar_without_discordant_pairs_has_the_exact_interval(alternative, a, d):
    """No discordant pair (b = c = 0, issue 39, item 28): Newcombe's phi is 1, and
    method 10's square-and-add leaves only the asymmetry of the Wilson limits — 0 when
    a = d, where rounding made the bound NaN ([nan, 1.0] one-sided). Then |p1 − p2| is at
    most the discordant share (b + c)/n, whose exact (Clopper–Pearson, binom.test) upper
    bound with 0 of n observed is u = 1 − (alpha/2)^(1/n) two-sided (1 − alpha^(1/n) for a
    one-sided bound): the interval is [−u, u] (the other side ±1 for a one-sided
    alternative). The reference is scipy's binomtest."""
    values = [1.0] * a + [0.0] * d
    scores = pd.DataFrame(
        [("t", f"q{i}", s, "acc", x) for s in ("x", "y") for i, x in enumerate(values)],
        columns=["task", "query", "system", "metric", "value"],
    )
    out = metaeval.compare(scores, control="y", test="mcnemar", alternative=alternative).iloc[0]
    n = a + d
    side = {"two-sided": "two-sided", "greater": "less", "less": "less"}[alternative]
    u = sps.binomtest(0, n, 0.5, alternative=side).proportion_ci(0.95, "exact").high
    want = {"two-sided": (-u, u), "greater": (-u, 1.0), "less": (-1.0, u)}[alternative]
    assert (out["ci_low"], out["ci_high"]) == pytest.approx(want, rel=1e-12)
    assert out["p_value"] == 1.0 and out["n_discordant"] == 0

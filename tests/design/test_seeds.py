"""plan_queries(replicates="seeds") (issue 28): the seeds' variance in the plan.

References are independent of the code: the pilot's variance components are computed
here by naive numpy loops from the documented formulas (module docstring of
:mod:`metaeval.paired.replicates`), the power by scipy's noncentral t, and simulated
powers from a model whose parameters the test sets, each study analysed as
:func:`metaeval.effects` does (t on its ``df`` column)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import metaeval
from metaeval.design.queries import plan_queries
from metaeval.errors import DegenerateWarning, MetaEvalWarning, OptionError, PairingError


def _runs(
    rng,
    *,
    queries: int,
    seeds: int,
    studies: int = 1,
    delta: float,
    sd_query: float,
    sd_seed: float,
    sd_noise: float,
) -> np.ndarray:
    """Scores X[study, system, query, seed]: system 1 = system 0 + delta + a query effect;
    each run (system, seed) shifted by N(0, sd_seed²); per-score noise N(0, sd_noise²)."""
    shape = (studies, 2, queries, seeds)
    base = rng.normal(0.5, 0.2, (studies, 1, queries, 1))
    x = np.broadcast_to(base, shape).copy()
    x[:, 1] += delta + rng.normal(0, sd_query, (studies, queries, 1))
    x += rng.normal(0, sd_seed, (studies, 2, 1, seeds))
    x += rng.normal(0, sd_noise, shape)
    return x


def _table(x: np.ndarray) -> pd.DataFrame:
    """The long scores table of X[study, system, query, seed]; each study a task."""
    s, m, q, r = np.indices(x.shape).reshape(4, -1)
    return pd.DataFrame(
        {
            "task": s.astype(str),
            "query": q.astype(str),
            "system": np.array(["a", "b"])[m],
            "metric": "m",
            "replicate": r,
            "value": x.ravel(),
        }
    )


def _components(x: np.ndarray) -> dict[str, np.ndarray]:
    """Per study, naively: the query-level variance of the differences of the
    replicate-averaged scores, and per system σ̂²_rep = max(0, s²_M − w/n) and
    w (mean over queries of the variance across seeds)."""
    n = x.shape[2]
    d = x[:, 1].mean(-1) - x[:, 0].mean(-1)  # [study, query]
    s2_m = x.mean(2).var(-1, ddof=1)  # [study, system]: variance of the run means
    w = x.var(-1, ddof=1).mean(-1)  # [study, system]
    return {
        "mean": d.mean(-1),
        "q": d.var(-1, ddof=1),
        "rep": np.maximum(s2_m - w / n, 0),
        "w": w,
        "n": n,
    }


def _power(mde, q, rep_t, rep_c, seeds, n, alpha=0.05):
    """Two-sided power from the documented formula: Var = q/n + (rep_t + rep_c)/R,
    Welch–Satterthwaite df (q/n on n − 1, each seed part on R − 1), noncentral t."""
    parts = np.array([q / n, rep_t / seeds, rep_c / seeds])
    dfs = np.array([n - 1, seeds - 1, seeds - 1], dtype=float)
    var = parts.sum()
    df = var**2 / sum(p**2 / k for p, k in zip(parts, dfs, strict=True) if p > 0)
    nc = mde / math.sqrt(var)
    crit = stats.t.ppf(1 - alpha / 2, df)
    return stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc)


def test_the_seed_plan_is_the_documented_power_formula():
    rng = np.random.default_rng(12)
    x = _runs(rng, queries=60, seeds=5, delta=0.1, sd_query=0.25, sd_seed=0.06, sd_noise=0.2)
    scores = _table(x)
    c = _components(x)
    q, (rep_c, rep_t) = c["q"][0], c["rep"][0]
    assert rep_t > 0 and rep_c > 0
    plan = plan_queries(scores, "a", mde=0.15, power=0.8, replicates="seeds").table.iloc[0]
    assert plan["seeds"] == 5 and plan["pilot_n"] == 60
    assert plan["sd_diff"] == pytest.approx(math.sqrt(q), rel=1e-10)
    assert plan["var_seeds"] == pytest.approx((rep_t + rep_c) / 5, rel=1e-10)
    n = int(plan["n"])
    assert _power(0.15, q, rep_t, rep_c, 5, n) >= 0.8 > _power(0.15, q, rep_t, rep_c, 5, n - 1)
    assert plan["power"] == pytest.approx(_power(0.15, q, rep_t, rep_c, 5, n), abs=1e-10)
    # power from n and mde; mde from n and power
    got = plan_queries(scores, "a", n=40, mde=0.15, replicates="seeds").table.iloc[0]
    assert got["power"] == pytest.approx(_power(0.15, q, rep_t, rep_c, 5, 40), abs=1e-10)
    got = plan_queries(scores, "a", n=40, power=0.9, replicates="seeds").table.iloc[0]
    assert _power(got["mde"], q, rep_t, rep_c, 5, 40) == pytest.approx(0.9, abs=1e-8)
    # other planned seeds: the per-query noise e (σ̂²_e = w − σ̂²_rep) averages over them
    got = plan_queries(scores, "a", mde=0.15, power=0.8, replicates="seeds", seeds=12).table.iloc[0]
    e_c, e_t = np.maximum(c["w"][0] - c["rep"][0], 0)
    q12 = q - (e_t + e_c) / 5 + (e_t + e_c) / 12
    assert got["seeds"] == 12 and got["sd_diff"] == pytest.approx(math.sqrt(q12), rel=1e-10)
    assert got["var_seeds"] == pytest.approx((rep_t + rep_c) / 12, rel=1e-10)
    k = int(got["n"])
    assert (
        _power(0.15, q12, rep_t, rep_c, 12, k) >= 0.8 > _power(0.15, q12, rep_t, rep_c, 12, k - 1)
    )
    assert k < n  # more seeds, fewer queries
    curve = plan_queries(scores, "a", mde=0.15, power=0.8, replicates="seeds").curve
    for row in curve.iloc[::7].itertuples():
        assert row.power == pytest.approx(_power(0.15, q, rep_t, rep_c, 5, row.size), abs=1e-10)


def _rejects(x: np.ndarray, alpha: float = 0.05) -> np.ndarray:
    """metaeval.effects(effect="md")'s test per study, naively: Var = s²_d/n + Σ σ̂²_rep/R,
    df Welch–Satterthwaite with the query part taken as known, two-sided t."""
    c = _components(x)
    seeds = x.shape[-1]
    parts = c["rep"] / seeds  # [study, system]
    var = c["q"] / c["n"] + parts.sum(-1)
    denom = np.where(parts > 0, parts**2 / (seeds - 1), 0.0).sum(-1)
    with np.errstate(divide="ignore"):
        df = np.where(denom > 0, var**2 / denom, np.inf)
    p = 2 * stats.t.sf(np.abs(c["mean"]) / np.sqrt(var), df)
    return p < alpha


@pytest.mark.slow
def test_a_seed_plan_reaches_its_power_and_the_plan_without_seeds_does_not():
    rng = np.random.default_rng(20261125)
    model = {"delta": 0.15, "sd_query": 0.3, "sd_seed": 0.03, "sd_noise": 0.2}
    # a large pilot (many seeds and queries): its estimates are near the model's
    pilot = _table(_runs(rng, queries=300, seeds=600, **model))
    seeds = 3
    plan = plan_queries(pilot, "a", mde=0.15, power=0.8, replicates="seeds", seeds=seeds)
    row = plan.table.iloc[0]
    q_true = 0.3**2 + 2 * 0.2**2 / seeds
    rep_true = 0.03**2
    assert row["sd_diff"] == pytest.approx(math.sqrt(q_true), rel=0.05)
    assert row["var_seeds"] == pytest.approx(2 * rep_true / seeds, rel=0.15)
    want = next(
        k for k in range(2, 1000) if _power(0.15, q_true, rep_true, rep_true, seeds, k) >= 0.8
    )
    n = int(row["n"])
    assert 20 <= n <= 80 and abs(n - want) <= 0.1 * want, (n, want)  # the pilot estimates
    with pytest.warns(MetaEvalWarning, match="replicates='seeds'"):
        naive = int(plan_queries(pilot, "a", mde=0.15, power=0.8).table.iloc[0]["n"])
    assert naive < n - 10
    # simulate studies of k queries with `seeds` seeds per system; the n-query studies
    # are analysed by metaeval.effects itself (each study a task), which the naive
    # analysis reproduces
    sims = 3000
    x = _runs(rng, queries=n, seeds=seeds, studies=sims, **model)
    eff = metaeval.effects(_table(x), "a", effect="md", replicates="nested")
    eff = eff.assign(task=eff["task"].astype(int)).sort_values("task")
    reject = eff["p_value"].to_numpy() < 0.05
    assert (reject == _rejects(x)).mean() > 0.999
    reached = {n: reject.mean()}
    for k in (n - 1, naive):
        reached[k] = _rejects(_runs(rng, queries=k, seeds=seeds, studies=sims, **model)).mean()
    # Monte-Carlo SE at 0.8 with 3000 studies: 0.0073
    assert reached[n] >= 0.77, reached
    assert reached[naive] <= 0.72, reached  # the plan without the seeds falls short
    for k, got in reached.items():  # and each simulated power is the planned one
        planned = _power(0.15, q_true, rep_true, rep_true, seeds, k)
        assert abs(got - planned) <= 4 * math.sqrt(planned * (1 - planned) / sims), (k, got)


def test_an_unreachable_power_is_nan_with_a_warning_naming_the_seeds_needed():
    rng = np.random.default_rng(17)
    x = _runs(rng, queries=60, seeds=5, delta=0.1, sd_query=0.25, sd_seed=0.06, sd_noise=0.2)
    rep_c, rep_t = _components(x)["rep"][0]
    good = _table(
        _runs(rng, queries=60, seeds=5, delta=0.1, sd_query=0.25, sd_seed=0.0, sd_noise=0.2)
    ).assign(task="good")
    scores = pd.concat([_table(x), good], ignore_index=True)
    with pytest.warns(DegenerateWarning, match="More seeds are needed") as caught:
        plan = plan_queries(scores, "a", mde=0.1, power=0.8, replicates="seeds")
    groups = next(w.message.groups for w in caught if "seeds_needed" in str(w.message))
    assert list(groups["task"]) == ["0"] and groups["seeds"].item() == 5
    # the smallest R whose seed part alone (n → ∞: the query part vanishes, its df with
    # it) lets a t-test reach the power, from the documented formula

    def limit(r):
        var = (rep_t + rep_c) / r
        df = var**2 / ((rep_t / r) ** 2 / (r - 1) + (rep_c / r) ** 2 / (r - 1))
        crit = stats.t.ppf(0.975, df)
        nc = 0.1 / math.sqrt(var)
        return stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc)

    needed = next(r for r in range(2, 10_000) if limit(r) >= 0.8)
    assert limit(5) < 0.8 and groups["seeds_needed"].item() == needed
    assert f"seeds_needed={needed}" in str(caught[0].message)
    table = plan.table.set_index("task")
    assert pd.isna(table.loc["0", "n"]) and np.isnan(table.loc["0", "power"])
    assert table.loc["good", "n"] >= 2  # the other group is planned
    # with the seeds it names, the plan has an n
    got = plan_queries(
        scores[scores["task"] == "0"], "a", mde=0.1, power=0.8, replicates="seeds", seeds=needed
    ).table.iloc[0]
    assert got["n"] >= 2 and got["power"] >= 0.8


def test_a_pilot_with_seeds_planned_without_them_warns_and_keeps_its_numbers():
    rng = np.random.default_rng(5)
    x = _runs(rng, queries=50, seeds=4, delta=0.1, sd_query=0.25, sd_seed=0.05, sd_noise=0.2)
    scores = _table(x)
    with pytest.warns(MetaEvalWarning, match="replicates='seeds'.*replicates='epochs'") as caught:
        plan = plan_queries(scores, "a", mde=0.1, power=0.8)
    assert "more queries do not reduce" in str(caught[0].message)
    # today's numbers: the t design on the replicate-averaged scores
    averaged = scores.groupby(["task", "query", "system", "metric"], as_index=False)["value"]
    plain = plan_queries(averaged.mean(), "a", mde=0.1, power=0.8).table
    pd.testing.assert_frame_equal(plan.table, plain)


@pytest.mark.parametrize(
    ("kwargs", "names"),
    [
        ({"replicates": "seeds", "seeds": 1}, "`seeds`"),
        ({"replicates": "seeds", "seeds": 2.5}, "`seeds`"),
        ({"replicates": "epochs", "seeds": 3}, "`seeds`"),
        (
            {"replicates": "seeds", "test": "ci", "width": 0.1, "mde": None, "power": None},
            "test='ci'",
        ),
    ],
)
def test_bad_seed_options_are_option_errors(kwargs, names):
    scores = _table(
        _runs(
            np.random.default_rng(1),
            queries=10,
            seeds=3,
            delta=0.1,
            sd_query=0.2,
            sd_seed=0.05,
            sd_noise=0.1,
        )
    )
    args = {"mde": 0.1, "power": 0.8, **kwargs}
    args = {k: v for k, v in args.items() if v is not None}
    with pytest.raises(OptionError, match=names), warnings.catch_warnings():
        warnings.simplefilter("error")
        plan_queries(scores, "a", **args)


def test_seeds_without_a_replicate_column_is_an_option_error():
    scores = metaeval.load_example()
    with pytest.raises(OptionError, match="replicates='seeds'.*`replicate`"):
        plan_queries(scores, "logistic_regression", mde=0.1, power=0.8, replicates="seeds")


def test_a_system_with_one_seed_in_the_pilot_is_a_nan_row_named_in_a_warning():
    rng = np.random.default_rng(8)
    runs = dict(delta=0.1, sd_query=0.2, sd_seed=0.02, sd_noise=0.1)
    good = _table(_runs(rng, queries=30, seeds=6, **runs)).assign(task="good")
    one = _table(_runs(rng, queries=30, seeds=6, **runs)).assign(task="one")
    one = one[(one["system"] == "b") | (one["replicate"] == 0)]  # control: a single run
    with pytest.warns(DegenerateWarning, match="single replicate") as caught:
        plan = plan_queries(pd.concat([good, one]), "a", mde=0.15, power=0.8, replicates="seeds")
    groups = next(w.message.groups for w in caught if "single replicate" in str(w.message))
    assert list(groups["task"]) == ["one"]
    table = plan.table.set_index("task")
    assert pd.isna(table.loc["one", "n"]) and table.loc["good", "n"] >= 2
    with pytest.raises(PairingError, match="No group"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateWarning)
        plan_queries(one, "a", mde=0.1, power=0.8, replicates="seeds")

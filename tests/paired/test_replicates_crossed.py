"""Replicates crossed with tasks (issue 27): a seed is one run evaluated on every task.

Its shift is shared by all tasks, so it does not average away when the tasks are pooled:
``effects(replicates="crossed")`` carries each system's shared standard error to
``pool()``, which adds it to the pooled variance with Welch–Satterthwaite degrees of
freedom. Checked against the formulas written out here and by coverage simulations (the
design the issue reported at 20.5% coverage).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import metaeval
from metaeval.errors import MetaEvalWarning, OptionError, SchemaError


def simulate(
    benchmarks: int = 1,
    tasks: int = 6,
    queries: int = 300,
    seeds: int = 3,
    seed_sd: float = 0.15,
    noise: float = 0.5,
    gain: float = 0.1,
    crossed: bool = True,
    rng: np.random.Generator | None = None,
) -> pd.DataFrame:
    """Scores of systems T (true gain ``gain``) and C: a query effect shared by both, a
    shift per seed (shared by every task when ``crossed``, drawn per task otherwise) and
    noise; each simulated benchmark is a ``metric`` (pooled separately, all at once)."""
    rng = rng or np.random.default_rng(2027)
    shape = (benchmarks, 2, tasks, queries, seeds)
    query = rng.normal(0, noise, (benchmarks, 1, tasks, queries, 1))
    shift = rng.normal(0, seed_sd, (benchmarks, 2, 1 if crossed else tasks, 1, seeds))
    value = query + shift + rng.normal(0, noise, shape)
    value += gain * np.array([1.0, 0.0]).reshape(1, 2, 1, 1, 1)
    b, s, t, q, r = np.indices(shape).reshape(5, -1)
    return pd.DataFrame(
        {
            "task": np.char.add("t", t.astype(str)),
            "query": np.char.add("q", q.astype(str)),
            "system": np.array(["T", "C"])[s],
            "metric": np.char.add("b", b.astype(str)),
            "replicate": np.char.add("seed", r.astype(str)),
            "value": value.ravel(),
        }
    )


def test_shared_variance_equals_the_moment_formula_by_hand() -> None:
    scores = simulate(tasks=5, queries=40, seeds=4, rng=np.random.default_rng(1))
    eff = metaeval.effects(scores, control="C", effect="md", replicates="crossed")
    for system, column in (("T", "se_shared_treatment"), ("C", "se_shared_control")):
        part = scores[scores["system"] == system]
        m = part.pivot_table(index="task", columns="replicate", values="value", aggfunc="mean")
        k = len(m)
        a = m.mean(axis=0).var(ddof=1)  # over seeds, of the mean over tasks
        b = m.var(axis=1, ddof=1).mean()  # over tasks, of the variance over seeds
        shared = max(0.0, (k * a - b) / (k - 1))
        # each task's own σ̂²_rep (module docstring of metaeval.paired.replicates)
        own = []
        for _, rows in part.groupby("task"):
            means = rows.groupby("replicate")["value"].mean()
            within = rows.groupby("query")["value"].var(ddof=1).mean()
            own.append(max(0.0, means.var(ddof=1) - within / rows["query"].nunique()))
        expected = np.sqrt(shared / m.shape[1]) * np.ones(len(own))
        got = eff.set_index("task").loc[m.index, column].to_numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-10)
    assert eff.attrs["replicates"] == "crossed"


@pytest.mark.parametrize("ci", ["knha", "z"])
def test_pooled_variance_adds_the_shared_part_with_satterthwaite_df(ci: str) -> None:
    scores = simulate(tasks=6, queries=60, seeds=3, rng=np.random.default_rng(7))
    eff = metaeval.effects(scores, control="C", effect="md", replicates="crossed")
    got = metaeval.pool(eff, test=ci).iloc[0]
    # by hand: pool each task's own variance (the table without the shared part)
    shared = eff["se_shared_treatment"] ** 2 + eff["se_shared_control"] ** 2
    own = eff["variance"] - np.minimum(shared, eff["variance_replicates"])
    plain = eff.drop(columns=["se_shared_treatment", "se_shared_control"]).assign(variance=own)
    base = metaeval.pool(plain, test=ci).iloc[0]
    w = metaeval.weights(plain)["weight"].to_numpy() / 100
    lt = (w * eff["se_shared_treatment"]).sum()
    lc = (w * eff["se_shared_control"]).sum()
    total = base["se"] ** 2 + lt**2 + lc**2
    k = len(eff)
    first = base["se"] ** 4 / (k - 1) if ci == "knha" else 0.0
    df = total**2 / (first + lt**4 / 2 + lc**4 / 2)
    assert got["effect"] == pytest.approx(base["effect"], rel=1e-12)
    assert got["se"] == pytest.approx(np.sqrt(total), rel=1e-12)
    assert got["se_shared"] == pytest.approx(np.hypot(lt, lc), rel=1e-12)
    assert got["df"] == pytest.approx(df, rel=1e-10)
    crit = sps.t.isf(0.025, df)
    assert got["ci_low"] == pytest.approx(got["effect"] - crit * np.sqrt(total), rel=1e-12)
    assert got["tau2"] == pytest.approx(base["tau2"], rel=1e-12, abs=1e-15)
    assert got["se"] > base["se"]


def _coverage(scores: pd.DataFrame, replicates: str | None, gain: float = 0.1) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny τ² fits of 1000s of groups: not the point
        eff = metaeval.effects(scores, control="C", effect="md", replicates=replicates)
        pooled = metaeval.pool(eff)
    return float(((pooled["ci_low"] <= gain) & (gain <= pooled["ci_high"])).mean())


@pytest.mark.slow
def test_coverage_of_pooled_intervals_with_seeds_shared_by_tasks() -> None:
    """The issue's design (6 tasks, 3 seeds per system shared by every task, seed SD 0.15,
    query noise 0.5, gain 0.1), 300 benchmarks with 100 queries per task: the pooled 95%
    interval (REML, Knapp–Hartung) covers in ≥ 93% with replicates crossed, where the
    per-task model covers about one benchmark in five."""
    rows = []
    for crossed in (True, False):
        scores = simulate(benchmarks=300, queries=100, crossed=crossed)
        for replicates in ("crossed", "nested"):
            rows.append((crossed, replicates, _coverage(scores, replicates)))
    table = pd.DataFrame(rows, columns=["seeds shared by tasks", "replicates=", "coverage"])
    print("\n" + table.to_string(index=False))
    cover = table.set_index(["seeds shared by tasks", "replicates="])["coverage"]
    assert cover[(True, "crossed")] >= 0.93
    assert cover[(True, "nested")] < 0.5
    # seeds drawn per task: crossed estimates a shared part near 0 and stays conservative
    assert cover[(False, "crossed")] >= cover[(False, "nested")] - 0.02
    assert cover[(False, "crossed")] >= 0.85


def test_default_chooses_crossed_when_every_task_has_the_same_seeds() -> None:
    scores = simulate(tasks=3, queries=20, rng=np.random.default_rng(3))
    with pytest.warns(MetaEvalWarning, match=r"guessed 'crossed' \(every system has the same"):
        assert metaeval.effects(scores, "C", effect="md").attrs["replicates"] == "crossed"
    # seeds named per task: they cannot be the same runs
    renamed = scores.assign(replicate=scores["task"] + "-" + scores["replicate"])
    with pytest.warns(MetaEvalWarning, match=r"guessed 'nested' \(the systems' replicate ids"):
        eff = metaeval.effects(renamed, "C", effect="md")
    assert eff.attrs["replicates"] == "nested"
    assert "se_shared_treatment" not in eff.columns
    with pytest.raises(SchemaError, match=r"system '(T|C)'.*replicates='nested'"):
        metaeval.effects(renamed, "C", effect="md", replicates="crossed")


def test_one_task_or_nested_gives_the_per_task_effects_unchanged() -> None:
    scores = simulate(tasks=4, queries=30, rng=np.random.default_rng(4))
    crossed = metaeval.effects(scores, "C", effect="smcrp", replicates="crossed")
    nested = metaeval.effects(scores, "C", effect="smcrp", replicates="nested")
    shared = ["se_shared_treatment", "se_shared_control"]
    pd.testing.assert_frame_equal(crossed.drop(columns=shared), nested, check_like=False)
    assert (crossed[shared].to_numpy() > 0).any()
    one = scores[scores["task"] == "t0"]
    single = metaeval.effects(one, "C", effect="md", replicates="crossed")
    assert (single[shared].to_numpy() == 0).all()  # no second task to share with


def test_epochs_add_nothing_and_models_that_ignore_the_shared_part_refuse_it() -> None:
    scores = simulate(tasks=3, queries=30, rng=np.random.default_rng(5))
    epochs = metaeval.effects(scores, "C", effect="md", replicates="epochs")
    averaged = scores.groupby(["task", "query", "system", "metric"], as_index=False)["value"].mean()
    plain = metaeval.effects(averaged, "C", effect="md")
    pd.testing.assert_frame_equal(epochs, plain)
    assert epochs.attrs["replicates"] == "epochs"
    crossed = metaeval.effects(scores, "C", effect="md", replicates="crossed")
    with pytest.raises(OptionError, match="se_shared_treatment"):
        metaeval.metareg(crossed.assign(size=np.arange(len(crossed))), "size")
    with pytest.raises(OptionError, match="does not have"):
        metaeval.effects(averaged, "C", replicates="crossed")
    with pytest.raises(OptionError, match="replicates"):
        metaeval.effects(scores, "C", replicates="seeds")


def test_means_split_an_items_variance_into_within_and_between_epochs() -> None:
    """Miller (2024, §3): an item answered R times; the variance of its mean score is the
    between-item variance plus the within-item variance over R. Checked against a loop."""
    rng = np.random.default_rng(11)
    items, epochs = 50, 4
    p = rng.beta(2, 2, items)  # each item's chance of a right answer
    right = (rng.random((items, epochs)) < p[:, None]).astype(float)
    scores = pd.DataFrame(
        {
            "task": "qa",
            "query": np.repeat([f"i{i}" for i in range(items)], epochs),
            "system": "model",
            "metric": "accuracy",
            "replicate": np.tile(np.arange(1, epochs + 1), items),
            "value": right.ravel(),
        }
    )
    row = metaeval.means(scores).iloc[0]
    within = np.mean([np.var(r, ddof=1) for r in right])
    item_means = right.mean(axis=1)
    between = max(0.0, np.var(item_means, ddof=1) - within / epochs)
    assert row["replicates"] == epochs
    assert row["var_within"] == pytest.approx(within, rel=1e-12)
    assert row["var_between"] == pytest.approx(between, rel=1e-12)
    # the item is the unit: se² = s²(item means)/n = (between + within/R)/n here
    assert row["se"] ** 2 == pytest.approx(np.var(item_means, ddof=1) / items, rel=1e-12)
    assert row["se"] ** 2 == pytest.approx((between + within / epochs) / items, rel=1e-12)
    assert scores["replicate"].dtype.kind == "i"  # the input is not mutated

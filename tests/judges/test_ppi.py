"""metaeval.ppi against ppi_py (tests/fixtures/ppi, with the script that made the values)
and a coverage simulation of clustered paired differences."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import OptionError, SchemaError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ppi"


@pytest.fixture(scope="module")
def labels() -> pd.DataFrame:
    data = pd.read_csv(FIXTURES / "ppi_data.csv", keep_default_na=False)
    data["gold"] = pd.to_numeric(data["gold"].replace("", np.nan))
    judge = data.assign(judge="judge", value=data["judge"].astype(float))
    gold = data.dropna(subset=["gold"]).assign(judge="gold", value=lambda t: t["gold"])
    both = pd.concat([judge, gold], ignore_index=True)
    both = both.rename(columns={"dataset": "task", "item": "query"}).assign(metric="m")
    return both[["task", "query", "system", "metric", "judge", "value"]]


@pytest.fixture(scope="module")
def reference() -> pd.DataFrame:
    return pd.read_csv(FIXTURES / "ppi_reference.csv", keep_default_na=False)


@pytest.mark.parametrize("estimator", ["ppi++", "ppi", "classical", "judge"])
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_means_intervals_and_lambda_equal_ppi_py(labels, reference, estimator, alpha):
    single = labels[labels["task"] != "paired_diff"]
    paired = labels[labels["task"] == "paired_diff"]
    got = pd.concat(
        [
            metaeval.ppi(single, "gold", "judge", estimator=estimator, alpha=alpha),
            metaeval.ppi(
                paired, "gold", "judge", control="B", estimator=estimator, alpha=alpha
            ).rename(columns={"effect": "mean"}),
        ]
    ).set_index("task")
    ref = reference[(reference["method"] == estimator) & np.isclose(reference["alpha"], alpha)]
    assert len(ref) == 4
    for row in ref.itertuples():
        ours = got.loc[row.dataset]
        for col in ("estimate", "ci_low", "ci_high", "se"):
            mine = ours["mean" if col == "estimate" else col]
            assert mine == pytest.approx(float(getattr(row, col)), abs=1e-12), (row.dataset, col)
        assert ours["n_gold"] == int(row.n_gold) and ours["n_judge"] == int(row.n_judge)
        if estimator in ("ppi++", "ppi"):
            assert ours["lambda"] == pytest.approx(float(row._7), abs=1e-12)  # "lambda"


def test_the_paired_difference_is_an_effects_table_pool_pools(labels):
    paired = labels[labels["task"] == "paired_diff"]
    two = pd.concat([paired, paired.assign(task="again")])
    eff = metaeval.ppi(two, "gold", "judge", control="B")
    assert list(eff[["treatment", "control"]].iloc[0]) == ["A", "B"]
    np.testing.assert_allclose(eff["variance"], eff["se"] ** 2)
    pooled = metaeval.pool(eff, method="EE")
    assert pooled["k"].item() == 2
    assert pooled["effect"].item() == pytest.approx(eff["effect"].iloc[0])


def test_bad_input(labels):
    one = labels[labels["task"] == "binary_good"]
    with pytest.raises(SchemaError, match="gold judge 'human' has no label"):
        metaeval.ppi(one)
    with pytest.raises(SchemaError, match="judge='x'|judge 'x' has no label"):
        metaeval.ppi(one, "gold", "x")
    with pytest.raises(SchemaError, match="name it with judge="):
        metaeval.ppi(pd.concat([one, one[one["judge"] == "judge"].assign(judge="other")]), "gold")
    nogold = pd.concat([one, one[one["judge"] == "judge"].assign(task="bare")])
    with pytest.raises(SchemaError, match="labelled no item of task 'bare'"):
        metaeval.ppi(nogold, "gold", "judge")
    orphan = pd.concat(
        [
            one,
            pd.DataFrame(
                [
                    {
                        "task": "binary_good",
                        "query": "new",
                        "system": "A",
                        "metric": "m",
                        "judge": "gold",
                        "value": 1.0,
                    }
                ]
            ),
        ]
    )
    with pytest.raises(SchemaError, match="gold label but none from the judge"):
        metaeval.ppi(orphan, "gold", "judge")
    with pytest.raises(OptionError, match="estimator"):
        metaeval.ppi(one, "gold", "judge", estimator="dr")
    with pytest.raises(SchemaError, match="control 'Z' has no item"):
        metaeval.ppi(one, "gold", "judge", control="Z")
    with pytest.raises(SchemaError, match="'replicate' column"):
        metaeval.ppi(one.assign(replicate="r1"), "gold", "judge")


def _passages(rng, n_tasks, n_passages=30, per=10, icc=0.3, gold_share=0.1):
    """Two systems' right/wrong answers in passages (a passage effect per system: the
    systems' differences are clustered), a judge right 85% of the time that calls system
    A's wrong answers right more often (a bias), and a gold slice of 10% of the questions."""
    items = n_passages * per
    sd = np.sqrt(icc / (1 - icc) * np.pi**2 / 3)  # a latent ICC of 0.3 on the logit scale
    rows = []
    gold_q = rng.random((n_tasks, items)) < gold_share
    for system, skill, false_right in (("A", 0.4, 0.3), ("B", 0.0, 0.05)):
        effect = np.repeat(rng.normal(0, sd, (n_tasks, n_passages)), per, axis=1)
        truth = rng.random((n_tasks, items)) < 1 / (1 + np.exp(-(skill + effect)))
        says_right = np.where(
            truth, rng.random(truth.shape) < 0.85, rng.random(truth.shape) < false_right
        )
        for judge, value, keep in (("judge", says_right, None), ("human", truth, gold_q)):
            t, q = np.nonzero(np.ones_like(value) if keep is None else keep)
            rows.append(
                pd.DataFrame(
                    {
                        "task": t.astype(str),
                        "metric": "correct",
                        "system": system,
                        "query": q.astype(str),
                        "passage": q // per,
                        "judge": judge,
                        "value": value[t, q].astype(float),
                    }
                )
            )
    return pd.concat(rows, ignore_index=True)


@pytest.mark.slow
def test_clustered_intervals_cover_a_paired_difference_and_iid_ones_fall_short():
    rng = np.random.default_rng(3)
    # the true difference: the mean over many passages of the same design
    big = _passages(rng, 1, n_passages=100_000, gold_share=1.0)
    wide = big[big["judge"] == "human"].pivot(index="query", columns="system", values="value")
    true = (wide["A"] - wide["B"]).mean()
    reps = _passages(rng, 400)
    out = {}
    for name, options in {
        "clustered PPI++": {"cluster": "passage"},
        "i.i.d. PPI++": {},
        "classical (clustered)": {"cluster": "passage", "estimator": "classical"},
        "judge only": {"estimator": "judge"},
    }.items():
        res = metaeval.ppi(reps, "human", "judge", control="B", **options)
        cover = ((res["ci_low"] <= true) & (true <= res["ci_high"])).mean()
        out[name] = (cover, (res["ci_high"] - res["ci_low"]).mean())
    print(
        f"true difference {true:.4f}; coverage and mean width of 95% intervals over 400 "
        "tasks of 30 passages x 10 questions (10% gold):"
    )
    for name, (cover, width) in out.items():
        print(f"  {name:24s} {cover:.3f}  {width:.3f}")
    assert abs(out["clustered PPI++"][0] - 0.95) <= 0.03  # Monte-Carlo error ±0.011
    assert out["i.i.d. PPI++"][0] <= 0.90  # items in a passage are not independent
    assert out["clustered PPI++"][1] > out["i.i.d. PPI++"][1]
    assert out["clustered PPI++"][1] <= out["classical (clustered)"][1] * 1.02
    assert out["judge only"][0] <= 0.5  # the judge's bias for A, uncorrected


def _strata_labels(data: pd.DataFrame) -> pd.DataFrame:
    """The long table of ``strata_data.csv``: the judge on every item, gold on some."""
    base = data.rename(columns={"dataset": "task", "item": "query"}).assign(metric="m", system="A")
    judge = base.assign(judge="judge", value=base["judge"])
    gold = base.dropna(subset=["gold"]).assign(judge="gold", value=lambda t: t["gold"])
    cols = ["task", "query", "system", "metric", "stratum", "judge", "value"]
    return pd.concat([judge, gold], ignore_index=True)[cols]


@pytest.mark.parametrize("estimator", ["ppi++", "ppi", "classical"])
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_stratified_estimates_equal_ppi_py_per_stratum(estimator, alpha):
    """strata=: Σ W_h θ̂_h and Σ W_h² se_h² with every θ̂_h, se_h from ppi_py on the stratum
    alone (make_strata.py), λ as the script writes it out; one stratum is labelled
    throughout in the binary set."""
    data = pd.read_csv(FIXTURES / "strata_data.csv")
    ref = pd.read_csv(FIXTURES / "strata_reference.csv")
    ref = ref[(ref["method"] == estimator) & np.isclose(ref["alpha"], alpha)].set_index("dataset")
    got = metaeval.ppi(
        _strata_labels(data), "gold", "judge", estimator=estimator, strata="stratum", alpha=alpha
    ).set_index("task")
    assert sorted(got.index) == sorted(ref.index) == ["binary", "numeric"]
    for task in ref.index:
        for mine, theirs in (
            ("mean", "estimate"),
            ("se", "se"),
            ("ci_low", "ci_low"),
            ("ci_high", "ci_high"),
            ("lambda", "lambda"),
        ):
            assert got.loc[task, mine] == pytest.approx(ref.loc[task, theirs], abs=1e-12), (
                task,
                mine,
            )
    # unstratified, the oversampled strata pull the estimate: it differs
    plain = metaeval.ppi(_strata_labels(data), "gold", "judge", estimator=estimator, alpha=alpha)
    assert (plain.set_index("task")["mean"] - got["mean"]).abs().max() > 0.01


def test_one_stratum_is_the_unstratified_estimate(labels):
    one = labels[labels["task"] == "paired_diff"].assign(
        stratum="all", passage=lambda t: t["query"].str[:4]
    )
    for options in ({}, {"cluster": "passage"}):
        plain = metaeval.ppi(one, "gold", "judge", control="B", **options)
        strat = metaeval.ppi(one, "gold", "judge", control="B", strata="stratum", **options)
        cols = ["effect", "se", "ci_low", "ci_high", "lambda", "ess_gain", "df"]
        pd.testing.assert_frame_equal(plain[cols], strat[cols], rtol=1e-12, atol=1e-14)


def test_stratified_bad_input(labels):
    data = _strata_labels(pd.read_csv(FIXTURES / "strata_data.csv"))
    bare = data[~((data["stratum"] == "s2") & (data["judge"] == "gold"))]
    with pytest.raises(SchemaError, match="stratum 's2' of task 'binary'.*no gold label"):
        metaeval.ppi(bare, "gold", "judge", strata="stratum")
    with pytest.raises(SchemaError, match="strata column 'stratum' has missing values"):
        metaeval.ppi(
            data.assign(stratum=data["stratum"].where(data.index > 3)),
            "gold",
            "judge",
            strata="stratum",
        )
    mixed = data.assign(stratum=np.where(data["judge"] == "gold", "x", data["stratum"]))
    with pytest.raises(SchemaError, match="one value per query"):
        metaeval.ppi(mixed, "gold", "judge", strata="stratum")
    with pytest.raises(SchemaError, match="needs the column"):
        metaeval.ppi(data, "gold", "judge", strata="difficulty")


@pytest.mark.slow
def test_stratified_intervals_cover_where_the_plain_ones_are_biased():
    """Gold drawn at 30% / 10% / 3% in three strata whose judge errs 5% / 15% / 25% of the
    time: stratified PPI++ covers; PPI++ that ignores the strata is pulled toward the
    oversampled stratum's small error (its rectifier) and misses."""
    rng = np.random.default_rng(7)
    reps, rows = 400, []
    truth_mean = 0.0
    for s, (rate, size) in enumerate(((0.30, 300), (0.10, 600), (0.03, 900))):
        p = 0.3 + 0.2 * s
        truth_mean += p * size / 1800
        y = (rng.random((reps, size)) < p).astype(float)
        judge = np.where(rng.random((reps, size)) < 0.05 + 0.1 * s, 1 - y, y)
        gold = rng.random((reps, size)) < rate
        t, q = np.nonzero(np.ones((reps, size), dtype=bool))
        common = {"task": t.astype(str), "query": [f"s{s}_{i}" for i in q], "stratum": f"s{s}"}
        rows.append(pd.DataFrame({**common, "judge": "judge", "value": judge[t, q]}))
        g = gold[t, q]
        rows.append(
            pd.DataFrame(
                {k: np.asarray(v)[g] if not isinstance(v, str) else v for k, v in common.items()}
                | {"judge": "gold", "value": y[t, q][g]}
            )
        )
    table = pd.concat(rows, ignore_index=True).assign(system="A", metric="m")
    out = {}
    for name, options in {"stratified PPI++": {"strata": "stratum"}, "PPI++": {}}.items():
        res = metaeval.ppi(table, "gold", "judge", **options)
        cover = ((res["ci_low"] <= truth_mean) & (truth_mean <= res["ci_high"])).mean()
        out[name] = (cover, (res["mean"] - truth_mean).mean())
    print(f"true mean {truth_mean:.4f}; coverage and mean bias over {reps} tasks:")
    for name, (cover, bias) in out.items():
        print(f"  {name:18s} {cover:.3f}  {bias:+.4f}")
    assert abs(out["stratified PPI++"][0] - 0.95) <= 0.03
    assert abs(out["stratified PPI++"][1]) < 0.005
    assert out["PPI++"][0] <= 0.85

"""metaeval.agreement against the krippendorff package and Krippendorff's published
values, scikit-learn's Cohen's κ, statsmodels' Fleiss' κ, irrCAC's Gwet AC1 and the
Shrout–Fleiss ICCs (pingouin and the mean squares): the values are stored in
tests/fixtures/judges with the script that made them (make_agreement.py)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import DegenerateWarning, OptionError, SchemaError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "judges"


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    raw = pd.read_csv(FIXTURES / "agreement_data.csv", keep_default_na=False)
    return raw.rename(columns={"dataset": "task", "item": "query"}).assign(
        metric="label", system="answer"
    )


@pytest.fixture(scope="module")
def reference() -> pd.DataFrame:
    return pd.read_csv(FIXTURES / "agreement_reference.csv", keep_default_na=False)


def _ours(data, dataset, **options) -> float:
    table = data[data["task"] == dataset]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateWarning)
        res = metaeval.agreement(table, n_resamples=0, **options)
    return float(res.table["agreement"].item())


def test_krippendorffs_published_values(data):
    # Krippendorff (2011) 4 observers × 12 units with missing values, and the 3 × 15 data
    # of the krippendorff package: the values printed there
    published = {
        ("krippendorff_published", "nominal"): 0.743,
        ("krippendorff_published", "ordinal"): 0.815,
        ("krippendorff_published", "interval"): 0.849,
        ("krippendorff_published", "ratio"): 0.797,
        ("krippendorff_3x15", "nominal"): 0.691358,
        ("krippendorff_3x15", "interval"): 0.810845,
    }
    for (dataset, level), value in published.items():
        digits = len(str(value).split(".")[1])
        assert round(_ours(data, dataset, level=level), digits) == value, (dataset, level)


def test_alpha_equals_the_krippendorff_package_at_every_level(data, reference):
    rows = reference[reference["coefficient"] == "krippendorff_alpha"]
    assert len(rows) == 27
    for row in rows.itertuples():
        got = _ours(data, row.dataset, level=row.level)
        assert got == pytest.approx(float(row.value), abs=1e-10), (row.dataset, row.level)


def test_cohens_kappa_equals_scikit_learn_for_every_pair_and_weighting(data, reference):
    rows = reference[reference["coefficient"] == "cohen_kappa"]
    assert len(rows) == 51
    for row in rows.itertuples():
        weights = None if row.weights == "none" else row.weights
        got = _ours(
            data,
            row.dataset,
            coefficient="kappa",
            judges=[row.judge_a, row.judge_b],
            weights=weights,
        )
        assert got == pytest.approx(float(row.value), abs=1e-12), row


@pytest.mark.parametrize(
    ("coefficient", "name"),
    [("fleiss", "fleiss_kappa"), ("ac1", "gwet_ac1"), ("icc2", "icc2_1"), ("icc3", "icc3_1")],
)
def test_fleiss_ac1_and_the_iccs_equal_their_references(data, reference, coefficient, name):
    rows = reference[reference["coefficient"] == name]
    assert len(rows) >= 2
    for row in rows.itertuples():
        table = data
        if coefficient.startswith("icc") and row.dataset == "interval":
            # the reference is on the items every judge labelled, as ours is: the same
            # number, and a warning-free call on the full data says which units it used
            complete = data[data["task"] == "interval"].groupby("query")["judge"].transform("size")
            assert (complete < 4).any()
        got = _ours(table, row.dataset, coefficient=coefficient)
        assert got == pytest.approx(float(row.value), abs=1e-12), row
    if coefficient.startswith("icc"):  # pingouin's ICC(A,1) / ICC(C,1) agree too
        other = reference[reference["coefficient"] == f"{name}_pingouin"]
        for row in other.itertuples():
            got = _ours(data, row.dataset, coefficient=coefficient)
            assert got == pytest.approx(float(row.value), abs=1e-12), row


def test_pairs_are_the_coefficient_of_two_judges(data, reference):
    table = data[data["task"] == "complete4"]
    res = metaeval.agreement(table, coefficient="kappa", judges=["j0", "j1"], n_resamples=0)
    pairs = metaeval.agreement(table, coefficient="fleiss", n_resamples=0).pairs
    assert len(pairs) == 6 and set(pairs["judge_a"]) | set(pairs["judge_b"]) == {
        "j0",
        "j1",
        "j2",
        "j3",
    }
    kappa = reference.query("dataset == 'complete4' and coefficient == 'cohen_kappa'")
    assert float(res.table["agreement"].item()) == pytest.approx(
        float(
            kappa.query("judge_a == 'j0' and judge_b == 'j1' and weights == 'none'")["value"].item()
        ),
        abs=1e-12,
    )
    alpha_pairs = metaeval.agreement(table, n_resamples=0).pairs
    two = table[table["judge"].isin(["j1", "j3"])]
    alone = metaeval.agreement(two, n_resamples=0).table["agreement"].item()
    got = alpha_pairs.query("judge_a == 'j1' and judge_b == 'j3'")["agreement"].item()
    assert got == pytest.approx(alone, abs=1e-14)


def _clustered_labels(rng, n_tasks=4, n_passages=30, per=10, accuracy=0.85, icc=0.3):
    """Binary labels of 3 judges on passages of questions: the truth is clustered by
    passage (its logit shared by the passage's questions), each judge right with
    probability ``accuracy``."""
    rows = []
    for t in range(n_tasks):
        shift = rng.normal(0, np.sqrt(icc / (1 - icc)) * 1.8, n_passages)
        p = 1 / (1 + np.exp(-np.repeat(shift, per)))
        truth = rng.random(n_passages * per) < p
        for j in range(3):
            right = rng.random(len(truth)) < accuracy
            label = np.where(right, truth, ~truth).astype(float)
            rows.append(
                pd.DataFrame(
                    {
                        "task": f"t{t}",
                        "metric": "correct",
                        "system": "s",
                        "judge": f"j{j}",
                        "query": [f"q{i}" for i in range(len(truth))],
                        "passage": np.repeat(np.arange(n_passages), per),
                        "value": label,
                    }
                )
            )
    return pd.concat(rows, ignore_index=True)


def test_bootstrap_interval_over_units_and_clusters(rng):
    table = _clustered_labels(rng)
    plain = metaeval.agreement(table, n_resamples=400, seed=3)
    again = metaeval.agreement(table, n_resamples=400, seed=3)
    pd.testing.assert_frame_equal(plain.table, again.table)
    t = plain.table
    assert (t["ci_low"] < t["agreement"]).all() and (t["agreement"] < t["ci_high"]).all()
    assert (t["se"] > 0).all() and (t["n_units"] == 300).all()
    clustered = metaeval.agreement(table, cluster="passage", n_resamples=400, seed=3).table
    np.testing.assert_allclose(clustered["agreement"], t["agreement"])  # same estimate
    assert clustered.attrs["cluster"] == "passage"


@pytest.mark.slow
def test_bootstrap_se_matches_the_spread_over_simulated_tables():
    # the bootstrap se of α estimates the sampling sd of α over repeated tables of the
    # same design (200 tables of 120 items, 3 judges)
    rng = np.random.default_rng(7)
    estimates, ses = [], []
    for _ in range(200):
        truth = rng.integers(0, 3, 120)
        lab = np.where(rng.random((120, 3)) < 0.7, truth[:, None], rng.integers(0, 3, (120, 3)))
        table = pd.DataFrame(
            {
                "task": "t",
                "metric": "m",
                "system": "s",
                "query": np.repeat(np.arange(120), 3).astype(str),
                "judge": np.tile(["a", "b", "c"], 120),
                "value": lab.ravel().astype(float),
            }
        )
        res = metaeval.agreement(table, n_resamples=200, seed=int(rng.integers(1 << 30))).table
        estimates.append(res["agreement"].item())
        ses.append(res["se"].item())
    sd = np.std(estimates, ddof=1)
    assert np.mean(ses) == pytest.approx(sd, rel=0.15)


def test_per_system_gives_a_row_per_system(data):
    table = data[data["task"] == "binary"]
    doubled = pd.concat([table, table.assign(system="other")])
    res = metaeval.agreement(doubled, per_system=True, n_resamples=0).table
    assert list(res["system"]) == ["answer", "other"]
    np.testing.assert_allclose(res["agreement"], res["agreement"].iloc[0])


def test_pool_over_tasks_on_fishers_z(rng):
    table = _clustered_labels(rng)
    res = metaeval.agreement(table, n_resamples=300, seed=2)
    pooled = res.pool(method="REML")
    assert len(pooled) == 1 and pooled["k"].item() == 4
    t = res.table
    z, v = np.arctanh(t["agreement"]), (t["se"] / (1 - t["agreement"] ** 2)) ** 2
    direct = metaeval.pool(
        t[["task", "metric", "coefficient"]].assign(effect=z, variance=v),
        groups=["metric", "coefficient"],
        method="REML",
    )
    assert pooled["effect"].item() == pytest.approx(direct["effect"].item(), rel=1e-12)
    assert pooled["agreement"].item() == pytest.approx(np.tanh(direct["effect"].item()))
    assert (
        pooled["agreement_low"].item()
        < pooled["agreement"].item()
        < pooled["agreement_high"].item()
    )


def test_the_heatmap_shows_every_pair(data, tmp_path):
    res = metaeval.agreement(data[data["task"] == "nominal5"], n_resamples=0)
    fig = res.plot()
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == 12  # 4 judges: 6 pairs, both halves
    expected = res.pairs.query("judge_a == 'j0' and judge_b == 'j1'")["agreement"].item()
    assert f"{expected:.2f}" in texts
    fig.savefig(tmp_path / "heatmap.png")


# ------------------------------------------------------------------ bad input
def _small():
    return pd.DataFrame(
        {
            "task": "t",
            "metric": "m",
            "system": "s",
            "query": ["q0", "q1", "q0", "q1"],
            "judge": ["a", "a", "b", "b"],
            "value": [1.0, 0.0, 1.0, 1.0],
        }
    )


def test_bad_input_gets_typed_errors_naming_what_to_fix():
    with pytest.raises(SchemaError, match="judge"):
        metaeval.agreement(_small().drop(columns="judge"))
    with pytest.raises(SchemaError, match="missing on 1 row"):
        metaeval.agreement(_small().assign(judge=["a", None, "b", "b"]))
    with pytest.raises(SchemaError, match="2 judges or more.*task 't'"):
        metaeval.agreement(_small().assign(judge="a", query=["q0", "q1", "q2", "q3"]))
    with pytest.raises(SchemaError, match="judges \\['zz'\\]"):
        metaeval.agreement(_small(), judges=["a", "zz"])
    with pytest.raises(SchemaError, match="numeric labels"):
        metaeval.agreement(_small().assign(value=["x", "y", "x", "x"]))
    with pytest.raises(SchemaError, match="NaN"):
        metaeval.agreement(_small().assign(value=[1.0, np.nan, 1.0, 0.0]))
    with pytest.raises(SchemaError, match="repeat a judge's label"):
        metaeval.agreement(pd.concat([_small(), _small().iloc[:1]]))
    with pytest.raises(SchemaError, match="ratio.*≥ 0"):
        metaeval.agreement(_small().assign(value=[-1.0, 0.0, 1.0, 1.0]), level="ratio")
    with pytest.raises(OptionError, match="two judges, but 3"):
        three = pd.concat([_small(), _small().iloc[:2].assign(judge="c")])
        metaeval.agreement(three, coefficient="kappa")
    with pytest.raises(OptionError, match="weights"):
        metaeval.agreement(_small(), weights="linear")
    with pytest.raises(OptionError, match="level"):
        metaeval.agreement(_small(), level="likert")
    with pytest.raises(OptionError, match="distinct labels"):
        rng = np.random.default_rng(0)
        scores = pd.DataFrame(
            {
                "task": "t",
                "metric": "m",
                "system": "s",
                "query": np.repeat(np.arange(200), 2).astype(str),
                "judge": np.tile(["a", "b"], 200),
                "value": rng.normal(size=400),
            }
        )
        metaeval.agreement(scores, coefficient="fleiss")


def test_labels_that_never_vary_are_nan_with_a_warning_naming_the_group():
    constant = _small().assign(value=1.0)
    with pytest.warns(DegenerateWarning, match="never vary") as caught:
        res = metaeval.agreement(constant, n_resamples=10, seed=0)
    assert np.isnan(res.table["agreement"].item())
    assert caught[0].message.groups.to_dict("records") == [{"task": "t", "metric": "m"}]


def test_the_input_is_not_changed():
    table = _small()
    before = table.copy()
    metaeval.agreement(table, n_resamples=5, seed=1)
    pd.testing.assert_frame_equal(table, before)


def _murky_passages(rng, n_tasks, n_passages, per=10):
    """Three judges' right/wrong labels of answers in passages of ``per`` questions; on a
    third of the passages every judge errs more (errors shared within a passage)."""
    ease = np.repeat(rng.normal(0, 1.2, (n_tasks, n_passages)), per, axis=1)
    murky = np.repeat(rng.random((n_tasks, n_passages)) < 1 / 3, per, axis=1) * 0.3
    truth = rng.random(ease.shape) < 1 / (1 + np.exp(-ease))
    labels = [
        np.where(rng.random(ease.shape) < accuracy - murky, truth, rng.random(ease.shape) < 0.5)
        for accuracy in (0.9, 0.85, 0.75)
    ]
    units = n_passages * per
    return pd.DataFrame(
        {
            "task": np.repeat(np.arange(n_tasks).astype(str), units * 3),
            "metric": "m",
            "system": "s",
            "query": np.tile(np.repeat(np.arange(units), 3), n_tasks).astype(str),
            "judge": np.tile(["a", "b", "c"], n_tasks * units),
            "passage": np.tile(np.repeat(np.arange(units) // per, 3), n_tasks),
            "value": np.stack(labels, -1).astype(float).ravel(),
        }
    )


@pytest.mark.slow
def test_cluster_intervals_cover_where_item_intervals_fall_short():
    # 400 replications (as 400 tasks of one call) of 30 passages × 10 questions whose judge
    # errors are shared within a passage; the true α from one table of 200,000 answers
    rng = np.random.default_rng(11)
    true = metaeval.agreement(_murky_passages(rng, 1, 20_000), n_resamples=0).table
    true = true["agreement"].item()
    reps = _murky_passages(rng, 400, 30)
    units = metaeval.agreement(reps, n_resamples=300, seed=1).table
    clusters = metaeval.agreement(reps, cluster="passage", n_resamples=300, seed=1).table
    sd = units["agreement"].std()
    cover = {
        name: ((t["ci_low"] <= true) & (true <= t["ci_high"])).mean()
        for name, t in (("units", units), ("clusters", clusters))
    }
    print(
        f"true alpha {true:.4f}, sd over replications {sd:.4f}; coverage of 95% intervals:"
        f" units {cover['units']:.3f} (mean se {units['se'].mean():.4f}), passages "
        f"{cover['clusters']:.3f} (mean se {clusters['se'].mean():.4f})"
    )
    # Monte-Carlo error ±0.011; the percentile bootstrap over 30 clusters runs a little short
    assert cover["clusters"] >= 0.90
    assert cover["units"] <= 0.88  # resampling answers one by one ignores the shared errors
    assert clusters["se"].mean() == pytest.approx(sd, rel=0.1)

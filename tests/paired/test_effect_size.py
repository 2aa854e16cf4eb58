"""Effects: agreement with a per-pair reference loop, invariants and degenerate groups."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import reference
from _helpers import make_scores
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

import metaeval
from metaeval import DegenerateWarning, OptionError, PairingError, PairingWarning

EFFECTS = list(metaeval.EFFECT_TYPES)
COLS = [
    "n",
    "mean_treatment",
    "mean_control",
    "effect",
    "variance",
    "se",
    "ci_low",
    "ci_high",
    "p_value",
]
KEYS = ["metric", "treatment", "control", "task"]


@pytest.mark.parametrize("effect", EFFECTS)
def test_vectorized_equals_reference_loop(rng, effect):
    scores = make_scores(rng, drop=0.05)
    with pytest.warns(PairingWarning):
        ours = metaeval.effects(scores, control="ctrl", effect=effect)
    ref = reference.effects_loop(scores, "ctrl", effect)
    assert ours[KEYS].reset_index(drop=True).equals(ref[KEYS])
    assert (ours["effect_type"] == effect).all()
    for col in COLS:
        np.testing.assert_allclose(ours[col], ref[col], rtol=1e-9, err_msg=col)


def test_all_ordered_pairs(rng):
    scores = make_scores(rng, systems=("a", "b", "c"))
    ours = metaeval.effects(scores, control=None, effect="smcc")
    assert len(ours) == 2 * 4 * 3 * 2  # metrics x tasks x ordered pairs
    for control in ["a", "b", "c"]:
        ref = reference.effects_loop(scores, control, "smcc")
        mine = ours[ours["control"] == control].reset_index(drop=True)
        assert mine[KEYS].equals(ref[KEYS])
        np.testing.assert_allclose(mine["effect"], ref["effect"], rtol=1e-9)
        np.testing.assert_allclose(mine["variance"], ref["variance"], rtol=1e-9)


def test_alpha_and_columns(scores):
    eff = scores.meta.effects(control="ctrl", effect="md", alpha=0.1)
    assert list(eff.columns) == [
        "metric",
        "treatment",
        "control",
        "task",
        "effect_type",
        "effect",
        "ci_low",
        "ci_high",
        "p_value",
        "n",
        "mean_treatment",
        "mean_control",
        "variance",
        "se",
        "z",
    ]
    assert isinstance(eff.index, pd.RangeIndex)
    crit = stats.norm.ppf(0.95)
    np.testing.assert_allclose(
        eff["ci_high"] - eff["effect"], crit * np.sqrt(eff["variance"]), rtol=1e-12
    )


def test_tiny_p_values_stay_positive():
    n = 400
    q = [f"q{i}" for i in range(n)]
    rng = np.random.default_rng(1)
    base = rng.normal(0.5, 0.1, n)
    df = pd.DataFrame(
        {
            "task": "t",
            "query": q * 2,
            "system": ["c"] * n + ["t"] * n,
            "metric": "m",
            "value": np.r_[base, base + 0.1 + rng.normal(0, 0.07, n)],
        }
    )
    eff = df.meta.effects(control="c", effect="md")
    z = eff["z"].iloc[0]
    assert 20 < z < 37  # 1 - cdf(z) would be exactly 0 here
    assert 1 - stats.norm.cdf(z) == 0
    assert 0 < eff["p_value"].iloc[0] == pytest.approx(2 * stats.norm.sf(z), rel=1e-12)


def test_subset_of_treatments_and_several_controls(scores):
    eff = scores.meta.effects(control=["ctrl", "a"], treatment="b", effect="md")
    assert set(zip(eff["treatment"], eff["control"], strict=True)) == {("b", "ctrl"), ("b", "a")}
    assert len(eff) == 2 * 2 * 4


def test_options_are_checked(scores):
    with pytest.raises(
        OptionError,
        match=r"`effect` must be one of \['md', 'smd', 'smcrp', 'smcc', 'rom', 'corr'\], but 'hedges' was passed",
    ):
        scores.meta.effects(control="ctrl", effect="hedges")
    with pytest.raises(OptionError, match="alpha"):
        scores.meta.effects(control="ctrl", alpha=1.5)
    upper = scores.meta.effects(control="ctrl", effect="SMD")  # Ranger's spelling
    assert (upper["effect_type"] == "smd").all()


# ---------------------------------------------------------------- degenerate groups
def _pair(x, y, task="t") -> pd.DataFrame:
    n = len(x)
    return pd.DataFrame(
        {
            "task": task,
            "query": [f"q{i}" for i in range(n)] * 2,
            "system": ["c"] * n + ["t"] * n,
            "metric": "m",
            "value": np.r_[y, x].astype(float),
        }
    )


@pytest.mark.parametrize(
    ("effect", "x", "y", "reason"),
    [
        ("smd", [1.0], [0.0], "fewer than 2 paired queries"),
        (
            "md",
            [1, 2, 3],
            [0, 1, 2],
            "zero variance of the differences (effect kept, variance NaN)",
        ),
        ("smcc", [1, 2, 3], [0, 1, 2], "zero variance of the differences"),
        ("smd", [1, 2, 4], [1, 1, 1], "a system has zero variance (r undefined)"),
        ("corr", [1, 2, 4], [1, 1, 1], "a system has zero variance (r undefined)"),
        ("smd", [2, 4, 6, 9], [1, 2, 3, 4.5], "r = ±1"),
        ("corr", [1, 2, 4], [0, 3, 1], "fewer than 4 paired queries"),
        ("rom", [1, 2, 4], [-1, -2, 0], "a mean is not positive"),
        ("rom", [2, 4, 6], [1, 2, 3], "zero sampling variance"),
    ],
)
def test_degenerate_groups_warn_and_give_nan(effect, x, y, reason):
    with pytest.warns(DegenerateWarning, match=r"gives NaN for 1 group\(s\) because of ") as record:
        eff = _pair(x, y).meta.effects(control="c", effect=effect)
    msg = str(record[0].message)
    assert reason in msg
    assert "metric='m', treatment='t', control='c', task='t'" in msg
    assert np.isnan(eff["variance"].iloc[0]) and np.isnan(eff["p_value"].iloc[0])
    if effect == "md":
        assert eff["effect"].iloc[0] == 1.0
    else:
        assert np.isnan(eff["effect"].iloc[0])


def test_no_common_queries_drops_row_with_warning():
    df = _pair([1, 2, 3], [1, 3, 2])
    other = _pair([1, 2, 3], [1, 3, 2]).assign(task="u")
    df.loc[df["system"] == "t", "query"] = ["x1", "x2", "x3"]
    with pytest.warns(PairingWarning, match="paired_queries=0, unpaired_queries=6"):
        eff = pd.concat([df, other], ignore_index=True).meta.effects(control="c", effect="md")
    assert eff["task"].tolist() == ["u"]


def test_no_pair_sharing_a_query_is_an_error_not_an_empty_table():
    df = _pair([1, 2, 3], [1, 3, 2])
    df.loc[df["system"] == "t", "query"] = ["x1", "x2", "x3"]
    with pytest.warns(PairingWarning), pytest.raises(PairingError, match="shares a query"):
        df.meta.effects(control="c", effect="md")
    with pytest.raises(PairingError, match="same system"):
        _pair([1, 2, 3], [1, 3, 2]).meta.effects(control="c", treatment="c")
    with pytest.raises(PairingError, match="same system"):
        _pair([1, 2, 3], [1, 3, 2]).meta.compare(control="c", treatment="c")


# ---------------------------------------------------------------- invariants
values = st.floats(min_value=0.01, max_value=1.0, allow_nan=False)


@st.composite
def score_tables(draw):
    tasks = draw(st.integers(1, 3))
    frames = []
    for t in range(tasks):
        n = draw(st.integers(4, 12))
        for system in ("c", "t", "u"):
            vals = draw(st.lists(values, min_size=n, max_size=n))
            frames.append(
                pd.DataFrame(
                    {
                        "task": f"t{t}",
                        "query": [f"q{i}" for i in range(n)],
                        "system": system,
                        "metric": "m",
                        "value": vals,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateWarning)
        return fn(*args, **kwargs)


@settings(max_examples=40, deadline=None)
@given(score_tables())
def test_copy_of_itself(df):
    copy = df[df["system"] == "c"].assign(system="copy")
    both = pd.concat([df, copy], ignore_index=True)
    with pytest.warns(DegenerateWarning, match="effect kept, variance NaN"):
        md = both.meta.effects(control="c", treatment="copy", effect="md")
    np.testing.assert_allclose(md["effect"], 0.0, atol=1e-12)
    assert md["variance"].isna().all()
    for effect in ["smd", "smcc", "smcrp"]:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            eff = both.meta.effects(control="c", treatment="copy", effect=effect)
        assert any("zero variance of the differences" in str(w.message) for w in record)
        assert eff["effect"].isna().all()


# Results computed in another summation order agree to rounding, which Var(x - y) =
# Var x + Var y - 2 Cov(x, y) amplifies by (Var x + Var y)/Var(x - y); hypothesis finds
# nearly identical systems (r ~ 0.99999) where that leaves ~1e-10. Hence rtol=1e-8.
TOL = {"rtol": 1e-8, "atol": 1e-14}


@settings(max_examples=40, deadline=None)
@given(score_tables(), st.sampled_from(["md", "smd", "smcc", "smcrp", "rom"]))
def test_swapping_flips_sign(df, effect):
    ab = _quiet(metaeval.effects, df, control="c", treatment="t", effect=effect)
    ba = _quiet(metaeval.effects, df, control="t", treatment="c", effect=effect)
    assume(ab["effect"].notna().any())  # compare where there is something to compare
    np.testing.assert_allclose(ab["effect"], -ba["effect"], **TOL)
    np.testing.assert_allclose(ab["variance"], ba["variance"], **TOL)


@settings(max_examples=30, deadline=None)
@given(score_tables(), st.sampled_from(EFFECTS), st.randoms(use_true_random=False))
def test_shuffling_rows_changes_nothing(df, effect, random):
    shuffled = df.sample(frac=1.0, random_state=random.randint(0, 2**31)).reset_index(drop=True)
    a = _quiet(metaeval.effects, df, control="c", effect=effect)
    b = _quiet(metaeval.effects, shuffled, control="c", effect=effect)
    assert a[KEYS].equals(b[KEYS])
    for col in COLS:
        np.testing.assert_allclose(a[col], b[col], **TOL)


@pytest.mark.parametrize("effect", ["md", "smd", "smcc", "smcrp", "rom", "corr"])
def test_large_offsets_keep_precision(rng, effect):
    # scores ~1e6 with SD ~0.1: raw sums would lose ~14 digits, shifted sums none. The
    # reference itself is good to ~1e-8 here (rom: log of a ratio 1 + 2e-8 of two rounded means)
    scores = make_scores(rng, metrics=("m",))
    scores["value"] += 1e6
    ours = metaeval.effects(scores, control="ctrl", effect=effect)
    ref = reference.effects_loop(scores, "ctrl", effect)
    np.testing.assert_allclose(ours["effect"], ref["effect"], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(ours["variance"], ref["variance"], rtol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_one_task_alone_is_bit_identical_to_it_in_the_whole_table(seed):
    """effects() of df[df.task == t] equals, with np.array_equal, task t inside the whole
    table, with ``system`` a categorical holding unused categories (a system of other
    tasks is an unused category of the subset), unpaired queries and tasks of different
    sizes (issue 25, 17e: the sums were matrix products whose order of additions followed
    the number of systems, and differed in the last bits)."""
    rng = np.random.default_rng(seed)
    systems = ["a", "b", "c", "d"]
    rows = []
    for t in range(4):
        n_queries = int(rng.integers(3, 700))
        drop = rng.uniform(0, 0.3)
        other = rng.choice(systems[1:])
        for system in [s for s in systems if s in ("a", other) or rng.random() < 0.5]:
            keep = rng.random(n_queries) >= drop  # unpaired queries
            for metric in ("m1", "m2"):
                rows.append(
                    pd.DataFrame(
                        {
                            "task": f"t{t}",
                            "query": [f"q{i}" for i in np.flatnonzero(keep)],
                            "system": system,
                            "metric": metric,
                            "value": rng.normal(0.5, 0.2, keep.sum()) * (1 + t),
                        }
                    )
                )
    scores = pd.concat(rows, ignore_index=True)
    scores["system"] = pd.Categorical(scores["system"], categories=[*systems, "unused"])
    for effect in ("md", "smcrp"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", metaeval.MetaEvalWarning)
            whole = metaeval.effects(scores, "a", effect=effect)
            for task in scores["task"].unique():
                part = metaeval.effects(scores[scores["task"] == task], "a", effect=effect)
                inside = whole[whole["task"] == task].reset_index(drop=True)
                assert len(part) == len(inside) > 0
                for col in ("effect", "variance", "z", "p_value"):
                    a, b = inside[col].to_numpy(), part[col].to_numpy()
                    assert np.array_equal(a, b, equal_nan=True), (effect, task, col, a - b)

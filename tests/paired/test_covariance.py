"""effect_covariance: the diagonal, md against direct computation, and a simulation."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import PairingError
from metaeval.paired import EFFECT_TYPES

N_TASKS, N_QUERIES = 2000, 60
METRICS = ["m1", "m2", "m3"]


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metaeval.MetaEvalWarning)
        return func(*args, **kwargs)


@pytest.mark.parametrize("effect", EFFECT_TYPES)
def test_diagonal_is_the_effects_variance(effect):
    scores = metaeval.load_example()
    cov = _quiet(metaeval.effect_covariance, scores, "logistic_regression", effect=effect)
    eff = _quiet(metaeval.effects, scores, "logistic_regression", effect=effect)
    diag = cov[cov["metric"] == cov["metric_b"]]
    both = diag.merge(eff, on=["treatment", "control", "task", "metric"], validate="1:1")
    assert len(both) == len(eff)  # every effect has its diagonal entry
    np.testing.assert_array_equal(both["cov"], both["variance"])
    assert (both["n_x"] == both["n_y"]).all()  # the effect's paired queries
    off = cov[cov["metric"] != cov["metric_b"]]
    assert len(off) == len(eff)  # two metrics: one ordered pair each way
    assert off["corr"].between(-1, 1).all() and (off["corr"].abs() > 0.05).any()
    # symmetric: (a, b) equals (b, a)
    flipped = off.rename(columns={"metric": "metric_b", "metric_b": "metric"})
    merged = off.merge(flipped, on=["treatment", "control", "task", "metric", "metric_b"])
    np.testing.assert_allclose(merged["cov_x"], merged["cov_y"], rtol=1e-12)


def test_md_equals_the_covariance_of_mean_differences_with_different_query_sets():
    """Cov(d̄_a, d̄_b) = n_ab·c(d_a, d_b)/(n_a n_b), by pandas on the raw scores."""
    rng = np.random.default_rng(3)
    rows = []
    for task, n in (("t1", 40), ("t2", 25)):
        base = rng.normal(size=(n, 2))
        for system, shift in (("a", 0.0), ("b", 0.3)):
            for j, metric in enumerate(["m1", "m2"]):
                noise = rng.normal(0, 0.5, n)
                rows.append(
                    pd.DataFrame(
                        {
                            "task": task,
                            "query": [f"q{i}" for i in range(n)],
                            "system": system,
                            "metric": metric,
                            "value": base[:, j] + shift + noise,
                        }
                    )
                )
    scores = pd.concat(rows, ignore_index=True)
    # m2 lacks the first 7 queries of t1 for both systems: n_a = 40, n_b = 33, n_ab = 33
    drop = (
        (scores["task"] == "t1")
        & (scores["metric"] == "m2")
        & scores["query"].isin([f"q{i}" for i in range(7)])
    )
    scores = scores.loc[~drop]
    cov = metaeval.effect_covariance(scores, "a", effect="md")
    wide = scores.pivot_table(index=["task", "query"], columns=["metric", "system"], values="value")
    for task in ("t1", "t2"):
        w = wide.loc[task]
        d1 = w[("m1", "b")] - w[("m1", "a")]
        d2 = w[("m2", "b")] - w[("m2", "a")]
        common = d1.notna() & d2.notna()
        n1, n2, n12 = d1.notna().sum(), d2.notna().sum(), common.sum()
        expected = n12 * np.cov(d1[common], d2[common])[0, 1] / (n1 * n2)
        got = cov.query("task == @task and metric == 'm1' and metric_b == 'm2'")
        assert got["n"].item() == n12
        assert got["cov"].item() == pytest.approx(expected, rel=1e-12)
    assert cov.query("task == 't1' and metric == 'm1' and metric_b == 'm2'")["n"].item() == 33


def _simulate(rng) -> pd.DataFrame:
    """2,000 tasks alike: 60 queries, systems a and b, three correlated metrics.

    Per query a difficulty shared by both systems (metrics correlated 0.7) plus each
    system's own noise (metrics correlated 0.5); means around 5 so that ``rom`` is
    defined. Every task draws from the same distribution, so the estimates of the
    tasks are 2,000 independent draws of one study's estimates.
    """
    k = len(METRICS)
    corr_q = np.full((k, k), 0.7) + 0.3 * np.eye(k)
    corr_e = np.full((k, k), 0.5) + 0.5 * np.eye(k)
    sd_q, sd_e = np.array([1.0, 0.8, 1.2]), np.array([0.7, 0.9, 0.6])
    shape = (N_TASKS, N_QUERIES)
    q = rng.multivariate_normal(np.zeros(k), corr_q * np.outer(sd_q, sd_q), size=shape)
    e_a = rng.multivariate_normal(np.zeros(k), corr_e * np.outer(sd_e, sd_e), size=shape)
    e_b = rng.multivariate_normal(np.zeros(k), corr_e * np.outer(sd_e, sd_e), size=shape)
    a = 5.0 + q + e_a
    b = 5.0 + np.array([0.3, 0.2, 0.4]) + q + e_b
    task = np.repeat([f"t{i:04d}" for i in range(N_TASKS)], N_QUERIES)
    query = np.tile([f"q{i:02d}" for i in range(N_QUERIES)], N_TASKS)
    frames = [
        pd.DataFrame(
            {
                "task": task,
                "query": query,
                "system": name,
                "metric": m,
                "value": values[..., j].ravel(),
            }
        )
        for name, values in (("a", a), ("b", b))
        for j, m in enumerate(METRICS)
    ]
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def simulated() -> pd.DataFrame:
    return _simulate(np.random.default_rng(20261124))


@pytest.mark.parametrize("effect", EFFECT_TYPES)
def test_covariance_matches_the_spread_of_2000_simulated_estimates(simulated, effect):
    """The mean computed covariance of two metrics' effects against the empirical
    covariance of the estimates over 2,000 independent tasks, within 4 Monte-Carlo
    standard errors; the same for the variances."""
    eff = metaeval.effects(simulated, "a", effect=effect)
    cov = metaeval.effect_covariance(simulated, "a", effect=effect)
    est = eff.pivot(index="task", columns="metric", values="effect")
    mean_cov = cov.groupby(["metric", "metric_b"])["cov"].mean()
    empirical = est.cov()
    lines = []
    for i, ma in enumerate(METRICS):
        for mb in METRICS[i:]:
            sa, sb = empirical.loc[ma, ma], empirical.loc[mb, mb]
            s_ab = empirical.loc[ma, mb]
            mc_se = np.sqrt((sa * sb + s_ab**2) / (N_TASKS - 1))  # SE of a sample covariance
            got = mean_cov.loc[(ma, mb)]
            lines.append(
                f"{effect} {ma}-{mb}: computed {got:.6f}  empirical {s_ab:.6f}  "
                f"(MC SE {mc_se:.6f}, z = {(got - s_ab) / mc_se:+.2f})"
            )
            assert abs(got - s_ab) < 4 * mc_se, lines[-1]
    print("\n" + "\n".join(lines))


def test_one_metric_gives_the_diagonal_only():
    scores = metaeval.load_example().query("metric == 'accuracy'")
    cov = metaeval.effect_covariance(scores, "logistic_regression", treatment="knn")
    assert (cov["metric"] == cov["metric_b"]).all() and (cov["corr"] == 1).all()


def test_errors_and_input_untouched():
    scores = metaeval.load_example()
    before = scores.copy()
    with pytest.raises(PairingError, match="not in the scores table"):
        metaeval.effect_covariance(scores, "nope")
    with pytest.raises(metaeval.OptionError, match="effect"):
        metaeval.effect_covariance(scores, "knn", effect="cohen")
    metaeval.effect_covariance(scores, "knn")
    pd.testing.assert_frame_equal(scores, before)


def test_covariance_is_nan_where_an_effect_variance_is_nan():
    """An md effect with zero variance of the differences has a NaN variance (effects()
    warns); its covariances with the other metrics are NaN too, never 0 (issue 25, 17c)."""
    rng = np.random.default_rng(5)
    n = 12
    base = rng.integers(0, 100, size=(n, 2)).astype(float)
    rows = []
    for system, m1, m2 in (
        ("a", base[:, 0], base[:, 1]),
        ("b", base[:, 0] + 1.0, base[:, 1] + rng.normal(0, 1, n)),
    ):
        for metric, values in (("m1", m1), ("m2", m2)):
            rows.append(
                pd.DataFrame(
                    {
                        "task": "t",
                        "query": [f"q{i}" for i in range(n)],
                        "system": system,
                        "metric": metric,
                        "value": values,
                    }
                )
            )
    scores = pd.concat(rows, ignore_index=True)
    with pytest.warns(metaeval.DegenerateWarning, match="zero variance of the differences"):
        cov = metaeval.effect_covariance(scores, "a", effect="md")
    got = cov.set_index(["metric", "metric_b"])
    assert np.isnan(got.loc[("m1", "m1"), "cov"])  # the effect's variance
    assert np.isnan(got.loc[("m1", "m2"), "cov"]) and np.isnan(got.loc[("m2", "m1"), "cov"])
    assert np.isnan(got.loc[("m1", "m2"), "corr"])
    assert got.loc[("m2", "m2"), "cov"] > 0


# ------------------------------------- near-identical systems (issue 39, item 26)
def _exact_corr(x: np.ndarray, y: np.ndarray, effect: str) -> float:
    """corr of the effects of metrics 0 and 1 in exact arithmetic (Decimal at 80 digits,
    every float converted exactly): the module docstring's delta method written out in
    the treatment's and control's own moments (x̄, ȳ, s_xx, s_yy, s_xy) — the form whose
    cancellation the code avoids — with Isserlis' covariances of the second moments."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 80
        n = x.shape[1]
        xs = [[Decimal(float(v)) for v in row] for row in x]
        ys = [[Decimal(float(v)) for v in row] for row in y]
        var = {("x", m): xs[m] for m in (0, 1)} | {("y", m): ys[m] for m in (0, 1)}
        mean = {k: sum(v) / n for k, v in var.items()}

        def c(u, w):
            return sum(
                (a - mean[u]) * (b - mean[w]) for a, b in zip(var[u], var[w], strict=True)
            ) / (n - 1)

        def grad(m):
            mx, my = mean[("x", m)], mean[("y", m)]
            sxx, syy, sxy = c(("x", m), ("x", m)), c(("y", m), ("y", m)), c(("x", m), ("y", m))
            diff, zero = mx - my, Decimal(0)
            if effect == "md":
                return [Decimal(1), Decimal(-1), zero, zero, zero]
            if effect in ("smcc", "smd"):
                sd = (sxx + syy - 2 * sxy).sqrt()
                k = diff / (2 * sd**3)
                return [1 / sd, -1 / sd, -k, -k, 2 * k]
            if effect == "smcrp":
                sp = ((sxx + syy) / 2).sqrt()
                k = diff / (4 * sp**3)
                return [1 / sp, -1 / sp, -k, -k, zero]
            if effect == "rom":
                return [1 / mx, -1 / my, zero, zero, zero]
            r = sxy / (sxx * syy).sqrt()
            f = 1 / (1 - r * r)
            return [zero, zero, -f * r / (2 * sxx), -f * r / (2 * syy), f / (sxx * syy).sqrt()]

        def sigma(a, b):
            ga, gb = grad(a), grad(b)
            means_a, means_b = [("x", a), ("y", a)], [("x", b), ("y", b)]
            out = sum(ga[i] * gb[j] * c(means_a[i], means_b[j]) for i in (0, 1) for j in (0, 1))
            mom_a = [(("x", a), ("x", a)), (("y", a), ("y", a)), (("x", a), ("y", a))]
            mom_b = [(("x", b), ("x", b)), (("y", b), ("y", b)), (("x", b), ("y", b))]
            for i, (u, v) in enumerate(mom_a):
                for j, (w, z) in enumerate(mom_b):
                    out += ga[2 + i] * gb[2 + j] * (c(u, w) * c(v, z) + c(u, z) * c(v, w))
            return out

        return float(sigma(0, 1) / (sigma(0, 0) * sigma(1, 1)).sqrt())


def _near_identical(
    seed: int, eps: float, n: int = 20, k: float = 1.0
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Two systems whose scores on two metrics differ by eps·noise (a fine-tune that
    barely moved): control x, treatment y = k·x + eps·z (k ≠ 1: proportional scores,
    r → 1 without the differences being small)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.2, 1, (2, n))
    y = k * x + eps * rng.normal(size=(2, n))
    frames = [
        pd.DataFrame(
            {"task": "t", "query": np.arange(n), "system": s, "metric": f"m{m}", "value": v[m]}
        )
        for s, v in (("c", x), ("s", y))
        for m in (0, 1)
    ]
    return pd.concat(frames, ignore_index=True), y, x  # (scores, treatment, control)


@pytest.mark.parametrize("effect", ["md", "smcc", "smd", "corr", "smcrp", "rom"])
@pytest.mark.parametrize(("eps", "k"), [(1e-5, 1.0), (1e-3, 1.0), (1e-5, 1.5)])
def test_near_identical_systems_are_symmetric_and_exact(effect, eps, k):
    """The fuzzer's case: corr(m0, m1) 0.697 and corr(m1, m0) −0.0076 where exact arithmetic
    gives −0.069. Both orders equal the exact value (Decimal, 80 digits) for every seed;
    so do proportional scores (k = 1.5: r → 1 for ``corr``, x/x̄ ≈ y/ȳ for ``rom``)."""
    worst = 0.0
    for seed in range(12):
        scores, treat, ctrl = _near_identical(seed, eps, k=k)
        cov = metaeval.effect_covariance(scores, "c", effect=effect)
        corr = cov.set_index(["metric", "metric_b"])["corr"]
        ab, ba = corr[("m0", "m1")], corr[("m1", "m0")]
        exact = _exact_corr(treat, ctrl, effect if effect != "smd" else "smcc")
        assert ab == pytest.approx(ba, abs=1e-12), (seed, ab, ba)
        worst = max(worst, abs(ab - exact))
        pairs = cov.set_index(["metric", "metric_b"])["cov"]
        assert pairs[("m0", "m1")] == pytest.approx(pairs[("m1", "m0")], rel=1e-12)
    assert worst < 1e-8, worst


@pytest.mark.parametrize("effect", ["smcc", "corr", "rom"])
def test_differences_within_rounding_are_nan_with_the_groups_named(effect):
    """Where the digits are genuinely gone (differences of 1e-7 on scores of order 1:
    effects() takes the variance, or 1 − r, for rounding), the covariances are NaN and
    the DegenerateWarning of effects() names both groups; nothing is clipped into
    [−1, 1] silently."""
    scores, _, _ = _near_identical(0, 1e-7)
    with pytest.warns(metaeval.DegenerateWarning, match="gives NaN for 2 group") as caught:
        cov = metaeval.effect_covariance(scores, "c", effect=effect)
    assert cov["cov"].isna().all() and cov["corr"].isna().all()
    assert sorted(caught[0].message.groups["metric"]) == ["m0", "m1"]

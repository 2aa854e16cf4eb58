"""metaeval.facets (issue 42): variance components and facet-aware standard errors,
against lme4 / lmerTest / pbkrtest (tests/fixtures/facets, with the R script that made the
values) and by a coverage simulation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import metaeval
from metaeval import OptionError, SchemaError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "facets"


def _design(rng, tasks: int, queries: int = 40, prompts: int = 4, seeds: int = 2):
    """Two systems (b better by 0.2) on queries × prompts × seeds, with a query, prompt
    and seed effect, system × query and system × prompt interactions (the prompt changes
    the systems' difference: what an item-only SE misses) and noise."""
    grid = np.meshgrid(
        np.arange(tasks),
        np.arange(queries),
        np.arange(prompts),
        np.arange(seeds),
        np.arange(2),
        indexing="ij",
    )
    t, q, p, s, m = (a.ravel() for a in grid)
    value = (
        rng.normal(0, 1.0, (tasks, queries))[t, q]
        + rng.normal(0, 0.3, (tasks, prompts))[t, p]
        + rng.normal(0, 0.1, (tasks, seeds))[t, s]
        + rng.normal(0, 0.4, (tasks, 2, queries))[t, m, q]
        + rng.normal(0, 0.25, (tasks, 2, prompts))[t, m, p]
        + 0.2 * m
        + rng.normal(0, 0.5, len(t))
    )
    return pd.DataFrame(
        {
            "task": t.astype(str),
            "query": q,
            "prompt": p,
            "seed": s,
            "system": np.where(m == 1, "b", "a"),
            "metric": "m",
            "value": value,
        }
    )


@pytest.mark.slow
def test_facet_aware_intervals_cover_where_item_only_ones_do_not():
    rng = np.random.default_rng(1)
    table = _design(rng, 100)
    res = metaeval.facets(table, ["query", "prompt", "seed"], control="a")
    p = res.pairs
    covered = ((p["ci_low"] <= 0.2) & (0.2 <= p["ci_high"])).mean()
    crit = stats.t.isf(0.025, 40 - 1)
    item_only = (
        (p["effect"] - crit * p["naive_se"] <= 0.2) & (0.2 <= p["effect"] + crit * p["naive_se"])
    ).mean()
    print(
        f"\n100 tasks of 40 queries x 4 prompts x 2 seeds, 2 systems: 95% intervals of the paired"
        f" difference cover {covered:.3f} (facet-aware, Satterthwaite df median "
        f"{p['df'].median():.1f}) and {item_only:.3f} (item-only, t on 39 df); the facet-aware "
        f"SE is {p['se_ratio'].mean():.2f} times the item-only one"
    )
    assert covered >= 0.92  # Monte-Carlo error ±2.2% at 100 tasks
    assert item_only <= 0.85
    assert p["se_ratio"].mean() > 1.5


def test_one_system_gives_components_only():
    rng = np.random.default_rng(2)
    table = _design(rng, 1, seeds=1)
    one = table[table["system"] == "a"]
    res = metaeval.facets(one, ["query", "prompt"])
    assert res.components["component"].tolist() == ["query", "prompt", "residual"]
    assert res.pairs.empty and len(res.table) == 1
    assert res.g["g_relative"].isna().all()


def test_the_pairs_are_an_effects_table_pool_pools():
    rng = np.random.default_rng(3)
    res = metaeval.facets(_design(rng, 3, queries=20, seeds=1), ["query", "prompt"], control="a")
    pooled = metaeval.pool(res.pairs, method="EE")
    w = 1 / res.pairs["variance"]
    assert pooled["effect"].item() == pytest.approx((w * res.pairs["effect"]).sum() / w.sum())


def test_bad_input():
    rng = np.random.default_rng(4)
    table = _design(rng, 1, queries=10)
    with pytest.raises(SchemaError, match="names \\['promptt'\\], which the table lacks"):
        metaeval.facets(table, ["query", "promptt"])
    with pytest.raises(SchemaError, match="The facet 'prompt' has one level in task '0'"):
        metaeval.facets(table[table["prompt"] == 0], ["query", "prompt", "seed"])
    with pytest.raises(
        SchemaError, match=r"share their.*add to random= \(columns that vary among them: \['seed'\]"
    ):
        metaeval.facets(table, ["query", "prompt"])
    with pytest.raises(SchemaError, match="facet column 'prompt' has missing values"):
        metaeval.facets(
            table.assign(prompt=table["prompt"].where(table.index > 0)), ["query", "prompt", "seed"]
        )
    with pytest.raises(OptionError, match="method"):
        metaeval.facets(table, ["query", "prompt", "seed"], method="ANOVAS")
    with pytest.raises(OptionError, match="interactions"):
        metaeval.facets(table, ["query", "prompt", "seed"], interactions=[("query", "judge")])
    with pytest.raises(SchemaError, match="control 'z' has no scores"):
        metaeval.facets(table, ["query", "prompt", "seed"], control="z")


def test_the_d_study_at_the_observed_counts_is_the_models_se_and_the_plan_is_the_cheapest():
    rng = np.random.default_rng(6)
    res = metaeval.facets(_design(rng, 2), ["query", "prompt", "seed"], control="a")
    given = res.plan(n={"query": 40})
    rows = given.table[given.table["design"] == "given"]
    np.testing.assert_allclose(rows["se"], res.pairs["se"], rtol=1e-6)  # balanced: exact
    costs = {"query": 1, "prompt": 50, "seed": 200}
    planned = res.plan(costs=costs, target_se=0.07)
    best = planned.table[planned.table["design"] == "planned"].iloc[0]
    assert best["se"] <= 0.07
    # brute force over the same grid with the components written out
    comp = res.components[res.components["task"] == "0"].set_index("component")["variance"]
    q = np.unique(np.round(np.geomspace(10, 320, 40)))
    grid = np.stack(np.meshgrid(q, np.arange(1, 25), np.arange(1, 25), indexing="ij"), -1).reshape(
        -1, 3
    )
    se = np.sqrt(
        2
        * (
            comp["system:query"] / grid[:, 0]
            + comp["system:prompt"] / grid[:, 1]
            + comp["system:seed"] / grid[:, 2]
            + comp["residual"] / grid.prod(1)
        )
    )
    cost = grid @ np.array([1, 50, 200])
    assert best["cost"] == cost[se <= 0.07].min()
    fig = planned.plot()
    assert len(fig.axes[0].lines) == 3  # two tasks' curves and the target
    with pytest.warns(metaeval.DegenerateWarning, match="reaches the target in 2"):
        unreachable = res.plan(costs=costs, target_se=0.001)
    assert unreachable.table.loc[unreachable.table["design"] == "planned", "se"].isna().all()


@pytest.mark.slow
def test_the_projected_se_is_the_se_realised_at_the_planned_counts():
    """The D study's SE at planned counts, from the simulation's own components, against
    the spread of the paired differences of 300 simulated designs of those counts (the
    formula; with estimated components its error is the pilot's: a prompt × system
    variance from 8 prompts is uncertain by about half)."""
    from metaeval.variance.plan import plan

    truth = pd.DataFrame(
        {
            "task": "t",
            "metric": "m",
            "component": ["query", "prompt", "seed", "system:query", "system:prompt", "residual"],
            "variance": [1.0, 0.09, 0.01, 0.16, 0.0625, 0.25],
            "n_levels": [40, 4, 2, 40, 4, np.nan],
        }
    )
    table, _, _ = plan(
        truth,
        ["query", "prompt", "seed"],
        costs={"query": 1, "prompt": 40, "seed": 100},
        target_se=0.1,
    )
    row = table[table["design"] == "planned"].iloc[0]
    nq, npr, ns = int(row["n_query"]), int(row["n_prompt"]), int(row["n_seed"])
    rng = np.random.default_rng(7)
    sims = _design(rng, 300, queries=nq, prompts=npr, seeds=ns)
    means = sims.groupby(["task", "system"])["value"].mean().unstack()
    realised = (means["b"] - means["a"]).std(ddof=1)
    print(
        f"\nplanned {nq} queries x {npr} prompts x {ns} seeds: projected SE {row['se']:.4f}, "
        f"realised {realised:.4f} over 300 simulated designs"
    )
    assert realised == pytest.approx(row["se"], rel=0.10)  # Monte-Carlo error about ±4%


# ------------------------------------------------------------------ against lme4
MODELS = {
    "penicillin": ("diameter", None, ["plate", "sample"]),
    "insteval": ("y", None, ["s", "d"]),
    "design_a": ("value", "system", ["query", "prompt", "seed", "system:query"]),
    "design_b": ("value", "system", ["query", "prompt", "seed", "judge", "system:query"]),
    "design_c": ("value", None, ["query", "prompt", "seed"]),
    "design_d": ("value", "system", ["query", "prompt", "seed", "system:query"]),
}
"""Each fixture's lme4 model: the response, the fixed effect (a system's mean each, or
one intercept) and the random intercepts (``a:b`` their interaction)."""


def _engine_fit(dataset: str, reml: bool):
    from metaeval.variance._mixed import CrossedDesign, fit

    name = f"{dataset}.csv.gz" if dataset == "insteval" else f"{dataset}.csv"
    data = pd.read_csv(FIXTURES / name, dtype=str)
    response, fixed, terms = MODELS[dataset]
    y = data[response].astype(float).to_numpy()
    if fixed is None:
        x = np.ones((len(y), 1))
    else:
        codes, levels = pd.factorize(data[fixed], sort=True)
        x = np.eye(len(levels))[codes]
    codes = [
        pd.factorize(data[t.split(":")].astype(str).agg("\x1f".join, axis=1))[0] for t in terms
    ]
    design = CrossedDesign.of(y, x, codes)
    return design, fit(design, reml=reml), terms


def _reference(dataset: str, reml: bool) -> pd.Series:
    ref = pd.read_csv(FIXTURES / "lme4_reference.csv")
    ref = ref[(ref["dataset"] == dataset) & (ref["reml"] == reml)]
    return ref.set_index("component")["variance"]


@pytest.mark.parametrize("reml", [True, False], ids=["REML", "ML"])
@pytest.mark.parametrize("dataset", ["penicillin", "design_a", "design_b", "design_c", "design_d"])
def test_components_fixed_effects_and_their_ses_equal_lme4(dataset, reml):
    """lme4 1.1-31 refined to the exact optimum (make_lme4.R): the components to 1e-5
    relative (1e-9 absolute for a component at 0), β and its standard errors likewise."""
    design, model, terms = _engine_fit(dataset, reml)
    ref = _reference(dataset, reml)
    ours = pd.Series([*model.variances, model.sigma2], index=[*terms, "Residual"])
    scale = ref.abs().max()
    for component, want in ref.items():
        assert ours[component] == pytest.approx(want, rel=1e-5, abs=1e-9 * scale), component
    fixed = pd.read_csv(FIXTURES / "lme4_fixed.csv")
    fixed = fixed[(fixed["dataset"] == dataset) & (fixed["reml"] == reml)]
    np.testing.assert_allclose(model.beta, fixed["estimate"], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.sqrt(np.diag(model.vcov)), fixed["se"], rtol=1e-5)
    assert model.converged


@pytest.mark.parametrize("reml", [True, False], ids=["REML", "ML"])
@pytest.mark.parametrize("dataset", ["design_a", "design_b"])
def test_contrasts_and_satterthwaite_df_equal_lmertest(dataset, reml):
    from metaeval.variance.components import _df, _satterthwaite_setup

    design, model, _ = _engine_fit(dataset, reml)
    ref = pd.read_csv(FIXTURES / "lme4_contrasts.csv")
    ref = ref[(ref["dataset"] == dataset) & (ref["reml"] == reml)]
    systems = sorted(set(ref["treatment"]) | set(ref["control"]))
    c = np.zeros((len(ref), len(systems)))
    for r, (t, b) in enumerate(zip(ref["treatment"], ref["control"], strict=True)):
        c[r, systems.index(t)], c[r, systems.index(b)] = 1.0, -1.0
    var, df = _df(_satterthwaite_setup(design, model), c)
    np.testing.assert_allclose(c @ model.beta, ref["estimate"], rtol=1e-6)
    np.testing.assert_allclose(np.sqrt(var), ref["se"], rtol=1e-5)
    np.testing.assert_allclose(df, ref["df_satterthwaite"], rtol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("reml", [True, False], ids=["REML", "ML"])
def test_insteval_equals_lme4(reml):
    """lme4's InstEval, y ~ 1 + (1|s) + (1|d): 73,421 ratings, 2,972 × 1,128 levels."""
    _, model, terms = _engine_fit("insteval", reml)
    ref = _reference("insteval", reml)
    ours = pd.Series([*model.variances, model.sigma2], index=[*terms, "Residual"])
    for component, want in ref.items():
        assert ours[component] == pytest.approx(want, rel=1e-5), component


def test_a_component_is_not_left_at_its_bound_by_the_optimizer():
    """The guide's task0 (docs/user_guide/facets.md): L-BFGS-B from θ = 1 stopped with the
    prompt component at 0, 0.92 above the optimum (at θ_k = 0 the deviance's derivative in
    θ_k is 0); lme4's default fit reaches 14401.9136567532 (guide_task0.R), so must we."""
    from metaeval.variance._mixed import CrossedDesign, fit

    rng = np.random.default_rng(42)
    tasks, questions, prompts, seeds, judges = 4, 150, 5, 3, 2
    grid = np.meshgrid(
        np.arange(tasks),
        np.arange(questions),
        np.arange(prompts),
        np.arange(seeds),
        np.arange(judges),
        np.arange(2),
        indexing="ij",
    )
    t, q, p, s, j, m = (a.ravel() for a in grid)
    value = (
        rng.normal(0, 0.8, (tasks, questions))[t, q]
        + rng.normal(0, 0.3, (tasks, prompts))[t, p]
        + rng.normal(0, 0.1, (tasks, seeds))[t, s]
        + rng.normal(0, 0.2, (tasks, judges))[t, j]
        + rng.normal(0, 0.4, (tasks, 2, questions))[t, m, q]
        + rng.normal(0, 0.15, (tasks, 2, prompts))[t, m, p]
        + 0.10 * m
        + rng.normal(0, 0.5, len(t))
    )
    own = t == 0
    cols = {"query": q, "prompt": p, "seed": s, "judge": j}
    codes = [pd.factorize(v[own])[0] for v in cols.values()]
    codes += [pd.factorize(m[own] * 1000 + v[own])[0] for v in cols.values()]
    design = CrossedDesign.of(value[own], np.eye(2)[m[own]], codes)
    model = fit(design, reml=True)
    assert model.deviance <= 14401.9136567532 + 1e-6
    assert model.variances[1] > 0.05  # the prompt component, 0 where the optimizer stuck


def test_the_plot_draws_one_metric_and_names_the_metrics_it_has():
    rng = np.random.default_rng(8)
    table = _design(rng, 2, queries=12, seeds=1)
    res = metaeval.facets(table, ["query", "prompt"])
    fig = res.plot()
    bars = fig.axes[0].patches
    assert len(bars) == 2 * len(res.components["component"].unique())  # two tasks' stacks
    with pytest.raises(OptionError, match=r"`metric` must be one of \['m'\], but 'nope'"):
        res.plot(metric="nope")


# ------------------------------------------------------------------ ANOVA
def test_anova_equals_the_expected_mean_squares_written_out():
    """2 systems × 12 queries × 5 prompts: MS of each term by hand, and
    σ²_q = (MS_q − MS_sq)/(S n_p), σ²_p = (MS_p − MS_sp)/(S n_q), σ²_sq = (MS_sq − MS_e)/n_p,
    σ²_sp = (MS_sp − MS_e)/n_q, σ²_e = MS_e (the unrestricted model)."""
    rng = np.random.default_rng(9)
    table = _design(rng, 1, queries=12, prompts=5, seeds=1).drop(columns="seed")
    res = metaeval.facets(table, ["query", "prompt"], method="ANOVA", control="a")
    y = table.sort_values(["system", "query", "prompt"])["value"].to_numpy().reshape(2, 12, 5)
    s, nq, npr = y.shape
    grand = y.mean()
    m_s, m_q, m_p = y.mean((1, 2)), y.mean((0, 2)), y.mean((0, 1))
    m_sq, m_sp = y.mean(2), y.mean(1)
    ms_q = s * npr * ((m_q - grand) ** 2).sum() / (nq - 1)
    ms_p = s * nq * ((m_p - grand) ** 2).sum() / (npr - 1)
    e_sq = m_sq - m_s[:, None] - m_q[None, :] + grand
    e_sp = m_sp - m_s[:, None] - m_p[None, :] + grand
    ms_sq = npr * (e_sq**2).sum() / ((s - 1) * (nq - 1))
    ms_sp = nq * (e_sp**2).sum() / ((s - 1) * (npr - 1))
    ss_total = ((y - grand) ** 2).sum()
    ss_s = nq * npr * ((m_s - grand) ** 2).sum()
    ss_terms = ss_s + ms_q * (nq - 1) + ms_p * (npr - 1)
    ss_terms += ms_sq * (s - 1) * (nq - 1) + ms_sp * (s - 1) * (npr - 1)
    df_e = s * nq * npr - 1 - (s - 1) - (nq - 1) - (npr - 1)
    df_e -= (s - 1) * (nq - 1) + (s - 1) * (npr - 1)
    ms_e = (ss_total - ss_terms) / df_e  # query × prompt and the rest pooled
    want = {
        "query": (ms_q - ms_sq) / (s * npr),
        "prompt": (ms_p - ms_sp) / (s * nq),
        "system:query": (ms_sq - ms_e) / npr,
        "system:prompt": (ms_sp - ms_e) / nq,
        "residual": ms_e,
    }
    got = res.components.set_index("component")["variance"]
    for name, value in want.items():
        assert got[name] == pytest.approx(max(value, 0.0), rel=1e-10, abs=1e-14), name
    # the difference's variance: 2 (σ²_sq/n_q + σ²_sp/n_p + σ²_e/(n_q n_p))
    var = 2 * (want["system:query"] / nq + want["system:prompt"] / npr + ms_e / (nq * npr))
    assert res.pairs["variance"].item() == pytest.approx(var, rel=1e-10)
    assert res.pairs["effect"].item() == pytest.approx(m_s[1] - m_s[0], rel=1e-12)


def test_anova_equals_reml_on_a_balanced_design_and_lme4():
    """On a balanced design with every ANOVA estimate positive the two coincide: design_a
    with lme4's terms, against lme4's REML (make_lme4.R) and the REML engine."""
    from metaeval.variance._anova import anova_fit

    data = pd.read_csv(FIXTURES / "design_a.csv").sort_values(["system", "query", "prompt", "seed"])
    cube = data["value"].to_numpy().reshape(1, 3, 40, 4, 3)
    fit = anova_fit(cube, [(1,), (2,), (3,), (0, 1)])
    ref = _reference("design_a", True)
    ours = dict(
        zip(["query", "prompt", "seed", "system:query", "Residual"], fit.raw[0], strict=True)
    )
    for component, want in ref.items():
        assert ours[component] == pytest.approx(want, rel=1e-6), component
    contrast = pd.read_csv(FIXTURES / "lme4_contrasts.csv").query("dataset == 'design_a' and reml")
    se = np.sqrt(np.append(fit.variances[0], fit.sigma2[0]) @ (2 * fit.own_weights))
    np.testing.assert_allclose(se, contrast["se"], rtol=1e-6)
    np.testing.assert_allclose(fit.satterthwaite(2 * fit.own_weights), 78.0, rtol=1e-12)


def test_anova_fits_many_groups_at_once_as_one_at_a_time():
    import warnings

    rng = np.random.default_rng(10)
    table = _design(rng, 30, queries=15, prompts=3, seeds=2)
    warnings.simplefilter("ignore", metaeval.DegenerateWarning)  # small components clip at 0
    together = metaeval.facets(table, ["query", "prompt", "seed"], method="ANOVA", control="a")
    alone = pd.concat(
        [
            metaeval.facets(
                table[table["task"] == t], ["query", "prompt", "seed"], method="ANOVA", control="a"
            ).pairs
            for t in ["0", "7", "29"]
        ],
        ignore_index=True,
    )
    pick = together.pairs.set_index("task").loc[["0", "7", "29"]].reset_index()
    pd.testing.assert_frame_equal(pick, alone, check_exact=False, rtol=1e-12)
    assert len(together.components) == 30 * 7


def test_anova_refuses_an_unbalanced_design_and_says_negative_estimates():
    rng = np.random.default_rng(12)
    table = _design(rng, 1, queries=10)
    with pytest.raises(SchemaError, match=r"balanced, fully crossed.*159 rows for 160 cells"):
        metaeval.facets(table.iloc[1:], ["query", "prompt", "seed"], method="ANOVA")
    flat = table.assign(value=rng.normal(0, 1, len(table)))  # no structure: some MS fall short
    with pytest.warns(metaeval.DegenerateWarning, match="below 0 and are set to 0"):
        res = metaeval.facets(flat, ["query", "prompt", "seed"], method="ANOVA")
    assert (res.components["variance"] >= 0).all() and res.components["boundary"].any()

"""One naming rule for p-values (issue 26): a column that holds a p-value is ``p_value``,
``<stat>_p_value`` or ``p_adjusted``; a probability of an event is ``prob_<event>``.

Checked on the output of every public function that returns a table, built on the
bundled example data: a column that *looks like* a p-value (named ``p``, starting with
``p_``, ending with ``_p``, or containing ``pval`` / ``p_val``) must follow the rule.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import ranking
from metaeval.design.queries import plan_queries

CONTROL = "logistic_regression"
RULE = re.compile(r"^(p_value|[a-z0-9]+(_[a-z0-9]+)*_p_value|p_adjusted)$")


def looks_like_p(name: str) -> bool:
    name = str(name).lower()
    return (
        name == "p"
        or name.startswith("p_")
        or name.endswith("_p")
        or "pval" in name
        or "p_val" in name
    )


def bad_p_names(columns) -> list[str]:
    return [str(c) for c in columns if looks_like_p(c) and not RULE.match(str(c))]


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("p_value", False),
        ("q_p_value", False),
        ("q_between_p_value", False),
        ("p_adjusted", False),
        ("prob_gain", False),
        ("pi_low", False),
        ("k", False),
        ("p", True),
        ("p_gain", True),
        ("shapiro_p", True),
        ("f_pvalue", True),
        ("homogeneity_p", True),
        ("p_better", True),
        ("pvalue", True),
        ("P_value", True),
    ],
)
def test_the_rule_tells_good_from_bad_names(name, bad):
    assert bool(bad_p_names([name])) is bad


def _outputs() -> dict[str, pd.DataFrame]:
    scores = metaeval.load_example()
    acc = scores[scores["metric"] == "accuracy"]
    eff = metaeval.effects(scores, control=CONTROL)
    size = {"iris": 1.0, "wine": 2.0, "breast_cancer": 3.0, "digits": 4.0}
    report = metaeval.rank_report(scores)
    codes = scores.groupby("task")["query"].transform(lambda q: pd.factorize(q)[0] // 5)
    eff_cluster = metaeval.effects(scores.assign(passage=codes), CONTROL, cluster="passage")
    out = {
        "effects": eff,
        "effects(cluster=)": eff_cluster,
        "pool(effects(cluster=))": metaeval.pool(eff_cluster),
        "pool": metaeval.pool(eff),
        "pool(by=)": metaeval.pool(eff.assign(g=eff["task"].isin(["iris", "wine"])), by="g"),
        "pool_metrics": metaeval.pool_metrics(scores, control=CONTROL),
        "compare": metaeval.compare(scores, control=CONTROL, adjust="holm"),
        "tukey": metaeval.tukey(scores),
        "anova": metaeval.anova(scores),
        "means": metaeval.means(scores),
        "analyze": metaeval.analyze(scores, CONTROL),
        "weights": metaeval.weights(eff),
        "influence": metaeval.influence(eff),
        "leave_one_out": metaeval.leave_one_out(eff),
        "gosh": metaeval.gosh(eff),
        "baujat": metaeval.baujat(eff),
        "metareg": metaeval.metareg(eff.assign(size=eff["task"].map(size)), "size"),
        "metareg(robust=)": metaeval.metareg(
            eff.assign(size=eff["task"].map(size)), "size", robust="CR2"
        ),
        "bayes_pool": metaeval.bayes_pool(eff),
        "permutest": metaeval.permutest(eff, seed=1, n_resamples=50),
        "permutest(mods=)": metaeval.permutest(
            eff.assign(size=eff["task"].map(size)), mods="size", seed=1, n_resamples=50
        ),
        "effect_covariance": metaeval.effect_covariance(scores, CONTROL),
        "friedman": ranking.friedman(scores),
        "posthoc": ranking.posthoc(scores),
        "bayes_signed_rank": ranking.bayes_signed_rank(acc, control=CONTROL, seed=1),
        "leaderboard": ranking.leaderboard(scores),
        "rank_intervals": ranking.rank_intervals(scores, n_resamples=50, seed=1),
        "leaderboard(meta)": ranking.leaderboard(
            scores, method="meta", control=CONTROL, metric="accuracy"
        ),
        "correlation_effects": metaeval.paired.correlation_effects(acc, reference=CONTROL),
        "kendall_tau_set": metaeval.measures.kendall_tau_set(
            [[1, 2, 3], [3, 2, 1]], [[1, 2, 3], [1, 3, 2]]
        )
        .to_frame()
        .T,
        "kendall_tau": metaeval.measures.kendall_tau([[1, 2, 3]], [[1, 3, 2]]).to_frame(),
        "plan_tasks": metaeval.design.plan_tasks(eff, k=4, power=0.8, n_sim=200, seed=1),
        "rank_report.table": report.table,
        "plan_queries": plan_queries(scores, CONTROL, mde=0.05, power=0.8),
        "plan_queries(cluster=)": plan_queries(
            scores.assign(passage=codes), CONTROL, mde=0.05, power=0.8, cluster="passage"
        ),
        "plan_queries(test='anova')": plan_queries(scores, CONTROL, test="anova", n=50, mde=0.05),
        "plan_queries.curve": plan_queries(scores, CONTROL, n=50, mde=0.05).curve,
        "rank_report.ranks": report.ranks,
        "build_report": metaeval.build_report(scores, CONTROL, n_resamples=50, seed=1),
    }
    for metric, table in report.posthoc.items():
        out[f"rank_report.posthoc[{metric}]"] = table
    for name, result in list(out.items()):
        table = getattr(result, "table", result)  # Result objects: their tidy table
        out[name] = table
        # the other tables of a result (attrs or parts)
        for part in ("fit", "ranks", "curve", "included", "tasks", "tests", "effects", "pooled"):
            extra = getattr(result, part, None)
            if extra is None and isinstance(table, pd.DataFrame):
                extra = table.attrs.get(part)
            if isinstance(extra, pd.DataFrame):
                out[f"{name}.{part}"] = extra
    return out


@pytest.fixture(scope="module")
def outputs() -> dict[str, pd.DataFrame]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate groups of the example data warn
        return _outputs()


def test_the_outputs_cover_the_public_functions(outputs):
    wanted = {
        "effects",
        "pool",
        "compare",
        "tukey",
        "anova",
        "analyze",
        "metareg",
        "friedman",
        "posthoc",
        "bayes_signed_rank",
        "leaderboard",
        "rank_intervals",
        "rank_report.table",
        "rank_report.ranks",
        "influence",
        "weights",
        "means",
        "gosh",
        "baujat",
    }
    assert wanted <= set(outputs)
    assert all(isinstance(t, pd.DataFrame) and len(t.columns) for t in outputs.values())
    # the check sees p-values: most outputs have one
    assert sum("p_value" in t.columns for t in outputs.values()) >= 15


def test_every_p_value_column_follows_the_naming_rule(outputs):
    bad = {name: bad_p_names(t.columns) for name, t in outputs.items()}
    bad = {name: cols for name, cols in bad.items() if cols}
    assert not bad, (
        "p-value columns are named p_value, <stat>_p_value or p_adjusted; probabilities "
        f"prob_<event>. Rename: {bad}"
    )


def test_the_renamed_columns_hold_what_they_did(outputs):
    """The renamed columns are there, under their new names, with values in [0, 1]."""
    for name, col in [
        ("pool", "prob_gain"),
        ("friedman", "f_p_value"),
        ("rank_report.table", "shapiro_min_p_value"),
        ("rank_report.table", "homogeneity_p_value"),
        ("rank_report.table", "f_p_value"),
        ("rank_report.ranks", "shapiro_p_value"),
    ]:
        values = outputs[name][col].to_numpy(float)
        values = values[np.isfinite(values)]
        assert len(values) and ((values >= 0) & (values <= 1)).all(), (name, col)

"""The judge section of :func:`metaeval.build_report`: a table of labels (a ``judge``
column) gets the judges' agreement, their errors against the gold judge, and the
comparisons that rectify the scoring judge's labels with the gold slice (PPI++), with the
sentences of the methods paragraph that say how they were made.

The report's other tables need one score per (task, query, system, metric): they are
computed on the labels of one judge, ``judge=`` (the only one besides ``gold``, when there
is one), and the methods paragraph names it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd

from .._options import format_number
from ..errors import OptionError, SchemaError, excerpt, quote_list
from ..schema import JUDGE

__all__ = ["JUDGE_PARTS", "JUDGE_TITLES", "JudgeSection", "judge_section", "judge_methods"]

JUDGE_PARTS = ("agreement", "judge_errors", "judge_panel", "ppi", "ppi_pooled")
"""The judge section's tables, in the order a report shows them."""

JUDGE_TITLES = {
    "agreement": "Agreement of the judges",
    "judge_errors": "Judges against the gold labels",
    "judge_panel": "Effective number of independent judges",
    "ppi": "Judge, gold and prediction-powered estimates",
    "ppi_pooled": "Pooled prediction-powered (PPI++) effects",
}

_AGREEMENT = ["task", "metric", "agreement", "ci_low", "ci_high", "n_units", "n_judges"]
_ERRORS = ["task", "metric", "judge", "n_gold", "accuracy", "sensitivity", "specificity"]
_ERRORS += ["kappa", "bias", "bias_se"]
_PANEL = ["task", "metric", "n_judges", "error_corr", "n_eff", "n_eff_low", "n_eff_high"]
_ESTIMATORS = ("judge", "classical", "ppi++")


@dataclasses.dataclass(frozen=True)
class JudgeSection:
    """What :func:`judge_section` found and computed: the tables by part, the agreement of
    every two judges (for the heatmap) and the options the methods paragraph states."""

    tables: dict[str, pd.DataFrame]
    pairs: pd.DataFrame | None
    options: dict[str, Any]


def judge_section(
    scores: pd.DataFrame,
    control: list[str] | None,
    *,
    gold: str | None,
    judge: str | None,
    level: str,
    cluster: str | None,
    alpha: float,
    n_resamples: int,
    seed: int | None,
    method: str,
    pool_test: str | None,
) -> tuple[pd.DataFrame, JudgeSection | None]:
    """The scoring judge's labels (the table the report's other parts use) and the judge
    section; ``scores`` itself and None for a table without a ``judge`` column."""
    from ..judges import agreement, judge_errors

    if JUDGE not in scores.columns:
        asked = [name for name, v in (("gold", gold), ("judge", judge)) if v is not None]
        if asked:
            raise OptionError(
                f"build_report({', '.join(f'{a}=...' for a in asked)}) needs a table of "
                f"labels with a {JUDGE!r} column (who labelled each row), which the scores "
                "lack."
            )
        return scores, None
    if scores[JUDGE].isna().any():
        raise SchemaError(
            f"The {JUDGE!r} column is missing on {int(scores[JUDGE].isna().sum())} row(s); "
            "every label needs its judge."
        )
    judges = [str(j) for j in pd.unique(scores[JUDGE])]
    for name, value in (("gold", gold), ("judge", judge)):
        if value is not None and str(value) not in judges:
            raise SchemaError(
                f"build_report({name}={excerpt(value)}): no label is by that judge; the "
                f"table's judges are {quote_list(judges)}."
            )
    others = [j for j in judges if j != gold]
    if judge is None:
        if len(others) != 1:
            raise OptionError(
                f"The table holds the labels of {len(judges)} judges ({quote_list(judges)}): "
                "name with build_report(judge=...) the one whose labels score the systems "
                "(the means, tests, effects and ranks), and with gold=... the one taken as "
                "the truth, if any."
            )
        judge = others[0]
    judge = str(judge)
    scored = scores[scores[JUDGE].astype(str) == judge]
    if len(judges) == 1:
        return scored, None
    common = {"cluster": cluster, "alpha": alpha, "n_resamples": n_resamples, "seed": seed}
    tables: dict[str, pd.DataFrame] = {}
    pairs = None
    panel = others if gold is not None else judges
    options: dict[str, Any] = {"judges": judges, "gold": gold, "judge": judge, "level": level}
    if len(panel) >= 2:
        agree = agreement(scores, panel, level=level, **common)  # type: ignore[arg-type]
        tables["agreement"] = agree.table[_AGREEMENT]
        pairs = agree.pairs
        options["agreement_judges"] = panel
        options["seed_used"] = agree.table.attrs.get("seed")
    if gold is not None:
        errors = judge_errors(scores, gold, **common)
        tables["judge_errors"] = errors.table[_ERRORS]
        options["seed_used"] = errors.table.attrs.get("seed")
        if len(others) >= 2:
            tables["judge_panel"] = errors.panel[_PANEL]
        if judge != gold:
            tables.update(_ppi(scores, control, gold, judge, cluster, alpha, method, pool_test))
    return scored, JudgeSection(tables, pairs, options)


def _ppi(
    scores: pd.DataFrame,
    control: list[str] | None,
    gold: str,
    judge: str,
    cluster: str | None,
    alpha: float,
    method: str,
    pool_test: str | None,
) -> dict[str, pd.DataFrame]:
    """The judge-only, gold-only and PPI++ estimates side by side (paired differences from
    each control, or each system's mean without one), and the PPI++ effects pooled."""
    from ..judges import ppi
    from ..pooling import pool

    runs = [None] if control is None else control
    rows = [
        ppi(scores, gold, judge, c, estimator=e, cluster=cluster, alpha=alpha)  # type: ignore[arg-type]
        for c in runs  # display: one table per control and estimator, a handful
        for e in _ESTIMATORS
    ]
    table = pd.concat(rows, ignore_index=True)
    value = "mean" if control is None else "effect"
    keys = ["task", "metric", "system"] if control is None else ["task", "metric"]
    keys += [] if control is None else ["treatment", "control"]
    shown = [*keys, "estimator", value, "se", "ci_low", "ci_high", "n_gold", "lambda", "ess_gain"]
    out = {"ppi": table[shown]}
    if control is not None:
        tuned = table[table["estimator"] == "ppi++"]
        out["ppi_pooled"] = pool(tuned, method=method, test=pool_test, alpha=alpha)  # type: ignore[arg-type]
    return out


def judge_methods(
    options: dict[str, Any], tables: dict[str, pd.DataFrame], level: str
) -> list[str]:
    """The methods paragraph's sentences on the judges, from the report's options and its
    judge tables (``level``: the confidence level as text, "95")."""
    o = options.get("judges")
    if not o:
        return []
    judges, gold, judge = o["judges"], o["gold"], o["judge"]
    cluster = options.get("cluster")
    over = f"clusters of {cluster!r}" if cluster else "outputs"
    resamples = options.get("n_resamples")
    seed = o.get("seed_used")
    out = [
        f"The labels came from {len(judges)} judges ({', '.join(judges)}); the means, tests, "
        f"effects and ranks use the labels of {judge}."
    ]
    if "agreement" in tables:
        out.append(
            f"The agreement of {', '.join(o['agreement_judges'])} was measured per task and "
            f"metric by Krippendorff's alpha at the {o['level']} level (Krippendorff 2011), "
            f"with {level}% percentile bootstrap intervals over the {over} ({resamples} "
            f"resamples, seed {seed})."
        )
    if "judge_errors" in tables:
        n = tables["judge_errors"]["n_gold"]
        span = format_number(n.min(), 0) if n.min() == n.max() else f"{n.min()}–{n.max()}"
        out.append(
            f"Each judge was compared with the labels of {gold}, taken as the truth, on the "
            f"{span} outputs per task that both labelled (a random sample of the outputs, "
            "assumed): accuracy, sensitivity and specificity (0/1 labels), Cohen's kappa "
            "(Cohen 1960) and the mean error (judge − gold), with the same bootstrap."
        )
    if "judge_panel" in tables:
        out.append(
            "The effective number of independent judges is n_eff = m / (1 + (m − 1) r), r "
            "the mean correlation of the judges' errors on the gold-labelled outputs (Kish "
            "1965)."
        )
    if "ppi" in tables:
        what = "paired differences" if "ppi_pooled" in tables else "systems' means"
        interval = (
            f"t intervals on C − 1 degrees of freedom (C the clusters of {cluster!r}) with "
            "the delete-one-cluster jackknife's standard errors"
            if cluster
            else "normal intervals"
        )
        out.append(
            f"The {what} were also estimated from {judge}'s labels alone, {gold}'s alone, and "
            f"{judge}'s rectified by {gold}'s (prediction-powered inference with power "
            "tuning, PPI++; Angelopoulos, Bates, Fannjiang, Jordan and Zrnic 2023; "
            f"Angelopoulos, Duchi and Zrnic 2023), with {level}% {interval}"
            + (
                "; the PPI++ differences were pooled over tasks as above."
                if what[0] == "p"
                else "."
            )
        )
    return out

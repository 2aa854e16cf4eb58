"""How wrong each judge is against gold labels, how alike their errors are, and what the
judges' labels say once their errors are corrected.

Against the items a gold judge (humans, say) labelled: per judge, sensitivity,
specificity, accuracy and Cohen's κ for 0/1 labels, and the mean error (judge − gold) for
any labels; per two judges the correlation of their errors; per panel the effective number
of independent judges n_eff = m / (1 + (m − 1) ρ̄) (ρ̄ the mean error correlation, m the
judges); and the Rogan–Gladen prevalence, a judge's positive rate on all items corrected
by its sensitivity and specificity. Every number is a function of sums over units, so its
bootstrap (over units, or clusters) is one sparse product per block of resamples.

References
----------
Rogan, W. J., & Gladen, B. (1978). Estimating prevalence from the results of a screening
test. *American Journal of Epidemiology*, 107(1), 71–76.
Kish, L. (1965). *Survey Sampling*. Wiley (the design effect behind n_eff).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..engines import any_frame
from ..errors import (
    DegenerateWarning,
    SchemaError,
    check_alpha,
    check_resamples,
    excerpt,
    resolve_seed,
    warn_groups,
)
from ._units import (
    JUDGE,
    Units,
    bootstrap,
    check_labels,
    group_sums,
    judges_with_gold,
    require_judges,
    spread,
    unit_matrix,
)
from .results import JudgeErrorsResult

__all__ = ["judge_errors"]

_PER_JUDGE = 9  # n both, TP, FP, FN, TN, Σd, Σd², n labelled, Σ label
_PER_PAIR = 6  # n, Σe_a, Σe_b, Σe_a², Σe_b², Σe_a e_b
_JUDGE_OUT = (
    "accuracy",
    "sensitivity",
    "specificity",
    "kappa",
    "bias",
    "positive_rate",
    "prevalence",
)


@any_frame
def judge_errors(
    scores: pd.DataFrame,
    gold: str = "human",
    judges: Sequence[str] | None = None,
    *,
    per_system: bool = False,
    cluster: str | None = None,
    alpha: float = 0.05,
    n_resamples: int = 1000,
    seed: int | None = None,
) -> JudgeErrorsResult:
    """Each judge's errors against the gold judge's labels, per task and metric.

    Parameters
    ----------
    scores : pandas.DataFrame
        Labels with a ``judge`` column, as :func:`metaeval.agreement` takes them; the
        gold judge may label a subset of the outputs (a unit is one ``(query, system)``
        output).
    gold : str, default "human"
        The judge whose labels are taken as the truth.
    judges : sequence of str, optional
        The judges to assess (default every other judge).
    per_system : bool, default False
        One row per system too.
    cluster : str, optional
        A column shared by related queries: the bootstrap draws its clusters.
    alpha : float, default 0.05
        1 − the confidence level of the percentile bootstrap intervals.
    n_resamples : int, default 1000
        Bootstrap resamples (0: no intervals).
    seed : int, optional
        The random seed (fresh entropy when None, reported in ``attrs``).

    Returns
    -------
    JudgeErrorsResult
        ``table``, per group and judge: ``n_gold`` (outputs both labelled),
        ``accuracy, sensitivity, specificity, kappa`` (0/1 labels; NaN otherwise),
        ``bias`` (mean judge − gold) with ``bias_se``, ``positive_rate`` (the judge's
        mean label on every output it labelled), ``prevalence`` (Rogan–Gladen:
        (positive_rate + specificity − 1) / (sensitivity + specificity − 1), clipped to
        [0, 1]) with ``prevalence_low, prevalence_high``; ``panel``, per group:
        ``n_judges``, ``error_corr`` (the mean error correlation of two judges) and
        ``n_eff`` with their intervals; ``correlations``: every two judges' error
        correlation. ``.plot()`` draws the error correlations.

    Notes
    -----
    Errors are compared on the outputs the gold judge labelled, which are assumed a
    random sample of them. The Rogan–Gladen prevalence is NaN, with a
    :class:`~metaeval.DegenerateWarning`, where sensitivity + specificity ≤ 1 (a judge
    no better than chance says nothing about the prevalence).

    Examples
    --------
    >>> import metaeval, pandas as pd
    >>> labels = pd.DataFrame({
    ...     "task": "qa", "metric": "correct", "system": "m1",
    ...     "query": [f"q{i}" for i in range(8)] * 2 + ["q0", "q1", "q2", "q3"],
    ...     "judge": ["gpt"] * 8 + ["claude"] * 8 + ["human"] * 4,
    ...     "value": [1, 1, 0, 0, 1, 0, 1, 1] + [1, 1, 0, 1, 1, 0, 1, 0] + [1, 1, 0, 0]})
    >>> res = metaeval.judge_errors(labels, gold="human", n_resamples=0)
    >>> res.table[["judge", "n_gold", "accuracy", "positive_rate"]]
        judge  n_gold  accuracy  positive_rate
    0     gpt       4      1.00          0.625
    1  claude       4      0.75          0.625
    """
    alpha = check_alpha(alpha)
    n_resamples = check_resamples(n_resamples, minimum=0)
    seed = resolve_seed(seed)
    asked = None if judges is None else [*dict.fromkeys([*judges, gold])]
    table = check_labels(scores, asked, cluster, what="judge_errors")
    judges_with_gold(table, gold)
    require_judges(table, 2, "judge_errors (gold and another judge)")
    has_gold = table[table[JUDGE] == str(gold)].groupby(["task", "metric"], observed=True).size()
    groups = table.groupby(["task", "metric"], observed=True).size()
    lacking = groups.index.difference(has_gold.index)
    if len(lacking):
        task, metric = lacking[0]
        raise SchemaError(
            f"The gold judge {excerpt(gold)} labelled no output of task {excerpt(task)} "
            f"(metric {excerpt(metric)})"
            + (f" and {len(lacking) - 1} more" if len(lacking) > 1 else "")
            + ": its errors cannot be measured there."
        )
    keys = ["task", "metric", "system"] if per_system else ["task", "metric"]
    units = Units.of(table, keys, cluster)
    g = units.judge_names.index(str(gold))
    others = [j for j in range(len(units.judge_names)) if j != g]
    binary = bool(np.isin(table["value"].to_numpy(float), [0.0, 1.0]).all())
    matrix, width = _terms(units, g, others)
    finish = _finisher(len(others), binary)
    point = finish(group_sums(units, matrix, width))[0]  # (group, outputs)
    if n_resamples:
        draws = bootstrap(units, matrix, width, finish, n_resamples, seed)
        se, low, high = spread(draws, alpha)
    else:
        se = low = high = np.full(point.shape, np.nan)
    names = [units.judge_names[j] for j in others]
    res = _tables(units, keys, names, point, se, low, high, matrix, width)
    res.table.attrs.update(
        gold=str(gold),
        alpha=alpha,
        n_resamples=n_resamples,
        seed=seed,
        cluster=cluster,
        binary=binary,
    )
    return res


def _terms(units: Units, g: int, others: list[int]) -> tuple[object, int]:
    """The sparse (unit, group·term) matrix of every judge's and pair's terms."""
    m = len(others)
    a, b = np.triu_indices(m, k=1)
    width = _PER_JUDGE * m + _PER_PAIR * len(a)
    y = units.values[:, g]
    x = units.values[:, others]  # (unit, judge)
    has_y = np.isfinite(y)
    has_x = np.isfinite(x)
    both = has_y[:, None] & has_x
    yy, xx = np.nan_to_num(y)[:, None], np.nan_to_num(x)
    d = np.where(both, xx - yy, 0.0)
    judge = np.stack(
        [
            both,
            both & (xx == 1) & (yy == 1),
            both & (xx == 1) & (yy == 0),
            both & (xx == 0) & (yy == 1),
            both & (xx == 0) & (yy == 0),
            d,
            d**2,
            has_x,
            np.where(has_x, xx, 0.0),
        ],
        axis=-1,
    ).astype(float)  # (unit, judge, term)
    three = both[:, a] & both[:, b]
    ea, eb = np.where(three, d[:, a], 0.0), np.where(three, d[:, b], 0.0)
    pair = np.stack([three, ea, eb, ea**2, eb**2, ea * eb], axis=-1).astype(float)
    block = np.concatenate([judge.reshape(units.n, -1), pair.reshape(units.n, -1)], axis=1)
    rows, terms = np.nonzero(block)
    return unit_matrix(units, width, rows, terms, block[rows, terms]), width


def _finisher(m: int, binary: bool):  # noqa: ANN202 - a closure over the panel's shape
    """(…, group, term) sums → (…, group, output): 7 per judge, then each pair's error
    correlation, then the panel's mean correlation and n_eff."""
    a, _ = np.triu_indices(m, k=1)
    n_pairs = len(a)

    def finish(s: np.ndarray) -> np.ndarray:
        j = s[..., : _PER_JUDGE * m].reshape(*s.shape[:-1], m, _PER_JUDGE)
        p = s[..., _PER_JUDGE * m :].reshape(*s.shape[:-1], n_pairs, _PER_PAIR)
        n, tp, fp, fn, tn, sd, _, n_all, sx = np.moveaxis(j, -1, 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            accuracy = (tp + tn) / n
            sens, spec = tp / (tp + fn), tn / (tn + fp)
            chance = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / n**2
            kappa = (accuracy - chance) / (1 - chance)
            rate = sx / n_all
            youden = sens + spec - 1
            prevalence = np.where(youden > 0, np.clip((rate + spec - 1) / youden, 0, 1), np.nan)
            if not binary:
                accuracy = sens = spec = kappa = prevalence = np.full(n.shape, np.nan)
            bias = sd / n
            pn, sa, sb, saa, sbb, sab = np.moveaxis(p, -1, 0)
            cov = sab / pn - sa * sb / pn**2
            corr = cov / np.sqrt((saa / pn - (sa / pn) ** 2) * (sbb / pn - (sb / pn) ** 2))
            judges = (n_all > 0).sum(axis=-1).astype(float)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # no pair: NaN
                rho = np.nanmean(corr, axis=-1) if n_pairs else np.full(judges.shape, np.nan)
            n_eff = np.where(judges > 1, judges / (1 + (judges - 1) * rho), judges)
        per_judge = np.stack([accuracy, sens, spec, kappa, bias, rate, prevalence], axis=-1)
        flat = per_judge.reshape(*per_judge.shape[:-2], m * len(_JUDGE_OUT))
        return np.concatenate([flat, corr, rho[..., None], n_eff[..., None]], axis=-1)

    return finish


def _tables(units, keys, names, point, se, low, high, matrix, width) -> JudgeErrorsResult:  # noqa: ANN001
    """The judge, pair and panel tables of the finished outputs."""
    m, k = len(names), len(_JUDGE_OUT)
    n_groups = len(units.starts)
    a, b = np.triu_indices(m, k=1)
    sums = group_sums(units, matrix, width)[0]
    counts = sums[:, : _PER_JUDGE * m].reshape(n_groups, m, _PER_JUDGE)
    pair_n = sums[:, _PER_JUDGE * m :].reshape(n_groups, len(a), _PER_PAIR)[..., 0]

    def per_judge(x: np.ndarray) -> np.ndarray:
        return x[:, : m * k].reshape(n_groups, m, k)

    rows = units.groups.iloc[np.repeat(np.arange(n_groups), m)].reset_index(drop=True)
    table = rows.assign(judge=np.tile(names, n_groups), n_gold=counts[..., 0].ravel().astype(int))
    value, spread, lo, hi = (per_judge(x) for x in (point, se, low, high))
    for i, name in enumerate(_JUDGE_OUT):
        table[name] = value[..., i].ravel()
        if name in ("accuracy", "sensitivity", "specificity", "prevalence"):
            table[f"{name}_low"], table[f"{name}_high"] = lo[..., i].ravel(), hi[..., i].ravel()
        if name == "bias":
            table["bias_se"] = spread[..., i].ravel()
    binary_bad = (counts[..., 0] > 0) & ~(value[..., 6] >= 0) & np.isfinite(value[..., 1])
    if binary_bad.any():
        warn_groups(
            "the Rogan–Gladen prevalence is NaN for {n} judge(s) whose sensitivity + "
            "specificity ≤ 1 (no better than chance)",
            table.loc[binary_bad.ravel(), [*keys, "judge"]],
            DegenerateWarning,
        )
    pairs = units.groups.iloc[np.repeat(np.arange(n_groups), len(a))].reset_index(drop=True)
    corr = point[:, m * k : m * k + len(a)]
    correlations = pairs.assign(
        judge_a=np.tile(np.asarray(names)[a], n_groups),
        judge_b=np.tile(np.asarray(names)[b], n_groups),
        error_corr=corr.ravel(),
        n_units=pair_n.ravel().astype(int),
    )
    panel = units.groups.reset_index(drop=True).assign(
        n_judges=(counts[..., 7] > 0).sum(axis=1),
        n_gold=counts[..., 0].max(axis=1).astype(int),
        error_corr=point[:, -2],
        error_corr_low=low[:, -2],
        error_corr_high=high[:, -2],
        n_eff=point[:, -1],
        n_eff_low=low[:, -1],
        n_eff_high=high[:, -1],
    )
    return JudgeErrorsResult(table, panel=panel, correlations=correlations)

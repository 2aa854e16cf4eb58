"""Repeated runs (seeds, folds): the variance between a system's replicates.

A scores table may carry a ``replicate`` column (the random seed or the fold of a
run). Every function pairs each system's per-query scores averaged over its
replicates; :func:`metaeval.effects` also adds the variance that the choice of
replicates leaves in the averaged scores, which averaging hides.

The model, for the score of one system on query q of one task and metric in
replicate r (Bouthillier et al. 2021; the two-way random-effects layout of Searle,
Casella & McCulloch 1992, ch. 4):

    x_qr = μ + a_q + u_r + e_qr,   u_r ~ N(0, σ²_rep),  e_qr ~ N(0, σ²_e),

a_q the query's effect, u_r a shift common to every query of the replicate (the
seed made the whole run better or worse) and e_qr the replicate's noise on one
query. The mean over the R replicates, x̄_q, contains ū (the same for every query)
and ē_q: the query-level variance of the differences, on which the effects'
variances rest, holds ē_q but not ū. So the variance of the mean difference
D̄ = mean_q(x̄_q − ȳ_q) is

    Var(D̄) = S²_d / n + σ²_rep,T / R_T + σ²_rep,C / R_C,

with σ²_rep of each system (its own seeds) estimated by the method of moments from
the replicates' means over the queries M_r and the within-query variance across
replicates:

    σ̂²_rep = max(0, s²_M − w / n̄),

s²_M the sample variance of the M_r over replicates, w the mean over queries of
the sample variance of x_qr across replicates (which estimates σ²_e), n̄ the mean
number of queries of a replicate. Subtracting w/n̄ keeps ē from being counted twice.
A system with one replicate contributes 0. For the standardized effects the added
variance is divided by the square of the effect's standardizer (``smcrp``: the
pooled SD; ``smcc``: the SD of the differences; ``smd``: S_within), for ``rom``
each system's part by its squared mean (delta method); ``corr`` is unaffected (a
shift common to every query does not change a correlation over queries) and gets
nothing added.

References
----------
Bouthillier, X., Delaunay, P., Bronzi, M., Trofimov, A., Nichyporuk, B., Szeto, J.,
Mohammadi Sepahvand, N., Raff, E., Madan, K., Voleti, V., Ebrahimi Kahou, S.,
Michalski, V., Arbel, T., Pal, C., Varoquaux, G., & Vincent, P. (2021). Accounting
for variance in machine learning benchmarks. *Proceedings of Machine Learning and
Systems* 3. (no DOI)
Searle, S. R., Casella, G., & McCulloch, C. E. (1992). *Variance Components*.
Wiley. doi:10.1002/9780470316856
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..schema import REPLICATE, checked_replicates, coerce_scores

__all__ = [
    "replicate_variance", "add_replicate_variance", "has_replicates", "pair_variances",
    "REPLICATES_AVERAGED", "REPLICATES_ADDED",
]  # fmt: skip

#: ``attrs["replicates"]`` of a result computed from replicate-averaged scores.
REPLICATES_AVERAGED = "averaged per query over each system's replicates"
#: ``attrs["replicates"]`` of :func:`metaeval.effects` on a table with replicates.
REPLICATES_ADDED = (
    "averaged per query over each system's replicates; the variance between replicates "
    "added to each effect's variance, with Welch-Satterthwaite df"
)


def replicate_variance(scores: pd.DataFrame) -> pd.DataFrame:
    """Per ``(task, metric, system)``: ``replicates`` (R) and ``sigma2_rep`` (σ̂²_rep).

    See the module docstring. Vectorized with group-bys; a system with one replicate
    has σ̂²_rep = 0.
    """
    df = checked_replicates(coerce_scores(scores))
    cols = ["task", "metric", "system"]
    per_rep = df.groupby([*cols, REPLICATE], observed=True, sort=False)["value"]
    means = per_rep.mean()
    sizes = per_rep.size()
    by_system = means.groupby(level=cols, observed=True, sort=False)
    replicates = by_system.size()
    s2_m = by_system.var(ddof=1)
    n_bar = sizes.groupby(level=cols, observed=True, sort=False).mean()
    within = (
        df.groupby([*cols, "query"], observed=True, sort=False)["value"]
        .var(ddof=1)
        .groupby(level=cols, observed=True, sort=False)
        .mean()
    )
    sigma2 = (s2_m - within.reindex(s2_m.index).fillna(0.0) / n_bar).clip(lower=0.0)
    out = pd.DataFrame({"replicates": replicates, "sigma2_rep": sigma2.fillna(0.0)})
    return out.reset_index()


def add_replicate_variance(
    table: pd.DataFrame, scores: pd.DataFrame, stats_frame: pd.DataFrame, alpha: float
) -> pd.DataFrame:
    """The effects table with the replicates' variance added (see the module docstring).

    ``stats_frame`` has, per ``(task, metric, treatment, control)``, the variances
    ``var_x, var_y, var_d`` and ``r`` of the replicate-averaged scores.
    """
    from .effect_size import add_display

    rep = replicate_variance(scores).set_index(["task", "metric", "system"])
    keys = ["task", "metric"]
    t_index = pd.MultiIndex.from_frame(table[[*keys, "treatment"]])
    c_index = pd.MultiIndex.from_frame(table[[*keys, "control"]])
    per_system = rep["sigma2_rep"] / rep["replicates"]  # σ̂²_rep/R, the scores' units²
    r_t = rep["replicates"].reindex(t_index).to_numpy()
    r_c = rep["replicates"].reindex(c_index).to_numpy()
    add_t = per_system.reindex(t_index).to_numpy()
    add_c = per_system.reindex(c_index).to_numpy()
    stats = stats_frame.set_index([*keys, "treatment", "control"]).reindex(
        pd.MultiIndex.from_frame(table[[*keys, "treatment", "control"]])
    )
    effect_type = str(table["effect_type"].iloc[0]) if len(table) else "md"
    weight_t, weight_c = _standardizers(effect_type, stats, table)
    with np.errstate(invalid="ignore", divide="ignore"):
        # each system's part on the effect's scale
        part_t, part_c = add_t * weight_t, add_c * weight_c
        added = part_t + part_c
        # Welch–Satterthwaite degrees of freedom of the sum: each system's part on R − 1
        # (its σ̂²_rep rests on R replicate means), the query part taken as known, as
        # effects() takes it (normal intervals); nothing added: df = inf, the normal interval
        denom = np.where(part_t > 0, part_t**2 / (r_t - 1), 0.0) + np.where(
            part_c > 0, part_c**2 / (r_c - 1), 0.0
        )
        variance = table["variance"].to_numpy(float) + added
        df = np.where(denom > 0, variance**2 / denom, np.inf)
    out = table.copy()
    out["variance"] = variance
    _t_inference(out, np.sqrt(variance), df, alpha)
    at = out.columns.get_loc("variance") + 1
    out.insert(at, "variance_replicates", added)
    out.insert(at + 1, "replicates_treatment", r_t.astype(np.int64))
    out.insert(at + 2, "replicates_control", r_c.astype(np.int64))
    out.insert(out.columns.get_loc("z") + 1, "df", df)
    add_display(out, ("effect", "ci_low", "ci_high"))
    return out


def _standardizers(effect_type: str, stats: pd.DataFrame, table: pd.DataFrame):
    """What multiplies each system's added variance (in the scores' units²) to put it on
    the effect's scale: 1 for ``md``, 1/standardizer² for the standardized effects,
    1/mean² of the system for ``rom``, 0 for ``corr``."""
    var_x, var_y, var_d, r = (stats[c].to_numpy(float) for c in ("var_x", "var_y", "var_d", "r"))
    with np.errstate(invalid="ignore", divide="ignore"):
        if effect_type == "md":
            return 1.0, 1.0
        if effect_type == "smcrp":
            w = 2 / (var_x + var_y)
        elif effect_type == "smcc":
            w = 1 / var_d
        elif effect_type == "smd":
            w = 2 * (1 - r) / var_d
        elif effect_type == "rom":
            return (1 / table["mean_treatment"].to_numpy() ** 2,
                    1 / table["mean_control"].to_numpy() ** 2)  # fmt: skip
        else:  # corr: a shift common to every query does not change r
            return 0.0, 0.0
    return w, w


def _t_inference(out: pd.DataFrame, se: np.ndarray, df: np.ndarray, alpha: float) -> None:
    """se, z, the t interval and two-sided p-value on ``df`` degrees of freedom, in place."""
    from scipy import stats as sps

    effect = out["effect"].to_numpy(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = effect / se
        crit = sps.t.isf(alpha / 2, df)
        out["se"], out["z"] = se, z
        out["ci_low"], out["ci_high"] = effect - crit * se, effect + crit * se
        out["p_value"] = 2 * sps.t.sf(np.abs(z), df)


def pair_variances(stats) -> pd.DataFrame:
    """``var_x, var_y, var_d, r`` of every (task, metric, treatment, control) from the
    sufficient statistics (shifted sums; the shift cancels, the scale is put back)."""
    n = stats["n"].astype(float)
    scale = stats["scale"] if "scale" in stats else 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        css_x = stats["sum_xx"] - stats["sum_x"] ** 2 / n
        css_y = stats["sum_yy"] - stats["sum_y"] ** 2 / n
        csp = stats["sum_xy"] - stats["sum_x"] * stats["sum_y"] / n
        var_x, var_y = scale**2 * css_x / (n - 1), scale**2 * css_y / (n - 1)
        cov = scale**2 * csp / (n - 1)
        frame = (
            (var_x.rename("var_x").to_dataset())
            .assign(var_y=var_y, var_d=var_x + var_y - 2 * cov, r=cov / np.sqrt(var_x * var_y))
            .to_dataframe()
            .reset_index()
        )
    return frame[["task", "metric", "treatment", "control", "var_x", "var_y", "var_d", "r"]]


def has_replicates(scores: pd.DataFrame) -> bool:
    """Whether a scores table has repeated runs (a ``replicate`` column)."""
    return isinstance(scores, pd.DataFrame) and REPLICATE in scores.columns

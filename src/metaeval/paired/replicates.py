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

Across metrics (:func:`metaeval.effect_covariance`): a replicate's shift is common to
the metrics of a system's run, so the averaged shifts of two metrics covary; their
covariance is estimated by the same method of moments (:func:`replicate_covariance`).

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

from .._options import REPLICATE_DESIGNS, SHARED_COLUMNS, add_display
from ..errors import MetaEvalWarning, OptionError, SchemaError, check_option, warn
from ..schema import REPLICATE, REPLICATE_DESIGN, checked_replicates, coerce_scores, recorded_design

__all__ = [
    "replicate_variance",
    "replicate_design",
    "add_item_variance",
    "SHARED_COLUMNS",
    "add_replicate_variance",
    "has_replicates",
    "pair_variances",
    "REPLICATES_AVERAGED",
    "REPLICATE_COLUMNS",
    "add_replicate_covariance",
    "check_design_has_replicates",
]

#: The columns :func:`add_replicate_variance` adds to the effects table.
REPLICATE_COLUMNS = (
    "variance_replicates",
    "replicates_treatment",
    "replicates_control",
    "df",
    "se_shared_treatment",
    "se_shared_control",
)

#: ``attrs["replicates"]`` of a result computed from replicate-averaged scores.
REPLICATES_AVERAGED = "averaged per query over each system's replicates"


def _in_sum_order(df: pd.DataFrame) -> pd.DataFrame:
    """The rows sorted by (query, replicate): every sum over a replicate's queries or a
    query's replicates then adds in one order, whatever the order of the table's rows."""
    return df.sort_values(["query", REPLICATE], kind="stable")


def _replicate_means(df: pd.DataFrame) -> pd.Series:
    """The mean over its queries of every (task, metric, system, replicate), M_r."""
    cols = ["task", "metric", "system", REPLICATE]
    return df.groupby(cols, observed=True, sort=False)["value"].mean()


def replicate_variance(scores: pd.DataFrame, *, design: str = "nested") -> pd.DataFrame:
    """Per ``(task, metric, system)``: ``replicates`` (R) and ``sigma2_rep`` (σ̂²_rep);
    with ``design="crossed"`` also ``sigma2_shared`` (σ̂²_shared of the system and metric,
    the same on every task).

    See the module docstring. Vectorized with group-bys; a system with one replicate
    has σ̂²_rep = 0.
    """
    df = _in_sum_order(checked_replicates(coerce_scores(scores)))
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
    if design == "crossed":
        shared = _shared_variance(means, s2_m)
        keys = pd.MultiIndex.from_arrays(
            [out.index.get_level_values("metric"), out.index.get_level_values("system")]
        )
        out["sigma2_shared"] = shared.reindex(keys).fillna(0.0).to_numpy()
    return out.reset_index()


def _shared_variance(means: pd.Series, s2_m: pd.Series) -> pd.Series:
    """σ̂²_shared per ``(metric, system)``: the variance of the replicate shifts that every
    task shares (module docstring), from the replicate means M_kr of its K tasks:

        σ̂²_shared = max(0, (K · s²(M̄_·r) − mean_k s²(M_kr)) / (K − 1)),

    s² the sample variance over the replicates and M̄_·r the mean over tasks. Its
    expectation is σ²_shared: the task-specific shifts and the query noise, independent
    across tasks, enter the first term K times smaller than the second. 0 with one task.
    """
    over_tasks = means.groupby(
        level=["metric", "system", REPLICATE], observed=True, sort=False
    ).mean()
    a = over_tasks.groupby(level=["metric", "system"], observed=True, sort=False).var(ddof=1)
    b = s2_m.groupby(level=["metric", "system"], observed=True, sort=False).mean()
    k = s2_m.groupby(level=["metric", "system"], observed=True, sort=False).size()
    with np.errstate(invalid="ignore", divide="ignore"):
        shared = ((k * a - b.reindex(a.index)) / (k - 1)).clip(lower=0.0)
    return shared.where(k > 1, 0.0).fillna(0.0)


def add_item_variance(table: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """:func:`metaeval.means`' table with ``replicates, var_within, var_between`` of every
    (task, metric, system): the variance of an item's score split into the part between
    its replicates (epochs) and the part between items (Miller 2024, §3); see ``means``."""
    df = _in_sum_order(checked_replicates(coerce_scores(scores)))
    cols = ["task", "metric", "system"]
    per_item = df.groupby([*cols, "query"], observed=True, sort=False)["value"]
    items = pd.DataFrame(
        {"mean": per_item.mean(), "var": per_item.var(ddof=1), "r": per_item.size()}
    )
    item = items.groupby(level=cols, observed=True, sort=False)
    parts = pd.DataFrame(
        {
            "replicates": item["r"].max(),
            "var_within": item["var"].mean(),
            "s2_items": item["mean"].var(ddof=1),
        }
    )
    parts["var_between"] = (parts["s2_items"] - parts["var_within"] / parts["replicates"]).clip(
        lower=0.0
    )
    parts.index = pd.MultiIndex.from_frame(parts.index.to_frame(index=False).astype(str))
    parts = parts.reindex(pd.MultiIndex.from_frame(table[cols].astype(str)))
    out = table.copy()
    out["replicates"] = parts["replicates"].to_numpy().astype(np.int64)
    out["var_within"] = parts["var_within"].to_numpy()
    out["var_between"] = parts["var_between"].to_numpy()
    return out


def check_design_has_replicates(scores, design: str | None) -> None:
    """An :class:`~metaeval.OptionError` for a ``replicates=`` design given to a table
    without a ``replicate`` column (an unknown design names the valid ones)."""
    if design is not None and not has_replicates(scores):
        check_option("replicates", design, REPLICATE_DESIGNS)
        raise OptionError(
            f"replicates={design!r} describes a 'replicate' column, which the scores "
            "table does not have."
        )


def replicate_design(scores: pd.DataFrame, design: str | None) -> str:
    """The replicates' design: ``design`` checked, or for None the one the table records,
    or failing that the one it shows, with a warning.

    ``"crossed"`` needs each system's replicate ids (of a metric) to be the same on every
    task it has, each task with all of them (a seed is one run, evaluated on every task):
    otherwise a typed error naming a system and task. None takes the design the table
    records (:func:`metaeval.schema.recorded_design`: its ``replicate_design`` column,
    which :func:`metaeval.io.write_scores` writes, else ``attrs["replicates"]``, which a
    reader sets, :func:`metaeval.io.read_inspect` ``"epochs"``). Else it guesses
    ``"crossed"`` when that holds with two or more tasks (the conservative choice: when
    the seeds were in fact independent per task, σ̂²_shared is near 0 and little is
    added) and ``"nested"`` otherwise, and says so with a
    :class:`~metaeval.MetaEvalWarning`: the guess cannot tell epochs (repeated answers,
    nothing to add) from seeds, and the two give different intervals. ``"epochs"`` is
    taken as given.
    """
    guessed = False
    if design is not None:
        check_option("replicates", design, REPLICATE_DESIGNS)
    else:
        design = recorded_design(scores)  # a column, or what a reader knew (epochs, say)
        guessed = design is None
    if design in ("nested", "epochs"):
        return design
    df = checked_replicates(coerce_scores(scores))
    keys = ["metric", "system"]
    cells = df[[*keys, "task", REPLICATE]].drop_duplicates()
    per = cells.groupby(keys, observed=True, sort=False).agg(
        tasks=("task", "nunique"), ids=(REPLICATE, "nunique"), cells=("task", "size")
    )
    unbalanced = per[per["cells"] != per["tasks"] * per["ids"]]
    if guessed:
        several = bool((per["tasks"] > 1).any())
        crossed = unbalanced.empty and several
        why = "the systems' replicate ids differ between tasks" if several else "one task"
        if crossed:
            why = "every system has the same replicate ids on every task"
        guess = "crossed" if crossed else "nested"
        warn(
            f"The 'replicate' column's design is not stated (no replicates= argument, no "
            f"{REPLICATE_DESIGN!r} column, no attrs['replicates']), so it is guessed "
            f"{guess!r} ({why}); epochs and seeds give different intervals. Say which with "
            "replicates='epochs' (repeated answers to the same items), 'crossed' (one run, a "
            "seed or checkpoint, evaluated on every task) or 'nested' (runs drawn anew for "
            f"each task), or in a {REPLICATE_DESIGN!r} column.",
            MetaEvalWarning,
        )
        return guess
    if not unbalanced.empty:
        metric, system = unbalanced.index[0]
        ids = cells[(cells["metric"] == metric) & (cells["system"] == system)]
        counts = ids.groupby("task", observed=True)[REPLICATE].nunique()
        task = counts.idxmin()
        raise SchemaError(
            f"replicates='crossed' needs each system's replicate ids on every task (one "
            f"run, a seed or checkpoint, evaluated on all tasks), but system {system!r} "
            f"(metric {metric!r}) has {int(counts.min())} of its {int(per.loc[(metric, system), 'ids'])} "
            f"replicate ids on task {task!r}. Pass replicates='nested' if each task's "
            "replicates are runs of their own."
        )
    return "crossed"


def add_replicate_variance(
    table: pd.DataFrame,
    scores: pd.DataFrame,
    stats_frame: pd.DataFrame,
    alpha: float,
    design: str = "nested",
) -> pd.DataFrame:
    """The effects table with the replicates' variance added (see the module docstring).

    ``stats_frame`` has, per ``(task, metric, treatment, control)``, the variances
    ``var_x, var_y, var_d`` and ``r`` of the replicate-averaged scores. With
    ``design="crossed"`` also ``se_shared_treatment, se_shared_control``: the part of
    each system's added standard error that every task shares (what pooling keeps
    from shrinking); ``"epochs"`` adds nothing (the replicates are answers to the same
    item, no run-level shift: the item is the unit).
    """
    if design == "epochs":
        return table
    rep = replicate_variance(scores, design=design).set_index(["task", "metric", "system"])
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
        base = table["variance"].to_numpy(float)
        # clustered effects (effects(cluster=)): the query part rests on C − 1 df
        base_df = table["df"].to_numpy(float) if "df" in table.columns else np.inf
        denom = denom + np.where(np.isfinite(base_df), base**2 / base_df, 0.0)
        variance = base + added
        df = np.where(denom > 0, variance**2 / denom, base_df)
    out = table.copy()
    out["variance"] = variance
    t_inference(out, np.sqrt(variance), df, alpha)
    at = out.columns.get_loc("variance") + 1
    out.insert(at, "variance_replicates", added)
    out.insert(at + 1, "replicates_treatment", r_t.astype(np.int64))
    out.insert(at + 2, "replicates_control", r_c.astype(np.int64))
    if design == "crossed":
        # the shared part on the effect's scale; pool() takes it out of the task's variance
        # (at most the added variance_replicates) and adds it to the pooled one
        shared = rep["sigma2_shared"] / rep["replicates"]
        with np.errstate(invalid="ignore"):
            out.insert(
                at + 3,
                "se_shared_treatment",
                np.sqrt(shared.reindex(t_index).to_numpy() * weight_t),
            )
            out.insert(
                at + 4, "se_shared_control", np.sqrt(shared.reindex(c_index).to_numpy() * weight_c)
            )
    if "df" in out.columns:
        out["df"] = df
    else:
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
            return (
                1 / table["mean_treatment"].to_numpy() ** 2,
                1 / table["mean_control"].to_numpy() ** 2,
            )
        else:  # corr: a shift common to every query does not change r
            return 0.0, 0.0
    return w, w


def t_inference(out: pd.DataFrame, se: np.ndarray, df: np.ndarray, alpha: float) -> None:
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


def _pair_sums(x: np.ndarray, group: np.ndarray, n_groups: int):
    """For rows of ``x`` (row, metric) with NaN where absent, per group and metric pair:
    the count of rows both metrics have, Σ x_a over them, and Σ x_a x_b over them."""
    present = np.isfinite(x)
    v = np.where(present, x, 0.0)
    p = present.astype(float)
    m = x.shape[1]

    def per_group(a: np.ndarray) -> np.ndarray:  # (row, m, m) summed by group
        out = np.zeros((n_groups, m * m))
        np.add.at(out, group, a.reshape(len(a), -1))
        return out.reshape(n_groups, m, m)

    count = per_group(np.einsum("ra,rb->rab", p, p))
    sum_a = per_group(np.einsum("ra,rb->rab", v, p))  # Σ x_a where both are present
    cross = per_group(np.einsum("ra,rb->rab", v, v))
    return count, sum_a, cross


def _pair_covariance(count, sum_a, cross) -> np.ndarray:
    """Sample covariances (ddof = 1) over the rows both metrics have; NaN below 2."""
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = (cross - sum_a * np.swapaxes(sum_a, 1, 2) / count) / (count - 1)
    return np.where(count >= 2, cov, np.nan)


def replicate_covariance(scores: pd.DataFrame) -> pd.DataFrame:
    """Per ``(task, system, metric, metric_b)``: ``cov_rep``, the covariance of the two
    metrics' replicate-averaged shifts ū (the replicate part of their effects'
    covariance, in the scores' units).

    The method of moments of :func:`replicate_variance` for two metrics a, b measured
    in the same replicates: with M_r^a, M_r^b the replicate's means over its queries,

        σ̂_rep,ab = c(M^a, M^b) − w_ab · n̄_ab / (n̄_a n̄_b),

    c the sample covariance over the replicates having both metrics, w_ab the mean over
    queries of the sample covariance of x_qr^a and x_qr^b across replicates (estimating
    the noise's covariance σ_e,ab), n̄_ab the mean number of queries a replicate has for
    both metrics, n̄_a, n̄_b for each; on the diagonal this is σ̂²_rep. σ̂_rep,ab is kept
    within ±√(σ̂²_rep,a σ̂²_rep,b) (σ̂² clipped at 0 as :func:`replicate_variance` does),
    so each metric pair's 2×2 matrix is a covariance matrix, and is 0 with fewer than two
    common replicates. The covariance of the averages ū^a (over R_a replicates) and ū^b
    (over R_b) is σ̂_rep,ab · R_ab / (R_a R_b), R_ab the replicates with both metrics
    (σ̂_rep,ab / R when every replicate has both). Vectorized over every group.
    """
    df = _in_sum_order(checked_replicates(coerce_scores(scores)))
    metric_codes, metrics = pd.factorize(df["metric"], sort=True)
    n_metrics = len(metrics)
    key = ["task", "system"]
    g0_codes, g0 = pd.factorize(pd.MultiIndex.from_frame(df[key].astype(str)))
    rep_codes = pd.factorize(df[REPLICATE])[0]
    query_codes = pd.factorize(df["query"].astype(str))[0]
    # (task, system, replicate) rows: replicate means and query counts per metric
    g1 = pd.factorize(pd.MultiIndex.from_arrays([g0_codes, rep_codes]))[0]
    n1 = g1.max() + 1 if len(g1) else 0
    sums = np.zeros((n1, n_metrics))
    counts = np.zeros((n1, n_metrics))
    np.add.at(sums, (g1, metric_codes), df["value"].to_numpy(float))
    np.add.at(counts, (g1, metric_codes), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / counts, np.nan)
    g1_owner = np.zeros(n1, dtype=np.intp)
    g1_owner[g1] = g0_codes
    n_g0 = len(g0)
    rep_count, rep_sum, rep_cross = _pair_sums(means, g1_owner, n_g0)
    s_m = _pair_covariance(rep_count, rep_sum, rep_cross)
    # queries a replicate has for both metrics, averaged over the replicates with both
    g2 = pd.factorize(pd.MultiIndex.from_arrays([g0_codes, rep_codes, query_codes]))[0]
    n2 = g2.max() + 1 if len(g2) else 0
    cell = np.full((n2, n_metrics), np.nan)
    cell[g2, metric_codes] = df["value"].to_numpy(float)
    g2_rep = np.zeros(n2, dtype=np.intp)
    g2_rep[g2] = g1
    both = np.isfinite(cell).astype(float)
    common = np.zeros((n1, n_metrics * n_metrics))
    np.add.at(common, g2_rep, np.einsum("ra,rb->rab", both, both).reshape(n2, -1))
    common = common.reshape(n1, n_metrics, n_metrics)
    per_g0 = np.zeros((n_g0, n_metrics * n_metrics))
    np.add.at(per_g0, g1_owner, common.reshape(n1, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        n_bar_ab = per_g0.reshape(n_g0, n_metrics, n_metrics) / rep_count
    n_bar = np.diagonal(n_bar_ab, axis1=1, axis2=2)
    # within-query covariance across replicates, averaged over the queries that have one
    g3 = pd.factorize(pd.MultiIndex.from_arrays([g0_codes, query_codes]))[0]
    n3 = g3.max() + 1 if len(g3) else 0
    g2_query = np.zeros(n2, dtype=np.intp)
    g2_query[g2] = g3
    q_cov = _pair_covariance(*_pair_sums(cell, g2_query, n3))
    g3_owner = np.zeros(n3, dtype=np.intp)
    g3_owner[g3] = g0_codes
    q_sum = np.zeros((n_g0, n_metrics * n_metrics))
    q_num = np.zeros((n_g0, n_metrics * n_metrics))
    flat = q_cov.reshape(n3, -1)
    np.add.at(q_sum, g3_owner, np.nan_to_num(flat))
    np.add.at(q_num, g3_owner, np.isfinite(flat).astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        within = np.where(q_num > 0, q_sum / q_num, 0.0).reshape(n_g0, n_metrics, n_metrics)
        sigma = s_m - within * n_bar_ab / (n_bar[:, :, None] * n_bar[:, None, :])
        var = np.maximum(np.nan_to_num(np.diagonal(sigma, axis1=1, axis2=2)), 0.0)
        bound = np.sqrt(var[:, :, None] * var[:, None, :])
        sigma = np.clip(np.nan_to_num(sigma), -bound, bound)
        r = rep_count[:, np.arange(n_metrics), np.arange(n_metrics)]  # R of each metric
        cov = sigma * rep_count / (r[:, :, None] * r[:, None, :])
    cov = np.where(rep_count >= 2, cov, 0.0)
    g, a, b = np.indices((n_g0, n_metrics, n_metrics)).reshape(3, -1)
    names = pd.DataFrame(list(g0), columns=key)
    return pd.DataFrame(
        {
            "task": names["task"].to_numpy()[g],
            "system": names["system"].to_numpy()[g],
            "metric": np.asarray(metrics, dtype=object)[a].astype(str),
            "metric_b": np.asarray(metrics, dtype=object)[b].astype(str),
            "cov_rep": cov[g, a, b],
        }
    )


def add_replicate_covariance(
    cov: pd.DataFrame, effects_rep: pd.DataFrame, scores: pd.DataFrame, stats_frame: pd.DataFrame
) -> pd.DataFrame:
    """:func:`metaeval.effect_covariance`'s table with the replicates' part added.

    ``effects_rep`` is the effects table with the replicate variance added
    (:func:`add_replicate_variance`): its ``variance`` becomes the diagonal, exactly.
    Off the diagonal, each system's covariance of its averaged shifts
    (:func:`replicate_covariance`) is put on the effects' scale by √(w_a w_b), w the
    weights of :func:`add_replicate_variance` (1 for ``md``, 1/standardizer², …), and
    the treatment's and control's parts are added to the queries' covariance.
    """
    rep = replicate_covariance(scores)
    keys = ["task", "metric", "treatment", "control"]
    eff = effects_rep
    stats = stats_frame.set_index(keys).reindex(pd.MultiIndex.from_frame(eff[keys]))
    effect_type = str(eff["effect_type"].iloc[0]) if len(eff) else "md"
    w_t, w_c = _standardizers(effect_type, stats, eff)
    weights = eff[keys + ["variance"]].assign(
        _wt=np.broadcast_to(w_t, len(eff)), _wc=np.broadcast_to(w_c, len(eff))
    )
    out = cov.copy()
    left = weights.rename(columns={"variance": "_va", "_wt": "_wta", "_wc": "_wca"})
    right = weights.rename(
        columns={"metric": "metric_b", "variance": "_vb", "_wt": "_wtb", "_wc": "_wcb"}
    )
    joined = out.merge(left, on=keys, how="left").merge(
        right, on=["task", "metric_b", "treatment", "control"], how="left"
    )
    c_t = joined.merge(
        rep.rename(columns={"system": "treatment"}),
        on=["task", "treatment", "metric", "metric_b"],
        how="left",
    )["cov_rep"]
    c_c = joined.merge(
        rep.rename(columns={"system": "control"}),
        on=["task", "control", "metric", "metric_b"],
        how="left",
    )["cov_rep"]
    with np.errstate(invalid="ignore"):
        added = c_t.to_numpy(float) * np.sqrt(joined["_wta"] * joined["_wtb"]).to_numpy() + (
            c_c.to_numpy(float) * np.sqrt(joined["_wca"] * joined["_wcb"]).to_numpy()
        )
        diag = (out["metric"] == out["metric_b"]).to_numpy()
        va, vb = joined["_va"].to_numpy(float), joined["_vb"].to_numpy(float)
        new = np.where(diag, va, out["cov"].to_numpy(float) + added)
        out["cov"] = new
        out["corr"] = new / np.sqrt(va * vb)
    return out

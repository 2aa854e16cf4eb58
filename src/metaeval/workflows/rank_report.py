"""An autorank-style report: the right omnibus and post-hoc test, in words, table and figure."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, get_args

import numpy as np
import pandas as pd

from .._distributions import studentized_range_isf
from .._options import RankForce, escape_markdown, format_number, format_p, literal_signature
from .._results import Result
from ..engines import any_frame
from ..errors import OptionError, check_alpha, check_option, quote_list
from ..ranking import PosthocResult, TaskScores, clique_runs, friedman, posthoc, task_scores

__all__ = ["RankReport", "rank_report"]

LatexTable = Literal["pairs", "systems"]

# |effect| below these: negligible, small, medium; else large (Cohen 1988; autorank's levels
# for Cohen's d and Akinshin's γ)
_LEVELS = np.array([0.2, 0.5, 0.8])
_MAGNITUDES = np.array(["negligible", "small", "medium", "large"], dtype=object)


def _p(p: float) -> str:
    """A p-value in running text: "p = 0.012", "p < 0.001"."""
    return "p " + format_p(p, 3, equals=True, missing="= NaN")


_num = functools.partial(format_number, missing="NaN")
"""A number in running text (:func:`format_number`, NaN written out)."""


def _names(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _plain(name: Any) -> str:
    return str(name)


def _markdown(name: Any) -> str:
    """A name as literal Markdown text (:func:`metaeval._options.escape_markdown`, the one
    Markdown escaping), so that no HTML, emphasis, link or code span reaches the renderer."""
    return escape_markdown(name)


@dataclass(frozen=True, eq=False, repr=False)
class RankReport(Result):
    """What :func:`rank_report` found: the text for a paper, tables and figures.

    A result object: ``table`` is the tests of every metric,
    ``ranks`` the systems, ``plot(metric)`` the figure of a metric.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per metric: ``metric, n_systems, n_tasks``; the checks
        (``normal``: every system's per-task scores pass Shapiro–Wilk at
        α/k; ``shapiro_min_p_value``; ``homogeneity_test`` "bartlett" or
        "levene" and ``homogeneity_p_value``); the choice (``omnibus``
        "friedman", "rm_anova", or with two systems "ttest" or "wilcoxon";
        ``posthoc`` "nemenyi", "tukey", or "none" with two systems) and the
        test (``statistic`` χ², F, t or Wilcoxon's W, ``df1, df2, p_value``;
        for Friedman also ``f`` and ``f_p_value``, Iman–Davenport's); ``cd``
        (Nemenyi's critical difference, NaN otherwise); ``effect_size_type``
        ("cohen_d" on the parametric route, "akinshin_gamma" on the other)
        and ``ci_of`` ("mean" or "median") of the per-system summary.
    ranks : pandas.DataFrame
        One row per (metric, system), best average rank first: ``mean_rank``;
        ``mean``, ``std``, ``median`` and ``mad`` (median absolute deviation)
        of the per-task scores; ``ci_low, ci_high``, the confidence interval
        of the mean or median (``table.ci_of``, see :func:`rank_report`);
        ``effect_size`` against the best ranked system (positive: the best is
        better) and its ``magnitude``; ``shapiro_p_value``.
    posthoc : dict of str to PosthocResult or pandas.DataFrame
        Per metric, the post-hoc test: the :class:`~metaeval.ranking.PosthocResult` of
        :func:`~metaeval.ranking.posthoc` (Nemenyi), or the table of :func:`metaeval.tukey` over
        tasks (systems × tasks, tasks as blocks, pairs in order of average
        rank), or with two systems of :func:`metaeval.compare` over tasks (the
        t-test or Wilcoxon's test).
    alpha : float
        The level of every test.
    markdown : str
        ``text`` with the names of systems and metrics escaped for Markdown
        (the notebook display).
    """

    ranks: pd.DataFrame
    posthoc: dict[str, PosthocResult | pd.DataFrame]
    text: str
    alpha: float = 0.05
    markdown: str = ""
    kind: ClassVar[str] = ""

    def __str__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return (self.markdown or _markdown(self.text)) + "\n"

    def _repr_html_(self) -> None:
        """None: a notebook shows the report's text (``_repr_markdown_``), not its table."""
        return None

    def _metric(self, metric: str | None) -> str:
        if metric is None:
            if len(self.posthoc) > 1:
                raise OptionError(
                    f"The report has {len(self.posthoc)} metrics; pass `metric` (one of "
                    f"{quote_list(list(self.posthoc))})."
                )
            return next(iter(self.posthoc))
        if metric not in self.posthoc:
            raise OptionError(
                f"No metric {metric!r} in the report; it has {quote_list(list(self.posthoc))}."
            )
        return metric

    def plot(self, metric: str | None = None, **kwargs: Any) -> Any:
        """The figure of a metric: the critical-difference diagram after Friedman
        (:func:`metaeval.plot.critical_difference`), the pairwise heatmap of Tukey's
        HSD after the ANOVA or of the test of two systems (:func:`metaeval.plot.pairwise`),
        its systems in order of average rank."""
        from .. import plot

        metric = self._metric(metric)
        found = self.posthoc[metric]
        if isinstance(found, PosthocResult):
            return found.plot(**kwargs)
        return plot.pairwise(found, **kwargs)

    def to_latex(
        self,
        metric: str | None = None,
        *,
        table: LatexTable = "pairs",
        digits: int = 3,
        label: str | None = None,
    ) -> str:
        """A table of a metric as a LaTeX ``table`` (booktabs).

        ``table="pairs"``: the post-hoc table (or the test of two systems);
        ``table="systems"``: the per-system summary (as autorank's
        ``latex_table``): mean rank, mean and SD or median and MAD, the
        confidence interval, the effect size against the best system and its
        magnitude.
        """
        from .. import report  # the presentation stage, reached when a table is written

        check_option("table", table, ("pairs", "systems"))
        metric = self._metric(metric)
        if table == "systems":
            return self._systems_latex(report, metric, digits, label)
        return self._pairs_latex(report, metric, digits, label)

    def _num(self, digits: int) -> Callable[..., str]:
        def num(x: float, signed: bool = False) -> str:  # signed: may be below zero
            return format_number(x, digits, to="latex", missing="--")

        return num

    def _systems_latex(self, report: Any, metric: str, digits: int, label: str | None) -> str:
        escape, latex_table, text_styler = report.escape, report.latex_table, report.text_styler

        num = self._num(digits)
        row = self.table.set_index("metric").loc[metric]
        part = self.ranks[self.ranks["metric"] == metric]
        on_mean = row["ci_of"] == "mean"
        center, spread = ("mean", "std") if on_mean else ("median", "mad")
        es = "$d$" if row["effect_size_type"] == "cohen_d" else r"$\gamma$"
        cells = pd.DataFrame(
            {
                "System": part["system"].map(lambda v: escape(v, "latex")),
                "Mean rank": part["mean_rank"].map(num),
                ("M" if on_mean else "Md"): part[center].map(lambda v: num(v, True)),
                ("SD" if on_mean else "MAD"): part[spread].map(num),
                "CI": [
                    f"[{num(lo, True)}, {num(hi, True)}]"
                    for lo, hi in zip(part["ci_low"], part["ci_high"], strict=True)
                ],
                es: part["effect_size"].map(lambda v: num(v, True)),
                "Magnitude": part["magnitude"],
            }
        ).reset_index(drop=True)
        k, n = int(row["n_systems"]), int(row["n_tasks"])
        if row["ci_of"] == "median":
            level = format_number(100 * (1 - self.alpha / k), 4, significant=True)
            ci = rf"the {level}\% confidence interval of the median (order statistics, $\alpha/k$)"
        elif row["omnibus"] == "rm_anova":
            ci = (
                "intervals of the mean from Tukey's HSD over systems $\\times$ tasks "
                "(non-overlapping intervals: a significant difference)"
            )
        else:
            level = format_number(100 * (1 - self.alpha / k), 4, significant=True)
            ci = rf"the {level}\% $t$ confidence interval of the mean ($\alpha/k$)"
        what = (
            "mean (M) and standard deviation (SD)"
            if on_mean
            else ("median (Md) and median absolute deviation (MAD)")
        )
        es_name = "Cohen's $d$" if row["effect_size_type"] == "cohen_d" else r"Akinshin's $\gamma$"
        caption = (
            f"Summary of {escape(metric, 'latex')} per system ({k} systems, {n} tasks), "
            f"best average rank first: average rank (1 = best), {what} of the per-task "
            f"scores, {ci}, and {es_name} against the best system (positive: the best is "
            "better) with its magnitude."
        )
        return latex_table(
            text_styler(cells).hide(axis="index"), caption, column_format="lrrrrrl", label=label
        )

    def _pairs_latex(self, report: Any, metric: str, digits: int, label: str | None) -> str:
        escape, latex_table, text_styler = report.escape, report.latex_table, report.text_styler

        found = self.posthoc[metric]
        table = found.table if isinstance(found, PosthocResult) else found
        row = self.table.set_index("metric").loc[metric]
        num = self._num(digits)

        def pval(p: float) -> str:
            return format_p(p, digits, to="latex", missing="--")

        a, b = ("system_a", "system_b") if "system_a" in table.columns else ("treatment", "control")
        if "rank_a" in table.columns:
            cols = {
                "System A": a,
                "System B": b,
                "Rank A": "rank_a",
                "Rank B": "rank_b",
                "$z$": "statistic",
                "$p$ (adj.)": "p_adjusted",
            }
            what = (
                f"Nemenyi post-hoc test after Friedman's test on {escape(metric, 'latex')} "
                f"({int(row['n_systems'])} systems, {int(row['n_tasks'])} tasks): average ranks "
                f"(1 = best), $z$ and the adjusted $p$-value; CD = {num(row['cd'])}"
            )
        elif row["omnibus"] == "rm_anova":
            cols = {
                "System A": a,
                "System B": b,
                "Difference": "diff",
                "$q$": "statistic",
                "$p$ (adj.)": "p_value",
            }
            what = (
                f"Tukey's HSD after a repeated-measures ANOVA on {escape(metric, 'latex')} "
                f"({int(row['n_systems'])} systems, {int(row['n_tasks'])} tasks): difference of the mean "
                "scores (A $-$ B), studentized range statistic and adjusted $p$-value"
            )
        else:
            t_test = row["omnibus"] == "ttest"
            cols = {
                "System A": a,
                "System B": b,
                "Difference": "diff",
                ("$t$" if t_test else "$W$"): "statistic",
                "$p$": "p_value",
            }
            name = "Paired $t$-test" if t_test else "Wilcoxon's signed-rank test (two-sided)"
            what = (
                f"{name} over the tasks on {escape(metric, 'latex')} ({int(row['n_tasks'])} "
                "tasks): difference of the mean scores (A $-$ B), statistic and $p$-value"
            )
        cells = pd.DataFrame(
            {
                head: (
                    table[col].map(lambda v: escape(v, "latex"))
                    if col in (a, b)
                    else table[col].map(pval)
                    if col in ("p_adjusted", "p_value")
                    else table[col].map(lambda v: num(v, signed=True))
                )
                for head, col in cols.items()
            }
        )
        sig = table["significant"] if "significant" in table else table["p_value"] < self.alpha
        cells.loc[sig.to_numpy(), list(cols)[-1]] += r"$^{*}$"
        caption = what + rf"; $^{{*}}$ $p < {format_number(self.alpha)}$."
        return latex_table(
            text_styler(cells).hide(axis="index"),
            caption,
            column_format="ll" + "r" * (len(cols) - 2),
            label=label,
        )


def _checks(data: TaskScores, alpha: float) -> list[tuple[Any, ...]]:
    """Per (metric, system) Shapiro–Wilk p-values; per metric homogeneity of variances."""
    from scipy import stats

    rows = []
    for m, metric in enumerate(data.metrics):  # a handful of tests per metric
        cols = np.flatnonzero(data.sys_in[m])
        x = data.x[m][data.task_in[m]][:, cols]  # (task, system)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant columns: NaN below, not scipy's p = 1
            shapiro = np.where(np.ptp(x, axis=0) > 0, stats.shapiro(x, axis=0).pvalue, np.nan)
        normal = bool(len(x) >= 3 and np.all(np.nan_to_num(shapiro, nan=0.0) >= alpha / len(cols)))
        test = "bartlett" if normal else "levene"
        func = stats.bartlett if normal else stats.levene
        with np.errstate(all="ignore"):
            homog = float(func(*x.T).pvalue)
        rows.append((metric, cols, shapiro, normal, test, homog))
    return rows


@any_frame
@literal_signature
def rank_report(
    scores: pd.DataFrame,
    *,
    alpha: float = 0.05,
    metric: str | Sequence[str] | None = None,
    higher_is_better: bool | Mapping[str, bool] = True,
    force: RankForce | None = None,
) -> RankReport:
    """Compare every system over the tasks as autorank does, and say it in words.

    For each metric, the per-task scores decide the test (Herbold 2020, after
    Demšar 2006). With three or more systems: when every system's scores are
    normal (Shapiro–Wilk at α/k, Bonferroni-corrected) and their variances
    equal (Bartlett's test), a repeated-measures ANOVA with Tukey's HSD;
    otherwise (non-normal scores, Levene's test for the variances) Friedman's
    test with Nemenyi's post-hoc test. With two systems: the paired t-test
    when both are normal, else Wilcoxon's signed-rank test. The result has a
    paragraph for a paper (the post-hoc results as groups of systems that do
    not differ significantly), the tables, the figure and LaTeX tables of the
    pairs and of the systems.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table, as for :func:`friedman`.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    alpha : float, default 0.05
        The level of every test.
    metric, higher_is_better
        As for :func:`friedman`.
    force : {"parametric", "nonparametric"}, optional
        Use this route whatever the checks say (they are still reported).

    Returns
    -------
    RankReport
        ``table`` (the tests of every metric), ``ranks`` (the per-system summary),
        ``posthoc`` (per metric), ``text``, and the methods ``plot(metric)`` and
        ``to_latex(metric, table="pairs" | "systems")``.

    Raises
    ------
    metaeval.OptionError
        Bad ``alpha`` or ``force``.
    metaeval.PairingError
        As :func:`friedman`.

    Notes
    -----
    The choice follows autorank (Herbold 2020): Shapiro–Wilk on each system's
    per-task scores at α/k; Bartlett's test when all are normal, else Levene's;
    with three or more systems the parametric route only when all are normal
    and the variances equal; with two systems the paired t-test when both are
    normal, else Wilcoxon's signed-rank test (Demšar 2006, sec. 3.1).
    ``force`` picks the route.

    Where metaeval differs from autorank:

    - Tukey's HSD here is the one of the two-way layout (systems × tasks,
      :func:`metaeval.tukey` with the tasks as blocks), whose residual
      excludes the differences between tasks, as the repeated-measures
      ANOVA's does; autorank's Tukey test and intervals come from a one-way
      layout, whose residual includes them, so they are wider.
    - Wilcoxon's test of two systems is two-sided (Demšar 2006); autorank
      reports the one-sided p-value in the direction of the larger median
      (half the two-sided one when that is below 1/2).
    - The per-system effect size is against the best ranked system and
      positive when it is better (Cohen's d with the pooled SD on the
      parametric route, Akinshin's γ with the pooled MAD on the other, as
      autorank; magnitudes at 0.2, 0.5 and 0.8); autorank 1.3 relates it to
      the first row of its table, the worst ranked system.

    The per-system interval (``ranks.ci_low, ci_high``): on the
    nonparametric route the order-statistics confidence interval of the
    median at level 1 − α/k (as autorank); with two normal systems the t
    interval of the mean at 1 − α/k (as autorank); after the ANOVA the mean
    ± q_α √(MS_residual / N) / 2, q_α the studentized range's upper α point
    for k means and the residual's degrees of freedom, so that two intervals
    that do not overlap are two systems that Tukey's HSD tells apart (as
    autorank's, with the two-way residual).

    Rank-based tests ignore how large the differences are; see the guide
    "Many systems, many tasks" for what the effect-size meta-analysis adds.

    References
    ----------
    Herbold, S. (2020). Autorank: a Python package for automated ranking of
    classifiers. *Journal of Open Source Software*, 5(48), 2173.
    doi:10.21105/joss.02173

    Examples
    --------
    >>> import metaeval
    >>> from metaeval import rank_report
    >>> report = rank_report(metaeval.datasets.load_demsar())
    >>> report.table[["metric", "normal", "omnibus", "posthoc"]]
      metric  normal   omnibus posthoc
    0    AUC    True  rm_anova   tukey
    >>> print(report)  # doctest: +NORMALIZE_WHITESPACE
    We compared 4 systems on 14 tasks by AUC (higher is better). Shapiro–Wilk
    did not reject normality for any system (α/k = 0.013) and Bartlett's test did
    not reject equal variances (p = 0.993). We therefore used a repeated-measures
    ANOVA (systems × tasks) with Tukey's HSD. The ANOVA rejects the hypothesis that
    all systems perform alike (F(3, 39) = 4.45, p = 0.009). Mean scores, by average
    rank: C4.5+m+cf (0.827), C4.5+m (0.820), C4.5+cf (0.809) and C4.5 (0.805).
    Tukey's HSD (α = 0.05) finds no significant differences within {C4.5+m+cf,
    C4.5+m and C4.5+cf} and within {C4.5+m, C4.5+cf and C4.5}; the other pairs
    differ significantly.
    >>> fig = report.plot()  # Tukey's HSD as a pairwise heatmap, best ranked first
    >>> tex = report.to_latex(label="tab:auc")
    >>> r"\\label{tab:auc}" in tex, tex.count("$^{*}$")  # the caption explains the mark of one pair
    (True, 2)
    >>> report.ranks[["system", "mean_rank", "effect_size", "magnitude"]].round(3)
          system  mean_rank  effect_size   magnitude
    0  C4.5+m+cf      1.929        0.000  negligible
    1     C4.5+m      2.000        0.043  negligible
    2    C4.5+cf      2.929        0.114  negligible
    3       C4.5      3.143        0.142  negligible
    >>> print(report.to_latex(table="systems").splitlines()[4])  # the per-system summary
    System & Mean rank & M & SD & CI & $d$ & Magnitude \\\\
    """
    from ..paired import compare, tukey

    alpha = check_alpha(alpha)
    if force is not None:
        check_option("force", force, get_args(RankForce))
    data = task_scores(
        scores, metric=metric, higher_is_better=higher_is_better, caller="rank_report"
    )
    checks = _checks(data, alpha)
    fried = friedman(scores, metric=list(data.metrics), higher_is_better=higher_is_better)
    ranks = fried.ranks
    summary_rows, shapiro_of, per_system = [], {}, []
    paragraphs: list[str] = []
    markdown: list[str] = []
    tables: dict[str, PosthocResult | pd.DataFrame] = {}
    order = data.order()
    for m, (name, cols, shapiro, normal, htest, hp) in enumerate(checks):
        shapiro_of.update({(name, data.systems[c]): p for c, p in zip(cols, shapiro, strict=True)})
        k, n = int(data.k[m]), int(data.n[m])
        if force is not None:
            parametric = force == "parametric"
        else:
            parametric = normal and (hp >= alpha or k == 2)
        row: dict[str, Any] = {
            "metric": name,
            "n_systems": k,
            "n_tasks": n,
            "normal": normal,
            "shapiro_min_p_value": float(np.nanmin(shapiro))
            if np.isfinite(shapiro).any()
            else np.nan,
            "homogeneity_test": htest,
            "homogeneity_p_value": hp,
        }
        mine = ranks[ranks["metric"] == name]
        best_first = order[m, :k]  # systems by average rank
        block = _task_level(data, m)
        ms_residual, df_residual = np.nan, np.nan
        if k == 2:
            better, worse = data.systems[best_first[0]], data.systems[best_first[1]]
            test = "t" if parametric else "wilcoxon"
            table = compare(block, control=worse, treatment=better, test=test, alpha=alpha)
            table = table.drop(columns="task")
            tables[name] = table
            res = table.iloc[0]
            row.update(
                omnibus="ttest" if parametric else "wilcoxon",
                posthoc="none",
                statistic=res["statistic"],
                df1=n - 1 if parametric else np.nan,
                df2=np.nan,
                p_value=res["p_value"],
                f=np.nan,
                f_p_value=np.nan,
                cd=np.nan,
            )
        elif parametric:
            aov = _anova(block)
            ms_residual, df_residual = aov["ms_residual"], aov["df2"]
            table = _in_rank_order(tukey(block, alpha=alpha).drop(columns="task"), mine["system"])
            tables[name] = table
            row.update(
                omnibus="rm_anova",
                posthoc="tukey",
                statistic=aov["f"],
                df1=aov["df1"],
                df2=aov["df2"],
                p_value=aov["p_value"],
                f=np.nan,
                f_p_value=np.nan,
                cd=np.nan,
            )
        else:
            table = posthoc(
                scores,
                test="nemenyi",
                alpha=alpha,
                metric=name,
                higher_is_better=higher_is_better,
            )
            tables[name] = table
            fr = fried.table.iloc[m]
            row.update(
                omnibus="friedman",
                posthoc="nemenyi",
                statistic=fr["chi2"],
                df1=fr["df"],
                df2=np.nan,
                p_value=fr["p_value"],
                f=fr["f"],
                f_p_value=fr["f_p_value"],
                cd=table.cd(),
            )
        row.update(
            effect_size_type="cohen_d" if parametric else "akinshin_gamma",
            ci_of="mean" if parametric else "median",
        )
        summary_rows.append(row)
        stats_m = _per_system(data, m, parametric, alpha, ms_residual, df_residual)
        per_system.append(stats_m)
        groups = _groups(row, table, stats_m, data.sign[m], alpha)
        for fmt, out in ((_plain, paragraphs), (_markdown, markdown)):
            out.append(
                _paragraph(
                    row, mine, stats_m, groups, table, data.directions[name], alpha, force, fmt
                )
            )
    summary = pd.DataFrame(summary_rows)
    ranks = ranks.merge(
        pd.concat(per_system, ignore_index=True),
        on=["metric", "system"],
        how="left",
        suffixes=("", "_x"),
    ).drop(columns="mean_x")
    ranks["shapiro_p_value"] = [
        shapiro_of.get((a, b), np.nan)
        for a, b in zip(ranks["metric"], ranks["system"], strict=True)
    ]
    return RankReport(
        table=summary,
        ranks=ranks,
        posthoc=tables,
        text="\n\n".join(paragraphs),
        alpha=alpha,
        markdown="\n\n".join(markdown),
    )


def _task_level(data: TaskScores, m: int) -> pd.DataFrame:
    """The per-task scores of metric m as a scores table with the tasks as queries of one
    task, for the two-way (systems × tasks) ANOVA and Tukey's HSD."""
    t, s = np.nonzero(data.task_in[m][:, None] & data.sys_in[m][None, :])
    return pd.DataFrame(
        {
            "task": "over tasks",
            "query": data.tasks[t].to_numpy(dtype=object),
            "system": data.systems[s].to_numpy(dtype=object),
            "metric": data.metrics[m],
            "value": data.x[m, t, s],
        }
    )


def _anova(block: pd.DataFrame) -> dict[str, float]:
    from ..paired import anova

    row = anova(block).set_index("source")
    return {
        "f": float(row.loc["system", "f"]),
        "df1": float(row.loc["system", "df"]),
        "df2": float(row.loc["residual", "df"]),
        "p_value": float(row.loc["system", "p_value"]),
        "ms_residual": float(row.loc["residual", "ms"]),
    }


def _in_rank_order(table: pd.DataFrame, systems: pd.Series) -> pd.DataFrame:
    """A tukey() table with every pair (a, b) written with a ranked better than b and the
    pairs in rank order, so that its heatmap shows the systems best first."""
    pos = pd.Series(np.arange(len(systems)), index=systems.to_numpy())
    pa, pb = pos[table["system_a"]].to_numpy(), pos[table["system_b"]].to_numpy()
    swap = pa > pb
    out = table.copy()
    out.loc[swap, ["system_a", "system_b"]] = table.loc[swap, ["system_b", "system_a"]].to_numpy()
    for col in ("diff", "effect_size"):
        out.loc[swap, col] = -table.loc[swap, col]
    out.loc[swap, "ci_low"] = -table.loc[swap, "ci_high"]
    out.loc[swap, "ci_high"] = -table.loc[swap, "ci_low"]
    key = np.minimum(pa, pb) * len(systems) + np.maximum(pa, pb)
    return out.iloc[np.argsort(key, kind="stable")].reset_index(drop=True)


def _per_system(
    data: TaskScores, m: int, parametric: bool, alpha: float, ms: float, df: float
) -> pd.DataFrame:
    """Per system of metric m, best average rank first: the spread, the interval, the effect
    size against the best system and its magnitude (autorank's summary of populations)."""
    from scipy import stats

    k, n = int(data.k[m]), int(data.n[m])
    best_first = data.order()[m, :k]
    x = data.x[m][data.task_in[m]][:, best_first]  # (task, system), best first
    mean, std = x.mean(axis=0), x.std(axis=0, ddof=1)
    median = np.median(x, axis=0)
    mad = stats.median_abs_deviation(x, axis=0)
    level = alpha / k
    if not parametric:  # order statistics around the median (autorank's interval)
        z = stats.norm.ppf(1 - level / 2)
        lo = max(0.0, n / 2 - z * np.sqrt(n / 2))
        hi = min(n - 1.0, 1 + n / 2 + z * np.sqrt(n / 2))
        ordered = np.sort(x, axis=0)
        ci_low, ci_high = ordered[int(round(lo))], ordered[int(round(hi))]
    else:
        if k == 2:
            half = stats.t.ppf(1 - level / 2, n - 1) * std / np.sqrt(n)
        else:  # Tukey's simultaneous intervals
            half = np.full(k, studentized_range_isf(alpha, k, df)[()] * np.sqrt(ms / n) / 2)
        ci_low, ci_high = mean - half, mean + half
    if parametric:  # Cohen's d, pooled SD (equal n)
        diff, spread = mean[0] - mean, np.sqrt((std[0] ** 2 + std**2) / 2)
    else:  # Akinshin's γ, pooled MAD scaled as the SD of a normal
        scaled = mad * 1.4826
        diff, spread = median[0] - median, np.sqrt((scaled[0] ** 2 + scaled**2) / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        effect = np.where(diff == 0, 0.0, data.sign[m] * diff / spread)
    magnitude = np.where(
        np.isnan(effect), "", _MAGNITUDES[np.searchsorted(_LEVELS, np.abs(effect), side="right")]
    )
    return pd.DataFrame(
        {
            "metric": data.metrics[m],
            "system": data.systems[best_first].to_numpy(dtype=object),
            "mean": mean,
            "std": std,
            "median": median,
            "mad": mad,
            "ci_low": ci_low,
            "ci_high": ci_high,
            "effect_size": effect,
            "magnitude": magnitude.astype(object),
        }
    )


def _groups(
    row: dict[str, Any],
    table: PosthocResult | pd.DataFrame,
    per_system: pd.DataFrame,
    sign: float,
    alpha: float,
) -> list[list[str]]:
    """The cliques of the post-hoc test: maximal runs of systems (by average rank after
    Friedman, by mean after the ANOVA) of which no two differ significantly."""
    if row["posthoc"] == "none":
        return []
    if isinstance(table, PosthocResult):  # Nemenyi
        found = table.cliques(alpha)
    else:  # Tukey: runs in order of the mean (best first)
        position = pd.Series(-sign * per_system["mean"].to_numpy(), index=per_system["system"])
        found = clique_runs(
            pd.DataFrame(
                {
                    "metric": row["metric"],
                    "system_a": table["system_a"],
                    "system_b": table["system_b"],
                    "rank_a": position[table["system_a"]].to_numpy(),
                    "rank_b": position[table["system_b"]].to_numpy(),
                    "p_adjusted": table["p_value"],
                }
            ),
            alpha=alpha,
            control=None,
        )
    return [list(part["system"]) for _, part in found.groupby("clique", sort=True)]


def _paragraph(
    row: dict[str, Any],
    ranks: pd.DataFrame,
    per_system: pd.DataFrame,
    groups: list[list[str]],
    table: PosthocResult | pd.DataFrame,
    higher: bool,
    alpha: float,
    force: str | None,
    fmt: Callable[[Any], str],
) -> str:
    k, n, metric = row["n_systems"], row["n_tasks"], fmt(row["metric"])
    direction = "higher" if higher else "lower"
    out = [f"We compared {k} systems on {n} tasks by {metric} ({direction} is better)."]
    level = alpha / k
    if row["normal"]:
        if k == 2:
            out.append(
                f"Shapiro–Wilk did not reject normality for either system (α/k = {_num(level, 3)})."
            )
        else:
            name = "Bartlett" if row["homogeneity_test"] == "bartlett" else "Levene"
            verdict = "did not reject" if row["homogeneity_p_value"] >= alpha else "rejected"
            out.append(
                f"Shapiro–Wilk did not reject normality for any system (α/k = {_num(level, 3)}) and "
                f"{name}'s test {verdict} equal variances ({_p(row['homogeneity_p_value'])})."
            )
    else:
        out.append(
            "Shapiro–Wilk rejected normality for at least one system "
            f"(smallest {_p(row['shapiro_min_p_value'])}, α/k = {_num(level, 3)})."
        )
    how = "We therefore used" if force is None else f"As requested ({force}), we used"
    rejected = row["p_value"] < alpha
    verdict = "rejects" if rejected else "does not reject"
    if row["omnibus"] in ("ttest", "wilcoxon") and isinstance(table, pd.DataFrame):
        res = table.iloc[0]
        better, worse = fmt(res["treatment"]), fmt(res["control"])
        if row["omnibus"] == "ttest":
            test, stat = "the paired t-test", f"t({n - 1}) = {_num(row['statistic'], 2)}"
        else:
            test, stat = "Wilcoxon's signed-rank test (two-sided)", f"W = {_num(row['statistic'])}"
        out.append(
            f"{how} {test} over the tasks (Demšar 2006). It {verdict} the hypothesis that both "
            f"systems perform alike ({stat}, {_p(row['p_value'])})"
            + (
                f": {better} is better than {worse} (mean difference {_num(res['diff'], 3, significant=True, signed=True)})."
                if rejected
                else "."
            )
        )
        return " ".join(out)
    if row["omnibus"] == "friedman":
        out.append(
            f"{how} Friedman's test with Nemenyi's post-hoc test (Demšar 2006). Friedman's test "
            f"{verdict} the hypothesis that all systems perform alike "
            f"(χ²({_num(row['df1'], 0)}) = {_num(row['statistic'], 2)}, {_p(row['p_value'])}; "
            f"Iman–Davenport F({k - 1}, {(k - 1) * (n - 1)}) = {_num(row['f'], 2)}, "
            f"{_p(row['f_p_value'])})."
        )
        listed = _names(
            [
                f"{fmt(s)} ({_num(r, 2)})"
                for s, r in zip(ranks["system"], ranks["mean_rank"], strict=True)
            ]
        )
        out.append(
            f"Average ranks (1 = best): {listed}. Systems whose average ranks differ by more "
            f"than the critical difference CD = {_num(row['cd'], 2)} differ significantly."
        )
        test = "Nemenyi's test"
    else:
        out.append(
            f"{how} a repeated-measures ANOVA (systems × tasks) with Tukey's HSD. The ANOVA "
            f"{verdict} the hypothesis that all systems perform alike "
            f"(F({_num(row['df1'], 0)}, {_num(row['df2'], 0)}) = {_num(row['statistic'], 2)}, "
            f"{_p(row['p_value'])})."
        )
        listed = _names(
            [
                f"{fmt(s)} ({_num(v, 3)})"
                for s, v in zip(per_system["system"], per_system["mean"], strict=True)
            ]
        )
        out.append(f"Mean scores, by average rank: {listed}.")
        test = "Tukey's HSD"
    if not rejected:
        out.append("As the omnibus test does not reject, the post-hoc results are not interpreted.")
        return " ".join(out)
    if len(groups) == 1 and len(groups[0]) == k:
        out.append(
            f"{test} (α = {_num(alpha)}) finds no pair of systems that differs significantly."
        )
    elif not groups:
        out.append(
            f"{test} (α = {_num(alpha)}) finds every pair of systems to differ significantly."
        )
    else:
        within = " and within ".join("{" + _names([fmt(s) for s in g]) + "}" for g in groups)
        out.append(
            f"{test} (α = {_num(alpha)}) finds no significant differences within {within}; the "
            "other pairs differ significantly."
        )
    return " ".join(out)

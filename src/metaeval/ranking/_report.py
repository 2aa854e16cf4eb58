"""An autorank-style report: the right omnibus and post-hoc test, in words, table and figure."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..errors import OptionError, check_alpha, check_option
from ._friedman import TaskScores, friedman, posthoc, task_scores

__all__ = ["RankReport", "rank_report"]

Force = Literal["parametric", "nonparametric"]


def _p(p: float) -> str:
    """A p-value in running text."""
    if not np.isfinite(p):
        return "p = NaN"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _names(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


@dataclass
class RankReport:
    """What :func:`rank_report` found: the text for a paper, tables and figures.

    Attributes
    ----------
    text : str
        One paragraph per metric, ready for a paper (``str(report)`` gives it).
    summary : pandas.DataFrame
        One row per metric: ``metric, k, n_tasks``; the checks
        (``normal``: every system's per-task scores pass Shapiro–Wilk at
        α/k; ``shapiro_min_p``; ``homogeneity_test`` "bartlett" or
        "levene" and ``homogeneity_p``); the choice (``omnibus``
        "friedman" or "rm_anova", ``posthoc`` "nemenyi" or "tukey") and the
        omnibus test (``statistic`` χ² or F, ``df1, df2, p_value``;
        for Friedman also ``f`` and ``f_pvalue``, Iman–Davenport's); ``cd``
        (Nemenyi's critical difference, NaN for Tukey).
    ranks : pandas.DataFrame
        One row per (metric, system), best average rank first: ``mean_rank``,
        ``mean``, ``std`` and ``median`` of the per-task scores, and
        ``shapiro_p``.
    posthoc : dict of str to pandas.DataFrame
        Per metric, the post-hoc table: :func:`posthoc` (Nemenyi) or
        :func:`metaeval.tukey` over tasks (systems × tasks, tasks as blocks).
    alpha : float
        The level of every test.
    """

    text: str
    summary: pd.DataFrame
    ranks: pd.DataFrame
    posthoc: dict[str, pd.DataFrame] = field(repr=False)
    alpha: float = 0.05

    def __str__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return self.text + "\n"

    def _metric(self, metric: str | None) -> str:
        if metric is None:
            if len(self.posthoc) > 1:
                raise OptionError(
                    f"The report has {len(self.posthoc)} metrics; pass `metric` (one of "
                    f"{list(self.posthoc)})."
                )
            return next(iter(self.posthoc))
        if metric not in self.posthoc:
            raise OptionError(f"No metric {metric!r} in the report; it has {list(self.posthoc)}.")
        return metric

    def figure(self, metric: str | None = None, **kwargs: Any) -> Any:
        """The figure of a metric: the critical-difference diagram after Friedman
        (:func:`metaeval.plot.critical_difference`), the pairwise heatmap of Tukey's
        HSD after the ANOVA (:func:`metaeval.plot.pairwise`)."""
        from .. import plot

        metric = self._metric(metric)
        table = self.posthoc[metric]
        if "rank_a" in table.columns:
            return plot.critical_difference(table, **kwargs)
        return plot.pairwise(table, **kwargs)

    def to_latex(
        self, metric: str | None = None, *, digits: int = 3, label: str | None = None
    ) -> str:
        """The post-hoc table of a metric as a LaTeX ``table`` (booktabs)."""
        from ..report import escape
        from ..report._tables import latex_table, text_styler

        metric = self._metric(metric)
        table = self.posthoc[metric]
        row = self.summary.set_index("metric").loc[metric]

        def num(x: float, signed: bool = False) -> str:
            text = f"{x:.{digits}f}" if np.isfinite(x) else "--"
            return "$-$" + text[1:] if signed and text.startswith("-") else text

        def pval(p: float) -> str:
            floor = 10.0**-digits
            return f"$<${floor:.{digits}f}" if p < floor else num(p)

        if "rank_a" in table.columns:
            cols = {"System A": "system_a", "System B": "system_b", "Rank A": "rank_a",
                    "Rank B": "rank_b", "$z$": "statistic", "$p$ (adj.)": "p_adjusted"}  # fmt: skip
            what = (
                f"Nemenyi post-hoc test after Friedman's test on {escape(metric, 'latex')} "
                f"({int(row['k'])} systems, {int(row['n_tasks'])} tasks): average ranks "
                f"(1 = best), $z$ and the adjusted $p$-value; CD = {num(row['cd'])}"
            )
        else:
            cols = {"System A": "system_a", "System B": "system_b", "Difference": "diff",
                    "$q$": "statistic", "$p$ (adj.)": "p_value"}  # fmt: skip
            what = (
                f"Tukey's HSD after a repeated-measures ANOVA on {escape(metric, 'latex')} "
                f"({int(row['k'])} systems, {int(row['n_tasks'])} tasks): difference of the mean "
                "scores (A $-$ B), studentized range statistic and adjusted $p$-value"
            )
        cells = pd.DataFrame(
            {
                head: (
                    table[col].map(lambda v: escape(v, "latex"))
                    if col in ("system_a", "system_b")
                    else table[col].map(pval)
                    if col in ("p_adjusted", "p_value")
                    else table[col].map(lambda v: num(v, signed=True))
                )
                for head, col in cols.items()
            }
        )
        sig = table["significant"] if "significant" in table else table["p_value"] < self.alpha
        cells.loc[sig.to_numpy(), list(cols)[-1]] += r"$^{*}$"
        caption = what + rf"; $^{{*}}$ $p < {self.alpha:g}$."
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


def rank_report(
    scores: pd.DataFrame,
    *,
    alpha: float = 0.05,
    metric: str | Sequence[str] | None = None,
    higher_is_better: bool | Mapping[str, bool] = True,
    force: Force | None = None,
) -> RankReport:
    """Compare every system over the tasks as autorank does, and say it in words.

    For each metric, the per-task scores decide the test (Herbold 2020, after
    Demšar 2006): when every system's scores are normal (Shapiro–Wilk at
    α/k, Bonferroni-corrected) and their variances equal (Bartlett's test), a
    repeated-measures ANOVA with Tukey's HSD; otherwise (non-normal scores,
    Levene's test for the variances) Friedman's test with Nemenyi's post-hoc
    test. The result has a paragraph for a paper, the tables, the figure and a
    LaTeX post-hoc table.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table, as for :func:`friedman`.
    alpha : float, default 0.05
        The level of every test.
    metric, higher_is_better
        As for :func:`friedman`.
    force : {"parametric", "nonparametric"}, optional
        Use this route whatever the checks say (they are still reported).

    Returns
    -------
    RankReport
        ``text``, ``summary``, ``ranks``, ``posthoc`` (per metric), and the
        methods ``figure(metric)`` and ``to_latex(metric)``.

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
    the parametric route only when all are normal and the variances equal,
    and only with 3 or more systems. Unlike autorank, Tukey's HSD here is the
    one of the two-way layout (systems × tasks, :func:`metaeval.tukey` with the
    tasks as blocks), whose residual excludes the differences between tasks,
    as the repeated-measures ANOVA's does; autorank's intervals come from a
    one-way layout. Rank-based tests ignore how large the differences are;
    see the guide "Many systems, many tasks" for what the effect-size
    meta-analysis adds.

    References
    ----------
    Herbold, S. (2020). Autorank: a Python package for automated ranking of
    classifiers. *Journal of Open Source Software*, 5(48), 2173.
    doi:10.21105/joss.02173

    Examples
    --------
    >>> import metaeval
    >>> from metaeval.ranking import rank_report
    >>> report = rank_report(metaeval.datasets.load_demsar())
    >>> report.summary[["metric", "normal", "omnibus", "posthoc"]]
      metric  normal   omnibus posthoc
    0    AUC    True  rm_anova   tukey
    >>> print(report)  # doctest: +NORMALIZE_WHITESPACE
    We compared 4 systems on 14 tasks by AUC (higher is better). Shapiro–Wilk
    did not reject normality for any system (α/k = 0.013) and Bartlett's test did
    not reject equal variances (p = 0.993). We therefore used a repeated-measures
    ANOVA (systems × tasks) with Tukey's HSD. The ANOVA rejects the hypothesis that
    all systems perform alike (F(3, 39) = 4.45, p = 0.009). Significant
    differences: C4.5+m+cf is better than C4.5.
    >>> fig = report.figure()  # Tukey's HSD as a pairwise heatmap
    >>> tex = report.to_latex(label="tab:auc")
    >>> r"\\label{tab:auc}" in tex, tex.count("$^{*}$")  # the caption explains the mark of one pair
    (True, 2)
    """
    from .. import tukey

    alpha = check_alpha(alpha)
    if force is not None:
        check_option("force", force, ("parametric", "nonparametric"))
    data = task_scores(
        scores, metric=metric, higher_is_better=higher_is_better, caller="rank_report"
    )
    checks = _checks(data, alpha)
    fried = friedman(scores, metric=list(data.metrics), higher_is_better=higher_is_better)
    ranks = fried.attrs["ranks"]
    summary_rows, shapiro_of, paragraphs = [], {}, []
    tables: dict[str, pd.DataFrame] = {}
    for m, (name, cols, shapiro, normal, htest, hp) in enumerate(checks):
        shapiro_of.update({(name, data.systems[c]): p for c, p in zip(cols, shapiro, strict=True)})
        k, n = int(data.k[m]), int(data.n[m])
        parametric = (normal and hp >= alpha) if force is None else force == "parametric"
        parametric = parametric and k >= 3
        row: dict[str, Any] = {"metric": name, "k": k, "n_tasks": n, "normal": normal,
                               "shapiro_min_p": float(np.nanmin(shapiro)) if np.isfinite(shapiro).any() else np.nan,
                               "homogeneity_test": htest, "homogeneity_p": hp}  # fmt: skip
        mine = ranks[ranks["metric"] == name]
        if parametric:
            block = _task_level(data, m)
            aov = _anova(block)
            table = tukey(block, alpha=alpha).drop(columns="task")
            tables[name] = table
            row.update(omnibus="rm_anova", posthoc="tukey", statistic=aov["f"], df1=aov["df1"],
                       df2=aov["df2"], p_value=aov["p_value"], f=np.nan, f_pvalue=np.nan, cd=np.nan)  # fmt: skip
        else:
            table = posthoc(scores, method="nemenyi", alpha=alpha, metric=name,
                            higher_is_better=higher_is_better)  # fmt: skip
            tables[name] = table
            fr = fried.iloc[m]
            row.update(omnibus="friedman", posthoc="nemenyi", statistic=fr["chi2"], df1=fr["df"],
                       df2=np.nan, p_value=fr["p_value"], f=fr["f"], f_pvalue=fr["f_pvalue"],
                       cd=float(table["cd"].iloc[0]))  # fmt: skip
        summary_rows.append(row)
        paragraphs.append(_paragraph(row, mine, table, data.directions[name], alpha, force))
    summary = pd.DataFrame(summary_rows)
    x_stats = _spread(data)
    ranks = ranks.merge(x_stats, on=["metric", "system"], how="left")
    ranks["shapiro_p"] = [
        shapiro_of.get((a, b), np.nan)
        for a, b in zip(ranks["metric"], ranks["system"], strict=True)
    ]
    return RankReport("\n\n".join(paragraphs), summary, ranks, tables, alpha)


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
    from .. import anova

    row = anova(block).set_index("source")
    return {
        "f": float(row.loc["system", "f"]),
        "df1": float(row.loc["system", "df"]),
        "df2": float(row.loc["residual", "df"]),
        "p_value": float(row.loc["system", "p_value"]),
    }


def _spread(data: TaskScores) -> pd.DataFrame:
    m, s = np.nonzero(data.sys_in)
    x = np.where(data.task_in[m][:, :, None], data.x[m, :, s][:, :, None], np.nan)[:, :, 0]
    return pd.DataFrame(
        {
            "metric": data.metrics[m].to_numpy(dtype=object),
            "system": data.systems[s].to_numpy(dtype=object),
            "std": np.nanstd(x, axis=1, ddof=1),
            "median": np.nanmedian(x, axis=1),
        }
    )


def _paragraph(
    row: dict[str, Any],
    ranks: pd.DataFrame,
    table: pd.DataFrame,
    higher: bool,
    alpha: float,
    force: str | None,
) -> str:
    k, n, metric = row["k"], row["n_tasks"], row["metric"]
    direction = "higher" if higher else "lower"
    out = [f"We compared {k} systems on {n} tasks by {metric} ({direction} is better)."]
    level = alpha / k
    if row["normal"]:
        name = "Bartlett" if row["homogeneity_test"] == "bartlett" else "Levene"
        verdict = "did not reject" if row["homogeneity_p"] >= alpha else "rejected"
        out.append(
            f"Shapiro–Wilk did not reject normality for any system (α/k = {level:.3f}) and "
            f"{name}'s test {verdict} equal variances ({_p(row['homogeneity_p'])})."
        )
    else:
        out.append(
            "Shapiro–Wilk rejected normality for at least one system "
            f"(smallest {_p(row['shapiro_min_p'])}, α/k = {level:.3f})."
        )
    how = "We therefore used" if force is None else f"As requested ({force}), we used"
    rejected = row["p_value"] < alpha
    verdict = "rejects" if rejected else "does not reject"
    if row["omnibus"] == "friedman":
        out.append(
            f"{how} Friedman's test with Nemenyi's post-hoc test (Demšar 2006). Friedman's test "
            f"{verdict} the hypothesis that all systems perform alike "
            f"(χ²({row['df1']:.0f}) = {row['statistic']:.2f}, {_p(row['p_value'])}; "
            f"Iman–Davenport F({k - 1}, {(k - 1) * (n - 1)}) = {row['f']:.2f}, "
            f"{_p(row['f_pvalue'])})."
        )
        listed = ", ".join(
            f"{s} ({r:.2f})" for s, r in zip(ranks["system"], ranks["mean_rank"], strict=True)
        )
        out.append(
            f"Average ranks (1 = best): {listed}. Systems whose average ranks differ by more "
            f"than the critical difference CD = {row['cd']:.2f} (α = {alpha:g}) differ "
            "significantly."
        )
        sig = table[table["significant"]]
        better = [
            f"{a} is better than {b}" for a, b in zip(sig["system_a"], sig["system_b"], strict=True)
        ]
    else:
        out.append(
            f"{how} a repeated-measures ANOVA (systems × tasks) with Tukey's HSD. The ANOVA "
            f"{verdict} the hypothesis that all systems perform alike "
            f"(F({row['df1']:.0f}, {row['df2']:.0f}) = {row['statistic']:.2f}, {_p(row['p_value'])})."
        )
        sig = table[table["p_value"] < alpha]
        better = [
            f"{a} is better than {b}" if (d > 0) == higher else f"{b} is better than {a}"
            for a, b, d in zip(sig["system_a"], sig["system_b"], sig["diff"], strict=True)
        ]
    if not rejected:
        out.append("As the omnibus test does not reject, the post-hoc results are not interpreted.")
    elif better:
        out.append("Significant differences: " + _names(better) + ".")
    else:
        out.append("No pair of systems differs significantly in the post-hoc test.")
    return " ".join(out)

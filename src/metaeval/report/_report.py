"""One report of a multi-task evaluation: the same numbers in Markdown, JSON, LaTeX and HTML.

:func:`build_report` runs the analyses a leaderboard needs (per-task means, tests against
the control(s), pooled effects, rank intervals) and returns a :class:`Report` whose
methods paragraph is written from the report's own options and numbers, so the text
cannot contradict the tables. Every number a format shows goes through the one rounding
function (:func:`metaeval._options.format_number` / ``format_p``).
"""

from __future__ import annotations

import base64
import dataclasses
import html
import io
import json
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .._options import (
    ADJUSTMENTS,
    CI_METHODS,
    COMPARE_TESTS,
    DEFAULT_EFFECT,
    EFFECT_TYPES,
    POOL_METHODS,
    Adjustment,
    CIMethod,
    CompareTest,
    EffectType,
    PoolMethod,
    counts_as_int,
    effect_scale,
    format_cell,
    format_number,
    is_p_column,
    literal_signature,
)
from .._results import Result
from ..errors import OptionError, check_alpha, check_option, excerpt
from ..schema.frames import any_frame
from ._tables import ADJUST_NAMES, TEST_NAMES, escape, to_latex

__all__ = ["Report", "build_report"]

_LATEX_TEXT = {"τ²": r"$\tau^2$", "–": "--", "§": r"\S{}", "×": r"$\times$"}
"""The methods paragraph's few non-ASCII signs, in plain LaTeX (no package needed)."""
_PARTS = ("table", "tests", "pooled", "ranks")
_TITLES = {
    "table": "Per-task means",
    "tests": "Tests against the control",
    "pooled": "Pooled effects",
    "ranks": "Ranks",
}
_CITE = {
    "REML": "restricted maximum likelihood (Viechtbauer 2005)",
    "ML": "maximum likelihood (Viechtbauer 2005)",
    "DL": "DerSimonian and Laird (1986)",
    "PM": "Paule and Mandel (1982)",
    "HE": "Hedges and Olkin (1985)",
    "HS": "Hunter and Schmidt (2004)",
    "SJ": "Sidik and Jonkman (2005)",
    "EB": "empirical Bayes (Morris 1983)",
    "EE": "a common-effect (equal-effects) model",
    "FE": "a common-effect (fixed-effects) model",
}
_TEST_CITE = {
    "t": "Student 1908",
    "wilcoxon": "Wilcoxon 1945",
    "sign": "Dixon and Mood 1946",
    "randomization": "Fisher 1935; Smucker, Allan and Carterette 2007",
    "bootstrap": "Efron and Tibshirani 1993",
}
_ADJUST_CITE = {
    "holm": "Holm 1979",
    "bonferroni": "Dunn 1961",
    "fdr_bh": "Benjamini and Hochberg 1995",
    "maxt": "Westfall and Young 1993; Boytsov, Belova and Westfall 2013",
}


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Report(Result):
    """A leaderboard report: per-task means, tests, pooled effects, ranks and its methods.

    Made by :func:`build_report` (``scores.meta.report(...)``). ``table`` holds the
    per-task means with their intervals (:func:`metaeval.means`); ``tests`` the tests
    against the control(s) (:func:`metaeval.compare`), ``effects`` and ``pooled`` the
    per-task and pooled effects (:func:`metaeval.effects`, :func:`metaeval.pool`), all
    None without a control; ``ranks`` the rank intervals and tie groups
    (:func:`metaeval.ranking.rank_intervals`); ``methods`` the methods paragraph, written
    from the options (``options``) and the tables above.
    """

    tests: pd.DataFrame | None = None
    effects: pd.DataFrame | None = None
    pooled: pd.DataFrame | None = None
    ranks: pd.DataFrame | None = None
    methods: str = ""
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    kind: ClassVar[str] = "report"

    # ------------------------------------------------------------------ parts
    def parts(self) -> dict[str, pd.DataFrame]:
        """The report's tables by name, in the order they are shown (absent ones left out)."""
        found = {name: getattr(self, name) for name in _PARTS}
        return {k: v for k, v in found.items() if v is not None}

    # ------------------------------------------------------------------ formats
    def to_markdown(self, *, digits: int = 3) -> str:
        """The report as GitHub-flavoured Markdown: a leaderboard card per metric, the
        report's tables and the methods paragraph.

        The card has a row per system, best first: its mean over the tasks (the ranks'
        ``score``), the queries ``n``, the standard error and confidence interval of
        each task's mean, the rank with its interval ``[low, high]`` and its tie group.
        """
        out = ["# Evaluation report", ""]
        out += _cards(self, digits)
        for name, frame in self.parts().items():
            out += [f"## {_TITLES[name]}", "", *_md_table(frame, digits), ""]
        out += ["## Methods", "", self.methods, ""]
        return "\n".join(out)

    def to_json(self, *, indent: int | None = 2) -> str:
        """The report's numbers, machine-readable: every table as a list of records
        (floats at full precision, NaN as null), the options and the methods paragraph."""
        doc: dict[str, Any] = {"kind": "report", "options": _plain(self.options)}
        for name in _PARTS:
            frame = getattr(self, name)
            doc[name] = None if frame is None else _records(frame)
        doc["methods"] = self.methods
        return json.dumps(doc, indent=indent, allow_nan=False)

    def to_latex(self, *, digits: int = 3, **kwargs: Any) -> str:  # type: ignore[override]
        r"""The report's tables as LaTeX ``table`` floats (booktabs; ``\usepackage{booktabs,
        graphicx}``) through :func:`metaeval.report.to_latex`, every name escaped, then the
        methods paragraph."""
        tables = [
            to_latex(frame, layout="table", digits=digits, caption=_TITLES[name], **kwargs)
            for name, frame in self.parts().items()
        ]
        text = escape(self.methods, "latex")
        for plain, latex in _LATEX_TEXT.items():
            text = text.replace(plain, latex)
        return "\n".join([*tables, r"\paragraph{Methods}", text, ""])

    def to_html(self, *, digits: int = 3, figures: bool = True) -> str:  # type: ignore[override]
        """The report as one self-contained HTML page: inline CSS, sortable tables (a few
        lines of inline JavaScript; click a header), the rank-interval and forest figures
        as inline PNG data, and the methods paragraph. It loads nothing from elsewhere."""
        body = ["<h1>Evaluation report</h1>", *_html_cards(self, digits)]
        for name, frame in self.parts().items():
            body.append(f'<h2 id="{name}">{html.escape(_TITLES[name])}</h2>')
            body.append(_html_table(frame, digits, name))
        if figures:
            body += _figures(self)
        body += ['<h2 id="methods">Methods</h2>', f"<p>{html.escape(self.methods)}</p>"]
        return _PAGE.format(body="\n".join(body))

    def plot(self, **kwargs: Any) -> Any:
        """The rank-interval figure (:func:`metaeval.plot.rank_plot`) of ``ranks``."""
        from ..plot import rank_plot

        return rank_plot(self.ranks, **kwargs)


# ------------------------------------------------------------------ building
@any_frame
@literal_signature
def build_report(
    scores: pd.DataFrame,
    control: str | Sequence[str] | None = None,
    *,
    metrics: str | Sequence[str] | None = None,
    test: CompareTest = "t",
    adjust: Adjustment | None = "holm",
    effect: EffectType = DEFAULT_EFFECT,
    method: PoolMethod = "REML",
    ci: CIMethod | None = None,
    alpha: float = 0.05,
    n_resamples: int = 1000,
    seed: int | None = None,
) -> Report:
    """One report of an evaluation: means, tests, pooled effects, ranks and their methods.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table: ``task, query, system, metric, value``.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    control : str, list of str or None
        The baseline system(s). None: no tests and no pooled effects (the methods
        paragraph says so); the means and ranks are still there.
    metrics : str, list of str or None
        The metrics to report; None reports every metric.
    test : {"t", "wilcoxon", "sign", "randomization", "bootstrap", "mcnemar", \
"mcnemar_midp"}, default "t"
        The paired test of :func:`metaeval.compare`.
    adjust : {"holm", "bonferroni", "fdr_bh", "maxt"} or None, default "holm"
        The correction of :func:`metaeval.compare` (its family: every (treatment,
        control) pair on one task and metric).
    effect : {"md", "smd", "smcrp", "smcc", "rom", "corr"}, default "smcrp"
        The effect size of :func:`metaeval.effects`.
    method : {"EE", "FE", "DL", "HE", "HS", "SJ", "ML", "REML", "EB", "PM"}, default "REML"
        The τ² estimator of :func:`metaeval.pool`.
    ci : {"z", "t", "knha", "hksj", "adhoc"} or None, default None
        The interval of the pooled effect (:func:`metaeval.pool`; None: Knapp–Hartung
        for random-effects models).
    alpha : float, default 0.05
        1 − the confidence level of every interval and the tests' level.
    n_resamples : int, default 1000
        The bootstrap resamples of the rank intervals (and of a resampling test).
    seed : int or None
        The seed of the resampling (ranks and resampling tests).

    Returns
    -------
    Report
        ``table`` (per-task means), ``tests``, ``effects``, ``pooled``, ``ranks``,
        ``methods`` (str) and ``options``; it writes itself with ``to_markdown()``,
        ``to_json()``, ``to_latex()`` and ``to_html()``.

    Notes
    -----
    The methods paragraph is generated from ``options`` and the tables (the number of
    tests and of families, the seed the ranks used, the interval the pool reports), not
    written beside them, so the text and the numbers cannot disagree. Every format rounds
    through ``metaeval._options.format_cell``; ``to_json()`` keeps full precision.

    References
    ----------
    Mogstad, M., Romano, J. P., Shaikh, A. M., & Wilhelm, D. (2024). Inference for ranks
    with applications to mobility across neighbourhoods and academic achievement across
    countries. *Review of Economic Studies*, 91(1), 476–518. doi:10.1093/restud/rdad006

    Knapp, G., & Hartung, J. (2003). Improved tests for a random effects meta-regression
    with a single covariate. *Statistics in Medicine*, 22(17), 2693–2710.
    doi:10.1002/sim.1482

    Holm, S. (1979). A simple sequentially rejective multiple test procedure.
    *Scandinavian Journal of Statistics*, 6(2), 65–70.

    Examples
    --------
    >>> import metaeval
    >>> scores = metaeval.load_example()
    >>> rep = scores.meta.report("logistic_regression", n_resamples=200, seed=0)
    >>> sorted(rep.parts())
    ['pooled', 'ranks', 'table', 'tests']
    >>> "Holm" in rep.methods and "200 resamples" in rep.methods
    True
    """
    from ..paired import compare, effects, means
    from ..pooling import pool
    from ..ranking import rank_intervals

    check_option("test", test, COMPARE_TESTS)
    if adjust is not None:
        check_option("adjust", adjust, ADJUSTMENTS)
    check_option("effect", str(effect).lower(), EFFECT_TYPES)
    check_option("method", method, POOL_METHODS)
    if ci is not None:
        check_option("ci", ci, CI_METHODS)
    check_alpha(alpha)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int | np.integer):
        raise OptionError(
            f"`n_resamples` is a whole number, but {excerpt(n_resamples)} was passed."
        )
    data = scores
    if metrics is not None:
        wanted = [metrics] if isinstance(metrics, str) else list(metrics)
        known = set(scores["metric"].astype(str))
        lacking = [m for m in wanted if m not in known]
        if lacking:
            raise OptionError(
                f"`metrics` names {lacking}, which the scores lack; they have {sorted(known)}."
            )
        data = scores[scores["metric"].astype(str).isin(wanted)]
    table = means(data, alpha=alpha)
    ranks = rank_intervals(data, n_resamples=n_resamples, seed=seed, alpha=alpha)
    tests = eff = pooled = None
    if control is not None:
        tests = compare(data, control, test=test, adjust=adjust, alpha=alpha, seed=seed,
                        n_resamples=max(n_resamples, 1))  # fmt: skip
        eff = effects(data, control, effect=effect, alpha=alpha)
        pooled = pool(eff, method=method, ci=ci, alpha=alpha)
    options = {
        "control": None if control is None else ([control] if isinstance(control, str)
                                                 else [str(c) for c in control]),
        "metrics": sorted(set(data["metric"].astype(str))),
        "test": test, "adjust": adjust, "effect": str(effect).lower(), "method": method,
        "ci": ci, "alpha": float(alpha), "n_resamples": int(n_resamples), "seed": seed,
    }  # fmt: skip
    rep = Report(table, tests=tests, effects=eff, pooled=pooled, ranks=ranks, options=options)
    return dataclasses.replace(rep, methods=methods_paragraph(rep))


def methods_paragraph(rep: Report) -> str:
    """The methods paragraph of ``rep``, written from its options and tables alone."""
    o = rep.options
    level = format_number(100 * (1 - o["alpha"]), _digits(100 * (1 - o["alpha"])))
    t = rep.table
    n_tasks = t["task"].nunique()
    systems = t["system"].nunique()
    out = [
        f"{systems} systems were evaluated on {_count(n_tasks, 'task')} "
        f"({', '.join(o['metrics'])}). Per-task means are shown with {level}% confidence "
        "intervals (t intervals; the residual variance of the two-way ANOVA where three or "
        "more systems share the queries, Sakai 2018)."
    ]
    if o["control"] is None:
        out.append(
            "No control system was named, so no tests against a control and no pooled "
            "effects are reported."
        )
    else:
        controls = ", ".join(o["control"])
        test = TEST_NAMES.get(o["test"], o["test"])
        cite = _TEST_CITE.get(o["test"])
        n_tests = int(np.isfinite(rep.tests["p_value"].to_numpy(float)).sum())
        sentence = (
            f"Each system was compared with {controls} on every task and metric by a {test}"
            + (f" ({cite})" if cite else "")
            + f", {_count(n_tests, 'test')} in all"
        )
        if o["adjust"] is None:
            sentence += "; the p-values are not adjusted for multiple comparisons."
        else:
            fam = rep.tests.groupby(["task", "metric"]).size()
            sizes = sorted(set(fam.tolist()))
            sentence += (
                f"; the p-values were adjusted by the {ADJUST_NAMES[o['adjust']]} method "
                f"({_ADJUST_CITE[o['adjust']]}) within each family of one task and metric "
                f"(every treatment against every control: "
                f"{' or '.join(str(s) for s in sizes)} test{'' if sizes == [1] else 's'} per "
                f"family, {_count(len(fam), 'family', 'families')})."
            )
        out.append(sentence)
        p = rep.pooled
        label = effect_scale(o["effect"]).label
        tests_used = sorted(set(p["test"].astype(str))) if "test" in p else []
        interval = (
            "Knapp–Hartung t intervals (Knapp and Hartung 2003)"
            if "knha" in tests_used
            else "t intervals on k − 1 degrees of freedom"
            if "t" in tests_used
            else "normal (Wald) intervals"
        )
        model = _CITE.get(o["method"], o["method"])
        re_model = o["method"] not in ("EE", "FE")
        out.append(
            f"Effects ({label}, effect type {o['effect']}) were pooled over tasks "
            + (
                f"in a random-effects model with τ² estimated by {model}"
                if re_model
                else f"in {model}"
            )  # fmt: skip
            + f", with {level}% {interval}"
            + (
                f" and {level}% prediction intervals (Higgins, Thompson and Spiegelhalter 2009)."
                if re_model
                else "."
            )  # fmt: skip
        )
    r = rep.ranks
    a = r.attrs
    kind = "simultaneous" if a.get("simultaneous", True) else "marginal"
    seed = a.get("seed")
    by = {"mean": "the mean over tasks of each system's per-task means",
          "pooled": "each system's pooled effect",
          "borda": "each system's Borda points"}.get(a.get("by", "mean"), str(a.get("by")))  # fmt: skip
    how = (
        "from the max-|t| critical value over all pairs of systems (Mogstad, Romano, Shaikh "
        "and Wilhelm 2024)"
        if kind == "simultaneous"
        else "as percentile intervals of each system's bootstrap rank"
    )
    out.append(
        f"Systems were ranked per metric by {by}; {kind} {level}% rank intervals, {how}, "
        "rest on a two-level paired bootstrap (tasks, then queries within tasks, the same "
        f"queries for every system; Davison and Hinkley 1997, §3.8) with "
        f"{a.get('n_resamples')} resamples "
        + (
            "and no seed"
            if seed is None
            else f"and seed {seed}" + (" (drawn: none was given)" if o["seed"] is None else "")
        )
        + ". Tie group 1 holds the leader and the systems whose rank intervals overlap its "
        "interval, group 2 the best of the rest and those overlapping it, and so on."
    )
    return " ".join(out)


def _count(n: int, noun: str, plural: str | None = None) -> str:
    """``"1 task"``, ``"6 tasks"``: a count with its noun in the right number."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def _digits(x: float) -> int:
    return 0 if float(x).is_integer() else 1


# ------------------------------------------------------------------ helpers
def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    cols = {c: frame[c].tolist() for c in frame.columns}
    return [{str(c): _plain(cols[c][i]) for c in frame.columns} for i in range(len(frame))]


def _cell(frame: pd.DataFrame, col: str, value: Any, digits: int, to: str = "text") -> str:
    return format_cell(value, digits, p=is_p_column(col), to=to)  # type: ignore[arg-type]


def _md_escape(text: Any) -> str:
    s = str(text).replace("\\", "\\\\").replace("|", "\\|")
    for c in "`*_[]<>#~$":
        s = s.replace(c, "\\" + c)
    return s.replace("\n", " ")


def _md_table(frame: pd.DataFrame, digits: int) -> list[str]:
    frame = counts_as_int(frame)
    cols = list(frame.columns)
    right = [pd.api.types.is_numeric_dtype(frame[c]) for c in cols]
    rows = [
        "| " + " | ".join(_md_escape(c) for c in cols) + " |",
        "|" + "|".join("---:" if r else "---" for r in right) + "|",
    ]
    values = {c: frame[c].tolist() for c in cols}
    for i in range(len(frame)):
        cells = [_md_escape(_cell(frame, c, values[c][i], digits)) for c in cols]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _card_cells(rep: Report, digits: int) -> list[tuple[str, list[str], list[list[str]]]]:
    """A leaderboard card per metric as text cells: ``(metric, header, rows)``, one row per
    system, best first (the same strings in Markdown and HTML; not escaped)."""
    r = rep.ranks.sort_values(["metric", "rank"], kind="stable")
    m = rep.table
    out = []
    for metric, board in r.groupby("metric", sort=False):  # display: one card per metric
        tasks = list(dict.fromkeys(m.loc[m["metric"] == metric, "task"]))
        head = ["system", "mean", "rank [low, high]", "tie group"]
        for task in tasks:
            head += [f"{task}: mean", "n", "SE", "CI"]
        per = m[m["metric"] == metric].set_index(["system", "task"])
        rows = []
        for row in board.itertuples(index=False):
            cells = [
                str(row.system),
                format_cell(row.score, digits),
                f"{row.rank} [{row.rank_low}, {row.rank_high}]",
                str(row.tie_group),
            ]
            for task in tasks:
                if (row.system, task) not in per.index:
                    cells += ["", "", "", ""]
                    continue
                x = per.loc[(row.system, task)]
                cells += [
                    format_cell(x["mean"], digits),
                    str(int(x["n"])),
                    format_cell(x["se"], digits),
                    f"[{format_cell(x['ci_low'], digits)}, {format_cell(x['ci_high'], digits)}]",
                ]
            rows.append(cells)
        out.append((str(metric), head, rows))
    return out


def _cards(rep: Report, digits: int) -> list[str]:
    """The leaderboard cards in Markdown."""
    out: list[str] = []
    for metric, head, rows in _card_cells(rep, digits):
        out += [f"## Leaderboard: {_md_escape(metric)}", ""]
        out.append("| " + " | ".join(_md_escape(h) for h in head) + " |")
        out.append("|---|" + "---:|" * (len(head) - 1))
        # only the name is text; the other cells are numbers and intervals written here
        out += ["| " + " | ".join([_md_escape(c[0]), *c[1:]]) + " |" for c in rows]
        out.append("")
    return out


def _html_cards(rep: Report, digits: int) -> list[str]:
    """The leaderboard cards in HTML (sortable like the other tables)."""
    out = []
    for n, (metric, head, rows) in enumerate(_card_cells(rep, digits)):
        th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"
            for cells in rows
        )
        out.append(f"<h2>Leaderboard: {html.escape(metric)}</h2>")
        out.append(
            f'<div class="wrap"><table class="sortable card" id="card-{n}"><thead><tr>{th}'
            f"</tr></thead><tbody>{body}</tbody></table></div>"
        )
    return out


def _html_table(frame: pd.DataFrame, digits: int, name: str) -> str:
    frame = counts_as_int(frame)
    cols = list(frame.columns)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cols)
    values = {c: frame[c].tolist() for c in cols}
    rows = []
    for i in range(len(frame)):
        cells = []
        for c in cols:
            v = values[c][i]
            number = isinstance(v, int | float | np.number) and not isinstance(v, bool)
            key = f' data-v="{v!r}"' if number else ' class="t"'
            cells.append(f"<td{key}>{html.escape(_cell(frame, c, v, digits))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<div class="wrap"><table class="sortable" id="t-{name}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _figures(rep: Report) -> list[str]:
    from ..plot import forest, rank_plot

    out = []
    ax = rank_plot(rep.ranks)
    fig = ax.figure if hasattr(ax, "figure") else ax
    out.append('<h2 id="rank-figure">Rank intervals</h2>')
    out.append(f'<img id="fig-ranks" alt="rank intervals" src="data:image/png;base64,{_png(fig)}">')
    if rep.effects is not None:
        o = rep.options
        e, p = rep.effects, rep.pooled
        panels = e[["metric", "control"]].astype(str).drop_duplicates()
        out.append('<h2 id="forest-figure">Forest plots</h2>')
        # forest() draws one metric and control at a time: one figure each (display only)
        for n, (metric, control) in enumerate(panels.itertuples(index=False)):
            pick = e["metric"].astype(str).eq(metric) & e["control"].astype(str).eq(control)
            keep = p["metric"].astype(str).eq(metric) & p["control"].astype(str).eq(control)
            ax = forest(e[pick], method=o["method"], ci=o["ci"], alpha=o["alpha"],
                        pooled=p[keep])  # fmt: skip
            fig = ax.figure if hasattr(ax, "figure") else ax
            title = html.escape(f"{metric} (control: {control})")
            out.append(f"<h3>{title}</h3>")
            out.append(
                f'<img id="fig-forest-{n}" alt="forest plot: {title}" '
                f'src="data:image/png;base64,{_png(fig)}">'
            )
    return out


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Evaluation report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; max-width: 80em; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }}
th, td {{ padding: 0.2em 0.6em; border-bottom: 1px solid #ddd; text-align: right; }}
th {{ border-bottom: 2px solid #333; cursor: pointer; }}
td:first-child, th:first-child, td.t {{ text-align: left; }}
img {{ max-width: 100%; }}
.wrap {{ overflow-x: auto; max-width: 100%; }}
.card td, .card th {{ white-space: nowrap; }}
</style></head><body>
{body}
<script>
document.querySelectorAll("table.sortable th").forEach(function (th, i) {{
  th.addEventListener("click", function () {{
    var tb = th.closest("table").tBodies[0], up = th.dataset.up !== "1";
    th.dataset.up = up ? "1" : "0";
    var col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var rows = Array.from(tb.rows).sort(function (a, b) {{
      var x = a.cells[col], y = b.cells[col];
      var u = x.dataset.v !== undefined ? parseFloat(x.dataset.v) : x.textContent;
      var v = y.dataset.v !== undefined ? parseFloat(y.dataset.v) : y.textContent;
      return (u < v ? -1 : u > v ? 1 : 0) * (up ? 1 : -1);
    }});
    rows.forEach(function (r) {{ tb.appendChild(r); }});
  }});
}});
</script>
</body></html>
"""

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
    ADJUST_FAMILIES,
    ADJUST_FAMILY_KEYS,
    ADJUSTMENTS,
    CI_METHODS,
    COMPARE_TESTS,
    DEFAULT_EFFECT,
    EFFECT_TYPES,
    LEVELS,
    POOL_METHODS,
    AdjustFamily,
    Adjustment,
    CIMethod,
    CompareTest,
    EffectType,
    Level,
    PoolMethod,
    counts_as_int,
    effect_scale,
    format_cell,
    format_number,
    format_p,
    is_p_column,
    literal_signature,
)
from .._results import Result
from ..engines import any_frame
from ..errors import (
    OptionError,
    PairingWarning,
    check_alpha,
    check_option,
    collected_warnings,
    excerpt,
    quote_list,
    reissue,
    warn_groups,
)
from ..report import ADJUST_NAMES, TEST_NAMES, add_latex_notes, escape, to_latex
from .judge_report import JUDGE_PARTS, JUDGE_TITLES, judge_methods, judge_section

__all__ = ["Report", "build_report"]

_LATEX_TEXT = {"τ²": r"$\tau^2$", "–": "--", "§": r"\S{}", "×": r"$\times$", "−": "$-$"}
"""The methods paragraph's few non-ASCII signs, in plain LaTeX (no package needed)."""
_PARTS = ("table", "tests", "pooled", "ranks", *JUDGE_PARTS)
_TITLES = {
    "table": "Per-task means",
    "tests": "Tests against the control",
    "pooled": "Pooled effects",
    "ranks": "Ranks",
    **JUDGE_TITLES,
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
_FAMILIES = {
    "pairs": "one task and metric (every treatment against every control:",
    "tasks": "one metric (every treatment against every control on every task:",
    "metrics": "one task (every treatment against every control on every metric:",
    "all": "all tests (every treatment against every control on every task and metric:",
}
"""How the methods paragraph says what a family of ``family=`` holds."""
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
    (:func:`metaeval.rank_intervals`); for a table of labels (a ``judge`` column) the
    judge section: ``agreement``, ``judge_errors``, ``judge_panel``, ``ppi`` and
    ``ppi_pooled`` (see :func:`build_report`), with ``agreement_pairs`` for the heatmap;
    ``methods`` the methods paragraph, written from the options (``options``) and the
    tables above; ``notes`` what a reader of a table must know, shown under it in every
    format (see :func:`build_report`).
    """

    tests: pd.DataFrame | None = None
    effects: pd.DataFrame | None = None
    pooled: pd.DataFrame | None = None
    ranks: pd.DataFrame | None = None
    agreement: pd.DataFrame | None = None
    judge_errors: pd.DataFrame | None = None
    judge_panel: pd.DataFrame | None = None
    ppi: pd.DataFrame | None = None
    ppi_pooled: pd.DataFrame | None = None
    agreement_pairs: pd.DataFrame | None = None
    methods: str = ""
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    notes: tuple[dict[str, Any], ...] = ()
    kind: ClassVar[str] = "report"

    def notes_of(self, part: str, metric: str | None = None) -> list[str]:
        """The plain-text notes under the table ``part`` (of ``metric`` only, if given)."""
        return [
            n["text"]
            for n in self.notes
            if n["part"] == part and (metric is None or n["metric"] == metric)
        ]

    # ------------------------------------------------------------------ parts
    def parts(self) -> dict[str, pd.DataFrame]:
        """The report's tables by name, in the order they are shown (absent ones left out)."""
        found = {name: getattr(self, name) for name in _PARTS}
        return {k: v for k, v in found.items() if v is not None}

    # ------------------------------------------------------------------ formats
    def to_markdown(self, *, digits: int = 3) -> str:
        """The report as GitHub-flavoured Markdown: a leaderboard card per metric, the
        report's tables with their notes and the methods paragraph, every name escaped.

        The card has a row per system, best first: its mean over the tasks (the ranks'
        ``score``), the queries ``n``, the standard error and confidence interval of
        each task's mean, the rank with its interval ``[low, high]`` and its tie group.
        """
        out = ["# Evaluation report", ""]
        out += _cards(self, digits)
        for name, frame in self.parts().items():
            out += [f"## {_TITLES[name]}", "", *_md_table(frame, digits), ""]
            out += [f"Note: {escape(note, 'markdown')}\n" for note in self.notes_of(name)]
        out += ["## Methods", "", escape(self.methods, "markdown"), ""]
        return "\n".join(out)

    def to_json(self, *, indent: int | None = 2) -> str:
        """The report's numbers, machine-readable: every table as a list of records
        (floats at full precision, NaN as null), the options, the notes (records, the ad hoc
        interval's numbers at full precision) and the methods paragraph."""
        doc: dict[str, Any] = {"kind": "report", "options": _plain(self.options)}
        for name in _PARTS:
            frame = getattr(self, name)
            doc[name] = None if frame is None else _records(frame)
        doc["notes"] = _plain(list(self.notes))
        doc["methods"] = self.methods
        return json.dumps(doc, indent=indent, allow_nan=False)

    def to_latex(self, *, digits: int = 3, **kwargs: Any) -> str:  # type: ignore[override]
        r"""The report's tables as LaTeX ``table`` floats (booktabs; ``\usepackage{booktabs,
        graphicx}``) through :func:`metaeval.report.to_latex`, every name escaped, then the
        methods paragraph. A table wider than ``LATEX_COLUMNS`` (10) columns with fewer rows
        than columns is transposed (its columns as rows), so that it prints near the text's
        size instead of being scaled to the line (the pooled row's 29 columns came out at
        about 3 pt; one treatment over six tasks now prints every table at 7 pt or more);
        ``transpose=`` forces one orientation for every table."""
        flip = kwargs.pop("transpose", None)
        tables = [
            add_latex_notes(
                to_latex(
                    frame,
                    layout="table",
                    digits=digits,
                    caption=_TITLES[name],
                    transpose=_latex_transposed(frame) if flip is None else flip,
                    **kwargs,
                ),
                [f"Note: {_latex_text(note)}" for note in self.notes_of(name)],
            )
            for name, frame in self.parts().items()
        ]
        return "\n".join([*tables, r"\paragraph{Methods}", _latex_text(self.methods), ""])

    def to_html(self, *, digits: int = 3, figures: bool = True) -> str:  # type: ignore[override]
        """The report as one self-contained HTML page: inline CSS, sortable tables (a few
        lines of inline JavaScript; click a header), the rank-interval and forest figures
        as inline PNG data, and the methods paragraph. It loads nothing from elsewhere."""
        body = ["<h1>Evaluation report</h1>", *_html_cards(self, digits)]
        for name, frame in self.parts().items():
            body.append(f'<h2 id="{name}">{html.escape(_TITLES[name])}</h2>')
            body.append(_html_table(frame, digits, name))
            body += [f'<p class="note">Note: {html.escape(n)}</p>' for n in self.notes_of(name)]
        if figures:
            body += _figures(self)
        body += ['<h2 id="methods">Methods</h2>', f"<p>{html.escape(self.methods)}</p>"]
        return _PAGE.format(body="\n".join(body))

    def plot(self, **kwargs: Any) -> Any:
        """The rank-interval figure (:func:`metaeval.plot.rank_plot`) of ``ranks``."""
        from ..plot import rank_plot

        if self.ranks is None:
            raise OptionError("The report has no ranks (no metric could be ranked), so no figure.")
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
    family: AdjustFamily = "pairs",
    effect: EffectType = DEFAULT_EFFECT,
    method: PoolMethod = "REML",
    pool_test: CIMethod | None = None,
    alpha: float = 0.05,
    n_resamples: int = 1000,
    seed: int | None = None,
    cluster: str | None = None,
    gold: str | None = None,
    judge: str | None = None,
    level: Level = "nominal",
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
        The correction of :func:`metaeval.compare`.
    family : {"pairs", "tasks", "metrics", "all"}, default "pairs"
        The tests ``adjust`` adjusts together (:func:`metaeval.compare`): every
        (treatment, control) pair on one task and metric, and with ``"tasks"`` on every
        task of a metric, ``"metrics"`` on every metric of a task, ``"all"`` every test.
    effect : {"md", "smd", "smcrp", "smcc", "rom", "corr"}, default "smcrp"
        The effect size of :func:`metaeval.effects`.
    method : {"EE", "FE", "DL", "HE", "HS", "SJ", "ML", "REML", "EB", "PM"}, default "REML"
        The τ² estimator of :func:`metaeval.pool`.
    pool_test : {"z", "t", "knha", "hksj", "adhoc"} or None, default None
        The test and interval of the pooled effect, :func:`metaeval.pool`'s ``test``
        (``test`` here is the paired test; None: Knapp–Hartung for random-effects models).
    alpha : float, default 0.05
        1 − the confidence level of every interval and the tests' level.
    n_resamples : int, default 1000
        The bootstrap resamples of the rank intervals (and of a resampling test).
    seed : int or None
        The seed of the resampling (ranks and resampling tests).
    cluster : str, optional
        A column of ``scores`` with the cluster of each query (e.g. the passage several
        questions share; constant within a query): every part is clustered — the means'
        and the t-tests' standard errors (C/(C − 1), t on C − 1 df), the effects'
        variances and so the pooled effects, and the rank intervals (clusters resampled,
        clustered query-level errors) — and the methods paragraph says so. The tests
        against a control have a clustered form for ``test="t"`` only: another ``test``
        with ``cluster`` and a control is an OptionError.
    gold : str, optional
        For a table of labels (a ``judge`` column): the judge taken as the truth (a human,
        who may label a subset of the outputs). Adds each judge's errors against it
        (:func:`metaeval.judge_errors`) and the judge-only, gold-only and PPI++ estimates
        side by side (:func:`metaeval.ppi`: paired differences from each control, pooled
        as ``ppi_pooled``; the systems' means without a control).
    judge : str, optional
        For a table of labels: the judge whose labels score the systems in the means,
        tests, effects and ranks, and whose labels PPI rectifies (default: the only judge
        besides ``gold``; with several, an OptionError asks for it).
    level : {"nominal", "ordinal", "interval", "ratio"}, default "nominal"
        The labels' level of measurement, for the judges' agreement (Krippendorff's α of
        the judges besides ``gold``, or of every judge without one;
        :func:`metaeval.agreement`).

    Returns
    -------
    Report
        ``table`` (per-task means), ``tests``, ``effects``, ``pooled``, ``ranks``, the
        judge section for a table of labels (``agreement``, ``judge_errors``,
        ``judge_panel``, ``ppi``, ``ppi_pooled``; None where it does not apply),
        ``methods`` (str), ``options`` and ``notes``; it writes itself with
        ``to_markdown()``, ``to_json()``, ``to_latex()`` and ``to_html()``. ``notes`` is a
        tuple of dicts, each shown under the table it concerns in every format: ``part``
        (the table: ``"pooled"``, ``"ranks"``, or ``"table"`` when nothing could be
        ranked), ``kind``, ``metric`` and ``text`` (plain text), for ``kind="narrow_knha"``
        also ``treatment, control, adhoc_ci_low, adhoc_ci_high, adhoc_p_value``.

    Warns
    -----
    metaeval.DegenerateWarning
        :func:`metaeval.pool`'s warnings, among them the Knapp–Hartung interval
        narrower than the normal one.
    metaeval.PairingWarning
        Naming the (metric, task) groups left out of the ranks, or whose queries are
        partly left out, because not every system has scores there.

    Notes
    -----
    The methods paragraph is generated from ``options`` and the tables (the number of
    tests and of families, the seed the ranks used, the interval the pool reports), not
    written beside them, so the text and the numbers cannot disagree. Every format rounds
    through ``metaeval._options.format_cell``; ``to_json()`` keeps full precision. Every
    name (systems, tasks, metrics) goes through the one escaping of each format
    (:func:`metaeval.report.escape`), in the tables, notes and methods paragraph alike.

    What the report notes under its tables (a Knapp–Hartung interval narrower than the
    normal one, with the ad hoc interval beside it; a metric ranked over the tasks and
    queries that every system has; ``prob_best`` past 1) and its judge section are
    described in the user guide, :doc:`/user_guide/leaderboards`.

    References
    ----------
    Mogstad, M., Romano, J. P., Shaikh, A. M., & Wilhelm, D. (2024). Inference for ranks
    with applications to mobility across neighbourhoods and academic achievement across
    countries. *Review of Economic Studies*, 91(1), 476–518. doi:10.1093/restud/rdad006

    Knapp, G., & Hartung, J. (2003). Improved tests for a random effects meta-regression
    with a single covariate. *Statistics in Medicine*, 22(17), 2693–2710.
    doi:10.1002/sim.1482

    Röver, C., Knapp, G., & Friede, T. (2015). Hartung-Knapp-Sidik-Jonkman approach and
    its modification for random-effects meta-analysis with few studies. *BMC Medical
    Research Methodology*, 15, 99. doi:10.1186/s12874-015-0091-1

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
    from .leaderboard import rank_intervals

    check_option("test", test, COMPARE_TESTS)
    if adjust is not None:
        check_option("adjust", adjust, ADJUSTMENTS)
    check_option("family", family, ADJUST_FAMILIES)
    check_option("level", level, LEVELS)
    check_option("effect", str(effect).lower(), EFFECT_TYPES)
    check_option("method", method, POOL_METHODS)
    if pool_test is not None:
        check_option("pool_test", pool_test, CI_METHODS)
    check_alpha(alpha)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int | np.integer):
        raise OptionError(
            f"`n_resamples` is a whole number, but {excerpt(n_resamples)} was passed."
        )
    if cluster is not None and control is not None and test != "t":
        raise OptionError(
            f"build_report(test={test!r}, cluster={cluster!r}): the tests against the "
            "control have a clustered form for test='t' only (the means, effects, pooled "
            "effects and ranks would be clustered, the tests not); pass test='t', or "
            "cluster=None."
        )
    data = scores
    if metrics is not None:
        wanted = [metrics] if isinstance(metrics, str) else list(metrics)
        known = set(scores["metric"].astype(str))
        lacking = [m for m in wanted if m not in known]
        if lacking:
            raise OptionError(
                f"`metrics` names {quote_list(lacking)}, which the scores lack; they have "
                f"{quote_list(sorted(known))}."
            )
        data = scores[scores["metric"].astype(str).isin(wanted)]
    controls = (
        None if control is None else ([control] if isinstance(control, str) else list(control))
    )
    data, section = judge_section(
        data,
        controls,
        gold=gold,
        judge=judge,
        level=level,
        cluster=cluster,
        alpha=alpha,
        n_resamples=n_resamples,
        seed=seed,
        method=method,
        pool_test=pool_test,
    )
    table = means(data, alpha=alpha, cluster=cluster)
    rankable, notes = _rankable(data)
    ranks = None
    if len(rankable):
        ranks = rank_intervals(
            rankable, n_resamples=n_resamples, seed=seed, alpha=alpha, cluster=cluster
        )
        notes += _prob_best_notes(ranks)
    else:  # nothing to rank: the notes go under the means
        notes = [{**n, "part": "table"} for n in notes]
    tests = eff = pooled = None
    if control is not None:
        tests = compare(
            data,
            control,
            test=test,
            adjust=adjust,
            family=family,
            alpha=alpha,
            seed=seed,
            n_resamples=max(n_resamples, 1),
            cluster=cluster,
        )
        eff = effects(data, control, effect=effect, alpha=alpha, cluster=cluster)
        with collected_warnings() as held:  # pool()'s own warnings, issued below as they are
            pooled = pool(eff, method=method, test=pool_test, alpha=alpha)
        reissue(held)
        notes = _narrow_notes(held, eff, pooled, method, alpha) + notes
    options = {
        "control": None
        if control is None
        else ([control] if isinstance(control, str) else [str(c) for c in control]),
        "metrics": sorted(set(data["metric"].astype(str))),
        "test": test,
        "adjust": adjust,
        "family": family,
        "effect": str(effect).lower(),
        "method": method,
        "pool_test": pool_test,
        "alpha": float(alpha),
        "n_resamples": int(n_resamples),
        "seed": seed,
        "cluster": cluster,
        "judges": None if section is None else section.options,
    }
    judged = {} if section is None else section.tables
    rep = Report(
        table,
        tests=tests,
        effects=eff,
        pooled=pooled,
        ranks=ranks,
        **judged,
        agreement_pairs=None if section is None else section.pairs,
        options=options,
        notes=tuple(notes),
    )
    return dataclasses.replace(rep, methods=methods_paragraph(rep))


def _narrow_notes(
    held: list[Any], eff: pd.DataFrame, pooled: pd.DataFrame, method: str, alpha: float
) -> list[dict[str, Any]]:
    """A note per row of ``pooled`` whose Knapp–Hartung interval :func:`metaeval.pool`
    found narrower than the normal one (its own warning, ``held``), with the ad hoc one."""
    from ..pooling import NARROW_KH_TEXT, pool

    found = [
        h for h in held if h.template and NARROW_KH_TEXT in h.template and h.groups is not None
    ]
    if not found:
        return []
    groups = pd.concat([h.groups for h in found], ignore_index=True)
    with collected_warnings():  # the same warnings as the pool() they repeat
        adhoc = pool(eff, method=method, test="adhoc", alpha=alpha)
    keys = list(groups.columns)
    shown = {"ci_low": "adhoc_ci_low", "ci_high": "adhoc_ci_high", "p_value": "adhoc_p_value"}
    rows = (
        groups.astype(object)
        .merge(pooled.astype({k: object for k in keys})[[*keys, "ci_low", "ci_high"]], on=keys)
        .merge(
            adhoc.astype({k: object for k in keys})[[*keys, *shown]].rename(columns=shown), on=keys
        )
    )
    out = []
    for r in rows.to_dict("records"):  # display: one note per flagged row
        text = (
            f"{r['metric']}, {r['treatment']} vs {r['control']}: the Knapp–Hartung interval "
            f"[{_num(r['ci_low'])}, {_num(r['ci_high'])}] is narrower than the normal (z) one, "
            "as the effects scatter less than their variances imply; the ad hoc Knapp–Hartung "
            "interval, whose scale factor is floored at 1 (Röver, Knapp and Friede 2015), is "
            f"[{_num(r['adhoc_ci_low'])}, {_num(r['adhoc_ci_high'])}], "
            f"p {format_p(r['adhoc_p_value'], 3, equals=True, missing='= NaN')}."
        )
        out.append(
            {
                "part": "pooled",
                "kind": "narrow_knha",
                "metric": str(r["metric"]),
                "treatment": str(r["treatment"]),
                "control": str(r["control"]),
                "text": text,
                **{c: float(r[c]) for c in shown.values()},
            }
        )
    return out


def _num(x: float) -> str:
    return format_number(x, 3, missing="NaN")


def _rankable(data: pd.DataFrame) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """The rows of ``data`` that :func:`metaeval.rank_intervals` can rank, and notes
    on what was left out, with a :class:`~metaeval.PairingWarning` naming it.

    The ranks compare systems over the same tasks and queries (the paired bootstrap draws
    the same queries for every system), so each metric is ranked over the tasks on which
    every one of its systems has scores, and on those over the queries every system has;
    every system stays on the board. A metric without such a task, or with one system, is
    not ranked. The other tables keep every row."""
    key = pd.DataFrame(
        {c: data[c].astype(str).to_numpy() for c in ("metric", "task", "query", "system")}
    )
    cells = key[["metric", "task", "system"]].drop_duplicates()
    n_sys = cells.groupby("metric", sort=False)["system"].nunique()

    def complete(by: list[str]) -> pd.Series:  # whether every system of the metric is there
        have = key[[*by, "system"]].drop_duplicates().groupby(by, sort=False)["system"].nunique()
        every = n_sys.reindex(have.index.get_level_values("metric")).to_numpy()
        return pd.Series((have.to_numpy() == every) & (every >= 2), index=have.index)

    task_ok, query_ok = complete(["metric", "task"]), complete(["metric", "task", "query"])
    row_task = task_ok.reindex(pd.MultiIndex.from_frame(key[["metric", "task"]])).to_numpy()
    row_query = query_ok.reindex(pd.MultiIndex.from_frame(key[["metric", "task", "query"]]))
    keep = row_task & row_query.to_numpy()
    if keep.all():
        return data, []
    grid = (
        cells[["metric", "task"]]
        .drop_duplicates()
        .merge(cells[["metric", "system"]].drop_duplicates(), on="metric")
    )
    absent = grid.merge(cells, how="left", indicator=True)
    absent = absent[absent["_merge"] == "left_only"].drop(columns="_merge")
    queries = key[row_task].drop_duplicates(["metric", "task", "query"])
    queries = queries.assign(
        ok=query_ok.reindex(
            pd.MultiIndex.from_frame(queries[["metric", "task", "query"]])
        ).to_numpy()
    )
    lost = queries.groupby(["metric", "task"], sort=False)["ok"].agg(["size", "sum"])
    lost = lost[lost["sum"] < lost["size"]]
    notes, warned = [], []
    for metric in dict.fromkeys(key["metric"]):  # display: one note per metric
        tasks = list(dict.fromkeys(key.loc[key["metric"] == metric, "task"]))
        kept = [t for t in tasks if task_ok.get((metric, t), False)]
        gone = absent[absent["metric"] == metric]
        lacking = {t: list(g["system"]) for t, g in gone.groupby("task", sort=False)}
        named = "; ".join(f"{t} (no scores of {', '.join(s)})" for t, s in lacking.items())
        warned += [(metric, t, f"no scores of {', '.join(s)}") for t, s in lacking.items()]
        if n_sys[metric] < 2 or not kept:
            why = (
                "it has one system"
                if n_sys[metric] < 2
                else f"no task has scores of every system ({named})"
            )
            notes.append(
                {
                    "part": "ranks",
                    "kind": "unranked",
                    "metric": metric,
                    "text": f"{metric}: not ranked, as {why}.",
                }
            )
            continue
        if len(kept) < len(tasks):
            notes.append(
                {
                    "part": "ranks",
                    "kind": "rank_tasks",
                    "metric": metric,
                    "text": f"{metric}: ranked over the {len(kept)} of {len(tasks)} tasks "
                    f"that every system has; left out: {named}.",
                }
            )
        if metric in lost.index.get_level_values("metric"):
            part = lost.loc[metric]
            said = "; ".join(
                f"{int(r['size'] - r['sum'])} of {int(r['size'])} queries of {t}"
                for t, r in part.iterrows()
            )
            warned += [
                (metric, t, f"{int(r['size'] - r['sum'])} queries") for t, r in part.iterrows()
            ]
            notes.append(
                {
                    "part": "ranks",
                    "kind": "rank_queries",
                    "metric": metric,
                    "text": f"{metric}: left out of the ranks, as not every system has "
                    f"them: {said}.",
                }
            )
    warn_groups(
        "build_report() ranks each metric over the tasks and queries that every system has, "
        "so {n} (metric, task) group(s) are left out of the ranks or lose queries there (the "
        "other tables keep them; the report's notes say so)",
        pd.DataFrame(warned, columns=["metric", "task", "left_out"]),
        PairingWarning,
    )
    return data[keep], notes


def _prob_best_notes(ranks: pd.DataFrame) -> list[dict[str, Any]]:
    """A note per metric whose ``prob_best`` sums past 1: ties for first place."""
    total = ranks.groupby("metric", sort=False)["prob_best"].sum()
    return [
        {
            "part": "ranks",
            "kind": "prob_best",
            "metric": str(metric),
            "text": f"{metric}: prob_best sums to {format_number(t, 2)} over the systems, not 1: "
            "a resample in which several systems tie for first place counts for each of them "
            "(0/1 or coarse scores and few queries make such ties common).",
        }
        for metric, t in total.items()
        if t > 1 + 1e-9
    ]


def methods_paragraph(rep: Report) -> str:
    """The methods paragraph of ``rep``, written from its options and tables alone."""
    o = rep.options
    level = format_number(100 * (1 - o["alpha"]), _digits(100 * (1 - o["alpha"])))
    t = rep.table
    tasks = list(dict.fromkeys(t["task"].astype(str)))
    systems = t["system"].nunique()
    cluster = o.get("cluster")
    out = [
        f"{systems} systems were evaluated on {_count(len(tasks), 'task')} ({_listed(tasks)}) "
        f"by {_count(len(o['metrics']), 'metric')} ({', '.join(o['metrics'])}).",
        f"Per-task means are shown with {level}% confidence "
        "intervals (t intervals from each system's own standard error over its own "
        "queries, as the evaluation harnesses report it).",
    ]
    if cluster is not None:
        c = t["n_clusters"] if "n_clusters" in t else pd.Series(dtype=float)
        span = f"{int(c.min())}" if c.min() == c.max() else f"{int(c.min())} to {int(c.max())}"
        out.append(
            f"Standard errors are clustered by {cluster} ({span} clusters per task; C/(C − 1) "
            "times the sum over clusters of the squared within-cluster sums, t on C − 1 "
            "degrees of freedom; Miller 2024): those of the means, of the tests against the "
            "control and of the effects (and so the pooling weights) and the query-level "
            "standard errors of the rank intervals, whose bootstrap draws whole clusters."
        )
    if o["control"] is None:
        out.append(
            "No control system was named, so no tests against a control and no pooled "
            "effects are reported."
        )
    elif rep.tests is not None and rep.pooled is not None:  # made with a control
        controls = ", ".join(o["control"])
        test = TEST_NAMES.get(o["test"], o["test"])
        cite = _TEST_CITE.get(o["test"])
        n_tests = int(np.isfinite(rep.tests["p_value"].to_numpy(float)).sum())
        sentence = (
            f"Each system was compared with {controls} on every task and metric by a {test}"
            + (f" ({cite})" if cite else "")
            + (f" with standard errors clustered by {cluster}" if cluster is not None else "")
            + f", {_count(n_tests, 'test')} in all"
        )
        if o["adjust"] is None:
            sentence += "; the p-values are not adjusted for multiple comparisons."
        else:
            family = o.get("family", "pairs")
            keys = list(ADJUST_FAMILY_KEYS[family])
            fam = rep.tests.groupby(keys).size() if keys else pd.Series([len(rep.tests)])
            sizes = sorted(set(fam.tolist()))
            sentence += (
                f"; the p-values were adjusted by the {ADJUST_NAMES[o['adjust']]} method "
                f"({_ADJUST_CITE[o['adjust']]}) within each family of "
                f"{_FAMILIES[family]} "
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
            else "ad hoc Knapp–Hartung t intervals, the scale factor floored at 1 (Röver, "
            "Knapp and Friede 2015)"
            if "adhoc" in tests_used
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
            )
            + f", with {level}% {interval}"
            + (
                f" and {level}% prediction intervals (Higgins, Thompson and Spiegelhalter 2009)."
                if re_model
                else "."
            )
        )
        narrow = [n for n in rep.notes if n.get("kind") == "narrow_knha"]
        if narrow:
            out.append(
                f"For {_count(len(narrow), 'pooled comparison')} the Knapp–Hartung interval was "
                "narrower than the normal one, as the effects scatter less than their "
                "variances imply; the notes under the pooled table give the ad hoc "
                "Knapp–Hartung interval and p-value, whose scale factor is floored at 1 "
                "(Röver, Knapp and Friede 2015)."
            )
    judged = judge_methods(o, {k: v for k, v in rep.parts().items() if k in JUDGE_PARTS}, level)
    r = rep.ranks
    if r is None:
        out.append("No metric could be ranked (the notes under the means say why).")
        return " ".join([*out, *judged])
    a = r.attrs
    simultaneous = a.get("simultaneous", True)
    kind = "simultaneous" if simultaneous else "marginal"
    seed = a.get("seed")
    by_name = a.get("aggregation", "mean")
    by = {
        "mean": "the mean over tasks of each system's per-task means",
        "pooled": "each system's pooled effect",
        "borda": "each system's Borda points",
    }.get(by_name, str(by_name))
    few = int(r["n_tasks"].max()) if len(r) else 0
    pairs = {
        "mean": "paired t-tests over the tasks (t on k − 1 degrees of freedom)"
        if few > 1
        else "paired t-tests over the queries of the one task",
        "pooled": "the pooled effects' own standard errors (t on k − 1 degrees of freedom)",
        "borda": "paired t-tests over the tasks of the Borda points, each also passing the "
        "sign test of its tasks",
    }.get(by_name, "pairwise tests")
    family = "over all pairs" if simultaneous else "over each system's pairs"
    out.append(
        f"Systems were ranked per metric by {by}; {kind} {level}% rank intervals count the "
        f"pairs of systems the data tell apart (Mogstad, Romano, Shaikh and Wilhelm 2024), "
        f"by {pairs} with the critical value of the largest absolute t {family}. The share of "
        "resamples in which a system ranks first comes from a two-level paired bootstrap "
        f"(tasks, then {'clusters' if cluster is not None else 'queries'} within tasks, the "
        "same for every system; Davison and Hinkley 1997, §3.8) with "
        f"{a.get('n_resamples')} resamples "
        + (
            "and no seed"
            if seed is None
            else f"and seed {seed}" + (" (drawn: none was given)" if o["seed"] is None else "")
        )
        + ". Tie groups cut the ranking only where every rank interval above the cut ends "
        "before every interval below it begins, so systems the intervals cannot order share "
        "a group."
    )
    left = _left_out(rep)
    if left:
        out.append(
            "The ranks compare the systems over the tasks and queries that every system has "
            f"({left}; the notes under the ranks name what was left out)."
        )
    return " ".join([*out, *judged])


def _listed(names: list[str], limit: int = 12) -> str:
    """Names in running text, the first ``limit`` of them."""
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown} and {len(names) - limit} more"


def _left_out(rep: Report) -> str:
    """What the ranks left out, per metric: "accuracy: 3 of 4 tasks", "... and queries"."""
    kinds: dict[str, set[str]] = {}
    for n in rep.notes:
        if n.get("kind") in ("rank_tasks", "rank_queries", "unranked"):
            kinds.setdefault(n["metric"], set()).add(n["kind"])
    if not kinds:
        return ""
    t, r = rep.table, rep.ranks
    parts = []
    for metric, found in kinds.items():  # display: one clause per metric
        if "unranked" in found or r is None:
            parts.append(f"{metric}: not ranked")
            continue
        total = t.loc[t["metric"].astype(str) == metric, "task"].nunique()
        ranked = int(r.loc[r["metric"].astype(str) == metric, "n_tasks"].iloc[0])
        clause = f"{metric}: {ranked} of {total} tasks"
        parts.append(clause + (", some queries left out" if "rank_queries" in found else ""))
    return "; ".join(parts)


LATEX_COLUMNS = 10
"""The most columns a report's LaTeX table keeps as they are: about what fits an article's
text width at the text size (the per-task means' 10 do)."""


def _latex_transposed(frame: pd.DataFrame) -> bool:
    """Whether the report prints ``frame`` with its columns as rows: wider than
    ``LATEX_COLUMNS`` and fewer rows than columns (the orientation with fewer columns)."""
    rows, cols = frame.shape
    return cols > LATEX_COLUMNS and rows < cols


def _latex_text(text: str) -> str:
    """Running text (the methods paragraph, a note) in LaTeX: escaped, its few non-ASCII
    signs in plain LaTeX."""
    text = escape(text, "latex")
    for plain, latex in _LATEX_TEXT.items():
        text = text.replace(plain, latex)
    return text


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
    return escape(text, "markdown")


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
    if rep.ranks is None:
        return []
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
    """The leaderboard cards in Markdown, each with the notes of its metric's ranks."""
    out: list[str] = []
    for metric, head, rows in _card_cells(rep, digits):
        out += [f"## Leaderboard: {_md_escape(metric)}", ""]
        out.append("| " + " | ".join(_md_escape(h) for h in head) + " |")
        out.append("|---|" + "---:|" * (len(head) - 1))
        # only the name is text; the other cells are numbers and intervals written here
        out += ["| " + " | ".join([_md_escape(c[0]), *c[1:]]) + " |" for c in rows]
        out.append("")
        out += [f"Note: {_md_escape(n)}\n" for n in rep.notes_of("ranks", metric)]
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
        out += [
            f'<p class="note">Note: {html.escape(t)}</p>' for t in rep.notes_of("ranks", metric)
        ]
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
    from ..plot import rank_plot
    from .forest import forest_plot

    out = []
    if rep.agreement_pairs is not None:
        from ..judges.results import pair_heatmap

        pairs = rep.agreement_pairs
        out.append('<h2 id="agreement-figure">Agreement of each two judges</h2>')
        # one heatmap per metric (display only)
        for n, metric in enumerate(dict.fromkeys(pairs["metric"].astype(str))):
            fig = pair_heatmap(
                pairs, "agreement", "Krippendorff's alpha of each two judges", metric, None, 0.0
            )
            out.append(
                f'<img id="fig-agreement-{n}" alt="agreement of each two judges: '
                f'{html.escape(metric)}" src="data:image/png;base64,{_png(fig)}">'
            )
    if rep.ranks is not None:
        ax = rank_plot(rep.ranks)
        fig = ax.figure if hasattr(ax, "figure") else ax
        out.append('<h2 id="rank-figure">Rank intervals</h2>')
        out.append(
            f'<img id="fig-ranks" alt="rank intervals" src="data:image/png;base64,{_png(fig)}">'
        )
    if rep.effects is not None:
        o = rep.options
        e, p = rep.effects, rep.pooled
        panels = e[["metric", "control"]].astype(str).drop_duplicates()
        out.append('<h2 id="forest-figure">Forest plots</h2>')
        # forest() draws one metric and control at a time: one figure each (display only)
        for n, (metric, control) in enumerate(panels.itertuples(index=False)):
            pick = e["metric"].astype(str).eq(metric) & e["control"].astype(str).eq(control)
            keep = p["metric"].astype(str).eq(metric) & p["control"].astype(str).eq(control)
            ax = forest_plot(
                e[pick], method=o["method"], test=o["pool_test"], alpha=o["alpha"], pooled=p[keep]
            )
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
.note {{ font-size: 0.9em; color: #333; max-width: 60em; }}
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

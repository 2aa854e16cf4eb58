"""One vocabulary: the values of every option, the effect types' scales, number formats.

Option types are :data:`typing.Literal` aliases used in the public signatures, so
that ``help()`` and notebook tooltips list the values; each tuple of valid values
is derived from its alias and named after the parameter it checks
(``EFFECT_TYPES`` for ``effect=``, ``POOL_METHODS`` for ``method=``, ...).
:data:`EFFECT_SCALES` is the one table of what each effect type is called and on
which scale it is reported; :func:`format_number` and :func:`format_p` the one way
numbers and p-values become text in tables, figures, running text and the command
(:data:`SIGNS` their minus, plus and less-than signs in text, figures/HTML and LaTeX).
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd

__all__ = [
    "EffectType",
    "PoolMethod",
    "CIMethod",
    "CompareTest",
    "Alternative",
    "Adjustment",
    "Correlation",
    "Statistic",
    "Aggregation",
    "RankBy",
    "RANK_BYS",
    "TableCells",
    "TableLayout",
    "Best",
    "ForestSort",
    "PairwiseValue",
    "PosthocTest",
    "PoolModel",
    "POOL_MODELS",
    "Tau2CI",
    "TAU2_CIS",
    "MeansCI",
    "MEANS_CIS",
    "ReplicateDesign",
    "REPLICATE_DESIGNS",
    "TauPrior",
    "TAU_PRIORS",
    "PlanTest",
    "PLAN_TESTS",
    "LmEvalReplicates",
    "LM_EVAL_REPLICATES",
    "EFFECT_TYPES",
    "POOL_METHODS",
    "CI_METHODS",
    "COMPARE_TESTS",
    "ALTERNATIVES",
    "ADJUSTMENTS",
    "CORRELATIONS",
    "STATISTICS",
    "AGGREGATIONS",
    "AdjustFamily",
    "ADJUST_FAMILIES",
    "ADJUST_FAMILY_KEYS",
    "EffectScale",
    "EFFECT_SCALES",
    "effect_scale",
    "format_number",
    "format_p",
    "format_cell",
    "is_p_column",
    "counts_as_int",
    "COUNT_COLUMNS",
    "MINUS",
    "SIGNS",
    "TextTarget",
    "escape_markdown",
    "literal_signature",
    "public_signatures",
    "RENAMED",
    "renamed",
    "DEFAULT_EFFECT",
    "DEFAULT_POOL_METHOD",
    "DEFAULT_CI",
    "DEFAULT_RESAMPLES",
    "resolve_ci",
    "RANGER",
    "POOLED_FIRST",
    "EFFECTS_FIRST",
    "COMPARE_FIRST",
    "answer_first",
    "REPORTED",
    "display_columns",
    "add_display",
    "POOLED_COLUMNS",
    "COLUMNS",
    "PARAMETERS",
    "PARAMETERS_BY_FUNCTION",
]

EffectType = Literal["md", "smd", "smcrp", "smcc", "rom", "corr"]
"""``effect=`` of :func:`metaeval.effects` (see :mod:`metaeval.paired.effect_size`)."""
PoolMethod = Literal["EE", "FE", "DL", "HE", "HS", "SJ", "ML", "REML", "EB", "PM"]
"""``method=`` of :func:`metaeval.pool`: τ² estimators as metafor's ``rma(method=...)``."""
CIMethod = Literal["z", "t", "knha", "hksj", "adhoc"]
"""``test=`` of :func:`metaeval.pool`: normal; t with k − p df and the model's se (metafor's
``test="t"``); or Knapp–Hartung (``hksj`` an alias; ``adhoc`` never narrower than z)."""
CompareTest = Literal[
    "t", "wilcoxon", "sign", "randomization", "bootstrap", "mcnemar", "mcnemar_midp"
]
"""``test=`` of :func:`metaeval.compare`."""
MeansCI = Literal["t", "anova", "wilson", "clopper_pearson"]
"""``ci=`` of :func:`metaeval.means`: t intervals from each system's own standard error,
from the two-way ANOVA's residual (Sakai's display for comparing systems), or binomial
intervals for 0/1 scores."""
#: How repeated runs (a ``replicate`` column) relate to the tasks (:func:`metaeval.effects`).
ReplicateDesign = Literal["crossed", "nested", "epochs"]
Alternative = Literal["two-sided", "greater", "less"]
"""``alternative=`` of :func:`metaeval.compare`."""
PlanTest = Literal["t", "anova", "ci"]
"""``test=`` of :func:`metaeval.design.plan_queries`: Sakai's three topic-set-size designs."""
Adjustment = Literal["holm", "bonferroni", "fdr_bh", "maxt"]
"""``adjust=``: multiplicity adjustments as statsmodels' ``multipletests`` names them, and
``"maxt"`` (Westfall–Young max-T), which needs the randomization test's resamples: only
:func:`metaeval.compare` with ``test="randomization"`` takes it."""
AdjustFamily = Literal["pairs", "tasks", "metrics", "all"]
"""``family=`` of :func:`metaeval.compare`: the tests adjusted together by ``adjust=`` — the
(treatment, control) pairs of one task and metric, and with ``"tasks"`` every task of a
metric, ``"metrics"`` every metric of a task, ``"all"`` every test of the result."""
Correlation = Literal["pearson", "spearman", "kendall"]
"""``method=`` of the correlation functions."""
Statistic = Literal["accuracy", "f1", "f1_macro", "mcc", "pearson", "spearman"]
"""``statistic=`` of :func:`metaeval.bootstrap_effects`."""
Aggregation = Literal["borda", "mean_rank", "copeland", "kemeny", "meta"]
"""``method=`` of :func:`metaeval.ranking.leaderboard`."""
RankBy = Literal["mean", "borda", "pooled"]
"""``by=`` of :func:`metaeval.ranking.rank_intervals`: the score that ranks the systems."""
TableCells = Literal["value", "ci", "p_value"]
"""``show=`` of :func:`metaeval.report.to_latex`: what a cell shows besides the value."""
TableLayout = Literal["auto", "table"]
"""``layout=`` of :func:`metaeval.report.to_latex`: the layout of the table's kind, or the
table as it is."""
Best = Literal["max", "min"]
"""``best=`` of :func:`metaeval.report.to_latex`: which value of a column is bold."""
ForestSort = Literal["effect", "weight", "name"]
"""``sort=`` of :func:`metaeval.plot.forest`."""
PairwiseValue = Literal["p_value", "effect_size", "diff"]
"""``value=`` of :func:`metaeval.plot.pairwise`."""
PosthocTest = Literal["nemenyi", "holm", "bonferroni_dunn", "wilcoxon_holm"]
"""``test=`` of :func:`metaeval.ranking.posthoc`."""
Tau2CI = Literal["qprofile", "profile"]
"""``tau2_ci=`` of :func:`metaeval.pool`: the Q-profile or the profile-likelihood interval of τ²."""
PoolModel = Literal["univariate", "multilevel"]
"""``model=`` of :func:`metaeval.pool`: one level of heterogeneity, or tasks and metrics."""
RobustMethod = Literal["CR1", "CR2"]
"""``robust=`` of :func:`metaeval.metareg` and the multilevel :func:`metaeval.pool` (besides
True, meaning ``"CR1"``, and False): the cluster-robust covariance."""
RankForce = Literal["parametric", "nonparametric"]
"""``force=`` of :func:`metaeval.rank_report`: the route of the tests."""
RangerExample = Literal["classification-glue-data", "retrieval-colberter-data"]
"""``name=`` of :func:`metaeval.datasets.fetch_ranger`: the folders of Ranger's ``examples/``."""
TauPrior = Literal["halfnormal", "halfcauchy", "halfstudent", "uniform", "jeffreys"]
"""``tau_prior=`` of :func:`metaeval.bayes_pool`: the prior of the heterogeneity τ."""
LmEvalReplicates = Literal["folders"]
"""``replicates=`` of :func:`metaeval.io.read_lm_eval`: ``"folders"`` reads the sub-folders
of the folder given (one lm-eval output folder per seed) as replicates."""

EFFECT_TYPES: tuple[str, ...] = get_args(EffectType)
POOL_METHODS: tuple[str, ...] = get_args(PoolMethod)
CI_METHODS: tuple[str, ...] = get_args(CIMethod)
COMPARE_TESTS: tuple[str, ...] = get_args(CompareTest)
MEANS_CIS: tuple[str, ...] = get_args(MeansCI)
REPLICATE_DESIGNS: tuple[str, ...] = get_args(ReplicateDesign)
ALTERNATIVES: tuple[str, ...] = get_args(Alternative)
PLAN_TESTS: tuple[str, ...] = get_args(PlanTest)
ADJUSTMENTS: tuple[str, ...] = get_args(Adjustment)
ADJUST_FAMILIES: tuple[str, ...] = get_args(AdjustFamily)
CORRELATIONS: tuple[str, ...] = get_args(Correlation)
STATISTICS: tuple[str, ...] = get_args(Statistic)
AGGREGATIONS: tuple[str, ...] = get_args(Aggregation)
RANK_BYS: tuple[str, ...] = get_args(RankBy)
POOL_MODELS: tuple[str, ...] = get_args(PoolModel)
TAU2_CIS: tuple[str, ...] = get_args(Tau2CI)
ROBUST_METHODS: tuple[str, ...] = get_args(RobustMethod)
LM_EVAL_REPLICATES: tuple[str, ...] = get_args(LmEvalReplicates)
TAU_PRIORS: tuple[str, ...] = get_args(TauPrior)

ADJUST_FAMILY_KEYS: dict[str, tuple[str, ...]] = {
    "pairs": ("metric", "task"),
    "tasks": ("metric",),
    "metrics": ("task",),
    "all": (),
}
"""The columns whose values make one family of each ``family=`` (none: one family)."""

DEFAULT_EFFECT: EffectType = "smcrp"
"""The default ``effect=``: standardized by the raw-score SD (the scale of Ranger's
``smd``) with a sampling variance derived for paired designs; see the guide's
"Choosing an effect size and a pooling method"."""
DEFAULT_POOL_METHOD: PoolMethod = "REML"
"""The default τ² estimator of :func:`metaeval.pool` (Langan et al. 2019; Veroniki et al. 2016)."""
DEFAULT_CI: CIMethod | None = None
"""The default ``test=`` of :func:`metaeval.pool`: None, Knapp–Hartung (``"knha"``) for the
random-effects methods (IntHout et al. 2014) and ``"z"`` for the common-effect model, for
which Knapp–Hartung is not meant (see :func:`resolve_ci`)."""


def resolve_ci(method: str, ci: str | None) -> str:
    """``ci`` as given, or for None the default of ``method``: ``"z"`` for the common-effect
    model (``EE``, ``FE``), ``"knha"`` for the others.

    >>> resolve_ci("REML", None), resolve_ci("EE", None), resolve_ci("DL", "z")
    ('knha', 'z', 'z')
    """
    if ci is not None:
        return ci
    return "z" if method in ("EE", "FE") else "knha"


DEFAULT_RESAMPLES = 10_000
"""The default ``n_resamples`` of every resampling test and bootstrap (``compare``,
``tukey``, ``bootstrap_effects``): the Monte Carlo standard error of a p-value near 0.05 is
√(0.05 · 0.95 / 10,000) = 0.0022 (0.0049 at 2,000, 0.0069 at 1,000), so that a reported
p-value of 0.04 or 0.06 is on its side of 0.05, and a 95% percentile interval's ends move
by about 1% of its width between seeds. ``rank_intervals``, ``leaderboard``,
``build_report`` and ``permutest`` still default to 1,000 (a refit or a ranking per
resample: 45 s instead of 7 s for the example's rank intervals); they follow when they
move (issue 40, item 3, second part)."""

RANGER: dict[str, str] = {"effect": "smd", "method": "DL", "test": "z"}
"""The options of the Ranger paper's procedure (Sertkan et al. 2023): Borenstein's paired
d with Hedges' J, DerSimonian–Laird τ², normal intervals. ``scores.meta.analyze(control,
**metaeval.RANGER)`` reproduces its table; the command's ``--ranger`` sets the same."""

MINUS = "\u2212"
"""The minus sign of text that people read (figures, HTML); LaTeX writes ``$-$``."""

TextTarget = Literal["text", "unicode", "latex"]
"""Where formatted text goes: plain text (the command's tables, running text: ``-``), text
that people read in figures and HTML (``−``, U+2212), or LaTeX (``$-$``)."""
SIGNS: dict[str, tuple[str, str, str]] = {
    "text": ("-", "+", "<"),
    "unicode": (MINUS, "+", "<"),
    "latex": ("$-$", "$+$", "$<$"),
}
"""The minus, plus and less-than signs of each :data:`TextTarget`: the one place that
knows how LaTeX writes them."""


def format_number(
    x: float,
    digits: int | None = None,
    *,
    significant: bool = False,
    signed: bool = False,
    to: TextTarget = "text",
    missing: str = "",
    keep_sign: bool = False,
) -> str:
    """``x`` with ``digits`` decimals: the one number format of tables, figures and the command.

    Rounded without a negative zero (``-0.0004`` → ``0.000``) unless ``keep_sign``:
    then a negative number that rounds to zero keeps its minus (``-0.000``), so that
    an interval bound just below zero does not read as zero or above (the bounds of
    every interval shown are written so). With ``significant``, ``digits`` counts
    significant digits instead (``0.0123`` → ``0.0123`` at 3); without ``digits``, the
    shortest text of up to six significant digits (``0.05``, ``95``: levels, options).
    ``signed`` writes ``+`` before positive numbers; ``to`` picks the signs (see
    :data:`SIGNS`: ``"$-$"`` in LaTeX, ``"−"`` in figures and HTML); NaN and ±inf give
    ``missing``.

    >>> format_number(-0.0004, 3), format_number(0.1, 3, signed=True), format_number(-2.5, 1, to="unicode")
    ('0.000', '+0.100', '−2.5')
    >>> format_number(-0.0004, 3, keep_sign=True), format_number(0.0004, 3, keep_sign=True)
    ('-0.000', '0.000')
    >>> format_number(0.05), format_number(100 * (1 - 0.05)), format_number(0.012345, 3, significant=True)
    ('0.05', '95', '0.0123')
    >>> format_number(-1.5, 2, signed=True, to="latex"), format_number(float("nan"), 2, missing="--")
    ('$-$1.50', '--')
    """
    if not np.isfinite(x):
        return missing
    value = float(x)
    sign = "+" if signed else ""
    if digits is None or significant:
        x = value + 0.0  # + 0.0: no "-0"
        text = format(x, (sign if x != 0 else "") + ("g" if digits is None else f".{digits}g"))
    else:
        x = round(value, digits) + 0.0  # + 0.0: no "-0.000"
        text = format(x, (sign if x != 0 else "") + f".{digits}f")
        if keep_sign and x == 0 and value < 0:
            text = "-" + text
    minus, plus, _ = SIGNS[to]
    return text.replace("-", minus).replace("+", plus)


def format_p(
    p: float, digits: int = 3, *, to: TextTarget = "text", missing: str = "", equals: bool = False
) -> str:
    """A p-value with ``digits`` decimals; below 10^-digits, ``"< 0.001"`` (at 3 digits).

    The one rule for p-values in tables, figures, running text and the command: a
    p-value that would round to zero or to the smallest shown value reads as below it
    (never ``0.000``, never scientific notation). ``equals`` puts ``"= "`` before a
    shown value, for running text (``"p " + format_p(p, equals=True)``); ``to`` picks
    the signs (``"$<$"`` in LaTeX, see :data:`SIGNS`); NaN gives ``missing``.

    >>> format_p(0.0123), format_p(0.0009), format_p(0.001), format_p(0.99996)
    ('0.012', '< 0.001', '0.001', '1.000')
    >>> format_p(2e-9, 4, to="latex"), "p " + format_p(0.05, equals=True), format_p(float("nan"), missing="--")
    ('$<$ 0.0001', 'p = 0.050', '--')
    """
    if not np.isfinite(p):
        return missing
    floor = 10.0**-digits
    if p < floor:
        return f"{SIGNS[to][2]} {format_number(floor, digits)}"
    text = format_number(p, digits, to=to)
    return f"= {text}" if equals else text


def is_p_column(name: Any) -> bool:
    """Whether a column holds p-values by its name: ``p_value``, ``<stat>_p_value`` or
    ``p_adjusted`` (the naming rule; probabilities of events are ``prob_<event>``).

    >>> [is_p_column(c) for c in ("p_value", "q_p_value", "p_adjusted", "prob_gain")]
    [True, True, True, False]
    """
    name = str(name)
    return name == "p_value" or name.endswith("_p_value") or name == "p_adjusted"


def format_cell(
    value: Any, digits: int, *, p: bool = False, to: TextTarget = "text", missing: str = ""
) -> str:
    """A table cell of any type as text: numbers through :func:`format_number` (a negative
    number that rounds to zero keeps its sign), p-values (``p``) through :func:`format_p`,
    integers and booleans as they are, infinities as ``inf``, anything else as ``str``;
    NaN, None and NA give ``missing``. Text is not escaped (see :func:`metaeval.report.escape`).

    >>> [format_cell(v, 3) for v in (-0.00004, 7, True, float("-inf"), "bm25")]
    ['-0.000', '7', 'True', '-inf', 'bm25']
    >>> format_cell(0.00002, 3, p=True), format_cell(-2, 3, to="latex"), format_cell(None, 3)
    ('< 0.001', '$-$2', '')
    """
    minus = SIGNS[to][0]
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return missing
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return str(int(value)).replace("-", minus)
    if isinstance(value, float | np.floating):
        v = float(value)
        if np.isinf(v):
            return "inf" if v > 0 else minus + "inf"
        if p:
            return format_p(v, digits, to=to, missing=missing)
        return format_number(v, digits, to=to, missing=missing, keep_sign=True)
    return str(value)


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#~|$!])|&(?=#?[0-9A-Za-z]+;)")


def escape_markdown(text: Any) -> str:
    r"""``text`` as literal Markdown text: the one escaping of every name metaeval writes
    into Markdown (the report, the rank report's paragraph, the command's tables).

    The characters that can open or close inline markup in CommonMark and GitHub's
    Markdown — ``\ ` * _ [ ] < > # ~ | $ !`` and an ``&`` that starts a character
    reference — get a backslash, and line breaks become spaces, so that a name never
    becomes a link, an image, HTML, emphasis, code, a table border or math. It renders as
    the text itself.

    >>> print(escape_markdown("[l](javascript:alert(1)) <img src=x> a_b R&D &lt;"))
    \[l\](javascript:alert(1)) \<img src=x\> a\_b R&D \&lt;
    """
    flat = " ".join(str(text).splitlines())
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), flat)


COUNT_COLUMNS = ("n", "k", "df", "q_df", "n_systems", "n_queries", "n_metrics")

#: The columns of a crossed design (:mod:`metaeval.paired.replicates`): each system's
#: standard error shared by every task, which :func:`metaeval.pool` reads.
SHARED_COLUMNS = ("se_shared_treatment", "se_shared_control")
"""Counts that the library keeps as floats (NaN where undefined) and tables show as integers."""


def counts_as_int(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the :data:`COUNT_COLUMNS` kept as floats shown as integers where every
    value is whole (``Int64``, NaN as missing); the input is not changed.

    >>> counts_as_int(pd.DataFrame({"df": [3.0, None], "f": [1.0, 2.0]})).dtypes.astype(str).tolist()
    ['Int64', 'float64']
    """
    changes = {}
    for column in frame.columns:
        values = frame[column]
        if column in COUNT_COLUMNS and pd.api.types.is_float_dtype(values.dtype):
            finite = values.dropna()
            if len(finite) and np.isfinite(finite).all() and (finite == np.round(finite)).all():
                changes[column] = values.astype("Int64")
    return frame.assign(**changes) if changes else frame


def _percent(v: float) -> str:
    """A relative change as a signed percentage: +12%, −0.5%."""
    text = f"{100 * v:+.0f}%" if abs(v) >= 0.095 else f"{100 * v:+.1f}%"
    return text.replace("-", MINUS)


@dataclass(frozen=True)
class EffectScale:
    """What an effect type is called, and the scale it is reported on.

    Attributes
    ----------
    label : str
        Its name in figure axes and table captions.
    report_prefix : str or None
        Effects analysed on another scale than they are reported on (``corr``
        on Fisher's z, ``rom`` on the log ratio): the name of the reporting-
        scale column (``r``, ``rel_change``) and the prefix of its interval
        columns (``r_ci_low``, ...).
    to_report, from_report : callable or None
        The transform to the reporting scale (``np.tanh``, ``np.expm1``) and
        back.
    cell : callable or None
        ``cell(value, digits)``: a value on the reporting scale as text for a
        figure (r to 2 decimals; a relative change as a percentage).
    tick : callable or None
        ``tick(value)``: an axis tick on the reporting scale.
    """

    label: str
    report_prefix: str | None = None
    to_report: Callable[[Any], Any] | None = None
    from_report: Callable[[Any], Any] | None = None
    cell: Callable[[float, int], str] | None = None
    tick: Callable[[float], str] | None = None

    def report(self, x: Any) -> Any:
        """``x`` on the reporting scale (itself when the effect has no other)."""
        return x if self.to_report is None else self.to_report(x)


def _r_tick(v: float) -> str:
    return "0" if np.isclose(v, 0) else f"{v:g}".replace("-", MINUS)


def _percent_tick(v: float) -> str:
    return "0%" if np.isclose(v, 0) else f"{100 * v:+g}%".replace("-", MINUS)


EFFECT_SCALES: dict[str, EffectScale] = {
    "md": EffectScale("Mean difference"),
    "smd": EffectScale("Standardized mean difference (Hedges' g)"),
    "smcrp": EffectScale("Standardized mean change (pooled SD)"),
    "smcc": EffectScale("Standardized mean change (SD of the differences)"),
    "rom": EffectScale(
        "Relative change of the mean",
        "rel_change",
        np.expm1,
        np.log1p,
        lambda v, digits: _percent(v),
        _percent_tick,
    ),
    "corr": EffectScale(
        "Correlation",
        "r",
        np.tanh,
        np.arctanh,
        lambda v, digits: format_number(v, 2, to="unicode"),
        _r_tick,
    ),
    "corr_diff": EffectScale("Difference of correlations (Fisher's z)"),
    "bootstrap": EffectScale("Difference"),
}
"""Every effect type's :class:`EffectScale` (also those of :func:`metaeval.bootstrap_effects`
and :func:`metaeval.paired.correlation_effects`)."""


def effect_scale(effect_type: str) -> EffectScale:
    """The :class:`EffectScale` of ``effect_type`` (a plain "Effect" for unknown ones)."""
    return EFFECT_SCALES.get(effect_type, EffectScale("Effect"))


#: Effect types analysed on another scale than they are reported on (``corr``,
#: ``rom``): their :class:`EffectScale`.
REPORTED = {name: s for name, s in EFFECT_SCALES.items() if s.report_prefix is not None}


def display_columns(columns: Sequence[str]) -> list[str]:
    """Every reporting-scale column :func:`add_display` can add for ``columns``.

    >>> display_columns(["effect", "ci_low"])
    ['rel_change', 'rel_change_ci_low', 'r', 'r_ci_low']
    """
    prefixes = [str(scale.report_prefix) for scale in REPORTED.values()]
    return [
        prefix if col == "effect" else f"{prefix}_{col}" for prefix in prefixes for col in columns
    ]


def add_display(table: pd.DataFrame, columns: Sequence[str]) -> None:
    """Add reporting-scale copies of ``columns`` in place, by the ``effect_type`` column.

    ``corr`` rows get ``r`` (tanh of Fisher's z), ``rom`` rows get ``rel_change``
    (exp − 1 of the log ratio): ``effect`` becomes ``r``/``rel_change`` and any
    other column c becomes ``r_c``/``rel_change_c``. Rows of other effect
    types are NaN there; nothing is added when no row needs it. The effects
    (``paired``) and the pooled tables (``pooling``) both add them, so the rule
    lives beside :data:`EFFECT_SCALES`.
    """
    if "effect_type" not in table.columns:
        return
    for effect_type, scale in REPORTED.items():
        rows = (table["effect_type"] == effect_type).to_numpy()
        if not rows.any():
            continue
        for col in columns:
            dst = scale.report_prefix if col == "effect" else f"{scale.report_prefix}_{col}"
            table[dst] = np.where(rows, scale.report(table[col].to_numpy()), np.nan)


def literal_signature(func: Callable[..., Any]) -> Callable[..., Any]:
    """Give ``func`` a signature whose annotations are evaluated, so that help() and
    notebook tooltips show ``method: Literal['EE', 'FE', ...]`` instead of the
    alias's name or a string (``'pd.DataFrame'``, under ``from __future__ import
    annotations``). An annotation that cannot be evaluated (a name imported only for
    type checking) stays as written; the others are evaluated one by one."""
    sig = inspect.signature(func)
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # noqa: BLE001 - a name only imported for type checking
        hints = {}
        inner = inspect.unwrap(func)
        namespace = getattr(inner, "__globals__", {})
        annotations = {p.name: p.annotation for p in sig.parameters.values()}
        annotations["return"] = sig.return_annotation
        for name, annotation in annotations.items():
            if isinstance(annotation, str):
                try:
                    hints[name] = eval(annotation, namespace)  # noqa: S307 - its own annotation
                except Exception:  # noqa: BLE001, S112
                    continue
    params = [
        p.replace(annotation=hints.get(p.name, p.annotation)) for p in sig.parameters.values()
    ]
    func.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=params, return_annotation=hints.get("return", sig.return_annotation)
    )
    return func


def public_signatures(module: Any) -> None:
    """Apply :func:`literal_signature` to every function of ``module.__all__`` whose
    signature shows a string annotation: ``metaeval`` calls it for itself and for each of
    its modules as it is imported (:func:`metaeval._after_import.after_each_import`), so that no public function's ``help()`` shows
    ``'pd.DataFrame'`` (``tests/test_naming.py`` checks it)."""
    for name in getattr(module, "__all__", ()):
        obj = vars(module).get(name)  # not getattr: no submodule loaded on first use
        if not inspect.isfunction(obj):
            continue
        sig = inspect.signature(obj)
        shown = [p.annotation for p in sig.parameters.values()] + [sig.return_annotation]
        if any(isinstance(a, str) for a in shown):
            literal_signature(obj)


RENAMED = {"METHODS": ("POOL_METHODS", "method"), "TESTS": ("CI_METHODS", "ci")}
"""Old names of option tuples (kept for one release): new name, and the option of
:func:`metaeval.pool` whose values they are."""


def renamed(module: str, name: str) -> tuple[str, ...]:
    """The value of an old name in :data:`RENAMED`, with a :class:`FutureWarning`."""
    import warnings

    new, option = RENAMED[name]
    warnings.warn(
        f"{module}.{name} is renamed {module}.{new} (the values of pool()'s `{option}` "
        "option); the old name will be removed in the next release.",
        FutureWarning,
        stacklevel=3,
    )
    return POOL_METHODS if new == "POOL_METHODS" else CI_METHODS


# ----------------------------------------------------------------- column order
POOLED_COLUMNS = (
    "method",
    "test",
    "k",
    "k_total",
    "effect",
    "se",
    "se_shared",
    "statistic",
    "df",
    "p_value",
    "p_adjusted",
    "ci_low",
    "ci_high",
    "pi_low",
    "pi_high",
    "prob_gain",
    "tau2",
    "tau",
    "tau2_low",
    "tau2_high",
    "i2",
    "i2_low",
    "i2_high",
    "h2",
    "q",
    "q_df",
    "q_p_value",
    "q_between",
    "q_between_df",
    "q_between_p_value",
    *display_columns(("effect", "ci_low", "ci_high", "pi_low", "pi_high")),
)
"""The columns :func:`metaeval.pool` writes besides the group keys (the pooling stage
writes them, the report lays them out)."""

POOLED_FIRST = (
    "k",
    "k_total",
    "effect",
    "ci_low",
    "ci_high",
    "p_value",
    "p_adjusted",
    "pi_low",
    "pi_high",
    "prob_gain",
    "tau2",
    "i2",
)
"""The columns of :func:`metaeval.pool` right after the group keys: the answer first."""
EFFECTS_FIRST = ("effect", "ci_low", "ci_high", "p_value")
"""The columns of :func:`metaeval.effects` right after the keys and task-level columns."""
COMPARE_FIRST = ("diff", "ci_low", "ci_high", "p_value", "p_adjusted", "effect_size")
"""The columns of :func:`metaeval.compare` right after the keys."""


def answer_first(
    frame: pd.DataFrame, lead: tuple[str, ...], results: tuple[str, ...]
) -> pd.DataFrame:
    """``frame`` with its key columns (those not in ``results``) first, then the ``lead``
    columns it has, then the other result columns in their order."""
    head = [c for c in frame.columns if c not in results and c not in lead]
    first = [c for c in lead if c in frame.columns]
    rest = [c for c in frame.columns if c not in head and c not in first]
    return frame[head + first + rest]


# ----------------------------------------------------------------- one vocabulary
COLUMNS: dict[str, str] = {
    # keys
    "task": "the task (a dataset, a benchmark): the unit that is pooled",
    "query": "the query (a topic, an item, a sample) within a task",
    "system": "the system (a model, a run)",
    "metric": "the evaluation measure",
    "metric_b": "the second metric of a pair (effect_covariance)",
    "replicate": "the repeated run (a seed) of a system on a query",
    "treatment": "the system compared with the control",
    "control": "the system the treatment is compared with",
    "system_a": "the first system of a pair (tukey, posthoc)",
    "system_b": "the second system of a pair (tukey, posthoc)",
    "term": "a coefficient of a meta-regression (intercept, moderator)",
    "term_b": "the second coefficient of a covariance entry (metareg's vcov)",
    "source": "a source of variation of the ANOVA table (system, query, residual)",
    "row": "the row of the input a problem or a value comes from",
    "query_id": "the query of a qrels or run file (TREC's qid)",
    "doc_id": "the document of a qrels or run file",
    # scores and inputs
    "value": "a per-query score",
    "relevance": "the relevance grade of a document for a query (qrels)",
    "score": "a system's score: a run's retrieval score, a leaderboard's aggregate",
    "scale": "the scale a metric's scores are stored on (sufficient statistics)",
    # counts
    "n": "the number of queries (paired observations) of a task",
    "k": "the number of tasks (effects) pooled",
    "k_total": "the number of tasks of a group, those with a missing effect included",
    "k_task": "the number of distinct tasks of a multilevel model",
    "n_tasks": "the number of tasks a ranking or test is computed from",
    "n_systems": "the number of systems",
    "n_queries": "the number of queries of a task",
    "n_treatment": "the number of queries the treatment has a score on",
    "n_control": "the number of queries the control has a score on",
    "n_clusters": "the number of clusters of queries",
    "n_items": "the number of items per cluster (plan_queries)",
    "n_coef": "the number of coefficients of a meta-regression",
    "n_subsets": "the number of subsets fitted (gosh)",
    "n_permutations": "the number of permutations (permutest)",
    "n_draws": "the number of simulated meta-analyses (plan_tasks, power)",
    "pilot_n": "the number of queries of the pilot data (plan_queries)",
    "pilot_k": "the number of tasks of the pilot data (plan_tasks)",
    "size": "the size of a planned study at a point of the power curve (n or k)",
    # options recorded in a table
    "method": "the τ² estimator (pool's method=)",
    "test": "the test (compare's test=, pooling's test=: z, t, knha, adhoc)",
    "model": "the pooling model (univariate, multilevel)",
    "effect_type": "the effect size (effects' effect=)",
    "effect_size_type": "the effect size reported beside a rank test (rank_report)",
    "correlation": "the correlation coefficient (pearson, spearman, kendall)",
    "alpha": "the significance level",
    "seed": "the random seed",
    "exact": "whether a resampling test enumerated every permutation",
    "variance_from": "where a mean's interval takes its variance from (means' interval=)",
    "ci_of": "what the interval of a rank report's summary is of (mean or median)",
    "tau2_source": "where the τ² of a power analysis comes from (pilot or given)",
    "tau_prior": "the prior of τ (bayes_pool)",
    "tau_scale": "the scale of the prior of τ (bayes_pool)",
    "normal": "whether every system's scores look normal (rank_report)",
    "homogeneity_test": "the test of equal variances (rank_report)",
    "omnibus": "the omnibus test chosen (rank_report)",
    "posthoc": "the post-hoc test chosen (rank_report)",
    "decision": "the decision of a Bayesian comparison (better, worse, equivalent)",
    "significant": "whether a difference is significant at alpha",
    "influential": "whether a task is influential by metafor's rules",
    "magnitude": "the magnitude of an effect in words (negligible, small, ...)",
    # estimates
    "effect": "the effect size of a task, or the pooled effect",
    "estimate": "a coefficient of a meta-regression (its estimate)",
    "diff": "the difference of means, treatment − control",
    "mean_diff": "the mean difference of a Bayesian comparison",
    "rank_diff": "the difference of mean ranks of a pair",
    "effect_size": "the standardised difference of a pair (compare, tukey)",
    "mean": "a mean (of scores, of ranks)",
    "median": "a median",
    "std": "a standard deviation",
    "mad": "a median absolute deviation",
    "mean_treatment": "the treatment's mean score",
    "mean_control": "the control's mean score",
    "statistic_treatment": "the treatment's statistic (bootstrap_effects)",
    "statistic_control": "the control's statistic (bootstrap_effects)",
    "mean_rank": "a system's mean rank",
    "rank": "a system's rank",
    "rank_a": "the mean rank of system_a",
    "rank_b": "the mean rank of system_b",
    "r": "a correlation (the effect on its reporting scale)",
    "z": "an effect's test statistic (effect / se)",
    "corr": "the correlation of two effects' estimates",
    "cov": "a covariance of two estimates",
    "robust_cov": "a cluster-robust covariance of two coefficients",
    "sd_diff": "the standard deviation of the paired differences",
    "sd_cluster": "the standard deviation of cluster means",
    "design_effect": "the design effect of clustered queries",
    "shift_treatment": "the value subtracted from the treatment's scores (sufficient statistics)",
    "shift_control": "the value subtracted from the control's scores (sufficient statistics)",
    "sum_x": "Σx of the treatment's shifted scores",
    "sum_y": "Σy of the control's shifted scores",
    "sum_xx": "Σx² of the treatment's shifted scores",
    "sum_yy": "Σy² of the control's shifted scores",
    "sum_xy": "Σxy of the shifted scores",
    "fitted": "a meta-regression's fitted value",
    "weight": "a task's weight in the pooled effect (percent)",
    "mu_mean": "the posterior mean of μ (bayes_pool)",
    "mu_sd": "the posterior standard deviation of μ (bayes_pool)",
    "tau_median": "the posterior median of τ (bayes_pool)",
    "shrunk_mean": "a task's shrunken (posterior) mean",
    "shrunk_sd": "a task's shrunken (posterior) standard deviation",
    "shrunk_low": "the lower end of a task's shrunken interval",
    "shrunk_high": "the upper end of a task's shrunken interval",
    "kendall_w": "Kendall's W (friedman)",
    "cd": "the critical difference of mean ranks (Nemenyi)",
    # uncertainty
    "se": "a standard error",
    "variance": "a sampling variance",
    "moe": "the margin of error (half the interval's width)",
    "ci_low": "the lower end of the confidence interval",
    "ci_high": "the upper end of the confidence interval",
    "boot_ci_low": "the lower end of the bootstrap percentile interval",
    "boot_ci_high": "the upper end of the bootstrap percentile interval",
    "r_ci_low": "ci_low as a correlation",
    "r_ci_high": "ci_high as a correlation",
    "robust_ci_low": "the lower end of the cluster-robust interval",
    "robust_ci_high": "the upper end of the cluster-robust interval",
    "robust_se": "the cluster-robust standard error",
    "robust_df": "the degrees of freedom of the cluster-robust test",
    "robust_statistic": "the cluster-robust test statistic",
    "robust_p_value": "the p-value of the cluster-robust test",
    "pi_low": "the lower end of the prediction interval",
    "pi_high": "the upper end of the prediction interval",
    "rank_low": "the lower end of a rank's interval",
    "rank_high": "the upper end of a rank's interval",
    "tie_group": "the group of systems whose rank intervals overlap",
    # tests
    "statistic": "the row's test statistic",
    "df": "the degrees of freedom of the row's test",
    "df1": "the numerator degrees of freedom of an F test",
    "df2": "the denominator degrees of freedom of an F test",
    "p_value": "the p-value of the row's test",
    "p_adjusted": "the p-value adjusted for multiplicity",
    "f": "an F statistic",
    "f_p_value": "the p-value of the F test",
    "chi2": "Friedman's χ² statistic",
    "ss": "a sum of squares (ANOVA)",
    "ms": "a mean square (ANOVA)",
    "ms_within": "the within-systems mean square (plan_queries' ANOVA design)",
    "model_p_value": "the p-value of the model's own test (permutest)",
    "homogeneity_p_value": "the p-value of the test of equal variances",
    "shapiro_p_value": "the p-value of the Shapiro–Wilk test",
    "shapiro_min_p_value": "the smallest Shapiro–Wilk p-value over the systems",
    "prob_gain": "the probability that the effect on a new task is positive",
    "prob_positive": "the posterior probability that μ is positive",
    "prob_better": "the posterior probability that the treatment is better",
    "prob_worse": "the posterior probability that the treatment is worse",
    "prob_equivalent": "the posterior probability that the two are practically equivalent",
    "prob_best": "the probability that a system ranks first",
    # heterogeneity
    "tau2": "τ², the between-task variance",
    "tau": "τ, the between-task standard deviation",
    "tau2_low": "the lower end of τ²'s interval",
    "tau2_high": "the upper end of τ²'s interval",
    "tau_low": "the lower end of τ's interval",
    "tau_high": "the upper end of τ's interval",
    "sigma2_task": "the between-task variance of a multilevel model",
    "sigma2_metric": "the between-metric variance within a task of a multilevel model",
    "i2": "I², the share of variance due to heterogeneity (percent)",
    "i2_low": "the lower end of I²'s interval",
    "i2_high": "the upper end of I²'s interval",
    "h2": "H², the total over the sampling variance",
    "r2": "R², the share of τ² the moderators explain",
    "q": "Cochran's Q",
    "q_df": "the degrees of freedom of Cochran's Q",
    "q_p_value": "the p-value of Cochran's Q",
    "q_between": "the Q of the test of subgroup differences",
    "q_between_df": "the degrees of freedom of q_between",
    "q_between_p_value": "the p-value of q_between",
    "qe": "the Q of residual heterogeneity (meta-regression)",
    "qe_df": "the degrees of freedom of qe",
    "qe_p_value": "the p-value of qe",
    "qm": "the omnibus statistic of the moderators (Q_M)",
    "qm_df": "the (numerator) degrees of freedom of qm",
    "qm_df2": "the denominator degrees of freedom of qm under an F test",
    "qm_p_value": "the p-value of qm",
    # influence
    "rstudent": "the studentized deleted residual",
    "dffits": "DFFITS",
    "cook_d": "Cook's distance",
    "cov_r": "the covariance ratio",
    "tau2_del": "τ² with the task left out",
    "q_del": "Q with the task left out",
    "hat": "the hat value (leverage)",
    "dfbetas": "DFBETAS",
    "x": "baujat: the task's contribution to Q",
    "y": "baujat: the task's influence on the pooled effect",
    # planning
    "mde": "the minimum detectable effect",
    "power": "the power",
    "power_normal": "the power by the normal approximation",
    "target": "the target of a power curve (power or width)",
    # list measures
    "ap_at_k": "average precision at k",
    "ndcg_at_k": "nDCG at k (linear gain)",
    "ndcg_at_k_exp": "nDCG at k (exponential gain)",
    "p_at_k": "precision at k",
    "rr": "reciprocal rank",
}
"""Every output column of every public function and what it holds: one name, one meaning.
``tests/test_naming.py`` reads every public function's output (the cases of
``tests/_helpers.py``) and fails on a column that is not here. The reporting-scale
copies (``rel_change``, ``r_ci_low``, ...) of :func:`display_columns` are in it too."""
COLUMNS.update(
    {
        name: f"{name.split('_ci_')[0].split('_pi_')[0]} scale: see add_display"
        for name in display_columns(("effect", "ci_low", "ci_high", "pi_low", "pi_high"))
        if name not in COLUMNS
    }
)

PARAMETERS: dict[str, Any] = {
    # the analysis
    "method": PoolMethod,
    "pool_method": PoolMethod,
    "effect": EffectType,
    "alternative": Alternative,
    "adjust": Adjustment,
    "family": AdjustFamily,
    "correlation": Correlation,
    "robust": bool | RobustMethod,
    "alpha": float,
    "seed": int,
    "n_resamples": int,
    "n_draws": int,
    "exact": bool,
    "progress": bool,
    # the table's parts
    "treatment": str | Sequence[str],
    "groups": str | Sequence[str],
    "over": str | Sequence[str],
    "by": str | Mapping[Any, Any],
    "mods": str | Sequence[str],
    "cluster": str,
    "higher_is_better": bool | Mapping[str, bool],
    "k": int,
    "mde": float,
    "power": float,
    "width": float,
    # tables and figures
    "digits": int,
    "col_wrap": int,
    "best": Best,
    "layout": TableLayout,
    "show": TableCells,
    "caption": str,
    "transpose": bool,
    "order": Sequence[str],
    "constants": Mapping[str, str],
}
"""Every parameter name of the vocabulary and its one annotation (``X`` or, where None
means "not given", ``X | None``): every public function and ``.meta`` method with a
parameter of that name annotates it so (``tests/test_naming.py``). Names whose values are
the function's own are in :data:`PARAMETERS_BY_FUNCTION` instead."""

PARAMETERS_BY_FUNCTION: dict[str, str] = {
    "test": "the test a function runs, among its own: compare's paired tests, pool's "
    "z/t/knha/adhoc, posthoc's rank tests, plan_queries' designs",
    "replicates": "how a function reads repeated runs: effects' designs, read_lm_eval's folders",
    "table": "the table a function reads, or the name of a table in a message (coerce_keys)",
    "path": "a file or folder of the function's format",
    "source": "what a reader reads: files, folders or a frame",
    "columns": "the columns a function reads or writes, by the function",
    "labels": "the labels a function uses: classes, forest's rows, baujat's marks",
    "name": "what a function's name= names: a Ranger example, a ranx run",
    "result": "the result a figure draws",
    "n": "a number of queries (plan_queries) or of pairs (fisher_z_variance)",
    "gain": "the gain of a list measure: its name, or a function",
    "query": "the column of queries (scores, from_wide), or queries by task (scores_from_arrays)",
    "task": "the column or the name of the task (scores, readers), or the task shown (gosh_plot)",
    "value": "the column of values (scores), or the value shown (pairwise)",
    "metric": "the metric(s) to use (ranking), the metric of the rows read (readers), or the "
    "column of metrics (scores, from_wide)",
    "metrics": "the metrics to use (build_report, pool_metrics, read_lm_eval)",
    "qrels": "relevance judgments: a table or a file to read, a table to write",
    "run": "a ranked list: a table or a file to read, a table to write",
    "runs": "runs by system: tables or files (evaluate), ranx's nested dicts (from_ranx_scores)",
}
"""Parameter names whose values depend on the function (see :data:`PARAMETERS`)."""

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
from collections.abc import Callable, Sequence
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
    "RankAggregation",
    "RANK_AGGREGATIONS",
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
    "MeansInterval",
    "MEANS_INTERVALS",
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
MeansInterval = Literal["t", "anova", "wilson", "clopper_pearson"]
"""``interval=`` of :func:`metaeval.means`: t intervals from each system's own standard error,
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
Aggregation = Literal["borda", "mean_rank", "copeland", "kemeny", "pooled"]
"""``aggregation=`` of :func:`metaeval.leaderboard`: the rule that makes one ranking of the
per-task scores, or ``"pooled"``, the pooled effect over a control."""
RankAggregation = Literal["mean", "borda", "pooled"]
"""``aggregation=`` of :func:`metaeval.rank_intervals`: the score that ranks the systems
(``"borda"`` and ``"pooled"`` as in :data:`Aggregation`)."""
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
Level = Literal["nominal", "ordinal", "interval", "ratio"]
"""``level=`` of :func:`metaeval.agreement`: the labels' level of measurement (Krippendorff)."""
AgreementCoefficient = Literal["alpha", "kappa", "fleiss", "ac1", "icc2", "icc3"]
"""``coefficient=`` of :func:`metaeval.agreement`."""
KappaWeights = Literal["linear", "quadratic"]
"""``weights=`` of :func:`metaeval.agreement`: Cohen's weighted κ (as scikit-learn's)."""
PPIEstimator = Literal["ppi++", "ppi", "classical", "judge"]
"""``estimator=`` of :func:`metaeval.ppi`: PPI++ (tuned λ), PPI (λ = 1), the gold labels
alone, or the judge's alone."""
FacetMethod = Literal["REML", "ML", "ANOVA"]
"""``method=`` of :func:`metaeval.facets`: the variance components' estimator (restricted
or full maximum likelihood, as lme4's ``REML=``, or expected mean squares on a balanced
design, all groups in one vectorized pass)."""
LmEvalReplicates = Literal["folders"]
"""``replicates=`` of :func:`metaeval.io.read_lm_eval`: ``"folders"`` reads the sub-folders
of the folder given (one lm-eval output folder per seed) as replicates."""

EFFECT_TYPES: tuple[str, ...] = get_args(EffectType)
POOL_METHODS: tuple[str, ...] = get_args(PoolMethod)
CI_METHODS: tuple[str, ...] = get_args(CIMethod)
COMPARE_TESTS: tuple[str, ...] = get_args(CompareTest)
MEANS_INTERVALS: tuple[str, ...] = get_args(MeansInterval)
REPLICATE_DESIGNS: tuple[str, ...] = get_args(ReplicateDesign)
ALTERNATIVES: tuple[str, ...] = get_args(Alternative)
PLAN_TESTS: tuple[str, ...] = get_args(PlanTest)
ADJUSTMENTS: tuple[str, ...] = get_args(Adjustment)
ADJUST_FAMILIES: tuple[str, ...] = get_args(AdjustFamily)
CORRELATIONS: tuple[str, ...] = get_args(Correlation)
STATISTICS: tuple[str, ...] = get_args(Statistic)
AGGREGATIONS: tuple[str, ...] = get_args(Aggregation)
RANK_AGGREGATIONS: tuple[str, ...] = get_args(RankAggregation)
POOL_MODELS: tuple[str, ...] = get_args(PoolModel)
TAU2_CIS: tuple[str, ...] = get_args(Tau2CI)
ROBUST_METHODS: tuple[str, ...] = get_args(RobustMethod)
LM_EVAL_REPLICATES: tuple[str, ...] = get_args(LmEvalReplicates)
TAU_PRIORS: tuple[str, ...] = get_args(TauPrior)
LEVELS: tuple[str, ...] = get_args(Level)
AGREEMENT_COEFFICIENTS: tuple[str, ...] = get_args(AgreementCoefficient)
KAPPA_WEIGHTS: tuple[str, ...] = get_args(KappaWeights)
PPI_ESTIMATORS: tuple[str, ...] = get_args(PPIEstimator)
FACET_METHODS: tuple[str, ...] = get_args(FacetMethod)

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
by about 1% of its width between seeds; :func:`metaeval.rank_intervals` too (its ``prob_best``
and, for the pooled effects, their correlations). ``build_report`` and ``permutest`` still
default to 1,000 (a refit or a ranking per resample); they follow when they move (issue 40,
item 3, second part)."""

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

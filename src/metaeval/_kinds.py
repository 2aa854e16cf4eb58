"""The kind of a metaeval table: one rule, asked by the accessor and by the report.

A :class:`~metaeval._results.Result` knows its kind (``Result.kind``) and is asked for
it; a :class:`pandas.DataFrame` is told from its columns, by the rules below, in this
order (the first that matches wins):

========== ==================================================================
kind       columns
========== ==================================================================
posthoc    ``system_a, system_b, rank_a, rank_b, p_adjusted``
bayes      ``treatment, control, prob_worse, prob_better``
metareg    ``term, estimate, se, p_value``
effects    ``effect, variance``
pooled     ``effect, se, k``
scores     ``value``
compare    ``treatment, control, diff, p_value, mean_treatment, mean_control``
tukey      ``system_a, system_b, diff, p_value``
analysis   ``row, task, effect, se``
friedman   ``chi2, kendall_w``
========== ==================================================================

A plan (:class:`metaeval.design.PowerResult`) is of kind ``power``; only the result says
so (its table alone is shown as it is, as any other result table).

This module is the core layer: it imports no stage.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ._results import Result

__all__ = ["KINDS", "RULES", "REPORT_KINDS", "table_kind", "kind_of_columns", "describe_kinds"]

KINDS: dict[str, str] = {
    "scores": "a scores table (columns task, query, system, metric, value)",
    "effects": "an effects table (columns effect, variance)",
    "pooled": "a pooled table (columns effect, se, k)",
    "compare": (
        "a compare() table (columns treatment, control, diff, p_value, mean_treatment, "
        "mean_control)"
    ),
    "tukey": "a tukey() table (columns system_a, system_b, diff, p_value)",
    "analysis": "an analyze() table (columns row, task, effect, se)",
    "posthoc": "a posthoc() table (columns system_a, system_b, rank_a, rank_b, p_adjusted)",
    "bayes": "a bayes_signed_rank() table (columns treatment, control, prob_worse, prob_better)",
    "metareg": "a metareg() table (columns term, estimate, se, p_value)",
    "friedman": "a friedman() table (columns chi2, kendall_w)",
    "report": "a report (a Report of metaeval.build_report(): means, tests, ranks)",
    "power": "a plan (a PowerResult of metaeval.design.power(): its table and power curves)",
}
"""Every table kind, with the words an error message describes it in."""

REPORT_KINDS: tuple[str, ...] = ("effects", "pooled", "compare", "analysis")
"""The kinds :func:`metaeval.report.to_latex`, ``to_html`` and ``style`` lay out (rows the
systems); any other result is written as it is, and a scores table is refused."""

RULES: tuple[tuple[str, frozenset[str]], ...] = (
    ("posthoc", frozenset({"system_a", "system_b", "rank_a", "rank_b", "p_adjusted"})),
    ("bayes", frozenset({"treatment", "control", "prob_worse", "prob_better"})),
    ("metareg", frozenset({"term", "estimate", "se", "p_value"})),
    ("effects", frozenset({"effect", "variance"})),
    ("pooled", frozenset({"effect", "se", "k"})),
    ("scores", frozenset({"value"})),
    (
        "compare",
        frozenset({"treatment", "control", "diff", "p_value", "mean_treatment", "mean_control"}),
    ),
    ("tukey", frozenset({"system_a", "system_b", "diff", "p_value"})),
    ("analysis", frozenset({"row", "task", "effect", "se"})),
    ("friedman", frozenset({"chi2", "kendall_w"})),
)
"""``(kind, columns)`` in the order they are tried: a table with all the columns of a rule
is of its kind. More specific rules come first (a posthoc table has a ``p_value`` too)."""


def table_kind(table: Any) -> str | None:
    """The kind of a metaeval table or result, or None.

    A :class:`~metaeval._results.Result` says its kind (``result.kind``); a DataFrame is
    told from its columns by :data:`RULES`: ``"posthoc"``, ``"bayes"``, ``"metareg"``,
    ``"effects"``, ``"pooled"``, ``"scores"``, ``"compare"``, ``"tukey"``,
    ``"analysis"`` or ``"friedman"``; a plan says ``"power"``. Anything else is None.

    Examples
    --------
    >>> import metaeval
    >>> from metaeval.accessor import table_kind
    >>> scores = metaeval.load_example()
    >>> table_kind(scores), table_kind(scores.meta.effects("knn"))
    ('scores', 'effects')
    """
    if isinstance(table, Result):
        return table.kind or None
    if not isinstance(table, pd.DataFrame):
        return None
    return kind_of_columns(table.columns)


def kind_of_columns(columns: Any) -> str | None:
    """The kind of a table with these columns (:data:`RULES`), or None; for frames of
    other libraries, whose columns are all that is known without reading them.

    >>> kind_of_columns(["task", "query", "system", "metric", "value"])
    'scores'
    """
    found = set(columns)
    return next((kind for kind, needed in RULES if needed <= found), None)


def describe_kinds(kinds: tuple[str, ...] | list[str]) -> str:
    """``"a compare() table (...) or a tukey() table (...)"``: the kinds, in words."""
    names = [KINDS[k] for k in kinds]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]

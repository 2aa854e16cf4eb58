"""``metaeval facets``: where a score's uncertainty comes from (items, prompts, seeds,
judges), the facet-aware standard errors of the systems' differences, and what the next
run should spend on."""

from __future__ import annotations

import argparse

from ._common import (
    UsageError,
    check_column,
    check_names,
    check_outputs,
    finish,
    output,
    read_table,
)
from ._parser import FACET_METHODS, Formatter, Once, output_options, positive_number, probability

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The parser of ``metaeval facets``, added to the subparsers ``sub``."""
    facets = sub.add_parser(
        "facets",
        formatter_class=Formatter,
        help="variance components of queries, prompts, seeds, judges; facet-aware SEs; a D study",
        description="Read a table of scores with a column per facet (task, query, system, "
        "metric, value and e.g. prompt, seed: one row per observation; CSV, TSV, Parquet or "
        "JSON lines), fit per task and metric a crossed random-effects model (REML, as "
        "lme4) with the system fixed and every --random facet random, and print the "
        "variance components, every system's difference from --control (or every pair) "
        "with its facet-aware standard error (Satterthwaite df) beside the item-only one, "
        "and the G coefficients. With --plan, the decision study: the cheapest numbers of "
        "queries, prompts, seeds, ... that reach --target-se (or detect --mde with --power) "
        "at the --costs of one level of each facet, or the smallest SE within --budget.",
        epilog="Examples:\n"
        "  metaeval facets runs.csv --random query prompt seed --control base\n"
        "  metaeval facets runs.csv --random query prompt --plan --costs query=1,prompt=50 "
        "--mde 0.02",
    )
    facets.add_argument("scores", metavar="SCORES", help="the table of scores")
    facets.add_argument(
        "--random", nargs="+", required=True, metavar="COLUMN", help="the random facets"
    )
    facets.add_argument("--control", action=Once, help="compare every system with this one")
    facets.add_argument("--method", choices=FACET_METHODS, default="REML", help="the estimator")
    facets.add_argument("--alpha", type=probability, default=0.05, help="1 - confidence level")
    group = facets.add_argument_group("the decision study")
    group.add_argument("--plan", action="store_true", help="plan the next run")
    group.add_argument(
        "--costs",
        metavar="FACET=COST,...",
        help="the cost of one level of each facet (e.g. query=1,prompt=50,seed=200)",
    )
    group.add_argument("--target-se", type=positive_number, help="the SE of a difference to reach")
    group.add_argument("--mde", type=positive_number, help="the difference to detect")
    group.add_argument("--power", type=probability, default=0.8, help="the power for --mde")
    group.add_argument("--budget", type=positive_number, help="the most the design may cost")
    output_options(facets)
    return facets


def _costs(text: str | None, random: list[str]) -> dict[str, float]:
    """``query=1,prompt=50`` as a mapping, each name a --random facet."""
    if not text:
        return {}
    out = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        name = name.strip()
        try:
            out[name] = float(value)
        except ValueError:
            raise UsageError(f"--costs {text}: {part!r} is not FACET=NUMBER.") from None
        if name not in random:
            raise UsageError(f"--costs {text}: {name!r} is not one of --random {random}.")
    return out


def run(args: argparse.Namespace) -> int:
    """Run ``metaeval facets`` on the parsed ``args``; returns the exit code."""
    import metaeval

    check_outputs(args, {"--tables": args.tables}, [args.scores])
    planning = [args.target_se, args.mde, args.budget]
    if args.plan and all(v is None for v in planning):
        raise UsageError("--plan needs what to aim at: --target-se, --mde or --budget.")
    if not args.plan and (any(v is not None for v in planning) or args.costs):
        raise UsageError("--costs, --target-se, --mde and --budget go with --plan.")
    costs = _costs(args.costs, args.random)
    table = read_table(args.scores, "a table of scores with a column per facet")
    for column in args.random:
        check_column("--random", column, table.columns, args.scores)
    if args.control is not None and "system" in table.columns:
        check_names(
            "--control", args.control, list(dict.fromkeys(table["system"].astype(str))), args.scores
        )
    res = metaeval.facets(
        table, args.random, method=args.method, control=args.control, alpha=args.alpha
    )
    out = output(args)
    out.note(
        f"{args.method} fits, one per task and metric; random facets: {', '.join(args.random)}"
    )
    comp = ["task", "metric", "component", "variance", "share", "boundary"]
    out.table("Variance components", res.components[comp])
    if len(res.pairs):
        cols = ["task", "metric", "treatment", "control", "effect", "se", "df", "ci_low", "ci_high"]
        out.table(
            "Paired differences, facet-aware (naive_se: the items only)",
            res.pairs[[*cols, "naive_se"]],
        )
    means = ["task", "metric", "system", "mean", "se", "naive_se"]
    out.table("Means", res.table[means])
    g = ["task", "metric", "g_relative", "g_absolute"]
    out.table(
        "G coefficients (systems as the object of measurement)", res.g[[c for c in g if c in res.g]]
    )
    if args.plan:
        plan = res.plan(
            costs=costs,
            target_se=args.target_se,
            mde=args.mde,
            power=args.power,
            budget=args.budget,
        )
        out.table("Decision study: the observed and the planned design", plan.table)
    finish(out, args)
    return 0

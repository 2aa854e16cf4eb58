"""``metaeval judges``: how much a table's judges agree, how wrong they are against gold
labels, and the comparison of systems that uses the judge's labels without trusting it."""

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
from ._parser import LEVELS, Formatter, Once, output_options, positive, probability, seed_value

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The parser of ``metaeval judges``, added to the subparsers ``sub``."""
    judges = sub.add_parser(
        "judges",
        formatter_class=Formatter,
        help="judges' agreement, their errors against gold labels, PPI comparisons",
        description="Read a table of labels (columns task, query, system, metric, judge, "
        "value: one row per label; CSV, TSV, Parquet or JSON lines) and print, per task and "
        "metric, how much the judges agree (Krippendorff's alpha, with a bootstrap "
        "interval), each judge's errors against the --gold judge (sensitivity, "
        "specificity, mean error; the effective number of independent judges) and, with "
        "--control, every system's paired difference from it by the --judge's labels "
        "alone, the gold labels alone and PPI++ (the judge's labels rectified by the gold "
        "slice).",
        epilog="Examples:\n"
        "  metaeval judges labels.csv --gold human\n"
        "  metaeval judges labels.csv --gold human --judge gpt --control base "
        "--cluster passage\n"
        "  metaeval judges labels.parquet --gold human --level ordinal --tables judges.md",
    )
    judges.add_argument("labels", metavar="LABELS", help="the table of labels")
    judges.add_argument("--gold", action=Once, help="the judge taken as truth (default: human)")
    judges.add_argument(
        "--judge", action=Once, help="the judge PPI rectifies (default: the only other one)"
    )
    judges.add_argument("--control", action=Once, help="compare every system with this one (PPI++)")
    judges.add_argument("--cluster", action=Once, help="a column of related queries (passage)")
    judges.add_argument(
        "--level",
        choices=LEVELS,
        default="nominal",
        help="the labels' level of measurement (Krippendorff's alpha)",
    )
    judges.add_argument("--alpha", type=probability, default=0.05, help="1 - confidence level")
    judges.add_argument("--n-resamples", type=positive, default=1000, help="bootstrap resamples")
    judges.add_argument("--seed", type=seed_value, help="the bootstrap's seed (default: drawn)")
    output_options(judges)
    return judges


def run(args: argparse.Namespace) -> int:
    """Run ``metaeval judges`` on the parsed ``args``; returns the exit code."""
    import pandas as pd

    import metaeval
    from metaeval.errors import excerpt, resolve_seed

    check_outputs(args, {"--tables": args.tables}, [args.labels])
    if args.gold is None:
        args.gold = "human"
    labels = read_table(args.labels, "a table of labels")
    check_column("--cluster", args.cluster, labels.columns, args.labels)
    if "judge" in labels.columns:
        found = list(pd.unique(labels["judge"].dropna().astype(str)))
        check_names("--gold", args.gold, found, args.labels, what="judge")
        if args.judge is not None:
            check_names("--judge", args.judge, found, args.labels, what="judge")
        others = [j for j in found if j != args.gold]
    else:
        others = []
    if "system" in labels.columns and args.control is not None:
        systems = list(pd.unique(labels["system"].astype(str)))
        check_names("--control", args.control, systems, args.labels)
    seed = resolve_seed(args.seed)
    options = {"cluster": args.cluster, "alpha": args.alpha, "seed": seed}
    out = output(args)
    raters = [j for j in others if j != args.gold] or None
    agree = metaeval.agreement(
        labels, raters, level=args.level, n_resamples=args.n_resamples, **options
    )
    keep = ["task", "metric", "coefficient", "agreement", "ci_low", "ci_high", "n_units"]
    out.note(
        f"{len(others)} judge(s) besides {excerpt(args.gold)}; bootstrap over "
        f"{args.cluster + ' clusters' if args.cluster else 'items'}, {args.n_resamples} "
        f"resamples, seed {seed}"
    )
    out.table("Agreement of the judges (Krippendorff's alpha)", agree.table[keep])
    errors = metaeval.judge_errors(labels, args.gold, n_resamples=args.n_resamples, **options)
    cols = [
        "task",
        "metric",
        "judge",
        "n_gold",
        "accuracy",
        "sensitivity",
        "specificity",
        "bias",
        "prevalence",
    ]
    out.table(f"Judges against {excerpt(args.gold)}", errors.table[cols])
    panel = ["task", "metric", "n_judges", "error_corr", "n_eff", "n_eff_low", "n_eff_high"]
    out.table("Effective number of independent judges", errors.panel[panel])
    if args.control is not None:
        judge = args.judge
        if judge is None and len(others) != 1:
            raise UsageError(f"--control needs --judge: the judges are {others}.")
        rows = [
            metaeval.ppi(
                labels,
                args.gold,
                judge,
                args.control,
                estimator=e,
                cluster=args.cluster,
                alpha=args.alpha,
            )
            for e in ("judge", "classical", "ppi++")
        ]
        both = pd.concat(rows, ignore_index=True)
        cols = [
            "task",
            "metric",
            "treatment",
            "control",
            "estimator",
            "effect",
            "ci_low",
            "ci_high",
            "n_gold",
            "lambda",
        ]
        out.table("Paired differences: the judge alone, gold alone, PPI++", both[cols])
    finish(out, args)
    return 0

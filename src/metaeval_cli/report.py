"""``metaeval report``: one report (means, tests, pooled effects, ranks, methods) in a file."""

from __future__ import annotations

import argparse

from ._common import UsageError, check_column, check_names, check_outputs
from ._parser import (
    ADJUSTMENTS,
    COMPARE_TESTS,
    LEVELS,
    Formatter,
    Once,
    family_option,
    model_options,
    positive,
    probability,
    seed_value,
)

__all__ = ["add_parser", "run"]

WRITERS = {
    ".html": "to_html",
    ".htm": "to_html",
    ".md": "to_markdown",
    ".json": "to_json",
    ".tex": "to_latex",
}
"""The report's format by the output's suffix."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The parser of ``metaeval report``, added to the subparsers ``sub``."""
    from .meta import add_input_options

    rep = sub.add_parser(
        "report",
        formatter_class=Formatter,
        help="one report (means, tests, pooled effects, rank intervals, methods) in a file",
        description="Write one report of the scores (any input 'metaeval meta' reads): "
        "per-task means with intervals, tests against --control, pooled effects, rank "
        "intervals with tie groups and a methods paragraph written from the same numbers. "
        "The format follows the suffix of --output: .html (one self-contained page), .md, "
        ".json or .tex; without --output, Markdown on stdout.",
        epilog="Examples:\n"
        "  metaeval report scores.csv --control bm25 -o report.html\n"
        "  metaeval report scores.csv --control bm25 dense --adjust fdr_bh -o report.md\n"
        "  metaeval report scores.csv --seed 1 -o leaderboard.json   # ranks only\n"
        "  metaeval report labels.csv --control base --judge gpt --gold human -o judged.html",
    )
    add_input_options(rep)
    rep.add_argument("--control", nargs="+", help="the control system(s); none: ranks only")
    rep.add_argument("--metric", nargs="+", help="only these metrics")
    rep.add_argument("--test", choices=COMPARE_TESTS, default="t", help="the paired test")
    rep.add_argument(
        "--adjust",
        choices=(*ADJUSTMENTS, "none"),
        default="holm",
        help="the correction of the tests (see --family)",
    )
    family_option(rep)
    model_options(rep)
    rep.add_argument("--alpha", type=probability, default=0.05, help="1 - the intervals' level")
    rep.add_argument(
        "--n-resamples",
        type=positive,
        default=1000,
        metavar="B",
        help="bootstrap resamples of the rank intervals",
    )
    rep.add_argument("--seed", type=seed_value, help="the resampling's seed (default: drawn)")
    rep.add_argument(
        "--judge",
        action=Once,
        help="a table of labels (a judge column): the judge whose labels score the systems",
    )
    rep.add_argument(
        "--gold", action=Once, help="a table of labels: the judge taken as the truth (a human)"
    )
    rep.add_argument(
        "--level",
        choices=LEVELS,
        default="nominal",
        help="the labels' level of measurement (the judges' agreement)",
    )
    rep.add_argument(
        "-o", "--output", action=Once, metavar="FILE", help="the report (.html, .md, .json, .tex)"
    )
    return rep


def run(args: argparse.Namespace) -> int:
    """Run ``metaeval report`` on the parsed ``args``; returns the exit code."""
    from pathlib import Path

    from metaeval.errors import excerpt, quote_list

    from .meta import inputs_text, read_inputs

    writer = "to_markdown"
    if args.output:
        suffix = Path(args.output).suffix.lower()
        if suffix not in WRITERS:
            raise UsageError(
                f"--output {args.output}: cannot tell the format from its suffix; use one of "
                f"{sorted(WRITERS)}."
            )
        writer = WRITERS[suffix]
    check_outputs(args, {"--output": args.output}, list(args.scores))
    scores = read_inputs(args, lazy=False)
    source = inputs_text(args.scores)
    check_names("--control", args.control, list(dict.fromkeys(scores["system"])), source)
    check_column("--cluster", args.cluster, scores.columns, source)
    if "judge" in scores.columns and args.judge is None:
        others = [j for j in dict.fromkeys(scores["judge"].astype(str)) if j != args.gold]
        if len(others) > 1:
            raise UsageError(
                f"{source} holds the labels of several judges ({quote_list(others)}"
                + (f" besides {excerpt(args.gold)}" if args.gold else "")
                + "): --judge names the one whose labels score the systems, --gold the one "
                "taken as the truth."
            )
    if args.gold is not None or args.judge is not None:
        if "judge" not in scores.columns:
            raise UsageError(
                f"--gold and --judge need a table of labels with a 'judge' column (who "
                f"labelled each row); {source} has {quote_list(list(scores.columns))}."
            )
        found = list(dict.fromkeys(scores["judge"].astype(str)))
        for flag, name in (("--gold", args.gold), ("--judge", args.judge)):
            if name is not None:
                check_names(flag, name, found, source, what="judge")
    from metaeval.workflows import build_report

    control = args.control[0] if args.control and len(args.control) == 1 else args.control
    rep = build_report(
        scores,
        control,
        metrics=args.metric,
        test=args.test,
        adjust=None if args.adjust == "none" else args.adjust,
        family=args.family,
        effect=args.effect,
        method=args.method,
        pool_test=args.ci,
        alpha=args.alpha,
        n_resamples=args.n_resamples,
        seed=args.seed,
        cluster=args.cluster,
        gold=args.gold,
        judge=args.judge,
        level=args.level,
    )
    text = getattr(rep, writer)()
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"report: {args.output}")
    else:
        print(text)
    return 0

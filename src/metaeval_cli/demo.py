"""``metaeval demo``: the whole analysis on the bundled example."""

from __future__ import annotations

import argparse

from ._common import UsageError
from ._parser import Formatter, model_options, probability

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a light --help
if TYPE_CHECKING:
    import pandas as pd

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The parser of ``metaeval demo``, added to the subparsers ``sub``."""
    demo = sub.add_parser(
        "demo",
        formatter_class=Formatter,
        help="analyze the bundled example benchmark",
        description="Per-task effects and their random-effects summary on the bundled "
        "example (scikit-learn classifiers on scikit-learn's data sets), with a forest "
        "plot and a LaTeX table.",
        epilog="Examples:\n  metaeval demo --effect md --output figures\n  metaeval demo --ranger",
    )
    demo.add_argument("--control", default="logistic_regression", help="the control system")
    demo.add_argument(
        "--metric",
        default="accuracy",
        choices=["accuracy", "p_true_class"],
        help="the metric of the forest plot and the LaTeX table",
    )
    model_options(demo)
    demo.add_argument("--alpha", type=probability, default=0.05, help="1 - confidence level")
    demo.add_argument(
        "--output",
        default="metaeval-demo",
        help="folder for forest.pdf, forest.png and table.tex (created if needed)",
    )
    demo.add_argument(
        "--no-output", dest="output", action="store_const", const=None, help="write no files"
    )
    return demo


def run(args: argparse.Namespace) -> int:
    """Run ``metaeval demo`` on the parsed ``args``; returns the exit code."""
    from pathlib import Path

    import pandas as pd

    import metaeval
    from metaeval._options import format_number

    if args.output is not None and Path(args.output).exists() and not Path(args.output).is_dir():
        raise UsageError(f"--output {args.output}: is a file; name a folder (created if needed).")
    scores = metaeval.load_example()
    print(
        f"metaeval {metaeval.__version__} demo: {scores['system'].nunique()} scikit-learn "
        f"classifiers on {scores['task'].nunique()} data sets "
        f"({len(scores):,} per-sample scores), control = {args.control}\n"
        f"effect = {args.effect}, pooling = {args.method} with {args.ci} intervals, "
        f"{format_number(100 * (1 - args.alpha))}% level\n"
    )
    table = scores.meta.analyze(
        control=args.control, effect=args.effect, method=args.method, test=args.ci, alpha=args.alpha
    )
    table = table[table["metric"] == args.metric].drop(
        columns=["effect_type", "metric", "control", "row"]
    )
    with pd.option_context("display.width", 120, "display.max_rows", 200):
        print(
            table.to_string(
                index=False, na_rep="", float_format=lambda v: format_number(v, 4, significant=True)
            )
        )
    if args.output is not None:
        _demo_files(scores, args)
    return 0


def _demo_files(scores: pd.DataFrame, args: argparse.Namespace) -> None:
    """forest.pdf, forest.png and table.tex of the demo's analysis in ``args.output``."""
    from pathlib import Path

    from metaeval import forest_plot
    from metaeval.plot import save
    from metaeval.report import to_latex

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    chosen = scores[scores["metric"] == args.metric]
    effects = chosen.meta.effects(control=args.control, effect=args.effect, alpha=args.alpha)
    pooled = effects.meta.pool(method=args.method, test=args.ci, alpha=args.alpha)
    fig = forest_plot(
        effects,
        method=args.method,
        test=args.ci,
        alpha=args.alpha,
        pooled=pooled,
        title=f"Bundled example: {args.metric} against {args.control}",
    )
    written = [out / "forest.pdf", out / "forest.png", out / "table.tex"]
    save(fig, written[0])
    save(fig, written[1])
    written[2].write_text(to_latex(effects, pooled=pooled, label="tab:metaeval-demo"))
    print(f"\nwrote {', '.join(p.name for p in written)} to {out.resolve()}")

"""The ``metaeval`` command."""

from __future__ import annotations

import argparse
import sys


def _demo(args: argparse.Namespace) -> int:
    import pandas as pd

    import metaeval

    scores = metaeval.load_example()
    print(
        f"metaeval {metaeval.__version__} demo: {scores['system'].nunique()} scikit-learn "
        f"classifiers on {scores['task'].nunique()} data sets "
        f"({len(scores):,} per-sample scores), control = {args.control}\n"
        f"effect = {args.effect}, pooling = {args.method} with {args.ci} intervals, "
        f"{100 * (1 - args.alpha):g}% level\n"
    )
    table = scores.meta.analyze(
        control=args.control, effect=args.effect, method=args.method, ci=args.ci, alpha=args.alpha
    )
    table = table[table["metric"] == args.metric].drop(columns=["metric", "control", "row"])
    with pd.option_context("display.width", 120, "display.max_rows", 200):
        print(table.to_string(index=False, na_rep="", float_format=lambda v: f"{v:.4g}"))
    if args.output is not None:
        _demo_files(scores, args)
    return 0


def _demo_files(scores, args: argparse.Namespace) -> None:
    """forest.pdf, forest.png and table.tex of the demo's analysis in ``args.output``."""
    from pathlib import Path

    from .plot import forest, save
    from .report import to_latex

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    chosen = scores[scores["metric"] == args.metric]
    effects = chosen.meta.effects(control=args.control, effect=args.effect, alpha=args.alpha)
    pooled = effects.meta.pool(method=args.method, ci=args.ci, alpha=args.alpha)
    fig = forest(effects, method=args.method, ci=args.ci, alpha=args.alpha, pooled=pooled,
                 title=f"Bundled example: {args.metric} against {args.control}")  # fmt: skip
    written = [out / "forest.pdf", out / "forest.png", out / "table.tex"]
    save(fig, written[0])
    save(fig, written[1])
    written[2].write_text(to_latex(effects, pooled=pooled, label="tab:metaeval-demo"))
    print(f"\nwrote {', '.join(p.name for p in written)} to {out.resolve()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="metaeval",
        description="Effect-size meta-analysis for multi-task evaluation.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo",
        help="analyze the bundled example benchmark",
        description="Per-task effects and their random-effects summary on the bundled "
        "example (scikit-learn classifiers on scikit-learn's data sets). "
        "Example: metaeval demo --effect md --method REML --ci knha",
    )
    demo.add_argument("--control", default="logistic_regression")
    demo.add_argument("--metric", default="accuracy", choices=["accuracy", "p_true_class"])
    demo.add_argument("--effect", default="smd")
    demo.add_argument("--method", default="DL", help="tau2 estimator: DL, REML, PM, ...")
    demo.add_argument("--ci", default="z", help="z or knha (Knapp-Hartung)")
    demo.add_argument("--alpha", type=float, default=0.05)
    demo.add_argument(
        "--output",
        default="metaeval-demo",
        help="folder for forest.pdf, forest.png and table.tex (created if needed; "
        "default ./metaeval-demo); --no-output writes nothing",
    )
    demo.add_argument("--no-output", dest="output", action="store_const", const=None)
    demo.set_defaults(func=_demo)
    args = parser.parse_args(argv)
    from .errors import MetaEvalError

    try:
        return args.func(args)
    except MetaEvalError as err:
        print(f"metaeval: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

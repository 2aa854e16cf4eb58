"""``metaeval plan``: how many queries (or clusters, epochs, tasks) a comparison needs."""

from __future__ import annotations

import argparse

from ._common import UsageError, check_column, check_names, check_outputs, finish, output
from ._parser import (
    ALTERNATIVES,
    PLAN_TESTS,
    Formatter,
    Once,
    model_options,
    output_options,
    positive,
    probability,
    seed_value,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a light --help
if TYPE_CHECKING:
    import pandas as pd

__all__ = ["add_parser", "run"]


def _number(text: str) -> float:
    """An argument type: a finite number (``--mde``, ``--width``, ``--tau2``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The parser of ``metaeval plan``, added to the subparsers ``sub``."""
    from .meta import add_input_options

    plan = sub.add_parser(
        "plan",
        formatter_class=Formatter,
        help="how many queries, clusters, epochs or tasks a comparison needs, from a pilot",
        description="Plan an evaluation from a pilot (any input 'metaeval meta' reads). Give "
        "two of the size (--n queries or clusters per task; with --tasks, --k tasks), the "
        "minimum detectable difference --mde and the --power, and get the third: per task "
        "for the paired t-test (or Sakai's ANOVA and CI-width designs, --test), with "
        "--tasks for the pooled comparison (REML with Knapp-Hartung intervals by default, "
        "simulated). Prints the plan; --plot draws its power curves.",
        epilog="Examples:\n"
        "  metaeval plan pilot.csv --control bm25 --mde 0.02 --power 0.8\n"
        "  metaeval plan pilot.csv --control bm25 --n 50 --power 0.8   # the mde of 50 queries\n"
        "  metaeval plan inspect-logs/ --control base --mde 0.05 --power 0.8 --cluster passage\n"
        "  metaeval plan inspect-logs/ --control base --mde 0.05 --power 0.8 --epochs 5\n"
        "  metaeval plan pilot.csv --control bm25 --test ci --width 0.04\n"
        "  metaeval plan pilot.csv --control bm25 --tasks --mde 0.02 --power 0.8 --seed 1",
    )
    add_input_options(plan)
    plan.add_argument("--control", required=True, action=Once, help="the control system")
    plan.add_argument("--treatment", nargs="+", help="default: every other system")
    plan.add_argument("--metric", nargs="+", help="only these metrics")
    plan.add_argument("--n", type=positive, help="queries (clusters with --cluster) per task")
    plan.add_argument(
        "--mde",
        type=_number,
        help="the minimum difference to detect, in the "
        "metric's units (with --tasks: on the --effect scale)",
    )
    plan.add_argument("--power", type=probability, help="the power to reach (e.g. 0.8)")
    plan.add_argument("--alpha", type=probability, default=0.05, help="the test's level")
    plan.add_argument(
        "--alternative",
        choices=ALTERNATIVES,
        default="two-sided",
        help="the test's alternative (per-task designs)",
    )
    plan.add_argument(
        "--test",
        choices=PLAN_TESTS,
        default="t",
        help="t: the paired t-test; anova: one-way ANOVA over the systems (Sakai); "
        "ci: the queries for a confidence interval narrower than --width",
    )
    plan.add_argument("--width", type=_number, help="--test ci: the interval's full width")
    plan.add_argument(
        "--epochs",
        nargs="?",
        const=0,
        type=int,
        metavar="E",
        help="the pilot's 'replicate' column holds epochs (repeated answers to an item): "
        "plan with the within- and between-item variance split, for E epochs per item "
        "(alone: the pilot's number)",
    )
    plan.add_argument(
        "--seeds",
        nargs="?",
        const=0,
        type=int,
        metavar="R",
        help="the pilot's 'replicate' column holds seeds (runs of each system): plan with the "
        "seeds' variance, which more queries do not reduce, for R seeds per system (alone: "
        "the pilot's number)",
    )
    plan.add_argument(
        "--tasks",
        action="store_true",
        help="plan the tasks of the pooled comparison instead (from the "
        "pilot's effects and their tau^2)",
    )
    plan.add_argument("--k", type=positive, help="--tasks: the number of tasks")
    plan.add_argument("--tau2", type=_number, help="--tasks: tau^2 (default: the pilot's)")
    plan.add_argument(
        "--n-draws", type=positive, default=2000, help="--tasks: simulated comparisons per size"
    )
    plan.add_argument(
        "--seed",
        type=seed_value,
        help="--tasks: the simulation's seed (default: drawn and printed)",
    )
    model_options(plan)
    plan.add_argument(
        "--plot", action=Once, metavar="FILE", help="the power curves (.pdf, .png, .svg)"
    )
    output_options(plan)
    return plan


#: Options of the per-task designs and of --tasks, for the error naming the misplaced ones.
_QUERY_ONLY = ("n", "alternative", "test", "width", "epochs", "seeds")
_TASK_ONLY = ("k", "tau2", "seed")


def _given(args: argparse.Namespace, names: tuple[str, ...]) -> list[str]:
    defaults = {"alternative": "two-sided", "test": "t"}
    return [f"--{n}" for n in names if getattr(args, n) not in (None, defaults.get(n))]


def run(args: argparse.Namespace) -> int:
    """Run ``metaeval plan`` on the parsed ``args``; returns the exit code."""
    from .meta import inputs_text, read_inputs

    check_outputs(args, {"--plot": args.plot, "--tables": args.tables}, list(args.scores))
    misplaced = _given(args, _QUERY_ONLY if args.tasks else _TASK_ONLY)
    if misplaced:
        where = "per-task designs (without --tasks)" if args.tasks else "--tasks"
        raise UsageError(f"{', '.join(misplaced)}: only for {where}.")
    scores = read_inputs(args, lazy=False)
    source = inputs_text(args.scores)
    systems = list(dict.fromkeys(scores["system"]))
    check_names("--control", args.control, systems, source)
    check_names("--treatment", args.treatment, systems, source)
    check_column("--cluster", args.cluster, scores.columns, source)
    if args.metric:
        scores = _only_metrics(scores, args.metric, args.scores)
    plan = _tasks_plan(scores, args) if args.tasks else _queries_plan(scores, args)
    out = output(args)
    out.note(_describe(plan, args))
    out.table("Plan", plan.table)
    if args.plot:
        fig = plan.plot()
        fig.savefig(args.plot, bbox_inches="tight")
        out.note(f"power curves: {args.plot}")
    finish(out, args)
    return 0


def _only_metrics(scores: pd.DataFrame, metrics: list[str], inputs: list[str]) -> pd.DataFrame:
    import pandas as pd

    from metaeval.errors import quote_list

    found = list(pd.unique(scores["metric"]))
    unknown = [m for m in metrics if m not in found]
    if unknown:
        raise UsageError(f"--metric {unknown} not in {inputs[0]}; it has {quote_list(found)}.")
    return scores[scores["metric"].isin(metrics)].reset_index(drop=True)


def _queries_plan(scores: pd.DataFrame, args: argparse.Namespace):
    from metaeval.design import plan_queries

    if args.epochs is not None and args.seeds is not None:
        raise UsageError("--epochs and --seeds name what the 'replicate' column holds: give one.")
    replicates = (
        "epochs" if args.epochs is not None else "seeds" if args.seeds is not None else None
    )
    return plan_queries(
        scores,
        args.control,
        treatment=args.treatment,
        n=args.n,
        mde=args.mde,
        power=args.power,
        alpha=args.alpha,
        alternative=args.alternative,
        cluster=args.cluster,
        replicates=replicates,
        test=args.test,
        width=args.width,
        epochs=args.epochs or None,
        seeds=args.seeds or None,  # alone: the pilot's number
    )


def _tasks_plan(scores: pd.DataFrame, args: argparse.Namespace):
    import metaeval
    from metaeval.design import plan_tasks
    from metaeval.errors import resolve_seed

    effects = metaeval.effects(
        scores,
        control=args.control,
        treatment=args.treatment,
        effect=args.effect,
        alpha=args.alpha,
        cluster=args.cluster,
    )
    args.seed = resolve_seed(args.seed)
    return plan_tasks(
        effects,
        k=args.k,
        mde=args.mde,
        power=args.power,
        tau2=args.tau2,
        alpha=args.alpha,
        method=args.method,
        test=args.ci,
        n_draws=args.n_draws,
        seed=args.seed,
    )


def _describe(plan, args: argparse.Namespace) -> str:
    """The plan's first line: what was solved for, for which analysis."""
    solved = plan.table.attrs.get("solve") or next(
        (name for name in ("n", "mde", "power") if getattr(args, name, None) is None), ""
    )
    if args.tasks:
        return (
            f"plan of the tasks ({solved} solved for): effect {args.effect}, pooling "
            f"{args.method} with {args.ci} intervals, {args.n_draws:,} simulated "
            f"comparisons per size, seed {args.seed} (repeat with --seed {args.seed})"
        )
    design = {
        "t": "the paired t-test",
        "anova": "Sakai's one-way ANOVA design",
        "ci": "the confidence-interval width design",
    }[args.test]
    unit = "clusters of queries" if args.cluster else "queries"
    return f"plan of the {unit} per task ({solved} solved for): {design}, alpha {args.alpha}"

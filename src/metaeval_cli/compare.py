"""``metaeval compare``: significance tests between systems, as elinor-compare."""

from __future__ import annotations

import argparse

from ._common import (
    UsageError,
    advise,
    check_names,
    check_outputs,
    finish,
    means_wide,
    output,
    shown_paths,
)
from ._parser import (
    ADJUSTMENTS,
    COMPARE_TESTS,
    FAMILY_WORDS,
    Formatter,
    family_option,
    output_options,
    positive,
    probability,
    seed_value,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a light --help
if TYPE_CHECKING:
    import pandas as pd

    from ._console import Output

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The parser of ``metaeval compare``, added to the subparsers ``sub``."""
    cmp_ = sub.add_parser(
        "compare",
        formatter_class=Formatter,
        help="significance tests between systems, as elinor-compare",
        description="Compare systems on per-query scores. INPUTs are per-query CSVs, one "
        "per system (a query_id column and one column per metric, as elinor-evaluate "
        "writes them), or one tidy scores file (task, query, system, metric, value). "
        "Prints basic statistics, the systems and their aliases and the means; for two "
        "systems the paired t-test (mean difference, variance of the differences, "
        "effect size d_z, t, p, margin of error), the bootstrap and the randomization "
        "p-values; for three or more, per metric the means with their ANOVA margin of "
        "error, the two-way ANOVA table, Tukey's effect sizes and the randomized Tukey "
        "HSD p-values. Differences are row system minus column system. With --control, "
        "one compact table instead: a row per task and treatment with both means, the "
        "difference and its interval, and the p-value of --test (adjusted with --adjust); "
        "--tables FILE writes the full elinor layout and the compact table to FILE.",
        epilog="Examples:\n"
        "  metaeval compare pred_1.csv pred_2.csv\n"
        "  metaeval compare scores.parquet --control bm25 --test randomization --adjust holm\n"
        "  metaeval compare pred_1.csv pred_2.csv pred_3.csv --seed 7 --adjust holm\n"
        "  metaeval compare scores.parquet --print-mode raw > tables.tsv\n"
        "  metaeval compare a.csv b.csv c.csv --tables tables.tex",
    )
    cmp_.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="per-query CSVs, one per system, or one tidy scores file",
    )
    cmp_.add_argument("--names", nargs="+", metavar="NAME", help="system names of the CSVs")
    cmp_.add_argument("--metrics", nargs="+", metavar="METRIC", help="only these metrics")
    cmp_.add_argument("--task", default="default", help="task name of per-query CSVs")
    cmp_.add_argument(
        "--control",
        nargs="+",
        metavar="NAME",
        help="compare these systems' treatments against them, in one compact table",
    )
    cmp_.add_argument(
        "--treatment", nargs="+", metavar="NAME", help="with --control: default every other system"
    )
    cmp_.add_argument(
        "--test",
        choices=COMPARE_TESTS,
        default="t",
        help="with --control: the test of the compact table",
    )
    cmp_.add_argument(
        "--n-resamples",
        type=positive,
        default=10_000,
        metavar="B",
        help="resamples of the bootstrap, randomization and Tukey HSD tests",
    )
    cmp_.add_argument(
        "--seed", type=seed_value, help="seed of the resampling tests (default: drawn and printed)"
    )
    cmp_.add_argument(
        "--adjust",
        choices=ADJUSTMENTS,
        help="also print paired t-tests of every pair with p-values adjusted over the "
        "pairs of each metric; with --control, adjust the compact table's p-values over "
        "the (treatment, control) pairs of each task and metric (--family: over tasks, "
        "metrics or every test)",
    )
    family_option(cmp_)
    cmp_.add_argument("--alpha", type=probability, default=0.05, help="1 - confidence level")
    cmp_.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bars on resampling (default: on a terminal, for long runs)",
    )
    output_options(cmp_)
    return cmp_


def _compare_inputs(args: argparse.Namespace) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The scores and the table of systems (alias, system, file)."""
    from pathlib import Path

    import pandas as pd

    from metaeval.errors import FormatError, quote_list
    from metaeval.io import read_per_query_csv, read_scores

    if len(args.inputs) == 1:
        if args.names:
            raise UsageError(
                "--names names the per-query CSVs of several systems; a tidy "
                "scores file has its own system column."
            )
        try:
            scores = read_scores(args.inputs[0])
        except FormatError as err:
            if err.line == 1 and "are missing (found [" in str(err) and "'query_id'" in str(err):
                raise UsageError(
                    f"{args.inputs[0]} looks like one system's per-query CSV; compare needs "
                    "two or more of them, or one tidy scores file with a system column."
                ) from None
            raise
        systems = list(pd.unique(scores["system"]))
        files = [args.inputs[0]] * len(systems)
    else:
        stems = [Path(p).name.split(".")[0] for p in args.inputs]
        systems = list(args.names) if args.names else stems
        if len(systems) != len(args.inputs):
            raise UsageError(f"--names gives {len(systems)} names for {len(args.inputs)} inputs.")
        if len(set(systems)) < len(systems):
            raise UsageError(
                f"Two inputs would be called "
                f"{quote_list(sorted({s for s in systems if systems.count(s) > 1}))}; name the "
                "systems with --names."
            )
        scores = read_per_query_csv(dict(zip(systems, args.inputs, strict=True)), task=args.task)
        files = list(args.inputs)
    aliases = pd.DataFrame(
        {
            "alias": [f"System_{i + 1}" for i in range(len(systems))],
            "system": systems,
            "file": shown_paths(files),
        }
    )
    if args.metrics:
        found = list(pd.unique(scores["metric"]))
        unknown = [m for m in args.metrics if m not in found]
        if unknown:
            raise UsageError(f"--metrics {unknown} not in the input; it has {quote_list(found)}.")
        scores = scores[scores["metric"].isin(args.metrics)].reset_index(drop=True)
    if len(systems) < 2:
        raise UsageError(f"compare needs two or more systems; the input has {quote_list(systems)}.")
    return scores, aliases


def run(args: argparse.Namespace) -> int:
    """Run ``metaeval compare`` on the parsed ``args``; returns the exit code."""
    from metaeval.errors import resolve_seed

    check_outputs(args, {"--tables": args.tables}, list(args.inputs))
    if args.control is None and (args.treatment or args.test != "t"):
        raise UsageError(
            "--treatment and --test choose the compact table against a control; add --control NAME."
        )
    if args.family != "pairs" and not args.adjust:
        raise UsageError(
            f"--family {args.family} chooses the tests that --adjust adjusts "
            "together; add --adjust (e.g. --adjust holm)."
        )
    if args.adjust == "maxt" and (args.control is None or args.test != "randomization"):
        raise UsageError(
            "--adjust maxt (Westfall-Young max-T) adjusts the randomization "
            "test's p-values of a compact table: add --control NAME and "
            "--test randomization, or use --adjust holm."
        )
    scores, aliases = _compare_inputs(args)
    seed = resolve_seed(args.seed)
    if args.control is not None:
        return _compare_compact(scores, aliases, args, seed)
    out = output(args)
    _compare_elinor(scores, aliases, args, seed, out)
    finish(out, args)
    return 0


def _compare_elinor(scores, aliases, args, seed, out: Output) -> None:
    """elinor-compare's layout: statistics, systems, means, then the tests of two or more."""
    import pandas as pd

    from metaeval._options import format_number

    systems = list(aliases["system"])
    metrics = list(pd.unique(scores["metric"]))
    level = f"{format_number(100 * (1 - args.alpha))}%"
    basic = (
        scores.groupby("task", sort=False)
        .agg(
            n_systems=("system", "nunique"),
            n_queries=("query", "nunique"),
            n_metrics=("metric", "nunique"),
        )
        .reset_index()
    )
    if len(basic) == 1:
        basic = basic.drop(columns="task")
    out.table("Basic statistics", basic)
    out.table("Systems", aliases)
    out.table("Means", means_wide(scores, systems, metrics))
    out.note(f"seed: {seed} (repeat with --seed {seed}); resamples: {args.n_resamples:,}")
    if len(systems) == 2:
        _compare_two(scores, systems, args, seed, level, out)
    else:
        _compare_many(scores, systems, args, seed, level, out)


def _compare_compact(scores: pd.DataFrame, aliases: pd.DataFrame, args, seed: int) -> int:
    """``--control``: one row per (task, treatment[, control]) and a table per metric."""
    import io

    import pandas as pd

    import metaeval

    from ._console import Output

    systems = list(aliases["system"])
    check_names("--control", args.control, systems, "the input")
    check_names("--treatment", args.treatment, systems, "the input")
    treatments = args.treatment or [s for s in systems if s not in args.control]
    result = metaeval.compare(
        scores,
        control=list(args.control),
        treatment=list(treatments),
        test=args.test,
        n_resamples=args.n_resamples,
        seed=seed,
        adjust=args.adjust,
        family=args.family,
        alpha=args.alpha,
        progress=args.progress,
    )
    from metaeval._options import format_number

    out = output(args)
    level = f"{format_number(100 * (1 - args.alpha))}%"
    multi = scores["task"].nunique() > 1
    several = len(args.control) > 1
    out.note(
        f"test: {args.test}"
        + (f", p adjusted by {args.adjust} over {FAMILY_WORDS[args.family]}" if args.adjust else "")
        + f"; {level} intervals of the mean "
        "difference (t)"
        + (
            f"; seed: {seed} (repeat with --seed {seed}), resamples: {args.n_resamples:,}"
            if args.test in ("randomization", "bootstrap")
            else ""
        )
    )
    columns = [
        "task",
        "treatment",
        "control",
        "n",
        "mean_control",
        "mean_treatment",
        "diff",
        "ci_low",
        "ci_high",
        "p_value",
        "p_adjusted",
    ]
    keep = [
        c
        for c in columns
        if c in result.columns and (c != "task" or multi) and (c != "control" or several)
    ]
    tasks = {t: i for i, t in enumerate(pd.unique(scores["task"]))}
    pairs = {(t, c): i for i, (c, t) in enumerate((c, t) for c in args.control for t in treatments)}
    result = result.assign(
        _task=result["task"].map(tasks),
        _pair=[pairs[t, c] for t, c in zip(result["treatment"], result["control"], strict=True)],
    ).sort_values(["_task", "_pair"], kind="stable")
    for metric, part in result.groupby("metric", sort=False, observed=True):
        against = ", ".join(map(str, args.control))
        out.table(f"{metric}: treatment - control ({against}), {args.test} test", part[keep])
    if args.tables:  # the file keeps elinor's full layout, then the compact table
        full = Output(
            "raw", digits=args.digits, fmt=getattr(args, "format", None), stream=io.StringIO()
        )
        _compare_elinor(scores, aliases, args, seed, full)
        full.tables.extend(out.tables)
        finish(full, args)
    return 0


def _by_task(frame: pd.DataFrame, multi: bool) -> pd.DataFrame:
    return frame if multi else frame.drop(columns="task")


def _compare_two(scores, systems, args, seed, level, out: Output) -> None:
    import pandas as pd

    import metaeval
    from metaeval._multiplicity import adjust_in_table
    from metaeval._options import ADJUST_FAMILY_KEYS

    a, b = systems
    multi = scores["task"].nunique() > 1
    kw = dict(treatment=a, control=b, alpha=args.alpha)
    t = metaeval.compare(scores, test="t", **kw)
    md = metaeval.effects(scores, effect="md", **kw)
    key = ["metric", "task"]
    t = t.merge(md[[*key, "variance"]], on=key, how="left", validate="one_to_one")
    order = {m: i for i, m in enumerate(pd.unique(scores["metric"]))}
    t = t.sort_values(key, key=lambda c: c.map(order) if c.name == "metric" else c, kind="stable")
    table = pd.DataFrame(
        {
            "task": t["task"],
            "metric": t["metric"],
            "n": t["n"],
            "mean_diff": t["diff"],
            "var_diff": t["variance"] * t["n"],
            "effect_size": t["effect_size"],
            "t": t["statistic"],
            "p_value": t["p_value"],
            f"moe_{level}": t["moe"],
        }
    )
    if args.adjust and args.family == "pairs":
        advise(
            f"--adjust {args.adjust}: with two systems each task and metric has one "
            "comparison, so adjusted p-values would equal the p-values; none are printed. "
            "--family tasks, metrics or all adjusts across tasks, metrics or every test."
        )
    elif args.adjust:
        at = table.columns.get_loc("p_value") + 1
        table.insert(
            at, "p_adjusted", adjust_in_table(t, list(ADJUST_FAMILY_KEYS[args.family]), args.adjust)
        )
        out.note(f"p adjusted by {args.adjust} over {FAMILY_WORDS[args.family]}")
    out.table(f"Paired t-test: {a} - {b}", _by_task(table, multi))
    tests = t[key]
    for test in ("bootstrap", "randomization"):
        res = metaeval.compare(
            scores, test=test, n_resamples=args.n_resamples, seed=seed, progress=args.progress, **kw
        )
        res = res[[*key, "p_value"]].rename(columns={"p_value": f"{test}_p_value"})
        tests = tests.merge(res, on=key, how="left", validate="one_to_one")
    tests = tests[["task", "metric", "bootstrap_p_value", "randomization_p_value"]]
    out.table(
        f"Bootstrap and randomization tests: {a} - {b} (B = {args.n_resamples:,})",
        _by_task(tests, multi),
    )


def _matrix(
    pairs: pd.DataFrame, value: str, systems: list[str], antisymmetric: bool
) -> pd.DataFrame:
    """Square table (row system vs column system) from Tukey rows ``system_a, system_b``."""
    import pandas as pd

    full = pd.concat(
        [
            pairs[["system_a", "system_b", value]],
            pairs.rename(columns={"system_a": "system_b", "system_b": "system_a"}).assign(
                **{value: -pairs[value] if antisymmetric else pairs[value]}
            )[["system_a", "system_b", value]],
        ]
    )
    square = full.pivot(index="system_a", columns="system_b", values=value)
    square = square.reindex(index=systems, columns=systems)
    square.index.name = "system"
    square.columns.name = None
    return square.reset_index()


def _compare_many(scores, systems, args, seed, level, out: Output) -> None:
    import pandas as pd

    import metaeval
    from metaeval._multiplicity import adjust_in_table
    from metaeval._options import ADJUST_FAMILY_KEYS

    # each system's own interval, and beside it the margin from the ANOVA's residual
    # variance V_E that elinor prints for comparing the systems (Sakai 2018)
    means = metaeval.means(scores, alpha=args.alpha)
    keys = ["task", "metric", "system"]
    residual = metaeval.means(scores, interval="anova", alpha=args.alpha)
    means = means.merge(
        residual[[*keys, "moe"]].rename(columns={"moe": "anova_moe"}),
        on=keys,
        how="left",
        validate="one_to_one",
    )
    anova = metaeval.anova(scores)
    tukey = metaeval.tukey(scores, alpha=args.alpha)
    random = metaeval.tukey(
        scores,
        randomized=True,
        n_resamples=args.n_resamples,
        seed=seed,
        alpha=args.alpha,
        progress=args.progress,
    )
    pairwise = None
    if args.adjust:
        order = {s: i for i, s in enumerate(systems)}
        t = metaeval.compare(scores, control=None, test="t", alpha=args.alpha)
        t = t[t["treatment"].map(order) < t["control"].map(order)].reset_index(drop=True)
        t["p_adjusted"] = adjust_in_table(t, list(ADJUST_FAMILY_KEYS[args.family]), args.adjust)
        pairwise = t
    multi = scores["task"].nunique() > 1
    for (task, metric), _ in scores.groupby(["task", "metric"], sort=False, observed=True):
        where = f"{metric}" + (f" on {task}" if multi else "")
        m = means[(means["task"] == task) & (means["metric"] == metric)]
        m = (
            m.set_index("system")
            .reindex([s for s in systems if s in set(m["system"])])
            .reset_index()
        )
        out.table(
            f"Means and {level} margins of error (moe: each system's own; anova_moe: "
            f"from the ANOVA residual V_E, for comparing systems): {where}",
            m[["system", "n", "mean", "se", "moe", "ci_low", "ci_high", "anova_moe"]],
        )
        a = anova[(anova["task"] == task) & (anova["metric"] == metric)]
        out.table(
            f"Two-way ANOVA (systems x queries): {where}",
            a[["source", "ss", "df", "ms", "f", "p_value"]].astype({"df": int}),
        )
        present = [s for s in systems if s in set(m["system"])]
        tk = tukey[(tukey["task"] == task) & (tukey["metric"] == metric)]
        out.table(
            f"Tukey HSD effect sizes (row - column) / sqrt(V_E): {where}",
            _matrix(tk, "effect_size", present, antisymmetric=True),
        )
        rt = random[(random["task"] == task) & (random["metric"] == metric)]
        out.table(
            f"Randomized Tukey HSD p-values (B = {args.n_resamples:,}): {where}",
            _matrix(rt, "p_value", present, antisymmetric=False),
        )
        if pairwise is not None:
            pw = pairwise[(pairwise["task"] == task) & (pairwise["metric"] == metric)]
            pw = pd.DataFrame(
                {
                    "system_a": pw["treatment"],
                    "system_b": pw["control"],
                    "mean_diff": pw["diff"],
                    "effect_size": pw["effect_size"],
                    "t": pw["statistic"],
                    "p_value": pw["p_value"],
                    "p_adjusted": pw["p_adjusted"],
                    f"moe_{level}": pw["moe"],
                }
            )
            over = "the pairs" if args.family == "pairs" else FAMILY_WORDS[args.family]
            out.table(f"Paired t-tests, p adjusted by {args.adjust} over {over}: {where}", pw)

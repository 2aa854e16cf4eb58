"""The ``metaeval`` command: argument parsing only, so that ``--help`` answers at once.

This module imports nothing but the standard library; the commands live in
:mod:`metaeval.cli` and load pandas, scipy and the rest only when one runs.
Exit codes: 0 success, 1 a data error (a file that cannot be read, a table that
cannot be analysed), 2 a usage error (an unknown option or value, an option given
twice that takes one value, an output path whose folder does not exist).
"""

from __future__ import annotations

import argparse
import re
import sys

__all__ = ["main", "build_parser"]

PRINT_MODES = ("pretty", "raw")
FORMATS = ("markdown", "latex", "csv", "tsv")
ADJUSTMENTS = ("holm", "bonferroni", "fdr_bh")
COMPARE_TESTS = ("t", "wilcoxon", "sign", "randomization", "bootstrap")
# the library's own lists (metaeval.POOL_METHODS, ...), repeated so that --help imports nothing;
# tests/test_cli.py checks that they agree
POOL_METHODS = ("EE", "FE", "DL", "HE", "HS", "SJ", "ML", "REML", "EB", "PM")
CI_METHODS = ("z", "knha", "hksj")
EFFECT_TYPES = ("md", "smd", "smcrp", "smcc", "rom", "corr")
# the library's defaults (metaeval._options) and the Ranger preset (metaeval.RANGER), likewise
DEFAULTS = {"effect": "smcrp", "method": "REML", "ci": None}  # ci None: knha, z for EE
RANGER = {"effect": "smd", "method": "DL", "ci": "z"}


class _Formatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Keep the examples' line breaks and show each option's default: only a real one (not
    None or False) and only where the help text does not state it already."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "(default" in text:
            return text
        return super()._get_help_string(action)


class _Version(argparse.Action):
    """``--version``, reading the installed version only when asked."""

    def __init__(self, option_strings, dest, **kwargs):
        kwargs.update(nargs=0, default=argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import PackageNotFoundError, version

        try:
            parser.exit(message=f"metaeval {version('metaeval')}\n")
        except PackageNotFoundError:  # pragma: no cover - a source tree
            parser.exit(message="metaeval (not installed)\n")


class _Once(argparse.Action):
    """An option given at most once: a second value is a usage error, not a silent override.

    For options whose default is None (argparse would keep the last value).
    """

    def __call__(self, parser, namespace, values, option_string=None):
        given = getattr(namespace, self.dest, None)
        if given is not None:
            raise argparse.ArgumentError(
                self, f"given twice ({given!r} and {values!r}); give it once"
            )
        setattr(namespace, self.dest, values)


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1 (exclusive)")
    return value


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative; seeds are integers >= 0")
    return value


def _output_options(parser: argparse.ArgumentParser, *, tables: bool = True) -> None:
    group = parser.add_argument_group("output")
    group.add_argument(
        "--print-mode",
        choices=PRINT_MODES,
        default="pretty",
        help="pretty: aligned tables for the terminal; raw: tab-separated tables "
        "(a '# title' line, a header, the rows, a blank line) at full precision, for "
        "spreadsheets and scripts",
    )
    group.add_argument(
        "--digits", type=_positive, default=4, help="decimals shown by pretty, markdown and latex"
    )
    if tables:
        group.add_argument(
            "--format",
            choices=FORMATS,
            help="print the tables in this format instead (markdown, latex or csv for "
            "papers); with --tables, the format of that file (default: by its extension)",
        )
        group.add_argument(
            "--tables",
            action=_Once,
            metavar="FILE",
            help="also write the tables to FILE (.md, .tex, .csv or .tsv)",
        )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``metaeval`` command and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="metaeval",
        formatter_class=_Formatter,
        description="Effect-size meta-analysis for multi-task evaluation, and the IR "
        "evaluation and significance tests around it.",
        epilog="Examples:\n"
        "  metaeval demo\n"
        "  metaeval evaluate --qrels qrels.txt --run bm25=bm25.run --run dense=dense.run "
        "--measures nDCG@10 AP RR --output scores.csv\n"
        "  metaeval compare bm25.csv dense.csv splade.csv --seed 42\n"
        "  metaeval convert qrels.txt qrels.jsonl --rel-type true\n"
        "  metaeval meta scores.csv --control bm25 --plot forest.pdf\n"
        "Run 'metaeval COMMAND --help' for a command's options.\n"
        "Exit codes: 0 ok, 1 data error, 2 usage error.",
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    # ------------------------------------------------------------------ demo
    demo = sub.add_parser(
        "demo",
        formatter_class=_Formatter,
        help="analyze the bundled example benchmark",
        description="Per-task effects and their random-effects summary on the bundled "
        "example (scikit-learn classifiers on scikit-learn's data sets), with a forest "
        "plot and a LaTeX table.",
        epilog="Examples:\n  metaeval demo --effect md --output figures\n  metaeval demo --ranger",
    )
    demo.add_argument("--control", default="logistic_regression", help="the control system")
    demo.add_argument("--metric", default="accuracy", choices=["accuracy", "p_true_class"],
                      help="the metric of the forest plot and the LaTeX table")  # fmt: skip
    _model_options(demo)
    demo.add_argument("--alpha", type=_probability, default=0.05, help="1 - confidence level")
    demo.add_argument(
        "--output",
        default="metaeval-demo",
        help="folder for forest.pdf, forest.png and table.tex (created if needed)",
    )
    demo.add_argument(
        "--no-output", dest="output", action="store_const", const=None, help="write no files"
    )

    # -------------------------------------------------------------- evaluate
    ev = sub.add_parser(
        "evaluate",
        formatter_class=_Formatter,
        help="per-query IR measures of runs against qrels (TREC or elinor JSONL)",
        description="Score runs against relevance judgments with ir_measures: prints "
        "basic statistics of the files and each measure's mean per run, and writes the "
        "per-query scores as a tidy table. Files ending in .jsonl are elinor's JSON "
        "lines ('true' for qrels, 'pred' for runs); others are TREC files, plain or "
        "gzip. Measure names are ir_measures' (nDCG@10, AP, RR, P@5, R@100, "
        "AP(rel=2), ...); elinor's names (precision@3, ap, rr, ndcg@10, recall@k, "
        "success@k) are accepted too. The statistics count, per run, the judged queries it "
        "does not return (judged_missing) and the share of judged queries it returns "
        "(coverage); see --missing and --min-coverage.",
        epilog="Examples:\n"
        "  metaeval evaluate --qrels qrels.txt --run bm25.run --measures nDCG@10\n"
        "  metaeval evaluate --qrels true.jsonl --run bm25=pred_1.jsonl --run "
        "dense=pred_2.jsonl --measures precision@3 ap rr ndcg@3 --task toy "
        "--output scores.parquet\n"
        "  metaeval evaluate --qrels scifact=qrels/scifact.txt --qrels nfcorpus=qrels/nfcorpus.txt "
        "--run bm25=runs/bm25/{task}.trec --run tasb=runs/tasb/{task}.trec --measures ndcg@10 "
        "--output scores.parquet   # several collections in one call",
    )
    ev.add_argument(
        "--qrels",
        required=True,
        action="append",
        metavar="[TASK=]FILE",
        help="relevance judgments; repeat with TASK=FILE for several collections (TASK "
        "defaults to the file name without suffix)",
    )
    ev.add_argument(
        "--run",
        required=True,
        action="append",
        metavar="[NAME=]FILE",
        help="a run; repeat for several. NAME defaults to the file name without suffix. With "
        "several collections, FILE is a pattern with {task} (runs/bm25/{task}.trec)",
    )
    ev.add_argument("--measures", required=True, nargs="+", metavar="MEASURE",
                    help="ir_measures names (nDCG@10 AP RR P@5) or elinor's (ndcg@10 ap)")  # fmt: skip
    ev.add_argument(
        "--task", help="the task name written to the scores of one collection (default: default)"
    )
    ev.add_argument(
        "--missing",
        choices=["zero", "drop", "error"],
        default="zero",
        help="judged queries a run does not return: score 0 (as trec_eval -c), leave them out "
        "(means over the queries a run returned), or refuse the run; zero and drop warn, "
        "counting them",
    )
    ev.add_argument(
        "--min-coverage",
        type=_share,
        default=0.5,
        metavar="SHARE",
        help="the share of a task's judged queries every run must return (0 to 1; a run "
        "returning fewer is an error, whatever --missing says; 0 turns the check off)",
    )
    ev.add_argument(
        "--output",
        action=_Once,
        metavar="FILE",
        help="write the per-query scores (.csv, .tsv, .jsonl or .parquet; .gz for text)",
    )
    _output_options(ev, tables=False)

    # --------------------------------------------------------------- compare
    cmp_ = sub.add_parser(
        "compare",
        formatter_class=_Formatter,
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
    cmp_.add_argument("inputs", nargs="+", metavar="INPUT",
                      help="per-query CSVs, one per system, or one tidy scores file")  # fmt: skip
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
    cmp_.add_argument("--n-resamples", type=_positive, default=10_000, metavar="B",
                      help="resamples of the bootstrap, randomization and Tukey HSD tests")  # fmt: skip
    cmp_.add_argument(
        "--seed", type=_seed, help="seed of the resampling tests (default: drawn and printed)"
    )
    cmp_.add_argument(
        "--adjust",
        choices=ADJUSTMENTS,
        help="also print paired t-tests of every pair with p-values adjusted over the "
        "pairs of each metric; with --control, adjust the compact table's p-values over "
        "the (treatment, control) pairs of each task and metric",
    )
    cmp_.add_argument("--alpha", type=_probability, default=0.05, help="1 - confidence level")
    cmp_.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bars on resampling (default: on a terminal, for long runs)",
    )
    _output_options(cmp_)

    # --------------------------------------------------------------- convert
    conv = sub.add_parser(
        "convert",
        formatter_class=_Formatter,
        help="TREC qrels/runs <-> elinor JSONL",
        description="Convert between TREC files and elinor's JSON lines; the direction "
        "follows the file names (.jsonl is JSON lines, anything else TREC).",
        epilog="Examples:\n"
        "  metaeval convert qrels.txt true.jsonl --rel-type true\n"
        "  metaeval convert pred_1.jsonl pred_1.run --rel-type pred --tag bm25",
    )
    conv.add_argument("input", metavar="IN", help="the file to convert")
    conv.add_argument("output", metavar="OUT", help="the file to write (format by suffix)")
    conv.add_argument(
        "--rel-type",
        required=True,
        choices=["true", "pred"],
        help="true: relevance judgments (qrels); pred: a run",
    )
    conv.add_argument("--tag", default="metaeval", help="run tag written to a TREC run")

    # ------------------------------------------------------------------ meta
    meta = sub.add_parser(
        "meta",
        formatter_class=_Formatter,
        help="per-task effects and their random-effects summary (the Ranger pipeline)",
        description="Paired effect sizes of treatments against a control on every task "
        "and their meta-analytic summary, from a tidy scores file (.csv, .tsv, .jsonl, "
        ".parquet) or a Ranger config.yaml. Prints the per-task and pooled table and the "
        "heterogeneity of each summary; optionally a forest plot and a LaTeX table.",
        epilog="Examples:\n"
        "  metaeval meta scores.csv --control bm25\n"
        "  metaeval meta scores.parquet --control bm25 --treatment dense splade "
        "--plot forest.pdf --latex table.tex\n"
        "  metaeval meta ranger/classification-glue-data/config.yaml --control bert "
        "--ranger-metric accuracy --effect md\n"
        "  metaeval meta scores.csv --control bm25 --by domain\n"
        "  metaeval meta leaderboard/ --control base-model   # a folder of Parquet files\n"
        "  metaeval meta lm-eval-output/ --control llama --primary --latest   # lm-eval logs",
    )
    meta.add_argument(
        "scores",
        metavar="SCORES",
        nargs="+",
        help="scores files, folders of them or quoted glob patterns, concatenated (a key in "
        "two files is an error); folders of Parquet files are read with dask when it is "
        "installed (pip install 'metaeval[dask]'), in parallel and a partition at a time",
    )
    _column_options(meta)
    meta.add_argument(
        "--primary",
        nargs="?",
        const=True,
        type=_mapping,
        action=_Merge,
        metavar="TASK=METRIC,...",
        help="lm-eval output folders: one metric per task, named 'primary', so tasks pool "
        "together; alone, the common tasks' primary metrics (arc_challenge acc_norm, gsm8k "
        "exact_match,strict-match, ...); TASK=METRIC pairs (repeatable; metric names may "
        "hold commas: gsm8k=exact_match,flexible-extract) override the tasks they name, the "
        "others keep their defaults; the metric of each task is printed",
    )
    meta.add_argument(
        "--latest",
        action="store_true",
        help="lm-eval output folders: of a task a model ran more than once, the newest log "
        "(by the timestamp in its name; those read and left out are listed in a warning)",
    )
    meta.add_argument("--control", required=True, action=_Once, help="the control system")
    meta.add_argument("--treatment", nargs="+", help="default: every other system")
    meta.add_argument("--metric", nargs="+", help="only these metrics")
    _model_options(meta)
    meta.add_argument("--alpha", type=_probability, default=0.05, help="1 - confidence level")
    meta.add_argument("--by", metavar="COLUMN", help="subgroups: a task-level column")
    meta.add_argument(
        "--plot",
        action=_Once,
        metavar="FILE",
        help="forest plot (.pdf, .png, .svg); one file per metric",
    )
    meta.add_argument(
        "--plot-per-treatment",
        action="store_true",
        help="--plot: one file per metric and treatment (FILE-METRIC-TREATMENT.ext), for "
        "many treatments",
    )
    meta.add_argument(
        "--latex",
        action=_Once,
        metavar="FILE",
        help="LaTeX table of effects and summaries (needs booktabs and graphicx), the same "
        "as to_latex() writes in Python, caption included",
    )
    meta.add_argument(
        "--transpose",
        action="store_true",
        help="--latex: systems as columns and tasks as rows (for many tasks)",
    )
    meta.add_argument(
        "--fit",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="--latex: shrink a table wider than the line to its width (default: on)",
    )
    meta.add_argument(
        "--measures",
        nargs="+",
        default=["nDCG@10", "Judged@10"],
        help="Ranger retrieval configs: the measures computed from qrels and runs",
    )
    meta.add_argument(
        "--missing-files",
        choices=["error", "skip"],
        default="error",
        help="Ranger configs: a file the config names that does not exist is an error, or "
        "its task is skipped with a warning",
    )
    meta.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar when reading a folder with dask (default: on a terminal, for "
        "runs past 2 s)",
    )
    meta.add_argument(
        "--ranger-metric",
        help="Ranger classification configs: the name of the per-sample metric",
    )
    _output_options(meta)
    return parser


_NAME_PART = re.compile(r"^\s*[A-Za-z_][\w.@-]*\s*$")


def _mapping(text: str) -> dict[str, str]:
    """``task=dataset,query=qid`` as a dict; names are checked when the files are read.

    A comma starts a new pair only where ``NAME=`` follows it (outside brackets), so that
    values may hold commas, as lm-eval's metric names do:
    ``gsm8k=exact_match,flexible-extract,arc_easy=acc`` is two pairs.
    """
    pairs: list[list[str]] = []
    for part in text.split(","):
        name, equals, value = part.partition("=")
        opened = pairs[-1][1] if pairs else ""
        balanced = all(opened.count(a) == opened.count(b) for a, b in ("()", "[]", "{}"))
        if equals and _NAME_PART.match(name) and balanced:
            pairs.append([name.strip(), value])
        elif pairs:
            pairs[-1][1] += "," + part
        else:
            pairs.append(["", part])  # no NAME= at the start: refused below
    bad = [f"{k}={v}" if k else v for k, v in pairs if not k or not v.strip()]
    if not pairs or bad:
        raise argparse.ArgumentTypeError(
            f"expected NAME=VALUE pairs separated by commas (task=dataset,query=qid), not {text!r}"
        )
    merged: dict[str, str] = {}
    for name, value in pairs:
        if name in merged and merged[name] != value.strip():
            raise argparse.ArgumentTypeError(
                f"{name} is given twice ({merged[name]} and {value.strip()}) in {text!r}; "
                "give it once"
            )
        merged[name] = value.strip()
    return merged


class _Merge(argparse.Action):
    """Repeatable ``NAME=VALUE,...`` options merged into one dict; a name given two
    different values is an error, not a silent override. For ``--primary``, whose bare
    form (``const=True``) stands for "the defaults": a bare one and named ones merge into
    the named ones (the other tasks keep their defaults)."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = getattr(namespace, self.dest)
        merged = dict(given) if isinstance(given, dict) else {}
        if values is True:
            setattr(namespace, self.dest, merged or True)
            return
        clash = {k: (merged[k], v) for k, v in values.items() if k in merged and merged[k] != v}
        if clash:
            name, (old, new) = next(iter(clash.items()))
            raise argparse.ArgumentError(
                self, f"{name} is given twice ({old} and {new}); give it once"
            )
        merged.update(values)
        setattr(namespace, self.dest, merged)


def _column_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--columns",
        type=_mapping,
        action=_Merge,
        metavar="NAME=COLUMN,...",
        help="the files' own column names, e.g. task=dataset,query=qid,system=run,"
        "metric=measure,value=score (any of them)",
    )
    parser.add_argument(
        "--constant",
        type=_mapping,
        action=_Merge,
        metavar="NAME=VALUE,...",
        help="key columns the files do not have, with every row's value, e.g. "
        "metric=nDCG@10 or task=robust04 (repeatable; values may hold commas: "
        "metric=exact_match,flexible-extract)",
    )


def _model_options(parser: argparse.ArgumentParser) -> None:
    """--effect, --method, --ci and the --ranger preset (resolved by :func:`_resolve_model`)."""
    text = {
        "effect": "effect size",
        "method": "tau^2 estimator",
        "ci": "z or knha (Knapp-Hartung)",
    }
    for name, choices in (("effect", EFFECT_TYPES), ("method", POOL_METHODS), ("ci", CI_METHODS)):
        parser.add_argument(
            f"--{name}",
            choices=choices,
            action=_Once,
            default=argparse.SUPPRESS,
            help=f"{text[name]} (default: {DEFAULTS[name] or 'knha, z for EE/FE'}; "
            f"{RANGER[name]} with --ranger)",
        )
    parser.add_argument(
        "--ranger",
        action="store_true",
        help="the Ranger paper's procedure: --effect smd --method DL --ci z",
    )


def _resolve_model(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Fill in --effect, --method and --ci from the defaults or the --ranger preset."""
    preset = RANGER if args.ranger else DEFAULTS
    for name, value in preset.items():
        given = getattr(args, name, None)
        if args.ranger and given is not None and given != value:
            parser.error(f"--ranger sets --{name} {value}; --{name} {given} contradicts it")
        setattr(args, name, value if given is None else given)


def main(argv: list[str] | None = None) -> int:
    """Run the ``metaeval`` command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)  # exits with 2 on a usage error
    if args.command is None:
        parser.print_help()
        return 2
    if args.command in ("demo", "meta"):
        _resolve_model(parser, args)
    from metaeval.cli import run

    return run(args, parser)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""What the commands' parsers share: the option vocabulary, argument types and option groups.

Standard library only, like every module of :mod:`metaeval_cli` at import time, so
that ``metaeval --help`` imports no pandas. The choices of ``--effect``, ``--method``,
``--ci``, ``--test`` and ``--adjust`` are written here once and repeat the library's
``Literal`` option types (:mod:`metaeval._options`, which imports pandas);
``tests/cli/test_layout.py`` checks that each option's choices equal ``typing.get_args``
of the type of the parameter it is passed to, and that :data:`DEFAULTS` and
:data:`RANGER` equal the library's defaults and :data:`metaeval.RANGER`.
"""

from __future__ import annotations

import argparse
import re

__all__ = [
    "PRINT_MODES",
    "FORMATS",
    "ADJUSTMENTS",
    "COMPARE_TESTS",
    "POOL_METHODS",
    "CI_METHODS",
    "EFFECT_TYPES",
    "DEFAULTS",
    "RANGER",
    "Formatter",
    "Once",
    "Merge",
    "probability",
    "share",
    "positive",
    "seed_value",
    "mapping",
    "output_options",
    "column_options",
    "model_options",
    "resolve_model",
    "INPUT_FORMATS",
    "LM_EVAL_REPLICATES",
    "REPLICATE_DESIGNS",
    "ALTERNATIVES",
    "PLAN_TESTS",
    "ADJUST_FAMILIES",
    "FAMILY_WORDS",
    "family_option",
]

PRINT_MODES = ("pretty", "raw")
FORMATS = ("markdown", "latex", "csv", "tsv")
# the library's Literal option types (metaeval._options), repeated so that --help imports
# nothing; tests/cli/test_layout.py checks that they agree
ADJUSTMENTS = ("holm", "bonferroni", "fdr_bh", "maxt")
ADJUST_FAMILIES = ("pairs", "tasks", "metrics", "all")
#: what a family of each --family holds, in the commands' notes and titles
FAMILY_WORDS = {
    "pairs": "the pairs of each task and metric",
    "tasks": "every task of each metric",
    "metrics": "every metric of each task",
    "all": "every test",
}
COMPARE_TESTS = (
    "t",
    "wilcoxon",
    "sign",
    "randomization",
    "bootstrap",
    "mcnemar",
    "mcnemar_midp",
)
POOL_METHODS = ("EE", "FE", "DL", "HE", "HS", "SJ", "ML", "REML", "EB", "PM")
CI_METHODS = ("z", "t", "knha", "hksj", "adhoc")
EFFECT_TYPES = ("md", "smd", "smcrp", "smcc", "rom", "corr")
# the library's defaults (metaeval._options) and the Ranger preset (metaeval.RANGER), likewise
DEFAULTS = {"effect": "smcrp", "method": "REML", "ci": None}  # ci None: knha, z for EE
RANGER = {"effect": "smd", "method": "DL", "ci": "z"}
# the readers `metaeval meta` chooses among (--input-format), and read_lm_eval's `replicates`
INPUT_FORMATS = ("auto", "scores", "lm_eval", "inspect", "helm", "lighteval")
LM_EVAL_REPLICATES = ("folders",)
# effects()' `replicates`: how a replicate column's runs relate to the tasks
REPLICATE_DESIGNS = ("crossed", "nested", "epochs")
# the tests' alternatives, and the designs of `metaeval plan` (metaeval.design.plan_queries)
ALTERNATIVES = ("two-sided", "greater", "less")
PLAN_TESTS = ("t", "anova", "ci")
LEVELS = ("nominal", "ordinal", "interval", "ratio")
FACET_METHODS = ("REML", "ML", "ANOVA")


class Formatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Keep the examples' line breaks and show each option's default: only a real one (not
    None or False) and only where the help text does not state it already."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "(default" in text:
            return text
        return super()._get_help_string(action)


class Once(argparse.Action):
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


def probability(text: str) -> float:
    """An argument type: a number strictly between 0 and 1 (``--alpha``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1 (exclusive)")
    return value


def share(text: str) -> float:
    """An argument type: a number from 0 to 1 (``--min-coverage``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1")
    return value


def _integer(text: str, low: int, below: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"{text} {below}")
    return value


def positive(text: str) -> int:
    """An argument type: an integer >= 1 (``--digits``, ``--n-resamples``)."""
    return _integer(text, 1, "is not a positive integer")


def positive_number(text: str) -> float:
    """An argument type: a finite number > 0 (``--target-se``, ``--budget``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a positive finite number")
    return value


def seed_value(text: str) -> int:
    """An argument type: a seed, an integer >= 0 (``--seed``)."""
    return _integer(text, 0, "is negative; seeds are integers >= 0")


def family_option(parser: argparse.ArgumentParser) -> None:
    """--family: the tests that --adjust adjusts together (compare(family=...))."""
    parser.add_argument(
        "--family",
        choices=ADJUST_FAMILIES,
        default="pairs",
        help="with --adjust, the tests adjusted together: pairs (the pairs of one task and "
        "metric), tasks (every task of a metric: one treatment on six tasks is a family of "
        "six), metrics (every metric of a task) or all (every test)",
    )


def output_options(parser: argparse.ArgumentParser, *, tables: bool = True) -> None:
    """--print-mode and --digits; with ``tables``, --format and --tables FILE too."""
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
        "--digits", type=positive, default=4, help="decimals shown by pretty, markdown and latex"
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
            action=Once,
            metavar="FILE",
            help="also write the tables to FILE (.md, .tex, .csv or .tsv)",
        )


_NAME_PART = re.compile(r"^\s*[A-Za-z_][\w.@-]*\s*$")


def mapping(text: str) -> dict[str, str]:
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


class Merge(argparse.Action):
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


def column_options(parser: argparse.ArgumentParser) -> None:
    """--columns and --constant: the scores files' own column names, and missing keys."""
    parser.add_argument(
        "--columns",
        type=mapping,
        action=Merge,
        metavar="NAME=COLUMN,...",
        help="the files' own column names, e.g. task=dataset,query=qid,system=run,"
        "metric=measure,value=score (any of them)",
    )
    parser.add_argument(
        "--constant",
        type=mapping,
        action=Merge,
        metavar="NAME=VALUE,...",
        help="key columns the files do not have, with every row's value, e.g. "
        "metric=nDCG@10 or task=robust04 (repeatable; values may hold commas: "
        "metric=exact_match,flexible-extract)",
    )


def model_options(parser: argparse.ArgumentParser) -> None:
    """--effect, --method, --ci and the --ranger preset (resolved by :func:`resolve_model`)."""
    text = {
        "effect": "effect size",
        "method": "tau^2 estimator",
        "ci": "z, t (t with k - 1 df, the model's se), knha (Knapp-Hartung) or adhoc "
        "(Knapp-Hartung never narrower than z)",
    }
    for name, choices in (("effect", EFFECT_TYPES), ("method", POOL_METHODS), ("ci", CI_METHODS)):
        parser.add_argument(
            f"--{name}",
            choices=choices,
            action=Once,
            default=argparse.SUPPRESS,
            help=f"{text[name]} (default: {DEFAULTS[name] or 'knha, z for EE/FE'}; "
            f"{RANGER[name]} with --ranger)",
        )
    parser.add_argument(
        "--ranger",
        action="store_true",
        help="the Ranger paper's procedure: --effect smd --method DL --ci z",
    )


def resolve_model(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Fill in --effect, --method and --ci from the defaults or the --ranger preset."""
    preset = RANGER if args.ranger else DEFAULTS
    for name, value in preset.items():
        given = getattr(args, name, None)
        if args.ranger and given is not None and given != value:
            parser.error(f"--ranger sets --{name} {value}; --{name} {given} contradicts it")
        setattr(args, name, value if given is None else given)

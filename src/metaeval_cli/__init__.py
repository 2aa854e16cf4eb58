"""The ``metaeval`` command: one module per command, and the parser built from them.

Each command is a module of this package (:mod:`~metaeval_cli.demo`,
:mod:`~metaeval_cli.evaluate`, :mod:`~metaeval_cli.compare`,
:mod:`~metaeval_cli.convert`, :mod:`~metaeval_cli.meta`, :mod:`~metaeval_cli.plan`,
:mod:`~metaeval_cli.report`, :mod:`~metaeval_cli.judges`, :mod:`~metaeval_cli.facets`) with
two functions:
``add_parser(sub)``, which adds the command's options to the subparsers ``sub``,
and ``run(args)``, which executes the parsed command and returns its exit code.
The package lives beside :mod:`metaeval`, not in it, because importing anything
inside ``metaeval`` runs ``metaeval/__init__.py``, which imports pandas: its
modules import nothing but the standard library at import time, so that
``metaeval --help`` answers at once, and ``run`` loads the library when a command
runs. Exit codes: 0 success, 1 a data error (a file that cannot be read, a table
that cannot be analysed), 2 a usage error (an unknown option or value, an option
given twice that takes one value, an output path whose folder does not exist).
"""

from __future__ import annotations

import argparse

from . import compare, convert, demo, evaluate, facets, judges, meta, plan, report
from ._common import execute
from ._parser import Formatter, resolve_model

__all__ = ["main", "build_parser", "COMMANDS"]

COMMANDS = {
    module.__name__.rsplit(".", 1)[1]: module
    for module in (demo, evaluate, compare, convert, meta, plan, report, judges, facets)
}
"""The commands by name, each a module with ``add_parser(sub)`` and ``run(args)``, in the
order ``metaeval --help`` lists them."""


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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``metaeval`` command and its subcommands.

    Returns
    -------
    argparse.ArgumentParser
        The ``metaeval`` parser, with one subparser per entry of ``COMMANDS``.

    Examples
    --------
    >>> from metaeval_cli import build_parser
    >>> args = build_parser().parse_args(["convert", "qrels.txt", "true.jsonl", "--rel-type", "true"])
    >>> args.command, args.output, args.tag
    ('convert', 'true.jsonl', 'metaeval')
    """
    parser = argparse.ArgumentParser(
        prog="metaeval",
        formatter_class=Formatter,
        description="Effect-size meta-analysis for multi-task evaluation, and the IR "
        "evaluation and significance tests around it.",
        epilog="Examples:\n"
        "  metaeval demo\n"
        "  metaeval evaluate --qrels qrels.txt --run bm25=bm25.run --run dense=dense.run "
        "--measures nDCG@10 AP RR --output scores.csv\n"
        "  metaeval compare bm25.csv dense.csv splade.csv --seed 42\n"
        "  metaeval convert qrels.txt qrels.jsonl --rel-type true\n"
        "  metaeval meta scores.csv --control bm25 --plot forest.pdf\n"
        "  metaeval plan pilot.csv --control bm25 --mde 0.02 --power 0.8\n"
        "  metaeval report scores.csv --control bm25 -o report.html\n"
        "Run 'metaeval COMMAND --help' for a command's options.\n"
        "Exit codes: 0 ok, 1 data error, 2 usage error.",
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS.values():
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    r"""Run the ``metaeval`` command; returns the exit code.

    Parameters
    ----------
    argv : list of str, optional
        The command line without the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        0 success, 1 a data error, 2 a usage error (a usage error found while parsing
        exits with 2 through :class:`SystemExit`, as argparse does; so do ``--help``
        and ``--version``, with 0).

    Examples
    --------
    TREC qrels to elinor's JSON lines (``metaeval convert qrels.txt true.jsonl
    --rel-type true`` in a shell):

    >>> import pathlib, tempfile
    >>> from metaeval_cli import main
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    >>> main(["convert", str(folder / "qrels.txt"), str(folder / "true.jsonl"), "--rel-type", "true"])
    0
    >>> print((folder / "true.jsonl").read_text())
    {"query_id": "q1", "doc_id": "d1", "score": 1}
    {"query_id": "q1", "doc_id": "d2", "score": 0}
    """
    parser = build_parser()
    args = parser.parse_args(argv)  # exits with 2 on a usage error
    if args.command is None:
        parser.print_help()
        return 2
    if hasattr(args, "ranger"):  # a command with model_options: --effect, --method, --ci
        resolve_model(parser, args)
    return execute(COMMANDS[args.command].run, args)

"""``metaeval convert``: TREC qrels and runs to elinor's JSON lines and back."""

from __future__ import annotations

import argparse
import sys

from ._common import UsageError, check_outputs, is_jsonl
from ._parser import Formatter

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The parser of ``metaeval convert``, added to the subparsers ``sub``."""
    conv = sub.add_parser(
        "convert",
        formatter_class=Formatter,
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

    return conv


def run(args: argparse.Namespace) -> int:
    """Run ``metaeval convert`` on the parsed ``args``; returns the exit code."""
    from pathlib import Path

    from metaeval.io import jsonl_to_trec, trec_to_jsonl

    source, target = is_jsonl(args.input), is_jsonl(args.output)
    if source == target:
        kind = "JSON lines" if source else "TREC files"
        raise UsageError(
            f"{args.input} and {args.output} are both {kind} (by their names); "
            "convert turns TREC into .jsonl or .jsonl into TREC."
        )
    if Path(args.output).resolve() == Path(args.input).resolve():
        raise UsageError("IN and OUT are the same file.")
    check_outputs(args, {"OUT": args.output}, [args.input])
    if source:
        jsonl_to_trec(args.input, args.output, rel_type=args.rel_type, tag=args.tag)
    else:
        trec_to_jsonl(args.input, args.output, rel_type=args.rel_type)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0

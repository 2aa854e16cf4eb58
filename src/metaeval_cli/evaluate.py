"""``metaeval evaluate``: per-query IR measures of runs against qrels."""

from __future__ import annotations

import argparse

from ._common import UsageError, check_outputs, is_jsonl, means_wide, output, shown_paths
from ._parser import Formatter, Once, output_options, share

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a light --help
if TYPE_CHECKING:
    from typing import Any

    import pandas as pd

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The parser of ``metaeval evaluate``, added to the subparsers ``sub``."""
    ev = sub.add_parser(
        "evaluate",
        formatter_class=Formatter,
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
    ev.add_argument(
        "--measures",
        required=True,
        nargs="+",
        metavar="MEASURE",
        help="ir_measures names (nDCG@10 AP RR P@5) or elinor's (ndcg@10 ap)",
    )
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
        type=share,
        default=0.5,
        metavar="SHARE",
        help="the share of a task's judged queries every run must return (0 to 1; a run "
        "returning fewer is an error, whatever --missing says; 0 turns the check off)",
    )
    ev.add_argument(
        "--output",
        action=Once,
        metavar="FILE",
        help="write the per-query scores (.csv, .tsv, .jsonl or .parquet; .gz for text)",
    )
    output_options(ev, tables=False)
    return ev


def _read_pairs(path: str, rel_type: str) -> pd.DataFrame:
    from metaeval.io import read_jsonl, read_qrels, read_run

    if is_jsonl(path):
        return read_jsonl(path, rel_type=rel_type)
    if rel_type == "true":
        return read_qrels(path)
    return read_run(path)[["query_id", "doc_id", "score"]]


def _named(spec: str, option: str = "--run") -> tuple[str, str]:
    """``NAME=FILE`` or ``FILE`` (the name is the file name without its suffixes)."""
    from pathlib import Path

    if "=" in spec and not Path(spec).exists():
        name, path = spec.split("=", 1)
        if not name or not path:
            raise UsageError(f"{option} {spec!r}: write NAME=FILE or FILE.")
        return name, path
    name = Path(spec).name
    for suffix in (".gz", ".jsonl", ".ndjson", ".run", ".txt", ".trec", ".tsv", ".qrels"):
        name = name[: -len(suffix)] if name.endswith(suffix) and len(name) > len(suffix) else name
    return name, spec


def _unique(named: list[tuple[str, str]], what: str, option: str) -> None:
    names = [n for n, _ in named]
    if len(set(names)) < len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise UsageError(f"Two {what} are named {repeated}; name them with {option} NAME=FILE.")


def _evaluate_files(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The qrels file of each task and the run file of each (system, task)."""
    from pathlib import Path

    qrels = [_named(spec, "--qrels") for spec in args.qrels]
    runs = [_named(spec) for spec in args.run]
    _unique(qrels, "qrels", "--qrels")
    _unique(runs, "runs", "--run")
    several = len(qrels) > 1 or any("=" in q and not Path(q).exists() for q in args.qrels)
    if not several:
        task = args.task or "default"
        return {task: qrels[0][1]}, {name: {task: path} for name, path in runs}
    if args.task:
        raise UsageError(
            "--task names the task of one qrels file; with several, write --qrels TASK=FILE."
        )
    fixed = [name for name, path in runs if "{task}" not in path]
    if fixed and len(qrels) > 1:
        raise UsageError(
            f"With several collections a run is a pattern with {{task}} (runs/bm25/{{task}}.trec); "
            f"the run(s) {fixed} have none."
        )
    return dict(qrels), {
        name: {task: path.replace("{task}", task) for task, _ in qrels} for name, path in runs
    }


def run(args: argparse.Namespace) -> int:
    """Run ``metaeval evaluate`` on the parsed ``args``; returns the exit code."""
    from pathlib import Path

    import pandas as pd

    from metaeval.errors import FormatError
    from metaeval.io import write_scores
    from metaeval.measures import ir
    from metaeval.measures.ir import measure_name

    qrels_files, run_files = _evaluate_files(args)
    inputs = [*qrels_files.values(), *(p for by in run_files.values() for p in by.values())]
    check_outputs(args, {"--output": args.output}, inputs)
    if args.output:
        from metaeval.io.tidy import scores_format

        try:
            scores_format(Path(args.output))
        except FormatError:
            raise UsageError(
                f"--output {args.output}: the name does not say the format; end it in .csv, "
                ".tsv, .jsonl or .parquet (text formats may add .gz)."
            ) from None
    qrels = {task: _read_pairs(path, "true") for task, path in qrels_files.items()}
    runs = {
        name: {task: _read_pairs(path, "pred") for task, path in by.items()}
        for name, by in run_files.items()
    }
    measures = [measure_name(m) for m in args.measures]
    several = len(qrels) > 1

    def stats(task: str, name: str, path: str, pairs: pd.DataFrame) -> dict[str, Any]:
        judgments = qrels[task]
        relevant = pd.MultiIndex.from_frame(
            judgments.loc[judgments["relevance"] > 0, ["query_id", "doc_id"]]
        )
        hit = pd.MultiIndex.from_frame(pairs[["query_id", "doc_id"]]).isin(relevant)
        judged_ids = pd.unique(judgments["query_id"])
        judged = pairs["query_id"].isin(set(judged_ids))
        row = {"task": task} if several else {}
        lacking = (~pd.Index(judged_ids).isin(set(pairs["query_id"]))).sum()
        is_run = pairs is not judgments  # the qrels' own row: no coverage
        return {
            **row,
            "input": name,
            "file": path,
            "queries": pairs["query_id"].nunique(),
            "judged_queries": pairs.loc[judged, "query_id"].nunique(),
            "judged_missing": int(lacking) if is_run else pd.NA,
            "coverage": 1 - lacking / len(judged_ids) if is_run else float("nan"),
            "queries_with_relevant": pairs.loc[hit, "query_id"].nunique(),
            "documents": pairs["doc_id"].nunique(),
            "pairs": len(pairs),
            "relevant_pairs": int(hit.sum()),
        }

    basic = pd.DataFrame(
        [stats(t, "qrels", qrels_files[t], qrels[t]) for t in qrels]
        + [stats(t, n, run_files[n][t], runs[n][t]) for t in qrels for n in runs]
    ).astype({"judged_missing": "Int64"})
    _check_coverage(basic, args)  # names the files as given
    basic["file"] = shown_paths(list(basic["file"]))
    scores = ir.evaluate(
        qrels, runs, measures, missing=args.missing, min_coverage=args.min_coverage
    )

    out = output(args)
    out.table("Basic statistics", basic)
    title = ", ".join(qrels) if len(qrels) <= 3 else f"{len(qrels)} tasks"
    out.table(f"Means over the queries ({title})", means_wide(scores, list(runs), measures))
    if args.output:
        write_scores(scores, args.output)
        out.note(f"wrote {len(scores):,} per-query scores to {args.output}")
    return 0


def _check_coverage(basic: pd.DataFrame, args: argparse.Namespace) -> None:
    """Refuse runs below --min-coverage (or lacking any judged query, with --missing error),
    naming every such run and its file (the library's own check knows no file names)."""
    from metaeval._options import format_number
    from metaeval.errors import PairingError

    runs = basic[basic["judged_missing"].notna()]
    returned = runs["judged_queries"] > 0  # sharing no query: the library's error names both sides
    low = runs[returned & (runs["coverage"] < args.min_coverage)]
    refuse = low.empty and args.missing == "error"  # below the floor: that error, as the library's
    if refuse:
        low = runs[returned & (runs["judged_missing"] > 0)]
    if low.empty:
        return
    listing = "\n".join(
        f"  {'task ' + repr(row['task']) + ', ' if 'task' in row else ''}run {row['input']!r} "
        f"({row['file']}): lacks {row['judged_missing']:,} judged queries (coverage "
        f"{format_number(100 * row['coverage'], 1)}%)"
        for row in low.head(10).to_dict("records")
    ) + (f"\n  ... and {len(low) - 10} more" if len(low) > 10 else "")
    if refuse:
        raise PairingError(
            f"{len(low)} run(s) do not return every judged query, which --missing error "
            f"refuses:\n{listing}\nPass --missing zero to score them 0 (as trec_eval -c) or "
            "--missing drop to leave them out."
        )
    raise PairingError(
        f"{len(low)} run(s) return less than --min-coverage {format_number(args.min_coverage)} of the judged "
        f"queries:\n{listing}\nAre the runs and the qrels of the same collection, and are the "
        "runs complete? To score them anyway, lower --min-coverage (0 turns the check off) and "
        "choose --missing zero (they score 0, as trec_eval -c) or --missing drop (they are left "
        "out)."
    )

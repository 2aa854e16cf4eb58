"""The commands of ``metaeval`` (the parser is :mod:`metaeval_cli`, which loads this on use).

``run(args, parser)`` executes a parsed command: library warnings are printed as
``metaeval: warning: ...`` lines on stderr, and errors a user can cause end the
command with a one-paragraph message and an exit code instead of a traceback:
2 for a usage error (:class:`metaeval.OptionError`, a bad combination of
options, an output path that cannot be written: checked before any work), 1 for
a data error (any other :class:`metaeval.MetaEvalError`, a file that cannot be
read or written: any :class:`OSError`).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from .._options import resolve_ci
from ..errors import (
    FormatError,
    MetaEvalError,
    MetaEvalWarning,
    OptionError,
    PairingError,
    quote_list,
)
from ..measures.ir import MEASURE_ALIASES, measure_name
from ._console import Output

__all__ = ["run", "UsageError", "MEASURE_ALIASES"]


class UsageError(Exception):
    """Options that cannot be used together, or name something that is not there."""


#: Above these sizes the command's figures and tables are hard to read, and it says so:
#: a forest file of more than FOREST_PANELS treatment panels or FOREST_TASKS task rows, and
#: a LaTeX table of more than LATEX_COLUMNS columns of cells (set at \linewidth in a
#: one-column article its text would print below about 5 pt).
FOREST_PANELS = 6
FOREST_TASKS = 60
LATEX_COLUMNS = 8


def _advise(text: str) -> None:
    """A ``metaeval: warning:`` line of the command's own (not a library warning)."""
    print("metaeval: warning: " + text.replace("\n", "\n  "), file=sys.stderr)


def _warning_printer() -> Callable[..., None]:
    """A ``warnings.showwarning`` that prints each distinct warning once, without a traceback."""
    seen: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        name = "warning" if issubclass(category, MetaEvalWarning) else category.__name__
        text = f"metaeval: {name}: " + str(message).replace("\n", "\n  ")
        if text not in seen:  # the same finding from several tests of one command
            seen.add(text)
            print(text, file=sys.stderr)

    return show


def run(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    """Execute the parsed command ``args``; returns the exit code."""
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "demo": _demo, "evaluate": _evaluate, "compare": _compare,
        "convert": _convert, "meta": _meta,
    }  # fmt: skip
    prefix = f"metaeval {args.command}: error:"
    if getattr(args, "method", None) is not None and hasattr(args, "ci"):
        args.ci = resolve_ci(args.method, args.ci)  # the default of the model, as pool()'s
    with warnings.catch_warnings():
        warnings.simplefilter("always", MetaEvalWarning)
        warnings.showwarning = _warning_printer()
        try:
            return handlers[args.command](args)
        except (UsageError, OptionError) as err:
            print(f"{prefix} {err}\nSee 'metaeval {args.command} --help'.", file=sys.stderr)
            return 2
        except MetaEvalError as err:
            print(f"{prefix} {err}", file=sys.stderr)
            return 1
        except BrokenPipeError:  # `metaeval compare ... | head`
            sys.stderr.close()
            return 0
        except OSError as err:  # a file that cannot be read or written, a full disk, ...
            where = f"{err.filename}: " if err.filename else ""
            print(f"{prefix} {where}{err.strerror or err}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print(f"\nmetaeval {args.command}: interrupted", file=sys.stderr)
            return 130


def _check_outputs(
    args: argparse.Namespace, outputs: dict[str, str | None], inputs: list[str]
) -> None:
    """Refuse output paths that cannot be written, before any work is done.

    ``outputs`` maps an option (``--output``) to its path. A path that is a
    folder, whose folder does not exist, that is one of the ``inputs`` or
    another option's path is a usage error naming the option.
    """
    given = {option: path for option, path in outputs.items() if path}
    seen: dict[Path, str] = {Path(p).resolve(): "an input" for p in inputs}
    for option, value in given.items():
        path = Path(value)
        if path.is_dir():
            raise UsageError(f"{option} {value}: is a folder; name a file in it.")
        if not path.parent.is_dir():
            what = "is a file, not a folder" if path.parent.exists() else "does not exist"
            raise UsageError(f"{option} {value}: the folder {path.parent} {what}; create it first.")
        resolved = path.resolve()
        if resolved in seen:
            raise UsageError(f"{option} {value} is also {seen[resolved]}; it would be overwritten.")
        seen[resolved] = option
    tables = given.get("--tables")
    if tables and not getattr(args, "format", None):
        from ._console import FORMAT_BY_SUFFIX

        if Path(tables).suffix.lower() not in FORMAT_BY_SUFFIX:
            raise UsageError(
                f"--tables {tables}: cannot tell the format from its suffix; use one of "
                f"{sorted(FORMAT_BY_SUFFIX)} or pass --format."
            )


def _output(args: argparse.Namespace) -> Output:
    return Output(args.print_mode, digits=args.digits, fmt=getattr(args, "format", None))


def _finish(out: Output, args: argparse.Namespace) -> None:
    path = getattr(args, "tables", None)
    if path:
        fmt = out.write(path, getattr(args, "format", None))
        print(f"wrote the tables ({fmt}) to {path}", file=sys.stderr)


# ---------------------------------------------------------------------- demo
def _demo(args: argparse.Namespace) -> int:
    import metaeval

    if args.output is not None and Path(args.output).exists() and not Path(args.output).is_dir():
        raise UsageError(f"--output {args.output}: is a file; name a folder (created if needed).")
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
    table = table[table["metric"] == args.metric].drop(
        columns=["effect_type", "metric", "control", "row"]
    )
    with pd.option_context("display.width", 120, "display.max_rows", 200):
        print(table.to_string(index=False, na_rep="", float_format=lambda v: f"{v:.4g}"))
    if args.output is not None:
        _demo_files(scores, args)
    return 0


def _demo_files(scores: pd.DataFrame, args: argparse.Namespace) -> None:
    """forest.pdf, forest.png and table.tex of the demo's analysis in ``args.output``."""
    from ..plot import forest, save
    from ..report import to_latex

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


# ------------------------------------------------------------------ evaluate
def _is_jsonl(path: str) -> bool:
    name = path.lower()
    return name.endswith((".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz"))


def _read_pairs(path: str, rel_type: str) -> pd.DataFrame:
    from ..io import read_jsonl, read_qrels, read_run

    if _is_jsonl(path):
        return read_jsonl(path, rel_type=rel_type)
    if rel_type == "true":
        return read_qrels(path)
    return read_run(path)[["query_id", "doc_id", "score"]]


def _named(spec: str, option: str = "--run") -> tuple[str, str]:
    """``NAME=FILE`` or ``FILE`` (the name is the file name without its suffixes)."""
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


def _shown_paths(paths: list[str]) -> list[str]:
    """Input paths for a printed table: as the user typed them where relative; absolute ones
    below the working folder relative to it, others cut to the shortest tail (at least the
    folder and the name) that still tells them apart — never the machine's whole tree."""
    cwd = Path.cwd()
    shown: list[str | None] = []
    for text in paths:
        path = Path(text)
        if not path.is_absolute():
            shown.append(text)
        elif path.is_relative_to(cwd):
            shown.append(str(path.relative_to(cwd)))
        else:
            shown.append(None)
    absolute = [Path(p).parts for p, s in zip(paths, shown, strict=True) if s is None]
    for depth in range(2, max((len(a) for a in absolute), default=2) + 1):
        tails = ["/".join(parts[-depth:]) for parts in absolute]
        if len(set(tails)) == len(set(absolute)):
            break
    tail = iter(tails if absolute else [])
    return [s if s is not None else "…/" + next(tail) for s in shown]


def _evaluate_files(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The qrels file of each task and the run file of each (system, task)."""
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


def _evaluate(args: argparse.Namespace) -> int:
    from ..io import write_scores
    from ..measures import ir

    qrels_files, run_files = _evaluate_files(args)
    inputs = [*qrels_files.values(), *(p for by in run_files.values() for p in by.values())]
    _check_outputs(args, {"--output": args.output}, inputs)
    if args.output:
        from ..io.tidy import scores_format

        try:
            scores_format(Path(args.output))
        except FormatError:
            raise UsageError(
                f"--output {args.output}: the name does not say the format; end it in .csv, "
                ".tsv, .jsonl or .parquet (text formats may add .gz)."
            ) from None
    qrels = {task: _read_pairs(path, "true") for task, path in qrels_files.items()}
    runs = {name: {task: _read_pairs(path, "pred") for task, path in by.items()}
            for name, by in run_files.items()}  # fmt: skip
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
        return {**row, "input": name, "file": path, "queries": pairs["query_id"].nunique(),
                "judged_queries": pairs.loc[judged, "query_id"].nunique(),
                "judged_missing": int(lacking) if is_run else pd.NA,
                "coverage": 1 - lacking / len(judged_ids) if is_run else float("nan"),
                "queries_with_relevant": pairs.loc[hit, "query_id"].nunique(),
                "documents": pairs["doc_id"].nunique(), "pairs": len(pairs),
                "relevant_pairs": int(hit.sum())}  # fmt: skip

    basic = pd.DataFrame(
        [stats(t, "qrels", qrels_files[t], qrels[t]) for t in qrels]
        + [stats(t, n, run_files[n][t], runs[n][t]) for t in qrels for n in runs]
    ).astype({"judged_missing": "Int64"})
    _check_coverage(basic, args)  # names the files as given
    basic["file"] = _shown_paths(list(basic["file"]))
    scores = ir.evaluate(
        qrels, runs, measures, missing=args.missing, min_coverage=args.min_coverage
    )

    out = _output(args)
    out.table("Basic statistics", basic)
    title = ", ".join(qrels) if len(qrels) <= 3 else f"{len(qrels)} tasks"
    out.table(f"Means over the queries ({title})", _means_wide(scores, list(runs), measures))
    if args.output:
        write_scores(scores, args.output)
        out.note(f"wrote {len(scores):,} per-query scores to {args.output}")
    return 0


def _check_coverage(basic: pd.DataFrame, args: argparse.Namespace) -> None:
    """Refuse runs below --min-coverage (or lacking any judged query, with --missing error),
    naming every such run and its file (the library's own check knows no file names)."""
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
        f"{row['coverage']:.1%})"
        for row in low.head(10).to_dict("records")
    ) + (f"\n  ... and {len(low) - 10} more" if len(low) > 10 else "")
    if refuse:
        raise PairingError(
            f"{len(low)} run(s) do not return every judged query, which --missing error "
            f"refuses:\n{listing}\nPass --missing zero to score them 0 (as trec_eval -c) or "
            "--missing drop to leave them out."
        )
    raise PairingError(
        f"{len(low)} run(s) return less than --min-coverage {args.min_coverage:g} of the judged "
        f"queries:\n{listing}\nAre the runs and the qrels of the same collection, and are the "
        "runs complete? To score them anyway, lower --min-coverage (0 turns the check off) and "
        "choose --missing zero (they score 0, as trec_eval -c) or --missing drop (they are left "
        "out)."
    )


def _means_wide(
    scores: pd.DataFrame, systems: list[str], metrics: list[str] | None = None
) -> pd.DataFrame:
    """System × metric table of means over queries (and a task column for several tasks)."""
    keys = ["task", "system"] if scores["task"].nunique() > 1 else ["system"]
    wide = scores.pivot_table(index=keys, columns="metric", values="value", aggfunc="mean",
                              observed=True, sort=False)  # fmt: skip
    wide = wide.reindex(columns=_in_order(wide.columns, metrics))
    wide = wide.reset_index()
    order = {s: i for i, s in enumerate(systems)}
    wide = wide.sort_values(
        keys[:-1] + ["system"],
        key=lambda c: c.map(order) if c.name == "system" else c,
        kind="stable",
    )
    wide.columns.name = None
    return wide


def _in_order(found: Any, wanted: list[str] | None) -> list[str]:
    found = [str(x) for x in found]
    if not wanted:
        return found
    first = [w for w in wanted if w in found]
    return first + [f for f in found if f not in first]


# ------------------------------------------------------------------- compare
def _compare_inputs(args: argparse.Namespace) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The scores and the table of systems (alias, system, file)."""
    from ..io import read_per_query_csv, read_scores

    if len(args.inputs) == 1:
        if args.names:
            raise UsageError("--names names the per-query CSVs of several systems; a tidy "
                             "scores file has its own system column.")  # fmt: skip
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
                f"Two inputs would be called {sorted({s for s in systems if systems.count(s) > 1})};"
                " name the systems with --names."
            )
        scores = read_per_query_csv(dict(zip(systems, args.inputs, strict=True)), task=args.task)
        files = list(args.inputs)
    aliases = pd.DataFrame({"alias": [f"System_{i + 1}" for i in range(len(systems))],
                            "system": systems, "file": _shown_paths(files)})  # fmt: skip
    if args.metrics:
        found = list(pd.unique(scores["metric"]))
        unknown = [m for m in args.metrics if m not in found]
        if unknown:
            raise UsageError(f"--metrics {unknown} not in the input; it has {quote_list(found)}.")
        scores = scores[scores["metric"].isin(args.metrics)].reset_index(drop=True)
    if len(systems) < 2:
        raise UsageError(f"compare needs two or more systems; the input has {quote_list(systems)}.")
    return scores, aliases


def _compare(args: argparse.Namespace) -> int:
    from ..errors import resolve_seed

    _check_outputs(args, {"--tables": args.tables}, list(args.inputs))
    if args.control is None and (args.treatment or args.test != "t"):
        raise UsageError("--treatment and --test choose the compact table against a control; "
                         "add --control NAME.")  # fmt: skip
    scores, aliases = _compare_inputs(args)
    seed = resolve_seed(args.seed)
    if args.control is not None:
        return _compare_compact(scores, aliases, args, seed)
    out = _output(args)
    _compare_elinor(scores, aliases, args, seed, out)
    _finish(out, args)
    return 0


def _compare_elinor(scores, aliases, args, seed, out: Output) -> None:
    """elinor-compare's layout: statistics, systems, means, then the tests of two or more."""
    systems = list(aliases["system"])
    metrics = list(pd.unique(scores["metric"]))
    level = f"{100 * (1 - args.alpha):g}%"
    basic = scores.groupby("task", sort=False).agg(
        n_systems=("system", "nunique"), n_queries=("query", "nunique"), n_metrics=("metric", "nunique")
    ).reset_index()  # fmt: skip
    if len(basic) == 1:
        basic = basic.drop(columns="task")
    out.table("Basic statistics", basic)
    out.table("Systems", aliases)
    out.table("Means", _means_wide(scores, systems, metrics))
    out.note(f"seed: {seed} (repeat with --seed {seed}); resamples: {args.n_resamples:,}")
    if len(systems) == 2:
        _compare_two(scores, systems, args, seed, level, out)
    else:
        _compare_many(scores, systems, args, seed, level, out)


def _compare_compact(scores: pd.DataFrame, aliases: pd.DataFrame, args, seed: int) -> int:
    """``--control``: one row per (task, treatment[, control]) and a table per metric."""
    import io

    import metaeval

    systems = list(aliases["system"])
    named = [*args.control, *(args.treatment or [])]
    unknown = [s for s in named if s not in systems]
    if unknown:
        raise UsageError(f"System(s) {quote_list(unknown)} are not in the input; it has "
                         f"{quote_list(systems)}.")  # fmt: skip
    treatments = args.treatment or [s for s in systems if s not in args.control]
    result = metaeval.compare(scores, control=list(args.control), treatment=list(treatments),
                              test=args.test, n_resamples=args.n_resamples, seed=seed,
                              adjust=args.adjust, alpha=args.alpha,
                              progress=args.progress)  # fmt: skip
    out = _output(args)
    level = f"{100 * (1 - args.alpha):g}%"
    multi = scores["task"].nunique() > 1
    several = len(args.control) > 1
    out.note(f"test: {args.test}" + (f", p adjusted by {args.adjust} over the pairs of each "
             "task and metric" if args.adjust else "") + f"; {level} intervals of the mean "
             "difference (t)" + (f"; seed: {seed} (repeat with --seed {seed}), resamples: "
             f"{args.n_resamples:,}" if args.test in ("randomization", "bootstrap") else ""))  # fmt: skip
    columns = ["task", "treatment", "control", "n", "mean_control", "mean_treatment", "diff",
               "ci_low", "ci_high", "p_value", "p_adjusted"]  # fmt: skip
    keep = [c for c in columns if c in result.columns
            and (c != "task" or multi) and (c != "control" or several)]  # fmt: skip
    tasks = {t: i for i, t in enumerate(pd.unique(scores["task"]))}
    pairs = {(t, c): i for i, (c, t) in enumerate(
        (c, t) for c in args.control for t in treatments)}  # fmt: skip
    result = result.assign(
        _task=result["task"].map(tasks),
        _pair=[pairs[t, c] for t, c in zip(result["treatment"], result["control"], strict=True)],
    ).sort_values(["_task", "_pair"], kind="stable")
    for metric, part in result.groupby("metric", sort=False, observed=True):
        against = ", ".join(map(str, args.control))
        out.table(f"{metric}: treatment - control ({against}), {args.test} test", part[keep])
    if args.tables:  # the file keeps elinor's full layout, then the compact table
        full = Output("raw", digits=args.digits, fmt=getattr(args, "format", None),
                      stream=io.StringIO())  # fmt: skip
        _compare_elinor(scores, aliases, args, seed, full)
        full.tables.extend(out.tables)
        _finish(full, args)
    return 0


def _by_task(frame: pd.DataFrame, multi: bool) -> pd.DataFrame:
    return frame if multi else frame.drop(columns="task")


def _compare_two(scores, systems, args, seed, level, out: Output) -> None:
    import metaeval

    a, b = systems
    multi = scores["task"].nunique() > 1
    kw = dict(treatment=a, control=b, alpha=args.alpha)
    t = metaeval.compare(scores, test="t", **kw)
    md = metaeval.effects(scores, effect="md", **kw)
    key = ["metric", "task"]
    t = t.merge(md[[*key, "variance"]], on=key, how="left", validate="one_to_one")
    order = {m: i for i, m in enumerate(pd.unique(scores["metric"]))}
    t = t.sort_values(key, key=lambda c: c.map(order) if c.name == "metric" else c, kind="stable")
    table = pd.DataFrame({"task": t["task"], "metric": t["metric"], "n": t["n"],
                          "mean_diff": t["diff"], "var_diff": t["variance"] * t["n"],
                          "effect_size": t["effect_size"], "t": t["statistic"],
                          "p_value": t["p_value"], f"moe_{level}": t["moe"]})  # fmt: skip
    if args.adjust:
        out.note(f"--adjust {args.adjust}: with two systems each metric has one comparison, "
                 "so adjusted p-values equal the p-values; none are printed.")  # fmt: skip
    out.table(f"Paired t-test: {a} - {b}", _by_task(table, multi))
    tests = t[key]
    for test in ("bootstrap", "randomization"):
        res = metaeval.compare(scores, test=test, n_resamples=args.n_resamples, seed=seed,
                               progress=args.progress, **kw)  # fmt: skip
        res = res[[*key, "p_value"]].rename(columns={"p_value": f"{test}_p_value"})
        tests = tests.merge(res, on=key, how="left", validate="one_to_one")
    tests = tests[["task", "metric", "bootstrap_p_value", "randomization_p_value"]]
    out.table(f"Bootstrap and randomization tests: {a} - {b} (B = {args.n_resamples:,})",
              _by_task(tests, multi))  # fmt: skip


def _matrix(
    pairs: pd.DataFrame, value: str, systems: list[str], antisymmetric: bool
) -> pd.DataFrame:
    """Square table (row system vs column system) from Tukey rows ``system_a, system_b``."""
    full = pd.concat([pairs[["system_a", "system_b", value]],
                      pairs.rename(columns={"system_a": "system_b", "system_b": "system_a"})
                      .assign(**{value: -pairs[value] if antisymmetric else pairs[value]})
                      [["system_a", "system_b", value]]])  # fmt: skip
    square = full.pivot(index="system_a", columns="system_b", values=value)
    square = square.reindex(index=systems, columns=systems)
    square.index.name = "system"
    square.columns.name = None
    return square.reset_index()


def _compare_many(scores, systems, args, seed, level, out: Output) -> None:
    import metaeval

    from ..paired.multiplicity import adjust_in_table

    means = metaeval.means(scores, alpha=args.alpha)
    anova = metaeval.anova(scores)
    tukey = metaeval.tukey(scores, alpha=args.alpha)
    random = metaeval.tukey(scores, randomized=True, n_resamples=args.n_resamples, seed=seed,
                            alpha=args.alpha, progress=args.progress)  # fmt: skip
    pairwise = None
    if args.adjust:
        order = {s: i for i, s in enumerate(systems)}
        t = metaeval.compare(scores, control=None, test="t", alpha=args.alpha)
        t = t[t["treatment"].map(order) < t["control"].map(order)].reset_index(drop=True)
        t["p_adjusted"] = adjust_in_table(t, ["metric", "task"], args.adjust)
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
        out.table(f"Means and {level} margins of error: {where}",
                  m[["system", "n", "mean", "moe", "ci_low", "ci_high"]])  # fmt: skip
        a = anova[(anova["task"] == task) & (anova["metric"] == metric)]
        out.table(f"Two-way ANOVA (systems x queries): {where}",
                  a[["source", "ss", "df", "ms", "f", "p_value"]].astype({"df": int}))  # fmt: skip
        present = [s for s in systems if s in set(m["system"])]
        tk = tukey[(tukey["task"] == task) & (tukey["metric"] == metric)]
        out.table(f"Tukey HSD effect sizes (row - column) / sqrt(V_E): {where}",
                  _matrix(tk, "effect_size", present, antisymmetric=True))  # fmt: skip
        rt = random[(random["task"] == task) & (random["metric"] == metric)]
        out.table(f"Randomized Tukey HSD p-values (B = {args.n_resamples:,}): {where}",
                  _matrix(rt, "p_value", present, antisymmetric=False))  # fmt: skip
        if pairwise is not None:
            pw = pairwise[(pairwise["task"] == task) & (pairwise["metric"] == metric)]
            pw = pd.DataFrame({"system_a": pw["treatment"], "system_b": pw["control"],
                               "mean_diff": pw["diff"], "effect_size": pw["effect_size"],
                               "t": pw["statistic"], "p_value": pw["p_value"],
                               "p_adjusted": pw["p_adjusted"], f"moe_{level}": pw["moe"]})  # fmt: skip
            out.table(f"Paired t-tests, p adjusted by {args.adjust} over the pairs: {where}", pw)


# ------------------------------------------------------------------- convert
def _convert(args: argparse.Namespace) -> int:
    from ..io import jsonl_to_trec, trec_to_jsonl

    source, target = _is_jsonl(args.input), _is_jsonl(args.output)
    if source == target:
        kind = "JSON lines" if source else "TREC files"
        raise UsageError(
            f"{args.input} and {args.output} are both {kind} (by their names); "
            "convert turns TREC into .jsonl or .jsonl into TREC."
        )
    if Path(args.output).resolve() == Path(args.input).resolve():
        raise UsageError("IN and OUT are the same file.")
    _check_outputs(args, {"OUT": args.output}, [args.input])
    if source:
        jsonl_to_trec(args.input, args.output, rel_type=args.rel_type, tag=args.tag)
    else:
        trec_to_jsonl(args.input, args.output, rel_type=args.rel_type)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------- meta
def _meta_scores(args: argparse.Namespace) -> pd.DataFrame:
    from ..io import read_ranger, read_scores

    path = Path(args.scores[0])
    if path.suffix.lower() in (".yaml", ".yml"):
        if len(args.scores) > 1:
            raise UsageError("A Ranger config.yaml is read alone; pass one config at a time.")
        if args.columns or args.constant:
            raise UsageError("--columns and --constant are for scores files, not a Ranger config.")
        try:
            return read_ranger(path, metric=args.ranger_metric, missing_files=args.missing_files,
                               measures=[measure_name(m) for m in args.measures])  # fmt: skip
        except FormatError as err:  # name the option, not the keyword argument
            raise MetaEvalError(
                str(err).replace("missing_files='skip'", "--missing-files skip")
            ) from None
        except OptionError as err:
            if args.ranger_metric is None and "pass metric=" in str(err):
                raise UsageError(
                    f"{path} is a classification config, which does not name its metric: pass "
                    "--ranger-metric NAME, e.g. --ranger-metric accuracy."
                ) from None
            raise
    if args.ranger_metric:
        raise UsageError("--ranger-metric is for a Ranger config.yaml, not a scores file.")
    if len(args.scores) == 1 and _lm_eval_models(path):
        from ..io import read_lm_eval

        if args.columns or args.constant:
            raise UsageError("--columns and --constant are for scores files, not lm-eval logs.")
        # read_lm_eval names the systems (one per model sub-folder) and refuses mixes
        return read_lm_eval(path, primary=args.primary or False, latest=args.latest)
    if args.primary or args.latest:
        raise UsageError("--primary and --latest are for an lm-eval output folder.")
    mapping = {"columns": args.columns, "constants": args.constant}
    try:
        if all(_lazy(text) for text in args.scores):
            return read_scores(args.scores, lazy=True, **mapping)
        return read_scores(args.scores, **mapping)
    except FormatError as err:
        if "are missing (found" not in str(err):
            raise
        raise MetaEvalError(
            f"{err} Map the files' own names with --columns (task=dataset,query=qid,"
            "system=run,metric=measure,value=score); give a key the files do not have with "
            "--constant (metric=nDCG@10)."
        ) from None


def _lm_eval_models(path: Path) -> bool:
    """Whether ``path`` is an lm-eval output folder: it holds sample logs or results files
    (:func:`metaeval.io.read_lm_eval` then names its models, one system per sub-folder,
    and says what is missing, e.g. ``--log_samples``)."""
    if not path.is_dir():
        return False
    return any(
        next(path.rglob(pattern), None) for pattern in ("samples_*.jsonl*", "results_*.json")
    )


def _inputs(paths: list[str]) -> str:
    """The inputs of a command, in a message."""
    return paths[0] if len(paths) == 1 else f"the {len(paths)} inputs"


def _lazy(text: str) -> bool:
    """Whether to read a folder or pattern with dask: its files are all Parquet and dask is
    installed (else the files are read into memory, with the same results)."""
    from ..io.tidy import scores_files, scores_format

    if not (Path(text).is_dir() or any(ch in text for ch in "*?[")):
        return False
    parquet = all(scores_format(f) == ".parquet" for f in scores_files(text))
    return parquet and importlib.util.find_spec("dask") is not None


@contextmanager
def _progress(args: argparse.Namespace) -> Iterator[None]:
    """dask's progress bar on stderr: with --progress, or on a terminal for runs past 2 s."""
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    if not show:
        yield
        return
    from dask.diagnostics import ProgressBar

    with ProgressBar(minimum=0 if args.progress else 2, out=sys.stderr):
        yield


def _file_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "metric"


def _meta(args: argparse.Namespace) -> int:
    import metaeval

    outputs = {"--plot": args.plot, "--latex": args.latex, "--tables": args.tables}
    if (args.transpose or not args.fit) and not args.latex:
        raise UsageError("--transpose and --no-fit shape the --latex table; add --latex FILE.")
    if args.plot_per_treatment and not args.plot:
        raise UsageError("--plot-per-treatment splits the --plot figure; add --plot FILE.")
    _check_outputs(args, outputs, list(args.scores))
    if args.plot:
        from matplotlib.backend_bases import FigureCanvasBase

        kinds = FigureCanvasBase.get_supported_filetypes()
        if Path(args.plot).suffix.lower().lstrip(".") not in kinds:
            raise UsageError(
                f"--plot {args.plot}: the suffix does not name a figure format; use one of "
                f"{sorted('.' + k for k in kinds)}."
            )
    scores = _meta_scores(args)
    lazy = not isinstance(scores, pd.DataFrame)
    primary = None if lazy else scores.attrs.get("primary")  # --primary: {task: metric}
    survey = None
    if lazy:  # one pass over the names, shared with the effects below
        from ..scale import Survey

        with _progress(args):
            survey = Survey(scores)
        found, systems = survey.metrics, survey.systems
    else:
        found = list(pd.unique(scores["metric"]))
        systems = list(pd.unique(scores["system"]))
    if args.metric:
        unknown = [m for m in args.metric if m not in found]
        if unknown:
            raise UsageError(
                f"--metric {unknown} not in {_inputs(args.scores)}; it has {quote_list(found)}."
            )
        scores, survey = scores[scores["metric"].isin(args.metric)], None
        scores = scores if lazy else scores.reset_index(drop=True)
    for name in [args.control, *(args.treatment or [])]:
        if name not in systems:
            raise UsageError(
                f"System {name!r} is not in {_inputs(args.scores)}; it has {quote_list(systems)}."
            )
    if args.by is not None and args.by not in scores.columns:
        raise UsageError(
            f"--by {args.by!r} is not a column of {_inputs(args.scores)}; it has {quote_list(list(scores.columns))}."
        )
    from ..pooling.analysis import analysis_table

    kw = dict(method=args.method, ci=args.ci, alpha=args.alpha)
    if lazy:
        from ..scale import effects as lazy_effects

        with _progress(args):
            effects = lazy_effects(scores, args.control, treatment=args.treatment,
                                   effect=args.effect, alpha=args.alpha, survey=survey)  # fmt: skip
    else:
        effects = metaeval.effects(scores, control=args.control, treatment=args.treatment,
                                   effect=args.effect, alpha=args.alpha)  # fmt: skip
    pooled = metaeval.pool(effects, **kw)
    table = analysis_table(effects, effect=args.effect, **kw)
    out = _output(args)
    level = f"{100 * (1 - args.alpha):g}%"
    out.note(f"effect: {args.effect}; pooling: {args.method} with {args.ci} intervals at {level}; "
             f"control: {args.control}")  # fmt: skip
    columns = ["treatment", "task", "n", "mean_control", "mean_treatment", "effect", "se",
               "ci_low", "ci_high", "p_value", "weight"]  # fmt: skip
    if primary:
        out.note(f"metric 'primary' of each task: {_pairs_text(primary)}")
    for metric, part in table.groupby("metric", sort=False):
        out.table(
            f"Effects per task and summary: {metric}",
            _primary_column(part[columns], primary if metric == "primary" else None),
        )
    heterogeneity = ["metric", "treatment", "k", "tau2", "i2", "q", "q_df", "q_p_value",
                     "pi_low", "pi_high"]  # fmt: skip
    out.table("Heterogeneity of the summaries", pooled[heterogeneity])
    by_pooled = None
    if args.by is not None:
        by_pooled = metaeval.pool(effects, by=args.by, **kw)
        out.table(f"Summaries by {args.by}",
                  by_pooled[["metric", "treatment", args.by, "k", "effect", "se", "ci_low",
                             "ci_high", "p_value", "tau2", "i2"]])  # fmt: skip
    if args.plot:
        _meta_plots(effects, pooled, args, out, primary)
    if args.latex:
        from ..report import to_latex

        latex = to_latex(effects, pooled=pooled, transpose=args.transpose, fit=args.fit)
        Path(args.latex).write_text(_primary_caption(latex, primary), encoding="utf-8")
        out.note(f"wrote {args.latex}")
        _check_latex_size(latex, effects, args)
    _finish(out, args)
    return 0


def _check_latex_size(latex: str, effects: pd.DataFrame, args) -> None:
    """Say when the --latex table has more columns of cells than a page can show."""
    spec = re.search(r"\\begin\{tabular\}\{([a-z|]+)\}", latex)
    cells = len(spec.group(1).replace("|", "")) - 1 if spec else 0
    if cells <= LATEX_COLUMNS:
        return
    ways = []
    if not args.transpose and effects["treatment"].nunique() < cells:
        ways.append("--transpose (tasks as rows, systems as columns)")
    if effects["metric"].nunique() > 1:
        ways.append("--metric NAME (one metric per table)")
    if effects["treatment"].nunique() > 1:
        ways.append("--treatment NAME ... (fewer systems)")
    _advise(f"--latex {args.latex}: the table has {cells} columns of cells, more than "
            f"{LATEX_COLUMNS}; fitted to the line its text prints too small to read. Try "
            + ("; ".join(ways) or "fewer tasks") + ".")  # fmt: skip


def _pairs_text(mapping: dict[str, str]) -> str:
    """``{task: metric}`` as ``task=metric, ...`` (the syntax of ``--primary``)."""
    return ", ".join(f"{key}={value}" for key, value in mapping.items())


def _primary_column(part: pd.DataFrame, primary: dict[str, str] | None) -> pd.DataFrame:
    """The effects table with the metric behind 'primary' of each task after ``task``."""
    if not primary:
        return part
    shown = part.copy()
    at = shown.columns.get_loc("task") + 1
    shown.insert(at, "primary_metric", shown["task"].map(primary).fillna(""))  # summary: ""
    return shown


def _primary_caption(latex: str, primary: dict[str, str] | None) -> str:
    """``latex`` with the metric behind 'primary' of each task at the end of its caption."""
    if not primary:
        return latex
    from ..report import escape

    lines = latex.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("\\caption{"))
    note = escape(f" Metric primary of each task: {_pairs_text(primary)}.", "latex")
    lines[at] = lines[at][:-1] + note + "}"
    return "\n".join(lines)


def _meta_plots(
    effects: pd.DataFrame, pooled: pd.DataFrame, args, out: Output, primary: dict | None = None
) -> None:
    import matplotlib.pyplot as plt

    from ..plot import forest, save

    path = Path(args.plot)
    metrics = list(pd.unique(effects["metric"]))
    for metric in metrics:
        part = effects[effects["metric"] == metric]
        groups: list[tuple[str | None, pd.DataFrame]] = (
            [(str(t), g) for t, g in part.groupby("treatment", sort=False, observed=True)]
            if args.plot_per_treatment
            else [(None, part)]
        )
        for treatment, frame in groups:
            words = [w for w in (None if len(metrics) == 1 else metric, treatment) if w]
            stem = "-".join([path.stem, *map(_file_name, words)])
            target = path.with_name(stem + path.suffix)
            labels = ({t: f"{t} ({m})" for t, m in (primary or {}).items()}
                      if metric == "primary" else None)  # fmt: skip
            fig = forest(frame, method=args.method, ci=args.ci, alpha=args.alpha,
                         pooled=pooled[pooled["metric"] == metric], by=args.by, labels=labels,
                         title=f"{metric}: effects ({args.effect}) against {args.control}")  # fmt: skip
            save(fig, target)
            _check_forest_size(frame, fig, target, args)
            plt.close(fig)
            out.note(f"wrote {target}")


def _check_forest_size(frame: pd.DataFrame, fig: Any, target: Path, args) -> None:
    """Say when a forest file holds more panels or task rows than can be read."""
    panels, tasks = frame["treatment"].nunique(), frame["task"].nunique()
    if panels <= FOREST_PANELS and tasks <= FOREST_TASKS:
        return
    w, h = fig.get_size_inches()
    size = f"{w:.0f} x {h:.0f} in"
    if target.suffix.lower() in (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp"):
        size += f", {round(w * fig.dpi)} x {round(h * fig.dpi)} px"
    ways = []
    if panels > FOREST_PANELS:
        ways += ["--plot-per-treatment (one file per treatment)", "--treatment NAME ..."]
    if tasks > FOREST_TASKS:
        ways.append("fewer tasks (select them in the scores)")
    _advise(f"--plot {target}: {panels} treatment panel(s) x {tasks} tasks ({size}), more than "
            f"{FOREST_PANELS} panels or {FOREST_TASKS} tasks a figure can show legibly. Try "
            + "; ".join(ways) + ".")  # fmt: skip

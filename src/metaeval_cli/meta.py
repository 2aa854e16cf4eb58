"""``metaeval meta``: per-task effects and their random-effects summary (the Ranger pipeline)."""

from __future__ import annotations

import argparse
import re
import sys
from contextlib import contextmanager

from ._common import (
    UsageError,
    advise,
    check_column,
    check_names,
    check_outputs,
    finish,
    output,
)
from ._parser import (
    INPUT_FORMATS,
    LM_EVAL_REPLICATES,
    REPLICATE_DESIGNS,
    Formatter,
    Merge,
    Once,
    column_options,
    mapping,
    model_options,
    output_options,
    probability,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a light --help
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import Any

    import pandas as pd

    from ._console import Output

__all__ = [
    "add_parser",
    "add_input_options",
    "read_inputs",
    "inputs_text",
    "run",
    "FOREST_PANELS",
    "FOREST_TASKS",
    "LATEX_COLUMNS",
]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The parser of ``metaeval meta``, added to the subparsers ``sub``."""
    meta = sub.add_parser(
        "meta",
        formatter_class=Formatter,
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
        "  metaeval meta lm-eval-output/ --control llama --primary --latest   # lm-eval logs\n"
        "  metaeval meta runs/ --control llama --replicates folders   # runs/<seed>/<model>/\n"
        "  metaeval meta inspect-logs/ --control openai/gpt-4o --metadata passage\n"
        "  metaeval meta inspect-logs/ --control openai/gpt-4o --primary   # a metric per task\n"
        "  metaeval meta plain.eval cot.eval --control openai/gpt-4o:plain "
        "--system-name '{model}:{task_args[prompt]}'\n"
        "  metaeval meta benchmark_output/runs/v1/ --control openai/gpt2   # HELM\n"
        "  metaeval meta output/details/ --control org/small   # lighteval",
    )
    add_input_options(meta)
    meta.add_argument(
        "--replicate-design",
        choices=REPLICATE_DESIGNS,
        help="how a 'replicate' column's runs relate to the tasks: 'crossed' (one seed or "
        "checkpoint evaluated on every task: its shift is shared and is added to the "
        "summary's variance), 'nested' (runs drawn per task) or 'epochs' (repeated answers to "
        "the same item: the item's mean is the unit); default: the design the scores record "
        "(a 'replicate_design' column, Inspect's epochs), else a guess said in a warning: "
        "'crossed' when every task has the same replicate ids, else 'nested'",
    )
    meta.add_argument("--control", required=True, action=Once, help="the control system")
    meta.add_argument("--treatment", nargs="+", help="default: every other system")
    meta.add_argument(
        "--metric",
        nargs="+",
        help="only these metrics (of an lm-eval folder only these are read, so metrics "
        "without a per-sample number, such as bleu, are not warned about)",
    )
    model_options(meta)
    meta.add_argument("--alpha", type=probability, default=0.05, help="1 - confidence level")
    meta.add_argument("--by", metavar="COLUMN", help="subgroups: a task-level column")
    meta.add_argument(
        "--plot",
        action=Once,
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
        action=Once,
        metavar="FILE",
        help="LaTeX table of effects and summaries (needs booktabs and graphicx), the same "
        "as to_latex() writes in Python, caption included",
    )
    meta.add_argument(
        "--transpose",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="--latex: systems as columns and tasks as rows (--no-transpose: systems as "
        "rows); default: the orientation with fewer columns of cells, so that one treatment "
        "over many tasks is a column, not a row shrunk to the line",
    )
    meta.add_argument(
        "--fit",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="--latex: shrink a table wider than the line to its width (default: on)",
    )
    output_options(meta)
    return meta


def add_input_options(parser: argparse.ArgumentParser) -> None:
    """The options of what a command reads (shared by ``meta`` and ``plan``): SCORES, the
    scores files' columns, the harness logs' options, Ranger configs and ``--cluster``."""
    parser.add_argument(
        "scores",
        metavar="SCORES",
        nargs="+",
        help="scores files, folders of them or quoted glob patterns, concatenated (a key in "
        "two files is an error); folders of Parquet files are read with dask when it is "
        "installed (pip install 'metaeval[dask]'), in parallel and a partition at a time; "
        "or harness logs: folders, or files (Inspect .eval/.json logs, lighteval details, "
        "HELM per_instance_stats.json), recognised by their files",
    )
    column_options(parser)
    parser.add_argument(
        "--primary",
        nargs="?",
        const=True,
        type=mapping,
        action=Merge,
        metavar="TASK=METRIC,...",
        help="lm-eval output folders and Inspect logs: one metric per task, named 'primary', "
        "so tasks pool together; alone, the common lm-eval tasks' primary metrics "
        "(arc_challenge acc_norm, gsm8k exact_match,strict-match, ...) or each Inspect task's "
        "headline metric (its first scorer); TASK=METRIC pairs (repeatable; metric names may "
        "hold commas: gsm8k=exact_match,flexible-extract; Inspect: TASK=SCORER[/KEY]) "
        "override the tasks they name, the others keep their defaults; the metric of each "
        "task is printed",
    )
    parser.add_argument(
        "--latest",
        action="store_true",
        help="lm-eval output folders: of a task a model ran more than once, the newest log "
        "(by the timestamp in its name; those read and left out are listed in a warning)",
    )
    parser.add_argument(
        "--replicates",
        choices=LM_EVAL_REPLICATES,
        help="lm-eval: 'folders' reads the sub-folders of SCORES as replicates (one lm-eval "
        "output folder per seed, SCORES/<seed>/<model>/): one system per model, the seed "
        "folder's name in a 'replicate' column",
    )
    parser.add_argument(
        "--cluster",
        metavar="COLUMN",
        help="a column naming the cluster of each query (e.g. the passage several questions "
        "share): clustered variances of the effects, t intervals on C - 1 df; for Inspect "
        "logs a sample-metadata key (read as if given to --metadata too)",
    )
    parser.add_argument(
        "--input-format",
        choices=INPUT_FORMATS,
        default="auto",
        help="what SCORES holds: tidy scores files, or the logs of lm-evaluation-harness, "
        "Inspect AI, HELM or lighteval; auto recognises them by their files (a Ranger "
        "config.yaml by its suffix)",
    )
    parser.add_argument(
        "--metadata",
        nargs="+",
        metavar="KEY",
        help="Inspect logs: sample metadata keys copied into columns (e.g. a passage id)",
    )
    parser.add_argument(
        "--scorer",
        nargs="+",
        metavar="NAME",
        help="Inspect logs: read only these scorers (default: every scorer)",
    )
    parser.add_argument(
        "--system-name",
        metavar="FORMAT",
        help="Inspect logs: name each log's system by a format of its model, task, "
        "task_args, model_args, solver, solver_args, tags and metadata, e.g. "
        "'{model}:{task_args[prompt]}' to compare two prompts (or '{model}:{solver}' two "
        "solvers) on one model (default: '{model}')",
    )
    parser.add_argument(
        "--measures",
        nargs="+",
        default=["nDCG@10", "Judged@10"],
        help="Ranger retrieval configs: the measures computed from qrels and runs",
    )
    parser.add_argument(
        "--missing-files",
        choices=["error", "skip"],
        default="error",
        help="Ranger configs: a file the config names that does not exist is an error, or "
        "its task is skipped with a warning",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar when reading a folder with dask (default: on a terminal, for "
        "runs past 2 s)",
    )
    parser.add_argument(
        "--ranger-metric",
        help="Ranger classification configs: the name of the per-sample metric",
    )


#: Above these sizes the command's figures and tables are hard to read, and it says so:
#: a forest file of more than FOREST_PANELS treatment panels or FOREST_TASKS task rows, and
#: a LaTeX table of more than LATEX_COLUMNS columns of cells (set at \linewidth in a
#: one-column article its text would print below about 5 pt).
FOREST_PANELS = 6
FOREST_TASKS = 60
LATEX_COLUMNS = 8


def read_inputs(args: argparse.Namespace, *, lazy: bool = True) -> pd.DataFrame:
    """The scores a command's SCORES name (see :func:`add_input_options`); with ``lazy``
    a folder of Parquet files is a dask DataFrame when dask is installed."""
    return _meta_scores(args, lazy=lazy)


def _meta_scores(args: argparse.Namespace, *, lazy: bool = True) -> pd.DataFrame:
    from pathlib import Path

    from metaeval.errors import FormatError, MetaEvalError, OptionError
    from metaeval.io import read_ranger, read_scores
    from metaeval.measures.ir import measure_name

    path = Path(args.scores[0])
    if args.input_format == "auto" and path.suffix.lower() in (".yaml", ".yml"):
        if len(args.scores) > 1:
            raise UsageError("A Ranger config.yaml is read alone; pass one config at a time.")
        if args.columns or args.constant:
            raise UsageError("--columns and --constant are for scores files, not a Ranger config.")
        try:
            return read_ranger(
                path,
                metric=args.ranger_metric,
                missing_files=args.missing_files,
                measures=[measure_name(m) for m in args.measures],
            )
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
    kind = args.input_format
    if kind == "auto":
        kind = _detect(args.scores)
    _check_format_options(args, kind)
    scores = _harness_scores(args, kind)
    if scores is not None:
        return _harness_keys(scores, args, kind)
    mapping = {"columns": args.columns, "constants": args.constant}
    try:
        if lazy and all(_lazy(text) for text in args.scores):
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


def _harness_scores(args: argparse.Namespace, kind: str) -> pd.DataFrame | None:
    """The scores of harness logs (``kind`` not ``"scores"``), else None."""
    from pathlib import Path

    from metaeval.errors import SchemaError

    path = Path(args.scores[0])
    if kind == "lm_eval":
        if len(args.scores) > 1:
            raise UsageError("An lm-eval output folder is read alone; pass one folder.")
        from metaeval.io import read_lm_eval

        # read_lm_eval names the systems (one per model sub-folder) and refuses mixes; it
        # reads only the --metric metrics (with --primary, --metric names 'primary')
        metrics = None if args.primary else getattr(args, "metric", None)
        try:
            return read_lm_eval(
                path,
                primary=args.primary or False,
                metrics=metrics,
                latest=args.latest,
                replicates=args.replicates,
            )
        except SchemaError as err:  # --metric naming what the logs lack: a usage error
            if not str(err).startswith("`metrics` (--metric)"):
                raise
            raise UsageError(str(err).replace("`metrics` (--metric)", "--metric", 1)) from None
    source = args.scores[0] if len(args.scores) == 1 else list(args.scores)
    if kind == "inspect":
        from metaeval.io import read_inspect

        # --cluster and the columns --columns maps name metadata keys
        wanted = [args.cluster, *(args.columns or {}).values()]
        metadata = list(dict.fromkeys([*(args.metadata or []), *(k for k in wanted if k)]))
        metadata = [k for k in metadata if k not in _TABLE_COLUMNS]
        return read_inspect(
            source,
            metadata=metadata or None,
            scorer=args.scorer,
            primary=args.primary or False,
            system_name=args.system_name,
        )
    if kind == "helm":
        from metaeval.io import read_helm

        # a per_instance_stats.json given as a file stands for its run folder
        runs = [Path(p).parent if Path(p).is_file() else Path(p) for p in args.scores]
        return read_helm(runs[0] if len(runs) == 1 else runs)
    if kind == "lighteval":
        from metaeval.io import read_lighteval

        return read_lighteval(source)
    return None


_PLURAL = {"task": "tasks", "query": "queries", "system": "systems", "metric": "metrics"}
#: The columns of every harness reader's table, never sample metadata.
_TABLE_COLUMNS = ("task", "query", "system", "metric", "value", "replicate")


def _harness_keys(scores: pd.DataFrame, args: argparse.Namespace, kind: str) -> pd.DataFrame:
    """``--columns NAME=COLUMN`` and ``--constant NAME=VALUE`` on the table of harness logs:
    the key NAME taken from another column of the table (for Inspect logs a sample-metadata
    key, read for this) or set to VALUE on every row. The key may rename and split, never
    merge: a new value that gathers two old ones (two metrics of one task, two tasks) is an
    error naming them."""
    import pandas as pd

    from metaeval.errors import MetaEvalError, excerpt

    columns, constants = dict(args.columns or {}), dict(args.constant or {})
    if not columns and not constants:
        return scores
    keys = ("task", "query", "system", "metric")
    odd = [
        f"--{o} {n}"
        for o, given in (("columns", columns), ("constant", constants))
        for n in given
        if n not in keys
    ]
    if odd:
        raise UsageError(
            f"{', '.join(odd)}: {_LOGS[kind]} hold the scores they logged in 'value'; "
            f"--columns and --constant set only the keys {', '.join(keys)}."
        )
    both = sorted(set(columns) & set(constants))
    if both:
        raise UsageError(f"{', '.join(both)}: named by both --columns and --constant; pick one.")
    absent = [c for c in columns.values() if c not in scores.columns]
    if absent:
        raise MetaEvalError(
            f"--columns names {', '.join(map(repr, absent))}, not a column of the "
            f"{_LOGS[kind]}, which have {', '.join(map(repr, scores.columns))}."
        )
    new = scores.assign(
        **{name: scores[column].astype(str) for name, column in columns.items()},
        **{name: str(value) for name, value in constants.items()},
    )  # the columns mapped stay too, as the metadata columns they are
    option = {
        **{n: f"--columns {n}={c}" for n, c in columns.items()},
        **{n: f"--constant {n}={v}" for n, v in constants.items()},
    }
    for name in (k for k in keys if k in option):  # merges: a new value over several old ones
        others = [k for k in keys if k not in (name, "query") and k in new.columns]
        old = scores[name].astype(str)
        count = old.groupby([new[k] for k in [*others, name]], observed=True).nunique()
        if (count > 1).any():
            where = count[count > 1].index[0]
            where = where if isinstance(where, tuple) else (where,)
            place = dict(zip([*others, name], where, strict=True))
            gathered = sorted(old[(new[list(place)] == pd.Series(place)).all(axis=1)].unique())
            context = ", ".join(f"{k} {v!r}" for k, v in place.items() if k != name)
            raise MetaEvalError(
                f"{option[name]} gives the {_PLURAL[name]} {', '.join(gathered)} ({context}) "
                f"the one {name} {excerpt(place[name])}, which would merge them; "
                + (
                    "choose one metric per task with --primary (or read one scorer with --scorer)."
                    if name == "metric"
                    else f"map {name} to a column that tells them apart."
                )
            )
    return new


_LOGS = {
    "lm_eval": "lm-eval logs",
    "inspect": "Inspect logs",
    "helm": "HELM runs",
    "lighteval": "lighteval details",
    "scores": "scores files",
}
#: The options that only one reader takes: (options, the --input-format they need).
_OWN_OPTIONS = (
    (("latest", "replicates"), ("lm_eval",)),
    (("primary",), ("lm_eval", "inspect")),
    (("metadata", "scorer", "system_name"), ("inspect",)),
)


def _check_format_options(args: argparse.Namespace, kind: str) -> None:
    """A UsageError for an option of another reader than the one ``kind`` names."""
    for names, own in _OWN_OPTIONS:
        given = [f"--{n.replace('_', '-')}" for n in names if getattr(args, n)]
        if given and kind not in own:
            place = " or ".join(
                "an lm-eval output folder" if o == "lm_eval" else _LOGS[o] for o in own
            )
            raise UsageError(
                f"{' and '.join(given)}: only for {place} (--input-format "
                f"{' or '.join(own)}), and {inputs_text(args.scores)} was read as {_LOGS[kind]}."
            )


def _detect(paths: list[str]) -> str:
    """The reader of ``paths`` (``--input-format auto``): the harness whose logs each folder
    or file holds, else ``"scores"``; logs of several harnesses in one folder, or inputs of
    different kinds, are a UsageError asking for --input-format."""
    from pathlib import Path

    kinds = {text: _detect_one(Path(text)) for text in paths}
    found = list(dict.fromkeys(kinds.values()))
    if len(found) > 1:
        shown = "; ".join(f"{text}: {_LOGS[kind]}" for text, kind in list(kinds.items())[:6])
        raise UsageError(
            f"The inputs are of different kinds ({shown}); pass the files of one harness (or "
            "only scores files) at a time, or name the reader with --input-format."
        )
    return found[0]


def _detect_one(path: Path) -> str:
    """The reader of one input: a harness's log file (Inspect's .eval and .json logs,
    lighteval's details_*.parquet, HELM's per_instance_stats.json) or a folder of logs."""
    if path.is_file():
        if path.suffix == ".eval" or _inspect_json(path):
            return "inspect"
        if path.name.startswith("details_") and path.suffix == ".parquet":
            return "lighteval"
        if path.name == "per_instance_stats.json":
            return "helm"
        if re.match(r"samples_.+\.jsonl(\.gz)?$", path.name):
            raise UsageError(
                f"{path} is an lm-eval sample log; pass the lm-eval output folder that holds "
                "it (--output_path), which names the systems by their model folders."
            )
        return "scores"
    if not path.is_dir():
        return "scores"
    found = [
        kind
        for kind, test in (
            ("inspect", _inspect_logs),
            ("helm", _helm_runs),
            ("lighteval", _lighteval_details),
        )
        if test(path)
    ]
    # lm-eval: sample logs, or (say to rerun with --log_samples) only its results files;
    # lighteval writes results_*.json too, so those alone say lm-eval only without others
    if next(path.rglob("samples_*.jsonl*"), None) or (not found and _lm_eval_models(path)):
        found.insert(0, "lm_eval")
    if len(found) > 1:
        raise UsageError(
            f"{path} holds {' and '.join(_LOGS[k] for k in found)}; say which to read with "
            f"--input-format {{{','.join(found)}}}, or point at a folder of one harness."
        )
    return found[0] if found else "scores"


def _inspect_json(path: Path) -> bool:
    """Whether the ``.json`` file ``path`` is an Inspect log: a JSON object whose first keys
    are Inspect's ``"version"`` and ``"status"`` (read from its first bytes only)."""
    if path.suffix != ".json":
        return False
    with open(path, "rb") as f:
        head = f.read(512).decode("utf-8", "replace")
    return re.match(r'\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:', head) is not None


def _inspect_logs(path: Path) -> bool:
    if next(path.rglob("*.eval"), None):
        return True
    return any(_inspect_json(p) for p in path.rglob("*.json") if p.is_file())


def _helm_runs(path: Path) -> bool:
    return next(path.rglob("per_instance_stats.json"), None) is not None


def _lighteval_details(path: Path) -> bool:
    return next(path.rglob("details_*.parquet"), None) is not None


def _lm_eval_models(path: Path) -> bool:
    """Whether ``path`` is an lm-eval output folder: it holds sample logs or results files
    (:func:`metaeval.io.read_lm_eval` then names its models, one system per sub-folder,
    and says what is missing, e.g. ``--log_samples``)."""
    if not path.is_dir():
        return False
    return any(
        next(path.rglob(pattern), None) for pattern in ("samples_*.jsonl*", "results_*.json")
    )


def inputs_text(paths: list[str]) -> str:
    """The inputs of a command, in a message: the path, or "the N inputs"."""
    return paths[0] if len(paths) == 1 else f"the {len(paths)} inputs"


def _lazy(text: str) -> bool:
    """Whether to read a folder or pattern with dask: its files are all Parquet and dask is
    installed (else the files are read into memory, with the same results)."""
    import importlib.util
    from pathlib import Path

    from metaeval.io.tidy import scores_files, scores_format

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


def run(args: argparse.Namespace) -> int:
    """Run ``metaeval meta`` on the parsed ``args``; returns the exit code."""
    from pathlib import Path

    import pandas as pd

    import metaeval
    from metaeval.errors import quote_list

    outputs = {"--plot": args.plot, "--latex": args.latex, "--tables": args.tables}
    if (args.transpose is not None or not args.fit) and not args.latex:
        raise UsageError(
            "--transpose, --no-transpose and --no-fit shape the --latex table; add --latex FILE."
        )
    if args.plot_per_treatment and not args.plot:
        raise UsageError("--plot-per-treatment splits the --plot figure; add --plot FILE.")
    check_outputs(args, outputs, list(args.scores))
    if args.plot:
        from matplotlib.backend_bases import FigureCanvasBase

        kinds = FigureCanvasBase.get_supported_filetypes()
        if Path(args.plot).suffix.lower().lstrip(".") not in kinds:
            raise UsageError(
                f"--plot {args.plot}: the suffix does not name a figure format; use one of "
                f"{quote_list(sorted('.' + k for k in kinds))}."
            )
    scores = _meta_scores(args)
    lazy = not isinstance(scores, pd.DataFrame)
    primary = None if lazy else scores.attrs.get("primary")  # --primary: {task: metric}
    survey = None
    if lazy:  # one pass over the names, shared with the effects below
        from metaeval.engines.dask import dask_survey

        with _progress(args):
            survey = dask_survey(scores)
        found, systems = survey.metrics, survey.systems
    else:
        found = list(pd.unique(scores["metric"]))
        systems = list(pd.unique(scores["system"]))
    if args.metric:
        unknown = [m for m in args.metric if m not in found]
        if unknown:
            raise UsageError(
                f"--metric {unknown} not in {inputs_text(args.scores)}; it has {quote_list(found)}."
            )
        scores, survey = scores[scores["metric"].isin(args.metric)], None
        scores = scores if lazy else scores.reset_index(drop=True)
    source = inputs_text(args.scores)
    check_names("--control", args.control, systems, source)
    check_names("--treatment", args.treatment, systems, source)
    check_column("--by", args.by, scores.columns, source)
    check_column("--cluster", args.cluster, scores.columns, source)
    from metaeval.pooling.analysis import analysis_table

    kw = dict(method=args.method, test=args.ci, alpha=args.alpha)
    if lazy and args.replicate_design is not None:
        raise UsageError(
            "--replicate-design is for scores with a 'replicate' column, which "
            "a folder read with dask may not have."
        )
    if lazy:
        from metaeval.paired.partitions import dask_effects as lazy_effects

        with _progress(args):
            effects = lazy_effects(
                scores,
                args.control,
                treatment=args.treatment,
                effect=args.effect,
                alpha=args.alpha,
                cluster=args.cluster,
                survey=survey,
            )
    else:
        effects = metaeval.effects(
            scores,
            control=args.control,
            treatment=args.treatment,
            effect=args.effect,
            alpha=args.alpha,
            cluster=args.cluster,
            replicates=args.replicate_design,
        )
    pooled = metaeval.pool(effects, **kw)
    table = analysis_table(effects, effect=args.effect, **kw)
    from metaeval._options import format_number

    out = output(args)
    level = f"{format_number(100 * (1 - args.alpha))}%"
    out.note(
        f"effect: {args.effect}; pooling: {args.method} with {args.ci} intervals at {level}; "
        f"control: {args.control}"
    )
    columns = [
        "treatment",
        "task",
        "n",
        "mean_control",
        "mean_treatment",
        "effect",
        "se",
        "ci_low",
        "ci_high",
        "p_value",
        "weight",
    ]
    if primary:
        out.note(f"metric 'primary' of each task: {_pairs_text(primary)}")
    for metric, part in table.groupby("metric", sort=False):
        out.table(
            f"Effects per task and summary: {metric}",
            _primary_column(part[columns], primary if metric == "primary" else None),
        )
    heterogeneity = [
        "metric",
        "treatment",
        "k",
        "tau2",
        "i2",
        "q",
        "q_df",
        "q_p_value",
        "pi_low",
        "pi_high",
    ]
    out.table("Heterogeneity of the summaries", pooled[heterogeneity])
    by_pooled = None
    if args.by is not None:
        by_pooled = metaeval.pool(effects, by=args.by, **kw)
        out.table(
            f"Summaries by {args.by}",
            by_pooled[
                [
                    "metric",
                    "treatment",
                    args.by,
                    "k",
                    "effect",
                    "se",
                    "ci_low",
                    "ci_high",
                    "p_value",
                    "tau2",
                    "i2",
                ]
            ],
        )
    if args.plot:
        _meta_plots(effects, pooled, args, out, primary)
    if args.latex:
        from metaeval.report import to_latex

        tables = {
            flip: to_latex(effects, pooled=pooled, transpose=flip, fit=args.fit)
            for flip in (False, True)
        }
        width = {flip: _cell_columns(text) for flip, text in tables.items()}
        # as asked, else the orientation with fewer columns of cells (a tie: systems as rows)
        transposed = args.transpose
        if transposed is None:
            transposed = width[True] < width[False]
        latex = tables[transposed]
        Path(args.latex).write_text(_primary_caption(latex, primary), encoding="utf-8")
        shape = "tasks as rows, systems as columns" if transposed else "systems as rows"
        out.note(f"wrote {args.latex} ({shape})")
        _check_latex_size(width[transposed], width[not transposed], effects, args)
    finish(out, args)
    return 0


def _cell_columns(latex: str) -> int:
    """The columns of cells of a LaTeX table (its tabular's columns but the labels')."""
    spec = re.search(r"\\begin\{tabular\}\{([a-z|]+)\}", latex)
    return len(spec.group(1).replace("|", "").lstrip("l")) if spec else 0


def _check_latex_size(cells: int, other: int, effects: pd.DataFrame, args) -> None:
    """Say when the --latex table has more columns of cells (``cells``; ``other`` in the
    other orientation) than a page can show."""
    if cells <= LATEX_COLUMNS:
        return
    ways = []
    if other < cells:  # the wider orientation, as the user asked
        ways.append(
            "--no-transpose (systems as rows)"
            if args.transpose
            else "--transpose (tasks as rows, systems as columns)"
        )
    if effects["metric"].nunique() > 1:
        ways.append("--metric NAME (one metric per table)")
    if effects["treatment"].nunique() > 1:
        ways.append("--treatment NAME ... (fewer systems)")
    advise(
        f"--latex {args.latex}: the table has {cells} columns of cells, more than "
        f"{LATEX_COLUMNS}; fitted to the line its text prints too small to read. Try "
        + ("; ".join(ways) or "fewer tasks")
        + "."
    )


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
    from metaeval.report import escape

    lines = latex.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("\\caption{"))
    note = escape(f" Metric primary of each task: {_pairs_text(primary)}.", "latex")
    lines[at] = lines[at][:-1] + note + "}"
    return "\n".join(lines)


def _meta_plots(
    effects: pd.DataFrame, pooled: pd.DataFrame, args, out: Output, primary: dict | None = None
) -> None:
    from pathlib import Path

    import matplotlib.pyplot as plt
    import pandas as pd

    from metaeval import forest_plot
    from metaeval.plot import save

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
            labels = (
                {t: f"{t} ({m})" for t, m in (primary or {}).items()}
                if metric == "primary"
                else None
            )
            fig = forest_plot(
                frame,
                method=args.method,
                test=args.ci,
                alpha=args.alpha,
                pooled=pooled[pooled["metric"] == metric],
                by=args.by,
                labels=labels,
                title=f"{metric}: effects ({args.effect}) against {args.control}",
            )
            save(fig, target)
            _check_forest_size(frame, fig, target, args)
            plt.close(fig)
            out.note(f"wrote {target}")


def _check_forest_size(frame: pd.DataFrame, fig: Any, target: Path, args) -> None:
    """Say when a forest file holds more panels or task rows than can be read."""
    panels, tasks = frame["treatment"].nunique(), frame["task"].nunique()
    if panels <= FOREST_PANELS and tasks <= FOREST_TASKS:
        return
    from metaeval._options import format_number

    w, h = fig.get_size_inches()
    size = f"{format_number(w, 0)} x {format_number(h, 0)} in"
    if target.suffix.lower() in (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp"):
        size += f", {round(w * fig.dpi)} x {round(h * fig.dpi)} px"
    ways = []
    if panels > FOREST_PANELS:
        ways += ["--plot-per-treatment (one file per treatment)", "--treatment NAME ..."]
    if tasks > FOREST_TASKS:
        ways.append("fewer tasks (select them in the scores)")
    advise(
        f"--plot {target}: {panels} treatment panel(s) x {tasks} tasks ({size}), more than "
        f"{FOREST_PANELS} panels or {FOREST_TASKS} tasks a figure can show legibly. Try "
        + "; ".join(ways)
        + "."
    )

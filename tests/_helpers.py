"""Helpers shared by test modules (imported as ``from _helpers import ...``)."""

from __future__ import annotations

import dataclasses
import gzip
import importlib
import inspect
import io
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import metaeval
from metaeval import io as mio
from metaeval._results import Result

FIXTURES = Path(__file__).parent / "fixtures"
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
#: The HELM suite written by ``helm-run`` itself (``fixtures/helm/make_helm_suite.sh``):
#: one folder per run, its JSON files gzipped; :func:`helm_suite` unpacks it.
HELM_SUITE = FIXTURES / "helm" / "runs" / "v1"

#: For a test about something else whose made-up tasks agree more closely than their
#: variances imply: pool()'s warning that a Knapp–Hartung interval is narrower than the
#: normal one (issue 29, item 1; tested in tests/pooling/test_pooling.py) is expected there.
NARROW_KH = pytest.mark.filterwarnings(
    "ignore:.*Knapp–Hartung interval narrower:metaeval.DegenerateWarning"
)


def helm_suite(dest: Path, runs: list[str] | None = None) -> Path:
    """The HELM suite of ``HELM_SUITE`` (or its ``runs``, by folder name) unpacked into
    ``dest``, as ``helm-run`` wrote it: ``dest/<run>/run_spec.json``, ... ."""
    for run in sorted(HELM_SUITE.iterdir()):
        if runs is None or run.name in runs:
            (dest / run.name).mkdir(parents=True)
            for packed in run.glob("*.json.gz"):
                (dest / run.name / packed.stem).write_bytes(gzip.decompress(packed.read_bytes()))
    return dest


def parse_raw(text: str) -> dict[str, pd.DataFrame]:
    """Tables of the command's ``--print-mode raw`` (or csv) output, by title."""
    tables, title, lines = {}, None, []
    sep = "\t" if "\t" in text else ","
    for line in [*text.splitlines(), ""]:
        if line.startswith("# ") and not lines:
            title = line[2:]
        elif line:
            lines.append(line)
        elif lines:
            tables[title] = pd.read_csv(
                io.StringIO("\n".join(lines)), sep=sep, keep_default_na=True
            )
            lines = []
    return tables


def make_scores(
    rng: np.random.Generator,
    *,
    tasks: dict[str, int] | None = None,
    systems: tuple[str, ...] = ("ctrl", "a", "b"),
    metrics: tuple[str, ...] = ("m1", "m2"),
    drop: float = 0.0,
) -> pd.DataFrame:
    """Correlated per-query scores; ``drop`` removes that share of rows at random."""
    tasks = tasks or {"t1": 12, "t2": 40, "t3": 7, "t4": 90}
    frames = []
    for metric in metrics:
        for task, n in tasks.items():
            base = rng.uniform(0.3, 0.7) + rng.normal(0, 0.15, n)
            for i, system in enumerate(systems):
                frames.append(
                    pd.DataFrame(
                        {
                            "task": task,
                            "query": [f"q{j}" for j in range(n)],
                            "system": system,
                            "metric": metric,
                            "value": base + 0.02 * i + rng.normal(0, 0.1, n),
                        }
                    )
                )
    df = pd.concat(frames, ignore_index=True)
    if drop:
        df = df[rng.random(len(df)) >= drop].reset_index(drop=True)
    return df


#: single faults a scores table can have, injected by :func:`inject`
FAULTS = [
    "nan",
    "inf",
    "duplicate",
    "float_query",
    "mixed_system",
    "missing_column",
    "duplicated_column",
    "empty",
    "output_column",
    "text_value",
]


def inject(table: pd.DataFrame, fault: str, i: int) -> tuple[pd.DataFrame, str]:
    """The table with one fault, and a word the error message must contain."""
    t = table.copy()
    i = i % len(t)
    if fault in ("nan", "inf"):
        t["value"] = t["value"].astype(float)  # int or bool values cannot hold them
        t.loc[t.index[i], "value"] = np.nan if fault == "nan" else -np.inf
        return t, "value"
    if fault == "duplicate":
        return pd.concat([t, t.iloc[[i]]]), "key"
    if fault == "float_query":
        return t.assign(
            query=pd.Series(np.arange(len(t)) + 0.5, index=t.index, dtype=object)
        ), "query"
    if fault == "mixed_system":
        s = t["system"].astype(object)
        s.iloc[i] = 7
        return t.assign(system=s), "system"
    if fault == "missing_column":
        column = ["task", "query", "system", "metric", "value"][i % 5]
        return t.drop(columns=column), column
    if fault == "duplicated_column":
        t["extra"] = 0.0
        return t.rename(columns={"extra": "value"}), "duplicated column"
    if fault == "empty":
        return t.iloc[:0], "no rows"
    if fault == "output_column":
        name = ["n", "se", "r", "effect", "p_value", "mean_control"][i % 6]
        return t.assign(**{name: 1.0}), name
    v = t["value"].astype(object)
    v.iloc[i] = "0.5"
    return t.assign(value=v), "value"


def public_names(module_name: str) -> list[str]:
    """``__all__`` of a module; for an alias module (``metaeval.ir``) its ``dir()``."""
    import importlib

    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    return list(names) if names is not None else [n for n in dir(module) if not n.startswith("_")]


def run_fresh(code: str) -> str:
    """Run ``code`` in a fresh interpreter (what ``import metaeval`` loads, hooks that fire
    on a later import) and return its standard output; its stderr is the failure message."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def latex_number_heights(tex: str, folder: Path) -> list[float]:
    """The heights (pt) of the numbers with three decimals in the PDF that pdflatex makes
    of ``tex`` (an article with booktabs and graphicx), as pdftotext -bbox measures them:
    about 10 at the text size, less where a table was scaled down to the line."""
    doc = "\n".join(
        [
            r"\documentclass{article}",
            r"\usepackage{booktabs,graphicx}",
            r"\begin{document}",
            tex,
            r"\end{document}",
        ]
    )
    (folder / "doc.tex").write_text(doc, encoding="utf-8")
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:]
    box = subprocess.run(
        ["pdftotext", "-bbox", "doc.pdf", "-"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    words = re.findall(r'yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">(-?\d\.\d{3})<', box)
    assert len(words) >= 6, box[:2000]
    return [float(y1) - float(y0) for y0, y1, _ in words]


# ------------------------------------------------- the outputs of every public function
PUBLIC_MODULES = [
    "metaeval",
    "metaeval.schema",
    "metaeval.io",
    "metaeval.measures",
    "metaeval.ir",
    "metaeval.paired",
    "metaeval.pooling",
    "metaeval.ranking",
    "metaeval.datasets",
    "metaeval.classification",
    "metaeval.plot",
    "metaeval.report",
    "metaeval.design",
]

OUTPUT_CONTROL = "logistic_regression"

# Functions whose output is not a table: what they return instead.
NOT_TABLES = {
    "fetch_ranger": "a folder path (downloads Ranger's data)",
    "adjust_pvalues": "an array of adjusted p-values",
    "fisher_z_variance": "a number or an array",
    "measure_name": "a measure's name",
    "to_ranx": "a ranx Qrels or Run",
    "write_scores": "None (writes a file)",
    "write_qrels": "None (writes a file)",
    "write_run": "None (writes a file)",
    "write_jsonl": "None (writes a file)",
    "jsonl_to_trec": "None (writes files)",
    "trec_to_jsonl": "None (writes files)",
    "read_per_sample": "an array of per-sample values",
    "correlation": "a namedtuple-like result of a correlation",
    "kendall_tau": "a named tuple of numbers",
    "ndcg": "a number",
    "err": "a number",
    "reciprocal_rank": "a number",
    "best_human_rank": "a number",
    "best_predicted_vs_human": "a number",
    "normalize_ranks": "an array of ranks",
    "forest": "a figure",
    "forest_plot": "a figure",
    "pairwise": "a figure",
    "critical_difference": "a figure",
    "bubble": "a figure",
    "gosh_plot": "a figure",
    "baujat_plot": "a figure",
    "simplex": "a figure",
    "power_curves": "a figure",
    "rank_plot": "a figure",
    "save": "None (writes a figure)",
    "ir_columns": "a mapping of text columns for forest()",
    "to_latex": "a string",
    "to_html": "a string",
    "escape": "a string",
    "escape_latex": "a string",
    "style": "a pandas Styler of a table checked here",
    "cliques": "a list of cliques",
    "recorded_design": "the replicate design a table records, a string or None",
    "effect_sizes": "a Dataset of effects and a dict of DataArrays (effects() tabulates them)",
}


def public_functions() -> dict[str, Callable[..., Any]]:
    found: dict[str, Callable[..., Any]] = {}
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        names = getattr(module, "__all__", None) or [n for n in dir(module) if n[0] != "_"]
        for attr in names:
            obj = getattr(module, attr, None)
            if inspect.isfunction(obj):
                found.setdefault(obj.__name__, obj)
    return found


def qrels_and_run(tmp: Path) -> tuple[Path, Path]:
    qrels = pd.DataFrame(
        {
            "query_id": ["q1", "q1", "q2", "q2"],
            "doc_id": ["d1", "d2", "d1", "d3"],
            "relevance": [1, 0, 2, 1],
        }
    )
    run = pd.DataFrame(
        {
            "query_id": ["q1", "q1", "q2", "q2"],
            "doc_id": ["d1", "d2", "d3", "d1"],
            "score": [2.0, 1.0, 0.5, 0.25],
        }
    )
    mio.write_qrels(qrels, tmp / "qrels.txt")
    mio.write_run(run, tmp / "bm25.txt")
    return tmp / "qrels.txt", tmp / "bm25.txt"


def ranger_config(tmp: Path) -> Path:
    for (system, task), values in {
        ("bert", "rte"): "101",
        ("bert", "mrpc"): "110",
        ("roberta", "rte"): "111",
        ("roberta", "mrpc"): "110",
    }.items():
        (tmp / f"{system}_{task}.txt").write_text("\n".join(values))
    (tmp / "config.yaml").write_text(
        "eval_metrics:\n  bert: {rte: bert_rte.txt, mrpc: bert_mrpc.txt}\n"
        "  roberta: {rte: roberta_rte.txt, mrpc: roberta_mrpc.txt}\n"
    )
    return tmp / "config.yaml"


def lm_eval_folder(tmp: Path) -> Path:
    import json

    folder = tmp / "model_a" / "pretrained__x"
    folder.mkdir(parents=True)
    records = [{"doc_id": i, "acc": float(i % 2), "target": "A"} for i in range(3)]
    (folder / "samples_arc_easy_2024-05-13T12-34-56.123456.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records)
    )
    return tmp / "model_a"


def inspect_log(tmp: Path) -> Path:
    """A real Inspect log of two samples (inspect_ai.eval, no model call: a solver answers)."""
    pytest.importorskip("inspect_ai")
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import match
    from inspect_ai.solver import solver

    @solver
    def answer():
        async def solve(state, generate):
            state.output = ModelOutput.from_content(model="mockllm/model", content="a")
            return state

        return solve

    samples = [Sample(input="q", target=t, id=i) for i, t in enumerate(["a", "b"])]
    eval(
        Task(dataset=samples, solver=answer(), scorer=match(), name="t"),
        model="mockllm/model",
        log_dir=str(tmp / "inspect"),
        display="none",
    )
    return tmp / "inspect"


def output_cases(
    scores: pd.DataFrame, effects: pd.DataFrame, tmp: Path
) -> dict[str, Callable[[], Any]]:
    """A call of every table-returning public function on small real data."""
    qrels, run = qrels_and_run(tmp)
    acc = effects.query("metric == 'accuracy'")
    (tmp / "per_query.csv").write_text("query_id,ap,rr\nq1,0.5,1\nq2,0.25,0.5\n")
    pd.DataFrame(
        {
            "name": ["BM25", "BM25"],
            "qid": ["1", "2"],
            "measure": ["map", "map"],
            "value": [0.5, 0.1],
        }
    ).to_csv(tmp / "pt.csv", index=False)
    mio.write_scores(scores.head(20), tmp / "scores.csv")
    mio.trec_to_jsonl(qrels, tmp / "elinor.jsonl", rel_type="true")
    wide = (
        scores.query("metric == 'accuracy'")
        .pivot(index=["task", "query"], columns="system", values="value")
        .reset_index()
    )
    replicated = pd.concat([scores.assign(replicate=r) for r in (0, 1)], ignore_index=True)
    labels = np.array([0, 1, 1, 0, 1, 0, 1, 1])
    predictions = np.array([0, 1, 0, 0, 1, 1, 1, 1])
    judgments = pd.DataFrame(
        {
            "task": "wmt",
            "segment": ["s1"] * 6,
            "system": ["a"] * 3 + ["b"] * 3,
            "item": ["x", "y", "z"] * 2,
            "human_rank": [1, 2, 3] * 2,
            "predicted_rank": [1, 2, 3, 3, 2, 1],
        }
    )
    accuracy = scores.query("metric == 'accuracy'")
    stats = metaeval.sufficient_statistics(scores, OUTPUT_CONTROL)
    keys = ["task", "query", "system", "metric"]
    return {
        # core and io
        "load_example": metaeval.load_example,
        "load_demsar": lambda: metaeval.datasets.load_demsar(),
        "scores": lambda: metaeval.scores(scores),
        "from_wide": lambda: metaeval.from_wide(wide, constants={"metric": "accuracy"}),
        "validate_scores": lambda: metaeval.validate_scores(scores),
        "validate_effects": lambda: metaeval.validate_effects(effects),
        "prepare_scores": lambda: metaeval.schema.prepare_scores(scores),
        "coerce_keys": lambda: metaeval.schema.coerce_keys(scores, keys, table="scores"),
        "checked_replicates": lambda: metaeval.schema.checked_replicates(replicated),
        "average_replicates": lambda: metaeval.schema.average_replicates(replicated),
        "scores_from_arrays": lambda: metaeval.scores_from_arrays(
            {"t": {"a": [0.1, 0.2], "b": [0.3, 0.4]}}, metric="m"
        ),
        "read_scores": lambda: mio.read_scores(tmp / "scores.csv"),
        "read_qrels": lambda: mio.read_qrels(qrels),
        "read_run": lambda: mio.read_run(run),
        "read_jsonl": lambda: mio.read_jsonl(tmp / "elinor.jsonl", rel_type="true"),
        "read_per_query_csv": lambda: mio.read_per_query_csv([tmp / "per_query.csv"], task="t"),
        "read_pyterrier": lambda: mio.read_pyterrier(tmp / "pt.csv", task="robust"),
        "read_ranger": lambda: mio.read_ranger(ranger_config(tmp), metric="accuracy"),
        "read_lm_eval": lambda: mio.read_lm_eval([lm_eval_folder(tmp)]),
        "read_helm": lambda: mio.read_helm(helm_suite(tmp / "helm")),
        "read_lighteval": lambda: mio.read_lighteval(FIXTURES / "lighteval" / "details"),
        "read_inspect": lambda: mio.read_inspect(inspect_log(tmp)),
        "from_ranx": lambda: mio.from_ranx(mio.to_ranx({"q1": {"d1": 1}}, "qrels")),
        "from_ranx_scores": lambda: mio.from_ranx_scores({"bm25": {"ndcg@10": {"q1": 0.5}}}),
        # measures
        "evaluate": lambda: metaeval.ir.evaluate(qrels, {"bm25": run}, ["AP", "nDCG@10"], task="t"),
        "as_qrels": lambda: metaeval.io.as_qrels(qrels),
        "as_run": lambda: metaeval.io.as_run(run),
        "metrics": lambda: metaeval.measures.metrics(labels, predictions),
        "confusion_matrix": lambda: metaeval.measures.confusion_matrix(labels, predictions),
        "per_sample": lambda: metaeval.measures.per_sample(labels, {"a": predictions}, task="t"),
        "segment_scores": lambda: metaeval.measures.segment_scores(judgments),
        "list_measures": lambda: metaeval.measures.list_measures([[2, 3, 0], [0, 1], []], k=3),
        "kendall_tau_set": lambda: metaeval.measures.kendall_tau_set(
            [[1, 2, 3], [2, 1, 3]], [[1, 2, 3], [1, 2, 3]]
        ),
        # paired
        "sufficient_statistics": lambda: stats,
        "raw_sums": lambda: metaeval.paired.raw_sums(stats),
        "effects": lambda: effects,
        "effect_covariance": lambda: metaeval.effect_covariance(scores, OUTPUT_CONTROL),
        "compare": lambda: metaeval.compare(scores, OUTPUT_CONTROL),
        "anova": lambda: metaeval.anova(scores),
        "tukey": lambda: metaeval.tukey(scores),
        "agreement": lambda: metaeval.agreement(judged(scores), n_resamples=20, seed=1),
        "judge_errors": lambda: metaeval.judge_errors(
            judged(scores), gold="logistic_regression", n_resamples=20, seed=1
        ),
        "ppi": lambda: metaeval.ppi(
            judged(scores), gold="logistic_regression", judge="random_forest"
        ),
        "facets": lambda: metaeval.facets(faceted(), ["query", "prompt", "seed"]),
        "means": lambda: metaeval.means(scores),
        "bootstrap_effects": lambda: metaeval.bootstrap_effects(
            labelled_predictions(), "old", "f1", n_resamples=50, seed=1
        ),
        "correlation_effects": lambda: metaeval.paired.correlation_effects(scores, OUTPUT_CONTROL),
        # pooling
        "pool": lambda: metaeval.pool(effects),
        "weights": lambda: metaeval.weights(acc),
        "leave_one_out": lambda: metaeval.leave_one_out(acc),
        "influence": lambda: metaeval.influence(acc),
        "gosh": lambda: metaeval.gosh(acc),
        "baujat": lambda: metaeval.baujat(acc),
        "analyze": lambda: metaeval.analyze(scores, OUTPUT_CONTROL),
        "pool_metrics": lambda: metaeval.pool_metrics(scores, OUTPUT_CONTROL),
        "metareg": lambda: metaeval.metareg(effects.assign(size=effects["n"]), mods=["size"]),
        "bayes_pool": lambda: metaeval.bayes_pool(acc),
        "permutest": lambda: metaeval.permutest(effects, seed=1, n_resamples=50),
        # ranking
        "leaderboard": lambda: metaeval.leaderboard(scores),
        "rank_intervals": lambda: metaeval.rank_intervals(scores, n_resamples=50, seed=1),
        "friedman": lambda: metaeval.ranking.friedman(scores),
        "posthoc": lambda: metaeval.ranking.posthoc(scores),
        "bayes_signed_rank": lambda: metaeval.ranking.bayes_signed_rank(
            accuracy, control=OUTPUT_CONTROL, samples=True, seed=1
        ),
        "rank_report": lambda: metaeval.rank_report(accuracy),
        # report
        "build_report": lambda: metaeval.build_report(
            scores, OUTPUT_CONTROL, n_resamples=50, seed=1
        ),
        # design
        "plan_queries": lambda: metaeval.design.plan_queries(
            scores, OUTPUT_CONTROL, mde=0.05, power=0.8
        ),
        "plan_tasks": lambda: metaeval.design.plan_tasks(acc, k=4, mde=0.02, n_draws=200, seed=1),
        "power": lambda: metaeval.design.power(acc, k=4, mde=0.02, n_draws=200, seed=1),
    }


def labelled_predictions() -> pd.DataFrame:
    """Labels and two systems' predictions on three tasks (bootstrap_effects' input)."""
    rng = np.random.default_rng(1)
    frames = []
    for task in ["a", "b", "c"]:
        label = rng.integers(0, 2, 40)
        for system, error in [("old", 0.3), ("new", 0.2)]:
            wrong = rng.random(40) < error
            frames.append(
                pd.DataFrame(
                    {
                        "task": task,
                        "query": range(40),
                        "system": system,
                        "prediction": np.where(wrong, 1 - label, label),
                        "label": label,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def output_tables(out: Any) -> list[tuple[str, Any]]:
    """The tables of an output: itself, a Result's ``table`` and its other table parts, a
    report's tables."""
    if isinstance(out, Result):
        found = []
        for f in dataclasses.fields(out):
            part = getattr(out, f.name)
            if isinstance(part, pd.DataFrame | pd.Series):
                found.append((f".{f.name}", part))
            elif isinstance(part, dict):  # tables by key (a rank report's post-hoc tests)
                found += [
                    (f".{f.name}[{key!r}]", table)
                    for key, table in part.items()
                    if isinstance(table, pd.DataFrame)
                ]
        return found
    if isinstance(out, pd.DataFrame | pd.Series | xr.Dataset):
        return [("", out)]
    found = []
    for name in ("summary", "ranks", "omnibus", "pairs"):
        part = getattr(out, name, None)
        if isinstance(part, pd.DataFrame):
            found.append((f".{name}", part))
    for key, part in (getattr(out, "posthoc", None) or {}).items():
        found.append((f".posthoc[{key!r}]", part))
    return found


def variant_cases(scores: pd.DataFrame, effects: pd.DataFrame) -> dict[str, Callable[[], Any]]:
    """Calls whose options add output columns the plain calls of :func:`output_cases` do
    not have (subgroups, clusters, moderators, robust errors, other designs)."""
    from metaeval.design.queries import plan_queries

    control = OUTPUT_CONTROL
    size = {"iris": 1.0, "wine": 2.0, "digits": 3.0}
    codes = scores.groupby("task")["query"].transform(lambda q: pd.factorize(q)[0] // 5)
    clustered = scores.assign(passage=codes)
    sized = effects.assign(size=effects["task"].map(size))
    return {
        "effects(cluster=)": lambda: metaeval.effects(clustered, control, cluster="passage"),
        "pool(effects(cluster=))": lambda: metaeval.pool(
            metaeval.effects(clustered, control, cluster="passage")
        ),
        "pool(by=)": lambda: metaeval.pool(
            effects.assign(g=effects["task"].isin(["iris", "wine"])), by="g"
        ),
        "compare(adjust=)": lambda: metaeval.compare(scores, control=control, adjust="holm"),
        "metareg(robust=)": lambda: metaeval.metareg(sized, "size", robust="CR2"),
        "permutest(mods=)": lambda: metaeval.permutest(sized, mods="size", seed=1, n_resamples=50),
        "leaderboard(pooled)": lambda: metaeval.leaderboard(
            scores, aggregation="pooled", control=control, metric="accuracy"
        ),
        "plan_queries(cluster=)": lambda: plan_queries(
            clustered, control, mde=0.05, power=0.8, cluster="passage"
        ),
        "plan_queries(test='anova')": lambda: plan_queries(
            scores, control, test="anova", n=50, mde=0.05
        ),
        "plan_queries(n=)": lambda: plan_queries(scores, control, n=50, mde=0.05),
        "ppi(control=, cluster=)": lambda: metaeval.ppi(
            pd.concat([judged(scores), judged(scores).assign(system="other")]).assign(
                passage=lambda t: t["query"].astype(int) // 5
            ),
            gold="logistic_regression",
            judge="random_forest",
            control="other",
            cluster="passage",
        ),
        "agreement(per_system=).pool()": lambda: metaeval.agreement(
            judged(scores), level="interval", per_system=True, n_resamples=20, seed=1
        ).pool(),
        "facets().plan()": lambda: metaeval.facets(faceted(), ["query", "prompt", "seed"]).plan(
            costs={"query": 1, "prompt": 20, "seed": 30}, target_se=0.5
        ),
    }


def judged(scores: pd.DataFrame) -> pd.DataFrame:
    """The accuracy labels of :func:`output_scores` as a judges' table: the systems are
    the judges of one output per query."""
    acc = scores[scores["metric"] == "accuracy"]
    return acc.rename(columns={"system": "judge"}).assign(system="answer")


def faceted() -> pd.DataFrame:
    """A small table with prompt and seed facets: 2 systems × 12 queries × 3 prompts × 2
    seeds."""
    rng = np.random.default_rng(42)
    rows = [(q, p, d, s) for q in range(12) for p in range(3) for d in range(2) for s in "ab"]
    t = pd.DataFrame(rows, columns=["query", "prompt", "seed", "system"]).assign(
        task="qa", metric="acc"
    )
    t["value"] = rng.normal(0, 1, 12)[t["query"]] + rng.normal(0, 0.3, len(t))
    return t


def output_scores() -> pd.DataFrame:
    """The scores every case of :func:`output_cases` starts from (three tasks of the example)."""
    return metaeval.load_example().query("task in ['iris', 'wine', 'digits']")


def all_outputs(tmp: Path) -> dict[str, Any]:
    """Every table of every case of :func:`output_cases` and :func:`variant_cases`, run
    once, by ``"name()"`` plus where in the output it is (``".fit"``, ``".posthoc['m']"``)."""
    import warnings

    scores = output_scores()
    effects = metaeval.effects(scores, OUTPUT_CONTROL)
    cases = {**output_cases(scores, effects, tmp), **variant_cases(scores, effects)}
    found: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small data: few tasks, degenerate groups warn
        for name, case in cases.items():
            for where, table in output_tables(case()):
                found[f"{name}(){where}" if "(" not in name else f"{name}{where}"] = table
    return found


def judged_labels(
    seed: int = 5, judges: tuple[str, ...] = ("gpt", "claude", "llama")
) -> pd.DataFrame:
    """Two tasks × 80 questions × 2 systems, judges right 90/85/75% of the time, a human
    labelling 30% of the questions, passages of 8 questions."""
    rng = np.random.default_rng(seed)
    rows = []
    for task in ("math", "code"):
        human = rng.random(80) < 0.3
        query = np.array([f"{task}-{i:02d}" for i in range(80)])
        for system, p in (("small", 0.5), ("large", 0.7)):
            truth = rng.random(80) < p
            for judge, accuracy in zip(judges, (0.9, 0.85, 0.75), strict=False):
                label = np.where(rng.random(80) < accuracy, truth, ~truth)
                rows.append(
                    pd.DataFrame(
                        {
                            "task": task,
                            "query": query,
                            "system": system,
                            "metric": "correct",
                            "judge": judge,
                            "passage": np.arange(80) // 8,
                            "value": label * 1.0,
                        }
                    )
                )
            rows.append(
                pd.DataFrame(
                    {
                        "task": task,
                        "query": query[human],
                        "system": system,
                        "metric": "correct",
                        "judge": "human",
                        "passage": np.arange(80)[human] // 8,
                        "value": truth[human] * 1.0,
                    }
                )
            )
    return pd.concat(rows, ignore_index=True)

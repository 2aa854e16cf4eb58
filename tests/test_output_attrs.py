"""No public function's output carries a table or an array in its ``attrs`` (issue 26):
``attrs`` hold scalar options only (method, alpha, seed, …), so that ``pd.concat`` of two
outputs works and nothing rides beside the rows unseen. A part of a result is a named
attribute of a :class:`metaeval._results.Result` instead.

Every public function of ``metaeval.__all__`` and of the stages' ``__all__`` is either run
here on small real data (the bundled example, tiny files written to ``tmp_path``) or
listed in ``NOT_TABLES`` with what it returns instead; a new public function must be
added to one of them."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from _helpers import helm_suite

import metaeval
from metaeval import io as mio
from metaeval._results import Result

MODULES = [
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

CONTROL = "logistic_regression"
FIXTURES = Path(__file__).parent / "fixtures"

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


def _public_functions() -> dict[str, Callable[..., Any]]:
    found: dict[str, Callable[..., Any]] = {}
    for name in MODULES:
        module = importlib.import_module(name)
        names = getattr(module, "__all__", None) or [n for n in dir(module) if n[0] != "_"]
        for attr in names:
            obj = getattr(module, attr, None)
            if inspect.isfunction(obj):
                found.setdefault(obj.__name__, obj)
    return found


FUNCTIONS = _public_functions()


@pytest.fixture(scope="module")
def scores() -> pd.DataFrame:
    return metaeval.load_example().query("task in ['iris', 'wine', 'digits']")


@pytest.fixture(scope="module")
def effects(scores) -> pd.DataFrame:
    return metaeval.effects(scores, CONTROL)


def _qrels_and_run(tmp: Path) -> tuple[Path, Path]:
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


def _ranger(tmp: Path) -> Path:
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


def _lm_eval(tmp: Path) -> Path:
    import json

    folder = tmp / "model_a" / "pretrained__x"
    folder.mkdir(parents=True)
    records = [{"doc_id": i, "acc": float(i % 2), "target": "A"} for i in range(3)]
    (folder / "samples_arc_easy_2024-05-13T12-34-56.123456.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records)
    )
    return tmp / "model_a"


def _inspect(tmp: Path) -> Path:
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


def _cases(scores: pd.DataFrame, effects: pd.DataFrame, tmp: Path) -> dict[str, Callable[[], Any]]:
    """A call of every table-returning public function on small real data."""
    qrels, run = _qrels_and_run(tmp)
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
    stats = metaeval.sufficient_statistics(scores, CONTROL)
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
        "read_ranger": lambda: mio.read_ranger(_ranger(tmp), metric="accuracy"),
        "read_lm_eval": lambda: mio.read_lm_eval([_lm_eval(tmp)]),
        "read_helm": lambda: mio.read_helm(helm_suite(tmp / "helm")),
        "read_lighteval": lambda: mio.read_lighteval(FIXTURES / "lighteval" / "details"),
        "read_inspect": lambda: mio.read_inspect(_inspect(tmp)),
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
        "effect_covariance": lambda: metaeval.effect_covariance(scores, CONTROL),
        "compare": lambda: metaeval.compare(scores, CONTROL),
        "anova": lambda: metaeval.anova(scores),
        "tukey": lambda: metaeval.tukey(scores),
        "means": lambda: metaeval.means(scores),
        "bootstrap_effects": lambda: metaeval.bootstrap_effects(
            _predictions(), "f1", control="old", n_resamples=50, seed=1
        ),
        "correlation_effects": lambda: metaeval.paired.correlation_effects(scores, CONTROL),
        # pooling
        "pool": lambda: metaeval.pool(effects),
        "weights": lambda: metaeval.weights(acc),
        "leave_one_out": lambda: metaeval.leave_one_out(acc),
        "influence": lambda: metaeval.influence(acc),
        "gosh": lambda: metaeval.gosh(acc),
        "baujat": lambda: metaeval.baujat(acc),
        "analyze": lambda: metaeval.analyze(scores, CONTROL),
        "pool_metrics": lambda: metaeval.pool_metrics(scores, CONTROL),
        "metareg": lambda: metaeval.metareg(effects.assign(size=effects["n"]), mods=["size"]),
        "bayes_pool": lambda: metaeval.bayes_pool(acc),
        "permutest": lambda: metaeval.permutest(effects, seed=1, n_resamples=50),
        # ranking
        "leaderboard": lambda: metaeval.ranking.leaderboard(scores),
        "rank_intervals": lambda: metaeval.ranking.rank_intervals(scores, n_resamples=50, seed=1),
        "friedman": lambda: metaeval.ranking.friedman(scores),
        "posthoc": lambda: metaeval.ranking.posthoc(scores),
        "bayes_signed_rank": lambda: metaeval.ranking.bayes_signed_rank(
            accuracy, control=CONTROL, samples=True, seed=1
        ),
        "rank_report": lambda: metaeval.rank_report(accuracy),
        # report
        "build_report": lambda: metaeval.build_report(scores, CONTROL, n_resamples=50, seed=1),
        # design
        "plan_queries": lambda: metaeval.design.plan_queries(scores, CONTROL, mde=0.05, power=0.8),
        "plan_tasks": lambda: metaeval.design.plan_tasks(acc, k=4, mde=0.02, n_sim=200, seed=1),
        "power": lambda: metaeval.design.power(acc, k=4, mde=0.02, n_sim=200, seed=1),
    }


def _predictions() -> pd.DataFrame:
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


def _tables(out: Any) -> list[tuple[str, Any]]:
    """The tables of an output: itself, a Result's ``table`` and its other table parts, a
    report's tables."""
    if isinstance(out, Result):
        return [
            (f".{f.name}", getattr(out, f.name))
            for f in dataclasses.fields(out)
            if isinstance(getattr(out, f.name), pd.DataFrame | pd.Series)
        ]
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


def _bad_attrs(frame: pd.DataFrame | pd.Series | xr.Dataset) -> dict[str, str]:
    bad = {}
    for key, value in frame.attrs.items():
        if isinstance(value, pd.DataFrame | pd.Series | pd.Index | np.ndarray):
            bad[key] = type(value).__name__
        elif isinstance(value, dict | list | tuple) and any(
            isinstance(v, pd.DataFrame | pd.Series | np.ndarray)
            for v in (value.values() if isinstance(value, dict) else value)
        ):
            bad[key] = f"{type(value).__name__} of tables or arrays"
    return bad


CASE_NAMES = sorted(set(FUNCTIONS) - set(NOT_TABLES))


def test_every_public_function_is_run_or_said_to_return_no_table(scores, effects, tmp_path):
    cases = _cases(scores, effects, tmp_path)
    assert sorted(cases) == CASE_NAMES, (
        f"run here: {sorted(set(CASE_NAMES) - set(cases))}; "
        f"not public functions: {sorted(set(cases) - set(CASE_NAMES))}"
    )


@pytest.mark.parametrize("name", CASE_NAMES)
def test_no_table_or_array_in_the_attrs_of_an_output(name, scores, effects, tmp_path):
    case = _cases(scores, effects, tmp_path)[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metaeval.MetaEvalWarning)  # small data: few tasks
        out = case()
    tables = _tables(out)
    assert tables, f"{name}() returned {type(out).__name__}, no table"
    bad = {f"{name}(){where}": _bad_attrs(t) for where, t in tables if _bad_attrs(t)}
    assert not bad, f"attrs holding tables or arrays: {bad}"
    for _, table in tables:  # and so two outputs concatenate
        if not isinstance(table, xr.Dataset):
            pd.concat([table, table])

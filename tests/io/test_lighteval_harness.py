"""read_lighteval on details written by lighteval itself (issue 39, item 8).

``tests/fixtures/lighteval/output`` is what ``lighteval custom ... --save-details``
(lighteval 0.13.0) wrote for two models of a deterministic rule (``harness/rule_model.py``,
no weights) over two local tasks (``harness/rule_tasks.py``); ``make_lighteval_fixture.sh``
installs that version in a venv of its own and runs lighteval's command line again.
acme/rule-small ran on revision v1 of the data (16 documents), acme/rule-large on v2 (the
same 16 and 3 appended): lighteval 0.13 shuffles a task's documents with a fixed seed, so
the two details files list the documents in different orders, and each row's ``doc.id`` is
its document's index in the data set. The reference numbers are lighteval's own (each
task's metrics in ``results_*.json``), and the rows are read here with pyarrow alone.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import metaeval
from metaeval.errors import FormatError, MetaEvalWarning, PairingWarning, SchemaError
from metaeval.io import read_lighteval

OUTPUT = Path(__file__).parents[1] / "fixtures" / "lighteval" / "output"
SYSTEMS = ("acme/rule-large", "acme/rule-small")
TASKS = ("rule_mc|0", "rule_sum|0")


def _details(system: str, task: str) -> list[dict]:
    (path,) = (OUTPUT / "details" / system).glob(f"*/details_{task}_*.parquet")
    return pq.read_table(path).to_pylist()


def _results(system: str) -> dict:
    (path,) = (OUTPUT / "results" / system).glob("results_*.json")
    return json.loads(path.read_text())["results"]


def _read() -> tuple[pd.DataFrame, list]:
    with pytest.warns(MetaEvalWarning, match="no per-sample number") as caught:
        table = read_lighteval(OUTPUT / "details")
    return table, [w.message for w in caught if isinstance(w.message, MetaEvalWarning)]


def _by_document(system: str, task: str, metric: str, by_text: bool = False) -> dict:
    """{document: value} from the details rows (a document's rows of two sampling methods
    each hold some of its metrics); the document is its id, or (``by_text``) its question
    and choices (rule_sum asks one sum twice, with its choices in other orders)."""
    values = {}
    for row in _details(system, task):
        doc = row["doc"]
        key = (doc["query"], tuple(doc["choices"])) if by_text else doc["id"]
        if row["metric"].get(metric) is not None:
            assert key not in values
            values[key] = float(row["metric"][metric])
    return values


def test_the_two_runs_list_the_documents_in_different_orders():
    """What lighteval 0.13 writes: rows in a shuffled order, the document index in doc.id."""
    small = [row["doc"]["id"] for row in _details(SYSTEMS[1], "rule_mc|0")]
    large = [row["doc"]["id"] for row in _details(SYSTEMS[0], "rule_mc|0")]
    assert sorted(small, key=int) == [str(i) for i in range(16)]
    assert sorted(large, key=int) == [str(i) for i in range(19)]
    assert small != [str(i) for i in range(16)]  # shuffled
    assert sum(a == b for a, b in zip(small, large, strict=False)) < 4  # row i: other documents


def test_queries_are_the_documents_and_models_pair_by_them():
    """Item 8: ``query`` was the row number, which pairs document 7 of one run with
    document 14 of the other; it is the logged doc.id, and the effect of the large model
    on the 16 documents both ran is the mean of their differences, document by document
    (matched here by the question's text, independently of the ids)."""
    table, _ = _read()
    with pytest.warns(PairingWarning, match="unpaired_queries=3"):
        effects = metaeval.effects(table, control=SYSTEMS[1], effect="md")
    for task in TASKS:
        for metric in ("acc", "em") if task == "rule_sum|0" else ("acc",):
            large = _by_document(SYSTEMS[0], task, metric, by_text=True)
            small = _by_document(SYSTEMS[1], task, metric, by_text=True)
            diff = np.mean([large[q] - small[q] for q in small])
            row = effects[(effects["task"] == task) & (effects["metric"] == metric)]
            assert row["n"].item() == 16
            assert row["effect"].item() == pytest.approx(diff, rel=1e-12, abs=1e-15)
    for system in SYSTEMS:  # every value under its own document
        for task in TASKS:
            got = table[(table["system"] == system) & (table["task"] == task)]
            for metric, part in got.groupby("metric"):
                expected = _by_document(system, task, metric)
                assert dict(zip(part["query"], part["value"], strict=True)) == expected


def test_one_task_without_corpus_metrics_pairs_by_document():
    """Item 8 alone (rule_sum has no corpus metric): by row number, 3 rows of acc "paired"
    (0.667) and em not at all; by document, 16 pairs of each."""
    files = {
        system: next((OUTPUT / "details" / system).glob("*/details_rule_sum|0_*.parquet"))
        for system in SYSTEMS
    }
    table = read_lighteval(files)
    with pytest.warns(PairingWarning, match="unpaired_queries=3"):
        effects = metaeval.effects(table, control=SYSTEMS[1], effect="md")
    assert effects.set_index("metric")["n"].to_dict() == {"acc": 16, "em": 16}
    for metric, row in effects.set_index("metric").iterrows():
        large = _by_document(SYSTEMS[0], "rule_sum|0", metric, by_text=True)
        small = _by_document(SYSTEMS[1], "rule_sum|0", metric, by_text=True)
        assert row["effect"] == pytest.approx(np.mean([large[q] - small[q] for q in small]))


def test_each_task_mean_is_lightevals_own():
    """One query per document, though lighteval logs rule_sum's documents twice (one row per
    sampling method): the means and the standard errors are lighteval's."""
    table, _ = _read()
    for system in SYSTEMS:
        results = _results(system)
        stats = table[table["system"] == system].groupby(["task", "metric"])["value"]
        for (task, metric), row in stats.agg(["mean", "std", "size"]).iterrows():
            assert row["mean"] == pytest.approx(results[task][metric], rel=1e-12)
            se = row["std"] / math.sqrt(row["size"])
            assert se == pytest.approx(results[task][f"{metric}_stderr"], rel=1e-12)
            assert row["size"] == (16 if system == SYSTEMS[1] else 19)
    assert len(_details(SYSTEMS[1], "rule_sum|0")) == 32  # two rows per document


def _mcc(gold: np.ndarray, pred: np.ndarray) -> float:
    """Matthews' correlation of two label vectors (any number of classes), from the
    confusion matrix (Gorodkin's R_K)."""
    labels = np.union1d(gold, pred)
    table = (gold[:, None] == labels)[:, :, None] & (pred[:, None] == labels)[:, None, :]
    c = table.sum(axis=0).astype(float)
    s, correct = c.sum(), np.trace(c)
    t, p = c.sum(axis=1), c.sum(axis=0)
    return float((correct * s - t @ p) / math.sqrt((s**2 - p @ p) * (s**2 - t @ t)))


def test_mcc_is_left_out_with_a_warning_and_why():
    """lighteval logs mcc per sample as {golds, preds} and computes it over the task."""
    table, caught = _read()
    (report,) = caught
    assert set(map(tuple, report.groups[["system", "task", "metric"]].to_numpy())) == {
        (s, "rule_mc|0", "mcc") for s in SYSTEMS
    }
    assert "mcc" not in set(table["metric"])
    for system in SYSTEMS:
        pairs = [row["metric"]["mcc"] for row in _details(system, "rule_mc|0")]
        gold = np.array([p["golds"][0] for p in pairs])
        pred = np.array([p["preds"] for p in pairs])
        assert _mcc(gold, pred) == pytest.approx(_results(system)["rule_mc|0"]["mcc"], rel=1e-12)


def test_the_command_reads_lighteval_details(capsys):
    from metaeval_cli import main

    code = main(
        [
            "meta",
            str(OUTPUT / "details"),
            "--control",
            SYSTEMS[1],
            "--effect",
            "md",
            "--print-mode",
            "raw",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "unpaired_queries=3" in captured.err and "mcc" in captured.err


def _rewrite(tmp_path: Path, edit) -> Path:
    """rule_sum's details of acme/rule-small with their rows passed through ``edit``."""
    (source,) = (OUTPUT / "details" / SYSTEMS[1]).glob("*/details_rule_sum|0_*.parquet")
    table = pq.read_table(source)
    folder = tmp_path / "acme" / "rule-small" / source.parent.name
    folder.mkdir(parents=True)
    rows = edit(table.to_pylist())
    pq.write_table(table.from_pylist(rows, schema=table.schema), folder / source.name)
    return folder / source.name


def test_a_document_with_a_metric_twice_is_refused(tmp_path):
    def twice(rows):
        rows[1]["doc"]["id"] = rows[0]["doc"]["id"]  # two documents under one id
        return rows

    path = _rewrite(tmp_path, twice)
    with pytest.raises(FormatError, match=r"row 1: document id '\d+' has metric '(acc|em)' again"):
        read_lighteval(path)


def test_details_without_document_ids_are_read_by_row_with_a_warning(tmp_path):
    """lighteval before 0.11 logged no document id: the row number is the only key, which
    pairs models only if their runs listed the documents alike; a warning says so."""

    def no_ids(rows):
        for row in rows:
            row["doc"]["id"] = ""
        return rows

    path = _rewrite(tmp_path, no_ids)
    with pytest.warns(MetaEvalWarning, match="no document id") as caught:
        table = read_lighteval(path)
    assert caught[0].message.groups[["system", "task"]].values.tolist() == [
        ["rule-small", "rule_sum|0"]
    ]
    assert sorted(table["query"], key=int) == [str(i) for i in range(32)]  # row numbers


def test_documents_cast_to_text_keep_their_ids(tmp_path):
    """A details file whose doc column lighteval wrote as text (its fallback for nested
    objects) still names each row's document."""
    import pyarrow as pa

    rows = _details(SYSTEMS[1], "rule_mc|0")
    table = pa.table(
        {
            "doc": [str({"id": r["doc"]["id"], "query": r["doc"]["query"]}) for r in rows],
            "metric": [{"acc": r["metric"]["acc"]} for r in rows],
        }
    )
    path = (
        tmp_path / "m" / "2026-01-01T00-00-00.0" / "details_rule_mc|0_2026-01-01T00-00-00.0.parquet"
    )
    path.parent.mkdir(parents=True)
    pq.write_table(table, path)
    got = read_lighteval(path)
    assert dict(zip(got["query"], got["value"], strict=True)) == _by_document(
        SYSTEMS[1], "rule_mc|0", "acc"
    )


def test_details_with_only_corpus_metrics_are_an_error(tmp_path):
    import pyarrow as pa

    rows = _details(SYSTEMS[1], "rule_mc|0")
    table = pa.table(
        {
            "doc": [{"id": r["doc"]["id"]} for r in rows],
            "metric": [{"mcc": r["metric"]["mcc"]} for r in rows],
        }
    )
    path = (
        tmp_path / "m" / "2026-01-01T00-00-00.0" / "details_rule_mc|0_2026-01-01T00-00-00.0.parquet"
    )
    path.parent.mkdir(parents=True)
    pq.write_table(table, path)
    with pytest.raises(SchemaError, match=r"hold no per-sample number: their metrics \(mcc\)"):
        read_lighteval(path)

"""read_lm_eval on logs written by lm-evaluation-harness itself (issue 39, items 6 and 30).

``tests/fixtures/lm_eval/output`` is what ``lm_eval run --log_samples`` (lm-eval 0.4.13)
wrote for two models of a deterministic rule (``harness/rule_lm.py``, registered with
``@register_model``, no weights) over six local JSONL tasks; ``make_lm_eval_fixture.sh``
installs that version in a venv of its own and runs lm-eval's command line again. The
reference numbers are lm-eval's own: each task's metric and stderr in its
``results_*.json``; the JSON lines are read here with ``json`` alone where a test needs a
record's fields.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval.errors import FormatError, MetaEvalWarning, OptionError, SchemaError
from metaeval.io import read_lm_eval
from metaeval_cli import main

OUTPUT = Path(__file__).parents[1] / "fixtures" / "lm_eval" / "output"
SYSTEMS = ("acme__rule-large", "acme__rule-small")
#: lm-eval's metrics without a per-sample number: (task, metric) as its samples log them
CORPUS = (
    {("rule_copy", m) for m in ("bleu", "chrf", "ter")}
    | {
        ("rule_even", "f1"),
        ("rule_even", "mcc"),
    }
    | {("rule_pages", m) for m in ("word_perplexity", "byte_perplexity", "bits_per_byte")}
)


def _results(system: str) -> dict:
    (path,) = (OUTPUT / system).glob("results_*.json")
    return json.loads(path.read_text())


def _records(system: str, task: str) -> list[dict]:
    (path,) = (OUTPUT / system).glob(f"samples_{task}_*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def _read(folder=OUTPUT, **options) -> tuple[pd.DataFrame, list]:
    with pytest.warns(MetaEvalWarning, match="no per-sample number") as caught:
        table = read_lm_eval(folder, **options)
    return table, [w.message for w in caught if isinstance(w.message, MetaEvalWarning)]


def test_the_folder_is_read_and_each_task_mean_is_lm_evals_own():
    """Item 6: one corpus metric made the whole folder unreadable; now the per-sample
    metrics are read and their means and standard errors are lm-eval's own numbers."""
    table, _ = _read()
    assert sorted(table["system"].unique()) == list(SYSTEMS)
    checked = 0
    for system in SYSTEMS:
        results = _results(system)["results"]
        got = table[table["system"] == system].groupby(["task", "metric"])["value"]
        stats = got.agg(["mean", "std", "size"])
        for (task, metric), row in stats.iterrows():
            if metric == "loglikelihood":
                continue  # lm-eval reports exp(-mean) for it: the next test
            name, _, filt = metric.partition(",")
            key = f"{name},{filt or 'none'}"
            assert row["mean"] == pytest.approx(results[task][key], rel=1e-12, abs=1e-15)
            se = row["std"] / math.sqrt(row["size"])  # lm-eval's mean_stderr: s / sqrt(n)
            stderr_key = f"{name}_stderr,{filt or 'none'}"
            assert se == pytest.approx(results[task][stderr_key], rel=1e-12)
            assert row["size"] == _results(system)["n-samples"][task]["effective"]
            checked += 1
    # acc, acc_norm (rule_mc), acc (rule_even, rule_cloze), exact_match under two filters
    assert checked == 2 * 6
    assert {"exact_match,strict-match", "exact_match,flexible-extract"} <= set(table["metric"])


def test_perplexity_is_read_as_the_loglikelihood_it_is():
    """lm-eval logs a loglikelihood task's per-sample 'perplexity' as the log-likelihood of
    the target and reports exp(-mean) as the task's perplexity: read as 'loglikelihood'."""
    table, _ = _read()
    cloze = table[table["task"] == "rule_cloze"]
    assert set(cloze["metric"]) == {"acc", "loglikelihood"}
    assert "perplexity" not in set(table["metric"])
    for system in SYSTEMS:
        ll = cloze[(cloze["system"] == system) & (cloze["metric"] == "loglikelihood")]
        logged = [r["perplexity"] for r in _records(system, "rule_cloze")]
        assert ll.sort_values("query", key=lambda q: q.astype(int))["value"].tolist() == logged
        reported = _results(system)["results"]["rule_cloze"]["perplexity,none"]
        assert math.exp(-ll["value"].mean()) == pytest.approx(reported, rel=1e-12)
        assert ll["value"].mean() < 0 < reported  # a mean of -2.4 is not a perplexity of 11.6


def test_metrics_without_a_per_sample_number_are_named_in_one_warning():
    table, caught = _read()
    (report,) = caught
    named = set(map(tuple, report.groups[["system", "task", "metric"]].to_numpy()))
    assert named == {(s, t, m) for s in SYSTEMS for t, m in CORPUS}
    for task, metric in CORPUS:
        assert not ((table["task"] == task) & (table["metric"] == metric)).any()
    assert "rule_copy" not in set(table["task"]) and "rule_pages" not in set(table["task"])
    assert "metrics=" in str(report)


def _mcc(gold: np.ndarray, pred: np.ndarray) -> float:
    """Matthews' correlation of two 0/1 vectors, from the 2x2 table."""
    tp = np.sum((gold == 1) & (pred == 1))
    tn = np.sum((gold == 0) & (pred == 0))
    fp = np.sum((gold == 0) & (pred == 1))
    fn = np.sum((gold == 1) & (pred == 0))
    return float((tp * tn - fp * fn) / math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)))


def test_why_f1_and_mcc_have_no_per_sample_number():
    """lm-eval logs [gold, prediction] per sample and computes F1 and MCC over the task:
    the reported numbers come from the pairs (checked here), not from a mean of anything."""
    for system in SYSTEMS:
        records = _records(system, "rule_even")
        gold, pred = np.array([r["f1"] for r in records]).T
        assert [r["mcc"] for r in records] == [r["f1"] for r in records]
        results = _results(system)["results"]["rule_even"]
        tp = np.sum((gold == 1) & (pred == 1))
        f1 = 2 * tp / (np.sum(gold == 1) + np.sum(pred == 1))
        assert f1 == pytest.approx(results["f1,none"], rel=1e-12)
        assert _mcc(gold, pred) == pytest.approx(results["mcc,none"], rel=1e-12)


def test_metrics_reads_only_the_metrics_named():
    """``metrics=``: the metrics to read; the others are not looked at (no warning)."""
    table = read_lm_eval(OUTPUT, metrics=["acc", "exact_match,strict-match", "loglikelihood"])
    assert sorted(table["metric"].unique()) == ["acc", "exact_match,strict-match", "loglikelihood"]
    full, _ = _read()
    expected = full[full["metric"].isin(["acc", "exact_match,strict-match", "loglikelihood"])]
    key = ["system", "task", "metric", "query"]
    pd.testing.assert_frame_equal(
        table.sort_values(key).reset_index(drop=True),
        expected.sort_values(key).reset_index(drop=True),
    )
    assert read_lm_eval(OUTPUT, metrics="acc_norm")["task"].unique().tolist() == ["rule_mc"]


def test_metrics_names_are_checked():
    with pytest.raises(SchemaError, match=r"`metrics` \(--metric\) names acc_nrm, which the logs"):
        read_lm_eval(OUTPUT, metrics=["acc", "acc_nrm"])
    with pytest.raises(
        SchemaError, match=r"names bleu, which has no per-sample number in task\(s\) rule_copy"
    ):
        read_lm_eval(OUTPUT, metrics=["bleu"])
    with pytest.raises(SchemaError, match=r"'perplexity' .* read as 'loglikelihood'"):
        read_lm_eval(OUTPUT, metrics=["perplexity"])
    with pytest.raises(OptionError, match="`metrics`"):
        read_lm_eval(OUTPUT, metrics=[1])
    with pytest.raises(OptionError, match="`metrics`"):
        read_lm_eval(OUTPUT, metrics=[])


def test_primary_leaves_out_tasks_without_a_per_sample_metric():
    chosen = {
        "rule_mc": "acc_norm",
        "rule_even": "acc",
        "rule_cloze": "loglikelihood",
        "rule_sum": "exact_match,flexible-extract",
    }
    with pytest.warns(MetaEvalWarning, match="no per-sample number") as caught:
        table = read_lm_eval(OUTPUT, primary=chosen)
    (report,) = [w.message for w in caught]
    # only the tasks left out entirely are named; the others keep their chosen metric
    assert set(report.groups["task"]) == {"rule_copy", "rule_pages"}
    assert table.attrs["primary"] == chosen
    assert set(table["task"]) == set(chosen) and set(table["metric"]) == {"primary"}
    with pytest.raises(
        SchemaError, match=r"'rule_copy' names bleu, which has no per-sample number"
    ):
        read_lm_eval(OUTPUT, primary={"rule_copy": "bleu"})
    with pytest.raises(SchemaError, match="read as 'loglikelihood'"):
        read_lm_eval(OUTPUT, primary={"rule_cloze": "perplexity"})


def test_two_models_pair_by_doc_id():
    table, _ = _read()
    effects = metaeval.effects(table, control="acme__rule-small", effect="md")
    for task, metric in [("rule_mc", "acc_norm"), ("rule_sum", "exact_match,strict-match")]:
        name, _, filt = metric.partition(",")
        logged = {}
        for system in SYSTEMS:
            logged[system] = {
                r["doc_id"]: float(r[name])
                for r in _records(system, task)
                if r["filter"] == (filt or "none")
            }
        diff = np.mean([logged[SYSTEMS[0]][d] - logged[SYSTEMS[1]][d] for d in logged[SYSTEMS[1]]])
        row = effects[(effects["task"] == task) & (effects["metric"] == metric)]
        assert row["effect"].item() == pytest.approx(diff, rel=1e-12)


def test_the_command_reads_the_folder_and_takes_metric(capsys):
    code = main(
        [
            "meta",
            str(OUTPUT),
            "--control",
            "acme__rule-small",
            "--metric",
            "acc",
            "--effect",
            "md",
            "--print-mode",
            "raw",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "no per-sample number" not in captured.err  # --metric reached the reader
    code = main(["meta", str(OUTPUT), "--control", "acme__rule-small", "--effect", "md"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "no per-sample number" in captured.err and "rule_copy" in captured.err
    for name, text in [
        ("bleu", "which has no per-sample number"),
        ("acc_nrm", "which the logs do not"),
    ]:
        code = main(["meta", str(OUTPUT), "--control", "acme__rule-small", "--metric", name])
        captured = capsys.readouterr()
        assert code == 2 and f"--metric names {name}, {text}" in captured.err, captured.err


# item 30: what lm-eval writes about filters, and logs that do not say it


def _copy_task(tmp_path: Path, task: str, edit) -> Path:
    """One model's folder with the log of ``task`` only, its records passed through ``edit``."""
    folder = tmp_path / "out" / SYSTEMS[0]
    folder.mkdir(parents=True)
    (source,) = (OUTPUT / SYSTEMS[0]).glob(f"samples_{task}_*.jsonl")
    records = edit(_records(SYSTEMS[0], task))
    (folder / source.name).write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def test_every_record_names_its_filter():
    """lm-eval 0.4.13 writes 'filter' and 'metrics' in every record: one record per
    (document, filter)."""
    records = _records(SYSTEMS[0], "rule_sum")
    assert all("filter" in r and r["metrics"] == ["exact_match"] for r in records)
    assert sorted({r["filter"] for r in records}) == ["flexible-extract", "strict-match"]
    assert len(records) == 2 * len({r["doc_id"] for r in records})


def test_a_record_without_its_filter_is_refused(tmp_path):
    """Item 30: the record that lost its 'filter' became a metric exact_match of 1 row."""

    def drop_one(records):
        del records[5]["filter"]
        return records

    folder = _copy_task(tmp_path, "rule_sum", drop_one)
    with pytest.raises(FormatError, match=r"line 6: .*no 'filter'.*line 1 names"):
        read_lm_eval(folder)


def test_logs_of_lm_eval_before_0_4_7_without_filters(tmp_path):
    """lm-eval before 0.4.7 wrote neither 'filter' nor 'metrics': a task with two filters
    logs each document twice with nothing to tell the records apart: an error that says so;
    a task with one filter is read as before."""

    def old(records):
        return [{k: v for k, v in r.items() if k not in ("filter", "metrics")} for r in records]

    folder = _copy_task(tmp_path, "rule_sum", old)
    with pytest.raises(
        FormatError, match=r"doc_id 0 \(no filter named\) appears twice: lm-eval before 0\.4\.7"
    ):
        read_lm_eval(folder)
    shutil.rmtree(tmp_path / "out")
    folder = _copy_task(tmp_path, "rule_mc", old)
    table = read_lm_eval(folder)
    assert sorted(table["metric"].unique()) == ["acc", "acc_norm"]
    logged = _records(SYSTEMS[0], "rule_mc")
    assert table[table["metric"] == "acc"]["value"].tolist() == [r["acc"] for r in logged]


def test_old_logs_name_their_corpus_metrics_too(tmp_path):
    """Without 'metrics' the per-sample fields are the record's other keys: a pair is not a
    number, and is named in the warning rather than passed over."""

    def old(records):
        return [{k: v for k, v in r.items() if k not in ("filter", "metrics")} for r in records]

    folder = _copy_task(tmp_path, "rule_even", old)
    with pytest.warns(MetaEvalWarning, match="no per-sample number") as caught:
        table = read_lm_eval(folder)
    assert set(caught[0].message.groups["metric"]) == {"f1", "mcc"}
    assert table["metric"].unique().tolist() == ["acc"]

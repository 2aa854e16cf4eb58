"""Property-based fuzzing of :func:`metaeval.io.read_lm_eval` on lm-eval output folders.

Random folders of models x tasks x timestamps (lm-eval 0.4's layout,
``<output_path>/<model>/samples_<task>_<date_id>.jsonl``, some gzip-compressed, some
tasks run several times): the reader's per-(system, task) means and sample counts must
equal a reference computed here from the JSON lines directly (the newest log of each
model's task, by the time in its name), so that nothing is merged across models or dropped.
"""

from __future__ import annotations

import gzip
import json
import re
import tempfile
import warnings
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metaeval.errors import MetaEvalWarning, SchemaError
from metaeval.io import read_lm_eval

pytestmark = pytest.mark.fuzz

MODELS = ["meta-llama__Llama-2-7b-hf", "mistralai__Mistral-7B-v0.1", "Qwen__Qwen2-7B", "gpt2"]
TASKS = ["arc_easy", "hellaswag", "mmlu_high_school_physics", "boolq", "lambada_openai"]
TIMES = st.datetimes(min_value=datetime(2023, 1, 1), max_value=datetime(2025, 12, 31))
STAMP = re.compile(r"^samples_(.+)_(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})(\.\d+)?\.jsonl")


@st.composite
def output_folders(draw):
    """{model: {task: [(time, gzip, [values of the docs])]}}: each log its own run."""
    pool = draw(st.lists(TIMES, min_size=1, max_size=4, unique=True))  # shared: ties across models
    models = draw(st.lists(st.sampled_from(MODELS), min_size=1, max_size=3, unique=True))
    spec = {}
    for model in models:
        tasks = draw(st.lists(st.sampled_from(TASKS), min_size=1, max_size=3, unique=True))
        spec[model] = {
            task: [
                (
                    when,
                    draw(st.booleans()),
                    draw(st.lists(st.integers(0, 10), min_size=1, max_size=6)),
                )
                for when in draw(
                    st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True)
                )
            ]
            for task in tasks
        }
    return spec


def _write(root: Path, spec) -> None:
    for model, tasks in spec.items():
        folder = root / model
        folder.mkdir(parents=True)
        for task, logs in tasks.items():
            for when, compressed, values in logs:
                stamp = when.isoformat().replace(":", "-")  # lm-eval's date_id
                lines = "".join(
                    json.dumps({"doc_id": i, "filter": "none", "metrics": ["acc"], "acc": v}) + "\n"
                    for i, v in enumerate(values)
                )
                name = folder / f"samples_{task}_{stamp}.jsonl"
                if compressed:
                    with gzip.open(f"{name}.gz", "wt") as f:
                        f.write(lines)
                else:
                    name.write_text(lines)


def _reference(root: Path) -> dict[tuple[str, str], tuple[float, int]]:
    """(mean, count) of the newest log of each model folder's task, read with json."""
    newest: dict[tuple[str, str], tuple[datetime, Path]] = {}
    for path in root.glob("*/samples_*"):
        task, day, hh, mm, ss, frac = STAMP.match(path.name).groups()
        when = datetime.strptime(f"{day} {hh}:{mm}:{ss}{frac or '.0'}", "%Y-%m-%d %H:%M:%S.%f")
        key = (path.parent.name, task)
        if key not in newest or when > newest[key][0]:
            newest[key] = (when, path)
    out = {}
    for key, (_, path) in newest.items():
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as f:
            values = [json.loads(line)["acc"] for line in f if line.strip()]
        out[key] = (sum(values) / len(values), len(values))
    return out


@given(spec=output_folders())
def test_each_model_task_is_its_newest_log_never_merged(spec):
    reruns = sum(len(logs) > 1 for tasks in spec.values() for logs in tasks.values())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "out"
        _write(root, spec)
        expected = _reference(root)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = read_lm_eval(root, latest=True)
    got = table.groupby(["system", "task"])["value"].agg(["mean", "size"])
    assert set(got.index) == set(expected)  # one system per model folder, every task
    for key, (mean, count) in expected.items():
        assert got.loc[key, "size"] == count
        assert got.loc[key, "mean"] == pytest.approx(mean, rel=1e-12)
    reports = [w.message for w in caught if isinstance(w.message, MetaEvalWarning)]
    assert len(reports) == (1 if reruns else 0)
    if reruns:  # the report lists exactly the (system, task) pairs run more than once
        listed = set(map(tuple, reports[0].groups[["system", "task"]].to_numpy()))
        assert listed == {
            (m, t) for m, tasks in spec.items() for t, logs in tasks.items() if len(logs) > 1
        }


#: lm-eval's per-sample shapes: a number, or a corpus metric's pair ([ref, pred], [ll, n])
_FIELDS = {
    "acc": "number",
    "exact_match": "number",
    "perplexity": "number",
    "bleu": "pair",
    "f1": "pair",
    "word_perplexity": "pair",
}


@st.composite
def task_logs(draw):
    """One model's log of one task as lm-eval >= 0.4.7 writes it: a record per (document,
    filter), 'filter' and 'metrics' in every record, numbers or pairs per metric."""
    fields = draw(st.lists(st.sampled_from(sorted(_FIELDS)), min_size=1, max_size=4, unique=True))
    filters = draw(st.sampled_from([["none"], ["strict-match", "flexible-extract"]]))
    docs = draw(st.lists(st.integers(0, 10**6), min_size=1, max_size=8, unique=True))
    records = []
    for filt in filters:  # lm-eval's order: every document under one filter, then the next
        for doc in docs:
            record = {"doc_id": doc, "filter": filt, "metrics": fields}
            for name in fields:
                if _FIELDS[name] == "number":
                    record[name] = draw(st.floats(-50, 50, allow_nan=False))
                else:
                    record[name] = draw(st.lists(st.integers(0, 3), min_size=2, max_size=2))
            records.append(record)
    return records


@given(records=task_logs())
def test_numbers_are_read_exactly_and_pairs_are_named(records):
    """Every number under its document and its filter's metric name (lm-eval's per-sample
    'perplexity' as 'loglikelihood'), every pair metric named in the warning, nothing else."""
    expected, pairs = {}, set()
    for r in records:
        for name in r["metrics"]:
            base = "loglikelihood" if name == "perplexity" else name
            metric = base if r["filter"] == "none" else f"{base},{r['filter']}"
            if _FIELDS[name] == "number":
                expected[(str(r["doc_id"]), metric)] = float(r[name])
            else:
                pairs.add(metric)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "m"
        folder.mkdir()
        lines = "".join(json.dumps(r) + "\n" for r in records)
        (folder / "samples_t_2025-01-01T00-00-00.jsonl").write_text(lines)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                table = read_lm_eval(folder)
            except SchemaError as err:  # only pairs: nothing to read, and the error says so
                assert not expected and "no per-sample number" in str(err)
                return
    got = {
        (q, m): v for q, m, v in zip(table["query"], table["metric"], table["value"], strict=True)
    }
    assert got == expected
    reports = [w.message for w in caught if isinstance(w.message, MetaEvalWarning)]
    if pairs:
        (report,) = reports
        assert set(report.groups["metric"]) == pairs
    else:
        assert not reports

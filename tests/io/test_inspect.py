"""metaeval.io.read_inspect on real logs written by ``inspect_ai.eval()`` (offline: a solver
sets the output itself, the model is Inspect's ``mockllm``)."""

from __future__ import annotations

import math
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval.errors import FormatError, MetaEvalWarning, OptionError, SchemaError
from metaeval.io import read_inspect

inspect_ai = pytest.importorskip("inspect_ai")
from inspect_ai import Task, eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.log import read_eval_log  # noqa: E402
from inspect_ai.model import ModelOutput  # noqa: E402
from inspect_ai.scorer import accuracy, includes, match, stderr  # noqa: E402
from inspect_ai.solver import solver  # noqa: E402

MODELS = {"mockllm/model": 0, "mockllm/other": 1}
PASSAGES = ["p1", "p1", "p1", "p2", "p2", "p3", "p3", "p3", "p4"]


@solver
def fixed(shift: int = 0):
    """Answers without a model: right, right but not at the end (match fails, includes
    succeeds) or wrong, by sample id, epoch and model."""

    async def solve(state, generate):
        case = (int(state.sample_id) * 7 + state.epoch * 3 + shift) % 4
        target = state.target.text
        content = {0: f"The answer is {target}", 1: f"{target} is not it, maybe",
                   2: "no idea", 3: f"surely {target}"}[case]  # fmt: skip
        state.output = ModelOutput.from_content(model="mockllm/model", content=content)
        return state

    return solve


def _task(name: str, shift: int, epochs: int) -> Task:
    samples = [
        Sample(
            input=f"q{i}",
            target=str(i % 5),
            id=i,
            metadata={"passage": PASSAGES[i - 1], "n": i},
        )
        for i in range(1, len(PASSAGES) + 1)
    ]
    return Task(dataset=samples, solver=fixed(shift), scorer=[match(), includes()],
                metrics=[accuracy(), stderr(cluster="passage")], epochs=epochs, name=name)  # fmt: skip


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("inspect_logs")
    for (model, shift), form in zip(MODELS.items(), ["eval", "json"], strict=True):
        eval([_task("qa", shift, 1), _task("qa_epochs", shift, 3)], model=model,
             log_dir=str(folder), display="none", log_format=form)  # fmt: skip
    return folder


def _files(folder: Path) -> list[Path]:
    """The logs, both formats: one model's are ``.eval``, the other's ``.json``."""
    files = sorted(folder.glob("*.eval")) + sorted(folder.glob("*.json"))
    assert sum(p.suffix == ".json" for p in files) == 2 and len(files) == 4
    return files


def test_every_row_is_a_score_of_the_logs(logs: Path) -> None:
    table = read_inspect(logs, metadata=["passage"])
    assert list(table.columns) == [
        "task",
        "query",
        "system",
        "metric",
        "value",
        "replicate",
        "passage",
    ]
    expected = []
    for path in _files(logs):
        log = read_eval_log(str(path))
        for s in log.samples:
            for name, score in s.scores.items():
                value = {"C": 1.0, "I": 0.0}[score.value]
                expected.append((log.eval.task, s.id, log.eval.model, name, value, s.epoch,
                                 s.metadata["passage"]))  # fmt: skip
    assert len(expected) == 2 * 2 * len(PASSAGES) * 4  # models × scorers × (1 + 3 epochs)
    want = pd.DataFrame(expected, columns=table.columns)
    keys = ["task", "query", "system", "metric", "replicate"]
    got = table.sort_values(keys).reset_index(drop=True)
    want = want.sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert set(table["system"]) == set(MODELS)
    assert set(table["metric"]) == {"match", "includes"}
    assert not table.duplicated(keys).any()
    # both values occur, and the two scorers disagree somewhere (the test can fail)
    assert set(table["value"]) == {0.0, 1.0}
    wide = table.pivot_table(
        index=["task", "query", "system", "replicate"], columns="metric", values="value"
    )
    assert (wide["match"] != wide["includes"]).any()


def test_means_equal_inspects_accuracy_and_clustered_stderr(logs: Path) -> None:
    table = read_inspect(logs, metadata="passage")
    checked = 0
    for path in _files(logs):
        log = read_eval_log(str(path))
        for score in log.results.scores:
            rows = table[(table["task"] == log.eval.task) & (table["system"] == log.eval.model)
                         & (table["metric"] == score.name)]  # fmt: skip
            assert len(rows) == len(PASSAGES) * log.eval.config.epochs
            assert abs(rows["value"].mean() - score.metrics["accuracy"].value) < 1e-12
            # Inspect's stderr(cluster="passage") on the per-sample (epoch-averaged) scores:
            # √(C/(C−1) · Σ_c (Σ_{i∈c} (x_i − x̄))²) / n, as a plain loop
            per_sample = rows.groupby("query").agg(
                value=("value", "mean"), passage=("passage", "first")
            )
            x = list(per_sample["value"])
            mean = sum(x) / len(x)
            sums: dict[str, float] = {}
            for value, passage in zip(x, per_sample["passage"], strict=True):
                sums[passage] = sums.get(passage, 0.0) + (value - mean)
            c = len(sums)
            se = math.sqrt(c / (c - 1) * sum(s * s for s in sums.values())) / len(x)
            assert abs(se - score.metrics["stderr"].value) < 1e-12
            checked += 1
    assert checked == 8  # 2 models × 2 tasks × 2 scorers


def test_scorer_selects_and_single_epoch_has_no_replicate(logs: Path) -> None:
    once = [p for p in _files(logs) if read_eval_log(str(p), header_only=True).eval.task == "qa"]
    table = read_inspect(once, scorer="match")
    assert list(table.columns) == ["task", "query", "system", "metric", "value"]
    assert set(table["metric"]) == {"match"} and len(table) == 2 * len(PASSAGES)
    with pytest.raises(SchemaError, match=r"'exact'.*'includes', 'match'"):
        read_inspect(once, scorer=["match", "exact"])
    with pytest.raises(OptionError, match="`scorer`"):
        read_inspect(once, scorer=3)
    with pytest.raises(OptionError, match="`metadata` names query"):
        read_inspect(once, metadata=["query"])


def test_missing_metadata_names_file_and_sample(logs: Path) -> None:
    path = _files(logs)[0]
    with pytest.raises(SchemaError, match=rf"{path.name}: sample 1 .* no metadata 'chapter'"):
        read_inspect(path, metadata=["chapter"])


def test_the_same_log_twice_is_an_error_naming_both(logs: Path, tmp_path: Path) -> None:
    path = _files(logs)[0]
    copy = tmp_path / "copy.eval"
    copy.write_bytes(path.read_bytes())
    with pytest.raises(SchemaError, match=rf"in the logs twice: .*{path.name} and .*copy\.eval"):
        read_inspect([path, copy])


def test_truncated_and_corrupt_files_name_the_file(logs: Path, tmp_path: Path) -> None:
    data = _files(logs)[0].read_bytes()
    cut = tmp_path / "cut.eval"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(FormatError, match=r"cut\.eval: Inspect could not read it"):
        read_inspect(cut)
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    with pytest.raises(FormatError, match=r"junk\.json: Inspect could not read it"):
        read_inspect(junk)
    with pytest.raises(FormatError, match="no such file"):
        read_inspect(tmp_path / "absent.eval")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SchemaError, match="empty holds no Inspect logs"):
        read_inspect(tmp_path / "empty")
    assert zipfile.is_zipfile(_files(logs)[0])  # the .eval logs are real zip archives


def test_input_values_mapping_partial_and_dict(tmp_path: Path) -> None:
    """Inspect's value_to_float on values a scorer may return: P = 0.5, N = 0, numbers, a
    dict as scorer/key."""
    from inspect_ai.scorer import Score, Target, scorer

    @scorer(metrics=[accuracy()])
    def graded():
        async def score(state, target: Target) -> Score:
            i = int(state.sample_id)
            return Score(value={"grade": ["C", "I", "P", "N"][i % 4], "points": i / 4})

        return score

    samples = [Sample(input="q", target="t", id=i) for i in range(4)]
    task = Task(dataset=samples, solver=fixed(0), scorer=graded(), name="graded")
    eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")
    table = read_inspect(tmp_path).sort_values(["metric", "query"])
    got = table.set_index(["metric", "query"])["value"]
    np.testing.assert_array_equal(got.loc["graded/grade"].to_numpy(), [1.0, 0.0, 0.5, 0.0])
    np.testing.assert_array_equal(got.loc["graded/points"].to_numpy(), [0.0, 0.25, 0.5, 0.75])


def test_a_failed_run_is_an_error_not_an_empty_table(tmp_path: Path) -> None:
    @solver
    def broken():
        async def solve(state, generate):
            raise RuntimeError("the grader is down")

        return solve

    samples = [Sample(input="q", target="t", id=i) for i in range(2)]
    eval(Task(dataset=samples, solver=broken(), scorer=match(), name="broken"),
         model="mockllm/model", log_dir=str(tmp_path), display="none")  # fmt: skip
    with pytest.raises(
        SchemaError,
        match=r"\.eval: no sample of task 'broken' .*status 'error'.*the grader is down",
    ):
        read_inspect(tmp_path)


@solver
def fails_on(ids: list[int]):
    """Answers right, but raises for the samples ``ids``."""

    async def solve(state, generate):
        if int(state.sample_id) in ids:
            raise RuntimeError(f"sample {state.sample_id} broke")
        state.output = ModelOutput.from_content(model="mockllm/model", content=state.target.text)
        return state

    return solve


@pytest.mark.parametrize("fail_on_error", [False, True])
def test_failed_samples_are_left_out_with_a_warning(tmp_path: Path, fail_on_error: bool) -> None:
    samples = [Sample(input="q", target="t", id=i) for i in range(1, 5)]
    eval(Task(dataset=samples, solver=fails_on([3]), scorer=match(), name="flaky"),
         model="mockllm/model", log_dir=str(tmp_path), display="none",
         fail_on_error=fail_on_error)  # fmt: skip
    log = read_eval_log(str(next(tmp_path.glob("*.eval"))))
    scored = sorted(s.id for s in log.samples if s.scores)
    with pytest.warns(MetaEvalWarning) as caught:
        table = read_inspect(tmp_path)
    messages = [str(w.message) for w in caught]
    assert any("1 sample(s) failed in Inspect" in m and "query=3" in m and "sample 3 broke" in m
               for m in messages), messages  # fmt: skip
    assert any("did not finish" in m and "status='error'" in m for m in messages) is fail_on_error
    assert sorted(table["query"]) == scored and 3 not in scored
    assert (table["value"] == 1.0).all()


def test_without_inspect_ai_the_error_says_what_to_install(
    logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"pip install metaeval\[inspect\]"):
        read_inspect(logs)


def test_epochs_are_recorded_and_effects_take_them_as_epochs(logs: Path) -> None:
    """A task run for several epochs: attrs["replicates"] = "epochs", which effects() takes
    as its default design: each item's mean over its epochs is the unit, nothing added."""
    table = read_inspect(logs, metadata="passage")
    assert table.attrs["replicates"] == "epochs"
    models = sorted(table["system"].unique())
    eff = metaeval.effects(table, control=models[0], effect="md")
    assert eff.attrs["replicates"] == "epochs"
    assert "variance_replicates" not in eff.columns
    averaged = table.groupby(["task", "query", "system", "metric"], as_index=False)["value"].mean()
    plain = metaeval.effects(averaged, control=models[0], effect="md")
    pd.testing.assert_frame_equal(eff, plain, check_exact=False, rtol=1e-12)
    # told otherwise, the replicates are seeds: their variance is added
    nested = metaeval.effects(table, control=models[0], effect="md", replicates="nested")
    assert nested.attrs["replicates"] == "nested" and "variance_replicates" in nested.columns

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
        content = {
            0: f"The answer is {target}",
            1: f"{target} is not it, maybe",
            2: "no idea",
            3: f"surely {target}",
        }[case]
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
    return Task(
        dataset=samples,
        solver=fixed(shift),
        scorer=[match(), includes()],
        metrics=[accuracy(), stderr(cluster="passage")],
        epochs=epochs,
        name=name,
    )


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("inspect_logs")
    for (model, shift), form in zip(MODELS.items(), ["eval", "json"], strict=True):
        eval(
            [_task("qa", shift, 1), _task("qa_epochs", shift, 3)],
            model=model,
            log_dir=str(folder),
            display="none",
            log_format=form,
        )
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
                expected.append(
                    (
                        log.eval.task,
                        str(s.id),
                        log.eval.model,
                        name,
                        value,
                        s.epoch,
                        s.metadata["passage"],
                    )
                )
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
            rows = table[
                (table["task"] == log.eval.task)
                & (table["system"] == log.eval.model)
                & (table["metric"] == score.name)
            ]
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
    eval(
        Task(dataset=samples, solver=broken(), scorer=match(), name="broken"),
        model="mockllm/model",
        log_dir=str(tmp_path),
        display="none",
    )
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
    eval(
        Task(dataset=samples, solver=fails_on([3]), scorer=match(), name="flaky"),
        model="mockllm/model",
        log_dir=str(tmp_path),
        display="none",
        fail_on_error=fail_on_error,
    )
    log = read_eval_log(str(next(tmp_path.glob("*.eval"))))
    scored = sorted(s.id for s in log.samples if s.scores)
    with pytest.warns(MetaEvalWarning) as caught:
        table = read_inspect(tmp_path)
    messages = [str(w.message) for w in caught]
    assert any(
        "1 sample(s) failed in Inspect" in m and "query='3'" in m and "sample 3 broke" in m
        for m in messages
    ), messages
    assert any("did not finish" in m and "status='error'" in m for m in messages) is fail_on_error
    assert sorted(table["query"]) == [str(i) for i in scored] and 3 not in scored
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


# ------------------------------------------------------------------ issue 39, items 1-5, 30
REDUCERS = ["mean", "max", "mode", "median", "at_least_2", "pass_at_2"]


@solver
def varied(shift: int = 0):
    """Answers without a model, right with a probability that differs by item (its metadata
    ``n``) and model, drawn anew per epoch from a seeded stream: right (match and includes
    succeed), right but not at the end (includes only) or wrong."""

    async def solve(state, generate):
        import random

        n = state.metadata["n"]
        draw = random.Random(f"{n}-{state.epoch}-{shift}")
        target = state.target.text
        if draw.random() < (n + 2 * shift) / 14:
            content = f"The answer is {target}" if draw.random() < 0.7 else f"{target} maybe"
        else:
            content = "no idea"
        state.output = ModelOutput.from_content(model="mockllm/model", content=content)
        return state

    return solve


def _varied_samples(ids: str) -> list[Sample]:
    return [
        Sample(
            input=f"q{n}",
            target=str(n % 5),
            id=n if ids == "int" else f"s{n}",
            metadata={"n": n, "topic": "ab"[n % 2]},
        )
        for n in range(1, 11)
    ]


@pytest.fixture(scope="module")
def reduced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two models x two tasks run for 4 epochs with reducers other than the mean: "maxed"
    (``Epochs(4, "max")``, match and includes, integer sample ids) and "several" (six
    reducers at once, match, string sample ids); one model's logs are .eval, the other's
    .json."""
    from inspect_ai import Epochs

    folder = tmp_path_factory.mktemp("inspect_reduced")
    for (model, shift), form in zip(MODELS.items(), ["eval", "json"], strict=True):
        tasks = [
            Task(
                dataset=_varied_samples("int"),
                solver=varied(shift),
                scorer=[match(), includes()],
                epochs=Epochs(4, "max"),
                name="maxed",
            ),
            Task(
                dataset=_varied_samples("str"),
                solver=varied(shift),
                scorer=match(),
                epochs=Epochs(4, REDUCERS),
                name="several",
            ),
        ]
        eval(tasks, model=model, log_dir=str(folder), display="none", log_format=form)
    return folder


def _logs_of(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.eval")) + sorted(folder.glob("*.json"))


def _item_means(table: pd.DataFrame) -> pd.Series:
    """Per (task, system, metric): the mean over samples of each sample's mean (Inspect's
    metric of the reduced scores, for the mean reducer the mean over its epochs)."""
    keys = ["task", "system", "metric"]
    return table.groupby([*keys, "query"])["value"].mean().groupby(keys).mean()


def _metric_name(score, several: bool) -> str:
    """The table's metric of one of Inspect's results.scores entries."""
    base = score.scorer if score.name == score.scorer else f"{score.scorer}/{score.name}"
    return f"{base}[{score.reducer}]" if several else base


def test_epoch_reducers_give_the_metrics_inspect_reports(reduced: Path) -> None:
    """Item 1: a task run with Epochs(4, "max") (or mode, median, at_least_2, pass_at_2) is
    read with the log's reducer, so each model's mean is the accuracy Inspect stored, and the
    difference of two models is Inspect's; several reducers give one metric each."""
    table = read_inspect(reduced)
    means = _item_means(table)
    checked = 0
    for path in _logs_of(reduced):
        log = read_eval_log(str(path))
        several = len(log.eval.config.epochs_reducer) > 1
        for score in log.results.scores:
            key = (log.eval.task, log.eval.model, _metric_name(score, several))
            assert abs(means[key] - score.metrics["accuracy"].value) < 1e-12, (key, score.reducer)
            checked += 1
    assert checked == 2 * (2 + len(REDUCERS))  # models × (maxed: 2 scorers, several: 6)
    # the reducers matter here: max differs from the mean over epochs (the test can fail)
    plain = read_eval_log(str(_logs_of(reduced)[0]))
    epoch_mean = np.mean([s.scores["match"].value == "C" for s in plain.samples])
    assert abs(means[(plain.eval.task, plain.eval.model, "match")] - epoch_mean) > 0.05
    # the mean reducer keeps its epochs (within-item replicates); the others one row per sample
    rows = table.groupby(["task", "system", "metric", "query"]).size()
    assert (rows.xs("several", level="task").xs("match[mean]", level="metric") == 4).all()
    assert (rows.drop("match[mean]", level="metric") == 1).all()
    assert set(table.loc[table["metric"] != "match[mean]", "replicate"]) == {1}
    assert table.attrs["replicates"] == "epochs"
    assert table.attrs["epochs_reducer"] == {"maxed": ["max"], "several": REDUCERS}
    # effects: the means behind a comparison are Inspect's metrics of the two models
    eff = metaeval.effects(
        table[table["metric"] == "match[max]"], control="mockllm/model", effect="md"
    )
    for path in _logs_of(reduced):
        log = read_eval_log(str(path))
        if log.eval.task == "several":
            (score,) = [s for s in log.results.scores if s.reducer == "max"]
            column = "mean_control" if log.eval.model == "mockllm/model" else "mean_treatment"
            assert abs(eff[column].iloc[0] - score.metrics["accuracy"].value) < 1e-12


def test_a_task_reduced_differently_for_two_models_is_an_error(
    reduced: Path, tmp_path: Path
) -> None:
    from inspect_ai import Epochs

    log = next(p for p in _logs_of(reduced) if p.suffix == ".eval" and "maxed" in p.name)
    (tmp_path / log.name).write_bytes(log.read_bytes())
    eval(
        Task(
            dataset=_varied_samples("int"),
            solver=varied(2),
            scorer=match(),
            epochs=Epochs(4, "mean"),
            name="maxed",
        ),
        model="mockllm/third",
        log_dir=str(tmp_path),
        display="none",
    )
    with pytest.raises(SchemaError, match=r"'maxed'.*mockllm/model.*max.*mockllm/third.*mean"):
        read_inspect(tmp_path, scorer="match")


def test_a_log_without_its_reduced_scores_is_an_error(reduced: Path, tmp_path: Path) -> None:
    from inspect_ai.log import write_eval_log

    log = read_eval_log(str(next(p for p in _logs_of(reduced) if "maxed" in p.name)))
    log.reductions = None  # as a log written without them
    write_eval_log(log, str(tmp_path / "bare.eval"))
    with pytest.raises(SchemaError, match=r"bare\.eval.*reducer 'max'.*reduced scores"):
        read_inspect(tmp_path)


def test_query_ids_are_strings_when_tasks_mix_integer_and_string_ids(reduced: Path) -> None:
    """Item 3: "maxed" has integer sample ids, "several" strings; query is always str, so
    means(), effects() and the command take the table."""
    table = read_inspect(reduced)
    assert table["query"].map(type).eq(str).all()
    assert set(table.loc[table["task"] == "maxed", "query"]) == {str(n) for n in range(1, 11)}
    means = metaeval.means(table)
    assert set(means["task"]) == {"maxed", "several"}
    eff = metaeval.effects(table, control="mockllm/model", effect="md")
    assert set(eff["task"]) == {"maxed", "several"} and (eff["n"] == 10).all()


def test_a_log_that_lost_samples_says_so(logs: Path, tmp_path: Path) -> None:
    """Item 30: a log whose header says more samples were completed than it holds (here
    written by Inspect's write_eval_log without sample 3) is read with a warning naming the
    file, task, model, the counts and the lost sample."""
    from inspect_ai.log import write_eval_log

    lost = []
    heads = {p: read_eval_log(str(p), header_only=True) for p in _files(logs)}
    chosen = [
        p
        for p, h in heads.items()
        if (p.suffix, h.eval.task) in ((".eval", "qa"), (".json", "qa_epochs"))
    ]
    for path in chosen:  # one .eval (task qa, once) and one .json (3 epochs)
        log = read_eval_log(str(path))
        log.samples = [s for s in log.samples if s.id != 3]
        write_eval_log(log, str(tmp_path / path.name))
        lost.append(
            (
                path.name,
                log.eval.task,
                log.eval.model,
                log.results.completed_samples,
                len(log.samples),
            )
        )
    assert {n for *_, n in lost} == {8, 24}
    with pytest.warns(MetaEvalWarning, match="fewer samples than") as caught:
        table = read_inspect(tmp_path)
    (message,) = [str(w.message) for w in caught if "fewer samples than" in str(w.message)]
    for name, task, model, completed, read in lost:
        assert f"file='{name[:40]}" in message and f"task='{task}'" in message, message
        assert f"system='{model}'" in message, message
        assert f"completed={completed}, read={read}, lost='3'" in message, message
    assert "3" not in set(table["query"]) and len(table) == 2 * (8 + 24)


def test_scores_inspect_cannot_convert_are_errors_and_unscored_ones_left_out(
    tmp_path: Path,
) -> None:
    """Item 30: what Inspect's value_to_float converts ("C", "P", "yes", "0.25", booleans,
    numbers) is read as Inspect reads it; a value it cannot convert ("maybe", which Inspect's
    accuracy counts as 0 with a log message) is an error naming task, sample and value; the
    unscored sentinel (NaN, which Inspect leaves out of its metrics) is left out with a
    warning; a list value becomes one metric per position, with a warning."""
    from inspect_ai.scorer import Score, mean, scorer

    fine_values = ["C", "yes", "0.25", True, float("nan"), "no", "P", 0.75]

    @scorer(metrics=[accuracy()])
    def fine():
        async def score(state, target) -> Score:
            return Score(value=fine_values[int(state.sample_id)])

        return score

    @scorer(metrics=[accuracy()])
    def odd():
        async def score(state, target) -> Score:
            return Score(value="maybe" if int(state.sample_id) == 5 else "C")

        return score

    @scorer(metrics=[mean()])
    def listy():
        async def score(state, target) -> Score:
            i = int(state.sample_id)
            return Score(value=[i % 2, i / 4])

        return score

    samples = [Sample(input="q", target="t", id=i) for i in range(len(fine_values))]
    eval(
        Task(dataset=samples, solver=fixed(0), scorer=[fine(), odd(), listy()], name="graded"),
        model="mockllm/model",
        log_dir=str(tmp_path),
        display="none",
    )
    log = read_eval_log(str(next(tmp_path.glob("*.eval"))))
    with pytest.raises(SchemaError, match=r"'graded'.*scorer 'odd'.*sample 5.*'maybe'"):
        read_inspect(tmp_path)
    with pytest.warns(MetaEvalWarning, match=r"(?s)unscored.*query='4'.*metric='fine'"):
        table = read_inspect(tmp_path, scorer="fine")
    (accuracy_fine,) = [s.metrics["accuracy"].value for s in log.results.scores if s.name == "fine"]
    assert "4" not in set(table["query"]) and len(table) == len(fine_values) - 1
    assert abs(table["value"].mean() - accuracy_fine) < 1e-12
    np.testing.assert_array_equal(
        table.sort_values("query")["value"], [1.0, 1.0, 0.25, 1.0, 0.0, 0.5, 0.75]
    )
    with pytest.warns(MetaEvalWarning, match=r"(?s)list.*one metric per position.*listy"):
        table = read_inspect(tmp_path, scorer="listy")
    wide = table.pivot(index="query", columns="metric", values="value").sort_index(
        key=lambda q: q.astype(int)
    )
    assert list(wide.columns) == ["listy/0", "listy/1"]
    np.testing.assert_array_equal(wide["listy/0"], [i % 2 for i in range(len(fine_values))])
    np.testing.assert_array_equal(wide["listy/1"], [i / 4 for i in range(len(fine_values))])


def test_primary_keeps_each_tasks_headline_metric(reduced: Path) -> None:
    """Item 2: primary=True keeps one metric per task, Inspect's headline (the first scorer,
    and the first reducer of several), named "primary"; {task: metric} overrides."""
    every = read_inspect(reduced)
    table = read_inspect(reduced, primary=True)
    assert table.attrs["primary"] == {"maxed": "match", "several": "match[mean]"}
    assert set(table["metric"]) == {"primary"}
    means = _item_means(table)
    for path in _logs_of(reduced):
        log = read_eval_log(str(path))
        head = log.results.headline
        (score,) = [
            s
            for s in log.results.scores
            if s.scorer == head.scorer and s.name == head.score and s.reducer == head.reducer
        ]
        value = score.metrics[head.metric].value
        assert abs(means[(log.eval.task, log.eval.model, "primary")] - value) < 1e-12
    chosen = read_inspect(reduced, primary={"several": "match[max]"})
    assert chosen.attrs["primary"] == {"maxed": "match", "several": "match[max]"}
    want = every[every["metric"] == "match[max]"].drop(columns=["metric", "replicate"])
    got = chosen[chosen["task"] == "several"].drop(columns="metric")
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))
    with pytest.raises(SchemaError, match=r"task\(s\) 'nope'.*maxed, several"):
        read_inspect(reduced, primary={"nope": "match"})
    with pytest.raises(SchemaError, match=r"exact of task .maxed.*includes, match"):
        read_inspect(reduced, primary={"maxed": "exact"})
    with pytest.raises(OptionError, match="`primary`"):
        read_inspect(reduced, primary={"maxed": 3})
    with pytest.raises(OptionError, match="`primary`"):
        read_inspect(reduced, primary="yes")


def test_logs_without_the_scorers_named_are_left_out_with_a_warning(reduced: Path) -> None:
    """A log none of whose scorers ``scorer`` names (task "several" has no includes) is left
    out, and said, not silently."""
    with pytest.warns(MetaEvalWarning, match=r"(?s)2 log\(s\) have none of the scorers.*several"):
        table = read_inspect(reduced, scorer="includes")
    assert set(table["task"]) == {"maxed"} and set(table["metric"]) == {"includes"}


@solver
def hedged():
    """Another solver: the answer first, then a hedge (includes succeeds, match fails)."""

    async def solve(state, generate):
        content = f"{state.target.text}, or not"
        state.output = ModelOutput.from_content(model="mockllm/model", content=content)
        return state

    return solve


@pytest.fixture(scope="module")
def variants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One model, one task, three runs: task_args prompt="plain" and "cot" (the task's own
    solver, shifted by the prompt), and prompt="plain" with eval(solver=hedged())."""
    from inspect_ai import task

    @task
    def qa(prompt: str = "plain"):
        return Task(
            dataset=_varied_samples("int"),
            solver=varied(0 if prompt == "plain" else 3),
            scorer=[match(), includes()],
        )

    folder = tmp_path_factory.mktemp("inspect_variants")
    plain, cot = eval(
        [qa(prompt="plain"), qa(prompt="cot")],
        model="mockllm/model",
        log_dir=str(folder),
        display="none",
    )
    (other,) = eval(
        qa(), solver=hedged(), model="mockllm/model", log_dir=str(folder), display="none"
    )
    return {
        name: Path(log.location)
        for name, log in zip(("plain", "cot", "hedged"), (plain, cot, other), strict=True)
    }


def test_two_prompts_on_one_model_say_how_to_name_them(variants: dict[str, Path]) -> None:
    """Item 5: two runs of one task and model that differ in task_args (or solver) are the
    same samples twice; the error names what differs and the system_name that tells them
    apart."""
    with pytest.raises(
        SchemaError,
        match=r"(?s)twice.*task_args.*system_name='\{model\}:"
        r"\{task_args\[prompt\]\}'.*--system-name",
    ):
        read_inspect([variants["plain"], variants["cot"]])
    with pytest.raises(SchemaError, match=r"(?s)twice.*solver.*system_name='\{model\}:\{solver\}'"):
        read_inspect([variants["plain"], variants["hedged"]])


def test_system_name_names_systems_by_model_and_task_arguments(
    variants: dict[str, Path],
) -> None:
    two = [variants["plain"], variants["cot"]]
    table = read_inspect(two, system_name="{model}:{task_args[prompt]}")
    assert set(table["system"]) == {"mockllm/model:plain", "mockllm/model:cot"}
    means = _item_means(table)
    for name in ("plain", "cot"):
        log = read_eval_log(str(variants[name]))
        for score in log.results.scores:
            key = ("qa", f"mockllm/model:{name}", score.name)
            assert abs(means[key] - score.metrics["accuracy"].value) < 1e-12
    by_callable = read_inspect(two, system_name=lambda log: log.eval.task_args["prompt"])
    assert set(by_callable["system"]) == {"plain", "cot"}
    pd.testing.assert_series_equal(by_callable["value"], table["value"])
    every = read_inspect(list(variants.values()), system_name="{solver}/{task_args[prompt]}")
    assert set(every["system"]) == {"varied/plain", "varied/cot", "hedged/plain"}
    eff = metaeval.effects(every, control="varied/plain", effect="md")
    assert set(eff["treatment"]) == {"varied/cot", "hedged/plain"}
    with pytest.raises(SchemaError, match=r"(?s)task_args\[nope\].*has no 'nope'.*prompt"):
        read_inspect(two, system_name="{model}:{task_args[nope]}")
    with pytest.raises(OptionError, match=r"`system_name`.*'modle'.*model, task, task_args"):
        read_inspect(two, system_name="{modle}")
    with pytest.raises(OptionError, match="`system_name`"):
        read_inspect(two, system_name=3)
    with pytest.raises(SchemaError, match="`system_name`.*empty"):
        read_inspect(two, system_name=lambda log: "")
    with pytest.raises(SchemaError, match=r"twice.*differ in task_args"):
        read_inspect(two, system_name="{task}")  # one name for both runs

"""``metaeval meta`` reads every harness's logs (issue 27): Inspect AI logs written by
``inspect_ai.eval()`` itself, the HELM and lighteval fixtures, lm-eval folders; recognised
by their files or named with ``--input-format``. The printed summaries are checked against
``metaeval.pool(metaeval.effects(read_x(...)))`` computed here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from _helpers import HELM_SUITE, NARROW_KH, helm_suite, parse_raw

import metaeval
from metaeval.errors import DegenerateWarning, MetaEvalWarning
from metaeval.io import read_helm, read_inspect, read_lighteval
from metaeval_cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LIGHTEVAL = FIXTURES / "lighteval" / "details"
PASSAGES = ["p1", "p1", "p2", "p2", "p3", "p3", "p4", "p4"]


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two models x three tasks, written by ``inspect_ai.eval()`` offline (a solver sets the
    answer, by sample id and model; scored by match() and includes()); one model's logs are
    ``.eval``, the other's ``.json``."""
    pytest.importorskip("inspect_ai")
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import includes, match
    from inspect_ai.solver import solver

    @solver
    def fixed(shift: int = 0):
        async def solve(state, generate):
            case = (int(state.sample_id) * 5 + shift + len(state.input_text)) % 3
            target = state.target.text
            content = {0: f"The answer is {target}", 1: f"{target} maybe", 2: "no idea"}[case]
            state.output = ModelOutput.from_content(model="mockllm/model", content=content)
            return state

        return solve

    def task(name: str, shift: int) -> Task:
        samples = [
            Sample(
                input=f"{name} q{i}", target=str(i % 5), id=i, metadata={"passage": PASSAGES[i - 1]}
            )
            for i in range(1, len(PASSAGES) + 1)
        ]
        return Task(dataset=samples, solver=fixed(shift), scorer=[match(), includes()], name=name)

    folder = tmp_path_factory.mktemp("inspect_logs")
    for (model, shift), form in zip(
        {"mockllm/model": 0, "mockllm/other": 1}.items(), ["eval", "json"], strict=True
    ):
        eval(
            [task(name, shift) for name in ("qa", "quiz", "trivia")],
            model=model,
            log_dir=str(folder),
            display="none",
            log_format=form,
        )
    return folder


def _summaries(out: str) -> dict[tuple[str, str], pd.Series]:
    """The printed summary rows, by (metric, treatment)."""
    found = {}
    for title, table in parse_raw(out).items():
        if title.startswith("Effects per task and summary: "):
            metric = title.removeprefix("Effects per task and summary: ")
            for _, row in table[table["task"] == "summary"].iterrows():
                found[(metric, row["treatment"])] = row
    return found


def _check(out: str, pooled: pd.DataFrame) -> None:
    printed = _summaries(out)
    assert len(printed) == len(pooled) > 0
    for row in pooled.itertuples():
        shown = printed[(row.metric, row.treatment)]
        for column in ("effect", "se", "ci_low", "ci_high"):
            assert shown[column] == pytest.approx(getattr(row, column), rel=1e-12), column


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["meta", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@NARROW_KH
def test_an_inspect_log_folder(inspect_logs, capsys):
    code, out, err = _run(
        capsys, inspect_logs, "--control", "mockllm/model", "--effect", "md", "--print-mode", "raw"
    )
    assert code == 0, err
    scores = read_inspect(inspect_logs)
    pooled = metaeval.pool(metaeval.effects(scores, control="mockllm/model", effect="md"))
    assert set(pooled["metric"]) == {"match", "includes"}
    _check(out, pooled)
    # --scorer and --metadata reach read_inspect; --input-format inspect says the same
    code, out, err = _run(
        capsys,
        inspect_logs,
        "--control",
        "mockllm/model",
        "--effect",
        "md",
        "--scorer",
        "match",
        "--metadata",
        "passage",
        "--input-format",
        "inspect",
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    _check(out, pooled[pooled["metric"] == "match"])
    code, _, err = _run(capsys, inspect_logs, "--control", "mockllm/model", "--metadata", "chapter")
    assert code == 1 and "chapter" in err, err  # read_inspect's error: the key is missing


def test_one_inspect_json_log_is_recognised(inspect_logs, capsys, tmp_path):
    (log,) = sorted(inspect_logs.glob("*.json"))[:1]
    other = shutil.copy(log, tmp_path / "run.json")
    code, _, err = _run(capsys, other, "--control", "mockllm/model")
    # read by read_inspect: the one model of the log is named, the control is not there
    assert code == 2 and "is not a system of" in err and "it has ['mockllm/other']" in err, err


def test_a_helm_suite(capsys, tmp_path):
    """Runs written by helm-run (two train trials, perturbed instances: issue 39, item 7);
    of the suite's three scenarios, the one where the two models' prompts differ by
    instance (the others differ by a constant: zero variance)."""
    runs = [p.name for p in HELM_SUITE.iterdir() if p.name.startswith("dyck_language")]
    suite = helm_suite(tmp_path / "v1", runs)
    metric = "num_prompt_tokens,perturbation=style(suffix=watercolor)"
    code, out, err = _run(
        capsys,
        suite,
        "--control",
        "simple/model1",
        "--effect",
        "md",
        "--metric",
        metric,
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    scores = read_helm(suite)
    effects = metaeval.effects(
        scores[scores["metric"] == metric], control="simple/model1", effect="md"
    )
    with pytest.warns(DegenerateWarning, match="k = 1"):  # one task
        pooled = metaeval.pool(effects)
    _check(out, pooled)
    assert "k = 1" in err  # the command says so too


def test_lighteval_details(capsys):
    code, out, err = _run(
        capsys, LIGHTEVAL, "--control", "org/small", "--effect", "md", "--print-mode", "raw"
    )
    assert code == 0, err
    assert "carry no document id" in err  # the hand-written details: lighteval < 0.11
    with pytest.warns(MetaEvalWarning, match="carry no document id"):
        scores = read_lighteval(LIGHTEVAL)
    pooled = metaeval.pool(metaeval.effects(scores, control="org/small", effect="md"))
    _check(out, pooled)


def test_a_folder_of_two_harnesses_asks_for_input_format(inspect_logs, capsys, tmp_path):
    mixed = tmp_path / "mixed"
    shutil.copytree(LIGHTEVAL, mixed / "details")
    for log in inspect_logs.glob("*.eval"):
        shutil.copy(log, mixed / log.name)
    code, _, err = _run(capsys, mixed, "--control", "org/small")
    assert code == 2, err
    assert "Inspect logs and lighteval details" in err and "--input-format" in err, err
    control = "details/org/small"  # lighteval's systems: paths below the folder given
    code, out, err = _run(
        capsys,
        mixed,
        "--control",
        control,
        "--input-format",
        "lighteval",
        "--effect",
        "md",
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    with pytest.warns(MetaEvalWarning, match="carry no document id"):
        scores = read_lighteval(mixed)
    pooled = metaeval.pool(metaeval.effects(scores, control=control, effect="md"))
    _check(out, pooled)


def test_options_of_another_reader_are_usage_errors(capsys, tmp_path):
    for option in (["--metadata", "passage"], ["--scorer", "match"]):
        code, _, err = _run(capsys, LIGHTEVAL, "--control", "org/small", *option)
        assert code == 2 and f"{option[0]}: only for Inspect logs" in err, err
    helm = helm_suite(tmp_path / "v1")
    for option in (["--primary"], ["--latest"], ["--replicates", "folders"]):
        code, _, err = _run(capsys, helm, "--control", "simple/model1", *option)
        assert code == 2 and "only for an lm-eval output folder" in err, err
        assert "read as HELM runs" in err, err


def test_an_lm_eval_folder_with_only_results_asks_for_log_samples(capsys, tmp_path):
    folder = tmp_path / "out" / "model"
    folder.mkdir(parents=True)
    (folder / "results_2024-05-01T00-00-00.json").write_text(json.dumps({"results": {}}))
    for extra in ([], ["--input-format", "lm_eval"]):
        code, _, err = _run(capsys, tmp_path / "out", "--control", "model", *extra)
        assert code == 1 and "Rerun lm-eval with --log_samples" in err, err


def test_cluster_reads_the_metadata_key_and_clusters_the_effects(inspect_logs, capsys):
    """--cluster passage on Inspect logs: the key is read as with --metadata, and the
    printed summaries equal pool(effects(cluster="passage")), wider than without."""
    code, out, err = _run(
        capsys,
        inspect_logs,
        "--control",
        "mockllm/model",
        "--effect",
        "md",
        "--scorer",
        "match",
        "--cluster",
        "passage",
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    scores = read_inspect(inspect_logs, metadata=["passage"], scorer="match")
    clustered = metaeval.effects(scores, control="mockllm/model", effect="md", cluster="passage")
    _check(out, metaeval.pool(clustered))
    plain = metaeval.effects(scores, control="mockllm/model", effect="md")
    assert not clustered["se"].equals(plain["se"])


@NARROW_KH
def test_replicate_design_reaches_effects(capsys, tmp_path):
    """--replicate-design nested|crossed: the summaries equal the library's with that design;
    the default is crossed for seeds named alike on every task, a guess the command says."""
    import numpy as np

    rng = np.random.default_rng(5)
    rows = [
        (
            f"t{t}",
            f"q{q}",
            system,
            "acc",
            f"s{r}",
            0.1 * (system == "new") + shift[system, r] + rng.normal(0, 0.5),
        )
        for shift in [{(s, r): rng.normal(0, 0.2) for s in ("new", "old") for r in range(3)}]
        for t in range(4)
        for q in range(30)
        for system in ("new", "old")
        for r in range(3)
    ]
    scores = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "replicate", "value"])
    path = tmp_path / "seeds.csv"
    scores.to_csv(path, index=False)
    summaries = {}
    for design in (None, "crossed", "nested"):
        extra = [] if design is None else ["--replicate-design", design]
        code, out, err = _run(
            capsys, path, "--control", "old", "--effect", "md", "--print-mode", "raw", *extra
        )
        assert code == 0, err
        assert ("guessed 'crossed'" in err) == (design is None)  # the guess is said
        eff = metaeval.effects(scores, control="old", effect="md", replicates=design or "crossed")
        _check(out, metaeval.pool(eff))
        summaries[design] = _summaries(out)[("acc", "new")]
    assert summaries[None]["se"] == summaries["crossed"]["se"] != summaries["nested"]["se"]


# ------------------------------------------------------------------ issue 39, items 2, 4, 5
@pytest.fixture(scope="module")
def scorer_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two models x three tasks that each have their own scorer, written by
    ``inspect_ai.eval()``: qa (match), quiz (includes) and graded (a dict scorer, grade and
    points); each sample's metadata has a topic (qa and graded share theirs). Below
    ``variants/``: one model's qa run twice, with task_args prompt="plain" and "cot"."""
    pytest.importorskip("inspect_ai")
    from inspect_ai import Task, eval, task
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score, accuracy, includes, match, mean, scorer
    from inspect_ai.solver import solver

    @solver
    def fixed(shift: int = 0):
        async def solve(state, generate):
            case = (int(state.sample_id) * 5 + shift + len(state.input_text)) % 3
            target = state.target.text
            content = {0: f"The answer is {target}", 1: f"{target} maybe", 2: "no idea"}[case]
            state.output = ModelOutput.from_content(model="mockllm/model", content=content)
            return state

        return solve

    @scorer(metrics={"grade": [accuracy()], "points": [mean()]}, name="graded")
    def graded_scorer():
        async def score(state, target) -> Score:
            answer = state.output.completion
            return Score(
                value={
                    "grade": "C" if answer.endswith(target.text) else "I",
                    "points": len(answer) / 20,
                }
            )

        return score

    topics = {"qa": ["arith", "geo"], "quiz": ["hist", "lit"], "graded": ["arith", "geo"]}
    scorers = {"qa": match, "quiz": includes, "graded": graded_scorer}

    def make(name: str, shift: int) -> Task:
        samples = [
            Sample(
                input=f"{name} q{i}",
                target=str(i % 5),
                id=i,
                metadata={"topic": topics[name][i % 2]},
            )
            for i in range(1, len(PASSAGES) + 1)
        ]
        return Task(dataset=samples, solver=fixed(shift), scorer=scorers[name](), name=name)

    folder = tmp_path_factory.mktemp("inspect_scorers")
    for (model, shift), form in zip(
        {"mockllm/model": 0, "mockllm/other": 1}.items(), ["eval", "json"], strict=True
    ):
        eval(
            [make(name, shift) for name in scorers],
            model=model,
            log_dir=str(folder / "logs"),
            display="none",
            log_format=form,
        )

    @task
    def qa(prompt: str = "plain"):
        return make("qa", 0 if prompt == "plain" else 1)

    eval(
        [qa(prompt="plain"), qa(prompt="cot")],
        model="mockllm/model",
        log_dir=str(folder / "variants"),
        display="none",
    )
    return folder


def _logs(folder: Path, *tasks: str) -> list[Path]:
    """The logs of ``tasks`` in ``folder`` (both formats)."""
    from inspect_ai.log import read_eval_log

    found = sorted(p for p in folder.iterdir() if p.suffix in (".eval", ".json"))
    return [p for p in found if read_eval_log(str(p), header_only=True).eval.task in tasks]


def _quiet(compute):
    """``compute()`` with the library's warnings silenced (a reference, computed here)."""
    import warnings

    from metaeval.errors import MetaEvalWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MetaEvalWarning)
        return compute()


@NARROW_KH
def test_tasks_with_their_own_scorers_say_why_nothing_pools_and_pool_with_primary(
    scorer_logs, capsys
):
    """Item 2: each task's scorer is its own metric, so every summary has k = 1; the warning
    names that cause, and --primary keeps Inspect's headline metric of each task."""
    logs = scorer_logs / "logs"
    code, out, err = _run(
        capsys, logs, "--control", "mockllm/model", "--effect", "md", "--print-mode", "raw"
    )
    assert code == 0, err
    assert "k = 1" in err and "metric names differ across tasks" in err, err
    assert "--primary" in err, err
    code, out, err = _run(
        capsys,
        logs,
        "--control",
        "mockllm/model",
        "--effect",
        "md",
        "--primary",
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    scores = read_inspect(logs, primary=True)
    assert scores.attrs["primary"] == {"graded": "graded/grade", "qa": "match", "quiz": "includes"}
    pooled = metaeval.pool(metaeval.effects(scores, control="mockllm/model", effect="md"))
    assert list(pooled["k"]) == [3]
    _check(out, pooled)
    assert "graded=graded/grade, qa=match, quiz=includes" in out, out
    code, out, err = _run(
        capsys,
        logs,
        "--control",
        "mockllm/model",
        "--effect",
        "md",
        "--primary",
        "graded=graded/points",
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    scores = read_inspect(logs, primary={"graded": "graded/points"})
    _check(out, metaeval.pool(metaeval.effects(scores, control="mockllm/model", effect="md")))


@NARROW_KH
def test_constant_and_columns_apply_to_inspect_logs(scorer_logs, capsys):
    """Item 2: --constant metric=NAME gives tasks with one scorer each one metric name;
    --columns task=KEY takes a key from the samples' metadata; neither may merge what
    differs."""
    two = _logs(scorer_logs / "logs", "qa", "quiz")  # four files: item 4 too
    assert len(two) == 4
    code, out, err = _run(
        capsys,
        *two,
        "--control",
        "mockllm/model",
        "--effect",
        "md",
        "--constant",
        "metric=score",
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    scores = read_inspect(two).assign(metric="score")
    pooled = metaeval.pool(metaeval.effects(scores, control="mockllm/model", effect="md"))
    assert list(pooled["k"]) == [2]
    _check(out, pooled)
    code, out, err = _run(
        capsys,
        *two,
        "--control",
        "mockllm/model",
        "--effect",
        "md",
        "--constant",
        "metric=score",
        "--columns",
        "task=topic",
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    scores = read_inspect(two, metadata="topic")
    scores = scores.assign(task=scores["topic"], metric="score").drop(columns="topic")
    pooled = metaeval.pool(metaeval.effects(scores, control="mockllm/model", effect="md"))
    assert list(pooled["k"]) == [4]
    _check(out, pooled)
    # a constant that gives two metrics of one task one name, or a column that puts two
    # Inspect tasks into one, is an error naming them
    code, _, err = _run(
        capsys, scorer_logs / "logs", "--control", "mockllm/model", "--constant", "metric=score"
    )
    assert code == 1 and "--constant metric=score" in err, err
    assert "graded/grade" in err and "graded/points" in err and "--primary" in err, err
    code, _, err = _run(
        capsys,
        scorer_logs / "logs",
        "--control",
        "mockllm/model",
        "--primary",
        "--columns",
        "task=topic",
    )
    assert code == 1 and "--columns task=topic" in err, err
    assert "'arith'" in err and "graded" in err and "qa" in err, err
    code, _, err = _run(capsys, *two, "--control", "mockllm/model", "--columns", "value=topic")
    assert code == 2 and "--columns value" in err, err


def test_several_log_files_are_read_by_their_harness(inspect_logs, capsys, tmp_path):
    """Item 4: log files on the command line are recognised as folders are: Inspect's .eval
    and .json logs, lighteval's details files, HELM's per_instance_stats.json (its run)."""
    files = _logs(inspect_logs, "qa")
    assert sorted(p.suffix for p in files) == [".eval", ".json"]
    code, out, err = _run(
        capsys, *files, "--control", "mockllm/model", "--effect", "md", "--print-mode", "raw"
    )
    assert code == 0, err
    effects = metaeval.effects(read_inspect(files), control="mockllm/model", effect="md")
    _check(out, _quiet(lambda: metaeval.pool(effects)))
    details = sorted(LIGHTEVAL.rglob("details_*.parquet"))
    code, out, err = _run(
        capsys, *details, "--control", "small", "--effect", "md", "--print-mode", "raw"
    )
    assert code == 0, err
    with pytest.warns(MetaEvalWarning, match="carry no document id"):  # lighteval < 0.11
        scores = read_lighteval(details)
    effects = metaeval.effects(scores, control="small", effect="md")
    _check(out, _quiet(lambda: metaeval.pool(effects)))
    runs = [p.name for p in HELM_SUITE.iterdir() if p.name.startswith("dyck_language")]
    stats = sorted(helm_suite(tmp_path / "v1", runs).rglob("per_instance_stats.json"))
    metric = "num_prompt_tokens,perturbation=style(suffix=watercolor)"
    code, out, err = _run(
        capsys,
        *stats,
        "--control",
        "simple/model1",
        "--effect",
        "md",
        "--metric",
        metric,
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    scores = read_helm([p.parent for p in stats])
    effects = metaeval.effects(
        scores[scores["metric"] == metric], control="simple/model1", effect="md"
    )
    _check(out, _quiet(lambda: metaeval.pool(effects)))
    # an Inspect log beside a scores file: which reader? a usage error naming both
    table = tmp_path / "scores.csv"
    read_inspect(files).to_csv(table, index=False)
    code, _, err = _run(capsys, files[0], table, "--control", "mockllm/model")
    assert code == 2 and "Inspect logs" in err and "scores files" in err, err
    assert files[0].name in err and "scores.csv" in err, err


def test_system_name_tells_two_prompts_on_one_model_apart(scorer_logs, capsys):
    """Item 5: --system-name names the systems by model and task arguments; without it the
    error says how."""
    variants = scorer_logs / "variants"
    code, _, err = _run(capsys, variants, "--control", "mockllm/model")
    assert code == 1 and "in the logs twice" in err, err
    assert "--system-name '{model}:{task_args[prompt]}'" in err, err
    name = "{model}:{task_args[prompt]}"
    code, out, err = _run(
        capsys,
        variants,
        "--control",
        "mockllm/model:plain",
        "--effect",
        "md",
        "--system-name",
        name,
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    scores = read_inspect(variants, system_name=name)
    assert set(scores["system"]) == {"mockllm/model:plain", "mockllm/model:cot"}
    effects = metaeval.effects(scores, control="mockllm/model:plain", effect="md")
    _check(out, _quiet(lambda: metaeval.pool(effects)))
    code, _, err = _run(capsys, LIGHTEVAL, "--control", "org/small", "--system-name", name)
    assert code == 2 and "--system-name: only for Inspect logs" in err, err


@NARROW_KH
def test_report_and_plan_take_primary_for_inspect_logs(scorer_logs, capsys, tmp_path):
    """Item 2: `metaeval report` and `metaeval plan --tasks` read the logs as `meta` does:
    --primary pools the three tasks' headline metrics (k = 3), as the library does."""
    logs = scorer_logs / "logs"
    out = tmp_path / "r.json"
    code = main(
        [
            "report",
            str(logs),
            "--control",
            "mockllm/model",
            "--primary",
            "--n-resamples",
            "40",
            "--seed",
            "2",
            "-o",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 0, err
    from metaeval.workflows import build_report

    scores = read_inspect(logs, primary=True)
    with pytest.warns(DegenerateWarning, match="changes nothing"):  # one treatment: item 18
        expected = build_report(scores, "mockllm/model", n_resamples=40, seed=2, pool_test="knha")
    assert json.loads(out.read_text()) == json.loads(expected.to_json())
    assert list(expected.pooled["k"]) == [3]
    code = main(
        [
            "plan",
            str(logs),
            "--control",
            "mockllm/model",
            "--primary",
            "--tasks",
            "--mde",
            "0.1",
            "--power",
            "0.8",
            "--n-draws",
            "200",
            "--seed",
            "1",
            "--print-mode",
            "raw",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "primary" in captured.out, captured.out

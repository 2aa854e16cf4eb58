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
from _helpers import NARROW_KH, parse_raw

import metaeval
from metaeval.errors import DegenerateWarning
from metaeval.io import read_helm, read_inspect, read_lighteval
from metaeval_cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HELM = FIXTURES / "helm" / "suite"
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
        samples = [Sample(input=f"{name} q{i}", target=str(i % 5), id=i,
                          metadata={"passage": PASSAGES[i - 1]})
                   for i in range(1, len(PASSAGES) + 1)]  # fmt: skip
        return Task(dataset=samples, solver=fixed(shift), scorer=[match(), includes()], name=name)

    folder = tmp_path_factory.mktemp("inspect_logs")
    for (model, shift), form in zip({"mockllm/model": 0, "mockllm/other": 1}.items(),
                                    ["eval", "json"], strict=True):  # fmt: skip
        eval([task(name, shift) for name in ("qa", "quiz", "trivia")], model=model,
             log_dir=str(folder), display="none", log_format=form)  # fmt: skip
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
    code, out, err = _run(capsys, inspect_logs, "--control", "mockllm/model", "--effect", "md",
                          "--print-mode", "raw")  # fmt: skip
    assert code == 0, err
    scores = read_inspect(inspect_logs)
    pooled = metaeval.pool(metaeval.effects(scores, control="mockllm/model", effect="md"))
    assert set(pooled["metric"]) == {"match", "includes"}
    _check(out, pooled)
    # --scorer and --metadata reach read_inspect; --input-format inspect says the same
    code, out, err = _run(capsys, inspect_logs, "--control", "mockllm/model", "--effect", "md",
                          "--scorer", "match", "--metadata", "passage", "--input-format",
                          "inspect", "--print-mode", "raw")  # fmt: skip
    assert code == 0, err
    _check(out, pooled[pooled["metric"] == "match"])
    code, _, err = _run(capsys, inspect_logs, "--control", "mockllm/model", "--metadata", "chapter")  # fmt: skip
    assert code == 1 and "chapter" in err, err  # read_inspect's error: the key is missing


def test_one_inspect_json_log_is_recognised(inspect_logs, capsys, tmp_path):
    (log,) = sorted(inspect_logs.glob("*.json"))[:1]
    other = shutil.copy(log, tmp_path / "run.json")
    code, _, err = _run(capsys, other, "--control", "mockllm/model")
    # read by read_inspect: the one model of the log is named, the control is not there
    assert code == 2 and "is not in" in err and "it has ['mockllm/other']" in err, err


def test_a_helm_suite(capsys):
    metric = "exact_match,split=test"
    code, out, err = _run(capsys, HELM, "--control", "openai/gpt2", "--effect", "md",
                          "--metric", metric, "--print-mode", "raw")  # fmt: skip
    assert code == 0, err
    scores = read_helm(HELM)
    effects = metaeval.effects(scores[scores["metric"] == metric], control="openai/gpt2",
                               effect="md")  # fmt: skip
    with pytest.warns(DegenerateWarning, match="k = 1"):  # one task
        pooled = metaeval.pool(effects)
    _check(out, pooled)
    assert "k = 1" in err  # the command says so too


def test_lighteval_details(capsys):
    code, out, err = _run(capsys, LIGHTEVAL, "--control", "org/small", "--effect", "md",
                          "--print-mode", "raw")  # fmt: skip
    assert code == 0, err
    pooled = metaeval.pool(metaeval.effects(read_lighteval(LIGHTEVAL), control="org/small",
                                            effect="md"))  # fmt: skip
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
    code, out, err = _run(capsys, mixed, "--control", control, "--input-format",
                          "lighteval", "--effect", "md", "--print-mode", "raw")  # fmt: skip
    assert code == 0, err
    pooled = metaeval.pool(metaeval.effects(read_lighteval(mixed), control=control,
                                            effect="md"))  # fmt: skip
    _check(out, pooled)


def test_options_of_another_reader_are_usage_errors(capsys, tmp_path):
    for option in (["--metadata", "passage"], ["--scorer", "match"]):
        code, _, err = _run(capsys, LIGHTEVAL, "--control", "org/small", *option)
        assert code == 2 and f"{option[0]}: only for Inspect logs" in err, err
    for option in (["--primary"], ["--latest"], ["--replicates", "folders"]):
        code, _, err = _run(capsys, HELM, "--control", "openai/gpt2", *option)
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
    code, out, err = _run(capsys, inspect_logs, "--control", "mockllm/model", "--effect", "md",
                          "--scorer", "match", "--cluster", "passage", "--print-mode", "raw")  # fmt: skip
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
    rows = [(f"t{t}", f"q{q}", system, "acc", f"s{r}",
             0.1 * (system == "new") + shift[system, r] + rng.normal(0, 0.5))
            for shift in [{(s, r): rng.normal(0, 0.2) for s in ("new", "old") for r in range(3)}]
            for t in range(4) for q in range(30) for system in ("new", "old") for r in range(3)]  # fmt: skip
    scores = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "replicate", "value"])
    path = tmp_path / "seeds.csv"
    scores.to_csv(path, index=False)
    summaries = {}
    for design in (None, "crossed", "nested"):
        extra = [] if design is None else ["--replicate-design", design]
        code, out, err = _run(capsys, path, "--control", "old", "--effect", "md",
                              "--print-mode", "raw", *extra)  # fmt: skip
        assert code == 0, err
        assert ("guessed 'crossed'" in err) == (design is None)  # the guess is said
        eff = metaeval.effects(scores, control="old", effect="md", replicates=design or "crossed")
        _check(out, metaeval.pool(eff))
        summaries[design] = _summaries(out)[("acc", "new")]
    assert summaries[None]["se"] == summaries["crossed"]["se"] != summaries["nested"]["se"]

"""The `metaeval` command: evaluate, compare, convert, meta (demo: test_datasets_cli.py).

Printed numbers are read back from ``--print-mode raw`` (full precision) and
compared with the library's results and with independent references: elinor's
own per-query output and the numbers its README prints for its sample, numpy,
and statsmodels.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _helpers import parse_raw
from scipy import stats

import metaeval
import metaeval_cli
from metaeval.io import read_jsonl, read_per_query_csv, read_qrels, read_run, write_scores
from metaeval_cli import main


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def one(tables: dict[str, pd.DataFrame], start: str) -> pd.DataFrame:
    found = [t for t in tables if t.startswith(start)]
    assert len(found) == 1, (start, list(tables))
    return tables[found[0]]


@pytest.fixture
def elinor(shared_data) -> Path:
    return shared_data / "elinor-sample"


# ------------------------------------------------------------------ the parser
@pytest.mark.parametrize("command", ["demo", "evaluate", "compare", "convert", "meta"])
def test_every_command_has_help_with_an_example(capsys, command):
    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert f"usage: metaeval {command}" in text and "Example" in text
    assert f"metaeval {command} " in text.split("Example", 1)[1]


def test_help_is_fast_and_imports_no_pandas(capsys):
    probe = "import sys, metaeval_cli; metaeval_cli.build_parser(); print(sorted({'pandas', 'numpy', 'metaeval'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    command = [sys.executable, "-m", "metaeval_cli", "--help"]
    script = shutil.which("metaeval", path=str(Path(sys.executable).parent))
    timings = {}
    for name, argv in {
        "python -m metaeval_cli --help": command,
        "metaeval --help": [script, "--help"] if script else None,
    }.items():
        if argv is None:
            continue
        best = np.inf
        for _ in range(3):
            start = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
            best = min(best, time.perf_counter() - start)
            assert done.returncode == 0 and "compare" in done.stdout
        timings[name] = best
    with capsys.disabled():
        print("\n" + "; ".join(f"{k}: {v * 1000:.0f} ms (best of 3)" for k, v in timings.items()))


def test_no_command_prints_help_and_usage_code(capsys):
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


# --------------------------------------------------------------------- compare
ELINOR_README_T = {  # elinor-cli README, `elinor-compare` on pred_1.csv and pred_2.csv
    "precision@3": {
        "mean_diff": 0.2917,
        "var_diff": 0.0774,
        "effect_size": 1.0485,
        "t": 2.9656,
        "p_value": 0.0209,
        "moe_95%": 0.2326,
    },
}


def test_compare_two_systems_matches_elinor_and_the_library(capsys, elinor):
    files = [elinor / "pred_1.csv", elinor / "pred_2.csv"]
    code, out, err = run_cli(
        capsys, "compare", *files, "--seed", 11, "--n-resamples", 2000, "--print-mode", "raw"
    )
    assert code == 0, err
    tables = parse_raw(out)
    assert one(tables, "Systems")["system"].tolist() == ["pred_1", "pred_2"]
    basic = one(tables, "Basic statistics")
    assert basic.iloc[0].to_dict() == {"n_systems": 2, "n_queries": 8, "n_metrics": 4}
    t = one(tables, "Paired t-test: pred_1 - pred_2").set_index("metric")
    assert list(t.index) == ["precision@3", "ap", "rr", "ndcg@3"]  # the CSVs' order
    for metric, expected in ELINOR_README_T.items():
        for column, value in expected.items():
            assert round(t.loc[metric, column], 4) == value, (metric, column)
    # independent: numpy on the per-query differences
    a, b = (pd.read_csv(f, index_col="query_id") for f in files)
    d = a - b
    np.testing.assert_allclose(t["mean_diff"], d.mean()[t.index], rtol=1e-12)
    np.testing.assert_allclose(t["var_diff"], d.var(ddof=1)[t.index], rtol=1e-12)
    # the library, at full precision
    scores = read_per_query_csv({"pred_1": files[0], "pred_2": files[1]})
    lib = metaeval.compare(scores, control="pred_2", treatment="pred_1").set_index("metric")
    for mine, theirs in [
        ("t", "statistic"),
        ("p_value", "p_value"),
        ("moe_95%", "moe"),
        ("effect_size", "effect_size"),
    ]:
        np.testing.assert_array_equal(t[mine], lib.loc[t.index, theirs])
    resampled = one(tables, "Bootstrap and randomization tests").set_index("metric")
    for test in ("bootstrap", "randomization"):
        ref = metaeval.compare(
            scores, control="pred_2", treatment="pred_1", test=test, n_resamples=2000, seed=11
        ).set_index("metric")
        np.testing.assert_array_equal(
            resampled[f"{test}_p_value"], ref.loc[resampled.index, "p_value"]
        )
    assert "# seed: 11 (repeat with --seed 11); resamples: 2,000" in out


def test_compare_draws_and_prints_a_seed_that_repeats_the_run(capsys, elinor):
    files = [elinor / "pred_1.csv", elinor / "pred_2.csv"]
    _, out, _ = run_cli(capsys, "compare", *files, "--n-resamples", 500, "--print-mode", "raw")
    seed = int(out.split("# seed: ")[1].split()[0])
    _, again, _ = run_cli(
        capsys, "compare", *files, "--n-resamples", 500, "--print-mode", "raw", "--seed", seed
    )
    assert again == out


def test_compare_three_systems_matches_elinor_and_the_library(capsys, elinor):
    files = [elinor / f"pred_{i}.csv" for i in (1, 2, 3)]
    code, out, err = run_cli(
        capsys,
        "compare",
        *files,
        "--seed",
        3,
        "--n-resamples",
        1000,
        "--adjust",
        "holm",
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    tables = parse_raw(out)
    means = one(
        tables,
        "Means and 95% margins of error (moe: each system's own; anova_moe: "
        "from the ANOVA residual V_E, for comparing systems): precision@3",
    )
    assert means["system"].tolist() == ["pred_1", "pred_2", "pred_3"]
    assert (means["anova_moe"].round(4) == 0.1498).all()  # elinor's README
    # each system's own margin: scipy's t interval of its scores (issue 39, item 9)
    scores = read_per_query_csv(files)
    for row in means.itertuples():
        x = scores.query("metric == 'precision@3' and system == @row.system")["value"]
        ci = stats.ttest_1samp(x, 0).confidence_interval(0.95)
        assert row.se == pytest.approx(stats.sem(x), abs=1e-4)  # the table's 4 decimals
        assert row.moe == pytest.approx((ci.high - ci.low) / 2, abs=1e-4)
    anova = one(tables, "Two-way ANOVA (systems x queries): precision@3").set_index("source")
    assert round(anova.loc["system", "ss"], 4) == 0.3426 and anova.loc["system", "df"] == 2
    assert (
        round(anova.loc["system", "f"], 4) == 4.3898
        and round(anova.loc["system", "p_value"], 4) == 0.0331
    )

    lib_anova = metaeval.anova(scores).query("metric == 'ap'").set_index("source")
    got = one(tables, "Two-way ANOVA (systems x queries): ap").set_index("source")
    np.testing.assert_array_equal(got["f"].dropna(), lib_anova["f"].dropna())
    tukey = metaeval.tukey(scores).query("metric == 'rr'")
    es = one(tables, "Tukey HSD effect sizes (row - column) / sqrt(V_E): rr").set_index("system")
    for row in tukey.itertuples():
        assert es.loc[row.system_a, row.system_b] == row.effect_size
        assert es.loc[row.system_b, row.system_a] == -row.effect_size
    assert np.isnan(np.diag(es.to_numpy(dtype=float))).all()
    rand = metaeval.tukey(scores, randomized=True, n_resamples=1000, seed=3).query("metric == 'rr'")
    p = one(tables, "Randomized Tukey HSD p-values (B = 1,000): rr").set_index("system")
    for row in rand.itertuples():
        assert p.loc[row.system_a, row.system_b] == p.loc[row.system_b, row.system_a] == row.p_value

    from statsmodels.stats.multitest import multipletests

    pairs = one(tables, "Paired t-tests, p adjusted by holm over the pairs: ndcg@3")
    assert list(zip(pairs["system_a"], pairs["system_b"], strict=True)) == [
        ("pred_1", "pred_2"),
        ("pred_1", "pred_3"),
        ("pred_2", "pred_3"),
    ]
    np.testing.assert_allclose(
        pairs["p_adjusted"], multipletests(pairs["p_value"], method="holm")[1], rtol=1e-12
    )


def test_compare_tidy_file_with_two_tasks(capsys, tmp_path):
    scores = metaeval.load_example().query("task in ['iris', 'wine'] and metric == 'accuracy'")
    scores = scores[scores["system"].isin(["logistic_regression", "naive_bayes"])]
    write_scores(scores, tmp_path / "s.parquet")
    code, out, err = run_cli(
        capsys,
        "compare",
        tmp_path / "s.parquet",
        "--seed",
        1,
        "--n-resamples",
        200,
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    tables = parse_raw(out)
    assert one(tables, "Basic statistics")["task"].tolist() == ["iris", "wine"]
    t = one(tables, "Paired t-test").set_index("task")
    ref = metaeval.compare(
        scores, control="naive_bayes", treatment="logistic_regression"
    ).set_index("task")
    np.testing.assert_array_equal(t["p_value"], ref.loc[t.index, "p_value"])


@pytest.mark.parametrize("fmt", ["markdown", "latex", "csv"])
def test_compare_formats_for_papers(capsys, elinor, tmp_path, fmt):
    files = [elinor / f"pred_{i}.csv" for i in (1, 2, 3)]
    code, out, err = run_cli(
        capsys, "compare", *files, "--seed", 1, "--n-resamples", 200, "--format", fmt
    )
    assert code == 0, err
    if fmt == "csv":
        tables = parse_raw(out)
        assert one(tables, "Two-way ANOVA (systems x queries): precision@3")["df"].tolist()[:2] == [
            2,
            7,
        ]
    elif fmt == "markdown":
        assert "### Two-way ANOVA (systems x queries): precision@3" in out
        assert "| system | 0.3426 | 2 | 0.1713 | 4.3898 | 0.0331 |" in out
    else:
        assert r"system & 0.3426 & 2 & 0.1713 & 4.3898 & 0.0331 \\" in out
        assert out.count(r"\begin{table}") == out.count(r"\end{table}") > 10
        _compile_if_possible(out, tmp_path)


def test_compare_writes_tables_file(capsys, elinor, tmp_path):
    files = [elinor / "pred_1.csv", elinor / "pred_2.csv"]
    target = tmp_path / "tables.tex"
    code, out, err = run_cli(capsys, "compare", *files, "--seed", 1, "--tables", target)
    assert code == 0 and f"wrote the tables (latex) to {target}" in err
    assert "Paired t-test" in out  # the terminal still gets the pretty tables
    tex = target.read_text()
    assert r"\caption{Paired t-test: pred\_1 - pred\_2}" in tex
    assert r"precision@3 & 8 & 0.2917 & 0.0774 & 1.0485 & 2.9656 & 0.0209 & 0.2326 \\" in tex
    _compile_if_possible(tex, tmp_path)


def _compile_if_possible(tables: str, folder: Path) -> None:
    if shutil.which("pdflatex") is None:
        return
    doc = (
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n"
        + tables
        + "\n\\end{document}\n"
    )
    (folder / "doc.tex").write_text(doc)
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert (folder / "doc.pdf").stat().st_size > 1000


def test_compare_pretty_output(capsys, elinor):
    code, out, _ = run_cli(
        capsys,
        "compare",
        elinor / "pred_1.csv",
        elinor / "pred_2.csv",
        "--seed",
        1,
        "--n-resamples",
        100,
    )
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("precision@3") and "0.0209" in x)
    assert line.split() == [
        "precision@3",
        "8",
        "0.2917",
        "0.0774",
        "1.0485",
        "2.9656",
        "0.0209",
        "0.2326",
    ]


# -------------------------------------------------------------------- evaluate
def test_evaluate_elinor_jsonl_equals_elinor_output(capsys, elinor, tmp_path):
    target = tmp_path / "scores.csv"
    code, out, err = run_cli(
        capsys,
        "evaluate",
        "--qrels",
        elinor / "true.jsonl",
        *[x for i in (1, 2, 3) for x in ("--run", elinor / f"pred_{i}.jsonl")],
        "--measures",
        "precision@3",
        "ap",
        "rr",
        "ndcg@3",
        "--output",
        target,
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    scores = pd.read_csv(target, dtype={"query": str})
    names = {"P@3": "precision@3", "AP": "ap", "RR": "rr", "nDCG@3": "ndcg@3"}
    for i in (1, 2, 3):  # elinor-evaluate's own per-query output for these files
        theirs = pd.read_csv(elinor / f"pred_{i}.csv", index_col="query_id")
        mine = scores[scores["system"] == f"pred_{i}"].pivot(
            index="query", columns="metric", values="value"
        )
        mine = mine.rename(columns=names).loc[theirs.index, theirs.columns]
        np.testing.assert_allclose(mine.to_numpy(), theirs.to_numpy(), rtol=1e-12, atol=1e-15)
    tables = parse_raw(out)
    means = one(tables, "Means over the queries").set_index("system")
    np.testing.assert_allclose(
        means.loc["pred_1", ["P@3", "AP", "RR", "nDCG@3"]],
        pd.read_csv(elinor / "pred_1.csv").iloc[:, 1:].mean(),
        rtol=1e-12,
    )
    basic = one(tables, "Basic statistics").set_index("input")
    qrels = read_jsonl(elinor / "true.jsonl", rel_type="true")
    assert basic.loc["qrels", "pairs"] == len(qrels)
    assert basic.loc["qrels", "relevant_pairs"] == (qrels["relevance"] > 0).sum()
    assert basic.loc["qrels", "queries"] == qrels["query_id"].nunique()
    run = read_jsonl(elinor / "pred_2.jsonl")
    hits = run.merge(qrels[qrels["relevance"] > 0], on=["query_id", "doc_id"])
    assert basic.loc["pred_2", "relevant_pairs"] == len(hits)
    assert basic.loc["pred_2", "queries_with_relevant"] == hits["query_id"].nunique()


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl", ".tsv"])
def test_evaluate_trec_files_and_outputs(capsys, tmp_path, suffix):
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq3 0 d9 1\n")
    (tmp_path / "a.run").write_text("q1 Q0 d2 1 2.0 a\nq1 Q0 d1 2 1.0 a\nq2 Q0 d3 1 5.0 a\n")
    (tmp_path / "b.run").write_text("q1 Q0 d1 1 9.0 b\nq2 Q0 d4 1 1.0 b\n")
    out_file = tmp_path / f"scores{suffix}"
    code, out, err = run_cli(
        capsys,
        "evaluate",
        "--qrels",
        tmp_path / "qrels.txt",
        "--run",
        tmp_path / "a.run",
        "--run",
        f"second={tmp_path / 'b.run'}",
        "--measures",
        "P@1",
        "RR",
        "--task",
        "toy",
        "--output",
        out_file,
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    scores = metaeval.io.read_scores(out_file).set_index(["system", "query", "metric"])["value"]
    # by hand: a ranks d2 (0) then d1 (1) for q1 -> P@1 0, RR 1/2; q2: d3 relevant first; q3 unanswered
    expected = {
        ("a", "q1", "P@1"): 0,
        ("a", "q1", "RR"): 0.5,
        ("a", "q2", "P@1"): 1,
        ("a", "q2", "RR"): 1,
        ("a", "q3", "P@1"): 0,
        ("a", "q3", "RR"): 0,
        ("second", "q1", "P@1"): 1,
        ("second", "q1", "RR"): 1,
        ("second", "q2", "P@1"): 0,
        ("second", "q2", "RR"): 0,
    }
    for key, value in expected.items():
        assert scores[key] == value, key
    means = one(parse_raw(out), "Means over the queries (toy)").set_index("system")
    assert means.loc["a", "RR"] == pytest.approx((0.5 + 1 + 0) / 3, rel=1e-15)
    assert means.loc["second", "P@1"] == pytest.approx(1 / 3, rel=1e-15)


# --------------------------------------------------------------------- convert
def test_convert_round_trip(capsys, tmp_path, elinor):
    code, _, _ = run_cli(
        capsys,
        "convert",
        elinor / "pred_1.jsonl",
        tmp_path / "p1.run",
        "--rel-type",
        "pred",
        "--tag",
        "x",
    )
    assert code == 0
    run = read_run(tmp_path / "p1.run")
    assert {line.split()[5] for line in (tmp_path / "p1.run").read_text().splitlines()} == {"x"}
    original = read_jsonl(elinor / "pred_1.jsonl")
    merged = original.merge(run, on=["query_id", "doc_id"], suffixes=("", "_trec"))
    assert len(merged) == len(original) == len(run)
    np.testing.assert_array_equal(merged["score"], merged["score_trec"])
    code, _, _ = run_cli(
        capsys, "convert", elinor / "true.jsonl", tmp_path / "qrels.txt", "--rel-type", "true"
    )
    assert code == 0
    code, _, _ = run_cli(
        capsys, "convert", tmp_path / "qrels.txt", tmp_path / "back.jsonl", "--rel-type", "true"
    )
    assert code == 0
    pd.testing.assert_frame_equal(
        read_jsonl(tmp_path / "back.jsonl", rel_type="true"),
        read_jsonl(elinor / "true.jsonl", rel_type="true"),
    )
    assert len(read_qrels(tmp_path / "qrels.txt")) == len(
        read_jsonl(elinor / "true.jsonl", rel_type="true")
    )


def test_convert_usage_errors(capsys, tmp_path):
    (tmp_path / "a.txt").write_text("q1 0 d1 1\n")
    code, _, err = run_cli(
        capsys, "convert", tmp_path / "a.txt", tmp_path / "b.txt", "--rel-type", "true"
    )
    assert code == 2 and "both TREC files" in err
    with pytest.raises(SystemExit) as stop:
        main(["convert", str(tmp_path / "a.txt"), str(tmp_path / "a.jsonl")])  # --rel-type missing
    assert stop.value.code == 2


# ------------------------------------------------------------------------ meta
@pytest.fixture
def example_file(tmp_path) -> tuple[pd.DataFrame, Path]:
    scores = metaeval.load_example()
    scores = scores.assign(
        domain=scores["task"].map({"iris": "small", "wine": "small"}).fillna("large")
    )
    path = tmp_path / "scores.csv"
    write_scores(scores, path)
    return scores, path


def test_meta_prints_the_library_analysis(capsys, example_file, tmp_path):
    scores, path = example_file
    # no --effect/--method/--ci: the command's defaults are the library's
    code, out, err = run_cli(
        capsys,
        "meta",
        path,
        "--control",
        "logistic_regression",
        "--treatment",
        "naive_bayes",
        "gradient_boosting",
        "--by",
        "domain",
        "--print-mode",
        "raw",
        "--plot",
        tmp_path / "forest.png",
        "--latex",
        tmp_path / "t.tex",
    )
    assert code == 0, err
    tables = parse_raw(out)
    kw = dict(control="logistic_regression", treatment=["naive_bayes", "gradient_boosting"])
    ref = metaeval.analyze(scores, **kw)
    for metric in ("accuracy", "p_true_class"):
        got = one(tables, f"Effects per task and summary: {metric}")
        want = ref[ref["metric"] == metric].reset_index(drop=True)
        assert got["task"].tolist() == want["task"].tolist()
        for column in ("effect", "se", "ci_low", "ci_high", "p_value", "weight"):
            np.testing.assert_array_equal(got[column], want[column], err_msg=column)
    effects = metaeval.effects(scores, **kw)
    pooled = metaeval.pool(effects)
    het = one(tables, "Heterogeneity of the summaries")
    np.testing.assert_array_equal(het["tau2"], pooled["tau2"])
    np.testing.assert_array_equal(het["q_p_value"], pooled["q_p_value"])
    sub = one(tables, "Summaries by domain")
    by = metaeval.pool(effects, by="domain")
    np.testing.assert_array_equal(sub["effect"], by["effect"])
    assert sorted(set(sub["domain"])) == ["large", "small"] and (sub["k"] == 2).all()
    for metric in ("accuracy", "p_true_class"):  # one figure per metric
        assert (tmp_path / f"forest-{metric}.png").stat().st_size > 10_000
    from metaeval.report import to_latex

    assert (
        (tmp_path / "t.tex")
        .read_text()
        .startswith(to_latex(effects, pooled=pooled).split("\\caption")[0])
    )
    assert "% " not in out and "# wrote" in out


def test_meta_on_a_ranger_config(capsys, shared_data):
    config = shared_data / "ranger" / "classification-glue-data" / "config.yaml"
    code, out, err = run_cli(
        capsys,
        "meta",
        config,
        "--control",
        "bert",
        "--ranger-metric",
        "accuracy",
        "--ranger",
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    got = one(parse_raw(out), "Effects per task and summary: accuracy").set_index("task")
    # Ranger paper, Table (GLUE, SMD, DL): summary -0.054860 [-0.078603, -0.031118]
    assert got.loc["summary", "effect"] == pytest.approx(-0.054860, abs=2e-6)
    scores = metaeval.io.read_ranger(config, metric="accuracy")
    ref = metaeval.analyze(scores, control="bert", **metaeval.RANGER).set_index("task")
    np.testing.assert_array_equal(got["effect"], ref.loc[got.index, "effect"])


def test_meta_usage_errors(capsys, example_file):
    _, path = example_file
    for argv, message in [
        (["--control", "nope"], "--control 'nope' is not a system of"),
        (["--control", "naive_bayes", "--metric", "f1"], "--metric ['f1'] not in"),
        (["--control", "naive_bayes", "--by", "nope"], "--by 'nope' is not a column"),
        (["--control", "naive_bayes", "--ranger-metric", "x"], "--ranger-metric is for a Ranger"),
    ]:
        code, _, err = run_cli(capsys, "meta", path, *argv)
        assert code == 2 and message in err, (argv, err)
        assert "Traceback" not in err


def test_meta_on_a_folder_of_parquet_files_prints_what_it_prints_for_one_file(
    capsys, example_file, tmp_path
):
    pytest.importorskip("dask.dataframe")
    scores, path = example_file
    folder = tmp_path / "by-task"
    folder.mkdir()
    for task, part in scores.groupby("task"):
        write_scores(part, folder / f"{task}.parquet")
    argv = ["--control", "knn", "--by", "domain", "--metric", "accuracy", "--print-mode", "raw"]
    code, want, err = run_cli(capsys, "meta", path, *argv)
    assert code == 0, err
    for source in (folder, folder / "*.parquet"):  # read with dask, a partition per file
        code, out, err = run_cli(capsys, "meta", source, *argv, "--progress")
        assert code == 0, err
        assert out.replace(str(source), "X") == want.replace(str(path), "X")
        assert "100% Completed" in err  # dask's progress bar, on stderr
    code, _, err = run_cli(capsys, "meta", folder, "--control", "nope")
    assert code == 2 and "--control 'nope' is not a system of" in err


# ---------------------------------------------------------------- data errors
def test_bad_files_give_exit_code_1_with_file_and_line(capsys, tmp_path, elinor):
    bad_csv = tmp_path / "pred_x.csv"
    bad_csv.write_text("query_id,ap\nq1,0.5\nq2,oops\n")
    code, _, err = run_cli(capsys, "compare", elinor / "pred_1.csv", bad_csv)
    assert code == 1 and f"{bad_csv}, line 3: ap='oops' is not a number" in err

    tidy = tmp_path / "scores.tsv"
    tidy.write_text("task\tquery\tsystem\tmetric\tvalue\nt\tq1\ta\tm\t1\nt\tq1\tb\tm\tx\n")
    code, _, err = run_cli(capsys, "meta", tidy, "--control", "a")
    assert code == 1 and f"{tidy}, line 3: value 'x' is not a number" in err

    run = tmp_path / "bad.run"
    run.write_text("q1 Q0 d1 1 1.0 r\nq1 Q0 d2 2 high r\n")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    code, _, err = run_cli(
        capsys, "evaluate", "--qrels", tmp_path / "qrels.txt", "--run", run, "--measures", "AP"
    )
    assert code == 1 and f"{run}, line 2" in err

    jsonl = tmp_path / "true.jsonl"
    jsonl.write_text('{"query_id": "q1", "doc_id": "d1", "score": 1}\n{"query_id": "q1"}\n')
    code, _, err = run_cli(capsys, "evaluate", "--qrels", jsonl, "--run", run, "--measures", "AP")
    assert code == 1 and f"{jsonl}, line 2: bad record" in err

    code, _, err = run_cli(capsys, "meta", tmp_path / "absent.csv", "--control", "a")
    assert code == 1 and "absent.csv: no such file" in err

    (tmp_path / "good.run").write_text("q1 Q0 d1 1 1.0 r\n")
    code, _, err = run_cli(
        capsys,
        "evaluate",
        "--qrels",
        tmp_path / "qrels.txt",
        "--run",
        tmp_path / "good.run",
        "--measures",
        "NotAMeasure",
    )
    assert code == 2 and "'NotAMeasure' is not a measure name metaeval knows" in err


def test_console_script_exit_codes_without_traceback(tmp_path):
    bad = tmp_path / "scores.csv"
    bad.write_text("task,query,system,metric,value\nt,q,a,m,1\nt,q,a,m,2\n")
    for argv, code in [
        (["meta", str(bad), "--control", "a"], 1),
        (["meta", str(bad), "--method", "XX", "--control", "a"], 2),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "metaeval", *argv], capture_output=True, text=True, check=False
        )
        assert done.returncode == code, done.stderr
        assert "Traceback" not in done.stderr and done.stderr.strip()
    err = subprocess.run(
        [sys.executable, "-m", "metaeval", "meta", str(bad), "--control", "a"],
        capture_output=True,
        text=True,
        check=False,
    ).stderr
    # the repeated key names the line of the repeat and of the first occurrence
    assert (
        f"{bad}, line 3: the key (task, query, system, metric) = ('t', 'q', 'a', 'm') appears twice (first on line 2)"
        in err
    )


def test_library_warnings_are_printed_once_without_traceback(capsys, elinor, tmp_path):
    short = tmp_path / "short.csv"
    short.write_text("".join((elinor / "pred_2.csv").read_text().splitlines(keepends=True)[:6]))
    code, out, err = run_cli(
        capsys,
        "compare",
        elinor / "pred_1.csv",
        short,
        "--metrics",
        "ap",
        "--seed",
        1,
        "--n-resamples",
        100,
        "--print-mode",
        "raw",
    )
    assert code == 0
    assert err.count("metaeval: warning: Queries present for only one system") == 1
    assert "unpaired_queries=3" in err and "Traceback" not in err and "warnings.warn" not in err
    t = one(parse_raw(out), "Paired t-test")
    assert t["n"].tolist() == [5]


def _collections(tmp_path: Path) -> dict[str, str]:
    """Three small collections: qrels/<task>.txt and runs/<system>/<task>.trec."""
    rng = np.random.default_rng(3)
    tasks = {}
    for task in ("scifact", "nfcorpus", "fiqa"):
        lines = [f"q{q} 0 d{d} {int(rng.integers(0, 3))}" for q in range(6) for d in range(5)]
        (tmp_path / "qrels").mkdir(exist_ok=True)
        path = tmp_path / "qrels" / f"{task}.txt"
        path.write_text("\n".join(lines) + "\n")
        tasks[task] = str(path)
        for system in ("bm25", "tasb"):
            folder = tmp_path / "runs" / system
            folder.mkdir(parents=True, exist_ok=True)
            run = [
                f"q{q} Q0 d{d} {r + 1} {10 - r + rng.random():.4f} {system}"
                for q in range(6)
                for r, d in enumerate(rng.permutation(5))
            ]
            (folder / f"{task}.trec").write_text("\n".join(run) + "\n")
    return tasks


def test_evaluate_several_collections_in_one_call(capsys, tmp_path):
    tasks = _collections(tmp_path)
    out_file = tmp_path / "scores.parquet"
    argv = [a for task, path in tasks.items() for a in ("--qrels", f"{task}={path}")]
    code, out, err = run_cli(
        capsys,
        "evaluate",
        *argv,
        "--run",
        f"bm25={tmp_path}/runs/bm25/{{task}}.trec",
        "--run",
        f"tasb={tmp_path}/runs/tasb/{{task}}.trec",
        "--measures",
        "ndcg@10",
        "map",
        "--output",
        out_file,
    )
    assert code == 0, err
    cli = metaeval.io.read_scores(out_file)
    runs = {s: {t: tmp_path / "runs" / s / f"{t}.trec" for t in tasks} for s in ("bm25", "tasb")}
    python = metaeval.ir.evaluate(tasks, runs, ["nDCG@10", "AP"])
    key = ["task", "query", "system", "metric"]
    pd.testing.assert_frame_equal(
        cli.sort_values(key).reset_index(drop=True), python.sort_values(key).reset_index(drop=True)
    )
    assert (
        set(cli["task"]) == set(tasks) and "Means over the queries (scifact, nfcorpus, fiqa)" in out
    )
    # a run without {task}, --task with several collections: usage errors naming the fix
    code, _, err = run_cli(
        capsys,
        "evaluate",
        *argv,
        "--run",
        f"bm25={tmp_path}/runs/bm25/fiqa.trec",
        "--measures",
        "AP",
    )
    assert code == 2 and "{task}" in err
    code, _, err = run_cli(
        capsys,
        "evaluate",
        *argv,
        "--run",
        f"b={tmp_path}/runs/bm25/{{task}}.trec",
        "--measures",
        "AP",
        "--task",
        "x",
    )
    assert code == 2 and "--qrels TASK=FILE" in err


def test_evaluate_ranger_beir_data_in_one_call(capsys, shared_data, tmp_path):
    root = shared_data / "ranger" / "retrieval-colberter-data"
    tasks = ["trec-covid", "nfcorpus", "antique", "dbpedia-entity", "tripclick", "trec_podcast"]
    argv = [a for t in tasks for a in ("--qrels", f"{t}={root}/qrels/{t}_qrels.txt")]
    out_file = tmp_path / "beir.csv"
    code, _, err = run_cli(
        capsys,
        "evaluate",
        *argv,
        "--run",
        f"tasb={root}/tasb_dim768_hf/{{task}}_top10.txt",
        "--run",
        f"colberter={root}/colberter_dim1_stopwords/{{task}}_top10.txt",
        "--measures",
        "nDCG@10",
        "--output",
        out_file,
    )
    assert code == 0, err
    cli = metaeval.io.read_scores(out_file)
    qrels = {t: root / "qrels" / f"{t}_qrels.txt" for t in tasks}
    runs = {
        "tasb": {t: root / "tasb_dim768_hf" / f"{t}_top10.txt" for t in tasks},
        "colberter": {t: root / "colberter_dim1_stopwords" / f"{t}_top10.txt" for t in tasks},
    }
    with pytest.warns(metaeval.PairingWarning, match="tripclick"):  # unjudged queries left out
        python = metaeval.ir.evaluate(qrels, runs, ["nDCG@10"])
    key = ["task", "query", "system", "metric"]
    pd.testing.assert_frame_equal(
        cli.sort_values(key).reset_index(drop=True), python.sort_values(key).reset_index(drop=True)
    )
    assert cli["task"].nunique() == 6


def test_meta_latex_is_the_python_table_and_fits(capsys, tmp_path):
    scores = metaeval.load_example().query("metric == 'accuracy'")
    path = tmp_path / "scores.csv"
    write_scores(scores, path)
    effects = scores.meta.effects(control="naive_bayes")
    pooled = effects.meta.pool()
    # 4 treatments x (4 tasks + pooled): by default the orientation with fewer columns
    for extra, kwargs in (
        ([], {"transpose": True}),
        (["--no-transpose"], {}),
        (["--transpose"], {"transpose": True}),
        (["--no-fit"], {"fit": False, "transpose": True}),
    ):
        tex = tmp_path / "t.tex"
        code, _, err = run_cli(
            capsys, "meta", path, "--control", "naive_bayes", "--latex", tex, *extra
        )
        assert code == 0, err
        assert tex.read_text() == metaeval.report.to_latex(effects, pooled=pooled, **kwargs)
    assert r"\resizebox" in metaeval.report.to_latex(effects, pooled=pooled)
    code, _, err = run_cli(capsys, "meta", path, "--control", "naive_bayes", "--transpose")
    assert code == 2 and "--latex" in err


def test_console_output_to_an_unknown_suffix_is_an_option_error(tmp_path):
    """The table writer's own check (reached from Python, not only through the command's
    earlier one) raises OptionError, not ModuleNotFoundError (issue 25, item 8)."""
    from metaeval_cli._console import Output

    out = Output("raw")
    with pytest.raises(metaeval.OptionError, match=r"t\.weird.*--format"):
        out.write(str(tmp_path / "t.weird"))


def test_compare_against_a_control_prints_one_compact_table(capsys, tmp_path):
    """issue 25, item 9: --control/--treatment/--test/--adjust; a row per (task, treatment)
    instead of elinor's four tables per task and metric; --tables keeps elinor's layout."""
    from scipy import stats

    scores = metaeval.load_example().query("metric == 'accuracy'")
    write_scores(scores, tmp_path / "s.parquet")
    control, treatments = "logistic_regression", ["knn", "naive_bayes"]
    code, out, err = run_cli(
        capsys,
        "compare",
        tmp_path / "s.parquet",
        "--control",
        control,
        "--treatment",
        *treatments,
        "--adjust",
        "holm",
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    ((title, table),) = parse_raw(out).items()
    assert title == "accuracy: treatment - control (logistic_regression), t test"
    tasks = list(pd.unique(scores["task"]))
    assert table["task"].tolist() == [t for t in tasks for _ in treatments]  # the scores' order
    assert table["treatment"].tolist() == treatments * len(tasks)
    # a note, a title, a header and the rows: elinor's layout prints 178 lines for this input
    assert len(out.splitlines()) <= len(tasks) * len(treatments) + 4
    wide = scores.pivot_table(index=["task", "query"], columns="system", values="value")
    for row in table.itertuples():
        part = wide.loc[row.task]
        ref = stats.ttest_rel(part[row.treatment], part[control])
        assert row.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)
        assert row.diff == pytest.approx((part[row.treatment] - part[control]).mean())
        ci = ref.confidence_interval(0.95)
        assert (row.ci_low, row.ci_high) == pytest.approx((ci.low, ci.high))
        ps = [stats.ttest_rel(part[t], part[control]).pvalue for t in treatments]
        holm = sorted(ps)[0] * 2, max(sorted(ps)[0] * 2, sorted(ps)[1])
        assert row.p_adjusted == pytest.approx(
            min(1.0, holm[sorted(ps).index(ps[treatments.index(row.treatment)])]), rel=1e-9
        )
    # another test, and the tables file with elinor's layout plus the compact table
    target = tmp_path / "tables.md"
    code, out, err = run_cli(
        capsys,
        "compare",
        tmp_path / "s.parquet",
        "--control",
        control,
        "--test",
        "wilcoxon",
        "--tables",
        target,
        "--print-mode",
        "raw",
        "--seed",
        2,
        "--n-resamples",
        200,
    )
    assert code == 0, err
    (table,) = parse_raw(out).values()
    assert set(table["treatment"]) == set(pd.unique(scores["system"])) - {control}
    iris = wide.loc["iris"]
    row = table[(table.task == "iris") & (table.treatment == "naive_bayes")].iloc[0]
    ref = (
        stats.wilcoxon(iris["naive_bayes"], iris[control]).pvalue
        if (iris["naive_bayes"] != iris[control]).any()
        else np.nan
    )
    assert row.p_value == pytest.approx(ref, nan_ok=True)
    text = target.read_text()
    assert "Randomized Tukey HSD p-values" in text and "wilcoxon test" in text
    # --test without --control, and an unknown system, are usage errors
    code, _, err = run_cli(capsys, "compare", tmp_path / "s.parquet", "--test", "sign")
    assert code == 2 and "add --control NAME" in err
    code, _, err = run_cli(capsys, "compare", tmp_path / "s.parquet", "--control", "bm25")
    assert code == 2 and "'bm25'" in err


def test_meta_says_when_a_figure_or_table_is_too_large_to_read(capsys, tmp_path):
    """issue 25, item 10: past the documented sizes the command warns and names the ways
    out; --plot-per-treatment writes one forest file per treatment."""
    from metaeval_cli.meta import FOREST_PANELS, LATEX_COLUMNS

    rng = np.random.default_rng(7)
    systems = [f"s{i}" for i in range(FOREST_PANELS + 2)]
    tasks = [f"t{i}" for i in range(LATEX_COLUMNS + 1)]
    rows = [
        (t, f"q{q}", s, "nDCG@10", rng.normal(0.5, 0.1))
        for t in tasks
        for q in range(8)
        for s in ["base", *systems]
    ]
    frame = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])
    write_scores(frame, tmp_path / "s.parquet")
    code, _, err = run_cli(
        capsys,
        "meta",
        tmp_path / "s.parquet",
        "--control",
        "base",
        "--plot",
        tmp_path / "f.png",
        "--latex",
        tmp_path / "t.tex",
        "--no-transpose",
    )
    assert code == 0, err
    assert f"{FOREST_PANELS + 2} treatment panel(s) x {len(tasks)} tasks" in err
    assert "px" in err and "--plot-per-treatment" in err
    spec = re.search(r"\\begin\{tabular\}\{l(r+)\}", (tmp_path / "t.tex").read_text())
    assert spec is not None and len(spec.group(1)) == len(tasks) + 1  # + Pooled
    assert f"the table has {len(tasks) + 1} columns of cells" in err and "--transpose" in err
    code, _, err = run_cli(
        capsys,
        "meta",
        tmp_path / "s.parquet",
        "--control",
        "base",
        "--treatment",
        "s0",
        "s1",
        "--plot",
        tmp_path / "g.pdf",
        "--plot-per-treatment",
        "--latex",
        tmp_path / "u.tex",
        "--transpose",
    )
    assert code == 0, err
    assert "warning" not in err
    assert sorted(p.name for p in tmp_path.glob("g-*.pdf")) == ["g-s0.pdf", "g-s1.pdf"]
    code, _, err = run_cli(
        capsys, "meta", tmp_path / "s.parquet", "--control", "base", "--plot-per-treatment"
    )
    assert code == 2 and "add --plot FILE" in err


@pytest.mark.parametrize("command", ["demo", "evaluate", "compare", "convert", "meta"])
def test_help_gives_every_option_a_text_and_each_default_once(capsys, command):
    """issue 25, item 14: `evaluate --help` printed "(default: default) (default: None)" and
    options without a word of help."""
    import argparse

    parser = metaeval_cli.build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    silent = [a.option_strings or [a.dest] for a in sub.choices[command]._actions if not a.help]
    assert not silent
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())  # help wraps lines
    assert "(default: None)" not in text and "(default: False)" not in text
    assert not re.search(r"\(default: [^)]*\) \(default:", text)


def test_tables_show_input_paths_without_the_machines_tree(capsys, elinor, tmp_path, monkeypatch):
    """issue 25, item 14: the basic statistics printed absolute paths."""
    files = [str((elinor / f"pred_{i}.csv").resolve()) for i in (1, 2)]
    code, out, err = run_cli(
        capsys, "compare", *files, "--seed", 1, "--n-resamples", 100, "--print-mode", "raw"
    )
    assert code == 0, err
    shown = one(parse_raw(out), "Systems")["file"].tolist()
    assert shown == ["…/elinor-sample/pred_1.csv", "…/elinor-sample/pred_2.csv"]
    monkeypatch.chdir(elinor.parent)  # below the working folder: relative to it
    code, out, err = run_cli(
        capsys,
        "evaluate",
        "--qrels",
        str((elinor / "true.jsonl").resolve()),
        "--run",
        f"a={files[0].replace('.csv', '.jsonl')}",
        "--measures",
        "ap",
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    assert one(parse_raw(out), "Basic statistics")["file"].tolist() == [
        "elinor-sample/true.jsonl",
        "elinor-sample/pred_1.jsonl",
    ]

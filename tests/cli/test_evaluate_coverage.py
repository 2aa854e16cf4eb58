"""`metaeval evaluate` and judged queries a run does not return: --missing, --min-coverage,
and the statistics columns judged_missing and coverage."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import parse_raw

from metaeval import io as mio
from metaeval_cli import main

ir_measures = pytest.importorskip("ir_measures")

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq3 0 d4 1\nq4 0 d5 1\n"
SHORT = "q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\nq2 Q0 d9 1 2.0 a\nq2 Q0 d3 2 1.0 a\nq3 Q0 d4 1 1.0 a\n"
FULL = "q1 Q0 d2 1 2.0 b\nq2 Q0 d3 1 2.0 b\nq3 Q0 d7 1 1.0 b\nq4 Q0 d5 1 1.0 b\n"


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def files(tmp_path):
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "short.run").write_text(SHORT)
    (tmp_path / "full.run").write_text(FULL)
    return tmp_path


def _argv(d, *more):
    return [
        "evaluate",
        "--qrels",
        d / "qrels.txt",
        "--run",
        d / "short.run",
        "--run",
        d / "full.run",
        "--measures",
        "RR",
        "--print-mode",
        "raw",
        *more,
    ]


def _rr(d, name: str) -> dict[str, float]:
    """ir_measures' RR of the queries the run returned."""
    run = mio.read_run(d / name)
    returned = set(run["query_id"])
    values = ir_measures.iter_calc([ir_measures.RR], mio.read_qrels(d / "qrels.txt"), run)
    return {m.query_id: m.value for m in values if m.query_id in returned}


def test_statistics_count_the_judged_queries_a_run_lacks(capsys, files):
    code, out, err = run_cli(capsys, *_argv(files))
    assert code == 0, err
    basic = parse_raw(out)["Basic statistics"].set_index("input")
    judged = set(mio.read_qrels(files / "qrels.txt")["query_id"])
    for name in ("short", "full"):
        lacking = len(judged - set(mio.read_run(files / f"{name}.run")["query_id"]))
        assert basic.loc[name, "judged_missing"] == lacking  # short: q4; full: none
        assert basic.loc[name, "coverage"] == 1 - lacking / len(judged)
    assert basic.loc["short", "judged_missing"] == 1 and basic.loc["full", "coverage"] == 1.0
    assert basic.loc[["qrels"], ["judged_missing", "coverage"]].isna().all(axis=None)
    assert (
        "metaeval: warning: Judged queries a run did not return score 0 (missing='zero', as "
        "trec_eval -c) in 1 run(s)" in err
    )
    assert "task='default', system='short', missing=1, judged=4, coverage=0.75" in err
    means = parse_raw(out)["Means over the queries (default)"].set_index("system")["RR"]
    short = _rr(files, "short.run")
    assert means["short"] == pytest.approx(sum(short.values()) / 4, rel=1e-15)  # q4 scores 0
    assert means["full"] == pytest.approx(np.mean(list(_rr(files, "full.run").values())))

    code, out, err = run_cli(capsys, *_argv(files, "--missing", "drop"))
    assert code == 0, err
    assert "were left out (missing='drop') in 1 run(s)" in err
    means = parse_raw(out)["Means over the queries (default)"].set_index("system")["RR"]
    assert means["short"] == pytest.approx(np.mean(list(short.values())), rel=1e-15)


def test_missing_error_and_min_coverage_name_the_run_file(capsys, files):
    code, out, err = run_cli(capsys, *_argv(files, "--missing", "error"))
    assert code == 1 and out == ""
    assert err == (
        "metaeval evaluate: error: 1 run(s) do not return every judged query, which --missing "
        f"error refuses:\n  run 'short' ({files / 'short.run'}): lacks 1 judged queries "
        "(coverage 75.0%)\nPass --missing zero to score them 0 (as trec_eval -c) or --missing "
        "drop to leave them out.\n"
    )
    for how in ("zero", "drop", "error"):  # below the floor whatever --missing says
        code, out, err = run_cli(capsys, *_argv(files, "--missing", how, "--min-coverage", "0.8"))
        assert code == 1 and out == ""
        assert "1 run(s) return less than --min-coverage 0.8 of the judged queries:\n" in err
        assert (
            f"run 'short' ({files / 'short.run'}): lacks 1 judged queries (coverage 75.0%)" in err
        )
        assert "lower --min-coverage (0 turns the check off)" in err
    code, _, err = run_cli(capsys, *_argv(files, "--min-coverage", "0.75"))  # at the floor: fine
    assert code == 0, err
    for option, value, problem in (
        ("--min-coverage", "1.5", "1.5 is not between 0 and 1"),
        ("--min-coverage", "half", "'half' is not a number"),
        ("--missing", "ignore", "invalid choice: 'ignore'"),
    ):
        with pytest.raises(SystemExit) as stop:
            main([str(a) for a in _argv(files, option, value)])
        assert stop.value.code == 2
        assert f"argument {option}: {problem}" in capsys.readouterr().err


def test_a_run_of_another_collection_is_refused(capsys, shared_data):
    beir = shared_data / "ranger" / "retrieval-colberter-data"
    run = beir / "tasb_dim768_hf" / "trec-covid_top10.txt"
    argv = [
        "evaluate",
        "--qrels",
        beir / "qrels" / "tripclick_qrels.txt",
        "--run",
        f"tasb={run}",
        "--measures",
        "nDCG@10",
        "--print-mode",
        "raw",
    ]
    code, out, err = run_cli(capsys, *argv)
    assert code == 1 and out == ""
    assert f"run 'tasb' ({run}): lacks 1,141 judged queries (coverage 0.2%)" in err
    code, out, err = run_cli(capsys, *argv, "--min-coverage", "0")
    assert code == 0, err
    basic = parse_raw(out)["Basic statistics"].set_index("input")
    assert basic.loc["tasb", "judged_missing"] == 1141
    assert basic.loc["tasb", "coverage"] == pytest.approx(2 / 1143, rel=1e-12)


def test_trec_covid_run_truncated_to_half_its_queries(capsys, shared_data, tmp_path):
    beir = shared_data / "ranger" / "retrieval-colberter-data"
    qrels = mio.read_qrels(beir / "qrels" / "trec-covid_qrels.txt")
    run = mio.read_run(beir / "tasb_dim768_hf" / "trec-covid_top10.txt")
    half = run[run["query_id"].isin([str(i) for i in range(1, 26)])]
    mio.write_run(half, tmp_path / "half.run")
    ndcg = ir_measures.nDCG @ 10
    ref = {
        m.query_id: m.value
        for m in ir_measures.iter_calc([ndcg], qrels, half)
        if m.query_id in set(half["query_id"])
    }
    assert len(ref) == 25
    argv = [
        "evaluate",
        "--qrels",
        beir / "qrels" / "trec-covid_qrels.txt",
        "--run",
        tmp_path / "half.run",
        "--measures",
        "nDCG@10",
        "--print-mode",
        "raw",
    ]
    expected = {"zero": sum(ref.values()) / 50, "drop": np.mean(list(ref.values()))}
    for how, value in expected.items():  # 0.1970 and 0.3939
        code, out, err = run_cli(capsys, *argv, "--missing", how)
        assert code == 0, err
        assert "system='half', missing=25, judged=50, coverage=0.5" in err
        tables = parse_raw(out)
        assert tables["Means over the queries (default)"]["nDCG@10"].item() == pytest.approx(
            value, rel=1e-12
        )
        basic = tables["Basic statistics"].set_index("input")
        assert basic.loc["half", ["judged_missing", "coverage"]].tolist() == [25, 0.5]

"""``metaeval report`` (issue 30, item 3): the file it writes is the library's report of the
same scores, in the format of the output's suffix."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import metaeval
from metaeval.workflows import build_report
from metaeval_cli import main

EXAMPLE = Path(metaeval.__file__).parent / "datasets" / "example.csv.gz"
CONTROL = "logistic_regression"
ARGS = ["--metric", "accuracy", "--n-resamples", "40", "--seed", "2"]


def _expected(**kw) -> metaeval.Report:
    scores = metaeval.load_example()
    return build_report(scores, metrics="accuracy", n_resamples=40, seed=2, **kw)


def test_json_and_html_are_the_librarys_report(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["report", str(EXAMPLE), "--control", CONTROL, *ARGS, "-o", str(out)]) == 0
    # the command resolves the default interval to Knapp-Hartung, as `metaeval meta` does
    expected = _expected(control=CONTROL, pool_test="knha").to_json()
    assert json.loads(out.read_text()) == json.loads(expected)
    page = tmp_path / "r.html"
    code = main(
        ["report", str(EXAMPLE), "--control", CONTROL, "--adjust", "none", *ARGS, "-o", str(page)]
    )
    assert code == 0
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and 'id="fig-forest-0"' in html
    assert "not adjusted" in html
    assert "report:" in capsys.readouterr().out


def test_without_output_markdown_is_printed_and_without_control_ranks_only(capsys):
    assert main(["report", str(EXAMPLE), *ARGS]) == 0
    out = capsys.readouterr().out
    assert out.strip() == _expected(control=None).to_markdown().strip()
    assert "## Ranks" in out and "## Tests" not in out


@pytest.mark.parametrize("bad", ["r.pdf", "missing/r.html"])
def test_an_output_it_cannot_write_is_a_usage_error(tmp_path, capsys, bad):
    code = main(["report", str(EXAMPLE), "-o", str(tmp_path / bad), *ARGS])
    assert code == 2
    assert "--output" in capsys.readouterr().err


def test_cluster_reaches_the_report(tmp_path):
    """``--cluster passage``: the report's numbers are the clustered ones (issue 39, item 10)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
    from test_build_report import clustered_scores

    scores = clustered_scores()
    path = tmp_path / "scores.csv"
    scores.to_csv(path, index=False)
    out = tmp_path / "r.json"
    args = ["--n-resamples", "40", "--seed", "2"]
    assert (
        main(["report", str(path), "--control", "A", "--cluster", "passage", *args, "-o", str(out)])
        == 0
    )
    got = json.loads(out.read_text())
    expected = build_report(
        scores, "A", cluster="passage", pool_test="knha", n_resamples=40, seed=2
    )
    want = json.loads(expected.to_json())
    assert got["options"] == want["options"] and got["methods"] == want["methods"]
    for part in ("table", "tests", "pooled", "ranks"):  # read back from the CSV:
        pd.testing.assert_frame_equal(  # the sums differ in the last bits
            pd.DataFrame(got[part]), pd.DataFrame(want[part]), check_exact=False, rtol=1e-12
        )
    assert got["options"]["cluster"] == "passage" and "clustered by passage" in got["methods"]
    plain = build_report(scores, "A", pool_test="knha", n_resamples=40, seed=2)
    assert got["tests"][0]["se"] == pytest.approx(expected.tests["se"].iloc[0], rel=1e-12)
    assert got["tests"][0]["se"] > 1.5 * plain.tests["se"].iloc[0]


def test_a_table_of_labels_gets_the_judge_section(tmp_path, capsys):
    """--judge names whose labels score the systems, --gold the truth; the file is the
    library's report of the same labels (issue 41, item 4)."""
    from _helpers import judged_labels

    labels = judged_labels()
    path = tmp_path / "labels.csv"
    labels.to_csv(path, index=False)
    out = tmp_path / "r.json"
    args = [
        "report",
        str(path),
        "--control",
        "small",
        "--family",
        "tasks",
        "--cluster",
        "passage",
        "--n-resamples",
        "40",
        "--seed",
        "2",
    ]
    assert main([*args, "--judge", "gpt", "--gold", "human", "-o", str(out)]) == 0
    expected = build_report(
        metaeval.io.read_scores(path),
        "small",
        family="tasks",
        cluster="passage",
        n_resamples=40,
        seed=2,
        pool_test="knha",
        gold="human",
        judge="gpt",
    )
    assert json.loads(out.read_text()) == json.loads(expected.to_json())
    assert len(expected.ppi) == 6 and expected.agreement is not None
    capsys.readouterr()
    assert main([*args, "-o", str(out)]) == 2  # several judges: which one scores?
    assert "--judge names the one whose labels score the systems" in capsys.readouterr().err
    assert main(["report", str(EXAMPLE), *ARGS, "--gold", "human"]) == 2
    assert "need a table of labels with a 'judge' column" in capsys.readouterr().err
    assert main([*args, "--judge", "gtp"]) == 2
    assert "'gtp' is not a judge" in capsys.readouterr().err

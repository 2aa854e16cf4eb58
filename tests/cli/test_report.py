"""``metaeval report`` (issue 30, item 3): the file it writes is the library's report of the
same scores, in the format of the output's suffix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import metaeval
from metaeval.report import build_report
from metaeval_cli import main

EXAMPLE = Path(metaeval.__file__).parent / "datasets" / "example.csv.gz"
CONTROL = "logistic_regression"
ARGS = ["--metric", "accuracy", "--n-resamples", "40", "--seed", "2"]


def _expected(**kw) -> metaeval.report.Report:
    scores = metaeval.load_example()
    return build_report(scores, metrics="accuracy", n_resamples=40, seed=2, **kw)


def test_json_and_html_are_the_librarys_report(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["report", str(EXAMPLE), "--control", CONTROL, *ARGS, "-o", str(out)]) == 0
    # the command resolves the default interval to Knapp-Hartung, as `metaeval meta` does
    expected = _expected(control=CONTROL, ci="knha").to_json()
    assert json.loads(out.read_text()) == json.loads(expected)
    page = tmp_path / "r.html"
    code = main(["report", str(EXAMPLE), "--control", CONTROL, "--adjust", "none", *ARGS,
                 "-o", str(page)])  # fmt: skip
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

"""build_report()'s judge section (issue 41, item 4): a table of labels gets the judges'
agreement, their errors against gold, and the judge-only, gold-only and PPI++ estimates
side by side; the other tables use one judge's labels; every format shows the section."""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
import subprocess

import pandas as pd
import pytest
from _helpers import judged_labels

import metaeval
from metaeval import OptionError, SchemaError
from metaeval.workflows import build_report

OPTIONS = {"n_resamples": 100, "seed": 4, "cluster": "passage", "family": "tasks"}


@pytest.fixture(scope="module")
def labels() -> pd.DataFrame:
    return judged_labels()


@pytest.fixture(scope="module")
def report(labels):
    return build_report(labels, "small", gold="human", judge="gpt", **OPTIONS)


def test_the_section_is_the_judges_functions_own_tables(labels, report):
    assert list(report.parts()) == [
        "table",
        "tests",
        "pooled",
        "ranks",
        "agreement",
        "judge_errors",
        "judge_panel",
        "ppi",
        "ppi_pooled",
    ]
    common = {"cluster": "passage", "n_resamples": 100, "seed": 4}
    agree = metaeval.agreement(labels, ["gpt", "claude", "llama"], **common)
    pd.testing.assert_frame_equal(report.agreement, agree.table[report.agreement.columns])
    errors = metaeval.judge_errors(labels, "human", **common)
    pd.testing.assert_frame_equal(report.judge_errors, errors.table[report.judge_errors.columns])
    pd.testing.assert_frame_equal(report.judge_panel, errors.panel[report.judge_panel.columns])
    side = pd.concat(
        [
            metaeval.ppi(labels, "human", "gpt", "small", estimator=e, cluster="passage")
            for e in ("judge", "classical", "ppi++")
        ],
        ignore_index=True,
    )
    pd.testing.assert_frame_equal(report.ppi, side[report.ppi.columns])
    tuned = side[side["estimator"] == "ppi++"]
    pooled = metaeval.pool(tuned)
    assert report.ppi_pooled["effect"].item() == pytest.approx(pooled["effect"].item(), abs=1e-12)
    assert report.agreement_pairs is not None and len(report.agreement_pairs) == 2 * 3


def test_the_other_tables_use_the_scoring_judgesjudged_labels(labels, report):
    gpt = labels[labels["judge"] == "gpt"].drop(columns="judge")
    plain = build_report(gpt, "small", **OPTIONS)
    pd.testing.assert_frame_equal(report.table, plain.table)
    pd.testing.assert_frame_equal(report.pooled, plain.pooled)
    pd.testing.assert_frame_equal(report.ranks, plain.ranks)
    assert "the means, tests, effects and ranks use the labels of gpt" in report.methods


def test_the_methods_say_how_the_section_was_made(report):
    m = report.methods
    assert "4 judges (gpt, claude, llama, human)" in m
    assert "Krippendorff's alpha at the nominal level (Krippendorff 2011)" in m
    assert "clusters of 'passage' (100 resamples, seed 4)" in m
    assert "Cohen's kappa (Cohen 1960)" in m and "(Kish 1965)" in m
    assert "PPI++" in m and "delete-one-cluster jackknife" in m
    assert "pooled over tasks as above" in m
    n = report.judge_errors["n_gold"]
    assert f"on the {n.min()}–{n.max()} outputs" in m or f"on the {n.min()} outputs" in m


def test_every_format_shows_the_section(report):
    md = report.to_markdown()
    for title in (
        "Agreement of the judges",
        "Judges against the gold labels",
        "Effective number of independent judges",
        "Judge, gold and prediction-powered estimates",
        "Pooled prediction-powered (PPI++) effects",
    ):
        assert f"## {title}" in md
        assert title in report.to_latex()
    doc = json.loads(report.to_json())
    assert len(doc["ppi"]) == len(report.ppi) == 3 * 2
    assert doc["options"]["judges"]["gold"] == "human"
    assert doc["agreement"][0]["agreement"] == pytest.approx(report.agreement["agreement"].iloc[0])
    page = report.to_html()
    found = re.search(r'id="fig-agreement-0" [^>]*src="data:image/png;base64,([^"]+)"', page)
    assert found, "the agreement heatmap is on the page"
    from PIL import Image

    image = Image.open(io.BytesIO(base64.b64decode(found.group(1))))
    assert image.size[0] > 200 and image.size[1] > 200


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex installed")
def test_the_section_compiles_in_latex(report, tmp_path):
    doc = "\n".join(
        [
            r"\documentclass{article}",
            r"\usepackage{booktabs,graphicx}",
            r"\begin{document}",
            report.to_latex(),
            r"\end{document}",
        ]
    )
    (tmp_path / "r.tex").write_text(doc, encoding="utf-8")
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "r.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    log = (tmp_path / "r.log").read_text(errors="replace")
    assert "Missing character" not in log and "Overfull \\hbox" not in log


def test_one_judge_and_gold_no_agreement_and_no_panel():
    two = judged_labels(judges=("gpt",))
    rep = build_report(two, "small", gold="human", **OPTIONS)  # judge: the only other one
    assert rep.agreement is None and rep.judge_panel is None and rep.agreement_pairs is None
    assert rep.judge_errors is not None and list(rep.judge_errors["judge"]) == ["gpt", "gpt"]
    assert "use the labels of gpt" in rep.methods and "Krippendorff" not in rep.methods


def test_without_gold_only_agreement_and_without_control_the_means(labels):
    panel = labels[labels["judge"] != "human"]
    rep = build_report(panel, "small", judge="claude", **OPTIONS)
    assert rep.agreement is not None and rep.judge_errors is None and rep.ppi is None
    assert "Cohen" not in rep.methods
    rep = build_report(labels, gold="human", judge="gpt", **OPTIONS)
    assert rep.ppi_pooled is None and set(rep.ppi["estimator"]) == {"judge", "classical", "ppi++"}
    assert "mean" in rep.ppi.columns and "systems' means were also estimated" in rep.methods


def test_bad_options(labels):
    with pytest.raises(OptionError, match=r"name with build_report\(judge=\.\.\.\)"):
        build_report(labels, "small", gold="human", **OPTIONS)
    with pytest.raises(SchemaError, match=r"build_report\(gold='humans'\).*'human'"):
        build_report(labels, "small", gold="humans", judge="gpt", **OPTIONS)
    plain = metaeval.load_example()
    with pytest.raises(OptionError, match="needs a table of labels with a 'judge' column"):
        build_report(plain, "logistic_regression", gold="human")

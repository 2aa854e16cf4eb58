"""``metaeval meta --latex`` picks the orientation that fits (issue 39, item 20): one treatment
over six collections was one row of seven wide cells, shrunk to the line to about 4 pt;
with the tasks as rows it prints at the text's size. Checked on the compiled PDF: the
height of the table's numbers as pdftotext measures them."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _helpers import latex_number_heights

from metaeval.io import write_scores
from metaeval_cli import main

BEIR = ["trec-covid", "nfcorpus", "fiqa", "arguana", "scidocs", "scifact"]


def _scores(treatments: list[str], tasks: list[str], n: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = [
        (t, f"q{q}", s, "nDCG@10", rng.normal(0.5 + 0.02 * i, 0.1))
        for t in tasks
        for q in range(n)
        for i, s in enumerate(["tasb", *treatments])
    ]
    return pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])


def _latex(capsys, tmp_path: Path, scores: pd.DataFrame, *extra: str) -> tuple[str, str]:
    """The --latex file and what the command printed (stdout and stderr)."""
    path = tmp_path / "s.csv"
    write_scores(scores, path)
    out = tmp_path / "t.tex"
    code = main(["meta", str(path), "--control", "tasb", "--latex", str(out), *extra])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    return out.read_text(), printed.out + printed.err


def _cell_columns(tex: str) -> int:
    spec = re.search(r"\\begin\{tabular\}\{([a-z]+)\}", tex)
    assert spec is not None
    return len(spec.group(1)) - 1


@pytest.mark.skipif(
    shutil.which("pdflatex") is None or shutil.which("pdftotext") is None,
    reason="needs pdflatex and pdftotext",
)
def test_one_treatment_over_six_collections_prints_at_the_text_size(capsys, tmp_path):
    tex, said = _latex(capsys, tmp_path, _scores(["colberter"], BEIR))
    assert _cell_columns(tex) == 1  # the tasks as rows, the treatment a column
    assert "trec-covid &" in tex and "Pooled &" in tex
    heights = latex_number_heights(tex, tmp_path)
    # 10 pt text: pdftotext's word boxes are about 10 pt high; the fitted row was about 4 pt
    assert min(heights) > 8, heights
    assert "warning" not in said and "tasks as rows" in said


@pytest.mark.skipif(
    shutil.which("pdflatex") is None or shutil.which("pdftotext") is None,
    reason="needs pdflatex and pdftotext",
)
def test_the_orientation_with_fewer_columns_wins_and_can_be_forced(capsys, tmp_path):
    # many systems on two tasks: systems as rows (3 columns: two tasks and the pooled one)
    many = [f"s{i}" for i in range(6)]
    tex, _ = _latex(capsys, tmp_path, _scores(many, BEIR[:2]))
    assert _cell_columns(tex) == 3 and "s5 &" in tex
    assert min(latex_number_heights(tex, tmp_path)) > 8
    # forced either way
    tex, _ = _latex(capsys, tmp_path, _scores(["colberter"], BEIR), "--no-transpose")
    assert _cell_columns(tex) == 7
    tex, _ = _latex(capsys, tmp_path, _scores(many, BEIR[:2]), "--transpose")
    assert _cell_columns(tex) == 6


def test_transpose_without_latex_is_a_usage_error(capsys, tmp_path):
    path = tmp_path / "s.csv"
    write_scores(_scores(["colberter"], BEIR[:2]), path)
    for flag in ("--transpose", "--no-transpose"):
        assert main(["meta", str(path), "--control", "tasb", flag]) == 2
        assert "add --latex FILE" in capsys.readouterr().err

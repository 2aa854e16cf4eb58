"""The report renders any result (issue 26): effects, pooled, analyze() and compare() tables
in their layouts, every other result table and every :class:`Result` as it is — a generic
booktabs table through the one formatter — and the command's LaTeX is that table."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import OptionError, SchemaError
from metaeval._results import Result
from metaeval.report import to_html, to_latex

NASTY = "R&D_50% $x$ #1 {a} ~b^c \\d <i>"


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Fit(Result):
    """A result with parts and no layout of its own (as metareg's will be)."""

    fit: pd.DataFrame
    kind: ClassVar[str] = "fit_of_a_test"


def _coefficients() -> pd.DataFrame:
    """A hand-made coefficient table; every number's text is known by hand."""
    return pd.DataFrame(
        {
            "term": ["intrcpt", NASTY],
            "estimate": [-0.5, 0.12345],
            "se": [0.1, 0.02],
            "df": [3.0, 3.0],  # a count kept as float: shown as an integer
            "p_value": [0.00001, 0.0456],
            "q_p_value": [np.nan, 0.5],
            "n": [12, 12],
            "converged": [True, False],
        }
    )


def _cells(tex: str) -> list[list[str]]:
    body = tex[tex.index(r"\midrule") + len(r"\midrule") : tex.index(r"\bottomrule")]
    rows = [r.strip() for r in body.split(r"\\") if r.strip()]
    return [[c.strip() for c in re.split(r"(?<!\\)&", r)] for r in rows]


def test_a_result_object_is_shown_as_its_table():
    result = Fit(_coefficients(), fit=pd.DataFrame({"tau2": [0.1]}))
    tex = to_latex(result, digits=3)
    assert tex == result.to_latex(digits=3)  # Result.to_latex goes through the report
    assert r"\caption{Fit}" in tex  # the default caption: the result's class
    assert r"\begin{tabular}{lrrrrrrl}" not in tex  # booleans are not text columns:
    assert r"\begin{tabular}{lrrrrrrr}" in tex  # numeric dtypes right-aligned, text left
    head = tex.splitlines()[tex.splitlines().index(r"\toprule") + 1]
    assert head == r"term & estimate & se & df & p\_value & q\_p\_value & n & converged \\"
    assert _cells(tex) == [
        ["intrcpt", "$-$0.500", "0.100", "3", "$<$ 0.001", "", "12", "True"],
        [
            r"R\&D\_50\% \$x\$ \#1 \{a\} \textasciitilde{}b\textasciicircum{}c "
            r"\textbackslash{}d \textless{}i\textgreater{}",
            "0.123",
            "0.020",
            "3",
            "0.046",
            "0.500",
            "12",
            "False",
        ],
    ]


def test_other_result_tables_are_shown_as_they_are():
    scores = metaeval.load_example().query("metric == 'accuracy'")
    hsd = metaeval.tukey(scores[scores["task"] == "iris"])
    tex = to_latex(hsd, digits=2, caption="Tukey's HSD")
    cells = _cells(tex)
    assert len(cells) == len(hsd)
    p = list(hsd.columns).index("p_value")
    expected = ["$<$ 0.01" if v < 0.01 else f"{v:.2f}" for v in hsd["p_value"]]
    assert [row[p] for row in cells] == expected
    d = list(hsd.columns).index("diff")
    assert [float(r[d].replace("$-$", "-")) for r in cells] == pytest.approx(
        hsd["diff"].to_numpy(), abs=0.005
    )
    board = metaeval.leaderboard(scores)
    assert len(_cells(to_latex(board))) == len(board)
    # an effects table keeps its layout, or is shown as it is on request
    eff = scores.meta.effects(control="logistic_regression")
    assert len(_cells(to_latex(eff))) == eff["treatment"].nunique()  # rows: the systems
    flat = to_latex(eff, layout="table")
    assert len(_cells(flat)) == len(eff) and r"ci\_low" in flat


def test_options_of_the_layouts_are_refused_for_a_table_as_it_is():
    scores = metaeval.load_example().query("metric == 'accuracy'")
    hsd = metaeval.tukey(scores)
    eff = scores.meta.effects(control="logistic_regression")
    for kwargs in ({"pooled": eff.meta.pool()}, {"show": "ci"}, {"order": ["knn"]}):
        (option,) = kwargs
        with pytest.raises(OptionError, match=f"`{option}` applies to effects"):
            to_latex(hsd, **kwargs)
        with pytest.raises(OptionError, match=f"`{option}`"):
            to_html(hsd, **kwargs)
    with pytest.raises(OptionError, match="`transpose`"):  # HTML tables scroll
        to_html(hsd, transpose=True)
    # LaTeX: the columns as rows, headed by the first text column unique on every row
    tex = to_latex(hsd.head(3), transpose=True, fit=False)
    rows = [line for line in tex.splitlines() if line.endswith("\\\\")]
    assert len(rows) == 1 + hsd.shape[1] - 1  # the header, then a row per other column
    first = hsd["task"].iloc[0]
    assert rows[0].split(" & ")[0] == "" and f"{first} " not in rows[0]
    with pytest.raises(OptionError, match="layout"):
        to_latex(hsd, layout="wide")
    with pytest.raises(OptionError, match="digits"):
        to_latex(hsd, digits=11)
    with pytest.raises(SchemaError, match="effects table"):  # scores are not a result
        to_latex(scores)
    with pytest.raises(SchemaError, match="got a list"):
        to_latex([1, 2])


def test_html_escapes_names_and_values():
    table = _coefficients().rename(columns={"term": "<b>term</b>"})
    table.loc[0, "<b>term</b>"] = "<script>alert(1)</script>"
    page = to_html(Fit(table, fit=pd.DataFrame()), caption="<i>caption</i>")
    assert "<script>" not in page and "<b>term</b>" not in page and "<i>caption" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;term&lt;/b&gt;" in page and "&lt;i&gt;caption&lt;/i&gt;" in page
    assert "\u22120.500" in page and "&lt; 0.001" in page  # figures' minus; p below 0.001
    default = to_html(Fit(table, fit=pd.DataFrame()))
    assert "<caption>Fit</caption>" in re.sub(r"<caption[^>]*>", "<caption>", default)


def test_the_command_writes_the_reports_table():
    from metaeval_cli._console import Table, render

    frame = _coefficients()
    tex = render([Table("Fit & more", frame)], "latex", digits=3)
    assert tex.rstrip("\n") == to_latex(
        frame, layout="table", caption="Fit & more", digits=3, position="htbp", fit=False
    ).rstrip("\n")
    assert r"\caption{Fit \& more}" in tex and "$<$ 0.001" in tex


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex installed")
def test_generic_tables_compile_and_read_back(tmp_path):
    scores = metaeval.load_example()
    acc = scores[scores["metric"] == "accuracy"]
    tables = [
        to_latex(Fit(_coefficients(), fit=pd.DataFrame())),
        to_latex(metaeval.tukey(acc[acc["task"] == "iris"]), caption=f"Tukey {NASTY}"),
        to_latex(metaeval.ranking.friedman(scores)),
        to_latex(metaeval.ranking.posthoc(acc), digits=2),
        to_latex(metaeval.leaderboard(scores), label="tab:board", position="t"),
    ]
    doc = "\n".join(
        [
            r"\documentclass{article}",
            r"\usepackage{booktabs,graphicx}",
            r"\begin{document}",
            *tables,
            r"\end{document}",
        ]
    )
    (tmp_path / "t.tex").write_text(doc)
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    log = (tmp_path / "t.log").read_text(errors="replace")
    assert "Missing character" not in log and "Undefined control sequence" not in log
    assert "Overfull \\hbox" not in log  # fit=True: wide tables shrink to the line
    if shutil.which("pdftotext") is None:
        return
    read = subprocess.run(
        ["pdftotext", "-layout", "t.pdf", "-"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert read.returncode == 0, read.stderr
    text = read.stdout
    # the names print as they are (pdftotext reads _ as a space, ~ and ^ as accents)
    assert "R&D 50% $x$ #1 {a} ˜bˆc \\d <i>" in text
    assert "\u22120.500" in text and "< 0.001" in text  # LaTeX's minus; p below 0.001

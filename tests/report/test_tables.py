"""LaTeX and HTML tables: layout, marks, bold, escaping, and that LaTeX compiles."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from _helpers import NARROW_KH, make_scores

import metaeval
from metaeval import OptionError, SchemaError
from metaeval.report import escape_latex, style, to_html, to_latex

NASTY = "R&D_50% $x$ #1 {a} ~b^c \\d"


def _compare_table() -> pd.DataFrame:
    """Three systems, one task: b beats a (p = 0.01), c vs a not significant."""
    table = pd.DataFrame(
        {
            "metric": "acc",
            "task": "t",
            "test": "t",
            "treatment": ["b", "c"],
            "control": "a",
            "mean_treatment": [0.61234, 0.59999],
            "mean_control": 0.5,
            "diff": [0.11234, 0.09999],
            "p_value": [0.01, 0.2],
            "ci_low": [0.03, -0.05],
            "ci_high": [0.19, 0.25],
        }
    )
    table.attrs.update(test="t", alternative="two-sided", alpha=0.05, adjust=None)
    return table


def test_compare_letters_bold_and_caption():
    tex = to_latex(_compare_table())
    assert r"(a) a & 0.500 \\" in tex
    assert r"(b) b & \bfseries 0.612\textsuperscript{a} \\" in tex
    assert r"(c) c & 0.600 \\" in tex
    assert r"paired t-test, two-sided, $\alpha = 0.05$, no correction" in tex
    assert r"\toprule" in tex and r"\bottomrule" in tex
    # lower is better: the significant difference now favours a
    tex = to_latex(_compare_table(), best="min")
    assert r"(a) a & \bfseries 0.500\textsuperscript{b} \\" in tex
    # intervals and p-values of the difference to the control
    tex = to_latex(_compare_table(), show="ci")
    assert r"0.612\textsuperscript{a} [$+$0.030, $+$0.190]" in tex
    tex = to_latex(_compare_table(), show="p_value", alpha=0.005)
    assert r"\bfseries 0.612 (p = 0.010)" in tex


def test_every_value_printed_as_the_best_is_bold():
    """Issue 25, item 15: two values that print alike are bold alike (not one of them)."""
    table = _compare_table().assign(mean_treatment=[0.61234, 0.61231])
    tex = to_latex(table)
    assert f"{0.61234:.3f}" == f"{0.61231:.3f}" == "0.612"  # they print alike at 3 digits
    assert r"(b) b & \bfseries 0.612\textsuperscript{a} \\" in tex
    assert r"(c) c & \bfseries 0.612 \\" in tex
    assert r"(a) a & 0.500 \\" in tex  # the control's mean is not the best
    # at 5 digits they differ in print: only the larger is bold
    assert f"{0.61234:.5f}" != f"{0.61231:.5f}"
    tex = to_latex(table, digits=5)
    assert r"\bfseries 0.61234" in tex and r"(c) c & 0.61231 \\" in tex
    assert to_latex(table, best=None).count(r"\bfseries") == 0
    # lower is better: 0.5004 and 0.4996 both print 0.500 at 3 digits
    low = _compare_table().assign(mean_treatment=[0.5004, 0.7], mean_control=0.4996)
    tex = to_latex(low, best="min")
    assert tex.count(r"\bfseries 0.500") == 2 and r"\bfseries 0.700" not in tex
    rule = re.search(r"([^}]*)\{\s*font-weight: bold;", to_html(table)).group(1)
    assert re.findall(r"_row(\d)_col0", rule) == ["1", "2"]  # rows (b) and (c) in HTML too


def test_compare_from_the_library_matches_its_numbers(rng):
    scores = make_scores(rng, metrics=("m1",))
    cmp = scores.meta.compare(control="ctrl", adjust="holm")
    tex = to_latex(cmp, order=["ctrl", "a", "b"])  # the letters below
    assert "Holm correction" in tex
    means = scores.groupby(["system", "task"])["value"].mean()
    for task in scores["task"].unique():
        assert f"{means['ctrl', task]:.3f}" in tex
    # a system is marked over ctrl exactly where the adjusted p is below alpha
    for _, row in cmp.iterrows():
        winner = row["treatment"] if row["diff"] > 0 else "ctrl"
        cell = f"{means[winner, row['task']]:.3f}"
        marked = row["p_adjusted"] < 0.05
        letters = {"ctrl": "a", "a": "b", "b": "c"}
        loser = letters["ctrl" if winner != "ctrl" else row["treatment"]]
        line = next(line for line in tex.splitlines() if line.startswith(f"({letters[winner]}) "))
        cells = [c.strip() for c in line.rstrip("\\ ").split("&")[1:]]
        col = sorted(scores["task"].unique(), key=list(cmp["task"].unique()).index).index(
            row["task"]
        )
        assert cell in cells[col]
        assert (f"\\textsuperscript{{{loser}" in cells[col] or f"{loser}}}" in cells[col]) == marked


def test_effects_with_pooled_column(rng):
    scores = make_scores(rng, systems=("ctrl", "a", "b"), metrics=("m1",))
    eff = scores.meta.effects(control="ctrl", effect="smd")
    pooled = eff.meta.pool(method="REML", test="knha")
    tex = to_latex(eff, pooled=pooled, digits=4)
    for _, row in pooled.iterrows():
        text = f"{row['effect']:.4f}".replace("-", "$-$")
        assert text in tex
    assert "Pooled" in tex
    assert "random-effects model, REML, Knapp-Hartung t-test" in tex
    assert "95\\% confidence intervals" in tex
    # every effect and its interval
    for _, row in eff.iterrows():
        lo, hi = (f"{x:.4f}".replace("-", "$-$") for x in (row["ci_low"], row["ci_high"]))
        assert f"[{lo}, {hi}]" in tex
    # best per column: the larger of the two treatments' effects on a task
    t1 = eff[eff.task == "t1"].set_index("treatment")["effect"]
    best = t1.idxmax()
    line = next(line for line in tex.splitlines() if line.startswith(best + " "))
    assert line.split("&")[1].strip().startswith(r"\bfseries")
    transposed = to_latex(eff, transpose=True)
    assert "best" not in transposed and "each row" in transposed


def test_daggers_use_adjusted_p_and_rom_is_back_transformed():
    eff = pd.DataFrame(
        {
            "task": ["a", "b"],
            "treatment": "new",
            "control": "old",
            "effect_type": "rom",
            "effect": [np.log(1.2), np.log(0.95)],
            "variance": [0.001, 0.04],
            "ci_low": [np.log(1.1), np.log(0.8)],
            "ci_high": [np.log(1.3), np.log(1.1)],
            "p_value": [0.001, 0.5],
        }
    )
    tex = to_latex(eff)
    assert r"0.200\textsuperscript{\dag{}} [0.100, 0.300]" in tex
    assert r"$-$0.050 [$-$0.200, 0.100]" in tex
    assert r"\dag{} $p < 0.05$" in tex
    assert "Relative change" in tex
    pooled = eff.meta.pool(method="DL", adjust="holm")
    assert "Parentheses: Holm-adjusted p-values" in to_latex(pooled, show="p_value")


def test_names_are_escaped_everywhere():
    table = _compare_table().assign(task=NASTY, control=NASTY + "ctl", metric="m_1")
    tex = to_latex(table)
    escaped = escape_latex(NASTY)
    assert escaped in tex
    assert NASTY not in tex
    assert escape_latex("x_y") == r"x\_y"
    page = to_html(table)
    assert "R&amp;D_50%" in page and "<sup>a</sup>" in page
    assert "font-weight: bold" in page


def test_report_errors(rng):
    scores = make_scores(rng, metrics=("m1",))
    cmp = scores.meta.compare()  # every ordered pair: several controls
    with pytest.raises(OptionError, match="several controls"):
        to_latex(cmp, show="ci")
    with pytest.raises(OptionError, match="show"):
        to_latex(_compare_table(), show="mean")
    with pytest.raises(OptionError, match="best"):
        to_latex(_compare_table(), best="highest")
    with pytest.raises(SchemaError, match="effects table"):
        to_latex(scores)
    eff = scores.meta.effects(control="ctrl")
    with pytest.raises(OptionError, match="pooled"):
        to_latex(cmp, pooled=eff.meta.pool())


def test_accessor_and_styler(rng):
    scores = make_scores(rng, metrics=("m1",))
    eff = scores.meta.effects(control="ctrl")
    assert eff.meta.to_latex() == to_latex(eff)
    ids = re.compile(r"T_[0-9a-f]+")  # the Styler's random table id
    assert ids.sub("", eff.meta.pool().meta.to_html()) == ids.sub("", to_html(eff.meta.pool()))
    assert scores.meta.compare(control="ctrl").meta.style().to_html().startswith("<style")
    assert "caption" in style(eff).to_html()
    with pytest.raises(metaeval.TableKindError, match="to_latex"):
        scores.meta.to_latex()


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex installed")
def test_tables_compile_with_pdflatex(rng, tmp_path):
    scores = make_scores(rng, systems=("ctrl", "sys_1&2", "b~^"), metrics=("m_1", "50%"))
    scores["task"] = scores["task"].map(lambda t: t + " " + NASTY)
    eff = scores.meta.effects(control="ctrl", effect="smd")
    one = eff[eff.metric == "m_1"]
    tables = [
        to_latex(eff, pooled=eff.meta.pool(method="REML", adjust="holm")),
        to_latex(one, transpose=True, show="p_value"),
        to_latex(eff, pooled=eff.meta.pool(), transpose=True),
        to_latex(scores.meta.compare(control="ctrl", adjust="fdr_bh"), show="ci"),
        to_latex(scores.meta.compare(test="randomization", n_resamples=200, seed=1)),
        to_latex(_compare_table(), label="tab:x", position="t"),
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
    assert (tmp_path / "t.pdf").stat().st_size > 1000
    log = (tmp_path / "t.log").read_text(errors="replace")
    assert "Missing character" not in log and "Undefined control sequence" not in log
    assert "Overfull \\hbox" not in log  # fit=True: no table is wider than the line


def _compile(tmp_path, tables: list[str]) -> str:
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
    return (tmp_path / "t.log").read_text(errors="replace")


@NARROW_KH
@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex installed")
def test_wide_tables_fit_the_page(rng, tmp_path):
    demo = metaeval.load_example().query("metric == 'accuracy'")
    eff = demo.meta.effects(control="logistic_regression")
    six = make_scores(
        rng,
        systems=("bm25", "tasb", "colbert", "splade"),
        metrics=("nDCG@10",),
        tasks={f"collection-{i}": 30 for i in range(6)},
    )
    eff6 = six.meta.effects(control="bm25")
    wide = [to_latex(eff, pooled=eff.meta.pool()), to_latex(eff6, pooled=eff6.meta.pool())]
    assert "Overfull \\hbox" not in _compile(tmp_path, wide)
    unfitted = [to_latex(eff6, pooled=eff6.meta.pool(), fit=False)]
    assert "Overfull \\hbox" in _compile(tmp_path, unfitted)  # the check can fail
    small = to_latex(eff6[eff6["task"] == "collection-0"])
    assert r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}" in small


def test_transposed_rows_group_by_metric_without_multirow(rng):
    scores = make_scores(rng, metrics=("m1", "m2"))
    eff = scores.meta.effects(control="ctrl", treatment="a")
    tex = to_latex(eff, pooled=eff.meta.pool(), transpose=True)
    assert "multirow" not in tex and r"\begin{tabular}{llr}" in tex
    body = tex.split(r"\midrule")[1].split(r"\bottomrule")[0].strip().splitlines()
    assert [line.split("&")[1].strip() for line in body] == ["t1", "t2", "t3", "t4", "Pooled"] * 2
    assert body[0].startswith("m1 &") and body[5].startswith("m2 &")
    assert "Bold" not in tex  # one system: nothing to compare


def test_an_analyze_table_is_the_effects_with_their_pooled_column(rng):
    scores = make_scores(rng, systems=("ctrl", "a", "b"), metrics=("m1",))
    table = scores.meta.analyze("ctrl")
    eff = scores.meta.effects("ctrl")
    assert table.meta.to_latex() == to_latex(eff, pooled=eff.meta.pool())

    def html(t, **kw):
        return re.sub(r"T_[0-9a-f]+", "T_", to_html(t, **kw))  # the Styler's random ids

    assert html(table) == html(eff, pooled=eff.meta.pool())
    ranger = scores.meta.analyze("ctrl", **metaeval.RANGER)
    assert "random-effects model, DL" in to_latex(ranger)
    assert "Knapp" not in to_latex(ranger)
    with pytest.raises(OptionError, match="holds its pooled rows already"):
        to_latex(table, pooled=eff.meta.pool())


@NARROW_KH
def test_subgroup_columns_of_pooled_rows_are_labelled(rng):
    scores = make_scores(rng, systems=("ctrl", "a"), metrics=("m1",))
    eff = scores.meta.effects("ctrl")
    groups = {t: ("x" if i % 2 else "y") for i, t in enumerate(sorted(set(eff["task"])))}
    tex = to_latex(eff, pooled=eff.meta.pool(by=groups))
    assert "Pooled: x" in tex and "Pooled: y" in tex


def test_a_bound_just_below_zero_is_not_written_as_zero():
    eff = pd.DataFrame(
        {
            "task": ["t"],
            "treatment": "b",
            "control": "a",
            "effect_type": "md",
            "effect": [0.044],
            "variance": [0.0005],
            "ci_low": [-0.0004],
            "ci_high": [0.0884],
        }
    )
    assert "0.044 [$-$0.000, 0.088]" in to_latex(eff)
    assert "0.044 [\u22120.000, 0.088]" in to_html(eff)


# ------------------------------------------- issue 25: rows pooled over fewer tasks
BEIR = ("trec-covid", "nfcorpus", "fiqa", "arguana", "scidocs", "scifact")


def _beir(rng):
    """Six tasks; rrf has no scores on nfcorpus, splade none on fiqa and scidocs."""
    scores = make_scores(
        rng,
        tasks={t: 25 for t in BEIR},
        metrics=("nDCG@10",),
        systems=("bm25", "tasb", "rrf", "splade"),
    )
    absent = ((scores["system"] == "rrf") & (scores["task"] == "nfcorpus")) | (
        (scores["system"] == "splade") & scores["task"].isin(["fiqa", "scidocs"])
    )
    scores = scores[~absent].reset_index(drop=True)
    with pytest.warns(metaeval.PairingWarning):
        eff = scores.meta.effects(control="bm25", effect="md")
    with pytest.warns(metaeval.PairingWarning, match="k of k_total"):
        pooled = eff.meta.pool(method="DL")
    return scores, eff, pooled


def _row(tex: str, name: str) -> list[str]:
    line = next(line for line in tex.splitlines() if line.startswith(name + " &"))
    return [c.strip() for c in line.rstrip("\\ ").split("&")]


@NARROW_KH
def test_rows_pooled_over_fewer_tasks_carry_a_footnote(rng, tmp_path):
    scores, eff, pooled = _beir(rng)
    tasks = scores.groupby("system")["task"].agg(set)
    k_rrf = len(tasks["rrf"] & tasks["bm25"])  # the tasks both systems have: 5
    k_splade = len(tasks["splade"] & tasks["bm25"])
    assert (k_rrf, k_splade, len(BEIR)) == (5, 4, 6)
    tex = to_latex(eff, pooled=pooled)
    rrf_note = rf"\ddag{{}} Pooled over {k_rrf} of 6 tasks; missing: nfcorpus."
    splade_note = rf"\S{{}} Pooled over {k_splade} of 6 tasks; missing: fiqa, scidocs."
    assert rrf_note in tex and splade_note in tex
    # the marks sit on the pooled cells of those rows only (after a dagger, if any)
    assert re.search(r"\\textsuperscript\{(\\dag\{\})?\\ddag\{\}\}", _row(tex, "rrf")[-1])
    assert re.search(r"\\textsuperscript\{(\\dag\{\})?\\S\{\}\}", _row(tex, "splade")[-1])
    assert "ddag" not in _row(tex, "tasb")[-1] and "ddag" not in "".join(_row(tex, "rrf")[:-1])
    header = [c.strip() for c in tex.split(r"\toprule")[1].split("\\\\")[0].split("&")]
    assert _row(tex, "rrf")[header.index("nfcorpus")] == ""  # the missing cell stays empty
    assert header[1:] == sorted(BEIR) + ["Pooled"]  # where effects() put them, not moved
    # the notes come under the tabular, inside the table float
    assert tex.index(r"\end{tabular}") < tex.index(rrf_note) < tex.index(r"\end{table}")
    # a pooled table alone cannot name the tasks; an analyze() table can
    alone = to_latex(pooled)
    assert rf"\ddag{{}} Pooled over {k_rrf} of 6 tasks." in alone and "missing" not in alone
    with pytest.warns(metaeval.PairingWarning):
        table = scores.meta.analyze("bm25", effect="md", method="DL")
    assert rrf_note in to_latex(table) and splade_note in to_latex(table)
    page = to_html(eff, pooled=pooled)
    assert "‡ Pooled over 5 of 6 tasks; missing: nfcorpus." in page and "<sup>" in page
    # nothing is marked where every system has every task
    full = pooled[pooled["treatment"] == "tasb"]
    assert "Pooled over" not in to_latex(eff[eff["treatment"] == "tasb"], pooled=full)
    if shutil.which("pdflatex") is None:
        pytest.skip("no pdflatex installed")
    log = _compile(tmp_path, [tex, alone])
    assert "Missing character" not in log and "Undefined control sequence" not in log
    if shutil.which("pdftotext") is not None:
        text = _pdftext(tmp_path)  # (pdftotext drops the marks of LaTeX's symbol font)
        assert "Pooled over 5 of 6 tasks; missing: nfcorpus." in text
        assert "§ Pooled over 4 of 6 tasks; missing: fiqa, scidocs." in text


def _pdftext(tmp_path) -> str:
    run = subprocess.run(
        ["pdftotext", "-layout", "t.pdf", "-"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


# ------------------------------------------------------ issue 25: the order of rows
def _body_rows(tex: str) -> list[str]:
    body = tex.split(r"\midrule")[1].split(r"\bottomrule")[0].strip().splitlines()
    return [line.split("&")[0].strip() for line in body]


def test_compare_rows_keep_one_order_whichever_the_control(rng):
    scores = make_scores(rng, systems=("bm25", "tasb", "rrf"), metrics=("m1",))
    by_rrf = to_latex(scores.meta.compare(control="rrf"))
    by_bm25 = to_latex(scores.meta.compare(control="bm25"))
    every = to_latex(scores.meta.compare())
    expected = ["(a) bm25", "(b) rrf", "(c) tasb"]  # compare()'s order: by name
    assert _body_rows(by_rrf) == _body_rows(by_bm25) == _body_rows(every) == expected
    # order= chooses: here the order of the scores
    order = list(scores["system"].unique())
    assert order == ["bm25", "tasb", "rrf"]
    cmp = scores.meta.compare(control="rrf")
    assert _body_rows(to_latex(cmp, order=order)) == ["(a) bm25", "(b) tasb", "(c) rrf"]
    assert "(c) rrf" in to_html(cmp, order=order)
    # categorical systems keep their category order
    cat = pd.CategoricalDtype(["tasb", "rrf", "bm25"])
    typed = cmp.astype({"treatment": cat, "control": cat})
    assert _body_rows(to_latex(typed)) == ["(a) tasb", "(b) rrf", "(c) bm25"]
    # effects tables: the treatments (names the table lacks, like the control, are skipped)
    eff = scores.meta.effects(control="bm25")
    assert _body_rows(to_latex(eff)) == ["rrf", "tasb"]
    assert _body_rows(to_latex(eff, order=order)) == ["tasb", "rrf"]
    with pytest.raises(OptionError, match=r"lacks \['rrf'\]"):
        to_latex(cmp, order=["bm25", "tasb"])
    with pytest.raises(OptionError, match=r"names system\(s\) \['tasb'\] more than once"):
        to_latex(cmp, order=["bm25", "tasb", "rrf", "tasb"])
    with pytest.raises(OptionError, match="list of the systems' names"):
        to_latex(cmp, order="bm25")


# ------------------------------------------------------ issue 25: escaping, collisions
def test_angle_brackets_bars_and_quotes_print_as_themselves(tmp_path):
    name = 'a<b> | "q"'
    table = _compare_table().assign(task=name, control="ctl>x")
    tex = to_latex(table)
    assert name not in tex and "ctl>x" not in tex
    assert r"a\textless{}b\textgreater{} \textbar{} \texttt{\char34}q\texttt{\char34}" in tex
    if shutil.which("pdflatex") is None or shutil.which("pdftotext") is None:
        pytest.skip("no pdflatex or pdftotext installed")
    log = _compile(tmp_path, [tex])
    assert "Missing character" not in log
    text = _pdftext(tmp_path)
    assert name in text and "ctl>x" in text
    for wrong in "¡¿—”":  # what OT1 prints for < > | "
        assert wrong not in text


def test_names_that_print_alike_are_refused():
    eff = pd.DataFrame(
        {
            "task": "t",
            "treatment": ["a\nb", "a b"],
            "control": "c",
            "effect": [0.1, 0.2],
            "variance": 0.01,
            "ci_low": [-0.1, 0.0],
            "ci_high": [0.3, 0.4],
        }
    )
    for render in (to_latex, to_html):
        with pytest.raises(SchemaError, match=r"rows 'a\\nb' and 'a b' .*print alike"):
            render(eff)
    with pytest.raises(SchemaError, match="print alike"):
        to_latex(eff, best=None, transpose=True)
    tasks = eff.assign(task=["x\ny", "x  y"], treatment="a")
    with pytest.raises(SchemaError, match=r"columns 'x\\ny' and 'x  y' .*task column"):
        to_latex(tasks)
    # names that print differently are fine
    assert "a\\_b" in to_latex(eff.assign(treatment=["a_b", "a b"]))

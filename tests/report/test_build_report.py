"""build_report(): one Report whose parts are the analyses' own tables, whose methods
paragraph is written from its options, and which shows the same numbers in Markdown, JSON,
LaTeX and HTML (issue 30, item 3)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from html import escape as escape_html

import numpy as np
import pandas as pd
import pytest
from _helpers import latex_number_heights

import metaeval
from metaeval import OptionError, rank_intervals
from metaeval._options import format_cell, format_number
from metaeval.workflows import Report, build_report

CONTROL = "logistic_regression"
HOSTILE = ["R&D 50%", "#1_{x}", "$cost$ ~a", "back\\slash", "a<b>|c^2"]


@pytest.fixture(scope="module")
def scores() -> pd.DataFrame:
    return metaeval.load_example()


@pytest.fixture(scope="module")
def report(scores) -> Report:
    return build_report(scores, CONTROL, n_resamples=100, seed=3)


def _hostile(scores: pd.DataFrame) -> pd.DataFrame:
    """The example with its five systems renamed to names that LaTeX, HTML and Markdown
    treat as markup, on one metric (a small, fast report)."""
    names = dict(zip(pd.unique(scores["system"]), HOSTILE, strict=True))
    acc = scores[scores["metric"] == "accuracy"]
    return acc.assign(system=acc["system"].astype(str).replace(names))


# ------------------------------------------------------------------ the parts
def test_the_parts_are_the_analyses_own_tables(scores, report):
    pd.testing.assert_frame_equal(report.table, metaeval.means(scores))
    pd.testing.assert_frame_equal(
        report.tests, metaeval.compare(scores, CONTROL, adjust="holm", seed=3, n_resamples=100)
    )
    effects = metaeval.effects(scores, CONTROL)
    pd.testing.assert_frame_equal(report.effects, effects)
    pd.testing.assert_frame_equal(report.pooled, metaeval.pool(effects, method="REML"))
    pd.testing.assert_frame_equal(report.ranks, rank_intervals(scores, n_resamples=100, seed=3))
    assert list(report.parts()) == ["table", "tests", "pooled", "ranks"]
    assert scores.meta.report(CONTROL, n_resamples=100, seed=3).to_json() == report.to_json()


def test_without_a_control_there_are_ranks_but_no_tests_and_the_text_says_so(scores):
    rep = build_report(scores, metrics="accuracy", n_resamples=50, seed=1)
    assert rep.tests is None and rep.pooled is None and rep.effects is None
    assert set(rep.ranks["metric"]) == {"accuracy"} and set(rep.table["metric"]) == {"accuracy"}
    assert "No control system was named" in rep.methods
    assert "Holm" not in rep.methods and "pooled over tasks in" not in rep.methods
    assert json.loads(rep.to_json())["tests"] is None


# ------------------------------------------------------------------ the methods paragraph
@pytest.mark.parametrize(
    ("options", "says"),
    [
        (
            {},
            [
                "paired t-test",
                "Holm method",
                "restricted maximum likelihood",
                "Knapp–Hartung",
                "prediction intervals",
                "simultaneous 95%",
                "80 resamples and seed 7",
            ],
        ),
        (
            {
                "test": "wilcoxon",
                "adjust": "fdr_bh",
                "method": "DL",
                "pool_test": "z",
                "alpha": 0.1,
            },
            [
                "Wilcoxon signed-rank test",
                "Benjamini–Hochberg",
                "DerSimonian and Laird",
                "normal (Wald) intervals",
                "90% confidence",
                "simultaneous 90%",
            ],
        ),
        ({"adjust": None, "seed": None}, ["not adjusted", "(drawn: none was given)"]),
    ],
)
def test_the_methods_paragraph_is_written_from_the_options(scores, options, says):
    acc = scores[scores["metric"] == "accuracy"]
    kw = {"n_resamples": 80, "seed": 7} | options
    rep = build_report(acc, [CONTROL, "knn"], **kw)
    for words in says:
        assert words in rep.methods, (words, rep.methods)
    # its counts are those of the tables: tests with a p-value, families of one task and
    # metric of every treatment against both controls (3 treatments x 2 controls + the
    # two controls against each other = 8 pairs), and the tasks
    n_systems, n_tasks = acc["system"].nunique(), acc["task"].nunique()
    pairs = (n_systems - 2) * 2 + 2
    assert f"{pairs * n_tasks} tests in all" in rep.methods
    if options.get("adjust", "holm") is not None:
        assert f"{pairs} tests per family, {n_tasks} families" in rep.methods
    assert f"{n_systems} systems were evaluated on {n_tasks} tasks" in rep.methods
    assert f"and seed {rep.ranks.attrs['seed']}" in rep.methods  # the seed the ranks used


def test_bad_options_fail_before_any_work_naming_the_option(scores):
    with pytest.raises(OptionError, match="`metrics`.*'f1'"):
        build_report(scores, CONTROL, metrics="f1")
    with pytest.raises(OptionError, match="adjust"):
        build_report(scores, CONTROL, adjust="hochberg")
    with pytest.raises(OptionError, match="n_resamples"):
        build_report(scores, CONTROL, n_resamples=10.5)


# ------------------------------------------------------------------ the same numbers everywhere
_NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+(?![\w.])")


def _formatted(doc: dict) -> set[str]:
    """Every float of the JSON document, through the one rounding function."""
    out: set[str] = set()
    for part in ("table", "tests", "pooled", "ranks"):
        for record in doc[part] or []:
            for value in record.values():
                if isinstance(value, float):
                    out.add(format_cell(value, 3))
    return out


def test_every_number_in_markdown_is_a_json_number_rounded_once(report):
    doc = json.loads(report.to_json())
    md = report.to_markdown().split("## Methods")[0]
    shown = set(_NUMBER.findall(md))
    assert len(shown) > 100
    allowed = _formatted(doc)
    # p-values below 0.001 read "< 0.001"; every other number is a rounded JSON float
    assert shown <= allowed, sorted(shown - allowed)[:10]
    # the leaderboard card: the ranks' score and each task's mean, SE and CI
    ranks = pd.DataFrame(doc["ranks"])
    means = pd.DataFrame(doc["table"])
    top = ranks[ranks["metric"] == "accuracy"].sort_values("rank").iloc[0]
    row = means[(means["system"] == top["system"]) & (means["metric"] == "accuracy")].iloc[0]
    card = md.split("## Leaderboard: accuracy")[1].split("\n## ")[0]
    first = card.strip().splitlines()[2]
    assert first.startswith(
        f"| {top['system'].replace('_', chr(92) + '_')} | "
        f"{format_number(top['score'], 3)} | "
        f"{top['rank']} [{top['rank_low']}, {top['rank_high']}] | "
        f"{top['tie_group']} | {format_number(row['mean'], 3)} | "
        f"{row['n']} | {format_number(row['se'], 3)} | "
        f"[{format_number(row['ci_low'], 3)}, {format_number(row['ci_high'], 3)}]"
    )


def test_the_cards_show_each_systems_own_standard_error():
    """Three models that agree on 50 binary items (17 right): each card shows the SE the
    harnesses report, s/√n = 0.068 (Inspect's stderr(), scipy.stats.sem), and its t
    interval, not the two-way ANOVA's residual, which is 0 here (issue 39, item 9)."""
    from scipy import stats

    value = np.r_[np.ones(17), np.zeros(33)]
    scores = pd.concat(
        [
            pd.DataFrame(
                {"task": "t", "query": np.arange(50), "system": s, "metric": "acc", "value": value}
            )
            for s in "abc"
        ],
        ignore_index=True,
    )
    rep = build_report(scores, n_resamples=20, seed=1)
    se = stats.sem(value)
    ci = stats.ttest_1samp(value, 0).confidence_interval(0.95)
    card = rep.to_markdown().split("## Leaderboard: acc")[1].split("\n## ")[0]
    rows = [line for line in card.splitlines() if line.startswith("| ") and "system" not in line]
    assert len(rows) == 3 and round(se, 3) == 0.068
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[-2] == format_number(se, 3)
        assert cells[-1] == f"[{format_number(ci.low, 3)}, {format_number(ci.high, 3)}]"
    assert "own standard error" in rep.methods and "ANOVA" not in rep.methods


def test_json_keeps_full_precision_and_the_other_formats_show_the_same_numbers(report):
    doc = json.loads(report.to_json())
    for part in ("table", "tests", "pooled", "ranks"):
        frame = getattr(report, part)
        back = pd.DataFrame(doc[part])
        for col in frame.select_dtypes("number").columns:
            np.testing.assert_array_equal(back[col].to_numpy(float), frame[col].to_numpy(float))
    tables = report.to_markdown().split("## Per-task means")[1].split("## Methods")[0]
    md = set(_NUMBER.findall(tables))
    tex = report.to_latex().replace("$-$", "-")
    html = report.to_html(figures=False)
    # the leaderboard cards show the same cells in Markdown and HTML
    cards = report.to_markdown().split("## Per-task means")[0]
    card_numbers = set(_NUMBER.findall(cards))
    assert card_numbers and card_numbers <= set(_NUMBER.findall(html.split("<h2 id=")[0]))
    for text in (tex, html):
        # the tables' numbers, in the same rounding (LaTeX writes a minus as $-$)
        assert md <= set(_NUMBER.findall(text)), sorted(md - set(_NUMBER.findall(text)))[:10]
    # the same paragraph, escaped for HTML (an apostrophe becomes &#x27;)
    assert escape_html(report.methods) in html and "Methods" in tex


def test_html_draws_a_forest_per_metric_and_control(scores):
    rep = build_report(scores, [CONTROL, "knn"], n_resamples=20, seed=1)
    page = rep.to_html()
    panels = rep.effects[["metric", "control"]].drop_duplicates()
    assert len(panels) == 4  # two metrics x two controls
    assert page.count('<img id="fig-forest-') == len(panels)
    assert page.count('<img id="fig-ranks"') == 1


def test_markdown_escapes_names():
    scores = _hostile(metaeval.load_example())
    rep = build_report(scores, n_resamples=20, seed=1)
    md = rep.to_markdown()
    assert "R&D 50%" in md and r"\#1\_{x}" in md and r"\$cost\$ \~a" in md
    assert "back\\\\slash" in md and r"a\<b\>\|c^2" in md


# ------------------------------------------------------------------ LaTeX
@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex installed")
def test_latex_with_hostile_names_compiles(tmp_path):
    scores = _hostile(metaeval.load_example())
    rep = build_report(scores, HOSTILE[0], n_resamples=50, seed=1)
    doc = "\n".join(
        [
            r"\documentclass{article}",
            r"\usepackage[utf8]{inputenc}",
            r"\usepackage{booktabs,graphicx}",
            r"\begin{document}",
            rep.to_latex(),
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
    assert "Undefined control sequence" not in log and "Missing character" not in log
    assert "Overfull \\hbox" not in log  # every table shrinks to the line
    if shutil.which("pdftotext") is None:
        return
    text = subprocess.run(
        ["pdftotext", "-layout", "r.pdf", "-"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert "R&D 50%" in text and "back\\slash" in text and "$cost$" in text and "a<b>|c" in text


@pytest.mark.skipif(
    shutil.which("pdflatex") is None or shutil.which("pdftotext") is None,
    reason="needs pdflatex and pdftotext",
)
def test_latex_tables_of_one_treatment_over_six_collections_print_at_the_text_size(tmp_path):
    """The report's wide tables (tests against the control: 18 columns; pooled effects: 29)
    were scaled to the line at about 3 pt; tables wider than 10 columns with fewer rows
    print their columns as rows. Measured on the compiled PDF: no number below 6.5 pt
    (pdftotext's word boxes: 9.96 pt at the text size; the per-task means' 10 columns,
    kept as they are, scale to 6.9 pt) (issue 39, item 20)."""
    rng = np.random.default_rng(3)
    tasks = ["trec-covid", "nfcorpus", "fiqa", "arguana", "scidocs", "scifact"]
    scores = pd.DataFrame(
        [
            (t, f"q{q}", s, "nDCG@10", rng.normal(0.5 + 0.05 * (s == "colberter"), 0.1))
            for t in tasks
            for q in range(30)
            for s in ("tasb", "colberter")
        ],
        columns=["task", "query", "system", "metric", "value"],
    )
    rep = build_report(scores, "tasb", family="tasks", n_resamples=50, seed=1)
    tex = rep.to_latex()
    heights = latex_number_heights(tex, tmp_path)
    assert min(heights) > 6.5, sorted(heights)[:5]
    assert tex.count("\\begin{tabular}") == len(rep.parts())
    pooled_row = rep.pooled.shape[1] - 1  # the transposed pooled table: a row per column
    assert tex.count("\\\\") >= pooled_row
    # forced as it was: the pooled row scaled down again
    flat = latex_number_heights(rep.to_latex(transpose=False), tmp_path)
    assert min(flat) < 5, sorted(flat)[:5]


# ------------------------------------------------------------------ HTML
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PROBE = """<script>
window.addEventListener("load", function () {
  const t = document.querySelector("#t-ranks");
  const th = t.tHead.rows[0].cells[3];  /* rank */
  th.click(); th.click();  /* descending */
  const first = t.tBodies[0].rows[0].cells[3].textContent;
  const imgs = Array.from(document.images).map(i => [i.id, i.naturalWidth]);
  const res = performance.getEntriesByType("resource").map(r => r.name);
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify({first: first, imgs: imgs, res: res,
    tables: document.querySelectorAll("table").length});
  document.body.appendChild(pre);
});
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium (Debian's chromium) is absent")
def test_html_is_one_offline_file_a_browser_shows_with_tables_and_figures(tmp_path):
    scores = _hostile(metaeval.load_example())
    rep = build_report(scores, HOSTILE[0], n_resamples=50, seed=1)
    page = rep.to_html()
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)  # nothing external
    assert "<script src" not in page and "<link" not in page
    assert "R&amp;D 50%" in page and "a&lt;b&gt;|c^2" in page and "<b>" not in page
    path = tmp_path / "report.html"
    path.write_text(page.replace("</body>", PROBE + "</body>", 1), encoding="utf-8")
    with tempfile.TemporaryDirectory() as profile:
        flags = [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            f"--user-data-dir={profile}",
            "--window-size=1400,1000",
            "--enable-logging=stderr",
            "--v=0",
        ]
        run = subprocess.run(
            [*flags, "--virtual-time-budget=5000", "--dump-dom", path.as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        shot = tmp_path / "report.png"
        subprocess.run(
            [*flags, f"--screenshot={shot}", path.as_uri()],
            capture_output=True,
            timeout=120,
            check=True,
        )
    assert "Uncaught" not in run.stderr, run.stderr[-2000:]  # no console error
    found = re.search(r'<pre id="probe">(.*?)</pre>', run.stdout, re.S)
    assert found, run.stdout[-2000:]
    probe = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert probe["tables"] == 5  # the leaderboard card, means, tests, pooled, ranks
    assert dict(probe["imgs"]).keys() == {"fig-ranks", "fig-forest-0"}
    assert all(width > 100 for _, width in probe["imgs"])  # the PNGs decoded
    assert [r for r in probe["res"] if not r.startswith(("data:", "file:"))] == []
    assert probe["first"] == str(rep.ranks["rank"].max())  # the header sorts the table
    assert shot.stat().st_size > 5_000


def test_the_methods_paragraph_counts_in_the_right_number(scores):
    # one treatment against one control on one task: "1 test", "1 family", not "1 tests"
    one = scores[(scores["metric"] == "accuracy") & (scores["task"] == scores["task"].iloc[0])]
    pair = one[one["system"].isin([CONTROL, "knn"])]
    with pytest.warns(metaeval.DegenerateWarning) as record:
        rep = build_report(pair, CONTROL, n_resamples=20, seed=0)
    said = [str(w.message) for w in record]
    assert any("one effect" in m for m in said)  # k = 1 task
    assert any("changes nothing" in m for m in said)  # Holm on a family of one test
    assert "2 systems were evaluated on 1 task (" in rep.methods, rep.methods
    assert "1 test in all" in rep.methods and "1 test per family, 1 family)" in rep.methods
    assert "1 tests" not in rep.methods and "1 families" not in rep.methods


# ------------------------------------------------------------------ clusters (issue 39, item 10)
def clustered_scores() -> pd.DataFrame:
    """Three systems on four tasks of 60 questions about 12 passages (5 each); each system
    does better or worse on whole passages, so the questions of a passage are not
    independent: clustered standard errors are about twice the naive ones."""
    rng = np.random.default_rng(10)
    frames = []
    for t in range(4):
        passage = np.repeat(np.arange(12), 5)
        base = rng.normal(size=60)
        for i, system in enumerate(["A", "B", "C"]):
            value = base + 0.15 * i + rng.normal(size=12)[passage] + 0.5 * rng.normal(size=60)
            frames.append(
                pd.DataFrame(
                    {
                        "task": f"t{t}",
                        "query": np.arange(60),
                        "system": system,
                        "metric": "score",
                        "value": value,
                        "passage": passage.astype(str),
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def test_cluster_reaches_every_part_of_the_report():
    scores = clustered_scores()
    kw = dict(n_resamples=40, seed=1)
    rep = build_report(scores, "A", cluster="passage", **kw)
    pd.testing.assert_frame_equal(rep.table, metaeval.means(scores, cluster="passage"))
    tests = metaeval.compare(scores, "A", adjust="holm", cluster="passage", **kw)
    pd.testing.assert_frame_equal(rep.tests, tests)
    effects = metaeval.effects(scores, "A", cluster="passage")
    pd.testing.assert_frame_equal(rep.effects, effects)
    pd.testing.assert_frame_equal(rep.pooled, metaeval.pool(effects, method="REML"))
    pd.testing.assert_frame_equal(rep.ranks, rank_intervals(scores, cluster="passage", **kw))
    # the clusters matter here: the t-tests' standard errors are about twice the naive ones
    naive = metaeval.compare(scores, "A", adjust="holm", **kw)
    assert (rep.tests["se"] / naive["se"]).min() > 1.5
    assert rep.options["cluster"] == "passage"
    assert json.loads(rep.to_json())["options"]["cluster"] == "passage"
    assert "clustered by passage" in rep.methods
    assert "clustered" not in build_report(scores, "A", **kw).methods
    via = scores.meta.report("A", cluster="passage", **kw)
    assert via.to_json() == rep.to_json()


def test_cluster_with_a_test_that_has_no_clustered_form_is_refused():
    scores = clustered_scores()
    with pytest.raises(OptionError, match=r"test='wilcoxon'.*cluster='passage'"):
        build_report(scores, "A", test="wilcoxon", cluster="passage", n_resamples=20, seed=1)
    # without a control there are no tests: the means and ranks are clustered
    rep = build_report(scores, test="wilcoxon", cluster="passage", n_resamples=20, seed=1)
    pd.testing.assert_frame_equal(rep.table, metaeval.means(scores, cluster="passage"))

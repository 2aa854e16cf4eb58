"""What a report's reader must be told, in every format (issue 39, items 11, 22 and 31):
a Knapp–Hartung interval narrower than the normal one (with the ad hoc interval beside it),
tasks and queries left out of the ranks, ``prob_best`` summing past 1, the methods paragraph
naming tasks and metrics for what they are, and every user string escaped in every format."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from html import unescape

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import DegenerateWarning, PairingWarning, rank_intervals
from metaeval._options import format_number, format_p
from metaeval.workflows import Report, build_report

#: metafor 3.8.1, rma(yi, vi, method="REML", test=...) on four tasks whose effects agree more
#: closely than their variances imply (tests/fixtures/metafor/adhoc_four_tasks.R prints them):
#: (ci.lb, ci.ub, pval)
YI = (0.066, 0.070, 0.067, 0.069)
SE = (0.0081, 0.0074, 0.0088, 0.0079)
METAFOR = {
    "knha": (6.519055114e-02, 7.110252356e-02, 5.580497797e-06),
    "adhoc": (0.0554105742158, 0.0808825004914, 0.0004411494371),
}
FORMATS = ("markdown", "latex", "html", "json")


def _four_tasks(metric: str = "acc", control: str = "base", n: int = 100) -> pd.DataFrame:
    """Two systems on four tasks whose mean differences are YI with standard errors SE
    exactly (md effects: the mean and SD/√n of the per-query differences)."""
    rng = np.random.default_rng(0)
    parts = []
    for t, (y, s) in enumerate(zip(YI, SE, strict=True)):
        z = rng.standard_normal(n)
        z = (z - z.mean()) / z.std(ddof=1)
        base = rng.uniform(0.3, 0.6, n)
        query = [f"q{i}" for i in range(n)]
        for system, value in ((control, base), ("new", base + y + s * np.sqrt(n) * z)):
            parts.append(
                pd.DataFrame(
                    {
                        "task": f"task{t}",
                        "query": query,
                        "system": system,
                        "metric": metric,
                        "value": value,
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


def _narrow_report(**kw) -> Report:
    with pytest.warns(DegenerateWarning, match="narrower than the normal"):
        return build_report(
            _four_tasks(**kw),
            kw.get("control", "base"),
            effect="md",
            adjust=None,
            n_resamples=30,
            seed=1,
        )


def _text(rep: Report, fmt: str) -> str:
    return {
        "markdown": rep.to_markdown,
        "latex": rep.to_latex,
        "json": rep.to_json,
        "html": lambda: rep.to_html(figures=False),
    }[fmt]()


def _plain(text: str) -> str:
    """HTML, LaTeX or Markdown text with its escapes undone, for reading the words."""
    for latex, plain in (
        ("$-$", "-"),
        ("{[}", "["),
        ("{]}", "]"),
        (r"\textless{}", "<"),
        (r"\textgreater{}", ">"),
        ("$<$", "<"),
        ("--", "–"),
    ):
        text = text.replace(latex, plain)
    return re.sub(r"\\([^A-Za-z])", r"\1", unescape(text))


def _section(text: str, fmt: str, part: str) -> str:
    """The text of a format from the start of ``part``'s table to the next table's title."""
    starts = {
        "markdown": {"pooled": "## Pooled effects", "ranks": "## Ranks", "methods": "## Methods"},
        "latex": {
            "pooled": r"\caption{Pooled effects}",
            "ranks": r"\caption{Ranks}",
            "methods": r"\paragraph{Methods}",
        },
        "html": {
            "pooled": '<h2 id="pooled">',
            "ranks": '<h2 id="ranks">',
            "methods": '<h2 id="methods">',
        },
    }[fmt]
    after = text.split(starts[part], 1)[1]
    ends = [after.find(s) for s in starts.values() if after.find(s) > 0]
    return after[: min(ends)] if ends else after


# ------------------------------------------------------------------ item 11
def test_pool_itself_matches_metafor_on_the_four_tasks():
    eff = metaeval.effects(_four_tasks(), "base", effect="md")
    np.testing.assert_allclose(eff["effect"], YI, rtol=1e-12)
    np.testing.assert_allclose(np.sqrt(eff["variance"]), SE, rtol=1e-12)
    for ci, (low, high, p) in METAFOR.items():
        with pytest.warns(DegenerateWarning) if ci == "knha" else _no_warning():
            got = metaeval.pool(eff, test=ci)
        np.testing.assert_allclose(
            got[["ci_low", "ci_high", "p_value"]].iloc[0], (low, high, p), rtol=1e-8
        )


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_narrow_knapp_hartung_interval_is_said_under_the_pooled_table_and_in_the_methods(fmt):
    rep = _narrow_report()
    # the pooled table is pool()'s, Knapp–Hartung as asked (p < 0.001 by metafor's knha)
    knha_low, knha_high, knha_p = METAFOR["knha"]
    np.testing.assert_allclose(
        rep.pooled[["ci_low", "ci_high", "p_value"]].iloc[0],
        (knha_low, knha_high, knha_p),
        rtol=1e-8,
    )
    low, high, p = METAFOR["adhoc"]
    text = _text(rep, fmt)
    if fmt == "json":
        doc = json.loads(text)
        notes = [n for n in doc["notes"] if n["part"] == "pooled"]
        assert len(notes) == 1
        note = notes[0]
        assert (note["metric"], note["treatment"], note["control"]) == ("acc", "new", "base")
        np.testing.assert_allclose(
            (note["adhoc_ci_low"], note["adhoc_ci_high"], note["adhoc_p_value"]),
            (low, high, p),
            rtol=1e-8,
        )
        assert "narrower than the normal" in note["text"]
        methods = doc["methods"]
    else:
        under = _plain(_section(text, fmt, "pooled"))
        # the note under the pooled table names the row and gives the ad hoc interval and p
        assert "narrower than the normal" in under, under[-800:]
        shown = f"[{format_number(low, 3)}, {format_number(high, 3)}]"
        assert shown in under, under[-800:]
        assert f"p {format_p(p, 3, equals=True)}" in under, under[-800:]
        methods = _plain(_section(text, fmt, "methods"))
    assert "narrower than the normal" in methods and "ad hoc" in methods
    assert "Röver, Knapp and Friede 2015" in methods


def test_no_note_where_knapp_hartung_is_not_narrow_or_adhoc_was_asked():
    scores = metaeval.load_example()
    rep = build_report(scores, "logistic_regression", n_resamples=20, seed=1)
    assert not [n for n in rep.notes if n["part"] == "pooled"]
    assert "narrower than the normal" not in rep.methods
    adhoc = build_report(
        _four_tasks(), "base", effect="md", pool_test="adhoc", adjust=None, n_resamples=20, seed=1
    )
    assert not [n for n in adhoc.notes if n["part"] == "pooled"]
    assert "narrower than the normal" not in adhoc.methods


# ------------------------------------------------------------------ item 31: a system lacks a task
def test_a_system_without_one_task_is_ranked_over_the_tasks_every_system_has():
    scores = metaeval.load_example()
    acc = scores[scores["metric"] == "accuracy"]
    lacking = acc[~((acc["system"] == "knn") & (acc["task"] == "wine"))]
    with pytest.warns(PairingWarning) as record:
        rep = build_report(lacking, "logistic_regression", n_resamples=40, seed=5)
    said = " ".join(str(w.message) for w in record)
    assert "knn" in said and "wine" in said
    # pool() handles the gap: knn pooled over 3 of 4 tasks
    knn = rep.pooled.set_index("treatment").loc["knn"]
    assert (knn["k"], knn["k_total"]) == (3, 4)
    # the ranks are rank_intervals() of the tasks that every system has, same seed
    common = lacking[lacking["task"] != "wine"]
    pd.testing.assert_frame_equal(rep.ranks, rank_intervals(common, n_resamples=40, seed=5))
    notes = [n for n in rep.notes if n["part"] == "ranks"]
    assert len(notes) == 1 and "wine" in notes[0]["text"] and "knn" in notes[0]["text"]
    for fmt in ("markdown", "latex", "html"):
        under = _plain(_section(_text(rep, fmt), fmt, "ranks"))
        assert "3 of 4 tasks" in under and "wine" in under, under[-600:]
    assert "3 of 4 tasks" in rep.methods


def test_queries_that_one_system_lacks_are_left_out_of_the_ranks_and_said():
    scores = metaeval.load_example()
    acc = scores[scores["metric"] == "accuracy"]
    iris = acc["task"] == "iris"
    gone = acc[iris]["query"].drop_duplicates().iloc[:5]
    lacking = acc[~(iris & acc["query"].isin(gone) & (acc["system"] == "knn"))]
    with pytest.warns(PairingWarning):
        rep = build_report(lacking, "logistic_regression", n_resamples=40, seed=5)
    common = lacking[~((lacking["task"] == "iris") & lacking["query"].isin(gone))]
    pd.testing.assert_frame_equal(rep.ranks, rank_intervals(common, n_resamples=40, seed=5))
    (note,) = [n for n in rep.notes if n["part"] == "ranks"]
    assert "5 of 150 queries" in note["text"] and "iris" in note["text"]


# ------------------------------------------------------------------ item 22: counts and words
def test_the_methods_paragraph_names_tasks_and_metrics_for_what_they_are():
    rep = build_report(metaeval.load_example(), n_resamples=20, seed=1)
    first = rep.methods.split(". ")[0]
    assert first == (
        "5 systems were evaluated on 4 tasks (breast_cancer, digits, iris, wine) "
        "by 2 metrics (accuracy, p_true_class)"
    ), first
    assert "tasks (accuracy" not in rep.methods


def _tied(n_tasks: int = 3, n: int = 12) -> pd.DataFrame:
    """Three systems with 0/1 scores that agree on most items: their means tie often."""
    rng = np.random.default_rng(11)
    rows = []
    for t in range(n_tasks):
        truth = rng.integers(0, 2, n)
        for s, flip in (("a", 0.10), ("b", 0.10), ("c", 0.4)):
            value = np.where(rng.random(n) < flip, 1 - truth, truth)
            rows += [(f"t{t}", f"q{i}", s, "acc", float(v)) for i, v in enumerate(value)]
    return pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])


def test_prob_best_past_one_is_explained_by_ties_under_the_ranks():
    scores = _tied()
    rep = build_report(scores, n_resamples=400, seed=2)
    total = rep.ranks.groupby("metric")["prob_best"].sum()["acc"]
    assert total > 1.0  # tied firsts count for each system
    (note,) = [n for n in rep.notes if n["part"] == "ranks"]
    assert format_number(total, 2) in note["text"] and "tie" in note["text"]
    for fmt in ("markdown", "latex", "html"):
        assert format_number(total, 2) in _plain(_section(_text(rep, fmt), fmt, "ranks"))
    # without ties the column sums to 1 and nothing is said
    plain = build_report(metaeval.load_example(), n_resamples=50, seed=2)
    assert np.allclose(plain.ranks.groupby("metric")["prob_best"].sum(), 1.0)
    assert not [n for n in plain.notes if n["part"] == "ranks"]


# ------------------------------------------------------------------ item 31: escaping
EVIL_METRIC = "[l](javascript:alert(1))"
EVIL_CONTROL = "<img src=x onerror=alert(1)>"
EVIL_TASK = "*t* `x` &lt;b&gt;"


def _evil() -> pd.DataFrame:
    scores = _four_tasks(metric=EVIL_METRIC, control=EVIL_CONTROL)
    return scores.assign(task=scores["task"].replace({"task0": EVIL_TASK}))


@pytest.fixture(scope="module")
def evil_report() -> Report:
    with pytest.warns(DegenerateWarning):
        return build_report(_evil(), EVIL_CONTROL, effect="md", adjust=None, n_resamples=30, seed=1)


def _elements(html: str) -> list[tuple[str, dict]]:
    """The elements of an HTML text and their attributes, as a browser's parser sees them."""
    from html.parser import HTMLParser

    found: list[tuple[str, dict]] = []

    class Parser(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, dict(attrs)))

    Parser().feed(html)
    return found


def test_markdown_escapes_every_user_string_the_methods_paragraph_included(evil_report):
    markdown_it = pytest.importorskip("markdown_it")
    md = evil_report.to_markdown()
    html = markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(md)
    tags = {tag for tag, _ in _elements(html)}
    assert not tags & {"img", "a", "script", "em", "code", "strong"}, tags
    text = unescape(re.sub(r"<[^>]+>", "", html))
    for name in (EVIL_METRIC, EVIL_CONTROL, EVIL_TASK):
        assert name in text  # shown as it is, not interpreted
    methods = text.split("Methods", 1)[1]
    assert EVIL_METRIC in methods and EVIL_CONTROL in methods


def test_latex_escapes_every_user_string_and_compiles(evil_report, tmp_path):
    tex = evil_report.to_latex()
    assert r"\textless{}img src=x onerror=alert(1)\textgreater{}" in tex
    if shutil.which("pdflatex") is None:
        pytest.skip("no pdflatex installed")
    doc = "\n".join(
        [
            r"\documentclass{article}",
            r"\usepackage[utf8]{inputenc}",
            r"\usepackage{booktabs,graphicx}",
            r"\begin{document}",
            tex,
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
    if shutil.which("pdftotext") is None:
        return
    text = subprocess.run(
        ["pdftotext", "r.pdf", "-"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    ).stdout
    flat = " ".join(text.split())
    for name in (EVIL_METRIC, EVIL_CONTROL, EVIL_TASK):
        assert " ".join(name.split()) in flat, name


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _browser(path, tmp_path) -> tuple[str, object]:
    """The DOM Chromium builds from ``path`` and a screenshot of the page."""
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
            "--window-size=1400,1400",
        ]
        run = subprocess.run(
            [*flags, "--virtual-time-budget=3000", "--dump-dom", path.as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
        )
        shot = tmp_path / f"{path.stem}.png"
        subprocess.run(
            [*flags, f"--screenshot={shot}", path.as_uri()],
            capture_output=True,
            timeout=120,
            check=True,
        )
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout, shot


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium (Debian's chromium) is absent")
def test_no_element_is_injected_into_the_html_page_or_the_rendered_markdown(evil_report, tmp_path):
    markdown_it = pytest.importorskip("markdown_it")
    page = tmp_path / "report.html"
    page.write_text(evil_report.to_html(), encoding="utf-8")
    md = tmp_path / "markdown.html"
    body = markdown_it.MarkdownIt("commonmark").enable("table").render(evil_report.to_markdown())
    md.write_text(f"<!DOCTYPE html><html><body>{body}</body></html>", encoding="utf-8")
    for path, images in ((page, {"fig-ranks", "fig-forest-0"}), (md, set())):
        dom, shot = _browser(path, tmp_path)
        elements = _elements(dom)
        assert {a.get("id") for t, a in elements if t == "img"} == images
        assert not [t for t, _ in elements if t in ("a", "iframe", "object", "embed")]
        assert not [a for _, a in elements if any(k.startswith("on") for k in a)]
        assert len([t for t, _ in elements if t == "script"]) == (1 if path == page else 0)
        shown = unescape(re.sub(r"<[^>]+>", "", dom))
        assert EVIL_CONTROL in shown and EVIL_METRIC in shown
        assert shot.stat().st_size > 5_000

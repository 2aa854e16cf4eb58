"""The command's tables on a terminal and in Markdown (issue 39, items 22 and 31): on a
terminal narrower than a table no name loses a character (rich cropped file names by 1–4
characters with an ellipsis), names are text and never rich markup, and Markdown tables
escape every name with the one Markdown escaping."""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest

from metaeval_cli._console import Output

FILES = [
    "runs/experiment-2024/bm25_baseline_tuned.csv",
    "runs/experiment-2024/dense_retriever_v2.csv",
    "runs/experiment-2024/splade.csv",
]
SYSTEMS = ["bm25_baseline_tuned_with_rm3_expansion", "[red]dense[/red]", "a[/]b"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _printed(monkeypatch, width: int, frame: pd.DataFrame, title: str = "Systems") -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    stream = _Terminal()
    Output("pretty", stream=stream).table(title, frame)
    return ANSI.sub("", stream.getvalue())


def _column(text: str, header: str) -> str:
    """The text of the left-aligned column ``header``, its folded lines joined."""
    lines = text.splitlines()
    head = next(
        i for i, line in enumerate(lines) if re.search(rf"(^|\s){re.escape(header)}(\s|$)", line)
    )
    start = re.search(rf"(^|\s)({re.escape(header)})(\s|$)", lines[head]).start(2)
    body = [line for line in lines[head + 2 :] if line.strip()]
    return "".join(line[start:].split("  ")[0].strip() for line in body)


@pytest.mark.parametrize("width", [60, 80, 100])
def test_no_name_is_cut_on_a_narrow_terminal(monkeypatch, width):
    systems = pd.DataFrame(
        {"alias": ["System_1", "System_2", "System_3"], "system": SYSTEMS, "file": FILES}
    )
    text = _printed(monkeypatch, width, systems)
    assert "…" not in text, text
    assert _column(text, "file") == "".join(FILES), text
    means = pd.DataFrame(
        {
            "system": SYSTEMS,
            "nDCG@10": [0.41234, 0.5, 0.6],
            "AP": [0.3] * 3,
            "RR@10": [0.5] * 3,
            "Judged@10": [0.9] * 3,
            "recall@1000": [0.8] * 3,
        }
    )
    text = _printed(monkeypatch, width, means, "Means")
    assert "…" not in text, text
    assert _column(text, "system") == "".join(SYSTEMS), text
    for head in ("nDCG@10", "Judged@10", "recall@1000", "0.4123"):
        assert head in text, text  # numbers and headers are never folded


def test_names_are_text_not_rich_markup(monkeypatch):
    frame = pd.DataFrame({"system": SYSTEMS, "score": [1.0, 2.0, 3.0]})
    text = _printed(monkeypatch, 120, frame, "Table [bold]x[/bold]")
    for name in (*SYSTEMS, "Table [bold]x[/bold]"):
        assert name in text, text


def test_markdown_tables_escape_every_name():
    markdown_it = pytest.importorskip("markdown_it")
    stream = io.StringIO()
    out = Output("markdown", stream=stream)
    out.note("control: [l](javascript:alert(1))")
    out.table(
        "Means: <img src=x onerror=alert(1)>",
        pd.DataFrame({"system": ["*em*", "<b>x</b>", "a|b"], "v": [1.0, 2.0, 3.0]}),
    )
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(stream.getvalue())
    for tag in ("<img", "<a ", "<em>", "<b>"):
        assert tag not in html, html
    assert html.count("<tr>") == 4  # the header and three rows: a | in a name is no border
    for name in ("*em*", "&lt;b&gt;x&lt;/b&gt;", "a|b", "[l](javascript:alert(1))"):
        assert name in html, html

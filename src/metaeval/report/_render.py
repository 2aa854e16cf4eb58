"""Rendering: escaping for LaTeX and HTML, cell text, and the one path to pandas' Styler.

:func:`escape` (and :class:`Markup` for deliberate markup), the text of a table cell
(value, interval, p-value and marks, through :func:`metaeval._options.format_cell`),
and :func:`text_styler`/:func:`latex_table`, the one way rendered cells become a
LaTeX or HTML table: :func:`metaeval.report.to_latex`, :func:`~metaeval.report.to_html`
and the command's LaTeX output all take it.
"""

from __future__ import annotations

import html
import re
from typing import Any

import numpy as np
import pandas as pd

from .._options import (
    TextTarget,
    escape_markdown,
    format_number,
    format_p,
)
from ..errors import OptionError, SchemaError, check_option, excerpt

__all__ = ["Markup", "escape", "escape_latex", "text_styler", "latex_table", "add_latex_notes"]

_LATEX = {
    "\n": " ",
    "\r": " ",
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    # glyphs that the default OT1 font encoding puts elsewhere (< prints ¡, > ¿, | —, " ”)
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    '"': r"\texttt{\char34}",  # OT1 has no straight double quote but in typewriter
    # a row or a line that starts with [ after \\ would be read as \\'s optional argument
    "[": "{[}",
    "]": "{]}",
    # ` is typeset as an opening quote (`` and !` ?` as ligatures): the grave accent itself
    "`": r"\textasciigrave{}",
}


def escape_latex(text: Any) -> str:
    r"""``text`` with LaTeX's special characters ``\ & % $ # _ { } ~ ^`` escaped.

    Line breaks become spaces (a blank line would end a table cell's paragraph).
    ``< > | "``, which the default (OT1) font encoding prints as other glyphs
    (¡ ¿ — ”), become ``\textless{}``, ``\textgreater{}``, ``\textbar{}`` and a
    typewriter ``"`` (``\texttt{\char34}``), all in plain LaTeX without packages.
    Brackets are braced (``{[}``, ``{]}``): a table row that starts with ``[`` would
    otherwise be read as the optional argument of the ``\\`` before it. A backtick
    becomes ``\textasciigrave{}`` (LaTeX prints an opening quote), and ``--`` becomes
    ``-{}-`` (not a dash).
    Everything then reads as the literal text: a name such as ``\write18{...}``
    prints as itself instead of running.

    Parameters
    ----------
    text : object
        The text (anything else is converted with ``str``).

    Examples
    --------
    >>> from metaeval.report import escape_latex
    >>> print(escape_latex("50% of R&D_{x}~^#$\\"))
    50\% of R\&D\_\{x\}\textasciitilde{}\textasciicircum{}\#\$\textbackslash{}
    >>> print(escape_latex('<a|"b">'))
    \textless{}a\textbar{}\texttt{\char34}b\texttt{\char34}\textgreater{}
    """
    # "--" and "---" would print as dashes: a hyphen before a hyphen is closed with {}
    return re.sub(r"-(?=-)", "-{}", "".join(_LATEX.get(c, c) for c in str(text)))


class Markup(str):
    r"""Text that is already LaTeX (or HTML) markup, passed through unescaped.

    Every other string that metaeval writes into LaTeX or HTML — names of
    tasks, systems and metrics, headers, captions, notes — is escaped by
    :func:`escape`. Wrap a caption in ``Markup`` to use markup in it on
    purpose, e.g. ``to_latex(table, caption=Markup(r"Effects, $\alpha = 0.05$."))``.
    """

    __slots__ = ()


def escape(text: Any, fmt: str) -> str:
    r"""``text`` escaped for ``fmt`` (``"latex"``, ``"html"`` or ``"markdown"``), unless it
    is :class:`Markup`.

    The one escaping function per format of metaeval's LaTeX, HTML and Markdown output,
    in Python and in the ``metaeval`` command alike: :func:`escape_latex`,
    ``html.escape`` (quotes too) and ``metaeval._options.escape_markdown``
    (a backslash before every character that could start Markdown markup).

    Parameters
    ----------
    text : object
        The text (anything else is converted with ``str``); a :class:`Markup` comes
        back as it is.
    fmt : {"latex", "html", "markdown"}
        The output format.

    Examples
    --------
    >>> from metaeval.report import Markup, escape
    >>> escape("bm25_v2 <b>", "latex"), escape("bm25_v2 <b>", "html")
    ('bm25\\_v2 \\textless{}b\\textgreater{}', 'bm25_v2 &lt;b&gt;')
    >>> print(escape("[l](javascript:alert(1))", "markdown"))
    \[l\](javascript:alert(1))
    >>> escape(Markup("$x$"), "latex")
    '$x$'
    """
    if isinstance(text, Markup):
        return str(text)
    if fmt == "latex":
        return escape_latex(text)
    if fmt == "markdown":
        return escape_markdown(text)
    check_option("fmt", fmt, ["latex", "html", "markdown"])
    return html.escape(str(text))


_LABEL = re.compile(r"^[A-Za-z0-9:._+/-]+$")


_POSITION = re.compile(r"^[htbpH!]+$")


def check_latex_options(label: str | None, position: str | None) -> None:
    """``\\label`` and float positions cannot be escaped: refuse what would break LaTeX."""
    if label is not None and not _LABEL.match(str(label)):
        raise OptionError(
            f"`label` may hold letters, digits and : . _ + / - only, but {excerpt(label)} was "
            "passed (a LaTeX label cannot be escaped)."
        )
    if position is not None and not _POSITION.match(str(position)):
        raise OptionError(
            f"`position` is a LaTeX float position such as 't', 'htbp' or 'H', but "
            f"{excerpt(position)} was passed."
        )


class CaptionMarkup:
    """The few pieces of markup captions need, in LaTeX or HTML."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt

    def esc(self, text: Any) -> str:
        return escape(text, self.fmt)

    def math(self, latex: str, plain: str) -> str:
        return f"${latex}$" if self.fmt == "latex" else html.escape(plain)

    @property
    def pct(self) -> str:
        return "\\%" if self.fmt == "latex" else "%"

    @property
    def dag(self) -> str:
        return "\\dag{}" if self.fmt == "latex" else "†"


_NOTE_MARKS = {"latex": (r"\ddag{}", r"\S{}", r"\P{}"), "html": ("‡", "§", "¶")}


def note_mark(i: int, fmt: str) -> str:
    marks = _NOTE_MARKS[fmt]
    return marks[i % len(marks)] * (i // len(marks) + 1)


# --------------------------------------------------------------- formatting
def _text(x: float, digits: int, fmt: str, signed: bool = False, bound: bool = False) -> str:
    """A number of a cell; ``bound``: an interval bound (a negative one keeps its sign)."""
    to: TextTarget = "latex" if fmt == "latex" else "unicode"
    missing = "--" if fmt == "latex" else "–"
    return format_number(x, digits, signed=signed, to=to, missing=missing, keep_sign=bound)


def _marks(marks: list[str], fmt: str) -> str:
    """Superscript marks: "dagger" (p < α), "note:<i>" (the i-th footnote) or letters."""
    if not marks:
        return ""

    def mark(m: str) -> str:
        if m == "dagger":
            return r"\dag{}" if fmt == "latex" else "†"
        if m.startswith("note:"):
            return note_mark(int(m[5:]), fmt)
        return m

    text = "".join(mark(m) for m in marks)
    if fmt == "latex":
        return r"\textsuperscript{" + text + "}"
    return f"<sup>{html.escape(text)}</sup>"


def cell_text(row: pd.Series, show: str, digits: int, fmt: str, kind: str) -> str:
    text = _text(row["value"], digits, fmt) + _marks(row["marks"], fmt)
    signed = kind == "compare"  # the interval is of a difference there
    if show == "ci" and np.isfinite(row["low"]):
        low, high = (_text(row[b], digits, fmt, signed, bound=True) for b in ("low", "high"))
        text += f" [{low}, {high}]"
    elif show == "p_value" and np.isfinite(row["p"]):
        ptext = format_p(row["p"], digits, to="latex" if fmt == "latex" else "unicode", equals=True)
        text += f" (p {ptext})"
    return text


def best_cells(arr: np.ndarray, best: str, digits: int) -> np.ndarray:
    """Which values of each column are bold: all that print as the best one does (at
    ``digits`` decimals), where the column has at least two values."""
    finite = np.isfinite(arr)
    enough = finite.sum(axis=0) >= 2
    filled = np.where(finite, arr, -np.inf if best == "max" else np.inf)
    target = filled.max(axis=0) if best == "max" else filled.min(axis=0)
    printed = np.vectorize(lambda x: format_number(x, digits), otypes=[object])
    return finite & enough[None, :] & (printed(arr) == printed(target)[None, :])


def check_distinct(names: list[Any], labels: list[Any], what: str, column: str) -> None:
    """Two rows (columns) whose labels print alike cannot be told apart: an error naming them.

    A line break and runs of spaces print as one space in LaTeX and HTML alike."""
    shown = [
        " ".join(" ".join(str(x).split()) for x in (label if isinstance(label, tuple) else [label]))
        for label in labels
    ]
    seen: dict[str, int] = {}
    for i, text in enumerate(shown):
        j = seen.setdefault(text, i)
        if j != i:
            a, b = (
                n[0] if isinstance(n, tuple) and len(n) == 1 else n for n in (names[j], names[i])
            )
            raise SchemaError(
                f"The {what} {a!r} and {b!r} of the table print alike ({text!r}: a line break "
                "or several spaces print as one space), so a reader could not tell them apart. "
                f"Rename one of them in the table's {column} column first."
            )


FIT_OPEN = "\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%\n"


def text_styler(text: pd.DataFrame, bold: pd.DataFrame | None = None) -> Any:
    """A Styler showing ``text`` (cells and labels already rendered) as it is.

    The one place where metaeval's tables meet pandas' Styler: :func:`to_latex`,
    :func:`to_html` and the ``metaeval`` command's LaTeX output all go through
    it. ``bold`` (same shape, booleans) marks cells to set in bold.
    """
    bold = pd.DataFrame(False, index=text.index, columns=text.columns) if bold is None else bold
    labels = None
    if not isinstance(text.columns, pd.MultiIndex):
        # pandas' Styler iterates rows as namedtuples named after the columns, which fails
        # for names equal after Unicode normalization (é as U+00E9 and as e + U+0301):
        # style positions and show the names as labels
        labels = list(text.columns)
        text = text.set_axis(range(text.shape[1]), axis=1)
        bold = bold.set_axis(range(bold.shape[1]), axis=1)
    styler = text.style
    if labels is not None:  # relabel_index reads labels as format strings: double the braces
        shown = [str(x).replace("{", "{{").replace("}", "}}") for x in labels]
        styler = styler.relabel_index(shown, axis="columns")
    mask = bold.to_numpy()
    if mask.any():
        styler = styler.apply(lambda _: np.where(mask, "font-weight: bold;", ""), axis=None)
    return styler


def latex_table(
    styler: Any,
    caption: str | None,
    *,
    column_format: str,
    label: str | None = None,
    position: str | None = None,
    centering: bool = False,
    fit: bool = False,
    notes: list[str] | None = None,
) -> str:
    """``styler`` as a LaTeX ``table`` float with booktabs rules and ``caption`` (LaTeX);
    ``fit`` shrinks the tabular to ``\\linewidth`` when it is wider (graphicx); ``notes``
    (LaTeX) are set in small type under the tabular, one per line."""
    text: str = styler.to_latex(
        hrules=True,
        caption=caption,
        label=label,
        position=position,
        position_float="centering" if centering else None,
        environment="table",
        convert_css=True,
        multicol_align="c",
        column_format=column_format,
        multirow_align="naive",  # row groups without the multirow package
    )
    if fit:  # shrink the tabular to the line's width when it is wider, never enlarge it
        start, end = (
            text.index("\\begin{tabular}"),
            text.index("\\end{tabular}") + len("\\end{tabular}"),
        )
        text = text[:start] + FIT_OPEN + text[start:end] + "}" + text[end:]
    return add_latex_notes(text, notes or [])


def add_latex_notes(text: str, notes: list[str]) -> str:
    """``text`` (a LaTeX ``table`` float) with ``notes`` (LaTeX) set in small type under
    its tabular, inside the float, one per line."""
    if not notes:
        return text
    end = text.rindex("\\end{table}")
    lines = "".join(f"{note}\\par\n" for note in notes)
    return text[:end] + "\\par\\smallskip{\\footnotesize\n" + lines + "}\n" + text[end:]

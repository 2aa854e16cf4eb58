"""Tables of the ``metaeval`` command: terminal (rich), raw TSV, markdown, LaTeX, CSV.

Every command builds a list of :class:`Table` objects (a title and a DataFrame
whose columns are shown as they are) and hands them to :class:`Output`; the
format decides the rendering only. ``raw``, ``tsv`` and ``csv`` write numbers at
full precision (``repr``), so that a script reading them gets the library's
values; ``pretty``, ``markdown`` and ``latex`` round to ``digits`` decimals through
the library's one formatter (:func:`metaeval._options.format_cell`: p-values below the
last shown decimal as ``< 0.0001``); LaTeX tables are :func:`metaeval.report.to_latex`'s
tables as they are (``layout="table"``).
"""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np
import pandas as pd

from metaeval._options import counts_as_int, format_cell, is_p_column
from metaeval.errors import OptionError

__all__ = ["Table", "Output", "render", "FORMAT_BY_SUFFIX"]

FORMAT_BY_SUFFIX = {".md": "markdown", ".tex": "latex", ".csv": "csv", ".tsv": "tsv", ".txt": "tsv"}


@dataclass
class Table:
    """A titled table; ``frame``'s columns are printed as they are, its index not."""

    title: str
    frame: pd.DataFrame


def _text(value: Any, digits: int | None, p: bool = False) -> str:
    """A cell: rounded to ``digits`` decimals, or at full precision (``repr``) for None."""
    if digits is not None:
        return format_cell(value, digits, p=p)
    if isinstance(value, float | np.floating) and not np.isnan(value):
        return repr(float(value))
    return format_cell(value, 0).replace("\t", " ").replace("\n", " ")


def _cells(frame: pd.DataFrame, digits: int | None) -> list[list[str]]:
    p = [is_p_column(c) for c in frame.columns]
    return [
        [_text(v, digits, is_p) for v, is_p in zip(record, p, strict=True)]
        for record in frame.itertuples(index=False, name=None)
    ]


def _numeric(frame: pd.DataFrame) -> list[bool]:
    return [pd.api.types.is_numeric_dtype(dtype) for dtype in frame.dtypes]


def _delimited(tables: Sequence[Table], notes: Sequence[str], sep: str) -> str:
    out = io.StringIO()
    for note in notes:
        out.write(f"# {note}\n")
    for table in tables:
        out.write(f"# {table.title}\n")
        writer = csv.writer(out, delimiter=sep, lineterminator="\n")
        writer.writerow([str(c) for c in table.frame.columns])
        writer.writerows(_cells(table.frame, None))
        out.write("\n")
    return out.getvalue()


def _markdown(tables: Sequence[Table], notes: Sequence[str], digits: int) -> str:
    """Markdown tables, every name and note through the one Markdown escaping (one line,
    a pipe no column border, no link, HTML or emphasis)."""
    from metaeval._options import escape_markdown as cell

    parts = [f"{cell(note)}\n" for note in notes]
    for table in tables:
        head = [cell(str(c)) for c in table.frame.columns]
        align = ["---:" if n else ":---" for n in _numeric(table.frame)]
        lines = [
            f"### {cell(table.title)}",
            "",
            "| " + " | ".join(head) + " |",
            "| " + " | ".join(align) + " |",
        ]
        lines += ["| " + " | ".join(map(cell, row)) + " |" for row in _cells(table.frame, digits)]
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def _latex(tables: Sequence[Table], notes: Sequence[str], digits: int) -> str:
    """Every table through :func:`metaeval.report.to_latex`, as it is (``layout="table"``)."""
    from metaeval import report

    parts = [f"% {report.escape(note, 'latex')}" for note in notes]  # one line, nothing to run
    for table in tables:
        tex = report.to_latex(
            table.frame,
            layout="table",
            caption=table.title,
            digits=digits,
            position="htbp",
            fit=False,
        )
        parts.append(tex.rstrip("\n"))
    return "\n\n".join(parts) + "\n"


def render(tables: Sequence[Table], fmt: str, *, digits: int = 4, notes: Sequence[str] = ()) -> str:
    """``tables`` as text in ``fmt``: ``raw``/``tsv``, ``csv``, ``markdown`` or ``latex``.

    LaTeX tables use booktabs rules (``\\usepackage{booktabs}``).
    """
    if fmt in ("raw", "tsv"):
        return _delimited(tables, notes, "\t")
    if fmt == "csv":
        return _delimited(tables, notes, ",")
    if fmt == "markdown":
        return _markdown(tables, notes, digits)
    if fmt == "latex":
        return _latex(tables, notes, digits)
    raise ValueError(f"unknown table format {fmt!r}")  # pragma: no cover - argparse checks


class Output:
    """Prints notes and tables on stdout as the options ask, and collects them for files."""

    def __init__(
        self,
        mode: str = "pretty",
        *,
        digits: int = 4,
        fmt: str | None = None,
        stream: TextIO | None = None,
    ):
        self.mode = fmt or mode
        self.digits = digits
        self.stream = stream if stream is not None else sys.stdout
        self.tables: list[Table] = []
        self.notes: list[str] = []
        self._console: Any = None

    def console(self) -> Any:
        if self._console is None:
            from rich.console import Console

            tty = self.stream.isatty()
            # off a terminal: no colours and no width limit, so that nothing wraps
            self._console = Console(
                file=self.stream,
                width=None if tty else 10_000,
                no_color=not tty,
                highlight=False,
                soft_wrap=not tty,
            )
        return self._console

    def note(self, text: str) -> None:
        """A line of information (a seed, a file written) printed before the next table."""
        self.notes.append(text)
        if self.mode == "pretty":
            self.console().print(text, markup=False)
        else:
            prefix = {"markdown": "", "latex": "% "}.get(self.mode, "# ")
            if self.mode in ("latex", "markdown"):
                from metaeval.report import escape

                text = escape(text, self.mode)
            self.stream.write(f"{prefix}{' '.join(str(text).splitlines())}\n")

    def table(self, title: str, frame: pd.DataFrame) -> None:
        table = Table(title, counts_as_int(frame.reset_index(drop=True)))
        self.tables.append(table)
        if self.mode != "pretty":
            text = render([table], self.mode, digits=self.digits)
            self.stream.write(text if self.mode != "latex" else text + "\n")
            self.stream.flush()
            return
        self._rich(table)

    def _rich(self, table: Table) -> None:
        """``table`` for the terminal. Every cell, header and title is rich ``Text`` (never
        markup: a name such as ``[red]x`` prints as it is). No character is cut: a table
        wider than the terminal folds its text columns (a long name continues on the next
        line of its cell) and keeps numbers whole; if even that does not fit, it is printed
        at the width it needs (the terminal wraps the lines) rather than cropped."""
        from rich import box
        from rich.cells import cell_len
        from rich.table import Table as RichTable
        from rich.text import Text

        rows = _cells(table.frame, self.digits)
        heads = [str(c) for c in table.frame.columns]
        rich_table = RichTable(
            title=Text(table.title),
            title_justify="left",
            box=box.SIMPLE_HEAD,
            title_style="bold",
            show_edge=False,
            pad_edge=False,
        )
        need = 3 * (len(heads) - 1)  # a column's padding and the space between columns
        for i, (head, numeric) in enumerate(zip(heads, _numeric(table.frame), strict=True)):
            widest = max([cell_len(head), *(cell_len(r[i]) for r in rows)])
            least = widest if numeric else min(widest, 12)  # numbers whole, names may fold
            need += least
            rich_table.add_column(
                Text(head),
                justify="right" if numeric else "left",
                overflow="fold",
                no_wrap=numeric,
                min_width=least,
            )
        for row in rows:
            rich_table.add_row(*(Text(cell) for cell in row))
        console = self.console()
        width = console.width
        console.width = max(width, need)  # never crop: wider than the terminal if need be
        try:
            console.print(rich_table)
        finally:
            console.width = width
        console.print()

    def write(self, path: str, fmt: str | None = None) -> str:
        """Write every table so far to ``path`` in ``fmt`` (default: by its suffix)."""
        from pathlib import Path

        suffix = Path(path).suffix.lower()
        fmt = fmt or FORMAT_BY_SUFFIX.get(suffix)
        if fmt is None:
            raise OptionError(
                f"Cannot tell the format of {path!r} from its suffix; use one of "
                f"{sorted(FORMAT_BY_SUFFIX)} or pass --format."
            )
        Path(path).write_text(render(self.tables, fmt, digits=self.digits), encoding="utf-8")
        return fmt

"""Tables of the ``metaeval`` command: terminal (rich), raw TSV, markdown, LaTeX, CSV.

Every command builds a list of :class:`Table` objects (a title and a DataFrame
whose columns are shown as they are) and hands them to :class:`Output`; the
format decides the rendering only. ``raw``, ``tsv`` and ``csv`` write numbers at
full precision (``repr``), so that a script reading them gets the library's
values; ``pretty``, ``markdown`` and ``latex`` round to ``digits`` decimals
(p-values below the last shown decimal in scientific notation).
"""

from __future__ import annotations

import csv
import io
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np
import pandas as pd

from metaeval._options import format_number
from metaeval.errors import OptionError

__all__ = ["Table", "Output", "render", "FORMAT_BY_SUFFIX"]

FORMAT_BY_SUFFIX = {".md": "markdown", ".tex": "latex", ".csv": "csv", ".tsv": "tsv", ".txt": "tsv"}


@dataclass
class Table:
    """A titled table; ``frame``'s columns are printed as they are, its index not."""

    title: str
    frame: pd.DataFrame


def _is_p(column: str) -> bool:
    return column.endswith("p_value") or column == "p_adjusted"


def _text(value: Any, digits: int | None, p_like: bool = False) -> str:
    """A cell: rounded to ``digits`` decimals, or at full precision (``repr``) for None."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        v = float(value)
        if digits is None:
            return repr(v)
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if p_like and 0 < abs(v) < 0.5 * 10.0**-digits:
            return f"{v:.{max(digits - 2, 1)}e}"
        return format_number(v, digits, keep_sign=True)  # -0.0000: below zero, not zero
    text = str(value)
    return text.replace("\t", " ").replace("\n", " ") if digits is None else text


def _cells(frame: pd.DataFrame, digits: int | None) -> list[list[str]]:
    columns = [str(c) for c in frame.columns]
    rows = []
    for record in frame.itertuples(index=False, name=None):
        rows.append([_text(v, digits, _is_p(c)) for v, c in zip(record, columns, strict=True)])
    return rows


COUNT_COLUMNS = ("n", "k", "df", "q_df", "n_systems", "n_queries", "n_metrics")


def _counts_as_int(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts kept as floats by the library (df, k, q_df) shown as integers where whole."""
    changes = {}
    for column in frame.columns:
        values = frame[column]
        if column in COUNT_COLUMNS and pd.api.types.is_float_dtype(values.dtype):
            finite = values.dropna()
            if len(finite) and np.isfinite(finite).all() and (finite == np.round(finite)).all():
                changes[column] = values.astype("Int64")
    return frame.assign(**changes) if changes else frame


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
    def cell(text: str) -> str:  # one line, and a pipe is not a column border
        return " ".join(str(text).splitlines()).replace("|", "\\|")

    parts = [f"{note}\n" for note in notes]
    for table in tables:
        head = [cell(str(c)) for c in table.frame.columns]
        align = ["---:" if n else ":---" for n in _numeric(table.frame)]
        lines = [f"### {cell(table.title)}", "", "| " + " | ".join(head) + " |",
                 "| " + " | ".join(align) + " |"]  # fmt: skip
        lines += ["| " + " | ".join(map(cell, row)) + " |" for row in _cells(table.frame, digits)]
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def _latex(tables: Sequence[Table], notes: Sequence[str], digits: int) -> str:
    """LaTeX through the same Styler path as :func:`metaeval.report.to_latex`."""
    from metaeval.report import escape, latex_table, text_styler

    def number(text: str) -> str:
        return "$-$" + text[1:] if text.startswith("-") else text

    parts = [f"% {escape(note, 'latex')}" for note in notes]  # escaped: one line, nothing to run
    for table in tables:
        numeric = _numeric(table.frame)
        rows = [
            [number(v) if n else escape(v, "latex") for v, n in zip(row, numeric, strict=True)]
            for row in _cells(table.frame, digits)
        ]
        heads = [escape(c, "latex") for c in table.frame.columns]
        text = pd.DataFrame(rows, columns=heads, dtype=object)
        styler = text_styler(text).hide(axis="index")
        parts.append(
            latex_table(
                styler,
                escape(table.title, "latex"),
                column_format="".join("r" if n else "l" for n in numeric),
                position="htbp",
                centering=True,
            ).rstrip("\n")
        )
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

    def __init__(self, mode: str = "pretty", *, digits: int = 4, fmt: str | None = None,
                 stream: TextIO | None = None):  # fmt: skip
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
            self._console = Console(file=self.stream, width=None if tty else 10_000,
                                    no_color=not tty, highlight=False, soft_wrap=not tty)  # fmt: skip
        return self._console

    def note(self, text: str) -> None:
        """A line of information (a seed, a file written) printed before the next table."""
        self.notes.append(text)
        if self.mode == "pretty":
            self.console().print(text, markup=False)
        else:
            prefix = {"markdown": "", "latex": "% "}.get(self.mode, "# ")
            if self.mode == "latex":
                from metaeval.report import escape

                text = escape(text, "latex")
            self.stream.write(f"{prefix}{' '.join(str(text).splitlines())}\n")

    def table(self, title: str, frame: pd.DataFrame) -> None:
        table = Table(title, _counts_as_int(frame.reset_index(drop=True)))
        self.tables.append(table)
        if self.mode != "pretty":
            text = render([table], self.mode, digits=self.digits)
            self.stream.write(text if self.mode != "latex" else text + "\n")
            self.stream.flush()
            return
        from rich import box
        from rich.table import Table as RichTable

        rich_table = RichTable(title=title, title_justify="left", box=box.SIMPLE_HEAD,
                               title_style="bold", show_edge=False, pad_edge=False)  # fmt: skip
        for column, numeric in zip(table.frame.columns, _numeric(table.frame), strict=True):
            rich_table.add_column(str(column), justify="right" if numeric else "left")
        for row in _cells(table.frame, self.digits):
            rich_table.add_row(*row)
        self.console().print(rich_table)
        self.console().print()

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

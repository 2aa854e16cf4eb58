"""Helpers shared by test modules (imported as ``from _helpers import ...``)."""

from __future__ import annotations

import io

import pandas as pd


def parse_raw(text: str) -> dict[str, pd.DataFrame]:
    """Tables of the command's ``--print-mode raw`` (or csv) output, by title."""
    tables, title, lines = {}, None, []
    sep = "\t" if "\t" in text else ","
    for line in [*text.splitlines(), ""]:
        if line.startswith("# ") and not lines:
            title = line[2:]
        elif line:
            lines.append(line)
        elif lines:
            tables[title] = pd.read_csv(
                io.StringIO("\n".join(lines)), sep=sep, keep_default_na=True
            )
            lines = []
    return tables

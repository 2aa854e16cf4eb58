"""Helpers shared by test modules (imported as ``from _helpers import ...``)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

FIXTURES = Path(__file__).parent / "fixtures"
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


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


def make_scores(
    rng: np.random.Generator,
    *,
    tasks: dict[str, int] | None = None,
    systems: tuple[str, ...] = ("ctrl", "a", "b"),
    metrics: tuple[str, ...] = ("m1", "m2"),
    drop: float = 0.0,
) -> pd.DataFrame:
    """Correlated per-query scores; ``drop`` removes that share of rows at random."""
    tasks = tasks or {"t1": 12, "t2": 40, "t3": 7, "t4": 90}
    frames = []
    for metric in metrics:
        for task, n in tasks.items():
            base = rng.uniform(0.3, 0.7) + rng.normal(0, 0.15, n)
            for i, system in enumerate(systems):
                frames.append(
                    pd.DataFrame(
                        {
                            "task": task,
                            "query": [f"q{j}" for j in range(n)],
                            "system": system,
                            "metric": metric,
                            "value": base + 0.02 * i + rng.normal(0, 0.1, n),
                        }
                    )
                )
    df = pd.concat(frames, ignore_index=True)
    if drop:
        df = df[rng.random(len(df)) >= drop].reset_index(drop=True)
    return df

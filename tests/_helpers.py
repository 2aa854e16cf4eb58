"""Helpers shared by test modules (imported as ``from _helpers import ...``)."""

from __future__ import annotations

import gzip
import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

FIXTURES = Path(__file__).parent / "fixtures"
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
#: The HELM suite written by ``helm-run`` itself (``fixtures/helm/make_helm_suite.sh``):
#: one folder per run, its JSON files gzipped; :func:`helm_suite` unpacks it.
HELM_SUITE = FIXTURES / "helm" / "runs" / "v1"

#: For a test about something else whose made-up tasks agree more closely than their
#: variances imply: pool()'s warning that a Knapp–Hartung interval is narrower than the
#: normal one (issue 29, item 1; tested in tests/pooling/test_pooling.py) is expected there.
NARROW_KH = pytest.mark.filterwarnings(
    "ignore:.*Knapp–Hartung interval narrower:metaeval.DegenerateWarning"
)


def helm_suite(dest: Path, runs: list[str] | None = None) -> Path:
    """The HELM suite of ``HELM_SUITE`` (or its ``runs``, by folder name) unpacked into
    ``dest``, as ``helm-run`` wrote it: ``dest/<run>/run_spec.json``, ... ."""
    for run in sorted(HELM_SUITE.iterdir()):
        if runs is None or run.name in runs:
            (dest / run.name).mkdir(parents=True)
            for packed in run.glob("*.json.gz"):
                (dest / run.name / packed.stem).write_bytes(gzip.decompress(packed.read_bytes()))
    return dest


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


#: single faults a scores table can have, injected by :func:`inject`
FAULTS = [
    "nan",
    "inf",
    "duplicate",
    "float_query",
    "mixed_system",
    "missing_column",
    "duplicated_column",
    "empty",
    "output_column",
    "text_value",
]


def inject(table: pd.DataFrame, fault: str, i: int) -> tuple[pd.DataFrame, str]:
    """The table with one fault, and a word the error message must contain."""
    t = table.copy()
    i = i % len(t)
    if fault in ("nan", "inf"):
        t["value"] = t["value"].astype(float)  # int or bool values cannot hold them
        t.loc[t.index[i], "value"] = np.nan if fault == "nan" else -np.inf
        return t, "value"
    if fault == "duplicate":
        return pd.concat([t, t.iloc[[i]]]), "key"
    if fault == "float_query":
        return t.assign(
            query=pd.Series(np.arange(len(t)) + 0.5, index=t.index, dtype=object)
        ), "query"
    if fault == "mixed_system":
        s = t["system"].astype(object)
        s.iloc[i] = 7
        return t.assign(system=s), "system"
    if fault == "missing_column":
        column = ["task", "query", "system", "metric", "value"][i % 5]
        return t.drop(columns=column), column
    if fault == "duplicated_column":
        t["extra"] = 0.0
        return t.rename(columns={"extra": "value"}), "duplicated column"
    if fault == "empty":
        return t.iloc[:0], "no rows"
    if fault == "output_column":
        name = ["n", "se", "r", "effect", "p_value", "mean_control"][i % 6]
        return t.assign(**{name: 1.0}), name
    v = t["value"].astype(object)
    v.iloc[i] = "0.5"
    return t.assign(value=v), "value"


def public_names(module_name: str) -> list[str]:
    """``__all__`` of a module; for an alias module (``metaeval.ir``) its ``dir()``."""
    import importlib

    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    return list(names) if names is not None else [n for n in dir(module) if not n.startswith("_")]


def run_fresh(code: str) -> str:
    """Run ``code`` in a fresh interpreter (what ``import metaeval`` loads, hooks that fire
    on a later import) and return its standard output; its stderr is the failure message."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def latex_number_heights(tex: str, folder: Path) -> list[float]:
    """The heights (pt) of the numbers with three decimals in the PDF that pdflatex makes
    of ``tex`` (an article with booktabs and graphicx), as pdftotext -bbox measures them:
    about 10 at the text size, less where a table was scaled down to the line."""
    doc = "\n".join(
        [
            r"\documentclass{article}",
            r"\usepackage{booktabs,graphicx}",
            r"\begin{document}",
            tex,
            r"\end{document}",
        ]
    )
    (folder / "doc.tex").write_text(doc, encoding="utf-8")
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:]
    box = subprocess.run(
        ["pdftotext", "-bbox", "doc.pdf", "-"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    words = re.findall(r'yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">(-?\d\.\d{3})<', box)
    assert len(words) >= 6, box[:2000]
    return [float(y1) - float(y0) for y0, y1, _ in words]

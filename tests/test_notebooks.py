"""Every notebook's code cells run top to bottom without error or metaeval warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, request, monkeypatch):
    if path.name.startswith("ranger_"):  # walkthroughs of the Ranger paper's data
        monkeypatch.setenv("RANGER_DATA", str(request.getfixturevalue("shared_data") / "ranger"))
    cells = json.loads(path.read_text())["cells"]
    code = [
        c["source"] if isinstance(c["source"], str) else "".join(c["source"])
        for c in cells
        if c["cell_type"] == "code"
    ]
    assert code, f"{path.name} has no code cells"
    namespace: dict = {}
    for i, source in enumerate(code):
        exec(compile(source, f"{path.name}[{i}]", "exec"), namespace)


def test_there_are_notebooks():
    assert NOTEBOOKS

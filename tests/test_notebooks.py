"""Every notebook runs top to bottom in a Jupyter kernel without error or metaeval warning.

Executed with nbclient in a ``python3`` kernel of this interpreter (skipped where nbclient or
ipykernel is not installed; ``pip install -e ".[test]"`` installs both). The Ranger notebooks
read Ranger's example data through ``metaeval.datasets.fetch_ranger`` with ``RANGER_DATA``
naming the offline copy in ``../shared/data/ranger`` (skipped where it is absent), so nothing
is downloaded; the quickstart runs on bundled data alone, with ``RANGER_DATA`` naming a folder
that does not exist. HTTP(S) goes to a closed local port in every kernel: a notebook that
tried to download would fail. Executed copies live in memory; nothing is written back.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the inner loop: pytest -m 'not slow'

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))

#: run first in the kernel (not saved): metaeval's warnings are errors, as in the test suite
PROLOGUE = """\
import warnings
import metaeval.errors
warnings.simplefilter("error", metaeval.errors.MetaEvalWarning)
"""


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, request, monkeypatch, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    if path.name.startswith("ranger_"):  # walkthroughs of the Ranger paper's data
        ranger = request.getfixturevalue("shared_data") / "ranger"
        monkeypatch.setenv("RANGER_DATA", str(ranger))
    else:  # bundled data only: fetch_ranger() would fail
        monkeypatch.setenv("RANGER_DATA", str(tmp_path / "no-ranger-data-here"))
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # a closed local port: any download fails
    for name in ("NO_PROXY", "no_proxy", "MPLBACKEND"):  # the kernel draws inline, as for a user
        monkeypatch.delenv(name, raising=False)
    nb = nbformat.read(path, as_version=4)
    assert any(c.cell_type == "code" for c in nb.cells), f"{path.name} has no code cells"
    nb.cells.insert(0, nbformat.v4.new_code_cell(PROLOGUE))
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=600,
        resources={"metadata": {"path": str(path.parent)}},  # the kernel's working directory
    )
    client.execute()  # raises CellExecutionError naming the cell and the traceback
    assert nb.cells[0].outputs == [], nb.cells[0].outputs  # the prologue
    stderr = [
        (i, o.text)
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "stream" and o.name == "stderr"
    ]
    assert not stderr, stderr  # no warning of any library printed by a cell
    for i, cell in enumerate(nb.cells):  # each figure drawn once, assigned or a cell's value
        if cell.cell_type != "code":
            continue
        images = sum("image/png" in o.get("data", {}) for o in cell.outputs)
        figures = (".forest(", ".pairwise(", "forest(effects", ".critical_difference(", ".plot(")
        draws = sum(cell.source.count(f) for f in figures)
        assert images == draws, (path.name, i, cell.source, images)


def test_the_kernel_is_this_interpreter():
    """``python3`` resolves to the interpreter running the tests (where metaeval is)."""
    pytest.importorskip("ipykernel")
    kernelspec = pytest.importorskip("jupyter_client.kernelspec")
    from jupyter_client.manager import KernelManager

    spec = kernelspec.KernelSpecManager().get_kernel_spec("python3")
    argv = KernelManager(kernel_name="python3").format_kernel_cmd()
    assert spec.language == "python"
    assert Path(argv[0]).resolve() == Path(sys.executable).resolve()


def test_there_are_notebooks():
    names = {p.name for p in NOTEBOOKS}
    assert names >= {"quickstart.ipynb", "ranger_glue.ipynb", "ranger_beir.ipynb"}

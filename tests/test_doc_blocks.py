"""Every Python block of README.md and the guides runs, in a fresh interpreter.

The blocks of one page run in order as one program (later blocks use earlier names), in
an empty folder. A block whose first line is ``# not run: <reason>`` (it needs the
reader's own files) is compiled only. Ranger's example data come from ``RANGER_DATA``
(``../shared/data/ranger``); pages that use it skip where it is absent.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _helpers import SHARED

pytestmark = pytest.mark.slow  # the inner loop: pytest -m 'not slow'

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md"] + sorted(
    p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts
)
BLOCK = re.compile(r"^```(?:python|py)\s*\n(.*?)^```", re.M | re.S)
NOT_RUN = re.compile(r"\A# not run: \S")


def blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text())


def test_the_pages_have_blocks_to_run():
    runnable = [b for p in PAGES for b in blocks(p) if not NOT_RUN.match(b)]
    assert len(runnable) >= 3, "README.md and the guides should show runnable code"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_block_runs(page, tmp_path):
    found = blocks(page)
    if not found:
        pytest.skip("no Python blocks")
    program = []
    for i, block in enumerate(found):
        compile(block, f"{page.name}, block {i + 1}", "exec")  # a SyntaxError names the block
        if not NOT_RUN.match(block):
            program.append(f"# --- block {i + 1}\n{block}")
    code = "\n".join(program)
    if not code:
        pytest.skip("only blocks marked '# not run'")
    ranger = SHARED / "ranger"
    if ("fetch_ranger" in code or "RANGER_DATA" in code) and not ranger.is_dir():
        pytest.skip(f"Ranger's example data are not beside this checkout ({ranger})")
    env = {**os.environ, "MPLBACKEND": "Agg", "RANGER_DATA": str(ranger)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{page.name}:\n{done.stderr[-3000:]}"

"""Doctests that read Ranger's example data run offline: where ``RANGER_DATA`` is unset,
it names ``../shared/data/ranger`` beside the checkout, and where that is absent they skip
(:func:`metaeval.datasets.fetch_ranger` would download otherwise)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_RANGER = Path(__file__).resolve().parent.parent / "shared" / "data" / "ranger"


@pytest.fixture(autouse=True)
def _ranger_data_offline(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    if type(request.node).__name__ != "DoctestItem" or "fetch_ranger" not in request.node.name:
        return
    if os.environ.get("RANGER_DATA"):
        return
    if not SHARED_RANGER.is_dir():
        pytest.skip(f"needs Ranger's example data offline: set RANGER_DATA (no {SHARED_RANGER})")
    monkeypatch.setenv("RANGER_DATA", str(SHARED_RANGER))

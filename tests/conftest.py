"""Fixtures (seeded rng, a small scores table, the shared data), hypothesis profiles and the
fuzz summary. Helpers that tests import live in ``_helpers.py``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _helpers import SHARED, make_scores
from hypothesis import settings

import metaeval  # noqa: F401  (registers DataFrame.meta)

os.environ.setdefault("MPLBACKEND", "Agg")  # figures are drawn off-screen

# Hypothesis profiles: "fast" (default; CI) and "long" (pytest -m fuzz --hypothesis-profile=long).
# Tests that set max_examples themselves keep it; the fuzz suite takes the profile's.
settings.register_profile("fast", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("long", max_examples=3000, deadline=None)
settings.load_profile("fast")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261122)


@pytest.fixture
def scores(rng: np.random.Generator) -> pd.DataFrame:
    return make_scores(rng)


@pytest.fixture
def shared_data() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"../shared/data is not beside this checkout ({SHARED})")
    return SHARED


@pytest.fixture(autouse=True)
def _close_figures():
    """Close every figure a test opened (only where matplotlib was imported)."""
    yield
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The outcome counts of the fuzz suite (tests/test_fuzz.py), when it ran."""
    fuzz = sys.modules.get("test_fuzz")
    if fuzz is None or not fuzz.OUTCOMES:
        return
    write = terminalreporter.write_line
    tables = ", ".join(f"{name} {n}" for name, n in sorted(fuzz.TABLES.items()))
    write(f"fuzz: tables tried: {tables}")
    by_func: dict[str, dict[str, int]] = {}
    for (func, kind), n in fuzz.OUTCOMES.items():
        by_func.setdefault(func, {})[kind] = n
    for func, counts in sorted(by_func.items()):
        write(f"fuzz: {func}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))

"""Shared fixtures: seeded rng, small synthetic tables, the shared Ranger data."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import settings

import metaeval  # noqa: F401  (registers DataFrame.meta)

os.environ.setdefault("MPLBACKEND", "Agg")  # figures are drawn off-screen

# Hypothesis profiles: "fast" (default; CI) and "long" (pytest -m fuzz --hypothesis-profile=long).
# Tests that set max_examples themselves keep it; the fuzz suite takes the profile's.
settings.register_profile("fast", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("long", max_examples=3000, deadline=None)
settings.load_profile("fast")

FIXTURES = Path(__file__).parent / "fixtures"
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261122)


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

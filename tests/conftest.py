"""Shared fixtures: seeded rng, small synthetic tables, the shared Ranger data."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import metaeval  # noqa: F401  (registers DataFrame.meta)

os.environ.setdefault("MPLBACKEND", "Agg")  # figures are drawn off-screen

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

"""Properties of leaderboard(): renaming systems only renames the leaderboard.

Scores sit on a coarse grid, so tasks have ties and rules have tied scores.
Borda, mean rank, Copeland and the pooled effects use nothing but the scores, so any renaming
maps every system's score and rank over. Kemeny's tie-break between equally
good orders uses the names (documented), so there any renaming keeps the cost of
the consensus order, and a renaming that keeps the names' order keeps the order.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from metaeval import MetaEvalWarning, leaderboard

NAME = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=5)


@st.composite
def boards(draw: Any) -> tuple[pd.DataFrame, dict[str, str]]:
    """A scores table with systems s0, s1, … and a renaming of them to random unique names."""
    n_systems = draw(st.integers(2, 5))
    rows = []
    for metric in [f"m{i}" for i in range(draw(st.integers(1, 2)))]:
        for task in [f"t{i}" for i in range(draw(st.integers(1, 4)))]:
            n = draw(st.integers(1, 3))
            for s in range(n_systems):
                values = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
                rows += [(task, f"q{q}", f"s{s}", metric, v / 3) for q, v in enumerate(values)]
    table = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])
    names = draw(st.lists(NAME, min_size=n_systems, max_size=n_systems, unique=True))
    return table, {f"s{s}": name for s, name in enumerate(names)}


def board(table: pd.DataFrame, method: str, control: str | None) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MetaEvalWarning)  # pooled: degenerate effects on ties
        out = leaderboard(table, aggregation=method, control=control)
    return out


def by_system(out: pd.DataFrame, rename: dict[str, str] | None = None) -> pd.DataFrame:
    frame = out.assign(system=out["system"].map(rename) if rename else out["system"])
    return frame.set_index(["metric", "system"]).sort_index()


@given(boards(), st.sampled_from(["borda", "mean_rank", "copeland", "pooled"]))
def test_renaming_systems_renames_the_leaderboard(data, method):
    table, rename = data
    control = "s0" if method == "pooled" else None
    before = board(table, method, control)
    after = board(table.assign(system=table["system"].map(rename)), method, rename.get(control))
    pd.testing.assert_frame_equal(by_system(after), by_system(before, rename), check_exact=True)
    for _, part in after.groupby("metric", sort=False):  # sorted by rank, then by name
        assert part["rank"].is_monotonic_increasing
        for _, tied in part.groupby("rank"):
            assert tied["system"].tolist() == sorted(tied["system"])


@given(boards())
def test_renaming_systems_keeps_the_kemeny_cost_and_order_preserving_names_the_order(data):
    table, rename = data
    before = board(table, "kemeny", None)
    after = board(table.assign(system=table["system"].map(rename)), "kemeny", None)
    assert after.attrs["kemeny_cost"] == before.attrs["kemeny_cost"]
    assert after.attrs["kemeny_exact"] and before.attrs["kemeny_exact"]
    ordered = dict(zip(sorted(rename), sorted(rename.values()), strict=True))
    # s0 < s1 < … as strings only up to s9: the strategy makes at most 5 systems
    kept = board(table.assign(system=table["system"].map(ordered)), "kemeny", None)
    pd.testing.assert_frame_equal(by_system(kept), by_system(before, ordered), check_exact=True)
    assert np.isfinite(kept["score"]).all()

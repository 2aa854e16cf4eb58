"""Fuzzing the input mapping: ``metaeval.scores(columns...)``, ``constants=``,
``metaeval.from_wide`` and ``read_scores(columns=, constants=)`` on random tables.

Each random tidy table is disguised — key columns renamed to random names, some key
columns dropped and given back as constants, ids that look like numbers (``"007"``), a wide
pivot with the systems as columns — and read back through the mapping. The reference is the
table itself, built here without metaeval: every mapping must give back exactly its rows
(as a set of keys and values, since the row order of a wide table is its own), never drop,
merge or guess one, and never change the input frame.
"""

from __future__ import annotations

import string

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import metaeval
from metaeval.io import read_scores

pytestmark = pytest.mark.fuzz

KEYS = ["task", "query", "system", "metric"]
NAMES = st.text(alphabet=string.ascii_letters + "_ ", min_size=1, max_size=8)
IDS = st.sampled_from(["007", "7", "q1", "Q1", "a b", "é", "x,y", "1e3", "-0"])


@st.composite
def tables(draw):
    """A tidy scores table (strings as keys, a few values each) and the disguise of it."""
    tasks = draw(st.lists(IDS, min_size=1, max_size=3, unique=True))
    queries = draw(st.lists(IDS, min_size=1, max_size=4, unique=True))
    systems = draw(
        st.lists(
            st.sampled_from(["bm25", "tasb", "007", "r/1"]), min_size=1, max_size=3, unique=True
        )
    )
    metrics = draw(
        st.lists(st.sampled_from(["nDCG@10", "AP", "P@5"]), min_size=1, max_size=2, unique=True)
    )
    rows = [(t, q, s, m) for t in tasks for q in queries for s in systems for m in metrics]
    keep = draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows)))
    rows = [r for r, k in zip(rows, keep, strict=True) if k] or rows[:1]
    values = draw(
        st.lists(
            st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=len(rows), max_size=len(rows)
        )
    )
    table = pd.DataFrame(rows, columns=KEYS).assign(value=np.array(values, dtype=float))
    names = draw(st.lists(NAMES, min_size=5, max_size=5, unique=True))
    constant = [k for k in ("task", "metric") if table[k].nunique() == 1 and draw(st.booleans())]
    return table, dict(zip([*KEYS, "value"], names, strict=True)), constant


def _rows(frame: pd.DataFrame) -> set[tuple]:
    """The table as a set of (task, query, system, metric, value), whatever its row order."""
    frame = frame[[*KEYS, "value"]].astype({k: str for k in KEYS})
    return set(frame.itertuples(index=False, name=None))


def _disguise(table: pd.DataFrame, names: dict[str, str], constant: list[str]):
    """Renamed columns without the constant ones, and the mapping that undoes it."""
    renamed = table.drop(columns=constant).rename(columns=names)
    columns = {k: names[k] for k in [*KEYS, "value"] if k not in constant}
    constants = {k: str(table[k].iloc[0]) for k in constant}
    return renamed, columns, constants


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=tables())
def test_scores_and_read_scores_give_back_the_table(data, tmp_path):
    table, names, constant = data
    renamed, columns, constants = _disguise(table, names, constant)
    frozen = renamed.copy()
    mapped = metaeval.scores(renamed, constants=constants, **columns)
    pd.testing.assert_frame_equal(renamed, frozen)  # the input is never changed
    assert mapped.columns.tolist()[:5] == [*KEYS, "value"]
    assert len(mapped) == len(table) and _rows(mapped) == _rows(table)
    for suffix in (".csv", ".parquet"):
        path = tmp_path / f"s{suffix}"
        renamed.to_parquet(path) if suffix == ".parquet" else renamed.to_csv(path, index=False)
        back = read_scores(path, columns=columns, constants=constants)
        assert _rows(back) == _rows(table), suffix  # "007" stays "007", "-0" stays "-0"


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(data=tables())
def test_from_wide_of_a_pivot_gives_back_the_table(data):
    table, _, constant = data
    wide = table.pivot_table(
        index=["task", "query", "metric"], columns="system", values="value", aggfunc="first"
    )
    if wide.isna().to_numpy().any():  # a system without a score on some row: refused, named
        with pytest.raises(metaeval.SchemaError, match="NaN|missing|null"):
            metaeval.from_wide(wide)
        return
    back = metaeval.from_wide(wide)
    assert _rows(back) == _rows(table)
    flat = wide.reset_index().drop(columns=constant)
    given_back = metaeval.from_wide(flat, constants={k: str(table[k].iloc[0]) for k in constant})
    assert _rows(given_back) == _rows(table)

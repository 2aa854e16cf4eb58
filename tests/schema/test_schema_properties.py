"""Properties of validate_scores on random tables: valid ones pass, any single fault is named.

Valid tables vary what a user's table may vary: key names (any non-empty text,
including digits, spaces, punctuation and non-ASCII letters), the key columns'
dtype (str, object, category, pyarrow string), the value dtype (float, int,
bool), extra columns, column order and the row index (not unique, not sorted).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
from _helpers import FAULTS, inject
from hypothesis import given
from hypothesis import strategies as st

import metaeval
from metaeval import SchemaError

KEYS = ["task", "query", "system", "metric"]
NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=6)


@st.composite
def valid_tables(draw: Any) -> pd.DataFrame:
    names = {k: draw(st.lists(NAMES, min_size=1, max_size=3, unique=True)) for k in KEYS}
    cells = draw(
        st.lists(
            st.tuples(*(st.sampled_from(names[k]) for k in KEYS)),
            min_size=1,
            max_size=25,
            unique=True,
        )
    )
    kind = draw(st.sampled_from(["float", "int", "bool"]))
    values = {
        "float": st.floats(allow_nan=False, allow_infinity=False),
        "int": st.integers(-(2**40), 2**40),
        "bool": st.booleans(),
    }[kind]
    table = pd.DataFrame(cells, columns=KEYS).assign(
        value=draw(st.lists(values, min_size=len(cells), max_size=len(cells)))
    )
    dtype = draw(st.sampled_from(["str", "object", "category", "string[pyarrow]"]))
    if dtype != "str":
        table = table.astype(dict.fromkeys(KEYS, dtype))
    if draw(st.booleans()):
        table["note"] = "kept"
    order = draw(st.permutations(list(table.columns)))
    index = draw(st.lists(st.integers(0, 3), min_size=len(table), max_size=len(table)))
    return table[order].set_axis(index)


@given(valid_tables())
def test_every_valid_table_validates_unchanged(table):
    before = table.copy(deep=True)
    out = metaeval.validate_scores(table)
    pd.testing.assert_frame_equal(table, before)  # the input is never mutated
    assert list(out.columns) == list(table.columns) and out.index.equals(table.index)
    for k in KEYS:  # the same names, row by row
        assert out[k].astype(str).tolist() == table[k].astype(str).tolist()
    assert out["value"].dtype == np.float64
    np.testing.assert_array_equal(out["value"], table["value"].astype(float))


@given(
    valid_tables(),
    st.sampled_from([f for f in FAULTS if f != "output_column"]),
    st.integers(0, 10_000),
)
def test_any_single_fault_is_a_schema_error_naming_it(table, fault, i):
    if fault == "mixed_system" and len(table) == 1:
        return  # the one system becomes the integer id 7: a valid table
    bad, word = inject(table.reset_index(drop=True), fault, i)
    before = bad.copy(deep=True)
    try:
        metaeval.validate_scores(bad)
    except SchemaError as err:
        assert word in str(err), (fault, str(err))
        if fault in ("nan", "inf", "text_value", "mixed_system"):  # the row is named
            assert re.search(rf"rows? \[{i % len(table)}\]", str(err)), str(err)
    else:
        raise AssertionError(f"{fault} was not reported")
    pd.testing.assert_frame_equal(bad, before)

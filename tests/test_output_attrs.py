"""No public function's output carries a table or an array in its ``attrs`` (issue 26):
``attrs`` hold scalar options only (method, alpha, seed, …), so that ``pd.concat`` of two
outputs works and nothing rides beside the rows unseen. A part of a result is a named
attribute of a :class:`metaeval._results.Result` instead.

Every public function of ``metaeval.__all__`` and of the stages' ``__all__`` is either run
on small real data by ``output_cases`` of ``tests/_helpers.py`` (the bundled example, tiny
files written to ``tmp_path``) or listed in its ``NOT_TABLES`` with what it returns
instead; a new public function must be added to one of them. ``variant_cases`` adds the
calls whose options add columns; ``tests/test_naming.py`` reads the same outputs."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from _helpers import (
    NOT_TABLES,
    OUTPUT_CONTROL,
    output_cases,
    output_scores,
    output_tables,
    public_functions,
    variant_cases,
)

import metaeval

FUNCTIONS = public_functions()


@pytest.fixture(scope="module")
def scores() -> pd.DataFrame:
    return output_scores()


@pytest.fixture(scope="module")
def effects(scores) -> pd.DataFrame:
    return metaeval.effects(scores, OUTPUT_CONTROL)


def _bad_attrs(frame: pd.DataFrame | pd.Series | xr.Dataset) -> dict[str, str]:
    bad = {}
    for key, value in frame.attrs.items():
        if isinstance(value, pd.DataFrame | pd.Series | pd.Index | np.ndarray):
            bad[key] = type(value).__name__
        elif isinstance(value, dict | list | tuple) and any(
            isinstance(v, pd.DataFrame | pd.Series | np.ndarray)
            for v in (value.values() if isinstance(value, dict) else value)
        ):
            bad[key] = f"{type(value).__name__} of tables or arrays"
    return bad


CASE_NAMES = sorted(set(FUNCTIONS) - set(NOT_TABLES))


def test_every_public_function_is_run_or_said_to_return_no_table(scores, effects, tmp_path):
    cases = output_cases(scores, effects, tmp_path)
    assert sorted(cases) == CASE_NAMES, (
        f"run here: {sorted(set(CASE_NAMES) - set(cases))}; "
        f"not public functions: {sorted(set(cases) - set(CASE_NAMES))}"
    )


VARIANT_NAMES = sorted(variant_cases(output_scores(), pd.DataFrame({"task": []})))


@pytest.mark.parametrize("name", CASE_NAMES + VARIANT_NAMES)
def test_no_table_or_array_in_the_attrs_of_an_output(name, scores, effects, tmp_path):
    cases = {**output_cases(scores, effects, tmp_path), **variant_cases(scores, effects)}
    case = cases[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metaeval.MetaEvalWarning)  # small data: few tasks
        out = case()
    tables = output_tables(out)
    assert tables, f"{name}() returned {type(out).__name__}, no table"
    bad = {f"{name}(){where}": _bad_attrs(t) for where, t in tables if _bad_attrs(t)}
    assert not bad, f"attrs holding tables or arrays: {bad}"
    for _, table in tables:  # and so two outputs concatenate
        if not isinstance(table, xr.Dataset):
            pd.concat([table, table])

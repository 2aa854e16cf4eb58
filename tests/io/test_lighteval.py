"""read_lighteval: lighteval details Parquet, each row checked against pyarrow's reading.

The files here are hand-written in the layouts of lighteval before 0.11, whose details carry
no document id (``fixtures/lighteval/details``, ``make_lighteval_fixture.py``): the row
number is the query, with a warning. Details written by lighteval 0.13 itself, with ids, are
tested in ``test_lighteval_harness.py``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metaeval.errors import FormatError, MetaEvalWarning, SchemaError
from metaeval.io import read_lighteval as _read_lighteval

DETAILS = Path(__file__).parents[1] / "fixtures" / "lighteval" / "details"
STAMP = "2024-05-01T12-00-00.123456"


def read_lighteval(*args, **kwargs) -> pd.DataFrame:
    """read_lighteval, with the warning that these details carry no document id."""
    with pytest.warns(MetaEvalWarning, match="carry no document id"):
        return _read_lighteval(*args, **kwargs)


def _expected(files: dict[Path, str]) -> pd.DataFrame:
    """The documented rows, by a naive loop over what pyarrow reads."""
    rows = []
    for path, system in files.items():
        task = path.name.removeprefix("details_").removesuffix(f"_{STAMP}.parquet")
        table = pq.read_table(path)
        column = "metrics" if "metrics" in table.column_names else "metric"
        for row, metrics in enumerate(table.column(column).to_pylist()):
            for name, value in metrics.items():
                rows.append((task, str(row), system, name, float(value)))
    return pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])


def _key(table: pd.DataFrame) -> pd.DataFrame:
    return table.sort_values(["system", "task", "query", "metric"]).reset_index(drop=True)


def _all_files() -> dict[Path, str]:
    return {p: p.parent.parent.relative_to(DETAILS).as_posix() for p in DETAILS.rglob("*.parquet")}


def test_details_folder_rows_match_pyarrow():
    got = read_lighteval(DETAILS)
    assert list(got.columns) == ["task", "query", "system", "metric", "value"]
    assert set(got["system"]) == {"org/small", "large"}  # 'metrics' (< 0.10) and 'metric' (≥ 0.10)
    pd.testing.assert_frame_equal(_key(got), _key(_expected(_all_files())))


def test_a_file_a_list_and_a_mapping():
    files = sorted(DETAILS.rglob("*.parquet"))
    one = read_lighteval(files[0])
    pd.testing.assert_frame_equal(_key(one), _key(_expected({files[0]: "large"})))
    mapped = read_lighteval({"small": DETAILS / "org" / "small", "big": DETAILS / "large"})
    expected = {p: "big" if "large" in p.parts else "small" for p in files}
    pd.testing.assert_frame_equal(_key(mapped), _key(_expected(expected)))
    listed = read_lighteval([DETAILS / "org" / "small", DETAILS / "large"])
    assert set(listed["system"]) == {"small", "large"}


def _write(folder: Path, column: str, values, task: str = "lighteval|t|0") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"details_{task}_{STAMP}.parquet"
    pq.write_table(pa.table({column: values}), path)
    return path


def test_missing_metric_of_a_sample_is_left_out(tmp_path):
    path = _write(
        tmp_path / "m" / STAMP, "metrics", [{"em": 1.0, "f1": 0.5}, {"em": 0.0, "f1": None}]
    )
    got = read_lighteval(path)
    assert got[["query", "metric", "value"]].values.tolist() == [
        ["0", "em", 1.0],
        ["0", "f1", 0.5],
        ["1", "em", 0.0],
    ]


def test_string_cast_metrics_are_read(tmp_path):  # lighteval's fallback casts to str
    path = _write(tmp_path / "m" / STAMP, "metrics", ["{'em': 1}", "{'em': 0}"])
    assert read_lighteval(path)["value"].tolist() == [1.0, 0.0]


def test_no_metrics_column(tmp_path):
    path = _write(tmp_path / "m" / STAMP, "predictions", ["a"])
    with pytest.raises(FormatError, match="no column 'metrics' or 'metric'.*predictions"):
        _read_lighteval(path)


def test_non_numeric_metric(tmp_path):
    path = _write(tmp_path / "m" / STAMP, "metric", [{"em": "yes"}])
    with pytest.raises(FormatError, match="row 0: metric 'em' has value 'yes', not a number"):
        _read_lighteval(path)


def test_metrics_not_a_dict(tmp_path):
    path = _write(tmp_path / "m" / STAMP, "metrics", [1.0])
    with pytest.raises(
        FormatError, match=r"row 0: metrics 1.0 is not a non-empty \{metric: number\}"
    ):
        _read_lighteval(path)


def test_not_parquet_and_bad_name(tmp_path):
    path = tmp_path / f"details_t_{STAMP}.parquet"
    path.write_text("not parquet")
    with pytest.raises(FormatError, match="not a Parquet file"):
        _read_lighteval(path)
    other = _write(tmp_path, "metrics", [{"em": 1.0}])
    renamed = other.rename(tmp_path / "details_t.parquet")
    with pytest.raises(
        FormatError, match="details_t.parquet: the file name is not details_<task>_<timestamp>"
    ):
        _read_lighteval(renamed)


def test_two_runs_of_one_task(tmp_path):
    shutil.copytree(DETAILS / "large", tmp_path / "large")
    again = tmp_path / "large" / "2024-06-01T00-00-00.000000"
    again.mkdir()
    for path in (tmp_path / "large" / STAMP).iterdir():
        shutil.copy(path, again / path.name)
    with pytest.raises(SchemaError, match="Two details files of task .* for system 'large'"):
        _read_lighteval(tmp_path)


def test_missing_and_empty(tmp_path):
    with pytest.raises(FormatError, match="no such file or folder"):
        _read_lighteval(tmp_path / "nope")
    with pytest.raises(SchemaError, match="no details_<task>_<timestamp>.parquet"):
        _read_lighteval(tmp_path)


def test_empty_list():
    with pytest.raises(SchemaError, match="`details` is an empty list"):
        _read_lighteval([])

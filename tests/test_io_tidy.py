"""Tidy scores files: metaeval.io.read_scores / write_scores."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval.io import read_scores, write_scores


@pytest.fixture
def table() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame(
        {
            "task": ["t1"] * 6 + ["t2"] * 6,
            "query": ["007", "8", "9"] * 4,
            "system": (["a"] * 3 + ["b"] * 3) * 2,
            "metric": "m",
            "value": rng.random(12),
            "domain": ["bio"] * 6 + ["news"] * 6,
        }
    )


@pytest.mark.parametrize(
    "name", ["s.csv", "s.tsv", "s.jsonl", "s.ndjson", "s.parquet", "s.csv.gz", "s.jsonl.gz"]
)
def test_round_trip(tmp_path, table, name):
    path = tmp_path / name
    write_scores(table, path)
    back = read_scores(path)
    assert list(back.columns) == list(table.columns)
    assert back["query"].tolist() == table["query"].tolist()  # "007" stays a string
    exact = not name.startswith("s.json") and not name.startswith("s.nd")
    if exact:  # CSV and Parquet keep every bit; pandas writes JSON with 15 significant digits
        assert (back["value"].to_numpy() == table["value"].to_numpy()).all()
    else:
        np.testing.assert_allclose(back["value"], table["value"], rtol=1e-14)
    if name.endswith(".gz"):
        with gzip.open(path, "rt") as handle:
            assert handle.readline().strip()


def test_errors_name_file_and_line(tmp_path, table):
    path = tmp_path / "s.csv"
    text = table.to_csv(index=False).splitlines()
    text[3] = text[3].replace(text[3].split(",")[4], "oops")  # data row 3 = line 4
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(metaeval.FormatError, match=r"s\.csv, line 4: value 'oops' is not a number"):
        read_scores(path)

    text = table.to_csv(index=False).splitlines()
    blank = [text[0], "", *text[1:6], text[1]]  # a blank line 2; line 8 repeats line 3's key
    path.write_text("\n".join(blank) + "\n")
    with pytest.raises(metaeval.FormatError, match=r"line 3: The scores table has 1 problem"):
        read_scores(path)

    table.drop(columns="value").to_csv(path, index=False)
    with pytest.raises(
        metaeval.FormatError, match=r"line 1: the column\(s\) \['value'\] are missing"
    ):
        read_scores(path)

    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"task": "t", "query": "q", "system": "s", "metric": "m", "value": 1}\n\n{oops\n'
    )
    with pytest.raises(metaeval.FormatError, match=r"s\.jsonl, line 3: not JSON"):
        read_scores(path)

    path = tmp_path / "s.jsonl"
    path.write_text('{"task": "t", "query": "q", "system": "s", "metric": "m", "value": NaN}\n')
    with pytest.raises(metaeval.FormatError, match=r"(?s)s\.jsonl, line 1: .*missing values"):
        read_scores(path)

    with pytest.raises(metaeval.FormatError, match="does not say its format"):
        read_scores(tmp_path / "scores.xlsx")
    with pytest.raises(metaeval.FormatError, match="no such file"):
        read_scores(tmp_path / "absent.csv")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(metaeval.FormatError, match="empty"):
        read_scores(tmp_path / "empty.csv")


def test_parquet_row_is_named_without_a_line(tmp_path, table):
    table.loc[4, "value"] = np.inf
    write_scores(table, tmp_path / "s.parquet")
    with pytest.raises(metaeval.FormatError, match=r"s\.parquet: The scores table") as err:
        read_scores(tmp_path / "s.parquet")
    assert err.value.line is None and "rows [4]" in str(err.value)

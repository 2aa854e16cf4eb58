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
    with pytest.raises(
        metaeval.FormatError, match=r"line 8: the key .* appears twice \(first on line 3\)"
    ):
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
    assert err.value.line is None and "row [4]" in str(err.value)


# ------------------------------------------------ text decoding, field counts, duplicates
def test_bom_and_crlf_read_as_plain_utf8(tmp_path, table):
    plain = tmp_path / "plain.csv"
    write_scores(table, plain)
    text = plain.read_bytes()
    for name, content in [
        ("bom.csv", b"\xef\xbb\xbf" + text),
        ("crlf.csv", text.replace(b"\n", b"\r\n")),
    ]:
        (tmp_path / name).write_bytes(content)
        pd.testing.assert_frame_equal(read_scores(tmp_path / name), read_scores(plain))


def test_undecodable_bytes_name_the_line_and_the_byte(tmp_path, table):
    lines = table.to_csv(index=False).encode().split(b"\n")
    lines[2] = lines[2].replace(b"t1", b"t\xe91", 1)
    path = tmp_path / "s.csv"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(metaeval.FormatError) as err:
        read_scores(path)
    assert str(err.value).startswith(f"{path}, line 3: not UTF-8 text (byte 0xe9). Expected UTF-8")
    assert err.value.line == 3


@pytest.mark.parametrize("name", ["s.csv", "s.jsonl", "s.parquet"])
def test_a_directory_or_a_truncated_gzip_file_is_a_format_error(tmp_path, table, name):
    (tmp_path / name).mkdir()  # a folder is read as its scores files: here, none
    with pytest.raises(metaeval.FormatError, match="is a directory without scores files"):
        read_scores(tmp_path / name)
    if name != "s.parquet":
        write_scores(table, tmp_path / f"{name}.gz")
        data = (tmp_path / f"{name}.gz").read_bytes()
        (tmp_path / f"{name}.gz").write_bytes(data[: len(data) // 2])
        with pytest.raises(metaeval.FormatError, match="truncated or damaged gzip file"):
            read_scores(tmp_path / f"{name}.gz")


def test_rows_with_more_or_fewer_fields_than_the_header_are_refused(tmp_path, table):
    text = table.to_csv(index=False).splitlines()
    path = tmp_path / "s.csv"
    # every data row with one field more: pandas would silently take column 1 as the index
    path.write_text("\n".join([text[0]] + ["x," + line for line in text[1:]]) + "\n")
    with pytest.raises(
        metaeval.FormatError,
        match=r"s\.csv, line 2: 7 comma-separated fields where the header has 6",
    ):
        read_scores(path)
    path.write_text("\n".join([*text[:4], text[4].rsplit(",", 1)[0], *text[5:]]) + "\n")
    with pytest.raises(metaeval.FormatError, match=r"line 5: 5 comma-separated fields"):
        read_scores(path)
    tsv = tmp_path / "s.tsv"
    tsv.write_text(table.to_csv(index=False, sep="\t") + "t1\t1\ta\tm\t0.5\tbio\textra\n")
    with pytest.raises(metaeval.FormatError, match=r"line 14: 7 tab-separated fields"):
        read_scores(tsv)


def test_quoted_separators_stay_in_their_field(tmp_path, table):
    quoted = table.assign(domain=table["domain"] + ", tab\there")
    for name in ("s.csv", "s.tsv"):
        write_scores(quoted, tmp_path / name)
        pd.testing.assert_frame_equal(read_scores(tmp_path / name), quoted)


def test_header_only_duplicate_keys_and_repeated_members(tmp_path, table):
    path = tmp_path / "s.csv"
    path.write_text("task,query,system,metric,value\n")
    with pytest.raises(metaeval.FormatError, match=r"s\.csv: a header but no data rows"):
        read_scores(path)
    path.write_text("task,query,system,metric,value,value\nt,q,a,m,1,2\n")
    with pytest.raises(
        metaeval.FormatError, match=r"line 1: the header names column\(s\) \['value'\] twice"
    ):
        read_scores(path)
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text(
        '{"task": "t", "query": "q", "system": "a", "metric": "m", "value": 1, "value": 2}\n'
    )
    with pytest.raises(metaeval.FormatError, match=r"line 1: not JSON \(key 'value' appears twice"):
        read_scores(jsonl)
    write_scores(pd.concat([table, table.iloc[[3]]]), tmp_path / "d.parquet")
    with pytest.raises(
        metaeval.FormatError, match=r"d\.parquet: the key .* appears twice \(rows 3 and 12\)"
    ):
        read_scores(tmp_path / "d.parquet")


def test_a_huge_line_gives_a_short_message(tmp_path):
    for name, content in [
        ("s.csv", "task,query,system,metric,value\nt,q,a,m," + "9" * 2_000_000 + "x\n"),
        ("h.csv", "h" * 2_000_000),
        ("s.jsonl", '{"x": "' + "y" * 2_000_000),
    ]:
        (tmp_path / name).write_text(content)
        with pytest.raises(metaeval.FormatError) as err:
            read_scores(tmp_path / name)
        assert len(str(err.value)) < 600, str(err.value)[:1000]


def _by_task_files(folder, table, suffix=".parquet"):
    folder.mkdir(exist_ok=True)
    for task, part in table.groupby("task"):
        write_scores(part, folder / f"{task}{suffix}")
    return folder


def test_a_folder_or_pattern_reads_as_one_table(tmp_path, table):
    folder = _by_task_files(tmp_path / "by-task", table)
    (folder / "_SUCCESS").write_text("")  # writers' markers and hidden files are not scores
    (folder / ".part.parquet.crc").write_text("")
    want = table.sort_values(["task"], kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(read_scores(folder), want)
    pd.testing.assert_frame_equal(read_scores(str(folder / "*.parquet")), want)
    mixed = _by_task_files(tmp_path / "mixed", table, ".csv.gz")
    pd.testing.assert_frame_equal(read_scores(mixed), want)
    with pytest.raises(metaeval.FormatError, match="no file matches this pattern"):
        read_scores(tmp_path / "nothing-*.csv")


def test_a_key_in_two_files_names_both(tmp_path, table):
    folder = _by_task_files(tmp_path / "f", table)
    first = sorted(folder.iterdir())[0]
    write_scores(read_scores(first).iloc[[3]], folder / "zz-again.parquet")
    with pytest.raises(metaeval.FormatError) as err:
        read_scores(folder)
    assert str(err.value).startswith(f"{folder / 'zz-again.parquet'}: row 0 has the key")
    assert f"that {first} has too" in str(err.value)


def test_lazy_reading_gives_dask_a_table_equal_to_the_eager_one(tmp_path, table):
    dd = pytest.importorskip("dask.dataframe")
    folder = _by_task_files(tmp_path / "f", table)
    lazy = read_scores(folder, lazy=True)
    assert isinstance(lazy, dd.DataFrame) and lazy.npartitions == table["task"].nunique()
    pd.testing.assert_frame_equal(lazy.meta.effects("a"), read_scores(folder).meta.effects("a"))
    csv = _by_task_files(tmp_path / "c", table, ".csv")
    with pytest.raises(metaeval.FormatError, match="reads Parquet files only"):
        read_scores(csv, lazy=True)
    write_scores(table.drop(columns="value"), tmp_path / "novalue.parquet")
    with pytest.raises(metaeval.FormatError, match=r"\['value'\] are missing"):
        read_scores(tmp_path / "novalue.parquet", lazy=True)


def test_a_replicate_column_is_part_of_the_key_and_kept(tmp_path):
    """Seeds or epochs in a scores file: read as they are (never averaged on reading), the
    replicate part of the key; a key repeated with its replicate is an error naming it."""
    rows = pd.DataFrame(
        {
            "task": "t",
            "query": ["q1", "q1", "q2", "q2"],
            "system": "s",
            "metric": "acc",
            "replicate": [1, 2, 1, 2],
            "value": [1.0, 0.0, 1.0, 1.0],
        }
    )
    path = tmp_path / "seeds.csv"
    rows.to_csv(path, index=False)
    back = metaeval.io.read_scores(path)
    assert back["replicate"].tolist() == ["1", "2", "1", "2"]
    assert back["value"].tolist() == rows["value"].tolist()
    pd.concat([rows, rows.iloc[[0]]]).to_csv(path, index=False)
    with pytest.raises(metaeval.FormatError, match=r"replicate\) = \('t', 'q1', 's', 'acc', 1\)"):
        metaeval.io.read_scores(path)

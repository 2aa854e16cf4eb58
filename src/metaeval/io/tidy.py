"""Tidy scores files: CSV, TSV, JSON lines or Parquet, by extension.

A scores file holds one row per ``(task, query, system, metric)`` with its
``value``, the table every metaeval function takes; other columns (a task-level
``domain``, say) are kept. A ``replicate`` column (the seed or epoch of a repeated
run) is part of the key and kept as it is: nothing is averaged on reading. Text formats
may be gzip-compressed (``.csv.gz``).

**The replicates' design travels as a column.** How a ``replicate`` column's runs relate
to the tasks (``"epochs"``, ``"crossed"`` or ``"nested"``, see :func:`metaeval.effects`)
changes the intervals, and pandas keeps it in ``attrs["replicates"]``, which text formats
and the other engines drop. :func:`write_scores` writes it as a
``replicate_design`` column (the same value on every row), which
every format holds and every reader and engine reads — ``read_scores`` with any engine,
but also a user's ``pl.read_csv`` or ``duckdb.read_json``. A file's metadata (Parquet) or
a sidecar file would be lost by the engines' own readers, by concatenation or by copying
one file; a header line would break other CSV readers. The column costs a few bytes per
row in CSV and JSON lines and next to nothing in Parquet (one dictionary entry).
:func:`read_scores` into pandas puts it back into ``attrs["replicates"]``, so a table
reads back as it was written; the lazy engines keep the column, which
:func:`metaeval.effects` reads. A Parquet file written by pandas' own ``to_parquet`` keeps
``attrs`` in its metadata (no column): the lazy engines read it from there.
"""

from __future__ import annotations

import glob
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._options import REPLICATE_DESIGNS
from ..engines import any_frame, declared_orders, narwhals
from ..errors import (
    FormatError,
    MetaEvalError,
    OptionError,
    SchemaError,
    check_option,
    excerpt,
    quote_list,
)
from ..schema import (
    JUDGE,
    KEY_COLUMNS,
    REPLICATE,
    REPLICATE_DESIGN,
    checked_replicates,
    coerce_scores,
    first_repeat,
    map_columns,
    prepare_scores,
    recorded_design,
    validate_scores,
)
from ._text import check_readable, iter_jsonl, read_delimited, read_text

__all__ = ["read_scores", "write_scores", "scores_format", "scores_files", "SCORES_SUFFIXES"]

SCORES_SUFFIXES = (".csv", ".tsv", ".jsonl", ".ndjson", ".parquet", ".pq")
ENGINES = ("pandas", "duckdb", "polars", "dask")
"""What :func:`read_scores` reads with: pandas now, or lazily DuckDB, polars or dask."""
COLUMNS = [*KEY_COLUMNS, "value"]
LAYOUT = (
    "a scores table with the columns task, query, system, metric, value "
    "(one row per task, query, system and metric)"
)


def scores_format(path: Path) -> str:
    """The format of a scores file from its name (``.csv``, ``.tsv``, ``.jsonl`` or ``.parquet``)."""
    name = path.name.lower()
    name = name[: -len(".gz")] if name.endswith(".gz") else name
    for suffix in SCORES_SUFFIXES:
        if name.endswith(suffix):
            return {".ndjson": ".jsonl", ".pq": ".parquet"}.get(suffix, suffix)
    raise FormatError(
        path,
        None,
        "the file name does not say its format",
        f"a name ending in one of {list(SCORES_SUFFIXES)} (text formats may add .gz)",
    )


def _parquet_engine_error(err: ImportError) -> MetaEvalError:
    return MetaEvalError(f"Parquet files need pyarrow: pip install 'metaeval[parquet]' ({err}).")


def scores_files(path: str | Path) -> list[Path]:
    """The scores files a path names: the file itself; in a folder, every file (in its
    sub-folders too) whose name ends in a scores suffix, sorted, leaving out names that
    start with ``.`` or ``_`` (``_SUCCESS``, ``.crc``); or those matching a glob pattern
    (``runs/*/scores.parquet``, ``**`` for any depth), sorted.

    Raises
    ------
    metaeval.FormatError
        For a folder without scores files or a pattern that matches no file.
    """
    text = str(path)
    if any(ch in text for ch in "*?["):
        files = sorted(Path(p) for p in glob.glob(text, recursive=True) if Path(p).is_file())
        if not files:
            raise FormatError(
                path, None, "no file matches this pattern", "a pattern of scores files"
            )
        return files
    path = Path(path)
    if not path.is_dir():
        return [path]

    def is_scores(file: Path) -> bool:
        hidden = any(part.startswith((".", "_")) for part in file.relative_to(path).parts)
        name = file.name.lower().removesuffix(".gz")
        return file.is_file() and not hidden and name.endswith(SCORES_SUFFIXES)

    files = sorted(f for f in path.rglob("*") if is_scores(f))
    if not files:
        raise FormatError(
            path,
            None,
            "is a directory without scores files",
            f"a folder of files whose names end in one of {list(SCORES_SUFFIXES)}",
        )
    return files


def read_scores(
    path: str | Path | Sequence[str | Path],
    *,
    lazy: bool = False,
    engine: str | None = None,
    columns: Mapping[str, str] | None = None,
    constants: Mapping[str, str] | None = None,
) -> Any:
    """Read a tidy scores file (CSV, TSV, JSON lines or Parquet, by extension), or a
    folder or glob pattern of them.

    Key columns are read as strings (query ``007`` stays ``"007"``) and the
    table is checked with :func:`metaeval.validate_scores`. Text formats are
    UTF-8 (a byte-order mark and ``\\r\\n`` line ends are fine), plain or
    gzip-compressed; blank lines are skipped; in CSV and TSV a quoted field may
    hold the separator.

    Parameters
    ----------
    path : str or pathlib.Path, or a list of them
        A file; a folder, meaning the scores files in it and in its sub-folders (names
        ending in a scores suffix and not starting with ``.`` or ``_``), sorted; or a
        glob pattern (``**`` for any depth); or a list of these, in its order. Several
        files are read one by one, with the checks above, and concatenated; a key in
        two files is an error naming both.
    lazy : bool, default False
        Return a ``dask.dataframe.DataFrame`` over Parquet files instead, read
        when computed (needs the ``dask`` extra): for tables larger than memory or a
        cluster. One partition per file, or per row group of large files. Nothing is
        read or checked now; the ``.meta`` methods check each partition as they read
        it, and ``.meta.validate()`` checks the whole table (see :doc:`/user_guide/scale`).
        The same as ``engine="dask"``.
    engine : {"pandas", "duckdb", "polars", "dask"}, optional
        What reads the files (default: pandas, every file read and checked now).
        ``"duckdb"``: a DuckDB relation over Parquet files (on DuckDB's default
        connection, whose ``threads`` and ``memory_limit`` settings apply);
        ``"polars"``: a polars LazyFrame (``pl.scan_parquet``). Nothing is read now
        but the files' schemas; every metaeval function takes the result, and
        :func:`metaeval.effects`, :func:`metaeval.sufficient_statistics`,
        :func:`metaeval.analyze`, :func:`metaeval.compare`, :func:`metaeval.means`,
        :func:`metaeval.anova` and :func:`metaeval.tukey` compute in the engine, with the
        checks of :func:`metaeval.validate_scores` (see the Notes of
        :func:`metaeval.effects` and :doc:`/user_guide/engines`). ``"dask"``: as ``lazy=True``.
    columns : mapping of str to str, optional
        The files' own column names: ``{"task": "dataset", "query": "qid", "system":
        "run", "metric": "measure", "value": "score"}`` (any of them), as
        :func:`metaeval.scores` takes them; key columns are read as strings.
    constants : mapping of str to str, optional
        Key columns the files do not have, with every row's value
        (``{"metric": "nDCG@10"}``), as :func:`metaeval.scores`.

    Returns
    -------
    pandas.DataFrame, or a DuckDB relation, a polars LazyFrame or a dask DataFrame
        The scores. The design of a ``replicate`` column, as the files record it (a
        ``replicate_design`` column, which :func:`write_scores`
        writes, or the ``attrs`` pandas keeps in a Parquet file's metadata), is in
        ``attrs["replicates"]`` of a pandas table (the column dropped: the table written),
        in the column of a lazy one; files that record a design must agree. Key columns
        stored as Arrow dictionaries that declare an order (``ordered``, or a pandas
        categorical) keep it in every engine — a pandas categorical, a polars or DuckDB
        ``Enum`` with the categories of each file's first row group, when the files
        agree; other dictionaries are sorted, as strings are (see
        ``metaeval.engines``).

    Raises
    ------
    metaeval.FormatError
        Naming the file and the line (for Parquet, the row) of the first
        problem: an empty file, a header without data rows, a missing column,
        a column named twice, a row with more or fewer fields than the header,
        a value that is not a number, NaN or ±inf, a repeated
        ``(task, query, system, metric)`` key, a replicate design that is not one
        value or that two files state differently, a line that is not a JSON
        object (or names a key twice), bytes that are not UTF-8, a directory
        without scores files or a damaged gzip file. With ``lazy=True`` or another
        ``engine``: a file that is not Parquet, or columns missing from the files'
        schema.
    metaeval.OptionError
        An unknown ``engine``, or ``lazy=True`` with an engine other than dask.

    Examples
    --------
    >>> import tempfile, pathlib, metaeval
    >>> from metaeval.io import read_scores, write_scores
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(tmp.name) / "scores.csv"
    >>> write_scores(metaeval.load_example(), path)
    >>> read_scores(path).shape
    (26940, 5)

    A folder with one file per task reads as one table:

    >>> example = metaeval.load_example()
    >>> folder = pathlib.Path(tmp.name) / "by-task"
    >>> folder.mkdir()
    >>> for task, part in example.groupby("task"):
    ...     write_scores(part, folder / f"{task}.parquet")
    >>> read_scores(folder).shape
    (26940, 5)

    The same files as a DuckDB relation, the effects computed by DuckDB:

    >>> relation = read_scores(folder / "*.parquet", engine="duckdb")
    >>> type(relation).__name__
    'DuckDBPyRelation'
    >>> metaeval.effects(relation, "knn").shape == metaeval.effects(example, "knn").shape
    True
    >>> tmp.cleanup()
    """
    check_option("engine", engine, (None, *ENGINES))
    if lazy and engine not in (None, "dask"):
        raise OptionError(
            f"lazy=True reads with dask; it cannot be combined with engine={engine!r}."
        )
    paths = [path] if isinstance(path, str | Path) else list(path)
    if not paths:
        raise MetaEvalError("read_scores() was given an empty list of paths.")
    files = [f for p in paths for f in scores_files(p)]
    mapping = (dict(columns or {}), dict(constants or {}))
    if lazy or engine == "dask":
        return _read_lazy(files, *mapping)
    if engine in ("duckdb", "polars"):
        return _read_engine(files, engine, *mapping)
    if len(files) == 1:
        return _read_file(files[0], *mapping)
    frames = [_read_file(f, *mapping) for f in files]
    design = _one_design([f.attrs.get("replicates") for f in frames], files)
    return _noted(_concat_files(frames, files), design)


def _noted(df: pd.DataFrame, design: str | None) -> pd.DataFrame:
    """``df`` with ``attrs["replicates"]`` the files' design (other attrs pandas kept in a
    Parquet file's metadata stay)."""
    attrs = {k: v for k, v in df.attrs.items() if k != "replicates"}
    df.attrs = {**attrs, "replicates": design} if design is not None else attrs
    return df


def _one_design(designs: list[str | None], files: list[Path]) -> str | None:
    """The design the files record (None where one records none); two files that state
    different designs are a FormatError naming both."""
    known = [(d, f) for d, f in zip(designs, files, strict=True) if d is not None]
    for design, file in known[1:]:
        if design != known[0][0]:
            raise FormatError(
                file,
                None,
                f"its replicates are {design!r} ({REPLICATE_DESIGN!r}) where {known[0][1]} says "
                f"{excerpt(known[0][0])}",
                "files of one design (read them apart, or pass effects(..., replicates=...))",
            )
    return known[0][0] if known else None


def _with_design(df: pd.DataFrame, path: Path) -> tuple[pd.DataFrame, str | None]:
    """A file's table without its design column, and the design it records (the column,
    or pandas' attrs from a Parquet file's metadata); a FormatError for one that
    contradicts itself."""
    try:
        design = recorded_design(df)
    except SchemaError as err:
        raise FormatError(path, None, str(err).rstrip("."), LAYOUT) from None
    if REPLICATE_DESIGN in df.columns:
        df = df.drop(columns=REPLICATE_DESIGN)
    return df, design


def _mapped(df: pd.DataFrame, path: Path, columns: dict, constants: dict) -> pd.DataFrame:
    """The table with the standard column names, or a FormatError naming the file."""
    if not columns and not constants:
        return df
    try:
        return map_columns(df, columns, constants, where="columns")
    except SchemaError as err:
        raise FormatError(path, None, str(err).rstrip("."), LAYOUT) from None


def _concat_files(frames: list[pd.DataFrame], files: list[Path]) -> pd.DataFrame:
    """The files' tables as one; a key in two of them is a FormatError naming both."""
    df = pd.concat(frames, ignore_index=True)
    names = _key_names(df)
    repeat = first_repeat(*(df[c] for c in names))
    if repeat is not None:
        ends = np.cumsum([len(f) for f in frames])
        first, again = (int(np.searchsorted(ends, i, side="right")) for i in repeat)
        row = repeat[1] - (int(ends[again - 1]) if again else 0)
        key = ", ".join(excerpt(df[c].iloc[repeat[1]], 30) for c in names)
        raise FormatError(
            files[again],
            None,
            f"row {row} has the key ({', '.join(names)}) = ({key}) that {files[first]} has too",
            "files whose keys do not collide (one file per task or per system, say)",
        )
    return _ready(df)


def _key_names(df: pd.DataFrame) -> list[str]:
    """The key columns of a scores table: with a ``judge`` column (a table of labels) or a
    ``replicate`` column (seeds, epochs) they are part of the key."""
    return [*KEY_COLUMNS, *(c for c in (JUDGE, REPLICATE) if c in df.columns)]


def _ready(df: pd.DataFrame) -> pd.DataFrame:
    """The checked scores table; a ``replicate`` column is kept (the methods average the
    replicates or model them, :mod:`metaeval.paired.replicates`), never averaged here."""
    if JUDGE in df.columns:  # a table of labels: one score per judge, checked as such
        checked = validate_scores(df)
        return checked if REPLICATE not in df.columns else checked_replicates(checked)
    ready = prepare_scores(df)  # every check; it averages replicates for the methods
    return ready if REPLICATE not in df.columns else checked_replicates(coerce_scores(df))


def _read_lazy(files: list[Path], columns: dict, constants: dict) -> Any:
    """A dask DataFrame over Parquet files, their schema checked."""
    not_parquet = [f for f in files if scores_format(f) != ".parquet"]
    if not_parquet:
        raise FormatError(
            not_parquet[0],
            None,
            "read_scores(lazy=True) reads Parquet files only",
            "Parquet files; convert with write_scores(read_scores(file), 'name.parquet')",
        )
    try:
        import dask.dataframe as dd
    except ImportError as err:
        raise MetaEvalError(
            f"read_scores(lazy=True) needs dask: pip install 'metaeval[dask]' ({err})."
        ) from None
    for file in files:
        check_readable(file)
    try:
        ddf = dd.read_parquet([str(f) for f in files])
    except Exception as err:  # noqa: BLE001 - pyarrow raises its own types
        raise FormatError(files[0], None, f"not a Parquet dataset ({err})", LAYOUT) from None
    ddf = _mapped(ddf, files[0], columns, constants)
    missing = [c for c in COLUMNS if c not in ddf.columns]
    if missing:
        raise FormatError(
            files[0],
            None,
            f"the column(s) {missing} are missing (found {quote_list(list(ddf.columns))})",
            LAYOUT,
        )
    return ddf


def _read_engine(files: list[Path], engine: str, columns: dict, constants: dict) -> Any:
    """A DuckDB relation or a polars LazyFrame over Parquet files, their schema checked."""
    not_parquet = [f for f in files if scores_format(f) != ".parquet"]
    if not_parquet:
        raise FormatError(
            not_parquet[0],
            None,
            f"read_scores(engine={engine!r}) reads Parquet files only",
            "Parquet files; convert with write_scores(read_scores(file), 'name.parquet')",
        )
    for file in files:
        check_readable(file)
    names = [str(f) for f in files]
    stored = _stored(files, [columns.get(k, k) for k in ("task", "system", "metric")])
    try:
        if engine == "duckdb":
            import duckdb

            native = duckdb.read_parquet(names, union_by_name=True)
        else:
            import polars as pl

            native = pl.scan_parquet(names)
    except ImportError as err:
        raise MetaEvalError(
            f"read_scores(engine={engine!r}) needs {engine}: pip install 'metaeval[engines]' "
            f"({err})."
        ) from None
    nw = narwhals()
    frame = nw.from_native(native)
    try:
        found = list(frame.collect_schema().names())
    except Exception as err:  # noqa: BLE001 - each engine raises its own types
        raise FormatError(files[0], None, f"not a Parquet dataset ({err})", LAYOUT) from None
    if stored.orders:  # the declared order of Arrow dictionaries, as an Enum
        frame = frame.with_columns(
            *[nw.col(c).cast(nw.Enum(v)) for c, v in stored.orders.items() if c in found]
        )
    if stored.design is not None and REPLICATE in found and REPLICATE_DESIGN not in found:
        frame = frame.with_columns(nw.lit(stored.design).alias(REPLICATE_DESIGN))
        found.append(REPLICATE_DESIGN)
    if columns or constants:
        try:
            map_columns(pd.DataFrame(columns=found), columns, constants, where="columns")
        except SchemaError as err:
            raise FormatError(files[0], None, str(err).rstrip("."), LAYOUT) from None
        renamed = {src: dst for dst, src in columns.items() if src != dst}
        frame = frame.rename(renamed)
        if constants:  # (polars refuses with_columns() of nothing)
            frame = frame.with_columns(*[nw.lit(str(v)).alias(k) for k, v in constants.items()])
        found = list(frame.collect_schema().names())
    missing = [c for c in COLUMNS if c not in found]
    if missing:
        raise FormatError(
            files[0],
            None,
            f"the column(s) {missing} are missing (found {quote_list(found)})",
            LAYOUT,
        )
    return nw.to_native(frame)


class _Stored:
    """What Parquet files' footers say beyond their columns: ``design``, the replicate
    design pandas' ``attrs`` recorded in their metadata (files that record one agree),
    and ``orders``, the categories of key columns stored as dictionaries that declare an
    order (the same in every file)."""

    def __init__(self, design: str | None, orders: dict[str, list[str]]) -> None:
        self.design, self.orders = design, orders


def _stored(files: list[Path], keys: list[str]) -> _Stored:
    """:class:`_Stored` of Parquet files, from their schemas (each file's footer) and, for
    the key columns (``keys``: the files' names of task, system and metric) whose
    dictionary declares an order, the dictionary of the first row group (pyarrow, and so
    pandas, writes the whole dictionary into every row group)."""
    import json

    try:
        import pyarrow.parquet as pq
    except ImportError as err:  # pragma: no cover - the engines extra has pyarrow
        raise _parquet_engine_error(err) from None
    designs: list[str | None] = []
    orders: dict[str, list[str]] | None = None
    for file in files:
        try:
            handle = pq.ParquetFile(file)
        except Exception as err:  # noqa: BLE001 - pyarrow raises its own types
            raise FormatError(file, None, f"not a Parquet file ({err})", LAYOUT) from None
        schema = handle.schema_arrow
        attrs = json.loads((schema.metadata or {}).get(b"PANDAS_ATTRS", b"{}") or b"{}")
        noted = attrs.get("replicates") if isinstance(attrs, dict) else None
        designs.append(noted if noted in REPLICATE_DESIGNS else None)
        declared = declared_orders(schema)
        mine = {}
        if handle.metadata.num_row_groups:
            for name in (c for c in keys if c in declared):
                chunks = handle.read_row_group(0, columns=[name]).column(name).chunks
                if chunks:
                    mine[name] = [str(v) for v in chunks[0].dictionary.to_pylist()]
        # a column keeps its order only where every file declares the same one
        orders = mine if orders is None else {c: v for c, v in orders.items() if mine.get(c) == v}
    return _Stored(_one_design(designs, files), orders or {})


def _read_file(path: Path, columns: dict, constants: dict) -> pd.DataFrame:
    """One scores file, checked."""
    path = Path(path)
    kind = scores_format(path)
    check_readable(path)
    keys = [columns.get(c, c) for c in KEY_COLUMNS]  # the file's names of the key columns
    lines: np.ndarray | None = None  # the line of each row (text formats)
    if kind in (".csv", ".tsv"):
        df, lines = _read_delimited(path, "," if kind == ".csv" else "\t", keys)
    elif kind == ".jsonl":
        df, lines = _read_json_lines(path, keys)
    else:
        try:
            import pyarrow.parquet as pq

            df = pd.read_parquet(path)
            declared = declared_orders(pq.read_schema(path))
        except ImportError as err:
            raise _parquet_engine_error(err) from None
        except Exception as err:  # noqa: BLE001 - pyarrow raises its own types
            raise FormatError(path, None, f"not a Parquet file ({err})", LAYOUT) from None
        for name in df.columns:  # a dictionary's order is kept only where it is declared
            if isinstance(df[name].dtype, pd.CategoricalDtype) and name not in declared:
                df[name] = df[name].cat.reorder_categories(sorted(df[name].cat.categories))
    df, design = _with_design(df, path)
    df = _mapped(df, path, columns, constants)
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise FormatError(
            path,
            1 if kind == ".csv" or kind == ".tsv" else None,
            f"the column(s) {missing} are missing (found {quote_list(list(df.columns))})",
            LAYOUT,
        )
    if len(df) == 0:
        raise FormatError(
            path, None, "no rows" if lines is None else "a header but no data rows", LAYOUT
        )

    def line_of(row: int) -> int | None:
        return None if lines is None else int(lines[row])

    value = pd.to_numeric(df["value"], errors="coerce")
    text = value.isna() & df["value"].notna()
    if text.any():
        row = int(text.to_numpy().nonzero()[0][0])
        raise FormatError(
            path, line_of(row), f"value {excerpt(df['value'].iloc[row])} is not a number", LAYOUT
        )
    df["value"] = value
    names = _key_names(df)
    keys = [df[c] for c in names]
    known = np.logical_and.reduce([k.notna().to_numpy() for k in keys])
    repeat = first_repeat(*(k[known] for k in keys))
    if repeat is not None:  # one message for the first repeat, naming both lines (or rows)
        first, again = (int(np.flatnonzero(known)[i]) for i in repeat)
        where = f"rows {first} and {again}" if lines is None else f"first on line {line_of(first)}"
        key = ", ".join(excerpt(k.iloc[again], 30) for k in keys)
        raise FormatError(
            path,
            line_of(again),
            f"the key ({', '.join(names)}) = ({key}) appears twice ({where})",
            f"{LAYOUT}, each key once",
        )
    try:
        ready = _ready(df)  # the full report only when a check fails
        return _noted(ready, design)
    except SchemaError as err:
        rows = pd.to_numeric(err.failure_cases.get("row"), errors="coerce").dropna()
        bad_row = int(rows.min()) if len(rows) else None
        note = (
            ""
            if bad_row is None or lines is None
            else f" (row {bad_row} is line {line_of(bad_row)})"
        )
        line = None if bad_row is None else line_of(bad_row)
        raise FormatError(path, line, str(err).rstrip(".") + note, LAYOUT) from None


def _read_delimited(path: Path, sep: str, keys: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """A CSV or TSV scores file, every row checked to have the header's field count."""
    text = read_text(path)
    header, lines = read_delimited(path, text, sep, LAYOUT)
    if len(set(header)) < len(header):
        repeated = sorted({c for c in header if header.count(c) > 1})
        raise FormatError(
            path, 1, f"the header names column(s) {quote_list(repeated)} twice", LAYOUT
        )
    try:
        df = pd.read_csv(
            io.StringIO(text),
            sep=sep,
            dtype=dict.fromkeys(keys, str),
            keep_default_na=False,
            index_col=False,
            na_values={"value": ["", "NA", "NaN", "nan", "null"]},
        )
    except pd.errors.ParserError as err:  # read_delimited checked the field counts
        raise FormatError(path, _line(str(err)), f"not a {sep!r}-separated table", LAYOUT) from None
    return df, lines


def _read_json_lines(path: Path, keys: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """A JSON-lines scores file: one object per line, blank lines skipped."""
    lines, records = zip(*iter_jsonl(path, LAYOUT), strict=True)
    df = pd.DataFrame.from_records(list(records))
    for column in keys:  # JSON numbers as keys: 7 -> "7", as in the text formats
        if column in df.columns:
            df[column] = [
                str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in df[column]
            ]
    return df, np.asarray(lines, dtype=np.int64)


def _line(message: str) -> int | None:
    import re

    found = re.search(r"line (\d+)", message)
    return int(found.group(1)) if found else None


@any_frame
def write_scores(scores: pd.DataFrame, path: str | Path) -> None:
    """Write a scores table as CSV, TSV, JSON lines or Parquet, by extension.

    Text formats are gzip-compressed when the name ends in ``.gz``. A table with a
    ``replicate`` column whose design is known (``attrs["replicates"]``, as
    :func:`metaeval.io.read_inspect` sets it) gets it as a
    ``replicate_design`` column, in every format, so that every
    reader and engine reads it (see the module docstring). The input is not changed.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table.
    path : str or pathlib.Path
        The file to write; its extension (``.csv``, ``.tsv``, ``.jsonl``,
        ``.ndjson``, ``.parquet``, ``.pq``; a text one with ``.gz``) sets the format.

    Raises
    ------
    metaeval.SchemaError
        A ``replicate_design`` column that is not one design, or that contradicts
        ``attrs["replicates"]``.

    Examples
    --------
    >>> import pathlib, tempfile, metaeval
    >>> from metaeval.io import read_scores, write_scores
    >>> scores = metaeval.load_example().query("task == 'iris'").reset_index(drop=True)
    >>> tmp = tempfile.TemporaryDirectory()
    >>> for name in ["scores.csv.gz", "scores.tsv", "scores.jsonl"]:
    ...     write_scores(scores, pathlib.Path(tmp.name) / name)
    >>> back = read_scores(pathlib.Path(tmp.name) / "scores.jsonl")
    >>> back.equals(scores)
    True
    >>> (pathlib.Path(tmp.name) / "scores.tsv").read_text().splitlines()[1].split()
    ['iris', '0', 'logistic_regression', 'accuracy', '1.0']
    >>> tmp.cleanup()
    """
    path = Path(path)
    kind = scores_format(path)
    design = recorded_design(scores)
    if design is not None and REPLICATE in scores.columns and REPLICATE_DESIGN not in scores:
        scores = scores.assign(**{REPLICATE_DESIGN: design})  # kept with the data (module doc)
    if kind == ".parquet":
        try:
            scores.to_parquet(path, index=False)
        except ImportError as err:
            raise _parquet_engine_error(err) from None
    elif kind == ".jsonl":
        scores.to_json(path, orient="records", lines=True, double_precision=15)
    else:
        scores.to_csv(path, sep="," if kind == ".csv" else "\t", index=False)

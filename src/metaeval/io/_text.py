"""The one way the readers of :mod:`metaeval.io` open text files, and their shared checks.

Every text reader opens its file with :func:`open_text`, so that a directory, an
unreadable or damaged gzip file and bytes that are not UTF-8 all give a
:class:`~metaeval.FormatError` naming the file (and, for bad bytes, the line)
instead of a Python exception. Delimited tables go through :func:`read_delimited`,
which refuses rows whose field count differs from the header's.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..errors import FormatError, OptionError, SchemaError, excerpt

__all__ = [
    "open_text",
    "read_text",
    "read_delimited",
    "check_readable",
    "unique_keys",
    "no_records",
    "iter_jsonl",
    "check_primary_map",
]

UTF8 = "UTF-8 text (re-save the file as UTF-8, e.g. with iconv -f latin1 -t utf-8)"
GZIP = "a complete gzip file (or uncompressed text)"


def check_readable(path: str | Path) -> Path:
    """``path`` as a :class:`~pathlib.Path`, or a FormatError if it is not an existing file."""
    path = Path(path)
    if path.is_dir():
        raise FormatError(path, None, "is a directory, not a file", "the path of a file")
    if not path.is_file():
        problem = "not a regular file" if path.exists() else "no such file"
        raise FormatError(path, None, problem, "an existing file")
    return path


def _is_gzip(path: Path) -> bool:
    try:
        with open(path, "rb") as raw:
            return raw.read(2) == b"\x1f\x8b"
    except OSError as err:
        raise FormatError(
            path, None, f"cannot be read ({err.strerror})", "a readable file"
        ) from None


@contextmanager
def open_text(path: str | Path) -> Iterator[IO[str]]:
    """Open a text file, gzip-compressed or not (recognised by its first bytes).

    A context manager: ``with open_text(path) as handle: ...``. The text is
    decoded as UTF-8 (a leading byte-order mark is dropped) with universal line
    ends (``\\r\\n`` reads as ``\\n``).

    Raises
    ------
    metaeval.FormatError
        When ``path`` is not a readable file, and when reading in the ``with``
        body meets bytes that are not UTF-8 (naming the line and the byte) or
        a truncated or damaged gzip stream.
    """
    path = check_readable(path)
    gz = _is_gzip(path)
    try:
        handle: IO[str] = (
            io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig")
            if gz
            else open(path, encoding="utf-8-sig")  # noqa: SIM115 - closed below
        )
    except OSError as err:
        raise FormatError(
            path, None, f"cannot be read ({err.strerror})", "a readable file"
        ) from None
    try:
        with handle:
            yield handle
    except UnicodeDecodeError:
        line, byte = _first_undecodable(path, gz)
        problem = "not UTF-8 text" + ("" if byte is None else f" (byte 0x{byte:02x})")
        raise FormatError(path, line, problem, UTF8) from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        problem = "the compressed data ends early" if isinstance(err, EOFError) else str(err)
        raise FormatError(
            path, None, f"a truncated or damaged gzip file ({problem})", GZIP
        ) from None


def _first_undecodable(path: Path, gz: bool) -> tuple[int | None, int | None]:
    """The 1-based line and the value of the first byte that is not UTF-8 (error path only)."""
    try:
        with gzip.open(path, "rb") if gz else open(path, "rb") as raw:
            for number, line in enumerate(raw, start=1):  # b"\n" is never inside a UTF-8 character
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as err:
                    return number, line[err.start]
    except (OSError, EOFError, zlib.error):  # a damaged gzip file: the line is unknown
        pass
    return None, None


def read_text(path: str | Path) -> str:
    """The whole text of a file (see :func:`open_text`)."""
    with open_text(path) as handle:
        return handle.read()


def _blank(row: Sequence[str]) -> bool:
    """A line pandas skips (``skip_blank_lines``): nothing, or only spaces."""
    return len(row) == 0 or (len(row) == 1 and not row[0].strip())


def read_delimited(
    path: str | Path, text: str, sep: str, layout: str
) -> tuple[list[str], np.ndarray]:
    """Check a delimited table's field counts; its header and the line each data row starts on.

    Parameters
    ----------
    path
        The file (for messages).
    text : str
        Its text.
    sep : str
        The field separator.
    layout : str
        What the file should look like (for messages).

    Returns
    -------
    header : list of str
        The fields of the first line that is not blank.
    starts : numpy.ndarray
        For data row i (after the header, blank lines skipped, as pandas reads
        them), the 1-based line it starts on.

    Raises
    ------
    metaeval.FormatError
        For an empty file, and naming the first line whose field count is not
        the header's (quoted fields may hold the separator).
    """
    if '"' not in text:  # no quoting: every row is one line, counted with numpy
        fast = _unquoted_fields(text, sep)
        if fast is not None:
            return fast
    # strict: a quote left open or text after a closing quote is an error, not a guess
    reader = csv.reader(io.StringIO(text), delimiter=sep, strict=True)
    header: list[str] | None = None
    starts, start, end = [], 1, 0
    name = {",": "comma", "\t": "tab"}.get(sep, repr(sep))
    try:
        for row in reader:
            start, end = end + 1, reader.line_num
            if _blank(row):
                continue
            if header is None:
                header = row
                continue
            if len(row) != len(header):
                raise FormatError(
                    path,
                    start,
                    f"{len(row)} {name}-separated fields where the header has {len(header)}: "
                    f"{excerpt(_line(text, start))}",
                    f"{layout}, every row with as many fields as the header (quote a field "
                    "that holds the separator)",
                )
            starts.append(start)
    except csv.Error as err:
        problem = "a quoted field is not closed" if "end of data" in str(err) else str(err)
        raise FormatError(
            path,
            end + 1,
            f"not a {name}-separated table ({problem}): {excerpt(_line(text, end + 1))}",
            layout,
        ) from None
    if header is None:
        raise no_records(path, layout, bool(text))
    return header, np.asarray(starts, dtype=np.int64)


def _unquoted_fields(text: str, sep: str) -> tuple[list[str], np.ndarray] | None:
    """:func:`read_delimited`'s result for text without quotes, vectorized.

    Every line is one row: its field count is its separators plus one, and a
    line with no separator and nothing but spaces is blank. Returns None when
    some row's field count differs from the header's (or in doubt): the exact
    reader then finds and reports the line.
    """
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    ends = np.flatnonzero(data == ord("\n"))
    if len(data) and (len(ends) == 0 or ends[-1] != len(data) - 1):
        ends = np.r_[ends, len(data)]  # a last line without a line end
    firsts = np.r_[0, ends[:-1] + 1]
    seps = np.flatnonzero(data == ord(sep))
    fields = np.diff(np.searchsorted(seps, ends), prepend=0) + 1  # separators before each end
    single = np.flatnonzero(fields == 1)  # blank lines, or rows of one field
    if len(single) > 100_000:
        return None
    blank = np.zeros(len(ends), dtype=bool)
    raw = data.tobytes() if len(single) else b""
    for i in single:  # few: blank lines between rows
        blank[i] = not raw[firsts[i] : ends[i]].strip()
    rows = np.flatnonzero(~blank)
    if len(rows) == 0 or (fields[rows] != fields[rows[0]]).any():
        return None
    header = _line(text, int(rows[0]) + 1).rstrip("\r").split(sep)
    return header, rows[1:].astype(np.int64) + 1


def no_records(path: str | Path, layout: str, has_lines: bool) -> FormatError:
    """The error for a file without records: empty, or only blank lines."""
    problem = "the file has no records, only blank lines" if has_lines else "the file is empty"
    return FormatError(path, None, problem, layout)


def _line(text: str, number: int) -> str:
    """Line ``number`` (1-based) of ``text``, without its line end."""
    start = 0
    for _ in range(number - 1):
        start = text.find("\n", start) + 1
        if start == 0:
            return ""
    end = text.find("\n", start)
    return text[start : (end if end >= 0 else len(text))]


class RepeatedKey(ValueError):
    """A JSON object names a member twice (``json`` would keep the last one silently)."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for :func:`json.loads` that refuses a member named twice.

    >>> import json
    >>> json.loads('{"a": 1, "a": 2}', object_pairs_hook=unique_keys)
    Traceback (most recent call last):
    ...
    metaeval.io._text.RepeatedKey: key 'a' appears twice in one object
    """
    record = dict(pairs)
    if len(record) < len(pairs):
        names = [k for k, _ in pairs]
        repeated = next(k for k in names if names.count(k) > 1)
        raise RepeatedKey(f"key {excerpt(repeated)} appears twice in one object")
    return record


def iter_jsonl(
    path: str | Path, layout: str, problem: str = "not JSON"
) -> Iterator[tuple[int, dict]]:
    """``(line, record)`` for every JSON object of a JSON-lines file, blank lines skipped.

    The one loop of the JSON-lines readers. A line that is not JSON, names a
    member twice or holds something other than an object is a FormatError
    ``"{problem} (...)"`` naming the file and line; a file without records
    (empty, or only blank lines) is one too.
    """
    number, seen = 0, False
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):  # noqa: B007 - counted below
            if not line.strip():
                continue
            try:
                record = json.loads(line, object_pairs_hook=unique_keys)
            except ValueError as err:  # JSONDecodeError or a member given twice
                raise FormatError(path, number, f"{problem} ({err})", layout) from None
            if not isinstance(record, dict):
                raise FormatError(
                    path, number, f"{type(record).__name__} instead of an object", layout
                )
            seen = True
            yield number, record
    if not seen:
        raise no_records(path, layout, number > 0)


def check_primary_map(named: dict, have: dict) -> None:
    """The harness readers' checks of a ``primary={task: metric}`` map: every task one
    the logs have (a :class:`~metaeval.SchemaError` listing those they have), every
    metric a string (an :class:`~metaeval.OptionError`)."""
    unknown = [task for task in named if task not in have]
    if unknown:
        raise SchemaError(
            f"`primary` (--primary) names task(s) {', '.join(excerpt(t) for t in unknown)}, "
            f"which the logs do not have; they have {', '.join(str(t) for t in have)}."
        )
    bad = {task: metric for task, metric in named.items() if not isinstance(metric, str)}
    if bad:
        raise OptionError(
            "`primary` maps a task to the name of its metric (a string), not "
            + ", ".join(f"{t}={excerpt(m)}" for t, m in bad.items())
            + "."
        )

"""The `metaeval` command on malformed input files: a clear message or the right numbers.

Every input kind the command reads (tidy scores files, per-query CSVs, qrels and
runs as TREC files or JSON lines, a Ranger config.yaml and the per-sample files it
names) is written into tmp_path in its good form and then broken in one way at a
time. A broken file must end the command with exit code 1 (data) or 2 (usage)
and one short paragraph on stderr naming the file (and the line, where there is
one), never a traceback; a file that is only written differently (a byte-order
mark, CRLF line ends, quoted separators) must give the same numbers as the plain
file. Commands run in-process through ``metaeval_cli.main``; two cases also run
the installed console script.
"""

from __future__ import annotations

import errno
import gzip
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _helpers import parse_raw

import metaeval
from metaeval_cli import main

pytest.importorskip("ir_measures")

#: The longest stderr a failing command may print, not counting the paths it names.
MESSAGE_LIMIT = 500


# ------------------------------------------------------------------ good inputs
def _tidy_rows() -> list[tuple[str, str, str, str, float]]:
    rng = np.random.default_rng(7)
    rows = []
    for task in ("t1", "t2"):
        base = rng.uniform(0.2, 0.6, 5)
        for k, system in enumerate(("a", "b")):
            for i in range(5):
                value = round(float(base[i] + 0.1 * k + rng.normal(0, 0.05)), 6)
                rows.append((task, f"q{i + 1}", system, "m", value))
    return rows


TIDY = pd.DataFrame(_tidy_rows(), columns=["task", "query", "system", "metric", "value"])


def _delimited(sep: str) -> bytes:
    return TIDY.to_csv(index=False, sep=sep, lineterminator="\n").encode()


def _tidy_jsonl() -> bytes:
    return "".join(json.dumps(r) + "\n" for r in TIDY.to_dict("records")).encode()


PER_QUERY_A = b"query_id,ap,rr\nq1,0.5,1\nq2,0.25,0.5\nq3,0.75,1\nq4,0.1,0.2\n"
PER_QUERY_B = b"query_id,ap,rr\nq1,0.4,1\nq2,0.5,1\nq3,0.25,0.5\nq4,0.3,0.25\n"
QRELS = b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq2 0 d4 1\nq3 0 d5 1\n"
RUN = b"q1 Q0 d2 1 3.0 r\nq1 Q0 d1 2 2.0 r\nq2 Q0 d4 1 5.0 r\nq3 Q0 d5 1 1.0 r\n"


def _jsonl_pairs(trec: bytes, rel_type: str) -> bytes:
    lines = []
    for line in trec.decode().splitlines():
        f = line.split()
        q, d, s = (f[0], f[2], int(f[3])) if rel_type == "true" else (f[0], f[2], float(f[4]))
        lines.append(json.dumps({"query_id": q, "doc_id": d, "score": s}))
    return ("\n".join(lines) + "\n").encode()


QRELS_JSONL = _jsonl_pairs(QRELS, "true")
RUN_JSONL = _jsonl_pairs(RUN, "pred")
SAMPLES = {
    ("a", "t1"): "1\n0\n1\n1\n0\n1\n",
    ("a", "t2"): "0\n1\n1\n0\n1\n0\n",
    ("b", "t1"): "1\n1\n1\n0\n1\n1\n",
    ("b", "t2"): "1\n1\n0\n1\n1\n1\n",
}
CONFIG = (
    b"# a Ranger classification config\n"
    b"eval_metrics:\n"
    b"  a:\n"
    b"    t1: ./a_t1.txt\n"
    b"    t2: ./a_t2.txt\n"
    b"  b:\n"
    b"    t1: ./b_t1.txt\n"
    b"    t2: ./b_t2.txt\n"
    b"display_names:\n"
    b"  t1: Task one\n"
)


@dataclass(frozen=True)
class Kind:
    """One input file the command reads: its good content and the command around it."""

    name: str  # the file's name in tmp_path
    good: bytes
    argv: Callable[[Path, Path], list[str]]  # (folder, the file) -> the command
    line3: bool = True  # line 3 holds data a latin-1 byte can go into

    def setup(self, folder: Path) -> None:
        """The other files the command needs."""
        (folder / "a.csv").write_bytes(PER_QUERY_A)
        (folder / "good.qrels").write_bytes(QRELS)
        (folder / "good.run").write_bytes(RUN)
        for (system, task), text in SAMPLES.items():
            (folder / f"{system}_{task}.txt").write_text(text)
        (folder / "config.yaml").write_bytes(CONFIG)


def _meta(folder: Path, path: Path) -> list[str]:
    return ["meta", str(path), "--control", "a", "--effect", "md", "--print-mode", "raw"]


def _ranger(folder: Path, path: Path) -> list[str]:
    return [
        "meta",
        str(folder / "config.yaml"),
        "--control",
        "a",
        "--ranger-metric",
        "acc",
        "--effect",
        "md",
        "--print-mode",
        "raw",
    ]


def _evaluate(qrels: str | None, run: str | None) -> Callable[[Path, Path], list[str]]:
    def argv(folder: Path, path: Path) -> list[str]:
        return [
            "evaluate",
            "--qrels",
            str(path if qrels is None else folder / qrels),
            "--run",
            f"bm25={path if run is None else folder / run}",
            "--measures",
            "P@1",
            "RR",
            "nDCG@3",
            "--print-mode",
            "raw",
        ]

    return argv


KINDS = {
    "tidy.csv": Kind("scores.csv", _delimited(","), _meta),
    "tidy.tsv": Kind("scores.tsv", _delimited("\t"), _meta),
    "tidy.jsonl": Kind("scores.jsonl", _tidy_jsonl(), _meta),
    "per-query.csv": Kind(
        "b.csv",
        PER_QUERY_B,
        lambda folder, path: [
            "compare",
            str(folder / "a.csv"),
            str(path),
            "--seed",
            "1",
            "--n-resamples",
            "20",
            "--print-mode",
            "raw",
        ],
    ),
    "qrels.trec": Kind("qrels.txt", QRELS, _evaluate(None, "good.run")),
    "qrels.jsonl": Kind("true.jsonl", QRELS_JSONL, _evaluate(None, "good.run")),
    "run.trec": Kind("bm25.run", RUN, _evaluate("good.qrels", None)),
    "run.jsonl": Kind("pred.jsonl", RUN_JSONL, _evaluate("good.qrels", None)),
    "ranger.yaml": Kind("config.yaml", CONFIG, _ranger),
    "ranger.sample": Kind("b_t1.txt", SAMPLES["b", "t1"].encode(), _ranger),
}


# ------------------------------------------------------------------- running
def run_cli(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_clean_failure(code: int, err: str, expected_code: int, *paths: Path) -> None:
    """Exit code, one short message naming the paths, no traceback."""
    assert code == expected_code, err
    assert err.startswith("metaeval ") and ": error: " in err.splitlines()[0], err
    assert "Traceback" not in err and 'File "' not in err, err
    for path in paths:
        assert str(path) in err, (str(path), err)
    rest = err
    for path in paths:
        rest = rest.replace(str(path), "")
    assert len(rest) <= MESSAGE_LIMIT, (len(rest), err)
    assert "\x1b" not in err and "\x00" not in err  # file bytes reach the terminal escaped


def _normalised(text: str, folder: Path) -> str:
    """The output with the folder left out: whole, or as the command's tables shorten it."""
    return text.replace(str(folder), "<dir>").replace(f"…/{folder.name}/", "<dir>/")


def _with_line3(good: bytes, byte: bytes) -> bytes:
    """``good`` with ``byte`` put after the first character of line 3."""
    lines = good.split(b"\n")
    lines[2] = lines[2][:1] + byte + lines[2][1:]
    return b"\n".join(lines)


# Cases every kind gets: (name, content from the good bytes or None, expected code, line, text).
# content None: the case builds the path itself (a folder, a missing file).
GENERIC = {
    "empty": (lambda good: b"", 1, None, "empty"),
    "blank-lines-only": (lambda good: b"\n  \n\n", 1, None, None),
    "binary-garbage": (lambda good: bytes(range(256)) * 8, 1, None, None),
    "control-characters": (lambda good: b"\x00\x1b[31mred\x07\x00" * 50 + b"\n", 1, None, None),
    "latin-1-byte": (lambda good: _with_line3(good, b"\xe9"), 1, 3, "not UTF-8 text (byte 0xe9)"),
    "truncated-gzip": (lambda good: gzip.compress(good * 50)[:-20], 1, None, "truncated"),
    "2-MB-single-line": (lambda good: b"x" * 2_000_000, 1, None, None),
    "directory": (None, 1, None, "is a directory"),
    "missing": (None, 1, None, None),
}
SAME_NUMBERS = {  # (gzip-compressed files: tests/test_io_tidy.py and tests/test_ir_io.py)
    "byte-order-mark": lambda good: b"\xef\xbb\xbf" + good,
    "crlf-line-ends": lambda good: good.replace(b"\n", b"\r\n"),
    "both": lambda good: b"\xef\xbb\xbf" + good.replace(b"\n", b"\r\n"),
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path


@pytest.mark.parametrize("case", list(GENERIC))
@pytest.mark.parametrize("kind", list(KINDS))
def test_broken_file_gives_a_short_error_naming_it(capsys, folder, kind, case):
    spec = KINDS[kind]
    spec.setup(folder)
    build, expected_code, line, text = GENERIC[case]
    path = folder / spec.name
    if case == "directory":
        path.unlink(missing_ok=True)
        path.mkdir()
    elif case == "missing":
        path.unlink(missing_ok=True)
    else:
        path.write_bytes(build(spec.good))
    code, out, err = run_cli(capsys, spec.argv(folder, path))
    # a missing per-sample file is named by the config, which the message names with the entry
    named = folder / "config.yaml" if (kind, case) == ("ranger.sample", "missing") else path
    assert_clean_failure(code, err, expected_code, named)
    if line is not None:
        assert f"{path}, line {line}: " in err, err
    if text is not None:
        assert text in err, err
    assert out == ""  # nothing was printed before the error


_PLAIN_OUTPUT: dict[str, str] = {}  # kind -> the command's output on the good file


def _output_of(capsys, folder: Path, spec: Kind, content: bytes) -> str:
    folder.mkdir()
    spec.setup(folder)
    (folder / spec.name).write_bytes(content)
    code, out, err = run_cli(capsys, spec.argv(folder, folder / spec.name))
    assert code == 0, err
    assert "Traceback" not in err
    return _normalised(out, folder)


@pytest.mark.parametrize("case", list(SAME_NUMBERS))
@pytest.mark.parametrize("kind", list(KINDS))
def test_bom_and_crlf_give_the_same_numbers(capsys, tmp_path, kind, case):
    spec = KINDS[kind]
    if kind not in _PLAIN_OUTPUT:
        _PLAIN_OUTPUT[kind] = _output_of(capsys, tmp_path / "plain", spec, spec.good)
    variant = _output_of(capsys, tmp_path / case, spec, SAME_NUMBERS[case](spec.good))
    assert variant == _PLAIN_OUTPUT[kind]


# ------------------------------------------------------- the plain files' numbers
def test_the_good_files_give_the_library_numbers(capsys, tmp_path):
    KINDS["tidy.csv"].setup(tmp_path)
    expected = metaeval.analyze(TIDY, control="a", effect="md")
    for kind in ("tidy.csv", "tidy.tsv", "tidy.jsonl"):
        spec = KINDS[kind]
        (tmp_path / spec.name).write_bytes(spec.good)
        code, out, err = run_cli(capsys, spec.argv(tmp_path, tmp_path / spec.name))
        assert code == 0, err
        got = parse_raw(out)["Effects per task and summary: m"]
        np.testing.assert_allclose(got["effect"], expected["effect"], rtol=1e-12, err_msg=kind)
    code, out, err = run_cli(capsys, KINDS["run.trec"].argv(tmp_path, tmp_path / "good.run"))
    assert code == 0, err
    means = parse_raw(out)["Means over the queries (default)"].set_index("system")
    # by hand: q1 ranks d2 (0) then d1 (1); q2 and q3 have a relevant document first
    assert means.loc["bm25", "P@1"] == pytest.approx(2 / 3, rel=1e-15)
    assert means.loc["bm25", "RR"] == pytest.approx((0.5 + 1 + 1) / 3, rel=1e-15)


@pytest.mark.parametrize("kind", ["tidy.csv", "tidy.tsv", "per-query.csv"])
def test_quoted_separators_are_read_as_part_of_the_field(capsys, tmp_path, kind):
    spec = KINDS[kind]
    spec.setup(tmp_path)
    sep = "\t" if kind == "tidy.tsv" else ","
    if kind == "per-query.csv":  # a query id with a comma, in both systems' files
        quoted = spec.good.replace(b"\nq2,", b'\n"q2,b",')  # sorts as q2 did: same resamples
        (tmp_path / "a.csv").write_bytes(PER_QUERY_A.replace(b"\nq2,", b'\n"q2,b",'))
        (tmp_path / spec.name).write_bytes(quoted)
        code, out, err = run_cli(capsys, spec.argv(tmp_path, tmp_path / spec.name))
        assert code == 0, err
        plain = tmp_path / "plain"
        plain.mkdir()
        spec.setup(plain)
        (plain / spec.name).write_bytes(spec.good)
        _, reference, _ = run_cli(capsys, spec.argv(plain, plain / spec.name))
        assert _normalised(out, tmp_path) == _normalised(reference, plain)
        return
    table = TIDY.assign(task=TIDY["task"].map({"t1": f"one{sep}1", "t2": f"two{sep}2"}))
    (tmp_path / spec.name).write_text(table.to_csv(index=False, sep=sep, lineterminator="\n"))
    assert f'"one{sep}1"' in (tmp_path / spec.name).read_text()
    code, out, err = run_cli(capsys, spec.argv(tmp_path, tmp_path / spec.name))
    assert code == 0, err
    got = parse_raw(out)["Effects per task and summary: m"]
    expected = metaeval.analyze(table, control="a", effect="md")
    assert expected["task"].tolist() == [f"one{sep}1", f"two{sep}2", "summary"]
    # raw output prints a tab inside a value as a space
    assert got["task"].tolist() == [t.replace("\t", " ") for t in expected["task"]]
    np.testing.assert_allclose(got["effect"], expected["effect"], rtol=1e-12)


# ------------------------------------------------------ layout errors of each kind
def _lines(good: bytes) -> list[bytes]:
    return good.split(b"\n")


def _edit_line(good: bytes, number: int, new: bytes) -> bytes:
    lines = _lines(good)
    lines[number - 1] = new
    return b"\n".join(lines)


def _append(good: bytes, line: bytes) -> bytes:
    return good + line + b"\n"


# kind -> {case: (content, expected code, line or None, text the message holds)}
LAYOUT = {
    "tidy.csv": {
        "header-only": (_lines(KINDS["tidy.csv"].good)[0] + b"\n", 1, None, "no data rows"),
        "one-field-more": (
            _edit_line(KINDS["tidy.csv"].good, 3, b"t1,q2,a,m,0.5,0.7"),
            1,
            3,
            "6 comma-separated fields where the header has 5",
        ),
        "one-field-less": (
            _edit_line(KINDS["tidy.csv"].good, 3, b"t1,q2,a,0.5"),
            1,
            3,
            "4 comma-separated fields",
        ),
        "every-row-one-field-more": (  # pandas would take the first column as the index
            b"task,query,system,metric,value\n"
            + b"".join(b"x," + line + b"\n" for line in _lines(KINDS["tidy.csv"].good)[1:-1]),
            1,
            2,
            "6 comma-separated fields",
        ),
        "missing-column": (
            KINDS["tidy.csv"].good.replace(b",metric", b",metrics", 1),
            1,
            1,
            "['metric'] are missing",
        ),
        "column-twice": (
            KINDS["tidy.csv"]
            .good.replace(b"value\n", b"value,value\n", 1)
            .replace(b"\n", b",0\n")
            .replace(b"value,0\n", b"value\n"),
            1,
            1,
            "names column(s) ['value'] twice",
        ),
        "repeated-key": (
            _append(KINDS["tidy.csv"].good, _lines(KINDS["tidy.csv"].good)[1]),
            1,
            22,
            "('t1', 'q1', 'a', 'm') appears twice (first on line 2)",
        ),
        "not-a-number": (
            _edit_line(KINDS["tidy.csv"].good, 4, b"t1,q3,a,m,high"),
            1,
            4,
            "value 'high' is not a number",
        ),
        "unclosed-quote": (
            _append(KINDS["tidy.csv"].good, b't9,q1,a,m,"0.5'),
            1,
            22,
            "a quoted field is not closed",
        ),
        "text-after-a-quote": (
            _edit_line(KINDS["tidy.csv"].good, 3, b'"t1"x,q2,a,m,0.5'),
            1,
            3,
            "not a comma-separated table",
        ),
    },
    "tidy.tsv": {
        "header-only": (_lines(KINDS["tidy.tsv"].good)[0] + b"\n", 1, None, "no data rows"),
        "one-field-more": (
            _edit_line(KINDS["tidy.tsv"].good, 3, b"t1\tq2\ta\tm\t0.5\tx"),
            1,
            3,
            "6 tab-separated fields where the header has 5",
        ),
        "commas-instead-of-tabs": (KINDS["tidy.csv"].good, 1, 1, "are missing"),
    },
    "tidy.jsonl": {
        "not-json": (_edit_line(KINDS["tidy.jsonl"].good, 3, b"{oops"), 1, 3, "not JSON"),
        "not-an-object": (
            _edit_line(KINDS["tidy.jsonl"].good, 2, b"[1, 2]"),
            1,
            2,
            "list instead of an object",
        ),
        "member-twice": (
            _edit_line(
                KINDS["tidy.jsonl"].good,
                2,
                b'{"task": "t1", "query": "q2", "system": "a", "metric": "m", '
                b'"value": 0.1, "value": 0.9}',
            ),
            1,
            2,
            "key 'value' appears twice",
        ),
        "missing-key": (
            _edit_line(
                KINDS["tidy.jsonl"].good,
                2,
                b'{"task": "t1", "query": "q2", "system": "a", "value": 0.1}',
            ),
            1,
            2,
            "missing values",
        ),
        "repeated-key": (
            _append(KINDS["tidy.jsonl"].good, _lines(KINDS["tidy.jsonl"].good)[0]),
            1,
            21,
            "appears twice (first on line 1)",
        ),
    },
    "per-query.csv": {
        "header-only": (b"query_id,ap,rr\n", 1, None, "no data rows"),
        "one-field-more": (
            _edit_line(PER_QUERY_B, 3, b"q2,0.5,1,7"),
            1,
            3,
            "4 comma-separated fields where the header has 3",
        ),
        "every-row-one-field-more": (
            b"query_id,ap,rr\n"
            + b"".join(b"x," + line + b"\n" for line in _lines(PER_QUERY_B)[1:-1]),
            1,
            2,
            "4 comma-separated fields where the header has 3",
        ),
        "no-query-id": (
            PER_QUERY_B.replace(b"query_id", b"qid"),
            1,
            1,
            "the header ['qid', 'ap', 'rr'] has no query_id column",
        ),
        "no-metric": (b"query_id\nq1\nq2\n", 1, 1, "has no metric column"),
        "column-twice": (
            PER_QUERY_B.replace(b"query_id,ap,rr", b"query_id,ap,ap"),
            1,
            1,
            "has a column named twice",
        ),
        "repeated-query": (
            _edit_line(PER_QUERY_B, 5, b"q2,0.3,0.25"),
            1,
            5,
            "query_id 'q2' appears twice (first on line 3)",
        ),
        "not-a-number": (_edit_line(PER_QUERY_B, 4, b"q3,,0.5"), 1, 4, "ap='' is not a number"),
        "tidy-file-alone": (KINDS["tidy.csv"].good, 1, 1, "has no query_id column"),
    },
    "qrels.trec": {
        "five-columns": (
            _edit_line(QRELS, 3, b"q2 0 d3 2 x"),
            1,
            3,
            "wrong number of columns (5, not 4)",
        ),
        "five-columns-everywhere": (
            QRELS.replace(b"\n", b" 9\n"),
            1,
            1,
            "wrong number of columns (5, not 4)",
        ),
        "three-columns": (_edit_line(QRELS, 3, b"q2 0 d3"), 1, 3, "too few columns (3, not 4)"),
        "relevance-not-integer": (_edit_line(QRELS, 3, b"q2 0 d3 1.5"), 1, 3, "not an integer"),
        "document-twice": (
            _append(QRELS, b"q2 0 d3 0"),
            1,
            6,
            "document 'd3' of query 'q2' appears twice (first on line 3)",
        ),
    },
    "qrels.jsonl": {
        "document-twice": (
            _append(QRELS_JSONL, _lines(QRELS_JSONL)[2]),
            1,
            6,
            "document 'd3' of query 'q2' appears twice (first on line 3)",
        ),
        "missing-key": (
            _edit_line(QRELS_JSONL, 3, b'{"query_id": "q2", "score": 1}'),
            1,
            3,
            "bad record ('doc_id')",
        ),
        "member-twice": (
            _edit_line(
                QRELS_JSONL, 3, b'{"query_id": "q2", "doc_id": "d3", "score": 1, "score": 0}'
            ),
            1,
            3,
            "appears twice",
        ),
        "relevance-not-integer": (
            _edit_line(QRELS_JSONL, 3, b'{"query_id": "q2", "doc_id": "d3", "score": 0.5}'),
            1,
            3,
            "relevance 0.5 is not an integer",
        ),
        "id-not-a-string": (
            _edit_line(QRELS_JSONL, 3, b'{"query_id": ["q2"], "doc_id": "d3", "score": 1}'),
            1,
            3,
            "query_id ['q2'] is not a string",
        ),
    },
    "run.trec": {
        "three-columns": (_edit_line(RUN, 1, b"q1 d2 1"), 1, 1, "3 columns, not 6 or 4"),
        "seven-columns": (
            _edit_line(RUN, 3, b"q2 Q0 d4 1 5.0 r extra"),
            1,
            3,
            "wrong number of columns (7, not 6)",
        ),
        "score-not-a-number": (
            _edit_line(RUN, 3, b"q2 Q0 d4 1 high r"),
            1,
            3,
            "score 'high' is not a number",
        ),
        "document-twice": (
            _append(RUN, b"q1 Q0 d2 3 0.5 r"),
            1,
            5,
            "document 'd2' of query 'q1' appears twice (first on line 1)",
        ),
    },
    "run.jsonl": {
        "document-twice": (
            _append(RUN_JSONL, _lines(RUN_JSONL)[0]),
            1,
            5,
            "appears twice (first on line 1)",
        ),
        "score-not-a-number": (
            _edit_line(RUN_JSONL, 2, b'{"query_id": "q1", "doc_id": "d1", "score": "2"}'),
            1,
            2,
            "score '2' is not a number",
        ),
        "not-json": (_edit_line(RUN_JSONL, 2, b"q1 Q0 d1 2 2.0 r"), 1, 2, "bad record"),
    },
    "ranger.yaml": {
        "not-yaml": (b"eval_metrics:\n  a: [1, 2\n", 1, None, "not YAML"),
        "key-twice": (
            CONFIG.replace(b"  b:\n", b"  a:\n"),
            1,
            6,
            "the key 'a' appears twice in one mapping (first on line 3)",
        ),
        "top-level-key-twice": (
            CONFIG + b"display_names: {t2: Two}\n",
            1,
            11,
            "the key 'display_names' appears twice in one mapping (first on line 9)",
        ),
        "control-character": (
            CONFIG.replace(b"Task one", b"Task\x07one"),
            1,
            10,
            "not YAML (the character '\\x07' is not allowed)",
        ),
        "list-instead-of-mapping": (
            b"eval_metrics:\n  - a\n  - b\n",
            1,
            2,
            "eval_metrics: found list ['a', 'b'] where a mapping",
        ),
        "systems-list": (
            b"eval_metrics: {a: [1, 2]}\n",
            1,
            1,
            "eval_metrics.a: found list [1, 2] where a mapping {task: file}",
        ),
        "entry-is-a-list": (
            CONFIG.replace(b"t2: ./a_t2.txt", b"t2: [./a_t2.txt]"),
            1,
            5,
            "eval_metrics.a.t2: found list ['./a_t2.txt'] where a file path",
        ),
        "entry-is-empty": (
            CONFIG.replace(b"t2: ./a_t2.txt", b"t2:"),
            1,
            5,
            "eval_metrics.a.t2: found NoneType None where a file path",
        ),
        "no-systems": (b"eval_metrics: {}\n", 1, 1, "eval_metrics: an empty mapping"),
        "boolean-name": (
            CONFIG.replace(b"  b:\n", b"  yes:\n"),
            1,
            6,
            "the key bool True is not a name",
        ),
        "display-name-list": (
            CONFIG.replace(b"t1: Task one", b"t1: [Task, one]"),
            1,
            10,
            "display_names.t1: found list",
        ),
        "both-layouts": (
            CONFIG + b"qrels: {t1: x}\navailable_rankings: {a: {t1: y}}\n",
            1,
            None,
            "(both layouts)",
        ),
        "retrieval-without-rankings": (b"qrels:\n  t1: ./x\n", 1, None, "(neither layout)"),
        "rankings-not-by-task": (
            b"qrels: {t1: ./a_t1.txt}\navailable_rankings: {a: ./a_t1.txt}\n",
            1,
            2,
            "available_rankings.a: found str",
        ),
        "scalar": (
            b"just a sentence\n",
            1,
            None,
            "found str 'just a sentence' instead of a mapping",
        ),
    },
    "ranger.sample": {
        "not-a-number": (b"1\n0\nmaybe\n", 1, 3, "'maybe' is not a number"),
        "infinite": (b"1\ninf\n", 1, 2, "'inf' is not finite"),
    },
}


@pytest.mark.parametrize(
    ("kind", "case"), [(kind, case) for kind, cases in LAYOUT.items() for case in cases]
)
def test_layout_errors_name_file_and_line(capsys, tmp_path, kind, case):
    spec = KINDS[kind]
    spec.setup(tmp_path)
    content, expected_code, line, text = LAYOUT[kind][case]
    path = tmp_path / spec.name
    path.write_bytes(content)
    code, out, err = run_cli(capsys, spec.argv(tmp_path, path))
    assert_clean_failure(code, err, expected_code, path)
    if line is not None:
        assert f"{path}, line {line}: " in err, err
    assert text in err, err
    assert out == ""


# ------------------------------------------------------------ findings in detail
def test_a_config_naming_any_file_quotes_only_an_excerpt_of_it(capsys, tmp_path):
    secret = tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    first = "root:x:0:0:" + "A" * 200
    secret.write_text(first + "\nsecond-line-with-a-password\n")
    KINDS["ranger.yaml"].setup(tmp_path)
    (tmp_path / "config.yaml").write_bytes(CONFIG.replace(b"./b_t1.txt", str(secret).encode()))
    code, _, err = run_cli(capsys, _ranger(tmp_path, tmp_path / "config.yaml"))
    assert_clean_failure(code, err, 1, secret)
    assert f"{secret}, line 1: 'root:x:0:0:AAA" in err
    assert "A" * 80 not in err and "password" not in err


def test_a_huge_line_in_a_named_file_gives_a_short_message(capsys, tmp_path):
    KINDS["ranger.yaml"].setup(tmp_path)
    (tmp_path / "b_t1.txt").write_text("1\n" + "7" * 2_000_000 + "x\n")
    code, _, err = run_cli(capsys, _ranger(tmp_path, tmp_path / "config.yaml"))
    assert_clean_failure(code, err, 1, tmp_path / "b_t1.txt")
    assert f"{tmp_path / 'b_t1.txt'}, line 2: '777" in err


def test_qrels_of_another_collection_are_an_error_naming_both_sides(capsys, tmp_path):
    KINDS["run.trec"].setup(tmp_path)
    (tmp_path / "other.qrels").write_bytes(QRELS.replace(b"q", b""))  # ids 1, 2, 3
    code, out, err = run_cli(capsys, _evaluate("other.qrels", "good.run")(tmp_path, tmp_path))
    assert_clean_failure(code, err, 1)
    assert "Task 'default': the run of 'bm25' shares no query with the qrels" in err
    assert "Run queries: ['q1', 'q2', 'q3']; judged queries: ['1', '2', '3']" in err
    assert out == ""


def test_unjudged_queries_are_counted_in_a_warning(capsys, tmp_path):
    KINDS["run.trec"].setup(tmp_path)
    (tmp_path / "bm25.run").write_bytes(RUN + b"q7 Q0 d1 1 1.0 r\nq8 Q0 d1 1 1.0 r\n")
    code, out, err = run_cli(capsys, _evaluate("good.qrels", None)(tmp_path, tmp_path / "bm25.run"))
    assert code == 0, err
    assert (
        "metaeval: warning: Queries a run returned that the qrels do not judge were left out" in err
    )
    assert "task='default', system='bm25', queries=2" in err
    _, reference, _ = run_cli(capsys, _evaluate("good.qrels", "good.run")(tmp_path, tmp_path))
    means = "Means over the queries (default)"
    pd.testing.assert_frame_equal(parse_raw(out)[means], parse_raw(reference)[means])  # q7, q8 out


def test_qrels_without_a_relevant_document_warn(capsys, tmp_path):
    KINDS["run.trec"].setup(tmp_path)
    (tmp_path / "zero.qrels").write_bytes(b"q1 0 d1 0\nq2 0 d4 0\n")
    code, out, err = run_cli(capsys, _evaluate("zero.qrels", "good.run")(tmp_path, tmp_path))
    assert code == 0, err
    assert "metaeval: warning: The qrels of task 'default' judge no document relevant" in err
    means = parse_raw(out)["Means over the queries (default)"]
    assert means[["P@1", "RR", "nDCG@3"]].to_numpy().tolist() == [[0.0, 0.0, 0.0]]


def test_convert_refuses_what_evaluate_would_refuse(capsys, tmp_path):
    (tmp_path / "dup.qrels").write_bytes(QRELS + b"q1 0 d1 0\n")
    code, out, err = run_cli(
        capsys,
        [
            "convert",
            str(tmp_path / "dup.qrels"),
            str(tmp_path / "true.jsonl"),
            "--rel-type",
            "true",
        ],
    )
    assert_clean_failure(code, err, 1, tmp_path / "dup.qrels")
    assert "line 6: document 'd1' of query 'q1' appears twice (first on line 1)" in err
    assert not (tmp_path / "true.jsonl").exists()
    (tmp_path / "good.qrels").write_bytes(QRELS)
    code, _, err = run_cli(
        capsys,
        [
            "convert",
            str(tmp_path / "good.qrels"),
            str(tmp_path / "true.jsonl"),
            "--rel-type",
            "true",
        ],
    )
    assert code == 0, err
    (tmp_path / "good.run").write_bytes(RUN)
    code, via_jsonl, err = run_cli(capsys, _evaluate("true.jsonl", "good.run")(tmp_path, tmp_path))
    assert code == 0, err
    _, via_trec, _ = run_cli(capsys, _evaluate("good.qrels", "good.run")(tmp_path, tmp_path))
    assert via_jsonl.replace("true.jsonl", "good.qrels") == via_trec


def test_an_option_given_twice_is_a_usage_error(capsys, tmp_path):
    KINDS["run.trec"].setup(tmp_path)
    argv = _evaluate("good.qrels", "good.run")(tmp_path, tmp_path)
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--output", str(tmp_path / "a.csv"), "--output", str(tmp_path / "b.csv")])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "argument --output: given twice" in err and "b.csv" in err
    assert "Traceback" not in err


OUTPUTS = [
    ("evaluate", "--output"),
    ("compare", "--tables"),
    ("meta", "--plot"),
    ("meta", "--latex"),
    ("meta", "--tables"),
    ("convert", "OUT"),
]


@pytest.mark.parametrize(
    ("command", "option", "problem"),
    [
        (*output, problem)
        for problem in ("missing-folder", "a-folder", "an-input")
        for output in OUTPUTS
        # convert refuses IN and OUT of the same kind (by their names) before it looks further
        if (output[0], problem) != ("convert", "an-input")
    ],
)
def test_output_paths_are_checked_before_any_work(capsys, tmp_path, command, option, problem):
    KINDS["tidy.csv"].setup(tmp_path)
    (tmp_path / "scores.csv").write_bytes(KINDS["tidy.csv"].good)
    argv, inputs = {
        "evaluate": (_evaluate("good.qrels", "good.run")(tmp_path, tmp_path), "good.run"),
        "compare": (
            KINDS["per-query.csv"].argv(tmp_path, tmp_path / "a.csv")[:2]
            + [str(tmp_path / "a.csv"), "--names", "a", "b"],
            "a.csv",
        ),
        "meta": (_meta(tmp_path, tmp_path / "scores.csv"), "scores.csv"),
        "convert": (["convert", str(tmp_path / "good.qrels")], "good.qrels"),
    }[command]
    suffix = {"--plot": ".png", "--latex": ".tex", "--tables": ".tex", "OUT": ".jsonl"}
    name = "out" + suffix.get(option, ".csv")
    target = {
        "missing-folder": tmp_path / "missing" / name,
        "a-folder": tmp_path / name,
        "an-input": tmp_path / inputs,
    }[problem]
    if problem == "a-folder":
        target.mkdir()
    if option == "OUT":
        argv = [*argv, str(target), "--rel-type", "true"]
    else:
        argv = [*argv, option, str(target)]
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out, err = run_cli(capsys, argv)
    assert_clean_failure(code, err, 2)
    assert f"{option} {target}" in err, err
    assert {
        "missing-folder": "does not exist",
        "a-folder": "is a folder",
        "an-input": "would be overwritten",
    }[problem] in err
    assert out == "" and sorted(p.name for p in tmp_path.iterdir()) == before  # no work done


def test_output_suffixes_are_checked_before_any_work(capsys, tmp_path):
    KINDS["tidy.csv"].setup(tmp_path)
    (tmp_path / "scores.csv").write_bytes(KINDS["tidy.csv"].good)
    for argv, message in [
        (
            [
                *_evaluate("good.qrels", "good.run")(tmp_path, tmp_path),
                "--output",
                str(tmp_path / "scores.xlsx"),
            ],
            "--output",
        ),
        ([*_meta(tmp_path, tmp_path / "scores.csv"), "--plot", str(tmp_path / "f.docx")], "--plot"),
        (
            [*_meta(tmp_path, tmp_path / "scores.csv"), "--tables", str(tmp_path / "t.docx")],
            "--tables",
        ),
    ]:
        code, out, err = run_cli(capsys, argv)
        assert_clean_failure(code, err, 2)
        assert message in err and out == ""


def test_demo_output_that_is_a_file_is_a_usage_error(capsys, tmp_path):
    (tmp_path / "taken").write_text("")
    code, out, err = run_cli(capsys, ["demo", "--output", str(tmp_path / "taken")])
    assert_clean_failure(code, err, 2, tmp_path / "taken")
    assert out == ""


def test_an_os_error_while_writing_is_one_line_with_exit_1(capsys, tmp_path, monkeypatch):
    KINDS["tidy.csv"].setup(tmp_path)
    (tmp_path / "scores.csv").write_bytes(KINDS["tidy.csv"].good)
    target = tmp_path / "table.tex"

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_text", full)
    code, _, err = run_cli(
        capsys, [*_meta(tmp_path, tmp_path / "scores.csv"), "--latex", str(target)]
    )
    assert_clean_failure(code, err, 1, target)
    assert err == f"metaeval meta: error: {target}: No space left on device\n"


def test_a_ranger_classification_config_without_metric_names_the_option(capsys, tmp_path):
    KINDS["ranger.yaml"].setup(tmp_path)
    argv = [a for a in _ranger(tmp_path, tmp_path) if a not in ("--ranger-metric", "acc")]
    code, _, err = run_cli(capsys, argv)
    assert_clean_failure(code, err, 2, tmp_path / "config.yaml")
    assert "pass --ranger-metric NAME" in err


# ------------------------------------------------------- the installed command
def _command() -> list[str]:
    script = shutil.which("metaeval", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "metaeval"]


def test_console_script_prints_no_traceback(tmp_path):
    KINDS["tidy.csv"].setup(tmp_path)
    scores = tmp_path / "scores.csv"
    scores.write_bytes(_with_line3(KINDS["tidy.csv"].good, b"\xe9"))
    done = subprocess.run(
        [*_command(), *_meta(tmp_path, scores)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 1, done.stderr
    expected = f"metaeval meta: error: {scores}, line 3: not UTF-8 text (byte 0xe9). Expected UTF-8"
    assert done.stderr.startswith(expected), done.stderr
    assert done.stderr.count("\n") == 1 and done.stdout == ""


def test_one_per_query_csv_alone_is_a_usage_error_but_a_broken_tidy_file_is_data(capsys, tmp_path):
    (tmp_path / "b.csv").write_bytes(PER_QUERY_B)
    code, _, err = run_cli(capsys, ["compare", str(tmp_path / "b.csv")])
    assert_clean_failure(code, err, 2, tmp_path / "b.csv")
    assert "looks like one system's per-query CSV" in err
    tidy = tmp_path / "scores.csv"  # the offending line mentions query_id: still a data error
    tidy.write_bytes(_append(KINDS["tidy.csv"].good, b"t1,query_id,a,m,0.5,extra"))
    code, _, err = run_cli(capsys, ["compare", str(tidy)])
    assert_clean_failure(code, err, 1, tidy)
    assert f"{tidy}, line 22: 6 comma-separated fields" in err

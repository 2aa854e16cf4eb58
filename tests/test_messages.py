"""Messages show values as a user writes them (issue 39, item 22): ``0.5``, not
``np.float64(0.5)``, which numpy 2's ``repr`` gives for every value read out of a table.

A rule over the source, written once: a value formatted into a message with ``!r``,
``repr()``, ``list()``, ``tuple()`` or ``sorted()`` goes through :func:`metaeval.errors.excerpt`
or :func:`metaeval.errors.quote_list` (which write numpy scalars as Python's) unless it is
a plain name (an option as the user passed it) or listed below with the reason it holds
Python objects; and the messages themselves, triggered with numeric keys and values."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import MetaEvalError, OptionError, SchemaError
from metaeval.errors import check_alpha, check_option, check_resamples, resolve_seed

SRC = Path(metaeval.__file__).parents[1]
NUMPY_REPR = re.compile(r"\bnp\.[a-z_]+\d*\(")

#: (file under src/, the formatted expression): values that are Python objects, not read
#: out of a numpy array or a pandas row
ALLOWED = {
    ("metaeval/_aliases.py", "self.__name__"): "a module's name",
    ("metaeval/_results.py", "self.table"): "the repr of a result (a DataFrame), no message",
    ("metaeval/errors.py", "repr(value)"): "excerpt() itself, after converting numpy scalars",
    ("metaeval/schema/_failures.py", "column.name"): "a pandera Column's name (str)",
    ("metaeval/io/inspect.py", "evaluation.status"): "inspect_ai's EvalLog.status (str)",
    ("metaeval/io/inspect.py", "sample.id"): "inspect_ai's EvalSample.id (int or str)",
    ("metaeval/io/helm.py", "label['name']"): "a name read from HELM's JSON (str)",
    ("metaeval/io/_text.py", "repr(sep)"): "the separator option (str)",
    ("metaeval/datasets/_ranger.py", "repr(f)"): "a file name from Ranger's config (str)",
    ("metaeval/design/queries.py", "given[k]"): "options as the user passed them (a dict)",
    ("metaeval/measures/lists.py", "repr(gain)"): "the gain option, a name or a callable",
    ("metaeval/plot/_figure.py", "os.fspath(path)"): "a path (str)",
    ("metaeval/report/_report.py", "v"): "an HTML data attribute from .tolist(), no message",
    ("metaeval_cli/_console.py", "repr(float(value))"): "full precision output, not a message",
    ("metaeval_cli/evaluate.py", "row['input']"): "a run's path from to_dict('records') (str)",
    ("metaeval_cli/evaluate.py", "repr(row['task'])"): "a task name from to_dict('records')",
}
CONTAINERS = ("list", "tuple", "sorted", "set")


def _formatted() -> list[tuple[str, int, str, str]]:
    """Every value the source formats with !r, repr() or a container call into an f-string:
    (file, line, how, expression)."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FormattedValue):
                continue
            value = node.value
            if node.conversion == ord("r"):
                found.append((rel, node.lineno, "!r", ast.unparse(value)))
            for call in ast.walk(value):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                    if call.func.id == "repr" or (call.func.id in CONTAINERS and call is value):
                        found.append((rel, node.lineno, call.func.id, ast.unparse(call)))
    return found


def _constant(expr: str) -> bool:
    """``list(MEASURES)``, ``sorted(FORMAT_BY_SUFFIX)``: a module's own constant names."""
    inner = re.fullmatch(r"\w+\((.*)\)", expr)
    return inner is not None and re.fullmatch(r"[A-Z_][A-Z0-9_]*", inner.group(1)) is not None


def test_values_in_messages_go_through_excerpt_or_quote_list():
    bad = []
    for rel, line, how, expr in _formatted():
        if (rel, expr) in ALLOWED:
            continue
        if how == "!r" and re.fullmatch(r"\w+", expr):  # an option as the user passed it
            continue
        if how in CONTAINERS and _constant(expr):
            continue
        bad.append(f"{rel}:{line}: {{{expr}{'!r' if how == '!r' else ''}}}")
    assert not bad, "use excerpt()/quote_list() for:\n" + "\n".join(bad)


def _message(call) -> str:
    with pytest.raises(MetaEvalError) as caught:
        call()
    return str(caught.value)


def _numeric() -> pd.DataFrame:
    """Scores whose every key is a number: tasks, queries, systems and metrics."""
    rows = [
        (t, q, s, 7, float((q + s + t) % 2)) for t in (1, 2) for q in range(6) for s in (10, 20)
    ]
    return pd.DataFrame(rows, columns=["task", "query", "system", "metric", "value"])


CASES = {
    "check_option": lambda: check_option("method", np.str_("dl2"), ["DL"]),
    "check_alpha": lambda: check_alpha(np.float64(1.5)),
    "check_resamples": lambda: check_resamples(np.float64(2.5)),
    "resolve_seed": lambda: resolve_seed(np.float64(3.5)),
    "means(interval='wilson') of a 0.5": lambda: metaeval.means(
        _numeric().assign(value=lambda d: d["value"].where(d.index != 3, 0.5)), interval="wilson"
    ),
    "compare(test='mcnemar') of a 0.5": lambda: metaeval.compare(
        _numeric()
        .assign(value=lambda d: d["value"].where(d.index != 3, 0.5))
        .astype({"task": str, "query": str, "system": str, "metric": str}),
        "10",
        test="mcnemar",
    ),
    "to_latex of two effect types": lambda: metaeval.report.to_latex(
        pd.DataFrame(
            {
                "task": ["a", "b"],
                "treatment": "n",
                "control": "o",
                "effect_type": [1.5, 2.5],
                "effect": [0.1, 0.2],
                "variance": [0.01, 0.01],
                "ci_low": [0.0, 0.0],
                "ci_high": [0.2, 0.4],
                "p_value": [0.3, 0.3],
            }
        )
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_messages_write_numbers_as_python_does(name):
    text = _message(CASES[name])
    assert not NUMPY_REPR.search(text), text


def test_a_one_epoch_task_is_not_said_to_be_averaged_over_replicates():
    """check_binary's message says "averaged over its replicates" only for a value that is
    a mean of several (Inspect logs with tasks of 1 and 3 epochs)."""
    rows = [
        ("one", f"q{q}", s, "acc", "e1", v) for q in range(4) for s, v in (("a", 1.0), ("b", 0.5))
    ]
    rows += [
        ("three", f"q{q}", s, "acc", f"e{e}", 1.0) for q in range(4) for s in "ab" for e in range(3)
    ]
    scores = pd.DataFrame(rows, columns=["task", "query", "system", "metric", "replicate", "value"])
    text = _message(lambda: metaeval.means(scores, interval="wilson"))
    assert "0.5 at task='one'" in text and "averaged over" not in text, text
    # a mean of three epochs that is not 0 or 1 is said to be one
    rows = [
        (t, q, s, m, r, v if r != "e0" or s != "b" or t != "three" else 0.0)
        for t, q, s, m, r, v in rows
        if not (t == "one" and s == "b")
    ]
    rows += [("one", f"q{q}", "b", "acc", "e1", 1.0) for q in range(4)]
    scores = pd.DataFrame(rows, columns=scores.columns)
    text = _message(lambda: metaeval.means(scores, interval="wilson"))
    assert "task='three'" in text and "averaged over its 3 replicates" in text, text
    assert not NUMPY_REPR.search(text)


def test_option_errors_keep_the_type_for_non_numbers():
    assert "'dl2'" in _message(lambda: check_option("method", "dl2", ["DL"]))
    with pytest.raises(OptionError, match=r"but 1\.5 was passed"):
        check_alpha(np.float64(1.5))
    with pytest.raises(SchemaError, match=r"\[1\.5, 2\.5\]"):
        CASES["to_latex of two effect types"]()


def test_file_names_in_warnings_are_whole():
    """The Ranger config's warning cut './retrieval-colberter-data/qrels/webis-touche2020-v2
    _qrels.txt' by 4 characters (and 22 to say so): a file name is shown whole up to 240
    characters, and no value is cut by less than its notice would take (issue 39, item 22)."""
    from metaeval.errors import format_groups, shorten

    name = "./retrieval-colberter-data/qrels/webis-touche2020-v2_qrels.txt"
    text = format_groups(pd.DataFrame({"system": ["qrels"], "file": [name]}))
    assert repr(name) in text and "more characters" not in text
    assert "more characters" not in format_groups(pd.DataFrame({"task": ["t" * 70]}))
    assert format_groups(pd.DataFrame({"task": ["t" * 200]})).endswith("(142 more characters)")
    assert shorten("x" * 300, 240) == "x" * 240 + "… (60 more characters)"

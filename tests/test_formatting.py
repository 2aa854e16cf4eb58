"""One formatter (issue 26): numbers and p-values become text in ``metaeval._options`` only.

``format_number`` and ``format_p`` are checked against strings written out by hand from
their documented rules; a scan of the source checks that no other module formats a
number itself (f-string precision or float specs, ``format()``, ``%``-formatting,
``str.format``, pandas' ``float_format``/``precision``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval._options import format_cell, format_number, format_p, is_p_column

SRC = Path(metaeval.__file__).parent
CLI = SRC.parent / "metaeval_cli"  # the command
HOME = "metaeval/_options.py"  # the one module that formats numbers

# (module, the exact source text of the formatting expression): why it is not a display of
# a number and may keep its own format
ALLOWED: dict[tuple[str, str], str] = {}

_NUMERIC_SPEC = re.compile(r"\.|[eEfFgGn%]$")  # a precision, or a float/percent type
_PERCENT = re.compile(r"%[-+ #0]*\d*(\.\d+)?[eEfFgGdi]")
_BRACE_SPEC = re.compile(r"\{[^{}]*:[^{}]*(\.|[eEfFgGn%])\}")


def _spec_text(spec: ast.JoinedStr) -> str:
    """The format spec of an f-string field, nested fields written as ``{}``."""
    return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in spec.values)


def number_formats(source: str) -> list[tuple[int, str]]:
    """(line, source text) of every place in ``source`` that formats a number itself."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        hit = False
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            hit = bool(_NUMERIC_SPEC.search(_spec_text(node.format_spec)))
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "format" and len(node.args) > 1:
                hit = True  # format(x, spec)
            elif (
                isinstance(func, ast.Attribute)
                and func.attr == "format"
                and isinstance(func.value, ast.Constant)
                and isinstance(func.value.value, str)
            ):
                hit = bool(_BRACE_SPEC.search(func.value.value))  # "{:.3f}".format(x)
            hit = hit or any(  # pandas' own number formats (a lambda's f-string is seen above)
                k.arg == "precision"
                or (k.arg == "float_format" and isinstance(k.value, ast.Constant))
                for k in node.keywords
            )
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
        ):
            hit = bool(_PERCENT.search(node.left.value))  # "%.3f" % x
        if hit:
            found.append((node.lineno, ast.get_source_segment(source, node) or ""))
    return found


def test_the_scan_finds_number_formats():
    bad = [
        'f"{x:.3f}"',
        'f"p = {p:.{digits}f}"',
        'f"{v:g}"',
        'f"{c:.1%}"',
        'f"{d:+.3g}"',
        'format(x, ".2e")',
        '"%.2f" % x',
        '"{:.1f}".format(x)',
        'df.to_string(float_format="%.3f")',
        'df.to_string(float_format=lambda v: f"{v:.2f}")',
        "styler.format(precision=2)",
    ]
    for code in bad:
        assert number_formats(code), code
    good = [
        'f"{n:,}"',
        'f"{b:02x}"',
        'f"{name!r}"',
        'f"{s:>10}"',
        '"%s" % name',
        '"{}".format(n)',
        "df.to_string(float_format=lambda v: format_number(v, 4))",
    ]
    for code in good:
        assert not number_formats(code), code


def test_numbers_are_formatted_in_one_module():
    found = {}
    for path in sorted([*SRC.rglob("*.py"), *CLI.rglob("*.py")]):
        rel = path.relative_to(SRC.parent).as_posix()
        if rel == HOME:
            continue
        for line, text in number_formats(path.read_text(encoding="utf-8")):
            if (rel, text) not in ALLOWED:
                found.setdefault(rel, []).append(f"line {line}: {text}")
    assert not found, (
        "Format numbers with metaeval._options.format_number / format_p / format_cell "
        f"(the one formatter), not in place: {found}"
    )
    for (rel, text), why in ALLOWED.items():  # every exception still exists and says why
        assert why and any(t == text for _, t in number_formats((SRC.parent / rel).read_text()))


# ------------------------------------------------------------------ format_p
@pytest.mark.parametrize(
    ("p", "digits", "expected"),
    [
        (0.0123, 3, "0.012"),
        (0.0125, 3, "0.013"),  # 0.0125 is stored as 0.01250000000000000069: up
        (0.05, 3, "0.050"),
        (0.001, 3, "0.001"),  # the smallest value shown is shown
        (0.00099, 3, "< 0.001"),  # below it: never 0.001 nor 0.000
        (0.0004, 3, "< 0.001"),
        (0.0, 3, "< 0.001"),
        (1e-300, 3, "< 0.001"),
        (1.0, 3, "1.000"),
        (0.99996, 3, "1.000"),
        (0.5, 0, "< 1"),  # 10^-0 = 1: p = 0.5 is below it
        (1.0, 0, "1"),
        (0.00004, 4, "< 0.0001"),
        (0.04321, 2, "0.04"),
        (0.009, 2, "< 0.01"),
    ],
)
def test_format_p_by_hand(p, digits, expected):
    assert format_p(p, digits) == expected


def test_format_p_targets_and_missing():
    assert format_p(0.0001, 3, to="latex") == "$<$ 0.001"
    assert format_p(0.0001, 3, to="unicode") == "< 0.001"
    assert format_p(0.25, 2, equals=True) == "= 0.25"
    assert format_p(0.0001, 2, equals=True) == "< 0.01"  # no "= <"
    assert format_p(np.nan) == "" and format_p(np.nan, missing="--") == "--"
    assert format_p(np.inf, missing="?") == "?"


# -------------------------------------------------------------- format_number
@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        ((1.23456, 2), {}, "1.23"),
        ((-1.23456, 2), {}, "-1.23"),
        ((-0.004, 2), {}, "0.00"),  # no negative zero
        ((-0.004, 2), {"keep_sign": True}, "-0.00"),  # a bound below zero stays below
        ((0.004, 2), {"keep_sign": True}, "0.00"),
        ((0.5, 1), {"signed": True}, "+0.5"),
        ((0.0, 1), {"signed": True}, "0.0"),
        ((-0.5, 1), {"to": "unicode"}, "\u22120.5"),
        ((-0.5, 1), {"to": "latex", "signed": True}, "$-$0.5"),
        ((0.5, 1), {"to": "latex", "signed": True}, "$+$0.5"),
        ((0.05,), {}, "0.05"),
        ((95.0,), {}, "95"),
        ((99.5,), {}, "99.5"),
        ((0.012345, 3), {"significant": True}, "0.0123"),
        ((1234.5, 3), {"significant": True}, "1.23e+03"),
        ((-0.00123, 2), {"significant": True, "signed": True}, "-0.0012"),
        ((12.0, 0), {}, "12"),
        ((np.nan, 2), {}, ""),
        ((np.inf, 2), {"missing": "--"}, "--"),
    ],
)
def test_format_number_by_hand(args, kwargs, expected):
    assert format_number(*args, **kwargs) == expected


def test_format_cell_and_the_p_column_rule():
    assert [format_cell(v, 2) for v in (1.005, -3, np.int64(4), np.bool_(True), "a_b")] == [
        "1.00",  # 1.005 is stored as 1.00499999999999989342
        "-3",
        "4",
        "True",
        "a_b",
    ]
    assert format_cell(-0.001, 2) == "-0.00" and format_cell(-np.inf, 2, to="latex") == "$-$inf"
    assert format_cell(pd.NA, 2) == format_cell(None, 2) == format_cell(np.float32("nan"), 2) == ""
    assert format_cell(0.00001, 3, p=True) == "< 0.001" and format_cell(0.2, 3, p=True) == "0.200"
    names = ["p_value", "q_p_value", "robust_p_value", "p_adjusted", "prob_gain", "p", "pvalue"]
    assert [is_p_column(n) for n in names] == [True, True, True, True, False, False, False]


def test_the_forest_states_its_level_as_it_is():
    """alpha = 0.025 is a 97.5% interval: the forest said "98% CI" (rounded to an integer)."""
    from matplotlib.text import Text

    scores = metaeval.load_example().query("metric == 'accuracy'")
    eff = scores.meta.effects(control="logistic_regression", treatment="knn", alpha=0.025)
    fig = metaeval.forest_plot(eff, alpha=0.025)
    texts = [t.get_text() for t in fig.findobj(Text) if t.get_visible()]
    assert "Effect [97.5% CI]" in texts
    assert any("97.5% prediction interval" in t for t in texts)

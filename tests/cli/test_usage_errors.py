"""Usage errors exit with 2 in every command (issue 39, item 31): a system, metric or column
named on the command line that the input does not have is the user's option to fix, not a
data error, whichever command reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

import metaeval
from metaeval_cli import main

EXAMPLE = str(Path(metaeval.__file__).parent / "datasets" / "example.csv.gz")
PLAN = ["--mde", "0.02", "--power", "0.8"]
REPORT = ["--n-resamples", "20", "--seed", "1"]

#: (command, arguments, the option the message must name); every one names something the
#: example does not have
CASES = [
    ("report", ["--control", "nope", *REPORT], "--control"),
    ("report", ["--control", "knn", "--metric", "nope", *REPORT], "nope"),
    ("report", ["--control", "knn", "--cluster", "nope", *REPORT], "--cluster"),
    ("plan", ["--control", "nope", *PLAN], "--control"),
    ("plan", ["--control", "knn", "--treatment", "nope", *PLAN], "--treatment"),
    ("plan", ["--control", "knn", "--tasks", "--treatment", "nope", *PLAN], "--treatment"),
    ("plan", ["--control", "knn", "--cluster", "nope", *PLAN], "--cluster"),
    ("plan", ["--control", "knn", "--metric", "nope", *PLAN], "--metric"),
    ("meta", ["--control", "nope"], "--control"),
    ("meta", ["--control", "knn", "--treatment", "nope"], "--treatment"),
    ("meta", ["--control", "knn", "--cluster", "nope"], "--cluster"),
    ("meta", ["--control", "knn", "--metric", "nope"], "--metric"),
    ("compare", ["--control", "nope"], "--control"),
    ("compare", ["--control", "knn", "--treatment", "nope"], "--treatment"),
    ("compare", ["--control", "knn", "--metrics", "nope"], "--metrics"),
]


@pytest.mark.parametrize(("command", "args", "option"), CASES)
def test_a_name_the_input_lacks_is_a_usage_error_in_every_command(capsys, command, args, option):
    code = main([command, EXAMPLE, *args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"metaeval {command}: error: ") and option in err, err
    assert f"See 'metaeval {command} --help'." in err
    assert "'nope'" in err and "Traceback" not in err

"""The command's shape (issue 26, item 3): one module per command, each with
``add_parser(sub)`` and ``run(args)``; parsers that import nothing but the standard
library, so ``metaeval --help`` stays fast; one home for the option vocabulary, checked
against the library's ``Literal`` types; the library reached through its public faces."""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import metaeval
import metaeval_cli
from metaeval import _options
from metaeval_cli import COMMANDS, build_parser
from metaeval_cli._parser import DEFAULTS, RANGER

PACKAGE = Path(metaeval_cli.__file__).parent
NAMES = ["demo", "evaluate", "compare", "convert", "meta", "plan", "report", "judges", "facets"]
HEAVY = ["pandas", "numpy", "metaeval", "scipy", "matplotlib", "rich"]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_every_command_is_a_module_with_add_parser_and_run():
    assert list(COMMANDS) == NAMES  # the order of `metaeval --help`
    public = sorted(p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_"))
    assert public == sorted(NAMES)  # a new command module cannot be left out of COMMANDS
    for name, module in COMMANDS.items():
        assert module.__name__ == f"metaeval_cli.{name}"
        assert list(inspect.signature(module.add_parser).parameters) == ["sub"]
        assert list(inspect.signature(module.run).parameters) == ["args"]
        parser = argparse.ArgumentParser(prog="metaeval")
        added = module.add_parser(parser.add_subparsers(dest="command"))
        assert isinstance(added, argparse.ArgumentParser) and added.prog == f"metaeval {name}"
    assert list(_subparsers(build_parser())) == NAMES


@pytest.mark.parametrize(
    "module",
    ["metaeval_cli", "metaeval_cli._parser", "metaeval_cli._common"]
    + [f"metaeval_cli.{n}" for n in NAMES],
)
def test_importing_a_command_module_loads_no_pandas(module):
    """Each module imported first in a fresh interpreter, and its parser built."""
    code = (
        f"import sys, json, argparse, importlib; m = importlib.import_module({module!r}); "
        "p = argparse.ArgumentParser(prog='metaeval'); sub = p.add_subparsers(); "
        "[c.add_parser(sub) for c in getattr(m, 'COMMANDS', {}).values()]; "
        "getattr(m, 'add_parser', lambda s: None)(sub); "
        f"print(json.dumps(sorted({{n.split('.')[0] for n in sys.modules}} & set({HEAVY!r}))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize("command", [[], *([n] for n in NAMES)])
def test_help_of_every_command_works_and_imports_no_pandas(command):
    """``metaeval [CMD] --help`` in a fresh interpreter; ``-X importtime`` lists every module
    the process imported, and none of them is pandas, numpy or metaeval."""
    argv = [sys.executable, "-X", "importtime", "-m", "metaeval_cli", *command, "--help"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(" ".join(["usage: metaeval", *command]))
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "metaeval_cli" in imported
    assert not {m for m in imported if m.split(".")[0] in HEAVY}


# (command, option, the library's Literal type of the parameter it is passed to)
CHOICES = [
    (command, option, literal)
    for command in ("demo", "meta")
    for option, literal in (
        ("--effect", _options.EffectType),
        ("--method", _options.PoolMethod),
        ("--ci", _options.CIMethod),
    )
] + [
    ("compare", "--test", _options.CompareTest),
    ("compare", "--adjust", _options.Adjustment),
    ("compare", "--family", _options.AdjustFamily),
    ("report", "--family", _options.AdjustFamily),
    ("meta", "--replicates", _options.LmEvalReplicates),
    ("meta", "--replicate-design", _options.ReplicateDesign),
    ("plan", "--test", _options.PlanTest),
    ("plan", "--alternative", _options.Alternative),
    ("judges", "--level", _options.Level),
    ("report", "--level", _options.Level),
    ("facets", "--method", _options.FacetMethod),
]


@pytest.mark.parametrize(("command", "option", "literal"), CHOICES)
def test_choices_are_the_librarys_literal_values(command, option, literal):
    """The parsers' choices are written once, in ``metaeval_cli._parser`` (stdlib only); they
    must equal the library's ``Literal`` option types, value for value and in order."""
    parser = _subparsers(build_parser())[command]
    (action,) = [a for a in parser._actions if option in a.option_strings]
    assert tuple(action.choices) == typing.get_args(literal)


def test_defaults_and_the_ranger_preset_are_the_librarys():
    # the command's --ci is the library's test= (a --test flag is compare's and plan's test)
    assert {("test" if k == "ci" else k): v for k, v in RANGER.items()} == metaeval.RANGER
    assert DEFAULTS == {
        "effect": _options.DEFAULT_EFFECT,
        "method": _options.DEFAULT_POOL_METHOD,
        "ci": _options.DEFAULT_CI,
    }


def _metaeval_imports() -> list[tuple[str, str]]:
    found = []
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                found.append((path.name, node.module or ""))
            elif isinstance(node, ast.Import):
                found.extend((path.name, a.name) for a in node.names)
    return [(f, m) for f, m in found if m == "metaeval" or m.startswith("metaeval.")]


def test_the_command_reaches_the_library_through_public_faces():
    """No import of a stage's private module (``metaeval.<stage>._x``), lazy ones included;
    core's vocabulary (``metaeval._options``) and ``metaeval.errors`` are the shared base."""
    imports = _metaeval_imports()
    assert imports  # the scan sees the lazy imports inside the commands' functions
    private = {(f, m) for f, m in imports if any(part.startswith("_") for part in m.split(".")[2:])}
    assert not private, private

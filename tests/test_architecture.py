"""The package's shape: imports without cycles, no private names across modules, a light
``import metaeval``, and the submodules and aliases a user reaches."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import metaeval

SRC = Path(metaeval.__file__).parent
HEAVY = ("scipy", "matplotlib", "seaborn", "jinja2", "rich", "ir_measures", "pandera", "sklearn")


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (``__main__`` files left out: they run)."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` names, seen from ``module``."""
    if not node.level:
        return node.module or ""
    package = module if MODULES[module].name == "__init__.py" else module.rsplit(".", 1)[0]
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def _top_level_imports(module: str) -> list[tuple[str, list[str], bool]]:
    """``(target module, names, at module level)`` for every import of a module."""
    tree = ast.parse(MODULES[module].read_text())
    found = []
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        at_top = id(node) in top
        if isinstance(node, ast.ImportFrom):
            found.append((_resolve(module, node), [a.name for a in node.names], at_top))
        elif isinstance(node, ast.Import):
            found.extend((a.name, [], at_top) for a in node.names)
    return found


def test_no_import_cycles_at_module_level():
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        for target, names, at_top in _top_level_imports(module):
            if not at_top or not target.startswith("metaeval"):
                continue
            deps = {target} | {f"{target}.{n}" for n in names}  # `from . import x`
            graph[module] |= {d for d in deps if d in MODULES and d != module}
    # a package's __init__ that imports its own submodules is the package, not a cycle
    for module in MODULES:
        graph[module] = {d for d in graph[module] if not module.startswith(d + ".")}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycles.append(path[path.index(dep) :] + [dep] if dep in path else [node, dep])
            elif dep not in state:
                visit(dep, [*path, dep])
        state[node] = 2

    for module in MODULES:
        if module not in state:
            visit(module, [module])
    assert not cycles, cycles


def test_every_import_of_a_metaeval_module_names_one_that_exists():
    """Function-level imports included: a lazy ``from .errors import X`` in ``cli/`` (issue 25,
    item 8) resolved to a module that does not exist and failed only when reached."""
    broken = []
    for module in MODULES:
        for target, names, _ in _top_level_imports(module):
            if not target.startswith("metaeval"):
                continue
            if target not in MODULES:
                broken.append(f"{module} imports {target}")
                continue
            for name in names:  # `from . import x`: x is a submodule or a name defined there
                if f"{target}.{name}" in MODULES or name == "*":
                    continue
                if not hasattr(importlib.import_module(target), name):
                    broken.append(f"{module} imports {name} from {target}")
    assert not broken, broken


def test_no_module_imports_a_private_name_of_another():
    """``from x import _name`` and ``module._name`` across modules are not allowed.

    Private *modules* (``_layout``, ``_resampling``) hold a subpackage's internals;
    the names without an underscore inside them are what other modules may use.
    """
    allowed: set[tuple[str, str]] = set()  # (module, name): none
    bad = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _resolve(module, node)
                if not target.startswith("metaeval"):
                    continue
                for alias in node.names:
                    is_module = f"{target}.{alias.name}" in MODULES
                    if is_module:
                        aliases[alias.asname or alias.name] = f"{target}.{alias.name}"
                    elif alias.name.startswith("_") and (module, alias.name) not in allowed:
                        bad.append(f"{module}: from {target} import {alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("metaeval"):
                        aliases[alias.asname or alias.name.split(".")[0]] = alias.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                bad.append(f"{module}: {aliases[node.value.id]}.{node.attr}")
    assert not bad, bad


def _fresh(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_module_imports_first_in_a_fresh_interpreter():
    """Each module imported before any other of metaeval's (import-order bugs of cycles)."""
    names = json.dumps(sorted(MODULES))
    code = f"""
import importlib, sys, json
failed = []
for name in json.loads({names!r}):
    for loaded in [m for m in sys.modules if m == "metaeval" or m.startswith("metaeval.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as err:
        failed.append(f"{{name}}: {{type(err).__name__}}: {{err}}")
print(json.dumps(failed))
"""
    assert json.loads(_fresh(code).strip().splitlines()[-1]) == []


def test_import_metaeval_loads_no_heavy_dependency():
    code = (
        "import sys, json, metaeval, pandas as pd; pd.DataFrame({'value': [1.0]}).meta;"
        f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"
    )
    assert json.loads(_fresh(code).strip().splitlines()[-1]) == []


def test_submodules_are_attributes_that_load_on_first_use():
    code = (
        "import sys, json, metaeval;"
        "before = 'metaeval.plot' in sys.modules;"
        "metaeval.plot.forest; metaeval.report.to_latex; metaeval.ranking.leaderboard;"
        "metaeval.ir.evaluate; metaeval.io.read_scores; metaeval.classification.metrics;"
        "metaeval.measures.segments; metaeval.datasets.load_example;"
        "print(json.dumps([before, 'matplotlib' in sys.modules]))"
    )
    before, matplotlib_after = json.loads(_fresh(code).strip().splitlines()[-1])
    assert before is False and matplotlib_after is False  # plot loads matplotlib when drawing
    public = set(dir(metaeval))
    assert {"plot", "report", "ranking", "ir", "io", "classification", "datasets"} <= public
    assert not [n for n in public if n.startswith("_") and n != "__version__"]


def test_documented_aliases_and_deprecated_module_paths():
    import metaeval.ir
    from metaeval.classification import bootstrap_effects, metrics

    assert metaeval.ir.evaluate is metaeval.measures.ir.evaluate
    assert metrics is metaeval.measures.classification.metrics
    assert bootstrap_effects is metaeval.bootstrap_effects
    code = (
        "import warnings; warnings.simplefilter('error', FutureWarning)\n"
        "try:\n    import metaeval.stats\nexcept FutureWarning as w:\n    print('warned:', w)\n"
    )
    assert "warned: metaeval.stats is deprecated" in _fresh(code)
    out = subprocess.run(
        [sys.executable, "-W", "always", "-c",
         "import metaeval.significance as s; print(s.tukey.__module__)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "FutureWarning: metaeval.significance is deprecated" in out.stderr
    assert out.stdout.strip() == "metaeval.paired.twoway"


@pytest.mark.parametrize("module", ["metaeval", "metaeval.pooling"])
@pytest.mark.parametrize(("old", "new"), [("METHODS", "POOL_METHODS"), ("TESTS", "CI_METHODS")])
def test_renamed_constants_warn_at_the_callers_line_and_keep_their_values(module, old, new):
    mod = importlib.import_module(module)
    with pytest.warns(FutureWarning, match=rf"{module}\.{old} is renamed {module}\.{new}") as rec:
        value = getattr(mod, old)
    assert value == getattr(metaeval, new) and value == getattr(mod, new)
    assert rec[0].filename == __file__  # the warning points at the user's code


# ------------------------------------------------------- one home per public name
STAGE_PACKAGES = ("schema", "io", "measures", "paired", "pooling", "ranking", "plot", "report")
"""The stages' packages; the top-level ``metaeval`` namespace may re-export their names."""


def _exported(stage: str) -> dict[str, set[str]]:
    """Name → the modules of a stage (its ``__init__`` and public submodules) that list it in
    their ``__all__``."""
    found: dict[str, set[str]] = {}
    prefix = f"metaeval.{stage}"
    for module in MODULES:
        if module != prefix and not module.startswith(prefix + "."):
            continue
        if any(part.startswith("_") for part in module.split(".")):
            continue  # private modules export nothing
        for name in getattr(importlib.import_module(module), "__all__", ()):
            found.setdefault(name, set()).add(module)
    return found


def test_every_public_name_has_one_home_stage():
    """A name is exported by exactly one stage (issue 26, item 3): ``ranking`` re-exported
    fifteen names of ``measures`` and ``paired``, ``pooling`` ``adjust_pvalues`` of
    ``paired``."""
    homes: dict[str, set[str]] = {}
    for stage in STAGE_PACKAGES:
        for name, modules in _exported(stage).items():
            homes.setdefault(name, set()).update(modules)
    shared = {
        name: sorted(modules)
        for name, modules in homes.items()
        if len({m.split(".")[1] for m in modules}) > 1
    }
    assert not shared, shared
    # the check sees the stages' names: the ranking functions and the moved measures
    assert homes["kendall_tau"] == {"metaeval.measures", "metaeval.measures.segments"}
    assert homes["leaderboard"] == {"metaeval.ranking"}

"""The package's shape: the stage graph (every import checked, lazy ones included), no
private names across modules, a light ``import metaeval``, and the submodules and aliases a
user reaches."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
from _helpers import run_fresh

import metaeval

SRC = Path(metaeval.__file__).parent
HEAVY = (
    "scipy",
    "matplotlib",
    "seaborn",
    "jinja2",
    "rich",
    "ir_measures",
    "pandera",
    "sklearn",
    "narwhals",
    "polars",
    "duckdb",
)


def _modules() -> dict[str, Path]:
    """Every module of the package and of the command beside it (``metaeval_cli``) by dotted
    name (``__main__`` files left out: they run)."""
    out = {}
    for path in sorted([*SRC.rglob("*.py"), *(SRC.parent / "metaeval_cli").rglob("*.py")]):
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
    return [(target, names, at_top) for target, names, at_top, _, _ in _imports(module)]


def _imports(module: str) -> list[tuple[str, list[str], bool, int, str | None]]:
    """``(target, names, at module level, line, enclosing function)`` for every import; a
    method is named ``Class.method``."""
    tree = ast.parse(MODULES[module].read_text())
    found = []
    top = set(map(id, tree.body))

    def walk(node: ast.AST, function: str | None) -> None:
        owner = f"{node.name}." if isinstance(node, ast.ClassDef) else ""
        for child in ast.iter_child_nodes(node):
            at_top = id(child) in top
            if isinstance(child, ast.ImportFrom):
                names = [a.name for a in child.names]
                found.append((_resolve(module, child), names, at_top, child.lineno, function))
            elif isinstance(child, ast.Import):
                found.extend((a.name, [], at_top, child.lineno, function) for a in child.names)
            is_function = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            walk(child, owner + child.name if is_function else function)

    walk(tree, None)
    return found


# ------------------------------------------------------------------ the stage graph
# A stage is a subpackage or a top-level module of metaeval; the few of the core and of
# the front are grouped. Data flow down this list; a stage may import only the stages
# its entry names (lazy, function-level imports count), and another stage's modules
# only through its public face: the package ``__init__`` or a module whose name has no
# leading underscore. The top-level ``_options``, ``_results``, ``_aliases`` (and any
# new top-level ``_x.py``) are the core's shared modules, not a stage's internals.
STAGE_OF = {
    "errors": "core",
    "schema": "core",
    "datasets": "core",  # top-level _x.py: core too
    "io": "io",
    "measures": "measures",
    "paired": "paired",
    "pooling": "pooling",
    "judges": "judges",
    "variance": "variance",
    "design": "design",
    "ranking": "ranking",
    "plot": "plot",
    "report": "report",
    "workflows": "workflows",
    "accessor": "accessor",
    # engines/: how to run (the adapter every function meets its table through, the
    # first pass, the per-task driver, dask's map/reduce). Part of the core layer: the
    # schema's own functions take every frame through its adapter, so no stage can sit
    # between them; test_engines_import_only_the_core checks that it imports nothing else
    "engines": "core",
    "": "metaeval",  # metaeval_cli: "cli"
}

STAGES: dict[str, set[str]] = {
    "core": set(),
    "io": {"core"},
    # measures.ir reads TREC files with io.trec and judgments with io.judgments;
    # measures.classification's intervals of a correlation use
    # paired.correlation.fisher_z_variance (one formula, no cycle)
    "measures": {"core", "io", "paired"},
    "paired": {"core"},
    "pooling": {"core"},  # any table with effect and variance (issue 40)
    "judges": {"core", "pooling"},  # labels by judges; AgreementResult.pool() pools them
    "variance": {"core"},  # variance components of prompts, seeds, judges (issue 42)
    "design": {"core", "paired", "pooling"},  # plans from pilots: the variances they estimate
    "ranking": {"core"},  # per-task scores; leaderboard/rank_intervals pool in workflows
    "plot": {"core"},  # figures draw results; forest_plot (workflows) pools, then draws
    "report": {"core"},
    # the verbs that run several stages (issue 40): above every stage, below the faces
    "workflows": {"core", "io", "measures", "paired", "pooling", "design", "ranking", "plot"}
    | {"report", "judges"},
    "accessor": {"core"},  # the pandas, dask and polars faces, from ACCESSOR_METHODS
    "cli": {
        "core",
        "io",
        "measures",
        "paired",
        "pooling",
        "design",
        "plot",
        "report",
        "workflows",
        "metaeval",
    },
    "metaeval": {"core", "io", "measures", "paired", "pooling", "design", "accessor"}
    | {"workflows", "judges", "variance"},
}

FACES = {"accessor", "metaeval", "cli"}
"""The faces: the only stages that may import ``workflows``."""

# A result's presentation methods draw or write it: ``Result.plot``/``to_latex``/
# ``to_html`` import ``plot`` or ``report`` inside the method,
# which runs when the user asks for the figure, long after every module has loaded. The
# object hands itself over and the figure draws from it alone (it never calls back or
# refits), so these lazy calls up the graph are the design of issue 26's result
# classes, not a coupling; they count neither as edges nor as cycles.
PRESENTATION_METHODS = {"plot", "to_latex", "to_html", "_repr_html_"}
PRESENTATION_STAGES = {"plot", "report"}

# Imports up the graph, each justified, each lazy; the module graph stays acyclic
# (checked below, these included).
EXCEPTIONS = {
    # a Ranger config names TREC runs that must be evaluated before they are scores
    ("metaeval.io.ranger", "metaeval.measures.ir"): "Ranger's IR configs are evaluated",
}


def _stage(module: str) -> str:
    if module.split(".")[0] == "metaeval_cli":
        return "cli"
    parts = module.split(".")[1:]
    if not parts:
        return STAGE_OF[""]
    if parts[0] not in STAGE_OF and parts[0].startswith("_") and len(parts) == 1:
        return "core"
    return STAGE_OF[parts[0]]


def _is_private(module: str) -> bool:
    """A module inside a stage's subpackage whose own name starts with ``_``."""
    parts = module.split(".")[1:]
    return len(parts) > 1 and any(p.startswith("_") and not p.startswith("__") for p in parts[1:])


def _edges() -> list[tuple[str, str, bool, int, str | None]]:
    """``(module, imported module, lazy, line, function)`` for every import of metaeval's."""
    out = []
    for module in MODULES:
        for target, names, at_top, line, function in _imports(module):
            if not target.startswith("metaeval"):
                continue
            deps = {f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES}
            if len(deps) < len(names) or not names:  # names defined in target itself
                deps.add(target)
            out.extend((module, d, not at_top, line, function) for d in sorted(deps) if d != module)
    return out


def _presentation(module: str, target: str, lazy: bool, function: str | None) -> bool:
    """A lazy import of ``plot``/``report`` inside a presentation *method* of a class."""
    method = function.split(".")[-1] if function and "." in function else None
    return lazy and method in PRESENTATION_METHODS and _stage(target) in PRESENTATION_STAGES


def test_every_module_belongs_to_a_declared_stage():
    assert {_stage(m) for m in MODULES} <= set(STAGES)
    assert all(edges <= set(STAGES) for edges in STAGES.values())
    assert not _cycles({s: set(e) for s, e in STAGES.items()}), "the declared graph has a cycle"


def test_imports_follow_the_declared_stage_graph():
    """No undeclared edge between stages and no import of another stage's private module,
    lazy imports included."""
    bad = []
    for module, target, lazy, line, function in _edges():
        src, dst = _stage(module), _stage(target)
        if src == dst or (module, target) in EXCEPTIONS:
            continue
        if _presentation(module, target, lazy, function):
            continue
        where = f"{MODULES[module].relative_to(SRC.parent)}:{line}{' (lazy)' if lazy else ''}"
        if dst not in STAGES[src]:
            bad.append(f"{where}: {src} -> {dst} ({target}) is not a declared edge")
        if _is_private(target):
            bad.append(f"{where}: {target} is a private module of {dst}")
    assert not bad, "\n".join(bad)


def test_workflows_are_imported_only_by_the_faces():
    """The verbs that run several stages sit above every stage (issue 40): no stage imports
    them, lazily or not; the accessor names them by string."""
    bad = [
        f"{module} imports {target}"
        for module, target, *_ in _edges()
        if _stage(target) == "workflows" and _stage(module) not in FACES | {"workflows"}
    ]
    assert not bad, bad
    assert all("workflows" not in STAGES[s] for s in STAGES if s not in FACES)


def test_no_presentation_function_has_a_pooling_option():
    """A table writer or a figure takes a result and writes or draws it (issue 40): no
    public function of ``report`` or ``plot`` has a pooling option (``method``, ``ci``; a
    boolean ``ci`` that shows a band is a drawing option), so that it cannot pool again;
    ``forest_plot`` (workflows) pools, then draws. (``alpha`` stays: the level at which a
    table or a diagram marks a p-value.)"""
    import inspect

    import metaeval.plot
    import metaeval.report

    found = [
        f"{module.__name__}.{name}({param})"
        for module in (metaeval.report, metaeval.plot)
        for name in module.__all__
        if callable(obj := getattr(module, name)) and not isinstance(obj, type)
        for param, spec in inspect.signature(obj).parameters.items()
        if param in ("method", "ci") and spec.annotation not in (bool, "bool")
    ]
    assert not found, found


def test_known_exceptions_still_exist():
    """An entry of ``EXCEPTIONS`` whose import is gone must leave the list."""
    seen = {(m, t) for m, t, *_ in _edges()}
    assert set(EXCEPTIONS) <= seen, set(EXCEPTIONS) - seen
    assert all(lazy for m, t, lazy, *_ in _edges() if (m, t) in EXCEPTIONS)


def test_no_stage_cycle_lazy_imports_included():
    graph: dict[str, set[str]] = {s: set() for s in STAGES}
    for module, target, lazy, _, function in _edges():
        if (module, target) in EXCEPTIONS or _presentation(module, target, lazy, function):
            continue
        graph[_stage(module)].add(_stage(target))
    for stage in graph:
        graph[stage].discard(stage)
    assert not _cycles(graph), _cycles(graph)


def test_no_import_cycles_between_modules_lazy_imports_included():
    """Module-level or function-level: a cycle of imports between modules (in one stage
    or across stages) is refused; a package's ``__init__`` importing its own submodules
    is the package, not a cycle."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, target, lazy, _, function in _edges():
        if _presentation(module, target, lazy, function) or module.startswith(target + "."):
            continue
        graph[module].add(target)
    assert not _cycles(graph), _cycles(graph)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                cycles.append(path[path.index(dep) :] + [dep] if dep in path else [node, dep])
            elif dep not in state:
                visit(dep, [*path, dep])
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [node])
    return cycles


# ------------------------------------------------------------- the documented tree
DOC = SRC.parents[1] / "docs" / "architecture.md"


def _documented_modules() -> dict[str, int]:
    """The modules the tree of ``docs/architecture.md`` names (a directory ``x/`` is the
    package ``x``; a line may name several modules), with the line of each."""
    text = DOC.read_text()
    block = text.split("## The tree", 1)[1].split("```", 2)[1]
    out: dict[str, int] = {}
    stack: list[str] = []
    first = text[: text.index(block)].count("\n") + 1
    for offset, line in enumerate(block.splitlines()):
        if line.startswith("src/"):  # a top-level package (its tree follows) or module
            head = line.split()[0][len("src/") :]
            name = head.rstrip("/").removesuffix(".py")
            out[name] = first + offset
            stack = [name] if head.endswith("/") else []
            continue
        if not stack or not line.strip():
            continue
        start = next(i for i, ch in enumerate(line) if ch.isalnum() or ch == "_")
        depth = start // 4  # "├── " and "│   " are four characters a level
        stack = stack[:depth]
        for token in line[start:].split():
            if token.endswith("/"):
                stack.append(token[:-1])
                out[".".join(stack)] = first + offset
                break
            if not token.endswith(".py"):
                break
            name = token[:-3]
            if name == "__main__":
                continue
            dotted = ".".join(stack if name == "__init__" else [*stack, name])
            out[dotted] = first + offset
    return out


def test_the_documented_tree_names_every_module_and_no_other():
    """``docs/architecture.md``'s tree is checked against ``src/metaeval``: a module added,
    moved or removed fails here until the page says so."""
    documented = _documented_modules()
    missing = sorted(set(MODULES) - set(documented))
    extra = sorted(set(documented) - set(MODULES))
    assert not missing and not extra, (
        f"docs/architecture.md's tree lacks {missing} and names modules that do not exist: "
        f"{[(m, f'line {documented[m]}') for m in extra]}"
    )


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


@pytest.mark.slow
def test_every_module_imports_first_in_a_fresh_interpreter(tmp_path):
    """Each module imported before any other of metaeval's (import-order bugs of cycles).

    The bytecode of each module is written once (under ``tmp_path``, nothing in the tree)
    and read by the next hundred imports: where PYTHONDONTWRITEBYTECODE is set, compiling
    the sources again for every module took two thirds of this test (48 s of CPU -> 16 s).
    """
    names = json.dumps(sorted(MODULES))
    code = f"""
import importlib, sys, json
sys.dont_write_bytecode, sys.pycache_prefix = False, {str(tmp_path)!r}
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
    assert json.loads(run_fresh(code).strip().splitlines()[-1]) == []


def test_import_metaeval_loads_no_heavy_dependency():
    code = (
        "import sys, json, metaeval, pandas as pd; pd.DataFrame({'value': [1.0]}).meta;"
        f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"
    )
    assert json.loads(run_fresh(code).strip().splitlines()[-1]) == []


def test_submodules_are_attributes_that_load_on_first_use():
    code = (
        "import sys, json, metaeval;"
        "before = 'metaeval.plot' in sys.modules;"
        "metaeval.plot.forest; metaeval.report.to_latex; metaeval.ranking.friedman;"
        "metaeval.ir.evaluate; metaeval.io.read_scores; metaeval.classification.metrics;"
        "metaeval.measures.segments; metaeval.datasets.load_example;"
        "print(json.dumps([before, 'matplotlib' in sys.modules]))"
    )
    before, matplotlib_after = json.loads(run_fresh(code).strip().splitlines()[-1])
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
    assert "warned: metaeval.stats is deprecated" in run_fresh(code)
    out = subprocess.run(
        [
            sys.executable,
            "-W",
            "always",
            "-c",
            "import metaeval.significance as s; print(s.tukey.__module__)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "FutureWarning: metaeval.significance is deprecated" in out.stderr
    assert out.stdout.strip() == "metaeval.paired.anova"


@pytest.mark.parametrize("module", ["metaeval", "metaeval.pooling"])
@pytest.mark.parametrize(("old", "new"), [("METHODS", "POOL_METHODS"), ("TESTS", "CI_METHODS")])
def test_renamed_constants_warn_at_the_callers_line_and_keep_their_values(module, old, new):
    mod = importlib.import_module(module)
    with pytest.warns(FutureWarning, match=rf"{module}\.{old} is renamed {module}\.{new}") as rec:
        value = getattr(mod, old)
    assert value == getattr(metaeval, new) and value == getattr(mod, new)
    assert rec[0].filename == __file__  # the warning points at the user's code


# ------------------------------------------------------- one home per public name
STAGE_PACKAGES = (
    "schema",
    "io",
    "measures",
    "paired",
    "pooling",
    "ranking",
    "plot",
    "report",
    "workflows",
)
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
    assert homes["friedman"] == {"metaeval.ranking"}
    assert homes["leaderboard"] == {"metaeval.workflows", "metaeval.workflows.leaderboard"}


def test_the_formatter_decides_every_line():
    """``ruff format`` lays out every line (issue 40): no marker overrules it in the package,
    the command, the tests or the benchmarks (378 in src and 470 in tests before)."""
    root = SRC.parent.parent
    markers = ("fmt" + ": skip", "fmt" + ": off")
    found = [
        f"{path.relative_to(root)}:{number}"
        for folder in ("src", "tests", "benchmarks")
        for path in sorted((root / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if any(marker in line for marker in markers)
    ]
    assert not found, found


# ----------------------------------------------------------------- the engines room
ENGINE_HOMES = ("metaeval.engines", "metaeval.paired.pushdown", "metaeval.paired.partitions")
# (and the command's dask progress bar: ``metaeval_cli.meta``, a face of its own)
"""Where the engines may be named (issue 40): the engines room, what an engine computes
(the expression plan; the per-partition sums), and the faces' registration."""


def test_engines_import_only_the_core():
    """``engines/`` says how to run, never what: it imports no stage (what it runs is
    given), so that every stage can use it."""
    bad = [
        f"{module} imports {target}"
        for module, target, *_ in _edges()
        if module.startswith("metaeval.engines") and _stage(target) != "core"
    ]
    assert not bad, bad


def _names_an_engine(module: str, path: Path) -> list[str]:
    """The lines of a module that name ``LazyTable``, dask or narwhals in code (imports,
    names, strings that import them); docstrings and comments do not count."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name | ast.alias) or isinstance(node, ast.Attribute):
            name = (
                node.id
                if isinstance(node, ast.Name)
                else node.name
                if isinstance(node, ast.alias)
                else node.attr
            )
            if name == "LazyTable" or name.split(".")[0] in ("dask", "narwhals"):
                found.append(f"{module}:{node.lineno}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
            "dask",
            "narwhals",
        ):
            found.append(f"{module}:{node.lineno}")
    return found


def test_engines_are_named_only_in_their_room():
    """``LazyTable``, dask and narwhals are named under ``engines/``, in what an engine
    computes (``paired/pushdown.py``, ``paired/partitions.py``) and in the faces'
    registration (``accessor.py``): the statistics do not know where they run."""
    allowed = (*ENGINE_HOMES, "metaeval.accessor", "metaeval_cli.meta")
    found = [
        hit
        for module, path in MODULES.items()
        if not module.startswith(allowed)
        for hit in _names_an_engine(module, path)
    ]
    known = {  # reading with an engine is the reader's job (engine="duckdb"/"polars"/"dask")
        "metaeval.io.tidy",
    }
    left = sorted({hit.split(":")[0] for hit in found} - known)
    assert not left, [hit for hit in found if hit.split(":")[0] in left]


def test_no_statistic_asks_what_kind_of_table_it_has():
    """Outside the engines room no function branches on the kind of its table
    (``isinstance(x, LazyTable)``, ``is_lazy(x)``): a statistic declares how it meets a lazy
    table once, at its definition (``engines.route``), and its body computes from pandas."""
    allowed = (*ENGINE_HOMES, "metaeval.accessor", "metaeval_cli.meta")
    found = []
    for module, path in MODULES.items():
        if module.startswith(allowed):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else ""
            name = node.func.attr if isinstance(node.func, ast.Attribute) else name
            kinds = ast.unparse(node.args[1]) if name == "isinstance" and node.args[1:] else ""
            if "LazyTable" in kinds or name == "is_lazy":
                found.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
    assert not found, found


def test_no_accessor_class_body_declares_a_functions_parameters():
    """The faces are generated from ``ACCESSOR_METHODS``: no class of ``accessor.py``
    defines a method (public or private) whose parameters repeat those of a function it
    faces (the dask face had seven such twins)."""
    from metaeval import accessor

    def target(entry):
        module, name = entry.function.split(":")
        return getattr(importlib.import_module(module), name)

    functions = {
        name: inspect.signature(target(entry)) for name, entry in accessor.ACCESSOR_METHODS.items()
    }
    twins = []
    for cls in (accessor.MetaAccessor, accessor.DaskMetaAccessor, accessor.PolarsMetaNamespace):
        for attr, value in vars(cls).items():
            if not inspect.isfunction(value):
                continue
            own = list(inspect.signature(value).parameters)[1:]
            for name, sig in functions.items():
                theirs = list(sig.parameters)[1:]
                if (
                    own
                    and theirs
                    and set(theirs) - {"progress"} <= set(own)
                    and (attr.lstrip("_") == name or len(theirs) > 1)
                ):
                    twins.append(f"{cls.__name__}.{attr} repeats {name}{tuple(theirs)}")
    assert not twins, twins


# ------------------------------------------------- rooms named for what they hold (issue 40)
MAX_LINES = 800
"""No module is longer than this: a longer one holds several rooms' worth (issue 40, item 4)."""

#: The modules over :data:`MAX_LINES` when the rule came in, each with why it is still long.
#: The list may only shrink: an entry back under the limit fails until it leaves the list.
TOO_LONG = {
    "metaeval.paired.significance": "seven tests in one compare(); its docstrings (item 5)",
    "metaeval.pooling._tau2": "eight τ² estimators and their intervals: a big subject",
    "metaeval.workflows.report": "build_report: the analyses, the prose and the HTML page",
    "metaeval.design.queries": "plan_queries' 225-line docstring (item 5)",
    "metaeval.plot.forest": "forest() and its layout engine; the fitting half leaves (item 2)",
    "metaeval.pooling._metareg": "metareg: design matrices, fits, tables",
    "metaeval_cli.meta": "the meta command's options and output",
    "metaeval.io.lm_eval": "the lm-evaluation-harness reader's formats",
}


def _lines(module: str) -> int:
    return len(MODULES[module].read_text().splitlines())


def test_no_module_is_longer_than_the_limit():
    """``MAX_LINES`` for every module of the package and the command; :data:`TOO_LONG` names
    today's exceptions and may only shrink."""
    long = {m for m in MODULES if _lines(m) > MAX_LINES}
    new = sorted(f"{m} ({_lines(m)} lines)" for m in long - set(TOO_LONG))
    assert not new, f"over {MAX_LINES} lines: {new}; split the module by what it holds"
    stale = sorted(set(TOO_LONG) - long)
    assert not stale, f"{stale} are {MAX_LINES} lines or fewer now: take them off TOO_LONG"


#: Module-level hooks of the import system (PEP 562) a package's face may define: the lazy
#: attributes (``metaeval.plot``, ``schema.Scores``) and their tab completion.
IMPORT_HOOKS = {"__getattr__", "__dir__"}

#: Package faces that still define functions or classes, by name; may only shrink.
INIT_DEFINES = {
    "metaeval": {"_version"},  # the installed version, read once at import
    "metaeval.datasets": {"load_example", "load_demsar"},
    "metaeval_cli": {"_Version", "build_parser", "main"},  # main: the console script's entry
}


def _defined_in_init() -> dict[str, set[str]]:
    out = {}
    for module, path in MODULES.items():
        if path.name != "__init__.py":
            continue
        tree = ast.parse(path.read_text())
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        names = {n.name for n in tree.body if isinstance(n, kinds)} - IMPORT_HOOKS
        if names:
            out[module] = names
    return out


def test_a_package_init_defines_no_function():
    """A package's ``__init__.py`` is its face: it imports, it does not define (issue 40):
    ``schema/__init__.py`` held 765 lines of the stage's logic."""
    found = _defined_in_init()
    extra = {m: sorted(n - INIT_DEFINES.get(m, set())) for m, n in found.items()}
    extra = {m: n for m, n in extra.items() if n}
    assert not extra, f"functions or classes defined in a package's __init__.py: {extra}"
    stale = {m: sorted(n - found.get(m, set())) for m, n in INIT_DEFINES.items()}
    stale = {m: n for m, n in stale.items() if n}
    assert not stale, f"INIT_DEFINES names what is gone: {stale}"


#: ``Result`` subclasses outside a stage's ``results.py``, each with why; may only shrink.
RESULTS_ELSEWHERE = {
    "metaeval.workflows.report.Report": "build_report's Report, beside the function that fills it",
    "metaeval.workflows.rank_report.RankReport": "rank_report's result, beside its prose writer",
}


def _result_classes() -> dict[str, str]:
    """``module.Class`` → module of every subclass of ``metaeval._results.Result`` (read from
    the source, subclasses of subclasses included)."""
    classes = {}
    for module, path in MODULES.items():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                bases = {
                    b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
                }
                classes[f"{module}.{node.name}"] = (module, node.name, bases)
    results = {"Result"}
    found: dict[str, str] = {}
    grew = True
    while grew:
        grew = False
        for key, (module, name, bases) in classes.items():
            if key not in found and bases & results and key != "metaeval._results.Result":
                found[key] = module
                results.add(name)
                grew = True
    return found


def test_every_result_class_lives_in_a_results_module():
    """A stage's result classes are in its ``results.py`` (issue 40): ranking's were inside
    ``_friedman.py`` and ``_bayes.py``."""
    found = _result_classes()
    elsewhere = {k for k, m in found.items() if m.rsplit(".", 1)[-1] != "results"}
    assert elsewhere <= set(RESULTS_ELSEWHERE), sorted(elsewhere - set(RESULTS_ELSEWHERE))
    stale = sorted(set(RESULTS_ELSEWHERE) - elsewhere)
    assert not stale, f"{stale} are in a results.py now (or gone): take them off the list"
    assert {"metaeval.ranking.results.PosthocResult", "metaeval.pooling.results.GoshResult"} <= set(
        found
    )  # the check sees subclasses


#: Private module names that repeat across stages, each with why; may only shrink.
SHARED_PRIVATE_NAMES: dict[str, str] = {}


def test_no_two_private_modules_share_a_name_across_stages():
    """``pooling/_bayes.py`` and ``ranking/_bayes.py``, three ``_report.py``, two ``_tables.py``
    and two ``_text.py`` (issue 40): a private module's name says what it holds, once."""
    stages: dict[str, set[str]] = {}
    for module in MODULES:
        name = module.rsplit(".", 1)[-1]
        if name.startswith("_") and not name.startswith("__") and "." in module:
            stages.setdefault(name, set()).add(module)
    shared = {n: sorted(m) for n, m in stages.items() if len(m) > 1}
    unexplained = {n: m for n, m in shared.items() if n not in SHARED_PRIVATE_NAMES}
    assert not unexplained, unexplained
    stale = sorted(set(SHARED_PRIVATE_NAMES) - set(shared))
    assert not stale, f"{stale} no longer repeat: take them off SHARED_PRIVATE_NAMES"

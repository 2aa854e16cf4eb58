"""The documentation site's sources cover the public API and cite what they use.

Sphinx fails on a reference that does not resolve, but not on a public function that no
page mentions; these tests read ``docs/api/*.rst`` as Sphinx's autosummary does and fail
on a public function, class or ``DataFrame.meta`` method without a page, and on a work
cited in the guide but missing from the reference list. No Sphinx is needed to run them.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import tomllib
from pathlib import Path

import pytest
from _helpers import public_names

import metaeval
from metaeval.accessor import MetaAccessor

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"
GUIDE = sorted((ROOT / "docs").rglob("*.md"))
REFERENCES = ROOT / "docs" / "user_guide" / "formulas.md"

# The namespaces a user is told about (docs/api/index.rst), each with its public names.
PUBLIC_MODULES = (
    "metaeval",
    "metaeval.io",
    "metaeval.ir",
    "metaeval.ranking",
    "metaeval.classification",
    "metaeval.plot",
    "metaeval.report",
    "metaeval.datasets",
    "metaeval.schema",
    "metaeval.paired",
    "metaeval.pooling",
    "metaeval.measures",
    "metaeval_cli",
    "metaeval.errors",
)


def public_api() -> dict[str, object]:
    """Every public function and class, by one of its public names."""
    found: dict[str, object] = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in public_names(module_name):
            obj = getattr(module, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                found.setdefault(f"{module_name}.{name}", obj)
    return found


def autosummary_entries(text: str) -> list[str]:
    """The objects an ``.rst`` page lists in ``autosummary`` directives, fully qualified."""
    entries, module, in_summary = [], "", False
    for line in text.splitlines():
        if match := re.match(r"\.\. currentmodule:: (\S+)", line):
            module, in_summary = match.group(1), False
        elif line.startswith(".. autosummary::"):
            in_summary = True
        elif in_summary and line.strip() and not line.startswith(" "):
            in_summary = False
        elif in_summary and line.startswith("   ") and not line.strip().startswith(":"):
            entries.append(f"{module}.{line.strip().lstrip('~')}")
    return entries


def documented() -> list[str]:
    return [
        entry
        for page in sorted(API.glob("*.rst"))
        for entry in autosummary_entries(page.read_text())
    ]


def resolve(dotted: str) -> object:
    """The object a dotted name refers to, as autosummary finds it.

    The longest importable module prefix, then attributes: ``metaeval.plot.forest`` is
    the function ``forest`` of ``metaeval.plot``, not the module ``plot/forest.py``.
    """
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def accessor_methods() -> list[str]:
    return sorted(
        name
        for name, member in inspect.getmembers(MetaAccessor)
        if not name.startswith("_") and callable(member)
    )


def test_the_api_pages_list_something():
    entries = documented()
    assert len(entries) > 50
    assert "metaeval.pool" in entries
    assert "pandas.DataFrame.meta.pool" in entries


@pytest.mark.parametrize("entry", documented())
def test_every_api_entry_resolves(entry):
    """A page may not list a name that no longer exists (Sphinx would fail later)."""
    if entry.startswith("pandas.DataFrame.meta"):
        method = entry.removeprefix("pandas.DataFrame.meta").lstrip(".")
        assert method == "" or method in accessor_methods(), entry
    else:
        resolve(entry)


def test_every_public_function_and_class_has_a_page():
    pages = {id(resolve(e)) for e in documented() if not e.startswith("pandas.")}
    missing = sorted(name for name, obj in public_api().items() if id(obj) not in pages)
    assert not missing, (
        f"public functions or classes without a page in docs/api/*.rst: {missing}; "
        "add each to the autosummary list of its module's page"
    )


def test_every_accessor_method_has_a_page():
    pages = {e.removeprefix("pandas.DataFrame.meta.") for e in documented()}
    missing = [m for m in accessor_methods() if m not in pages]
    assert not missing, f"DataFrame.meta methods without a page in docs/api/accessor.rst: {missing}"
    assert "pandas.DataFrame.meta" in documented()  # the accessor itself


def test_the_check_sees_a_function_without_a_page(monkeypatch):
    """The coverage check fails for a new public function that no page lists."""

    def shiny_new_function():
        """Not documented anywhere."""

    monkeypatch.setattr(metaeval.plot, "shiny_new_function", shiny_new_function, raising=False)
    monkeypatch.setattr(metaeval.plot, "__all__", [*metaeval.plot.__all__, "shiny_new_function"])
    with pytest.raises(AssertionError, match="shiny_new_function"):
        test_every_public_function_and_class_has_a_page()


# ---------------------------------------------------------------------------- citations
NAME = r"[A-ZÀ-Ý][a-zà-ÿ]+(?:[A-Z][a-zà-ÿ]+)?(?:['’\-][A-Za-zà-ÿ]+)?"
CITATION = re.compile(
    rf"\b({NAME})(?:\s+et\s+al\.|(?:,\s+{NAME})*,?\s+(?:&|and)\s+{NAME})?\s+\(?((?:17|18|19|20)\d\d)[a-z]?\b"
)
"""``Author (2009)``, ``Author et al. 2014``, ``A, B & C (2015)``: a surname and a year."""


def reference_list() -> list[str]:
    text = REFERENCES.read_text()
    return [
        line for line in text.split("## References", 1)[1].splitlines() if line.startswith("- ")
    ]


def citations() -> list[tuple[str, str, str]]:
    texts = [(p.relative_to(ROOT).as_posix(), p.read_text()) for p in GUIDE if p != REFERENCES]
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        markdown = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        texts.append((notebook.relative_to(ROOT).as_posix(), markdown))
    return sorted(
        {(m.group(1), m.group(2), where) for where, text in texts for m in CITATION.finditer(text)}
    )


def test_the_guide_cites_works():
    cited = {(name, year) for name, year, _ in citations()}
    assert {("IntHout", "2014"), ("Langan", "2019"), ("Veroniki", "2016")} <= cited


@pytest.mark.parametrize("name, year, where", citations())
def test_every_cited_work_is_in_the_reference_list(name, year, where):
    entries = [line for line in reference_list() if name in line and f"({year})" in line]
    assert entries, (
        f"{where} cites {name} ({year}), which docs/user_guide/formulas.md does not list"
    )


def test_every_reference_has_a_doi_or_says_it_has_none():
    undocumented = [
        line for line in reference_list() if "doi:" not in line and "(no DOI" not in line
    ]
    assert not undocumented, undocumented


# ---------------------------------------------------------------------------- guide index
def test_every_guide_page_is_in_the_guide_index():
    """Each user-guide page is in the guide's toctree (Sphinx checks that much) and in its
    overview table, which tells a reader what the page covers."""
    index = (ROOT / "docs" / "user_guide" / "index.md").read_text()
    table = set(re.findall(r"^\| \[[^]]+\]\((\w+)\.md\) \|", index, re.M))
    toctree = set(index.split("```{toctree}", 1)[1].split("```", 1)[0].split())
    pages = {p.stem for p in (ROOT / "docs" / "user_guide").glob("*.md")} - {"index"}
    assert len(table) >= 10  # the pattern finds the rows
    assert not pages - table, f"user_guide/index.md's table lacks {sorted(pages - table)}"
    assert not pages - toctree, f"user_guide/index.md's toctree lacks {sorted(pages - toctree)}"


# ---------------------------------------------------------------------------- docs extra
def _requirement_name(requirement: str) -> tuple[str, list[str]]:
    """A requirement's normalized distribution name and the extras it asks for."""
    match = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[([^]]*)\])?", requirement)
    assert match, requirement
    extras = [e.strip() for e in (match.group(2) or "").split(",") if e.strip()]
    return re.sub(r"[-_.]+", "-", match.group(1)).lower(), extras


def docs_extra_closure() -> set[str]:
    """Every distribution that ``pip install -e ".[docs]"`` installs, as far as the
    metadata of the installed distributions tells: the core dependencies, the ``docs``
    extra with the extras of metaeval it names, and what each of those requires."""
    import tomllib
    from importlib import metadata

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    extras, seen_extras = ["docs"], set()
    while extras:
        extra = extras.pop()
        seen_extras.add(extra)
        for requirement in project["optional-dependencies"][extra]:
            name, asked = _requirement_name(requirement)
            if name == "metaeval":
                extras += [e for e in asked if e not in seen_extras]
            else:
                wanted.append(requirement)
    closure: set[str] = set()
    while wanted:
        name, _ = _requirement_name(wanted.pop())
        if name in closure:
            continue
        closure.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        wanted += [r.split(";")[0] for r in requires if "extra ==" not in r]
    return closure


def executed_imports() -> dict[str, str]:
    """The top-level modules that the pages and notebooks executed by the docs build
    import (``{code-cell}`` blocks and notebook code cells), by page. (``docs/conf.py``
    imports Sphinx's own packages.)"""
    import sys

    sources = {p: p.read_text() for p in GUIDE}
    blocks = {
        str(p.relative_to(ROOT)): "\n".join(
            re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", t, re.S)
        )
        for p, t in sources.items()
    }
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        blocks[str(notebook.relative_to(ROOT))] = "\n".join(
            "".join(c["source"]) for c in cells if c["cell_type"] == "code"
        )
    found: dict[str, str] = {}
    for page, code in blocks.items():
        for module in re.findall(r"^[ \t]*(?:from|import)[ \t]+([A-Za-z_]\w*)", code, re.M):
            if module not in sys.stdlib_module_names and module not in {"metaeval", "metaeval_cli"}:
                found.setdefault(module, page)
    return found


def test_the_docs_extra_installs_what_the_executed_pages_import():
    """The site is built in a venv of the ``docs`` extra alone (``.ci/run``, the
    contributing guide): every module an executed page imports comes from it. (Before,
    the build failed on Inspect's page with the docs extra alone; CI hid it by installing
    the test extra first.)"""
    from importlib.metadata import packages_distributions

    closure = docs_extra_closure()
    imports = executed_imports()
    assert {"inspect_ai", "pandas", "numpy"} <= set(imports)  # the scan finds the imports
    providers = packages_distributions()
    missing = {
        module: page
        for module, page in imports.items()
        if not {re.sub(r"[-_.]+", "-", d).lower() for d in providers.get(module, [module])}
        & closure
    }
    assert not missing, f"the docs extra does not install what these pages import: {missing}"


def test_ci_builds_the_docs_in_a_venv_of_the_docs_extra_alone():
    ci = (ROOT / ".ci" / "run").read_text()
    install = re.search(r"(\S+)/bin/pip install -e \"\.\[docs\]\"", ci)
    assert install, "the docs extra is installed in .ci/run"
    venv = install.group(1)
    assert f"python3 -m venv {venv}" in ci and "[test" not in ci.split(f"python3 -m venv {venv}")[1]
    assert f"{venv}/bin/sphinx-build" in ci


def test_the_readme_test_command_is_what_ci_runs_on_every_core():
    """The README's second command is the line .ci/run runs, and it runs the suite on
    every core (pytest-xdist, in the test extra) with a file's tests on one worker; the
    ``slow`` marker is registered for the inner loop (issue 40, item 6)."""
    readme = (ROOT / "README.md").read_text()
    commands = re.search(r"```bash\n(.*?)\n```", readme, re.S)
    assert commands is not None
    lines = commands.group(1).splitlines()
    assert len(lines) == 2
    assert lines[1] in (ROOT / ".ci" / "run").read_text().splitlines()
    assert " -n auto" in lines[1] and "--dist loadfile" in lines[1]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert any(
        d.startswith("pytest-xdist") for d in project["project"]["optional-dependencies"]["test"]
    )
    markers = project["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("slow:") for m in markers)

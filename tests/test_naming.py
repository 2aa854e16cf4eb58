"""One vocabulary (issues 26 and 40), checked on everything public.

- **Parameters**: every public parameter whose name is in ``_vocabulary.PARAMETERS`` has that
  one annotation; a name used with several annotations is in ``PARAMETERS_BY_FUNCTION``
  (its values are the function's own) or in ``SPLIT`` below (a rename still to come).
- **Columns**: every output column of every public function (the runner of
  ``tests/_helpers.py``, shared with ``tests/test_output_attrs.py``) is in
  ``_vocabulary.COLUMNS`` with its one meaning; a column that holds a p-value is ``p_value``,
  ``<stat>_p_value`` or ``p_adjusted``, a probability of an event ``prob_<event>``.
- **help()**: no public signature shows a string annotation.
- **Migration**: every parameter, column, function and constant renamed or removed since
  the surface recorded in ``fixtures/naming/surface_before_issue40.json`` (the public
  functions' parameters and output columns before issue 40) is in the migration table of
  ``CHANGELOG.md``, whose new names exist and whose old names are gone.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import types
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from _helpers import PUBLIC_MODULES, all_outputs, public_functions

import metaeval
from metaeval import _options, _vocabulary
from metaeval.accessor import ACCESSOR_METHODS

ROOT = Path(__file__).resolve().parents[1]
SURFACE = json.loads(
    (Path(__file__).parent / "fixtures" / "naming" / "surface_before_issue40.json").read_text()
)

# ------------------------------------------------------------------ the temporary split
SPLIT: dict[tuple[str, str], str] = {
    # `method` still means the tie rule here (issue 40, item 3, part 2)
    ("normalize_ranks", "method"): "ties= (part 2: the tie rule of a ranking)",
    # the variance components' estimator, of which pool's τ² estimator is one case
    ("facets", "method"): "REML | ML (| ANOVA to come): lme4's REML= for several components",
    # `control` is first everywhere (part 2); these take one control, a str: several
    # controls would need a loop over them in the function
    ("bayes_signed_rank", "control"): "str | Sequence[str] (one control per call today)",
    ("bootstrap_effects", "control"): "str | Sequence[str] (one control per call today)",
    ("correlation_effects", "control"): "str | Sequence[str] (one control per call today)",
    ("ir_columns", "control"): "str | Sequence[str] (one control per call today)",
    ("leaderboard", "control"): "str | Sequence[str] (part 2)",
    ("plan_queries", "control"): "str | Sequence[str] (one control per call today)",
    ("posthoc", "control"): "str | Sequence[str] (part 2)",
    ("ppi", "control"): "str | Sequence[str] (one control per call today)",
    ("facets", "control"): "str | Sequence[str] (one control per call today)",
    ("rank_intervals", "control"): "str | Sequence[str] (part 2)",
    # one type for every seed and every `over`
    ("gosh", "seed"): "int | None like every seed (a Generator too today)",
    ("metareg", "over"): "str | Sequence[str] like every `over` (one column today)",
    ("permutest", "over"): "str | Sequence[str] like every `over` (one column today)",
}
"""(function, parameter) whose name still has another meaning or type than the vocabulary's:
each entry names its rename. The list may only shrink: an entry that no longer differs
fails, so that it is removed when its rename lands."""

CONTROL_ANNOTATION = str | typing.Sequence[str]
"""The one type ``control`` will have (``SPLIT`` lists the functions that differ)."""
FIRST_MEANING = {"control": CONTROL_ANNOTATION}
"""The vocabulary's annotation of ``control``, whose split is still listed in ``SPLIT``
(``ci``, the old name of pooling's ``test``, is left only where ``SPLIT`` says)."""


def _strip_none(annotation: Any) -> Any:
    """``annotation`` without ``None`` (``X | None`` is ``X`` with None meaning "not given")."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = tuple(a for a in typing.get_args(annotation) if a is not type(None))
        if len(args) != len(typing.get_args(annotation)):
            return args[0] if len(args) == 1 else typing.Union[args]  # noqa: UP007
    return annotation


def _same(a: Any, b: Any) -> bool:
    a, b = _strip_none(a), _strip_none(b)
    if a == b:
        return True
    # typing.Sequence and collections.abc.Sequence, Union and |, spelled differently
    return repr(a).replace("typing.", "").replace("collections.abc.", "") == repr(b).replace(
        "typing.", ""
    ).replace("collections.abc.", "")


FUNCTIONS = public_functions()


def _faces() -> dict[str, inspect.Signature]:
    """Every public function's signature and every ``.meta`` method's (``meta.<name>``)."""
    faces = {name: inspect.signature(func) for name, func in FUNCTIONS.items()}
    for name in ACCESSOR_METHODS:
        faces[f"meta.{name}"] = inspect.signature(getattr(pd.DataFrame.meta, name))
    return faces


FACES = _faces()


def _parameters() -> dict[str, dict[str, Any]]:
    """name → {function: annotation} over every face."""
    found: dict[str, dict[str, Any]] = {}
    for func, sig in FACES.items():
        for p in sig.parameters.values():
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self":
                found.setdefault(p.name, {})[func] = p.annotation
    return found


PARAMS = _parameters()


def _split(func: str, name: str) -> bool:
    return (func.removeprefix("meta."), name) in SPLIT


def test_every_vocabulary_parameter_has_its_one_annotation():
    wrong = {
        (func, name): repr(annotation)
        for name, expected in {**_vocabulary.PARAMETERS, **FIRST_MEANING}.items()
        for func, annotation in PARAMS.get(name, {}).items()
        if not _same(annotation, expected) and not _split(func, name)
    }
    assert not wrong, f"annotate these as _vocabulary.PARAMETERS says: {wrong}"


def test_every_parameter_name_used_with_several_annotations_is_accounted_for():
    known = (
        set(_vocabulary.PARAMETERS) | set(_vocabulary.PARAMETERS_BY_FUNCTION) | set(FIRST_MEANING)
    )
    known |= {name for _, name in SPLIT}
    several = {}
    for name, by_func in PARAMS.items():
        kinds = []
        for annotation in by_func.values():
            if not any(_same(annotation, k) for k in kinds):
                kinds.append(annotation)
        if len(kinds) > 1 and name not in known:
            several[name] = sorted(by_func)
    assert not several, (
        "one name, several annotations: give them one (and add the name to "
        f"_vocabulary.PARAMETERS) or list it in PARAMETERS_BY_FUNCTION: {several}"
    )


def test_the_temporary_split_only_shrinks():
    """Every entry of SPLIT still differs from the vocabulary: a stale one fails."""
    meaning = {**_vocabulary.PARAMETERS, **FIRST_MEANING}
    stale = []
    for (func, name), why in SPLIT.items():
        annotation = PARAMS.get(name, {}).get(func, inspect.Parameter.empty)
        if annotation is inspect.Parameter.empty:
            stale.append(f"{func}({name}=) is gone: remove its SPLIT entry ({why})")
        elif name in meaning and _same(annotation, meaning[name]):
            stale.append(f"{func}({name}=) has the vocabulary's type: remove it ({why})")
    assert not stale, stale
    # the names split today, and nowhere else
    assert {name for _, name in SPLIT} <= set(PARAMS)


def test_the_vocabulary_names_its_parameters_once():
    assert not set(_vocabulary.PARAMETERS) & set(_vocabulary.PARAMETERS_BY_FUNCTION)
    # every name of the vocabulary is used (a renamed name leaves no entry behind)
    unused = sorted(set(_vocabulary.PARAMETERS) - set(PARAMS))
    assert not unused, f"not a parameter of any public function: {unused}"
    # `method` is the τ² estimator wherever it is not listed in SPLIT
    for func, annotation in PARAMS["method"].items():
        assert _split(func, "method") or _same(annotation, _options.PoolMethod), func


def test_no_public_signature_shows_a_string_annotation():
    shown = {
        func: [
            p.name
            for p in [*sig.parameters.values()]
            if isinstance(p.annotation, str) and p.annotation
        ]
        + (["return"] if isinstance(sig.return_annotation, str) else [])
        for func, sig in FACES.items()
    }
    shown = {func: names for func, names in shown.items() if names}
    assert not shown, f"string annotations in help(): {shown}"
    assert len(FACES) > 100  # the check sees every public function and method


def test_a_string_annotation_is_evaluated_even_with_a_name_for_type_checking_only():
    namespace: dict[str, Any] = {"pd": pd}
    source = "def f(x: 'pd.DataFrame', y: 'Unknown') -> 'pd.DataFrame': return x"
    # the annotations as `from __future__ import annotations` leaves them: strings
    exec(compile(source, "<test>", "exec", dont_inherit=True), namespace)  # noqa: S102
    sig = inspect.signature(_options.literal_signature(namespace["f"]))
    assert sig.parameters["x"].annotation is pd.DataFrame
    assert sig.parameters["y"].annotation == "Unknown"  # cannot be evaluated: as written
    assert sig.return_annotation is pd.DataFrame


# ------------------------------------------------------------------------ columns
RULE = re.compile(r"^(p_value|[a-z0-9]+(_[a-z0-9]+)*_p_value|p_adjusted)$")
NOT_P = {"p_at_k": "precision at k (list_measures), not a p-value"}
"""Columns that look like p-values by the rule's pattern and are not."""
DATA_NAMED = {
    "gosh().included": "one column per task (the tasks of a subset)",
    "confusion_matrix()": "one column per predicted label",
}
"""Outputs whose columns are named by the data (task names, labels), not by the library."""
CASE_INPUTS = {"g", "size"}
"""Columns the cases of ``tests/_helpers.py`` pass in and get back (a subgroup, a moderator)."""


def _column_names(table: Any) -> list[str]:
    if isinstance(table, xr.Dataset):
        return [str(n) for n in [*table.data_vars, *table.coords]]
    if isinstance(table, pd.Series):
        return [] if table.name is None else [str(table.name)]
    return [str(c) for c in table.columns] + [str(n) for n in table.index.names if n]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, list[str]]:
    tables = all_outputs(tmp_path_factory.mktemp("outputs"))
    return {name: _column_names(t) for name, t in tables.items() if name not in DATA_NAMED}


def looks_like_p(name: str) -> bool:
    name = str(name).lower()
    return (
        name == "p"
        or name.startswith("p_")
        or name.endswith("_p")
        or "pval" in name
        or "p_val" in name
    )


def bad_p_names(columns) -> list[str]:
    return [
        str(c) for c in columns if looks_like_p(c) and not RULE.match(str(c)) and c not in NOT_P
    ]


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("p_value", False),
        ("q_p_value", False),
        ("q_between_p_value", False),
        ("p_adjusted", False),
        ("prob_gain", False),
        ("pi_low", False),
        ("k", False),
        ("p", True),
        ("p_gain", True),
        ("shapiro_p", True),
        ("f_pvalue", True),
        ("homogeneity_p", True),
        ("p_better", True),
        ("pvalue", True),
        ("P_value", True),
    ],
)
def test_the_rule_tells_good_from_bad_names(name, bad):
    assert bool(bad_p_names([name])) is bad


def test_the_outputs_cover_every_public_function(outputs):
    ran = {name.split("(")[0] for name in outputs} | {n.split("(")[0] for n in DATA_NAMED}
    from _helpers import NOT_TABLES

    assert set(FUNCTIONS) - set(NOT_TABLES) <= ran
    assert sum("p_value" in cols for cols in outputs.values()) >= 15


def test_every_output_column_has_one_meaning(outputs):
    unknown = {
        name: sorted(set(cols) - set(_vocabulary.COLUMNS) - CASE_INPUTS)
        for name, cols in outputs.items()
    }
    unknown = {name: cols for name, cols in unknown.items() if cols}
    assert not unknown, (
        "output columns not in _vocabulary.COLUMNS: use a name it has for the same meaning, "
        f"or add the new name with its meaning: {unknown}"
    )


def test_every_column_of_the_vocabulary_is_written(outputs):
    written = {c for cols in outputs.values() for c in cols}
    display = set(_options.display_columns(("effect", "ci_low", "ci_high", "pi_low", "pi_high")))
    unused = sorted(set(_vocabulary.COLUMNS) - written - display)
    assert not unused, f"_vocabulary.COLUMNS names columns no public function writes: {unused}"


def test_every_p_value_column_follows_the_naming_rule(outputs):
    bad = {name: bad_p_names(cols) for name, cols in outputs.items()}
    bad = {name: cols for name, cols in bad.items() if cols}
    assert not bad, (
        "p-value columns are named p_value, <stat>_p_value or p_adjusted; probabilities "
        f"prob_<event>. Rename: {bad}"
    )


def test_k_counts_tasks_only(outputs):
    """``k`` is a number of tasks (pooling); a number of systems is ``n_systems``."""
    for name in ("friedman().table", "rank_report().table"):
        assert "k" not in outputs[name] and "n_systems" in outputs[name], name


# ---------------------------------------------------------------------- migration
def migration_table() -> list[dict[str, str]]:
    """The rows of CHANGELOG.md's migration table (kind, where, old, new, call): ``kind`` is
    parameter, column, constant, flag, default (``where`` then names the parameter after the
    function), function, or moved (a parameter of ``where`` that is now an option of the
    function ``new``); ``new`` is ``—`` for a name removed without a successor."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    start = text.index("#### Migration table")
    rows = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("#"):
            break
        if not line.startswith("|") or set(line) <= set("|- "):
            continue
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if cells[0] == "kind":
            continue
        rows.append(dict(zip(("kind", "where", "old", "new", "call"), cells, strict=True)))
    return rows


def _function(where: str) -> Any:
    module, _, name = where.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _flag_exists(command: str, flag: str) -> bool:
    from metaeval_cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return any(flag in a.option_strings for a in sub.choices[command]._actions)


def test_the_migration_table_covers_every_renamed_name(outputs):
    rows = migration_table()
    kinds = {"moved": "parameter"}  # a parameter that went to another function
    listed = {
        (kinds.get(r["kind"], r["kind"]), r["where"].rpartition(".")[2].split()[-1], r["old"])
        for r in rows
    }
    missing = []
    for func, params in SURFACE["functions"].items():
        if func not in FUNCTIONS:
            if ("function", func, func) not in listed:
                missing.append(f"function {func}")
            continue
        now = inspect.signature(FUNCTIONS[func]).parameters
        missing += [
            f"parameter {func}({p}=)"
            for p in params
            if p not in now and ("parameter", func, p) not in listed
        ]
    for case, columns in SURFACE["columns"].items():
        now = {c for name, cols in outputs.items() if name.split("(")[0] == case for c in cols}
        if not now:  # a function that is gone (listed above)
            continue
        missing += [
            f"column {case}: {c}"
            for c in columns
            if c not in now
            and c not in DATA_COLUMNS_BEFORE.get(case, ())
            and ("column", case, c) not in listed
        ]
    assert not missing, (
        f"renamed or removed without a row in CHANGELOG's migration table: {missing}"
    )


DATA_COLUMNS_BEFORE = {
    "gosh": ("breast_cancer", "digits", "iris", "wine"),
    "confusion_matrix": ("0", "1"),
}
"""Columns named by the data in the recorded surface (see DATA_NAMED)."""


def test_the_migration_table_says_what_is_there_now(outputs):
    wrong = []
    rows = migration_table()
    # a name another row of the same function renames into (leaderboard's method= was the
    # aggregation and is the τ² estimator now, after pool_method=) may stay
    reused = {(r["where"], r["new"]) for r in rows if r["kind"] == "parameter"}
    for row in rows:
        kind, where, old, new = row["kind"], row["where"], row["old"], row["new"]
        if kind == "parameter":
            params = inspect.signature(_function(where)).parameters
            if (new not in params and new != "—") or (old in params and (where, old) not in reused):
                wrong.append(row)
        elif kind == "moved":  # old= of `where` is now an option of the function `new`
            if old in inspect.signature(_function(where)).parameters or not callable(
                _function(new)
            ):
                wrong.append(row)
        elif kind == "default":
            func, _, param = where.partition(" ")
            default = inspect.signature(_function(func)).parameters[param].default
            if str(default) != new:
                wrong.append(row)
        elif kind == "column":
            cols = {c for name, cs in outputs.items() if name.split("(")[0] == where for c in cs}
            if (new not in cols and new != "—") or old in cols:
                wrong.append(row)
        elif kind == "constant":
            module = importlib.import_module(where)
            if not hasattr(module, new) or old in dir(module):
                wrong.append(row)
        elif kind == "flag":
            if not _flag_exists(where.split()[-1], new) or _flag_exists(where.split()[-1], old):
                wrong.append(row)
        elif kind == "function":
            if new != "—" and not callable(_function(new)):
                wrong.append(row)
        else:
            wrong.append(row)
    assert not wrong, f"rows whose new name is missing or whose old name is still there: {wrong}"
    assert migration_table(), "CHANGELOG.md has no migration table"


def test_the_outputs_and_faces_see_the_stage_packages():
    assert {m for m in PUBLIC_MODULES} >= {"metaeval.pooling", "metaeval.ranking"}
    assert np.isfinite(len(FACES))
    assert metaeval.pool is FUNCTIONS["pool"]

"""The ``.meta`` accessor shows each module function's face: its signature without the table,
its docstring, its positional arguments; and it tells table kinds apart."""

from __future__ import annotations

import importlib
import inspect
import re

import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval.accessor import ACCESSOR_METHODS, MetaAccessor


def _function(target: str):
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("name", sorted(ACCESSOR_METHODS))
def test_every_method_has_the_functions_signature_without_the_table(name, scores):
    func = _function(ACCESSOR_METHODS[name][0])
    bound = getattr(scores.meta, name)
    expected = list(inspect.signature(func).parameters.values())[1:]
    assert list(inspect.signature(bound).parameters.values()) == expected
    assert inspect.signature(bound).return_annotation == inspect.signature(func).return_annotation
    assert bound.__doc__ == func.__doc__ and "(**kwargs)" not in str(inspect.signature(bound))
    assert bound.__name__ == func.__name__
    # on the class (what Sphinx documents as DataFrame.meta.<name>): self first
    unbound = getattr(pd.DataFrame.meta, name)
    assert list(inspect.signature(unbound).parameters)[0] == "self"
    assert list(inspect.signature(unbound).parameters.values())[1:] == expected


def test_every_public_method_of_the_accessor_is_listed():
    public = {n for n in vars(MetaAccessor) if not n.startswith("_")}
    assert public == set(ACCESSOR_METHODS) | {"validate"}


def test_options_show_their_values_and_the_first_argument_is_positional(scores):
    params = inspect.signature(scores.meta.pool).parameters
    assert "Literal['EE', 'FE', 'DL'" in str(params["method"].annotation)
    assert params["method"].default == "REML"
    by_position = scores.meta.effects("ctrl")
    by_name = metaeval.effects(scores, control="ctrl")
    pd.testing.assert_frame_equal(by_position, by_name)
    with pytest.raises(TypeError, match="positional"):
        scores.meta.effects("ctrl", "b")  # treatment is keyword-only
    pooled = by_position.meta.pool(method="DL", test="z")
    pd.testing.assert_frame_equal(pooled, metaeval.pool(by_name, method="DL", test="z"))


def test_a_method_of_another_kind_names_the_kind_and_the_way(scores):
    eff = scores.meta.effects("ctrl")
    with pytest.raises(metaeval.TableKindError, match=r"\.meta\.pool\(\) needs an effects table"):
        scores.meta.pool()
    with pytest.raises(
        metaeval.TableKindError,
        match=r"\.meta\.pairwise\(\) needs a compare\(\) table .* or a tukey\(\) table",
    ):
        eff.meta.pairwise()
    with pytest.raises(metaeval.TableKindError, match="Compute effects first"):
        scores.meta.forest()
    assert isinstance(eff.meta.validate(), pd.DataFrame)


def test_the_accessor_does_not_change_the_table(scores):
    before = scores.copy()
    scores.meta.effects("ctrl").meta.pool()
    pd.testing.assert_frame_equal(scores, before)
    assert np.all(scores.columns == before.columns)


# ------------------------------------------------- one table kind (issue 26, item 2)
def _real(kind: str):
    """A table (or result) of ``kind`` made by the library, from the bundled example."""
    scores = metaeval.load_example().query("task in ['iris', 'wine', 'digits']")
    effects = scores.meta.effects("logistic_regression")
    made = {
        "scores": lambda: scores,
        "effects": lambda: effects,
        "pooled": lambda: effects.meta.pool(),
        "compare": lambda: scores.meta.compare("logistic_regression"),
        "tukey": lambda: scores.meta.tukey(),
        "analysis": lambda: scores.meta.analyze("logistic_regression"),
        "posthoc": lambda: scores.meta.posthoc(),
        "bayes": lambda: scores.meta.bayes_signed_rank(control="logistic_regression"),
        "metareg": lambda: effects.assign(x=np.arange(len(effects)) % 3).meta.metareg(mods="x"),
        "friedman": lambda: scores.meta.friedman(),
    }
    return made[kind]()


# what each kind is called in the accessor's and the report's messages
WORDS = {
    "scores": "a scores table",
    "effects": "an effects table",
    "pooled": "a pooled table",
    "compare": "a compare() table",
    "tukey": "a tukey() table",
    "analysis": "an analyze() table",
    "posthoc": "a posthoc() table",
    "bayes": "a bayes_signed_rank() table",
    "metareg": "a metareg() table",
    "friedman": "a friedman() table",
}
WRITTEN = ("effects", "pooled", "compare", "analysis")  # what to_latex() writes


@pytest.mark.parametrize("kind", sorted(WORDS))
def test_the_accessor_and_the_report_tell_a_real_table_of_every_kind_alike(kind):
    """One rule: the kind the accessor finds is the one the report writes, or the one the
    report names when it refuses the table (before, the report had rules of its own and
    refused a tukey() or posthoc() table as "a table with columns [...]")."""
    from metaeval.accessor import table_kind
    from metaeval.report import to_latex

    obj = _real(kind)
    frame = getattr(obj, "table", obj)  # a result class (issue 26, item 1) or a DataFrame
    assert table_kind(obj) == kind
    assert table_kind(frame) == kind
    if kind in WRITTEN:
        assert frame.meta.to_latex() == to_latex(obj) == to_latex(frame)
        return
    if kind != "scores":  # any other result: its table as it is (H6, issue 26 item 3)
        assert to_latex(obj, caption="c") == to_latex(frame, layout="table", caption="c")
    else:  # scores are not a result: refused, naming the kind and the kinds it writes
        with pytest.raises(metaeval.SchemaError) as refused:
            to_latex(obj)
        assert f"this is {WORDS[kind]}" in str(refused.value)
        for written in WRITTEN:  # and it says which kinds it takes
            assert WORDS[written] in str(refused.value)
    with pytest.raises(metaeval.TableKindError, match=re.escape(f"but this is {WORDS[kind]}")):
        frame.meta.to_latex()


def test_a_result_is_asked_for_its_kind_not_sniffed(scores):
    """A result object says its kind; the report writes its table and names its kind."""
    import dataclasses

    from metaeval._results import Result
    from metaeval.accessor import table_kind
    from metaeval.report import to_html, to_latex

    @dataclasses.dataclass(frozen=True, eq=False, repr=False)
    class Effects(Result):
        kind = "effects"

    @dataclasses.dataclass(frozen=True, eq=False, repr=False)
    class Posthoc(Result):
        kind = "posthoc"

    eff = scores.meta.effects("ctrl")
    assert table_kind(Effects(eff)) == "effects"
    assert to_latex(Effects(eff)) == to_latex(eff) == Effects(eff).to_latex()
    assert "<table" in to_html(Effects(eff))  # (its style ids are random: not compared)
    posthoc = Posthoc(scores.meta.effects("ctrl"))  # asked, not told from the columns
    assert table_kind(posthoc) == "posthoc"
    # a posthoc result has no layout: its table as it is, not the effects layout
    assert to_latex(posthoc, caption="c") == to_latex(eff, layout="table", caption="c")
    assert to_latex(posthoc, caption="c") != to_latex(eff, caption="c")
    with pytest.raises(metaeval.SchemaError, match="got a list"):
        to_latex([1, 2])


# --------------------------------------- the dask accessor, from the same entries
def test_the_dask_accessor_has_the_per_task_methods_with_their_functions_face(scores):
    """``DaskMetaAccessor`` is generated from the entries marked ``per_task``: the same
    signature (but ``progress``: dask shows its own), docstring and name as the function;
    ``help(ddf.meta.effects)`` gives ``metaeval.effects``'s docstring."""
    import pydoc

    dd = pytest.importorskip("dask.dataframe")
    from metaeval.accessor import DaskMetaAccessor

    marked = {name for name, entry in ACCESSOR_METHODS.items() if entry.per_task}
    assert marked == {
        "sufficient_statistics",
        "effects",
        "analyze",
        "compare",
        "anova",
        "tukey",
        "means",
    }  # what the dask path computes
    public = {n for n in dir(DaskMetaAccessor) if not n.startswith("_")}
    assert public == marked | {"validate"}
    meta = dd.from_pandas(scores, npartitions=2).meta
    assert type(meta) is DaskMetaAccessor
    for name in sorted(marked):
        func = _function(ACCESSOR_METHODS[name].function)
        bound = getattr(meta, name)
        expected = [
            p for p in list(inspect.signature(func).parameters.values())[1:] if p.name != "progress"
        ]
        assert list(inspect.signature(bound).parameters.values()) == expected, name
        assert (
            inspect.signature(bound).return_annotation == inspect.signature(func).return_annotation
        )
        assert bound.__doc__ == func.__doc__ and bound.__name__ == func.__name__
        assert inspect.getdoc(func).splitlines()[0] in pydoc.render_doc(bound)
        unbound = getattr(DaskMetaAccessor, name)
        assert list(inspect.signature(unbound).parameters)[0] == "self"
    with pytest.raises(TypeError, match="progress"):
        meta.compare("ctrl", progress=True)


def test_tab_completion_offers_the_methods_of_the_tables_kind():
    """``dir(df.meta)`` lists what the table can do (ARCHITECTURE.md §3.2): a scores table
    is not offered ``pool`` or ``forest``; an effects table is not offered ``effects``; the
    hidden methods stay reachable and say what they need."""
    scores = metaeval.load_example().query("task in ['iris', 'wine']")
    effects = scores.meta.effects("logistic_regression")
    for table, kind in ((scores, "scores"), (effects, "effects")):
        offered = {n for n in dir(table.meta) if not n.startswith("_")}
        wanted = {n for n, e in ACCESSOR_METHODS.items() if kind in e.kinds} | {"validate"}
        assert offered == wanted
    assert "pool" not in dir(scores.meta) and "effects" not in dir(effects.meta)
    with pytest.raises(metaeval.TableKindError, match="effects table"):
        scores.meta.pool()

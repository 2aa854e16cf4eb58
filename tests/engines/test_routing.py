"""``engines.route``: how a statistic meets a lazy table, declared once at its definition."""

from __future__ import annotations

import importlib
import inspect

import pandas as pd
import pytest

import metaeval
from metaeval.engines import any_frame, route

pl = pytest.importorskip("polars")
pytest.importorskip("narwhals")


def _scores() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "task": ["a", "a", "b", "b"],
            "query": ["1", "2", "1", "2"],
            "system": "s",
            "metric": "m",
            "value": [1.0, 2.0, 3.0, 4.0],
        }
    )


def _routed(seen: list) -> object:
    @any_frame(lazy=True)
    @route(
        check=lambda table, o: seen.append(("check", dict(o))) or dict(o, k=o["k"] + 1),
        collect=lambda table, o: o["how"] == "collect",
        per_task=lambda table, o: o["how"] == "tasks",
        columns=lambda table, o: ("extra", None, "absent"),
        pieces=lambda table, o: dict(o, how="piece"),
        finish=lambda frame, o: frame.assign(finished=o["how"]),
        engine=lambda table, *, how, k: ("engine", type(table).__name__, how, k),
    )
    def body(scores, *, how="engine", k=0):
        """The body's own docstring."""
        seen.append(("body", type(scores).__name__, how, k))
        return pd.DataFrame(
            {"task": [str(scores["task"].iloc[0])], "metric": ["m"], "n": [len(scores)]}
        ).assign(columns=",".join(sorted(scores.columns)))

    return body


def test_an_in_memory_table_goes_straight_to_the_body():
    seen: list = []
    body = _routed(seen)
    scores = _scores()
    body(scores, how="tasks", k=5)
    assert seen == [("body", "DataFrame", "tasks", 5)]  # no check, no route
    assert body.__doc__ == "The body's own docstring."
    assert list(inspect.signature(body).parameters) == ["scores", "how", "k"]


def test_a_lazy_table_is_checked_first_then_computed_in_its_engine():
    seen: list = []
    out = _routed(seen)(pl.from_pandas(_scores()).lazy())
    assert seen == [("check", {"how": "engine", "k": 0})]  # the defaults bound
    assert out == ("engine", "LazyTable", "engine", 1)  # the options the check returned


def test_a_lazy_table_collected_reaches_the_body_in_pandas():
    seen: list = []
    out = _routed(seen)(pl.from_pandas(_scores()).lazy(), how="collect")
    assert seen[1] == ("body", "DataFrame", "collect", 1)
    assert out["n"].tolist() == [4]


def test_a_lazy_table_task_by_task_runs_the_body_on_each_task():
    seen: list = []
    lazy = pl.from_pandas(_scores().assign(extra=1)).lazy()
    out = _routed(seen)(lazy, how="tasks")
    assert [s for s in seen if s[0] == "body"] == [("body", "DataFrame", "piece", 1)] * 2
    assert out["task"].tolist() == ["a", "b"]
    assert out["n"].tolist() == [2, 2]
    # the columns asked for that the table has, beside the scores columns
    assert set(out["columns"]) == {"extra,metric,query,system,task,value"}
    assert set(out["finished"]) == {"tasks"}  # finish sees the call's options


def test_every_function_that_takes_a_lazy_table_routes_it():
    """A function given lazy tables (``any_frame(lazy=True)``) declares how it handles them
    (``engines.route``), or hands the table on to functions that do."""
    hands_on = {"metaeval.workflows:analyze"}  # its effects() is routed
    found = {}
    for module in ("metaeval", "metaeval.paired", "metaeval.schema", "metaeval.workflows"):
        mod = importlib.import_module(module)
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if getattr(obj, "__any_frame__", {}).get("lazy"):
                found[f"{obj.__module__.rsplit('.', 1)[0]}:{name}"] = obj
    unrouted = sorted(
        n for n, f in found.items() if not hasattr(f.__wrapped__, "__route__") and n not in hands_on
    )
    assert len(found) >= 8, sorted(found)
    assert not unrouted, unrouted
    assert metaeval.effects.__wrapped__.__route__["collect"] is not None

"""The power curves of a plan (issue 28): what power_curves() draws, checked against the
plans built here from a known power function, and the plan as a table (its kind, LaTeX)."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

import metaeval
from metaeval import OptionError, SchemaError
from metaeval._kinds import KINDS, describe_kinds, table_kind
from metaeval.design import PowerResult
from metaeval.plot import power_curves

Z = norm.isf(0.025)  # two-sided 5%


def _power(d: float, n: np.ndarray) -> np.ndarray:
    """The normal approximation of a paired test's power: Φ(d√n − z_{α/2})."""
    return norm.cdf(d * np.sqrt(n) - Z)


def _smallest(d: float, target: float, sizes: np.ndarray) -> int:
    """The smallest size of the grid whose power reaches ``target``: a naive loop."""
    for n in sizes:
        if _power(d, np.array([n]))[0] >= target:
            return int(n)
    raise AssertionError("the grid never reaches the target")


def _plan(d: dict, *, target=0.8, unit="queries", sizes=None, column=None, **keys) -> PowerResult:
    """A plan with one group per (metric, task) of ``d`` (standardized effects)."""
    sizes = np.arange(2, 401) if sizes is None else sizes
    column = column or {"queries": "n", "clusters": "n_clusters", "tasks": "k"}[unit]
    curves, rows = [], []
    for (metric, task), effect in d.items():
        group = {"task": task, "metric": metric, **keys}
        power = _power(effect, sizes)
        curves.append(pd.DataFrame({**group, "size": sizes, "power": power, "target": target}))
        planned = _smallest(effect, target, sizes) if np.isfinite(target) else 40
        rows.append({**group, column: planned, "mde": 0.02, "power": target})
    return PowerResult(pd.DataFrame(rows), curve=pd.concat(curves, ignore_index=True), unit=unit)


THREE = {("nDCG@10", "robust04"): 0.2, ("nDCG@10", "msmarco"): 0.5, ("nDCG@10", "covid"): 0.33}
SIX = {**THREE, **{("AP", t): 0.8 * d for (_, t), d in THREE.items()}}


def _lines(ax, gid):
    return [line for line in ax.lines if line.get_gid() == gid]


def test_lines_are_the_curves_and_dots_the_planned_sizes():
    plan = _plan(THREE, treatment="tasb", control="bm25")
    fig = power_curves(plan)
    (ax,) = fig.axes
    curves = _lines(ax, "power-curve")
    planned = [_smallest(d, 0.8, np.arange(2, 401)) for d in THREE.values()]
    for line, ((_, task), d), n in zip(curves, THREE.items(), planned, strict=True):
        x, y = line.get_data()
        assert line.get_label() == f"{task} (n = {n})"  # one panel: the legend gives n
        np.testing.assert_array_equal(x, np.arange(2, 401))
        np.testing.assert_allclose(y, _power(d, x), rtol=1e-12)  # Φ(d√n − z), recomputed
    # the target line, and one dot per group at its planned size, on its curve
    (target,) = _lines(ax, "power-target")
    assert list(target.get_ydata()) == [0.8, 0.8]
    dots = _lines(ax, "power-planned")
    assert [float(dot.get_xdata()[0]) for dot in dots] == planned == list(plan.table["n"])
    for dot, d, line in zip(dots, THREE.values(), curves, strict=True):
        n, height = float(dot.get_xdata()[0]), float(dot.get_ydata()[0])
        assert height == pytest.approx(_power(d, np.array([n]))[0], rel=1e-12)
        assert height >= 0.8 > _power(d, np.array([n - 1]))[0]  # where it crosses the target
        assert dot.get_color() == line.get_color()
    assert not [t for t in ax.texts if t.get_gid() == "power-planned-label"]
    assert ax.get_xlabel() == "number of queries" and ax.get_ylabel() == "power"
    assert ax.get_ylim() == (0, 1.02)
    assert ax.get_title() == "nDCG@10: tasb vs bm25"  # the keys all groups share
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == [c.get_label() for c in curves] + ["target power 0.80", "planned queries"]


@pytest.mark.parametrize(
    ("unit", "column", "label"),
    [
        ("queries", "n", "number of queries"),
        ("clusters", "n_clusters", "number of clusters"),
        ("tasks", "k", "number of tasks"),
    ],
)
def test_the_unit_names_the_axis_and_the_planned_column(unit, column, label):
    plan = _plan({("m", "t"): 0.4}, unit=unit)
    if unit == "clusters":  # a clustered plan has n (items) too: the dots are its clusters
        plan = plan.replace(table=plan.table.assign(n=plan.table["n_clusters"] * 7))
    ax = power_curves(plan).axes[0]
    assert ax.get_xlabel() == label
    (dot,) = _lines(ax, "power-planned")
    assert (
        dot.get_xdata()[0] == plan.table[column].iloc[0] == _smallest(0.4, 0.8, np.arange(2, 401))
    )


def test_two_metrics_give_a_panel_each_with_one_legend_beside_them(tmp_path):
    plan = _plan(SIX, treatment="tasb", control="bm25")
    fig = power_curves(plan)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == ["nDCG@10", "AP"]
    for ax, metric in zip(axes, ["nDCG@10", "AP"], strict=True):
        dots = _lines(ax, "power-planned")
        expected = [
            _smallest(d, 0.8, np.arange(2, 401)) for (m, _), d in SIX.items() if m == metric
        ]
        assert [float(d.get_xdata()[0]) for d in dots] == expected
        numbers = [t.get_text() for t in ax.texts if t.get_gid() == "power-planned-label"]
        assert sorted(numbers, key=int) == [str(n) for n in sorted(expected)]  # beside the dots
        # a task keeps its colour in every panel
        assert [c.get_color() for c in _lines(ax, "power-curve")] == ["C0", "C1", "C2"]
    assert [t.get_text() for t in fig.legends[0].get_texts()][:3] == [
        "robust04",
        "msmarco",
        "covid",
    ]
    fig.savefig(tmp_path / "six.png", dpi=80)
    renderer = fig.canvas.get_renderer()
    legend = fig.legends[0].get_window_extent(renderer)
    for ax in axes:  # the legend covers no panel
        assert not legend.overlaps(ax.get_window_extent(renderer))
        boxes = [
            t.get_window_extent(renderer) for t in ax.texts if t.get_gid() == "power-planned-label"
        ]
        assert all(not a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
    assert (tmp_path / "six.png").stat().st_size > 5000


def test_close_planned_sizes_get_numbers_that_do_not_touch(tmp_path):
    """Several panels: the numbers stand beside the dots, on further lines when close."""
    d = {(m, f"t{i}"): 0.30 + 0.004 * i for i in range(5) for m in ("AP", "P@10")}  # 79 to 88
    fig = power_curves(_plan(d))
    fig.savefig(tmp_path / "close.png", dpi=80)
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes[:2]:
        boxes = [
            t.get_window_extent(renderer) for t in ax.texts if t.get_gid() == "power-planned-label"
        ]
        assert len(boxes) == 5
        assert all(not a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def test_one_group_and_options(tmp_path):
    plan = _plan({("nDCG@10", "robust04"): 0.25})
    fig = power_curves(plan, title="One task")
    (ax,) = fig.axes
    assert [c.get_label() for c in _lines(ax, "power-curve")] == ["power"]
    assert ax.get_title() == "One task"
    numbers = [t.get_text() for t in ax.texts if t.get_gid() == "power-planned-label"]
    assert numbers == [str(_smallest(0.25, 0.8, np.arange(2, 401)))]  # no legend entry: beside
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        "target power 0.80",
        "planned queries",
    ]
    fig.savefig(tmp_path / "one.png", dpi=80)
    assert (tmp_path / "one.png").stat().st_size > 3000
    bare = power_curves(plan, target=False, planned=False, xlabel="queries judged").axes[0]
    assert not _lines(bare, "power-target") and not _lines(bare, "power-planned")
    assert bare.get_xlabel() == "queries judged"
    assert _lines(power_curves(plan, linewidth=3).axes[0], "power-curve")[0].get_linewidth() == 3


def test_a_plan_that_solved_for_power_has_no_target():
    """target NaN (the plan gave n and the mde): no target line, the dot at the given n."""
    plan = _plan({("m", "t"): 0.3}, target=np.nan)
    ax = power_curves(plan).axes[0]
    assert not _lines(ax, "power-target")
    (dot,) = _lines(ax, "power-planned")
    assert dot.get_xdata()[0] == 40
    assert dot.get_ydata()[0] == pytest.approx(_power(0.3, np.array([40]))[0], rel=1e-12)


def test_plot_method_ax_and_a_filtered_table():
    import matplotlib.pyplot as plt

    plan = _plan(SIX)
    assert len([a for a in plan.plot().axes if a.get_visible()]) == 2  # PowerResult.plot
    fig, ax = plt.subplots()
    one = plan.replace(table=plan.table.query("metric == 'AP'"))
    assert power_curves(one, ax=ax) is ax
    assert len(_lines(ax, "power-curve")) == 3
    assert ax.get_title() == "AP"
    by_task = power_curves(plan, col="task")
    assert [a.get_title() for a in by_task.axes if a.get_visible()] == [
        "robust04",
        "msmarco",
        "covid",
    ]
    assert [c.get_label() for c in _lines(by_task.axes[0], "power-curve")] == ["nDCG@10", "AP"]


def test_a_table_is_not_a_plan():
    plan = _plan(THREE)
    for part in (plan.table, plan.curve):
        with pytest.raises(SchemaError, match="PowerResult.*a DataFrame was passed"):
            power_curves(part)
    with pytest.raises(SchemaError, match="PowerResult.*int was passed"):
        power_curves(3)
    with pytest.raises(SchemaError, match=r"curve lacks the column\(s\) \['size'\]"):
        power_curves(plan.replace(curve=plan.curve.drop(columns="size")))
    with pytest.raises(SchemaError, match=r"no column \['n'\] of the planned queries"):
        power_curves(plan.replace(table=plan.table.drop(columns="n")))
    assert power_curves(plan.replace(table=plan.table.drop(columns="n")), planned=False)


def test_bad_options():
    import matplotlib.pyplot as plt

    plan = _plan(SIX)
    with pytest.raises(OptionError, match=r"`col` must be one of .*'task'.*'bogus'"):
        power_curves(plan, col="bogus")
    with pytest.raises(OptionError, match="col_wrap"):
        power_curves(plan, col_wrap=0)
    _, ax = plt.subplots()
    with pytest.raises(OptionError, match=r"one panel; this plan has 2 values of 'metric'"):
        power_curves(plan, ax=ax)


def test_names_with_dollars_are_shown_literally():
    plan = _plan({("cost ($)", "$5 task"): 0.3, ("cost ($)", "b"): 0.4})
    fig = power_curves(plan)
    ax = fig.axes[0]
    labels = [c.get_label() for c in _lines(ax, "power-curve")]
    n = [_smallest(d, 0.8, np.arange(2, 401)) for d in (0.3, 0.4)]  # 88 and 50
    assert labels == [rf"\$5 task (n = {n[0]})", f"b (n = {n[1]})"]
    assert ax.get_title() == r"cost (\$)"
    fig.canvas.draw()  # mathtext would fail on a lone $


# ------------------------------------------------------------------ the plan as a table
def test_a_plan_is_a_table_kind():
    plan = _plan(THREE)
    assert table_kind(plan) == "power"
    assert describe_kinds(["power"]) == KINDS["power"]
    assert "PowerResult" in KINDS["power"]


def test_to_latex_writes_the_plan_table_as_it_is():
    plan = _plan(THREE)
    tex = metaeval.report.to_latex(plan, fit=False)
    assert (
        tex == plan.to_latex(fit=False) == metaeval.report.to_latex(plan, layout="table", fit=False)
    )
    assert r"\caption{PowerResult}" in tex
    lines = tex.splitlines()
    head = lines[lines.index(r"\toprule") + 1]
    assert head == r"task & metric & n & mde & power \\"
    body = lines[lines.index(r"\midrule") + 1 : lines.index(r"\bottomrule")]
    planned = [_smallest(d, 0.8, np.arange(2, 401)) for d in THREE.values()]
    assert body == [
        f"{t} & nDCG@10 & {n} & 0.020 & 0.800 \\\\"
        for (_, t), n in zip(THREE, planned, strict=True)
    ]
    with pytest.raises(OptionError, match="`show`.*PowerResult"):
        metaeval.report.to_latex(plan, show="ci")


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex installed")
def test_the_plan_table_compiles(tmp_path):
    plan = _plan(SIX, treatment="tasb_$", control="bm25 & co")
    doc = "\n".join(
        [
            r"\documentclass{article}",
            r"\usepackage{booktabs,graphicx}",
            r"\begin{document}",
            plan.to_latex(caption="A plan: 80% power"),
            r"\end{document}",
        ]
    )
    (tmp_path / "t.tex").write_text(doc)
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-3000:]


def test_a_plan_without_group_keys_and_sizes_between_or_beyond_the_curve():
    """A plan of one unnamed group (a tasks plan of one pooled comparison): the dot sits
    on the straight line between the curve's points, or at the target beyond them."""
    curve = pd.DataFrame({"size": [5, 10, 15], "power": [0.5, 0.7, 0.9], "target": 0.8})
    plan = PowerResult(pd.DataFrame({"k": [12], "power": [0.8]}), curve=curve, unit="tasks")
    ax = power_curves(plan).axes[0]
    (dot,) = _lines(ax, "power-planned")
    assert (dot.get_xdata()[0], dot.get_ydata()[0]) == (12, pytest.approx(0.7 + 0.4 * 0.2))
    assert [t.get_text() for t in ax.texts if t.get_gid() == "power-planned-label"] == ["12"]
    assert ax.get_xlabel() == "number of tasks"
    beyond = plan.replace(table=plan.table.assign(k=20))
    (dot,) = _lines(power_curves(beyond).axes[0], "power-planned")
    assert (dot.get_xdata()[0], dot.get_ydata()[0]) == (20, 0.8)
    with pytest.raises(SchemaError, match="2 rows and its curve 1 groups"):
        power_curves(plan.replace(table=pd.concat([plan.table, plan.table])))


def test_an_interval_width_plan_draws_its_expected_widths():
    """plan_queries(test="ci"): the curve is the expected width against n (no power), the
    target is the width asked for, the dots at the planned n."""
    import metaeval
    from metaeval.design import plan_queries

    scores = metaeval.load_example()
    accuracy = scores[scores["metric"] == "accuracy"]
    plan = plan_queries(accuracy, "logistic_regression", treatment="knn", test="ci", width=0.04)
    fig = plan.plot()
    ax = fig.axes[0]
    lines = [line for line in ax.get_lines() if line.get_gid() == "power-curve"]
    assert len(lines) == len(plan.table) == 4
    for line, (_, part) in zip(lines, plan.curve.groupby("task", sort=False), strict=True):
        np.testing.assert_allclose(line.get_ydata(), part.sort_values("size")["width"])
    (target,) = [line for line in ax.get_lines() if line.get_gid() == "power-target"]
    assert target.get_ydata()[0] == pytest.approx(0.04)
    dots = sorted(
        line.get_xdata()[0] for line in ax.get_lines() if line.get_gid() == "power-planned"
    )
    assert dots == sorted(plan.table["n"].astype(float))
    assert ax.get_ylabel() == "expected interval width"

"""Regression tests of the edge-case findings of issue 12, one section per finding.

Each test fails on the code before its fix. References are independent: scipy on
the paired differences, exact rational arithmetic (fractions), hand-worked
values, or the library's own result on the same data without the fault.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from _helpers import NARROW_KH, make_scores
from scipy import stats

import metaeval
from metaeval import (
    DegenerateWarning,
    DependenceWarning,
    MetaEvalWarning,
    OptionError,
    PairingError,
    PairingWarning,
    SchemaError,
)
from metaeval.report import Markup, escape, to_html, to_latex


def pair(x, y, *, task="t", metric="m", queries=None) -> pd.DataFrame:
    """Two systems a (treatment) and b (control) on one task."""
    queries = queries or [f"q{i}" for i in range(len(x))]
    return pd.concat(
        [
            pd.DataFrame(
                {
                    "task": task,
                    "query": queries[: len(v)],
                    "system": s,
                    "metric": metric,
                    "value": np.asarray(v, dtype=float),
                }
            )
            for s, v in (("a", x), ("b", y))
        ],
        ignore_index=True,
    )


def recorded(func, *args, **kwargs):
    """``func(...)`` and the metaeval warnings it issued."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = func(*args, **kwargs)
    return out, [w for w in caught if issubclass(w.category, MetaEvalWarning)]


# ------------------------------------------ 1. a zero difference is exactly 0
def _tied_pair(seed: int, n: int = 47, ties: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """Unequal systems (different means, so different shifts) with ``ties`` equal scores."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0.3, 1, n)
    y = x + rng.normal(0, 1, n)
    y[:ties] = x[:ties]
    return x, y


@pytest.mark.parametrize("seed", range(8))
def test_sign_and_wilcoxon_equal_scipy_on_differences_with_ties(seed):
    x, y = _tied_pair(seed)
    scores = pair(x, y)
    d = x - y
    nonzero = d[d != 0]
    sign = scores.meta.compare(control="b", test="sign").iloc[0]
    ref = stats.binomtest(int((nonzero > 0).sum()), len(nonzero))
    assert sign["statistic"] == pytest.approx((nonzero > 0).mean(), rel=1e-12)
    assert sign["p_value"] == pytest.approx(ref.pvalue, rel=1e-12)
    wil = scores.meta.compare(control="b", test="wilcoxon").iloc[0]
    ref = stats.wilcoxon(d)
    assert wil["statistic"] == ref.statistic
    assert wil["p_value"] == pytest.approx(ref.pvalue, rel=1e-12)


@pytest.mark.parametrize("test", ["sign", "wilcoxon"])
def test_identical_systems_with_an_extra_query_give_nan_with_a_warning(test):
    x = np.random.default_rng(0).uniform(0, 1, 30).round(3)
    scores = pair(np.r_[x, 0.9], x)  # a has one query more: the shifts differ
    (res, caught) = recorded(scores.meta.compare, control="b", test=test)
    assert np.isnan(res["p_value"].iloc[0]) and np.isnan(res["statistic"].iloc[0])
    assert any("all differences zero" in str(w.message) for w in caught)


# ------------------------------- 2. Wilcoxon's method is chosen per pair
def test_wilcoxon_method_is_chosen_per_pair_not_per_call():
    rng = np.random.default_rng(5)
    x = rng.normal(0, 1, 20)
    y_free = x + rng.normal(0.3, 1, 20)  # no ties, no zeros: scipy's exact test
    y_tied = x + np.round(rng.normal(0.3, 1, 20), 1)  # ties among |d|: normal approximation
    scores = pd.concat(
        [pair(x, y_free, metric="free"), pair(x, y_tied, metric="tied")], ignore_index=True
    )
    res = scores.meta.compare(control="b", test="wilcoxon").set_index("metric")
    for metric, y in (("free", y_free), ("tied", y_tied)):
        ref = stats.wilcoxon(x - y)
        assert res.loc[metric, "p_value"] == pytest.approx(ref.pvalue, rel=1e-12), metric
    exact = stats.wilcoxon(x - y_free, method="exact").pvalue
    approx = stats.wilcoxon(x - y_free, method="asymptotic").pvalue
    assert exact != pytest.approx(approx, rel=1e-6)  # the test can tell them apart
    assert res.loc["free", "p_value"] == pytest.approx(exact, rel=1e-12)


# --------------------------------------- 3, 4. smcrp and smcc at the edges
def test_smcrp_with_two_queries_is_nan_with_a_warning():
    scores = pair([0.1, 0.5], [0.2, 0.7])
    (eff, caught) = recorded(scores.meta.effects, control="b", effect="smcrp")
    assert eff[["effect", "variance"]].isna().all(axis=None)
    assert any("c(m)" in str(w.message) and "task='t'" in str(w.message) for w in caught)
    uncorrected = scores.meta.effects(control="b", effect="smcrp", correct=False).iloc[0]
    # d = (0.3 - 0.45) / sqrt((0.08 + 0.125) / 2), r = +1, v = 2(1-r)/n + d^2 (1 + r^2)/(4n)
    d = -0.15 / np.sqrt((0.08 + 0.125) / 2)
    assert uncorrected["effect"] == pytest.approx(d, rel=1e-10)
    assert uncorrected["variance"] == pytest.approx(d**2 * 2 / 8, rel=1e-10)


def test_smcrp_with_r_one_and_equal_means_has_no_zero_variance_and_pools():
    # treatment = (control + mean) / 2: r = +1 and equal means, which differ by rounding
    control = np.array([0.64, 0.27, 0.04, 0.02])
    treatment = 0.5 * control + 0.5 * control.mean()
    assert treatment.mean() - control.mean() != 0  # -2.8e-17: the case of the finding
    scores = pair(treatment, control)
    (eff, caught) = recorded(scores.meta.effects, control="b", effect="smcrp")
    assert np.isnan(eff["variance"].iloc[0]) and np.isnan(eff["effect"].iloc[0])
    assert any("zero sampling variance" in str(w.message) for w in caught)
    other = pair([0.2, 0.6, 0.5, 0.4], [0.1, 0.5, 0.9, 0.3], task="u")
    both = pd.concat([scores, other], ignore_index=True)
    with pytest.warns(DegenerateWarning, match="zero sampling variance"):
        eff = both.meta.effects(control="b", effect="smcrp")
    (pooled, caught) = recorded(eff.meta.pool)
    assert any("left out of pooling" in str(w.message) for w in caught)
    assert pooled["k"].iloc[0] == 1  # task u alone, not a task with all the weight


def test_smcc_with_two_queries_warns_and_uncorrected_is_defined():
    scores = pair([0.1, 0.5], [0.2, 0.7])
    (eff, caught) = recorded(scores.meta.effects, control="b", effect="smcc")
    assert eff[["effect", "variance"]].isna().all(axis=None)
    assert caught and "c(m)" in str(caught[0].message)
    # d_z = mean(d) / sd(d): d = (-0.1, -0.2)
    eff = scores.meta.effects(control="b", effect="smcc", correct=False).iloc[0]
    d_z = -0.15 / np.std([-0.1, -0.2], ddof=1)
    assert eff["effect"] == pytest.approx(d_z, rel=1e-10)
    assert eff["variance"] == pytest.approx(1 / 2 + d_z**2 / 4, rel=1e-10)


# ----------------------------------------------------- 5. scale invariance
def test_bootstrap_p_value_does_not_depend_on_the_scale():
    # 4 queries: about 1 resample in 64 repeats one difference (a flat resample)
    x, y = np.array([0.31, 0.72, 0.05, 0.44]), np.array([0.1, 0.9, 0.3, 0.2])
    p = [
        pair(c * x, c * y).meta.compare(control="b", test="bootstrap", n_resamples=2000, seed=7)
        for c in (1.0, 1e-13, 1e12)
    ]
    assert p[0]["p_value"].iloc[0] == p[1]["p_value"].iloc[0] == p[2]["p_value"].iloc[0]


def test_influence_rstudent_does_not_depend_on_the_scale():
    eff = pd.DataFrame(
        {
            "task": list("abcde"),
            "effect": [0.1, 0.3, 0.2, 0.6, 0.25],
            "variance": [0.01, 0.02, 0.015, 0.01, 0.02],
        }
    )
    base = eff.meta.influence(method="REML")
    for c in (1e-14, 1e10):
        scaled = eff.assign(effect=c * eff["effect"], variance=c**2 * eff["variance"])
        res = scaled.meta.influence(method="REML")
        for col in ("rstudent", "dffits", "cook_d", "cov_r", "hat", "dfbetas"):
            np.testing.assert_allclose(res[col], base[col], rtol=1e-8, err_msg=f"{col} at {c}")


# ----------------------------------------- 8. DL with extreme variances
def test_dl_with_variances_spanning_many_orders_equals_exact_arithmetic():
    y, v = [-1.20148703e10, -5.47547130e9], [3e-3, 3.95784803e17]
    eff = pd.DataFrame({"task": ["a", "b"], "effect": y, "variance": v})
    pooled = eff.meta.pool(method="DL").iloc[0]
    # the DerSimonian-Laird formulas in exact rational arithmetic
    fy, fv = [Fraction(a) for a in y], [Fraction(a) for a in v]
    w = [1 / a for a in fv]
    sw = sum(w)
    mean = sum(a * b for a, b in zip(w, fy, strict=True)) / sw
    q = sum(a * (b - mean) ** 2 for a, b in zip(w, fy, strict=True))
    tau2 = (q - 1) / (sw - sum(a * a for a in w) / sw)
    ws = [1 / (a + tau2) for a in fv]
    mu = sum(a * b for a, b in zip(ws, fy, strict=True)) / sum(ws)
    assert pooled["tau2"] == pytest.approx(float(tau2), rel=1e-9)
    assert pooled["effect"] == pytest.approx(float(mu), rel=1e-9)
    assert pooled["se"] == pytest.approx(float(1 / sum(ws)) ** 0.5, rel=1e-9)


# ------------------------------------------------ 9. column-name collisions
@pytest.mark.parametrize(
    "column", ["n", "se", "z", "mean_treatment", "effect_type", "r", "rel_change", "r_ci_low"]
)
def test_task_level_columns_named_like_output_columns_are_refused(rng, column):
    scores = make_scores(rng)
    scores[column] = scores["task"].map({"t1": 1.0, "t2": 2.0, "t3": 3.0, "t4": 4.0})
    before = scores.copy()
    with pytest.raises(SchemaError, match=f"'{column}'"):
        scores.meta.effects(control="ctrl", effect="corr")
    pd.testing.assert_frame_equal(scores, before)


def test_pool_weights_and_influence_refuse_columns_they_would_overwrite(rng):
    eff = make_scores(rng).meta.effects(control="ctrl")
    with pytest.raises(SchemaError, match="'weight'"):
        eff.assign(weight=1.0).meta.weights()
    with pytest.raises(SchemaError, match="'hat'"):
        eff.assign(hat=1.0).meta.influence()
    with pytest.raises(SchemaError, match="'tau2'"):
        eff.assign(tau2="x").meta.pool(groups="tau2")
    with pytest.raises(SchemaError, match="'q'"):
        eff.assign(q="x").meta.pool(by="q")


# ------------------------------------------------------- 10. empty tables
@pytest.mark.parametrize("call", ["effects", "compare", "anova", "tukey", "means", "validate"])
def test_an_empty_scores_table_is_a_schema_error(rng, call):
    empty = make_scores(rng).iloc[:0]
    kwargs = {"control": "ctrl"} if call == "effects" else {}
    with pytest.raises(SchemaError, match="no rows"):
        getattr(empty.meta, call)(**kwargs)


# ------------------------------------------------ 11. key element types
def test_key_columns_must_hold_strings(rng):
    scores = make_scores(rng)
    floats = scores.assign(query=pd.Series(np.arange(len(scores)) / 2, dtype=object))
    with pytest.raises(SchemaError, match=r"'query' holds values that are not strings \(float\)"):
        floats.meta.effects(control="ctrl")
    mixed = scores.astype({"system": object})
    mixed.loc[mixed["system"] == "a", "system"] = 1  # "1"-like ids beside names
    with pytest.raises(SchemaError, match=r"'system' holds values that are not strings \(int\)"):
        mixed.meta.effects(control="ctrl")
    clash = scores.astype({"system": object})
    clash.loc[clash["system"] == "a", "system"] = "1"
    clash.loc[clash["system"] == "b", "system"] = 1  # "1" and 1 would become one system
    with pytest.raises(SchemaError, match="not strings"):
        clash.meta.effects(control="ctrl")
    with pytest.raises(SchemaError, match="not strings"):
        metaeval.validate_scores(clash)


def test_integer_ids_of_any_dtype_become_strings(rng):
    scores = make_scores(rng)
    scores["query"] = scores["query"].str[1:]
    expected = scores.meta.effects(control="ctrl")
    for ids in (
        scores["query"].astype(int).astype(object),  # object column of Python ints
        scores["query"].astype(int).astype("category"),  # integer categories
    ):
        got = scores.assign(query=ids).meta.effects(control="ctrl")
        pd.testing.assert_frame_equal(got, expected)


# ------------------------------------------------ 12. untyped crashes
def test_duplicated_column_names_are_a_schema_error(rng):
    scores = make_scores(rng)
    scores.columns = ["task", "query", "system", "value", "value"]
    with pytest.raises(SchemaError, match="duplicated column names"):
        scores.meta.effects(control="ctrl")


def test_means_with_an_unused_task_category(rng):
    scores = make_scores(rng)
    expected = scores.meta.means()
    cat = scores.astype({"task": "category"})
    cat["task"] = cat["task"].cat.add_categories(["unused"])
    got = cat.meta.means()
    pd.testing.assert_frame_equal(got, expected)


def test_influence_on_an_all_nan_table_gives_nan_with_warnings(rng):
    eff = make_scores(rng).meta.effects(control="ctrl", effect="md").assign(effect=np.nan)
    (res, caught) = recorded(eff.meta.influence)
    assert res["rstudent"].isna().all() and not res["influential"].any()
    assert any("k = 0" in str(w.message) for w in caught)


@NARROW_KH
@pytest.mark.parametrize("render", [to_latex, to_html, metaeval.report.style])
def test_pooled_tables_with_subgroups_or_groups_render(rng, render):
    scores = make_scores(rng)
    scores["domain"] = scores["task"].map({"t1": "x", "t2": "x", "t3": "y", "t4": "y"})
    eff = scores.meta.effects(control="ctrl")
    out = render(eff.meta.pool(by="domain"))
    text = out if isinstance(out, str) else out.to_html()
    assert "Pooled: x" in text and "Pooled: y" in text
    text = render(eff, pooled=eff.meta.pool(by="domain"))
    text = text if isinstance(text, str) else text.to_html()
    assert "Pooled: x" in text and "t4" in text


def test_colliding_rows_of_a_report_table_are_a_schema_error(rng):
    eff = make_scores(rng).meta.effects(control="ctrl")
    twice = pd.concat([eff, eff], ignore_index=True)
    with pytest.raises(SchemaError, match="share a cell"):
        to_latex(twice)


def test_duplicate_keys_with_a_non_unique_index_are_reported(rng):
    scores = make_scores(rng).iloc[:6]
    twice = pd.concat([scores, scores])  # the index repeats too
    with pytest.raises(SchemaError, match="share their") as err:
        twice.meta.validate()
    assert err.value.failure_cases["row"].tolist()[:2] == [0, 1]
    with pytest.raises(SchemaError, match="share their"):
        twice.meta.effects(control="ctrl")


def test_names_equal_after_unicode_normalization_render(rng):
    scores = make_scores(rng, metrics=("m",), tasks={"t1": 10, "t2": 12})
    scores["task"] = scores["task"].map({"t1": "caf\u00e9", "t2": "cafe\u0301"})
    eff = scores.meta.effects(control="ctrl")
    for text in (to_latex(eff), to_html(eff)):
        assert "caf\u00e9" in text and "cafe\u0301" in text


def test_leave_one_out_and_influence_leave_the_warning_filters_alone(rng, monkeypatch):
    import types

    eff = make_scores(rng).meta.effects(control="ctrl")

    def forbidden(*args, **kwargs):
        raise AssertionError("warnings.catch_warnings changes the filters of every thread")

    stub = types.SimpleNamespace(catch_warnings=forbidden, simplefilter=forbidden)
    for module in (metaeval.pooling, metaeval.ranking):
        monkeypatch.setattr(module, "warnings", stub, raising=False)
    with pytest.warns(DependenceWarning) as record:
        eff.meta.leave_one_out(over=["task", "metric"])
        eff.meta.influence(over=["task", "metric"])
    assert sum(issubclass(w.category, DependenceWarning) for w in record) == 2  # one per call


def test_threads_get_the_single_threaded_results_and_warnings(rng):
    eff = make_scores(rng).meta.effects(control="ctrl")
    expected = eff.meta.influence()
    results, errors = [], []

    def work():
        try:
            for _ in range(3):
                eff.meta.pool(over=["task", "metric"])  # one DependenceWarning each
                results.append(eff.meta.influence())
                eff.meta.leave_one_out(over=["task", "metric"])  # one more each
        except BaseException as err:  # noqa: BLE001 - collected for the main thread
            errors.append(err)

    # warnings are recorded here, once, for all threads (pytest.warns in threads is not safe)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors
    assert sum(issubclass(w.category, DependenceWarning) for w in caught) == 4 * 3 * 2
    assert len(results) == 12
    for res in results:
        pd.testing.assert_frame_equal(res, expected)


def test_dependence_warning_only_when_a_task_has_several_metrics(rng):
    eff = make_scores(rng).meta.effects(control="ctrl")
    one_each = eff[(eff["metric"] == "m1") & eff["task"].isin(["t1", "t2"])]
    one_each = pd.concat([one_each, eff[(eff["metric"] == "m2") & eff["task"].isin(["t3", "t4"])]])
    (_, caught) = recorded(one_each.meta.pool, over=["task", "metric"])
    assert not [w for w in caught if issubclass(w.category, DependenceWarning)]
    with pytest.warns(DependenceWarning):
        eff.meta.pool(over=["task", "metric"])


def test_same_system_as_treatment_and_control_is_a_pairing_error(rng):
    with pytest.raises(PairingError, match="same system"):
        make_scores(rng).meta.effects(control="a", treatment="a")


# -------------------------------------------------- 14. LaTeX and HTML
EVIL = "bm25_v2 50% \\write18{touch PWNED}\n\n\\input{/etc/passwd} <script>x</script>"


@NARROW_KH
def test_every_string_in_latex_and_html_is_escaped(rng):
    scores = make_scores(rng, systems=("ctrl", EVIL))
    eff = scores.meta.effects(control="ctrl")
    tex = to_latex(eff, pooled=eff.meta.pool(), caption=f"Against {EVIL}")
    assert "\\write18" not in tex and "\\input" not in tex and "\n\n" not in tex
    assert r"bm25\_v2 50\% \textbackslash{}write18\{touch PWNED\}" in tex
    page = to_html(eff, caption=f"Against {EVIL}")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert to_latex(eff, caption=Markup(r"Effects, $\alpha$")).count(r"$\alpha$") == 1
    assert escape(EVIL, "latex") == metaeval.report.escape_latex(EVIL)
    with pytest.raises(OptionError, match="label"):
        to_latex(eff, label="tab:}\\write18{x}")
    with pytest.raises(OptionError, match="position"):
        to_latex(eff, position="]\\write18{x}")


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex installed")
def test_names_cannot_run_commands_under_shell_escape(rng, tmp_path, capsys):
    evil = "ctl\n\\immediate\\write18{touch PWNED}"  # a caption, a note and a table cell
    scores = make_scores(rng, systems=(evil, "b"))
    path = tmp_path / "scores.csv"
    scores.to_csv(path, index=False)
    tex_file = tmp_path / "table.tex"
    from metaeval_cli import main

    code = main(
        ["meta", str(path), "--control", evil, "--latex", str(tex_file), "--format", "latex"]
    )
    printed = capsys.readouterr().out
    assert code == 0
    doc = "\n".join(
        [
            r"\documentclass{article}",
            r"\usepackage{booktabs,graphicx}",
            r"\begin{document}",
            tex_file.read_text(),
            printed,
            r"\end{document}",
        ]
    )
    (tmp_path / "doc.tex").write_text(doc)
    run = subprocess.run(
        ["pdflatex", "-shell-escape", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:]
    assert not (tmp_path / "PWNED").exists()


@NARROW_KH
def test_figures_show_names_with_dollar_signs_literally(rng):
    import matplotlib.pyplot as plt

    scores = make_scores(rng, systems=("ctrl", r"$\foo$ a$b"), metrics=("m",))
    scores["task"] = scores["task"].replace({"t1": r"$\frac{1}{0}$"})
    fig = scores.meta.effects(control="ctrl").meta.forest()
    fig.canvas.draw()  # mathtext would fail here: Unknown symbol \foo
    texts = [t.get_text() for t in fig.findobj(plt.Text)]
    assert r"\$\frac{1}{0}\$" in texts
    fig = scores.meta.compare(control=None).meta.pairwise()
    fig.canvas.draw()


def test_console_latex_notes_are_one_escaped_line():
    from metaeval_cli._console import Table, render

    text = render(
        [Table("t\\write18{x}", pd.DataFrame({"a": ["x\ny"]}))],
        "latex",
        notes=["control: c\n\\write18{touch x}"],
    )
    assert "\\write18" not in text
    assert text.splitlines()[0] == r"% control: c \textbackslash{}write18\{touch x\}"


def test_pairing_warning_is_still_issued_for_rows_left_out(rng):
    scores = make_scores(rng, drop=0.05)
    with pytest.warns(PairingWarning):
        scores.meta.effects(control="ctrl")

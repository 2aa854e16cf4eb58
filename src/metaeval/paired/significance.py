"""Per-task significance tests, for every task, metric and pair of systems at once.

``compare()`` tests each (treatment, control) pair on each task and metric with a
paired t-test, the Wilcoxon signed-rank test, the exact sign test, Fisher's
randomization test, the paired studentized bootstrap test or, for 0/1 scores,
the exact (or mid-p) McNemar test with Newcombe's interval. (``anova()``,
``tukey()``, which treat all systems of a task together, are in
:mod:`metaeval.paired.anova`, ``means()`` in :mod:`metaeval.paired.means`.)

The two resampling tests draw their random signs and resample counts from
streams tied to the seed, the task and the resample number (see
:mod:`metaeval._resampling`), and evaluate them for every pair and task with
batched matrix products, so that the same ``seed`` gives the same p-values in
any process and however the work is chunked. p-values count the observed
statistic among the resamples, p = (1 + #{T* at least as extreme as T})/(1 + B),
so they are never 0.

References
----------
Smucker, M. D., Allan, J., & Carterette, B. (2007). A comparison of statistical
significance tests for information retrieval evaluation. CIKM '07.
doi:10.1145/1321440.1321528
Sakai, T. (2006). Evaluating evaluation metrics based on the bootstrap. SIGIR '06.
doi:10.1145/1148170.1148261
Sakai, T. (2018). *Laboratory Experiments in Information Retrieval*. Springer.
doi:10.1007/978-981-13-1199-4
Carterette, B. (2012). Multiple testing in statistical analysis of systems-based
information retrieval experiments. *ACM TOIS*, 30(1). doi:10.1145/2094072.2094076
Efron, B., & Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*, §16.4.
Chapman & Hall.
Newcombe, R. G. (1998). Improved confidence intervals for the difference between
binomial proportions based on paired data. *Statistics in Medicine*, 17(22),
2635–2650. doi:10.1002/(SICI)1097-0258(19981130)17:22<2635::AID-SIM954>3.0.CO;2-C
Fagerland, M. W., Lydersen, S., & Laake, P. (2013). The McNemar test for binary
matched-pairs data: mid-p and asymptotic are better than exact conditional. *BMC
Medical Research Methodology*, 13, 91. doi:10.1186/1471-2288-13-91
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .._docs import fill_doc
from .._multiplicity import ADJUSTMENTS, adjust_in_table
from .._options import (
    ADJUST_FAMILIES,
    ADJUST_FAMILY_KEYS,
    ALTERNATIVES,
    COMPARE_FIRST,
    COMPARE_TESTS,
    DEFAULT_RESAMPLES,
    AdjustFamily,
    Adjustment,
    Alternative,
    CompareTest,
    answer_first,
    literal_signature,
)
from ..engines import any_frame, first_pass, route
from ..errors import (
    DegenerateWarning,
    OptionError,
    check_alpha,
    check_option,
    check_resamples,
    resolve_seed,
    warn,
)
from ..schema import REPLICATE
from . import _resampling as rs
from ._layout import SAFE_MAGNITUDE, Layout, layout
from .alternatives import (
    AtLeast,
    as_extreme,
    critical_value,
    open_side,
    oriented,
    p_value,
    tail_level,
)
from .clusters import cluster_ids, clustered_t
from .effect_size import effect_sizes, paired_groups, warn_undefined
from .means import check_binary, wilson_interval
from .replicates import REPLICATES_AVERAGED, has_replicates
from .sufficient import select_systems, statistics_of, sufficient_statistics

__all__ = ["compare"]

_ORDER = ("metric", "treatment", "control", "task")
#: The columns compare() writes besides its keys.
COMPARE_RESULTS = (
    "test",
    "n",
    "mean_treatment",
    "mean_control",
    "diff",
    "statistic",
    "p_value",
    "p_adjusted",
    "ci_low",
    "ci_high",
    "moe",
    "effect_size",
    "se",
    "df",
    "n_clusters",
    "design_effect",
    "n_discordant",
    "n_treatment_only",
    "n_control_only",
)
_MCNEMAR = ("mcnemar", "mcnemar_midp")
_COUNTS = ("n_discordant", "n_treatment_only", "n_control_only")  # McNemar's


@any_frame(lazy=True)
@route(  # else the t-test from sums computed in the engine (sufficient_statistics)
    check=lambda scores, o: _lazy_options(o),
    per_task=lambda scores, o: _per_query(scores, o),
    pairs=("treatment", "control"),
    columns=lambda scores, o: (o["cluster"], REPLICATE),
    pieces=lambda scores, o: _task_options(scores, o),
    finish=lambda frame, o: adjust_family(frame, o["adjust"], o["family"]),
)
@literal_signature
@fill_doc
def compare(
    scores: pd.DataFrame,
    control: str | Sequence[str] | None = None,
    *,
    treatment: str | Sequence[str] | None = None,
    test: CompareTest = "t",
    alternative: Alternative = "two-sided",
    n_resamples: int = DEFAULT_RESAMPLES,
    exact: bool = False,
    seed: int | None = None,
    adjust: Adjustment | None = None,
    family: AdjustFamily = "pairs",
    alpha: float = 0.05,
    progress: bool | None = None,
    cluster: str | None = None,
) -> pd.DataFrame:
    """Paired significance test of every (treatment, control) pair on every task and metric.

    Parameters
    ----------
    {scores_lazy}
    control, treatment : str, list of str or None
        As in :func:`metaeval.effects`; ``control=None`` tests every ordered pair.
    test : {"t", "wilcoxon", "sign", "randomization", "bootstrap", "mcnemar", "mcnemar_midp"}, default "t"
        - ``t``: paired Student's t on the differences d = treatment − control.
        - ``wilcoxon``: Wilcoxon signed-rank test, :func:`scipy.stats.wilcoxon` with
          its defaults (zero differences dropped, no continuity correction, exact for
          n ≤ 50 without ties, else normal with the tie correction).
        - ``sign``: exact binomial test of the share of positive differences
          among the nonzero ones (as :func:`scipy.stats.binomtest`).
        - ``randomization``: Fisher's paired randomization test: the sign of each
          difference is flipped at random; the statistic is the mean difference.
        - ``bootstrap``: paired studentized bootstrap test with the shift method
          (Sakai 2006; Efron & Tibshirani 1993 §16.4).
        - ``mcnemar``: exact McNemar test, for 0/1 scores only, with Newcombe's
          (1998, method 10) interval of the difference of the paired proportions;
          ``mcnemar_midp``: the same with the mid-p value (Fagerland et al. 2013).
          The statistic is b − c of the discordant queries (:ref:`tests-mcnemar`).
    alternative : {"two-sided", "greater", "less"}, default "two-sided"
        "greater": the treatment scores higher than the control.
    {n_resamples}
        Of the randomization and bootstrap tests; not used with ``exact=True``.
    exact : bool, default False
        With ``test="randomization"``: exact p-values from all 2^n sign flips of each
        task's n ≤ 20 queries (else an :class:`~metaeval.OptionError`); ``n_resamples``
        and ``seed`` are then not used (:ref:`tests-maxt`).
    {seed}
    adjust : {"holm", "bonferroni", "fdr_bh", "maxt"}, optional
        Adjust the p-values over each ``family`` (NaN p-values not counted), adding
        ``p_adjusted``: as statsmodels' ``multipletests`` (:func:`adjust_pvalues`), or
        Westfall–Young's single-step max-T (``test="randomization"`` only, every pair
        of a task flipped with the same signs: :ref:`tests-maxt`).
    family : {"pairs", "tasks", "metrics", "all"}, default "pairs"
        The tests adjusted together: the (treatment, control) pairs of one task and
        metric (with several controls, every treatment against every control), those of
        every task of one metric, of every metric on one task, or every test. Needs
        ``adjust``; ``"maxt"`` takes ``"pairs"`` only. When every family holds one
        test, a :class:`~metaeval.DegenerateWarning` names the wider families.
    {alpha}
    {progress}
    {cluster}
        With ``test="t"`` only: the clustered standard error of the mean difference
        (Miller 2024, App. A) and t on C − 1 degrees of freedom; the output gains
        ``n_clusters`` and ``design_effect`` (:ref:`tests-clusters`).

    Returns
    -------
    pandas.DataFrame
        One row per ``(metric, treatment, control, task)`` with paired queries,
        columns (the answer first) ``metric, treatment, control, task``, ``diff``
        (mean difference), ``ci_low, ci_high`` (the t interval of the mean difference,
        one-sided for one-sided alternatives, as scipy's; Newcombe's for McNemar),
        ``p_value`` (``p_adjusted``), ``effect_size``: d_z = mean difference / SD of
        the differences (elinor's "ES"), then ``test, n, mean_treatment,
        mean_control``, ``statistic`` (t; W; the share of positive differences; the
        mean difference; the studentized t; b − c), ``moe`` = t_{α/2, n−1}·``se``,
        ``se`` = √(V/n) and ``df`` = n − 1 (clustered with ``cluster=``; NaN for
        McNemar), and for McNemar ``n_discordant, n_treatment_only, n_control_only``.
        ``attrs`` hold ``test``, ``alternative``, ``alpha``, ``seed``, ``adjust``,
        ``family``, ``n_resamples`` and ``exact``; with a ``replicate`` column also
        ``replicates``: each system's scores are averaged per query over its
        replicates before pairing, and the tests do not see the variance between
        replicates (:func:`metaeval.effects` adds it).

        A system is never paired with itself. Swapping treatment and control (and
        ``"greater"`` with ``"less"``) negates ``diff``, ``effect_size``, the interval
        and the statistic and keeps the p-value.

    Warns
    -----
    metaeval.PairingWarning
        Queries that only one system of a pair has are left out of that pair.
    metaeval.DegenerateWarning
        Naming the groups whose result is NaN: fewer than 2 paired queries (with one,
        ``diff`` is its difference), zero variance of the differences (t, bootstrap),
        all differences zero (Wilcoxon, sign test); with ``cluster=``, paired queries
        all in one cluster or a clustered variance of 0 (``diff`` is kept).

    References
    ----------
    Westfall, P. H., & Young, S. S. (1993). *Resampling-Based Multiple Testing*.
    Wiley. ISBN 978-0-471-55761-6
    Boytsov, L., Belova, A., & Westfall, P. (2013). Deciding on an adjustment for
    multiplicity in IR experiments. *SIGIR '13*.

    Examples
    --------
    >>> import metaeval
    >>> res = metaeval.load_example().meta.compare(control="logistic_regression",
    ...                                            treatment="naive_bayes", test="t")
    >>> res.query("metric == 'accuracy'")[["task", "diff", "statistic", "p_value"]].round(4)
                task    diff  statistic  p_value
    0  breast_cancer -0.0404    -4.0578   0.0001
    1         digits -0.1185   -14.7030   0.0000
    2           iris  0.0000     0.0000   1.0000
    3           wine -0.0112    -0.8157   0.4158

    Two baselines as one family, adjusted by max-T on 2,000 sign flips:

    >>> iris = metaeval.load_example().query("task == 'iris'")
    >>> res = metaeval.compare(iris, control=["logistic_regression", "naive_bayes"],
    ...                        test="randomization", adjust="maxt", n_resamples=2000, seed=1)
    >>> bool((res["p_adjusted"] >= res["p_value"]).all())
    True
    """
    from scipy import stats as sps

    alpha, n_resamples, seed = _checked(
        test, alternative, adjust, alpha, n_resamples, exact, family, cluster, seed
    )
    resampled = test == "bootstrap" or (test == "randomization" and not exact)
    if test in _MCNEMAR:
        check_binary(scores, f"compare(test={test!r})")

    if test == "t":  # from the sums alone (routed: a lazy table's computed in its engine)
        lay, ds = None, sufficient_statistics(scores, control=control, treatment=treatment)
    else:
        lay = layout(scores, keep_raw=True)
        ds = statistics_of(lay, control=control, treatment=treatment)
    keep = paired_groups(ds)
    md, problems = effect_sizes(ds, effect="md", alpha=alpha)
    n = md["n"].astype(float)
    se = md["se"]  # SD of differences / √n
    df = n - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        t_stat = md["z"]  # effect / se, computed where both are representable
        crit = xr.apply_ufunc(lambda d: critical_value(sps.t(d), alpha, alternative), df)
        p_t = xr.apply_ufunc(lambda x, d: p_value(x, sps.t(d), alternative), t_stat, df)
        low, high = open_side(
            md["effect"] - crit * se, md["effect"] + crit * se, alternative, -np.inf, np.inf
        )
    out = xr.Dataset(
        {
            "n": md["n"],
            "mean_treatment": md["mean_treatment"],
            "mean_control": md["mean_control"],
            # one paired query: its difference is the mean difference, nothing else is defined
            "diff": md["effect"].where(n >= 2, md["mean_treatment"] - md["mean_control"]),
            "statistic": t_stat,
            "p_value": p_t,
            "ci_low": low,
            "ci_high": high,
            "moe": crit * se,
            "se": se,
            "df": df,
            "effect_size": md["effect"] / (se * np.sqrt(n)),
        }
    )
    undefined = problems["fewer than 2 paired queries"]
    zero_var = problems["zero variance of the differences (effect kept, variance NaN)"]
    reasons = {"fewer than 2 paired queries": undefined}
    if test in ("t", "bootstrap"):
        reasons["zero variance of the differences (t undefined)"] = zero_var & ~undefined
    if test != "t":
        stat, p, extra = _per_query_tests(
            lay,
            ds,
            test,
            alternative,
            n_resamples,
            seed,
            progress,
            observed_t=t_stat,
            exact=exact,
            maxt=adjust == "maxt",
        )
        out["statistic"], out["p_value"] = stat, p
        if adjust == "maxt":
            out["p_adjusted"] = extra.pop("p_maxt")
        if test in _MCNEMAR:
            counts = extra.pop("counts")
            b, c = counts.sel(count="b", drop=True), counts.sel(count="c", drop=True)
            out["n_discordant"], out["n_treatment_only"], out["n_control_only"] = b + c, b, c
            out["ci_low"], out["ci_high"] = _newcombe(out, b, c, alpha, alternative)
            for name in ("moe", "se", "df"):  # Newcombe's interval: no SE behind it
                out[name] = xr.full_like(out[name], np.nan)
        reasons.update({k: v & ~undefined for k, v in extra.items()})  # one reason per group
    bad = xr.zeros_like(keep)
    for mask in reasons.values():
        bad = bad | mask
    for name in ("statistic", "p_value", "p_adjusted"):
        if name in out:
            out[name] = out[name].where(~bad)
    keep_flat = keep.transpose(*_ORDER).values.ravel()
    frame = out.to_dataframe(dim_order=list(_ORDER)).reset_index()[keep_flat]
    if test in _MCNEMAR:
        frame = frame.astype(dict.fromkeys(_COUNTS, int))
    frame.insert(4, "test", test)
    frame = frame.reset_index(drop=True)
    if cluster is not None:
        frame = clustered_t(frame, scores, cluster, alternative, alpha)
    if adjust == "maxt":
        frame.insert(frame.columns.get_loc("p_value") + 1, "p_adjusted", frame.pop("p_adjusted"))
    warn_undefined(f"test={test!r}", reasons, keep, _ORDER)
    frame = answer_first(frame, COMPARE_FIRST, COMPARE_RESULTS)
    frame.attrs.update(
        test=test,
        alternative=alternative,
        alpha=alpha,
        seed=seed,
        adjust=adjust,
        n_resamples=n_resamples if resampled else None,
        exact=exact,
    )
    if has_replicates(scores):
        frame.attrs["replicates"] = REPLICATES_AVERAGED
    return adjust_family(frame, adjust, family)


_FAMILY_WORDS = {
    "pairs": "the pairs of one task and metric",
    "tasks": "every task of one metric",
    "metrics": "every metric of one task",
    "all": "every test",
}


def adjust_family(frame: pd.DataFrame, adjust: str | None, family: str) -> pd.DataFrame:
    """``frame`` (a :func:`compare` result) with ``p_adjusted`` by ``adjust`` within the
    families of ``family`` (max-T's own column kept) and ``attrs["adjust"]``,
    ``attrs["family"]``; a :class:`~metaeval.DegenerateWarning` when every family holds
    one test. One place for the in-memory, lazy and dask results (these two compute the
    tasks one at a time, so a family across tasks is adjusted here, on the whole)."""
    frame.attrs.update(adjust=adjust, family=family)
    if adjust is None:
        return frame
    if adjust != "maxt":
        adjusted = adjust_in_table(frame, list(ADJUST_FAMILY_KEYS[family]), adjust)
        if "p_adjusted" in frame.columns:
            frame["p_adjusted"] = adjusted
        else:
            frame.insert(frame.columns.get_loc("p_value") + 1, "p_adjusted", adjusted)
    tested = frame[np.isfinite(frame["p_value"].to_numpy(dtype=float))]

    def largest(name: str) -> int:  # the largest family of `name`
        keys = list(ADJUST_FAMILY_KEYS[name])
        return int(tested.groupby(keys, observed=True).size().max()) if keys else len(tested)

    if len(tested) and largest(family) == 1:
        wider = [f for f in ADJUST_FAMILIES if f != family and largest(f) > 1]
        if adjust == "maxt":
            wider = []  # max-T adjusts within a task only
        advice = (
            "; adjust over more tests with "
            + " or ".join(f"family={f!r} ({_FAMILY_WORDS[f]})" for f in wider)
            + " (--family in the metaeval command)"
            if wider
            else ""
        )
        warn(
            f"adjust={adjust!r} changes nothing: every family of family={family!r} "
            f"({_FAMILY_WORDS[family]}) holds one test, so p_adjusted equals p_value{advice}.",
            DegenerateWarning,
        )
    return frame


def _checked(
    test: Any,
    alternative: Any,
    adjust: Any,
    alpha: Any,
    n_resamples: Any,
    exact: Any,
    family: Any,
    cluster: Any,
    seed: Any,
) -> tuple[float, int, int | None]:
    """:func:`compare`'s options checked: ``alpha``, ``n_resamples`` as numbers and the
    ``seed`` drawn once where the test resamples."""
    alpha, n_resamples = compare_options(
        test, alternative, adjust, alpha, n_resamples, exact, family
    )
    if cluster is not None and test != "t":
        raise OptionError(
            f"cluster= works with test='t' only, but test={test!r} was passed with "
            f"cluster={cluster!r}; use test='t' or cluster=None."
        )
    resampled = test == "bootstrap" or (test == "randomization" and not exact)
    return alpha, n_resamples, resolve_seed(seed) if resampled else seed


def _lazy_options(options: dict[str, Any]) -> dict[str, Any]:
    """:func:`compare`'s options checked before a lazy table is read, the seed drawn once
    (every task resamples from it)."""
    names = ("test", "alternative", "adjust", "alpha", "n_resamples", "exact", "family")
    alpha, n_resamples, seed = _checked(
        *(options[n] for n in names), options["cluster"], options["seed"]
    )
    return dict(options, alpha=alpha, n_resamples=n_resamples, seed=seed)


def _per_query(scores: Any, options: dict[str, Any]) -> bool:
    """Tests on per-query differences, clusters and replicates: a lazy table's tasks are
    tested one at a time, in memory (only the systems asked for are fetched)."""
    return options["test"] != "t" or options["cluster"] is not None or REPLICATE in scores.columns


def _task_options(scores: Any, options: dict[str, Any]) -> dict[str, Any]:
    """The options of :func:`compare` on one task of a lazy table (tests on per-query
    differences; clusters; replicates), checked against the whole table as in memory: a
    family across tasks is adjusted on the whole result (max-T's, within a task, by each)."""
    survey = first_pass(scores)
    select_systems(survey.systems, options["control"], "control")
    select_systems(survey.systems, options["treatment"], "treatment")
    cluster = options["cluster"]
    if cluster is not None and cluster not in scores.columns:  # the in-memory error
        cluster_ids(pd.DataFrame(columns=scores.columns), cluster)
    adjust = options["adjust"]
    return dict(options, adjust=adjust if adjust == "maxt" else None, family="pairs")


def compare_options(
    test: Any,
    alternative: Any,
    adjust: Any,
    alpha: Any,
    n_resamples: Any,
    exact: Any = False,
    family: Any = "pairs",
) -> tuple[float, int]:
    """Check :func:`compare`'s options; return ``alpha`` and ``n_resamples`` as numbers."""
    check_option("test", test, COMPARE_TESTS)
    check_option("alternative", alternative, ALTERNATIVES)
    if adjust is not None:
        check_option("adjust", adjust, ADJUSTMENTS)
    check_option("family", family, ADJUST_FAMILIES)
    if family != "pairs" and adjust is None:
        raise OptionError(
            f"`family`={family!r} chooses the tests that `adjust` adjusts together; pass "
            "`adjust` too (e.g. adjust='holm'), or leave `family` out."
        )
    if family != "pairs" and adjust == "maxt":
        raise OptionError(
            f"`adjust`='maxt' flips the signs of the pairs of one task together, so its "
            f"family is the pairs of a task and metric, but family={family!r} was passed; "
            f"use family='pairs', or `adjust` one of {[a for a in ADJUSTMENTS if a != 'maxt']}."
        )
    if adjust == "maxt" and test != "randomization":
        raise OptionError(
            f"`adjust`='maxt' (Westfall–Young max-T) works on the sign flips of the "
            f"randomization test, but test={test!r} was passed; use test='randomization', "
            f"or `adjust` one of {[a for a in ADJUSTMENTS if a != 'maxt']}."
        )
    if not isinstance(exact, bool | np.bool_):
        raise OptionError(f"`exact` must be True or False, but {exact!r} was passed.")
    if exact and test != "randomization":
        raise OptionError(
            f"`exact`=True enumerates the sign flips of the randomization test, but "
            f"test={test!r} was passed; use test='randomization' or exact=False."
        )
    return check_alpha(alpha), check_resamples(n_resamples)


# ------------------------------------------------------------- per-query tests
def _pairs(ds: xr.Dataset, lay: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Layout system indices of the (treatment, control) grid of ``ds``, flattened."""
    index = {str(s): i for i, s in enumerate(lay.systems)}
    left = np.array([index[s] for s in ds["treatment"].values])
    right = np.array([index[s] for s in ds["control"].values])
    t, c = np.meshgrid(left, right, indexing="ij")
    return t.ravel(), c.ravel()


def _differences(
    lay: Layout, rows: np.ndarray, t: np.ndarray, c: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Differences treatment − control, ``(tasks, queries, metric, pairs)``, and where both exist.

    Taken from the unshifted scores (``layout(..., keep_raw=True)``), so that a
    query where both systems have the same score has a difference of exactly 0
    — the one place where the sign and Wilcoxon tests decide what a zero
    difference is, as scipy does on ``x − y``.
    """
    assert lay.raw is not None, "layout(..., keep_raw=True) is needed for per-query tests"
    inside = rows >= 0
    r = np.where(inside, rows, 0)
    xt = lay.raw[:, t][:, :, r]  # (metric, pairs, tasks, width)
    xc = lay.raw[:, c][:, :, r]
    both = lay.mask[:, t][:, :, r] & lay.mask[:, c][:, :, r] & inside
    d = np.where(both, xt - xc, 0.0)
    return d.transpose(2, 3, 0, 1), both.transpose(2, 3, 0, 1)


def _pair_chunks(n_pairs: int, per_pair_bytes: int) -> list[slice]:
    step = max(1, rs.CHUNK_BYTES // max(per_pair_bytes, 1))
    return [slice(i, min(n_pairs, i + step)) for i in range(0, n_pairs, step)]


def _per_query_tests(
    lay: Layout,
    ds: xr.Dataset,
    test: str,
    alternative: str,
    n_resamples: int,
    seed: int | None,
    progress: bool | None,
    observed_t: xr.DataArray,
    exact: bool = False,
    maxt: bool = False,
) -> tuple[xr.DataArray, xr.DataArray, dict[str, xr.DataArray]]:
    """Statistic and p-value of a test that needs the per-query differences.

    ``observed_t`` is the paired t-test's statistic on the grid of ``ds``: the
    bootstrap test's observed t, so that both tests report the same t (with
    the same rounding rules: a mean difference within rounding of 0 is 0).
    ``exact``: the randomization test enumerates every sign flip; ``maxt``: it
    also returns the max-T adjusted p-values as ``extra["p_maxt"]``.
    """
    pt, pc = _pairs(ds, lay)
    n_tasks, n_metrics = len(lay.tasks), len(lay.metrics)
    task_names = [str(t) for t in lay.tasks]
    t_grid = (
        observed_t.reindex(task=task_names)
        .transpose("task", "metric", "treatment", "control")
        .values.reshape(n_tasks, n_metrics, -1)
    )
    shape = (n_tasks, n_metrics, len(pt))
    stat, p = np.full(shape, np.nan), np.full(shape, np.nan)
    all_zero = np.zeros(shape, dtype=bool)
    discordant = np.zeros((*shape, 2))  # McNemar's b and c
    pairs = np.flatnonzero(pt != pc)
    resampling = test in ("randomization", "bootstrap")
    per_value = 8 * (4 if test == "bootstrap" else 2)
    batches = list(rs.task_batches(lay))
    if exact:
        _check_exact(batches, task_names)
    if maxt:  # every pair of a task at once: one family per task and metric
        p_family = np.full(shape, np.nan)
        steps = sum(_steps("randomization", b, n_resamples, exact) for b in batches)
        tracker = rs.Progress(steps, "randomization test (max-T)", progress)
        for batch in batches:
            names = [task_names[i] for i in batch.tasks]
            family = _randomization_family(
                lay,
                batch,
                pt[pairs],
                pc[pairs],
                n_metrics,
                names,
                alternative,
                n_resamples,
                seed,
                exact,
                tracker,
            )
            idx = np.ix_(batch.tasks, np.arange(n_metrics), pairs)
            stat[idx], p[idx], p_family[idx] = family
    plan = [
        (batch, chunk)
        for batch in ([] if maxt else batches)  # max-T has done every pair above
        for chunk in _pair_chunks(
            len(pairs), len(batch.tasks) * batch.rows.shape[1] * n_metrics * per_value
        )
    ]
    if not maxt:
        steps = sum(_steps(test, b, n_resamples, exact) for b, _ in plan)
        tracker = rs.Progress(steps, f"{test} test", progress)
    for batch, chunk in plan:
        sel = pairs[chunk]
        d, both = _differences(lay, batch.rows, pt[sel], pc[sel])
        idx = np.ix_(batch.tasks, np.arange(n_metrics), sel)
        if test == "sign":
            s, pv, z = _sign_test(d, both, alternative)
        elif test in _MCNEMAR:
            s, pv, bc = _mcnemar(d, both, alternative, mid_p=test == "mcnemar_midp")
            z = np.zeros(s.shape, dtype=bool)
            discordant[idx] = bc
        elif test == "wilcoxon":
            s, pv, z = _wilcoxon(d, both, alternative)
        elif test == "randomization":
            names = [task_names[i] for i in batch.tasks]
            s, pv = _randomization(
                d, both, batch.n, names, alternative, n_resamples, seed, tracker, exact
            )
            z = np.zeros(s.shape, dtype=bool)
        else:
            names = [task_names[i] for i in batch.tasks]
            s = t_grid[idx]
            pv = _bootstrap(d, both, s, batch.n, names, alternative, n_resamples, seed, tracker)
            z = np.zeros(s.shape, dtype=bool)
        stat[idx], p[idx], all_zero[idx] = s, pv, z
        if not resampling:
            tracker.step()
    tracker.close()
    grid = (n_tasks, n_metrics, ds.sizes["treatment"], ds.sizes["control"])

    coords: dict[str, Any] = {name: ds[name].values for name in ("metric", "treatment", "control")}
    coords["task"] = [str(t) for t in lay.tasks]  # tasks without data are not in `ds`

    def as_array(a: np.ndarray) -> xr.DataArray:
        out = xr.DataArray(
            a.reshape(grid), dims=("task", "metric", "treatment", "control"), coords=coords
        )
        return out.sel(task=ds["task"].values).transpose(*ds["n"].dims)

    extra = {}
    if maxt:
        extra["p_maxt"] = as_array(p_family)
    if test in ("wilcoxon", "sign"):
        extra["all differences zero"] = as_array(all_zero)
    if test in _MCNEMAR:
        extra["counts"] = xr.concat(
            [as_array(discordant[..., 0]), as_array(discordant[..., 1])], dim="count"
        ).assign_coords(count=["b", "c"])
    return as_array(stat), as_array(p), extra


def _sign_test(d: np.ndarray, both: np.ndarray, alternative: str):
    """Exact sign test per (task, metric, pair); statistic = share of positive differences."""
    from scipy import stats as sps

    pos = ((d > 0) & both).sum(axis=1).astype(float)
    nonzero = pos + ((d < 0) & both).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = p_value(pos, AtLeast(sps.binom(nonzero, 0.5)), alternative, symmetric=False)
        share = pos / nonzero
    zero = (nonzero == 0) & (both.sum(axis=1) > 0)
    return np.where(zero, np.nan, share), np.where(zero, np.nan, p), zero


def _mcnemar(d: np.ndarray, both: np.ndarray, alternative: str, mid_p: bool):
    """Exact (or mid-p) McNemar test per (task, metric, pair) of 0/1 scores.

    Returns the statistic b − c, the p-value and the counts ``(..., 2)`` of b
    (treatment 1, control 0) and c (treatment 0, control 1).
    """
    from scipy import stats as sps

    b = ((d > 0) & both).sum(axis=1).astype(float)
    c = ((d < 0) & both).sum(axis=1).astype(float)
    m = b + c
    half = 0.5 if mid_p else 0.0
    null = AtLeast(sps.binom(m, 0.5), mid=half)  # P(B ≥ b) (− ½ P(B = b)), P(B ≤ b) (− ...)
    with np.errstate(invalid="ignore", divide="ignore"):
        if alternative == "two-sided":  # symmetric: twice the tail of the smaller count
            p = np.minimum(1.0, 2 * p_value(np.minimum(b, c), null, "less"))
        else:
            p = p_value(b, null, alternative)
    p = np.where(m == 0, 1.0, p)  # no discordant query: nothing speaks against the null
    return b - c, p, np.stack([b, c], axis=-1)


def _newcombe(out: xr.Dataset, b: xr.DataArray, c: xr.DataArray, alpha: float, alternative: str):
    """Newcombe's (1998) method 10 interval for p_treatment − p_control of paired 0/1 scores.

    Without a discordant pair (b = c = 0) phi is 1 and the square-and-add keeps only the
    asymmetry of the two (equal) Wilson intervals: a width of 0 when a = d (and NaN from
    rounding), however few the queries. There |p_t − p_c| ≤ (b + c)/n, the discordant
    share, whose exact (Clopper–Pearson) upper bound with none of n observed is
    u = 1 − (alpha/2)^(1/n) (1 − alpha^(1/n) for one bound): the interval is [−u, u].
    """
    from scipy import stats as sps

    n = out["n"].astype(float)
    x1 = np.round(out["mean_treatment"] * n)  # a + b
    x2 = np.round(out["mean_control"] * n)  # a + c
    a = x2 - c
    d = n - a - b - c
    z = critical_value(sps.norm, alpha, alternative)
    with np.errstate(invalid="ignore", divide="ignore"):
        p1, p2 = x1 / n, x2 / n
        l1, u1 = wilson_interval(x1, n, z)
        l2, u2 = wilson_interval(x2, n, z)
        denominator = (a + b) * (c + d) * (a + c) * (b + d)
        phi = xr.where(denominator > 0, (a * d - b * c) / np.sqrt(denominator), 0.0)
        # a square that is 0 in exact arithmetic can round below it
        delta = np.sqrt(
            np.maximum(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
        )
        epsilon = np.sqrt(
            np.maximum(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
        )
        exact = -np.expm1(
            np.log(tail_level(alpha, alternative)) / n
        )  # 1 − tail^(1/n): no discordant pair
    theta = (b - c) / n
    none = (b + c) == 0
    low = xr.where(none, -exact, theta - delta)
    high = xr.where(none, exact, theta + epsilon)
    return open_side(low, high, alternative, -1.0, 1.0)


def _wilcoxon(d: np.ndarray, both: np.ndarray, alternative: str):
    """scipy's Wilcoxon signed-rank test on every (task, metric, pair) column, as if alone.

    scipy chooses its method (exact, permutation or normal approximation) from
    the sample size and from whether there are zero or tied differences — once
    per call, for all columns of the call. So that every column gets the
    method a call on its own differences would choose, columns are sent in
    groups of the same size and the same "zeros or ties" flag: one call per
    group, none per task, metric or pair.
    """
    from scipy import stats as sps

    n_tasks, width, n_metrics, n_pairs = d.shape
    cols = both.transpose(1, 0, 2, 3).reshape(width, -1)  # (queries, columns)
    values = d.transpose(1, 0, 2, 3).reshape(width, -1)
    n = cols.sum(axis=0)
    nonzero = ((values != 0) & cols).sum(axis=0)
    zero = (nonzero == 0) & (n > 0)
    stat = np.full(values.shape[1], np.nan)
    p = np.full(values.shape[1], np.nan)
    # each column's paired differences first, in query order; |d| sorted to find ties
    order = np.argsort(~cols, axis=0, kind="stable")
    packed = np.take_along_axis(values, order, axis=0)
    magnitude = np.sort(np.where(cols, np.abs(values), np.inf), axis=0)
    tied = ((magnitude[1:] == magnitude[:-1]) & np.isfinite(magnitude[1:])).any(axis=0)
    irregular = tied | (nonzero < n)  # ties among |d|, or zero differences
    usable = (n > 0) & ~zero
    groups = np.unique(np.c_[n[usable], irregular[usable]], axis=0)
    for size, flag in groups:  # a handful of distinct sample sizes
        members = np.flatnonzero(usable & (n == size) & (irregular == flag))
        res = sps.wilcoxon(packed[:size, members], alternative=alternative, axis=0)
        stat[members], p[members] = res.statistic, res.pvalue
    shape = (n_tasks, n_metrics, n_pairs)
    return stat.reshape(shape), p.reshape(shape), zero.reshape(shape)


def _tail(star: np.ndarray, observed: np.ndarray, tol: np.ndarray, alternative: str) -> np.ndarray:
    """How many resampled statistics ``star`` (tasks, resamples, columns) are at least
    as extreme as the observed ones (tasks, columns); differences within ``tol`` tie."""
    obs, tol = observed[:, None, :], tol[:, None, :]
    return as_extreme(star, obs, tol, alternative).sum(axis=1)


def _column_units(flat: np.ndarray) -> np.ndarray:
    """``(tasks, columns)``: 1, or a power of two near a column's largest |difference| where
    that lies outside 2^±100, so that sums and squares of differences stay finite and normal
    (as the layout's scale; dividing by it is exact)."""
    top = np.abs(flat).max(axis=1)
    _, exponent = np.frexp(top)
    extreme = (top > SAFE_MAGNITUDE) | ((top > 0) & (top < 1 / SAFE_MAGNITUDE))
    return np.where(extreme, np.ldexp(1.0, exponent), 1.0)


EXACT_MAX_QUERIES = 20
"""The most queries a task may have for ``compare(..., exact=True)`` (2^20 sign flips)."""


def _check_exact(batches: list[rs.TaskBatch], task_names: list[str]) -> None:
    """OptionError naming ``exact`` when a task has too many queries to enumerate."""
    sizes = {task_names[t]: int(n) for b in batches for t, n in zip(b.tasks, b.n, strict=True)}
    big = {task: n for task, n in sizes.items() if n > EXACT_MAX_QUERIES}
    if big:
        shown = ", ".join(f"{task!r} ({n})" for task, n in list(big.items())[:5])
        raise OptionError(
            f"`exact`=True enumerates all 2^n sign flips of a task's n queries, for at most "
            f"{EXACT_MAX_QUERIES} queries (2^{EXACT_MAX_QUERIES} ≈ 1 million flips), but "
            f"{len(big)} task(s) have more: {shown}; use exact=False with n_resamples random "
            "sign flips."
        )


def _resample_total(batch: rs.TaskBatch, n_resamples: int, exact: bool) -> int:
    """Resamples of a batch: B, or all 2^width sign flips when ``exact``."""
    return 2 ** batch.rows.shape[1] if exact else n_resamples


def _steps(test: str, batch: rs.TaskBatch, n_resamples: int, exact: bool) -> int:
    """Progress steps of one (batch, pair chunk): work items of the randomization test,
    resample chunks of the bootstrap, 1 for the other tests."""
    if test == "randomization":
        total = _resample_total(batch, n_resamples, exact)
        size = np.full(len(batch.tasks), batch.rows.shape[1]) if exact else batch.n
        return len(_randomization_items(size, total))
    return len(_resample_chunks(batch, n_resamples, exact)) if test == "bootstrap" else 1


def _resample_chunks(batch: rs.TaskBatch, n_resamples: int, exact: bool) -> list[tuple[int, int]]:
    total = _resample_total(batch, n_resamples, exact)
    return rs.chunks(total, len(batch.tasks) * batch.rows.shape[1] * 8)


def _p_of(count: np.ndarray, total: int, exact: bool) -> np.ndarray:
    """The share of resamples at least as extreme: (1 + #)/(1 + B) for B random flips
    (the observed data counted once), #/2^n for the full enumeration (which holds it)."""
    return count / total if exact else (1 + count) / (1 + total)


def _randomization(d, both, n, names, alternative, n_resamples, seed, tracker, exact=False):
    """Fisher's randomization test by random sign flips, all columns at once.

    With signs s = 2b − 1 (b random bits), T* = Σ s·d = 2·(b @ d) − Σ d; the
    p-value compares T* with T = Σ d (the mean difference times the fixed n).
    One work item is one task and one chunk of its resamples (:func:`_randomization_items`):
    its sign bits times the differences of every column, one BLAS product.
    """
    n_tasks, width, n_metrics, n_pairs = d.shape
    unit = _column_units(d.reshape(n_tasks, width, -1))
    flat = d.reshape(n_tasks, width, -1) / unit[:, None, :]
    observed = flat.sum(axis=1)  # (tasks, columns)
    tol = 1e-9 * np.abs(flat).sum(axis=1)  # equal sums up to rounding count as ties
    total = 2**width if exact else n_resamples
    # (columns, queries) per task: the product below is then flat_t @ bits.T (BLAS's
    # faster orientation for a few columns), the task's own n queries (the rest are 0)
    size = np.full(n_tasks, width) if exact else np.asarray(n, dtype=int)
    flat_t = [np.ascontiguousarray(flat[i, : size[i]].T) for i in range(n_tasks)]

    def work(item: tuple[int, int, int], scratch: rs.Scratch) -> np.ndarray:
        i, b0, b1 = item
        bits = _sign_bits(scratch, exact, seed, names[i], int(size[i]), b0, b1)
        star = 2 * (flat_t[i] @ bits.T) - observed[i][:, None]  # (columns, resamples)
        return _tail(star.T[None], observed[i][None], tol[i][None], alternative)[0]

    items = _randomization_items(size, total)
    counts = rs.run_items(work, items, tracker.step)
    count = np.zeros_like(observed)
    for (i, _, _), c in zip(items, counts, strict=True):  # in item order: exact integer sums
        count[i] += c
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = observed / both.reshape(n_tasks, width, -1).sum(axis=1) * unit
    p = _p_of(count, total, exact)
    return mean.reshape(n_tasks, n_metrics, n_pairs), p.reshape(n_tasks, n_metrics, n_pairs)


def _randomization_items(size: np.ndarray, total: int) -> list[tuple[int, int, int]]:
    """``(task, b0, b1)``: the work items of the randomization test, every task's resamples
    in chunks whose sign array is cache-sized (:func:`rs.item_chunks`)."""
    return [(i, b0, b1) for i, m in enumerate(size) for b0, b1 in rs.item_chunks(total, int(m))]


def _sign_bits(
    scratch: rs.Scratch, exact: bool, seed: Any, name: str, size: int, b0: int, b1: int
) -> np.ndarray:
    """Resamples b0 … b1 − 1 of a task's sign flips over its ``size`` queries, as 0/1 floats
    in the scratch buffer: every flip in turn (``exact``) or the task's random stream."""
    bits = scratch.buffer("bits", (b1 - b0, size))
    if exact:
        return _exact_bits(b0, b1, size, bits)
    rs.sign_bits(seed, name, size, b0, b1, bits)
    return bits


def _exact_bits(b0: int, b1: int, width: int, out: np.ndarray) -> np.ndarray:
    """The binary digits of b0 … b1 − 1 (width of them) as floats, written into ``out``."""
    codes = np.arange(b0, b1, dtype=np.int64)
    np.copyto(out, (codes[:, None] >> np.arange(width)) & 1)
    return out


def _studentized(total: np.ndarray, squares: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The paired t of sign-flipped differences from T* = Σ s·d, Σ d² and n.

    Σ d² does not change with the signs, so t*² = (n − 1)·T*² / (n·Σ d² − T*²): an
    increasing function of |T*| for each pair. All differences equal (up to sign)
    and all flipped one way: ±inf; no differences, or one: 0 (never extreme).
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        t = total * np.sqrt((n - 1) / np.maximum(n * squares - total * total, 0.0))
    return np.where(np.isnan(t), 0.0, t)


def _extreme(t: np.ndarray, alternative: str) -> np.ndarray:
    """The statistic whose maximum over a family is max-T's: |t|, t or −t."""
    return oriented(t, alternative)


def _randomization_family(
    lay, batch, pt, pc, n_metrics, names, alternative, n_resamples, seed, exact, tracker
):
    """The randomization test and Westfall–Young single-step max-T of every pair at once.

    For one batch of tasks: the same sign flips for every pair of a task (and every
    metric), t*_j of every pair j from T*_j (see :func:`_studentized`), and the
    adjusted p_i = (1 + #{b: max_j u*_jb ≥ u_i})/(1 + B) with u = |t| (two-sided),
    t or −t, the max over the pairs of one task and metric; #/2^n when ``exact``.
    Pairs come in chunks of bounded memory: per work item (a task and a chunk of its
    resamples, as in :func:`_randomization`), the running maximum over the pair chunks,
    then the counts. Returns the mean differences, the
    unadjusted and the adjusted p-values, each ``(tasks, metrics, pairs)``.
    """
    n_tasks, width = batch.rows.shape
    n_pairs = len(pt)
    if n_pairs == 0:
        return tuple(np.zeros((n_tasks, n_metrics, 0)) for _ in range(3))
    chunks = _pair_chunks(n_pairs, n_tasks * width * n_metrics * 8 * 4)
    size = np.full(n_tasks, width) if exact else np.asarray(batch.n, dtype=int)

    def flat_of(chunk: slice, tasks: slice) -> tuple[np.ndarray, np.ndarray]:
        d, both = _differences(lay, batch.rows[tasks], pt[chunk], pc[chunk])
        return d.reshape(len(d), width, -1), both.reshape(len(d), width, -1)

    observed = []  # per pair chunk: units, T, tolerance, Σ d², n, u and its threshold
    cache = []  # per pair chunk and task: (columns, queries), when one chunk holds every pair
    for chunk in chunks:
        d, both = flat_of(chunk, slice(None))
        unit = _column_units(d)
        flat = d / unit[:, None, :]
        total, squares, n = flat.sum(axis=1), (flat * flat).sum(axis=1), both.sum(axis=1)
        u = _extreme(_studentized(total, squares, n), alternative)
        threshold = np.where(np.isposinf(u), u, u - 1e-9 * np.abs(u))  # rounding ties
        observed.append((unit, total, 1e-9 * np.abs(flat).sum(axis=1), squares, n, threshold))
        if len(chunks) == 1:  # else recomputed per work item, to bound memory
            cache.append([np.ascontiguousarray(flat[i, : size[i]].T) for i in range(n_tasks)])

    def columns(k: int, i: int) -> np.ndarray:
        if cache:
            return cache[k][i]
        d = flat_of(chunks[k], slice(i, i + 1))[0][0, : size[i]]
        return np.ascontiguousarray((d / observed[k][0][i]).T)

    def work(item: tuple[int, int, int], scratch: rs.Scratch) -> tuple[list, list]:
        i, b0, b1 = item
        bits = _sign_bits(scratch, exact, seed, names[i], int(size[i]), b0, b1)
        top = np.full((n_metrics, b1 - b0), -np.inf)  # max over the pairs
        counts = []
        for k in range(len(chunks)):
            _, total, tol, squares, n, _ = (o[i] for o in observed[k])
            star = 2 * (columns(k, i) @ bits.T) - total[:, None]  # (columns, resamples)
            counts.append(_tail(star.T[None], total[None], tol[None], alternative)[0])
            u_star = _extreme(_studentized(star, squares[:, None], n[:, None]), alternative)
            # a pair without a test (fewer than 2 paired queries: p NaN) is not in the
            # family; its t* of 0 would be every one-sided maximum's floor
            u_star = np.where(n[:, None] >= 2, u_star, -np.inf)
            top = np.maximum(top, u_star.reshape(n_metrics, -1, b1 - b0).max(axis=1))
        top_counts = []
        for k in range(len(chunks)):
            threshold = observed[k][5][i].reshape(n_metrics, -1, 1)
            top_counts.append((top[:, None, :] >= threshold).sum(axis=2).ravel())
        return counts, top_counts

    resamples = _resample_total(batch, n_resamples, exact)
    items = _randomization_items(size, resamples)
    results = rs.run_items(work, items, tracker.step)
    count = [np.zeros_like(o[1]) for o in observed]
    top_count = [np.zeros_like(o[1]) for o in observed]
    for (i, _, _), (counts, top_counts) in zip(items, results, strict=True):
        for k in range(len(chunks)):
            count[k][i] += counts[k]
            top_count[k][i] += top_counts[k]
    shape = (n_tasks, n_metrics, -1)
    parts = []
    for k in range(len(chunks)):
        unit, total, _, _, n, _ = observed[k]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = total / n * unit
        p = _p_of(count[k], resamples, exact)
        # never below the pair's own p: max-T's maximum includes the pair (up to rounding)
        adjusted = np.maximum(_p_of(top_count[k], resamples, exact), p)
        parts.append([a.reshape(shape) for a in (mean, p, adjusted)])
    return tuple(np.concatenate([part[i] for part in parts], axis=2) for i in range(3))


def _bootstrap(d, both, t_obs, n, names, alternative, n_resamples, seed, tracker):
    """Paired studentized bootstrap test with the shift method, all columns at once.

    The differences are centred (d' = d − d̄ over the pair's queries), resampled
    with replacement by count matrices C, and t* = m*/(s*/√n*) is computed from
    C @ [d', d'², 1] for every resample and column; ``t_obs`` (tasks, metrics,
    pairs) is the observed t of the paired t-test. A pair's resamples draw n
    of its own n paired queries: the task's counts where the pair has every
    query of the task; for a pair that lacks some, counts over its paired
    queries from the stream of a task of that size (one draw per distinct set
    of paired queries, shared by the pairs that have it).
    """
    n_tasks, width, n_metrics, n_pairs = d.shape
    flat = d.reshape(n_tasks, width, -1)
    flat = flat / _column_units(flat)[:, None, :]  # t is the same in any units
    m = both.reshape(n_tasks, width, -1).astype(float)
    n_pair = m.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = flat.sum(axis=1) / n_pair
        centred = (flat - mean[:, None, :]) * m
    t_obs = t_obs.reshape(n_tasks, -1)
    stacked = np.concatenate([centred, centred**2, m], axis=2)
    k = flat.shape[2]
    tol = 1e-9 * np.abs(t_obs)
    scale = np.abs(centred).max(axis=1)[:, None, :]  # flat resamples: 0 up to rounding of it
    partial = _partial_patterns(both.reshape(n_tasks, width, -1), n)
    count = np.zeros_like(mean)
    for b0, b1 in rs.chunks(n_resamples, n_tasks * width * 8):
        counts = rs.draws("counts", seed, names, n, width, b0, b1)
        sums = np.matmul(counts, stacked)  # (tasks, resamples, 3 columns)
        for task, rows, cols in partial:  # pairs without every query of their task
            own = rs.draws("counts", seed, [names[task]], np.array([len(rows)]), len(rows), b0, b1)
            picked = np.r_[cols, cols + k, cols + 2 * k]
            sums[task][:, picked] = own[0] @ stacked[task][np.ix_(rows, picked)]
        s1, s2, n_star = sums[..., :k], sums[..., k : 2 * k], sums[..., 2 * k :]
        with np.errstate(invalid="ignore", divide="ignore"):
            m_star = s1 / n_star
            var = np.maximum(s2 - n_star * m_star**2, 0.0) / (n_star - 1)
            t_star = m_star / np.sqrt(var / n_star)
            # a resample of equal differences: 0/0 is the null value 0, c/0 is extreme
            flat_zero = var <= 1e-12 * (s2 / n_star)
            t_star = np.where(
                flat_zero,
                np.where(np.abs(m_star) <= 1e-9 * scale, 0.0, np.sign(m_star) * np.inf),
                t_star,
            )
        count += _tail(t_star, t_obs, np.nan_to_num(tol), alternative)
        tracker.step()
    p = np.where(np.isfinite(t_obs), (1 + count) / (1 + n_resamples), np.nan)
    return p.reshape(n_tasks, n_metrics, n_pairs)


def _partial_patterns(both: np.ndarray, n: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """``(task, rows, columns)`` for every distinct set of paired rows short of the task's n.

    ``both`` is ``(tasks, width, columns)``. Columns with no paired row, or with
    every row of the task, are not listed.
    """
    out = []
    size = both.sum(axis=1)
    for task in np.flatnonzero(((size > 0) & (size < n[:, None])).any(axis=1)):
        cols = np.flatnonzero((size[task] > 0) & (size[task] < n[task]))
        masks, which = np.unique(both[task][:, cols].T, axis=0, return_inverse=True)
        for j, mask in enumerate(masks):
            out.append((int(task), np.flatnonzero(mask), cols[which.ravel() == j]))
    return out

"""Fuzzing of effects() and effect_covariance() on tables with a ``replicate`` column.

Random replicate tables — one to three tasks, two or three systems with one to four
replicates each, one or two metrics, queries and whole (query, replicate) runs left out
at random (unpaired queries, replicates with fewer queries) — are checked against:

- a naive per-(task, metric, pair) loop written here from the formula of the
  :mod:`metaeval.paired.replicates` docstring: the variance of ``md`` is
  S²_d/n over the replicate-averaged scores plus σ̂²_rep,T/R_T + σ̂²_rep,C/R_C, with
  σ̂²_rep = max(0, s²_M − w/n̄) per system (0 for one replicate);
- effect_covariance()'s diagonal, which must equal effects()' variance exactly;
- the same table with its rows shuffled, which must give the same results exactly.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import metaeval

pytestmark = pytest.mark.fuzz


@st.composite
def replicate_tables(draw) -> pd.DataFrame:
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n_tasks = draw(st.integers(1, 3))
    systems = ["a", "b", "c"][: draw(st.integers(2, 3))]
    metrics = ["m1", "m2"][: draw(st.integers(1, 2))]
    drop = draw(st.sampled_from([0.0, 0.1, 0.3]))
    rows = []
    for t in range(n_tasks):
        n_queries = draw(st.integers(2, 8))
        for system in systems:
            replicates = draw(st.integers(1, 4))
            for r in range(replicates):
                shift = rng.normal(0, 0.3)
                for metric in metrics:
                    for q in range(n_queries):
                        if (r > 0 or q > 1) and rng.random() < drop:  # q0, q1 stay paired
                            continue
                        rows.append(
                            (
                                f"t{t}",
                                f"q{q}",
                                system,
                                metric,
                                f"r{r}",
                                float(rng.normal(1.0 + q / 4, 0.5) + shift),
                            )
                        )
    return pd.DataFrame(rows, columns=["task", "query", "system", "metric", "replicate", "value"])


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metaeval.MetaEvalWarning)
        return func(*args, **kwargs)


def _sigma2_over_r(part: pd.DataFrame) -> float:
    """σ̂²_rep/R of one system on one (task, metric), from the docstring's formula."""
    reps = part.groupby("replicate")["value"]
    means, sizes = reps.mean(), reps.size()
    if len(means) < 2:
        return 0.0
    per_query = part.groupby("query")["value"].var(ddof=1).dropna()
    w = per_query.mean() if len(per_query) else 0.0
    return max(0.0, means.var(ddof=1) - w / sizes.mean()) / len(means)


def _naive_md_variance(scores: pd.DataFrame) -> pd.DataFrame:
    rows = []
    keys = ["task", "metric"]
    for (task, metric), g in scores.groupby(keys):
        averaged = g.groupby(["system", "query"])["value"].mean().unstack("system")
        for control in averaged.columns:
            for treatment in averaged.columns:
                if treatment == control:
                    continue
                d = (averaged[treatment] - averaged[control]).dropna()
                if len(d) == 0:
                    continue
                query_part = d.var(ddof=1) / len(d) if len(d) >= 2 else np.nan
                added = sum(_sigma2_over_r(g[g["system"] == s]) for s in (treatment, control))
                rows.append((task, metric, treatment, control, query_part + added, added))
    return pd.DataFrame(rows, columns=[*keys, "treatment", "control", "expected", "added"])


@settings(max_examples=25, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(replicate_tables(), st.randoms(use_true_random=False))
@pytest.mark.slow
def test_replicate_tables(scores, random):
    before = scores.copy()
    eff = _quiet(metaeval.effects, scores, None, effect="md")
    cov = _quiet(metaeval.effect_covariance, scores, None, effect="md")
    pd.testing.assert_frame_equal(scores, before)  # the input is not mutated
    # md's variance against the naive loop
    keys = ["task", "metric", "treatment", "control"]
    naive = _naive_md_variance(scores)
    both = eff.merge(naive, on=keys, how="outer", validate="1:1", indicator=True)
    assert (both["_merge"] == "both").all(), both[both["_merge"] != "both"]
    np.testing.assert_allclose(both["variance"], both["expected"], rtol=1e-9, atol=0)
    np.testing.assert_allclose(both["variance_replicates"], both["added"], rtol=1e-9, atol=1e-15)
    # effect_covariance's diagonal is effects()' variance, exactly
    diag = cov[cov["metric"] == cov["metric_b"]].merge(eff, on=keys[:1] + keys[1:], validate="1:1")
    assert len(diag) == len(eff)
    assert np.array_equal(diag["cov"].to_numpy(), diag["variance"].to_numpy(), equal_nan=True)
    # row order changes nothing
    order = list(range(len(scores)))
    random.shuffle(order)
    shuffled = scores.iloc[order].reset_index(drop=True)
    eff2 = _quiet(metaeval.effects, shuffled, None, effect="md")
    cov2 = _quiet(metaeval.effect_covariance, shuffled, None, effect="md")
    pd.testing.assert_frame_equal(eff2, eff, check_exact=True)
    pd.testing.assert_frame_equal(cov2, cov, check_exact=True)

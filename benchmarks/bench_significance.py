"""Benchmark: 10,000-resample randomization tests, every treatment against one control.

Builds 50 systems x 20 tasks x 5,000 queries (one metric), runs
``compare(control=..., test="randomization", n_resamples=10_000)`` — 49 x 20 = 980
pair-tests — and times, per pair-test, ranx's ``fisher_randomization_test``
(numba; warm, after compilation) and ``scipy.stats.permutation_test``
(``permutation_type="samples"``, vectorized) on a few pairs. Target (issue 4):
at least 100x faster than ranx per test.

Speed depends on the machine's load more than on anything else: compare() runs its
BLAS products on one thread each, on as many Python threads as BLAS had (see
metaeval.paired._resampling); OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, where a machine sets
them, choose an older kernel (the first line printed names the one in use).

    pip install ranx        # for the ranx comparison (skipped without it)
    python benchmarks/bench_significance.py
    python benchmarks/bench_significance.py --tasks 5 --pairs 1 --no-scipy   # a quick run
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from _result import optional, result

import metaeval


def make_scores(systems: int, tasks: int, queries: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t, s, q = np.meshgrid(np.arange(tasks), np.arange(systems), np.arange(queries), indexing="ij")
    difficulty = rng.uniform(0.2, 0.8, (tasks, 1, queries))
    skill = rng.normal(0, 0.02, (tasks, systems, 1))
    value = np.clip(difficulty + skill + rng.normal(0, 0.1, t.shape), 0, 1)
    return pd.DataFrame(
        {
            "task": pd.Categorical.from_codes(t.ravel(), [f"task{i}" for i in range(tasks)]),
            "query": pd.Categorical.from_codes(q.ravel(), [f"q{i}" for i in range(queries)]),
            "system": pd.Categorical.from_codes(s.ravel(), [f"system{i}" for i in range(systems)]),
            "metric": "nDCG@10",
            "value": value.ravel(),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--systems", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=3, help="pairs timed with ranx and scipy")
    parser.add_argument(
        "--adjust",
        action="store_true",
        help="also time adjust='holm' and adjust='maxt' (max-T) and stop",
    )
    parser.add_argument("--repeat", type=int, default=1, help="timed runs; the fastest is shown")
    parser.add_argument(
        "--no-scipy", action="store_true", help="skip scipy (11 s or more per pair)"
    )
    args = parser.parse_args()
    from scipy import stats

    threadpoolctl = optional("threadpoolctl")
    blas = [
        f"{i['internal_api']} {i['version']} {i['architecture']}, {i['num_threads']} threads"
        for i in (threadpoolctl.threadpool_info() if threadpoolctl else [])
        if i["user_api"] == "blas"
    ]
    print(f"metaeval from {metaeval.__file__}; BLAS: {'; '.join(blas)}")

    scores = make_scores(args.systems, args.tasks, args.queries)
    tests = (args.systems - 1) * args.tasks
    print(
        f"{len(scores):,} rows: {args.systems} systems x {args.tasks} tasks x {args.queries} queries; "
        f"{tests} pair-tests of {args.resamples:,} resamples"
    )
    warm = scores[scores["query"].cat.codes < 20]  # every system and task, 20 queries
    metaeval.compare(warm, control="system0", test="randomization", n_resamples=256, seed=0)
    timings = {}
    for adjust in (None, "holm", "maxt") if args.adjust else (None,):
        runs = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            res = metaeval.compare(
                scores,
                control="system0",
                test="randomization",
                adjust=adjust,
                n_resamples=args.resamples,
                seed=1,
                progress=False,
            )
            runs.append(time.perf_counter() - start)
        timings[adjust] = min(runs)
        ours = timings[adjust] / tests
        label = "" if adjust is None else f", adjust={adjust!r}"
        print(
            f"metaeval.compare, all pair-tests at once{label}: {ours * tests:8.2f} s  "
            f"{ours * 1e3:9.3f} ms/test"
        )
    if args.adjust:  # max-T: the same sign flips, the max over the pairs of each task
        print(f"maxt / holm: {timings['maxt'] / timings['holm']:.2f}x")
        return
    ours = timings[None] / tests

    wide = scores[scores["task"] == "task0"].pivot(index="query", columns="system", values="value")
    control = wide["system0"].to_numpy()
    pairs = [wide[f"system{i}"].to_numpy() for i in range(1, 1 + args.pairs)]
    ranx_p, t_ranx = None, float("nan")
    ranx = optional("ranx.statistical_tests.fisher_randomization_test", "ranx")
    if ranx is not None:
        fisher_randomization_test = ranx.fisher_randomization_test
        fisher_randomization_test(control, pairs[0], n_permutations=100)  # compile
        start = time.perf_counter()
        ranx_p = [
            fisher_randomization_test(control, x, n_permutations=args.resamples)[0] for x in pairs
        ]
        t_ranx = (time.perf_counter() - start) / len(pairs)
        print(
            f"ranx fisher_randomization_test (warm):   {t_ranx * tests:8.1f} s  {t_ranx * 1e3:9.1f} ms/test"
            f"   metaeval {t_ranx / ours:7.0f}x faster (target >= 100x)"
        )
    scipy_p = None
    if not args.no_scipy:
        start = time.perf_counter()
        scipy_p = [
            stats.permutation_test(
                (x, control),
                lambda a, b, axis: np.mean(a - b, axis=axis),
                vectorized=True,
                permutation_type="samples",
                n_resamples=args.resamples,
                random_state=0,
            ).pvalue
            for x in pairs
        ]
        t_scipy = (time.perf_counter() - start) / len(pairs)
        print(
            f"scipy permutation_test (vectorized):     {t_scipy * tests:8.1f} s  {t_scipy * 1e3:9.1f} ms/test"
            f"   metaeval {t_scipy / ours:7.0f}x faster"
        )
    ours_p = res[
        (res["task"] == "task0")
        & res["treatment"].isin([f"system{i}" for i in range(1, 1 + args.pairs)])
    ]
    print(
        "p-values on the timed pairs: metaeval",
        np.round(ours_p["p_value"].to_numpy(), 4),
        "scipy",
        None if scipy_p is None else np.round(scipy_p, 4),
        "ranx",
        None if ranx_p is None else np.round(ranx_p, 4),
    )

    result(
        "significance",
        f"ranx fisher_randomization_test / compare(test=randomization) per "
        f"test, {tests} tests of {args.resamples:,} resamples on {args.queries:,} queries",
        t_ranx / ours,
        ">=100",
        needs="ranx",
    )


if __name__ == "__main__":
    main()

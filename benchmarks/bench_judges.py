"""Benchmark: judges' agreement with bootstrap intervals against the krippendorff package's
point estimate alone.

T tasks × I items × J judges of nominal labels (3 categories, 75% of labels right). metaeval
computes Krippendorff's α for every task with a 1,000-resample bootstrap interval over
items, all tasks and resamples in one vectorized pass (a sparse product per block of
resamples). The baseline, run in the same process, is ``krippendorff.alpha`` (the package
the test values come from) called once per task for the point estimates alone, with no
interval, and the same package in a bootstrap loop (items resampled within each task,
timed on ``--loop`` resamples and scaled to all): the ratios are that loop's time over
metaeval's whole call (target ≥ 5) and, for information, the package's point estimates over
metaeval's call without resamples (the package takes a ready items × judges array, metaeval
a tidy table it checks and codes first). The α values of the two are compared (max |diff|).

    python benchmarks/bench_judges.py                     # 50 tasks x 2,000 items x 5 judges
    python benchmarks/bench_judges.py --tasks 5 --items 200
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from _result import optional, result

import metaeval


def make_labels(tasks: int, items: int, judges: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, (tasks, items))
    right = rng.random((tasks, items, judges)) < 0.75
    labels = np.where(right, truth[..., None], rng.integers(0, 3, (tasks, items, judges)))
    return pd.DataFrame(
        {
            "task": np.repeat([f"t{t:03d}" for t in range(tasks)], items * judges),
            "metric": "label",
            "system": "answer",
            "query": np.tile(np.repeat(np.arange(items), judges), tasks).astype(str),
            "judge": np.tile([f"j{j}" for j in range(judges)], tasks * items),
            "value": labels.ravel().astype(float),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--judges", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--loop", type=int, default=10, help="package resamples timed")
    args = parser.parse_args()
    labels = make_labels(args.tasks, args.items, args.judges)
    print(
        f"{args.tasks} tasks x {args.items:,} items x {args.judges} judges "
        f"({len(labels):,} labels), {args.resamples:,} resamples"
    )
    metaeval.agreement(labels.head(args.judges * 20), n_resamples=10, seed=0)  # warm-up
    start = time.perf_counter()
    res = metaeval.agreement(labels, n_resamples=args.resamples, seed=1)
    ours = time.perf_counter() - start
    start = time.perf_counter()
    metaeval.agreement(labels, n_resamples=0)
    ours_point = time.perf_counter() - start
    print(f"metaeval.agreement (alpha, nominal), {args.resamples} resamples : {ours:8.3f} s")
    print(f"metaeval.agreement, point estimates only          : {ours_point:8.3f} s")
    kripp = optional("krippendorff", "pip install krippendorff")
    if kripp is None:
        for name in ("judges_alpha_bootstrap", "judges_alpha_point"):
            result(name, "against the krippendorff package", float("nan"), needs="krippendorff")
        return
    cube = labels["value"].to_numpy().reshape(args.tasks, args.items, args.judges)

    def alphas(data: np.ndarray) -> list[float]:
        return [
            kripp.alpha(reliability_data=data[t].T, level_of_measurement="nominal")
            for t in range(args.tasks)
        ]

    start = time.perf_counter()
    theirs = alphas(cube)
    base = time.perf_counter() - start
    rng = np.random.default_rng(2)
    start = time.perf_counter()
    for _ in range(args.loop):
        draw = rng.integers(0, args.items, (args.tasks, args.items))
        alphas(np.take_along_axis(cube, draw[..., None], axis=1))
    loop = (time.perf_counter() - start) / args.loop * args.resamples
    diff = np.max(np.abs(res.table["agreement"].to_numpy() - np.array(theirs)))
    print(f"krippendorff.alpha, point estimates, a call per task : {base:8.3f} s")
    print(f"krippendorff.alpha in a bootstrap loop (scaled)      : {loop:8.3f} s")
    print(f"max |diff| of alpha: {diff:.1e}")
    size = f"{args.tasks} tasks x {args.items} items x {args.judges} judges"
    result(
        "judges_alpha_bootstrap",
        f"krippendorff.alpha in a {args.resamples}-resample loop / metaeval's bootstrap, {size}",
        loop / ours,
        ">=5",
        needs="krippendorff",
    )
    result(
        "judges_alpha_point",
        f"krippendorff.alpha point estimates / metaeval's without resamples, {size}",
        base / ours_point,
        needs="krippendorff",
    )


if __name__ == "__main__":
    main()

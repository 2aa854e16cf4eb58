"""Benchmark: effects + pooling on a large synthetic multi-task table.

Prints, in one process, the time of

1. one ``groupby(["task", "metric", "system"])["value"].sum()`` over the frame
   (the baseline: one pass of pandas over the data),
2. ``effects(control=...)`` + ``pool()`` (one control, every other system),
3. ``effects(control=None)`` (every ordered pair of systems),
4. a Ranger-style loop (pivot per task and metric, numpy per pair, DL per
   treatment) for the same one-control analysis as 2,

as ratios to the baseline, and the peak memory that 2 and 3 allocate
(tracemalloc, numpy included) as a ratio to the frame's in-memory size.

Targets (issue 2): 2 <= 1.5x baseline and >= 10x faster than 4; 3 <= 4x
baseline; peak memory <= 2x the frame.

    python benchmarks/bench_effects.py                 # 50 systems x 20 tasks x 3 metrics x 5,000 queries
    python benchmarks/bench_effects.py --queries 500   # a quick run
    python benchmarks/bench_effects.py --strings       # key columns as str instead of categorical
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
import warnings

import numpy as np
import pandas as pd
from _result import result

import metaeval


def make_frame(systems: int, tasks: int, metrics: int, queries: int, strings: bool) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    t, m, s, q = np.meshgrid(
        np.arange(tasks, dtype=np.int16),
        np.arange(metrics, dtype=np.int16),
        np.arange(systems, dtype=np.int16),
        np.arange(queries, dtype=np.int32),
        indexing="ij",
    )
    difficulty = rng.uniform(0.2, 0.8, (tasks, metrics, 1, queries))
    skill = rng.normal(0, 0.05, (tasks, metrics, systems, 1))
    value = np.clip(difficulty + skill + rng.normal(0, 0.1, t.shape), 0, 1)

    def cat(codes, prefix, k):
        return pd.Categorical.from_codes(codes.ravel(), [f"{prefix}{i}" for i in range(k)])

    df = pd.DataFrame(
        {
            "task": cat(t, "task", tasks),
            "query": cat(q, "q", queries),
            "system": cat(s, "system", systems),
            "metric": cat(m, "metric", metrics),
            "value": value.ravel(),
        }
    )
    if strings:
        df = df.astype({c: str for c in ["task", "query", "system", "metric"]})
    return df


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_bytes(fn) -> int:
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def ranger_style(df: pd.DataFrame, control: str) -> pd.DataFrame:
    """What a Ranger user does: a table per task, numpy per pair, DL per treatment."""
    rows = []
    for metric in df["metric"].unique():
        for task in df["task"].unique():
            sub = df[(df["task"] == task) & (df["metric"] == metric)]
            wide = sub.pivot(index="query", columns="system", values="value")
            y = wide[control].to_numpy()
            for treatment in wide.columns:
                if treatment == control:
                    continue
                x = wide[treatment].to_numpy()
                n = len(x)
                diff = x - y
                s_diff = diff.std(ddof=1)
                r = np.corrcoef(x, y)[0, 1]
                d = diff.mean() / (s_diff / np.sqrt(2 * (1 - r)))
                v = (1 / n + d**2 / (2 * n)) * 2 * (1 - r)
                j = 1 - 3 / (4 * (n - 1) - 1)
                rows.append((metric, treatment, j * d, j**2 * v))
    out = []
    eff = pd.DataFrame(rows, columns=["metric", "treatment", "y", "v"])
    for (metric, treatment), g in eff.groupby(["metric", "treatment"], observed=True):
        y, v = g["y"].to_numpy(), g["v"].to_numpy()
        w = 1 / v
        q = np.sum(w * y**2) - np.sum(w * y) ** 2 / w.sum()
        tau2 = max(0.0, (q - (len(y) - 1)) / (w.sum() - np.sum(w**2) / w.sum()))
        ws = 1 / (v + tau2)
        out.append((metric, treatment, np.sum(ws * y) / ws.sum(), tau2))
    return pd.DataFrame(out, columns=["metric", "treatment", "effect", "tau2"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--systems", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--metrics", type=int, default=3)
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--strings", action="store_true", help="str key columns")
    parser.add_argument("--no-loop", action="store_true", help="skip the slow Ranger-style loop")
    args = parser.parse_args()
    warnings.simplefilter("error", metaeval.MetaEvalWarning)  # the synthetic data is clean

    df = make_frame(args.systems, args.tasks, args.metrics, args.queries, args.strings)
    frame_bytes = int(df.memory_usage(deep=True).sum())
    control = "system0"
    print(
        f"frame: {len(df):,} rows ({args.systems} systems x {args.tasks} tasks x "
        f"{args.metrics} metrics x {args.queries} queries), "
        f"{frame_bytes / 2**20:,.0f} MiB, keys {'str' if args.strings else 'categorical'}"
    )

    def baseline():
        return df.groupby(["task", "metric", "system"], observed=True)["value"].sum()

    def one_control():
        return df.meta.effects(control=control, effect="smd").meta.pool(method="DL")

    def all_pairs():
        return df.meta.effects(control=None, effect="smd")

    one_control()  # warm-up: lazy imports
    t_base = best_of(baseline, args.repeat)
    t_one = best_of(one_control, args.repeat)
    t_all = best_of(all_pairs, max(1, args.repeat - 1))
    print(f"groupby sum (baseline)        {t_base:8.3f} s   1.00x")
    print(
        f"effects(control) + pool()     {t_one:8.3f} s   {t_one / t_base:5.2f}x baseline  (target <= 1.5x)"
    )
    print(
        f"effects(control=None)         {t_all:8.3f} s   {t_all / t_base:5.2f}x baseline  (target <= 4x)"
    )
    if not args.no_loop:
        t_loop = best_of(lambda: ranger_style(df, control), 1)
        ours = one_control().set_index(["metric", "treatment"])["effect"]
        loop = ranger_style(df, control).set_index(["metric", "treatment"])["effect"]
        agree = np.allclose(ours.reindex(loop.index).to_numpy(), loop.to_numpy(), rtol=1e-9)
        print(
            f"Ranger-style loop             {t_loop:8.3f} s   {t_loop / t_base:5.2f}x baseline, "
            f"metaeval {t_loop / t_one:5.1f}x faster (target >= 10x); same numbers: {agree}"
        )
        loop_ratio = t_loop / t_one
    p_one = peak_bytes(one_control)
    p_all = peak_bytes(all_pairs)
    print(
        f"peak memory effects+pool      {p_one / 2**20:8.0f} MiB  {p_one / frame_bytes:5.2f}x frame  (target <= 2x)"
    )
    print(
        f"peak memory all pairs         {p_all / 2**20:8.0f} MiB  {p_all / frame_bytes:5.2f}x frame  (target <= 2x)"
    )
    rows = f"{len(df):,} rows"
    result(
        "effects_one_control",
        f"effects(control)+pool() / groupby sum, {rows}",
        t_one / t_base,
        "<=1.5",
    )
    result(
        "effects_all_pairs", f"effects(control=None) / groupby sum, {rows}", t_all / t_base, "<=4"
    )
    if not args.no_loop:
        result(
            "effects_vs_loop",
            f"Ranger-style loop / effects(control)+pool(), {rows}",
            loop_ratio,
            ">=10",
        )
    result(
        "effects_memory",
        f"peak memory of effects+pool / the frame, {rows}",
        p_one / frame_bytes,
        "<=2",
    )
    result(
        "effects_memory_all_pairs",
        f"peak memory of all pairs / the frame, {rows}",
        p_all / frame_bytes,
        "<=2",
    )


if __name__ == "__main__":
    main()

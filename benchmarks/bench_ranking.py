"""Benchmark: ranking meta-evaluation and leaderboards on many segments.

Prints, in one process, the time of

1. ``judgments.groupby(["task", "segment", "system"])["predicted_rank"].sum()``
   (the baseline: one pass of pandas over the long table),
2. ``segment_scores(judgments, ["kendall_tau", "reciprocal_rank", "ndcg", "err"])``
   (all segments at once on NaN-padded arrays),
3. the same four measures segment by segment with the 1-D functions (as RankEval
   loops over segments),
4. ``leaderboard(aggregation=...)`` for Borda and Kemeny on the resulting scores,
5. ``rank_intervals()`` of the nDCG scores (1,000 resamples; by the mean and by the
   pooled effect over one system),

as ratios to the baseline, and checks that 2 and 3 agree.

    python benchmarks/bench_ranking.py                  # 4 tasks x 5,000 segments x 8 systems
    python benchmarks/bench_ranking.py --segments 500   # a quick run
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from _result import result

from metaeval import leaderboard, rank_intervals
from metaeval.measures import err, kendall_tau, ndcg, reciprocal_rank, segment_scores


def make_judgments(
    tasks: int, segments: int, systems: int, rng: np.random.Generator
) -> pd.DataFrame:
    items = rng.integers(2, 8, size=tasks * segments)  # 2..7 candidates per segment
    seg = np.repeat(np.arange(tasks * segments), items)
    item = np.concatenate([np.arange(k) for k in items])
    human = rng.integers(1, 6, size=len(seg))
    rows = len(seg)
    frame = pd.DataFrame(
        {
            "task": np.repeat(seg // segments, systems).astype(str),
            "segment": np.repeat(seg, systems).astype(str),
            "system": np.tile([f"sys{i}" for i in range(systems)], rows),
            "item": np.repeat(item, systems).astype(str),
            "human_rank": np.repeat(human, systems).astype(float),
        }
    )
    noise = rng.normal(0, np.tile(np.linspace(0.3, 3, systems), rows))
    frame["predicted_rank"] = np.floor(frame["human_rank"] + noise).clip(1, 9)
    return frame


def timed(fn, repeat: int = 3) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def per_segment(judgments: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (task, segment, system), part in judgments.groupby(
        ["task", "segment", "system"], sort=False
    ):
        p, h = part["predicted_rank"].to_numpy(), part["human_rank"].to_numpy()
        tau = kendall_tau(p, h).tau
        rows.append((task, segment, system, tau, reciprocal_rank(p, h), ndcg(p, h), err(p, h)))
    return pd.DataFrame(
        rows, columns=["task", "query", "system", "kendall_tau", "reciprocal_rank", "ndcg", "err"]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--segments", type=int, default=5000)
    parser.add_argument("--systems", type=int, default=8)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    judgments = make_judgments(args.tasks, args.segments, args.systems, rng)
    print(
        f"{len(judgments):,} judgments: {args.tasks} tasks x {args.segments:,} segments x {args.systems} systems"
    )
    measures = ["kendall_tau", "reciprocal_rank", "ndcg", "err"]
    warnings.simplefilter("ignore")  # segments where humans tie everything: tau undefined
    base, _ = timed(
        lambda: judgments.groupby(["task", "segment", "system"])["predicted_rank"].sum()
    )
    vec, scores = timed(lambda: segment_scores(judgments, measures))
    small = judgments[judgments["segment"].astype(int) % max(1, args.segments // 500) == 0]
    loop_small, looped = timed(lambda: per_segment(small), repeat=1)
    vec_small, scores_small = timed(lambda: segment_scores(small, measures))
    wide = scores_small.pivot_table(
        index=["task", "query", "system"], columns="metric", values="value"
    )
    check = looped.set_index(["task", "query", "system"]).loc[wide.index, measures]
    assert np.allclose(wide[measures].to_numpy(), check.to_numpy(), equal_nan=True, rtol=1e-12)
    complete = (
        scores.groupby(["task", "query", "metric"])["system"].transform("size") == args.systems
    )
    board_scores = scores[complete]
    borda, _ = timed(lambda: leaderboard(board_scores, aggregation="borda"))
    kemeny, board = timed(lambda: leaderboard(board_scores, aggregation="kemeny", metric="ndcg"))
    ranks_mean, _ = timed(
        lambda: rank_intervals(board_scores, metric="ndcg", n_resamples=1000, seed=0), repeat=2
    )
    ranks_pooled, _ = timed(
        lambda: rank_intervals(
            board_scores,
            metric="ndcg",
            n_resamples=1000,
            seed=0,
            aggregation="pooled",
            control="sys0",
            effect="md",
        ),
        repeat=2,
    )
    print(f"baseline groupby-sum            {base * 1000:8.1f} ms")
    print(f"segment_scores (4 measures)     {vec / base:8.1f}x baseline")
    print(
        f"per-segment loop (same result)  {loop_small / vec_small:8.1f}x slower than segment_scores "
        f"(on {small['segment'].nunique():,} segments)"
    )
    print(f"leaderboard borda               {borda / base:8.1f}x baseline")
    print(f"leaderboard kemeny (exact, {args.systems} systems) {kemeny / base:5.1f}x baseline")
    print(f"rank_intervals by mean          {ranks_mean / base:8.1f}x baseline")
    print(f"rank_intervals by pooled        {ranks_pooled / base:8.1f}x baseline")
    print(board.head(3).to_string(index=False))
    result(
        "ranking_segments",
        f"per-segment loop / segment_scores, {small['segment'].nunique():,} segments",
        loop_small / vec_small,
    )
    result(
        "ranking_borda",
        f"leaderboard(borda) / groupby sum, {len(judgments):,} judgments",
        borda / base,
    )
    n_ndcg = int((board_scores["metric"] == "ndcg").sum())
    result(
        "ranking_intervals",
        f"rank_intervals(mean, B=1000) / groupby sum, {n_ndcg:,} scores",
        ranks_mean / base,
    )
    result(
        "ranking_intervals_pooled",
        f"rank_intervals(pooled md, B=1000) / groupby sum, {n_ndcg:,} scores",
        ranks_pooled / base,
    )


if __name__ == "__main__":
    main()

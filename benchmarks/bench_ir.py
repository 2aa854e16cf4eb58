"""Benchmark: metaeval.ir.evaluate against calling ir_measures directly.

6,980 queries x 1,000 retrieved documents x 3 measures for 5 systems (DataFrame
inputs, as both take them). Prints both times and metaeval's overhead (target of
issue 5: at most 20%).

    pip install 'metaeval[ir]'
    python benchmarks/bench_ir.py
    python benchmarks/bench_ir.py --queries 1000 --depth 100   # a quick run
"""

from __future__ import annotations

import argparse
import time

import metaeval.ir
import numpy as np
import pandas as pd

MEASURES = ["nDCG@10", "AP", "R@1000"]


def make(queries: int, depth: int, systems: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    qids = np.array([f"q{i}" for i in range(queries)])
    judged = rng.integers(5, 60, queries)
    q = np.repeat(qids, judged)
    qrels = pd.DataFrame({"query_id": q, "doc_id": [f"d{x}" for x in rng.integers(0, 5 * depth, len(q))],
                          "relevance": rng.integers(0, 3, len(q))}).drop_duplicates(["query_id", "doc_id"])  # fmt: skip
    runs = {}
    for s in range(systems):
        docs = rng.permuted(np.tile(np.arange(5 * depth), (queries, 1)), axis=1)[:, :depth]
        runs[f"system{s}"] = pd.DataFrame({
            "query_id": np.repeat(qids, depth), "doc_id": np.char.add("d", docs.ravel().astype(str)),
            "score": rng.random(queries * depth),
        })  # fmt: skip
    return qrels, runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=6980)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--systems", type=int, default=5)
    args = parser.parse_args()
    import ir_measures

    qrels, runs = make(args.queries, args.depth, args.systems)
    print(
        f"{args.queries:,} queries x {args.depth:,} documents x {len(MEASURES)} measures x {args.systems} systems"
    )
    parsed = [ir_measures.parse_measure(m) for m in MEASURES]
    start = time.perf_counter()
    direct = {s: pd.DataFrame([(m.query_id, str(m.measure), m.value) for m in ir_measures.iter_calc(parsed, qrels, r)],
                              columns=["query", "metric", "value"]) for s, r in runs.items()}  # fmt: skip
    t_direct = time.perf_counter() - start
    start = time.perf_counter()
    ours = metaeval.ir.evaluate(qrels, runs, MEASURES, task="bench")
    t_ours = time.perf_counter() - start
    print(f"ir_measures.iter_calc per system:  {t_direct:7.2f} s")
    print(
        f"metaeval.ir.evaluate (tidy table): {t_ours:7.2f} s   overhead {100 * (t_ours / t_direct - 1):+.1f}% (target <= 20%)"
    )
    same = np.allclose(
        ours[ours["system"] == "system0"].set_index(["query", "metric"])["value"].sort_index(),
        direct["system0"].set_index(["query", "metric"])["value"].sort_index(),
    )
    print(f"same values as ir_measures: {same}")


if __name__ == "__main__":
    main()

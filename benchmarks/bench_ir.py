"""Benchmark: metaeval.ir.evaluate against calling ir_measures directly, on the same inputs.

Real data (default): Ranger's BEIR runs of TREC-COVID (50 queries, 66,336 judgments; the
top-10 runs of TAS-B and Uni-ColBERTer), four measures (nDCG@10, AP, RR@10, P@10), as

- dicts: qrels and runs as ``{query: {doc: value}}``; baseline
  ``list(ir_measures.iter_calc(measures, qrels, run))`` per run;
- files: TREC qrels and 6-column run files (the 4-column runs rewritten to a temporary
  folder, as ir_measures reads 6 columns only); baseline ``ir_measures.read_trec_qrels``
  and ``read_trec_run`` + ``iter_calc`` per run;

both timed alternately in one process, best of ``--repeat``. ``--collections`` adds
Ranger's other collections; ``--synthetic`` times DataFrame inputs on a synthetic
workload (6,980 queries x 1,000 documents x 5 systems by default: slow). Target (issue
5, issue 31): at most 1.2x ir_measures.

    pip install 'metaeval[ir]'
    python benchmarks/bench_ir.py                          # TREC-COVID, dicts and files
    python benchmarks/bench_ir.py --collections trec-covid nfcorpus tripclick --repeat 9
    python benchmarks/bench_ir.py --synthetic --queries 1000 --depth 100
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from pathlib import Path

import metaeval.ir
import numpy as np
import pandas as pd
from _result import optional, result

import metaeval.io

MEASURES = ["nDCG@10", "AP", "RR@10", "P@10"]
SYSTEMS = {"tasb": "tasb_dim768_hf", "colberter": "colberter_dim1_stopwords"}
nan = float("nan")
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ranger"


def ranger_data() -> Path:
    """Ranger's ``retrieval-colberter-data`` folder: ``RANGER_DATA`` or ``../shared/data``."""
    root = Path(os.environ.get("RANGER_DATA", DEFAULT_DATA))
    return root / "retrieval-colberter-data"


def as_dict(frame: pd.DataFrame, value: str, kind: type) -> dict:
    out: dict = {}
    for q, d, v in frame[["query_id", "doc_id", value]].itertuples(index=False):
        out.setdefault(q, {})[d] = kind(v)
    return out


def six_columns(run4: Path, folder: Path, tag: str) -> Path:
    """A 4-column TREC run (``query doc rank score``) rewritten with Q0 and a tag."""
    path = folder / f"{tag}-{run4.name}"
    with open(run4) as src, open(path, "w") as dst:
        for line in src:
            if line.strip():
                q, d, rank, score = line.split()
                dst.write(f"{q} Q0 {d} {rank} {score} {tag}\n")
    return path


def alternate(first, second, repeat: int) -> tuple[float, float]:
    """Best times of two functions called alternately (the machine's load hits both)."""
    a, b = [], []
    for _ in range(repeat):
        for func, times in ((first, a), (second, b)):
            start = time.perf_counter()
            func()
            times.append(time.perf_counter() - start)
    return min(a), min(b)


def real(collections: list[str], repeat: int, tmp: Path) -> dict[str, tuple[float, float]]:
    import ir_measures

    parsed = [ir_measures.parse_measure(m) for m in MEASURES]
    root = ranger_data()
    times: dict[str, list[tuple[float, float]]] = {"dicts": [], "files": []}
    for name in collections:
        qrels_file = root / "qrels" / f"{name}_qrels.txt"
        if not qrels_file.is_file():
            print(f"{name}: skipped, no {qrels_file} (RANGER_DATA names Ranger's data folder)")
            continue
        run_files = {
            s: six_columns(root / d / f"{name}_top10.txt", tmp, s) for s, d in SYSTEMS.items()
        }
        qrels = as_dict(metaeval.io.read_qrels(qrels_file), "relevance", int)
        runs = {s: as_dict(metaeval.io.read_run(f), "score", float) for s, f in run_files.items()}
        judged = sum(map(len, qrels.values()))
        print(
            f"{name}: {len(qrels):,} queries, {judged:,} judgments, runs of "
            f"{', '.join(f'{s} ({sum(map(len, r.values())):,})' for s, r in runs.items())}"
        )

        def direct_dicts(qrels=qrels, runs=runs):
            return [list(ir_measures.iter_calc(parsed, qrels, r)) for r in runs.values()]

        def ours_dicts(qrels=qrels, runs=runs, name=name):
            return metaeval.ir.evaluate(qrels, runs, MEASURES, task=name)

        def direct_files(qrels_file=qrels_file, run_files=run_files):
            return [
                list(
                    ir_measures.iter_calc(
                        parsed,
                        ir_measures.read_trec_qrels(str(qrels_file)),
                        ir_measures.read_trec_run(str(f)),
                    )
                )
                for f in run_files.values()
            ]

        def ours_files(qrels_file=qrels_file, run_files=run_files, name=name):
            return metaeval.ir.evaluate(qrels_file, run_files, MEASURES, task=name)

        same = check(ours_dicts(), direct_dicts(), list(runs)) and check(
            ours_files(), direct_files(), list(runs)
        )
        for kind, (base, ours) in (
            ("dicts", (direct_dicts, ours_dicts)),
            ("files", (direct_files, ours_files)),
        ):
            t_base, t_ours = alternate(base, ours, repeat)
            times[kind].append((t_base, t_ours))
            print(
                f"  {kind:<5}  ir_measures {t_base * 1e3:8.1f} ms   metaeval.ir.evaluate "
                f"{t_ours * 1e3:8.1f} ms   ratio {t_ours / t_base:5.2f}"
            )
        print(f"  same values as ir_measures: {same}")
    return {k: (sum(b for b, _ in v), sum(o for _, o in v)) for k, v in times.items() if v}


def check(ours: pd.DataFrame, direct: list[list], systems: list[str]) -> bool:
    """metaeval's table holds ir_measures' values, one for one, and 0 for judged queries a
    run did not return (missing="zero", as trec_eval -c)."""
    for system, rows in zip(systems, direct, strict=True):
        want = pd.Series({(m.query_id, str(m.measure)): m.value for m in rows}).sort_index()
        got = ours[ours["system"] == system].set_index(["query", "metric"])["value"].sort_index()
        extra = got.drop(want.index, errors="ignore")
        if not (
            np.array_equal(got.reindex(want.index).to_numpy(), want.to_numpy())
            and (extra == 0).all()
        ):
            return False
    return True


def synthetic(queries: int, depth: int, systems: int, seed: int = 0) -> tuple[float, float]:
    """DataFrame inputs as both take them; returns (ir_measures, metaeval) seconds."""
    import ir_measures

    rng = np.random.default_rng(seed)
    qids = np.array([f"q{i}" for i in range(queries)])
    judged = rng.integers(5, 60, queries)
    q = np.repeat(qids, judged)
    qrels = pd.DataFrame(
        {
            "query_id": q,
            "doc_id": [f"d{x}" for x in rng.integers(0, 5 * depth, len(q))],
            "relevance": rng.integers(0, 3, len(q)),
        }
    ).drop_duplicates(["query_id", "doc_id"])
    runs = {}
    for s in range(systems):
        docs = rng.permuted(np.tile(np.arange(5 * depth), (queries, 1)), axis=1)[:, :depth]
        runs[f"system{s}"] = pd.DataFrame(
            {
                "query_id": np.repeat(qids, depth),
                "doc_id": np.char.add("d", docs.ravel().astype(str)),
                "score": rng.random(queries * depth),
            }
        )
    print(f"synthetic DataFrames: {queries:,} queries x {depth:,} documents x {systems} systems")
    parsed = [ir_measures.parse_measure(m) for m in MEASURES]
    start = time.perf_counter()
    direct = [list(ir_measures.iter_calc(parsed, qrels, r)) for r in runs.values()]
    t_direct = time.perf_counter() - start
    start = time.perf_counter()
    ours = metaeval.ir.evaluate(qrels, runs, MEASURES, task="bench")
    t_ours = time.perf_counter() - start
    print(
        f"  frames ir_measures {t_direct:8.2f} s   metaeval.ir.evaluate {t_ours:8.2f} s   "
        f"ratio {t_ours / t_direct:5.2f}; same values: {check(ours, direct, list(runs))}"
    )
    return t_direct, t_ours


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--collections",
        nargs="+",
        default=["trec-covid"],
        help="of trec-covid, tripclick, nfcorpus, dbpedia-entity, antique, trec_podcast",
    )
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--synthetic", action="store_true", help="also DataFrame inputs, synthetic")
    parser.add_argument("--queries", type=int, default=6980)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--systems", type=int, default=5)
    args = parser.parse_args()
    if optional("ir_measures") is None:  # metaeval.ir needs it too: nothing to time
        for kind in ("dicts", "files", *(["frames"] if args.synthetic else [])):
            result(
                f"ir_{kind}",
                f"metaeval.ir.evaluate / ir_measures, {kind}",
                nan,
                needs="ir_measures",
            )
        return
    warnings.simplefilter("ignore", metaeval.MetaEvalWarning)  # a run's unjudged queries
    metaeval.ir.evaluate({"q": {"d": 1}}, {"s": {"q": {"d": 1.0}}}, MEASURES, task="t")  # imports
    print(f"measures {MEASURES}; best of {args.repeat}, alternating")
    with tempfile.TemporaryDirectory() as tmp:
        totals = real(args.collections, args.repeat, Path(tmp))
    if args.synthetic:
        t_direct, t_ours = synthetic(args.queries, args.depth, args.systems)
    which = ", ".join(args.collections)
    for kind, (t_base, t_ours) in totals.items():
        result(
            f"ir_{kind}",
            f"metaeval.ir.evaluate / ir_measures, {kind} ({which})",
            t_ours / t_base,
            "<=1.2",
            needs="ir_measures",
        )
    if args.synthetic:
        result(
            "ir_frames",
            "metaeval.ir.evaluate / ir_measures, synthetic DataFrames",
            t_ours / t_direct,
            "<=1.2",
            needs="ir_measures",
        )


if __name__ == "__main__":
    main()

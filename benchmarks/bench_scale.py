"""Benchmark: ``.meta`` on dask DataFrames, from Parquet files, past one process.

For each size, writes a synthetic scores table as one Parquet file per task
(string key columns, not categoricals; rows shuffled within each file), reads it
with ``dd.read_parquet(folder)`` — one partition per file, so every partition
holds whole tasks and nothing is shuffled — on a ``LocalCluster`` of worker
processes with one thread each, and prints the time (best of ``--repeat``) of

(a) ``ddf.groupby(["task", "metric", "system"]).value.sum(split_out=1).compute()``:
    the floor, one pass of dask over the data (``split_out=1``: left to itself,
    dask picks ``split_out`` = npartitions / 5 for three keys and shuffles the
    partial sums through P2P: 2-3x slower than one tree reduction at 1e7 rows);
(a0) the same with dask's default ``split_out``, the floor as issue 15 writes it
    (printed for reference; the targets use (a));
(a1) every partition read whole and its four key columns hashed (``pd.factorize``):
    what pairing scores by query cannot skip, which (a) never does for ``query``;
(b) ``ddf.meta.effects(control="s0")`` then ``.meta.pool()`` (pool in memory,
    on the small effects table);
(c) ``ddf.meta.effects(control=None)`` (every ordered pair of systems);
(d) ``ddf.meta.compare(control="s0", test="randomization", n_resamples=R,
    seed=0)`` (skipped with ``--skip-resampling``, or when the dask accessor has
    no ``compare`` yet),

as ratios to (a) and to (a1), and the peak resident memory (RSS) of every worker process
during each step: a thread of the client polls ``psutil`` on each worker's pid
every 0.1 s (the pids from ``client.run(os.getpid)``); before each step the
workers collect garbage and hand freed memory back to the OS (malloc_trim,
Arrow's pool), so that a step's peak is its own. ``--in-memory`` also times the
pandas path in a fresh process (``pd.read_parquet(folder)``, ``.meta.effects``
+ ``pool``, ``compare``) with its peak RSS, where the estimate fits in the free
memory; ``--check`` compares the dask results with it at the smallest size.

Targets (issue 15): (b) <= 1.5x (a) at every size; peak RSS per worker <= 2 GB
at 1e8 rows; time of (b) at 1e8 rows / at 1e7 rows <= 12 (10x the rows). Issue 31:
(b) <= 1.5x (a1), the read-and-factorize floor, at 1e7-1e8 rows. Nothing is
asserted: the script prints PASS or MISS.

The steps run in turn, ``--repeat`` rounds of (a), (a0), (a1), (b), (c), (d), and
each prints its best time: on a machine shared with other work, a busy moment then
slows one round of every step rather than all the calls of one.

    python benchmarks/bench_scale.py                    # 1e7, 3e7, 1e8 rows: 100 tasks x 10 systems x 1 metric
    python benchmarks/bench_scale.py --skip-resampling  # (a)-(c) only
    python benchmarks/bench_scale.py --rows 1e6 3e6 --repeat 1 --in-memory --resamples 1000   # a quick run
    python benchmarks/bench_scale.py --rows 1e7 --in-memory --check   # dask results == in memory

``--engine duckdb`` runs the DuckDB section instead (issue 31): no cluster; for each size
the same files read by ``read_scores(folder/*.parquet, engine="duckdb")``, and each step
in a fresh process with DuckDB's ``--threads`` (2) and ``--duckdb-memory`` (1.5GB), its
time (best of ``--repeat`` rounds, the steps taking turns, so that the load of a shared
machine falls on all of them alike), its CPU time (DuckDB's threads included) and the
process's peak RSS (VmHWM): the floor, DuckDB's own
``SELECT task, metric, system, query, sum(value) ... GROUP BY ALL`` over the files
(consumed in DuckDB: a count and a sum of its rows); ``effects(control="s0")`` + ``pool``;
``effects(control=None)``; ``compare(control="s0", test="t")``; ``means()``. Target:
effects + pool <= 1.5x the floor at 3e7 rows, peak RSS < 2 GB.

    python benchmarks/bench_scale.py --engine duckdb --rows 3e7 1e8 1e9 --repeat 2

The data stay in ``--dir`` (default /tmp/metaeval-bench-scale), one folder per
shape (``tasks100-systems10-metrics1-queries10000``), and are reused by later
runs; delete the folder to free the disk.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _result import optional, result

try:  # dask[dataframe] and distributed bring both; main() says which one is missing
    import psutil
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError:
    psutil = pa = pq = None

import metaeval

CONTROL = "s0"
NEEDS = "dask,distributed,pyarrow,psutil"  # the dask section's packages
GB = 1e9
SHUFFLE = re.compile(r"shuffle|p2p|rearrange")
"""Task-name prefixes of data moving between partitions."""
DONE = "_complete.json"
"""Written last in a data folder: the files are whole (pyarrow and dask skip names with _)."""


def hash_keys(part: pd.DataFrame) -> pd.Series:
    """What pairing by query cannot skip: every key column read and hashed (factorized)."""
    sizes = [len(pd.factorize(part[c])[1]) for c in ("task", "query", "system", "metric")]
    return pd.Series(sizes, dtype="int64")


# ------------------------------------------------------------------------------ data
def shape_name(tasks: int, systems: int, metrics: int, queries: int) -> str:
    return f"tasks{tasks}-systems{systems}-metrics{metrics}-queries{queries}"


def task_table(index: int, queries: int, systems: int, metrics: int) -> pa.Table:
    """One task's rows in random order: a difficulty per query, a skill per system, noise."""
    rng = np.random.default_rng([0, index])
    difficulty = rng.uniform(0.2, 0.8, (metrics, 1, queries))
    skill = rng.normal(0, 0.05, (metrics, systems, 1))
    noise = rng.normal(0, 0.1, (metrics, systems, queries))
    value = np.clip(difficulty + skill + noise, 0, 1).ravel()
    order = rng.permutation(value.size)
    m, s, q = np.unravel_index(order, (metrics, systems, queries))

    def strings(codes: np.ndarray, names: list[str]) -> pa.Array:
        return pa.array(names, type=pa.string()).take(pa.array(codes.astype(np.int32)))

    width = len(str(queries - 1))
    return pa.table(
        {
            "task": strings(np.zeros(value.size, dtype=np.int32), [f"task{index:04d}"]),
            "query": strings(q, [f"q{i:0{width}d}" for i in range(queries)]),
            "system": strings(s, [f"s{i}" for i in range(systems)]),
            "metric": strings(m, [f"m{i}" for i in range(metrics)]),
            "value": pa.array(value[order]),
        }
    )


def ensure_data(root: Path, tasks: int, systems: int, metrics: int, queries: int) -> Path:
    """The folder of this shape's Parquet files, written one task at a time if missing."""
    folder = root / shape_name(tasks, systems, metrics, queries)
    rows = tasks * systems * metrics * queries
    shape = {"tasks": tasks, "systems": systems, "metrics": metrics, "queries": queries}
    marker = folder / DONE
    if marker.exists() and json.loads(marker.read_text()) == shape:
        print(f"  reusing {folder}: {rows:,} rows, {disk_bytes(folder) / 1e6:,.0f} MB on disk")
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    start = time.perf_counter()
    for index in range(tasks):
        part = folder / f"task-{index:04d}.parquet"
        pq.write_table(task_table(index, queries, systems, metrics), part.with_suffix(".tmp"))
        part.with_suffix(".tmp").rename(part)
    marker.write_text(json.dumps(shape))
    elapsed = time.perf_counter() - start
    print(
        f"  wrote {folder}: {rows:,} rows in {tasks} files, "
        f"{disk_bytes(folder) / 1e6:,.0f} MB on disk, in {elapsed:.1f} s"
    )
    return folder


def disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("*.parquet"))


# ------------------------------------------------------------------------ memory
def release_memory() -> None:
    """Collect garbage and hand freed memory back to the OS (runs on every worker)."""
    gc.collect()
    with contextlib.suppress(Exception):
        pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def max_rss() -> int:
    """This process's peak resident memory in bytes: VmHWM of /proc/self/status.

    Not ``getrusage(RUSAGE_SELF).ru_maxrss``, which on Linux keeps the high-water mark of
    the process before its exec: a subprocess of a big client starts as big as the client.
    """
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class RssSampler:
    """Peak RSS of a set of processes since :meth:`watch`, polled by a thread."""

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self._lock = threading.Lock()
        self._procs: dict[str, psutil.Process] = {}
        self._peak: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def watch(self, pids: dict[str, int]) -> None:
        with self._lock:
            self._procs = {label: psutil.Process(pid) for label, pid in pids.items()}
            self._peak = dict.fromkeys(pids, 0)
        self._poll()

    def peaks(self) -> dict[str, int]:
        self._poll()
        with self._lock:
            return dict(self._peak)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        with self._lock:
            for label, proc in self._procs.items():
                try:
                    rss = proc.memory_info().rss
                except psutil.Error:  # a worker killed and restarted by its nanny
                    continue
                self._peak[label] = max(self._peak[label], rss)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._poll()


def worker_pids(client: Any) -> dict[str, int]:
    """``{"w0": pid, ...}`` in the order of the workers' addresses."""
    pids = client.run(os.getpid)
    return {f"w{i}": pids[address] for i, address in enumerate(sorted(pids))}


# ------------------------------------------------------------------------- steps
@dataclass
class Step:
    seconds: float | None = None
    peaks: dict[str, int] = field(default_factory=dict)  # label -> bytes, "client" included
    result: Any = None
    tasks: int = 0
    moved: list[str] = field(default_factory=list)  # task prefixes that look like a shuffle
    note: str = ""

    def worker_peak(self) -> int:
        return max((v for k, v in self.peaks.items() if k != "client"), default=0)


def run_step(client: Any, sampler: RssSampler, fn: Any, step: Step | None = None) -> Step:
    """One call of ``fn`` folded into ``step`` (a new one for the first call): the best
    time so far, the peak RSS of each process over the calls, and the dask tasks of the
    first call; an error is noted, not raised."""
    from dask.utils import key_split
    from distributed import get_task_stream

    first = step is None
    step = Step() if step is None else step
    if step.note:  # failed before: not again
        return step
    client.run(release_memory)
    release_memory()
    pids = worker_pids(client)
    sampler.watch({**pids, "client": os.getpid()})
    # the scheduler records the tasks of the first call only (a few % of overhead)
    recorder = get_task_stream(client) if first else contextlib.nullcontext()
    seconds = None
    try:
        with recorder as stream:
            start = time.perf_counter()
            step.result = fn()
            seconds = time.perf_counter() - start
    except Exception as error:  # e.g. KilledWorker past the memory limit: go on
        step.note = f"failed: {type(error).__name__}: {str(error)[:200]}"
    for label, rss in sampler.peaks().items():
        step.peaks[label] = max(step.peaks.get(label, 0), rss)
    if worker_pids(client) != pids:
        step.note += " (a worker was restarted: past its memory limit?)"
    if first:
        prefixes = {key_split(t["key"]) for t in stream.data}
        step.tasks = len(stream.data)
        step.moved = sorted(p for p in prefixes if SHUFFLE.search(p))
    if step.note.startswith("failed"):
        step.seconds = None
    elif seconds is not None:
        step.seconds = seconds if step.seconds is None else min(step.seconds, seconds)
    return step


def print_step(label: str, step: Step, floor: float | None, pairing: float | None) -> None:
    if step.seconds is None:
        print(f"  {label:<34} {step.note}")
        return
    ratio = f"{step.seconds / floor:6.2f}x (a)" if floor else f"{'':9}"
    ratio += f" {step.seconds / pairing:5.2f}x (a1)" if pairing else f"{'':11}"
    peaks = "  ".join(f"{k} {v / GB:.2f}" for k, v in step.peaks.items() if k != "client")
    moved = f"shuffle-like tasks: {', '.join(step.moved)}" if step.moved else "no shuffle"
    print(
        f"  {label:<34} {step.seconds:8.2f} s {ratio}   peak RSS GB: {peaks}"
        f"  (client {step.peaks.get('client', 0) / GB:.2f})   [{step.tasks} tasks, {moved}]"
        f"{step.note}"
    )


def dask_compare(ddf: Any, resamples: int) -> Any:
    """The bound method ``ddf.meta.compare``, or None where the dask accessor lacks it."""
    try:
        compare = ddf.meta.compare
    except AttributeError:
        return None
    return lambda: compare(control=CONTROL, test="randomization", n_resamples=resamples, seed=0)


# -------------------------------------------------------------- in memory (pandas)
def in_memory_child(folder: str, repeat: int, resamples: int | None, out: str | None) -> None:
    """Runs in a fresh process: the pandas path, timings and peak RSS as one JSON line."""
    warnings.simplefilter("error", metaeval.MetaEvalWarning)  # the synthetic data are clean
    report: dict[str, Any] = {"rss_start": max_rss()}  # the interpreter and its imports
    start = time.perf_counter()
    df = pd.read_parquet(folder)
    report["read"] = time.perf_counter() - start
    report["rss_read"] = max_rss()
    report["frame_bytes"] = int(df.memory_usage(deep=True).sum())
    report["dtypes"] = {c: str(t) for c, t in df.dtypes.items()}

    def floor() -> Any:
        return df.groupby(["task", "metric", "system"], observed=True)["value"].sum()

    def effects() -> Any:
        table = df.meta.effects(control=CONTROL)
        table.meta.pool()
        return table

    def compare() -> Any:
        return df.meta.compare(control=CONTROL, test="randomization", n_resamples=resamples, seed=0)

    first = df[df["task"].isin(df["task"].unique()[:2])]  # warm-up: lazy imports
    first.meta.effects(control=CONTROL).meta.pool()
    first.meta.compare(control=CONTROL, test="randomization", n_resamples=10, seed=0)
    report["floor"], _ = best_of(floor, repeat)
    report["effects"], effects_table = best_of(effects, repeat)
    report["rss_effects"] = max_rss()
    if out:
        effects_table.to_pickle(Path(out) / "effects.pkl")
    del effects_table
    if resamples:
        report["compare"], compared = best_of(compare, repeat)
        report["rss_compare"] = max_rss()
        if out:
            compared.to_pickle(Path(out) / "compare.pkl")
    print(json.dumps(report))


@dataclass
class MemoryModel:
    """The in-memory path's peak RSS, ~ start + bytes per row x rows, as last measured."""

    start: float = 0.3 * GB
    per_row: dict[bool, float] = field(default_factory=lambda: {False: 250.0, True: 500.0})

    def needed(self, rows: int, compare: bool) -> float:
        return self.start + 1.2 * self.per_row[compare] * rows

    def update(self, report: dict[str, Any], rows: int) -> None:
        self.start = report["rss_start"]
        for compare, key in ((False, "rss_effects"), (True, "rss_compare")):
            if key in report:
                self.per_row[compare] = (report[key] - self.start) / rows


def best_of(fn: Any, repeat: int) -> tuple[float, Any]:
    """The best time of ``repeat`` calls of ``fn`` and its result."""
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def run_in_memory(
    folder: Path, repeat: int, resamples: int | None, out: str | None
) -> dict[str, Any] | None:
    command = [sys.executable, __file__, "--in-memory-child", str(folder), "--repeat", str(repeat)]
    command += ["--resamples", str(resamples)] if resamples else ["--skip-resampling"]
    command += ["--check-dir", out] if out else []
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True)  # stderr: through
    if done.returncode != 0:
        print(f"  in memory: failed (exit code {done.returncode}; killed for memory if -9)")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def print_in_memory(report: dict[str, Any]) -> None:
    line = (
        f"  in memory (pandas, 1 process): read {report['read']:.2f} s, frame "
        f"{report['frame_bytes'] / GB:.2f} GB; groupby sum {report['floor']:.2f} s; "
        f"effects+pool {report['effects']:.2f} s ({report['effects'] / report['floor']:.2f}x)"
    )
    if "compare" in report:
        line += f"; compare {report['compare']:.2f} s"
    line += (
        f"; peak RSS {max(v for k, v in report.items() if k.startswith('rss')) / GB:.2f} GB "
        f"(after read {report['rss_read'] / GB:.2f}, after effects+pool "
        f"{report['rss_effects'] / GB:.2f})"
    )
    print(line)


def max_abs_difference(ours: pd.DataFrame, theirs: pd.DataFrame) -> str:
    """Max |difference| (and relative) over the numeric columns of two tables of the same rows."""

    def keyed(frame: pd.DataFrame) -> pd.DataFrame:
        keys = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
        frame = frame.astype(dict.fromkeys(keys, object))
        return frame.set_index(keys).sort_index()

    a, b = keyed(ours), keyed(theirs)
    if not a.index.equals(b.index) or list(a.columns) != list(b.columns):
        return f"different rows or columns ({len(a)} vs {len(b)} rows)"
    numbers = [c for c in a.columns if pd.api.types.is_numeric_dtype(a[c])]
    x, y = a[numbers].to_numpy(float), b[numbers].to_numpy(float)
    nan_mismatch = int((np.isnan(x) != np.isnan(y)).sum())
    both = ~np.isnan(x) & ~np.isnan(y)
    diff = np.where(both, np.abs(x - y), 0.0)
    scale = np.where(both, np.maximum(np.abs(x), np.abs(y)), 1.0)
    relative = np.divide(diff, scale, out=np.zeros_like(diff), where=scale > 0)
    worst = numbers[int(np.unravel_index(diff.argmax(), diff.shape)[1])] if diff.size else ""
    where = f" (in {worst})" if diff.max(initial=0.0) > 0 else ""
    return (
        f"max abs difference {diff.max(initial=0.0):.3g}{where}, max relative "
        f"{relative.max(initial=0.0):.3g}, over {len(a)} rows x {len(numbers)} columns; "
        f"NaN mismatches {nan_mismatch}"
    )


# --------------------------------------------------------------------------- main
def count(text: str) -> int:
    """A number of rows as written on the command line: 1e7, 3e7, 100000000."""
    return int(float(text))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=count, nargs="+", default=[10**7, 3 * 10**7, 10**8])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--metrics", type=int, default=1)
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "metaeval-bench-scale",
        help="where the Parquet data are written and reused (default: %(default)s)",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="4GiB", help="per worker (default: %(default)s)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=2,
        help="best of N at every size but the largest of several (default: 2)",
    )
    parser.add_argument(
        "--repeat-largest",
        type=int,
        default=1,
        help="best of N at the largest of several sizes (default: 1)",
    )
    parser.add_argument("--resamples", type=int, default=10_000, help="of the randomization test")
    parser.add_argument("--skip-resampling", action="store_true", help="skip (d)")
    parser.add_argument(
        "--in-memory",
        action="store_true",
        help="also time the pandas path in one process, where it fits",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="compare the dask results with in memory at the smallest size",
    )
    parser.add_argument("--in-memory-child", help=argparse.SUPPRESS)
    parser.add_argument("--check-dir", help=argparse.SUPPRESS)
    # the DuckDB section (issue 31): one node, no cluster
    parser.add_argument(
        "--engine",
        choices=("dask", "duckdb"),
        default="dask",
        help="dask (the cluster above) or duckdb (one node; see main_duckdb)",
    )
    parser.add_argument("--threads", type=int, default=2, help="DuckDB's threads (default: 2)")
    parser.add_argument(
        "--duckdb-memory", default="1.5GB", help="DuckDB's memory_limit (default: %(default)s)"
    )
    parser.add_argument(
        "--duckdb-temp",
        type=Path,
        default=Path(tempfile.gettempdir()) / "metaeval-bench-duckdb-spill",
        help="DuckDB's temp_directory, where it spills (default: %(default)s)",
    )
    parser.add_argument(
        "--floor-memory",
        default="8GB",
        help="DuckDB's memory_limit for the floor where it fails at "
        "--duckdb-memory (default: %(default)s)",
    )
    parser.add_argument(
        "--step-timeout",
        type=float,
        default=3600,
        help="seconds a DuckDB step may take (default: %(default)s)",
    )
    parser.add_argument("--duckdb-child", help=argparse.SUPPRESS)
    parser.add_argument("--duckdb-step", help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    resamples = None if args.skip_resampling else args.resamples
    if args.duckdb_child:
        duckdb_child(
            args.duckdb_child,
            args.duckdb_step,
            args.repeat,
            args.threads,
            args.duckdb_memory,
            str(args.duckdb_temp),
        )
        return
    if args.engine == "duckdb":
        main_duckdb(args)
        return
    if args.in_memory_child:
        in_memory_child(args.in_memory_child, args.repeat, resamples, args.check_dir)
        return

    if any(optional(m, "'metaeval[dask]'") is None for m in NEEDS.split(",")):
        for name, what in (
            ("scale_effects", "dask effects+pool / dask groupby sum"),
            ("scale_effects_pairing", "dask effects+pool / read + factorize the four keys"),
        ):
            result(name, what, float("nan"), "<=1.5", needs=NEEDS)
        return
    import dask
    import dask.dataframe as dd
    import distributed

    warnings.simplefilter("error", metaeval.MetaEvalWarning)  # the synthetic data are clean
    per_query = args.tasks * args.systems * args.metrics
    shapes = {}  # rows -> queries per task
    for rows in sorted(set(args.rows)):
        queries = max(2, round(rows / per_query))
        shapes[queries * per_query] = queries
    sizes = sorted(shapes)
    memory = psutil.virtual_memory()
    print(
        f"dask {dask.__version__}, distributed {distributed.__version__}, pandas {pd.__version__}, "
        f"pyarrow {pa.__version__}; {os.cpu_count()} cores, {memory.total / GB:.1f} GB RAM"
    )
    print(
        f"scores: {args.tasks} tasks x {args.systems} systems x {args.metrics} metrics x "
        f"queries per task = {', '.join(f'{r:,}' for r in sizes)} rows"
    )
    print("data:")
    folders = {
        rows: ensure_data(args.dir, args.tasks, args.systems, args.metrics, shapes[rows])
        for rows in sizes
    }

    cluster = distributed.LocalCluster(
        n_workers=args.workers,
        threads_per_worker=1,
        processes=True,
        memory_limit=args.memory_limit,
        dashboard_address=None,
    )
    client = distributed.Client(cluster)
    sampler = RssSampler(0.1)
    print(
        f"cluster: {args.workers} worker processes x 1 thread, memory limit {args.memory_limit} each"
    )

    def read(folder: Path) -> Any:
        return dd.read_parquet(folder, split_row_groups=False)  # one partition per file

    # warm-up: the workers import metaeval, xarray, scipy on a 2-task table
    warm = dd.read_parquet(sorted(folders[sizes[0]].glob("*.parquet"))[:2], split_row_groups=False)
    warm.groupby(["task", "metric", "system"]).value.sum(split_out=1).compute()
    warm.meta.effects(control=CONTROL).meta.pool()
    warm.meta.effects(control=None)
    if resamples and (warm_compare := dask_compare(warm, 10)) is not None:
        warm_compare()

    results: dict[int, dict[str, Step]] = {}
    memory_results: dict[int, dict[str, Any]] = {}
    model = MemoryModel()
    for rows in sizes:
        folder = folders[rows]
        repeat = args.repeat_largest if rows == sizes[-1] and len(sizes) > 1 else args.repeat
        ddf = read(folder)
        for file in folder.glob("*.parquet"):  # into the page cache: (a) runs first, not cold
            file.read_bytes()
        dtypes = ", ".join(f"{c}: {t}" for c, t in ddf.dtypes.items())
        print(f"\n{rows:,} rows: {ddf.npartitions} partitions, best of {repeat}; {dtypes}")
        if ddf.npartitions != args.tasks:
            print(
                f"  !! {ddf.npartitions} partitions for {args.tasks} files: tasks may be shuffled"
            )
        if any(isinstance(t, pd.CategoricalDtype) for t in ddf.dtypes):
            print("  !! read_parquet gave categorical columns: the keys are meant to be strings")
        steps: dict[str, Step] = {}
        results[rows] = steps

        def floor(ddf: Any = ddf) -> Any:
            return ddf.groupby(["task", "metric", "system"]).value.sum(split_out=1).compute()

        def floor_as_written(ddf: Any = ddf) -> Any:
            return ddf.groupby(["task", "metric", "system"]).value.sum().compute()

        def pairing_floor(ddf: Any = ddf) -> Any:
            return ddf.map_partitions(hash_keys, meta=pd.Series(dtype="int64")).compute()

        def one_control(ddf: Any = ddf) -> Any:
            effects = ddf.meta.effects(control=CONTROL)
            effects.meta.pool()
            return effects

        def all_pairs(ddf: Any = ddf) -> Any:
            return ddf.meta.effects(control=None)

        plan = {
            "a": ("(a) groupby sum (floor)", floor),
            "a0": ("(a0) groupby sum, dask's split_out", floor_as_written),
            "a1": ("(a1) read + hash the four keys", pairing_floor),
            "b": (f"(b) effects(control={CONTROL!r}) + pool", one_control),
            "c": ("(c) effects(control=None)", all_pairs),
        }
        if resamples:
            compare = dask_compare(ddf, resamples)
            if compare is None:
                print(
                    f"  {'(d) compare(randomization)':<34} not available: ddf.meta has no compare()"
                )
            else:
                plan["d"] = (f"(d) compare(randomization, {resamples:,})", compare)
        # the steps in turn, ``repeat`` rounds, the best time of each: the load of other
        # processes on the machine then weighs on every step alike
        for _ in range(repeat):
            for key, (_, fn) in plan.items():
                steps[key] = run_step(client, sampler, fn, steps.get(key))
        for key, (label, _) in plan.items():
            print_step(
                label,
                steps[key],
                steps["a"].seconds if key != "a" else None,
                steps["a1"].seconds if key not in ("a", "a1") else None,
            )

        checking = args.check and rows == sizes[0]
        if args.in_memory or checking:
            available = 0.8 * psutil.virtual_memory().available
            with_compare = resamples if model.needed(rows, bool(resamples)) < available else None
            needed = model.needed(rows, bool(with_compare))
            if needed > available:
                print(
                    f"  in memory: skipped, ~{needed / GB:.1f} GB needed, {available / GB:.1f} GB free"
                )
                continue
            if with_compare != resamples:
                print(
                    f"  in memory: without compare, which would need ~{model.needed(rows, True) / GB:.1f} GB"
                )
            with tempfile.TemporaryDirectory(prefix="metaeval-bench-scale-check-") as out:
                report = run_in_memory(folder, repeat, with_compare, out if checking else None)
                if report is None:
                    continue
                memory_results[rows] = report
                print_in_memory(report)
                model.update(report, rows)
                if checking and steps["b"].result is not None:
                    theirs = pd.read_pickle(Path(out) / "effects.pkl")
                    print(
                        f"  check (b) vs in memory: {max_abs_difference(steps['b'].result, theirs)}"
                    )
                if checking and "d" in steps and steps["d"].result is not None:
                    theirs = pd.read_pickle(Path(out) / "compare.pkl")
                    print(
                        f"  check (d) vs in memory: {max_abs_difference(steps['d'].result, theirs)}"
                    )

    lifetime = client.run(max_rss)
    sampler.close()
    client.close()
    cluster.close()
    summary(results, memory_results, sizes)
    print(
        "peak RSS (VmHWM) of the workers over the whole run, a cross-check of the sampler: "
        + ", ".join(f"{v / GB:.2f} GB" for _, v in sorted(lifetime.items()))
    )


def summary(
    results: dict[int, dict[str, Step]], memory_results: dict[int, dict[str, Any]], sizes: list[int]
) -> None:
    def seconds(step: Step | None, base: float | None) -> str:
        if step is None or step.seconds is None:
            return f"{'-':>17}"
        ratio = f"{step.seconds / base:5.2f}x" if base else "     -"
        return f"{step.seconds:9.2f} {ratio}"

    print("\nsummary (times in s, ratios to (a); RSS: peak of the worker processes, GB)")
    print(
        f"{'rows':>12} {'(a) floor':>9} {'(a1) read+hash':>17} {'(b) effects+pool':>17} "
        f"{'(b)/(a1)':>8} {'(c) all pairs':>17} {'(d) compare':>17}  "
        f"{'peak RSS per worker (a/b/c/d)':<30} {'in memory (b), RSS':>20}"
    )
    for rows in sizes:
        steps = results[rows]
        base = steps["a"].seconds
        pairing = steps["a1"].seconds
        b = steps["b"].seconds
        to_pairing = f"{b / pairing:7.2f}x" if b and pairing else f"{'-':>8}"
        rss = "/".join(f"{steps[k].worker_peak() / GB:.2f}" if k in steps else "-" for k in "abcd")
        memory = memory_results.get(rows)
        in_memory = (
            f"{memory['effects']:8.2f} s {max(v for k, v in memory.items() if k.startswith('rss')) / GB:6.2f} GB"
            if memory
            else f"{'-':>20}"
        )
        print(
            f"{rows:>12,} {base if base is not None else float('nan'):9.2f} "
            f"{seconds(steps.get('a1'), base)} {seconds(steps['b'], base)} {to_pairing} "
            f"{seconds(steps.get('c'), base)} "
            f"{seconds(steps.get('d'), base)}  {rss:<30} {in_memory}"
        )

    small, large = sizes[0], sizes[-1]
    if large > small:
        for key, label in (("a", "(a) floor"), ("b", "(b) effects+pool")):
            t0, t1 = results[small][key].seconds, results[large][key].seconds
            if t0 and t1:
                print(
                    f"linearity {label}: time({large:,}) / time({small:,}) = {t1 / t0:.2f} "
                    f"for {large / small:.1f}x the rows"
                )

    def mark(ok: bool | None) -> str:
        return "n/a " if ok is None else ("PASS" if ok else "MISS")

    print("\ntargets")
    ratios = [
        results[r]["b"].seconds / results[r]["a"].seconds
        for r in sizes
        if results[r]["b"].seconds and results[r]["a"].seconds
    ]
    ok = max(ratios) <= 1.5 if len(ratios) == len(sizes) else False
    worst = f"worst {max(ratios):.2f}x" if ratios else "not measured"
    print(f"  {mark(ok)}  (b) <= 1.5x (a) at every size: {worst}")
    shown = ", ".join(f"{r:.0e}" for r in sizes)
    result(
        "scale_effects",
        f"dask effects+pool / dask groupby sum, worst of {shown} rows",
        max(ratios) if len(ratios) == len(sizes) else float("nan"),
        "<=1.5",
        needs=NEEDS,
    )
    as_written = [
        results[r]["b"].seconds / results[r]["a0"].seconds
        for r in sizes
        if results[r]["b"].seconds and results[r]["a0"].seconds
    ]
    if as_written:
        print(
            f"  {mark(max(as_written) <= 1.5)}  (b) <= 1.5x (a0), the issue's floor as written "
            f"(dask's default split_out): worst {max(as_written):.2f}x"
        )
    to_pairing = [
        results[r]["b"].seconds / results[r]["a1"].seconds
        for r in sizes
        if results[r]["b"].seconds and results[r]["a1"].seconds
    ]
    if to_pairing:
        print(
            f"  {mark(max(to_pairing) <= 1.5)}  (b) <= 1.5x (a1), the read-and-factorize floor "
            f"(issue 31): worst {max(to_pairing):.2f}x"
        )
    result(
        "scale_effects_pairing",
        f"dask effects+pool / read + factorize the four keys, worst of {shown} rows",
        max(to_pairing) if len(to_pairing) == len(sizes) else float("nan"),
        "<=1.5",
        needs=NEEDS,
    )

    at = 10**8 if 10**8 in results else None
    rows = at or large
    steps = results[rows]
    peak = max(s.worker_peak() for s in steps.values())
    which = max(steps, key=lambda k: steps[k].worker_peak())
    if at:
        print(
            f"  {mark(peak <= 2 * GB)}  peak RSS per worker <= 2 GB at 1e8 rows: {peak / GB:.2f} GB ({which})"
        )
        result("scale_rss", "peak RSS per worker at 1e8 rows, GB", peak / GB, "<=2", needs=NEEDS)
    else:
        print(
            f"  {mark(None)}  peak RSS per worker <= 2 GB at 1e8 rows: not run at 1e8 "
            f"(at {rows:,} rows: {peak / GB:.2f} GB, in ({which}))"
        )

    if 10**7 in results and 10**8 in results:
        lo, hi, target = 10**7, 10**8, 12.0
        name = "time(b) at 1e8 / at 1e7 <= 12"
    else:
        lo, hi = small, large
        target = 1.2 * hi / lo
        name = (
            f"time(b) at {hi:,} / at {lo:,} <= {target:.1f} (1.2x the rows ratio; 12 for 1e8/1e7)"
        )
    t0, t1 = results[lo]["b"].seconds, results[hi]["b"].seconds
    if hi > lo and t0 and t1:
        print(f"  {mark(t1 / t0 <= target)}  {name}: {t1 / t0:.2f}")
        result(
            "scale_linear",
            f"time of effects+pool at {hi:.0e} / at {lo:.0e} rows",
            t1 / t0,
            f"<={target:.3g}",
            needs=NEEDS,
        )
    else:
        print(f"  {mark(None)}  {name}: needs two sizes")


# ====================================================== DuckDB on one node (issue 31)
# A separate section: ``--engine duckdb`` runs it instead of the dask cluster above.
DUCKDB_STEPS = ("floor", "effects", "all_pairs", "compare_t", "means", "pandas_check")
SPILL_LIMIT = "20GB"
"""DuckDB's max_temp_directory_size in every step: what it may spill on a shared disk."""
"""What the DuckDB section times, each in a fresh process (its peak RSS is its own)."""


def duckdb_child(
    folder: str, step: str, repeat: int, threads: int, memory_limit: str, temp: str
) -> None:
    """Runs in a fresh process: one step over the Parquet files through DuckDB (on its
    default connection, which ``read_scores(engine="duckdb")`` uses), timed best of
    ``repeat``, with the process's peak RSS; one JSON line."""
    import duckdb

    warnings.simplefilter("error", metaeval.MetaEvalWarning)  # the synthetic data are clean
    duckdb.execute(f"SET threads = {threads}")
    duckdb.execute(f"SET memory_limit = '{memory_limit}'")
    duckdb.execute(f"SET temp_directory = '{temp}'")
    duckdb.execute(f"SET max_temp_directory_size = '{SPILL_LIMIT}'")  # a shared disk
    report: dict[str, Any] = {"rss_start": max_rss()}
    pattern = str(Path(folder) / "*.parquet")
    files = f"read_parquet('{pattern}')"

    def floor() -> Any:  # DuckDB's own four-key aggregation, consumed in the engine
        sql = (
            f"SELECT count(*), sum(s) FROM (SELECT task, metric, system, query, "
            f"sum(value) AS s FROM {files} GROUP BY ALL)"
        )
        return duckdb.sql(sql).fetchall()

    def relation(files: Any = pattern) -> Any:
        return metaeval.io.read_scores(files, engine="duckdb")

    steps = {
        "floor": floor,
        "effects": lambda r=None: metaeval.effects(r or relation(), CONTROL).meta.pool(),
        "all_pairs": lambda r=None: metaeval.effects(r or relation(), None),
        "compare_t": lambda r=None: metaeval.compare(r or relation(), CONTROL, test="t"),
        "means": lambda r=None: metaeval.means(r or relation()),
    }
    if step != "floor" and step in steps:  # warm-up on two files: metaeval's lazy imports
        steps[step](relation(sorted(Path(folder).glob("*.parquet"))[:2]))
    if step == "pandas_check":  # the same effects from pandas (small sizes only)
        ours = metaeval.effects(relation(), CONTROL)
        theirs = metaeval.effects(pd.read_parquet(folder), CONTROL)
        report["check"] = max_abs_difference(ours, theirs)
    else:
        gc.collect()
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        result = steps[step]()
        report["seconds"] = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)  # DuckDB's threads included
        report["cpu"] = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
        report["rows_out"] = len(result)
    report["rss_peak"] = max_rss()
    print(json.dumps(report))


def run_duckdb_step(
    folder: Path, step: str, args: argparse.Namespace, memory: str | None = None
) -> dict[str, Any]:
    """One step in a fresh process (``memory``: DuckDB's memory_limit, if not the usual).
    The floor, which DuckDB cannot always spill (an OutOfMemoryException at 1e8 rows and
    1.5GB), is run again with ``--floor-memory`` when it fails, and says so."""
    memory = memory or args.duckdb_memory
    command = [
        sys.executable,
        __file__,
        "--duckdb-child",
        str(folder),
        "--duckdb-step",
        step,
        "--repeat",
        str(args.repeat),
        "--threads",
        str(args.threads),
        "--duckdb-memory",
        memory,
        "--duckdb-temp",
        str(args.duckdb_temp),
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.step_timeout)
    except subprocess.TimeoutExpired:
        return {"failed": f"not done in {args.step_timeout} s"}
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["?"]
        error = next((line for line in lines if "Error" in line or "Exception" in line), lines[-1])[
            :160
        ]
        if step == "floor" and memory != args.floor_memory:
            out = run_duckdb_step(folder, step, args, args.floor_memory)
            return {**out, "note": f"memory_limit={args.floor_memory} ({memory}: {error})"}
        return {"failed": f"exit code {done.returncode}: {error}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main_duckdb(args: argparse.Namespace) -> None:
    """``--engine duckdb``: effects + pool, all pairs, compare(t) and means through DuckDB
    on one node, against DuckDB's own four-key aggregation over the same files."""
    import duckdb

    per_query = args.tasks * args.systems * args.metrics
    shapes = {}
    for rows in sorted(set(args.rows)):
        queries = max(2, round(rows / per_query))
        shapes[queries * per_query] = queries
    sizes = sorted(shapes)
    print(
        f"duckdb {duckdb.__version__}, pandas {pd.__version__}, pyarrow {pa.__version__}; "
        f"{os.cpu_count()} cores, {psutil.virtual_memory().total / GB:.1f} GB RAM; DuckDB "
        f"threads={args.threads}, memory_limit={args.duckdb_memory}, temp_directory={args.duckdb_temp}"
    )
    print(f"scores: {args.tasks} tasks x {args.systems} systems x {args.metrics} metrics")
    print("data:")
    folders = {
        rows: ensure_data(args.dir, args.tasks, args.systems, args.metrics, shapes[rows])
        for rows in sizes
    }
    args.duckdb_temp.mkdir(parents=True, exist_ok=True)
    steps = [s for s in DUCKDB_STEPS if s != "pandas_check"]
    results: dict[int, dict[str, dict[str, Any]]] = {}
    for rows in sizes:
        folder = folders[rows]
        for file in folder.glob("*.parquet"):  # into the page cache: the floor runs first, not cold
            file.read_bytes()
        print(
            f"\n{rows:,} rows, best of {args.repeat} rounds (each step in a fresh process, "
            "the steps taking turns):"
        )
        results[rows] = {}
        for round_ in range(args.repeat):
            for step in steps:
                out = run_duckdb_step(folder, step, args)
                best = results[rows].setdefault(step, out)
                if "seconds" in out and out["seconds"] < best.get("seconds", float("inf")):
                    peak = max(out["rss_peak"], best.get("rss_peak", 0))
                    results[rows][step] = {**out, "rss_peak": peak}
                elif "rss_peak" in out and "rss_peak" in best:
                    best["rss_peak"] = max(best["rss_peak"], out["rss_peak"])
                if "failed" in out:
                    print(f"  round {round_ + 1} {step:<12} {out['failed']}")
                    continue
                print(
                    f"  round {round_ + 1} {step:<12} {out['seconds']:8.2f} s (cpu "
                    f"{out['cpu']:7.2f} s)   peak RSS {out['rss_peak'] / GB:.2f} GB   "
                    f"({out['rows_out']:,} rows back) {out.get('note', '')}"
                )
        if args.check and rows == sizes[0]:
            out = run_duckdb_step(folder, "pandas_check", args)
            print(f"  check effects(s0) vs pandas: {out.get('check', out.get('failed'))}")

    print(
        "\nsummary (times in s; ratios to DuckDB's four-key aggregation; peak RSS of the "
        "processes of metaeval's steps and of the floor's, GB)"
    )
    print(
        f"{'rows':>14} {'floor':>8} {'effects+pool':>18} {'all pairs':>18} {'compare t':>18} "
        f"{'means':>18} {'peak RSS':>9} {'(floor)':>8}"
    )

    def cell(out: dict[str, Any], floor: float | None, key: str) -> str:
        if key not in out:
            return f"{'failed':>18}"
        return f"{out[key]:9.2f} {out[key] / floor:6.2f}x" if floor else f"{out[key]:18.2f}"

    for key in ("seconds", "cpu"):
        print(f"  {'wall' if key == 'seconds' else 'cpu'} time:")
        for rows in sizes:
            res = results[rows]
            floor = res["floor"].get(key)
            peak = max(o.get("rss_peak", 0) for s, o in res.items() if s != "floor")
            print(
                f"{rows:>14,} {floor if floor else float('nan'):8.2f} "
                + " ".join(cell(res[s], floor, key) for s in steps[1:])
                + f" {peak / GB:9.2f} {res['floor'].get('rss_peak', 0) / GB:8.2f}"
            )
    print("\ntargets (issue 31)")
    at = 3 * 10**7 if 3 * 10**7 in results else sizes[0]
    res = results[at]
    if "seconds" in res["effects"] and res["floor"].get("seconds"):
        ratio = res["effects"]["seconds"] / res["floor"]["seconds"]
        mark = "PASS" if ratio <= 1.5 else "MISS"
        print(
            f"  {mark}  effects+pool <= 1.5x DuckDB's four-key aggregation at {at:,} rows: {ratio:.2f}x"
        )
    peak = max(o.get("rss_peak", 0) for s, o in res.items() if s != "floor")
    print(
        f"  {'PASS' if peak < 2 * GB else 'MISS'}  peak RSS < 2 GB at {at:,} rows: "
        f"{peak / GB:.2f} GB (the floor's: {res['floor'].get('rss_peak', 0) / GB:.2f} GB)"
    )


if __name__ == "__main__":
    main()

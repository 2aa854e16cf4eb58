"""Run every benchmark in this folder and print one table of their ratios and targets.

Each ``bench_*.py`` ends with ``RESULT`` lines (``benchmarks/_result.py``): a name, the
ratio it measured (against a baseline timed in the same process) and its target from the
docs and the issues (``>=N`` a speed-up to reach, ``<=N`` an overhead or memory ratio to
stay under, ``-`` none). This script runs them one after the other (quick sizes unless
``--full``), reads those lines and prints::

    benchmark | what | ratio | target | PASS/MISS

Nothing is asserted: a MISS is reported, not raised; the exit status is 1 only when a
benchmark failed to run or printed no RESULT line. Run it before merging a change that
touches a hot path, with the before/after tables in the merge's note (docs/contributing.md).
The machine is shared: repeat a MISS before believing it.

    python benchmarks/run_all.py                 # quick sizes, every benchmark (~15 min)
    python benchmarks/run_all.py --full          # the sizes the docs report (hours)
    python benchmarks/run_all.py --only bench_ir bench_significance
    python benchmarks/run_all.py --list          # the benchmarks and their arguments
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Every benchmark: (arguments of the quick run, arguments of the full run).
BENCHMARKS: dict[str, tuple[list[str], list[str]]] = {
    "bench_effects": (["--queries", "500", "--repeat", "2"], []),
    "bench_pooling": (["--groups", "10000", "--subset", "200"], []),
    "bench_significance": (
        ["--tasks", "5", "--pairs", "1", "--no-scipy", "--repeat", "2"],
        ["--repeat", "3"],
    ),
    "bench_ir": (
        ["--repeat", "9"],
        [
            "--repeat",
            "15",
            "--synthetic",
            "--collections",
            "trec-covid",
            "tripclick",
            "nfcorpus",
            "dbpedia-entity",
            "antique",
            "trec_podcast",
        ],
    ),
    "bench_ranking": (["--segments", "500"], []),
    "bench_many_systems": (
        ["--systems", "20", "--tasks", "50", "--samples", "5000", "--bayes-pairs", "1"],
        [],
    ),
    "bench_metareg": (["--groups", "2000", "--subset", "100"], []),
    "bench_bayes": (["--groups", "200", "--subset", "10"], []),
    "bench_scale": (["--rows", "1e6", "3e6", "--repeat", "1", "--skip-resampling"], []),
    "bench_import": (["--rounds", "5"], []),
}


def parse_results(output: str) -> list[dict[str, str]]:
    """The ``RESULT key=value ...`` lines of a benchmark's output, as dicts."""
    rows = []
    for line in output.splitlines():
        if line.startswith("RESULT "):
            rows.append(dict(field.split("=", 1) for field in shlex.split(line[len("RESULT ") :])))
    return rows


def verdict(ratio: str, target: str) -> str:
    """PASS or MISS against ``>=N`` / ``<=N``; ``-`` without a target; ``n/a`` unmeasured."""
    if target in ("", "-"):
        return "-"
    try:
        value, bound = float(ratio), float(target[2:])
    except ValueError:
        return "n/a"
    if value != value:  # NaN
        return "n/a"
    return "PASS" if (value >= bound if target.startswith(">=") else value <= bound) else "MISS"


def table(rows: list[tuple[str, str, str, str, str]]) -> str:
    header = ("benchmark", "what", "ratio", "target", "PASS/MISS")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
    lines = [" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("-+-".join("-" * w for w in widths))
    for row in rows:
        lines.append(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--full", action="store_true", help="the full sizes (each script's defaults)"
    )
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these benchmarks only")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and stop")
    parser.add_argument("--log", type=Path, help="write each benchmark's full output here")
    args = parser.parse_args()

    found = sorted(p.stem for p in HERE.glob("bench_*.py"))
    unknown = sorted(set(found) - set(BENCHMARKS))
    if unknown:  # tests/test_benchmarks.py checks this too
        print(f"run_all.py does not know {unknown}: add them to BENCHMARKS", file=sys.stderr)
        return 2
    if args.list:
        for name, (quick, full) in BENCHMARKS.items():
            print(
                f"{name}  quick: {shlex.join(quick) or '(defaults)'}  full: {shlex.join(full) or '(defaults)'}"
            )
        return 0
    names = args.only or list(BENCHMARKS)
    missing = [n for n in names if n not in BENCHMARKS]
    if missing:
        parser.error(f"unknown benchmark(s) {missing}; see --list")
    if args.log:
        args.log.mkdir(parents=True, exist_ok=True)

    rows, failed = [], False
    for name in names:
        extra = BENCHMARKS[name][1 if args.full else 0]
        command = [sys.executable, str(HERE / f"{name}.py"), *extra]
        print(f"== {name}: {shlex.join(command[1:])}", flush=True)
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, cwd=HERE)
        took = time.perf_counter() - start
        if args.log:
            (args.log / f"{name}.txt").write_text(done.stdout + done.stderr)
        results = parse_results(done.stdout)
        print(f"   {took:7.1f} s, exit {done.returncode}, {len(results)} result(s)", flush=True)
        if done.returncode != 0 or not results:
            failed = True
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            rows.append((name, "failed: " + " / ".join(tail)[:100], "-", "-", "FAIL"))
            continue
        for r in results:
            rows.append(
                (
                    name,
                    r.get("what", r["name"]),
                    r["ratio"],
                    r["target"],
                    verdict(r["ratio"], r["target"]),
                )
            )
    print()
    print(table(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

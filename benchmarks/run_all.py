"""Run every benchmark in this folder and print one table of their ratios and targets.

Each ``bench_*.py`` ends with ``RESULT`` lines (``benchmarks/_result.py``): a name, the
ratio it measured (against a baseline timed in the same process) and its target from the
docs and the issues (``>=N`` a speed-up to reach, ``<=N`` an overhead or memory ratio to
stay under, ``-`` none). This script runs them one after the other (quick sizes unless
``--full`` or ``--tiny``), reads those lines and prints::

    benchmark | what | ratio | target | PASS/MISS

Nothing is asserted: a MISS is reported, not raised; the exit status is 1 only when a
benchmark failed to run or printed no RESULT line. Run it before merging a change that
touches a hot path, with the before/after tables in the merge's note (docs/contributing.md).
The machine is shared: repeat a MISS before believing it.

    python benchmarks/run_all.py                 # quick sizes, every benchmark (~15 min)
    python benchmarks/run_all.py --full          # the sizes the docs report (hours)
    python benchmarks/run_all.py --tiny          # seconds each: does every one run? (the tests)
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
from typing import NamedTuple

HERE = Path(__file__).resolve().parent


class Sizes(NamedTuple):
    """A benchmark's arguments at each size (``[]``: the script's defaults)."""

    #: seconds: does it still run? (tests/test_benchmarks.py runs every script at this size)
    tiny: list[str]
    #: minutes: the default of this script, for a before/after table of a merge
    quick: list[str]
    #: the sizes the docs report (hours for all of them)
    full: list[str]


#: Every benchmark and its arguments at each size.
BENCHMARKS: dict[str, Sizes] = {
    "bench_effects": Sizes(
        tiny=[
            "--systems",
            "3",
            "--tasks",
            "2",
            "--metrics",
            "1",
            "--queries",
            "50",
            "--repeat",
            "1",
        ],
        quick=["--queries", "500", "--repeat", "2"],
        full=[],
    ),
    "bench_judges": Sizes(
        tiny=["--tasks", "3", "--items", "60", "--judges", "3", "--resamples", "50", "--loop", "2"],
        quick=["--tasks", "10", "--items", "1000", "--resamples", "500"],
        full=[],
    ),
    "bench_facets": Sizes(
        tiny=["--data", "generated", "--ratings", "2000", "--rows", "100", "--cols", "50"]
        + ["--groups", "1", "--queries", "20", "--anova-groups", "20", "--no-r"],
        quick=[],
        full=[],
    ),
    "bench_pooling": Sizes(
        tiny=["--groups", "50", "--k", "5", "--subset", "5"],
        quick=["--groups", "10000", "--subset", "200"],
        full=[],
    ),
    "bench_significance": Sizes(
        tiny=[
            "--systems",
            "3",
            "--tasks",
            "2",
            "--queries",
            "50",
            "--resamples",
            "200",
            "--pairs",
            "1",
        ],
        quick=["--tasks", "5", "--pairs", "1", "--no-scipy", "--repeat", "2"],
        full=["--repeat", "3"],
    ),
    "bench_ir": Sizes(
        tiny=["--repeat", "1", "--synthetic", "--queries", "20", "--depth", "10", "--systems", "2"],
        quick=["--repeat", "9"],
        full=[
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
    "bench_ranking": Sizes(
        tiny=["--tasks", "2", "--segments", "20", "--systems", "3"],
        quick=["--segments", "500"],
        full=[],
    ),
    "bench_many_systems": Sizes(
        tiny=["--systems", "4", "--tasks", "8", "--samples", "200", "--bayes-pairs", "1"],
        quick=["--systems", "20", "--tasks", "50", "--samples", "5000", "--bayes-pairs", "1"],
        full=[],
    ),
    "bench_metareg": Sizes(
        tiny=["--groups", "20", "--k", "10", "--subset", "5"],
        quick=["--groups", "2000", "--subset", "100"],
        full=[],
    ),
    "bench_bayes": Sizes(
        tiny=["--groups", "20", "--subset", "3"],
        quick=["--groups", "200", "--subset", "10"],
        full=[],
    ),
    "bench_scale": Sizes(
        tiny=[
            "--rows",
            "2e3",
            "4e3",
            "--tasks",
            "4",
            "--systems",
            "3",
            "--workers",
            "1",
            "--repeat",
            "1",
            "--resamples",
            "100",
        ],
        quick=["--rows", "1e6", "3e6", "--repeat", "1", "--skip-resampling"],
        full=[],
    ),
    "bench_import": Sizes(
        tiny=["--rounds", "1", "--warm-up", "0"],
        quick=["--rounds", "5"],
        full=[],
    ),
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
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true", help="the sizes the docs report")
    size.add_argument("--tiny", action="store_true", help="seconds each: does every one still run?")
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
        for name, sizes in BENCHMARKS.items():
            shown = (f"{k}: {shlex.join(v) or '(defaults)'}" for k, v in sizes._asdict().items())
            print(f"{name}  " + "  ".join(shown))
        return 0
    names = args.only or list(BENCHMARKS)
    missing = [n for n in names if n not in BENCHMARKS]
    if missing:
        parser.error(f"unknown benchmark(s) {missing}; see --list")
    if args.log:
        args.log.mkdir(parents=True, exist_ok=True)

    rows, failed = [], False
    for name in names:
        sizes = BENCHMARKS[name]
        extra = sizes.full if args.full else sizes.tiny if args.tiny else sizes.quick
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

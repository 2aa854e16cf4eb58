"""Benchmark: the cost of ``import metaeval`` against importing its own core libraries.

Each measurement is a fresh interpreter (``python -c``) timing its import with
``time.perf_counter`` — so nothing is cached in ``sys.modules`` — alternating the
three statements below so that the machine's load hits them alike:

- baseline: ``import pandas, xarray, pandera``;
- the two of them ``import metaeval`` loads: ``import pandas, xarray``;
- metaeval: ``import metaeval`` (pandera, scipy and the rest load on first use);
- first use: ``import metaeval`` plus ``scores.meta.effects(...)`` on a tiny table,
  which brings in what the first analysis needs.

Prints the medians and the ratio metaeval / baseline (target of issue 13: at most
1.15) and which heavy libraries ``import metaeval`` leaves unloaded.

    python benchmarks/bench_import.py             # 15 rounds
    python benchmarks/bench_import.py --rounds 5
    python benchmarks/bench_import.py --rounds 1 --warm-up 0   # tiny: does it run?
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from _result import result

HEAVY = ("scipy", "matplotlib", "seaborn", "jinja2", "rich", "ir_measures", "pandera", "sklearn")

STATEMENTS = {
    "baseline: import pandas, xarray, pandera": "import pandas, xarray, pandera",
    "import pandas, xarray": "import pandas, xarray",
    "import metaeval": "import metaeval",
    "import metaeval + first effects()": (
        "import metaeval\nmetaeval.load_example().meta.effects(control='knn')"
    ),
}


def timed(statement: str) -> float:
    code = "import time\nt = time.perf_counter()\n" + statement + "\nprint(time.perf_counter() - t)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return float(out.strip().splitlines()[-1])


def loaded_after_import() -> list[str]:
    code = f"import sys, json, metaeval; print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument(
        "--warm-up", type=int, default=1, help="untimed rounds first (the file system cache)"
    )
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    for _ in range(args.warm_up):
        for statement in STATEMENTS.values():
            timed(statement)
    for _ in range(args.rounds):
        for name, statement in STATEMENTS.items():
            times[name].append(timed(statement))
    median = {name: statistics.median(t) for name, t in times.items()}
    base = median["baseline: import pandas, xarray, pandera"]
    print(f"median of {args.rounds} fresh interpreters, {sys.version.split()[0]}")
    for name, m in median.items():
        print(f"  {name:<38} {m:6.3f} s   ratio to baseline {m / base:5.2f}")
    print(f"heavy libraries loaded by `import metaeval`: {loaded_after_import() or 'none'}")
    result(
        "import",
        f"import metaeval / import pandas, xarray, pandera (medians of {args.rounds})",
        median["import metaeval"] / base,
        "<=1.15",
    )


if __name__ == "__main__":
    main()

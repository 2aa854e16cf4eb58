"""Benchmark: the crossed random-effects engine of ``metaeval.facets`` against lme4.

Fits ``y ~ 1 + (1|s) + (1|d)`` by REML on lme4's InstEval (73,421 ratings, 2,972 students ×
1,128 lecturers; tests/fixtures/facets/insteval.csv.gz), or on a generated crossed design
of ``--ratings`` ratings over ``--rows`` × ``--cols`` levels, and prints the time against
``lme4::lmer`` run on the same data on the same machine (Rscript with lme4; skipped, ratio
nan, without it): target lme4 / metaeval ≥ 1 (not slower than lme4). Then the facets() call
per (task, metric) group of a balanced 300 queries × 5 prompts × 3 seeds × 2 systems design
by REML, for information, and ``--anova-groups`` such groups by ANOVA in one call (the
issue's target: 1,000 groups in a few seconds), against the REML time per group.

    python benchmarks/bench_facets.py                      # InstEval, 4 groups
    python benchmarks/bench_facets.py --data generated --ratings 2000 --rows 100 --cols 50
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from _result import result

import metaeval
from metaeval.variance._mixed import CrossedDesign, fit

INSTEVAL = Path(__file__).parents[1] / "tests" / "fixtures" / "facets" / "insteval.csv.gz"

R_FIT = """
suppressMessages(library(lme4))
d <- read.csv("{path}"); d$s <- factor(d$s); d$d <- factor(d$d)
t <- system.time(f <- lmer(y ~ 1 + (1 | s) + (1 | d), d, REML = TRUE))[["elapsed"]]
cat(sprintf("%.6f %.17g\\n", t, REMLcrit(f)))
"""


def crossed(ratings: int, rows: int, cols: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    s, d = rng.integers(0, rows, ratings), rng.integers(0, cols, ratings)
    y = rng.normal(0, 0.3, rows)[s] + rng.normal(0, 0.5, cols)[d] + rng.normal(0, 1.2, ratings)
    return pd.DataFrame({"s": s, "d": d, "y": y})


def lme4_time(data: pd.DataFrame) -> tuple[float, float]:
    """lme4's elapsed fit time and REML criterion, or NaNs without Rscript and lme4."""
    if shutil.which("Rscript") is None:
        return float("nan"), float("nan")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.csv"
        data.to_csv(path, index=False)
        run = subprocess.run(
            ["Rscript", "-e", R_FIT.format(path=path)], capture_output=True, text=True, timeout=600
        )
    if run.returncode != 0:
        print("lme4 is not available:", run.stderr.strip().splitlines()[-1:])
        return float("nan"), float("nan")
    seconds, crit = run.stdout.split()
    return float(seconds), float(crit)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", choices=("insteval", "generated"), default="insteval")
    parser.add_argument("--ratings", type=int, default=73421)
    parser.add_argument("--rows", type=int, default=2972)
    parser.add_argument("--cols", type=int, default=1128)
    parser.add_argument("--groups", type=int, default=4, help="facets() groups timed")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--anova-groups", type=int, default=1000, help="groups fitted by ANOVA")
    parser.add_argument("--no-r", action="store_true", help="skip lme4")
    args = parser.parse_args()
    if args.data == "insteval":
        data = pd.read_csv(INSTEVAL)
    else:
        data = crossed(args.ratings, args.rows, args.cols)
    print(f"{len(data):,} ratings, {data['s'].nunique():,} x {data['d'].nunique():,} levels")
    start = time.perf_counter()
    codes = [pd.factorize(data[c])[0] for c in ("s", "d")]
    design = CrossedDesign.of(data["y"].to_numpy(float), np.ones((len(data), 1)), codes)
    model = fit(design, reml=True)
    ours = time.perf_counter() - start
    print(f"metaeval REML fit : {ours:8.2f} s  (REML criterion {model.deviance:.6f})")
    theirs, crit = (float("nan"), float("nan")) if args.no_r else lme4_time(data)
    print(f"lme4::lmer REML   : {theirs:8.2f} s  (REML criterion {crit:.6f})")
    result(
        "facets_reml_vs_lme4",
        f"lme4::lmer / metaeval's REML fit, y ~ 1 + (1|s) + (1|d), {len(data):,} ratings",
        theirs / ours,
        ">=1",
        needs="lme4",
    )
    rng = np.random.default_rng(1)
    grid = np.meshgrid(
        np.arange(args.groups),
        np.arange(args.queries),
        np.arange(5),
        np.arange(3),
        np.arange(2),
        indexing="ij",
    )
    g, q, p, s, m = (a.ravel() for a in grid)
    value = rng.normal(0, 1, (args.groups, args.queries))[g, q] + rng.normal(0, 0.5, len(g))
    table = pd.DataFrame(
        {
            "task": g.astype(str),
            "query": q,
            "prompt": p,
            "seed": s,
            "system": m.astype(str),
            "metric": "m",
            "value": value + 0.1 * m,
        }
    )
    start = time.perf_counter()
    metaeval.facets(table, ["query", "prompt", "seed"])
    per_group = (time.perf_counter() - start) / args.groups
    print(
        f"facets(), {args.queries} queries x 5 prompts x 3 seeds x 2 systems: {per_group:6.2f} s "
        "per (task, metric) group (REML, Satterthwaite df)"
    )
    big = args.anova_groups
    grid = np.meshgrid(
        np.arange(big),
        np.arange(args.queries),
        np.arange(5),
        np.arange(3),
        np.arange(2),
        indexing="ij",
    )
    g, q, p, s, m = (a.ravel() for a in grid)
    many = pd.DataFrame(
        {
            "task": g,
            "query": q,
            "prompt": p,
            "seed": s,
            "system": m,
            "metric": "m",
            "value": rng.normal(0, 1, (big, args.queries))[g, q] + rng.normal(0, 0.5, len(g)),
        }
    )
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pure-noise components below 0 are said, not needed here
        metaeval.facets(many, ["query", "prompt", "seed"], method="ANOVA")
    anova = time.perf_counter() - start
    print(f"facets(method='ANOVA'), {big} such groups ({len(many):,} rows): {anova:6.2f} s")
    result(
        "facets_anova_vs_reml",
        f"REML seconds for {big} groups (per-group time x {big}) / ANOVA's one call",
        per_group * big / anova,
    )
    result(
        "facets_reml_group_seconds",
        f"seconds per facets() group of {args.queries} x 5 x 3 x 2 (REML), for information",
        per_group,
    )


if __name__ == "__main__":
    main()

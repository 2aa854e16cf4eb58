"""Benchmark: metaeval's rank tests and Bayesian signed-rank test against scikit-posthocs and baycomp.

100 systems x 200 tasks x 3 metrics (one score per task): the post-hoc tests for all
4,950 pairs of each metric (Nemenyi; Wilcoxon-Holm), and the Bayesian signed-rank
test of 99 systems against a control with 50,000 posterior draws, each metric. The
references are called as a user would: scikit-posthocs once per metric on the
(task x system) matrix, baycomp once per (metric, pair). baycomp takes seconds per
pair, so it is timed on --bayes-pairs pairs and scaled to all 297 (the time per pair
does not depend on the pair); the post-hoc times are the best of 3 calls, after a first
call on a small table (imports). Prints each time and the ratio (target of issue 16:
metaeval at least 20x faster).

    pip install 'metaeval[test]'   # scikit-posthocs, baycomp
    python benchmarks/bench_many_systems.py
    python benchmarks/bench_many_systems.py --systems 20 --tasks 50 --samples 5000   # quick
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from _result import optional, result

from metaeval.ranking import bayes_signed_rank, posthoc

METRICS = ("m1", "m2", "m3")
nan = float("nan")


def make(systems: int, tasks: int, seed: int = 0) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """A scores table with one row per (task, system, metric), and the same as matrices."""
    rng = np.random.default_rng(seed)
    wide = {}
    for metric in METRICS:
        skill = rng.normal(0, 0.02, systems)
        difficulty = rng.uniform(0.2, 0.8, tasks)
        wide[metric] = np.clip(
            difficulty[:, None] + skill[None, :] + rng.normal(0, 0.03, (tasks, systems)), 0, 1
        )
    names = np.array([f"s{j:03d}" for j in range(systems)])
    task_names = np.array([f"t{i:03d}" for i in range(tasks)])
    frames = [
        pd.DataFrame(
            {
                "task": np.repeat(task_names, systems),
                "system": np.tile(names, tasks),
                "metric": metric,
                "value": x.ravel(),
            }
        )
        for metric, x in wide.items()
    ]
    return pd.concat(frames, ignore_index=True), wide


def timed(func, *args, repeat: int = 1, **kwargs):
    """The result and the best time of ``repeat`` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        out = func(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return out, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--systems", type=int, default=100)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--samples", type=int, default=50_000)
    parser.add_argument("--bayes-pairs", type=int, default=3, help="baycomp pairs timed")
    args = parser.parse_args()
    baycomp = optional("baycomp")
    sp = optional("scikit_posthocs", "scikit-posthocs")

    scores, wide = make(args.systems, args.tasks)
    k, n = args.systems, args.tasks
    print(
        f"{k} systems x {n} tasks x {len(METRICS)} metrics; {k * (k - 1) // 2:,} pairs per metric"
    )

    small, _ = make(5, 10, seed=1)  # first calls import and set up; not timed
    posthoc(small)
    posthoc(small, test="wilcoxon_holm")
    bayes_signed_rank(small, control="s000", n_draws=100, seed=1)

    rows = []
    for method, reference in (
        ("nemenyi", lambda x: sp.posthoc_nemenyi_friedman(x)),
        ("wilcoxon_holm", lambda x: sp.posthoc_wilcoxon(x.T.tolist(), p_adjust="holm")),
    ):
        ours, t_ours = timed(posthoc, scores, test=method, repeat=3)
        if sp is None:
            rows.append((f"post-hoc {method}", t_ours, "scikit-posthocs", nan, nan))
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            every = lambda f=reference: {m: f(x) for m, x in wide.items()}  # noqa: E731
            refs, t_ref = timed(every, repeat=3)
        worst = 0.0
        for metric, ref in refs.items():  # the same p-values
            part = ours.table[ours.table["metric"] == metric]
            a = part["system_a"].str[1:].astype(int).to_numpy()
            b = part["system_b"].str[1:].astype(int).to_numpy()
            worst = max(worst, float(np.abs(ref.to_numpy()[a, b] - part["p_adjusted"]).max()))
        rows.append((f"post-hoc {method}", t_ours, "scikit-posthocs", t_ref, worst))

    control = "s000"
    ours, t_ours = timed(bayes_signed_rank, scores, control=control, n_draws=args.samples, seed=1)
    pairs = [(metric, j) for metric in METRICS for j in range(1, k)]
    timed_pairs = pairs[: args.bayes_pairs]
    t_pair = t_ref = worst = nan
    if baycomp is not None:
        start = time.perf_counter()
        probs = [
            baycomp.SignedRankTest.probs(
                wide[m][:, 0], wide[m][:, j], rope=0.01, nsamples=args.samples, random_state=j
            )
            for m, j in timed_pairs
        ]
        t_pair = (time.perf_counter() - start) / len(timed_pairs)
        t_ref = t_pair * len(pairs)
        probs_of = ["prob_worse", "prob_equivalent", "prob_better"]
        got = ours.table.set_index(["metric", "treatment"])[probs_of]
        worst = max(
            float(np.abs(np.array(p) - got.loc[(m, f"s{j:03d}")].to_numpy()).max())
            for (m, j), p in zip(timed_pairs, probs, strict=True)
        )
    rows.append(
        (
            f"Bayesian signed-rank, {len(pairs)} pairs",
            t_ours,
            f"baycomp ({t_pair:.2f} s/pair x {len(pairs)})",
            t_ref,
            worst,
        )
    )

    print(f"{'step':<38}{'metaeval':>10}  {'reference':<34}{'time':>9}{'ratio':>8}  max |diff|")
    for step, t1, name, t2, diff in rows:
        print(f"{step:<38}{t1:>9.2f}s  {name:<34}{t2:>8.2f}s{t2 / t1:>7.1f}x  {diff:.1e}")
    for (step, t1, _, t2, _), name, needs in zip(
        rows,
        ("nemenyi", "wilcoxon_holm", "bayes_signed_rank"),
        ("scikit_posthocs", "scikit_posthocs", "baycomp"),
        strict=True,
    ):
        result(
            f"many_systems_{name}",
            f"reference / metaeval, {step}, {k} systems x {n} tasks",
            t2 / t1,
            ">=20",
            needs=needs,
        )
    se = 0.5 / np.sqrt(args.samples)
    print(
        f"(Bayesian probabilities: Monte-Carlo error of each side up to {se:.4f}; "
        "the other differences are floating point)"
    )


if __name__ == "__main__":
    main()

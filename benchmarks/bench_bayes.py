"""Benchmark: Bayesian pooling of many groups at once against quadrature one group at a time.

Builds G groups of k = 10 tasks and pools them with ``metaeval.bayes_pool()`` (half-normal
prior on τ with scale 0.5: the posterior of τ on a grid shared by the groups, the quantiles
of μ, of a new task's θ and of every task's shrunken θ). Baselines, run in the same process
on a subset and extrapolated per group: the same function called once per group (what the
batching saves), and scipy's ``quad`` for the normalizing constant and the τ median of one
group (``brentq`` on the quadrature CDF): a floor for any per-group loop, as it gives only
τ's median, not μ's, θ_new's or the tasks' quantiles.

    python benchmarks/bench_bayes.py                 # 1,000 groups
    python benchmarks/bench_bayes.py --groups 5000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from _result import result
from scipy import integrate, optimize, stats

import metaeval


def make_effects(groups: int, k: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    v = rng.uniform(0.005, 0.05, (groups, k))
    y = rng.normal(0.2, 0.3, (groups, 1)) + rng.normal(0, np.sqrt(v + 0.02))
    return pd.DataFrame(
        {
            "metric": np.repeat([f"m{g}" for g in range(groups)], k),
            "task": np.tile([f"t{j}" for j in range(k)], groups),
            "effect": y.ravel(),
            "variance": v.ravel(),
        }
    )


def tau_median_by_quad(y: np.ndarray, v: np.ndarray, scale: float = 0.5) -> float:
    """The posterior median of τ (flat μ, half-normal prior) by scipy quadrature."""

    def density(tau: float) -> float:
        w = 1 / (v + tau**2)
        mu = (w * y).sum() / w.sum()
        log = -0.5 * np.log(w.sum()) + 0.5 * np.log(w).sum() - 0.5 * (w * (y - mu) ** 2).sum()
        return 2 * stats.norm.pdf(tau / scale) / scale * np.exp(log)

    total = integrate.quad(density, 0, np.inf, epsabs=1e-12)[0]
    cdf = lambda t: integrate.quad(density, 0, t, epsabs=1e-12)[0] / total - 0.5  # noqa: E731
    return optimize.brentq(cdf, 0, 20 * scale, xtol=1e-10)


def best_of(func, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--subset", type=int, default=20, help="groups fitted one by one")
    args = parser.parse_args()
    eff = make_effects(args.groups, args.k)
    print(f"{args.groups:,} groups x k = {args.k} ({len(eff):,} effects)")
    metaeval.bayes_pool(eff.head(args.k * 5))  # warm-up: lazy imports
    batch = best_of(lambda: metaeval.bayes_pool(eff)) / args.groups
    names = eff["metric"].unique()[: args.subset]
    parts = [eff[eff["metric"] == name] for name in names]
    one = best_of(lambda: [metaeval.bayes_pool(p) for p in parts], repeat=1) / len(parts)
    arrays = [(p["effect"].to_numpy(), p["variance"].to_numpy()) for p in parts]
    quad = best_of(lambda: [tau_median_by_quad(y, v) for y, v in arrays], repeat=1) / len(parts)
    print(f"bayes_pool, all groups at once     : {batch * 1e3:8.3f} ms per group")
    print(
        f"bayes_pool, one call per group     : {one * 1e3:8.3f} ms per group -> ratio {one / batch:.0f}x"
    )
    print(
        f"scipy quad, τ median only, per group: {quad * 1e3:8.3f} ms per group -> ratio {quad / batch:.0f}x"
    )
    groups = f"{args.groups:,} groups of k = {args.k}"
    result(
        "bayes_per_group", f"bayes_pool once per group / all groups at once, {groups}", one / batch
    )
    result(
        "bayes_quad", f"scipy quad (tau median only) / bayes_pool per group, {groups}", quad / batch
    )
    got = metaeval.bayes_pool(parts[0]).table["tau_median"].item()
    print(
        f"same τ median as quad on the first group: {abs(got - tau_median_by_quad(*arrays[0])) < 1e-6}"
    )


if __name__ == "__main__":
    main()

"""Benchmark: meta-regressions of many groups at once against fitting them one by one.

Builds G groups (a treatment each) of k = 20 tasks with a numeric moderator and a
three-level factor, and fits them with ``metaeval.metareg(method="REML",
test="knha")`` and ``method="EE"`` in one call. Baselines, run in the same process on
a subset and extrapolated per group: the same function called once per group (what
the batching saves), and statsmodels' ``WLS`` per group (the common-effect model's
coefficients only, no τ², Q_M, Q_E or R²: a floor for any per-group loop).

    python benchmarks/bench_metareg.py                 # 20,000 groups
    python benchmarks/bench_metareg.py --groups 2000   # a quick run
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from _result import optional, result

import metaeval


def make_effects(groups: int, k: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(groups, k))
    domain = rng.choice(["bio", "news", "web"], size=(groups, k))
    domain[:, :3] = ["bio", "news", "web"]  # every level in every group
    tau2 = rng.exponential(0.02, (groups, 1))
    v = np.exp(rng.uniform(np.log(0.001), np.log(0.1), (groups, k)))
    y = 0.1 + 0.05 * x + 0.1 * (domain == "web") + rng.normal(0, np.sqrt(tau2 + v))
    return pd.DataFrame(
        {
            "treatment": np.repeat([f"system{g}" for g in range(groups)], k),
            "task": np.tile([f"task{i}" for i in range(k)], groups),
            "effect": y.ravel(),
            "variance": v.ravel(),
            "x": x.ravel(),
            "domain": domain.ravel(),
        }
    )


def best_of(func, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, default=20_000)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--subset", type=int, default=200, help="groups fitted one by one")
    args = parser.parse_args()
    sm = optional("statsmodels.api", "statsmodels")

    eff = make_effects(args.groups, args.k)
    mods = ["x", "domain"]
    with warnings.catch_warnings():  # a few groups' REML fits are reset to τ² = 0
        warnings.simplefilter("ignore", metaeval.DegenerateWarning)
        metaeval.metareg(eff.head(args.k * 10), mods)  # warm-up (imports)
        t_reml = best_of(lambda: metaeval.metareg(eff, mods, method="REML", test="knha"))
        t_ee = best_of(lambda: metaeval.metareg(eff, mods, method="EE"))

    sub = eff.head(args.k * args.subset)
    parts = [part for _, part in sub.groupby("treatment", sort=False)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loop_reml = best_of(lambda: [metaeval.metareg(p, mods) for p in parts], 1) / args.subset

        def wls_loop() -> None:
            for part in parts:
                design = sm.add_constant(
                    pd.concat(
                        [part[["x"]], pd.get_dummies(part["domain"], dtype=float).iloc[:, 1:]],
                        axis=1,
                    )
                )
                sm.WLS(part["effect"], design, weights=1 / part["variance"]).fit().bse  # noqa: B018

        loop_wls = float("nan") if sm is None else best_of(wls_loop, 1) / args.subset
    per_group = {"REML": t_reml / args.groups, "EE": t_ee / args.groups}
    print(f"{args.groups:,} groups x k = {args.k}, moderators {mods} (p = 4)")
    print(
        f"metareg REML + knha, all groups at once : {t_reml:8.3f} s "
        f"({1e6 * per_group['REML']:.1f} us per group)"
    )
    print(
        f"metareg EE, all groups at once          : {t_ee:8.3f} s "
        f"({1e6 * per_group['EE']:.1f} us per group)"
    )
    print(
        f"metareg REML, one call per group        : {1e3 * loop_reml:8.3f} ms per group "
        f"-> ratio {loop_reml / per_group['REML']:.0f}x"
    )
    print(
        f"statsmodels WLS (EE coefficients only)  : {1e3 * loop_wls:8.3f} ms per group "
        f"-> ratio {loop_wls / per_group['EE']:.0f}x"
    )
    groups = f"{args.groups:,} groups of k = {args.k}"
    result(
        "metareg_reml",
        f"metareg(REML) once per group / all groups at once, {groups}",
        loop_reml / per_group["REML"],
    )
    result(
        "metareg_ee_wls",
        f"statsmodels WLS per group / metareg(EE) per group, {groups}",
        loop_wls / per_group["EE"],
        needs="statsmodels",
    )


if __name__ == "__main__":
    main()
